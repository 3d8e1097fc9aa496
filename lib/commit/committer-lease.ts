// The committer lease: an object in S3 that keeps one committer invocation of a table
// folding while the other forwards its batches, and its clock bound (a lease expiring too
// far beyond the reader's clock is taken over and recorded in `overrides`). An optimisation
// only: docs/design.md "Why this shape" and "The committer lease and clocks".

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

/**
 * How far a holder's clock may run ahead of a reader's and its lease still be honoured: a
 * lease expiring more than TTL + this beyond the reader's clock is taken over. Three TTLs:
 * far above the skew of NTP-synced hosts, short beside the senders' commit timeout
 * (docs/design.md "The committer lease and clocks").
 */
export const COMMITTER_LEASE_SKEW_ALLOWANCE_MS = 3 * COMMITTER_LEASE_TTL_MS

/**
 * The lease object: its owner and expiry, which decide; and the holder's own clock when it
 * took and last renewed the lease and the TTL it used, which no reader relies on (they
 * show an operator the holder's clock against the reader's). A lease of an older Strata
 * has only the first two.
 */
export interface LeaseRecord {
  owner: string
  expiresAt: number
  takenAt?: number
  renewedAt?: number
  ttlMs?: number
}

/** A lease another owner held that this one took over before it expired. */
export interface LeaseOverride {
  /** `beyond-bound`: its expiry lay beyond the bound; `forward-limit`: a message of the batch had been forwarded too often */
  reason: 'beyond-bound' | 'forward-limit'
  lease: LeaseRecord
  /** this owner's clock when it took the lease over */
  at: number
}

/**
 * What a lease means to `owner` at `now` (its own clock): `none` (absent or garbled),
 * `own`, `lapsed`, `live` (another's, honoured), or `beyond-bound` (another's, expiring more
 * than `boundMs` after `now`: not honoured).
 */
export function leaseStanding(lease: LeaseRecord | null, owner: string, now: number, boundMs: number): 'none' | 'own' | 'lapsed' | 'live' | 'beyond-bound' {
  if (!lease) return 'none'
  if (lease.owner === owner) return 'own'
  if (!(lease.expiresAt > now)) return 'lapsed'
  return lease.expiresAt - now > boundMs ? 'beyond-bound' : 'live'
}

export class CommitterLease {
  private held = false
  /** this owner's clock when it last took the lease (not renewed it) */
  private takenAt = 0
  /** the other owner's live lease the last hold() found, for takeOver() */
  private refusedBy: LeaseRecord | null = null
  /** the last PUT of the lease, not waited for by hold() */
  private writing: Promise<void> = Promise.resolve()
  /** leases of other owners this one took over before they expired */
  readonly overrides: LeaseOverride[] = []
  /** the longest any one lease object holds this owner off, by its clock */
  readonly boundMs: number

  constructor(
    private readonly store: ObjectStore,
    readonly owner: string = randomUUID(),
    private readonly ttlMs = COMMITTER_LEASE_TTL_MS,
    private readonly now: () => number = Date.now,
    skewAllowanceMs = COMMITTER_LEASE_SKEW_ALLOWANCE_MS,
  ) {
    this.boundMs = ttlMs + skewAllowanceMs
  }

  /**
   * Takes or renews the lease unless another owner holds a live one within the bound. True
   * when this owner holds it now. One GET on the caller's path; the PUT that takes or renews
   * the lease goes on behind it (an invocation's first fold does not wait for it; one that
   * fails only leaves the lease to lapse).
   */
  async hold(): Promise<boolean> {
    const current = await this.read()
    const now = this.now()
    const standing = leaseStanding(current, this.owner, now, this.boundMs)
    if (standing === 'live') {
      this.held = false
      this.refusedBy = current
      return false
    }
    if (standing === 'beyond-bound') this.overrides.push({ reason: 'beyond-bound', lease: current!, at: now })
    this.write(now)
    return true
  }

  /**
   * Takes the lease whoever holds it: for a batch that must be folded now (a message
   * forwarded too often). Counted as an override when the last hold() found another's live
   * lease; that holder's next renewal finds this one's and ends its rounds.
   */
  takeOver(): void {
    const now = this.now()
    if (!this.held && this.refusedBy) this.overrides.push({ reason: 'forward-limit', lease: this.refusedBy, at: now })
    this.write(now)
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

  private write(now: number): void {
    if (!this.held) this.takenAt = now
    this.held = true
    this.refusedBy = null
    const record: LeaseRecord = { owner: this.owner, expiresAt: now + this.ttlMs, takenAt: this.takenAt, renewedAt: now, ttlMs: this.ttlMs }
    this.writing = this.writing.then(() => this.store.put(COMMITTER_LEASE_KEY, new TextEncoder().encode(JSON.stringify(record)))).catch(() => undefined)
  }

  private async read(): Promise<LeaseRecord | null> {
    const bytes = await this.store.get(COMMITTER_LEASE_KEY)
    if (!bytes) return null
    try {
      const r = JSON.parse(new TextDecoder().decode(bytes)) as Partial<LeaseRecord> | null
      if (!r || typeof r.owner !== 'string' || typeof r.expiresAt !== 'number') return null
      const out: LeaseRecord = { owner: r.owner, expiresAt: r.expiresAt }
      for (const k of ['takenAt', 'renewedAt', 'ttlMs'] as const) if (typeof r[k] === 'number') out[k] = r[k]
      return out
    } catch {
      return null
    }
  }
}
