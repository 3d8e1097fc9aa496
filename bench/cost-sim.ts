// Cost per million upserts beyond this machine: the cost model (bench/lib/cost-model.ts),
// calibrated from the measured 64-bucket runs of bench/cost.ts (bench/out/cost.json) and the
// measured anchors of bench/lib/cost-anchor.ts (bench/out/cost-anchor.json), fed with what the
// discrete-event model (bench/simulate.ts) counts, priced by bench/lib/cost-bill.ts.
//
//   npx tsx bench/cost-sim.ts --anchor [--anchor-buckets 1024] [--anchor-rate 100] [--anchor-seconds 20]
//   npx tsx bench/cost-sim.ts [--buckets 1024] [--seconds 600] [--warmup 300] [--write-docs]
//
// First the check: the model at 64 buckets, fed each measured run's writer invocations, next
// to what that run measured. Then 1,024 buckets at 100, 1,000 and 5,000 rows/s and
// task-threads 1, 4 and -1, with the deployed writer event source, beside the always-on
// alternative; the tables go to stdout and, with --write-docs, between the cost-1024 markers
// of docs/benchmarks.md.

import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { DEFAULT_MEMORY_MB, DEFAULT_SQS_INGEST, WRITER_MAX_CONCURRENCY } from '../cdk/config.ts'
import { parseBenchArgs } from './lib/args.ts'
import { type AnchorRun, type MeasuredWindow, runAnchor } from './lib/cost-anchor.ts'
import { type Bill, FUNCTIONS, bill, byService, flinkBill } from './lib/cost-bill.ts'
import { type PriceFile, SECONDS_PER_MONTH, loadPrices } from './lib/cost-count.ts'
import { type MeasuredMaintenance, type ModelSetting, type UnitCosts, bucketsTouched, calibrate, measuredDrivers, modelUsage } from './lib/cost-model.ts'
import { type CostResult, type CostRun, flinkAssumptionTouched } from './lib/cost-report.ts'
import { OUT_DIR, markdownTable, writeResults } from './lib/report.ts'
import { type SimCalibration, type SimPoint, simulate } from './simulate.ts'

/**
 * The lag model's calibration: the figures docs/benchmarks.md "Beyond this machine" states
 * for its last run (bench/run.ts builds them from the freshness and contention benchmarks).
 * The writer load is set per setting.
 */
export const LAG_CALIBRATION: Omit<SimCalibration, 'writerCommitsPerSecond' | 'touchProbability'> = {
  perBucketMs: 114,
  perJobMs: 31,
  bucketsAtOnce: 4,
  directCurve: [{ committers: 1, commitsPerSecond: 8.6 }, { committers: 32, commitsPerSecond: 8.6 }],
  foldBaseMs: 81,
  foldPerCommitMs: 0.34,
  foreignRoundBaseMs: 122,
  foreignRoundPerCommitMs: 0.19,
  lostRaceMs: 122,
  firstRoundBaseMs: 158,
  firstRoundPerCommitMs: 0.91,
  settleBaseMs: 25,
  settlePerCommitMs: 0.02,
  committers: 1,
  committerLease: true,
  committerOverheadMs: 95,
  receiptWaitMs: 48,
  rounds: true,
}

/** The event source starts 5 pollers; each fills its own batch for the window (bench/cost.ts measured ~1 writer invocation a second at 100 rows/s). */
export const INGEST_POLLERS = 5
/** The committer mapping's maxConcurrency: with the lease one folds, the other forwards. */
const COMMITTERS = 2
const LAMBDA_CONCURRENCY = 1000
const RATES = [100, 1000, 5000]
const THREADS = [1, 4, -1]
const SEED = 20261206

/** Rows per writer invocation and invocations a second at `rate`, with 5 pollers each filling a batch for the window. */
export function writerLoad(rate: number, batch: number, windowSeconds: number, pollers = INGEST_POLLERS): { rowsPerInvocation: number; invocationsPerSecond: number } {
  const rowsPerInvocation = Math.max(1, Math.min(batch, (rate * windowSeconds) / pollers))
  return { rowsPerInvocation, invocationsPerSecond: rate / rowsPerInvocation }
}

export interface ModelPoint {
  buckets: number
  rate: number
  taskThreads: number
  /** rows/s the writers keep up with (8 at most, each busy for its modelled duration) */
  rowsPerSecond: number
  rowsPerInvocation: number
  writerInvocationsPerSecond: number
  writersKeepUp: boolean
  compactionKeepsUp: boolean
  sim: SimPoint
  estimated: Bill
  flink: Bill
}

