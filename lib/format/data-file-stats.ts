// The per-file statistics a data file's writer collects for its DataFileMeta (docs/format.md
// "File statistics"): min/max/null counts per field, truncated as Paimon's collectors truncate.

import type { DataType, Value } from '../types.ts'
import { compareDoubles, valueComparator } from './compare.ts'
import { type Column, type TypedColumn, Utf8Column, compareByteRanges, isTypedColumn } from './columnar-types.ts'
import { minMaxInt64 } from './parquet-encode-stats.ts'

/** Statistics of some fields: one entry per covered field; min/max null when unknown. */
export interface ColumnStats {
  min: Value[]
  max: Value[]
  /** null for a nested field, whose null count Paimon does not record */
  nullCounts: (number | null)[]
}

export interface DataFileStats {
  rowCount: number
  /** key of the first row written */
  minKey: Value[]
  /** key of the last row written */
  maxKey: Value[]
  keyStats: ColumnStats
  valueStats: ColumnStats
  minSequenceNumber: bigint
  maxSequenceNumber: bigint
  /** rows whose kind is -U or -D (`_DELETE_ROW_COUNT`) */
  deleteRowCount: number
}

// ---------------------------------------------------------------------------------------------
// Statistics (docs/format.md "File statistics"; `TruncateSimpleColStatsCollector`)

type Compare = (a: Value, b: Value) => number

/**
 * The order Paimon's stats collectors use: the Java `Comparable` of the internal value, which
 * is the key order of compare.ts (floats by `Double.compare`: -0 < +0, NaN last). Binary
 * values are `byte[]`, which is not Comparable, so Java records no min/max for them: null here.
 */
function statsOrder(type: DataType): Compare | null {
  return type.root === 'BINARY' || type.root === 'VARBINARY' || isNestedRoot(type) ? null : valueComparator(type)
}

/**
 * ARRAY, MAP, MULTISET, ROW: Paimon takes a field's statistics from the Parquet footer by the
 * field's name, which names no chunk of a nested column (its chunks are its leaves), so a
 * nested field has no min, max or null count (`ParquetSimpleStatsExtractor.toFieldStats`).
 */
function isNestedRoot(type: DataType): boolean {
  return type.root === 'ARRAY' || type.root === 'MAP' || type.root === 'MULTISET' || type.root === 'ROW'
}

/** First `n` code points of `s`, or null when `s` has no more than `n`. */
function codePointPrefix(s: string, n: number): string | null {
  if (s.length <= n) return null
  let units = 0
  for (let cps = 0; cps < n; cps++) {
    if (units >= s.length) return null
    const c = s.charCodeAt(units)
    units += c >= 0xd800 && c <= 0xdbff && units + 1 < s.length ? 2 : 1
  }
  return units >= s.length ? null : s.slice(0, units)
}

/** Paimon's truncated max: the prefix with its last incrementable code point incremented. */
function truncatedMax(s: string, n: number): string | null {
  const prefix = codePointPrefix(s, n)
  if (prefix === null) return s
  const cps = Array.from(prefix, (c) => c.codePointAt(0)!)
  for (let i = cps.length - 1; i >= 0; i--) {
    let next = cps[i] + 1
    // a surrogate is no character; Java would append one and encode it as '?', below the max
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000
    if (next <= 0x10ffff) return String.fromCodePoint(...cps.slice(0, i), next)
  }
  return null
}

export class ColumnStatsCollector {
  min: Value = null
  max: Value = null
  nullCount = 0
  failed = false
  readonly #order: Compare | null
  readonly #truncate: number | null
  /** a nested field: no statistics at all */
  readonly unknown: boolean

  constructor(type: DataType, truncate: number) {
    this.unknown = isNestedRoot(type)
    this.#order = statsOrder(type)
    this.#truncate = type.root === 'CHAR' || type.root === 'VARCHAR' ? truncate : null
  }

  // Same steps as Paimon's collector, so the bounds match a Java writer's for the same rows:
  // compare against the stored (already truncated) bounds, give up on a max that cannot be rounded up.
  collect(v: Value): void {
    if (v === null) {
      this.nullCount++
      return
    }
    const order = this.#order
    if (order === null || this.failed) return
    if (this.min === null || order(v, this.min) < 0) {
      this.min = this.#truncate === null ? v : (codePointPrefix(v as string, this.#truncate) ?? v)
    }
    if (this.max === null || order(v, this.max) > 0) {
      const max = this.#truncate === null ? v : truncatedMax(v as string, this.#truncate)
      if (max === null) this.failed = true
      else this.max = max
    }
  }
}

