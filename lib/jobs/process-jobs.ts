// The compactor's work for one batch of FIFO messages, independent of Lambda: coalesce the
// jobs of each bucket, compact, commit, enqueue a follow-up where the bucket still has
// level-0 files the job did not take (lib/jobs/coalesce.ts), and settle the batch:
// - a bucket that fails fails alone: its messages go back, visible again after a short
//   backoff that grows with their receive count (ChangeMessageVisibility), while the other
//   buckets of the batch go on — Powertools' FIFO processor with skip-group-on-error, the
//   group here being the bucket, so no bucket's jobs are ever processed out of order;
// - when the invocation's remaining time runs short no new bucket starts: the buckets not
//   started go back at once (visible again immediately), instead of the whole batch
//   waiting out the queue's visibility timeout after a Lambda timeout.

import { compactBucket } from '../lsm/compact/compact-bucket.ts'
import type { CompactBucketResult } from '../lsm/compact/context.ts'
import type { Table } from '../handle/table.ts'
import { CommitFailedError } from '../errors.ts'
import { type Committer } from '../commit/committer.ts'
import { CommitConflictError } from '../errors.ts'
import { type CompactionJob, type GiveBack, type JobQueue, bucketKeyOf, decodeJob } from './compaction-job.ts'
import { followUpOf, overtakenAt } from './coalesce.ts'
import { POSTPONE_BUCKET } from '../format/partition-path.ts'
import { runPostponeJob } from './postpone-job.ts'

export interface JobMessage {
  id: string
  body: string
  /** SQS MessageGroupId: `<table>/<partition>/<bucket>`, or the table at task-threads 1 */
  groupId: string
  /** to give the message back with a backoff (ChangeMessageVisibility) */
  receiptHandle?: string
  /** ApproximateReceiveCount: 1 on the first delivery */
  receiveCount?: number
}

export interface JobOutcome {
  job: CompactionJob
  /** message ids this compaction answered (coalesced jobs of one bucket) */
  messageIds: string[]
  result: CompactBucketResult
  startedAt: number
  endedAt: number
  /** a follow-up job was enqueued */
  followUp: boolean
  /** fresh-state retries after a commit conflict or a commit that lost every race */
  conflictRetries: number
  /** redelivered jobs whose bucket was compacted since they were keyed: no compaction, only the follow-up check (lib/jobs/coalesce.ts) */
  overtaken?: boolean
  /**
   * from startedAt to the start of the attempt that finished: the wait for a merge permit
   * behind the invocation's other buckets, and attempts redone after a conflict
   * (docs/design.md "Freshness budget")
   */
  slotWaitMs?: number
}

