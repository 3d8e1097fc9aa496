// Fault injection at every storage call of write, compaction, commit, expiration and
// orphan cleanup. For each operation the calls of a clean run are counted; then, for every
// k (sampled where noted) and every fault kind, the k-th call fails, the operation is
// retried from fresh state (a new Table handle on the healed store, as a redelivered
// message would be), and the table is checked: equal to the model (an aggregation table
// summing `a`, so a duplicated row shows), every snapshot's references present, and orphan
// cleanup leaving only referenced objects (or schema/, snapshot/, _strata/).

import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ingest } from '../lib/ingest/ingest.ts'
import { MemoryJobQueue, type CompactionJob } from '../lib/jobs/compaction-job.ts'
import { FaultyQueue } from '../lib/jobs/faulty-queue.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { MIN_ORPHAN_OLDER_THAN_MS, removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { snapshotRange, snapshotReferences } from '../lib/maintenance/references.ts'
import { readAll } from '../lib/read/table-read.ts'
import { type FaultKind, FaultyStore, InjectedFault } from '../lib/store/faulty-store.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { RetryingStore, isTransientStoreError } from '../lib/store/retrying-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type Op, TableModel, opArb, schemaFor, sortRows } from './helpers/model.ts'
import { type StoreFactory, s3Stores } from './helpers/stores.ts'

const KINDS: FaultKind[] = ['error', 'timeout', 'lost-reply']
const FUTURE = () => Date.now() + 3_600_000
const ENGINE = 'aggregation'

function opsOf(seed: number, n: number): Op[] {
  // +I/+U only: sums make a duplicate visible, and an insert is never refused
  return fc.sample(fc.array(opArb(ENGINE), { minLength: n, maxLength: n }), { seed, numRuns: 1 })[0].map((o) => ({ ...o, _kind: o._kind === '-D' ? '+I' : o._kind }))
}

async function write(table: Table, model: TableModel, ops: Op[], opts: Parameters<typeof writeBatch>[2] = {}) {
  const res = await writeBatch(table, ops.map((o, i) => recordFromJson(table.view, o, `op ${i}`)), opts)
  model.applyBatch(ops)
  return res
}

async function copyOf(src: ObjectStore): Promise<MemoryStore> {
  const out = new MemoryStore()
  for (const o of await src.list('')) await out.put(o.key, (await src.get(o.key))!)
  return out
}

/** What is wrong with the table in `store` against `expected` (empty when healthy). */
async function problems(store: ObjectStore, expected: unknown[][], label: string): Promise<string[]> {
  const out: string[] = []
  let table = await Table.open(store)
  const same = async (when: string) => {
    try {
      if (JSON.stringify(sortRows(await readAll(table)), big) !== JSON.stringify(expected, big)) out.push(`${label}: table differs from the model${when}`)
    } catch (e) {
      out.push(`${label}: read failed${when}: ${(e as Error).message}`)
    }
  }
  await same('')
  const { earliest, latest } = await snapshotRange(table)
  const referenced = new Set<string>()
  for (let id = earliest; id <= latest && latest > 0; id++) {
    const s = await table.snapshots.snapshot(id)
    if (!s) {
      out.push(`${label}: snapshot ${id} missing inside ${earliest}..${latest}`)
      continue
    }
    let refs: Set<string>
    try {
      refs = await snapshotReferences(table, s, 'throw')
    } catch (e) {
      out.push(`${label}: snapshot ${id}: ${(e as Error).message}`)
      continue
    }
    for (const k of refs) {
      referenced.add(k)
      if ((await store.head(k)) === null) out.push(`${label}: snapshot ${id} references missing ${k}`)
    }
  }
  try {
    await removeOrphanFiles(table, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now: FUTURE() + MIN_ORPHAN_OLDER_THAN_MS })
  } catch (e) {
    out.push(`${label}: orphan cleanup failed: ${(e as Error).message}`)
  }
  for (const o of await store.list('')) {
    if (/^(schema|snapshot|_strata)\//.test(o.key)) continue
    if (!referenced.has(o.key)) out.push(`${label}: ${o.key} is neither referenced nor removed by orphan cleanup`)
  }
  table = await Table.open(store)
  await same(' after orphan cleanup')
  return out
}

