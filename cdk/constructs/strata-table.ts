// StrataTable: one table, for a user who has one. A thin construct over StrataTables (under
// the id `Default`, which CDK leaves out of logical ids, so its resources are named as a
// StrataTables in its place would name them); its grants and metrics need no table name.

import type { Metric, MetricOptions } from 'aws-cdk-lib/aws-cloudwatch'
import type { Grant, IGrantable } from 'aws-cdk-lib/aws-iam'
import type { IKey } from 'aws-cdk-lib/aws-kms'
import type { Function as LambdaFunction, FunctionUrl } from 'aws-cdk-lib/aws-lambda'
import type { IBucket } from 'aws-cdk-lib/aws-s3'
import type { ITopic } from 'aws-cdk-lib/aws-sns'
import type { IQueue } from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import { type StrataTableProps, configOfTable } from '../props.ts'
import { StrataTables, strataTablesOf } from './strata-tables.ts'

export class StrataTable extends Construct {
  /** The StrataTables this table is deployed with (its functions, queues, alarms). */
  readonly deployment: StrataTables
  readonly tableName: string
  /** `s3://<bucket>/tables/<name>`, or `s3://<bucket>/<warehouse>/<database>.db/<name>`: where the library opens the table. */
  readonly tableUri: string
  readonly bucket: IBucket
  readonly encryptionKey?: IKey
  readonly writerFunction: LambdaFunction
  readonly readerFunction: LambdaFunction
  readonly readerUrl: FunctionUrl
  readonly ingestQueue?: IQueue
  readonly ingestDeadLetterQueue?: IQueue
  readonly feedQueue?: IQueue
  readonly alarmTopic: ITopic

  constructor(scope: Construct, id: string, props: StrataTableProps) {
    super(scope, id)
    const validated = configOfTable(props, `StrataTable '${this.node.path}'`)
    const d = (this.deployment = strataTablesOf(this, 'Default', validated))
    this.tableName = props.name
    this.tableUri = d.tableUri(props.name)
    this.bucket = d.bucket
    this.encryptionKey = d.encryptionKey
    this.writerFunction = d.writerFunction
    this.readerFunction = d.readerFunction
    this.readerUrl = d.readerUrl
    this.ingestQueue = d.ingestQueue
    this.ingestDeadLetterQueue = d.ingestDeadLetterQueue
    this.feedQueue = d.feedQueue
    this.alarmTopic = d.alarmTopic
  }

  /** StrataTables.grantRead for this table. */
  grantRead(grantee: IGrantable): Grant {
    return this.deployment.grantRead(grantee, this.tableName)
  }

  /** StrataTables.grantConsume for this table. */
  grantConsume(grantee: IGrantable): Grant {
    return this.deployment.grantConsume(grantee, this.tableName)
  }

  /** StrataTables.grantWrite: send to the ingest source. */
  grantWrite(grantee: IGrantable): Grant {
    return this.deployment.grantWrite(grantee)
  }

  /** StrataTables.grantInvokeReader. */
  grantInvokeReader(grantee: IGrantable): Grant {
    return this.deployment.grantInvokeReader(grantee)
  }

  metricFreshnessLag(props?: MetricOptions): Metric {
    return this.deployment.metricFreshnessLag(this.tableName, props)
  }

  metricL0FileCount(props?: MetricOptions): Metric {
    return this.deployment.metricL0FileCount(this.tableName, props)
  }

  metricCompactionBacklog(props?: MetricOptions): Metric {
    return this.deployment.metricCompactionBacklog(this.tableName, props)
  }

  metricRowsWritten(props?: MetricOptions): Metric {
    return this.deployment.metricRowsWritten(this.tableName, props)
  }

  metricIngestAge(props?: MetricOptions): Metric {
    return this.deployment.metricIngestAge(props)
  }
}