export interface ModelRunOptions {
  seconds: number
  warmupSeconds: number
  seed: number
  /** the lag calibration's compaction and commit costs scaled (fitSpeeds); absent: as they are */
  speed?: SpeedScale
}

/** Factors on the lag calibration's compaction costs (perBucketMs, perJobMs) and commit costs (every fold, race and idle figure). */
export interface SpeedScale {
  compaction: number
  commit: number
}

export function scaledCalibration(k: SpeedScale = { compaction: 1, commit: 1 }): typeof LAG_CALIBRATION {
  const c = LAG_CALIBRATION
  const m = (x: number | undefined) => (x === undefined ? undefined : x * k.commit)
  return {
    ...c,
    perBucketMs: c.perBucketMs * k.compaction,
    perJobMs: c.perJobMs * k.compaction,
    foldBaseMs: c.foldBaseMs * k.commit,
    foldPerCommitMs: c.foldPerCommitMs * k.commit,
    foreignRoundBaseMs: m(c.foreignRoundBaseMs),
    foreignRoundPerCommitMs: m(c.foreignRoundPerCommitMs),
    lostRaceMs: m(c.lostRaceMs),
    firstRoundBaseMs: m(c.firstRoundBaseMs),
    firstRoundPerCommitMs: m(c.firstRoundPerCommitMs),
    committerOverheadMs: m(c.committerOverheadMs),
  }
}

/** One setting through the lag model and the cost model, priced. */
export function modelPoint(u: UnitCosts, prices: PriceFile, cw: ModelSetting['cloudwatch'], buckets: number, rate: number, taskThreads: number, o: ModelRunOptions): ModelPoint {
  const w = writersAt(u, buckets, rate)
  return pointAt(u, prices, cw, buckets, rate, taskThreads, w.rowsPerSecond / w.rowsPerInvocation, w.rowsPerInvocation, o, w.keepUp)
}

/** A writer's modelled seconds for a batch of `rows`. */
export const writerSeconds = (u: UnitCosts, buckets: number, rows: number) => (u.writerMs.base + u.writerMs.perBucket * bucketsTouched(buckets, rows)) / 1000

/**
 * The writers' batches at `rate`: the pollers' batches while 8 writers keep up with them;
 * otherwise rows queue and batches grow, up to the batch size, until 8 writers keep up, or
 * full batches at the rate 8 writers manage.
 */
export function writersAt(u: UnitCosts, buckets: number, rate: number): { rowsPerInvocation: number; rowsPerSecond: number; keepUp: boolean } {
  const batch: number = DEFAULT_SQS_INGEST.batchSize
  const capacity = (rows: number) => (WRITER_MAX_CONCURRENCY * rows) / Math.max(1e-6, writerSeconds(u, buckets, rows))
  let rows = writerLoad(rate, batch, DEFAULT_SQS_INGEST.maxBatchingWindowSeconds).rowsPerInvocation
  if (capacity(rows) >= rate) return { rowsPerInvocation: rows, rowsPerSecond: rate, keepUp: true }
  if (capacity(batch) < rate) return { rowsPerInvocation: batch, rowsPerSecond: capacity(batch), keepUp: false }
  let hi = batch
  for (let i = 0; i < 40 && hi - rows > 0.5; i++) {
    const m = (rows + hi) / 2
    if (capacity(m) >= rate) hi = m
    else rows = m
  }
  return { rowsPerInvocation: hi, rowsPerSecond: rate, keepUp: true }
}

/** The model at a given writer load (the check feeds it a measured run's). */
export function pointAt(u: UnitCosts, prices: PriceFile, cw: ModelSetting['cloudwatch'], buckets: number, rate: number, taskThreads: number, invocationsPerSecond: number, rowsPerInvocation: number, o: ModelRunOptions, writersKeepUp = true): ModelPoint {
  const cal: SimCalibration = { ...scaledCalibration(o.speed), writerCommitsPerSecond: invocationsPerSecond, touchProbability: 1 - (1 - 1 / buckets) ** rowsPerInvocation }
  const sim = simulate(cal, { buckets, lambdaConcurrency: LAMBDA_CONCURRENCY, seconds: o.seconds, warmupSeconds: o.warmupSeconds, seed: o.seed }, 'folded', taskThreads)
  const setting: ModelSetting = { buckets, seconds: o.seconds, rowsPerInvocation, committers: COMMITTERS, memoryMb: DEFAULT_MEMORY_MB, cloudwatch: cw, logBytesPerInvocation: 1500, retainedSeconds: 3600 }
  const usage = modelUsage(sim.usage, setting, u)
  const estimated = bill(usage, prices, 'estimated')
  const rowsPerSecond = usage.upserts / o.seconds
  const perCheckpoint = bucketsTouched(buckets, rowsPerSecond * 10)
  const flink = flinkBill(flinkAssumptionTouched(perCheckpoint, usage.storedBytes), prices, estimated.upsertsPerMonth)
  // compaction keeps up when its jobs do not pile up over the window (a few batches' worth of slack)
  const jobsGrowth = sim.usage.jobsQueuedEnd - sim.usage.jobsQueuedStart
  const compactionKeepsUp = jobsGrowth <= 0.05 * sim.usage.bucketsTouched + 10 * buckets / 64 && sim.lagGrowthPerS <= 0.05
  return { buckets, rate, taskThreads, rowsPerSecond, rowsPerInvocation, writerInvocationsPerSecond: invocationsPerSecond, writersKeepUp, compactionKeepsUp, sim, estimated, flink }
}

