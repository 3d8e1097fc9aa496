// What the committer function does with one invocation, independent of Lambda: take the
// batch it was invoked with, drain the commit queue beyond it (an SQS event-source batch
// holds at most 10 messages, too few per snapshot when a thousand buckets compact at once),
// fold every message into as few snapshots as it can (batching-committer.ts), and only then
// let the queue forget the settled messages.
//
// Rounds: while the caller allows (moreRounds), the invocation keeps receiving while a round
// folds, and folds what it received as soon as that round's snapshot has landed, without
// waiting for a receive still in flight (its messages go to the round after); the round's
// deletions go on meanwhile. A snapshot then waits for the fold of the messages before it,
// not for the receives that collected it nor for the deletions of the last round.
//
// The committer lease (committer-lease.ts), when given, keeps one invocation folding: one
// that finds another's lease forwards its batch to the queue as new messages and folds
// nothing. Forwarding has a limit (docs/design.md "The committer lease and clocks"): each
// copy counts its forwards, and a batch holding a message forwarded MAX_FORWARDS times is
// folded, the lease taken over.
//
// A message is settled when it landed, was a duplicate of one that landed, or conflicts (a
// compaction whose inputs are gone: it can never land). Its sender learns a landing from
// the snapshot chain itself (queued-committer.ts), so nothing is written per landed
// message; a conflict gets a receipt object (receipts.ts), so its compactor redoes the job at
// once instead of waiting for a DLQ. Anything else (a store failure, an unreadable spilled
// body) is not settled: a batch message is reported back to the event source, a drained
// one is made visible again, and a redelivery is recognised if it landed after all. The
// snapshot (or the conflict receipt) exists before any deletion, so a crash at any step
// leaves every message either on the queue or with its outcome readable.

import pLimit from 'p-limit'
import { StrataInputError } from '../errors.ts'
import { type BatchingCommitter, type FoldInput, type FoldOutcome } from './batching-committer.ts'
import { forwardedBody, forwardsOf, parseCommitMessageBody } from './commit-message.ts'
import type { CommitQueue, DrainableCommitQueue, QueuedCommitMessage } from './commit-queue.ts'
import type { CommitterLease, LeaseOverride } from './committer-lease.ts'
import { commitKeyOf } from './landed.ts'
import { type CommitEvent, type CommitFeed, commitEventOf, publishQuietly } from './commit-feed.ts'
import { type CommitReceipt, writeReceipt } from './receipts.ts'
import { setTimeout as sleep } from 'node:timers/promises'

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
  /** test hook: after a round's conflict receipts, before its drained messages are deleted */
  afterReceipts?: () => Promise<void> | void
  /**
   * Asked after each round (fold, then receipts and deletions in the background): true to
   * fold again what arrived meanwhile while the last round's deletions are still going on;
   * its presence also lets a round receive the next one's messages while it folds. Rounds
   * end when nothing arrived. Default: one round.
   */
  moreRounds?: () => boolean
  /**
   * The committer lease (committer-lease.ts): held before folding and renewed at each later
   * round; when another invocation holds it, the invoked messages are handed to `forward`
   * (which sends them to the commit queue as new messages and returns the ids it could not)
   * and nothing is folded, unless one of them was forwarded MAX_FORWARDS times already (then
   * the lease is taken over and the batch folded); a renewal that finds another holder ends
   * the rounds. Absent: the invocation folds whatever else runs.
   */
  lease?: { lease: CommitterLease; forward: (messages: InvokedMessage[]) => Promise<string[]> }
  /**
   * The commit feed (commit-feed.ts): after each round that created snapshots, one event
   * naming them is published, beside the round's receipts and deletions; a failed publish is
   * handed to `onFailure` and counted, never failing or delaying the commit.
   */
  feed?: { feed: CommitFeed; onFailure: (error: Error, event: CommitEvent) => void }
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
  /** invoked messages forwarded to the lease's holder (then nothing was folded) */
  forwarded: number
  /** leases of other invocations this one took over before they expired (committer-lease.ts) */
  leaseOverrides: LeaseOverride[]
  retries: number
  replans: number
  errors: { id: string; error: string; conflict: boolean }[]
  /** commit-feed events published, and those that failed */
  feedPublished: number
  feedFailures: number
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

