// Freshness lag against `compaction.task-threads` on the local runtime (embedded S3 + SQS,
// real writer and compactor handlers in worker threads behind event-source pollers), one
// setting after another in one run, under the same fixed write load: a synthetic upstream
// sends upserts over a key space hashed into 64 buckets of a deletion-vector table, so
// every writer commit adds an L0 file to most buckets and enqueues a job per bucket.
//
// S3 is given a transfer model (local/embedded.ts TransferModel) so that a compaction is
// bound by I/O round trips and by how many run at once, as on AWS, not by this machine's
// two cores: every S3 request waits a first-byte latency, then its bodies move at a
// per-request bandwidth cap. SQS requests get no added latency.
//
// Every table has a commit queue and a committer (as the stack deploys it), so writers and
// compactors commit through the committer function (folding; senders follow the snapshot
// chain, a receipt only for a conflict); the committer and compactor run as
// bench/lib/committer-probe.ts and bench/lib/compactor-probe.ts, the real handlers with a
// probe that reports what each invocation did.
//
//   npx tsx bench/freshness.ts [--quick] [--seconds 90] [--rate 200] [--settings 1,4,-1]
//
// --seconds is the load window of each setting (default 90, --quick 15): a setting's lag
// settles only after its backlog of the first writer commits is worked off, so pick a window
// long enough that the "lag steady" column says yes for the settings compared.
//
// Reported per setting: freshness lag (tableStatus maxFreshnessLagMs: age of the oldest L0
// file of any bucket, i.e. of rows deletion-vector readers cannot see yet), sampled every
// second during the load, as p50/p99/max, and whether it stopped growing (lag p50 of the last
// third of the window against the middle third); peak L0 files of one bucket; compactor
// invocations and their durations (the per-bucket compaction cost the simulation uses, with
// the time the compactions only waited for their commits taken out); lost races (the
// compactions' commit retries and the committers' races for `snapshot-N`), recompactions
// (process-jobs' fresh-state retries after a conflicting or failed commit), committer
// invocations and messages per snapshot; and the freshness budget (docs/design.md "Freshness
// budget"): each stage's p50 and p99 from the metrics the writer and compactor functions
// publish (their handlers run as local/stage-probe.ts and bench/lib/compactor-probe.ts, which
// return them beside the answer) and the sampler's snapshot discoveries, against the floor.

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { loadavg } from 'node:os'
import { tableStatus } from '../lib/maintenance/table-status.ts'
import { Table } from '../lib/handle/table.ts'
import { freshnessChart } from '../local/chart.ts'
import type { TransferModel } from '../local/embedded.ts'
import { startLocalRuntime } from '../local/runtime/local-runtime.ts'
import { bucketKeyOf, decodeJob } from '../lib/jobs/compaction-job.ts'
import { type CommitterProbe, probeOf } from './lib/committer-probe.ts'
import { compactorProbeOf } from './lib/compactor-probe.ts'
import { parseBenchArgs } from './lib/args.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { OUT_DIR, markdownTable, writeResults } from './lib/report.ts'
import { ORDERS_FIELDS, orderUpserts, seededRandom } from './lib/dataset.ts'
import { percentile } from './lib/stats.ts'
import { type Budget, FIRST_POLL_MS, type FloorModel, StageSamples, budgetMarkdown, budgetOf, largestStage, noteDiscovery } from '../local/freshness-budget.ts'
import { SnapshotDiscovery } from '../lib/read/snapshot-discovery.ts'

const COMMITTER_PROBE = join(import.meta.dirname, 'lib', 'committer-probe.ts')
const COMPACTOR_PROBE = join(import.meta.dirname, 'lib', 'compactor-probe.ts')
// the writer with its freshness-budget metrics returned beside its answer
const WRITER_PROBE = join(import.meta.dirname, '..', 'local', 'stage-probe.ts')

export const BUCKETS = 64
export const FIRST_BYTE_MS = 20
export const BYTES_PER_SECOND = 50 * 2 ** 20
const S3_BUCKET = 'strata-local'