// ---- calibration input ------------------------------------------------------------------

/** A bench/cost.ts run as a measured window: the table's bytes are its stored bytes less the hour of PUTs it added. */
export function windowOfRun(x: CostRun): MeasuredWindow {
  const putBytes = x.counts.filter((c) => c.service === 's3' && c.operation === 'PutObject').reduce((n, c) => n + c.requestBytes, 0)
  const functions = Object.fromEntries(FUNCTIONS.map((f) => [f, { invocations: x.usage.functions[f].invocations, estimatedMs: x.usage.functions[f].estimatedMs, records: f === 'writer' ? x.rowsWritten : 0 }])) as MeasuredWindow['functions']
  return { buckets: 64, taskThreads: x.params.taskThreads, seconds: x.usage.seconds, rowsWritten: x.rowsWritten, functions, counts: x.counts, tableBytes: Math.max(0, x.usage.storedBytes - (putBytes / x.usage.seconds) * 3600) }
}

const maintenanceOf = (x: CostRun): MeasuredMaintenance => ({ seconds: x.usage.seconds, requests: x.usage.requests.maintenance, usage: x.usage.functions.maintenance })

/** The runs calibrated from: the measured runs at the deployed writer batch, and the anchors. */
export function calibrationRuns(cost: CostResult, anchors: AnchorRun[]): { windows: MeasuredWindow[]; maintenance: MeasuredMaintenance[] } {
  const deployed = cost.runs.filter((x) => x.params.writerBatchSize === DEFAULT_SQS_INGEST.batchSize && x.usage.functions.writer.invocations >= 3)
  return { windows: [...deployed.map(windowOfRun), ...anchors], maintenance: deployed.map(maintenanceOf) }
}

/**
 * The speeds at which the lag model runs the measured runs' bucket compactions and snapshots:
 * the factors on a grid (×0.5 to ×16 in steps of √2) with the least squared log error of the
 * two rates, pooled over the runs.
 */
export function fitSpeeds(runs: CostRun[], o: ModelRunOptions): SpeedScale {
  const measured = runs.map((x) => measuredDrivers(windowOfRun(x)))
  const seconds = runs.reduce((n, x) => n + x.usage.seconds, 0)
  const want = { compactions: measured.reduce((n, m) => n + m.compaction, 0) / seconds, snapshots: measured.reduce((n, m) => n + m.snapshot, 0) / seconds }
  const modelled = (k: SpeedScale) => {
    const n = { compactions: 0, snapshots: 0 }
    for (const x of runs) {
      const inv = x.usage.functions.writer.invocations
      const tp = 1 - (1 - 1 / 64) ** (x.rowsWritten / inv)
      const sim = simulate({ ...scaledCalibration(k), writerCommitsPerSecond: inv / x.usage.seconds, touchProbability: tp }, { buckets: 64, lambdaConcurrency: LAMBDA_CONCURRENCY, seconds: o.seconds, warmupSeconds: o.warmupSeconds, seed: o.seed }, 'folded', x.params.taskThreads)
      n.compactions += sim.usage.compactions / o.seconds
      n.snapshots += sim.usage.snapshots / o.seconds
    }
    return n
  }
  let best = { k: { compaction: 1, commit: 1 }, err: Infinity }
  const grid = Array.from({ length: 11 }, (_, i) => 2 ** ((i - 2) / 2))
  for (const compaction of grid) for (const commit of grid) {
    const m = modelled({ compaction, commit })
    const err = Math.log(m.compactions / want.compactions) ** 2 + Math.log(m.snapshots / want.snapshots) ** 2
    if (err < best.err) best = { k: { compaction, commit }, err }
  }
  return best.k
}

