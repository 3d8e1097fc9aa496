import { readFileSync } from 'node:fs'
import { Readable } from 'node:stream'
import * as zlib from 'node:zlib'
import avro from 'avsc'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  canWriteCompression,
  readAvroFile,
  writeAvroFile,
  type ManifestCompression,
} from '../lib/format/avro.ts'
import {
  INDEX_MANIFEST_ENTRY_SCHEMA,
  MANIFEST_ENTRY_SCHEMA,
  MANIFEST_FILE_META_SCHEMA,
  readIndexManifest,
  readManifestFile,
  readManifestList,
  writeIndexManifest,
  writeManifestFile,
  writeManifestList,
} from '../lib/format/manifest.ts'
import type {
  DataFileMeta,
  IndexManifestEntry,
  ManifestEntry,
  ManifestFileMeta,
  SimpleStats,
} from '../lib/types.ts'
import { recodeContainer } from './fixtures/avro/recode.ts'
import { EMPTY_ROW, PARTITION_2024_05_01, keyRow, sampleManifestEntries } from './fixtures/avro/sample-entries.ts'

const FIXTURES = new URL('./fixtures/avro/', import.meta.url)
const fixture = (name: string) => new Uint8Array(readFileSync(new URL(name, FIXTURES)))
const fixtureJson = (name: string) => JSON.parse(readFileSync(new URL(name, FIXTURES), 'utf8'))

const LONG_MIN = -(2n ** 63n)
const LONG_MAX = 2n ** 63n - 1n
const SYNC = Uint8Array.from({ length: 16 }, (_, i) => 0xa0 + i)
const ALWAYS_WRITABLE: ManifestCompression[] = ['none', 'deflate', 'snappy']
const WRITABLE = (['none', 'deflate', 'snappy', 'zstd'] as const).filter(canWriteCompression)

// ---- independent Avro helpers (avsc's own container decoder/encoder, hand-made varints) ----

const bigLong = avro.types.LongType.__with({
  fromBuffer: (b: Buffer) => b.readBigInt64LE(0),
  toBuffer: (n: bigint) => {
    const b = Buffer.alloc(8)
    b.writeBigInt64LE(n)
    return b
  },
  fromJSON: (x: unknown) => BigInt(x as string),
  toJSON: (n: bigint) => n.toString(),
  isValid: (n: unknown) => typeof n === 'bigint',
  compare: (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0),
})

/** Decode with avsc's BlockDecoder: the header's schema text, codec and raw records. */
function avscDecode(bytes: Uint8Array): Promise<{ schemaText: string; codec: string; records: any[] }> {
  return new Promise((resolve, reject) => {
    let schemaText = ''
    let codec = ''
    const records: any[] = []
    const decoder = new avro.streams.BlockDecoder({
      parseHook: (schema: any) =>
        avro.Type.forSchema(schema, {
          typeHook: (s: any) => (s === 'long' || s?.type === 'long' ? bigLong : undefined),
          wrapUnions: 'always',
        }),
    })
    decoder.on('metadata', (_type: unknown, c: string, header: any) => {
      codec = c
      schemaText = header.meta['avro.schema'].toString('utf8')
    })
    decoder.on('data', (r: any) => records.push(r))
    decoder.on('end', () => resolve({ schemaText, codec, records }))
    decoder.on('error', reject)
    Readable.from([Buffer.from(bytes)]).pipe(decoder)
  })
}

/** Encode records with avsc's BlockEncoder (default avsc types: number longs, unwrapped unions). */
function avscEncode(schema: object, records: unknown[], codec = 'null'): Promise<Uint8Array> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    const encoder = new avro.streams.BlockEncoder(avro.Type.forSchema(schema as avro.Schema), { codec })
    encoder.on('data', (c: Buffer) => chunks.push(c))
    encoder.on('end', () => resolve(new Uint8Array(Buffer.concat(chunks))))
    encoder.on('error', reject)
    for (const r of records) encoder.write(r)
    encoder.end()
  })
}

function avroLong(n: number): number[] {
  const out: number[] = []
  let z = n >= 0 ? n * 2 : -n * 2 - 1
  while (z >= 0x80) {
    out.push((z % 0x80) | 0x80)
    z = Math.floor(z / 0x80)
  }
  out.push(z)
  return out
}
const avroBytes = (b: Uint8Array | string) => {
  const u = typeof b === 'string' ? new TextEncoder().encode(b) : b
  return [...avroLong(u.length), ...u]
}

