// The SQS event-source mapping, emulated: receive a batch, invoke the function with a
// Lambda-shaped SQS event, delete what succeeded. Semantics follow AWS's mapping
// (https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html):
// - success deletes every record not named in `batchItemFailures`; a response naming an id
//   outside the batch, or with an empty/missing id, or of the wrong shape fails the batch;
// - a function error, timeout or crash deletes nothing: the messages reappear after the
//   queue's visibility timeout, and the queue's RedrivePolicy moves them to its DLQ after
//   maxReceiveCount receives (SQS's job, not the poller's);
// - concurrency is capped by `maxConcurrency`, every invocation having its own receive;
// - a function's reserved concurrency below that cap is not the poller's business on AWS:
//   an invocation past it is throttled, and the mapping retries it with a growing pause
//   while its batch stays in flight (its FIFO groups blocked), until the batch's
//   visibility timeout returns the messages to the queue with one more receive counted.
//   `reservedConcurrency` models exactly that, so a mapping that relies on throttling
//   shows its cost here.
//   On a FIFO queue SQS hands out a group's next message only once the previous one is
//   deleted or visible again, so per-group serialization comes from the queue, never from
//   here, and parallelism reaches min(active groups, cap).
import {
  DeleteMessageBatchCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  type Message,
  type SQSClient,
} from '@aws-sdk/client-sqs'
import type { SQSRecord } from 'aws-lambda'
import { StrataInputError } from '../../lib/errors.ts'
import type { ExecutionEnvironmentPool, InvokeResult } from './execution-environment.ts'
import { sqsEventOf, sqsRecordOf } from './sqs-event.ts'

export interface InvocationInfo {
  records: SQSRecord[]
  result: InvokeResult
  startedAt: number
  endedAt: number
  /** message ids deleted after the invocation */
  deleted: string[]
}

export interface PollerOptions {
  sqs: SQSClient
  queueUrl: string
  region: string
  pool: ExecutionEnvironmentPool
  /** skips the GetQueueAttributes call that finds it */
  queueArn?: string
  /** 1..10, default 10; up to 10000 with a batching window (standard queues, as AWS allows) */
  batchSize?: number
  /**
   * MaximumBatchingWindowInSeconds, in ms: after the first message, keep receiving until the
   * batch is full or the window has passed. Lets a writer commit hundreds of records at
   * once instead of ten.
   */
  maxBatchingWindowMs?: number
  /** concurrent invocations at most (event-source maxConcurrency); null = unbounded; default null */
  maxConcurrency?: number | null
  /** the function's reserved concurrency: invocations past it are throttled (above); null = none; default null */
  reservedConcurrency?: number | null
  /** long-poll wait, 0..20 s, default 1 */
  waitTimeSeconds?: number
  /** concurrent ReceiveMessage calls at most, default 5 (the pollers an AWS mapping starts with); never above maxConcurrency */
  maxReceives?: number
  /** default true */
  reportBatchItemFailures?: boolean
  /** called after each invocation, once its deletes are done */
  onInvocation?: (info: InvocationInfo) => void
  /** receive/delete failures and exceptions from onInvocation; default: console.warn */
  onError?: (error: unknown) => void
}

export interface PollerStats {
  invocations: number
  /** invocations after which every record was deleted */
  succeeded: number
  /** records left on the queue by an invocation (function error, crash, timeout, reported or whole-batch failure) */
  failedRecords: number
  /** invocations whose execution environment was destroyed (crash or timeout) */
  crashes: number
  /** invocation attempts refused by the reserved concurrency (each retried after a pause) */
  throttles: number
  /** batches whose throttled retries outlasted their visibility timeout (their messages went back to the queue) */
  throttledBatchesReturned: number
}

/** First pause after a throttled invocation; it doubles up to THROTTLE_MAX_PAUSE_MS. */
const THROTTLE_FIRST_PAUSE_MS = 1000
const THROTTLE_MAX_PAUSE_MS = 8000

/** After a failed receive, wait before trying again so an unreachable queue is not hammered. */
const RECEIVE_RETRY_MS = 200
/** With short polling (waitTimeSeconds 0) an empty queue would otherwise be polled in a tight loop. */
const EMPTY_SHORT_POLL_PAUSE_MS = 50

export class EventSourcePoller {
  readonly stats: PollerStats = { invocations: 0, succeeded: 0, failedRecords: 0, crashes: 0, throttles: 0, throttledBatchesReturned: 0 }
  private readonly opts: PollerOptions
  private readonly batchSize: number
  private readonly windowMs: number
  private readonly cap: number
  private readonly maxReceives: number
  private readonly waitTimeSeconds: number
  private readonly reportBatchItemFailures: boolean
  private readonly onError: (error: unknown) => void
  private queueArn: string | undefined
  private visibilityTimeoutMs: number | undefined
  private readonly reserved: number
  /** invocations running in the function (the reserved concurrency counts these) */
  private executing = 0
  private running = false
  private receiving = 0
  private invoking = 0
  private readonly tasks = new Set<Promise<void>>()

