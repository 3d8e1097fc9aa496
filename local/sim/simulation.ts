// The deterministic simulation of the whole pipeline (docs/reliability.md "The deterministic
// simulation"). One seed drives a world (world.ts) in which writers, committers (lease,
// forwarding, folding), compactors, maintenance and a consumer run the real lib/ code
// against an in-memory store and simulated SQS queues (sim-queue.ts), each Lambda
// invocation in an execution environment of its own that may die at any request, time out,
// run with a skewed clock, or lose its acknowledgement. After every step the invariants
// below are checked; the first one broken ends the run, and its seed replays it exactly.

import { BatchingCommitter } from '../../lib/commit/batching-committer.ts'
import { commitFromQueue, forwardMessages } from '../../lib/commit/commit-service.ts'
import { COMMITTER_LEASE_KEY, COMMITTER_LEASE_TTL_MS, CommitterLease } from '../../lib/commit/committer-lease.ts'
import { QueuedCommitter } from '../../lib/commit/queued-committer.ts'
import { type IngestRecord, ingest } from '../../lib/ingest/ingest.ts'
import { stalledBucketJobs } from '../../lib/jobs/coalesce.ts'
import { bucketKeyOf } from '../../lib/jobs/compaction-job.ts'
import { processCompactionJobs } from '../../lib/jobs/process-jobs.ts'
import { expireSnapshots } from '../../lib/maintenance/expire.ts'
import { removeOrphanFiles } from '../../lib/maintenance/orphans.ts'
import { snapshotReferences } from '../../lib/maintenance/references.ts'
import { consumerStart, planIncremental, readPlan, recordConsumer } from '../../lib/read/incremental.ts'
import { readAll } from '../../lib/read/table-read.ts'
import { MemoryStore } from '../../lib/store/memory-store.ts'
import type { ObjectStore } from '../../lib/store/object-store.ts'
import { RetryingStore } from '../../lib/store/retrying-store.ts'
import { SCHEMA_DIR } from '../../lib/table/paths.ts'
import { Table } from '../../lib/handle/table.ts'
import { RowKind } from '../../lib/types.ts'
import { setTimeout as sleep } from 'node:timers/promises'
import { type Received, SimCommitQueue, SimJobQueue, SimQueue } from './sim-queue.ts'
import { SimStore } from './sim-store.ts'
import { type Env, NO_FAULTS, type RequestFaults, World } from './world.ts'

export interface SimOptions {
  seed: number
  /** virtual milliseconds of load (messages sent), faults armed throughout */
  loadMs?: number
  /** ingest messages per virtual second */
  rate?: number
  /** after the load, everything must drain within this much virtual time */
  drainWithinMs?: number
  /** inject faults (off: latency and scheduling only) */
  faults?: boolean
  /** virtual milliseconds between the full checks of the table (the cheap ones run every step) */
  checkEveryMs?: number
  /** print what failed in the functions (for debugging a seed) */
  verbose?: boolean
  /**
   * A deliberate defect, to show the checks catch it: 'ack-without-write' acknowledges one
   * totals message without handing it to a writer (the loss the soak saw, made on purpose).
   */
  sabotage?: 'ack-without-write'
}

export interface SimResult {
  seed: number
  ok: boolean
  /** the first invariant broken, with what the run knew then */
  failure?: string
  /** a digest of everything that happened, in order: equal for two runs of one seed */
  trace: string
  steps: number
  virtualMs: number
  /** when the pipeline had drained after the load, in virtual ms after the load ended */
  drainedAfterMs: number | null
  stats: Record<string, number>
}

/**
 * The documented bound on the writer and follow-up jobs of one bucket on its queue, the one
 * in flight included (docs/design.md "Compaction jobs": three, and one more for a job sent
 * again under a still-current key past SQS's five-minute deduplication window); the
 * maintenance sweep's jobs are counted apart.
 */
export const JOBS_PER_BUCKET_BOUND = 4

const TABLES = {
  totals: {
    fields: [{ name: 'customer', type: 'STRING' }, { name: 'qty', type: 'BIGINT' }, { name: 'n', type: 'BIGINT' }],
    primaryKeys: ['customer'],
    options: {
      bucket: '2', 'deletion-vectors.enabled': 'true', 'merge-engine': 'aggregation', 'fields.qty.aggregate-function': 'sum', 'fields.n.aggregate-function': 'sum',
      'compaction.task-threads': '2', 'compaction.max-input-files': '3', 'snapshot.time-retained': '10 min', 'snapshot.num-retained.min': '3',
    },
  },
  orders: {
    fields: [{ name: 'id', type: 'BIGINT' }, { name: 'version', type: 'BIGINT' }, { name: 'v', type: 'STRING' }],
    primaryKeys: ['id'],
    options: {
      bucket: '2', 'deletion-vectors.enabled': 'true', 'sequence.field': 'version', 'compaction.task-threads': '2', 'num-sorted-run.compaction-trigger': '3',
      'snapshot.time-retained': '10 min', 'snapshot.num-retained.min': '3',
    },
  },
} as const
type TableName = keyof typeof TABLES
const TABLE_NAMES = Object.keys(TABLES) as TableName[]
const TOTALS_KEYS = 8
const ORDER_KEYS = 20

