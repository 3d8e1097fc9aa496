// The simulated world (docs/reliability.md "The deterministic simulation"): one process in
// which the real pipeline code runs on virtual time, every request it makes to storage or a
// queue completes when the world says, and every random choice comes from one seed.
//
// - Time: @sinonjs/fake-timers replaces the clock, timers and `node:timers/promises`; a
//   request is a timer that fires after a drawn latency, so the order in which requests
//   complete is the order of their virtual completion times, ties in issue order.
// - Processes: each Lambda execution environment is an `Env`; the code of an invocation runs
//   inside an AsyncLocalStorage context naming its environment, so a request knows whose it
//   is. A dead environment's requests never complete (a dead process issues nothing and
//   hears nothing), which is process death at an await point. Each environment has its own
//   clock skew, which `Date.now` adds.
// - Randomness: `Math.random`, `crypto.randomUUID` and `crypto.randomBytes` draw from the
//   seed (named imports of node:crypto follow through `syncBuiltinESMExports`), so file
//   names, commit users and fold identifiers are the same on every replay.
// The harness patches these globals for the length of one run and restores them after; the
// product code is unchanged and unaware. Nothing else in the process may run meanwhile.

import { type Clock, withGlobal } from '@sinonjs/fake-timers'
import { AsyncLocalStorage, AsyncResource } from 'node:async_hooks'
import crypto from 'node:crypto'
import { syncBuiltinESMExports } from 'node:module'
import { Random } from './random.ts'

const realSetImmediate = setImmediate

/** A Lambda execution environment: one process, one invocation at a time. */
export interface Env {
  id: string
  role: string
  /** added to Date.now() in this environment */
  skewMs: number
  dead: boolean
  /** set while an invocation runs in it */
  busy: boolean
  /** told when the environment dies (the event source learns of a crashed invocation at once) */
  onDeath?: () => void
}

/** How long a request takes and how it may fail; probabilities per request. */
export interface RequestFaults {
  /** refused before it is applied (a 5xx the client sees) */
  error: number
  /** applied, then the reply is lost (the client sees an error) */
  lostReply: number
  /** the reply is lost at once, and the request is applied later (a slow request the client gave up on) */
  lateApply: number
  /** the requesting process dies while it waits (before or after the request is applied) */
  death: number
  /** a slow request: 0.5–20 s instead of milliseconds */
  slow: number
}

export const NO_FAULTS: RequestFaults = { error: 0, lostReply: 0, lateApply: 0, death: 0, slow: 0 }

/** The error an injected request failure raises: shaped like S3's 503 SlowDown, so retrying layers treat it as transient. */
export class SimulatedRequestError extends Error {
  readonly $metadata = { httpStatusCode: 503 }
  constructor(what: string, applied: boolean) {
    super(`simulated: ${what} ${applied ? 'was applied but its reply was lost' : 'failed (503 SlowDown)'}`)
    this.name = 'SlowDown'
  }
}

export class World {
  readonly rng: Random
  private readonly latencyRng: Random
  private readonly faultRng: Random
  private readonly als = new AsyncLocalStorage<Env>()
  private clock: Clock | null = null
  private restore: (() => void)[] = []
  private envCount = 0
  /** requests issued, for the settle test and the trace */
  issued = 0
  /** a running digest of what completed, in order: two runs of one seed give the same */
  private digest = 0x811c9dc5
  faults: RequestFaults = NO_FAULTS
  /** counts of what the world did, for the report */
  readonly counts = { requests: 0, errors: 0, lostReplies: 0, lateApplies: 0, deaths: 0, slow: 0 }

  constructor(readonly seed: number, readonly startMs = Date.UTC(2026, 0, 1)) {
    this.rng = new Random(seed)
    this.latencyRng = this.rng.fork('latency')
    this.faultRng = this.rng.fork('faults')
  }

  /** Takes over time and randomness for this process; `uninstall` gives them back. */
  install(): void {
    const names = this.rng.fork('names')
    const clock = withGlobal(globalThis).install({
      now: this.startMs,
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date', 'performance', 'hrtime'],
      loopLimit: 1_000_000,
    })
    this.clock = clock
    this.restore.push(() => clock.uninstall())
    // a timer's callback runs in the context of whoever set it, as a real timer's does
    const fakeSetTimeout = globalThis.setTimeout
    const bound = ((cb: (...a: unknown[]) => void, ms?: number, ...args: unknown[]) => fakeSetTimeout(AsyncResource.bind(cb), ms, ...args)) as typeof setTimeout
    globalThis.setTimeout = Object.assign(bound, fakeSetTimeout)
    this.restore.push(() => (globalThis.setTimeout = fakeSetTimeout))
    // each environment's clock runs off by its skew
    const fakeNow = Date.now
    Date.now = () => clock.now + (this.als.getStore()?.skewMs ?? 0)
    this.restore.push(() => (Date.now = fakeNow))
    const random = Math.random
    Math.random = () => names.float()
    this.restore.push(() => (Math.random = random))
    const c = crypto as unknown as { randomUUID: () => string; randomBytes: (n: number, cb?: (e: Error | null, b: Buffer) => void) => Buffer | void }
    const { randomUUID, randomBytes } = c
    c.randomUUID = () => names.uuid()
    c.randomBytes = (n: number, cb?: (e: Error | null, b: Buffer) => void) => {
      const b = names.bytes(n)
      if (cb) {
        queueMicrotask(() => cb(null, b))
        return
      }
      return b
    }
    syncBuiltinESMExports()
    this.restore.push(() => {
      c.randomUUID = randomUUID
      c.randomBytes = randomBytes
      syncBuiltinESMExports()
    })
  }

