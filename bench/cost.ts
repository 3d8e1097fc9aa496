// Cost per million upserts on the local runtime (embedded S3 + SQS, the real writer,
// compactor, committer and maintenance handlers in execution environments behind
// event-source pollers), against the always-on alternative at the same freshness.
//
//   npx tsx bench/cost.ts [--quick] [--seconds 30] [--warmup 10] [--rates 100,1000,5000]
//                         [--threads 1,4,-1] [--threads-rates 1000] [--batch-size 100 --lowered-batch-size 1000]
//   npx tsx bench/cost.ts --reprice        # price bench/out/cost.json again from the price file
//
// For each ingest rate × compaction.task-threads × writer batch size, a 64-bucket
// deletion-vector table takes random upserts at a steady rate; after the warm-up, for
// `--seconds`, the benchmark counts everything AWS bills: every S3 and SQS request the
// backend answered, by caller (local/request-counts.ts, bench/lib/cost-count.ts), each
// function's invocations and billed durations, one maintenance pass and one orphan pass
// (scaled to their schedules, every 15 min and 6 h), storage, and CloudWatch's metrics,
// alarms and dashboard (bench/lib/cost-cloudwatch.ts). bench/lib/cost-bill.ts prices them
// with bench/prices-us-east-1.json. Figures go to bench/out/cost.json and, as markdown, to
// stdout (docs/benchmarks.md, "Cost per million upserts", is written from them).

import { loadavg } from 'node:os'
import { join } from 'node:path'
import { readFileSync, writeFileSync } from 'node:fs'
import { Table } from '../lib/handle/table.ts'
import { tableStatus } from '../lib/maintenance/table-status.ts'
import { countsSince, type RequestCount } from '../local/request-counts.ts'
import { ExecutionEnvironmentPool } from '../local/runtime/execution-environment.ts'
import { startLocalRuntime, type LocalRuntime } from '../local/runtime/local-runtime.ts'
import type { InvocationInfo } from '../local/runtime/poller.ts'
import { DEFAULT_MEMORY_MB, DEFAULT_SQS_INGEST, WRITER_MAX_CONCURRENCY } from '../cdk/config.ts'
import { freshnessS3Model } from './freshness.ts'
import { parseBenchArgs } from './lib/args.ts'
import { type CostUsage, type FunctionName, type FunctionUsage, type Bill, FUNCTIONS, bill } from './lib/cost-bill.ts'
import { type CloudWatchCounts, cloudWatchCounts } from './lib/cost-cloudwatch.ts'
import { MAINTENANCE_CALLER, type RequestTally, loadPrices, tallyRequests } from './lib/cost-count.ts'
import { type CostParams, type CostResult, type CostRun, costMarkdown, costSection } from './lib/cost-report.ts'
import { type CostTiming, costTimingOf } from './lib/cost-timed.ts'
import { ORDERS_FIELDS, orderUpserts, seededRandom } from './lib/dataset.ts'
import { machineInfo } from './lib/machine.ts'
import { OUT_DIR, writeResults } from './lib/report.ts'
import { percentile } from './lib/stats.ts'

const LIB = join(import.meta.dirname, 'lib')
const BUCKETS = 64
const KEY_SPACE = 200_000
/** A Lambda function gets one full vCPU at 1,769 MB, proportionally less below. */
const FULL_VCPU_MB = 1769
/** Paimon's default snapshot.time-retained: steady-state storage keeps an hour of written files */
const RETAINED_SECONDS = 3600
/** CloudWatch log bytes per invocation: Lambda's START, END and REPORT lines and one EMF document (not measured: the local runtime disables metrics) */
const LOG_BYTES_PER_INVOCATION = 1500
/** The maintenance schedules of the stack's defaults */
const MAINTAIN_EVERY_S = 15 * 60
const ORPHANS_EVERY_S = 6 * 3600


interface Invocation {
  fn: FunctionName
  startedAt: number
  durationMs: number
  timing: CostTiming | null
  /** records in the invocation's batch */
  records: number
}


/** The cost runs' table: orders upserted by `id`, deletion vectors on. */
export const costSchema = (threads: number, buckets = BUCKETS) => ({
  fields: ORDERS_FIELDS,
  primaryKeys: ['id'],
  partitionKeys: [],
  options: { bucket: String(buckets), 'deletion-vectors.enabled': 'true', 'compaction.task-threads': String(threads), 'sequence.field': 'version' },
})

/**
 * The local runtime of a cost run (table `bench`): the deployed writer event source at `p`'s
 * batch, the freshness benchmark's S3 model, and the cost handlers, which report their
 * CPU timing; every invocation goes to `onInvocation`.
 */
