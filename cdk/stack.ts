// The repository's stack, an example of the construct library: one StrataTables built from
// the validated JSON config (cdk/config.ts), and the stack outputs. The construct's id is
// `Default`, which CDK leaves out of logical ids, so the resources keep the ids they had
// when the stack built them itself. Nothing is looked up in an account, so `cdk synth`
// runs offline.

import { CfnOutput, Stack, type StackProps } from 'aws-cdk-lib'
import type { Construct } from 'constructs'
import type { DeployConfig } from './config.ts'
import { type StrataTables, strataTablesFromConfig } from './constructs/strata-tables.ts'

export class StrataStack extends Stack {
  readonly strata: StrataTables

  constructor(scope: Construct, id: string, readonly config: DeployConfig, props: StackProps = {}) {
    super(scope, id, { description: 'Strata: primary-key tables on S3 in Apache Paimon format', ...props })
    this.strata = strataTablesFromConfig(this, 'Default', config)
    const { bucket, monitoring, feed } = this.strata
    const url = this.strata.readerUrl
    new CfnOutput(this, 'BucketName', { value: bucket.bucketName })
    new CfnOutput(this, 'ReaderUrl', { value: url.url, description: 'Function URL of the reader (SigV4-signed requests, service lambda)' })
    new CfnOutput(this, 'ReaderFunctionName', { value: this.reader.fn.functionName })
    new CfnOutput(this, 'ReaderFunctionArn', {
      value: this.reader.fn.functionArn,
      description: 'Callers of the Function URL need lambda:InvokeFunctionUrl and lambda:InvokeFunction on this ARN (docs/operations.md)',
    })
    new CfnOutput(this, 'AlarmTopicArn', { value: monitoring.topic.topicArn, description: 'Every alarm and OK notification goes here' })
    new CfnOutput(this, 'WriterFunctionName', { value: this.writer.fn.functionName })
    if (this.ingest.queue) new CfnOutput(this, 'IngestQueueUrl', { value: this.ingest.queue.queueUrl })
    if (this.ingest.deadLetters) new CfnOutput(this, 'IngestDeadLetterQueueUrl', { value: this.ingest.deadLetters.queueUrl })
    if (feed) {
      new CfnOutput(this, 'CommitFeedQueueUrl', { value: feed.queue.queueUrl, description: 'One event per commit fold: {table, fromSnapshot, toSnapshot, snapshots, kinds} (docs/operations.md, "The commit feed")' })
      new CfnOutput(this, 'CommitFeedQueueArn', { value: feed.queue.queueArn })
      if (feed.bus) new CfnOutput(this, 'CommitFeedEventBusArn', { value: feed.bus.eventBusArn, description: "The commit feed's events on EventBridge: source strata, detail-type 'Strata commit'" })
    }
    new CfnOutput(this, 'DashboardName', { value: monitoring.dashboard.dashboardName })
    for (const t of this.tables) {
      new CfnOutput(this, `${t.node.id}Uri`, { value: t.uri, description: `Location of table '${t.name}' (strata status <uri>)` })
      new CfnOutput(this, `${t.node.id}CompactionQueueUrl`, { value: t.queue.queueUrl })
      new CfnOutput(this, `${t.node.id}CompactionDeadLetterQueueUrl`, { value: t.deadLetters.queueUrl })
      new CfnOutput(this, `${t.node.id}CommitQueueUrl`, { value: t.commitQueue.queueUrl })
      new CfnOutput(this, `${t.node.id}CommitDeadLetterQueueUrl`, { value: t.commitDeadLetters.queueUrl })
    }
  }

  // the construct's parts, as the stack's tests and scripts name them
  get storage() {
    return this.strata.storage
  }
  get ingest() {
    return this.strata.ingest
  }
  get writer() {
    return this.strata.writer
  }
  get reader() {
    return this.strata.reader
  }
  get tableInit() {
    return this.strata.tableInit
  }
  get tables() {
    return this.strata.tables
  }
  get monitoring() {
    return this.strata.monitoring
  }
  get feed() {
    return this.strata.feed
  }
}
