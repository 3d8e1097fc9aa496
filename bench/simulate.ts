// Beyond this machine: a discrete-event model of one deletion-vector table with 1,024
// buckets on Lambda, calibrated with costs measured in the same benchmark run, deterministic
// for a seed.
//
// The model:
// - Writers: one writer commit every 1/writerCommitsPerSecond s; each touches a bucket with
//   probability touchProbability (both from the freshness run), adding an L0 file there
//   when it lands and enqueuing one compaction job (FIFO, one message group per bucket).
// - Compactors: `slots` concurrent invocations (task-threads; -1 = one per active bucket,
//   capped by the account's Lambda concurrency). A slot takes the oldest ready group, at
//   most 10 of its jobs (the FIFO batch), all of its L0 files, and works for perBucketMs +
//   perJobMs·jobs (the freshness run's fit), ±20% seeded jitter; then it commits. One
//   bucket never has two jobs in flight (FIFO group). A slot has `bucketsAtOnce` lanes (the
//   compactor compacts that many buckets of its batch at once): while up to that many of
//   its buckets wait for their commits it works on the next one.
// - The commit path:
//   direct: every writer batch and every compaction commits its own snapshot, one after
//   another; with n commits waiting the path completes them at the rate the contention
//   benchmark measured for n concurrent committers (the curve, so lost races and backoff are
//   in it); the compactor holds its slot until its commit lands.
//   folded (the deployed design): writers and compactors send commit messages to the
//   table's commit queue; `committers` committer invocations at most (the event-source
//   mapping's maxConcurrency 2; 1 with the committer lease, under which one folds and the
//   other forwards its batches, a hop not modelled) each take every message waiting when a round starts (up
//   to drainMax) and fold them into a snapshot. With committer rounds
//   (lib/commit/commit-service.ts, the deployed default) a round's messages are received
//   while the round before folds, so once it has landed the committer folds what arrived
//   at once, and a round costs foldBaseMs + foldPerCommitMs·k (bench/run.ts: the fold
//   sweep's round fit, a fold after the committer's own snapshot; older calibrations add
//   the tail of one receive). A round that builds on a snapshot the other committer landed
//   since this one's last round costs foreignRoundBaseMs + foreignRoundPerCommitMs·k (its
//   delta is read first), and a round during which the other committer landed a snapshot
//   has lost the race for `snapshot-N`: it pays lostRaceMs more (re-read, rewrite the base
//   list, create again) and checks again. A committer whose round ends with
//   nothing waiting ends its invocation: it is idle for committerOverheadMs (the poller's
//   delete and next receive), and the next invocation's first round costs
//   firstRoundBaseMs + firstRoundPerCommitMs·k (the whole first drain, then the fold). The
//   deletes of a round's messages (and receipts, written only for conflicts, which the
//   model has none of) go on behind the next round and delay no one. A compactor's sender
//   follows the snapshot chain: its slot, and its bucket's FIFO group, are held until the
//   snapshot that lands its commit exists and receiptWaitMs more (the measured wait of a
//   sender's probe for a landing). Older calibrations (a receipt per message: receiptBaseMs
//   set, no `rounds`) hold the compactor until its round's receipts are written too
//   (receiptBaseMs + receiptPerCommitMs·k), then its receipt poll; without rounds at all
//   the fold cost is a whole invocation.
// - Freshness lag, sampled each simulated second after a warm-up: the age of the oldest L0
//   file in any bucket, as tableStatus measures it. A setting that cannot keep up has a lag
//   that grows one second per second from the start (its p50 is then about the middle of
//   the simulated time); the "still growing" column says so.
// Not modelled: the direct path's compaction commits cost more than appends (deletes,
// conflict checks, the index manifest is a full listing) while its curve is of appends;
// folds beyond the sizes measured (an extrapolation of the fit); cold starts; S3 request
// rates per prefix and key (every waiting sender probes the same `snapshot-(N+1)` key and
// its own conflict receipt key every ≤ 100 ms); older calibrations: the lost races between
// the two committers; the invocation's rounds ending after STRATA_COMMIT_ROUNDS_MS; the SQS send; writers
// waiting for their landings (the write load is open loop).

import { seededRandom } from './lib/dataset.ts'
import { markdownTable } from './lib/report.ts'
import { percentile } from './lib/stats.ts'

