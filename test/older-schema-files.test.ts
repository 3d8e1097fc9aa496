// Data files written under an older schema (Paimon's ALTER TABLE and `strata alter` make
// schema-1, schema-2…; every data file records the schema it was written under). Reads,
// lookups and compaction map such a file to the handle's schema by field id
// (lib/table/evolution.ts): an added column reads as null, a dropped one is not read, a
// renamed one keeps its id, a retyped one is cast as Paimon casts it. What cannot be mapped
// is refused by name, writing nothing: a file of a schema newer than the handle's, a schema
// file that is missing, a type pair Paimon has no cast for, a value the cast refuses.

import { describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { lookup, readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { alterTable } from '../lib/handle/alter.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { StaleSchemaError, StrataInputError } from '../lib/errors.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const SCHEMA = {
  fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'STRING' }, { name: 'n', type: 'INT' }],
  primaryKeys: ['id'],
  options: { bucket: '1' },
}

async function write(t: Table, rows: Record<string, unknown>[]): Promise<void> {
  await writeBatch(t, rows.map((r) => ({ ...recordFromJson(t.view, r, 'r'), where: 'r' })))
}

/** A table with rows under schema 0, then a schema-1 made from schema-0 by `change`, as Paimon's ALTER would. */
async function alteredTable(change: (schema: Record<string, any>) => void): Promise<{ store: MemoryStore; table: Table }> {
  const store = new MemoryStore()
  const t0 = await Table.create(store, SCHEMA)
  await write(t0, [1, 2].map((id) => ({ id, v: `v${id}`, n: id })))
  // a second file over the same keys, so that a compaction has to merge them (a lone file would only move up a level, unread)
  await write(t0, [{ id: 2, v: 'v2', n: 20 }])
  const s = JSON.parse(new TextDecoder().decode((await store.get('schema/schema-0'))!))
  s.id = 1
  change(s)
  await store.put('schema/schema-1', new TextEncoder().encode(JSON.stringify(s)))
  return { store, table: await Table.open(store) }
}

const keys = async (store: MemoryStore) => (await store.list('')).map((o) => o.key).sort()

