// S3 retries, throttling and multipart uploads against the embedded backend. Every fault
// is answered by the server (local/embedded.ts injectFault: a real HTTP 503/500/403 reply,
// or a write that applied followed by an error reply), never by a client mock; the stores
// come from openStore('s3://...'), so the client and its retry settings are production's.

import { randomBytes } from 'node:crypto'
import { GetObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { captureMetrics, metricNames } from './helpers/metrics.ts'
import { openStore } from '../lib/store/open-store.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { RetryingStore } from '../lib/store/retrying-store.ts'
import { S3_MAX_ATTEMPTS, S3Store, s3RetryCounts } from '../lib/store/s3-store.ts'
import { type FaultRequest, type FaultableBackend, startEmbeddedBackend } from '../local/embedded.ts'

const BUCKET = 'strata-retry-test'
const MiB = 1024 * 1024
const enc = new TextEncoder()
const dec = new TextDecoder()

let backend: FaultableBackend
let counter = 0
const stores: S3Store[] = []
const ENV = ['AWS_ENDPOINT_URL_S3', 'AWS_REGION', 'AWS_ACCESS_KEY_ID', 'AWS_SECRET_ACCESS_KEY', 'AWS_MAX_ATTEMPTS', 'AWS_RETRY_MODE']
const savedEnv = Object.fromEntries(ENV.map((k) => [k, process.env[k]]))

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  Object.assign(process.env, {
    AWS_ENDPOINT_URL_S3: backend.endpoint,
    AWS_REGION: backend.region,
    AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey,
  })
  delete process.env.AWS_MAX_ATTEMPTS
  delete process.env.AWS_RETRY_MODE
})

afterEach(() => backend.clearFaults())

afterAll(async () => {
  for (const s of stores) s.destroy()
  await backend?.stop()
  for (const [k, v] of Object.entries(savedEnv)) {
    if (v === undefined) delete process.env[k]
    else process.env[k] = v
  }
})

/** A store on a fresh prefix, opened the way the functions open one. */
function freshStore(): S3Store {
  const store = openStore(`s3://${BUCKET}/case-${++counter}`)
  expect(store).toBeInstanceOf(S3Store)
  stores.push(store as S3Store)
  return store as S3Store
}

/** Key pattern of one store key in the bucket (the store's prefix included). */
const keyOf = (store: S3Store, key: string) => `${store.prefix}/${key}`

/**
 * Records the S3 requests the server sees that match `pick`, through a fault whose filter
 * never lets it fire (faults injected before it that take a request hide that request).
 */
function observe(pick: (r: FaultRequest) => boolean): FaultRequest[] {
  const seen: FaultRequest[] = []
  const where = (r: FaultRequest) => {
    if (pick(r)) seen.push(r)
    return false
  }
  backend.injectFault({ status: 500, code: 'Unused', times: Infinity, where })
  return seen
}

function delta(before: { retries: number; throttles: number }) {
  const now = s3RetryCounts()
  return { retries: now.retries - before.retries, throttles: now.throttles - before.throttles }
}

describe('the embedded backend fault hook', () => {
  it("'before' answers the error and applies nothing; 'after' applies the write, then answers the error", async () => {
    const raw = new S3Client({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, forcePathStyle: true, maxAttempts: 1 })
    const status = (p: Promise<unknown>) =>
      p.then(
        () => 200,
        (e: { $metadata?: { httpStatusCode?: number }; name?: string }) => `${e.$metadata?.httpStatusCode} ${e.name}`,
      )
    const put = (key: string) => raw.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: enc.encode(key) }))
    const get = (key: string) => raw.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))
    try {
      const before = backend.injectFault({ method: 'PUT', key: 'hook/before', status: 503, code: 'SlowDown' })
      const after = backend.injectFault({ method: 'PUT', key: /^hook\/aft/, status: 500, code: 'InternalError', when: 'after' })
      expect(await status(put('hook/before'))).toBe('503 SlowDown')
      expect(await status(get('hook/before'))).toBe('404 NoSuchKey')
      expect(await status(put('hook/after'))).toBe('500 InternalError')
      expect(await status(get('hook/after'))).toBe(200)
      // each fault is used up after its one request
      expect(await status(put('hook/before'))).toBe(200)
      expect(await status(put('hook/after'))).toBe(200)
      expect([before.hits, after.hits]).toEqual([1, 1])
    } finally {
      raw.destroy()
    }
  })
})

