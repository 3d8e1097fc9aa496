// Beyond this machine: a discrete-event model of one deletion-vector table with 1,024
// buckets on Lambda, calibrated with costs measured in the same benchmark run, deterministic
// for a seed.
//
// The model:
// - Writers: one writer commit every 1/writerCommitsPerSecond s; each touches a bucket with
//   probability touchProbability (both from the freshness run), adding an L0 file there
//   when it lands and enqueuing one compaction job (FIFO, one message group per bucket).
// - Compactors: `slots` concurrent invocations (task-threads; -1 = one per active bucket,
//   capped by the account's Lambda concurrency). An invocation takes the oldest ready
//   group, at most 10 of its jobs (the FIFO batch), all of its L0 files, and runs for
//   perBucketMs + perJobMs·jobs (the freshness run's fit), ±20% seeded jitter; then it
//   commits. One bucket never has two jobs in flight (FIFO group).
// - The commit path: one table's snapshots are created one after another.
//   direct: every writer batch and every compaction commits its own snapshot; with n
//   commits waiting the path completes them at the rate the contention benchmark measured
//   for n concurrent committers (the curve, so lost races and backoff are in it); the
//   compactor holds its slot until its commit lands, as the Lambda function does.
//   folded: a batching committer takes every waiting commit into one snapshot costing
//   foldBaseMs + foldPerCommitMs·k (the contention benchmark's folding prototype); a
//   compactor hands its commit over and frees its slot, the bucket stays busy until it lands.
// - Freshness lag, sampled each simulated second after a warm-up: the age of the oldest L0
//   file in any bucket, as tableStatus measures it. A setting that cannot keep up has a lag
//   that grows one second per second from the start (its p50 is then about the middle of
//   the simulated time); the "still growing" column says so.
// Not modelled: compaction commits cost more than appends (deletes, the index manifest is
// a full listing), cold starts, S3 throttling per prefix, SQS latency.

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
  foldBaseMs: number
  foldPerCommitMs: number
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
  /** share of time the commit path was busy */
  commitUtilization: number
  /** share of time all compactor slots were busy */
  slotUtilization: number
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

type Commit = { kind: 'writer'; touched: number[] } | { kind: 'compact'; bucket: number; takenUpTo: number }
type Ev = { e: 'writer' } | { e: 'compacted'; bucket: number; takenUpTo: number } | { e: 'committed'; batch: Commit[] } | { e: 'sample' }

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
  let commitBusy = false
  let freeSlots = slots
  const end = opts.warmupSeconds + opts.seconds
  const lags: { t: number; lag: number }[] = []
  let compactions = 0, snapshots = 0, commitBusyTime = 0, slotsFullTime = 0, lastT = 0, peakL0 = 0

  const markReady = (b: number) => {
    const bk = buckets[b]
    if (bk.jobs > 0 && !bk.busy && !bk.ready) {
      bk.ready = true
      readyQueue.push(b)
    }
  }
  const startCompactions = (t: number) => {
    while (freeSlots > 0 && readyHead < readyQueue.length) {
      const b = readyQueue[readyHead++]
      const bk = buckets[b]
      bk.ready = false
      const taken = Math.min(10, bk.jobs)
      bk.jobs -= taken
      bk.busy = true
      freeSlots--
      const ms = (cal.perBucketMs + cal.perJobMs * taken) * (0.8 + 0.4 * random())
      ev.push(t + ms / 1000, { e: 'compacted', bucket: b, takenUpTo: bk.l0.length })
    }
    if (readyHead > 4096 && readyHead * 2 > readyQueue.length) {
      readyQueue.splice(0, readyHead)
      readyHead = 0
    }
  }
  const startCommit = (t: number) => {
    if (commitBusy || commitQueue.length === 0) return
    commitBusy = true
    let batch: Commit[]
    let seconds: number
    if (path === 'direct') {
      seconds = 1 / directRate(cal.directCurve, commitQueue.length)
      batch = [commitQueue.shift()!]
    } else {
      batch = commitQueue.splice(0, commitQueue.length)
      seconds = (cal.foldBaseMs + cal.foldPerCommitMs * batch.length) / 1000
    }
    ev.push(t + seconds, { e: 'committed', batch })
  }

  ev.push(0, { e: 'writer' })
  ev.push(opts.warmupSeconds, { e: 'sample' })
  while (ev.size) {
    const { t, v } = ev.pop()
    if (t > end) break
    if (t >= opts.warmupSeconds) {
      if (commitBusy) commitBusyTime += t - lastT
      if (freeSlots === 0) slotsFullTime += t - lastT
    }
    lastT = t
    if (v.e === 'writer') {
      const touched: number[] = []
      for (let b = 0; b < opts.buckets; b++) if (random() < cal.touchProbability) touched.push(b)
      commitQueue.push({ kind: 'writer', touched })
      startCommit(t)
      ev.push(t + 1 / cal.writerCommitsPerSecond, { e: 'writer' })
    } else if (v.e === 'compacted') {
      commitQueue.push({ kind: 'compact', bucket: v.bucket, takenUpTo: v.takenUpTo })
      // a folded commit is handed over: the invocation ends now
      if (path === 'folded') freeSlots++
      startCommit(t)
      startCompactions(t)
    } else if (v.e === 'committed') {
      commitBusy = false
      snapshots++
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
          const bk = buckets[c.bucket]
          bk.l0.splice(0, c.takenUpTo)
          bk.busy = false
          compactions++
          if (path === 'direct') freeSlots++
          markReady(c.bucket)
        }
      }
      startCommit(t)
      startCompactions(t)
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
    slotUtilization,
    // a folded commit path is always busy once loaded, yet each snapshot then carries more,
    // so it limits only when the slots are not the limit; a direct one limits once saturated
    bottleneck:
      path === 'direct'
        ? commitUtilization > 0.95 ? 'commit path' : slotUtilization > 0.95 ? 'compaction' : 'neither'
        : slotUtilization > 0.95 ? 'compaction' : commitUtilization > 0.95 ? 'commit path' : 'neither',
    peakL0PerBucket: peakL0,
  }
}

export const SIM_TASK_THREADS = [1, 2, 3, 4, 8, 16, 32, 64, 128, 256, 512, 1000, -1]

export interface SimulationResult {
  calibration: SimCalibration
  options: SimOptions
  points: SimPoint[]
}

export function runSimulation(cal: SimCalibration, opts: SimOptions, taskThreads = SIM_TASK_THREADS): SimulationResult {
  const points: SimPoint[] = []
  for (const path of ['direct', 'folded'] as SimPath[]) for (const k of taskThreads) points.push(simulate(cal, opts, path, k))
  return { calibration: cal, options: opts, points }
}

const fmtLag = (s: number) => (s >= 120 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`)

export function simulationMarkdown(r: SimulationResult): string {
  return markdownTable(
    ['commit path', 'task-threads', 'compactor slots', 'lag p50', 'lag p99', 'lag max', 'lag still growing (s per s)', 'compactions/s', 'snapshots/s', 'commit path busy', 'all slots busy', 'bottleneck', 'peak L0 per bucket'],
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
      `${Math.round(100 * p.commitUtilization)}%`,
      `${Math.round(100 * p.slotUtilization)}%`,
      p.bottleneck,
      p.peakL0PerBucket,
    ]),
  )
}
