// The columnar merge's view of one run's row group (a Block), and the comparisons it merges by:
// keys, key bounds, and the merge order of one key's records.

import { valueComparator } from '../../format/compare.ts'
import { type Column, type ColumnBatch, isUtf8Column, valueAt } from '../../format/columnar-types.ts'
import type { PositionedBatch } from '../../format/columnar-reader.ts'
import type { MergeEngineConfig } from '../../merge/merge-types.ts'
import { sequenceValueComparator } from '../../merge/sequence-order.ts'
import { RowKind, type DataType, type Value } from '../../types.ts'

/** The run's next non-empty batch as a Block, or null at its end. */
export async function nextBlockOf(iter: AsyncIterator<ColumnBatch>, nk: number, numericKey: boolean): Promise<Block | null> {
  while (true) {
    const next = await iter.next()
    if (next.done) return null
    if (next.value.rows > 0) return new Block(next.value, nk, numericKey)
  }
}

export function isRetract(kind: number): boolean {
  return kind === RowKind.UPDATE_BEFORE || kind === RowKind.DELETE
}

export const NUMERIC_KEY_ROOTS = new Set(['TINYINT', 'SMALLINT', 'INT', 'DATE', 'BIGINT', 'TIMESTAMP', 'DECIMAL'])
const TWO_32 = 4294967296

/** One run's current row group, with the views the merge compares on. */
export class Block {
  readonly cols: Column[]
  /** the key columns (never `Utf8Column`s: the reader makes those of value columns only) */
  readonly keyCols: ArrayLike<unknown>[]
  readonly n: number
  readonly kinds: Int32Array
  /** `_SEQUENCE_NUMBER` as int32 halves (low, high) per row: compared without making bigints */
  readonly seq: Int32Array
  readonly seq64: BigInt64Array
  /** a single integer key as exact numbers, when every value is a safe integer; else null */
  readonly numKey: ArrayLike<number> | null
  /** index in the pending output's block list, -1 when not in it */
  pendingId = -1
  /** file positions of the rows (lookup levels): row r is at `positions[r]`, or `firstPosition + r` */
  readonly firstPosition: number
  readonly positions: Int32Array | null

  constructor(batch: ColumnBatch | PositionedBatch, nk: number, numericKey: boolean) {
    this.cols = batch.columns
    this.keyCols = new Array(nk)
    for (let c = 0; c < nk; c++) {
      const col = batch.columns[c]
      if (isUtf8Column(col)) throw new Error(`columnar merge: key column ${c} is a Utf8Column`)
      this.keyCols[c] = col
    }
    this.n = batch.rows
    this.firstPosition = 'firstPosition' in batch ? batch.firstPosition : 0
    this.positions = 'positions' in batch ? batch.positions : null
    const seq = batch.columns[nk] as BigInt64Array
    this.seq64 = seq
    this.seq = new Int32Array(seq.buffer, seq.byteOffset, seq.length * 2)
    this.kinds = batch.columns[nk + 1] as Int32Array
    this.numKey = numericKey ? numericKeyOf(batch.columns[0], batch.rows) : null
  }
}

function numericKeyOf(col: Column, n: number): ArrayLike<number> | null {
  if (col instanceof Int32Array || col instanceof Int16Array || col instanceof Int8Array) return col
  if (col instanceof BigInt64Array) {
    const w = new Int32Array(col.buffer, col.byteOffset, n * 2)
    const out = new Float64Array(n)
    for (let r = 0; r < n; r++) {
      const hi = w[2 * r + 1]
      // |v| < 2^53: exact as a double
      if (hi < -2097152 || hi >= 2097152) return null
      out[r] = hi * TWO_32 + (w[2 * r] >>> 0)
    }
    return out
  }
  return null
}

/** Two rows' keys compared: as exact numbers where both blocks hold them so, else field by field. */
export type BlockKeyComparator = (a: Block, i: number, b: Block, j: number) => number

export function keyComparatorOf(keyTypes: DataType[]): BlockKeyComparator {
  const nk = keyTypes.length
  const keyFns = keyTypes.map(valueComparator)
  return (a: Block, i: number, b: Block, j: number): number => {
    const x = a.numKey
    const y = b.numKey
    if (x !== null && y !== null) {
      const u = x[i]
      const v = y[j]
      return u < v ? -1 : u > v ? 1 : 0
    }
    for (let c = 0; c < nk; c++) {
      const r = keyFns[c](a.keyCols[c][i] as Value, b.keyCols[c][j] as Value)
      if (r !== 0) return r
    }
    return 0
  }
}

/** A row's key against a bound (a file's smallest or largest key, physical values). */
export function boundComparatorOf(keyTypes: DataType[]): (a: Block, i: number, bound: unknown[]) => number {
  const nk = keyTypes.length
  const boundFns = keyTypes.map(valueComparator)
  return (a: Block, i: number, bound: unknown[]): number => {
    for (let c = 0; c < nk; c++) {
      const r = boundFns[c](a.keyCols[c][i] as Value, bound[c] as Value)
      if (r !== 0) return r
    }
    return 0
  }
}

/** Merge order of two records of one key: sequence.field (nulls first, sort order), then _SEQUENCE_NUMBER. */
export function mergeOrderOf(cfg: MergeEngineConfig, nk: number): BlockKeyComparator {
  const seqIdx = cfg.sequenceFieldIndexes.map((f) => nk + 2 + f)
  const seqFns = cfg.sequenceFieldIndexes.map((f) => sequenceValueComparator(cfg.fields[f].type))
  const sign = cfg.sequenceAscending ? 1 : -1
  return (a: Block, i: number, b: Block, j: number): number => {
    for (let s = 0; s < seqIdx.length; s++) {
      const x = valueAt(a.cols[seqIdx[s]], i) as Value | undefined
      const y = valueAt(b.cols[seqIdx[s]], j) as Value | undefined
      if (x == null || y == null) {
        if ((x == null) === (y == null)) continue
        return x == null ? -1 : 1
      }
      const c = seqFns[s](x, y)
      if (c !== 0) return sign * c
    }
    const ah = a.seq[2 * i + 1]
    const bh = b.seq[2 * j + 1]
    if (ah !== bh) return ah < bh ? -1 : 1
    const al = a.seq[2 * i] >>> 0
    const bl = b.seq[2 * j] >>> 0
    return al < bl ? -1 : al > bl ? 1 : 0
  }
}

/** The row-kind filter (Paimon's RowKindFilter): which kinds a key's merge passes over. */
export interface RowKindFilter {
  dropUpdateBefore: boolean
  dropDeleteKind: boolean
}

export function rowKindFilterOf(cfg: MergeEngineConfig): RowKindFilter {
  return { dropUpdateBefore: cfg.ignoreDelete || cfg.ignoreUpdateBefore, dropDeleteKind: cfg.ignoreDelete }
}

/** Whether the filter lets a record of this kind through. */
export function passes(filter: RowKindFilter, kind: number): boolean {
  return !((kind === RowKind.UPDATE_BEFORE && filter.dropUpdateBefore) || (kind === RowKind.DELETE && filter.dropDeleteKind))
}
