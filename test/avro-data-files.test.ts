// Avro data files (Paimon's file.format avro): tables Paimon 1.4.2 wrote with every codec it
// writes (test/fixtures/paimon-avro/, one per codec) read row for row as Paimon reads them;
// lookups; a property test against a model (random rows of every type, written with the
// schema Paimon writes, decoded back); the column batches equal the Parquet reader's for the
// same rows; compaction of an avro table (row and columnar merges) leaving Parquet files; and
// the errors, each naming the file and the option. Paimon reading what Strata did to such a
// table: test/interop-file-format.test.ts.

import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { avroFileHeader, writeAvroFile, type ManifestCompression } from '../lib/format/avro.ts'
import { AvroDataFileReader } from '../lib/format/avro-data-file.ts'
import { ColumnarFileReader } from '../lib/format/columnar-reader.ts'
import { type DataFileLayout, fileColumns } from '../lib/format/data-file-layout.ts'
import { dataFileFormat, openDataFileColumns, openDataFileRecords } from '../lib/format/data-file-open.ts'
import { byteSource } from '../lib/format/data-file-source.ts'
import { writeDataFile } from '../lib/format/data-file-writer.ts'
import { valueAt } from '../lib/format/columnar-types.ts'
import { CorruptFileError, RefusedError } from '../lib/errors.ts'
import { Table } from '../lib/handle/table.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { lookup, readAll } from '../lib/read/table-read.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import type { DataField, DataType, KeyValue, Value } from '../lib/types.ts'
import { parseRows, renderRow } from './helpers/interop.ts'

const FIXTURES = join(import.meta.dirname, 'fixtures', 'paimon-avro')
/** Paimon's read of every fixture table (they hold the same rows): `read` of the harness. */
const PAIMON_READ = parseRows(readFileSync(join(FIXTURES, 'paimon-read.jsonl'), 'utf8'))

const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))
function copyOf(fixture: string): string {
  const d = mkdtempSync(join(tmpdir(), 'strata-avro-data-'))
  dirs.push(d)
  cpSync(join(FIXTURES, fixture), d, { recursive: true })
  return d
}

function dataFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((p) => /(^|\/)data-[^/]+$/.test(p)).sort()
}

async function rendered(table: Table): Promise<Record<string, unknown>[]> {
  return (await readAll(table)).map((r) => renderRow(table.view.fields, r))
}

