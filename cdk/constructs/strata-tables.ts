// StrataTables: what the repository's stack deploys, as a construct a CDK user adds to an app
// of their own (cdk/index.ts). Several tables share one bucket, the ingest source, the
// writer, the reader (behind a Function URL, AWS_IAM auth) and the table-init function; per
// table its commit queue and committer, compaction queue, compactor and maintenance
// function, the custom resource that creates the table (and applies option changes on
// deploy); the commit feed's queue (unless turned off); alarms on every function, queue and
// table to one SNS topic, and a dashboard. Typed props are validated with the deployment
// config's rules (cdk/props.ts); the repository's app builds it from the JSON config
// (strataTablesFromConfig). Grants give a user's principal what each path of the library
// needs, on the tables' prefixes only.

import { Duration, Stack } from 'aws-cdk-lib'
import type { MetricOptions, Metric } from 'aws-cdk-lib/aws-cloudwatch'
import { CfnDatabase } from 'aws-cdk-lib/aws-glue'
import { Effect, Grant, type IGrantable, PolicyStatement } from 'aws-cdk-lib/aws-iam'
import type { IKey } from 'aws-cdk-lib/aws-kms'
import { type Function as LambdaFunction, type FunctionUrl, FunctionUrlAuthType } from 'aws-cdk-lib/aws-lambda'
import type { IBucket } from 'aws-cdk-lib/aws-s3'
import type { ITopic } from 'aws-cdk-lib/aws-sns'
import type { IQueue } from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import { CONSUMER_DIR, CONSUMER_PREFIX } from '../../lib/handle/consumers.ts'
import { StrataInputError } from '../../lib/errors.ts'
import type { DeployConfig } from '../config.ts'
import { tableDimensions } from '../metrics.ts'
import { type StrataResources, type StrataTablesProps, configOfTables } from '../props.ts'
import { CommitFeedQueue } from './feed.ts'
import { IngestSource } from './ingest.ts'
import { Monitoring, strataMetric } from './monitoring.ts'
import { acknowledgePrefixes, allowKey, allowList, allowObjects, allowSend, denySchemaWrites } from './permissions.ts'
import { REJECTS_PREFIX, StrataStorage } from './storage.ts'
import { StrataFunction } from './strata-function.ts'
import { COMMIT_RECEIPTS, TableResources, commitWaitMs } from './table-resources.ts'

/** Carries an already validated config from the repository's app past the typed props. */
const VALIDATED = Symbol('strata deploy config')
type ValidatedProps = StrataTablesProps & { [VALIDATED]?: { config: DeployConfig; resources: StrataResources } }

/** The repository's app: StrataTables from a config validated from JSON (cdk/config.ts). */
export function strataTablesFromConfig(scope: Construct, id: string, config: DeployConfig): StrataTables {
  return strataTablesOf(scope, id, { config, resources: { ingestEnabled: true } })
}

/** StrataTables from a config and resources validated already (StrataTable's props, the JSON config). */
export function strataTablesOf(scope: Construct, id: string, validated: { config: DeployConfig; resources: StrataResources }): StrataTables {
  const props: ValidatedProps = { tables: [], [VALIDATED]: validated }
  return new StrataTables(scope, id, props)
}

export class StrataTables extends Construct {
  /** The bucket the tables live in (`tables/<name>/`, or `<warehouse>/<database>.db/<name>/`), the user's or a created one. */
  readonly bucket: IBucket
  /** The KMS key of the bucket, queues and alarm topic, when given. */
  readonly encryptionKey?: IKey
  /** The writer: its event source is the ingest queue or stream. */
  readonly writerFunction: LambdaFunction
  /** The reader, behind `readerUrl`. */
  readonly readerFunction: LambdaFunction
  /** The reader's Function URL (AWS_IAM auth: callers need grantInvokeReader). */
  readonly readerUrl: FunctionUrl
  /** The queue the writer consumes (none with a Kinesis stream or without an ingest source). */
  readonly ingestQueue?: IQueue
  /** The ingest DLQ, or the Kinesis on-failure queue. */
  readonly ingestDeadLetterQueue?: IQueue
  /** The commit feed's queue (feed.enabled). */
  readonly feedQueue?: IQueue
  /** Where every alarm goes. */
  readonly alarmTopic: ITopic
  /** The tables' names, in the order given. */
  readonly tableNames: string[]
  /** The Glue databases the tables are registered in that this app makes (created here, or given as a CfnDatabase), by name. */
  readonly glueDatabases: ReadonlyMap<string, CfnDatabase>

