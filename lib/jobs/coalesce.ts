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
//   job did not see (needsFollowUp): S's file is one. The follow-up is keyed `l0:<g>`, g
//   the oldest such file: sent after g landed, like any job of that form, and the key the
//   writers landing next compute, so they share it. (J cannot have read a snapshot without
//   f: it reads the latest when it starts, after it was sent.) A capped pick's follow-up
//   (`more:<C>`) takes over the same way: it reads a snapshot after C.
// - That argument needs every compaction to take all the level-0 files it sees: true for
//   deletion-vector tables (Paimon's force-up-level-0 pick), not for others, whose
//   universal pick may leave level-0 runs below the trigger, so a job keyed by a file it
//   left would swallow the next writer's. Other tables key a job by the snapshot that made
//   it (`s:<S>`, never shared), and a writer sends one only for a bucket that needs
//   compaction in S, its own files included: the pick a job would make there is not empty
//   (compactionNeeded: sorted runs past the trigger, size amplification or size ratio). A
//   bucket below the trigger gets no job, and cannot need one until a writer's files make
//   it need one, and that writer sends it. Their reads merge level 0 in, so no row waits
//   for a job to be visible.
// - A crashed compactor leaves its message on the queue: the redelivery compacts and
//   checks again. A job sent more than 5 minutes after the first of its key is not
//   deduplicated: at worst one more job per bucket per 5 minutes.

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
  // oldest first: lowest sequence numbers, then name (a tie is settled the same way everywhere)
  for (const list of out.values()) {
    list.sort((a, b) => (a.file.minSequenceNumber !== b.file.minSequenceNumber ? (a.file.minSequenceNumber < b.file.minSequenceNumber ? -1 : 1) : a.file.fileName < b.file.fileName ? -1 : a.file.fileName > b.file.fileName ? 1 : 0))
  }
  return out
}

/** The deduplication key of each bucket's job, for files that landed in snapshot `landedAt` or before. */
export async function writerJobKeys(table: Table, landedAt: number, buckets: BucketRef[]): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  const l0 = table.view.options.deletionVectors ? await levelZeroFiles(table, landedAt, buckets) : new Map<string, ManifestEntry[]>()
  for (const b of buckets) {
    const k = bucketIdentifier(b.partition, b.bucket)
    const oldest = l0.get(k)?.[0]
    out.set(k, oldest ? `l0:${oldest.file.fileName}` : `s:${landedAt}`)
  }
  return out
}

/**
 * The buckets of a table without deletion vectors that need compaction in snapshot `id`
 * (see the file comment); a deletion-vector table's are all of them (each gets a job, keyed
 * to coalesce).
 */
export async function bucketsNeedingJobs(table: Table, id: number, buckets: BucketRef[]): Promise<BucketRef[]> {
  if (table.view.options.deletionVectors) return buckets
  const files = await liveFilesByBucket(table, id, buckets, false)
  return buckets.filter((b) => compactionNeeded(table, files.get(bucketIdentifier(b.partition, b.bucket)) ?? []))
}

/**
 * The jobs a writer enqueues for the buckets its files landed in (snapshot `landedAt` or
 * before): every bucket of a deletion-vector table, keyed to coalesce (writerJobKeys); in
 * other tables the buckets that need compaction.
 */
export async function writerJobs(tableName: string, table: Table, landedAt: number, touched: BucketRef[], now = Date.now()): Promise<CompactionJob[]> {
  const buckets = await bucketsNeedingJobs(table, landedAt, touched)
  const keys = await writerJobKeys(table, landedAt, buckets)
  return buckets.map(({ partition, bucket }) => {
    const { path } = bucketDirOf(table, partition, bucket)
    return {
      table: tableName,
      partition: path.slice(0, path.length - `bucket-${bucket}`.length).replace(/\/$/, ''),
      partitionBytes: Buffer.from(partition).toString('base64'),
      bucket,
      snapshotId: landedAt,
      enqueuedAt: now,
      dedupKey: keys.get(bucketIdentifier(partition, bucket)),
    }
  })
}

/**
 * After a compaction job of a bucket that read snapshot `baseSnapshotId`: when the bucket
 * now has level-0 files the job did not see, the follow-up job's key, `l0:<the oldest of
 * them>` (the key the writers landing from now on compute too, so the follow-up and their
 * jobs are one message), and the latest snapshot id; else null. Without deletion vectors:
 * a follow-up (`s:<latest>`) when the bucket still needs compaction in the latest snapshot.
 */
export async function needsFollowUp(table: Table, baseSnapshotId: number, knownLatestId: number, b: BucketRef): Promise<{ snapshotId: number; dedupKey: string } | null> {
  const latest = await table.snapshots.latestFrom(Math.max(baseSnapshotId, knownLatestId))
  const k = bucketIdentifier(b.partition, b.bucket)
  if (!table.view.options.deletionVectors) {
    // no writer's job was coalesced, but a universal pick can leave its bucket needing the
    // next one (sorted runs at the trigger, then size amplification or size ratio)
    if (!latest) return null
    const files = await liveFilesByBucket(table, latest.id, [b], false)
    return compactionNeeded(table, files.get(k) ?? []) ? { snapshotId: latest.id, dedupKey: `s:${latest.id}` } : null
  }
  if (!latest || latest.id === baseSnapshotId) return null
  const [before, now] = await Promise.all([levelZeroFiles(table, baseSnapshotId, [b]), levelZeroFiles(table, latest.id, [b])])
  const seen = new Set((before.get(k) ?? []).map((e) => e.file.fileName))
  const unseen = (now.get(k) ?? []).find((e) => !seen.has(e.file.fileName))
  return unseen ? { snapshotId: latest.id, dedupKey: `l0:${unseen.file.fileName}` } : null
}
