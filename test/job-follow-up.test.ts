// The follow-up check after a compaction (lib/jobs/coalesce.ts followUpOf): what it reads of
// the snapshot chain, and that it still finds what landed after the compaction.

import { describe, expect, it } from 'vitest'
import { followUpOf } from '../lib/jobs/coalesce.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { Table } from '../lib/handle/table.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type Op, schemaFor } from './helpers/model.ts'

/** The store, with the GETs of snapshot files counted. */
function countingSnapshotGets(inner: ObjectStore): { store: ObjectStore; gets: () => number; reset: () => void } {
  let gets = 0
  const store = new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target)
      if (prop !== 'get' || typeof v !== 'function') return typeof v === 'function' ? v.bind(target) : v
      return (key: string) => {
        if (key.startsWith('snapshot/snapshot-')) gets++
        return v.call(target, key)
      }
    },
  })
  return { store, gets: () => gets, reset: () => (gets = 0) }
}

const put = (ids: number[], a: number): Op[] => ids.map((id) => ({ _kind: '+I', dt: '2024-05-01', id, a, b: null, c: null }))

async function write(table: Table, ops: Op[]) {
  return writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
}

async function compactedBucket() {
  const mem = new MemoryStore()
  const writer = await Table.create(mem, schemaFor('deduplicate', { bucket: '1', 'deletion-vectors.enabled': 'true' }))
  const counted = countingSnapshotGets(mem)
  const compactor = await Table.open(counted.store)
  await write(writer, put([1, 2, 3], 1))
  await write(writer, put([2, 3, 4], 2))
  const res = (await write(writer, put([5], 3))).buckets[0]
  const ref = { partition: res.partition, bucket: res.bucket }
  const result = await compactBucket(compactor, { partition: ref.partition, bucket: ref.bucket })
  expect(result.snapshotId).not.toBeNull()
  // the compactor sees its commit land, as the queued committer's wait does
  await compactor.snapshots.snapshot(result.snapshotId!)
  return { writer, compactor, counted, ref, result }
}

describe('the follow-up check after a compaction', () => {
  it('with nothing landed since the commit: no follow-up, one GET of the snapshot chain (the next id)', async () => {
    const { compactor, counted, ref, result } = await compactedBucket()
    counted.reset()
    expect(await followUpOf(compactor, result, ref)).toBeNull()
    expect(counted.gets()).toBe(1)
  })

  it('a writer landing level-0 files after the commit: the follow-up is due, keyed at the writer\'s snapshot', async () => {
    const { writer, compactor, ref, result } = await compactedBucket()
    const landed = await write(writer, put([9], 4))
    const next = await followUpOf(compactor, result, ref)
    expect(next?.snapshotId).toBe(landed.snapshotId)
    expect(next?.dedupKey).toMatch(/^l0:/)
  })

  it('a handle that has not seen the commit (another handle compacted) still looks from it on', async () => {
    const { writer, ref, result } = await compactedBucket()
    const landed = await write(writer, put([9], 4))
    const fresh = await Table.open(writer.store)
    const next = await followUpOf(fresh, result, ref)
    expect(next?.snapshotId).toBe(landed.snapshotId)
  })
})
