// The stages of the freshness budget (docs/design.md "Freshness budget"), measured where the
// work happens, on stepped clocks: ingest (the oldest record's wait, the writer's flush and
// commit), the compaction's queue wait, read, merge, write and commit, and a reader's
// discovery of a new snapshot; then that the writer and compactor handlers publish them.
// The clocks move only when the test moves them (a committer wrapper adds a fixed time to
// its commit; a store wrapper adds a fixed time per request), so every figure is exact.
// Real parts throughout: the embedded S3 backend, the table handle, the direct committer.

import { Metrics } from '@aws-lambda-powertools/metrics'
import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { compactorFunction } from '../functions/compactor.ts'
import { readerHandler } from '../functions/reader.ts'
import { writerFunction } from '../functions/writer.ts'
import { type AddedMetric, FunctionRuntime } from '../functions/shared/runtime.ts'
import type { Committer } from '../lib/commit/committer.ts'
import { ingest } from '../lib/ingest/ingest.ts'
import { type CompactionJob, MemoryJobQueue, SqsJobQueue, decodeJob, encodeJob, messageGroupId } from '../lib/jobs/compaction-job.ts'
import { processCompactionJobs } from '../lib/jobs/process-jobs.ts'
import { ReaderDiscoveries, SnapshotDiscovery } from '../lib/read/snapshot-discovery.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { ObservedStore } from '../lib/store/observed-store.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { Table } from '../lib/handle/table.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { sqsEvent, sqsRecord, useFunctionEnv } from './helpers/lambda.ts'

let backend: EmbeddedBackend
const BUCKET = 'freshness-stages'
let n = 0

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
})
afterAll(async () => {
  await backend.stop()
})

const SCHEMA = {
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  partitionKeys: [],
  options: { bucket: '1', 'deletion-vectors.enabled': 'true' },
}

function s3Store(name: string): S3Store {
  return new S3Store({ bucket: BUCKET, prefix: `tables/${name}`, client: backend.s3Client() })
}

const rows = (ids: number[], v: string) => ids.map((id) => JSON.stringify({ id, v }))

