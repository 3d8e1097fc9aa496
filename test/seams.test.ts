// The seams probes, counters and faults go through instead of patching classes: store
// wrappers at the store port (ObservedStore, CountingStore), the wrappers openStore puts
// around every store it opens (wrapOpenedStores), and the fold and queue wrappers of the
// commit service (wrapCommitService).
import { afterEach, describe, expect, it } from 'vitest'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { encodeCommitMessage } from '../lib/commit/commit-message.ts'
import type { DrainableCommitQueue, QueuedCommitMessage } from '../lib/commit/commit-queue.ts'
import { type Fold, commitFromQueue, wrapCommitService } from '../lib/commit/commit-service.ts'
import { QueuedCommitter, type QueuedCommitSpan, observeQueuedCommits } from '../lib/commit/queued-committer.ts'
import { Table } from '../lib/handle/table.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { CountingStore, ObservedStore, type StoreOutcome, type StoreRequest } from '../lib/store/observed-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { openStore, wrapOpenedStores } from '../lib/store/open-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { writeMessage } from './helpers/commit.ts'
import { schemaFor } from './helpers/model.ts'

const removals: (() => void)[] = []
afterEach(() => {
  for (const remove of removals.splice(0)) remove()
})

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

  it('openStore puts every wrapper added around the stores it opens, the last one outermost, until removed', async () => {
    const order: string[] = []
    const tag = (name: string) => (s: ObjectStore) =>
      new ObservedStore(s, { before: () => void order.push(name) })
    removals.push(wrapOpenedStores(tag('inner')))
    const removeOuter = wrapOpenedStores(tag('outer'))
    removals.push(removeOuter)
    await openStore('memory://seams-test').put('k', bytes('v'))
    expect(order).toEqual(['outer', 'inner'])
    removeOuter()
    order.length = 0
    expect(await openStore('memory://seams-test').get('k')).not.toBeNull()
    expect(order).toEqual(['inner'])
  })

  it('a Table opened by URI sees its store through the wrapper: a counting store counts its requests', async () => {
    await Table.create(openStore('memory://seams-table'), schemaFor('deduplicate', { bucket: '2' }))
    const counters: CountingStore[] = []
    removals.push(wrapOpenedStores((s) => {
      const c = new CountingStore(s)
      counters.push(c)
      return c
    }))
    const table = await Table.open('memory://seams-table')
    expect(table.store).toBe(counters[0])
    expect(counters[0].total).toBeGreaterThan(0)
  })
})

describe('the commit service wrappers', () => {
  async function tableAndBody(): Promise<{ table: Table; body: string }> {
    const store = new MemoryStore()
    const table = await Table.create(store, schemaFor('deduplicate', { bucket: '2' }))
    const ops = [1, 2].map((id) => ({ _kind: '+I', dt: '2024-05-01', id, a: 1, b: null, c: null }))
    const m = await writeMessage(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)), { table: 't' })
    return { table, body: (await encodeCommitMessage(m!, store)).body }
  }

  /** A queue holding `waiting` messages, each received once. */
  function queueOf(waiting: QueuedCommitMessage[]): DrainableCommitQueue & { deleted: string[] } {
    const deleted: string[] = []
    return {
      deleted,
      receive: async (max) => waiting.splice(0, max),
      delete: async (ms) => void deleted.push(...ms.map((m) => m.messageId)),
      release: async () => undefined,
    }
  }

  it('commitFromQueue folds through the fold wrapper and drains through the queue wrapper, each call seen', async () => {
    const { table, body } = await tableAndBody()
    const calls: string[] = []
    removals.push(wrapCommitService({
      fold: (fold: Fold): Fold => ({ table: fold.table, commit: (inputs) => (calls.push(`fold ${inputs.length}`), fold.commit(inputs)) }),
      queue: (q) => ({
        receive: async (max) => {
          const got = await q.receive(max)
          calls.push(`receive ${got.length}`)
          return got
        },
        delete: (ms) => (calls.push(`delete ${ms.length}`), q.delete(ms)),
        release: (ms) => (calls.push(`release ${ms.length}`), q.release(ms)),
      }),
    }))
    const queue = queueOf([{ messageId: 'd1', body, receiptHandle: 'h1' }])
    const res = await commitFromQueue(new BatchingCommitter(table), [], { tableName: 't', drain: { queue, max: 10 } })
    expect(res).toMatchObject({ drained: 1, landed: 1, snapshots: [1] })
    expect(calls).toContain('fold 1')
    expect(calls.filter((c) => c.startsWith('receive')).length).toBeGreaterThan(0)
    expect(calls).toContain('delete 1')
    expect(queue.deleted).toEqual(['d1'])
  })

  it('without a wrapper, commitFromQueue uses the fold and queue it is handed as they are', async () => {
    const { table, body } = await tableAndBody()
    const queue = queueOf([])
    const res = await commitFromQueue(new BatchingCommitter(table), [{ id: 'm1', body }], { tableName: 't', drain: { queue, max: 10 } })
    expect(res).toMatchObject({ landed: 1, snapshots: [1] })
  })
})

describe('the queued committer observer', () => {
  it('each queued commit ends with one span told to every observer: here a send that fails', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '2' }))
    const spans: QueuedCommitSpan[] = []
    removals.push(observeQueuedCommits((span) => void spans.push(span)))
    const committer = new QueuedCommitter(table, { send: async () => Promise.reject(new Error('queue down')) }, { timeoutMs: 1000 })
    const op = { _kind: '+I', dt: '2024-05-01', id: 1, a: 1, b: null, c: null }
    await expect(writeBatch(table, [recordFromJson(table.view, op, 'op 0')], { committer })).rejects.toThrow('queue down')
    expect(spans).toHaveLength(1)
    expect(spans[0]).toMatchObject({ ok: false, error: { message: 'queue down' } })
    expect(spans[0].endedAt).toBeGreaterThanOrEqual(spans[0].startedAt)
  })
})
