// Issue 14 item 1: independent object-store requests go out together, at most
// `io.max-concurrent-requests` of one operation at once, and the snapshot lookup is two
// dependent requests. Measured on a TracedStore (test/helpers/traced-store.ts): which
// requests overlapped and how long the chain of dependent ones was; never a clock.

import { describe, expect, it, vi } from 'vitest'
import type { CommitRequest, Committer } from '../lib/commit/committer.ts'
import { ingest } from '../lib/ingest/ingest.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { lookup, readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { Table } from '../lib/handle/table.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { LATEST_KEY } from '../lib/table/paths.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import type { Row } from '../lib/types.ts'
import { TracedStore, isDataFile } from './helpers/traced-store.ts'
import { S3_MAX_ATTEMPTS, S3_MAX_SOCKETS, S3Store, clientFromEnvironment } from '../lib/store/s3-store.ts'
import { startEmbeddedBackend } from '../local/embedded.ts'

function schema(options: Record<string, string>): unknown {
  return {
    fields: [
      { name: 'id', type: 'INT' },
      { name: 'v', type: 'STRING' },
    ],
    primaryKeys: ['id'],
    options,
  }
}

async function tracedTable(options: Record<string, string>): Promise<{ store: TracedStore; table: Table }> {
  const store = new TracedStore(new MemoryStore())
  const table = await Table.create(store, schema(options))
  return { store, table }
}

async function write(table: Table, ids: number[], v: string): Promise<number> {
  const recs = ids.map((id, i) => recordFromJson(table.view, { id, v: `${v}${id}` }, `row ${i}`))
  return (await writeBatch(table, recs)).snapshotId
}

const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i)
const sortById = (rows: Row[]) => [...rows].sort((a, b) => (a[0] as number) - (b[0] as number))
const isSnapshotKey = (c: { key: string }) => c.key.startsWith('snapshot/')

/** A committer that lands nothing: what a writer does before its commit, alone. */
class NoCommit implements Committer {
  requests: CommitRequest[] = []
  async commit(req: CommitRequest) {
    this.requests.push(req)
    return { snapshotId: req.baseSnapshotId + 1, retries: 0, deduplicated: false }
  }
}

describe('writer commit', () => {
  it('PUTs the data files of many buckets in parallel, never more than io.max-concurrent-requests at once', async () => {
    const { store, table } = await tracedTable({ bucket: '64', 'io.max-concurrent-requests': '5' })
    store.reset()
    const res = await writeBatch(table, range(600).map((id) => recordFromJson(table.view, { id, v: `a${id}` }, `row ${id}`)))
    expect(res.buckets.length).toBeGreaterThan(40)
    const dataPuts = (c: { op: string; key: string }) => c.op === 'put' && isDataFile(c)
    expect(store.count(dataPuts)).toBe(res.buckets.length)
    expect(store.maxInFlight(dataPuts)).toBe(5)
    // one chain per worker: ceil(buckets / 5) PUTs after the lookups, not one per bucket
    const putDepths = store.calls.filter(dataPuts).map((c) => c.depth)
    expect(Math.max(...putDepths) - Math.min(...putDepths) + 1).toBeLessThanOrEqual(Math.ceil(res.buckets.length / 5))
    expect(sortById(await readAll(table))).toEqual(range(600).map((id) => [id, `a${id}`]))
  })

  it('with the default option, a batch over 128 buckets has all its PUTs in flight at once up to 64', async () => {
    const { store, table } = await tracedTable({ bucket: '128' })
    store.reset()
    const res = await writeBatch(table, range(1200).map((id) => recordFromJson(table.view, { id, v: `a${id}` }, `row ${id}`)))
    expect(res.buckets.length).toBeGreaterThan(64)
    expect(store.maxInFlight((c) => c.op === 'put' && isDataFile(c))).toBe(64)
  })

  it('a failed PUT fails the batch once the PUTs in flight have settled, and starts no more', async () => {
    const inner = new MemoryStore()
    let puts = 0
    const failing = Object.assign(Object.create(inner) as MemoryStore, {
      async put(key: string, data: Uint8Array) {
        if (isDataFile({ key }) && ++puts === 3) throw new Error('injected PUT failure')
        await new Promise((r) => setImmediate(r))
        return inner.put(key, data)
      },
    })
    const table = await Table.create(failing, schema({ bucket: '64', 'io.max-concurrent-requests': '4' }))
    await expect(writeBatch(table, range(600).map((id) => recordFromJson(table.view, { id, v: 'x' }, `row ${id}`)))).rejects.toThrow('injected PUT failure')
    const settled = puts
    await new Promise((r) => setTimeout(r, 20))
    // nothing started after the failure was reported, and far fewer than 64 were tried
    expect(puts).toBe(settled)
    expect(puts).toBeLessThan(10)
    expect(await table.snapshots.latestId()).toBe(0)
  })

  it('reads the latest snapshot in two dependent requests and does not fetch it again for the sequence floor', async () => {
    const { store, table } = await tracedTable({ bucket: '4' })
    for (let i = 0; i < 3; i++) await write(table, range(20, i * 20), 'w')
    const fresh = await Table.open(store)
    store.reset()
    const committer = new NoCommit()
    await writeBatch(fresh, range(10).map((id) => recordFromJson(fresh.view, { id, v: 'x' }, `row ${id}`)), { committer })
    expect(committer.requests[0].baseSnapshotId).toBe(3)
    const snapshotReads = store.calls.filter(isSnapshotKey)
    expect(snapshotReads.map((c) => `${c.op} ${c.key}@${c.depth}`).sort()).toEqual(['get snapshot/LATEST@1', 'get snapshot/snapshot-3@2', 'get snapshot/snapshot-4@2'])
  })
})

