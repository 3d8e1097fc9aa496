// Abandoned attempts (docs/design.md "Abandoned attempts"): a writer attempt whose commit
// message waits on the commit queue after its writer gave up (a committer that drained it
// died, so it comes back only after the queue's visibility timeout) may land after its
// records were redelivered in another batch. The redelivery's commit names the attempts
// whose records it carries again (`supersedes`), and the folding committer lets only one of
// them land: a superseded attempt never lands after its superseder, and a superseder does
// not land once an attempt it names has. Before, both landed and an aggregation counted the
// records twice (found by the simulation, `npm run sim -- --seed 5`).

import { describe, expect, it } from 'vitest'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import type { CommitMessage } from '../lib/commit/commit-message.ts'
import { commitKeyOf } from '../lib/commit/landed.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeMessage } from './helpers/commit.ts'

const schema = {
  fields: [{ name: 'k', type: 'STRING' }, { name: 'n', type: 'BIGINT' }],
  primaryKeys: ['k'],
  options: { bucket: '1', 'merge-engine': 'aggregation', 'fields.n.aggregate-function': 'sum' },
}

async function setup() {
  const table = await Table.create(new MemoryStore(), schema)
  const rec = (k: string) => ({ ...recordFromJson(table.view, { k, n: 1 }, 'r'), where: 'r' })
  // the first attempt: records a and b, identifier 1
  const first = (await writeMessage(table, [rec('a'), rec('b')], { commitUser: 'w', commitIdentifier: 1n, dedupAfterSnapshotId: 0 }))!
  // the redelivery of a, beside c, in another batch: identifier 2, superseding the first
  const again = (await writeMessage(table, [rec('a'), rec('c')], { commitUser: 'w', commitIdentifier: 2n, dedupAfterSnapshotId: 0, supersedes: [commitKeyOf(first)] }))!
  const read = async () => {
    await compactTable(table, { full: true })
    return Object.fromEntries((await readAll(table)).map((r) => [r[0], Number(r[1])]))
  }
  return { table, first, again, read }
}

const status = (o: { status: string; conflict?: boolean }) => (o.status === 'failed' ? `failed${o.conflict ? ' (conflict)' : ''}` : o.status)

describe('an abandoned attempt and the redelivery that supersedes it', () => {
  it('the redelivery lands first: the abandoned attempt, folded later, never lands', async () => {
    const { table, first, again, read } = await setup()
    const c = new BatchingCommitter(table)
    expect((await c.commit([again])).outcomes.map(status)).toEqual(['landed'])
    expect((await c.commit([first])).outcomes.map(status)).toEqual(['failed (conflict)'])
    expect(await read()).toEqual({ a: 1, c: 1 })
    // a committer that never saw the superseding fold (a cold one) decides the same from the snapshots
    expect((await new BatchingCommitter(await Table.open(table.store)).commit([first])).outcomes.map(status)).toEqual(['failed (conflict)'])
  })

  it('the abandoned attempt lands first: the redelivery does not land (its writer redoes it without those records)', async () => {
    const { table, first, again, read } = await setup()
    const c = new BatchingCommitter(table)
    expect((await c.commit([first])).outcomes.map(status)).toEqual(['landed'])
    expect((await c.commit([again])).outcomes.map(status)).toEqual(['failed (conflict)'])
    expect(await read()).toEqual({ a: 1, b: 1 })
  })

  it('both in one fold, in either order: only the redelivery lands', async () => {
    for (const order of [(f: CommitMessage, a: CommitMessage) => [f, a], (f: CommitMessage, a: CommitMessage) => [a, f]]) {
      const { table, first, again, read } = await setup()
      const msgs = order(first, again)
      const res = await new BatchingCommitter(table).commit(msgs)
      expect(res.outcomes.map(status)).toEqual(msgs.map((m) => (m === again ? 'landed' : 'failed (conflict)')))
      expect(await read()).toEqual({ a: 1, c: 1 })
    }
  })
})