// ---- report -----------------------------------------------------------------------------

const usd = (x: number) => (!Number.isFinite(x) ? '-' : x >= 100 ? `$${x.toFixed(0)}` : x >= 1 ? `$${x.toFixed(2)}` : `$${x.toFixed(3)}`)
const pct = (x: number, total: number) => `${((100 * x) / Math.max(1e-12, total)).toFixed(0)}%`
const label = (t: number) => (t === -1 ? '-1' : String(t))
const top3 = (b: Bill) => b.lines.slice(0, 3).map((l) => `${l.item} ${pct(l.usdPerMonth, b.usdPerMonth)}`).join('; ')
const services = (b: Bill) => {
  const s = byService(b)
  return `${pct(s.Lambda, b.usdPerMonth)} / ${pct(s.S3, b.usdPerMonth)} / ${pct(s.SQS, b.usdPerMonth)} / ${pct(s.CloudWatch, b.usdPerMonth)}`
}
const lag = (s: number) => (s >= 120 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`)

export interface CheckRow {
  run: CostRun
  model: ModelPoint
  deviation: number
}

/** The model at 64 buckets fed each measured run's writer invocations, next to the run. */
export function checkRows(cost: CostResult, u: UnitCosts, o: ModelRunOptions): CheckRow[] {
  return cost.runs.filter((x) => x.usage.functions.writer.invocations >= 3).map((run) => {
    const inv = run.usage.functions.writer.invocations
    const model = pointAt(u, cost.prices, cost.cloudwatch, 64, run.params.rate, run.params.taskThreads, inv / run.usage.seconds, run.rowsWritten / inv, o)
    return { run, model, deviation: model.estimated.usdPerMonth / run.estimated.usdPerMonth - 1 }
  })
}

function checkTable(rows: CheckRow[]): string {
  return markdownTable(
    ['measured run: rows/s target (written), task-threads, writer batch', 'writer invocations/s (rows each)', 'measured $ per month', 'model $ per month', 'model − measured', 'measured Lambda / S3 / SQS / CloudWatch', 'model Lambda / S3 / SQS / CloudWatch', 'measured top 3', 'model top 3'],
    rows.map(({ run, model, deviation }) => [
      `${run.params.rate} (${Math.round(run.rowsWritten / run.usage.seconds)}), ${label(run.params.taskThreads)}, ${run.params.writerBatchSize}`,
      `${model.writerInvocationsPerSecond.toFixed(2)} (${Math.round(model.rowsPerInvocation)})`,
      usd(run.estimated.usdPerMonth),
      usd(model.estimated.usdPerMonth),
      `${deviation >= 0 ? '+' : ''}${(100 * deviation).toFixed(0)}%`,
      services(run.estimated),
      services(model.estimated),
      top3(run.estimated),
      top3(model.estimated),
    ]),
  )
}

function pointTable(points: ModelPoint[], alt: ModelPoint[]): string {
  return markdownTable(
    ['rows/s: target (written)', 'buckets', 'task-threads', 'writer invocations/s × buckets touched', 'sustained', '$ per million upserts', '$ per month', 'top 3 line items', 'Lambda / S3 / SQS / CloudWatch', 'lag p50 (model)', '$ per month at the lag model\'s speeds', 'Managed Flink + Paimon $ per month', 'cheaper'],
    points.map((p, i) => [
      `${p.rate} (${Math.round(p.rowsPerSecond)})`,
      p.buckets,
      label(p.taskThreads),
      `${p.writerInvocationsPerSecond.toFixed(2)} × ${Math.round(p.sim.usage.bucketsTouched / Math.max(1, p.sim.usage.writerCommits))}`,
      p.writersKeepUp && p.compactionKeepsUp ? 'yes' : `**no** (${[p.writersKeepUp ? '' : 'writers', p.compactionKeepsUp ? '' : 'compaction jobs pile up'].filter(Boolean).join(', ')})`,
      usd(p.estimated.usdPerMillionUpserts),
      usd(p.estimated.usdPerMonth),
      top3(p.estimated),
      services(p.estimated),
      lag(p.sim.lagP50S),
      alt[i] ? usd(alt[i].estimated.usdPerMonth) : '-',
      usd(p.flink.usdPerMonth),
      p.estimated.usdPerMonth < p.flink.usdPerMonth ? 'Strata' : 'Flink',
    ]),
  )
}

/** Every line item's share of the month, one column per setting (items under 0.5% everywhere left out). */
function lineItemShares(points: ModelPoint[]): string {
  const share = (p: ModelPoint, item: string) => (p.estimated.lines.find((l) => l.item === item)?.usdPerMonth ?? 0) / p.estimated.usdPerMonth
  const items = [...new Set(points.flatMap((p) => p.estimated.lines.map((l) => l.item)))].filter((i) => points.some((p) => share(p, i) >= 0.005))
  items.sort((a, b) => points.reduce((n, p) => n + share(p, b), 0) - points.reduce((n, p) => n + share(p, a), 0))
  return markdownTable(
    ['line item', ...points.map((p) => `${p.rate} rows/s, ${label(p.taskThreads)}`)],
    [...items.map((i) => [i, ...points.map((p) => pct(share(p, i), 1))]), ['**$ per month**', ...points.map((p) => usd(p.estimated.usdPerMonth))]],
  )
}

function lineItems(p: ModelPoint): string {
  return markdownTable(
    ['line item', 'quantity per month', '$ per month', 'share'],
    p.estimated.lines.map((l) => [l.item, `${l.quantity >= 1e6 ? `${(l.quantity / 1e6).toFixed(1)}M` : l.quantity.toFixed(1)} ${l.unit}`, usd(l.usdPerMonth), pct(l.usdPerMonth, p.estimated.usdPerMonth)]),
  )
}

/** Rates the crossover scan prices (rows/s). */
export const SCAN_RATES = [10, 20, 50, 100, 200, 300, 500, 700, 1000, 2000, 5000]

export interface Crossing {
  /** between these two scanned rates the cheaper of the two changes */
  from: number
  to: number
  /** the cheaper one above the crossing */
  above: 'Strata' | 'Flink'
}

/** Strata's month against Flink's over the scanned rates (task-threads 4), and where the cheaper one changes. */
export function crossings(u: UnitCosts, prices: PriceFile, cw: ModelSetting['cloudwatch'], buckets: number, o: ModelRunOptions, rates = SCAN_RATES): { scan: { rate: number; strata: number; flink: number }[]; crossings: Crossing[] } {
  const scan = rates.map((rate) => {
    const p = modelPoint(u, prices, cw, buckets, rate, 4, o)
    return { rate, strata: p.estimated.usdPerMonth, flink: p.flink.usdPerMonth }
  })
  const out: Crossing[] = []
  for (let i = 1; i < scan.length; i++) {
    const was = scan[i - 1].strata < scan[i - 1].flink, is = scan[i].strata < scan[i].flink
    if (was !== is) out.push({ from: scan[i - 1].rate, to: scan[i].rate, above: is ? 'Strata' : 'Flink' })
  }
  return { scan, crossings: out }
}

export interface CostSimResult {
  command: string
  options: ModelRunOptions & { buckets: number }
  calibration: UnitCosts
  /** the anchors' own unit costs, every driver, for what the model leaves out */
  anchorUnits: UnitCosts | null
  prices: PriceFile
  anchors: Pick<AnchorRun, 'params' | 'rowsSent' | 'rowsWritten' | 'ingestBacklog' | 'functions' | 'loadAvg'>[]
  check: CheckRow[]
  points: ModelPoint[]
  /** the same settings at the lag calibration's own speeds (its Lambda fit), for the spread */
  atLagSpeeds: ModelPoint[]
  crossover: ReturnType<typeof crossings>
}

/** Where each modelled line comes from, in the doc beside the tables. */
function assumptions(r: CostSimResult): string {
  const k = r.options.speed ?? { compaction: 1, commit: 1 }
  return [
    `- **Unit costs, measured**: every billed request of the measured windows (bench/cost.ts's 64-bucket runs at the deployed writer batch, and the anchor) is put down to what it grows with (\`bench/lib/cost-model.ts\`): the writer's data PUTs and SQS sends per bucket its batch touches, its other requests per invocation, its event source's receives and deletes per row; the compactor's data GETs per file it reads (the level-0 files and one base file), its other requests per bucket compacted; the committer's per snapshot; each event source's per invocation; maintenance per second, as measured at 64 buckets. A unit cost is the pooled requests over the pooled quantity.`,
    `- **Counts, simulated**: \`bench/simulate.ts\`, folded commits behind the committer lease, counts the writer invocations, the buckets they touch, the bucket compactions with their jobs and files, the compactor slot-seconds (working, or waiting for the commit), the snapshots and the committer invocations. Its compaction and commit costs (the lag calibration of "Beyond this machine" below) are scaled by the factors at which it runs the measured runs' bucket compactions and snapshots a second: compaction ×${k.compaction.toFixed(1)}, commit ×${k.commit.toFixed(1)} (this machine's compactor and committer are that much slower than the lag calibration says); the column "at the lag model's speeds" leaves them unscaled.`,
    `- **Writer batches**: the event source's 5 pollers each fill a batch for the 5 s window, so an invocation takes min(1,000, rate × 5 s ÷ 5) rows (bench/cost.ts measured about one invocation a second at 100 rows/s); n random keys touch B·(1 − (1 − 1/B)^n) of B buckets. At most 8 writers run: when they cannot keep up, rows queue and batches grow up to 1,000 rows; beyond that the rate written is what 8 writers manage.`,
    `- **Durations** (Lambda-estimated as in bench/cost.ts): writer ${r.calibration.writerMs.base.toFixed(0)} ms (the 64-bucket runs' invocations less their per-bucket part) + ${r.calibration.writerMs.perBucket.toFixed(1)} ms per bucket touched (the anchor's writer CPU time per bucket, stretched to 1,024 MB's share of a vCPU; the anchor's other waits were for a backend starved on this machine); compactor the simulated slot-seconds at 3,008 MB; committer ${r.calibration.committerMsPerSnapshot.toFixed(0)} ms per snapshot as measured, at most 2 invocations at once.`,
    `- **Sustained**: "compaction jobs pile up" when the simulated compaction queue grows over the window or the lag does (a bucket compaction takes at most 10 jobs, the FIFO batch, but all its level-0 files, so the lag can stay bounded while jobs pile up).`,
    `- **Storage, CloudWatch**: the measured table's bytes plus an hour of the writers' PUT bytes per row and of compactions (each rewrites its bucket's share); one table's metrics, alarms and dashboard as in bench/cost.ts, 1,500 log bytes per invocation.`,
    `- **Managed Flink + Paimon**: \`flinkAssumption\` for the buckets a 10 s checkpoint's rows touch (\`flinkAssumptionTouched\` in \`bench/lib/cost-report.ts\`).`,
    `- **The anchor** calibrates the writers' side only: its compactors and committer fell far behind its writers, no steady state.${anchorGap(r)}`,
    `- **Not modelled**: cold starts, S3 request rates per prefix, SQS FIFO throughput limits, retries, reads.`,
  ].join('\n')
}

