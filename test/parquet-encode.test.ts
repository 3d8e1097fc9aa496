// Strata's column-chunk encoder (lib/format/parquet-encode.ts) against hyparquet, the reader
// the project uses, and against hyparquet-writer, the encoder it replaced: files decode to
// exactly the values written, for every column type, with nulls, empty strings, extreme
// values, many pages and row groups; chunk statistics and the page index (ColumnIndex and
// OffsetIndex) equal what hyparquet-writer wrote for the same rows.

import zlib from 'node:zlib'
import fc from 'fast-check'
import { parquetMetadata, parquetRead, readColumnIndex, readOffsetIndex } from 'hyparquet'
import type { FileMetaData, SchemaElement } from 'hyparquet'
import { snappyUncompress } from 'hyparquet'
import { ByteWriter, ParquetWriter } from 'hyparquet-writer'
import { describe, expect, it } from 'vitest'
import { byteSource, RAW_PARSERS } from '../lib/format/data-file-source.ts'
import { DataFileWriter, type FileCompression } from '../lib/format/data-file-writer.ts'
import { readDataFile } from '../lib/format/data-file-reader.ts'
import { type DataFileLayout } from '../lib/format/data-file-layout.ts'
import { DECOMPRESSORS } from '../lib/format/decompressors.ts'
import { writeColumnChunk } from '../lib/format/parquet-encode.ts'
import { snappyCompress } from '../lib/format/snappy.ts'
import { type FooterRowGroup, writeFooter } from '../lib/format/parquet-footer.ts'
import { STAT_PARSERS } from '../lib/format/page-index.ts'
import { parquetSchemaElement, physicalEncoder, rawReadElement } from '../lib/format/parquet-types.ts'
import type { DataField, DataType, KeyValue, Value } from '../lib/types.ts'

const I64_MIN = -(2n ** 63n)
const I64_MAX = 2n ** 63n - 1n
const I32_MIN = -(2 ** 31)
const I32_MAX = 2 ** 31 - 1

type Root = DataType['root']
const ROOTS: { root: Root; extra?: Partial<DataType> }[] = [
  { root: 'BOOLEAN' },
  { root: 'TINYINT' },
  { root: 'SMALLINT' },
  { root: 'INT' },
  { root: 'BIGINT' },
  { root: 'FLOAT' },
  { root: 'DOUBLE' },
  { root: 'DECIMAL', extra: { precision: 5, scale: 2 } },
  { root: 'DECIMAL', extra: { precision: 18, scale: 3 } },
  { root: 'DECIMAL', extra: { precision: 38, scale: 10 } },
  { root: 'CHAR', extra: { length: 3 } },
  { root: 'VARCHAR', extra: { length: 2147483647 } },
  { root: 'BINARY', extra: { length: 4 } },
  { root: 'VARBINARY', extra: { length: 2147483647 } },
  { root: 'DATE' },
  { root: 'TIMESTAMP', extra: { precision: 3 } },
  { root: 'TIMESTAMP', extra: { precision: 6 } },
]

const stringArb = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('', 'a', 'ab', 'abc', 'é', '中文', '😀', '\ue000', '\uffff', '\ud800', 'x\udc00y', 'a'.repeat(40)) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }) },
  { weight: 2, arbitrary: fc.integer({ min: 0, max: 30 }).map((i) => `v${i}`) },
)

