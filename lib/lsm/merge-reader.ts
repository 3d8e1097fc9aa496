// Merge-on-read across the sorted runs of one bucket: a k-way merge by key, then each key's
// records ordered by sequence (sequence.field, then _SEQUENCE_NUMBER) and folded by the
// merge function (Paimon's SortMergeReader + MergeFunctionWrapper).

import type { KeyValue, Value } from '../types.ts'
import type { MergeFunction } from '../merge/merge-types.ts'

/** A sorted source of records, consumed a batch at a time so memory stays per-run. */
export type RecordSource = AsyncIterable<KeyValue[]>

class Cursor {
  private batch: KeyValue[] = []
  private pos = 0
  private done = false
  constructor(private readonly it: AsyncIterator<KeyValue[]>) {}

  /** Loads the next non-empty batch if needed; false once exhausted. */
  async ready(): Promise<boolean> {
    while (this.pos >= this.batch.length) {
      if (this.done) return false
      const next = await this.it.next()
      if (next.done) {
        this.done = true
        return false
      }
      this.batch = next.value
      this.pos = 0
    }
    return true
  }
  get head(): KeyValue {
    return this.batch[this.pos]
  }
  advance(): void {
    this.pos++
  }
}

export interface MergeReaderOptions {
  keyComparator: (a: Value[], b: Value[]) => number
  sequenceComparator: (a: KeyValue, b: KeyValue) => number
  mergeFunction: MergeFunction
  /** records per yielded batch */
  batchSize?: number
}

/**
 * Merges sorted sources into one sorted stream with one record per key. Sources are given
 * oldest first: records of one key with equal sequence numbers keep source order, so the
 * later (newer) source's record is added last and wins. Records whose
 * merged result is null are dropped; retract results (-U/-D) are yielded, so the caller
 * decides (a top-level read drops them, a compaction to a non-top level keeps them).
 */
export async function* mergeSortedRuns(sources: RecordSource[], opts: MergeReaderOptions): AsyncGenerator<KeyValue[]> {
  const { keyComparator, sequenceComparator, mergeFunction, batchSize = 4096 } = opts
  // every source's first batch at once: a source's first read opens its file (a footer
  // GET), so priming them one by one would cost one round trip per source
  const cursors = sources.map((s) => new Cursor(s[Symbol.asyncIterator]()))
  const ready = await Promise.all(cursors.map((c) => c.ready()))
  let live = cursors.filter((_, i) => ready[i])
  let out: KeyValue[] = []
  const group: KeyValue[] = []
  while (live.length > 0) {
    // smallest key among the heads
    let min = live[0].head.key
    for (let i = 1; i < live.length; i++) {
      const k = live[i].head.key
      if (keyComparator(k, min) < 0) min = k
    }
    group.length = 0
    const exhausted: Cursor[] = []
    for (const c of live) {
      // a file holds one row per key, but tolerate several
      while (keyComparator(c.head.key, min) === 0) {
        group.push(c.head)
        c.advance()
        if (!(await c.ready())) {
          exhausted.push(c)
          break
        }
      }
    }
    if (exhausted.length) live = live.filter((c) => !exhausted.includes(c))
    // every group goes through the merge function, even a single record: the row-kind
    // filter (ignore-delete) and the engine decide what a lone record becomes
    if (group.length > 1) group.sort(sequenceComparator)
    mergeFunction.reset()
    for (const kv of group) mergeFunction.add(kv)
    const merged = mergeFunction.result()
    if (merged) {
      out.push(merged)
      if (out.length >= batchSize) {
        yield out
        out = []
      }
    }
  }
  if (out.length) yield out
}
