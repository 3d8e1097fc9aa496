import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import { parquetMetadata } from 'hyparquet'
import { parquetWriteBuffer } from 'hyparquet-writer'
import { describe, expect, it } from 'vitest'
import type { ByteSource } from '../lib/store/byte-source.ts'
import { byteSource } from '../lib/format/data-file-source.ts'
import { DataFileReader, readDataFile } from '../lib/format/data-file-reader.ts'
import { DataFileWriter, writeDataFile, type FileCompression } from '../lib/format/data-file-writer.ts'
import { type ColumnStats } from '../lib/format/data-file-stats.ts'
import { type DataFileLayout } from '../lib/format/data-file-layout.ts'
import { decimalByteLength } from '../lib/format/parquet-types.ts'
import { withZstd, zlibAny } from './helpers/zstd.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { DataField, DataType, KeyValue, RowKind, Value } from '../lib/types.ts'

const MAX = 2147483647
const t = (root: DataType['root'], extra: Partial<DataType> = {}): DataType => ({ root, nullable: true, ...extra })
const f = (id: number, name: string, type: DataType): DataField => ({ id, name, type })

// every supported type, nullable and not; the trimmed primary key is (k, ks)
const ALL_FIELDS: DataField[] = [
  f(0, 'k', t('BIGINT', { nullable: false })),
  f(1, 'ks', t('VARCHAR', { nullable: false, length: MAX })),
  f(2, 'b', t('BOOLEAN')),
  f(3, 'ti', t('TINYINT')),
  f(4, 'si', t('SMALLINT')),
  f(5, 'i', t('INT')),
  f(6, 'bi', t('BIGINT')),
  f(7, 'fl', t('FLOAT')),
  f(8, 'db', t('DOUBLE')),
  f(9, 'dec5', t('DECIMAL', { precision: 5, scale: 2 })),
  f(10, 'dec18', t('DECIMAL', { precision: 18, scale: 3 })),
  f(11, 'dec38', t('DECIMAL', { precision: 38, scale: 10 })),
  f(12, 'ch', t('CHAR', { length: 3 })),
  f(13, 's', t('VARCHAR', { length: MAX })),
  f(14, 'bin', t('BINARY', { length: 4 })),
  f(15, 'vb', t('VARBINARY', { length: MAX })),
  f(16, 'dt', t('DATE')),
  f(17, 'ts3', t('TIMESTAMP', { precision: 3 })),
  f(18, 'ts6', t('TIMESTAMP', { precision: 6 })),
  f(19, 'ts0', t('TIMESTAMP', { precision: 0 })),
  f(20, 'inn', t('INT', { nullable: false })),
]
const ALL: DataFileLayout = { keyFields: ALL_FIELDS.slice(0, 2), valueFields: ALL_FIELDS }

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

// strings mixing ASCII, 2- and 3-byte characters, the U+E000..U+FFFF range that UTF-16 order
// gets wrong, and astral characters; U+10FFFF is left out because a truncated max cannot be
// rounded up past it (covered by its own test)
const charArb = fc.oneof(
  fc.constantFrom('a', 'b', 'z', '0', ' ', 'é', 'ß', '中', '\ue000', '\uffff', '😀', '\u{10000}', '\u{10fffe}'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }).filter((c) => c !== '\u{10ffff}'),
)
const stringArb = fc.oneof(fc.string({ unit: charArb, maxLength: 6 }), fc.string({ unit: charArb, minLength: 10, maxLength: 140 }))

function nonNullArb(type: DataType): fc.Arbitrary<Value> {
  switch (type.root) {
    case 'BOOLEAN':
      return fc.boolean()
    case 'TINYINT':
      return fc.integer({ min: -128, max: 127 })
    case 'SMALLINT':
      return fc.integer({ min: -32768, max: 32767 })
    case 'INT':
    case 'DATE':
      return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })
    case 'BIGINT':
      return fc.oneof(fc.bigInt({ min: INT64_MIN, max: INT64_MAX }), fc.constantFrom(INT64_MIN, INT64_MAX, 0n, -1n))
    case 'FLOAT':
      return fc.float()
    case 'DOUBLE':
      return fc.double()
    case 'DECIMAL': {
      const limit = 10n ** BigInt(type.precision!) - 1n
      return fc.oneof(fc.bigInt({ min: -limit, max: limit }), fc.constantFrom(-limit, limit, 0n))
    }
    case 'CHAR':
    case 'VARCHAR':
      return stringArb
    case 'BINARY':
    case 'VARBINARY':
      return fc.uint8Array({ maxLength: 20 })
    case 'TIMESTAMP': {
      const unit = type.precision! <= 3 ? 10n ** BigInt(6 - type.precision!) : 1n
      const limit = 2n ** 62n / unit
      return fc.bigInt({ min: -limit, max: limit }).map((v) => v * unit)
    }
  }
  throw new Error(`no values generated for ${type.root}`)
}