function countOccurrences(hay: Uint8Array, needle: Uint8Array): number {
  let n = 0
  for (let i = 0; i + needle.length <= hay.length; i++) {
    if (needle.every((b, j) => hay[i + j] === b)) n++
  }
  return n
}

// ---- arbitraries ----

const long = fc.oneof(fc.constantFrom(LONG_MIN, LONG_MAX, 0n, -1n), fc.bigInt({ min: LONG_MIN, max: LONG_MAX }))
const int = fc.oneof(fc.constantFrom(-(2 ** 31), 2 ** 31 - 1, 0, -1), fc.integer())
const bytes = fc.uint8Array({ maxLength: 40 })
const str = fc.string({ unit: 'grapheme', maxLength: 24 })
const strings = fc.array(str, { maxLength: 4 })
const nullable = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null, freq: 3 })
const kind = fc.constantFrom(0 as const, 1 as const)

const simpleStats: fc.Arbitrary<SimpleStats> = fc.record({
  minValues: bytes,
  maxValues: bytes,
  nullCounts: nullable(fc.array(nullable(long), { maxLength: 6 })),
})

const dataFileMeta: fc.Arbitrary<DataFileMeta> = fc.record({
  fileName: str,
  fileSize: long,
  rowCount: long,
  minKey: bytes,
  maxKey: bytes,
  keyStats: simpleStats,
  valueStats: simpleStats,
  minSequenceNumber: long,
  maxSequenceNumber: long,
  schemaId: long,
  level: int,
  extraFiles: strings,
  creationTime: nullable(long),
  deleteRowCount: nullable(long),
  embeddedIndex: nullable(bytes),
  fileSource: nullable(int),
  valueStatsCols: nullable(strings),
  externalPath: nullable(str),
  firstRowId: nullable(long),
  writeCols: nullable(strings),
})

const manifestEntry: fc.Arbitrary<ManifestEntry> = fc.record({
  kind,
  partition: bytes,
  bucket: int,
  totalBuckets: int,
  file: dataFileMeta,
})

const manifestFileMeta: fc.Arbitrary<ManifestFileMeta> = fc.record({
  fileName: str,
  fileSize: long,
  numAddedFiles: long,
  numDeletedFiles: long,
  partitionStats: simpleStats,
  schemaId: long,
  minBucket: nullable(int),
  maxBucket: nullable(int),
  minLevel: nullable(int),
  maxLevel: nullable(int),
})

const indexManifestEntry: fc.Arbitrary<IndexManifestEntry> = fc.record({
  kind,
  partition: bytes,
  bucket: int,
  indexType: fc.constantFrom('DELETION_VECTORS', 'HASH'),
  fileName: str,
  fileSize: long,
  rowCount: long,
  dvRanges: nullable(
    fc.array(fc.record({ dataFileName: str, offset: int, length: int, cardinality: nullable(long) }), { maxLength: 4 }),
  ),
  externalPath: nullable(str),
})

const compression = fc.constantFrom(...WRITABLE)

// ---- fixed records ----

function allNullFile(): DataFileMeta {
  return {
    ...sampleManifestEntries(1)[0].file,
    keyStats: { minValues: EMPTY_ROW, maxValues: EMPTY_ROW, nullCounts: null },
    valueStats: { minValues: EMPTY_ROW, maxValues: EMPTY_ROW, nullCounts: null },
    creationTime: null,
    deleteRowCount: null,
    embeddedIndex: null,
    fileSource: null,
    valueStatsCols: null,
    externalPath: null,
    firstRowId: null,
    writeCols: null,
  }
}

function allSetFile(): DataFileMeta {
  return {
    ...sampleManifestEntries(1)[0].file,
    extraFiles: ['data-x-0.parquet.index'],
    keyStats: { minValues: keyRow(1n), maxValues: keyRow(21n), nullCounts: [0n] },
    valueStats: { minValues: EMPTY_ROW, maxValues: EMPTY_ROW, nullCounts: [1n, null, LONG_MAX] },
    creationTime: -1n,
    deleteRowCount: 7n,
    embeddedIndex: Uint8Array.of(1, 2, 3),
    fileSource: 1,
    valueStatsCols: ['dt', 'id'],
    externalPath: 's3://bucket/ext/data-x-0.parquet',
    firstRowId: LONG_MIN,
    writeCols: [],
  }
}

