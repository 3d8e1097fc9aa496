// Compaction jobs: the message a writer enqueues for each bucket it touched, and the queue
// seam they travel through. On AWS the queue is SQS FIFO with MessageGroupId
// `<table>/<partition>/<bucket>`, so SQS itself serializes each bucket's compactions while
// different buckets run in parallel up to the compactor's concurrency
// (`compaction.task-threads`, docs/operations.md "compaction.task-threads on Lambda"). At
// task-threads 1 every job of the table shares one group (the table's name): a FIFO event
// source then never has more than one batch of the queue in flight, so one compaction runs
// at a time without relying on Lambda throttling the event source.

import { createHash } from 'node:crypto'
import { ChangeMessageVisibilityBatchCommand, DeleteMessageBatchCommand, SendMessageBatchCommand, type SQSClient } from '@aws-sdk/client-sqs'
import { StrataInputError } from '../errors.ts'

export interface CompactionJob {
  /** table name as configured (not its URI) */
  table: string
  /** `k=v/…` partition path without trailing slash, '' when unpartitioned */
  partition: string
  /** the partition's serialized BinaryRow, base64 */
  partitionBytes: string
  bucket: number
  /** the snapshot that made this job necessary */
  snapshotId: number
  /** set on a follow-up job enqueued by a compactor whose input was capped */
  followUp?: boolean
  /** epoch millis the job was enqueued (for queue-age metrics) */
  enqueuedAt: number
  /**
   * What makes this job distinct for SQS deduplication (lib/jobs/coalesce.ts): jobs of one
   * bucket with one key within 5 minutes are one job. Absent: the snapshot that made it.
   */
  dedupKey?: string
}

/** The FIFO message group of a job: its bucket, or the whole table when `oneGroup` (task-threads 1). */
export function messageGroupId(job: Pick<CompactionJob, 'table' | 'partition' | 'bucket'>, oneGroup = false): string {
  // SQS allows 128 characters of alphanumerics and punctuation in a group id; hash long ones
  const raw = oneGroup ? job.table : `${job.table}/${job.partition}/${job.bucket}`
  if (raw.length <= 128 && /^[\x21-\x7e]+$/.test(raw)) return raw
  const hashed = `${job.table.slice(0, 40)}/${createHash('sha256').update(raw).digest('hex').slice(0, 64)}`
  return oneGroup ? hashed : `${hashed}/${job.bucket}`
}

/** The bucket a job is for, whatever its message group. */
export function bucketKeyOf(job: Pick<CompactionJob, 'table' | 'partition' | 'bucket'>): string {
  return `${job.table}/${job.partition}/${job.bucket}`
}

/**
 * Deduplication id: one job per (bucket, dedupKey) — or, without a key, per (bucket,
 * snapshot) — so jobs that coalesce (lib/jobs/coalesce.ts), and a writer retrying its
 * enqueue after a crash, queue one message within SQS's 5-minute window.
 */
export function deduplicationId(job: CompactionJob): string {
  return createHash('sha256')
    .update(`${bucketKeyOf(job)}#${job.dedupKey ?? `${job.snapshotId}${job.followUp ? '#follow-up' : ''}`}`)
    .digest('hex')
    .slice(0, 64)
}

export function encodeJob(job: CompactionJob): string {
  return JSON.stringify(job)
}

export function decodeJob(body: string, where: string): CompactionJob {
  let j: Partial<CompactionJob>
  try {
    j = JSON.parse(body)
  } catch (e) {
    throw new StrataInputError(`${where}: compaction job is not JSON (${(e as Error).message})`)
  }
  if (typeof j !== 'object' || j === null) throw new StrataInputError(`${where}: compaction job must be an object`)
  for (const [k, t] of [['table', 'string'], ['partition', 'string'], ['partitionBytes', 'string'], ['bucket', 'number'], ['snapshotId', 'number']] as const) {
    if (typeof j[k] !== t) throw new StrataInputError(`${where}: compaction job field '${k}' expected a ${t}, got ${JSON.stringify(j[k])}`)
  }
  return j as CompactionJob
}

/** A received job message to give back to the queue, visible again after `delaySeconds`. */
export interface GiveBack {
  receiptHandle: string
  delaySeconds: number
}