export function statsResult(collectors: ColumnStatsCollector[]): ColumnStats {
  return {
    min: collectors.map((c) => (c.failed ? null : c.min)),
    max: collectors.map((c) => (c.failed ? null : c.max)),
    nullCounts: collectors.map((c) => (c.unknown ? null : c.nullCount)),
  }
}

/** FLOAT is stored as float32: stats and keys must describe the stored value. */
export function storedValue(type: DataType): ((v: Value) => Value) | null {
  return type.root === 'FLOAT' ? (v) => (v === null ? null : Math.fround(v as number)) : null
}


export function valueOf(p: unknown, toValue: ((p: unknown) => Value) | null, stored: ((v: Value) => Value) | null): Value {
  const v = toValue === null ? (p as Value) : toValue(p)
  return stored === null ? v : stored(v)
}

export const compareBigintValues = (a: unknown, b: unknown): number => ((a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0)

/**
 * Rows holding the least and the greatest value of [from, to) of a column without nulls, by
 * `order`; a typed column by its own order, each kind in a small loop of its own (one loop
 * fed every kind would be compiled for all of them, and later than a small one).
 */
export function minMaxRows(col: ArrayLike<unknown>, from: number, to: number, order: (a: unknown, b: unknown) => number): [number, number] {
  if (col instanceof BigInt64Array) {
    if (from >= to) return [from, from]
    const m = minMaxInt64(new Int32Array(col.buffer, col.byteOffset, col.length * 2), from, to)
    return [m.lo, m.hi]
  }
  if (col instanceof Float32Array || col instanceof Float64Array) return minMaxRowsFloat(col, from, to)
  if (col instanceof Int32Array) return minMaxRowsInt32(col, from, to)
  if (isTypedColumn(col) && !(col instanceof BigUint64Array)) return minMaxRowsNumber(col as Exclude<TypedColumn, BigInt64Array | BigUint64Array>, from, to)
  return minMaxRowsBy(col, from, to, order)
}

function minMaxRowsFloat(col: Float32Array | Float64Array, from: number, to: number): [number, number] {
  let lo = from
  let hi = from
  for (let r = from + 1; r < to; r++) {
    if (compareDoubles(col[r], col[lo]) < 0) lo = r
    if (compareDoubles(col[r], col[hi]) > 0) hi = r
  }
  return [lo, hi]
}

function minMaxRowsInt32(c: Int32Array, from: number, to: number): [number, number] {
  let lo = from
  let hi = from
  for (let r = from + 1; r < to; r++) {
    if (c[r] < c[lo]) lo = r
    if (c[r] > c[hi]) hi = r
  }
  return [lo, hi]
}

function minMaxRowsNumber(c: Exclude<TypedColumn, BigInt64Array | BigUint64Array>, from: number, to: number): [number, number] {
  let lo = from
  let hi = from
  for (let r = from + 1; r < to; r++) {
    if (c[r] < c[lo]) lo = r
    if (c[r] > c[hi]) hi = r
  }
  return [lo, hi]
}

function minMaxRowsBy(col: ArrayLike<unknown>, from: number, to: number, order: (a: unknown, b: unknown) => number): [number, number] {
  let lo = from
  let hi = from
  for (let r = from + 1; r < to; r++) {
    if (order(col[r], col[lo]) < 0) lo = r
    if (order(col[r], col[hi]) > 0) hi = r
  }
  return [lo, hi]
}

/**
 * What `collector.collect` of every value of rows [from, to) leaves. The collector truncates
 * only strings, which go value by value; of any other type it keeps the least and the
 * greatest value by the type's order (a total order, which the physical values share:
 * TIMESTAMP(0..3) millis scale to micros) and counts nulls, so only those two values are
 * collected. A typed column holds no nulls.
 */
export function collectRange(collector: ColumnStatsCollector, col: Column, from: number, to: number, type: DataType, toValue: ((p: unknown) => Value) | null, stored: ((v: Value) => Value) | null): void {
  if (col instanceof Utf8Column) {
    collectUtf8(collector, col, from, to)
    return
  }
  if (collector.unknown) return
  if (type.root === 'CHAR' || type.root === 'VARCHAR') {
    for (let r = from; r < to; r++) collector.collect(valueOf(col[r], toValue, stored))
    return
  }
  if (isTypedColumn(col) && !(col instanceof BigUint64Array)) {
    const [lo, hi] = minMaxRows(col, from, to, compareBigintValues)
    collector.collect(valueOf(col[lo], toValue, stored))
    collector.collect(valueOf(col[hi], toValue, stored))
    return
  }
  const order = valueComparator(type)
  let lo = -1
  let hi = -1
  let nulls = 0
  for (let r = from; r < to; r++) {
    const v = (col as ArrayLike<unknown>)[r] as Value
    if (v === null || v === undefined) {
      nulls++
      continue
    }
    if (lo < 0) {
      lo = hi = r
      continue
    }
    if (order(v, (col as ArrayLike<unknown>)[lo] as Value) < 0) lo = r
    if (order(v, (col as ArrayLike<unknown>)[hi] as Value) > 0) hi = r
  }
  collector.nullCount += nulls
  if (lo >= 0) {
    collector.collect(valueOf((col as ArrayLike<unknown>)[lo], toValue, stored))
    collector.collect(valueOf((col as ArrayLike<unknown>)[hi], toValue, stored))
  }
}

const utf8Encoder = new TextEncoder()

const NO_BYTES = new Uint8Array(0)
const NO_BYTES_VIEW = new DataView(NO_BYTES.buffer)

/**
 * `collectRange` of a Utf8Column (valid UTF-8, so byte order is the collector's code point
 * order): a row between the collector's current bounds would change nothing and is passed
 * over without making its string; every other row is collected as its string. The pass over
 * rows is `nextToCollect`, a small loop V8 optimizes once; this loop runs once per row that
 * moves a bound (a few per page), so the collector's code is not compiled into the hot loop.
 */
function collectUtf8(collector: ColumnStatsCollector, col: Utf8Column, from: number, to: number): void {
  const { bytes, offsets, nulls } = col
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let minS: Value = null
  let maxS: Value = null
  let minB = NO_BYTES
  let maxB = NO_BYTES
  let minV = NO_BYTES_VIEW
  let maxV = NO_BYTES_VIEW
  let r = from
  while (r < to) {
    if (nulls !== null && nulls[r] === 1) {
      collector.nullCount++
      r++
      continue
    }
    if (collector.failed) {
      // no bound moves any more: only the nulls are counted
      collector.nullCount += nullsIn(nulls, r, to)
      return
    }
    const min = collector.min
    const max = collector.max
    if (min !== null && max !== null) {
      if (min !== minS) {
        minB = utf8Encoder.encode((minS = min) as string)
        minV = new DataView(minB.buffer, minB.byteOffset, minB.byteLength)
      }
      if (max !== maxS) {
        maxB = utf8Encoder.encode((maxS = max) as string)
        maxV = new DataView(maxB.buffer, maxB.byteOffset, maxB.byteLength)
      }
      const next = nextToCollect(bytes, dv, offsets, nulls, r, to, minB, minV, maxB, maxV)
      if (next !== r) {
        r = next
        continue
      }
    }
    collector.collect(col.string(r))
    r++
  }
}

/** The first row in [r, to) that is null or outside [min, max] (as UTF-8 bytes), else `to`. */
function nextToCollect(bytes: Uint8Array, dv: DataView, offsets: Int32Array, nulls: Uint8Array | null, r: number, to: number, minB: Uint8Array, minV: DataView, maxB: Uint8Array, maxV: DataView): number {
  for (; r < to; r++) {
    if (nulls !== null && nulls[r] === 1) return r
    const a = offsets[r]
    const b = offsets[r + 1]
    if (compareByteRanges(bytes, dv, a, b, minB, minV, 0, minB.length) < 0 || compareByteRanges(bytes, dv, a, b, maxB, maxV, 0, maxB.length) > 0) return r
  }
  return to
}

/** Null rows of [r, to). */
function nullsIn(nulls: Uint8Array | null, r: number, to: number): number {
  if (nulls === null) return 0
  let n = 0
  for (; r < to; r++) n += nulls[r] === 1 ? 1 : 0
  return n
}
