// The seams probes, counters and faults go through instead of patching classes: store
// wrappers at the store port (ObservedStore, CountingStore), the wrapper the CLI's entry
// point puts around every store it opens (CliSeams), and the seams a function's
// runtime is built with (functions/shared/runtime.ts RuntimeSeams: around its stores, its
// tables' committers, the committer function's fold and drained queue, and an observer of
// its metrics).
import { afterEach, describe, expect, it } from 'vitest'
import { committerFunction } from '../functions/committer.ts'
import { type AddedMetric, FunctionRuntime } from '../functions/shared/runtime.ts'
import { writerFunction } from '../functions/writer.ts'
import { encodeCommitMessage } from '../lib/commit/commit-message.ts'
import type { DrainableCommitQueue, QueuedCommitMessage } from '../lib/commit/commit-queue.ts'
import type { Fold } from '../lib/commit/commit-service.ts'
import { Table } from '../lib/handle/table.ts'
import { FaultyStore } from '../lib/store/faulty-store.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { CountingStore, ObservedStore, type StoreOutcome, type StoreRequest } from '../lib/store/observed-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { openStore } from '../lib/store/open-store.ts'
import { main } from '../lib/cli/main.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeMessage } from './helpers/commit.ts'
import { sqsEvent, sqsRecord } from './helpers/lambda.ts'
import { schemaFor } from './helpers/model.ts'


const bytes = (s: string) => new TextEncoder().encode(s)

describe('store wrappers at the store port', () => {
  it('CountingStore counts each request by operation, failed ones too, and take() starts again', async () => {
    const store = new CountingStore(new MemoryStore())
    await store.put('a', bytes('x'))
    expect(await store.putIfAbsent('a', bytes('y'))).toBe(false)
    await store.get('a')
    await store.get('missing')
    await store.head('a')
    await store.list('')
    await expect(store.getRange('missing', 0, 1)).rejects.toThrow()
    expect(store.total).toBe(7)
    expect(store.take()).toEqual({ get: 2, getRange: 1, head: 1, put: 1, putIfAbsent: 1, delete: 0, list: 1 })
    expect(store.total).toBe(0)
  })

  it('a table open and a point read reach the store through the counter: a known number of GETs', async () => {
    const inner = new MemoryStore()
    await Table.create(inner, schemaFor('deduplicate', { bucket: '2' }))
    const store = new CountingStore(inner)
    await Table.open(store)
    const counts = store.take()
    // the schema directory is listed and its newest schema read; no snapshot exists yet
    expect(counts.list).toBeGreaterThan(0)
    expect(counts.get + counts.getRange).toBeGreaterThan(0)
    expect(counts.put + counts.putIfAbsent + counts.delete).toBe(0)
  })

  it('ObservedStore tells before and after of each request, can stop one before it is sent, and passes answers unchanged', async () => {
    const inner = new MemoryStore()
    const seen: string[] = []
    const store = new ObservedStore(inner, {
      before: (r: StoreRequest) => {
        seen.push(`before ${r.op} ${r.key}`)
        if (r.key === 'refused') throw new Error('refused by the observer')
      },
      after: (r: StoreRequest, o: StoreOutcome) => void seen.push(`after ${r.op} ${r.key} ${o.ok ? 'ok' : 'failed'}`),
    })
    await store.put('k', bytes('v'))
    expect(new TextDecoder().decode((await store.get('k'))!)).toBe('v')
    await expect(store.put('refused', bytes('v'))).rejects.toThrow('refused by the observer')
    expect(await inner.get('refused')).toBeNull()
    await expect(store.getRange('nothing', 0, 1)).rejects.toThrow()
    expect(seen).toEqual(['before put k', 'after put k ok', 'before get k', 'after get k ok', 'before put refused', 'before getRange nothing', 'after getRange nothing failed'])
  })

  it('the CLI opens every table through the wrapper it is given: a counting store counts its requests', async () => {
    await Table.create(openStore('memory://seams-cli'), schemaFor('deduplicate', { bucket: '2' }))
    const counters: CountingStore[] = []
    const wrapStore = (s: ObjectStore) => {
      const c = new CountingStore(s)
      counters.push(c)
      return c
    }
    const write = process.stdout.write
    process.stdout.write = (() => true) as typeof process.stdout.write
    try {
      expect(await main(['status', 'memory://seams-cli'], { wrapStore })).toBe(0)
      expect(await main(['status', 'memory://seams-cli'])).toBe(0)
    } finally {
      process.stdout.write = write
    }
    expect(counters).toHaveLength(1)
    expect(counters[0].total).toBeGreaterThan(0)
  })
})