/** Where jobs go. SQS in production and locally; tests may collect them in memory. */
export interface JobQueue {
  enqueue(jobs: CompactionJob[]): Promise<void>
  /**
   * Makes received messages visible again after a delay (ChangeMessageVisibility): a failed
   * bucket is retried in seconds instead of after the queue's visibility timeout.
   */
  giveBack?(messages: GiveBack[]): Promise<void>
  /**
   * Deletes received messages before the invocation ends (DeleteMessageBatch): a bucket's
   * extra coalesced jobs, once its compaction has landed, so that they and its follow-up
   * are never on the queue together. The event source's own delete of them afterwards
   * succeeds as SQS's does for a message already deleted.
   */
  discard?(receiptHandles: string[]): Promise<void>
}

export interface SqsJobQueueOptions {
  /** every job of the table in one message group (compaction.task-threads 1) */
  oneGroup?: boolean
}

/** SQS FIFO queue: batches of 10 (the SendMessageBatch limit), failures retried then thrown. */
export class SqsJobQueue implements JobQueue {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
    private readonly opts: SqsJobQueueOptions = {},
  ) {}

  async giveBack(messages: GiveBack[]): Promise<void> {
    for (let i = 0; i < messages.length; i += 10) {
      const chunk = messages.slice(i, i + 10)
      const res = await this.client.send(
        new ChangeMessageVisibilityBatchCommand({
          QueueUrl: this.queueUrl,
          Entries: chunk.map((m, j) => ({ Id: String(j), ReceiptHandle: m.receiptHandle, VisibilityTimeout: Math.max(0, Math.min(43_200, Math.round(m.delaySeconds))) })),
        }),
      )
      const f = res.Failed?.[0]
      if (f) throw new Error(`ChangeMessageVisibility of ${res.Failed!.length} compaction message(s) on ${this.queueUrl} failed: ${f.Code} ${f.Message ?? ''}`.trim())
    }
  }

  async discard(receiptHandles: string[]): Promise<void> {
    for (let i = 0; i < receiptHandles.length; i += 10) {
      const chunk = receiptHandles.slice(i, i + 10)
      const res = await this.client.send(new DeleteMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: chunk.map((h, j) => ({ Id: String(j), ReceiptHandle: h })) }))
      const f = res.Failed?.[0]
      if (f) throw new Error(`DeleteMessage of ${res.Failed!.length} compaction message(s) on ${this.queueUrl} failed: ${f.Code} ${f.Message ?? ''}`.trim())
    }
  }

  async enqueue(jobs: CompactionJob[]): Promise<void> {
    for (let i = 0; i < jobs.length; i += 10) {
      let pending = jobs.slice(i, i + 10).map((job, j) => ({
        Id: String(j),
        MessageBody: encodeJob(job),
        MessageGroupId: messageGroupId(job, this.opts.oneGroup),
        MessageDeduplicationId: deduplicationId(job),
      }))
      for (let attempt = 0; pending.length > 0; attempt++) {
        const res = await this.client.send(new SendMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: pending }))
        const failed = new Set((res.Failed ?? []).map((f) => f.Id))
        if (failed.size === 0) break
        if (attempt >= 4) {
          const f = res.Failed![0]
          throw new Error(`enqueue of ${failed.size} compaction job(s) to ${this.queueUrl} failed: ${f.Code} ${f.Message ?? ''}`.trim())
        }
        pending = pending.filter((e) => failed.has(e.Id))
        await new Promise((r) => setTimeout(r, 50 * 2 ** attempt))
      }
    }
  }
}

/** In-memory queue for library users and tests that run no queue. */
export class MemoryJobQueue implements JobQueue {
  readonly jobs: CompactionJob[] = []
  readonly givenBack: GiveBack[] = []
  readonly discarded: string[] = []
  async enqueue(jobs: CompactionJob[]): Promise<void> {
    this.jobs.push(...jobs)
  }
  async giveBack(messages: GiveBack[]): Promise<void> {
    this.givenBack.push(...messages)
  }
  async discard(receiptHandles: string[]): Promise<void> {
    this.discarded.push(...receiptHandles)
  }
}
