// Strata's Parquet decoder (lib/format/parquet-decode.ts) against hyparquet, its reference:
// ColumnarFileReader with `decoder: 'strata'` (the default) must give exactly the batches
// it gives with `decoder: 'hyparquet'`, on
// - random columns of every type (nullable and NOT NULL, nulls, empty and non-ASCII strings,
//   U+FEFF first, extreme integers, -0, NaN, ±Infinity, decimals stored as INT32, INT64 and
//   fixed-length bytes, timestamps of both precisions) written by Strata's writer (data
//   pages v2) with every codec it writes and small pages and row groups;
// - the same files rewritten with data pages v1 (as Paimon's Java writer writes them);
// - files from hyparquet-writer with other encodings, which Strata's decoder leaves to
//   hyparquet (and the ones it reads: PLAIN, RLE_DICTIONARY, RLE booleans);
// - a file whose pages the zstd CLI compressed, and, where Java is installed, data files
//   Paimon's own writer wrote (the interop harness).
// Equal means: the same values (numbers by Object.is, so -0 and NaN count; bigints, strings,
// booleans, bytes, null), typed where hyparquet gives a typed array (the same class), and a
// typed array from Strata's decoder only for a column without nulls.
// Also: the snappy decoder against the encoder and hyparquet's, and errors on broken input.

import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import zlib from 'node:zlib'
import { isUtf8 } from 'node:buffer'
import fc from 'fast-check'
import { parquetMetadata, snappyUncompress } from 'hyparquet'
import type { ColumnChunk, Encoding, SchemaElement } from 'hyparquet'
import { parquetHeader } from 'hyparquet/src/column.js'
import { ByteWriter, ParquetWriter } from 'hyparquet-writer'
/** hyparquet-writer's own (older) hyparquet types name one encoding fewer */
type WriterEncoding = NonNullable<Parameters<ParquetWriter['write']>[0]['columnData'][number]['encoding']>
import { writePageHeader } from 'hyparquet-writer/src/datapage.js'
import { describe, expect, it } from 'vitest'
import { ColumnarFileReader } from '../lib/format/columnar-reader.ts'
import { type Column, Utf8Column, asValues, isTypedColumn } from '../lib/format/columnar-types.ts'
import { type DataFileLayout, dataFileSchema } from '../lib/format/data-file-layout.ts'
import { type DataFileWriterOptions, type FileCompression, writeDataFile } from '../lib/format/data-file-writer.ts'
import { byteSource } from '../lib/format/data-file-source.ts'
import { readDataFile } from '../lib/format/data-file-reader.ts'
import { writeFooter } from '../lib/format/parquet-footer.ts'
import { snappyDecompress } from '../lib/format/snappy.ts'
import { snappyCompress } from '../lib/format/snappy.ts'
import { physicalEncoder } from '../lib/format/parquet-types.ts'
import { Table } from '../lib/handle/table.ts'
import type { DataField, DataType, KeyValue, RowKind, Value } from '../lib/types.ts'
import { buildHarness, missingTools, paimonBatch, writeJsonLines } from './helpers/interop.ts'

// ---------------------------------------------------------------------------------------------
// Types and random values

const TYPES: [string, DataType][] = [
  ['b', { root: 'BOOLEAN', nullable: true }],
  ['ti', { root: 'TINYINT', nullable: true }],
  ['si', { root: 'SMALLINT', nullable: true }],
  ['i', { root: 'INT', nullable: true }],
  ['bi', { root: 'BIGINT', nullable: true }],
  ['f', { root: 'FLOAT', nullable: true }],
  ['d', { root: 'DOUBLE', nullable: true }],
  ['dec5', { root: 'DECIMAL', precision: 5, scale: 2, nullable: true }],
  ['dec15', { root: 'DECIMAL', precision: 15, scale: 3, nullable: true }],
  ['dec25', { root: 'DECIMAL', precision: 25, scale: 4, nullable: true }],
  ['dec38', { root: 'DECIMAL', precision: 38, scale: 0, nullable: true }],
  ['s', { root: 'VARCHAR', length: 2147483647, nullable: true }],
  ['c', { root: 'CHAR', length: 3, nullable: true }],
  ['by', { root: 'VARBINARY', length: 2147483647, nullable: true }],
  ['dt', { root: 'DATE', nullable: true }],
  ['ts3', { root: 'TIMESTAMP', precision: 3, nullable: true }],
  ['ts6', { root: 'TIMESTAMP', precision: 6, nullable: true }],
]

const I64 = 2n ** 63n

function valueArb(t: DataType): fc.Arbitrary<Value> {
  switch (t.root) {
    case 'BOOLEAN':
      return fc.boolean()
    case 'TINYINT':
      return fc.integer({ min: -128, max: 127 })
    case 'SMALLINT':
      return fc.integer({ min: -32768, max: 32767 })
    case 'INT':
      return fc.oneof(fc.integer({ min: -3, max: 3 }), fc.integer(), fc.constantFrom(-(2 ** 31), 2 ** 31 - 1))
    case 'DATE':
      return fc.integer({ min: -800000, max: 800000 })
    case 'BIGINT':
      return fc.oneof(fc.bigInt({ min: -3n, max: 3n }), fc.bigInt({ min: -I64, max: I64 - 1n }), fc.constantFrom(-I64, I64 - 1n))
    case 'FLOAT':
      return fc.oneof(fc.float(), fc.constantFrom(-0, NaN, Infinity, -Infinity, 3.4028234663852886e38))
    case 'DOUBLE':
      return fc.oneof(fc.double(), fc.constantFrom(-0, NaN, Infinity, -Infinity, Number.MIN_VALUE, Number.MAX_VALUE))
    case 'DECIMAL': {
      const lim = 10n ** BigInt(t.precision!) - 1n
      return fc.oneof(fc.bigInt({ min: -lim, max: lim }), fc.constantFrom(lim, -lim, 0n, -1n))
    }
    case 'CHAR':
    case 'VARCHAR':
      return fc.oneof(
        fc.constantFrom('', 'a', '\uFEFFbom', '\u00e9t\u00e9', '\u{1F600}', 'customer-12345', 'x'.repeat(70)),
        fc.string({ maxLength: 6 }),
        fc.string({ unit: 'grapheme', maxLength: 5 }),
      )
    case 'BINARY':
    case 'VARBINARY':
      return fc.uint8Array({ maxLength: 6 })
    case 'TIMESTAMP':
      return (t.precision ?? 6) <= 3 ? fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n }).map((v) => v * 1000n) : fc.bigInt({ min: -(10n ** 17n), max: 10n ** 17n })
  }
  throw new Error(`no values generated for ${t.root}`)
}

