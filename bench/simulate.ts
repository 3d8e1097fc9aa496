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
  | { e: 'compacted'; bucket: number; takenUpTo: number; slot: number }
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

export function simulate(cal: SimCalibration, opts: SimOptions, path: SimPath, taskThreads: number): SimPoint {
  const random = seededRandom(opts.seed)
  const slots = taskThreads === -1 ? Math.min(opts.buckets, opts.lambdaConcurrency) : Math.min(taskThreads, opts.lambdaConcurrency)
  const buckets: Bucket[] = Array.from({ length: opts.buckets }, () => ({ l0: [], jobs: 0, busy: false, ready: false }))
  const readyQueue: number[] = []
  let readyHead = 0
  const ev = new Events<Ev>()
  const commitQueue: Commit[] = []
  let commitHead = 0
  // direct: one server (snapshots one after another, at the measured rate); folded: the
  // committers, each `fresh` when its next round is an invocation's first
  const servers = Array.from({ length: path === 'folded' ? Math.max(1, cal.committers ?? 2) : 1 }, () => ({ busy: false, ready: true, fresh: true, startedAt: 0, arrivalsAtStart: 0 }))
  // folded: the last snapshot, when and by which committer (a round after another's reads its delta first)
  let lastLand: { t: number; by: number } | null = null
  let lostRaces = 0
  // commit messages sent so far: a committer whose round saw some arrive keeps collecting
  let arrivals = 0
  const drainMax = cal.drainMax ?? 1000
  const overheadS = (cal.committerOverheadMs ?? 0) / 1000
  const receiptWaitS = (cal.receiptWaitMs ?? 0) / 1000
  const perMessageReceipts = cal.receiptBaseMs !== undefined && cal.receiptPerCommitMs !== undefined
  const rounds = cal.rounds ?? perMessageReceipts
  // only older calibrations hold a sender for its round's receipts
  const receiptsS = (k: number) => (perMessageReceipts ? (cal.receiptBaseMs! + cal.receiptPerCommitMs! * k) / 1000 : 0)
  const roundS = (k: number, fresh: boolean, foreign: boolean) =>
    (rounds && fresh && cal.firstRoundBaseMs !== undefined
      ? cal.firstRoundBaseMs + (cal.firstRoundPerCommitMs ?? cal.foldPerCommitMs) * k
      : rounds && foreign && cal.foreignRoundBaseMs !== undefined
        ? cal.foreignRoundBaseMs + (cal.foreignRoundPerCommitMs ?? cal.foldPerCommitMs) * k
        : cal.foldBaseMs + cal.foldPerCommitMs * k) / 1000
  // a compactor invocation compacts up to `lanes` buckets at once (process-jobs'
  // bucketsAtOnce): its work is the fitted per-bucket cost one bucket after another (the fit
  // is of whole invocations, so the overlap of the lanes' work is in it), while the lanes'
  // waits for their commits overlap. A slot can start work when it is not working and fewer
  // than `lanes` of its buckets wait for their commits.
  const lanes = Math.max(1, cal.bucketsAtOnce ?? 1)
  const slotState = Array.from({ length: slots }, () => ({ working: false, waiting: 0 }))
  const available: number[] = Array.from({ length: slots }, (_, i) => slots - 1 - i)
  const end = opts.warmupSeconds + opts.seconds
  const lags: { t: number; lag: number }[] = []
  let compactions = 0, snapshots = 0, folded = 0, commitBusyTime = 0, slotsFullTime = 0, lastT = 0, peakL0 = 0
  // buckets waiting for their commit (and receipt) and slots working, and their time
  let waitingBuckets = 0, workingSlots = 0, slotWaitTime = 0, slotWorkTime = 0

  const markReady = (b: number) => {
    const bk = buckets[b]
    if (bk.jobs > 0 && !bk.busy && !bk.ready) {
      bk.ready = true
      readyQueue.push(b)
    }
  }
  const startCompactions = (t: number) => {
    while (available.length > 0 && readyHead < readyQueue.length) {
      const b = readyQueue[readyHead++]
      const bk = buckets[b]
      bk.ready = false
      const taken = Math.min(10, bk.jobs)
      bk.jobs -= taken
      bk.busy = true
      const slot = available.pop()!
      slotState[slot].working = true
      workingSlots++
      const ms = (cal.perBucketMs + cal.perJobMs * taken) * (0.8 + 0.4 * random())
      ev.push(t + ms / 1000, { e: 'compacted', bucket: b, takenUpTo: bk.l0.length, slot })
    }
    if (readyHead > 4096 && readyHead * 2 > readyQueue.length) {
      readyQueue.splice(0, readyHead)
      readyHead = 0
    }
  }
  const waiting = () => commitQueue.length - commitHead
  const take = (n: number): Commit[] => {
    const batch = commitQueue.slice(commitHead, commitHead + n)
    commitHead += n
    if (commitHead > 4096 && commitHead * 2 > commitQueue.length) {
      commitQueue.splice(0, commitHead)
      commitHead = 0
    }
    return batch
  }
  /** Starts a commit on each free server while commits wait, `first` (a committer continuing its rounds) before the others. */
  const startCommit = (t: number, first?: number) => {
    const order = first === undefined ? servers.map((_, i) => i) : [first, ...servers.map((_, i) => i).filter((i) => i !== first)]
    for (const i of order) {
      if (waiting() === 0) break
      const server = servers[i]
      if (server.busy || !server.ready) continue
      server.busy = true
      let batch: Commit[]
      let seconds: number
      if (path === 'direct') {
        seconds = 1 / directRate(cal.directCurve, waiting())
        batch = take(1)
      } else {
        // every message waiting: the invoked batch and the drain beyond it, or what the last round collected
        batch = take(Math.min(drainMax, waiting()))
        seconds = roundS(batch.length, server.fresh, lastLand !== null && lastLand.by !== i)
        server.fresh = false
        server.startedAt = t
        server.arrivalsAtStart = arrivals
      }
      ev.push(t + seconds, { e: 'committed', batch, server: i })
    }
  }
  const release = (t: number, bucket: number, slot: number) => {
    const bk = buckets[bucket]
    bk.busy = false
    const st = slotState[slot]
    st.waiting--
    waitingBuckets--
    if (!st.working && st.waiting === lanes - 1) available.push(slot)
    markReady(bucket)
    startCompactions(t)
  }

  ev.push(0, { e: 'writer' })
  ev.push(opts.warmupSeconds, { e: 'sample' })
  while (ev.size) {
    const { t, v } = ev.pop()
    if (t > end) break
    if (t >= opts.warmupSeconds) {
      // a committer between invocations (the poller's delete and receive) is not free either
      commitBusyTime += ((t - lastT) * servers.filter((x) => x.busy || !x.ready).length) / servers.length
      if (available.length === 0) slotsFullTime += t - lastT
      slotWaitTime += waitingBuckets * (t - lastT)
      slotWorkTime += workingSlots * (t - lastT)
    }
    lastT = t
    if (v.e === 'writer') {
      const touched: number[] = []
      for (let b = 0; b < opts.buckets; b++) if (random() < cal.touchProbability) touched.push(b)
      commitQueue.push({ kind: 'writer', touched })
      arrivals++
      startCommit(t)
      ev.push(t + 1 / cal.writerCommitsPerSecond, { e: 'writer' })
    } else if (v.e === 'compacted') {
      const st = slotState[v.slot]
      st.working = false
      workingSlots--
      st.waiting++
      waitingBuckets++
      if (st.waiting < lanes) available.push(v.slot)
      commitQueue.push({ kind: 'compact', bucket: v.bucket, takenUpTo: v.takenUpTo, slot: v.slot })
      arrivals++
      startCommit(t)
      startCompactions(t)
    } else if (v.e === 'committed') {
      const server = servers[v.server]
      if (path === 'folded' && cal.lostRaceMs !== undefined && lastLand !== null && lastLand.by !== v.server && lastLand.t > server.startedAt) {
        // the other committer took snapshot-N while this round folded: it tries again on top of that one
        lostRaces++
        server.startedAt = t
        ev.push(t + cal.lostRaceMs / 1000, v)
        continue
      }
      if (path === 'folded') lastLand = { t, by: v.server }
      server.busy = false
      snapshots++
      folded += v.batch.length
      for (const c of v.batch) {
        if (c.kind === 'writer') {
          for (const b of c.touched) {
            const bk = buckets[b]
            bk.l0.push(t)
            peakL0 = Math.max(peakL0, bk.l0.length)
            bk.jobs++
            markReady(b)
          }
        } else {
          buckets[c.bucket].l0.splice(0, c.takenUpTo)
          compactions++
          // the compactor returns once its probe has found the snapshot (older calibrations:
          // once its receipt is written and read); direct: at once
          const toRelease = receiptsS(v.batch.length) + receiptWaitS
          if (path === 'folded' && toRelease > 0) ev.push(t + toRelease, { e: 'released', bucket: c.bucket, slot: c.slot })
          else release(t, c.bucket, c.slot)
        }
      }
      // with rounds, a committer that finds messages waiting folds them at once, and one that
      // saw messages arrive during its round stays in its invocation (its receives got some of
      // them; the model lets whichever committer is free first take what waits); otherwise
      // its invocation ends: the poller's delete and next receive, then a first round
      if (path === 'folded' && !(rounds && (waiting() > 0 || arrivals > server.arrivalsAtStart))) {
        server.fresh = true
        if (overheadS > 0) {
          server.ready = false
          ev.push(t + overheadS, { e: 'serverReady', server: v.server })
        }
      }
      startCommit(t, v.server)
      startCompactions(t)
    } else if (v.e === 'serverReady') {
      servers[v.server].ready = true
      startCommit(t)
    } else if (v.e === 'released') {
      release(t, v.bucket, v.slot)
    } else {
      let oldest = Infinity
      for (const bk of buckets) if (bk.l0.length && bk.l0[0] < oldest) oldest = bk.l0[0]
      lags.push({ t, lag: oldest === Infinity ? 0 : t - oldest })
      ev.push(t + 1, { e: 'sample' })
    }
  }
  const measured = opts.seconds
  const values = lags.map((l) => l.lag)
  const mid = lags[Math.floor(lags.length / 2)]
  const last = lags[lags.length - 1]
  const commitUtilization = commitBusyTime / measured
  const slotUtilization = slotsFullTime / measured
  const growth = last && mid && last.t > mid.t ? (last.lag - mid.lag) / (last.t - mid.t) : 0
  return {
    path,
    taskThreads,
    slots,
    lagP50S: pct(values, 50),
    lagP99S: pct(values, 99),
    lagMaxS: Math.max(0, ...values),
    lagGrowthPerS: growth,
    compactionsPerSecond: compactions / end,
    snapshotsPerSecond: snapshots / end,
    commitUtilization,
    messagesPerFold: path === 'folded' ? folded / Math.max(1, snapshots) : undefined,
    lostRacesPerSnapshot: path === 'folded' && cal.lostRaceMs !== undefined ? lostRaces / Math.max(1, snapshots) : undefined,
    slotUtilization,
    // a folded commit path is busy much of the time once loaded, yet each snapshot then
    // carries more, so it limits only when the slots are not the limit; a direct one limits
    // once saturated
    slotCommitWaitShare: slotWaitTime + slotWorkTime > 0 ? slotWaitTime / (slotWaitTime + slotWorkTime) : 0,
    // slots that are all taken mostly by compactions waiting for their commits are the
    // commit path's limit, not compaction's
    bottleneck:
      path === 'direct'
        ? commitUtilization > 0.95 ? 'commit path' : slotUtilization > 0.95 ? 'compaction' : 'neither'
        : slotUtilization > 0.95
          ? slotWaitTime > slotWorkTime ? 'commit path' : 'compaction'
          : commitUtilization > 0.95 ? 'commit path' : 'neither',
    peakL0PerBucket: peakL0,
  }
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