describe('tables Paimon 1.4.2 wrote with file.format avro', () => {
  it.each([
    ['null', 'null'],
    ['deflate', 'deflate'],
    ['snappy', 'snappy'],
    ['zstd', 'zstandard'],
  ])('%s: every row of every type reads as Paimon reads it (Avro codec %s)', async (fixture, codec) => {
    const dir = join(FIXTURES, fixture)
    const files = dataFiles(dir)
    expect(files.length).toBe(2)
    for (const f of files) {
      expect(f.endsWith('.avro')).toBe(true)
      expect(avroFileHeader(new Uint8Array(readFileSync(join(dir, f)))).codec).toBe(codec)
    }
    const table = await Table.open(dir)
    expect(await rendered(table)).toEqual(PAIMON_READ)
    // a projection and a lookup of each key
    const some = (await readAll(table, { columns: ['id', 's'] })).map((r) => r.map(String))
    expect(some).toEqual(PAIMON_READ.map((r) => [String(r.id), String(r.s)]))
    for (const r of PAIMON_READ) {
      const hit = await lookup(table, { dt: r.dt as string, id: r.id as string })
      expect(renderRow(table.view.fields, hit!)).toEqual(r)
    }
    expect(await lookup(table, { dt: 'x', id: '3' })).toBeNull()
  })

  it('bzip2 (avro.codec bzip2, which Paimon also applies to manifests) is refused naming the codec, the options and the file', async () => {
    const dir = join(FIXTURES, 'bzip2')
    const e = await readAll(await Table.open(dir)).catch((x: unknown) => x)
    expect(e).toBeInstanceOf(CorruptFileError)
    expect((e as Error).message).toMatch(/^manifest\/manifest-list-[0-9a-f-]+: Avro file uses codec 'bzip2', which Strata does not decode; expected one of null, deflate, snappy, zstandard \(Paimon writes the codec manifest\.compression, file\.compression or avro\.codec names\)/)
    // a data file of that codec, opened on its own
    const file = dataFiles(dir)[0]
    const bytes = new Uint8Array(readFileSync(join(dir, file)))
    const table = await Table.open(join(FIXTURES, 'snappy'))
    const src = { size: bytes.length, name: file, read: async (s: number, end: number) => bytes.subarray(s, end) }
    const e2 = await openDataFileRecords(file, src, { keyFields: table.view.keyFields, valueFields: table.view.fields }).catch((x: unknown) => x)
    expect(e2).toBeInstanceOf(RefusedError)
    expect((e2 as Error).message).toMatch(/^dt=x\/bucket-0\/data-[0-9a-f-]+-0\.avro: Avro data file uses the Avro codec 'bzip2' \(Paimon's file\.compression or avro\.codec chose it\), which Strata does not decode; it reads null, deflate, snappy and zstandard/)
  })

  it("the Avro schema Paimon writes is the one the property test below builds (AvroSchemaConverter's)", async () => {
    const table = await Table.open(join(FIXTURES, 'snappy'))
    const file = join(FIXTURES, 'snappy', dataFiles(join(FIXTURES, 'snappy'))[0])
    expect(avroFileHeader(new Uint8Array(readFileSync(file))).schema).toEqual(paimonAvroSchema({ keyFields: table.view.keyFields, valueFields: table.view.fields }))
  })
})

// ---- the property test: Paimon's Avro schema for a layout, and values encoded as its writer does

/** AvroSchemaConverter.convertToSchema of one type (FieldWriterFactory's encodings below). */
function avroTypeOf(t: DataType): unknown {
  const base = ((): unknown => {
    switch (t.root) {
      case 'BOOLEAN':
        return 'boolean'
      case 'TINYINT':
      case 'SMALLINT':
      case 'INT':
        return 'int'
      case 'BIGINT':
        return 'long'
      case 'FLOAT':
        return 'float'
      case 'DOUBLE':
        return 'double'
      case 'CHAR':
      case 'VARCHAR':
        return 'string'
      case 'BINARY':
      case 'VARBINARY':
        return 'bytes'
      case 'DATE':
        return { type: 'int', logicalType: 'date' }
      case 'DECIMAL':
        return { type: 'bytes', logicalType: 'decimal', precision: t.precision, scale: t.scale }
      case 'TIMESTAMP':
        return { type: 'long', logicalType: (t.precision ?? 6) <= 3 ? 'timestamp-millis' : 'timestamp-micros' }
      default:
        throw new Error(`no Avro type for ${t.root}`)
    }
  })()
  return t.nullable ? ['null', base] : base
}

function paimonAvroSchema(layout: DataFileLayout): object {
  return {
    type: 'record',
    name: 'record',
    namespace: 'org.apache.paimon.avro.generated',
    fields: fileColumns(layout).map((c) => ({ name: c.name, type: avroTypeOf(c.type), ...(c.type.nullable ? { default: null } : {}) })),
  }
}

/** Java's BigInteger.toByteArray: the shortest big-endian two's complement. */
function unscaledBytes(v: bigint): Uint8Array {
  const out: number[] = []
  let x = v
  for (;;) {
    out.unshift(Number(BigInt.asUintN(8, x)))
    x >>= 8n
    if ((x === 0n && (out[0] & 0x80) === 0) || (x === -1n && (out[0] & 0x80) !== 0)) return Uint8Array.from(out)
  }
}

function avroValueOf(t: DataType, v: Value): unknown {
  if (v === null) return null
  if (t.root === 'DECIMAL') return unscaledBytes(v as bigint)
  if (t.root === 'TIMESTAMP' && (t.precision ?? 6) <= 3) return (v as bigint) / 1000n
  return v
}

const f = (id: number, name: string, type: DataType): DataField => ({ id, name, type })
const nn = (root: DataType['root'], more: Partial<DataType> = {}): DataType => ({ root, nullable: false, ...more })
const nl = (root: DataType['root'], more: Partial<DataType> = {}): DataType => ({ root, nullable: true, ...more })
const KEY = f(0, 'id', nn('BIGINT'))
const VALUES: DataField[] = [
  KEY,
  f(1, 'b', nl('BOOLEAN')),
  f(2, 'ti', nl('TINYINT')),
  f(3, 'si', nl('SMALLINT')),
  f(4, 'i', nl('INT')),
  f(5, 'fl', nl('FLOAT')),
  f(6, 'd', nl('DOUBLE')),
  f(7, 'dec', nl('DECIMAL', { precision: 9, scale: 2 })),
  f(8, 'big', nl('DECIMAL', { precision: 38, scale: 10 })),
  f(9, 's', nl('VARCHAR', { length: 2147483647 })),
  f(10, 'bin', nl('VARBINARY', { length: 2147483647 })),
  f(11, 'day', nl('DATE')),
  f(12, 'ts3', nl('TIMESTAMP', { precision: 3 })),
  f(13, 'ts6', nl('TIMESTAMP', { precision: 6 })),
]
const LAYOUT: DataFileLayout = { keyFields: [KEY], valueFields: VALUES }

const orNull = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null, freq: 4 })
const valuesArb = fc.tuple(
  orNull(fc.boolean()),
  orNull(fc.integer({ min: -128, max: 127 })),
  orNull(fc.integer({ min: -32768, max: 32767 })),
  orNull(fc.integer()),
  orNull(fc.float({ noDefaultInfinity: false }).map((x) => Math.fround(x))),
  orNull(fc.double()),
  orNull(fc.bigInt({ min: -(10n ** 9n) + 1n, max: 10n ** 9n - 1n })),
  orNull(fc.bigInt({ min: -(10n ** 38n) + 1n, max: 10n ** 38n - 1n })),
  orNull(fc.string({ unit: 'grapheme', maxLength: 12 })),
  orNull(fc.uint8Array({ maxLength: 12 })),
  orNull(fc.integer({ min: -719162, max: 2932896 })),
  orNull(fc.bigInt({ min: -62135596800000n, max: 253402300799999n }).map((ms) => ms * 1000n)),
  orNull(fc.bigInt({ min: -62135596800000000n, max: 253402300799999999n })),
)
const rowsArb = fc
  .uniqueArray(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), { minLength: 0, maxLength: 40 })
  .chain((ids) => fc.tuple(fc.constant([...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))), fc.array(fc.tuple(fc.bigInt({ min: 0n, max: 2n ** 40n }), fc.integer({ min: 0, max: 3 }), valuesArb), { minLength: ids.length, maxLength: ids.length })))
  .map(([ids, rest]): KeyValue[] => ids.map((id, r) => ({ key: [id], seq: rest[r][0], kind: rest[r][1] as KeyValue['kind'], value: [id, ...rest[r][2]] })))

