// The compactor function with hand-built FIFO events (each test chooses exactly which
// messages share a batch): coalescing, a failed bucket failing alone, follow-up jobs,
// redelivery.

import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compactorHandler } from '../functions/compactor.ts'
import type { CompactionJob } from '../lib/jobs/compaction-job.ts'
import { messageGroupId } from '../lib/jobs/compaction-job.ts'
import { type JobOutcome, processCompactionJobs } from '../lib/jobs/process-jobs.ts'
import { readAll } from '../lib/read/table-read.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { sqsEvent, sqsRecord, useFunctionEnv } from './helpers/lambda.ts'
import { TableModel, type Op, schemaFor, sortRows } from './helpers/model.ts'

let backend: EmbeddedBackend
let sqs: SQSClient
const BUCKET = 'compactor-test'
let n = 0

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
})
afterAll(async () => {
  sqs.destroy()
  await backend.stop()
})

async function setup(options: Record<string, string>) {
  const name = `t${n++}`
  const table = await Table.create(new S3Store({ bucket: BUCKET, prefix: name, client: backend.s3Client() }), schemaFor('deduplicate', { 'deletion-vectors.enabled': 'true', ...options }))
  const q = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-compaction.fifo`, Attributes: { FifoQueue: 'true' } }))
  useFunctionEnv(backend, { [name]: { uri: `s3://${BUCKET}/${name}`, compactionQueueUrl: q.QueueUrl! } })
  return { name, table, queueUrl: q.QueueUrl! }
}

async function writeOps(table: Table, model: TableModel, ops: Op[]) {
  const res = await writeBatch(table, ops.map((op) => recordFromJson(table.view, op, 'op')))
  model.applyBatch(ops)
  return res
}

function jobRecords(name: string, res: Awaited<ReturnType<typeof writeBatch>>) {
  return res.buckets.map((b) => {
    const job: CompactionJob = {
      table: name,
      partition: b.partitionPath.replace(/\/$/, ''),
      partitionBytes: Buffer.from(b.partition).toString('base64'),
      bucket: b.bucket,
      snapshotId: res.snapshotId,
      enqueuedAt: Date.now(),
    }
    return { job, record: sqsRecord(JSON.stringify(job), { groupId: messageGroupId(job), queue: 'compaction.fifo' }) }
  })
}

/**
 * The store, with `race` run once, just before the first snapshot create it forwards, which
 * then finds its id taken if `race` committed. `raced()` says whether it ran.
 */
function racingStore<S extends ObjectStore>(inner: S, race: () => Promise<unknown>): { store: S; raced: () => boolean } {
  let raced = false
  const store = new Proxy(inner, {
    get(target, prop) {
      if (prop === 'putIfAbsent') {
        return async (key: string, body: Uint8Array) => {
          if (!raced && key.startsWith('snapshot/snapshot-')) {
            raced = true
            await race()
          }
          return target.putIfAbsent(key, body)
        }
      }
      const v = Reflect.get(target, prop, target)
      return typeof v === 'function' ? v.bind(target) : v
    },
  })
  return { store, raced: () => raced }
}

const put = (ids: number[], a = 1): Op[] => ids.map((id) => ({ _kind: '+I', dt: '2024-05-01', id, a, b: null, c: null }))

