// Issue 18 parts 3 and 5: point lookups that read kilobytes, and deletion-vector scans that
// skip what their vectors drop. Measured by counting requests and bytes through the store
// (or the byte source), never by a clock:
// - a table handle caches data-file footers (bounded by bytes, least recently used out), so
//   a warm lookup opens no footer;
// - data files carry Parquet's page index for the key columns, and a lookup reads only the
//   row group and key pages whose statistics can hold the key, then the row's pages;
// - a handle that knows snapshot N asks only whether N+1 exists;
// - a scan with a deletion vector does not decode row groups (or page runs) it drops whole.
// Results are checked against simple models: a linear search of the written records, the
// full scan of the table.

import fc from 'fast-check'
import { parquetMetadata } from 'hyparquet'
import { describe, expect, it } from 'vitest'
import { rowComparator } from '../lib/format/compare.ts'
import type { ByteSource } from '../lib/store/byte-source.ts'
import { type DataFileFooter, DataFileReader, newDataFileReadStats, readDataFile } from '../lib/format/data-file-reader.ts'
import { type DataFileLayout } from '../lib/format/data-file-layout.ts'
import { byteSource } from '../lib/format/data-file-source.ts'
import { writeDataFile } from '../lib/format/data-file-writer.ts'
import { deletionVectorOf } from '../lib/format/deletion-vector.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { ByteLru } from '../lib/format/byte-cache.ts'
import { lookup, newReadStats, readAll } from '../lib/read/table-read.ts'
import { InterceptingStore, type StoreOp } from '../lib/store/intercepting-store.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { Table } from '../lib/handle/table.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { type DataField, type DataType, type KeyValue, type RowKind, type Value, RowKind as RK } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { startEmbeddedBackend } from '../local/embedded.ts'

const MAX = 2147483647
const t = (root: DataType['root'], extra: Partial<DataType> = {}): DataType => ({ root, nullable: false, ...extra })
const fld = (id: number, name: string, type: DataType): DataField => ({ id, name, type })

/** A byte source that counts its reads and the bytes they return. */
function countedSource(bytes: Uint8Array): ByteSource & { requests: number; bytesRead: number } {
  const src = {
    size: bytes.length,
    requests: 0,
    bytesRead: 0,
    async read(start: number, end: number) {
      src.requests++
      src.bytesRead += end - start
      return bytes.subarray(start, end)
    },
  }
  return src
}

/** A store that counts requests (by operation) and the bytes GETs return. */
class CountingStore extends InterceptingStore {
  calls: { op: StoreOp; key: string; bytes: number }[] = []
  reset(): void {
    this.calls = []
  }
  get requests(): number {
    return this.calls.length
  }
  get bytes(): number {
    return this.calls.reduce((n, c) => n + c.bytes, 0)
  }
  protected async call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
    const call = { op, key, bytes: 0 }
    this.calls.push(call)
    const out = await run()
    if (out instanceof Uint8Array) call.bytes = out.length
    return out
  }
}

// ---------------------------------------------------------------------------------------------
// Keys of every type, against a linear search of the file's records

const charArb = fc.constantFrom('a', 'b', 'z', '0', ' ', 'é', '中', '\ue000', '\uffff', '😀', '\u{10000}')
const KEY_TYPES: DataType[] = [
  t('TINYINT'),
  t('SMALLINT'),
  t('INT'),
  t('BIGINT'),
  t('FLOAT'),
  t('DOUBLE'),
  t('DECIMAL', { precision: 5, scale: 2 }),
  t('DECIMAL', { precision: 18, scale: 3 }),
  t('DECIMAL', { precision: 30, scale: 4 }),
  t('CHAR', { length: 4 }),
  t('VARCHAR', { length: MAX }),
  t('BINARY', { length: 3 }),
  t('VARBINARY', { length: MAX }),
  t('DATE'),
  t('TIMESTAMP', { precision: 0 }),
  t('TIMESTAMP', { precision: 3 }),
  t('TIMESTAMP', { precision: 6 }),
  t('BOOLEAN'),
]

