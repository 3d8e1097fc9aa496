// SQS as the simulation models it (docs/reliability.md "The deterministic simulation"), and
// the queue ports of lib/ over it. What is modelled, from SQS's documentation:
// - FIFO: a message group's messages are delivered in order, and none while an earlier one
//   of the group is in flight or waiting out a visibility change; a receive takes
//   consecutive messages of each eligible group, up to ten. Standard (the ingest queue):
//   any visible messages, in any order, so a redelivered message comes back beside others.
// - Deduplication: a FIFO send whose deduplication id was sent in the last five minutes is
//   accepted and dropped.
// - Visibility: a received message is invisible for the queue's timeout, then visible
//   again with its receive count raised; past maxReceiveCount it moves to the dead-letter
//   queue instead of being delivered. Each receive hands out a new receipt handle; a delete
//   with an older one succeeds and deletes nothing (as SQS documents for FIFO queues).
// - Every call is a request of the world (latency, faults): a lost reply of a send leaves
//   the message queued; a lost reply of a receive leaves its messages in flight, unseen.
// The adapters retry a failed call up to three times with backoff, as the AWS SDK does.

import { randomUUID } from 'node:crypto'
import type { QueuedCommitMessage, CommitQueue, DrainableCommitQueue } from '../../lib/commit/commit-queue.ts'
import { commitGroupId } from '../../lib/commit/commit-queue.ts'
import { type CompactionJob, type GiveBack, type JobQueue, deduplicationId, encodeJob, messageGroupId } from '../../lib/jobs/compaction-job.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import type { Random } from './random.ts'
import type { World } from './world.ts'

export interface SimMessage {
  id: string
  body: string
  groupId: string
  sentAt: number
  receiveCount: number
  firstReceivedAt: number | null
  /** invisible until then (in flight, or given back with a delay) */
  visibleAt: number
  /** the handle of the latest receive */
  handle: string | null
}

/** A message as a receive hands it out. */
export interface Received {
  messageId: string
  body: string
  receiptHandle: string
  groupId: string
  receiveCount: number
  firstReceivedAt: number
}

export interface SimQueueOptions {
  fifo: boolean
  visibilityMs: number
  maxReceiveCount: number
}

const DEDUP_WINDOW_MS = 5 * 60_000

export class SimQueue {
  /** in send order */
  messages: SimMessage[] = []
  readonly deadLetters: SimMessage[] = []
  private readonly dedup = new Map<string, number>()
  private seq = 0
  /** deduplicated sends and deletes with a stale handle, for the report */
  readonly counts = { sent: 0, deduplicated: 0, received: 0, deleted: 0, staleDeletes: 0 }

  constructor(
    readonly name: string,
    private readonly world: World,
    private readonly rng: Random,
    readonly opts: SimQueueOptions,
  ) {}

  private nowMs(): number {
    return this.world.now
  }

  // --- the service's own state changes, applied when a request completes ----------------

  private doSend(body: string, groupId: string, dedupId: string | null): string | null {
    const now = this.nowMs()
    if (this.opts.fifo && dedupId !== null) {
      const at = this.dedup.get(dedupId)
      if (at !== undefined && now - at < DEDUP_WINDOW_MS) {
        this.counts.deduplicated++
        return null
      }
      this.dedup.set(dedupId, now)
    }
    this.counts.sent++
    const id = `${this.name}-m${++this.seq}`
    this.messages.push({ id, body, groupId: this.opts.fifo ? groupId : id, sentAt: now, receiveCount: 0, firstReceivedAt: null, visibleAt: now, handle: null })
    return id
  }

  private doReceive(max: number): Received[] {
    const now = this.nowMs()
    const eligible: SimMessage[] = []
    if (this.opts.fifo) {
      const blocked = new Set<string>()
      const taken = new Map<string, number>()
      for (const m of this.messages) {
        if (blocked.has(m.groupId)) continue
        if (m.visibleAt > now) {
          blocked.add(m.groupId)
          continue
        }
        eligible.push(m)
        taken.set(m.groupId, (taken.get(m.groupId) ?? 0) + 1)
        if (eligible.length >= max) break
      }
    } else {
      const visible = this.messages.filter((m) => m.visibleAt <= now)
      // any order: a standard queue regroups redelivered messages freely
      for (let i = visible.length - 1; i > 0; i--) {
        const j = this.rng.int(0, i)
        ;[visible[i], visible[j]] = [visible[j], visible[i]]
      }
      eligible.push(...visible.slice(0, max))
    }
    const out: Received[] = []
    for (const m of eligible) {
      if (m.receiveCount >= this.opts.maxReceiveCount) {
        this.messages = this.messages.filter((x) => x !== m)
        this.deadLetters.push(m)
        this.world.note(`${this.name} dead-letter ${m.id}`)
        continue
      }
      m.receiveCount++
      m.firstReceivedAt ??= now
      m.visibleAt = now + this.opts.visibilityMs
      m.handle = `${m.id}#${m.receiveCount}`
      this.counts.received++
      out.push({ messageId: m.id, body: m.body, receiptHandle: m.handle, groupId: m.groupId, receiveCount: m.receiveCount, firstReceivedAt: m.firstReceivedAt })
    }
    return out
  }

