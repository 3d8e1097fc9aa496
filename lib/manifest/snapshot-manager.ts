// Finding and reading snapshots. `LATEST` and `EARLIEST` are hints only (docs/format.md
// "Snapshots and hints"): LATEST is trusted once `snapshot-(id+1)` is absent, otherwise we probe forward.
// Finding the latest is on every job's path, so its requests go out together where they
// can (latest()). Every snapshot read is checked against the name it was read under
// (checkedSnapshot).

import { parseHint, parseSnapshot, serializeHint } from '../format/snapshot.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { CorruptFileError } from '../errors.ts'
import type { Snapshot } from '../types.ts'
import { EARLIEST_KEY, LATEST_KEY, SNAPSHOT_DIR, parseSnapshotId, snapshotKey } from '../table/paths.ts'
import { ByteLru, type CacheStats, approximateBytes } from '../format/byte-cache.ts'

const decoder = new TextDecoder()

/** Default bound of a handle's snapshot cache, in bytes of memory (a decoded snapshot takes about 1–2 KiB). */
export const SNAPSHOT_CACHE_BYTES = 1024 * 1024
/**
 * How long a snapshot this handle saw in the store (read it, created it or asked for it) is
 * taken to still be there without asking again, when the next id is absent (latest()). For
 * expiration to remove it and its successor within this time, more than
 * `snapshot.num-retained.max` snapshots would have to land within it.
 */
export const SNAPSHOT_TRUST_MS = 1000
/** ids past the known one latestFrom() probes at once before it asks the hint */
const FORWARD_PROBES = 3

/**
 * The snapshot in `snapshot-id`'s bytes, checked against that name: a body that does not
 * parse, or whose `id` is another, is a CorruptFileError naming the file. (A body claiming
 * the id before made the latest look one lower: commits then lost every race for an id that
 * existed, and orphan cleanup took the latest snapshot's files for orphans.)
 */
function checkedSnapshot(bytes: Uint8Array, id: number, key: string, uri: string): Snapshot {
  let s: Snapshot
  try {
    s = parseSnapshot(decoder.decode(bytes))
  } catch (e) {
    throw new CorruptFileError(key, `${(e as Error).message} (table ${uri})`, { cause: e })
  }
  if (s.id !== id) throw new CorruptFileError(key, `"id" is ${s.id}, expected ${id}, the id in the file's name (table ${uri})`)
  return s
}

export class SnapshotManager {
  /** Immutable once written, so a snapshot read once is cached, the least recently used going first. */
  private readonly cache: ByteLru<Snapshot, number>
  private readonly pendingHints = new Set<Promise<void>>()
  private hinted = 0
  /** GETs of snapshot files in flight, by id */
  private readonly reading = new Map<number, { sending: boolean; answer: Promise<Snapshot | null> }>()
  /** the highest snapshot id this handle has read or been told of */
  private highest = 0
  /** the highest snapshot seen in the store (read, created or found by HEAD), and when */
  private seenInStore = { id: 0, at: 0 }

  constructor(
    private readonly store: ObjectStore,
    cacheBytes: number = SNAPSHOT_CACHE_BYTES,
  ) {
    this.cache = new ByteLru<Snapshot, number>(cacheBytes)
  }

  async snapshot(id: number): Promise<Snapshot | null> {
    const hit = this.cache.get(id)
    if (hit) return hit
    // callers asking for one id at once share one GET: the senders waiting on one handle
    // (a compactor's lanes, a writer's tables) all probe the same next snapshot. A present
    // snapshot never changes, so an answer holding it is right for anyone. "Absent" is right
    // only for the callers that asked before the GET went out, or in the same synchronous
    // run that sent it (nothing they know can be newer than it): a caller that asks later
    // may be looking for a snapshot created since (the writer whose job it just received),
    // so it waits for a GET sent after it asked (its own, or one another late caller sent)
    const first = this.reading.get(id)
    if (first?.sending) return first.answer
    if (first) {
      const s = await first.answer
      if (s !== null) return s
      // a GET started since came after this call: its answer serves
      const next = this.reading.get(id)
      if (next && next !== first) return next.answer
    }
    const p = { sending: true, answer: this.read(id).finally(() => this.reading.get(id) === p && this.reading.delete(id)) }
    queueMicrotask(() => (p.sending = false))
    this.reading.set(id, p)
    return p.answer
  }

