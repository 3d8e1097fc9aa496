// The queued committer: the Committer a writer or compactor uses when its table has a
// commit queue (docs/design.md "How a commit travels"). It sends the request as a commit
// message and resolves only once the committer function has landed it and written its
// receipt, so a writer acknowledges its records, and a compactor its job, only after the
// commit is in a snapshot.

import { CommitConflictError } from '../types.ts'
import type { Table } from '../table/table.ts'
import { type CommitRequest, type CommitResult, type Committer, CommitFailedError } from './committer.ts'
import { commitMessageOf, encodeCommitMessage } from './commit-message.ts'
import type { CommitQueue } from './commit-queue.ts'
import { commitKeyOf } from './landed.ts'
import { type CommitReceipt, readReceipt, receiptKey } from './receipts.ts'

export interface QueuedCommitterOptions {
  /** the table's name in STRATA_TABLES, carried in the message for the committer to check */
  tableName?: string
  /** how long to wait for the receipt; default 120 s */
  timeoutMs?: number
  /** first and largest pause between receipt polls; default 20 ms growing ×1.5 to 100 ms */
  firstPollMs?: number
  maxPollMs?: number
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export class QueuedCommitter implements Committer {
  constructor(
    private readonly table: Table,
    private readonly queue: CommitQueue,
    private readonly opts: QueuedCommitterOptions = {},
  ) {}

  async commit(req: CommitRequest): Promise<CommitResult> {
    const store = this.table.store
    const message = commitMessageOf(req, this.opts.tableName)
    const identity = commitKeyOf(message)
    if (req.dedup) {
      // an earlier attempt's message may have landed after that attempt stopped waiting
      const earlier = await readReceipt(store, identity)
      if (earlier && earlier.status !== 'conflict') return this.settle(identity, earlier, true)
    }
    const { body } = await encodeCommitMessage(message, store)
    await req.beforeSnapshotCreate?.(0)
    await this.queue.send(body, identity)
    const deadline = Date.now() + (this.opts.timeoutMs ?? 120_000)
    let pause = this.opts.firstPollMs ?? 20
    for (;;) {
      await sleep(pause)
      const r = await readReceipt(store, identity)
      if (r) return this.settle(identity, r, false)
      if (Date.now() >= deadline) {
        throw new CommitFailedError(
          `commit ${identity} was sent to the commit queue but no receipt came within ${this.opts.timeoutMs ?? 120_000} ms; it may still land, and a retry of the same identity is recognised`,
        )
      }
      pause = Math.min(this.opts.maxPollMs ?? 100, pause * 1.5)
    }
  }

  private async settle(identity: string, r: CommitReceipt, earlier: boolean): Promise<CommitResult> {
    // not awaited: a receipt left behind is harmless (the lifecycle rule removes it)
    void this.table.store.delete(receiptKey(identity)).catch(() => undefined)
    if (r.status === 'conflict') throw new CommitConflictError(r.error)
    return { snapshotId: r.snapshotId, retries: 0, deduplicated: earlier || r.status === 'duplicate' }
  }
}
