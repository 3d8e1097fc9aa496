// The deployment configuration: which tables the stack serves (name, schema, options), where
// ingest events come from, and the knobs of the functions, bucket and alarms. Read from a
// JSON file (cdk/strata.config.json unless `-c config=path`) or from the CDK context key
// `strata`, and validated before any resource is built: an unknown key, an ill-typed value or
// a table schema that `strata create` would refuse fails synth with a message that names the
// field, the value and what was expected (a typo is an error, not a default).

import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { coreOptions } from '../lib/table/options.ts'
import { createSchema } from '../lib/table/schema.ts'
import { DEFAULT_DATABASE, checkDatabaseName } from '../lib/table/warehouse.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { TableSchema } from '../lib/types.ts'
import { DEFAULT_UNBOUNDED_MAX_CONCURRENCY, MAX_EVENT_SOURCE_CONCURRENCY, MIN_EVENT_SOURCE_CONCURRENCY } from './concurrency.ts'


export class DeployConfigError extends StrataInputError {
  override name = 'DeployConfigError'
}

export interface FunctionSettings {
  memoryMb: number
  timeoutSeconds: number
}

export interface SqsIngest {
  type: 'sqs'
  batchSize: number
  maxBatchingWindowSeconds: number
  /** event-source maxConcurrency of the writer: concurrent writer invocations (default 8) */
  maxConcurrency: number
}

export interface KinesisIngest {
  type: 'kinesis'
  streamArn: string
  startingPosition: 'TRIM_HORIZON' | 'LATEST'
  batchSize: number
  maxBatchingWindowSeconds: number
  parallelizationFactor: number
  /** retries of a failing batch before its metadata goes to the on-failure queue */
  retryAttempts: number
  /** KMS key of a stream encrypted with a customer-managed key */
  kmsKeyArn?: string
}

export type IngestConfig = SqsIngest | KinesisIngest

export interface TableDeployConfig {
  name: string
  /** the schema JSON as written in the config, stored by the table-init resource */
  schemaInput: Record<string, unknown>
  /** the same, validated by createSchema */
  schema: TableSchema
  /** `compaction.task-threads` of the table: 1, N >= 2, or -1 */
  taskThreads: number
  compactor: FunctionSettings & {
    reservedConcurrency?: number
    /** the event source's maxConcurrency at task-threads -1 (default 100); undefined otherwise */
    maxConcurrency?: number
  }
  /**
   * The table's committer (functions/committer.ts), fed by its commit FIFO queue: the one
   * path by which the table's writes and compactions become snapshots.
   */
  committer: FunctionSettings
  alarms: { freshnessLagMinutes: number; l0FileCount: number; commitQueueAgeSeconds: number }
  /** the table's database in the warehouse (`<warehouse>/<database>.db/<name>`); `default` unless configured, used only with `warehouse` */
  database: string
  /** the table registered in the AWS Glue Data Catalog as an Iceberg table (docs/operations.md "Registering tables in AWS Glue") */
  glue?: GlueRegistration
}

/** A table's Glue registration: where the committer keeps the table's metadata_location. */
export interface GlueRegistration {
  /** the Glue database */
  database: string
  /** the stack creates the database (AWS::Glue::Database) rather than finding it by name */
  createDatabase: boolean
  /** the Glue table's name */
  tableName: string
  /** at most one UpdateTable per this many seconds while the committer folds (it always moves the pointer before it returns) */
  updateIntervalSeconds: number
}

export interface DeployConfig {
  stackName: string
  /**
   * A key prefix of the bucket holding the tables as a Paimon warehouse, each table at
   * `<warehouse>/<database>.db/<name>/`; absent, each table is at `tables/<name>/`.
   */
  warehouse?: string
  tables: TableDeployConfig[]
  ingest: IngestConfig
  bucket: {
    rejectRetentionDays: number
    versioned: boolean
    noncurrentVersionRetentionDays: number
    accessLogs: boolean
    accessLogRetentionDays: number
  }
  functions: {
    writer: FunctionSettings
    reader: FunctionSettings & { maxResultRows: number }
    maintenance: FunctionSettings & { scheduleMinutes: number; orphanScheduleHours: number }
    logRetentionDays: number
    logLevel: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR'
  }
  alarms: {
    /** an existing SNS topic for every alarm; without it the stack creates an encrypted one */
    topicArn?: string
    /** an e-mail address subscribed to the topic the stack creates */
    email?: string
    /** ingest age alarm: oldest ingest message (SQS) or the writer's iterator age (Kinesis) */
    ingestAgeSeconds: number
  }
  /**
   * The commit feed (lib/commit/commit-feed.ts): a standard SQS queue the committers publish
   * one event to per fold that created snapshots. On unless `enabled: false`.
   */
  feed: {
    enabled: boolean
    retentionDays: number
    /**
     * Forward every event to an EventBridge bus through an EventBridge Pipe: 'create' (a
     * custom bus `<stackName>-commits`) or an existing bus's ARN; absent, no pipe.
     */
    eventBus?: string
  }
}

