// The typed props of the construct library (cdk/index.ts): what a CDK user writes to add
// Strata to an app. They are mapped onto the deployment config's shape and validated by
// cdk/config.ts (parseDeployConfig), so the JSON file and the props follow one set of rules;
// an error names the prop (PathNames), with the unit a Duration was measured in. The
// resources a user brings (bucket, key, queues, stream, topic, bus) travel beside the
// config, as `StrataResources`.

import { type Duration, Token } from 'aws-cdk-lib'
import type { IEventBus } from 'aws-cdk-lib/aws-events'
import type { CfnDatabase } from 'aws-cdk-lib/aws-glue'
import type { IKey } from 'aws-cdk-lib/aws-kms'
import type { IStream } from 'aws-cdk-lib/aws-kinesis'
import type { StartingPosition } from 'aws-cdk-lib/aws-lambda'
import type { RetentionDays } from 'aws-cdk-lib/aws-logs'
import type { IBucket } from 'aws-cdk-lib/aws-s3'
import type { ITopic } from 'aws-cdk-lib/aws-sns'
import type { IQueue } from 'aws-cdk-lib/aws-sqs'
import { DeployConfigError, type DeployConfig, type PathNames, parseDeployConfig } from './config.ts'

/** Memory and timeout of one of Strata's functions. */
export interface StrataFunctionOptions {
  /** Memory in MB (128..10240). @default 1024 (compactor 3008) */
  readonly memorySize?: number
  /** Whole seconds, at most 15 minutes. @default writer 120 s, reader 30 s, maintenance 300 s, compactor 120 s, committer 60 s */
  readonly timeout?: Duration
}

/** One column: a Paimon type string such as `BIGINT`, `STRING`, `DECIMAL(10, 2)`, `TIMESTAMP(3)`. */
export interface StrataField {
  readonly name: string
  readonly type: string
  /** The column's comment (Paimon's field description). @default none */
  readonly description?: string
}

/** A table's schema, as `strata create` takes it. */
export interface StrataSchema {
  readonly fields: readonly StrataField[]
  /** At least one: Strata tables are primary-key tables. */
  readonly primaryKeys: readonly string[]
  /** Each one a primary key. @default none (an unpartitioned table) */
  readonly partitionKeys?: readonly string[]
  /**
   * Table options (docs/operations.md "Table options"), e.g. `{ bucket: '4' }`. Not
   * `compaction.task-threads`: that is the table's `compactionTaskThreads` prop.
   * @default none
   */
  readonly options?: Readonly<Record<string, string>>
  /** @default none */
  readonly comment?: string
}

export interface StrataCompactorOptions extends StrataFunctionOptions {
  /** Reserved concurrency (task-threads N >= 2 or -1 only). @default N at task-threads N, none at -1 */
  readonly reservedConcurrency?: number
  /** The event source's maxConcurrency at task-threads -1 only. @default 100 */
  readonly maxConcurrency?: number
}

/** A table's alarms. */
export interface StrataTableAlarmOptions {
  /** Freshness lag limit, whole minutes. @default 30 minutes */
  readonly freshnessLag?: Duration
  /** Level-0 files in the worst bucket. @default the table's num-sorted-run.stop-trigger */
  readonly l0FileCount?: number
  /** Age of the oldest commit message, whole seconds. @default 60 seconds */
  readonly commitQueueAge?: Duration
}

/**
 * A table registered in the AWS Glue Data Catalog as an Iceberg table, its metadata_location
 * kept on the newest Iceberg metadata by the committer (docs/operations.md "Registering tables
 * in AWS Glue"). Needs the construct's `warehouse`; sets `metadata.iceberg.storage` to
 * `table-location` unless the schema sets it (any other value is refused).
 */
