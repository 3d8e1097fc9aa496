// The column chunk encoder's view of a column: its rows as int32 words, 0/1 bytes, objects or
// UTF-8 ranges, with their definition levels (lib/format/parquet-encode.ts).

import type { SchemaElement } from 'hyparquet'
import { type Column, Utf8Column, isTypedColumn, utf16Units } from './columnar-types.ts'

// Columns as the encoder holds them

export const enum Kind {
  Boolean,
  Int32,
  Int64,
  Float,
  Double,
  ByteArray,
  Fixed,
}

export interface Prepared {
  kind: Kind
  rows: number
  nonNull: number
  /** per row 1 (value) or 0 (null), only when some row is null */
  defs: Uint8Array | null
  /** fixed-width kinds: the non-null values' bits, `width` int32 words each */
  words: Int32Array | null
  width: number
  /** BOOLEAN: non-null values as 0/1 */
  bools: Uint8Array | null
  /** BYTE_ARRAY: strings or Uint8Arrays; FIXED_LEN_BYTE_ARRAY: unscaled decimal bigints */
  objs: unknown[] | null
  /** BYTE_ARRAY from a Utf8Column: non-null value i is bytes[starts[i], ends[i]) */
  u8: Utf8Values | null
}

export interface Utf8Values {
  bytes: Uint8Array
  starts: Int32Array
  ends: Int32Array
  /** every byte below 0x80 */
  ascii: boolean
}

/** Value i's length as a JS string's (UTF-16 units): what a string's size counts. */
export function u8Units(u: Utf8Values, i: number): number {
  return u.ascii ? u.ends[i] - u.starts[i] : utf16Units(u.bytes, u.starts[i], u.ends[i])
}

function kindOf(element: SchemaElement): Kind {
  switch (element.type) {
    case 'BOOLEAN':
      return Kind.Boolean
    case 'INT32':
      return Kind.Int32
    case 'INT64':
      return Kind.Int64
    case 'FLOAT':
      return Kind.Float
    case 'DOUBLE':
      return Kind.Double
    case 'BYTE_ARRAY':
      return Kind.ByteArray
    case 'FIXED_LEN_BYTE_ARRAY':
      return Kind.Fixed
    default:
      throw new Error(`column ${element.name}: Parquet type ${element.type} is not written by Strata`)
  }
}

function int32Words(a: Int32Array | Float32Array | BigInt64Array | BigUint64Array | Float64Array, n: number, width: number): Int32Array {
  return new Int32Array(a.buffer, a.byteOffset, n * width)
}

function requiredNull(element: SchemaElement, r: number): never {
  throw new Error(`column ${element.name} is REQUIRED (NOT NULL) but row ${r} of the chunk is null`)
}