export const FULL_SETTINGS = [1, 2, 3, 4, 8, -1]
export const QUICK_SETTINGS = [1, 4, -1]

/** The S3 model of this benchmark: S3 paths only (SQS is `POST /` on the same server). */
export function freshnessS3Model(): TransferModel {
  return { firstByteMs: FIRST_BYTE_MS, bytesPerSecond: BYTES_PER_SECOND, applies: (r) => r.url.startsWith(`/${S3_BUCKET}/`) }
}

export interface LagSample {
  t: number
  lagMs: number
  maxL0: number
  totalL0: number
  queued: number
}

export interface CompactorInvocation {
  startedAt: number
  durationMs: number
  /** jobs (SQS messages) in the batch */
  jobs: number
  /** distinct buckets of the invocation's jobs */
  buckets: number
  /**
   * time in which every compaction in flight only waited for its commit (send, fold, its
   * landing seen); absent in results from before the commit queue
   */
  blockedOnCommitMs?: number
  /** each finished compaction's wall time, commit included (CompactionTime) */
  compactionMs?: number[]
  /** each commit's time from its call to its return (landing seen, or a conflict) */
  commitMs?: number[]
  /** commit retries the compactions reported (result.retries) */
  commitRetries?: number
  /** process-jobs' fresh-state retries: a compaction redone after a conflicting or failed commit */
  recompactions?: number
  /** commits answered by a conflict receipt, and commits that failed otherwise */
  commitConflicts?: number
  commitFailures?: number
}

/** One committer invocation, as its probe saw it. */
export interface CommitterInvocation {
  startedAt: number
  durationMs: number
  messages: number
  snapshots: number
  retries: number
  replans: number
  drained: number
}

export interface FreshnessRun {
  taskThreads: number
  seconds: number
  rowsSent: number
  writerInvocations: number
  compactorInvocations: number
  compactorFailedRecords: number
  dlq: number
  samples: LagSample[]
  lagP50Ms: number
  lagP99Ms: number
  lagMaxMs: number
  peakL0PerBucket: number
  /** every invocation that started during the load, including those that ended after it */
  invocations: CompactorInvocation[]
  /** median invocation duration ÷ buckets in it */
  perBucketCompactionMs: number
  peakConcurrentCompactors: number
  loadAvgEnd: number
  /** lag p50 over the middle and the last third of the window; steady: the last is not above the middle (+20% and 2 s of slack) */
  lagMidThirdP50Ms?: number
  lagLastThirdP50Ms?: number
  lagSteady?: boolean
  /** median wall time of one bucket's compaction, its commit included (task-threads 1: one at a time per invocation slot) */
  bucketCompactionP50Ms?: number
  /** median time a compaction's commit took from its call to its return */
  compactionCommitP50Ms?: number
  /** lost races: the compactions' commit retries, and the committers' lost races for `snapshot-N` */
  compactionRetries?: number
  committerRetries?: number
  recompactions?: number
  commitConflicts?: number
  committerInvocations?: number
  committerSnapshots?: number
  messagesPerSnapshot?: number
  committerReplans?: number
  committers?: CommitterInvocation[]
  /** the freshness budget: each stage's p50 / p99 from the metrics the functions published during the load, and the floor (docs/design.md "Freshness budget") */
  budget?: Budget
}

export interface FreshnessResult {
  params: { buckets: number; seconds: number; rate: number; settings: number[]; s3: { firstByteMs: number; bytesPerSecond: number }; writerConcurrency: number; writerBatchingWindowMs: number }
  runs: FreshnessRun[]
  /**
   * least-squares fit ms = perBucket·buckets + perJob·jobs over the invocations of the
   * task-threads 1 run (one compactor at a time, the nearest to a Lambda invocation with its
   * own CPU); `fittedOn` says which settings' invocations went in
   */
  compactionCostFit: CostFit
  /** the same fit over every invocation of every setting, CPU contention between compactors included */
  compactionCostFitAllSettings?: CostFit
}

