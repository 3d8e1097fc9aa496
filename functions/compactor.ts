// Compactor function: SQS FIFO event source (batch ≤ 10, one message group per bucket, or
// per table at task-threads 1). Adapts the event to lib/jobs/process-jobs.ts: coalesces the
// jobs of each bucket, compacts, commits a COMPACT snapshot, enqueues a follow-up where the
// bucket has level-0 files the job did not take; a failed bucket's messages go back alone
// with a short, growing visibility backoff, and buckets not started when the remaining time
// runs short go back at once. Concurrency across buckets is the function's concurrency,
// mapped from `compaction.task-threads`.

import middy from '@middy/core'
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda'
import { type JobOutcome, processCompactionJobs } from '../lib/jobs/process-jobs.ts'
import { type FunctionRuntime, functionRuntime, logger } from './shared/runtime.ts'

/**
 * The compactor function on a runtime: the bare handler (tests call it) and the deployed one,
 * which flushes its metrics. The runtime's seams reach the tables it resolves (their stores
 * and committers) and its metrics.
 */
export function compactorFunction(runtime: FunctionRuntime) {
  const metrics = runtime.metrics('compactor')
  const compactorHandler = (event: SQSEvent, context?: Context) => compactInvocation(runtime, metrics, event, context)
  return { compactorHandler, handler: middy(compactorHandler).use(logMetrics(metrics)) }
}

async function compactInvocation(runtime: FunctionRuntime, metrics: Metrics, event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  if (!event || !Array.isArray(event.Records)) throw new Error('compactor: expected an SQS event with a Records array')
  const started = Date.now()
  // one compactor serves one table (its own queue and concurrency), so every metric of the
  // invocation carries that table
  const table = runtime.config().table
  if (table) metrics.addDimension('table', table)
  const messages = event.Records.map((r) => ({
    id: r.messageId,
    body: r.body,
    groupId: r.attributes?.MessageGroupId ?? r.messageId,
    receiptHandle: r.receiptHandle,
    receiveCount: Number(r.attributes?.ApproximateReceiveCount ?? 1),
  }))
  // this compactor's own table: its queue and its task-threads
  const own = table ? await runtime.resolveTable(table) : null
  const res = await processCompactionJobs(messages, {
    resolve: (name) => runtime.resolveTable(name),
    taskThreads: own?.taskThreads,
    remainingMs: context ? () => context.getRemainingTimeInMillis() : undefined,
    giveBack: own?.jobs?.giveBack ? (m) => own.jobs!.giveBack!(m) : undefined,
    discard: own?.jobs?.discard ? (h) => own.jobs!.discard!(h) : undefined,
    onOutcome: (o) => {
      const r = o.result
      logger.info(o.overtaken ? 'redelivered job overtaken by a landed compaction: follow-up check only' : r.snapshotId === null ? 'nothing to compact' : 'compacted', {
        table: o.job.table, partition: o.job.partition, bucket: o.job.bucket, snapshot: r.snapshotId,
        inputFiles: r.inputFiles, outputFiles: r.outputFiles, upgradedFiles: r.upgradedFiles, rowsIn: r.rowsIn, rowsOut: r.rowsOut,
        rowsDeletedByVector: r.rowsDeletedByVector, outputLevel: r.outputLevel, followUp: o.followUp, coalesced: o.messageIds.length, requestId: context?.awsRequestId,
        // a job is traced by its deduplication key (lib/jobs/coalesce.ts) and messages
        baseSnapshot: r.baseSnapshotId, needsMore: r.needsMore, dedupKey: o.job.dedupKey, messageIds: o.messageIds, conflictRetries: o.conflictRetries,
      })
      metrics.addMetric('CompactionTime', MetricUnit.Milliseconds, o.endedAt - o.startedAt)
      metrics.addMetric('CompactionJobs', MetricUnit.Count, 1)
      metrics.addMetric('CoalescedJobs', MetricUnit.Count, o.messageIds.length)
      metrics.addMetric('RowsCompacted', MetricUnit.Count, r.rowsIn)
      metrics.addMetric('CommitRetries', MetricUnit.Count, r.retries + o.conflictRetries)
      metrics.addMetric('JobQueueAge', MetricUnit.Milliseconds, Math.max(0, o.startedAt - o.job.enqueuedAt))
      publishStages(metrics, o)
      if (r.backPressure) metrics.addMetric('BackPressureBuckets', MetricUnit.Count, 1)
      if (o.overtaken) metrics.addMetric('JobsOvertaken', MetricUnit.Count, 1)
    },
  })
  // "compactor busy": milliseconds this invocation spent compacting
  metrics.addMetric('CompactorBusy', MetricUnit.Milliseconds, Date.now() - started)
  for (const e of res.errors) logger.error('compaction failed; its bucket\'s messages go back with a backoff, the other buckets go on', { messageId: e.id, error: e.error })
  if (res.notStarted.length) logger.warn('remaining time ran short; buckets not started go back at once', { messages: res.notStarted.length, requestId: context?.awsRequestId })
  metrics.addMetric('MessagesBackedOff', MetricUnit.Count, res.backoff.length)
  metrics.addMetric('MessagesNotStarted', MetricUnit.Count, res.notStarted.length)
  return { batchItemFailures: res.failedIds.map((itemIdentifier) => ({ itemIdentifier })) }
}

/** A compaction's stages of the freshness budget (docs/design.md "Freshness budget"), for a job that committed. */
function publishStages(metrics: Metrics, o: JobOutcome): void {
  const t = o.result.timings
  if (!t) return
  if (o.slotWaitMs !== undefined) metrics.addMetric('CompactionSlotWait', MetricUnit.Milliseconds, o.slotWaitMs)
  metrics.addMetric('CompactionReadTime', MetricUnit.Milliseconds, t.readMs)
  metrics.addMetric('CompactionMergeTime', MetricUnit.Milliseconds, t.mergeMs)
  metrics.addMetric('CompactionWriteTime', MetricUnit.Milliseconds, t.writeMs)
  metrics.addMetric('CompactionCommitTime', MetricUnit.Milliseconds, t.commitMs)
  if (t.oldestLevel0CreatedAt !== null) metrics.addMetric('CompactedL0Age', MetricUnit.Milliseconds, Math.max(0, t.landedAt - t.oldestLevel0CreatedAt))
}

/** The deployed compactor, on the execution environment's runtime (no seams). */
const deployed = compactorFunction(functionRuntime)
export const compactorHandler = deployed.compactorHandler
export const handler = deployed.handler
