// The Strata stack: one bucket, the ingest source and the writer, a reader behind a
// Function URL (AWS_IAM auth), per table its commit queue and committer, compaction queue,
// compactor and maintenance function, the commit feed's queue (unless turned off), the custom resource that creates the tables, alarms
// on every function, queue and table (to the configured SNS topic, or an encrypted one the
// stack creates) and a dashboard. Built from a validated DeployConfig (cdk/config.ts); nothing is looked
// up in an account, so `cdk synth` runs offline.

import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib'
import { FunctionUrlAuthType } from 'aws-cdk-lib/aws-lambda'
import { Construct } from 'constructs'
import type { DeployConfig } from './config.ts'
import { IngestSource } from './constructs/ingest.ts'
import { Monitoring } from './constructs/monitoring.ts'
import { allowList, allowObjects, allowSend, denySchemaWrites } from './constructs/permissions.ts'
import { REJECTS_PREFIX, StrataStorage } from './constructs/storage.ts'
import { StrataFunction } from './constructs/strata-function.ts'
import { COMMIT_RECEIPTS, TableResources, commitWaitMs } from './constructs/table-resources.ts'
import { CommitFeedQueue } from './constructs/feed.ts'

export class StrataStack extends Stack {
  readonly storage: StrataStorage
  readonly ingest: IngestSource
  readonly writer: StrataFunction
  readonly reader: StrataFunction
  readonly tableInit: StrataFunction
  readonly tables: TableResources[]
  readonly monitoring: Monitoring
  /** the commit feed's queue (config.feed.enabled) */
  readonly feed?: CommitFeedQueue

  constructor(scope: Construct, id: string, readonly config: DeployConfig, props: StackProps = {}) {
    super(scope, id, { description: 'Strata: primary-key tables on S3 in Apache Paimon format', ...props })
    const fns = config.functions
    this.storage = new StrataStorage(this, 'Storage', config.bucket)
    const bucket = this.storage.bucket

    this.tableInit = new StrataFunction(this, 'TableInit', {
      kind: 'tableInit',
      description: 'Creates the configured tables (custom resource Custom::StrataTable)',
      settings: { memoryMb: 512, timeoutSeconds: 60 },
      environment: {},
      logRetentionDays: fns.logRetentionDays,
      logLevel: fns.logLevel,
    })
    allowList(this.tableInit.role, bucket)
    this.feed = config.feed.enabled ? new CommitFeedQueue(this, 'CommitFeed', config.feed) : undefined
    this.tables = config.tables.map((t) => new TableResources(this, `Table${pascal(t.name)}`, { table: t, config, bucket, tableInit: this.tableInit, feed: this.feed }))

    const rejectUri = `s3://${bucket.bucketName}/${REJECTS_PREFIX.slice(0, -1)}`
    this.ingest = new IngestSource(this, 'Ingest', config.ingest, fns.writer.timeoutSeconds)
    this.writer = new StrataFunction(this, 'Writer', {
      kind: 'writer',
      description: `Writes ingest records to ${config.tables.map((t) => t.name).join(', ')}`,
      settings: fns.writer,
      environment: {
        STRATA_TABLES: this.toJsonString(Object.fromEntries(this.tables.map((t) => [t.name, t.runtimeEntry()]))),
        STRATA_REJECT_URI: rejectUri,
        STRATA_COMMIT_TIMEOUT_MS: commitWaitMs(fns.writer.timeoutSeconds),
      },
      logRetentionDays: fns.logRetentionDays,
      logLevel: fns.logLevel,
    })
    const w = this.writer.role
    allowList(w, bucket)
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
    for (const t of this.tables) this.writer.fn.node.addDependency(t.created)
    this.ingest.connect(this.writer.fn)

    this.reader = new StrataFunction(this, 'Reader', {
      kind: 'reader',
      description: 'Scans, key lookups and status over a Function URL (AWS_IAM)',
      settings: fns.reader,
      environment: {
        STRATA_TABLES: this.toJsonString(Object.fromEntries(this.tables.map((t) => [t.name, { uri: t.uri }]))),
        STRATA_MAX_RESULT_ROWS: String(fns.reader.maxResultRows),
      },
      logRetentionDays: fns.logRetentionDays,
      logLevel: fns.logLevel,
    })
    allowList(this.reader.role, bucket)
    allowObjects(this.reader.role, bucket, ['s3:GetObject'], this.tables.map((t) => `${t.prefix}*`))
    const url = this.reader.fn.addFunctionUrl({ authType: FunctionUrlAuthType.AWS_IAM })

    this.monitoring = new Monitoring(this, 'Monitoring', {
      config,
      tables: this.tables,
      writer: this.writer,
      reader: this.reader,
      tableInit: this.tableInit,
      ingestQueue: this.ingest.queue,
      ingestDeadLetters: this.ingest.deadLetters,
    })

    new CfnOutput(this, 'BucketName', { value: bucket.bucketName })
    new CfnOutput(this, 'ReaderUrl', { value: url.url, description: 'Function URL of the reader (SigV4-signed requests, service lambda)' })
    new CfnOutput(this, 'ReaderFunctionName', { value: this.reader.fn.functionName })
    new CfnOutput(this, 'ReaderFunctionArn', {
      value: this.reader.fn.functionArn,
      description: 'Callers of the Function URL need lambda:InvokeFunctionUrl and lambda:InvokeFunction on this ARN (docs/operations.md)',
    })
    new CfnOutput(this, 'AlarmTopicArn', { value: this.monitoring.topic.topicArn, description: 'Every alarm and OK notification goes here' })
    new CfnOutput(this, 'WriterFunctionName', { value: this.writer.fn.functionName })
    if (this.ingest.queue) new CfnOutput(this, 'IngestQueueUrl', { value: this.ingest.queue.queueUrl })
    new CfnOutput(this, 'IngestDeadLetterQueueUrl', { value: this.ingest.deadLetters.queueUrl })
    if (this.feed) {
      new CfnOutput(this, 'CommitFeedQueueUrl', { value: this.feed.queue.queueUrl, description: 'One event per commit fold: {table, fromSnapshot, toSnapshot, snapshots, kinds} (docs/operations.md, "The commit feed")' })
      new CfnOutput(this, 'CommitFeedQueueArn', { value: this.feed.queue.queueArn })
      if (this.feed.bus) new CfnOutput(this, 'CommitFeedEventBusArn', { value: this.feed.bus.eventBusArn, description: "The commit feed's events on EventBridge: source strata, detail-type 'Strata commit'" })
    }
    new CfnOutput(this, 'DashboardName', { value: this.monitoring.dashboard.dashboardName })
    for (const t of this.tables) {
      new CfnOutput(this, `${t.node.id}Uri`, { value: t.uri, description: `Location of table '${t.name}' (strata status <uri>)` })
      new CfnOutput(this, `${t.node.id}CompactionQueueUrl`, { value: t.queue.queueUrl })
      new CfnOutput(this, `${t.node.id}CompactionDeadLetterQueueUrl`, { value: t.deadLetters.queueUrl })
      new CfnOutput(this, `${t.node.id}CommitQueueUrl`, { value: t.commitQueue.queueUrl })
      new CfnOutput(this, `${t.node.id}CommitDeadLetterQueueUrl`, { value: t.commitDeadLetters.queueUrl })
    }
  }
}

/** A table name as a construct id part: `page_views` → `PageViews`. */
function pascal(name: string): string {
  return name
    .split(/[-_]/)
    .filter(Boolean)
    .map((p) => p[0].toUpperCase() + p.slice(1))
    .join('')
}
