// What a warm process keeps between operations stays within its bounds, however many
// operations it serves: the byte-bounded LRU itself (model-checked with fast-check), the
// memory estimate it charges, and every cache of a table handle (metadata, snapshots, landed
// commits) and of the process (compiled Avro schemas, the embedded backend's records) after
// many rounds. Structural checks only: the bytes a cache counts never exceed its bound.
// Real stores, real Avro and Parquet files, the real embedded backend.

import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3'
import { CreateQueueCommand, DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs'
import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { LANDED_CACHE_BYTES } from '../lib/commit/landed.ts'
import { MAX_COMPILED_SCHEMAS, compiledSchemaCount, readAvroFile, writeAvroFile } from '../lib/format/avro.ts'
import { serializeSnapshot } from '../lib/format/snapshot.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { ByteLru, approximateBytes, cachedBytesInIsolate } from '../lib/format/byte-cache.ts'
import { SNAPSHOT_CACHE_BYTES } from '../lib/manifest/snapshot-manager.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { snapshotKey } from '../lib/table/paths.ts'
import { Table } from '../lib/handle/table.ts'
import { RowKind, type Snapshot } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { startEmbeddedBackend } from '../local/embedded.ts'

const schema = (buckets: number) => ({
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  partitionKeys: [],
  options: { bucket: String(buckets), 'deletion-vectors.enabled': 'true' },
})

describe('ByteLru', () => {
  it('reports what every live cache of the isolate charges (the soak separates caches filling from other growth)', () => {
    const before = cachedBytesInIsolate()
    const a = new ByteLru<string>(100)
    const b = new ByteLru<string>(50)
    a.set('x', 'x', 40)
    b.set('y', 'y', 30)
    expect(cachedBytesInIsolate() - before).toBe(70)
    // eviction and deletion are uncharged
    a.set('z', 'z', 70)
    b.delete('y')
    expect(cachedBytesInIsolate() - before).toBe(70)
    expect(a.bytes + b.bytes).toBe(70)
  })

  type Op = { op: 'set'; key: number; bytes: number } | { op: 'get'; key: number } | { op: 'delete'; key: number }
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ op: fc.constant('set' as const), key: fc.integer({ min: 0, max: 15 }), bytes: fc.integer({ min: 0, max: 120 }) }),
    fc.record({ op: fc.constant('get' as const), key: fc.integer({ min: 0, max: 15 }) }),
    fc.record({ op: fc.constant('delete' as const), key: fc.integer({ min: 0, max: 15 }) }),
  )

  it('never holds more bytes than its bound, and evicts the least recently used first (against a model)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 200 }), fc.array(op, { maxLength: 200 }), (max, ops) => {
        const lru = new ByteLru<string, number>(max)
        // the model: entries from coldest to most recent
        let model: { key: number; bytes: number }[] = []
        for (const o of ops) {
          if (o.op === 'set') {
            lru.set(o.key, `v${o.key}`, o.bytes)
            model = model.filter((e) => e.key !== o.key)
            if (o.bytes <= max) {
              model.push({ key: o.key, bytes: o.bytes })
              while (model.reduce((a, e) => a + e.bytes, 0) > max) model.shift()
            }
          } else if (o.op === 'get') {
            const i = model.findIndex((e) => e.key === o.key)
            expect(lru.get(o.key)).toBe(i < 0 ? undefined : `v${o.key}`)
            if (i >= 0) model.push(...model.splice(i, 1))
          } else {
            expect(lru.delete(o.key)).toBe(model.some((e) => e.key === o.key))
            model = model.filter((e) => e.key !== o.key)
          }
          expect(lru.bytes).toBeLessThanOrEqual(max)
          expect(lru.bytes).toBe(model.reduce((a, e) => a + e.bytes, 0))
          expect(lru.size).toBe(model.length)
        }
      }),
      { seed: 1606, numRuns: 300 },
    )
  })
})

describe('approximateBytes', () => {
  it('counts a shared ArrayBuffer once, a view of a larger buffer with all of it, and two-byte strings double', () => {
    const big = new Uint8Array(1 << 16)
    const a = big.subarray(0, 8)
    const b = big.subarray(8, 16)
    expect(approximateBytes([a, b])).toBeGreaterThanOrEqual(1 << 16)
    expect(approximateBytes([a, b])).toBeLessThan(approximateBytes([a, new Uint8Array(1 << 16).subarray(0, 8)]))
    expect(approximateBytes('é'.repeat(1000)) - approximateBytes('e'.repeat(1000))).toBe(0)
    expect(approximateBytes('€'.repeat(1000)) - approximateBytes('e'.repeat(1000))).toBe(1000)
    const cyclic: Record<string, unknown> = { name: 'x' }
    cyclic.self = cyclic
    expect(approximateBytes(cyclic)).toBeGreaterThan(0)
    expect(approximateBytes({ n: 2n ** 200n })).toBeGreaterThan(approximateBytes({ n: 1n }))
  })
})