export interface StrataGlueOptions {
  /** The Glue database: a name (found in the catalog, or created with `createDatabase`), or a CfnDatabase of your app. */
  readonly database: string | CfnDatabase
  /** Create the database named by `database` (AWS::Glue::Database, deleted with the stack). @default false */
  readonly createDatabase?: boolean
  /** Lowercase letters, digits and `_` (Athena's rule). @default the schema's `metadata.iceberg.table`, else the table's name, lowercase, `-` as `_` */
  readonly tableName?: string
  /** At most one UpdateTable per this while the committer folds, whole seconds (it always moves the pointer before it returns). @default 10 seconds */
  readonly updateInterval?: Duration
}

/** One table of a StrataTables. */
export interface StrataTableSpec {
  /** Letters, digits, `_` and `-`, starting with a letter; the table lives under `tables/<name>/`, or `<warehouse>/<database>.db/<name>/` in a warehouse. */
  readonly name: string
  /** The table's Paimon database in the warehouse (with `warehouse` only). @default 'default' */
  readonly database?: string
  /** Register the table in AWS Glue as an Iceberg table (with `warehouse` only). @default not registered */
  readonly glue?: StrataGlueOptions
  readonly schema: StrataSchema
  /** The compactor's concurrency: 1, N >= 2, or -1 (docs/operations.md "compaction.task-threads on Lambda"). @default 1 */
  readonly compactionTaskThreads?: number
  /** @default see StrataCompactorOptions */
  readonly compactor?: StrataCompactorOptions
  /** @default 1024 MB, 60 seconds */
  readonly committer?: StrataFunctionOptions
  /** @default see StrataTableAlarmOptions */
  readonly alarms?: StrataTableAlarmOptions
}

/**
 * Where the writer's records come from. Exactly one of: a queue Strata creates (the
 * default), `queue` (yours), `stream` (a Kinesis stream), or `enabled: false` (no ingest
 * source: no records reach the writer unless you add an event source to `writerFunction`).
 */
export interface StrataIngestOptions {
  /** @default true */
  readonly enabled?: boolean
  /** Your SQS queue; its dead-letter queue is yours to configure. @default a queue Strata creates, with a DLQ */
  readonly queue?: IQueue
  /** A Kinesis stream instead of a queue. @default none */
  readonly stream?: IStream
  /** Your queue's DLQ (alarmed when not empty), or the Kinesis on-failure queue. @default Strata creates one, except for `queue` */
  readonly deadLetterQueue?: IQueue
  /** @default SQS 100, Kinesis 500 */
  readonly batchSize?: number
  /** Whole seconds. @default 5 seconds (SQS: none with a batch of at most 10) */
  readonly maxBatchingWindow?: Duration
  /** Concurrent writer invocations (SQS only). @default 8 */
  readonly maxConcurrency?: number
  /** Kinesis only. @default TRIM_HORIZON */
  readonly startingPosition?: StartingPosition
  /** Kinesis only. @default 1 */
  readonly parallelizationFactor?: number
  /** Kinesis only: retries of a failing batch. @default 10 */
  readonly retryAttempts?: number
}

/** Settings of the bucket Strata creates; refused with a bucket of your own. */
export interface StrataBucketOptions {
  /** Whole days rejected records are kept. @default 30 days */
  readonly rejectRetention?: Duration
  /** @default false */
  readonly versioned?: boolean
  /** Whole days, with `versioned`. @default 7 days */
  readonly noncurrentVersionRetention?: Duration
  /** Server access logs to a bucket Strata creates. @default true */
  readonly accessLogs?: boolean
  /** Whole days. @default 90 days */
  readonly accessLogRetention?: Duration
}

export interface StrataFunctionsOptions {
  /** @default 1024 MB, 120 seconds */
  readonly writer?: StrataFunctionOptions
  /** @default 1024 MB, 30 seconds, 1000 rows */
  readonly reader?: StrataFunctionOptions & { readonly maxResultRows?: number }
  /** @default 1024 MB, 300 seconds, every 15 minutes, orphan cleanup every 6 hours */
  readonly maintenance?: StrataFunctionOptions & { readonly schedule?: Duration; readonly orphanSchedule?: Duration }
  /** @default RetentionDays.ONE_MONTH */
  readonly logRetention?: RetentionDays
  /** @default 'INFO' */
  readonly logLevel?: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR'
}

