// Handles that outlive an alter (docs/operations.md "Altering a table while it runs"): a
// writer still on the older schema commits after the alter and its rows map by field id; the
// snapshot never claims a schema older than its predecessor's; the folding committer lands
// messages of older schemas and returns newer ones; a warm function environment
// notices the newer schema (one HEAD at most every SCHEMA_CHECK_MS) and opens the table again.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { SCHEMA_CHECK_MS, resetRuntime, resolveTable } from '../functions/shared/runtime.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { alterTable } from '../lib/handle/alter.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { writeMessage } from './helpers/commit.ts'

const SCHEMA = { fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'STRING' }, { name: 'n', type: 'INT' }], primaryKeys: ['id'], options: { bucket: '1' } }

async function write(t: Table, rows: Record<string, unknown>[]): Promise<void> {
  await writeBatch(t, rows.map((r) => ({ ...recordFromJson(t.view, r, 'r'), where: 'r' })))
}

describe('handles older than the schema', () => {
  it('a writer on the older schema commits after an alter: it lands, its rows map by field id, the snapshot keeps the newer schema id', async () => {
    const store = new MemoryStore()
    const old = await Table.create(store, SCHEMA)
    await write(old, [{ id: 1, v: 'a', n: 1 }])
    const altered = await alterTable(store, [{ kind: 'drop-column', name: 'v' }, { kind: 'add-column', name: 'v', type: 'INT' }, { kind: 'update-column-type', name: 'n', type: 'BIGINT' }])
    await write(altered, [{ id: 2, n: 2, v: 20 }])
    // the old handle knows nothing of the alter: it writes the dropped STRING v and an INT n
    expect(await old.newerSchemaExists()).toBe(true)
    await write(old, [{ id: 3, v: 'stale', n: 3 }])
    const snapshots = await Promise.all([1, 2, 3].map((id) => old.snapshots.snapshot(id)))
    expect(snapshots.map((s) => s!.schemaId)).toEqual([0, 1, 1])
    const now = await Table.open(store)
    expect(await readAll(now)).toEqual([[1, 1n, null], [2, 2n, 20], [3, 3n, null]])
    await compactTable(now, { full: true })
    expect(await readAll(now)).toEqual([[1, 1n, null], [2, 2n, 20], [3, 3n, null]])
  })
})

describe('the folding committer across an alter', () => {
  it('lands a message of an older schema; returns one of a newer schema than its handle for redelivery (not a conflict), and a fresh handle lands it', async () => {
    const store = new MemoryStore()
    const old = await Table.create(store, SCHEMA)
    const rec = (t: Table, r: Record<string, unknown>) => ({ ...recordFromJson(t.view, r, 'r'), where: 'r' })
    const fromOld = (await writeMessage(old, [rec(old, { id: 1, v: 'a', n: 1 })]))!
    const altered = await alterTable(store, [{ kind: 'add-column', name: 'x', type: 'INT' }])
    const fromNew = (await writeMessage(altered, [rec(altered, { id: 2, v: 'b', n: 2, x: 9 })]))!
    expect([fromOld.schemaId, fromNew.schemaId]).toEqual([0, 1])
    // a committer still on schema 0
    const stale = await new BatchingCommitter(old).commit([fromOld, fromNew])
    expect(stale.outcomes.map((o) => o.status)).toEqual(['landed', 'failed'])
    const refused = stale.outcomes[1] as { status: 'failed'; error: Error; conflict: boolean }
    expect(refused.conflict).toBe(false)
    expect(refused.error.message).toMatch(/schemaId 1, newer than the committer's schema 0 \(the table was altered after the committer opened it\); expected at most 0/)
    // a committer on schema 1 takes both kinds
    const fresh = await new BatchingCommitter(await Table.open(store)).commit([fromNew])
    expect(fresh.outcomes.map((o) => o.status)).toEqual(['landed'])
    expect(await readAll(await Table.open(store))).toEqual([[1, 'a', 1, null], [2, 'b', 2, 9]])
  })
})

describe('a warm function environment', () => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-schema-handles-'))
  afterEach(() => vi.useRealTimers())
  afterAll(() => {
    rmSync(dir, { recursive: true, force: true })
    delete process.env.STRATA_TABLES
    resetRuntime()
  })

  it('opens the table again once it has a newer schema, checking at most every SCHEMA_CHECK_MS', async () => {
    const uri = join(dir, 't')
    await Table.create(uri, SCHEMA)
    process.env.STRATA_TABLES = JSON.stringify({ t: { uri } })
    resetRuntime()
    vi.useFakeTimers({ toFake: ['Date'] })
    const first = await resolveTable('t')
    expect(first!.table.schema.id).toBe(0)
    await alterTable(uri, [{ kind: 'add-column', name: 'x', type: 'INT' }])
    // inside the window: the cached handle, no probe
    vi.setSystemTime(Date.now() + SCHEMA_CHECK_MS - 1)
    expect((await resolveTable('t'))!.table).toBe(first!.table)
    vi.setSystemTime(Date.now() + 1)
    const second = await resolveTable('t')
    expect(second!.table.schema.id).toBe(1)
    // and it keeps the new handle while nothing changes
    vi.setSystemTime(Date.now() + SCHEMA_CHECK_MS)
    expect((await resolveTable('t'))!.table).toBe(second!.table)
  })
})
