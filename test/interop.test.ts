// Apache Paimon's own Java code against Strata's tables, both ways (issue 17), through the
// harness in interop/ (Paimon 1.4.2's public Java API on a bare table directory):
// - A, Paimon reads Strata: Strata writes and compacts small tables; at every snapshot
//   Paimon's batch read must return exactly Strata's rows, and Paimon must see Strata's files.
// - B, Strata reads Paimon: the harness writes and compacts with Paimon; at every snapshot
//   Strata's read must return exactly Paimon's rows, and `strata status` must count the rows
//   Paimon's deletion vectors delete. Then Strata writes and compacts one of those tables and
//   Paimon reads it again.
// Both sides are rendered as the harness renders values (interop/README.md). A cell where
// the two diverge is an `it.fails` naming the difference, so it fails once someone fixes it.
// Without Java or Maven the file is skipped with one line saying how to run it, except under
// CI, where a run that cannot run interop fails.

import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tableStatus } from '../lib/cli/status.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { dvIndexByBucket } from '../lib/manifest/bucket-state.ts'
import { readAll } from '../lib/read/table-read.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/table/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { RUN_COMMAND, type PaimonResult, buildHarness, byKey, missingTools, paimonBatch, parseRows, renderRow, writeJsonLines } from './helpers/interop.ts'

type Rec = Record<string, unknown>
type Rows = Rec[]

// ---- the data: two schema families, one deterministic history of upserts and deletes ----

const pick = <T>(n: number, values: T[]): T => values[n % values.length]

/** A table's columns and primary key, and row `id` at version `v` of the history below. */
interface Family {
  name: string
  fields: [string, string][]
  primaryKeys: string[]
  row(id: number, v: number): Rec
}

/** The first matrix: the types named in issue 17's first cut, each cycling through edge values. */
const MAIN: Family = {
  name: 'main types',
  fields: [
    ['id', 'BIGINT'],
    ['i', 'INT'],
    ['s', 'STRING'],
    ['d', 'DOUBLE'],
    ['b', 'BOOLEAN'],
    ['dec', 'DECIMAL(10, 2)'],
    ['big', 'DECIMAL(38, 10)'],
    ['dt', 'DATE'],
    ['ts3', 'TIMESTAMP(3)'],
    ['ts6', 'TIMESTAMP(6)'],
    ['bin', 'BYTES'],
  ],
  primaryKeys: ['id'],
  row(id, v) {
    const n = id + 7 * v
    return {
      id,
      i: pick(n, [n * 7 - 100, null, -2147483648, 2147483647, 0]),
      s: pick(n + 1, [`s${id}v${v}`, '', 'héllo ✓ 𝄞 wide', null, 'a string longer than sixteen characters, truncated in stats']),
      d: pick(n + 2, [n / 3, -0, 1e300, -2.5e-300, null, 'NaN', 'Infinity', '-Infinity']),
      b: pick(n, [true, false, null]),
      dec: pick(n + 3, [`${n}.25`, '-12345678.90', '99999999.99', '0.01', null]),
      big: pick(n + 4, ['1234567890123456789012345678.0123456789', `-${n}.0000000001`, '0.0000000000', null, '-9999999999999999999999999999.9999999999']),
      dt: pick(n + 5, ['2024-02-29', '1969-12-31', '0001-01-01', '9999-12-31', null, '1970-01-01']),
      ts3: pick(n + 6, ['2024-05-01 12:34:56.789', '1969-12-31 23:59:59.999', '1900-01-01 00:00:00.000', null, '2038-01-19 03:14:08.001']),
      ts6: pick(n + 2, ['2024-05-01 12:34:56.123456', '1969-12-31 23:59:59.999999', '1970-01-01 00:00:00.000001', null, '2262-04-11 23:47:16.854775']),
      bin: pick(n + 1, [Buffer.from([0, 255, id & 255, v]).toString('base64'), '', null, Buffer.from('bytes ✓').toString('base64')]),
    }
  },
}

