// Finding the latest snapshot is linearizable: a call that starts after a snapshot was
// created sees it, even when another call's probe for that id is still in flight
// (lib/manifest/snapshot-manager.ts). A shared probe answered "absent" before the snapshot
// existed must not answer a caller that came later: a compactor that believed an old
// snapshot was the latest compacted nothing, made no follow-up, and its job's key was the
// one every later writer of the bucket computed, so SQS dropped their jobs as duplicates
// (docs/reliability.md, the totals stall of soak run q).
//
// And a handle left idle while expiration removed the snapshots it knew does not take the
// expired one it still caches for the latest (docs/reliability.md, run y): a compaction on it
// read deleted manifests, or found nothing and sent no follow-up. The clock those tests move
// is Date only (the handle's "seen in the store within SNAPSHOT_TRUST_MS"); timers stay real.
//
// The store in the first test delays the response of one GET after it has read the object: a
// slow S3 response, which the embedded backend cannot time this precisely (a fault injected
// in a wrapper, the only mock in this file; the request-count test only records calls).

import { afterEach, describe, expect, it, vi } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { readAll } from '../lib/read/table-read.ts'
import { SNAPSHOT_TRUST_MS } from '../lib/manifest/snapshot-manager.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { schemaFor } from './helpers/model.ts'

/** A store whose GETs of `key` read the object at once and answer only when released. */
class SlowAnswers extends MemoryStore {
  held: { key: string; release: () => void }[] = []
  slowKey: string | null = null
  override async get(key: string): Promise<Uint8Array | null> {
    const bytes = await super.get(key)
    if (key === this.slowKey) await new Promise<void>((release) => this.held.push({ key, release }))
    return bytes
  }
}

const row = (id: number, a: number) => ({ _kind: '+I', dt: '2024-05-01', id, a, b: null, c: null })

/** The clock moves on (only Date: timers stay real) past the time a handle trusts a snapshot it saw. */
function idleFor(ms: number): void {
  vi.useFakeTimers({ toFake: ['Date'] })
  vi.setSystemTime(Date.now() + ms)
}