const big = (_: string, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v)

interface Scenario {
  name: string
  /** the table before the operation, and the model after it */
  base: MemoryStore
  expected: unknown[][]
  /** one attempt of the operation on a fresh handle; the same arguments on every attempt */
  run: (table: Table) => Promise<unknown>
  /** only calls after this many of the clean run are faulted (to aim at one phase) */
  skip?: number
  /** inject at every `step`-th call only */
  step?: number
}

interface Sweep {
  calls: number
  /** the k values faulted: first..calls by step */
  first: number
  step: number
  runs: number
  faultsHit: number
  problems: string[]
}

/**
 * Counts the calls of a clean run, then for every k and kind: fault at call k, retry from a
 * fresh handle on the healed store until the operation succeeds (at most 3 retries, as
 * maxReceiveCount would), check.
 */
async function sweep(sc: Scenario, kinds = KINDS): Promise<Sweep> {
  const clean = new FaultyStore(await copyOf(sc.base))
  await sc.run(await Table.open(clean))
  const cleanProblems = await problems(clean.inner, sc.expected, `${sc.name} clean`)
  const opened = new FaultyStore(await copyOf(sc.base))
  await Table.open(opened)
  const openCalls = opened.count
  const calls = clean.count - openCalls
  const out: Sweep = { calls, first: (sc.skip ?? 0) + 1, step: sc.step ?? 1, runs: 0, faultsHit: 0, problems: cleanProblems }
  for (let k = (sc.skip ?? 0) + 1; k <= calls; k += sc.step ?? 1) {
    for (const kind of kinds) {
      const inner = await copyOf(sc.base)
      const faulty = new FaultyStore(inner)
      const table = await Table.open(faulty)
      faulty.inject({ at: faulty.count + k, kind })
      let failed = false
      try {
        await sc.run(table)
      } catch (e) {
        if (!(e instanceof InjectedFault) && !(e instanceof Error)) throw e
        failed = true
      }
      out.runs++
      out.faultsHit += faulty.injected.length
      for (let attempt = 0; failed && attempt < 3; attempt++) {
        try {
          await sc.run(await Table.open(inner))
          failed = false
        } catch (e) {
          if (attempt === 2) out.problems.push(`${sc.name} k=${k} ${kind}: retry ${attempt + 1} failed: ${(e as Error).message}`)
        }
      }
      out.problems.push(...(await problems(inner, sc.expected, `${sc.name} k=${k} ${kind} (${faulty.injected[0]?.call.op ?? '-'} ${faulty.injected[0]?.call.key ?? ''})`)))
    }
  }
  return out
}

const summaries: string[] = []
afterAll(() => {
  // the numbers docs/reliability.md quotes
  if (process.env.STRATA_FAULT_SUMMARY) console.log(summaries.join('\n'))
})

function report(name: string, s: Sweep) {
  summaries.push(`${name}: ${s.calls} calls, k=${s.first}..${s.calls} step ${s.step}, ${s.runs} faulted runs, ${s.faultsHit} faults hit, ${s.problems.length} problems`)
  expect(s.problems).toEqual([])
  expect(s.faultsHit).toBe(s.runs) // every injected fault fired: the sweep covered the run
}

async function baseTable(options: Record<string, string>, batches: number, seed: number) {
  const store = new MemoryStore()
  const model = new TableModel(ENGINE)
  const table = await Table.create(store, schemaFor(ENGINE, options))
  for (let i = 0; i < batches; i++) await write(table, model, opsOf(seed + i, 12))
  return { store, model, table }
}