const WRITER_TIMEOUT_MS = 60_000
const COMPACTOR_TIMEOUT_MS = 120_000
const COMMITTER_TIMEOUT_MS = 60_000
const MAINTENANCE_TIMEOUT_MS = 120_000
/** the stack's visibility timeouts are 6 × the function timeout (cdk/constructs/ingest.ts) */
const VISIBILITY_FACTOR = 6
const MAX_RECEIVE_COUNT = 5
const MAINTENANCE_EVERY_MS = 60_000
const STALLED_BUCKET_MS = 5 * 60_000
const CONSUMER_EVERY_MS = 15_000

/** Request faults while the load runs (none during the drain: the pipeline must heal). */
const LOAD_FAULTS: RequestFaults = { error: 0.01, lostReply: 0.005, lateApply: 0.002, death: 0.0005, slow: 0.02 }
/** an invocation's environment dies after the handler returned, before the event source deletes (its ack is lost) */
const EXIT_AFTER_RETURN = 0.04
/** an idle environment is replaced (a cold start next time) */
const RESTART = 0.03

class Failure extends Error {}

interface Sent {
  table: TableName
  key: string
  qty: number
  version: number
  value: string
}

/** One table's resources, as the stack makes them: a compaction queue and a commit queue. */
interface TableResources {
  name: TableName
  uri: string
  compaction: SimQueue
  commits: SimQueue
}

/** What an environment keeps warm: a table handle and its queue ports per table. */
interface Warm {
  table: Table
  jobs: SimJobQueue
  commitQueue: SimCommitQueue
  committer: QueuedCommitter
}

