// Which commits a snapshot landed. A snapshot of one commit carries that commit's own
// commitUser and commitIdentifier; a snapshot that folds several (batching-committer.ts)
// carries FOLDING_COMMIT_USER and a fresh identifier, and its sidecar
// `_strata/folded-commits/<identifier>.json` lists the (kind, commitUser, commitIdentifier)
// of every commit it folded. The sidecar is written before the snapshot and read only
// through a snapshot that names it, so a sidecar of a fold that never landed means nothing.
// Every idempotency check (a redelivered writer batch, a retried commit, a redelivered
// commit message) asks this one place.

import type { ObjectStore } from '../store/object-store.ts'
import type { Snapshot } from '../types.ts'
import type { SnapshotManager } from '../manifest/snapshot-manager.ts'
import { ByteLru, type CacheStats, approximateBytes } from '../format/byte-cache.ts'
import { snapshotKey } from '../table/paths.ts'
import { MissingReferenceError, SnapshotExpiredError } from '../errors.ts'

/** commitUser of snapshots that fold several commits */
export const FOLDING_COMMIT_USER = 'strata-batching-committer'
export const FOLDED_COMMITS_DIR = '_strata/folded-commits/'

export function foldedCommitsKey(commitIdentifier: bigint): string {
  return `${FOLDED_COMMITS_DIR}${commitIdentifier}.json`
}

/**
 * What a snapshot records for an earlier attempt that a commit it landed superseded
 * (docs/design.md "Abandoned attempts"): the attempt's identity, marked. Such an attempt
 * never lands after it.
 */
export function supersededKeyOf(identity: string): string {
  return `~${identity}`
}

/** The identity a commit lands under: one (user, identifier, kind) lands once. */
export function commitKeyOf(m: { commitUser: string; commitIdentifier: bigint; kind: string }): string {
  return `${m.kind}|${m.commitIdentifier}|${m.commitUser}`
}

/** The sidecar of a fold: every commit it landed, and the earlier attempts they superseded. */
export function foldedCommitsBody(commits: { kind: string; commitUser: string; commitIdentifier: bigint; supersedes?: string[] }[]): Uint8Array {
  const superseded = commits.flatMap((m) => m.supersedes ?? [])
  return new TextEncoder().encode(JSON.stringify({ commits: commits.map((m) => [m.kind, m.commitIdentifier.toString(), m.commitUser]), ...(superseded.length ? { superseded } : {}) }))
}

/** What a fold's snapshot lands, as identities: its commits' and, marked, those they superseded. */
export function foldedKeys(commits: { kind: string; commitUser: string; commitIdentifier: bigint; supersedes?: string[] }[]): string[] {
  return [...commits.map(commitKeyOf), ...commits.flatMap((m) => m.supersedes ?? []).map(supersededKeyOf)]
}

/**
 * Default bound of a handle's cache of landed identities, in bytes of memory: a snapshot of one
 * commit takes about 150 bytes, a fold of many commits about 100 bytes per commit.
 */
export const LANDED_CACHE_BYTES = 4 * 1024 * 1024
/** snapshots a walk reads at once */
const WALK_CHUNK = 16

export class LandedCommits {
  /** snapshot id → identities landed in it (immutable once created), the least recently used going first */
  private readonly cache: ByteLru<string[], number>

  constructor(
    private readonly store: ObjectStore,
    private readonly snapshots: SnapshotManager,
    cacheBytes: number = LANDED_CACHE_BYTES,
  ) {
    this.cache = new ByteLru<string[], number>(cacheBytes)
  }

