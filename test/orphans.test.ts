// Orphan-file cleanup on local disk and embedded S3: only old, unreferenced objects in the
// snapshot-managed directories go; everything a snapshot or tag references stays, however
// old; young objects stay; a write in flight keeps its files even at the smallest age
// accepted, and an age below it is refused before anything is deleted; after a crash inside
// expiration the cleanup removes exactly what expiration left behind; on the local store,
// old temp files of crashed writes go too. "Old" is made with fs.utimes on the local store,
// and on S3 (where a client cannot set LastModified) by choosing `now` between the old and
// new writes.

import { mkdir, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { bucketDirOf } from '../lib/handle/bucket-state.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { COMMIT_QUEUE_RETENTION_MS, DEFAULT_ORPHAN_OLDER_THAN_MS, LONGEST_COMMIT_DELAY_MS, MIN_ORPHAN_OLDER_THAN_MS, removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { COMMIT_QUEUE_RETENTION_SECONDS, parseDeployConfig } from '../cdk/config.ts'
import { planScan, readAll } from '../lib/read/table-read.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { indexKey, manifestKey, snapshotKey } from '../lib/table/paths.ts'
import { Table } from '../lib/handle/table.ts'
import type { Row, Snapshot } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type Op, TableModel, opArb, schemaFor, sortRows } from './helpers/model.ts'
import { bothStores } from './helpers/stores.ts'

const DAY = 86_400_000
const MINUTE = 60_000
const enc = new TextEncoder()
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

type History = Map<number, Row[]>

async function commit(table: Table, model: TableModel, history: History, ops: Op[]): Promise<void> {
  const before = await table.snapshots.latestId()
  const res = await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
  model.applyBatch(ops)
  if (res.snapshotId > before) history.set(res.snapshotId, model.snapshot())
}

async function setup(store: ObjectStore, n: number, seed: number) {
  const table = await Table.create(store, schemaFor('deduplicate', { bucket: '2' }))
  const model = new TableModel('deduplicate')
  const history: History = new Map()
  for (const ops of fc.sample(fc.array(opArb('deduplicate'), { minLength: 1, maxLength: 8 }), { numRuns: n, seed })) {
    await commit(table, model, history, ops)
  }
  return { table, model, history }
}

/** Object keys a read of `s` touches, found through the reader's planning (independent of references.ts). */
async function readerKeys(table: Table, s: Snapshot): Promise<Set<string>> {
  const keys = new Set([manifestKey(s.baseManifestList), manifestKey(s.deltaManifestList)])
  for (const m of await table.manifests.dataManifests(s)) keys.add(manifestKey(m.fileName))
  const plan = await planScan(table, { snapshotId: s.id })
  for (const split of plan.splits) for (const e of split.files) keys.add(`${split.path}/${e.file.fileName}`)
  if (s.indexManifest) {
    keys.add(manifestKey(s.indexManifest))
    for (const e of await table.manifests.readIndexManifest(s.indexManifest)) {
      keys.add(table.view.options.indexFileInDataFileDir ? `${bucketDirOf(table, e.partition, e.bucket).path}/${e.fileName}` : indexKey(e.fileName))
    }
  }
  return keys
}

async function keysOf(table: Table, ids: number[]): Promise<Set<string>> {
  const out = new Set<string>()
  for (const id of ids) for (const k of await readerKeys(table, (await table.snapshots.snapshot(id))!)) out.add(k)
  return out
}

const range = (from: number, to: number) => Array.from({ length: Math.max(0, to - from + 1) }, (_, i) => from + i)

/** Every existing snapshot reads as recorded and every object it needs exists (fresh handle, no caches). */
async function checkIntact(store: ObjectStore, history: History): Promise<void> {
  const table = await Table.open(store)
  const earliest = await table.snapshots.earliestId()
  const latest = await table.snapshots.latestId()
  for (const id of range(earliest, latest)) {
    expect(sortRows(await readAll(table, { snapshotId: id }))).toEqual(history.get(id))
    for (const k of await readerKeys(table, (await table.snapshots.snapshot(id))!)) expect(await store.head(k), `snapshot ${id} needs ${k}`).not.toBeNull()
  }
}