/**
 * Deletion-vector readers skip level 0, so the table equals the model only once every
 * bucket is compacted: the base has every bucket compacted, then two more batches, then
 * every bucket but `target` compacted again; compacting `target` (lifting its level-0
 * files and marking the rows they supersede in deletion vectors) completes it.
 */
async function dvBase(seed: number) {
  const b = await baseTable({ bucket: '1', 'deletion-vectors.enabled': 'true' }, 6, seed)
  const buckets = async () => {
    const live = await b.table.manifests.liveEntries((await b.table.snapshots.latest())!)
    return [...new Map(live.map((e) => [`${e.partition.join(',')}|${e.bucket}`, e])).values()]
  }
  for (const e of await buckets()) await compactBucket(b.table, { partition: e.partition, bucket: e.bucket })
  for (let i = 0; i < 2; i++) await write(b.table, b.model, opsOf(seed + 50 + i, 12))
  const [target, ...others] = await buckets()
  for (const e of others) await compactBucket(b.table, { partition: e.partition, bucket: e.bucket })
  return { ...b, target }
}

describe('fault kinds and wrappers', () => {
  it('FaultyStore fails exactly the chosen call: error and timeout apply nothing, lost-reply applies then throws', async () => {
    for (const kind of KINDS) {
      const inner = new MemoryStore()
      const f = new FaultyStore(inner, { rules: [{ at: 2, kind }] })
      await f.put('a', new Uint8Array([1]))
      await expect(f.put('b', new Uint8Array([2]))).rejects.toBeInstanceOf(InjectedFault)
      await f.put('c', new Uint8Array([3]))
      expect((await inner.list('')).map((o) => o.key)).toEqual(kind === 'lost-reply' ? ['a', 'b', 'c'] : ['a', 'c'])
      expect(f.calls.map((c) => `${c.n}:${c.op}:${c.key}`)).toEqual(['1:put:a', '2:put:b', '3:put:c'])
      expect(isTransientStoreError(f.injected[0])).toBe(true)
    }
    const f = new FaultyStore(new MemoryStore(), { rules: [{ kind: 'error', when: (c) => c.op === 'head', times: 2 }] })
    await expect(f.head('x')).rejects.toThrow(/503 SlowDown/)
    await expect(f.head('x')).rejects.toThrow(/503 SlowDown/)
    expect(await f.head('x')).toBeNull()
  })

  it('FaultyQueue: lost-reply enqueues and throws, error enqueues nothing', async () => {
    const inner = new MemoryJobQueue()
    const q = new FaultyQueue(inner, { rules: [{ at: 1, kind: 'lost-reply' }, { at: 2, kind: 'error' }] })
    const job: CompactionJob = { table: 't', partition: '', partitionBytes: '', bucket: 0, snapshotId: 1, enqueuedAt: 0 }
    await expect(q.enqueue([job])).rejects.toThrow(/reply was lost/)
    await expect(q.enqueue([{ ...job, snapshotId: 2 }])).rejects.toThrow(/SlowDown/)
    await q.enqueue([{ ...job, snapshotId: 3 }])
    expect(inner.jobs.map((j) => j.snapshotId)).toEqual([1, 3])
  })

  it('RetryingStore retries transient failures with growing jittered backoff, counts them, and fails fast on others', async () => {
    const delays: number[] = []
    const f = new FaultyStore(new MemoryStore(), { rules: [{ kind: 'error', when: (c) => c.op === 'get', times: 3 }] })
    const r = new RetryingStore(f, { sleep: async (ms) => void delays.push(ms), random: () => 1, baseDelayMs: 10, maxDelayMs: 30 })
    expect(await r.get('k')).toBeNull()
    expect(r.retries).toBe(3)
    expect(delays).toEqual([10, 20, 30])
    const gave = new RetryingStore(new FaultyStore(new MemoryStore(), { rules: [{ kind: 'timeout', when: () => true, times: Infinity }] }), { maxAttempts: 3, sleep: async () => {} })
    await expect(gave.head('k')).rejects.toThrow(/timed out/)
    expect(gave.retries).toBe(2)
    const notTransient = new FaultyStore(new MemoryStore())
    const events: string[] = []
    const r2 = new RetryingStore(notTransient, { sleep: async () => {}, onRetry: (e) => events.push(e.op) })
    await expect(r2.getRange('missing', 0, 1)).rejects.toThrow(/no object/)
    expect(notTransient.count).toBe(1)
    expect(events).toEqual([])
    expect(isTransientStoreError(new Error('S3 PutObject failed', { cause: { name: 'InternalError', $metadata: { httpStatusCode: 500 } } }))).toBe(true)
    expect(isTransientStoreError(Object.assign(new Error('denied'), { $metadata: { httpStatusCode: 403 } }))).toBe(false)
  })

  it('RetryingStore.putIfAbsent: a retry after a lost reply recognises its own write; a real loss stays a loss', async () => {
    const inner = new MemoryStore()
    const r = new RetryingStore(new FaultyStore(inner, { rules: [{ at: 1, kind: 'lost-reply' }] }), { sleep: async () => {} })
    expect(await r.putIfAbsent('k', new Uint8Array([1, 2]))).toBe(true)
    expect(r.retries).toBe(1)
    await inner.put('other', new Uint8Array([9]))
    const r2 = new RetryingStore(new FaultyStore(inner, { rules: [{ at: 1, kind: 'error' }] }), { sleep: async () => {} })
    expect(await r2.putIfAbsent('other', new Uint8Array([1]))).toBe(false)
    expect(await r2.putIfAbsent('k', new Uint8Array([1, 2]))).toBe(false) // no ambiguity: equal bytes are not enough
  })
})