/** CloudWatch Logs accepts only these retention periods (RetentionDays in aws-cdk-lib). */
export const LOG_RETENTION_DAYS = [1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653]

/**
 * How long a table's commit queue keeps a message: 12 h, under orphan cleanup's default age
 * (1 day), since an older message may name data files that cleanup has already removed as
 * unreferenced.
 */
export const COMMIT_QUEUE_RETENTION_SECONDS = 12 * 3600

/**
 * The compactor's timeout unless configured. A batch holds at most 10 buckets, compacted 4
 * at once; a full compaction of a 1M-row bucket takes about 6 s of one core
 * (docs/benchmarks.md), so even a batch of ten such buckets on the default 3008 MB (about
 * 1.7 vCPUs) is well under a minute, and an ordinary incremental compaction is a fraction of
 * a second. The compaction queue's visibility timeout is 6 × this (720 s).
 */
export const COMPACTOR_TIMEOUT_SECONDS = 120

/**
 * Environment every Strata function's process starts with, in the stack and in the local
 * runtime alike. glibc reads it once, at process start.
 *
 * MALLOC_MMAP_THRESHOLD_: allocations of 128 KiB and more (a compaction's page and column
 * buffers) are always mapped, and returned to the system when freed. Unset, glibc raises the
 * threshold to the largest such block freed so far (up to 32 MiB), and from then on serves
 * blocks of that size from its heap, which keeps their high-water mark resident: the likely
 * cause of a warm compactor's RSS stepping up by 18–22 MB and staying there (soak runs ac
 * and af, docs/reliability.md; not seen in the runs with it fixed). Fixed at 128 KiB (glibc's starting value) it costs about
 * 5% of a compaction's CPU and saves about 10 MB of its peak RSS (docs/benchmarks.md, "What a
 * fixed mmap threshold costs a compaction").
 */
export const FUNCTION_PROCESS_ENVIRONMENT: Readonly<Record<string, string>> = { MALLOC_MMAP_THRESHOLD_: '131072' }

/** Each function's memory unless configured (the local runtime enforces the same on its worker threads). */
export const DEFAULT_MEMORY_MB = { writer: 1024, reader: 1024, maintenance: 1024, compactor: 3008, committer: 1024 } as const

/**
 * The writer's event-source maxConcurrency unless configured: every commit of a table goes
 * through its one committer path (about 40 commits/s measured with 32 concurrent writers at
 * 20 ms S3 latency, docs/benchmarks.md "Commit contention") and a writer commit touches many
 * buckets, each of which becomes a compaction job; 8 writers leave that path and the
 * compaction queues headroom instead of flooding them.
 */
export const WRITER_MAX_CONCURRENCY = 8

/** The ingest age alarm's threshold unless configured. */
export const INGEST_AGE_SECONDS = 300

const TABLE_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,62}$/
// key segments of S3's safe characters, no leading, trailing or doubled '/'
const WAREHOUSE = /^[A-Za-z0-9_.-]+(?:\/[A-Za-z0-9_.-]+)*$/
// Athena's rule for database and table names: lowercase letters, digits and underscores
const GLUE_NAME = /^[a-z0-9_]{1,255}$/
/** The UpdateTable interval unless configured (lib/iceberg/glue-pointer.ts DEFAULT_GLUE_UPDATE_INTERVAL_MS). */
const GLUE_UPDATE_INTERVAL_SECONDS = 10
/** Paimon's option that turns the Iceberg metadata on, and the one value a Glue registration points at. */
const ICEBERG_STORAGE_OPTION = 'metadata.iceberg.storage'
const ICEBERG_TABLE_LOCATION = 'table-location'
/**
 * Off under a Glue registration: on, each commit deletes the metadata version before the
 * previous one, while Glue (moved at most once per interval) and Athena queries in flight may
 * still read it. Off, a version goes with snapshot expiration (lib/maintenance/expire.ts).
 */