  constructor(opts: PollerOptions) {
    const batchSize = opts.batchSize ?? 10
    const windowMs = opts.maxBatchingWindowMs ?? 0
    const maxBatch = windowMs > 0 ? 10000 : 10
    if (!(Number.isInteger(batchSize) && batchSize >= 1 && batchSize <= maxBatch)) {
      throw new StrataInputError(`batchSize: expected an integer in [1, ${maxBatch}]${windowMs > 0 ? '' : ' (more needs maxBatchingWindowMs)'}, got ${opts.batchSize}`)
    }
    if (!(Number.isFinite(windowMs) && windowMs >= 0 && windowMs <= 300_000)) {
      throw new StrataInputError(`maxBatchingWindowMs: expected a number of ms in [0, 300000], got ${opts.maxBatchingWindowMs}`)
    }
    this.windowMs = windowMs
    const cap = opts.maxConcurrency ?? null
    if (cap !== null && !(Number.isInteger(cap) && cap >= 1)) {
      throw new StrataInputError(`maxConcurrency: expected null or an integer >= 1, got ${opts.maxConcurrency}`)
    }
    const wait = opts.waitTimeSeconds ?? 1
    if (!(Number.isInteger(wait) && wait >= 0 && wait <= 20)) {
      throw new StrataInputError(`waitTimeSeconds: expected an integer in [0, 20], got ${opts.waitTimeSeconds}`)
    }
    const maxReceives = opts.maxReceives ?? 5
    if (!(Number.isInteger(maxReceives) && maxReceives >= 1)) {
      throw new StrataInputError(`maxReceives: expected an integer >= 1, got ${opts.maxReceives}`)
    }
    this.opts = opts
    this.batchSize = batchSize
    this.cap = cap ?? Infinity
    this.maxReceives = maxReceives
    this.waitTimeSeconds = wait
    this.reportBatchItemFailures = opts.reportBatchItemFailures ?? true
    this.onError = opts.onError ?? ((error) => console.warn(`event-source poller for ${opts.queueUrl}:`, error))
    this.queueArn = opts.queueArn
    const reserved = opts.reservedConcurrency ?? null
    if (reserved !== null && !(Number.isInteger(reserved) && reserved >= 1)) {
      throw new StrataInputError(`reservedConcurrency: expected null or an integer >= 1, got ${opts.reservedConcurrency}`)
    }
    this.reserved = reserved ?? Infinity
  }

  /** invocations running now */
  get inFlight(): number {
    return this.invoking
  }

  start(): void {
    if (this.running) return
    this.running = true
    this.pump()
  }

  /** Stops receiving and waits for receives and invocations in flight (a batch received meanwhile is still processed). */
  async stop(): Promise<void> {
    this.running = false
    while (this.tasks.size > 0) await Promise.allSettled([...this.tasks])
  }

  /**
   * Starts receives while the cap allows. A receive counts against the cap like the
   * invocation it may turn into, so no batch is ever taken off the queue without a free slot
   * to run it (it would sit invisible, blocking its FIFO groups, until a slot freed).
   */
  private pump(): void {
    while (this.running && this.receiving < this.maxReceives && this.receiving + this.invoking < this.cap) {
      this.receiving++
      this.track(this.receiveAndInvoke())
    }
  }

  private track(task: Promise<void>): void {
    this.tasks.add(task)
    void task.finally(() => this.tasks.delete(task))
  }

  private async receiveAndInvoke(): Promise<void> {
    let messages: Message[]
    try {
      messages = await this.receive()
    } catch (error) {
      this.onError(error)
      await sleep(RECEIVE_RETRY_MS)
      this.receiving--
      this.pump()
      return
    }
    if (messages.length === 0) {
      if (this.waitTimeSeconds === 0) await sleep(EMPTY_SHORT_POLL_PAUSE_MS)
      this.receiving--
      this.pump()
      return
    }
    // Hand the slot from the receive to the invocation in one step, so pump() cannot overbook.
    this.receiving--
    this.invoking++
    // The receive slot is free again: with room under the cap, the next batch is fetched
    // while this one runs.
    this.pump()
    try {
      await this.invoke(messages)
    } catch (error) {
      this.onError(error)
    } finally {
      this.invoking--
      this.pump()
    }
  }

  private async receive(): Promise<Message[]> {
    const first = await this.receiveOnce(Math.min(10, this.batchSize), this.waitTimeSeconds)
    if (this.windowMs === 0 || first.length === 0 || first.length >= this.batchSize) return first
    const all = [...first]
    const deadline = Date.now() + this.windowMs
    while (all.length < this.batchSize && Date.now() < deadline && this.running) {
      const more = await this.receiveOnce(Math.min(10, this.batchSize - all.length), 0)
      if (more.length === 0) await sleep(Math.min(50, Math.max(0, deadline - Date.now())))
      all.push(...more)
    }
    return all
  }

