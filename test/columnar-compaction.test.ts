// The columnar compaction path against the row path, its reference model (issue 18):
// - DataFileWriter.writeColumns against DataFileWriter.write on random rows of every column
//   type, with nulls, small row groups and file rolling: the same bytes and statistics;
// - ColumnarFileReader against DataFileReader on real Parquet files: the same rows, and
//   deletion-vector positions left out;
// - compactBucket with mergePath 'columnar' against mergePath 'row' on random level-0 runs
//   with overlapping keys, ties, retractions, nulls, `sequence.field` (both sort orders),
//   ignore-delete, ignore-update-before, deletion vectors on (inputs carrying vectors) and
//   small target file sizes: the same output files byte for byte, the same DataFileMeta
//   (statistics) and the same deleted inputs;
// - the same for the engines that fold a key's records (partial-update, aggregation,
//   first-row), lookups into older levels included, and the same errors where an engine
//   refuses a retraction;
// - the dispatch: every engine merges columnar unless the row path is asked for.

import { randomUUID } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BATCH_COMMIT_IDENTIFIER } from '../lib/commit/committer.ts'
import { serializeBinaryRow } from '../lib/format/binary-row.ts'
import { ColumnarFileReader } from '../lib/format/columnar-reader.ts'
import { type Column, type ColumnBatch, asValues } from '../lib/format/columnar-types.ts'
import { type DataFileLayout } from '../lib/format/data-file-layout.ts'
import { type DataFileStats } from '../lib/format/data-file-stats.ts'
import { DataFileWriter, writeDataFile } from '../lib/format/data-file-writer.ts'
import { byteSource } from '../lib/format/data-file-source.ts'
import { readDataFile } from '../lib/format/data-file-reader.ts'
import { physicalEncoder } from '../lib/format/parquet-types.ts'
import { ByteWriter, ParquetWriter } from 'hyparquet-writer'
import { dataFileSchema } from '../lib/format/data-file-layout.ts'
import { rowComparator } from '../lib/format/compare.ts'
import { bucketDirOf, indexFileKey } from '../lib/handle/bucket-state.ts'
import { chooseMergePath } from '../lib/lsm/columnar-merge.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { parseMergeEngineConfig } from '../lib/merge/merge-config.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { dataFileMeta, partitionStatsOf } from '../lib/table/file-meta.ts'
import { Table } from '../lib/handle/table.ts'
import type { DataField, DataType, KeyValue, ManifestEntry, RowKind, Value } from '../lib/types.ts'
import { FileKind } from '../lib/types.ts'
import { RecordingCommitter } from './helpers/commit.ts'

// ---------------------------------------------------------------------------------------------
// Types and random values

const VALUE_TYPES: [string, string][] = [
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
  ['vc', 'VARCHAR(10)'],
  ['by', 'BYTES'],
  ['dt', 'DATE'],
  ['ts3', 'TIMESTAMP(3)'],
  ['ts6', 'TIMESTAMP(6)'],
]

type KeyShape = 'bigint' | 'string+int' | 'timestamp' | 'decimal'
const KEY_FIELDS: Record<KeyShape, [string, string][]> = {
  bigint: [['k', 'BIGINT']],
  'string+int': [['ks', 'STRING'], ['ki', 'INT']],
  timestamp: [['kt', 'TIMESTAMP(3)']],
  decimal: [['kd', 'DECIMAL(20, 2)']],
}

function schemaOf(key: KeyShape, options: Record<string, string>): unknown {
  return {
    fields: [...KEY_FIELDS[key], ...VALUE_TYPES].map(([name, type]) => ({ name, type })),
    primaryKeys: KEY_FIELDS[key].map(([n]) => n),
    partitionKeys: [],
    options: { bucket: '1', 'num-sorted-run.compaction-trigger': '50', 'num-sorted-run.stop-trigger': '99', ...options },
  }
}

const I64 = 2n ** 63n
const longString = fc.tuple(fc.constantFrom('', 'prefix-0123456789abcdef', '\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}\u{1F600}x'), fc.string({ unit: 'binary', maxLength: 24 }))

function valueArb(t: DataType): fc.Arbitrary<Value> {
  switch (t.root) {
    case 'BOOLEAN':
      return fc.boolean()
    case 'TINYINT':
      return fc.integer({ min: -128, max: 127 })
    case 'SMALLINT':
      return fc.integer({ min: -32768, max: 32767 })
    case 'INT':
      return fc.oneof(fc.integer({ min: -5, max: 5 }), fc.integer())
    case 'DATE':
      return fc.integer({ min: -800000, max: 800000 })
    case 'BIGINT':
      return fc.oneof(fc.bigInt({ min: -5n, max: 5n }), fc.bigInt({ min: -I64, max: I64 - 1n }))
    case 'FLOAT':
      return fc.float()
    case 'DOUBLE':
      return fc.double()
    case 'DECIMAL': {
      const lim = 10n ** BigInt(t.precision!) - 1n
      return fc.bigInt({ min: -lim, max: lim })
    }
    case 'CHAR':
    case 'VARCHAR':
      return fc.oneof(fc.string({ maxLength: 4 }), longString.map(([a, b]) => a + b))
    case 'BINARY':
    case 'VARBINARY':
      return fc.uint8Array({ maxLength: 6 })
    case 'TIMESTAMP':
      return (t.precision ?? 6) <= 3 ? fc.bigInt({ min: -(10n ** 15n), max: 10n ** 15n }).map((v) => v * 1000n) : fc.bigInt({ min: -(10n ** 17n), max: 10n ** 17n })
  }
  throw new Error(`no values generated for ${t.root}`)
}

/**
 * Keys of a small space, so runs overlap; `wide` spreads them over ten times as many, so a
 * compacted level outweighs a few new level-0 runs and a pick lifts those over it.
 */