const dvEntry = (): IndexManifestEntry => ({
  kind: 0,
  partition: PARTITION_2024_05_01,
  bucket: 2,
  indexType: 'DELETION_VECTORS',
  fileName: 'index-0b6f6a8e-2d35-4a57-9a0e-3c2f4d1e9b70-0',
  fileSize: 63n,
  rowCount: 2n,
  // The two vectors of Paimon's dvindex-32 compatibility file (test/fixtures/paimon/dvindex-32).
  dvRanges: [
    { dataFileName: 'data-a-0.parquet', offset: 1, length: 24, cardinality: 2n },
    { dataFileName: 'data-b-0.parquet', offset: 33, length: 22, cardinality: null },
  ],
  externalPath: null,
})

const listMeta = (): ManifestFileMeta => ({
  fileName: 'manifest-9f856d52-5b33-4c10-8933-a0eddfaa25bf-0',
  fileSize: 1022n,
  numAddedFiles: 1n,
  numDeletedFiles: 0n,
  partitionStats: { minValues: PARTITION_2024_05_01, maxValues: PARTITION_2024_05_01, nullCounts: [0n] },
  schemaId: 0n,
  minBucket: 2,
  maxBucket: 2,
  minLevel: 0,
  maxLevel: 0,
})

// ---- tests ----

describe('writer schemas', () => {
  it('are exactly the Java writer schemas (test/fixtures/avro/*.schema.json)', () => {
    expect(MANIFEST_FILE_META_SCHEMA).toStrictEqual(fixtureJson('manifest-file-meta.schema.json'))
    expect(MANIFEST_ENTRY_SCHEMA).toStrictEqual(fixtureJson('manifest-entry.schema.json'))
    expect(INDEX_MANIFEST_ENTRY_SCHEMA).toStrictEqual(fixtureJson('index-manifest-entry.schema.json'))
  })

  it.each([
    ['manifest list', 'manifest-file-meta.schema.json', () => writeManifestList([listMeta()], 'none')],
    ['manifest', 'manifest-entry.schema.json', () => writeManifestFile(sampleManifestEntries(1), 'deflate')],
    ['index manifest', 'index-manifest-entry.schema.json', () => writeIndexManifest([dvEntry()], 'none')],
  ])('%s header embeds the Java schema as compact JSON (avsc reads the header)', async (_, name, write) => {
    const expected = fixtureJson(name)
    const { schemaText } = await avscDecode(write())
    expect(JSON.parse(schemaText)).toStrictEqual(expected)
    // Key order and spacing as Avro's Schema.toString(): compact, name/type/default order.
    expect(schemaText).toBe(JSON.stringify(expected))
  })

  it('keep the Java reader constraints (docs/format.md "Avro manifests")', () => {
    const top = MANIFEST_ENTRY_SCHEMA.fields
    expect(top.map((f) => f.name)).toEqual(['_VERSION', '_KIND', '_PARTITION', '_BUCKET', '_TOTAL_BUCKETS', '_FILE'])
    expect(top.every((f) => !Array.isArray(f.type))).toBe(true)
    const unions: any[] = []
    const walk = (node: any) => {
      if (Array.isArray(node?.type)) unions.push(node)
      if (Array.isArray(node)) node.forEach(walk)
      else if (node && typeof node === 'object') Object.values(node).forEach(walk)
    }
    walk([MANIFEST_FILE_META_SCHEMA, MANIFEST_ENTRY_SCHEMA, INDEX_MANIFEST_ENTRY_SCHEMA])
    expect(unions.length).toBeGreaterThan(20)
    for (const u of unions) {
      expect(u.type).toHaveLength(2)
      expect(u.type[0]).toBe('null')
      if ('name' in u) expect(u.default).toBeNull()
    }
    const file = top[5].type as any
    const creation = file.fields.find((f: any) => f.name === '_CREATION_TIME')
    expect(creation.type[1]).toEqual({ type: 'long', logicalType: 'timestamp-millis' })
  })
})

