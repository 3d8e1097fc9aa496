// Redelivery storms against the real handlers (writerHandler, compactorHandler) with
// hand-built SQS events, on memory:// tables: every message is delivered one to three
// times, in any order the queue allows, and the final table must equal the model.
//   ingest (standard queue): batches arrive in any order, each one to three times. The
//     table sums `qty` and takes the max of `hi`, so order does not matter and a
//     duplicate shows in the sum.
//   compaction (FIFO): per message group strictly in order, an invocation taking a
//     contiguous run of the group that may start anywhere in the already-processed prefix
//     (a redelivery after a lost ack), groups interleaved arbitrarily.
// Deletion vectors are on, so readers skip level 0: the table equals the model only if the
// redelivered compactions really compacted every bucket.

import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { compactorHandler } from '../functions/compactor.ts'
import { resetRuntime } from '../functions/shared/runtime.ts'
import { writerHandler } from '../functions/writer.ts'
import { type CompactionJob, messageGroupId } from '../lib/jobs/compaction-job.ts'
import { readAll } from '../lib/read/table-read.ts'
import { openStore } from '../lib/store/open-store.ts'
import { Table } from '../lib/handle/table.ts'
import { sqsEvent, sqsRecord } from './helpers/lambda.ts'

const SCHEMA = {
  fields: [
    { name: 'id', type: 'INT' },
    { name: 'qty', type: 'BIGINT' },
    { name: 'hi', type: 'INT' },
  ],
  primaryKeys: ['id'],
  options: {
    bucket: '3',
    'merge-engine': 'aggregation',
    'fields.qty.aggregate-function': 'sum',
    'fields.hi.aggregate-function': 'max',
    'deletion-vectors.enabled': 'true',
  },
}

let n = 0
const saved = { ...process.env }
afterEach(() => {
  process.env = { ...saved }
  resetRuntime()
})

/** dv: false makes level-0 rows readable at once, for tests of the writer alone */
async function freshTable({ dv = true } = {}): Promise<{ name: string; table: Table }> {
  const name = `storm${n++}-${process.pid}`
  const uri = `memory://${name}`
  const schema = dv ? SCHEMA : { ...SCHEMA, options: { ...SCHEMA.options, 'deletion-vectors.enabled': 'false' } }
  const table = await Table.create(openStore(uri), schema)
  process.env.STRATA_TABLES = JSON.stringify({ [name]: { uri } })
  process.env.STRATA_REJECT_URI = `memory://${name}-rejects`
  resetRuntime()
  return { name, table }
}

interface Msg {
  messageId: string
  body: string
}

const recordArb = fc.record({ id: fc.integer({ min: 0, max: 9 }), qty: fc.integer({ min: -50, max: 50 }), hi: fc.integer({ min: -100, max: 100 }) })

/** Batches of ingest messages, and the order their deliveries arrive in (each 1-3 times). */
const ingestStorm = fc
  .array(fc.array(recordArb, { minLength: 1, maxLength: 5 }), { minLength: 1, maxLength: 5 })
  .chain((batches) =>
    fc.tuple(
      fc.constant(batches),
      fc.array(fc.integer({ min: 1, max: 3 }), { minLength: batches.length, maxLength: batches.length }),
    ).chain(([b, times]) => fc.tuple(fc.constant(b), fc.shuffledSubarray(times.flatMap((t, i) => Array(t).fill(i)) as number[], { minLength: times.reduce((a, x) => a + x, 0) }))),
  )

/**
 * A FIFO delivery plan for groups of `sizes[g]` messages: a list of (group, start, end)
 * invocations where start ≤ the group's processed frontier (a redelivered prefix) and every
 * message is delivered at least once and at most three times.
 */
