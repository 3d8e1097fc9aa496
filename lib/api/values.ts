// Values between a caller's JavaScript and the engine's rows. A record is a plain object keyed
// by column name, its values in the forms the JSON-lines input accepts (lib/table/json-values.ts),
// plus the JavaScript types that say the same thing: a bigint for an integer or decimal, a
// Uint8Array for bytes, a Date for a timestamp or a date. A record read comes back in forms
// a write takes again (docs/api.md "Values").

import { formatDate, formatDecimal, formatTimestamp, isStringKeyed } from '../table/json-values.ts'
import type { DataField, DataType, MapValue, Row, Value } from '../types.ts'

/**
 * A value of a record read from a table. Nested values: an ARRAY or MULTISET as an array (a
 * multiset's element repeated its count times), a ROW as an object of its fields, a MAP as
 * an object when its keys are strings, else an array of [key, value] pairs.
 */
export type RecordValue = null | boolean | number | bigint | string | Uint8Array | RecordValue[] | { [name: string]: RecordValue }

/** A record read: column name → value, in the order of the columns asked for. */
export type TableRecord = Record<string, RecordValue>

/** A record to write: column name → value, and `_kind` ('+I' default, '-U', '+U', '-D'). */
export type WriteRecordInput = Record<string, unknown> & { _kind?: '+I' | '-U' | '+U' | '-D' }

/** A value as a record read holds it: see the module comment. */
export function recordValue(field: DataField, v: Value): RecordValue {
  return recordValueOf(field.type, v)
}

function recordValueOf(t: DataType, v: Value): RecordValue {
  if (v === null) return null
  switch (t.root) {
    case 'DECIMAL':
      // a string keeps every digit; a number would round
      return formatDecimal(v as bigint, t.scale!)
    case 'DATE':
      return formatDate(v as number)
    case 'TIMESTAMP':
      return formatTimestamp(v as bigint, t.precision!)
    case 'ARRAY':
      return (v as Value[]).map((x) => recordValueOf(t.element!, x))
    case 'ROW': {
      const out: { [name: string]: RecordValue } = {}
      t.fields!.forEach((f, i) => (out[f.name] = recordValueOf(f.type, (v as Value[])[i])))
      return out
    }
    case 'MAP': {
      const m = v as MapValue
      if (isStringKeyed(t)) {
        const out: { [name: string]: RecordValue } = {}
        m.keys.forEach((k, i) => Object.defineProperty(out, k as string, { value: recordValueOf(t.value!, m.values[i]), enumerable: true, writable: true, configurable: true }))
        return out
      }
      return m.keys.map((k, i) => [recordValueOf(t.key!, k), recordValueOf(t.value!, m.values[i])])
    }
    case 'MULTISET': {
      const m = v as MapValue
      const out: RecordValue[] = []
      m.keys.forEach((k, i) => {
        const e = recordValueOf(t.element!, k)
        for (let n = 0; n < (m.values[i] as number); n++) out.push(e)
      })
      return out
    }
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
 * bytes as base64, a Date as epoch milliseconds (a timestamp) or its UTC day (a date); inside
 * a nested value, each part by its type.
 */
export function jsonFormOf(field: DataField, v: unknown): unknown {
  return jsonFormAt(field.type, v)
}

function jsonFormAt(t: DataType, v: unknown): unknown {
  if (typeof v === 'bigint') return v.toString()
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
  if (v instanceof Date) return t.root === 'DATE' ? v.toISOString().slice(0, 10) : v.getTime()
  if (v === null || typeof v !== 'object') return v
  switch (t.root) {
    case 'ARRAY':
    case 'MULTISET':
      return Array.isArray(v) ? v.map((x) => jsonFormAt(t.element!, x)) : v
    case 'ROW': {
      if (Array.isArray(v)) return v
      const out: Record<string, unknown> = {}
      for (const [k, x] of Object.entries(v)) {
        const f = t.fields!.find((g) => g.name === k)
        Object.defineProperty(out, k, { value: f ? jsonFormAt(f.type, x) : x, enumerable: true, writable: true, configurable: true })
      }
      return out
    }
    case 'MAP': {
      if (Array.isArray(v)) return v.map((p) => (Array.isArray(p) && p.length === 2 ? [jsonFormAt(t.key!, p[0]), jsonFormAt(t.value!, p[1])] : p))
      if (v instanceof Map) return [...v.entries()].map(([k, x]) => [jsonFormAt(t.key!, k), jsonFormAt(t.value!, x)])
      const out: Record<string, unknown> = {}
      for (const [k, x] of Object.entries(v)) Object.defineProperty(out, k, { value: jsonFormAt(t.value!, x), enumerable: true, writable: true, configurable: true })
      return out
    }
    default:
      return v
  }
}
