// The commit queue: where writers and compactors send commit messages and where the
// committer function drains them (docs/design.md "How a commit travels"). On AWS and on the
// local runtime it is an SQS FIFO queue per table. Each message is its own message group:
// commit messages need no order among themselves (sequence numbers order the versions of a
// key, and every compaction is checked against the state folded so far), and distinct groups
// let one receive return ten messages and let the committer keep receiving while the
// messages it holds are in flight. FIFO still gives each send a deduplication id, so an
// SDK-level retry of one send is not queued twice.

import { createHash, randomUUID } from 'node:crypto'
import {
  ChangeMessageVisibilityBatchCommand,
  DeleteMessageBatchCommand,
  ReceiveMessageCommand,
  SendMessageCommand,
  type SQSClient,
} from '@aws-sdk/client-sqs'

export interface QueuedCommitMessage {
  messageId: string
  body: string
  /** what deletes or releases it */
  receiptHandle: string
}

/** What a sender needs. */
export interface CommitQueue {
  /** Sends one encoded commit message; `identity` (commitKeyOf) names its group. */
  send(body: string, identity: string): Promise<void>
}

/** What the committer needs to drain beyond the batch it was invoked with. */
export interface DrainableCommitQueue {
  /** Up to `max` (1..10) messages that are visible now; an empty answer means none are. */
  receive(max: number): Promise<QueuedCommitMessage[]>
  /** Removes settled messages. */
  delete(messages: QueuedCommitMessage[]): Promise<void>
  /** Makes messages visible again at once (not settled; another committer may take them). */
  release(messages: QueuedCommitMessage[]): Promise<void>
}

/** SQS's message group id: up to 128 characters; a hash of the identity fits. */
export function commitGroupId(identity: string): string {
  return createHash('sha256').update(identity).digest('hex').slice(0, 64)
}

export class SqsCommitQueue implements CommitQueue, DrainableCommitQueue {
  constructor(
    private readonly client: SQSClient,
    readonly queueUrl: string,
  ) {}

  async send(body: string, identity: string): Promise<void> {
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: body,
        MessageGroupId: commitGroupId(identity),
        // one id per send: an SDK retry of this call is dropped by SQS, while a later send
        // of the same identity (a redelivered writer batch) is queued and then recognised
        // by the committer as a duplicate if the first one landed
        MessageDeduplicationId: randomUUID().replace(/-/g, ''),
      }),
    )
  }

  async receive(max: number): Promise<QueuedCommitMessage[]> {
    const res = await this.client.send(new ReceiveMessageCommand({ QueueUrl: this.queueUrl, MaxNumberOfMessages: Math.min(10, Math.max(1, max)), WaitTimeSeconds: 0 }))
    return (res.Messages ?? []).map((m) => ({ messageId: m.MessageId!, body: m.Body ?? '', receiptHandle: m.ReceiptHandle! }))
  }

  async delete(messages: QueuedCommitMessage[]): Promise<void> {
    const failed = (await Promise.all(chunks(messages).map(async (chunk) => {
      const res = await this.client.send(new DeleteMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: chunk.map((m, j) => ({ Id: String(j), ReceiptHandle: m.receiptHandle })) }))
      return res.Failed ?? []
    }))).flat()
    // a message not deleted comes back after its visibility timeout and is then
    // recognised as landed; worth no more than a log line to the caller
    if (failed.length) throw new Error(`commit queue: ${failed.length} settled message(s) not deleted (${failed[0].Code}); they will be redelivered and recognised as landed`)
  }

  async release(messages: QueuedCommitMessage[]): Promise<void> {
    await Promise.all(chunks(messages).map((chunk) =>
      this.client.send(new ChangeMessageVisibilityBatchCommand({ QueueUrl: this.queueUrl, Entries: chunk.map((m, j) => ({ Id: String(j), ReceiptHandle: m.receiptHandle, VisibilityTimeout: 0 })) })),
    ))
  }
}

/** SQS batch calls take ten entries; a drained fold sends them all at once. */
function chunks<T>(xs: T[]): T[][] {
  const out: T[][] = []
  for (let i = 0; i < xs.length; i += 10) out.push(xs.slice(i, i + 10))
  return out
}