describe('snapshot lookup', () => {
  async function withSnapshots(n: number) {
    const { store, table } = await tracedTable({ bucket: '1' })
    for (let i = 0; i < n; i++) await write(table, [i], 'v')
    return { store, fresh: await Table.open(store) }
  }

  it('is two dependent requests when LATEST is current: GET LATEST, then GET N and GET N+1 at once', async () => {
    const { store, fresh } = await withSnapshots(5)
    store.reset()
    const s = await fresh.snapshots.latest()
    expect(s?.id).toBe(5)
    expect(store.depth).toBe(2)
    expect(store.calls.map((c) => `${c.op} ${c.key}`).sort()).toEqual(['get snapshot/LATEST', 'get snapshot/snapshot-5', 'get snapshot/snapshot-6'])
    // the body came with it: asking for it again costs nothing
    store.reset()
    expect(await fresh.snapshots.snapshot(5)).toBe(s)
    expect(store.calls).toEqual([])
  })

  it('latestId() costs the same two steps and answers the same id', async () => {
    const { store, fresh } = await withSnapshots(3)
    store.reset()
    expect(await fresh.snapshots.latestId()).toBe(3)
    expect(store.depth).toBe(2)
  })

  it('probes forward past a stale LATEST, one more step per snapshot it is behind', async () => {
    const { store, fresh } = await withSnapshots(6)
    await store.inner.put(LATEST_KEY, new TextEncoder().encode('4'))
    store.reset()
    expect((await fresh.snapshots.latest())?.id).toBe(6)
    // LATEST; 4 and 5; 6; 7 (absent)
    expect(store.depth).toBe(4)
  })

  it('lists the directory when LATEST is missing or names an expired snapshot', async () => {
    const { store, fresh } = await withSnapshots(4)
    await store.inner.delete(LATEST_KEY)
    store.reset()
    expect((await fresh.snapshots.latest())?.id).toBe(4)
    // LATEST (absent); LIST; 4 and 5
    expect(store.depth).toBe(3)
    await store.inner.put(LATEST_KEY, new TextEncoder().encode('1'))
    await store.inner.delete('snapshot/snapshot-1')
    const other = await Table.open(store)
    store.reset()
    expect((await other.snapshots.latest())?.id).toBe(4)
    // LATEST; 1 (absent) and 2; LIST; 4 and 5
    expect(store.depth).toBe(4)
  })

  it('is null with an id of 0 on a table without snapshots', async () => {
    const { store, table } = await tracedTable({ bucket: '1' })
    store.reset()
    expect(await table.snapshots.latest()).toBeNull()
    expect(await table.snapshots.latestId()).toBe(0)
  })

  it('a writer batch through ingest looks the latest snapshot up once', async () => {
    const { store, table } = await tracedTable({ bucket: '4' })
    await write(table, range(8), 'a')
    store.reset()
    const committer = new NoCommit()
    const records = range(6).map((id) => ({ id: `m${id}`, source: `q#m${id}`, body: JSON.stringify({ id, v: 'b' }) }))
    const res = await ingest(records, { resolve: async () => ({ table, jobs: null, committer }), defaultTable: 't', rejects: new MemoryStore(), commitUser: 'w' })
    expect(res.errors).toEqual([])
    // the handle knows snapshot 1 (it wrote it): a probe of snapshot 2 and the body of 1, at
    // once; no hint read
    const lookups = store.calls.filter((c) => c.key === LATEST_KEY || c.key.startsWith('snapshot/'))
    expect(lookups.map((c) => `${c.op} ${c.key}`).sort()).toEqual(['get snapshot/snapshot-1', 'get snapshot/snapshot-2'])
    expect(new Set(lookups.map((c) => c.depth)).size).toBe(1)
    expect(committer.requests[0].baseSnapshotId).toBe(1)
  })
})

