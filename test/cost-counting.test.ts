// The cost benchmark's counting (bench/lib/cost-count.ts, bench/lib/cost-bill.ts) against the
// embedded backend's own request counts (local/request-counts.ts): the backend counts what
// the SDK sent, per operation; every request of a tiny workload on the local runtime is billed
// to a component of the deployment, none left over; the price file turns known counts into
// the expected dollars.
import { CopyObjectCommand, DeleteObjectCommand, HeadObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { CreateQueueCommand, DeleteMessageBatchCommand, ReceiveMessageCommand, SQSClient, SendMessageBatchCommand, SendMessageCommand } from '@aws-sdk/client-sqs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { S3Store, s3RequestHandlerOptions } from '../lib/store/s3-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type FaultableBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { type RequestCount, countsSince } from '../local/request-counts.ts'
import { startLocalRuntime } from '../local/runtime/local-runtime.ts'
import { S3RequestCounter } from '../bench/lib/s3-counter.ts'
import { COMPONENTS, type PriceFile, emptyTally, loadPrices, s3ClassOf, sumTallies, tallyRequests } from '../bench/lib/cost-count.ts'
import { type CostUsage, FUNCTIONS, bill } from '../bench/lib/cost-bill.ts'
import { ORDERS_FIELDS } from '../bench/lib/dataset.ts'

const byOperation = (cells: RequestCount[], caller: string) => {
  const out: Record<string, number> = {}
  for (const c of cells) if (c.caller === caller) out[c.operation] = (out[c.operation] ?? 0) + c.requests
  return out
}

describe('the backend counts what the SDK sent', () => {
  let backend: FaultableBackend
  beforeAll(async () => {
    backend = await startEmbeddedBackend()
    await backend.createBucket('cost')
  })
  afterAll(async () => backend.stop())

  it('counts every S3 request of a table write and read, per operation, as the client counted its attempts', async () => {
    const client = new S3Client({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, forcePathStyle: true, requestHandler: s3RequestHandlerOptions(), userAgentAppId: 'test-s3' })
    const counter = new S3RequestCounter(client)
    const table = await Table.create(new S3Store({ bucket: 'cost', prefix: 'tables/t', client }), { fields: ORDERS_FIELDS, primaryKeys: ['id'], partitionKeys: [], options: { bucket: '2' } })
    for (let i = 0; i < 2; i++) await writeBatch(table, [1, 2, 3].map((id) => ({ ...recordFromJson(table.view, { id, customer: 'c', amount: '1.00', version: i }, 'r'), where: 'r' })))
    await readAll(await Table.open(new S3Store({ bucket: 'cost', prefix: 'tables/t', client })))
    await client.send(new PutObjectCommand({ Bucket: 'cost', Key: 'x/a', Body: 'a' }))
    await client.send(new CopyObjectCommand({ Bucket: 'cost', Key: 'x/b', CopySource: 'cost/x/a' }))
    await client.send(new ListObjectsV2Command({ Bucket: 'cost', Prefix: 'x/' }))
    await client.send(new DeleteObjectCommand({ Bucket: 'cost', Key: 'x/a' }))
    await expect(client.send(new HeadObjectCommand({ Bucket: 'cost', Key: 'x/a' }))).rejects.toThrow()
    const sent = counter.take()
    const fromClient = Object.fromEntries(Object.entries(sent.byCommand).map(([k, v]) => [k.replace(/Command$/, ''), v]))
    expect(byOperation(backend.requestCounts(), 'test-s3')).toEqual(fromClient)
    expect(Object.keys(fromClient)).toEqual(expect.arrayContaining(['GetObject', 'PutObject', 'CopyObject', 'ListObjectsV2', 'DeleteObject', 'HeadObject']))
    client.destroy()
  })

  it('counts SQS requests per action and bills each 64 KiB of payload as one request', async () => {
    const sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false, userAgentAppId: 'test-sqs' })
    const sent: Record<string, number> = {}
    sqs.middlewareStack.add(
      (next, context) => async (args) => {
        const name = (context.commandName ?? '?').replace(/Command$/, '')
        sent[name] = (sent[name] ?? 0) + 1
        return next(args)
      },
      { step: 'finalizeRequest', priority: 'low', name: 'testCountSqs' },
    )
    const q = await sqs.send(new CreateQueueCommand({ QueueName: 'cost-q.fifo', Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' } }))
    await sqs.send(new SendMessageCommand({ QueueUrl: q.QueueUrl, MessageBody: 'x'.repeat(100_000), MessageGroupId: 'g' }))
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: q.QueueUrl, Entries: [0, 1, 2].map((i) => ({ Id: `e${i}`, MessageBody: `m${i}`, MessageGroupId: `h${i}` })) }))
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10 }))
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: q.QueueUrl, Entries: (got.Messages ?? []).map((m, i) => ({ Id: `d${i}`, ReceiptHandle: m.ReceiptHandle! })) }))
    await sqs.send(new ReceiveMessageCommand({ QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }))
    const cells = backend.requestCounts().filter((c) => c.caller === 'test-sqs')
    expect(byOperation(cells, 'test-sqs')).toEqual(sent)
    // the 100,000-byte message is two 64 KiB chunks, to send and to receive (with the three small ones); every other request one
    const chunks = Object.fromEntries(cells.map((c) => [c.operation, c.chunks]))
    expect(chunks).toEqual({ CreateQueue: 1, SendMessage: 2, SendMessageBatch: 1, ReceiveMessage: 3, DeleteMessageBatch: 1 })
    expect(cells.find((c) => c.operation === 'ReceiveMessage')!.empty).toBe(1)
    expect(new Set(cells.filter((c) => c.operation !== 'CreateQueue').map((c) => c.resource))).toEqual(new Set(['cost-q.fifo']))
    sqs.destroy()
  })
})