  // the parts, for the repository's stack and its tests
  readonly config: DeployConfig
  readonly storage: StrataStorage
  readonly ingest: IngestSource
  readonly writer: StrataFunction
  readonly reader: StrataFunction
  readonly tableInit: StrataFunction
  readonly tables: TableResources[]
  readonly monitoring: Monitoring
  readonly feed?: CommitFeedQueue

  constructor(scope: Construct, id: string, props: StrataTablesProps) {
    super(scope, id)
    const { config, resources } = (props as ValidatedProps)[VALIDATED] ?? configOfTables(props, `StrataTables '${this.node.path}'`)
    this.config = config
    const fns = config.functions
    const key = resources.key
    this.encryptionKey = key
    this.storage = new StrataStorage(this, 'Storage', config.bucket, resources.bucket, key)
    const bucket = (this.bucket = this.storage.bucket)

    this.tableInit = this.fn('TableInit', 'tableInit', 'Creates the configured tables and applies option changes (custom resource Custom::StrataTable)', { memoryMb: 512, timeoutSeconds: 60 }, {})
    allowList(this.tableInit.role, bucket)
    allowKey(this.tableInit.role, key)
    this.feed = config.feed.enabled ? new CommitFeedQueue(this, 'CommitFeed', config.feed, resources.eventBus, key) : undefined
    this.feedQueue = this.feed?.queue
    this.glueDatabases = this.addGlueDatabases(config, resources)
    this.tables = config.tables.map(
      (t) => new TableResources(this, `Table${pascal(t.name)}`, { table: t, config, bucket, key, tableInit: this.tableInit, feed: this.feed, glueDatabase: t.glue && this.glueDatabases.get(t.glue.database) }),
    )
    this.tableNames = this.tables.map((t) => t.name)

    this.ingest = new IngestSource(this, 'Ingest', config.ingest, fns.writer.timeoutSeconds, {
      enabled: resources.ingestEnabled,
      queue: resources.ingestQueue,
      deadLetters: resources.ingestDeadLetters,
      stream: resources.stream,
      key,
    })
    this.ingestQueue = this.ingest.queue
    this.ingestDeadLetterQueue = this.ingest.deadLetters
    this.writer = this.addWriter(config, bucket, key)
    this.writerFunction = this.writer.fn
    this.ingest.connect(this.writer.fn)

    this.reader = this.fn('Reader', 'reader', 'Scans, key lookups and status over a Function URL (AWS_IAM)', fns.reader, {
      STRATA_TABLES: Stack.of(this).toJsonString(Object.fromEntries(this.tables.map((t) => [t.name, { uri: t.uri }]))),
      STRATA_MAX_RESULT_ROWS: String(fns.reader.maxResultRows),
    })
    this.readerFunction = this.reader.fn
    allowList(this.reader.role, bucket)
    allowKey(this.reader.role, key, false)
    allowObjects(this.reader.role, bucket, ['s3:GetObject'], this.tables.map((t) => `${t.prefix}*`))
    this.readerUrl = this.reader.fn.addFunctionUrl({ authType: FunctionUrlAuthType.AWS_IAM })

    this.monitoring = new Monitoring(this, 'Monitoring', {
      config,
      tables: this.tables,
      writer: this.writer,
      reader: this.reader,
      tableInit: this.tableInit,
      ingestQueue: this.ingest.queue,
      ingestDeadLetters: this.ingest.deadLetters,
      ingestEnabled: resources.ingestEnabled,
      topic: resources.topic,
      key,
    })
    this.alarmTopic = this.monitoring.topic
  }

  /**
   * The Glue databases of the registered tables that this app makes: a CfnDatabase given in a
   * table's props, or one created here (once per name) for `createDatabase`. A database named
   * only is found in the catalog at run time. Only the database is in the template: the tables
   * are created by their committers, so a stack update never sets a metadata_location back.
   */
  private addGlueDatabases(config: DeployConfig, resources: StrataResources): Map<string, CfnDatabase> {
    const out = new Map<string, CfnDatabase>()
    for (const t of config.tables) {
      const given = resources.glueDatabases?.[t.name]
      if (given) out.set(t.glue!.database, given)
    }
    for (const t of config.tables) {
      const g = t.glue
      if (!g?.createDatabase || out.has(g.database)) continue
      out.set(
        g.database,
        new CfnDatabase(this, `GlueDatabase${pascal(g.database)}`, {
          catalogId: Stack.of(this).account,
          databaseInput: { name: g.database, description: 'Strata tables registered as Iceberg tables (their committers keep metadata_location on the newest metadata)' },
        }),
      )
    }
    return out
  }