describe('container bytes', () => {
  it('an empty manifest list is a header only: magic, avro.schema, avro.codec, sync (byte vector)', () => {
    const schemaText = JSON.stringify(fixtureJson('manifest-file-meta.schema.json'))
    const expected = Uint8Array.from([
      ...new TextEncoder().encode('Obj'), 1,
      ...avroLong(2),
      ...avroBytes('avro.schema'), ...avroBytes(schemaText),
      ...avroBytes('avro.codec'), ...avroBytes('null'),
      0,
      ...SYNC,
    ])
    expect(writeManifestList([], 'none', { syncMarker: SYNC })).toEqual(expected)
    expect(readManifestList(expected)).toEqual([])
  })

  it('encodes a manifest-list record per the Avro spec (zig-zag longs, union branch indexes)', () => {
    const meta: ManifestFileMeta = {
      fileName: 'manifest-a-0',
      fileSize: 1022n,
      numAddedFiles: 1n,
      numDeletedFiles: 0n,
      partitionStats: { minValues: EMPTY_ROW, maxValues: EMPTY_ROW, nullCounts: [5n, null] },
      schemaId: LONG_MAX,
      minBucket: 2,
      maxBucket: null,
      minLevel: 0,
      maxLevel: -1,
    }
    const datum = [
      0x04, // _VERSION 2
      ...avroBytes('manifest-a-0'),
      0xfc, 0x0f, // _FILE_SIZE 1022 → zig-zag 2044
      0x02, // _NUM_ADDED_FILES 1
      0x00, // _NUM_DELETED_FILES 0
      ...avroBytes(EMPTY_ROW), ...avroBytes(EMPTY_ROW),
      0x02, 0x04, 0x02, 0x0a, 0x00, 0x00, // _NULL_COUNTS: branch 1, 2 items: (branch 1, 5), (branch 0), end
      0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, // _SCHEMA_ID 2^63-1
      0x02, 0x04, // _MIN_BUCKET 2
      0x00, // _MAX_BUCKET null
      0x02, 0x00, // _MIN_LEVEL 0
      0x02, 0x01, // _MAX_LEVEL -1
      0x00, 0x00, // _MIN_ROW_ID, _MAX_ROW_ID null
    ]
    const file = writeManifestList([meta], 'none', { syncMarker: SYNC })
    const header = writeManifestList([], 'none', { syncMarker: SYNC })
    expect(file).toEqual(Uint8Array.from([...header, 0x02, ...avroLong(datum.length), ...datum, ...SYNC]))
    expect(readManifestList(file)).toEqual([meta])
  })

  it('reproduces the golden null-codec manifest byte for byte', () => {
    const written = writeManifestFile(sampleManifestEntries(40), 'none', { syncMarker: SYNC, syncInterval: 4000 })
    expect(written).toEqual(fixture('manifest-40-null.avro'))
  })

  it('closes a block once its records reach the sync interval (Avro default 64000 bytes)', () => {
    const entries = sampleManifestEntries(700)
    const file = writeManifestFile(entries, 'none', { syncMarker: SYNC })
    const blocks = countOccurrences(file, SYNC) - 1
    expect(blocks).toBeGreaterThan(1)
    // ~330 bytes per record: every block but the last holds at least 64000 bytes.
    expect(blocks).toBeLessThanOrEqual(Math.ceil(file.length / 64000))
    expect(readManifestFile(file)).toEqual(entries)
  })

  it('writes files that avsc decodes to the same records (null and deflate codecs)', async () => {
    for (const c of ['none', 'deflate'] as const) {
      const entries = [{ ...sampleManifestEntries(1)[0], file: allSetFile() }]
      const { codec, records } = await avscDecode(writeManifestFile(entries, c))
      expect(codec).toBe(c === 'none' ? 'null' : 'deflate')
      expect(records).toHaveLength(1)
      const f = records[0]._FILE
      expect(f._FILE_NAME).toBe(entries[0].file.fileName)
      expect(f._FIRST_ROW_ID).toEqual({ long: LONG_MIN })
      expect(f._CREATION_TIME).toEqual({ long: -1n })
      expect(f._WRITE_COLS).toEqual({ array: [] })
      expect(f._WRITE_COLS_SEQUENCES).toBeNull()
    }
  })
})

