// Finding and reading snapshots. `LATEST` and `EARLIEST` are hints only (docs/format.md
// "Snapshots and hints"): LATEST is trusted once `snapshot-(id+1)` is absent, otherwise we probe forward.

import { parseHint, parseSnapshot, serializeHint } from '../format/snapshot.ts'
import type { ObjectStore } from '../store/object-store.ts'
import type { Snapshot } from '../types.ts'
import { EARLIEST_KEY, LATEST_KEY, SNAPSHOT_DIR, parseSnapshotId, snapshotKey } from '../table/paths.ts'

const decoder = new TextDecoder()

export class SnapshotManager {
  /** Immutable once written, so a snapshot read once is cached for the life of the handle. */
  private readonly cache = new Map<number, Snapshot>()

  constructor(private readonly store: ObjectStore) {}

  async snapshot(id: number): Promise<Snapshot | null> {
    const hit = this.cache.get(id)
    if (hit) return hit
    const bytes = await this.store.get(snapshotKey(id))
    if (!bytes) return null
    const s = parseSnapshot(decoder.decode(bytes))
    if (this.cache.size > 256) this.cache.delete(this.cache.keys().next().value!)
    this.cache.set(id, s)
    return s
  }

  async exists(id: number): Promise<boolean> {
    return this.cache.has(id) || (await this.store.head(snapshotKey(id))) !== null
  }

  /** The true latest snapshot id (0 when the table has none): hint, then probe forward. */
  async latestId(): Promise<number> {
    const hintBytes = await this.store.get(LATEST_KEY)
    let id = hintBytes ? parseHint(decoder.decode(hintBytes)) : null
    if (id === null || !(await this.exists(id))) {
      const ids = await this.listIds()
      id = ids.length ? ids[ids.length - 1] : 0
    }
    while (await this.exists(id + 1)) id++
    return id
  }

  async latest(): Promise<Snapshot | null> {
    const id = await this.latestId()
    return id === 0 ? null : this.snapshot(id)
  }

  /** The earliest snapshot id still present (0 when none). */
  async earliestId(): Promise<number> {
    const hintBytes = await this.store.get(EARLIEST_KEY)
    const id = hintBytes ? parseHint(decoder.decode(hintBytes)) : null
    if (id !== null && (await this.exists(id)) && !(await this.exists(id - 1))) return id
    const ids = await this.listIds()
    return ids.length ? ids[0] : 0
  }

  async listIds(): Promise<number[]> {
    const infos = await this.store.list(SNAPSHOT_DIR)
    const ids: number[] = []
    for (const info of infos) {
      const id = parseSnapshotId(info.key.slice(SNAPSHOT_DIR.length))
      if (id !== null) ids.push(id)
    }
    return ids.sort((a, b) => a - b)
  }

  async writeLatestHint(id: number): Promise<void> {
    await this.store.put(LATEST_KEY, new TextEncoder().encode(serializeHint(id)))
  }

  async writeEarliestHint(id: number): Promise<void> {
    await this.store.put(EARLIEST_KEY, new TextEncoder().encode(serializeHint(id)))
  }

  forget(id: number): void {
    this.cache.delete(id)
  }
}
