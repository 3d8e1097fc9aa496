// Lookup compaction as Paimon runs it (the interop suite checks the same against Paimon):
// - first-row: its compactions take all of level 0 up and drop a rising key the older
//   levels already hold, so the levels above 0 hold each key once; its reads skip level 0.
//   The reproduction from issue 17: many rows, a full compaction, four single-row writes of
//   one existing key, a compaction. Before, that key was live in two levels above 0 and a
//   Paimon reader returned it twice.
// - aggregation with deletion vectors: Paimon's writer lookup-compacts each commit, and its
//   lookup merge hands a key's records to the aggregate function directly, so a lone -D of a
//   key with no row becomes a row (sum 0 − 7). Strata's compactor does the same for records
//   it takes up from level 0.

import { describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const schema = {
  fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'STRING' }],
  primaryKeys: ['id'],
  options: { bucket: '1', 'merge-engine': 'first-row', 'num-sorted-run.compaction-trigger': '5' },
}

async function write(table: Table, rows: { id: number; v: string }[]): Promise<void> {
  await writeBatch(table, rows.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` })))
}

describe('lookup compaction, as Paimon', () => {
  it('a key written again after it reached the top level stays there once, with its first value; no level above 0 holds it twice', async () => {
    const table = await Table.create(new MemoryStore(), schema)
    await write(table, Array.from({ length: 300 }, (_, i) => ({ id: i, v: `v${i}` })))
    await compactTable(table, { full: true })
    for (let k = 1; k <= 4; k++) await write(table, [{ id: 1, v: `w${k}` }, { id: 1000 + k, v: `n${k}` }])
    // level 0 is not read: the four writes wait for a compaction
    expect((await readAll(table)).length).toBe(300)
    await compactTable(table, { full: false })
    const entries = await table.manifests.liveEntries((await table.snapshots.latest())!)
    expect(entries.filter((e) => e.file.level === 0)).toEqual([])
    // every key once across the levels: the rows stored equal the distinct keys
    expect(entries.reduce((n, e) => n + Number(e.file.rowCount), 0)).toBe(304)
    const rows = new Map((await readAll(table)).map((r) => [r[0] as number, r[1]]))
    expect(rows.size).toBe(304)
    expect(rows.get(1)).toBe('v1')
    expect(rows.get(1003)).toBe('n3')
  })

  it('aggregation with deletion vectors: a lone -D of a key with no row, taken up from level 0, is aggregated (sum: -7, then +10 reads 3); without deletion vectors it is dropped (10)', async () => {
    for (const [dv, afterDelete, end] of [[true, [[1, 1], [2, -7]], [[1, 1], [2, 3]]], [false, [[1, 1]], [[1, 1], [2, 10]]]] as const) {
      const table = await Table.create(new MemoryStore(), {
        fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'INT' }],
        primaryKeys: ['id'],
        options: { bucket: '1', 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum', 'deletion-vectors.enabled': String(dv) },
      })
      const put = (rows: Record<string, unknown>[]) => writeBatch(table, rows.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` })))
      await put([{ id: 1, v: 1 }])
      await put([{ _kind: '-D', id: 2, v: 7 }])
      await compactTable(table, { full: true })
      expect(await readAll(table), `deletion vectors ${dv}`).toEqual(afterDelete)
      await put([{ id: 2, v: 10 }])
      await compactTable(table, { full: true })
      expect(await readAll(table), `deletion vectors ${dv}`).toEqual(end)
    }
  })
  it('deletion vectors: a retraction of a row an earlier commit wrote meets that row in one merge (last_non_null_value, row and columnar paths)', async () => {
    // Paimon's lookup merge folds the looked-up row, then each level-0 record in order: 3, then
    // -U 3 retracts it to null. Merging the lone -U first (a retraction from nothing) and the
    // older row with that after would keep 3.
    for (const mergePath of ['row', 'columnar'] as const) {
      const table = await Table.create(new MemoryStore(), {
        fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'INT' }],
        primaryKeys: ['id'],
        options: { bucket: '1', 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'last_non_null_value', 'deletion-vectors.enabled': 'true' },
      })
      const put = (rows: Record<string, unknown>[]) => writeBatch(table, rows.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` })))
      await put([{ id: 1, v: 3 }, { id: 2, v: 4 }])
      await compactTable(table, { full: true })
      // level 0 goes up to level 4, the older row is looked up in level 5
      await put([{ _kind: '-U', id: 1, v: 3 }])
      await compactTable(table, { full: false, mergePath })
      const levels = (await table.manifests.liveEntries((await table.snapshots.latest())!)).map((e) => e.file.level).sort()
      expect(levels, mergePath).toEqual([4, 5])
      expect((await readAll(table)).sort((a, b) => (a[0] as number) - (b[0] as number)), mergePath).toEqual([[1, null], [2, 4]])
    }
  })
})