describe('data files of an older schema', () => {
  it('same fields (only options changed): they read as any other', async () => {
    const { table } = await alteredTable((s) => (s.options['snapshot.num-retained.min'] = '20'))
    expect(table.schema.id).toBe(1)
    expect(await readAll(table)).toEqual([[1, 'v1', 1], [2, 'v2', 20]])
  })

  it('a column added, one renamed, one widened, as Paimon writes them: mapped by field id on read, lookup and compaction', async () => {
    const { table } = await alteredTable((s) => {
      s.fields = [
        { id: 3, name: 'extra', type: 'DECIMAL(5, 1)' },
        { id: 0, name: 'id', type: 'INT NOT NULL' },
        { id: 2, name: 'n', type: 'BIGINT' },
        { id: 1, name: 'renamed', type: 'STRING' },
      ]
      s.highestFieldId = 3
    })
    const want = [[null, 1, 1n, 'v1'], [null, 2, 20n, 'v2']]
    expect(await readAll(table)).toEqual(want)
    expect(await lookup(table, { id: 2 })).toEqual(want[1])
    await write(table, [{ id: 3, extra: '1.5', n: 2 ** 40, renamed: 'w' }])
    await compactTable(table, { full: true })
    const all = [...want, [15n, 3, 2n ** 40n, 'w']]
    expect(await readAll(table)).toEqual(all)
    // the compaction rewrote every file under the current schema
    const live = await table.manifests.liveEntries((await table.snapshots.latest())!)
    expect(live.map((e) => Number(e.file.schemaId))).toEqual([1])
  })

  it('a column dropped and one of the same name added: the new column is empty, not the old values', async () => {
    const store = new MemoryStore()
    const t0 = await Table.create(store, SCHEMA)
    await write(t0, [{ id: 1, v: 'old', n: 5 }])
    await alterTable(store, [{ kind: 'drop-column', name: 'v' }])
    const t2 = await alterTable(store, [{ kind: 'add-column', name: 'v', type: 'STRING' }])
    expect(t2.schema.fields.map((f) => [f.id, f.name])).toEqual([[0, 'id'], [2, 'n'], [3, 'v']])
    expect(await readAll(t2)).toEqual([[1, 5, null]])
  })

  it('a primary key field renamed (Paimon allows it): older files keep _KEY_<old name>, read, looked up and compacted by field id, deletion vectors on', async () => {
    const store = new MemoryStore()
    const t0 = await Table.create(store, { ...SCHEMA, primaryKeys: ['id'], options: { bucket: '1', 'deletion-vectors.enabled': 'true' } })
    await write(t0, [{ id: 1, v: 'a', n: 1 }, { id: 2, v: 'b', n: 2 }])
    await compactTable(t0, { full: true })
    const t1 = await alterTable(store, [{ kind: 'rename-column', name: 'id', newName: 'key' }])
    expect(t1.schema.primaryKeys).toEqual(['key'])
    await write(t1, [{ key: 2, v: 'b2', n: 20 }, { key: 3, v: 'c', n: 3 }])
    // the level-0 file is looked up against the older level-1 file (deletion vectors), whose key column is _KEY_id
    await compactTable(t1)
    expect(await readAll(t1)).toEqual([[1, 'a', 1], [2, 'b2', 20], [3, 'c', 3]])
    expect(await lookup(t1, { key: 1 })).toEqual([1, 'a', 1])
    await compactTable(t1, { full: true })
    expect(await readAll(t1)).toEqual([[1, 'a', 1], [2, 'b2', 20], [3, 'c', 3]])
  })

  for (const mergePath of ['row', 'columnar'] as const) {
    it(`merge engines over files of several schemas (${mergePath} merge): aggregation sums a widened column, partial-update fills an added one`, async () => {
      const { compactBucket } = await import('../lib/lsm/compact/compact-bucket.ts')
      const { serializeBinaryRow } = await import('../lib/format/binary-row.ts')
      const compactAll = async (t: Table) => compactBucket(t, { partition: serializeBinaryRow([], []), bucket: 0, full: true, mergePath })
      const agg = new MemoryStore()
      const a0 = await Table.create(agg, { ...SCHEMA, options: { bucket: '1', 'merge-engine': 'aggregation', 'fields.n.aggregate-function': 'sum' } })
      await write(a0, [{ id: 1, v: 'a', n: 2147483647 }])
      const a1 = await alterTable(agg, [{ kind: 'update-column-type', name: 'n', type: 'BIGINT' }, { kind: 'rename-column', name: 'n', newName: 'total' }])
      expect(a1.schema.options['fields.total.aggregate-function']).toBe('sum')
      await write(a1, [{ id: 1, v: 'b', total: 10 }])
      expect(await readAll(a1)).toEqual([[1, 'b', 2147483657n]])
      await compactAll(a1)
      expect(await readAll(a1)).toEqual([[1, 'b', 2147483657n]])

      const pu = new MemoryStore()
      const p0 = await Table.create(pu, { ...SCHEMA, options: { bucket: '1', 'merge-engine': 'partial-update' } })
      await write(p0, [{ id: 1, v: 'a', n: 1 }])
      const p1 = await alterTable(pu, [{ kind: 'add-column', name: 'extra', type: 'DECIMAL(8, 2)', position: { after: 'id' } }])
      await write(p1, [{ id: 1, extra: '2.50' }])
      await write(p1, [{ id: 1, n: 7 }])
      expect(await readAll(p1)).toEqual([[1, 250n, 'a', 7]])
      await compactAll(p1)
      expect(await readAll(p1)).toEqual([[1, 250n, 'a', 7]])
    })
  }

  it('a file of a schema newer than the handle (an alter after it opened): read and compaction refuse it by name and write nothing', async () => {
    const store = new MemoryStore()
    const old = await Table.create(store, SCHEMA)
    await write(old, [{ id: 1, v: 'a', n: 1 }])
    const altered = await alterTable(store, [{ kind: 'add-column', name: 'extra', type: 'INT' }])
    await write(altered, [{ id: 1, v: 'b', n: 2, extra: 7 }])
    const refusal = /data file data-.*\.parquet: written under schema 1, newer than this handle's schema 0: the table was altered after it was opened; open it again/
    const err = await readAll(old).catch((e) => e)
    // not bad input: retried on a handle opened again, it succeeds
    expect(err).toBeInstanceOf(StaleSchemaError)
    expect(err).not.toBeInstanceOf(StrataInputError)
    expect(err.message).toMatch(refusal)
    const before = await keys(store)
    await expect(compactTable(old, { full: true })).rejects.toThrow(refusal)
    expect(await keys(store)).toEqual(before)
    expect(await old.latestSchemaId()).toBe(1)
    expect(await readAll(await Table.open(store))).toEqual([[1, 'b', 2, 7]])
  })

  it('a type change whose values do not convert, one Paimon has no cast for, or a missing schema file: refused naming the field or file, writing nothing', async () => {
    // STRING → INT is Paimon's explicit cast; 'v1' does not parse, and Paimon's reader fails the same way
    const { store, table } = await alteredTable((s) => (s.fields[1].type = 'INT'))
    await expect(readAll(table)).rejects.toThrow(/field 'v' of data file data-.*\.parquet: cannot cast "v1" to INT: invalid character found/)
    const before = await keys(store)
    await expect(compactTable(table, { full: true })).rejects.toThrow(/field 'v' of data file data-.*\.parquet: cannot cast "v\d" to INT/)
    expect(await keys(store)).toEqual(before)
    // INT → DATE: no cast in Paimon (a schema Paimon's alter would not write)
    const { table: t1 } = await alteredTable((s) => (s.fields[2].type = 'DATE'))
    await expect(readAll(t1)).rejects.toThrow(/data file data-.*\.parquet: field 'n' \(id 2\) is INT in schema 0 and DATE in schema 1: there is no cast from INT to DATE/)
    const { table: t2 } = await alteredTable(() => {})
    await t2.store.delete('schema/schema-0')
    await expect(readAll(t2)).rejects.toThrow(/written under schema 0, which is missing from .* \(no schema\/schema-0\)/)
  })
})
