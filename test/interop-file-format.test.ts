// Data file formats and manifest codecs against Apache Paimon 1.4.2, both ways:
// - Paimon writes `file.format` avro tables (codecs zstd, its default, deflate, and snappy with
//   deletion vectors; test/avro-data-files.test.ts reads every codec from fixtures); Strata
//   reads them as Paimon does, writes to them and compacts them (its files are Parquet; with
//   deletion vectors a minor compaction, which marks rows of Paimon's Avro files by their
//   position), and Paimon reads the result equal to a model, picking each file's reader by its
//   extension; Paimon then writes and compacts again, and Strata reads that.
// - Paimon's changelog files of an avro table (changelog-producer input) are Avro too: Strata's
//   incremental read of them equals Paimon's.
// - Paimon writes an ORC table: Strata refuses to read it and to write it, naming file.format
//   and the file, with nothing written.
// - manifest.compression: a table Strata made with `null` is committed to by Paimon; a table
//   whose schema holds `none` (as an older Strata stored it) is read by both, Paimon's commit to
//   it fails as the option's refusal says, Strata writes it with the null codec, and once Strata
//   sets `null` Paimon commits again.
// Without Java or Maven the file is skipped with one line saying how to run it, except under
// CI, where a run that cannot run interop fails.

import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { RefusedError, StrataInputError } from '../lib/errors.ts'
import { avroFileHeader } from '../lib/format/avro.ts'
import { Table } from '../lib/handle/table.ts'
import { alterTable } from '../lib/handle/alter.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { readIncremental } from '../lib/read/incremental.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type PaimonResult, RUN_COMMAND, buildHarness, byKey, describeWithJava, paimonBatch, parseRows, renderRow, writeJsonLines } from './helpers/interop.ts'

type Rec = Record<string, unknown>

const FIELDS = [
  { name: 'dt', type: 'STRING' },
  { name: 'id', type: 'INT' },
  { name: 'name', type: 'STRING' },
  { name: 'price', type: 'DECIMAL(10, 2)' },
  { name: 'at', type: 'TIMESTAMP(3)' },
  { name: 'flag', type: 'BOOLEAN' },
]
const KEYS = ['dt', 'id']
const schemaOf = (options: Record<string, string>) => ({ fields: FIELDS, primaryKeys: KEYS, partitionKeys: ['dt'], options: { bucket: '2', ...options } })

const rows = (from: number, n: number, tag: string): Rec[] =>
  Array.from({ length: n }, (_, i) => ({ dt: i % 3 === 0 ? 'a' : 'b', id: from + i, name: `${tag}-${from + i}`, price: `${from + i}.${(i % 100).toString().padStart(2, '0')}`, at: `2024-05-0${1 + (i % 9)}T10:00:00.${String(i % 1000).padStart(3, '0')}`, flag: i % 2 === 0 }))
/** Paimon's first two commits, Strata's write, Paimon's last commit. */
const PAIMON_1 = rows(0, 300, 'p1')
const PAIMON_2 = [...rows(20, 20, 'p2'), { dt: 'a', id: 3, _kind: '-D' }, { dt: 'b', id: 4, _kind: '-D' }]
const STRATA = [...rows(35, 5, 's'), { dt: 'b', id: 1, _kind: '-D' }, { dt: 'a', id: 21, name: 'strata', price: null }]
const PAIMON_3 = [...rows(45, 10, 'p3'), { dt: 'a', id: 36, _kind: '-D' }]

/** Avro tables Paimon writes: the options besides file.format avro, and the codec its files carry. */
const AVRO_TABLES: { name: string; options: Record<string, string>; codec: string }[] = [
  { name: 'zstd', options: {}, codec: 'zstandard' },
  { name: 'deflate', options: { 'avro.codec': 'deflate' }, codec: 'deflate' },
  { name: 'snappy-dv', options: { 'file.compression': 'snappy', 'deletion-vectors.enabled': 'true' }, codec: 'snappy' },
]

/** The model: a deduplicate table's rows after the writes, each rendered as the harness renders Paimon's. */
function model(table: Table, writes: Rec[][]): Rec[] {
  const m = new Map<string, Rec>()
  for (const batch of writes) {
    for (const r of batch) {
      const { kind, row } = recordFromJson(table.view, r, 'model')
      const key = `${r.dt}/${r.id}`
      if (kind === 1 || kind === 3) m.delete(key)
      else m.set(key, renderRow(table.view.fields, row))
    }
  }
  return byKey([...m.values()], KEYS)
}

