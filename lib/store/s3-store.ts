// ObjectStore on Amazon S3 (or anything speaking its API: LocalStack, the embedded fauxqs
// backend). Keys live under an optional prefix inside one bucket. The create-if-absent that
// the commit protocol relies on is a conditional PutObject (`If-None-Match: *`, S3
// conditional writes, GA since 2024-08). Bodies above the part size go up as a multipart
// upload, completed conditionally for putIfAbsent.
//
// Retries have exactly one layer: the SDK's standard retry strategy, per HTTP request.
// It retries throttling (503 SlowDown, 429), 500/502/503/504, timeouts and connection
// resets with full-jitter exponential backoff (from 50 ms, from 1 s for throttling, capped
// at 20 s), and a per-client retry quota stops retrying while most calls fail. A client
// built here makes S3_MAX_ATTEMPTS attempts (AWS_MAX_ATTEMPTS / AWS_RETRY_MODE override).
// So RetryingStore must not wrap an S3Store: the attempts would multiply. Every S3Store
// counts on its client what the SDK did (s3RetryCounts), which the functions publish.
// The SDK does not retry a GetObject whose body breaks off after the headers arrived.
import {
  AbortMultipartUploadCommand,
  type CompletedPart,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
} from '@aws-sdk/client-s3'
import { StoreError, StrataInputError } from '../errors.ts'
import { checkRange } from './memory-store.ts'
import type { ObjectInfo, ObjectStore } from './object-store.ts'

export interface S3StoreOptions {
  bucket: string
  /** key prefix inside the bucket, without leading or trailing '/'; '' for the bucket root */
  prefix?: string
  /** a ready client (e.g. the embedded backend's); otherwise one is built from the environment */
  client?: S3Client
  /** region for a client built here; defaults to the SDK's resolution (AWS_REGION, profile) */
  region?: string
  /** MaxKeys per ListObjectsV2 page; S3's own cap and default is 1000 */
  listPageSize?: number
  /**
   * Bytes per multipart part, and the body size above which put and putIfAbsent upload in
   * parts; default 8 MiB, at least 5 MiB (S3's smallest non-final part). The embedded
   * backend takes at most 11 MiB in one request; S3 at most 5 GiB in one PutObject.
   */
  partSize?: number
}

/** Attempts per S3 request (the first included) for clients built here; the SDK's default is 3. */
export const S3_MAX_ATTEMPTS = 5

const MiB = 1024 * 1024
export const DEFAULT_PART_SIZE = 8 * MiB
const MIN_PART_SIZE = 5 * MiB
const MAX_PART_SIZE = 5 * 1024 * MiB
/** S3 numbers parts 1..10000; larger bodies get larger parts. */
const MAX_PARTS = 10_000
/** Parts of one upload in flight at once. */
const PART_CONCURRENCY = 4

/**
 * Real S3 answers a conditional write that races another one on the same key with 409
 * ConditionalRequestConflict; the request did not apply and may be retried. These bound
 * that retry (25 ms·2^n with ±20% jitter, 5 attempts) before the answer is taken from HEAD.
 */
const CONFLICT_ATTEMPTS = 5
const CONFLICT_BASE_DELAY_MS = 25

export class S3Store implements ObjectStore {
  readonly uri: string
  readonly bucket: string
  readonly prefix: string
  /** the SDK client: its middleware stack is the seam for watching the HTTP requests (bench/lib/request-trace.ts) */
  readonly client: S3Client
  private readonly ownsClient: boolean
  private readonly listPageSize: number
  private readonly partSize: number