const ICEBERG_DELETE_AFTER_COMMIT_OPTION = 'metadata.iceberg.delete-after-commit.enabled'
/** On by default under a Glue registration (Athena); a table may set it 'false'. */
const ICEBERG_LEGACY_MANIFEST_OPTION = 'metadata.iceberg.manifest-legacy-version'
const KINESIS_ARN = /^arn:aws[a-z-]*:kinesis:[a-z0-9-]+:\d{12}:stream\/[A-Za-z0-9_.-]{1,128}$/
const KMS_ARN = /^arn:aws[a-z-]*:kms:[a-z0-9-]+:\d{12}:(key|alias)\/[A-Za-z0-9/_-]+$/
const SNS_ARN = /^arn:aws[a-z-]*:sns:[a-z0-9-]+:\d{12}:[A-Za-z0-9_-]{1,256}$/
const STACK_NAME = /^[A-Za-z][A-Za-z0-9-]{0,127}$/
const EVENT_BUS = /^(?:create|arn:aws[a-z-]*:events:[a-z0-9-]+:\d{12}:event-bus\/[A-Za-z0-9._\-/]{1,256})$/
// one address, no display name or list; what SNS's email protocol takes
const EMAIL = /^(?=.{3,254}$)[A-Za-z0-9.!#$%&'*+\/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/

/**
 * How errors name a path of the config: the config's own path, or (typed CDK props mapped
 * onto the config, cdk/props.ts) the prop it came from.
 */
export type PathNames = (path: string) => string

/** Walks one object of the config, checking its keys and typing its values, naming paths. */
class Section {
  constructor(
    private readonly obj: Record<string, unknown>,
    private readonly path: string,
    private readonly where: string,
    private readonly names: PathNames = (p) => p,
  ) {}

  /** `removed`: keys no longer accepted, each with why; one that is set fails naming its value. */
  static of(value: unknown, path: string, where: string, keys: string[], removed: Record<string, string> = {}, names: PathNames = (p) => p): Section {
    if (value === undefined) value = {}
    if (typeof value !== 'object' || value === null || Array.isArray(value)) {
      throw new DeployConfigError(`${where}: ${path ? names(path) : 'the config'}: expected an object, got ${JSON.stringify(value)}`)
    }
    const obj = value as Record<string, unknown>
    const section = new Section(obj, path, where, names)
    for (const [k, why] of Object.entries(removed)) {
      if (obj[k] !== undefined) section.fail(k, `no value: ${why}`)
    }
    for (const k of Object.keys(obj)) {
      if (!keys.includes(k)) {
        throw new DeployConfigError(`${where}: unknown key '${section.name(k)}'; expected one of ${keys.join(', ')}`)
      }
    }
    return section
  }

  name(key: string): string {
    return this.names(this.path ? `${this.path}.${key}` : key)
  }

  raw(key: string): unknown {
    return this.obj[key]
  }

  error(message: string): never {
    throw new DeployConfigError(`${this.where}: ${message}`)
  }

  /** How errors name the path of a nested section (`tables[0]`). */
  named(path: string): string {
    return this.names(path)
  }

  fail(key: string, expected: string): never {
    throw new DeployConfigError(`${this.where}: ${this.name(key)}: invalid value ${JSON.stringify(this.obj[key])}, expected ${expected}`)
  }

  int(key: string, def: number | undefined, min: number, max: number): number {
    const v = this.obj[key]
    if (v === undefined) {
      if (def === undefined) this.fail(key, `an integer in ${min}..${max} (required)`)
      return def
    }
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) this.fail(key, `an integer in ${min}..${max}`)
    return v
  }

  optionalInt(key: string, min: number, max: number): number | undefined {
    return this.obj[key] === undefined ? undefined : this.int(key, undefined, min, max)
  }

  bool(key: string, def: boolean): boolean {
    const v = this.obj[key]
    if (v === undefined) return def
    if (typeof v !== 'boolean') this.fail(key, 'true or false')
    return v
  }

  string(key: string, pattern: RegExp, what: string): string {
    const v = this.obj[key]
    if (typeof v !== 'string' || !pattern.test(v)) this.fail(key, what)
    return v
  }

  optionalString(key: string, pattern: RegExp, what: string): string | undefined {
    return this.obj[key] === undefined ? undefined : this.string(key, pattern, what)
  }

  oneOf<T extends string>(key: string, values: readonly T[], def: T): T {
    const v = this.obj[key]
    if (v === undefined) return def
    if (typeof v !== 'string' || !values.includes(v as T)) this.fail(key, `one of ${values.join(', ')}`)
    return v as T
  }

  section(key: string, keys: string[], removed: Record<string, string> = {}): Section {
    return Section.of(this.obj[key], this.path ? `${this.path}.${key}` : key, this.where, keys, removed, this.names)
  }
}