async function strataWrite(table: Table, records: Rec[]): Promise<void> {
  await writeBatch(table, records.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` })))
}

async function strataRows(table: Table): Promise<Rec[]> {
  return byKey((await readAll(table)).map((r) => renderRow(table.view.fields, r)), KEYS)
}

function ok(r: PaimonResult, what: string): PaimonResult {
  if (!r.ok) throw new Error(`Paimon ${what} failed: ${r.error}`)
  return r
}

function allFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()
}

describeWithJava('Paimon interop: data file formats and manifest codecs', RUN_COMMAND.replace('interop.test.ts', 'interop-file-format.test.ts'), () => {
  let root = ''
  let k = 0
  const input = (records: Rec[]) => writeJsonLines(join(root, `in-${k++}.jsonl`), records)
  const avro: { name: string; codec: string; dir: string; paimonFirst?: PaimonResult; formatsFirst?: PaimonResult; strataFirst: Rec[]; paimonAfterStrata?: PaimonResult; formatsAfterStrata?: PaimonResult; strataLast: Rec[]; model?: Table }[] = []
  let orcDir = ''
  let orcRead: PaimonResult
  let changelogDir = ''
  let changelogRead: PaimonResult
  let nullDir = ''
  let noneDir = ''
  const cells: Record<string, PaimonResult> = {}

  beforeAll(async () => {
    buildHarness()
    root = mkdtempSync(join(tmpdir(), 'strata-interop-format-'))
    // 1. Paimon writes the avro tables (two commits each) and an ORC table
    const first: string[][] = []
    for (const t of AVRO_TABLES) {
      const dir = join(root, `avro-${t.name}`)
      avro.push({ name: t.name, codec: t.codec, dir, strataFirst: [], strataLast: [] })
      first.push(['write', dir, '--schema', JSON.stringify(schemaOf({ 'file.format': 'avro', ...t.options })), '--in', input(PAIMON_1)], ['write', dir, '--in', input(PAIMON_2)])
      first.push(['read', dir], ['file-formats', dir])
    }
    // an avro table with changelog-producer input: its changelog files are Avro too
    changelogDir = join(root, 'avro-changelog')
    first.push(['write', changelogDir, '--schema', JSON.stringify(schemaOf({ 'file.format': 'avro', 'changelog-producer': 'input' })), '--in', input(PAIMON_1)], ['write', changelogDir, '--in', input(PAIMON_2)])
    first.push(['incremental', changelogDir, '--schema', JSON.stringify({ 'incremental-between': '0,2', 'incremental-between-scan-mode': 'changelog' })])
    orcDir = join(root, 'orc')
    first.push(['write', orcDir, '--schema', JSON.stringify(schemaOf({ 'file.format': 'orc' })), '--in', input(PAIMON_1)], ['read', orcDir])
    const r1 = paimonBatch(first)
    for (const [i, r] of r1.entries()) if (first[i][0] === 'write') ok(r, `write ${first[i][1]}`)
    avro.forEach((t, i) => {
      t.paimonFirst = r1[4 * i + 2]
      t.formatsFirst = r1[4 * i + 3]
    })
    orcRead = r1[r1.length - 1]
    changelogRead = r1[r1.length - 3]

    // 2. Strata reads each, writes to it and compacts it fully
    for (const t of avro) {
      const table = await Table.open(t.dir)
      t.strataFirst = await strataRows(table)
      await strataWrite(table, STRATA)
      // with deletion vectors a minor compaction: level 0 taken up, rows it supersedes in
      // Paimon's Avro files marked in deletion vectors by their position in the Avro file
      await compactTable(table, { full: !t.name.endsWith('-dv') })
      t.model = table
    }
    // Strata's manifest codec tables: null at create; none as an older Strata stored it
    nullDir = join(root, 'manifest-null')
    await strataWrite(await Table.create(nullDir, schemaOf({ 'manifest.compression': 'null' })), PAIMON_1)
    noneDir = join(root, 'manifest-none')
    await strataWrite(await Table.create(noneDir, schemaOf({ 'manifest.compression': 'null' })), PAIMON_1)
    const schemaFile = join(noneDir, 'schema', 'schema-0')
    const stored = JSON.parse(readFileSync(schemaFile, 'utf8'))
    stored.options['manifest.compression'] = 'none'
    writeFileSync(schemaFile, JSON.stringify(stored, null, 2))

    // 3. Paimon reads what Strata did, then commits again and compacts; Paimon commits to the manifest tables
    const second: string[][] = []
    for (const t of avro) second.push(['read', t.dir], ['file-formats', t.dir], ['write', t.dir, '--in', input(PAIMON_3)], ['compact', t.dir])
    const at = second.length
    second.push(['read', noneDir], ['write', noneDir, '--in', input(PAIMON_2)], ['write', nullDir, '--in', input(PAIMON_2)], ['read', nullDir])
    const r2 = paimonBatch(second)
    avro.forEach((t, i) => {
      t.paimonAfterStrata = r2[4 * i]
      t.formatsAfterStrata = r2[4 * i + 1]
      ok(r2[4 * i + 2], `write after Strata to ${t.name}`)
      ok(r2[4 * i + 3], `compact after Strata of ${t.name}`)
    })
    ;[cells.noneRead, cells.noneWrite, cells.nullWrite, cells.nullRead] = r2.slice(at)
    for (const t of avro) t.strataLast = await strataRows(await Table.open(t.dir))

    // 4. Strata writes the none table (null codec), then sets Paimon's name; Paimon commits again
    const none = await Table.open(noneDir)
    await strataWrite(none, STRATA)
    const fixed = await alterTable(none, [{ kind: 'set-option', key: 'manifest.compression', value: 'null' }])
    await strataWrite(fixed, [{ dt: 'a', id: 99, name: 'after fix' }])
    const r3 = paimonBatch([['read', noneDir], ['write', noneDir, '--in', input(PAIMON_3)], ['read', noneDir]])
    ;[cells.noneReadAfterStrata, cells.noneWriteAfterFix, cells.noneReadAfterFix] = r3
  }, 240_000)

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true })
  })

  it.each(AVRO_TABLES.map((t) => t.name))('avro %s: Strata reads what Paimon wrote as Paimon reads it; its Avro files carry the codec', (name) => {
    const t = avro.find((x) => x.name === name)!
    const expected = model(t.model!, [PAIMON_1, PAIMON_2])
    // with deletion vectors Paimon's writer compacts at each commit; its reads skip level 0, as Strata's do
    expect(byKey(parseRows(ok(t.paimonFirst!, 'read').output), KEYS)).toEqual(expected)
    expect(t.strataFirst).toEqual(expected)
    const formats = parseRows(ok(t.formatsFirst!, 'file-formats').output)
    expect(formats.length).toBeGreaterThan(1)
    expect(formats.every((f) => f.format === 'avro' && f.codec === t.codec)).toBe(true)
  })

  it.each(AVRO_TABLES.map((t) => t.name))('avro %s: Paimon reads the table after Strata wrote and compacted it (Parquet files, picked by extension), equal to the model; then its own commit and compaction, which Strata reads', (name) => {
    const t = avro.find((x) => x.name === name)!
    expect(byKey(parseRows(ok(t.paimonAfterStrata!, 'read').output), KEYS)).toEqual(model(t.model!, [PAIMON_1, PAIMON_2, STRATA]))
    const formats = parseRows(ok(t.formatsAfterStrata!, 'file-formats').output)
    const parquet = formats.filter((f) => f.format === 'parquet' && f.codec === null && (f.file as string).endsWith('.parquet'))
    const avroFiles = formats.filter((f) => f.format === 'avro' && f.codec === t.codec)
    expect(parquet.length, JSON.stringify(formats)).toBeGreaterThan(0)
    if (name.endsWith('-dv')) {
      // Paimon's compacted Avro files stay, with Strata's deletion vectors over their rows
      expect(avroFiles.length, JSON.stringify(formats)).toBeGreaterThan(0)
      expect(parquet.length + avroFiles.length).toBe(formats.length)
    } else {
      // Strata's full compaction rewrote every file: what is live is Parquet, which Paimon reads by its extension
      expect(parquet.length).toBe(formats.length)
    }
    expect(t.strataLast).toEqual(model(t.model!, [PAIMON_1, PAIMON_2, STRATA, PAIMON_3]))
    // Paimon's own later files are Avro again: the table holds both formats
    const names = allFiles(t.dir).filter((p) => /\/data-[^/]+$/.test(p))
    expect(names.some((p) => p.endsWith('.avro'))).toBe(true)
    expect(names.some((p) => p.endsWith('.parquet'))).toBe(true)
  })

  it("an avro table's changelog files (changelog-producer input): Strata's incremental read equals Paimon's", async () => {
    const table = await Table.open(changelogDir)
    expect(allFiles(changelogDir).filter((p) => /\/changelog-[^/]+\.avro$/.test(p)).length).toBeGreaterThan(0)
    const sorted = (xs: string[]) => [...xs].sort()
    const paimon = sorted(ok(changelogRead, 'incremental read').output.split('\n').filter(Boolean).map((l) => JSON.stringify(JSON.parse(l))))
    const strata = sorted((await readIncremental(table, { fromSnapshot: 0, toSnapshot: 2, mode: 'changelog' })).map((c) => JSON.stringify({ _kind: ROW_KIND_SHORT[c.kind], ...renderRow(table.view.fields, c.row) })))
    expect(paimon.length).toBe(PAIMON_1.length + PAIMON_2.length)
    expect(strata).toEqual(paimon)
  })

  it('an ORC table Paimon wrote: Strata refuses to read it and to write it, naming file.format and the file; nothing is written', async () => {
    expect(parseRows(ok(orcRead, 'read of the ORC table').output)).toHaveLength(PAIMON_1.length)
    const table = await Table.open(orcDir)
    const before = allFiles(orcDir)
    const read = await readAll(table).catch((e: unknown) => e)
    expect(read).toBeInstanceOf(RefusedError)
    expect((read as Error).message).toMatch(/^data file .*dt=[ab]\/bucket-[01]\/data-[0-9a-f-]+-0\.orc is an ORC file \(file\.format 'orc'\): Strata reads Parquet and Avro data files only/)
    const write = await strataWrite(table, STRATA).catch((e: unknown) => e)
    expect(write).toBeInstanceOf(StrataInputError)
    expect((write as Error).message).toMatch(/^write refused: .*option 'file\.format' is "orc"; Strata writes only "parquet"/)
    expect(allFiles(orcDir)).toEqual(before)
  })

  it('manifest.compression null: Paimon commits to the table Strata made, and both read it', async () => {
    ok(cells.nullWrite, 'write to the manifest.compression null table')
    const table = await Table.open(nullDir)
    const expected = model(table, [PAIMON_1, PAIMON_2])
    expect(byKey(parseRows(ok(cells.nullRead, 'read').output), KEYS)).toEqual(expected)
    expect(await strataRows(table)).toEqual(expected)
    const codecs = new Set(readdirSync(join(nullDir, 'manifest')).map((n) => avroFileHeader(new Uint8Array(readFileSync(join(nullDir, 'manifest', n)))).codec))
    expect(codecs).toEqual(new Set(['null']))
  })

  it('a stored none: both read it; Paimon cannot commit to it ("Unrecognized codec: none"), Strata writes it with the null codec, and once Strata sets null Paimon commits again', async () => {
    const table = await Table.open(noneDir)
    expect(byKey(parseRows(ok(cells.noneRead, 'read').output), KEYS)).toEqual(model(table, [PAIMON_1]))
    expect(cells.noneWrite.ok).toBe(false)
    expect(cells.noneWrite.error).toMatch(/Unrecognized codec: none/)
    expect(byKey(parseRows(ok(cells.noneReadAfterStrata, 'read').output), KEYS)).toEqual(model(table, [PAIMON_1, STRATA, [{ dt: 'a', id: 99, name: 'after fix' }]]))
    ok(cells.noneWriteAfterFix, 'write after manifest.compression null')
    const expected = model(table, [PAIMON_1, STRATA, [{ dt: 'a', id: 99, name: 'after fix' }], PAIMON_3])
    expect(byKey(parseRows(ok(cells.noneReadAfterFix, 'read').output), KEYS)).toEqual(expected)
    expect(await strataRows(await Table.open(noneDir))).toEqual(expected)
  })
})