  constructor({ bucket, prefix = '', client, region, listPageSize = 1000, partSize = DEFAULT_PART_SIZE }: S3StoreOptions) {
    if (bucket === '' || bucket.includes('/')) {
      throw new StrataInputError(`S3Store bucket '${bucket}' is not valid: expected a bucket name without '/'`)
    }
    if (!Number.isInteger(listPageSize) || listPageSize < 1 || listPageSize > 1000) {
      throw new StrataInputError(`S3Store listPageSize ${listPageSize} is not valid: expected an integer in 1..1000`)
    }
    if (!Number.isInteger(partSize) || partSize < MIN_PART_SIZE || partSize > MAX_PART_SIZE) {
      throw new StrataInputError(
        `S3Store partSize ${partSize} is not valid: expected an integer number of bytes in ${MIN_PART_SIZE}..${MAX_PART_SIZE} (5 MiB..5 GiB)`,
      )
    }
    this.bucket = bucket
    this.prefix = prefix.replace(/^\/+|\/+$/g, '')
    this.uri = this.prefix === '' ? `s3://${bucket}` : `s3://${bucket}/${this.prefix}`
    this.client = client ?? clientFromEnvironment(region)
    this.ownsClient = client === undefined
    this.listPageSize = listPageSize
    this.partSize = partSize
    countRetries(this.client)
  }

  /** Closes the client's sockets when this store built the client itself. */
  destroy(): void {
    if (this.ownsClient) this.client.destroy()
  }