/** What the anchor's compactor and committer did per unit, against the units the model uses. */
function anchorGap(r: CostSimResult): string {
  const a = r.anchorUnits
  if (!a) return ''
  const f = (x: number | undefined) => (x ?? 0).toFixed(1)
  const u = r.calibration.perUnit
  return ` What they did per unit there, against the 64-bucket units the model uses: ${f(a.perUnit.compaction.compactor?.s3Tier2)} GET/HEAD per bucket compacted (${f(u.compaction.compactor?.s3Tier2)}), ${f(a.perUnit.snapshot.committer?.s3Tier1)} PUT/LIST per snapshot (${f(u.snapshot.committer?.s3Tier1)}): at 1,024 buckets the model's compactor GET/HEAD and committer PUT/COPY/POST/LIST lines may be low by that much.`
}

export function costSimMarkdown(r: CostSimResult): string {
  const within = r.check.filter((c) => c.run.params.writerBatchSize === DEFAULT_SQS_INGEST.batchSize)
  const worst = Math.max(...within.map((c) => Math.abs(c.deviation)))
  const at = (rate: number, t: number) => r.points.find((p) => p.rate === rate && p.taskThreads === t)
  const mid = at(1000, 4) ?? r.points[0]
  // the level-0 files alone: one data PUT per bucket touched
  const l0 = (p: ModelPoint) => (p.sim.usage.bucketsTouched * (r.calibration.perUnit.bucketTouched.writer?.s3Tier1 ?? 0) * (SECONDS_PER_MONTH / r.options.seconds) * r.prices.prices['s3.standard.tier1'].usd) / p.estimated.usdPerMonth
  const others = r.check.filter((c) => c.run.params.writerBatchSize !== DEFAULT_SQS_INGEST.batchSize)
  const anchors = r.anchors.map((a) => {
    const w = a.functions.writer
    const each = (x: number | undefined) => ((x ?? 0) / Math.max(1, w.invocations) / 1000).toFixed(1)
    const load = a.loadAvg ? ` (load average ${a.loadAvg.start.toFixed(1)} and ${a.loadAvg.end.toFixed(1)} on ${a.loadAvg.cores} cores)` : ''
    return `${a.params.buckets} buckets at ${a.params.rate} rows/s, task-threads ${a.params.taskThreads}, ${a.params.seconds} s window${load}: ${Math.round(a.rowsSent / a.params.seconds)} rows/s sent, ${Math.round(a.rowsWritten / a.params.seconds)} written by ${w.invocations} writer invocations of ${(a.rowsWritten / Math.max(1, w.invocations)).toFixed(0)} rows (${each(w.wallMs)} s each on this machine, of which ${each(w.cpuMs)} s on a CPU and ${each(w.runQueueMs)} s waiting for one), ${a.functions.compactor.invocations} compactor invocations started, ${a.ingestBacklog} rows queued at the end`
  }).join('; ')
  const c = r.calibration
  const x = r.crossover
  const scan = x.scan.map((p) => `${p.rate}: ${usd(p.strata)} vs ${usd(p.flink)}`).join(', ')
  const cross = x.crossings.length
    ? `at ${r.options.buckets.toLocaleString('en-US')} buckets, task-threads 4, ${x.crossings.map((c) => `${c.above} becomes the cheaper between ${c.from} and ${c.to} rows/s`).join('; ')} (Strata vs Flink a month, by rows/s: ${scan})`
    : `at ${r.options.buckets.toLocaleString('en-US')} buckets, task-threads 4, the cheaper one does not change between ${x.scan[0]?.rate} and ${x.scan.at(-1)?.rate} rows/s (${scan})`
  return [
    `Command: \`${r.command}\` (calibration inputs: \`bench/out/cost.json\` from the run above${r.anchors.map((a) => `, \`bench/out/cost-anchor.json\` from \`npx tsx bench/cost-sim.ts --anchor --anchor-buckets ${a.params.buckets} --anchor-rate ${a.params.rate} --anchor-seconds ${a.params.seconds}\``).join('')}); ${r.options.seconds} simulated seconds after ${r.options.warmupSeconds} s warm-up per setting, seed ${r.options.seed}.`,
    `Measured anchor${r.anchors.length === 1 ? '' : 's'} (where this machine stops at 1,024 buckets: well below 100 rows/s): ${anchors || 'none'}. Calibrated: writer ${c.writerMs.base.toFixed(0)} ms + ${c.writerMs.perBucket.toFixed(1)} ms per bucket touched; ${c.compactorInvocationsPerCompaction.toFixed(2)} compactor invocations per bucket compacted; committer ${c.committerMsPerSnapshot.toFixed(0)} ms per snapshot.`,
    assumptions(r),
    `The model's check: at 64 buckets, fed each measured run's writer invocations, the model's month is within ${(100 * worst).toFixed(0)}% of the measured one for the runs at the deployed batch (calibrated from; tolerance 25%: **${worst <= 0.25 ? 'met' : 'not met'}**); the batch-100 runs, not calibrated from, are off by ${others.map((c) => `${c.deviation >= 0 ? '+' : ''}${(100 * c.deviation).toFixed(0)}% (task-threads ${label(c.run.params.taskThreads)}, ${Math.round(c.run.rowsWritten / c.run.usage.seconds)} rows/s written)`).join(', ')}:`,
    checkTable(r.check),
    `${r.options.buckets.toLocaleString('en-US')} buckets (modelled), beside the smallest Managed Flink application:`,
    pointTable(r.points, r.atLagSpeeds),
    `Crossover: ${cross}.`,
    `What dominates at ${r.options.buckets.toLocaleString('en-US')} buckets: the level-0 PUTs, one per bucket a writer batch touches, at task-threads 1 and 4 (${r.points.filter((p) => p.taskThreads !== -1).map((p) => `${p.rate} rows/s, ${label(p.taskThreads)}: ${pct(l0(p), 1)}`).join('; ')} of the month); at task-threads -1 the compactor's duration (${r.points.filter((p) => p.taskThreads === -1).map((p) => `${p.rate} rows/s: ${pct(p.estimated.lines.find((l) => l.item === 'compactor duration')?.usdPerMonth ?? 0, p.estimated.usdPerMonth)}`).join('; ')}), each of up to 1,000 compactors holding 3,008 MB while it waits for its commit.`,
    `Each line item's share of the month (rows/s target, task-threads):`,
    lineItemShares(r.points),
    `Every line item at ${mid.rate} rows/s, task-threads ${label(mid.taskThreads)}, with its quantity:`,
    lineItems(mid),
  ].join('\n\n')
}

