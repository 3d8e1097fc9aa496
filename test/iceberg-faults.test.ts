// Iceberg metadata when things go wrong (docs/design.md "Iceberg metadata"): a metadata write
// that fails never fails or undoes the commit and the next snapshot catches up; two committers
// landing at once keep each other's versions whole; a base Strata did not write is rebuilt, not
// built on; orphan cleanup removes the manifests no version names; a hadoop-catalog directory
// lives in the warehouse. Faults are injected with FaultyStore: a failed PUT under metadata/
// cannot be caused otherwise.

import { describe, expect, it, vi } from 'vitest'
import { createTable, openTable } from '../lib/api/index.ts'
import { FaultyStore } from '../lib/store/faulty-store.ts'
import { InterceptingStore, type StoreOp } from '../lib/store/intercepting-store.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { removeOrphanFiles, MIN_ORPHAN_OLDER_THAN_MS } from '../lib/maintenance/orphans.ts'
import { readIcebergManifestList } from '../lib/iceberg/manifests.ts'

let n = 0
const SCHEMA = (options: Record<string, string> = {}) => ({
  fields: [{ name: 'k', type: 'INT NOT NULL' }, { name: 'v', type: 'STRING' }],
  primaryKeys: ['k'],
  options: { bucket: '2', 'metadata.iceberg.storage': 'table-location', ...options },
})
const text = async (s: ObjectStore, key: string) => new TextDecoder().decode((await s.get(key))!)
const versions = async (s: ObjectStore) => (await s.list('metadata/')).map((o) => o.key).filter((k) => k.endsWith('.metadata.json')).sort()

