// Orphan-file cleanup (Paimon core:operation/OrphanFilesClean.java, remove_orphan_files):
// deletes the objects of the snapshot-managed directories that no snapshot or tag references
// and that are older than an age no commit can still be waiting for. What it deletes, and why
// that is safe: docs/design.md "Expiration and orphan cleanup".

import { CorruptFileError, MissingReferenceError, StrataInputError } from '../errors.ts'
import type { ObjectInfo } from '../store/object-store.ts'
import { SNAPSHOT_DIR, parseSnapshotId, tagKey } from '../table/paths.ts'
import type { Table } from '../handle/table.ts'
import { forEachLimited } from './expire.ts'
import { BucketDirs, ExpectedObjects, isSnapshotManagedKey, rangeReferences, snapshotRange, snapshotReferences, verifyExpected } from './references.ts'
import { listTags } from '../handle/tags.ts'

export interface OrphanOptions {
  /** only objects last modified more than this long before `now` go; default 1 day, as Paimon's `older_than`; at least MIN_ORPHAN_OLDER_THAN_MS */
  olderThanMs?: number
  /** epoch millis; default Date.now() */
  now?: number
  /** report what would go without deleting it */
  dryRun?: boolean
}

export interface OrphanResult {
  /** keys deleted (or, with dryRun, that would be): objects in key order, then leftovers of unfinished writes (ObjectStore.listLeftovers) */
  deleted: string[]
  /** objects listed and left in place */
  kept: number
}

const MINUTE = 60_000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR
/** Lambda's longest invocation. */
const LONGEST_INVOCATION_MS = 15 * MINUTE

/** Paimon's remove_orphan_files default `older_than`: now minus one day. */
export const DEFAULT_ORPHAN_OLDER_THAN_MS = DAY

/** How long a table's commit queue keeps a message, as cdk/config.ts deploys it (test/orphans.test.ts checks they agree). */
export const COMMIT_QUEUE_RETENTION_MS = 12 * HOUR

/**
 * The longest a file can exist before the commit that references it lands. Deployed, a
 * writer or compactor writes its files within one invocation (at most 15 min, Lambda's
 * limit) and then sends its commit message. Its sender stops waiting for the receipt after
 * STRATA_COMMIT_TIMEOUT_MS, but the message stays on the table's commit queue for up to the
 * queue's retention (12 h) and lands whenever a committer takes it, within that committer's
 * invocation (at most 15 min). A direct commit (the CLI, a table without a commit queue)
 * lands within the run that wrote its files, its retries included.
 */
export const LONGEST_COMMIT_DELAY_MS = LONGEST_INVOCATION_MS + COMMIT_QUEUE_RETENTION_MS + LONGEST_INVOCATION_MS

/**
 * The smallest `olderThanMs` accepted: the longest commit delay plus 30 minutes for the
 * difference between the clock that stamps an object (S3's) and the cleanup's own.
 */
export const MIN_ORPHAN_OLDER_THAN_MS = LONGEST_COMMIT_DELAY_MS + 30 * MINUTE

/** "1 d", "13 h", "12 h 30 min", "1500 ms": a duration for messages. */
export function formatAge(ms: number): string {
  if (ms % MINUTE !== 0) return `${ms} ms`
  if (ms !== 0 && ms % DAY === 0) return `${ms / DAY} d`
  const hours = Math.floor(ms / HOUR)
  const minutes = (ms % HOUR) / MINUTE
  return [hours ? `${hours} h` : '', minutes || !hours ? `${minutes} min` : ''].filter(Boolean).join(' ')
}

/**
 * Checks an orphan age before anything runs; `what` names the input and its value as the
 * caller's user wrote it (an option, an environment variable, a field).
 */
export function checkOrphanAge(olderThanMs: number, what: string): number {
  if (!Number.isFinite(olderThanMs) || olderThanMs < MIN_ORPHAN_OLDER_THAN_MS) {
    throw new StrataInputError(
      `${what}: expected an orphan age of at least ${formatAge(MIN_ORPHAN_OLDER_THAN_MS)} (${MIN_ORPHAN_OLDER_THAN_MS} ms): ` +
        `a commit can land up to ${formatAge(LONGEST_COMMIT_DELAY_MS)} after its files were written (the commit queue keeps a message ${formatAge(COMMIT_QUEUE_RETENTION_MS)}), ` +
        `so a younger unreferenced file may still become part of a snapshot`,
    )
  }
  return olderThanMs
}

const DELETE_CONCURRENCY = 16

/**
 * The task the maintenance function's orphan schedule names in its input: cleanup runs
 * every few hours on its own schedule, apart from expiration.
 */
export const REMOVE_ORPHANS_TASK = 'remove-orphans'

/**
 * Every object the retained snapshots and the tags reference, complete or not at all: tags,
 * snapshots earliest..latest, tags again, then the snapshots that landed meanwhile; a failed
 * check fails the walk and the caller deletes nothing (docs/design.md "Expiration and orphan
 * cleanup", "The walk is all or nothing").
 */
