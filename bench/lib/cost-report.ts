// The cost benchmark's report: the cost table (rate × buckets × task-threads × writer batch →
// $ per million upserts, $ per month, the top line items), the always-on alternative priced
// from the same file, where Strata stops being cheaper, and the lowering side by side.

import type { RequestCount } from '../../local/request-counts.ts'
import { type Bill, type CostUsage, type FlinkAssumption, byService, flinkBill } from './cost-bill.ts'
import type { CloudWatchCounts } from './cost-cloudwatch.ts'
import { type PriceFile, SECONDS_PER_MONTH, s3ByKind } from './cost-count.ts'
import type { MachineInfo } from './machine.ts'
import { markdownTable } from './report.ts'

export interface CostParams {
  rate: number
  taskThreads: number
  seconds: number
  warmupSeconds: number
  writerBatchSize: number
  writerWindowMs: number
}

export interface CostRun {
  params: CostParams
  rowsSent: number
  /** rows the writer invocations that started in the window took (the upserts the window's cost is divided by) */
  rowsWritten: number
  /** rows on the ingest queue when the window ended: a backlog means this machine did not sustain the rate */
  ingestBacklog: number
  sustained: boolean
  lagP50Ms: number
  lagP99Ms: number
  usage: CostUsage
  measured: Bill
  estimated: Bill
  /** the window's requests, every cell, for the breakdowns */
  counts: RequestCount[]
  loadAvgEnd: number
}

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

/**
 * The same application when not every bucket is written each checkpoint (many buckets, a
 * low rate): the per-bucket requests of `flinkAssumption` for the buckets a checkpoint's
 * rows touch.
 */
export function flinkAssumptionTouched(bucketsPerCheckpoint: number, storedBytes: number): FlinkAssumption {
  return flinkAssumption(bucketsPerCheckpoint, storedBytes)
}

const usd = (x: number) => (!Number.isFinite(x) ? '-' : x >= 100 ? `$${x.toFixed(0)}` : x >= 1 ? `$${x.toFixed(2)}` : `$${x.toFixed(3)}`)
const pct = (x: number, total: number) => `${((100 * x) / Math.max(1e-12, total)).toFixed(0)}%`
const label = (t: number) => (t === -1 ? '-1' : String(t))

function top3(b: Bill): string {
  return b.lines.slice(0, 3).map((l) => `${l.item} ${pct(l.usdPerMonth, b.usdPerMonth)}`).join('; ')
}

