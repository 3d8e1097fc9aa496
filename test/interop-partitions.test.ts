// A write touching many partitions against Apache Paimon 1.4.2: Strata writes one row into
// each of 600 partitions in one commit, then a second small commit, and Paimon's batch read
// returns exactly those rows; once with the entries inline (more bucket groups than
// PACK_GROUPS_OVER, so the delta manifests are packed, several partitions to a manifest), once
// with a small write buffer and write-ahead budget, so most entries reach the snapshot through
// manifests written before the commit. Without Java or Maven the file is skipped with one line
// saying how to run it, except under CI.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { PACK_GROUPS_OVER } from '../lib/commit/commit.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { type WriteOptions, writeBatch } from '../lib/write/table-write.ts'
import { RecordingCommitter } from './helpers/commit.ts'
import { buildHarness, byKey, describeWithJava, paimonBatch, parseRows } from './helpers/interop.ts'

const PARTITIONS = 600

describeWithJava('Paimon reads a table written across many partitions in one commit', 'npx vitest run test/interop-partitions.test.ts (needs Java 17+ and Maven 3 on PATH)', () => {
  let dir: string
  beforeAll(() => {
    buildHarness()
    dir = mkdtempSync(join(tmpdir(), 'strata-interop-partitions-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  const first = Array.from({ length: PARTITIONS }, (_, p) => ({ p, id: 1, v: `v${p}` }))
  const second = [{ p: 3, id: 1, v: 'again' }, { p: PARTITIONS - 1, id: 2, v: 'new' }]

  /** A table partitioned by `p` whose writes go through writeBatch with `opts`. */
  async function partitioned(name: string, opts: WriteOptions = {}) {
    const table = await Table.create(join(dir, name), {
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
    return { table, records, write: (rows: Record<string, unknown>[], more: WriteOptions = {}) => writeBatch(table, records(rows), { ...opts, ...more }) }
  }

  /** Paimon's batch read of the table equals `first` after `second`. */
  function expectPaimonReads(name: string): void {
    const [read] = paimonBatch([['read', join(dir, name)]])
    expect(read.ok, read.error).toBe(true)
    const expected = first.map((r) => second.find((s) => s.p === r.p && s.id === r.id) ?? r).concat(second.filter((s) => s.id === 2))
    // the harness renders a BIGINT as a string, an INT as a number
    expect(byKey(parseRows(read.output), ['p', 'id'])).toEqual(byKey(expected.map((r) => ({ ...r, id: String(r.id) })), ['p', 'id']))
  }

  it('returns every row of a commit whose manifests hold several partitions each', async () => {
    expect(PARTITIONS).toBeGreaterThan(PACK_GROUPS_OVER)
    const { table, write } = await partitioned('packed')
    await write(first)
    const s = (await table.snapshots.latest())!
    expect((await table.manifests.readList(s.deltaManifestList)).length).toBeLessThan(PARTITIONS / 10)
    await write(second)
    expectPaimonReads('packed')
  })

  it('returns every row of a commit whose delta lists manifests written ahead', async () => {
    const { write } = await partitioned('ahead', { writeAheadFiles: 100, writeBufferSize: 30_000 })
    // the same write, recorded, shows the request carries manifests written ahead
    const rec = new RecordingCommitter()
    await write(first, { committer: rec })
    expect(rec.requests[0].writtenAhead!.manifests.length).toBeGreaterThan(0)
    await write(first)
    await write(second)
    expectPaimonReads('ahead')
  })
})