describe('a fault at every storage call, then recovery by retry from fresh state', () => {
  it('write (writeBatch with the ingest idempotency arguments): every k, every kind', async () => {
    const { store, model } = await baseTable({}, 3, 1)
    const ops = opsOf(100, 20)
    model.applyBatch(ops)
    const startId = 3
    const recs = (t: Table) => ops.map((o, i) => recordFromJson(t.view, o, `op ${i}`))
    const s = await sweep({
      name: 'write',
      base: store,
      expected: model.snapshot(),
      run: (t) => writeBatch(t, recs(t), { commitUser: 'writer-1', commitIdentifier: 42n, dedupAfterSnapshotId: startId }),
    })
    report('write', s)
  })

  it('commit with a manifest merge (31 base manifests): every 2nd k of the commit phase, every kind', async () => {
    const { store, model } = await baseTable({ bucket: '1' }, 32, 200)
    const ops = opsOf(300, 6)
    model.applyBatch(ops)
    // calls of the commit phase: everything after the data-file puts
    const probe = new FaultyStore(await copyOf(store))
    const t = await Table.open(probe)
    const before = probe.count
    await writeBatch(t, ops.map((o, i) => recordFromJson(t.view, o, `op ${i}`)), { commitUser: 'writer-1', commitIdentifier: 7n, dedupAfterSnapshotId: 32 })
    const lastDataPut = probe.calls.findLastIndex((c) => c.op === 'put' && c.key.includes('bucket-'))
    const s = await sweep({
      name: 'commit',
      base: store,
      expected: model.snapshot(),
      skip: lastDataPut + 1 - before,
      step: 2,
      run: (tb) => writeBatch(tb, ops.map((o, i) => recordFromJson(tb.view, o, `op ${i}`)), { commitUser: 'writer-1', commitIdentifier: 7n, dedupAfterSnapshotId: 32 }),
    })
    expect(probe.calls.some((c) => c.op === 'put' && c.key.startsWith('manifest/manifest-') && c.n > lastDataPut)).toBe(true)
    report('commit', s)
  })

  for (const dv of [false, true]) {
    it(`compaction (compactBucket${dv ? ', deletion vectors' : ', full'}): every k, every kind`, async () => {
      const { store, model, table, target } = dv ? await dvBase(400) : { ...(await baseTable({ bucket: '1' }, 6, 400)), target: undefined }
      const e = target ?? (await table.manifests.liveEntries((await table.snapshots.latest())!))[0]
      const s = await sweep({
        name: `compaction dv=${dv}`,
        base: store,
        expected: model.snapshot(),
        run: (t) => compactBucket(t, { partition: e.partition, bucket: e.bucket, full: !dv }),
      })
      report(`compaction dv=${dv}`, s)
    })
  }

  it('expiration (keep 2 of 8 snapshots, after a compaction): every 2nd k, every kind', async () => {
    const { store, model, table } = await baseTable({ bucket: '1' }, 6, 500)
    const [e] = await table.manifests.liveEntries((await table.snapshots.latest())!)
    await compactBucket(table, { partition: e.partition, bucket: e.bucket, full: true })
    await write(table, model, opsOf(600, 5))
    const s = await sweep({
      name: 'expire',
      base: store,
      expected: model.snapshot(),
      run: (t) => expireSnapshots(t, { numRetainedMin: 2, numRetainedMax: 2, now: FUTURE() }),
      step: 2,
    })
    report('expire', s)
  })

  it('orphan cleanup (after failed writes and a failed compaction left files): every k, every kind', async () => {
    const { store, model, table } = await baseTable({ bucket: '2' }, 4, 700)
    const crash = () => {
      throw new Error('simulated crash before the snapshot')
    }
    await expect(writeBatch(table, opsOf(800, 6).map((o) => recordFromJson(table.view, o, 'x')), { beforeSnapshotCreate: crash })).rejects.toThrow(/simulated/)
    const orphansBefore = (await removeOrphanFiles(await Table.open(await copyOf(store)), { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now: FUTURE() + MIN_ORPHAN_OLDER_THAN_MS, dryRun: true })).deleted
    expect(orphansBefore.length).toBeGreaterThan(0)
    const s = await sweep({
      name: 'orphans',
      base: store,
      expected: model.snapshot(),
      run: (t) => removeOrphanFiles(t, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now: FUTURE() + MIN_ORPHAN_OLDER_THAN_MS }),
    })
    report('orphans', s)
  })

  it('ingest (markers, commit, job enqueue): a fault at every storage call and at the enqueue; redelivery commits once and every touched bucket gets a job', async () => {
    const base = new MemoryStore()
    const model = new TableModel(ENGINE)
    const t0 = await Table.create(base, schemaFor(ENGINE))
    await write(t0, model, opsOf(900, 10))
    const ops = opsOf(901, 15)
    model.applyBatch(ops)
    const records = ops.map((o, i) => ({ id: `m${i}`, source: `m${i}`, body: JSON.stringify(o) }))
    const rejects = new MemoryStore()
    const run = async (store: ObjectStore, jobs: MemoryJobQueue | FaultyQueue, recs = records) =>
      ingest(recs, { resolve: async () => ({ table: await Table.open(store), jobs }), defaultTable: 't', rejects, commitUser: 'writer-1' })
    const clean = new FaultyStore(await copyOf(base))
    const cleanJobs = new MemoryJobQueue()
    await run(clean, cleanJobs)
    const wantBuckets = new Set(cleanJobs.jobs.map((j) => `${j.partition}/${j.bucket}`))
    const allProblems: string[] = []
    let runs = 0
    const cases: { k: number; kind: FaultKind; queue: boolean }[] = []
    for (let k = 1; k <= clean.count; k++) for (const kind of KINDS) cases.push({ k, kind, queue: false })
    for (const kind of KINDS) cases.push({ k: 1, kind, queue: true })
    for (const c of cases) {
      const inner = await copyOf(base)
      const faulty = new FaultyStore(inner, c.queue ? {} : { rules: [{ at: c.k, kind: c.kind }] })
      const jobs = new MemoryJobQueue()
      const queue = new FaultyQueue(jobs, c.queue ? { rules: [{ at: 1, kind: c.kind }] } : {})
      // a handler that throws (here: the table open failed) fails the whole batch
      const all = { failedIds: records.map((r) => r.id), errors: [] as { error: string }[] }
      let res = await run(faulty, queue).catch(() => all)
      // the source redelivers what was not acked, to a fresh execution environment: half
      // the cases as the same batch, half regrouped (SQS may return each message in a
      // different batch, marked by its receive count)
      const regroup = (c.k + KINDS.indexOf(c.kind)) % 2 === 1
      const firstReceivedAt = Date.now()
      for (let i = 0; res.failedIds.length > 0 && i < 3; i++) {
        const again = records.filter((r) => res.failedIds.includes(r.id)).map((r) => ({ ...r, receiveCount: i + 2, firstReceivedAt }))
        if (!regroup) {
          res = await run(inner, jobs, again).catch(() => all)
          continue
        }
        const failedIds: string[] = []
        const errors: { error: string }[] = []
        for (let j = 0; j < again.length; j += 4) {
          const part = again.slice(j, j + 4)
          const r = await run(inner, jobs, part).catch(() => ({ failedIds: part.map((x) => x.id), errors: [] as { error: string }[] }))
          failedIds.push(...r.failedIds)
          errors.push(...r.errors)
        }
        res = { failedIds, errors }
      }
      runs++
      const label = `ingest k=${c.k} ${c.kind}${c.queue ? ' (enqueue)' : ''}`
      if (res.failedIds.length) allProblems.push(`${label}: still failing after 3 redeliveries: ${res.errors.map((e) => e.error).join('; ')}`)
      const got = new Set(jobs.jobs.map((j) => `${j.partition}/${j.bucket}`))
      for (const b of wantBuckets) if (!got.has(b)) allProblems.push(`${label}: no compaction job for ${b}`)
      allProblems.push(...(await problems(inner, model.snapshot(), label)))
    }
    summaries.push(`ingest: ${clean.count} calls, ${runs} faulted runs, ${allProblems.length} problems`)
    expect(allProblems).toEqual([])
  })

  it('with the RetryingStore in between, one transient fault at any call heals inside the operation (no redelivery), counted as one retry', async () => {
    const { store, model } = await baseTable({ bucket: '1' }, 5, 1000)
    const ops = opsOf(1100, 8)
    model.applyBatch(ops)
    // no commitUser/identifier: only the store's own putIfAbsent check keeps a lost
    // snapshot reply from committing the batch twice
    const run = (t: Table) => writeBatch(t, ops.map((o, i) => recordFromJson(t.view, o, `op ${i}`)))
    const clean = new FaultyStore(await copyOf(store))
    await Table.open(clean)
    const open = clean.count
    await run(await Table.open(clean))
    const calls = clean.count - 2 * open
    const bad: string[] = []
    for (let k = 1; k <= calls; k++) {
      for (const kind of KINDS) {
        const inner = await copyOf(store)
        const faulty = new FaultyStore(inner)
        const retrying = new RetryingStore(faulty, { sleep: async () => {} })
        const t = await Table.open(retrying)
        faulty.inject({ at: faulty.count + k, kind })
        try {
          await run(t)
          await t.snapshots.settleHints() // the LATEST rewrite goes on after the commit returns
        } catch (e) {
          bad.push(`k=${k} ${kind}: ${(e as Error).message}`)
          continue
        }
        if (retrying.retries !== 1) bad.push(`k=${k} ${kind}: ${retrying.retries} retries`)
        bad.push(...(await problems(inner, model.snapshot(), `retrying k=${k} ${kind}`)))
      }
    }
    summaries.push(`retrying write: ${calls} calls, ${calls * KINDS.length} faulted runs, ${bad.length} problems`)
    expect(bad).toEqual([])
  })
})