function fifoPlan(sizes: number[]): fc.Arbitrary<[number, number, number][]> {
  return fc
    .tuple(
      ...sizes.map((size) =>
        fc.array(fc.tuple(fc.integer({ min: 0, max: 2 }), fc.integer({ min: 1, max: 3 })), { minLength: size, maxLength: size * 3 }).map((steps) => {
          // walk the group: each step backs up a little (redelivery) and takes a run
          const out: [number, number][] = []
          const seen = new Array(size).fill(0)
          let frontier = 0
          for (const [back, len] of steps) {
            if (frontier >= size) break
            let start = Math.max(0, frontier - back)
            while (start < frontier && seen[start] >= 3) start++
            const end = Math.min(size, Math.max(frontier + 1, start + len))
            if (seen.slice(start, end).some((c) => c >= 3)) continue
            for (let i = start; i < end; i++) seen[i]++
            out.push([start, end])
            frontier = Math.max(frontier, end)
          }
          if (frontier < size) out.push([frontier, size])
          return out
        }),
      ),
    )
    .chain((perGroup) => {
      // interleave the groups' invocation lists, keeping each group's own order
      const tags = perGroup.flatMap((inv, g) => inv.map(() => g))
      return fc.shuffledSubarray(tags, { minLength: tags.length }).map((order) => {
        const next = perGroup.map(() => 0)
        return order.map((g) => [g, ...perGroup[g][next[g]++]] as [number, number, number])
      })
    })
}

async function jobsSince(name: string, table: Table, after: number): Promise<CompactionJob[][]> {
  const t = await Table.open(table.store)
  const latest = await t.snapshots.latestId()
  const groups = new Map<string, CompactionJob[]>()
  for (let id = after + 1; id <= latest; id++) {
    const s = (await t.snapshots.snapshot(id))!
    if (s.commitKind !== 'APPEND') continue
    for (const e of await t.manifests.deltaEntries(s)) {
      const job: CompactionJob = { table: name, partition: '', partitionBytes: Buffer.from(e.partition).toString('base64'), bucket: e.bucket, snapshotId: id, enqueuedAt: 0 }
      const g = messageGroupId(job)
      const list = groups.get(g) ?? []
      if (!list.some((j) => j.snapshotId === id)) list.push(job)
      groups.set(g, list)
    }
  }
  return [...groups.values()]
}

async function writeStorm(batches: { id: number; qty: number; hi: number }[][], order: number[], tag: string, model: Map<number, { qty: bigint; hi: number }>) {
  const msgs: Msg[][] = batches.map((b, i) => b.map((r, j) => ({ messageId: `${tag}-${i}-${j}`, body: JSON.stringify(r) })))
  for (const i of order) {
    const res = await writerHandler(sqsEvent(msgs[i].map((m) => sqsRecord(m.body, { messageId: m.messageId }))))
    expect(res.batchItemFailures).toEqual([])
  }
  for (const b of batches) {
    for (const r of b) {
      const cur = model.get(r.id)
      model.set(r.id, cur ? { qty: cur.qty + BigInt(r.qty), hi: Math.max(cur.hi, r.hi) } : { qty: BigInt(r.qty), hi: r.hi })
    }
  }
}

async function compactStorm(groups: CompactionJob[][], plan: [number, number, number][]) {
  const records = groups.map((jobs) => jobs.map((j) => sqsRecord(JSON.stringify(j), { groupId: messageGroupId(j), queue: 'compaction.fifo' })))
  for (const [g, start, end] of plan) {
    const res = await compactorHandler(sqsEvent(records[g].slice(start, end)))
    expect(res.batchItemFailures).toEqual([])
  }
}

function modelRows(model: Map<number, { qty: bigint; hi: number }>) {
  return [...model.entries()].sort(([a], [b]) => a - b).map(([id, v]) => [id, v.qty, v.hi])
}

