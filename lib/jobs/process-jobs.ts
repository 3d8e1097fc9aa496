// The compactor's work for one batch of FIFO messages, independent of Lambda: coalesce the
// jobs of each bucket, compact, commit, enqueue a follow-up where a job's input cap left
// work behind, and apply the FIFO partial-batch rule — at the first failure, that message
// and every later one go back (Powertools' SqsFifoPartialProcessor), so no bucket's jobs
// are ever processed out of order.

import { compactBucket, type CompactBucketResult } from '../lsm/compact-task.ts'
import type { Table } from '../table/table.ts'
import { type Committer, CommitFailedError } from '../commit/committer.ts'
import { CommitConflictError } from '../types.ts'
import { type CompactionJob, type JobQueue, decodeJob } from './compaction-job.ts'

export interface JobMessage {
  id: string
  body: string
  /** SQS MessageGroupId: `<table>/<partition>/<bucket>` */
  groupId: string
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
  /** buckets of the batch compacted at once (default DEFAULT_BUCKETS_AT_ONCE) */
  bucketsAtOnce?: number
  onStart?: (job: CompactionJob) => void
  onOutcome?: (o: JobOutcome) => void
}

export interface ProcessResult {
  outcomes: JobOutcome[]
  failedIds: string[]
  errors: { id: string; error: string }[]
}

/**
 * Buckets of one batch compacted at once. With a queued committer most of a compaction's
 * last stretch is waiting for its receipt; overlapping the batch's buckets lets their
 * commits arrive together and land in one folded snapshot, instead of one fold per bucket
 * in turn. Each compaction streams, so memory grows with this number, not with rows.
 */
export const DEFAULT_BUCKETS_AT_ONCE = 4

export async function processCompactionJobs(messages: JobMessage[], opts: ProcessOptions): Promise<ProcessResult> {
  const byGroup = new Map<string, JobMessage[]>()
  const firstIndex = new Map<string, number>()
  messages.forEach((m, i) => {
    const g = byGroup.get(m.groupId)
    if (g) g.push(m)
    else {
      byGroup.set(m.groupId, [m])
      firstIndex.set(m.groupId, i)
    }
  })
  const groups = [...byGroup.entries()]
  const results: ({ ok: true; outcome: JobOutcome } | { ok: false; error: Error } | undefined)[] = new Array(groups.length)
  let next = 0
  let stop = false
  const worker = async () => {
    while (!stop && next < groups.length) {
      const k = next++
      try {
        results[k] = { ok: true, outcome: await compactGroup(groups[k][1], opts) }
      } catch (e) {
        results[k] = { ok: false, error: e as Error }
        // FIFO rule: nothing after a failure needs doing (it all goes back); what already runs finishes
        stop = true
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(opts.bucketsAtOnce ?? DEFAULT_BUCKETS_AT_ONCE, groups.length)) }, worker))
  const outcomes: JobOutcome[] = []
  for (let k = 0; k < groups.length; k++) {
    const r = results[k]
    if (r?.ok) {
      outcomes.push(r.outcome)
      continue
    }
    // FIFO rule: the first failed (or never started) bucket's first message and every later
    // message of the batch go back, in order, as Powertools' FIFO processor returns them; a
    // later bucket that did compact meanwhile is compacted again harmlessly (a job starts
    // from the latest snapshot and ends without a commit when nothing is left to do)
    const from = firstIndex.get(groups[k][0])!
    return { outcomes, failedIds: messages.slice(from).map((x) => x.id), errors: r ? [{ id: messages[from].id, error: r.error.message }] : [] }
  }
  return { outcomes, failedIds: [], errors: [] }
}

async function compactGroup(group: JobMessage[], opts: ProcessOptions): Promise<JobOutcome> {
  // the newest job of a bucket stands for all of them: compaction works from the
  // latest snapshot, whatever snapshot each job names
  const jobs = group.map((x) => decodeJob(x.body, `message ${x.id}`))
  const job = jobs.reduce((a, b) => (b.snapshotId > a.snapshotId ? b : a))
  const target = await opts.resolve(job.table)
  if (!target) throw new Error(`message ${group[0].id}: unknown table '${job.table}'`)
  const partition = new Uint8Array(Buffer.from(job.partitionBytes, 'base64'))
  opts.onStart?.(job)
  const startedAt = Date.now()
  let result: CompactBucketResult
  let conflictRetries = 0
  for (;;) {
    try {
      result = await compactBucket(target.table, { partition, bucket: job.bucket, committer: target.committer })
      break
    } catch (e) {
      const retryable = e instanceof CommitConflictError || e instanceof CommitFailedError
      if (!retryable || conflictRetries >= (opts.maxConflictRetries ?? 3)) throw e
      conflictRetries++
    }
  }
  const endedAt = Date.now()
  let followUp = false
  if (result.needsMore && result.snapshotId !== null && target.jobs) {
    await target.jobs.enqueue([{ ...job, snapshotId: result.snapshotId, followUp: true, enqueuedAt: endedAt }])
    followUp = true
  }
  const outcome: JobOutcome = { job, messageIds: group.map((x) => x.id), result, startedAt, endedAt, followUp, conflictRetries }
  opts.onOutcome?.(outcome)
  return outcome
}
