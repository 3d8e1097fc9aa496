// Chunk and page statistics of the Parquet encoder: min/max positions per value kind, NaN
// counts, and the statistics values the footer writes (lib/format/parquet-encode.ts).

import type { SchemaElement } from 'hyparquet'
import { compareByteRanges, utf8Text } from './columnar-types.ts'
import { Kind, type Prepared, type Utf8Values } from './parquet-encode-columns.ts'

// Statistics

/** Code point order of two strings, a lone surrogate counting as U+FFFD (how it is written in UTF-8). */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0
  const n = Math.min(a.length, b.length)
  let i = 0
  while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) i++
  if (i > 0) {
    const prev = a.charCodeAt(i - 1)
    if (prev >= 0xd800 && prev <= 0xdbff) i--
  }
  while (i < a.length && i < b.length) {
    const ca = codePoint(a, i)
    const cb = codePoint(b, i)
    if (ca !== cb) return ca - cb
    i += ca > 0xffff ? 2 : 1
  }
  return a.length - i - (b.length - i)
}

function codePoint(s: string, i: number): number {
  const c = s.codePointAt(i)!
  return c >= 0xd800 && c <= 0xdfff ? 0xfffd : c
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i]
  return a.length - b.length
}

function compareObjs(a: unknown, b: unknown): number {
  if (typeof a === 'string') return compareStrings(a, b as string)
  if (a instanceof Uint8Array) return compareBytes(a, b as Uint8Array)
  return (a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0
}

export interface MinMax {
  /** value positions (in the non-null values) of the least and greatest, -1 when none */
  lo: number
  hi: number
  nans: number
}

/** Positions of the least and greatest non-null value among [a, b) (NaN skipped and counted). */
function minMax(p: Prepared, a: number, b: number): MinMax {
  switch (p.kind) {
    case Kind.Int32:
      return minMaxInt32(p.words!, a, b)
    case Kind.Int64:
      return minMaxInt64(p.words!, a, b)
    case Kind.Float:
      return minMaxFloat(new Float32Array(p.words!.buffer, p.words!.byteOffset, p.words!.length), a, b)
    case Kind.Double:
      return minMaxFloat(new Float64Array(p.words!.buffer, p.words!.byteOffset, p.words!.length >> 1), a, b)
    case Kind.Boolean:
      return minMaxInt32(Int32Array.from(p.bools!.subarray(a, b)), 0, b - a, a)
    default:
      if (p.u8 !== null) return minMaxUtf8(p.u8, a, b)
      return a < b && typeof p.objs![a] === 'string' ? minMaxStrings(p.objs as string[], a, b) : minMaxObjs(p.objs!, a, b)
  }
}

// minMaxInt32 and minMaxStrings' loop are one loop in two typed copies on purpose: fed both
// types, one function's `<` runs about 4× slower on the integers (bench/min-max-loops.ts).
function minMaxInt32(w: Int32Array, a: number, b: number, base = 0): MinMax {
  if (a >= b) return { lo: -1, hi: -1, nans: 0 }
  let lo = a
  let hi = a
  let min = w[a]
  let max = min
  for (let i = a + 1; i < b; i++) {
    const v = w[i]
    if (v < min) {
      min = v
      lo = i
    } else if (v > max) {
      max = v
      hi = i
    }
  }
  return { lo: lo + base, hi: hi + base, nans: 0 }
}

/**
 * An int32 low word XOR FLIP orders as the word does unsigned, and stays an int32: `>>> 0`
 * made numbers above 2^31 that deoptimized code V8 had compiled for small integers.
 */
const FLIP = -0x80000000

/** Positions of the least and greatest int64 of [a, b), given as int32 word pairs (low, high): no bigint is made per value. */
export function minMaxInt64(w: Int32Array, a: number, b: number): MinMax {
  if (a >= b) return { lo: -1, hi: -1, nans: 0 }
  let lo = a
  let hi = a
  let minH = w[2 * a + 1]
  let minL = w[2 * a] ^ FLIP
  let maxH = minH
  let maxL = minL
  for (let i = a + 1; i < b; i++) {
    const h = w[2 * i + 1]
    const l = w[2 * i] ^ FLIP
    if (h < minH || (h === minH && l < minL)) {
      minH = h
      minL = l
      lo = i
    } else if (h > maxH || (h === maxH && l > maxL)) {
      maxH = h
      maxL = l
      hi = i
    }
  }
  return { lo, hi, nans: 0 }
}

function minMaxFloat(f: Float32Array | Float64Array, a: number, b: number): MinMax {
  let lo = -1
  let hi = -1
  let nans = 0
  let min = 0
  let max = 0
  for (let i = a; i < b; i++) {
    const v = f[i]
    if (v !== v) {
      nans++
      continue
    }
    if (lo < 0) {
      lo = hi = i
      min = max = v
    } else if (v < min) {
      min = v
      lo = i
    } else if (v > max) {
      max = v
      hi = i
    }
  }
  return { lo, hi, nans }
}

/** A UTF-16 unit at which UTF-16 order and code point order can differ (a surrogate or U+E000..U+FFFF). */
const NOT_BMP_ORDERED = /[\ud800-\uffff]/

function minMaxStrings(o: string[], a: number, b: number): MinMax {
  let plain = true
  for (let i = a; i < b && plain; i++) if (NOT_BMP_ORDERED.test(o[i])) plain = false
  if (plain) {
    // below U+D800 the native (UTF-16) order is code point order
    let lo = a
    let hi = a
    let min = o[a]
    let max = min
    for (let i = a + 1; i < b; i++) {
      const v = o[i]
      if (v < min) {
        lo = i
        min = v
      } else if (v > max) {
        hi = i
        max = v
      }
    }
    return { lo, hi, nans: 0 }
  }
  let lo = a
  let hi = a
  let min = o[a]
  let max = min
  for (let i = a + 1; i < b; i++) {
    const v = o[i]
    if (v === min || v === max) continue
    if (compareStrings(v, min) < 0) {
      lo = i
      min = v
    } else if (compareStrings(v, max) > 0) {
      hi = i
      max = v
    }
  }
  return { lo, hi, nans: 0 }
}

/** `minMaxStrings` of UTF-8 values: byte order is code point order. */
function minMaxUtf8(u: Utf8Values, a: number, b: number): MinMax {
  if (a >= b) return { lo: -1, hi: -1, nans: 0 }
  const { bytes, starts, ends } = u
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let lo = a
  let hi = a
  for (let i = a + 1; i < b; i++) {
    if (compareByteRanges(bytes, dv, starts[i], ends[i], bytes, dv, starts[lo], ends[lo]) < 0) lo = i
    else if (compareByteRanges(bytes, dv, starts[i], ends[i], bytes, dv, starts[hi], ends[hi]) > 0) hi = i
  }
  return { lo, hi, nans: 0 }
}

function minMaxObjs(o: unknown[], a: number, b: number): MinMax {
  let lo = -1
  let hi = -1
  for (let i = a; i < b; i++) {
    if (lo < 0) lo = hi = i
    else if (compareObjs(o[i], o[lo]) < 0) lo = i
    else if (compareObjs(o[i], o[hi]) > 0) hi = i
  }
  return { lo, hi, nans: 0 }
}

/** The non-null value at position i as a statistics value (what hyparquet-writer's footer code converts). */
function statValue(p: Prepared, element: SchemaElement, i: number): unknown {
  switch (p.kind) {
    case Kind.Int32:
      return element.converted_type === 'DECIMAL' ? BigInt(p.words![i]) : p.words![i]
    case Kind.Int64:
      return new BigInt64Array(p.words!.buffer, p.words!.byteOffset, p.words!.length >> 1)[i]
    case Kind.Float:
      return new Float32Array(p.words!.buffer, p.words!.byteOffset, p.words!.length)[i]
    case Kind.Double:
      return new Float64Array(p.words!.buffer, p.words!.byteOffset, p.words!.length >> 1)[i]
    case Kind.Boolean:
      return p.bools![i] === 1
    default:
      return p.u8 !== null ? utf8Text(p.u8.bytes, p.u8.starts[i], p.u8.ends[i]) : p.objs![i]
  }
}

export function isFloat(p: Prepared): boolean {
  return p.kind === Kind.Float || p.kind === Kind.Double
}

/** Bounds of [a, b) as statistics values: -0 as the least zero and +0 as the greatest (Parquet's rule). */
export function bounds(p: Prepared, element: SchemaElement, a: number, b: number): { min: unknown; max: unknown; nans: number } {
  const { lo, hi, nans } = minMax(p, a, b)
  if (lo < 0) return { min: undefined, max: undefined, nans }
  let min = statValue(p, element, lo)
  let max = statValue(p, element, hi)
  if (min === 0) min = -0
  if (max === 0) max = 0
  return { min, max, nans }
}

export function compareStat(a: unknown, b: unknown): number {
  if (typeof a === 'string' || a instanceof Uint8Array) return compareObjs(a, b)
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0
}
