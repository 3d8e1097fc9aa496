// The cost benchmark's report: the cost table (rate × buckets × task-threads × writer batch →
// $ per million upserts, $ per month, the top line items), the always-on alternative priced
// from the same file, where Strata stops being cheaper, and the lowering side by side.

import type { CostRun } from '../cost.ts'
import { type Bill, type FlinkAssumption, byService, flinkBill } from './cost-bill.ts'
import type { CloudWatchCounts } from './cost-cloudwatch.ts'
import { type PriceFile, SECONDS_PER_MONTH, s3ByKind } from './cost-count.ts'
import type { MachineInfo } from './machine.ts'
import { markdownTable } from './report.ts'

export interface CostResult {
  command: string
  machine: MachineInfo
  loadAvgStart: number[]
  loadAvgEnd: number[]
  elapsedSeconds: number
  cloudwatch: CloudWatchCounts
  prices: PriceFile
  runs: CostRun[]
}

/**
 * The smallest Managed Flink application that runs Paimon's writer with compaction for the
 * table: parallelism 1 (1 KPU) plus the orchestration KPU, a checkpoint (so a Paimon commit)
 * every 10 s. Per checkpoint at 64 buckets, all touched at these rates: one level-0 file per
 * bucket, one compacted file and one deletion-vector index per bucket, ten metadata and
 * checkpoint objects (manifests, list, snapshot, hint, Flink's _metadata); reads: the
 * compacted files' inputs per bucket and ten metadata reads.
 */
export function flinkAssumption(buckets: number, storedBytes: number): FlinkAssumption {
  return { kpus: 1, checkpointSeconds: 10, tier1PerCheckpoint: 3 * buckets + 10, tier2PerCheckpoint: buckets + 10, storedBytes }
}

const usd = (x: number) => (x >= 100 ? `$${x.toFixed(0)}` : x >= 1 ? `$${x.toFixed(2)}` : `$${x.toFixed(3)}`)
const pct = (x: number, total: number) => `${((100 * x) / Math.max(1e-12, total)).toFixed(0)}%`
const label = (t: number) => (t === -1 ? '-1' : String(t))

function top3(b: Bill): string {
  return b.lines.slice(0, 3).map((l) => `${l.item} ${pct(l.usdPerMonth, b.usdPerMonth)}`).join('; ')
}

function costTable(r: CostResult): string {
  return markdownTable(
    ['rows/s (sent in window)', 'buckets', 'task-threads', 'writer batch', 'sustained', '$ per million upserts (measured durations)', '$ per million (Lambda-estimated durations)', '$ per month (estimated)', 'top 3 line items (estimated)', 'Lambda / S3 / SQS / CloudWatch', 'lag p50 (s)', 'load avg at end'],
    r.runs.map((x) => {
      const s = byService(x.estimated)
      return [
        `${x.params.rate} (${Math.round(x.rowsSent / x.usage.seconds)})`,
        64,
        label(x.params.taskThreads),
        x.params.writerBatchSize,
        x.sustained ? 'yes' : `**no** (${x.ingestBacklog} queued)`,
        usd(x.measured.usdPerMillionUpserts),
        usd(x.estimated.usdPerMillionUpserts),
        usd(x.estimated.usdPerMonth),
        top3(x.estimated),
        `${pct(s.Lambda, x.estimated.usdPerMonth)} / ${pct(s.S3, x.estimated.usdPerMonth)} / ${pct(s.SQS, x.estimated.usdPerMonth)} / ${pct(s.CloudWatch, x.estimated.usdPerMonth)}`,
        (x.lagP50Ms / 1000).toFixed(1),
        x.loadAvgEnd.toFixed(1),
      ]
    }),
  )
}

/** Strata's monthly cost against the rate, least squares over the default-batch runs at one setting: fixed + per-row·rate. */
function linearFit(runs: CostRun[]): { fixed: number; perRowPerSecond: number } | null {
  if (runs.length < 2) return null
  const xs = runs.map((r) => r.rowsSent / r.usage.seconds)
  const ys = runs.map((r) => r.estimated.usdPerMonth)
  const mx = xs.reduce((a, b) => a + b, 0) / xs.length
  const my = ys.reduce((a, b) => a + b, 0) / ys.length
  const sxx = xs.reduce((a, x) => a + (x - mx) ** 2, 0)
  const slope = xs.reduce((a, x, i) => a + (x - mx) * (ys[i] - my), 0) / Math.max(1e-9, sxx)
  return { fixed: my - slope * mx, perRowPerSecond: slope }
}

