// What the committer function does with one invocation, independent of Lambda: take the
// batch it was invoked with, drain the commit queue beyond it (an SQS event-source batch
// holds at most 10 messages, too few per snapshot when a thousand buckets compact at once),
// fold every message into as few snapshots as it can (batching-committer.ts), write each
// settled message's receipt, and only then let the queue forget it.
//
// Rounds: while the caller allows (moreRounds) and the queue has more, the invocation drains
// and folds again as soon as a snapshot has landed, while the previous round's receipts and
// deletions are still being written. A snapshot then waits for the drain and the fold of the
// messages before it, not also for hundreds of receipt PUTs; a sender still learns its
// outcome only from its receipt.
//
// A message is settled when it landed, was a duplicate of one that landed, or conflicts (a
// compaction whose inputs are gone: it can never land, and its receipt says so, so the
// compactor redoes the job at once instead of waiting for a DLQ). Anything else (a store
// failure, an unreadable spilled body) is not settled: a batch message is reported back to
// the event source, a drained one is made visible again, and a redelivery is recognised if
// it landed after all. Receipts are written before any deletion, so a crash at any step
// leaves every message either on the queue or with its receipt written.

import pLimit from 'p-limit'
import { StrataInputError } from '../types.ts'
import { type BatchingCommitter, type FoldInput, type FoldOutcome } from './batching-committer.ts'
import { parseCommitMessageBody } from './commit-message.ts'
import type { DrainableCommitQueue, QueuedCommitMessage } from './commit-queue.ts'
import { commitKeyOf } from './landed.ts'
import { type CommitReceipt, writeReceipt } from './receipts.ts'

export interface InvokedMessage {
  id: string
  body: string
  /** lets the committer give an unsettled message back at once instead of after its visibility timeout */
  receiptHandle?: string
}

export interface CommitServiceOptions {
  /** the table this committer serves; a message naming another is refused */
  tableName: string
  /** drain beyond the invoked batch, up to `max` messages in all */
  drain?: { queue: DrainableCommitQueue; max: number }
  /** test hook: after the fold, before receipts (a crash here loses nothing) */
  afterFold?: () => Promise<void> | void
  /** test hook: after receipts, before drained messages are deleted */
  afterReceipts?: () => Promise<void> | void
  /**
   * Asked after each round (drain, fold, then receipts and deletions in the background):
   * true to drain and fold again while the last round's receipts are still being written.
   * Rounds end when the drain finds nothing. Default: one round.
   */
  moreRounds?: () => boolean
}

export interface CommitServiceResult {
  /** ids of invoked messages not settled (the partial batch response) */
  failedIds: string[]
  received: number
  drained: number
  landed: number
  duplicates: number
  conflicts: number
  failed: number
  snapshots: number[]
  /** drain-and-fold rounds the invocation ran */
  rounds: number
  retries: number
  replans: number
  errors: { id: string; error: string; conflict: boolean }[]
}

interface Entry {
  id: string
  drained?: QueuedCommitMessage
  input?: FoldInput
  identity?: string
  outcome?: FoldOutcome
  settled?: boolean
}

/** ReceiveMessage calls in flight while draining */
const DRAIN_RECEIVES_AT_ONCE = 8

export async function commitFromQueue(committer: BatchingCommitter, invoked: InvokedMessage[], opts: CommitServiceOptions): Promise<CommitServiceResult> {
  const total: CommitServiceResult = { failedIds: [], received: 0, drained: 0, landed: 0, duplicates: 0, conflicts: 0, failed: 0, snapshots: [], rounds: 0, retries: 0, replans: 0, errors: [] }
  const invokedHandles = new Map(invoked.map((m) => [m.id, m.receiptHandle]))
  // one pool for every round's receipts, leaving a quarter of the store's requests to the
  // next round's fold: its reads are on the critical path, the receipts only on their senders'
  const ioMax = committer.table.view.options.ioMaxConcurrentRequests
  const receiptSlot = pLimit(Math.max(1, Math.floor((ioMax * 3) / 4)))
  const settling: Promise<void>[] = []
  let settleError: unknown
  let entries: Entry[] = invoked.map((m) => ({ id: m.id, ...parse(m.body, opts.tableName) }))
  try {
    for (;;) {
      if (opts.drain) total.drained += await drainInto(entries, opts.drain, opts.tableName)
      if (entries.length === 0) break
      const folding = entries.filter((e) => e.input)
      const res = folding.length ? await committer.commit(folding.map((e) => e.input!)) : null
      res?.outcomes.forEach((o, i) => (folding[i].outcome = o))
      await opts.afterFold?.()
      total.received += entries.length
      total.rounds++
      if (res) {
        total.snapshots.push(...res.snapshots.map((x) => x.id))
        total.retries += res.retries
        total.replans += res.replans
      }
      // the round's receipts and deletions go on while the next round drains and folds
      const round = entries
      settling.push(
        settle(committer, round, folding, invokedHandles, receiptSlot, opts, total).catch((e) => {
          settleError ??= e
        }),
      )
      if (!opts.drain || settleError !== undefined || !(opts.moreRounds?.() ?? false)) break
      entries = []
    }
  } finally {
    // every round started is settled (or has failed) before the invocation returns or fails
    await Promise.all(settling)
    // the LATEST rewrites went out beside the receipts; done before the instance may freeze
    await committer.table.snapshots.settleHints()
  }
  if (settleError !== undefined) throw settleError
  return total
}