const valueArb = (type: DataType): fc.Arbitrary<Value> => (type.nullable ? fc.option(nonNullArb(type), { nil: null, freq: 4 }) : nonNullArb(type))

function recordArb(layout: DataFileLayout): fc.Arbitrary<KeyValue> {
  const keyIndexes = layout.keyFields.map((k) => layout.valueFields.findIndex((v) => v.id === k.id))
  return fc
    .tuple(fc.tuple(...layout.valueFields.map((fld) => valueArb(fld.type))), fc.bigInt({ min: 0n, max: INT64_MAX }), fc.constantFrom<RowKind>(0, 1, 2, 3))
    .map(([value, seq, kind]) => ({ key: keyIndexes.map((i) => value[i]), seq, kind, value }))
}

// --- a brute-force model of the statistics (docs/format.md "File statistics") ------------------

const utf8 = new TextEncoder()

function modelOrder(type: DataType): ((a: Value, b: Value) => number) | null {
  switch (type.root) {
    case 'BINARY':
    case 'VARBINARY':
      return null // byte[] is not Comparable in Java: no min/max
    case 'CHAR':
    case 'VARCHAR':
      return (a, b) => Buffer.compare(utf8.encode(a as string), utf8.encode(b as string))
    case 'FLOAT':
    case 'DOUBLE':
      // Java Float.compare / Double.compare
      return (a, b) => {
        const rank = (x: number) => (Number.isNaN(x) ? 3 : Object.is(x, -0) ? 1 : x === 0 ? 2 : 0)
        const x = a as number
        const y = b as number
        if (x !== y && !Number.isNaN(x) && !Number.isNaN(y)) return x < y ? -1 : 1
        return rank(x) - rank(y)
      }
    case 'BOOLEAN':
      return (a, b) => (a === b ? 0 : a ? 1 : -1)
    default:
      return (a, b) => (a! < b! ? -1 : a! > b! ? 1 : 0)
  }
}

function modelStats(types: DataType[], rows: Value[][], truncate: number): ColumnStats {
  const out: ColumnStats = { min: [], max: [], nullCounts: [] }
  types.forEach((type, c) => {
    const values = rows.map((r) => r[c])
    const nonNull = values.filter((v) => v !== null)
    out.nullCounts.push(values.length - nonNull.length)
    const order = modelOrder(type)
    if (order === null || nonNull.length === 0) {
      out.min.push(null)
      out.max.push(null)
      return
    }
    const sorted = [...nonNull].sort(order)
    let min: Value = sorted[0]
    let max: Value = sorted[sorted.length - 1]
    if (typeof min === 'string' && typeof max === 'string') {
      min = Array.from(min).slice(0, truncate).join('')
      const cps = Array.from(max)
      if (cps.length > truncate) {
        const head = cps.slice(0, truncate).map((c) => c.codePointAt(0)!)
        max = null
        for (let i = head.length - 1; i >= 0 && max === null; i--) {
          const next = head[i] + 1 === 0xd800 ? 0xe000 : head[i] + 1
          if (next <= 0x10ffff) max = String.fromCodePoint(...head.slice(0, i), next)
        }
        if (max === null) min = null
      }
    }
    out.min.push(min)
    out.max.push(max)
  })
  return out
}

// --- helpers ---------------------------------------------------------------------------------

function counting(bytes: Uint8Array): ByteSource & { calls: [number, number][] } {
  const calls: [number, number][] = []
  return { size: bytes.length, calls, read: async (s, e) => (calls.push([s, e]), bytes.subarray(s, e)) }
}

async function collect(reader: DataFileReader, opts?: Parameters<DataFileReader['batches']>[0]): Promise<{ rows: KeyValue[]; sizes: number[] }> {
  const rows: KeyValue[] = []
  const sizes: number[] = []
  for await (const batch of reader.batches(opts)) {
    sizes.push(batch.length)
    rows.push(...batch)
  }
  return { rows, sizes }
}

