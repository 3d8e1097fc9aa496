// Values between a caller's JavaScript and the engine's rows. A record is a plain object keyed
// by column name, its values in the forms the JSON-lines input accepts (lib/table/json-values.ts),
// plus the JavaScript types that say the same thing: a bigint for an integer or decimal, a
// Uint8Array for bytes, a Date for a timestamp or a date. A record read comes back in forms
// a write takes again (docs/api.md "Values").

import { formatDate, formatDecimal, formatTimestamp } from '../table/json-values.ts'
import type { DataField, Row, Value } from '../types.ts'

/** A value of a record read from a table. */
export type RecordValue = null | boolean | number | bigint | string | Uint8Array

/** A record read: column name → value, in the order of the columns asked for. */
export type TableRecord = Record<string, RecordValue>

/** A record to write: column name → value, and `_kind` ('+I' default, '-U', '+U', '-D'). */
export type WriteRecordInput = Record<string, unknown> & { _kind?: '+I' | '-U' | '+U' | '-D' }

/** A value as a record read holds it: see the module comment. */
export function recordValue(field: DataField, v: Value): RecordValue {
  if (v === null) return null
  const t = field.type
  switch (t.root) {
    case 'DECIMAL':
      // a string keeps every digit; a number would round
      return formatDecimal(v as bigint, t.scale!)
    case 'DATE':
      return formatDate(v as number)
    case 'TIMESTAMP':
      return formatTimestamp(v as bigint, t.precision!)
    default:
      return v as RecordValue
  }
}

/** A row read with these columns (row[j] is fields[j]'s value) as a record. */
export function rowRecord(fields: readonly DataField[], row: Row): TableRecord {
  const out: TableRecord = {}
  for (let j = 0; j < fields.length; j++) out[fields[j].name] = recordValue(fields[j], row[j])
  return out
}

/**
 * A caller's value in the JSON-lines form the record reader takes: a bigint as its digits,
 * bytes as base64, a Date as epoch milliseconds (a timestamp) or its UTC day (a date).
 */
export function jsonFormOf(field: DataField, v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString()
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
  if (v instanceof Date) return field.type.root === 'DATE' ? v.toISOString().slice(0, 10) : v.getTime()
  return v
}
