// What every part of one simulation run shares (simulation.ts): the options, the world and
// its random streams, the two tables and their queues, the model of what was sent, and the
// first invariant broken. The actors (actors.ts, load.ts) and the checks (checks.ts) take it
// explicitly.

import { QueuedCommitter } from '../../lib/commit/queued-committer.ts'
import { Table } from '../../lib/handle/table.ts'
import { MemoryStore } from '../../lib/store/memory-store.ts'
import type { ObjectStore } from '../../lib/store/object-store.ts'
import { RetryingStore } from '../../lib/store/retrying-store.ts'
import type { Random } from './random.ts'
import { SimCommitQueue, SimJobQueue, SimQueue } from './sim-queue.ts'
import { PrefixStore, SimStore } from './sim-store.ts'
import { type Env, World } from './world.ts'

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

/**
 * The documented bound on the writer and follow-up jobs of one bucket on its queue, the one
 * in flight included (docs/design.md "Compaction jobs": three, and one more for a job sent
 * again under a still-current key past SQS's five-minute deduplication window); the
 * maintenance sweep's jobs are counted apart.
 */
export const JOBS_PER_BUCKET_BOUND = 4

export const TABLES = {
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
export type TableName = keyof typeof TABLES
export const TABLE_NAMES = Object.keys(TABLES) as TableName[]

export const WRITER_TIMEOUT_MS = 60_000
export const COMPACTOR_TIMEOUT_MS = 120_000
export const COMMITTER_TIMEOUT_MS = 60_000
export const MAINTENANCE_TIMEOUT_MS = 120_000
/** the stack's visibility timeouts are 6 × the function timeout (cdk/constructs/ingest.ts) */
const VISIBILITY_FACTOR = 6
const MAX_RECEIVE_COUNT = 5
/** an idle environment is replaced (a cold start next time) */
const RESTART = 0.03

export function timeoutOf(role: string): number {
  if (role === 'writer') return WRITER_TIMEOUT_MS
  if (role.startsWith('compactor')) return COMPACTOR_TIMEOUT_MS
  if (role.startsWith('committer')) return COMMITTER_TIMEOUT_MS
  return MAINTENANCE_TIMEOUT_MS
}

/** One message the load sent, as the model keeps it. */
export interface Sent {
  table: TableName
  key: string
  qty: number
  version: number
  value: string
}

/** One table's resources, as the stack makes them: a compaction queue and a commit queue. */
export interface TableResources {
  name: TableName
  uri: string
  compaction: SimQueue
  commits: SimQueue
}

/** What an environment keeps warm: a table handle and its queue ports per table. */
export interface Warm {
  table: Table
  jobs: SimJobQueue
  commitQueue: SimCommitQueue
  committer: QueuedCommitter
}

/** Per key: the sum of qty and n (totals), or the highest version seen in qty (orders). */
export type KeySums = Map<string, { qty: number; n: number }>

export class SimContext {
  readonly world: World
  /** the pipeline's own draws: restarts, exits after return, and the forks of skew and load */
  readonly rng: Random
  private readonly queueRng: Random
  /** the one simulated bucket, as stored (the checks read it without faults) */
  readonly raw: MemoryStore
  readonly stats: Record<string, number> = {}
  failure: string | null = null
  /** ingest message id → what the load sent */
  readonly sent = new Map<string, Sent>()
  private readonly sim: SimStore
  ingestQueue!: SimQueue
  readonly resources = new Map<TableName, TableResources>()
  rejects!: MemoryStore
  /** faults are injected (until the load ends) */
  faultsOn: boolean
  /** the orphan check has begun: the event sources, maintenance and the consumer stop */
  stopping = false
  /** per bucket, the live invocations compacting it (serialization check) */
  readonly compacting = new Map<string, Set<Env>>()
  /** ingest message id → each delivery: environment, virtual second, what became of it */
  readonly deliveries = new Map<string, string[]>()
  /** per table and key, what the consumer has read (sum of qty and n, or the highest version seen) */
  readonly consumed = new Map<TableName, KeySums>(TABLE_NAMES.map((t) => [t, new Map()]))
  private readonly warm = new WeakMap<Env, Map<TableName, Promise<Warm>>>()
  private readonly pools = new Map<string, Env[]>()
  private skewRng!: Random

  constructor(readonly o: SimOptions) {
    this.world = new World(o.seed)
    this.rng = this.world.rng.fork('pipeline')
    this.queueRng = this.world.rng.fork('queues')
    this.raw = new MemoryStore({ uri: 'memory://sim' })
    // the code's stores: every request through the world, retried as production retries
    this.sim = new SimStore(this.raw, this.world)
    this.faultsOn = !!o.faults
  }

  count(k: string, n = 1): void {
    this.stats[k] = (this.stats[k] ?? 0) + n
  }

  /** Records the first invariant broken (the run ends at the next step). */
  fail(what: string): void {
    this.failure ??= `${what} (virtual ${((this.world.now - this.world.startMs) / 1000).toFixed(1)} s)`
  }

  storeOf(uri: string): ObjectStore {
    return new RetryingStore(new PrefixStore(this.sim, uri))
  }

  /** The queues and tables, as the stack makes them (in the world: it must be installed). */
  async setUp(): Promise<void> {
    const world = this.world
    const queueRng = this.queueRng
    this.ingestQueue = new SimQueue('ingest', world, queueRng.fork('ingest'), { fifo: false, visibilityMs: VISIBILITY_FACTOR * WRITER_TIMEOUT_MS, maxReceiveCount: MAX_RECEIVE_COUNT })
    for (const name of TABLE_NAMES) {
      this.resources.set(name, {
        name,
        uri: `tables/${name}/`,
        compaction: new SimQueue(`${name}-compaction`, world, queueRng.fork(name), { fifo: true, visibilityMs: VISIBILITY_FACTOR * COMPACTOR_TIMEOUT_MS, maxReceiveCount: MAX_RECEIVE_COUNT }),
        commits: new SimQueue(`${name}-commits`, world, queueRng.fork(`${name}c`), { fifo: true, visibilityMs: VISIBILITY_FACTOR * COMMITTER_TIMEOUT_MS, maxReceiveCount: MAX_RECEIVE_COUNT }),
      })
      await Table.create(new PrefixStore(this.raw, `tables/${name}/`), TABLES[name])
    }
    this.rejects = new MemoryStore({ uri: 'memory://rejects' })
    this.skewRng = this.rng.fork('skew')
  }

  // --- environments ------------------------------------------------------------------------

  /** The table resolver of code running in `env`: its warm handles and queue ports. */
  resolveIn(env: Env): (name: string) => Promise<Warm | null> {
    return (name: string): Promise<Warm | null> => {
      if (!(name in TABLES)) return Promise.resolve(null)
      let m = this.warm.get(env)
      if (!m) this.warm.set(env, (m = new Map()))
      let w = m.get(name as TableName)
      if (!w) {
        const r = this.resources.get(name as TableName)!
        w = Table.open(this.storeOf(r.uri)).then((table) => {
          const commitQueue = new SimCommitQueue(r.commits)
          return { table, jobs: new SimJobQueue(r.compaction, false), commitQueue, committer: new QueuedCommitter(table, commitQueue, { tableName: name, timeoutMs: timeoutOf(env.role) - 10_000 }) }
        })
        const own = m
        w.catch(() => own.delete(name as TableName))
        m.set(name as TableName, w)
      }
      return w
    }
  }

  // Lambda hosts keep NTP time; an hour off is drawn for committers only, where the
  // lease must survive it. Elsewhere retention and the per-record index of redeliveries
  // assume clocks within minutes (docs/reliability.md "What it does not model").
  private drawSkew(role: string): number {
    if (!this.o.faults) return 0
    const skewRng = this.skewRng
    const r = skewRng.float()
    if (r < 0.8) return skewRng.int(-200, 200)
    if (r < 0.95 || !role.startsWith('committer')) return skewRng.int(-5_000, 5_000)
    return skewRng.pick([-3_600_000, 3_600_000])
  }

  /** A free warm environment of `role` (some replaced, as idle ones are), or a new one. */
  acquire(role: string): Env {
    const pool = this.pools.get(role) ?? []
    this.pools.set(role, pool)
    for (const e of pool) {
      if (e.dead || e.busy) continue
      if (this.o.faults && this.faultsOn && this.rng.chance(RESTART)) {
        this.world.kill(e)
        this.count(`${role}.restarts`)
        continue
      }
      return e
    }
    const e = this.world.newEnv(role, this.drawSkew(role))
    pool.push(e)
    this.count(`${role}.coldStarts`)
    return e
  }

  /** Runs `fn` in `env`; 'died' as soon as the environment dies (its code never resumes). */
  runIn<T>(env: Env, fn: () => Promise<T>): Promise<T | 'died'> {
    return new Promise<T | 'died'>((resolve, reject) => {
      env.onDeath = () => resolve('died')
      this.world.within(env, fn).then(resolve, reject)
    }).finally(() => (env.onDeath = undefined))
  }
}
