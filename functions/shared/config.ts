// Runtime configuration of the Lambda functions, from the environment: parsed once,
// typed, and failing fast with a message that names the variable.
//
// STRATA_TABLES: JSON object, table name → { "uri": "s3://bucket/prefix",
//   "compactionQueueUrl": "https://sqs…/x.fifo", "commitQueueUrl": "https://sqs…/y.fifo" }.
//   With commitQueueUrl, writers and compactors commit through the table's committer
//   (lib/commit/queued-committer.ts); without it they create snapshots directly. One writer may serve several tables;
//   a record names its table with "_table" unless exactly one table is configured.
// STRATA_REJECT_URI: where rejected records go, e.g. s3://bucket/rejects (default
//   `<first table's bucket>/_rejects`).
// STRATA_TABLE: for the compactor and maintenance functions, the one table they serve
//   (its name in STRATA_TABLES); optional when only one table is configured.
// STRATA_FEED_QUEUE_URL: committer: the commit feed's SQS queue (lib/commit/commit-feed.ts);
//   unset, no events are published.

import { StrataInputError } from '../../lib/errors.ts'
import { DEFAULT_FOOTER_CACHE_BYTES } from '../../lib/handle/table.ts'

export interface TableConfig {
  name: string
  uri: string
  compactionQueueUrl?: string
  commitQueueUrl?: string
  /**
   * `compaction.task-threads` as deployed (the stack's concurrency mapping); when set it
   * decides the jobs' message groups, else the stored schema's option does
   */
  taskThreads?: number
}

export interface RuntimeConfig {
  tables: Map<string, TableConfig>
  rejectUri: string
  /** the table a compactor/maintenance function serves */
  table?: string
  /** writer: how far back a redelivered batch looks for its own earlier commit */
  dedupWindowMs: number
  /** reader: most rows one response returns */
  maxResultRows: number
  /** writer and compactor: how long to wait for the committer to land a commit */
  commitTimeoutMs: number
  /** committer: most messages one invocation folds (the invoked batch plus what it drains) */
  commitDrainMax: number
  /** committer: how long one invocation keeps folding rounds while its queue has more (0: one round) */
  commitRoundsMs: number
  /** committer: one invocation folds at a time, the others forward their batches (lib/commit/committer-lease.ts); STRATA_COMMITTER_LEASE=off turns it off */
  committerLease: boolean
  /** every function: bound of a table handle's metadata cache, in bytes of memory */
  metadataCacheBytes: number
  /** every function: bound of a table handle's data-file footer cache, in bytes of memory */
  footerCacheBytes: number
  /** maintenance: a bucket whose oldest level-0 file is older than this gets a job (lib/jobs/coalesce.ts stalledBucketJobs) */
  stalledBucketMs: number
  /** committer: the commit feed's queue URL (lib/commit/commit-feed.ts); absent, no feed */
  feedQueueUrl?: string
}

export class ConfigError extends StrataInputError {
  override name = 'ConfigError'
}