export interface ProcessOptions {
  resolve: (table: string) => Promise<{ table: Table; jobs: JobQueue | null; committer?: Committer } | null>
  /**
   * Fresh-state retries of a bucket's compaction, after a commit conflict or a commit that
   * lost every race for the next snapshot (commit.max-retries), before its message is
   * returned. A returned message holds its bucket's later jobs until the visibility
   * timeout, and the FIFO rule returns the rest of the batch with it, so a lost race is
   * cheaper to retry here; default 3.
   */
  maxConflictRetries?: number
  /** buckets of the batch in flight at once, merging or waiting for their commits (default DEFAULT_BUCKETS_AT_ONCE) */
  bucketsAtOnce?: number
  /**
   * of those, merging at once (reading and writing files, up to the commit request); the
   * rest wait for their commits. Default: 1 when `taskThreads` is N >= 1, so N invocations
   * merge N buckets at once; else bucketsAtOnce.
   */
  mergesAtOnce?: number
  /** the table's `compaction.task-threads` (its compactor's concurrency) */
  taskThreads?: number
  /** the invocation's remaining time (Lambda's context.getRemainingTimeInMillis) */
  remainingMs?: () => number
  /**
   * No bucket starts with less than this much time left, nor with less than twice the
   * longest bucket of this invocation so far; default MIN_RESERVE_MS
   */
  reserveMs?: number
  /** gives messages back to the queue with a delay; without it, failed messages wait out their visibility timeout */
  giveBack?: (messages: GiveBack[]) => Promise<void>
  /**
   * deletes messages before the invocation ends: a bucket's extra coalesced jobs once its
   * compaction is done, before its follow-up is sent (JobQueue.discard); without it they
   * stay in flight until the invocation returns
   */
  discard?: (receiptHandles: string[]) => Promise<void>
  /**
   * with `discard`: also delete a bucket's last message once its compaction landed and its
   * follow-up (if any) is sent, so the bucket's FIFO message group takes its next job while
   * the invocation's other buckets go on, instead of after the invocation returns
   * (docs/design.md "Freshness budget"). A crash after that loses nothing: the compaction
   * landed and the follow-up is on the queue. Default false: the last message answers for
   * the job until the invocation ends.
   */
  releaseDone?: boolean
  /** a compaction attempt of the job's bucket starts merging (it holds a merge permit) */
  onStart?: (job: CompactionJob) => void
  onOutcome?: (o: JobOutcome) => void
  /** the clock of startedAt, endedAt and the compactions' step times; default Date.now */
  now?: () => number
}

export interface ProcessResult {
  outcomes: JobOutcome[]
  /** messages returned: failed buckets' and those not started */
  failedIds: string[]
  errors: { id: string; error: string }[]
  /** messages not started because the remaining time ran short */
  notStarted: string[]
  /** messages given back with a delay, and the delay (s) */
  backoff: { id: string; delaySeconds: number }[]
}

/** Time an invocation keeps in hand before it stops starting buckets. */
export const MIN_RESERVE_MS = 20_000

/** Seconds a failed message stays invisible before its next try: 2 s, doubling per receive, at most 60 s. */
export function retryDelaySeconds(receiveCount: number): number {
  return Math.min(60, 2 ** Math.max(1, receiveCount))
}

/**
 * Buckets of one batch compacted at once. With a queued committer most of a compaction's
 * last stretch is waiting for its receipt; overlapping the batch's buckets lets their
 * commits arrive together and land in one folded snapshot, instead of one fold per bucket
 * in turn. Each compaction streams, so memory grows with this number, not with rows.
 */
export const DEFAULT_BUCKETS_AT_ONCE = 4

