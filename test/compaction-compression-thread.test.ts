// Which compactions compress their output on the compression thread (compact-bucket.ts): a
// job reading less than a row group compresses inline and starts no thread; a larger one
// uses the thread where a second CPU can run it.

import { randomBytes } from 'node:crypto'
import { afterAll, describe, expect, it } from 'vitest'
import { compressionThreadCounts, compressionThreadUseful, stopCompressionThread } from '../lib/format/compression-thread.ts'
import { Table } from '../lib/handle/table.ts'
import { THREAD_MIN_INPUT_BYTES, compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type Op, schemaFor } from './helpers/model.ts'

afterAll(() => stopCompressionThread())

/** A one-bucket deletion-vector table after three writes of `rows` rows with `bytes`-byte random strings, and its bucket. */
async function bucketOf(rows: number, bytes: number) {
  const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '1', 'deletion-vectors.enabled': 'true' }))
  let last
  for (let w = 0; w < 3; w++) {
    const ops: Op[] = Array.from({ length: rows }, (_, i) => ({ _kind: '+I', dt: '2024-05-01', id: w * rows + i, a: w, b: randomBytes(bytes / 2).toString('hex'), c: null }))
    last = await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
  }
  const { partition, bucket } = last!.buckets[0]
  return { table, partition, bucket }
}

describe('compaction output compression', () => {
  it('a job reading less than a row group: inline, no thread started', async () => {
    await stopCompressionThread()
    const { table, partition, bucket } = await bucketOf(20, 16)
    const before = compressionThreadCounts()
    const r = await compactBucket(table, { partition, bucket })
    expect(r.snapshotId).not.toBeNull()
    expect(r.inputFiles).toBe(3)
    const after = compressionThreadCounts()
    expect(after.starts).toBe(before.starts)
    expect(after.threadBatches).toBe(before.threadBatches)
  })

  it('a job reading more: on the thread, where one is useful', async () => {
    const { table, partition, bucket } = await bucketOf(200, 400)
    const before = compressionThreadCounts()
    const r = await compactBucket(table, { partition, bucket })
    expect(r.snapshotId).not.toBeNull()
    const inputBytes = (await table.manifests.liveEntries((await table.snapshots.snapshot(r.baseSnapshotId))!)).reduce((n, e) => n + Number(e.file.fileSize), 0)
    expect(inputBytes).toBeGreaterThanOrEqual(THREAD_MIN_INPUT_BYTES)
    const after = compressionThreadCounts()
    if (compressionThreadUseful()) expect(after.threadBatches).toBeGreaterThan(before.threadBatches)
    else expect(after.threadBatches).toBe(before.threadBatches)
  })
})
