// Streaming starts against Apache Paimon 1.4.2 (the harness's `streaming` command,
// interop/src/main/java/strata/interop/StreamingInterop.java): Paimon's StreamTableScan,
// started in each scan mode on a table Strata wrote and compacted and planned until it has
// caught up, returns in its first plan the rows of Strata's start (the full state, level 0
// merged in) and in the plans after it the rows of Strata's changes, with the same kinds, and
// its checkpoint is the next snapshot Strata's consumer records; a scan with the id of a
// consumer Strata recorded after a start goes on from there with changes only. Tables: deduplicate with
// deletion vectors off and on, partial-update with deletion vectors, first-row, and the input
// and lookup changelog producers; each ends with rows waiting in level 0. Rows compare as
// multisets of JSON text. Skipped with one line without Java and Maven, failing under CI.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { type StreamStartOptions, type StreamStep, locateStart, planStep, readStep, recordStep, resolveScan, startOfRead } from '../lib/read/streaming-start.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type PaimonResult, RUN_COMMAND, buildHarness, describeWithJava, paimonBatch, renderRow } from './helpers/interop.ts'

const SCHEMA = (options: Record<string, string>) => ({
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'INT' },
    { name: 'v', type: 'STRING' },
    { name: 'n', type: 'BIGINT' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  options: { bucket: '2', ...options },
})

type Rec = { _kind: string; dt: string; id: number; v: string | null; n: number | null }
const rec = (_kind: string, dt: string, id: number, v: string | null, n: number | null): Rec => ({ _kind, dt, id, v, n })

/** Batches, and after which of them a compaction runs (minor, or full), so level 0 holds rows at several snapshots and at the end. */
const BATCHES: Rec[][] = [
  [rec('+I', 'a', 1, 'x', 1), rec('+I', 'a', 2, 'y', 2), rec('+I', 'b', 3, 'z', 3), rec('+I', 'b', 4, null, 4)],
  [rec('+U', 'a', 1, 'x2', 10), rec('-D', 'b', 3, 'z', 3), rec('+I', 'a', 5, 'w', 5)],
  [rec('+I', 'b', 6, 'q', 6), rec('+U', 'a', 2, 'y3', 30)],
  [rec('-D', 'a', 5, 'w', 5), rec('+I', 'b', 3, 'z2', 33), rec('+I', 'a', 7, 'p', 7)],
  [rec('+U', 'b', 6, 'q2', 60), rec('+I', 'a', 8, 'r', 8)],
]
const COMPACT_AFTER: Record<number, boolean> = { 1: true, 3: false }

const TABLES: Record<string, { options: Record<string, string>; retracts: boolean }> = {
  plain: { options: {}, retracts: true },
  dv: { options: { 'deletion-vectors.enabled': 'true' }, retracts: true },
  'partial-update-dv': { options: { 'merge-engine': 'partial-update', 'deletion-vectors.enabled': 'true' }, retracts: false },
  'first-row': { options: { 'merge-engine': 'first-row' }, retracts: false },
  input: { options: { 'changelog-producer': 'input' }, retracts: true },
  'lookup-dv': { options: { 'changelog-producer': 'lookup', 'deletion-vectors.enabled': 'true' }, retracts: true },
}

const sorted = (rows: string[]) => [...rows].sort()

interface Answer {
  full: string[]
  changes: string[]
  next: number | null
}

function paimonAnswer(r: PaimonResult): Answer {
  if (!r.ok) throw new Error(`Paimon failed: ${r.error}`)
  const out: Answer = { full: [], changes: [], next: null }
  for (const line of r.output.split('\n').filter(Boolean)) {
    const o = JSON.parse(line) as Record<string, unknown>
    if ('_next' in o) {
      out.next = o._next as number | null
      continue
    }
    const { _plan, ...row } = o
    if (_plan !== 0) {
      out.changes.push(JSON.stringify(row))
      continue
    }
    // the full state: Paimon keeps a merged row's last kind (+U) where it merges a bucket and
    // says +I where it reads a file raw, by file layout; Strata says +I (docs/design.md "Streaming starts")
    if (row._kind !== '+I' && row._kind !== '+U') throw new Error(`Paimon's full state holds a ${String(row._kind)} row: ${line}`)
    out.full.push(JSON.stringify({ ...row, _kind: '+I' }))
  }
  return { full: sorted(out.full), changes: sorted(out.changes), next: out.next }
}

async function strataAnswer(table: Table, opts: StreamStartOptions, consumerId?: string): Promise<Answer> {
  const scan = resolveScan(table, opts)
  const { start } = await startOfRead(table, scan, consumerId)
  if (start === null) return { full: [], changes: [], next: null }
  const step: StreamStep = await planStep(table, start)
  const fields = table.view.fields
  const rows = async (s: StreamStep) => {
    const out: string[] = []
    for await (const batch of readStep(table, s)) for (const c of batch) out.push(JSON.stringify({ _kind: ROW_KIND_SHORT[c.kind], ...renderRow(fields, c.row) }))
    return sorted(out)
  }
  return { full: await rows({ ...step, plan: null }), changes: await rows({ ...step, fullSnapshot: null }), next: step.nextSnapshot }
}

