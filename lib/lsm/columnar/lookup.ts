// The columnar merge's lookups of surviving keys in the older levels a step does not rewrite
// (deletion vectors): a cursor per level, and the pass over the pending output that reports
// superseded rows.

import type { PositionedBatch } from '../../format/columnar-reader.ts'
import { Block, type BlockKeyComparator, type RowKindFilter, isRetract, passes } from './block.ts'
import type { PendingOutput } from './pending-output.ts'

/** One older level's file, for lookups: its key range in physical values and its live rows. */
export interface LookupFile {
  name: string
  /** the file's smallest and largest key, physical values (`physicalEncoder`) */
  minKey: unknown[]
  maxKey: unknown[]
  /** its live rows with their positions, row group by row group (key columns, `sequence.field`, sequence number and kind at least) */
  rows(): AsyncIterator<PositionedBatch>
}

export const LOAD = 1

/**
 * Cursor over the live rows of one older level (a sorted run), probed with rising keys in
 * key order: the columnar form of the row merge's `LevelLookup` (lib/lsm/compact/level-lookup.ts). `find` answers without
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

/** A row of an older level: its block and row there, and its file. */
export interface OlderRow {
  block: Block
  row: number
  file: string
}

/** The live row with the key of row `i` of `b` in the first (newest) level that has one, or null. */
export async function findOlder(lookups: ColumnarLevelLookup[], b: Block, i: number): Promise<OlderRow | null> {
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

/** The position in its file of an older row, for its deletion vector. */
export function filePositionOf(old: OlderRow): number {
  return old.block.positions !== null ? old.block.positions[old.row] : old.block.firstPosition + old.row
}

/** What the lookups of pending rows decide with. */
export interface PendingLookupRules {
  seqCmp: BlockKeyComparator
  filter: RowKindFilter
  /** drop retractions (the top level), after their lookup: they still supersede older rows */
  dropDelete: boolean
  onSuperseded?: (file: string, position: number) => void
}

/**
 * Each pending row's key looked up in the older levels, as the row path does for each
 * merged record: the older row the record supersedes is reported for its deletion vector;
 * a record the older row outranks (or that repeats its sequence number and kind) is not
 * written; then retractions are dropped at the top level. Run before the output is gathered.
 */
export async function lookUpPending(pending: PendingOutput, lookups: ColumnarLevelLookup[], rules: PendingLookupRules): Promise<void> {
  let w = 0
  const { src, row } = pending
  for (let p = 0; p < pending.n; p++) {
    const b = pending.sources[src[p]] as Block
    const i = row[p]
    // findOlder, inline: no promise per row when the rows it needs are loaded
    let old: OlderRow | null = null
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
      // the merge of [older, newer] in merge order keeps the later one the filter lets through
      if (passes(rules.filter, oldKind) && rules.seqCmp(ob, or, b, i) > 0) continue
      // the row path compares the kept record with the older one by sequence number and kind
      if (ob.seq[2 * or] === b.seq[2 * i] && ob.seq[2 * or + 1] === b.seq[2 * i + 1] && oldKind === b.kinds[i]) continue
      rules.onSuperseded?.(old.file, filePositionOf(old))
    }
    if (rules.dropDelete && isRetract(b.kinds[i])) continue
    src[w] = src[p]
    row[w] = i
    w++
  }
  pending.n = w
}