  private current(handle: string): SimMessage | undefined {
    return this.messages.find((m) => m.handle === handle)
  }

  private doDelete(handle: string): void {
    const m = this.current(handle)
    if (!m) {
      this.counts.staleDeletes++
      return
    }
    this.counts.deleted++
    this.messages = this.messages.filter((x) => x !== m)
  }

  private doChangeVisibility(handle: string, ms: number): void {
    const m = this.current(handle)
    // SQS refuses a change for a message that is not in flight under this handle
    if (!m || m.visibleAt <= this.nowMs()) throw new Error(`${this.name}: ChangeMessageVisibility: receipt handle ${handle} is not in flight (MessageNotInflight)`)
    m.visibleAt = this.nowMs() + ms
  }

  // --- requests -------------------------------------------------------------------------

  /** The message's id, or null when deduplicated. */
  send(body: string, groupId: string, dedupId: string | null): Promise<string | null> {
    return sdk(() => this.world.request(`sqs ${this.name} send`, async () => this.doSend(body, groupId, dedupId), { mutating: true }))
  }

  receive(max: number): Promise<Received[]> {
    return sdk(() => this.world.request(`sqs ${this.name} receive`, async () => this.doReceive(max), { mutating: true }))
  }

  delete(handles: string[]): Promise<void> {
    return sdk(() => this.world.request(`sqs ${this.name} delete`, async () => handles.forEach((h) => this.doDelete(h)), { mutating: true }))
  }

  changeVisibility(handles: string[], ms: number): Promise<void> {
    return sdk(() =>
      this.world.request(`sqs ${this.name} change-visibility`, async () => {
        const failed: string[] = []
        for (const h of handles) {
          try {
            this.doChangeVisibility(h, ms)
          } catch {
            failed.push(h)
          }
        }
        if (failed.length) throw new Error(`${this.name}: ChangeMessageVisibility of ${failed.length} message(s) failed (MessageNotInflight)`)
      }, { mutating: true }),
    )
  }

  /** Messages per group (visible, in flight or delayed): what "jobs per bucket" counts. */
  depthByGroup(): Map<string, number> {
    const out = new Map<string, number>()
    for (const m of this.messages) out.set(m.groupId, (out.get(m.groupId) ?? 0) + 1)
    return out
  }
}

/** The AWS SDK's standard retry: three attempts, backoff with jitter, for errors a service may answer transiently. */
async function sdk<T>(call: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call()
    } catch (e) {
      if (attempt >= 3 || (e as Error).name !== 'SlowDown') throw e
      await sleep(Math.floor(Math.random() * 100 * 2 ** attempt))
    }
  }
}

/** lib's compaction-job port over a simulated FIFO queue, as SqsJobQueue is over SQS. */
export class SimJobQueue implements JobQueue {
  constructor(
    readonly queue: SimQueue,
    private readonly oneGroup: boolean,
  ) {}

  async enqueue(jobs: CompactionJob[]): Promise<void> {
    for (const job of jobs) await this.queue.send(encodeJob(job), messageGroupId(job, this.oneGroup), deduplicationId(job))
  }

  async giveBack(messages: GiveBack[]): Promise<void> {
    for (const m of messages) await this.queue.changeVisibility([m.receiptHandle], Math.max(0, Math.round(m.delaySeconds)) * 1000)
  }

  async discard(receiptHandles: string[]): Promise<void> {
    await this.queue.delete(receiptHandles)
  }
}

/** lib's commit-queue ports over a simulated FIFO queue, as SqsCommitQueue is over SQS. */
export class SimCommitQueue implements CommitQueue, DrainableCommitQueue {
  constructor(readonly queue: SimQueue) {}

  async send(body: string, identity: string): Promise<void> {
    // one deduplication id per send, kept across the SDK's retries of it
    await this.queue.send(body, commitGroupId(identity), randomUUID())
  }

  async receive(max: number): Promise<QueuedCommitMessage[]> {
    return (await this.queue.receive(Math.min(10, Math.max(1, max)))).map((m) => ({ messageId: m.messageId, body: m.body, receiptHandle: m.receiptHandle }))
  }

  async delete(messages: QueuedCommitMessage[]): Promise<void> {
    await this.queue.delete(messages.map((m) => m.receiptHandle))
  }

  async release(messages: QueuedCommitMessage[]): Promise<void> {
    await this.queue.changeVisibility(messages.map((m) => m.receiptHandle), 0).catch(() => undefined)
  }
}