export interface CostFit {
  perBucketMs: number
  perJobMs: number
  invocations: number
  fittedOn?: number[]
  /** the time compactions only waited for their commits was taken out (absent: results from before the commit queue) */
  commitWaitExcluded?: boolean
}

const pct = (xs: number[], p: number): number => percentile(xs, p, 0)

function schema(threads: number) {
  return {
    fields: ORDERS_FIELDS,
    primaryKeys: ['id'],
    partitionKeys: [],
    options: { bucket: String(BUCKETS), 'deletion-vectors.enabled': 'true', 'compaction.task-threads': String(threads), 'sequence.field': 'version' },
  }
}

const WRITER_CONCURRENCY = 2
const WRITER_WINDOW_MS = 1000

/** The floor's model: this benchmark's S3 latency and batching window; SQS free (docs/design.md "Freshness budget"). */
export function floorModel(): FloorModel {
  return { firstByteMs: FIRST_BYTE_MS, batchingWindowMs: WRITER_WINDOW_MS, firstPollMs: FIRST_POLL_MS }
}
const KEY_SPACE = 200_000

async function runSetting(threads: number, seconds: number, rate: number, seed: number, log: (s: string) => void): Promise<FreshnessRun> {
  const invocations: CompactorInvocation[] = []
  const committers: CommitterInvocation[] = []
  let committerErrors = 0
  let running = 0
  let peakRunning = 0
  // the stage metrics of invocations that start during the load
  const stages = new StageSamples()
  let loading = true
  let loadEnd = Infinity
  const rt = await startLocalRuntime({
    writerModule: WRITER_PROBE,
    onWriterInvocation: (info) => {
      if (loading && info.result.ok && info.startedAt < loadEnd) stages.addResult(info.result.value)
    },
    compactorModule: COMPACTOR_PROBE,
    committerModule: COMMITTER_PROBE,
    onCommitterInvocation: (_t, info) => {
      const p: CommitterProbe | null = info.result.ok ? probeOf(info.result.value) : null
      if (!p) {
        committerErrors++
        return
      }
      if (p.invoked + p.drained === 0) return
      committers.push({ startedAt: p.startedAt, durationMs: p.endedAt - p.startedAt, messages: p.messages, snapshots: p.snapshots, retries: p.retries, replans: p.replans, drained: p.drained })
    },
    tables: [{ name: 'bench', schema: schema(threads) }],
    bucket: S3_BUCKET,
    latency: freshnessS3Model(),
    writerConcurrency: WRITER_CONCURRENCY,
    writerBatchingWindowMs: WRITER_WINDOW_MS,
    visibilityTimeoutSeconds: 120,
    timeoutMs: 110_000,
    onCompactorInvocation: (_t, info) => {
      if (loading && info.result.ok && info.startedAt < loadEnd) stages.addResult(info.result.value)
      const p = info.result.ok ? compactorProbeOf(info.result.value) : null
      invocations.push({
        startedAt: info.startedAt,
        durationMs: info.endedAt - info.startedAt,
        jobs: info.records.length,
        // the jobs' buckets, not their message groups: at task-threads 1 every job of the
        // table shares one group, so a batch of ten buckets is one group
        buckets: bucketsOf(info.records),
        ...(p
          ? {
              blockedOnCommitMs: p.blockedOnCommitMs,
              compactionMs: p.compactionMs,
              commitMs: p.commitMs,
              commitRetries: p.commitRetries,
              recompactions: p.commitRetriesMetric - p.commitRetries,
              commitConflicts: p.conflicts,
              commitFailures: p.failedCommits,
            }
          : {}),
      })
    },
  })
  let stopped = false
  try {
    const t = rt.tables.get('bench')!
    const reader = await Table.open(t.table.store)
    const discovery = new SnapshotDiscovery()
    const random = seededRandom(seed)
    const versions = new Map<number, number>()
    const samples: LagSample[] = []
    const start = Date.now()
    let sent = 0
    const sender = (async () => {
      const tickMs = 100
      const perTick = Math.max(1, Math.round(rate / 10))
      for (let tick = 0; Date.now() - start < seconds * 1000; tick++) {
        const wait = start + tick * tickMs - Date.now()
        if (wait > 0) await new Promise((r) => setTimeout(r, wait))
        const bodies = orderUpserts(random, versions, KEY_SPACE, perTick)
        await rt.send(bodies)
        sent += bodies.length
      }
    })()
    // concurrency as the poller sees it (invocations in flight), sampled with the lag
    const sampleOnce = async () => {
      const readAt = Date.now()
      const st = await tableStatus(reader)
      // the sampler is the benchmark's reader: the snapshots it finds new are its discoveries
      if (loading) await noteDiscovery(stages, discovery, st.snapshot?.id, readAt, reader.snapshots)
      running = t.poller.inFlight
      peakRunning = Math.max(peakRunning, running)
      samples.push({
        t: (Date.now() - start) / 1000,
        lagMs: st.maxFreshnessLagMs ?? 0,
        maxL0: st.maxL0Files,
        totalL0: st.buckets.reduce((n, b) => n + b.l0Files, 0),
        queued: await rt.queueDepth(t.compactionQueueUrl),
      })
    }
    let sampling = false
    const sampler = setInterval(() => {
      if (sampling) return
      sampling = true
      void sampleOnce()
        .catch(() => undefined)
        .finally(() => (sampling = false))
    }, 1000)
    await sender
    clearInterval(sampler)
    loadEnd = Date.now()
    const lags = samples.map((s) => s.lagMs)
    const dlq = await rt.queueDepth(t.dlqUrl)
    // a run whose writes never landed has no L0 files and so reads as zero lag: refuse it
    const writerFailed = rt.writer.stats.failedRecords + rt.writer.stats.crashes
    const landed = (await tableStatus(reader)).snapshot?.id ?? null
    if (writerFailed > 0 || landed === null) {
      throw new Error(`freshness task-threads ${threads}: the writes did not land (${rt.writer.stats.failedRecords} failed writer records, ${rt.writer.stats.crashes} writer crashes, latest snapshot ${landed}); the lag of this run would mean nothing`)
    }
    const run: FreshnessRun = {
      taskThreads: threads,
      seconds,
      rowsSent: sent,
      writerInvocations: rt.writer.stats.invocations,
      compactorInvocations: invocations.length,
      compactorFailedRecords: t.poller.stats.failedRecords,
      dlq,
      samples,
      lagP50Ms: pct(lags, 50),
      lagP99Ms: pct(lags, 99),
      lagMaxMs: Math.max(0, ...lags),
      peakL0PerBucket: Math.max(0, ...samples.map((s) => s.maxL0)),
      invocations,
      perBucketCompactionMs: 0,
      peakConcurrentCompactors: peakRunning,
      loadAvgEnd: loadavg()[0],
    }
    // the compactions in flight at the end of the load finish during stop(): count them too
    // (their stage metrics too, when they started during the load)
    await rt.stop()
    stopped = true
    loading = false
    run.budget = budgetOf(stages, floorModel())
    run.compactorInvocations = invocations.length
    run.compactorFailedRecords = t.poller.stats.failedRecords
    run.perBucketCompactionMs = pct(invocations.map((i) => i.durationMs / Math.max(1, i.buckets)), 50)
    Object.assign(run, lagTrend(samples), commitFigures(invocations, committers))
    const b = run.budget
    log(`freshness task-threads ${threads} budget (p50 ms): ${b.stages.map((x) => `${x.key} ${x.p50Ms.toFixed(0)}`).join(', ')}; sum ${b.sumP50Ms.toFixed(0)} against floor ${b.floorMs.toFixed(0)}; L0 written → lifted p50 ${b.l0AgeP50Ms?.toFixed(0) ?? '-'}; ${largestStage(b)}`)
    if (committerErrors > 0) throw new Error(`freshness task-threads ${threads}: ${committerErrors} committer invocation(s) failed or were not the probe's`)
    log(
      `freshness task-threads ${threads}: lag p50 ${(run.lagP50Ms / 1000).toFixed(1)} s, p99 ${(run.lagP99Ms / 1000).toFixed(1)} s, max ${(run.lagMaxMs / 1000).toFixed(1)} s (middle third p50 ${(run.lagMidThirdP50Ms! / 1000).toFixed(1)} s, last third ${(run.lagLastThirdP50Ms! / 1000).toFixed(1)} s: ${run.lagSteady ? 'steady' : 'still growing'}), peak L0/bucket ${run.peakL0PerBucket}, ${invocations.length} compactor invocations (${run.perBucketCompactionMs.toFixed(0)} ms/bucket, one bucket p50 ${run.bucketCompactionP50Ms?.toFixed(0)} ms of which commit ${run.compactionCommitP50Ms?.toFixed(0)} ms), ${run.recompactions} recompactions, lost races ${run.compactionRetries} compaction + ${run.committerRetries} committer, ${run.committerInvocations} committer invocations (${run.messagesPerSnapshot?.toFixed(1)} messages/snapshot), ${run.writerInvocations} writer invocations, load ${run.loadAvgEnd.toFixed(1)}`,
    )
    return run
  } finally {
    if (!stopped) await rt.stop()
  }
}