function keyArb(key: KeyShape, wide = false): fc.Arbitrary<Value[]> {
  const w = wide ? 10 : 1
  switch (key) {
    case 'bigint':
      // mostly small; sometimes beyond 2^53, where the merge compares bigints
      return fc.oneof({ weight: 5, arbitrary: fc.bigInt({ min: -3n, max: 40n * BigInt(w) }) }, { weight: 1, arbitrary: fc.constantFrom(2n ** 60n, -(2n ** 60n), I64 - 1n, 2n ** 53n) }).map((k) => [k])
    case 'string+int':
      return fc.tuple(fc.constantFrom('', 'a', 'ab', 'b', '\u{1F600}', '\uE000'), fc.integer({ min: -2, max: 4 * w })).map((t): Value[] => t)
    case 'timestamp':
      return fc.integer({ min: -5, max: 30 * w }).map((k) => [BigInt(k) * 1_000_000n])
    case 'decimal':
      return fc.oneof(fc.bigInt({ min: -3n, max: 30n * BigInt(w) }), fc.constantFrom(10n ** 19n, -(10n ** 19n))).map((k) => [k])
  }
}

interface Fixture {
  table: Table
  layout: DataFileLayout
}

async function createTable(key: KeyShape, options: Record<string, string>): Promise<Fixture> {
  const table = await Table.create(new MemoryStore(), schemaOf(key, options))
  return { table, layout: { keyFields: table.view.keyFields, valueFields: table.view.fields } }
}

const kindArb: fc.Arbitrary<RowKind> = fc.constantFrom<RowKind>(0, 0, 0, 2, 1, 3, 3)

/** One sorted run's records: keys sorted, mostly one row per key, sometimes two. */
function runArb(fields: DataField[], key: KeyShape, keyCount: number, wide = false): fc.Arbitrary<{ key: Value[]; seq: bigint; kind: RowKind; value: Value[] }[]> {
  const keyNames = KEY_FIELDS[key].map(([n]) => n)
  const rowArb = fc.record({
    key: keyArb(key, wide),
    seq: fc.bigInt({ min: 0n, max: 12n }),
    kind: kindArb,
    nulls: fc.array(fc.boolean(), { minLength: fields.length, maxLength: fields.length }),
    values: fc.tuple(...fields.map((f) => valueArb(f.type))),
  })
  // a wide run is a large one (fast-check keeps arrays short unless told)
  const sized = wide && keyCount > 50 ? { minLength: keyCount / 2, maxLength: keyCount, size: 'max' as const } : { minLength: 1, maxLength: keyCount }
  return fc.array(rowArb, sized).map((rows) =>
    rows.map((r) => ({
      key: r.key,
      seq: r.seq,
      kind: r.kind,
      value: fields.map((f, j) => {
        const ki = keyNames.indexOf(f.name)
        if (ki >= 0) return r.key[ki]
        return f.type.nullable && r.nulls[j] ? null : (r.values[j] as Value)
      }),
    })),
  )
}

function sortRun(rows: KeyValue[], layout: DataFileLayout, dupes: boolean): KeyValue[] {
  const cmp = rowComparator(layout.keyFields.map((f) => f.type))
  const sorted = [...rows].sort((a, b) => cmp(a.key, b.key))
  if (dupes) return sorted
  return sorted.filter((r, i) => i === 0 || cmp(sorted[i - 1].key, r.key) !== 0)
}

const NO_PARTITION = serializeBinaryRow([], [])
let commitCounter = 0n

/** Writes each run as one level-0 file with small row groups and commits it. */
async function writeRuns(fx: Fixture, runs: KeyValue[][], rowGroupRows: number): Promise<void> {
  const { table, layout } = fx
  const view = table.view
  const dir = bucketDirOf(table, NO_PARTITION, 0).path
  for (const run of runs) {
    if (run.length === 0) continue
    const { bytes, stats } = writeDataFile(layout, run, { rowGroupRows })
    const fileName = `data-${randomUUID()}-0.parquet`
    await table.store.put(`${dir}/${fileName}`, bytes)
    const adds: ManifestEntry[] = [{ kind: FileKind.ADD, partition: NO_PARTITION, bucket: 0, totalBuckets: 1, file: dataFileMeta(view, fileName, bytes.length, stats, 0, 0) }]
    await table.committer.commit({
      kind: 'APPEND',
      adds,
      deletes: [],
      commitUser: 'columnar-test',
      commitIdentifier: ++commitCounter,
      baseSnapshotId: (await table.snapshots.latestId()) ?? 0,
      partitionStats: (entries) => partitionStatsOf(view, entries),
      schemaId: view.schema.id,
      maxRetries: 5,
    })
  }
}

interface Outcome {
  files: { meta: Record<string, unknown>; bytes: Uint8Array }[]
  deletes: string[]
  columnarSteps: number
  rowsOut: number
  rowsDeletedByVector: number
  /** the bucket's deletion-vector index after the job: per index file, its vectors' ranges and its bytes */
  vectors: { ranges: unknown; bytes: Uint8Array }[]
}

/** compactBucket on one path, its commit recorded (not landed), its output files read back. */
async function compactOn(fx: Fixture, path: 'row' | 'columnar', full: boolean): Promise<Outcome> {
  const rec = new RecordingCommitter()
  const r = await compactBucket(fx.table, { partition: NO_PARTITION, bucket: 0, full, committer: rec, mergePath: path })
  const req = rec.requests[0]
  const dir = bucketDirOf(fx.table, NO_PARTITION, 0).path
  const deleted = new Set(req.deletes.map((d) => d.file.fileName))
  const files = []
  for (const a of req.adds.filter((x) => !deleted.has(x.file.fileName))) {
    const { fileName: _n, creationTime: _t, ...meta } = a.file
    files.push({ meta: meta as Record<string, unknown>, bytes: (await fx.table.store.get(`${dir}/${a.file.fileName}`))! })
  }
  const vectors = []
  for (const rep of req.indexReplacements ?? []) {
    for (const e of rep.entries) {
      const key = indexFileKey(fx.table, { fileName: e.fileName, partition: NO_PARTITION, bucket: 0, externalPath: null }, () => dir)
      vectors.push({ ranges: e.dvRanges, bytes: (await fx.table.store.get(key))! })
    }
  }
  return {
    files,
    deletes: req.deletes.map((d) => `${d.file.fileName}@${d.file.level}`).sort(),
    columnarSteps: r.columnarSteps ?? 0,
    rowsOut: r.rowsOut,
    rowsDeletedByVector: r.rowsDeletedByVector,
    vectors,
  }
}

