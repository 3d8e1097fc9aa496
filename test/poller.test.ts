import { randomUUID } from 'node:crypto'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import {
  CreateQueueCommand,
  GetQueueAttributesCommand,
  ReceiveMessageCommand,
  SendMessageBatchCommand,
  SendMessageCommand,
  SQSClient,
} from '@aws-sdk/client-sqs'
import type { SQSRecord } from 'aws-lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startEmbeddedBackend, type EmbeddedBackend } from '../local/embedded.ts'
import { StrataInputError } from '../lib/errors.ts'
import { ExecutionEnvironmentPool, type InvokeResult, type Isolation } from '../local/runtime/execution-environment.ts'
import { EventSourcePoller, failedIdsOf, type InvocationInfo, type PollerOptions } from '../local/runtime/poller.ts'
import { sqsEventOf, sqsRecordOf } from '../local/runtime/sqs-event.ts'
import type { ProbeInfo } from './fixtures/handlers/probe.ts'
import type { TimingResult } from './fixtures/handlers/fifo-timing.ts'

const HANDLERS = fileURLToPath(new URL('./fixtures/handlers/', import.meta.url))
const handlerPath = (name: string) => join(HANDLERS, `${name}.ts`)
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

let backend: EmbeddedBackend
let sqs: SQSClient

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials })
})

/** rendezvous directories, removed at the end */
const dirs: string[] = []

afterAll(async () => {
  sqs?.destroy()
  await backend?.stop()
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })))
})

interface Queue {
  name: string
  url: string
  arn: string
}

async function createQueue(opts: { fifo?: boolean; visibilitySeconds?: number; deadLetter?: { arn: string; maxReceiveCount: number } } = {}): Promise<Queue> {
  const name = `q-${randomUUID().slice(0, 8)}${opts.fifo ? '.fifo' : ''}`
  const attributes: Record<string, string> = { VisibilityTimeout: String(opts.visibilitySeconds ?? 1) }
  if (opts.fifo) attributes.FifoQueue = 'true'
  if (opts.deadLetter) {
    attributes.RedrivePolicy = JSON.stringify({ deadLetterTargetArn: opts.deadLetter.arn, maxReceiveCount: String(opts.deadLetter.maxReceiveCount) })
  }
  const created = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))
  const url = created.QueueUrl!
  const got = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['QueueArn'] }))
  return { name, url, arn: got.Attributes!.QueueArn! }
}

async function sendActs(queue: Queue, acts: string[]): Promise<string[]> {
  const sent = await sqs.send(
    new SendMessageBatchCommand({
      QueueUrl: queue.url,
      Entries: acts.map((act, i) => ({ Id: `e${i}`, MessageBody: JSON.stringify({ act, i }) })),
    }),
  )
  expect(sent.Failed ?? []).toEqual([])
  const ids = new Map((sent.Successful ?? []).map((s) => [s.Id, s.MessageId!]))
  return acts.map((_, i) => ids.get(`e${i}`)!)
}

/** Every message the queue still holds, visible or not, straight from fauxqs's store. */
async function messagesLeft(queue: Queue): Promise<number> {
  const app = backend.app as { inject(req: { method: string; url: string }): Promise<{ statusCode: number; body: string }> }
  const res = await app.inject({ method: 'GET', url: `/_fauxqs/queues/${encodeURIComponent(queue.name)}` })
  expect(res.statusCode).toBe(200)
  const { messages } = JSON.parse(res.body) as { messages: { ready: unknown[]; delayed: unknown[]; inflight: unknown[] } }
  return messages.ready.length + messages.delayed.length + messages.inflight.length
}

