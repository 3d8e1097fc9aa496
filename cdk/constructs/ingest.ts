// Where ingest events come from: an SQS queue created here (with its DLQ), the user's own
// queue (its DLQ is the user's), or a Kinesis stream (with an SQS queue for the metadata of
// batches that keep failing); or nothing (`enabled: false`, the construct's writes then come
// from an event source the user adds). Either way the writer's event source reports partial batch failures, so one bad
// record never redelivers the batch around it, and the writer itself rejects bad records to
// the reject prefix instead of failing them — what reaches a DLQ is an infrastructure
// failure that outlived every retry.

import { Duration } from 'aws-cdk-lib'
import { type IKey, Key } from 'aws-cdk-lib/aws-kms'
import { type IStream, Stream } from 'aws-cdk-lib/aws-kinesis'
import { type IFunction, StartingPosition } from 'aws-cdk-lib/aws-lambda'
import { KinesisEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources'
import { type IQueue, Queue, QueueEncryption, type QueueProps } from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import type { IngestConfig } from '../config.ts'
import { acknowledge } from '../nag.ts'

/** SQS keeps a message at most 14 days; DLQs keep theirs that long for a look. */
export const DLQ_RETENTION = Duration.days(14)
/** Lambda's advice for SQS event sources: visibility ≥ 6 × the function timeout. */
export const VISIBILITY_FACTOR = 6
export const MAX_RECEIVE_COUNT = 5

/** A queue's encryption: SQS-managed keys, or the construct's KMS key. */
export function queueEncryption(key: IKey | undefined): Pick<QueueProps, 'encryption' | 'encryptionMasterKey'> {
  return key ? { encryption: QueueEncryption.KMS, encryptionMasterKey: key } : { encryption: QueueEncryption.SQS_MANAGED }
}

/** What the user brings: a queue or a stream instead of the created queue, a DLQ, or no source at all. */
export interface IngestResources {
  enabled: boolean
  queue?: IQueue
  deadLetters?: IQueue
  stream?: IStream
  key?: IKey
}

export class IngestSource extends Construct {
  /** the queue the writer consumes (SQS ingest) */
  readonly queue?: IQueue
  readonly stream?: IStream
  /** the ingest DLQ (SQS) or the on-failure queue of the Kinesis mapping; none for a queue of the user's without one given */
  readonly deadLetters?: IQueue

  constructor(
    scope: Construct,
    id: string,
    private readonly cfg: IngestConfig,
    writerTimeoutSeconds: number,
    given: IngestResources = { enabled: true },
  ) {
    super(scope, id)
    if (!given.enabled) return
    if (given.queue) {
      this.queue = given.queue
      this.deadLetters = given.deadLetters
      return
    }
    this.deadLetters =
      given.deadLetters ??
      new Queue(this, cfg.type === 'sqs' ? 'DeadLetters' : 'FailedBatches', {
        ...queueEncryption(given.key),
        enforceSSL: true,
        retentionPeriod: DLQ_RETENTION,
      })
    if (cfg.type === 'sqs') {
      this.queue = new Queue(this, 'Queue', {
        ...queueEncryption(given.key),
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
        // the batching window also counts: messages are in flight while a batch gathers
        visibilityTimeout: Duration.seconds(VISIBILITY_FACTOR * writerTimeoutSeconds + cfg.maxBatchingWindowSeconds),
        deadLetterQueue: { queue: this.deadLetters, maxReceiveCount: MAX_RECEIVE_COUNT },
      })
    } else {
      if (!given.deadLetters) acknowledge(
        this.deadLetters,
        'SQS3',
        "This queue is the Kinesis event source's on-failure destination, a dead-letter queue by role: it receives the shard and sequence range of batches that failed every retry. A DLQ behind it would hold the same metadata; its depth is alarmed instead.",
      )
      this.stream = given.stream ?? Stream.fromStreamAttributes(this, 'Stream', {
        streamArn: cfg.streamArn,
        encryptionKey: cfg.kmsKeyArn ? Key.fromKeyArn(this, 'StreamKey', cfg.kmsKeyArn) : undefined,
      })
    }
  }

  /** Wires the writer to the source (which also grants it the consume permissions). */
  connect(writer: IFunction): void {
    const cfg = this.cfg
    if (!this.queue && !this.stream) return
    if (cfg.type === 'sqs') {
      writer.addEventSource(
        new SqsEventSource(this.queue!, {
          batchSize: cfg.batchSize,
          maxBatchingWindow: cfg.maxBatchingWindowSeconds ? Duration.seconds(cfg.maxBatchingWindowSeconds) : undefined,
          reportBatchItemFailures: true,
          // at most this many writer invocations at once (default 8, WRITER_MAX_CONCURRENCY in
          // cdk/config.ts): every commit goes through each table's committer, and each
          // writer commit enqueues a compaction job per bucket it touched
          maxConcurrency: cfg.maxConcurrency,
        }),
      )
      return
    }
    writer.addEventSource(
      new KinesisEventSource(this.stream!, {
        startingPosition: cfg.startingPosition === 'LATEST' ? StartingPosition.LATEST : StartingPosition.TRIM_HORIZON,
        batchSize: cfg.batchSize,
        maxBatchingWindow: Duration.seconds(cfg.maxBatchingWindowSeconds),
        // concurrency is shards × parallelizationFactor: Kinesis mappings take no maxConcurrency
        parallelizationFactor: cfg.parallelizationFactor,
        // the writer reports the first record it could not commit; Lambda retries from
        // there, in order. Bisecting would re-split batches the writer already cut.
        reportBatchItemFailures: true,
        bisectBatchOnError: false,
        retryAttempts: cfg.retryAttempts,
        // after the retries, the shard moves on and the batch's shard and sequence-number
        // range goes here, to be replayed from the stream within its retention
        onFailure: new SqsDlq(this.deadLetters!),
      }),
    )
  }
}