export interface SimCalibration {
  writerCommitsPerSecond: number
  touchProbability: number
  perBucketMs: number
  perJobMs: number
  /** direct commits/s measured with n concurrent committers, n ascending */
  directCurve: { committers: number; commitsPerSecond: number }[]
  /** folded: one committer invocation, ms = foldBaseMs + foldPerCommitMs·messages */
  foldBaseMs: number
  foldPerCommitMs: number
  /** buckets one compactor invocation compacts at once (process-jobs' bucketsAtOnce; default 1) */
  bucketsAtOnce?: number
  /** folded: concurrent committer invocations (default 2) */
  committers?: number
  /** folded: the committer lease was deployed (committers is then 1), for the report */
  committerLease?: boolean
  /** folded: messages one invocation folds at most (STRATA_COMMIT_DRAIN_MAX, default 1000) */
  drainMax?: number
  /** folded: a committer's idle time between invocations (default 0) */
  committerOverheadMs?: number
  /**
   * folded: from the snapshot that lands a commit existing to its sender seeing it (the
   * measured landing-seen wait; older calibrations: from its receipt written to read);
   * default 0
   */
  receiptWaitMs?: number
  /**
   * folded, committer rounds: a committer that finds messages waiting when its round has
   * landed folds them at once (foldBaseMs/foldPerCommitMs are then one steady-state
   * round). Absent: rounds exactly when receiptBaseMs is given (older calibrations).
   */
  rounds?: boolean
  /**
   * folded, rounds: a round that builds on a snapshot the other committer landed since this
   * one's last round (its delta is read first); absent: as any round
   */
  foreignRoundBaseMs?: number
  foreignRoundPerCommitMs?: number
  /**
   * folded: a round during which the other committer landed a snapshot loses the race for
   * `snapshot-N` and pays this again (re-read the winner's delta, rewrite the base list,
   * create again), then checks once more; absent: lost races are not modelled
   */
  lostRaceMs?: number
  /** folded, rounds: a cold invocation's first round (its whole first drain and the fold); absent: as any round */
  firstRoundBaseMs?: number
  firstRoundPerCommitMs?: number
  /**
   * folded, rounds: the committer's work after a round's snapshot (deletes of the drained
   * messages, receipts of conflicts), settleBaseMs + settlePerCommitMs·k. It overlaps the
   * next round and delays no sender, so the model only reports it.
   */
  settleBaseMs?: number
  settlePerCommitMs?: number
  /**
   * folded, older calibrations (a receipt per settled message): a fold's receipts and
   * deletes take receiptBaseMs + receiptPerCommitMs·k after it lands, overlap the next
   * round and hold each compactor until written. Absent: nothing holds a sender beyond
   * receiptWaitMs.
   */
  receiptBaseMs?: number
  receiptPerCommitMs?: number
  /** where the fold cost came from, for the report */
  foldSource?: string
}

export interface SimOptions {
  buckets: number
  lambdaConcurrency: number
  seconds: number
  warmupSeconds: number
  seed: number
}

export type SimPath = 'direct' | 'folded'

export interface SimPoint {
  path: SimPath
  taskThreads: number
  slots: number
  lagP50S: number
  lagP99S: number
  lagMaxS: number
  /** lag at the end minus lag at the middle of the measured window, per second: > 0 = still growing */
  lagGrowthPerS: number
  compactionsPerSecond: number
  snapshotsPerSecond: number
  /** share of time the commit path was busy (folded: mean share of its committers) */
  commitUtilization: number
  /** folded: commit messages per snapshot */
  messagesPerFold?: number
  /** folded, with lostRaceMs: races for `snapshot-N` lost to the other committer, per snapshot */
  lostRacesPerSnapshot?: number
  /** share of time all compactor slots were busy */
  slotUtilization: number
  /** bucket-time waiting for commits (and receipts) ÷ (that + slot-time working) */
  slotCommitWaitShare?: number
  bottleneck: 'commit path' | 'compaction' | 'neither'
  peakL0PerBucket: number
  /** what the measured window did, for the cost model (bench/cost-sim.ts) */
  usage: SimUsage
}

