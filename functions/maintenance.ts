// Maintenance function, for the one table it serves (STRATA_TABLE), on two EventBridge
// schedules:
// - every few minutes (a Scheduled Event): expire snapshots by the table's `snapshot.*`
//   options, delete the writer's idempotency markers once they are past the dedup window,
//   and publish the table's LSM shape and backlog as CloudWatch metrics (EMF);
// - every few hours (the constant input `{"task": "remove-orphans"}`): remove orphan files.
//   Orphan cleanup reads the references of every retained snapshot, so its cost grows with
//   them, while it deletes only files older than 13 h at least; running it with every
//   expiration spent most of maintenance's time re-reading the same snapshots. The two may
//   overlap: cleanup skips a snapshot that expiration deletes under it (orphans.ts).
//
// The steps are independent: one failing does not skip the others (metrics matter most when
// something is wrong), and the invocation then fails so the schedule's error metric and
// retries see it.

import middy from '@middy/core'
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs'
import { MetricUnit } from '@aws-lambda-powertools/metrics'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Context, ScheduledEvent } from 'aws-lambda'
import { tableStatus } from '../lib/cli/status.ts'
import { INGEST_MARKER_DIR } from '../lib/ingest/ingest.ts'
import { stalledBucketJobs } from '../lib/jobs/coalesce.ts'
import { type ExpireResult, expireSnapshots, forEachLimited } from '../lib/maintenance/expire.ts'
import { DEFAULT_ORPHAN_OLDER_THAN_MS, MIN_ORPHAN_OLDER_THAN_MS, REMOVE_ORPHANS_TASK, checkOrphanAge, removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { snapshotRange } from '../lib/maintenance/references.ts'
import type { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/types.ts'
import { ConfigError } from './shared/config.ts'
import { logger, newMetrics, resolveTable, runtimeConfig, sqsClient } from './shared/runtime.ts'

const metrics = newMetrics('maintenance')

/** Marker deletes in flight at once, as expiration's deletes (S3 latency bound). */
const DELETE_CONCURRENCY = 16

export interface TableMetrics {
  L0FileCountMax: number
  L0FileCountAvg: number
  /** ms, max over buckets; 0 when no bucket has L0 files readers cannot see yet */
  FreshnessLag: number
  SortedRunsMax: number
  BackPressureBuckets: number
  DeletionVectorRows: number
  /** snapshots retained after expiration */
  Snapshots: number
}

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

export interface MaintenanceOptions {
  /** default 'maintain': Expire, Markers, Metrics, Sweep, Queue; 'remove-orphans': Orphans */
  task?: MaintenanceTask
  /** epoch millis every age is measured from; default Date.now() */
  now?: number
  /** default STRATA_ORPHAN_OLDER_THAN_MS, else Paimon's one day; at least MIN_ORPHAN_OLDER_THAN_MS (13 h) */
  orphanOlderThanMs?: number
  /** default runtimeConfig().dedupWindowMs */
  markerMaxAgeMs?: number
}

function orphanAgeFromEnv(): number {
  const v = process.env.STRATA_ORPHAN_OLDER_THAN_MS
  if (v === undefined || v === '') return DEFAULT_ORPHAN_OLDER_THAN_MS
  const what = `environment variable STRATA_ORPHAN_OLDER_THAN_MS = ${JSON.stringify(v)}`
  if (!/^\d+$/.test(v)) throw new ConfigError(`${what}: expected an integer number of milliseconds >= ${MIN_ORPHAN_OLDER_THAN_MS}`)
  try {
    return checkOrphanAge(Number(v), what)
  } catch (err) {
    throw new ConfigError((err as Error).message)
  }
}

/**
 * Deletes ingest idempotency markers (lib/ingest/ingest.ts) last written before
 * `now - maxAgeMs`. A batch redelivered after that is no longer recognised, which is why
 * the age is the writer's own dedup window.
 */
export async function removeOldMarkers(table: Table, now: number, maxAgeMs: number): Promise<number> {
  const cutoff = now - maxAgeMs
  const old = (await table.store.list(INGEST_MARKER_DIR)).filter((o) => o.lastModified < cutoff)
  await forEachLimited(old, DELETE_CONCURRENCY, (o) => table.store.delete(o.key))
  return old.length
}

/** Messages on the queue, visible or received and not yet deleted. */
export async function queuedJobs(queueUrl: string): Promise<number> {
  const res = await sqsClient().send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
  )
  const n = (k: string) => Number(res.Attributes?.[k as keyof typeof res.Attributes] ?? 0)
  return n('ApproximateNumberOfMessages') + n('ApproximateNumberOfMessagesNotVisible')
}

export async function tableMetrics(table: Table, now: number): Promise<TableMetrics> {
  const status = await tableStatus(table, now)
  const b = status.buckets
  const { earliest, latest } = await snapshotRange(table)
  return {
    L0FileCountMax: status.maxL0Files,
    L0FileCountAvg: b.length ? b.reduce((n, x) => n + x.l0Files, 0) / b.length : 0,
    FreshnessLag: status.maxFreshnessLagMs ?? 0,
    SortedRunsMax: Math.max(0, ...b.map((x) => x.sortedRuns)),
    BackPressureBuckets: b.filter((x) => x.backPressure).length,
    DeletionVectorRows: b.reduce((n, x) => n + x.dvCardinality, 0),
    Snapshots: latest === 0 ? 0 : latest - earliest + 1,
  }
}

const UNITS: Record<keyof TableMetrics, (typeof MetricUnit)[keyof typeof MetricUnit]> = {
  L0FileCountMax: MetricUnit.Count,
  L0FileCountAvg: MetricUnit.Count,
  FreshnessLag: MetricUnit.Milliseconds,
  SortedRunsMax: MetricUnit.Count,
  BackPressureBuckets: MetricUnit.Count,
  DeletionVectorRows: MetricUnit.Count,
  Snapshots: MetricUnit.Count,
}

/** One maintenance pass over the configured table (no metrics published: the handler does). */
export async function runMaintenance(opts: MaintenanceOptions = {}): Promise<MaintenanceSummary> {
  const cfg = runtimeConfig()
  const name = cfg.table
  if (name === undefined) {
    throw new ConfigError(`environment variable STRATA_TABLE is not set and STRATA_TABLES has ${cfg.tables.size} tables; name the table this maintenance function serves`)
  }
  // every input is checked before the first step deletes anything
  if (opts.task !== undefined && opts.task !== 'maintain' && opts.task !== REMOVE_ORPHANS_TASK) {
    throw new StrataInputError(`maintenance: task = ${JSON.stringify(opts.task)}, expected "maintain" or "${REMOVE_ORPHANS_TASK}"`)
  }
  const orphanOlderThanMs = opts.orphanOlderThanMs === undefined ? orphanAgeFromEnv() : checkOrphanAge(opts.orphanOlderThanMs, `maintenance: orphanOlderThanMs = ${opts.orphanOlderThanMs}`)
  const markerMaxAgeMs = opts.markerMaxAgeMs ?? cfg.dedupWindowMs
  if (!Number.isFinite(markerMaxAgeMs) || markerMaxAgeMs < 0) throw new StrataInputError(`maintenance: markerMaxAgeMs = ${markerMaxAgeMs}, expected a non-negative number of milliseconds`)
  const now = opts.now ?? Date.now()
  if (!Number.isFinite(now)) throw new StrataInputError(`maintenance: now = ${now}, expected epoch milliseconds`)
  const resolved = await resolveTable(name)
  if (!resolved) throw new ConfigError(`maintenance: table '${name}' is not in STRATA_TABLES`)
  const { table } = resolved
  const summary: MaintenanceSummary = { table: name, expired: null, orphansDeleted: null, markersDeleted: null, metrics: null, queuedJobs: null, sweptJobs: null, errors: {}, timings: {} }
  const step = async (what: string, fn: () => Promise<void>) => {
    const started = Date.now()
    try {
      await fn()
    } catch (err) {
      summary.errors[what] = (err as Error).message
      logger.error(`maintenance step failed: ${what}`, { table: name, error: err as Error })
    }
    summary.timings[what] = Date.now() - started
  }

  if (opts.task === REMOVE_ORPHANS_TASK) {
    await step('Orphans', async () => {
      const r = await removeOrphanFiles(table, { now, olderThanMs: orphanOlderThanMs })
      summary.orphansDeleted = r.deleted.length
    })
    return summary
  }

  // a crash between expiration's snapshot and file deletes leaves orphans, which the
  // orphan task collects
  await step('Expire', async () => {
    summary.expired = await expireSnapshots(table, { now })
  })
  await step('Markers', async () => {
    summary.markersDeleted = await removeOldMarkers(table, now, markerMaxAgeMs)
  })
  await step('Metrics', async () => {
    summary.metrics = await tableMetrics(table, now)
  })
  const queueUrl = cfg.tables.get(name)!.compactionQueueUrl
  if (queueUrl && resolved.jobs) {
    const jobs = resolved.jobs
    await step('Sweep', async () => {
      const stalled = await stalledBucketJobs(name, table, now, cfg.stalledBucketMs)
      if (stalled.length) await jobs.enqueue(stalled)
      summary.sweptJobs = stalled.length
    })
  }
  if (queueUrl) {
    await step('Queue', async () => {
      summary.queuedJobs = await queuedJobs(queueUrl)
    })
  }
  return summary
}

/** The orphan schedule's constant input (cdk/constructs/table-resources.ts). */
export interface OrphanTaskEvent {
  task: typeof REMOVE_ORPHANS_TASK
}

/** A Scheduled Event (or no event) is the frequent task; an object with `task` names its task. */
export function taskOf(event: unknown): MaintenanceTask {
  if (event === undefined || event === null || typeof event !== 'object' || !('task' in event)) return 'maintain'
  const task = (event as { task: unknown }).task
  if (task !== REMOVE_ORPHANS_TASK) throw new StrataInputError(`maintenance event: task = ${JSON.stringify(task)}, expected "${REMOVE_ORPHANS_TASK}" (or a Scheduled Event without task)`)
  return task
}

export async function maintenanceHandler(event: ScheduledEvent | OrphanTaskEvent | undefined, context?: Context): Promise<MaintenanceSummary> {
  let summary: MaintenanceSummary
  try {
    summary = await runMaintenance({ task: taskOf(event) })
  } catch (err) {
    // a configuration or open failure: nothing ran, which an alarm on this metric catches
    metrics.addMetric('MaintenanceErrors', MetricUnit.Count, 1)
    logger.error('maintenance could not start', { error: err as Error, requestId: context?.awsRequestId })
    throw err
  }
  const failed = Object.keys(summary.errors)
  metrics.addDimension('table', summary.table)
  if (summary.metrics) for (const [k, v] of Object.entries(summary.metrics) as [keyof TableMetrics, number][]) metrics.addMetric(k, UNITS[k], v)
  if (summary.queuedJobs !== null) metrics.addMetric('QueuedJobs', MetricUnit.Count, summary.queuedJobs)
  if (summary.sweptJobs !== null) metrics.addMetric('SweptJobs', MetricUnit.Count, summary.sweptJobs)
  if (summary.expired) metrics.addMetric('SnapshotsExpired', MetricUnit.Count, summary.expired.expired.length)
  if (summary.orphansDeleted !== null) metrics.addMetric('OrphanFilesDeleted', MetricUnit.Count, summary.orphansDeleted)
  if (summary.markersDeleted !== null) metrics.addMetric('MarkersDeleted', MetricUnit.Count, summary.markersDeleted)
  for (const [what, ms] of Object.entries(summary.timings)) metrics.addMetric(`${what}Time`, MetricUnit.Milliseconds, ms)
  metrics.addMetric('MaintenanceErrors', MetricUnit.Count, failed.length)
  logger.info('maintenance', { ...summary, scheduledAt: event && 'time' in event ? event.time : undefined, requestId: context?.awsRequestId })
  if (failed.length) throw new Error(`maintenance of table '${summary.table}': ${failed.join(', ')} failed (${Object.values(summary.errors).join('; ')})`)
  return summary
}

export const handler = middy(maintenanceHandler).use(logMetrics(metrics))