/**
 * Whether the lag stopped growing: its p50 over the last third of the window against the
 * middle third (the first third is the start-up backlog). A setting that cannot keep up
 * grows about a second per second, so its last third is a third of the window above the
 * middle; 20% and 2 s of slack absorb the sampling noise of a steady one.
 */
export function lagTrend(samples: LagSample[]): Pick<FreshnessRun, 'lagMidThirdP50Ms' | 'lagLastThirdP50Ms' | 'lagSteady'> {
  const n = samples.length
  const mid = samples.slice(Math.floor(n / 3), Math.floor((2 * n) / 3)).map((s) => s.lagMs)
  const last = samples.slice(Math.floor((2 * n) / 3)).map((s) => s.lagMs)
  const m = pct(mid, 50)
  const l = pct(last, 50)
  return { lagMidThirdP50Ms: m, lagLastThirdP50Ms: l, lagSteady: n >= 6 && l <= m * 1.2 + 2000 }
}

/** The commit side of a run: lost races, recompactions, committer folds. */
function commitFigures(invs: CompactorInvocation[], committers: CommitterInvocation[]): Partial<FreshnessRun> {
  const sum = (xs: (number | undefined)[]) => xs.reduce<number>((n, x) => n + (x ?? 0), 0)
  const snapshots = sum(committers.map((c) => c.snapshots))
  return {
    bucketCompactionP50Ms: pct(invs.flatMap((i) => i.compactionMs ?? []), 50),
    compactionCommitP50Ms: pct(invs.flatMap((i) => i.commitMs ?? []), 50),
    compactionRetries: sum(invs.map((i) => i.commitRetries)),
    recompactions: sum(invs.map((i) => i.recompactions)),
    commitConflicts: sum(invs.map((i) => i.commitConflicts)),
    committerRetries: sum(committers.map((c) => c.retries)),
    committerReplans: sum(committers.map((c) => c.replans)),
    committerInvocations: committers.length,
    committerSnapshots: snapshots,
    messagesPerSnapshot: sum(committers.map((c) => c.messages)) / Math.max(1, snapshots),
    committers,
  }
}