  private async read(id: number): Promise<Snapshot | null> {
    const key = snapshotKey(id)
    const bytes = await this.store.get(key)
    if (!bytes) return null
    const s = checkedSnapshot(bytes, id, key, this.store.uri)
    this.cache.set(id, s, approximateBytes(s))
    if (id > this.highest) this.highest = id
    this.sawInStore(id)
    return s
  }

  /**
   * Whether `snapshot-id` is in the store now, asked of the store: a cached snapshot may have
   * been expired by another process since this handle read it.
   */
  exists(id: number): Promise<boolean> {
    return this.presentInStore(id)
  }

  /**
   * Snapshot `id` if it is in the store now (its content from the cache when held): what a
   * caller that goes on to read the snapshot's files needs, since the cache outlives an
   * expiration (a long-lived maintenance handle would otherwise keep honouring snapshots that
   * are gone, and keep their files forever).
   */
  async existing(id: number): Promise<Snapshot | null> {
    return (await this.presentInStore(id)) ? this.snapshot(id) : null
  }

  private sawInStore(id: number): void {
    if (id >= this.seenInStore.id) this.seenInStore = { id, at: Date.now() }
  }

  /**
   * Whether a cached snapshot `id`, the end of a chain of ids, must be asked for again:
   * expiration may have removed it (and its successor) since this handle saw it in the store.
   */
  private needsPresenceCheck(id: number): boolean {
    if (this.cache.get(id) === undefined) return false
    return !(this.seenInStore.id === id && Date.now() - this.seenInStore.at < SNAPSHOT_TRUST_MS)
  }

  /** HEAD of `snapshot-id`: remembered when present, dropped from the cache when not. */
  private async presentInStore(id: number): Promise<boolean> {
    const present = (await this.store.head(snapshotKey(id))) !== null
    if (present) this.sawInStore(id)
    else this.cache.delete(id)
    return present
  }

  /** What the snapshot cache holds now, in entries and bytes of memory. */
  cacheStats(): CacheStats {
    return this.cache.stats()
  }

  /** The true latest snapshot id (0 when the table has none); see latest(). */
  async latestId(): Promise<number> {
    return (await this.latest())?.id ?? 0
  }

  /**
   * The true latest snapshot (null when the table has none), body included: callers that
   * need the id and those that need the snapshot pay the same. Probes `snapshot-(N+1)` from
   * the highest known N (with a HEAD of N when the cache cannot vouch for it), else asks
   * the LATEST hint. Why that finds the latest: docs/design.md "Finding the latest
   * snapshot is two steps".
   */
  async latest(): Promise<Snapshot | null> {
    const known = this.highest
    if (known > 0) {
      // N is usually cached; when not (a snapshot this handle created), it comes in the same round trip
      const check = this.needsPresenceCheck(known)
      const [next, current, present] = await Promise.all([this.snapshot(known + 1), this.snapshot(known), check ? this.presentInStore(known) : true])
      if (next === null) {
        if (current !== null && present) return current
      } else {
        let current = next
        for (let i = 1; i < FORWARD_PROBES; i++) {
          const after = await this.snapshot(current.id + 1)
          if (after === null) return current
          current = after
        }
      }
    }
    return this.latestFromHint()
  }