// ---------------------------------------------------------------------------------------------
// DataFileWriter.writeColumns

function columnsOf(layout: DataFileLayout, rows: KeyValue[]): ColumnBatch {
  const specs = [
    ...layout.keyFields.map((f) => ({ name: `_KEY_${f.name}`, type: f.type })),
    { name: '_SEQUENCE_NUMBER', type: { root: 'BIGINT', nullable: false } as DataType },
    { name: '_VALUE_KIND', type: { root: 'TINYINT', nullable: false } as DataType },
    ...layout.valueFields.map((f) => ({ name: f.name, type: f.type })),
  ]
  const nk = layout.keyFields.length
  const columns: Column[] = specs.map((s, c) => {
    const enc = physicalEncoder(s.name, s.type)
    const pick = (kv: KeyValue): Value => (c < nk ? kv.key[c] : c === nk ? kv.seq : c === nk + 1 ? kv.kind : kv.value[c - nk - 2])
    const values = rows.map((kv) => enc(pick(kv)))
    // typed where the row path's values allow it, as the columnar reader hands them
    if (c === nk) return BigInt64Array.from(values as bigint[])
    if (c === nk + 1) return Int32Array.from(values as number[])
    if (!s.type.nullable && s.type.root === 'INT') return Int32Array.from(values as number[])
    if (!s.type.nullable && (s.type.root === 'BIGINT' || s.type.root === 'TIMESTAMP')) return BigInt64Array.from(values as bigint[])
    return values
  })
  return { rows: rows.length, columns }
}

function rollRows(layout: DataFileLayout, rows: KeyValue[], opts: { rowGroupRows: number; rowGroupBytes: number }, target: number) {
  const out: { bytes: Uint8Array; stats: DataFileStats }[] = []
  let w: DataFileWriter | null = null
  for (const kv of rows) {
    w ??= new DataFileWriter(layout, opts)
    w.write(kv)
    if (w.estimatedSize >= target) {
      out.push(w.finish())
      w = null
    }
  }
  if (w) out.push(w.finish())
  return out
}

function rollColumns(layout: DataFileLayout, batches: ColumnBatch[], opts: { rowGroupRows: number; rowGroupBytes: number }, target: number) {
  const out: { bytes: Uint8Array; stats: DataFileStats }[] = []
  let w: DataFileWriter | null = null
  for (const b of batches) {
    for (let from = 0; from < b.rows; ) {
      w ??= new DataFileWriter(layout, opts)
      const next = w.writeColumns(b, from, b.rows, target)
      expect(next).toBeGreaterThan(from)
      from = next
      if (w.estimatedSize >= target) {
        out.push(w.finish())
        w = null
      }
    }
  }
  if (w) out.push(w.finish())
  return out
}

describe('DataFileWriter.writeColumns', () => {
  it('writes the bytes and statistics write() writes, for every type, nulls, row groups and rolling', async () => {
    for (const key of ['bigint', 'string+int', 'timestamp'] as KeyShape[]) {
      const { layout } = await createTable(key, {})
      await fc.assert(
        fc.property(
          runArb(layout.valueFields, key, 60),
          fc.array(fc.integer({ min: 1, max: 20 }), { minLength: 1, maxLength: 6 }),
          fc.integer({ min: 1, max: 16 }),
          fc.constantFrom(64, 600, 4000, 64 * 1024 * 1024),
          fc.constantFrom(300, 2000, 9000, Infinity),
          (raw, cuts, rowGroupRows, rowGroupBytes, target) => {
            const rows = sortRun(raw, layout, false)
            const opts = { rowGroupRows, rowGroupBytes }
            const expected = rollRows(layout, rows, opts, target)
            // the same rows cut into batches of random sizes
            const batches: ColumnBatch[] = []
            for (let at = 0, i = 0; at < rows.length; i++) {
              const n = Math.min(cuts[i % cuts.length], rows.length - at)
              batches.push(columnsOf(layout, rows.slice(at, at + n)))
              at += n
            }
            const actual = rollColumns(layout, batches, opts, target)
            expect(actual.length).toBe(expected.length)
            for (let f = 0; f < expected.length; f++) {
              expect(actual[f].stats).toEqual(expected[f].stats)
              expect(Buffer.from(actual[f].bytes).equals(Buffer.from(expected[f].bytes))).toBe(true)
            }
          },
        ),
        { numRuns: 40 },
      )
    }
  })

  it('mixes with write(): rows written either way land in order in one file', async () => {
    const { layout } = await createTable('bigint', {})
    const rows: KeyValue[] = Array.from({ length: 30 }, (_, i) => ({
      key: [BigInt(i)],
      seq: BigInt(100 - i),
      kind: (i % 7 === 0 ? 3 : 0) as RowKind,
      value: layout.valueFields.map((f) => (f.name === 'k' ? BigInt(i) : f.type.root === 'INT' ? i * 3 : f.name === 's' ? `v${i}` : null)),
    }))
    const expected = writeDataFile(layout, rows, { rowGroupRows: 7 })
    const w = new DataFileWriter(layout, { rowGroupRows: 7 })
    for (const kv of rows.slice(0, 4)) w.write(kv)
    w.writeColumns(columnsOf(layout, rows.slice(4, 17)))
    for (const kv of rows.slice(17, 20)) w.write(kv)
    w.writeColumns(columnsOf(layout, rows.slice(20)))
    const actual = w.finish()
    expect(actual.stats).toEqual(expected.stats)
    expect(actual.stats.deleteRowCount).toBe(5)
    expect(actual.stats.minSequenceNumber).toBe(71n)
    expect(Buffer.from(actual.bytes).equals(Buffer.from(expected.bytes))).toBe(true)
  })

  it('refuses a batch whose columns do not match the layout', async () => {
    const { layout } = await createTable('bigint', {})
    const w = new DataFileWriter(layout)
    expect(() => w.writeColumns({ rows: 1, columns: [[1n]] })).toThrow(/expected \d+ columns/)
  })
})