/** Distinct buckets of a compactor batch, from its jobs (a body that does not decode counts as its own). */
function bucketsOf(records: { body: string; messageId: string }[]): number {
  return new Set(
    records.map((r) => {
      try {
        return bucketKeyOf(decodeJob(r.body, `message ${r.messageId}`))
      } catch {
        return `undecodable ${r.messageId}`
      }
    }),
  ).size
}

/**
 * The simulation's compaction cost: fitted on the task-threads 1 run when there is one. At
 * higher settings the compactors share this machine's cores with each other and the cost
 * per bucket rises with concurrency (CPU contention), which a Lambda invocation with its own
 * CPU does not see.
 */
export function compactionCostFits(runs: FreshnessRun[]): { uncontended: CostFit; all: CostFit } {
  const one = runs.filter((r) => r.taskThreads === 1)
  const base = one.length ? one : runs
  return {
    uncontended: { ...fitCost(base.flatMap((r) => r.invocations)), fittedOn: base.map((r) => r.taskThreads) },
    all: { ...fitCost(runs.flatMap((r) => r.invocations)), fittedOn: runs.map((r) => r.taskThreads) },
  }
}

/** Buckets compacted per second from the first invocation's start to the last one's end. */
export function compactionThroughput(run: FreshnessRun): number {
  if (run.invocations.length === 0) return 0
  const start = Math.min(...run.invocations.map((i) => i.startedAt))
  const end = Math.max(...run.invocations.map((i) => i.startedAt + i.durationMs))
  return run.invocations.reduce((n, i) => n + i.buckets, 0) / Math.max(1e-3, (end - start) / 1000)
}

