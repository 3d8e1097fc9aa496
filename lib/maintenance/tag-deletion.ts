// Deleting a tag (lib/handle/tags.ts) and the objects only it kept, as Paimon's
// TagManager.deleteTag with TagDeletion: a maintenance operation, since it decides which of
// the tagged snapshot's objects no retained snapshot and no other tag still references.

import { snapshotKey, tagKey } from '../table/paths.ts'
import type { Table } from '../handle/table.ts'
import { listTags, requireTag } from '../handle/tags.ts'
import { BucketDirs, snapshotRange, snapshotReferences } from './references.ts'

export interface DeleteTagResult {
  name: string
  snapshotId: number
  /** objects other than the tag file deleted: those only this tag kept */
  deletedFiles: number
}

/** Deletes in flight at once (as expiration). */
const DELETE_CONCURRENCY = 16

/**
 * Deletes a tag and, as Paimon's TagManager.deleteTag does, the objects only it kept:
 * - its snapshot still exists: only the tag file goes; the snapshot's objects are its own
 *   and expiration decides about them (it no longer sees this tag);
 * - another tag pins the same snapshot: only the tag file goes;
 * - otherwise the tag file goes, then every object the tagged snapshot references that
 *   neither the earliest retained snapshot nor any other tag references. An object's
 *   references form one unbroken run of snapshot ids (lib/maintenance/expire.ts), so a
 *   retained snapshot that needs an object of this older tag means the earliest one does.
 * Paimon compares against the neighbouring tags and the earliest snapshot only; every other
 * tag gives the same answer by the same run argument. A crash after the tag file is gone
 * leaves unreferenced objects, which orphan cleanup deletes.
 */
export async function deleteTag(table: Table, name: string): Promise<DeleteTagResult> {
  const tag = await requireTag(table, name, 'tag')
  const id = tag.snapshot.id
  const done = (deletedFiles: number): DeleteTagResult => ({ name, snapshotId: id, deletedFiles })
  if (await table.store.head(snapshotKey(id))) {
    await table.store.delete(tagKey(name))
    return done(0)
  }
  // every tag is read before this one's file goes (as Paimon's deleteTag)
  const others = (await listTags(table)).filter((t) => t.name !== name)
  if (others.some((t) => t.snapshot.id === id)) {
    await table.store.delete(tagKey(name))
    return done(0)
  }
  const dirs = new BucketDirs(table)
  const keep = new Set<string>()
  const { earliest, latest } = await snapshotRange(table)
  if (latest > 0) {
    const first = await table.snapshots.existing(earliest)
    if (first) for (const k of await snapshotReferences(table, first, 'throw', dirs)) keep.add(k)
  }
  for (const t of others) for (const k of await snapshotReferences(table, t.snapshot, 'throw', dirs)) keep.add(k)
  const candidates = [...(await snapshotReferences(table, tag.snapshot, 'skip', dirs))].filter((k) => !keep.has(k))
  await table.store.delete(tagKey(name))
  let next = 0
  const worker = async () => {
    while (next < candidates.length) await table.store.delete(candidates[next++])
  }
  await Promise.all(Array.from({ length: Math.min(DELETE_CONCURRENCY, candidates.length) }, worker))
  return done(candidates.length)
}