async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** Runs a poller until `done` holds for its invocation log, then stops it; fails on any poller error. */
async function pollUntil(
  opts: Omit<PollerOptions, 'sqs' | 'region' | 'onInvocation' | 'onError'>,
  done: (log: InvocationInfo[]) => boolean | Promise<boolean>,
): Promise<{ log: InvocationInfo[]; poller: EventSourcePoller }> {
  const log: InvocationInfo[] = []
  const errors: unknown[] = []
  const poller = new EventSourcePoller({
    sqs,
    region: backend.region,
    // Short polling unless a test asks for long polls: stop() waits out a receive in flight.
    waitTimeSeconds: 0,
    ...opts,
    onInvocation: (info) => log.push(info),
    onError: (error) => errors.push(error),
  })
  poller.start()
  try {
    await waitFor(() => done(log), 'the poller to finish its work')
  } finally {
    await poller.stop()
  }
  expect(errors).toEqual([])
  expect(poller.inFlight).toBe(0)
  return { log, poller }
}

const idsOf = (records: SQSRecord[]) => records.map((r) => r.messageId)
const deliveries = (log: InvocationInfo[]) => log.flatMap((info) => info.records)

describe('sqsRecordOf', () => {
  it('builds the Lambda record shape from a received FIFO message with attributes', async () => {
    const queue = await createQueue({ fifo: true })
    await sqs.send(
      new SendMessageCommand({
        QueueUrl: queue.url,
        MessageBody: '{"x":1}',
        MessageGroupId: 'table/p=1/bucket-3',
        MessageDeduplicationId: 'snapshot-7',
        MessageAttributes: {
          kind: { DataType: 'String', StringValue: 'compact' },
          count: { DataType: 'Number', StringValue: '5' },
          blob: { DataType: 'Binary', BinaryValue: new Uint8Array([0, 1, 254, 255]) },
        },
      }),
    )
    const received = await sqs.send(
      new ReceiveMessageCommand({ QueueUrl: queue.url, AttributeNames: ['All'], MessageSystemAttributeNames: ['All'], MessageAttributeNames: ['All'] }),
    )
    const message = received.Messages![0]
    const record = sqsRecordOf(message, queue.arn, 'eu-west-1')
    expect(record).toEqual({
      messageId: message.MessageId,
      receiptHandle: message.ReceiptHandle,
      body: '{"x":1}',
      attributes: {
        ApproximateReceiveCount: '1',
        SentTimestamp: expect.stringMatching(/^\d{13}$/),
        SenderId: expect.any(String),
        ApproximateFirstReceiveTimestamp: expect.stringMatching(/^\d{13}$/),
        MessageGroupId: 'table/p=1/bucket-3',
        MessageDeduplicationId: 'snapshot-7',
        SequenceNumber: expect.stringMatching(/^\d+$/),
      },
      messageAttributes: {
        kind: { stringValue: 'compact', stringListValues: [], binaryListValues: [], dataType: 'String' },
        count: { stringValue: '5', stringListValues: [], binaryListValues: [], dataType: 'Number' },
        blob: { binaryValue: 'AAH+/w==', stringListValues: [], binaryListValues: [], dataType: 'Binary' },
      },
      md5OfBody: message.MD5OfBody,
      md5OfMessageAttributes: message.MD5OfMessageAttributes,
      eventSource: 'aws:sqs',
      eventSourceARN: queue.arn,
      awsRegion: 'eu-west-1',
    })
    expect(sqsEventOf([record])).toEqual({ Records: [record] })
  })

  it('leaves the FIFO attributes out for a standard queue and refuses a message received without system attributes', async () => {
    const queue = await createQueue()
    await sqs.send(new SendMessageCommand({ QueueUrl: queue.url, MessageBody: 'plain' }))
    const received = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.url, MessageSystemAttributeNames: ['All'], VisibilityTimeout: 0 }))
    const record = sqsRecordOf(received.Messages![0], queue.arn, backend.region)
    expect(Object.keys(record.attributes).sort()).toEqual(['ApproximateFirstReceiveTimestamp', 'ApproximateReceiveCount', 'SenderId', 'SentTimestamp'])
    expect(record.messageAttributes).toEqual({})
    expect('md5OfMessageAttributes' in record).toBe(false)

    const bare = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.url }))
    expect(() => sqsRecordOf(bare.Messages![0], queue.arn, backend.region)).toThrow(/lacks system attribute ApproximateReceiveCount/)
  })
})