describe('freshness stages on stepped clocks', () => {
  it('ingest, queue wait, compaction read / merge / write / commit, each as the clock moved', async () => {
    const name = `t${n++}`
    const table = await Table.create(s3Store(name), SCHEMA)
    const clock = { t: 5_000_000 }
    const now = () => clock.t
    // the writer's commit takes 700 ms on the clock
    const writerCommitter: Committer = { commit: async (req) => { const r = await table.committer.commit(req); clock.t += 700; return r } }
    const jobs = new MemoryJobQueue()
    const opts = { resolve: async () => ({ table, jobs, committer: writerCommitter }), defaultTable: name, rejects: new MemoryStore(), commitUser: 'stages-writer', now }
    // the compactor's table: every store request advances the clock 10 ms while counting,
    // and is kept with the clock's reading when it went out
    let counting = false
    const seen: { op: string; key: string; at: number }[] = []
    const observed = new ObservedStore(s3Store(name), {
      before: (r) => {
        if (!counting) return
        seen.push({ op: r.op, key: r.key, at: clock.t })
        clock.t += 10
      },
    })
    const compactorTable = await Table.open(observed)
    // the commit takes 500 ms on the clock, its own requests not counted
    const compactorCommitter: Committer = {
      commit: async (req) => {
        counting = false
        const r = await compactorTable.committer.commit(req)
        clock.t += 500
        return r
      },
    }
    const compact = (job: CompactionJob) =>
      processCompactionJobs([{ id: `m${job.snapshotId}`, body: encodeJob(job), groupId: messageGroupId(job) }], {
        resolve: async () => ({ table: compactorTable, jobs: null, committer: compactorCommitter }),
        now,
      })
    // batch a, compacted above level 0; then batch b, much smaller, upserts two of its keys
    // and adds one, so its compaction looks them up and marks their old rows
    let job: CompactionJob | undefined
    const batchA = Array.from({ length: 300 }, (_, i) => i + 1)
    for (const [i, [ids, v]] of ([[batchA, 'a'], [[2, 3, 400], 'b']] as const).entries()) {
      const start = clock.t
      const records = rows([...ids], v).map((body, j) => ({ id: `${v}${j}`, source: 'test', body, sentAt: start - 2500 + 400 * j }))
      const res = await ingest(records, opts)
      expect(res.failedIds, `batch ${i}`).toEqual([])
      // the oldest record was sent 2,500 ms before the ingest began
      expect(res.batchWaitMs).toBe(2500)
      expect(res.tables[0].commitMs).toBe(700)
      job = jobs.jobs.at(-1)!
      // the writer enqueued its job after its commit, on the same clock
      expect(job.enqueuedAt).toBe(start + 700)
      clock.t += 1000
      if (i === 0) expect((await compact(job)).errors).toEqual([])
    }
    const latest = (await compactorTable.snapshots.latest())!
    const level0 = (await compactorTable.manifests.liveEntries(latest)).filter((e) => e.file.level === 0)
    expect(level0.length).toBe(1)
    const oldest = Number(level0[0].file.creationTime)
    clock.t = Math.max(clock.t, oldest) + 3000
    const jobStart = clock.t
    counting = true
    const res = await compact(job!)
    expect(res.errors).toEqual([])
    const o = res.outcomes[0]
    const t = o.result.timings!
    expect(o.result.snapshotId).not.toBeNull()
    expect(o.result.rowsDeletedByVector).toBe(2)
    expect(o.startedAt).toBe(jobStart)
    expect(o.startedAt - o.job.enqueuedAt).toBe(jobStart - job!.enqueuedAt)
    expect(o.slotWaitMs).toBe(0)
    // every request before the commit fell in exactly one of read, merge and write
    expect(t.readMs + t.mergeMs + t.writeMs).toBe(10 * seen.length)
    // and in its own: the snapshot lookup in the read, the data files in the merge, the
    // new deletion-vector index in the write
    const mergeFrom = jobStart + t.readMs
    const writeFrom = mergeFrom + t.mergeMs
    const commitFrom = writeFrom + t.writeMs
    const within = (pred: (r: { op: string; key: string }) => boolean, from: number, to: number, what: string) => {
      const hits = seen.filter(pred)
      expect(hits.length, what).toBeGreaterThan(0)
      for (const r of hits) expect(r.at >= from && r.at < to, `${what}: ${r.op} ${r.key} at ${r.at} in [${from}, ${to})`).toBe(true)
    }
    within((r) => r.key.startsWith('snapshot/'), jobStart, mergeFrom, 'snapshot lookup')
    within((r) => r.op.startsWith('get') && /(^|\/)data-[^/]+$/.test(r.key), mergeFrom, writeFrom, 'data file reads')
    within((r) => r.op === 'put' && r.key.startsWith('index/'), writeFrom, commitFrom, 'deletion-vector index write')
    expect(t.commitMs).toBe(500)
    expect(t.landedAt).toBe(jobStart + 10 * seen.length + 500)
    expect(t.oldestLevel0CreatedAt).toBe(oldest)
  })

  it('a reader discovers a snapshot from the oldest one it had not read', async () => {
    const created = new Map([[2, 4_000], [3, 4_300], [4, 4_900]])
    const timeOf = async (id: number) => created.get(id) ?? null
    const d = new SnapshotDiscovery()
    // the first read has nothing to compare with
    expect(await d.observe(1, 3_000, timeOf)).toBeNull()
    expect(await d.observe(1, 3_500, timeOf)).toBeNull()
    // snapshots 2..4 landed since; the row of 2 waited from 4,000 to this read at 5,000
    expect(await d.observe(4, 5_000, timeOf)).toBe(1_000)
    expect(await d.observe(4, 6_000, timeOf)).toBeNull()
    // an expired snapshot gives no figure
    expect(await d.observe(9, 7_000, timeOf)).toBeNull()
    // per table; reads of a named snapshot, a tag, changes or a stream say nothing
    const r = new ReaderDiscoveries()
    const snapshots = { snapshot: async (id: number) => ({ timeMillis: created.get(id) ?? 0 }) }
    expect(await r.observe({ table: 'x', op: 'scan' }, 1, 3_000, snapshots)).toBeNull()
    for (const req of [{ table: 'x', op: 'scan', snapshotId: 4 }, { table: 'x', op: 'scan', tag: 't' }, { table: 'x', op: 'changes' }, { table: 'x', op: 'stream' }]) {
      expect(await r.observe(req, 4, 5_000, snapshots), JSON.stringify(req)).toBeNull()
    }
    expect(await r.observe({ table: 'y', op: 'lookup' }, 4, 5_000, snapshots)).toBeNull()
    expect(await r.observe({ table: 'x', op: 'status' }, 4, 5_000, snapshots)).toBe(1_000)
  })
})

