// A compaction job's deduplication key (lib/jobs/coalesce.ts) stays put between two landed
// compactions of its bucket, whatever the sequence numbers of the level-0 files that land
// meanwhile. A batch that began before another and landed after it carries the lower
// numbers; keyed by the lowest-numbered level-0 file, its landing changed the key without
// any compaction, and the bucket queued a third job (found by the simulation, `npm run sim
// -- --seed 7`, and seen by the soak as 2.75 and 3.00 jobs per bucket).

import { describe, expect, it } from 'vitest'
import { bucketsNeedingJobs } from '../lib/jobs/coalesce.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/table/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const put = (t: Table, id: number, sequenceBase: bigint) =>
  writeBatch(t, [{ ...recordFromJson(t.view, { id, v: 1 }, 'r'), where: 'r' }], { sequenceBase })

describe('the deduplication key of a bucket between compactions', () => {
  it('does not change when a level-0 file with lower sequence numbers lands after others; a compaction changes it', async () => {
    const table = await Table.create(new MemoryStore(), {
      fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'INT' }],
      primaryKeys: ['id'],
      options: { bucket: '1', 'deletion-vectors.enabled': 'true', 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum' },
    })
    const keyAt = async (id: number) => (await bucketsNeedingJobs(table, id, [{ partition: (await table.manifests.liveEntries((await table.snapshots.latest())!))[0].partition, bucket: 0 }]))[0].dedupKey
    const a = await put(table, 1, 5_000_000n << 20n)
    const first = await keyAt(a.snapshotId)
    const b = await put(table, 2, 4_000_000n << 20n)
    expect(await keyAt(b.snapshotId)).toBe(first)
    const c = await put(table, 3, 6_000_000n << 20n)
    expect(await keyAt(c.snapshotId)).toBe(first)
    await compactTable(table)
    const d = await put(table, 4, 3_000_000n << 20n)
    expect(await keyAt(d.snapshotId)).not.toBe(first)
  })
})
