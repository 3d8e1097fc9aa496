// Snapshot expiration (Paimon core:table/ExpireSnapshotsImpl.java for which snapshots go, but a
// stamp far behind the store's time of the snapshot file is not trusted: createdAt; the
// file rule is Strata's own): the expired snapshot files go first, oldest first, then the objects
// only they referenced, so a snapshot that exists never points at a missing object. The order
// and why it is safe: docs/design.md "Expiration and orphan cleanup".

import type { Snapshot } from '../types.ts'
import { inputErrorLike, MissingReferenceError, RefusedError, StrataInputError } from '../errors.ts'
import { EARLIEST_KEY, snapshotKey } from '../table/paths.ts'
import { FOLDING_COMMIT_USER, foldedCommitsKey } from '../commit/landed.ts'
import type { Table } from '../handle/table.ts'
import { ExpectedObjects, runReferences, snapshotRange, snapshotReferences, verifyExpected } from './references.ts'
import { taggedSnapshots } from '../handle/tags.ts'
import { expireConsumers, minNextSnapshot } from '../handle/consumers.ts'
import { CHANGELOG_RETENTION_KEYS } from '../table/options.ts'

export interface ExpireOptions {
  /** epoch millis the retention time is measured from; default Date.now() */
  now?: number
  /** default `snapshot.num-retained.min` */
  numRetainedMin?: number
  /** default `snapshot.num-retained.max` */
  numRetainedMax?: number
  /** default `snapshot.time-retained` */
  timeRetainedMs?: number
  /** most snapshots expired by one call; default `snapshot.expire.limit` */
  maxDeletes?: number
}

export interface ExpireResult {
  /** ids of the snapshots removed, ascending */
  expired: number[]
  /** objects other than snapshot files deleted */
  deletedFiles: number
  /** earliest snapshot id after the call (0 when the table has none) */
  earliest: number
  latest: number
}

/** Deletes in flight at once; S3 DeleteObject latency dominates, not bandwidth. */
const DELETE_CONCURRENCY = 16

function positiveInt(field: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new StrataInputError(`expire: ${field} = ${v}, expected an integer >= 1`)
  return v
}

function resolve(table: Table, opts: ExpireOptions) {
  const o = table.view.options
  const retainMin = positiveInt('numRetainedMin', opts.numRetainedMin ?? o.snapshotNumRetainedMin)
  const retainMax = positiveInt('numRetainedMax', opts.numRetainedMax ?? o.snapshotNumRetainedMax)
  const maxDeletes = positiveInt('maxDeletes', opts.maxDeletes ?? o.snapshotExpireLimit)
  const timeRetainedMs = opts.timeRetainedMs ?? o.snapshotTimeRetainedMs
  if (!Number.isFinite(timeRetainedMs) || timeRetainedMs < 0) {
    throw new StrataInputError(`expire: timeRetainedMs = ${timeRetainedMs}, expected a non-negative number of milliseconds`)
  }
  const now = opts.now ?? Date.now()
  if (!Number.isFinite(now)) throw new StrataInputError(`expire: now = ${now}, expected epoch milliseconds`)
  // Paimon's ExpireConfig refuses the same combination
  if (retainMin > retainMax) {
    throw new StrataInputError(`expire: numRetainedMin (${retainMin}) is greater than numRetainedMax (${retainMax}); expected min <= max`)
  }
  return { retainMin, retainMax, maxDeletes, olderThanMillis: now - timeRetainedMs, now }
}

/**
 * How far a snapshot's stamped time may fall behind the store's time of its file before the
 * store's time counts instead: room for the time between a commit taking its time and its
 * PUT, and for the store's clock against the committer's (docs/design.md "Abandoned attempts").
 */
export const STAMP_BEHIND_STORE_MS = 60_000

/**
 * When a snapshot was created, for its age: its stamped time (`timeMillis`, the committer's
 * clock, as Paimon ages it), or, when that is older than the cut, the store's time of its
 * file less STAMP_BEHIND_STORE_MS if that is later. A committer whose clock runs behind
 * stamps its snapshots old; aged by the stamp alone they would go at once, before a
 * redelivered writer batch can find where its earlier attempt landed
 * (lib/ingest/attempts.ts), and its records would be written twice. One HEAD per snapshot
 * the stamp alone would expire.
 */
async function createdAt(table: Table, s: Snapshot, olderThanMillis: number): Promise<number> {
  if (olderThanMillis <= s.timeMillis) return s.timeMillis
  const stored = await table.store.head(snapshotKey(s.id))
  // gone: another expiration removed it meanwhile
  return stored ? Math.max(s.timeMillis, stored.lastModified - STAMP_BEHIND_STORE_MS) : s.timeMillis
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function forEachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0
  const worker = async () => {
    while (next < items.length) await fn(items[next++])
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker))
}

