// Everything one table has of its own: its compaction FIFO queue and FIFO DLQ, its
// compactor (so its concurrency, mapped from `compaction.task-threads`, is its own), its
// maintenance function on a schedule, the custom resource that creates the table, and,
// with `committer.enabled`, its commit FIFO queue, DLQ and batching committer function.

import { CustomResource, Duration, Stack } from 'aws-cdk-lib'
import { Rule, Schedule } from 'aws-cdk-lib/aws-events'
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets'
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources'
import type { Bucket } from 'aws-cdk-lib/aws-s3'
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import { type CompactorConcurrency, compactorConcurrency } from '../concurrency.ts'
import type { DeployConfig, TableDeployConfig } from '../config.ts'
import { DLQ_RETENTION, MAX_RECEIVE_COUNT, VISIBILITY_FACTOR } from './ingest.ts'
import { allowList, allowObjects, allowQueueAttributes, allowSend, denySchemaWrites } from './permissions.ts'
import { tablePrefix } from './storage.ts'
import { StrataFunction } from './strata-function.ts'

/** Lambda's SQS FIFO event source takes at most 10 messages a batch. */
export const COMPACTOR_BATCH_SIZE = 10
export const COMMITTER_BATCH_SIZE = 10
/** The one message group of a table's commit queue: its commits are folded in queue order. */
export const COMMIT_MESSAGE_GROUP = 'table'

export interface TableResourcesProps {
  table: TableDeployConfig
  config: DeployConfig
  bucket: Bucket
  /** the stack's table-init function, shared by every table */
  tableInit: StrataFunction
}

export class TableResources extends Construct {
  readonly name: string
  /** `tables/<name>/` */
  readonly prefix: string
  /** s3://<bucket>/tables/<name> */
  readonly uri: string
  readonly queue: Queue
  readonly deadLetters: Queue
  readonly compactor: StrataFunction
  readonly maintenance: StrataFunction
  /** with `committer.enabled`: the commit FIFO queue (one message group per table), its DLQ and the committer */
  readonly commitQueue?: Queue
  readonly commitDeadLetters?: Queue
  readonly committer?: StrataFunction
  readonly concurrency: CompactorConcurrency
  /** the Custom::StrataTable resource; functions that use the table depend on it */
  readonly created: CustomResource

  constructor(scope: Construct, id: string, props: TableResourcesProps) {
    super(scope, id)
    const { table, config, bucket } = props
    const fns = config.functions
    this.name = table.name
    this.prefix = tablePrefix(table.name)
    this.uri = `s3://${bucket.bucketName}/${this.prefix.slice(0, -1)}`

    this.created = new CustomResource(this, 'Table', {
      serviceToken: props.tableInit.fn.functionArn,
      resourceType: 'Custom::StrataTable',
      properties: { TableName: table.name, TableUri: this.uri, Schema: JSON.stringify(table.schemaInput) },
    })
    allowObjects(props.tableInit.role, bucket, ['s3:GetObject', 's3:PutObject'], [`${this.prefix}schema/*`])

    this.deadLetters = new Queue(this, 'CompactionDeadLetters', {
      fifo: true,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DLQ_RETENTION,
    })
    this.queue = new Queue(this, 'CompactionQueue', {
      fifo: true,
      // writers give every job a deduplication id derived from its bucket and snapshot
      contentBasedDeduplication: false,
      // high-throughput FIFO: the limits apply per message group (per bucket), not per queue
      deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
      fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
      visibilityTimeout: Duration.seconds(VISIBILITY_FACTOR * table.compactor.timeoutSeconds),
      retentionPeriod: Duration.days(14),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.deadLetters, maxReceiveCount: MAX_RECEIVE_COUNT },
    })