  async get(key: string): Promise<Uint8Array | null> {
    try {
      const res = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }))
      return res.Body ? await res.Body.transformToByteArray() : new Uint8Array(0)
    } catch (err) {
      if (isNotFound(err)) return null
      throw this.wrap('GetObject', key, err)
    }
  }

  async getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    checkRange(key, start, end, Number.MAX_SAFE_INTEGER)
    if (start === end) {
      // S3 has no empty byte range; HEAD still reports absence and the size bound.
      const info = await this.head(key)
      if (!info) throw new StoreError(`getRange: no object '${key}' in ${this.uri}`)
      checkRange(key, start, end, info.size)
      return new Uint8Array(0)
    }
    let bytes: Uint8Array
    try {
      const res = await this.client.send(
        new GetObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key), Range: `bytes=${start}-${end - 1}` }),
      )
      bytes = res.Body ? await res.Body.transformToByteArray() : new Uint8Array(0)
    } catch (err) {
      if (isNotFound(err)) throw new StoreError(`getRange: no object '${key}' in ${this.uri}`)
      if (statusOf(err) === 416) {
        const info = await this.head(key)
        if (!info) throw new StoreError(`getRange: no object '${key}' in ${this.uri}`)
        checkRange(key, start, end, info.size)
      }
      throw this.wrap('GetObject', key, err)
    }
    // S3 clamps a range that runs past the end instead of failing.
    if (bytes.length !== end - start) checkRange(key, start, end, start + bytes.length)
    return bytes
  }

  async head(key: string): Promise<ObjectInfo | null> {
    try {
      const res = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }))
      return { key, size: res.ContentLength ?? 0, lastModified: res.LastModified?.getTime() ?? 0 }
    } catch (err) {
      if (isNotFound(err)) return null
      throw this.wrap('HeadObject', key, err)
    }
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    if (data.length > this.partSize) {
      await this.putMultipart(key, data, false)
      return
    }
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key), Body: data }))
    } catch (err) {
      throw this.wrap('PutObject', key, err)
    }
  }

  // After an attempt that failed in a way that may have applied (a 5xx or a reset after
  // S3 stored the object: a lost reply), the SDK's retry is answered 412 by our own object.
  // So a 412 on a request that took more than one attempt is checked: the object is ours
  // when its bytes are ours. Every caller in Strata writes content unique per attempt
  // (snapshots carry a random uuid, ingest markers a timestamp), so equal bytes are not
  // another writer's; two writers of identical bytes would both see true, harmlessly.
  async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    const multipart = data.length > this.partSize
    let ambiguous = false
    for (let attempt = 0; attempt < CONFLICT_ATTEMPTS; attempt++) {
      let outcome: Outcome
      if (multipart) {
        const r = await this.putMultipart(key, data, true)
        ambiguous ||= r.ambiguous
        outcome = r.outcome
      } else {
        try {
          await this.client.send(
            new PutObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key), Body: data, IfNoneMatch: '*' }),
          )
          outcome = 'written'
        } catch (err) {
          ambiguous ||= attemptsOf(err) > 1
          if (isPreconditionFailed(err)) outcome = 'exists'
          else if (isConditionalConflict(err)) outcome = 'conflict'
          else throw this.wrap('PutObject (If-None-Match: *)', key, err)
        }
      }
      if (outcome === 'written') return true
      if (outcome === 'exists') return ambiguous ? this.holds(key, data) : false
      const delay = CONFLICT_BASE_DELAY_MS * 2 ** attempt * (0.8 + 0.4 * Math.random())
      await new Promise((r) => setTimeout(r, delay))
    }
    // Every attempt conflicted, so none applied: an object there now is someone else's,
    // unless an earlier SDK attempt of ours landed before a retry conflicted.
    if (await this.head(key)) return ambiguous ? this.holds(key, data) : false
    const op = multipart ? 'CompleteMultipartUpload (If-None-Match: *)' : 'PutObject (If-None-Match: *)'
    throw new StoreError(
      `S3 ${op} ${this.uri}/${key} failed: ` +
        `${CONFLICT_ATTEMPTS} attempts answered 409 ConditionalRequestConflict and the key is still absent`,
    )
  }

  /** True when the object at `key` holds exactly `data`. */
  private async holds(key: string, data: Uint8Array): Promise<boolean> {
    const there = await this.get(key)
    return there !== null && sameBytes(there, data)
  }

  /**
   * One multipart upload of `data`, aborted unless it completes. With `ifAbsent` the
   * completion carries `If-None-Match: *`; a 409 there means, per S3, that the whole upload
   * has to be made again, which putIfAbsent's conflict loop does. `ambiguous` tells that
   * the completion took more than one attempt, so an earlier one may have applied.
   */
  private async putMultipart(key: string, data: Uint8Array, ifAbsent: boolean): Promise<{ outcome: Outcome; ambiguous: boolean }> {
    const Key = this.fullKey(key)
    let uploadId: string | undefined
    try {
      const res = await this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key, ChecksumAlgorithm: 'CRC32' }))
      uploadId = res.UploadId
    } catch (err) {
      throw this.wrap('CreateMultipartUpload', key, err)
    }
    if (!uploadId) throw new StoreError(`S3 CreateMultipartUpload ${this.uri}/${key} answered no UploadId`)
    const op = ifAbsent ? 'CompleteMultipartUpload (If-None-Match: *)' : 'CompleteMultipartUpload'
    let gone = false
    try {
      const parts = await this.uploadParts(key, uploadId, data)
      try {
        await this.client.send(
          new CompleteMultipartUploadCommand({
            Bucket: this.bucket,
            Key,
            UploadId: uploadId,
            MultipartUpload: { Parts: parts },
            ...(ifAbsent ? { IfNoneMatch: '*' } : {}),
          }),
        )
        gone = true
        return { outcome: 'written', ambiguous: false }
      } catch (err) {
        const ambiguous = attemptsOf(err) > 1
        if (ifAbsent && isPreconditionFailed(err)) return { outcome: 'exists', ambiguous }
        if (ifAbsent && isConditionalConflict(err)) return { outcome: 'conflict', ambiguous }
        // A retried completion whose first reply was lost finds the upload already completed.
        if (ambiguous && nameOf(err) === 'NoSuchUpload') {
          gone = true
          if (ifAbsent) return { outcome: 'exists', ambiguous }
          if (await this.holds(key, data)) return { outcome: 'written', ambiguous }
        }
        throw this.wrap(op, key, err)
      }
    } finally {
      // Best effort: a failed abort leaves parts that the bucket's lifecycle rule removes.
      if (!gone) {
        await this.client
          .send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key, UploadId: uploadId }))
          .catch(() => undefined)
      }
    }
  }

  /** Uploads the parts, PART_CONCURRENCY at a time; on a failure starts no more and waits for those in flight. */
  private async uploadParts(key: string, uploadId: string, data: Uint8Array): Promise<CompletedPart[]> {
    const size = Math.max(this.partSize, Math.ceil(data.length / MAX_PARTS))
    const count = Math.ceil(data.length / size)
    const parts: CompletedPart[] = new Array(count)
    let next = 0
    let failed = false
    const worker = async () => {
      while (!failed && next < count) {
        const n = next++
        const body = data.subarray(n * size, Math.min(data.length, (n + 1) * size))
        try {
          const res = await this.client.send(
            new UploadPartCommand({
              Bucket: this.bucket,
              Key: this.fullKey(key),
              UploadId: uploadId,
              PartNumber: n + 1,
              Body: body,
              ChecksumAlgorithm: 'CRC32',
            }),
          )
          parts[n] = { PartNumber: n + 1, ETag: res.ETag, ...(res.ChecksumCRC32 ? { ChecksumCRC32: res.ChecksumCRC32 } : {}) }
        } catch (err) {
          failed = true
          throw this.wrap(`UploadPart ${n + 1}/${count}`, key, err)
        }
      }
    }
    const settled = await Promise.allSettled(Array.from({ length: Math.min(PART_CONCURRENCY, count) }, worker))
    const rejected = settled.find((r) => r.status === 'rejected')
    if (rejected) throw (rejected as PromiseRejectedResult).reason
    return parts
  }

  async delete(key: string): Promise<void> {
    try {
      await this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key) }))
    } catch (err) {
      if (isNotFound(err)) return
      throw this.wrap('DeleteObject', key, err)
    }
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    const out: ObjectInfo[] = []
    const strip = this.prefix === '' ? 0 : this.prefix.length + 1
    let token: string | undefined
    do {
      let res
      try {
        res = await this.client.send(
          new ListObjectsV2Command({
            Bucket: this.bucket,
            Prefix: this.fullKey(prefix),
            MaxKeys: this.listPageSize,
            ContinuationToken: token,
          }),
        )
      } catch (err) {
        throw this.wrap('ListObjectsV2', prefix, err)
      }
      for (const obj of res.Contents ?? []) {
        if (obj.Key === undefined) continue
        out.push({ key: obj.Key.slice(strip), size: obj.Size ?? 0, lastModified: obj.LastModified?.getTime() ?? 0 })
      }
      token = res.IsTruncated ? res.NextContinuationToken : undefined
    } while (token !== undefined)
    return out
  }

  private fullKey(key: string): string {
    return this.prefix === '' ? key : `${this.prefix}/${key}`
  }

  // Names the operation, object, attempts and S3 error code; never the request's headers or credentials.
  private wrap(op: string, key: string, err: unknown): Error {
    const status = statusOf(err)
    const attempts = attemptsOf(err)
    const detail = `${nameOf(err) ?? 'Error'}${status ? ` (HTTP ${status})` : ''}: ${(err as Error)?.message ?? String(err)}`
    return new StoreError(`S3 ${op} ${this.uri}/${key} failed${attempts > 1 ? ` after ${attempts} attempts` : ''}: ${detail}`, { cause: err })
  }
}

