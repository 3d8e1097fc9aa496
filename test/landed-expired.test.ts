// A warm process walks the snapshot chain for an identity (a redelivered writer batch's
// earlier attempt, a queued commit catching up) over a folded snapshot it still holds in
// its cache after expiration removed it, and its sidecar with it. Before, the walk failed
// with "folds several commits but … is missing" on every redelivery, until the batch went
// to the dead-letter queue (found by the simulation: `npm run sim -- --seed 7` with
// one-minute retention). The snapshot expired: nothing landed in it is left to find.

import { describe, expect, it } from 'vitest'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { SnapshotExpiredError } from '../lib/errors.ts'
import { commitKeyOf } from '../lib/commit/landed.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { writeMessage } from './helpers/commit.ts'

const schema = { fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'STRING' }], primaryKeys: ['id'], options: { bucket: '1', 'snapshot.num-retained.min': '1', 'snapshot.time-retained': '1 ms' } }
const rec = (t: Table, id: number) => ({ ...recordFromJson(t.view, { id, v: `v${id}` }, 'r'), where: 'r' })

describe('a cached folded snapshot that has since expired', () => {
  it('reads as expired, and a walk over it ends there instead of failing', async () => {
    const store = new MemoryStore()
    const table = await Table.create(store, schema)
    const a = (await writeMessage(table, [rec(table, 1)]))!
    const b = (await writeMessage(table, [rec(table, 2)]))!
    const res = await new BatchingCommitter(table).commit([a, b])
    const folded = res.snapshots[0].id
    // a warm process reads the folded snapshot (now cached), but not its sidecar
    const warm = await Table.open(store)
    const cached = (await warm.snapshots.snapshot(folded))!
    for (let i = 3; i < 6; i++) await writeBatch(table, [rec(table, i)])
    const other = await Table.open(store)
    const expired = await expireSnapshots(other, { now: Date.now() + 60_000 })
    expect(expired.expired).toContain(folded)
    await expect(warm.landed.of(cached)).rejects.toBeInstanceOf(SnapshotExpiredError)
    // the walk of a queued commit catching up, and of a redelivered batch's search
    const latest = await other.snapshots.latestId()
    expect(await warm.landed.find(commitKeyOf(a), 0, latest)).toBeNull()
  })
})