function avroRecordOf(kv: KeyValue): Record<string, unknown> {
  const out: Record<string, unknown> = { _KEY_id: kv.key[0], _SEQUENCE_NUMBER: kv.seq, _VALUE_KIND: kv.kind }
  VALUES.forEach((field, j) => (out[field.name] = avroValueOf(field.type, kv.value[j])))
  return out
}

async function recordsOf(bytes: Uint8Array): Promise<KeyValue[]> {
  const reader = await openDataFileRecords('data-1.avro', byteSource(bytes), LAYOUT)
  const out: KeyValue[] = []
  for await (const batch of reader.batches({ batchRows: 7 })) out.push(...batch)
  return out
}

describe('Avro data files decode to the rows written (property, against the rows as the model)', () => {
  const codecs: ManifestCompression[] = ['none', 'deflate', 'snappy']
  it('every type, nulls, every codec Strata writes here', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, fc.constantFrom(...codecs), async (rows, codec) => {
        const bytes = writeAvroFile(paimonAvroSchema(LAYOUT), rows.map(avroRecordOf), codec, { syncInterval: 512 })
        expect(await recordsOf(bytes)).toEqual(rows)
      }),
      { numRuns: 60 },
    )
  })

  it('column batches hold what the Parquet columnar reader gives for the same rows, deleted rows left out', async () => {
    await fc.assert(
      fc.asyncProperty(rowsArb, fc.array(fc.nat({ max: 39 })), async (rows, dead) => {
        fc.pre(rows.length > 0) // Strata's writer refuses an empty data file, as Paimon never commits one
        const deleted = [...new Set(dead.filter((p) => p < rows.length))].sort((a, b) => a - b)
        const avro = await openDataFileColumns('d.avro', byteSource(writeAvroFile(paimonAvroSchema(LAYOUT), rows.map(avroRecordOf), 'none')), LAYOUT)
        const parquet = await ColumnarFileReader.open(byteSource(writeDataFile(LAYOUT, rows).bytes), LAYOUT)
        const flat = async (src: Pick<ColumnarFileReader, 'rowGroups'>) => {
          const out: unknown[][] = []
          for await (const b of src.rowGroups({ deleted })) {
            for (let r = 0; r < b.rows; r++) out.push([b.positions ? b.positions[r] : b.firstPosition + r, ...b.columns.map((c) => valueAt(c, r))])
          }
          return out
        }
        expect(await flat(avro)).toEqual(await flat(parquet))
      }),
      { numRuns: 30 },
    )
  })
})