export interface StrataAlarmOptions {
  /** Every alarm and OK notification goes here. @default an SNS topic Strata creates, encrypted */
  readonly topic?: ITopic
  /** An address subscribed to the topic Strata creates (refused with `topic`). @default none */
  readonly email?: string
  /** Ingest age limit, whole seconds. @default 300 seconds */
  readonly ingestAge?: Duration
}

export interface StrataFeedOptions {
  /** @default true */
  readonly enabled?: boolean
  /** Whole days. @default 4 days */
  readonly retention?: Duration
  /** Forward every event to this bus, or to one Strata creates ('create'). @default no bus */
  readonly eventBus?: IEventBus | 'create'
}

/** What StrataTables and StrataTable share. */
export interface StrataCommonProps {
  /**
   * A key prefix of the bucket that holds the tables as a Paimon warehouse: each table at
   * `<warehouse>/<database>.db/<name>/`, where Paimon's catalogs, and its Iceberg metadata,
   * expect it. @default none: each table at `tables/<name>/`
   */
  readonly warehouse?: string
  /** Your bucket: the tables live under `tables/`, rejected records under `rejects/`. @default a bucket Strata creates (encrypted, TLS only, never public, retained) */
  readonly bucket?: IBucket
  /**
   * A KMS key for what Strata creates: the bucket, the queues and the alarm topic; every
   * function and grantee is given kms:Decrypt / kms:GenerateDataKey on it. With your own
   * bucket under a KMS key, pass that key here so the grants include it.
   * @default SSE-S3 for the bucket, SQS-managed keys for the queues, a key of its own for the alarm topic
   */
  readonly encryptionKey?: IKey
  /** @default see StrataBucketOptions */
  readonly bucketOptions?: StrataBucketOptions
  /** @default a queue Strata creates */
  readonly ingest?: StrataIngestOptions
  /** @default see StrataFunctionsOptions */
  readonly functions?: StrataFunctionsOptions
  /** @default see StrataAlarmOptions */
  readonly alarms?: StrataAlarmOptions
  /** The commit feed (docs/operations.md "The commit feed"). @default on, no bus */
  readonly feed?: StrataFeedOptions
}

export interface StrataTablesProps extends StrataCommonProps {
  /** At least one table; names differ in more than case, `-` and `_`. */
  readonly tables: readonly StrataTableSpec[]
}

export interface StrataTableProps extends Omit<StrataCommonProps, 'alarms'>, Omit<StrataTableSpec, 'alarms'> {
  /** The table's alarms and the shared ones. @default see StrataAlarmOptions and StrataTableAlarmOptions */
  readonly alarms?: StrataAlarmOptions & StrataTableAlarmOptions
}

/** The resources a user brings, beside the validated config. */
export interface StrataResources {
  bucket?: IBucket
  key?: IKey
  ingestQueue?: IQueue
  ingestDeadLetters?: IQueue
  stream?: IStream
  /** false: no ingest source */
  ingestEnabled: boolean
  topic?: ITopic
  eventBus?: IEventBus
  /** a CfnDatabase of the user's app, by the name of the table registered in it */
  glueDatabases?: Record<string, CfnDatabase>
}

/** Config paths → prop names, applied in order (the units a Duration prop was measured in). */
const RENAMES: [RegExp, string][] = [
  [/^bucket\.(rejectRetention|noncurrentVersionRetention|accessLogRetention)Days$/, 'bucketOptions.$1 (whole days)'],
  [/^bucket\./, 'bucketOptions.'],
  [/\.memoryMb$/, '.memorySize'],
  [/\.(timeout|maxBatchingWindow|commitQueueAge|ingestAge|updateInterval)Seconds$/, '.$1 (whole seconds)'],
  [/\.(schedule|freshnessLag)Minutes$/, '.$1 (whole minutes)'],
  [/\.orphanScheduleHours$/, '.orphanSchedule (whole hours)'],
  [/\.logRetentionDays$/, '.logRetention'],
  [/^feed\.retentionDays$/, 'feed.retention (whole days)'],
]

