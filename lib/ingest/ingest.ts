// The writer's work, independent of how records arrive (SQS, Kinesis, a test): validate
// every record, send the bad ones to the reject location with their reason and source
// position, commit the good ones per table as one APPEND snapshot, and enqueue one
// compaction job per touched bucket. Idempotent under redelivery: a batch that already
// committed (its process died before acking) is recognised and not written twice.

import type { JobQueue } from '../jobs/compaction-job.ts'
import { type JobContext, writerJobs } from '../jobs/coalesce.ts'
import type { Committer } from '../commit/committer.ts'
import { commitKeyOf } from '../commit/landed.ts'
import type { ObjectStore } from '../store/object-store.ts'
import type { Snapshot } from '../types.ts'
import { type WriteContext, writeBatch } from '../write/table-write.ts'
import { type AttemptLog, type DeltaReader, batchIdentifier, committedEarlier, deltaBuckets, earlierAttempt } from './attempts.ts'
import { type IngestRecord, type ParsedBatch, type ParsedRecords, TableTargets, parseRecords, storeRejections } from './parse-records.ts'


/**
 * What ingesting into a table needs of it: writing and committing (WriteContext), the
 * attempt markers (AttemptLog), the buckets of landed snapshots (DeltaReader) and keying
 * their jobs (JobContext). The Table handle (lib/handle/table.ts) is one.
 */
export type IngestTable = WriteContext & AttemptLog & DeltaReader & JobContext

export interface IngestTarget {
  table: IngestTable
  jobs: JobQueue | null
  /** where the batch's commit goes; default the table's direct committer */
  committer?: Committer
}

export interface IngestOptions {
  /** resolves a table by name (a record's "_table", or `defaultTable`) */
  resolve: (name: string) => Promise<IngestTarget | null>
  defaultTable?: string
  rejects: ObjectStore
  /** commit user of this writer: fixed per deployment so redeliveries are recognised */
  commitUser: string
  /**
   * Kinesis semantics: a failure at record k makes the source retry from k, so nothing
   * after the first failed record may be committed.
   */
  orderedSource?: boolean
  now?: () => number
  /** test hook, called after the data files are written and before the snapshot is created */
  beforeSnapshotCreate?: (table: string, id: number) => Promise<void> | void
}

export interface TableIngestResult {
  table: string
  snapshotId: number
  rows: number
  /** this batch had already committed in an earlier attempt */
  deduplicated: boolean
  /** redelivered records found committed by an earlier attempt of another batch, so not written again */
  alreadyCommitted: number
  jobs: number
  retries: number
  /** from the start of ingest to this table's commit landed (seen by the writer): the writer's flush and commit (docs/design.md "Freshness budget") */
  commitMs: number
}

export interface IngestResult {
  tables: TableIngestResult[]
  rejected: number
  /** ids the source must redeliver (partial batch response) */
  failedIds: string[]
  /** why records failed, for the logs */
  errors: { table: string; error: string }[]
  /**
   * how long the oldest record of the batch waited at its source before this ingest began
   * (its sentAt to the start; the batching window and the event source's polling), null
   * when no record says when it was sent (docs/design.md "Freshness budget")
   */
  batchWaitMs: number | null
}


export async function ingest(records: IngestRecord[], opts: IngestOptions): Promise<IngestResult> {
  const now = opts.now ?? Date.now
  const startedAt = now()
  const sent = records.map((r) => r.sentAt).filter((t): t is number => typeof t === 'number' && Number.isFinite(t))
  const batchWaitMs = sent.length ? Math.max(0, startedAt - Math.min(...sent)) : null
  const targets = new TableTargets(opts.resolve)
  const batch = await parseRecords(records, targets, opts)
  await storeRejections(batch, records, opts.rejects, opts.orderedSource, now)
  const byId = new Map(records.map((r) => [r.id, r]))
  const results: TableIngestResult[] = []
  for (const [name, parsed] of batch.tables) {
    const pending = admitted(parsed, records, batch)
    if (pending.records.length === 0) continue
    try {
      results.push(await ingestTable(name, targets.opened(name)!, pending, byId, opts, now, startedAt))
    } catch (e) {
      batch.errors.push({ table: name, error: (e as Error).message })
      // storage or commit failure: the source redelivers these records; nothing of them
      // was committed (a commit either lands whole or not at all)
      batch.failed.push(...pending.ids)
    }
  }
  return { tables: results, rejected: batch.rejections.length, failedIds: batch.failed, errors: batch.errors, batchWaitMs }
}

/** A table's records that may be committed: on an ordered source, none from the first failed record on (those are redelivered). */
function admitted(parsed: ParsedRecords, records: IngestRecord[], batch: ParsedBatch): ParsedRecords {
  if (batch.cut >= records.length) return { ...parsed }
  const allowed = new Set(records.slice(0, batch.cut).map((r) => r.id))
  const keep = parsed.ids.map((id) => allowed.has(id))
  for (const id of parsed.ids) if (!allowed.has(id)) batch.failed.push(id)
  return { records: parsed.records.filter((_, i) => keep[i]), ids: parsed.ids.filter((_, i) => keep[i]) }
}

/**
 * One table's part of the batch: leaves out the records an earlier attempt already
 * committed, writes and commits the rest (or recognises that an earlier attempt of this
 * batch did), then enqueues the touched buckets' jobs. `pending` is narrowed in place to the
 * records this call still answers for: on a failure, those are redelivered.
 */
