// The compact cached footer (issue 18 part 3 follow-up): a table handle caches each data
// file's footer and page index as typed arrays (FileIndex), a few hundred bytes per row group,
// so the footer of a file at the default target-file-size (about 2,000 row groups) fits the
// default 16 MiB footer cache many times over instead of not at all (hyparquet's parsed objects
// took about 10 KiB per row group). Checked here:
// - the charge per row group is small, matches an estimate from the footer's shape, and a
//   cache sized for it keeps the footer (a second open costs no request);
// - the compact form says what hyparquet's parsed footer and page index say (row groups, chunk
//   ranges, page locations, key statistics and ColumnIndex), for key columns of every kind of
//   statistic;
// - lookups and scans (row ranges, projections, deletion vectors) through a footer from the
//   cache return exactly the written rows, for Strata's files and for another writer's (one
//   page per chunk, no page index, several row groups, a codec per column).

import fc from 'fast-check'
import { parquetMetadata, readColumnIndex, readOffsetIndex } from 'hyparquet'
import { parquetWriteBuffer } from 'hyparquet-writer'
import { describe, expect, it } from 'vitest'
import { rowComparator } from '../lib/format/compare.ts'
import type { ByteSource } from '../lib/store/byte-source.ts'
import { type DataFileFooter, DataFileReader, footerBytes } from '../lib/format/data-file-reader.ts'
import { type DataFileLayout, KEY_FIELD_PREFIX, SEQUENCE_NUMBER, VALUE_KIND } from '../lib/format/data-file-layout.ts'
import { writeDataFile } from '../lib/format/data-file-writer.ts'
import { deletionVectorOf } from '../lib/format/deletion-vector.ts'
import { type ChunkIndex, type GroupIndex, type PageLocation, STAT_PARSERS } from '../lib/format/page-index.ts'
import { ByteLru, approximateBytes } from '../lib/format/byte-cache.ts'
import type { DataField, DataType, KeyValue, RowKind, Value } from '../lib/types.ts'

const MAX = 2147483647
const t = (root: DataType['root'], extra: Partial<DataType> = {}): DataType => ({ root, nullable: false, ...extra })
const fld = (id: number, name: string, type: DataType): DataField => ({ id, name, type })

function countedSource(bytes: Uint8Array): ByteSource & { requests: number } {
  const src = {
    size: bytes.length,
    requests: 0,
    async read(start: number, end: number) {
      src.requests++
      return bytes.subarray(start, end)
    },
  }
  return src
}

async function scan(reader: DataFileReader, opts?: Parameters<DataFileReader['batches']>[0]): Promise<KeyValue[]> {
  const out: KeyValue[] = []
  for await (const batch of reader.batches(opts)) out.push(...batch)
  return out
}

// ---------------------------------------------------------------------------------------------
// The charge

/** A table of 10 fields (13 file columns), as the benchmark's (bench/footer-cache.ts). */
const WIDE: DataFileLayout = {
  keyFields: [fld(0, 'id', t('BIGINT'))],
  valueFields: [
    fld(0, 'id', t('BIGINT')),
    fld(1, 'customer', t('VARCHAR', { nullable: true, length: MAX })),
    fld(2, 'city', t('VARCHAR', { nullable: true, length: MAX })),
    fld(3, 'price', t('DECIMAL', { nullable: true, precision: 10, scale: 2 })),
    fld(4, 'qty', t('INT', { nullable: true })),
    fld(5, 'score', t('DOUBLE', { nullable: true })),
    fld(6, 'ts', t('TIMESTAMP', { nullable: true, precision: 3 })),
    fld(7, 'day', t('DATE', { nullable: true })),
    fld(8, 'paid', t('BOOLEAN', { nullable: true })),
    fld(9, 'note', t('VARCHAR', { nullable: true, length: MAX })),
  ],
}
const wideRow = (i: number): KeyValue => ({
  key: [BigInt(i * 2)],
  seq: BigInt(i),
  kind: 0,
  value: [BigInt(i * 2), `customer-${(i * 7919) % 100_003}`, ['Lisbon', 'Porto', 'Faro'][i % 3], BigInt((i * 37) % 100_000), i % 1000, i / 7, 1_700_000_000_000_000n + BigInt(i) * 1000n, 19_000 + (i % 365), i % 3 === 0, i % 5 === 0 ? null : `note ${i % 97}`],
})