/**
 * The answer an S3 client gives when its own (SDK-level) retry of a conditional PUT follows
 * a lost reply: the first attempt created the object, the retry gets 412, the caller hears
 * "already exists". Not a FaultyStore kind because it is a wrong answer, not a failure.
 */
class OwnWriteLooksLost extends MemoryStore {
  hits = 0
  constructor(private readonly match: (key: string) => boolean) {
    super()
  }
  override async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    const created = await super.putIfAbsent(key, data)
    if (created && this.match(key) && this.hits++ === 0) return false
    return created
  }
}

describe('a snapshot create that landed but answered "already exists" (SDK retry after a lost reply)', () => {
  const cases: [string, (t: Table, e: { partition: Uint8Array; bucket: number }) => Promise<unknown>][] = [
    ['write with idempotency arguments', (t) => writeBatch(t, opsOf(1300, 8).map((o, i) => recordFromJson(t.view, o, `op ${i}`)), { commitUser: 'w', commitIdentifier: 9n, dedupAfterSnapshotId: 6 })],
    ['compaction', (t, e) => compactBucket(t, { partition: e.partition, bucket: e.bucket, full: true })],
  ]
  for (const [name, run] of cases) {
    it(`${name}: commits once and the snapshot keeps every file it references`, async () => {
      const { store, model, table } = await baseTable({ bucket: '1' }, 6, 1400)
      if (name.startsWith('write')) model.applyBatch(opsOf(1300, 8))
      const [e] = await table.manifests.liveEntries((await table.snapshots.latest())!)
      const odd = new OwnWriteLooksLost((k) => k === 'snapshot/snapshot-7')
      for (const o of await store.list('')) await odd.put(o.key, (await store.get(o.key))!)
      let failed = await run(await Table.open(odd), e).then(() => false, () => true)
      for (let i = 0; failed && i < 3; i++) failed = await run(await Table.open(odd), e).then(() => false, () => true)
      expect(odd.hits).toBe(1)
      expect(failed).toBe(false)
      expect(await problems(odd, model.snapshot(), name)).toEqual([])
    })
  }
})