/**
 * ms = a·buckets + b·jobs, least squares without intercept (2×2 normal equations). ms is the
 * invocation's time less the time it only waited for commits, where the probe measured it
 * (the simulation models the commit path itself); older results carry the whole duration.
 */
export function fitCost(invs: CompactorInvocation[]): CostFit {
  const withoutCommits = invs.length > 0 && invs.every((i) => i.blockedOnCommitMs !== undefined)
  invs = invs.map((i) => ({ ...i, durationMs: i.durationMs - (withoutCommits ? i.blockedOnCommitMs! : 0) }))
  return { ...fitRaw(invs), commitWaitExcluded: withoutCommits }
}

function fitRaw(invs: CompactorInvocation[]): CostFit {
  let sbb = 0, sbj = 0, sjj = 0, sby = 0, sjy = 0
  for (const i of invs) {
    sbb += i.buckets * i.buckets
    sbj += i.buckets * i.jobs
    sjj += i.jobs * i.jobs
    sby += i.buckets * i.durationMs
    sjy += i.jobs * i.durationMs
  }
  const det = sbb * sjj - sbj * sbj
  if (invs.length < 2 || Math.abs(det) < 1e-9) {
    const per = invs.length ? invs.reduce((n, i) => n + i.durationMs, 0) / Math.max(1, invs.reduce((n, i) => n + i.buckets, 0)) : NaN
    return { perBucketMs: per, perJobMs: 0, invocations: invs.length }
  }
  let a = (sby * sjj - sjy * sbj) / det
  let b = (sbb * sjy - sbj * sby) / det
  if (b < 0) {
    // more jobs cannot make an invocation cheaper; refit on buckets alone
    a = sby / sbb
    b = 0
  }
  return { perBucketMs: a, perJobMs: b, invocations: invs.length }
}

export async function runFreshness(opts: { quick: boolean; seconds?: number; rate?: number; settings?: number[]; log?: (s: string) => void }): Promise<FreshnessResult> {
  const seconds = opts.seconds ?? (opts.quick ? 15 : 90)
  const rate = opts.rate ?? 200
  const settings = opts.settings ?? (opts.quick ? QUICK_SETTINGS : FULL_SETTINGS)
  const log = opts.log ?? ((s) => process.stderr.write(s + '\n'))
  const runs: FreshnessRun[] = []
  for (const threads of settings) runs.push(await runSetting(threads, seconds, rate, 20_260_601, log))
  const fits = compactionCostFits(runs)
  return {
    params: { buckets: BUCKETS, seconds, rate, settings, s3: { firstByteMs: FIRST_BYTE_MS, bytesPerSecond: BYTES_PER_SECOND }, writerConcurrency: WRITER_CONCURRENCY, writerBatchingWindowMs: WRITER_WINDOW_MS },
    runs,
    compactionCostFit: fits.uncontended,
    compactionCostFitAllSettings: fits.all,
  }
}