/**
 * Makes every object now in the store "old" for a cleanup with the default 1-day
 * `olderThanMs`, then writes `young` objects that must count as new. Returns the `now` to
 * pass: undefined on the local store (mtimes are moved two days back), on S3 the LastModified
 * of the first young object plus one day, rewriting the young ones until S3's clock (which
 * may count whole seconds) has moved past the old ones.
 */
async function ageAllThenWrite(store: ObjectStore, young: string[]): Promise<number | undefined> {
  const old = await store.list('')
  if (store instanceof LocalFileStore) {
    const t = new Date(Date.now() - 2 * DAY)
    await Promise.all(old.map((o) => utimes(join(store.root, ...o.key.split('/')), t, t)))
    for (const k of young) await store.put(k, enc.encode('young'))
    return undefined
  }
  const newestOld = Math.max(...old.map((o) => o.lastModified))
  for (;;) {
    for (const k of young) await store.put(k, enc.encode('young'))
    const times = await Promise.all(young.map(async (k) => (await store.head(k))!.lastModified))
    if (Math.min(...times) > newestOld) return Math.min(...times) + DAY
    await sleep(100)
  }
}

/** Moves a local file's modification time to `ms` (epoch millis). */
async function touchLocal(store: LocalFileStore, key: string, ms: number): Promise<void> {
  const t = new Date(ms)
  await utimes(join(store.root, ...key.split('/')), t, t)
}

/**
 * Writes `ops` and, once the write's data files and manifests exist but before its snapshot
 * does, runs `duringCommit` with the keys the write added and the earliest of their
 * modification times; then lets the commit land and records it in the model.
 */
async function writeWhile(
  table: Table,
  model: TableModel,
  history: History,
  ops: Op[],
  duringCommit: (written: string[], writtenAt: number) => Promise<void>,
): Promise<void> {
  const before = new Set((await table.store.list('')).map((o) => o.key))
  let ran = false
  const res = await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)), {
    beforeSnapshotCreate: async () => {
      if (ran) return
      ran = true
      const written = (await table.store.list('')).filter((o) => !before.has(o.key))
      await duringCommit(
        written.map((o) => o.key),
        Math.min(...written.map((o) => o.lastModified)),
      )
    },
  })
  expect(ran).toBe(true)
  model.applyBatch(ops)
  history.set(res.snapshotId, model.snapshot())
}

describe('the orphan age', () => {
  it('has a floor above the longest commit delay the deployed stack allows, and a default above the floor', async () => {
    // what the stack deploys: the commit queue's retention, and no function may run longer than Lambda's 15 min
    expect(COMMIT_QUEUE_RETENTION_MS).toBe(COMMIT_QUEUE_RETENTION_SECONDS * 1000)
    const schema = { fields: [{ name: 'id', type: 'INT' }], primaryKeys: ['id'], partitionKeys: [], options: { bucket: '1' } }
    const config = (table: Record<string, unknown>, functions: Record<string, unknown> = {}) => () => parseDeployConfig({ tables: [{ name: 't', schema, ...table }], functions }, 'cfg')
    expect(config({ compactor: { timeoutSeconds: 900 }, committer: { timeoutSeconds: 900 } }, { writer: { timeoutSeconds: 900 } })).not.toThrow()
    expect(config({ compactor: { timeoutSeconds: 901 } })).toThrow(/timeoutSeconds/)
    expect(config({ committer: { timeoutSeconds: 901 } })).toThrow(/timeoutSeconds/)
    expect(config({}, { writer: { timeoutSeconds: 901 } })).toThrow(/timeoutSeconds/)
    expect(LONGEST_COMMIT_DELAY_MS).toBe(15 * MINUTE + COMMIT_QUEUE_RETENTION_SECONDS * 1000 + 15 * MINUTE)
    expect(MIN_ORPHAN_OLDER_THAN_MS).toBe(13 * 60 * MINUTE)
    expect(MIN_ORPHAN_OLDER_THAN_MS).toBeGreaterThan(LONGEST_COMMIT_DELAY_MS)
    expect(DEFAULT_ORPHAN_OLDER_THAN_MS).toBe(DAY)
  })
})