  private fn(id: string, kind: StrataFunction['kind'], description: string, settings: { memoryMb: number; timeoutSeconds: number }, environment: Record<string, string>): StrataFunction {
    const fns = this.config.functions
    return new StrataFunction(this, id, { kind, description, settings, environment, logRetentionDays: fns.logRetentionDays, logLevel: fns.logLevel })
  }

  private addWriter(config: DeployConfig, bucket: IBucket, key: IKey | undefined): StrataFunction {
    const timeout = config.functions.writer.timeoutSeconds
    const writer = this.fn('Writer', 'writer', `Writes ingest records to ${config.tables.map((t) => t.name).join(', ')}`, config.functions.writer, {
      STRATA_TABLES: Stack.of(this).toJsonString(Object.fromEntries(this.tables.map((t) => [t.name, t.runtimeEntry()]))),
      STRATA_REJECT_URI: `s3://${bucket.bucketName}/${REJECTS_PREFIX.slice(0, -1)}`,
      STRATA_COMMIT_TIMEOUT_MS: commitWaitMs(timeout),
    })
    const w = writer.role
    allowList(w, bucket)
    allowKey(w, key)
    // data files, ingest markers and spilled commit messages; reads the table's state and
    // polls for the committer's receipt of its commit
    allowObjects(w, bucket, ['s3:GetObject', 's3:PutObject'], this.tables.map((t) => `${t.prefix}*`))
    // the writer commits through each table's committer and writes no manifests: the
    // receipts it has read are all it deletes
    allowObjects(w, bucket, ['s3:DeleteObject'], this.tables.map((t) => `${t.prefix}${COMMIT_RECEIPTS}*`))
    allowObjects(w, bucket, ['s3:PutObject'], [`${REJECTS_PREFIX}*`])
    // compaction jobs and commit messages
    allowSend(w, this.tables.flatMap((t) => [t.queue, t.commitQueue]))
    denySchemaWrites(w, bucket, this.tables.map((t) => t.prefix))
    for (const t of this.tables) writer.fn.node.addDependency(t.created)
    return writer
  }

  /** The tables named (all when none), or an error naming the unknown one. */
  protected selected(names: readonly string[]): TableResources[] {
    if (names.length === 0) return this.tables
    return names.map((n) => this.tables.find((t) => t.name === n) ?? invalid(n, this.tableNames))
  }

  /** `s3://<bucket>/tables/<name>`, or `s3://<bucket>/<warehouse>/<database>.db/<name>`: where the library opens the table. */
  tableUri(table: string): string {
    return this.selected([table])[0].uri
  }

  /**
   * Read access for the library's reads of the bucket (scans, lookups, status, incremental
   * reads without a consumer id): s3:GetObject under each table's prefix, s3:ListBucket on
   * the bucket (S3 answers a missing key 404, not 403, only to a caller that may list; the
   * library probes for absent snapshots), kms:Decrypt with a key. `tables`: all when none.
   */
  grantRead(grantee: IGrantable, ...tables: string[]): Grant {
    const prefixes = this.selected(tables).map((t) => `${t.prefix}*`)
    return this.grantObjects(grantee, ['s3:GetObject'], prefixes, false).combine(Grant.addToPrincipal({ grantee, actions: ['s3:ListBucket'], resourceArns: [this.bucket.bucketArn] }))
  }

  /**
   * Incremental reads with a consumer id (`readIncremental(..., { consumerId })`): read,
   * plus s3:PutObject and s3:DeleteObject of `consumer/consumer-*` under each table.
   */
  grantConsume(grantee: IGrantable, ...tables: string[]): Grant {
    const consumers = this.selected(tables).map((t) => `${t.prefix}${CONSUMER_DIR}${CONSUMER_PREFIX}*`)
    return this.grantRead(grantee, ...tables).combine(this.grantObjects(grantee, ['s3:PutObject', 's3:DeleteObject'], consumers, true))
  }