describe('failedIdsOf (the partial batch response rules)', () => {
  const records = [{ messageId: 'a' }, { messageId: 'b' }] as SQSRecord[]
  it.each([
    ['undefined', undefined],
    ['null', null],
    ['an empty object', {}],
    ['an empty list', { batchItemFailures: [] }],
    ['a null list', { batchItemFailures: null }],
  ])('treats %s as complete success', (_, response) => {
    expect(failedIdsOf(response, records)).toEqual(new Set())
  })
  it('returns the listed ids', () => {
    expect(failedIdsOf({ batchItemFailures: [{ itemIdentifier: 'b' }] }, records)).toEqual(new Set(['b']))
  })
  it.each([
    ['an id not in the batch', { batchItemFailures: [{ itemIdentifier: 'c' }] }],
    ['an empty id', { batchItemFailures: [{ itemIdentifier: '' }] }],
    ['a wrong key', { batchItemFailures: [{ itemId: 'a' }] }],
    ['a non-list', { batchItemFailures: 'a' }],
    ['a string response', 'a'],
    ['an array response', [{ itemIdentifier: 'a' }]],
  ])('fails the whole batch on %s', (_, response) => {
    expect(failedIdsOf(response, records)).toBeNull()
  })
})

describe('ExecutionEnvironmentPool options', () => {
  it('rejects an isolation other than thread or process, naming the field, the value and what it expects', () => {
    const bad = (isolation: unknown) => () =>
      new ExecutionEnvironmentPool({ handlerModule: handlerPath('probe'), maxEnvironments: 1, isolation: isolation as Isolation })
    expect(bad('processes')).toThrow(StrataInputError)
    expect(bad('processes')).toThrow(`isolation: expected 'thread' or 'process', got "processes"`)
    expect(bad(null)).toThrow(`isolation: expected 'thread' or 'process', got null`)
    expect(new ExecutionEnvironmentPool({ handlerModule: handlerPath('probe'), maxEnvironments: 1 }).isolation).toBe('thread')
  })
})