const SMALL_FIELDS = [f(0, 'id', t('BIGINT', { nullable: false })), f(1, 'name', t('VARCHAR', { length: MAX })), f(2, 'score', t('DOUBLE'))]
const SMALL: DataFileLayout = { keyFields: [SMALL_FIELDS[0]], valueFields: SMALL_FIELDS }
const smallRows = (n: number, seq0 = 0n): KeyValue[] =>
  Array.from({ length: n }, (_, i) => ({ key: [BigInt(i)], seq: seq0 + BigInt(i), kind: 0 as RowKind, value: [BigInt(i), i % 5 === 0 ? null : `name-${i}`, i / 4] }))

// --- tests -----------------------------------------------------------------------------------

describe('data file round trip', () => {
  it('returns every record exactly, for random rows of every type, row-group size and compression', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(recordArb(ALL), { minLength: 1, maxLength: 40 }),
        fc.constantFrom<FileCompression>('none', 'snappy', 'gzip'),
        fc.integer({ min: 1, max: 16 }),
        async (records, compression, rowGroupRows) => {
          const { bytes, stats } = writeDataFile(ALL, records, { compression, rowGroupRows })
          expect(await readDataFile(byteSource(bytes), ALL)).toEqual(records)

          expect(stats.rowCount).toBe(records.length)
          expect(stats.minKey).toEqual(records[0].key)
          expect(stats.maxKey).toEqual(records[records.length - 1].key)
          const seqs = records.map((r) => r.seq)
          expect(stats.minSequenceNumber).toBe(seqs.reduce((a, b) => (b < a ? b : a)))
          expect(stats.maxSequenceNumber).toBe(seqs.reduce((a, b) => (b > a ? b : a)))
          expect(stats.deleteRowCount).toBe(records.filter((r) => r.kind === 1 || r.kind === 3).length)
          expect(stats.keyStats).toEqual(modelStats(ALL.keyFields.map((k) => k.type), records.map((r) => r.key), 128))
          expect(stats.valueStats).toEqual(modelStats(ALL.valueFields.map((v) => v.type), records.map((r) => r.value), 16))
        },
      ),
      { numRuns: 40 },
    )
  })

  const extremes: KeyValue[] = [
    {
      key: [INT64_MIN, ''],
      seq: 0n,
      kind: 0,
      value: [INT64_MIN, '', false, -128, -32768, -(2 ** 31), INT64_MIN, -3.4028234663852886e38, -Number.MAX_VALUE, -99999n, -(10n ** 18n - 1n), -(10n ** 38n - 1n), '', '', new Uint8Array(0), new Uint8Array(0), -(2 ** 31), -(2n ** 62n) * 1000n, -(2n ** 62n), -(2n ** 50n) * 1_000_000n, -(2 ** 31)],
    },
    {
      key: [-1n, 'é中😀'],
      seq: INT64_MAX,
      kind: 3,
      value: [-1n, 'é中😀', true, 0, 0, 0, -1n, -0, -0, 0n, 0n, 1n, '\u{10ffff}', 'a\u0000b\uffff\ue000😀\u{10ffff}', new Uint8Array([0, 255]), new Uint8Array([255, 0, 128]), 0, 0n, 0n, 0n, 0],
    },
    {
      key: [INT64_MAX, '\u{10ffff}'.repeat(3)],
      seq: 7n,
      kind: 2,
      value: [INT64_MAX, '\u{10ffff}'.repeat(3), null, 127, 32767, 2 ** 31 - 1, INT64_MAX, Number.NaN, Number.POSITIVE_INFINITY, 99999n, 10n ** 18n - 1n, 10n ** 38n - 1n, null, null, null, null, 2 ** 31 - 1, (2n ** 62n) * 1000n, 2n ** 62n, 1_700_000_000n * 1_000_000n, 2 ** 31 - 1],
    },
  ]

  it.each<FileCompression>(['none', 'snappy', 'gzip', 'zstd'])('keeps extreme values exactly (%s)', async (compression) => {
    const { bytes } = withZstd(() => writeDataFile(ALL, extremes, { compression }))
    const codec = parquetMetadata(bytes.slice().buffer).row_groups[0].columns[0].meta_data?.codec
    expect(codec).toBe({ none: 'UNCOMPRESSED', snappy: 'SNAPPY', gzip: 'GZIP', zstd: 'ZSTD', lz4: '' }[compression])
    const read = await readDataFile(byteSource(bytes), ALL)
    expect(read).toEqual(extremes)
    // toEqual alone does not promise to tell -0 from +0
    expect(Object.is(read[1].value[7], -0)).toBe(true)
    expect(Object.is(read[1].value[8], -0)).toBe(true)
    expect(read[0].value[11]).toBe(-(10n ** 38n - 1n))
  })

  it('passes file.compression.zstd-level to the encoder', () => {
    withZstd((calls) => {
      writeDataFile(SMALL, smallRows(10), { compression: 'zstd', zstdLevel: 7 })
      expect(calls.length).toBeGreaterThan(0)
      expect(calls.every((c) => c.params?.[100] === 7)).toBe(true)
    })
  })

  it('reads a file whose pages the zstd CLI compressed (golden file)', async () => {
    const bytes = new Uint8Array(readFileSync(new URL('./fixtures/data-file/zstd-cli.parquet', import.meta.url)))
    const layout: DataFileLayout = {
      keyFields: [f(0, 'id', t('INT', { nullable: false }))],
      valueFields: [f(0, 'id', t('INT', { nullable: false })), f(1, 'name', t('VARCHAR', { length: MAX })), f(2, 'amount', t('DECIMAL', { precision: 20, scale: 4 })), f(3, 'ts', t('TIMESTAMP', { precision: 6 }))],
    }
    const expected = Array.from({ length: 300 }, (_, i) => ({
      key: [i],
      seq: BigInt(1000 + i),
      kind: i % 10 === 9 ? 3 : 0,
      value: [i, i % 11 === 0 ? null : `name-${i % 7}`, BigInt(i) * 123456789012345n - 5n, 1700000000000000n + BigInt(i) * 1001n],
    }))
    const meta = parquetMetadata(bytes.slice().buffer)
    expect(meta.row_groups.map((g) => g.columns[0].meta_data?.codec)).toEqual(['ZSTD', 'ZSTD', 'ZSTD'])
    expect(await readDataFile(byteSource(bytes), layout)).toEqual(expected)
  })
})