/** Counts of the measured window (after the warm-up), for pricing. */
export interface SimUsage {
  /** writer commits (one per writer invocation) and the buckets they touched (one L0 file and one compaction job each) */
  writerCommits: number
  bucketsTouched: number
  /** bucket compactions finished, the jobs and the L0 files they took */
  compactions: number
  jobsCompacted: number
  filesCompacted: number
  /** compactor slot-seconds with a bucket being compacted or waiting for its commit (what a compactor invocation is billed for) */
  compactorBusySeconds: number
  /** folded: snapshots landed, rounds begun by a fresh committer invocation, committer round-seconds (lost races included) */
  snapshots: number
  committerInvocations: number
  committerBusySeconds: number
  /** compaction jobs queued at the start and the end of the window: growing means the compactors fall behind */
  jobsQueuedStart: number
  jobsQueuedEnd: number
}

/** Binary min-heap of timed events. */
class Events<T> {
  private readonly h: { t: number; seq: number; v: T }[] = []
  private seq = 0
  get size() {
    return this.h.length
  }
  push(t: number, v: T): void {
    const h = this.h
    h.push({ t, seq: this.seq++, v })
    let i = h.length - 1
    while (i > 0) {
      const p = (i - 1) >> 1
      if (this.less(h[p], h[i])) break
      ;[h[p], h[i]] = [h[i], h[p]]
      i = p
    }
  }
  pop(): { t: number; v: T } {
    const h = this.h
    const top = h[0]
    const last = h.pop()!
    if (h.length) {
      h[0] = last
      let i = 0
      for (;;) {
        const l = 2 * i + 1, r = l + 1
        let m = i
        if (l < h.length && this.less(h[l], h[m])) m = l
        if (r < h.length && this.less(h[r], h[m])) m = r
        if (m === i) break
        ;[h[m], h[i]] = [h[i], h[m]]
        i = m
      }
    }
    return top
  }
  private less(a: { t: number; seq: number }, b: { t: number; seq: number }) {
    return a.t < b.t || (a.t === b.t && a.seq < b.seq)
  }
}

interface Bucket {
  /** creation times of L0 files, oldest first */
  l0: number[]
  jobs: number
  busy: boolean
  ready: boolean
}

type Commit = { kind: 'writer'; touched: number[] } | { kind: 'compact'; bucket: number; takenUpTo: number; slot: number }
type Ev =
  | { e: 'writer' }
  | { e: 'compacted'; bucket: number; takenUpTo: number; slot: number; jobs: number }
  | { e: 'committed'; batch: Commit[]; server: number }
  | { e: 'serverReady'; server: number }
  | { e: 'released'; bucket: number; slot: number }
  | { e: 'sample' }

function directRate(curve: SimCalibration['directCurve'], n: number): number {
  if (n <= curve[0].committers) return curve[0].commitsPerSecond
  for (let i = 1; i < curve.length; i++) {
    if (n <= curve[i].committers) {
      const a = curve[i - 1], b = curve[i]
      const f = (Math.log(n) - Math.log(a.committers)) / (Math.log(b.committers) - Math.log(a.committers))
      return a.commitsPerSecond + f * (b.commitsPerSecond - a.commitsPerSecond)
    }
  }
  return curve[curve.length - 1].commitsPerSecond
}

const pct = (xs: number[], p: number): number => percentile(xs, p, 0)

/** What a calibration says the folded commit path costs, in seconds. */
interface CommitCosts {
  drainMax: number
  overheadS: number
  receiptWaitS: number
  /** committer rounds: a committer that finds messages waiting when its round landed folds them at once */
  rounds: boolean
  /** what holds a sender for its round's receipts (older calibrations only) */
  receiptsS: (k: number) => number
  /** one round folding k messages: a cold invocation's first, one after the other committer's snapshot, or any other */
  roundS: (k: number, fresh: boolean, foreign: boolean) => number
}

