// A compaction's conflict checks (docs/design.md "How a commit travels"), as one function over data so
// the direct committer and the folding committer decide alike. A compaction conflicts when
// - a file it deletes is no longer live (another compaction took it);
// - a file that carries a deletion vector in its new index (`requireLive`) is gone;
// - its bucket's index files differ from those it was computed from (`expectIndex`);
// - after applying it, a level >= 1 of one of its buckets would hold overlapping files.
// Appends only add level-0 files under fresh names; one conflicts only in dynamic bucket mode,
// when a partition it assigned new keys in has a HASH index other than the one it read
// (checkPartitionIndex; docs/design.md "Dynamic buckets").

import { bucketIdentifier, fileIdentifier, hex } from '../manifest/identifiers.ts'
import { checkLevelsDisjoint } from '../manifest/level-check.ts'
import type { SchemaView } from '../table/schema.ts'
import { CommitConflictError } from '../errors.ts'
import type { IndexManifestEntry, ManifestEntry } from '../types.ts'
import type { ExpectedIndex, ExpectedPartitionIndex, IndexReplacement } from './committer.ts'

/**
 * The live files and index entries of some buckets, as a commit sees them. Live files are
 * kept per bucket, so a check touches only its own buckets' files: a fold checks hundreds
 * of compactions against a state of hundreds of buckets, which a scan of every live file
 * per check would make quadratic.
 */
export class CommitState {
  /** live files by bucketIdentifier, then by fileIdentifier */
  private readonly byBucket = new Map<string, Map<string, ManifestEntry>>()
  /** index entries by `bucketIdentifier|indexType` */
  readonly index: Map<string, IndexManifestEntry[]>

  constructor(live: Iterable<ManifestEntry>, index: IndexManifestEntry[]) {
    for (const e of live) this.add(e)
    this.index = new Map()
    for (const e of index) {
      const k = indexKeyOf(e.partition, e.bucket, e.indexType)
      const list = this.index.get(k)
      if (list) list.push(e)
      else this.index.set(k, [e])
    }
  }

  /** The live files of one bucket (empty when it has none). */
  liveIn(partition: Uint8Array, bucket: number): Map<string, ManifestEntry> {
    return this.byBucket.get(bucketIdentifier(partition, bucket)) ?? new Map()
  }

  isLive(e: ManifestEntry): boolean {
    return this.liveIn(e.partition, e.bucket).has(fileIdentifier(e))
  }

  /** Applies a change that passed its checks, so the next one is checked against it. */
  apply(c: Pick<ChangeToCheck, 'adds' | 'deletes' | 'indexReplacements'>): void {
    for (const d of c.deletes) this.byBucket.get(bucketIdentifier(d.partition, d.bucket))?.delete(fileIdentifier(d))
    for (const a of c.adds) this.add(a)
    for (const r of c.indexReplacements ?? []) this.index.set(indexKeyOf(r.partition, r.bucket, r.indexType), r.entries)
  }

  private add(e: ManifestEntry): void {
    const b = bucketIdentifier(e.partition, e.bucket)
    let files = this.byBucket.get(b)
    if (!files) this.byBucket.set(b, (files = new Map()))
    files.set(fileIdentifier(e), e)
  }
}

function indexKeyOf(partition: Uint8Array, bucket: number, indexType: string): string {
  return `${bucketIdentifier(partition, bucket)}|${indexType}`
}

export interface ChangeToCheck {
  adds: ManifestEntry[]
  deletes: ManifestEntry[]
  indexReplacements?: IndexReplacement[]
  requireLive?: string[]
  expectIndex?: ExpectedIndex[]
  expectPartitionIndex?: ExpectedPartitionIndex[]
  /** names the change in error messages */
  label: string
}