describe('compaction', () => {
  it('opens its level-0 inputs together, at most io.max-concurrent-requests at once, and reads the same rows after', async () => {
    const { store, table } = await tracedTable({ bucket: '1', 'io.max-concurrent-requests': '4', 'num-sorted-run.compaction-trigger': '20' })
    // overlapping files: each its own sorted run, all merged at once
    for (let i = 0; i < 12; i++) await write(table, range(10, i), `c${i}-`)
    const before = sortById(await readAll(table))
    const partition = (await table.manifests.liveEntries((await table.snapshots.latest())!))[0].partition
    store.reset()
    const res = await compactBucket(table, { partition, bucket: 0, full: true })
    expect(res.inputFiles).toBe(12)
    const dataReads = (c: { op: string; key: string }) => (c.op === 'getRange' || c.op === 'get') && isDataFile(c)
    expect(store.maxInFlight(dataReads)).toBe(4)
    expect(sortById(await readAll(table))).toEqual(before)
  })

  it('in deletion-vector mode, loads the vectors and opens the inputs and the older level together, and uploads the output beside the index file', async () => {
    const { store, table } = await tracedTable({ bucket: '1', 'deletion-vectors.enabled': 'true' })
    // a large older level, so universal compaction lifts the level-0 files alone and
    // looks their keys up in it
    await write(table, range(2000), 'a-padding-to-make-the-file-large-')
    const partition = (await table.manifests.liveEntries((await table.snapshots.latest())!))[0].partition
    await compactBucket(table, { partition, bucket: 0, full: true })
    // a first lift marks rows of the older level: the bucket now has a vector
    for (let i = 0; i < 3; i++) await write(table, range(10, i * 10), `c${i}-`)
    expect((await compactBucket(table, { partition, bucket: 0 })).rowsDeletedByVector).toBe(30)
    for (let i = 0; i < 3; i++) await write(table, range(10, 30 + i * 10), `d${i}-`)
    const fresh = await Table.open(store)
    store.reset()
    const res = await compactBucket(fresh, { partition, bucket: 0 })
    expect(res.inputFiles).toBeGreaterThanOrEqual(3)
    expect(res.rowsDeletedByVector).toBe(30)
    // the level-0 inputs, the older level it looks keys up in, and its vector: one step
    const reads = store.calls.filter((c) => c.op === 'getRange' && (isDataFile(c) || c.key.startsWith('index/')))
    const first = Math.min(...reads.map((c) => c.depth))
    expect(reads.filter((c) => c.depth === first && isDataFile(c)).length).toBe(res.inputFiles + 1)
    expect(reads.filter((c) => c.depth === first && c.key.startsWith('index/')).length).toBe(1)
    // the new data file and the new index file went up together
    expect(store.maxInFlight((c) => c.op === 'put' && (isDataFile(c) || c.key.startsWith('index/index-')))).toBe(2)
    const want = (id: number) => (id < 30 ? `c${Math.floor(id / 10)}-${id}` : id < 60 ? `d${Math.floor((id - 30) / 10)}-${id}` : `a-padding-to-make-the-file-large-${id}`)
    expect(sortById(await readAll(table))).toEqual(range(2000).map((id) => [id, want(id)]))
  })
})

