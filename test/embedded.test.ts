import {
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { CreateQueueCommand, DeleteMessageCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import { buildApp } from 'fauxqs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { selfTestConditionalWrites, startEmbeddedBackend, type EmbeddedBackend } from '../local/embedded.ts'

const enc = new TextEncoder()
const BUCKET = 'strata-embedded-test'

let backend: EmbeddedBackend
let client: S3Client

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  client = backend.s3Client()
  await backend.createBucket(BUCKET)
})

afterAll(async () => {
  await backend?.stop()
})

/** HTTP status and S3 error code of a request, 200 when it succeeds. */
async function outcome(request: Promise<unknown>): Promise<{ status: number; code?: string }> {
  try {
    await request
    return { status: 200 }
  } catch (err) {
    const e = err as { name?: string; $metadata?: { httpStatusCode?: number } }
    return { status: e.$metadata?.httpStatusCode ?? -1, code: e.name }
  }
}

const put = (key: string, body: string, extra: { IfNoneMatch?: string; IfMatch?: string } = {}) =>
  client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: enc.encode(body), ...extra }))

async function read(key: string): Promise<string> {
  const res = await client.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))
  return new TextDecoder().decode(await res.Body!.transformToByteArray())
}

describe('embedded backend', () => {
  it('listens on loopback only, on an OS-chosen port', () => {
    const address = (backend.app as { server: { address(): { address: string; port: number } } }).server.address()
    expect(address.address).toBe('127.0.0.1')
    expect(backend.endpoint).toBe(`http://127.0.0.1:${address.port}`)
    expect(address.port).toBeGreaterThan(0)
  })

  it('passes its conditional-write self-test', async () => {
    await selfTestConditionalWrites(backend)
  })

  it('If-None-Match: * creates once, then answers 412 PreconditionFailed', async () => {
    expect(await outcome(put('inm/k', 'first', { IfNoneMatch: '*' }))).toEqual({ status: 200 })
    expect(await outcome(put('inm/k', 'second', { IfNoneMatch: '*' }))).toEqual({ status: 412, code: 'PreconditionFailed' })
    expect(await read('inm/k')).toBe('first')
  })

  it('If-Match: stale ETag → 412, current ETag → 200, missing key → 404 NoSuchKey', async () => {
    const v1 = await put('im/k', 'v1')
    const v2 = await put('im/k', 'v2')
    expect(v1.ETag).not.toBe(v2.ETag)
    expect(await outcome(put('im/k', 'v3', { IfMatch: v1.ETag }))).toEqual({ status: 412, code: 'PreconditionFailed' })
    expect(await read('im/k')).toBe('v2')
    expect(await outcome(put('im/k', 'v3', { IfMatch: v2.ETag }))).toEqual({ status: 200 })
    expect(await read('im/k')).toBe('v3')
    expect(await outcome(put('im/missing', 'x', { IfMatch: v1.ETag }))).toEqual({ status: 404, code: 'NoSuchKey' })
    expect(await outcome(client.send(new GetObjectCommand({ Bucket: BUCKET, Key: 'im/missing' })))).toMatchObject({ status: 404 })
  })

  it('16 concurrent If-Match writes on one ETag: exactly one applies', async () => {
    const base = await put('cas/k', 'base')
    const results = await Promise.all(
      Array.from({ length: 16 }, (_, i) => outcome(put('cas/k', `writer-${i}`, { IfMatch: base.ETag }))),
    )
    const winners = results.flatMap((r, i) => (r.status === 200 ? [i] : []))
    expect(winners).toHaveLength(1)
    expect(results.filter((r) => r.status === 412)).toHaveLength(15)
    expect(await read('cas/k')).toBe(`writer-${winners[0]}`)
  })

  it('applies the conditions to CompleteMultipartUpload', async () => {
    const upload = async (key: string, body: string, cond: { IfNoneMatch?: string; IfMatch?: string }) => {
      const { UploadId } = await client.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }))
      const part = await client.send(
        new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId, PartNumber: 1, Body: enc.encode(body) }),
      )
      return client.send(
        new CompleteMultipartUploadCommand({
          Bucket: BUCKET,
          Key: key,
          UploadId,
          MultipartUpload: { Parts: [{ PartNumber: 1, ETag: part.ETag }] },
          ...cond,
        }),
      )
    }
    expect(await outcome(upload('mpu/k', 'one', { IfNoneMatch: '*' }))).toEqual({ status: 200 })
    expect(await read('mpu/k')).toBe('one')
    expect(await outcome(upload('mpu/k', 'two', { IfNoneMatch: '*' }))).toEqual({ status: 412, code: 'PreconditionFailed' })
    expect(await outcome(upload('mpu/k', 'two', { IfMatch: '"0123"' }))).toEqual({ status: 412, code: 'PreconditionFailed' })
    expect(await outcome(upload('mpu/none', 'x', { IfMatch: '"0123"' }))).toEqual({ status: 404, code: 'NoSuchKey' })
    expect(await read('mpu/k')).toBe('one')
  })

  it('serves SQS on the same endpoint', async () => {
    const call = async (action: string, body: object) => {
      const res = await fetch(backend.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-amz-json-1.0', 'x-amz-target': `AmazonSQS.${action}` },
        body: JSON.stringify(body),
      })
      expect(res.status).toBe(200)
      return (await res.json()) as Record<string, unknown>
    }
    const { QueueUrl } = await call('CreateQueue', {
      QueueName: 'jobs.fifo',
      Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' },
    })
    await call('SendMessage', { QueueUrl, MessageBody: 'compact bucket-0', MessageGroupId: 'bucket-0' })
    const received = await call('ReceiveMessage', { QueueUrl, MaxNumberOfMessages: 10 })
    expect((received.Messages as { Body: string }[]).map((m) => m.Body)).toEqual(['compact bucket-0'])
  })

  it('serves FIFO groups with a backlog round robin, not the first group forever', async () => {
    const sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
    try {
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'backlog.fifo', Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' } }))
      // three buckets with four jobs each, sent job by job as writer commits send them
      for (let job = 0; job < 4; job++) {
        for (const g of ['a', 'b', 'c']) await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: `${g}${job}`, MessageGroupId: g }))
      }
      const order: string[] = []
      for (let i = 0; i < 12; i++) {
        const r = await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: 1 }))
        const m = r.Messages?.[0]
        if (!m) break
        order.push(m.Body!)
        await sqs.send(new DeleteMessageCommand({ QueueUrl, ReceiptHandle: m.ReceiptHandle }))
      }
      // plain fauxqs 1.9 gives a0 a1 a2 a3 b0 …: group a first until it is empty
      expect(order).toEqual(['a0', 'b0', 'c0', 'a1', 'b1', 'c1', 'a2', 'b2', 'c2', 'a3', 'b3', 'c3'])
    } finally {
      sqs.destroy()
    }
  })
  it('a FIFO receive takes as many messages of one group as it can, then the next group, as SQS does; a group in flight gives none', async () => {
    const sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
    try {
      const { QueueUrl } = await sqs.send(new CreateQueueCommand({ QueueName: 'groups.fifo', Attributes: { FifoQueue: 'true', ContentBasedDeduplication: 'true' } }))
      for (const body of ['a1', 'a2', 'a3', 'b1', 'b2', 'c1']) await sqs.send(new SendMessageCommand({ QueueUrl, MessageBody: body, MessageGroupId: body[0] }))
      const bodies = async (max: number) => ((await sqs.send(new ReceiveMessageCommand({ QueueUrl, MaxNumberOfMessages: max }))).Messages ?? []).map((m) => m.Body)
      // plain fauxqs 1.9 gives one message per group per receive: a1 b1 c1
      expect(await bodies(4)).toEqual(['a1', 'a2', 'a3', 'b1'])
      // a and b are in flight: b2 waits for b1
      expect(await bodies(10)).toEqual(['c1'])
      expect(await bodies(10)).toEqual([])
    } finally {
      sqs.destroy()
    }
  })
})