  private async receiveOnce(max: number, waitTimeSeconds: number): Promise<Message[]> {
    const { sqs, queueUrl } = this.opts
    if (this.queueArn === undefined || (this.reserved !== Infinity && this.visibilityTimeoutMs === undefined)) {
      const attributes = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['QueueArn', 'VisibilityTimeout'] }))
      const arn = attributes.Attributes?.QueueArn
      if (arn === undefined) throw new Error(`GetQueueAttributes for ${queueUrl} returned no QueueArn`)
      this.queueArn = arn
      this.visibilityTimeoutMs = Number(attributes.Attributes?.VisibilityTimeout ?? 30) * 1000
    }
    const response = await sqs.send(
      new ReceiveMessageCommand({
        QueueUrl: queueUrl,
        MaxNumberOfMessages: max,
        WaitTimeSeconds: waitTimeSeconds,
        AttributeNames: ['All'],
        MessageSystemAttributeNames: ['All'],
        MessageAttributeNames: ['All'],
      }),
    )
    return response.Messages ?? []
  }

  private async invoke(messages: Message[]): Promise<void> {
    const receivedAt = Date.now()
    const records = messages.map((m) => sqsRecordOf(m, this.queueArn!, this.opts.region))
    // throttled past the reserved concurrency: retried with a growing pause while the batch
    // is in flight; once its visibility timeout has passed its messages are back on the queue
    for (let pause = THROTTLE_FIRST_PAUSE_MS; this.executing >= this.reserved; pause = Math.min(THROTTLE_MAX_PAUSE_MS, pause * 2)) {
      this.stats.throttles++
      if (Date.now() + pause - receivedAt >= (this.visibilityTimeoutMs ?? 30_000)) {
        this.stats.throttledBatchesReturned++
        return
      }
      await sleep(pause)
    }
    this.executing++
    const startedAt = Date.now()
    let result: InvokeResult
    try {
      result = await this.opts.pool.invoke(sqsEventOf(records))
    } finally {
      this.executing--
    }
    const endedAt = Date.now()
    this.stats.invocations++
    let keep: Set<string>
    if (!result.ok) {
      if (result.crashed) this.stats.crashes++
      keep = new Set(records.map((r) => r.messageId))
    } else if (!this.reportBatchItemFailures) {
      keep = new Set()
    } else {
      keep = failedIdsOf(result.value, records) ?? new Set(records.map((r) => r.messageId))
    }
    const toDelete = records.filter((r) => !keep.has(r.messageId))
    const deleted = await this.delete(toDelete)
    this.stats.failedRecords += records.length - toDelete.length
    if (keep.size === 0 && deleted.length === records.length) this.stats.succeeded++
    try {
      this.opts.onInvocation?.({ records, result, startedAt, endedAt, deleted })
    } catch (error) {
      this.onError(error)
    }
  }

  /** Deletes the records (DeleteMessageBatch takes 10 at a time), returning the ids SQS confirmed. */
  private async delete(records: SQSRecord[]): Promise<string[]> {
    const deleted: string[] = []
    for (let i = 0; i < records.length; i += 10) {
      const chunk = records.slice(i, i + 10)
      try {
        const response = await this.opts.sqs.send(
          new DeleteMessageBatchCommand({
            QueueUrl: this.opts.queueUrl,
            Entries: chunk.map((r, j) => ({ Id: `m${j}`, ReceiptHandle: r.receiptHandle })),
          }),
        )
        for (const failure of response.Failed ?? []) {
          this.onError(new Error(`DeleteMessageBatch entry ${failure.Id} failed: ${failure.Code}: ${failure.Message ?? ''}`))
        }
        const ok = new Set((response.Successful ?? []).map((s) => s.Id))
        deleted.push(...chunk.filter((_, j) => ok.has(`m${j}`)).map((r) => r.messageId))
      } catch (error) {
        this.onError(error)
      }
    }
    return deleted
  }
}

/**
 * The message ids a partial batch response reports as failed, or null when the response
 * fails the whole batch. AWS treats a null/empty response, or a null/empty
 * `batchItemFailures`, as complete success, and a malformed response, an entry without a
 * non-empty string `itemIdentifier`, or an id not in the batch, as complete failure.
 */
export function failedIdsOf(response: unknown, records: SQSRecord[]): Set<string> | null {
  if (response === null || response === undefined || response === '') return new Set()
  if (typeof response !== 'object' || Array.isArray(response)) return null
  const failures = (response as { batchItemFailures?: unknown }).batchItemFailures
  if (failures === null || failures === undefined) return new Set()
  if (!Array.isArray(failures)) return null
  const inBatch = new Set(records.map((r) => r.messageId))
  const failed = new Set<string>()
  for (const failure of failures) {
    if (typeof failure !== 'object' || failure === null) return null
    const id = (failure as { itemIdentifier?: unknown }).itemIdentifier
    if (typeof id !== 'string' || id === '' || !inBatch.has(id)) return null
    failed.add(id)
  }
  return failed
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}