describe('round trips', () => {
  it('manifest entries (fast-check, every writable codec)', () => {
    fc.assert(
      fc.property(fc.array(manifestEntry, { maxLength: 5 }), compression, (entries, c) => {
        expect(readManifestFile(writeManifestFile(entries, c))).toEqual(entries)
      }),
      { numRuns: 150 },
    )
  })

  it('manifest list records (fast-check, every writable codec)', () => {
    fc.assert(
      fc.property(fc.array(manifestFileMeta, { maxLength: 5 }), compression, (metas, c) => {
        expect(readManifestList(writeManifestList(metas, c))).toEqual(metas)
      }),
      { numRuns: 150 },
    )
  })

  it('index manifest entries (fast-check, every writable codec)', () => {
    fc.assert(
      fc.property(fc.array(indexManifestEntry, { maxLength: 5 }), compression, (entries, c) => {
        expect(readIndexManifest(writeIndexManifest(entries, c))).toEqual(entries)
      }),
      { numRuns: 150 },
    )
  })

  it.each(ALWAYS_WRITABLE)('every nullable DataFileMeta field null, and all set (%s)', (c) => {
    const entries: ManifestEntry[] = [
      { kind: 0, partition: EMPTY_ROW, bucket: 0, totalBuckets: 1, file: allNullFile() },
      { kind: 1, partition: PARTITION_2024_05_01, bucket: 3, totalBuckets: 4, file: allSetFile() },
    ]
    const back = readManifestFile(writeManifestFile(entries, c))
    expect(back).toEqual(entries)
    expect(back[1].file.embeddedIndex).toBeInstanceOf(Uint8Array)
    expect(typeof back[1].file.fileSize).toBe('bigint')
  })

  it('the sample APPEND entry keeps its partition and key bytes', () => {
    const [entry] = sampleManifestEntries(1)
    const [back] = readManifestFile(writeManifestFile([entry], 'snappy'))
    expect(Buffer.from(back.partition).toString('hex')).toBe(
      '0000000100000000000000000a00000010000000323032342d30352d3031000000000000',
    )
    expect(Buffer.from(back.file.minKey).toString('hex')).toBe('0000000100000000000000000100000000000000')
    expect(Buffer.from(back.file.maxKey).toString('hex')).toBe('0000000100000000000000001500000000000000')
    expect(back.file.creationTime).toBe(1720525500000n)
  })
})

describe('codecs', () => {
  const entries = sampleManifestEntries(40)

  it('writes the Avro codec name for each manifest.compression', async () => {
    for (const [c, name] of [['none', 'null'], ['deflate', 'deflate'], ['snappy', 'snappy']] as const) {
      const file = writeManifestFile(entries, c)
      const meta = readAvroFile(file)
      expect(meta.records).toHaveLength(40)
      expect(Buffer.from(file).includes(Buffer.from(`\x14avro.codec${String.fromCharCode(name.length * 2)}${name}`))).toBe(true)
    }
  })

  it('snappy blocks carry the big-endian CRC32 of the uncompressed data (checked on read)', () => {
    const file = writeManifestFile(entries, 'snappy', { syncMarker: SYNC })
    // The last block ends with its CRC right before the final sync marker.
    const end = file.length - 16
    const corrupt = file.slice()
    corrupt[end - 1] ^= 0xff
    expect(() => readManifestFile(corrupt)).toThrow(/CRC32 mismatch/)
  })

  it('reads zstandard blocks compressed by the zstd CLI (golden files, no content size / with checksum)', () => {
    expect(readManifestFile(fixture('manifest-40-zstandard.avro'))).toEqual(entries)
    expect(readManifestFile(fixture('manifest-40-zstandard-19.avro'))).toEqual(entries)
  })

  it('reads zstandard frames of raw blocks built per RFC 8878', () => {
    const plain = writeManifestFile(entries, 'none')
    // Frame header without content size (as a streaming writer emits) and window 2^17.
    const rawFrame = (data: Uint8Array) => {
      const out = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38]
      for (let at = 0; at === 0 || at < data.length; at += 1000) {
        const chunk = data.subarray(at, at + 1000)
        const last = at + 1000 >= data.length ? 1 : 0
        const header = last | (0 << 1) | (chunk.length << 3) // block type 0 = Raw_Block
        out.push(header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff, ...chunk)
      }
      return Uint8Array.from(out)
    }
    // Single-segment frame with a 2-byte content size (value − 256) and one RLE block when possible.
    const singleSegment = (data: Uint8Array) => {
      const size = data.length - 256
      const header = 1 | (0 << 1) | (data.length << 3)
      return Uint8Array.from([0x28, 0xb5, 0x2f, 0xfd, 0x60, size & 0xff, size >> 8, header & 0xff, (header >> 8) & 0xff, header >> 16, ...data])
    }
    expect(readManifestFile(recodeContainer(plain, 'zstandard', rawFrame))).toEqual(entries)
    const small = writeManifestFile(entries.slice(0, 2), 'none')
    expect(readManifestFile(recodeContainer(small, 'zstandard', singleSegment))).toEqual(entries.slice(0, 2))
  })

  it.skipIf(!canWriteCompression('zstd'))('writes zstandard (node:zlib zstd available)', () => {
    const file = writeManifestFile(entries, 'zstd')
    expect(Buffer.from(file).includes(Buffer.from('zstandard'))).toBe(true)
    expect(Buffer.from(file).includes(Buffer.from([0x28, 0xb5, 0x2f, 0xfd]))).toBe(true)
    expect(readManifestFile(file)).toEqual(entries)
  })

  it.runIf(!canWriteCompression('zstd'))('refuses zstd writes without node:zlib zstd, naming the option and deflate', () => {
    expect(() => writeManifestFile(entries, 'zstd')).toThrow(/manifest\.compression.*'zstd'.*deflate/)
  })

  it('reports writable codecs', () => {
    for (const c of ALWAYS_WRITABLE) expect(canWriteCompression(c)).toBe(true)
    expect(canWriteCompression('zstd')).toBe(typeof (zlib as Record<string, unknown>).zstdCompressSync === 'function')
    expect(canWriteCompression('lz4' as ManifestCompression)).toBe(false)
  })
})

