// Equality of Values by their DataType, deep into ARRAY, MAP, MULTISET and ROW: what the
// aggregates over nested values (collect with distinct, merge_map and merge_map_with_keytime
// keys, nested_update and nested_partial_update keys) take for "the same value".
//
// Paimon compares such values with Java's equals (HashMap and HashSet keys) or BinaryRow
// bytes (projected nested keys), so Strata follows equals: strings and bytes by content,
// integers, DECIMAL (unscaled, one scale per column) and TIMESTAMP by value, FLOAT and DOUBLE
// by bits as Float.equals/Double.equals (NaN equals NaN, -0.0 differs from 0.0), ARRAY and
// ROW position by position. Two deliberate differences, docs/format.md "Merge engines":
// BYTES compare by content (a Java byte[] key compares by identity, so Paimon never finds two
// equal), and MAP/MULTISET compare as maps whatever their entry order (Paimon's BinaryMap
// compares bytes, and its entry order follows Java's hash tables).

import { compareBytes, compareDoubles } from '../format/compare.ts'
import type { DataType, MapValue, Value } from '../types.ts'

function isMapValue(v: Value): v is MapValue {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Uint8Array)
}

/** Whether `a` and `b`, two values of `type`, are the same value (see the module comment). */
export function valuesEqual(type: DataType, a: Value, b: Value): boolean {
  if (a === null || b === null) return a === b
  switch (type.root) {
    case 'FLOAT':
    case 'DOUBLE':
      // Float.equals / Double.equals agree with Double.compare's zero: every NaN one value, -0.0 apart from 0.0
      return compareDoubles(a as number, b as number) === 0
    case 'BINARY':
    case 'VARBINARY':
      return compareBytes(a as Uint8Array, b as Uint8Array) === 0
    case 'ARRAY': {
      const x = a as Value[]
      const y = b as Value[]
      if (x.length !== y.length) return false
      for (let i = 0; i < x.length; i++) if (!valuesEqual(type.element!, x[i], y[i])) return false
      return true
    }
    case 'ROW': {
      const x = a as Value[]
      const y = b as Value[]
      const fields = type.fields!
      for (let i = 0; i < fields.length; i++) if (!valuesEqual(fields[i].type, x[i] ?? null, y[i] ?? null)) return false
      return true
    }
    case 'MAP':
    case 'MULTISET':
      return mapsEqual(type, a, b)
    default:
      return a === b
  }
}

function mapTypes(type: DataType): { key: DataType; value: DataType } {
  return type.root === 'MULTISET' ? { key: type.element!, value: { root: 'INT', nullable: false } } : { key: type.key!, value: type.value! }
}

function mapsEqual(type: DataType, a: Value, b: Value): boolean {
  if (!isMapValue(a) || !isMapValue(b)) return false
  if (a.keys.length !== b.keys.length) return false
  const { key, value } = mapTypes(type)
  const index = new Map<string, number>()
  b.keys.forEach((k, i) => index.set(valueKey(key, k), i))
  for (let i = 0; i < a.keys.length; i++) {
    const j = index.get(valueKey(key, a.keys[i]))
    if (j === undefined || !valuesEqual(value, a.values[i], b.values[j])) return false
  }
  return true
}

function floatKey(x: number): string {
  if (Number.isNaN(x)) return 'NaN'
  return Object.is(x, -0) ? '-0' : String(x)
}

function hex(b: Uint8Array): string {
  let s = ''
  for (const x of b) s += (x < 16 ? '0' : '') + x.toString(16)
  return s
}

/**
 * A string that names `v` as a value of `type`: two values of one type have the same key
 * exactly when `valuesEqual` holds, so it keys a JS Map or Set of nested values.
 */
export function valueKey(type: DataType, v: Value): string {
  if (v === null) return 'null'
  switch (type.root) {
    case 'BOOLEAN':
      return v ? 'true' : 'false'
    case 'FLOAT':
    case 'DOUBLE':
      return floatKey(v as number)
    case 'CHAR':
    case 'VARCHAR':
      return JSON.stringify(v)
    case 'BINARY':
    case 'VARBINARY':
      return `x${hex(v as Uint8Array)}`
    case 'ARRAY':
      return `[${(v as Value[]).map((e) => valueKey(type.element!, e)).join(',')}]`
    case 'ROW':
      return `(${type.fields!.map((f, i) => valueKey(f.type, (v as Value[])[i] ?? null)).join(',')})`
    case 'MAP':
    case 'MULTISET': {
      const m = v as MapValue
      const { key, value } = mapTypes(type)
      const entries = m.keys.map((k, i) => `${valueKey(key, k)}:${valueKey(value, m.values[i])}`)
      return `{${entries.sort().join(',')}}`
    }
    default:
      // integers, DATE (numbers), BIGINT, DECIMAL, TIMESTAMP (bigints): by value
      return String(v)
  }
}
