// Where ingest events come from: an SQS queue the stack creates (with its DLQ), or an
// existing Kinesis stream by ARN (with an SQS queue for the metadata of batches that keep
// failing). Either way the writer's event source reports partial batch failures, so one bad
// record never redelivers the batch around it, and the writer itself rejects bad records to
// the reject prefix instead of failing them — what reaches a DLQ is an infrastructure
// failure that outlived every retry.

import { Duration } from 'aws-cdk-lib'
import { Key } from 'aws-cdk-lib/aws-kms'
import { type IStream, Stream } from 'aws-cdk-lib/aws-kinesis'
import { type IFunction, StartingPosition } from 'aws-cdk-lib/aws-lambda'
import { KinesisEventSource, SqsDlq, SqsEventSource } from 'aws-cdk-lib/aws-lambda-event-sources'
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs'
import { Construct } from 'constructs'
import type { IngestConfig } from '../config.ts'
import { acknowledge } from '../nag.ts'

/** SQS keeps a message at most 14 days; DLQs keep theirs that long for a look. */
export const DLQ_RETENTION = Duration.days(14)
/** Lambda's advice for SQS event sources: visibility ≥ 6 × the function timeout. */
export const VISIBILITY_FACTOR = 6
export const MAX_RECEIVE_COUNT = 5

export class IngestSource extends Construct {
  /** the queue the writer consumes (SQS ingest) */
  readonly queue?: Queue
  readonly stream?: IStream
  /** the ingest DLQ (SQS) or the on-failure queue of the Kinesis mapping */
  readonly deadLetters: Queue

  constructor(
    scope: Construct,
    id: string,
    private readonly cfg: IngestConfig,
    writerTimeoutSeconds: number,
  ) {
    super(scope, id)
    this.deadLetters = new Queue(this, cfg.type === 'sqs' ? 'DeadLetters' : 'FailedBatches', {
      encryption: QueueEncryption.SQS_MANAGED,
      enforceSSL: true,
      retentionPeriod: DLQ_RETENTION,
    })
    if (cfg.type === 'sqs') {
      this.queue = new Queue(this, 'Queue', {
        encryption: QueueEncryption.SQS_MANAGED,
        enforceSSL: true,
        retentionPeriod: Duration.days(14),
        // the batching window also counts: messages are in flight while a batch gathers
        visibilityTimeout: Duration.seconds(VISIBILITY_FACTOR * writerTimeoutSeconds + cfg.maxBatchingWindowSeconds),
        deadLetterQueue: { queue: this.deadLetters, maxReceiveCount: MAX_RECEIVE_COUNT },
      })
    } else {
      acknowledge(
        this.deadLetters,
        'SQS3',
        "This queue is the Kinesis event source's on-failure destination, a dead-letter queue by role: it receives the shard and sequence range of batches that failed every retry. A DLQ behind it would hold the same metadata; its depth is alarmed instead.",
      )
      this.stream = Stream.fromStreamAttributes(this, 'Stream', {
        streamArn: cfg.streamArn,
        encryptionKey: cfg.kmsKeyArn ? Key.fromKeyArn(this, 'StreamKey', cfg.kmsKeyArn) : undefined,
      })
    }
  }

  /** Wires the writer to the source (which also grants it the consume permissions). */
  connect(writer: IFunction): void {
    const cfg = this.cfg
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
        onFailure: new SqsDlq(this.deadLetters),
      }),
    )
  }
}
