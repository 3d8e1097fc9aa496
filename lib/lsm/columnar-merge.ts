// The columnar merge of a compaction step: sorted runs read as column batches (one row group
// per run at a time, lib/format/columnar-reader.ts), merged by key into a permutation of
// (batch, row) pairs holding each key's surviving record, whose columns are then gathered
// and handed to the writer (`DataFileWriter.writeColumns`). No `KeyValue` object per row.
//
// It computes what the row path computes (lib/lsm/merge-reader.ts `mergeSortedRuns` with the
// table's merge function, then compact-task.ts dropping retractions at the top level), and
// the row path stays the reference model: test/columnar-compaction.test.ts compares the
// files both write on random inputs. Which path merges a step is decided in one place,
// `chooseMergePath`, from the descriptor `COLUMNAR_ENGINES`.

import { valueComparator } from '../format/compare.ts'
import { type Column, type ColumnBatch, gatherColumn, isNullAt, isUtf8Column, physicalToValue, valueAt } from '../format/columnar-types.ts'
import type { PositionedBatch } from '../format/columnar-reader.ts'
import { physicalEncoder } from '../format/parquet-types.ts'
import { RowKind, type DataType, type KeyValue, type Value } from '../types.ts'
import { type MergeEngine, type MergeEngineConfig, type MergeFunction, engineTraits, sequenceValueComparator } from '../merge/merge-function.ts'

/**
 * What the columnar merge knows of an engine: how one key's records (in merge order, oldest
 * first: `sequence.field`, then `_SEQUENCE_NUMBER`, ties to the newer run) reduce to the
 * record the key keeps.
 */
export type ColumnarEngine =
  | {
      /**
       * The key keeps its last record in merge order among those the row-kind filter
       * (`ignore-delete`, `ignore-update-before`) lets through, whatever its kind; none when
       * the filter drops them all. That is deduplicate under both of Paimon's compositions,
       * the table's (filter, reducer, engine) and the lookup merge's (filter, engine): the
       * reducer only passes a key's lone retraction through, which deduplicate keeps anyway.
       * Rising keys looked up in older levels (deletion vectors) supersede the older row
       * unless it sorts after them in merge order, as the row path decides with the engine's
       * merge of the two.
       */
      keeps: 'last'
    }
  | {
      /**
       * The engine's own merge function (the row path's, the reference) folds each key that
       * has more than one record, or one it does not keep as it is, and each key found in an
       * older level, with that level's row; its result is written as a row of its own. A key
       * with one record of a kind `keepsAlone` accepts, met in no older level, is gathered as
       * it is: what the merge function would return for it is that record unchanged.
       */
      keeps: 'fold'
      /** a lone record of this kind merges to itself (the kind, sequence number and values unchanged) */
      keepsAlone: (kind: RowKind) => boolean
      /**
       * Records that are all +I or +U merge field by field to each field's last non-null
       * value in merge order, as +I with the last record's sequence number (partial-update):
       * such a key is reduced over the columns as they are, without making records
       */
      lastNonNull?: true
      /** a lone record with null in a NOT NULL value field is refused by the merge function: fold it to get its error */
      refusesNullInNotNull: boolean
    }

/**
 * A lone +I merges to itself under every engine (partial-update fills its row from it,
 * aggregation starts every aggregator from it: each implemented function returns its first
 * input, lib/merge/aggregate.ts); a lone +U does too where the engine keeps records whole
 * (first-row), while partial-update and aggregation turn it into +I. Lone retractions are
 * left to the merge function (the reducer passes them, the lookup merge does not).
 */
export const COLUMNAR_ENGINES: Readonly<Record<MergeEngine, ColumnarEngine>> = {
  deduplicate: { keeps: 'last' },
  'first-row': { keeps: 'fold', keepsAlone: (kind) => kind === RowKind.INSERT || kind === RowKind.UPDATE_AFTER, refusesNullInNotNull: false },
  'partial-update': { keeps: 'fold', keepsAlone: (kind) => kind === RowKind.INSERT, refusesNullInNotNull: true, lastNonNull: true },
  aggregation: { keeps: 'fold', keepsAlone: (kind) => kind === RowKind.INSERT, refusesNullInNotNull: false },
}

