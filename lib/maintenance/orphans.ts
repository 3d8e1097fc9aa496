// Orphan-file cleanup (Paimon core:operation/OrphanFilesClean.java, remove_orphan_files):
// deletes objects in the snapshot-managed directories (manifest/, index/, statistics/ and
// the bucket directories) that no existing snapshot or tag references and that are older
// than `olderThanMs`. Orphans come from failed or lost commits (their data files and
// manifests), from a crash between expiration's snapshot deletes and file deletes, and from
// writers that died before committing.
//
// Never deleted: schema/ and snapshot/ (their own life cycle), anything outside the managed
// directories (tag/, branch/, consumer/ or foreign files: Paimon lists only its file
// directories too), and anything younger than `olderThanMs`, because a writer may have
// written it and not committed yet.

import { StrataInputError } from '../types.ts'
import { snapshotKey } from '../table/paths.ts'
import type { Table } from '../table/table.ts'
import { forEachLimited } from './expire.ts'
import { BucketDirs, MissingReferenceError, existingSnapshot, isSnapshotManagedKey, snapshotRange, snapshotReferences, taggedSnapshots } from './references.ts'

export interface OrphanOptions {
  /** only objects last modified more than this long before `now` go; default 1 day, as Paimon's `older_than` */
  olderThanMs?: number
  /** epoch millis; default Date.now() */
  now?: number
  /** report what would go without deleting it */
  dryRun?: boolean
}

export interface OrphanResult {
  /** keys deleted (or, with dryRun, that would be), in key order */
  deleted: string[]
  /** objects listed and left in place */
  kept: number
}

/** Paimon's remove_orphan_files default `older_than`: now minus one day. */
export const DEFAULT_ORPHAN_OLDER_THAN_MS = 24 * 60 * 60 * 1000

const DELETE_CONCURRENCY = 16

/**
 * Adds the references of snapshots `from..to` to `used`. A snapshot expired while this runs
 * is skipped (Paimon does the same on FileNotFoundException): expiration deletes the
 * snapshot file before its objects, so a missing manifest with the snapshot file gone is
 * that race, while a missing manifest with the snapshot file present is corruption and
 * stops the cleanup before anything is deleted.
 */
async function addSnapshots(table: Table, from: number, to: number, used: Set<string>, dirs: BucketDirs): Promise<void> {
  for (let id = from; id <= to; id++) {
    const s = await existingSnapshot(table, id)
    if (!s) continue
    let refs: Set<string>
    try {
      refs = await snapshotReferences(table, s, 'throw', dirs)
    } catch (err) {
      if (err instanceof MissingReferenceError && (await table.store.head(snapshotKey(id))) === null) continue
      throw err
    }
    for (const k of refs) used.add(k)
  }
}

export async function removeOrphanFiles(table: Table, opts: OrphanOptions = {}): Promise<OrphanResult> {
  const olderThanMs = opts.olderThanMs ?? DEFAULT_ORPHAN_OLDER_THAN_MS
  if (!Number.isFinite(olderThanMs) || olderThanMs < 0) {
    throw new StrataInputError(`remove orphan files: olderThanMs = ${olderThanMs}, expected a non-negative number of milliseconds`)
  }
  const now = opts.now ?? Date.now()
  if (!Number.isFinite(now)) throw new StrataInputError(`remove orphan files: now = ${now}, expected epoch milliseconds`)
  const cutoff = now - olderThanMs

  // List before reading snapshots: every object considered already existed when the
  // snapshots were read, so a commit that references it is either seen below or lands
  // later and is caught by the re-check.
  const objects = await table.store.list('')
  const dirs = new BucketDirs(table)
  const used = new Set<string>()
  for (const tag of await taggedSnapshots(table)) for (const k of await snapshotReferences(table, tag, 'throw', dirs)) used.add(k)
  let { earliest, latest } = await snapshotRange(table)
  if (latest > 0) await addSnapshots(table, earliest, latest, used, dirs)

  const isCandidate = (key: string, lastModified: number) => isSnapshotManagedKey(table, key) && lastModified < cutoff && !used.has(key)
  let candidates = objects.filter((o) => isCandidate(o.key, o.lastModified))
  // commits that landed while the references were read
  for (let newest = await table.snapshots.latestId(); newest > latest; newest = await table.snapshots.latestId()) {
    await addSnapshots(table, latest + 1, newest, used, dirs)
    latest = newest
    candidates = candidates.filter((o) => !used.has(o.key))
  }

  if (!opts.dryRun) await forEachLimited(candidates, DELETE_CONCURRENCY, (o) => table.store.delete(o.key))
  return { deleted: candidates.map((o) => o.key), kept: objects.length - candidates.length }
}
