// Finding the latest snapshot is linearizable: a call that starts after a snapshot was
// created sees it, even when another call's probe for that id is still in flight
// (lib/manifest/snapshot-manager.ts). A shared probe answered "absent" before the snapshot
// existed must not answer a caller that came later: a compactor that believed an old
// snapshot was the latest compacted nothing, made no follow-up, and its job's key was the
// one every later writer of the bucket computed, so SQS dropped their jobs as duplicates
// (docs/reliability.md, the totals stall of soak run q).
//
// The store here delays the response of one GET after it has read the object: a slow S3
// response, which the embedded backend cannot time this precisely (a fault injected in a
// wrapper, the only mock in this file).

import { describe, expect, it } from 'vitest'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/table/table.ts'
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

describe('latest snapshot', () => {
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
})
