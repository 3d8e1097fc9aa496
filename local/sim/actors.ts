// The actors of one simulation run (simulation.ts): the event sources that receive from a
// queue, invoke a function in an environment and delete what succeeded; the functions
// themselves (writer, compactor, committer) running the real lib/ code; maintenance on its
// schedule; and a consumer reading both tables incrementally.

import { BatchingCommitter } from '../../lib/commit/batching-committer.ts'
import { commitFromQueue, forwardMessages } from '../../lib/commit/commit-service.ts'
import { CommitterLease } from '../../lib/commit/committer-lease.ts'
import { Table } from '../../lib/handle/table.ts'
import type { IngestRecord } from '../../lib/ingest/parse-records.ts'
import { ingest } from '../../lib/ingest/ingest.ts'
import { stalledBucketJobs } from '../../lib/jobs/coalesce.ts'
import { bucketKeyOf, decodeJob } from '../../lib/jobs/compaction-job.ts'
import { processCompactionJobs } from '../../lib/jobs/process-jobs.ts'
import { expireSnapshots } from '../../lib/maintenance/expire.ts'
import { consumerStart, planIncremental, readPlan, recordConsumer } from '../../lib/read/incremental.ts'
import type { RowKind } from '../../lib/types.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import { type SimContext, TABLE_NAMES, type TableName, timeoutOf } from './context.ts'
import type { Received, SimQueue } from './sim-queue.ts'
import type { Env } from './world.ts'

const MAINTENANCE_EVERY_MS = 60_000
const STALLED_BUCKET_MS = 5 * 60_000
export const CONSUMER_EVERY_MS = 15_000
/** an invocation's environment dies after the handler returned, before the event source deletes (its ack is lost) */
const EXIT_AFTER_RETURN = 0.04

type Handler = (env: Env, batch: Received[], deadline: number) => Promise<string[]>

/** An event-source mapping: a queue, the function it invokes, and how many at once. */
interface Source {
  role: string
  queue: SimQueue
  concurrency: number
  batch: number
  running: number
  handler: Handler
}

type Outcome = { failed: string[] } | 'died' | 'timeout' | 'threw'

/** Starts every event source polling its queue: the writer's and each table's compactor and committer. */
export function startEventSources(ctx: SimContext): void {
  const sources: Source[] = [
    { role: 'writer', queue: ctx.ingestQueue, concurrency: 3, batch: 10, running: 0, handler: (env, batch) => writer(ctx, env, batch) },
    ...TABLE_NAMES.flatMap((name): Source[] => [
      { role: `compactor-${name}`, queue: ctx.resources.get(name)!.compaction, concurrency: 2, batch: 10, running: 0, handler: compactor(ctx, name) },
      { role: `committer-${name}`, queue: ctx.resources.get(name)!.commits, concurrency: 2, batch: 10, running: 0, handler: committer(ctx, name) },
    ]),
  ]
  const invoker = new Invoker(ctx)
  for (const s of sources) void poll(ctx, s, invoker)
}

async function poll(ctx: SimContext, s: Source, invoker: Invoker): Promise<void> {
  while (!ctx.stopping) {
    if (s.running >= s.concurrency) {
      await sleep(50)
      continue
    }
    const batch = await s.queue.receive(s.batch)
    if (batch.length === 0) {
      await sleep(200)
      continue
    }
    void invoker.invoke(s, batch)
  }
}

/** Invokes a function on a batch as Lambda does: in an environment, under a timeout, deleting what succeeded. */
class Invoker {
  private sabotaged = false

  constructor(private readonly ctx: SimContext) {}

  async invoke(s: Source, batch: Received[]): Promise<void> {
    const { ctx } = this
    const world = ctx.world
    if (ctx.o.sabotage === 'ack-without-write' && !this.sabotaged && s.role === 'writer') {
      const victim = batch.find((m) => m.body.includes('"totals"'))
      if (victim) {
        this.sabotaged = true
        await s.queue.delete([victim.receiptHandle])
        batch = batch.filter((m) => m !== victim)
      }
    }
    s.running++
    const env = ctx.acquire(s.role)
    env.busy = true
    const started = world.now
    const deadline = started + timeoutOf(s.role)
    ctx.count(`${s.role}.invocations`)
    let outcome: Outcome
    try {
      outcome = await new Promise<Outcome>((resolve) => {
        world.at(timeoutOf(s.role), () => resolve('timeout'))
        env.onDeath = () => resolve('died')
        world.within(env, () => s.handler(env, batch, deadline)).then((failed) => resolve({ failed }), (e) => {
          ctx.count(`${s.role}.threw`)
          if (ctx.o.verbose) console.log(`${s.role} ${env.id} threw: ${(e as Error).message}`)
          resolve('threw')
        })
      })
    } finally {
      env.onDeath = undefined
    }
    for (const set of ctx.compacting.values()) set.delete(env)
    if (outcome === 'timeout') {
      // Lambda ends the invocation: its process goes with it
      ctx.count(`${s.role}.timeouts`)
      world.kill(env)
    }
    if (typeof outcome === 'object') {
      if (ctx.faultsOn && ctx.rng.chance(EXIT_AFTER_RETURN)) {
        ctx.count(`${s.role}.exitAfterReturn`)
        world.kill(env)
      } else {
        const failed = new Set(outcome.failed)
        const done = batch.filter((m) => !failed.has(m.messageId)).map((m) => m.receiptHandle)
        if (done.length) await s.queue.delete(done)
      }
    } else if (outcome === 'died') ctx.count(`${s.role}.died`)
    if (s.role === 'writer') this.noteDeliveries(env, batch, started, outcome)
    env.busy = false
    s.running--
  }

