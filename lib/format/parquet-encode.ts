// Strata's encoder of Parquet column chunks (encoding was ~30% of compaction CPU in
// hyparquet-writer). It writes one flat column chunk of a data file from a typed array
// (Int32Array, BigInt64Array, Float32Array, Float64Array, …) or a plain array (strings, bytes,
// bigints, nulls) without making an object per value where it can, and returns the chunk's
// metadata and page index for the file footer. It does so in two halves: `encodeColumnChunk`
// encodes the pages into an arena, `placeChunk` writes them, compressed, at the file's offset
// (lib/format/page-compression.ts: a compression thread works in between); `writeColumnChunk`
// does both at once.
//
// What it writes (Parquet format, parquet-format's Encodings.md and PageIndex.md):
// - data pages v2 (levels uncompressed, values compressed with the chunk's codec), as
//   hyparquet-writer wrote them before; definition levels (OPTIONAL columns only, max level
//   1) in the RLE/bit-packed hybrid with bit width 1;
// - values PLAIN, or RLE_DICTIONARY (a PLAIN dictionary page first, then per data page a
//   bit-width byte and the indices in the hybrid encoding, one bit width for the chunk as
//   parquet-java does); BOOLEAN always PLAIN (bit-packed), which every reader accepts;
// - whether a chunk gets a dictionary, and where pages break, by the rules hyparquet-writer
//   used (sample of up to 1,000 values, then "dictionary + indices at most half of plain";
//   a page ends once its estimated values reach the page size), so the page index of a file
//   is the one the old encoder wrote for the same rows;
// - chunk statistics (min/max, null count, NaN count for floats) and, on request, a
//   ColumnIndex (per-page min/max, null pages and counts, boundary order); an OffsetIndex
//   when the chunk has more than one page.

import type { ColumnChunk, ColumnIndex, ColumnMetaData, CompressionCodec, Encoding, OffsetIndex, SchemaElement } from 'hyparquet'
import type { ByteWriter } from 'hyparquet-writer'
import { unconvertMinMax } from 'hyparquet-writer/src/unconvert.js'
import { type Column, Utf8Column, compareByteRanges, isTypedColumn, utf16Units, utf8Text } from './columnar-types.ts'
import { InlinePageCompressor, type PageArena, type PageCompressor } from './page-compression.ts'
import { releaseSnappyScratch, writeVarint } from './snappy.ts'

export interface ChunkEncodeOptions {
  codec: CompressionCodec
  /** compressor of `codec`; null for UNCOMPRESSED */
  compress: ((input: Uint8Array) => Uint8Array) | null
  /** target estimated value bytes per data page */
  pageSize: number
  /** whether to build a ColumnIndex (page min/max) */
  columnIndex: boolean
}

/** A ColumnIndex as hyparquet-writer's footer code takes it (with NaN counts for floats). */
export interface PageColumnIndex extends ColumnIndex {
  nan_counts?: bigint[]
}

export interface EncodedChunk {
  chunk: ColumnChunk
  columnIndex?: PageColumnIndex
  offsetIndex?: OffsetIndex
}

if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error('Strata\'s Parquet encoder needs a little-endian platform')

// ---------------------------------------------------------------------------------------------
// Growable scratch buffers (reused across pages and chunks)

let scratch = new Uint8Array(1 << 16)
let levelScratch = new Uint8Array(1 << 12)
const header = new Uint8Array(128)

/** Scratch buffers above this are dropped after the chunk that grew them (one huge value must not pin memory). */
const SCRATCH_KEEP = 4 << 20

function releaseScratch(): void {
  if (scratch.length > SCRATCH_KEEP) scratch = new Uint8Array(1 << 16)
  if (levelScratch.length > SCRATCH_KEEP) levelScratch = new Uint8Array(1 << 12)
  if (objScratch.length > SCRATCH_KEEP) objScratch = new Uint8Array(1 << 16)
  releaseSnappyScratch(SCRATCH_KEEP)
  for (let k = 0; k < reusable.length; k++) if (reusable[k].byteLength > SCRATCH_KEEP) reusable[k] = new Int32Array(4096)
}

function ensureScratch(n: number): Uint8Array {
  if (scratch.length < n) scratch = new Uint8Array(Math.max(n, scratch.length * 2))
  return scratch
}

function ensureLevels(n: number): Uint8Array {
  if (levelScratch.length < n) levelScratch = new Uint8Array(Math.max(n, levelScratch.length * 2))
  return levelScratch
}

// ---------------------------------------------------------------------------------------------
// Columns as the encoder holds them

const enum Kind {
  Boolean,
  Int32,
  Int64,
  Float,
  Double,
  ByteArray,
  Fixed,
}