async function ingestTable(name: string, target: IngestTarget, pending: ParsedRecords, byId: Map<string, IngestRecord>, opts: IngestOptions, now: () => number, startedAt: number): Promise<TableIngestResult> {
  const table = target.table
  // the one lookup of the latest snapshot a writer batch makes: the search for earlier
  // attempts ends at it, the marker records it, the commit's duplicate check and its
  // supersessions start after it, and the batch numbers its rows above it
  const latestSnapshot = await table.snapshots.latest()
  // redelivered records an earlier attempt of another batch committed: acknowledge, do not
  // write; attempts that had not landed are superseded by this batch's commit, so that
  // one still on the commit queue never lands beside it (docs/design.md "Abandoned attempts")
  const { landed: earlier, unresolved } = await committedEarlier(table, opts.commitUser, pending.ids.map((id) => byId.get(id)!), now(), latestSnapshot?.id ?? 0)
  const landedBefore = [...new Set(earlier.values())]
  if (earlier.size) {
    const keep = pending.ids.map((id) => !earlier.has(id))
    pending.records = pending.records.filter((_, i) => keep[i])
    pending.ids = pending.ids.filter((_, i) => keep[i])
  }
  const touched: { partition: Uint8Array; bucket: number }[] = []
  // the earlier attempts may have died before enqueueing their compaction jobs
  for (const id of landedBefore) touched.push(...(await deltaBuckets(table, id)))
  const commit = await commitOnce(name, target, pending, { latestSnapshot, landedBefore, unresolved }, opts, now)
  const commitMs = now() - startedAt
  touched.push(...commit.buckets)
  // keyed so that writers landing while a bucket's job waits or runs share it (lib/jobs/coalesce.ts);
  // files of an earlier attempt landed at or before the latest of these snapshots. Keyed
  // at least at the snapshot this batch read, not at an earlier attempt's old landing: a
  // redelivery minutes later then shares the bucket's current key instead of adding a
  // job keyed on a state long compacted (past SQS's deduplication window)
  const landedAt = Math.max(commit.snapshotId, ...landedBefore, latestSnapshot?.id ?? 0)
  const jobs = await enqueueJobs(name, target, landedAt, dedupeBuckets(touched), now)
  return { table: name, snapshotId: commit.snapshotId, rows: pending.records.length, deduplicated: commit.deduplicated, alreadyCommitted: earlier.size, jobs, retries: commit.retries, commitMs }
}

/** What a table's commit step knew before it began: the snapshot the batch read, and the earlier attempts it found. */
interface CommitBasis {
  latestSnapshot: Snapshot | null
  /** snapshots where earlier attempts of other batches committed some of these records */
  landedBefore: number[]
  /** identities of earlier attempts that had not landed, which this commit supersedes */
  unresolved: Set<string>
}

/**
 * Writes and commits the records as one APPEND snapshot, once: an earlier attempt of this
 * batch that landed (its process died before acking) is recognised by its marker and not
 * written again. Returns the snapshot and the buckets its files went to.
 */
async function commitOnce(name: string, target: IngestTarget, pending: ParsedRecords, basis: CommitBasis, opts: IngestOptions, now: () => number): Promise<{ snapshotId: number; deduplicated: boolean; retries: number; buckets: { partition: Uint8Array; bucket: number }[] }> {
  const table = target.table
  const identifier = batchIdentifier(name, pending.ids)
  const prior = pending.records.length ? await earlierAttempt(table, opts.commitUser, identifier, pending.ids, now(), basis.latestSnapshot) : { landed: Math.max(...basis.landedBefore), latestSnapshot: null }
  if (prior.landed !== null) {
    const buckets = pending.records.length ? await deltaBuckets(table, prior.landed) : []
    return { snapshotId: prior.landed, deduplicated: true, retries: 0, buckets }
  }
  const own = commitKeyOf({ kind: 'APPEND', commitUser: opts.commitUser, commitIdentifier: identifier })
  const supersedes = [...basis.unresolved].filter((k) => k !== own)
  // the snapshot earlierAttempt read: an attempt that landed after it is the commit's
  // duplicate check to find, one that landed at or before it earlierAttempt's, so
  // nothing falls between the two (a second lookup here would leave a gap).
  // writeBatch streams the records into per-bucket buffers bounded by the table's
  // write-buffer-size (lib/write/table-write.ts BatchWriter), as `strata write` does; the
  // parsed records themselves are held until here because the Kinesis cut and the
  // redelivery check above decide which of them may be written, and they are bounded
  // by the invocation's event (6 MB of record bodies at most on Lambda)
  const res = await writeBatch(table, pending.records, {
    committer: target.committer,
    commitUser: opts.commitUser,
    commitIdentifier: identifier,
    dedupAfterSnapshotId: prior.latestSnapshot?.id ?? 0,
    baseSnapshot: prior.latestSnapshot,
    ...(supersedes.length ? { supersedes } : {}),
    beforeSnapshotCreate: opts.beforeSnapshotCreate ? (id) => opts.beforeSnapshotCreate!(name, id) : undefined,
  })
  return { snapshotId: res.snapshotId, deduplicated: res.deduplicated, retries: res.retries, buckets: res.buckets }
}

/** Enqueues one compaction job per touched bucket that needs one (lib/jobs/coalesce.ts writerJobs); returns how many. */
async function enqueueJobs(name: string, target: IngestTarget, landedAt: number, buckets: { partition: Uint8Array; bucket: number }[], now: () => number): Promise<number> {
  if (!target.jobs || buckets.length === 0) return 0
  const jobs = await writerJobs(name, target.table, landedAt, buckets, now())
  await target.jobs.enqueue(jobs)
  return jobs.length
}

function dedupeBuckets<T extends { partition: Uint8Array; bucket: number }>(xs: T[]): T[] {
  const seen = new Set<string>()
  return xs.filter((x) => {
    const k = `${Buffer.from(x.partition).toString('hex')}|${x.bucket}`
    if (seen.has(k)) return false
    seen.add(k)
    return true
  })
}