// ---------------------------------------------------------------------------------------------
// ColumnarFileReader

describe('ColumnarFileReader', () => {
  it('reads the rows DataFileReader reads, as the physical values write() buffers, deleted positions left out', async () => {
    for (const key of ['bigint', 'string+int', 'decimal'] as KeyShape[]) {
      const { layout } = await createTable(key, {})
      await fc.assert(
        fc.asyncProperty(runArb(layout.valueFields, key, 50), fc.integer({ min: 1, max: 9 }), fc.array(fc.nat(60)), async (raw, rowGroupRows, del) => {
          const rows = sortRun(raw, layout, true)
          const { bytes } = writeDataFile(layout, rows, { rowGroupRows })
          const expected = await readDataFile(byteSource(bytes), layout)
          const deleted = [...new Set(del.filter((p) => p < rows.length))].sort((a, b) => a - b)
          const live = expected.filter((_, p) => !deleted.includes(p))
          const reader = await ColumnarFileReader.open(byteSource(bytes), layout)
          // Strata's own files pass through without per-value conversion
          expect(reader.convertedColumns).toEqual([])
          const batches: ColumnBatch[] = []
          const positions: number[] = []
          for await (const b of reader.rowGroups({ deleted: Uint32Array.from(deleted) })) {
            batches.push(b)
            for (let r = 0; r < b.rows; r++) positions.push(b.positions ? b.positions[r] : b.firstPosition + r)
          }
          // each live row with its file position
          expect(positions).toEqual(expected.map((_, p) => p).filter((p) => !deleted.includes(p)))
          const want = columnsOf(layout, live)
          const nk = layout.keyFields.length
          let at = 0
          for (const b of batches) {
            expect(b.columns[nk]).toBeInstanceOf(BigInt64Array)
            expect(b.columns[nk + 1]).toBeInstanceOf(Int32Array)
            for (let c = 0; c < want.columns.length; c++) {
              expect(Array.from(asValues(b.columns[c])).slice(0, b.rows)).toEqual(Array.from(asValues(want.columns[c])).slice(at, at + b.rows))
            }
            at += b.rows
          }
          expect(at).toBe(live.length)
        }),
        { numRuns: 30 },
      )
    }
  })
})

describe('ColumnarFileReader requests', () => {
  it('reads consecutive small row groups with one request, not one per column chunk', async () => {
    const { layout } = await createTable('bigint', {})
    const rows: KeyValue[] = Array.from({ length: 400 }, (_, i) => ({
      key: [BigInt(i)],
      seq: BigInt(i),
      kind: 0 as RowKind,
      value: layout.valueFields.map((f) => (f.name === 'k' ? BigInt(i) : f.name === 's' ? `value ${i}` : f.name === 'i' ? i : null)),
    }))
    const { bytes } = writeDataFile(layout, rows, { rowGroupRows: 10 })
    const reads: [number, number][] = []
    const src = { size: bytes.length, read: async (s: number, e: number) => (reads.push([s, e]), bytes.subarray(s, e)) }
    // a tail of 64 bytes holds no row group: every data byte must be fetched
    const reader = await ColumnarFileReader.open(src, layout, { tailBytes: 64 })
    const opened = reads.length
    let n = 0
    let batches = 0
    for await (const b of reader.rowGroups()) {
      n += b.rows
      batches++
    }
    expect(n).toBe(400)
    // 40 row groups of 19 column chunks each: one batch, one request
    expect(batches).toBe(1)
    expect(reads.length - opened).toBe(1)
  })

  /** A file of 140,000 rows in small row groups: three request windows of at most 65,536 rows each. */
  async function threeWindows(failAfterOpen: number | null) {
    const { layout } = await createTable('bigint', {})
    const rows: KeyValue[] = Array.from({ length: 140_000 }, (_, i) => ({ key: [BigInt(i)], seq: BigInt(i), kind: 0 as RowKind, value: layout.valueFields.map((f) => (f.name === 'k' ? BigInt(i) : null)) }))
    const { bytes } = writeDataFile(layout, rows, { rowGroupRows: 10_000 })
    const reads: [number, number][] = []
    let failAt = -1
    const src = {
      size: bytes.length,
      read: async (s: number, e: number) => {
        reads.push([s, e])
        if (reads.length === failAt) throw new Error('injected read failure')
        return bytes.subarray(s, e)
      },
    }
    const reader = await ColumnarFileReader.open(src, layout, { tailBytes: 64 })
    if (failAfterOpen !== null) failAt = reads.length + failAfterOpen
    return { reader, reads, opened: reads.length }
  }

  it('sends the next window\'s request when a window arrives, before the rows reach it', async () => {
    const { reader, reads, opened } = await threeWindows(null)
    const it = reader.rowGroups()[Symbol.asyncIterator]()
    const first = await it.next()
    expect(first.done).toBe(false)
    // the first window and the one after it, while the first batch (row 0 on) is being used
    expect(reads.length - opened).toBe(2)
    expect(reads[opened + 1][0]).toBeGreaterThan(reads[opened][1] - 1)
    let n = first.value!.rows
    for (let r = await it.next(); !r.done; r = await it.next()) n += r.value.rows
    expect(n).toBe(140_000)
    expect(reads.length - opened).toBe(3)
  })

  it('a failed request ahead fails the read that reaches it, and is not left unhandled by a reader that stops first', async () => {
    // the second window's request fails: a reader that stops in the first window never sees it
    // (vitest fails the run on an unhandled rejection)
    const stops = await threeWindows(2)
    const it = stops.reader.rowGroups()[Symbol.asyncIterator]()
    expect((await it.next()).done).toBe(false)
    await it.return!(undefined)
    await new Promise((resolve) => setTimeout(resolve, 10))
    // one that reads on gets the failure where the second window is needed
    const reads = await threeWindows(2)
    let n = 0
    await expect(async () => {
      for await (const b of reads.reader.rowGroups()) n += b.rows
    }).rejects.toThrow('injected read failure')
    // the first window's rows, then the failure
    expect(n).toBeGreaterThan(0)
    expect(n).toBeLessThanOrEqual(65_536)
  })
})

