// The reader's pages in lib/read/, called directly (no handler): scan pages and change
// pages concatenate to the library's reads under any row limit and byte budget, cursors pin
// the snapshot or range, a pin that is gone is a ReadGoneError, a row that fits in no page a
// RowTooLargeError with a cursor past it; lookups; PageBuilder's rules. On a memory store.

import { beforeAll, describe, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { changesPage } from '../lib/read/change-pages.ts'
import { encodeScanCursor, queryFingerprint } from '../lib/read/cursor.ts'
import { readIncremental } from '../lib/read/incremental.ts'
import { lookupRow } from '../lib/read/lookup-row.ts'
import { PageBuilder, type PageLimits, RowTooLargeError } from '../lib/read/page-rows.ts'
import { ReadGoneError } from '../lib/read/read-pins.ts'
import { scanPage } from '../lib/read/scan-pages.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson, rowToJsonLine } from '../lib/table/json-values.ts'
import { StrataInputError } from '../lib/errors.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type Op, schemaFor } from './helpers/model.ts'

let table: Table
const op = (kind: Op['_kind'], dt: string, id: number, a: number, b = `v${a}`): Op => ({ _kind: kind, dt, id, a, b, c: null })
const write = (ops: Op[]) => writeBatch(table, ops.map((o, i) => recordFromJson(table.view, o, `op ${i}`)))
/** Limits that count a response as its body plus a fixed envelope of 40 bytes. */
const limits = (rows: number, maxResponseBytes = 1_000_000): PageLimits => ({ rows, maxResponseBytes, responseBytes: (body) => Buffer.byteLength(body) + 40, bodyBytes: (text) => Buffer.byteLength(text) })
const BIG = 'x'.repeat(2_000)

beforeAll(async () => {
  table = await Table.create(new MemoryStore(), schemaFor('deduplicate'))
  await write([op('+I', '2024-05-01', 1, 1), op('+I', '2024-05-02', 2, 2), op('+I', '2024-05-01', 3, 3)])
  await write([op('+U', '2024-05-01', 1, 10), op('-D', '2024-05-02', 2, 2), op('+I', '2024-05-02', 4, 4, BIG)])
  await write(Array.from({ length: 20 }, (_, i) => op('+I', i % 2 ? '2024-05-01' : '2024-05-03', 10 + i, i)))
})

type Page = { rows: unknown[]; nextCursor: string | null }
/** Every page's rows, following the cursors; each page's response within the budget. */
async function allPages(read: (cursor: string | undefined) => Promise<{ body: string }>, l: PageLimits): Promise<{ rows: string[]; pages: number }> {
  const rows: string[] = []
  let cursor: string | undefined
  let pages = 0
  do {
    const { body } = await read(cursor)
    expect(l.responseBytes(body)).toBeLessThanOrEqual(l.maxResponseBytes)
    const page = JSON.parse(body) as Page
    expect(page.rows.length).toBeGreaterThan(0)
    expect(page.rows.length).toBeLessThanOrEqual(l.rows)
    rows.push(...page.rows.map((r) => JSON.stringify(r)))
    cursor = page.nextCursor ?? undefined
    pages++
  } while (cursor)
  return { rows, pages }
}

describe('scan pages', () => {
  it('concatenate to readAll under any row limit and byte budget', async () => {
    const fields = table.view.fields
    const want = (await readAll(table)).map((r) => JSON.stringify(JSON.parse(rowToJsonLine(fields, fields.map((_, i) => i), r))))
    expect(want).toHaveLength(23)
    for (const l of [limits(1), limits(7), limits(100), limits(100, 2_600), limits(5, 3_000)]) {
      const got = await allPages((cursor) => scanPage(table, { table: 'orders', cursor }, l), l)
      expect(got.rows).toEqual(want)
      if (l.rows === 7) expect(got.pages).toBe(4)
    }
  })

  it('a filtered scan pages the filtered rows only, and its cursor is bound to the filter', async () => {
    const l = limits(3)
    const got = await allPages((cursor) => scanPage(table, { table: 'orders', filter: { dt: '2024-05-03' }, cursor }, l), l)
    expect(got.rows).toHaveLength(10)
    const first = JSON.parse((await scanPage(table, { table: 'orders', filter: { dt: '2024-05-03' } }, l)).body) as Page
    await expect(scanPage(table, { table: 'orders', cursor: first.nextCursor! }, l)).rejects.toThrow(/^cursor: was issued for another table or filter/)
    await expect(scanPage(table, { table: 'other', filter: { dt: '2024-05-03' }, cursor: first.nextCursor! }, l)).rejects.toThrow(StrataInputError)
  })

  it('a cursor pins its snapshot: later commits do not show, and a snapshot that is gone is a ReadGoneError', async () => {
    const l = limits(2)
    const first = JSON.parse((await scanPage(table, { table: 'orders' }, l)).body) as Page & { snapshotId: number }
    expect(first.snapshotId).toBe(3)
    await expect(scanPage(table, { table: 'orders', snapshotId: 2, cursor: first.nextCursor! }, l)).rejects.toThrow(/^snapshotId: 2 differs from the cursor's snapshot 3/)
    const gone = encodeScanCursor({ table: 'orders', snapshotId: 99, split: 0, offset: 0, query: queryFingerprint('orders', undefined) })
    const err = await scanPage(table, { table: 'orders', cursor: gone }, l).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ReadGoneError)
    expect((err as Error).message).toMatch(/^cursor: snapshot 99 of this scan has expired \(retained snapshots: 1\.\.3\)/)
    await expect(scanPage(table, { table: 'orders', snapshotId: 99 }, l)).rejects.toThrow(StrataInputError)
  })

  it('a row that fits in no page is a RowTooLargeError naming its key, with a cursor past it', async () => {
    const l = limits(100, 1_500)
    const err = await scanPage(table, { table: 'orders', filter: { dt: '2024-05-02' } }, l).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(RowTooLargeError)
    expect((err as RowTooLargeError).what).toBe('the row with primary key {"dt":"2024-05-02","id":4}')
    expect((err as RowTooLargeError).skipCursor).toBeNull()
    const all = await scanPage(table, { table: 'orders' }, limits(100, 1_500)).catch((e: unknown) => e)
    // the large row is not first: the page ends before it, and the next page refuses it with a cursor past it
    expect(all).not.toBeInstanceOf(Error)
    const next = (JSON.parse((all as { body: string }).body) as Page).nextCursor!
    const refused = (await scanPage(table, { table: 'orders', cursor: next }, l).catch((e: unknown) => e)) as RowTooLargeError
    expect(refused).toBeInstanceOf(RowTooLargeError)
    expect(refused.skipCursor).toEqual(expect.any(String))
    const after = JSON.parse((await scanPage(table, { table: 'orders', cursor: refused.skipCursor! }, l)).body) as Page
    expect(after.rows.length).toBeGreaterThan(0)
  })
})

describe('change pages', () => {
  it('concatenate to the library incremental read, each row with its _kind', async () => {
    const fields = table.view.fields
    const want = (await readIncremental(table, { fromSnapshot: 1 })).map((c) => JSON.stringify(JSON.parse(`{"_kind":"${ROW_KIND_SHORT[c.kind]}",${rowToJsonLine(fields, fields.map((_, i) => i), c.row).slice(1)}`)))
    expect(want.length).toBeGreaterThan(20)
    for (const l of [limits(1), limits(6), limits(100, 2_700)]) {
      const got = await allPages((cursor) => changesPage(table, { table: 'orders', fromSnapshot: cursor ? undefined : 1, cursor }, l), l)
      expect(got.rows).toEqual(want)
    }
  })

  it('a cursor pins the range: a different range with it is refused', async () => {
    const l = limits(2)
    const first = JSON.parse((await changesPage(table, { table: 'orders', fromSnapshot: 1 }, l)).body) as Page & { toSnapshot: number }
    expect(first.toSnapshot).toBe(3)
    await expect(changesPage(table, { table: 'orders', fromSnapshot: 0, cursor: first.nextCursor! }, l)).rejects.toThrow(/^fromSnapshot: 0 differs from the cursor's 1/)
    await expect(changesPage(table, { table: 'orders', cursor: 'garbage' }, l)).rejects.toThrow(/^cursor: not a cursor of op changes/)
  })
})

describe('lookups', () => {
  it('find a row, answer null for a missing one, and refuse a row over the limit without a skip cursor', async () => {
    const l = limits(1)
    expect((await lookupRow(table, { key: { dt: '2024-05-01', id: 1 }, columns: ['a'] }, l)).body).toBe('{"snapshotId":3,"row":{"a":10}}')
    expect((await lookupRow(table, { key: { dt: '2024-05-01', id: 2 } }, l)).body).toBe('{"snapshotId":3,"row":null}')
    await expect(lookupRow(table, { key: { dt: '2024-05-01' } }, l)).rejects.toThrow(/^key: missing primary key field 'id'/)
    const err = (await lookupRow(table, { key: { dt: '2024-05-02', id: 4 } }, limits(1, 1_000)).catch((e: unknown) => e)) as RowTooLargeError
    expect(err).toBeInstanceOf(RowTooLargeError)
    expect(err.skipCursor).toBeUndefined()
  })
})

describe('PageBuilder', () => {
  const at = (n: number) => () => n
  const key = () => 'k'
  it('ends a page at its row limit or its byte budget, and remembers a row that fits alone in neither', () => {
    const byRows = new PageBuilder<number>(limits(2), 1_000)
    expect([byRows.add(() => 'a', at(0), key), byRows.add(() => 'b', at(1), key), byRows.add(() => 'c', at(2), key)]).toEqual([true, true, false])
    expect(byRows.next).toBe(2)
    const byBytes = new PageBuilder<number>(limits(10), 5)
    expect([byBytes.add(() => 'aa', at(0), key), byBytes.add(() => 'bb', at(1), key)]).toEqual([true, false])
    expect(byBytes.rows).toEqual(['aa'])
    const tooLarge = new PageBuilder<number>(limits(10), 5)
    expect(tooLarge.add(() => 'abcdefgh', at(0), key)).toBe(true)
    expect(tooLarge.add(() => 'b', at(1), key)).toBe(false)
    expect(() => tooLarge.checkFits('the row with primary key', String)).toThrow(RowTooLargeError)
    expect(() => byRows.checkFits('the row with primary key', String)).not.toThrow()
  })
})
