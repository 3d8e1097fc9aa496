// Compaction jobs coalesce (lib/jobs/coalesce.ts) and a failed bucket recovers in seconds
// (lib/jobs/process-jobs.ts), on the embedded backend: a real SQS FIFO compaction queue
// (content deduplication, message groups, ChangeMessageVisibility) and real S3.
//   1. Property: writers and compactors interleave in any order, some writes landing while
//      a compaction of their bucket runs (between its read and its commit). The queue never
//      holds more than 2 jobs per bucket; once the queue is worked off no level-0 file is
//      left without a job, and the table equals the model.
//   2. A failing bucket's message comes back after its short backoff, not after the
//      queue's visibility timeout; the other buckets of the batch are compacted.
//   3. Buckets not started when the remaining time runs short come back at once.
//   4. A compactor that dies after its commit landed: the redelivered job only makes the
//      follow-up check, and the bucket never holds more than 2 jobs; a batch with two jobs
//      of a bucket deletes the extra one before the follow-up goes out.
//   5. Property, with faults: writers dying after their commit and before their jobs,
//      compactions throwing or dying before or after their commit, commits landing after
//      their compactor died, visibility timeouts: no level-0 file is left without a job.
//   6. Without deletion vectors, a writer sends a job only for a bucket that needs
//      compaction (property, against the sorted-run rules), and none is left needing one.

import { ChangeMessageVisibilityCommand, CreateQueueCommand, DeleteMessageBatchCommand, GetQueueAttributesCommand, type Message, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { CommitRequest, Committer } from '../lib/commit/committer.ts'
import { stalledBucketJobs, writerJobs } from '../lib/jobs/coalesce.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { compactionNeeded } from '../lib/lsm/compact/plan.ts'
import { CommitConflictError } from '../lib/errors.ts'
import type { ManifestEntry } from '../lib/types.ts'
import { type CompactionJob, type JobQueue, SqsJobQueue, messageGroupId } from '../lib/jobs/compaction-job.ts'
import { type JobMessage, type ProcessOptions, processCompactionJobs } from '../lib/jobs/process-jobs.ts'
import { readAll } from '../lib/read/table-read.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { type Op, TableModel, schemaFor, sortRows } from './helpers/model.ts'

let backend: EmbeddedBackend
let sqs: SQSClient
const BUCKET = 'job-coalescing'
let n = 0
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
})
afterAll(async () => {
  sqs?.destroy()
  await backend?.stop()
})