describe('latest snapshot', () => {
  afterEach(() => {
    vi.useRealTimers()
  })

  it('a call made after snapshot N+1 was created returns it, though a probe of N+1 answered absent is still in flight', async () => {
    const store = new SlowAnswers()
    const writer = await Table.create(store, schemaFor('deduplicate', { bucket: '1' }))
    const put = async (id: number) => (await writeBatch(writer, [recordFromJson(writer.view, row(id, id), 'row')])).snapshotId
    expect(await put(1)).toBe(1)
    const reader = await Table.open(store)
    expect((await reader.snapshots.latest())?.id).toBe(1)

    // the reader's probe of snapshot 2 reads "absent" and its answer is held
    store.slowKey = 'snapshot/snapshot-2'
    const early = reader.snapshots.latest()
    await new Promise((r) => setTimeout(r, 10))
    expect(store.held.length).toBe(1)
    store.slowKey = null
    // snapshot 2 is created; a call starting now must see it
    expect(await put(2)).toBe(2)
    const late = reader.snapshots.latest()
    const lateFrom = reader.snapshots.latestFrom(1)
    const direct = reader.snapshots.snapshot(2)
    store.held.shift()!.release()
    expect((await early)?.id, 'the early call may answer either').toBeGreaterThanOrEqual(1)
    expect((await late)?.id).toBe(2)
    expect((await lateFrom)?.id).toBe(2)
    expect((await direct)?.id).toBe(2)
  })

  it('callers that start together while nothing changes share one GET of the next id', async () => {
    const store = new MemoryStore()
    const writer = await Table.create(store, schemaFor('deduplicate', { bucket: '1' }))
    await writeBatch(writer, [recordFromJson(writer.view, row(1, 1), 'row')])
    const reader = await Table.open(store)
    await reader.snapshots.latest()
    let gets = 0
    const get = store.get.bind(store)
    store.get = async (key) => (key === 'snapshot/snapshot-2' && gets++, get(key))
    const all = await Promise.all(Array.from({ length: 8 }, () => reader.snapshots.latest()))
    expect(all.map((s) => s?.id)).toEqual(Array(8).fill(1))
    expect(gets).toBe(1)
  })

  it('a handle left idle while expiration removed its snapshots finds the true latest, not the expired snapshot it cached', async () => {
    const store = new MemoryStore()
    const writer = await Table.create(store, schemaFor('deduplicate', { bucket: '1' }))
    const put = async (id: number) => (await writeBatch(writer, [recordFromJson(writer.view, row(id, id), 'row')])).snapshotId
    for (let i = 1; i <= 3; i++) await put(i)
    const idle = await Table.open(store)
    expect((await idle.snapshots.latest())?.id).toBe(3)
    expect((await idle.snapshots.snapshot(2))?.id).toBe(2)
    // the table moves on and expiration removes 1..14, the idle handle's 3 and 4 among them
    for (let i = 4; i <= 20; i++) await put(i)
    await expireSnapshots(writer, { numRetainedMin: 1, numRetainedMax: 6, timeRetainedMs: 0 })
    idleFor(SNAPSHOT_TRUST_MS + 1)
    expect(await store.get('snapshot/snapshot-3')).toBeNull()
    expect(await store.get('snapshot/snapshot-4')).toBeNull()
    // existence is asked of the store, though the handle still caches 2's content
    expect(await idle.snapshots.exists(2)).toBe(false)
    expect(await idle.snapshots.existing(2)).toBeNull()
    expect((await idle.snapshots.existing(20))?.id).toBe(20)
    expect((await idle.snapshots.latestFrom(3))?.id).toBe(20)
    // a chain that ends below a snapshot the handle has seen lost its top to expiration
    expect((await idle.snapshots.latestFrom(2))?.id).toBe(20)
    expect((await idle.snapshots.latest())?.id).toBe(20)
    const again = await Table.open(store)
    await again.snapshots.latest()
    expect((await again.snapshots.latest())?.id, 'a live cached top is still the latest').toBe(20)
  })

  it('a compaction on a handle left idle past expiration compacts from the true latest (before, it took the expired snapshot for the latest and found nothing to compact)', async () => {
    const store = new MemoryStore()
    const writer = await Table.create(store, schemaFor('deduplicate', { bucket: '1', 'deletion-vectors.enabled': 'true' }))
    const put = async (id: number, a: number) => writeBatch(writer, [recordFromJson(writer.view, row(id, a), 'row')])
    for (let id = 0; id < 4; id++) await put(id, id)
    await compactTable(writer)
    await put(1, 1)
    // the compactor's handle lifts that update over the top level: its snapshot has a deletion-vector index
    const compactor = await Table.open(store)
    await compactTable(compactor)
    expect((await compactor.snapshots.latest())?.indexManifest).toBeTruthy()
    for (let round = 2; round <= 12; round++) {
      await put(round % 4, round)
      await compactTable(writer)
    }
    await expireSnapshots(writer, { numRetainedMin: 1, numRetainedMax: 3, timeRetainedMs: 0 })
    await put(7, 70)
    idleFor(SNAPSHOT_TRUST_MS + 1)
    const results = await compactTable(compactor)
    expect(results.some((r) => r.snapshotId !== null)).toBe(true)
    const rows = (await readAll(writer)).map((r) => [r[1], r[2]])
    expect(rows.sort((x, y) => Number(x[0]) - Number(y[0]))).toEqual([[0, 12], [1, 9], [2, 10], [3, 11], [7, 70]])
  })

  it('a handle that saw its latest snapshot within SNAPSHOT_TRUST_MS asks only for the next id; after that, also whether its own is still there', async () => {
    const store = new MemoryStore()
    const writer = await Table.create(store, schemaFor('deduplicate', { bucket: '1' }))
    await writeBatch(writer, [recordFromJson(writer.view, row(1, 1), 'row')])
    const reader = await Table.open(store)
    expect((await reader.snapshots.latest())?.id).toBe(1)
    const asked: string[] = []
    const get = store.get.bind(store)
    const head = store.head.bind(store)
    store.get = async (key) => (asked.push(`GET ${key}`), get(key))
    store.head = async (key) => (asked.push(`HEAD ${key}`), head(key))
    expect((await reader.snapshots.latest())?.id).toBe(1)
    expect(asked).toEqual(['GET snapshot/snapshot-2'])
    asked.length = 0
    idleFor(SNAPSHOT_TRUST_MS + 1)
    expect((await reader.snapshots.latest())?.id).toBe(1)
    expect(asked.sort()).toEqual(['GET snapshot/snapshot-2', 'HEAD snapshot/snapshot-1'])
    // the HEAD renewed what the handle saw: the next call within the time asks for the next id only
    asked.length = 0
    expect((await reader.snapshots.latest())?.id).toBe(1)
    expect(asked).toEqual(['GET snapshot/snapshot-2'])
  })

  it('a LATEST hint left stale until it names an expired snapshot the handle still caches is not believed: the directory decides', async () => {
    const store = new MemoryStore()
    const writer = await Table.create(store, schemaFor('deduplicate', { bucket: '1' }))
    const put = async (id: number) => (await writeBatch(writer, [recordFromJson(writer.view, row(id, id), 'row')])).snapshotId
    for (let i = 1; i <= 3; i++) await put(i)
    await writer.snapshots.settleHints()
    const idle = await Table.open(store)
    expect((await idle.snapshots.latest())?.id).toBe(3)
    expect((await idle.snapshots.snapshot(2))?.id).toBe(2)
    for (let i = 4; i <= 20; i++) await put(i)
    await writer.snapshots.settleHints()
    await expireSnapshots(writer, { numRetainedMin: 1, numRetainedMax: 6, timeRetainedMs: 0 })
    // the hint names 2, a snapshot the idle handle caches, as if every rewrite of it since had failed
    await store.put('snapshot/LATEST', new TextEncoder().encode('2'))
    idleFor(SNAPSHOT_TRUST_MS + 1)
    expect((await idle.snapshots.latest())?.id).toBe(20)
  })
})