/**
 * A client configured from the environment. The SDK itself reads `AWS_ENDPOINT_URL_S3` /
 * `AWS_ENDPOINT_URL`, but it cannot know that such an endpoint (LocalStack, fauxqs) wants
 * path-style addressing, so a custom endpoint is passed explicitly with forcePathStyle.
 */
export function clientFromEnvironment(region?: string): S3Client {
  // Passed settings win over the SDK's reading of the environment, so they are passed only
  // when the environment does not set them.
  const retry = {
    ...(process.env.AWS_MAX_ATTEMPTS ? {} : { maxAttempts: S3_MAX_ATTEMPTS }),
    ...(process.env.AWS_RETRY_MODE ? {} : { retryMode: 'standard' }),
  }
  const endpoint = process.env.AWS_ENDPOINT_URL_S3 || process.env.AWS_ENDPOINT_URL || undefined
  const requestHandler = s3RequestHandlerOptions()
  if (endpoint === undefined) return new S3Client({ ...retry, requestHandler, ...(region ? { region } : {}) })
  const resolvedRegion = region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1'
  return new S3Client({ ...retry, requestHandler, region: resolvedRegion, endpoint, forcePathStyle: true })
}

/**
 * Sockets one S3 client keeps open per endpoint. The SDK's Node handler allows 50; a process
 * runs several operations at once (a compactor four buckets, each up to
 * `io.max-concurrent-requests` requests in flight), and a request beyond the pool waits for
 * a socket, which would put back the serial chains the parallel paths remove.
 */
export const S3_MAX_SOCKETS = 256