/** Config paths as the props name them: `tables[0].alarms.freshnessLagMinutes` → `tables[0].alarms.freshnessLag (whole minutes)`; one table's props drop `tables[0]`. */
export function propNames(single: boolean): PathNames {
  return (path) => {
    let p = path
    for (const [re, to] of RENAMES) p = p.replace(re, to)
    return single ? p.replace(/^tables\[0\]\.?/, '') : p
  }
}

type Where = (prop: string) => string

/** A Duration as a whole number of `unit`s; undefined stays undefined (the config's default). */
function whole(d: Duration | undefined, unit: 'seconds' | 'minutes' | 'hours' | 'days', prop: string, where: string): number | undefined {
  if (d === undefined) return undefined
  const n = unit === 'seconds' ? d.toSeconds({ integral: false }) : unit === 'minutes' ? d.toMinutes({ integral: false }) : unit === 'hours' ? d.toHours({ integral: false }) : d.toDays({ integral: false })
  if (!Number.isInteger(n)) throw new DeployConfigError(`${where}: ${prop}: invalid value ${d.toHumanString()}, expected a whole number of ${unit}`)
  return n
}

function fnSettings(o: StrataFunctionOptions | undefined, prop: string, where: string): Record<string, unknown> | undefined {
  if (o === undefined) return undefined
  return strip({ memoryMb: o.memorySize, timeoutSeconds: whole(o.timeout, 'seconds', `${prop}.timeout`, where) })
}

/** Drops undefined values, so that the config sees a key only when the prop was set. */
function strip(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined))
}

const TASK_THREADS = 'compaction.task-threads'

function tableInput(t: StrataTableSpec, prop: Where, where: string): Record<string, unknown> {
  const options: Record<string, string> = { ...(t.schema?.options ?? {}) }
  if (options[TASK_THREADS] !== undefined) {
    throw new DeployConfigError(`${where}: ${prop('schema.options')}: option '${TASK_THREADS}' is set by the compactionTaskThreads prop; expected no such option (set compactionTaskThreads: ${options[TASK_THREADS]})`)
  }
  const threads = t.compactionTaskThreads
  if (threads !== undefined) {
    if (!Number.isInteger(threads) || (threads !== -1 && threads < 1)) {
      throw new DeployConfigError(`${where}: ${prop('compactionTaskThreads')}: invalid value ${JSON.stringify(threads)}, expected -1 or an integer from 1`)
    }
    options[TASK_THREADS] = String(threads)
  }
  const s = t.schema
  const schema = strip({ fields: s?.fields?.map((f) => strip({ ...f })), primaryKeys: s?.primaryKeys, partitionKeys: s?.partitionKeys, options, comment: s?.comment })
  const a = t.alarms
  return strip({
    name: t.name,
    database: t.database,
    glue: t.glue && glueInput(t.glue, prop, where),
    schema,
    compactor: t.compactor && strip({ ...fnSettings(t.compactor, prop('compactor'), where), reservedConcurrency: t.compactor.reservedConcurrency, maxConcurrency: t.compactor.maxConcurrency }),
    committer: fnSettings(t.committer, prop('committer'), where),
    alarms: a && strip({
      freshnessLagMinutes: whole(a.freshnessLag, 'minutes', prop('alarms.freshnessLag'), where),
      l0FileCount: a.l0FileCount,
      commitQueueAgeSeconds: whole(a.commitQueueAge, 'seconds', prop('alarms.commitQueueAge'), where),
    }),
  })
}

/** The name of a Glue database given as a CfnDatabase: it must be written in the app, not a token. */
function glueDatabaseName(db: string | CfnDatabase, prop: Where, where: string): string {
  if (typeof db === 'string') return db
  const name = (db.databaseInput as CfnDatabase.DatabaseInputProperty | undefined)?.name
  if (typeof name !== 'string' || Token.isUnresolved(name)) {
    throw new DeployConfigError(`${where}: ${prop('glue.database')}: the CfnDatabase '${db.node.path}' has no literal databaseInput.name; expected a name written in the app (the committer's IAM policy and environment name it)`)
  }
  return name
}

