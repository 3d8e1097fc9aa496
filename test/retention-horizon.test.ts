// What idempotency looks back over is what expiration keeps (docs/design.md "Abandoned
// attempts"). Found by the simulation (`npm run sim -- --seed 6 --load-s 45`): a maintenance
// environment whose clock ran an hour fast expired every snapshot past the minimum count;
// a commit message redelivered after its landing had expired was taken for new, landed
// again, and re-added a data file expiration had deleted — a snapshot pointing at a missing
// file, and its rows counted twice.
// The folding committer does not land an APPEND built before the newest expired snapshot in
// its range: whether it landed cannot be told. (Expiration still measures ages from its own
// clock, as Paimon's does: a fast one shortens retention, which now costs a redelivery, not
// a double landing.)

import { describe, expect, it } from 'vitest'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { writeMessage } from './helpers/commit.ts'

const schema = (retained: string) => ({
  fields: [{ name: 'k', type: 'STRING' }, { name: 'n', type: 'BIGINT' }],
  primaryKeys: ['k'],
  options: { bucket: '1', 'merge-engine': 'aggregation', 'fields.n.aggregate-function': 'sum', 'snapshot.num-retained.min': '1', 'snapshot.time-retained': retained },
})
const rec = (t: Table, k: string) => ({ ...recordFromJson(t.view, { k, n: 1 }, 'r'), where: 'r' })

describe('the retention horizon', () => {
  it('a commit message redelivered after the snapshot that landed it expired does not land again', async () => {
    const table = await Table.create(new MemoryStore(), schema('1 ms'))
    const m = (await writeMessage(table, [rec(table, 'a')], { commitUser: 'w', commitIdentifier: 7n, dedupAfterSnapshotId: 0 }))!
    expect((await new BatchingCommitter(table).commit([m])).outcomes[0].status).toBe('landed')
    // the later snapshots a few milliseconds younger, so one-millisecond retention expires the first
    await new Promise((r) => setTimeout(r, 5))
    for (let i = 0; i < 3; i++) await writeBatch(table, [rec(table, `x${i}`)])
    const later = Date.now() + 60_000
    expect((await expireSnapshots(table, { now: later })).expired).toContain(1)
    // the redelivered copy, folded by a committer that never saw the first landing
    const cold = new BatchingCommitter(await Table.open(table.store))
    const o = (await cold.commit([m])).outcomes[0]
    expect(o.status).toBe('failed')
    expect(o.status === 'failed' && o.conflict).toBe(true)
    expect((await readAll(table)).find((r) => r[0] === 'a')?.[1]).toBe(1n)
  })

  it('an APPEND whose base is retained lands as before', async () => {
    const table = await Table.create(new MemoryStore(), schema('1 h'))
    await writeBatch(table, [rec(table, 'x')])
    const m = (await writeMessage(table, [rec(table, 'a')], { commitUser: 'w', commitIdentifier: 8n, dedupAfterSnapshotId: 1 }))!
    expect((await new BatchingCommitter(table).commit([m])).outcomes[0].status).toBe('landed')
  })
})
