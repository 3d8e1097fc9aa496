// The queued committer: the Committer a writer or compactor uses when its table has a
// commit queue (docs/design.md "How a commit travels"). It sends the request as a commit
// message and resolves only once the committer function has landed it, so a writer
// acknowledges its records, and a compactor its job, only after the commit is in a snapshot.
//
// How the sender learns the outcome: the snapshot chain is the receipt. Every snapshot
// names the commits it landed (its own identity, or a folded snapshot's sidecar:
// lib/commit/landed.ts), so the sender follows the snapshots after the one its work was
// built on until one names its identity: one GET of `snapshot-(known+1)` per poll while
// nothing lands, then each new snapshot (and a folded one's sidecar) in turn. The committer
// writes a receipt object only for a message that can never land (a conflict: receipts.ts);
// the sender reads that key beside the probe on its first poll and every third after. A
// committer that lands a round therefore pays no request per message for its senders, and a
// sender learns of its landing as soon as the snapshot exists.

import { CommitConflictError } from '../errors.ts'
import type { ReceiptContext } from './commit-context.ts'
import { CommitFailedError } from '../errors.ts'
import { type CommitRequest, type CommitResult, type Committer } from './committer.ts'
import { commitMessageOf, encodeCommitMessage } from './commit-message.ts'
import type { CommitQueue } from './commit-queue.ts'
import { commitKeyOf } from './landed.ts'
import { type CommitReceipt, readReceipt, receiptKey } from './receipts.ts'
import { setTimeout as sleep } from 'node:timers/promises'

export interface QueuedCommitterOptions {
  /** the table's name in STRATA_TABLES, carried in the message for the committer to check */
  tableName?: string
  /** how long to wait for the commit to land; default 120 s */
  timeoutMs?: number
  /** first and largest pause between polls; default 20 ms growing ×1.5 to 100 ms */
  firstPollMs?: number
  maxPollMs?: number
}


/** The conflict receipt is read on the first poll and every this many polls after it. */
const RECEIPT_EVERY_POLLS = 3

export class QueuedCommitter implements Committer {
  constructor(
    private readonly table: ReceiptContext,
    private readonly queue: CommitQueue,
    private readonly opts: QueuedCommitterOptions = {},
  ) {}

  async commit(req: CommitRequest): Promise<CommitResult> {
    const { store, snapshots, landed } = this.table
    const message = commitMessageOf(req, this.opts.tableName)
    const identity = commitKeyOf(message)
    // the commit lands after the snapshot its work was built on, never at or before it
    let known = req.baseSnapshotId
    if (req.dedup) {
      // an earlier attempt's message may have landed after that attempt stopped waiting
      const { at } = await this.catchUp(identity, known)
      if (at !== null) return { snapshotId: at, retries: 0, deduplicated: true }
      const earlier = await readReceipt(store, identity)
      if (earlier && earlier.status !== 'conflict') return this.settle(identity, earlier, true)
    }
    const { body } = await encodeCommitMessage(message, store)
    await req.beforeSnapshotCreate?.(0)
    await this.queue.send(body, identity)
    const timeoutMs = this.opts.timeoutMs ?? 120_000
    const deadline = Date.now() + timeoutMs
    let pause = this.opts.firstPollMs ?? 20
    for (let poll = 1; ; poll++) {
      await sleep(pause)
      // conflicts are rare and create no snapshot: their receipt is asked every few polls
      const receipt = poll % RECEIPT_EVERY_POLLS === 1 ? readReceipt(store, identity) : null
      if (poll === 1) {
        // the work may be several snapshots old: catch up in parallel chunks once
        const { at, latest } = await this.catchUp(identity, known)
        if (at !== null) {
          void receipt?.catch(() => undefined)
          return { snapshotId: at, retries: 0, deduplicated: false }
        }
        known = latest
      } else {
        // one GET when nothing landed; each snapshot that did is read and checked in turn
        for (;;) {
          const next = await snapshots.snapshot(known + 1)
          if (!next) break
          if ((await landed.of(next)).includes(identity)) {
            void receipt?.catch(() => undefined)
            return { snapshotId: next.id, retries: 0, deduplicated: false }
          }
          known = next.id
        }
      }
      // a conflict; or a landed receipt of a committer from before the snapshot chain was the receipt
      const r = await receipt
      if (r) return this.settle(identity, r, false)
      if (Date.now() >= deadline) {
        // a snapshot expired before it was read would end the walk above: look from the top once
        const { at, latest } = await this.catchUp(identity, known)
        if (at !== null) return { snapshotId: at, retries: 0, deduplicated: false }
        throw new CommitFailedError(
          `commit ${identity} was sent to the commit queue but had not landed after ${timeoutMs} ms (latest snapshot ${latest}); it may still land, and a retry of the same identity is recognised`,
        )
      }
      pause = Math.min(this.opts.maxPollMs ?? 100, pause * 1.5)
    }
  }

  /** Where `identity` landed after `known`, searching up to the latest snapshot (returned too). */
  private async catchUp(identity: string, known: number): Promise<{ at: number | null; latest: number }> {
    const latest = (await this.table.snapshots.latestFrom(known))?.id ?? known
    return { at: latest > known ? await this.table.landed.find(identity, known, latest) : null, latest: Math.max(latest, known) }
  }

  private async settle(identity: string, r: CommitReceipt, earlier: boolean): Promise<CommitResult> {
    // not awaited: a receipt left behind is harmless (the lifecycle rule removes it)
    void this.table.store.delete(receiptKey(identity)).catch(() => undefined)
    if (r.status === 'conflict') throw new CommitConflictError(r.error)
    return { snapshotId: r.snapshotId, retries: 0, deduplicated: earlier || r.status === 'duplicate' }
  }
}