/** Values of a type, as `Value`s: a few distinct ones often (dictionaries), extremes, anything. */
function valueArb(type: DataType): fc.Arbitrary<Value> {
  const few = <T,>(arb: fc.Arbitrary<T>, extremes: T[]): fc.Arbitrary<T> =>
    fc.oneof({ weight: 3, arbitrary: arb }, { weight: 1, arbitrary: fc.constantFrom(...extremes) })
  switch (type.root) {
    case 'BOOLEAN':
      return fc.boolean()
    case 'TINYINT':
      return few(fc.integer({ min: -128, max: 127 }), [-128, 127, 0])
    case 'SMALLINT':
      return few(fc.integer({ min: -32768, max: 32767 }), [-32768, 32767, 0])
    case 'INT':
    case 'DATE':
      return few(fc.oneof(fc.integer({ min: -5, max: 5 }), fc.integer()), [I32_MIN, I32_MAX, 0, -1])
    case 'BIGINT':
      return few(fc.oneof(fc.bigInt({ min: -5n, max: 5n }), fc.bigInt({ min: I64_MIN, max: I64_MAX })), [I64_MIN, I64_MAX, 0n, -1n, 2n ** 32n, -(2n ** 32n)])
    case 'FLOAT':
      return few(fc.oneof(fc.integer({ min: -3, max: 3 }), fc.float({ noDefaultInfinity: false, noNaN: false })).map(Math.fround), [Math.fround(3.4e38), -Infinity, Infinity, NaN, 0, 1.5])
    case 'DOUBLE':
      return few(fc.oneof(fc.integer({ min: -3, max: 3 }), fc.double({ noNaN: false })), [Number.MAX_VALUE, -Number.MAX_VALUE, Number.MIN_VALUE, -Infinity, Infinity, NaN, 0, 0.1])
    case 'DECIMAL': {
      const limit = 10n ** BigInt(type.precision!) - 1n
      return few(fc.oneof(fc.bigInt({ min: -50n, max: 50n }), fc.bigInt({ min: -limit, max: limit })), [limit, -limit, 0n, -1n])
    }
    case 'CHAR':
    case 'VARCHAR':
      return stringArb
    case 'BINARY':
    case 'VARBINARY':
      return few(
        fc.oneof(fc.uint8Array({ maxLength: 12 }), fc.integer({ min: 0, max: 9 }).map((i) => new Uint8Array([i, 255 - i]))),
        [new Uint8Array(0), new Uint8Array([255, 255, 255]), new Uint8Array([0]), new Uint8Array(40).fill(7)],
      )
    case 'TIMESTAMP': {
      const p = type.precision ?? 6
      const range = fc.bigInt({ min: -(2n ** 62n), max: 2n ** 62n })
      return p <= 3 ? fc.oneof(fc.bigInt({ min: -5n, max: 5n }), range.map((v) => v / 1000n)).map((ms) => ms * 1000n) : few(range, [I64_MIN, I64_MAX, 0n])
    }
    default:
      throw new Error(`no arbitrary for ${type.root}`)
  }
}

interface Case {
  type: DataType
  values: Value[]
  pageSize: number
  groupRows: number
  typed: boolean
}

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    spec: fc.constantFrom(...ROOTS),
    nullable: fc.boolean(),
    nullRate: fc.constantFrom(0, 0, 0.1, 0.5, 1),
    rows: fc.oneof(fc.integer({ min: 1, max: 40 }), fc.integer({ min: 200, max: 3000 })),
    pageSize: fc.constantFrom(1, 16, 64, 300, 1024, 8192),
    groupRows: fc.constantFrom(1, 7, 500, 100000),
    typed: fc.boolean(),
    seed: fc.integer(),
  })
  .chain(({ spec, nullable, nullRate, rows, pageSize, groupRows, typed }) => {
    const type: DataType = { root: spec.root, nullable, ...spec.extra }
    const valueOrNull = nullable && nullRate > 0 ? fc.oneof({ weight: Math.round(nullRate * 10), arbitrary: fc.constant(null) }, { weight: Math.round((1 - nullRate) * 10) || 1, arbitrary: valueArb(type) }) : valueArb(type)
    // runs of repeated values (RLE runs of dictionary indices and levels)
    const runs = fc.array(fc.tuple(valueOrNull, fc.oneof({ weight: 4, arbitrary: fc.constant(1) }, { weight: 1, arbitrary: fc.integer({ min: 2, max: 40 }) })), { minLength: 1, maxLength: rows })
    return runs.map((rs): Case => ({ type, values: rs.flatMap(([v, n]) => Array<Value>(n).fill(v)), pageSize, groupRows, typed }))
  })

