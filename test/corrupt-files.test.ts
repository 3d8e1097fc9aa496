// Corrupt stored files never read back as data, and every error on one names the file.
// A table's files are damaged in the store (a flipped byte, a truncation, garbage) and then
// read the ways Strata reads them: a scan, a point lookup, a compaction, the `strata read`
// command. Each read either returns exactly what was written or fails with an error whose
// message starts with (or holds) the damaged file's key.
//
// Parquet has no checksums here (Strata writes none, as Paimon), so a flip inside a non-key
// value can change that value undetected; what is checked is what the manifest vouches for:
// every key lies within the file's min/max key and no key comes below the one before it,
// the row count and retraction count match, and a primary-key field's value column
// agrees with its key column. The property below is scoped to that: the primary keys and the
// number of rows a read returns.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { byteSource } from '../lib/format/data-file-source.ts'
import { readDataFile } from '../lib/format/data-file-reader.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { lookup, planScan, readAll } from '../lib/read/table-read.ts'
import { INGEST_MARKER_DIR } from '../lib/ingest/attempts.ts'
import { ingest } from '../lib/ingest/ingest.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { openStore } from '../lib/store/open-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { CorruptFileError } from '../lib/errors.ts'
import type { ManifestEntry } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { strata } from './helpers/cli-in-process.ts'

const ROWS = 300

function schema(options: Record<string, string> = {}) {
  return {
    fields: [
      { name: 'id', type: 'INT' },
      { name: 'v', type: 'STRING' },
    ],
    primaryKeys: ['id'],
    options: { bucket: '2', 'file.compression': 'none', ...options },
  }
}

let tables = 0

/**
 * A fresh table at memory://…, holding ids 0..ROWS-1 (one level-0 file per bucket); values
 * `pad` characters long when given (so that a read's output outgrows the CLI's buffer).
 */
async function writtenTable(options: Record<string, string> = {}, pad = 0): Promise<{ uri: string; store: ObjectStore; table: Table }> {
  const uri = `memory://corrupt-files-${++tables}`
  const store = openStore(uri)
  const table = await Table.create(store, schema(options))
  await write(table, Array.from({ length: ROWS }, (_, id) => id), 'v', pad)
  return { uri, store, table }
}

async function write(table: Table, ids: number[], tag = 'v', pad = 0): Promise<void> {
  await writeBatch(
    table,
    ids.map((id) => ({ ...recordFromJson(table.view, { id, v: `${tag}${id}`.padEnd(pad, '.') }, `id ${id}`), where: `id ${id}` })),
  )
}

/**
 * A full compaction that reads every file: a second write into every bucket first, so that
 * no file is merely moved up a level (which reads nothing).
 */
async function compactReading(store: ObjectStore): Promise<void> {
  const table = await reopen(store)
  await write(table, Array.from({ length: 20 }, (_, i) => i * 7), 'again')
  await compactTable(table, { full: true })
}

/** The live data files of the latest snapshot, with their keys in the store. */
async function dataFiles(table: Table): Promise<{ key: string; entry: ManifestEntry }[]> {
  const snapshot = await table.snapshots.latest()
  const entries = await table.manifests.liveEntries(snapshot!)
  return entries.map((entry) => ({ key: `bucket-${entry.bucket}/${entry.file.fileName}`, entry })).sort((a, b) => a.key.localeCompare(b.key))
}

const layoutOf = (table: Table) => ({ keyFields: table.view.keyFields, valueFields: table.view.fields })

/** The keys a raw decode of the bytes gives (no manifest checks), or null when it fails. */
async function rawKeys(table: Table, bytes: Uint8Array): Promise<number[] | null> {
  try {
    return (await readDataFile(byteSource(bytes), layoutOf(table))).map((kv) => kv.key[0] as number)
  } catch {
    return null
  }
}

/** Byte offset where the file's footer (thrift FileMetaData) starts. */
function footerStart(bytes: Uint8Array): number {
  const len = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(bytes.length - 8, true)
  return bytes.length - 8 - len
}

function flipped(bytes: Uint8Array, at: number, mask: number): Uint8Array {
  const out = bytes.slice()
  out[at] ^= mask
  return out
}

/**
 * The first position (from `from`) where flipping `mask` still decodes but gives other keys
 * than the file's, where `pick` accepts the keys the flip gives.
 */
async function keyChangingFlip(table: Table, bytes: Uint8Array, mask: number, pick: (orig: number[], got: number[]) => boolean): Promise<number> {
  const orig = (await rawKeys(table, bytes))!
  for (let at = 4; at < footerStart(bytes); at++) {
    const got = await rawKeys(table, flipped(bytes, at, mask))
    if (got !== null && got.length === orig.length && got.some((k, i) => k !== orig[i]) && pick(orig, got)) return at
  }
  throw new Error('no key-changing flip found')
}