describe('redelivery storms through the writer and compactor handlers', () => {
  it('ingest batches in any order, each 1-3 times, then FIFO compaction jobs with repeated prefixes, twice over: the table equals the model', async () => {
    let runs = 0
    await fc.assert(
      fc.asyncProperty(
        ingestStorm,
        ingestStorm,
        fc.integer({ min: 0, max: 1_000_000 }),
        async ([b1, o1], [b2, o2], seed) => {
          runs++
          const { name, table } = await freshTable()
          const model = new Map<number, { qty: bigint; hi: number }>()
          await writeStorm(b1, o1, 'a', model)
          const g1 = await jobsSince(name, table, 0)
          await compactStorm(g1, fc.sample(fifoPlan(g1.map((g) => g.length)), { seed, numRuns: 1 })[0])
          const mid = await (await Table.open(table.store)).snapshots.latestId()
          await writeStorm(b2, o2, 'b', model)
          const g2 = await jobsSince(name, table, mid)
          await compactStorm(g2, fc.sample(fifoPlan(g2.map((g) => g.length)), { seed: seed + 1, numRuns: 1 })[0])
          const rows = (await readAll(await Table.open(table.store))).sort((x, y) => (x[0] as number) - (y[0] as number))
          expect(rows).toEqual(modelRows(model))
        },
      ),
      { numRuns: 25, interruptAfterTimeLimit: 20_000 },
    )
    expect(runs).toBeGreaterThan(5)
  })

  it('a committed message redelivered in a different batch is not written twice', async () => {
    const { table } = await freshTable({ dv: false })
    const first = Date.now()
    const m1 = sqsRecord(JSON.stringify({ id: 1, qty: 5, hi: 0 }), { messageId: 'm1' })
    const m2 = sqsRecord(JSON.stringify({ id: 2, qty: 7, hi: 0 }), { messageId: 'm2' })
    const m3 = sqsRecord(JSON.stringify({ id: 3, qty: 1, hi: 0 }), { messageId: 'm3' })
    expect((await writerHandler(sqsEvent([m1, m2]))).batchItemFailures).toEqual([])
    // the ack of m1 was lost; it comes back beside a new message, received for the second time
    const again = sqsRecord(m1.body, { messageId: 'm1', receiveCount: 2, firstReceivedAt: first })
    expect((await writerHandler(sqsEvent([again, m3]))).batchItemFailures).toEqual([])
    // and once more, alone
    expect((await writerHandler(sqsEvent([sqsRecord(m1.body, { messageId: 'm1', receiveCount: 3, firstReceivedAt: first })]))).batchItemFailures).toEqual([])
    const t = await Table.open(table.store)
    const rows = (await readAll(t)).sort((x, y) => (x[0] as number) - (y[0] as number))
    expect(rows.map((r) => r[1])).toEqual([5n, 7n, 1n])
    // m1 alone landed nothing: two APPEND snapshots in all
    expect(await t.snapshots.latestId()).toBe(2)
  })

  it('a redelivered message whose earlier attempt died before committing is written (once)', async () => {
    const { table } = await freshTable({ dv: false })
    const first = Date.now()
    const m1 = sqsRecord(JSON.stringify({ id: 1, qty: 5, hi: 0 }), { messageId: 'm1' })
    const m2 = sqsRecord(JSON.stringify({ id: 2, qty: 7, hi: 0 }), { messageId: 'm2' })
    // the first attempt wrote its marker, index and data files, then died before the snapshot
    await expect(writerHandler(sqsEvent([m1, m2]), undefined, { beforeSnapshotCreate: () => { throw new Error('killed') } })).resolves.toEqual({
      batchItemFailures: [{ itemIdentifier: 'm1' }, { itemIdentifier: 'm2' }],
    })
    const m3 = sqsRecord(JSON.stringify({ id: 3, qty: 1, hi: 0 }), { messageId: 'm3' })
    expect((await writerHandler(sqsEvent([sqsRecord(m1.body, { messageId: 'm1', receiveCount: 2, firstReceivedAt: first }), m3]))).batchItemFailures).toEqual([])
    expect((await writerHandler(sqsEvent([sqsRecord(m2.body, { messageId: 'm2', receiveCount: 2, firstReceivedAt: first })]))).batchItemFailures).toEqual([])
    const rows = (await readAll(await Table.open(table.store))).sort((x, y) => (x[0] as number) - (y[0] as number))
    expect(rows.map((r) => r[1])).toEqual([5n, 7n, 1n])
  })

  it('messages regrouped freely: each delivered 1-3 times in any batches, some attempts dying before or after the commit: the table equals the model', async () => {
    // a standard queue: a message whose attempt failed or whose ack was lost returns in any
    // later batch, beside any others; ApproximateReceiveCount counts its deliveries
    const storm = fc
      .array(recordArb, { minLength: 1, maxLength: 12 })
      .chain((recs) =>
        fc.tuple(
          fc.constant(recs),
          // deliveries: message index per delivery, in arrival order, each message 1-3 times
          fc.array(fc.integer({ min: 1, max: 3 }), { minLength: recs.length, maxLength: recs.length }).chain((times) =>
            fc.shuffledSubarray(times.flatMap((t, i) => Array(t).fill(i)) as number[], { minLength: times.reduce((a, x) => a + x, 0) }),
          ),
          fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 36, maxLength: 36 }), // batch sizes
          fc.array(fc.constantFrom('ok', 'ok', 'ok', 'die-before-commit', 'lose-ack'), { minLength: 36, maxLength: 36 }),
        ),
      )
    await fc.assert(
      fc.asyncProperty(storm, async ([recs, deliveries, sizes, fates]) => {
        const { table } = await freshTable({ dv: false })
        const received = new Map<number, { count: number; first: number }>()
        const queue = [...deliveries]
        let b = 0
        while (queue.length) {
          // a batch holds distinct messages (SQS never puts one message twice in a batch)
          const batch: number[] = []
          while (queue.length && batch.length < sizes[b % sizes.length]) {
            const i = queue.findIndex((m) => !batch.includes(m))
            if (i < 0) break
            batch.push(queue.splice(i, 1)[0])
          }
          const fate = fates[b % fates.length]
          b++
          const event = sqsEvent(
            batch.map((m) => {
              const r = received.get(m) ?? { count: 0, first: Date.now() }
              r.count++
              received.set(m, r)
              return sqsRecord(JSON.stringify(recs[m]), { messageId: `msg-${m}`, receiveCount: r.count, firstReceivedAt: r.first })
            }),
          )
          const hooks = fate === 'die-before-commit' ? { beforeSnapshotCreate: () => { throw new Error('killed') } } : {}
          const res = await writerHandler(event, undefined, hooks)
          const failed = new Set(res.batchItemFailures.map((f) => f.itemIdentifier))
          for (const m of batch) {
            // a failed or unacknowledged message comes back, as the queue would
            if ((failed.has(`msg-${m}`) || fate === 'lose-ack') && !queue.includes(m)) queue.push(m)
          }
          // an attempt that dies fails every message it had to write; ones found committed are acked
          if (fate === 'die-before-commit') for (const m of batch) if (received.get(m)!.count === 1) expect(failed.has(`msg-${m}`)).toBe(true)
          if (b > 200) throw new Error('storm did not drain')
        }
        const model = new Map<number, { qty: bigint; hi: number }>()
        for (const r of recs) {
          const cur = model.get(r.id)
          model.set(r.id, cur ? { qty: cur.qty + BigInt(r.qty), hi: Math.max(cur.hi, r.hi) } : { qty: BigInt(r.qty), hi: r.hi })
        }
        const rows = (await readAll(await Table.open(table.store))).sort((x, y) => (x[0] as number) - (y[0] as number))
        expect(rows).toEqual(modelRows(model))
      }),
      { numRuns: 30, interruptAfterTimeLimit: 20_000 },
    )
  })
})
