// Nested types (ARRAY, MAP, MULTISET, ROW) against Apache Paimon 1.4.2, both ways, equal to a
// model of the table (the latest record of each key; under partial-update, each column's
// latest non-null value):
// - Paimon reads tables Strata wrote in three commits (files of every commit live, so Paimon
//   merges them), then after Strata's full compaction, for deduplicate, deduplicate with
//   deletion vectors (read after the compaction only: Paimon's batch read skips level 0) and
//   partial-update;
// - Strata reads the same commits written by Paimon (its Parquet writer's nested layout),
//   compacts them, and Paimon reads Strata's compacted files.
// Values include nulls at every level, empty arrays and maps, nested rows in arrays in rows,
// multisets with repeated elements. Skipped without Java or Maven, except under CI.

import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { parquetMetadata } from 'hyparquet'
import { dataFileSchema } from '../lib/format/data-file-layout.ts'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { dataTypeJson, parseDataType } from '../lib/format/data-type.ts'
import type { DataType, MapValue, Value } from '../lib/types.ts'
import { RUN_COMMAND, buildHarness, byKey, describeWithJava, paimonBatch, parseRows, renderValue, writeJsonLines } from './helpers/interop.ts'

type Rec = Record<string, unknown>

const FIELDS = [
  { name: 'id', type: 'INT NOT NULL' },
  { name: 'tags', type: 'ARRAY<STRING>' },
  { name: 'attrs', type: 'MAP<STRING, BIGINT>' },
  { name: 'pos', type: 'ROW<lat DOUBLE, items ARRAY<ROW<sku STRING, qty INT NOT NULL>>>' },
  { name: 'bag', type: 'MULTISET<STRING>' },
  { name: 'grid', type: 'ARRAY<ARRAY<INT>>' },
  { name: 'idx', type: 'MAP<INT, ARRAY<STRING>>' },
  { name: 'note', type: 'STRING' },
]

/** Paimon's JSON form of each type, ROW fields without ids (Schema.Builder numbers them). */
function paimonSchema(options: Record<string, string>): Rec {
  const strip = (j: unknown): unknown => {
    if (Array.isArray(j)) return j.map(strip)
    if (typeof j === 'object' && j !== null) return Object.fromEntries(Object.entries(j).filter(([k]) => k !== 'id').map(([k, v]) => [k, strip(v)]))
    return j
  }
  return { fields: FIELDS.map((f) => ({ name: f.name, type: strip(dataTypeJson(parseDataType(f.type, f.name))) })), primaryKeys: ['id'], options }
}

