// The soak's faults (soak-run.ts): one lane (or one per role) arms a fault at a time through
// the soak control (local/runtime/soak-control.ts), waits for it to strike, and arms the next
// after a random pause, by the clock or by invocations (SoakOptions.events). Also: what a
// struck fault's work still waits for, which tells an event-driven load when to stop.

import type { ArmedFault, SoakControl } from '../../local/runtime/soak-control.ts'
import type { InvocationLog } from './soak-invocations.ts'
import type { LoadModel } from './soak-load.ts'
import { type EventDrive, type FaultKind, type FaultRecord, type SoakShared, invocationsOf, replacesEnvironment, roleOf, secondsSince, sleep } from './soak-types.ts'

export class FaultDriver {
  readonly faults: FaultRecord[] = []
  private readonly bySeq = new Map<number, FaultRecord>()
  /** epoch ms of each strike of a fault, and whether it struck an invocation (a restart may find an environment idle) */
  private readonly strikes = new Map<number, { at: number; busy: boolean }[]>()
  private seq = 0
  /** every lane has ended */
  private lanesDone = false
  private awaitingLoggedAt = 0
  private readonly faultsUntil: number

  constructor(
    private readonly s: SoakShared,
    private readonly control: SoakControl,
    private readonly invocations: InvocationLog,
    private readonly model: LoadModel,
  ) {
    this.faultsUntil = s.o.faultsUntilSeconds ?? s.o.seconds - s.o.recoverWithinSeconds
  }

  private now(): number {
    return secondsSince(this.s)
  }

  private invoked(fn: 'writer' | 'compactor'): number {
    return invocationsOf(this.s.rt, fn)
  }

  /** Runs the lanes until each is done (or the load stopped). */
  run(): Promise<void> {
    const o = this.s.o
    return (
      o.parallelRoles
        ? Promise.all([this.lane(o.kinds.filter((k) => k.startsWith('writer'))), this.lane(o.kinds.filter((k) => k.startsWith('compactor')))])
        : this.lane(o.kinds)
    ).then(() => {
      this.lanesDone = true
    })
  }

  /**
   * With `events`: what a struck fault still waits for, null once recovered: each
   * invocation it struck has been reported and every message that invocation left was
   * deleted since, and an invocation of its function that started after it succeeded.
   */
  private awaiting(f: FaultRecord): string | null {
    if (f.firedAt === null) return 'not struck'
    const p = this.invocations.progress[roleOf(f.kind)]
    for (const s of this.strikes.get(f.seq) ?? []) {
      if (!s.busy) continue
      // every failed invocation running when it struck (two may be, with concurrency)
      const struck = p.failed.filter((x) => x.startedAt <= s.at && s.at <= x.endedAt)
      if (struck.length === 0) return 'the invocation it struck not yet reported'
      const left = struck.flatMap((x) => x.left).filter((id) => !p.deleted.has(id))
      if (left.length) return `${left.length} message(s) it left not yet deleted (${left.slice(0, 3).join(', ')})`
    }
    if (p.lastOkStart <= this.s.start + f.firedAt * 1000) return `no ${roleOf(f.kind)} invocation succeeded since`
    return null
  }

  /** With `events`: why the load stops now, or null while it goes on. */
  eventDriveStop(e: EventDrive): string | null {
    const sent = this.model.sent
    if (this.now() >= e.backstopSeconds) return `the backstop of ${e.backstopSeconds} s passed (${this.invoked('writer')} writer invocations)`
    if (this.invoked('writer') >= e.maxWriterInvocations) return `the bound of ${e.maxWriterInvocations} writer invocations was reached`
    if (sent.orders < e.minEvents || !this.lanesDone) return null
    const pending = this.faults.flatMap((f) => {
      const why = f.firedAt === null ? null : this.awaiting(f)
      return why === null ? [] : [`fault ${f.seq} (${f.kind}): ${why}`]
    })
    if (pending.length) {
      if (Date.now() - this.awaitingLoggedAt > 10_000) {
        this.awaitingLoggedAt = Date.now()
        this.s.log(`load goes on: ${pending.join('; ')}`)
      }
      return null
    }
    return `every fault struck and its work was done again, ${sent.orders} events sent (${this.invoked('writer')} writer and ${this.invoked('compactor')} compactor invocations)`
  }

  /** Takes in the strikes the functions reported since the last call. */
  absorbFired(): void {
    const ev = this.s.o.events
    for (const f of this.control.newlyFired()) {
      const rec = this.bySeq.get(f.seq)
      if (!rec) continue
      rec.points.push(`${f.kind === 'restart' ? 'restart' : f.role}: ${f.point}${f.records ? ` (${f.records} records)` : ''}`)
      if (rec.firedAt === null) rec.firedAt = (f.at - this.s.start) / 1000
      if (f.kind === 'restart') rec.environmentsKilled = (rec.environmentsKilled ?? 0) + 1
      if (ev) (this.strikes.get(f.seq) ?? this.strikes.set(f.seq, []).get(f.seq)!).push({ at: f.at, busy: f.kind !== 'restart' || f.point.startsWith('busy') })
    }
  }