/** Rows [0, rows) of `col` as the encoder holds them. */
export function prepare(element: SchemaElement, col: Column, rows: number): Prepared {
  const kind = kindOf(element)
  const p: Prepared = { kind, rows, nonNull: rows, defs: null, words: null, width: kind === Kind.Int64 || kind === Kind.Double ? 2 : 1, bools: null, objs: null, u8: null }
  if (col instanceof Utf8Column) return prepareUtf8(p, element, col, rows)
  if (isTypedColumn(col)) {
    switch (kind) {
      case Kind.Int32:
        if (col instanceof Int32Array) p.words = col.subarray(0, rows)
        else if (col instanceof BigInt64Array || col instanceof BigUint64Array) p.words = Int32Array.from(col.subarray(0, rows), Number)
        else p.words = Int32Array.from(col.subarray(0, rows) as unknown as ArrayLike<number>)
        return p
      case Kind.Int64:
        if (col instanceof BigInt64Array || col instanceof BigUint64Array) p.words = int32Words(col, rows, 2)
        else {
          const out = new BigInt64Array(rows)
          for (let r = 0; r < rows; r++) out[r] = BigInt(col[r] as number)
          p.words = int32Words(out, rows, 2)
        }
        return p
      case Kind.Float:
        p.words = int32Words(col instanceof Float32Array ? col : Float32Array.from(col.subarray(0, rows) as Float64Array), rows, 1)
        return p
      case Kind.Double:
        p.words = int32Words(col instanceof Float64Array ? col : Float64Array.from(col.subarray(0, rows) as Float32Array), rows, 2)
        return p
      case Kind.Boolean:
        p.bools = Uint8Array.from(col.subarray(0, rows) as Uint8Array, (v) => (v ? 1 : 0))
        return p
      default:
        break // BYTE_ARRAY, FIXED: plain arrays below
    }
  }
  const required = element.repetition_type === 'REQUIRED'
  const c = col as ArrayLike<unknown>
  let defs: Uint8Array | null = null
  let k = 0
  const nullAt = (d: Uint8Array | null, r: number): Uint8Array => {
    if (required) requiredNull(element, r)
    if (d === null) {
      d = new Uint8Array(rows)
      d.fill(1, 0, r)
    }
    return d
  }
  switch (kind) {
    case Kind.Int32: {
      const out = new Int32Array(rows)
      for (let r = 0; r < rows; r++) {
        const v = c[r]
        if (v === null || v === undefined) defs = nullAt(defs, r)
        else {
          out[k++] = typeof v === 'bigint' ? Number(v) : (v as number)
          if (defs !== null) defs[r] = 1
        }
      }
      p.words = out.subarray(0, k)
      break
    }
    case Kind.Int64: {
      const out = new BigInt64Array(rows)
      for (let r = 0; r < rows; r++) {
        const v = c[r]
        if (v === null || v === undefined) defs = nullAt(defs, r)
        else {
          out[k++] = typeof v === 'bigint' ? v : BigInt(v as number)
          if (defs !== null) defs[r] = 1
        }
      }
      p.words = int32Words(out, k, 2)
      break
    }
    case Kind.Float:
    case Kind.Double: {
      const out = kind === Kind.Float ? new Float32Array(rows) : new Float64Array(rows)
      for (let r = 0; r < rows; r++) {
        const v = c[r]
        if (v === null || v === undefined) defs = nullAt(defs, r)
        else {
          out[k++] = v as number
          if (defs !== null) defs[r] = 1
        }
      }
      p.words = int32Words(out, k, p.width)
      break
    }
    case Kind.Boolean: {
      const out = new Uint8Array(rows)
      for (let r = 0; r < rows; r++) {
        const v = c[r]
        if (v === null || v === undefined) defs = nullAt(defs, r)
        else {
          out[k++] = v ? 1 : 0
          if (defs !== null) defs[r] = 1
        }
      }
      p.bools = out.subarray(0, k)
      break
    }
    default: {
      // a plain array without nulls is used as it is
      let r0 = 0
      while (r0 < rows && c[r0] !== null && c[r0] !== undefined) r0++
      if (r0 === rows) {
        p.objs = Array.isArray(c) ? c : Array.from({ length: rows }, (_, r) => c[r])
        return p
      }
      const out: unknown[] = []
      for (let r = 0; r < rows; r++) {
        const v = c[r]
        if (v === null || v === undefined) defs = nullAt(defs, r)
        else {
          out.push(v)
          if (defs !== null) defs[r] = 1
        }
      }
      k = out.length
      p.objs = out
    }
  }
  p.nonNull = k
  p.defs = defs
  return p
}

/** `prepare` of a Utf8Column (a BYTE_ARRAY column): its non-null values' byte ranges, in place. */
function prepareUtf8(p: Prepared, element: SchemaElement, col: Utf8Column, rows: number): Prepared {
  if (p.kind !== Kind.ByteArray) throw new Error(`column ${element.name}: a column of UTF-8 strings cannot be stored as ${element.type}`)
  const { offsets, nulls } = col
  const starts = new Int32Array(rows)
  const ends = new Int32Array(rows)
  let defs: Uint8Array | null = null
  let k = 0
  for (let r = 0; r < rows; r++) {
    if (nulls !== null && nulls[r] === 1) {
      if (element.repetition_type === 'REQUIRED') requiredNull(element, r)
      if (defs === null) {
        defs = new Uint8Array(rows)
        defs.fill(1, 0, r)
      }
      continue
    }
    if (defs !== null) defs[r] = 1
    starts[k] = offsets[r]
    ends[k++] = offsets[r + 1]
  }
  p.u8 = { bytes: col.bytes, starts, ends, ascii: col.ascii }
  p.nonNull = k
  p.defs = defs
  return p
}
