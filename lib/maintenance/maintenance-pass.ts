// One maintenance pass over a table, as the maintenance function runs it on its two
// schedules: the frequent task (expire snapshots, delete old idempotency markers, compute
// the table's metrics, send jobs for stalled buckets, count the queued jobs) or orphan
// cleanup alone. The steps are independent: one failing does not skip the others (metrics
// matter most when something is wrong); the summary names the steps that failed and how
// long each took. What needs the runtime (the job queue) comes in as functions.

import type { Table } from '../handle/table.ts'
import { StrataInputError } from '../errors.ts'
import { type ExpireResult, expireSnapshots } from './expire.ts'
import { removeOldMarkers } from './markers.ts'
import { REMOVE_ORPHANS_TASK, checkOrphanAge, removeOrphanFiles } from './orphans.ts'
import { type TableMetrics, tableMetrics } from './table-metrics.ts'

export interface MaintenanceSummary {
  table: string
  expired: ExpireResult | null
  orphansDeleted: number | null
  markersDeleted: number | null
  metrics: TableMetrics | null
  /** compaction jobs waiting or in flight; null without a compaction queue */
  queuedJobs: number | null
  /** jobs sent for buckets whose level-0 files waited past STRATA_STALLED_BUCKET_MS (stalledBucketJobs); null without a compaction queue */
  sweptJobs: number | null
  /** step → error message, for the steps that failed */
  errors: Record<string, string>
  /** step → milliseconds it took */
  timings: Record<string, number>
}

/** What one invocation does: the frequent steps, or orphan cleanup alone. */
export type MaintenanceTask = 'maintain' | typeof REMOVE_ORPHANS_TASK

export interface MaintenanceInputs {
  task?: MaintenanceTask
  now?: number
  /** given by the caller; checked against orphan cleanup's floor */
  orphanOlderThanMs?: number
  markerMaxAgeMs: number
}

/**
 * Checks a pass's inputs before any step deletes anything: the task, the orphan age
 * (`orphanAge` supplies it when the caller gave none), the marker age and the clock.
 */
export function checkMaintenanceInputs(o: MaintenanceInputs, orphanAge: () => number): { task: MaintenanceTask; orphanOlderThanMs: number; markerMaxAgeMs: number; now: number } {
  if (o.task !== undefined && o.task !== 'maintain' && o.task !== REMOVE_ORPHANS_TASK) {
    throw new StrataInputError(`maintenance: task = ${JSON.stringify(o.task)}, expected "maintain" or "${REMOVE_ORPHANS_TASK}"`)
  }
  const orphanOlderThanMs = o.orphanOlderThanMs === undefined ? orphanAge() : checkOrphanAge(o.orphanOlderThanMs, `maintenance: orphanOlderThanMs = ${o.orphanOlderThanMs}`)
  const markerMaxAgeMs = o.markerMaxAgeMs
  if (!Number.isFinite(markerMaxAgeMs) || markerMaxAgeMs < 0) throw new StrataInputError(`maintenance: markerMaxAgeMs = ${markerMaxAgeMs}, expected a non-negative number of milliseconds`)
  const now = o.now ?? Date.now()
  if (!Number.isFinite(now)) throw new StrataInputError(`maintenance: now = ${now}, expected epoch milliseconds`)
  return { task: o.task ?? 'maintain', orphanOlderThanMs, markerMaxAgeMs, now }
}

export interface MaintenancePass {
  /** the table's configured name, for the summary */
  name: string
  table: Table
  task: MaintenanceTask
  /** epoch millis every age is measured from */
  now: number
  orphanOlderThanMs: number
  markerMaxAgeMs: number
  /** where the writer keeps its idempotency markers */
  markerDir: string
  /** sends jobs for the stalled buckets and says how many; absent without a compaction queue */
  sweep?: () => Promise<number>
  /** compaction jobs waiting or in flight; absent without a compaction queue */
  queuedJobs?: () => Promise<number>
  /** told of each step that fails */
  onStepError?: (step: string, err: unknown) => void
}

export async function runMaintenancePass(p: MaintenancePass): Promise<MaintenanceSummary> {
  const { table, now } = p
  const summary: MaintenanceSummary = { table: p.name, expired: null, orphansDeleted: null, markersDeleted: null, metrics: null, queuedJobs: null, sweptJobs: null, errors: {}, timings: {} }
  const step = async (what: string, fn: () => Promise<void>) => {
    const started = Date.now()
    try {
      await fn()
    } catch (err) {
      summary.errors[what] = (err as Error).message
      p.onStepError?.(what, err)
    }
    summary.timings[what] = Date.now() - started
  }
  if (p.task === REMOVE_ORPHANS_TASK) {
    await step('Orphans', async () => {
      summary.orphansDeleted = (await removeOrphanFiles(table, { now, olderThanMs: p.orphanOlderThanMs })).deleted.length
    })
    return summary
  }
  // a crash between expiration's snapshot and file deletes leaves orphans, which the
  // orphan task collects
  await step('Expire', async () => {
    summary.expired = await expireSnapshots(table, { now })
  })
  await step('Markers', async () => {
    summary.markersDeleted = await removeOldMarkers(table.store, p.markerDir, now, p.markerMaxAgeMs)
  })
  await step('Metrics', async () => {
    summary.metrics = await tableMetrics(table, now)
  })
  const { sweep, queuedJobs } = p
  if (sweep) {
    await step('Sweep', async () => {
      summary.sweptJobs = await sweep()
    })
  }
  if (queuedJobs) {
    await step('Queue', async () => {
      summary.queuedJobs = await queuedJobs()
    })
  }
  return summary
}