  uninstall(): void {
    for (const r of this.restore.splice(0).reverse()) r()
    this.clock = null
  }

  /** Virtual time now (without any environment's skew). */
  get now(): number {
    return this.clock!.now
  }

  newEnv(role: string, skewMs = 0): Env {
    return { id: `${role}-${++this.envCount}`, role, skewMs, dead: false, busy: false }
  }

  /** The environment whose code is running, if any. */
  current(): Env | undefined {
    return this.als.getStore()
  }

  /** Runs `fn` as code of `env`: its requests are that environment's. */
  within<T>(env: Env, fn: () => Promise<T>): Promise<T> {
    return this.als.run(env, fn)
  }

  /** Kills an environment: its pending and future requests never complete. */
  kill(env: Env): void {
    if (env.dead) return
    env.dead = true
    this.counts.deaths++
    this.note(`kill ${env.id}`)
    env.onDeath?.()
  }

  /** Adds a line to the run's digest (what happened, in order). */
  note(line: string): void {
    let h = this.digest
    for (let i = 0; i < line.length; i++) h = Math.imul(h ^ line.charCodeAt(i), 0x01000193) >>> 0
    this.digest = h
  }

  get trace(): string {
    return this.digest.toString(16).padStart(8, '0')
  }

  /**
   * One request of the current environment: it completes after a drawn latency, and may
   * fail as `faults` says. `apply` performs it against the real in-memory state.
   */
  request<T>(what: string, apply: () => Promise<T>, opts: { mutating: boolean; faults?: RequestFaults } = { mutating: false }): Promise<T> {
    const env = this.current()
    if (env?.dead) return new Promise<T>(() => {})
    this.issued++
    const f = env ? (opts.faults ?? this.faults) : NO_FAULTS
    const slow = this.faultRng.chance(f.slow)
    if (slow) this.counts.slow++
    const latency = slow ? this.latencyRng.int(500, 20_000) : this.latencyRng.int(2, 40)
    return new Promise<T>((resolve, reject) => {
      this.clock!.setTimeout(() => {
        this.counts.requests++
        if (env?.dead) return
        const r = this.faultRng.float()
        let at = 0
        const roll = (p: number) => r >= at && r < (at += p)
        if (roll(f.death)) {
          // dies while waiting: the request may or may not have reached the service
          const applied = opts.mutating && this.faultRng.chance(0.5)
          this.note(`${what} death${applied ? ' applied' : ''}`)
          if (env) this.kill(env)
          if (applied) void apply().catch(() => undefined)
          return
        }
        if (roll(f.error)) {
          this.counts.errors++
          this.note(`${what} error`)
          reject(new SimulatedRequestError(what, false))
          return
        }
        if (opts.mutating && roll(f.lostReply)) {
          this.counts.lostReplies++
          this.note(`${what} lost-reply`)
          apply().then(
            () => reject(new SimulatedRequestError(what, true)),
            (e) => reject(e),
          )
          return
        }
        if (opts.mutating && roll(f.lateApply)) {
          this.counts.lateApplies++
          this.note(`${what} late-apply`)
          reject(new SimulatedRequestError(what, false))
          this.clock!.setTimeout(() => void apply().catch(() => undefined), this.latencyRng.int(100, 5_000))
          return
        }
        this.note(what)
        apply().then(resolve, reject)
      }, latency)
    })
  }

  /** Lets every piece of code that can run without time passing run: until nothing new is asked for. */
  async settle(): Promise<void> {
    let last = -1
    for (let stable = 0; stable < 3; ) {
      await new Promise<void>((r) => realSetImmediate(r))
      const sig = this.issued * 1_000_003 + this.clock!.countTimers()
      if (sig === last) stable++
      else {
        stable = 0
        last = sig
      }
    }
  }

  /** Fires the next timer (a request completing, a sleep ending); false when none is set. */
  step(): boolean {
    if (this.clock!.countTimers() === 0) return false
    this.clock!.next()
    return true
  }

  /** Moves virtual time on by `ms`, firing whatever falls due on the way. */
  advance(ms: number): void {
    this.clock!.tick(ms)
  }

  /** A timer on virtual time that belongs to no environment (the harness's own schedule). */
  at(delayMs: number, fn: () => void): void {
    this.clock!.setTimeout(fn, delayMs)
  }
}
