// A Paimon warehouse against Apache Paimon 1.4.2's own filesystem catalog
// (`CatalogFactory.createCatalog` with `warehouse`, as Flink, Spark and Trino open one), both
// ways, in one JVM:
// - Strata creates databases and tables (partitioned and not; deduplicate, aggregation,
//   partial-update, first-row, deletion vectors) in a warehouse on local disk, beside
//   directories that are neither; Paimon's catalog lists exactly those databases and tables
//   and reads each table, by name, equal to Strata's read;
// - Paimon's catalog creates a database and tables in its own warehouse and writes them;
//   Strata lists them and opens each by warehouse and name, and reads what Paimon reads.
// Without Java or Maven the file is skipped with one line saying how to run it, except under
// CI, where a run that cannot run interop fails.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { openWarehouse, type StrataTable, type Warehouse } from '../lib/api/index.ts'
import { readAll } from '../lib/read/table-read.ts'
import { type PaimonResult, RUN_COMMAND, buildHarness, byKey, describeWithJava, paimonBatch, parseRows, renderRow, writeJsonLines } from './helpers/interop.ts'

type Rec = Record<string, unknown>

const FIELDS = [
  { name: 'dt', type: 'STRING NOT NULL' },
  { name: 'id', type: 'BIGINT NOT NULL' },
  { name: 'name', type: 'STRING' },
  { name: 'amount', type: 'DECIMAL(10, 2)' },
  { name: 'day', type: 'DATE' },
  { name: 'ts', type: 'TIMESTAMP(3)' },
]
const UNPARTITIONED = [
  { name: 'id', type: 'BIGINT NOT NULL' },
  { name: 'total', type: 'BIGINT' },
  { name: 'label', type: 'STRING' },
]

/** Strata's tables: name, schema, writes (each one commit), and whether to compact (for reads that skip level 0). */
const STRATA_TABLES: { name: string; schema: Rec; writes: Rec[][]; compact?: boolean }[] = [
  {
    name: 'sales.orders',
    schema: { fields: FIELDS, primaryKeys: ['dt', 'id'], partitionKeys: ['dt'], options: { bucket: '2' } },
    writes: [
      [
        { dt: '2024-05-01', id: 1, name: 'ada', amount: '10.50', day: '2024-05-01', ts: '2024-05-01 10:00:00.123' },
        { dt: '2024-05-01', id: 2, name: 'bob', amount: '-3.00', day: null, ts: null },
        { dt: '2024-05-02', id: 1, name: 'cy', amount: null, day: '1969-12-31', ts: '2024-05-02 00:00:00' },
      ],
      [
        { dt: '2024-05-01', id: 2, name: 'bob2', amount: '4.25', day: '2024-05-03', ts: null },
        { dt: '2024-05-02', id: 1, _kind: '-D' },
        { dt: '2024-05-02', id: 3, name: 'dee', amount: '0.01', day: null, ts: null },
      ],
    ],
  },
  {
    name: 'sales.totals',
    schema: { fields: UNPARTITIONED, primaryKeys: ['id'], options: { bucket: '1', 'merge-engine': 'aggregation', 'fields.total.aggregate-function': 'sum', 'fields.label.aggregate-function': 'last_non_null_value' } },
    writes: [
      [{ id: 1, total: 5, label: 'a' }, { id: 2, total: 7, label: null }],
      [{ id: 1, total: 10, label: null }, { id: 2, total: -2, label: 'b' }],
    ],
  },
  {
    name: 'sales.compacted',
    schema: { fields: UNPARTITIONED, primaryKeys: ['id'], options: { bucket: '2', 'deletion-vectors.enabled': 'true' } },
    writes: [[{ id: 1, total: 1, label: 'one' }, { id: 2, total: 2, label: 'two' }, { id: 3, total: 3, label: 'three' }], [{ id: 2, _kind: '-D' }, { id: 3, total: 33, label: 'THREE' }]],
    compact: true,
  },
  {
    name: 'ops.events',
    schema: { fields: FIELDS, primaryKeys: ['dt', 'id'], partitionKeys: ['dt'], options: { bucket: '1', 'merge-engine': 'partial-update' } },
    writes: [[{ dt: 'x', id: 1, name: 'n1', amount: null, day: null, ts: null }], [{ dt: 'x', id: 1, name: null, amount: '9.99', day: '2000-01-01', ts: null }, { dt: 'y', id: 2, name: 'n2' }]],
  },
  {
    name: 'ops.first',
    schema: { fields: UNPARTITIONED, primaryKeys: ['id'], options: { bucket: '1', 'merge-engine': 'first-row' } },
    writes: [[{ id: 1, total: 1, label: 'first' }], [{ id: 1, total: 2, label: 'second' }, { id: 2, total: 3, label: 'other' }]],
    compact: true,
  },
]
/** Strata also creates this database and leaves it empty. */
const EMPTY_DATABASE = 'staging'