describe('compactor function', () => {
  it('coalesces one bucket\'s jobs; a failing bucket fails alone, the buckets after it go on', async () => {
    const { name, table } = await setup({ bucket: '3' })
    const model = new TableModel('deduplicate')
    const r1 = await writeOps(table, model, put([1, 2, 3, 4, 5, 6, 7, 8, 9]))
    const r2 = await writeOps(table, model, put([1, 2, 3, 4, 5, 6, 7, 8, 9], 2))
    const [a1, b1, c1] = jobRecords(name, r1)
    const [a2] = jobRecords(name, r2).filter((j) => j.job.bucket === a1.job.bucket)
    const poison = sqsRecord(JSON.stringify({ ...b1.job, table: 'no-such-table' }), { groupId: messageGroupId(b1.job) })
    // bucket A twice (coalesced), then B's poison job, then C: only B comes back
    const res = await compactorHandler(sqsEvent([a1.record, a2.record, poison, c1.record]))
    expect(res.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([poison.messageId])
    // one COMPACT for bucket A, however many of its jobs came; C compacted too
    const compactsOf = async (bucket: number) => {
      const out: number[] = []
      for (const id of await table.snapshots.listIds()) {
        const s = (await table.snapshots.snapshot(id))!
        if (s.commitKind === 'COMPACT' && (await table.manifests.deltaEntries(s)).some((e) => e.bucket === bucket)) out.push(id)
      }
      return out
    }
    expect(await compactsOf(a1.job.bucket)).toHaveLength(1)
    expect(await compactsOf(c1.job.bucket)).toHaveLength(1)
    expect(await compactsOf(b1.job.bucket)).toHaveLength(0)
    // B's real job completes the table
    const again = await compactorHandler(sqsEvent([b1.record]))
    expect(again.batchItemFailures).toEqual([])
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  })

  it('a compaction whose commit loses every race is retried from fresh state, not returned', async () => {
    // commit.max-retries 0: one lost race ends the commit. The race is real: a store wrapper
    // lets a writer commit land, through another table handle, just before the compaction's
    // first snapshot create, which then finds its id taken.
    const { name, table } = await setup({ bucket: '1', 'commit.max-retries': '0' })
    const model = new TableModel('deduplicate')
    await writeOps(table, model, put([1, 2, 3]))
    const r2 = await writeOps(table, model, put([2, 3, 4], 2))
    const [j] = jobRecords(name, r2)
    const racingWriter = await Table.open(new S3Store({ bucket: BUCKET, prefix: name, client: backend.s3Client() }))
    const racing = racingStore(new S3Store({ bucket: BUCKET, prefix: name, client: backend.s3Client() }), () => writeOps(racingWriter, model, put([5], 3)))
    const compacting = await Table.open(racing.store)
    const outcomes: JobOutcome[] = []
    const res = await processCompactionJobs([{ id: j.record.messageId, body: j.record.body, groupId: messageGroupId(j.job) }], {
      resolve: async () => ({ table: compacting, jobs: null }),
      onOutcome: (o) => outcomes.push(o),
    })
    expect(racing.raced()).toBe(true)
    expect(res.errors).toEqual([])
    expect(res.failedIds).toEqual([])
    expect(outcomes).toHaveLength(1)
    expect(outcomes[0].conflictRetries).toBe(1)
    // snapshots: APPEND, APPEND, the racing APPEND, then the retried COMPACT
    const latest = (await table.snapshots.snapshot((await table.snapshots.latestId())!))!
    expect(latest.id).toBe(4)
    expect(latest.commitKind).toBe('COMPACT')
    expect(sortRows(await readAll(await Table.open(table.store)))).toEqual(model.snapshot())
    // without the fresh-state retry the job goes back (and would hold its bucket's group)
    const noRetry = await setup({ bucket: '1', 'commit.max-retries': '0' })
    const m2 = new TableModel('deduplicate')
    const w = await writeOps(noRetry.table, m2, put([1]))
    const [k] = jobRecords(noRetry.name, w)
    const other = await Table.open(new S3Store({ bucket: BUCKET, prefix: noRetry.name, client: backend.s3Client() }))
    const lossy = racingStore(noRetry.table.store, () => writeOps(other, m2, put([2])))
    const refused = await processCompactionJobs([{ id: k.record.messageId, body: k.record.body, groupId: messageGroupId(k.job) }], {
      resolve: async () => ({ table: await Table.open(lossy.store), jobs: null }),
      maxConflictRetries: 0,
    })
    expect(lossy.raced()).toBe(true)
    expect(refused.failedIds).toEqual([k.record.messageId])
    expect(refused.errors[0].error).toMatch(/lost races/)
  })

  it('a job for a bucket that needs nothing ends without a commit; redelivery is harmless', async () => {
    const { name, table } = await setup({ bucket: '1' })
    const model = new TableModel('deduplicate')
    const res = await writeOps(table, model, put([1, 2, 3]))
    const [j] = jobRecords(name, res)
    expect((await compactorHandler(sqsEvent([j.record]))).batchItemFailures).toEqual([])
    const after = await table.snapshots.latestId()
    j.record.attributes.ApproximateReceiveCount = '2'
    expect((await compactorHandler(sqsEvent([j.record]))).batchItemFailures).toEqual([])
    expect(await table.snapshots.latestId()).toBe(after)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  })

  it('a capped job enqueues a follow-up job for its bucket', async () => {
    const { name, table, queueUrl } = await setup({ bucket: '1', 'compaction.max-input-files': '2', 'num-sorted-run.compaction-trigger': '10' })
    const model = new TableModel('deduplicate')
    let last
    for (let i = 0; i < 5; i++) last = await writeOps(table, model, put([i, i + 1, i + 2], i))
    const [j] = jobRecords(name, last!)
    expect((await compactorHandler(sqsEvent([j.record]))).batchItemFailures).toEqual([])
    // receive and delete, as the event-source mapping does after a successful invocation
    const take = async () => {
      const m = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 0 }))
      for (const x of m.Messages ?? []) await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: x.ReceiptHandle! }))
      return m
    }
    const got = await take()
    expect(got.Messages).toHaveLength(1)
    const follow = JSON.parse(got.Messages![0].Body!) as CompactionJob
    expect(follow).toMatchObject({ table: name, bucket: j.job.bucket, followUp: true })
    // task-threads 1 (the default): every job of the table in one message group
    expect(got.Messages![0].Attributes!.MessageGroupId).toBe(messageGroupId(j.job, true))
    // following the chain until the bucket is done makes every row visible
    let next: CompactionJob | null = follow
    for (let guard = 0; next && guard < 10; guard++) {
      expect((await compactorHandler(sqsEvent([sqsRecord(JSON.stringify(next), { groupId: messageGroupId(next) })]))).batchItemFailures).toEqual([])
      const m = await take()
      next = m.Messages?.length ? (JSON.parse(m.Messages[m.Messages.length - 1].Body!) as CompactionJob) : null
    }
    const s = await table.snapshots.latest()
    expect((await table.manifests.liveEntries(s!)).filter((e) => e.file.level === 0)).toHaveLength(0)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  })
})