describe('transient S3 answers are retried by the SDK and counted', () => {
  it('503 SlowDown twice on a PUT: the put succeeds on the third attempt; 2 retries, 2 throttles', async () => {
    const store = freshStore()
    const before = s3RetryCounts()
    const fault = backend.injectFault({ method: 'PUT', key: keyOf(store, 'a'), status: 503, code: 'SlowDown', times: 2 })
    await store.put('a', enc.encode('hello'))
    expect(fault.hits).toBe(2)
    expect(delta(before)).toEqual({ retries: 2, throttles: 2 })
    expect(dec.decode((await store.get('a'))!)).toBe('hello')
  })

  it('500 InternalError on a GET and a ranged GET: retried, the bytes come back; retries but no throttles', async () => {
    const store = freshStore()
    await store.put('b', enc.encode('0123456789'))
    const before = s3RetryCounts()
    const fault = backend.injectFault({ method: 'GET', key: keyOf(store, 'b'), status: 500, code: 'InternalError', times: 2 })
    expect(dec.decode((await store.get('b'))!)).toBe('0123456789')
    expect(dec.decode(await store.getRange('b', 2, 5))).toBe('234')
    expect(fault.hits).toBe(2)
    expect(delta(before)).toEqual({ retries: 2, throttles: 0 })
  })

  it('a list page answered 503 SlowDown is retried; the listing is complete', async () => {
    const store = freshStore()
    await Promise.all(['x/1', 'x/2', 'x/3'].map((k) => store.put(k, enc.encode(k))))
    const before = s3RetryCounts()
    const fault = backend.injectFault({ method: 'GET', key: '', where: (r) => r.query['list-type'] === '2', status: 503, code: 'SlowDown' })
    expect((await store.list('x/')).map((o) => o.key)).toEqual(['x/1', 'x/2', 'x/3'])
    expect(fault.hits).toBe(1)
    expect(delta(before)).toEqual({ retries: 1, throttles: 1 })
  })

  it('403 AccessDenied is not retried: one request, an error naming the operation and key, nothing counted', async () => {
    const store = freshStore()
    const before = s3RetryCounts()
    const fault = backend.injectFault({ method: 'PUT', key: keyOf(store, 'c'), status: 403, code: 'AccessDenied', times: Infinity })
    await expect(store.put('c', enc.encode('x'))).rejects.toThrow(
      new RegExp(`^S3 PutObject s3://${BUCKET}/${store.prefix}/c failed: AccessDenied \\(HTTP 403\\)`),
    )
    expect(fault.hits).toBe(1)
    expect(delta(before)).toEqual({ retries: 0, throttles: 0 })
  })

  it('404 NoSuchKey is not retried: get answers null after one request', async () => {
    const store = freshStore()
    await store.put('d', enc.encode('there'))
    const before = s3RetryCounts()
    const fault = backend.injectFault({ method: 'GET', key: keyOf(store, 'd'), status: 404, code: 'NoSuchKey', times: Infinity })
    expect(await store.get('d')).toBeNull()
    expect(fault.hits).toBe(1)
    expect(delta(before).retries).toBe(0)
  })

  it('a RetryingStore refuses to wrap an S3Store (one retry layer), and still wraps other stores', () => {
    const store = freshStore()
    expect(() => new RetryingStore(store)).toThrow(/RetryingStore over S3Store s3:\/\/strata-retry-test\/case-\d+: the AWS SDK already retries/)
    expect(new RetryingStore(new MemoryStore()).uri).toMatch(/^memory:/)
  })

  it(`exhausting the ${S3_MAX_ATTEMPTS} attempts gives an error naming the operation, the key and the attempts`, async () => {
    const store = freshStore()
    await store.put('e', enc.encode('x'))
    const before = s3RetryCounts()
    const fault = backend.injectFault({ method: 'GET', key: keyOf(store, 'e'), status: 500, code: 'InternalError', times: Infinity })
    await expect(store.get('e')).rejects.toThrow(
      new RegExp(`^S3 GetObject s3://${BUCKET}/${store.prefix}/e failed after ${S3_MAX_ATTEMPTS} attempts: InternalError \\(HTTP 500\\)`),
    )
    expect(fault.hits).toBe(S3_MAX_ATTEMPTS)
    expect(delta(before)).toEqual({ retries: S3_MAX_ATTEMPTS - 1, throttles: 0 })
  })
})