/** `auto`: columnar; `row`: always the row path; `columnar`: the columnar path, refusing what it cannot merge (tests, benchmarks). */
export type MergePathRequest = 'auto' | 'row' | 'columnar'

export type MergePathChoice = { path: 'columnar'; engine: ColumnarEngine } | { path: 'row'; reason: string }

/**
 * Which path merges a compaction step: the only place that decides. Every engine merges
 * columnar, with lookups into older levels or without; the row path stays for
 * `mergePath: 'row'` (the reference in tests, and a switch should the columnar path need one).
 */
export function chooseMergePath(cfg: MergeEngineConfig, requested: MergePathRequest = 'auto'): MergePathChoice {
  if (requested === 'row') return { path: 'row', reason: 'the row path was requested' }
  return { path: 'columnar', engine: COLUMNAR_ENGINES[cfg.engine] }
}

// ---------------------------------------------------------------------------------------------

/** The run's next non-empty batch as a Block, or null at its end. */
async function nextBlockOf(iter: AsyncIterator<ColumnBatch>, nk: number, numericKey: boolean): Promise<Block | null> {
  while (true) {
    const next = await iter.next()
    if (next.done) return null
    if (next.value.rows > 0) return new Block(next.value, nk, numericKey)
  }
}

function isRetract(kind: number): boolean {
  return kind === RowKind.UPDATE_BEFORE || kind === RowKind.DELETE
}

const NUMERIC_KEY_ROOTS = new Set(['TINYINT', 'SMALLINT', 'INT', 'DATE', 'BIGINT', 'TIMESTAMP', 'DECIMAL'])
const TWO_32 = 4294967296

/** One run's current row group, with the views the merge compares on. */
class Block {
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

/** One older level's file, for lookups: its key range in physical values and its live rows. */
export interface LookupFile {
  name: string
  /** the file's smallest and largest key, physical values (`physicalEncoder`) */
  minKey: unknown[]
  maxKey: unknown[]
  /** its live rows with their positions, row group by row group (key columns, `sequence.field`, sequence number and kind at least) */
  rows(): AsyncIterator<PositionedBatch>
}

const LOAD = 1

/**
 * Cursor over the live rows of one older level (a sorted run), probed with rising keys in
 * key order: the columnar form of compact-task.ts's `LevelLookup`. `find` answers without
 * waiting while the rows it needs are loaded, else LOAD, and `load()` fetches them.
 */
export class ColumnarLevelLookup {
  private fileIdx: number
  private iter: AsyncIterator<PositionedBatch> | null = null
  private block: Block | null = null
  private pos = 0
  constructor(
    private readonly files: LookupFile[],
    /** the first file a probe can hit (those wholly below the step's smallest key are skipped) */
    startAt: number,
    private readonly nk: number,
    private readonly numericKey: boolean,
    private readonly keyCmp: (a: Block, i: number, b: Block, j: number) => number,
    private readonly boundCmp: (a: Block, i: number, bound: unknown[]) => number,
  ) {
    this.fileIdx = startAt
  }

  /** The live row with the key of row `i` of `b`: its block and row, or null, or LOAD. */
  find(b: Block, i: number): { block: Block; row: number; file: string } | null | typeof LOAD {
    while (this.fileIdx < this.files.length) {
      const f = this.files[this.fileIdx]
      if (this.boundCmp(b, i, f.maxKey) > 0) {
        this.nextFile()
        continue
      }
      if (this.boundCmp(b, i, f.minKey) < 0) return null
      const block = this.block
      if (block === null) return LOAD
      while (this.pos < block.n) {
        const c = this.keyCmp(block, this.pos, b, i)
        if (c < 0) {
          this.pos++
          continue
        }
        return c === 0 ? { block, row: this.pos, file: f.name } : null
      }
      return LOAD
    }
    return null
  }