/** Pause before an invocation that found the committer lease held looks once more. */
const LEASE_RECHECK_MS = 20

/**
 * Forwards a message may have had: an invocation whose batch holds one forwarded this often
 * folds it, taking the lease over, instead of forwarding it again (docs/design.md "The
 * committer lease and clocks"). A forwarded copy starts its receive count again, so without
 * a limit a message that never reaches a folding committer would circulate for good.
 */
export const MAX_FORWARDS = 20


/**
 * What commitFromQueue folds with: a BatchingCommitter, or a wrapper that passes to one (the
 * committer function's fold seam, functions/shared/runtime.ts RuntimeSeams).
 */
export type Fold = Pick<BatchingCommitter, 'table' | 'commit'>

export async function commitFromQueue(committer: Fold, invoked: InvokedMessage[], opts: CommitServiceOptions): Promise<CommitServiceResult> {
  const total: CommitServiceResult = { failedIds: [], received: 0, drained: 0, landed: 0, duplicates: 0, conflicts: 0, failed: 0, snapshots: [], rounds: 0, forwarded: 0, leaseOverrides: [], retries: 0, replans: 0, errors: [], feedPublished: 0, feedFailures: 0 }
  // the lease is an optimisation: a store that cannot answer for it does not stop a fold
  const holdLease = () => (opts.lease ? opts.lease.lease.hold().catch(() => true) : Promise.resolve(true))
  // a holder gives the lease up as its rounds end: one look again after a short pause, so
  // that an invocation arriving as the other one ends folds instead of forwarding
  if (!(await holdLease()) && !(await sleep(LEASE_RECHECK_MS).then(holdLease))) {
    if (invoked.some((m) => forwardCount(m.body) >= MAX_FORWARDS)) {
      // forwarded often enough: whatever the holder is doing, this batch is folded now
      opts.lease!.lease.takeOver()
    } else {
      const notForwarded = await opts.lease!.forward(invoked)
      total.forwarded = invoked.length - notForwarded.length
      total.failedIds.push(...notForwarded)
      return total
    }
  }
  const invokedHandles = new Map(invoked.map((m) => [m.id, m.receiptHandle]))
  // one pool for every round's conflict receipts, leaving a quarter of the store's requests
  // to the next round's fold: its reads are on the critical path, the receipts only on their senders'
  const ioMax = committer.table.view.options.ioMaxConcurrentRequests
  const receiptSlot = pLimit(Math.max(1, Math.floor((ioMax * 3) / 4)))
  const settling: Promise<void>[] = []
  // commit-feed publishes: never rejected (publishQuietly), awaited before the invocation ends
  const publishing: Promise<void>[] = []
  let settleError: unknown
  let entries: Entry[] = invoked.map((m) => ({ id: m.id, ...parse(m.body, opts.tableName) }))
  // received while the last round folded, not folded yet: given back if the invocation stops.
  // One buffer for the invocation: a receive still in flight when its fold ended adds to it
  // later, and its messages go to the round after the next.
  const next: Entry[] = []
  // collections whose fold has ended but whose last receives may still be in flight
  const collections: Promise<number>[] = []
  const awaitCollections = async () => {
    for (const n of await Promise.all(collections.splice(0))) total.drained += n
  }
  try {
    if (opts.drain) total.drained += await drainInto(entries, opts.drain, opts.tableName)
    for (;;) {
      if (entries.length === 0) break
      // renewed beside every fold after the first (the lease was just taken for that one)
      const renewal = total.rounds > 0 ? holdLease() : Promise.resolve(true)
      const folding = entries.filter((e) => e.input)
      // the next round is collected while this one folds, so its receives are off the path
      // of the snapshot after this one
      let foldEnded!: () => void
      const foldEnd = new Promise<void>((r) => (foldEnded = r))
      if (opts.drain && (opts.moreRounds?.() ?? false)) collections.push(collectUntil(next, opts.drain, opts.tableName, foldEnd))
      let res: Awaited<ReturnType<BatchingCommitter['commit']>> | null
      try {
        res = folding.length ? await committer.commit(folding.map((e) => e.input!)) : null
      } finally {
        // the next round does not wait for the receive in flight: what it brings is folded
        // in the round after
        foldEnded()
      }
      res?.outcomes.forEach((o, i) => (folding[i].outcome = o))
      await opts.afterFold?.()
      total.received += entries.length
      total.rounds++
      if (res) {
        total.snapshots.push(...res.snapshots.map((x) => x.id))
        const event = opts.feed ? commitEventOf(opts.tableName, res.snapshots.map((x) => ({ id: x.id, kind: x.kind, commits: x.messages }))) : null
        if (event) {
          publishing.push(
            publishQuietly(opts.feed!.feed, event, opts.feed!.onFailure).then((ok) => {
              if (ok) total.feedPublished++
              else total.feedFailures++
            }),
          )
        }
        total.retries += res.retries
        total.replans += res.replans
      }
      // the round's receipts and deletions go on while the next round folds
      const round = entries
      settling.push(
        settle(committer, round, folding, invokedHandles, receiptSlot, opts, total).catch((e) => {
          settleError ??= e
        }),
      )
      // a store failure ends the rounds: its messages are given back, and folding them again
      // at once would only raise their receive counts towards the DLQ
      // and another invocation holding the lease ends them: it folds what arrives from now on
      const stillHolding = await renewal
      if (!opts.drain || settleError !== undefined || res?.interrupted || !stillHolding || !(opts.moreRounds?.() ?? false)) break
      entries = next.splice(0)
      if (entries.length === 0) {
        // nothing collected yet: what the receives in flight bring, else one more look before the invocation ends
        await awaitCollections()
        entries = next.splice(0)
        if (entries.length === 0) total.drained += await drainInto(entries, opts.drain, opts.tableName)
      }
    }
  } finally {
    // the last round's snapshot has landed (or it failed): the lease goes at once, for
    // whichever invocation comes next
    const releasing = opts.lease?.lease.release().catch(() => undefined)
    await awaitCollections()
    // collected for a round that will not run: visible again at once for the next committer
    const unfolded = next.filter((e) => e.drained).map((e) => e.drained!)
    if (unfolded.length && opts.drain) await opts.drain.queue.release(unfolded).catch(() => undefined)
    // every round started is settled (or has failed) before the invocation returns or fails
    await Promise.all(settling)
    await Promise.all(publishing)
    // the LATEST rewrites went out beside the deletions, and the Iceberg metadata of the
    // snapshots landed (a table with metadata.iceberg.storage): done before the instance may freeze
    await Promise.all([committer.table.snapshots.settleHints(), committer.table.committer.settle()])
    await releasing
  }
  if (settleError !== undefined) throw settleError
  total.leaseOverrides = [...(opts.lease?.lease.overrides ?? [])]
  return total
}