export async function processCompactionJobs(messages: JobMessage[], opts: ProcessOptions): Promise<ProcessResult> {
  const errors: ProcessResult['errors'] = []
  const failed = new Set<string>()
  // a message that does not decode fails alone (after its receives it reaches the DLQ)
  const byBucket = new Map<string, { jobs: CompactionJob[]; messages: JobMessage[] }>()
  for (const m of messages) {
    let job: CompactionJob
    try {
      job = decodeJob(m.body, `message ${m.id}`)
    } catch (e) {
      failed.add(m.id)
      errors.push({ id: m.id, error: (e as Error).message })
      continue
    }
    const k = bucketKeyOf(job)
    const g = byBucket.get(k)
    if (g) (g.jobs.push(job), g.messages.push(m))
    else byBucket.set(k, { jobs: [job], messages: [m] })
  }
  const buckets = [...byBucket.values()]
  const outcomes: JobOutcome[] = []
  const notStarted: string[] = []
  // messages deleted during the invocation (a bucket's extra coalesced jobs)
  const discarded = new Set<string>()
  let next = 0
  let longestMs = 0
  const reserve = () => Math.max(opts.reserveMs ?? MIN_RESERVE_MS, 2 * longestMs)
  // compaction.task-threads N means N merges at once: one per invocation, its other buckets
  // waiting for their commits meanwhile; -1 lets each invocation merge several at once
  const defaultMerges = opts.taskThreads !== undefined && opts.taskThreads !== -1 ? 1 : (opts.bucketsAtOnce ?? DEFAULT_BUCKETS_AT_ONCE)
  const merging = new Semaphore(Math.max(1, opts.mergesAtOnce ?? defaultMerges))
  const worker = async () => {
    while (next < buckets.length) {
      const b = buckets[next++]
      if (opts.remainingMs && opts.remainingMs() < reserve()) {
        for (const m of b.messages) notStarted.push(m.id)
        continue
      }
      const t0 = Date.now()
      try {
        outcomes.push(await compactGroup(b.jobs, b.messages, opts, merging, discarded))
      } catch (e) {
        // this bucket fails alone; the others of the batch go on
        for (const m of b.messages) if (!discarded.has(m.id)) failed.add(m.id)
        errors.push({ id: b.messages[0].id, error: (e as Error).message })
      } finally {
        longestMs = Math.max(longestMs, Date.now() - t0)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.bucketsAtOnce ?? DEFAULT_BUCKETS_AT_ONCE, buckets.length)) }, worker))
  const backoff = messages.filter((m) => failed.has(m.id)).map((m) => ({ id: m.id, delaySeconds: retryDelaySeconds(m.receiveCount ?? 1) }))
  const returned = [...backoff, ...notStarted.map((id) => ({ id, delaySeconds: 0 }))]
  const handles = new Map(messages.map((m) => [m.id, m.receiptHandle]))
  const givable = returned.filter((r) => handles.get(r.id))
  if (opts.giveBack && givable.length) {
    try {
      await opts.giveBack(givable.map((r) => ({ receiptHandle: handles.get(r.id)!, delaySeconds: r.delaySeconds })))
    } catch (e) {
      // they still come back, after the queue's visibility timeout
      errors.push({ id: givable[0].id, error: `giving messages back failed: ${(e as Error).message}` })
    }
  }
  return { outcomes, failedIds: messages.filter((m) => failed.has(m.id) || notStarted.includes(m.id)).map((m) => m.id), errors, notStarted, backoff }
}

/** Enqueues a bucket's follow-up job (followUpOf says when and under which key). */
function sendFollowUp(jobs: JobQueue, job: CompactionJob, next: { snapshotId: number; dedupKey: string }, at: number): Promise<void> {
  return jobs.enqueue([{ ...job, snapshotId: next.snapshotId, followUp: true, enqueuedAt: at, dedupKey: next.dedupKey }])
}

/**
 * Once a bucket's compaction is done, deletes all but the last of its messages in the
 * batch: the one kept answers for the job until the invocation ends (a crash before then
 * redelivers it), and the follow-up about to be sent is then the bucket's second message,
 * not its third. A failed delete only leaves them in flight until the invocation ends.
 */
async function discardExtras(group: JobMessage[], opts: ProcessOptions, discarded: Set<string>): Promise<void> {
  await discardMessages(group.slice(0, -1), opts, discarded)
}

/** Deletes these messages (a failed delete leaves them in flight until the invocation ends). */
async function discardMessages(messages: JobMessage[], opts: ProcessOptions, discarded: Set<string>): Promise<void> {
  const extras = messages.filter((m) => m.receiptHandle)
  if (!opts.discard || extras.length === 0) return
  try {
    await opts.discard(extras.map((m) => m.receiptHandle!))
    for (const m of extras) discarded.add(m.id)
  } catch {
    // they go when the invocation returns, as without discard
  }
}

/** Counts merges in flight: a compaction holds a permit from its start until it asks for its commit. */
class Semaphore {
  private free: number
  private readonly waiting: (() => void)[] = []
  constructor(permits: number) {
    this.free = permits
  }
  async acquire(): Promise<() => void> {
    if (this.free > 0) this.free--
    else await new Promise<void>((r) => this.waiting.push(r))
    let released = false
    return () => {
      if (released) return
      released = true
      const next = this.waiting.shift()
      if (next) next()
      else this.free++
    }
  }
}

