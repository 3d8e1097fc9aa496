// ObjectStore on Amazon S3 (or anything speaking its API: LocalStack, the embedded fauxqs
// backend). Keys live under an optional prefix inside one bucket. The create-if-absent that
// the commit protocol relies on is a conditional PutObject (`If-None-Match: *`, S3
// conditional writes, GA since 2024-08).
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3'
import { StrataInputError } from '../types.ts'
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
}

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
  private readonly client: S3Client
  private readonly ownsClient: boolean
  private readonly listPageSize: number

  constructor({ bucket, prefix = '', client, region, listPageSize = 1000 }: S3StoreOptions) {
    if (bucket === '' || bucket.includes('/')) {
      throw new StrataInputError(`S3Store bucket '${bucket}' is not valid: expected a bucket name without '/'`)
    }
    if (!Number.isInteger(listPageSize) || listPageSize < 1 || listPageSize > 1000) {
      throw new StrataInputError(`S3Store listPageSize ${listPageSize} is not valid: expected an integer in 1..1000`)
    }
    this.bucket = bucket
    this.prefix = prefix.replace(/^\/+|\/+$/g, '')
    this.uri = this.prefix === '' ? `s3://${bucket}` : `s3://${bucket}/${this.prefix}`
    this.client = client ?? clientFromEnvironment(region)
    this.ownsClient = client === undefined
    this.listPageSize = listPageSize
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
      if (!info) throw new Error(`getRange: no object '${key}' in ${this.uri}`)
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
      if (isNotFound(err)) throw new Error(`getRange: no object '${key}' in ${this.uri}`)
      if (statusOf(err) === 416) {
        const info = await this.head(key)
        if (!info) throw new Error(`getRange: no object '${key}' in ${this.uri}`)
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
    try {
      await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key), Body: data }))
    } catch (err) {
      throw this.wrap('PutObject', key, err)
    }
  }

  // A false after an SDK-level retry of a request whose first attempt landed is possible
  // (the retry then sees our own object and gets 412); the commit protocol covers that by
  // checking whether its own snapshot already landed (commitUser + commitIdentifier).
  async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    for (let attempt = 0; attempt < CONFLICT_ATTEMPTS; attempt++) {
      try {
        await this.client.send(
          new PutObjectCommand({ Bucket: this.bucket, Key: this.fullKey(key), Body: data, IfNoneMatch: '*' }),
        )
        return true
      } catch (err) {
        if (statusOf(err) === 412 || nameOf(err) === 'PreconditionFailed') return false
        if (statusOf(err) !== 409 && nameOf(err) !== 'ConditionalRequestConflict') {
          throw this.wrap('PutObject (If-None-Match: *)', key, err)
        }
      }
      const delay = CONFLICT_BASE_DELAY_MS * 2 ** attempt * (0.8 + 0.4 * Math.random())
      await new Promise((r) => setTimeout(r, delay))
    }
    // Every attempt conflicted, so none applied: an object there now is someone else's.
    if (await this.head(key)) return false
    throw new Error(
      `S3 PutObject (If-None-Match: *) ${this.uri}/${key} failed: ` +
        `${CONFLICT_ATTEMPTS} attempts answered 409 ConditionalRequestConflict and the key is still absent`,
    )
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

  // Names the operation, object and S3 error code; never the request's headers or credentials.
  private wrap(op: string, key: string, err: unknown): Error {
    const status = statusOf(err)
    const detail = `${nameOf(err) ?? 'Error'}${status ? ` (HTTP ${status})` : ''}: ${(err as Error)?.message ?? String(err)}`
    return new Error(`S3 ${op} ${this.uri}/${key} failed: ${detail}`, { cause: err })
  }
}

/**
 * A client configured from the environment. The SDK itself reads `AWS_ENDPOINT_URL_S3` /
 * `AWS_ENDPOINT_URL`, but it cannot know that such an endpoint (LocalStack, fauxqs) wants
 * path-style addressing, so a custom endpoint is passed explicitly with forcePathStyle.
 */
export function clientFromEnvironment(region?: string): S3Client {
  const endpoint = process.env.AWS_ENDPOINT_URL_S3 || process.env.AWS_ENDPOINT_URL || undefined
  if (endpoint === undefined) return new S3Client(region ? { region } : {})
  const resolvedRegion = region ?? process.env.AWS_REGION ?? process.env.AWS_DEFAULT_REGION ?? 'us-east-1'
  return new S3Client({ region: resolvedRegion, endpoint, forcePathStyle: true })
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
