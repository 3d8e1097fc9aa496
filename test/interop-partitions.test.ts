// A write touching many partitions against Apache Paimon 1.4.2: Strata writes one row into
// each of 600 partitions in one commit (more bucket groups than PACK_GROUPS_OVER, so its
// delta manifests are packed, several partitions to a manifest), then a second small
// commit, and Paimon's batch read returns exactly those rows. Without Java or Maven the file
// is skipped with one line saying how to run it, except under CI.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { PACK_GROUPS_OVER } from '../lib/commit/commit.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { buildHarness, byKey, describeWithJava, paimonBatch, parseRows } from './helpers/interop.ts'

const PARTITIONS = 600

describeWithJava('Paimon reads a table written across many partitions in one commit', 'npx vitest run test/interop-partitions.test.ts (needs Java 17+ and Maven 3 on PATH)', () => {
  let dir: string
  beforeAll(() => {
    buildHarness()
    dir = mkdtempSync(join(tmpdir(), 'strata-interop-partitions-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('returns every row of a commit whose manifests hold several partitions each', async () => {
    expect(PARTITIONS).toBeGreaterThan(PACK_GROUPS_OVER)
    const table = await Table.create(join(dir, 't'), {
      fields: [
        { name: 'p', type: 'INT NOT NULL' },
        { name: 'id', type: 'BIGINT NOT NULL' },
        { name: 'v', type: 'STRING' },
      ],
      primaryKeys: ['p', 'id'],
      partitionKeys: ['p'],
      options: { bucket: '1' },
    })
    const write = (rows: Record<string, unknown>[]) => writeBatch(table, rows.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` })))
    const first = Array.from({ length: PARTITIONS }, (_, p) => ({ p, id: 1, v: `v${p}` }))
    await write(first)
    const s = (await table.snapshots.latest())!
    expect((await table.manifests.readList(s.deltaManifestList)).length).toBeLessThan(PARTITIONS / 10)
    await write([{ p: 3, id: 1, v: 'again' }, { p: 599, id: 2, v: 'new' }])

    const [read] = paimonBatch([['read', join(dir, 't')]])
    expect(read.ok, read.error).toBe(true)
    const expected = first.map((r) => (r.p === 3 ? { ...r, v: 'again' } : r)).concat([{ p: 599, id: 2, v: 'new' }])
    // the harness renders a BIGINT as a string, an INT as a number
    expect(byKey(parseRows(read.output), ['p', 'id'])).toEqual(byKey(expected.map((r) => ({ ...r, id: String(r.id) })), ['p', 'id']))
  })
})
