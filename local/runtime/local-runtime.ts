// The local runtime (development only): the embedded S3 + SQS backend, the queues and
// buckets a deployment would have, and event-source pollers driving the real handlers in
// execution environments (worker threads, or processes of their own: `isolation`), as AWS
// would. Every table has a commit queue and a committer, as the CDK stack deploys them:
// writers and compactors commit through it (docs/design.md). Compactor concurrency per table
// comes from the table option `compaction.task-threads`, mapped as the CDK stack maps it
// (docs/operations.md, "compaction.task-threads on Lambda"):
// 1 → one at a time, N → at most N, -1 → no cap (one per active bucket).

import { join } from 'node:path'
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs'
import { S3Store } from '../../lib/store/s3-store.ts'
import { Table } from '../../lib/handle/table.ts'
import { type BackendProcessOptions, startBackendProcess } from '../backend-process.ts'
import { type EmbeddedBackend, type EmbeddedLatency, type EmbeddedStats, startEmbeddedBackend } from '../embedded.ts'
import type { RequestCount } from '../request-counts.ts'
import { ExecutionEnvironmentPool, type Isolation } from './execution-environment.ts'
import { ensureHandlerBundles } from './handler-bundles.ts'
import { EventSourcePoller, type PollerOptions } from './poller.ts'
// the stack's mapping of compaction.task-threads, so the local event sources behave as deployed
import { compactorConcurrency } from '../../cdk/concurrency.ts'

// the stack's default function memory, enforced on the execution environments as Lambda would,
// and the environment every function's process starts with (an environment that is a thread
// shares the host's allocator, so only `isolation: 'process'` applies the malloc settings)
import { DEFAULT_MEMORY_MB as FUNCTION_MEMORY_MB, FUNCTION_PROCESS_ENVIRONMENT } from '../../cdk/config.ts'

const FUNCTIONS = join(import.meta.dirname, '..', '..', 'functions')

export interface LocalTableSpec {
  name: string
  schema: unknown
}

export interface LocalRuntimeOptions {
  tables: LocalTableSpec[]
  bucket?: string
  /** concurrent writer invocations (ingest event-source maxConcurrency) */
  writerConcurrency?: number
  /** writer batch size (up to 10000 with a batching window); default 500 */
  writerBatchSize?: number
  /** writer MaximumBatchingWindowInSeconds, in ms; default 1000 */
  writerBatchingWindowMs?: number
  /** compactor batch size (FIFO: at most 10); default 10 */
  compactorBatchSize?: number
  /** SQS visibility timeout of every queue, seconds (AWS: ≥ 6× the function timeout) */
  visibilityTimeoutSeconds?: number
  maxReceiveCount?: number
  /** handler modules, for tests that wrap the real ones */
  writerModule?: string
  compactorModule?: string
  committerModule?: string
  /** concurrent committer invocations per table; default 2, the event-source mapping's maxConcurrency in the stack */
  committerConcurrency?: number
  onCommitterInvocation?: (table: string, info: Parameters<NonNullable<PollerOptions['onInvocation']>>[0]) => void
  /** function timeout in ms (the environment is killed past it) */
  timeoutMs?: number
  /**
   * What every function's execution environment is: a worker thread of this process
   * ('thread', the default) or a child process of its own ('process': each environment's
   * RSS is then its own, ExecutionEnvironmentPool.memory() gives it)
   */
  isolation?: Isolation
  latency?: EmbeddedLatency
  /**
   * Runs the embedded backend in a child process of its own (local/backend-process.ts)
   * with these options instead of `latency`: its event loop and its memory (every stored
   * object body) then leave this process, as S3 and SQS are elsewhere in production.
   */
  backendProcess?: BackendProcessOptions
  onWriterInvocation?: PollerOptions['onInvocation']
  onCompactorInvocation?: (table: string, info: Parameters<NonNullable<PollerOptions['onInvocation']>>[0]) => void
  /**
   * The compactors' log lines (Powertools JSON at INFO: each job's outcome, each failure), by
   * table; set, the compactors log at INFO instead of staying silent
   */
  onCompactorLog?: (table: string, line: string) => void
  /** extra environment for the handlers */
  env?: Record<string, string>
  /** a commit-feed queue (standard SQS) the committers publish to, as the stack's (lib/commit/commit-feed.ts); default none */
  feed?: boolean
}