function keyArb(type: DataType): fc.Arbitrary<Value> {
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
      return fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -50n, max: 50n }))
    case 'FLOAT':
      return fc.float()
    case 'DOUBLE':
      return fc.double()
    case 'DECIMAL': {
      const limit = 10n ** BigInt(type.precision!) - 1n
      return fc.oneof(fc.bigInt({ min: -limit, max: limit }), fc.bigInt({ min: -50n, max: 50n }))
    }
    case 'CHAR':
    case 'VARCHAR':
      return fc.string({ unit: charArb, maxLength: 5 })
    case 'BINARY':
    case 'VARBINARY':
      return fc.uint8Array({ maxLength: 4 })
    case 'TIMESTAMP': {
      const unit = type.precision! <= 3 ? 10n ** BigInt(6 - type.precision!) : 1n
      const limit = 2n ** 60n / unit
      return fc.oneof(fc.bigInt({ min: -limit, max: limit }), fc.bigInt({ min: -50n, max: 50n })).map((v) => v * unit)
    }
    default:
      throw new Error(`no arbitrary for ${type.root}`)
  }
}

function layoutOf(keyTypes: DataType[]): DataFileLayout {
  const keys = keyTypes.map((ty, i) => fld(i, `k${i}`, ty))
  return { keyFields: keys, valueFields: [...keys, fld(keys.length, 'v', t('VARCHAR', { nullable: true, length: MAX }))] }
}