interface Case {
  layout: DataFileLayout
  rows: KeyValue[]
}

/**
 * A layout of a BIGINT key and a random choice of the types (each nullable or NOT NULL), and
 * rows for it: a column's nulls are none, some or all; values are often repeated, so the
 * writer's dictionaries come into play.
 */
const caseArb: fc.Arbitrary<Case> = fc
  .record({
    picks: fc.subarray(TYPES, { minLength: 1 }),
    notNull: fc.array(fc.boolean(), { minLength: TYPES.length, maxLength: TYPES.length }),
    n: fc.integer({ min: 1, max: 300 }),
    nullRate: fc.array(fc.constantFrom(0, 0, 0.1, 0.5, 1), { minLength: TYPES.length, maxLength: TYPES.length }),
    seed: fc.integer(),
  })
  .chain(({ picks, notNull, n, nullRate }) => {
    const fields: DataField[] = [{ id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } }]
    picks.forEach(([name, type], j) => fields.push({ id: j + 1, name, type: { ...type, nullable: !notNull[j] } }))
    const pools = fields.slice(1).map((f) => fc.array(valueArb(f.type), { minLength: 1, maxLength: 8 }))
    return fc.tuple(fc.tuple(...pools), fc.array(fc.tuple(fc.nat(), fc.double({ min: 0, max: 1, noNaN: true })), { minLength: n * (fields.length - 1), maxLength: n * (fields.length - 1) }), fc.array(fc.constantFrom<RowKind>(0, 1, 2, 3), { minLength: n, maxLength: n })).map(([valuePools, picksAndCoins, kinds]) => {
      const layout: DataFileLayout = { keyFields: [fields[0]], valueFields: fields }
      const rows: KeyValue[] = []
      for (let r = 0; r < n; r++) {
        const value: Value[] = [BigInt(r)]
        for (let j = 1; j < fields.length; j++) {
          const [pick, coin] = picksAndCoins[r * (fields.length - 1) + j - 1]
          const pool = valuePools[j - 1]
          value.push(fields[j].type.nullable && coin < nullRate[j - 1] ? null : pool[pick % pool.length])
        }
        rows.push({ key: [BigInt(r)], seq: BigInt(r * 7), kind: kinds[r], value })
      }
      return { layout, rows }
    })
  })

const writeOptsArb: fc.Arbitrary<DataFileWriterOptions> = fc.record({
  compression: fc.constantFrom<DataFileWriterOptions['compression']>('snappy', 'none', 'gzip'),
  rowGroupRows: fc.constantFrom(1, 7, 64, 65536),
  pageSize: fc.constantFrom(16, 100, 8192),
})

// ---------------------------------------------------------------------------------------------
// Reading both ways

interface Read {
  batches: { rows: number; firstPosition: number; columns: Column[] }[]
  decoderColumns: string[]
}

async function readWith(bytes: Uint8Array, layout: DataFileLayout, decoder: 'strata' | 'hyparquet', deleted?: number[], utf8Values = false): Promise<Read> {
  const reader = await ColumnarFileReader.open(byteSource(bytes), layout, { decoder })
  const batches: Read['batches'] = []
  for await (const b of reader.rowGroups({ deleted: deleted ? Uint32Array.from(deleted) : undefined, utf8Values })) batches.push({ rows: b.rows, firstPosition: b.firstPosition, columns: b.columns })
  return { batches, decoderColumns: reader.decoderColumns }
}

function sameValue(a: unknown, b: unknown): boolean {
  if (a instanceof Uint8Array && b instanceof Uint8Array) return Buffer.from(a).equals(Buffer.from(b))
  return Object.is(a, b)
}

/** Where `mine` differs from `ref` (the hyparquet path's column), or null. */
function columnDifference(mineColumn: Column, refColumn: Column, rows: number): string | null {
  const mine = asValues(mineColumn)
  const ref = asValues(refColumn)
  if (isTypedColumn(ref) && mine.constructor !== ref.constructor) return `hyparquet gives a ${ref.constructor.name}, Strata's decoder a ${mine.constructor.name}`
  if (isTypedColumn(mine) && !isTypedColumn(ref)) {
    for (let r = 0; r < rows; r++) if (ref[r] === null) return `typed column where hyparquet has null at row ${r}`
  }
  if (mine.length < rows) return `${mine.length} values for ${rows} rows`
  for (let r = 0; r < rows; r++) {
    if (!sameValue(mine[r], ref[r])) return `row ${r}: ${show(mine[r])} where hyparquet gives ${show(ref[r])}`
  }
  return null
}

function show(v: unknown): string {
  if (typeof v === 'bigint') return `${v}n`
  if (v instanceof Uint8Array) return `bytes[${[...v].join(',')}]`
  if (typeof v === 'string') return JSON.stringify(v)
  return Object.is(v, -0) ? '-0' : String(v)
}