/** The starts each table is read from: every mode, each snapshot id, each snapshot's time and the millisecond after it. */
function starts(latest: number, times: number[]): Record<string, string>[] {
  const out: Record<string, string>[] = [{ 'scan.mode': 'latest-full' }, { 'scan.mode': 'latest' }, {}]
  for (let id = 1; id <= latest; id++) {
    out.push({ 'scan.mode': 'from-snapshot-full', 'scan.snapshot-id': String(id) })
    out.push({ 'scan.mode': 'from-snapshot', 'scan.snapshot-id': String(id) })
  }
  for (const t of times) {
    out.push({ 'scan.mode': 'from-timestamp', 'scan.timestamp-millis': String(t) })
    out.push({ 'scan.timestamp-millis': String(t + 1) })
  }
  return out
}

const toStart = (o: Record<string, string>): StreamStartOptions => ({
  scanMode: o['scan.mode'],
  scanSnapshotId: o['scan.snapshot-id'] === undefined ? undefined : Number(o['scan.snapshot-id']),
  scanTimestampMillis: o['scan.timestamp-millis'] === undefined ? undefined : Number(o['scan.timestamp-millis']),
})

describeWithJava('streaming starts against Paimon', RUN_COMMAND.replace('interop.test.ts', 'interop-streaming.test.ts'), () => {
  let root = ''
  const cells: { table: string; start: Record<string, string>; strata: Answer; paimon: Answer }[] = []

  beforeAll(async () => {
    buildHarness()
    root = mkdtempSync(join(tmpdir(), 'strata-interop-stream-'))
    const commands: string[][] = []
    const pending: { table: string; start: Record<string, string>; strata: Answer }[] = []
    for (const [name, { options, retracts }] of Object.entries(TABLES)) {
      const dir = join(root, name)
      const t = await Table.create(dir, SCHEMA(options))
      for (const [i, batch] of BATCHES.entries()) {
        const recs = retracts ? batch : batch.filter((r) => r._kind === '+I' || r._kind === '+U')
        await writeBatch(t, recs.map((r, j) => recordFromJson(t.view, r, `row ${j}`)))
        if (i in COMPACT_AFTER) await compactTable(t, { full: COMPACT_AFTER[i] })
      }
      const latest = await t.snapshots.latestId()
      const times: number[] = []
      for (let id = 1; id <= latest; id++) times.push((await t.snapshots.snapshot(id))!.timeMillis)
      for (const start of starts(latest, times)) {
        pending.push({ table: name, start, strata: await strataAnswer(t, toStart(start)) })
        commands.push(['streaming', dir, '--schema', JSON.stringify(start)])
      }
      // a consumer Strata recorded after a start at snapshot 3: Paimon's scan with its id goes on from there, as Strata's does
      const step = await planStep(t, (await locateStart(t, resolveScan(t, { scanMode: 'from-snapshot-full', scanSnapshotId: 3 })))!, { toSnapshot: 3 })
      expect(await recordStep(t, 'etl', step)).toBe(4)
      const withConsumer = { 'consumer-id': 'etl', 'scan.mode': 'latest-full' }
      pending.push({ table: name, start: withConsumer, strata: await strataAnswer(t, { scanMode: 'latest-full' }, 'etl') })
      commands.push(['streaming', dir, '--schema', JSON.stringify(withConsumer)])
    }
    const answers = paimonBatch(commands)
    pending.forEach((p, i) => cells.push({ ...p, paimon: paimonAnswer(answers[i]) }))
  }, 300_000)

  afterAll(() => root && rmSync(root, { recursive: true, force: true }))

  it('every table and start has its cell', () => {
    expect(cells.length).toBeGreaterThan(Object.keys(TABLES).length * 10)
  })

  for (const name of Object.keys(TABLES)) {
    it(`${name}: each start's full state, its changes and its next snapshot are Paimon's`, () => {
      const mine = cells.filter((c) => c.table === name)
      expect(mine.length).toBeGreaterThan(0)
      for (const c of mine) expect({ start: c.start, ...c.strata }).toEqual({ start: c.start, ...c.paimon })
      // the cells are not all empty: some start hands over a full state with level 0 in it, and some changes follow
      expect(mine.some((c) => c.strata.full.length > 0 && c.strata.changes.length > 0)).toBe(true)
      // the consumer's cell: no full state, the changes after its progress
      const consumer = mine.find((c) => c.start['consumer-id'] === 'etl')!
      expect([consumer.strata.full.length, consumer.strata.changes.length > 0]).toEqual([0, true])
    })
  }
})