describe('DataFileReader.lookup', () => {
  it('finds exactly the rows a linear search finds, for random keys of every type, composite keys, row-group and page sizes and deletion vectors', async () => {
    const caseArb = fc
      .tuple(fc.constantFrom(...KEY_TYPES), fc.boolean())
      .chain(([type, composite]) => {
        const types = composite ? [type, t('INT')] : type.root === 'BOOLEAN' ? [type, t('SMALLINT')] : [type]
        const rowKey = fc.tuple(...types.map(keyArb))
        const cmp = rowComparator(types)
        return fc.record({
          types: fc.constant(types),
          keys: fc.uniqueArray(rowKey, { minLength: 1, maxLength: 250, comparator: (a, b) => cmp(a, b) === 0 }),
          probes: fc.array(rowKey, { maxLength: 15 }),
          rowGroupBytes: fc.integer({ min: 40, max: 4000 }),
          pageSize: fc.integer({ min: 8, max: 600 }),
          deleted: fc.array(fc.nat(), { maxLength: 20 }),
        })
      })
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ types, keys, probes, rowGroupBytes, pageSize, deleted }) => {
        const layout = layoutOf(types)
        const cmp = rowComparator(types)
        const stored = (k: Value[]) => k.map((v, i) => (types[i].root === 'FLOAT' ? Math.fround(v as number) : v))
        const sorted = keys.map(stored).sort(cmp)
        const records: KeyValue[] = sorted.map((key, i) => ({ key, seq: BigInt(i), kind: (i % 7 === 3 ? 3 : 0) as RowKind, value: [...key, `v${i}`] }))
        const { bytes } = writeDataFile(layout, records, { rowGroupBytes, pageSize })
        const footers = new ByteLru<DataFileFooter, string>(1 << 24)
        const dead = new Set(deleted.map((d) => d % records.length))
        const src = countedSource(bytes)
        const reader = await DataFileReader.open(src, layout, { footerCache: footers, cacheKey: 'f' })
        const wanted = [...sorted.filter((_, i) => i % 9 === 0), ...probes.map(stored)]
        for (const probe of wanted) {
          const at = records.findIndex((r) => cmp(r.key, probe) === 0)
          const hit = await reader.lookup(probe, cmp, { live: (pos) => !dead.has(pos) })
          if (at < 0) {
            expect(hit).toBeNull()
          } else {
            expect(hit?.pos).toBe(at)
            expect(hit?.record ?? null).toEqual(dead.has(at) ? null : records[at])
          }
        }
        // the same file again: its footer from the cache, no request
        const before = src.requests
        await DataFileReader.open(src, layout, { footerCache: footers, cacheKey: 'f' })
        expect(src.requests).toBe(before)
      }),
      { numRuns: 150 },
    )
  })

  const BIG: DataFileLayout = layoutOf([t('BIGINT')])
  const bigRecords = (n: number): KeyValue[] =>
    Array.from({ length: n }, (_, i) => ({ key: [BigInt(i * 3)], seq: BigInt(i), kind: 0 as RowKind, value: [BigInt(i * 3), `name-${i % 1000}-${'x'.repeat(i % 13)}`] }))

  it('reads one request of at most 64 KiB per lookup in a 200,000-row file at the default sizes; a whole-file read would be many times that', async () => {
    const records = bigRecords(200_000)
    const { bytes } = writeDataFile(BIG, records)
    const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer)
    expect(meta.row_groups.length).toBeGreaterThan(10)
    expect(bytes.length).toBeGreaterThan(20 * 64 * 1024)
    const src = countedSource(bytes)
    const reader = await DataFileReader.open(src, BIG)
    const cmp = rowComparator([t('BIGINT')])
    for (const i of [0, 1, 77_777, 123_456, 199_999]) {
      src.requests = 0
      src.bytesRead = 0
      const hit = await reader.lookup([BigInt(i * 3)], cmp)
      expect(hit?.record).toEqual(records[i])
      // none when the group lies in the footer read (the file's last 512 KiB)
      expect(src.requests).toBe(i >= 190_000 ? 0 : 1)
      expect(src.bytesRead).toBeLessThanOrEqual(64 * 1024)
    }
    // a key between two rows: pruned to one page of one group, no row read
    src.requests = 0
    src.bytesRead = 0
    expect(await reader.lookup([BigInt(3 * 5000 + 1)], cmp)).toBeNull()
    expect(src.requests).toBe(1)
    expect(src.bytesRead).toBeLessThanOrEqual(64 * 1024)
    // outside every group's statistics: nothing read
    src.requests = 0
    expect(await reader.lookup([-1n], cmp)).toBeNull()
    expect(await reader.lookup([10n ** 12n], cmp)).toBeNull()
    expect(src.requests).toBe(0)
  })

  it('in a row group larger than one request should span, reads the key pages by the ColumnIndex, then the row pages by the OffsetIndex', async () => {
    const records = bigRecords(50_000)
    // one 50,000-row group of 4 KiB pages: the old layout's large groups, with a page index
    const { bytes } = writeDataFile(BIG, records, { rowGroupBytes: 1 << 30, rowGroupRows: 1 << 20, pageSize: 4096 })
    const src = countedSource(bytes)
    const reader = await DataFileReader.open(src, BIG)
    expect(reader.groups).toHaveLength(1)
    const [keyChunk, , , , valueChunk] = reader.groups[0].chunks
    expect(keyChunk.pageMin!.length).toBeGreaterThan(50)
    expect(valueChunk.pages!.length).toBeGreaterThan(50)
    expect(valueChunk.pageMin).toBeUndefined() // only key columns carry a ColumnIndex
    const cmp = rowComparator([t('BIGINT')])
    src.requests = 0
    src.bytesRead = 0
    expect((await reader.lookup([BigInt(3 * 31_337)], cmp))?.record).toEqual(records[31_337])
    // key pages, then the row's pages in the other columns (far apart in a large group)
    expect(src.requests).toBeGreaterThanOrEqual(2)
    expect(src.bytesRead).toBeLessThan(64 * 1024)
    expect(src.bytesRead).toBeLessThan(bytes.length / 20)
  })

  it('writes a ColumnIndex for the key columns and an OffsetIndex for every column with more than one page', () => {
    const layout = layoutOf([t('VARCHAR', { length: MAX }), t('INT')])
    const records: KeyValue[] = Array.from({ length: 5000 }, (_, i) => ({ key: [`k${String(i).padStart(6, '0')}`, i], seq: BigInt(i), kind: 0 as RowKind, value: [`k${String(i).padStart(6, '0')}`, i, `v${i}`] }))
    const { bytes } = writeDataFile(layout, records, { pageSize: 1024, rowGroupBytes: 1 << 30 })
    const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length) as ArrayBuffer)
    for (const chunk of meta.row_groups[0].columns) {
      const name = chunk.meta_data!.path_in_schema[0]
      expect(chunk.offset_index_offset, name).toBeDefined()
      if (name.startsWith('_KEY_')) expect(chunk.column_index_offset, name).toBeDefined()
      else expect(chunk.column_index_offset, name).toBeUndefined()
    }
  })
})

