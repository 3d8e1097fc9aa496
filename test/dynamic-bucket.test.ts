// Dynamic bucket mode (bucket -1; docs/design.md "Dynamic buckets"): keys go to buckets
// through the partition's HASH index, target-row-num keys a bucket; compaction keeps the
// index; and concurrent writers, direct or folded by the batching committer, never put a key
// in two buckets (a property against a model).

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { commitMessageJson, commitMessageOf, parseCommitMessageBody } from '../lib/commit/commit-message.ts'
import type { CommitRequest, CommitResult, Committer } from '../lib/commit/committer.ts'
import { CommitConflictError, CorruptFileError } from '../lib/errors.ts'
import { HASH_INDEX, readHashIndex, writeHashIndex } from '../lib/format/hash-index.ts'
import { Table } from '../lib/handle/table.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { indexKey } from '../lib/table/paths.ts'
import { DYNAMIC_BUCKET_ATTEMPTS, writeBatch } from '../lib/write/table-write.ts'
import { keyHash } from '../lib/write/dynamic-bucket.ts'
import { writeJsonLines } from '../lib/write/json-lines.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { bucketDirOf } from '../lib/handle/bucket-state.ts'
import { readDataFile } from '../lib/format/data-file-reader.ts'
import { byteSource } from '../lib/format/data-file-source.ts'
import type { IndexManifestEntry } from '../lib/types.ts'
import { type Op, TableModel, opArb, schemaFor, sortRows } from './helpers/model.ts'