/** The rest of Strata's types, behind a composite key of INT and VARCHAR. */
const MORE: Family = {
  name: 'more types',
  fields: [
    ['id', 'INT'],
    ['tag', 'VARCHAR(20)'],
    ['t', 'TINYINT'],
    ['sm', 'SMALLINT'],
    ['f', 'FLOAT'],
    ['c', 'CHAR(5)'],
    ['bn', 'BINARY(4)'],
    ['vb', 'VARBINARY(8)'],
    ['ts0', 'TIMESTAMP(0)'],
    ['bi', 'BIGINT'],
  ],
  primaryKeys: ['id', 'tag'],
  row(id, v) {
    const n = id + 7 * v
    return {
      id: pick(id, [id, -id]),
      tag: pick(id, ['', 'é', 'z', 'tag']),
      t: pick(n, [-128, 127, n % 100, null]),
      sm: pick(n + 1, [-32768, 32767, n * 3, null]),
      f: pick(n + 2, [n / 7, 3.4028234663852886e38, -1.401298464324817e-45, null, 'NaN', -0]),
      c: pick(n + 3, ['abcde', 'ab', '', null]),
      bn: pick(n + 1, [Buffer.from([1, 2, 3, 4]).toString('base64'), Buffer.from([255, 0, 255, v & 255]).toString('base64'), null]),
      vb: pick(n + 2, [Buffer.from([n & 255]).toString('base64'), '', null]),
      ts0: pick(n, ['2024-05-01 12:34:56', '1969-12-31 23:59:59', null]),
      bi: pick(n + 3, ['9223372036854775807', '-9223372036854775808', String(n), null]),
    }
  },
}

interface Layout {
  partitioned: boolean
  dv: boolean
  /** no `bucket` option at all: Strata's default of 1 bucket */
  defaultBucket?: boolean
}

interface SchemaJson {
  fields: { name: string; type: string }[]
  primaryKeys: string[]
  partitionKeys: string[]
  options: Record<string, string>
}

function schemaOf(family: Family, { partitioned, dv, defaultBucket }: Layout): SchemaJson {
  const fields = (partitioned ? [['p', 'STRING'], ...family.fields] : family.fields).map(([name, type]) => ({ name, type }))
  return {
    fields,
    primaryKeys: partitioned ? ['p', ...family.primaryKeys] : family.primaryKeys,
    partitionKeys: partitioned ? ['p'] : [],
    options: defaultBucket ? {} : { bucket: '2', 'deletion-vectors.enabled': String(dv) },
  }
}

function rowOf(family: Family, id: number, v: number, partitioned: boolean): Rec {
  const row = family.row(id, v)
  return partitioned ? { p: id % 3 === 0 ? '2024-05-01' : '2024-05-02', ...row } : row
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, k) => from + k)

/** One commit's records: `[kind, id, version]`, rendered as input JSON with `_kind`. */
type Op = ['+I' | '-U' | '+U' | '-D', number, number]
const commit = (family: Family, ops: Op[], partitioned: boolean): Rec[] => ops.map(([kind, id, v]) => ({ _kind: kind, ...rowOf(family, id, v, partitioned) }))

/** The history every cell runs: inserts, updates (+U and -U/+U pairs), deletes, resurrections. */
const COMMITS: Op[][] = [
  range(0, 29).map((id): Op => ['+I', id, 0]),
  [...range(0, 9).map((id): Op => ['+U', id, 1]), ...range(10, 14).map((id): Op => ['-D', id, 0]), ...range(30, 34).map((id): Op => ['+I', id, 0])],
  [...range(15, 17).map((id): Op => ['-U', id, 0]), ...range(15, 17).map((id): Op => ['+U', id, 2]), ...range(0, 2).map((id): Op => ['-D', id, 1]), ['+I', 10, 3], ['+I', 11, 3]],
  [...range(20, 24).map((id): Op => ['+U', id, 4]), ['-D', 25, 0], ['-D', 26, 0], ['+I', 35, 0], ['-D', 99, 0]],
  [...range(3, 5).map((id): Op => ['+U', id, 5]), ['-D', 35, 0], ['+I', 36, 5]],
]
/** Strata continuing a Paimon-written table (direction B). */
const CONTINUATION: Op[] = [...range(6, 8).map((id): Op => ['+U', id, 6]), ['-D', 9, 1], ['+I', 40, 6]]

