// What every handler shares within one execution environment: the parsed configuration,
// table handles (opened once, reused while warm — their manifest and snapshot caches are
// what makes a warm invocation cheap), AWS clients, and Powertools logger and metrics.
// Everything here is bounded: one handle per configured table (its caches bounded by bytes,
// lib/format/byte-cache.ts), one SQS client, one reject store. A FunctionRuntime holds them
// with the seams it was built with (RuntimeSeams: wrappers a probe, the soak or a test puts
// around what it builds); the deployed handlers share one without seams (functionRuntime).

import { SQSClient } from '@aws-sdk/client-sqs'
import { Logger } from '@aws-lambda-powertools/logger'
import { MetricUnit, Metrics } from '@aws-lambda-powertools/metrics'
import { type JobQueue, SqsJobQueue } from '../../lib/jobs/compaction-job.ts'
import type { Committer } from '../../lib/commit/committer.ts'
import { type DrainableCommitQueue, SqsCommitQueue } from '../../lib/commit/commit-queue.ts'
import type { Fold } from '../../lib/commit/commit-service.ts'
import { QueuedCommitter } from '../../lib/commit/queued-committer.ts'
import { openStore } from '../../lib/store/open-store.ts'
import type { ObjectStore } from '../../lib/store/object-store.ts'
import { takeCompressionThreadFallbacks } from '../../lib/format/compression-thread.ts'
import { takeS3RetryCounts } from '../../lib/store/s3-store.ts'
import { Table } from '../../lib/handle/table.ts'
import type { GluePointer } from '../../lib/iceberg/glue-pointer.ts'
import { type RuntimeConfig, type TableConfig, parseConfig } from './config.ts'

export const NAMESPACE = 'Strata'

/** A metric as a handler added it to its metrics. */
export interface AddedMetric {
  name: string
  unit: Parameters<Metrics['addMetric']>[1]
  value: number
}

/**
 * What a process that runs a function's code unchanged (the soak's crash points, the
 * benchmarks' probes, a test's injected fault) puts around the parts a runtime builds; none
 * in the deployed functions. Each runtime holds its own: a probe's runtime and a plain one in
 * one process do not see each other's.
 */
export interface RuntimeSeams {
  /** around every store the runtime opens: each table's and the reject store */
  wrapStore?: (store: ObjectStore) => ObjectStore
  /** around each table's committer (the queued one, or the table's direct one), which writers and compactors commit through */
  wrapCommitter?: (committer: Committer) => Committer
  /** around the committer function's fold (one call per round) */
  wrapFold?: (fold: Fold) => Fold
  /** around the commit queue the committer function drains */
  wrapQueue?: (queue: DrainableCommitQueue) => DrainableCommitQueue
  /** told of each metric a handler adds to its metrics */
  onMetric?: (metric: AddedMetric) => void
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

/**
 * How often a warm environment checks whether its cached table was altered (one HEAD of the
 * next schema file): a handle on an older schema refuses files written under a newer one,
 * so a request that meets one in this window fails and succeeds when retried.
 */
export const SCHEMA_CHECK_MS = 1000

/** Paimon's option that turns off Glue's archived version per UpdateTable (read from the table's options as they are). */
const GLUE_SKIP_ARCHIVE_OPTION = 'metadata.iceberg.glue.skip-archive'

/**
 * One execution environment's runtime: its configuration, table handles, SQS client and
 * reject store, each made once and kept while warm, and the seams it was built with.
 */
export class FunctionRuntime {
  private parsed: RuntimeConfig | null = null
  private readonly tables = new Map<string, Promise<ResolvedTable>>()
  /** when each cached table was last checked for a newer schema */
  private readonly schemaCheckedAt = new Map<string, number>()
  private sqs: SQSClient | null = null
  private rejects: ObjectStore | null = null
  /** undefined until asked; null when the environment registers no Glue table */
  private glue: GluePointer | null | undefined = undefined
  /** makes the Glue pointer: none unless the committer set one (useGluePointer) */
  private makeGluePointer: () => GluePointer | null = () => null

  constructor(readonly seams: RuntimeSeams = {}) {}

  config(): RuntimeConfig {
    this.parsed ??= parseConfig()
    return this.parsed
  }

  /** Tests and the local runtime reload the configuration after changing the environment. */
  reset(): void {
    this.parsed = null
    this.tables.clear()
    this.schemaCheckedAt.clear()
    this.sqs = null
    this.rejects = null
    this.glue = undefined
  }

  /**
   * How the Glue pointer is made. Only the committer sets it (functions/shared/glue.ts), so
   * only its bundle carries the AWS SDK's Glue client.
   */
  useGluePointer(make: () => GluePointer | null): void {
    this.makeGluePointer = make
    this.glue = undefined
  }

  /**
   * The committer's Glue pointer, made once per execution environment (so its interval and
   * what it has sent outlive an invocation); null without STRATA_GLUE_DATABASE.
   */
  gluePointer(): GluePointer | null {
    if (this.glue === undefined) this.glue = this.makeGluePointer()
    return this.glue
  }

  sqsClient(): SQSClient {
    // A custom endpoint (AWS_ENDPOINT_URL: LocalStack, the embedded backend) must win over the
    // host in a queue URL, which such servers fill with names like sqs.us-east-1.localhost.
    const endpoint = process.env.AWS_ENDPOINT_URL_SQS ?? process.env.AWS_ENDPOINT_URL
    this.sqs ??= new SQSClient(endpoint ? { endpoint, useQueueUrlAsEndpoint: false } : {})
    return this.sqs
  }