function functionSettings(s: Section, memoryMb: number, timeoutSeconds: number): FunctionSettings {
  return {
    // Lambda: 128 MB to 10,240 MB of memory, timeouts up to 15 minutes
    memoryMb: s.int('memoryMb', memoryMb, 128, 10240),
    timeoutSeconds: s.int('timeoutSeconds', timeoutSeconds, 1, 900),
  }
}

function ingestConfig(s: Section): IngestConfig {
  const type = s.oneOf('type', ['sqs', 'kinesis'] as const, 'sqs')
  return type === 'sqs' ? sqsIngest(s) : kinesisIngest(s)
}

/**
 * The writer's SQS event source unless configured: records per invocation, and how long the
 * mapping gathers them (the cost benchmark, bench/cost.ts, runs with these)
 */
export const DEFAULT_SQS_INGEST = { batchSize: 1000, maxBatchingWindowSeconds: 5 } as const

const SQS_INGEST_KEYS = ['type', 'batchSize', 'maxBatchingWindowSeconds', 'maxConcurrency']
const KINESIS_INGEST_KEYS = ['type', 'streamArn', 'startingPosition', 'batchSize', 'maxBatchingWindowSeconds', 'parallelizationFactor', 'retryAttempts', 'kmsKeyArn']

function sqsIngest(s: Section): SqsIngest {
  for (const k of KINESIS_INGEST_KEYS) {
    if (!SQS_INGEST_KEYS.includes(k) && s.raw(k) !== undefined) {
      s.error(`ingest.${k} applies to a Kinesis source only (ingest.type is "sqs")`)
    }
  }
  // a batch of more than 10 SQS messages needs a batching window (Lambda's rule)
  const batchSize = s.int('batchSize', DEFAULT_SQS_INGEST.batchSize, 1, 10000)
  const window = s.int('maxBatchingWindowSeconds', batchSize > 10 ? DEFAULT_SQS_INGEST.maxBatchingWindowSeconds : 0, 0, 300)
  if (batchSize > 10 && window < 1) s.fail('maxBatchingWindowSeconds', `at least 1 when ingest.batchSize (${batchSize}) is more than 10`)
  return {
    type: 'sqs',
    batchSize,
    maxBatchingWindowSeconds: window,
    maxConcurrency: s.int('maxConcurrency', WRITER_MAX_CONCURRENCY, MIN_EVENT_SOURCE_CONCURRENCY, MAX_EVENT_SOURCE_CONCURRENCY),
  }
}

function kinesisIngest(s: Section): KinesisIngest {
  if (s.raw('maxConcurrency') !== undefined) {
    s.error('ingest.maxConcurrency applies to an SQS source only; a Kinesis source scales with its shards and ingest.parallelizationFactor')
  }
  return {
    type: 'kinesis',
    streamArn: s.string('streamArn', KINESIS_ARN, 'a Kinesis stream ARN like arn:aws:kinesis:eu-west-1:123456789012:stream/events'),
    startingPosition: s.oneOf('startingPosition', ['TRIM_HORIZON', 'LATEST'] as const, 'TRIM_HORIZON'),
    batchSize: s.int('batchSize', 500, 1, 10000),
    maxBatchingWindowSeconds: s.int('maxBatchingWindowSeconds', 5, 0, 300),
    parallelizationFactor: s.int('parallelizationFactor', 1, 1, 10),
    retryAttempts: s.int('retryAttempts', 10, 0, 10000),
    kmsKeyArn: s.optionalString('kmsKeyArn', KMS_ARN, 'a KMS key ARN like arn:aws:kms:eu-west-1:123456789012:key/…'),
  }
}

/** A Glue table name from a Strata table name: Athena's names are lowercase, with `_` for `-`. */
function glueTableName(name: string): string {
  return name.toLowerCase().replace(/-/g, '_')
}

