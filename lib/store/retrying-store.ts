// Retries of transient storage failures at the ObjectStore seam: S3 throttling (503
// SlowDown), 500/502/504, request timeouts and connection resets are retried with capped
// exponential backoff and full jitter (AWS Architecture Blog, "Exponential Backoff and
// Jitter"); every retry is counted and reported, so it can become a metric. Anything else
// (403, 404 on getRange, a bad key) fails at once.
//
// putIfAbsent after an ambiguous failure: the attempt that failed may have been applied
// (lost reply), so a retry answered "already exists" may be our own write. The retry then
// reads the object and compares it with what it tried to write: equal bytes are taken as
// ours (true). Every caller in Strata writes content that is unique per attempt (snapshots
// carry a random uuid; ingest markers a timestamp), so equal bytes cannot be another
// writer's; a caller writing identical bytes from two writers would see both "win", which
// for identical content is harmless.
//
// Not for an S3Store: the AWS SDK already retries every S3 request (s3-store.ts configures
// and counts it, and applies the same own-write check to putIfAbsent), so a RetryingStore
// on top would multiply the attempts (6 here × 5 there). The constructor refuses one. This
// wrapper is for stores without a retry layer of their own, and for the fault sweeps.
import type { ObjectInfo, ObjectStore } from './object-store.ts'
import { S3Store } from './s3-store.ts'
import { RefusedError } from '../errors.ts'

export interface RetryEvent {
  op: string
  key: string
  /** 1 for the first retry */
  attempt: number
  delayMs: number
  error: unknown
}

export interface RetryOptions {
  /** attempts in all, the first included; default 6 */
  maxAttempts?: number
  /** first backoff ceiling; default 50 ms */
  baseDelayMs?: number
  /** backoff ceiling; default 5 s */
  maxDelayMs?: number
  /** called before each retry's sleep (metrics, logs) */
  onRetry?: (e: RetryEvent) => void
  /** what counts as transient; default isTransientStoreError */
  isTransient?: (err: unknown) => boolean
  /** injectable for tests; default setTimeout */
  sleep?: (ms: number) => Promise<void>
  /** injectable for tests; default Math.random */
  random?: () => number
}

const TRANSIENT_STATUS = new Set([500, 502, 503, 504])
const TRANSIENT_NAMES = new Set([
  'SlowDown', 'ServiceUnavailable', 'InternalError', 'RequestTimeout', 'RequestTimeTooSkewed', 'ThrottlingException',
  'TimeoutError', 'RequestTimeoutException', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ECONNREFUSED', 'EAI_AGAIN', 'ENOTFOUND',
])

/**
 * True for failures worth retrying. Walks the `cause` chain, because S3Store wraps the SDK
 * error in one that names the operation and key.
 */
export function isTransientStoreError(err: unknown): boolean {
  for (let e = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const x = e as { name?: string; code?: string; $metadata?: { httpStatusCode?: number }; $retryable?: unknown }
    const status = x.$metadata?.httpStatusCode
    if (status !== undefined && TRANSIENT_STATUS.has(status)) return true
    if (x.name !== undefined && TRANSIENT_NAMES.has(x.name)) return true
    if (x.code !== undefined && TRANSIENT_NAMES.has(x.code)) return true
    if (x.$retryable) return true
  }
  return false
}

export class RetryingStore implements ObjectStore {
  readonly uri: string
  /** retries made so far, all operations */
  retries = 0
  private readonly maxAttempts: number
  private readonly baseDelayMs: number
  private readonly maxDelayMs: number
  private readonly opts: RetryOptions

  constructor(
    readonly inner: ObjectStore,
    opts: RetryOptions = {},
  ) {
    if (inner instanceof S3Store) {
      throw new RefusedError(
        `RetryingStore over S3Store ${inner.uri}: the AWS SDK already retries S3 requests, so attempts would multiply; use the S3Store itself`,
      )
    }
    this.uri = inner.uri
    this.opts = opts
    this.maxAttempts = opts.maxAttempts ?? 6
    this.baseDelayMs = opts.baseDelayMs ?? 50
    this.maxDelayMs = opts.maxDelayMs ?? 5000
    if (!Number.isInteger(this.maxAttempts) || this.maxAttempts < 1) {
      throw new RangeError(`RetryingStore maxAttempts = ${this.maxAttempts}: expected an integer >= 1`)
    }
  }

  get(key: string): Promise<Uint8Array | null> {
    return this.retry('get', key, () => this.inner.get(key))
  }
  getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    return this.retry('getRange', key, () => this.inner.getRange(key, start, end))
  }
  head(key: string): Promise<ObjectInfo | null> {
    return this.retry('head', key, () => this.inner.head(key))
  }
  // put and delete are idempotent: repeating one that was applied changes nothing more
  put(key: string, data: Uint8Array): Promise<void> {
    return this.retry('put', key, () => this.inner.put(key, data))
  }
  delete(key: string): Promise<void> {
    return this.retry('delete', key, () => this.inner.delete(key))
  }
  list(prefix: string): Promise<ObjectInfo[]> {
    return this.retry('list', prefix, () => this.inner.list(prefix))
  }

  putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    let ambiguous = false
    return this.retry(
      'putIfAbsent',
      key,
      async () => {
        if (await this.inner.putIfAbsent(key, data)) return true
        if (!ambiguous) return false
        // an earlier attempt may have landed: it is ours when the bytes are ours
        const there = await this.inner.get(key)
        return there !== null && sameBytes(there, data)
      },
      () => (ambiguous = true),
    )
  }

  private async retry<T>(op: string, key: string, run: () => Promise<T>, onFailure?: () => void): Promise<T> {
    const isTransient = this.opts.isTransient ?? isTransientStoreError
    for (let attempt = 1; ; attempt++) {
      try {
        return await run()
      } catch (err) {
        if (attempt >= this.maxAttempts || !isTransient(err)) throw err
        onFailure?.()
        const ceiling = Math.min(this.maxDelayMs, this.baseDelayMs * 2 ** (attempt - 1))
        const delayMs = ceiling * (this.opts.random ?? Math.random)()
        this.retries++
        this.opts.onRetry?.({ op, key, attempt, delayMs, error: err })
        await (this.opts.sleep ?? defaultSleep)(delayMs)
      }
    }
  }
}

function defaultSleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