function commitCosts(cal: SimCalibration): CommitCosts {
  const perMessageReceipts = cal.receiptBaseMs !== undefined && cal.receiptPerCommitMs !== undefined
  const rounds = cal.rounds ?? perMessageReceipts
  return {
    drainMax: cal.drainMax ?? 1000,
    overheadS: (cal.committerOverheadMs ?? 0) / 1000,
    receiptWaitS: (cal.receiptWaitMs ?? 0) / 1000,
    rounds,
    // only older calibrations hold a sender for its round's receipts
    receiptsS: (k) => (perMessageReceipts ? (cal.receiptBaseMs! + cal.receiptPerCommitMs! * k) / 1000 : 0),
    roundS: (k, fresh, foreign) =>
      (rounds && fresh && cal.firstRoundBaseMs !== undefined
        ? cal.firstRoundBaseMs + (cal.firstRoundPerCommitMs ?? cal.foldPerCommitMs) * k
        : rounds && foreign && cal.foreignRoundBaseMs !== undefined
          ? cal.foreignRoundBaseMs + (cal.foreignRoundPerCommitMs ?? cal.foldPerCommitMs) * k
          : cal.foldBaseMs + cal.foldPerCommitMs * k) / 1000,
  }
}

/** A commit server: direct, the one path; folded, a committer, `fresh` when its next round is an invocation's first. */
interface Server {
  busy: boolean
  ready: boolean
  fresh: boolean
  startedAt: number
  arrivalsAtStart: number
}

/** The time the model spent in each state after the warm-up, for the utilizations. */
interface BusyTimes {
  commitBusy: number
  slotsFull: number
  /** bucket-time waiting for commits (and receipts), and slot-time working */
  slotWait: number
  slotWork: number
}

export function simulate(cal: SimCalibration, opts: SimOptions, path: SimPath, taskThreads: number): SimPoint {
  const run = new ModelRun(cal, opts, path, taskThreads)
  run.run()
  return run.point()
}

/** One run of the model: its state, the handler of each event, and the point it measured. */
class ModelRun {
  private readonly random: () => number
  readonly slots: number
  private readonly buckets: Bucket[]
  private readonly readyQueue: number[] = []
  private readyHead = 0
  private readonly ev = new Events<Ev>()
  private readonly commitQueue: Commit[] = []
  private commitHead = 0
  private readonly servers: Server[]
  /** folded: the last snapshot, when and by which committer (a round after another's reads its delta first) */
  private lastLand: { t: number; by: number } | null = null
  private lostRaces = 0
  /** commit messages sent so far: a committer whose round saw some arrive keeps collecting */
  private arrivals = 0
  private readonly costs: CommitCosts
  // a compactor invocation compacts up to `lanes` buckets at once (process-jobs'
  // bucketsAtOnce): its work is the fitted per-bucket cost one bucket after another (the fit
  // is of whole invocations, so the overlap of the lanes' work is in it), while the lanes'
  // waits for their commits overlap. A slot can start work when it is not working and fewer
  // than `lanes` of its buckets wait for their commits.
  private readonly lanes: number
  private readonly slotState: { working: boolean; waiting: number }[]
  private readonly available: number[]
  private readonly end: number
  private readonly lags: { t: number; lag: number }[] = []
  private compactions = 0
  private snapshots = 0
  private folded = 0
  private peakL0 = 0
  private lastT = 0
  private readonly times: BusyTimes = { commitBusy: 0, slotsFull: 0, slotWait: 0, slotWork: 0 }
  // buckets waiting for their commit (and receipt), and slots working
  private waitingBuckets = 0
  private workingSlots = 0
  /** slots working or with a bucket waiting for its commit */
  private occupiedSlots = 0
  private readonly usage: SimUsage = { writerCommits: 0, bucketsTouched: 0, compactions: 0, jobsCompacted: 0, filesCompacted: 0, compactorBusySeconds: 0, snapshots: 0, committerInvocations: 0, committerBusySeconds: 0, jobsQueuedStart: 0, jobsQueuedEnd: 0 }

  constructor(
    private readonly cal: SimCalibration,
    private readonly opts: SimOptions,
    private readonly path: SimPath,
    private readonly taskThreads: number,
  ) {
    this.random = seededRandom(opts.seed)
    const slots = taskThreads === -1 ? Math.min(opts.buckets, opts.lambdaConcurrency) : Math.min(taskThreads, opts.lambdaConcurrency)
    this.slots = slots
    this.buckets = Array.from({ length: opts.buckets }, () => ({ l0: [], jobs: 0, busy: false, ready: false }))
    // direct: one server (snapshots one after another, at the measured rate); folded: the committers
    this.servers = Array.from({ length: path === 'folded' ? Math.max(1, cal.committers ?? 2) : 1 }, () => ({ busy: false, ready: true, fresh: true, startedAt: 0, arrivalsAtStart: 0 }))
    this.costs = commitCosts(cal)
    this.lanes = Math.max(1, cal.bucketsAtOnce ?? 1)
    this.slotState = Array.from({ length: slots }, () => ({ working: false, waiting: 0 }))
    this.available = Array.from({ length: slots }, (_, i) => slots - 1 - i)
    this.end = opts.warmupSeconds + opts.seconds
  }