/** The physical column `DataFileWriter` buffers for these values: typed when asked and possible. */
function physicalColumn(name: string, type: DataType, values: Value[], typed: boolean): ArrayLike<unknown> {
  const enc = physicalEncoder(name, type)
  const phys = values.map((v) => enc(v))
  if (!typed || phys.some((v) => v === null)) return phys
  switch (type.root) {
    case 'BIGINT':
    case 'TIMESTAMP':
      return BigInt64Array.from(phys as bigint[])
    case 'INT':
    case 'DATE':
    case 'TINYINT':
    case 'SMALLINT':
      return Int32Array.from(phys as number[])
    case 'DOUBLE':
      return Float64Array.from(phys as number[])
    case 'FLOAT':
      return Float32Array.from(phys as number[])
    case 'DECIMAL':
      return (type.precision ?? 10) <= 18 && (type.precision ?? 10) > 9 ? BigInt64Array.from(phys as bigint[]) : phys
    default:
      return phys
  }
}

function slice(col: ArrayLike<unknown>, from: number, to: number): ArrayLike<unknown> {
  return ArrayBuffer.isView(col) ? (col as Int32Array).subarray(from, to) : (col as unknown[]).slice(from, to)
}

/**
 * A file of one column written by Strata's encoder, row group by row group; the page indexes
 * and footer by Strata's `writeFooter` or by hyparquet-writer's `ParquetWriter.finish`.
 */
function strataFile(element: SchemaElement, col: ArrayLike<unknown>, rows: number, groupRows: number, pageSize: number, columnIndex: boolean, compression: 'SNAPPY' | 'UNCOMPRESSED' | 'GZIP' = 'SNAPPY', footer: 'strata' | 'hyparquet-writer' = 'strata'): Uint8Array {
  const out = new ByteWriter()
  type WriterSchema = ConstructorParameters<typeof ParquetWriter>[0]['schema']
  const schema: SchemaElement[] = [{ name: 'root', num_children: 1 }, element]
  const writer = new ParquetWriter({ writer: out, schema: schema as WriterSchema, createdBy: 'strata version 0.1.0' })
  const compress = compression === 'SNAPPY' ? snappyCompress : compression === 'GZIP' ? (b: Uint8Array) => zlib.gzipSync(b) : null
  const groups: FooterRowGroup[] = []
  for (let g = 0; g < rows; g += groupRows) {
    const n = Math.min(groupRows, rows - g)
    const start = out.offset
    const enc = writeColumnChunk(out, element, slice(col, g, g + n), n, { codec: compression, compress, pageSize, columnIndex })
    groups.push({ chunks: [enc], numRows: n, totalByteSize: enc.chunk.meta_data!.total_uncompressed_size, compressedSize: out.offset - start })
    writer.pendingIndexes.push(enc as (typeof writer.pendingIndexes)[number])
    writer.num_rows += BigInt(n)
    writer.row_groups.push({ columns: [enc.chunk], num_rows: BigInt(n), total_byte_size: enc.chunk.meta_data!.total_uncompressed_size, total_compressed_size: BigInt(out.offset - start) } as (typeof writer.row_groups)[number])
  }
  if (footer === 'strata') writeFooter(out, schema, groups, 'strata version 0.1.0')
  else writer.finish()
  return out.getBytes().slice()
}

/** The same column written by hyparquet-writer, as `DataFileWriter` wrote it before. */
function referenceFile(element: SchemaElement, col: ArrayLike<unknown>, groupRows: number, pageSize: number, columnIndex: boolean): Uint8Array {
  const out = new ByteWriter()
  type WriterSchema = ConstructorParameters<typeof ParquetWriter>[0]['schema']
  const writer = new ParquetWriter({ writer: out, schema: [{ name: 'root', num_children: 1 }, element] as WriterSchema, createdBy: 'strata version 0.1.0' })
  const data = col instanceof BigInt64Array ? Array.from(col) : col
  void writer.write({ columnData: [{ name: element.name, data: data as unknown[], columnIndex }], rowGroupSize: groupRows, pageSize })
  writer.finish()
  return out.getBytes().slice()
}

function buffer(bytes: Uint8Array): ArrayBuffer {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer
}

/** All values of the file's one column, raw (physical, as the data-file reader reads them). */
async function readRaw(bytes: Uint8Array, type: DataType): Promise<unknown[]> {
  const file = buffer(bytes)
  const metadata = parquetMetadata(file)
  const schema = metadata.schema.map((e, i) => (i === 0 ? e : rawReadElement(e, type)))
  const out: unknown[] = []
  await parquetRead({
    file,
    metadata: { ...metadata, schema },
    utf8: false,
    parsers: RAW_PARSERS,
    compressors: DECOMPRESSORS,
    onChunk: () => {},
    onComplete: (rows: unknown[][]) => {
      for (const r of rows) out.push(r[0])
    },
    rowFormat: 'array',
  } as Parameters<typeof parquetRead>[0])
  return out
}