/** A body's forward count; 0 for one that cannot be read (it is not forwarded: forwardMessages). */
function forwardCount(body: string): number {
  try {
    return forwardsOf(body)
  } catch {
    return 0
  }
}

/**
 * Sends invoked messages to the commit queue as new messages, for the lease's holder to
 * fold, each with its forward count one higher (their receive counts start again; a crash
 * before the invocation returns leaves the originals to be redelivered, then recognised as
 * duplicates). Returns the ids not sent: those the queue refused, and unreadable bodies,
 * which a copy would keep from ever counting towards the DLQ (named failed, they come back
 * with a higher receive count, as from the holder's fold).
 */
export async function forwardMessages(queue: CommitQueue, messages: InvokedMessage[]): Promise<string[]> {
  const failed: string[] = []
  await Promise.all(
    messages.map(async (m) => {
      let identity: string
      let body: string
      try {
        const parsed = parseCommitMessageBody(m.body)
        identity = commitKeyOf(parsed.inline ? parsed.message : parsed.identity)
        body = forwardedBody(m.body)
      } catch {
        failed.push(m.id)
        return
      }
      try {
        await queue.send(body, identity)
      } catch {
        failed.push(m.id)
      }
    }),
  )
  return failed
}

/** Pause after a receive that found nothing while a fold runs, so an idle queue costs a few receives per fold. */
const COLLECT_IDLE_PAUSE_MS = 20

