// Step four of a bucket's compaction: the COMPACT commit, with the conflict checks of
// docs/design.md "How a commit travels" as data; and what a commit that threw leaves behind.

import { BATCH_COMMIT_IDENTIFIER, type CommitResult, type Committer, type ExpectedIndex, type IndexReplacement } from '../../commit/committer.ts'
import { type LandedCommits, commitKeyOf } from '../../commit/landed.ts'
import type { SnapshotManager } from '../../manifest/snapshot-manager.ts'
import type { ObjectStore } from '../../store/object-store.ts'
import { DELETION_VECTORS_INDEX } from '../../format/deletion-vector.ts'
import { partitionStatsOf } from '../../table/file-meta.ts'
import type { SchemaView } from '../../table/schema.ts'
import { CommitConflictError } from '../../errors.ts'
import { type IndexManifestEntry } from '../../types.ts'
import type { CompactionOutput } from './output.ts'

/** The commit's identity and what it was built on. */
export interface CompactCommit {
  commitUser: string
  /** the snapshot the job read */
  baseSnapshotId: number
  /** deletion-vector mode: the bucket's index entries the new index was built on */
  dvIndex: IndexManifestEntry[] | undefined
  indexReplacement: IndexReplacement | null
}

/**
 * Commits the job's output. A file that carries a vector in the new index must still be
 * live (unless the job adds it), and in deletion-vector mode the bucket's index must be the
 * one the job built on (lib/commit/conflicts.ts).
 */
export function commitCompaction(committer: Committer, view: SchemaView, output: CompactionOutput, c: CompactCommit): Promise<CommitResult> {
  const { partition, bucket } = output.where
  const added = new Set(output.adds.map((a) => a.file.fileName))
  const requireLive = new Set<string>()
  for (const e of c.indexReplacement?.entries ?? []) for (const d of e.dvRanges ?? []) if (!added.has(d.dataFileName)) requireLive.add(d.dataFileName)
  const expectIndex: ExpectedIndex[] = view.options.deletionVectors
    ? [{ partition, bucket, indexType: DELETION_VECTORS_INDEX, fileNames: (c.dvIndex ?? []).map((e) => e.fileName) }]
    : []
  return committer.commit({
    kind: 'COMPACT',
    adds: output.adds,
    deletes: output.deletes,
    indexReplacements: c.indexReplacement ? [c.indexReplacement] : undefined,
    ...(output.changelog.length ? { changelog: output.changelog } : {}),
    commitUser: c.commitUser,
    commitIdentifier: BATCH_COMMIT_IDENTIFIER,
    baseSnapshotId: c.baseSnapshotId,
    requireLive: [...requireLive],
    expectIndex,
    partitionStats: (entries) => partitionStatsOf(view, entries),
    schemaId: view.schema.id,
    maxRetries: view.options.commitMaxRetries,
  })
}

/** What settling a failed job reads and deletes through. */
export interface FailedJobPorts {
  readonly store: Pick<ObjectStore, 'delete'>
  readonly snapshots: Pick<SnapshotManager, 'latestId'>
  readonly landed: Pick<LandedCommits, 'find'>
}

/**
 * After a job threw: the snapshot its commit landed, or null. A commit that threw may still
 * have landed: its snapshot write was applied and only the reply was lost (or a store-level
 * retry then saw its own snapshot and reported a lost race, which ends in a conflict on the
 * next attempt). Its output is then live, so it must not be deleted; found, the compaction
 * succeeded. The output is deleted only when nothing was handed to a committer, or the
 * committer says the request can never land (a queued commit that was not confirmed may
 * still land later); otherwise it is left to orphan cleanup rather than risk deleting live data.
 */
export async function settleFailedJob(ports: FailedJobPorts, output: CompactionOutput, c: CompactCommit, commitStarted: boolean, error: unknown): Promise<number | null> {
  // an upload still in flight would land after the cleanup below deleted its key
  await output.uploads.settled()
  const key = commitKeyOf({ kind: 'COMPACT', commitUser: c.commitUser, commitIdentifier: BATCH_COMMIT_IDENTIFIER })
  const landed = commitStarted ? await ports.landed.find(key, c.baseSnapshotId, await ports.snapshots.latestId()).catch(() => undefined) : null
  const never = !commitStarted || (error instanceof CommitConflictError && error.landsNever)
  if (landed === null && never) await Promise.all(output.written.map((k) => ports.store.delete(k).catch(() => undefined)))
  return typeof landed === 'number' ? landed : null
}