/**
 * Reads the file both ways, and Strata's way once more with string values as UTF-8 bytes
 * (`utf8Values`, the compaction's read), and expects the same batches; returns Strata's read.
 */
async function expectSameRead(bytes: Uint8Array, layout: DataFileLayout, deleted?: number[]): Promise<Read> {
  const mine = await readWith(bytes, layout, 'strata', deleted)
  const ref = await readWith(bytes, layout, 'hyparquet', deleted)
  const asBytes = await readWith(bytes, layout, 'strata', deleted, true)
  expect(ref.decoderColumns).toEqual([])
  expect(mine.batches.map((b) => [b.rows, b.firstPosition])).toEqual(ref.batches.map((b) => [b.rows, b.firstPosition]))
  expect(asBytes.batches.map((b) => [b.rows, b.firstPosition])).toEqual(ref.batches.map((b) => [b.rows, b.firstPosition]))
  const names = dataFileSchema(layout).slice(1).map((e) => e.name)
  for (let i = 0; i < ref.batches.length; i++) {
    for (let c = 0; c < names.length; c++) {
      const diff = columnDifference(mine.batches[i].columns[c], ref.batches[i].columns[c], ref.batches[i].rows)
      expect(diff, `batch ${i} column ${names[c]}`).toBeNull()
      const col = asBytes.batches[i].columns[c]
      expect(columnDifference(col, ref.batches[i].columns[c], ref.batches[i].rows), `batch ${i} column ${names[c]} as UTF-8 bytes`).toBeNull()
      // what the writer takes from such a column: valid UTF-8, each row its string's encoding
      if (col instanceof Utf8Column) {
        expect(isUtf8(col.bytes.subarray(col.offsets[0], col.offsets[col.rows]))).toBe(true)
        for (let r = 0; r < col.rows; r++) {
          const s = col.string(r)
          expect(Buffer.from(col.bytes.subarray(col.offsets[r], col.offsets[r + 1])).equals(Buffer.from(s ?? '', 'utf8'))).toBe(true)
        }
      }
    }
  }
  return mine
}

function columnNames(layout: DataFileLayout): string[] {
  return dataFileSchema(layout).slice(1).map((e) => e.name)
}

// ---------------------------------------------------------------------------------------------
// Data pages v1: a file's v2 pages rewritten as v1 pages (levels compressed with the values)

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.length
  }
  return out
}

function u32(n: number): Uint8Array {
  const b = new Uint8Array(4)
  new DataView(b.buffer).setUint32(0, n, true)
  return b
}

function compressWith(codec: string, raw: Uint8Array): Uint8Array {
  if (codec === 'UNCOMPRESSED') return raw
  if (codec === 'SNAPPY') return snappyCompress(raw)
  if (codec === 'GZIP') return new Uint8Array(zlib.gzipSync(raw))
  throw new Error(`test helper: codec ${codec}`)
}

function decompressWith(codec: string, data: Uint8Array, size: number): Uint8Array {
  if (codec === 'UNCOMPRESSED') return data
  if (codec === 'SNAPPY') {
    const out = new Uint8Array(size)
    snappyUncompress(data, out)
    return out
  }
  if (codec === 'GZIP') return new Uint8Array(zlib.gunzipSync(data))
  throw new Error(`test helper: codec ${codec}`)
}

/** The same file with every DATA_PAGE_V2 rewritten as a DATA_PAGE (v1); page indexes and statistics dropped. */
function toV1Pages(bytes: Uint8Array): Uint8Array {
  const ab = bytes.slice().buffer
  const meta = parquetMetadata(ab)
  const out = new ByteWriter()
  out.appendUint32(0x31524150)
  const leaves = meta.schema.slice(1)
  const groups = meta.row_groups.map((g) => {
    const groupStart = out.offset
    let totalByteSize = 0n
    const chunks = g.columns.map((cc, ci) => {
      const md = cc.meta_data!
      const optional = leaves[ci].repetition_type === 'OPTIONAL'
      let pos = Number(md.dictionary_page_offset || md.data_page_offset)
      const end = pos + Number(md.total_compressed_size)
      const chunkStart = out.offset
      let dictOffset: bigint | undefined
      let dataOffset: bigint | undefined
      let uncompressed = 0
      while (pos < end) {
        const reader = { view: new DataView(ab), offset: pos }
        const h = parquetHeader(reader)
        const body = new Uint8Array(ab, reader.offset, h.compressed_page_size)
        pos = reader.offset + h.compressed_page_size
        const headerWriter = new ByteWriter()
        let data: Uint8Array
        if (h.type === 'DATA_PAGE_V2') {
          const v2 = h.data_page_header_v2!
          const levels = body.subarray(v2.repetition_levels_byte_length, v2.repetition_levels_byte_length + v2.definition_levels_byte_length)
          const valuesSize = h.uncompressed_page_size - v2.repetition_levels_byte_length - v2.definition_levels_byte_length
          const stored = body.subarray(v2.repetition_levels_byte_length + v2.definition_levels_byte_length)
          const values = v2.is_compressed === false || valuesSize === 0 ? stored : decompressWith(md.codec, stored, valuesSize)
          const raw = optional ? concat([u32(levels.length), levels, values]) : values
          data = compressWith(md.codec, raw)
          writePageHeader(headerWriter, {
            type: 'DATA_PAGE',
            uncompressed_page_size: raw.length,
            compressed_page_size: data.length,
            data_page_header: { num_values: v2.num_values, encoding: v2.encoding as WriterEncoding, definition_level_encoding: 'RLE', repetition_level_encoding: 'BIT_PACKED' },
          })
          dataOffset ??= BigInt(out.offset)
          uncompressed += headerWriter.offset + raw.length
        } else {
          data = body
          writePageHeader(headerWriter, h as Parameters<typeof writePageHeader>[1])
          if (h.type === 'DICTIONARY_PAGE') dictOffset = BigInt(out.offset)
          else dataOffset ??= BigInt(out.offset)
          uncompressed += headerWriter.offset + h.uncompressed_page_size
        }
        out.appendBytes(headerWriter.getBytes())
        out.appendBytes(data)
      }
      totalByteSize += BigInt(uncompressed)
      const chunk: ColumnChunk = {
        file_offset: dataOffset!,
        meta_data: {
          ...md,
          encodings: [...new Set<Encoding>([...md.encodings, 'RLE', 'BIT_PACKED'])],
          data_page_offset: dataOffset!,
          dictionary_page_offset: dictOffset,
          total_compressed_size: BigInt(out.offset - chunkStart),
          total_uncompressed_size: BigInt(uncompressed),
          statistics: undefined,
          encoding_stats: undefined,
        },
      }
      return { chunk }
    })
    return { chunks, numRows: Number(g.num_rows), totalByteSize, compressedSize: out.offset - groupStart }
  })
  writeFooter(out, meta.schema, groups, 'strata test v1 pages')
  return out.getBytes().slice()
}