export function startCostRuntime(p: CostParams, buckets: number, onInvocation: (fn: FunctionName, info: InvocationInfo) => void): Promise<LocalRuntime> {
  return startLocalRuntime({
    tables: [{ name: 'bench', schema: costSchema(p.taskThreads, buckets) }],
    latency: freshnessS3Model(),
    writerConcurrency: WRITER_MAX_CONCURRENCY,
    writerBatchSize: p.writerBatchSize,
    writerBatchingWindowMs: p.writerWindowMs,
    visibilityTimeoutSeconds: 120,
    timeoutMs: 110_000,
    writerModule: join(LIB, 'cost-writer.ts'),
    compactorModule: join(LIB, 'cost-compactor.ts'),
    committerModule: join(LIB, 'cost-committer.ts'),
    onWriterInvocation: (info) => onInvocation('writer', info),
    onCompactorInvocation: (_t, info) => onInvocation('compactor', info),
    onCommitterInvocation: (_t, info) => onInvocation('committer', info),
  })
}

/** The warm-up: until every function has run once (cold starts on a loaded machine take seconds), then `seconds` more. */
export async function warmUp(ran: (fn: FunctionName) => boolean, seconds: number): Promise<void> {
  for (let i = 0; i < 1200 && !(ran('writer') && ran('compactor') && ran('committer')); i++) await sleep(100)
  await sleep(seconds * 1000)
}

/** The bytes the table `bench` holds in the embedded S3 now. */
export async function tableBytes(rt: LocalRuntime): Promise<number> {
  return (await rt.backend.stats()).stats.s3.byDirectory.filter((d) => d.directory.startsWith(`${rt.bucket}/tables/bench/`)).reduce((n, d) => n + d.bytes, 0)
}

/** What an invocation would last on Lambda: its run-queue wait taken out, its CPU time stretched to the function's share of a vCPU. */
export function lambdaEstimateMs(durationMs: number, timing: CostTiming | null, memoryMb: number): number {
  if (!timing) return durationMs
  const waiting = Math.max(0, durationMs - timing.runQueueMs - timing.cpuMs)
  return waiting + timing.cpuMs * Math.max(1, FULL_VCPU_MB / memoryMb)
}

