// Counts to dollars: what a measured window of a deployment's work (bench/lib/cost-count.ts)
// costs per month at the same rate, line by line, with the prices of the price file. The
// window's counts are scaled to a month of 730 hours; fixed monthly items (metrics, alarms,
// the dashboard) and storage are added as they are.

import { type Component, type PriceFile, type RequestTally, SECONDS_PER_MONTH, priceOf } from './cost-count.ts'

export const FUNCTIONS = ['writer', 'compactor', 'committer', 'maintenance'] as const
export type FunctionName = (typeof FUNCTIONS)[number]

/** One function's invocations in the window. */
export interface FunctionUsage {
  invocations: number
  /** Σ wall time of each invocation rounded up to 1 ms, as Lambda bills it */
  billedMs: number
  /** Σ the estimate of each invocation's duration on Lambda (bench/cost.ts says how it is made), rounded up to 1 ms */
  estimatedMs: number
  memoryMb: number
}

export interface CostUsage {
  /** seconds of steady load the counts cover */
  seconds: number
  upserts: number
  functions: Record<FunctionName, FunctionUsage>
  requests: Record<Component, RequestTally>
  /**
   * the event-source mappings' idle long polls, modelled: the measured empty receives of a
   * mapping are replaced by `pollers` receives every `waitSeconds` over the whole window (the
   * local poller waits 1 s, Lambda's mapping 20 s)
   */
  idlePolling: { pollers: number; waitSeconds: number }
  /** bytes the table keeps after expiration */
  storedBytes: number
  /** CloudWatch: custom metrics (name × dimension set), alarms and dashboards of one table's deployment */
  cloudwatch: { metrics: number; alarms: number; dashboards: number }
  /** log bytes ingested in the window (EMF and Lambda's own lines) */
  logBytes: number
}

export interface LineItem {
  service: 'Lambda' | 'S3' | 'SQS' | 'CloudWatch' | 'Flink'
  item: string
  /** quantity per month, in `unit` */
  quantity: number
  unit: string
  usdPerMonth: number
}

export interface Bill {
  lines: LineItem[]
  usdPerMonth: number
  upsertsPerMonth: number
  usdPerMillionUpserts: number
  duration: 'measured' | 'estimated'
}

/** The components a deployment of Strata pays for: all but the upstream that produces the rows, which any alternative needs as well. */
export const BILLED_COMPONENTS: readonly Component[] = ['writer', 'compactor', 'committer', 'maintenance', 'esm-writer', 'esm-compactor', 'esm-committer']

const ESM_QUEUE: Partial<Record<Component, 'fifo' | 'standard'>> = { 'esm-writer': 'standard', 'esm-compactor': 'fifo', 'esm-committer': 'fifo' }

/** The window's usage priced per month; `duration` picks the measured or the estimated Lambda durations. */
export function bill(u: CostUsage, prices: PriceFile, duration: 'measured' | 'estimated' = 'measured'): Bill {
  const perMonth = SECONDS_PER_MONTH / u.seconds
  const lines: LineItem[] = []
  const add = (service: LineItem['service'], item: string, quantity: number, unit: string, price: string) => {
    if (quantity > 0) lines.push({ service, item, quantity, unit, usdPerMonth: quantity * priceOf(prices, price) })
  }
  for (const f of FUNCTIONS) {
    const fu = u.functions[f]
    add('Lambda', `${f} invocations`, fu.invocations * perMonth, 'invocations', 'lambda.request')
    const ms = duration === 'measured' ? fu.billedMs : fu.estimatedMs
    add('Lambda', `${f} duration`, ((fu.memoryMb / 1024) * ms) / 1000 * perMonth, 'GB-s', 'lambda.arm64.gbSecond')
  }
  for (const [c, t] of Object.entries(u.requests) as [Component, RequestTally][]) {
    // the upstream's sends are the producer's, in either design (BILLED_COMPONENTS)
    if (!BILLED_COMPONENTS.includes(c)) continue
    add('S3', `${c} PUT/COPY/POST/LIST`, t.s3Tier1 * perMonth, 'requests', 's3.standard.tier1')
    add('S3', `${c} GET/HEAD`, t.s3Tier2 * perMonth, 'requests', 's3.standard.tier2')
    const esm = ESM_QUEUE[c]
    const idle = esm ? (u.idlePolling.pollers * u.seconds) / u.idlePolling.waitSeconds - t.sqsEmptyReceives : 0
    const fifo = t.sqsFifoChunks + (esm === 'fifo' ? idle : 0)
    const standard = t.sqsStandardChunks + (esm === 'standard' ? idle : 0)
    add('SQS', `${c} (FIFO)`, fifo * perMonth, 'requests (64 KiB chunks)', 'sqs.fifo.request')
    add('SQS', `${c} (standard)`, standard * perMonth, 'requests (64 KiB chunks)', 'sqs.standard.request')
  }
  add('S3', 'storage after expiration', u.storedBytes / 1e9, 'GB-month', 's3.standard.gbMonth')
  add('CloudWatch', 'custom metrics', u.cloudwatch.metrics, 'metrics', 'cloudwatch.metric')
  add('CloudWatch', 'alarms', u.cloudwatch.alarms, 'alarms', 'cloudwatch.alarm')
  add('CloudWatch', 'dashboard', u.cloudwatch.dashboards, 'dashboards', 'cloudwatch.dashboard')
  add('CloudWatch', 'log ingestion (EMF, Lambda lines)', (u.logBytes / 1e9) * perMonth, 'GB', 'cloudwatch.logIngestionGb')
  lines.sort((a, b) => b.usdPerMonth - a.usdPerMonth)
  const usdPerMonth = lines.reduce((n, l) => n + l.usdPerMonth, 0)
  const upsertsPerMonth = u.upserts * perMonth
  return { lines, usdPerMonth, upsertsPerMonth, usdPerMillionUpserts: upsertsPerMonth > 0 ? usdPerMonth / (upsertsPerMonth / 1e6) : NaN, duration }
}