/** The table's `metadata.iceberg.storage` as configured, lowercased, or undefined. */
function icebergStorage(schemaInput: unknown): string | undefined {
  const options = (schemaInput as { options?: unknown } | null)?.options
  const v = options !== null && typeof options === 'object' ? (options as Record<string, unknown>)[ICEBERG_STORAGE_OPTION] : undefined
  return v === undefined ? undefined : String(v).trim().toLowerCase()
}

/**
 * The table's `database` (only in a warehouse) and `glue` sections, and the schema input with
 * the Iceberg storage a Glue registration needs: set when absent, any other value refused.
 */
function warehouseAndGlue(s: Section, name: string, warehouse: string | undefined, at: string): { database: string; glue?: GlueRegistration; schemaInput: Record<string, unknown> } {
  const raw = s.raw('schema')
  let schemaInput = raw as Record<string, unknown>
  if (s.raw('database') !== undefined && warehouse === undefined) s.fail('database', 'no value without warehouse (a table outside a warehouse is tables/<name>/ and has no database)')
  let database = DEFAULT_DATABASE
  if (s.raw('database') !== undefined) {
    try {
      database = checkDatabaseName(s.raw('database'))
    } catch (e) {
      s.fail('database', `a Paimon database name (${(e as Error).message})`)
    }
  }
  const storage = icebergStorage(raw)
  if (warehouse === undefined && storage !== undefined && storage !== 'disabled') {
    s.error(`${at ? `${at} ` : ''}('${name}'): option '${ICEBERG_STORAGE_OPTION}' ${JSON.stringify(storage)} needs the table in a warehouse (<warehouse>/<database>.db/<table>, Paimon's rule); set warehouse`)
  }
  if (s.raw('glue') === undefined) return { database, schemaInput }
  const g = s.section('glue', ['database', 'createDatabase', 'tableName', 'updateIntervalSeconds'])
  if (warehouse === undefined) {
    s.fail('glue', `no value without warehouse: Paimon writes a table's Iceberg metadata only for a table at <warehouse>/<database>.db/<table>`)
  }
  const options = { ...(((raw !== null && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>).options : undefined) ?? {}) as Record<string, unknown>) }
  // Paimon's name for the table in an Iceberg catalog, when the schema gives one
  const icebergTable = options['metadata.iceberg.table']
  if (g.raw('tableName') === undefined && icebergTable !== undefined && !GLUE_NAME.test(String(icebergTable))) {
    g.fail('tableName', `a Glue table name of lowercase letters, digits and _ (Athena's rule): the schema's option 'metadata.iceberg.table' ${JSON.stringify(icebergTable)} is not one, so give glue.tableName`)
  }
  const glue: GlueRegistration = {
    database: g.string('database', GLUE_NAME, 'a Glue database name of lowercase letters, digits and _ (Athena\'s rule; at most 255)'),
    createDatabase: g.bool('createDatabase', false),
    tableName: g.raw('tableName') !== undefined ? g.string('tableName', GLUE_NAME, 'a Glue table name of lowercase letters, digits and _ (Athena\'s rule; at most 255)') : icebergTable !== undefined ? String(icebergTable) : glueTableName(name),
    updateIntervalSeconds: g.int('updateIntervalSeconds', GLUE_UPDATE_INTERVAL_SECONDS, 0, 3600),
  }
  if (storage !== undefined && storage !== ICEBERG_TABLE_LOCATION) {
    s.fail('glue', `no value with option '${ICEBERG_STORAGE_OPTION}' ${JSON.stringify(storage)}: the Glue pointer follows the metadata Paimon writes with '${ICEBERG_TABLE_LOCATION}' (<table>/metadata/); set it to '${ICEBERG_TABLE_LOCATION}' or leave it out and the construct sets it`)
  }
  const deleteAfterCommit = options[ICEBERG_DELETE_AFTER_COMMIT_OPTION]
  if (deleteAfterCommit !== undefined && String(deleteAfterCommit).trim().toLowerCase() !== 'false') {
    s.fail('glue', `no value with option '${ICEBERG_DELETE_AFTER_COMMIT_OPTION}' ${JSON.stringify(deleteAfterCommit)}: each commit would delete a metadata version that Glue, moved at most once per interval, and Athena queries in flight may still read; leave it out (the construct sets 'false', and snapshot expiration removes old versions)`)
  }
  options[ICEBERG_STORAGE_OPTION] ??= ICEBERG_TABLE_LOCATION
  options[ICEBERG_DELETE_AFTER_COMMIT_OPTION] ??= 'false'
  // Athena reads manifest lists by Iceberg 1.4's field names; Paimon's Iceberg docs advise the
  // legacy spelling for it
  options[ICEBERG_LEGACY_MANIFEST_OPTION] ??= 'true'
  schemaInput = { ...(raw as Record<string, unknown>), options }
  return { database, glue, schemaInput }
}

