// Writer function: ingest events from an SQS queue or a Kinesis stream → lib/ingest.
// Bad records go to the reject location; the rest commit as one APPEND snapshot per
// table; one compaction job per touched bucket goes to the table's FIFO queue. Failures
// are reported per record (partial batch response), so nothing is lost or written twice.

import middy from '@middy/core'
import { type Metrics, MetricUnit } from '@aws-lambda-powertools/metrics'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Context, KinesisStreamEvent, SQSBatchResponse, SQSEvent } from 'aws-lambda'
import type { IngestRecord } from '../lib/ingest/parse-records.ts'
import { ingest } from '../lib/ingest/ingest.ts'
import { type FunctionRuntime, functionRuntime, logger } from './shared/runtime.ts'

export type WriterEvent = SQSEvent | KinesisStreamEvent

// fatal: bytes that are not UTF-8 would otherwise become U+FFFD inside a stored string
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** A Kinesis record's data as text; data that is not UTF-8 is kept (lossily) for the rejects, and marked. */
function kinesisBody(data: string): { body: string; unreadable?: string } {
  const bytes = Buffer.from(data, 'base64')
  try {
    return { body: utf8.decode(bytes) }
  } catch {
    return { body: bytes.toString('utf8'), unreadable: 'the record is not valid UTF-8 text' }
  }
}

/** The records of either event kind, with their redelivery-stable ids. */
export function recordsOf(event: WriterEvent): { records: IngestRecord[]; ordered: boolean } {
  if (!event || !Array.isArray((event as { Records?: unknown }).Records)) {
    throw new Error('writer: expected an SQS or Kinesis event with a Records array')
  }
  const recs = event.Records as (SQSEvent['Records'][number] | KinesisStreamEvent['Records'][number])[]
  if (recs.length && 'kinesis' in recs[0]) {
    return {
      ordered: true,
      records: (recs as KinesisStreamEvent['Records']).map((r) => ({
        id: r.kinesis.sequenceNumber,
        source: `${r.eventSourceARN}#${r.kinesis.partitionKey}@${r.kinesis.sequenceNumber}`,
        // seconds with a fraction
        sentAt: Number(r.kinesis.approximateArrivalTimestamp) * 1000,
        ...kinesisBody(r.kinesis.data),
      })),
    }
  }
  return {
    ordered: false,
    records: (recs as SQSEvent['Records']).map((r) => ({
      id: r.messageId,
      source: `${r.eventSourceARN}#${r.messageId}`,
      body: r.body,
      receiveCount: Number(r.attributes?.ApproximateReceiveCount ?? 1),
      firstReceivedAt: Number(r.attributes?.ApproximateFirstReceiveTimestamp ?? NaN),
      sentAt: Number(r.attributes?.SentTimestamp ?? NaN),
    })),
  }
}

/** Fault-injection points for tests of crash recovery (never set in production). */
export interface WriterHooks {
  beforeSnapshotCreate?: (table: string, snapshotId: number) => Promise<void> | void
}

/**
 * The writer function on a runtime: the bare handler (tests call it with hooks) and the
 * deployed one, which flushes its metrics. The runtime's seams reach the tables it resolves
 * (their stores and committers), the reject store and its metrics.
 */
export function writerFunction(runtime: FunctionRuntime) {
  const metrics = runtime.metrics('writer')
  const writerHandler = (event: WriterEvent, context?: Context, hooks: WriterHooks = {}) => writeInvocation(runtime, metrics, event, context, hooks)
  return { writerHandler, handler: middy((event: WriterEvent, context: Context) => writerHandler(event, context)).use(logMetrics(metrics)) }
}

async function writeInvocation(runtime: FunctionRuntime, metrics: Metrics, event: WriterEvent, context: Context | undefined, hooks: WriterHooks): Promise<SQSBatchResponse> {
  const cfg = runtime.config()
  const { records, ordered } = recordsOf(event)
  const started = Date.now()
  const res = await ingest(records, {
    resolve: (name) => runtime.resolveTable(name),
    defaultTable: cfg.tables.size === 1 ? [...cfg.tables.keys()][0] : undefined,
    rejects: runtime.rejectStore(),
    commitUser: `strata-writer-${process.env.AWS_LAMBDA_FUNCTION_NAME ?? 'local'}`,
    orderedSource: ordered,
    beforeSnapshotCreate: hooks.beforeSnapshotCreate,
  })
  // EMF dimensions apply to a whole flush: with one table (the usual case) every metric
  // carries it; an invocation spanning several tables emits per-table single metrics
  const single = res.tables.length === 1
  if (single) metrics.addDimension('table', res.tables[0].table)
  for (const t of res.tables) {
    logger.info('committed', { table: t.table, snapshot: t.snapshotId, rows: t.rows, jobs: t.jobs, deduplicated: t.deduplicated, alreadyCommitted: t.alreadyCommitted, requestId: context?.awsRequestId })
    const emit = (name: string, value: number, unit: Parameters<Metrics['addMetric']>[1] = MetricUnit.Count) => {
      if (single) return metrics.addMetric(name, unit, value)
      const m = metrics.singleMetric()
      m.addDimension('table', t.table)
      m.addMetric(name, unit, value)
    }
    emit('RowsWritten', t.rows)
    emit('CommitRetries', t.retries)
    emit('JobsEnqueued', t.jobs)
    emit('RecordsAlreadyCommitted', t.alreadyCommitted)
    // the writer's stage of the freshness budget (docs/design.md "Freshness budget")
    emit('WriteCommitTime', t.commitMs, MetricUnit.Milliseconds)
  }
  if (res.batchWaitMs !== null) metrics.addMetric('IngestWait', MetricUnit.Milliseconds, res.batchWaitMs)
  metrics.addMetric('RowsRejected', MetricUnit.Count, res.rejected)
  metrics.addMetric('RecordsFailed', MetricUnit.Count, res.failedIds.length)
  metrics.addMetric('WriteLatency', MetricUnit.Milliseconds, Date.now() - started)
  if (res.rejected) logger.warn('rejected records', { count: res.rejected })
  if (res.failedIds.length) logger.error('records to redeliver', { count: res.failedIds.length, errors: res.errors })
  return { batchItemFailures: res.failedIds.map((itemIdentifier) => ({ itemIdentifier })) }
}

/** The deployed writer, on the execution environment's runtime (no seams). */
const deployed = writerFunction(functionRuntime)
export const writerHandler = deployed.writerHandler
export const handler = deployed.handler