/** Paimon's tables in its own warehouse, through its catalog: schema, then writes. */
const PAIMON_SCHEMAS: Record<string, Rec> = {
  'lake.readings': { fields: [{ name: 'day', type: 'STRING NOT NULL' }, { name: 'sensor', type: 'INT NOT NULL' }, { name: 'value', type: 'DOUBLE' }, { name: 'at', type: 'TIMESTAMP(3)' }], primaryKeys: ['day', 'sensor'], partitionKeys: ['day'], options: { bucket: '2' } },
  'lake.plain': { fields: UNPARTITIONED, primaryKeys: ['id'], options: { bucket: '1', 'deletion-vectors.enabled': 'true' } },
}
const PAIMON_WRITES: [string, Rec[]][] = [
  ['lake.readings', [{ day: 'mon', sensor: 1, value: 1.5, at: '2024-01-01T00:00:00.000' }, { day: 'tue', sensor: 1, value: -0.25, at: null }, { day: 'tue', sensor: 2, value: null, at: '2024-01-02T12:00:00.500' }]],
  ['lake.plain', [{ id: '1', total: '10', label: 'x' }, { id: '2', total: '20', label: 'y' }]],
  ['lake.plain', [{ id: '2', _kind: '-D' }, { id: '3', total: '30', label: 'z' }, { id: '1', total: '11', label: null }]],
]

async function strataRows(table: StrataTable): Promise<Rec[]> {
  const handle = table.handle
  return byKey((await readAll(handle)).map((r) => renderRow(handle.view.fields, r)), handle.schema.primaryKeys)
}

function paimonRows(r: PaimonResult, primaryKeys: string[]): Rec[] {
  if (!r.ok) throw new Error(`Paimon failed: ${r.error}`)
  return byKey(parseRows(r.output), primaryKeys)
}

function paimonList(r: PaimonResult): Record<string, string[]> {
  if (!r.ok) throw new Error(`Paimon failed: ${r.error}`)
  return (JSON.parse(r.output) as { databases: Record<string, string[]> }).databases
}

/** Every database of a warehouse and its tables, as Strata lists them. */
async function strataList(wh: Warehouse): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {}
  for (const db of await wh.listDatabases()) out[db] = (await wh.listTables(db)).map((t) => t.table)
  return out
}