  run(): void {
    const ev = this.ev
    ev.push(0, { e: 'writer' })
    ev.push(this.opts.warmupSeconds, { e: 'sample' })
    while (ev.size) {
      const { t, v } = ev.pop()
      if (t > this.end) break
      if (t >= this.opts.warmupSeconds) this.accountTime(t)
      this.lastT = t
      if (v.e === 'writer') this.onWriter(t)
      else if (v.e === 'compacted') this.onCompacted(t, v)
      else if (v.e === 'committed') this.onCommitted(t, v)
      else if (v.e === 'serverReady') {
        this.servers[v.server].ready = true
        this.startCommit(t)
      } else if (v.e === 'released') this.release(t, v.bucket, v.slot)
      else this.sample(t)
    }
  }

  /** Adds the time since the last event to whatever was busy meanwhile. */
  private accountTime(t: number): void {
    const dt = t - this.lastT
    // a committer between invocations (the poller's delete and receive) is not free either
    this.times.commitBusy += (dt * this.servers.filter((x) => x.busy || !x.ready).length) / this.servers.length
    if (this.available.length === 0) this.times.slotsFull += dt
    this.times.slotWait += this.waitingBuckets * dt
    this.times.slotWork += this.workingSlots * dt
    this.usage.compactorBusySeconds += this.occupiedSlots * dt
  }

  private markReady(b: number): void {
    const bk = this.buckets[b]
    if (bk.jobs > 0 && !bk.busy && !bk.ready) {
      bk.ready = true
      this.readyQueue.push(b)
    }
  }

  private startCompactions(t: number): void {
    while (this.available.length > 0 && this.readyHead < this.readyQueue.length) {
      const b = this.readyQueue[this.readyHead++]
      const bk = this.buckets[b]
      bk.ready = false
      const taken = Math.min(10, bk.jobs)
      bk.jobs -= taken
      bk.busy = true
      const slot = this.available.pop()!
      if (this.slotState[slot].waiting === 0) this.occupiedSlots++
      this.slotState[slot].working = true
      this.workingSlots++
      const ms = (this.cal.perBucketMs + this.cal.perJobMs * taken) * (0.8 + 0.4 * this.random())
      this.ev.push(t + ms / 1000, { e: 'compacted', bucket: b, takenUpTo: bk.l0.length, slot, jobs: taken })
    }
    if (this.readyHead > 4096 && this.readyHead * 2 > this.readyQueue.length) {
      this.readyQueue.splice(0, this.readyHead)
      this.readyHead = 0
    }
  }

  private waiting(): number {
    return this.commitQueue.length - this.commitHead
  }

  private take(n: number): Commit[] {
    const batch = this.commitQueue.slice(this.commitHead, this.commitHead + n)
    this.commitHead += n
    if (this.commitHead > 4096 && this.commitHead * 2 > this.commitQueue.length) {
      this.commitQueue.splice(0, this.commitHead)
      this.commitHead = 0
    }
    return batch
  }

  /** Starts a commit on each free server while commits wait, `first` (a committer continuing its rounds) before the others. */
  private startCommit(t: number, first?: number): void {
    const servers = this.servers
    const order = first === undefined ? servers.map((_, i) => i) : [first, ...servers.map((_, i) => i).filter((i) => i !== first)]
    for (const i of order) {
      if (this.waiting() === 0) break
      const server = servers[i]
      if (server.busy || !server.ready) continue
      server.busy = true
      let batch: Commit[]
      let seconds: number
      if (this.path === 'direct') {
        seconds = 1 / directRate(this.cal.directCurve, this.waiting())
        batch = this.take(1)
      } else {
        // every message waiting: the invoked batch and the drain beyond it, or what the last round collected
        batch = this.take(Math.min(this.costs.drainMax, this.waiting()))
        seconds = this.costs.roundS(batch.length, server.fresh, this.lastLand !== null && this.lastLand.by !== i)
        if (t >= this.opts.warmupSeconds) {
          this.usage.committerBusySeconds += seconds
          if (server.fresh) this.usage.committerInvocations++
        }
        server.fresh = false
        server.startedAt = t
        server.arrivalsAtStart = this.arrivals
      }
      this.ev.push(t + seconds, { e: 'committed', batch, server: i })
    }
  }