describe('putIfAbsent under SDK retries', () => {
  it('a lost reply (the create applied, the client saw 500): the retry meets our own object, so true', async () => {
    const store = freshStore()
    const fault = backend.injectFault({ method: 'PUT', key: keyOf(store, 'snap'), status: 500, code: 'InternalError', when: 'after' })
    expect(await store.putIfAbsent('snap', enc.encode('mine'))).toBe(true)
    expect(fault.hits).toBe(1)
    expect(dec.decode((await store.get('snap'))!)).toBe('mine')
    // the object is now there: another writer loses, first attempt or after a retry
    expect(await store.putIfAbsent('snap', enc.encode('theirs'))).toBe(false)
    backend.injectFault({ method: 'PUT', key: keyOf(store, 'snap'), status: 500, code: 'InternalError' })
    expect(await store.putIfAbsent('snap', enc.encode('theirs'))).toBe(false)
    expect(dec.decode((await store.get('snap'))!)).toBe('mine')
  })

  it('a 503 before the create: retried, written once', async () => {
    const store = freshStore()
    const before = s3RetryCounts()
    backend.injectFault({ method: 'PUT', key: keyOf(store, 'snap'), status: 503, code: 'SlowDown' })
    expect(await store.putIfAbsent('snap', enc.encode('one'))).toBe(true)
    expect(delta(before)).toEqual({ retries: 1, throttles: 1 })
    expect(await store.putIfAbsent('snap', enc.encode('two'))).toBe(false)
  })
})

