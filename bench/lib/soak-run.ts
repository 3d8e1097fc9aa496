// The soak, as a function bench/soak.ts and test/soak.test.ts both run: the local runtime
// (embedded S3 + SQS, real writer, compactor and maintenance handlers in worker threads)
// under a steady write load while faults are injected one after another, then a drain and
// a check of everything that must hold.
//
// Tables (deletion vectors on, so a row is visible only once compaction lifted it out of L0):
// - orders: deduplicate engine ordered by `version` (sequence.field), upserts over a fixed key
//   space, plus probe rows (ids from PROBE_BASE, one per probe) whose visibility a reader of
//   the latest snapshot polls by point lookup: freshness lag = time from sending a probe to
//   the first latest snapshot that shows it. The final state must equal the model exactly.
// - totals: aggregation engine (sum of qty and of n = 1 per message), so a message applied
//   twice shows as an excess and a lost one as a shortfall. A message SQS redelivered inside
//   a different batch is the writer's known weak spot (docs/reliability.md); an excess that
//   such messages can explain is reported as that gap, anything else fails.
//
// Faults (local/runtime/soak-control.ts): writer throw / exit at a random S3 write / exit
// after commit before ack; compactor throw / exit at a random S3 write (mid-job) / exit
// after commit before ack; compactor restart (every compactor environment killed at once).
// One fault is armed at a time; the next comes a random 0.5–1.5 × `faultEverySeconds` after
// the previous one fired. With `events` (the test) the run goes by steps instead: faults
// are armed after so many invocations of their function, and the load goes on until every
// kind has struck and the work each fault undid was done again, whatever the clock says.
//
// Lag at a sample = max(age of the oldest probe not yet visible, age of the oldest L0 file
// of either table). A fault has recovered when, after the peak lag that followed it, the lag
// is back under the threshold within `recoverWithinSeconds`.

import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { SendMessageBatchCommand } from '@aws-sdk/client-sqs'
import { tableStatus } from '../../lib/cli/status.ts'
import { MIN_ORPHAN_OLDER_THAN_MS, REMOVE_ORPHANS_TASK, removeOrphanFiles } from '../../lib/maintenance/orphans.ts'
import { snapshotRange, snapshotReferences } from '../../lib/maintenance/references.ts'
import { lookup, readAll } from '../../lib/read/table-read.ts'
import { S3Store } from '../../lib/store/s3-store.ts'
import { Table } from '../../lib/handle/table.ts'
import type { InvokeResult } from '../../local/runtime/execution-environment.ts'
import { ExecutionEnvironmentPool } from '../../local/runtime/execution-environment.ts'
import { type LocalRuntime, startLocalRuntime } from '../../local/runtime/local-runtime.ts'
import { type ArmedFault, SoakControl } from '../../local/runtime/soak-control.ts'
import type { EmbeddedStats } from '../../local/embedded.ts'
import { NO_PARTITION, ORDERS_FIELDS, seededRandom } from './dataset.ts'
import { bucketsNeedingJobs } from '../../lib/jobs/coalesce.ts'
import { type MemorySample, type MemoryVerdict, type Role, mb, memoryDetail, memoryVerdict, sampleMemory } from './soak-memory.ts'
import { percentile } from './stats.ts'

const RUNTIME = join(import.meta.dirname, '..', '..', 'local', 'runtime')
const FUNCTIONS = join(import.meta.dirname, '..', '..', 'functions')
export const PROBE_BASE = 1_000_000_000
/** metadata cache of the soak's own long-lived readers, MiB, unless metadataCacheMb sets both */
const HARNESS_CACHE_MB = 4

export const FAULT_KINDS = [
  'writer-throw',
  'writer-exit-at-write',
  'writer-exit-after-commit',
  'compactor-throw',
  'compactor-exit-mid-job',
  'compactor-exit-after-commit',
  'compactor-restart',
] as const
export type FaultKind = (typeof FAULT_KINDS)[number]

/** Faults after which the function's environment is a new one: exits and restarts (a throw keeps it). */
export function replacesEnvironment(kind: FaultKind): boolean {
  return !kind.endsWith('-throw')
}

export interface SoakOptions {
  /** length of the write load */
  seconds: number
  /** orders events per second (upserts; probes and totals messages come on top) */
  rate: number
  /** buckets of the orders table */
  buckets: number
  /** key space of the orders upserts */
  keys: number
  /** every n-th event also sends a totals message; 0 = no totals table */
  totalsEvery: number
  totalsKeys: number
  totalsBuckets: number
  faultEverySeconds: number
  /** no fault before this */
  warmupSeconds: number
  /** no fault armed after this (default: seconds − recoverWithinSeconds) */
  faultsUntilSeconds?: number
  kinds: readonly FaultKind[]
  /**
   * no fault that replaces an environment (an exit, a restart) is armed after this second;
   * throws go on until `faultsUntilSeconds`. The first cycle of kinds then starts with the
   * replacing ones so that they all strike before it. For a memory window that measures
   * warm environments: each replaced one starts again from nothing (about 80–130 MB of
   * isolate and code here, its own process on Lambda), which is not a warm process growing
   * (default: no such limit)
   */
  replacingFaultsUntilSeconds?: number
  /** one writer fault and one compactor fault may be armed at once (else one fault at a time) */
  parallelRoles: boolean
  /**
   * drive the run by events instead of the clock (test/soak.test.ts): a slow machine makes
   * it longer, not thinner. `seconds`, `warmupSeconds`, `faultEverySeconds`,
   * `faultsUntilSeconds` and `replacingFaultsUntilSeconds` are then unused
   */
  events?: EventDrive
  visibilityTimeoutSeconds: number
  timeoutMs: number
  maxReceiveCount: number
  taskThreads: number
  writerConcurrency: number
  writerBatchingWindowMs: number
  s3LatencyMs: number
  probeEveryMs: number
  probeCheckMs: number
  sampleEveryMs: number
  windowSeconds: number
  /** 0 = no maintenance runs */
  maintenanceEverySeconds: number
  /** the orphan task's period (the deployed orphan schedule, scaled down); 0 = never during the load */
  orphansEverySeconds: number
  snapshotRetainedSeconds: number
  dedupWindowMs: number
  orphanOlderThanMs: number
  /** default: max(10 s, 2 × the p99 lag before the first fault) */
  lagThresholdMs?: number
  recoverWithinSeconds: number
  drainTimeoutSeconds: number
  /**
   * a key at an older version although its latest version was acknowledged (an older
   * version committed later won the merge) is reported, not failed: a known engine bug
   * pinned by test/soak.test.ts; a key whose latest version was never acknowledged fails
   */
  tolerateStaleVersions: boolean
  /**
   * lag recovery within the window and flat memory count as invariants (a long run on a
   * quiet enough machine); false: reported only (tests on a shared machine)
   */
  strictTiming: boolean
  /** memory is flat when RSS grows at most this many MB per minute ... */
  memoryLimitMbPerMin: number
  /** ... from this second of the load on (default: half the load), after the caches filled */
  memoryFromSeconds?: number
  /** STRATA_METADATA_CACHE_MB of every function (default: the functions' own default) */
  metadataCacheMb?: number
  /** STRATA_FOOTER_CACHE_MB of every function (default: the functions' own default) */
  footerCacheMb?: number
  /**
   * the embedded S3 + SQS backend in this process (true) or in a child process of its own
   * (false, local/backend-process.ts): there its stored bodies and its queues' state leave
   * this process's heap and malloc arenas, so the memory checks measure the functions
   */
  backendInProcess: boolean
  /**
   * every function environment a process of its own ('process', as a Lambda sandbox is, so
   * each one's memory is measured apart: bench/lib/soak-memory.ts) or a worker thread of this
   * process ('thread', the local runtime's default)
   */
  isolation: 'thread' | 'process'
  seed: number
  log?: (line: string) => void
  /** runs once the runtime is up, before the load (e.g. to change one queue's attributes) */
  afterStart?: (rt: LocalRuntime) => Promise<void>
}

/**
 * A run driven by events (SoakOptions.events). Each fault lane (writer, compactor) counts
 * its function's invocations: its first fault is armed after `warmupInvocations`, the next
 * a random 0.5–1.5 × `faultEveryInvocations` after the previous one struck, an armed fault
 * waits for the invocation that claims it, and a restart for a warm environment to kill.
 * The load stops once every kind has struck `rounds` times, every fault's work was done
 * again (the messages its invocation left were deleted since, and its function succeeded
 * after it) and `minEvents` were sent, or at `maxWriterInvocations` whatever struck. The
 * sender still sends `rate` events a second, but waits while `maxUnacked` orders messages
 * are unacknowledged, and sends a probe every probeEveryMs / 100 ms of its steps.
 */
export interface EventDrive {
  warmupInvocations: number
  faultEveryInvocations: number
  rounds: number
  minEvents: number
  /** the bound: a kind that has not struck by then fails the run */
  maxWriterInvocations: number
  maxUnacked: number
  /** last resort only, for a pipeline that stopped invoking: the load stops after this many seconds */
  backstopSeconds: number
}

