// Compaction jobs coalesce (docs/design.md "Compaction jobs: failures, time and
// coalescing"): a bucket with a queued or running job does not gain a new job for every
// writer commit.
//
// The mechanism is SQS FIFO deduplication, keyed so that a writer's job is dropped only
// when an earlier job is bound to take its files, or to leave a follow-up that will:
// - A writer whose commit landed in snapshot S keys each touched bucket's job by the
//   bucket's files live in S (jobKeyOf): its level-0 file f that landed first and a digest
//   of its files above level 0, `l0:<f>@<digest>`. Every compaction that lands changes the key: it takes
//   f or writes new files above level 0 (a compaction never outputs to level 0). Between
//   two landed compactions the key stays put while writers add level-0 files after f, so
//   every writer landing meanwhile computes the same key, and within SQS's 5-minute
//   deduplication window they share the one job the first sent.
// - Why no file is left without a job. Take a job J sent under key k (after S, where k was
//   the bucket's key). J reads the latest snapshot R when it starts. If the key was still
//   k at R, J reads every file of the writers that shared k and landed by R, and the
//   others (landing after R, while k held) are in the latest snapshot after J's commit,
//   which J's follow-up check looks at (followUpOf). If the key had changed by R, a
//   compaction landed after S; no later writer computes k again, and the writers that
//   shared k landed before that compaction's follow-up check, which sees them. What the
//   argument needs from the follow-up check: it sends a job whenever the bucket has work
//   for one, keyed as a writer landing there keys its job (the key the next writers
//   compute, so they share it), and it never shares a key with a job that is done.
// - When a bucket has work for a job. A deletion-vector table's readers skip level 0 (so do
//   a first-row table's, compacted with lookup like it: levelZeroWaits), so every level-0
//   file needs a job: its writers send one for every touched bucket, and the
//   follow-up goes out when level 0 holds a file the job did not see, or the job's input
//   was capped (compaction.max-input-files, which may leave level-0 files). Its pick (Paimon's
//   force-up-level-0) is never empty while level 0 holds a file. Other tables' reads merge
//   level 0 in, and their universal pick is empty below the trigger: their writers send a
//   job only for a bucket that needs compaction in S, its own files included
//   (compactionNeeded: the pick a job would make there is not empty), and the follow-up
//   goes out when the bucket still needs compaction in the latest snapshot, capped or not.
//   A job J keyed k, sent when the bucket needed compaction, that reads R with the key
//   still k finds something to pick: only newer level-0 runs were added since, and a newer
//   sorted run keeps a pick non-empty (run count and size amplification only grow; a
//   size-ratio pick that the new run breaks falls back to the run-count pick, now past the
//   trigger). So a job that does nothing never leaves its key behind for a writer to share.
//   (Keyed by f alone, a capped compaction could land between S and R, leave f, and leave J
//   nothing to pick; a later writer keyed by f would then be dropped as J's duplicate. The
//   property test in test/job-coalescing.test.ts finds this with an input cap of 2.)
// - A compactor that dies after its commit landed leaves its message on the queue without
//   the follow-up check, and the writers landing after its commit have sent a job under
//   the new key, queued behind the message. The redelivery is then overtaken (overtakenAt:
//   every job of it keyed `l0:`, none with the bucket's key now): it compacts nothing and
//   makes the follow-up check the dead invocation owed, as a job that saw no file, so
//   its follow-up and the queued job share the current key. Compacting instead would land
//   another compaction, change the key again and leave three jobs for the bucket. A
//   redelivery whose compaction had not landed finds its key unchanged and compacts.
// - A job sent more than 5 minutes after the first of its key is not deduplicated: at
//   worst one more job per bucket per 5 minutes.

import { createHash } from 'node:crypto'
import type { Table } from '../handle/table.ts'
import { bucketsScope } from '../manifest/bucket-scope.ts'
import { bucketDirOf } from '../handle/bucket-state.ts'
import { compactionNeeded } from '../lsm/compact-task.ts'
import { compactsWithLookup } from '../merge/merge-function.ts'
import type { CompactionJob } from './compaction-job.ts'
import { bucketIdentifier } from '../manifest/identifiers.ts'
import type { ManifestEntry } from '../types.ts'

