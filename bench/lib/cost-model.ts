// The cost model behind bench/cost-sim.ts: unit costs calibrated from measured windows (the
// cost benchmark's runs, bench/cost.ts, and anchors, bench/lib/cost-anchor.ts), multiplied by
// what the discrete-event model (bench/simulate.ts) counts, into the usage that
// bench/lib/cost-bill.ts prices.
//
// Every billed request of a measured window is put down to one driver, the quantity it grows
// with; a driver's unit cost is the window's requests of that class over the window's driver
// quantity, pooled over the windows calibrated from:
// - writer: its S3 data PUTs (one level-0 file per bucket touched) and its SQS sends (the
//   compaction jobs, one per bucket touched, and the commit message, whose chunks grow with
//   the files it lists) per bucket touched; its other requests (markers, metadata reads) per
//   invocation; its event source's receives and deletes per row (empty receives are the idle
//   floor, which bill() adds);
// - compactor: data GETs per file read (the level-0 files it takes and the base file); the
//   rest per bucket compacted (its data PUTs count them); its event source per invocation;
// - committer: everything per snapshot (a round writes the snapshot and its LATEST hint,
//   so a window's snapshots are the committer's snapshot-directory PUTs ÷ 2); its event
//   source per invocation;
// - maintenance: per second, as measured (one pass every 15 min, one orphan pass every 6 h).
// A window whose compactors fell far behind its writers (`behind`) calibrates the writers'
// side only.

import type { RequestCount } from '../../local/request-counts.ts'
import type { SimUsage } from '../simulate.ts'
import type { MeasuredWindow } from './cost-anchor.ts'
import { type CostUsage, type FunctionName, type FunctionUsage, FUNCTIONS } from './cost-bill.ts'
import { type Component, type RequestTally, COMPONENTS, componentOf, emptyTally, s3ClassOf } from './cost-count.ts'

export const DRIVERS = ['writerInvocation', 'bucketTouched', 'row', 'compaction', 'fileRead', 'compactorInvocation', 'snapshot', 'committerInvocation'] as const
export type Driver = (typeof DRIVERS)[number]

/** The quantity a billed request grows with; null: not billed to the deployment (the producer, setup, maintenance, which is priced per second). */
export function driverOf(component: Component | null, c: RequestCount): Driver | null {
  switch (component) {
    case 'writer':
      return (c.service === 's3' && c.kind === 'data') || c.service === 'sqs' ? 'bucketTouched' : 'writerInvocation'
    case 'esm-writer':
      return 'row'
    case 'compactor':
      return c.service === 's3' && c.kind === 'data' && s3ClassOf(c.operation) === 'tier2' ? 'fileRead' : 'compaction'
    case 'esm-compactor':
      return 'compactorInvocation'
    case 'committer':
      return 'snapshot'
    case 'esm-committer':
      return 'committerInvocation'
    default:
      return null
  }
}

/** A cell added to a tally as bill() reads it: empty receives left out (the idle floor stands for them). */
function addBilled(t: RequestTally, c: RequestCount, scale = 1): void {
  if (c.service === 's3') {
    const k = s3ClassOf(c.operation)
    if (k === 'tier1') t.s3Tier1 += c.requests * scale
    else if (k === 'tier2') t.s3Tier2 += c.requests * scale
    else t.s3Free += c.requests * scale
  } else if (c.service === 'sqs') {
    t.sqsRequests += (c.requests - c.empty) * scale
    const chunks = (c.chunks - c.empty) * scale
    if (c.resource.endsWith('.fifo')) t.sqsFifoChunks += chunks
    else t.sqsStandardChunks += chunks
  } else t.other += c.requests * scale
}

const sumOf = (counts: RequestCount[], f: (c: RequestCount) => boolean) => counts.filter(f).reduce((n, c) => n + c.requests, 0)

