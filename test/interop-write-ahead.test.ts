// Manifests written ahead against Apache Paimon 1.4.2: Strata writes one row into each of
// 600 partitions in one commit with a small write buffer and write-ahead budget, so most
// entries reach the snapshot through manifests written before the commit, and Paimon's batch
// read returns exactly those rows. Without Java or Maven the file is skipped with one line
// saying how to run it, except under CI.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { RecordingCommitter } from './helpers/commit.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { buildHarness, byKey, describeWithJava, paimonBatch, parseRows } from './helpers/interop.ts'

const PARTITIONS = 600

describeWithJava('Paimon reads a commit whose entries were written ahead', 'npx vitest run test/interop-write-ahead.test.ts (needs Java 17+ and Maven 3 on PATH)', () => {
  let dir: string
  beforeAll(() => {
    buildHarness()
    dir = mkdtempSync(join(tmpdir(), 'strata-interop-write-ahead-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('returns every row of a commit whose delta lists manifests written ahead', async () => {
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
    const records = (rows: Record<string, unknown>[]) => rows.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` }))
    const first = Array.from({ length: PARTITIONS }, (_, p) => ({ p, id: 1, v: `v${p}` }))
    const opts = { writeAheadFiles: 100, writeBufferSize: 30_000 }
    // the same write, recorded, shows the request carries manifests written ahead
    const rec = new RecordingCommitter()
    await writeBatch(table, records(first), { ...opts, committer: rec })
    expect(rec.requests[0].writtenAhead!.manifests.length).toBeGreaterThan(0)
    await writeBatch(table, records(first), opts)
    await writeBatch(table, records([{ p: 3, id: 1, v: 'again' }, { p: 599, id: 2, v: 'new' }]), opts)

    const [read] = paimonBatch([['read', join(dir, 't')]])
    expect(read.ok, read.error).toBe(true)
    const expected = first.map((r) => (r.p === 3 ? { ...r, v: 'again' } : r)).concat([{ p: 599, id: 2, v: 'new' }])
    // the harness renders a BIGINT as a string, an INT as a number
    expect(byKey(parseRows(read.output), ['p', 'id'])).toEqual(byKey(expected.map((r) => ({ ...r, id: String(r.id) })), ['p', 'id']))
  })
})
