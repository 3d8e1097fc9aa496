// Compaction jobs coalesce (docs/design.md "Compaction jobs: failures, time and
// coalescing"): a bucket with a queued or running job does not gain a new job for every
// writer commit.
//
// The mechanism is SQS FIFO deduplication, keyed so that a writer's job is dropped only
// when an earlier job is bound to take its files, or to leave a follow-up that will:
// - A writer whose commit landed in snapshot S keys each touched bucket's job by the
//   bucket's oldest level-0 file live in S (`l0:<file>`; its own file when the bucket had
//   none). Every writer that lands while that file is still level 0 computes the same key,
//   so within SQS's 5-minute deduplication window they share the one job the first sent.
// - Why no file is left without a job. Take the job J sent under `l0:<f>`; J was sent after
//   f landed. If J reads a snapshot at or after S, it compacts S's files. If it read an
//   earlier one that held f, its compaction took f (a deletion-vector table's pick forces
//   every level-0 file up; a capped pick enqueues a follow-up), so its commit C removed f,
//   which was live in S: C > S. Once done, the compactor looks at the bucket's level 0 in
//   the latest snapshot (at or after C) and enqueues a follow-up when it holds a file the
//   job did not see (followUpOf): S's file is one. The follow-up is keyed `l0:<g>`, g
//   the oldest such file: sent after g landed, like any job of that form, and the key the
//   writers landing next compute, so they share it. (J cannot have read a snapshot without
//   f: it reads the latest when it starts, after it was sent.) A capped pick's follow-up
//   (`more:<C>`) takes over the same way: it reads a snapshot after C.
// - That argument needs every job that reads f to take it, or to leave work behind that
//   will. Every pick that is not empty takes all of level 0 (picks are newest-first
//   prefixes of the sorted runs and never output to level 0); a pick capped by the input
//   limit (compaction.max.file-num) may not, and leaves the rest to its follow-up (in a
//   deletion-vector table always, `more:<C>`; in others as below). What remains is a job
//   that finds nothing to pick. A deletion-vector table's pick (Paimon's
//   force-up-level-0) is never empty while level 0 holds a file. Other tables' universal
//   pick is empty below the trigger, so there a writer sends a job only for a bucket that
//   needs compaction in S, its own files included (compactionNeeded: the pick a job would
//   make there is not empty), and a follow-up goes out only when the bucket still needs
//   compaction in the latest snapshot, capped or not (a bucket below the trigger needs no job: their
//   reads merge level 0 in). Their key also names the files above level 0
//   (`l0:<f>@<digest>`), which every compaction that lands changes, capped or not. So a job
//   J keyed k that reads R >= S with the key still k saw no compaction land between S and
//   R, only newer level-0 runs added; adding a newer sorted run keeps a pick non-empty (run
//   count and size amplification only grow; a size-ratio pick that the new run breaks
//   falls back to the run-count pick, now past the trigger), so J compacts and changes the
//   key, and the writers that shared k are in what J read or seen by its follow-up check.
//   If the key had changed by R, no later writer computes k again. (Without the digest a
//   capped compaction landing between S and R could leave f and nothing to pick, and a
//   later writer keyed `l0:<f>` would be dropped as J's duplicate.)
// - A crashed compactor leaves its message on the queue: the redelivery compacts and
//   checks again. A job sent more than 5 minutes after the first of its key is not
//   deduplicated: at worst one more job per bucket per 5 minutes.

import { createHash } from 'node:crypto'
import type { Table } from '../table/table.ts'
import { bucketsScope } from '../manifest/bucket-scope.ts'
import { bucketDirOf } from '../manifest/bucket-state.ts'
import { compactionNeeded } from '../lsm/compact-task.ts'
import type { CompactionJob } from './compaction-job.ts'
import { bucketIdentifier } from '../manifest/manifests.ts'
import type { ManifestEntry } from '../types.ts'

export interface BucketRef {
  partition: Uint8Array
  bucket: number
}

/** Files of the buckets live in snapshot `id` (0: none), by bucketIdentifier; `level0Only`: only level 0. */
async function liveFilesByBucket(table: Table, id: number, buckets: BucketRef[], level0Only: boolean): Promise<Map<string, ManifestEntry[]>> {
  const out = new Map<string, ManifestEntry[]>()
  const snapshot = id > 0 ? await table.snapshots.snapshot(id) : null
  if (!snapshot || buckets.length === 0) return out
  for (const e of await table.manifests.liveEntries(snapshot, bucketsScope(table.view, buckets))) {
    if (level0Only && e.file.level !== 0) continue
    const k = bucketIdentifier(e.partition, e.bucket)
    const list = out.get(k)
    if (list) list.push(e)
    else out.set(k, [e])
  }
  return out
}

/** Level-0 files of the buckets live in snapshot `id` (0: none), by bucketIdentifier, oldest first. */
export async function levelZeroFiles(table: Table, id: number, buckets: BucketRef[]): Promise<Map<string, ManifestEntry[]>> {
  const out = await liveFilesByBucket(table, id, buckets, true)
  for (const list of out.values()) list.sort(oldestFirst)
  return out
}

