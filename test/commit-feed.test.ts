// The commit feed (lib/commit/commit-feed.ts) on the embedded backend: the committer
// function, given STRATA_FEED_QUEUE_URL, publishes one event per fold naming the table and
// the snapshots it created (their kinds, the range of a folded commit) to a real SQS queue;
// the increment the event names reads back exactly what was written; and a feed that cannot
// be published to (a queue that does not exist) neither fails nor undoes the commit.

import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { committerHandler } from '../functions/committer.ts'
import { resetRuntime } from '../functions/shared/runtime.ts'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { type CommitEvent, SqsCommitFeed, commitEventOf, publishQuietly } from '../lib/commit/commit-feed.ts'
import { encodeCommitMessage } from '../lib/commit/commit-message.ts'
import { commitFromQueue } from '../lib/commit/commit-service.ts'
import { readIncremental } from '../lib/read/incremental.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { compactionMessage, writeMessage } from './helpers/commit.ts'
import { sqsEvent, sqsRecord, useFunctionEnv } from './helpers/lambda.ts'
import { type Op, schemaFor } from './helpers/model.ts'
import { parseConfig } from '../functions/shared/config.ts'

let backend: EmbeddedBackend
let sqs: SQSClient
const BUCKET = 'commit-feed'
const savedEnv = { ...process.env }

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
})
afterAll(async () => {
  process.env = savedEnv
  resetRuntime()
  sqs?.destroy()
  await backend?.stop()
})

const op = (kind: Op['_kind'], id: number, a: number): Op => ({ _kind: kind, dt: '2024-05-01', id, a, b: null, c: null })

async function feedQueue(name: string): Promise<string> {
  return (await sqs.send(new CreateQueueCommand({ QueueName: `${name}-feed` }))).QueueUrl!
}

async function events(url: string): Promise<{ event: CommitEvent; attributes: Record<string, string> }[]> {
  const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: url, MaxNumberOfMessages: 10, MessageAttributeNames: ['All'], WaitTimeSeconds: 0 }))
  return (got.Messages ?? []).map((m) => ({
    event: JSON.parse(m.Body!) as CommitEvent,
    attributes: Object.fromEntries(Object.entries(m.MessageAttributes ?? {}).map(([k, v]) => [k, v.StringValue!])),
  }))
}

/** A write's commit message body, committed by nobody yet. */
async function writeBody(table: Table, ops: Op[], name: string): Promise<string> {
  const m = await writeMessage(table, ops.map((o, i) => recordFromJson(table.view, o, `op ${i}`)), { table: name })
  return (await encodeCommitMessage(m!, table.store)).body
}