describe('multipart uploads', () => {
  const big = randomBytes(20 * MiB)
  const isPart = (r: FaultRequest) => r.method === 'PUT' && r.query.partNumber !== undefined

  it('a 20 MiB put goes up in three 8 MiB-bounded parts and reads back byte for byte', async () => {
    const store = freshStore()
    const parts = observe((r) => isPart(r) && r.key === keyOf(store, 'data/big.parquet'))
    await store.put('data/big.parquet', big)
    expect(parts.map((r) => Number(r.query.partNumber)).sort()).toEqual([1, 2, 3])
    expect((await store.head('data/big.parquet'))!.size).toBe(big.length)
    expect(Buffer.from((await store.get('data/big.parquet'))!).equals(big)).toBe(true)
    expect(Buffer.from(await store.getRange('data/big.parquet', 8 * MiB - 3, 8 * MiB + 3)).equals(big.subarray(8 * MiB - 3, 8 * MiB + 3))).toBe(true)
  })

  it('putIfAbsent of 20 MiB completes conditionally: true once, then false with the first bytes kept', async () => {
    const store = freshStore()
    expect(await store.putIfAbsent('big', big)).toBe(true)
    const other = randomBytes(12 * MiB)
    expect(await store.putIfAbsent('big', other)).toBe(false)
    expect(Buffer.from((await store.get('big'))!).equals(big)).toBe(true)
  })

  it('a part answered 500 once is retried alone; the upload completes', async () => {
    const store = freshStore()
    const before = s3RetryCounts()
    const fault = backend.injectFault({ key: keyOf(store, 'big'), where: (r) => isPart(r) && r.query.partNumber === '2', status: 500, code: 'InternalError' })
    await store.put('big', big)
    expect(fault.hits).toBe(1)
    expect(delta(before).retries).toBe(1)
    expect(Buffer.from((await store.get('big'))!).equals(big)).toBe(true)
  })

  it('a part refused with 403 fails the put naming the part and key, aborts the upload and leaves no object', async () => {
    const store = freshStore()
    const aborts = observe((r) => r.method === 'DELETE' && r.query.uploadId !== undefined && r.key === keyOf(store, 'big'))
    backend.injectFault({ key: keyOf(store, 'big'), where: (r) => isPart(r) && r.query.partNumber === '2', status: 403, code: 'AccessDenied' })
    await expect(store.put('big', big)).rejects.toThrow(
      new RegExp(`^S3 UploadPart 2/3 s3://${BUCKET}/${store.prefix}/big failed: AccessDenied \\(HTTP 403\\)`),
    )
    expect(aborts).toHaveLength(1)
    expect(await store.head('big')).toBeNull()
  })

  it('a lost completion reply (applied, then 500): put and putIfAbsent both see their upload landed', async () => {
    const store = freshStore()
    const isComplete = (r: FaultRequest) => r.method === 'POST' && r.query.uploadId !== undefined
    const a = backend.injectFault({ key: keyOf(store, 'p'), where: isComplete, status: 500, code: 'InternalError', when: 'after' })
    await store.put('p', big)
    expect(a.hits).toBe(1)
    expect(Buffer.from((await store.get('p'))!).equals(big)).toBe(true)

    const b = backend.injectFault({ key: keyOf(store, 'q'), where: isComplete, status: 500, code: 'InternalError', when: 'after' })
    expect(await store.putIfAbsent('q', big)).toBe(true)
    expect(b.hits).toBe(1)
    expect(Buffer.from((await store.get('q'))!).equals(big)).toBe(true)
  })

  it('partSize below S3 part minimum is refused naming the field, value and range', () => {
    expect(() => new S3Store({ bucket: BUCKET, client: backend.s3Client(), partSize: 1024 })).toThrow(
      /S3Store partSize 1024 is not valid: expected an integer number of bytes in 5242880\.\.5368709120/,
    )
  })
})


describe('handler metrics', () => {
  it('a handler flush publishes S3Retries and S3Throttles since the last flush, then none while there were none', async () => {
    const { emf } = await captureMetrics(async (metrics) => {
      const store = freshStore()
      backend.injectFault({ method: 'PUT', key: keyOf(store, 'm'), status: 503, code: 'SlowDown' })
      backend.injectFault({ method: 'GET', key: keyOf(store, 'm'), status: 500, code: 'InternalError' })
      await store.put('m', enc.encode('x'))
      await store.get('m')
      metrics.addMetric('Work', 'Count', 1)
      metrics.publishStoredMetrics()
      metrics.addMetric('Work', 'Count', 1)
      metrics.publishStoredMetrics()
    })
    expect(emf).toHaveLength(2)
    expect(metricNames(emf[0])).toEqual(['S3Retries', 'S3Throttles', 'Work'])
    expect(emf[0]).toMatchObject({ S3Retries: 2, S3Throttles: 1, function: 'test' })
    expect(metricNames(emf[1])).toEqual(['Work'])
  })

  it('setting a dimension again before a flush replaces it, without a warning, and keeps the others', async () => {
    const { emf, warnings } = await captureMetrics((metrics) => {
      // two unflushed invocations of a raw handler, as tests and benchmarks call them
      metrics.addDimension('stage', 'a')
      metrics.addDimension('table', 'first')
      metrics.addDimension('table', 'second')
      metrics.addMetric('Work', 'Count', 1)
      metrics.publishStoredMetrics()
    })
    expect(warnings).toEqual([])
    expect(emf).toHaveLength(1)
    expect(emf[0]).toMatchObject({ table: 'second', stage: 'a', function: 'test', Work: 1 })
    expect(emf[0]._aws.CloudWatchMetrics[0].Dimensions).toEqual([expect.arrayContaining(['function', 'stage', 'table'])])
  })
})