/**
 * Options of the SDK's NodeHttpHandler for Strata's clients: a pool of S3_MAX_SOCKETS
 * kept-alive sockets (a new TLS connection per request would cost more round trips than it
 * saves). Passed as options, not as an agent, so the SDK keeps its own handling of
 * `Expect: 100-continue`. Retries are not the handler's business and stay as configured.
 */
export function s3RequestHandlerOptions(): { httpAgent: { keepAlive: boolean; maxSockets: number }; httpsAgent: { keepAlive: boolean; maxSockets: number } } {
  const agent = { keepAlive: true, maxSockets: S3_MAX_SOCKETS }
  return { httpAgent: { ...agent }, httpsAgent: { ...agent } }
}

/** What the SDK's retry layer did, summed over every S3Store's client in this process. */
export interface S3RetryCounts {
  /** attempts beyond the first, over all S3 calls */
  retries: number
  /** attempts answered as throttled (503, 429, SlowDown and the like), retried or not */
  throttles: number
}

const retryCounts: S3RetryCounts = { retries: 0, throttles: 0 }

/** The counts since the process started (or since the last takeS3RetryCounts). */
export function s3RetryCounts(): S3RetryCounts {
  return { ...retryCounts }
}

/** The counts since the last call, resetting them: what one metrics flush publishes. */
export function takeS3RetryCounts(): S3RetryCounts {
  const out = { ...retryCounts }
  retryCounts.retries = 0
  retryCounts.throttles = 0
  return out
}

const counted = new WeakSet<S3Client>()

// Two middlewares on the client: one outside the SDK's retry middleware sees each call once
// and reads `$metadata.attempts`, which the SDK sets on the output and on the final error;
// one inside it (finalizeRequest, low priority, after the retry middleware's high) sees
// every attempt's error, already deserialized, and counts the throttled ones.
function countRetries(client: S3Client): void {
  // a stand-in client (a test's scripted send) has no middleware stack and no SDK retries
  if (counted.has(client) || client.middlewareStack === undefined) return
  counted.add(client)
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        const res = await next(args)
        retryCounts.retries += Math.max(0, attemptsOf(res.output) - 1)
        return res
      } catch (err) {
        retryCounts.retries += Math.max(0, attemptsOf(err) - 1)
        throw err
      }
    },
    { step: 'initialize', name: 'strataCountS3Retries', override: true },
  )
  client.middlewareStack.add(
    (next) => async (args) => {
      try {
        return await next(args)
      } catch (err) {
        if (isThrottled(err)) retryCounts.throttles++
        throw err
      }
    },
    { step: 'finalizeRequest', priority: 'low', name: 'strataCountS3Throttles', override: true },
  )
}

const THROTTLING_NAMES = new Set([
  'SlowDown', 'Throttling', 'ThrottlingException', 'ThrottledException', 'RequestThrottled', 'RequestThrottledException',
  'TooManyRequestsException', 'RequestLimitExceeded', 'BandwidthLimitExceeded',
])

/** S3 answers throttling with 503 (SlowDown, or ServiceUnavailable "reduce your request rate"). */
function isThrottled(err: unknown): boolean {
  const status = statusOf(err)
  const name = nameOf(err)
  return status === 503 || status === 429 || (name !== undefined && THROTTLING_NAMES.has(name)) ||
    (err as { $retryable?: { throttling?: boolean } })?.$retryable?.throttling === true
}

type Outcome = 'written' | 'exists' | 'conflict'

function attemptsOf(x: unknown): number {
  return (x as { $metadata?: { attempts?: number } })?.$metadata?.attempts ?? 1
}

function isPreconditionFailed(err: unknown): boolean {
  return statusOf(err) === 412 || nameOf(err) === 'PreconditionFailed'
}

function isConditionalConflict(err: unknown): boolean {
  return statusOf(err) === 409 || nameOf(err) === 'ConditionalRequestConflict'
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.from(a.buffer, a.byteOffset, a.byteLength).equals(b)
}

function statusOf(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode
}

function nameOf(err: unknown): string | undefined {
  return (err as { name?: string })?.name
}

function isNotFound(err: unknown): boolean {
  const name = nameOf(err)
  if (name === 'NoSuchBucket') return false
  return name === 'NoSuchKey' || name === 'NotFound' || statusOf(err) === 404
}