  private release(t: number, bucket: number, slot: number): void {
    const bk = this.buckets[bucket]
    bk.busy = false
    const st = this.slotState[slot]
    st.waiting--
    this.waitingBuckets--
    if (!st.working && st.waiting === 0) this.occupiedSlots--
    if (!st.working && st.waiting === this.lanes - 1) this.available.push(slot)
    this.markReady(bucket)
    this.startCompactions(t)
  }

  private onWriter(t: number): void {
    const touched: number[] = []
    for (let b = 0; b < this.opts.buckets; b++) if (this.random() < this.cal.touchProbability) touched.push(b)
    this.commitQueue.push({ kind: 'writer', touched })
    if (t >= this.opts.warmupSeconds) {
      this.usage.writerCommits++
      this.usage.bucketsTouched += touched.length
    }
    this.arrivals++
    this.startCommit(t)
    this.ev.push(t + 1 / this.cal.writerCommitsPerSecond, { e: 'writer' })
  }

  private onCompacted(t: number, v: { bucket: number; takenUpTo: number; slot: number; jobs: number }): void {
    if (t >= this.opts.warmupSeconds) {
      this.usage.compactions++
      this.usage.jobsCompacted += v.jobs
      this.usage.filesCompacted += v.takenUpTo
    }
    const st = this.slotState[v.slot]
    st.working = false
    this.workingSlots--
    st.waiting++
    this.waitingBuckets++
    if (st.waiting < this.lanes) this.available.push(v.slot)
    this.commitQueue.push({ kind: 'compact', bucket: v.bucket, takenUpTo: v.takenUpTo, slot: v.slot })
    this.arrivals++
    this.startCommit(t)
    this.startCompactions(t)
  }

  private onCommitted(t: number, v: Extract<Ev, { e: 'committed' }>): void {
    const server = this.servers[v.server]
    const lastLand = this.lastLand
    if (this.path === 'folded' && this.cal.lostRaceMs !== undefined && lastLand !== null && lastLand.by !== v.server && lastLand.t > server.startedAt) {
      // the other committer took snapshot-N while this round folded: it tries again on top of that one
      this.lostRaces++
      if (t >= this.opts.warmupSeconds) this.usage.committerBusySeconds += this.cal.lostRaceMs / 1000
      server.startedAt = t
      this.ev.push(t + this.cal.lostRaceMs / 1000, v)
      return
    }
    if (this.path === 'folded') this.lastLand = { t, by: v.server }
    server.busy = false
    this.snapshots++
    if (t >= this.opts.warmupSeconds) this.usage.snapshots++
    this.folded += v.batch.length
    for (const c of v.batch) this.land(t, c, v.batch.length)
    // with rounds, a committer that finds messages waiting folds them at once, and one that
    // saw messages arrive during its round stays in its invocation (its receives got some of
    // them; the model lets whichever committer is free first take what waits); otherwise
    // its invocation ends: the poller's delete and next receive, then a first round
    if (this.path === 'folded' && !(this.costs.rounds && (this.waiting() > 0 || this.arrivals > server.arrivalsAtStart))) {
      server.fresh = true
      if (this.costs.overheadS > 0) {
        server.ready = false
        this.ev.push(t + this.costs.overheadS, { e: 'serverReady', server: v.server })
      }
    }
    this.startCommit(t, v.server)
    this.startCompactions(t)
  }

  /** One commit of a snapshot that landed at `t` with `k` commits in it. */
  private land(t: number, c: Commit, k: number): void {
    if (c.kind === 'writer') {
      for (const b of c.touched) {
        const bk = this.buckets[b]
        bk.l0.push(t)
        this.peakL0 = Math.max(this.peakL0, bk.l0.length)
        bk.jobs++
        this.markReady(b)
      }
      return
    }
    this.buckets[c.bucket].l0.splice(0, c.takenUpTo)
    this.compactions++
    // the compactor returns once its probe has found the snapshot (older calibrations:
    // once its receipt is written and read); direct: at once
    const toRelease = this.costs.receiptsS(k) + this.costs.receiptWaitS
    if (this.path === 'folded' && toRelease > 0) this.ev.push(t + toRelease, { e: 'released', bucket: c.bucket, slot: c.slot })
    else this.release(t, c.bucket, c.slot)
  }

