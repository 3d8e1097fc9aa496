// Bounded request parallelism. Every object-store request waits a first-byte
// latency, so independent requests go out together; `io.max-concurrent-requests` caps how
// many one operation keeps in flight, which keeps it under S3's per-prefix request rates and
// inside the client's socket pool. Retries and throttle handling stay in the store below
// (the SDK's retry strategy, or RetryingStore): a slot is held while its request retries.
import pLimit, { type LimitFunction } from 'p-limit'
import { InterceptingStore, type StoreOp } from './intercepting-store.ts'
import type { ObjectStore } from './object-store.ts'

/**
 * `fn` over every item, at most `limit` running at once; results in item order. After the
 * first failure no further item starts, and the call rejects with that failure only once
 * the running ones have settled, so a caller that cleans up after a failure (deletes what
 * it wrote) does not race a request still in flight.
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const run = pLimit(Math.max(1, limit))
  let failed = false
  const settled = await Promise.allSettled(
    items.map((item, i) =>
      run(async () => {
        if (failed) return SKIPPED
        try {
          return await fn(item, i)
        } catch (e) {
          failed = true
          throw e
        }
      }),
    ),
  )
  const rejected = settled.find((r) => r.status === 'rejected')
  if (rejected) throw (rejected as PromiseRejectedResult).reason
  return settled.map((r) => (r as PromiseFulfilledResult<R>).value)
}

const SKIPPED = Symbol('skipped') as never

/**
 * An ObjectStore whose requests each take one of `limit` slots: one operation's bound over
 * every request it makes through it, however many files it starts reading or writing at
 * once. It limits single requests (the leaves), never work that makes further requests
 * through it, so it cannot deadlock on itself.
 */
export class BoundedStore extends InterceptingStore {
  private readonly slot: LimitFunction

  constructor(inner: ObjectStore, limit: number) {
    super(inner)
    this.slot = pLimit(Math.max(1, limit))
  }

  protected call<T>(_op: StoreOp, _key: string, run: () => Promise<T>): Promise<T> {
    return this.slot(run)
  }
}

/** `p`, with its rejection marked handled: for work started ahead that may never be awaited. */
export function startedAhead<T>(p: Promise<T>): Promise<T> {
  p.catch(() => undefined)
  return p
}

/**
 * PUTs that go on while the caller produces the next object: put() hands an object over
 * and returns at once, unless `maxBytes` are already uploading, in which case it waits for
 * uploads to finish first. So a producer of large files (a compaction's outputs) holds
 * about `maxBytes` of them beyond the one it is building, however fast it produces; one
 * object is always let through, whatever its size. A failed upload fails the next put()
 * or done().
 */
export class Uploads {
  private readonly pending = new Set<Promise<void>>()
  private bytes = 0
  private failed = false
  private failure: unknown

  constructor(
    private readonly store: ObjectStore,
    private readonly maxBytes: number,
  ) {}

  /** `settled` runs once the store is done with `data` (landed or failed): the caller may reuse its memory then. */
  async put(key: string, data: Uint8Array, settled?: () => void): Promise<void> {
    while (this.pending.size > 0 && this.bytes + data.length > this.maxBytes) await Promise.race(this.pending)
    this.check()
    this.bytes += data.length
    const upload: Promise<void> = this.store.put(key, data).then(
      () => {
        this.pending.delete(upload)
        this.bytes -= data.length
        settled?.()
      },
      (e) => {
        this.pending.delete(upload)
        this.bytes -= data.length
        if (!this.failed) [this.failed, this.failure] = [true, e]
        settled?.()
        throw e
      },
    )
    // observed through check(), done() or settled(), whichever comes first
    upload.catch(() => undefined)
    this.pending.add(upload)
  }

  /** Resolves once every upload has landed; rejects with the first failure. */
  async done(): Promise<void> {
    await Promise.allSettled([...this.pending])
    this.check()
  }

  /** Resolves once nothing is uploading any more, landed or not. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.pending])
  }

  private check(): void {
    if (this.failed) throw this.failure
  }
}