const label = (t: number) => (t === -1 ? '-1 (no cap)' : String(t))

export function freshnessMarkdown(r: FreshnessResult): string {
  const base = r.runs.find((x) => x.taskThreads === 1)
  const lagTable = markdownTable(
    ['task-threads', 'rows sent', 'writer commits', 'compactor invocations', 'per-bucket compaction (ms, median)', 'per-bucket compaction (ms, least squares)', 'buckets compacted/s', 'peak concurrent compactors', 'lag p50 (s)', 'lag p99 (s)', 'lag max (s)', 'lag p50 middle → last third (s)', 'lag steady', 'lag p50: 1 thread ÷ this', 'peak L0 files per bucket', 'failed jobs / DLQ', 'load avg at end'],
    r.runs.map((x) => [
      label(x.taskThreads),
      x.rowsSent,
      x.writerInvocations,
      x.compactorInvocations,
      x.perBucketCompactionMs.toFixed(0),
      fitCost(x.invocations).perBucketMs.toFixed(0),
      compactionThroughput(x).toFixed(2),
      x.peakConcurrentCompactors,
      (x.lagP50Ms / 1000).toFixed(1),
      (x.lagP99Ms / 1000).toFixed(1),
      (x.lagMaxMs / 1000).toFixed(1),
      x.lagMidThirdP50Ms === undefined ? '-' : `${(x.lagMidThirdP50Ms / 1000).toFixed(1)} → ${(x.lagLastThirdP50Ms! / 1000).toFixed(1)}`,
      x.lagSteady === undefined ? '-' : x.lagSteady ? 'yes' : '**no**',
      base && x.lagP50Ms > 0 ? `${(base.lagP50Ms / x.lagP50Ms).toFixed(2)}×` : '-',
      x.peakL0PerBucket,
      `${x.compactorFailedRecords} / ${x.dlq}`,
      x.loadAvgEnd.toFixed(1),
    ]),
  )
  if (!r.runs.some((x) => x.committerInvocations !== undefined)) return lagTable
  const commitTable = markdownTable(
    ['task-threads', 'one bucket\'s compaction p50 (ms)', 'its commit, call → returned p50 (ms)', 'lost races: compactions / committers', 'recompactions', 'conflict receipts', 'committer invocations', 'snapshots', 'messages per snapshot', 'committer re-plans'],
    r.runs.map((x) => [
      label(x.taskThreads),
      x.bucketCompactionP50Ms?.toFixed(0) ?? '-',
      x.compactionCommitP50Ms?.toFixed(0) ?? '-',
      `${x.compactionRetries ?? '-'} / ${x.committerRetries ?? '-'}`,
      x.recompactions ?? '-',
      x.commitConflicts ?? '-',
      x.committerInvocations ?? '-',
      x.committerSnapshots ?? '-',
      x.messagesPerSnapshot?.toFixed(1) ?? '-',
      x.committerReplans ?? '-',
    ]),
  )
  return `${lagTable}\n\nThe commit path per setting (writers and compactors commit through the table's committer):\n\n${commitTable}`
}