// ---------------------------------------------------------------------------------------------

describe("Strata's decoder reads what hyparquet reads", () => {
  it("Strata's writer: every type, nulls, every codec, small pages and row groups (data pages v2)", async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, writeOptsArb, async ({ layout, rows }, opts) => {
        const { bytes } = writeDataFile(layout, rows, opts)
        const mine = await expectSameRead(bytes, layout)
        expect(mine.decoderColumns).toEqual(columnNames(layout))
      }),
      { numRuns: 150 },
    )
  })

  it('with deleted positions left out', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, fc.array(fc.nat(300)), async ({ layout, rows }, del) => {
        const { bytes } = writeDataFile(layout, rows, { rowGroupRows: 16, pageSize: 64 })
        const deleted = [...new Set(del.filter((p) => p < rows.length))].sort((a, b) => a - b)
        await expectSameRead(bytes, layout, deleted)
      }),
      { numRuns: 40 },
    )
  })

  it('data pages v1, as Paimon writes them (levels compressed with the values)', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, writeOptsArb, async ({ layout, rows }, opts) => {
        const v1 = toV1Pages(writeDataFile(layout, rows, opts).bytes)
        const pageTypes = new Set(parquetMetadata(v1.slice().buffer).row_groups.flatMap((g) => g.columns.flatMap((c) => c.meta_data!.encodings)))
        expect(pageTypes.has('BIT_PACKED')).toBe(true)
        const mine = await expectSameRead(v1, layout)
        expect(mine.decoderColumns).toEqual(columnNames(layout))
      }),
      { numRuns: 100 },
    )
  })

  it('hyparquet-writer files: the encodings it reads, and the others left to hyparquet', async () => {
    const encodingsOf = (t: DataType): Encoding[] => {
      const base: Encoding[] = ['PLAIN', 'RLE_DICTIONARY']
      switch (t.root) {
        case 'BOOLEAN':
          return ['PLAIN', 'RLE']
        case 'TINYINT':
        case 'SMALLINT':
        case 'INT':
        case 'DATE':
        case 'BIGINT':
        case 'TIMESTAMP':
          return [...base, 'DELTA_BINARY_PACKED', 'BYTE_STREAM_SPLIT']
        case 'DECIMAL':
          return (t.precision ?? 10) <= 18 ? [...base, 'DELTA_BINARY_PACKED', 'BYTE_STREAM_SPLIT'] : [...base, 'BYTE_STREAM_SPLIT']
        case 'FLOAT':
        case 'DOUBLE':
          return [...base, 'BYTE_STREAM_SPLIT']
        default:
          return [...base, 'DELTA_LENGTH_BYTE_ARRAY', 'DELTA_BYTE_ARRAY']
      }
    }
    const READ = new Set<Encoding>(['PLAIN', 'RLE_DICTIONARY', 'RLE'])
    await fc.assert(
      fc.asyncProperty(caseArb, fc.array(fc.nat(), { minLength: 20, maxLength: 20 }), fc.constantFrom(1, 5, 1000), fc.constantFrom<'SNAPPY' | 'UNCOMPRESSED'>('SNAPPY', 'UNCOMPRESSED'), async ({ layout, rows }, choice, rowGroupSize, codec) => {
        const schema = dataFileSchema(layout)
        const columns = schema.slice(1)
        const types: DataType[] = [layout.keyFields[0].type, { root: 'BIGINT', nullable: false }, { root: 'TINYINT', nullable: false }, ...layout.valueFields.map((f) => f.type)]
        const encoders = types.map((t, c) => physicalEncoder(columns[c].name, t))
        const physical = (c: number, r: number): unknown => {
          const row = rows[r]
          const v = c === 0 ? row.key[0] : c === 1 ? row.seq : c === 2 ? row.kind : row.value[c - 3]
          return encoders[c](v)
        }
        const chosen = types.map((t, c) => {
          const options = encodingsOf(t)
          return options[choice[c % choice.length] % options.length]
        })
        const out = new ByteWriter()
        const w = new ParquetWriter({ writer: out, schema: schema as ConstructorParameters<typeof ParquetWriter>[0]['schema'], codec })
        w.write({
          columnData: columns.map((e, c) => ({ name: e.name, data: rows.map((_, r) => physical(c, r)), encoding: chosen[c] as WriterEncoding })),
          rowGroupSize,
        })
        w.finish()
        const bytes = out.getBytes()
        const mine = await expectSameRead(bytes, layout)
        // a column is Strata's when every chunk's encodings are ones it reads
        const meta = parquetMetadata(bytes.slice().buffer)
        const readable = columns.filter((_, c) => meta.row_groups.every((g) => g.columns[c].meta_data!.encodings.every((e) => READ.has(e)))).map((e) => e.name)
        expect(mine.decoderColumns).toEqual(readable)
      }),
      { numRuns: 120 },
    )
  })

  it('a page in an encoding the chunk metadata did not list: that column falls back to hyparquet', async () => {
    const layout: DataFileLayout = {
      keyFields: [{ id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } }],
      valueFields: [
        { id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } },
        { id: 1, name: 'v', type: { root: 'INT', nullable: true } },
        { id: 2, name: 's', type: { root: 'VARCHAR', length: 10, nullable: true } },
      ],
    }
    const n = 40
    const out = new ByteWriter()
    const w = new ParquetWriter({ writer: out, schema: dataFileSchema(layout) as ConstructorParameters<typeof ParquetWriter>[0]['schema'] })
    w.write({
      columnData: [
        { name: '_KEY_k', data: Array.from({ length: n }, (_, i) => BigInt(i)) },
        { name: '_SEQUENCE_NUMBER', data: Array.from({ length: n }, (_, i) => BigInt(i)) },
        { name: '_VALUE_KIND', data: Array.from({ length: n }, () => 0) },
        { name: 'k', data: Array.from({ length: n }, (_, i) => BigInt(i)) },
        { name: 'v', data: Array.from({ length: n }, (_, i) => (i % 3 === 0 ? null : i * 1000 - 7)), encoding: 'DELTA_BINARY_PACKED' },
        { name: 's', data: Array.from({ length: n }, (_, i) => (i % 4 === 0 ? null : `s${i % 5}`)), encoding: 'DELTA_BYTE_ARRAY' },
      ],
      rowGroupSize: 16,
    })
    w.finish()
    // the footer claims PLAIN only, so the columns are planned for Strata's decoder
    const lying = rewriteFooter(out.getBytes(), (e) => e, (m) => ({ ...m, encodings: ['PLAIN'], encoding_stats: undefined }))
    const mine = await expectSameRead(lying, layout)
    expect(mine.decoderColumns).toEqual(columnNames(layout))
    expect(Array.from(asValues(mine.batches[0].columns[4])).slice(0, 4)).toEqual([null, 993, 1993, null])
  })

  it('a key column and its value column are decoded once when stored in the same bytes, apart otherwise', async () => {
    const layout: DataFileLayout = {
      keyFields: [{ id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } }],
      valueFields: [{ id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } }],
    }
    for (const [keys, values] of [
      [[1n, 2n, 3n], [1n, 2n, 3n]],
      [[1n, 2n, 3n], [1n, 2n, 4n]],
    ]) {
      const out = new ByteWriter()
      const w = new ParquetWriter({ writer: out, schema: dataFileSchema(layout) as ConstructorParameters<typeof ParquetWriter>[0]['schema'] })
      w.write({
        columnData: [
          { name: '_KEY_k', data: keys },
          { name: '_SEQUENCE_NUMBER', data: [0n, 0n, 0n] },
          { name: '_VALUE_KIND', data: [0, 0, 0] },
          { name: 'k', data: values },
        ],
      })
      w.finish()
      const mine = await expectSameRead(out.getBytes(), layout)
      const [key, , , value] = mine.batches[0].columns
      expect(Array.from(asValues(key))).toEqual(keys)
      expect(Array.from(asValues(value))).toEqual(values)
      expect(key === value).toBe(keys[2] === values[2])
    }
  })

  it('a file whose pages the zstd CLI compressed (golden file)', async () => {
    const bytes = new Uint8Array(readFileSync(new URL('./fixtures/data-file/zstd-cli.parquet', import.meta.url)))
    const f = (id: number, name: string, type: DataType): DataField => ({ id, name, type })
    const layout: DataFileLayout = {
      keyFields: [f(0, 'id', { root: 'INT', nullable: false })],
      valueFields: [f(0, 'id', { root: 'INT', nullable: false }), f(1, 'name', { root: 'VARCHAR', length: 2147483647, nullable: true }), f(2, 'amount', { root: 'DECIMAL', precision: 20, scale: 4, nullable: true }), f(3, 'ts', { root: 'TIMESTAMP', precision: 6, nullable: true })],
    }
    const mine = await expectSameRead(bytes, layout)
    expect(mine.decoderColumns).toEqual(columnNames(layout))
    expect(mine.batches.reduce((n, b) => n + b.rows, 0)).toBe(300)
  })
})