function tableConfig(value: unknown, i: number, where: string, names: PathNames, warehouse?: string): TableDeployConfig {
  const s = Section.of(value, `tables[${i}]`, where, ['name', 'schema', 'compactor', 'committer', 'alarms', 'database', 'glue'], {}, names)
  const at = names(`tables[${i}]`)
  const name = s.string('name', TABLE_NAME, 'a name of letters, digits, _ and - starting with a letter (at most 63 characters)')
  const placed = warehouseAndGlue(s, name, warehouse, at)
  let schema: TableSchema
  try {
    // the timestamp is fixed so that synth is deterministic; the table-init resource stores
    // the schema with the time of the deployment that creates the table
    schema = createSchema(placed.schemaInput, 0)
  } catch (e) {
    if (e instanceof StrataInputError) throw new DeployConfigError(`${where}: ${at ? `${at} ` : ''}('${name}'): ${e.message}`)
    throw e
  }
  const options = coreOptions(schema.options)
  const taskThreads = options.compactionTaskThreads
  if (taskThreads > MAX_EVENT_SOURCE_CONCURRENCY) {
    throw new DeployConfigError(
      `${where}: ${at ? `${at} ` : ''}('${name}'): option 'compaction.task-threads': invalid value "${taskThreads}", expected -1 or 1..${MAX_EVENT_SOURCE_CONCURRENCY} (Lambda caps an SQS event source's maxConcurrency at ${MAX_EVENT_SOURCE_CONCURRENCY})`,
    )
  }
  const cs = s.section('compactor', ['memoryMb', 'timeoutSeconds', 'reservedConcurrency', 'maxConcurrency'])
  const compactor: TableDeployConfig['compactor'] = { ...functionSettings(cs, DEFAULT_MEMORY_MB.compactor, COMPACTOR_TIMEOUT_SECONDS) }
  if (cs.raw('maxConcurrency') !== undefined && taskThreads !== -1) {
    cs.fail('maxConcurrency', `no value: it applies only when compaction.task-threads is -1 (here ${taskThreads}, where the event source's maxConcurrency is ${taskThreads === 1 ? `${MIN_EVENT_SOURCE_CONCURRENCY}, with one message group per table` : `task-threads, ${taskThreads}`})`)
  }
  if (taskThreads === -1) {
    compactor.maxConcurrency = cs.int('maxConcurrency', DEFAULT_UNBOUNDED_MAX_CONCURRENCY, MIN_EVENT_SOURCE_CONCURRENCY, MAX_EVENT_SOURCE_CONCURRENCY)
  }
  const reserved = cs.optionalInt('reservedConcurrency', 1, 10000)
  if (reserved !== undefined) {
    if (taskThreads === 1) {
      cs.fail('reservedConcurrency', `no value: it applies only when compaction.task-threads is N >= 2 or -1 (here 1, which sets reserved concurrency 1)`)
    }
    if (taskThreads === -1) {
      if (reserved < compactor.maxConcurrency!) cs.fail('reservedConcurrency', `at least ${names(`tables[${i}].compactor.maxConcurrency`)} (${compactor.maxConcurrency}), or the event source's pollers are throttled`)
    } else if (reserved < taskThreads) {
      cs.fail('reservedConcurrency', `at least compaction.task-threads (${taskThreads}), or the event source's pollers are throttled`)
    }
    compactor.reservedConcurrency = reserved
  }
  // `enabled` switched the committer on while it was optional; a config that still sets it
  // is refused by name rather than deployed with another meaning
  const ms = s.section('committer', ['memoryMb', 'timeoutSeconds'], {
    enabled: 'the key was removed, every table now commits through its committer (its commit queue and committer function are always deployed); delete the key',
  })
  const committer = functionSettings(ms, DEFAULT_MEMORY_MB.committer, 60)
  const as = s.section('alarms', ['freshnessLagMinutes', 'l0FileCount', 'commitQueueAgeSeconds'])
  return {
    name,
    schemaInput: placed.schemaInput,
    schema,
    taskThreads,
    compactor,
    committer,
    alarms: {
      freshnessLagMinutes: as.int('freshnessLagMinutes', 30, 1, 10080),
      // past the stop trigger a bucket is back-pressured (num-sorted-run.stop-trigger)
      l0FileCount: as.int('l0FileCount', options.stopTrigger, 1, 100000),
      // writers and compactors wait for their commit; at most the commit queue's retention
      commitQueueAgeSeconds: as.int('commitQueueAgeSeconds', 60, 1, COMMIT_QUEUE_RETENTION_SECONDS),
    },
    database: placed.database,
    ...(placed.glue ? { glue: placed.glue } : {}),
  }
}