export const SOAK_DEFAULTS: SoakOptions = {
  seconds: 600,
  // sized for a shared 2-core machine: compaction keeps up between faults
  rate: 20,
  buckets: 8,
  keys: 5000,
  totalsEvery: 4,
  totalsKeys: 40,
  totalsBuckets: 2,
  faultEverySeconds: 60,
  warmupSeconds: 60,
  kinds: FAULT_KINDS,
  parallelRoles: false,
  // a crash heals when its messages come back: the visibility timeout bounds recovery
  visibilityTimeoutSeconds: 40,
  timeoutMs: 30_000,
  maxReceiveCount: 5,
  taskThreads: 2,
  writerConcurrency: 2,
  writerBatchingWindowMs: 1000,
  s3LatencyMs: 5,
  probeEveryMs: 1000,
  probeCheckMs: 500,
  sampleEveryMs: 1000,
  windowSeconds: 60,
  maintenanceEverySeconds: 20,
  // deployed: every 15 min and every 6 h; the same 1 : 24 would leave the soak one orphan run
  orphansEverySeconds: 300,
  snapshotRetainedSeconds: 180,
  // longer than maxReceiveCount visibility timeouts, so a redelivery still finds its marker
  dedupWindowMs: 300_000,
  // the smallest age cleanup accepts (longer than a commit can wait), so during the run it takes nothing
  orphanOlderThanMs: MIN_ORPHAN_OLDER_THAN_MS,
  recoverWithinSeconds: 150,
  drainTimeoutSeconds: 420,
  strictTiming: true,
  memoryLimitMbPerMin: 2,
  // a dozen function environments share this process: at 8 MiB each their metadata caches
  // fill within the first minutes, so the slope after that shows whatever else grows (the
  // bound itself: test/cache-bounds.test.ts)
  metadataCacheMb: 8,
  // the footers of a few dozen small files: full within minutes too
  footerCacheMb: 2,
  backendInProcess: false,
  isolation: 'process',
  tolerateStaleVersions: false,
  seed: 20_260_601,
}

export interface Sample {
  /** seconds since the load started */
  t: number
  rssMb: number
  /** the process taken apart: main heap, every environment's heap by role, non-heap (soak-memory.ts) */
  memory: MemorySample
  ingestQueue: number
  ordersJobs: number
  totalsJobs: number
  ordersL0: number
  ordersMaxL0: number
  totalsL0: number
  /** age of the oldest L0 file of either table (ms) */
  l0AgeMs: number
  /** age of the oldest probe not yet visible (ms) */
  probeAgeMs: number
  lagMs: number
  compactorEnvironments: number
  /** every 10th sample */
  storeObjects?: number
  storeMb?: number
  snapshotsRetained?: number
  dlq?: number
  /** what the embedded S3 + SQS holds (objects, retained buffers, queue records) */
  backend?: EmbeddedStats
  /** the soak's own long-lived reader handle: its metadata cache, entries and MB charged */
  readerCacheEntries?: number
  readerCacheMb?: number
}

export interface FaultRecord {
  seq: number
  kind: FaultKind
  armedAt: number
  /** seconds since the load started; null when nothing claimed it */
  firedAt: number | null
  /** what the handler logged; for a restart, one line per environment killed */
  points: string[]
  /** restart: compactor environments alive when it was sent, and how many said they exited */
  environmentsBefore?: number
  environmentsKilled?: number
  peakLagMs: number | null
  recovered: boolean | null
  recoverySeconds: number | null
}

export interface WindowStats {
  from: number
  to: number
  probes: number
  probeLagP50Ms: number | null
  probeLagP99Ms: number | null
  probeLagMaxMs: number | null
  l0AgeMaxMs: number
  lagMaxMs: number
  rssMedianMb: number
  rssMaxMb: number
  /** V8 heaps: the main thread's, and every environment's summed */
  mainHeapMedianMb: number
  envHeapMedianMb: number
  /** RSS less every V8 heap (soak-memory.ts) */
  nonHeapMedianMb: number
  maxIngestQueue: number
  maxJobs: number
  faults: string[]
}

export interface Check {
  name: string
  ok: boolean
  detail: string
  /** informational: reported, does not fail the soak */
  info?: boolean
}

export interface Durations {
  p50: number | null
  p99: number | null
  max: number | null
}

export interface SoakResult {
  params: Omit<SoakOptions, 'log'>
  loadSeconds: number
  /** what ended the load: its seconds, or with `events` the condition or bound reached */
  loadStoppedBy: string
  drainSeconds: number
  drained: boolean
  wallSeconds: number
  sent: { orders: number; probes: number; totals: number; messages: number }
  distinctOrderKeys: number
  writer: { invocations: number; succeeded: number; crashes: number; failedRecords: number; coldStarts: number; redeliveredRecords: number; failures: Record<string, number>; durationMs: Durations }
  compactor: { invocations: number; succeeded: number; crashes: number; failedRecords: number; coldStarts: number; failures: Record<string, number>; durationMs: Durations }
  /** stepSeconds: what the maintenance function's steps took (its summary's timings), summed and the longest */
  maintenance: { runs: number; failed: number; errors: string[]; snapshotsExpired: number; orphansDeleted: number; markersDeleted: number; sweptJobs?: number; stepSeconds: Record<string, { total: number; max: number }> }
  /**
   * Compaction jobs (lib/jobs/coalesce.ts): messages the compactors received, bucket
   * compactions that landed (distinct buckets of each COMPACT snapshot's delta), and the
   * compaction queues' peak depth (visible + in flight), whole and per bucket of the table
   */
  /** traced: messages whose outcome the compactors' log gave (the drain's and the sweep's diagnoses name it) */
  jobs: { delivered: number; traced: number; bucketCompactions: number; peakDepth: Record<string, number>; peakPerBucket: Record<string, number> }
  faults: FaultRecord[]
  /** overlapped: the next fault struck before the lag was back (judged with that one) */
  faultCounts: Record<string, { armed: number; fired: number; recovered: number; overlapped: number }>
  lag: { thresholdMs: number; baselineP99Ms: number | null; probeP50Ms: number | null; probeP99Ms: number | null; probeMaxMs: number | null; unseenProbes: number; maxRecoverySeconds: number | null }
  /** memory slopes (soak-memory.ts), and the stored objects' MB at the first and last store sample */
  memory: MemoryVerdict & { storeMbFirst: number | null; storeMbLast: number | null }
  /** orders keys left at an older version after their latest was acknowledged (tolerateStaleVersions) */
  staleVersions: number
  totalsGap: { keys: number; excess: number; explainable: number; regroupedMessages: number; redeliveredMessages: number }
  windows: WindowStats[]
  samples: Sample[]
  checks: Check[]
  ok: boolean
}

const pct = (xs: number[], p: number): number | null => percentile(xs, p, null)

interface JobReceived {
  /** seconds since the load started */
  at: number
  messageId: string
  bucket: number
  key: string
  followUp: boolean
  receive: number
  /** deleted, left (returned for another try) or the invocation's error */
  outcome: string
}

/**
 * One compactor log line (Powertools JSON, functions/compactor.ts) in a few words, with the
 * messages it is about: a job's outcome (compacted, nothing to compact, overtaken; the
 * snapshot it read and landed, its input files, whether it sent a follow-up) or a bucket's
 * failure; null for any other line.
 */
export function compactorLogDetail(line: string): { messageIds: string[]; text: string } | null {
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(line) as Record<string, unknown>
  } catch {
    return null
  }
  if (Array.isArray(entry.messageIds)) {
    const text = `${entry.message}: read ${entry.baseSnapshot}, landed ${entry.snapshot ?? '-'}, ${entry.inputFiles} in${entry.needsMore ? ', capped' : ''}${entry.conflictRetries ? `, ${entry.conflictRetries} conflict retries` : ''}, follow-up ${entry.followUp ? 'sent' : 'none'}`
    return { messageIds: entry.messageIds as string[], text }
  }
  if (typeof entry.messageId === 'string' && typeof entry.error === 'string') return { messageIds: [entry.messageId], text: `failed: ${entry.error.slice(0, 200)}` }
  return null
}

function durationsOf(xs: number[]): Durations {
  const r = (v: number | null) => (v === null ? null : Math.round(v))
  return { p50: r(pct(xs, 50)), p99: r(pct(xs, 99)), max: xs.length ? Math.round(Math.max(...xs)) : null }
}

/** The stretches of samples whose oldest level-0 file was older than `limitMs`, each with its peak. */
export function longLevelZeroWaits(samples: Sample[], limitMs: number): { from: number; to: number; maxMs: number; peakAt: number; ordersL0: number; totalsL0: number }[] {
  const out: { from: number; to: number; maxMs: number; peakAt: number; ordersL0: number; totalsL0: number }[] = []
  let cur: (typeof out)[number] | null = null
  for (const x of samples) {
    if (x.l0AgeMs <= limitMs) {
      cur = null
      continue
    }
    if (!cur) out.push((cur = { from: x.t, to: x.t, maxMs: x.l0AgeMs, peakAt: x.t, ordersL0: x.ordersL0, totalsL0: x.totalsL0 }))
    cur.to = x.t
    if (x.l0AgeMs > cur.maxMs) Object.assign(cur, { maxMs: x.l0AgeMs, peakAt: x.t, ordersL0: x.ordersL0, totalsL0: x.totalsL0 })
  }
  return out
}

/**
 * Per fault: the peak lag between its firing and the end of its window (`recoverWithin`
 * seconds, cut short by the next fault, whose lag is its own), and whether the lag came back
 * under the threshold after that peak inside the window. A window cut short before the lag
 * came back leaves `recovered` null: the fault is judged together with the next one (the
 * last fault of such a chain has a full window, so a lag that never comes back fails).
 */