/** What a raw read returns for a physical value (bytes of a FIXED decimal, bigints of INT32 decimals as numbers). */
function expectedRaw(type: DataType, element: SchemaElement, v: unknown): unknown {
  if (v === null) return null
  if (type.root === 'DECIMAL') {
    if (element.type === 'INT32') return Number(v)
    if (element.type === 'FIXED_LEN_BYTE_ARRAY') {
      const n = element.type_length!
      const bytes = new Uint8Array(n)
      let x = v as bigint
      for (let i = n - 1; i >= 0; i--) {
        bytes[i] = Number(x & 0xffn)
        x >>= 8n
      }
      return bytes
    }
  }
  if (type.root === 'FLOAT') return Math.fround(v as number)
  if ((type.root === 'CHAR' || type.root === 'VARCHAR') && typeof v === 'string') return new TextDecoder().decode(new TextEncoder().encode(v))
  return v
}

interface PageIndexView {
  rows: bigint[]
  columnIndex: unknown
}

function pageIndexes(bytes: Uint8Array, metadata: FileMetaData): PageIndexView[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  return metadata.row_groups.map((rg) => {
    const c = rg.columns[0]
    const rows = c.offset_index_offset === undefined ? [] : readOffsetIndex({ view, offset: Number(c.offset_index_offset) }).page_locations.map((p) => p.first_row_index)
    // min/max as the bytes written (a null page's are empty, which no typed element parses)
    const element: SchemaElement = { name: metadata.schema[1].name, type: 'BYTE_ARRAY' }
    const columnIndex = c.column_index_offset === undefined ? undefined : readColumnIndex({ view, offset: Number(c.column_index_offset) }, element, STAT_PARSERS as never)
    // hyparquet-writer orders pages only between neighbours, so a null page between
    // descending pages left "ASCENDING"; Strata's compares non-null pages across it
    if (columnIndex?.null_pages.some((p) => p)) columnIndex.boundary_order = 'UNORDERED'
    return { rows, columnIndex }
  })
}

function chunkStats(metadata: FileMetaData): unknown[] {
  return metadata.row_groups.map((rg) => {
    const m = rg.columns[0].meta_data!
    return { stats: m.statistics, values: m.num_values, pages: m.encoding_stats?.find((e) => e.page_type !== 'DICTIONARY_PAGE')?.count }
  })
}

/** hyparquet-writer's dictionary keys -0 and +0 (and every NaN) as one value, so it rewrites one as the other. */
function mixesZeros(values: Value[]): boolean {
  return values.some((v) => Object.is(v, -0)) && values.some((v) => Object.is(v, 0))
}

