// An ObjectStore wrapper that records, for every request, what else was in flight when it
// started and how long the chain of dependent requests before it was: the two things
// issue 14 is about, measured without a clock. Each request is held for one macrotask
// before it answers, standing for the network's first-byte latency, so requests that a
// caller starts together overlap here too, and requests it starts one after another do not.

import { InterceptingStore, type StoreOp } from '../../lib/store/intercepting-store.ts'

export interface TracedCall {
  op: StoreOp
  key: string
  /** 1 + the depth of the deepest request that had answered before this one started */
  depth: number
  /** requests in flight when this one started, itself included */
  concurrent: { op: StoreOp; key: string }[]
}

export class TracedStore extends InterceptingStore {
  calls: TracedCall[] = []
  private readonly live = new Set<{ op: StoreOp; key: string }>()
  /** depth of the deepest request answered so far (since the last reset) */
  private answered = 0

  /** Forgets what was recorded: depths count from here. */
  reset(): void {
    this.calls = []
    this.answered = 0
  }

  /** Requests matching `pred` that were in flight together, at most. */
  maxInFlight(pred: (c: { op: StoreOp; key: string }) => boolean = () => true): number {
    let max = 0
    for (const c of this.calls) if (pred(c)) max = Math.max(max, c.concurrent.filter(pred).length)
    return max
  }

  /** The longest chain of requests each started after the one before it answered. */
  get depth(): number {
    return this.calls.reduce((d, c) => Math.max(d, c.depth), 0)
  }

  count(pred: (c: { op: StoreOp; key: string }) => boolean): number {
    return this.calls.filter(pred).length
  }

  protected async call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
    const me = { op, key }
    this.live.add(me)
    const depth = this.answered + 1
    this.calls.push({ op, key, depth, concurrent: [...this.live] })
    try {
      const out = await run()
      await new Promise((r) => setImmediate(r))
      return out
    } finally {
      this.live.delete(me)
      this.answered = Math.max(this.answered, depth)
    }
  }
}

/** A data file of the table (not a manifest, index or snapshot). */
export const isDataFile = (c: { key: string }): boolean => /(^|\/)bucket-\d+\/data-[^/]*\.parquet$/.test(c.key)