  private async lane(kinds: readonly FaultKind[]): Promise<void> {
    const { o, random, running } = this.s
    const ev = o.events
    // the lane's clock: seconds, or with `events` the invocations of its functions
    const fns = [...new Set(kinds.map(roleOf))]
    const clock = () => (ev ? fns.reduce((n, fn) => n + this.invoked(fn), 0) : this.now())
    let next = ev ? ev.warmupInvocations : o.warmupSeconds
    const cycle = new FaultCycle(kinds, o.replacingFaultsUntilSeconds, random)
    while (running.load) {
      if (clock() < next) {
        await sleep(ev ? 200 : Math.min(500, (next - this.now()) * 1000))
        continue
      }
      if (kinds.length === 0 || (!ev && this.now() > this.faultsUntil)) break
      if (ev && kinds.every((k) => this.faults.filter((f) => f.kind === k && f.firedAt !== null).length >= ev.rounds)) break
      const kind = cycle.next(ev ? null : this.now())
      if (kind === null) break
      const rec: FaultRecord = { seq: ++this.seq, kind, armedAt: this.now(), firedAt: null, points: [], peakLagMs: null, recovered: null, recoverySeconds: null }
      this.faults.push(rec)
      this.bySeq.set(rec.seq, rec)
      if (kind === 'compactor-restart') await this.restart(rec)
      else await this.armAndWait(rec, kind)
      // not struck (nothing claimed it, no environment heard it): it comes again next
      if (rec.firedAt === null && running.load) cycle.again(kind)
      this.s.log(`fault ${rec.seq} ${kind} at ${(rec.firedAt ?? this.now()).toFixed(1)} s: ${kind === 'compactor-restart' ? `${rec.environmentsKilled} environment(s) killed` : (rec.points[0] ?? 'not claimed')}`)
      next = ev ? clock() + Math.round(ev.faultEveryInvocations * (0.5 + random())) : (rec.firedAt ?? this.now()) + o.faultEverySeconds * (0.5 + random())
    }
  }

  /** Every compactor environment killed at once: struck when one says it exited. */
  private async restart(rec: FaultRecord): Promise<void> {
    const { rt, running } = this.s
    const ev = this.s.o.events
    // a restart needs environments to kill: wait for a warm one (one that imported its
    // handler; an environment still importing it cannot hear a restart)
    const warm = () => [...rt.tables.values()].reduce((n, x) => n + x.pool.ready, 0)
    const deadline = Date.now() + 60_000
    while (warm() === 0 && running.load && (ev || Date.now() < deadline)) await sleep(200)
    rec.environmentsBefore = [...rt.tables.values()].reduce((n, x) => n + x.pool.size, 0)
    const postedAt = this.now()
    rec.environmentsKilled = 0
    this.control.restart('compactor', rec.seq)
    // a busy environment hears it once its event loop turns: with `events`, give it
    // until 10 compactor invocations ended, not 3 s
    const posted = this.invoked('compactor')
    for (let i = 0; rec.environmentsKilled === 0 && (ev ? running.load && this.invoked('compactor') - posted < 10 : i < 15); i++) {
      await sleep(200)
      this.absorbFired()
    }
    rec.firedAt = rec.environmentsKilled > 0 ? postedAt : null
  }

  /** A throw or an exit, armed for the next invocation of its function to claim. */
  private async armAndWait(rec: FaultRecord, kind: FaultKind): Promise<void> {
    const { random, running } = this.s
    const ev = this.s.o.events
    const [role, what] = kind.startsWith('writer') ? (['writer', kind.slice(7)] as const) : (['compactor', kind.slice(10)] as const)
    const armed: ArmedFault = {
      seq: rec.seq,
      role,
      kind: what === 'throw' ? 'throw' : what === 'exit-after-commit' ? 'exit-after-return' : 'exit-at-write',
      share: random(),
      landed: random() < 0.5,
    }
    this.control.arm(armed)
    // the next invocation of the function claims it; given up (and armed again) after
    // 60 s, or with `events` after 50 invocations that did not
    const deadline = Date.now() + 60_000
    const armedAt = this.invoked(role)
    while (rec.firedAt === null && running.load) {
      await sleep(200)
      this.absorbFired()
      if ((ev ? this.invoked(role) - armedAt > 50 : Date.now() > deadline) && this.control.disarm(armed)) break
    }
    if (rec.firedAt === null) this.control.disarm(armed)
  }
}

/**
 * The order in which a lane's kinds strike: each cycle a seeded shuffle of them. By the
 * clock with replacingFaultsUntilSeconds, the first cycle strikes the replacing kinds first
 * and none comes after that second.
 */
class FaultCycle {
  private cycle: FaultKind[] = []
  private cycles = 0

  constructor(
    private readonly kinds: readonly FaultKind[],
    private readonly replacingUntil: number | undefined,
    private readonly random: () => number,
  ) {}

  /** The next kind, or null when none may strike any more; `now` is null when driven by events. */
  next(now: number | null): FaultKind | null {
    const replacingOver = now !== null && this.replacingUntil !== undefined && now > this.replacingUntil
    if (replacingOver) this.cycle = this.cycle.filter((k) => !replacesEnvironment(k))
    if (this.cycle.length === 0) {
      this.cycle = this.kinds.filter((k) => !replacingOver || !replacesEnvironment(k))
      if (this.cycle.length === 0) return null
      const cycle = this.cycle
      for (let i = cycle.length - 1; i > 0; i--) {
        const j = Math.floor(this.random() * (i + 1))
        ;[cycle[i], cycle[j]] = [cycle[j], cycle[i]]
      }
      // the first cycle strikes the replacing kinds while they may
      if (now !== null && this.replacingUntil !== undefined && !replacingOver && this.cycles++ === 0) this.cycle = [...cycle.filter(replacesEnvironment), ...cycle.filter((k) => !replacesEnvironment(k))]
    }
    return this.cycle.shift()!
  }

  /** A kind that did not strike comes again next. */
  again(kind: FaultKind): void {
    this.cycle.unshift(kind)
  }
}