/** A small seeded generator (mulberry32), so the data is the same on every run. */
function rng(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

function records(seed: number, n: number, keys: number): Rec[] {
  const r = rng(seed)
  const pick = <T,>(xs: T[]): T => xs[Math.floor(r() * xs.length)]
  const maybe = <T,>(f: () => T, nulls = 0.2): T | null => (r() < nulls ? null : f())
  const many = <T,>(f: () => T, max = 4): T[] => Array.from({ length: Math.floor(r() * (max + 1)) }, f)
  const word = () => pick(['a', 'b', 'ç', 'a longer string than seven bytes', ''])
  const out: Rec[] = []
  for (let i = 0; i < n; i++) {
    const rec: Rec = { id: Math.floor(r() * keys) }
    const set = (name: string, v: () => unknown) => {
      if (r() < 0.85) rec[name] = maybe(v)
    }
    set('tags', () => many(() => maybe(word)))
    set('attrs', () => Object.fromEntries(many(() => [word() + Math.floor(r() * 9), maybe(() => String(Math.floor(r() * 1e6) - 5e5))])))
    set('pos', () => ({ lat: maybe(() => Math.round(r() * 1e4) / 100), items: maybe(() => many(() => maybe(() => ({ sku: maybe(word), qty: Math.floor(r() * 10) })))) }))
    set('bag', () => many(() => pick(['x', 'y', 'z']), 5))
    set('grid', () => many(() => maybe(() => many(() => maybe(() => Math.floor(r() * 100)), 3)), 3))
    set('idx', () => [...new Set(many(() => Math.floor(r() * 20)))].map((k) => [k, maybe(() => many(() => maybe(word), 2))]))
    set('note', word)
    out.push(rec)
  }
  return out
}

const COMMITS = [
  // fixed edge cases: nulls at every level, empty containers
  [
    { id: 100, tags: [], attrs: {}, pos: { lat: null, items: [] }, bag: [], grid: [[], null, [null]], idx: [], note: 'empties' },
    { id: 101, tags: [null], attrs: { k: null }, pos: { lat: 1.5, items: [null, { sku: null, qty: 0 }] }, bag: ['p', 'p', 'q'], grid: null, idx: [[1, null], [2, []], [3, [null, 'x']]], note: null },
    { id: 102 },
  ],
  records(1, 40, 30),
  [...records(2, 30, 30), { id: 101, tags: ['again'], pos: null }],
]

/** The model: per key the latest record, or under partial-update each column's latest non-null value. */
function model(commits: Rec[][], partial: boolean): Map<number, Rec> {
  const rows = new Map<number, Rec>()
  for (const commit of commits) {
    for (const rec of commit) {
      const id = rec.id as number
      const base = partial ? { ...(rows.get(id) ?? {}) } : {}
      for (const [k, v] of Object.entries(rec)) if (!partial || v !== null) base[k] = v
      rows.set(id, base)
    }
  }
  return rows
}

/** A value as the harness renders Paimon's: MAP and MULTISET as [key, value] pairs, sorted here by key. */
function render(t: DataType, v: Value): unknown {
  if (v === null) return null
  switch (t.root) {
    case 'ARRAY':
      return (v as Value[]).map((x) => render(t.element!, x))
    case 'ROW':
      return Object.fromEntries(t.fields!.map((f, i) => [f.name, render(f.type, (v as Value[])[i])]))
    case 'MAP':
    case 'MULTISET': {
      const m = v as MapValue
      const kt = t.root === 'MAP' ? t.key! : t.element!
      const vt: DataType = t.root === 'MAP' ? t.value! : { root: 'INT', nullable: false }
      return m.keys.map((k, i) => [render(kt, k), render(vt, m.values[i])]).sort((a, b) => (JSON.stringify(a[0]) < JSON.stringify(b[0]) ? -1 : 1))
    }
    default:
      return renderValue({ id: 0, name: '', type: t }, v)
  }
}

/** Paimon's rendering with its map pairs sorted as `render` sorts them. */
function normalize(t: DataType, j: unknown): unknown {
  if (j === null) return null
  switch (t.root) {
    case 'ARRAY':
      return (j as unknown[]).map((x) => normalize(t.element!, x))
    case 'ROW':
      return Object.fromEntries(t.fields!.map((f) => [f.name, normalize(f.type, (j as Rec)[f.name])]))
    case 'MAP':
    case 'MULTISET': {
      const kt = t.root === 'MAP' ? t.key! : t.element!
      const vt: DataType = t.root === 'MAP' ? t.value! : { root: 'INT', nullable: false }
      return (j as unknown[][]).map(([k, x]) => [normalize(kt, k), normalize(vt, x)]).sort((a, b) => (JSON.stringify(a[0]) < JSON.stringify(b[0]) ? -1 : 1))
    }
    default:
      return j
  }
}

describeWithJava('nested types against Paimon', RUN_COMMAND.replace('interop.test.ts', 'interop-nested.test.ts'), () => {
  let root: string
  const VARIANTS: { name: string; options: Record<string, string>; partial: boolean; dv: boolean }[] = [
    { name: 'deduplicate', options: { bucket: '2' }, partial: false, dv: false },
    { name: 'deduplicate with deletion vectors', options: { bucket: '2', 'deletion-vectors.enabled': 'true' }, partial: false, dv: true },
    { name: 'partial-update', options: { bucket: '2', 'merge-engine': 'partial-update' }, partial: true, dv: false },
  ]
  let paimonFileSchema: string[] = []
  /** the Iceberg schema each side's metadata carries for the same table */
  let icebergSchemas: { strata: unknown; paimon: unknown } = { strata: null, paimon: null }
  let strataFileSchema: string[] = []
  const results = new Map<string, { paimonOfStrata?: Rec[]; paimonOfStrataCompacted: Rec[]; strataOfPaimon: Rec[]; strataOfPaimonCompacted: Rec[]; paimonOfPaimonCompactedByStrata: Rec[]; expected: Rec[] }>()
  let types: Map<string, DataType>

  /** Rows of any reader in one comparable form. */
  const fromModel = (table: Table, rows: Map<number, Rec>): Rec[] =>
    byKey(
      [...rows.values()].map((rec) => {
        const { row } = recordFromJson(table.view, rec, 'model')
        return Object.fromEntries(table.view.fields.map((f, i) => [f.name, render(f.type, row[i])]))
      }),
      ['id'],
    )
  const fromStrata = async (table: Table): Promise<Rec[]> => byKey((await readAll(table)).map((row) => Object.fromEntries(table.view.fields.map((f, i) => [f.name, render(f.type, row[i])]))), ['id'])
  const fromPaimon = (output: string): Rec[] => byKey(parseRows(output).map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, normalize(types.get(k)!, v)]))), ['id'])

  beforeAll(async () => {
    buildHarness()
    root = mkdtempSync(join(tmpdir(), 'strata-interop-nested-'))
    const commands: string[][] = []
    const plan: { name: string; strataDir: string; paimonDir: string; at: Record<string, number> }[] = []
    for (const v of VARIANTS) {
      const strataDir = join(root, `strata-${plan.length}`)
      const paimonDir = join(root, `paimon-${plan.length}`)
      const table = await Table.create(strataDir, { fields: FIELDS, primaryKeys: ['id'], options: v.options })
      types = new Map(table.view.fields.map((f) => [f.name, f.type]))
      for (const [c, commit] of COMMITS.entries()) await writeBatch(table, commit.map((r, i) => ({ ...recordFromJson(table.view, r, `commit ${c} record ${i}`), where: `commit ${c} record ${i}` })))
      const at: Record<string, number> = {}
      if (!v.dv) at.paimonOfStrata = commands.push(['read', strataDir]) - 1
      const schemaFile = join(root, `schema-${plan.length}.json`)
      writeFileSync(schemaFile, JSON.stringify(paimonSchema(v.options)))
      at.create = commands.push(['nested-create', paimonDir, '--schema', schemaFile]) - 1
      COMMITS.forEach((commit, c) => commands.push(['write', paimonDir, '--in', writeJsonLines(join(root, `in-${plan.length}-${c}.jsonl`), commit)]))
      plan.push({ name: v.name, strataDir, paimonDir, at })
    }
    // Iceberg metadata of a nested table, both sides (lists, maps and structs; no MULTISET, which Paimon refuses too)
    const ICEBERG_FIELDS = FIELDS.filter((f) => f.name !== 'bag')
    const icebergOptions = { bucket: '1', 'metadata.iceberg.storage': 'table-location' }
    const strataIceberg = join(root, 'wh', 'db.db', 'strata_iceberg')
    const it0 = await Table.create(strataIceberg, { fields: ICEBERG_FIELDS, primaryKeys: ['id'], options: icebergOptions })
    const icebergRecords = COMMITS[0].map(({ bag: _bag, ...r }) => r)
    await writeBatch(it0, icebergRecords.map((r, i) => ({ ...recordFromJson(it0.view, r, `record ${i}`), where: `record ${i}` })))
    const icebergSchemaFile = join(root, 'schema-iceberg.json')
    writeFileSync(icebergSchemaFile, JSON.stringify({ ...paimonSchema(icebergOptions), fields: (paimonSchema(icebergOptions).fields as Rec[]).filter((f) => f.name !== 'bag') }))
    commands.push(['nested-create', join(root, 'wh', 'db.db', 'paimon_iceberg'), '--schema', icebergSchemaFile], ['write', join(root, 'wh', 'db.db', 'paimon_iceberg'), '--in', writeJsonLines(join(root, 'in-iceberg.jsonl'), icebergRecords)])
    // Strata's full compactions of its own tables, meanwhile
    for (const p of plan) await compactTable(await Table.open(p.strataDir), { full: true })
    const first = paimonBatch([...commands, ...plan.map((p) => ['read', p.strataDir])])
    for (const r of first) if (!r.ok) throw new Error(`harness: ${r.error}`)
    const compactedReads = first.slice(commands.length)
    const latestSchema = (dir: string): unknown => {
      const meta = readdirSync(join(dir, 'metadata')).filter((f) => /^v\d+\.metadata\.json$/.test(f)).sort((a, b) => Number(a.slice(1).split('.')[0]) - Number(b.slice(1).split('.')[0]))
      const j = JSON.parse(readFileSync(join(dir, 'metadata', meta[meta.length - 1]), 'utf8')) as { schemas: { fields: unknown }[] }
      return j.schemas[j.schemas.length - 1].fields
    }
    icebergSchemas = { strata: latestSchema(strataIceberg), paimon: latestSchema(join(root, 'wh', 'db.db', 'paimon_iceberg')) }
    for (const [k, p] of plan.entries()) {
      const v = VARIANTS[k]
      const pt = await Table.open(p.paimonDir)
      const strataOfPaimon = await fromStrata(pt)
      await compactTable(pt, { full: true })
      const strataOfPaimonCompacted = await fromStrata(await Table.open(p.paimonDir))
      results.set(p.name, {
        paimonOfStrata: p.at.paimonOfStrata === undefined ? undefined : fromPaimon(first[p.at.paimonOfStrata].output),
        paimonOfStrataCompacted: fromPaimon(compactedReads[k].output),
        strataOfPaimon,
        strataOfPaimonCompacted,
        paimonOfPaimonCompactedByStrata: [],
        expected: fromModel(pt, model(COMMITS, v.partial)),
      })
    }
    // one of Paimon's data files, its Parquet schema element for element against Strata's
    const bucket = join(plan[0].paimonDir, 'bucket-0')
    const bytes = readFileSync(join(bucket, readdirSync(bucket).find((f) => f.endsWith('.parquet'))!))
    const show = (e: { name: string; repetition_type?: string; type?: string; converted_type?: string; logical_type?: { type: string }; field_id?: number; num_children?: number }) =>
      // _VALUE_KIND's INTEGER logical type is a documented difference (docs/format.md "Deviations and limits")
      JSON.stringify([e.name, e.repetition_type, e.type, e.converted_type, e.name === '_VALUE_KIND' ? undefined : e.logical_type?.type, e.field_id, e.num_children])
    paimonFileSchema = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length)).schema.map(show)
    const pt0 = await Table.open(plan[0].paimonDir)
    strataFileSchema = dataFileSchema({ keyFields: pt0.view.keyFields, valueFields: pt0.view.fields }).map(show)
    const second = paimonBatch(plan.map((p) => ['read', p.paimonDir]))
    plan.forEach((p, k) => {
      if (!second[k].ok) throw new Error(`harness: ${second[k].error}`)
      results.get(p.name)!.paimonOfPaimonCompactedByStrata = fromPaimon(second[k].output)
    })
  }, 600_000)

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true })
  })

  it("Strata's data files declare nested columns as Paimon's do: LIST/MAP groups, names, repetitions, field ids", () => {
    expect(paimonFileSchema.length).toBeGreaterThan(30)
    expect(strataFileSchema).toEqual(paimonFileSchema)
  })

  it("Strata's Iceberg schema of nested columns is Paimon's: list, map and struct types with the data files' element, key and value ids", () => {
    // Paimon writes a list's element-required from the ARRAY's own NOT NULL, Strata from the element's (docs/format.md "Nested types")
    const elementRequiredAsPaimon = (j: unknown, arrayRequired = false): unknown => {
      if (Array.isArray(j)) return j.map((x) => elementRequiredAsPaimon(x))
      if (typeof j !== 'object' || j === null) return j
      const o = j as Rec
      const out = Object.fromEntries(Object.entries(o).map(([k, x]) => [k, k === 'type' || k === 'element' || k === 'value' || k === 'fields' || k === 'key' ? elementRequiredAsPaimon(x, k === 'type' ? o.required === true : false) : x]))
      if (o.type === 'list') out['element-required'] = arrayRequired
      return out
    }
    expect(JSON.stringify(icebergSchemas.paimon)).toContain('"type":"list"')
    expect(elementRequiredAsPaimon(icebergSchemas.strata)).toEqual(icebergSchemas.paimon)
  })

  for (const v of VARIANTS) {
    describe(v.name, () => {
      if (!v.dv) {
        it("Paimon reads Strata's three commits (merging their files) as the model", () => {
          const r = results.get(v.name)!
          expect(r.paimonOfStrata).toEqual(r.expected)
        })
      }
      it("Paimon reads Strata's fully compacted table as the model", () => {
        const r = results.get(v.name)!
        expect(r.expected.length).toBeGreaterThan(30)
        expect(r.paimonOfStrataCompacted).toEqual(r.expected)
      })
      it("Strata reads Paimon's commits as the model, and again after compacting them", () => {
        const r = results.get(v.name)!
        if (v.dv) {
          // Paimon's writer compacts each commit of a deletion-vector table (lookup): nothing is left in level 0 to hide
          expect(r.strataOfPaimonCompacted).toEqual(r.expected)
        } else expect(r.strataOfPaimon).toEqual(r.expected)
        expect(r.strataOfPaimonCompacted).toEqual(r.expected)
      })
      it("Paimon reads the files Strata's compaction wrote from Paimon's as the model", () => {
        const r = results.get(v.name)!
        expect(r.paimonOfPaimonCompactedByStrata).toEqual(r.expected)
      })
    })
  }
})
