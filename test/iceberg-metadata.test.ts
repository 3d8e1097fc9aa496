// Iceberg metadata beside a table (docs/format.md "Iceberg metadata"): what a committer writes
// for each snapshot, read back with Strata's own Avro reader and JSON — field ids, the
// partition spec, snapshot ids and sequence numbers, row lineage, deletion vectors.

import { mkdtempSync, readFileSync, readdirSync, rmSync, existsSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createTable } from '../lib/api/index.ts'
import { readAvroFile } from '../lib/format/avro.ts'
import { readIcebergManifest, readIcebergManifestList } from '../lib/iceberg/manifests.ts'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { TableFiles } from '../lib/iceberg/table-files.ts'

const root = mkdtempSync(join(tmpdir(), 'strata-iceberg-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const fresh = () => join(root, 'wh', 'db1.db', `t${n++}`)

const SCHEMA = (options: Record<string, string>) => ({
  fields: [
    { name: 'dt', type: 'STRING NOT NULL' },
    { name: 'id', type: 'BIGINT NOT NULL' },
    { name: 'name', type: 'STRING' },
    { name: 'amount', type: 'DECIMAL(12, 2)' },
  ],
  partitionKeys: ['dt'],
  primaryKeys: ['dt', 'id'],
  options: { bucket: '2', 'metadata.iceberg.storage': 'table-location', ...options },
})

const json = (path: string) => JSON.parse(readFileSync(path, 'utf8'))
const localPath = (uri: string) => fileURLToPath(uri)

describe('Iceberg metadata, format version 2', () => {
  it('writes v<N>.metadata.json for every snapshot; a v2 reader sees the top level only', async () => {
    const uri = fresh()
    const t = await createTable(uri, SCHEMA({}))
    await t.write([
      { dt: '2024-05-01', id: 1, name: 'a', amount: '1.50' },
      { dt: '2024-05-02', id: 2, name: 'b', amount: '2.00' },
    ])
    await t.handle.iceberg!.settle()
    const meta1 = json(join(uri, 'metadata', 'v1.metadata.json'))
    expect(meta1['format-version']).toBe(2)
    expect(meta1['current-snapshot-id']).toBe(1)
    expect(meta1['last-sequence-number']).toBe(1)
    expect(meta1.snapshots.map((s: any) => [s['snapshot-id'], s['sequence-number']])).toEqual([[1, 1]])
    expect(meta1.schemas[0].fields.map((f: any) => [f.id, f.name, f.type, f.required])).toEqual([
      [0, 'dt', 'string', true],
      [1, 'id', 'long', true],
      [2, 'name', 'string', false],
      [3, 'amount', 'decimal(12, 2)', false],
    ])
    expect(meta1['partition-specs']).toEqual([{ 'spec-id': 0, fields: [{ name: 'dt', transform: 'identity', 'source-id': 0, 'field-id': 1000 }] }])
    expect(meta1['last-partition-id']).toBe(1000)
    expect(readFileSync(join(uri, 'metadata', 'version-hint.text'), 'utf8')).toBe('1')
    // the write is at level 0: a v2 reader sees nothing yet (Paimon's first snapshot would show it)
    const list1 = readIcebergManifestList(readFileSync(localPath(meta1.snapshots[0]['manifest-list'])))
    expect(list1).toEqual([])

    await t.compact({ full: true })
    await t.handle.iceberg!.settle()
    const meta2 = json(join(uri, 'metadata', 'v2.metadata.json'))
    expect(meta2['current-snapshot-id']).toBe(2)
    const listBytes = readFileSync(localPath(meta2.snapshots[0]['manifest-list']))
    const listSchema = readAvroFile(listBytes).schema as any
    expect(listSchema.fields.map((f: any) => [f.name, f['field-id']])).toContainEqual(['manifest_path', 500])
    const list2 = readIcebergManifestList(listBytes)
    expect(list2).toHaveLength(1)
    expect(list2[0].sequenceNumber).toBe(2n)
    const entries = readIcebergManifest(readFileSync(localPath(list2[0].path)), t.handle.view.partitionFields, null)
    expect(entries.map((e) => e.file.partition[0]).sort()).toEqual(['2024-05-01', '2024-05-02'])
    for (const e of entries) {
      expect(e.status).toBe(1)
      expect(e.snapshotId).toBe(2n)
      expect(existsSync(localPath(e.file.path))).toBe(true)
      expect(e.file.format).toBe('PARQUET')
    }
    // column bounds from Paimon's value statistics, in Iceberg's single-value form, by field id
    const byPartition = new Map(entries.map((e) => [e.file.partition[0], e.file.metrics!]))
    const first = byPartition.get('2024-05-01')!
    const bound = (m: [number, Uint8Array][], id: number) => Buffer.from(m.find(([k]) => k === id)![1])
    expect(bound(first.lower, 1).readBigInt64LE()).toBe(1n)
    expect(bound(first.upper, 1).readBigInt64LE()).toBe(1n)
    expect(bound(first.lower, 2).toString()).toBe('a')
    expect([...bound(first.lower, 3)]).toEqual([0x00, 0x96]) // 1.50 as the unscaled 150, two's complement
    expect(first.valueCounts).toContainEqual([3, 1n])
    expect(first.nullCounts).toContainEqual([2, 0n])
    // the manifest list's partition summary spans both days
    expect(list2[0].partitions).toEqual([{ containsNull: false, containsNan: null, lower: new Uint8Array(Buffer.from('2024-05-01')), upper: new Uint8Array(Buffer.from('2024-05-02')) }])
    const manifestSchema = readAvroFile(readFileSync(localPath(list2[0].path))).schema as any
    const dataFile = manifestSchema.fields.find((f: any) => f.name === 'data_file')
    expect(dataFile['field-id']).toBe(2)
    expect(dataFile.type.fields.find((f: any) => f.name === 'partition').type.fields[0]['field-id']).toBe(1000)
    // delete-after-commit keeps one previous version
    expect(readdirSync(join(uri, 'metadata')).filter((f) => f.endsWith('.metadata.json')).sort()).toEqual(['v1.metadata.json', 'v2.metadata.json'])
    expect(t.handle.iceberg!.stats).toMatchObject({ written: 2, failed: 0 })
  })
})

describe('Iceberg metadata, format version 3 with deletion vectors', () => {
  it('lists every file above level 0, hands Paimon deletion vectors over as Iceberg deletion vectors, and carries row lineage', async () => {
    const uri = fresh()
    const t = await createTable(uri, SCHEMA({ 'deletion-vectors.enabled': 'true', 'deletion-vectors.bitmap64': 'true', 'metadata.iceberg.format-version': '3' }))
    const rows = (names: string) => Array.from({ length: 20 }, (_, i) => ({ dt: i % 2 ? '2024-05-01' : '2024-05-02', id: i, name: `${names}${i}`, amount: '1.00' }))
    await t.write(rows('a'))
    await t.compact()
    await t.write(rows('b').slice(0, 7))
    await t.compact()
    await t.handle.iceberg!.settle()
    const h = t.handle
    const latest = (await h.snapshots.latest())!
    const meta = json(join(uri, 'metadata', `v${latest.id}.metadata.json`))
    expect(meta['format-version']).toBe(3)
    const snap = meta.snapshots[0]
    expect(snap['snapshot-id']).toBe(latest.id)
    expect(typeof meta['next-row-id']).toBe('number')
    expect(snap['first-row-id'] + snap['added-rows']).toBe(meta['next-row-id'])
    const list = readIcebergManifestList(readFileSync(localPath(snap['manifest-list'])))
    const data = list.filter((m) => m.content === 0)
    const deletes = list.filter((m) => m.content === 1)
    for (const m of data) expect(m.firstRowId).not.toBeNull()
    for (const m of deletes) expect(m.firstRowId).toBeNull()
    const read = (m: { path: string; firstRowId: bigint | null }) => readIcebergManifest(readFileSync(localPath(m.path)), h.view.partitionFields, m.firstRowId)
    const dataFiles = data.flatMap(read).filter((e) => e.status !== 2)
    // the live files above level 0, by location
    const live = (await h.manifests.liveEntries(latest)).filter((e) => e.file.level > 0)
    expect(dataFiles.map((e) => e.file.path.split('/').pop()).sort()).toEqual(live.map((e) => e.file.fileName).sort())
    // every data file has a row id range, and the ranges do not overlap
    const ranges = dataFiles.map((e) => [e.file.firstRowId!, e.file.firstRowId! + e.file.recordCount] as const).sort((a, b) => (a[0] < b[0] ? -1 : 1))
    for (let i = 1; i < ranges.length; i++) expect(ranges[i][0] >= ranges[i - 1][1]).toBe(true)
    expect(ranges[ranges.length - 1][1] <= BigInt(meta['next-row-id'])).toBe(true)
    // the deletion vectors equal the index's, each pointing at its blob in the index file
    const index = await h.manifests.readIndexManifest(latest.indexManifest)
    const dvs = index.flatMap((e) => (e.dvRanges ?? []).map((r) => ({ file: e.fileName, data: r.dataFileName, offset: BigInt(r.offset), length: BigInt(r.length), card: r.cardinality })))
    expect(dvs.length).toBeGreaterThan(0)
    const entries = deletes.flatMap(read)
    expect(entries.map((e) => ({ file: e.file.path.split('/').pop(), data: e.file.referencedDataFile!.split('/').pop(), offset: e.file.contentOffset, length: e.file.contentSize, card: e.file.recordCount })).sort((a, b) => a.data!.localeCompare(b.data!))).toEqual(
      dvs.sort((a, b) => a.data.localeCompare(b.data)),
    )
    for (const e of entries) {
      expect(e.file.format).toBe('PUFFIN')
      const blob = readFileSync(localPath(e.file.path)).subarray(Number(e.file.contentOffset), Number(e.file.contentOffset! + e.file.contentSize!))
      // Iceberg's deletion-vector-v1 blob: length, magic D1 D3 39 64, bitmap, CRC
      expect(blob.readUInt32BE(0)).toBe(blob.length - 8)
      expect([...blob.subarray(4, 8)]).toEqual([0xd1, 0xd3, 0x39, 0x64])
      expect(existsSync(localPath(e.file.referencedDataFile!))).toBe(true)
    }
  })
})

describe('Iceberg delete manifests by group of buckets', () => {
  it('a compaction rewrites the delete manifests of the partitions it touched, and keeps the others', async () => {
    const uri = fresh()
    const t = await createTable(uri, SCHEMA({ 'deletion-vectors.enabled': 'true', 'deletion-vectors.bitmap64': 'true', 'metadata.iceberg.format-version': '3' }))
    const days = ['2024-05-01', '2024-05-02', '2024-05-03']
    const rows = (tag: string, n = 2) => days.flatMap((dt) => Array.from({ length: n }, (_, i) => ({ dt, id: i, name: `${tag}${i}`, amount: '1.00' })))
    await t.write(rows('a', 12))
    await t.compact()
    await t.write(rows('b'))
    await t.compact()
    await t.handle.iceberg!.settle()
    const deletesAt = () => {
      const id = JSON.parse(readFileSync(join(uri, 'metadata', 'version-hint.text'), 'utf8'))
      const meta = json(join(uri, 'metadata', `v${id}.metadata.json`))
      const list = readIcebergManifestList(readFileSync(localPath(meta.snapshots[0]['manifest-list'])))
      return new Map(list.filter((m) => m.content === 1).map((m) => [readIcebergManifest(readFileSync(localPath(m.path)), t.handle.view.partitionFields, null)[0].file.partition[0] as string, m.path]))
    }
    const before = deletesAt()
    expect([...before.keys()].sort()).toEqual(days)
    await t.write(rows('c').filter((r) => r.dt === days[0]))
    await t.compact({ partition: { dt: days[0] } })
    await t.handle.iceberg!.settle()
    const after = deletesAt()
    expect(after.get(days[0])).not.toBe(before.get(days[0]))
    expect(after.get(days[1])).toBe(before.get(days[1]))
    expect(after.get(days[2])).toBe(before.get(days[2]))
  })
})

describe('Iceberg data file formats', () => {
  it("names each data file's own format, as Paimon's Iceberg writer does: an avro table's .avro files are AVRO", async () => {
    const uri = fresh()
    const t = await createTable(uri, SCHEMA({}))
    await t.write([{ dt: '2024-05-01', id: 1, name: 'a', amount: '1.50' }])
    const snapshot = (await t.handle.snapshots.latest())!
    const [entry] = await t.handle.manifests.liveEntries(snapshot)
    const files = new TableFiles(pathToFileURL(uri).href, t.handle.view, 2)
    expect(files.dataFile(entry, t.handle.view.fields).format).toBe('PARQUET')
    const avro = { ...entry, file: { ...entry.file, fileName: entry.file.fileName.replace(/\.parquet$/, '.avro') } }
    expect(files.dataFile(avro, t.handle.view.fields).format).toBe('AVRO')
  })
})
