// The writer function against the embedded S3 + SQS backend: rejects, partial batches,
// crashes before and after the commit, redelivery, Kinesis ordering, compaction jobs.

import { CreateQueueCommand, ReceiveMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { writerHandler } from '../functions/writer.ts'
import { rejectStore, resolveTable } from '../functions/shared/runtime.ts'
import { ingest } from '../lib/ingest/ingest.ts'
import { readAll } from '../lib/read/table-read.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { Table } from '../lib/handle/table.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { kinesisEvent, sqsEvent, sqsRecord, useFunctionEnv } from './helpers/lambda.ts'
import { sortRows } from './helpers/model.ts'

let backend: EmbeddedBackend
let sqs: SQSClient
let queueUrl: string
const BUCKET = 'writer-test'
let n = 0

const SCHEMA = {
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'INT' },
    { name: 'qty', type: 'BIGINT' },
    { name: 'note', type: 'STRING' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  // aggregation (sum) makes a double write visible: the sums would double
  options: { bucket: '2', 'merge-engine': 'aggregation', 'fields.qty.aggregate-function': 'sum', 'fields.note.aggregate-function': 'last_non_null_value' },
}

async function freshTable(schema: object = SCHEMA): Promise<{ name: string; uri: string; table: Table }> {
  const name = `t${n++}`
  const uri = `s3://${BUCKET}/tables/${name}`
  const table = await Table.create(new S3Store({ bucket: BUCKET, prefix: `tables/${name}`, client: backend.s3Client() }), schema)
  useFunctionEnv(backend, { [name]: { uri, compactionQueueUrl: queueUrl } }, { STRATA_REJECT_URI: `s3://${BUCKET}/rejects/${name}` })
  return { name, uri, table }
}

async function rejectsOf(name: string): Promise<{ reason: string; source: string; id: string; record: string }[]> {
  const store = new S3Store({ bucket: BUCKET, prefix: `rejects/${name}`, client: backend.s3Client() })
  const out = []
  for (const o of await store.list('')) {
    const text = new TextDecoder().decode((await store.get(o.key))!)
    for (const line of text.trim().split('\n')) out.push(JSON.parse(line))
  }
  return out
}

const row = (dt: string, id: number, qty: number, note?: string) => JSON.stringify({ dt, id, qty, ...(note ? { note } : {}) })

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
  const q = await sqs.send(new CreateQueueCommand({ QueueName: 'compaction.fifo', Attributes: { FifoQueue: 'true' } }))
  queueUrl = q.QueueUrl!
})
afterAll(async () => {
  sqs.destroy()
  await backend.stop()
})