describe("parquet-java's TINYINT and SMALLINT (INTEGER(8|16) logical type)", () => {
  const layout: DataFileLayout = {
    keyFields: [{ id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } }],
    valueFields: [
      { id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } },
      { id: 1, name: 'ti', type: { root: 'TINYINT', nullable: true } },
      { id: 2, name: 'si', type: { root: 'SMALLINT', nullable: false } },
    ],
  }
  function write(ti: (number | null)[], si: number[]): Uint8Array {
    const schema = dataFileSchema(layout).map((e) =>
      e.name === 'ti' || e.name === '_VALUE_KIND' ? { ...e, logical_type: { type: 'INTEGER' as const, bitWidth: 8, isSigned: true } } : e.name === 'si' ? { ...e, logical_type: { type: 'INTEGER' as const, bitWidth: 16, isSigned: true } } : e,
    )
    const out = new ByteWriter()
    const w = new ParquetWriter({ writer: out, schema: schema as ConstructorParameters<typeof ParquetWriter>[0]['schema'] })
    w.write({
      columnData: [
        { name: '_KEY_k', data: ti.map((_, i) => BigInt(i)) },
        { name: '_SEQUENCE_NUMBER', data: ti.map(() => 0n) },
        { name: '_VALUE_KIND', data: ti.map(() => 0) },
        { name: 'k', data: ti.map((_, i) => BigInt(i)) },
        { name: 'ti', data: ti },
        { name: 'si', data: si },
      ],
    })
    w.finish()
    return out.getBytes()
  }

  it('are decoded by Strata\'s decoder, as hyparquet reads them', async () => {
    const bytes = write([-128, null, 127, 0], [-32768, 32767, 1, 2])
    const mine = await expectSameRead(bytes, layout)
    expect(mine.decoderColumns).toEqual(columnNames(layout))
    expect(Array.from(asValues(mine.batches[0].columns[4]))).toEqual([-128, null, 127, 0])
  })

  it('with the row path\'s range check', async () => {
    for (const [ti, si] of [
      [[1, 300], [0, 0]],
      [[1, null], [0, -40000]],
    ] as [(number | null)[], number[]][]) {
      const bytes = write(ti, si)
      const ref = await readWith(bytes, layout, 'hyparquet').then(
        () => 'no error',
        (e: Error) => e.message,
      )
      expect(ref).toMatch(/is not an integer number in/)
      await expect(readWith(bytes, layout, 'strata')).rejects.toThrow(ref)
    }
  })
})