async function setup(options: Record<string, string>, visibilitySeconds = 30) {
  const name = `t${n++}`
  const table = await Table.create(new S3Store({ bucket: BUCKET, prefix: name, client: backend.s3Client() }), schemaFor('deduplicate', { 'deletion-vectors.enabled': 'true', ...options }))
  const q = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-compaction.fifo`, Attributes: { FifoQueue: 'true', VisibilityTimeout: String(visibilitySeconds) } }))
  const jobs = new SqsJobQueue(sqs, q.QueueUrl!, { oneGroup: table.view.options.compactionTaskThreads === 1 })
  return { name, table, url: q.QueueUrl!, jobs }
}

/** A writer as lib/ingest does it: commit, then its jobs (writerJobs), keyed to coalesce. */
async function write(name: string, table: Table, jobs: JobQueue, model: TableModel, ops: Op[]): Promise<void> {
  const res = await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
  model.applyBatch(ops)
  await jobs.enqueue(await writerJobs(name, table, res.snapshotId, res.buckets))
}

async function depth(url: string): Promise<number> {
  const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }))
  return Number(a.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
}

async function receive(url: string, max = 10): Promise<Message[]> {
  const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: max, MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 0 }))
  return got.Messages ?? []
}

const jobMessage = (m: Message): JobMessage => ({
  id: m.MessageId!,
  body: m.Body!,
  groupId: m.Attributes?.MessageGroupId ?? '',
  receiptHandle: m.ReceiptHandle!,
  receiveCount: Number(m.Attributes?.ApproximateReceiveCount ?? 1),
})

/** One compactor invocation, as the event source runs it: process the batch, delete what did not fail. */
async function compactBatch(url: string, msgs: Message[], opts: ProcessOptions): Promise<Awaited<ReturnType<typeof processCompactionJobs>>> {
  const res = await processCompactionJobs(msgs.map(jobMessage), opts)
  const done = msgs.filter((m) => !res.failedIds.includes(m.MessageId!))
  if (done.length) await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }))
  return res
}

/** Jobs per bucket of the messages now visible (received and at once made visible again). */
async function visibleJobsPerBucket(url: string): Promise<Map<number, number>> {
  const out = new Map<number, number>()
  const seen: Message[] = []
  for (let i = 0; i < 20; i++) {
    const got = await receive(url)
    if (got.length === 0) break
    seen.push(...got)
  }
  for (const m of seen) {
    const b = (JSON.parse(m.Body!) as CompactionJob).bucket
    out.set(b, (out.get(b) ?? 0) + 1)
  }
  for (const m of seen) await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: m.ReceiptHandle!, VisibilityTimeout: 0 }))
  return out
}

const put = (ids: number[], a: number): Op[] => ids.map((id) => ({ _kind: '+I', dt: '2024-05-01', id, a, b: null, c: null }))

/** A 3-bucket table (task-threads -1) after one write to every bucket, and the batch of its 3 jobs. */
async function threeBucketBatch() {
  const { name, table, url, jobs } = await setup({ bucket: '3', 'compaction.task-threads': '-1' })
  const model = new TableModel('deduplicate')
  await write(name, table, jobs, model, put([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11], 1))
  const msgs = await receive(url)
  expect(msgs.length).toBe(3)
  return { name, table, url, jobs, model, msgs }
}

type Step = { kind: 'write'; ids: number[] } | { kind: 'compact' } | { kind: 'compact-racing-a-write'; ids: number[] }
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('write' as const), ids: fc.uniqueArray(fc.integer({ min: 0, max: 11 }), { minLength: 1, maxLength: 6 }) }),
  fc.record({ kind: fc.constant('compact' as const) }),
  fc.record({ kind: fc.constant('compact-racing-a-write' as const), ids: fc.uniqueArray(fc.integer({ min: 0, max: 11 }), { minLength: 1, maxLength: 6 }) }),
)

/**
 * Runs the steps: writes through `land`; compactions, one batch each, whose commit first
 * lands a pending write (a write between the compaction's read and its commit); `afterStep`
 * checks after each step. Then the event source works the queue off.
 */
async function runSteps(url: string, table: Table, jobs: SqsJobQueue, steps: Step[], land: (ids: number[]) => Promise<void>, afterStep?: () => Promise<void>): Promise<void> {
  let pendingWrite: number[] | null = null
  const landPending = async () => {
    if (!pendingWrite) return
    const ids = pendingWrite
    pendingWrite = null
    await land(ids)
  }
  const racing: Committer = {
    async commit(req: CommitRequest) {
      await landPending()
      return table.committer.commit(req)
    },
  }
  const opts: ProcessOptions = { resolve: async () => ({ table, jobs, committer: racing }), giveBack: (m) => jobs.giveBack(m), discard: (h) => jobs.discard(h) }
  for (const step of steps) {
    if (step.kind === 'write') await land(step.ids)
    else {
      if (step.kind === 'compact-racing-a-write') pendingWrite = step.ids
      const msgs = await receive(url)
      if (msgs.length) expect((await compactBatch(url, msgs, opts)).errors).toEqual([])
      // a write that found no compaction to race lands now
      await landPending()
    }
    await afterStep?.()
  }
  for (let guard = 0; guard < 50 && (await depth(url)) > 0; guard++) {
    const msgs = await receive(url)
    if (msgs.length) await compactBatch(url, msgs, opts)
  }
  expect(await depth(url)).toBe(0)
}

describe('compaction jobs coalesce', () => {
  it('never more than 2 queued jobs per bucket; after the queue is worked off no level-0 file is left and the table equals the model', async () => {
    await fc.assert(
      // an input cap of 2 files: capped picks leave level-0 files behind to their follow-ups
      fc.asyncProperty(fc.array(stepArb, { minLength: 3, maxLength: 14 }), fc.constantFrom('1', '-1'), fc.constantFrom('50', '2'), async (steps, taskThreads, maxFiles) => {
        const { name, table, url, jobs } = await setup({ bucket: '3', 'compaction.task-threads': taskThreads, 'compaction.max-input-files': maxFiles })
        const model = new TableModel('deduplicate')
        let version = 0
        await runSteps(url, table, jobs, steps, (ids) => write(name, table, jobs, model, put(ids, ++version)), async () => {
          for (const [bucket, k] of await visibleJobsPerBucket(url)) expect(k, `jobs queued for bucket ${bucket}`).toBeLessThanOrEqual(2)
        })
        const latest = await table.snapshots.latest()
        const l0 = latest ? (await table.manifests.liveEntries(latest)).filter((e) => e.file.level === 0).map((e) => `bucket ${e.bucket}: ${e.file.fileName}`) : []
        expect(l0, 'level-0 files left without a job').toEqual([])
        expect(sortRows(await readAll(table))).toEqual(model.snapshot())
      }),
      { numRuns: 12 },
    )
  }, 240_000)

  it('writers landing while a job waits share it: ten writes to one bucket, one job', async () => {
    const { name, table, url, jobs } = await setup({ bucket: '1' })
    const model = new TableModel('deduplicate')
    for (let i = 0; i < 10; i++) await write(name, table, jobs, model, put([i], i))
    expect(await depth(url)).toBe(1)
  })
})

// Faults as the soak injects them, in any order with writes and compactions: a writer that
// dies after its commit and before its jobs (its redelivery sends them, keyed at the
// snapshot it landed), a compaction that throws or dies before or after its commit lands,
// a commit that lands after its compactor died waiting for it (the folding committer), and
// the visibility timeout returning what a dead invocation held. No maintenance sweep: once
// every redelivery is in and the queue is worked off, no level-0 file may be left.
type FaultStep =
  | Step
  | { kind: 'write-dies'; ids: number[] }
  | { kind: 'writer-redelivers' }
  | { kind: 'compact-fault'; fault: 'throw-before' | 'throw-after' | 'die-before' | 'die-after' | 'die-commit-pending'; racing: number[] | null }
  | { kind: 'timeout' }
  | { kind: 'held-commit-lands' }
const idsArb = fc.uniqueArray(fc.integer({ min: 0, max: 11 }), { minLength: 1, maxLength: 6 })
const faultStepArb: fc.Arbitrary<FaultStep> = fc.oneof(
  stepArb,
  fc.record({ kind: fc.constant('write-dies' as const), ids: idsArb }),
  fc.record({ kind: fc.constant('writer-redelivers' as const) }),
  fc.record({
    kind: fc.constant('compact-fault' as const),
    fault: fc.constantFrom('throw-before' as const, 'throw-after' as const, 'die-before' as const, 'die-after' as const, 'die-commit-pending' as const),
    // a write landing between the compaction's read and its commit
    racing: fc.option(idsArb, { nil: null }),
  }),
  fc.record({ kind: fc.constant('timeout' as const) }),
  fc.record({ kind: fc.constant('held-commit-lands' as const) }),
)

describe('compaction jobs coalesce through faults', () => {
  it('property: writers and compactors failing anywhere leave no level-0 file without a job, and the table equals the model', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(faultStepArb, { minLength: 4, maxLength: 18 }), fc.constantFrom('1', '-1'), fc.constantFrom('50', '2'), async (steps, taskThreads, maxFiles) => {
        const { name, table, url, jobs } = await setup({ bucket: '3', 'compaction.task-threads': taskThreads, 'compaction.max-input-files': maxFiles })
        const model = new TableModel('deduplicate')
        let version = 0
        /** writers that died before their jobs: what their redelivery sends */
        const redeliveries: { snapshotId: number; buckets: { partition: Uint8Array; bucket: number }[] }[] = []
        /** receipt handles of messages a dead invocation held */
        let inFlight: string[] = []
        /** commits a dead compactor left with the committer */
        const held: CommitRequest[] = []
        let fault: Extract<FaultStep, { kind: 'compact-fault' }>['fault'] | null = null
        let pendingWrite: number[] | null = null
        const land = async (ids: number[]) => write(name, table, jobs, model, put(ids, ++version))
        const landPending = async () => {
          if (!pendingWrite) return
          const ids = pendingWrite
          pendingWrite = null
          await land(ids)
        }
        const committer: Committer = {
          async commit(req: CommitRequest) {
            await landPending()
            const f = fault
            fault = null
            if (f === 'throw-before' || f === 'die-before') throw new Error(`injected: ${f}`)
            if (f === 'die-commit-pending') {
              held.push(req)
              throw new Error('injected: died waiting for its commit')
            }
            const r = await table.committer.commit(req)
            if (f === 'throw-after' || f === 'die-after') throw new Error(`injected: ${f}`)
            return r
          },
        }
        // a given-back message is visible again at once (the backoff only delays it)
        const opts: ProcessOptions = {
          resolve: async () => ({ table, jobs, committer }),
          giveBack: (m) => jobs.giveBack(m.map((x) => ({ ...x, delaySeconds: 0 }))),
          discard: (h) => jobs.discard(h),
        }
        const timeout = async () => {
          for (const h of inFlight) await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: h, VisibilityTimeout: 0 })).catch(() => {})
          inFlight = []
        }
        const landHeld = async () => {
          const req = held.shift()
          // the committer refuses one whose input files a later compaction took; nothing else may fail
          if (req)
            await table.committer.commit(req).catch((e: unknown) => {
              if (!(e instanceof CommitConflictError)) throw e
            })
        }
        for (const step of steps) {
          if (step.kind === 'write') await land(step.ids)
          else if (step.kind === 'write-dies') {
            const ops = put(step.ids, ++version)
            const res = await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
            model.applyBatch(ops)
            redeliveries.push({ snapshotId: res.snapshotId, buckets: res.buckets })
          } else if (step.kind === 'writer-redelivers') {
            const r = redeliveries.shift()
            if (r) await jobs.enqueue(await writerJobs(name, table, r.snapshotId, r.buckets))
          } else if (step.kind === 'timeout') await timeout()
          else if (step.kind === 'held-commit-lands') await landHeld()
          else {
            if (step.kind === 'compact-racing-a-write') pendingWrite = step.ids
            if (step.kind === 'compact-fault') (fault = step.fault, pendingWrite = step.racing)
            const msgs = await receive(url)
            if (msgs.length) {
              if (step.kind === 'compact-fault' && step.fault.startsWith('die')) {
                // the invocation dies: whatever it did, nothing of its batch is acknowledged
                await processCompactionJobs(msgs.map(jobMessage), { ...opts, giveBack: undefined })
                inFlight.push(...msgs.map((m) => m.ReceiptHandle!))
              } else await compactBatch(url, msgs, opts)
            }
            fault = null
            await landPending()
          }
        }
        // the world settles: held commits land or are rejected, every dead writer is redelivered, every timeout passes
        while (held.length) await landHeld()
        for (const r of redeliveries) await jobs.enqueue(await writerJobs(name, table, r.snapshotId, r.buckets))
        await timeout()
        for (let guard = 0; guard < 50 && (await depth(url)) > 0; guard++) {
          const msgs = await receive(url)
          if (msgs.length) await compactBatch(url, msgs, opts)
        }
        expect(await depth(url)).toBe(0)
        const latest = await table.snapshots.latest()
        const l0 = latest ? (await table.manifests.liveEntries(latest)).filter((e) => e.file.level === 0).map((e) => `bucket ${e.bucket}: ${e.file.fileName}`) : []
        expect(l0, 'level-0 files left without a job').toEqual([])
        expect(sortRows(await readAll(table))).toEqual(model.snapshot())
      }),
      { numRuns: Number(process.env.FAULT_RUNS ?? 20) },
    )
  }, 600_000)
})

describe('a compactor that dies after its commit landed', () => {
  /**
   * A one-bucket table whose compactor received the first write's job, landed its
   * compaction and died before its follow-up check and before the event source deleted the
   * message; then a writer's job under the new key, and the visibility timeout passes. A
   * write lands in the middle of the next compaction's commit (its follow-up would be a
   * third job).
   */
  async function afterADeathPastItsCommit() {
    const { name, table, url, jobs } = await setup({ bucket: '1', 'compaction.task-threads': '-1' })
    const model = new TableModel('deduplicate')
    await write(name, table, jobs, model, put([1], 1))
    const [dying] = await receive(url, 1)
    const dyingJob = JSON.parse(dying.Body!) as CompactionJob
    expect((await compactBucket(table, { partition: new Uint8Array(Buffer.from(dyingJob.partitionBytes, 'base64')), bucket: dyingJob.bucket })).snapshotId).not.toBeNull()
    await write(name, table, jobs, model, put([2], 2))
    expect(await depth(url)).toBe(2)
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: dying.ReceiptHandle!, VisibilityTimeout: 0 }))
    const state = { raced: false }
    const racing: Committer = {
      async commit(req: CommitRequest) {
        if (!state.raced) (state.raced = true, await write(name, table, jobs, model, put([3], 3)))
        return table.committer.commit(req)
      },
    }
    const opts: ProcessOptions = { resolve: async () => ({ table, jobs, committer: racing }), giveBack: (m) => jobs.giveBack(m), discard: (h) => jobs.discard(h) }
    /** works the queue off (the pending write lands if no commit took it) and checks the end state */
    const finish = async () => {
      for (let guard = 0; guard < 10 && (await depth(url)) > 0; guard++) await compactBatch(url, await receive(url), opts)
      if (!state.raced) await write(name, table, jobs, model, put([3], 3))
      for (let guard = 0; guard < 10 && (await depth(url)) > 0; guard++) await compactBatch(url, await receive(url), opts)
      const latest = await table.snapshots.latest()
      expect((await table.manifests.liveEntries(latest!)).filter((e) => e.file.level === 0)).toEqual([])
      expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    }
    return { url, dying, opts, finish }
  }

  it('its redelivered job is overtaken: the follow-up check only, sharing the queued job\'s key; never more than 2 jobs for the bucket', async () => {
    const { url, dying, opts, finish } = await afterADeathPastItsCommit()
    // the redelivery comes alone
    const again = await receive(url, 1)
    expect(again.map((m) => [m.MessageId, m.Attributes?.ApproximateReceiveCount])).toEqual([[dying.MessageId, '2']])
    const res = await processCompactionJobs(again.map(jobMessage), opts)
    expect(res.errors).toEqual([])
    expect(res.outcomes.map((o) => [o.overtaken, o.result.snapshotId])).toEqual([[true, null]])
    expect(await depth(url), 'jobs for the bucket, the redelivery still in flight').toBeLessThanOrEqual(2)
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: [{ Id: '0', ReceiptHandle: again[0].ReceiptHandle! }] }))
    expect(await depth(url)).toBe(1)
    // the queued job compacts what is left
    await finish()
  })

  it('a batch holding two of the bucket\'s jobs: the extra one is deleted once the compaction is done, before the follow-up, so the bucket never has 3', async () => {
    const { url, opts, finish } = await afterADeathPastItsCommit()
    // the redelivery and the writer's job in one batch; the racing write makes a follow-up go out
    const batch = await receive(url)
    expect(batch.length).toBe(2)
    const res = await processCompactionJobs(batch.map(jobMessage), opts)
    expect(res.errors).toEqual([])
    expect(res.outcomes.map((o) => [o.result.snapshotId !== null, o.followUp])).toEqual([[true, true]])
    expect(await depth(url), 'the kept message in flight and the follow-up').toBe(2)
    // the event source deletes the whole batch, the discarded message included
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: url, Entries: batch.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) }))
    expect(await depth(url)).toBe(1)
    await finish()
  })

  it('a redelivery whose compaction had not landed compacts', async () => {
    const { name, table, url, jobs } = await setup({ bucket: '1', 'compaction.task-threads': '-1' })
    const model = new TableModel('deduplicate')
    await write(name, table, jobs, model, put([1], 1))
    const [dying] = await receive(url, 1)
    await sqs.send(new ChangeMessageVisibilityCommand({ QueueUrl: url, ReceiptHandle: dying.ReceiptHandle!, VisibilityTimeout: 0 }))
    const again = await receive(url, 1)
    const res = await compactBatch(url, again, { resolve: async () => ({ table, jobs }) })
    expect(res.outcomes.map((o) => [o.overtaken ?? false, o.result.snapshotId !== null])).toEqual([[false, true]])
    expect(await depth(url)).toBe(0)
  })
})

describe('a table without deletion vectors: a job only for a bucket that needs compaction', () => {
  const NON_DV = { bucket: '3', 'compaction.task-threads': '-1', 'deletion-vectors.enabled': 'false', 'num-sorted-run.compaction-trigger': '3' }

  /** Sorted runs of every bucket in the latest snapshot: each level-0 file, and each level above that holds files. */
  async function sortedRuns(table: Table): Promise<Map<number, number>> {
    const latest = await table.snapshots.latest()
    const levels = new Map<number, Set<string>>()
    for (const e of latest ? await table.manifests.liveEntries(latest) : []) {
      const set = levels.get(e.bucket) ?? new Set<string>()
      set.add(e.file.level === 0 ? `0:${e.file.fileName}` : String(e.file.level))
      levels.set(e.bucket, set)
    }
    return new Map([...levels].map(([b, set]) => [b, set.size]))
  }

  it('writes below the trigger send none; the one that reaches it sends one', async () => {
    const { name, table, url, jobs } = await setup({ ...NON_DV, bucket: '1' })
    const model = new TableModel('deduplicate')
    await write(name, table, jobs, model, put([1], 1))
    await write(name, table, jobs, model, put([2], 2))
    expect(await depth(url)).toBe(0)
    await write(name, table, jobs, model, put([3], 3))
    expect(await depth(url)).toBe(1)
  })

  it('the maintenance sweep sends a job only for a bucket that needs compaction and waited past the age', async () => {
    const { name, table } = await setup({ ...NON_DV, bucket: '1' })
    const model = new TableModel('deduplicate')
    const drop: CompactionJob[] = []
    const noQueue = { enqueue: async (j: CompactionJob[]) => void drop.push(...j) }
    await write(name, table, noQueue, model, put([1], 1))
    await write(name, table, noQueue, model, put([2], 2))
    const later = Date.now() + 10 * 60_000
    // two level-0 runs, below the trigger: readers merge them, no job is due however old
    expect(await stalledBucketJobs(name, table, later, 60_000)).toEqual([])
    await write(name, table, noQueue, model, put([3], 3))
    // at the trigger: due, but only once the oldest file is older than the age
    expect(await stalledBucketJobs(name, table, Date.now(), 60_000)).toEqual([])
    const swept = await stalledBucketJobs(name, table, later, 60_000)
    expect(swept).toHaveLength(1)
    expect(swept[0]).toMatchObject({ table: name, bucket: 0, dedupKey: `sweep:${await table.snapshots.latestId()}` })
  })

  it('writers landing past the trigger while a job waits share it: ten writes, one job; after it lands the next needy write sends a new one', async () => {
    const { name, table, url, jobs } = await setup({ ...NON_DV, bucket: '1' })
    const model = new TableModel('deduplicate')
    for (let i = 0; i < 10; i++) await write(name, table, jobs, model, put([i], i))
    expect(await depth(url)).toBe(1)
    const opts: ProcessOptions = { resolve: async () => ({ table, jobs }) }
    const res = await compactBatch(url, await receive(url), opts)
    expect(res.outcomes.length).toBe(1)
    expect(await depth(url)).toBe(0)
    expect(await sortedRuns(table)).toEqual(new Map([[0, 1]]))
    // one sorted run above level 0: a write stays below the trigger; the next reach it
    // under a new key (the level above changed), and share one job again
    await write(name, table, jobs, model, put([20], 20))
    expect(await depth(url)).toBe(0)
    for (let i = 21; i < 25; i++) await write(name, table, jobs, model, put([i], i))
    expect(await depth(url)).toBe(1)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  })

  it('property: every job is for a bucket at the trigger or past it, every bucket past it gets one; once the queue is worked off none is left past it and the table equals the model', async () => {
    await fc.assert(
      // an input cap of 2 files: capped picks leave level-0 files behind to their follow-ups
      fc.asyncProperty(fc.array(stepArb, { minLength: 3, maxLength: 14 }), fc.constantFrom('50', '2'), async (steps, maxFiles) => {
        const { name, table, url, jobs } = await setup({ ...NON_DV, 'compaction.max-input-files': maxFiles })
        const model = new TableModel('deduplicate')
        let version = 0
        const writeChecked = async (ids: number[]) => {
          const res = await writeBatch(table, put(ids, ++version).map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
          model.applyBatch(put(ids, version))
          const sent = await writerJobs(name, table, res.snapshotId, res.buckets)
          const runs = await sortedRuns(table)
          for (const j of sent) expect(runs.get(j.bucket), `bucket ${j.bucket} got a job`).toBeGreaterThanOrEqual(3)
          for (const b of res.buckets) if ((runs.get(b.bucket) ?? 0) > 3) expect(sent.map((j) => j.bucket), `bucket ${b.bucket} has ${runs.get(b.bucket)} runs`).toContain(b.bucket)
          await jobs.enqueue(sent)
        }
        await runSteps(url, table, jobs, steps, writeChecked, async () => {
          for (const [bucket, k] of await visibleJobsPerBucket(url)) expect(k, `jobs queued for bucket ${bucket}`).toBeLessThanOrEqual(2)
        })
        for (const [b, runs] of await sortedRuns(table)) expect(runs, `sorted runs left in bucket ${b}`).toBeLessThanOrEqual(3)
        const latest = await table.snapshots.latest()
        const byBucket = new Map<number, ManifestEntry[]>()
        for (const e of latest ? await table.manifests.liveEntries(latest) : []) byBucket.set(e.bucket, [...(byBucket.get(e.bucket) ?? []), e])
        for (const [b, files] of byBucket) expect(compactionNeeded(table, files), `bucket ${b} still needs compaction`).toBe(false)
        expect(sortRows(await readAll(table))).toEqual(model.snapshot())
      }),
      { numRuns: 12 },
    )
  }, 240_000)
})

describe('a failed bucket recovers in seconds', () => {
  it('its message comes back after a 2 s backoff, not the 30 s visibility timeout; the other buckets of the batch are compacted', async () => {
    const { table, url, jobs, model, msgs } = await threeBucketBatch()
    const failing = (JSON.parse(msgs[1].Body!) as CompactionJob).bucket
    let failures = 0
    // a transient S3 failure of one bucket's compaction; mocked at the committer because the
    // fault must hit that bucket only (the other buckets share the store)
    const flaky: Committer = {
      async commit(req: CommitRequest) {
        if (req.adds.some((e) => e.bucket === failing) && failures++ === 0) throw new Error('injected: S3 503 Slow Down')
        return table.committer.commit(req)
      },
    }
    const opts: ProcessOptions = { resolve: async () => ({ table, jobs, committer: flaky }), giveBack: (m) => jobs.giveBack(m) }
    const t0 = Date.now()
    const res = await compactBatch(url, msgs, opts)
    expect(res.failedIds).toEqual([msgs[1].MessageId])
    expect(res.backoff).toEqual([{ id: msgs[1].MessageId, delaySeconds: 2 }])
    expect(res.outcomes.map((o) => o.job.bucket).sort()).toEqual([0, 1, 2].filter((b) => b !== failing))
    // invisible for its backoff, then back
    expect(await receive(url)).toEqual([])
    let again: Message[] = []
    while (again.length === 0 && Date.now() - t0 < 20_000) {
      await sleep(200)
      again = await receive(url)
    }
    const recoveredMs = Date.now() - t0
    expect(again.map((m) => m.MessageId)).toEqual([msgs[1].MessageId])
    // invisible for its backoff (a lower bound a slow machine cannot break), back well before 30 s
    expect(recoveredMs).toBeGreaterThanOrEqual(1_500)
    expect(Number(again[0].Attributes?.ApproximateReceiveCount)).toBe(2)
    const res2 = await compactBatch(url, again, opts)
    expect(res2.failedIds).toEqual([])
    const latest = await table.snapshots.latest()
    expect((await table.manifests.liveEntries(latest!)).filter((e) => e.file.level === 0)).toEqual([])
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  }, 60_000)

  it('buckets not started when the remaining time runs short come back at once', async () => {
    const { name, table, url, jobs, msgs } = await threeBucketBatch()
    // one bucket at a time; after the first, the invocation has 10 s left of a 20 s reserve
    let started = 0
    const res = await compactBatch(url, msgs, {
      resolve: async () => ({ table, jobs, committer: table.committer }),
      giveBack: (m) => jobs.giveBack(m),
      bucketsAtOnce: 1,
      remainingMs: () => (started++ === 0 ? 60_000 : 10_000),
    })
    expect(res.outcomes).toHaveLength(1)
    expect(res.notStarted).toEqual([msgs[1].MessageId, msgs[2].MessageId])
    // visible again at once: the next receive takes them
    const again = await receive(url)
    expect(again.map((m) => m.MessageId).sort()).toEqual([msgs[1].MessageId, msgs[2].MessageId].sort())
    expect(messageGroupId(JSON.parse(again[0].Body!) as CompactionJob)).toContain(name)
  }, 60_000)
})

describe('message groups', () => {
  it('task-threads 1: every job of a table in one group, long table names included; otherwise one per bucket', () => {
    for (const table of ['orders', `t${'x'.repeat(200)}`]) {
      const jobs = [0, 1, 2].map((bucket) => ({ table, partition: 'dt=2024-05-01', bucket }))
      expect(new Set(jobs.map((j) => messageGroupId(j, true))).size).toBe(1)
      expect(new Set(jobs.map((j) => messageGroupId(j))).size).toBe(3)
      for (const j of jobs) expect(messageGroupId(j, true).length).toBeLessThanOrEqual(128)
    }
  })
})

describe('merges at once', () => {
  it('mergesAtOnce 1 (task-threads N): one merge at a time, while earlier buckets wait for their commits', async () => {
    const { table, url, jobs, model, msgs } = await threeBucketBatch()
    const merges: { bucket: number; start: number; end: number }[] = []
    const commits: { start: number; end: number }[] = []
    const slowCommit: Committer = {
      async commit(req: CommitRequest) {
        const start = Date.now()
        merges.find((m) => m.bucket === req.adds[0]?.bucket && m.end === 0)!.end = start
        await sleep(400)
        const r = await table.committer.commit(req)
        commits.push({ start, end: Date.now() })
        return r
      },
    }
    const res = await compactBatch(url, msgs, {
      resolve: async () => ({ table, jobs, committer: slowCommit }),
      bucketsAtOnce: 3,
      mergesAtOnce: 1,
      onStart: (job) => merges.push({ bucket: job.bucket, start: Date.now(), end: 0 }),
    })
    expect(res.failedIds).toEqual([])
    expect(merges).toHaveLength(3)
    // a merge runs from its permit (onStart) to its commit request: never two at once
    const byStart = [...merges].sort((a, b) => a.start - b.start)
    for (let i = 1; i < byStart.length; i++) expect(byStart[i].start, `merge of bucket ${byStart[i].bucket} began before the previous one asked for its commit`).toBeGreaterThanOrEqual(byStart[i - 1].end)
    // the commits overlap each other (lanes wait together), so the batch took less than 3 commit waits in a row
    const overlapping = commits.some((a, i) => commits.some((b, j) => i !== j && a.start < b.end && b.start < a.end))
    expect(overlapping).toBe(true)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  }, 60_000)
})
