// Streaming writes (issue 18, part 4): a batch larger than `write-buffer-size` is written as
// consecutive sub-batches, each sorted and merged into one level-0 file per bucket, and every
// file of the batch lands in one snapshot. Checked on real tables (local disk and the
// embedded S3 backend, real Parquet files) against simple in-memory models: the table model
// of test/helpers/model.ts applied sub-batch by sub-batch, and a Map of the CLI's input.

import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { strata } from './helpers/cli-in-process.ts'
import { tableStatus } from '../lib/maintenance/table-status.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { recordFromJson, recordFromJsonLine } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { WriteRecord } from '../lib/write/record-checks.ts'
import { BatchWriter, bufferedRecordBytes, writeBatch } from '../lib/write/table-write.ts'
import { type Engine, type Op, TableModel, opArb, schemaFor, sortRows } from './helpers/model.ts'
import { bothStores } from './helpers/stores.ts'

const ENGINES: Engine[] = ['deduplicate', 'partial-update', 'aggregation', 'first-row']

function recordsOf(table: Table, ops: Op[]): WriteRecord[] {
  return ops.map((op, i) => ({ ...recordFromJson(table.view, op, `op ${i}`), where: `op ${i}` }))
}

/** Where a writer with this buffer flushes: after the record whose charge fills the buffer. */
function subBatches<T>(items: T[], charges: number[], limit: number): T[][] {
  const out: T[][] = []
  let cur: T[] = []
  let bytes = 0
  for (let i = 0; i < items.length; i++) {
    cur.push(items[i])
    bytes += charges[i]
    if (bytes >= limit) {
      out.push(cur)
      cur = []
      bytes = 0
    }
  }
  if (cur.length) out.push(cur)
  return out
}