// ---------------------------------------------------------------------------------------------
// Deletion-vector scans

describe('DataFileReader.batches with a deletion vector', () => {
  const layout = layoutOf([t('BIGINT')])
  const records = (n: number): KeyValue[] => Array.from({ length: n }, (_, i) => ({ key: [BigInt(i)], seq: BigInt(i), kind: 0 as RowKind, value: [BigInt(i), `v${i}`] }))

  it('returns the live rows exactly, for random vectors, row-group and page sizes', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 600 }),
        fc.array(fc.tuple(fc.nat(), fc.integer({ min: 1, max: 200 })), { maxLength: 8 }),
        fc.integer({ min: 40, max: 3000 }),
        fc.integer({ min: 8, max: 400 }),
        fc.integer({ min: 1, max: 50 }),
        async (n, runs, rowGroupBytes, pageSize, batchRows) => {
          const recs = records(n)
          const { bytes } = writeDataFile(layout, recs, { rowGroupBytes, pageSize })
          const positions = new Set<number>()
          for (const [s, len] of runs) for (let p = s % n; p < Math.min(n, (s % n) + len); p++) positions.add(p)
          const dv = deletionVectorOf([...positions].sort((a, b) => a - b), false)
          const reader = await DataFileReader.open(byteSource(bytes), layout)
          const stats = newDataFileReadStats()
          const got: KeyValue[] = []
          for await (const b of reader.batches({ deleted: dv, stats, batchRows })) got.push(...b)
          expect(got).toEqual(recs.filter((_, i) => !positions.has(i)))
          expect(stats.rowsDecoded + stats.rowsSkipped).toBe(n)
        },
      ),
      { numRuns: 120 },
    )
  })

  it('does not decode row groups or page runs whose rows are all deleted', async () => {
    const n = 100_000
    const recs = records(n)
    const { bytes } = writeDataFile(layout, recs)
    // the first 60% deleted (what a lift over a key range leaves), then every other row
    const positions: number[] = []
    for (let p = 0; p < n; p++) if (p < 60_000 || p % 2 === 0) positions.push(p)
    const dv = deletionVectorOf(positions, false)
    const src = countedSource(bytes)
    const reader = await DataFileReader.open(src, layout)
    src.bytesRead = 0
    const stats = newDataFileReadStats()
    const got: KeyValue[] = []
    for await (const b of reader.batches({ deleted: dv, stats })) got.push(...b)
    expect(got).toEqual(recs.filter((_, i) => i >= 60_000 && i % 2 === 1))
    expect(stats.rowGroupsSkipped).toBeGreaterThan(0)
    expect(stats.rowsSkipped).toBeGreaterThanOrEqual(55_000)
    expect(stats.rowsDecoded).toBeLessThanOrEqual(45_000)
    expect(src.bytesRead).toBeLessThan(bytes.length * 0.6)
  })
})

// ---------------------------------------------------------------------------------------------
// Tables: lookups equal the scan; requests and bytes per warm lookup; snapshots

function compositeSchema(options: Record<string, string>): unknown {
  return {
    fields: [
      { name: 'a', type: 'STRING' },
      { name: 'b', type: 'INT' },
      { name: 'v', type: 'STRING' },
      { name: 'n', type: 'BIGINT' },
    ],
    primaryKeys: ['a', 'b'],
    options: { bucket: '2', ...options },
  }
}

