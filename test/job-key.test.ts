// A compaction job's deduplication key (lib/jobs/coalesce.ts) stays put between two landed
// compactions of its bucket, whatever the sequence numbers of the level-0 files that land
// meanwhile. A batch that began before another and landed after it carries the lower
// numbers; keyed by the lowest-numbered level-0 file, its landing changed the key without
// any compaction, and the bucket queued a third job (found by the simulation, `npm run sim
// -- --seed 7`, and seen by the soak as 2.75 and 3.00 jobs per bucket). And a redelivered
// batch whose records had landed keys its jobs at the state it read, not at the old landing
// (found by the simulation, seed 45: three redelivered batches each added a job keyed on a
// state compacted minutes before, past SQS's deduplication window).

import { describe, expect, it } from 'vitest'
import { ingest } from '../lib/ingest/ingest.ts'
import { bucketsNeedingJobs } from '../lib/jobs/coalesce.ts'
import { MemoryJobQueue } from '../lib/jobs/compaction-job.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
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

describe('the jobs of a redelivered batch whose records landed earlier', () => {
  it('are keyed at the bucket state the redelivery read, shared with a writer landing there, not at the old landing', async () => {
    const table = await Table.create(new MemoryStore(), {
      fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'INT' }],
      primaryKeys: ['id'],
      options: { bucket: '1', 'deletion-vectors.enabled': 'true', 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum' },
    })
    const jobs = new MemoryJobQueue()
    const opts = { resolve: async () => ({ table, jobs }), defaultTable: 't', rejects: new MemoryStore(), commitUser: 'w' }
    const rec = (id: string, receiveCount = 1) => ({ id, source: id, body: JSON.stringify({ id: Number(id.slice(1)), v: 1 }), receiveCount, firstReceivedAt: Date.now() })
    await ingest([rec('m1')], opts)
    const first = jobs.jobs[0].dedupKey
    await compactTable(table)
    await ingest([rec('m2')], opts)
    const current = jobs.jobs[1].dedupKey
    expect(current).not.toBe(first)
    // m1 again (its acknowledgement was lost): recognised, not written, and its job is the current one
    const res = await ingest([rec('m1', 2)], opts)
    expect(res.tables[0].deduplicated).toBe(true)
    expect(jobs.jobs[2].dedupKey).toBe(current)
  })
})