function glueInput(g: StrataGlueOptions, prop: Where, where: string): Record<string, unknown> {
  if (typeof g.database !== 'string' && g.createDatabase !== undefined) {
    throw new DeployConfigError(`${where}: ${prop('glue.createDatabase')}: expected none with a CfnDatabase (your app creates it)`)
  }
  return strip({
    database: glueDatabaseName(g.database, prop, where),
    createDatabase: g.createDatabase,
    tableName: g.tableName,
    updateIntervalSeconds: whole(g.updateInterval, 'seconds', prop('glue.updateInterval'), where),
  })
}

/** A syntactically valid stand-in for a stream ARN that is a token: the IStream itself is what gets wired. */
const STREAM_ARN_STAND_IN = 'arn:aws:kinesis:us-east-1:123456789012:stream/given'

function ingestInput(i: StrataIngestOptions | undefined, where: string): Record<string, unknown> {
  if (!i) return {}
  const chosen = [i.queue && 'queue', i.stream && 'stream', i.enabled === false && 'enabled: false'].filter(Boolean)
  if (chosen.length > 1) throw new DeployConfigError(`${where}: ingest: ${chosen.join(' and ')} given; expected at most one of queue, stream, enabled: false`)
  const window = whole(i.maxBatchingWindow, 'seconds', 'ingest.maxBatchingWindow', where)
  if (i.stream) {
    const arn = i.stream.streamArn
    return strip({
      type: 'kinesis',
      streamArn: Token.isUnresolved(arn) ? STREAM_ARN_STAND_IN : arn,
      startingPosition: i.startingPosition,
      batchSize: i.batchSize,
      maxBatchingWindowSeconds: window,
      parallelizationFactor: i.parallelizationFactor,
      retryAttempts: i.retryAttempts,
      maxConcurrency: i.maxConcurrency,
    })
  }
  for (const k of ['startingPosition', 'parallelizationFactor', 'retryAttempts'] as const) {
    if (i[k] !== undefined) throw new DeployConfigError(`${where}: ingest.${k}: applies to a Kinesis stream only (ingest.stream)`)
  }
  return strip({ type: 'sqs', batchSize: i.batchSize, maxBatchingWindowSeconds: window, maxConcurrency: i.maxConcurrency })
}

function functionsInput(f: StrataFunctionsOptions | undefined, where: string): Record<string, unknown> | undefined {
  if (!f) return undefined
  return strip({
    writer: fnSettings(f.writer, 'functions.writer', where),
    reader: f.reader && strip({ ...fnSettings(f.reader, 'functions.reader', where), maxResultRows: f.reader.maxResultRows }),
    maintenance:
      f.maintenance &&
      strip({
        ...fnSettings(f.maintenance, 'functions.maintenance', where),
        scheduleMinutes: whole(f.maintenance.schedule, 'minutes', 'functions.maintenance.schedule', where),
        orphanScheduleHours: whole(f.maintenance.orphanSchedule, 'hours', 'functions.maintenance.orphanSchedule', where),
      }),
    logRetentionDays: f.logRetention,
    logLevel: f.logLevel,
  })
}