  /** The identities (commitKeyOf) a snapshot landed: its sidecar's list, or its own. */
  async of(s: Snapshot): Promise<string[]> {
    const hit = this.cache.get(s.id)
    if (hit) return hit
    let keys: string[]
    if (s.commitUser === FOLDING_COMMIT_USER) {
      const bytes = await this.store.get(foldedCommitsKey(s.commitIdentifier))
      if (!bytes && !(await this.store.head(snapshotKey(s.id)))) throw new SnapshotExpiredError(s.id)
      if (!bytes) throw new MissingReferenceError(`snapshot ${s.id} folds several commits but ${foldedCommitsKey(s.commitIdentifier)} is missing from ${this.store.uri}`)
      const body = JSON.parse(new TextDecoder().decode(bytes)) as { commits: [string, string, string][]; superseded?: string[] }
      keys = body.commits.map(([kind, id, user]) => commitKeyOf({ kind, commitIdentifier: BigInt(id), commitUser: user }))
      for (const k of body.superseded ?? []) keys.push(supersededKeyOf(k))
    } else {
      keys = [commitKeyOf({ kind: s.commitKind, commitUser: s.commitUser, commitIdentifier: s.commitIdentifier })]
    }
    this.remember(s.id, keys)
    return keys
  }

  /** Records what a snapshot this process created landed (saves reading it back). */
  remember(id: number, keys: string[]): void {
    this.cache.set(id, keys, approximateBytes(keys))
  }

  /** What the cache holds now, in entries and bytes of memory. */
  cacheStats(): CacheStats {
    return this.cache.stats()
  }

  /**
   * The identities landed by each snapshot in (afterId, latestId], newest first. The walk
   * ends at an expired snapshot (nothing older is left to search); `skip(snapshot)` leaves
   * a snapshot out (e.g. past a time bound).
   */
  private async *walk(afterId: number, latestId: number, skip?: (s: Snapshot) => boolean, seen = { lowest: latestId + 1 }): AsyncGenerator<[number, string[]]> {
    // a chunk of snapshots and their sidecars at once: one by one, a committer looking back
    // over the other committer's snapshots would pay two round trips per snapshot
    for (let top = latestId; top > afterId; top -= WALK_CHUNK) {
      const ids: number[] = []
      for (let id = top; id > Math.max(afterId, top - WALK_CHUNK); id--) ids.push(id)
      const found = await Promise.all(
        ids.map(async (id): Promise<string[] | null | 'skip'> => {
          const hit = this.cache.get(id)
          if (hit) return hit
          const s = await this.snapshots.snapshot(id)
          if (!s) return null
          if (skip?.(s)) return 'skip'
          return this.of(s).catch((e) => {
            if (e instanceof SnapshotExpiredError) return null
            throw e
          })
        }),
      )
      for (let i = 0; i < ids.length; i++) {
        const keys = found[i]
        if (keys === null) return
        seen.lowest = ids[i]
        if (keys !== 'skip') yield [ids[i], keys]
      }
    }
  }

  /** Identity → the snapshot that landed it, for every identity landed in (afterId, latestId]. */
  async landedBetween(afterId: number, latestId: number, skip?: (s: Snapshot) => boolean): Promise<Map<string, number>> {
    return (await this.landedWithHorizon(afterId, latestId, skip)).landed
  }

  /**
   * landedBetween, and the horizon: the newest snapshot in the range that has expired (0 when
   * none has). Whether an identity landed at or before the horizon cannot be told any more.
   */
  async landedWithHorizon(afterId: number, latestId: number, skip?: (s: Snapshot) => boolean): Promise<{ landed: Map<string, number>; horizon: number }> {
    const landed = new Map<string, number>()
    const seen = { lowest: latestId + 1 }
    for await (const [id, keys] of this.walk(afterId, latestId, skip, seen)) for (const k of keys) if (!landed.has(k)) landed.set(k, id)
    return { landed, horizon: seen.lowest > afterId + 1 ? seen.lowest - 1 : 0 }
  }

  /** The snapshot in (afterId, latestId] that landed this identity, or null. */
  async find(key: string, afterId: number, latestId: number, skip?: (s: Snapshot) => boolean): Promise<number | null> {
    for await (const [id, keys] of this.walk(afterId, latestId, skip)) if (keys.includes(key)) return id
    return null
  }
}