export async function expireSnapshots(table: Table, opts: ExpireOptions = {}): Promise<ExpireResult> {
  // A snapshot's changelog files (lib/read/changelog.ts) go with it: Strata keeps no
  // changelog past its snapshot. A table whose schema asks Paimon to keep it longer
  // (decoupled changelog) is left for Paimon to expire.
  const decoupled = CHANGELOG_RETENTION_KEYS.find((k) => table.view.options.raw[k] !== undefined)
  if (decoupled) {
    throw new RefusedError(`expire refused: table ${table.uri} sets option '${decoupled}' (${JSON.stringify(table.view.options.raw[decoupled])}), which keeps changelog files longer than their snapshots; Strata expires a snapshot's changelog with it and does not support that option`)
  }
  const { retainMin, retainMax, maxDeletes, olderThanMillis, now } = resolve(table, opts)
  const snapshots = table.snapshots
  const { earliest, latest } = await snapshotRange(table)
  if (latest === 0) return { expired: [], deletedFiles: 0, earliest: 0, latest: 0 }

  // ExpireSnapshotsImpl.expire: [begin, end) is the range to expire
  const min = Math.max(latest - retainMax + 1, earliest)
  let end = Math.min(latest - retainMin + 1, earliest + maxDeletes)
  // a consumer still needs its next snapshot and every later one (consumers idle past
  // consumer.expiration-time are deleted first, as Paimon deletes them at commit)
  await expireConsumers(table, now)
  // a garbled consumer file (lib/handle/consumers.ts refuses it) stops expiration: guessing
  // its progress could delete snapshots that consumer still needs
  const consumerNext = await minNextSnapshot(table).catch((e: unknown) => {
    throw e instanceof StrataInputError ? inputErrorLike(e, `expire refused, nothing expired: ${e.message}`) : e
  })
  if (consumerNext !== null) end = Math.min(end, consumerNext)
  for (let id = min; id < end; id++) {
    const s = await table.snapshots.existing(id)
    if (s && olderThanMillis <= (await createdAt(table, s, olderThanMillis))) {
      end = id
      break
    }
  }
  if (end <= earliest) {
    // nothing to expire; Paimon still writes a missing EARLIEST so later lookups skip the listing
    if ((await table.store.head(EARLIEST_KEY)) === null) await snapshots.writeEarliestHint(earliest)
    return { expired: [], deletedFiles: 0, earliest, latest }
  }

  const expired: Snapshot[] = []
  for (let id = earliest; id < end; id++) {
    const s = await table.snapshots.existing(id)
    if (s) expired.push(s)
  }
  // Retained: the new earliest (`end`) and every later snapshot, and tags.
  //
  // 1. candidates. References run unbroken, so `end` stands for every later snapshot, and a
  // commit racing with this call adds nothing an expired snapshot names (docs/design.md
  // "Expiration and orphan cleanup").
  const first = await table.snapshots.existing(end)
  if (!first) throw new MissingReferenceError(`expire: snapshot ${end}, the first to keep, is missing from ${table.uri}; nothing was expired`)
  const expected = new ExpectedObjects()
  const keep = await snapshotReferences(table, first, 'throw', undefined, { expected })
  const tagsRead = new Set<number>()
  for (const tag of await taggedSnapshots(table)) {
    tagsRead.add(tag.id)
    for (const k of await snapshotReferences(table, tag, 'throw', undefined, { expected })) keep.add(k)
  }
  const expiredRefs = await runReferences(table, expired, { onMissing: 'skip', missingSnapshot: 'skip' })
  let candidates = [...expiredRefs].filter((k) => !keep.has(k))
  // what is kept beyond what the expired snapshots name must be there as recorded: a name
  // read wrong from a garbled file would leave the object it should have named a candidate.
  // Index files always: an index manifest is shared by many snapshots, so an expired one
  // may have read the same wrong name from it.
  await verifyExpected(table, expected, { only: (k, want) => want.indexFile || !expiredRefs.has(k) })
  // a folded snapshot's list of the commits it holds (lib/commit/landed.ts) goes with it:
  // idempotency checks stop at the first expired snapshot and never read it again
  for (const s of expired) if (s.commitUser === FOLDING_COMMIT_USER) candidates.push(foldedCommitsKey(s.commitIdentifier))

  // 1b. Iceberg metadata (docs/design.md "Iceberg metadata"): brought to the latest snapshot,
  // then every version older than the first kept snapshot goes but the newest, before any
  // file those versions name can go; a failure expires nothing
  await table.iceberg?.expireBefore(end)

  // 2. snapshot files, oldest first, so a crash midway still leaves a contiguous range
  for (const s of expired) {
    await table.store.delete(snapshotKey(s.id))
    snapshots.forget(s.id)
  }
  await snapshots.writeEarliestHint(end)

  // 2b. tags created since they were read. A tag is written and then checks that its
  // snapshot file still exists (lib/handle/tags.ts createTag): one that passed that check
  // was written before the snapshot file was deleted above, so it is listed here.
  for (const tag of await taggedSnapshots(table)) {
    if (tagsRead.has(tag.id)) continue
    for (const k of await snapshotReferences(table, tag, 'throw')) keep.add(k)
    candidates = candidates.filter((k) => !keep.has(k))
  }

  // 3. objects only the expired snapshots used
  await forEachLimited(candidates, DELETE_CONCURRENCY, (k) => table.store.delete(k))
  return { expired: expired.map((s) => s.id), deletedFiles: candidates.length, earliest: end, latest }
}