/** Oldest first: lowest sequence numbers, then name (a tie is settled the same way everywhere). */
function oldestFirst(a: ManifestEntry, b: ManifestEntry): number {
  if (a.file.minSequenceNumber !== b.file.minSequenceNumber) return a.file.minSequenceNumber < b.file.minSequenceNumber ? -1 : 1
  return a.file.fileName < b.file.fileName ? -1 : a.file.fileName > b.file.fileName ? 1 : 0
}

/**
 * The deduplication key of a job for a bucket holding these live files in snapshot `id`
 * (see the file comment): `l0:<its oldest level-0 file>`, followed without deletion vectors
 * by `@<a digest of its files above level 0>`; `s:<id>` when level 0 is empty.
 */
export function jobKeyOf(table: Table, files: ManifestEntry[], id: number): string {
  let oldest: ManifestEntry | undefined
  for (const e of files) if (e.file.level === 0 && (!oldest || oldestFirst(e, oldest) < 0)) oldest = e
  if (!oldest) return `s:${id}`
  if (table.view.options.deletionVectors) return `l0:${oldest.file.fileName}`
  const above = files.filter((e) => e.file.level > 0).map((e) => e.file.fileName).sort()
  return `l0:${oldest.file.fileName}@${createHash('sha256').update(above.join('\n')).digest('base64url').slice(0, 16)}`
}

/**
 * The buckets whose files landed in snapshot `id` that get a job, and each one's key: in a
 * table without deletion vectors only those that need compaction in `id` (see the file
 * comment); in a deletion-vector table all of them.
 */
export async function bucketsNeedingJobs(table: Table, id: number, buckets: BucketRef[]): Promise<{ bucket: BucketRef; dedupKey: string }[]> {
  const dv = table.view.options.deletionVectors
  const files = await liveFilesByBucket(table, id, buckets, dv)
  const out: { bucket: BucketRef; dedupKey: string }[] = []
  for (const b of buckets) {
    const live = files.get(bucketIdentifier(b.partition, b.bucket)) ?? []
    if (dv || compactionNeeded(table, live)) out.push({ bucket: b, dedupKey: jobKeyOf(table, live, id) })
  }
  return out
}

/**
 * The jobs a writer enqueues for the buckets its files landed in (snapshot `landedAt` or
 * before): every bucket of a deletion-vector table, keyed to coalesce (writerJobKeys); in
 * other tables the buckets that need compaction.
 */
export async function writerJobs(tableName: string, table: Table, landedAt: number, touched: BucketRef[], now = Date.now()): Promise<CompactionJob[]> {
  return (await bucketsNeedingJobs(table, landedAt, touched)).map(({ bucket: { partition, bucket }, dedupKey }) => {
    const { path } = bucketDirOf(table, partition, bucket)
    return {
      table: tableName,
      partition: path.slice(0, path.length - `bucket-${bucket}`.length).replace(/\/$/, ''),
      partitionBytes: Buffer.from(partition).toString('base64'),
      bucket,
      snapshotId: landedAt,
      enqueuedAt: now,
      dedupKey,
    }
  })
}

/**
 * The follow-up job a bucket gets after a compaction job that read snapshot
 * `baseSnapshotId` and landed `snapshotId` (null: nothing to compact), or null.
 * - Deletion vectors: a capped input (`needsMore`) always gets one (`more:<its snapshot>`);
 *   otherwise one when the bucket now has level-0 files the job did not see, keyed
 *   `l0:<the oldest of them>` (the key the writers landing from now on compute too, so the
 *   follow-up and their jobs are one message).
 * - Without: one when the bucket still needs compaction in the latest snapshot, capped or
 *   not, keyed as a writer there would key it (jobKeyOf), so that the writers landing next
 *   share it. `ownKeys`: the keys of the jobs just done; a follow-up never takes one of
 *   them (SQS would drop it as their duplicate), which the argument in the file comment
 *   says cannot happen, but costs nothing to rule out.
 */
export async function followUpOf(
  table: Table,
  result: { baseSnapshotId: number; snapshotId: number | null; needsMore: boolean },
  b: BucketRef,
  ownKeys: (string | undefined)[] = [],
): Promise<{ snapshotId: number; dedupKey: string } | null> {
  const dv = table.view.options.deletionVectors
  if (dv && result.needsMore && result.snapshotId !== null) return { snapshotId: result.snapshotId, dedupKey: `more:${result.snapshotId}` }
  const baseSnapshotId = result.baseSnapshotId
  const knownLatestId = result.snapshotId ?? 0
  const latest = await table.snapshots.latestFrom(Math.max(baseSnapshotId, knownLatestId))
  const k = bucketIdentifier(b.partition, b.bucket)
  if (!dv) {
    if (!latest) return null
    const files = (await liveFilesByBucket(table, latest.id, [b], false)).get(k) ?? []
    if (!compactionNeeded(table, files)) return null
    const key = jobKeyOf(table, files, latest.id)
    return { snapshotId: latest.id, dedupKey: ownKeys.includes(key) ? `s:${latest.id}` : key }
  }
  if (!latest || latest.id === baseSnapshotId) return null
  const [before, now] = await Promise.all([levelZeroFiles(table, baseSnapshotId, [b]), levelZeroFiles(table, latest.id, [b])])
  const seen = new Set((before.get(k) ?? []).map((e) => e.file.fileName))
  const unseen = (now.get(k) ?? []).find((e) => !seen.has(e.file.fileName))
  return unseen ? { snapshotId: latest.id, dedupKey: `l0:${unseen.file.fileName}` } : null
}
