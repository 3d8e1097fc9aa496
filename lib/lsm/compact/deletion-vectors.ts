// Deletion vectors of a compaction (Paimon's LookupMergeTreeCompactRewriter): every key that
// rises out of level 0 is looked up in the older levels the job does not rewrite; the row it
// supersedes gets a bit in its file's deletion vector instead of a rewrite of that file.
// Then the bucket's vectors after the job are written as one new index file set.

import { type DeletionVector, DELETION_VECTORS_INDEX, deletionVectorOf, writeDeletionVectorFiles } from '../../format/deletion-vector.ts'
import type { IndexReplacement } from '../../commit/committer.ts'
import type { MergeFunction } from '../../merge/merge-types.ts'
import { type IndexManifestEntry, type KeyValue, FileKind } from '../../types.ts'
import type { LevelLookup } from './level-lookup.ts'
import type { CompactionOutput } from './output.ts'

/** What the row merge decides for a key against the older levels. */
export interface LookupOutcome {
  /** what the step writes for the key (null: nothing) */
  out: KeyValue | null
  /** the key's value after the job, for the changelog; undefined: computed from the levels */
  after: KeyValue | null | undefined
  /** the key's records in the older levels this step does not rewrite */
  hits: KeyValue[]
}

/** A rising key of a step: its records as the step read them, and their merge (null: none). */
export interface RisingKey {
  records: readonly KeyValue[]
  merged: KeyValue | null
}

/**
 * The step's merge function, remembering each key's records: a lookup merges the older row
 * with the records themselves, in one pass, as Paimon's LookupMergeFunction does, not with
 * their merge (an aggregate whose retraction cannot stand alone, such as collect or
 * last_non_null_value, would otherwise lose a retraction of the older row). A key whose
 * records merge to nothing is still handed on, as its last record, so it is looked up too.
 */
export class RisingKeys {
  readonly #pending = new Map<KeyValue, RisingKey>()
  #records: KeyValue[] = []

  constructor(private readonly inner: MergeFunction) {}

  readonly mergeFunction: MergeFunction = {
    reset: () => {
      this.inner.reset()
      this.#records = []
    },
    add: (kv) => {
      this.#records.push(kv)
      this.inner.add(kv)
    },
    result: () => {
      const merged = this.inner.result()
      const out = merged ?? { ...this.#records[this.#records.length - 1] }
      this.#pending.set(out, { records: this.#records, merged })
      return out
    },
  }

  /** The records and merge of a key the merge function returned (once). */
  take(kv: KeyValue): RisingKey {
    const k = this.#pending.get(kv)!
    this.#pending.delete(kv)
    return k
  }
}

/**
 * A rising key against the older levels (newest first). With deletion vectors (`supersede`),
 * the first older record found is merged with the key's records: the older row is marked
 * superseded unless the merge keeps it whole. Without, the levels stay as they are and every
 * record found is only reported (the changelog looks).
 */
export async function lookUpOlder(
  rising: RisingKey,
  lookups: LevelLookup[],
  supersede: { mf: MergeFunction; seqCmp: (a: KeyValue, b: KeyValue) => number; keepsOneRecord: boolean; output: CompactionOutput } | null,
): Promise<LookupOutcome> {
  const hits: KeyValue[] = []
  const key = rising.records[0].key
  const kv = rising.merged
  if (!supersede) {
    for (const l of lookups) {
      const hit = await l.find(key)
      if (hit) hits.push(hit.kv)
    }
    return { out: kv, after: undefined, hits }
  }
  let old: { kv: KeyValue; file: string; pos: number } | null = null
  for (const l of lookups) {
    old = await l.find(key)
    if (old) break
  }
  if (!old) return { out: kv, after: kv, hits }
  hits.push(old.kv)
  const { mf } = supersede
  mf.reset()
  for (const r of [old.kv, ...rising.records].sort(supersede.seqCmp)) mf.add(r)
  const merged = mf.result()
  if (merged && supersede.keepsOneRecord && merged.seq === old.kv.seq && merged.kind === old.kv.kind) {
    // the merge kept the older record whole (deduplicate's higher number, first-row): it
    // stays, nothing is written. An engine that folds values (aggregation, partial-update)
    // always writes its merge, even when the rising record's sequence number is the lower
    // one (docs/design.md "Sequence numbers")
    return { out: null, after: old.kv, hits }
  }
  supersede.output.mark(old.file, old.pos)
  // deletion vectors mark the older row: the step's output is the key's value
  return { out: merged, after: merged, hits }
}

/**
 * The bucket's deletion vectors after the job: rewritten files drop theirs (an upgraded file
 * keeps its own), marked files gain bits. Null when nothing changed.
 */
export function nextDeletionVectors(current: Map<string, DeletionVector>, output: Pick<CompactionOutput, 'marks' | 'adds' | 'deletes'>, bitmap64: boolean): Map<string, DeletionVector> | null {
  const deletedNames = new Set(output.deletes.map((d) => d.file.fileName))
  const upgradedNames = new Set(output.adds.filter((a) => deletedNames.has(a.file.fileName)).map((a) => a.file.fileName))
  const next = new Map<string, DeletionVector>()
  for (const [name, dv] of current) if (!deletedNames.has(name) || upgradedNames.has(name)) next.set(name, dv)
  for (const [name, positions] of output.marks) {
    const add = deletionVectorOf(positions.sort((a, b) => a - b), bitmap64)
    const cur = next.get(name)
    next.set(name, cur ? cur.merge(add) : add)
  }
  const changed = output.marks.size > 0 || [...current.keys()].some((n) => !next.has(n))
  return changed ? new Map([...next].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : null
}

/** How the bucket's index files are written: `deletion-vectors.bitmap64`, `deletion-vector.index-file.target-size`, and where a new one goes. */
export interface IndexFileSettings {
  bitmap64: boolean
  targetSize: number
  /** the key of a new index file of the bucket (`indexFileKey`) */
  keyOf: (fileName: string) => string
}

/** Writes the vectors (sorted by file name) as the bucket's new index files: one per bucket per change, split at the target size. */
export async function writeDeletionVectorIndex(vectors: Map<string, DeletionVector>, output: CompactionOutput, settings: IndexFileSettings): Promise<IndexReplacement> {
  const { partition, bucket } = output.where
  const entries: IndexManifestEntry[] = []
  for (const { bytes, metas } of writeDeletionVectorFiles(vectors, settings.bitmap64, settings.targetSize)) {
    const fileName = output.namer.next('index-')
    // independent of the last data files' uploads: it goes up beside them
    await output.put(settings.keyOf(fileName), bytes)
    entries.push({
      kind: FileKind.ADD,
      partition,
      bucket,
      indexType: DELETION_VECTORS_INDEX,
      fileName,
      fileSize: BigInt(bytes.length),
      rowCount: BigInt(metas.length),
      dvRanges: metas,
      externalPath: null,
    })
  }
  return { partition, bucket, entries, indexType: DELETION_VECTORS_INDEX }
}
