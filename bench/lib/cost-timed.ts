// A handler wrapped to report its own thread's CPU time and run-queue wait
// (/proc/thread-self/schedstat: ns on a CPU, ns runnable but waiting for one), so the cost
// benchmark can estimate what an invocation would last with a CPU of its own, as on Lambda,
// from what it lasted on this shared machine. The handler's result is returned as it is, with
// `costTiming` added (a result of null or undefined becomes an empty partial-batch response,
// which the event source reads the same way: every record succeeded).
import { readFileSync } from 'node:fs'

export interface CostTiming {
  cpuMs: number
  runQueueMs: number
}

function schedstat(): [number, number] | null {
  try {
    const [cpu, wait] = readFileSync('/proc/thread-self/schedstat', 'utf8').trim().split(/\s+/).map(Number)
    return [cpu / 1e6, wait / 1e6]
  } catch {
    return null
  }
}

type Handler = (event: unknown, context: unknown) => Promise<unknown>

export function timed(handler: Handler): Handler {
  return async (event, context) => {
    const before = schedstat()
    const value = await handler(event, context)
    const after = schedstat()
    if (!before || !after) return value
    const costTiming: CostTiming = { cpuMs: after[0] - before[0], runQueueMs: after[1] - before[1] }
    if (value === null || value === undefined) return { batchItemFailures: [], costTiming }
    return typeof value === 'object' && !Array.isArray(value) ? { ...value, costTiming } : value
  }
}

/** The timing a wrapped handler's result carries, if any. */
export function costTimingOf(value: unknown): CostTiming | null {
  const t = (value as { costTiming?: CostTiming } | null)?.costTiming
  return t && Number.isFinite(t.cpuMs) ? t : null
}