function flinkSection(r: CostResult, defaults: CostRun[]): string {
  const rows = defaults.map((x) => {
    const f = flinkBill(flinkAssumption(64, x.usage.storedBytes), r.prices, x.estimated.upsertsPerMonth)
    return { x, f }
  })
  const table = markdownTable(
    ['rows/s', 'task-threads', 'Strata $ per month (estimated)', 'Strata $ per million', 'Managed Flink + Paimon $ per month', 'Flink $ per million', 'cheaper', 'Flink top line items'],
    rows.map(({ x, f }) => [x.params.rate, label(x.params.taskThreads), usd(x.estimated.usdPerMonth), usd(x.estimated.usdPerMillionUpserts), usd(f.usdPerMonth), usd(f.usdPerMillionUpserts), x.estimated.usdPerMonth < f.usdPerMonth ? 'Strata' : 'Flink', f.lines.slice(0, 2).map((l) => `${l.item} ${pct(l.usdPerMonth, f.usdPerMonth)}`).join('; ')]),
  )
  const at4 = defaults.filter((x) => x.params.taskThreads === 4)
  const fit = linearFit(at4.length >= 2 ? at4 : defaults)
  const flinkMonthly = rows[0]?.f.usdPerMonth ?? NaN
  let crossover = 'not enough runs to fit'
  if (fit) {
    const rate = (flinkMonthly - fit.fixed) / fit.perRowPerSecond
    const first = rows.find(({ x, f }) => x.estimated.usdPerMonth >= f.usdPerMonth)
    crossover = first
      ? `measured: Strata costs more than the Flink application from ${first.x.params.rate} rows/s on (task-threads ${label(first.x.params.taskThreads)}); dominant there: ${top3(first.x.estimated)}`
      : `no measured rate reached it`
    crossover += `; fitted over the task-threads 4 runs, Strata's month is ${usd(fit.fixed)} + ${usd(fit.perRowPerSecond)} per row/s, so it costs what the Flink application costs (${usd(flinkMonthly)}) at about ${Math.round(rate).toLocaleString('en-US')} rows/s`
  }
  return `${table}\n\nCrossover: ${crossover}.`
}

function loweringSection(r: CostResult): string {
  const lowered = r.runs.filter((x) => x.params.writerBatchSize !== r.runs[0].params.writerBatchSize)
  if (lowered.length === 0) return ''
  const pairs = lowered.map((after) => ({ after, before: r.runs.find((b) => b.params.rate === after.params.rate && b.params.taskThreads === after.params.taskThreads && b.params.writerBatchSize === r.runs[0].params.writerBatchSize) })).filter((p) => p.before)
  const perMonth = (x: CostRun, n: number) => (n * SECONDS_PER_MONTH) / x.usage.seconds
  const row = (x: CostRun) => {
    const t = Object.values(x.usage.requests)
    const tier1 = t.reduce((n, k) => n + k.s3Tier1, 0)
    const sqs = t.reduce((n, k) => n + k.sqsFifoChunks + k.sqsStandardChunks, 0)
    return [x.params.rate, x.params.writerBatchSize, usd(x.estimated.usdPerMillionUpserts), usd(x.estimated.usdPerMonth), `${(perMonth(x, x.usage.functions.writer.invocations) / 1e6).toFixed(2)}M`, `${(perMonth(x, x.usage.functions.compactor.invocations) / 1e6).toFixed(2)}M`, `${(perMonth(x, tier1) / 1e6).toFixed(1)}M`, `${(perMonth(x, sqs) / 1e6).toFixed(1)}M`, (x.lagP50Ms / 1000).toFixed(1)]
  }
  return markdownTable(
    ['rows/s', 'writer batch', '$ per million (estimated)', '$ per month', 'writer invocations / month', 'compactor invocations / month', 'S3 PUT/LIST / month', 'SQS requests / month', 'lag p50 (s)'],
    pairs.flatMap((p) => [row(p.before!), row(p.after)]),
  )
}

/** Which S3 requests dominate, by object kind and operation, in the costliest default run. */
function s3KindsSection(r: CostResult, run: CostRun): string {
  const kinds = Object.entries(s3ByKind(run.counts)).map(([k, v]) => ({ k, n: v.tier1 + v.tier2, usd: v.tier1 * r.prices.prices['s3.standard.tier1'].usd + v.tier2 * r.prices.prices['s3.standard.tier2'].usd }))
  kinds.sort((a, b) => b.usd - a.usd)
  const total = kinds.reduce((n, k) => n + k.usd, 0)
  return markdownTable(['object kind, operation', 'requests in the window', 'share of S3 request dollars'], kinds.slice(0, 8).map((k) => [k.k, k.n, pct(k.usd, total)]))
}

export function costMarkdown(r: CostResult): string {
  const defaults = r.runs.filter((x) => x.params.writerBatchSize === r.runs[0].params.writerBatchSize)
  const costliest = [...defaults].sort((a, b) => b.estimated.usdPerMonth - a.estimated.usdPerMonth)[0]
  const parts = [
    `Command: \`${r.command}\` (${r.elapsedSeconds} s); load average ${r.loadAvgStart.map((x) => x.toFixed(1)).join(', ')} at start, ${r.loadAvgEnd.map((x) => x.toFixed(1)).join(', ')} at the end, on ${r.machine.nproc} cores. Prices: \`bench/prices-us-east-1.json\`, us-east-1 list prices taken ${r.prices.taken}. CloudWatch for one table: ${r.cloudwatch.metrics} custom metrics, ${r.cloudwatch.alarms} alarms, ${r.cloudwatch.dashboards} dashboard (synthesized stack).`,
    costTable(r),
    `The always-on alternative at the same freshness (assumptions in \`bench/lib/cost-report.ts\` \`flinkAssumption\`: 1 KPU + 1 orchestration KPU, a Paimon commit every 10 s checkpoint), priced from the same file:`,
    flinkSection(r, defaults),
  ]
  const lowering = loweringSection(r)
  if (lowering) parts.push('The writer batch, before and after (task-threads 4):', lowering)
  if (costliest) parts.push(`S3 requests by object kind in the costliest run (${costliest.params.rate} rows/s, task-threads ${label(costliest.params.taskThreads)}):`, s3KindsSection(r, costliest))
  return parts.join('\n\n')
}