/** A measured window's driver quantities. */
export function measuredDrivers(w: MeasuredWindow): Record<Driver, number> {
  const by = (comp: Component, kind: string, op: string) => sumOf(w.counts, (c) => componentOf(c.caller) === comp && c.service === 's3' && c.kind === kind && c.operation === op)
  const compactions = by('compactor', 'data', 'PutObject')
  // each writer invocation sends one commit message: counted on the requests' clock, unlike the invocations that started in the window
  const commitSends = sumOf(w.counts, (c) => componentOf(c.caller) === 'writer' && c.operation === 'SendMessage' && c.resource.includes('commit'))
  return {
    writerInvocation: commitSends || w.functions.writer.invocations,
    bucketTouched: by('writer', 'data', 'PutObject'),
    row: w.rowsWritten,
    compaction: compactions,
    // the level-0 files written are the files compacted, in steady state, and one base file each
    fileRead: by('writer', 'data', 'PutObject') + compactions,
    compactorInvocation: w.functions.compactor.invocations,
    snapshot: by('committer', 'snapshot', 'PutObject') / 2,
    committerInvocation: w.functions.committer.invocations,
  }
}

/** Expected distinct buckets a batch of `rows` uniformly hashed keys touches. */
export function bucketsTouched(buckets: number, rows: number): number {
  return buckets * (1 - (1 - 1 / buckets) ** rows)
}

export interface UnitCosts {
  /** requests per unit of each driver, by component */
  perUnit: Record<Driver, Partial<Record<Component, RequestTally>>>
  /** writer ms per invocation = base + per bucket touched (least squares over the windows' means) */
  writerMs: { base: number; perBucket: number }
  compactorInvocationsPerCompaction: number
  committerMsPerSnapshot: number
  /** maintenance per second of the table's life, its requests and function usage */
  maintenance: { perSecond: RequestTally; invocationsPerSecond: number; msPerSecond: number }
  /** bytes the writers PUT per row; the table's bytes (a compaction rewrites one bucket's share) */
  writerBytesPerRow: number
  tableBytes: number
  /** the windows calibrated from: buckets, rows/s written, task-threads */
  from: { buckets: number; rowsPerSecond: number; taskThreads: number }[]
}

/** The drivers of the writer's side. */
const WRITER_DRIVERS: readonly Driver[] = ['writerInvocation', 'bucketTouched', 'row']

/**
 * A window whose compactors fell far behind its writers (fewer bucket compactions than 5% of
 * the buckets its writers touched: an anchor on a machine too small for its buckets) is no
 * steady state for the compactor and the committer: it calibrates the writers' side only.
 */
export function behind(w: MeasuredWindow): boolean {
  const q = measuredDrivers(w)
  return q.compaction < 0.05 * q.bucketTouched
}

/** Least squares y = a + b·x; b = 0 when the xs do not vary; through the origin when the intercept comes out negative. */
export function fitLine(xs: number[], ys: number[]): { a: number; b: number } {
  const n = xs.length
  const mx = xs.reduce((s, x) => s + x, 0) / n
  const my = ys.reduce((s, y) => s + y, 0) / n
  const sxx = xs.reduce((s, x) => s + (x - mx) ** 2, 0)
  if (sxx < 1e-9 * Math.max(1, mx * mx)) return { a: my, b: 0 }
  const b = xs.reduce((s, x, i) => s + (x - mx) * (ys[i] - my), 0) / sxx
  if (my - b * mx >= 0) return { a: my - b * mx, b }
  return { a: 0, b: xs.reduce((s, x, i) => s + x * ys[i], 0) / xs.reduce((s, x) => s + x * x, 0) }
}

/** A Lambda function gets one vCPU at 1,769 MB (bench/cost.ts stretches CPU time by the same share). */
const FULL_VCPU_MB = 1769

/**
 * The writer's ms per invocation against the buckets its batch touches. With windows that
 * measured the writers' CPU time (the anchors), the slope is that CPU time per bucket touched
 * stretched to the writer's share of a vCPU, and the base what the other windows' invocations
 * lasted beyond it: an anchor's waits are those of a backend starved on a shared machine, not
 * of S3. Without, a least-squares line over the windows.
 */