  /**
   * The latest snapshot by the LATEST hint, for a handle that knows none (or fell too far
   * behind). Two dependent requests in the common case: GET LATEST, then GET `snapshot-N`
   * and GET `snapshot-(N+1)` at once.
   * The hint is believed once N+1 is absent; a present N+1 (a commit that has not rewritten
   * LATEST yet, or a hint overwritten by a slower committer) moves the probe forward one
   * snapshot per request. Probing with GET rather than HEAD costs the same round trip and
   * brings the body of the snapshot that turns out to be the latest.
   */
  private async latestFromHint(): Promise<Snapshot | null> {
    const hintBytes = await this.store.get(LATEST_KEY)
    let id = hintBytes ? parseHint(decoder.decode(hintBytes)) : null
    let current: Snapshot | null = null
    let next: Snapshot | null = null
    if (id !== null) {
      // a hint left stale long enough can name an expired snapshot this handle still caches
      const check = this.needsPresenceCheck(id)
      let present: boolean
      ;[current, next, present] = await Promise.all([this.snapshot(id), this.snapshot(id + 1), check ? this.presentInStore(id) : true])
      if (!present && next === null) current = null
    }
    if (current === null) {
      // no hint, or it names a snapshot that is gone (expired): the directory decides
      const ids = await this.listIds()
      if (ids.length === 0) return null
      id = ids[ids.length - 1]
      ;[current, next] = await Promise.all([this.snapshot(id), this.snapshot(id + 1)])
    }
    while (next !== null) {
      current = next
      id = id! + 1
      next = await this.snapshot(id + 1)
    }
    return current
  }

  /** The highest snapshot id this handle has read or created: a starting point for latestFrom(). */
  highestKnownId(): number {
    return this.highest
  }

  /**
   * The latest snapshot for a caller that knows a recent one: GETs `snapshot-known` (usually
   * cached) and the next FORWARD_PROBES ids at once, so one round trip answers when up to
   * FORWARD_PROBES - 1 snapshots landed since (the other committer's, a writer's); past
   * those, the hint (latest()) is the quicker way forward. Snapshots are created in order,
   * so the first absent id ends the chain, unless it was expired: a chain that ends below a
   * snapshot this handle has seen has lost its top to expiration, and a cached end of the
   * chain is checked to be still in the store, as in latest().
   */
  async latestFrom(knownId: number): Promise<Snapshot | null> {
    if (knownId <= 0) return this.latest()
    const seen = this.highest
    const ids = Array.from({ length: FORWARD_PROBES + 1 }, (_, i) => knownId + i)
    // the chain can end at `seen` with a cached snapshot: whether it is still stored is asked at once
    const checkSeen = seen >= knownId && seen <= knownId + FORWARD_PROBES && this.needsPresenceCheck(seen)
    const [got, seenPresent] = await Promise.all([Promise.all(ids.map((id) => this.snapshot(id))), checkSeen ? this.presentInStore(seen) : true])
    if (got[0] === null) return this.latestFromHint()
    const firstAbsent = got.indexOf(null)
    if (firstAbsent < 0) return this.latestFromHint()
    const end = got[firstAbsent - 1]!
    if (end.id < seen) return this.latest()
    if (end.id === seen && !seenPresent) return this.latestFromHint()
    return end
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

  /**
   * Starts rewriting LATEST without holding the caller: a commit is done once its snapshot
   * exists, and the hint is only a shortcut (readers probe past a stale one). A hint older
   * than one this handle already started is skipped; settleHints() waits for the rest.
   */
  hintLatest(id: number): void {
    if (id > this.highest) this.highest = id
    this.sawInStore(id)
    if (id <= this.hinted) return
    this.hinted = id
    const p: Promise<void> = this.writeLatestHint(id)
      .catch(() => undefined)
      .finally(() => this.pendingHints.delete(p))
    this.pendingHints.add(p)
  }

  /** Waits for every LATEST rewrite hintLatest() started (before a function instance freezes). */
  async settleHints(): Promise<void> {
    await Promise.all([...this.pendingHints])
  }

  async writeEarliestHint(id: number): Promise<void> {
    await this.store.put(EARLIEST_KEY, new TextEncoder().encode(serializeHint(id)))
  }

  forget(id: number): void {
    this.cache.delete(id)
  }
}
