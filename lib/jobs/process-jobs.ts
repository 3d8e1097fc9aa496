// The compactor's work for one batch of FIFO messages, independent of Lambda: coalesce the
// jobs of each bucket, compact, commit, enqueue a follow-up where a job's input cap left
// work behind, and apply the FIFO partial-batch rule — at the first failure, that message
// and every later one go back (Powertools' SqsFifoPartialProcessor), so no bucket's jobs
// are ever processed out of order.

import { compactBucket, type CompactBucketResult } from '../lsm/compact-task.ts'
import type { Table } from '../table/table.ts'
import { CommitFailedError } from '../commit/commit.ts'
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
  resolve: (table: string) => Promise<{ table: Table; jobs: JobQueue | null } | null>
  /**
   * Fresh-state retries of a bucket's compaction, after a commit conflict or a commit that
   * lost every race for the next snapshot (commit.max-retries), before its message is
   * returned. A returned message holds its bucket's later jobs until the visibility
   * timeout, and the FIFO rule returns the rest of the batch with it, so a lost race is
   * cheaper to retry here; default 3.
   */
  maxConflictRetries?: number
  onStart?: (job: CompactionJob) => void
  onOutcome?: (o: JobOutcome) => void
}

export interface ProcessResult {
  outcomes: JobOutcome[]
  failedIds: string[]
  errors: { id: string; error: string }[]
}

export async function processCompactionJobs(messages: JobMessage[], opts: ProcessOptions): Promise<ProcessResult> {
  const byGroup = new Map<string, JobMessage[]>()
  for (const m of messages) {
    const g = byGroup.get(m.groupId)
    if (g) g.push(m)
    else byGroup.set(m.groupId, [m])
  }
  const done = new Set<string>()
  const outcomes: JobOutcome[] = []
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i]
    if (done.has(m.groupId)) continue
    const group = byGroup.get(m.groupId)!
    try {
      // the newest job of a bucket stands for all of them: compaction works from the
      // latest snapshot, whatever snapshot each job names
      const jobs = group.map((x) => decodeJob(x.body, `message ${x.id}`))
      const job = jobs.reduce((a, b) => (b.snapshotId > a.snapshotId ? b : a))
      const target = await opts.resolve(job.table)
      if (!target) throw new Error(`message ${m.id}: unknown table '${job.table}'`)
      const partition = new Uint8Array(Buffer.from(job.partitionBytes, 'base64'))
      opts.onStart?.(job)
      const startedAt = Date.now()
      let result: CompactBucketResult
      let conflictRetries = 0
      for (;;) {
        try {
          result = await compactBucket(target.table, { partition, bucket: job.bucket })
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
      outcomes.push(outcome)
      opts.onOutcome?.(outcome)
      done.add(m.groupId)
    } catch (e) {
      // FIFO rule: this message and every later one of the batch go back, in order
      const failedIds = messages.slice(i).map((x) => x.id)
      return { outcomes, failedIds, errors: [{ id: m.id, error: (e as Error).message }] }
    }
  }
  return { outcomes, failedIds: [], errors: [] }
}
