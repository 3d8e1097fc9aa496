// The last stage of a row's freshness budget (docs/design.md "Freshness budget"): how long
// after a snapshot was created a reader first read it. A reader learns of new snapshots only
// by looking up the latest one when it reads, so a row that landed in snapshot S becomes
// visible to the first read that starts after S exists. That read may find a newer snapshot
// than S (the reader skipped some), so the stage is measured on the oldest snapshot the
// reader had not read before: from its creation (its timeMillis, the committer's clock) to
// the start of the read. Reads that find nothing new say nothing.

/** A snapshot's creation time (epoch ms) by id, or null when it is gone (expired). */
export type SnapshotTime = (id: number) => Promise<number | null>

export class SnapshotDiscovery {
  private newest = 0

  /**
   * A read that started at `readStartedAt` (epoch ms) read snapshot `id`: how long the
   * oldest snapshot newer than any this reader read before had existed by then, or null when
   * `id` is not new. The reader's first read has nothing to compare with: null.
   */
  async observe(id: number, readStartedAt: number, timeOf: SnapshotTime): Promise<number | null> {
    if (id <= this.newest) return null
    const before = this.newest
    this.newest = id
    if (before === 0) return null
    const created = await timeOf(before + 1).catch(() => null)
    return created === null ? null : Math.max(0, readStartedAt - created)
  }
}

/** What a read asked for, as far as discovery goes: reads of the latest snapshot count. */
export interface DiscoveryRead {
  table: string
  op: string
  snapshotId?: number
  tag?: string
}

/** One reader environment's discoveries, per table. */
export class ReaderDiscoveries {
  private readonly byTable = new Map<string, SnapshotDiscovery>()

  /**
   * A read of `req.table` that started at `startedAt` returned snapshot `id`: the stage's
   * figure, or null. Reads of a named snapshot or tag, changes and streams say nothing.
   */
  observe(req: DiscoveryRead, id: number | null, startedAt: number, snapshots: { snapshot(id: number): Promise<{ timeMillis: number } | null> }): Promise<number | null> {
    if (id === null || req.snapshotId !== undefined || req.tag !== undefined || !['scan', 'lookup', 'status'].includes(req.op)) return Promise.resolve(null)
    let d = this.byTable.get(req.table)
    if (!d) this.byTable.set(req.table, (d = new SnapshotDiscovery()))
    return d.observe(id, startedAt, async (n) => (await snapshots.snapshot(n))?.timeMillis ?? null)
  }
}