describe('ColumnarFileReader on another writer\'s storage', () => {
  it('converts columns stored otherwise value by value, as the row path reads them', async () => {
    const k: DataField = { id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } }
    const t: DataField = { id: 1, name: 't', type: { root: 'TIMESTAMP', precision: 3, nullable: true } }
    const d: DataField = { id: 2, name: 'd', type: { root: 'DECIMAL', precision: 5, scale: 2, nullable: true } }
    const ti: DataField = { id: 3, name: 'ti', type: { root: 'TINYINT', nullable: false } }
    const layout: DataFileLayout = { keyFields: [k], valueFields: [k, t, d, ti] }
    // TIMESTAMP(3) as MICROS and DECIMAL(5, 2) as INT64, as other writers may store them
    const schema = dataFileSchema(layout).map((e) =>
      e.name === 't'
        ? { ...e, type: 'INT64' as const, converted_type: 'TIMESTAMP_MICROS' as const, logical_type: { type: 'TIMESTAMP' as const, isAdjustedToUTC: false, unit: 'MICROS' as const } }
        : e.name === 'd'
          ? { ...e, type: 'INT64' as const }
          : e,
    )
    const out = new ByteWriter()
    const w = new ParquetWriter({ writer: out, schema: schema as ConstructorParameters<typeof ParquetWriter>[0]['schema'] })
    w.write({
      columnData: [
        { name: '_KEY_k', data: [1n, 2n, 3n] },
        { name: '_SEQUENCE_NUMBER', data: [5n, 6n, 7n] },
        { name: '_VALUE_KIND', data: [0, 3, 2] },
        { name: 'k', data: [1n, 2n, 3n] },
        { name: 't', data: [1_700_000_000_123_000n, null, -5_000n] },
        { name: 'd', data: [12345n, -99999n, null] },
        { name: 'ti', data: [-128, 0, 127] },
      ],
      rowGroupSize: 2,
    })
    w.finish()
    const bytes = out.getBytes()
    const expected = columnsOf(layout, await readDataFile(byteSource(bytes), layout))
    const reader = await ColumnarFileReader.open(byteSource(bytes), layout)
    expect(reader.convertedColumns).toEqual(['t', 'd'])
    const got: unknown[][] = expected.columns.map(() => [])
    for await (const b of reader.rowGroups()) b.columns.forEach((c, i) => got[i].push(...Array.from(asValues(c)).slice(0, b.rows)))
    expect(got).toEqual(expected.columns.map((c) => Array.from(asValues(c))))
    // the writer's physical TIMESTAMP(3) is milliseconds
    expect(got[4]).toEqual([1_700_000_000_123n, null, -5n])
  })
})

// ---------------------------------------------------------------------------------------------
// compactBucket: columnar against rows

interface Scenario {
  key: KeyShape
  options: Record<string, string>
}

const scenarioArb: fc.Arbitrary<Scenario> = fc
  .record({
    key: fc.constantFrom<KeyShape>('bigint', 'bigint', 'string+int', 'timestamp', 'decimal'),
    sequenceField: fc.constantFrom(null, null, 'i', 'ts3', 's', 'dec25'),
    descending: fc.boolean(),
    ignore: fc.constantFrom('none', 'none', 'ignore-delete', 'ignore-update-before'),
    dv: fc.boolean(),
    target: fc.constantFrom(null, null, '2 kb', '6 kb'),
  })
  .map(({ key, sequenceField, descending, ignore, dv, target }) => {
    const options: Record<string, string> = {}
    if (sequenceField) {
      options['sequence.field'] = sequenceField
      if (descending) options['sequence.field.sort-order'] = 'descending'
    }
    if (ignore !== 'none') options[ignore] = 'true'
    if (dv) options['deletion-vectors.enabled'] = 'true'
    if (target) options['target-file-size'] = target
    return { key, options }
  })

function expectSameOutcome(columnar: Outcome, row: Outcome): void {
  // every rewrite step went columnar (a lone file moved up a level is no step to merge)
  if (columnar.files.length > 0) expect(columnar.columnarSteps).toBeGreaterThan(0)
  expect(row.columnarSteps).toBe(0)
  expect(columnar.rowsOut).toBe(row.rowsOut)
  expect(columnar.rowsDeletedByVector).toBe(row.rowsDeletedByVector)
  expect(columnar.vectors.map((v) => v.ranges)).toEqual(row.vectors.map((v) => v.ranges))
  for (let i = 0; i < row.vectors.length; i++) expect(Buffer.from(columnar.vectors[i].bytes).equals(Buffer.from(row.vectors[i].bytes))).toBe(true)
  expect(columnar.deletes).toEqual(row.deletes)
  expect(columnar.files.map((f) => f.meta)).toEqual(row.files.map((f) => f.meta))
  for (let i = 0; i < row.files.length; i++) expect(Buffer.from(columnar.files[i].bytes).equals(Buffer.from(row.files[i].bytes))).toBe(true)
}

/**
 * Older levels (and their vectors) built by compactions that land, a large first round, then
 * smaller ones lifted over it; then one more small level-0 run lifted by both paths with
 * lookups, which must write the same. Returns the rows the lift marked in vectors.
 */