/**
 * Every level-0 file waits for a job to be read: deletion-vector tables and first-row
 * (whose compactions force level 0 up and look keys up, like deletion-vector ones; see
 * compactsWithLookup). Their writers send a job for every bucket they touch. A table with
 * `changelog-producer` lookup is read with its level 0, but its changelog waits for the job
 * that takes level 0 up, so its writers do the same.
 */
function levelZeroWaits(table: Table): boolean {
  return compactsWithLookup(table.mergeConfig.engine, table.view.options.deletionVectors) || table.view.options.changelogProducer === 'lookup'
}

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

/**
 * The deduplication key of a job for a bucket holding these live files in snapshot `id`
 * (see the file comment): `l0:<its level-0 file that landed first>@<a digest of its files
 * above level 0>`; `s:<id>` when level 0 is empty. `files` are in landing order, as a
 * snapshot's live entries come (manifests in commit order; a file deleted and added again
 * moves to the end, and only files above level 0 are). Landing order, not sequence numbers:
 * a batch that began before another and landed after it carries the lower numbers, and
 * would change the key without any compaction landing (one more job for the bucket).
 */
export function jobKeyOf(files: ManifestEntry[], id: number): string {
  const first = files.find((e) => e.file.level === 0)
  if (!first) return `s:${id}`
  const above = files.filter((e) => e.file.level > 0).map((e) => e.file.fileName).sort()
  return `l0:${first.file.fileName}@${createHash('sha256').update(above.join('\n')).digest('base64url').slice(0, 16)}`
}

/**
 * The buckets whose files landed in snapshot `id` that get a job, and each one's key: all of
 * them where level 0 waits for a job (deletion vectors, first-row: levelZeroWaits), else only
 * those that need compaction in `id` (see the file comment).
 */
export async function bucketsNeedingJobs(table: Table, id: number, buckets: BucketRef[]): Promise<{ bucket: BucketRef; dedupKey: string }[]> {
  const waits = levelZeroWaits(table)
  const files = await liveFilesByBucket(table, id, buckets, false)
  const out: { bucket: BucketRef; dedupKey: string }[] = []
  for (const b of buckets) {
    const live = files.get(bucketIdentifier(b.partition, b.bucket)) ?? []
    if (waits || compactionNeeded(table, live)) out.push({ bucket: b, dedupKey: jobKeyOf(live, id) })
  }
  return out
}

/**
 * The jobs a writer enqueues for the buckets its files landed in (snapshot `landedAt` or
 * before), keyed to coalesce (jobKeyOf): every bucket where level 0 waits for a job, in
 * other tables the buckets that need compaction.
 */
export async function writerJobs(tableName: string, table: Table, landedAt: number, touched: BucketRef[], now = Date.now()): Promise<CompactionJob[]> {
  return (await bucketsNeedingJobs(table, landedAt, touched)).map(({ bucket, dedupKey }) => jobFor(tableName, table, bucket, landedAt, now, dedupKey))
}

function jobFor(tableName: string, table: Table, { partition, bucket }: BucketRef, snapshotId: number, now: number, dedupKey: string): CompactionJob {
  const { path } = bucketDirOf(table, partition, bucket)
  return {
    table: tableName,
    partition: path.slice(0, path.length - `bucket-${bucket}`.length).replace(/\/$/, ''),
    partitionBytes: Buffer.from(partition).toString('base64'),
    bucket,
    snapshotId,
    enqueuedAt: now,
    dedupKey,
  }
}

/**
 * The safety net under the argument above (run by the maintenance function): the buckets of
 * the latest snapshot that have work for a job (as bucketsNeedingJobs decides) and whose
 * oldest level-0 file was written more than `olderThanMs` before `now`, each with a job keyed
 * `sweep:<snapshot id>`, which no writer's job or follow-up shares. A bucket whose job was
 * lost (dropped by the queue as the duplicate of a job that is done, or never sent) would
 * otherwise wait for a writer's job to get past SQS's 5-minute deduplication window, and
 * for ever once the writes stop; with deletion vectors its level-0 rows are invisible
 * meanwhile. A bucket whose job is merely queued behind others gets one redundant job,
 * which compacts what is left or nothing. A sweep at an unchanged snapshot repeats the key,
 * and the queue drops it.
 */