describe('strings', () => {
  it('keeps a leading U+FEFF (data, not a byte-order mark), as the hyparquet path now does', async () => {
    const layout: DataFileLayout = {
      keyFields: [{ id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } }],
      valueFields: [
        { id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } },
        { id: 1, name: 's', type: { root: 'VARCHAR', length: 10, nullable: true } },
      ],
    }
    const values = ['\uFEFF', '\uFEFFa', 'a\uFEFF', '\uFEFF\u00e9', '\uFEFF\uFEFF']
    const rows: KeyValue[] = values.map((s, i) => ({ key: [BigInt(i)], seq: 0n, kind: 0, value: [BigInt(i), s] }))
    const { bytes } = writeDataFile(layout, rows)
    const mine = await expectSameRead(bytes, layout)
    expect(Array.from(asValues(mine.batches[0].columns[4]))).toEqual(values)
    // the row path's reader too
    expect((await readDataFile(byteSource(bytes), layout)).map((r) => r.value[1])).toEqual(values)
  })

  const layout: DataFileLayout = {
    keyFields: [{ id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } }],
    valueFields: [
      { id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } },
      { id: 1, name: 's', type: { root: 'VARCHAR', length: 10, nullable: false } },
    ],
  }

  /** A file whose string column `s` holds these bytes as they are (valid UTF-8 or not), PLAIN or dictionary-encoded. */
  function stringFile(values: Uint8Array[], encoding: Encoding): Uint8Array {
    const schema = dataFileSchema(layout)
    const out = new ByteWriter()
    // written as BINARY so the writer takes the bytes as they are, then annotated as strings
    const w = new ParquetWriter({ writer: out, schema: schema.map((e) => (e.name === 's' ? { ...e, converted_type: undefined, logical_type: undefined } : e)) as ConstructorParameters<typeof ParquetWriter>[0]['schema'] })
    w.write({
      columnData: [
        { name: '_KEY_k', data: values.map((_, i) => BigInt(i)) },
        { name: '_SEQUENCE_NUMBER', data: values.map(() => 0n) },
        { name: '_VALUE_KIND', data: values.map(() => 0) },
        { name: 'k', data: values.map((_, i) => BigInt(i)) },
        { name: 's', data: values, encoding: encoding as WriterEncoding },
      ],
    })
    w.finish()
    // the reader checks storage against Strata's schema: mark the column UTF8 as Strata does
    return reannotate(out.getBytes(), 's', { converted_type: 'UTF8', logical_type: { type: 'STRING' } })
  }

  /** Expects column `s` read as strings to be each value's TextDecoder string, and read as bytes (the compaction's read) its UTF-8. */
  async function expectDecodedAsText(file: Uint8Array, values: Uint8Array[]): Promise<void> {
    const text = values.map((b) => new TextDecoder().decode(b))
    const mine = await expectSameRead(file, layout)
    expect(mine.decoderColumns).toContain('s')
    expect(Array.from(asValues(mine.batches[0].columns[4]))).toEqual(text)
    const asBytes = await readWith(file, layout, 'strata', undefined, true)
    const col = asBytes.batches[0].columns[4]
    expect(col).toBeInstanceOf(Utf8Column)
    const u = col as Utf8Column
    expect(values.map((_, r) => Buffer.from(u.bytes.subarray(u.offsets[r], u.offsets[r + 1])).toString('hex'))).toEqual(text.map((t) => Buffer.from(t, 'utf8').toString('hex')))
  }

  it('decodes invalid UTF-8 as hyparquet does (U+FFFD)', async () => {
    const bad = [new Uint8Array([0xff]), new Uint8Array([0x61, 0xc3]), new Uint8Array([0xed, 0xa0, 0x80]), new Uint8Array([0xf0, 0x9f, 0x98])]
    for (const encoding of ['PLAIN', 'RLE_DICTIONARY'] as Encoding[]) await expectDecodedAsText(stringFile(bad, encoding), bad)
  })

  it('decodes any mix of valid and invalid UTF-8 of any length, read as strings or as bytes', async () => {
    // invalid bytes grow threefold into U+FFFDs: more than the room the byte decoder made from the page's size
    const value = fc.oneof(
      fc.string({ unit: 'grapheme', maxLength: 30 }).map((t) => new Uint8Array(Buffer.from(t, 'utf8'))),
      fc.uint8Array({ maxLength: 60 }),
      fc.integer({ min: 1, max: 200 }).map((n) => new Uint8Array(n).fill(0xff)),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(value, { minLength: 1, maxLength: 120 }), fc.constantFrom<Encoding>('PLAIN', 'RLE_DICTIONARY'), async (values, encoding) => {
        await expectDecodedAsText(stringFile(values, encoding), values)
      }),
      { numRuns: 60 },
    )
  })
})