async function liftBothWays(key: KeyShape, options: Record<string, string>, rounds: number[], gen: fc.GeneratorValue): Promise<number> {
  const fx = await createTable(key, options)
  const big = runArb(fx.layout.valueFields, key, 400, true)
  const small = runArb(fx.layout.valueFields, key, 8, true)
  const more = (n: number, run: typeof big) => Array.from({ length: n }, () => sortRun(gen(() => run), fx.layout, false))
  for (const [r, n] of rounds.entries()) {
    await writeRuns(fx, r === 0 ? more(n, big) : more(1, small), r === 0 ? 16 : 4)
    await compactBucket(fx.table, { partition: NO_PARTITION, bucket: 0 })
  }
  await writeRuns(fx, more(1, small), 4)
  const row = await compactOn(fx, 'row', false)
  const columnar = await compactOn(fx, 'columnar', false)
  expectSameOutcome(columnar, row)
  return row.rowsDeletedByVector
}

describe('compactBucket, columnar merge against the row merge', () => {
  it('full compaction of random level-0 runs writes the same files (deduplicate engine)', async () => {
    await fc.assert(
      fc.asyncProperty(
        scenarioArb,
        fc.integer({ min: 1, max: 5 }),
        fc.integer({ min: 1, max: 8 }),
        fc.boolean(),
        fc.gen(),
        async (sc, nRuns, rowGroupRows, dupes, gen) => {
          const fx = await createTable(sc.key, sc.options)
          const run = runArb(fx.layout.valueFields, sc.key, 25)
          const runs = Array.from({ length: nRuns }, () => sortRun(gen(() => run), fx.layout, dupes))
          await writeRuns(fx, runs, rowGroupRows)
          const row = await compactOn(fx, 'row', true)
          const columnar = await compactOn(fx, 'columnar', true)
          expectSameOutcome(columnar, row)
        },
      ),
      { numRuns: 60 },
    )
  })

  it('with deletion vectors: inputs carrying vectors from a lift are merged the same way', async () => {
    let withVectors = 0
    await fc.assert(
      fc.asyncProperty(scenarioArb, fc.integer({ min: 1, max: 4 }), fc.gen(), async (sc, nRuns, gen) => {
        const fx = await createTable(sc.key, { ...sc.options, 'deletion-vectors.enabled': 'true' })
        const big = runArb(fx.layout.valueFields, sc.key, 400, true)
        const small = runArb(fx.layout.valueFields, sc.key, 8, true)
        const more = (run: typeof big) => Array.from({ length: run === big ? nRuns : 1 }, () => sortRun(gen(() => run), fx.layout, false))
        // a top level, then small level-0 runs lifted over it with lookups, which mark rows
        // of the top level in deletion vectors
        await writeRuns(fx, more(big), 16)
        await compactBucket(fx.table, { partition: NO_PARTITION, bucket: 0 })
        await writeRuns(fx, more(small), 4)
        const lift = await compactBucket(fx.table, { partition: NO_PARTITION, bucket: 0 })
        if (lift.rowsDeletedByVector > 0) withVectors++
        await writeRuns(fx, more(big), 16)
        const row = await compactOn(fx, 'row', true)
        const columnar = await compactOn(fx, 'columnar', true)
        expectSameOutcome(columnar, row)
      }),
      { numRuns: 20 },
    )
    // the property saw inputs that carried deletion vectors (about a third of the cases do)
    expect(withVectors).toBeGreaterThan(0)
  })

  it('lifting level 0 over older levels with lookups marks the same rows and writes the same files', async () => {
    let marked = 0
    await fc.assert(
      fc.asyncProperty(scenarioArb, fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }), fc.gen(), async (sc, rounds, gen) => {
        marked += await liftBothWays(sc.key, { ...sc.options, 'deletion-vectors.enabled': 'true' }, rounds, gen)
      }),
      { numRuns: 40 },
    )
    // the lookups found and marked older rows (a few dozen over the runs)
    expect(marked).toBeGreaterThan(0)
  })

  it('keeps the newest record of each key and drops deletes at the top level (known input)', async () => {
    const fx = await createTable('bigint', {})
    const kv = (k: number, seq: number, kind: RowKind, i: number | null): KeyValue => ({
      key: [BigInt(k)],
      seq: BigInt(seq),
      kind,
      value: fx.layout.valueFields.map((f) => (f.name === 'k' ? BigInt(k) : f.name === 'i' ? i : null)),
    })
    await writeRuns(fx, [[kv(1, 1, 0, 10), kv(2, 2, 0, 20), kv(3, 3, 0, 30)], [kv(1, 5, 0, 11), kv(2, 6, 3, null), kv(4, 7, 0, 40)], [kv(3, 3, 2, 31)]], 2)
    const rec = new RecordingCommitter()
    const r = await compactBucket(fx.table, { partition: NO_PARTITION, bucket: 0, full: true, committer: rec, mergePath: 'columnar' })
    expect(r.columnarSteps).toBe(1)
    const add = rec.requests[0].adds[0]
    const bytes = (await fx.table.store.get(`${bucketDirOf(fx.table, NO_PARTITION, 0).path}/${add.file.fileName}`))!
    const rows = await readDataFile(byteSource(bytes), fx.layout)
    const iAt = fx.layout.valueFields.findIndex((f) => f.name === 'i')
    // key 2's newest record is a delete: gone. Key 3 ties on seq 3; of two level-0 files with
    // the same max sequence number the one with the smaller min counts as newer
    // (docs/format.md "Sequence numbers"), so the first run's +I wins over the third's +U
    expect(rows.map((x) => [x.key[0], x.seq, x.kind, x.value[iAt]])).toEqual([
      [1n, 5n, 0, 11],
      [3n, 3n, 0, 30],
      [4n, 7n, 0, 40],
    ])
    expect(add.file.rowCount).toBe(3n)
  })
})

