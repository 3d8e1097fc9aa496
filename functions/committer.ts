// Committer function: SQS FIFO event source, one message group per table (reserved
// concurrency 1 per table, so one committer folds a table's commits in queue order).
// Decodes the batch's commit messages, folds them with the batching committer into as few
// snapshots as it can (lib/commit/batching-committer.ts) and returns a partial batch
// response naming the messages that did not land:
// - a message that cannot be decoded, names another table, or conflicts (a COMPACT whose
//   inputs are gone) fails alone; the rest of the batch still lands. Returning it out of
//   order is safe: only COMPACT messages fail alone, and they commute with every later
//   message (see the committer's file comment). A conflicting COMPACT fails again on each
//   redelivery until the queue's DLQ takes it; its bucket is compacted again by the next job.
// - a store failure fails every message not landed yet; the landed ones are acknowledged,
//   and a redelivery of one that landed anyway is recognised and not landed twice.

import middy from '@middy/core'
import { MetricUnit } from '@aws-lambda-powertools/metrics'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Context, SQSBatchResponse, SQSEvent } from 'aws-lambda'
import { BatchingCommitter, type FoldInput } from '../lib/commit/batching-committer.ts'
import { parseCommitMessageBody } from '../lib/commit/commit-message.ts'
import type { Table } from '../lib/table/table.ts'
import { logger, newMetrics, resolveTable, runtimeConfig } from './shared/runtime.ts'

const metrics = newMetrics('committer')

/** One committer per table handle, kept while warm: it caches which commits landed where. */
const committers = new WeakMap<Table, BatchingCommitter>()

export async function committerHandler(event: SQSEvent, context?: Context): Promise<SQSBatchResponse> {
  if (!event || !Array.isArray(event.Records)) throw new Error('committer: expected an SQS event with a Records array')
  const name = runtimeConfig().table
  if (!name) throw new Error('committer: environment variable STRATA_TABLE must name the one table this committer serves (STRATA_TABLES has several)')
  metrics.addDimension('table', name)
  const resolved = await resolveTable(name)
  if (!resolved) throw new Error(`committer: table '${name}' is not in STRATA_TABLES`)
  const { table } = resolved
  let committer = committers.get(table)
  if (!committer) committers.set(table, (committer = new BatchingCommitter(table)))

  const failed: string[] = []
  const inputs: FoldInput[] = []
  const ids: string[] = []
  for (const r of event.Records) {
    try {
      const m = parseCommitMessageBody(r.body)
      const target = m.inline ? m.message.table : m.identity.table
      if (target !== undefined && target !== name) throw new Error(`commit message names table '${target}', this committer serves '${name}'`)
      inputs.push(m)
      ids.push(r.messageId)
    } catch (e) {
      logger.error('commit message rejected', { messageId: r.messageId, error: (e as Error).message })
      failed.push(r.messageId)
    }
  }
  const started = Date.now()
  const res = inputs.length ? await committer.commit(inputs) : null
  let landed = 0, duplicates = 0
  res?.outcomes.forEach((o, i) => {
    if (o.status === 'landed') landed++
    else if (o.status === 'duplicate') duplicates++
    else {
      failed.push(ids[i])
      logger.error(o.conflict ? 'commit message conflicts; not landed' : 'commit message not landed', { messageId: ids[i], error: o.error.message })
    }
  })
  if (res) {
    logger.info('folded', {
      table: name, messages: event.Records.length, landed, duplicates, failed: failed.length,
      snapshots: res.snapshots.map((s) => s.id), retries: res.retries, replans: res.replans, requestId: context?.awsRequestId,
    })
    metrics.addMetric('CommitTime', MetricUnit.Milliseconds, Date.now() - started)
    metrics.addMetric('Snapshots', MetricUnit.Count, res.snapshots.length)
    metrics.addMetric('CommitRetries', MetricUnit.Count, res.retries)
  }
  metrics.addMetric('MessagesLanded', MetricUnit.Count, landed)
  metrics.addMetric('MessagesDuplicate', MetricUnit.Count, duplicates)
  metrics.addMetric('MessagesFailed', MetricUnit.Count, failed.length)
  const order = new Map(event.Records.map((r, i) => [r.messageId, i]))
  failed.sort((a, b) => order.get(a)! - order.get(b)!)
  return { batchItemFailures: failed.map((itemIdentifier) => ({ itemIdentifier })) }
}

export const handler = middy(committerHandler).use(logMetrics(metrics))