/**
 * Validates a parsed config object; `where` names its source in every error, `names` how
 * an error names a path of it (the CDK construct's props name their own).
 */
export function parseDeployConfig(value: unknown, where = 'strata config', names: PathNames = (p) => p): DeployConfig {
  const top = Section.of(value, '', where, ['stackName', 'tables', 'ingest', 'bucket', 'functions', 'alarms', 'feed', 'warehouse'], {}, names)
  const rawTables = top.raw('tables')
  if (!Array.isArray(rawTables) || rawTables.length === 0) {
    top.fail('tables', 'a non-empty array of {"name", "schema"}')
  }
  const warehouse = warehousePrefix(top)
  const tables = (rawTables as unknown[]).map((t, i) => tableConfig(t, i, where, names, warehouse))
  const seen = new Set<string>()
  for (const [i, t] of tables.entries()) {
    // table names become construct ids (`page_views` → TablePageViews): compare them as such
    const key = t.name.toLowerCase().replace(/[-_]/g, '')
    if (seen.has(key)) throw new DeployConfigError(`${where}: ${names(`tables[${i}].name`)}: '${t.name}' clashes with another table's name (names must differ in more than case, '-' and '_')`)
    seen.add(key)
  }
  const ingest = ingestConfig(top.section('ingest', [...new Set([...SQS_INGEST_KEYS, ...KINESIS_INGEST_KEYS])]))
  const b = top.section('bucket', ['rejectRetentionDays', 'versioned', 'noncurrentVersionRetentionDays', 'accessLogs', 'accessLogRetentionDays'])
  const f = top.section('functions', ['writer', 'reader', 'maintenance', 'logRetentionDays', 'logLevel'])
  const reader = f.section('reader', ['memoryMb', 'timeoutSeconds', 'maxResultRows'])
  const maintenance = f.section('maintenance', ['memoryMb', 'timeoutSeconds', 'scheduleMinutes', 'orphanScheduleHours'])
  const logRetentionDays = f.int('logRetentionDays', 30, 1, 3653)
  if (!LOG_RETENTION_DAYS.includes(logRetentionDays)) f.fail('logRetentionDays', `one of ${LOG_RETENTION_DAYS.join(', ')} (CloudWatch Logs retention periods)`)
  const maintenanceTimeout = maintenance.int('timeoutSeconds', 300, 1, 900)
  const scheduleMinutes = maintenance.int('scheduleMinutes', 15, 1, 1440)
  // orphan cleanup deletes only files older than 13 h (1 day by default), so a run every few
  // hours finds what one with every expiration would, a few hours later, at a fraction of the reads
  const orphanScheduleHours = maintenance.int('orphanScheduleHours', 6, 1, 168)
  if (maintenanceTimeout >= scheduleMinutes * 60) {
    // so that two runs of one table's maintenance never overlap
    maintenance.fail('timeoutSeconds', `less than functions.maintenance.scheduleMinutes × 60 (${scheduleMinutes * 60})`)
  }
  const a = top.section('alarms', ['topicArn', 'email', 'ingestAgeSeconds'])
  const topicArn = a.optionalString('topicArn', SNS_ARN, 'an SNS topic ARN like arn:aws:sns:eu-west-1:123456789012:alarms')
  const email = a.optionalString('email', EMAIL, 'one e-mail address like ops@example.com')
  if (email !== undefined && topicArn !== undefined) {
    a.fail('email', 'no value when alarms.topicArn is set: subscribe the address to that topic where the topic is managed (the stack subscribes it only to the topic it creates)')
  }
  const feed = top.section('feed', ['enabled', 'retentionDays', 'eventBus'])
  const feedEnabled = feed.bool('enabled', true)
  const eventBus = feed.optionalString('eventBus', EVENT_BUS, `"create" (a custom bus the stack makes) or an EventBridge bus ARN like arn:aws:events:eu-west-1:123456789012:event-bus/commits`)
  if (eventBus !== undefined && !feedEnabled) feed.fail('eventBus', 'no value when feed.enabled is false (the bus is fed from the feed queue)')
  const config: DeployConfig = {
    ...(warehouse !== undefined ? { warehouse } : {}),
    feed: { enabled: feedEnabled, retentionDays: feed.int('retentionDays', 4, 1, 14), ...(eventBus !== undefined ? { eventBus } : {}) },
    stackName: top.raw('stackName') === undefined ? 'Strata' : top.string('stackName', STACK_NAME, 'a CloudFormation stack name (letters, digits and -, starting with a letter)'),
    tables,
    ingest,
    bucket: {
      rejectRetentionDays: b.int('rejectRetentionDays', 30, 1, 36500),
      versioned: b.bool('versioned', false),
      noncurrentVersionRetentionDays: b.int('noncurrentVersionRetentionDays', 7, 1, 36500),
      accessLogs: b.bool('accessLogs', true),
      accessLogRetentionDays: b.int('accessLogRetentionDays', 90, 1, 36500),
    },
    functions: {
      writer: functionSettings(f.section('writer', ['memoryMb', 'timeoutSeconds']), DEFAULT_MEMORY_MB.writer, 120),
      reader: { ...functionSettings(reader, DEFAULT_MEMORY_MB.reader, 30), maxResultRows: reader.int('maxResultRows', 1000, 1, 1_000_000) },
      maintenance: { ...functionSettings(maintenance, DEFAULT_MEMORY_MB.maintenance, 300), scheduleMinutes, orphanScheduleHours },
      logRetentionDays,
      logLevel: f.oneOf('logLevel', ['DEBUG', 'INFO', 'WARN', 'ERROR'] as const, 'INFO'),
    },
    alarms: {
      topicArn,
      email,
      // up to Kinesis's longest retention (365 days); SQS keeps messages at most 14 days
      ingestAgeSeconds: a.int('ingestAgeSeconds', INGEST_AGE_SECONDS, 1, 365 * 86400),
    },
  }
  return config
}

