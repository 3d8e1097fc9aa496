// The committer lease (docs/design.md "Why this shape"): the event source runs two committer
// invocations of a table at once under load (maxConcurrency 2 is the smallest it takes).
// When both fold, their rounds overlap: each usually builds on the other's snapshot (its
// delta read first) and often loses the race for `snapshot-N` to it, and with commits
// arriving a few at a time the table's commit path saturates on those retries. The lease
// keeps one invocation folding: one that finds another's live lease forwards the messages
// it was invoked with as new messages to the commit queue (where the holder's receives
// collect them) and returns, and one that sees another holder at the start of a round ends
// its rounds.
//
// The lease is an optimisation only. Two holders at once (both read an empty lease, or one
// outlived its expiry) fold as two committers always could: the conditional create of
// `snapshot-N` and the re-checked folds keep that safe, and the next round's renewal leaves
// one of them (S3 reads its own writes: both then read the last PUT). A garbled lease
// reads as none.

import { randomUUID } from 'node:crypto'
import type { ObjectStore } from '../store/object-store.ts'

/** The lease object under the table's root. */
export const COMMITTER_LEASE_KEY = '_strata/committer-lease.json'

/**
 * How long a lease lives without renewal. Renewed at every round (a round folds in well
 * under a second at a thousand messages), released when the invocation ends; an invocation
 * that dies holds the others off this long, during which they forward their batches.
 */
export const COMMITTER_LEASE_TTL_MS = 5_000

interface LeaseRecord {
  owner: string
  expiresAt: number
}

export class CommitterLease {
  private held = false
  /** the last PUT of the lease, not waited for by hold() */
  private writing: Promise<void> = Promise.resolve()

  constructor(
    private readonly store: ObjectStore,
    readonly owner: string = randomUUID(),
    private readonly ttlMs = COMMITTER_LEASE_TTL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Takes or renews the lease unless another owner holds a live one. True when this owner
   * holds it now. One GET on the caller's path; the PUT that takes or renews the lease goes
   * on behind it (an invocation's first fold does not wait for it; one that fails only
   * leaves the lease to lapse).
   */
  async hold(): Promise<boolean> {
    const current = await this.read()
    if (current && current.owner !== this.owner && current.expiresAt > this.now()) {
      this.held = false
      return false
    }
    const record: LeaseRecord = { owner: this.owner, expiresAt: this.now() + this.ttlMs }
    this.writing = this.writing.then(() => this.store.put(COMMITTER_LEASE_KEY, new TextEncoder().encode(JSON.stringify(record)))).catch(() => undefined)
    this.held = true
    return true
  }

  /** Resolves once the last PUT of the lease has been answered (or failed). */
  flushed(): Promise<void> {
    return this.writing
  }

  /**
   * Gives the lease up if this owner holds it: one DELETE, after its own last PUT. Should
   * another have taken it over meanwhile (this one's had lapsed), that one's next renewal
   * finds no lease and takes it again.
   */
  async release(): Promise<void> {
    await this.writing
    if (!this.held) return
    this.held = false
    await this.store.delete(COMMITTER_LEASE_KEY)
  }

  private async read(): Promise<LeaseRecord | null> {
    const bytes = await this.store.get(COMMITTER_LEASE_KEY)
    if (!bytes) return null
    try {
      const r = JSON.parse(new TextDecoder().decode(bytes)) as Partial<LeaseRecord>
      return typeof r.owner === 'string' && typeof r.expiresAt === 'number' ? { owner: r.owner, expiresAt: r.expiresAt } : null
    } catch {
      return null
    }
  }
}