describe.each(bothStores())('orphan cleanup on $name', (stores) => {
  beforeAll(() => stores.setup())
  afterAll(() => stores.teardown())

  it('deletes old unreferenced files only; referenced, young and unmanaged objects stay', async () => {
    const { table, history, model } = await setup(stores.fresh(), 4, 3)
    const store = table.store
    const before = new Set((await store.list('')).map((o) => o.key))
    // a commit that fails after writing its data files and manifests, before its snapshot
    const ops = fc.sample(fc.array(opArb('deduplicate'), { minLength: 4, maxLength: 8 }), { numRuns: 1, seed: 5 })[0]
    await expect(
      writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)), {
        beforeSnapshotCreate: () => {
          throw new Error('writer died')
        },
      }),
    ).rejects.toThrow('writer died')
    const failedCommit = (await store.list('')).map((o) => o.key).filter((k) => !before.has(k))
    expect(failedCommit.some((k) => k.endsWith('.parquet'))).toBe(true)
    expect(failedCommit.some((k) => k.startsWith('manifest/manifest-list-'))).toBe(true)
    const strays = ['dt=2024-05-01/bucket-0/data-stray-0.parquet', 'manifest/manifest-stray-0', 'index/index-stray-0', 'bucket-7/data-unpartitioned.parquet']
    const unmanaged = ['notes/readme.txt', 'snapshot/snapshot-notes', 'schema/schema-draft', 'dt=2024-05-01/readme.txt', 'tag/not-a-tag']
    for (const k of [...strays, ...unmanaged]) await store.put(k, enc.encode('stray'))
    const young = ['dt=2024-05-02/bucket-1/data-young-0.parquet', 'manifest/manifest-young-0', 'index/index-young-0']
    const now = await ageAllThenWrite(store, young)

    // 'bucket-7/…' is not a data directory of a table partitioned by dt, so it stays too
    const expected = [...failedCommit, ...strays.slice(0, 3)].sort()
    const listed = (await store.list('')).length
    const dry = await removeOrphanFiles(table, { now, dryRun: true })
    expect(dry.deleted).toEqual(expected)
    expect(dry.kept).toBe(listed - expected.length)
    for (const k of expected) expect(await store.head(k)).not.toBeNull()

    const res = await removeOrphanFiles(table, { now })
    expect(res).toEqual(dry)
    for (const k of expected) expect(await store.head(k), k).toBeNull()
    for (const k of [...young, ...unmanaged, strays[3]]) expect(await store.head(k), k).not.toBeNull()
    await checkIntact(store, history)
    expect(sortRows(await readAll(await Table.open(store)))).toEqual(model.snapshot())
    expect((await removeOrphanFiles(table, { now })).deleted).toEqual([])
  })

  it('index-file-in-data-file-dir: deletion-vector index files live in the bucket directories, and old as they are, cleanup keeps every one a snapshot references', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', { bucket: '2', 'deletion-vectors.enabled': 'true', 'index-file-in-data-file-dir': 'true' }))
    const model = new TableModel('deduplicate')
    const history: History = new Map()
    const put = (ids: number[], a: number): Op[] => ids.flatMap((id) => ['2024-05-01', '2024-05-02'].map((dt) => ({ _kind: '+I' as const, dt, id, a, b: null, c: null })))
    await commit(table, model, history, put([1, 2, 3, 4, 5, 6], 1))
    await compactTable(table, { full: true })
    // updates of rows above level 0: their compaction marks the old rows in deletion vectors
    for (const [ids, a] of [[[1, 2], 2], [[3], 3], [[1, 5], 4]] as const) {
      await commit(table, model, history, put([...ids], a))
      await compactTable(table, { full: false })
    }
    const keys = (await table.store.list('')).map((o) => o.key)
    const inBuckets = keys.filter((k) => /^dt=[^/]+\/bucket-\d+\/index-/.test(k))
    expect(inBuckets.length, 'index files in the bucket directories').toBeGreaterThan(0)
    expect(keys.filter((k) => k.startsWith('index/'))).toEqual([])
    const now = await ageAllThenWrite(table.store, ['notes/young'])
    // what each snapshot reads (with deletion vectors on, a snapshot's level 0 is not read)
    const ids = range(await table.snapshots.earliestId(), await table.snapshots.latestId())
    const reads = new Map<number, Row[]>()
    for (const id of ids) reads.set(id, sortRows(await readAll(table, { snapshotId: id })))
    // nothing was an orphan; every snapshot reads as it did and finds every object it needs
    expect((await removeOrphanFiles(table, { now })).deleted).toEqual([])
    const fresh = await Table.open(table.store)
    for (const id of ids) expect(sortRows(await readAll(fresh, { snapshotId: id })), `snapshot ${id}`).toEqual(reads.get(id))
    for (const k of await keysOf(fresh, ids)) expect(await table.store.head(k), k).not.toBeNull()
    expect(sortRows(await readAll(await Table.open(table.store)))).toEqual(model.snapshot())
  })

  it('after a crash between deleting snapshot files and their objects, removes exactly what expiration would have', async () => {
    const { table, history } = await setup(stores.fresh(), 6, 8)
    const store = table.store
    const expired = [1, 2, 3]
    const keep = await keysOf(table, range(4, 6))
    const leftover = [...(await keysOf(table, expired))].filter((k) => !keep.has(k)).sort()
    expect(leftover.length).toBeGreaterThan(0)
    // expiration steps 1 and 2 only
    for (const id of expired) await store.delete(snapshotKey(id))
    await table.snapshots.writeEarliestHint(4)
    for (const id of expired) table.snapshots.forget(id)
    const now = await ageAllThenWrite(store, ['manifest/manifest-young-1'])
    const res = await removeOrphanFiles(table, { now })
    expect(res.deleted).toEqual(leftover)
    await checkIntact(store, history)
    // expiration afterwards finds nothing of theirs left to delete
    const after = await expireSnapshots(table, { numRetainedMin: 3, timeRetainedMs: 0, now: Date.now() + DAY })
    expect(after.expired).toEqual([])
  })

  it('a Paimon tag pins its snapshot: expiration and cleanup keep what it references', async () => {
    const { table, history } = await setup(stores.fresh(), 5, 12)
    const store = table.store
    const tagged = (await store.get(snapshotKey(2)))!
    await store.put('tag/tag-release', tagged)
    const pinned = await keysOf(table, [2])
    const res = await expireSnapshots(table, { numRetainedMin: 1, timeRetainedMs: 0, now: Date.now() + DAY })
    expect(res.expired).toEqual([1, 2, 3, 4])
    const now = await ageAllThenWrite(store, ['manifest/manifest-young-2'])
    await removeOrphanFiles(table, { now })
    for (const k of pinned) expect(await store.head(k), k).not.toBeNull()
    await checkIntact(store, history)
    // the tag still reads as snapshot 2 did: put it back as a snapshot file and read it
    await store.put(snapshotKey(2), tagged)
    expect(sortRows(await readAll(await Table.open(store), { snapshotId: 2 }))).toEqual(history.get(2))
  })

  it('a commit in flight keeps its files: they are younger than olderThanMs', async () => {
    const { table, model, history } = await setup(stores.fresh(), 2, 4)
    const ops = fc.sample(fc.array(opArb('deduplicate'), { minLength: 1, maxLength: 6 }), { numRuns: 1, seed: 6 })[0]
    let deleted: string[] = ['not run']
    const res = await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)), {
      beforeSnapshotCreate: async () => {
        deleted = (await removeOrphanFiles(await Table.open(table.store))).deleted
      },
    })
    model.applyBatch(ops)
    history.set(res.snapshotId, model.snapshot())
    expect(deleted).toEqual([])
    await checkIntact(table.store, history)
  })

  it('a write in flight keeps its files at the smallest accepted age, at the latest its commit can land; the commit lands and every read succeeds', async () => {
    const { table, model, history } = await setup(stores.fresh(), 3, 9)
    const store = table.store
    const ops = fc.sample(fc.array(opArb('deduplicate'), { minLength: 4, maxLength: 8 }), { numRuns: 1, seed: 10 })[0]
    let deleted: string[] = []
    await writeWhile(table, model, history, ops, async (written, writtenAt) => {
      expect(written.some((k) => k.endsWith('.parquet'))).toBe(true)
      expect(written.some((k) => k.startsWith('manifest/'))).toBe(true)
      // the clock as late as the commit may land; the cutoff is then 30 min before the write
      const now = writtenAt + LONGEST_COMMIT_DELAY_MS
      const older = now - MIN_ORPHAN_OLDER_THAN_MS - 1
      const strays = ['dt=2024-05-01/bucket-0/data-stray-1.parquet', 'manifest/manifest-stray-1']
      if (store instanceof LocalFileStore) {
        // an orphan (and a crashed write's temp file) just older than the cutoff goes: the
        // cleanup is not idle at this clock
        for (const k of strays) {
          await store.put(k, enc.encode('stray'))
          await touchLocal(store, k, older)
        }
        await writeFile(join(store.root, 'manifest', '.tmp-crashed'), 'partial')
        await touchLocal(store, 'manifest/.tmp-crashed', older)
      }
      deleted = (await removeOrphanFiles(await Table.open(store), { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now })).deleted
      for (const k of written) expect(await store.head(k), k).not.toBeNull()
      if (store instanceof LocalFileStore) expect(deleted).toEqual([...strays.sort(), 'manifest/.tmp-crashed'])
      else expect(deleted).toEqual([])
    })
    await checkIntact(store, history)
    expect(sortRows(await readAll(await Table.open(store)))).toEqual(model.snapshot())
  })

  it('refuses an age below the floor while a write is in flight, deleting nothing; the write then lands intact', async () => {
    const { table, model, history } = await setup(stores.fresh(), 2, 11)
    const ops = fc.sample(fc.array(opArb('deduplicate'), { minLength: 2, maxLength: 6 }), { numRuns: 1, seed: 12 })[0]
    await writeWhile(table, model, history, ops, async (written) => {
      const keys = (await table.store.list('')).map((o) => o.key)
      for (const olderThanMs of [0, MIN_ORPHAN_OLDER_THAN_MS - 1]) {
        await expect(removeOrphanFiles(await Table.open(table.store), { olderThanMs, now: Date.now() + MINUTE })).rejects.toThrow(
          new RegExp(`^remove orphan files: olderThanMs = ${olderThanMs}: expected an orphan age of at least 13 h \\(46800000 ms\\): a commit can land up to 12 h 30 min after its files were written`),
        )
      }
      expect((await table.store.list('')).map((o) => o.key)).toEqual(keys)
      expect(written.length).toBeGreaterThan(0)
    })
    await checkIntact(table.store, history)
  })

  it('refuses bad options, naming the field', async () => {
    const { table } = await setup(stores.fresh(), 1, 1)
    await expect(removeOrphanFiles(table, { olderThanMs: -1 })).rejects.toThrow(/olderThanMs = -1: expected an orphan age of at least 13 h/)
    await expect(removeOrphanFiles(table, { olderThanMs: Number.NaN })).rejects.toThrow(/olderThanMs = NaN: expected an orphan age/)
    await expect(removeOrphanFiles(table, { now: Number.NaN })).rejects.toThrow(/now = NaN/)
  })
})