/**
 * The warehouse key prefix, without slashes at its ends; not under `rejects/`, whose objects
 * expire (cdk/constructs/storage.ts REJECTS_PREFIX).
 */
function warehousePrefix(top: Section): string | undefined {
  if (top.raw('warehouse') === undefined) return undefined
  const w = top.string('warehouse', WAREHOUSE, "a key prefix of the bucket such as 'warehouse' or 'lake/prod' (letters, digits, '_', '.', '-' in segments between single '/')")
  if (w.split('/').some((seg) => seg === '.' || seg === '..')) top.fail('warehouse', "a key prefix without '.' or '..' segments")
  if (w === 'rejects' || w.startsWith('rejects/')) top.fail('warehouse', "a prefix outside 'rejects/' (rejected records there expire)")
  return w
}

/** Reads and validates a config file. */
export function loadDeployConfig(path: string): DeployConfig {
  const abs = resolve(path)
  let text: string
  try {
    text = readFileSync(abs, 'utf8')
  } catch (e) {
    throw new DeployConfigError(`strata config ${path}: cannot read it (${(e as Error).message}); pass another file with -c config=path`)
  }
  let json: unknown
  try {
    json = JSON.parse(text)
  } catch (e) {
    throw new DeployConfigError(`strata config ${path}: not valid JSON (${(e as Error).message})`)
  }
  return parseDeployConfig(json, `strata config ${path}`)
}

export const DEFAULT_CONFIG_PATH = 'cdk/strata.config.json'

/**
 * The config from CDK context: `strata` (an object, or a JSON string as `-c strata='{…}'`
 * passes it) wins; otherwise the file named by `config`, else cdk/strata.config.json.
 */
export function configFromContext(get: (key: string) => unknown): DeployConfig {
  const inline = get('strata')
  if (inline !== undefined) {
    let value = inline
    if (typeof inline === 'string') {
      try {
        value = JSON.parse(inline)
      } catch (e) {
        throw new DeployConfigError(`strata config (context 'strata'): not valid JSON (${(e as Error).message})`)
      }
    }
    return parseDeployConfig(value, "strata config (context 'strata')")
  }
  const path = get('config')
  if (path !== undefined && (typeof path !== 'string' || path === '')) {
    throw new DeployConfigError(`context 'config': expected a file path, got ${JSON.stringify(path)}`)
  }
  return loadDeployConfig((path as string | undefined) ?? DEFAULT_CONFIG_PATH)
}
