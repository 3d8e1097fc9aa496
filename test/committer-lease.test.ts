// The committer lease against clocks and stray lease objects (docs/design.md "The committer
// lease and clocks"): a lease whose expiry lies more than the bound (TTL + skew allowance)
// beyond the reader's clock is taken over, so neither a ghost lease nor a holder whose clock
// runs fast keeps the other committers forwarding; a live lease within the bound is still
// honoured; a message forwarded MAX_FORWARDS times is folded whatever the lease says; an
// override is counted (CommitterLeaseOverridden). Every clock is injected: no test reads
// the wall clock.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { publishCommitMetrics } from '../functions/committer.ts'
import { logger } from '../functions/shared/runtime.ts'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { encodeCommitMessage, parseCommitMessageBody } from '../lib/commit/commit-message.ts'
import { type InvokedMessage, MAX_FORWARDS, commitFromQueue, forwardMessages } from '../lib/commit/commit-service.ts'
import { COMMITTER_LEASE_KEY, COMMITTER_LEASE_SKEW_ALLOWANCE_MS, COMMITTER_LEASE_TTL_MS, CommitterLease } from '../lib/commit/committer-lease.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeMessage } from './helpers/commit.ts'
import { captureMetrics } from './helpers/metrics.ts'
import { type Op, schemaFor } from './helpers/model.ts'

const TTL = COMMITTER_LEASE_TTL_MS
/** how long any one lease object can hold a reader off, by the reader's clock */
const BOUND = TTL + COMMITTER_LEASE_SKEW_ALLOWANCE_MS
const HOUR = 3_600_000
const T0 = 1_700_000_000_000
const GHOST = '{"owner":"ghost","expiresAt":8.64e15}'

/** A clock the test moves by hand. */
class Clock {
  constructor(public t = T0) {}
  readonly now = () => this.t
}

/** hold(), then its PUT answered, as a later reader would see it. */
async function held(l: CommitterLease): Promise<boolean> {
  const r = await l.hold()
  await l.flushed()
  return r
}

const putLease = (store: ObjectStore, text: string) => store.put(COMMITTER_LEASE_KEY, new TextEncoder().encode(text))
async function leaseOf(store: ObjectStore): Promise<Record<string, unknown> | null> {
  const bytes = await store.get(COMMITTER_LEASE_KEY)
  return bytes ? JSON.parse(new TextDecoder().decode(bytes)) : null
}

/**
 * Steps the reader's clock by `step` until its hold() succeeds; returns how much of the
 * reader's time passed from its first look (0: the first look took the lease).
 */
async function waitToHold(reader: CommitterLease, clock: Clock, step = 1_000, limit = 10 * HOUR): Promise<number> {
  const start = clock.t
  while (!(await held(reader))) {
    clock.t += step
    if (clock.t - start > limit) throw new Error('the reader never took the lease')
  }
  return clock.t - start
}