const records = (table: Table, ops: Op[]) => ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`))
const insert = (id: number, dt = '2024-05-01'): Op => ({ _kind: '+I', dt, id, a: id, b: `v${id}`, c: null })

async function dynamicTable(extra: Record<string, string> = {}): Promise<Table> {
  const schema = schemaFor('deduplicate', { 'dynamic-bucket.target-row-num': '3', ...extra }) as { options: Record<string, string> }
  schema.options.bucket = '-1'
  return Table.create(new MemoryStore(), schema)
}

/** The HASH index of the latest snapshot: per (partition hex, bucket) its hashes. */
async function hashIndex(table: Table): Promise<{ entries: IndexManifestEntry[]; byBucket: Map<string, Int32Array> }> {
  const latest = await table.snapshots.latest()
  const entries = (await table.manifests.readIndexManifest(latest?.indexManifest)).filter((e) => e.indexType === HASH_INDEX)
  const byBucket = new Map<string, Int32Array>()
  for (const e of entries) byBucket.set(`${Buffer.from(e.partition).toString('hex')}|${e.bucket}`, readHashIndex((await table.store.get(indexKey(e.fileName)))!))
  return { entries, byBucket }
}

/**
 * Every live data file's keys by bucket: each (dt, id) must sit in one bucket only, and that
 * bucket's HASH file must hold the key's hash (the invariant readers and Paimon's assigner rely on).
 */
async function checkOneBucketPerKey(table: Table): Promise<void> {
  const latest = await table.snapshots.latest()
  if (!latest) return
  const { byBucket } = await hashIndex(table)
  const bucketOfKey = new Map<string, number>()
  for (const e of await table.manifests.liveEntries(latest)) {
    const pHex = Buffer.from(e.partition).toString('hex')
    const hashes = new Set(byBucket.get(`${pHex}|${e.bucket}`) ?? [])
    const bytes = (await table.store.get(`${bucketDirOf(table, e.partition, e.bucket).path}/${e.file.fileName}`))!
    for (const { key: kv } of await readDataFile(byteSource(bytes), { keyFields: table.view.keyFields, valueFields: table.view.fields })) {
      const k = `${pHex}|${JSON.stringify(kv)}`
      const seen = bucketOfKey.get(k)
      if (seen !== undefined && seen !== e.bucket) throw new Error(`key ${k} in buckets ${seen} and ${e.bucket}`)
      bucketOfKey.set(k, e.bucket)
      if (!hashes.has(keyHash(table.view.keyTypes, kv))) throw new Error(`key ${k} of bucket ${e.bucket} is not in its HASH file`)
    }
  }
  // and no hash in two buckets' files of one partition
  const owner = new Map<string, string>()
  for (const [id, hs] of byBucket) {
    const p = id.split('|')[0]
    for (const h of hs) {
      const prev = owner.get(`${p}|${h}`)
      if (prev !== undefined && prev !== id) throw new Error(`hash ${h} in ${prev} and ${id}`)
      owner.set(`${p}|${h}`, id)
    }
  }
}

describe('dynamic bucket mode', () => {
  it('assigns new keys to the first bucket under dynamic-bucket.target-row-num, keeps known keys where they are, and writes one HASH file per bucket', async () => {
    const table = await dynamicTable()
    const model = new TableModel('deduplicate')
    const first = Array.from({ length: 7 }, (_, i) => insert(i))
    await writeBatch(table, records(table, first))
    model.applyBatch(first)
    let idx = await hashIndex(table)
    expect([...idx.byBucket.entries()].map(([k, v]) => [k.split('|')[1], v.length]).sort()).toEqual([['0', 3], ['1', 3], ['2', 1]])
    expect(idx.entries.every((e) => e.rowCount === BigInt(idx.byBucket.get(`${Buffer.from(e.partition).toString('hex')}|${e.bucket}`)!.length) && e.dvRanges === null)).toBe(true)
    // updates of known keys and two new keys: the known ones stay, the new fill bucket 2
    const second: Op[] = [{ ...insert(0), a: 100 }, { ...insert(5), a: 500 }, insert(7), insert(8)]
    await writeBatch(table, records(table, second))
    model.applyBatch(second)
    idx = await hashIndex(table)
    expect([...idx.byBucket.entries()].map(([k, v]) => [k.split('|')[1], v.length]).sort()).toEqual([['0', 3], ['1', 3], ['2', 3]])
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    const live = await table.manifests.liveEntries((await table.snapshots.latest())!)
    expect(new Set(live.map((e) => e.totalBuckets))).toEqual(new Set([-1]))
    // a key filter cannot compute a dynamic key's bucket: it reads every bucket of the partition
    for (const id of [0, 5, 8]) expect(await readAll(table, { filter: { dt: '2024-05-01', id } })).toEqual(model.snapshot().filter((r) => r[1] === id))
    await checkOneBucketPerKey(table)
  })

  it('a retraction of a key never written does not grow the index (deduplicate); one of a known key goes to its bucket', async () => {
    const table = await dynamicTable()
    await writeBatch(table, records(table, [insert(1)]))
    const before = await hashIndex(table)
    const r = await writeBatch(table, records(table, [{ ...insert(42), _kind: '-D' }]))
    expect(r.rowsWritten).toBe(0)
    expect((await hashIndex(table)).entries.map((e) => e.fileName)).toEqual(before.entries.map((e) => e.fileName))
    await writeBatch(table, records(table, [{ ...insert(1), _kind: '-D' }]))
    expect(await readAll(table)).toEqual([])
    await checkOneBucketPerKey(table)
  })

  it('with aggregation (a lone -D can make a row) a retraction of a key never written is assigned and recorded, as Paimon does', async () => {
    const schema = schemaFor('aggregation', { 'dynamic-bucket.target-row-num': '3' }) as { options: Record<string, string> }
    schema.options.bucket = '-1'
    const table = await Table.create(new MemoryStore(), schema)
    await writeBatch(table, records(table, [insert(1)]))
    await writeBatch(table, records(table, [{ ...insert(42), a: null, b: null, _kind: '-D' }]))
    const idx = await hashIndex(table)
    expect([...idx.byBucket.values()].reduce((n, h) => n + h.length, 0)).toBe(2)
    await checkOneBucketPerKey(table)
  })

  it('compaction of every bucket keeps the HASH index as it was and the rows as the model has them', async () => {
    const table = await dynamicTable({ 'deletion-vectors.enabled': 'true' })
    const model = new TableModel('deduplicate')
    for (let round = 0; round < 3; round++) {
      const ops = Array.from({ length: 8 }, (_, i) => ({ ...insert(i * 2 + round, round % 2 ? '2024-05-02' : '2024-05-01'), a: round }))
      await writeBatch(table, records(table, ops))
      model.applyBatch(ops)
    }
    const before = (await hashIndex(table)).entries.map((e) => e.fileName).sort()
    const results = await compactTable(table, { full: true })
    expect(results.filter((r) => r.snapshotId !== null).length).toBeGreaterThan(0)
    expect((await hashIndex(table)).entries.map((e) => e.fileName).sort()).toEqual(before)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    // a write after the compaction still finds its keys' buckets (deletion vectors: visible once compacted)
    const more = [{ ...insert(0), a: 77 }, insert(99)]
    await writeBatch(table, records(table, more))
    model.applyBatch(more)
    await compactTable(table, {})
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    await checkOneBucketPerKey(table)
  })
})

/**
 * A committer that queues requests as commit messages and lands them when the test folds
 * them with the batching committer (what the committer function does with the queue): a
 * conflict comes back as the queued path's CommitConflictError, from the outcome's message.
 */
class FoldQueue implements Committer {
  pending: { message: ReturnType<typeof commitMessageOf>; resolve: (r: CommitResult) => void; reject: (e: unknown) => void }[] = []
  constructor(private readonly table: Table) {}

  commit(req: CommitRequest): Promise<CommitResult> {
    // through the queue's JSON codec, as the committer function receives it
    const received = parseCommitMessageBody(commitMessageJson(commitMessageOf(req)))
    if (!received.inline) throw new Error('a test message spilled')
    return new Promise((resolve, reject) => this.pending.push({ message: received.message, resolve, reject }))
  }

  async fold(): Promise<void> {
    const batch = this.pending.splice(0)
    if (batch.length === 0) return
    const r = await new BatchingCommitter(this.table).commit(batch.map((b) => b.message))
    r.outcomes.forEach((o, i) => {
      if (o.status === 'failed') batch[i].reject(o.conflict ? new CommitConflictError(o.error.message) : o.error)
      else batch[i].resolve({ snapshotId: o.snapshotId, retries: 0, deduplicated: o.status === 'duplicate' })
    })
  }
}

describe('concurrent writers', () => {
  const writerArb = fc.record({
    folded: fc.boolean(),
    batches: fc.array(fc.array(fc.record({ dt: fc.constantFrom('2024-05-01', '2024-05-02'), id: fc.integer({ min: 0, max: 11 }) }), { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 3 }),
  })

  it('never put a key in two buckets, direct or folded, and every key written is read with a value one of its writers gave it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(writerArb, { minLength: 2, maxLength: 4 }), fc.array(fc.nat({ max: 3 }), { minLength: 40, maxLength: 40 }), async (writers, ticks) => {
        const table = await dynamicTable({ 'dynamic-bucket.target-row-num': '2' })
        const queue = new FoldQueue(table)
        const written = new Map<string, Set<number>>()
        let done = 0
        const runs = writers.map(async (w, wi) => {
          for (const [bi, batch] of w.batches.entries()) {
            const tag = wi * 100 + bi
            const ops = batch.map(({ dt, id }): Op => ({ _kind: '+I', dt, id, a: tag, b: null, c: null }))
            for (const op of ops) {
              const k = `${op.dt}|${op.id}`
              written.set(k, (written.get(k) ?? new Set()).add(tag))
            }
            await writeBatch(table, records(table, ops), w.folded ? { committer: queue } : {})
          }
          done++
        })
        const all = Promise.all(runs)
        all.catch(() => undefined)
        // the committer folds whatever is queued, at points the ticks choose, until every writer is done
        for (let i = 0; done < writers.length; i++) {
          for (let t = 0; t < (ticks[i % ticks.length] ?? 0) + 1; t++) await new Promise((r) => setImmediate(r))
          await queue.fold()
        }
        await all
        await checkOneBucketPerKey(table)
        const rows = await readAll(table)
        expect(rows.map((r) => `${r[0]}|${r[1]}`).sort()).toEqual([...written.keys()].sort())
        for (const r of rows) expect(written.get(`${r[0]}|${r[1]}`)!.has(r[2] as number)).toBe(true)
      }),
      { numRuns: 20 },
    )
  })

  it('a writer whose assignment keeps conflicting gives up after DYNAMIC_BUCKET_ATTEMPTS, naming the conflict; nothing of it lands', async () => {
    const table = await dynamicTable()
    let attempts = 0
    // every attempt, just before its snapshot, another writer assigns a new key in the partition
    const r = await writeBatch(table, records(table, [insert(1)]), {
      beforeSnapshotCreate: async () => {
        attempts++
        await writeBatch(table, records(table, [insert(1000 + attempts)]))
      },
    }).catch((e: unknown) => e)
    expect(r).toBeInstanceOf(CommitConflictError)
    expect((r as Error).message).toMatch(/dynamic bucket conflict .* the HASH index of partition .* another commit assigned keys in the partition since/)
    expect(attempts).toBe(DYNAMIC_BUCKET_ATTEMPTS)
    expect((await readAll(table)).map((row) => row[1]).sort((a, b) => Number(a) - Number(b))).toEqual(Array.from({ length: DYNAMIC_BUCKET_ATTEMPTS }, (_, i) => 1001 + i))
    await checkOneBucketPerKey(table)
  })
})

describe('dynamic bucket options', () => {
  it('create refuses what Paimon refuses with bucket -1 (a bucket-key, max-buckets 0), naming the option', async () => {
    const withOptions = (o: Record<string, string>) => ({ ...(schemaFor('deduplicate') as object), options: { bucket: '-1', ...o } })
    await expect(Table.create(new MemoryStore(), withOptions({ 'bucket-key': 'id' }))).rejects.toThrow(/option 'bucket-key' is "id" with dynamic bucket mode \(bucket -1\)/)
    await expect(Table.create(new MemoryStore(), withOptions({ 'dynamic-bucket.max-buckets': '0' }))).rejects.toThrow(/option 'dynamic-bucket.max-buckets' is "0"; expected -1 \(no limit\) or at least 1/)
  })

  it('max-buckets caps a partition: once its buckets are full a new key goes to the bucket its hash picks, and a named bucket compacts', async () => {
    const table = await dynamicTable({ 'dynamic-bucket.target-row-num': '2', 'dynamic-bucket.max-buckets': '2' })
    const ops = Array.from({ length: 9 }, (_, i) => insert(i))
    await writeBatch(table, records(table, ops))
    const idx = await hashIndex(table)
    expect([...idx.byBucket.keys()].map((k) => k.split('|')[1]).sort()).toEqual(['0', '1'])
    expect([...idx.byBucket.values()].reduce((n, h) => n + h.length, 0)).toBe(9)
    const model = new TableModel('deduplicate')
    model.applyBatch(ops)
    const results = await compactTable(table, { bucket: 1, full: true })
    expect(results.map((r) => r.bucket)).toEqual([1])
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    await checkOneBucketPerKey(table)
  })
})

describe('dynamic bucket mode, streamed', () => {
  it("strata write's path (JSON lines through a BatchWriter, several flushes) parks each partition's records until its index is read and assigns them in order", async () => {
    const table = await dynamicTable({ 'write-buffer-size': '1 kb' })
    await writeBatch(table, records(table, [insert(0), insert(1)]))
    const ops = Array.from({ length: 40 }, (_, i) => insert(i % 20, i % 3 ? '2024-05-01' : '2024-05-02'))
    async function* input(): AsyncGenerator<string> {
      for (const op of ops) yield JSON.stringify({ ...op, _kind: undefined }) + '\n'
    }
    const r = await writeJsonLines(table, input(), { name: 'lines' })
    // write-buffer-size 1 kb: the batch flushed several times, each flush after its records were placed
    expect(r.buckets.reduce((n, b) => n + b.fileNames.length, 0)).toBeGreaterThan(r.buckets.length)
    expect(r.rowsIn).toBe(40)
    const model = new TableModel('deduplicate')
    model.applyBatch([insert(0), insert(1)])
    model.applyBatch(ops)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    await checkOneBucketPerKey(table)
  })
})

describe('dynamic bucket mode, maintenance', () => {
  it('expiration and orphan cleanup keep the live HASH files and remove the replaced ones; the next write still finds every key', async () => {
    const table = await dynamicTable({ 'snapshot.num-retained.min': '1', 'snapshot.num-retained.max': '1' })
    for (let round = 0; round < 4; round++) await writeBatch(table, records(table, [insert(round), insert(round + 10)]))
    const live = (await hashIndex(table)).entries.map((e) => indexKey(e.fileName)).sort()
    expect((await table.store.list('index/')).length).toBeGreaterThan(live.length)
    await expireSnapshots(table, { now: Date.now() + 86_400_000 })
    await removeOrphanFiles(table, { now: Date.now() + 7 * 86_400_000 })
    const indexFiles = (await table.store.list('index/')).map((o) => o.key).sort()
    expect(indexFiles).toEqual(live)
    const model = new TableModel('deduplicate')
    for (let round = 0; round < 4; round++) model.applyBatch([insert(round), insert(round + 10)])
    const more = [{ ...insert(2), a: 5 }, insert(30)]
    await writeBatch(table, records(table, more))
    model.applyBatch(more)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    await checkOneBucketPerKey(table)
  })
})

describe('a version-1 schema without bucket', () => {
  it('reads, and a write or compaction is refused naming the option and the schema version (Paimon reads it as one fixed bucket)', async () => {
    const store = new MemoryStore()
    const created = await Table.create(store, schemaFor('deduplicate', { bucket: '1' }))
    await writeBatch(created, records(created, [insert(1)]))
    const raw = JSON.parse(new TextDecoder().decode((await store.get('schema/schema-0'))!))
    delete raw.options.bucket
    delete raw.version
    await store.put('schema/schema-0', new TextEncoder().encode(JSON.stringify(raw)))
    const table = await Table.open(store)
    expect(sortRows(await readAll(table))).toEqual([['2024-05-01', 1, 1, 'v1', null]])
    const before = (await store.list('')).map((o) => o.key)
    const err = await writeBatch(table, records(table, [insert(2)])).catch((e: unknown) => e)
    expect((err as Error).message).toMatch(/version-1 schema without option 'bucket', which Paimon reads as one fixed bucket/)
    const compact = await compactTable(table, { full: true }).catch((e: unknown) => e)
    expect((compact as Error).message).toMatch(/^compaction of bucket 0 refused: .*version-1 schema without option 'bucket'/)
    expect((await store.list('')).map((o) => o.key)).toEqual(before)
  })
})

describe('HASH index files', () => {
  it('are big-endian int32s, negative hashes included; a torn file is refused naming it, and nothing is written', async () => {
    const bytes = writeHashIndex([1, -1, 0x7fffffff, -0x80000000])
    expect([...bytes]).toEqual([0, 0, 0, 1, 255, 255, 255, 255, 127, 255, 255, 255, 128, 0, 0, 0])
    expect([...readHashIndex(bytes)]).toEqual([1, -1, 0x7fffffff, -0x80000000])
    const table = await dynamicTable()
    await writeBatch(table, records(table, [insert(1)]))
    const [entry] = (await hashIndex(table)).entries
    await table.store.put(indexKey(entry.fileName), new Uint8Array([0, 0, 0, 1, 9]))
    const before = (await table.store.list('')).map((o) => o.key)
    const err = await writeBatch(await Table.open(table.store), records(table, [insert(2)])).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(CorruptFileError)
    expect((err as Error).message).toContain(entry.fileName)
    expect((err as Error).message).toMatch(/5 bytes, expected a multiple of 4/)
    expect((await table.store.list('')).map((o) => o.key)).toEqual(before)
  })
})
