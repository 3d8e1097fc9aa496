// The batching committer: folding commit messages (real writeBatch and compactBucket
// output, captured before their commit) gives the table that committing the same messages
// one by one directly gives; a conflicting compaction fails alone; redelivered messages
// land nothing twice; equal sequence numbers resolve to the later message; the codec; and
// the committer function driven through the embedded SQS FIFO queue.

import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { committerHandler } from '../functions/committer.ts'
import { BatchingCommitter, requestFromMessage } from '../lib/commit/batching-committer.ts'
import { FOLDING_COMMIT_USER, commitKeyOf, foldedCommitsKey } from '../lib/commit/landed.ts'
import { readReceipt } from '../lib/commit/receipts.ts'
import { compactionMessage, writeMessage } from './helpers/commit.ts'
import {
  type CommitMessage,
  COMMIT_MESSAGE_DIR,
  decodeCommitMessage,
  encodeCommitMessage,
  parseCommitMessageBody,
  validateCommitMessage,
} from '../lib/commit/commit-message.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { readAll } from '../lib/read/table-read.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { CommitConflictError, StrataInputError } from '../lib/errors.ts'
import type { Row } from '../lib/types.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { sqsEventOf, sqsRecordOf } from '../local/runtime/sqs-event.ts'
import { sqsEvent, sqsRecord, useFunctionEnv } from './helpers/lambda.ts'
import { type Op, TableModel, opArb, schemaFor, sortRows } from './helpers/model.ts'
import { localStores } from './helpers/stores.ts'

const stores = localStores()
beforeAll(() => stores.setup())
afterAll(() => stores.teardown())