  private sample(t: number): void {
    if (this.lags.length === 0) this.usage.jobsQueuedStart = this.jobsQueued()
    let oldest = Infinity
    for (const bk of this.buckets) if (bk.l0.length && bk.l0[0] < oldest) oldest = bk.l0[0]
    this.lags.push({ t, lag: oldest === Infinity ? 0 : t - oldest })
    this.ev.push(t + 1, { e: 'sample' })
  }

  private jobsQueued(): number {
    return this.buckets.reduce((n, bk) => n + bk.jobs, 0)
  }

  point(): SimPoint {
    const { path, lags, end, times } = this
    const measured = this.opts.seconds
    const values = lags.map((l) => l.lag)
    const mid = lags[Math.floor(lags.length / 2)]
    const last = lags[lags.length - 1]
    const commitUtilization = times.commitBusy / measured
    const slotUtilization = times.slotsFull / measured
    const growth = last && mid && last.t > mid.t ? (last.lag - mid.lag) / (last.t - mid.t) : 0
    return {
      path,
      taskThreads: this.taskThreads,
      slots: this.slots,
      lagP50S: pct(values, 50),
      lagP99S: pct(values, 99),
      lagMaxS: Math.max(0, ...values),
      lagGrowthPerS: growth,
      compactionsPerSecond: this.compactions / end,
      snapshotsPerSecond: this.snapshots / end,
      commitUtilization,
      messagesPerFold: path === 'folded' ? this.folded / Math.max(1, this.snapshots) : undefined,
      lostRacesPerSnapshot: path === 'folded' && this.cal.lostRaceMs !== undefined ? this.lostRaces / Math.max(1, this.snapshots) : undefined,
      slotUtilization,
      // a folded commit path is busy much of the time once loaded, yet each snapshot then
      // carries more, so it limits only when the slots are not the limit; a direct one limits
      // once saturated
      slotCommitWaitShare: times.slotWait + times.slotWork > 0 ? times.slotWait / (times.slotWait + times.slotWork) : 0,
      bottleneck: bottleneck(path, commitUtilization, slotUtilization, times),
      peakL0PerBucket: this.peakL0,
      usage: { ...this.usage, jobsQueuedEnd: this.jobsQueued() },
    }
  }
}

// slots that are all taken mostly by compactions waiting for their commits are the
// commit path's limit, not compaction's
function bottleneck(path: SimPath, commitUtilization: number, slotUtilization: number, times: BusyTimes): SimPoint['bottleneck'] {
  if (path === 'direct') return commitUtilization > 0.95 ? 'commit path' : slotUtilization > 0.95 ? 'compaction' : 'neither'
  if (slotUtilization > 0.95) return times.slotWait > times.slotWork ? 'commit path' : 'compaction'
  return commitUtilization > 0.95 ? 'commit path' : 'neither'
}

export const SIM_TASK_THREADS = [1, 2, 3, 4, 8, 16, -1]

export interface SimulationResult {
  calibration: SimCalibration
  options: SimOptions
  points: SimPoint[]
  /** the issue's targets for the folded (deployed) path, when the run knew one bucket's compaction time */
  targets?: SimTargets
  /** calibration caveats (fallbacks for results that lack the figures) */
  notes?: string[]
}

/**
 * The issue's targets for the deployed (folded) path: lag p50 never increases as
 * task-threads grows from 1 to -1; at -1 lag p99 is at most twice one bucket's measured
 * compaction time.
 */
export interface SimTargets {
  /** task-threads in the order checked, with their lag p50 (s) */
  p50s: { taskThreads: number; lagP50S: number }[]
  p50NeverIncreases: boolean
  /** the first step where it rose, if any */
  firstIncrease?: { from: number; to: number }
  /** one bucket's measured compaction time (s) and where it came from */
  bucketCompactionS: number
  bucketCompactionSource: string
  p99AtNoCapS: number
  p99WithinTwice: boolean
  met: boolean
}

