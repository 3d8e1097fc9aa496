// Lambda-shaped SQS events built from ReceiveMessage results, the way the SQS event-source
// mapping hands them to a function: camelCase record fields, system attributes as strings,
// message attributes with base64 binaries and the always-present (empty) list fields.
// Shapes follow https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html (example events).
import type { Message, MessageAttributeValue } from '@aws-sdk/client-sqs'
import type { SQSEvent, SQSMessageAttribute, SQSMessageAttributes, SQSRecord, SQSRecordAttributes } from 'aws-lambda'

/** The system attributes every record carries; the poller receives with `All` to get them. */
const REQUIRED_ATTRIBUTES = ['ApproximateReceiveCount', 'SentTimestamp', 'SenderId', 'ApproximateFirstReceiveTimestamp'] as const
/** Present on FIFO queues (and AWSTraceHeader when tracing is on); copied when the queue sent them. */
const OPTIONAL_ATTRIBUTES = ['SequenceNumber', 'MessageGroupId', 'MessageDeduplicationId', 'AWSTraceHeader', 'DeadLetterQueueSourceArn'] as const

export function sqsRecordOf(message: Message, queueArn: string, region: string): SQSRecord {
  const { MessageId, ReceiptHandle, Body, MD5OfBody } = message
  if (MessageId === undefined || ReceiptHandle === undefined || Body === undefined || MD5OfBody === undefined) {
    throw new Error(
      `SQS message from ${queueArn} lacks MessageId, ReceiptHandle, Body or MD5OfBody: ${JSON.stringify(message)}`,
    )
  }
  const received = message.Attributes ?? {}
  const attributes: Partial<SQSRecordAttributes> = {}
  for (const name of REQUIRED_ATTRIBUTES) {
    const value = received[name]
    if (value === undefined) {
      throw new Error(
        `SQS message ${MessageId} from ${queueArn} lacks system attribute ${name}; receive with MessageSystemAttributeNames ['All']`,
      )
    }
    attributes[name] = value
  }
  for (const name of OPTIONAL_ATTRIBUTES) {
    const value = received[name]
    if (value !== undefined) attributes[name] = value
  }
  const record: SQSRecord = {
    messageId: MessageId,
    receiptHandle: ReceiptHandle,
    body: Body,
    attributes: attributes as SQSRecordAttributes,
    messageAttributes: messageAttributesOf(message.MessageAttributes ?? {}),
    md5OfBody: MD5OfBody,
    eventSource: 'aws:sqs',
    eventSourceARN: queueArn,
    awsRegion: region,
  }
  if (message.MD5OfMessageAttributes !== undefined) record.md5OfMessageAttributes = message.MD5OfMessageAttributes
  return record
}

export function sqsEventOf(records: SQSRecord[]): SQSEvent {
  return { Records: records }
}

function messageAttributesOf(attributes: Record<string, MessageAttributeValue>): SQSMessageAttributes {
  const out: SQSMessageAttributes = {}
  for (const [name, value] of Object.entries(attributes)) {
    const attribute: SQSMessageAttribute = {
      stringListValues: value.StringListValues ?? [],
      binaryListValues: (value.BinaryListValues ?? []).map(base64Of),
      dataType: value.DataType ?? 'String',
    }
    if (value.StringValue !== undefined) attribute.stringValue = value.StringValue
    if (value.BinaryValue !== undefined) attribute.binaryValue = base64Of(value.BinaryValue)
    out[name] = attribute
  }
  return out
}

/** Lambda delivers binary attribute values base64-encoded, as they travel in SQS's JSON protocol. */
function base64Of(value: Uint8Array | string): string {
  return typeof value === 'string' ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')
}