  private noteDeliveries(env: Env, batch: Received[], started: number, outcome: Outcome): void {
    const { ctx } = this
    const t = ((started - ctx.world.startMs) / 1000).toFixed(1)
    const failedIds = typeof outcome === 'object' ? new Set(outcome.failed) : null
    for (const m of batch) {
      const what = failedIds === null ? outcome : failedIds.has(m.messageId) ? 'failed' : env.dead ? 'ok, ack lost' : 'ok'
      ctx.deliveries.set(m.messageId, [...(ctx.deliveries.get(m.messageId) ?? []), `#${m.receiveCount} ${env.id} @${t}s batch of ${batch.length} ${what}`])
    }
  }
}

// --- the functions ---------------------------------------------------------------------------

async function writer(ctx: SimContext, env: Env, batch: Received[]): Promise<string[]> {
  const records: IngestRecord[] = batch.map((m) => ({ id: m.messageId, source: `ingest#${m.messageId}`, body: m.body, receiveCount: m.receiveCount, firstReceivedAt: m.firstReceivedAt }))
  const res = await ingest(records, { resolve: ctx.resolveIn(env), rejects: ctx.rejects, commitUser: 'strata-writer-sim' })
  if (res.rejected) ctx.fail(`writer rejected ${res.rejected} valid record(s): ${JSON.stringify(res.errors)}`)
  if (res.failedIds.length) ctx.count('writer.failedRecords', res.failedIds.length)
  if (ctx.o.verbose && res.errors.length) console.log(`writer ${env.id} at ${ctx.world.now - ctx.world.startMs} ms: ${JSON.stringify(res.errors)}`)
  return res.failedIds
}

function compactor(ctx: SimContext, name: TableName): Handler {
  return async (env: Env, batch: Received[], deadline: number): Promise<string[]> => {
    const resolve = ctx.resolveIn(env)
    const own = await resolve(name)
    if (!own) throw new Error(`no table ${name}`)
    // a message is discarded only once its bucket's compaction is over (extras after it, the
    // last one with releaseDone): from then on another environment may take the bucket's next
    // job, so this one no longer counts as compacting it. Half the invocations release a done
    // bucket at once, so both ways of ending a job run against each other.
    const bucketOf = new Map<string, string>()
    for (const m of batch) {
      try {
        bucketOf.set(m.receiptHandle, bucketKeyOf(decodeJob(m.body, m.messageId)))
      } catch {
        // a body that is no job fails in processCompactionJobs, which says why
      }
    }
    const res = await processCompactionJobs(
      batch.map((m) => ({ id: m.messageId, body: m.body, groupId: m.groupId, receiptHandle: m.receiptHandle, receiveCount: m.receiveCount })),
      {
        resolve,
        taskThreads: 2,
        remainingMs: () => deadline - ctx.world.now,
        giveBack: (ms) => own.jobs.giveBack(ms),
        discard: async (hs) => {
          for (const h of hs) ctx.compacting.get(bucketOf.get(h) ?? '')?.delete(env)
          await own.jobs.discard(hs)
        },
        releaseDone: ctx.rng.chance(0.5),
        onStart: (job) => {
          const k = bucketKeyOf(job)
          const set = ctx.compacting.get(k) ?? new Set<Env>()
          ctx.compacting.set(k, set)
          for (const other of set) if (other !== env && !other.dead) ctx.fail(`bucket ${k} compacted by ${env.id} while ${other.id} still compacts it`)
          set.add(env)
          ctx.count('compactions.started')
        },
        onOutcome: (x) => {
          if (x.result.snapshotId !== null) ctx.count('compactions.landed')
        },
      },
    )
    return res.failedIds
  }
}