const DOCS = join(import.meta.dirname, '..', 'docs', 'benchmarks.md')
const ANCHOR_FILE = join(OUT_DIR, 'cost-anchor.json')

function writeDocs(md: string): void {
  const text = readFileSync(DOCS, 'utf8')
  const begin = text.indexOf('<!-- cost-1024:begin -->')
  const end = text.indexOf('<!-- cost-1024:end -->')
  if (begin < 0 || end < begin) throw new Error('docs/benchmarks.md: no <!-- cost-1024:begin --> … <!-- cost-1024:end --> markers')
  writeFileSync(DOCS, `${text.slice(0, begin)}<!-- cost-1024:begin -->\n${md}\n${text.slice(end)}`)
}

async function main(): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const args = parseBenchArgs(process.argv.slice(2), ['--anchor', '--write-docs'], ['--anchor-buckets', '--anchor-rate', '--anchor-seconds', '--buckets', '--seconds', '--warmup'])
  const log = (s: string) => process.stderr.write(s + '\n')
  if (args.has('--anchor')) {
    const params = { buckets: args.num('--anchor-buckets', 1024), rate: args.num('--anchor-rate', 100), taskThreads: 4, seconds: args.num('--anchor-seconds', 20), warmupSeconds: 5, writerBatchSize: DEFAULT_SQS_INGEST.batchSize, writerWindowMs: DEFAULT_SQS_INGEST.maxBatchingWindowSeconds * 1000 }
    const kept: AnchorRun[] = existsSync(ANCHOR_FILE) ? (JSON.parse(readFileSync(ANCHOR_FILE, 'utf8')) as AnchorRun[]).filter((a) => a.params.buckets !== params.buckets || a.params.rate !== params.rate) : []
    const run = await runAnchor(params, log)
    writeFileSync(ANCHOR_FILE, JSON.stringify([...kept, run], null, 1))
    log(`anchor saved to ${ANCHOR_FILE}: ${run.functions.writer.invocations} writer invocations, ${run.rowsWritten} rows, backlog ${run.ingestBacklog}`)
    return
  }
  const cost = JSON.parse(readFileSync(join(OUT_DIR, 'cost.json'), 'utf8')) as CostResult
  const anchors: AnchorRun[] = existsSync(ANCHOR_FILE) ? JSON.parse(readFileSync(ANCHOR_FILE, 'utf8')) : []
  const prices = loadPrices()
  const { windows, maintenance } = calibrationRuns(cost, anchors)
  const u = calibrate(windows, maintenance)
  const base: ModelRunOptions = { seconds: args.num('--seconds', 600), warmupSeconds: args.num('--warmup', 300), seed: SEED }
  const deployed = cost.runs.filter((x) => x.params.writerBatchSize === DEFAULT_SQS_INGEST.batchSize && x.usage.functions.writer.invocations >= 3)
  const o: ModelRunOptions = { ...base, speed: fitSpeeds(deployed, base) }
  log(`speeds fitted to the measured runs: compaction ×${o.speed!.compaction.toFixed(2)}, commit ×${o.speed!.commit.toFixed(2)}`)
  const buckets = args.num('--buckets', 1024)
  const check = checkRows({ ...cost, prices }, u, o)
  const points: ModelPoint[] = []
  const atLagSpeeds: ModelPoint[] = []
  for (const rate of RATES) for (const t of THREADS) {
    points.push(modelPoint(u, prices, cost.cloudwatch, buckets, rate, t, o))
    atLagSpeeds.push(modelPoint(u, prices, cost.cloudwatch, buckets, rate, t, base))
    log(`model ${buckets} buckets, ${rate} rows/s, task-threads ${t}: $${points.at(-1)!.estimated.usdPerMillionUpserts.toFixed(2)} per million`)
  }
  const result: CostSimResult = {
    command: `npx tsx bench/cost-sim.ts ${process.argv.slice(2).join(' ')}`.trim(),
    options: { ...o, buckets },
    calibration: u,
    anchorUnits: anchors.length ? calibrate(anchors, maintenance, true) : null,
    prices,
    anchors: anchors.map((a) => ({ params: a.params, rowsSent: a.rowsSent, rowsWritten: a.rowsWritten, ingestBacklog: a.ingestBacklog, functions: a.functions, loadAvg: a.loadAvg })),
    check,
    points,
    atLagSpeeds,
    crossover: crossings(u, prices, cost.cloudwatch, buckets, o),
  }
  log(`results: ${writeResults('cost-sim', { ...result, check: check.map((c) => ({ run: c.run.params, measured: c.run.estimated.usdPerMonth, model: c.model.estimated.usdPerMonth, deviation: c.deviation })) })}`)
  const md = costSimMarkdown(result)
  console.log(md)
  if (args.has('--write-docs')) writeDocs(md)
}

if (import.meta.filename === process.argv[1]) await main()