export async function stalledBucketJobs(tableName: string, table: Table, now: number, olderThanMs: number): Promise<CompactionJob[]> {
  const latest = await table.snapshots.latest()
  if (!latest) return []
  const waits = levelZeroWaits(table)
  const byBucket = new Map<string, { ref: BucketRef; files: ManifestEntry[] }>()
  for (const e of await table.manifests.liveEntries(latest)) {
    const k = bucketIdentifier(e.partition, e.bucket)
    const b = byBucket.get(k)
    if (b) b.files.push(e)
    else byBucket.set(k, { ref: { partition: e.partition, bucket: e.bucket }, files: [e] })
  }
  const jobs: CompactionJob[] = []
  for (const { ref, files } of byBucket.values()) {
    let oldest = Infinity
    for (const e of files) if (e.file.level === 0) oldest = Math.min(oldest, e.file.creationTime === null ? now : Number(e.file.creationTime))
    if (oldest === Infinity || now - oldest <= olderThanMs) continue
    if (!waits && !compactionNeeded(table, files)) continue
    jobs.push(jobFor(tableName, table, ref, latest.id, now, `sweep:${latest.id}`))
  }
  return jobs
}

/**
 * The follow-up job a bucket gets after a compaction job that read snapshot
 * `baseSnapshotId` and landed `snapshotId` (null: nothing to compact), or null: where level 0
 * waits for a job (levelZeroWaits) when the job's input was capped (`needsMore`) or the
 * bucket now has level-0 files the job did not see; elsewhere when the bucket still needs
 * compaction in the latest snapshot. It is keyed as a writer landing in the latest snapshot keys its job
 * (jobKeyOf), so that the follow-up and the jobs of the writers landing next are one
 * message. `ownKeys`: the keys of the jobs just done; a follow-up never takes one of them
 * (SQS would drop it as their duplicate): the file comment argues it cannot happen but for
 * a capped compaction whose output was empty, and ruling it out costs nothing.
 */
export async function followUpOf(
  table: Table,
  result: { baseSnapshotId: number; snapshotId: number | null; needsMore: boolean },
  b: BucketRef,
  ownKeys: (string | undefined)[] = [],
): Promise<{ snapshotId: number; dedupKey: string } | null> {
  const latest = await table.snapshots.latestFrom(Math.max(result.baseSnapshotId, result.snapshotId ?? 0))
  if (!latest) return null
  const k = bucketIdentifier(b.partition, b.bucket)
  const files = (await liveFilesByBucket(table, latest.id, [b], false)).get(k) ?? []
  let due: boolean
  if (!levelZeroWaits(table)) due = compactionNeeded(table, files)
  else if (result.needsMore && result.snapshotId !== null) due = true
  else if (latest.id === result.baseSnapshotId) due = false
  else {
    const seen = new Set(((await liveFilesByBucket(table, result.baseSnapshotId, [b], true)).get(k) ?? []).map((e) => e.file.fileName))
    due = files.some((e) => e.file.level === 0 && !seen.has(e.file.fileName))
  }
  if (!due) return null
  const key = jobKeyOf(files, latest.id)
  return { snapshotId: latest.id, dedupKey: ownKeys.includes(key) ? `more:${latest.id}` : key }
}

/**
 * When every one of a bucket's redelivered jobs names a key the bucket's compactions have
 * since changed (each keyed `l0:`, none equal to the bucket's key in the latest snapshot),
 * the latest snapshot id; else null (see the file comment).
 */
export async function overtakenAt(table: Table, jobs: CompactionJob[], b: BucketRef): Promise<number | null> {
  if (!jobs.every((j) => j.dedupKey?.startsWith('l0:'))) return null
  const latest = await table.snapshots.latest()
  if (!latest) return null
  const files = (await liveFilesByBucket(table, latest.id, [b], false)).get(bucketIdentifier(b.partition, b.bucket)) ?? []
  const now = jobKeyOf(files, latest.id)
  return jobs.some((j) => j.dedupKey === now) ? null : latest.id
}