function costTable(r: CostResult): string {
  return markdownTable(
    ['rows/s: target (sent, written)', 'buckets', 'task-threads', 'writer batch', 'sustained', '$ per million upserts (measured durations)', '$ per million (Lambda-estimated durations)', '$ per month (estimated)', 'top 3 line items (estimated)', 'Lambda / S3 / SQS / CloudWatch', 'lag p50 (s)', 'load avg at end'],
    r.runs.map((x) => {
      const s = byService(x.estimated)
      return [
        `${x.params.rate} (${Math.round(x.rowsSent / x.usage.seconds)}, ${Math.round(x.rowsWritten / x.usage.seconds)})`,
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
  const xs = runs.map((r) => r.rowsWritten / r.usage.seconds)
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
    // a fit over runs that did not all sustain their rate can slope the wrong way: then it says nothing
    crossover += rate > 0 && Number.isFinite(rate)
      ? `; fitted over the task-threads 4 runs, Strata's month is ${usd(fit.fixed)} + ${usd(fit.perRowPerSecond)} per row/s, so it costs what the Flink application costs (${usd(flinkMonthly)}) at about ${Math.round(rate).toLocaleString('en-US')} rows/s`
      : `; a straight line through the task-threads 4 runs' months (${usd(fit.fixed)} + ${usd(fit.perRowPerSecond)} per row/s written) does not cross it, since not every run sustained its rate; the extrapolation below, from the cost of one writer invocation, does`
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
  parts.push('Extrapolated to the target rates from each task-threads 4 run (bench/lib/cost-report.ts `unitCosts`: the month\'s fixed part, and the cost of one writer invocation with the work it causes, measured while writers took full batches; writer invocations a second = rate ÷ rows per invocation, the batch or 5 s of rows when that is fewer):', extrapolation(r))
  const lowering = loweringSection(r)
  if (lowering) parts.push('The writer batch, before and after (task-threads 4):', lowering)
  if (costliest) parts.push(`S3 requests by object kind in the costliest run (${costliest.params.rate} rows/s, task-threads ${label(costliest.params.taskThreads)}):`, s3KindsSection(r, costliest))
  return parts.join('\n\n')
}

/** The rates the extrapolation prices. */
export const TARGET_RATES = [100, 1000, 5000]

/**
 * A run's bill split into what a month costs whatever the load (CloudWatch's metrics, alarms
 * and dashboard, the mappings' idle polls, maintenance, storage) and what each writer
 * invocation costs with the work it causes (its requests, its jobs' compactions, the commits,
 * log lines), measured while the writers took full batches.
 */
export function unitCosts(x: CostRun, prices: PriceFile): { fixedUsdPerMonth: number; usdPerWriterInvocation: number } {
  const b = x.estimated
  const fixedItems = new Set(['custom metrics', 'alarms', 'dashboard', 'storage after expiration', 'maintenance invocations', 'maintenance duration', 'maintenance PUT/COPY/POST/LIST', 'maintenance GET/HEAD'])
  const idlePolls = (x.usage.idlePolling.pollers * SECONDS_PER_MONTH) / x.usage.idlePolling.waitSeconds
  const idle = idlePolls * (prices.prices['sqs.standard.request'].usd + 2 * prices.prices['sqs.fifo.request'].usd)
  const fixed = b.lines.filter((l) => fixedItems.has(l.item)).reduce((n, l) => n + l.usdPerMonth, 0) + idle
  const invocationsPerMonth = (x.usage.functions.writer.invocations * SECONDS_PER_MONTH) / x.usage.seconds
  return { fixedUsdPerMonth: fixed, usdPerWriterInvocation: (b.usdPerMonth - fixed) / Math.max(1, invocationsPerMonth) }
}

/** Writer invocations a second at `rate`: a batch closes when full or when the 5 s window ends. */
export function writerInvocationsPerSecond(rate: number, batch: number, windowSeconds: number): number {
  return rate / Math.min(batch, rate * windowSeconds)
}

function extrapolation(r: CostResult): string {
  const rows: (string | number)[][] = []
  const crossovers: string[] = []
  // a run in whose window fewer than 3 writer invocations started says nothing about one invocation's cost
  for (const x of r.runs.filter((x) => x.params.taskThreads === 4 && x.usage.functions.writer.invocations >= 3)) {
    const u = unitCosts(x, r.prices)
    const w = x.params.writerWindowMs / 1000
    for (const rate of TARGET_RATES) {
      const month = u.fixedUsdPerMonth + u.usdPerWriterInvocation * writerInvocationsPerSecond(rate, x.params.writerBatchSize, w) * SECONDS_PER_MONTH
      const upserts = rate * SECONDS_PER_MONTH
      const f = flinkBill(flinkAssumption(64, x.usage.storedBytes), r.prices, upserts)
      rows.push([`${x.params.rate} rows/s run, batch ${x.params.writerBatchSize}`, rate, usd(month), usd(month / (upserts / 1e6)), usd(f.usdPerMonth), usd(f.usdPerMillionUpserts), month < f.usdPerMonth ? 'Strata' : 'Flink'])
    }
    const flink = flinkBill(flinkAssumption(64, x.usage.storedBytes), r.prices, 0).usdPerMonth
    const cross = ((flink - u.fixedUsdPerMonth) / (u.usdPerWriterInvocation * SECONDS_PER_MONTH)) * x.params.writerBatchSize
    crossovers.push(`batch ${x.params.writerBatchSize} (from the ${x.params.rate} rows/s run): ${usd(u.fixedUsdPerMonth)} a month fixed + ${usd(u.usdPerWriterInvocation * 1000)} per 1,000 writer invocations; equal to the Flink application (${usd(flink)}) at about ${Math.round(cross).toLocaleString('en-US')} rows/s`)
  }
  return `${markdownTable(['measured in', 'rows/s', 'Strata $ per month', 'Strata $ per million', 'Managed Flink + Paimon $ per month', 'Flink $ per million', 'cheaper'], rows)}\n\n${crossovers.map((c) => `- ${c}`).join('\n')}`
}

/** How the figures are made, above the tables in docs/benchmarks.md. */
const METHOD = `One run, one setting after another, each on a fresh local runtime (embedded S3 + SQS, the real writer, compactor, committer and maintenance handlers in execution environments behind event-source pollers, the S3 transfer model of the freshness benchmark: 20 ms first byte, 50 MiB/s per request): a deletion-vector table with 64 buckets takes random upserts over 200,000 keys at a steady rate through the ingest queue, with the deployed writer event source (\`DEFAULT_SQS_INGEST\` in \`cdk/config.ts\`: batch size, 5 s batching window, 8 writers at most). Once every function has run once, and 10 s more, the window opens and the benchmark counts what AWS bills for it:

- **S3 and SQS requests**: the embedded backend counts every request it answers, per operation, caller and queue (\`local/request-counts.ts\`); each function's and each event-source mapping's client carries an SDK app id (\`CALLER\` in \`local/runtime/local-runtime.ts\`), so every request is billed to its component. S3: PUT, COPY, POST and LIST at the tier-1 price, GET, HEAD and the rest at tier 2, DELETE free; a 404 is billed as the request it was. SQS: every action is a request per 64 KiB of its larger body, at the FIFO price on the compaction and commit queues and the standard price on the ingest queue; the event-source mappings' receives and deletes and the committer's own drains are counted. The local poller long-polls 1 s where a mapping long-polls 20 s, so a mapping's measured empty receives are replaced by 5 pollers × one 20 s poll each over the whole window (an idle table's floor). The producer's sends to the ingest queue are counted and not billed: any alternative needs a producer.
- **Lambda**: each invocation that started in the window, billed at its configured memory (\`DEFAULT_MEMORY_MB\`) × its wall time rounded up to 1 ms, arm64, plus the request price. On this shared 2-core machine invocations wait for a CPU, so beside the measured duration the table gives a Lambda estimate: the invocation's run-queue wait taken out and its CPU time stretched to the function's share of a vCPU (1,769 MB is one vCPU), both read from \`/proc/thread-self/schedstat\` around the handler (\`bench/lib/cost-timed.ts\`). The S3 transfer model's waits stay in both.
- **Maintenance**: one pass and one orphan pass through the real handler after the window, scaled to their schedules (15 min, 6 h).
- **Storage**: the table's bytes after the maintenance pass plus an hour of the bytes the window PUT (\`snapshot.time-retained\` keeps an hour of snapshots, and the files they reference).
- **CloudWatch**: the synthesized stack's alarms and dashboard for one table (\`bench/lib/cost-cloudwatch.ts\`), the custom metrics the functions can publish (name × dimension set, counted from their sources), and 1,500 bytes of log ingestion per invocation (Lambda's START, END and REPORT lines and one EMF document; an estimate, not measured).

Not counted: reads (the reader function and its requests are per query), data transfer (none within the region), KMS, free tiers, Glue and Iceberg metadata (off in this table). Month = 730 h at the window's rate.`

export function costSection(r: CostResult): string {
  return `## Cost per million upserts\n\n${METHOD}\n\n${costMarkdown(r)}`
}