describe.each(bothStores())('streamed batches on $name', (stores) => {
  beforeAll(() => stores.setup())
  afterAll(() => stores.teardown())

  for (const engine of ENGINES) {
    it(`${engine}: a batch flushed every few records reads as its sub-batches applied in order, in one snapshot per batch`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(opArb(engine, 8), { minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 4 }),
          fc.integer({ min: 1, max: 2500 }),
          async (batches, limit) => {
            const table = await Table.create(stores.fresh(), schemaFor(engine))
            const model = new TableModel(engine)
            let snapshots = 0
            for (const ops of batches) {
              const records = recordsOf(table, ops)
              const chunks = subBatches(ops, records.map((r) => bufferedRecordBytes(r.row)), limit)
              const res = await writeBatch(table, records, { writeBufferSize: limit })
              for (const chunk of chunks) model.applyBatch(chunk)
              const files = res.buckets.reduce((n, b) => n + b.fileNames.length, 0)
              // every sub-batch writes at least one file unless its records all merged away
              if (engine !== 'first-row') expect(files).toBeGreaterThanOrEqual(chunks.length)
              if (files > 0) snapshots++
              expect(await table.snapshots.latestId()).toBe(snapshots)
              if (engine === 'first-row') {
                // read as Paimon reads it, without level 0: a write shows once compacted
                await compactTable(table, { full: false })
                snapshots = await table.snapshots.latestId()
              }
              expect(sortRows(await readAll(table))).toEqual(model.snapshot())
            }
          },
        ),
        { numRuns: stores.name === 's3' ? 5 : 25 },
      )
    })
  }

  it('a large batch with a small buffer: several level-0 files per bucket, one commit, numbers ascending in input order', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate'))
    const ops: Op[] = []
    // 40 keys, each upserted many times, deletes among them: the last record of a key decides
    for (let i = 0; i < 2000; i++) ops.push({ _kind: i % 97 === 0 ? '-D' : '+I', dt: i % 3 ? '2024-05-01' : '2024-05-02', id: i % 40, a: i, b: `v${i}`, c: null })
    const limit = 8 * 1024
    const res = await writeBatch(table, recordsOf(table, ops), { writeBufferSize: limit })
    expect(res.snapshotId).toBe(1)
    expect(await table.snapshots.latestId()).toBe(1)
    const status = await tableStatus(table)
    expect(status.buckets.length).toBe(6)
    for (const b of status.buckets) expect(b.l0Files, `${b.partition} bucket ${b.bucket}`).toBeGreaterThanOrEqual(5)
    const expected = new Map<string, Op>()
    for (const op of ops) expected.set(`${op.dt}|${op.id}`, op)
    const rows = [...expected.values()].filter((op) => op._kind !== '-D').map((op) => [op.dt, op.id, op.a, op.b, null])
    expect(sortRows(await readAll(table))).toEqual(sortRows(rows))
    // the files of one bucket, oldest flush first, hold ascending sequence ranges
    const latest = (await table.snapshots.latest())!
    const byBucket = new Map<string, { min: bigint; max: bigint; name: string }[]>()
    for (const e of await table.manifests.liveEntries(latest)) {
      const k = `${Buffer.from(e.partition).toString('hex')}|${e.bucket}`
      byBucket.set(k, [...(byBucket.get(k) ?? []), { min: e.file.minSequenceNumber, max: e.file.maxSequenceNumber, name: e.file.fileName }])
    }
    for (const b of res.buckets) {
      const files = byBucket.get(`${Buffer.from(b.partition).toString('hex')}|${b.bucket}`)!
      const order = new Map(b.fileNames.map((n, i) => [n, i]))
      files.sort((x, y) => order.get(x.name)! - order.get(y.name)!)
      for (let i = 1; i < files.length; i++) expect(files[i].min).toBeGreaterThan(files[i - 1].max)
    }
  })

  it('a streamed batch numbers above a batch whose clock ran ahead, in buckets it flushes early and in buckets it first touches in its last flush', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate'))
    // a writer an hour ahead wrote the first partition, one two hours ahead the second
    for (const [dt, hours] of [['2024-05-01', 1], ['2024-05-02', 2]] as const) {
      const early: Op[] = []
      for (let id = 0; id < 30; id++) early.push({ _kind: '+I', dt, id, a: 1, b: 'early', c: null })
      await writeBatch(table, recordsOf(table, early), { sequenceBase: BigInt(Date.now() + hours * 3_600_000) << 20n })
    }
    const late: Op[] = []
    // several flushes of the first partition, then the second partition only in the last one
    for (let round = 0; round < 10; round++) for (let id = 0; id < 30; id++) late.push({ _kind: '+I', dt: '2024-05-01', id, a: round, b: 'late', c: null })
    for (let id = 0; id < 30; id++) late.push({ _kind: '+I', dt: '2024-05-02', id, a: 99, b: 'late', c: null })
    const records = recordsOf(table, late)
    const limit = records.slice(0, 60).reduce((n, r) => n + bufferedRecordBytes(r.row), 0)
    const res = await writeBatch(table, records, { writeBufferSize: limit })
    expect(res.buckets.filter((b) => b.partitionValues[0] === '2024-05-01').every((b) => b.fileNames.length >= 3)).toBe(true)
    const rows = sortRows(await readAll(table))
    expect(rows.length).toBe(60)
    for (const r of rows) expect([r[0], r[3], r[2]]).toEqual([r[0], 'late', r[0] === '2024-05-01' ? 9 : 99])
    // the last flush was numbered again above the floor: its first files are gone, no orphan stays
    const live = new Set((await table.manifests.liveEntries((await table.snapshots.latest())!)).map((e) => e.file.fileName))
    const stored = (await table.store.list('')).map((o) => o.key).filter((k) => /\/data-[^/]+\.parquet$/.test(k))
    expect(stored.map((k) => k.slice(k.lastIndexOf('/') + 1)).sort()).toEqual([...live].sort())
  })

  it('two batches of one process that interleave their flushes never share a sequence number', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate'))
    const op = (id: number, b: string): Op => ({ _kind: '+I', dt: '2024-05-01', id, a: id, b, c: null })
    // one millisecond for both batches: the clock does not keep them apart, the claims must
    const now = vi.spyOn(Date, 'now').mockReturnValue(Date.now())
    try {
      const a = new BatchWriter(table, { writeBufferSize: 1 })
      const [first] = recordsOf(table, [op(1, 'a0')])
      a.add(first)
      await a.flush()
      // a second batch starts and commits while the first is still open
      await writeBatch(table, recordsOf(table, [op(1, 'b'), op(2, 'b')]))
      for (const r of recordsOf(table, [op(1, 'a1'), op(2, 'a1')])) a.add(r)
      await a.finish()
    } finally {
      now.mockRestore()
    }
    const ranges = (await table.manifests.liveEntries((await table.snapshots.latest())!)).map((e) => [e.file.minSequenceNumber, e.file.maxSequenceNumber] as const)
    expect(ranges.length).toBeGreaterThanOrEqual(3)
    ranges.sort((x, y) => (x[0] < y[0] ? -1 : 1))
    for (let i = 1; i < ranges.length; i++) expect(ranges[i][0]).toBeGreaterThan(ranges[i - 1][1])
  })
})

// ---------------------------------------------------------------------------------------------
// The CLI streams its input: many flushes, one commit, and a bad line anywhere commits nothing


const CLI_SCHEMA = {
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'BIGINT' },
    { name: 'name', type: 'STRING' },
    { name: 'qty', type: 'INT' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  options: { bucket: '2', 'write-buffer-size': '64 kb', 'write.max-row-size': '1 kb' },
}