describe('orphan cleanup of crashed writes\' temp files on the local store', () => {
  const stores = bothStores()[0]
  beforeAll(() => stores.setup())
  afterAll(() => stores.teardown())

  it('removes old temp files anywhere under the table, keeps young ones, and lists neither as objects', async () => {
    const { table, history } = await setup(stores.fresh(), 2, 13)
    const store = table.store as LocalFileStore
    const now = Date.now()
    const old = ['manifest/.tmp-old-1', 'dt=2024-05-01/bucket-0/.tmp-old-2', 'snapshot/.tmp-old-3', '.tmp-old-4']
    const young = ['manifest/.tmp-young-1', 'snapshot/.tmp-young-2']
    for (const k of [...old, ...young]) {
      await mkdir(join(store.root, ...k.split('/').slice(0, -1)), { recursive: true })
      await writeFile(join(store.root, ...k.split('/')), 'partial')
    }
    for (const k of old) await touchLocal(store, k, now - MIN_ORPHAN_OLDER_THAN_MS - 1)
    for (const k of young) await touchLocal(store, k, now - MIN_ORPHAN_OLDER_THAN_MS + MINUTE)
    const objects = await store.list('')
    expect(objects.some((o) => o.key.includes('.tmp-'))).toBe(false)

    const dry = await removeOrphanFiles(table, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now, dryRun: true })
    expect(dry.deleted).toEqual([...old].sort())
    expect((await store.listLeftovers('')).length).toBe(old.length + young.length)
    const res = await removeOrphanFiles(table, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now })
    expect(res).toEqual(dry)
    expect((await store.listLeftovers('')).map((o) => o.key)).toEqual([...young].sort())
    expect(await store.list('')).toEqual(objects)
    await checkIntact(store, history)
  })
})