/**
 * Receives into `into` until `end` settles (the fold it overlaps has ended) or `into` holds
 * `drain.max` messages; returns how many. No receive starts after the fold has ended; those
 * in flight then still add their messages to `into`, and the promise settles after them. Starts with one receive at a time and
 * widens while they come back full, so an idle queue is asked once per pause.
 */
async function collectUntil(into: Entry[], drain: NonNullable<CommitServiceOptions['drain']>, tableName: string, end: Promise<void>): Promise<number> {
  let ended = false
  void end.then(() => (ended = true))
  let collected = 0
  let width = 1
  while (!ended && into.length < drain.max) {
    const { got, calls, failure } = await receiveWave(into, drain, tableName, width)
    collected += got
    // a failed receive: the next round's drain (or the next invocation) tries again
    if (failure !== undefined) break
    width = got >= calls * 10 ? Math.min(DRAIN_RECEIVES_AT_ONCE, width * 2) : 1
    // an idle queue is asked again after a pause, or not at all once the fold has ended
    if (got === 0) await Promise.race([end, new Promise((r) => setTimeout(r, COLLECT_IDLE_PAUSE_MS))])
  }
  return collected
}

/** Receives beyond what `entries` holds, up to `drain.max` in all, until the queue has none; returns how many. */
async function drainInto(entries: Entry[], drain: NonNullable<CommitServiceOptions['drain']>, tableName: string): Promise<number> {
  let drained = 0
  // several receives in flight at once: one at a time, a fold of hundreds of messages
  // would spend a round trip per ten of them before it could start
  while (entries.length < drain.max) {
    const { got, failure } = await receiveWave(entries, drain, tableName, DRAIN_RECEIVES_AT_ONCE)
    drained += got
    if (failure !== undefined) throw failure
    if (got === 0) break
  }
  return drained
}

/**
 * Up to `width` receives at once, their messages parsed into `into` (up to `drain.max` in
 * all). What a receive that succeeded got is kept even when another failed; the first
 * failure is returned for the caller to decide.
 */
async function receiveWave(into: Entry[], drain: NonNullable<CommitServiceOptions['drain']>, tableName: string, width: number): Promise<{ got: number; calls: number; failure?: unknown }> {
  const room = drain.max - into.length
  const calls = Math.min(width, Math.ceil(room / 10))
  const results = await Promise.allSettled(Array.from({ length: calls }, (_, k) => drain.queue.receive(Math.min(10, room - 10 * k))))
  let got = 0
  for (const r of results) {
    if (r.status !== 'fulfilled') continue
    got += r.value.length
    for (const m of r.value) into.push({ id: m.messageId, drained: m, ...parse(m.body, tableName) })
  }
  return { got, calls, failure: results.find((r) => r.status === 'rejected')?.reason }
}

/**
 * One round's aftermath: receipts first, then deletions, so a crash in between redelivers
 * messages whose receipts exist (recognised as landed). Unsettled messages are given back.
 */
async function settle(
  committer: Fold,
  entries: Entry[],
  folding: Entry[],
  invokedHandles: Map<string, string | undefined>,
  receiptSlot: ReturnType<typeof pLimit>,
  opts: CommitServiceOptions,
  total: CommitServiceResult,
): Promise<void> {
  const errors = total.errors
  for (const e of entries) if (e.outcome?.status === 'failed' && !folding.includes(e)) errors.push({ id: e.id, error: e.outcome.error.message, conflict: false })
  // landed and duplicate messages are settled by their snapshot; a conflict by its receipt
  for (const e of entries) if (e.outcome && e.outcome.status !== 'failed') e.settled = true
  const conflicts = entries.filter((e) => e.outcome?.status === 'failed' && e.outcome.conflict)
  await Promise.all(
    conflicts.map((e) =>
      receiptSlot(async () => {
        const o = e.outcome as Extract<FoldOutcome, { status: 'failed' }>
        const receipt: CommitReceipt = { status: 'conflict', error: o.error.message }
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
