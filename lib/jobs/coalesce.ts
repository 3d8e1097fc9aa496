// Compaction jobs coalesce: writers key a bucket's job for SQS FIFO deduplication by the
// bucket's live files (`l0:<oldest level-0 file>@<digest of the files above level 0>`), and a
// compactor sends a follow-up while the bucket still has work. Why no file is left without a
// job: docs/design.md, "Coalescing: why no level-0 file is left without a job".

import { createHash } from 'node:crypto'
import type { ManifestIO } from '../manifest/manifests.ts'
import type { SnapshotManager } from '../manifest/snapshot-manager.ts'
import type { SchemaView } from '../table/schema.ts'
import { bucketsScope } from '../manifest/bucket-scope.ts'
import { bucketDirOf } from '../handle/bucket-state.ts'
import { compactionNeeded } from '../lsm/compact/plan.ts'
import type { MergeEngineConfig } from '../merge/merge-types.ts'
import { compactsWithLookup } from '../merge/engines.ts'
import type { CompactionJob } from './compaction-job.ts'
import { bucketIdentifier } from '../manifest/identifiers.ts'
import type { ManifestEntry } from '../types.ts'
import { POSTPONE_BUCKET } from '../format/partition-path.ts'

/**
 * Every level-0 file waits for a job to be read: deletion-vector tables and first-row
 * (whose compactions force level 0 up and look keys up, like deletion-vector ones; see
 * compactsWithLookup). Their writers send a job for every bucket they touch. A table with
 * `changelog-producer` lookup is read with its level 0, but its changelog waits for the job
 * that takes level 0 up, so its writers do the same.
 */
function levelZeroWaits(table: JobContext, bucket?: number): boolean {
  // bucket-postpone: readers never see its files, each waits for a postpone compaction
  if (bucket === POSTPONE_BUCKET) return true
  return compactsWithLookup(table.mergeConfig.engine, table.view.options.deletionVectors) || table.view.options.changelogProducer === 'lookup'
}

/** What keying a bucket's jobs needs of a table: its schema and merge engine, its snapshots and their live files (the Table handle is one). */
export interface JobContext {
  readonly view: SchemaView
  readonly mergeConfig: MergeEngineConfig
  readonly snapshots: Pick<SnapshotManager, 'snapshot' | 'latest' | 'latestFrom'>
  readonly manifests: Pick<ManifestIO, 'liveEntries'>
}

export interface BucketRef {
  partition: Uint8Array
  bucket: number
}

/** Files of the buckets live in snapshot `id` (0: none), by bucketIdentifier; `level0Only`: only level 0. */
async function liveFilesByBucket(table: JobContext, id: number, buckets: BucketRef[], level0Only: boolean): Promise<Map<string, ManifestEntry[]>> {
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
export async function bucketsNeedingJobs(table: JobContext, id: number, buckets: BucketRef[]): Promise<{ bucket: BucketRef; dedupKey: string }[]> {
  const files = await liveFilesByBucket(table, id, buckets, false)
  const out: { bucket: BucketRef; dedupKey: string }[] = []
  for (const b of buckets) {
    const live = files.get(bucketIdentifier(b.partition, b.bucket)) ?? []
    if (levelZeroWaits(table, b.bucket) || compactionNeeded(table, live)) out.push({ bucket: b, dedupKey: jobKeyOf(live, id) })
  }
  return out
}

/**
 * The jobs a writer enqueues for the buckets its files landed in (snapshot `landedAt` or
 * before), keyed to coalesce (jobKeyOf): every bucket where level 0 waits for a job, in
 * other tables the buckets that need compaction.
 */
export async function writerJobs(tableName: string, table: JobContext, landedAt: number, touched: BucketRef[], now = Date.now()): Promise<CompactionJob[]> {
  return (await bucketsNeedingJobs(table, landedAt, touched)).map(({ bucket, dedupKey }) => jobFor(tableName, table, bucket, landedAt, now, dedupKey))
}

function jobFor(tableName: string, table: JobContext, { partition, bucket }: BucketRef, snapshotId: number, now: number, dedupKey: string): CompactionJob {
  const { path } = bucketDirOf(table, partition, bucket)
  return {
    table: tableName,
    partition: path.slice(0, path.lastIndexOf('bucket-')).replace(/\/$/, ''),
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
export async function stalledBucketJobs(tableName: string, table: JobContext, now: number, olderThanMs: number): Promise<CompactionJob[]> {
  const latest = await table.snapshots.latest()
  if (!latest) return []
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
    if (!levelZeroWaits(table, ref.bucket) && !compactionNeeded(table, files)) continue
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
  table: JobContext,
  result: { baseSnapshotId: number; snapshotId: number | null; needsMore: boolean },
  b: BucketRef,
  ownKeys: (string | undefined)[] = [],
): Promise<{ snapshotId: number; dedupKey: string } | null> {
  const latest = await table.snapshots.latestFrom(Math.max(result.baseSnapshotId, result.snapshotId ?? 0))
  if (!latest) return null
  const k = bucketIdentifier(b.partition, b.bucket)
  const files = (await liveFilesByBucket(table, latest.id, [b], false)).get(k) ?? []
  let due: boolean
  if (!levelZeroWaits(table, b.bucket)) due = compactionNeeded(table, files)
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
export async function overtakenAt(table: JobContext, jobs: CompactionJob[], b: BucketRef): Promise<number | null> {
  if (!jobs.every((j) => j.dedupKey?.startsWith('l0:'))) return null
  const latest = await table.snapshots.latest()
  if (!latest) return null
  const files = (await liveFilesByBucket(table, latest.id, [b], false)).get(bucketIdentifier(b.partition, b.bucket)) ?? []
  const now = jobKeyOf(files, latest.id)
  return jobs.some((j) => j.dedupKey === now) ? null : latest.id
}