type Step = { write: Op[] } | { compact: 'full' | 'minor' }
/** Five commits: a full compaction after the third, a minor one after the fourth, a full one at the end. */
const STEPS: Step[] = [
  { write: COMMITS[0] },
  { write: COMMITS[1] },
  { write: COMMITS[2] },
  { compact: 'full' },
  { write: COMMITS[3] },
  { compact: 'minor' },
  { write: COMMITS[4] },
  { compact: 'full' },
]

// ---- the cells ----

interface CellSpec {
  family: Family
  layout: Layout
}

interface Cell extends CellSpec {
  name: string
  dir: string
  primaryKeys: string[]
  /** Strata's rows by snapshot id */
  strata: Map<number, Rows>
  /** the harness's `read` of each snapshot */
  paimon: Map<number, PaimonResult>
  /** the harness's `meta` of the latest snapshot */
  meta?: PaimonResult
  /** the harness's `meta` of each snapshot (B), or of the one after the minor compaction (A) */
  metas: Map<number, PaimonResult>
}

const LAYOUTS: Layout[] = [
  { partitioned: false, dv: false },
  { partitioned: true, dv: false },
  { partitioned: false, dv: true },
  { partitioned: true, dv: true },
]
const FLAT: Layout = LAYOUTS[0]
const DEFAULT_BUCKET: Layout = { partitioned: false, dv: false, defaultBucket: true }
const A_CELLS: CellSpec[] = [...LAYOUTS.map((layout) => ({ family: MAIN, layout })), { family: MORE, layout: FLAT }, { family: MAIN, layout: DEFAULT_BUCKET }]
const B_CELLS: CellSpec[] = [
  { family: MAIN, layout: FLAT },
  { family: MAIN, layout: LAYOUTS[3] },
  { family: MORE, layout: FLAT },
]
/** The Paimon-written table Strata continues (direction B). */
const CONTINUED = 1

const cellName = ({ family, layout }: CellSpec) =>
  `${family.name}, ${layout.partitioned ? 'partitioned' : 'unpartitioned'}, ${layout.defaultBucket ? 'no bucket option' : 'bucket 2'}, deletion vectors ${layout.dv ? 'on' : 'off'}`
const dirName = (prefix: string, { family, layout }: CellSpec) =>
  `${prefix}-${family === MAIN ? 'main' : 'more'}-${layout.partitioned ? 'part' : 'flat'}-${layout.dv ? 'dv' : 'nodv'}${layout.defaultBucket ? '-default-bucket' : ''}`

/**
 * Cells where Strata and Paimon disagree, by test name, each with the exact difference. Such a
 * test runs as `it.fails`: it passes while the divergence is there and fails once it is fixed,
 * so whoever fixes it moves the entry out of this list.
 */
const DIVERGENT: Record<string, string> = {
}
const cell = (name: string) => (name in DIVERGENT ? it.fails : it)

async function strataRows(table: Table, snapshotId: number): Promise<Rows> {
  return (await readAll(table, { snapshotId })).map((r) => renderRow(table.view.fields, r))
}