describe('data file Parquet schema', () => {
  it('has Paimon’s column names, order, field ids, repetition and types', () => {
    const { bytes } = writeDataFile(ALL, [
      { key: [1n, 'x'], seq: 1n, kind: 0, value: ALL_FIELDS.map((fld) => (fld.name === 'k' ? 1n : fld.name === 'ks' ? 'x' : fld.name === 'inn' ? 0 : null)) },
    ])
    const { schema } = parquetMetadata(bytes.slice().buffer)
    const strip = (e: (typeof schema)[number]) => ({
      name: e.name,
      id: e.field_id,
      type: e.type,
      len: e.type_length,
      rep: e.repetition_type,
      conv: e.converted_type,
      logical: e.logical_type,
      ps: e.precision === undefined ? undefined : [e.precision, e.scale],
    })
    const TS = (unit: 'MILLIS' | 'MICROS') => ({ type: 'TIMESTAMP', isAdjustedToUTC: false, unit })
    const STR = { conv: 'UTF8', logical: { type: 'STRING' } }
    const dec = (p: number, s: number) => ({ conv: 'DECIMAL', logical: { type: 'DECIMAL', precision: p, scale: s }, ps: [p, s] })
    const col = (name: string, id: number, type: string, rep: string, more: object = {}) => ({ name, id, type, len: undefined, rep, conv: undefined, logical: undefined, ps: undefined, ...more })
    expect(schema[0]).toMatchObject({ name: 'paimon_schema', num_children: 25 })
    expect(schema.slice(1).map(strip)).toEqual([
      col('_KEY_k', 1073741823, 'INT64', 'REQUIRED'),
      col('_KEY_ks', 1073741824, 'BYTE_ARRAY', 'REQUIRED', STR),
      col('_SEQUENCE_NUMBER', 2147483646, 'INT64', 'REQUIRED'),
      col('_VALUE_KIND', 2147483645, 'INT32', 'REQUIRED', { conv: 'INT_8' }),
      col('k', 0, 'INT64', 'REQUIRED'),
      col('ks', 1, 'BYTE_ARRAY', 'REQUIRED', STR),
      col('b', 2, 'BOOLEAN', 'OPTIONAL'),
      col('ti', 3, 'INT32', 'OPTIONAL', { conv: 'INT_8' }),
      col('si', 4, 'INT32', 'OPTIONAL', { conv: 'INT_16' }),
      col('i', 5, 'INT32', 'OPTIONAL'),
      col('bi', 6, 'INT64', 'OPTIONAL'),
      col('fl', 7, 'FLOAT', 'OPTIONAL'),
      col('db', 8, 'DOUBLE', 'OPTIONAL'),
      col('dec5', 9, 'INT32', 'OPTIONAL', dec(5, 2)),
      col('dec18', 10, 'INT64', 'OPTIONAL', dec(18, 3)),
      col('dec38', 11, 'FIXED_LEN_BYTE_ARRAY', 'OPTIONAL', { ...dec(38, 10), len: 16 }),
      col('ch', 12, 'BYTE_ARRAY', 'OPTIONAL', STR),
      col('s', 13, 'BYTE_ARRAY', 'OPTIONAL', STR),
      col('bin', 14, 'BYTE_ARRAY', 'OPTIONAL'),
      col('vb', 15, 'BYTE_ARRAY', 'OPTIONAL'),
      col('dt', 16, 'INT32', 'OPTIONAL', { conv: 'DATE', logical: { type: 'DATE' } }),
      col('ts3', 17, 'INT64', 'OPTIONAL', { conv: 'TIMESTAMP_MILLIS', logical: TS('MILLIS') }),
      col('ts6', 18, 'INT64', 'OPTIONAL', { conv: 'TIMESTAMP_MICROS', logical: TS('MICROS') }),
      col('ts0', 19, 'INT64', 'OPTIONAL', { conv: 'TIMESTAMP_MILLIS', logical: TS('MILLIS') }),
      col('inn', 20, 'INT32', 'REQUIRED'),
    ])
  })

  it('sizes FIXED_LEN_BYTE_ARRAY decimals minimally (2^(8n-1) >= 10^p)', () => {
    expect([1, 2, 3, 9, 10, 18, 19, 21, 22, 28, 29, 38].map(decimalByteLength)).toEqual([1, 1, 2, 4, 5, 8, 9, 9, 10, 12, 13, 16])
    const layout: DataFileLayout = { keyFields: [], valueFields: [f(0, 'd', t('DECIMAL', { precision: 19, scale: 0 }))] }
    const v = 10n ** 19n - 1n
    const { bytes } = writeDataFile(layout, [{ key: [], seq: 0n, kind: 0, value: [v] }, { key: [], seq: 1n, kind: 0, value: [-v] }])
    expect(parquetMetadata(bytes.slice().buffer).schema[3].type_length).toBe(9)
    return readDataFile(byteSource(bytes), layout).then((rows) => expect(rows.map((r) => r.value[0])).toEqual([v, -v]))
  })
})