export interface LocalTable {
  name: string
  uri: string
  table: Table
  compactionQueueUrl: string
  dlqUrl: string
  commitQueueUrl: string
  commitDlqUrl: string
  taskThreads: number
  poller: EventSourcePoller
  pool: ExecutionEnvironmentPool
  committerPoller: EventSourcePoller
  committerPool: ExecutionEnvironmentPool
}

/** The backend a local runtime runs on, in this process or in a child process. */
export interface LocalBackend extends Omit<EmbeddedBackend, 'app'> {
  /** what the backend holds; with the backend in a child process, also that process's memory */
  stats(settle?: boolean): Promise<{ stats: EmbeddedStats; memory?: NodeJS.MemoryUsage }>
  /**
   * The backend's own count of the requests it answered, by service, operation and caller
   * (local/request-counts.ts); in this process only (absent with `backendProcess`)
   */
  requestCounts?(): RequestCount[]
}

export interface LocalRuntime {
  backend: LocalBackend
  sqs: SQSClient
  bucket: string
  ingestQueueUrl: string
  ingestDlqUrl: string
  tables: Map<string, LocalTable>
  writer: EventSourcePoller
  writerPool: ExecutionEnvironmentPool
  /** the handlers' environment (for running more functions against this runtime) */
  env: Record<string, string>
  /** the commit-feed queue, with `feed` */
  feedQueueUrl?: string
  /** sends JSON records to the ingest queue, 10 per SendMessageBatch */
  send(bodies: string[]): Promise<void>
  /** visible + in-flight messages of a queue (fauxqs counts are stale until a receive) */
  queueDepth(url: string): Promise<number>
  stop(): Promise<void>
}

async function createQueue(sqs: SQSClient, name: string, attributes: Record<string, string>): Promise<{ url: string; arn: string }> {
  const q = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))
  const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: q.QueueUrl!, AttributeNames: ['QueueArn'] }))
  return { url: q.QueueUrl!, arn: a.Attributes!.QueueArn! }
}

/**
 * What every handler's environment holds on the local runtime: the embedded backend's
 * endpoint and credentials, quiet Powertools, and the tables (STRATA_TABLES).
 */
export function handlerEnvironment(backend: Pick<EmbeddedBackend, 'endpoint' | 'region' | 'credentials'>, tables: Record<string, { uri: string; compactionQueueUrl?: string; commitQueueUrl?: string; taskThreads?: number }>): Record<string, string> {
  return {
    AWS_ENDPOINT_URL: backend.endpoint,
    AWS_REGION: backend.region,
    AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    STRATA_TABLES: JSON.stringify(tables),
  }
}

function inProcess(b: EmbeddedBackend & { stats(): EmbeddedStats; requestCounts(): RequestCount[] }): LocalBackend {
  return {
    endpoint: b.endpoint, region: b.region, credentials: b.credentials,
    s3Client: () => b.s3Client(),
    createBucket: (name) => b.createBucket(name),
    stop: () => b.stop(),
    stats: async () => ({ stats: b.stats() }),
    requestCounts: () => b.requestCounts(),
  }
}

/**
 * The SDK app id (`AWS_SDK_UA_APP_ID`, sent as `app/<id>` in the User-Agent) of each client
 * the runtime runs: a function's own clients, its event-source mapping's, the upstream's. The
 * backend counts requests per app id, so a cost benchmark can bill each to its line item.
 * A function's id is short: Powertools appends its own (about 44 characters) to it, and the
 * SDK warns past 50. The table's index in `tables` names its functions.
 */
export const CALLER = {
  writer: 'w',
  compactor: (tableIndex: number) => `c${tableIndex}`,
  committer: (tableIndex: number) => `m${tableIndex}`,
  eventSource: (functionId: string) => `esm-${functionId}`,
  upstream: 'upstream',
  runtime: 'local-runtime',
} as const