describe('on S3 (embedded backend), sampled', () => {
  const s3: StoreFactory = s3Stores()
  beforeAll(() => s3.setup())
  afterAll(() => s3.teardown())

  it('compaction with deletion vectors: lost-reply and error at every 8th call', async () => {
    const src = await dvBase(1200)
    const e = src.target
    const seed = async (): Promise<ObjectStore> => {
      const s = s3.fresh()
      for (const o of await src.store.list('')) await s.put(o.key, (await src.store.get(o.key))!)
      return s
    }
    const run = (t: Table) => compactBucket(t, { partition: e.partition, bucket: e.bucket })
    const clean = new FaultyStore(await seed())
    const open = (await Table.open(clean), clean.count)
    await run(await Table.open(clean))
    const calls = clean.count - 2 * open
    const bad: string[] = []
    let runs = 0
    for (let k = 1; k <= calls; k += 8) {
      for (const kind of ['lost-reply', 'error'] as FaultKind[]) {
        const inner = await seed()
        const faulty = new FaultyStore(inner)
        const t = await Table.open(faulty)
        faulty.inject({ at: faulty.count + k, kind })
        runs++
        let failed = await run(t).then(() => false, () => true)
        for (let i = 0; failed && i < 3; i++) failed = await run(await Table.open(inner)).then(() => false, () => true)
        bad.push(...(await problems(inner, src.model.snapshot(), `s3 compaction k=${k} ${kind}`)))
      }
    }
    summaries.push(`s3 compaction dv: ${calls} calls, ${runs} faulted runs, ${bad.length} problems`)
    expect(bad).toEqual([])
  }, 60_000)
})