  /** Loads the next row group of the current file (the first when none is loaded), or moves to the next file. */
  async load(): Promise<void> {
    const f = this.files[this.fileIdx]
    this.iter ??= f.rows()
    const next = await this.iter.next()
    if (next.done) {
      this.nextFile()
      return
    }
    this.block = new Block(next.value, this.nk, this.numericKey)
    this.pos = 0
  }

  private nextFile(): void {
    this.fileIdx++
    this.iter = null
    this.block = null
    this.pos = 0
  }
}

export interface ColumnarMergeOptions {
  /** types of the trimmed primary key, in key order */
  keyTypes: DataType[]
  cfg: MergeEngineConfig
  engine: ColumnarEngine
  /**
   * `keeps: 'fold'`: the step's merge function (the row path's: the table's, or the lookup
   * merge for records taken up from level 0) and the order it takes a key's records in
   * (`sequenceComparator`); required for such an engine
   */
  mergeFunction?: MergeFunction
  recordOrder?: (a: KeyValue, b: KeyValue) => number
  /** drop keys whose surviving record is a retraction (-U/-D): a compaction into the top level */
  dropDelete: boolean
  /** older levels not rewritten by the step, newest first, in which each surviving key is looked up */
  lookupLevels?: LookupFile[][]
  /** the first file of each lookup level a probe can hit */
  lookupStart?: number[]
  /** a superseded row of an older level: its file and position, to mark in the file's deletion vector */
  onSuperseded?: (file: string, position: number) => void
  /** most rows per batch handed to the sink */
  batchRows?: number
}

/** PlainMerge.step: every run is used up */
const PLAIN_DONE = -1
/** PlainMerge.step: the pending output is full (flush it, then step again) */
const PLAIN_FULL = -2
/** PlainMerge.step: a run's head block holds no exact numeric keys: the next key goes the general way */
const PLAIN_GENERAL = -3

/**
 * The merge's loop for its common table: one integer key held as exact numbers by every head
 * block, no sequence.field, an engine that keeps one record per key. Synchronous, and the
 * same class in every compaction: V8 compiles `step` as a small function of its own, where
 * the loop inside the async merge was compiled on the stack, in pieces, four times in a warm
 * process's second job (docs/benchmarks.md, "The merge loop out of the async function").
 */
class PlainMerge {
  /** a key's scan paused at run `r` for that run's next block: its first head, and the winner so far */
  #scanning = false
  #r = 0
  #minB: Block | null = null
  #minI = 0
  #wB: Block | null = null
  #wI = 0

  constructor(
    private readonly blocks: (Block | null)[],
    private readonly pos: Int32Array,
    private readonly pending: PendingOutput,
    private readonly dropUpdateBefore: boolean,
    private readonly dropDeleteKind: boolean,
    /** retractions dropped here (the top level, without lookups; with lookups, after them) */
    private readonly dropRetract: boolean,
    private readonly keyCmp: (a: Block, i: number, b: Block, j: number) => number,
  ) {}