async function strataWrite(table: Table, records: Rec[]): Promise<void> {
  await writeBatch(
    table,
    records.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` })),
  )
}

function paimonRows(r: PaimonResult | undefined): Rows {
  if (!r) throw new Error('the harness was not asked for this read')
  if (!r.ok) throw new Error(`Paimon failed: ${r.error}`)
  return parseRows(r.output)
}

/** Data files that Paimon's scan hands a deletion vector with deleted rows, over the given `meta`s. */
function withDeletionVectors(metas: PaimonResult[]): number {
  let n = 0
  for (const m of metas) {
    if (!m.ok) throw new Error(`Paimon failed: ${m.error}`)
    for (const f of JSON.parse(m.output).files as Rec[]) if (typeof f.deletionVectorCardinality === 'number' && f.deletionVectorCardinality > 0) n++
  }
  return n
}

/** Every snapshot of a cell reads the same rows in both; the latest is not trivially empty. */
function expectSameRows(c: Cell): void {
  for (const [id, rows] of c.strata) {
    expect(byKey(rows, c.primaryKeys), `snapshot ${id}: Strata's rows (expected: Paimon's)`).toEqual(byKey(paimonRows(c.paimon.get(id)), c.primaryKeys))
  }
  expect(c.strata.get(Math.max(...c.strata.keys()))!.length).toBeGreaterThan(10)
}

const missing = missingTools()

if (missing.length > 0 && !process.env.CI) {
  process.stdout.write(`interop suite skipped: ${missing.join(' and ')} not on PATH; to run it: ${RUN_COMMAND}\n`)
  describe.skip('Paimon interop', () => it('needs Java and Maven', () => {}))
} else if (missing.length > 0) {
  describe('Paimon interop', () => {
    it('runs under CI', () => {
      throw new Error(`CI must run the interop suite, but ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not on PATH (${RUN_COMMAND})`)
    })
  })
} else {
  describe('Paimon interop', () => {
    let root = ''
    const cellsA = new Map<string, Cell>()
    const cellsB = new Map<string, Cell>()
    let continued: { dir: string; primaryKeys: string[]; strata: Rows; paimon?: PaimonResult } | null = null
    const stale = { dir: '', steps: [] as PaimonResult[], meta: undefined as PaimonResult | undefined }

    beforeAll(async () => {
      buildHarness()
      root = mkdtempSync(join(tmpdir(), 'strata-interop-'))
      const minorStep = STEPS.findIndex((s) => 'compact' in s && s.compact === 'minor')

      // the first JVM: Paimon reads every snapshot Strata made (A) and writes its own tables (B)
      const first: string[][] = []
      const onFirst: ((r: PaimonResult) => void)[] = []
      const ask = (command: string[], then: (r: PaimonResult) => void) => {
        first.push(command)
        onFirst.push(then)
      }

      for (const spec of A_CELLS) {
        const dir = join(root, dirName('a', spec))
        const schema = schemaOf(spec.family, spec.layout)
        const table = await Table.create(dir, schema)
        let afterMinor = 0
        for (const [k, step] of STEPS.entries()) {
          if ('write' in step) await strataWrite(table, commit(spec.family, step.write, spec.layout.partitioned))
          else await compactTable(table, { full: step.compact === 'full' })
          if (k === minorStep) afterMinor = await table.snapshots.latestId()
        }
        const c: Cell = { ...spec, name: cellName(spec), dir, primaryKeys: schema.primaryKeys, strata: new Map(), paimon: new Map(), metas: new Map() }
        cellsA.set(c.name, c)
        for (const id of await table.snapshots.listIds()) {
          c.strata.set(id, await strataRows(table, id))
          ask(['read', dir, '--snapshot', String(id)], (r) => c.paimon.set(id, r))
        }
        ask(['meta', dir], (r) => (c.meta = r))
        ask(['meta', dir, '--snapshot', String(afterMinor)], (r) => c.metas.set(afterMinor, r))
      }

      for (const spec of B_CELLS) {
        const dir = join(root, dirName('b', spec))
        const schema = schemaOf(spec.family, spec.layout)
        const c: Cell = { ...spec, name: cellName(spec), dir, primaryKeys: schema.primaryKeys, strata: new Map(), paimon: new Map(), metas: new Map() }
        cellsB.set(c.name, c)
        for (const [k, step] of STEPS.entries()) {
          const command =
            'write' in step
              ? ['write', dir, '--schema', JSON.stringify(schema), '--in', writeJsonLines(`${dir}-${k}.jsonl`, commit(spec.family, step.write, spec.layout.partitioned))]
              : ['compact', dir, ...(step.compact === 'full' ? ['--full'] : [])]
          ask(command, (r) => {
            if (!r.ok) throw new Error(`Paimon could not ${command[0]} ${c.name} (step ${k}): ${r.error}`)
          })
        }
        ask(['meta', dir], (r) => (c.meta = r))
      }
      // a vector Paimon keeps for a file its full compaction removed: two rows in bucket 0, one
      // deleted (a vector on the level-5 file), then `compact --full`
      stale.dir = join(root, 'b-stale-vector')
      const staleSchema = { fields: [{ name: 'id', type: 'BIGINT' }, { name: 'v', type: 'STRING' }], primaryKeys: ['id'], options: { bucket: '1', 'deletion-vectors.enabled': 'true' } }
      const staleWrites = [[{ id: 1, v: 'a' }, { id: 2, v: 'b' }], [{ _kind: '-D', id: 1 }]]
      staleWrites.forEach((records, k) => {
        const command = ['write', stale.dir, '--schema', JSON.stringify(staleSchema), '--in', writeJsonLines(`${stale.dir}-${k}.jsonl`, records)]
        ask(command, (r) => stale.steps.push(r))
      })
      ask(['compact', stale.dir, '--full'], (r) => stale.steps.push(r))
      ask(['meta', stale.dir], (r) => (stale.meta = r))
      paimonBatch(first).forEach((r, k) => onFirst[k](r))

      // the second JVM: Paimon reads each snapshot it made (B), and the table Strata continued
      const second: string[][] = []
      const onSecond: ((r: PaimonResult) => void)[] = []
      for (const c of cellsB.values()) {
        const table = await Table.open(c.dir)
        for (const { id } of JSON.parse(c.meta!.output).snapshots as { id: number }[]) {
          c.strata.set(id, await strataRows(table, id))
          second.push(['read', c.dir, '--snapshot', String(id)], ['meta', c.dir, '--snapshot', String(id)])
          onSecond.push((r) => c.paimon.set(id, r), (r) => c.metas.set(id, r))
        }
      }
      const source = [...cellsB.values()][CONTINUED]
      const dir = join(root, 'b-continued')
      cpSync(source.dir, dir, { recursive: true })
      const table = await Table.open(dir)
      await strataWrite(table, commit(source.family, CONTINUATION, source.layout.partitioned))
      await compactTable(table, { full: false })
      continued = { dir, primaryKeys: source.primaryKeys, strata: await strataRows(table, await table.snapshots.latestId()) }
      second.push(['read', dir])
      onSecond.push((r) => (continued!.paimon = r))
      paimonBatch(second).forEach((r, k) => onSecond[k](r))
    }, 15 * 60_000)

    afterAll(() => {
      if (root) rmSync(root, { recursive: true, force: true })
    })

    describe('A: Paimon reads Strata tables', () => {
      for (const spec of A_CELLS) {
        const name = cellName(spec)
        const reads = `${name}: every snapshot reads the same rows`
        cell(reads)(reads, () => {
          const c = cellsA.get(name)!
          // a write is a snapshot; a compaction is one per bucket it changed (none when the
          // minor compaction's picker chose nothing)
          expect(c.strata.size).toBeGreaterThanOrEqual(STEPS.filter((s) => 'write' in s).length)
          expectSameRows(c)
          // with vectors on, the minor compaction deleted rows of the level-5 files by vector
          if (spec.layout.dv) expect(withDeletionVectors([...c.metas.values()]), 'Paimon saw deletion vectors').toBeGreaterThan(0)
        })
        const files = `${name}: Paimon sees Strata's snapshots, options and files`
        cell(files)(files, async () => {
          const c = cellsA.get(name)!
          expect(c.meta?.ok, c.meta?.error).toBe(true)
          const meta = JSON.parse(c.meta!.output)
          const table = await Table.open(c.dir)
          const latest = (await table.snapshots.latest())!
          expect(meta.snapshots.map((s: { id: number }) => s.id)).toEqual([...c.strata.keys()])
          expect(meta.effective).toMatchObject({ mergeEngine: 'deduplicate', deletionVectors: spec.layout.dv })
          const order = (a: Rec, b: Rec) => String(a.fileName).localeCompare(String(b.fileName))
          const strata = (await table.manifests.liveEntries(latest)).map((e) => ({ bucket: e.bucket, level: e.file.level, fileName: e.file.fileName, rowCount: Number(e.file.rowCount) }))
          const paimon = (meta.files as Rec[]).map((f) => ({ bucket: f.bucket, level: f.level, fileName: f.fileName, rowCount: f.rowCount }))
          expect(paimon.sort(order)).toEqual(strata.sort(order))
        })
        const buckets = `${name}: Paimon reads the bucket count Strata writes with`
        cell(buckets)(buckets, async () => {
          const c = cellsA.get(name)!
          expect(c.meta?.ok, c.meta?.error).toBe(true)
          expect(JSON.parse(c.meta!.output).effective.bucket).toBe((await Table.open(c.dir)).view.options.bucket)
        })
      }
    })

    describe('B: Strata reads Paimon tables', () => {
      for (const spec of B_CELLS) {
        const name = `${cellName(spec)}: every snapshot Paimon wrote and compacted reads the same rows`
        cell(name)(name, () => {
          const c = cellsB.get(cellName(spec))!
          // a write is a snapshot (two with deletion vectors: Paimon's write then compacts
          // level 0); a minor compaction is one only when Paimon's picker chose files
          expect(c.strata.size).toBeGreaterThanOrEqual(STEPS.filter((s) => 'write' in s).length)
          expectSameRows(c)
          if (spec.layout.dv) expect(withDeletionVectors([...c.metas.values()]), 'Paimon wrote deletion vectors').toBeGreaterThan(0)
        })
      }
      /** Rows deleted by vector: as Paimon's scan applies them, and as `strata status` reports them. */
      const deletedByVector = async (dir: string, meta: PaimonResult | undefined) => {
        expect(meta?.ok, meta?.error).toBe(true)
        const paimon = (JSON.parse(meta!.output).files as Rec[]).reduce((n, f) => n + Number(f.deletionVectorCardinality ?? 0), 0)
        const status = await tableStatus(await Table.open(dir))
        return { paimon, strata: status.buckets.reduce((n, b) => n + b.dvCardinality, 0) }
      }
      for (const spec of B_CELLS.filter((s) => s.layout.dv)) {
        const name = `${cellName(spec)}: Strata's status counts the rows Paimon's deletion vectors delete`
        cell(name)(name, async () => {
          const c = cellsB.get(cellName(spec))!
          const { paimon, strata } = await deletedByVector(c.dir, c.meta)
          expect(strata).toBe(paimon)
        })
      }
      // the situation (a passing test, so the one below cannot pass for another reason):
      // Paimon 1.4.2's batch full compaction of a bucket whose level-5 file carries a vector
      // removes that file but keeps the previous index manifest, which still lists a 1-row
      // vector for it; Paimon applies vectors by data file name, so it deletes nothing, and
      // `strata status` counts only vectors of live files (it once summed them all)
      it('Paimon keeps a deletion vector for a data file its full compaction removed, and applies none', async () => {
        for (const r of stale.steps) expect(r.ok, r.error).toBe(true)
        const table = await Table.open(stale.dir)
        const latest = (await table.snapshots.latest())!
        const live = new Set((await table.manifests.liveEntries(latest)).map((e) => e.file.fileName))
        const vectors = [...(await dvIndexByBucket(table, latest)).values()].flat().flatMap((e) => e.dvRanges ?? [])
        expect(vectors.filter((v) => !live.has(v.dataFileName)).map((v) => Number(v.cardinality))).toEqual([1])
        expect((await deletedByVector(stale.dir, stale.meta)).paimon).toBe(0)
      })
      const staleName = "a vector Paimon keeps for a data file its full compaction removed: Strata's status does not count it"
      cell(staleName)(staleName, async () => {
        const { paimon, strata } = await deletedByVector(stale.dir, stale.meta)
        expect(strata).toBe(paimon)
      })
      const name = `${cellName(B_CELLS[CONTINUED])}: Strata continues the Paimon table (write, compact) and Paimon reads what Strata reads`
      cell(name)(name, () => {
        expect(byKey(paimonRows(continued!.paimon), continued!.primaryKeys)).toEqual(byKey(continued!.strata, continued!.primaryKeys))
      })
    })
  })
}