function writerFit(windows: MeasuredWindow[], memoryMb = 1024): { a: number; b: number } {
  const usable = windows.filter((w) => w.functions.writer.invocations > 0)
  const touched = (w: MeasuredWindow) => bucketsTouched(w.buckets, w.functions.writer.records / w.functions.writer.invocations)
  const perInvocation = (w: MeasuredWindow) => w.functions.writer.estimatedMs / w.functions.writer.invocations
  const cpu = usable.filter((w) => (w.functions.writer.cpuMs ?? 0) > 0)
  if (cpu.length === 0) return fitLine(usable.map(touched), usable.map(perInvocation))
  const stretch = Math.max(1, FULL_VCPU_MB / memoryMb)
  const b = (cpu.reduce((n, w) => n + w.functions.writer.cpuMs!, 0) * stretch) / cpu.reduce((n, w) => n + w.functions.writer.invocations * touched(w), 0)
  const rest = usable.filter((w) => !cpu.includes(w))
  const a = rest.length ? rest.reduce((n, w) => n + Math.max(0, perInvocation(w) - b * touched(w)), 0) / rest.length : 0
  return { a, b }
}

/** Maintenance as a measured run priced it (already scaled to its schedules over the window). */
export interface MeasuredMaintenance {
  seconds: number
  requests: RequestTally
  usage: FunctionUsage
}

/** `allDrivers`: windows that are behind calibrate every driver too (to show what they measured). */
export function calibrate(windows: MeasuredWindow[], maintenance: MeasuredMaintenance[], allDrivers = false): UnitCosts {
  const perUnit = Object.fromEntries(DRIVERS.map((d) => [d, {}])) as UnitCosts['perUnit']
  const totals = Object.fromEntries(DRIVERS.map((d) => [d, 0])) as Record<Driver, number>
  for (const w of windows) {
    const q = measuredDrivers(w)
    const uses = (d: Driver) => allDrivers || !behind(w) || WRITER_DRIVERS.includes(d)
    for (const d of DRIVERS) if (uses(d)) totals[d] += q[d]
    for (const c of w.counts) {
      const comp = componentOf(c.caller)
      const d = driverOf(comp, c)
      if (d && comp && uses(d)) addBilled((perUnit[d][comp] ??= emptyTally()), c)
    }
  }
  for (const d of DRIVERS) for (const t of Object.values(perUnit[d])) for (const k of Object.keys(t) as (keyof RequestTally)[]) t[k] /= Math.max(1e-9, totals[d])
  const writerMs = writerFit(windows)
  const sum = (f: (w: MeasuredWindow) => number) => windows.reduce((n, w) => n + f(w), 0)
  const mSeconds = maintenance.reduce((n, m) => n + m.seconds, 0)
  const mPerSecond = emptyTally()
  for (const m of maintenance) for (const k of Object.keys(mPerSecond) as (keyof RequestTally)[]) mPerSecond[k] += m.requests[k] / mSeconds
  const writerPutBytes = sum((w) => w.counts.filter((c) => componentOf(c.caller) === 'writer' && c.service === 's3' && c.operation === 'PutObject').reduce((n, c) => n + c.requestBytes, 0))
  return {
    perUnit,
    writerMs: { base: writerMs.a, perBucket: writerMs.b },
    compactorInvocationsPerCompaction: totals.compactorInvocation / Math.max(1e-9, totals.compaction),
    committerMsPerSnapshot: sum((w) => w.functions.committer.estimatedMs) / Math.max(1e-9, totals.snapshot),
    maintenance: {
      perSecond: mPerSecond,
      invocationsPerSecond: maintenance.reduce((n, m) => n + m.usage.invocations, 0) / mSeconds,
      msPerSecond: maintenance.reduce((n, m) => n + m.usage.estimatedMs, 0) / mSeconds,
    },
    writerBytesPerRow: writerPutBytes / Math.max(1, sum((w) => w.rowsWritten)),
    tableBytes: sum((w) => w.tableBytes) / Math.max(1, windows.length),
    from: windows.map((w) => ({ buckets: w.buckets, rowsPerSecond: w.rowsWritten / w.seconds, taskThreads: w.taskThreads })),
  }
}

