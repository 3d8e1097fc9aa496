// The commit feed: after each fold that created snapshots, the committer publishes one event
// naming the table and the snapshots, so downstream functions read the increment
// (lib/read/incremental.ts) when it lands instead of polling the snapshot directory
// (docs/operations.md "The commit feed").
//
// The port is CommitFeed; SqsCommitFeed is its AWS implementation, a standard SQS queue.
// EventBridge was the other candidate. SQS was chosen because the project's own embedded
// backend (local/embedded.ts, fauxqs) serves SQS but not EventBridge, so the feed is tested
// end to end like every other queue here, and the SQS client is already a dependency of
// the functions; for an EventBridge bus the stack adds an EventBridge Pipe from the queue to
// the bus (cdk/constructs/feed.ts, config `feed.eventBus`), with no code here.
//
// Delivery is at least once and unordered (a standard queue, a retried publish): an event
// says "snapshots up to toSnapshot exist", it is not the increment itself. A consumer
// should read with its consumer id (`strata read --consumer-id`), which reads exactly what
// it has not read yet however many events it sees, late or twice.
//
// A publish never fails a commit nor delays it: it starts after the fold's snapshots have
// landed, its failure is logged and counted (FeedFailures), and the committer only waits
// for it before its invocation ends.

import { SendMessageCommand, type SQSClient } from '@aws-sdk/client-sqs'

export interface CommitEventSnapshot {
  id: number
  kind: 'APPEND' | 'COMPACT' | 'OVERWRITE'
  /** commit messages the snapshot folded */
  commits: number
}

export interface CommitEvent {
  version: 1
  /** the table's configured name */
  table: string
  /** the snapshot the increment starts after: `strata read --from-snapshot fromSnapshot --to-snapshot toSnapshot` */
  fromSnapshot: number
  /** the last snapshot the fold created */
  toSnapshot: number
  /** the snapshots the fold created, in order (usually one APPEND and one COMPACT at most) */
  snapshots: CommitEventSnapshot[]
  /** the distinct kinds of `snapshots`, for event filters (an SQS event source's FilterCriteria on the body) */
  kinds: string[]
  /** epoch millis of the publish */
  time: number
}

export interface CommitFeed {
  publish(event: CommitEvent): Promise<void>
}

/** The event of a fold's snapshots, or null when it created none. */
export function commitEventOf(table: string, snapshots: CommitEventSnapshot[], time = Date.now()): CommitEvent | null {
  if (snapshots.length === 0) return null
  const sorted = [...snapshots].sort((a, b) => a.id - b.id)
  return {
    version: 1,
    table,
    fromSnapshot: sorted[0].id - 1,
    toSnapshot: sorted[sorted.length - 1].id,
    snapshots: sorted,
    kinds: [...new Set(sorted.map((s) => s.kind))],
    time,
  }
}

/** Publishes to a standard SQS queue: the event as the JSON body, the table and kinds as message attributes. */
export class SqsCommitFeed implements CommitFeed {
  constructor(
    private readonly client: SQSClient,
    private readonly queueUrl: string,
  ) {}

  async publish(event: CommitEvent): Promise<void> {
    await this.client.send(
      new SendMessageCommand({
        QueueUrl: this.queueUrl,
        MessageBody: JSON.stringify(event),
        MessageAttributes: {
          table: { DataType: 'String', StringValue: event.table },
          kinds: { DataType: 'String', StringValue: event.kinds.join(',') },
        },
      }),
    )
  }
}

/** How long a committer waits for one publish before it counts it failed (the invocation must not wait on a hung request). */
export const FEED_PUBLISH_TIMEOUT_MS = 5_000

/**
 * Publishes and never throws: a failure, or no answer within `timeoutMs`, is handed to
 * `onFailure` (log it, count it). Returns whether it went out.
 */
export async function publishQuietly(feed: CommitFeed, event: CommitEvent, onFailure: (error: Error, event: CommitEvent) => void, timeoutMs = FEED_PUBLISH_TIMEOUT_MS): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined
  try {
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer from the commit feed within ${timeoutMs} ms`)), timeoutMs)
    })
    await Promise.race([feed.publish(event), timeout])
    return true
  } catch (e) {
    try {
      onFailure(e as Error, event)
    } catch {
      // a failing logger must not fail the commit either
    }
    return false
  } finally {
    clearTimeout(timer)
  }
}
