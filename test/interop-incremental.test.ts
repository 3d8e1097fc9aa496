// Incremental reads against Apache Paimon 1.4.2 (the interop harness's `incremental`
// command, interop/src/main/java/strata/interop/IncrementalInterop.java):
// - Paimon's `incremental-between` read of a table Strata wrote and compacted returns, for
//   every range of its snapshots, in delta and auto mode, the rows (with row kinds) that
//   Strata's incremental read returns;
// - Paimon's snapshot expiration keeps what a consumer Strata recorded (consumer/consumer-<id>)
//   still needs;
// - Strata's incremental read of tables Paimon wrote with `changelog-producer` `input` and
//   `lookup` (and compacted) returns Paimon's changelog (auto and changelog mode) and
//   Paimon's delta (delta mode), for each snapshot alone and for ranges across several.
// Rows compare as multisets of JSON text (`_kind` first, then the columns in the harness's
// rendering).
//
// DIVERGENT: on a deletion-vector (or first-row) table, Paimon 1.4.2's batch scan drops level
// 0 (DataTableBatchScan with CoreOptions.batchScanSkipLevel0), and that level filter also
// applies to `incremental-between` in delta mode, whose files are all level 0 — so Paimon
// returns no rows there. Strata returns the rows those snapshots appended, as on any other
// table. The `it.fails` cell below pins that difference. Skipped with one line without Java and Maven, failing under CI, as
// test/interop.test.ts.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { type IncrementalMode, consumerStart, planIncremental, readIncremental, recordConsumer } from '../lib/read/incremental.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type PaimonResult, RUN_COMMAND, buildHarness, missingTools, paimonBatch, renderRow, writeJsonLines } from './helpers/interop.ts'

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

/** Batches both sides write: inserts, updates with their -U, deletes, a key written twice in one batch. */
const BATCHES: Rec[][] = [
  [rec('+I', 'a', 1, 'x', 1), rec('+I', 'a', 2, 'y', 2), rec('+I', 'b', 3, 'z', 3), rec('+I', 'b', 4, null, 4)],
  [rec('-U', 'a', 1, 'x', 1), rec('+U', 'a', 1, 'x2', 10), rec('-D', 'b', 3, 'z', 3), rec('+I', 'a', 5, 'w', 5)],
  [rec('+I', 'b', 6, 'q', 6), rec('+U', 'a', 2, 'y2', 20), rec('+U', 'a', 2, 'y3', 30)],
  [rec('-D', 'a', 5, 'w', 5), rec('+I', 'b', 3, 'z2', 33)],
]

const lines = (rows: string[]) => [...rows].sort()
const paimonRows = (r: PaimonResult): string[] => {
  if (!r.ok) throw new Error(`Paimon failed: ${r.error}`)
  return lines(r.output.split('\n').filter(Boolean).map((l) => JSON.stringify(JSON.parse(l))))
}

async function strataRows(table: Table, from: number, to: number, mode: IncrementalMode): Promise<string[]> {
  const fields = table.view.fields
  return lines((await readIncremental(table, { fromSnapshot: from, toSnapshot: to, mode })).map((c) => JSON.stringify({ _kind: ROW_KIND_SHORT[c.kind], ...renderRow(fields, c.row) })))
}

const incremental = (dir: string, from: number, to: number, mode: string): string[] => ['incremental', dir, '--schema', JSON.stringify({ 'incremental-between': `${from},${to}`, 'incremental-between-scan-mode': mode })]

/** Every range (from, to] with 0 <= from < to <= latest. */
function ranges(latest: number): [number, number][] {
  const out: [number, number][] = []
  for (let a = 0; a < latest; a++) for (let b = a + 1; b <= latest; b++) out.push([a, b])
  return out
}

/** Each snapshot alone, the whole history, and two ranges across the middle (fewer reads, same snapshots covered). */
function someRanges(latest: number): [number, number][] {
  const out = new Map<string, [number, number]>()
  const add = (a: number, b: number) => a < b && out.set(`${a},${b}`, [a, b])
  for (let k = 1; k <= latest; k++) add(k - 1, k)
  add(0, latest)
  add(1, latest - 1)
  add(Math.floor(latest / 2), latest)
  return [...out.values()]
}

const missing = missingTools()

