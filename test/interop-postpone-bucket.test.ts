// Postpone bucket mode (bucket -2) against Apache Paimon 1.4.2, both ways:
//   1. Paimon creates a postpone table and writes two batches (Avro files in bucket-postpone,
//      rows unsorted, numbered -1); neither Paimon's nor Strata's reader sees them.
//   2. Strata writes two more batches (Parquet files in bucket-postpone) and compacts: the
//      partitions get postpone.default-bucket-num buckets, bucket-postpone is emptied, and
//      Paimon's read equals a model of the four batches in order (and Strata's read).
//   3. Paimon writes again into a partition that has buckets; Strata compacts; the partition
//      keeps its count and Paimon's read equals the model of all five batches.
// With and without deletion vectors. And the other way: Strata writes postponed rows and
// Paimon's postpone compaction (the harness's postpone-compact, CompactAction's steps without
// Flink: PostponeInterop.java) moves them, parsing each file's write id from its name. Paimon records its files' creation time in the JVM's
// local time (docs/format.md), which orders its postponed files against Strata's: the
// harness's JVM runs in the machine's zone, UTC here. Skipped with one line without Java and
// Maven, failing under CI, as test/interop.test.ts.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type PaimonResult, RUN_COMMAND, buildHarness, describeWithJava, paimonBatch, renderRow, writeJsonLines } from './helpers/interop.ts'

const SCHEMA = (options: Record<string, string>) => ({
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'INT' },
    { name: 'v', type: 'STRING' },
    { name: 'n', type: 'BIGINT' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  options: { bucket: '-2', 'postpone.default-bucket-num': '3', ...options },
})

type Rec = { _kind: string; dt: string; id: number; v: string | null; n: number | null }
const rec = (_kind: string, dt: string, id: number, v: string | null, n: number | null): Rec => ({ _kind, dt, id, v, n })

const keys = (dt: string, from: number, to: number, v: string, kind = '+I') => Array.from({ length: to - from }, (_, i) => rec(kind, dt, from + i, `${v}${from + i}`, from + i))
/** Paimon 1 and 2, Strata 3 and 4, Paimon 5: inserts, updates of earlier batches' keys, deletes, a key twice in one batch. */
const BATCHES: Rec[][] = [
  [...keys('a', 0, 12, 'p1-'), ...keys('b', 0, 5, 'p1-')],
  [rec('+U', 'a', 1, 'p2', 100), rec('-D', 'a', 2, null, null), rec('+I', 'a', 3, 'p2-first', 1), rec('+U', 'a', 3, 'p2-second', 2), ...keys('b', 5, 8, 'p2-')],
  [rec('+U', 'a', 1, 's3', 300), rec('+I', 'a', 2, 's3-back', 3), rec('-D', 'b', 0, null, null), ...keys('c', 0, 4, 's3-')],
  [rec('+U', 'a', 3, 's4', 4), rec('-D', 'a', 4, null, null), rec('+U', 'b', 6, 's4', 6)],
  [rec('+U', 'a', 1, 'p5', 500), rec('-D', 'c', 1, null, null), ...keys('a', 12, 15, 'p5-')],
]

/** The rows after these batches, in the harness's rendering (BIGINT as a string), sorted. */
function model(batches: Rec[][]): string[] {
  const rows = new Map<string, Rec>()
  for (const b of batches) for (const r of b) {
    const k = `${r.dt}|${r.id}`
    if (r._kind === '-D' || r._kind === '-U') rows.delete(k)
    else rows.set(k, r)
  }
  return [...rows.values()].map((r) => JSON.stringify({ dt: r.dt, id: r.id, v: r.v, n: r.n === null ? null : String(r.n) })).sort()
}

const paimonRows = (r: PaimonResult): string[] => {
  if (!r.ok) throw new Error(`Paimon failed: ${r.error}`)
  return r.output.split('\n').filter(Boolean).map((l) => JSON.stringify(JSON.parse(l))).sort()
}

async function strataRows(table: Table): Promise<string[]> {
  return (await readAll(table)).map((row) => JSON.stringify(renderRow(table.view.fields, row))).sort()
}

async function strataWrite(table: Table, batch: Rec[]): Promise<void> {
  await writeBatch(table, batch.map((r, i) => recordFromJson(table.view, r, `record ${i}`)))
}

type Meta = { files: { partition: { dt: string }; bucket: number; level: number; fileName: string }[] }
const meta = (r: PaimonResult): Meta => {
  if (!r.ok) throw new Error(`Paimon meta failed: ${r.error}`)
  return JSON.parse(r.output) as Meta
}

