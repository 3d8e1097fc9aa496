// What Paimon refuses of a first-row table, Strata refuses too (the interop suite checks the
// same against Paimon itself): deletion vectors at create, and a -D or -U without
// `ignore-delete` at write, the whole batch before anything is written. A first-row table
// with deletion vectors made by an older Strata stays readable; writes to it are refused.

import { describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const schema = (options: Record<string, string>) => ({
  fields: [{ name: 'id', type: 'INT' }, { name: 'a', type: 'INT' }],
  primaryKeys: ['id'],
  options: { bucket: '1', 'merge-engine': 'first-row', ...options },
})

const records = (table: Table, rows: Record<string, unknown>[]) => rows.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` }))

describe('first-row refusals, as Paimon', () => {
  it('deletion vectors: create is refused, naming both options', async () => {
    const err = await Table.create(new MemoryStore(), schema({ 'deletion-vectors.enabled': 'true' })).catch((e) => e)
    expect(err).toBeInstanceOf(StrataInputError)
    expect(err.message).toMatch(/'deletion-vectors\.enabled' is "true" with 'merge-engine' = "first-row".*does not need deletion vectors.*expected 'deletion-vectors\.enabled' = 'false'/)
  })

  it('deletion vectors in a stored schema (an older Strata made it): the table reads; a write is refused and writes nothing', async () => {
    const store = new MemoryStore()
    const table = await Table.create(store, schema({}))
    await writeBatch(table, records(table, [{ id: 1, a: 1 }]))
    // out of level 0, which a deletion-vector read skips
    await compactTable(table, { full: true })
    // the schema as an older Strata stored it
    const key = 'schema/schema-0'
    const stored = JSON.parse(new TextDecoder().decode((await store.get(key))!))
    stored.options['deletion-vectors.enabled'] = 'true'
    await store.put(key, new TextEncoder().encode(JSON.stringify(stored)))
    const old = await Table.open(store)
    expect(await readAll(old)).toEqual([[1, 1]])
    await expect(writeBatch(old, records(old, [{ id: 2, a: 2 }]))).rejects.toThrow(/can be read but not written by Strata.*First row merge engine does not need deletion vectors/)
    expect(await old.snapshots.latestId()).toBe(2)
  })

  it('a -D or -U without ignore-delete fails its whole batch before anything is written; with ignore-delete it is dropped', async () => {
    const table = await Table.create(new MemoryStore(), schema({}))
    await writeBatch(table, records(table, [{ id: 1, a: 1 }]))
    for (const kind of ['-D', '-U']) {
      await expect(writeBatch(table, records(table, [{ id: 2, a: 2 }, { _kind: kind, id: 1, a: 1 }]))).rejects.toThrow(
        /record 1: By default, First row merge engine can not accept DELETE\/UPDATE_BEFORE records.*'ignore-delete'/,
      )
    }
    expect(await table.snapshots.latestId()).toBe(1)
    // first-row reads skip level 0, as Paimon's: the row shows once a compaction takes it up
    expect(await readAll(table)).toEqual([])
    await compactTable(table, { full: false })
    expect(await readAll(table)).toEqual([[1, 1]])

    const ignoring = await Table.create(new MemoryStore(), schema({ 'ignore-delete': 'true' }))
    await writeBatch(ignoring, records(ignoring, [{ id: 1, a: 1 }]))
    await writeBatch(ignoring, records(ignoring, [{ id: 2, a: 2 }, { _kind: '-D', id: 1, a: 1 }]))
    await compactTable(ignoring, { full: false })
    expect(await readAll(ignoring)).toEqual([[1, 1], [2, 2]])
  })
})