function functionUsage(invs: Invocation[], fn: FunctionName, scale = 1): FunctionUsage {
  const mine = invs.filter((i) => i.fn === fn)
  const mem = DEFAULT_MEMORY_MB[fn]
  return {
    invocations: mine.length * scale,
    billedMs: mine.reduce((n, i) => n + Math.ceil(i.durationMs), 0) * scale,
    estimatedMs: mine.reduce((n, i) => n + Math.ceil(lambdaEstimateMs(i.durationMs, i.timing, mem)), 0) * scale,
    memoryMb: mem,
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Sends `rate` upserts a second in 100 ms ticks until `stop.done`, counting the rows sent in `sent.rows`. */
export async function sendLoad(rt: LocalRuntime, rate: number, start: number, stop: { done: boolean }, sent: { rows: number }): Promise<void> {
  const random = seededRandom(20_261_206)
  const versions = new Map<number, number>()
  const perTick = Math.max(1, Math.round(rate / 10))
  for (let tick = 0; !stop.done; tick++) {
    const wait = start + tick * 100 - Date.now()
    if (wait > 0) await new Promise((r) => setTimeout(r, wait))
    const bodies = orderUpserts(random, versions, KEY_SPACE, perTick)
    await rt.send(bodies)
    sent.rows += bodies.length
  }
}

/** One maintenance pass (`event` {} or the orphan task) through the real handler; its requests and its invocation. */
async function maintenancePass(rt: LocalRuntime, event: unknown): Promise<{ counts: RequestCount[]; invocation: Invocation }> {
  const pool = new ExecutionEnvironmentPool({
    handlerModule: join(LIB, 'cost-maintenance.ts'),
    env: { ...rt.env, STRATA_TABLE: 'bench', AWS_LAMBDA_FUNCTION_NAME: 'strata-bench-maintenance', AWS_SDK_UA_APP_ID: MAINTENANCE_CALLER },
    maxEnvironments: 1,
    memoryLimitInMB: DEFAULT_MEMORY_MB.maintenance,
  })
  try {
    const before = rt.backend.requestCounts!()
    const startedAt = Date.now()
    const result = await pool.invoke(event)
    if (!result.ok) throw new Error(`maintenance pass failed: ${result.error.message}`)
    const counts = countsSince(before, rt.backend.requestCounts!()).filter((c) => c.caller === MAINTENANCE_CALLER)
    return { counts, invocation: { fn: 'maintenance', startedAt, durationMs: result.durationMs, timing: costTimingOf(result.value), records: 0 } }
  } finally {
    await pool.close()
  }
}

export async function runCost(p: CostParams, cloudwatch: CloudWatchCounts, log: (s: string) => void): Promise<CostRun> {
  const invocations: Invocation[] = []
  const rt = await startCostRuntime(p, BUCKETS, (fn, info) =>
    invocations.push({ fn, startedAt: info.startedAt, durationMs: info.result.durationMs, timing: info.result.ok ? costTimingOf(info.result.value) : null, records: info.records.length }),
  )
  let stopped = false
  try {
    const t = rt.tables.get('bench')!
    const reader = await Table.open(t.table.store)
    const stop = { done: false }
    const sent = { rows: 0 }
    const sender = sendLoad(rt, p.rate, Date.now(), stop, sent)
    await warmUp((fn) => invocations.some((i) => i.fn === fn), p.warmupSeconds)
    const lags: number[] = []
    const before = rt.backend.requestCounts!()
    const sentBefore = sent.rows
    const from = Date.now()
    const sampler = setInterval(() => void tableStatus(reader).then((s) => lags.push(s.maxFreshnessLagMs ?? 0), () => undefined), 2000)
    await sleep(p.seconds * 1000)
    const after = rt.backend.requestCounts!()
    const until = Date.now()
    const rowsSent = sent.rows - sentBefore
    stop.done = true
    await sender
    clearInterval(sampler)
    const ingestBacklog = await rt.queueDepth(rt.ingestQueueUrl)
    const counts = countsSince(before, after)
    // maintenance after the load, scaled to its schedules over the window
    const maintain = await maintenancePass(rt, {})
    const orphans = await maintenancePass(rt, { task: 'remove-orphans' })
    const stored = await tableBytes(rt)
    await rt.stop()
    stopped = true
    // every invocation that started in the window, those that ended after it included (stop() waits for them)
    const window = invocations.filter((i) => i.startedAt >= from && i.startedAt < until)
    const tallies = tallyRequests(counts).byComponent
    const kM = (until - from) / 1000 / MAINTAIN_EVERY_S
    const kO = (until - from) / 1000 / ORPHANS_EVERY_S
    const mt = tallyRequests(maintain.counts).byComponent.maintenance
    const ot = tallyRequests(orphans.counts).byComponent.maintenance
    tallies.maintenance = Object.fromEntries(Object.keys(mt).map((k) => [k, mt[k as keyof RequestTally] * kM + ot[k as keyof RequestTally] * kO])) as unknown as RequestTally
    const m1 = functionUsage([maintain.invocation], 'maintenance', kM)
    const m2 = functionUsage([orphans.invocation], 'maintenance', kO)
    const functions = Object.fromEntries(FUNCTIONS.map((f) => [f, functionUsage(window, f)])) as Record<FunctionName, FunctionUsage>
    functions.maintenance = { invocations: m1.invocations + m2.invocations, billedMs: m1.billedMs + m2.billedMs, estimatedMs: m1.estimatedMs + m2.estimatedMs, memoryMb: m1.memoryMb }
    const putBytes = counts.filter((c) => c.service === 's3' && c.operation === 'PutObject').reduce((n, c) => n + c.requestBytes, 0)
    const usage: CostUsage = {
      seconds: (until - from) / 1000,
      // the writers' rows, not the producer's: behind a backlog they differ
      upserts: window.filter((i) => i.fn === 'writer').reduce((n, i) => n + i.records, 0),
      functions,
      requests: tallies,
      idlePolling: { pollers: 5, waitSeconds: 20 },
      storedBytes: stored + (putBytes / ((until - from) / 1000)) * RETAINED_SECONDS,
      cloudwatch: { metrics: cloudwatch.metrics, alarms: cloudwatch.alarms, dashboards: cloudwatch.dashboards },
      logBytes: Object.values(functions).reduce((n, f) => n + f.invocations, 0) * LOG_BYTES_PER_INVOCATION,
    }
    const prices = loadPrices()
    const run: CostRun = {
      params: p,
      rowsSent,
      rowsWritten: usage.upserts,
      ingestBacklog,
      sustained: ingestBacklog <= p.rate * (p.writerWindowMs / 1000 + 5),
      lagP50Ms: percentile(lags, 50, 0),
      lagP99Ms: percentile(lags, 99, 0),
      usage,
      measured: bill(usage, prices, 'measured'),
      estimated: bill(usage, prices, 'estimated'),
      counts,
      loadAvgEnd: loadavg()[0],
    }
    log(`cost rate ${p.rate}/s, task-threads ${p.taskThreads}, writer batch ${p.writerBatchSize}: $${run.measured.usdPerMillionUpserts.toFixed(2)} per million upserts (estimated durations $${run.estimated.usdPerMillionUpserts.toFixed(2)}), $${run.measured.usdPerMonth.toFixed(0)}/month; backlog ${ingestBacklog}; lag p50 ${(run.lagP50Ms / 1000).toFixed(1)} s; load ${run.loadAvgEnd.toFixed(1)}`)
    return run
  } finally {
    if (!stopped) await rt.stop()
  }
}

const DOCS = join(import.meta.dirname, '..', 'docs', 'benchmarks.md')

/** Replaces what is between the cost markers of docs/benchmarks.md with the section. */
function writeDocs(r: CostResult): void {
  const text = readFileSync(DOCS, 'utf8')
  const begin = text.indexOf('<!-- cost:begin -->')
  const end = text.indexOf('<!-- cost:end -->')
  if (begin < 0 || end < begin) throw new Error('docs/benchmarks.md: no <!-- cost:begin --> … <!-- cost:end --> markers')
  writeFileSync(DOCS, `${text.slice(0, begin)}<!-- cost:begin -->\n${costSection(r)}\n${text.slice(end)}`)
}

/** Prices a saved result again from the price file (after editing it). */
function reprice(r: CostResult): CostResult {
  const prices = loadPrices()
  for (const run of r.runs) {
    run.measured = bill(run.usage, prices, 'measured')
    run.estimated = bill(run.usage, prices, 'estimated')
  }
  return { ...r, prices }
}

if (import.meta.filename === process.argv[1]) {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const args = parseBenchArgs(process.argv.slice(2), ['--quick', '--reprice', '--write-docs'], ['--seconds', '--warmup', '--batch-size', '--lowered-batch-size'], ['--rates', '--threads', '--threads-rates'])
  const list = (name: string, def: string) => args.str(name, def).split(',').map(Number)
  if (args.has('--reprice')) {
    const r = reprice(JSON.parse(readFileSync(join(OUT_DIR, 'cost.json'), 'utf8')) as CostResult)
    writeResults('cost', r)
    console.log(costMarkdown(r))
    if (args.has('--write-docs')) writeDocs(r)
  } else {
    const quick = args.has('--quick')
    const started = Date.now()
    const load = loadavg()
    const machine = machineInfo(['fauxqs', '@aws-sdk/client-s3', '@aws-sdk/client-sqs', 'tsx'])
    const cloudwatch = cloudWatchCounts()
    const seconds = args.num('--seconds', quick ? 10 : 30)
    const warmupSeconds = args.num('--warmup', quick ? 5 : 10)
    const rates = list('--rates', quick ? '100' : '100,1000,5000')
    const threads = list('--threads', quick ? '4' : '1,4,-1')
    // the deployed batch unless --batch-size; --lowered-batch-size runs another beside it
    const batch = args.num('--batch-size', DEFAULT_SQS_INGEST.batchSize)
    const lowered = args.num('--lowered-batch-size', 0)
    const windowMs = DEFAULT_SQS_INGEST.maxBatchingWindowSeconds * 1000
    const log = (line: string) => process.stderr.write(line + '\n')
    const runs: CostRun[] = []
    const result = (): CostResult => ({
      command: `npx tsx bench/cost.ts ${process.argv.slice(2).join(' ')}`.trim(),
      machine,
      loadAvgStart: load,
      loadAvgEnd: loadavg(),
      elapsedSeconds: Math.round((Date.now() - started) / 1000),
      cloudwatch,
      prices: loadPrices(),
      runs,
    })
    // the results so far after every run, so a long run that is cut short still reports
    const name = quick ? 'cost-quick' : 'cost'
    const save = () => writeResults(name, result())
    // every task-threads setting at the rates of --threads-rates (default all), task-threads 4 at the others
    const threadsRates = list('--threads-rates', rates.join(','))
    for (const rate of rates) for (const taskThreads of threadsRates.includes(rate) ? threads : [4]) {
      runs.push(await runCost({ rate, taskThreads, seconds, warmupSeconds, writerBatchSize: batch, writerWindowMs: windowMs }, cloudwatch, log))
      save()
    }
    // the lowering, side by side: a larger writer batch at the middle setting
    if (lowered > 0) {
      for (const rate of rates) {
        runs.push(await runCost({ rate, taskThreads: 4, seconds, warmupSeconds, writerBatchSize: lowered, writerWindowMs: windowMs }, cloudwatch, log))
        save()
      }
    }
    process.stderr.write(`results: ${save()}\n`)
    console.log(costMarkdown(result()))
    if (args.has('--write-docs') && !quick) writeDocs(result())
  }
}
