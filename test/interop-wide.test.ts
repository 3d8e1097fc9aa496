// A wide table against Apache Paimon 1.4.2: Strata writes 4,500 rows of a BIGINT key and 300
// INT columns (row groups of a page per column chunk, about 2,000 rows each: three in the file)
// and Paimon's batch read returns exactly those rows. Without Java or Maven the file is
// skipped with one line saying how to run it, except under CI, where a run that cannot run
// interop fails.

import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parquetMetadata } from 'hyparquet'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { buildHarness, byKey, describeWithJava, paimonBatch, parseRows } from './helpers/interop.ts'

const WIDTH = 300
const ROWS = 4500
const name = (c: number) => `c${c}`

describeWithJava('Paimon reads a wide Strata table', 'npx vitest run test/interop-wide.test.ts (needs Java 17+ and Maven 3 on PATH)', () => {
  let dir: string
  beforeAll(() => {
    buildHarness()
    dir = mkdtempSync(join(tmpdir(), 'strata-interop-wide-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('returns every row of a file of several row groups of 304 column chunks', async () => {
    const fields = [{ name: 'id', type: 'BIGINT NOT NULL' }, ...Array.from({ length: WIDTH }, (_, c) => ({ name: name(c), type: 'INT' }))]
    const table = await Table.create(join(dir, 't'), { fields, primaryKeys: ['id'], options: { bucket: '1' } })
    const records = Array.from({ length: ROWS }, (_, r) => {
      const rec: Record<string, unknown> = { id: r }
      for (let c = 0; c < WIDTH; c++) rec[name(c)] = (r + c) % 11 === 0 ? null : r * 7 + c
      return rec
    })
    await writeBatch(table, records.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` })))

    const files = readdirSync(dir, { recursive: true, withFileTypes: true }).filter((e) => e.isFile() && e.name.endsWith('.parquet'))
    expect(files).toHaveLength(1)
    const bytes = readFileSync(join(files[0].parentPath, files[0].name))
    const groups = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer).row_groups
    expect(groups.length).toBeGreaterThan(1)
    expect(groups[0].columns).toHaveLength(WIDTH + 4)

    const [read] = paimonBatch([['read', join(dir, 't')]])
    expect(read.ok, read.error).toBe(true)
    const paimon = byKey(parseRows(read.output), ['id'])
    expect(paimon).toHaveLength(ROWS)
    // the harness renders a BIGINT as a string, an INT as a number, a null as null
    expect(paimon).toEqual(byKey(records.map((r) => ({ ...r, id: String(r.id) })), ['id']))
  })
})