describe('a tiny workload on the local runtime', () => {
  it('bills every request the backend answered to a component of the deployment, none left over', async () => {
    const invocations = { writer: 0, compactor: 0, committer: 0 }
    const rt = await startLocalRuntime({
      tables: [{ name: 't', schema: { fields: ORDERS_FIELDS, primaryKeys: ['id'], partitionKeys: [], options: { bucket: '2', 'deletion-vectors.enabled': 'true', 'sequence.field': 'version' } } }],
      writerBatchingWindowMs: 100,
      onWriterInvocation: () => invocations.writer++,
      onCompactorInvocation: () => invocations.compactor++,
      onCommitterInvocation: () => invocations.committer++,
    })
    const before = rt.backend.requestCounts!()
    let stopped = false
    try {
      await rt.send(Array.from({ length: 20 }, (_, i) => JSON.stringify({ id: i, customer: 'c', amount: '1.00', version: 1 })))
      // done when the rows were written and every job compacted: steps, not a time
      for (let i = 0; i < 600 && !(invocations.writer >= 1 && invocations.compactor >= 1 && (await rt.queueDepth(rt.tables.get('t')!.compactionQueueUrl)) === 0); i++) await new Promise((r) => setTimeout(r, 100))
      const t = rt.tables.get('t')!
      await rt.stop()
      stopped = true
      expect(invocations).toEqual({ writer: rt.writer.stats.invocations, compactor: t.poller.stats.invocations, committer: t.committerPoller.stats.invocations })
      expect(invocations.compactor).toBeGreaterThan(0)
    } finally {
      if (!stopped) await rt.stop()
    }
    // the waiting loop's queueDepth calls are the runtime's own, not the deployment's
    const cells = countsSince(before, rt.backend.requestCounts!()).filter((c) => c.caller !== 'local-runtime')
    const { byComponent, notBilled } = tallyRequests(cells)
    expect(notBilled).toEqual({})
    const billed = sumTallies(Object.values(byComponent))
    const s3 = cells.filter((c) => c.service === 's3')
    const sqs = cells.filter((c) => c.service === 'sqs')
    const n = (cs: RequestCount[]) => cs.reduce((k, c) => k + c.requests, 0)
    expect(billed.s3Tier1 + billed.s3Tier2 + billed.s3Free).toBe(n(s3))
    expect(billed.s3Tier1).toBe(n(s3.filter((c) => ['PUT', 'POST', 'COPY', 'LIST'].some((m) => c.operation.toUpperCase().startsWith(m) || c.operation.startsWith('Complete') || c.operation.startsWith('Create')))))
    expect(billed.sqsRequests).toBe(n(sqs))
    expect(billed.sqsFifoChunks + billed.sqsStandardChunks).toBe(sqs.reduce((k, c) => k + c.chunks, 0))
    expect(billed.other).toBe(0)
    for (const c of ['writer', 'compactor', 'committer', 'esm-writer', 'esm-compactor', 'esm-committer', 'upstream'] as const) {
      expect({ c, requests: byComponent[c].s3Tier1 + byComponent[c].s3Tier2 + byComponent[c].sqsRequests > 0 }).toEqual({ c, requests: true })
    }
    // the upstream's 20 rows are two SendMessageBatch calls to the standard ingest queue
    expect(byComponent.upstream).toEqual({ ...emptyTally(), sqsRequests: 2, sqsStandardChunks: 2 })
    // the writer's mapping reads the standard ingest queue; the compactor's its FIFO job queue
    expect(byComponent['esm-writer'].sqsFifoChunks).toBe(0)
    expect(byComponent['esm-compactor'].sqsStandardChunks).toBe(0)
  }, 120_000)
})

