// The columnar merge's pending output: the rows that survive, gathered into column batches.

import { type Column, type ColumnBatch, gatherColumn } from '../../format/columnar-types.ts'

/**
 * The merge's pending output: row `row[i]` of `sources[src[i]]` (a run's block, or the rows
 * the merge function made since the last flush), gathered into one batch for the sink when
 * full or before a run moves past a block it refers to. A class rather than closures made per
 * merge: its methods are the same functions in every compaction, so the code V8 optimizes
 * the merge loop into in one job is not thrown away in the next for calling new ones.
 */
export class PendingOutput {
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
      sources.length = 0
      return
    }
    const n = this.n
    const nc = sources[0].cols.length
    const columns: Column[] = new Array(nc)
    for (let c = 0; c < nc; c++) {
      // a column holding the very arrays an earlier one holds (a primary-key field read once as _KEY_<k> and <k>) is gathered once
      let twin = -1
      for (let d = 0; d < c && twin < 0; d++) if (sameColumn(sources, c, d)) twin = d
      columns[c] = twin >= 0 ? columns[twin] : gatherColumn(columnOf(sources, c), this.src, this.row, n)
    }
    for (const b of sources) b.pendingId = -1
    // emptied, not replaced: a new [] holds small integers until its first push, and `push`,
    // compiled into the merge loop for an array of objects, deoptimized at it
    sources.length = 0
    this.n = 0
    this.made = null
    await this.sink({ rows: n, columns })
  }
}

/** Whether every source holds the very same array as columns c and d. (Plain functions, not closures made per flush.) */
function sameColumn(sources: PendingSource[], c: number, d: number): boolean {
  for (let s = 0; s < sources.length; s++) if (sources[s].cols[c] !== sources[s].cols[d]) return false
  return true
}

/** Column c of every source. */
function columnOf(sources: PendingSource[], c: number): Column[] {
  const out: Column[] = [] // packed, as the other callers' arrays are
  for (let s = 0; s < sources.length; s++) out.push(sources[s].cols[c])
  return out
}

/** What the pending output gathers from: a run's block, or the rows the merge function made. */
export interface PendingSource {
  readonly cols: Column[]
  pendingId: number
}

/** Rows the merge function made, column by column (sequence numbers and kinds typed, as the runs' are). */
export class MadeRows implements PendingSource {
  readonly cols: Column[]
  pendingId = -1
  n = 0
  constructor(nc: number, nk: number, capacity: number) {
    this.cols = Array.from({ length: nc }, (_, c) => (c === nk ? new BigInt64Array(capacity) : c === nk + 1 ? new Int32Array(capacity) : new Array<unknown>(capacity)))
  }
}