/** The freshness budget per setting, the floor, the largest stage and the goal (lag p50 at -1 within 2× the floor). */
export function budgetSection(r: FreshnessResult): string {
  const runs = r.runs.filter((x) => x.budget)
  if (runs.length === 0) return ''
  const table = budgetMarkdown(runs.map((x) => ({ label: label(x.taskThreads), budget: x.budget! })))
  const floor = runs[0].budget!.floorMs
  const noCap = runs.find((x) => x.taskThreads === -1)
  const lines = [
    `The freshness budget (docs/design.md "Freshness budget"): each stage's p50 / p99 over the metrics the functions published during the load (invocations that started in it), against its floor: the dependent S3 round trips the stage needs at ${r.params.s3.firstByteMs} ms, SQS at 0 ms, the ${r.params.writerBatchingWindowMs} ms batching window, and the senders' first ${FIRST_POLL_MS} ms poll pause. The reader here is the benchmark's sampler, which reads once a second.`,
    '',
    table,
    '',
    ...runs.map((x) => `- task-threads ${label(x.taskThreads)}: stages sum to ${(x.budget!.sumP50Ms / 1000).toFixed(2)} s (p50s) against the measured lag p50 ${(x.lagP50Ms / 1000).toFixed(1)} s; ${largestStage(x.budget!)}.`),
  ]
  if (noCap) {
    const ratio = noCap.lagP50Ms / Math.max(1, floor)
    // a lag still growing at the window's end (or writes that landed late) is no steady state to judge
    const verdict = noCap.lagSteady === false ? '**not judged**: the lag was still growing at the end of the window, so this run reached no steady state' : ratio <= 2 ? '**met**' : '**not met**'
    lines.push('', `Goal, lag p50 at -1 within 2× the floor (${(2 * floor / 1000).toFixed(2)} s): the measured lag p50 is ${(noCap.lagP50Ms / 1000).toFixed(1)} s, ${ratio.toFixed(1)}× the floor of ${(floor / 1000).toFixed(2)} s — ${verdict}.`)
  }
  return lines.join('\n')
}

export function writeFreshnessChart(r: FreshnessResult, name: string): string {
  mkdirSync(OUT_DIR, { recursive: true })
  const path = join(OUT_DIR, name)
  writeFileSync(
    path,
    freshnessChart(
      r.runs.map((x) => ({ label: `task-threads ${label(x.taskThreads)}`, points: x.samples.map((s) => [s.t, s.lagMs / 1000] as [number, number]) })),
      { title: `Freshness lag, ${r.params.buckets} buckets, ${r.params.rate} rows/s, S3 ${r.params.s3.firstByteMs} ms first byte` },
    ),
  )
  return path
}

if (import.meta.filename === process.argv[1]) {
  const args = parseBenchArgs(process.argv.slice(2), ['--quick'], ['--seconds', '--rate'], ['--settings'])
  const quick = args.has('--quick')
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const machine = machineInfo(['fauxqs', '@aws-sdk/client-s3', '@aws-sdk/client-sqs', 'tsx'])
  // --settings 1,4,-1: the task-threads settings to run, in order
  const settings = args.has('--settings') || args.str('--settings', '') ? args.str('--settings', '').split(',').map(Number) : undefined
  if (settings?.some((x) => !Number.isInteger(x) || (x < 1 && x !== -1))) throw new Error(`--settings: expected task-threads values (positive integers or -1) separated by commas, got ${args.str('--settings', '')}`)
  const loadBefore = loadavg()[0]
  const r = await runFreshness({ quick, seconds: args.num('--seconds', quick ? 15 : 90), rate: args.num('--rate', 200), settings })
  console.log(`load average (1 min) before the run ${loadBefore.toFixed(1)}, after ${loadavg()[0].toFixed(1)}`)
  console.log(freshnessMarkdown(r))
  console.log(`\n${budgetSection(r)}`)
  console.log(`\ncompaction cost fit: ${r.compactionCostFit.perBucketMs.toFixed(0)} ms per bucket + ${r.compactionCostFit.perJobMs.toFixed(0)} ms per coalesced job (${r.compactionCostFit.invocations} invocations)`)
  console.log(`chart: ${writeFreshnessChart(r, quick ? 'freshness-quick.svg' : 'freshness.svg')}`)
  console.log(`\n${machineMarkdown(machine)}`)
  const { samples: _s, ...rest } = r as FreshnessResult & { samples?: unknown }
  process.stderr.write(`results: ${writeResults(quick ? 'freshness-quick' : 'freshness', { machine, ...rest })}\n`)
}
