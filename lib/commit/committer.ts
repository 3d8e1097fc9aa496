// The commit port. Writers and compactors describe a commit as data (a CommitRequest) and
// hand it to a Committer; two implementations meet here:
// - FileStoreCommit (commit.ts): creates `snapshot-N` itself, conditionally, retrying lost
//   races (the CLI, library users and tests without a queue);
// - QueuedCommitter (queued-committer.ts): sends the request as a commit message to the
//   table's commit queue and waits for the committer function, which folds every message
//   waiting into one snapshot (batching-committer.ts), to write its receipt.
// Both run the same conflict checks (conflicts.ts) and the same idempotency rule: one
// (commitUser, commitIdentifier, kind) lands once after `baseSnapshotId`.

import { randomUUID } from 'node:crypto'
import type { CommitKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta, SimpleStats } from '../types.ts'

/** Paimon's batch commit identifier (BatchWriteBuilder.COMMIT_IDENTIFIER = Long.MAX_VALUE). */
export const BATCH_COMMIT_IDENTIFIER = 9223372036854775807n

export interface IndexReplacement {
  partition: Uint8Array
  bucket: number
  /** the complete new set of index files of this (partition, bucket) and index type */
  entries: IndexManifestEntry[]
  indexType: string
}

/** The index files of a bucket a compaction's replacement was computed from. */
export interface ExpectedIndex {
  partition: Uint8Array
  bucket: number
  indexType: string
  /** file names, any order; empty when the bucket had none */
  fileNames: string[]
}

/**
 * The index files of one partition and index type a writer assigned keys against (dynamic
 * bucket mode's HASH index: docs/design.md "Dynamic buckets"): the commit lands only while
 * the partition's entries of that type are exactly these, no bucket's file replaced or added.
 */
export interface ExpectedPartitionIndex {
  partition: Uint8Array
  indexType: string
  /** every entry of the partition and type at the writer's base, any order; empty when it had none */
  files: { bucket: number; fileName: string }[]
}

/**
 * Manifests a writer wrote ahead of its commit so that it need not hold every file's entry
 * until then (lib/write/table-write.ts): ADD entries of level-0 files only. No snapshot
 * references them until the one whose delta lists them lands; one that never lands leaves
 * them to the orphan pass, like its data files (docs/design.md "Manifests written ahead").
 */
export interface WrittenAhead {
  /** data manifests, listed in the delta before the manifests of the request's `adds` */
  manifests: ManifestFileMeta[]
  /** rows of the files they add (the snapshot's deltaRecordCount counts them) */
  rowCount: number
  /** changelog manifests, listed before those of the request's `changelog` */
  changelogManifests: ManifestFileMeta[]
  changelogRowCount: number
}

export interface CommitRequest {
  kind: CommitKind
  /** ADD entries */
  adds: ManifestEntry[]
  /** DELETE entries; each must still be live in the snapshot the commit lands on */
  deletes: ManifestEntry[]
  indexReplacements?: IndexReplacement[]
  /** APPEND: more ADD entries, in manifests the writer wrote already; a committer lists them as they are and never deletes them */
  writtenAhead?: WrittenAhead
  /**
   * Changelog files (ADD entries, `changelog-producer` input or lookup): listed in the
   * snapshot's changelog manifests, not among its data files (docs/format.md "Changelog files")
   */
  changelog?: ManifestEntry[]
  commitUser: string
  commitIdentifier: bigint
  /**
   * The latest snapshot when the work began (a compaction: the snapshot it read). The
   * commit cannot have landed at or before it, so an earlier landing of the same identity
   * is searched for only after it.
   */
  baseSnapshotId: number
  /**
   * Search for an earlier landing of this identity after `baseSnapshotId` before landing
   * (a redelivered writer batch). The queued path always searches; the direct one only
   * when asked, since a fresh identity cannot have landed.
   */
  dedup?: boolean
  /**
   * Identities (commitKeyOf) of earlier attempts whose records this APPEND carries again
   * (a redelivered writer batch): it never lands beside one of them (docs/design.md
   * "Abandoned attempts"). Only the batching committer acts on it.
   */
  supersedes?: string[]
  /** COMPACT: data files (of the request's buckets) that must still be live, e.g. files given deletion-vector marks */
  requireLive?: string[]
  /** COMPACT: the index files each replacement was computed from; a different current set is a conflict */
  expectIndex?: ExpectedIndex[]
  /** APPEND in dynamic bucket mode: the HASH index of each partition it assigned new keys in, as it read it; any other current set is a conflict */
  expectPartitionIndex?: ExpectedPartitionIndex[]
  schemaId: number
  /** partition stats of a manifest's entries (the direct path; the folding committer computes its own) */
  partitionStats: (entries: ManifestEntry[]) => SimpleStats
  maxRetries: number
  /**
   * test hook: called after the files are written and before the snapshot is created (the
   * direct path, with its id) or the message is sent (the queued path, with 0)
   */
  beforeSnapshotCreate?: (id: number) => Promise<void> | void
}

export interface CommitResult {
  snapshotId: number
  /** attempts that lost the race for `snapshot-N` */
  retries: number
  /** true when an earlier attempt of the same commit had already landed */
  deduplicated: boolean
}

export interface Committer {
  /**
   * Lands the request as (part of) a snapshot and resolves once it is committed, or throws
   * CommitConflictError (it can never land as it is: redo the work from fresh state) or
   * CommitFailedError / a store error (nothing landed that the caller can count on; a retry
   * of the same identity is recognised if it did).
   */
  commit(req: CommitRequest): Promise<CommitResult>
}

/** A commit user for one writer or compaction: a fresh UUID, after `commit.user-prefix` when the table sets one. */
export function commitUserFor(prefix: string | null | undefined): string {
  return prefix ? `${prefix}_${randomUUID()}` : randomUUID()
}