describe('commit feed', () => {
  it('the committer publishes one event per fold naming the table, its snapshots and kinds; the increment reads back the writes', async () => {
    const name = 'orders'
    const store = new S3Store({ bucket: BUCKET, prefix: name, client: backend.s3Client() })
    const table = await Table.create(store, schemaFor('deduplicate', { bucket: '1' }))
    const url = await feedQueue(name)
    process.env = { ...savedEnv }
    useFunctionEnv(backend, { [name]: { uri: `s3://${BUCKET}/${name}` } }, { STRATA_TABLE: name, STRATA_FEED_QUEUE_URL: url })

    // fold 1: two writes folded into one APPEND snapshot
    const bodies = [await writeBody(table, [op('+I', 1, 1), op('+I', 2, 2)], name), await writeBody(table, [op('+I', 3, 3)], name)]
    let res = await committerHandler(sqsEvent(bodies.map((b) => sqsRecord(b, { groupId: 'g' }))))
    expect(res.batchItemFailures).toEqual([])
    let got = await events(url)
    expect(got).toHaveLength(1)
    expect(got[0].event).toMatchObject({ version: 1, table: name, fromSnapshot: 0, toSnapshot: 1, snapshots: [{ id: 1, kind: 'APPEND', commits: 2 }], kinds: ['APPEND'] })
    expect(got[0].attributes).toEqual({ table: name, kinds: 'APPEND' })
    const read = async (e: CommitEvent) =>
      (await readIncremental(await Table.open(store), { fromSnapshot: e.fromSnapshot, toSnapshot: e.toSnapshot })).map((c) => `${ROW_KIND_SHORT[c.kind]} ${c.row[1]}=${c.row[2]}`).sort()
    expect(await read(got[0].event)).toEqual(['+I 1=1', '+I 2=2', '+I 3=3'])

    // fold 2: a write and a compaction of what landed: APPEND then COMPACT, one event for the range
    const fresh = await Table.open(store)
    const compaction = await compactionMessage(fresh, { partition: fresh.view.partitionFields.length ? (await fresh.manifests.liveEntries((await fresh.snapshots.latest())!))[0].partition : new Uint8Array(), bucket: 0, full: true }, name)
    const write2 = await writeBody(fresh, [op('-D', 1, 1), op('+U', 2, 20)], name)
    res = await committerHandler(sqsEvent([sqsRecord(write2, { groupId: 'g' }), sqsRecord((await encodeCommitMessage(compaction!, store)).body, { groupId: 'g' })]))
    expect(res.batchItemFailures).toEqual([])
    got = await events(url)
    expect(got).toHaveLength(1)
    expect(got[0].event).toMatchObject({ table: name, fromSnapshot: 1, toSnapshot: 3, snapshots: [{ id: 2, kind: 'APPEND', commits: 1 }, { id: 3, kind: 'COMPACT', commits: 1 }], kinds: ['APPEND', 'COMPACT'] })
    expect(await read(got[0].event)).toEqual(['+U 2=20', '-D 1=1'])
  })

  it('a feed that cannot be published to is logged and counted, and the commit stands', async () => {
    const name = 'nofeed'
    const store = new S3Store({ bucket: BUCKET, prefix: name, client: backend.s3Client() })
    const table = await Table.create(store, schemaFor('deduplicate', { bucket: '1' }))
    const missing = `${backend.endpoint}/000000000000/no-such-queue`
    process.env = { ...savedEnv }
    useFunctionEnv(backend, { [name]: { uri: `s3://${BUCKET}/${name}` } }, { STRATA_TABLE: name, STRATA_FEED_QUEUE_URL: missing })
    const res = await committerHandler(sqsEvent([sqsRecord(await writeBody(table, [op('+I', 1, 1)], name), { groupId: 'g' })]))
    expect(res.batchItemFailures).toEqual([])
    expect(await (await Table.open(store)).snapshots.latestId()).toBe(1)
    // the same through the library, where the counts are visible
    const out = await commitFromQueue(new BatchingCommitter(await Table.open(store)), [{ id: 'm1', body: await writeBody(table, [op('+I', 2, 2)], name) }], {
      tableName: name,
      feed: { feed: new SqsCommitFeed(sqs, missing), onFailure: () => {} },
    })
    expect(out).toMatchObject({ landed: 1, snapshots: [2], feedPublished: 0, feedFailures: 1 })
    expect(await (await Table.open(store)).snapshots.latestId()).toBe(2)
  })

  it('a publish that never answers is counted failed after the timeout, and a failing logger changes nothing', async () => {
    const event = commitEventOf('t', [{ id: 1, kind: 'APPEND', commits: 1 }])!
    const failures: string[] = []
    const hung = { publish: () => new Promise<void>(() => {}) }
    expect(await publishQuietly(hung, event, (e) => failures.push(e.message), 20)).toBe(false)
    expect(failures).toEqual(['no answer from the commit feed within 20 ms'])
    const broken = { publish: () => Promise.reject(new Error('boom')) }
    expect(await publishQuietly(broken, event, () => { throw new Error('logger down') })).toBe(false)
    expect(await publishQuietly({ publish: async () => {} }, event, () => failures.push('x'))).toBe(true)
    expect(failures).toHaveLength(1)
  })

  it('events and configuration: no event without snapshots; a feed URL that is not one is refused naming the variable', () => {
    expect(commitEventOf('t', [])).toBeNull()
    expect(commitEventOf('t', [{ id: 5, kind: 'COMPACT', commits: 1 }, { id: 4, kind: 'APPEND', commits: 2 }], 7)).toEqual({
      version: 1, table: 't', fromSnapshot: 3, toSnapshot: 5, snapshots: [{ id: 4, kind: 'APPEND', commits: 2 }, { id: 5, kind: 'COMPACT', commits: 1 }], kinds: ['APPEND', 'COMPACT'], time: 7,
    })
    const env = { STRATA_TABLES: JSON.stringify({ t: { uri: 's3://b/t' } }) }
    expect(parseConfig(env).feedQueueUrl).toBeUndefined()
    expect(parseConfig({ ...env, STRATA_FEED_QUEUE_URL: 'https://sqs.eu-west-1.amazonaws.com/1/f' }).feedQueueUrl).toBe('https://sqs.eu-west-1.amazonaws.com/1/f')
    expect(() => parseConfig({ ...env, STRATA_FEED_QUEUE_URL: 'not a url' })).toThrow('environment variable STRATA_FEED_QUEUE_URL: expected an SQS queue URL')
  })
})