/** Receives beyond what `entries` holds, up to `drain.max` in all, until the queue has none; returns how many. */
async function drainInto(entries: Entry[], drain: NonNullable<CommitServiceOptions['drain']>, tableName: string): Promise<number> {
  let drained = 0
  // several receives in flight at once: one at a time, a fold of hundreds of messages
  // would spend a round trip per ten of them before it could start
  while (entries.length < drain.max) {
    const room = drain.max - entries.length
    const calls = Math.min(DRAIN_RECEIVES_AT_ONCE, Math.ceil(room / 10))
    const got = (await Promise.all(Array.from({ length: calls }, (_, k) => drain.queue.receive(Math.min(10, room - 10 * k))))).flat()
    if (got.length === 0) break
    drained += got.length
    for (const m of got) entries.push({ id: m.messageId, drained: m, ...parse(m.body, tableName) })
  }
  return drained
}

/**
 * One round's aftermath: receipts first, then deletions, so a crash in between redelivers
 * messages whose receipts exist (recognised as landed). Unsettled messages are given back.
 */
async function settle(
  committer: BatchingCommitter,
  entries: Entry[],
  folding: Entry[],
  invokedHandles: Map<string, string | undefined>,
  receiptSlot: ReturnType<typeof pLimit>,
  opts: CommitServiceOptions,
  total: CommitServiceResult,
): Promise<void> {
  const errors = total.errors
  for (const e of entries) if (e.outcome?.status === 'failed' && !folding.includes(e)) errors.push({ id: e.id, error: e.outcome.error.message, conflict: false })
  const toSettle = entries.filter((e) => e.outcome && (e.outcome.status !== 'failed' || e.outcome.conflict))
  await Promise.all(
    toSettle.map((e) =>
      receiptSlot(async () => {
        const o = e.outcome!
        const receipt: CommitReceipt = o.status === 'failed' ? { status: 'conflict', error: o.error.message } : { status: o.status, snapshotId: o.snapshotId }
        try {
          await writeReceipt(committer.table.store, e.identity!, receipt)
          e.settled = true
        } catch (err) {
          errors.push({ id: e.id, error: `receipt not written: ${(err as Error).message}`, conflict: false })
        }
      }),
    ),
  )
  for (const e of folding) if (e.outcome?.status === 'failed') errors.push({ id: e.id, error: e.outcome.error.message, conflict: e.outcome.conflict })
  await opts.afterReceipts?.()
  const drainedSettled = entries.filter((e) => e.drained && e.settled).map((e) => e.drained!)
  // not settled: given back at once (the invoked ones are also named in the partial batch
  // response, so the event source does not delete them), rather than after the visibility
  // timeout, which would hold their senders that long
  const giveBack = entries
    .filter((e) => !e.settled && (e.drained || invokedHandles.get(e.id)))
    .map((e) => e.drained ?? { messageId: e.id, body: '', receiptHandle: invokedHandles.get(e.id)! })
  if (opts.drain && drainedSettled.length) {
    // a settled message not deleted comes back and is recognised as landed: not a failure
    await opts.drain.queue.delete(drainedSettled).catch((err) => errors.push({ id: '', error: (err as Error).message, conflict: false }))
  }
  if (opts.drain && giveBack.length) await opts.drain.queue.release(giveBack).catch(() => undefined)
  const count = (f: (e: Entry) => boolean) => entries.filter(f).length
  total.failedIds.push(...entries.filter((e) => !e.drained && !e.settled).map((e) => e.id))
  total.landed += count((e) => e.outcome?.status === 'landed')
  total.duplicates += count((e) => e.outcome?.status === 'duplicate')
  total.conflicts += count((e) => e.outcome?.status === 'failed' && e.outcome.conflict)
  total.failed += count((e) => !e.settled)
}

function parse(body: string, tableName: string): Pick<Entry, 'input' | 'identity' | 'outcome'> {
  try {
    const m = parseCommitMessageBody(body)
    const target = m.inline ? m.message.table : m.identity.table
    if (target !== undefined && target !== tableName) throw new StrataInputError(`commit message names table '${target}', this committer serves '${tableName}'`)
    return { input: m, identity: commitKeyOf(m.inline ? m.message : m.identity) }
  } catch (e) {
    return { outcome: { status: 'failed', error: e as Error, conflict: false } }
  }
}