export function bucketsOf(c: Pick<ChangeToCheck, 'adds' | 'deletes' | 'indexReplacements' | 'expectIndex'>): Map<string, { partition: Uint8Array; bucket: number }> {
  const out = new Map<string, { partition: Uint8Array; bucket: number }>()
  for (const e of [...c.adds, ...c.deletes, ...(c.indexReplacements ?? []), ...(c.expectIndex ?? [])]) {
    out.set(bucketIdentifier(e.partition, e.bucket), { partition: e.partition, bucket: e.bucket })
  }
  return out
}

/** Throws CommitConflictError naming what conflicts; `state` holds at least the change's buckets. */
export function checkCompaction(view: SchemaView, c: ChangeToCheck, state: CommitState): void {
  const at = c.label
  for (const d of c.deletes) {
    if (!state.isLive(d)) {
      throw new CommitConflictError(`commit conflict (${at}): file ${d.file.fileName} (bucket ${d.bucket}, level ${d.file.level}) is no longer live; the compaction must be redone from fresh state`)
    }
  }
  const buckets = bucketsOf(c)
  if (c.requireLive?.length) {
    const liveNames = new Set<string>()
    for (const { partition, bucket } of buckets.values()) for (const e of state.liveIn(partition, bucket).values()) liveNames.add(e.file.fileName)
    for (const n of c.requireLive) {
      if (!liveNames.has(n)) throw new CommitConflictError(`commit conflict (${at}): ${n} got deletion-vector marks but is no longer live`)
    }
  }
  for (const x of c.expectIndex ?? []) {
    const now = (state.index.get(indexKeyOf(x.partition, x.bucket, x.indexType)) ?? []).map((e) => e.fileName).sort().join(',')
    const want = [...x.fileNames].sort().join(',')
    if (now !== want) throw new CommitConflictError(`commit conflict (${at}): the ${x.indexType} index files of bucket ${x.bucket} are [${now}], the compaction was built on [${want}]`)
  }
  const gone = new Set(c.deletes.map(fileIdentifier))
  for (const [id, { partition, bucket }] of buckets) {
    const after = [...state.liveIn(partition, bucket).entries()].filter(([f]) => !gone.has(f)).map(([, e]) => e)
    for (const a of c.adds) if (bucketIdentifier(a.partition, a.bucket) === id) after.push(a)
    try {
      checkLevelsDisjoint(view, after)
    } catch (e) {
      throw new CommitConflictError(`commit conflict (${at}): ${(e as Error).message}`)
    }
  }
}

/**
 * Starts the message of a conflict found by checkPartitionIndex: a writer that meets it
 * assigns its keys again from fresh state (lib/write/dynamic-bucket.ts). It travels as text
 * through a conflict receipt, so the writer tells it from other APPEND conflicts (an
 * abandoned attempt's, whose records must not be written again) by this prefix.
 */
export const HASH_INDEX_CONFLICT = 'dynamic bucket conflict'

/**
 * Throws CommitConflictError when a partition the change assigned new keys in no longer has
 * exactly the index files it read (another commit gave keys to the partition's buckets since):
 * its assignment may then put a key in a second bucket. `state` must hold every index entry
 * of the expected partitions and types, not only those of the change's buckets.
 */
export function checkPartitionIndex(c: Pick<ChangeToCheck, 'expectPartitionIndex' | 'label'>, state: CommitState): void {
  for (const x of c.expectPartitionIndex ?? []) {
    const p = hex(x.partition)
    const now: string[] = []
    for (const [k, entries] of state.index) {
      if (!k.startsWith(`${p}|`)) continue
      for (const e of entries) if (e.indexType === x.indexType) now.push(`${e.bucket}:${e.fileName}`)
    }
    const want = x.files.map((f) => `${f.bucket}:${f.fileName}`)
    now.sort()
    want.sort()
    if (now.join(',') !== want.join(',')) {
      throw new CommitConflictError(`${HASH_INDEX_CONFLICT} (${c.label}): the ${x.indexType} index of partition ${p || '(none)'} is [${now.join(', ')}], the keys were assigned against [${want.join(', ')}]; another commit assigned keys in the partition since, so the batch assigns its keys again from fresh state`)
    }
  }
}