describe('parquet-encode: column chunks', () => {
  it('decode with hyparquet to the values written, with the statistics and page index hyparquet-writer wrote', async () => {
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ type, values, pageSize, groupRows, typed }) => {
        const element = parquetSchemaElement('c', 7, type)
        const col = physicalColumn('c', type, values, typed)
        const mine = strataFile(element, col, values.length, groupRows, pageSize, true)
        const raw = await readRaw(mine, type)
        const phys = Array.from(col as ArrayLike<unknown>, (v) => expectedRaw(type, element, v))
        expect(raw).toEqual(phys)
        // Strata's footer and page indexes are hyparquet-writer's, byte for byte
        expect(strataFile(element, col, values.length, groupRows, pageSize, true, 'SNAPPY', 'hyparquet-writer')).toEqual(mine)
        if (mixesZeros(values)) return
        const ref = referenceFile(element, col, groupRows, pageSize, true)
        const mineMeta = parquetMetadata(buffer(mine), { parsers: STAT_PARSERS } as never)
        const refMeta = parquetMetadata(buffer(ref), { parsers: STAT_PARSERS } as never)
        expect(chunkStats(mineMeta)).toEqual(chunkStats(refMeta))
        expect(pageIndexes(mine, mineMeta)).toEqual(pageIndexes(ref, refMeta))
        expect(mineMeta.row_groups.map((g) => g.num_rows)).toEqual(refMeta.row_groups.map((g) => g.num_rows))
      }),
      { numRuns: Number(process.env.PARQUET_ENCODE_RUNS ?? 300) },
    )
  }, 600_000)

  it('writes the same values whatever the codec', async () => {
    const type: DataType = { root: 'VARCHAR', nullable: true, length: 100 }
    const element = parquetSchemaElement('c', 1, type)
    const values = Array.from({ length: 5000 }, (_, i) => (i % 11 === 0 ? null : `value-${i % 700}-${'x'.repeat(i % 13)}`))
    for (const codec of ['SNAPPY', 'UNCOMPRESSED', 'GZIP'] as const) {
      const bytes = strataFile(element, values, values.length, 1200, 512, true, codec)
      expect(parquetMetadata(buffer(bytes)).row_groups[0].columns[0].meta_data!.codec).toBe(codec)
      expect(await readRaw(bytes, type)).toEqual(values)
    }
  })

  it('writes values larger than a page and than the scratch buffers it keeps', async () => {
    const type: DataType = { root: 'VARCHAR', nullable: true, length: MAX }
    const element = parquetSchemaElement('c', 1, type)
    const big = 'é'.repeat(3 << 20) // 6 MiB of UTF-8
    const values = ['a', big, null, '', big.slice(1) + 'x', 'b']
    for (const codec of ['SNAPPY', 'UNCOMPRESSED'] as const) {
      const bytes = strataFile(element, values, values.length, 4, 8192, true, codec)
      expect(await readRaw(bytes, type)).toEqual(values)
    }
  })

  it('writes dictionary indices of more than 8 bits, in runs and bit-packed', async () => {
    const type: DataType = { root: 'VARCHAR', nullable: true, length: MAX }
    const element = parquetSchemaElement('c', 1, type)
    const values: (string | null)[] = []
    for (let i = 0; i < 12000; i++) values.push(i % 97 === 0 ? null : `${'long-value-'.repeat(8)}${i < 6000 ? i % 1500 : Math.floor(i / 20) % 1500}`)
    const bytes = strataFile(element, values, values.length, 12000, 8192, true)
    expect(parquetMetadata(buffer(bytes)).row_groups[0].columns[0].meta_data!.encodings).toContain('RLE_DICTIONARY')
    expect(await readRaw(bytes, type)).toEqual(values)
  })

  it('refuses a null in a REQUIRED column', () => {
    const element = parquetSchemaElement('c', 1, { root: 'INT', nullable: false })
    expect(() => strataFile(element, [1, null, 3], 3, 10, 100, false)).toThrow(/REQUIRED/)
  })

  it('keeps -0 and +0 apart in a dictionary', async () => {
    const type: DataType = { root: 'DOUBLE', nullable: false }
    const element = parquetSchemaElement('c', 1, type)
    const values = Array.from({ length: 3000 }, (_, i) => (i % 2 ? -0 : 0))
    const bytes = strataFile(element, Float64Array.from(values), values.length, 100000, 8192, true)
    expect(parquetMetadata(buffer(bytes)).row_groups[0].columns[0].meta_data!.encodings).toContain('RLE_DICTIONARY')
    const back = await readRaw(bytes, type)
    expect(back.every((v, i) => Object.is(v, values[i]))).toBe(true)
  })
})

describe('parquet-encode: snappy', () => {
  const inputArb = fc.oneof(
    fc.uint8Array({ maxLength: 3000 }),
    fc.array(fc.tuple(fc.uint8Array({ minLength: 1, maxLength: 30 }), fc.integer({ min: 1, max: 300 })), { maxLength: 40 }).map((parts) => {
      const out: number[] = []
      for (const [p, n] of parts) for (let i = 0; i < n; i++) out.push(...p)
      return Uint8Array.from(out)
    }),
    fc.integer({ min: 0, max: 40_000 }).map((n) => Uint8Array.from({ length: n }, (_, i) => (i * 7) % 251 ^ (i >> 9))),
  )
  it('round-trips through hyparquet\'s snappy decoder', () => {
    fc.assert(
      fc.property(inputArb, (input) => {
        const compressed = snappyCompress(input)
        const back = new Uint8Array(input.length)
        snappyUncompress(compressed, back)
        expect(back).toEqual(input)
      }),
      { numRuns: 150 },
    )
  })
  it('compresses repetitive data', () => {
    const input = new Uint8Array(100_000).fill(3)
    expect(snappyCompress(input).length).toBeLessThan(6000)
  })
})