// Every behaviour of an environment holds alike whether it is a worker thread or a process of its own.
describe.each(['thread', 'process'] as const)('ExecutionEnvironmentPool (isolation: %s)', (isolation) => {
  const probe = (opts: Partial<ConstructorParameters<typeof ExecutionEnvironmentPool>[0]> = {}) =>
    new ExecutionEnvironmentPool({ handlerModule: handlerPath('probe'), maxEnvironments: 1, env: { PROBE_VALUE: 'from-env' }, isolation, ...opts })
  const valueOf = (result: InvokeResult): ProbeInfo => {
    if (!result.ok) throw new Error(`invocation failed: ${result.error.name}: ${result.error.message}`)
    return result.value as ProbeInfo
  }

  it('imports the handler once per environment and serves warm invocations from it, with env and context', async () => {
    const pool = probe({ timeoutMs: 60_000, functionName: 'strata-probe' })
    try {
      const results = []
      for (let i = 0; i < 3; i++) results.push(await pool.invoke({ op: 'info' }))
      const infos = results.map(valueOf)
      expect(new Set(infos.map((i) => i.loadId)).size).toBe(1)
      expect(infos.map((i) => i.invocations)).toEqual([1, 2, 3])
      expect(results.map((r) => r.coldStart)).toEqual([true, false, false])
      expect(pool.size).toBe(1)
      expect(infos[0].env).toBe('from-env')
      expect(infos[0].functionNameEnv).toBe('strata-probe')
      expect(infos[0].context.functionName).toBe('strata-probe')
      expect(infos[0].context.invokedFunctionArn).toMatch(/^arn:aws:lambda:[a-z0-9-]+:\d{12}:function:strata-probe$/)
      const requestIds = infos.map((i) => i.context.awsRequestId)
      expect(requestIds.every((id) => UUID.test(id))).toBe(true)
      expect(new Set(requestIds).size).toBe(3)
      for (const info of infos) {
        expect(info.context.remainingMs).toBeGreaterThan(0)
        expect(info.context.remainingMs).toBeLessThanOrEqual(60_000)
      }
    } finally {
      await pool.close()
    }
  })

  it("keeps the host's function configuration (STRATA_*, AWS_*, POWERTOOLS_*) out of the sandbox, as Lambda does", async () => {
    // a benchmark that set STRATA_TABLE for one in-process function once made every later
    // writer in the same process fail its configuration check
    const saved = process.env.STRATA_TABLE
    process.env.STRATA_TABLE = 'from-host'
    const pool = probe({ env: { PROBE_VALUE: 'from-env', AWS_REGION: 'eu-west-1' } })
    try {
      const info = valueOf(await pool.invoke({ op: 'info' }))
      expect(info.hostTableEnv).toBeUndefined()
      expect(info.hostPathEnv).toBe(process.env.PATH)
      expect(info.env).toBe('from-env')
    } finally {
      if (saved === undefined) delete process.env.STRATA_TABLE
      else process.env.STRATA_TABLE = saved
      await pool.close()
    }
  })

  it('runs invocations in parallel environments up to maxEnvironments and queues the rest', async () => {
    const pool = probe({ maxEnvironments: 2 })
    try {
      // the first two meet in a directory while blocking their threads: they can only both
      // arrive if they run at once in two environments; the other two queue behind them
      const dir = await mkdtemp(join(tmpdir(), 'strata-rendezvous-'))
      dirs.push(dir)
      const pending = [0, 1, 2, 3].map((i) => pool.invoke(i < 2 ? { op: 'rendezvous', dir, parties: 2 } : { op: 'spin', ms: 20 }))
      expect(pool.size).toBe(2)
      expect(pool.busy).toBe(2)
      const results = await Promise.all(pending)
      const infos = results.map(valueOf)
      expect(new Set(results.map((r) => r.environmentId)).size).toBe(2)
      // two module loads, on two threads (every process's main thread is thread 0)
      expect(new Set(infos.map((i) => i.loadId)).size).toBe(2)
      if (isolation === 'thread') expect(new Set(infos.map((i) => i.threadId)).size).toBe(2)
      expect(results.filter((r) => r.coldStart)).toHaveLength(2)
      expect(pool.busy).toBe(0)
      // The two blocking calls met, so they ran at the same time in two environments.
      expect(infos.slice(0, 2).map((i) => i.met)).toEqual([true, true])
      expect(results.slice(0, 2).map((r) => r.coldStart)).toEqual([true, true])
      // Within one environment the invocations ran one after the other. Which environment
      // takes each queued call depends on which is free first, so only the total is fixed.
      let total = 0
      for (const env of new Set(results.map((r) => r.environmentId))) {
        const mine = infos.filter((_, i) => results[i].environmentId === env).sort((x, y) => x.startedAt - y.startedAt)
        for (let k = 1; k < mine.length; k++) expect(mine[k - 1].endedAt).toBeLessThanOrEqual(mine[k].startedAt)
        total += mine.length
      }
      expect(total).toBe(4)
    } finally {
      await pool.close()
    }
  })

  it('fails an invocation that throws but keeps its environment warm', async () => {
    const pool = probe()
    try {
      const first = valueOf(await pool.invoke({ op: 'info' }))
      const thrown = await pool.invoke({ op: 'throw' })
      expect(thrown).toMatchObject({ ok: false, crashed: false, error: { name: 'RangeError', message: 'probe asked to throw' } })
      const after = valueOf(await pool.invoke({ op: 'info' }))
      expect(after.loadId).toBe(first.loadId)
      expect(after.invocations).toBe(3)
      const unserializable = await pool.invoke({ op: 'unserializable' })
      expect(unserializable).toMatchObject({ ok: false, crashed: false, error: { name: 'Runtime.MarshalError' } })
    } finally {
      await pool.close()
    }
  })

  it('a process.exit or an uncaught error destroys only its environment, and the next invocation starts a new one', async () => {
    const pool = probe({ maxEnvironments: 2 })
    try {
      const [exited, bystander] = await Promise.all([pool.invoke({ op: 'exit' }), pool.invoke({ op: 'sleep', ms: 300 })])
      expect(exited).toMatchObject({ ok: false, crashed: true, error: { name: 'Runtime.ExitError', message: 'Runtime exited with error: exit status 7' } })
      const survivor = valueOf(bystander)
      expect(pool.size).toBe(1)
      const uncaught = await pool.invoke({ op: 'uncaught' })
      expect(uncaught).toMatchObject({ ok: false, crashed: true, error: { name: 'TypeError', message: 'probe threw outside the handler promise' } })
      expect(pool.size).toBe(0)
      const fresh = await pool.invoke({ op: 'info' })
      expect(fresh.coldStart).toBe(true)
      expect(valueOf(fresh).loadId).not.toBe(survivor.loadId)
      expect(valueOf(fresh).invocations).toBe(1)
    } finally {
      await pool.close()
    }
  })

  it('a timeout terminates the environment and fails the invocation', async () => {
    const pool = probe({ timeoutMs: 300 })
    try {
      const warm = valueOf(await pool.invoke({ op: 'info' }))
      const timedOut = await pool.invoke({ op: 'sleep', ms: 20_000 })
      expect(timedOut).toMatchObject({ ok: false, crashed: true, error: { name: 'Sandbox.Timedout', message: 'Task timed out after 0.30 seconds' } })
      expect(pool.size).toBe(0)
      const next = await pool.invoke({ op: 'info' })
      expect(next.coldStart).toBe(true)
      expect(valueOf(next).loadId).not.toBe(warm.loadId)
    } finally {
      await pool.close()
    }
  })

  it('reports init errors, supports callback handlers, and fails queued invocations on close', async () => {
    const broken = new ExecutionEnvironmentPool({ handlerModule: handlerPath('broken-import'), maxEnvironments: 1, isolation })
    const missing = probe({ exportName: 'noSuchExport' })
    const callback = new ExecutionEnvironmentPool({ handlerModule: handlerPath('callback'), maxEnvironments: 1, isolation })
    const closing = probe()
    try {
      const [b, m, c] = await Promise.all([broken.invoke({}), missing.invoke({}), callback.invoke({ n: 21 })])
      expect(b).toMatchObject({ ok: false, crashed: true, error: { name: 'Runtime.ImportModuleError', message: 'Error: broken at import time' } })
      expect(broken.size).toBe(0)
      expect(m).toMatchObject({ ok: false, crashed: true, error: { name: 'Runtime.HandlerNotFound' } })
      expect(c).toMatchObject({ ok: true, value: { doubled: 42 } })

      const running = closing.invoke({ op: 'sleep', ms: 20_000 })
      const queued = closing.invoke({ op: 'info' })
      await closing.close()
      expect(await running).toMatchObject({ ok: false, error: { name: 'Runtime.PoolClosed' } })
      expect(await queued).toMatchObject({ ok: false, error: { name: 'Runtime.PoolClosed' } })
      await expect(closing.invoke({ op: 'info' })).rejects.toThrow(/closed/)
    } finally {
      await Promise.all([broken.close(), missing.close(), callback.close(), closing.close()])
    }
  })
})