export async function startLocalRuntime(opts: LocalRuntimeOptions): Promise<LocalRuntime> {
  if (opts.backendProcess && opts.latency !== undefined) throw new Error('startLocalRuntime: give latency in backendProcess ({ firstByteMs, pathPrefix }) when the backend runs in a child process, not as `latency`')
  const backend: LocalBackend = opts.backendProcess ? await startBackendProcess(opts.backendProcess) : inProcess(await startEmbeddedBackend({ latency: opts.latency }))
  const bucket = opts.bucket ?? 'strata-local'
  await backend.createBucket(bucket)
  const sqsFor = (appId: string) => new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false, userAgentAppId: appId })
  const sqs = sqsFor(CALLER.runtime)
  const upstream = sqsFor(CALLER.upstream)
  // each event-source mapping polls with a client of its own, so its requests are its own
  const pollerClients: SQSClient[] = []
  const pollerSqs = (functionId: string) => {
    const c = sqsFor(CALLER.eventSource(functionId))
    pollerClients.push(c)
    return c
  }
  const visibility = String(opts.visibilityTimeoutSeconds ?? 30)
  const maxReceiveCount = String(opts.maxReceiveCount ?? 5)

  const ingestDlq = await createQueue(sqs, 'strata-ingest-dlq', {})
  const ingest = await createQueue(sqs, 'strata-ingest', {
    VisibilityTimeout: visibility,
    RedrivePolicy: JSON.stringify({ deadLetterTargetArn: ingestDlq.arn, maxReceiveCount }),
  })
  type Q = { url: string; arn: string }
  const specs: { name: string; uri: string; table: Table; queue: Q; dlq: Q; commitQueue: Q; commitDlq: Q }[] = []
  for (const t of opts.tables) {
    const store = new S3Store({ bucket, prefix: `tables/${t.name}`, client: backend.s3Client() })
    const table = await Table.create(store, t.schema)
    const dlq = await createQueue(sqs, `strata-${t.name}-compaction-dlq.fifo`, { FifoQueue: 'true' })
    const queue = await createQueue(sqs, `strata-${t.name}-compaction.fifo`, {
      FifoQueue: 'true',
      VisibilityTimeout: visibility,
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: dlq.arn, maxReceiveCount }),
    })
    const commitDlq = await createQueue(sqs, `strata-${t.name}-commit-dlq.fifo`, { FifoQueue: 'true' })
    const commitQueue = await createQueue(sqs, `strata-${t.name}-commit.fifo`, {
      FifoQueue: 'true',
      VisibilityTimeout: visibility,
      RedrivePolicy: JSON.stringify({ deadLetterTargetArn: commitDlq.arn, maxReceiveCount }),
    })
    specs.push({ name: t.name, uri: `s3://${bucket}/tables/${t.name}`, table, queue, dlq, commitQueue, commitDlq })
  }
  const feed = opts.feed ? await createQueue(sqs, 'strata-commit-feed', {}) : undefined
  const env: Record<string, string> = {
    ...FUNCTION_PROCESS_ENVIRONMENT,
    ...handlerEnvironment(backend, Object.fromEntries(specs.map((s) => [s.name, { uri: s.uri, compactionQueueUrl: s.queue.url, commitQueueUrl: s.commitQueue.url, taskThreads: s.table.view.options.compactionTaskThreads }]))),
    STRATA_REJECT_URI: `s3://${bucket}/rejects`,
    ...opts.env,
  }

  // environments load their handlers bundled, as deployed (unless LOCAL_HANDLER_BUNDLES says otherwise)
  await ensureHandlerBundles([opts.writerModule ?? join(FUNCTIONS, 'writer.ts'), opts.compactorModule ?? join(FUNCTIONS, 'compactor.ts'), opts.committerModule ?? join(FUNCTIONS, 'committer.ts')])
  const writerPool = new ExecutionEnvironmentPool({
    handlerModule: opts.writerModule ?? join(FUNCTIONS, 'writer.ts'),
    env: { ...env, AWS_LAMBDA_FUNCTION_NAME: 'strata-writer', AWS_SDK_UA_APP_ID: CALLER.writer },
    maxEnvironments: opts.writerConcurrency ?? 2,
    memoryLimitInMB: FUNCTION_MEMORY_MB.writer,
    timeoutMs: opts.timeoutMs,
    isolation: opts.isolation,
  })
  const writer = new EventSourcePoller({
    sqs: pollerSqs(CALLER.writer),
    queueUrl: ingest.url,
    region: backend.region,
    pool: writerPool,
    batchSize: opts.writerBatchSize ?? 500,
    maxBatchingWindowMs: opts.writerBatchingWindowMs ?? 1000,
    maxConcurrency: opts.writerConcurrency ?? 2,
    onInvocation: opts.onWriterInvocation,
  })
  const tables = new Map<string, LocalTable>()
  for (const [index, s] of specs.entries()) {
    const taskThreads = s.table.view.options.compactionTaskThreads
    // as deployed: the event source's maxConcurrency, and the function's reserved
    // concurrency past which the local event source is throttled as Lambda's would be
    const cap = compactorConcurrency(taskThreads)
    // one table function: its execution environments behind an event source on its queue
    const tableFunction = (kind: 'compactor' | 'committer', module: string, queueUrl: string, batchSize: number, concurrency: number, reserved: number | null, onInvocation?: LocalRuntimeOptions['onCompactorInvocation']) => {
      const onLog = kind === 'compactor' ? opts.onCompactorLog : undefined
      const appId = kind === 'compactor' ? CALLER.compactor(index) : CALLER.committer(index)
      const pool = new ExecutionEnvironmentPool({
        handlerModule: module,
        env: {
          ...env,
          STRATA_TABLE: s.name,
          AWS_LAMBDA_FUNCTION_NAME: `strata-${s.name}-${kind}`,
          AWS_SDK_UA_APP_ID: appId,
          ...(kind === 'committer' && feed ? { STRATA_FEED_QUEUE_URL: feed.url } : {}),
          ...(onLog ? { POWERTOOLS_LOG_LEVEL: 'INFO' } : {}),
        },
        ...(onLog ? { onLogLine: (line: string) => onLog(s.name, line) } : {}),
        maxEnvironments: reserved ?? concurrency,
        memoryLimitInMB: FUNCTION_MEMORY_MB[kind],
        timeoutMs: opts.timeoutMs,
        isolation: opts.isolation,
      })
      const poller = new EventSourcePoller({
        sqs: pollerSqs(appId), queueUrl, region: backend.region, pool, batchSize, maxConcurrency: concurrency, reservedConcurrency: reserved,
        onInvocation: onInvocation ? (info) => onInvocation(s.name, info) : undefined,
      })
      return { pool, poller }
    }
    const { pool, poller } = tableFunction('compactor', opts.compactorModule ?? join(FUNCTIONS, 'compactor.ts'), s.queue.url, opts.compactorBatchSize ?? 10, cap.maxConcurrency, cap.reservedConcurrency ?? null, opts.onCompactorInvocation)
    const committer = tableFunction('committer', opts.committerModule ?? join(FUNCTIONS, 'committer.ts'), s.commitQueue.url, 10, opts.committerConcurrency ?? 2, null, opts.onCommitterInvocation)
    const committerPool = committer.pool
    const committerPoller = committer.poller
    tables.set(s.name, {
      name: s.name, uri: s.uri, table: s.table, compactionQueueUrl: s.queue.url, dlqUrl: s.dlq.url, commitQueueUrl: s.commitQueue.url, commitDlqUrl: s.commitDlq.url,
      taskThreads, poller, pool, committerPoller, committerPool,
    })
  }
  for (const t of tables.values()) t.committerPoller.start()
  writer.start()
  for (const t of tables.values()) t.poller.start()

  return {
    backend,
    sqs,
    bucket,
    ingestQueueUrl: ingest.url,
    ingestDlqUrl: ingestDlq.url,
    tables,
    writer,
    writerPool,
    env,
    feedQueueUrl: feed?.url,
    async send(bodies) {
      for (let i = 0; i < bodies.length; i += 10) {
        await upstream.send(new SendMessageBatchCommand({ QueueUrl: ingest.url, Entries: bodies.slice(i, i + 10).map((b, j) => ({ Id: String(j), MessageBody: b })) }))
      }
    },
    async queueDepth(url) {
      const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }))
      return Number(a.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
    },
    async stop() {
      await writer.stop()
      for (const t of tables.values()) await t.poller.stop()
      for (const t of tables.values()) await t.committerPoller.stop()
      await writerPool.close()
      for (const t of tables.values()) await t.pool.close()
      for (const t of tables.values()) await t.committerPool.close()
      sqs.destroy()
      upstream.destroy()
      for (const c of pollerClients) c.destroy()
      await backend.stop()
    },
  }
}
