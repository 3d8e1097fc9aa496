// A record rising out of level 0 whose sequence number is below the older level's row of the
// same key. Sequence numbers come from each writer's clock above the floor it read, so a batch
// that began first but committed after a later one — and after a compaction lifted that later
// one — rises with the lower number (docs/design.md "Sequence numbers"). The lookup merge must
// still merge it: aggregation adds it, partial-update fills what it carries, and only an engine
// whose merge leaves the older row exactly as it was (deduplicate's higher number, first-row)
// writes nothing. Before, both merge paths took "the merged record has the older row's
// sequence number and kind" to mean "the older row stands", and dropped the record: the soak's
// lost aggregation messages (docs/reliability.md, "The lost aggregation messages").

import { describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const HIGH = 5_000_000n << 20n
const LOW = 4_000_000n << 20n

async function put(table: Table, rows: Record<string, unknown>[], sequenceBase: bigint): Promise<void> {
  await writeBatch(table, rows.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` })), { sequenceBase })
}

const engines = [
  {
    name: 'aggregation (sum)',
    options: { 'merge-engine': 'aggregation', 'fields.a.aggregate-function': 'sum', 'fields.b.aggregate-function': 'sum' },
    later: { id: 1, a: 5, b: 1 },
    earlier: { id: 1, a: 2, b: 1 },
    want: [1, 7, 2],
  },
  {
    name: 'partial-update',
    options: { 'merge-engine': 'partial-update' },
    later: { id: 1, a: 5, b: null },
    earlier: { id: 1, a: 2, b: 9 },
    // the later record's a wins, the earlier one fills b
    want: [1, 5, 9],
  },
  {
    name: 'deduplicate',
    options: {},
    later: { id: 1, a: 5, b: 1 },
    earlier: { id: 1, a: 2, b: 9 },
    want: [1, 5, 1],
  },
  {
    name: 'first-row',
    // first-row compacts with lookup without deletion vectors (Paimon refuses the two together)
    options: { 'merge-engine': 'first-row', 'deletion-vectors.enabled': 'false' },
    later: { id: 1, a: 5, b: 1 },
    earlier: { id: 1, a: 2, b: 9 },
    // first by sequence number: the batch that began first
    want: [1, 2, 9],
  },
]

describe('a rising record numbered below the older row of its key (deletion vectors)', () => {
  for (const e of engines) {
    for (const mergePath of ['columnar', 'row'] as const) {
      it(`${e.name}, ${mergePath} merge: the lifted row is the merge of both`, async () => {
        const table = await Table.create(new MemoryStore(), {
          fields: [{ name: 'id', type: 'INT' }, { name: 'a', type: 'INT' }, { name: 'b', type: 'INT' }],
          primaryKeys: ['id'],
          options: { bucket: '1', 'deletion-vectors.enabled': 'true', ...e.options },
        })
        // the batch that began later commits first and is compacted up
        await put(table, [e.later, { id: 2, a: 1, b: 1 }], HIGH)
        await compactTable(table, { mergePath })
        // the batch that began first lands now, with lower sequence numbers
        await put(table, [e.earlier], LOW)
        await compactTable(table, { mergePath })
        const rows = await readAll(table)
        expect(rows.filter((r) => r[0] === 1)).toEqual([e.want])
        // nothing left in level 0, and the key lives once above it
        const entries = await table.manifests.liveEntries((await table.snapshots.latest())!)
        expect(entries.filter((x) => x.file.level === 0)).toEqual([])
      })
    }
  }
})