describe('the handlers publish the stages', () => {
  it('writer: IngestWait and WriteCommitTime; compactor: queue wait, slot, read, merge, write, commit, L0 age', async () => {
    const name = `t${n++}`
    const table = await Table.create(s3Store(name), SCHEMA)
    const jobs = new MemoryJobQueue()
    useFunctionEnv(backend, { [name]: { uri: `s3://${BUCKET}/tables/${name}` } }, { STRATA_REJECT_URI: `s3://${BUCKET}/rejects/${name}` })
    const metrics: AddedMetric[] = []
    // the runtime's tables get an in-memory job queue: the writer's jobs are handed to the compactor below
    const runtime = new FunctionRuntime({ onMetric: (m) => metrics.push(m) })
    const resolve = runtime.resolveTable.bind(runtime)
    runtime.resolveTable = async (t) => {
      const r = await resolve(t)
      return r && { ...r, jobs }
    }
    const writer = writerFunction(runtime)
    const sentAgo = 60_000
    const records = rows([1, 2, 3, 4], 'x').map((body) => {
      const r = sqsRecord(body)
      r.attributes.SentTimestamp = String(Number(r.attributes.SentTimestamp) - sentAgo)
      return r
    })
    const wres = await writer.writerHandler(sqsEvent(records))
    expect(wres.batchItemFailures).toEqual([])
    await writer.writerHandler(sqsEvent(rows([3, 4, 5], 'y').map((b) => sqsRecord(b))))
    const of = (name: string) => metrics.filter((m) => m.name === name)
    // the oldest record was sent a minute before the invocation: its wait is at least that
    expect(of('IngestWait')[0].value).toBeGreaterThanOrEqual(sentAgo)
    expect(of('IngestWait')[0].unit).toBe('Milliseconds')
    expect(of('WriteCommitTime').length).toBe(2)
    // measured inside the invocation, so within its latency
    expect(of('WriteCommitTime')[0].value).toBeLessThanOrEqual(of('WriteLatency')[0].value)

    metrics.length = 0
    process.env.STRATA_TABLE = name
    runtime.reset()
    const compactor = compactorFunction(runtime)
    const job: CompactionJob = jobs.jobs.at(-1)!
    const cres = await compactor.compactorHandler(sqsEvent([sqsRecord(encodeJob(job), { groupId: messageGroupId(job), queue: 'compaction.fifo' })]))
    delete process.env.STRATA_TABLE
    expect(cres.batchItemFailures).toEqual([])
    const stages = ['JobQueueAge', 'CompactionSlotWait', 'CompactionReadTime', 'CompactionMergeTime', 'CompactionWriteTime', 'CompactionCommitTime', 'CompactedL0Age']
    for (const s of stages) expect(of(s).length, s).toBe(1)
    // the compaction's stages tile its time, CompactionTime (start to landing seen)
    const inside = stages.slice(1, 6).reduce((sum, s) => sum + of(s)[0].value, 0)
    expect(inside).toBeLessThanOrEqual(of('CompactionTime')[0].value)
    // the oldest level-0 file was written before the compaction began
    expect(of('CompactedL0Age')[0].value).toBeGreaterThanOrEqual(of('CompactionTime')[0].value)
    void table
  })

  it('reader: SnapshotDiscoveryLag once a read finds a snapshot new to it', async () => {
    const name = `t${n++}`
    const table = await Table.create(s3Store(name), SCHEMA)
    useFunctionEnv(backend, { [name]: { uri: `s3://${BUCKET}/tables/${name}` } })
    // the reader's metrics are the deployed runtime's, which has no observer seam: watched
    // through Powertools' addMetric, which still runs
    const added = vi.spyOn(Metrics.prototype, 'addMetric')
    const discovered = () => added.mock.calls.filter((c) => c[0] === 'SnapshotDiscoveryLag').map((c) => c[2])
    try {
      const write = (v: string) => ingest(rows([1, 2], v).map((body, i) => ({ id: `${v}${i}`, source: 'test', body })), { resolve: async () => ({ table, jobs: null }), defaultTable: name, rejects: new MemoryStore(), commitUser: 'w' })
      const read = async () => expect((await readerHandler({ table: name, op: 'status' })).statusCode).toBe(200)
      await write('a')
      await read()
      expect(discovered()).toEqual([])
      await write('b')
      const before = Date.now()
      const landed = (await table.snapshots.latest())!.timeMillis
      await read()
      // the read started after `before`, and the snapshot was created at `landed`
      expect(discovered()).toHaveLength(1)
      expect(discovered()[0]).toBeGreaterThanOrEqual(before - landed)
      await read()
      expect(discovered()).toHaveLength(1)
    } finally {
      added.mockRestore()
    }
  })
})