describe('the seams a function runtime is built with', () => {
  const saved = { ...process.env }
  afterEach(() => {
    for (const k of Object.keys(process.env)) if (!(k in saved)) delete process.env[k]
    Object.assign(process.env, saved)
  })

  let n = 0
  /** A fresh memory:// table as the one table of the functions' configuration. */
  async function configuredTable(extra: { commitQueueUrl?: string } = {}): Promise<{ uri: string; table: Table }> {
    const uri = `memory://seams-runtime-${n++}`
    const table = await Table.create(openStore(uri), schemaFor('deduplicate', { bucket: '2' }))
    Object.assign(process.env, {
      AWS_REGION: 'us-east-1',
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      STRATA_TABLES: JSON.stringify({ t: { uri, ...extra } }),
    })
    return { uri, table }
  }

  const rows = (...ids: number[]) => sqsEvent(ids.map((id) => sqsRecord(JSON.stringify({ dt: '2024-05-01', id, a: id }))))

  it('wrapStore: every store the runtime opens (the table\'s, the reject store) comes through the wrapper', async () => {
    const { uri } = await configuredTable()
    const wrapped = new Map<string, CountingStore>()
    const writer = writerFunction(new FunctionRuntime({ wrapStore: (s) => {
      const c = new CountingStore(s)
      wrapped.set(s.uri, c)
      return c
    } }))
    // one good record and one the schema refuses (a reject)
    const bad = sqsRecord(JSON.stringify({ dt: '2024-05-01', id: 'not a number' }))
    const res = await writer.writerHandler(sqsEvent([...rows(1).Records, bad]))
    expect(res.batchItemFailures).toEqual([])
    expect([...wrapped.keys()].sort()).toEqual([uri, `${uri}-rejects`].sort())
    expect(wrapped.get(uri)!.take().put).toBeGreaterThan(0)
    expect(wrapped.get(`${uri}-rejects`)!.take().put).toBe(1)
  })

  it('wrapStore: a store wrapper that fails the data file\'s write fails the writer\'s records, which go back', async () => {
    await configuredTable()
    const writer = writerFunction(new FunctionRuntime({ wrapStore: (s) => new FaultyStore(s, { rules: [{ kind: 'error', when: (c) => c.op === 'put' && /data-/.test(c.key), times: Infinity }] }) }))
    const event = rows(1, 2)
    const res = await writer.writerHandler(event)
    expect(res.batchItemFailures.map((f) => f.itemIdentifier).sort()).toEqual(event.Records.map((r) => r.messageId).sort())
  })

  it('wrapCommitter: a writer commits through the wrapper around its table\'s committer', async () => {
    const { table } = await configuredTable()
    const seen: number[] = []
    const writer = writerFunction(new FunctionRuntime({
      wrapCommitter: (committer) => ({ commit: (req) => committer.commit(req).then((r) => (seen.push(r.snapshotId!), r)) }),
    }))
    await writer.writerHandler(rows(1, 2))
    expect(seen).toEqual([(await table.snapshots.latestId())!])
  })

  it('wrapFold and wrapQueue: the committer function folds through the one and drains through the other', async () => {
    const { table } = await configuredTable({ commitQueueUrl: 'http://127.0.0.1:9/000000000000/seams-commits.fifo' })
    const ops = [1, 2].map((id) => ({ _kind: '+I', dt: '2024-05-01', id, a: 1, b: null, c: null }))
    const m = await writeMessage(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)), { table: 't' })
    const body = (await encodeCommitMessage(m!, table.store)).body
    // the drained queue: one waiting message, each received once; the SQS queue behind it is never asked
    const waiting: QueuedCommitMessage[] = [{ messageId: 'd1', body, receiptHandle: 'h1' }]
    const calls: string[] = []
    const committer = committerFunction(new FunctionRuntime({
      wrapFold: (fold: Fold): Fold => ({ table: fold.table, commit: (inputs) => (calls.push(`fold ${inputs.length}`), fold.commit(inputs)) }),
      wrapQueue: (): DrainableCommitQueue => ({
        receive: async (max) => {
          const got = waiting.splice(0, max)
          calls.push(`receive ${got.length}`)
          return got
        },
        delete: async (ms) => void calls.push(`delete ${ms.map((x) => x.messageId).join(',')}`),
        release: async (ms) => void calls.push(`release ${ms.length}`),
      }),
    }))
    const res = await committer.committerHandler(sqsEvent([]))
    expect(res.batchItemFailures).toEqual([])
    expect(calls).toContain('fold 1')
    expect(calls).toContain('receive 1')
    expect(calls).toContain('delete d1')
    expect(await table.snapshots.latestId()).toBe(1)
  })

  it('onMetric: each metric a handler adds is told to the observer', async () => {
    await configuredTable()
    const metrics: AddedMetric[] = []
    const writer = writerFunction(new FunctionRuntime({ onMetric: (m) => void metrics.push(m) }))
    await writer.writerHandler(rows(1, 2, 3))
    expect(metrics).toContainEqual({ name: 'RowsWritten', unit: 'Count', value: 3 })
    expect(metrics.map((m) => m.name)).toContain('WriteLatency')
  })

  it('a runtime\'s seams are its own: a runtime built without them, in the same process, passes through none', async () => {
    await configuredTable()
    const told: string[] = []
    const seamed = new FunctionRuntime({
      wrapStore: (s) => (told.push('store'), s),
      wrapCommitter: (c) => (told.push('committer'), c),
      onMetric: () => void told.push('metric'),
    })
    writerFunction(seamed)
    const plain = writerFunction(new FunctionRuntime())
    const res = await plain.writerHandler(rows(1))
    expect(res.batchItemFailures).toEqual([])
    expect(told).toEqual([])
  })
})