/** The bill's lines grouped by service (Lambda, S3, SQS, CloudWatch), dollars per month. */
export function byService(b: Bill): Record<LineItem['service'], number> {
  const out = { Lambda: 0, S3: 0, SQS: 0, CloudWatch: 0, Flink: 0 }
  for (const l of b.lines) out[l.service] += l.usdPerMonth
  return out
}

/** The always-on alternative, priced from the same file (bench/cost.ts states the assumptions). */
export interface FlinkAssumption {
  /** application KPUs (parallelism), plus the one orchestration KPU Managed Flink charges per application */
  kpus: number
  /** Paimon commits once per checkpoint */
  checkpointSeconds: number
  /** S3 PUT/COPY/POST/LIST and GET/HEAD per checkpoint (Paimon's commit and compaction, Flink's checkpoint) */
  tier1PerCheckpoint: number
  tier2PerCheckpoint: number
  storedBytes: number
}

export function flinkBill(a: FlinkAssumption, prices: PriceFile, upsertsPerMonth: number): Bill {
  const hours = SECONDS_PER_MONTH / 3600
  const checkpoints = SECONDS_PER_MONTH / a.checkpointSeconds
  const lines: LineItem[] = [
    { service: 'Flink', item: `Managed Flink: ${a.kpus} KPU + 1 orchestration KPU`, quantity: (a.kpus + 1) * hours, unit: 'KPU-hours', usdPerMonth: (a.kpus + 1) * hours * priceOf(prices, 'flink.kpuHour') },
    { service: 'Flink', item: 'Managed Flink: running application storage', quantity: 50 * a.kpus, unit: 'GB-month', usdPerMonth: 50 * a.kpus * priceOf(prices, 'flink.runningStorageGbMonth') },
    { service: 'S3', item: 'PUT/COPY/POST/LIST', quantity: a.tier1PerCheckpoint * checkpoints, unit: 'requests', usdPerMonth: a.tier1PerCheckpoint * checkpoints * priceOf(prices, 's3.standard.tier1') },
    { service: 'S3', item: 'GET/HEAD', quantity: a.tier2PerCheckpoint * checkpoints, unit: 'requests', usdPerMonth: a.tier2PerCheckpoint * checkpoints * priceOf(prices, 's3.standard.tier2') },
    { service: 'S3', item: 'storage', quantity: a.storedBytes / 1e9, unit: 'GB-month', usdPerMonth: (a.storedBytes / 1e9) * priceOf(prices, 's3.standard.gbMonth') },
  ]
  lines.sort((x, y) => y.usdPerMonth - x.usdPerMonth)
  const usdPerMonth = lines.reduce((n, l) => n + l.usdPerMonth, 0)
  return { lines, usdPerMonth, upsertsPerMonth, usdPerMillionUpserts: upsertsPerMonth > 0 ? usdPerMonth / (upsertsPerMonth / 1e6) : NaN, duration: 'measured' }
}
