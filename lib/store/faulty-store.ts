// Fault injection at the ObjectStore seam, after slatedb's FailingObjectStore: counts every
// call and fails the ones a rule picks (the k-th call, or calls matching a predicate) in one
// of three ways an S3 client sees in production:
//   'error'      the request is refused and nothing happens (by default shaped like S3's
//                503 SlowDown, so a retrying wrapper treats it as transient);
//   'timeout'    the reply never comes: the promise rejects after a delay, nothing happens;
//   'lost-reply' the operation is performed, then the caller gets an error anyway (a
//                connection reset after the server applied the request).
// A timed-out request that is applied later is not modelled: 'lost-reply' stands for the
// "applied but the caller does not know" half of that case.
import { InterceptingStore, type StoreOp } from './intercepting-store.ts'
import type { ObjectStore } from './object-store.ts'

export type FaultKind = 'error' | 'timeout' | 'lost-reply'
export type { StoreOp }
export const STORE_OPS: readonly StoreOp[] = ['get', 'getRange', 'head', 'put', 'putIfAbsent', 'delete', 'list']
/** Operations that change the store: a lost reply differs from an error only for these. */
export const MUTATING_OPS: readonly StoreOp[] = ['put', 'putIfAbsent', 'delete']

export interface StoreCall {
  /** 1-based index of the call on this wrapper */
  n: number
  op: StoreOp
  /** the key, or the prefix for list */
  key: string
}

export interface FaultRule {
  kind: FaultKind
  /** fail the call with this 1-based index */
  at?: number
  /** fail calls matching this (combined with `at` when both are given) */
  when?: (call: StoreCall) => boolean
  /** how many matching calls fail before the rule is spent; default 1, Infinity for all */
  times?: number
}

/** The error an injected fault raises; `status`/`$metadata` look like an AWS SDK error. */
export class InjectedFault extends Error {
  override name: string
  readonly $metadata: { httpStatusCode?: number }
  constructor(
    readonly kind: FaultKind,
    readonly call: StoreCall | { n: number; op: string; key: string },
  ) {
    super(
      kind === 'error'
        ? `injected fault: 503 SlowDown on call ${call.n} (${call.op} '${call.key}')`
        : kind === 'timeout'
          ? `injected fault: call ${call.n} (${call.op} '${call.key}') timed out`
          : `injected fault: call ${call.n} (${call.op} '${call.key}') was applied but its reply was lost (connection reset)`,
    )
    // the names a retry policy recognises: S3's throttling code, Node's timeout and reset
    this.name = kind === 'error' ? 'SlowDown' : kind === 'timeout' ? 'TimeoutError' : 'ECONNRESET'
    this.$metadata = kind === 'error' ? { httpStatusCode: 503 } : {}
    if (kind === 'lost-reply') (this as { code?: string }).code = 'ECONNRESET'
  }
}

export interface FaultyStoreOptions {
  rules?: FaultRule[]
  /** delay before a 'timeout' fault rejects; default 5 ms (tests want it short) */
  timeoutMs?: number
}

interface LiveRule extends FaultRule {
  left: number
}

export class FaultyStore extends InterceptingStore {
  /** every call made so far, in order */
  readonly calls: StoreCall[] = []
  /** faults raised so far */
  readonly injected: InjectedFault[] = []
  private rules: LiveRule[] = []
  private readonly timeoutMs: number

  constructor(inner: ObjectStore, { rules = [], timeoutMs = 5 }: FaultyStoreOptions = {}) {
    super(inner)
    this.timeoutMs = timeoutMs
    for (const r of rules) this.inject(r)
  }

  /** Adds a rule; `at` counts from the first call this wrapper ever saw. */
  inject(rule: FaultRule): this {
    this.rules.push({ ...rule, left: rule.times ?? 1 })
    return this
  }

  /** Removes every rule (the store then passes everything through). */
  heal(): this {
    this.rules = []
    return this
  }

  get count(): number {
    return this.calls.length
  }

  protected async call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
    const call: StoreCall = { n: this.calls.length + 1, op, key }
    this.calls.push(call)
    const kind = this.pick(call)
    if (kind === null) return run()
    const fault = new InjectedFault(kind, call)
    this.injected.push(fault)
    if (kind === 'error') throw fault
    if (kind === 'timeout') {
      await new Promise((r) => setTimeout(r, this.timeoutMs))
      throw fault
    }
    await run()
    throw fault
  }

  private pick(call: StoreCall): FaultKind | null {
    for (const r of this.rules) {
      if (r.left <= 0) continue
      if (r.at !== undefined && r.at !== call.n) continue
      if (r.when !== undefined && !r.when(call)) continue
      if (r.at === undefined && r.when === undefined) continue
      r.left--
      return r.kind
    }
    return null
  }
}