    const stack = Stack.of(this)
    const own = stack.toJsonString({ [table.name]: { uri: this.uri, compactionQueueUrl: this.queue.queueUrl } })
    this.concurrency = compactorConcurrency(table.taskThreads, table.compactor.reservedConcurrency)
    this.compactor = new StrataFunction(this, 'Compactor', {
      kind: 'compactor',
      description: `Compacts table '${table.name}' (compaction.task-threads ${table.taskThreads})`,
      settings: table.compactor,
      environment: { STRATA_TABLES: own, STRATA_TABLE: table.name },
      logRetentionDays: fns.logRetentionDays,
      logLevel: fns.logLevel,
      reservedConcurrency: this.concurrency.reservedConcurrency,
    })
    this.compactor.fn.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: COMPACTOR_BATCH_SIZE,
        reportBatchItemFailures: true,
        maxConcurrency: this.concurrency.maxConcurrency,
      }),
    )
    allowList(this.compactor.role, bucket)
    allowObjects(this.compactor.role, bucket, ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], [`${this.prefix}*`])
    allowSend(this.compactor.role, [this.queue]) // follow-up jobs when an input cap left work
    denySchemaWrites(this.compactor.role, bucket, [this.prefix])
    this.compactor.fn.node.addDependency(this.created)

    if (table.committer.enabled) {
      this.commitDeadLetters = new Queue(this, 'CommitDeadLetters', {
        fifo: true,
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: DLQ_RETENTION,
      })
      this.commitQueue = new Queue(this, 'CommitQueue', {
        fifo: true,
        // senders give each message its commit identity as deduplication id
        contentBasedDeduplication: false,
        visibilityTimeout: Duration.seconds(VISIBILITY_FACTOR * table.committer.timeoutSeconds),
        // under orphan cleanup's default age (1 day): a message older than that may name
        // data files that cleanup has already removed as unreferenced
        retentionPeriod: Duration.hours(12),
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        deadLetterQueue: { queue: this.commitDeadLetters, maxReceiveCount: MAX_RECEIVE_COUNT },
      })
      this.committer = new StrataFunction(this, 'Committer', {
        kind: 'committer',
        description: `Folds the commit messages of table '${table.name}' into snapshots`,
        settings: table.committer,
        environment: { STRATA_TABLES: own, STRATA_TABLE: table.name },
        logRetentionDays: fns.logRetentionDays,
        logLevel: fns.logLevel,
      })
      // one message group per table: the FIFO event source runs at most one batch of a group
      // at a time, so the table has one committer in flight without reserving concurrency
      this.committer.fn.addEventSource(new SqsEventSource(this.commitQueue, { batchSize: COMMITTER_BATCH_SIZE, reportBatchItemFailures: true }))
      allowList(this.committer.role, bucket)
      // writes manifests, snapshots, LATEST and _strata/folded-commits/; deletes spilled
      // messages under _strata/commit-messages/ and the manifests of a lost race
      allowObjects(this.committer.role, bucket, ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], [`${this.prefix}*`])
      denySchemaWrites(this.committer.role, bucket, [this.prefix])
      this.committer.fn.node.addDependency(this.created)
    }

    this.maintenance = new StrataFunction(this, 'Maintenance', {
      kind: 'maintenance',
      description: `Expires snapshots, removes orphans and publishes metrics of table '${table.name}'`,
      settings: fns.maintenance,
      environment: { STRATA_TABLES: own, STRATA_TABLE: table.name },
      logRetentionDays: fns.logRetentionDays,
      logLevel: fns.logLevel,
    })
    allowList(this.maintenance.role, bucket)
    allowObjects(this.maintenance.role, bucket, ['s3:GetObject', 's3:DeleteObject'], [`${this.prefix}*`])
    // expiration moves the EARLIEST hint; it writes nothing else
    allowObjects(this.maintenance.role, bucket, ['s3:PutObject'], [`${this.prefix}snapshot/EARLIEST`])
    allowQueueAttributes(this.maintenance.role, [this.queue])
    denySchemaWrites(this.maintenance.role, bucket, [this.prefix])
    this.maintenance.fn.node.addDependency(this.created)
    new Rule(this, 'Schedule', {
      description: `Strata maintenance of table '${table.name}'`,
      schedule: Schedule.rate(Duration.minutes(fns.maintenance.scheduleMinutes)),
      // a missed run is made up by the next one
      targets: [new LambdaFunction(this.maintenance.fn, { retryAttempts: 2, maxEventAge: Duration.minutes(fns.maintenance.scheduleMinutes) })],
    })
  }
}