describe('DataFileReader', () => {
  const rows = smallRows(100)
  const { bytes } = writeDataFile(SMALL, rows, { rowGroupRows: 30, pageSize: 64 })

  it('writes row groups of rowGroupRows rows and streams them in bounded batches', async () => {
    expect(parquetMetadata(bytes.slice().buffer).row_groups.map((g) => Number(g.num_rows))).toEqual([30, 30, 30, 10])
    const reader = await DataFileReader.open(byteSource(bytes), SMALL)
    expect(reader.rowCount).toBe(100)
    const { rows: all, sizes } = await collect(reader, { batchRows: 12 })
    expect(all).toEqual(rows)
    expect(sizes).toEqual([12, 12, 6, 12, 12, 6, 12, 12, 6, 10])
  })

  it('reads the rows [rowStart, rowEnd) across row groups', async () => {
    const reader = await DataFileReader.open(byteSource(bytes), SMALL)
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: 110 }), fc.integer({ min: 0, max: 110 }), async (a, b) => {
        const [lo, hi] = a <= b ? [a, b] : [b, a]
        expect((await collect(reader, { rowStart: lo, rowEnd: hi })).rows).toEqual(rows.slice(lo, hi))
      }),
      { numRuns: 30 },
    )
  })

  it('materializes only the projected value columns', async () => {
    const reader = await DataFileReader.open(byteSource(bytes), SMALL)
    const { rows: projected } = await collect(reader, { valueColumns: ['score'], rowStart: 28, rowEnd: 33 })
    expect(projected).toEqual(rows.slice(28, 33).map((r) => ({ ...r, value: [null, null, r.value[2]] })))
    const { rows: none } = await collect(reader, { valueColumns: [] })
    expect(none[5]).toEqual({ key: [5n], seq: 5n, kind: 0, value: [null, null, null] })
    await expect(collect(reader, { valueColumns: ['nope'] })).rejects.toThrow(/valueColumns: "nope" is not a field; fields are id, name, score/)
  })

  it('reads a small file with one request and a large one by ranges', async () => {
    const small = counting(bytes)
    await readDataFile(small, SMALL)
    expect(small.calls).toEqual([[0, bytes.length]])

    const big = counting(bytes)
    expect(await readDataFile(big, SMALL, { tailBytes: 64 })).toEqual(rows)
    expect(big.calls.length).toBeGreaterThan(2)
    expect(big.calls.every(([s, e]) => s >= 0 && e <= bytes.length && s < e)).toBe(true)
  })

  it('refuses a file without a _KEY_ column, naming it', async () => {
    const noKey = writeDataFile({ keyFields: [], valueFields: SMALL_FIELDS }, rows.slice(0, 3).map((r) => ({ ...r, key: [] })))
    await expect(DataFileReader.open(byteSource(noKey.bytes), SMALL)).rejects.toThrow(
      /data file has no column _KEY_id .*thin-mode.*; its columns are: _SEQUENCE_NUMBER, _VALUE_KIND, id, name, score/,
    )
  })

  it('refuses a column whose Parquet type does not fit the layout', async () => {
    const wrong: DataFileLayout = { keyFields: [SMALL_FIELDS[0]], valueFields: [SMALL_FIELDS[0], f(1, 'name', t('BIGINT')), SMALL_FIELDS[2]] }
    await expect(DataFileReader.open(byteSource(bytes), wrong)).rejects.toThrow(/column name: Parquet BYTE_ARRAY \(STRING\) cannot be read as BIGINT/)
  })

  it('refuses bytes that are not Parquet', async () => {
    await expect(DataFileReader.open(byteSource(new Uint8Array(100)), SMALL)).rejects.toThrow(/not a readable Parquet file/)
  })

  it('reads files of other writers by column name: INT64 NANOS timestamps, BYTE_ARRAY decimals, INT32 kinds', async () => {
    const layout: DataFileLayout = {
      keyFields: [f(0, 'id', t('BIGINT', { nullable: false }))],
      valueFields: [f(0, 'id', t('BIGINT', { nullable: false })), f(1, 'ts', t('TIMESTAMP', { precision: 6 })), f(2, 'amount', t('DECIMAL', { precision: 38, scale: 2 }))],
    }
    const buf = parquetWriteBuffer({
      columnData: [
        { name: 'amount', data: [-(10n ** 37n) - 3n, null] },
        { name: 'ts', data: [-1n, 1_700_000_000_123_456_789n] },
        { name: 'id', data: [1n, 2n] },
        { name: '_VALUE_KIND', data: [0, 3] },
        { name: '_SEQUENCE_NUMBER', data: [10n, 11n] },
        { name: '_KEY_id', data: [1n, 2n] },
      ],
      schema: [
        { name: 'schema', num_children: 6 },
        { name: 'amount', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL', converted_type: 'DECIMAL', precision: 38, scale: 2 },
        { name: 'ts', type: 'INT64', repetition_type: 'OPTIONAL', logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: false, unit: 'NANOS' } },
        { name: 'id', type: 'INT64', repetition_type: 'REQUIRED' },
        { name: '_VALUE_KIND', type: 'INT32', repetition_type: 'REQUIRED' },
        { name: '_SEQUENCE_NUMBER', type: 'INT64', repetition_type: 'REQUIRED' },
        { name: '_KEY_id', type: 'INT64', repetition_type: 'REQUIRED' },
      ],
    })
    expect(await readDataFile(byteSource(new Uint8Array(buf)), layout)).toEqual([
      { key: [1n], seq: 10n, kind: 0, value: [1n, -1n, -(10n ** 37n) - 3n] },
      { key: [2n], seq: 11n, kind: 3, value: [2n, 1_700_000_000_123_456n, null] },
    ])
  })
})