describe('Iceberg metadata under faults', () => {
  it('a failed metadata write neither fails nor undoes the commit; it is counted, and the next snapshot catches up', async () => {
    const uri = `memory://iceberg-faults-${n++}/wh/db.db/t`
    let faulty!: FaultyStore
    const t = await createTable(uri, SCHEMA(), { wrapStore: (s) => (faulty = new FaultyStore(s)) })
    await t.write([{ k: 1, v: 'a' }])
    await t.handle.iceberg!.settle()
    faulty.inject({ kind: 'error', when: (c) => c.key === 'metadata/v2.metadata.json', times: Infinity })
    const w = await t.write([{ k: 2, v: 'b' }])
    expect(w.snapshotId).toBe(2)
    await t.handle.iceberg!.settle()
    expect(t.handle.iceberg!.stats).toMatchObject({ failed: 1, written: 1 })
    expect(t.handle.iceberg!.stats.lastError).toMatch(/snapshot 2: injected fault/)
    expect(await versions(faulty)).toEqual(['metadata/v1.metadata.json'])
    faulty.heal()
    // the snapshot landed with its rows
    expect((await t.handle.snapshots.latest())!.totalRecordCount).toBe(2)
    await t.compact({ full: true })
    await t.handle.iceberg!.settle()
    expect(t.handle.iceberg!.stats).toMatchObject({ failed: 1, written: 2, rebuilt: 2 })
    // v1 falls out of the kept window (v2, v3)
    expect(await versions(faulty)).toEqual(['metadata/v3.metadata.json'])
    expect(await text(faulty, 'metadata/version-hint.text')).toBe('3')
  })

  it('two committers landing at once: each writes its own versions, none broken, the hint never moves back in a process', async () => {
    const uri = `memory://iceberg-faults-${n++}/wh/db.db/t`
    const a = await createTable(uri, SCHEMA({ 'metadata.iceberg.previous-versions-max': '50' }))
    const b = await openTable(uri)
    const store = a.handle.store
    const hints: string[] = []
    for (let i = 0; i < 6; i++) {
      await Promise.all([a.write([{ k: i, v: 'a' }]), b.write([{ k: 100 + i, v: 'b' }])])
      await Promise.all([a.handle.iceberg!.settle(), b.handle.iceberg!.settle()])
      hints.push(await text(store, 'metadata/version-hint.text'))
    }
    const latest = (await a.handle.snapshots.latest())!.id
    expect(latest).toBe(12)
    expect(await versions(store)).toHaveLength(12)
    for (const key of await versions(store)) {
      const meta = JSON.parse(await text(store, key))
      const list = meta.snapshots[0]['manifest-list'].slice(`${uri}/`.length)
      expect(await store.get(list)).not.toBeNull()
      for (const m of readIcebergManifestList((await store.get(list))!)) expect(await store.get(m.path.slice(`${uri}/`.length))).not.toBeNull()
    }
    expect(a.handle.iceberg!.stats.failed + b.handle.iceberg!.stats.failed).toBe(0)
    // every version exists that a hint named
    for (const h of hints) expect(await store.head(`metadata/v${h}.metadata.json`)).not.toBeNull()
  })

  it('two writers of the same version: one creates it, the other deletes what it wrote and builds on the winner', async () => {
    const uri = `memory://iceberg-faults-${n++}/wh/db.db/t`
    const t = await createTable(uri, SCHEMA())
    await t.write([{ k: 1, v: 'a' }])
    // a compaction, so each writer of v2 writes a manifest and a list of its own
    await t.compact({ full: true })
    await t.handle.iceberg!.settle()
    const store = t.handle.store
    await store.delete('metadata/v2.metadata.json')
    // the lost version's own files are orphans now; the writers below must leave no more
    const before = new Set((await store.list('metadata/')).map((o) => o.key))
    const [a, b] = [await openTable(uri), await openTable(uri)]
    await Promise.all([a.handle.iceberg!.catchUp(), b.handle.iceberg!.catchUp()])
    expect(a.handle.iceberg!.stats.written + b.handle.iceberg!.stats.written).toBe(1)
    const meta = JSON.parse(await text(store, 'metadata/v2.metadata.json'))
    const named = new Set([meta.snapshots[0]['manifest-list'].slice(`${uri}/`.length)])
    for (const m of readIcebergManifestList((await store.get([...named][0]))!)) named.add(m.path.slice(`${uri}/`.length))
    // what the loser wrote is gone: every file no version names was there before
    const v1 = JSON.parse(await text(store, 'metadata/v1.metadata.json'))
    named.add(v1.snapshots[0]['manifest-list'].slice(`${uri}/`.length))
    const unnamed = (await store.list('metadata/')).map((o) => o.key).filter((k) => k.endsWith('.avro') && !named.has(k))
    expect(unnamed.filter((k) => !before.has(k))).toEqual([])
    expect(named.size).toBeGreaterThan(1)
    // both build the next version on v2
    await a.write([{ k: 3, v: 'c' }])
    await a.handle.iceberg!.settle()
    expect(a.handle.iceberg!.stats.failed).toBe(0)
  })

  it('a base Strata did not write (Paimon Java\'s, without row lineage) is rebuilt from the snapshot, keeping its table uuid', async () => {
    const uri = `memory://iceberg-faults-${n++}/wh/db.db/t`
    const t = await createTable(uri, SCHEMA({ 'metadata.iceberg.format-version': '3' }))
    await t.write([{ k: 1, v: 'a' }])
    await t.handle.iceberg!.settle()
    const store = t.handle.store
    const v1 = JSON.parse(await text(store, 'metadata/v1.metadata.json'))
    // what Paimon 1.4.2 writes: no next-row-id, no mark of Strata
    delete v1['next-row-id']
    delete v1.snapshots[0].summary['written-by']
    v1['table-uuid'] = '0b8f6c1e-7a1d-4c55-9c38-2f5e1d3a9b70'
    await store.put('metadata/v1.metadata.json', new TextEncoder().encode(JSON.stringify(v1)))
    const fresh = await openTable(uri)
    await fresh.write([{ k: 2, v: 'b' }])
    await fresh.handle.iceberg!.settle()
    expect(fresh.handle.iceberg!.stats).toMatchObject({ rebuilt: 1, written: 1, failed: 0 })
    const v2 = JSON.parse(await text(store, 'metadata/v2.metadata.json'))
    expect(v2['table-uuid']).toBe('0b8f6c1e-7a1d-4c55-9c38-2f5e1d3a9b70')
    expect(typeof v2['next-row-id']).toBe('number')
  })

  it('orphan cleanup removes the Iceberg manifests and lists no version names (a crash between a version\'s deletion and its files\')', async () => {
    const uri = `memory://iceberg-faults-${n++}/wh/db.db/t`
    let faulty!: FaultyStore
    const t = await createTable(uri, SCHEMA({ 'num-sorted-run.compaction-trigger': '2' }), { wrapStore: (s) => (faulty = new FaultyStore(s)) })
    // the deletions of old versions' manifests and lists fail (the metadata files themselves go)
    faulty.inject({ kind: 'error', when: (c) => c.op === 'delete' && c.key.startsWith('metadata/') && c.key.endsWith('.avro'), times: Infinity })
    for (let i = 0; i < 4; i++) {
      await t.write([{ k: i, v: 'a' }])
      await t.compact({ full: true })
    }
    await t.handle.iceberg!.settle()
    faulty.heal()
    const named = new Set<string>()
    for (const key of await versions(faulty)) {
      const meta = JSON.parse(await text(faulty, key))
      const list = meta.snapshots[0]['manifest-list'].slice(`${uri}/`.length)
      named.add(list)
      for (const m of readIcebergManifestList((await faulty.get(list))!)) named.add(m.path.slice(`${uri}/`.length))
    }
    const avro = async () => (await faulty.list('metadata/')).map((o) => o.key).filter((k) => k.endsWith('.avro'))
    const orphans = (await avro()).filter((k) => !named.has(k))
    expect(orphans.length).toBeGreaterThan(0)
    // younger than the orphan age: kept
    expect((await removeOrphanFiles(t.handle, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS })).deleted.filter((k) => k.startsWith('metadata/'))).toEqual([])
    const r = await removeOrphanFiles(t.handle, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now: Date.now() + 2 * MIN_ORPHAN_OLDER_THAN_MS })
    expect(r.deleted.filter((k) => k.startsWith('metadata/')).sort()).toEqual(orphans.sort())
    expect((await avro()).sort()).toEqual([...named].sort())
  })

  it('hadoop-catalog: the metadata goes to <warehouse>/iceberg/<db>/<table>/metadata/, locations as full URIs', async () => {
    const warehouse = new MemoryStore({ uri: `memory://iceberg-faults-${n++}/wh` })
    const uri = `${warehouse.uri}/sales.db/orders`
    const catalogDir = new MemoryStore({ uri: `${warehouse.uri}/iceberg/sales/orders` })
    const published: [string, number][] = []
    const t = await createTable(uri, SCHEMA({ 'metadata.iceberg.storage': 'hadoop-catalog' }))
    const { Table } = await import('../lib/handle/table.ts')
    const h = await Table.open(t.handle.store, { icebergMetadataStore: catalogDir, icebergCatalog: { published: async (loc, id) => void published.push([loc, id]), flush: async () => {} } })
    expect(h.iceberg!.location).toMatchObject({ root: `${warehouse.uri}/iceberg/sales/orders`, inTable: false, database: 'sales', table: 'orders' })
    const { writeBatch } = await import('../lib/write/table-write.ts')
    await writeBatch(h, [{ kind: 0, row: [1, 'a'] }])
    await h.iceberg!.settle()
    expect(await versions(catalogDir)).toEqual(['metadata/v1.metadata.json'])
    expect(await t.handle.store.list('metadata/')).toEqual([])
    const meta = JSON.parse(await text(catalogDir, 'metadata/v1.metadata.json'))
    expect(meta.location).toBe(uri)
    expect(meta.snapshots[0]['manifest-list'].startsWith(`${warehouse.uri}/iceberg/sales/orders/metadata/snap-1-`)).toBe(true)
    expect(published).toEqual([[`${warehouse.uri}/iceberg/sales/orders/metadata/v1.metadata.json`, 1]])
  })

  it('hadoop-catalog: the first snapshot clears what a table dropped at the same place left in the catalog directory', async () => {
    const warehouse = new MemoryStore({ uri: `memory://iceberg-faults-${n++}/wh` })
    const catalogDir = new MemoryStore({ uri: `${warehouse.uri}/iceberg/sales/orders` })
    const stale = { 'format-version': 2, 'table-uuid': 'x', 'current-snapshot-id': 2, snapshots: [{ 'snapshot-id': 2, 'manifest-list': `${catalogDir.uri}/metadata/snap-2-old.avro`, summary: { operation: 'append', 'written-by': 'strata' } }] }
    for (const id of [1, 2]) await catalogDir.put(`metadata/v${id}.metadata.json`, new TextEncoder().encode(JSON.stringify({ ...stale, 'current-snapshot-id': id })))
    await catalogDir.put('metadata/snap-2-old.avro', new Uint8Array(8))
    const t = await createTable(`${warehouse.uri}/sales.db/orders`, SCHEMA({ 'metadata.iceberg.storage': 'hadoop-catalog' }), { icebergMetadataStore: catalogDir })
    await t.write([{ k: 1, v: 'a' }])
    await t.write([{ k: 2, v: 'b' }])
    await t.handle.iceberg!.settle()
    expect(t.handle.iceberg!.stats).toMatchObject({ written: 2, failed: 0 })
    // the old table's versions are gone; its files are orphans, named by no version
    expect((await catalogDir.list('metadata/')).map((o) => o.key).filter((k) => k.endsWith('.metadata.json')).sort()).toEqual(['metadata/v1.metadata.json', 'metadata/v2.metadata.json'])
    const v2 = JSON.parse(await text(catalogDir, 'metadata/v2.metadata.json'))
    expect(v2['table-uuid']).not.toBe('x')
  })
})