describeWithJava('postpone bucket mode against Paimon 1.4.2', RUN_COMMAND, () => {
  let dir: string
  beforeAll(() => {
    buildHarness()
    dir = mkdtempSync(join(tmpdir(), 'strata-interop-postpone-'))
  }, 600_000)
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  for (const [name, options] of [['plain', {}], ['deletion vectors', { 'deletion-vectors.enabled': 'true' }]] as const) {
    it(`${name}: Paimon writes postponed rows, Strata writes more and compacts, Paimon reads the model`, async () => {
      const table = join(dir, name.replace(' ', '-'))
      const input = (i: number) => writeJsonLines(join(dir, `${name}-in-${i}`), BATCHES[i])
      const [w1, w2, before, metaBefore] = paimonBatch([
        ['write', table, '--schema', JSON.stringify(SCHEMA(options)), '--in', input(0)],
        ['write', table, '--in', input(1)],
        ['read', table],
        ['meta', table],
      ])
      expect([w1.ok, w2.ok], `${w1.error ?? ''} ${w2.error ?? ''}`).toEqual([true, true])
      // Paimon's postponed files: Avro, in bucket-postpone, invisible to both readers
      expect(paimonRows(before)).toEqual([])
      const postponed = meta(metaBefore).files
      expect(postponed.length).toBeGreaterThan(0)
      expect(postponed.every((f) => f.bucket === -2 && f.fileName.endsWith('.avro'))).toBe(true)
      let t = await Table.open(table)
      expect(await strataRows(t)).toEqual([])

      await strataWrite(t, BATCHES[2])
      await strataWrite(t, BATCHES[3])
      expect(await strataRows(t)).toEqual([])
      await compactTable(t)
      // then Paimon writes again, into partitions that have buckets (the same JVM, after the reads)
      const [after, metaAfter, w5] = paimonBatch([['read', table], ['meta', table], ['write', table, '--in', input(4)]])
      expect(paimonRows(after)).toEqual(model(BATCHES.slice(0, 4)))
      expect(await strataRows(t)).toEqual(model(BATCHES.slice(0, 4)))
      const files = meta(metaAfter).files
      expect(files.filter((f) => f.bucket < 0)).toEqual([])
      expect(new Set(files.map((f) => f.bucket))).toEqual(new Set([0, 1, 2]))

      // the partitions keep their 3 buckets when Strata compacts Paimon's new postponed files
      expect(w5.ok, w5.error).toBe(true)
      t = await Table.open(table)
      await compactTable(t)
      const [last, metaLast] = paimonBatch([['read', table], ['meta', table]])
      expect(paimonRows(last)).toEqual(model(BATCHES))
      expect(await strataRows(t)).toEqual(model(BATCHES))
      expect(meta(metaLast).files.every((f) => f.bucket >= 0 && f.bucket < 3)).toBe(true)
    }, 300_000)
  }

  it("Strata writes postponed rows, Paimon's postpone compaction moves them, Strata writes and compacts again", async () => {
    const table = join(dir, 'strata-first')
    let t = await Table.create(table, SCHEMA({}))
    for (const b of BATCHES.slice(0, 3)) await strataWrite(t, b)
    // the harness's postpone-compact is Paimon's CompactAction for postpone tables without Flink
    const [compact, read, metaAfter] = paimonBatch([['postpone-compact', table], ['read', table], ['meta', table]])
    expect(compact.ok, compact.error).toBe(true)
    // Paimon parsed a write id out of every postponed file's name (getWriteId), one per Strata batch and partition
    const c = JSON.parse(compact.output) as { files: number; writeIds: number[] }
    expect(c.files).toBe(c.writeIds.length)
    expect(c.files).toBeGreaterThanOrEqual(3)
    expect(paimonRows(read)).toEqual(model(BATCHES.slice(0, 3)))
    expect(meta(metaAfter).files.every((f) => f.bucket >= 0 && f.bucket < 3)).toBe(true)
    t = await Table.open(table)
    expect(await strataRows(t)).toEqual(model(BATCHES.slice(0, 3)))
    for (const b of BATCHES.slice(3)) await strataWrite(t, b)
    await compactTable(t)
    const [last] = paimonBatch([['read', table]])
    expect(paimonRows(last)).toEqual(model(BATCHES))
    expect(await strataRows(t)).toEqual(model(BATCHES))
  }, 300_000)
})