export function faultRecovery(faults: FaultRecord[], samples: Sample[], thresholdMs: number, recoverWithinSeconds: number): void {
  const fired = faults.filter((f) => f.firedAt !== null).sort((a, b) => a.firedAt! - b.firedAt!)
  fired.forEach((f, i) => {
    const next = fired[i + 1]?.firedAt ?? Infinity
    const end = Math.min(f.firedAt! + recoverWithinSeconds, next)
    const win = samples.filter((s) => s.t >= f.firedAt! && s.t <= end)
    f.peakLagMs = null
    f.recovered = null
    f.recoverySeconds = null
    if (win.length === 0) return
    let peakIdx = 0
    win.forEach((s, j) => {
      if (s.lagMs > win[peakIdx].lagMs) peakIdx = j
    })
    f.peakLagMs = win[peakIdx].lagMs
    if (f.peakLagMs <= thresholdMs) {
      f.recovered = true
      f.recoverySeconds = 0
      return
    }
    const back = win.slice(peakIdx).find((s) => s.lagMs <= thresholdMs)
    if (back) {
      f.recovered = true
      f.recoverySeconds = Math.round((back.t - f.firedAt!) * 10) / 10
    } else if (end >= f.firedAt! + recoverWithinSeconds) {
      f.recovered = false
    }
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** A function's progress under `events`: see runSoak. */
function newProgress() {
  return { failed: [] as { startedAt: number; endedAt: number; left: string[] }[], deleted: new Set<string>(), lastOkStart: 0 }
}

const roleOf = (kind: FaultKind): 'writer' | 'compactor' => (kind.startsWith('writer') ? 'writer' : 'compactor')

function ordersSchema(o: SoakOptions) {
  return {
    fields: ORDERS_FIELDS,
    primaryKeys: ['id'],
    partitionKeys: [],
    options: {
      bucket: String(o.buckets),
      'deletion-vectors.enabled': 'true',
      'compaction.task-threads': String(o.taskThreads),
      'sequence.field': 'version',
      ...retention(o),
    },
  }
}

function totalsSchema(o: SoakOptions) {
  return {
    fields: [
      { name: 'customer', type: 'STRING' },
      { name: 'qty', type: 'BIGINT' },
      { name: 'n', type: 'BIGINT' },
    ],
    primaryKeys: ['customer'],
    partitionKeys: [],
    options: {
      bucket: String(o.totalsBuckets),
      'deletion-vectors.enabled': 'true',
      'compaction.task-threads': String(Math.min(o.taskThreads, o.totalsBuckets)),
      'merge-engine': 'aggregation',
      'fields.qty.aggregate-function': 'sum',
      'fields.n.aggregate-function': 'sum',
      ...retention(o),
    },
  }
}

function retention(o: SoakOptions): Record<string, string> {
  // expiration must keep up with a commit every few hundred ms (Paimon's limit of 50 per
  // call would not at a 20 s schedule)
  return { 'snapshot.time-retained': `${o.snapshotRetainedSeconds} s`, 'snapshot.num-retained.min': '10', 'snapshot.expire.limit': '2000' }
}

/** DECIMAL(10, 2) as sent, and as read back (the unscaled bigint) */
const amountOf = (id: number, version: number) => (((id * 7 + version) % 100000) / 100).toFixed(2)
const unscaledAmountOf = (id: number, version: number) => BigInt((id * 7 + version) % 100000)

interface Delivery {
  /** hash of the batch's message ids */
  batch: string
  receive: number
  /** 'ok' or the error name of a failed invocation */
  outcome: string
  deleted: boolean
  /** epoch ms the invocation started */
  at: number
}

interface Probe {
  id: number
  sentAt: number
  seenAt: number | null
}

export async function runSoak(partial: Partial<SoakOptions> = {}): Promise<SoakResult> {
  const o: SoakOptions = { ...SOAK_DEFAULTS, ...partial }
  const log = o.log ?? (() => {})
  const faultsUntil = o.faultsUntilSeconds ?? o.seconds - o.recoverWithinSeconds
  const wallStart = Date.now()
  const random = seededRandom(o.seed)
  const dir = mkdtempSync(join(tmpdir(), 'strata-soak-'))
  const control = new SoakControl(dir)
  const tables: { name: string; schema: unknown }[] = [{ name: 'orders', schema: ordersSchema(o) }]
  if (o.totalsEvery > 0) tables.push({ name: 'totals', schema: totalsSchema(o) })

  // every delivery of every totals message (which batch, what became of it), for the report
  // on an excess or a shortfall
  const totalsMeta = new Map<string, { customer: string; qty: number; deliveries: Delivery[] }>()
  let writerColdStarts = 0
  let compactorColdStarts = 0
  let redeliveredRecords = 0
  /** failed invocations by error, per function: injected faults, and anything else */
  const failures = { writer: new Map<string, number>(), compactor: new Map<string, number>() }
  const durations = { writer: [] as number[], compactor: [] as number[] }
  const noteFailure = (fn: 'writer' | 'compactor', result: InvokeResult) => {
    durations[fn].push(result.durationMs)
    if (result.ok) return
    const key = `${result.error.name}: ${result.error.message.replace(/\d+/g, 'N').slice(0, 120)}`
    failures[fn].set(key, (failures[fn].get(key) ?? 0) + 1)
  }
  // orders messages not yet acknowledged → (id, version); once the poller deleted one after a
  // successful invocation (which the writer answers only after its commit), the highest
  // acknowledged version per id
  const ordersPending = new Map<string, [number, number]>()
  const ackedVersion = new Map<number, number>()
  // with `events`: per function, the invocations that left messages on the queue, the
  // messages deleted since, and the start of the latest invocation that succeeded, to tell
  // when a fault's work was done again (kept only then: a long run's heap)
  const progress = { writer: newProgress(), compactor: newProgress() }
  const noteProgress = (fn: 'writer' | 'compactor', info: { records: { messageId: string }[]; result: InvokeResult; startedAt: number; endedAt: number; deleted: string[] }) => {
    if (!o.events) return
    const p = progress[fn]
    for (const id of info.deleted) p.deleted.add(id)
    if (info.deleted.length < info.records.length) {
      const deleted = new Set(info.deleted)
      p.failed.push({ startedAt: info.startedAt, endedAt: info.endedAt, left: info.records.map((r) => r.messageId).filter((id) => !deleted.has(id)) })
    }
    if (info.result.ok) p.lastOkStart = Math.max(p.lastOkStart, info.startedAt)
  }
  const onWriter = (info: { records: { messageId: string; attributes: { ApproximateReceiveCount: string } }[]; result: InvokeResult; startedAt: number; endedAt: number; deleted: string[] }) => {
    if (info.result.coldStart) writerColdStarts++
    noteFailure('writer', info.result)
    noteProgress('writer', info)
    const ids = info.records.map((r) => r.messageId).sort()
    const signature = createHash('sha1').update(ids.join(',')).digest('hex').slice(0, 16)
    for (const id of info.deleted) {
      const k = ordersPending.get(id)
      if (!k) continue
      ordersPending.delete(id)
      ackedVersion.set(k[0], Math.max(ackedVersion.get(k[0]) ?? 0, k[1]))
    }
    for (const r of info.records) {
      if (r.attributes.ApproximateReceiveCount !== '1') redeliveredRecords++
      totalsMeta.get(r.messageId)?.deliveries.push({
        batch: signature,
        receive: Number(r.attributes.ApproximateReceiveCount),
        outcome: info.result.ok ? 'ok' : info.result.error.name,
        deleted: info.deleted.includes(r.messageId),
        at: info.startedAt,
      })
    }
  }
  let jobsDelivered = 0
  // every compaction job received (the last few thousand per table), for the drain's diagnosis
  const jobLog = new Map<string, JobReceived[]>()
  // what the compactors logged of each message (lib/jobs/process-jobs.ts outcomes and failures), by message id
  const jobDetail = new Map<string, string>()
  const onCompactorLog = (_table: string, line: string) => {
    const detail = compactorLogDetail(line)
    if (!detail) return
    for (const id of detail.messageIds) jobDetail.set(id, detail.text)
    if (jobDetail.size > 20_000) for (const k of [...jobDetail.keys()].slice(0, 10_000)) jobDetail.delete(k)
  }
  const describeJob = (j: JobReceived, withKey: boolean) =>
    `@${j.at}s${withKey ? ` ${j.key}` : ''}${j.followUp ? ' follow-up' : ''} receive ${j.receive} ${j.outcome}${jobDetail.has(j.messageId) ? ` (${jobDetail.get(j.messageId)})` : ''}`
  let loadStart = Date.now()
  const rt: LocalRuntime = await startLocalRuntime({
    tables,
    writerModule: join(RUNTIME, 'soak-writer.ts'),
    compactorModule: join(RUNTIME, 'soak-compactor.ts'),
    writerConcurrency: o.writerConcurrency,
    writerBatchingWindowMs: o.writerBatchingWindowMs,
    visibilityTimeoutSeconds: o.visibilityTimeoutSeconds,
    maxReceiveCount: o.maxReceiveCount,
    timeoutMs: o.timeoutMs,
    isolation: o.isolation,
    ...(o.backendInProcess
      ? { latency: o.s3LatencyMs > 0 ? { firstByteMs: o.s3LatencyMs, applies: (r: { url: string }) => r.url.startsWith('/strata-local/') } : undefined }
      : { backendProcess: { firstByteMs: o.s3LatencyMs, pathPrefix: '/strata-local/' } }),
    env: {
      ...control.env(),
      STRATA_DEDUP_WINDOW_MS: String(o.dedupWindowMs),
      ...(o.metadataCacheMb === undefined ? {} : { STRATA_METADATA_CACHE_MB: String(o.metadataCacheMb) }),
      ...(o.footerCacheMb === undefined ? {} : { STRATA_FOOTER_CACHE_MB: String(o.footerCacheMb) }),
    },
    onWriterInvocation: onWriter,
    onCompactorLog,
    onCompactorInvocation: (t, info) => {
      if (info.result.coldStart) compactorColdStarts++
      jobsDelivered += info.records.length
      noteFailure('compactor', info.result)
      noteProgress('compactor', info)
      // each job received, for the drain's diagnosis of a bucket left without one
      const log = jobLog.get(t) ?? jobLog.set(t, []).get(t)!
      for (const r of info.records) {
        try {
          const job = JSON.parse(r.body) as { bucket: number; dedupKey?: string; followUp?: boolean }
          log.push({ at: Math.round((info.startedAt - loadStart) / 100) / 10, messageId: r.messageId, bucket: job.bucket, key: job.dedupKey ?? '-', followUp: job.followUp === true, receive: Number(r.attributes.ApproximateReceiveCount), outcome: info.result.ok ? (info.deleted.includes(r.messageId) ? 'deleted' : 'left') : info.result.error.name })
        } catch {
          log.push({ at: Math.round((info.startedAt - loadStart) / 100) / 10, messageId: r.messageId, bucket: -1, key: 'undecodable', followUp: false, receive: Number(r.attributes.ApproximateReceiveCount), outcome: '-' })
        }
      }
      if (log.length > 4000) log.splice(0, log.length - 2000)
    },
  })
  const maintenancePools = new Map<string, ExecutionEnvironmentPool>()
  let stopped = false
  // the loops below end when these go false (also when the soak fails half-way)
  let loadRunning = true
  let probing = true
  let maintaining = o.maintenanceEverySeconds > 0
  let sampler: NodeJS.Timeout | undefined
  try {
    const orders = rt.tables.get('orders')!
    const totals = rt.tables.get('totals')
    for (const t of rt.tables.values()) {
      maintenancePools.set(
        t.name,
        new ExecutionEnvironmentPool({
          handlerModule: join(FUNCTIONS, 'maintenance.ts'),
          env: { ...rt.env, STRATA_TABLE: t.name, AWS_LAMBDA_FUNCTION_NAME: `strata-${t.name}-maintenance`, STRATA_ORPHAN_OLDER_THAN_MS: String(o.orphanOlderThanMs) },
          maxEnvironments: 1,
          timeoutMs: 300_000,
          isolation: o.isolation,
        }),
      )
    }
    await o.afterStart?.(rt)
    // the soak's own readers (probes, status, compaction count) live as long as the soak: their
    // metadata caches are bounded like the functions' ones
    const readerOpen = { metadataCacheBytes: (o.metadataCacheMb ?? HARNESS_CACHE_MB) * 2 ** 20, ...(o.footerCacheMb === undefined ? {} : { footerCacheBytes: o.footerCacheMb * 2 ** 20 }) }
    const ordersReader = await Table.open(orders.table.store, readerOpen)
    const totalsReader = totals ? await Table.open(totals.table.store, readerOpen) : null
    const bucketStore = new S3Store({ bucket: rt.bucket, client: rt.backend.s3Client() })

    // ---- the model ----
    const versions = new Map<number, number>()
    const totalsModel = new Map<string, { qty: number; n: number }>()
    const probes: Probe[] = []
    const unseen = new Set<Probe>()
    const sent = { orders: 0, probes: 0, totals: 0, messages: 0 }

    const start = Date.now()
    loadStart = start
    const now = () => (Date.now() - start) / 1000
    const faults: FaultRecord[] = []
    const ev = o.events
    const invocations = (fn: 'writer' | 'compactor') => (fn === 'writer' ? rt.writer.stats.invocations : [...rt.tables.values()].reduce((n, x) => n + x.poller.stats.invocations, 0))
    /** epoch ms of each strike of a fault, and whether it struck an invocation (a restart may find an environment idle) */
    const strikes = new Map<number, { at: number; busy: boolean }[]>()
    /**
     * With `events`: what a struck fault still waits for, null once recovered: each
     * invocation it struck has been reported and every message that invocation left was
     * deleted since, and an invocation of its function that started after it succeeded.
     */
    const awaiting = (f: FaultRecord): string | null => {
      if (f.firedAt === null) return 'not struck'
      const p = progress[roleOf(f.kind)]
      for (const s of strikes.get(f.seq) ?? []) {
        if (!s.busy) continue
        // every failed invocation running when it struck (two may be, with concurrency)
        const struck = p.failed.filter((x) => x.startedAt <= s.at && s.at <= x.endedAt)
        if (struck.length === 0) return 'the invocation it struck not yet reported'
        const left = struck.flatMap((x) => x.left).filter((id) => !p.deleted.has(id))
        if (left.length) return `${left.length} message(s) it left not yet deleted (${left.slice(0, 3).join(', ')})`
      }
      if (p.lastOkStart <= start + f.firedAt * 1000) return `no ${roleOf(f.kind)} invocation succeeded since`
      return null
    }
    let awaitingLoggedAt = 0
    let lanesDone = false
    /** With `events`: why the load stops now, or null while it goes on. */
    const eventDriveStop = (e: EventDrive): string | null => {
      if (now() >= e.backstopSeconds) return `the backstop of ${e.backstopSeconds} s passed (${invocations('writer')} writer invocations)`
      if (invocations('writer') >= e.maxWriterInvocations) return `the bound of ${e.maxWriterInvocations} writer invocations was reached`
      if (sent.orders < e.minEvents || !lanesDone) return null
      const pending = faults.flatMap((f) => {
        const why = f.firedAt === null ? null : awaiting(f)
        return why === null ? [] : [`fault ${f.seq} (${f.kind}): ${why}`]
      })
      if (pending.length) {
        if (Date.now() - awaitingLoggedAt > 10_000) {
          awaitingLoggedAt = Date.now()
          log(`load goes on: ${pending.join('; ')}`)
        }
        return null
      }
      return `every fault struck and its work was done again, ${sent.orders} events sent (${invocations('writer')} writer and ${invocations('compactor')} compactor invocations)`
    }
    let loadStoppedBy = `its ${o.seconds} s`

    /** SendMessageBatch, 10 at a time; returns the message ids in order. */
    const send = async (bodies: string[]): Promise<string[]> => {
      const ids: string[] = []
      for (let i = 0; i < bodies.length; i += 10) {
        let chunk = bodies.slice(i, i + 10).map((b, j) => ({ Id: String(j), MessageBody: b }))
        const got = new Map<string, string>()
        // entries SQS reports as failed were not sent and go again; a call that throws
        // may have sent some, so it ends the soak rather than risk a second copy the model
        // does not know of
        for (let attempt = 0; chunk.length > 0; attempt++) {
          if (attempt > 0) await sleep(100)
          if (attempt > 20) throw new Error(`SendMessageBatch kept failing for entries ${chunk.map((c) => c.Id).join(', ')}`)
          const res = await rt.sqs.send(new SendMessageBatchCommand({ QueueUrl: rt.ingestQueueUrl, Entries: chunk }))
          for (const s of res.Successful ?? []) got.set(s.Id!, s.MessageId!)
          chunk = chunk.filter((c) => !got.has(c.Id))
        }
        for (let j = 0; j < Math.min(10, bodies.length - i); j++) ids.push(got.get(String(j))!)
      }
      sent.messages += bodies.length
      return ids
    }

    // ---- the load ----
    const sender = (async () => {
      const tickMs = 100
      const perTick = o.rate / (1000 / tickMs)
      let owed = 0
      let events = 0
      let nextProbeAt = 0
      const probeEveryTicks = Math.max(1, Math.round(o.probeEveryMs / tickMs))
      const goesOn = () => {
        if (!ev) return Date.now() - start < o.seconds * 1000
        const stop = eventDriveStop(ev)
        if (stop !== null) loadStoppedBy = stop
        return stop === null
      }
      for (let tick = 0; goesOn(); tick++) {
        if (ev) {
          // steps, not a schedule: a sender that waited does not catch up in a burst, and it
          // waits while the pipeline is this far behind, so a slow machine gets less load
          await sleep(tickMs)
          while (ordersPending.size >= ev.maxUnacked && eventDriveStop(ev) === null) await sleep(tickMs)
        } else {
          const wait = start + tick * tickMs - Date.now()
          if (wait > 0) await sleep(wait)
        }
        owed += perTick
        const bodies: string[] = []
        const bodyKeys: [number, number][] = []
        const totalsBodies: { customer: string; qty: number }[] = []
        const probesNow: Probe[] = []
        for (; owed >= 1; owed--) {
          const id = Math.floor(random() * o.keys)
          const version = (versions.get(id) ?? 0) + 1
          versions.set(id, version)
          bodies.push(JSON.stringify({ _table: 'orders', id, customer: `c${id % 97}`, amount: amountOf(id, version), version }))
          bodyKeys.push([id, version])
          sent.orders++
          events++
          if (o.totalsEvery > 0 && events % o.totalsEvery === 0) {
            const customer = `k${Math.floor(random() * o.totalsKeys)}`
            totalsBodies.push({ customer, qty: 1 + Math.floor(random() * 9) })
          }
        }
        if (ev ? tick % probeEveryTicks === 0 : Date.now() - start >= nextProbeAt) {
          nextProbeAt += o.probeEveryMs
          const id = PROBE_BASE + probes.length
          versions.set(id, 1)
          const p: Probe = { id, sentAt: Date.now(), seenAt: null }
          probesNow.push(p)
          bodies.push(JSON.stringify({ _table: 'orders', id, customer: 'probe', amount: amountOf(id, 1), version: 1 }))
          bodyKeys.push([id, 1])
          sent.probes++
        }
        const all = [...bodies, ...totalsBodies.map((x) => JSON.stringify({ _table: 'totals', customer: x.customer, qty: x.qty, n: 1 }))]
        if (all.length === 0) continue
        for (const p of probesNow) p.sentAt = Date.now()
        const ids = await send(all)
        bodyKeys.forEach((k, i) => ordersPending.set(ids[i], k))
        for (const p of probesNow) {
          probes.push(p)
          unseen.add(p)
        }
        totalsBodies.forEach((x, i) => {
          totalsMeta.set(ids[bodies.length + i], { ...x, deliveries: [] })
          const m = totalsModel.get(x.customer) ?? { qty: 0, n: 0 }
          m.qty += x.qty
          m.n += 1
          totalsModel.set(x.customer, m)
          sent.totals++
        })
      }
    })()

    // ---- probe visibility ----
    const prober = (async () => {
      while (probing) {
        await sleep(o.probeCheckMs)
        if (unseen.size === 0) continue
        try {
          const snapshotId = await ordersReader.snapshots.latestId()
          // the snapshot existed by now, so what it shows was visible by now
          const at = Date.now()
          if (snapshotId === 0) continue
          const list = [...unseen]
          for (let i = 0; i < list.length; i += 8) {
            await Promise.all(
              list.slice(i, i + 8).map(async (p) => {
                const row = await lookup(ordersReader, { id: p.id }, { snapshotId, columns: ['version'] })
                if (row !== null) {
                  p.seenAt = Math.max(at, p.sentAt)
                  unseen.delete(p)
                }
              }),
            )
          }
        } catch {
          // a snapshot expired under the lookup: the next round uses the newer one
        }
      }
    })()

    // ---- faults ----
    const bySeq = new Map<number, FaultRecord>()
    const absorbFired = () => {
      for (const f of control.newlyFired()) {
        const rec = bySeq.get(f.seq)
        if (!rec) continue
        rec.points.push(`${f.kind === 'restart' ? 'restart' : f.role}: ${f.point}${f.records ? ` (${f.records} records)` : ''}`)
        if (rec.firedAt === null) rec.firedAt = (f.at - start) / 1000
        if (f.kind === 'restart') rec.environmentsKilled = (rec.environmentsKilled ?? 0) + 1
        if (ev) (strikes.get(f.seq) ?? strikes.set(f.seq, []).get(f.seq)!).push({ at: f.at, busy: f.kind !== 'restart' || f.point.startsWith('busy') })
      }
    }
    let seq = 0
    const faultLane = async (kinds: readonly FaultKind[]) => {
      // the lane's clock: seconds, or with `events` the invocations of its functions
      const fns = [...new Set(kinds.map(roleOf))]
      const clock = () => (ev ? fns.reduce((n, fn) => n + invocations(fn), 0) : now())
      let next = ev ? ev.warmupInvocations : o.warmupSeconds
      let cycle: FaultKind[] = []
      let cycles = 0
      while (loadRunning) {
        if (clock() < next) {
          await sleep(ev ? 200 : Math.min(500, (next - now()) * 1000))
          continue
        }
        if (kinds.length === 0 || (!ev && now() > faultsUntil)) break
        if (ev && kinds.every((k) => faults.filter((f) => f.kind === k && f.firedAt !== null).length >= ev.rounds)) break
        const replacingOver = !ev && o.replacingFaultsUntilSeconds !== undefined && now() > o.replacingFaultsUntilSeconds
        if (replacingOver) cycle = cycle.filter((k) => !replacesEnvironment(k))
        if (cycle.length === 0) {
          cycle = kinds.filter((k) => !replacingOver || !replacesEnvironment(k))
          if (cycle.length === 0) break
          for (let i = cycle.length - 1; i > 0; i--) {
            const j = Math.floor(random() * (i + 1))
            ;[cycle[i], cycle[j]] = [cycle[j], cycle[i]]
          }
          // the first cycle strikes the replacing kinds while they may
          if (!ev && o.replacingFaultsUntilSeconds !== undefined && !replacingOver && cycles++ === 0) cycle = [...cycle.filter(replacesEnvironment), ...cycle.filter((k) => !replacesEnvironment(k))]
        }
        const kind = cycle.shift()!
        const rec: FaultRecord = { seq: ++seq, kind, armedAt: now(), firedAt: null, points: [], peakLagMs: null, recovered: null, recoverySeconds: null }
        faults.push(rec)
        bySeq.set(rec.seq, rec)
        if (kind === 'compactor-restart') {
          // a restart needs environments to kill: wait for a warm one (one that imported its
          // handler; an environment still importing it cannot hear a restart)
          const warm = () => [...rt.tables.values()].reduce((n, x) => n + x.pool.ready, 0)
          const deadline = Date.now() + 60_000
          while (warm() === 0 && loadRunning && (ev || Date.now() < deadline)) await sleep(200)
          rec.environmentsBefore = [...rt.tables.values()].reduce((n, x) => n + x.pool.size, 0)
          const postedAt = now()
          rec.environmentsKilled = 0
          control.restart('compactor', rec.seq)
          // a busy environment hears it once its event loop turns: with `events`, give it
          // until 10 compactor invocations ended, not 3 s
          const posted = invocations('compactor')
          for (let i = 0; rec.environmentsKilled === 0 && (ev ? loadRunning && invocations('compactor') - posted < 10 : i < 15); i++) {
            await sleep(200)
            absorbFired()
          }
          rec.firedAt = rec.environmentsKilled > 0 ? postedAt : null
        } else {
          const [role, what] = kind.startsWith('writer') ? (['writer', kind.slice(7)] as const) : (['compactor', kind.slice(10)] as const)
          const armed: ArmedFault = {
            seq: rec.seq,
            role,
            kind: what === 'throw' ? 'throw' : what === 'exit-after-commit' ? 'exit-after-return' : 'exit-at-write',
            share: random(),
            landed: random() < 0.5,
          }
          control.arm(armed)
          // the next invocation of the function claims it; given up (and armed again) after
          // 60 s, or with `events` after 50 invocations that did not
          const deadline = Date.now() + 60_000
          const armedAt = invocations(role)
          while (rec.firedAt === null && loadRunning) {
            await sleep(200)
            absorbFired()
            if ((ev ? invocations(role) - armedAt > 50 : Date.now() > deadline) && control.disarm(armed)) break
          }
          if (rec.firedAt === null) control.disarm(armed)
        }
        // not struck (nothing claimed it, no environment heard it): it comes again next
        if (rec.firedAt === null && loadRunning) cycle.unshift(kind)
        log(`fault ${rec.seq} ${kind} at ${(rec.firedAt ?? now()).toFixed(1)} s: ${kind === 'compactor-restart' ? `${rec.environmentsKilled} environment(s) killed` : (rec.points[0] ?? 'not claimed')}`)
        next = ev ? clock() + Math.round(ev.faultEveryInvocations * (0.5 + random())) : (rec.firedAt ?? now()) + o.faultEverySeconds * (0.5 + random())
      }
    }
    const faultLoop = (
      o.parallelRoles
        ? Promise.all([faultLane(o.kinds.filter((k) => k.startsWith('writer'))), faultLane(o.kinds.filter((k) => k.startsWith('compactor')))])
        : faultLane(o.kinds)
    ).then(() => {
      lanesDone = true
    })

    // ---- maintenance, as the schedule would run it: each table's function on its own schedule ----
    const maint: SoakResult['maintenance'] = { runs: 0, failed: 0, errors: [], snapshotsExpired: 0, orphansDeleted: 0, markersDeleted: 0, sweptJobs: 0, stepSeconds: {} }
    const maintenanceLoop = Promise.all(
      [...maintenancePools].map(async ([name, pool]) => {
        let next = o.maintenanceEverySeconds
        let nextOrphans = o.orphansEverySeconds || Infinity
        while (maintaining) {
          const orphans = now() >= nextOrphans
          if (now() < next && !orphans) {
            await sleep(Math.min(500, (Math.min(next, nextOrphans) - now()) * 1000))
            continue
          }
          // a run that outlasts the period starts the next one late, not twice
          if (orphans) nextOrphans = Math.max(nextOrphans + o.orphansEverySeconds, now())
          else next = Math.max(next + o.maintenanceEverySeconds, now())
          const r = await pool.invoke(orphans ? { task: REMOVE_ORPHANS_TASK } : { 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date().toISOString(), detail: {} })
          maint.runs++
          if (!r.ok) {
            maint.failed++
            if (maint.errors.length < 10) maint.errors.push(`${name} at ${now().toFixed(0)} s: ${r.error.name}: ${r.error.message}`)
            continue
          }
          const v = r.value as { expired: { expired: number[] } | null; orphansDeleted: number | null; markersDeleted: number | null; sweptJobs?: number | null; timings?: Record<string, number> }
          maint.snapshotsExpired += v.expired?.expired.length ?? 0
          maint.orphansDeleted += v.orphansDeleted ?? 0
          maint.markersDeleted += v.markersDeleted ?? 0
          maint.sweptJobs = (maint.sweptJobs ?? 0) + (v.sweptJobs ?? 0)
          for (const [step, ms] of Object.entries(v.timings ?? {})) {
            const t = (maint.stepSeconds[step] ??= { total: 0, max: 0 })
            t.total = Math.round((t.total + ms / 1000) * 10) / 10
            t.max = Math.max(t.max, Math.round(ms / 100) / 10)
          }
        }
      }),
    )

    // ---- samples ----
    const samples: Sample[] = []
    const peakJobs = { orders: 0, totals: 0 }
    // bucket compactions that landed: the distinct buckets of each new COMPACT snapshot
    // (read as they appear, before maintenance expires them)
    let bucketCompactions = 0
    const seenUpTo = new Map<Table, number>()
    const countCompactions = async () => {
      for (const t of [ordersReader, totalsReader]) {
        if (!t) continue
        const latest = await t.snapshots.latestId()
        for (let id = (seenUpTo.get(t) ?? 0) + 1; id <= latest; id++) {
          const snap = await t.snapshots.snapshot(id)
          if (snap?.commitKind !== 'COMPACT') continue
          bucketCompactions += new Set((await t.manifests.deltaEntries(snap)).map((e) => `${Buffer.from(e.partition).toString('hex')}|${e.bucket}`)).size
        }
        seenUpTo.set(t, latest)
      }
    }
    let sampling = false
    let sampleCount = 0
    // every function's environments, by role, for the memory samples
    const pools: Record<Role, ExecutionEnvironmentPool[]> = {
      writer: [rt.writerPool],
      compactor: [...rt.tables.values()].map((x) => x.pool),
      committer: [...rt.tables.values()].map((x) => x.committerPool),
      maintenance: [...maintenancePools.values()],
    }
    const sampleOnce = async () => {
      const t = now()
      const [ost, tst] = await Promise.all([tableStatus(ordersReader), totalsReader ? tableStatus(totalsReader) : Promise.resolve(null)])
      const [ingestQueue, ordersJobs, totalsJobs] = await Promise.all([
        rt.queueDepth(rt.ingestQueueUrl),
        rt.queueDepth(orders.compactionQueueUrl),
        totals ? rt.queueDepth(totals.compactionQueueUrl) : Promise.resolve(0),
      ])
      peakJobs.orders = Math.max(peakJobs.orders, ordersJobs)
      peakJobs.totals = Math.max(peakJobs.totals, totalsJobs)
      await countCompactions()
      const memory = await sampleMemory(pools, sampleCount % 10 === 0, sampleCount % 10 === 0)
      let oldestUnseen = Infinity
      for (const p of unseen) oldestUnseen = Math.min(oldestUnseen, p.sentAt)
      const probeAgeMs = oldestUnseen === Infinity ? 0 : Date.now() - oldestUnseen
      const l0AgeMs = Math.max(ost.maxFreshnessLagMs ?? 0, tst?.maxFreshnessLagMs ?? 0)
      const s: Sample = {
        t: Math.round(t * 10) / 10,
        rssMb: memory.rssMb,
        memory,
        ingestQueue,
        ordersJobs,
        totalsJobs,
        ordersL0: ost.buckets.reduce((n, b) => n + b.l0Files, 0),
        ordersMaxL0: ost.maxL0Files,
        totalsL0: tst ? tst.buckets.reduce((n, b) => n + b.l0Files, 0) : 0,
        l0AgeMs,
        probeAgeMs,
        lagMs: Math.max(l0AgeMs, probeAgeMs),
        compactorEnvironments: [...rt.tables.values()].reduce((n, x) => n + x.pool.size, 0),
      }
      if (sampleCount++ % 10 === 0) {
        const { stats: backend, memory: backendMemory } = await rt.backend.stats(s.memory.settled)
        s.backend = { ...backend, s3: { ...backend.s3, byDirectory: backend.s3.byDirectory.slice(0, 10) } }
        if (backendMemory) s.memory.backend = { rssMb: mb(backendMemory.rss), heapUsedMb: mb(backendMemory.heapUsed), arrayBuffersMb: mb(backendMemory.arrayBuffers) }
        s.storeObjects = backend.s3.objects
        s.storeMb = mb(backend.s3.bytes)
        s.snapshotsRetained = (await ordersReader.snapshots.latestId()) - (await ordersReader.snapshots.earliestId()) + 1
        let dlq = await rt.queueDepth(rt.ingestDlqUrl)
        for (const x of rt.tables.values()) dlq += await rt.queueDepth(x.dlqUrl)
        s.dlq = dlq
        const cache = ordersReader.manifests.cacheStats()
        s.readerCacheEntries = cache.entries
        s.readerCacheMb = mb(cache.bytes)
      }
      samples.push(s)
      absorbFired()
      if (sampleCount % Math.max(1, Math.round(10_000 / o.sampleEveryMs)) === 1) {
        log(
          `${s.t.toFixed(0).padStart(4)} s | sent ${sent.orders} + ${sent.probes} probes + ${sent.totals} totals | lag ${(s.lagMs / 1000).toFixed(1)} s (probe ${(s.probeAgeMs / 1000).toFixed(1)}, L0 ${(s.l0AgeMs / 1000).toFixed(1)}) | L0 ${s.ordersL0}+${s.totalsL0} | queues ${s.ingestQueue}/${s.ordersJobs}/${s.totalsJobs} | rss ${s.rssMb} MB: heap ${s.memory.main.heapUsedMb} main + ${s.memory.envHeapUsedMb} in ${Object.values(s.memory.roles).reduce((n, r) => n + r.environments, 0)} envs, non-heap ${s.memory.nonHeapMb} (external ${s.memory.main.externalMb} main + ${s.memory.envExternalMb} envs) | faults ${faults.filter((f) => f.firedAt !== null).length}`,
        )
      }
    }
    sampler = setInterval(() => {
      if (sampling) return
      sampling = true
      void sampleOnce()
        .catch((e) => log(`sample failed: ${(e as Error).message}`))
        .finally(() => (sampling = false))
    }, o.sampleEveryMs)

    await sender
    const loadSeconds = now()
    loadRunning = false
    await faultLoop
    // maintenance goes on through the drain, as its schedule does when the writes stop: its
    // sweep is what heals a bucket whose job was lost (lib/jobs/coalesce.ts stalledBucketJobs)
    log(`load done at ${loadSeconds.toFixed(0)} s (${loadStoppedBy}); draining`)

    // ---- drain ----
    const drainStart = Date.now()
    let drained = false
    const l0Of = async (tb: Table | null) => {
      if (!tb) return 0
      try {
        return (await tableStatus(tb)).buckets.reduce((n, b) => n + b.l0Files, 0)
      } catch {
        return -1 // read raced an expiration: not known to be drained
      }
    }
    while (Date.now() - drainStart < o.drainTimeoutSeconds * 1000) {
      const idle = rt.writer.inFlight === 0 && [...rt.tables.values()].every((x) => x.poller.inFlight === 0)
      const queues = (await rt.queueDepth(rt.ingestQueueUrl)) + (await rt.queueDepth(orders.compactionQueueUrl)) + (totals ? await rt.queueDepth(totals.compactionQueueUrl) : 0)
      if (idle && queues === 0 && unseen.size === 0 && (await l0Of(ordersReader)) === 0 && (await l0Of(totalsReader)) === 0) {
        drained = true
        break
      }
      await sleep(500)
    }
    const drainSeconds = (Date.now() - drainStart) / 1000
    maintaining = false
    await maintenanceLoop
    clearInterval(sampler)
    while (sampling) await sleep(50)
    probing = false
    await prober
    absorbFired()
    log(`drain ${drained ? 'done' : 'TIMED OUT'} in ${drainSeconds.toFixed(0)} s; checking`)

    // ---- checks ----
    const checks: Check[] = []
    const check = (name: string, problems: string[], okDetail: string, info = false) =>
      checks.push({ name, ok: problems.length === 0, detail: problems.length ? `${problems.length} problem(s): ${problems.slice(0, 8).join('; ')}` : okDetail, info })
    // a bucket left with level-0 files and no job: its job key now, and the jobs it got under that key
    const stalled: string[] = []
    if (!drained) {
      for (const [name, reader] of [['orders', ordersReader], ['totals', totalsReader]] as const) {
        if (!reader) continue
        try {
          const status = await tableStatus(reader)
          const latest = await reader.snapshots.latestId()
          for (const b of status.buckets.filter((x) => x.l0Files > 0)) {
            const [job] = await bucketsNeedingJobs(reader, latest, [{ partition: NO_PARTITION, bucket: b.bucket }])
            const got = (jobLog.get(name) ?? []).filter((j) => j.bucket === b.bucket)
            const sameKey = job ? got.filter((j) => j.key === job.dedupKey) : []
            stalled.push(
              `${name} bucket ${b.bucket}: ${b.l0Files} L0 files at snapshot ${latest}, job key now ${job?.dedupKey ?? '(none due)'}; ` +
                `jobs received under it: ${sameKey.map((j) => describeJob(j, false)).join(', ') || 'none'}; ` +
                `last jobs received: ${got.slice(-4).map((j) => describeJob(j, true)).join(', ') || 'none'}`,
            )
          }
        } catch (e) {
          stalled.push(`${name}: status not read (${(e as Error).message})`)
        }
      }
      for (const line of stalled) log(`stalled: ${line}`)
    }
    check('drain', drained ? [] : [`not drained within ${o.drainTimeoutSeconds} s (queues, in-flight invocations, L0 files or unseen probes left)`, ...stalled], `queues empty, no L0 file left, in ${drainSeconds.toFixed(0)} s`)

    const dlqProblems: string[] = []
    const ingestDlq = await rt.queueDepth(rt.ingestDlqUrl)
    if (ingestDlq) dlqProblems.push(`${ingestDlq} ingest message(s) in the dead-letter queue`)
    for (const x of rt.tables.values()) {
      const d = await rt.queueDepth(x.dlqUrl)
      if (d) dlqProblems.push(`${d} ${x.name} compaction job(s) in the dead-letter queue`)
    }
    check('dead-letter queues empty', dlqProblems, 'no message dead-lettered')

    const rejects = await bucketStore.list('rejects/')
    check('nothing rejected', rejects.length ? [`${rejects.length} reject file(s)`] : [], 'no reject file')

    const verifyOrders = async (what: string) => {
      const table = await Table.open(orders.table.store)
      const rows = await readAll(table)
      const problems: string[] = []
      const stale: string[] = []
      const seen = new Set<number>()
      for (const r of rows) {
        const id = Number(r[0])
        if (seen.has(id)) problems.push(`id ${id} read twice`)
        seen.add(id)
        const want = versions.get(id)
        if (want === undefined) problems.push(`id ${id} read but never sent`)
        else if (r[3] !== want) {
          // the latest version was acknowledged, so committed: an older version written
          // after it won the merge, not a lost message
          if (ackedVersion.get(id) === want && o.tolerateStaleVersions) stale.push(`id ${id} at version ${r[3]}, expected ${want}`)
          else problems.push(`id ${id} at version ${r[3]}, expected ${want}${ackedVersion.get(id) === want ? ' (the latest was acknowledged: an older version written later won)' : ` (the latest acknowledged: ${ackedVersion.get(id) ?? 'none'})`}`)
        }
        else if (r[2] !== unscaledAmountOf(id, want) || r[1] !== (id >= PROBE_BASE ? 'probe' : `c${id % 97}`)) problems.push(`id ${id}: columns ${JSON.stringify(r.map(String))} differ from what was sent`)
      }
      for (const id of versions.keys()) if (!seen.has(id)) problems.push(`id ${id} lost`)
      check(`orders${what}: every key once, at its latest version`, problems, `${rows.length} rows = ${versions.size} keys sent (${sent.probes} probes), each once at its latest version${stale.length ? ', except the stale ones below' : ''}`)
      if (what === '' && o.tolerateStaleVersions) {
        staleVersions = stale.length
        checks.push({
          name: 'orders: the highest version wins when an older one is committed after it (sequence.field with deletion vectors)',
          ok: stale.length === 0,
          info: true,
          detail: stale.length ? `${stale.length} key(s) at an older version although the latest was acknowledged: ${stale.slice(0, 6).join('; ')}` : 'held',
        })
      }
    }
    let staleVersions = 0
    await verifyOrders('')

    const gap = { keys: 0, excess: 0, explainable: 0, regroupedMessages: 0, redeliveredMessages: 0 }
    const verifyTotals = async (what: string) => {
      if (!totals) return
      const table = await Table.open(totals.table.store)
      const rows = await readAll(table)
      const got = new Map(rows.map((r) => [String(r[0]), { qty: Number(r[1]), n: Number(r[2]) }]))
      // the most each key could be over by: every delivery after the first may have been
      // written again (in another batch: the known gap; concurrently with the first, when a
      // visibility timeout ran out under a slow invocation)
      const bound = new Map<string, { qty: number; n: number }>()
      let regrouped = 0
      let redelivered = 0
      for (const m of totalsMeta.values()) {
        if (new Set(m.deliveries.map((d) => d.batch)).size > 1) regrouped++
        if (m.deliveries.length < 2) continue
        redelivered++
        const b = bound.get(m.customer) ?? { qty: 0, n: 0 }
        b.qty += m.qty * (m.deliveries.length - 1)
        b.n += m.deliveries.length - 1
        bound.set(m.customer, b)
      }
      /** the key's messages with a delivery history worth reading (redelivered or failed first) */
      const historyOf = (k: string) =>
        [...totalsMeta.entries()]
          .filter(([, m]) => m.customer === k)
          .sort(([, a], [, b]) => b.deliveries.length - a.deliveries.length)
          .slice(0, 3)
          .map(([id, m]) => `${id.slice(0, 8)} qty ${m.qty}: ${m.deliveries.map((d) => `#${d.receive} batch ${d.batch.slice(0, 6)} ${d.outcome}${d.deleted ? ' deleted' : ''} @${((d.at - start) / 1000).toFixed(1)}s`).join(', ') || 'never delivered'}`)
          .join('; ')
      const problems: string[] = []
      const gapNotes: string[] = []
      let excessN = 0, gapKeys = 0
      for (const [k, want] of totalsModel) {
        const g = got.get(k)
        if (!g) {
          problems.push(`${k} lost (expected n=${want.n}) [${historyOf(k)}]`)
          continue
        }
        const dq = g.qty - want.qty, dn = g.n - want.n
        if (dq === 0 && dn === 0) continue
        const b = bound.get(k) ?? { qty: 0, n: 0 }
        if (dq < 0 || dn < 0) problems.push(`${k}: qty ${g.qty}/n ${g.n}, expected ${want.qty}/${want.n} (short: messages lost) [${historyOf(k)}]`)
        else if (dq > b.qty || dn > b.n) problems.push(`${k}: qty ${g.qty}/n ${g.n}, expected ${want.qty}/${want.n}, more than redeliveries explain (≤ +${b.qty}/+${b.n}) [${historyOf(k)}]`)
        else {
          gapKeys++
          excessN += dn
          gapNotes.push(`${k} +${dn} message(s)`)
        }
      }
      for (const k of got.keys()) if (!totalsModel.has(k)) problems.push(`${k} read but never sent`)
      if (what === '') {
        gap.keys = gapKeys
        gap.excess = excessN
        gap.explainable = [...bound.values()].reduce((a, b) => a + b.n, 0)
        gap.regroupedMessages = regrouped
        gap.redeliveredMessages = redelivered
      }
      check(
        `totals${what}: no message lost, no excess beyond what redeliveries explain`,
        problems,
        gapKeys ? `${rows.length} keys; nothing short; an excess only where redeliveries explain it (below)` : `${rows.length} keys, sums of ${sent.totals} messages exact`,
      )
      if (what === '') {
        checks.push({
          name: 'totals: every redelivered message applied once (docs/reliability.md: the batch-regrouping gap)',
          ok: gapKeys === 0,
          info: true,
          detail: `${gapKeys ? `${excessN} message(s) applied twice over ${gapKeys} key(s) (${gapNotes.slice(0, 6).join(', ')})` : 'no excess'}; ${redelivered} message(s) delivered more than once, ${regrouped} of them in more than one distinct batch`,
        })
      }
    }
    await verifyTotals('')

    // every retained snapshot reads, and everything it references exists
    const refProblems: string[] = []
    const referenced = new Map<string, Set<string>>()
    let snapshotsChecked = 0
    for (const x of rt.tables.values()) {
      const table = await Table.open(x.table.store)
      const { earliest, latest } = await snapshotRange(table)
      const keys = new Set<string>()
      for (let id = earliest; id <= latest && latest > 0; id++) {
        const s = await table.snapshots.snapshot(id)
        if (!s) {
          refProblems.push(`${x.name}: snapshot ${id} missing inside ${earliest}..${latest}`)
          continue
        }
        snapshotsChecked++
        try {
          for (const k of await snapshotReferences(table, s, 'throw')) keys.add(k)
        } catch (e) {
          refProblems.push(`${x.name}: snapshot ${id}: ${(e as Error).message}`)
        }
      }
      const list = [...keys]
      for (let i = 0; i < list.length; i += 32) {
        await Promise.all(
          list.slice(i, i + 32).map(async (k) => {
            if ((await x.table.store.head(k)) === null) refProblems.push(`${x.name}: a retained snapshot references missing ${k}`)
          }),
        )
      }
      referenced.set(x.name, keys)
    }
    check('no snapshot references a missing file', refProblems, `${snapshotsChecked} retained snapshots, ${[...referenced.values()].reduce((a, s) => a + s.size, 0)} referenced objects, all present`)

    // what is not referenced is garbage orphan cleanup takes, and taking it loses nothing
    const orphanProblems: string[] = []
    let orphansAtEnd = 0
    for (const x of rt.tables.values()) {
      const table = await Table.open(x.table.store)
      try {
        orphansAtEnd += (await removeOrphanFiles(table, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now: Date.now() + MIN_ORPHAN_OLDER_THAN_MS + 3_600_000 })).deleted.length
      } catch (e) {
        orphanProblems.push(`${x.name}: orphan cleanup failed: ${(e as Error).message}`)
      }
      const keys = referenced.get(x.name)!
      for (const obj of await x.table.store.list('')) {
        if (/^(schema|snapshot|_strata)\//.test(obj.key)) continue
        if (!keys.has(obj.key)) orphanProblems.push(`${x.name}: ${obj.key} is neither referenced nor removed by orphan cleanup`)
      }
    }
    check('orphan cleanup leaves only referenced files', orphanProblems, `${orphansAtEnd} unreferenced object(s) removed at the end (crashed writes, expired snapshots' leftovers)`)
    await verifyOrders(' after orphan cleanup')
    await verifyTotals(' after orphan cleanup')

    check(
      'maintenance runs succeeded',
      maint.errors,
      `${maint.runs} runs: ${maint.snapshotsExpired} snapshots expired, ${maint.orphansDeleted} orphans and ${maint.markersDeleted} ingest markers deleted`,
      true,
    )
    // the maintenance sweep (lib/jobs/coalesce.ts stalledBucketJobs) had to send a job: a
    // bucket waited past its age without one, which the coalescing argument rules out unless
    // its job was queued behind a backlog that long; reported, with the jobs it received
    // with the jobs the bucket received before the sweep's, and what the compactors made of them
    const swept = [...jobLog.entries()].flatMap(([t, js]) =>
      js.flatMap((j, i) => {
        if (!j.key.startsWith('sweep:')) return []
        const before = js.slice(0, i).filter((x) => x.bucket === j.bucket).slice(-4)
        return [`${t} bucket ${j.bucket} @${j.at}s, after ${before.map((x) => describeJob(x, true)).join(', ') || 'no job'}`]
      }),
    )
    check('no bucket needed the maintenance sweep', swept.length ? [`${maint.sweptJobs} sweep job(s) sent, received: ${swept.join(', ')}`] : [], 'no sweep job sent', true)
    // a level-0 file that waited longer than a fault's recovery allows: a bucket without a
    // job (its jobs dropped as duplicates until SQS's 5-minute window lets one through, or
    // the sweep sends one), which the probes' lag does not show when it is the totals table's
    const waits = longLevelZeroWaits(samples, o.recoverWithinSeconds * 1000)
    check(
      `no level-0 file waited longer than ${o.recoverWithinSeconds} s`,
      waits.map((w) => `oldest level-0 file ${(w.maxMs / 1000).toFixed(0)} s old at ${w.peakAt} s (over ${o.recoverWithinSeconds} s from ${w.from} to ${w.to} s; level-0 files then: orders ${w.ordersL0}, totals ${w.totalsL0})`),
      `oldest level-0 file at most ${(Math.max(0, ...samples.map((x) => x.l0AgeMs)) / 1000).toFixed(1)} s old`,
      true,
    )
    const unseenProbes = unseen.size
    check('every probe became visible', unseenProbes ? [`${unseenProbes} of ${probes.length} probes never visible`] : [], `${probes.length} probes`)

    // ---- analysis ----
    const loadSamples = samples.filter((s) => s.t <= loadSeconds)
    const firstFault = faults.find((f) => f.firedAt !== null)?.firedAt ?? loadSeconds
    const baselineLags = loadSamples.filter((s) => s.t >= Math.min(10, o.warmupSeconds / 2) && s.t < firstFault).map((s) => s.lagMs)
    const baselineP99 = pct(baselineLags, 99)
    const thresholdMs = o.lagThresholdMs ?? Math.max(10_000, 2 * (baselineP99 ?? 0))
    faultRecovery(faults, samples, thresholdMs, o.recoverWithinSeconds)
    const firedFaults = faults.filter((f) => f.firedAt !== null)
    const notRecovered = firedFaults.filter((f) => f.recovered === false)
    const overlapped = firedFaults.filter((f) => f.recovered === null)
    check(
      `lag back under ${(thresholdMs / 1000).toFixed(0)} s within ${o.recoverWithinSeconds} s of each fault (or before the next one)`,
      notRecovered.map((f) => `fault ${f.seq} (${f.kind} at ${f.firedAt!.toFixed(0)} s): peak ${((f.peakLagMs ?? 0) / 1000).toFixed(1)} s, not back under the threshold in ${o.recoverWithinSeconds} s`),
      `${firedFaults.length - overlapped.length} faults recovered (slowest ${Math.max(0, ...firedFaults.map((f) => f.recoverySeconds ?? 0)).toFixed(0)} s)${overlapped.length ? `; ${overlapped.length} not yet back when the next fault struck, judged with it` : ''}`,
      !o.strictTiming,
    )
    const notFired = faults.filter((f) => f.firedAt === null)
    check('every armed fault fired', notFired.map((f) => `fault ${f.seq} (${f.kind}) was never claimed`), `${faults.length} faults fired`, true)
    if (ev) {
      // driven by events, the load went on until every kind struck: one that did not means the bound was reached
      const never = o.kinds.filter((k) => !faults.some((f) => f.kind === k && f.firedAt !== null))
      check(
        'every fault kind struck',
        never.length ? [`never struck: ${never.join(', ')}; the load stopped: ${loadStoppedBy}`] : [],
        `${firedFaults.length} faults of ${o.kinds.length} kinds; the load stopped: ${loadStoppedBy}`,
      )
    }

    const windows: WindowStats[] = []
    for (let from = 0; from < loadSeconds + drainSeconds; from += o.windowSeconds) {
      const to = from + o.windowSeconds
      const ws = samples.filter((s) => s.t >= from && s.t < to)
      if (ws.length === 0) continue
      const ps = probes.filter((p) => (p.sentAt - start) / 1000 >= from && (p.sentAt - start) / 1000 < to)
      const lags = ps.filter((p) => p.seenAt !== null).map((p) => p.seenAt! - p.sentAt)
      windows.push({
        from,
        to,
        probes: ps.length,
        probeLagP50Ms: pct(lags, 50),
        probeLagP99Ms: pct(lags, 99),
        probeLagMaxMs: lags.length ? Math.max(...lags) : null,
        l0AgeMaxMs: Math.max(...ws.map((s) => s.l0AgeMs)),
        lagMaxMs: Math.max(...ws.map((s) => s.lagMs)),
        rssMedianMb: pct(ws.map((s) => s.rssMb), 50)!,
        rssMaxMb: Math.max(...ws.map((s) => s.rssMb)),
        mainHeapMedianMb: pct(ws.map((s) => s.memory.main.heapUsedMb), 50)!,
        envHeapMedianMb: pct(ws.map((s) => s.memory.envHeapUsedMb), 50)!,
        nonHeapMedianMb: pct(ws.map((s) => s.memory.nonHeapMb), 50)!,
        maxIngestQueue: Math.max(...ws.map((s) => s.ingestQueue)),
        maxJobs: Math.max(...ws.map((s) => s.ordersJobs + s.totalsJobs)),
        faults: faults.filter((f) => f.firedAt !== null && f.firedAt >= from && f.firedAt < to).map((f) => f.kind),
      })
    }

    // memory once the caches and retention reached their steady state (soak-memory.ts)
    const stores = loadSamples.filter((s) => s.storeMb !== undefined)
    const memory = { ...memoryVerdict(loadSamples, o.memoryFromSeconds ?? loadSeconds / 2, loadSeconds, o.memoryLimitMbPerMin), storeMbFirst: stores[0]?.storeMb ?? null, storeMbLast: stores.at(-1)?.storeMb ?? null }
    checks.push({ name: 'memory flat', ok: memory.flat, info: !o.strictTiming, detail: memoryDetail(memory) })

    const probeLags = probes.filter((p) => p.seenAt !== null).map((p) => p.seenAt! - p.sentAt)
    const faultCounts: SoakResult['faultCounts'] = {}
    for (const f of faults) {
      const c = (faultCounts[f.kind] ??= { armed: 0, fired: 0, recovered: 0, overlapped: 0 })
      c.armed++
      if (f.firedAt !== null) c.fired++
      if (f.recovered) c.recovered++
      if (f.firedAt !== null && f.recovered === null) c.overlapped++
    }
    const compStats = [...rt.tables.values()].map((x) => x.poller.stats)
    const result: SoakResult = {
      params: { ...o, log: undefined, afterStart: undefined } as Omit<SoakOptions, 'log'>,
      loadSeconds: Math.round(loadSeconds),
      loadStoppedBy,
      drainSeconds: Math.round(drainSeconds),
      drained,
      wallSeconds: 0,
      sent,
      distinctOrderKeys: versions.size,
      writer: { ...rt.writer.stats, coldStarts: writerColdStarts, redeliveredRecords, failures: Object.fromEntries(failures.writer), durationMs: durationsOf(durations.writer) },
      compactor: {
        invocations: compStats.reduce((a, s) => a + s.invocations, 0),
        succeeded: compStats.reduce((a, s) => a + s.succeeded, 0),
        crashes: compStats.reduce((a, s) => a + s.crashes, 0),
        failedRecords: compStats.reduce((a, s) => a + s.failedRecords, 0),
        coldStarts: compactorColdStarts,
        failures: Object.fromEntries(failures.compactor),
        durationMs: durationsOf(durations.compactor),
      },
      maintenance: maint,
      jobs: {
        delivered: jobsDelivered,
        traced: jobDetail.size,
        bucketCompactions,
        peakDepth: { orders: peakJobs.orders, totals: peakJobs.totals },
        peakPerBucket: { orders: peakJobs.orders / o.buckets, totals: totalsReader ? peakJobs.totals / o.totalsBuckets : 0 },
      },
      faults,
      faultCounts,
      lag: {
        thresholdMs,
        baselineP99Ms: baselineP99,
        probeP50Ms: pct(probeLags, 50),
        probeP99Ms: pct(probeLags, 99),
        probeMaxMs: probeLags.length ? Math.max(...probeLags) : null,
        unseenProbes,
        maxRecoverySeconds: firedFaults.length ? Math.max(...firedFaults.map((f) => f.recoverySeconds ?? Infinity)) : null,
      },
      memory,
      totalsGap: gap,
      staleVersions,
      windows,
      samples,
      checks,
      ok: checks.every((c) => c.ok || c.info),
    }
    await rt.stop()
    stopped = true
    for (const p of maintenancePools.values()) await p.close()
    result.wallSeconds = Math.round((Date.now() - wallStart) / 1000)
    return result
  } finally {
    loadRunning = probing = maintaining = false
    clearInterval(sampler)
    if (!stopped) {
      await rt.stop().catch(() => undefined)
      for (const p of maintenancePools.values()) await p.close().catch(() => undefined)
    }
    control.close()
    rmSync(dir, { recursive: true, force: true })
  }
}
