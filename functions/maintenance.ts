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
// The steps (lib/maintenance/maintenance-pass.ts) are independent: one failing does not skip
// the others, and the invocation then fails so the schedule's error metric and retries see it.

import middy from '@middy/core'
import { GetQueueAttributesCommand } from '@aws-sdk/client-sqs'
import { MetricUnit } from '@aws-lambda-powertools/metrics'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Context, ScheduledEvent } from 'aws-lambda'
import { INGEST_MARKER_DIR } from '../lib/ingest/attempts.ts'
import { stalledBucketJobs } from '../lib/jobs/coalesce.ts'
import { type MaintenanceSummary, type MaintenanceTask, checkMaintenanceInputs, runMaintenancePass } from '../lib/maintenance/maintenance-pass.ts'
import { DEFAULT_ORPHAN_OLDER_THAN_MS, MIN_ORPHAN_OLDER_THAN_MS, REMOVE_ORPHANS_TASK, checkOrphanAge } from '../lib/maintenance/orphans.ts'
import type { TableMetrics } from '../lib/maintenance/table-metrics.ts'
import { StrataInputError } from '../lib/errors.ts'
import { ConfigError } from './shared/config.ts'
import { logger, newMetrics, resolveTable, runtimeConfig, sqsClient } from './shared/runtime.ts'


const metrics = newMetrics('maintenance')

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

/** Messages on the queue, visible or received and not yet deleted. */
export async function queuedJobs(queueUrl: string): Promise<number> {
  const res = await sqsClient().send(
    new GetQueueAttributesCommand({ QueueUrl: queueUrl, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }),
  )
  const n = (k: string) => Number(res.Attributes?.[k as keyof typeof res.Attributes] ?? 0)
  return n('ApproximateNumberOfMessages') + n('ApproximateNumberOfMessagesNotVisible')
}

const UNITS: Record<keyof TableMetrics, (typeof MetricUnit)[keyof typeof MetricUnit]> = {
  L0FileCountMax: MetricUnit.Count,
  L0FileCountAvg: MetricUnit.Count,
  FreshnessLag: MetricUnit.Milliseconds,
  PostponedRows: MetricUnit.Count,
  SortedRunsMax: MetricUnit.Count,
  BackPressureBuckets: MetricUnit.Count,
  DeletionVectorRows: MetricUnit.Count,
  Snapshots: MetricUnit.Count,
}

/** One maintenance pass over the configured table (lib/maintenance/maintenance-pass.ts; no metrics published: the handler does). */
export async function runMaintenance(opts: MaintenanceOptions = {}): Promise<MaintenanceSummary> {
  const cfg = runtimeConfig()
  const name = cfg.table
  if (name === undefined) {
    throw new ConfigError(`environment variable STRATA_TABLE is not set and STRATA_TABLES has ${cfg.tables.size} tables; name the table this maintenance function serves`)
  }
  const inputs = checkMaintenanceInputs({ ...opts, markerMaxAgeMs: opts.markerMaxAgeMs ?? cfg.dedupWindowMs }, orphanAgeFromEnv)
  const resolved = await resolveTable(name)
  if (!resolved) throw new ConfigError(`maintenance: table '${name}' is not in STRATA_TABLES`)
  const { table, jobs } = resolved
  const queueUrl = cfg.tables.get(name)!.compactionQueueUrl
  return runMaintenancePass({
    name,
    table,
    ...inputs,
    markerDir: INGEST_MARKER_DIR,
    sweep:
      queueUrl && jobs
        ? async () => {
            const stalled = await stalledBucketJobs(name, table, inputs.now, cfg.stalledBucketMs)
            if (stalled.length) await jobs.enqueue(stalled)
            return stalled.length
          }
        : undefined,
    queuedJobs: queueUrl ? () => queuedJobs(queueUrl) : undefined,
    onStepError: (what, err) => logger.error(`maintenance step failed: ${what}`, { table: name, error: err as Error }),
  })
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

function publish(summary: MaintenanceSummary): void {
  metrics.addDimension('table', summary.table)
  if (summary.metrics) for (const [k, v] of Object.entries(summary.metrics) as [keyof TableMetrics, number][]) metrics.addMetric(k, UNITS[k], v)
  if (summary.queuedJobs !== null) metrics.addMetric('QueuedJobs', MetricUnit.Count, summary.queuedJobs)
  if (summary.sweptJobs !== null) metrics.addMetric('SweptJobs', MetricUnit.Count, summary.sweptJobs)
  if (summary.expired) metrics.addMetric('SnapshotsExpired', MetricUnit.Count, summary.expired.expired.length)
  if (summary.orphansDeleted !== null) metrics.addMetric('OrphanFilesDeleted', MetricUnit.Count, summary.orphansDeleted)
  if (summary.markersDeleted !== null) metrics.addMetric('MarkersDeleted', MetricUnit.Count, summary.markersDeleted)
  for (const [what, ms] of Object.entries(summary.timings)) metrics.addMetric(`${what}Time`, MetricUnit.Milliseconds, ms)
  metrics.addMetric('MaintenanceErrors', MetricUnit.Count, Object.keys(summary.errors).length)
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
  publish(summary)
  logger.info('maintenance', { ...summary, scheduledAt: event && 'time' in event ? event.time : undefined, requestId: context?.awsRequestId })
  const failed = Object.keys(summary.errors)
  if (failed.length) throw new Error(`maintenance of table '${summary.table}': ${failed.join(', ')} failed (${Object.values(summary.errors).join('; ')})`)
  return summary
}

export const handler = middy(maintenanceHandler).use(logMetrics(metrics))
