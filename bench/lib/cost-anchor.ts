// A measured anchor for the cost model (bench/cost-sim.ts): the cost benchmark's setup
// (bench/cost.ts: the local runtime, the real handlers, the S3 transfer model, the deployed
// writer event source) with any bucket count, reduced to what the model's calibration reads:
// the window's request counts by caller and each function's invocations, Lambda-estimated
// durations and records. No maintenance pass, no bill: the model prices.

import { availableParallelism, loadavg } from 'node:os'
import { countsSince, type RequestCount } from '../../local/request-counts.ts'
import type { InvocationInfo } from '../../local/runtime/poller.ts'
import { DEFAULT_MEMORY_MB } from '../../cdk/config.ts'
import { lambdaEstimateMs, sendLoad, startCostRuntime, tableBytes, warmUp } from '../cost.ts'
import { type FunctionName, FUNCTIONS } from './cost-bill.ts'
import type { CostParams } from './cost-report.ts'
import { costTimingOf } from './cost-timed.ts'

export interface AnchorParams extends CostParams {
  buckets: number
}

/** One function's invocations that started in the window. */
export interface AnchorFunction {
  invocations: number
  /** Σ Lambda-estimated ms (bench/cost.ts lambdaEstimateMs) */
  estimatedMs: number
  records: number
  /** Σ wall ms, Σ CPU ms and Σ run-queue ms of the handler's thread (bench/lib/cost-timed.ts) */
  wallMs?: number
  cpuMs?: number
  runQueueMs?: number
}

/** What the model's calibration reads from a measured window (a bench/cost.ts run gives the same). */
export interface MeasuredWindow {
  buckets: number
  taskThreads: number
  seconds: number
  rowsWritten: number
  functions: Record<FunctionName, AnchorFunction>
  counts: RequestCount[]
  /** the table's bytes when the window closed */
  tableBytes: number
}

export interface AnchorRun extends MeasuredWindow {
  params: AnchorParams
  rowsSent: number
  ingestBacklog: number
  /** the machine's 1-minute load average when the window opened and closed, and its cores */
  loadAvg?: { start: number; end: number; cores: number }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export async function runAnchor(p: AnchorParams, log: (s: string) => void): Promise<AnchorRun> {
  const invs: { fn: FunctionName; startedAt: number; estimatedMs: number; records: number; wallMs: number; cpuMs: number; runQueueMs: number }[] = []
  const record = (fn: FunctionName) => (info: InvocationInfo) => {
    const timing = info.result.ok ? costTimingOf(info.result.value) : null
    const estimatedMs = Math.ceil(lambdaEstimateMs(info.result.durationMs, timing, DEFAULT_MEMORY_MB[fn]))
    invs.push({ fn, startedAt: info.startedAt, estimatedMs, records: info.records.length, wallMs: info.result.durationMs, cpuMs: timing?.cpuMs ?? 0, runQueueMs: timing?.runQueueMs ?? 0 })
  }
  const rt = await startCostRuntime(p, p.buckets, (fn, info) => record(fn)(info))
  try {
    const stop = { done: false }
    const sent = { rows: 0 }
    const sender = sendLoad(rt, p.rate, Date.now(), stop, sent)
    await warmUp((fn) => invs.some((i) => i.fn === fn), p.warmupSeconds)
    const before = rt.backend.requestCounts!()
    const sentBefore = sent.rows
    const from = Date.now()
    const loadStart = loadavg()[0]
    await sleep(p.seconds * 1000)
    const counts = countsSince(before, rt.backend.requestCounts!())
    const until = Date.now()
    const loadEnd = loadavg()[0]
    stop.done = true
    await sender
    const ingestBacklog = await rt.queueDepth(rt.ingestQueueUrl)
    const bytes = await tableBytes(rt)
    log(`anchor: ${p.buckets} buckets, ${p.rate} rows/s, task-threads ${p.taskThreads}: window closed, waiting for the invocations in flight`)
    await rt.stop()
    const window = invs.filter((i) => i.startedAt >= from && i.startedAt < until)
    const functions = Object.fromEntries(FUNCTIONS.map((fn) => {
      const mine = window.filter((i) => i.fn === fn)
      const sum = (f: (i: (typeof mine)[number]) => number) => mine.reduce((n, i) => n + f(i), 0)
      return [fn, { invocations: mine.length, estimatedMs: sum((i) => i.estimatedMs), records: sum((i) => i.records), wallMs: sum((i) => i.wallMs), cpuMs: sum((i) => i.cpuMs), runQueueMs: sum((i) => i.runQueueMs) }]
    })) as Record<FunctionName, AnchorFunction>
    return { params: p, buckets: p.buckets, taskThreads: p.taskThreads, seconds: (until - from) / 1000, rowsSent: sent.rows - sentBefore, rowsWritten: functions.writer.records, ingestBacklog, loadAvg: { start: loadStart, end: loadEnd, cores: availableParallelism() }, functions, counts, tableBytes: bytes }
  } catch (e) {
    await rt.stop()
    throw e
  }
}