describe('the committer lease and clocks', () => {
  it('(a) a ghost lease with a far-future expiry is taken over at the first look, and counted', async () => {
    const store = new MemoryStore()
    await putLease(store, GHOST)
    const clock = new Clock()
    const reader = new CommitterLease(store, 'reader', TTL, clock.now)
    expect(await waitToHold(reader, clock)).toBe(0)
    expect(reader.overrides).toEqual([{ reason: 'beyond-bound', lease: { owner: 'ghost', expiresAt: 8.64e15 }, at: T0 }])
    expect(await leaseOf(store)).toMatchObject({ owner: 'reader', expiresAt: T0 + TTL })
    // once released, nothing is left of the ghost
    await reader.release()
    expect(await store.get(COMMITTER_LEASE_KEY)).toBeNull()
  })

  it('(a) a ghost lease just within the bound holds the reader off until it lapses, at most the bound', async () => {
    for (const ahead of [BOUND, BOUND - 1, TTL, 1]) {
      const store = new MemoryStore()
      await putLease(store, JSON.stringify({ owner: 'ghost', expiresAt: T0 + ahead }))
      const clock = new Clock()
      const reader = new CommitterLease(store, 'reader', TTL, clock.now)
      const waited = await waitToHold(reader, clock, 250)
      expect(waited, `${ahead} ms ahead`).toBeGreaterThanOrEqual(ahead)
      expect(waited, `${ahead} ms ahead`).toBeLessThanOrEqual(BOUND)
      // it lapsed: not an override
      expect(reader.overrides).toEqual([])
    }
    // one millisecond further is beyond the bound: taken over at once
    const store = new MemoryStore()
    await putLease(store, JSON.stringify({ owner: 'ghost', expiresAt: T0 + BOUND + 1 }))
    const reader = new CommitterLease(store, 'reader', TTL, new Clock().now)
    expect(await held(reader)).toBe(true)
    expect(reader.overrides.map((o) => o.reason)).toEqual(['beyond-bound'])
  })

  it('records the holder\'s own clock readings and lease duration beside the expiry', async () => {
    const store = new MemoryStore()
    const clock = new Clock()
    const holder = new CommitterLease(store, 'holder', TTL, clock.now)
    expect(await held(holder)).toBe(true)
    clock.t += 700
    expect(await held(holder)).toBe(true)
    expect(await leaseOf(store)).toEqual({ owner: 'holder', expiresAt: T0 + 700 + TTL, takenAt: T0, renewedAt: T0 + 700, ttlMs: TTL })
  })

  it('(b) a holder whose clock runs an hour fast does not hold a correct reader off: it folds again at once', async () => {
    const store = new MemoryStore()
    const clock = new Clock()
    const fast = new CommitterLease(store, 'fast', TTL, () => clock.t + HOUR)
    const reader = new CommitterLease(store, 'reader', TTL, clock.now)
    expect(await held(fast)).toBe(true)
    expect(await waitToHold(reader, clock)).toBe(0)
    expect(reader.overrides).toMatchObject([{ reason: 'beyond-bound', lease: { owner: 'fast', expiresAt: T0 + HOUR + TTL, renewedAt: T0 + HOUR } }])
    // both go on folding (safe, as two committers always were): the fast one finds the
    // reader's lease lapsed by its clock, the reader finds the fast one's beyond the bound
    for (let round = 0; round < 3; round++) {
      clock.t += 300
      expect(await held(fast)).toBe(true)
      expect(await held(reader)).toBe(true)
    }
    expect(reader.overrides).toHaveLength(4)
    expect(fast.overrides).toEqual([])
  })

  it('(b) a holder whose clock runs fast within the allowance, then dies, holds a reader off for at most the bound of its time', async () => {
    for (const skew of [1, 1_000, 10_000, COMMITTER_LEASE_SKEW_ALLOWANCE_MS]) {
      const store = new MemoryStore()
      const clock = new Clock()
      const fast = new CommitterLease(store, 'fast', TTL, () => clock.t + skew)
      expect(await held(fast)).toBe(true)
      const reader = new CommitterLease(store, 'reader', TTL, clock.now)
      const waited = await waitToHold(reader, clock, 100)
      expect(waited, `holder ${skew} ms fast`).toBeGreaterThanOrEqual(TTL + skew)
      expect(waited, `holder ${skew} ms fast`).toBeLessThanOrEqual(BOUND)
      expect(reader.overrides).toEqual([])
    }
  })

  it('(c) a holder whose clock runs an hour slow: its lease looks lapsed; it takes the reader\'s over as beyond the bound', async () => {
    const store = new MemoryStore()
    const clock = new Clock()
    const slow = new CommitterLease(store, 'slow', TTL, () => clock.t - HOUR)
    const reader = new CommitterLease(store, 'reader', TTL, clock.now)
    expect(await held(slow)).toBe(true)
    // lapsed by the reader's clock: taken, not overridden
    expect(await held(reader)).toBe(true)
    expect(reader.overrides).toEqual([])
    // the slow one reads the reader's lease an hour and a TTL ahead of its clock
    clock.t += 300
    expect(await held(slow)).toBe(true)
    expect(slow.overrides).toMatchObject([{ reason: 'beyond-bound', lease: { owner: 'reader' } }])
  })

  it('(c) a holder slow by less than the TTL holds a reader off for what is left of its TTL', async () => {
    const store = new MemoryStore()
    const clock = new Clock()
    const slow = new CommitterLease(store, 'slow', TTL, () => clock.t - 3_000)
    expect(await held(slow)).toBe(true)
    const reader = new CommitterLease(store, 'reader', TTL, clock.now)
    expect(await waitToHold(reader, clock, 100)).toBe(TTL - 3_000)
    expect(reader.overrides).toEqual([])
  })

  it('(d) a live lease within the bound is honoured while its holder renews, and taken once released', async () => {
    const store = new MemoryStore()
    const clock = new Clock()
    const holder = new CommitterLease(store, 'holder', TTL, clock.now)
    const reader = new CommitterLease(store, 'reader', TTL, clock.now)
    expect(await held(holder)).toBe(true)
    for (let round = 0; round < 40; round++) {
      expect(await held(reader)).toBe(false)
      clock.t += 1_000
      expect(await held(holder)).toBe(true)
    }
    // forty seconds of renewals: a live holder is not overridden, however long it folds
    expect(reader.overrides).toEqual([])
    await holder.release()
    expect(await held(reader)).toBe(true)
    expect(reader.overrides).toEqual([])
  })

  it('(f) property: no lease object keeps a reader from folding for more than the bound of its own time', async () => {
    const skew = fc.oneof(fc.integer({ min: -2 * HOUR, max: 2 * HOUR }), fc.integer({ min: -2 * BOUND, max: 2 * BOUND }))
    const leaseText = fc.oneof(
      // a committer's own lease: its clock skewed, its TTL anything, written some time before the reader looks
      fc.record({ holderSkew: skew, holderTtl: fc.integer({ min: 1, max: HOUR }), age: fc.integer({ min: 0, max: 2 * BOUND }) }).map(({ holderSkew, holderTtl, age }) => (readerSkew: number) => {
        const holderNow = T0 - age + holderSkew - readerSkew
        return JSON.stringify({ owner: 'holder', expiresAt: holderNow + holderTtl, takenAt: holderNow, renewedAt: holderNow, ttlMs: holderTtl })
      }),
      // a stray object: any expiry, garbled or not
      fc.oneof(fc.integer(), fc.double(), fc.constantFrom(8.64e15, Number.MAX_VALUE, T0 + BOUND, T0 + BOUND + 1)).map((expiresAt) => () => JSON.stringify({ owner: 'ghost', expiresAt })),
      fc.constantFrom(GHOST, '{"owner":"ghost","expiresAt":1e999}', '{"owner": 7', 'null', '{"owner":"ghost","expiresAt":"soon"}').map((text) => () => text),
    )
    await fc.assert(
      fc.asyncProperty(leaseText, skew, fc.array(fc.integer({ min: 1, max: 4_000 }), { minLength: 1, maxLength: 30 }), async (text, readerSkew, steps) => {
        const store = new MemoryStore()
        await putLease(store, text(readerSkew))
        // the reader's clock is T0 + readerSkew when it first looks; the lease was written relative to that
        const clock = new Clock(T0 + readerSkew)
        const reader = new CommitterLease(store, 'reader', TTL, clock.now)
        const start = clock.t
        for (let i = 0; ; i++) {
          const took = await held(reader)
          if (took) return
          // refused: only by a lease still live and within the bound of the reader's clock
          expect(clock.t - start).toBeLessThanOrEqual(BOUND)
          clock.t += steps[i % steps.length]
        }
      }),
      { numRuns: 300 },
    )
  })
})

