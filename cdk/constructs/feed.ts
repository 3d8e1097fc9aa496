// The commit feed's queue (lib/commit/commit-feed.ts, docs/operations.md "The commit feed"):
// one standard SQS queue for the stack, to which every table's committer publishes an event
// per fold that created snapshots ({"table", "fromSnapshot", "toSnapshot", "snapshots",
// "kinds"}). Downstream functions subscribe with an SQS event source (a FilterCriteria on
// the body's "table" or "kinds" picks their events); or, with `feed.eventBus`, an
// EventBridge Pipe forwards every event to a bus (one the stack creates, or an existing
// one), as an event with source `strata`, detail-type `Strata commit` and the event as its
// detail, for EventBridge rules to route. Only the committers may send to the queue; the
// pipe's role may only consume it and put events on that one bus.

import { Duration, Stack } from 'aws-cdk-lib'
import { EventBus, type IEventBus } from 'aws-cdk-lib/aws-events'
import { type IRole, PolicyStatement, Role, ServicePrincipal } from 'aws-cdk-lib/aws-iam'
import { CfnPipe } from 'aws-cdk-lib/aws-pipes'
import type { IKey } from 'aws-cdk-lib/aws-kms'
import { Queue } from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import { acknowledge } from '../nag.ts'
import { queueEncryption } from './ingest.ts'
import { allowKey, allowSend } from './permissions.ts'

export class CommitFeedQueue extends Construct {
  readonly queue: Queue
  /** with `eventBus`: the bus the pipe feeds */
  readonly bus?: IEventBus
  readonly pipe?: CfnPipe

  /** `bus`: an event bus of the user's to forward to (instead of `cfg.eventBus`); `key`: the queue's KMS key. */
  constructor(scope: Construct, id: string, cfg: { retentionDays: number; eventBus?: string }, bus?: IEventBus, private readonly key?: IKey) {
    super(scope, id)
    this.queue = new Queue(this, 'Queue', {
      ...queueEncryption(key),
      enforceSSL: true,
      retentionPeriod: Duration.days(cfg.retentionDays),
    })
    acknowledge(
      this.queue,
      'SQS3',
      "The commit feed's events are notifications that snapshots exist, not data: a consumer that fails one reads the same increment on its next event through its consumer id (strata read --consumer-id), so a poison event has nothing to preserve; the queue's consumers are the user's functions, whose event-source mappings set their own failure handling.",
    )
    if (cfg.eventBus === undefined && !bus) return
    this.bus = bus ?? (cfg.eventBus === 'create' ? new EventBus(this, 'Bus', { eventBusName: `${Stack.of(this).stackName}-commits` }) : EventBus.fromEventBusArn(this, 'Bus', cfg.eventBus!))
    const role = new Role(this, 'PipeRole', { assumedBy: new ServicePrincipal('pipes.amazonaws.com'), description: 'Forwards commit-feed events from the feed queue to the event bus' })
    role.addToPrincipalPolicy(new PolicyStatement({ actions: ['sqs:ReceiveMessage', 'sqs:DeleteMessage', 'sqs:GetQueueAttributes'], resources: [this.queue.queueArn] }))
    role.addToPrincipalPolicy(new PolicyStatement({ actions: ['events:PutEvents'], resources: [this.bus.eventBusArn] }))
    allowKey(role, key, false)
    this.pipe = new CfnPipe(this, 'Pipe', {
      description: 'Strata commit feed: queue to event bus',
      roleArn: role.roleArn,
      source: this.queue.queueArn,
      sourceParameters: { sqsQueueParameters: { batchSize: 10 } },
      target: this.bus.eventBusArn,
      targetParameters: {
        // the message body is the event's JSON, which Pipes parses: it becomes the detail
        inputTemplate: '<$.body>',
        eventBridgeEventBusParameters: { source: 'strata', detailType: 'Strata commit' },
      },
    })
    // the role's policy exists before the pipe starts polling
    this.pipe.node.addDependency(role)
  }

  /** sqs:SendMessage on this queue only. */
  grantPublish(role: IRole): void {
    allowSend(role, [this.queue])
    allowKey(role, this.key)
  }
}