describe('a bucket done frees its message group at once (releaseDone)', () => {
  // two buckets' jobs in one batch on a real FIFO queue; the second bucket's commit is held
  // until the test has looked at the first bucket's group
  async function firstGroupFreeWhileSecondRuns(releaseDone: boolean): Promise<boolean> {
    const name = `t${n++}`
    const table = await Table.create(s3Store(name), { ...SCHEMA, options: { ...SCHEMA.options, bucket: '2' } })
    const sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
    try {
      const url = (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-compaction.fifo`, Attributes: { FifoQueue: 'true' } }))).QueueUrl!
      const jobs = new SqsJobQueue(sqs, url)
      const w = await ingest(rows(Array.from({ length: 20 }, (_, i) => i + 1), 'a').map((body, i) => ({ id: `a${i}`, source: 'test', body })), { resolve: async () => ({ table, jobs }), defaultTable: name, rejects: new MemoryStore(), commitUser: 'w' })
      expect(w.tables[0].jobs).toBe(2)
      const receive = async (max: number) => (await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: max, MessageSystemAttributeNames: ['All'], VisibilityTimeout: 60 }))).Messages ?? []
      const batch = [...(await receive(10))]
      while (batch.length < 2) batch.push(...(await receive(10)))
      const [first, second] = batch.map((m) => decodeJob(m.Body!, 'test'))
      // a later job of the first bucket, distinct for deduplication
      await jobs.enqueue([{ ...first, dedupKey: 'later' }])
      let release!: () => void
      const held = new Promise<void>((r) => (release = r))
      let freed: boolean | undefined
      const committer: Committer = {
        commit: async (req) => {
          if (req.adds.some((a) => a.bucket === second.bucket)) await held
          return table.committer.commit(req)
        },
      }
      const res = await processCompactionJobs(batch.map((m) => ({ id: m.MessageId!, body: m.Body!, groupId: m.Attributes!.MessageGroupId!, receiptHandle: m.ReceiptHandle! })), {
        resolve: async () => ({ table, jobs, committer }),
        discard: (h) => jobs.discard(h),
        releaseDone,
        mergesAtOnce: 2,
        onOutcome: (o) => {
          if (o.job.bucket !== first.bucket) return
          // the first bucket is done while the second waits for its commit: is its group free?
          void receive(10).then((got) => {
            freed = got.some((m) => decodeJob(m.Body!, 'test').dedupKey === 'later')
            release()
          })
        },
      })
      expect(res.errors).toEqual([])
      expect(res.outcomes.map((o) => o.result.snapshotId !== null)).toEqual([true, true])
      return freed!
    } finally {
      sqs.destroy()
    }
  }

  it('with releaseDone the first bucket\'s next job is received while the batch\'s other bucket still runs', async () => {
    expect(await firstGroupFreeWhileSecondRuns(true)).toBe(true)
  })

  it('without it the first bucket\'s group waits for the invocation', async () => {
    expect(await firstGroupFreeWhileSecondRuns(false)).toBe(false)
  })
})