export async function runSimulation(o: SimOptions): Promise<SimResult> {
  const loadMs = o.loadMs ?? 90_000
  const rate = o.rate ?? 4
  const drainWithinMs = o.drainWithinMs ?? 30 * 60_000
  const checkEveryMs = o.checkEveryMs ?? 10_000
  const world = new World(o.seed)
  const rng = world.rng.fork('pipeline')
  const queueRng = world.rng.fork('queues')
  const raw = new MemoryStore({ uri: 'memory://sim' })
  const stats: Record<string, number> = {}
  const count = (k: string, n = 1) => (stats[k] = (stats[k] ?? 0) + n)
  let failure: string | null = null
  const fail = (what: string) => {
    failure ??= `${what} (virtual ${((world.now - world.startMs) / 1000).toFixed(1)} s)`
  }
  const sent = new Map<string, Sent>()
  // the code's stores: every request through the world, retried as production retries
  const sim = new SimStore(raw, world)
  const storeOf = (uri: string): ObjectStore => new RetryingStore(new PrefixStore(sim, uri))
  // no compression thread: its worker would run on real time
  const memorySize = process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE
  process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE = '1024'
  world.install()
  let steps = 0
  let drainedAfterMs: number | null = null
  let endedAt = world.startMs
  try {
    const ingestQueue = new SimQueue('ingest', world, queueRng.fork('ingest'), { fifo: false, visibilityMs: VISIBILITY_FACTOR * WRITER_TIMEOUT_MS, maxReceiveCount: MAX_RECEIVE_COUNT })
    const resources = new Map<TableName, TableResources>()
    for (const name of TABLE_NAMES) {
      resources.set(name, {
        name,
        uri: `tables/${name}/`,
        compaction: new SimQueue(`${name}-compaction`, world, queueRng.fork(name), { fifo: true, visibilityMs: VISIBILITY_FACTOR * COMPACTOR_TIMEOUT_MS, maxReceiveCount: MAX_RECEIVE_COUNT }),
        commits: new SimQueue(`${name}-commits`, world, queueRng.fork(`${name}c`), { fifo: true, visibilityMs: VISIBILITY_FACTOR * COMMITTER_TIMEOUT_MS, maxReceiveCount: MAX_RECEIVE_COUNT }),
      })
      await Table.create(new PrefixStore(raw, `tables/${name}/`), TABLES[name])
    }
    const rejects = new MemoryStore({ uri: 'memory://rejects' })

    // --- environments ----------------------------------------------------------------------
    const warm = new WeakMap<Env, Map<TableName, Promise<Warm>>>()
    const resolveIn = (env: Env) => (name: string): Promise<Warm | null> => {
      if (!(name in TABLES)) return Promise.resolve(null)
      let m = warm.get(env)
      if (!m) warm.set(env, (m = new Map()))
      let w = m.get(name as TableName)
      if (!w) {
        const r = resources.get(name as TableName)!
        w = Table.open(storeOf(r.uri)).then((table) => {
          const commitQueue = new SimCommitQueue(r.commits)
          return { table, jobs: new SimJobQueue(r.compaction, false), commitQueue, committer: new QueuedCommitter(table, commitQueue, { tableName: name, timeoutMs: timeoutOf(env.role) - 10_000 }) }
        })
        w.catch(() => m.delete(name as TableName))
        m.set(name as TableName, w)
      }
      return w
    }
    const skewRng = rng.fork('skew')
    // Lambda hosts keep NTP time; an hour off is drawn for committers only, where the
    // lease must survive it. Elsewhere retention and the per-record index of redeliveries
    // assume clocks within minutes (docs/reliability.md "What it does not model").
    const drawSkew = (role: string) => {
      if (!o.faults) return 0
      const r = skewRng.float()
      if (r < 0.8) return skewRng.int(-200, 200)
      if (r < 0.95 || !role.startsWith('committer')) return skewRng.int(-5_000, 5_000)
      return skewRng.pick([-3_600_000, 3_600_000])
    }
    const pools = new Map<string, Env[]>()
    const acquire = (role: string): Env => {
      const pool = pools.get(role) ?? []
      pools.set(role, pool)
      for (const e of pool) {
        if (e.dead || e.busy) continue
        if (o.faults && faultsOn && rng.chance(RESTART)) {
          world.kill(e)
          count(`${role}.restarts`)
          continue
        }
        return e
      }
      const e = world.newEnv(role, drawSkew(role))
      pool.push(e)
      count(`${role}.coldStarts`)
      return e
    }

    /** Runs `fn` in `env`; 'died' as soon as the environment dies (its code never resumes). */
    const runIn = <T>(env: Env, fn: () => Promise<T>): Promise<T | 'died'> =>
      new Promise<T | 'died'>((resolve, reject) => {
        env.onDeath = () => resolve('died')
        world.within(env, fn).then(resolve, reject)
      }).finally(() => (env.onDeath = undefined))

    // --- the event sources: receive, invoke, delete what succeeded ----------------------------
    interface Source {
      role: string
      queue: SimQueue
      concurrency: number
      batch: number
      running: number
      handler: (env: Env, batch: Received[], deadline: number) => Promise<string[]>
    }
    /** per bucket, the live invocations compacting it (serialization check) */
    const compacting = new Map<string, Set<Env>>()
    let faultsOn = !!o.faults
    let stopping = false
    /** ingest message id → each delivery: environment, virtual second, what became of it */
    const deliveries = new Map<string, string[]>()
    let sabotaged = false
    const invoke = async (s: Source, batch: Received[]) => {
      if (o.sabotage === 'ack-without-write' && !sabotaged && s.role === 'writer') {
        const victim = batch.find((m) => m.body.includes('"totals"'))
        if (victim) {
          sabotaged = true
          await s.queue.delete([victim.receiptHandle])
          batch = batch.filter((m) => m !== victim)
        }
      }
      s.running++
      const env = acquire(s.role)
      env.busy = true
      const started = world.now
      const deadline = started + timeoutOf(s.role)
      count(`${s.role}.invocations`)
      let outcome: { failed: string[] } | 'died' | 'timeout' | 'threw'
      try {
        outcome = await new Promise<{ failed: string[] } | 'died' | 'timeout' | 'threw'>((resolve) => {
          world.at(timeoutOf(s.role), () => resolve('timeout'))
          env.onDeath = () => resolve('died')
          world.within(env, () => s.handler(env, batch, deadline)).then((failed) => resolve({ failed }), (e) => {
            count(`${s.role}.threw`)
            if (o.verbose) console.log(`${s.role} ${env.id} threw: ${(e as Error).message}`)
            resolve('threw')
          })
        })
      } finally {
        env.onDeath = undefined
      }
      for (const set of compacting.values()) set.delete(env)
      if (outcome === 'timeout') {
        // Lambda ends the invocation: its process goes with it
        count(`${s.role}.timeouts`)
        world.kill(env)
      }
      if (typeof outcome === 'object') {
        if (faultsOn && rng.chance(EXIT_AFTER_RETURN)) {
          count(`${s.role}.exitAfterReturn`)
          world.kill(env)
        } else {
          const failed = new Set(outcome.failed)
          const done = batch.filter((m) => !failed.has(m.messageId)).map((m) => m.receiptHandle)
          if (done.length) await s.queue.delete(done)
        }
      } else if (outcome === 'died') count(`${s.role}.died`)
      if (s.role === 'writer') {
        const t = ((started - world.startMs) / 1000).toFixed(1)
        const failedIds = typeof outcome === 'object' ? new Set(outcome.failed) : null
        for (const m of batch) {
          const what = failedIds === null ? outcome : failedIds.has(m.messageId) ? 'failed' : env.dead ? 'ok, ack lost' : 'ok'
          deliveries.set(m.messageId, [...(deliveries.get(m.messageId) ?? []), `#${m.receiveCount} ${env.id} @${t}s batch of ${batch.length} ${what}`])
        }
      }
      env.busy = false
      s.running--
    }
    const poll = async (s: Source) => {
      while (!stopping) {
        if (s.running >= s.concurrency) {
          await sleep(50)
          continue
        }
        const batch = await s.queue.receive(s.batch)
        if (batch.length === 0) {
          await sleep(200)
          continue
        }
        void invoke(s, batch)
      }
    }

    // --- the functions -----------------------------------------------------------------------
    const writer = async (env: Env, batch: Received[]): Promise<string[]> => {
      const records: IngestRecord[] = batch.map((m) => ({ id: m.messageId, source: `ingest#${m.messageId}`, body: m.body, receiveCount: m.receiveCount, firstReceivedAt: m.firstReceivedAt }))
      const res = await ingest(records, { resolve: resolveIn(env), rejects, commitUser: 'strata-writer-sim' })
      if (res.rejected) fail(`writer rejected ${res.rejected} valid record(s): ${JSON.stringify(res.errors)}`)
      if (res.failedIds.length) count('writer.failedRecords', res.failedIds.length)
      if (o.verbose && res.errors.length) console.log(`writer ${env.id} at ${world.now - world.startMs} ms: ${JSON.stringify(res.errors)}`)
      return res.failedIds
    }
    const compactor = (name: TableName) => async (env: Env, batch: Received[], deadline: number): Promise<string[]> => {
      const resolve = resolveIn(env)
      const own = await resolve(name)
      if (!own) throw new Error(`no table ${name}`)
      const res = await processCompactionJobs(
        batch.map((m) => ({ id: m.messageId, body: m.body, groupId: m.groupId, receiptHandle: m.receiptHandle, receiveCount: m.receiveCount })),
        {
          resolve,
          taskThreads: 2,
          remainingMs: () => deadline - world.now,
          giveBack: (ms) => own.jobs.giveBack(ms),
          discard: (hs) => own.jobs.discard(hs),
          onStart: (job) => {
            const k = bucketKeyOf(job)
            const set = compacting.get(k) ?? new Set<Env>()
            compacting.set(k, set)
            for (const other of set) if (other !== env && !other.dead) fail(`bucket ${k} compacted by ${env.id} while ${other.id} still compacts it`)
            set.add(env)
            count('compactions.started')
          },
          onOutcome: (x) => {
            if (x.result.snapshotId !== null) count('compactions.landed')
          },
        },
      )
      return res.failedIds
    }
    const committer = (name: TableName) => async (env: Env, batch: Received[], deadline: number): Promise<string[]> => {
      const own = (await resolveIn(env)(name))!
      const started = world.now
      const res = await commitFromQueue(
        new BatchingCommitter(own.table),
        batch.map((m) => ({ id: m.messageId, body: m.body, receiptHandle: m.receiptHandle })),
        {
          tableName: name,
          drain: { queue: own.commitQueue, max: 1000 },
          moreRounds: () => world.now - started < 20_000 && deadline - world.now > 15_000,
          lease: { lease: new CommitterLease(own.table.store), forward: (msgs) => forwardMessages(own.commitQueue, msgs) },
        },
      )
      count('commits.snapshots', res.snapshots.length)
      count('commits.forwarded', res.forwarded)
      return res.failedIds
    }
    const sources: Source[] = [
      { role: 'writer', queue: ingestQueue, concurrency: 3, batch: 10, running: 0, handler: writer },
      ...TABLE_NAMES.flatMap((name): Source[] => [
        { role: `compactor-${name}`, queue: resources.get(name)!.compaction, concurrency: 2, batch: 10, running: 0, handler: compactor(name) },
        { role: `committer-${name}`, queue: resources.get(name)!.commits, concurrency: 2, batch: 10, running: 0, handler: committer(name) },
      ]),
    ]
    function timeoutOf(role: string): number {
      if (role === 'writer') return WRITER_TIMEOUT_MS
      if (role.startsWith('compactor')) return COMPACTOR_TIMEOUT_MS
      if (role.startsWith('committer')) return COMMITTER_TIMEOUT_MS
      return MAINTENANCE_TIMEOUT_MS
    }
    for (const s of sources) void poll(s)

    // --- maintenance on a schedule, and a consumer of both tables ------------------------------
    const maintenance = async () => {
      while (!stopping) {
        await sleep(MAINTENANCE_EVERY_MS)
        const env = acquire('maintenance')
        env.busy = true
        count('maintenance.runs')
        await runIn(env, async () => {
          const resolve = resolveIn(env)
          for (const name of TABLE_NAMES) {
            try {
              const own = (await resolve(name))!
              await expireSnapshots(own.table)
              const jobs = await stalledBucketJobs(name, own.table, Date.now(), STALLED_BUCKET_MS)
              count('maintenance.sweptJobs', jobs.length)
              await own.jobs.enqueue(jobs)
            } catch (e) {
              count('maintenance.failed')
              if (o.verbose) console.log(`maintenance ${name}: ${(e as Error).message}`)
            }
          }
        })
        env.busy = false
      }
    }
    void maintenance()
    /** per table and key, what the consumer has read (sum of qty and n, or the highest version seen) */
    const consumed = new Map<TableName, Map<string, { qty: number; n: number }>>(TABLE_NAMES.map((t) => [t, new Map()]))
    const appliedTo = new Map<TableName, number>()
    // a reader process, not a Lambda: when it dies it starts again, its progress in its consumer file
    let consumerEnv = world.newEnv('consumer', 0)
    const consume = async () => {
      let tables = new Map<TableName, Table>()
      while (!stopping) {
        await sleep(CONSUMER_EVERY_MS)
        if (consumerEnv.dead) {
          consumerEnv = world.newEnv('consumer', 0)
          tables = new Map()
          count('consumer.restarts')
        }
        await runIn(consumerEnv, async () => {
          for (const name of TABLE_NAMES) {
            try {
              let t = tables.get(name)
              if (!t) tables.set(name, (t = await Table.open(storeOf(resources.get(name)!.uri))))
              const from = await consumerStart(t, 'sim', 0)
              // the application keeps the end of the range it last applied with its output: a
              // range delivered before a crash kept the progress from being recorded is read
              // again, not applied again (delivery is at least once; applying is exactly once)
              const applied = appliedTo.get(name) ?? 0
              const plan = await planIncremental(t, from < applied ? { fromSnapshot: from, toSnapshot: applied, mode: 'delta' } : { fromSnapshot: from, mode: 'delta' })
              if (plan.to <= from) continue
              const rows: { kind: RowKind; row: unknown[] }[] = []
              for await (const batch of readPlan(t, plan)) rows.push(...batch)
              if (plan.to > applied) {
                const m = consumed.get(name)!
                for (const r of rows) {
                  const key = String(r.row[0])
                  const c = m.get(key) ?? { qty: 0, n: 0 }
                  if (name === 'totals') {
                    c.qty += Number(r.row[1])
                    c.n += Number(r.row[2])
                  } else c.qty = Math.max(c.qty, Number(r.row[1]))
                  m.set(key, c)
                }
                appliedTo.set(name, plan.to)
              }
              // delivered: only now does the consumer's progress move
              await recordConsumer(t, 'sim', plan)
              count('consumer.rows', rows.length)
            } catch (e) {
              count('consumer.failed')
              if (o.verbose) console.log(`consumer ${name}: ${(e as Error).message}`)
            }
          }
        })
      }
    }
    void consume()

    // --- the load ----------------------------------------------------------------------------
    const loadRng = rng.fork('load')
    let nextVersion = 0
    const sendOne = async () => {
      const table: TableName = loadRng.chance(0.5) ? 'totals' : 'orders'
      const s: Sent =
        table === 'totals'
          ? { table, key: `k${loadRng.int(0, TOTALS_KEYS - 1)}`, qty: loadRng.int(1, 9), version: 0, value: '' }
          : { table, key: String(loadRng.int(0, ORDER_KEYS - 1)), qty: 0, version: ++nextVersion, value: `v${nextVersion}` }
      const body = table === 'totals' ? { _table: 'totals', customer: s.key, qty: s.qty, n: 1 } : { _table: 'orders', id: Number(s.key), version: s.version, v: s.value }
      const id = await ingestQueue.send(JSON.stringify(body), '', null)
      sent.set(id!, s)
    }
    const load = async () => {
      const end = world.now + loadMs
      while (world.now < end) {
        await sendOne()
        await sleep(Math.max(1, Math.round(loadRng.float() * (2000 / rate))))
      }
    }
    const loadEnded = load().then(() => {
      faultsOn = false
      world.faults = NO_FAULTS
    })
    if (o.faults) world.faults = LOAD_FAULTS

    // --- checks ------------------------------------------------------------------------------
    const checker = new Map<TableName, Table>()
    const checkerTable = async (name: TableName): Promise<Table> => {
      let t = checker.get(name)
      if (!t || (await t.newerSchemaExists())) checker.set(name, (t = await Table.open(new MergeOnReadView(raw, resources.get(name)!.uri))))
      return t
    }
    const acked = () => {
      const ids = new Set<string>()
      for (const id of sent.keys()) if (!ingestQueue.messages.some((m) => m.id === id) && !ingestQueue.deadLetters.some((m) => m.id === id)) ids.add(id)
      return ids
    }
    /** per key: the sum over acknowledged messages, and over those received but not acknowledged */
    const totalsModel = () => {
      const done = acked()
      const low = new Map<string, { qty: number; n: number }>()
      const pending = new Map<string, { qty: number; n: number }>()
      for (const [id, s] of sent) {
        if (s.table !== 'totals') continue
        const into = done.has(id) ? low : pending
        const c = into.get(s.key) ?? { qty: 0, n: 0 }
        c.qty += s.qty
        c.n += 1
        into.set(s.key, c)
      }
      return { low, pending }
    }
    const checkJobsPerBucket = () => {
      for (const r of resources.values()) {
        const jobs = new Map<string, number>()
        const sweeps = new Map<string, number>()
        for (const m of r.compaction.messages) {
          const into = (JSON.parse(m.body) as { dedupKey?: string }).dedupKey?.startsWith('sweep:') ? sweeps : jobs
          into.set(m.groupId, (into.get(m.groupId) ?? 0) + 1)
        }
        for (const [group, n] of jobs) {
          stats.maxJobsPerBucket = Math.max(stats.maxJobsPerBucket ?? 0, n)
          if (n > JOBS_PER_BUCKET_BOUND) fail(`compaction queue ${r.compaction.name}: ${n} writer and follow-up jobs queued for bucket ${group} (bound ${JOBS_PER_BUCKET_BOUND}): ${r.compaction.messages.filter((m) => m.groupId === group).map((m) => m.body).join(' | ')}`)
        }
        for (const n of sweeps.values()) stats.maxSweepJobsPerBucket = Math.max(stats.maxSweepJobsPerBucket ?? 0, n)
      }
    }
    const checkReferences = async (name: TableName, all: boolean) => {
      const t = await checkerTable(name)
      const latest = await t.snapshots.latest()
      if (!latest) return
      const earliest = all ? await t.snapshots.earliestId() : latest.id
      for (let id = earliest; id <= latest.id; id++) {
        const s = await t.snapshots.snapshot(id)
        if (!s) continue
        for (const key of await snapshotReferences(t, s)) {
          if (!(await raw.head(`${resources.get(name)!.uri}${key}`))) fail(`${name}: snapshot ${id} references ${key}, which is missing`)
        }
      }
    }
    const readTotals = async (): Promise<Map<string, { qty: number; n: number }>> => {
      const rows = await readAll(await checkerTable('totals'))
      const got = new Map<string, { qty: number; n: number }>()
      for (const r of rows) {
        const k = String(r[0])
        if (got.has(k)) fail(`totals: key ${k} read twice`)
        got.set(k, { qty: Number(r[1]), n: Number(r[2]) })
      }
      return got
    }
    const historyOf = (key: string) =>
      [...sent].filter(([id, x]) => x.table === 'totals' && x.key === key && (deliveries.get(id)?.length ?? 0) > 1).map(([id, x]) => `${id} qty ${x.qty}: ${deliveries.get(id)!.join(', ')}`).join('; ') || 'none'
    /** every acknowledged message is in the table, and nothing beyond what was received */
    const checkTotals = async () => {
      const got = await readTotals()
      const { low, pending } = totalsModel()
      for (const k of new Set([...low.keys(), ...pending.keys(), ...got.keys()])) {
        const g = got.get(k) ?? { qty: 0, n: 0 }
        const lo = low.get(k) ?? { qty: 0, n: 0 }
        const p = pending.get(k) ?? { qty: 0, n: 0 }
        if (g.n < lo.n || g.qty < lo.qty) fail(`totals ${k}: the table has n ${g.n} / qty ${g.qty}, below the acknowledged n ${lo.n} / qty ${lo.qty}: acknowledged messages lost; redelivered messages of the key: ${historyOf(k)}`)
        if (g.n > lo.n + p.n || g.qty > lo.qty + p.qty) fail(`totals ${k}: the table has n ${g.n} / qty ${g.qty}, above every message received (n ${lo.n + p.n} / qty ${lo.qty + p.qty}): a message applied twice; redelivered messages of the key: ${historyOf(k)}`)
      }
    }
    const checkEverything = async () => {
      for (const name of TABLE_NAMES) await checkReferences(name, false)
      await checkTotals()
    }

    /** the end state: every queue empty, level 0 empty, the tables equal to the model */
    const drained = async (): Promise<string | null> => {
      if (ingestQueue.messages.length) return `${ingestQueue.messages.length} ingest message(s) left`
      for (const r of resources.values()) {
        if (r.compaction.messages.length) return `${r.compaction.messages.length} compaction job(s) left on ${r.name}`
        if (r.commits.messages.length) return `${r.commits.messages.length} commit message(s) left on ${r.name}`
      }
      for (const name of TABLE_NAMES) {
        const t = await checkerTable(name)
        const latest = await t.snapshots.latest()
        if (!latest) continue
        const l0 = (await t.manifests.liveEntries(latest)).filter((e) => e.file.level === 0).length
        if (l0) return `${name}: ${l0} level-0 file(s) left`
      }
      return null
    }
    const finalChecks = async () => {
      for (const q of [ingestQueue, ...[...resources.values()].flatMap((r) => [r.compaction, r.commits])]) {
        if (q.deadLetters.length) fail(`${q.deadLetters.length} message(s) dead-lettered on ${q.name}`)
      }
      const got = await readTotals()
      const { low, pending } = totalsModel()
      if ([...pending.values()].some((p) => p.n > 0)) fail('messages received and never acknowledged after the drain')
      for (const k of new Set([...low.keys(), ...got.keys()])) {
        const g = got.get(k) ?? { qty: 0, n: 0 }
        const w = low.get(k) ?? { qty: 0, n: 0 }
        if (g.n !== w.n || g.qty !== w.qty) fail(`totals ${k}: the table has n ${g.n} / qty ${g.qty}, the acknowledged messages n ${w.n} / qty ${w.qty}`)
        const c = consumed.get('totals')!.get(k) ?? { qty: 0, n: 0 }
        if (c.n !== w.n || c.qty !== w.qty) fail(`consumer of totals ${k}: read n ${c.n} / qty ${c.qty} in all, the acknowledged messages n ${w.n} / qty ${w.qty} (each change exactly once)`)
      }
      const latestVersion = new Map<string, Sent>()
      for (const s of sent.values()) if (s.table === 'orders' && (latestVersion.get(s.key)?.version ?? 0) < s.version) latestVersion.set(s.key, s)
      const orders = new Map((await readAll(await checkerTable('orders'))).map((r) => [String(r[0]), r]))
      for (const [k, s] of latestVersion) {
        const r = orders.get(k)
        if (!r || Number(r[1]) !== s.version || r[2] !== s.value) fail(`orders ${k}: read ${r ? `version ${r[1]} ${r[2]}` : 'nothing'}, the latest acknowledged is version ${s.version} ${s.value}`)
        const c = consumed.get('orders')!.get(k)
        if ((c?.qty ?? 0) !== s.version) fail(`consumer of orders ${k}: its highest version read is ${c?.qty ?? 0}, the latest is ${s.version}`)
      }
      if (orders.size !== latestVersion.size) fail(`orders: ${orders.size} keys read, ${latestVersion.size} written`)
      for (const name of TABLE_NAMES) {
        await checkReferences(name, true)
        const lease = await raw.get(`${resources.get(name)!.uri}${COMMITTER_LEASE_KEY}`)
        if (lease) {
          const r = JSON.parse(new TextDecoder().decode(lease)) as { expiresAt: number }
          if (r.expiresAt > world.now + 2 * COMMITTER_LEASE_TTL_MS + 3_600_000) fail(`${name}: the committer lease is held until ${new Date(r.expiresAt).toISOString()}, long after the drain`)
        }
      }
    }

    // --- the run -----------------------------------------------------------------------------
    let loadDone = false
    void loadEnded.then(() => (loadDone = true))
    let loadEndedAt = 0
    let nextCheck = world.now + checkEveryMs
    let nextDrainLook = 0
    await world.settle()
    while (failure === null) {
      if (!world.step()) {
        fail('nothing left to run (every actor waits on nothing)')
        break
      }
      steps++
      await world.settle()
      checkJobsPerBucket()
      if (world.now >= nextCheck) {
        nextCheck = world.now + checkEveryMs
        await checkEverything()
      }
      if (loadDone && loadEndedAt === 0) loadEndedAt = world.now
      if (loadEndedAt && world.now >= nextDrainLook) {
        nextDrainLook = world.now + 5_000
        const left = await drained()
        if (left === null) {
          drainedAfterMs = world.now - loadEndedAt
          break
        }
        if (world.now - loadEndedAt > drainWithinMs) fail(`not drained ${drainWithinMs / 60_000} virtual minutes after the load ended: ${left}`)
      }
    }
    if (failure === null) {
      // consumers and the last maintenance catch up, then everything is judged
      const until = world.now + 2 * CONSUMER_EVERY_MS
      while (world.now < until && world.step()) await world.settle()
      await finalChecks()
    }
    if (failure === null) {
      // orphan cleanup a day later deletes only what no snapshot references
      stopping = true
      const before = new Map<TableName, Map<string, { qty: number; n: number }> | number>()
      before.set('totals', await readTotals())
      for (let i = 0; i < 100 && world.step(); i++) await world.settle()
      world.advance(25 * 3_600_000)
      await world.settle()
      for (const name of TABLE_NAMES) {
        const env = world.newEnv('orphans', 0)
        let done = false
        const p = world.within(env, async () => removeOrphanFiles(await Table.open(storeOf(resources.get(name)!.uri)))).finally(() => (done = true))
        while (!done && world.step()) await world.settle()
        const res = await p
        count('orphans.deleted', res.deleted.length)
        await checkReferences(name, true)
      }
      const after = await readTotals()
      for (const [k, v] of before.get('totals') as Map<string, { qty: number; n: number }>) {
        const a = after.get(k)
        if (a?.n !== v.n || a?.qty !== v.qty) fail(`totals ${k} changed across orphan cleanup: ${JSON.stringify(v)} → ${JSON.stringify(a)}`)
      }
    }
  } catch (e) {
    fail(`the harness failed: ${(e as Error).stack ?? e}`)
  } finally {
    endedAt = world.now
    world.uninstall()
    if (memorySize === undefined) delete process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE
    else process.env.AWS_LAMBDA_FUNCTION_MEMORY_SIZE = memorySize
  }
  Object.assign(stats, world.counts)
  stats.sent = sent.size
  return { seed: o.seed, ok: failure === null, failure: failure ?? undefined, trace: world.trace, steps, virtualMs: endedAt - world.startMs, drainedAfterMs, stats }
}

