// Committer function: SQS FIFO event source on the table's commit queue (each message its
// own group; the mapping's maxConcurrency 2 keeps the table's committers few, and the
// committer lease keeps one folding: an invocation that finds the other holding it forwards
// its batch, STRATA_COMMITTER_LEASE). Adapts the event to lib/commit/commit-service.ts,
// which drains the queue beyond the invoked batch, folds every message into as few
// snapshots as it can (their senders follow the snapshots; a conflict gets a receipt),
// deletes what it settled, and folds further rounds, each received while the last one
// folds, while the queue has more (STRATA_COMMIT_ROUNDS_MS); the partial batch response
// names the invoked messages that were not settled or forwarded (a store failure, an
// unreadable body), which the queue redelivers and, past maxReceiveCount, moves to the DLQ.
// With STRATA_FEED_QUEUE_URL, each round that created snapshots publishes a commit-feed event
// (lib/commit/commit-feed.ts); a failed publish is logged and counted (FeedFailures), never
// failing the invocation. A lease taken over before its expiry (beyond the bound of this
// clock, or a message forwarded too often: docs/design.md "The committer lease and clocks")
// is logged and counted (CommitterLeaseOverridden), which the stack alarms on.
// With STRATA_GLUE_DATABASE, the table's Iceberg metadata is announced to its Glue pointer
// (lib/iceberg/glue-pointer.ts, kept while warm), flushed before the invocation returns; a
// failed Glue update is logged and counted (GlueUpdateFailures), never failing the invocation.
// A table with Iceberg metadata counts the versions its invocation wrote and failed to write
// (IcebergMetadataWritten, IcebergMetadataFailures; the commit service settles them first).

import middy from '@middy/core'
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { type CommitServiceOptions, type CommitServiceResult, commitFromQueue, forwardMessages } from '../lib/commit/commit-service.ts'
import { CommitterLease } from '../lib/commit/committer-lease.ts'
import { type CommitFeed, SqsCommitFeed } from '../lib/commit/commit-feed.ts'
import type { GluePointerCounts } from '../lib/iceberg/glue-pointer.ts'
import { gluePointerFromEnv } from './shared/glue.ts'
import { type FunctionRuntime, functionRuntime, logger } from './shared/runtime.ts'

/** time left in an invocation below which it starts no new round */
const ROUNDS_RESERVE_MS = 15_000

/** Fault-injection points for crash tests (never set in production). */
export type CommitterHooks = Pick<CommitServiceOptions, 'afterFold' | 'afterReceipts'> & { beforeSnapshotCreate?: (id: number) => Promise<void> | void; feed?: CommitFeed }


export type CommitterHandler = (event: SQSEvent, context?: Context, hooks?: CommitterHooks) => Promise<SQSBatchResponse>

/**
 * The committer function on a runtime: the bare handler (tests call it with hooks) and the
 * deployed one, which flushes its metrics. The seams of the runtime go around the fold and
 * the drained queue.
 */
export function committerFunction(runtime: FunctionRuntime) {
  runtime.useGluePointer(gluePointerFromEnv)
  const metrics = runtime.metrics('committer')
  const committerHandler: CommitterHandler = (event, context, hooks = {}) => commitInvocation(runtime, metrics, event, context, hooks)
  return { committerHandler, handler: middy((event: SQSEvent, context: Context) => committerHandler(event, context)).use(logMetrics(metrics)) }
}