describe('strata write streams its input', () => {
  let dir: string
  let n = 0
  const fresh = async (): Promise<string> => {
    const t = join(dir, `t${n++}`)
    expect((await strata(['create', t, '--schema', join(dir, 'schema.json')])).code).toBe(0)
    return t
  }
  const input = (lines: (string | Buffer)[]): string => {
    const file = join(dir, `in${n++}.jsonl`)
    writeFileSync(file, Buffer.concat(lines.map((l) => Buffer.concat([typeof l === 'string' ? Buffer.from(l) : l, Buffer.from('\n')]))))
    return file
  }
  const dataFiles = (t: string): string[] => readdirSync(t, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.parquet'))
  const line = (i: number, extra: Record<string, unknown> = {}) => JSON.stringify({ dt: `2024-05-0${1 + (i % 2)}`, id: i % 700, name: `n${i}`, qty: i, ...extra })
  const LINES = 6000

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'strata-stream-'))
    writeFileSync(join(dir, 'schema.json'), JSON.stringify(CLI_SCHEMA))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('writes 6,000 lines as several level-0 files per bucket in one snapshot; reads return the last record of each key', async () => {
    const t = await fresh()
    const lines: string[] = []
    const model = new Map<string, Record<string, unknown> | null>()
    for (let i = 0; i < LINES; i++) {
      const del = i % 13 === 0
      lines.push(line(i, del ? { _kind: '-D' } : {}))
      if (i === 100) lines.push('   ') // blank lines are skipped
      const rec = { dt: `2024-05-0${1 + (i % 2)}`, id: i % 700, name: `n${i}`, qty: i }
      model.set(`${rec.dt}|${rec.id}`, del ? null : rec)
    }
    const r = await strata(['write', t, input(lines)])
    expect(r).toEqual({ code: 0, stdout: '1\n', stderr: '' })
    const table = await Table.open(t)
    expect(await table.snapshots.latestId()).toBe(1)
    const status = await tableStatus(table)
    expect(status.buckets.length).toBe(4)
    for (const b of status.buckets) expect(b.l0Files, `${b.partition} bucket ${b.bucket}`).toBeGreaterThanOrEqual(4)
    const read = await strata(['read', t, '--json'])
    const got = read.stdout.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    const want = [...model.values()].filter((x): x is Record<string, unknown> => x !== null)
    const key = (x: Record<string, unknown>) => `${x.dt}|${String(x.id).padStart(4, '0')}`
    expect(got.map((x) => ({ ...x, id: Number(x.id) })).sort((a, b) => key(a).localeCompare(key(b)))).toEqual(want.sort((a, b) => key(a).localeCompare(key(b))))
  })

  it('a malformed line after several flushes fails the write naming it; nothing is committed and the flushed files are deleted', async () => {
    const t = await fresh()
    const table = await Table.open(t)
    const lines = Array.from({ length: LINES }, (_, i) => line(i))
    const bad = line(5000).replace(/"qty":\d+/, '"qty":"many"')
    lines[4999] = bad
    let expected = ''
    try {
      recordFromJsonLine(table.view, bad, 'line 5000')
    } catch (e) {
      expected = (e as StrataInputError).message
    }
    expect(expected).toMatch(/^line 5000: field 'qty'/)
    const r = await strata(['write', t, input(lines)])
    expect(r).toEqual({ code: 2, stdout: '', stderr: `strata: ${expected}\n` })
    expect(await table.snapshots.latestId()).toBe(0)
    expect(dataFiles(t)).toEqual([])
  })

  it('keeps the precedence of a write that parsed every line first', async () => {
    const t = await fresh()
    const lines = Array.from({ length: LINES }, (_, i) => line(i))
    // a row over write.max-row-size early on, a malformed line much later: the malformed line is named
    lines[9] = line(9, { name: 'x'.repeat(2000) })
    const withBoth = [...lines]
    withBoth[4999] = '{"dt":"2024-05-01","id":1,'
    const both = await strata(['write', t, input(withBoth)])
    expect(both.code).toBe(2)
    expect(both.stderr).toMatch(/^strata: line 5000: malformed JSON/)
    // the oversize row alone is named, whatever follows it (a blank line before it counts)
    const alone = await strata(['write', t, input([...lines.slice(0, 3), ' ', ...lines.slice(3)])])
    expect(alone.code).toBe(2)
    expect(alone.stderr).toMatch(/^strata: line 11: row of \d+ bytes is larger than write.max-row-size/)
    // bytes that are not UTF-8 after a malformed line of the same chunk: the malformed line is named
    const utf8 = [line(0), '{"dt":', line(2), Buffer.from([0x7b, 0xff, 0x7d])]
    const u = await strata(['write', t, input(utf8)])
    expect(u.stderr).toMatch(/^strata: line 2: malformed JSON/)
    const u2 = await strata(['write', t, input([line(0), line(1), Buffer.from([0x7b, 0xff, 0x7d])])])
    expect(u2.stderr).toBe('strata: line 3: byte 2 is not valid UTF-8 (0xff); expected UTF-8 text\n')
    expect(await (await Table.open(t)).snapshots.latestId()).toBe(0)
    expect(dataFiles(t)).toEqual([])
  })
})