// Engines that fold a key's records (partial-update, aggregation, first-row): random options of
// each, retractions refused or ignored or removing the row, with and without deletion vectors
// (first-row: never, Paimon refuses it) and `sequence.field`.
type FoldEngine = 'partial-update' | 'aggregation' | 'first-row'

const AGGREGATIONS: Record<string, string> = {
  bi: 'sum',
  d: 'sum',
  dec15: 'sum',
  vc: 'listagg',
  b: 'bool_or',
  dt: 'first_value',
  si: 'first_non_null_value',
  ts6: 'max',
  f: 'min',
}

const foldScenarioArb: fc.Arbitrary<Scenario & { engine: FoldEngine }> = fc
  .record({
    key: fc.constantFrom<KeyShape>('bigint', 'bigint', 'string+int', 'timestamp', 'decimal'),
    engine: fc.constantFrom<FoldEngine>('partial-update', 'aggregation', 'first-row'),
    sequenceField: fc.constantFrom(null, null, 'i', 'ts3', 's', 'dec25'),
    descending: fc.boolean(),
    retractions: fc.constantFrom('ignore-delete', 'ignore-delete', 'remove-record-on-delete', 'refused'),
    aggregate: fc.boolean(),
    dv: fc.boolean(),
    target: fc.constantFrom(null, null, '2 kb', '6 kb'),
  })
  .map(({ key, engine, sequenceField, descending, retractions, aggregate, dv, target }) => {
    const options: Record<string, string> = { 'merge-engine': engine }
    if (sequenceField && engine !== 'first-row') {
      options['sequence.field'] = sequenceField
      if (descending) options['sequence.field.sort-order'] = 'descending'
    }
    if (retractions === 'ignore-delete') options['ignore-delete'] = 'true'
    if (retractions === 'remove-record-on-delete' && engine !== 'first-row') options[`${engine}.remove-record-on-delete`] = 'true'
    if (engine === 'aggregation' && aggregate) for (const [f, fn] of Object.entries(AGGREGATIONS)) options[`fields.${f}.aggregate-function`] = fn
    if (dv && engine !== 'first-row') options['deletion-vectors.enabled'] = 'true'
    if (target) options['target-file-size'] = target
    return { key, options, engine }
  })

/** Both paths' outcome, or the error each threw: the same either way. */
async function expectSameCompaction(fx: Fixture, full: boolean): Promise<'merged' | 'refused'> {
  const attempt = async (path: 'row' | 'columnar') => compactOn(fx, path, full).then((o) => ({ o, e: null }), (e: Error) => ({ o: null, e }))
  const row = await attempt('row')
  const columnar = await attempt('columnar')
  if (row.e) {
    expect(columnar.e?.message).toBe(row.e.message)
    return 'refused'
  }
  if (columnar.e) throw columnar.e
  expectSameOutcome(columnar.o!, row.o!)
  return 'merged'
}

describe('compactBucket, columnar merge against the row merge: engines that fold', () => {
  it('full compaction of random level-0 runs writes the same files or fails the same way (partial-update, aggregation, first-row)', async () => {
    const seen = { merged: 0, refused: 0 }
    await fc.assert(
      fc.asyncProperty(foldScenarioArb, fc.integer({ min: 1, max: 5 }), fc.integer({ min: 1, max: 8 }), fc.boolean(), fc.gen(), async (sc, nRuns, rowGroupRows, dupes, gen) => {
        const fx = await createTable(sc.key, sc.options)
        const run = runArb(fx.layout.valueFields, sc.key, 25)
        const runs = Array.from({ length: nRuns }, () => sortRun(gen(() => run), fx.layout, dupes))
        await writeRuns(fx, runs, rowGroupRows)
        seen[await expectSameCompaction(fx, true)]++
      }),
      { numRuns: 80 },
    )
    // both outcomes were met: merges, and retractions an engine refuses
    expect(seen.merged).toBeGreaterThan(10)
    expect(seen.refused).toBeGreaterThan(0)
  })

  it('lifting level 0 over older levels with lookups merges each key with the older row the same way', async () => {
    let marked = 0
    await fc.assert(
      fc.asyncProperty(foldScenarioArb, fc.array(fc.integer({ min: 1, max: 3 }), { minLength: 1, maxLength: 3 }), fc.gen(), async (sc, rounds, gen) => {
        // lookups: deletion vectors, or first-row (always compacted with lookup); no
        // retractions refused, so the older levels build up
        const options: Record<string, string> = { ...sc.options, ...(sc.engine === 'first-row' ? {} : { 'deletion-vectors.enabled': 'true' }) }
        if (!options['ignore-delete'] && !options[`${sc.engine}.remove-record-on-delete`]) options['ignore-delete'] = 'true'
        // bool_or, min, max and first_value refuse a -U; with remove-record-on-delete a -D removes the row
        if (sc.engine === 'aggregation') options['ignore-update-before'] = 'true'
        marked += await liftBothWays(sc.key, options, rounds, gen)
      }),
      // no shrinking: a counterexample of 400-row runs shrinks for minutes and runs out of heap
      { numRuns: 40, endOnFailure: true },
    )
    expect(marked).toBeGreaterThan(0)
  })

  it('merges partial updates field by field and sums aggregates (known input)', async () => {
    const known = async (options: Record<string, string>) => {
      const fx = await createTable('bigint', options)
      const kv = (k: number, seq: number, i: number | null, s: string | null, bi: bigint | null): KeyValue => ({
        key: [BigInt(k)],
        seq: BigInt(seq),
        kind: 0,
        value: fx.layout.valueFields.map((f) => (f.name === 'k' ? BigInt(k) : f.name === 'i' ? i : f.name === 's' ? s : f.name === 'bi' ? bi : null)),
      })
      await writeRuns(fx, [[kv(1, 1, 10, 'a', 5n), kv(2, 2, 20, null, 7n)], [kv(1, 3, null, 'b', 6n), kv(3, 4, 30, 'c', null)]], 2)
      const rec = new RecordingCommitter()
      const r = await compactBucket(fx.table, { partition: NO_PARTITION, bucket: 0, full: true, committer: rec, mergePath: 'columnar' })
      expect(r.columnarSteps).toBe(1)
      const bytes = (await fx.table.store.get(`${bucketDirOf(fx.table, NO_PARTITION, 0).path}/${rec.requests[0].adds[0].file.fileName}`))!
      const at = (name: string) => fx.layout.valueFields.findIndex((f) => f.name === name)
      return (await readDataFile(byteSource(bytes), fx.layout)).map((x) => [x.key[0], x.seq, x.kind, x.value[at('i')], x.value[at('s')], x.value[at('bi')]])
    }
    // key 1's two records merge: i keeps 10 (the newer is null), s and bi take the newer values
    expect(await known({ 'merge-engine': 'partial-update' })).toEqual([
      [1n, 3n, 0, 10, 'b', 6n],
      [2n, 2n, 0, 20, null, 7n],
      [3n, 4n, 0, 30, 'c', null],
    ])
    expect(await known({ 'merge-engine': 'aggregation', 'fields.bi.aggregate-function': 'sum' })).toEqual([
      [1n, 3n, 0, 10, 'b', 11n],
      [2n, 2n, 0, 20, null, 7n],
      [3n, 4n, 0, 30, 'c', null],
    ])
    // first-row keeps key 1's first record whole
    expect(await known({ 'merge-engine': 'first-row' })).toEqual([
      [1n, 1n, 0, 10, 'a', 5n],
      [2n, 2n, 0, 20, null, 7n],
      [3n, 4n, 0, 30, 'c', null],
    ])
  })
})