function commonInput(p: StrataCommonProps, alarms: StrataAlarmOptions | undefined, where: string): Record<string, unknown> {
  const b = p.bucketOptions
  if (b && p.bucket) throw new DeployConfigError(`${where}: bucketOptions: applies to the bucket Strata creates; expected none with a bucket of your own`)
  const feed = p.feed
  if (feed?.eventBus !== undefined && feed.enabled === false) throw new DeployConfigError(`${where}: feed.eventBus: expected none when feed.enabled is false (the bus is fed from the feed queue)`)
  return strip({
    warehouse: p.warehouse,
    ingest: ingestInput(p.ingest, where),
    bucket: b && strip({
      rejectRetentionDays: whole(b.rejectRetention, 'days', 'bucketOptions.rejectRetention', where),
      versioned: b.versioned,
      noncurrentVersionRetentionDays: whole(b.noncurrentVersionRetention, 'days', 'bucketOptions.noncurrentVersionRetention', where),
      accessLogs: b.accessLogs,
      accessLogRetentionDays: whole(b.accessLogRetention, 'days', 'bucketOptions.accessLogRetention', where),
    }),
    functions: functionsInput(p.functions, where),
    alarms: alarms && strip({ email: alarms.email, ingestAgeSeconds: whole(alarms.ingestAge, 'seconds', 'alarms.ingestAge', where) }),
    feed: feed && strip({ enabled: feed.enabled, retentionDays: whole(feed.retention, 'days', 'feed.retention', where), eventBus: feed.eventBus === 'create' ? 'create' : undefined }),
  })
}

function resourcesOf(p: StrataCommonProps, alarms: StrataAlarmOptions | undefined, where: string): StrataResources {
  if (alarms?.topic && alarms.email !== undefined) {
    throw new DeployConfigError(`${where}: alarms.email: expected none with alarms.topic: subscribe the address to your topic where it is managed (Strata subscribes it only to the topic it creates)`)
  }
  const i = p.ingest
  return {
    bucket: p.bucket,
    key: p.encryptionKey,
    ingestQueue: i?.queue,
    ingestDeadLetters: i?.deadLetterQueue,
    stream: i?.stream,
    ingestEnabled: i?.enabled !== false,
    topic: alarms?.topic,
    eventBus: p.feed?.eventBus === 'create' ? undefined : p.feed?.eventBus,
  }
}

/** The CfnDatabases given in `glue.database`, by table name. */
function glueDatabasesOf(tables: readonly StrataTableSpec[]): Record<string, CfnDatabase> | undefined {
  const given = tables.filter((t) => t.glue && typeof t.glue.database !== 'string').map((t) => [t.name, t.glue!.database as CfnDatabase] as const)
  return given.length ? Object.fromEntries(given) : undefined
}

/** Validates StrataTables props with the deployment config's rules; errors name the prop. */
export function configOfTables(props: StrataTablesProps, where: string): { config: DeployConfig; resources: StrataResources } {
  if (!Array.isArray(props.tables) || props.tables.length === 0) throw new DeployConfigError(`${where}: tables: invalid value ${JSON.stringify(props.tables)}, expected at least one table`)
  const input = { ...commonInput(props, props.alarms, where), tables: props.tables.map((t, i) => tableInput(t, (k) => `tables[${i}].${k}`, where)) }
  const resources = { ...resourcesOf(props, props.alarms, where), glueDatabases: glueDatabasesOf(props.tables) }
  return { config: parseDeployConfig(input, where, propNames(false)), resources }
}

/** Validates StrataTable props (one table) with the same rules; errors name the prop. */
export function configOfTable(props: StrataTableProps, where: string): { config: DeployConfig; resources: StrataResources } {
  const { alarms } = props
  const shared: StrataAlarmOptions | undefined = alarms && { topic: alarms.topic, email: alarms.email, ingestAge: alarms.ingestAge }
  const own: StrataTableAlarmOptions | undefined = alarms && { freshnessLag: alarms.freshnessLag, l0FileCount: alarms.l0FileCount, commitQueueAge: alarms.commitQueueAge }
  const spec: StrataTableSpec = { name: props.name, schema: props.schema, compactionTaskThreads: props.compactionTaskThreads, compactor: props.compactor, committer: props.committer, alarms: own, database: props.database, glue: props.glue }
  const input = { ...commonInput(props, shared, where), tables: [tableInput(spec, (k) => k, where)] }
  return { config: parseDeployConfig(input, where, propNames(true)), resources: { ...resourcesOf(props, shared, where), glueDatabases: glueDatabasesOf([spec]) } }
}