describe('the cached footer', () => {
  // row groups of 16 KiB of values in pages of 1 KiB: about the pages per column chunk of the
  // default sizes (128 KiB, 8 KiB), in a file small enough to write in a test
  const rows = 60_000
  const records = Array.from({ length: rows }, (_, i) => wideRow(i))
  const { bytes } = writeDataFile(WIDE, records, { rowGroupBytes: 16 * 1024, pageSize: 1024 })

  it('charges under 1 KiB per row group, what its shape estimates, and a cache sized for a 2,000-row-group file keeps it', async () => {
    const big = new ByteLru<DataFileFooter, string>(1 << 30)
    const reader = await DataFileReader.open(countedSource(bytes), WIDE, { footerCache: big, cacheKey: 'f' })
    const groups = reader.groups.length
    expect(groups).toBeGreaterThan(200)
    const charge = big.stats().bytes
    // hyparquet's parsed footer and page index charged about 12 KiB per row group here
    expect(charge / groups).toBeLessThan(1024)
    const footer = big.get('f')!
    expect(charge).toBe(footerBytes(footer))
    // the cheap charge (typed arrays' lengths) against a walk of the whole footer
    expect(Math.abs(charge - approximateBytes(footer)) / charge).toBeLessThan(0.1)

    // 2,000 row groups at 1 KiB: the cache a default-size file's footer needs, 2 MiB
    const cache = new ByteLru<DataFileFooter, string>(2000 * 1024)
    const src = countedSource(bytes)
    await DataFileReader.open(src, WIDE, { footerCache: cache, cacheKey: 'f' })
    expect(cache.stats().entries).toBe(1)
    const before = src.requests
    const again = await DataFileReader.open(src, WIDE, { footerCache: cache, cacheKey: 'f' })
    expect(src.requests).toBe(before)
    // and it reads through the cached form: one lookup, one request
    const cmp = rowComparator([t('BIGINT')])
    for (const i of [0, 12_345, rows - 1]) {
      src.requests = 0
      expect((await again.lookup([BigInt(i * 2)], cmp))?.record).toEqual(records[i])
      expect(src.requests).toBeLessThanOrEqual(1)
    }
    expect(await again.lookup([7n], cmp)).toBeNull()
  })

  it('scans, with row ranges, projections and deletion vectors, return the written rows through the cached form', async () => {
    const cache = new ByteLru<DataFileFooter, string>(1 << 24)
    const src = countedSource(bytes)
    await DataFileReader.open(src, WIDE, { footerCache: cache, cacheKey: 'f' })
    const reader = await DataFileReader.open(src, WIDE, { footerCache: cache, cacheKey: 'f' })
    expect(await scan(reader)).toEqual(records)
    const dead = Array.from({ length: rows }, (_, i) => i).filter((i) => (i >= 10_000 && i < 30_000) || i % 7 === 0)
    const gone = new Set(dead)
    const projected = (kv: KeyValue): KeyValue => ({ ...kv, value: kv.value.map((v, j) => (j === 1 || j === 9 ? v : null)) })
    expect(await scan(reader, { rowStart: 5_000, rowEnd: 41_234, valueColumns: ['customer', 'note'], deleted: deletionVectorOf(dead, false) })).toEqual(
      records.slice(5_000, 41_234).filter((_, i) => !gone.has(i + 5_000)).map(projected),
    )
  })
})

// ---------------------------------------------------------------------------------------------
// The compact form says what hyparquet's objects say

