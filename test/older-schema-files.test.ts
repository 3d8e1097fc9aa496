// Data files written under an older schema (Paimon's ALTER TABLE makes schema-1, schema-2…;
// Strata writes only schema-0). A file whose schema has the same fields reads as any other
// (an ALTER that only set options); one whose fields differ (a column added, dropped,
// renamed or retyped) needs schema evolution, which Strata refuses by name on read and on
// compaction, writing nothing, rather than reading columns by the wrong layout.

import { describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/table/table.ts'
import { StrataInputError } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const SCHEMA = {
  fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'STRING' }],
  primaryKeys: ['id'],
  options: { bucket: '1' },
}

/** A table with rows under schema 0, then a schema-1 made from schema-0 by `change`, as Paimon's ALTER would. */
async function alteredTable(change: (schema: Record<string, any>) => void): Promise<{ store: MemoryStore; table: Table }> {
  const store = new MemoryStore()
  const t0 = await Table.create(store, SCHEMA)
  await writeBatch(t0, [1, 2].map((id) => ({ ...recordFromJson(t0.view, { id, v: `v${id}` }, 'r'), where: 'r' })))
  // a second file over the same keys, so that a compaction has to merge them (a lone file would only move up a level, unread)
  await writeBatch(t0, [{ ...recordFromJson(t0.view, { id: 2, v: 'v2' }, 'r'), where: 'r' }])
  const s = JSON.parse(new TextDecoder().decode((await store.get('schema/schema-0'))!))
  s.id = 1
  change(s)
  await store.put('schema/schema-1', new TextEncoder().encode(JSON.stringify(s)))
  return { store, table: await Table.open(store) }
}

describe('data files of an older schema', () => {
  it('same fields (only options changed): they read as any other', async () => {
    const { table } = await alteredTable((s) => (s.options['snapshot.num-retained.min'] = '20'))
    expect(table.schema.id).toBe(1)
    expect(await readAll(table)).toEqual([[1, 'v1'], [2, 'v2']])
  })

  it('a column added: read and compaction refuse by name, naming schema evolution, and write nothing', async () => {
    const { store, table } = await alteredTable((s) => {
      s.fields.push({ id: 2, name: 'extra', type: 'INT' })
      s.highestFieldId = 2
    })
    const refusal = /data file data-.*\.parquet was written under schema 0, whose fields differ from the table's schema 1: reading files written before a column change needs schema evolution, which Strata does not support yet/
    const err = await readAll(table).catch((e) => e)
    expect(err).toBeInstanceOf(StrataInputError)
    expect(err.message).toMatch(refusal)
    const before = (await store.list('')).map((o) => o.key).sort()
    await expect(compactTable(table, { full: true })).rejects.toThrow(refusal)
    expect((await store.list('')).map((o) => o.key).sort()).toEqual(before)
  })
})
