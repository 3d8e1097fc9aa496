// The commit feed's queue (lib/commit/commit-feed.ts, docs/operations.md "The commit feed"):
// one standard SQS queue for the stack, to which every table's committer publishes an event
// per fold that created snapshots ({"table", "fromSnapshot", "toSnapshot", "snapshots",
// "kinds"}). Downstream functions subscribe with an SQS event source (a FilterCriteria on
// the body's "table" or "kinds" picks their events), or an EventBridge Pipe forwards the
// queue to a bus. Only the committers may send to it; what reads it is the user's to grant.

import { Duration } from 'aws-cdk-lib'
import type { IRole } from 'aws-cdk-lib/aws-iam'
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import { acknowledge } from '../nag.ts'
import { allowSend } from './permissions.ts'

export class CommitFeedQueue extends Construct {
  readonly queue: Queue

  constructor(scope: Construct, id: string, cfg: { retentionDays: number }) {
    super(scope, id)
    this.queue = new Queue(this, 'Queue', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: Duration.days(cfg.retentionDays),
    })
    acknowledge(
      this.queue,
      'SQS3',
      "The commit feed's events are notifications that snapshots exist, not data: a consumer that fails one reads the same increment on its next event through its consumer id (strata read --consumer-id), so a poison event has nothing to preserve; the queue's consumers are the user's functions, whose event-source mappings set their own failure handling.",
    )
  }

  /** sqs:SendMessage on this queue only. */
  grantPublish(role: IRole): void {
    allowSend(role, [this.queue])
  }
}