describe('files written by pypaimon (other record names, fewer fields)', () => {
  const stats = (name: string) => ({
    type: 'record',
    name,
    fields: [
      { name: '_MIN_VALUES', type: 'bytes' },
      { name: '_MAX_VALUES', type: 'bytes' },
      { name: '_NULL_COUNTS', type: ['null', { type: 'array', items: ['null', 'long'] }], default: null },
    ],
  })
  const optional = (name: string, type: unknown) => ({ name, type: ['null', type], default: null })

  it('reads a manifest with records ManifestEntry/DataFileMeta and no _WRITE_COLS_SEQUENCES', async () => {
    const schema = {
      type: 'record',
      name: 'ManifestEntry',
      fields: [
        { name: '_VERSION', type: 'int' },
        { name: '_KIND', type: 'int' },
        { name: '_PARTITION', type: 'bytes' },
        { name: '_BUCKET', type: 'int' },
        { name: '_TOTAL_BUCKETS', type: 'int' },
        {
          name: '_FILE',
          type: {
            type: 'record',
            name: 'DataFileMeta',
            fields: [
              { name: '_FILE_NAME', type: 'string' },
              { name: '_FILE_SIZE', type: 'long' },
              { name: '_ROW_COUNT', type: 'long' },
              { name: '_MIN_KEY', type: 'bytes' },
              { name: '_MAX_KEY', type: 'bytes' },
              { name: '_KEY_STATS', type: stats('record_KEY_STATS') },
              { name: '_VALUE_STATS', type: stats('record_VALUE_STATS') },
              { name: '_MIN_SEQUENCE_NUMBER', type: 'long' },
              { name: '_MAX_SEQUENCE_NUMBER', type: 'long' },
              { name: '_SCHEMA_ID', type: 'long' },
              { name: '_LEVEL', type: 'int' },
              { name: '_EXTRA_FILES', type: { type: 'array', items: 'string' } },
              optional('_CREATION_TIME', { type: 'long', logicalType: 'timestamp-millis' }),
              optional('_DELETE_ROW_COUNT', 'long'),
              optional('_EMBEDDED_FILE_INDEX', 'bytes'),
              optional('_FILE_SOURCE', 'int'),
              optional('_VALUE_STATS_COLS', { type: 'array', items: 'string' }),
              optional('_EXTERNAL_PATH', 'string'),
              optional('_FIRST_ROW_ID', 'long'),
              optional('_WRITE_COLS', { type: 'array', items: 'string' }),
            ],
          },
        },
      ],
    }
    const b = (u: Uint8Array) => Buffer.from(u)
    const record = {
      _VERSION: 2,
      _KIND: 1,
      _PARTITION: b(PARTITION_2024_05_01),
      _BUCKET: 2,
      _TOTAL_BUCKETS: 4,
      _FILE: {
        _FILE_NAME: 'data-1f0e-0.parquet',
        _FILE_SIZE: 2103,
        _ROW_COUNT: 3,
        _MIN_KEY: b(keyRow(1n)),
        _MAX_KEY: b(keyRow(21n)),
        _KEY_STATS: { _MIN_VALUES: b(keyRow(1n)), _MAX_VALUES: b(keyRow(21n)), _NULL_COUNTS: [0] },
        _VALUE_STATS: { _MIN_VALUES: b(EMPTY_ROW), _MAX_VALUES: b(EMPTY_ROW), _NULL_COUNTS: null },
        _MIN_SEQUENCE_NUMBER: 0,
        _MAX_SEQUENCE_NUMBER: 2,
        _SCHEMA_ID: 0,
        _LEVEL: 0,
        _EXTRA_FILES: [],
        _CREATION_TIME: 1720525500000,
        _DELETE_ROW_COUNT: 0,
        _EMBEDDED_FILE_INDEX: null,
        _FILE_SOURCE: 0,
        _VALUE_STATS_COLS: [],
        _EXTERNAL_PATH: null,
        _FIRST_ROW_ID: null,
        _WRITE_COLS: null,
      },
    }
    const [entry] = readManifestFile(await avscEncode(schema, [record], 'deflate'))
    expect(entry).toEqual({
      kind: 1,
      partition: PARTITION_2024_05_01,
      bucket: 2,
      totalBuckets: 4,
      file: {
        fileName: 'data-1f0e-0.parquet',
        fileSize: 2103n,
        rowCount: 3n,
        minKey: keyRow(1n),
        maxKey: keyRow(21n),
        keyStats: { minValues: keyRow(1n), maxValues: keyRow(21n), nullCounts: [0n] },
        valueStats: { minValues: EMPTY_ROW, maxValues: EMPTY_ROW, nullCounts: null },
        minSequenceNumber: 0n,
        maxSequenceNumber: 2n,
        schemaId: 0n,
        level: 0,
        extraFiles: [],
        creationTime: 1720525500000n,
        deleteRowCount: 0n,
        embeddedIndex: null,
        fileSource: 0,
        valueStatsCols: [],
        externalPath: null,
        firstRowId: null,
        writeCols: null,
      },
    } satisfies ManifestEntry)
  })

  it('reads a manifest list without bucket/level ranges as nulls', async () => {
    const schema = {
      type: 'record',
      name: 'ManifestFileMeta',
      fields: [
        { name: '_VERSION', type: 'int' },
        { name: '_FILE_NAME', type: 'string' },
        { name: '_FILE_SIZE', type: 'long' },
        { name: '_NUM_ADDED_FILES', type: 'long' },
        { name: '_NUM_DELETED_FILES', type: 'long' },
        { name: '_PARTITION_STATS', type: stats('record_PARTITION_STATS') },
        { name: '_SCHEMA_ID', type: 'long' },
        optional('_MIN_ROW_ID', 'long'),
        optional('_MAX_ROW_ID', 'long'),
      ],
    }
    const record = {
      _VERSION: 2,
      _FILE_NAME: 'manifest-abc-0',
      _FILE_SIZE: 1500,
      _NUM_ADDED_FILES: 3,
      _NUM_DELETED_FILES: 1,
      _PARTITION_STATS: { _MIN_VALUES: Buffer.from(EMPTY_ROW), _MAX_VALUES: Buffer.from(EMPTY_ROW), _NULL_COUNTS: [] },
      _SCHEMA_ID: 1,
      _MIN_ROW_ID: null,
      _MAX_ROW_ID: null,
    }
    expect(readManifestList(await avscEncode(schema, [record]))).toEqual([
      {
        fileName: 'manifest-abc-0',
        fileSize: 1500n,
        numAddedFiles: 3n,
        numDeletedFiles: 1n,
        partitionStats: { minValues: EMPTY_ROW, maxValues: EMPTY_ROW, nullCounts: [] },
        schemaId: 1n,
        minBucket: null,
        maxBucket: null,
        minLevel: null,
        maxLevel: null,
      },
    ])
  })

  it('reads an index manifest whose deletion-vector items are a bare record', async () => {
    const schema = {
      type: 'record',
      name: 'IndexManifestEntry',
      fields: [
        { name: '_VERSION', type: 'int' },
        { name: '_KIND', type: 'int' },
        { name: '_PARTITION', type: 'bytes' },
        { name: '_BUCKET', type: 'int' },
        { name: '_INDEX_TYPE', type: 'string' },
        { name: '_FILE_NAME', type: 'string' },
        { name: '_FILE_SIZE', type: 'long' },
        { name: '_ROW_COUNT', type: 'long' },
        optional('_DELETIONS_VECTORS_RANGES', {
          type: 'array',
          items: {
            type: 'record',
            name: 'DeletionVectorMeta',
            fields: [
              { name: 'f0', type: 'string' },
              { name: 'f1', type: 'int' },
              { name: 'f2', type: 'int' },
              optional('_CARDINALITY', 'long'),
            ],
          },
        }),
        optional('_EXTERNAL_PATH', 'string'),
      ],
    }
    const entry = dvEntry()
    const record = {
      _VERSION: 1,
      _KIND: 0,
      _PARTITION: Buffer.from(entry.partition),
      _BUCKET: 2,
      _INDEX_TYPE: 'DELETION_VECTORS',
      _FILE_NAME: entry.fileName,
      _FILE_SIZE: 63,
      _ROW_COUNT: 2,
      _DELETIONS_VECTORS_RANGES: entry.dvRanges!.map((d) => ({
        f0: d.dataFileName,
        f1: d.offset,
        f2: d.length,
        _CARDINALITY: d.cardinality === null ? null : Number(d.cardinality),
      })),
      _EXTERNAL_PATH: null,
    }
    expect(readIndexManifest(await avscEncode(schema, [record]))).toEqual([entry])
  })
})