describe('selfTestConditionalWrites', () => {
  it('fails loudly against plain fauxqs, which ignores conditional writes', async () => {
    const app = buildApp({ logger: false })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as { port: number }
    const endpoint = `http://127.0.0.1:${port}`
    const credentials = { accessKeyId: 'test', secretAccessKey: 'test' }
    const raw = new S3Client({ endpoint, region: 'us-east-1', credentials, forcePathStyle: true })
    const unhooked: EmbeddedBackend = {
      endpoint,
      region: 'us-east-1',
      credentials,
      app,
      s3Client: () => raw,
      createBucket: async (name) => void (await app.inject({ method: 'PUT', url: `/${name}` })),
      stop: async () => {
        raw.destroy()
        await app.close()
      },
    }
    try {
      await expect(selfTestConditionalWrites(unhooked)).rejects.toThrow(/self-test FAILED.*16 concurrent If-None-Match/)
    } finally {
      await unhooked.stop()
    }
  })
})

describe('startEmbeddedBackend options', () => {
  it('consults the latency model for each client request, not for its own checks', async () => {
    const seen: string[] = []
    const slow = await startEmbeddedBackend({
      latency: ({ method, url }) => {
        seen.push(`${method} ${url.split('?')[0]}`)
        return 1
      },
    })
    try {
      await slow.createBucket('lat')
      await slow.s3Client().send(new PutObjectCommand({ Bucket: 'lat', Key: 'k', Body: enc.encode('x'), IfNoneMatch: '*' }))
      expect(seen).toEqual(['PUT /lat', 'PUT /lat/k'])
    } finally {
      await slow.stop()
    }
  })

  it('stop() closes the server', async () => {
    const short = await startEmbeddedBackend()
    await short.stop()
    await expect(fetch(`${short.endpoint}/health`)).rejects.toThrow()
  })
})

describe('the backend in a child process (local/backend-process.ts)', () => {
  it('serves S3 from its own process and reports what it holds and its own memory', async () => {
    const { startBackendProcess } = await import('../local/backend-process.ts')
    const child = await startBackendProcess({ firstByteMs: 1, pathPrefix: '/child-bucket/' })
    try {
      expect(child.pid).not.toBe(process.pid)
      await child.createBucket('child-bucket')
      const body = enc.encode('x'.repeat(5000))
      await child.s3Client().send(new PutObjectCommand({ Bucket: 'child-bucket', Key: 'a/b.bin', Body: body }))
      const got = await child.s3Client().send(new GetObjectCommand({ Bucket: 'child-bucket', Key: 'a/b.bin' }))
      expect((await got.Body!.transformToByteArray()).length).toBe(5000)
      const [{ stats, memory }, settled] = await Promise.all([child.stats(), child.stats(true)])
      expect(stats.s3.objects).toBe(1)
      expect(stats.s3.bytes).toBe(5000)
      expect(stats.s3.byDirectory).toEqual([{ directory: 'child-bucket/a/', objects: 1, bytes: 5000 }])
      expect(memory.rss).toBeGreaterThan(0)
      expect(settled.stats.s3.objects).toBe(1)
    } finally {
      await child.stop()
    }
    await expect(child.stats()).rejects.toThrow(/backend process exited/)
  })
})