describe('version-hint.text', () => {
  it('names the newest version after an expiration queued the same snapshot again (a catch-up behind its own write)', async () => {
    const uri = `memory://iceberg-hint-${n++}/wh/db.db/t`
    // the version of snapshot 3 waits until the expiration's catch-up has looked for it and queued it too
    let release: (() => void) | null = null
    let held: Promise<void> = Promise.resolve()
    class HoldV3 extends InterceptingStore {
      protected async call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
        const v3 = key === 'metadata/v3.metadata.json'
        if (v3 && op === 'putIfAbsent') await held
        const out = await run()
        if (v3 && op === 'head' && release) (release(), (release = null))
        return out
      }
    }
    const t = await createTable(uri, SCHEMA({ 'snapshot.num-retained.min': '1', 'snapshot.num-retained.max': '2', 'snapshot.time-retained': '0 s' }), { wrapStore: (s) => new HoldV3(s) })
    for (const v of ['a', 'b']) {
      await t.write([{ k: 1, v }])
      await t.handle.iceberg!.settle()
    }
    held = new Promise<void>((r) => (release = r))
    // the write returns once its metadata is written, which waits for the expiration: expire
    // once snapshot 3 has landed, then let the write finish
    const writing = t.write([{ k: 1, v: 'c' }])
    await vi.waitFor(async () => expect(await t.handle.snapshots.latestId()).toBe(3), { timeout: 60_000, interval: 10 })
    const expired = await t.expire()
    await writing
    await t.handle.iceberg!.settle()
    expect(expired.expired.length).toBeGreaterThan(0)
    expect(await text(t.handle.store, 'metadata/version-hint.text')).toBe('3')
  })
})
