// A committer whose clock runs behind stamps its snapshots old (`timeMillis`). Aged by that
// stamp alone, such a snapshot went at the next expiration, long before
// `snapshot.time-retained` had passed; a record redelivered after its acknowledgement was
// lost then no longer found the snapshot its earlier attempt landed in, and was written a
// second time. Expiration now ages a snapshot by the later of its stamp and the store's
// time of its file (less STAMP_BEHIND_STORE_MS). The process's clock (Date) is the
// committer's; the store keeps its own, as S3 does.

import { afterEach, describe, expect, it, vi } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import type { IngestRecord } from '../lib/ingest/parse-records.ts'
import { ingest } from '../lib/ingest/ingest.ts'
import { STAMP_BEHIND_STORE_MS, expireSnapshots } from '../lib/maintenance/expire.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import type { ObjectInfo } from '../lib/store/object-store.ts'

const MIN = 60_000
const HOUR = 60 * MIN
const T0 = Date.UTC(2026, 0, 1, 12)

/** A store that stamps what it stores by its own clock, not by the caller's. */
class ServerClockStore extends MemoryStore {
  serverNow = T0
  private readonly stamped = new Map<string, number>()

  override async put(key: string, data: Uint8Array): Promise<void> {
    await super.put(key, data)
    this.stamped.set(key, this.serverNow)
  }

  override async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    const created = await super.putIfAbsent(key, data)
    if (created) this.stamped.set(key, this.serverNow)
    return created
  }

  override async head(key: string): Promise<ObjectInfo | null> {
    const h = await super.head(key)
    return h && { ...h, lastModified: this.stamped.get(key) ?? h.lastModified }
  }

  override async list(prefix: string): Promise<ObjectInfo[]> {
    return (await super.list(prefix)).map((o) => ({ ...o, lastModified: this.stamped.get(o.key) ?? o.lastModified }))
  }
}

const SCHEMA = {
  fields: [
    { name: 'k', type: 'STRING' },
    { name: 'qty', type: 'BIGINT' },
  ],
  primaryKeys: ['k'],
  options: { bucket: '1', 'merge-engine': 'aggregation', 'fields.qty.aggregate-function': 'sum', 'snapshot.num-retained.min': '1', 'snapshot.time-retained': '10 min' },
}

afterEach(() => {
  vi.useRealTimers()
})

/** Sets the committer's clock (the process's) and the store's. */
function clocks(store: ServerClockStore, committer: number, server: number): void {
  vi.setSystemTime(committer)
  store.serverNow = server
}

describe('expiration and a committer whose clock runs behind', () => {
  it('keeps its snapshots for time-retained of the store time, so a redelivered record is not written twice', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const store = new ServerClockStore({ uri: 'memory://slow-committer' })
    clocks(store, T0, T0)
    await Table.create(store, SCHEMA)
    const rejects = new MemoryStore()
    // each invocation in an environment of its own: a fresh handle, which remembers nothing it landed
    const write = (records: IngestRecord[], writerNow: number) =>
      ingest(records, { resolve: async () => ({ table: await Table.open(store), jobs: null }), defaultTable: 't', rejects, commitUser: 'writer', now: () => writerNow })
    const rec = (id: string, k: string, qty: number, again?: { firstReceivedAt: number }): IngestRecord => ({ id, source: id, body: JSON.stringify({ k, qty }), ...(again ? { receiveCount: 2, ...again } : {}) })

    // the first attempt commits on a clock an hour behind; its acknowledgement is lost
    clocks(store, T0 - HOUR, T0)
    const first = await write([rec('a', 'k1', 5), rec('b', 'k2', 1)], T0)
    expect(first.failedIds).toEqual([])
    const landed = first.tables[0].snapshotId
    expect((await (await Table.open(store)).snapshots.snapshot(landed))!.timeMillis).toBe(T0 - HOUR)
    clocks(store, T0 + MIN, T0 + MIN)
    await write([rec('c', 'k3', 2)], T0 + MIN)

    // maintenance, its clock right, five minutes on: the stamp says an hour old, the store 5 minutes
    clocks(store, T0 + 5 * MIN, T0 + 5 * MIN)
    expect((await expireSnapshots(await Table.open(store))).expired).toEqual([])

    // the record comes again beside another; the earlier attempt is found where it landed
    clocks(store, T0 + 6 * MIN, T0 + 6 * MIN)
    const again = await write([rec('a', 'k1', 5, { firstReceivedAt: T0 }), rec('d', 'k4', 3)], T0 + 6 * MIN)
    expect(again.failedIds).toEqual([])
    expect(again.tables[0].alreadyCommitted).toBe(1)
    const rows = new Map((await readAll(await Table.open(store))).map((r) => [r[0], r[1]]))
    expect(rows).toEqual(new Map([['k1', 5n], ['k2', 1n], ['k3', 2n], ['k4', 3n]]))

    // once time-retained has passed by the store's time too, the snapshot goes
    const after = T0 + 10 * MIN + STAMP_BEHIND_STORE_MS + 1
    clocks(store, after, after)
    expect((await expireSnapshots(await Table.open(store))).expired).toContain(landed)
  })

  it('a stamp within STAMP_BEHIND_STORE_MS of the store time ages the snapshot as Paimon does', async () => {
    vi.useFakeTimers({ toFake: ['Date'] })
    const store = new ServerClockStore({ uri: 'memory://stamp-close' })
    clocks(store, T0, T0)
    const table = await Table.create(store, SCHEMA)
    const rejects = new MemoryStore()
    // stamped 30 s before the store's time of the file: the stamp decides
    clocks(store, T0 - 30_000, T0)
    await ingest([{ id: 'a', source: 'a', body: '{"k":"k1","qty":1}' }], { resolve: async () => ({ table, jobs: null }), defaultTable: 't', rejects, commitUser: 'writer' })
    clocks(store, T0 + MIN, T0 + MIN)
    await ingest([{ id: 'b', source: 'b', body: '{"k":"k2","qty":1}' }], { resolve: async () => ({ table, jobs: null }), defaultTable: 't', rejects, commitUser: 'writer' })
    expect((await expireSnapshots(table, { now: T0 - 30_000 + 10 * MIN - 1 })).expired).toEqual([])
    expect((await expireSnapshots(table, { now: T0 - 30_000 + 10 * MIN + 1 })).expired).toEqual([1])
  })
})
