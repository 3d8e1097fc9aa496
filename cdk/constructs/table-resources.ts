// Everything one table has of its own: its commit FIFO queue, FIFO DLQ and committer (the
// one path by which writes and compactions become snapshots), its compaction FIFO queue and
// FIFO DLQ, its compactor (so its concurrency, mapped from `compaction.task-threads`, is its
// own), its maintenance function on a schedule, and the custom resource that creates the
// table.

import { CustomResource, Duration, Stack } from 'aws-cdk-lib'
import { Rule, RuleTargetInput, Schedule } from 'aws-cdk-lib/aws-events'
import { LambdaFunction } from 'aws-cdk-lib/aws-events-targets'
import { SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources'
import type { Bucket } from 'aws-cdk-lib/aws-s3'
import { DeduplicationScope, FifoThroughputLimit, Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import { type CompactorConcurrency, compactorConcurrency } from '../concurrency.ts'
import { COMMIT_QUEUE_RETENTION_SECONDS, type DeployConfig, type TableDeployConfig } from '../config.ts'
import { DLQ_RETENTION, MAX_RECEIVE_COUNT, VISIBILITY_FACTOR } from './ingest.ts'
import { allowList, allowObjects, allowQueueAttributes, allowSend, denySchemaWrites } from './permissions.ts'
import { COMMITTER_LEASE_KEY } from '../../lib/commit/committer-lease.ts'
import { REMOVE_ORPHANS_TASK } from '../../lib/maintenance/orphans.ts'
import { tablePrefix } from './storage.ts'
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

export interface TableResourcesProps {
  table: TableDeployConfig
  config: DeployConfig
  bucket: Bucket
  /** the stack's table-init function, shared by every table */
  tableInit: StrataFunction
  /** the stack's commit feed, when on: the committer publishes to it */
  feed?: CommitFeedQueue
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
  /** the commit FIFO queue (a message group per commit), its DLQ and the committer */
  readonly commitQueue: Queue
  readonly commitDeadLetters: Queue
  readonly committer: StrataFunction
  readonly concurrency: CompactorConcurrency
  /** `compaction.task-threads` as configured for the stack */
  readonly taskThreads: number
  /** the Custom::StrataTable resource; functions that use the table depend on it */
  readonly created: CustomResource

  constructor(scope: Construct, id: string, props: TableResourcesProps) {
    super(scope, id)
    const { table, config, bucket } = props
    const fns = config.functions
    this.name = table.name
    this.taskThreads = table.taskThreads
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

    this.commitDeadLetters = new Queue(this, 'CommitDeadLetters', {
      fifo: true,
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DLQ_RETENTION,
    })
    this.commitQueue = new Queue(this, 'CommitQueue', {
      fifo: true,
      // senders set a deduplication id per send, derived from the commit's identity
      contentBasedDeduplication: false,
      // high-throughput FIFO: each commit message has a message group of its own (commit
      // messages need no order among themselves), so the limits apply per message
      deduplicationScope: DeduplicationScope.MESSAGE_GROUP,
      fifoThroughputLimit: FifoThroughputLimit.PER_MESSAGE_GROUP_ID,
      visibilityTimeout: Duration.seconds(VISIBILITY_FACTOR * table.committer.timeoutSeconds),
      // under orphan cleanup's default age (1 day): a message older than that may name
      // data files that cleanup has already removed as unreferenced
      retentionPeriod: Duration.seconds(COMMIT_QUEUE_RETENTION_SECONDS),
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      deadLetterQueue: { queue: this.commitDeadLetters, maxReceiveCount: MAX_RECEIVE_COUNT },
    })

    // a receipt is deleted by its sender once read; one left behind (its sender gave up
    // waiting) only matters to a redelivery of that commit, which comes within the commit
    // queue's retention
    bucket.addLifecycleRule({
      id: `expire-commit-receipts-${table.name}`,
      prefix: `${this.prefix}${COMMIT_RECEIPTS}`,
      expiration: Duration.days(COMMIT_RECEIPT_RETENTION_DAYS),
    })

    const stack = Stack.of(this)
    const own = stack.toJsonString({ [table.name]: this.runtimeEntry() })

    this.committer = new StrataFunction(this, 'Committer', {
      kind: 'committer',
      description: `Folds the commit messages of table '${table.name}' into snapshots`,
      settings: table.committer,
      environment: { STRATA_TABLES: own, STRATA_TABLE: table.name, ...(props.feed ? { STRATA_FEED_QUEUE_URL: props.feed.queue.queueUrl } : {}) },
      logRetentionDays: fns.logRetentionDays,
      logLevel: fns.logLevel,
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
    this.committer.fn.addEventSource(
      new SqsEventSource(this.commitQueue, {
        batchSize: COMMITTER_BATCH_SIZE,
        reportBatchItemFailures: true,
        maxConcurrency: COMMITTER_MAX_CONCURRENCY,
      }),
    )
    allowList(this.committer.role, bucket)
    // reads the table's state and spilled message bodies
    allowObjects(this.committer.role, bucket, ['s3:GetObject'], [`${this.prefix}*`])
    // manifests, snapshots and LATEST, the folded-commits sidecars, the senders' receipts, the committer lease
    allowObjects(this.committer.role, bucket, ['s3:PutObject'], [`${this.prefix}manifest/*`, `${this.prefix}snapshot/*`, `${this.prefix}${FOLDED_COMMITS}*`, `${this.prefix}${COMMIT_RECEIPTS}*`, `${this.prefix}${COMMITTER_LEASE_KEY}`])
    // spilled bodies once landed, the manifests of a lost snapshot race, the lease when released
    allowObjects(this.committer.role, bucket, ['s3:DeleteObject'], [`${this.prefix}manifest/*`, `${this.prefix}${COMMIT_MESSAGES}*`, `${this.prefix}${COMMITTER_LEASE_KEY}`])
    // an invocation that finds another holding the lease forwards its batch to the queue
    allowSend(this.committer.role, [this.commitQueue])
    // one event per fold to the commit feed, which it may send to and nothing else
    props.feed?.grantPublish(this.committer.role)
    denySchemaWrites(this.committer.role, bucket, [this.prefix])
    this.committer.fn.node.addDependency(this.created)

    this.concurrency = compactorConcurrency(table.taskThreads, { reservedConcurrency: table.compactor.reservedConcurrency, maxConcurrency: table.compactor.maxConcurrency })
    this.compactor = new StrataFunction(this, 'Compactor', {
      kind: 'compactor',
      description: `Compacts table '${table.name}' (compaction.task-threads ${table.taskThreads})`,
      settings: table.compactor,
      environment: { STRATA_TABLES: own, STRATA_TABLE: table.name, STRATA_COMMIT_TIMEOUT_MS: commitWaitMs(table.compactor.timeoutSeconds) },
      logRetentionDays: fns.logRetentionDays,
      logLevel: fns.logLevel,
      reservedConcurrency: this.concurrency.reservedConcurrency,
    })
    // maxConcurrency is always set (cdk/concurrency.ts): 2 at task-threads 1, where one
    // message group per table keeps a single batch in flight; N at N; the configured cap at -1.
    // The mapping grants ReceiveMessage, DeleteMessage, ChangeMessageVisibility and
    // GetQueueAttributes on the queue; the compactor also calls ChangeMessageVisibility itself
    // to give a failed job back after a short backoff instead of the visibility timeout.
    this.compactor.fn.addEventSource(
      new SqsEventSource(this.queue, {
        batchSize: COMPACTOR_BATCH_SIZE,
        reportBatchItemFailures: true,
        maxConcurrency: this.concurrency.maxConcurrency,
      }),
    )
    allowList(this.compactor.role, bucket)
    allowObjects(this.compactor.role, bucket, ['s3:GetObject', 's3:PutObject', 's3:DeleteObject'], [`${this.prefix}*`])
    // follow-up jobs when an input cap left work; commit messages
    allowSend(this.compactor.role, [this.queue, this.commitQueue])
    denySchemaWrites(this.compactor.role, bucket, [this.prefix])
    this.compactor.fn.node.addDependency(this.created)

    this.maintenance = new StrataFunction(this, 'Maintenance', {
      kind: 'maintenance',
      description: `Expires snapshots, removes orphan files and publishes metrics of table '${table.name}'`,
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
    new Rule(this, 'OrphanSchedule', {
      description: `Strata orphan-file cleanup of table '${table.name}'`,
      schedule: Schedule.rate(Duration.hours(fns.maintenance.orphanScheduleHours)),
      targets: [
        new LambdaFunction(this.maintenance.fn, {
          event: RuleTargetInput.fromObject({ task: REMOVE_ORPHANS_TASK }),
          retryAttempts: 2,
          maxEventAge: Duration.hours(1),
        }),
      ],
    })
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