describe('the price table', () => {
  it('turns known counts into the expected dollars', () => {
    const prices: PriceFile = loadPrices()
    expect(prices.taken).toMatch(/^\d{4}-\d{2}-\d{2}$/)
    for (const p of Object.values(prices.prices)) expect(p.source).toMatch(/^https:\/\//)
    const requests = Object.fromEntries(COMPONENTS.map((c) => [c, emptyTally()])) as CostUsage['requests']
    requests.writer = { ...emptyTally(), s3Tier1: 1000, s3Tier2: 10_000, sqsFifoChunks: 500 }
    requests['esm-writer'] = { ...emptyTally(), sqsStandardChunks: 300, sqsEmptyReceives: 100 }
    // the producer's sends are not the deployment's: counted, not billed
    requests.upstream = { ...emptyTally(), sqsRequests: 1000, sqsStandardChunks: 1000 }
    const functions = Object.fromEntries(FUNCTIONS.map((f) => [f, { invocations: 0, billedMs: 0, estimatedMs: 0, memoryMb: 1024 }])) as CostUsage['functions']
    functions.writer = { invocations: 100, billedMs: 50_000, estimatedMs: 25_000, memoryMb: 2048 }
    const month = 730 * 3600
    const usage: CostUsage = { seconds: month, upserts: 2_000_000, functions, requests, idlePolling: { pollers: 5, waitSeconds: 20 }, storedBytes: 2e9, cloudwatch: { metrics: 10, alarms: 4, dashboards: 1 }, logBytes: 1e9 }
    const b = bill(usage, prices)
    const line = (item: string) => b.lines.find((l) => l.item === item)?.usdPerMonth
    expect(line('writer invocations')).toBeCloseTo(100 * 0.0000002, 12)
    expect(line('writer duration')).toBeCloseTo(2 * 50 * 0.0000133334, 12)
    expect(line('writer PUT/COPY/POST/LIST')).toBeCloseTo(1000 * 0.000005, 12)
    expect(line('writer GET/HEAD')).toBeCloseTo(10_000 * 0.0000004, 12)
    expect(line('writer (FIFO)')).toBeCloseTo(500 * 0.0000005, 12)
    // the mapping's 100 measured empty receives give way to 5 pollers × one 20 s poll over the month
    expect(line('esm-writer (standard)')).toBeCloseTo((300 - 100 + (5 * month) / 20) * 0.0000004, 9)
    expect(line('storage after expiration')).toBeCloseTo(2 * 0.023, 12)
    expect(line('custom metrics')).toBeCloseTo(3, 12)
    expect(line('alarms')).toBeCloseTo(0.4, 12)
    expect(line('dashboard')).toBeCloseTo(3, 12)
    expect(line('log ingestion (EMF, Lambda lines)')).toBeCloseTo(0.5, 12)
    expect(b.usdPerMonth).toBeCloseTo(b.lines.reduce((k, l) => k + l.usdPerMonth, 0), 12)
    expect(b.usdPerMillionUpserts).toBeCloseTo(b.usdPerMonth / 2, 12)
    expect(bill(usage, prices, 'estimated').lines.find((l) => l.item === 'writer duration')!.usdPerMonth).toBeCloseTo(2 * 25 * 0.0000133334, 12)
    expect(b.lines.filter((l) => l.item.startsWith('upstream'))).toEqual([])
    expect(s3ClassOf('DeleteObject')).toBe('free')
  })
})