describe('reads', () => {
  for (const dv of [false, true]) {
    it(`a scan opens files ahead across splits, at most io.max-concurrent-requests at once (${dv ? 'deletion vectors' : 'merge on read'})`, async () => {
      const { store, table } = await tracedTable({ bucket: '16', 'io.max-concurrent-requests': '6', 'deletion-vectors.enabled': String(dv) })
      for (let i = 0; i < 3; i++) await write(table, range(200, i * 50), `r${i}-`)
      if (dv) {
        for (const e of await table.manifests.liveEntries((await table.snapshots.latest())!)) {
          if (e.file.level === 0) await compactBucket(table, { partition: e.partition, bucket: e.bucket, full: true })
        }
      }
      store.reset()
      const rows = sortById(await readAll(table))
      const want = range(300).map((id) => [id, id >= 100 ? `r2-${id}` : id >= 50 ? `r1-${id}` : `r0-${id}`])
      expect(rows).toEqual(want)
      const dataReads = (c: { op: string; key: string }) => c.op === 'getRange' && isDataFile(c)
      expect(store.maxInFlight(dataReads)).toBe(6)
    })
  }

  it('a lookup searches the files that may hold the key at once', async () => {
    const { store, table } = await tracedTable({ bucket: '1', 'num-sorted-run.compaction-trigger': '20' })
    for (let i = 0; i < 6; i++) await write(table, [7, 100 + i], `l${i}-`)
    store.reset()
    expect(await lookup(table, { id: 7 })).toEqual([7, 'l5-7'])
    expect(store.maxInFlight((c) => c.op === 'getRange' && isDataFile(c))).toBe(6)
    expect(await lookup(table, { id: 103 })).toEqual([103, 'l3-103'])
    expect(await lookup(table, { id: 99 })).toBeNull()
  })
})

describe('S3 client', () => {
  it(`built from the environment, keeps up to ${S3_MAX_SOCKETS} kept-alive sockets, not the SDK's 50`, async () => {
    const backend = await startEmbeddedBackend()
    try {
      await backend.createBucket('sockets')
      vi.stubEnv('AWS_ENDPOINT_URL_S3', backend.endpoint)
      vi.stubEnv('AWS_REGION', backend.region)
      vi.stubEnv('AWS_ACCESS_KEY_ID', backend.credentials.accessKeyId)
      vi.stubEnv('AWS_SECRET_ACCESS_KEY', backend.credentials.secretAccessKey)
      const client = clientFromEnvironment()
      // the handler settles its agents on the first request
      expect(await new S3Store({ bucket: 'sockets', client }).get('absent')).toBeNull()
      type Agent = { maxSockets: number; keepAlive: boolean }
      const cfg = (client.config.requestHandler as unknown as { httpHandlerConfigs(): { httpAgent?: Agent; httpsAgent?: Agent } }).httpHandlerConfigs()
      for (const agent of [cfg.httpAgent, cfg.httpsAgent]) {
        expect(agent?.maxSockets).toBe(S3_MAX_SOCKETS)
        expect(agent?.keepAlive).toBe(true)
      }
      // retries as before
      expect(await client.config.maxAttempts()).toBe(S3_MAX_ATTEMPTS)
      client.destroy()
    } finally {
      vi.unstubAllEnvs()
      await backend.stop()
    }
  })
})