describe('DataFileWriter', () => {
  it('collects stats of every column, truncating strings to 16 (value) and 128 (key) code points', () => {
    const long = 'x'.repeat(15) + 'ab' + 'c'.repeat(200)
    const layout: DataFileLayout = { keyFields: [f(1, 's', t('VARCHAR', { nullable: false, length: MAX }))], valueFields: [f(1, 's', t('VARCHAR', { nullable: false, length: MAX })), f(2, 'b', t('VARBINARY', { length: MAX }))] }
    const { stats } = writeDataFile(layout, [
      { key: [long], seq: 3n, kind: 0, value: [long, new Uint8Array([1])] },
      { key: ['😀'.repeat(20)], seq: 1n, kind: 1, value: ['😀'.repeat(20), null] },
    ])
    expect(stats.valueStats).toEqual({ min: ['x'.repeat(15) + 'a', null], max: ['😀'.repeat(15) + '😁', null], nullCounts: [0, 1] })
    expect(stats.keyStats).toEqual({ min: [long.slice(0, 128)], max: ['😀'.repeat(20)], nullCounts: [0] })
    expect(stats.minKey).toEqual([long])
    expect(stats.maxKey).toEqual(['😀'.repeat(20)])
    expect([stats.minSequenceNumber, stats.maxSequenceNumber, stats.deleteRowCount]).toEqual([1n, 3n, 1])
  })

  it('gives up min and max of a string column whose max cannot be rounded up', () => {
    const layout: DataFileLayout = { keyFields: [], valueFields: [f(0, 's', t('VARCHAR', { length: MAX }))] }
    const { stats } = writeDataFile(layout, [{ key: [], seq: 0n, kind: 0, value: ['\u{10ffff}'.repeat(17)] }, { key: [], seq: 1n, kind: 0, value: [null] }])
    expect(stats.valueStats).toEqual({ min: [null], max: [null], nullCounts: [1] })
  })

  it('orders floats as Java does: -0 below +0, NaN above everything', () => {
    const layout: DataFileLayout = { keyFields: [], valueFields: [f(0, 'd', t('DOUBLE')), f(1, 'e', t('FLOAT'))] }
    const { stats } = writeDataFile(layout, [
      { key: [], seq: 0n, kind: 0, value: [0, 0.1] },
      { key: [], seq: 1n, kind: 0, value: [-0, 1] },
      { key: [], seq: 2n, kind: 0, value: [Number.NaN, -2] },
    ])
    expect(Object.is(stats.valueStats.min[0], -0)).toBe(true)
    expect(stats.valueStats.max[0]).toBeNaN()
    expect(stats.valueStats.min[1]).toBe(-2)
    expect(stats.valueStats.max[1]).toBe(1)
    // the FLOAT column describes the stored float32, not the float64 it was given
    const { stats: s2 } = writeDataFile(layout, [{ key: [], seq: 0n, kind: 0, value: [null, 0.1] }])
    expect(s2.valueStats.max[1]).toBe(Math.fround(0.1))
  })

  it('rejects bad values with the column, the value and what was expected, leaving no partial row', () => {
    const w = new DataFileWriter(ALL)
    const row = (i: number, v: Value): KeyValue => {
      const value: Value[] = ALL_FIELDS.map((fld) => (fld.name === 'k' ? 1n : fld.name === 'ks' ? 'x' : fld.name === 'inn' ? 0 : null))
      value[i] = v
      return { key: [value[0], value[1]], seq: 1n, kind: 0, value }
    }
    expect(() => w.write(row(20, null))).toThrow(/column inn \(INT NOT NULL\): value null is not allowed/)
    expect(() => w.write(row(6, 5))).toThrow(/column bi \(BIGINT\): value 5 is not a bigint/)
    expect(() => w.write(row(3, 128))).toThrow(/column ti \(TINYINT\): value 128 is not an integer number in \[-128, 127\]/)
    expect(() => w.write(row(17, 1500n))).toThrow(/column ts3 \(TIMESTAMP\): value 1500n is not a whole number of milliseconds/)
    expect(() => w.write(row(9, 100000n))).toThrow(/column dec5 \(DECIMAL\).*DECIMAL\(5, 2\)/)
    expect(() => w.write(row(13, new Uint8Array(1)))).toThrow(StrataInputError)
    expect(() => w.write({ ...row(0, 1n), kind: 4 as RowKind })).toThrow(/_VALUE_KIND: value 4 is not a RowKind/)
    expect(() => w.write({ ...row(0, 1n), seq: 1 as unknown as bigint })).toThrow(/_SEQUENCE_NUMBER/)
    expect(() => w.write({ ...row(0, 1n), key: [1n] })).toThrow(/KeyValue.key: expected 2 values \(k, ks\), got 1/)
    expect(w.rowCount).toBe(0)
    w.write(row(0, 1n))
    const { stats } = w.finish()
    expect(stats.rowCount).toBe(1)
    expect(stats.valueStats.nullCounts[20]).toBe(0)
  })

  it('refuses unsupported types and compressions, naming them', () => {
    const ts9: DataFileLayout = { keyFields: [], valueFields: [f(0, 'event_time', t('TIMESTAMP', { precision: 9 }))] }
    expect(() => new DataFileWriter(ts9)).toThrow(/column event_time: TIMESTAMP\(9\) is not supported/)
    expect(() => new DataFileWriter(SMALL, { compression: 'lz4' })).toThrow(/file.compression 'lz4' is not supported/)
    expect(() => new DataFileWriter(SMALL, { compression: 'brotli' as FileCompression })).toThrow(/file.compression "brotli" is not one of/)
    const original = zlibAny.zstdCompressSync
    delete zlibAny.zstdCompressSync
    try {
      expect(() => new DataFileWriter(SMALL, { compression: 'zstd' })).toThrow(/file.compression 'zstd' needs node:zlib zstdCompressSync/)
    } finally {
      if (original) zlibAny.zstdCompressSync = original
    }
  })

  it('estimates its size from the encoded row groups plus the buffered rows', () => {
    const w = new DataFileWriter(SMALL, { rowGroupRows: 50 })
    const sizes: number[] = []
    for (const kv of smallRows(200)) {
      w.write(kv)
      sizes.push(w.estimatedSize)
    }
    // grows with every buffered row; drops to the encoded (compressed) size when a group is encoded
    expect(sizes.every((s, i) => i === 0 || i % 50 === 49 || s > sizes[i - 1])).toBe(true)
    const encoded = [sizes[49], sizes[99], sizes[149]]
    expect(encoded[0]).toBeGreaterThan(4)
    expect(encoded[1]).toBeGreaterThan(encoded[0])
    expect(encoded[2]).toBeGreaterThan(encoded[1])
    const { bytes } = w.finish()
    expect(bytes.length).toBeGreaterThan(encoded[2])
    expect(Buffer.from(bytes.subarray(0, 4)).toString()).toBe('PAR1')
  })

  it('writes the same file whatever size it expects; its buffer starts at that size, bounded, and refuses a size that is not one', () => {
    const file = (expectedBytes?: number) => {
      const w = new DataFileWriter(SMALL, { rowGroupRows: 50, expectedBytes })
      for (const kv of smallRows(200)) w.write(kv)
      return w.finish().bytes
    }
    const plain = file()
    expect(plain.buffer.byteLength).toBe(1 << 20)
    for (const [expected, start] of [[8 << 20, 8 << 20], [10, 1 << 20], [1 << 30, 256 << 20]]) {
      const bytes = file(expected)
      expect(Buffer.compare(bytes, plain)).toBe(0)
      expect(bytes.buffer.byteLength).toBe(start)
    }
    // a file larger than expected grows past it
    const w = new DataFileWriter(SMALL, { expectedBytes: 1 })
    for (const kv of smallRows(60_000)) w.write(kv)
    const big = w.finish().bytes
    expect(big.length).toBeGreaterThan(1 << 20)
    expect(big.buffer.byteLength).toBeGreaterThanOrEqual(big.length)
    expect(() => new DataFileWriter(SMALL, { expectedBytes: Number.NaN })).toThrow(/expectedBytes must be a number of bytes, got NaN/)
    expect(() => new DataFileWriter(SMALL, { expectedBytes: -1 })).toThrow(/expectedBytes must be a number of bytes, got -1/)
  })

  it('hands a released output buffer to the next writer it fits, which writes the same file into it', () => {
    const file = (w: DataFileWriter) => {
      for (const kv of smallRows(200)) w.write(kv)
      return w.finish().bytes
    }
    const first = new DataFileWriter(SMALL, { rowGroupRows: 50, expectedBytes: 3 << 20 })
    expect(() => first.release()).toThrow(/release before finish/)
    const firstBytes = Buffer.from(file(first))
    const fresh = Buffer.from(file(new DataFileWriter(SMALL, { rowGroupRows: 50 })))
    const written = new DataFileWriter(SMALL, { rowGroupRows: 50, expectedBytes: 3 << 20 })
    const before = file(written).buffer
    written.release()
    written.release() // a second release changes nothing
    // a writer that needs more than the spare holds starts its own buffer
    const larger = new DataFileWriter(SMALL, { rowGroupRows: 50, expectedBytes: 8 << 20 })
    expect(file(larger).buffer).not.toBe(before)
    const next = new DataFileWriter(SMALL, { rowGroupRows: 50, expectedBytes: 2 << 20 })
    const bytes = file(next)
    expect(bytes.buffer).toBe(before)
    expect(Buffer.from(bytes).equals(fresh)).toBe(true)
    expect(firstBytes.equals(fresh)).toBe(true)
    // taken: the writer after it gets a buffer of its own
    expect(file(new DataFileWriter(SMALL, { rowGroupRows: 50, expectedBytes: 2 << 20 })).buffer).not.toBe(before)
  })

  it('checks key order when asked, and refuses an empty or finished file', () => {
    const w = new DataFileWriter(SMALL, { assertSorted: true })
    w.write(smallRows(2)[1])
    expect(() => w.write(smallRows(2)[0])).toThrow(/key \[0n\] does not follow \[1n\]/)
    expect(() => new DataFileWriter(SMALL).finish()).toThrow(/no rows were written/)
    w.finish()
    expect(() => w.write(smallRows(1)[0])).toThrow(/after finish/)
  })
})