describe('table lookups', () => {
  it('equal the full scan for random keys, on the merge-on-read and deletion-vector layouts, composite keys', async () => {
    const opArb = fc.record({ a: fc.constantFrom('x', 'y', 'é', '😀', ''), b: fc.integer({ min: -3, max: 40 }), del: fc.boolean(), n: fc.integer({ min: 0, max: 1000 }) })
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('mor', 'dv', 'dv-compacted'),
        fc.array(fc.array(opArb, { minLength: 1, maxLength: 40 }), { minLength: 1, maxLength: 4 }),
        fc.array(fc.record({ a: fc.constantFrom('x', 'y', 'é', '😀', '', 'zz'), b: fc.integer({ min: -4, max: 41 }) }), { minLength: 1, maxLength: 12 }),
        async (layout, batches, probes) => {
          const table = await Table.create(new MemoryStore(), compositeSchema({ 'deletion-vectors.enabled': String(layout !== 'mor') }))
          for (const batch of batches) {
            const recs = batch.map((o, i) => recordFromJson(table.view, { a: o.a, b: o.b, v: `v${o.n}`, n: o.n, ...(o.del ? { _kind: '-D' } : {}) }, `row ${i}`))
            await writeBatch(table, recs)
            if (layout !== 'mor') await compactTable(table, { full: layout === 'dv-compacted' })
          }
          const all = await readAll(table)
          for (const p of probes) {
            const expected = all.find((r) => r[0] === p.a && r[1] === p.b) ?? null
            expect(await lookup(table, p)).toEqual(expected)
          }
        },
      ),
      { numRuns: 40 },
    )
  })

  const schema = (dv: boolean) => ({
    fields: [
      { name: 'id', type: 'BIGINT' },
      { name: 'name', type: 'STRING' },
      { name: 'qty', type: 'INT' },
    ],
    primaryKeys: ['id'],
    options: { bucket: '1', 'deletion-vectors.enabled': String(dv) },
  })
  const rows = (ids: number[], tag: string) => ids.map((id) => ({ kind: RK.INSERT, row: [BigInt(id), `${tag}-${id}-${'y'.repeat(id % 17)}`, id % 1000] as Value[] }))
  const range = (n: number, from = 0, step = 1) => Array.from({ length: n }, (_, i) => from + i * step)

  async function warmLookups(store: CountingStore, table: Table, ids: number[]): Promise<{ requests: number; bytes: number; ops: string[] }[]> {
    const out = []
    for (const id of ids) {
      store.reset()
      const snapshotId = await table.snapshots.latestId()
      const row = await lookup(table, { id }, { snapshotId })
      expect(row?.[0]).toBe(BigInt(id))
      out.push({ requests: store.requests, bytes: store.bytes, ops: store.calls.map((c) => `${c.op} ${c.key}`) })
    }
    return out
  }

  it('a warm lookup on a fully compacted table costs at most 3 requests and 64 KiB (1 of table state); without the footer cache it costs more', async () => {
    const inner = new MemoryStore()
    const setup = await Table.create(inner, schema(true))
    await writeBatch(setup, rows(range(120_000), 'a'))
    await compactTable(setup, { full: true })
    for (const cacheBytes of [undefined, 0]) {
      const store = new CountingStore(inner)
      const table = await Table.open(store, cacheBytes === undefined ? {} : { footerCacheBytes: cacheBytes })
      await warmLookups(store, table, [5]) // cold: table open, manifests
      const warm = await warmLookups(store, table, [7, 60_001, 119_999, 33_333])
      for (const w of warm) {
        // the table state: only whether the next snapshot exists
        expect(w.ops.filter((o) => o.includes('snapshot/'))).toEqual([`get snapshot/snapshot-${(await table.snapshots.latestId()) + 1}`])
        if (cacheBytes === undefined) {
          expect(w.requests).toBeLessThanOrEqual(3)
          expect(w.bytes).toBeLessThanOrEqual(64 * 1024)
        } else {
          // the footer read again each time (512 KiB from the end of the file)
          expect(w.requests).toBeGreaterThanOrEqual(2)
          expect(w.bytes).toBeGreaterThan(256 * 1024)
        }
      }
    }
  })

  it('a warm lookup on the deletion-vector layout costs at most 4 requests and 128 KiB, on the embedded S3', async () => {
    const backend = await startEmbeddedBackend()
    try {
      await backend.createBucket('lookups')
      const client = backend.s3Client()
      const inner = new S3Store({ bucket: 'lookups', prefix: 't', client })
      const setup = await Table.create(inner, schema(true))
      await writeBatch(setup, rows(range(60_000), 'a'))
      await compactTable(setup, { full: true })
      await writeBatch(setup, rows(range(20_000, 0, 3), 'b'))
      const lifted = await compactTable(setup)
      expect(lifted.some((r) => r.rowsDeletedByVector > 0)).toBe(true)
      // counted in the SDK, inside its retry layer, as S3 bills them
      let requests = 0
      let bytes = 0
      client.middlewareStack.add(
        (next) => async (args) => {
          requests++
          const res = await next(args)
          const headers = (res.response as { headers?: Record<string, string> }).headers ?? {}
          bytes += Number(headers['content-length'] ?? 0)
          return res
        },
        { step: 'finalizeRequest', priority: 'low', name: 'lookupIoCount', override: true },
      )
      const table = await Table.open(new S3Store({ bucket: 'lookups', prefix: 't', client }))
      const all = new Map((await readAll(table)).map((r) => [r[0], r]))
      for (const id of [3, 4, 30_000, 59_999, 1]) {
        await lookup(table, { id }) // cold for this key's files and vectors
      }
      for (const id of [6, 7, 29_997, 45_001, 2]) {
        requests = 0
        bytes = 0
        const snapshotId = await table.snapshots.latestId()
        const row = await lookup(table, { id }, { snapshotId })
        expect(row).toEqual(all.get(BigInt(id)) ?? null)
        expect(requests).toBeLessThanOrEqual(4)
        expect(bytes).toBeLessThanOrEqual(128 * 1024)
      }
    } finally {
      await backend.stop()
    }
  }, 120_000)

  it('the footer cache is bounded by bytes and evicts the least recently used', async () => {
    const inner = new MemoryStore()
    const setup = await Table.create(inner, { ...schema(false), options: { bucket: '4' } })
    await writeBatch(setup, rows(range(8000), 'a'))
    const probe = await Table.open(inner)
    await readAll(probe)
    const one = probe.footers.stats().bytes / probe.footers.stats().entries
    expect(probe.footers.stats().entries).toBe(4)
    const table = await Table.open(inner, { footerCacheBytes: Math.ceil(one * 2.5) })
    await readAll(table)
    const s = table.footers.stats()
    expect(s.bytes).toBeLessThanOrEqual(s.maxBytes)
    expect(s.entries).toBe(2)
    expect(s.evictions).toBe(2)
  })

  it('scans with deletion vectors count the rows they decode and skip', async () => {
    const table = await Table.create(new MemoryStore(), schema(true))
    await writeBatch(table, rows(range(50_000), 'a'))
    await compactTable(table, { full: true })
    // rewrite a contiguous half of the keys: the lift marks them in the top file's vector
    await writeBatch(table, rows(range(25_000), 'b'))
    await compactTable(table)
    const stats = newReadStats()
    const all = await readAll(table, { stats })
    expect(all).toHaveLength(50_000)
    expect(all.filter((r) => (r[1] as string).startsWith('b-'))).toHaveLength(25_000)
    expect(stats.rowsSkipped).toBeGreaterThan(20_000)
    expect(stats.rowsDecoded).toBeLessThan(80_000)
  })
})

describe('snapshots', () => {
  it('a handle that knows snapshot N learns the latest with one request while nothing newer exists, and sees every later commit', async () => {
    const inner = new MemoryStore()
    const writer = await Table.create(inner, compositeSchema({}))
    const write = (n: number) => writeBatch(writer, [recordFromJson(writer.view, { a: 'x', b: n, v: 'v', n }, 'row')])
    await write(1)
    const store = new CountingStore(inner)
    const reader = await Table.open(store)
    expect((await reader.snapshots.latest())?.id).toBe(1)
    store.reset()
    expect((await reader.snapshots.latest())?.id).toBe(1)
    expect(store.calls.map((c) => `${c.op} ${c.key}`)).toEqual(['get snapshot/snapshot-2'])
    await write(2)
    expect((await reader.snapshots.latest())?.id).toBe(2)
    // many commits since: past a few ids the hint takes over, and the answer is still the latest
    for (let i = 3; i <= 9; i++) await write(i)
    expect((await reader.snapshots.latest())?.id).toBe(9)
    expect((await lookup(reader, { a: 'x', b: 9 }))?.[3]).toBe(9n)
    store.reset()
    expect(await reader.snapshots.latestId()).toBe(9)
    expect(store.requests).toBe(1)
  })
})