async function walkReferences(table: Table, listed: ReadonlyMap<string, ObjectInfo>): Promise<{ used: Set<string>; expected: ExpectedObjects }> {
  const dirs = new BucketDirs(table)
  const used = new Set<string>()
  const expected = new ExpectedObjects()
  const tagsRead = new Set<string>()
  const addTags = async () => {
    for (const tag of await listTags(table)) {
      if (tagsRead.has(tag.name)) continue
      tagsRead.add(tag.name)
      for (const k of await snapshotReferences(table, tag.snapshot, 'throw', dirs, { expected, file: tagKey(tag.name) })) used.add(k)
    }
  }
  const gaps: number[] = []
  const addSnapshots = (from: number, to: number) =>
    rangeReferences(table, from, to, { onMissing: 'throw', missingSnapshot: 'skip', dirs, into: used, expected, onGap: (id) => gaps.push(id) })

  await addTags()
  const range = await snapshotRange(table)
  let latest = range.latest
  // listed before the latest was found, so none can be newer than it
  for (const key of listed.keys()) {
    const id = key.startsWith(SNAPSHOT_DIR) ? parseSnapshotId(key.slice(SNAPSHOT_DIR.length)) : null
    if (id !== null && id > latest) {
      throw new CorruptFileError(key, `snapshot ${id} is past the latest snapshot ${latest}, which LATEST and the snapshot before it give; snapshot ids are contiguous, so orphan cleanup cannot tell which snapshots are retained (table ${table.uri})`)
    }
  }
  if (latest > 0) await addSnapshots(range.earliest, latest)
  await addTags()
  // commits that landed while the references were read
  for (let newest = await table.snapshots.latestId(); newest > latest; newest = await table.snapshots.latestId()) {
    await addSnapshots(latest + 1, newest)
    latest = newest
  }
  // a snapshot found missing must have been expired meanwhile (oldest first): then every
  // snapshot up to it is gone too
  if (gaps.length) {
    const now = await snapshotRange(table)
    const hole = gaps.find((id) => id >= now.earliest && now.latest > 0)
    if (hole !== undefined) {
      throw new MissingReferenceError(`snapshot ${hole} is missing from ${table.uri} while snapshots ${now.earliest}..${now.latest} are retained around it: the retained snapshot ids are not contiguous`)
    }
  }
  return { used, expected }
}

export async function removeOrphanFiles(table: Table, opts: OrphanOptions = {}): Promise<OrphanResult> {
  const olderThanMs = checkOrphanAge(opts.olderThanMs ?? DEFAULT_ORPHAN_OLDER_THAN_MS, `remove orphan files: olderThanMs = ${opts.olderThanMs}`)
  const now = opts.now ?? Date.now()
  if (!Number.isFinite(now)) throw new StrataInputError(`remove orphan files: now = ${now}, expected epoch milliseconds`)
  const cutoff = now - olderThanMs

  // List before reading snapshots: every object considered already existed when the
  // snapshots were read, so a commit that references it is either seen below or lands
  // later and is caught by the re-check.
  const objects = await table.store.list('')
  const listed = new Map(objects.map((o) => [o.key, o]))
  const { used, expected } = await walkReferences(table, listed)
  // every object the live set names is there as recorded: a name read wrong from a garbled
  // manifest names nothing, and the object it should have named would look unreferenced
  try {
    await verifyExpected(table, expected, { listing: listed })
  } catch (e) {
    if (!(e instanceof MissingReferenceError)) throw e
    // an expiration that ran meanwhile deletes a snapshot, then its objects: once more from
    // what is retained now, against the store as it is now; a second failure is the answer
    const again = await walkReferences(table, listed)
    await verifyExpected(table, again.expected)
    for (const k of again.used) used.add(k)
  }

  const candidates = objects.filter((o) => isSnapshotManagedKey(table, o.key) && o.lastModified < cutoff && !used.has(o.key))
  // the Iceberg metadata directory's manifests and lists no version names (docs/design.md "Iceberg metadata")
  const iceberg = table.iceberg ? await table.iceberg.dir.unreferenced(cutoff) : []

  // no key of an object ever names a leftover, so no snapshot can reference one
  const store = table.store
  const leftovers = store.listLeftovers && store.deleteLeftover ? (await store.listLeftovers('')).filter((o) => o.lastModified < cutoff) : []

  if (!opts.dryRun) {
    await forEachLimited(candidates, DELETE_CONCURRENCY, (o) => store.delete(o.key))
    await forEachLimited(iceberg, DELETE_CONCURRENCY, (o) => table.iceberg!.dir.store.delete(o.key))
    await forEachLimited(leftovers, DELETE_CONCURRENCY, (o) => store.deleteLeftover!(o.key))
  }
  // a directory outside the table (hadoop-catalog) is reported by its URI
  const icebergKeys = iceberg.map((o) => (table.iceberg!.location.inTable ? o.key : table.iceberg!.dir.uriOf(o.key)))
  return { deleted: [...candidates.map((o) => o.key), ...icebergKeys, ...leftovers.map((o) => o.key)], kept: objects.length - candidates.length - (table.iceberg?.location.inTable ? iceberg.length : 0) }
}