  /**
   * Writes through the ingest source, the supported write path (records validated, rejects
   * kept, batches committed by the writer): sqs:SendMessage on the ingest queue (with
   * kms:GenerateDataKey and kms:Decrypt under a key), or Kinesis writes to the stream.
   * Direct writes with the library are not granted here (they need the commit queues and
   * data prefixes of the runtime: docs/operations.md).
   */
  grantWrite(grantee: IGrantable): Grant {
    if (this.ingest.queue) {
      const grant = Grant.addToPrincipal({ grantee, actions: ['sqs:SendMessage', 'sqs:GetQueueAttributes', 'sqs:GetQueueUrl'], resourceArns: [this.ingest.queue.queueArn] })
      const key = this.ingest.queue.encryptionMasterKey
      return key ? grant.combine(Grant.addToPrincipal({ grantee, actions: ['kms:GenerateDataKey', 'kms:Decrypt'], resourceArns: [key.keyArn] })) : grant
    }
    if (this.ingest.stream) return this.ingest.stream.grantWrite(grantee)
    throw new StrataInputError(`StrataTables '${this.node.path}': grantWrite: no ingest source to write to (ingest.enabled is false); expected a queue or a stream`)
  }

  /** lambda:InvokeFunctionUrl and lambda:InvokeFunction on the reader, for callers of `readerUrl`. */
  grantInvokeReader(grantee: IGrantable): Grant {
    return Grant.addToPrincipal({ grantee, actions: ['lambda:InvokeFunctionUrl', 'lambda:InvokeFunction'], resourceArns: [this.reader.fn.functionArn] })
  }

  private grantObjects(grantee: IGrantable, actions: string[], keys: string[], write: boolean): Grant {
    const grant = Grant.addToPrincipal({ grantee, actions, resourceArns: keys.map((k) => this.bucket.arnForObjects(k)) })
    acknowledgePrefixes(grantee.grantPrincipal, this.bucket, actions, keys)
    if (!this.encryptionKey) return grant
    const kms = write ? ['kms:Decrypt', 'kms:GenerateDataKey'] : ['kms:Decrypt']
    grantee.grantPrincipal.addToPrincipalPolicy(new PolicyStatement({ effect: Effect.ALLOW, actions: kms, resources: [this.encryptionKey.keyArn] }))
    return grant
  }

  /** How long written rows stay invisible to deletion-vector readers (ms, maximum per maintenance run). */
  metricFreshnessLag(table: string, props?: MetricOptions): Metric {
    return this.tableMetric('FreshnessLag', table, 'Maximum', props)
  }

  /** Level-0 files in the table's worst bucket: compaction falling behind. */
  metricL0FileCount(table: string, props?: MetricOptions): Metric {
    return this.tableMetric('L0FileCountMax', table, 'Maximum', props)
  }

  /** Compaction jobs waiting on the table's compaction queue (the compaction backlog). */
  metricCompactionBacklog(table: string, props?: MetricOptions): Metric {
    return this.tableMetric('QueuedJobs', table, 'Maximum', props)
  }

  /** Rows the writer wrote to the table (sum per 5 minutes). */
  metricRowsWritten(table: string, props?: MetricOptions): Metric {
    const t = this.selected([table])[0]
    return strataMetric('RowsWritten', tableDimensions('writer', t.name), 'Sum', Duration.minutes(5)).with(props ?? {})
  }

  /** Age of the oldest ingest message (s), or the writer's Kinesis iterator age (ms). */
  metricIngestAge(props?: MetricOptions): Metric {
    if (this.ingest.queue) return this.ingest.queue.metricApproximateAgeOfOldestMessage({ period: Duration.minutes(1), statistic: 'Maximum', ...props })
    return this.writer.fn.metric('IteratorAge', { period: Duration.minutes(1), statistic: 'Maximum', ...props })
  }

  private tableMetric(name: string, table: string, statistic: string, props?: MetricOptions): Metric {
    const t = this.selected([table])[0]
    // maintenance publishes these once per run
    const period = Duration.minutes(this.config.functions.maintenance.scheduleMinutes)
    return strataMetric(name, tableDimensions('maintenance', t.name), statistic, period).with(props ?? {})
  }
}

function invalid(name: string, known: string[]): never {
  throw new StrataInputError(`table '${name}': no such table in this StrataTables; expected one of ${known.join(', ')}`)
}

/** A table name as a construct id part: `page_views` → `PageViews`. */
function pascal(name: string): string {
  return name
    .split(/[-_]/)
    .filter(Boolean)
    .map((p) => p[0].toUpperCase() + p.slice(1))
    .join('')
}