describe('writer function', () => {
  it('commits the good records of a mixed batch and writes every bad one, with its reason, to the reject location', async () => {
    const { name, table } = await freshTable()
    const good = [sqsRecord(row('2024-05-01', 1, 5)), sqsRecord(row('2024-05-01', 2, 7, 'x')), sqsRecord(row('2024-05-02', 3, 1))]
    const bad = [
      sqsRecord('{"dt": "2024-05-01", "id": '),
      sqsRecord(JSON.stringify({ dt: '2024-05-01', id: 4, qty: 1, colour: 'red' })),
      sqsRecord(JSON.stringify({ dt: '2024-05-01', id: null, qty: 1 })),
      sqsRecord(JSON.stringify({ dt: '2024-05-01', id: 5, qty: 'many' })),
      sqsRecord('[1,2]'),
    ]
    const res = await writerHandler(sqsEvent([good[0], bad[0], good[1], bad[1], bad[2], good[2], bad[3], bad[4]]))
    expect(res.batchItemFailures).toEqual([])
    expect(sortRows(await readAll(table))).toEqual([
      ['2024-05-01', 1, 5n, null],
      ['2024-05-01', 2, 7n, 'x'],
      ['2024-05-02', 3, 1n, null],
    ])
    const rejects = await rejectsOf(name)
    expect(rejects.map((r) => r.id).sort()).toEqual(bad.map((b) => b.messageId).sort())
    const byId = new Map(rejects.map((r) => [r.id, r]))
    expect(byId.get(bad[0].messageId)!.reason).toMatch(/: malformed JSON at character 28: expected a value, found the end of the line$/)
    expect(byId.get(bad[1].messageId)!.reason).toMatch(/unknown column 'colour'/)
    expect(byId.get(bad[2].messageId)!.reason).toMatch(/field 'id' is NOT NULL but got null/)
    expect(byId.get(bad[3].messageId)!.reason).toMatch(/field 'qty' \(BIGINT\) expected an integer, got "many"/)
    for (const r of rejects) {
      expect(r.source).toBe(`arn:aws:sqs:us-east-1:000000000000:ingest#${r.id}`)
      expect(r.record).toBe(bad.find((b) => b.messageId === r.id)!.body)
    }
    // without deletion vectors a bucket below the compaction trigger (5 sorted runs) gets no
    // job (its reads merge level 0 in); four more writes of the same rows bring each touched
    // bucket to it: one compaction job per touched bucket, at task-threads 1 (the default)
    // all in the table's one message group
    const receive = async () => (await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 0 }))).Messages ?? []
    expect(await receive()).toEqual([])
    for (let i = 0; i < 4; i++) {
      const again = [sqsRecord(row('2024-05-01', 1, 5)), sqsRecord(row('2024-05-01', 2, 7, 'x')), sqsRecord(row('2024-05-02', 3, 1))]
      expect((await writerHandler(sqsEvent(again))).batchItemFailures).toEqual([])
    }
    const msgs = await receive()
    expect(msgs.length).toBeGreaterThan(0)
    for (const m of msgs) {
      expect(m.Attributes!.MessageGroupId).toBe(name)
      const job = JSON.parse(m.Body!) as { partition: string; bucket: number }
      expect(`${job.partition}/${job.bucket}`).toMatch(/^dt=2024-05-0[12]\/[01]$/)
    }
  })

  it('a batch that died after writing files but before committing commits exactly once when redelivered', async () => {
    const { name, table } = await freshTable()
    const event = sqsEvent([sqsRecord(row('2024-05-01', 1, 10)), sqsRecord(row('2024-05-01', 2, 20))])
    const records = event.Records.map((r) => ({ id: r.messageId, source: r.messageId, body: r.body }))
    // the first attempt dies at the last moment: its data files are written, no snapshot
    const first = await ingest(records, {
      resolve: resolveTable,
      defaultTable: name,
      rejects: rejectStore(),
      commitUser: 'strata-writer-local',
      beforeSnapshotCreate: () => {
        throw new Error('simulated crash before the snapshot is created')
      },
    })
    expect(first.failedIds.sort()).toEqual(records.map((r) => r.id).sort())
    expect(await table.snapshots.latestId()).toBe(0)
    event.Records.forEach((r) => (r.attributes.ApproximateReceiveCount = '2'))
    expect((await writerHandler(event)).batchItemFailures).toEqual([])
    expect(sortRows(await readAll(table))).toEqual([
      ['2024-05-01', 1, 10n, null],
      ['2024-05-01', 2, 20n, null],
    ])
  })

  it('a batch that committed but was not acked is recognised on redelivery and not written twice', async () => {
    const { table } = await freshTable()
    const event = sqsEvent([sqsRecord(row('2024-05-01', 1, 10)), sqsRecord(row('2024-05-01', 2, 20)), sqsRecord(row('2024-05-01', 1, 1))])
    expect((await writerHandler(event)).batchItemFailures).toEqual([])
    // another batch lands in between, then the first one is redelivered (twice)
    expect((await writerHandler(sqsEvent([sqsRecord(row('2024-05-01', 2, 100))])))).toEqual({ batchItemFailures: [] })
    for (const count of ['2', '3']) {
      event.Records.forEach((r) => (r.attributes.ApproximateReceiveCount = count))
      expect((await writerHandler(event)).batchItemFailures).toEqual([])
    }
    expect(sortRows(await readAll(table))).toEqual([
      ['2024-05-01', 1, 11n, null],
      ['2024-05-01', 2, 120n, null],
    ])
    expect(await table.snapshots.latestId()).toBe(2)
  })

  it('Kinesis: records decode from base64, and a redelivered batch is not written twice', async () => {
    const { table } = await freshTable()
    const event = kinesisEvent([row('2024-05-01', 1, 3), '{oops', row('2024-05-02', 9, 4)])
    expect((await writerHandler(event)).batchItemFailures).toEqual([])
    expect((await writerHandler(event)).batchItemFailures).toEqual([])
    expect(sortRows(await readAll(table))).toEqual([
      ['2024-05-01', 1, 3n, null],
      ['2024-05-02', 9, 4n, null],
    ])
  })

  it('Kinesis: data that is not UTF-8 is rejected, not stored with U+FFFD in place of its bytes', async () => {
    const { name, table } = await freshTable()
    const event = kinesisEvent([row('2024-05-01', 1, 3), row('2024-05-01', 2, 4)])
    // the second record's note holds the byte 0xff, which no UTF-8 text contains
    event.Records[1].kinesis.data = Buffer.concat([Buffer.from('{"dt":"2024-05-01","id":2,"qty":4,"note":"a'), Buffer.from([0xff]), Buffer.from('"}')]).toString('base64')
    expect((await writerHandler(event)).batchItemFailures).toEqual([])
    expect(await readAll(table)).toEqual([['2024-05-01', 1, 3n, null]])
    expect((await rejectsOf(name)).map((r) => r.reason)).toEqual([`${event.Records[1].eventSourceARN}#pk-1@1001: the record is not valid UTF-8 text`])
  })

  it('Kinesis: when rejects cannot be stored, nothing at or after the first failed record is committed', async () => {
    const { name, table } = await freshTable()
    const records = [row('2024-05-01', 1, 1), '{bad', row('2024-05-01', 2, 2)].map((body, i) => ({ id: String(100 + i), source: `seq ${100 + i}`, body }))
    // a reject store that fails: the one place a record can fail without a commit failing
    const failing = { ...rejectStore(), put: async () => { throw new Error('S3 unavailable') } } as ReturnType<typeof rejectStore>
    const res = await ingest(records, { resolve: resolveTable, defaultTable: name, rejects: failing, commitUser: 'w', orderedSource: true })
    expect(res.failedIds.sort()).toEqual(['101', '102'])
    expect(sortRows(await readAll(table))).toEqual([['2024-05-01', 1, 1n, null]])
  })

  it('no single record fails a batch (issue 16): each hostile record is rejected alone with a reason naming its field; the rest commit', async () => {
    const { name, table } = await freshTable({
      fields: [
        { name: 'dt', type: 'STRING' },
        { name: 'id', type: 'INT' },
        { name: 'price', type: 'DECIMAL(10, 2)' },
        { name: 'x', type: 'DOUBLE' },
        { name: 'raw', type: 'BYTES' },
        { name: 'note', type: 'STRING' },
      ],
      primaryKeys: ['dt', 'id'],
      partitionKeys: ['dt'],
      options: { bucket: '2', 'write.max-row-size': '1 kb' },
    })
    const good = [
      sqsRecord('{"dt":"2024-05-01","id":1,"price":"1.50","x":2.5,"raw":"AAEC"}'),
      sqsRecord('{"dt":"2024-05-01","id":2,"price":12345678.99,"note":"ok"}'),
      sqsRecord('{"dt":"2024-05-02","id":3,"price":"1.5e2"}'),
    ]
    // each bad record with the field (or position) its reason must name
    const bad: [ReturnType<typeof sqsRecord>, RegExp][] = [
      [sqsRecord('{"dt":"2024-05-01","id":4,"price":"1e400000000"}'), /field 'price' \(DECIMAL\(10, 2\)\) expected a decimal number with at most 8 integer digits, got "1e400000000"$/],
      // a RangeError out of BigInt before the fix: it failed the whole batch
      [sqsRecord('{"dt":"2024-05-01","id":5,"price":"1e9999999999"}'), /field 'price' \(DECIMAL\(10, 2\)\) expected a decimal number with at most 8 integer digits, got "1e9999999999"$/],
      [sqsRecord('{"dt":"2024-05-01","id":6,"price":1e-9999999999}'), /field 'price' \(DECIMAL\(10, 2\)\) expected a decimal number with at most 2 fraction digits/],
      [sqsRecord('{"dt":"2024-05-01","id":7,"price":"1.005"}'), /field 'price' .* at most 2 fraction digits .*got "1\.005"$/],
      [sqsRecord('{"dt":"2024-05-01","id":8,"x":1e400}'), /field 'x' \(DOUBLE\) expected a finite number within DOUBLE range .*got 1e400$/],
      [sqsRecord('{"dt":"2024-05-01","id":9,"raw":"A"}'), /field 'raw' \(BYTES\) expected standard base64 .*got "A"$/],
      [sqsRecord('{"dt":"2024-05-01","id":10,"id":11}'), /malformed JSON at character 28: key "id" appears twice in one object$/],
      [sqsRecord('{"dt":"2024-05-01","id":12,"x":' + '['.repeat(5000) + ']'.repeat(5000) + '}'), /malformed JSON at character \d+: objects and arrays nested deeper than 64 levels$/],
      [sqsRecord('{"dt":"2024-05-01","id":13,"note":"' + 'n'.repeat(2000) + '"}'), /row of 2018 bytes is larger than write.max-row-size \(1024 bytes\); key \{"dt":"2024-05-01","id":13\}, largest field 'note' \(2000 bytes\)$/],
      [sqsRecord(JSON.stringify({ dt: 'd'.repeat(300), id: 14 })), /partition field 'dt': directory name 'dt=d+\.\.\.' is 303 bytes/],
      [sqsRecord('{"dt":"2024-05-01","id":15'), /malformed JSON at character 27/],
    ]
    const records = [good[0], ...bad.slice(0, 6).map(([r]) => r), good[1], ...bad.slice(6).map(([r]) => r), good[2]]
    const res = await writerHandler(sqsEvent(records))
    expect(res.batchItemFailures).toEqual([])
    expect(sortRows(await readAll(table))).toEqual([
      ['2024-05-01', 1, 150n, 2.5, new Uint8Array([0, 1, 2]), null],
      ['2024-05-01', 2, 1234567899n, null, null, 'ok'],
      ['2024-05-02', 3, 15000n, null, null, null],
    ])
    const rejects = new Map((await rejectsOf(name)).map((r) => [r.id, r]))
    expect(rejects.size).toBe(bad.length)
    for (const [r, reason] of bad) {
      expect(rejects.get(r.messageId)!.reason).toMatch(reason)
      expect(rejects.get(r.messageId)!.reason.startsWith(`arn:aws:sqs:us-east-1:000000000000:ingest#${r.messageId}: `)).toBe(true)
      expect(rejects.get(r.messageId)!.record).toBe(r.body)
    }
  })

  it('a table that cannot be opened fails only its own records (redelivered); the other table commits', async () => {
    const { name, uri, table } = await freshTable()
    // configured, but nothing was ever created there: opening it fails on every attempt
    useFunctionEnv(backend, { [name]: { uri }, missing: { uri: `s3://${BUCKET}/tables/never-created` } }, { STRATA_REJECT_URI: `s3://${BUCKET}/rejects/${name}` })
    const lost = [sqsRecord(JSON.stringify({ _table: 'missing', dt: 'x', id: 1, qty: 1 })), sqsRecord(JSON.stringify({ _table: 'missing', dt: 'x', id: 2, qty: 1 }))]
    const res = await writerHandler(sqsEvent([lost[0], sqsRecord(JSON.stringify({ _table: name, dt: 'x', id: 3, qty: 3 })), lost[1]]))
    expect(res.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(lost.map((r) => r.messageId).sort())
    expect(await readAll(table)).toEqual([['x', 3, 3n, null]])
  })

  it('a record naming an unknown table is rejected; the rest of the batch commits', async () => {
    const { name, table } = await freshTable()
    const res = await writerHandler(sqsEvent([sqsRecord(JSON.stringify({ _table: 'nope', dt: 'x', id: 1, qty: 1 })), sqsRecord(JSON.stringify({ _table: name, dt: 'x', id: 2, qty: 2 }))]))
    expect(res.batchItemFailures).toEqual([])
    expect(await readAll(table)).toEqual([['x', 2, 2n, null]])
    expect((await rejectsOf(name)).map((r) => r.reason)).toEqual(["field '_table': unknown table 'nope'"])
  })
})