// ---------------------------------------------------------------------------------------------
// Whole data files: every type, many pages and row groups, both ways of writing

const MAX = 2147483647
const field = (id: number, name: string, type: DataType): DataField => ({ id, name, type })
const FIELDS: DataField[] = [
  field(0, 'k', { root: 'BIGINT', nullable: false }),
  field(1, 'ks', { root: 'VARCHAR', nullable: false, length: MAX }),
  ...ROOTS.map((r, i) => field(i + 2, `f${i}`, { root: r.root, nullable: true, ...r.extra })),
  field(40, 'inn', { root: 'INT', nullable: false }),
]
const utf8Encoder = new TextEncoder()
const utf8Decoder = new TextDecoder()
const LAYOUT: DataFileLayout = { keyFields: FIELDS.slice(0, 2), valueFields: FIELDS }

describe('parquet-encode: data files', () => {
  it('a DataFileWriter file reads back as written, by rows and by columns, under every codec', async () => {
    const rowArb = fc.tuple(...FIELDS.slice(2, -1).map((f) => fc.option(valueArb(f.type), { freq: 4 })), fc.integer({ min: I32_MIN, max: I32_MAX }), fc.constantFrom<0 | 1 | 2 | 3>(0, 0, 1, 2, 3))
    const codecs: FileCompression[] = ['snappy', 'none', 'gzip', ...(typeof (zlib as { zstdCompressSync?: unknown }).zstdCompressSync === 'function' ? (['zstd'] as FileCompression[]) : [])]
    await fc.assert(
      fc.asyncProperty(fc.array(rowArb, { minLength: 1, maxLength: 400 }), fc.constantFrom(...codecs), fc.constantFrom(16, 200, 8192), fc.constantFrom(3, 50, 65536), async (rows, compression, pageSize, rowGroupRows) => {
        const records: KeyValue[] = rows.map((r, i) => {
          const key: Value[] = [BigInt(i) * 3n - 100n, `key-${String(i).padStart(5, '0')}`]
          // FLOAT is stored as float32, a lone surrogate as U+FFFD: the values as they read back
          const stored = (v: Value, j: number): Value => (v !== null && FIELDS[j + 2].type.root === 'FLOAT' ? Math.fround(v as number) : typeof v === 'string' ? utf8Decoder.decode(utf8Encoder.encode(v)) : v)
          const value: Value[] = [...key, ...r.slice(0, -2).map((v, j) => stored(v, j)), r[r.length - 2] as number]
          return { key, seq: BigInt(i), kind: r[r.length - 1] as 0 | 1 | 2 | 3, value }
        })
        const opts = { compression, pageSize, rowGroupRows }
        const byRows = new DataFileWriter(LAYOUT, opts)
        for (const kv of records) byRows.write(kv)
        const a = byRows.finish()
        // the same rows as columns (physical values, typed where a column has no null)
        const specs = [...LAYOUT.keyFields.map((f) => f.type), { root: 'BIGINT', nullable: false } as DataType, { root: 'TINYINT', nullable: false } as DataType, ...LAYOUT.valueFields.map((f) => f.type)]
        const cells = (kv: KeyValue): Value[] => [...kv.key, kv.seq, kv.kind, ...kv.value]
        const columns = specs.map((t, c) => physicalColumn(`c${c}`, t, records.map((kv) => cells(kv)[c]), true))
        const byCols = new DataFileWriter(LAYOUT, opts)
        byCols.writeColumns({ rows: records.length, columns })
        const b = byCols.finish()
        expect(b.bytes).toEqual(a.bytes)
        expect(b.stats).toEqual(a.stats)
        const back = await readDataFile(byteSource(a.bytes), LAYOUT)
        expect(back).toEqual(records)
      }),
      { numRuns: 60 },
    )
  }, 120_000)
})