export function parseConfig(env: Record<string, string | undefined> = process.env): RuntimeConfig {
  const raw = env.STRATA_TABLES
  if (!raw) throw new ConfigError('environment variable STRATA_TABLES is not set; expected JSON like {"orders":{"uri":"s3://bucket/orders","compactionQueueUrl":"…"}}')
  let obj: unknown
  try {
    obj = JSON.parse(raw)
  } catch (e) {
    throw new ConfigError(`environment variable STRATA_TABLES is not valid JSON (${(e as Error).message})`)
  }
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj) || Object.keys(obj).length === 0) {
    throw new ConfigError('environment variable STRATA_TABLES: expected a non-empty JSON object of table name → {"uri", "compactionQueueUrl"}')
  }
  const tables = new Map<string, TableConfig>()
  for (const [name, v] of Object.entries(obj as Record<string, unknown>)) {
    const t = v as Record<string, unknown>
    if (typeof t?.uri !== 'string' || t.uri.length === 0) {
      throw new ConfigError(`environment variable STRATA_TABLES: table '${name}' needs a "uri" string, got ${JSON.stringify(t?.uri)}`)
    }
    if (t.compactionQueueUrl !== undefined && typeof t.compactionQueueUrl !== 'string') {
      throw new ConfigError(`environment variable STRATA_TABLES: table '${name}' "compactionQueueUrl" must be a string, got ${JSON.stringify(t.compactionQueueUrl)}`)
    }
    if (t.commitQueueUrl !== undefined && typeof t.commitQueueUrl !== 'string') {
      throw new ConfigError(`environment variable STRATA_TABLES: table '${name}' "commitQueueUrl" must be a string, got ${JSON.stringify(t.commitQueueUrl)}`)
    }
    if (t.taskThreads !== undefined && !(Number.isInteger(t.taskThreads) && ((t.taskThreads as number) >= 1 || t.taskThreads === -1))) {
      throw new ConfigError(`environment variable STRATA_TABLES: table '${name}' "taskThreads" must be -1 or an integer >= 1, got ${JSON.stringify(t.taskThreads)}`)
    }
    tables.set(name, { name, uri: t.uri, compactionQueueUrl: t.compactionQueueUrl as string | undefined, commitQueueUrl: t.commitQueueUrl as string | undefined, taskThreads: t.taskThreads as number | undefined })
  }
  const first = [...tables.values()][0]
  const defaultReject = first.uri.startsWith('s3://') ? `s3://${first.uri.slice(5).split('/')[0]}/_rejects` : `${first.uri.replace(/\/+$/, '')}-rejects`
  const table = env.STRATA_TABLE ?? (tables.size === 1 ? first.name : undefined)
  if (table !== undefined && !tables.has(table)) {
    throw new ConfigError(`environment variable STRATA_TABLE names '${table}', which is not in STRATA_TABLES (${[...tables.keys()].join(', ')})`)
  }
  const int = (name: string, def: number) => {
    const v = env[name]
    if (v === undefined || v === '') return def
    if (!/^\d+$/.test(v)) throw new ConfigError(`environment variable ${name}: expected a non-negative integer, got ${JSON.stringify(v)}`)
    return Number(v)
  }
  const onOff = (name: string, def: boolean) => {
    const v = env[name]
    if (v === undefined || v === '') return def
    if (v !== 'on' && v !== 'off') throw new ConfigError(`environment variable ${name}: expected "on" or "off", got ${JSON.stringify(v)}`)
    return v === 'on'
  }
  return {
    tables,
    rejectUri: env.STRATA_REJECT_URI ?? defaultReject,
    table,
    dedupWindowMs: int('STRATA_DEDUP_WINDOW_MS', 6 * 3600_000),
    maxResultRows: int('STRATA_MAX_RESULT_ROWS', 1000),
    commitTimeoutMs: int('STRATA_COMMIT_TIMEOUT_MS', 90_000),
    commitDrainMax: Math.max(1, int('STRATA_COMMIT_DRAIN_MAX', 1000)),
    commitRoundsMs: int('STRATA_COMMIT_ROUNDS_MS', 20_000),
    committerLease: onOff('STRATA_COMMITTER_LEASE', true),
    metadataCacheBytes: Math.max(0, int('STRATA_METADATA_CACHE_MB', 32)) * 1024 * 1024,
    footerCacheBytes: Math.max(0, int('STRATA_FOOTER_CACHE_MB', DEFAULT_FOOTER_CACHE_BYTES / (1024 * 1024))) * 1024 * 1024,
    // SQS FIFO's deduplication window: a job dropped as a duplicate is sent again by then
    stalledBucketMs: int('STRATA_STALLED_BUCKET_MS', 300_000),
    feedQueueUrl: feedQueueUrl(env.STRATA_FEED_QUEUE_URL),
  }
}

function feedQueueUrl(v: string | undefined): string | undefined {
  if (v === undefined || v === '') return undefined
  if (!/^https?:\/\/\S+$/.test(v)) throw new ConfigError(`environment variable STRATA_FEED_QUEUE_URL: expected an SQS queue URL (https://sqs.<region>.amazonaws.com/<account>/<name>), got ${JSON.stringify(v)}`)
  return v
}
