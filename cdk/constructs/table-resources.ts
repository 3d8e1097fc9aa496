// Everything one table has of its own: its commit FIFO queue, FIFO DLQ and committer (the
// one path by which writes and compactions become snapshots), its compaction FIFO queue and
// FIFO DLQ, its compactor (so its concurrency, mapped from `compaction.task-threads`, is its
// own), its maintenance function on a schedule, and the custom resource that creates the
// table.

import { CustomResource, Duration, Stack } from 'aws-cdk-lib'
import { Effect, PolicyStatement } from 'aws-cdk-lib/aws-iam'
import { Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events'
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets'
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources'
import type { IKey } from 'aws-cdk-lib/aws-kms'
import { Bucket, type IBucket } from 'aws-cdk-lib/aws-s3'
import { DeduplicationScope, FifoThroughputLimit, Queue } from 'aws-cdk-lib/aws-sqs'
import { Construct, type IConstruct } from 'constructs'
import { type CompactorConcurrency, compactorConcurrency } from '../concurrency.ts'
import { COMMIT_QUEUE_RETENTION_SECONDS, type DeployConfig, type TableDeployConfig } from '../config.ts'
import { DLQ_RETENTION, MAX_RECEIVE_COUNT, VISIBILITY_FACTOR, queueEncryption } from './ingest.ts'
import { allowKey, allowList, allowObjects, allowQueueAttributes, allowSend, denySchemaWrites } from './permissions.ts'
import { COMMITTER_LEASE_KEY } from '../../lib/commit/committer-lease.ts'
import { REMOVE_ORPHANS_TASK } from '../../lib/maintenance/orphans.ts'
import { tablePrefix } from './storage.ts'
import { warehouseTableUri } from '../../lib/table/warehouse.ts'
import { icebergLocation, icebergOptions } from '../../lib/iceberg/options.ts'
import { StrataFunction } from './strata-function.ts'
import type { CommitFeedQueue } from './feed.ts'

/** Lambda's SQS FIFO event source takes at most 10 messages a batch. */
export const COMPACTOR_BATCH_SIZE = 10
export const COMMITTER_BATCH_SIZE = 10

/**
 * STRATA_COMMIT_TIMEOUT_MS of a function that waits for its commit receipt: its timeout less
 * 10 s (at least 5 s), so a commit the committer is slow to confirm fails the invocation
 * cleanly (its input is redelivered and recognised) instead of Lambda cutting it off.
 */
export function commitWaitMs(timeoutSeconds: number): string {
  return String(Math.max(5, timeoutSeconds - 10) * 1000)
}
/** The smallest maxConcurrency an SQS event source takes (see the committer's mapping). */
export const COMMITTER_MAX_CONCURRENCY = 2

/** Where the committer writes the receipts that writers and compactors wait for, under a table's root. */
export const COMMIT_RECEIPTS = '_strata/commit-receipts/'
/** Receipts left behind expire after this, past the commit queue's retention (12 h). */
export const COMMIT_RECEIPT_RETENTION_DAYS = 1
/** Where senders spill commit message bodies past SQS's 256 KiB, under a table's root. */
export const COMMIT_MESSAGES = '_strata/commit-messages/'
/** The committer's sidecars listing what a folded snapshot holds, under a table's root. */
export const FOLDED_COMMITS = '_strata/folded-commits/'

/**
 * A FIFO queue `<id>Queue` with a FIFO DLQ `<id>DeadLetters`, as both of a table's queues
 * are: deduplication ids set by the senders, high-throughput FIFO (the limits apply per
 * message group), SQS-managed encryption and TLS only.
 */
function fifoQueueWithDeadLetters(scope: Construct, id: string, o: { visibilityTimeout: Duration; retentionPeriod: Duration; key?: IKey }): { queue: Queue; deadLetters: Queue } {
  const deadLetters = new Queue(scope, `${id}DeadLetters`, {
    fifo: true,
    ...queueEncryption(o.key),
    enforceSSL: true,
    retentionPeriod: DLQ_RETENTION,
  })
  const queue = new Queue(scope, `${id}Queue`, {
    fifo: true,
    contentBasedDeduplication: false,
    deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
    fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
    visibilityTimeout: o.visibilityTimeout,
    retentionPeriod: o.retentionPeriod,
    ...queueEncryption(o.key),
    enforceSSL: true,
    deadLetterQueue: { queue: deadLetters, maxReceiveCount: MAX_RECEIVE_COUNT },
  })
  return { queue, deadLetters }
}

export interface TableResourcesProps {
  table: TableDeployConfig
  config: DeployConfig
  bucket: IBucket
  /** the KMS key of the bucket and queues, when the construct is given one */
  key?: IKey
  /** the stack's table-init function, shared by every table */
  tableInit: StrataFunction
  /** the stack's commit feed, when on: the committer publishes to it */
  feed?: CommitFeedQueue
  /** the Glue database the table is registered in, when the app makes it (the committer waits for it) */
  glueDatabase?: IConstruct
}

export class TableResources extends Construct {
  readonly name: string
  /** `tables/<name>/`, or `<warehouse>/<database>.db/<name>/` in a warehouse */
  readonly prefix: string
  /** s3://<bucket>/<prefix without its slash> */
  readonly uri: string
  readonly queue: Queue
  readonly deadLetters: Queue
  readonly compactor: StrataFunction
  readonly maintenance: StrataFunction
  /** the commit FIFO queue (a message group per commit), its DLQ and the committer */
  readonly commitQueue: Queue
  readonly commitDeadLetters: Queue
  readonly committer: StrataFunction
  readonly concurrency: CompactorConcurrency
  /** `compaction.task-threads` as configured for the stack */
  readonly taskThreads: number
  /** the Custom::StrataTable resource; functions that use the table depend on it */
  readonly created: CustomResource
  /** where the table's Iceberg metadata is written (a key prefix ending in `metadata/`); undefined when it writes none */
  readonly icebergMetadataPrefix?: string

  constructor(scope: Construct, id: string, props: TableResourcesProps) {
    super(scope, id)
    const { table, bucket } = props
    this.name = table.name
    this.taskThreads = table.taskThreads
    const root = `s3://${bucket.bucketName}/`
    const warehouse = props.config.warehouse
    this.uri = warehouse === undefined ? `${root}${tablePrefix(table.name).slice(0, -1)}` : warehouseTableUri(`${root}${warehouse}`, { database: table.database, table: table.name })
    this.prefix = `${this.uri.slice(root.length)}/`
    this.icebergMetadataPrefix = icebergMetadataPrefix(this.uri, root, table.schema.options)

    this.created = new CustomResource(this, 'Table', {
      serviceToken: props.tableInit.fn.functionArn,
      resourceType: 'Custom::StrataTable',
      properties: { TableName: table.name, TableUri: this.uri, Schema: JSON.stringify(table.schemaInput) },
    })
    // schemas, and whether the table has snapshots (an option change is checked against it)
    allowObjects(props.tableInit.role, bucket, ['s3:GetObject', 's3:PutObject'], [`${this.prefix}schema/*`])
    allowObjects(props.tableInit.role, bucket, ['s3:GetObject'], [`${this.prefix}snapshot/*`])

    // writers give every job a deduplication id derived from its bucket and snapshot;
    // high-throughput FIFO: the limits apply per message group (per bucket), not per queue
    const compaction = fifoQueueWithDeadLetters(this, 'Compaction', {
      visibilityTimeout: Duration.seconds(VISIBILITY_FACTOR * table.compactor.timeoutSeconds),
      retentionPeriod: Duration.days(14),
      key: props.key,
    })
    this.queue = compaction.queue
    this.deadLetters = compaction.deadLetters
    // senders set a deduplication id per send, derived from the commit's identity;
    // high-throughput FIFO: each commit message has a message group of its own (commit
    // messages need no order among themselves), so the limits apply per message
    const commit = fifoQueueWithDeadLetters(this, 'Commit', {
      visibilityTimeout: Duration.seconds(VISIBILITY_FACTOR * table.committer.timeoutSeconds),
      // under orphan cleanup's default age (1 day): a message older than that may name
      // data files that cleanup has already removed as unreferenced
      retentionPeriod: Duration.seconds(COMMIT_QUEUE_RETENTION_SECONDS),
      key: props.key,
    })
    this.commitQueue = commit.queue
    this.commitDeadLetters = commit.deadLetters

    // a receipt is deleted by its sender once read; one left behind (its sender gave up
    // waiting) only matters to a redelivery of that commit, which comes within the commit
    // queue's retention. A bucket imported by name or ARN takes no rule from here: its
    // owner adds it (docs/operations.md, "A bucket of your own").
    if (bucket instanceof Bucket) {
      bucket.addLifecycleRule({
        id: `expire-commit-receipts-${table.name}`,
        prefix: `${this.prefix}${COMMIT_RECEIPTS}`,
        expiration: Duration.days(COMMIT_RECEIPT_RETENTION_DAYS),
      })
    }

    const own = Stack.of(this).toJsonString({ [table.name]: this.runtimeEntry() })
    this.committer = this.addCommitter(props, own)
    this.concurrency = compactorConcurrency(table.taskThreads, { reservedConcurrency: table.compactor.reservedConcurrency, maxConcurrency: table.compactor.maxConcurrency })
    this.compactor = this.addCompactor(props, own)
    this.maintenance = this.addMaintenance(props, own)
  }

  /** The committer, on the commit queue: it alone writes snapshots. */
  private addCommitter(props: TableResourcesProps, own: string): StrataFunction {
    const { table, config, bucket } = props
    const committer = new StrataFunction(this, 'Committer', {
      kind: 'committer',
      description: `Folds the commit messages of table '${table.name}' into snapshots`,
      settings: table.committer,
      environment: { STRATA_TABLES: own, STRATA_TABLE: table.name, ...(props.feed ? { STRATA_FEED_QUEUE_URL: props.feed.queue.queueUrl } : {}), ...glueEnvironment(table) },
      logRetentionDays: config.functions.logRetentionDays,
      logLevel: config.functions.logLevel,
    })
    // maxConcurrency 2, the smallest the event source takes, rather than reserved concurrency
    // 1: with a message group per commit the mapping runs several pollers, and a reserved
    // concurrency below them makes Lambda throttle; throttled batches come back with higher
    // receive counts and can reach the DLQ although nothing failed. Two committers racing
    // for `snapshot-N` is safe: the snapshot is created conditionally; the committer lease
    // (lib/commit/committer-lease.ts) keeps one folding, the other forwarding its batch.
    // The mapping grants ReceiveMessage, DeleteMessage, ChangeMessageVisibility and
    // GetQueueAttributes on the queue, which the committer also uses itself to drain it
    // beyond the batch it was invoked with and to give back what it could not land.
    committer.fn.addEventSource(
      new SqsEventSource(this.commitQueue, {
        batchSize: COMMITTER_BATCH_SIZE,
        reportBatchItemFailures: true,
        maxConcurrency: COMMITTER_MAX_CONCURRENCY,
      }),
    )
    allowList(committer.role, bucket)
    allowKey(committer.role, props.key)
    // reads the table's state and spilled message bodies
    allowObjects(committer.role, bucket, ['s3:GetObject'], [`${this.prefix}*`])
    // manifests, snapshots and LATEST, the folded-commits sidecars, the senders' receipts, the committer lease
    allowObjects(committer.role, bucket, ['s3:PutObject'], [`${this.prefix}manifest/*`, `${this.prefix}snapshot/*`, `${this.prefix}${FOLDED_COMMITS}*`, `${this.prefix}${COMMIT_RECEIPTS}*`, `${this.prefix}${COMMITTER_LEASE_KEY}`])
    // spilled bodies once landed, the manifests of a lost snapshot race, the lease when released
    allowObjects(committer.role, bucket, ['s3:DeleteObject'], [`${this.prefix}manifest/*`, `${this.prefix}${COMMIT_MESSAGES}*`, `${this.prefix}${COMMITTER_LEASE_KEY}`])
    // an invocation that finds another holding the lease forwards its batch to the queue
    allowSend(committer.role, [this.commitQueue])
    // one event per fold to the commit feed, which it may send to and nothing else
    props.feed?.grantPublish(committer.role)
    this.allowIceberg(committer, props)
    denySchemaWrites(committer.role, bucket, [this.prefix])
    committer.fn.node.addDependency(this.created)
    return committer
  }

  /**
   * What the committer needs for the table's Iceberg metadata: the objects under its metadata
   * directory (written after each snapshot, the older ones deleted), and with a Glue
   * registration GetTable, UpdateTable and CreateTable on exactly the catalog, the database and
   * the table (Glue authorizes a table call against all three).
   */
  private allowIceberg(committer: StrataFunction, props: TableResourcesProps): void {
    const { table, bucket } = props
    const metadata = this.icebergMetadataPrefix
    if (metadata !== undefined) {
      allowObjects(committer.role, bucket, ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], [`${metadata}*`])
    }
    if (!table.glue) return
    const stack = Stack.of(this)
    const { database, tableName } = table.glue
    committer.role.addToPrincipalPolicy(
      new PolicyStatement({
        effect: Effect.ALLOW,
        actions: ['glue:GetTable', 'glue:UpdateTable', 'glue:CreateTable'],
        resources: [
          stack.formatArn({ service: 'glue', resource: 'catalog' }),
          stack.formatArn({ service: 'glue', resource: 'database', resourceName: database }),
          stack.formatArn({ service: 'glue', resource: 'table', resourceName: `${database}/${tableName}` }),
        ],
      }),
    )
    if (props.glueDatabase) committer.fn.node.addDependency(props.glueDatabase)
  }

  /** The compactor, on the compaction queue, its concurrency mapped from `compaction.task-threads`. */
  private addCompactor(props: TableResourcesProps, own: string): StrataFunction {
    const { table, config, bucket } = props
    const compactor = new StrataFunction(this, 'Compactor', {
      kind: 'compactor',
      description: `Compacts table '${table.name}' (compaction.task-threads ${table.taskThreads})`,
      settings: table.compactor,
      environment: { STRATA_TABLES: own, STRATA_TABLE: table.name, STRATA_COMMIT_TIMEOUT_MS: commitWaitMs(table.compactor.timeoutSeconds) },
      logRetentionDays: config.functions.logRetentionDays,
      logLevel: config.functions.logLevel,
      reservedConcurrency: this.concurrency.reservedConcurrency,
    })
    // maxConcurrency is always set (cdk/concurrency.ts): 2 at task-threads 1, where one
    // message group per table keeps a single batch in flight; N at N; the configured cap at -1.
    // The mapping grants ReceiveMessage, DeleteMessage, ChangeMessageVisibility and
    // GetQueueAttributes on the queue; the compactor also calls ChangeMessageVisibility itself
    // to give a failed job back after a short backoff instead of the visibility timeout.
    compactor.fn.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: COMPACTOR_BATCH_SIZE,
        reportBatchItemFailures: true,
        maxConcurrency: this.concurrency.maxConcurrency,
      }),
    )
    allowList(compactor.role, bucket)
    allowKey(compactor.role, props.key)
    allowObjects(compactor.role, bucket, ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], [`${this.prefix}*`])
    // follow-up jobs when an input cap left work; commit messages
    allowSend(compactor.role, [this.queue, this.commitQueue])
    denySchemaWrites(compactor.role, bucket, [this.prefix])
    compactor.fn.node.addDependency(this.created)
    return compactor
  }

  /** The maintenance function and its two schedules: the frequent run, and orphan cleanup. */
  private addMaintenance(props: TableResourcesProps, own: string): StrataFunction {
    const { table, bucket } = props
    const fns = props.config.functions
    const maintenance = new StrataFunction(this, 'Maintenance', {
      kind: 'maintenance',
      description: `Expires snapshots, removes orphan files and publishes metrics of table '${table.name}'`,
      settings: fns.maintenance,
      environment: { STRATA_TABLES: own, STRATA_TABLE: table.name },
      logRetentionDays: fns.logRetentionDays,
      logLevel: fns.logLevel,
    })
    allowList(maintenance.role, bucket)
    allowKey(maintenance.role, props.key)
    allowObjects(maintenance.role, bucket, ['s3:GetObject', 's3:DeleteObject'], [`${this.prefix}*`])
    // expiration moves the EARLIEST hint; it writes nothing else but, with Iceberg metadata,
    // the latest snapshot's version when the committer's write of it failed (it brings the
    // metadata up to date before removing old versions)
    allowObjects(maintenance.role, bucket, ['s3:PutObject'], [`${this.prefix}snapshot/EARLIEST`])
    const metadata = this.icebergMetadataPrefix
    if (metadata !== undefined) allowObjects(maintenance.role, bucket, ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], [`${metadata}*`])
    allowQueueAttributes(maintenance.role, [this.queue])
    denySchemaWrites(maintenance.role, bucket, [this.prefix])
    maintenance.fn.node.addDependency(this.created)
    new Rule(this, 'Schedule', {
      description: `Strata maintenance of table '${table.name}'`,
      schedule: Schedule.rate(Duration.minutes(fns.maintenance.scheduleMinutes)),
      // a missed run is made up by the next one
      targets: [new LambdaFunction(maintenance.fn, { retryAttempts: 2, maxEventAge: Duration.minutes(fns.maintenance.scheduleMinutes) })],
    })
    new Rule(this, 'OrphanSchedule', {
      description: `Strata orphan-file cleanup of table '${table.name}'`,
      schedule: Schedule.rate(Duration.hours(fns.maintenance.orphanScheduleHours)),
      targets: [
        new LambdaFunction(maintenance.fn, {
          event: RuleTargetInput.fromObject({ task: REMOVE_ORPHANS_TASK }),
          retryAttempts: 2,
          maxEventAge: Duration.hours(1),
        }),
      ],
    })
    return maintenance
  }

  /**
   * The table's entry in STRATA_TABLES of the functions that write it or serve it.
   * `taskThreads` is the `compaction.task-threads` in force on AWS, the config's: the stored
   * schema keeps the value the table was created with, and the message groups of its jobs
   * (one per table at 1) must match the concurrency this stack deployed.
   */
  runtimeEntry(): { uri: string; compactionQueueUrl: string; commitQueueUrl: string; taskThreads: number } {
    return { uri: this.uri, compactionQueueUrl: this.queue.queueUrl, commitQueueUrl: this.commitQueue.queueUrl, taskThreads: this.taskThreads }
  }
}

/** The committer's Glue pointer (functions/shared/glue.ts reads these). */
function glueEnvironment(table: TableDeployConfig): Record<string, string> {
  if (!table.glue) return {}
  return {
    STRATA_GLUE_DATABASE: table.glue.database,
    STRATA_GLUE_TABLE: table.glue.tableName,
    STRATA_GLUE_UPDATE_INTERVAL_MS: String(table.glue.updateIntervalSeconds * 1000),
  }
}

/**
 * Where the table at `uri` (under `bucketRoot`, `s3://<bucket>/`) writes its Iceberg metadata,
 * as a key prefix ending in `metadata/`, or undefined when it writes none: the place the
 * library's writer takes (lib/iceberg/options.ts icebergLocation), so the grant follows it.
 * The deploy config refuses Iceberg storage outside a warehouse; such a table would write
 * nothing, and gets no grant.
 */
function icebergMetadataPrefix(uri: string, bucketRoot: string, options: Record<string, string>): string | undefined {
  const o = icebergOptions(options)
  if (o.storage === 'disabled') return undefined
  const where = icebergLocation(uri, o)
  return 'refused' in where ? undefined : `${where.root.slice(bucketRoot.length)}/metadata/`
}