describeWithJava('Paimon interop: warehouse and catalog', RUN_COMMAND.replace('interop.test.ts', 'interop-catalog.test.ts'), () => {
  let root = ''
  let strataWarehouse = ''
  let paimonWarehouse = ''
  const strataRead = new Map<string, Rec[]>()
  let results: PaimonResult[] = []
  const at: Record<string, number> = {}

  beforeAll(async () => {
    buildHarness()
    root = mkdtempSync(join(tmpdir(), 'strata-interop-catalog-'))
    strataWarehouse = join(root, 'strata-wh')
    paimonWarehouse = join(root, 'paimon-wh')
    const wh = await openWarehouse(strataWarehouse)
    for (const db of new Set([...STRATA_TABLES.map((t) => t.name.split('.')[0]), EMPTY_DATABASE])) await wh.createDatabase(db)
    for (const t of STRATA_TABLES) {
      const table = await wh.createTable(t.name, t.schema)
      for (const w of t.writes) await table.write(w)
      if (t.compact) await table.compact()
      strataRead.set(t.name, await strataRows(table))
    }
    // neither databases nor tables, to Paimon as to Strata: a directory without '.db', an
    // Iceberg catalog's directory, a directory in a database with no schema in it
    mkdirSync(join(strataWarehouse, 'notes'))
    mkdirSync(join(strataWarehouse, 'iceberg', 'sales', 'orders', 'metadata'), { recursive: true })
    mkdirSync(join(strataWarehouse, 'sales.db', 'scratch'))
    writeFileSync(join(strataWarehouse, 'sales.db', 'scratch', 'readme.txt'), 'not a table')

    const commands: string[][] = []
    const add = (key: string, command: string[]) => ((at[key] = commands.length), commands.push(command))
    add('list strata', ['catalog-list', strataWarehouse])
    for (const t of STRATA_TABLES) add(`read ${t.name}`, ['catalog-read', strataWarehouse, t.name])
    PAIMON_WRITES.forEach(([name, rows], i) => {
      const created = PAIMON_WRITES.findIndex(([n]) => n === name) === i
      const input = writeJsonLines(join(root, `in-${i}.jsonl`), rows)
      add(`write ${i}`, ['catalog-write', paimonWarehouse, name, ...(created ? ['--schema', JSON.stringify(PAIMON_SCHEMAS[name])] : []), '--in', input])
    })
    for (const name of Object.keys(PAIMON_SCHEMAS)) add(`read ${name}`, ['catalog-read', paimonWarehouse, name])
    add('list paimon', ['catalog-list', paimonWarehouse])
    results = paimonBatch(commands)
  }, 300_000)

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true })
  })

  it("Paimon's catalog lists exactly the databases and tables Strata made", async () => {
    const expected = { ops: ['events', 'first'], sales: ['compacted', 'orders', 'totals'], [EMPTY_DATABASE]: [] }
    expect(paimonList(results[at['list strata']])).toEqual(expected)
    expect(await strataList(await openWarehouse(strataWarehouse))).toEqual(expected)
  })

  for (const t of STRATA_TABLES) {
    it(`Paimon's catalog reads ${t.name} (${(t.schema.options as Rec)['merge-engine'] ?? 'deduplicate'}${t.schema.partitionKeys ? ', partitioned' : ''}) equal to Strata's read`, () => {
      const rows = paimonRows(results[at[`read ${t.name}`]], t.schema.primaryKeys as string[])
      expect(rows.length).toBeGreaterThan(0)
      expect(rows).toEqual(strataRead.get(t.name))
    })
  }

  it("Strata lists and opens by name what Paimon's catalog created, and reads it as Paimon does", async () => {
    for (const [i] of PAIMON_WRITES.entries()) expect(results[at[`write ${i}`]]).toMatchObject({ ok: true })
    const wh = await openWarehouse(paimonWarehouse)
    expect(await strataList(wh)).toEqual({ lake: ['plain', 'readings'] })
    expect(paimonList(results[at['list paimon']])).toEqual({ lake: ['plain', 'readings'] })
    for (const [name, schema] of Object.entries(PAIMON_SCHEMAS)) {
      const table = await wh.openTable(name)
      expect(table.uri).toBe(`file://${paimonWarehouse}/${name.replace('.', '.db/')}`)
      const paimon = paimonRows(results[at[`read ${name}`]], schema.primaryKeys as string[])
      expect(paimon.length).toBeGreaterThan(0)
      expect(await strataRows(table)).toEqual(paimon)
    }
  })
})
