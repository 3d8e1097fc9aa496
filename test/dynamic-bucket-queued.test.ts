// Dynamic bucket mode through the deployed commit path (docs/design.md "Dynamic buckets"), on
// the embedded S3 + SQS backend: writers send their commits through QueuedCommitter to the
// table's FIFO commit queue, a committer loop (commitFromQueue over the batching committer)
// folds them, a conflict comes back as a receipt and the writer assigns again. Several writers
// bring the same new keys to one partition at once; no key ends in two buckets, and every key
// reads with a value one of its writers gave it.

import { CreateQueueCommand, SQSClient } from '@aws-sdk/client-sqs'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { SqsCommitQueue } from '../lib/commit/commit-queue.ts'
import { commitFromQueue } from '../lib/commit/commit-service.ts'
import { QueuedCommitter } from '../lib/commit/queued-committer.ts'
import { HASH_INDEX, readHashIndex } from '../lib/format/hash-index.ts'
import { Table } from '../lib/handle/table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { indexKey } from '../lib/table/paths.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { type Op, schemaFor } from './helpers/model.ts'

let backend: EmbeddedBackend
let sqs: SQSClient
const BUCKET = 'dynamic-queued'

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
})
afterAll(async () => {
  sqs?.destroy()
  await backend?.stop()
})

it('concurrent queued writers bringing the same new keys to one partition: conflicts are redone, no key in two buckets', async () => {
  const store = new S3Store({ bucket: BUCKET, prefix: 't', client: backend.s3Client() })
  const schema = schemaFor('deduplicate', { 'dynamic-bucket.target-row-num': '3' }) as { options: Record<string, string> }
  schema.options.bucket = '-1'
  await Table.create(store, schema)
  const q = await sqs.send(new CreateQueueCommand({ QueueName: 't-commit.fifo', Attributes: { FifoQueue: 'true', VisibilityTimeout: '30' } }))
  const queue = new SqsCommitQueue(sqs, q.QueueUrl!)
  // the committer function as a loop
  const committer = new BatchingCommitter(await Table.open(store))
  let stopping = false
  let conflicts = 0
  const loop = (async () => {
    while (!stopping) {
      const res = await commitFromQueue(committer, [], { tableName: 't', drain: { queue, max: 50 }, moreRounds: () => true })
      conflicts += res.errors.filter((e) => e.conflict).length
      if (res.received === 0) await new Promise((r) => setTimeout(r, 10))
    }
  })()
  const written = new Map<string, Set<number>>()
  // every writer's first batch sends only once all four have written their files: they all
  // assigned against the same (empty) index, so at least three must assign again
  let arrived = 0
  let release: () => void = () => {}
  const allArrived = new Promise<void>((r) => (release = r))
  const barrier = async () => {
    if (++arrived === 4) release()
    await allArrived
  }
  try {
    await Promise.all(
      Array.from({ length: 4 }, async (_, w) => {
        let first = true
        for (let b = 0; b < 3; b++) {
          const t = await Table.open(store)
          const tag = w * 10 + b
          // overlapping new keys: every writer brings ids 3b..3b+5 of one partition, each in its
          // own order, so two writers assigning alone would give a key different buckets
          const ops: Op[] = Array.from({ length: 6 }, (_, i) => ({ _kind: '+I', dt: '2024-05-01', id: 3 * b + ((i + w) % 6), a: tag, b: null, c: null }))
          for (const op of ops) written.set(String(op.id), (written.get(String(op.id)) ?? new Set()).add(tag))
          await writeBatch(t, ops.map((op, i) => recordFromJson(t.view, op, `op ${i}`)), {
            committer: new QueuedCommitter(t, queue, { tableName: 't', firstPollMs: 10, maxPollMs: 50, timeoutMs: 60_000 }),
            beforeSnapshotCreate: async () => {
              if (!first) return
              first = false
              await barrier()
            },
          })
        }
      }),
    )
  } finally {
    stopping = true
    await loop
  }
  const table = await Table.open(store)
  const rows = await readAll(table)
  expect(rows.map((r) => String(r[1])).sort()).toEqual([...written.keys()].sort())
  for (const r of rows) expect(written.get(String(r[1]))!.has(r[2] as number)).toBe(true)
  // every hash in one bucket's file, every key's rows in one bucket: rows would read twice otherwise
  const latest = (await table.snapshots.latest())!
  const owner = new Map<number, number>()
  for (const e of (await table.manifests.readIndexManifest(latest.indexManifest)).filter((x) => x.indexType === HASH_INDEX)) {
    for (const h of readHashIndex((await store.get(indexKey(e.fileName)))!)) {
      expect(owner.get(h) ?? e.bucket).toBe(e.bucket)
      owner.set(h, e.bucket)
    }
  }
  expect(owner.size).toBe(written.size)
  // four writers assigned the same new keys against one index: three assignments went stale and were redone
  expect(conflicts).toBeGreaterThanOrEqual(3)
}, 120_000)
