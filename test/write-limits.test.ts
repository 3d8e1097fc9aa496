// What writeBatch refuses about a row before it writes anything (issue 16): a row larger
// than `write.max-row-size`, and a partition value whose directory name no file system or
// S3 key can hold. Either is a StrataInputError naming the record, and the table's objects
// are unchanged. Runs on the local file store, where the long partition value used to fail
// deep in the write with ENAMETOOLONG.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { readAll } from '../lib/read/table-read.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import { rowSize } from '../lib/write/record-checks.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const dirs: string[] = []
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
})

async function table(options: Record<string, string> = {}): Promise<{ store: ObjectStore; table: Table }> {
  const dir = mkdtempSync(join(tmpdir(), 'strata-limits-'))
  dirs.push(dir)
  const store = new LocalFileStore(dir)
  const t = await Table.create(store, {
    fields: [
      { name: 'dt', type: 'STRING' },
      { name: 'id', type: 'BIGINT' },
      { name: 'note', type: 'STRING' },
      { name: 'raw', type: 'BYTES' },
      { name: 'n', type: 'INT' },
    ],
    primaryKeys: ['dt', 'id'],
    partitionKeys: ['dt'],
    options: { bucket: '2', ...options },
  })
  return { store, table: t }
}

const keys = async (store: ObjectStore) => (await store.list('')).map((o) => o.key).sort()
const recs = (t: Table, objs: Record<string, unknown>[]) => objs.map((o, i) => ({ ...recordFromJson(t.view, o, `line ${i + 1}`), where: `line ${i + 1}` }))

async function refusal(t: Table, store: ObjectStore, objs: Record<string, unknown>[]): Promise<string> {
  const before = await keys(store)
  const e = await writeBatch(t, recs(t, objs)).catch((x: unknown) => x)
  if (!(e instanceof StrataInputError)) throw new Error(`expected a StrataInputError, got ${String(e)}`)
  expect(await keys(store)).toEqual(before)
  return e.message
}

describe('write.max-row-size', () => {
  it('counts strings as UTF-8, bytes raw and 8 per other value', () => {
    expect(rowSize(['ab', 1n, 'é€', new Uint8Array(5), null])).toBe(2 + 8 + 5 + 5 + 0)
  })

  it('refuses a larger row naming its position, key, size and the limit; a row at the limit is written', async () => {
    const { store, table: t } = await table({ 'write.max-row-size': '100 b' })
    // 'dt' 10 bytes + id 8 + n 8 = 26; the note makes up the rest (é is 2 bytes)
    const message = await refusal(t, store, [{ dt: '2024-05-01', id: 1 }, { dt: '2024-05-01', id: 2, n: 3, note: 'é'.repeat(38) }])
    expect(message).toBe(`line 2: row of 102 bytes is larger than write.max-row-size (100 bytes); key {"dt":"2024-05-01","id":2}, largest field 'note' (76 bytes)`)
    await writeBatch(t, recs(t, [{ dt: '2024-05-01', id: 2, n: 3, note: 'é'.repeat(37) }]))
    expect(await readAll(t)).toHaveLength(1)
  })

  it('the default 4 mb refuses a 5 MB string and names a long key by its start', async () => {
    const { store, table: t } = await table()
    const message = await refusal(t, store, [{ dt: '2024-05-01', id: 1, note: 'x'.repeat(5_000_000) }])
    expect(message).toMatch(/^line 1: row of 5000018 bytes is larger than write\.max-row-size \(4194304 bytes\); key \{"dt":"2024-05-01","id":1\}, largest field 'note' \(5000000 bytes\)$/)
    const bytes = Buffer.alloc(4_200_000).toString('base64')
    expect(await refusal(t, store, [{ dt: 'y'.repeat(200), id: 1, raw: bytes }])).toMatch(/^line 1: row of 4200208 bytes .*; key \{"dt":"y{20,}\.\.\., largest field 'raw' \(4200000 bytes\)$/)
  })
})

describe('partition values the storage cannot name', () => {
  it('a partition directory name over 255 bytes is refused before anything is written (it failed with ENAMETOOLONG)', async () => {
    const { store, table: t } = await table()
    const message = await refusal(t, store, [{ dt: '2024-05-01', id: 1 }, { dt: 'x'.repeat(300), id: 2 }])
    expect(message).toMatch(/^line 2: partition field 'dt': directory name 'dt=x+\.\.\.' is 303 bytes; a partition directory name \(key=value, escaped\) has at most 255/)
    // escaping counts: 100 '%' become 300 bytes
    expect(await refusal(t, store, [{ dt: '%'.repeat(100), id: 2 }])).toMatch(/^line 1: partition field 'dt': directory name 'dt=%25%25.*' is 303 bytes/)
    await writeBatch(t, recs(t, [{ dt: 'x'.repeat(252), id: 3 }]))
    expect(await readAll(t)).toHaveLength(1)
  })
})