const DT = '2024-05-01'
const put = (ids: number[]): Op[] => ids.map((id) => ({ _kind: '+I', dt: DT, id, a: 1, b: null, c: null }))

/** A table on a memory store and the body of one write's commit message, committed by nobody yet. */
async function tableAndBody(ids = [1, 2]): Promise<{ store: MemoryStore; table: Table; body: string }> {
  const store = new MemoryStore()
  const table = await Table.create(store, schemaFor('deduplicate', { bucket: '2' }))
  const m = await writeMessage(table, put(ids).map((op, i) => recordFromJson(table.view, op, `op ${i}`)), { table: 't' })
  return { store, table, body: (await encodeCommitMessage(m!, store)).body }
}

/** A body as a committer forwards it `n` times over (the envelope's `forwards` field). */
function forwardedTimes(body: string, n: number): string {
  return JSON.stringify({ ...JSON.parse(body), forwards: n })
}

/** commitFromQueue with a lease on the store and a forward that records what it was handed. */
async function invoke(table: Table, store: ObjectStore, invoked: InvokedMessage[], lease: CommitterLease) {
  const forwarded: InvokedMessage[] = []
  const res = await commitFromQueue(new BatchingCommitter(table), invoked, {
    tableName: 't',
    lease: { lease, forward: async (ms) => (forwarded.push(...ms), []) },
  })
  return { res, forwarded }
}