describe('reader checks', () => {
  it('rejects a ManifestEntry _VERSION other than 2, naming it', () => {
    const [entry] = sampleManifestEntries(1)
    const file = readAvroFile(writeManifestFile([entry], 'none'))
    const v1 = writeAvroFile(MANIFEST_ENTRY_SCHEMA, [{ ...file.records[0], _VERSION: 1 }], 'none')
    expect(() => readManifestFile(v1)).toThrow(/manifest entry #0: _VERSION is 1, expected 2 .*recreated/)
  })

  it('rejects an IndexManifestEntry _VERSION other than 1 and a ManifestFileMeta one other than 2', () => {
    const idx = readAvroFile(writeIndexManifest([dvEntry()], 'none')).records[0]
    expect(() => readIndexManifest(writeAvroFile(INDEX_MANIFEST_ENTRY_SCHEMA, [{ ...idx, _VERSION: 2 }], 'none'))).toThrow(
      /_VERSION is 2, expected 1/,
    )
    const list = readAvroFile(writeManifestList([listMeta()], 'none')).records[0]
    expect(() => readManifestList(writeAvroFile(MANIFEST_FILE_META_SCHEMA, [{ ...list, _VERSION: 3 }], 'none'))).toThrow(
      /manifest list record #0: _VERSION is 3, expected 2/,
    )
  })

  it('rejects a file without _VERSION', () => {
    const schema = { type: 'record', name: 'r', fields: [{ name: '_KIND', type: 'int' }] }
    expect(() => readManifestFile(writeAvroFile(schema, [{ _KIND: 0 }], 'none'))).toThrow(/_VERSION is missing/)
  })

  it('rejects corrupt containers with a clear message', () => {
    const good = writeManifestFile(sampleManifestEntries(2), 'none')
    expect(() => readManifestFile(Uint8Array.of(1, 2, 3, 4, 5))).toThrow(/magic/)
    expect(() => readManifestFile(good.subarray(0, good.length - 5))).toThrow(/truncated/)
    const badSync = good.slice()
    badSync[badSync.length - 1] ^= 1
    expect(() => readManifestFile(badSync)).toThrow(/sync marker/)
    const xz = recodeContainer(good, 'xz', (d) => d)
    expect(() => readManifestFile(xz)).toThrow(/codec 'xz'/)
  })
})

describe('writer checks', () => {
  it('names the field of a value that does not fit its Avro type', () => {
    const [entry] = sampleManifestEntries(1)
    const bad = { ...entry, file: { ...entry.file, fileSize: 1.5 as unknown as bigint } }
    expect(() => writeManifestFile([bad], 'none')).toThrow(/record #0\._FILE\._FILE_SIZE: 1\.5, expected a long/)
    const big = { ...entry, file: { ...entry.file, rowCount: LONG_MAX + 1n } }
    expect(() => writeManifestFile([big], 'none')).toThrow(/_ROW_COUNT: 9223372036854775808n/)
    const kind = { ...entry, kind: 2 as unknown as 0 }
    expect(() => writeManifestFile([kind], 'none')).toThrow(/ManifestEntry\.kind: 2, expected 0 \(ADD\) or 1 \(DELETE\)/)
    const bucket = { ...entry, bucket: 2 ** 31 }
    expect(() => writeManifestFile([bucket], 'none')).toThrow(/_BUCKET: 2147483648, expected an int/)
  })

  it('rejects a sync marker that is not 16 bytes', () => {
    expect(() => writeManifestList([], 'none', { syncMarker: new Uint8Array(8) })).toThrow(/sync marker: length 8/)
  })
})
