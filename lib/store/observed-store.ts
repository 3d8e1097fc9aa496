// Store wrappers that watch requests without changing them, for probes and counters
// (benchmarks, tests, the soak's crash points): ObservedStore tells an observer when each
// request starts and how it ended; CountingStore counts requests by operation. Both sit on
// the InterceptingStore seam, so what they see is what the engine asked of its store, one
// call per request (an S3 store's own retries and multipart parts stay inside it).
import { InterceptingStore, type StoreOp } from './intercepting-store.ts'
import type { ObjectStore } from './object-store.ts'

export type { StoreOp }

export interface StoreRequest {
  op: StoreOp
  /** the key, or the prefix for list */
  key: string
  /** Date.now() when the request was handed to the inner store */
  startedAt: number
}

export type StoreOutcome = { ok: true; value: unknown; endedAt: number } | { ok: false; error: unknown; endedAt: number }

export interface StoreObserver {
  /** Before the request goes to the inner store; a throw (or a rejection) stops it there. */
  before?(request: StoreRequest): void | Promise<void>
  /** After the inner store answered or failed; a throw (or a rejection) replaces the answer. */
  after?(request: StoreRequest, outcome: StoreOutcome): void | Promise<void>
}

export class ObservedStore extends InterceptingStore {
  constructor(
    inner: ObjectStore,
    private readonly observer: StoreObserver,
  ) {
    super(inner)
  }

  protected async call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
    const request: StoreRequest = { op, key, startedAt: Date.now() }
    await this.observer.before?.(request)
    let value: T
    try {
      value = await run()
    } catch (error) {
      await this.observer.after?.(request, { ok: false, error, endedAt: Date.now() })
      throw error
    }
    await this.observer.after?.(request, { ok: true, value, endedAt: Date.now() })
    return value
  }
}

export type StoreCounts = Record<StoreOp, number>

const noCounts = (): StoreCounts => ({ get: 0, getRange: 0, head: 0, put: 0, putIfAbsent: 0, delete: 0, list: 0 })

/** Counts the requests that reach the inner store, failed ones included, by operation. */
export class CountingStore extends InterceptingStore {
  private counts = noCounts()

  protected call<T>(op: StoreOp, _key: string, run: () => Promise<T>): Promise<T> {
    this.counts[op]++
    return run()
  }

  /** Requests since the last take (or since the wrapper was made), by operation. */
  take(): StoreCounts {
    const out = this.counts
    this.counts = noCounts()
    return out
  }

  /** Requests so far, all operations together. */
  get total(): number {
    return Object.values(this.counts).reduce((a, b) => a + b, 0)
  }
}
