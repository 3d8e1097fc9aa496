// Snapshot expiration on local disk and embedded S3: which snapshots go under each retention
// option, that every retained snapshot still reads exactly as before and references no missing
// object, and that exactly the objects only expired snapshots used are deleted. The objects a
// snapshot needs are found here the way the reader finds them (planScan's split paths and the
// manifest lists), not through lib/maintenance/references.ts, so the two are checked against
// each other.

import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { fileIdentifier } from '../lib/manifest/identifiers.ts'
import { DataFileWriter } from '../lib/format/data-file-writer.ts'
import { type ExpireOptions, expireSnapshots } from '../lib/maintenance/expire.ts'
import { removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { snapshotReferences } from '../lib/maintenance/references.ts'
import { planScan, readAll, readSplitRecords } from '../lib/read/table-read.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { dataFileMeta, partitionStatsOf } from '../lib/table/file-meta.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { EARLIEST_KEY, indexKey, manifestKey, snapshotKey } from '../lib/table/paths.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import { type IndexManifestEntry, type ManifestEntry, type Row, type Snapshot, FileKind } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type Engine, type Op, TableModel, opArb, schemaFor, sortRows } from './helpers/model.ts'
import { bothStores } from './helpers/stores.ts'

const DAY = 86_400_000

/** What the table looked like at every snapshot, per the model. */
type History = Map<number, Row[]>

async function commit(table: Table, model: TableModel, history: History, ops: Op[]): Promise<void> {
  const before = await table.snapshots.latestId()
  const res = await writeBatch(table, ops.map((op, i) => ({ ...recordFromJson(table.view, op, `op ${i}`) })))
  model.applyBatch(ops)
  if (res.snapshotId > before) history.set(res.snapshotId, model.snapshot())
}

/** Object keys a read of `s` touches, found through the reader's own planning. */
async function readerKeys(table: Table, s: Snapshot): Promise<Set<string>> {
  const keys = new Set([manifestKey(s.baseManifestList), manifestKey(s.deltaManifestList)])
  for (const m of await table.manifests.dataManifests(s)) keys.add(manifestKey(m.fileName))
  const plan = await planScan(table, { snapshotId: s.id })
  for (const split of plan.splits) for (const e of split.files) keys.add(`${split.path}/${e.file.fileName}`)
  if (s.indexManifest) {
    keys.add(manifestKey(s.indexManifest))
    for (const e of await table.manifests.readIndexManifest(s.indexManifest)) keys.add(indexKey(e.fileName))
  }
  return keys
}

async function unionKeys(table: Table, ids: number[]): Promise<Set<string>> {
  const out = new Set<string>()
  for (const id of ids) for (const k of await readerKeys(table, (await table.snapshots.snapshot(id))!)) out.add(k)
  return out
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i)

/**
 * Runs one expiration and checks everything the brief promises, through a freshly opened
 * handle so no manifest cache can hide a deleted file: the expired snapshot files are gone,
 * every retained snapshot reads as recorded and every object it needs exists, and exactly
 * the objects only the expired snapshots needed were deleted.
 */
async function expireAndCheck(table: Table, history: History, opts: ExpireOptions) {
  const beforeEarliest = await table.snapshots.earliestId()
  const latest = await table.snapshots.latestId()
  const all = range(Math.max(1, beforeEarliest), latest)
  const needed = new Map<number, Set<string>>()
  for (const id of all) needed.set(id, await readerKeys(table, (await table.snapshots.snapshot(id))!))
  const listedBefore = new Set((await table.store.list('')).map((o) => o.key))

  const res = await expireSnapshots(table, opts)

  const fresh = await Table.open(table.store)
  expect(res.latest).toBe(latest)
  expect(res.expired).toEqual(range(beforeEarliest, res.earliest - 1))
  expect(await fresh.snapshots.earliestId()).toBe(res.earliest)
  expect(await fresh.snapshots.latestId()).toBe(latest)
  for (const id of res.expired) {
    expect(await table.store.head(snapshotKey(id))).toBeNull()
    await expect(readAll(fresh, { snapshotId: id })).rejects.toThrow(StrataInputError)
  }
  const keep = new Set<string>()
  for (const id of range(Math.max(1, res.earliest), latest)) {
    expect(sortRows(await readAll(fresh, { snapshotId: id }))).toEqual(history.get(id))
    for (const k of needed.get(id)!) {
      keep.add(k)
      expect(await table.store.head(k), `snapshot ${id} needs ${k}`).not.toBeNull()
    }
    // the library's reference walk names at least what the reader touches
    const refs = await snapshotReferences(fresh, (await fresh.snapshots.snapshot(id))!)
    for (const k of needed.get(id)!) expect(refs.has(k), `references of ${id} lack ${k}`).toBe(true)
  }
  const onlyExpired = new Set<string>()
  for (const id of res.expired) for (const k of needed.get(id)!) if (!keep.has(k)) onlyExpired.add(k)
  for (const k of onlyExpired) expect(await table.store.head(k), `${k} was used only by expired snapshots`).toBeNull()
  expect(res.deletedFiles).toBe(onlyExpired.size)
  // nothing else went: what disappeared is the expired snapshot files and those objects
  const listedAfter = new Set((await table.store.list('')).map((o) => o.key))
  const gone = [...listedBefore].filter((k) => !listedAfter.has(k)).sort()
  expect(gone).toEqual([...res.expired.map(snapshotKey), ...onlyExpired].sort())
  if (res.expired.length) expect(listedAfter.has(EARLIEST_KEY)).toBe(true)
  return res
}

/** A store whose `crashAt`-th delete throws, recording the deletes it was asked for. */
function crashingStore(inner: ObjectStore, crashAt: number, log: string[]): ObjectStore {
  let n = 0
  return {
    uri: inner.uri,
    get: (k) => inner.get(k),
    getRange: (k, a, b) => inner.getRange(k, a, b),
    head: (k) => inner.head(k),
    put: (k, d) => inner.put(k, d),
    putIfAbsent: (k, d) => inner.putIfAbsent(k, d),
    list: (p) => inner.list(p),
    async delete(k) {
      if (++n >= crashAt) throw new Error('crash')
      log.push(k)
      await inner.delete(k)
    },
  }
}

function batches(engine: Engine, n: number, seed: number): Op[][] {
  return fc.sample(fc.array(opArb(engine), { minLength: 1, maxLength: 8 }), { numRuns: n, seed })
}

/** Two partitions × two buckets, so data files sit in several directories. */
async function tableWith(store: Parameters<typeof Table.create>[0], n: number, seed = 7, options: Record<string, string> = {}) {
  const table = await Table.create(store, schemaFor('deduplicate', { bucket: '2', ...options }))
  const model = new TableModel('deduplicate')
  const history: History = new Map()
  for (const ops of batches('deduplicate', n, seed)) await commit(table, model, history, ops)
  return { table, model, history }
}

describe.each(bothStores())('snapshot expiration on $name', (stores) => {
  beforeAll(() => stores.setup())
  afterAll(() => stores.teardown())

  it('num-retained.min keeps the newest N; older ones go when past time-retained', async () => {
    const { table, history } = await tableWith(stores.fresh(), 8)
    const latest = await table.snapshots.latestId()
    const res = await expireAndCheck(table, history, { numRetainedMin: 3, timeRetainedMs: 0, now: Date.now() + DAY })
    expect(res.earliest).toBe(latest - 2)
    // again: nothing more to do
    const again = await expireAndCheck(table, history, { numRetainedMin: 3, timeRetainedMs: 0, now: Date.now() + DAY })
    expect(again.expired).toEqual([])
  })

  it('num-retained.max expires the oldest even when they are young', async () => {
    const { table, history } = await tableWith(stores.fresh(), 6, 11)
    const latest = await table.snapshots.latestId()
    const res = await expireAndCheck(table, history, { numRetainedMin: 1, numRetainedMax: 4, timeRetainedMs: DAY, now: Date.now() })
    expect(res.earliest).toBe(latest - 3)
    // the time rule alone (max unbounded) keeps every young snapshot
    const none = await expireAndCheck(table, history, { numRetainedMin: 1, timeRetainedMs: DAY, now: Date.now() })
    expect(none.expired).toEqual([])
  })

  it('time-retained: the first snapshot young enough stops expiration', async () => {
    const { table, history } = await tableWith(stores.fresh(), 8, 3)
    const latest = await table.snapshots.latestId()
    const times = new Map<number, number>()
    for (const id of range(1, latest)) times.set(id, (await table.snapshots.snapshot(id))!.timeMillis)
    const pivot = 5
    const retained = 60_000
    const res = await expireAndCheck(table, history, { numRetainedMin: 1, timeRetainedMs: retained, now: times.get(pivot)! + retained })
    // snapshots committed in the same millisecond as the pivot are as young as it
    const firstYoung = range(1, latest).find((id) => times.get(id)! >= times.get(pivot)!)!
    expect(res.earliest).toBe(firstYoung)
    expect(res.earliest).toBeLessThanOrEqual(pivot)
  })

  it('maxDeletes (snapshot.expire.limit) bounds one call; repeated calls finish the job', async () => {
    const { table, history } = await tableWith(stores.fresh(), 6, 5)
    const latest = await table.snapshots.latestId()
    const opts = { numRetainedMin: 2, timeRetainedMs: 0, now: Date.now() + DAY, maxDeletes: 2 }
    const seen: number[][] = []
    for (;;) {
      const res = await expireAndCheck(table, history, opts)
      if (res.expired.length === 0) break
      expect(res.expired.length).toBeLessThanOrEqual(2)
      seen.push(res.expired)
    }
    expect(seen.flat()).toEqual(range(1, latest - 2))
  })

  it("the table's snapshot.expire.limit bounds a call that names no maxDeletes", async () => {
    const { table, history } = await tableWith(stores.fresh(), 6, 5, { 'snapshot.expire.limit': '3' })
    const res = await expireAndCheck(table, history, { numRetainedMin: 1, timeRetainedMs: 0, now: Date.now() + DAY })
    expect(res.expired).toEqual(range(1, 3))
  })

  it('never expires the latest snapshot, and reads of it are unchanged', async () => {
    const { table, history, model } = await tableWith(stores.fresh(), 5, 9)
    const latest = await table.snapshots.latestId()
    const res = await expireAndCheck(table, history, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0, now: Date.now() + DAY })
    expect(res.expired).toEqual(range(1, latest - 1))
    expect(sortRows(await readAll(await Table.open(table.store)))).toEqual(model.snapshot())
  })

  it('manifest merges: old manifests folded into one are deleted once no retained snapshot names them', async () => {
    // manifests are grouped by partition and bucket group; past manifest.merge-min-count
    // manifests in one group (10 here, two partitions of ~16 commits each) a commit folds them
    const { table, history } = await tableWith(stores.fresh(), 32, 13, { 'manifest.merge-min-count': '10' })
    const latest = await table.snapshots.latestId()
    const oldManifests = (await table.manifests.dataManifests((await table.snapshots.snapshot(20))!)).map((m) => m.fileName)
    expect(latest).toBe(32)
    const res = await expireAndCheck(table, history, { numRetainedMin: 1, timeRetainedMs: 0, now: Date.now() + DAY })
    expect(res.earliest).toBe(latest)
    const gone = await Promise.all(oldManifests.map(async (m) => (await table.store.head(manifestKey(m))) === null))
    expect(gone.some(Boolean)).toBe(true)
  })

  it('refuses bad options, naming the field', async () => {
    const { table } = await tableWith(stores.fresh(), 2)
    await expect(expireSnapshots(table, { numRetainedMin: 0 })).rejects.toThrow(/numRetainedMin = 0, expected an integer >= 1/)
    await expect(expireSnapshots(table, { numRetainedMin: 5, numRetainedMax: 2 })).rejects.toThrow(/numRetainedMin \(5\) is greater than numRetainedMax \(2\)/)
    await expect(expireSnapshots(table, { maxDeletes: 1.5 })).rejects.toThrow(/maxDeletes = 1.5/)
    await expect(expireSnapshots(table, { timeRetainedMs: -1 })).rejects.toThrow(/timeRetainedMs = -1/)
  })

  it('an empty table has nothing to expire; defaults (min 10, 1 h) keep a young table whole', async () => {
    const empty = await Table.create(stores.fresh(), schemaFor('deduplicate'))
    expect(await expireSnapshots(empty)).toEqual({ expired: [], deletedFiles: 0, earliest: 0, latest: 0 })
    const { table, history } = await tableWith(stores.fresh(), 11, 17)
    const res = await expireAndCheck(table, history, {})
    expect(res.expired).toEqual([])
    // Paimon writes a missing EARLIEST even when nothing expires
    expect(await table.store.head(EARLIEST_KEY)).not.toBeNull()
  })

  it('a commit racing with expiration loses nothing', async () => {
    const { table, model, history } = await tableWith(stores.fresh(), 6, 21)
    const ops = batches('deduplicate', 1, 99)[0]
    let during: number[] = []
    const before = await table.snapshots.latestId()
    // expire everything it can after the commit wrote its files and before its snapshot lands
    const res = await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)), {
      beforeSnapshotCreate: async () => {
        during = (await expireSnapshots(await Table.open(table.store), { numRetainedMin: 1, timeRetainedMs: 0, now: Date.now() + DAY })).expired
      },
    })
    model.applyBatch(ops)
    expect(res.snapshotId).toBe(before + 1)
    expect(during).toEqual(range(1, before - 1))
    history.set(res.snapshotId, model.snapshot())
    const fresh = await Table.open(table.store)
    for (const id of [before, res.snapshotId]) {
      expect(sortRows(await readAll(fresh, { snapshotId: id }))).toEqual(history.get(id))
      for (const k of await readerKeys(fresh, (await fresh.snapshots.snapshot(id))!)) expect(await table.store.head(k), k).not.toBeNull()
    }
  })

  it('COMPACT with a level upgrade and index files: objects are compared by path', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', { bucket: '1' }))
    const model = new TableModel('deduplicate')
    const history: History = new Map()
    const dt = '2024-05-01'
    const put = (id: number, a: number): Op => ({ _kind: '+I', dt, id, a, b: `v${a}`, c: a })
    for (let i = 0; i < 3; i++) await commit(table, model, history, [put(i, i), put(i + 1, 10 + i)])
    const view = table.view
    const live = await table.manifests.liveEntries((await table.snapshots.latest())!)
    expect(live.length).toBe(3)
    const [f1, f2, f3] = [...live].sort((x, y) => Number(x.file.maxSequenceNumber - y.file.maxSequenceNumber))

    // rewrite f1 + f2 into one level-4 file, as a compaction would
    const plan = await planScan(table)
    const split = { ...plan.splits[0], files: [f1, f2] }
    const writer = new DataFileWriter({ keyFields: view.keyFields, valueFields: view.fields })
    for await (const batch of readSplitRecords(table, split, view.fields.map((f) => f.name))) for (const kv of batch) writer.write(kv)
    const { bytes, stats } = writer.finish()
    const mergedName = 'data-compacted-0.parquet'
    await table.store.put(`${split.path}/${mergedName}`, bytes)
    const merged: ManifestEntry = { ...f1, kind: FileKind.ADD, file: dataFileMeta(view, mergedName, bytes.length, stats, 4, 1) }
    // f3 moves to level 5 without a rewrite: DELETE + ADD of the same file name
    const upgraded: ManifestEntry = { ...f3, kind: FileKind.ADD, file: { ...f3.file, level: 5 } }
    const indexEntry = (name: string): IndexManifestEntry => ({
      kind: FileKind.ADD, partition: f1.partition, bucket: 0, indexType: 'DELETION_VECTORS',
      fileName: name, fileSize: 4n, rowCount: 0n, dvRanges: [], externalPath: null,
    })
    const compact = async (adds: ManifestEntry[], deletes: ManifestEntry[], index: string) => {
      await table.store.put(indexKey(index), new Uint8Array([1, 2, 3, 4]))
      const r = await table.committer.commit({
        kind: 'COMPACT', adds, deletes,
        indexReplacements: [{ partition: f1.partition, bucket: 0, indexType: 'DELETION_VECTORS', entries: [indexEntry(index)] }],
        commitUser: 'compactor', commitIdentifier: 1n, baseSnapshotId: 0,
        partitionStats: (entries) => partitionStatsOf(view, entries),
        schemaId: 0, maxRetries: 3,
      })
      history.set(r.snapshotId, model.snapshot())
    }
    await compact([merged, upgraded], [f1, f2, f3], 'index-fake-0')
    // a second compaction replaces the index file, so index-fake-0 is only in snapshot 4
    await compact([], [], 'index-fake-1')
    for (let i = 0; i < 2; i++) await commit(table, model, history, [put(20 + i, i)])
    const latest = await table.snapshots.latestId()
    expect(latest).toBe(7)

    // the upgraded file's manifest identity is gone from the latest snapshot; its path is not
    const latestLive = await table.manifests.liveEntries((await table.snapshots.latest())!)
    expect(latestLive.map(fileIdentifier)).not.toContain(fileIdentifier(f3))
    expect(latestLive.map((e) => e.file.fileName)).toContain(f3.file.fileName)

    const res = await expireAndCheck(table, history, { numRetainedMin: 2, timeRetainedMs: 0, now: Date.now() + DAY })
    expect(res.expired).toEqual([1, 2, 3, 4, 5])
    const at = (e: ManifestEntry) => `${split.path}/${e.file.fileName}`
    expect(await table.store.head(at(f1))).toBeNull()
    expect(await table.store.head(at(f2))).toBeNull()
    expect(await table.store.head(at(f3))).not.toBeNull()
    expect(await table.store.head(`${split.path}/${mergedName}`)).not.toBeNull()
    expect(await table.store.head(indexKey('index-fake-0'))).toBeNull()
    expect(await table.store.head(indexKey('index-fake-1'))).not.toBeNull()
    expect(sortRows(await readAll(await Table.open(table.store)))).toEqual(model.snapshot())
  })

  it('a crash at any delete leaves every remaining snapshot whole; orphan cleanup then finishes the job', async () => {
    const { table, history } = await tableWith(stores.fresh(), 6, 31)
    const store = table.store
    const opts = { numRetainedMin: 2, timeRetainedMs: 0, now: Date.now() + DAY }
    const order: string[][] = []
    for (let crashAt = 1; ; crashAt++) {
      const deletes: string[] = []
      order.push(deletes)
      const crashing = crashingStore(store, crashAt, deletes)
      const done = await expireSnapshots(await Table.open(crashing), opts).then(
        () => true,
        (err: Error) => (expect(err.message).toBe('crash'), false),
      )
      // no existing snapshot points at a missing object, whatever the crash point
      const fresh = await Table.open(store)
      for (const id of range(await fresh.snapshots.earliestId(), await fresh.snapshots.latestId())) {
        expect(sortRows(await readAll(fresh, { snapshotId: id }))).toEqual(history.get(id))
        for (const k of await readerKeys(fresh, (await fresh.snapshots.snapshot(id))!)) expect(await store.head(k), `after crash at ${crashAt}: ${k}`).not.toBeNull()
      }
      if (done) break
    }
    expect(order.length).toBeGreaterThan(3)
    // within each call every snapshot file goes before any object it referenced
    for (const deletes of order) {
      const firstObject = deletes.findIndex((k) => !k.startsWith('snapshot/'))
      if (firstObject >= 0) expect(deletes.slice(firstObject).filter((k) => k.startsWith('snapshot/'))).toEqual([])
    }
    // what the crashes stranded is unreferenced, so orphan cleanup removes it; afterwards the
    // table holds exactly what its snapshots need
    await removeOrphanFiles(table, { now: Date.now() + 2 * DAY })
    const latest = await table.snapshots.latestId()
    const needed = new Set<string>()
    for (const id of range(latest - 1, latest)) for (const k of await readerKeys(table, (await table.snapshots.snapshot(id))!)) needed.add(k)
    const managed = (await store.list('')).map((o) => o.key).filter((k) => !k.startsWith('schema/') && !k.startsWith('snapshot/'))
    expect(managed.sort()).toEqual([...needed].sort())
  })

  it('property: random interleavings of writes and expirations keep every retained snapshot whole', async () => {
    const step = fc.oneof(
      { weight: 3, arbitrary: fc.array(opArb('deduplicate'), { minLength: 1, maxLength: 6 }).map((ops) => ({ write: ops })) },
      {
        weight: 1,
        arbitrary: fc.record({
          numRetainedMin: fc.integer({ min: 1, max: 4 }),
          numRetainedMax: fc.option(fc.integer({ min: 4, max: 6 }), { nil: undefined }),
          timeRetainedMs: fc.constantFrom(0, DAY),
          maxDeletes: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
        }).map((expire) => ({ expire })),
      },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 2, maxLength: stores.name === 's3' ? 6 : 10 }), async (steps) => {
        const table = await Table.create(stores.fresh(), schemaFor('deduplicate'))
        const model = new TableModel('deduplicate')
        const history: History = new Map()
        for (const s of steps) {
          if ('write' in s) await commit(table, model, history, s.write)
          else await expireAndCheck(table, history, { ...s.expire, now: Date.now() })
        }
        expect(sortRows(await readAll(await Table.open(table.store)))).toEqual(model.snapshot())
      }),
      { numRuns: stores.name === 's3' ? 3 : 8 },
    )
  })
})