function committer(ctx: SimContext, name: TableName): Handler {
  return async (env: Env, batch: Received[], deadline: number): Promise<string[]> => {
    const own = (await ctx.resolveIn(env)(name))!
    const started = ctx.world.now
    const res = await commitFromQueue(
      new BatchingCommitter(own.table),
      batch.map((m) => ({ id: m.messageId, body: m.body, receiptHandle: m.receiptHandle })),
      {
        tableName: name,
        drain: { queue: own.commitQueue, max: 1000 },
        moreRounds: () => ctx.world.now - started < 20_000 && deadline - ctx.world.now > 15_000,
        lease: { lease: new CommitterLease(own.table.store), forward: (msgs) => forwardMessages(own.commitQueue, msgs) },
      },
    )
    ctx.count('commits.snapshots', res.snapshots.length)
    ctx.count('commits.forwarded', res.forwarded)
    return res.failedIds
  }
}

// --- maintenance on a schedule, and a consumer of both tables --------------------------------

export async function maintenance(ctx: SimContext): Promise<void> {
  while (!ctx.stopping) {
    await sleep(MAINTENANCE_EVERY_MS)
    const env = ctx.acquire('maintenance')
    env.busy = true
    ctx.count('maintenance.runs')
    await ctx.runIn(env, async () => {
      const resolve = ctx.resolveIn(env)
      for (const name of TABLE_NAMES) {
        try {
          const own = (await resolve(name))!
          await expireSnapshots(own.table)
          const jobs = await stalledBucketJobs(name, own.table, Date.now(), STALLED_BUCKET_MS)
          ctx.count('maintenance.sweptJobs', jobs.length)
          await own.jobs.enqueue(jobs)
        } catch (e) {
          ctx.count('maintenance.failed')
          if (ctx.o.verbose) console.log(`maintenance ${name}: ${(e as Error).message}`)
        }
      }
    })
    env.busy = false
  }
}

/**
 * A reader process, not a Lambda: when it dies it starts again, its progress in its consumer
 * file. What it read goes to ctx.consumed.
 */
export class Consumer {
  private env: Env
  private tables = new Map<TableName, Table>()
  /** per table, the end of the range last applied (the application keeps it with its output) */
  private readonly appliedTo = new Map<TableName, number>()

  constructor(private readonly ctx: SimContext) {
    this.env = ctx.world.newEnv('consumer', 0)
  }

  async run(): Promise<void> {
    const ctx = this.ctx
    while (!ctx.stopping) {
      await sleep(CONSUMER_EVERY_MS)
      if (this.env.dead) {
        this.env = ctx.world.newEnv('consumer', 0)
        this.tables = new Map()
        ctx.count('consumer.restarts')
      }
      await ctx.runIn(this.env, async () => {
        for (const name of TABLE_NAMES) await this.consumeOnce(name)
      })
    }
  }

  private async consumeOnce(name: TableName): Promise<void> {
    const ctx = this.ctx
    try {
      let t = this.tables.get(name)
      if (!t) this.tables.set(name, (t = await Table.open(ctx.storeOf(ctx.resources.get(name)!.uri))))
      const from = await consumerStart(t, 'sim', 0)
      // the application keeps the end of the range it last applied with its output: a
      // range delivered before a crash kept the progress from being recorded is read
      // again, not applied again (delivery is at least once; applying is exactly once)
      const applied = this.appliedTo.get(name) ?? 0
      const plan = await planIncremental(t, from < applied ? { fromSnapshot: from, toSnapshot: applied, mode: 'delta' } : { fromSnapshot: from, mode: 'delta' })
      if (plan.to <= from) return
      const rows: { kind: RowKind; row: unknown[] }[] = []
      for await (const batch of readPlan(t, plan)) rows.push(...batch)
      if (plan.to > applied) {
        const m = ctx.consumed.get(name)!
        for (const r of rows) {
          const key = String(r.row[0])
          const c = m.get(key) ?? { qty: 0, n: 0 }
          if (name === 'totals') {
            c.qty += Number(r.row[1])
            c.n += Number(r.row[2])
          } else c.qty = Math.max(c.qty, Number(r.row[1]))
          m.set(key, c)
        }
        this.appliedTo.set(name, plan.to)
      }
      // delivered: only now does the consumer's progress move
      await recordConsumer(t, 'sim', plan)
      ctx.count('consumer.rows', rows.length)
    } catch (e) {
      ctx.count('consumer.failed')
      if (ctx.o.verbose) console.log(`consumer ${name}: ${(e as Error).message}`)
    }
  }
}
