// Compactor function: SQS FIFO event source (batch ≤ 10, one message group per bucket).
// Coalesces the jobs of each bucket, compacts, commits a COMPACT snapshot, enqueues a
// follow-up when a job's input cap left work behind, and returns the first failure and
// every later message (FIFO partial-batch rule). Concurrency across buckets is the
// function's concurrency, mapped from `compaction.task-threads`.

import middy from '@middy/core'
import { MetricUnit } from '@aws-lambda-powertools/metrics'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda'
import { processCompactionJobs } from '../lib/jobs/process-jobs.ts'
import { logger, newMetrics, resolveTable, runtimeConfig } from './shared/runtime.ts'

const metrics = newMetrics('compactor')

export async function compactorHandler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  if (!event || !Array.isArray(event.Records)) throw new Error('compactor: expected an SQS event with a Records array')
  const started = Date.now()
  // one compactor serves one table (its own queue and concurrency), so every metric of the
  // invocation carries that table
  const table = runtimeConfig().table
  if (table) metrics.addDimension('table', table)
  const messages = event.Records.map((r) => ({ id: r.messageId, body: r.body, groupId: r.attributes?.MessageGroupId ?? r.messageId }))
  const res = await processCompactionJobs(messages, {
    resolve: resolveTable,
    onOutcome: (o) => {
      const r = o.result
      logger.info(r.snapshotId === null ? 'nothing to compact' : 'compacted', {
        table: o.job.table, partition: o.job.partition, bucket: o.job.bucket, snapshot: r.snapshotId,
        inputFiles: r.inputFiles, outputFiles: r.outputFiles, upgradedFiles: r.upgradedFiles, rowsIn: r.rowsIn, rowsOut: r.rowsOut,
        rowsDeletedByVector: r.rowsDeletedByVector, outputLevel: r.outputLevel, followUp: o.followUp, coalesced: o.messageIds.length, requestId: context?.awsRequestId,
      })
      metrics.addMetric('CompactionTime', MetricUnit.Milliseconds, o.endedAt - o.startedAt)
      metrics.addMetric('CompactionJobs', MetricUnit.Count, 1)
      metrics.addMetric('CoalescedJobs', MetricUnit.Count, o.messageIds.length)
      metrics.addMetric('RowsCompacted', MetricUnit.Count, r.rowsIn)
      metrics.addMetric('CommitRetries', MetricUnit.Count, r.retries + o.conflictRetries)
      metrics.addMetric('JobQueueAge', MetricUnit.Milliseconds, Math.max(0, o.startedAt - o.job.enqueuedAt))
      if (r.backPressure) metrics.addMetric('BackPressureBuckets', MetricUnit.Count, 1)
    },
  })
  // "compactor busy": milliseconds this invocation spent compacting
  metrics.addMetric('CompactorBusy', MetricUnit.Milliseconds, Date.now() - started)
  for (const e of res.errors) logger.error('compaction failed; returning it and every later message', { messageId: e.id, error: e.error, returned: res.failedIds.length })
  return { batchItemFailures: res.failedIds.map((itemIdentifier) => ({ itemIdentifier })) }
}

export const handler = middy(compactorHandler).use(logMetrics(metrics))