/** A store seen under a prefix of another (each table is a prefix of the one simulated bucket). */
class PrefixStore implements ObjectStore {
  readonly uri: string
  constructor(
    private readonly inner: ObjectStore,
    private readonly prefix: string,
  ) {
    this.uri = `${inner.uri}/${prefix}`
  }
  get(key: string) {
    return this.inner.get(this.prefix + key)
  }
  getRange(key: string, start: number, end: number) {
    return this.inner.getRange(this.prefix + key, start, end)
  }
  async head(key: string) {
    const h = await this.inner.head(this.prefix + key)
    return h && { ...h, key }
  }
  put(key: string, data: Uint8Array) {
    return this.inner.put(this.prefix + key, data)
  }
  putIfAbsent(key: string, data: Uint8Array) {
    return this.inner.putIfAbsent(this.prefix + key, data)
  }
  delete(key: string) {
    return this.inner.delete(this.prefix + key)
  }
  async list(prefix: string) {
    return (await this.inner.list(this.prefix + prefix)).map((o) => ({ ...o, key: o.key.slice(this.prefix.length) }))
  }
}

/**
 * The checker's view of a table: its schema as stored, with `deletion-vectors.merge-on-read`
 * on, so a read merges level 0 in and shows every committed row, compacted or not.
 */
class MergeOnReadView extends PrefixStore {
  override async get(key: string) {
    const bytes = await super.get(key)
    if (!bytes || !key.startsWith(SCHEMA_DIR)) return bytes
    const schema = JSON.parse(new TextDecoder().decode(bytes)) as { options: Record<string, string> }
    schema.options['deletion-vectors.merge-on-read'] = 'true'
    return new TextEncoder().encode(JSON.stringify(schema))
  }
}