describe("a table handle's caches", () => {
  it('stay within their byte bounds over many write → compact → expire → scan rounds, evicting as they go', async () => {
    const store = new MemoryStore()
    const bound = 64 * 1024
    const table = await Table.create(store, schema(4), { metadataCacheBytes: bound })
    let evicting = false
    for (let round = 0; round < 40; round++) {
      await writeBatch(table, Array.from({ length: 20 }, (_, i) => ({ kind: RowKind.INSERT, row: [BigInt((round * 7 + i) % 60), `r${round}`] })))
      await compactTable(table)
      await expireSnapshots(table, { numRetainedMin: 2, numRetainedMax: 4, timeRetainedMs: 0 })
      expect((await readAll(table)).length).toBe(Math.min(60, (round + 1) * 7 + 13))
      for (const stats of [table.manifests.cacheStats(), table.snapshots.cacheStats(), table.landed.cacheStats()]) {
        expect(stats.bytes).toBeLessThanOrEqual(stats.maxBytes)
      }
      evicting ||= table.manifests.cacheStats().evictions > 0
    }
    expect(evicting).toBe(true)
    // a small metadata budget bounds the snapshot and landed-commit caches too (their shares)
    expect(table.snapshots.cacheStats().maxBytes).toBe(bound / 32)
    expect(table.landed.cacheStats().maxBytes).toBe(bound / 8)
  })

  it('the snapshot and landed-commit caches take 1/32 and 1/8 of the metadata budget, at most their defaults', async () => {
    const store = new MemoryStore()
    const created = await Table.create(store, schema(2))
    await writeBatch(created, [{ kind: RowKind.INSERT, row: [1n, 'x'] }])
    await compactTable(created)
    const byDefault = await Table.open(store)
    expect(byDefault.snapshots.cacheStats().maxBytes).toBe(SNAPSHOT_CACHE_BYTES)
    expect(byDefault.landed.cacheStats().maxBytes).toBe(LANDED_CACHE_BYTES)
    const large = await Table.open(store, { metadataCacheBytes: 1024 * 1024 * 1024 })
    expect(large.snapshots.cacheStats().maxBytes).toBe(SNAPSHOT_CACHE_BYTES)
    expect(large.landed.cacheStats().maxBytes).toBe(LANDED_CACHE_BYTES)
    const small = await Table.open(store, { metadataCacheBytes: 2 * 1024 * 1024 })
    expect(small.snapshots.cacheStats().maxBytes).toBe(64 * 1024)
    expect(small.landed.cacheStats().maxBytes).toBe(256 * 1024)
    const off = await Table.open(store, { metadataCacheBytes: 0 })
    expect(off.snapshots.cacheStats().maxBytes).toBe(0)
    // a handle whose caches hold nothing still reads what it is asked
    expect((await off.snapshots.latest())?.id).toBe(2)
    expect(await readAll(off)).toEqual([[1n, 'x']])
  })

  it('a manifest the handle deletes is not served from its cache afterwards', async () => {
    const store = new MemoryStore()
    const table = await Table.create(store, schema(2))
    const { name } = await table.manifests.writeList([])
    expect(await table.manifests.readList(name)).toEqual([])
    const held = table.manifests.cacheStats().entries
    await table.manifests.deleteQuietly(name)
    expect(table.manifests.cacheStats().entries).toBe(held - 1)
    await expect(table.manifests.readList(name)).rejects.toThrow(/is missing/)
  })

  it('the snapshot cache stays within its bytes over thousands of snapshots read', async () => {
    const store = new MemoryStore()
    const table = await Table.create(store, schema(2))
    await writeBatch(table, [{ kind: RowKind.INSERT, row: [1n, 'x'] }])
    const first = (await table.snapshots.latest())!
    const count = 4000
    for (let id = 2; id <= count; id++) {
      const s: Snapshot = { ...first, id, commitIdentifier: BigInt(id), properties: { note: 'x'.repeat(200) } }
      await store.put(snapshotKey(id), new TextEncoder().encode(serializeSnapshot(s)))
    }
    for (let id = 1; id <= count; id++) {
      expect((await table.snapshots.snapshot(id))?.id).toBe(id)
      if (id % 500 === 0) expect(table.snapshots.cacheStats().bytes).toBeLessThanOrEqual(SNAPSHOT_CACHE_BYTES)
    }
    const stats = table.snapshots.cacheStats()
    expect(stats.entries).toBeLessThan(count)
    expect(stats.evictions).toBeGreaterThan(0)
  })

  it('the landed-commits cache stays within its bytes however many commits a snapshot folds', async () => {
    const table = await Table.create(new MemoryStore(), schema(2))
    // a fold of 1,000 commits per snapshot, as a committer draining its queue lands
    const keys = Array.from({ length: 1000 }, (_, i) => `APPEND|${1_000_000_000 + i}|strata-writer-strata-writer`)
    for (let id = 1; id <= 200; id++) {
      table.landed.remember(id, keys.map((k) => `${k}-${id}`))
      expect(table.landed.cacheStats().bytes).toBeLessThanOrEqual(LANDED_CACHE_BYTES)
    }
    expect(table.landed.cacheStats().entries).toBeLessThan(200)
  })
})