describe('EventSourcePoller', () => {
  let pool: ExecutionEnvironmentPool
  beforeAll(() => {
    pool = new ExecutionEnvironmentPool({ handlerModule: handlerPath('sqs-behaviour'), maxEnvironments: null, timeoutMs: 500 })
  })
  afterAll(async () => {
    await pool?.close()
  })

  it('deletes every record of a successful batch, in batches of at most batchSize', async () => {
    const queue = await createQueue()
    const ids = await sendActs(queue, Array(7).fill('ok'))
    const { log, poller } = await pollUntil({ queueUrl: queue.url, pool, batchSize: 3, maxConcurrency: 1 }, (l) => deliveries(l).length >= 7)
    expect(idsOf(deliveries(log)).sort()).toEqual([...ids].sort())
    expect(log.every((info) => info.records.length <= 3 && info.result.ok)).toBe(true)
    expect(log.every((info) => info.records.every((r) => r.eventSourceARN === queue.arn && r.eventSource === 'aws:sqs'))).toBe(true)
    expect(log.flatMap((info) => info.deleted).sort()).toEqual([...ids].sort())
    expect(poller.stats).toEqual({ invocations: log.length, succeeded: log.length, failedRecords: 0, crashes: 0, throttles: 0, throttledBatchesReturned: 0 })
    expect(await messagesLeft(queue)).toBe(0)
  })

  it('leaves exactly the reported failures, which come back after the visibility timeout', async () => {
    const queue = await createQueue({ visibilitySeconds: 1 })
    const ids = await sendActs(queue, ['ok', 'fail-once', 'ok', 'fail-once', 'ok', 'fail-once'])
    const failing = ids.filter((_, i) => i % 2 === 1)
    const passing = ids.filter((_, i) => i % 2 === 0)
    const { log, poller } = await pollUntil({ queueUrl: queue.url, pool, maxConcurrency: 1 }, async (l) => deliveries(l).length >= 9 && (await messagesLeft(queue)) === 0)
    expect(idsOf(log[0].records).sort()).toEqual([...ids].sort())
    expect(log[0].deleted.sort()).toEqual([...passing].sort())
    const later = deliveries(log.slice(1))
    expect(idsOf(later).sort()).toEqual([...failing].sort())
    expect(later.every((r) => r.attributes.ApproximateReceiveCount === '2')).toBe(true)
    expect(poller.stats).toMatchObject({ failedRecords: 3, crashes: 0 })
  })

  it('ignores the response when reportBatchItemFailures is off: success deletes the whole batch', async () => {
    const queue = await createQueue()
    const ids = await sendActs(queue, ['ok', 'fail-once'])
    const { log } = await pollUntil({ queueUrl: queue.url, pool, reportBatchItemFailures: false }, (l) => deliveries(l).length >= 2)
    expect(log).toHaveLength(1)
    expect(log[0].result).toMatchObject({ ok: true, value: { batchItemFailures: [{ itemIdentifier: ids[1] }] } })
    expect(log[0].deleted.sort()).toEqual([...ids].sort())
    expect(await messagesLeft(queue)).toBe(0)
  })

  it('fails the whole batch on an item identifier outside it or a malformed response', async () => {
    const cases = [
      ['ok', 'unknown-id-once', 'ok'],
      ['ok', 'malformed-once'],
    ]
    await Promise.all(
      cases.map(async (acts) => {
        const queue = await createQueue({ visibilitySeconds: 1 })
        const ids = await sendActs(queue, acts)
        const { log } = await pollUntil({ queueUrl: queue.url, pool, maxConcurrency: 1 }, async (l) => (await messagesLeft(queue)) === 0 && l.length > 0)
        expect(idsOf(log[0].records).sort()).toEqual([...ids].sort())
        expect(log[0].deleted).toEqual([])
        // Every record, the well-behaved ones too, was delivered again.
        const again = deliveries(log.slice(1))
        expect(idsOf(again).sort()).toEqual([...ids].sort())
        expect(again.every((r) => r.attributes.ApproximateReceiveCount === '2')).toBe(true)
      }),
    )
  })

  it('deletes nothing when the handler throws, crashes or times out, and the pool recovers', async () => {
    const cases = [
      { act: 'throw-once', name: 'Error', crashed: false },
      { act: 'exit-once', name: 'Runtime.ExitError', crashed: true },
      { act: 'hang-once', name: 'Sandbox.Timedout', crashed: true },
    ]
    await Promise.all(
      cases.map(async ({ act, name, crashed }) => {
        const queue = await createQueue({ visibilitySeconds: 1 })
        const [id] = await sendActs(queue, [act])
        const { log, poller } = await pollUntil({ queueUrl: queue.url, pool, maxConcurrency: 1 }, (l) => l.some((info) => info.deleted.length > 0))
        expect(log).toHaveLength(2)
        const [failed, retried] = log
        expect(failed.result).toMatchObject({ ok: false, crashed, error: { name } })
        expect(failed.deleted).toEqual([])
        expect(retried.result.ok).toBe(true)
        expect(retried.records[0].attributes.ApproximateReceiveCount).toBe('2')
        expect(retried.deleted).toEqual([id])
        expect(poller.stats).toEqual({ invocations: 2, succeeded: 1, failedRecords: 1, crashes: crashed ? 1 : 0, throttles: 0, throttledBatchesReturned: 0 })
        expect(await messagesLeft(queue)).toBe(0)
      }),
    )
  })

  it('a poison message moves to the dead-letter queue after maxReceiveCount receives', async () => {
    const dlq = await createQueue()
    const queue = await createQueue({ visibilitySeconds: 1, deadLetter: { arn: dlq.arn, maxReceiveCount: 2 } })
    const [poison] = await sendActs(queue, ['throw'])
    // Long polling here: the waiting receive is what picks the message up again once it is visible.
    const { log } = await pollUntil({ queueUrl: queue.url, pool, maxConcurrency: 1, waitTimeSeconds: 1 }, async () => (await messagesLeft(dlq)) === 1)
    expect(log.map((info) => info.records.map((r) => [r.messageId, r.attributes.ApproximateReceiveCount]))).toEqual([[[poison, '1']], [[poison, '2']]])
    expect(log.every((info) => !info.result.ok && info.deleted.length === 0)).toBe(true)
    expect(await messagesLeft(queue)).toBe(0)
    const dead = await sqs.send(new ReceiveMessageCommand({ QueueUrl: dlq.url, MessageSystemAttributeNames: ['All'] }))
    expect(dead.Messages?.map((m) => m.Body)).toEqual([JSON.stringify({ act: 'throw', i: 0 })])
  })

  describe('concurrency on a FIFO queue of 6 groups x 3 messages', () => {
    const GROUPS = 6
    const PER_GROUP = 3
    let timingPool: ExecutionEnvironmentPool
    beforeAll(async () => {
      timingPool = new ExecutionEnvironmentPool({ handlerModule: handlerPath('fifo-timing'), maxEnvironments: null })
      // Warm one environment per group first, so cold starts do not stagger the measured runs.
      const warmups = await Promise.all(Array.from({ length: GROUPS }, () => timingPool.invoke({ warmup: true })))
      expect(warmups.every((w) => w.ok)).toBe(true)
      expect(timingPool.size).toBe(GROUPS)
    })
    afterAll(async () => {
      await timingPool?.close()
    })

    it.each([1, 2, 4, null])('maxConcurrency %s: groups never overlap, order holds, peak is min(cap, groups)', async (cap) => {
      const queue = await createQueue({ fifo: true, visibilitySeconds: 30 })
      for (let g = 0; g < GROUPS; g++) {
        await sqs.send(
          new SendMessageBatchCommand({
            QueueUrl: queue.url,
            Entries: Array.from({ length: PER_GROUP }, (_, k) => ({
              Id: `m${k}`,
              MessageBody: `g${g}-${k}`,
              MessageGroupId: `g${g}`,
              MessageDeduplicationId: `g${g}-${k}`,
            })),
          }),
        )
      }
      const { log } = await pollUntil(
        // Unbounded runs more receivers than there are free groups at times, so those long-poll
        // until a delete unlocks a group: that wake-up is exercised here.
        { queueUrl: queue.url, pool: timingPool, batchSize: 1, maxConcurrency: cap, waitTimeSeconds: cap === null ? 1 : 0 },
        (l) => deliveries(l).length >= GROUPS * PER_GROUP,
      )
      const runs = log.map((info) => {
        if (!info.result.ok) throw new Error(`invocation failed: ${info.result.error.message}`)
        return info.result.value as TimingResult
      })
      expect(runs.flatMap((r) => r.bodies).sort()).toEqual(
        Array.from({ length: GROUPS }, (_, g) => Array.from({ length: PER_GROUP }, (_, k) => `g${g}-${k}`)).flat().sort(),
      )
      expect(log.every((info) => info.deleted.length === info.records.length)).toBe(true)
      for (let g = 0; g < GROUPS; g++) {
        const mine = runs.filter((r) => r.groups.includes(`g${g}`)).sort((a, b) => a.startedAt - b.startedAt)
        expect(mine.map((r) => r.bodies[0])).toEqual([`g${g}-0`, `g${g}-1`, `g${g}-2`])
        for (let k = 1; k < mine.length; k++) expect(mine[k - 1].endedAt).toBeLessThanOrEqual(mine[k].startedAt)
      }
      expect(peakOverlap(runs)).toBe(Math.min(cap ?? GROUPS, GROUPS))
      expect(await messagesLeft(queue)).toBe(0)
    })

    // Lambda's mapping with reserved concurrency 1 under maxConcurrency 2 (the smallest it
    // takes): with several groups the second invocation is throttled, held and retried; with
    // every message in one group only one batch is ever in flight, so nothing is throttled
    it.each([
      { groups: 3, throttled: true },
      { groups: 1, throttled: false },
    ])('reserved concurrency 1 under maxConcurrency 2, $groups group(s): one at a time, throttled: $throttled', async ({ groups, throttled }) => {
      const queue = await createQueue({ fifo: true, visibilitySeconds: 30 })
      const bodies: string[] = []
      for (let k = 0; k < 6; k++) {
        const g = `g${k % groups}`
        bodies.push(`${g}-${k}`)
        await sqs.send(new SendMessageBatchCommand({ QueueUrl: queue.url, Entries: [{ Id: 'm', MessageBody: `${g}-${k}`, MessageGroupId: g, MessageDeduplicationId: `${g}-${k}` }] }))
      }
      const { log, poller } = await pollUntil(
        { queueUrl: queue.url, pool: timingPool, batchSize: 1, maxConcurrency: 2, reservedConcurrency: 1 },
        (l) => deliveries(l).length >= 6,
      )
      const runs = log.map((info) => info.result.ok ? (info.result.value as TimingResult) : null).filter((r): r is TimingResult => r !== null)
      expect(runs.flatMap((r) => r.bodies).sort()).toEqual([...bodies].sort())
      expect(peakOverlap(runs)).toBe(1)
      if (throttled) expect(poller.stats.throttles).toBeGreaterThan(0)
      else expect(poller.stats.throttles).toBe(0)
      expect(await messagesLeft(queue)).toBe(0)
    }, 60_000)
  })
})

/** The most intervals open at once; an interval ending when another starts does not overlap it. */
function peakOverlap(runs: { startedAt: number; endedAt: number }[]): number {
  const events = runs.flatMap((r) => [
    { at: r.startedAt, delta: 1 },
    { at: r.endedAt, delta: -1 },
  ])
  events.sort((a, b) => a.at - b.at || a.delta - b.delta)
  let open = 0
  let peak = 0
  for (const e of events) {
    open += e.delta
    peak = Math.max(peak, open)
  }
  return peak
}