/** The row groups as the reader kept them before the compact form: straight from hyparquet's parsed footer and page index. */
function hyparquetGroups(bytes: Uint8Array, layout: DataFileLayout): GroupIndex[] {
  const names = [...layout.keyFields.map((f) => KEY_FIELD_PREFIX + f.name), SEQUENCE_NUMBER, VALUE_KIND, ...layout.valueFields.map((f) => f.name)]
  const meta = parquetMetadata(bytes, { parsers: STAT_PARSERS } as Parameters<typeof parquetMetadata>[1])
  const view = (offset: bigint, length: number) => ({ view: new DataView(bytes.buffer, bytes.byteOffset + Number(offset), length), offset: 0 })
  let rowStart = 0
  return meta.row_groups.map((rg) => {
    const chunks = names.map((name, c): ChunkIndex => {
      const chunk = rg.columns.find((ch) => ch.meta_data!.path_in_schema[0] === name)!
      const m = chunk.meta_data!
      const start = Number(m.dictionary_page_offset || m.data_page_offset)
      const out: ChunkIndex = { start, end: start + Number(m.total_compressed_size) }
      let pages: PageLocation[] | undefined
      if (chunk.offset_index_offset !== undefined && chunk.offset_index_length) {
        pages = readOffsetIndex(view(chunk.offset_index_offset, chunk.offset_index_length)).page_locations
        out.pages = pages
      }
      if (c < layout.keyFields.length) {
        out.min = m.statistics?.min_value ?? undefined
        out.max = m.statistics?.max_value ?? undefined
        if (pages && chunk.column_index_offset !== undefined && chunk.column_index_length) {
          const element = meta.schema.find((e) => e.name === name)!
          const ci = readColumnIndex(view(chunk.column_index_offset, chunk.column_index_length), element, STAT_PARSERS as Parameters<typeof readColumnIndex>[2])
          if (ci.min_values.length === pages.length) {
            out.pageMin = ci.min_values.map((v) => v ?? undefined)
            out.pageMax = ci.max_values.map((v) => v ?? undefined)
            out.nullPages = ci.null_pages
          }
        }
      }
      return out
    })
    const group = { rowStart, rows: Number(rg.num_rows), chunks }
    rowStart += group.rows
    return group
  })
}

const KEY_TYPES: DataType[] = [
  t('BIGINT'),
  t('INT'),
  t('DATE'),
  t('DOUBLE'),
  t('BOOLEAN'),
  t('VARCHAR', { length: MAX }),
  t('VARBINARY', { length: MAX }),
  t('DECIMAL', { precision: 9, scale: 2 }),
  t('DECIMAL', { precision: 30, scale: 4 }),
  t('TIMESTAMP', { precision: 3 }),
]

function keyArb(type: DataType): fc.Arbitrary<Value> {
  switch (type.root) {
    case 'BIGINT':
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
    case 'INT':
    case 'DATE':
      return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 })
    case 'DOUBLE':
      return fc.double({ noNaN: true })
    case 'BOOLEAN':
      return fc.boolean()
    case 'VARCHAR':
      return fc.string({ unit: fc.constantFrom('a', 'b', 'é', '😀'), maxLength: 6 })
    case 'VARBINARY':
      return fc.uint8Array({ maxLength: 5 })
    case 'DECIMAL': {
      const limit = 10n ** BigInt(type.precision!) - 1n
      return fc.bigInt({ min: -limit, max: limit })
    }
    case 'TIMESTAMP':
      return fc.bigInt({ min: -(2n ** 50n), max: 2n ** 50n }).map((v) => v * 1000n)
    default:
      throw new Error(`no arbitrary for ${type.root}`)
  }
}

