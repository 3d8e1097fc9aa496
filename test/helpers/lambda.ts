// Hand-built, real-shaped Lambda events for handler tests, and an environment pointing
// the functions at the embedded backend.

import { randomUUID } from 'node:crypto'
import type { KinesisStreamEvent, SQSEvent, SQSRecord } from 'aws-lambda'
import type { EmbeddedBackend } from '../../local/embedded.ts'
import { resetRuntime } from '../../functions/shared/runtime.ts'

export function sqsRecord(body: string, opts: { messageId?: string; groupId?: string; receiveCount?: number; firstReceivedAt?: number; queue?: string } = {}): SQSRecord {
  const now = String(Date.now())
  return {
    messageId: opts.messageId ?? randomUUID(),
    receiptHandle: randomUUID(),
    body,
    attributes: {
      ApproximateReceiveCount: String(opts.receiveCount ?? 1),
      SentTimestamp: now,
      SenderId: 'AIDATEST',
      ApproximateFirstReceiveTimestamp: opts.firstReceivedAt !== undefined ? String(opts.firstReceivedAt) : now,
      ...(opts.groupId ? { MessageGroupId: opts.groupId, MessageDeduplicationId: randomUUID(), SequenceNumber: '1' } : {}),
    },
    messageAttributes: {},
    md5OfBody: '',
    eventSource: 'aws:sqs',
    eventSourceARN: `arn:aws:sqs:us-east-1:000000000000:${opts.queue ?? 'ingest'}`,
    awsRegion: 'us-east-1',
  }
}

export function sqsEvent(records: SQSRecord[]): SQSEvent {
  return { Records: records }
}

export function kinesisEvent(bodies: string[], firstSeq = 1000n): KinesisStreamEvent {
  return {
    Records: bodies.map((b, i) => ({
      kinesis: {
        kinesisSchemaVersion: '1.0',
        partitionKey: `pk-${i % 3}`,
        sequenceNumber: String(firstSeq + BigInt(i)),
        data: Buffer.from(b).toString('base64'),
        approximateArrivalTimestamp: Date.now() / 1000,
      },
      eventSource: 'aws:kinesis',
      eventVersion: '1.0',
      eventID: `shardId-000000000000:${firstSeq + BigInt(i)}`,
      eventName: 'aws:kinesis:record',
      invokeIdentityArn: 'arn:aws:iam::000000000000:role/test',
      awsRegion: 'us-east-1',
      eventSourceARN: 'arn:aws:kinesis:us-east-1:000000000000:stream/ingest',
    })),
  }
}

/** Points the functions at the backend and the given tables; resets their caches. */
export function useFunctionEnv(backend: EmbeddedBackend, tables: Record<string, { uri: string; compactionQueueUrl?: string; commitQueueUrl?: string }>, extra: Record<string, string> = {}): void {
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: backend.endpoint,
    AWS_REGION: backend.region,
    AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey,
    POWERTOOLS_METRICS_DISABLED: 'true',
    POWERTOOLS_LOG_LEVEL: 'SILENT',
    STRATA_TABLES: JSON.stringify(tables),
    ...extra,
  })
  resetRuntime()
}