// ---- compaction of an avro table

describe('an avro table Strata writes and compacts', () => {
  it.each(['row', 'columnar'] as const)('%s merge: Avro inputs, Parquet output, rows as the model', async (mergePath) => {
    const dir = copyOf('snappy')
    const table = await Table.open(dir)
    const writes = [
      { dt: 'x', id: '1', s: 'one again', dec: '1.00' },
      { dt: 'x', id: '5', s: 'five' },
      { dt: 'y', id: '9223372036854775807', _kind: '-D' },
    ]
    await writeBatch(table, writes.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` })))
    // the model: Paimon's read of the fixture, then the writes (a missing field is null)
    const nulls = Object.fromEntries(table.view.fields.map((fl) => [fl.name, null]))
    const expected = new Map(PAIMON_READ.map((r) => [`${r.dt}/${r.id}`, r]))
    for (const { _kind, ...w } of writes) {
      if (_kind === '-D') expected.delete(`${w.dt}/${w.id}`)
      else expected.set(`${w.dt}/${w.id}`, { ...nulls, ...w })
    }
    const order = (rows: Record<string, unknown>[]) => [...rows].sort((a, b) => (`${a.dt}/${a.id}` < `${b.dt}/${b.id}` ? -1 : 1))
    const sorted = () => order([...expected.values()])
    const byRendered = order
    expect(byRendered(await rendered(table))).toEqual(sorted())
    const entries = await table.manifests.liveEntries((await table.snapshots.latest())!)
    for (const partition of new Map(entries.map((e) => [Buffer.from(e.partition).toString('hex'), e.partition])).values()) {
      const result = await compactBucket(table, { partition, bucket: 0, full: true, mergePath })
      expect(result.snapshotId).not.toBeNull()
      if (mergePath === 'columnar') expect(result.columnarSteps).toBeGreaterThan(0)
    }
    const live = (await table.manifests.liveEntries((await table.snapshots.latest())!)).map((e) => e.file.fileName)
    expect(live.length).toBe(2)
    expect(live.every((n) => n.endsWith('.parquet'))).toBe(true)
    const reopened = await Table.open(dir)
    expect(byRendered(await rendered(reopened))).toEqual(sorted())
  })
})

// ---- errors

describe('errors name the file and the option', () => {
  it('an ORC data file is refused before any byte of it is read, naming file.format and the file', async () => {
    let reads = 0
    const src = { size: 100, name: 't/dt=x/bucket-0/data-1-0.orc', read: async () => (reads++, new Uint8Array(0)) }
    for (const open of [() => openDataFileRecords(src.name, src, LAYOUT), () => openDataFileColumns(src.name, src, LAYOUT)]) {
      const e = await open().catch((x: unknown) => x)
      expect(e).toBeInstanceOf(RefusedError)
      expect((e as Error).message).toMatch(/^data file t\/dt=x\/bucket-0\/data-1-0\.orc is an ORC file \(file\.format 'orc'\): Strata reads Parquet and Avro data files only/)
    }
    expect(reads).toBe(0)
  })

  it("a file's format is its extension, a compression extension after it skipped (Paimon's formatIdentifier)", () => {
    expect(dataFileFormat('data-1-0.avro')).toBe('avro')
    expect(dataFileFormat('b/data-1-0.zst.avro')).toBe('avro')
    expect(dataFileFormat('data-1-0.avro.zst')).toBe('avro')
    expect(dataFileFormat('data-1-0.parquet')).toBe('parquet')
    expect(dataFileFormat('data-1-0.zstd.parquet')).toBe('parquet')
    expect(() => dataFileFormat('data-1-0.ORC')).toThrow(/ORC file/)
    expect(() => dataFileFormat('data-1-0.orc.gz')).toThrow(/ORC file/)
    expect(() => dataFileFormat('data-1-0.lance')).toThrow(/has the format 'lance'/)
  })

  const rows: KeyValue[] = [{ key: [1n], seq: 1n, kind: 0, value: [1n, true, 1, 2, 3, 1.5, 2.5, 12n, 34n, 's', new Uint8Array([1]), 5, 6000n, 7n] }]
  const named = (bytes: Uint8Array) => ({ size: bytes.length, name: 'tbl/bucket-0/data-9-0.avro', read: async (s: number, e: number) => bytes.subarray(s, e) })

  it('a truncated or damaged Avro file is a CorruptFileError naming the file', async () => {
    const bytes = writeAvroFile(paimonAvroSchema(LAYOUT), rows.map(avroRecordOf), 'deflate')
    for (const bad of [bytes.subarray(0, bytes.length - 20), Uint8Array.from(bytes, (b, i) => (i === bytes.length - 3 ? b ^ 0xff : b)), new TextEncoder().encode('PAR1 not avro')]) {
      const e = await AvroDataFileReader.open(named(bad), LAYOUT).catch((x: unknown) => x)
      expect(e).toBeInstanceOf(CorruptFileError)
      expect((e as Error).message).toMatch(/^tbl\/bucket-0\/data-9-0\.avro: .*Avro file invalid/)
    }
  })

  it('a column the file lacks, or of another Avro type, is named with the file', async () => {
    const schema = paimonAvroSchema(LAYOUT) as { fields: { name: string; type: unknown }[] }
    const without = { ...schema, fields: schema.fields.filter((x) => x.name !== 'ts6') }
    const noTs6 = writeAvroFile(without, rows.map(avroRecordOf).map(({ ts6: _, ...r }) => r), 'none')
    const e1 = await AvroDataFileReader.open(named(noTs6), LAYOUT).catch((x: unknown) => x)
    expect((e1 as Error).message).toMatch(/^tbl\/bucket-0\/data-9-0\.avro: Avro data file has no column ts6; its columns are: _KEY_id, _SEQUENCE_NUMBER, .*ts3$/)
    const retyped = { ...schema, fields: schema.fields.map((x) => (x.name === 'i' ? { ...x, type: ['null', 'string'] } : x)) }
    const strI = writeAvroFile(retyped, rows.map(avroRecordOf).map((r) => ({ ...r, i: 'three' })), 'none')
    const e2 = await AvroDataFileReader.open(named(strI), LAYOUT).catch((x: unknown) => x)
    expect(e2).toBeInstanceOf(CorruptFileError)
    expect((e2 as Error).message).toMatch(/^tbl\/bucket-0\/data-9-0\.avro: Avro data file column i: Avro type "string" does not hold INT; expected int/)
  })
})