/** What one simulated setting is, beside the model's counts. */
export interface ModelSetting {
  buckets: number
  seconds: number
  rowsPerInvocation: number
  /** concurrent committer invocations at most (the committer mapping's maxConcurrency) */
  committers: number
  memoryMb: Record<FunctionName, number>
  cloudwatch: { metrics: number; alarms: number; dashboards: number }
  logBytesPerInvocation: number
  retainedSeconds: number
}

/** The model's driver quantities for a simulated window. */
export function modelDrivers(s: SimUsage, rowsPerInvocation: number, u: UnitCosts): Record<Driver, number> {
  return {
    writerInvocation: s.writerCommits,
    bucketTouched: s.bucketsTouched,
    row: s.writerCommits * rowsPerInvocation,
    compaction: s.compactions,
    fileRead: s.filesCompacted + s.compactions,
    compactorInvocation: s.compactions * u.compactorInvocationsPerCompaction,
    snapshot: s.snapshots,
    committerInvocation: s.committerInvocations,
  }
}

/** The usage bill() prices: the unit costs times the model's counts. */
export function modelUsage(s: SimUsage, set: ModelSetting, u: UnitCosts): CostUsage {
  const q = modelDrivers(s, set.rowsPerInvocation, u)
  const requests = Object.fromEntries(COMPONENTS.map((c) => [c, emptyTally()])) as Record<Component, RequestTally>
  for (const d of DRIVERS) {
    for (const [comp, t] of Object.entries(u.perUnit[d]) as [Component, RequestTally][]) {
      for (const k of Object.keys(t) as (keyof RequestTally)[]) requests[comp][k] += t[k] * q[d]
    }
  }
  for (const k of Object.keys(requests.maintenance) as (keyof RequestTally)[]) requests.maintenance[k] += u.maintenance.perSecond[k] * set.seconds
  const perInvocationBuckets = s.writerCommits > 0 ? s.bucketsTouched / s.writerCommits : 0
  const ms: Record<FunctionName, number> = {
    writer: s.writerCommits * (u.writerMs.base + u.writerMs.perBucket * perInvocationBuckets),
    compactor: s.compactorBusySeconds * 1000,
    committer: Math.min(set.committers * set.seconds * 1000, s.snapshots * u.committerMsPerSnapshot),
    maintenance: u.maintenance.msPerSecond * set.seconds,
  }
  const invocations: Record<FunctionName, number> = {
    writer: q.writerInvocation,
    compactor: q.compactorInvocation,
    committer: q.committerInvocation,
    maintenance: u.maintenance.invocationsPerSecond * set.seconds,
  }
  const functions = Object.fromEntries(FUNCTIONS.map((f) => [f, { invocations: invocations[f], billedMs: ms[f], estimatedMs: ms[f], memoryMb: set.memoryMb[f] }])) as Record<FunctionName, FunctionUsage>
  // an hour of what the writers and the compactors PUT (a compaction rewrites its bucket's share of the table) beside the table
  const putBytesPerSecond = (q.row * u.writerBytesPerRow + q.compaction * (u.tableBytes / set.buckets)) / set.seconds
  return {
    seconds: set.seconds,
    upserts: q.row,
    functions,
    requests,
    idlePolling: { pollers: 5, waitSeconds: 20 },
    storedBytes: u.tableBytes + putBytesPerSecond * set.retainedSeconds,
    cloudwatch: set.cloudwatch,
    logBytes: Object.values(invocations).reduce((n, k) => n + k, 0) * set.logBytesPerInvocation,
  }
}