describe('the compact form', () => {
  it('holds the row groups, chunk ranges, page locations and key statistics hyparquet parses, for key columns of every statistics kind; lookups and scans through it find the written rows', async () => {
    const caseArb = fc
      .tuple(fc.constantFrom(...KEY_TYPES), fc.constantFrom(...KEY_TYPES))
      .chain(([a, b]) => {
        const types = [a, b]
        const cmp = rowComparator(types)
        return fc.record({
          types: fc.constant(types),
          keys: fc.uniqueArray(fc.tuple(...types.map(keyArb)), { minLength: 1, maxLength: 200, comparator: (x, y) => cmp(x, y) === 0 }),
          rowGroupBytes: fc.integer({ min: 40, max: 3000 }),
          pageSize: fc.integer({ min: 8, max: 500 }),
          deleted: fc.array(fc.nat(), { maxLength: 30 }),
        })
      })
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ types, keys, rowGroupBytes, pageSize, deleted }) => {
        const keyFields = types.map((ty, i) => fld(i, `k${i}`, ty))
        const layout: DataFileLayout = { keyFields, valueFields: [...keyFields, fld(2, 'v', t('VARCHAR', { nullable: true, length: MAX }))] }
        const cmp = rowComparator(types)
        const sorted = [...keys].sort(cmp)
        const records: KeyValue[] = sorted.map((key, i) => ({ key, seq: BigInt(i), kind: (i % 5 === 2 ? 3 : 0) as RowKind, value: [...key, i % 4 === 0 ? null : `v${i}`] }))
        const { bytes } = writeDataFile(layout, records, { rowGroupBytes, pageSize })
        const cache = new ByteLru<DataFileFooter, string>(1 << 24)
        const src = countedSource(bytes)
        await DataFileReader.open(src, layout, { footerCache: cache, cacheKey: 'f' })
        const reader = await DataFileReader.open(src, layout, { footerCache: cache, cacheKey: 'f' })
        expect(reader.groups).toEqual(hyparquetGroups(bytes, layout))
        for (const [i, r] of records.entries()) {
          if (i % 3 === 0) expect((await reader.lookup(r.key, cmp))?.record).toEqual(r)
        }
        const dead = [...new Set(deleted.map((d) => d % records.length))].sort((x, y) => x - y)
        expect(await scan(reader, { deleted: deletionVectorOf(dead, false) })).toEqual(records.filter((_, i) => !dead.includes(i)))
      }),
      { numRuns: 100 },
    )
  })

  it('reads another writer’s file the same: several row groups, one page per chunk, no page index, a codec per column', async () => {
    const layout: DataFileLayout = {
      keyFields: [fld(0, 'id', t('BIGINT'))],
      valueFields: [fld(0, 'id', t('BIGINT')), fld(1, 'name', t('VARCHAR', { nullable: true, length: MAX }))],
    }
    const n = 5000
    const ids = Array.from({ length: n }, (_, i) => BigInt(i * 3))
    const names = ids.map((id, i) => (i % 9 === 0 ? null : `name-${id}`))
    const buf = parquetWriteBuffer({
      columnData: [
        { name: '_KEY_id', data: ids, offsetIndex: false },
        { name: '_SEQUENCE_NUMBER', data: ids.map((id) => id + 1n), offsetIndex: false, codec: 'UNCOMPRESSED' },
        { name: '_VALUE_KIND', data: ids.map(() => 0), offsetIndex: false },
        { name: 'id', data: ids, offsetIndex: false },
        { name: 'name', data: names, offsetIndex: false, codec: 'UNCOMPRESSED' },
      ],
      schema: [
        { name: 'paimon_schema', num_children: 5 },
        { name: '_KEY_id', type: 'INT64', repetition_type: 'REQUIRED' },
        { name: '_SEQUENCE_NUMBER', type: 'INT64', repetition_type: 'REQUIRED' },
        { name: '_VALUE_KIND', type: 'INT32', repetition_type: 'REQUIRED' },
        { name: 'id', type: 'INT64', repetition_type: 'REQUIRED' },
        { name: 'name', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL', converted_type: 'UTF8' },
      ],
      rowGroupSize: 1200,
    })
    const bytes = new Uint8Array(buf)
    const records: KeyValue[] = ids.map((id, i) => ({ key: [id], seq: id + 1n, kind: 0, value: [id, names[i]] }))
    const cache = new ByteLru<DataFileFooter, string>(1 << 24)
    const src = countedSource(bytes)
    await DataFileReader.open(src, layout, { footerCache: cache, cacheKey: 'f' })
    const reader = await DataFileReader.open(src, layout, { footerCache: cache, cacheKey: 'f' })
    const groups = reader.groups
    expect(groups).toHaveLength(5)
    expect(groups.every((g) => g.chunks.every((c) => c.pages === undefined))).toBe(true)
    expect(groups).toEqual(hyparquetGroups(bytes, layout))
    const cmp = rowComparator([t('BIGINT')])
    for (const i of [0, 1199, 1200, 2500, n - 1]) expect((await reader.lookup([BigInt(i * 3)], cmp))?.record).toEqual(records[i])
    expect(await reader.lookup([4n], cmp)).toBeNull()
    const dead = Array.from({ length: n }, (_, i) => i).filter((i) => i < 1200 || i % 4 === 1)
    expect(await scan(reader, { rowStart: 700, rowEnd: 4100, deleted: deletionVectorOf(dead, false) })).toEqual(records.slice(700, 4100).filter((_, i) => !(i + 700 < 1200 || (i + 700) % 4 === 1)))
  })
})
