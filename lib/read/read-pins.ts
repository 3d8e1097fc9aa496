// What a paged read checks of the snapshot or tag it reads: that it still exists when a
// page starts, and, when a read fails, whether it failed because maintenance expired the
// snapshot (or a tag was deleted) under it. Either way the read is gone, and the answer is
// "start again" (ReadGoneError; the reader function answers it 410), not a failure.

import type { Table } from '../handle/table.ts'
import { getTag } from '../handle/tags.ts'
import type { SnapshotManager } from '../manifest/snapshot-manager.ts'
import { ConflictError, NotFoundError, StrataInputError } from '../errors.ts'

/** The snapshot or tag a read pinned is gone: start the read again. */
export class ReadGoneError extends ConflictError {
  override name = 'ReadGoneError'
}

/** The snapshot exists in the store now (a warm handle's cache may outlive an expiration). */
export async function requireSnapshot(snapshots: SnapshotManager, id: number, field: 'snapshotId' | 'cursor'): Promise<void> {
  if (await snapshots.existing(id)) return
  const [earliest, latest] = [await snapshots.earliestId(), await snapshots.latestId()]
  const retained = latest === 0 ? 'none' : `${earliest}..${latest}`
  if (field === 'cursor') throw new ReadGoneError(`cursor: snapshot ${id} of this scan has expired (retained snapshots: ${retained}); start the scan again without a cursor`)
  throw new NotFoundError(`snapshotId: no snapshot ${id} (retained snapshots: ${retained})`)
}

/**
 * A read whose snapshot was expired by maintenance while its files were being read fails
 * on a missing object; that is a ReadGoneError (start again), not a failure.
 */
export async function whilePinned<T>(snapshots: SnapshotManager, id: number | undefined, field: 'snapshotId' | 'cursor', read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (err) {
    if (id === undefined || err instanceof StrataInputError || (await snapshots.existing(id).catch(() => true))) throw err
    throw new ReadGoneError(`${field}: snapshot ${id} expired while it was being read; start the read again${field === 'cursor' ? ' without a cursor' : ''}`)
  }
}

/** The tag still pins snapshot `id` (it may have been deleted, or deleted and made again elsewhere). */
export async function tagPins(table: Table, tag: string, id: number): Promise<boolean> {
  return (await getTag(table, tag))?.snapshot.id === id
}

/** As whilePinned, for a read of a tag: a tag deleted while it was read is a ReadGoneError. */
export async function whileTagged<T>(table: Table, tag: string, id: number, field: 'tag' | 'cursor', read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (err) {
    if (err instanceof StrataInputError || (await tagPins(table, tag, id).catch(() => true))) throw err
    throw new ReadGoneError(`${field}: tag ${JSON.stringify(tag)} was deleted while it was being read; start the read again${field === 'cursor' ? ' without a cursor' : ''}`)
  }
}