  /**
   * Merges keys into the pending output until it is full (PLAIN_FULL), every run is used up
   * (PLAIN_DONE), a head block has no numeric keys (PLAIN_GENERAL, between keys), or run r's
   * block is used up (returns r: its next block goes in `blocks[r]` at `pos[r]` 0, after a flush).
   */
  step(): number {
    const blocks = this.blocks
    const pos = this.pos
    const k = blocks.length
    const dropUpdateBefore = this.dropUpdateBefore
    const dropDeleteKind = this.dropDeleteKind
    while (true) {
      let r0: number
      if (this.#scanning) r0 = this.#r
      else {
        // the smallest key among the runs' heads; runs before it hold larger keys
        let m = -1
        let least = 0
        for (let r = 0; r < k; r++) {
          const b = blocks[r]
          if (b === null) continue
          const keys = b.numKey
          if (keys === null) return PLAIN_GENERAL
          const v = keys[pos[r]]
          if (m < 0 || v < least) {
            m = r
            least = v
          }
        }
        if (m < 0) return PLAIN_DONE
        this.#minB = blocks[m]
        this.#minI = pos[m]
        this.#wB = null
        this.#wI = 0
        this.#scanning = true
        r0 = m
      }
      const minB = this.#minB!
      const minI = this.#minI
      const key = minB.numKey![minI]
      let wB = this.#wB
      let wI = this.#wI
      let wHi = wB === null ? 0 : wB.seq[2 * wI + 1]
      let wLo = wB === null ? 0 : wB.seq[2 * wI] >>> 0
      // the key's records, oldest run first and in file order within a run: the last one the
      // filter keeps, by sequence number (ties to the later record), survives
      for (let r = r0; r < k; r++) {
        const b = blocks[r]
        if (b === null) continue
        const keys = b.numKey
        while (true) {
          const i = pos[r]
          // a block read after the scan began may hold a key beyond 2^53 somewhere: compared the general way
          if (keys === null ? this.keyCmp(b, i, minB, minI) !== 0 : keys[i] !== key) break
          const kind = b.kinds[i]
          if (!((kind === RowKind.UPDATE_BEFORE && dropUpdateBefore) || (kind === RowKind.DELETE && dropDeleteKind))) {
            const hi = b.seq[2 * i + 1]
            const lo = b.seq[2 * i] >>> 0
            if (wB === null || hi > wHi || (hi === wHi && lo >= wLo)) {
              wB = b
              wI = i
              wHi = hi
              wLo = lo
            }
          }
          if (++pos[r] >= b.n) {
            this.#r = r
            this.#wB = wB
            this.#wI = wI
            return r
          }
        }
      }
      this.#scanning = false
      this.#wB = null
      if (wB === null) continue
      if (this.dropRetract && isRetract(wB.kinds[wI])) continue
      if (this.pending.push(wB, wI)) return PLAIN_FULL
    }
  }
}

/**
 * Merges sorted runs (given oldest first, each a stream of column batches in key order) into
 * one stream of column batches holding each key's surviving record, in key order, handed to
 * `sink` one batch at a time (a batch is gathered before any run moves past the row groups
 * it refers to, so memory stays one row group per run plus one output batch).
 */
export async function mergeColumnarRuns(sources: AsyncIterable<ColumnBatch>[], opts: ColumnarMergeOptions, sink: (batch: ColumnBatch) => Promise<void>): Promise<void> {
  const { keyTypes, cfg, dropDelete, batchRows = 65536, lookupLevels = [], lookupStart = [], onSuperseded } = opts
  const nk = keyTypes.length
  const k = sources.length
  const fold = opts.engine.keeps === 'fold' ? opts.engine : null
  const mf = opts.mergeFunction
  const recordOrder = opts.recordOrder
  if (fold && (!mf || !recordOrder)) throw new Error(`mergeColumnarRuns: merge-engine ${cfg.engine} folds records: mergeFunction and recordOrder are required`)
  const numericKey = nk === 1 && NUMERIC_KEY_ROOTS.has(keyTypes[0].root)
  const keyFns = keyTypes.map(valueComparator)

  const keyCmp = (a: Block, i: number, b: Block, j: number): number => {
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

  // merge order of two records of one key: sequence.field (nulls first, sort order), then _SEQUENCE_NUMBER
  const seqIdx = cfg.sequenceFieldIndexes.map((f) => nk + 2 + f)
  const seqFns = cfg.sequenceFieldIndexes.map((f) => sequenceValueComparator(cfg.fields[f].type))
  const sign = cfg.sequenceAscending ? 1 : -1
  const seqCmp = (a: Block, i: number, b: Block, j: number): number => {
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

  // the row-kind filter (Paimon's RowKindFilter)
  const dropUpdateBefore = cfg.ignoreDelete || cfg.ignoreUpdateBefore
  const dropDeleteKind = cfg.ignoreDelete

  const boundFns = keyFns
  const boundCmp = (a: Block, i: number, bound: unknown[]): number => {
    for (let c = 0; c < nk; c++) {
      const r = boundFns[c](a.keyCols[c][i] as Value, bound[c] as Value)
      if (r !== 0) return r
    }
    return 0
  }
  const keepsOneRecord = engineTraits(cfg.engine).keepsOneRecord
  const lookups = lookupLevels.map((files, l) => new ColumnarLevelLookup(files, lookupStart[l] ?? 0, nk, numericKey, keyCmp, boundCmp))

  const iters = sources.map((s) => s[Symbol.asyncIterator]())
  const nextBlock = (r: number): Promise<Block | null> => nextBlockOf(iters[r], nk, numericKey)

  // the pending output (a class, not closures: see PendingOutput); with lookups (engines that
  // do not fold), each pending row is looked up before the output is gathered
  const pending = new PendingOutput(batchRows, sink)
  /**
   * Each pending row's key looked up in the older levels, as the row path does for each
   * merged record: the older row the record supersedes is reported for its deletion vector;
   * a record the older row outranks (or that repeats its sequence number and kind) is not
   * written; then retractions are dropped at the top level.
   */
  const applyLookups = async (): Promise<void> => {
    let w = 0
    const { src, row } = pending
    for (let p = 0; p < pending.n; p++) {
      const b = pending.sources[src[p]] as Block
      const i = row[p]
      let old: { block: Block; row: number; file: string } | null = null
      for (const l of lookups) {
        let found = l.find(b, i)
        while (found === LOAD) {
          await l.load()
          found = l.find(b, i)
        }
        if (found !== null) {
          old = found
          break
        }
      }
      if (old !== null) {
        const ob = old.block
        const or = old.row
        const oldKind = ob.kinds[or]
        const oldKept = !((oldKind === RowKind.UPDATE_BEFORE && dropUpdateBefore) || (oldKind === RowKind.DELETE && dropDeleteKind))
        // the merge of [older, newer] in merge order keeps the later one the filter lets through
        if (oldKept && seqCmp(ob, or, b, i) > 0) continue
        // the row path compares the kept record with the older one by sequence number and kind
        if (ob.seq[2 * or] === b.seq[2 * i] && ob.seq[2 * or + 1] === b.seq[2 * i + 1] && oldKind === b.kinds[i]) continue
        onSuperseded?.(old.file, ob.positions !== null ? ob.positions[or] : ob.firstPosition + or)
      }
      if (dropDelete && isRetract(b.kinds[i])) continue
      src[w] = src[p]
      row[w] = i
      w++
    }
    pending.n = w
  }
  if (lookups.length > 0 && !fold) pending.beforeGather = applyLookups

  const flush = (): Promise<void> => pending.flush()

  // --- engines that fold (keeps: 'fold') -----------------------------------------------------
  const fields = cfg.fields
  const nf = fields.length
  const nc = nk + 2 + nf
  const keyToValue = keyTypes.map(physicalToValue)
  const fieldToValue = fields.map((f) => physicalToValue(f.type))
  const fieldEncoders = fields.map((f) => physicalEncoder(f.name, f.type))
  const notNullColumns = fields.flatMap((f, j) => (f.type.nullable ? [] : [nk + 2 + j]))
  const valueOf = (conv: ((p: unknown) => Value) | null, p: unknown): Value => (p === null || p === undefined ? null : conv ? conv(p) : (p as Value))
  /** A block's row as the row path reads it. */
  const recordOf = (b: Block, i: number): KeyValue => {
    const key: Value[] = new Array(nk)
    for (let c = 0; c < nk; c++) key[c] = valueOf(keyToValue[c], b.keyCols[c][i])
    const value: Value[] = new Array(nf)
    for (let f = 0; f < nf; f++) value[f] = valueOf(fieldToValue[f], valueAt(b.cols[nk + 2 + f], i))
    return { key, seq: b.seq64[i], kind: b.kinds[i] as RowKind, value }
  }
  const keptAlone = (b: Block, i: number): boolean => {
    if (!fold!.keepsAlone(b.kinds[i] as RowKind)) return false
    if (fold!.refusesNullInNotNull) for (const c of notNullColumns) if (isNullAt(b.cols[c], i)) return false
    return true
  }
  const merge = (records: KeyValue[]): KeyValue | null => {
    if (records.length > 1) records.sort(recordOrder)
    mf!.reset()
    for (const r of records) mf!.add(r)
    return mf!.result()
  }
  /** Appends a row the merge function made (in the writer's physical form) to the pending output; `fill` writes its values at row `r`. */
  const pushMadeRow = async (fill: (cols: Column[], r: number) => void): Promise<void> => {
    const made = (pending.made ??= new MadeRows(nc, nk, batchRows))
    const r = made.n++
    fill(made.cols, r)
    if (pending.push(made, r)) await pending.flush()
  }
  /** A row the merge function made for the group's key: the key's columns copied from the group's first record. */
  const pushMade = (kv: KeyValue): Promise<void> =>
    pushMadeRow((cols, r) => {
      for (let c = 0; c < nk; c++) (cols[c] as unknown[])[r] = groupB[0].keyCols[c][groupI[0]]
      ;(cols[nk] as BigInt64Array)[r] = kv.seq
      ;(cols[nk + 1] as Int32Array)[r] = kv.kind
      for (let f = 0; f < nf; f++) (cols[nk + 2 + f] as unknown[])[r] = fieldEncoders[f](kv.value[f])
    })
  /** The group's records are all +I or +U with no null where a field is NOT NULL (lastNonNull's case). */
  const upsertsOnly = (): boolean => {
    for (let g = 0; g < groupB.length; g++) {
      const kind = groupB[g].kinds[groupI[g]]
      if (kind !== RowKind.INSERT && kind !== RowKind.UPDATE_AFTER) return false
      for (const c of notNullColumns) if (isNullAt(groupB[g].cols[c], groupI[g])) return false
    }
    return true
  }
  const order: number[] = []
  /** lastNonNull over the group: each field's last non-null value in merge order, +I, the last record's sequence number. */
  const pushLastNonNull = (): Promise<void> => {
    const n = groupB.length
    order.length = n
    for (let g = 0; g < n; g++) order[g] = g
    order.sort((a, b) => seqCmp(groupB[a], groupI[a], groupB[b], groupI[b]))
    const last = order[n - 1]
    return pushMadeRow((cols, r) => {
      for (let c = 0; c < nk; c++) (cols[c] as unknown[])[r] = groupB[0].keyCols[c][groupI[0]]
      ;(cols[nk] as BigInt64Array)[r] = groupB[last].seq64[groupI[last]]
      ;(cols[nk + 1] as Int32Array)[r] = RowKind.INSERT
      for (let f = 0; f < nf; f++) {
        const c = nk + 2 + f
        let v: unknown = null
        for (let o = n - 1; o >= 0; o--) {
          const x = valueAt(groupB[order[o]].cols[c], groupI[order[o]])
          if (x !== null && x !== undefined) {
            v = x
            break
          }
        }
        ;(cols[c] as unknown[])[r] = v
      }
    })
  }
  /** Appends row `i` of `b` to the pending output; true when the output is full and must be flushed (no promise per row). */
  const pushRow = (b: Block, i: number): boolean => pending.push(b, i)
  const findOlder = async (b: Block, i: number): Promise<{ block: Block; row: number; file: string } | null> => {
    for (const l of lookups) {
      let found = l.find(b, i)
      while (found === LOAD) {
        await l.load()
        found = l.find(b, i)
      }
      if (found !== null) return found
    }
    return null
  }
  // one key's records, oldest run first and in file order within a run
  const groupB: Block[] = []
  const groupI: number[] = []
  /**
   * One key's records as the row path merges them (merge-reader.ts, then compact-task.ts's
   * lookup into older levels and its dropping of retractions at the top level): gathered as
   * they are when the merge function would return the lone record unchanged, else folded.
   */
  const foldGroup = async (): Promise<void> => {
    const n = groupB.length
    let kv: KeyValue | null = null
    let alone = n === 1 && keptAlone(groupB[0], groupI[0])
    if (!alone && fold!.lastNonNull && lookups.length === 0 && upsertsOnly()) {
      await pushLastNonNull()
      return
    }
    if (!alone) {
      const records: KeyValue[] = new Array(n)
      for (let g = 0; g < n; g++) records[g] = recordOf(groupB[g], groupI[g])
      kv = merge(records)
      if (kv === null) return
    }
    if (lookups.length > 0) {
      const old = await findOlder(groupB[0], groupI[0])
      if (old !== null) {
        const older = recordOf(old.block, old.row)
        const merged = merge([older, kv ?? recordOf(groupB[0], groupI[0])])
        // the merge kept the older record whole (first-row, or deduplicate with a sequence
        // field): it stays, nothing is written. An engine that folds values always writes its
        // merge, even when the rising record's sequence number is the lower one
        if (merged !== null && keepsOneRecord && merged.seq === older.seq && merged.kind === older.kind) return
        onSuperseded?.(old.file, old.block.positions !== null ? old.block.positions[old.row] : old.block.firstPosition + old.row)
        if (merged === null) return
        kv = merged
        alone = false
      }
    }
    if (dropDelete && isRetract(alone ? groupB[0].kinds[groupI[0]] : kv!.kind)) return
    if (alone) {
      if (pushRow(groupB[0], groupI[0])) await flush()
    } else await pushMade(kv!)
  }

  // every run's first row group at once: each first read opens a file
  const blocks: (Block | null)[] = await Promise.all(iters.map((_, r) => nextBlock(r)))
  const pos = new Int32Array(k)

  // one integer key held as exact numbers by every head block, and no sequence.field: the
  // choice the general loop below makes, in a synchronous loop of its own (PlainMerge)
  const plain = !fold && numericKey && seqIdx.length === 0 ? new PlainMerge(blocks, pos, pending, dropUpdateBefore, dropDeleteKind, dropDelete && lookups.length === 0, keyCmp) : null
  while (true) {
    if (plain !== null) {
      const s = plain.step()
      if (s === PLAIN_DONE) break
      if (s === PLAIN_FULL) {
        await pending.flush()
        continue
      }
      if (s >= 0) {
        // the pending output is gathered before the run's next row group replaces this one
        await pending.flush()
        blocks[s] = await nextBlock(s)
        pos[s] = 0
        continue
      }
      // PLAIN_GENERAL: this key the general way
    }
    // the smallest key among the runs' heads
    let m = -1
    for (let r = 0; r < k; r++) {
      const b = blocks[r]
      if (b !== null && (m < 0 || keyCmp(b, pos[r], blocks[m]!, pos[m]) < 0)) m = r
    }
    if (m < 0) break
    const minB = blocks[m]!
    const minI = pos[m]
    if (fold) {
      groupB.length = 0
      groupI.length = 0
      for (let r = 0; r < k; r++) {
        let b = blocks[r]
        while (b !== null && keyCmp(b, pos[r], minB, minI) === 0) {
          groupB.push(b)
          groupI.push(pos[r])
          if (++pos[r] >= b.n) {
            // the blocks stay readable: the group holds them, and pending rows are gathered first
            await flush()
            b = blocks[r] = await nextBlock(r)
            pos[r] = 0
          }
        }
      }
      await foldGroup()
      continue
    }
    // the key's records, oldest run first and in file order within a run: the last one the
    // filter keeps, by merge order (ties to the later record), survives
    let wB: Block | null = null
    let wI = 0
    for (let r = 0; r < k; r++) {
      let b = blocks[r]
      while (b !== null && keyCmp(b, pos[r], minB, minI) === 0) {
        const i = pos[r]
        const kind = b.kinds[i]
        const kept = !((kind === RowKind.UPDATE_BEFORE && dropUpdateBefore) || (kind === RowKind.DELETE && dropDeleteKind))
        if (kept && (wB === null || seqCmp(b, i, wB, wI) >= 0)) {
          wB = b
          wI = i
        }
        if (++pos[r] >= b.n) {
          // the pending output is gathered before the run's next row group replaces this one
          await flush()
          b = blocks[r] = await nextBlock(r)
          pos[r] = 0
        }
      }
    }
    if (wB === null) continue
    // with lookups, retractions are dropped after the lookup (they still supersede older rows)
    if (dropDelete && lookups.length === 0 && isRetract(wB.kinds[wI])) continue
    if (pushRow(wB, wI)) await flush()
  }
  await flush()
}

/**
 * The merge's pending output: row `row[i]` of `sources[src[i]]` (a run's block, or the rows
 * the merge function made since the last flush), gathered into one batch for the sink when
 * full or before a run moves past a block it refers to. A class rather than closures made per
 * merge: its methods are the same functions in every compaction, so the code V8 optimizes
 * the merge loop into in one job is not thrown away in the next for calling new ones.
 */
class PendingOutput {
  sources: PendingSource[] = []
  readonly src: Int32Array
  readonly row: Int32Array
  n = 0
  /** the rows the merge function made since the last flush (engines that fold) */
  made: MadeRows | null = null
  /** run on the pending rows before they are gathered (the lookups into older levels) */
  beforeGather: (() => Promise<void>) | null = null

  constructor(
    readonly capacity: number,
    private readonly sink: (batch: ColumnBatch) => Promise<void>,
  ) {
    this.src = new Int32Array(capacity)
    this.row = new Int32Array(capacity)
  }

  /** Appends row `i` of `s`; true when the output is full and must be flushed (no promise per row). */
  push(s: PendingSource, i: number): boolean {
    if (s.pendingId < 0) {
      s.pendingId = this.sources.length
      this.sources.push(s)
    }
    this.src[this.n] = s.pendingId
    this.row[this.n] = i
    return ++this.n >= this.capacity
  }

  /** Gathers the pending rows into a batch for the sink (after `beforeGather`), and empties. */
  async flush(): Promise<void> {
    if (this.beforeGather !== null) await this.beforeGather()
    const sources = this.sources
    if (this.n === 0) {
      for (const b of sources) b.pendingId = -1
      this.sources = []
      return
    }
    const n = this.n
    const nc = sources[0].cols.length
    const columns: Column[] = new Array(nc)
    for (let c = 0; c < nc; c++) {
      // a column holding the very arrays an earlier one holds (a primary-key field read once as _KEY_<k> and <k>) is gathered once
      let twin = -1
      for (let d = 0; d < c && twin < 0; d++) if (sources.every((b) => b.cols[c] === b.cols[d])) twin = d
      columns[c] = twin >= 0 ? columns[twin] : gatherColumn(sources.map((b) => b.cols[c]), this.src, this.row, n)
    }
    for (const b of sources) b.pendingId = -1
    this.sources = []
    this.n = 0
    this.made = null
    await this.sink({ rows: n, columns })
  }
}

/** What the pending output gathers from: a run's block, or the rows the merge function made. */
interface PendingSource {
  readonly cols: Column[]
  pendingId: number
}

/** Rows the merge function made, column by column (sequence numbers and kinds typed, as the runs' are). */
class MadeRows implements PendingSource {
  readonly cols: Column[]
  pendingId = -1
  n = 0
  constructor(nc: number, nk: number, capacity: number) {
    this.cols = Array.from({ length: nc }, (_, c) => (c === nk ? new BigInt64Array(capacity) : c === nk + 1 ? new Int32Array(capacity) : new Array<unknown>(capacity)))
  }
}