describe('the commit service and the lease', () => {
  it('an invocation that finds a ghost lease folds its batch instead of forwarding it, and reports the override', async () => {
    const { store, table, body } = await tableAndBody()
    await putLease(store, GHOST)
    const { res, forwarded } = await invoke(table, store, [{ id: 'm1', body }], new CommitterLease(store, 'me', TTL, new Clock().now))
    expect(forwarded).toEqual([])
    expect(res).toMatchObject({ forwarded: 0, landed: 1, failedIds: [], snapshots: [1] })
    expect(res.leaseOverrides).toMatchObject([{ reason: 'beyond-bound', lease: { owner: 'ghost' } }])
    // its rounds ended and it released the lease: the ghost is gone
    expect(await store.get(COMMITTER_LEASE_KEY)).toBeNull()
  })

  it('an invocation that finds a live lease within the bound forwards its batch (the optimisation stands)', async () => {
    const { store, table, body } = await tableAndBody()
    const clock = new Clock()
    const holder = new CommitterLease(store, 'holder', TTL, clock.now)
    expect(await held(holder)).toBe(true)
    const { res, forwarded } = await invoke(table, store, [{ id: 'm1', body }], new CommitterLease(store, 'me', TTL, clock.now))
    expect(res).toMatchObject({ forwarded: 1, landed: 0, rounds: 0, snapshots: [], leaseOverrides: [] })
    expect(forwarded.map((m) => m.id)).toEqual(['m1'])
    expect(await table.snapshots.latestId()).toBe(0)
  })

  it('forwarded copies carry a forward count; a copy forwarded MAX_FORWARDS times is folded, taking the lease over', async () => {
    const { store, table, body } = await tableAndBody()
    const clock = new Clock()
    const holder = new CommitterLease(store, 'holder', TTL, clock.now)
    expect(await held(holder)).toBe(true)

    // forwardMessages sends the body with its count one higher, the rest unchanged
    const sent: string[] = []
    const queue = { send: async (b: string) => void sent.push(b) }
    expect(await forwardMessages(queue, [{ id: 'm1', body }, { id: 'm2', body: forwardedTimes(body, 3) }])).toEqual([])
    expect(sent.map((b) => JSON.parse(b).forwards)).toEqual([1, 4])
    expect(sent.map((b) => ({ ...JSON.parse(b), forwards: undefined }))).toEqual([0, 1].map(() => ({ ...JSON.parse(body), forwards: undefined })))
    expect(parseCommitMessageBody(sent[1])).toEqual(parseCommitMessageBody(body))

    // one forward short of the limit: forwarded once more
    const short = await invoke(table, store, [{ id: 'm1', body: forwardedTimes(body, MAX_FORWARDS - 1) }], new CommitterLease(store, 'me', TTL, clock.now))
    expect(short.res).toMatchObject({ forwarded: 1, landed: 0, leaseOverrides: [] })

    // at the limit: folded, the holder's lease taken over, so that the holder ends its rounds
    let holderRenewed: boolean | undefined
    const me = new CommitterLease(store, 'me', TTL, clock.now)
    const res = await commitFromQueue(new BatchingCommitter(table), [{ id: 'm1', body: forwardedTimes(body, MAX_FORWARDS) }], {
      tableName: 't',
      lease: { lease: me, forward: async () => expect.unreachable('forwarded past the limit') },
      afterFold: async () => {
        await me.flushed()
        holderRenewed = await held(holder)
      },
    })
    expect(res).toMatchObject({ forwarded: 0, landed: 1, failedIds: [] })
    expect(res.leaseOverrides).toMatchObject([{ reason: 'forward-limit', lease: { owner: 'holder' } }])
    expect(holderRenewed).toBe(false)
  })

  it('an unreadable body is not forwarded (a copy would restart its receive count): it is named failed, towards the DLQ', async () => {
    const sent: string[] = []
    const queue = { send: async (b: string) => void sent.push(b) }
    const { body } = await tableAndBody()
    expect(await forwardMessages(queue, [{ id: 'bad', body: '{"v": 1, "pointer": 7' }, { id: 'good', body }])).toEqual(['bad'])
    expect(sent).toHaveLength(1)
  })

  it('the envelope\'s forward count is checked like every other field', async () => {
    const { body } = await tableAndBody()
    expect(() => parseCommitMessageBody(forwardedTimes(body, 2))).not.toThrow()
    for (const bad of [-1, 1.5, '3', null]) expect(() => parseCommitMessageBody(JSON.stringify({ ...JSON.parse(body), forwards: bad })), String(bad)).toThrow(/forwards/)
  })

  it('(e) the committer publishes CommitterLeaseOverridden: 1 when it took a lease over, 0 otherwise', async () => {
    const { store, table, body } = await tableAndBody()
    await putLease(store, GHOST)
    const { res } = await invoke(table, store, [{ id: 'm1', body }], new CommitterLease(store, 'me', TTL, new Clock().now))
    // tests run the logger silent (vitest.config.ts); this one reads its warning
    const level = logger.getLevelName()
    logger.setLogLevel('WARN')
    const { emf, logs } = await captureMetrics((metrics) => {
      publishCommitMetrics(metrics, res, { feed: false, commitTimeMs: 10 })
      metrics.publishStoredMetrics()
      publishCommitMetrics(metrics, { ...res, leaseOverrides: [] }, { feed: false, commitTimeMs: 10 })
      metrics.publishStoredMetrics()
    }).finally(() => logger.setLogLevel(level))
    expect(emf.map((m) => m.CommitterLeaseOverridden)).toEqual([1, 0])
    expect(emf[0]._aws.CloudWatchMetrics[0].Metrics).toContainEqual({ Name: 'CommitterLeaseOverridden', Unit: 'Count' })
    expect(logs.some((l) => l.message === 'committer lease overridden' && (l as { lease?: { owner?: string } }).lease?.owner === 'ghost')).toBe(true)
  })
})
