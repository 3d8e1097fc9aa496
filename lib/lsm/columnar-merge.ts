// The columnar merge of a compaction step: sorted runs read as column batches (one row group
// per run at a time, lib/format/columnar-reader.ts), merged by key into a permutation of
// (batch, row) pairs holding each key's surviving record, whose columns are then gathered
// and handed to the writer (`DataFileWriter.writeColumns`). No `KeyValue` object per row.
//
// It computes what the row path computes (lib/lsm/merge-reader.ts `mergeSortedRuns` with the
// table's merge function, then the row merge, lib/lsm/compact/rewrite-rows.ts, dropping
// retractions at the top level), and
// the row path stays the reference model: test/columnar-compaction.test.ts compares the
// files both write on random inputs. Which path merges a step is decided in one place,
// `chooseMergePath`, from the engine's descriptor (its `columnar` fact, lib/merge/).

import type { ColumnBatch } from '../format/columnar-types.ts'
import { RowKind, type DataType, type KeyValue } from '../types.ts'
import type { MergeEngineConfig, MergeFunction } from '../merge/merge-types.ts'
import type { ColumnarEngine } from '../merge/descriptor.ts'
import { mergeEngineOf } from '../merge/engines.ts'
import { type Block, NUMERIC_KEY_ROOTS, boundComparatorOf, isRetract, keyComparatorOf, mergeOrderOf, nextBlockOf, rowKindFilterOf } from './columnar/block.ts'
import { FoldGroups } from './columnar/fold.ts'
import { ColumnarLevelLookup, type LookupFile, lookUpPending } from './columnar/lookup.ts'
import { PendingOutput } from './columnar/pending-output.ts'
import { PLAIN_DONE, PLAIN_FULL, PlainMerge } from './columnar/plain-merge.ts'

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
  const engine = mergeEngineOf(cfg.engine).columnar
  return engine ? { path: 'columnar', engine } : { path: 'row', reason: `the ${cfg.engine} engine merges by rows only` }
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

/** What the merge compares and looks up with, made once per merge. */
function mergeSetup(opts: ColumnarMergeOptions) {
  const { keyTypes, cfg, lookupLevels = [], lookupStart = [] } = opts
  const nk = keyTypes.length
  const numericKey = nk === 1 && NUMERIC_KEY_ROOTS.has(keyTypes[0].root)
  const keyCmp = keyComparatorOf(keyTypes)
  const lookups = lookupLevels.map((files, l) => new ColumnarLevelLookup(files, lookupStart[l] ?? 0, nk, numericKey, keyCmp, boundComparatorOf(keyTypes)))
  return { nk, numericKey, keyCmp, seqCmp: mergeOrderOf(cfg, nk), filter: rowKindFilterOf(cfg), lookups }
}

/**
 * Merges sorted runs (given oldest first, each a stream of column batches in key order) into
 * one stream of column batches holding each key's surviving record, in key order, handed to
 * `sink` one batch at a time (a batch is gathered before any run moves past the row groups
 * it refers to, so memory stays one row group per run plus one output batch).
 */
export async function mergeColumnarRuns(sources: AsyncIterable<ColumnBatch>[], opts: ColumnarMergeOptions, sink: (batch: ColumnBatch) => Promise<void>): Promise<void> {
  const { cfg, dropDelete, batchRows = 65536, onSuperseded } = opts
  const k = sources.length
  const engine = opts.engine
  const mergeFunction = opts.mergeFunction
  const recordOrder = opts.recordOrder
  if (engine.keeps === 'fold' && (!mergeFunction || !recordOrder)) throw new Error(`mergeColumnarRuns: merge-engine ${cfg.engine} folds records: mergeFunction and recordOrder are required`)
  const { nk, numericKey, keyCmp, seqCmp, filter, lookups } = mergeSetup(opts)
  const { dropUpdateBefore, dropDeleteKind } = filter
  const iters = sources.map((s) => s[Symbol.asyncIterator]())
  const nextBlock = (r: number): Promise<Block | null> => nextBlockOf(iters[r], nk, numericKey)

  // the pending output (a class, not closures: see PendingOutput); with lookups (engines that
  // do not fold), each pending row is looked up before the output is gathered
  const pending = new PendingOutput(batchRows, sink)
  const fold = engine.keeps === 'fold' ? new FoldGroups({ keyTypes: opts.keyTypes, cfg, engine, mergeFunction: mergeFunction!, recordOrder: recordOrder!, seqCmp, pending, batchRows, lookups, dropDelete, onSuperseded }) : null
  if (lookups.length > 0 && !fold) pending.beforeGather = () => lookUpPending(pending, lookups, { seqCmp, filter, dropDelete, onSuperseded })

  // every run's first row group at once: each first read opens a file
  const blocks: (Block | null)[] = await Promise.all(iters.map((_, r) => nextBlock(r)))
  const pos = new Int32Array(k)

  // one integer key held as exact numbers by every head block, and no sequence.field: the
  // choice the general loop below makes, in a synchronous loop of its own (PlainMerge)
  const plain = !fold && numericKey && cfg.sequenceFieldIndexes.length === 0 ? new PlainMerge(blocks, pos, pending, dropUpdateBefore, dropDeleteKind, dropDelete && lookups.length === 0, keyCmp) : null
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
      // the key's records from every run, then folded (the gathering stays in this loop: no promise per key)
      fold.startGroup()
      for (let r = 0; r < k; r++) {
        let b = blocks[r]
        while (b !== null && keyCmp(b, pos[r], minB, minI) === 0) {
          fold.add(b, pos[r])
          if (++pos[r] >= b.n) {
            // the blocks stay readable: the group holds them, and pending rows are gathered first
            await pending.flush()
            b = blocks[r] = await nextBlock(r)
            pos[r] = 0
          }
        }
      }
      await fold.foldGroup()
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
          await pending.flush()
          b = blocks[r] = await nextBlock(r)
          pos[r] = 0
        }
      }
    }
    if (wB === null) continue
    // with lookups, retractions are dropped after the lookup (they still supersede older rows)
    if (dropDelete && lookups.length === 0 && isRetract(wB.kinds[wI])) continue
    if (pending.push(wB, wI)) await pending.flush()
  }
  await pending.flush()
}