interface Prepared {
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

interface Utf8Values {
  bytes: Uint8Array
  starts: Int32Array
  ends: Int32Array
  /** every byte below 0x80 */
  ascii: boolean
}

/** Value i's length as a JS string's (UTF-16 units): what a string's size counts. */
function u8Units(u: Utf8Values, i: number): number {
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
function prepare(element: SchemaElement, col: Column, rows: number): Prepared {
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

// ---------------------------------------------------------------------------------------------
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

interface MinMax {
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

function minMaxInt64(w: Int32Array, a: number, b: number): MinMax {
  if (a >= b) return { lo: -1, hi: -1, nans: 0 }
  let lo = a
  let hi = a
  let minH = w[2 * a + 1]
  let minL = w[2 * a] >>> 0
  let maxH = minH
  let maxL = minL
  for (let i = a + 1; i < b; i++) {
    const h = w[2 * i + 1]
    const l = w[2 * i] >>> 0
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

/** FNV-1a of bytes[a, b). */
function hashRange(bytes: Uint8Array, a: number, b: number): number {
  let h = 0x811c9dc5
  for (let i = a; i < b; i++) h = Math.imul(h ^ bytes[i], 0x01000193)
  return h
}

function sameRange(bytes: Uint8Array, a1: number, b1: number, a2: number, b2: number): boolean {
  if (b1 - a1 !== b2 - a2) return false
  for (let i = 0; i < b1 - a1; i++) if (bytes[a1 + i] !== bytes[a2 + i]) return false
  return true
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

function isFloat(p: Prepared): boolean {
  return p.kind === Kind.Float || p.kind === Kind.Double
}

/** Bounds of [a, b) as statistics values: -0 as the least zero and +0 as the greatest (Parquet's rule). */
function bounds(p: Prepared, element: SchemaElement, a: number, b: number): { min: unknown; max: unknown; nans: number } {
  const { lo, hi, nans } = minMax(p, a, b)
  if (lo < 0) return { min: undefined, max: undefined, nans }
  let min = statValue(p, element, lo)
  let max = statValue(p, element, hi)
  if (min === 0) min = -0
  if (max === 0) max = 0
  return { min, max, nans }
}

function compareStat(a: unknown, b: unknown): number {
  if (typeof a === 'string' || a instanceof Uint8Array) return compareObjs(a, b)
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0
}

// ---------------------------------------------------------------------------------------------
// Dictionary

const SAMPLE_VALUES = 1000
const SAMPLE_REJECT_RATIO = 0.9

interface Dictionary {
  /** per non-null value, its entry */
  indices: Int32Array
  /** fixed-width kinds: the entries' first positions among the non-null values */
  firsts: Int32Array | null
  /** object kinds: the entries */
  entries: unknown[] | null
  size: number
  bitWidth: number
}

/** Bits per index of a dictionary of n entries: ceil(log2(n)). */
function indexBits(n: number): number {
  return n <= 1 ? 0 : 32 - Math.clz32(n - 1)
}

function fixedSize(p: Prepared, element: SchemaElement): number {
  switch (p.kind) {
    case Kind.Int32:
    case Kind.Float:
      return 4
    case Kind.Int64:
    case Kind.Double:
      return 8
    case Kind.Fixed:
      return element.type_length ?? 0
    default:
      return -1
  }
}

function objSize(v: unknown): number {
  return typeof v === 'string' ? v.length : (v as Uint8Array).byteLength
}

/** Whether a sample of the rows (nulls included) says a dictionary may pay. */
function sampleAllows(p: Prepared, element: SchemaElement, col: Column): boolean {
  const n = p.rows
  const sampleSize = Math.min(n, SAMPLE_VALUES)
  if (sampleSize === 0) return false
  const fixed = fixedSize(p, element)
  if (p.words !== null && p.defs === null) return sampleAllowsWords(p.words, p.width, n, sampleSize)
  if (col instanceof Utf8Column) return sampleAllowsUtf8(col, n, sampleSize)
  const c = col as ArrayLike<unknown>
  const prefix = p.kind === Kind.ByteArray ? 4 : 0
  const seen = new Map<unknown, number>()
  let distinct = 0
  let total = 0
  for (let i = 0; i < sampleSize; i++) {
    const at = sampleSize === 1 ? 0 : Math.floor((i * (n - 1)) / (sampleSize - 1))
    let v = c[at] as unknown
    if (v === undefined) v = null
    let key = v
    if (v instanceof Uint8Array) key = latin1(v)
    let size = seen.get(key)
    if (size === undefined) {
      size = v === null ? 0 : fixed >= 0 ? fixed : objSize(v) + prefix
      seen.set(key, size)
      distinct += size
    }
    total += size
  }
  return total > 0 && distinct / total <= SAMPLE_REJECT_RATIO
}

const sampleTable = new Int32Array(4096)
const sampleFirst = new Int32Array(SAMPLE_VALUES)

/**
 * `sampleAllows` of a Utf8Column: the same sample and sizes (a string's UTF-16 length plus
 * 4, a null's 0), distinct values told apart by their bytes.
 */
function sampleAllowsUtf8(col: Utf8Column, n: number, sampleSize: number): boolean {
  const table = sampleTable
  table.fill(0)
  const mask = table.length - 1
  const { bytes, offsets } = col
  let entries = 0
  let distinct = 0
  let total = 0
  for (let i = 0; i < sampleSize; i++) {
    const at = sampleSize === 1 ? 0 : Math.floor((i * (n - 1)) / (sampleSize - 1))
    if (col.isNull(at)) continue
    const a = offsets[at]
    const b = offsets[at + 1]
    const size = col.units(at) + 4
    let h = hashRange(bytes, a, b) & mask
    for (;;) {
      const e = table[h]
      if (e === 0) {
        sampleFirst[entries] = at
        table[h] = ++entries
        distinct += size
        break
      }
      const f = sampleFirst[e - 1]
      if (sameRange(bytes, a, b, offsets[f], offsets[f + 1])) break
      h = (h + 1) & mask
    }
    total += size
  }
  return total > 0 && distinct / total <= SAMPLE_REJECT_RATIO
}

/** `sampleAllows` of a fixed-width column without nulls: distinct sampled values over sampled values (by their bits). */
function sampleAllowsWords(w: Int32Array, width: number, n: number, sampleSize: number): boolean {
  const table = sampleTable
  table.fill(0)
  const mask = table.length - 1
  let distinct = 0
  for (let i = 0; i < sampleSize; i++) {
    const at = sampleSize === 1 ? 0 : Math.floor((i * (n - 1)) / (sampleSize - 1))
    const a = w[at * width]
    const b = width === 2 ? w[at * width + 1] : 0
    let h = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0x9e3779b1) >>> 20
    for (;;) {
      const e = table[h]
      if (e === 0) {
        sampleFirst[distinct] = at
        table[h] = ++distinct
        break
      }
      const f = sampleFirst[e - 1] * width
      if (w[f] === a && (width === 1 || w[f + 1] === b)) break
      h = (h + 1) & mask
    }
  }
  return distinct / sampleSize <= SAMPLE_REJECT_RATIO
}

function latin1(b: Uint8Array): string {
  let s = ''
  for (let i = 0; i < b.length; i += 4096) s += String.fromCharCode(...b.subarray(i, i + 4096))
  return '\u0000' + s
}

/** Whether a dictionary of `entries` entries taking `entryBytes` loses against `plainBytes` of PLAIN values. */
function dictionaryLoses(entries: number, entryBytes: number, nonNull: number, plainBytes: number): boolean {
  // (writeHybrid packs at most 24 bits: a chunk of over 2^24 distinct values stays PLAIN)
  return 2 * (entryBytes + Math.ceil((nonNull * indexBits(entries)) / 8)) > plainBytes || entries > 1 << 24
}

/** Int32 scratch arrays of a chunk's dictionary (indices, hash table, first positions), reused from chunk to chunk. */
const reusable: Int32Array[] = [new Int32Array(4096), new Int32Array(4096), new Int32Array(4096)]

/** The first n elements of reusable array k (contents left over). */
function reuse(k: number, n: number): Int32Array {
  if (reusable[k].length < n) reusable[k] = new Int32Array(Math.max(n, reusable[k].length * 2))
  return reusable[k].subarray(0, n)
}

function buildDictionary(p: Prepared, element: SchemaElement): Dictionary | null {
  const n = p.nonNull
  const indices = reuse(0, n)
  if (p.words !== null) {
    const w = p.words
    const width = p.width
    const size = width * 4
    const plainBytes = n * size
    let cap = 16
    while (cap < 2 * n) cap <<= 1
    const shift = 32 - Math.log2(cap)
    const table = reuse(1, cap) // entry + 1, 0 empty
    table.fill(0)
    const firsts = reuse(2, Math.max(1, n))
    let entries = 0
    // the fewest entries at which the dictionary loses (it loses more with every entry)
    let lo = 1
    let hi = n + 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (dictionaryLoses(mid, mid * size, n, plainBytes)) hi = mid
      else lo = mid + 1
    }
    const lossAt = lo
    const mask = cap - 1
    for (let i = 0; i < n; i++) {
      const a = w[i * width]
      const b = width === 2 ? w[i * width + 1] : 0
      let h = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0x9e3779b1) >>> shift
      for (;;) {
        const e = table[h]
        if (e === 0) {
          if (entries + 1 >= lossAt) return null
          firsts[entries] = i
          table[h] = ++entries
          indices[i] = entries - 1
          break
        }
        const f = firsts[e - 1] * width
        if (w[f] === a && (width === 1 || w[f + 1] === b)) {
          indices[i] = e - 1
          break
        }
        h = (h + 1) & mask
      }
    }
    if (entries === 0 || dictionaryLoses(entries, entries * size, n, plainBytes)) return null
    return { indices, firsts: firsts.subarray(0, entries), entries: null, size: entries, bitWidth: indexBits(entries) }
  }
  if (p.u8 !== null) return buildDictionaryUtf8(p.u8, n, indices)
  const o = p.objs!
  const fixed = p.kind === Kind.Fixed ? (element.type_length ?? 0) : -1
  const prefix = fixed >= 0 ? 0 : 4
  let plainBytes = 0
  if (fixed >= 0) plainBytes = fixed * n
  else for (let i = 0; i < n; i++) plainBytes += objSize(o[i]) + 4
  const map = new Map<unknown, number>()
  const entries: unknown[] = []
  let entryBytes = 0
  for (let i = 0; i < n; i++) {
    const v = o[i]
    const key = v instanceof Uint8Array ? latin1(v) : v
    let e = map.get(key)
    if (e === undefined) {
      e = entries.length
      entries.push(v)
      map.set(key, e)
      entryBytes += (fixed >= 0 ? fixed : objSize(v)) + prefix
      if (2 * entryBytes > plainBytes) return null
    }
    indices[i] = e
  }
  if (entries.length === 0 || dictionaryLoses(entries.length, entryBytes, n, plainBytes)) return null
  return { indices, firsts: null, entries, size: entries.length, bitWidth: indexBits(entries.length) }
}

/**
 * `buildDictionary` of UTF-8 values: entries in order of first appearance, told apart by
 * their bytes, sized as strings (UTF-16 length plus 4), so it decides as the strings would.
 */
function buildDictionaryUtf8(u: Utf8Values, n: number, indices: Int32Array): Dictionary | null {
  const { bytes, starts, ends } = u
  let plainBytes = 0
  for (let i = 0; i < n; i++) plainBytes += u8Units(u, i) + 4
  let cap = 16
  while (cap < 2 * n) cap <<= 1
  const table = reuse(1, cap) // entry + 1, 0 empty
  table.fill(0)
  const firsts = reuse(2, Math.max(1, n))
  const mask = cap - 1
  let entries = 0
  let entryBytes = 0
  for (let i = 0; i < n; i++) {
    const a = starts[i]
    const b = ends[i]
    let h = hashRange(bytes, a, b) & mask
    for (;;) {
      const e = table[h]
      if (e === 0) {
        firsts[entries] = i
        table[h] = ++entries
        indices[i] = entries - 1
        entryBytes += u8Units(u, i) + 4
        if (2 * entryBytes > plainBytes) return null
        break
      }
      const f = firsts[e - 1]
      if (sameRange(bytes, a, b, starts[f], ends[f])) {
        indices[i] = e - 1
        break
      }
      h = (h + 1) & mask
    }
  }
  if (entries === 0 || dictionaryLoses(entries, entryBytes, n, plainBytes)) return null
  return { indices, firsts: firsts.subarray(0, entries), entries: null, size: entries, bitWidth: indexBits(entries) }
}

// ---------------------------------------------------------------------------------------------
// Encodings

/**
 * Values [from, to) of `vals` in the RLE/bit-packed hybrid of width `w` (<= 24), at `pos`;
 * returns the end. Runs of 8 or more equal values are RLE runs, the rest bit-packed groups of 8
 * (the last group padded with zeros).
 */
function writeHybrid(buf: Uint8Array, pos: number, vals: ArrayLike<number>, from: number, to: number, w: number): number {
  const valueBytes = (w + 7) >> 3
  let i = from
  while (i < to) {
    const v = vals[i]
    let j = i + 1
    while (j < to && vals[j] === v) j++
    if (j - i >= 8 || w === 0) {
      pos = writeVarint(buf, pos, (j - i) * 2)
      for (let b = 0, x = v; b < valueBytes; b++, x >>>= 8) buf[pos++] = x & 0xff
      i = j
      continue
    }
    // bit-packed groups until a run of 8 starts at a group boundary
    const start = i
    let groups = 0
    for (;;) {
      i += 8
      groups++
      if (i >= to) break
      const u = vals[i]
      let k = i + 1
      while (k < to && k < i + 8 && vals[k] === u) k++
      if (k - i >= 8) break
    }
    pos = writeVarint(buf, pos, groups * 2 + 1)
    const end = start + groups * 8
    let acc = 0
    let bits = 0
    for (let k = start; k < end; k++) {
      acc |= (k < to ? vals[k] : 0) << bits
      bits += w
      while (bits >= 8) {
        buf[pos++] = acc & 0xff
        acc >>>= 8
        bits -= 8
      }
    }
    if (bits > 0) buf[pos++] = acc & 0xff
    if (i > to) i = to
  }
  return pos
}

/** PLAIN bytes of non-null values [a, b) of a fixed-width or BOOLEAN column. */
function writePlain(p: Prepared, a: number, b: number): Uint8Array {
  if (p.words !== null) {
    const w = p.words
    return new Uint8Array(w.buffer, w.byteOffset + a * 4 * p.width, (b - a) * 4 * p.width)
  }
  const v = p.bools!
  const buf = ensureScratch(((b - a + 7) >> 3) + 8)
  let pos = 0
  for (let i = a; i < b; i += 8) {
    let byte = 0
    for (let k = 0; k < 8 && i + k < b; k++) byte |= v[i + k] << k
    buf[pos++] = byte
  }
  return buf.subarray(0, pos)
}

let objScratch = new Uint8Array(1 << 16)

/**
 * PLAIN encoding of objects o[0..n) (strings as UTF-8, byte arrays, or FIXED decimals as
 * big-endian two's complement) into a shared buffer: value k is bytes [ends[k-1], ends[k])
 * (from 0 for k = 0), its 4-byte length included for BYTE_ARRAY.
 */
function encodeObjs(o: unknown[], n: number, kind: Kind, element: SchemaElement): { buf: Uint8Array; ends: Int32Array } {
  const ends = new Int32Array(n)
  if (kind === Kind.Fixed) {
    const len = element.type_length ?? 0
    if (objScratch.length < n * len) objScratch = new Uint8Array(Math.max(n * len, objScratch.length * 2))
    const buf = objScratch
    let pos = 0
    for (let i = 0; i < n; i++) {
      let v = o[i] as bigint
      for (let k = len - 1; k >= 0; k--) {
        buf[pos + k] = Number(v & 0xffn)
        v >>= 8n
      }
      pos += len
      ends[i] = pos
    }
    return { buf, ends }
  }
  let bound = 0
  for (let i = 0; i < n; i++) {
    const v = o[i]
    bound += 4 + (typeof v === 'string' ? 3 * v.length : (v as Uint8Array).length)
  }
  if (objScratch.length < bound) objScratch = new Uint8Array(Math.max(bound, objScratch.length * 2))
  const buf = objScratch
  let pos = 0
  for (let i = 0; i < n; i++) {
    const v = o[i]
    const start = pos + 4
    let q = start
    if (typeof v === 'string') {
      const len = v.length
      let k = 0
      for (; k < len; k++) {
        const c = v.charCodeAt(k)
        if (c >= 0x80) break
        buf[q++] = c
      }
      if (k < len) q = start + utf8.encodeInto(v, buf.subarray(start)).written
    } else {
      buf.set(v as Uint8Array, start)
      q = start + (v as Uint8Array).length
    }
    const len = q - start
    buf[pos] = len & 0xff
    buf[pos + 1] = (len >>> 8) & 0xff
    buf[pos + 2] = (len >>> 16) & 0xff
    buf[pos + 3] = len >>> 24
    pos = q
    ends[i] = pos
  }
  return { buf, ends }
}

/** `encodeObjs` of UTF-8 values: value pick[i] (or i) for i < n, each its 4-byte length and bytes. */
function encodeUtf8(u: Utf8Values, pick: Int32Array | null, n: number): { buf: Uint8Array; ends: Int32Array } {
  const { bytes, starts, ends: vEnds } = u
  let bound = 0
  for (let i = 0; i < n; i++) {
    const j = pick === null ? i : pick[i]
    bound += 4 + vEnds[j] - starts[j]
  }
  if (objScratch.length < bound) objScratch = new Uint8Array(Math.max(bound, objScratch.length * 2))
  const buf = objScratch
  const ends = new Int32Array(n)
  let pos = 0
  for (let i = 0; i < n; i++) {
    const j = pick === null ? i : pick[i]
    const a = starts[j]
    const len = vEnds[j] - a
    buf[pos] = len & 0xff
    buf[pos + 1] = (len >>> 8) & 0xff
    buf[pos + 2] = (len >>> 16) & 0xff
    buf[pos + 3] = len >>> 24
    pos += 4
    if (len < 32) for (let k = 0; k < len; k++) buf[pos + k] = bytes[a + k]
    else buf.set(bytes.subarray(a, a + len), pos)
    pos += len
    ends[i] = pos
  }
  return { buf, ends }
}

const utf8 = new TextEncoder()

// ---------------------------------------------------------------------------------------------
// Page headers (Thrift compact protocol, parquet.thrift PageHeader)

const PAGE_DICTIONARY = 2
const PAGE_DATA_V2 = 3
const ENC_PLAIN = 0
const ENC_RLE_DICTIONARY = 8

function i32Field(buf: Uint8Array, pos: number, delta: number, v: number): number {
  buf[pos++] = (delta << 4) | 5
  return writeVarint(buf, pos, v * 2) // zigzag of a non-negative int
}

function dataPageHeader(uncompressed: number, compressed: number, values: number, nulls: number, encoding: number, defBytes: number): number {
  const h = header
  let pos = i32Field(h, 0, 1, PAGE_DATA_V2)
  pos = i32Field(h, pos, 1, uncompressed)
  pos = i32Field(h, pos, 1, compressed)
  h[pos++] = (5 << 4) | 12 // field 8: data_page_header_v2
  pos = i32Field(h, pos, 1, values)
  pos = i32Field(h, pos, 1, nulls)
  pos = i32Field(h, pos, 1, values) // num_rows: a flat column has one value per row
  pos = i32Field(h, pos, 1, encoding)
  pos = i32Field(h, pos, 1, defBytes)
  pos = i32Field(h, pos, 1, 0)
  h[pos++] = 0
  h[pos++] = 0
  return pos
}

function dictionaryPageHeader(uncompressed: number, compressed: number, entries: number): number {
  const h = header
  let pos = i32Field(h, 0, 1, PAGE_DICTIONARY)
  pos = i32Field(h, pos, 1, uncompressed)
  pos = i32Field(h, pos, 1, compressed)
  h[pos++] = (4 << 4) | 12 // field 7: dictionary_page_header
  pos = i32Field(h, pos, 1, entries)
  pos = i32Field(h, pos, 1, ENC_PLAIN)
  h[pos++] = 0
  h[pos++] = 0
  return pos
}

// ---------------------------------------------------------------------------------------------
// Pages

/** First rows of the pages: a page ends before the row at which its estimated value bytes reach `pageSize`. */
function pageStarts(p: Prepared, dict: boolean, pageSize: number, plainEnds: Int32Array | null, prefix: number): number[] {
  const starts = [0]
  const defs = p.defs
  const rows = p.rows
  let acc = 0
  let start = 0
  if (plainEnds !== null) {
    let k = 0
    let prev = 0
    for (let r = 0; r < rows; r++) {
      let s = 0
      if (defs === null || defs[r] === 1) {
        s = plainEnds[k] - prev - prefix
        prev = plainEnds[k++]
      }
      acc += s
      if (acc >= pageSize && r > start) {
        starts.push(r)
        start = r
        acc = s
      }
    }
    return starts
  }
  const size = dict ? 4 : p.kind === Kind.Boolean ? 0.125 : p.width * 4
  if (defs === null) {
    const per = Math.max(1, Math.ceil(pageSize / size) - 1)
    for (let r = per; r < rows; r += per) starts.push(r)
    return starts
  }
  for (let r = 0; r < rows; r++) {
    const s = defs[r] === 1 ? size : 0
    acc += s
    if (acc >= pageSize && r > start) {
      starts.push(r)
      start = r
      acc = s
    }
  }
  return starts
}

/** Per page of a ChunkPlan: where its levels start, where its values start and end in the arena, its rows, nulls and first row. */
const PAGE_FIELDS = 6

/** One column chunk encoded into a PageArena, waiting for its pages' compression and its offsets in the file. */
export interface ChunkPlan {
  element: SchemaElement
  rows: number
  codec: CompressionCodec
  /** the dictionary page's entries (it is the plan's first page), or -1 without one */
  dictEntries: number
  /** PAGE_FIELDS numbers per page, dictionary page first */
  pages: number[]
  encoding: number
  stats: ColumnMetaData['statistics']
  columnIndex: PageColumnIndex | undefined
}

/** The number of pages of `plan` (the dictionary page included). */
export function planPages(plan: ChunkPlan): number {
  return plan.pages.length / PAGE_FIELDS
}

/** Appends the arena ranges of `plan`'s page values, [start, end) pairs, to `ranges` (what a compressor takes). */
export function planRanges(plan: ChunkPlan, ranges: number[]): void {
  const p = plan.pages
  for (let k = 0; k < p.length; k += PAGE_FIELDS) ranges.push(p[k + 1], p[k + 2])
}

/**
 * Encodes rows [0, rows) of `col` as the pages of one column chunk of `element` into `arena`.
 * `col` holds physical values (lib/format/columnar-types.ts): a typed array holds no nulls.
 * `placeChunk` writes the pages once they are compressed.
 */
export function encodeColumnChunk(arena: PageArena, element: SchemaElement, col: Column, rows: number, opts: Omit<ChunkEncodeOptions, 'compress'>): ChunkPlan {
  const p = prepare(element, col, rows)
  const planned: number[] = []
  let dict: Dictionary | null = null
  if (p.kind !== Kind.Boolean && p.nonNull > 0 && sampleAllows(p, element, col)) dict = buildDictionary(p, element)
  // the bounds of a dictionary's objects are those of its entries
  const stats = dict?.entries ? bounds({ ...p, objs: dict.entries }, element, 0, dict.size) : bounds(p, element, 0, p.nonNull)

  if (dict !== null) {
    let plain: { bytes: Uint8Array; length: number }
    if (p.u8 !== null) {
      const { buf, ends } = encodeUtf8(p.u8, dict.firsts, dict.size)
      plain = { bytes: buf, length: ends[dict.size - 1] }
    } else if (dict.firsts !== null) {
      const width = p.width
      const w = p.words!
      const vals = new Int32Array(dict.size * width)
      const f = dict.firsts
      if (width === 1) for (let e = 0; e < dict.size; e++) vals[e] = w[f[e]]
      else {
        for (let e = 0; e < dict.size; e++) {
          vals[2 * e] = w[2 * f[e]]
          vals[2 * e + 1] = w[2 * f[e] + 1]
        }
      }
      plain = { bytes: new Uint8Array(vals.buffer), length: vals.byteLength }
    } else {
      const { buf, ends } = encodeObjs(dict.entries!, dict.size, p.kind, element)
      plain = { bytes: buf, length: ends[dict.size - 1] }
    }
    const at = arena.length
    arena.append(plain.bytes.subarray(0, plain.length))
    planned.push(at, at, arena.length, 0, 0, 0)
  }

  // PLAIN objects are encoded once for the chunk: their UTF-8 lengths set the page breaks
  const plainObjs = dict !== null ? null : p.u8 !== null ? encodeUtf8(p.u8, null, p.nonNull) : p.objs !== null ? encodeObjs(p.objs, p.nonNull, p.kind, element) : null
  const prefix = p.kind === Kind.ByteArray ? 4 : 0
  const starts = pageStarts(p, dict !== null, opts.pageSize, plainObjs?.ends ?? null, prefix)
  const pages = starts.length
  const optional = element.repetition_type !== 'REQUIRED'
  const float = isFloat(p)
  let columnIndex: PageColumnIndex | undefined =
    opts.columnIndex && pages > 1 ? { null_pages: [], min_values: [], max_values: [], boundary_order: 'UNORDERED', null_counts: [], ...(float ? { nan_counts: [] } : {}) } : undefined
  let ascending = true
  let descending = true
  let prevMin: unknown
  let prevMax: unknown

  const defs = p.defs
  let a = 0 // first non-null value of the page
  for (let pg = 0; pg < pages; pg++) {
    const r0 = starts[pg]
    const r1 = pg + 1 < pages ? starts[pg + 1] : rows
    let b = a
    if (defs === null) b = a + (r1 - r0)
    else for (let r = r0; r < r1; r++) b += defs[r]
    const nulls = r1 - r0 - (b - a)
    const levelStart = arena.length

    // definition levels
    if (optional) {
      let defBytes: number
      if (defs === null || nulls === 0) {
        const buf = ensureLevels(16)
        defBytes = writeVarint(buf, 0, (r1 - r0) * 2)
        buf[defBytes++] = 1
      } else {
        const buf = ensureLevels((r1 - r0) / 4 + 32)
        defBytes = writeHybrid(buf, 0, defs, r0, r1, 1)
      }
      arena.append(levelScratch.subarray(0, defBytes))
    }

    // values
    const valueStart = arena.length
    if (dict !== null) {
      const buf = ensureScratch(Math.ceil(((b - a) * (dict.bitWidth + 1)) / 8) * 2 + 64)
      buf[0] = dict.bitWidth
      const end = writeHybrid(buf, 1, dict.indices, a, b, dict.bitWidth)
      arena.append(buf.subarray(0, end))
    } else if (plainObjs !== null) {
      arena.append(plainObjs.buf.subarray(a === 0 ? 0 : plainObjs.ends[a - 1], b === 0 ? 0 : plainObjs.ends[b - 1]))
    } else {
      arena.append(writePlain(p, a, b))
    }
    planned.push(levelStart, valueStart, arena.length, r1 - r0, nulls, r0)

    if (columnIndex !== undefined) {
      const { min, max, nans } = bounds(p, element, a, b)
      const nullPage = b === a
      const minBytes = unconvertMinMax(min as never, element as never, false)
      const maxBytes = unconvertMinMax(max as never, element as never, true)
      if (!nullPage && (!minBytes || !maxBytes)) {
        columnIndex = undefined // a page of NaNs only has no bounds; the index is dropped
      } else {
        columnIndex.null_pages.push(nullPage)
        columnIndex.min_values.push(minBytes ?? new Uint8Array())
        columnIndex.max_values.push(maxBytes ?? new Uint8Array())
        columnIndex.null_counts!.push(BigInt(nulls))
        if (float) columnIndex.nan_counts!.push(BigInt(nans))
        if (min !== undefined) {
          if (prevMin !== undefined) {
            const c = compareStat(prevMin, min)
            if (c > 0) ascending = false
            if (c < 0) descending = false
          }
          const c = prevMax !== undefined ? compareStat(prevMax, max) : 0
          if (c > 0) ascending = false
          if (c < 0) descending = false
          prevMin = min
          prevMax = max
        }
      }
    }
    a = b
  }
  if (columnIndex !== undefined) columnIndex.boundary_order = ascending ? 'ASCENDING' : descending ? 'DESCENDING' : 'UNORDERED'
  releaseScratch()

  const statistics = { min_value: stats.min, max_value: stats.max, null_count: BigInt(rows - p.nonNull), ...(float ? { nan_count: BigInt(stats.nans) } : {}) }
  return {
    element,
    rows,
    codec: opts.codec,
    dictEntries: dict !== null ? dict.size : -1,
    pages: planned,
    encoding: dict !== null ? ENC_RLE_DICTIONARY : ENC_PLAIN,
    stats: statistics as ColumnMetaData['statistics'],
    columnIndex,
  }
}

/**
 * Writes the chunk `plan` describes at the writer's offset: each page's header, levels (from
 * `arena`) and values as compressed, `pages.body(first + k)` for the plan's page k.
 */
export function placeChunk(out: ByteWriter, plan: ChunkPlan, arena: Uint8Array, pages: Pick<PageCompressor, 'body'>, first: number): EncodedChunk {
  const pg = plan.pages
  const count = pg.length / PAGE_FIELDS
  const chunkStart = out.offset
  let uncompressedTotal = 0
  let k = 0
  let dictionaryOffset: bigint | undefined
  if (plan.dictEntries >= 0) {
    dictionaryOffset = BigInt(out.offset)
    const raw = pg[2] - pg[1]
    const compressed = pages.body(first)
    const hl = dictionaryPageHeader(raw, compressed.length, plan.dictEntries)
    out.appendBytes(header.subarray(0, hl))
    out.appendBytes(compressed)
    uncompressedTotal += hl + raw
    k = 1
  }
  const dataPages = count - k
  const offsetIndex: OffsetIndex | undefined = dataPages > 1 ? { page_locations: [] } : undefined
  const dataOffset = BigInt(out.offset)
  for (; k < count; k++) {
    const f = k * PAGE_FIELDS
    const levelStart = pg[f]
    const valueStart = pg[f + 1]
    const defBytes = valueStart - levelStart
    const raw = pg[f + 2] - valueStart
    const pageOffset = out.offset
    const compressed = pages.body(first + k)
    const hl = dataPageHeader(defBytes + raw, defBytes + compressed.length, pg[f + 3], pg[f + 4], plan.encoding, defBytes)
    out.appendBytes(header.subarray(0, hl))
    if (defBytes > 0) out.appendBytes(arena.subarray(levelStart, valueStart))
    out.appendBytes(compressed)
    uncompressedTotal += hl + defBytes + raw
    offsetIndex?.page_locations.push({ offset: BigInt(pageOffset), compressed_page_size: out.offset - pageOffset, first_row_index: BigInt(pg[f + 5]) })
  }
  const dict = plan.dictEntries >= 0
  const element = plan.element
  const chunk: ColumnChunk = {
    file_offset: BigInt(chunkStart),
    meta_data: {
      type: element.type!,
      encodings: dict ? ['PLAIN', 'RLE_DICTIONARY'] : ['PLAIN'],
      path_in_schema: [element.name],
      codec: plan.codec,
      num_values: BigInt(plan.rows),
      total_uncompressed_size: BigInt(uncompressedTotal),
      total_compressed_size: BigInt(out.offset - chunkStart),
      data_page_offset: dataOffset,
      dictionary_page_offset: dictionaryOffset,
      statistics: plan.stats,
      encoding_stats: [
        ...(dict ? [{ page_type: 'DICTIONARY_PAGE' as const, encoding: 'PLAIN' as const, count: 1 }] : []),
        { page_type: 'DATA_PAGE_V2' as const, encoding: dict ? ('RLE_DICTIONARY' as const) : ('PLAIN' as const), count: dataPages },
      ],
    },
  }
  return { chunk, columnIndex: plan.columnIndex, offsetIndex }
}

/**
 * Writes rows [0, rows) of `col` as one column chunk of `element` at the writer's offset, its
 * pages compressed by `opts.compress` as they are placed.
 */
export function writeColumnChunk(out: ByteWriter, element: SchemaElement, col: Column, rows: number, opts: ChunkEncodeOptions): EncodedChunk {
  const compressor = new InlinePageCompressor(opts.compress)
  const plan = encodeColumnChunk(compressor.arenas[0], element, col, rows, opts)
  const ranges: number[] = []
  planRanges(plan, ranges)
  compressor.begin(0, ranges)
  return placeChunk(out, plan, compressor.arenas[0].bytes, compressor, 0)
}