/** The file with column `name`'s schema element given `patch` (the footer rewritten). */
function reannotate(bytes: Uint8Array, name: string, patch: Partial<SchemaElement>): Uint8Array {
  return rewriteFooter(bytes, (e) => (e.name === name ? { ...e, ...patch } : e), (m) => m)
}

/** The file with its footer rewritten: schema elements and column chunk metadata patched, statistics and page indexes dropped. */
function rewriteFooter(bytes: Uint8Array, element: (e: SchemaElement) => SchemaElement, chunkMeta: (m: NonNullable<ColumnChunk['meta_data']>) => NonNullable<ColumnChunk['meta_data']>): Uint8Array {
  const ab = bytes.slice().buffer
  const meta = parquetMetadata(ab)
  const end = bytes.length - 8 - new DataView(ab).getUint32(bytes.length - 8, true)
  const out = new ByteWriter()
  out.appendBytes(bytes.subarray(0, end))
  const schema = meta.schema.map(element)
  const groups = meta.row_groups.map((g) => ({
    chunks: g.columns.map((c) => ({ chunk: { ...c, meta_data: chunkMeta({ ...c.meta_data!, statistics: undefined }), column_index_offset: undefined, column_index_length: undefined, offset_index_offset: undefined, offset_index_length: undefined } })),
    numRows: Number(g.num_rows),
    totalByteSize: g.total_byte_size,
    compressedSize: Number(g.total_compressed_size ?? 0),
  }))
  writeFooter(out, schema, groups, 'strata test')
  return out.getBytes().slice()
}

// ---------------------------------------------------------------------------------------------

describe('snappy', () => {
  it('decompresses what the encoder compresses, as hyparquet does', () => {
    fc.assert(
      fc.property(fc.oneof(fc.uint8Array({ maxLength: 3000 }), fc.array(fc.uint8Array({ minLength: 1, maxLength: 20 }), { maxLength: 200 }).map((parts) => concat(parts.flatMap((p) => [p, p, p.subarray(1)])))), (raw) => {
        const packed = snappyCompress(raw)
        const mine = new Uint8Array(raw.length)
        snappyDecompress(packed, mine)
        expect(Buffer.from(mine).equals(Buffer.from(raw))).toBe(true)
        const ref = new Uint8Array(raw.length)
        snappyUncompress(packed, ref)
        expect(Buffer.from(ref).equals(Buffer.from(raw))).toBe(true)
      }),
      { numRuns: 300 },
    )
  })

  it('decodes long literals, long copies and overlapping copies (offsets below 8)', () => {
    // hand-made block: literal "abc", copy offset 3 len 20 (overlapping), literal of 70 bytes, copy offset 73 len 64
    const lit70 = Uint8Array.from({ length: 70 }, (_, i) => i + 1)
    const block = concat([Uint8Array.of(0x80 | (157 & 0x7f), 157 >> 7), Uint8Array.of(2 << 2, 97, 98, 99), Uint8Array.of(((20 - 1) << 2) | 2, 3, 0), Uint8Array.of(60 << 2, 69), lit70, Uint8Array.of(((64 - 1) << 2) | 2, 73, 0)])
    const out = new Uint8Array(157)
    snappyDecompress(block, out)
    const want = new Uint8Array(157)
    snappyUncompress(block, want)
    expect([...out]).toEqual([...want])
    expect(String.fromCharCode(...out.subarray(0, 23))).toBe('abc'.repeat(8).slice(0, 23))
  })

  it('refuses broken blocks instead of returning wrong bytes', () => {
    const raw = new TextEncoder().encode('hello hello hello hello hello')
    const packed = snappyCompress(raw)
    // wrong length
    expect(() => snappyDecompress(packed, new Uint8Array(raw.length + 1))).toThrow(/snappy: block holds/)
    // truncated
    expect(() => snappyDecompress(packed.subarray(0, packed.length - 2), new Uint8Array(raw.length))).toThrow(/snappy/)
    // a copy reaching before the start
    expect(() => snappyDecompress(Uint8Array.of(8, (3 << 2) | 1, 9), new Uint8Array(8))).toThrow(/out of range/)
  })
})