/** A fresh handle: nothing cached from before the damage. */
const reopen = (store: ObjectStore) => Table.open(store)

const ids = (rows: unknown[][]) => rows.map((r) => r[0] as number).sort((a, b) => a - b)

async function expectNamed(p: Promise<unknown>, key: string, cls?: new (...a: never[]) => Error): Promise<Error> {
  const e = await p.then(
    () => null,
    (err: unknown) => err as Error,
  )
  expect(e, `expected a failure naming ${key}`).not.toBeNull()
  expect(e!.message).toContain(key)
  if (cls) expect(e).toBeInstanceOf(cls)
  return e!
}

/** The table's rows read afresh, or null when the read failed with an error naming `key`. */
async function rowsOrNamed(store: ObjectStore, key: string): Promise<unknown[][] | null> {
  try {
    return await readAll(await reopen(store))
  } catch (e) {
    expect((e as Error).message).toContain(key)
    return null
  }
}

describe('a flipped byte that decodes to another key', () => {
  it('fails a scan, a lookup and a compaction with a CorruptFileError naming the file (a middle row out of order)', async () => {
    const { store, table } = await writtenTable()
    const [{ key }] = await dataFiles(table)
    const bytes = (await store.get(key))!
    // a flip that keeps the first and last key and breaks the order in between
    const at = await keyChangingFlip(table, bytes, 0x40, (o, g) => g[0] === o[0] && g[g.length - 1] === o[o.length - 1])
    await store.put(key, flipped(bytes, at, 0x40))
    const e = await expectNamed(readAll(await reopen(store)), key, CorruptFileError)
    expect(e.message.startsWith(`${key}: `)).toBe(true)
    expect(e.message).toMatch(/rows are sorted by key/)
    await expectNamed(compactReading(store), key, CorruptFileError)
  })

  it('fails a read when the first key falls below the manifest minKey', async () => {
    const { store, table } = await writtenTable()
    const [{ key }] = await dataFiles(table)
    const bytes = (await store.get(key))!
    // the sign bit of the first key
    const at = await keyChangingFlip(table, bytes, 0x80, (o, g) => g[0] < o[0])
    await store.put(key, flipped(bytes, at, 0x80))
    const e = await expectNamed(readAll(await reopen(store)), key, CorruptFileError)
    expect(e.message).toMatch(/below the manifest's minKey/)
    await expectNamed(compactReading(store), key, CorruptFileError)
  })

  it('fails a lookup whose key page is out of order', async () => {
    const { store, table } = await writtenTable()
    const [{ key, entry }] = await dataFiles(table)
    const bytes = (await store.get(key))!
    const orig = (await rawKeys(table, bytes))!
    const at = await keyChangingFlip(table, bytes, 0x40, (o, g) => g[0] === o[0] && g[g.length - 1] === o[o.length - 1])
    await store.put(key, flipped(bytes, at, 0x40))
    const got = (await rawKeys(table, flipped(bytes, at, 0x40)))!
    const changed = orig.findIndex((k, i) => got[i] !== k)
    expect(entry.bucket).toBeGreaterThanOrEqual(0)
    await expectNamed(lookup(await reopen(store), { id: orig[changed] }), key, CorruptFileError)
  })

  it('a value-column copy of the primary key that disagrees with the key column fails the read', async () => {
    const { store, table } = await writtenTable()
    const [{ key }] = await dataFiles(table)
    const bytes = (await store.get(key))!
    const orig = (await rawKeys(table, bytes))!
    // a flip that leaves the _KEY_ column alone and changes what the scan returns as `id`
    let at = -1
    const before = (await readDataFile(byteSource(bytes), layoutOf(table))).map((kv) => kv.value[0])
    for (let p = 4; p < footerStart(bytes) && at < 0; p++) {
      try {
        const kvs = await readDataFile(byteSource(flipped(bytes, p, 0x40)), layoutOf(table))
        if (kvs.every((kv, i) => kv.key[0] === orig[i]) && kvs.some((kv, i) => kv.value[0] !== before[i])) at = p
      } catch {
        // not this one
      }
    }
    expect(at).toBeGreaterThan(0)
    await store.put(key, flipped(bytes, at, 0x40))
    const e = await expectNamed(readAll(await reopen(store)), key, CorruptFileError)
    expect(e.message).toMatch(/in its value column id/)
    await expectNamed(compactReading(store), key, CorruptFileError)
  })
})

describe('a truncated data file', () => {
  /** The key of the data file a scan reaches last: rows of the other bucket come first. */
  async function lastRead(table: Table): Promise<string> {
    const { splits } = await planScan(table)
    expect(splits.length).toBe(2)
    const split = splits[splits.length - 1]
    return `${split.path}/${split.files[0].file.fileName}`
  }

  it('fails `strata read` before any row is printed, naming the file', async () => {
    // rows of 1000 characters: the first bucket's rows alone outgrow the output's buffer
    const { uri, store, table } = await writtenTable({}, 1000)
    const key = await lastRead(table)
    const bytes = (await store.get(key))!
    await store.put(key, bytes.subarray(0, bytes.length >> 1))
    const r = await strata(['read', uri])
    expect(r.code).toBe(1)
    expect(r.stdout).toBe('')
    expect(r.stderr).toContain(key)
  })

  it('a missing data file fails `strata read` before any row is printed', async () => {
    const { uri, store, table } = await writtenTable({}, 1000)
    const key = await lastRead(table)
    await store.delete(key)
    const r = await strata(['read', uri])
    expect(r.code).toBe(6) // the store has no such object (docs/operations.md "Exit codes")
    expect(r.stdout).toBe('')
    expect(r.stderr).toContain(key)
  })

  it('a file damaged mid-file (past what the footers show) fails `strata read` with its name and a non-zero exit', async () => {
    const { uri, store, table } = await writtenTable()
    const key = await lastRead(table)
    const bytes = (await store.get(key))!
    const at = await keyChangingFlip(table, bytes, 0x40, (o, g) => g[0] === o[0] && g[g.length - 1] === o[o.length - 1])
    await store.put(key, flipped(bytes, at, 0x40))
    const r = await strata(['read', uri])
    expect(r.code).toBe(8) // a corrupt file (docs/operations.md "Exit codes")
    expect(r.stderr).toContain(key)
  })
})

describe('garbled metadata and footers name their file', () => {
  it('a garbled Parquet footer', async () => {
    const { store, table } = await writtenTable()
    const [{ key }] = await dataFiles(table)
    const bytes = (await store.get(key))!
    const bad = bytes.slice()
    bad.fill(0xff, footerStart(bytes) + 8, footerStart(bytes) + 40)
    await store.put(key, bad)
    const e = await expectNamed(readAll(await reopen(store)), key)
    expect(e.message.startsWith(`${key}: `)).toBe(true)
    expect(e.cause).toBeInstanceOf(Error)
  })

  it('a data file whose footer magic is gone', async () => {
    const { store, table } = await writtenTable()
    const [{ key }] = await dataFiles(table)
    const bytes = (await store.get(key))!
    await store.put(key, flipped(bytes, bytes.length - 1, 0xff))
    await expectNamed(readAll(await reopen(store)), key)
  })

  for (const [what, prefix] of [
    ['manifest', 'manifest/manifest-'],
    ['manifest list', 'manifest/manifest-list-'],
  ] as const) {
    for (const damage of ['truncated', 'garbled'] as const) {
      it(`a ${damage} ${what}`, async () => {
        const { store } = await writtenTable()
        const keys = (await store.list(prefix)).map((o) => o.key).filter((k) => prefix === 'manifest/manifest-list-' || !k.startsWith('manifest/manifest-list-'))
        expect(keys.length).toBeGreaterThan(0)
        for (const key of keys) {
          const bytes = (await store.get(key))!
          const bad = damage === 'truncated' ? bytes.subarray(0, bytes.length >> 1) : bytes.slice()
          if (damage === 'garbled') bad.fill(0x9c, bytes.length >> 1, (bytes.length >> 1) + 24)
          await store.put(key, bad)
        }
        const e = await expectNamed(readAll(await reopen(store)), 'manifest/')
        expect(keys.some((k) => e.message.startsWith(`${k}: `))).toBe(true)
        expect(e.cause).toBeInstanceOf(Error)
      })
    }
  }

  it('a garbled index manifest and deletion-vector index file', async () => {
    const { store, table } = await writtenTable({ 'deletion-vectors.enabled': 'true', bucket: '1' })
    await compactTable(table, { full: true })
    await write(table, [3, 5, 7, 11], 'w')
    await compactTable(table)
    const snapshot = (await table.snapshots.latest())!
    expect(snapshot.indexManifest).toBeTruthy()
    const indexFiles = (await store.list('index/')).map((o) => o.key)
    expect(indexFiles.length).toBeGreaterThan(0)
    // the deletion-vector file first
    const dvKey = indexFiles[indexFiles.length - 1]
    const dv = (await store.get(dvKey))!
    await store.put(dvKey, flipped(dv, dv.length - 3, 0xff))
    await expectNamed(readAll(await reopen(store)), dvKey)
    await store.put(dvKey, dv)
    expect(ids(await readAll(await reopen(store)))).toEqual(Array.from({ length: ROWS }, (_, i) => i))
    // then the index manifest
    const imKey = `manifest/${snapshot.indexManifest}`
    const im = (await store.get(imKey))!
    await store.put(imKey, im.subarray(0, im.length - 20))
    await expectNamed(readAll(await reopen(store)), imKey)
  })

  it("a garbled ingest marker (a redelivered batch's record of its earlier attempt)", async () => {
    const { table } = await writtenTable()
    const opts = { resolve: async () => ({ table, jobs: null }), defaultTable: 't', rejects: new MemoryStore(), commitUser: 'w' }
    const rec = (id: string, receiveCount = 1) => ({ id, source: id, body: JSON.stringify({ id: 1000, v: id }), receiveCount, firstReceivedAt: Date.now() })
    expect((await ingest([rec('m1')], opts)).errors).toEqual([])
    const markers = (await table.store.list(INGEST_MARKER_DIR)).map((o) => o.key).filter((k) => !k.includes('/r/'))
    expect(markers.length).toBe(1)
    await table.store.put(markers[0], new TextEncoder().encode('{"startedAfter": 1, "startedAt": '))
    // the same batch again: it finds its marker and reads it
    const res = await ingest([rec('m1', 2)], opts)
    expect(res.errors.length).toBe(1)
    expect(res.errors[0].error).toContain(markers[0])
  })

  it('a garbled schema file', async () => {
    const { store } = await writtenTable()
    const bytes = (await store.get('schema/schema-0'))!
    const bad = bytes.slice()
    bad[18] = 0x01
    await store.put('schema/schema-0', bad)
    const e = await expectNamed(Table.open(store), 'schema/schema-0')
    expect(e.cause).toBeInstanceOf(Error)
  })
})

describe('sound files read as before', () => {
  it('string keys in code point order read with the checks on, surrogate pairs against U+E000..U+FFFF included', async () => {
    const store = new MemoryStore()
    const table = await Table.create(store, { fields: [{ name: 'k', type: 'STRING' }, { name: 'v', type: 'INT' }], primaryKeys: ['k'], options: { bucket: '1' } })
    // code point order: 'a' < U+E000 < U+FFFD < U+1F600 (UTF-16 units would put the last first)
    const keys = ['', 'a', '\uE000', '\uFFFD', '\u{1F600}', '\u{1F600}x']
    const put = (base: number) => writeBatch(table, keys.map((k, i) => ({ ...recordFromJson(table.view, { k, v: base + i }, `k ${i}`), where: `k ${i}` })))
    await put(0)
    expect((await readAll(await reopen(store))).map((r) => r[0])).toEqual(keys)
    for (const k of keys) expect(await lookup(await reopen(store), { k })).not.toBeNull()
    // a compaction reads both files (columnar) with the checks on
    await put(100)
    await compactTable(await reopen(store), { full: true })
    expect(await readAll(await reopen(store))).toEqual(keys.map((k, i) => [k, 100 + i]))
  })
})

describe('random single-byte flips in a data file', () => {
  it('a scan returns the written primary keys, or fails naming the file', async () => {
    const { store, table } = await writtenTable()
    const [{ key }] = await dataFiles(table)
    const bytes = (await store.get(key))!
    const want = ids(await readAll(table))
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 0, max: bytes.length - 1 }), fc.integer({ min: 1, max: 255 }), async (at, mask) => {
        await store.put(key, flipped(bytes, at, mask))
        try {
          const rows = await rowsOrNamed(store, key)
          if (rows) expect(ids(rows)).toEqual(want)
        } finally {
          await store.put(key, bytes)
        }
      }),
      { numRuns: 300 },
    )
  })

  it('a compaction rewrites the written primary keys, or fails naming the file', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.integer({ min: 1, max: 255 }), async (pos, mask) => {
        const { store, table } = await writtenTable()
        const [{ key }] = await dataFiles(table)
        const bytes = (await store.get(key))!
        await store.put(key, flipped(bytes, pos % bytes.length, mask))
        try {
          await compactReading(store)
        } catch (e) {
          expect((e as Error).message).toContain(key)
          return
        }
        // the compaction's output (or, where it failed to read, the file itself) reads back
        const rows = await rowsOrNamed(store, key)
        if (rows) expect(ids(rows)).toEqual(Array.from({ length: ROWS }, (_, i) => i))
      }),
      { numRuns: 60 },
    )
  })
})
