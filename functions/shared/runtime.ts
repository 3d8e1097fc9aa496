// What every handler shares within one execution environment: the parsed configuration,
// table handles (opened once, reused while warm — their manifest and snapshot caches are
// what makes a warm invocation cheap), AWS clients, and Powertools logger and metrics.
// Everything here is bounded: one handle per configured table (its caches bounded by bytes,
// lib/format/byte-cache.ts), one SQS client, one reject store.

import { SQSClient } from '@aws-sdk/client-sqs'
import { Logger } from '@aws-lambda-powertools/logger'
import { MetricUnit, Metrics } from '@aws-lambda-powertools/metrics'
import { type JobQueue, SqsJobQueue } from '../../lib/jobs/compaction-job.ts'
import type { Committer } from '../../lib/commit/committer.ts'
import { SqsCommitQueue } from '../../lib/commit/commit-queue.ts'
import { QueuedCommitter } from '../../lib/commit/queued-committer.ts'
import { openStore } from '../../lib/store/open-store.ts'
import type { ObjectStore } from '../../lib/store/object-store.ts'
import { takeCompressionThreadFallbacks } from '../../lib/format/compression-thread.ts'
import { takeS3RetryCounts } from '../../lib/store/s3-store.ts'
import { Table } from '../../lib/handle/table.ts'
import { type RuntimeConfig, parseConfig } from './config.ts'

export const NAMESPACE = 'Strata'

let config: RuntimeConfig | null = null
export function runtimeConfig(): RuntimeConfig {
  config ??= parseConfig()
  return config
}

/** Tests and the local runtime reload the configuration after changing the environment. */
export function resetRuntime(): void {
  config = null
  tables.clear()
  schemaCheckedAt.clear()
  sqs = null
  rejects = null
}

let sqs: SQSClient | null = null
export function sqsClient(): SQSClient {
  // A custom endpoint (AWS_ENDPOINT_URL: LocalStack, the embedded backend) must win over the
  // host in a queue URL, which such servers fill with names like sqs.us-east-1.localhost.
  const endpoint = process.env.AWS_ENDPOINT_URL_SQS ?? process.env.AWS_ENDPOINT_URL
  sqs ??= new SQSClient(endpoint ? { endpoint, useQueueUrlAsEndpoint: false } : {})
  return sqs
}

export interface ResolvedTable {
  table: Table
  jobs: JobQueue | null
  /** the table's committer (queued) when it has a commit queue, else the direct one */
  committer: Committer
  commitQueue: SqsCommitQueue | null
  /** `compaction.task-threads` in force: the deployed value (STRATA_TABLES) if given, else the schema's */
  taskThreads: number
}

const tables = new Map<string, Promise<ResolvedTable>>()
/** when each cached table was last checked for a newer schema */
const schemaCheckedAt = new Map<string, number>()
/**
 * How often a warm environment checks whether its cached table was altered (one HEAD of the
 * next schema file): a handle on an older schema refuses files written under a newer one,
 * so a request that meets one in this window fails and succeeds when retried.
 */
export const SCHEMA_CHECK_MS = 1000

/**
 * The configured table by name, opened once per execution environment and opened again
 * when `strata alter` has given it a newer schema (checked at most every SCHEMA_CHECK_MS).
 */
export async function resolveTable(name: string): Promise<ResolvedTable | null> {
  const rc = runtimeConfig()
  const cfg = rc.tables.get(name)
  if (!cfg) return null
  const cached = tables.get(name)
  const now = Date.now()
  if (cached && now - (schemaCheckedAt.get(name) ?? 0) >= SCHEMA_CHECK_MS) {
    schemaCheckedAt.set(name, now)
    const r = await cached.catch(() => null)
    // a failed probe keeps the handle: the next one asks again
    if (r && (await r.table.newerSchemaExists().catch(() => false)) && tables.get(name) === cached) tables.delete(name)
  }
  let t = tables.get(name)
  if (!t) {
    t = Table.open(cfg.uri, { metadataCacheBytes: rc.metadataCacheBytes, footerCacheBytes: rc.footerCacheBytes }).then((table) => {
      const commitQueue = cfg.commitQueueUrl ? new SqsCommitQueue(sqsClient(), cfg.commitQueueUrl) : null
      // the deployed setting decides, as the stack's concurrency mapping follows it
      const taskThreads = cfg.taskThreads ?? table.view.options.compactionTaskThreads
      return {
        table,
        taskThreads,
        // task-threads 1: the table's jobs share one message group (lib/jobs/compaction-job.ts)
        jobs: cfg.compactionQueueUrl ? new SqsJobQueue(sqsClient(), cfg.compactionQueueUrl, { oneGroup: taskThreads === 1 }) : null,
        committer: commitQueue ? new QueuedCommitter(table, commitQueue, { tableName: name, timeoutMs: rc.commitTimeoutMs }) : table.committer,
        commitQueue,
      }
    })
    // a failed open is not cached: the next invocation tries again
    t.catch(() => tables.delete(name))
    tables.set(name, t)
    schemaCheckedAt.set(name, now)
  }
  return t
}

let rejects: ObjectStore | null = null
/** Where rejected records go, opened once per execution environment (its S3 client and sockets with it). */
export function rejectStore(): ObjectStore {
  rejects ??= openStore(runtimeConfig().rejectUri)
  return rejects
}

export const logger = new Logger({ serviceName: 'strata' })
export function newMetrics(functionName: string): Metrics {
  return new HandlerMetrics({ namespace: NAMESPACE, serviceName: 'strata', defaultDimensions: { function: functionName } })
}

/**
 * A handler's metrics, which on every flush (logMetrics after or on error) also publish the
 * S3 retries and throttled attempts, and the compression thread's fallbacks (a compactor's
 * writer waited out the thread and compressed a row group inline), since the last flush. The
 * counts are per process, so in Lambda they are the invocation's; only non-zero counts are
 * published.
 */
class HandlerMetrics extends Metrics {
  override publishStoredMetrics(): this {
    const s3 = takeS3RetryCounts()
    if (s3.retries > 0) this.addMetric('S3Retries', MetricUnit.Count, s3.retries)
    if (s3.throttles > 0) this.addMetric('S3Throttles', MetricUnit.Count, s3.throttles)
    const fallbacks = takeCompressionThreadFallbacks()
    if (fallbacks > 0) {
      this.addMetric('CompressionThreadFallbacks', MetricUnit.Count, fallbacks)
      logger.warn('the compression thread did not answer in time; row groups compressed inline, the thread replaced', { rowGroups: fallbacks })
    }
    return super.publishStoredMetrics()
  }

  // Dimensions added since the last flush. A handler called without logMetrics (tests, the
  // benchmarks' in-process calls) never flushes, so its next invocation sets `table` again;
  // Powertools then warns on every call. Setting a dimension that is already there replaces
  // it quietly instead.
  private readonly dimensionsSet = new Map<string, string>()

  override addDimension(name: string, value: string): this {
    if (this.dimensionsSet.has(name)) {
      const others = [...this.dimensionsSet].filter(([k]) => k !== name)
      this.clearDimensions()
      for (const [k, v] of others) this.addDimension(k, v)
    }
    this.dimensionsSet.set(name, value)
    return super.addDimension(name, value)
  }

  override clearDimensions(): void {
    this.dimensionsSet.clear()
    super.clearDimensions()
  }
}