const DT = '2024-05-01'
const put = (ids: number[], a = 1, dt = DT): Op[] => ids.map((id) => ({ _kind: '+I', dt, id, a, b: null, c: null }))
const records = (table: Table, ops: Op[]) => ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`))

async function newTable(options: Record<string, string> = {}, store: ObjectStore = stores.fresh()): Promise<Table> {
  return Table.create(store, schemaFor('deduplicate', { bucket: '2', ...options }))
}

/** Copies the data and index files a message references from one table's store to another's. */
async function copyFiles(from: Table, to: Table): Promise<void> {
  for (const info of await from.store.list('')) {
    if (/^(snapshot|manifest|schema|_strata)\//.test(info.key)) continue
    if (await to.store.head(info.key)) continue
    await to.store.put(info.key, (await from.store.get(info.key))!)
  }
}

async function liveFiles(table: Table): Promise<string[]> {
  const s = await table.snapshots.latest()
  return s ? (await table.manifests.liveEntries(s)).map((e) => `${e.bucket}/${e.file.level}/${e.file.fileName}`).sort() : []
}

async function compactionMessagesOf(table: Table, full: boolean): Promise<CommitMessage[]> {
  const s = await table.snapshots.latest()
  if (!s) return []
  const seen = new Map<string, { partition: Uint8Array; bucket: number }>()
  for (const e of await table.manifests.liveEntries(s)) seen.set(`${Buffer.from(e.partition).toString('hex')}|${e.bucket}`, { partition: e.partition, bucket: e.bucket })
  const out: CommitMessage[] = []
  for (const b of seen.values()) {
    const m = await compactionMessage(table, { ...b, full })
    if (m) out.push(m)
  }
  return out
}

/** The model takes the table's rows (after a round it cannot predict). */
function resync(model: TableModel, rows: Row[]): void {
  model.rows.clear()
  for (const r of rows) model.rows.set(`${r[0]}|${r[1]}`, { dt: r[0] as string, id: r[1] as number, a: r[2] as number | null, b: r[3] as string | null, c: r[4] === null ? null : Number(r[4]) })
}

type Step = { t: 'write'; ops: Op[] } | { t: 'compact'; full: boolean; twice: boolean }
const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.array(opArb('deduplicate', 8), { minLength: 1, maxLength: 8 }).map((ops): Step => ({ t: 'write', ops })) },
  { weight: 1, arbitrary: fc.record({ full: fc.boolean(), twice: fc.boolean() }).map((x): Step => ({ t: 'compact', ...x })) },
)

describe('batching committer', () => {
  it('folding rounds of messages gives the table that committing them one by one directly gives', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(stepArb, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 4 }), fc.boolean(), async (rounds, dv) => {
        // merge-on-read so level-0 rows are visible to the reads compared here
        const options: Record<string, string> = dv ? { 'deletion-vectors.enabled': 'true', 'deletion-vectors.merge-on-read': 'true' } : {}
        const folded = await newTable(options)
        const direct = await newTable(options)
        const committer = new BatchingCommitter(folded)
        const model = new TableModel('deduplicate')
        for (const round of rounds) {
          // every message of a round is built on the same state, as concurrent writers and
          // compactors build them while earlier messages wait in the queue
          const messages: CommitMessage[] = []
          const writes: Op[][] = []
          for (const step of round) {
            if (step.t === 'write') {
              const m = await writeMessage(folded, records(folded, step.ops))
              if (m) messages.push(m)
              writes.push(step.ops)
            } else {
              const ms = await compactionMessagesOf(folded, step.full)
              messages.push(...ms)
              // the same compactions again from the same state: each must conflict
              if (step.twice) messages.push(...(await compactionMessagesOf(folded, step.full)))
            }
          }
          await copyFiles(folded, direct)
          const before = await folded.snapshots.latestId()
          const res = await committer.commit(messages)
          const directFailed: number[] = []
          for (let i = 0; i < messages.length; i++) {
            try {
              await direct.committer.commit(requestFromMessage(direct.view, messages[i]))
            } catch (e) {
              if (!(e instanceof CommitConflictError)) throw e
              directFailed.push(i)
            }
          }
          const foldedFailed = res.outcomes.flatMap((o, i) => (o.status === 'failed' ? [i] : []))
          expect(foldedFailed).toEqual(directFailed)
          for (const i of foldedFailed) expect(messages[i].kind).toBe('COMPACT')
          expect(res.outcomes.every((o) => o.status !== 'failed' || o.conflict)).toBe(true)
          // at most one APPEND and one COMPACT snapshot per round here (no compaction deletes another's output)
          expect(res.snapshots.length).toBeLessThanOrEqual(2)
          expect((await folded.snapshots.latestId()) - before).toBe(res.snapshots.length)
          expect(sortRows(await readAll(folded))).toEqual(sortRows(await readAll(direct)))
          expect(await liveFiles(folded)).toEqual(await liveFiles(direct))
          // the model applies writes in FIFO order; folded writers of one round share a
          // sequence base, so it only predicts a round whose writes touch disjoint keys
          for (const ops of writes) model.applyBatch(ops)
          const keys = writes.map((ops) => new Set(ops.map((o) => `${o.dt}|${o.id}`)))
          const disjoint = keys.every((k, i) => keys.slice(i + 1).every((l) => [...k].every((x) => !l.has(x))))
          if (disjoint) expect(sortRows(await readAll(folded))).toEqual(model.snapshot())
          else resync(model, await readAll(folded))
          // redelivery of the whole round lands nothing
          const again = await committer.commit(messages)
          expect(again.snapshots).toEqual([])
          expect(again.outcomes.map((o) => o.status)).toEqual(res.outcomes.map((o) => (o.status === 'failed' ? 'failed' : 'duplicate')))
        }
      }),
      { numRuns: 12 },
    )
  }, 120_000)

  it('a conflicting compaction fails alone; the messages around it land', async () => {
    const table = await newTable({ bucket: '1' })
    const model = new TableModel('deduplicate')
    const w = async (ops: Op[]) => {
      const m = (await writeMessage(table, records(table, ops)))!
      model.applyBatch(ops)
      return m
    }
    const committer = new BatchingCommitter(table)
    // (keys of messages built on one snapshot are kept disjoint: they share a sequence base)
    await committer.commit([await w(put([1, 2, 3])), await w(put([4, 5], 2))])
    const [c1] = await compactionMessagesOf(table, true)
    const [c2] = await compactionMessagesOf(table, true)
    const batch = [await w(put([5], 3)), c1, await w(put([1], 4)), c2, await w(put([6], 5))]
    expect(c1.deletes.length).toBe(2)
    const res = await committer.commit(batch)
    expect(res.outcomes.map((o) => o.status)).toEqual(['landed', 'landed', 'landed', 'failed', 'landed'])
    const bad = res.outcomes[3] as { status: 'failed'; error: Error; conflict: boolean }
    expect(bad.conflict).toBe(true)
    expect(bad.error.message).toMatch(/no longer live/)
    expect(res.snapshots.map((s) => [s.kind, s.messages])).toEqual([['APPEND', 3], ['COMPACT', 1]])
    // the APPEND snapshot records all three writer commits; the COMPACT one is c1's own
    const append = (await table.snapshots.snapshot(res.snapshots[0].id))!
    expect(append.commitUser).toBe(FOLDING_COMMIT_USER)
    expect(await table.store.get(foldedCommitsKey(append.commitIdentifier))).not.toBeNull()
    const compact = (await table.snapshots.snapshot(res.snapshots[1].id))!
    expect([compact.commitKind, compact.commitUser]).toEqual(['COMPACT', c1.commitUser])
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    expect((await table.manifests.liveEntries(compact)).filter((e) => e.file.level === 0)).toHaveLength(3)
  })

  it('a fold that keeps losing the race for snapshot-N to the other committer retries past commit.max-retries instead of giving its messages back', async () => {
    const table = await newTable({ bucket: '1', 'commit.max-retries': '2' })
    const other = await Table.open(table.store)
    let raced = 0
    // five times in a row another committer lands a snapshot just before this one creates its own
    const committer = new BatchingCommitter(table, {
      beforeSnapshotCreate: async () => {
        if (raced < 5) await writeBatch(other, records(other, put([100 + raced++])))
      },
    })
    const res = await committer.commit([(await writeMessage(table, records(table, put([1]))))!, (await writeMessage(table, records(table, put([2]))))!])
    expect(raced).toBe(5)
    expect(res.outcomes.map((o) => o.status)).toEqual(['landed', 'landed'])
    expect(res.retries).toBe(5)
    expect((await readAll(table)).map((r) => r[1]).sort((a, b) => Number(a) - Number(b))).toEqual([1, 2, 100, 101, 102, 103, 104])
  })

  it('expiring a folded snapshot deletes its list of folded commits; a retained one keeps it', async () => {
    const table = await newTable({ bucket: '1', 'snapshot.num-retained.min': '1', 'snapshot.num-retained.max': '1' })
    const committer = new BatchingCommitter(table)
    const fold = async (a: number[], b: number[]) => {
      const res = await committer.commit([(await writeMessage(table, records(table, put(a))))!, (await writeMessage(table, records(table, put(b))))!])
      return (await table.snapshots.snapshot(res.snapshots[0].id))!
    }
    const first = await fold([1], [2])
    const second = await fold([3], [4])
    expect(first.commitUser).toBe(FOLDING_COMMIT_USER)
    expect(await table.store.get(foldedCommitsKey(first.commitIdentifier))).not.toBeNull()
    const res = await expireSnapshots(table)
    expect(res.expired).toEqual([first.id])
    expect(await table.store.get(foldedCommitsKey(first.commitIdentifier))).toBeNull()
    expect(await table.store.get(foldedCommitsKey(second.commitIdentifier))).not.toBeNull()
  })

  it('a compaction that deletes what an earlier one in the batch added goes into a second COMPACT snapshot', async () => {
    const table = await newTable({ bucket: '1', 'num-levels': '3' })
    const committer = new BatchingCommitter(table)
    await committer.commit([(await writeMessage(table, records(table, put([1, 2]))))!])
    const [c1] = await compactionMessagesOf(table, true)
    // c2 is built on c1's result (as a compactor would after c1 landed) and then both arrive together
    await committer.commit([c1])
    await committer.commit([(await writeMessage(table, records(table, put([2, 3], 2))))!])
    const [c2] = await compactionMessagesOf(table, true)
    expect(c2.deletes.some((d) => c1.adds.some((a) => a.file.fileName === d.file.fileName))).toBe(true)
    const res = await committer.commit([c1, c2])
    expect(res.outcomes.map((o) => o.status)).toEqual(['duplicate', 'landed'])
    expect(sortRows(await readAll(table))).toEqual(sortRows([[DT, 1, 1, null, null], [DT, 2, 2, null, null], [DT, 3, 2, null, null]]))
  })

  // Merge-on-read only: a compaction orders level-0 files of equal maxSequenceNumber by
  // minSequenceNumber, creation time, then file name (lib/lsm/levels.ts compareLevel0, as
  // Paimon), so such a tie is not kept FIFO through it.
  it('two writers on the same latest snapshot: the later-started batch wins in either FIFO order; an exact tie reads the same before and after compaction', async () => {
    for (const order of [[0, 1], [1, 0]]) {
      const table = await newTable({ bucket: '1' })
      const committer = new BatchingCommitter(table)
      await committer.commit([(await writeMessage(table, records(table, put([7], 0))))!])
      // two writers on the same latest snapshot, each writing key 7 as its first row
      const other = await Table.open(table.store)
      const ms = [(await writeMessage(table, records(table, put([7], 100))))!, (await writeMessage(other, records(other, put([7], 200))))!]
      // sequence numbers come from the writer's clock, not the snapshot id: distinct ranges
      expect(ms[1].adds[0].file.minSequenceNumber).toBeGreaterThan(ms[0].adds[0].file.maxSequenceNumber)
      const res = await committer.commit(order.map((i) => ms[i]))
      expect(res.snapshots).toHaveLength(1)
      expect(await readAll(table)).toEqual([[DT, 7, 200, null, null]])
    }
    // writers whose clocks read the same millisecond: an exact tie, settled by file order the
    // same way by reads and by compaction
    const table = await newTable({ bucket: '1' })
    const other = await Table.open(table.store)
    const base = 5n << 40n
    const ms = [(await writeMessage(table, records(table, put([7], 100)), { sequenceBase: base }))!, (await writeMessage(other, records(other, put([7], 200)), { sequenceBase: base }))!]
    expect(ms[0].adds[0].file.maxSequenceNumber).toBe(ms[1].adds[0].file.maxSequenceNumber)
    await new BatchingCommitter(table).commit(ms)
    const before = await readAll(await Table.open(table.store))
    await compactTable(await Table.open(table.store), { full: true })
    expect(await readAll(await Table.open(table.store))).toEqual(before)
  })

  it('redelivered messages, alone or mixed with new ones and copies, land once', async () => {
    const table = await newTable()
    const committer = new BatchingCommitter(table)
    const model = new TableModel('deduplicate')
    const ms: CommitMessage[] = []
    for (let i = 0; i < 4; i++) {
      ms.push((await writeMessage(table, records(table, put([i, 10 + i], i))))!)
      model.applyBatch(put([i, 10 + i], i))
    }
    const first = await committer.commit([ms[0], ms[1], ms[1]])
    expect(first.outcomes.map((o) => o.status)).toEqual(['landed', 'landed', 'duplicate'])
    // a fresh committer (a cold Lambda) has no cache: it reads the snapshots and the sidecar
    const cold = new BatchingCommitter(await Table.open(table.store))
    const second = await cold.commit([ms[0], ms[1], ms[2], ms[3]])
    expect(second.outcomes.map((o) => o.status)).toEqual(['duplicate', 'duplicate', 'landed', 'landed'])
    expect(second.outcomes[0]).toEqual({ status: 'duplicate', snapshotId: first.snapshots[0].id })
    const third = await cold.commit([ms[2]])
    expect(third).toMatchObject({ snapshots: [], outcomes: [{ status: 'duplicate' }] })
    expect(await table.snapshots.latestId()).toBe(2)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    // a snapshot of one message carries that message's own identity (no sidecar)
    const lone = (await writeMessage(table, records(table, put([20], 20))))!
    const r = await cold.commit([lone])
    const s = (await table.snapshots.snapshot(r.snapshots[0].id))!
    expect([s.commitUser, s.commitIdentifier, s.commitKind]).toEqual([lone.commitUser, lone.commitIdentifier, 'APPEND'])
    expect((await new BatchingCommitter(table).commit([lone])).outcomes[0]).toEqual({ status: 'duplicate', snapshotId: s.id })
  })

  it('a lost race to a direct committer is retried with the folded checks re-run', async () => {
    const table = await newTable({ bucket: '1' })
    const committer0 = new BatchingCommitter(table)
    await committer0.commit([(await writeMessage(table, records(table, put([1, 2]))))!])
    await committer0.commit([(await writeMessage(table, records(table, put([2, 3], 2))))!])
    const [c] = await compactionMessagesOf(table, true)
    const w = (await writeMessage(table, records(table, put([9], 9))))!
    // a stray direct committer: before our COMPACT snapshot is created, it compacts the same
    // files itself; our create loses, the re-run check finds the inputs gone
    const direct = await Table.open(table.store)
    let raced = false
    const committer = new BatchingCommitter(table, {
      beforeSnapshotCreate: async () => {
        if (raced) return
        raced = true
        const [d] = await compactionMessagesOf(direct, true)
        await direct.committer.commit(requestFromMessage(direct.view, d))
      },
    })
    const res = await committer.commit([w, c])
    // the APPEND lost the race and retried (no checks); the COMPACT was planned on a
    // state that then changed, and now conflicts
    expect(res.retries).toBeGreaterThanOrEqual(1)
    expect(res.outcomes[0].status).toBe('landed')
    expect(res.outcomes[1]).toMatchObject({ status: 'failed', conflict: true })
    expect(sortRows(await readAll(table))).toEqual(sortRows([[DT, 1, 1, null, null], [DT, 2, 2, null, null], [DT, 3, 2, null, null], [DT, 9, 9, null, null]]))
  })

  it('codec: messages round-trip; a large one spills to S3 behind a pointer; bad input names the field', async () => {
    const table = await newTable({ 'deletion-vectors.enabled': 'true', bucket: '1' })
    const committer = new BatchingCommitter(table)
    await committer.commit([(await writeMessage(table, records(table, put([1, 2, 3]))))!])
    await committer.commit([(await writeMessage(table, records(table, put([2], 5))))!])
    const w = (await writeMessage(table, records(table, put([4], 1)), { table: 'orders' }))!
    const [c] = await compactionMessagesOf(table, false)
    expect(c.kind).toBe('COMPACT')
    for (const m of [w, c]) {
      const { body, spilledKey } = await encodeCommitMessage(m, table.store)
      expect(spilledKey).toBeUndefined()
      expect(await decodeCommitMessage(body, table.store)).toEqual(m)
    }
    expect(w.commitIdentifier).toBe(9223372036854775807n)
    expect(w.table).toBe('orders')
    // spilled: the pointer names the commit, the body is in _strata/commit-messages/
    const { body, spilledKey } = await encodeCommitMessage(w, table.store, 100)
    expect(spilledKey!.startsWith(COMMIT_MESSAGE_DIR)).toBe(true)
    const parsed = parseCommitMessageBody(body)
    expect(parsed).toMatchObject({ inline: false, key: spilledKey, identity: { kind: 'APPEND', commitUser: w.commitUser, commitIdentifier: w.commitIdentifier } })
    expect(await decodeCommitMessage(body, table.store)).toEqual(w)
    const res = await committer.commit([parsed])
    expect(res.outcomes[0].status).toBe('landed')
    expect(await table.store.get(spilledKey!)).toBeNull() // deleted once landed
    // a redelivered pointer whose body is gone is still recognised by its identity
    expect((await committer.commit([parseCommitMessageBody(body)])).outcomes[0].status).toBe('duplicate')
    const bad = (patch: (o: Record<string, unknown>) => void) => {
      const env = JSON.parse(JSON.stringify({ v: 1, message: { ...w, commitIdentifier: { $bigint: '1' }, adds: [], deletes: [], indexReplacements: [], requireLive: [], expectIndex: [] } }))
      patch(env.message)
      return () => parseCommitMessageBody(JSON.stringify(env))
    }
    expect(bad((m) => delete m.commitUser)).toThrow(/commit message\.commitUser: undefined, expected a non-empty string/)
    expect(bad((m) => (m.kind = 'OVERWRITE'))).toThrow(/commit message\.kind: "OVERWRITE", expected 'APPEND' or 'COMPACT'/)
    expect(bad((m) => (m.adds = [{ bucket: 0 }]))).toThrow(/commit message\.adds\[0\]\.partition: undefined, expected bytes/)
    expect(() => validateCommitMessage({ ...w, deletes: c.deletes })).toThrow(StrataInputError)
    expect(() => validateCommitMessage({ ...w, deletes: c.deletes })).toThrow(/an APPEND to add files only/)
    expect(() => parseCommitMessageBody('{"v":3}')).toThrow(/field "v" is 3, expected 1 or 2/)
    expect(() => parseCommitMessageBody('nope')).toThrow(/not JSON/)
  })
})

describe('committer function', () => {
  let backend: EmbeddedBackend
  let sqs: SQSClient
  const BUCKET = 'committer-test'
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

  async function setup() {
    const name = `t${n++}`
    const table = await newTable({ bucket: '1' }, new S3Store({ bucket: BUCKET, prefix: name, client: backend.s3Client() }))
    useFunctionEnv(backend, { [name]: { uri: `s3://${BUCKET}/${name}` } })
    return { name, table }
  }

  it('folds a batch; a poison message and another table\'s message fail alone; a conflict is settled with a conflict receipt', async () => {
    const { name, table } = await setup()
    const model = new TableModel('deduplicate')
    const body = async (m: CommitMessage) => (await encodeCommitMessage(m, table.store)).body
    const w = async (ops: Op[]) => {
      model.applyBatch(ops)
      return sqsRecord(await body((await writeMessage(table, records(table, ops), { table: name }))!), { groupId: name, queue: 'commits.fifo' })
    }
    expect((await committerHandler(sqsEvent([await w(put([1, 2])), await w(put([3, 4], 2))]))).batchItemFailures).toEqual([])
    const [c1] = await compactionMessagesOf(table, true)
    const [c2] = await compactionMessagesOf(table, true)
    const poison = sqsRecord('{"v":1,"message":{"kind":"APPEND"}}', { groupId: name })
    const elsewhere = sqsRecord(await body({ ...c1, table: 'other' }), { groupId: name })
    const conflict = sqsRecord(await body(c2), { groupId: name })
    const event = sqsEvent([await w(put([4], 4)), poison, sqsRecord(await body(c1), { groupId: name }), conflict, elsewhere, await w(put([5], 5))])
    const res = await committerHandler(event)
    expect(res.batchItemFailures.map((f) => f.itemIdentifier)).toEqual([poison.messageId, elsewhere.messageId])
    expect(await table.snapshots.latestId()).toBe(3) // 1: the first two writes; 2: the next two; 3: c1
    // the conflicting compaction is acknowledged: its receipt tells its compactor to redo the job
    expect(await readReceipt(table.store, commitKeyOf(c2))).toEqual({ status: 'conflict', error: expect.stringMatching(/no longer live/) })
    // a landing has no receipt: its sender finds it in the snapshot chain
    expect(await readReceipt(table.store, commitKeyOf(c1))).toBeNull()
    expect(await table.landed.find(commitKeyOf(c1), 2, 3)).toBe(3)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  })

  it('through the embedded SQS FIFO queue: every message lands once, redeliveries included', async () => {
    const { name, table } = await setup()
    const q = await sqs.send(new CreateQueueCommand({ QueueName: `${name}-commits.fifo`, Attributes: { FifoQueue: 'true', VisibilityTimeout: '30' } }))
    const queueUrl = q.QueueUrl!
    const model = new TableModel('deduplicate')
    const bodies: string[] = []
    for (let i = 0; i < 6; i++) {
      const ops = put([i % 3, 10 + i], i)
      model.applyBatch(ops)
      const m = (await writeMessage(table, records(table, ops), { table: name }))!
      bodies.push((await encodeCommitMessage(m, table.store, i === 2 ? 64 : undefined)).body) // one spilled
    }
    // message 1 sent twice (a writer that retried its send): FIFO deduplication ids differ
    const sends = [0, 1, 1, 2, 3, 4, 5]
    for (const [k, i] of sends.entries()) {
      await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: bodies[i], MessageGroupId: name, MessageDeduplicationId: `${i}-${k}` }))
    }
    let handled = 0
    for (let guard = 0; handled < sends.length && guard < 50; guard++) {
      const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 0 }))
      const msgs = got.Messages ?? []
      if (!msgs.length) continue
      const records = msgs.map((m) => sqsRecordOf(m, `arn:aws:sqs:${backend.region}:000000000000:${name}-commits.fifo`, backend.region))
      const res = await committerHandler(sqsEventOf(records))
      expect(res.batchItemFailures).toEqual([])
      for (const m of msgs) await sqs.send(new DeleteMessageCommand({ QueueUrl: queueUrl, ReceiptHandle: m.ReceiptHandle! }))
      handled += msgs.length
    }
    expect(handled).toBe(sends.length)
    // 6 distinct messages, the copy acknowledged without a snapshot
    const ids = await table.snapshots.listIds()
    let commits = 0
    for (const id of ids) commits += (await table.landed.of((await table.snapshots.snapshot(id))!)).length
    expect(commits).toBe(6)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  })
})
