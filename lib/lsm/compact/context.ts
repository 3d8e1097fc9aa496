// What compaction of one bucket needs of a table, and the request and result of one job.
// The table handle (lib/handle/table.ts) satisfies CompactionContext as it is; a test builds
// one from the parts it needs.

import type { Committer } from '../../commit/committer.ts'
import type { LandedCommits } from '../../commit/landed.ts'
import type { ManifestIO } from '../../manifest/manifests.ts'
import type { SnapshotManager } from '../../manifest/snapshot-manager.ts'
import type { MergeEngineConfig } from '../../merge/merge-types.ts'
import type { ObjectStore } from '../../store/object-store.ts'
import type { FieldMapping } from '../../table/evolution.ts'
import type { SchemaView } from '../../table/schema.ts'
import type { MergePathRequest } from '../columnar-merge.ts'
import type { SkipReason } from './plan.ts'

/** The parts of a table a compaction reads, writes and commits through. */
export interface CompactionContext {
  readonly uri: string
  readonly store: ObjectStore
  readonly view: SchemaView
  readonly mergeConfig: MergeEngineConfig
  readonly snapshots: Pick<SnapshotManager, 'latest' | 'latestId'>
  readonly manifests: Pick<ManifestIO, 'liveEntries' | 'readIndexManifest' | 'readImmutableRange'>
  /** the direct committer, unless the request names another */
  readonly committer: Committer
  /** which commits landed: a commit that threw may have */
  readonly landed: Pick<LandedCommits, 'find'>
  /** how a data file of another schema maps to the table's (Table.fieldMapping) */
  fieldMapping(schemaId: bigint | number, fileName: string): Promise<FieldMapping | null>
}

export interface CompactBucketRequest {
  partition: Uint8Array
  bucket: number
  /** compact everything into the highest level */
  full?: boolean
  /** cap on input files of this job (default `compaction.max-input-files`) */
  maxInputFiles?: number
  /** the commit's identity with COMPACT and Paimon's batch identifier: unique per compaction; default a fresh one */
  commitUser?: string
  /** where the COMPACT commit goes; default the table's direct committer */
  committer?: Committer
  /** test hook: runs after the output is written, before the commit */
  beforeCommit?: () => Promise<void> | void
  /**
   * Which merge rewrites the files (`chooseMergePath` in columnar-merge.ts): `auto` (the
   * default) merges columnar where it supports the table and the step, else by rows; `row`
   * always by rows (the reference model); `columnar` throws where it is unsupported.
   */
  mergePath?: MergePathRequest
  /**
   * Compress the output's pages on the process's compression thread while the merge goes on
   * (lib/format/compression-thread.ts); the files are the same either way. Default: where a
   * second thread can run beside the merge (`compressionThreadUseful`).
   */
  compressionThread?: boolean
  /** the clock the job's step times are read from (docs/design.md "Freshness budget"); default Date.now */
  clock?: () => number
}

/**
 * Where a compaction's time went, in the steps of docs/design.md "Freshness budget" (ms):
 * read: the bucket's state at the latest snapshot (snapshot, manifests, index) and the
 * plan; merge: the rewrite steps (input files read, merged, encoded, uploads started);
 * write: what was left after the merge (the deletion-vector index, uploads still in
 * flight); commit: the commit's call to its return (its landing seen, through the
 * committer). `oldestLevel0CreatedAt` is the creation time of the oldest level-0 file the
 * job lifted (epoch ms), so the caller can say how long its rows were invisible.
 */
export interface CompactionTimings {
  readMs: number
  mergeMs: number
  writeMs: number
  commitMs: number
  oldestLevel0CreatedAt: number | null
  /** the clock's reading when the commit returned */
  landedAt: number
}

export interface CompactBucketResult {
  /** the COMPACT snapshot, or null when nothing needed doing */
  snapshotId: number | null
  /** the snapshot the compaction read */
  baseSnapshotId: number
  inputFiles: number
  outputFiles: number
  upgradedFiles: number
  rowsIn: number
  rowsOut: number
  /** rows newly marked in deletion vectors */
  rowsDeletedByVector: number
  outputLevel: number | null
  /** the bucket still needs compaction after this job (its input was capped) */
  needsMore: boolean
  /** sorted runs past `num-sorted-run.stop-trigger` before this job */
  backPressure: boolean
  retries: number
  /** rewrite steps merged by the columnar path (the others by rows) */
  columnarSteps?: number
  /** nothing needed doing (snapshotId null): why, from the planner */
  skipped?: SkipReason
  /** where the time went, for a job that committed */
  timings?: CompactionTimings
}