if (missing.length > 0 && !process.env.CI) {
  process.stdout.write(`interop-incremental suite skipped: ${missing.join(' and ')} not on PATH; to run it: ${RUN_COMMAND.replace('interop.test.ts', 'interop-incremental.test.ts')}\n`)
  describe.skip('incremental reads against Paimon', () => it('needs Java and Maven', () => {}))
} else if (missing.length > 0) {
  describe('incremental reads against Paimon', () => {
    it('runs under CI', () => {
      throw new Error(`CI must run the interop suite, but ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not on PATH`)
    })
  })
} else {
  describe('incremental reads against Paimon', () => {
    let root = ''
    // Strata's table (A) with Paimon's answers, and Paimon's tables (B) by producer
    const strataTables = new Map<string, Table>()
    const paimonOnStrata = new Map<string, Map<string, PaimonResult>>()
    const paimonTables = new Map<string, { dir: string; latest: number; answers: Map<string, PaimonResult> }>()
    const PRODUCERS: Record<string, Record<string, string>> = {
      input: { 'changelog-producer': 'input' },
      lookup: { 'changelog-producer': 'lookup' },
      'lookup-dv': { 'changelog-producer': 'lookup', 'deletion-vectors.enabled': 'true' },
    }
    let consumerDir = ''
    let consumerRead: string[] = []
    const STRATA_TABLES: Record<string, Record<string, string>> = { plain: {}, dv: { 'deletion-vectors.enabled': 'true' } }

    beforeAll(async () => {
      buildHarness()
      root = mkdtempSync(join(tmpdir(), 'strata-interop-inc-'))
      // A: Strata writes and compacts (Paimon's delta skips the COMPACT snapshots), without and with deletion vectors
      const commandsA: { table: string; key: string; command: string[] }[] = []
      for (const [name, options] of Object.entries(STRATA_TABLES)) {
        const dir = join(root, `strata-${name}`)
        const t = await Table.create(dir, SCHEMA(options))
        for (const [i, batch] of BATCHES.entries()) {
          await writeBatch(t, batch.map((r, j) => recordFromJson(t.view, r, `row ${j}`)))
          if (i === 1) await compactTable(t, { full: true })
        }
        strataTables.set(name, t)
        paimonOnStrata.set(name, new Map())
        for (const [a, b] of ranges(await t.snapshots.latestId())) for (const mode of ['delta', 'auto']) commandsA.push({ table: name, key: `${a},${b},${mode}`, command: incremental(dir, a, b, mode) })
      }
      // B: Paimon writes each batch (and fully compacts after the second) with a changelog producer
      const first: string[][] = []
      for (const [name, options] of Object.entries(PRODUCERS)) {
        const dir = join(root, `paimon-${name}`)
        for (const [i, batch] of BATCHES.entries()) {
          first.push(['write', dir, '--schema', JSON.stringify(SCHEMA(options)), '--in', writeJsonLines(join(root, `${name}-${i}.jsonl`), batch)])
          if (i === 1) first.push(['compact', dir, '--full'])
        }
      }
      // C: a Strata table whose consumer (recorded by Strata) Paimon's expiration must respect
      consumerDir = join(root, 'strata-consumer')
      const c = await Table.create(consumerDir, SCHEMA({}))
      for (const batch of BATCHES) await writeBatch(c, batch.map((r, j) => recordFromJson(c.view, r, `row ${j}`)))
      const plan = await planIncremental(c, { fromSnapshot: 0, toSnapshot: 2 })
      consumerRead = await strataRows(c, 0, 2, 'auto')
      await recordConsumer(c, 'etl', plan)
      first.push(['expire', consumerDir, '--retain', '1'])
      const results = paimonBatch([...first, ...commandsA.map((c) => c.command)])
      const writes = results.slice(0, first.length)
      for (const [i, r] of writes.entries()) if (!r.ok) throw new Error(`Paimon ${first[i].slice(0, 2).join(' ')} failed: ${r.error}`)
      commandsA.forEach((c, i) => paimonOnStrata.get(c.table)!.set(c.key, results[first.length + i]))
      // the second JVM: Paimon's incremental reads of its own tables, over every range
      const second: { producer: string; key: string; command: string[] }[] = []
      for (const name of Object.keys(PRODUCERS)) {
        const dir = join(root, `paimon-${name}`)
        const latest = await (await Table.open(dir)).snapshots.latestId()
        paimonTables.set(name, { dir, latest, answers: new Map() })
        for (const [a, b] of someRanges(latest)) for (const mode of ['delta', 'changelog', 'auto']) second.push({ producer: name, key: `${a},${b},${mode}`, command: incremental(dir, a, b, mode) })
      }
      const answers = paimonBatch(second.map((s) => s.command))
      second.forEach((s, i) => paimonTables.get(s.producer)!.answers.set(s.key, answers[i]))
    }, 120_000)

    it("Paimon's expiration keeps the snapshots a consumer Strata recorded still needs; the consumer reads on", async () => {
      const t = await Table.open(consumerDir)
      expect(consumerRead.length).toBeGreaterThan(0)
      // nextSnapshot 3: Paimon expired 1 and 2 only, although it was asked to keep one snapshot
      expect(await t.snapshots.earliestId()).toBe(3)
      const from = await consumerStart(t, 'etl', undefined)
      expect(from).toBe(2)
      const rest = await strataRows(t, from, await t.snapshots.latestId(), 'auto')
      expect(rest.length).toBeGreaterThan(0)
    })

    afterAll(() => {
      if (root) rmSync(root, { recursive: true, force: true })
    })

    it("Paimon's incremental-between read of Strata's table equals Strata's, for every range, delta and auto", async () => {
      const t = strataTables.get('plain')!
      let nonEmpty = 0
      for (const [key, r] of paimonOnStrata.get('plain')!) {
        const [a, b, mode] = key.split(',')
        const want = paimonRows(r)
        if (want.length) nonEmpty++
        expect(await strataRows(t, Number(a), Number(b), mode as IncrementalMode), `range (${a}, ${b}] ${mode}`).toEqual(want)
      }
      expect(nonEmpty).toBeGreaterThan(3)
    })

    it('a deletion-vector table: Strata returns the appended rows where Paimon 1.4.2 returns none (its batch scan skips level 0)', async () => {
      const t = strataTables.get('dv')!
      for (const [key, r] of paimonOnStrata.get('dv')!) {
        const [a, b, mode] = key.split(',')
        expect(paimonRows(r), `Paimon, range (${a}, ${b}] ${mode}`).toEqual([])
        // Strata's delta of the same range equals the plain table's (same writes, same snapshot kinds)
        expect(await strataRows(t, Number(a), Number(b), mode as IncrementalMode)).toEqual(await strataRows(strataTables.get('plain')!, Number(a), Number(b), mode as IncrementalMode))
      }
    })

    it.fails("DIVERGENT: Paimon's delta of a deletion-vector table equals Strata's (Paimon 1.4.2 drops its level-0 files)", async () => {
      const t = strataTables.get('dv')!
      for (const [key, r] of paimonOnStrata.get('dv')!) {
        const [a, b, mode] = key.split(',')
        expect(await strataRows(t, Number(a), Number(b), mode as IncrementalMode)).toEqual(paimonRows(r))
      }
    })

    for (const producer of ['input', 'lookup', 'lookup-dv']) {
      it(`Strata's incremental read of a Paimon table with changelog-producer ${producer} equals Paimon's changelog and delta, over its snapshots`, async () => {
        const t = paimonTables.get(producer)!
        const table = await Table.open(t.dir)
        let changelogRows = 0
        for (const [key, r] of t.answers) {
          const [a, b, mode] = key.split(',')
          // the delta of a deletion-vector table: the divergence above (Paimon returns none)
          if (producer === 'lookup-dv' && mode === 'delta') {
            expect(paimonRows(r)).toEqual([])
            continue
          }
          const want = paimonRows(r)
          if (mode === 'changelog') changelogRows += want.length
          expect(await strataRows(table, Number(a), Number(b), mode as IncrementalMode), `${producer}: range (${a}, ${b}] ${mode}`).toEqual(want)
        }
        // the changelog is there to compare: the producer wrote changelog files
        expect(changelogRows).toBeGreaterThan(0)
        const withChangelog = (await Promise.all(Array.from({ length: t.latest }, (_, i) => table.snapshots.snapshot(i + 1)))).filter((s) => s?.changelogManifestList)
        expect(withChangelog.length).toBeGreaterThan(0)
      })
    }
  })
}
