// The soak's options and defaults, what it reports, and the few helpers its parts share
// (soak-run.ts runs it; soak-invocations.ts, soak-load.ts, soak-faults.ts, soak-sampler.ts and
// soak-checks.ts are its parts).

import type { Table } from '../../lib/handle/table.ts'
import { MIN_ORPHAN_OLDER_THAN_MS } from '../../lib/maintenance/orphans.ts'
import type { EmbeddedStats } from '../../local/embedded.ts'
import type { LocalRuntime, LocalTable } from '../../local/runtime/local-runtime.ts'
import type { MemorySample, MemoryVerdict } from './soak-memory.ts'
import { percentile } from './stats.ts'

export const PROBE_BASE = 1_000_000_000

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

export const pct = (xs: number[], p: number): number | null => percentile(xs, p, null)

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export const roleOf = (kind: FaultKind): 'writer' | 'compactor' => (kind.startsWith('writer') ? 'writer' : 'compactor')

/** What the soak's parts share: its options, the runtime, the soak's own readers, its clock. */
export interface SoakShared {
  o: SoakOptions
  log: (line: string) => void
  /** the run's seeded draws (keys, totals, fault order and timing) */
  random: () => number
  rt: LocalRuntime
  orders: LocalTable
  totals: LocalTable | undefined
  /** the soak's own long-lived readers (probes, status, compaction count) */
  ordersReader: Table
  totalsReader: Table | null
  /** epoch ms the load started */
  start: number
  /** the loops end when these go false (also when the soak fails half-way) */
  running: { load: boolean; probing: boolean; maintaining: boolean }
}

/** Seconds since the load started. */
export const secondsSince = (s: Pick<SoakShared, 'start'>) => (Date.now() - s.start) / 1000

/** Invocations of a function so far (the compactor's: of every table's). */
export function invocationsOf(rt: LocalRuntime, fn: 'writer' | 'compactor'): number {
  return fn === 'writer' ? rt.writer.stats.invocations : [...rt.tables.values()].reduce((n, x) => n + x.poller.stats.invocations, 0)
}