describe('process-wide caches', () => {
  it('compiled Avro schemas: at most MAX_COMPILED_SCHEMAS per cache however many distinct writer schemas are read', () => {
    for (let i = 0; i < 2 * MAX_COMPILED_SCHEMAS + 10; i++) {
      const s = { type: 'record', name: `r${i}`, fields: [{ name: `f${i}`, type: 'long' }] }
      const bytes = writeAvroFile(s, [{ [`f${i}`]: BigInt(i) }], 'none')
      expect(readAvroFile(bytes).records).toEqual([{ [`f${i}`]: BigInt(i) }])
      expect(compiledSchemaCount()).toBeLessThanOrEqual(2 * MAX_COMPILED_SCHEMAS)
    }
  })

  it('the embedded backend keeps each stored body in its own allocation, no record of deleted objects or of messages received and deleted, and deduplication records for 5 minutes', async () => {
    const backend = await startEmbeddedBackend()
    const sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials })
    try {
      await backend.createBucket('cache-bounds')
      const s3 = backend.s3Client()
      for (let i = 0; i < 50; i++) await s3.send(new PutObjectCommand({ Bucket: 'cache-bounds', Key: `k${i}`, Body: new Uint8Array(100 + i) }))
      // each body in an allocation of its own: a small one is not a slice of a shared 8 KiB pool slab
      expect(backend.stats().s3).toMatchObject({ objects: 50, bytes: 50 * 100 + (49 * 50) / 2, retainedBytes: 50 * 100 + (49 * 50) / 2 })
      for (let i = 0; i < 50; i++) await s3.send(new DeleteObjectCommand({ Bucket: 'cache-bounds', Key: `k${i}` }))
      expect(backend.stats().s3).toMatchObject({ objects: 0, bytes: 0, retainedBytes: 0 })

      const url = (await sqs.send(new CreateQueueCommand({ QueueName: 'bounds.fifo', Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' } }))).QueueUrl!
      for (let round = 0; round < 10; round++) {
        await sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: Array.from({ length: 10 }, (_, i) => ({ Id: String(i), MessageBody: `m${round}-${i}`, MessageGroupId: `g${i % 3}` })) }))
        for (let received = 0; received < 10; ) {
          const got = (await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10 }))).Messages ?? []
          if (got.length) await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: got.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }))
          received += got.length
        }
      }
      const q = backend.stats().sqs.find((x) => x.name === 'bounds.fifo')!
      expect(q).toMatchObject({ visible: 0, inflight: 0, delayed: 0, groups: 0, lockedGroups: 0 })
      // deduplication records: one per message sent in the last 5 minutes (SQS's window) ...
      expect(q.dedupRecords).toBe(100)
      // ... and none older: 6 minutes later, the next send leaves only its own
      vi.setSystemTime(Date.now() + 6 * 60_000)
      try {
        await sqs.send(new SendMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: '0', MessageBody: 'later', MessageGroupId: 'g0' }] }))
      } finally {
        vi.useRealTimers()
      }
      expect(backend.stats().sqs.find((x) => x.name === 'bounds.fifo')!.dedupRecords).toBe(1)
    } finally {
      sqs.destroy()
      await backend.stop()
    }
  })
})