export function runSimulation(cal: SimCalibration, opts: SimOptions, taskThreads = SIM_TASK_THREADS, bucketCompaction?: { ms: number; source: string }): SimulationResult {
  const points: SimPoint[] = []
  for (const path of ['direct', 'folded'] as SimPath[]) for (const k of taskThreads) points.push(simulate(cal, opts, path, k))
  const r: SimulationResult = { calibration: cal, options: opts, points }
  if (bucketCompaction && Number.isFinite(bucketCompaction.ms)) r.targets = simTargets(r, bucketCompaction.ms / 1000, bucketCompaction.source)
  return r
}

export function simTargets(r: SimulationResult, bucketCompactionS: number, source: string): SimTargets {
  // 1 … N ascending, then -1 (no cap) last
  const folded = r.points.filter((p) => p.path === 'folded').sort((a, b) => (a.taskThreads === -1 ? Infinity : a.taskThreads) - (b.taskThreads === -1 ? Infinity : b.taskThreads))
  let firstIncrease: SimTargets['firstIncrease']
  for (let i = 1; i < folded.length && !firstIncrease; i++) if (folded[i].lagP50S > folded[i - 1].lagP50S) firstIncrease = { from: folded[i - 1].taskThreads, to: folded[i].taskThreads }
  const noCap = folded.find((p) => p.taskThreads === -1)
  const p99 = noCap?.lagP99S ?? NaN
  const within = p99 <= 2 * bucketCompactionS
  return {
    p50s: folded.map((p) => ({ taskThreads: p.taskThreads, lagP50S: p.lagP50S })),
    p50NeverIncreases: !firstIncrease,
    firstIncrease,
    bucketCompactionS,
    bucketCompactionSource: source,
    p99AtNoCapS: p99,
    p99WithinTwice: within,
    met: !firstIncrease && within,
  }
}

const fmtLag = (s: number) => (s >= 120 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`)

export function simulationMarkdown(r: SimulationResult): string {
  const table = markdownTable(
    ['commit path', 'task-threads', 'compactor slots', 'lag p50', 'lag p99', 'lag max', 'lag still growing (s per s)', 'compactions/s', 'snapshots/s', 'messages per snapshot', 'committer lost races per snapshot', 'commit path busy', 'all slots busy', 'slot time waiting for commits', 'bottleneck', 'peak L0 per bucket'],
    r.points.map((p) => [
      p.path,
      p.taskThreads === -1 ? '-1' : p.taskThreads,
      p.slots,
      fmtLag(p.lagP50S),
      fmtLag(p.lagP99S),
      fmtLag(p.lagMaxS),
      p.lagGrowthPerS > 0.05 ? p.lagGrowthPerS.toFixed(2) : 'no',
      p.compactionsPerSecond.toFixed(1),
      p.snapshotsPerSecond.toFixed(1),
      p.messagesPerFold === undefined ? '-' : p.messagesPerFold.toFixed(1),
      p.lostRacesPerSnapshot === undefined ? '-' : p.lostRacesPerSnapshot.toFixed(2),
      `${Math.round(100 * p.commitUtilization)}%`,
      `${Math.round(100 * p.slotUtilization)}%`,
      p.slotCommitWaitShare === undefined ? '-' : `${Math.round(100 * p.slotCommitWaitShare)}%`,
      p.bottleneck,
      p.peakL0PerBucket,
    ]),
  )
  const t = r.targets
  if (!t) return table
  const inc = t.firstIncrease ? `no: it rises from task-threads ${t.firstIncrease.from} to ${t.firstIncrease.to === -1 ? '-1' : t.firstIncrease.to}` : 'yes'
  return [
    table,
    '',
    `Targets (folded, the deployed path): lag p50 never increases from task-threads 1 to -1 (${t.p50s.map((p) => `${p.taskThreads}: ${fmtLag(p.lagP50S)}`).join(', ')}): **${inc}**; at -1 lag p99 ${fmtLag(t.p99AtNoCapS)} ≤ 2 × one bucket's compaction (${fmtLag(t.bucketCompactionS)}, ${t.bucketCompactionSource}) = ${fmtLag(2 * t.bucketCompactionS)}: **${t.p99WithinTwice ? 'yes' : 'no'}**.`,
  ].join('\n')
}