async function compactGroup(jobs: CompactionJob[], group: JobMessage[], opts: ProcessOptions, merging: Semaphore, discarded: Set<string>): Promise<JobOutcome> {
  // the newest job of a bucket stands for all of them: compaction works from the
  // latest snapshot, whatever snapshot each job names
  const job = jobs.reduce((a, b) => (b.snapshotId > a.snapshotId ? b : a))
  const target = await opts.resolve(job.table)
  if (!target) throw new Error(`message ${group[0].id}: unknown table '${job.table}'`)
  const partition = new Uint8Array(Buffer.from(job.partitionBytes, 'base64'))
  const now = opts.now ?? Date.now
  const startedAt = now()
  const bucketRef = { partition, bucket: job.bucket }
  const ownKeys = jobs.map((j) => j.dedupKey)
  // a redelivery after a compactor died past its commit: the follow-up check it owed, no compaction
  const overtaken = target.jobs && group.every((m) => (m.receiveCount ?? 1) > 1) ? await overtakenAt(target.table, jobs, bucketRef) : null
  if (overtaken !== null) {
    await discardExtras(group, opts, discarded)
    const next = await followUpOf(target.table, { baseSnapshotId: 0, snapshotId: overtaken, needsMore: false }, bucketRef, ownKeys)
    if (next !== null) await sendFollowUp(target.jobs!, job, next, now())
    if (opts.releaseDone) await discardMessages(group.slice(-1), opts, discarded)
    const result: CompactBucketResult = {
      snapshotId: null, baseSnapshotId: overtaken, inputFiles: 0, outputFiles: 0, upgradedFiles: 0, rowsIn: 0, rowsOut: 0,
      rowsDeletedByVector: 0, outputLevel: null, needsMore: false, backPressure: false, retries: 0,
    }
    const outcome: JobOutcome = { job, messageIds: group.map((x) => x.id), result, startedAt, endedAt: now(), followUp: next !== null, conflictRetries: 0, overtaken: true }
    opts.onOutcome?.(outcome)
    return outcome
  }
  let result: CompactBucketResult
  let conflictRetries = 0
  let attemptAt = startedAt
  for (;;) {
    // the merge holds a permit until it asks for its commit; waiting for the commit does not
    const release = await merging.acquire()
    attemptAt = now()
    opts.onStart?.(job)
    const committer = target.committer ?? target.table.committer
    try {
      const releasing: Committer = { commit: (req) => (release(), committer.commit(req)) }
      result =
        job.bucket === POSTPONE_BUCKET
          ? await runPostponeJob(target.table, job, partition, releasing, target.jobs)
          : await compactBucket(target.table, { partition, bucket: job.bucket, committer: releasing, clock: now })
      break
    } catch (e) {
      const retryable = e instanceof CommitConflictError || e instanceof CommitFailedError
      if (!retryable || conflictRetries >= (opts.maxConflictRetries ?? 3)) throw e
      conflictRetries++
    } finally {
      release()
    }
  }
  const endedAt = now()
  let followUp = false
  await discardExtras(group, opts, discarded)
  if (target.jobs) {
    // the bucket still has work for a job (its writers' jobs may have been coalesced into
    // this one): the follow-up, keyed as the next writers key theirs (lib/jobs/coalesce.ts)
    const next = await followUpOf(target.table, result, bucketRef, ownKeys)
    if (next !== null) {
      await sendFollowUp(target.jobs, job, next, endedAt)
      followUp = true
    }
  }
  if (opts.releaseDone) await discardMessages(group.slice(-1), opts, discarded)
  const outcome: JobOutcome = { job, messageIds: group.map((x) => x.id), result, startedAt, endedAt, followUp, conflictRetries, slotWaitMs: attemptAt - startedAt }
  opts.onOutcome?.(outcome)
  return outcome
}