async function commitInvocation(runtime: FunctionRuntime, metrics: Metrics, event: SQSEvent, context: Context | undefined, hooks: CommitterHooks): Promise<SQSBatchResponse> {
  if (!event || !Array.isArray(event.Records)) throw new Error('committer: expected an SQS event with a Records array')
  const cfg = runtime.config()
  const name = cfg.table
  if (!name) throw new Error('committer: environment variable STRATA_TABLE must name the one table this committer serves (STRATA_TABLES has several)')
  metrics.addDimension('table', name)
  const resolved = await runtime.resolveTable(name)
  if (!resolved) throw new Error(`committer: table '${name}' is not in STRATA_TABLES`)
  const { table, commitQueue } = resolved
  const { wrapFold, wrapQueue } = runtime.seams
  // holds no state of its own: what a warm committer knows (landed commits, manifests,
  // snapshots) lives in the table handle, which resolveTable keeps while warm
  const fold = new BatchingCommitter(table, { beforeSnapshotCreate: hooks.beforeSnapshotCreate })
  const started = Date.now()
  // more rounds while the queue has more, for at most STRATA_COMMIT_ROUNDS_MS, and never into
  // the last ROUNDS_RESERVE_MS of the timeout (a round's fold and deletions must fit)
  const moreRounds = () => Date.now() - started < cfg.commitRoundsMs && (context?.getRemainingTimeInMillis() ?? Infinity) > ROUNDS_RESERVE_MS
  const glue = runtime.gluePointer()
  const iceberg = table.iceberg ? { stats: table.iceberg.stats, written: table.iceberg.stats.written, failed: table.iceberg.stats.failed } : null
  const res = await commitFromQueue(
    wrapFold ? wrapFold(fold) : fold,
    event.Records.map((r) => ({ id: r.messageId, body: r.body, receiptHandle: r.receiptHandle })),
    {
      tableName: name,
      drain: commitQueue ? { queue: wrapQueue ? wrapQueue(commitQueue) : commitQueue, max: cfg.commitDrainMax } : undefined,
      afterFold: hooks.afterFold,
      afterReceipts: hooks.afterReceipts,
      moreRounds,
      lease: commitQueue && cfg.committerLease ? { lease: new CommitterLease(table.store), forward: (msgs) => forwardMessages(commitQueue, msgs) } : undefined,
      feed: cfg.feedQueueUrl ? { feed: hooks.feed ?? new SqsCommitFeed(runtime.sqsClient(), cfg.feedQueueUrl), onFailure: (error, ev) => logger.error('commit feed event not published; the snapshots landed', { table: name, fromSnapshot: ev.fromSnapshot, toSnapshot: ev.toSnapshot, error }) } : undefined,
    },
  ).finally(() => glue?.flush())
  for (const e of res.errors) logger.error(e.conflict ? 'commit message conflicts; its sender is told by its receipt' : 'commit message not landed', { messageId: e.id, error: e.error })
  logger.info('folded', {
    table: name, invoked: event.Records.length, drained: res.drained, landed: res.landed, duplicates: res.duplicates, conflicts: res.conflicts,
    notSettled: res.failed, snapshots: res.snapshots, rounds: res.rounds, forwarded: res.forwarded, retries: res.retries, replans: res.replans, requestId: context?.awsRequestId,
  })
  const icebergCounts = iceberg ? { written: iceberg.stats.written - iceberg.written, failures: iceberg.stats.failed - iceberg.failed } : undefined
  if (icebergCounts?.failures) logger.error('Iceberg metadata not written; the snapshots landed, and a later snapshot catches up', { table: name, failures: icebergCounts.failures, lastError: iceberg!.stats.lastError })
  publishCommitMetrics(metrics, res, { feed: Boolean(cfg.feedQueueUrl), commitTimeMs: Date.now() - started, glue: glue?.takeCounts(), iceberg: icebergCounts })
  return { batchItemFailures: res.failedIds.map((itemIdentifier) => ({ itemIdentifier })) }
}

/** An invocation's metrics (flushed by logMetrics), and a warning per lease it took over. */
export function publishCommitMetrics(metrics: Metrics, res: CommitServiceResult, opts: { feed: boolean; commitTimeMs: number; glue?: GluePointerCounts; iceberg?: { written: number; failures: number } }): void {
  for (const o of res.leaseOverrides) {
    // the lease's renewedAt against `at` shows how far the holder's clock is from this one's
    logger.warn('committer lease overridden', { reason: o.reason, lease: o.lease, at: o.at, holderAheadMs: o.lease.renewedAt !== undefined ? o.lease.renewedAt - o.at : undefined })
  }
  metrics.addMetric('CommitTime', MetricUnit.Milliseconds, opts.commitTimeMs)
  metrics.addMetric('Snapshots', MetricUnit.Count, res.snapshots.length)
  metrics.addMetric('FoldRounds', MetricUnit.Count, res.rounds)
  metrics.addMetric('CommitRetries', MetricUnit.Count, res.retries)
  metrics.addMetric('MessagesFolded', MetricUnit.Count, res.received)
  metrics.addMetric('MessagesDrained', MetricUnit.Count, res.drained)
  metrics.addMetric('MessagesLanded', MetricUnit.Count, res.landed)
  metrics.addMetric('MessagesDuplicate', MetricUnit.Count, res.duplicates)
  metrics.addMetric('MessagesConflict', MetricUnit.Count, res.conflicts)
  metrics.addMetric('MessagesFailed', MetricUnit.Count, res.failed)
  metrics.addMetric('MessagesForwarded', MetricUnit.Count, res.forwarded)
  metrics.addMetric('CommitterLeaseOverridden', MetricUnit.Count, res.leaseOverrides.length)
  if (opts.feed) {
    metrics.addMetric('FeedEvents', MetricUnit.Count, res.feedPublished)
    metrics.addMetric('FeedFailures', MetricUnit.Count, res.feedFailures)
  }
  if (opts.iceberg) {
    metrics.addMetric('IcebergMetadataWritten', MetricUnit.Count, opts.iceberg.written)
    metrics.addMetric('IcebergMetadataFailures', MetricUnit.Count, opts.iceberg.failures)
  }
  if (opts.glue) {
    metrics.addMetric('GlueUpdates', MetricUnit.Count, opts.glue.updates)
    metrics.addMetric('GlueUpdateFailures', MetricUnit.Count, opts.glue.failures)
  }
}

/** The deployed committer, on the execution environment's runtime (no seams). */
const deployed = committerFunction(functionRuntime)
export const committerHandler = deployed.committerHandler
export const handler = deployed.handler