describe('broken files', () => {
  const layout: DataFileLayout = {
    keyFields: [{ id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } }],
    valueFields: [{ id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } }, { id: 1, name: 'v', type: { root: 'INT', nullable: true } }],
  }
  const rows: KeyValue[] = Array.from({ length: 50 }, (_, i) => ({ key: [BigInt(i)], seq: 0n, kind: 0, value: [BigInt(i), i % 3 ? i : null] }))

  /** `rows` as a data file, and column v's one data page in it: where its header and its body start, and the header. */
  function fileWithPage(compression: FileCompression) {
    const bytes = writeDataFile(layout, rows, { compression }).bytes.slice()
    const v = parquetMetadata(bytes.slice().buffer).row_groups[0].columns[4].meta_data!
    const start = Number(v.dictionary_page_offset || v.data_page_offset)
    const reader = { view: new DataView(bytes.buffer), offset: start }
    const header = parquetHeader(reader)
    return { bytes, start, body: reader.offset, header }
  }

  it('a truncated column chunk names the column', async () => {
    const { bytes, start, body, header: h } = fileWithPage('none')
    // the page header's value count made larger than the row group: the data runs out
    const patched = new ByteWriter()
    writePageHeader(patched, { ...h, data_page_header_v2: { ...h.data_page_header_v2!, num_values: 51, num_rows: 51 } } as Parameters<typeof writePageHeader>[1])
    expect(patched.offset).toBe(body - start)
    bytes.set(patched.getBytes(), start)
    await expect(readWith(bytes, layout, 'strata')).rejects.toThrow(/column v: data page of 51 values/)
  })

  it('a page its codec refuses names the column', async () => {
    const { bytes, body, header: h } = fileWithPage('snappy')
    // the page's compressed values (after its definition levels, which v2 keeps uncompressed) set to 0xff: snappy refuses them
    bytes.fill(0xff, body + h.data_page_header_v2!.definition_levels_byte_length, body + h.compressed_page_size)
    await expect(readWith(bytes, layout, 'strata')).rejects.toThrow(/column v: snappy: /)
  })
})

// ---------------------------------------------------------------------------------------------
// Paimon's own writer

const missing = missingTools()

describe.skipIf(missing.length > 0)("Paimon's data files (interop harness)", () => {
  it('decodes every data file Paimon wrote for a table of every type, as hyparquet does', async () => {
    buildHarness()
    const dir = mkdtempSync(join(tmpdir(), 'strata-decode-paimon-'))
    try {
      const fields: [string, string][] = [
        ['id', 'BIGINT NOT NULL'],
        ['b', 'BOOLEAN'],
        ['ti', 'TINYINT'],
        ['si', 'SMALLINT'],
        ['i', 'INT'],
        ['bi', 'BIGINT'],
        ['f', 'FLOAT'],
        ['d', 'DOUBLE'],
        ['dec5', 'DECIMAL(5, 2)'],
        ['dec15', 'DECIMAL(15, 3)'],
        ['dec25', 'DECIMAL(25, 4)'],
        ['s', 'STRING'],
        ['by', 'BYTES'],
        ['dt', 'DATE'],
        ['ts3', 'TIMESTAMP(3)'],
        ['ts6', 'TIMESTAMP(6)'],
      ]
      const schema = { fields: fields.map(([name, type]) => ({ name, type })), primaryKeys: ['id'], partitionKeys: [], options: { bucket: '1' } }
      const results: Uint8Array[] = []
      for (const compression of ['zstd', 'snappy', 'none']) {
        const path = join(dir, compression)
        const pick = <T>(n: number, xs: T[]): T => xs[n % xs.length]
        const rows = Array.from({ length: 3000 }, (_, n) => ({
          id: n,
          b: n % 7 === 0 ? null : n % 2 === 0,
          ti: n % 5 === 0 ? null : pick(n, [-128, 0, 127, 5]),
          si: pick(n, [-32768, 32767, 0, null]),
          i: n % 11 === 0 ? null : pick(n, [-2147483648, 2147483647, 0, -1, n]),
          bi: pick(n, ['-9223372036854775808', '9223372036854775807', String(n * 1000003), null]),
          f: pick(n, [-0, 1.5, -3.25e38, null, 7]),
          d: pick(n, [-0, Math.PI, -1e308, 5e-324, null, n / 3]),
          dec5: pick(n, ['-999.99', '999.99', '0.01', null]),
          dec15: pick(n, ['-999999999999.999', '123.456', null, '0.000']),
          dec25: pick(n, ['-999999999999999999999.9999', '0.0001', null, String(n)]),
          s: n % 13 === 0 ? null : pick(n, ['', 'customer-' + (n % 500), '\u00e9t\u00e9', '\u{1F600}x', '\uFEFFbom']),
          by: pick(n, ['AAEC', '', null, '/w==']),
          dt: pick(n, ['1970-01-01', '2024-02-29', null, '1900-12-31']),
          ts3: pick(n, ['2024-01-01 00:00:00.123', null, '1969-12-31 23:59:59.999']),
          ts6: pick(n, ['2024-01-01 00:00:00.123456', '1900-01-01 00:00:00.000001', null]),
        }))
        const input = writeJsonLines(join(dir, `${compression}.jsonl`), rows)
        const tableSchema = { ...schema, options: { ...schema.options, 'file.compression': compression } }
        const [res] = paimonBatch([['write', path, '--schema', JSON.stringify(tableSchema), '--in', input]])
        expect(res.error).toBeUndefined()
        expect(res.ok).toBe(true)
        const bucket = join(path, 'bucket-0')
        const files = readdirSync(bucket).filter((f) => f.endsWith('.parquet'))
        expect(files.length).toBeGreaterThan(0)
        const view = (await Table.open(path)).view
        const layout: DataFileLayout = { keyFields: view.keyFields, valueFields: view.fields }
        for (const f of files) {
          const bytes = new Uint8Array(readFileSync(join(bucket, f)))
          results.push(bytes)
          const mine = await expectSameRead(bytes, layout)
          expect(mine.decoderColumns).toEqual(columnNames(layout))
          expect(mine.batches.reduce((n, b) => n + b.rows, 0)).toBe(3000)
        }
      }
      // Paimon writes data pages v1
      const pageTypes = new Set<string>()
      for (const bytes of results) {
        const meta = parquetMetadata(bytes.slice().buffer)
        for (const g of meta.row_groups) for (const c of g.columns) for (const s of c.meta_data!.encoding_stats ?? []) pageTypes.add(s.page_type)
      }
      expect(pageTypes.has('DATA_PAGE')).toBe(true)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  }, 300_000)
})