describe('merge path dispatch', () => {
  it('merges every engine columnar unless the row path is asked for', async () => {
    const fields: DataField[] = [
      { id: 0, name: 'k', type: { root: 'BIGINT', nullable: false } },
      { id: 1, name: 'v', type: { root: 'INT', nullable: true } },
    ]
    const cfg = (options: Record<string, string>) => parseMergeEngineConfig(fields, ['k'], options)
    for (const engine of ['deduplicate', 'partial-update', 'aggregation', 'first-row']) {
      const options = { 'merge-engine': engine, 'ignore-delete': 'true' }
      expect(chooseMergePath(cfg(options))).toMatchObject({ path: 'columnar', engine: { keeps: engine === 'deduplicate' ? 'last' : 'fold' } })
      expect(chooseMergePath(cfg(options), 'columnar')).toMatchObject({ path: 'columnar' })
      expect(chooseMergePath(cfg(options), 'row')).toMatchObject({ path: 'row' })
    }

    // a partial-update table compacts columnar under the default path
    const fx = await createTable('bigint', { 'merge-engine': 'partial-update', 'ignore-delete': 'true' })
    const kv = (k: number, seq: number): KeyValue => ({ key: [BigInt(k)], seq: BigInt(seq), kind: 0, value: fx.layout.valueFields.map((f) => (f.name === 'k' ? BigInt(k) : f.name === 'i' ? seq : null)) })
    await writeRuns(fx, [[kv(1, 1), kv(2, 2)], [kv(1, 3)]], 4)
    const r = await compactBucket(fx.table, { partition: NO_PARTITION, bucket: 0, full: true, committer: new RecordingCommitter() })
    expect(r.columnarSteps).toBe(1)
    expect(r.rowsOut).toBe(2)
  })
})

describe('compaction output buffers', () => {
  /**
   * A memory store whose data-file PUTs take a while, as an upload does, and that checks the
   * bytes it was handed are unchanged when the upload ends (MemoryStore copies at once).
   */
  class SlowUploads extends MemoryStore {
    changed: string[] = []
    buffers: ArrayBuffer[] = []
    constructor(private readonly delayMs: number) {
      super()
    }
    override async put(key: string, data: Uint8Array): Promise<void> {
      if (!key.endsWith('.parquet')) return super.put(key, data)
      this.buffers.push(data.buffer as ArrayBuffer)
      const copy = data.slice()
      if (this.delayMs > 0) await new Promise((resolve) => setTimeout(resolve, this.delayMs))
      if (!Buffer.from(copy).equals(Buffer.from(data))) this.changed.push(key)
      return super.put(key, copy)
    }
  }

  async function compactToSmallFiles(delayMs: number, path: 'row' | 'columnar'): Promise<{ store: SlowUploads; outputs: number }> {
    const store = new SlowUploads(delayMs)
    const table = await Table.create(store, schemaOf('bigint', { 'target-file-size': '2 kb' }))
    const fx = { table, layout: { keyFields: table.view.keyFields, valueFields: table.view.fields } }
    const runs = fc.sample(fc.array(runArb(fx.layout.valueFields, 'bigint', 300, true), { minLength: 3, maxLength: 3 }), { seed: 18, numRuns: 1 })[0]
    await writeRuns(fx, runs.map((r) => sortRun(r, fx.layout, false)), 16)
    const before = store.buffers.length
    const rec = new RecordingCommitter()
    await compactBucket(table, { partition: NO_PARTITION, bucket: 0, full: true, committer: rec, mergePath: path })
    store.buffers.splice(0, before)
    return { store, outputs: rec.requests[0].adds.length }
  }

  it('a writer reuses an earlier output buffer only once that file\'s upload has ended', async () => {
    for (const path of ['columnar', 'row'] as const) {
      const { store, outputs } = await compactToSmallFiles(15, path)
      // several files, each written while the one before it was still uploading
      expect(outputs).toBeGreaterThan(3)
      expect(store.changed).toEqual([])
    }
  })

  it('a later writer appends into a buffer an earlier upload handed back', async () => {
    const { store, outputs } = await compactToSmallFiles(0, 'columnar')
    expect(outputs).toBeGreaterThan(3)
    expect(new Set(store.buffers).size).toBeLessThan(store.buffers.length)
  })
})