  /**
   * The configured table by name, opened once per execution environment and opened again
   * when `strata alter` has given it a newer schema (checked at most every SCHEMA_CHECK_MS).
   */
  async resolveTable(name: string): Promise<ResolvedTable | null> {
    const cfg = this.config().tables.get(name)
    if (!cfg) return null
    const cached = this.tables.get(name)
    const now = Date.now()
    if (cached && now - (this.schemaCheckedAt.get(name) ?? 0) >= SCHEMA_CHECK_MS) {
      this.schemaCheckedAt.set(name, now)
      const r = await cached.catch(() => null)
      // a failed probe keeps the handle: the next one asks again
      if (r && (await r.table.newerSchemaExists().catch(() => false)) && this.tables.get(name) === cached) this.tables.delete(name)
    }
    let t = this.tables.get(name)
    if (!t) {
      t = this.openTable(name, cfg)
      // a failed open is not cached: the next invocation tries again
      t.catch(() => this.tables.delete(name))
      this.tables.set(name, t)
      this.schemaCheckedAt.set(name, now)
    }
    return t
  }

  private async openTable(name: string, cfg: TableConfig): Promise<ResolvedTable> {
    const rc = this.config()
    const glue = this.gluePointer()
    const table = await Table.open(this.openStore(cfg.uri), { metadataCacheBytes: rc.metadataCacheBytes, footerCacheBytes: rc.footerCacheBytes, icebergCatalog: glue ?? undefined })
    glue?.setSkipArchive(table.schema.options[GLUE_SKIP_ARCHIVE_OPTION]?.trim().toLowerCase() === 'true')
    const commitQueue = cfg.commitQueueUrl ? new SqsCommitQueue(this.sqsClient(), cfg.commitQueueUrl) : null
    // the deployed setting decides, as the stack's concurrency mapping follows it
    const taskThreads = cfg.taskThreads ?? table.view.options.compactionTaskThreads
    const committer = commitQueue ? new QueuedCommitter(table, commitQueue, { tableName: name, timeoutMs: rc.commitTimeoutMs }) : table.committer
    return {
      table,
      taskThreads,
      // task-threads 1: the table's jobs share one message group (lib/jobs/compaction-job.ts)
      jobs: cfg.compactionQueueUrl ? new SqsJobQueue(this.sqsClient(), cfg.compactionQueueUrl, { oneGroup: taskThreads === 1 }) : null,
      committer: this.seams.wrapCommitter ? this.seams.wrapCommitter(committer) : committer,
      commitQueue,
    }
  }

  /** Where rejected records go, opened once per execution environment (its S3 client and sockets with it). */
  rejectStore(): ObjectStore {
    this.rejects ??= this.openStore(this.config().rejectUri)
    return this.rejects
  }

  /** A handler's metrics, telling the runtime's metric observer of each metric added. */
  metrics(functionName: string): Metrics {
    return new HandlerMetrics({ namespace: NAMESPACE, serviceName: 'strata', defaultDimensions: { function: functionName } }, this.seams.onMetric)
  }

  private openStore(uri: string): ObjectStore {
    const store = openStore(uri)
    return this.seams.wrapStore ? this.seams.wrapStore(store) : store
  }
}

/**
 * The runtime of the deployed functions' handlers (functions/*.ts `handler`), and of the
 * tests that call them: without seams. The functions below are its parts.
 */
export const functionRuntime = new FunctionRuntime()

export function runtimeConfig(): RuntimeConfig {
  return functionRuntime.config()
}

/** Tests and the local runtime reload the configuration after changing the environment. */
export function resetRuntime(): void {
  functionRuntime.reset()
}

export function sqsClient(): SQSClient {
  return functionRuntime.sqsClient()
}

/** The configured table by name (FunctionRuntime.resolveTable). */
export function resolveTable(name: string): Promise<ResolvedTable | null> {
  return functionRuntime.resolveTable(name)
}

/** Where rejected records go, opened once per execution environment. */
export function rejectStore(): ObjectStore {
  return functionRuntime.rejectStore()
}

export const logger = new Logger({ serviceName: 'strata' })
export function newMetrics(functionName: string): Metrics {
  return functionRuntime.metrics(functionName)
}

/**
 * A handler's metrics, which tell the runtime's observer of each metric added and on every flush (logMetrics after or on error) also publish the
 * S3 retries and throttled attempts, and the compression thread's fallbacks (a compactor's
 * writer waited out the thread and compressed a row group inline), since the last flush. The
 * counts are per process, so in Lambda they are the invocation's; only non-zero counts are
 * published.
 */
class HandlerMetrics extends Metrics {
  constructor(
    options: ConstructorParameters<typeof Metrics>[0],
    /** the runtime's metric observer (RuntimeSeams.onMetric), if any */
    private readonly onMetric?: (metric: AddedMetric) => void,
  ) {
    super(options)
  }

  override addMetric(name: string, unit: AddedMetric['unit'], value: number, resolution?: Parameters<Metrics['addMetric']>[3]): this {
    this.onMetric?.({ name, unit, value })
    return super.addMetric(name, unit, value, resolution)
  }

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
