// The freshness budget (docs/design.md "Freshness budget") as the freshness benchmark and the
// demo report it: the stages of a row's path, each with the metric its function publishes,
// its floor (the dependent S3 round trips it needs at the modelled latency, the batching
// window, the senders' first poll pause) and what would shrink it; the collection of those
// metrics from invocation results (local/stage-probe.ts returns them beside the handler's
// answer) and from the sampling reader; their p50 and p99 per stage against the floor.

import type { SnapshotDiscovery } from '../lib/read/snapshot-discovery.ts'

export type StageKey = 'ingest' | 'writer' | 'queue' | 'slot' | 'read' | 'merge' | 'write' | 'commit' | 'discovery'

export interface StageSpec {
  key: StageKey
  label: string
  /** the CloudWatch metric that measures it (docs/operations.md "Metrics and alarms") */
  metric: string
  /** its floor: dependent S3 round trips, whether it waits the batching window, senders' first poll pauses */
  roundTrips: number
  window?: boolean
  pollPauses?: number
  /** what would shrink it when it is the largest */
  shrink: string
}

/** The stages in path order; the floor's counts are docs/design.md "Freshness budget"'s chains. */
export const FRESHNESS_STAGES: readonly StageSpec[] = [
  { key: 'ingest', label: 'ingest batch window', metric: 'IngestWait', roundTrips: 0, window: true, shrink: 'a shorter batching window (MaximumBatchingWindowInSeconds), at more writer commits per second' },
  { key: 'writer', label: 'writer flush + commit', metric: 'WriteCommitTime', roundTrips: 8, pollPauses: 1, shrink: 'fewer dependent requests before the data PUT, and a committer that folds sooner (its receive and lease)' },
  { key: 'queue', label: 'job queue wait', metric: 'JobQueueAge', roundTrips: 2, shrink: 'more compactors at once (compaction.task-threads), or cheaper compactions so each slot frees sooner' },
  { key: 'slot', label: 'compactor slot', metric: 'CompactionSlotWait', roundTrips: 0, shrink: 'fewer buckets per invocation waiting for one merge permit (a smaller batch, or more merges at once)' },
  { key: 'read', label: 'compaction read', metric: 'CompactionReadTime', roundTrips: 4, shrink: 'a warm handle that probes only snapshot-(N+1) and keeps the manifests it needs' },
  { key: 'merge', label: 'compaction merge', metric: 'CompactionMergeTime', roundTrips: 1, shrink: 'CPU: less decoding and encoding per row, or a CPU per compactor (as on Lambda)' },
  { key: 'write', label: 'compaction write', metric: 'CompactionWriteTime', roundTrips: 1, shrink: 'uploads that finish inside the merge (the index written with the data)' },
  { key: 'commit', label: 'compaction commit', metric: 'CompactionCommitTime', roundTrips: 4, pollPauses: 1, shrink: 'a committer that starts its fold at once (no idle receive), and a sender that sees the landing sooner' },
  { key: 'discovery', label: 'reader discovery', metric: 'SnapshotDiscoveryLag', roundTrips: 2, shrink: 'a reader that reads more often, or follows the commit feed' },
]

export const STAGE_METRICS: ReadonlySet<string> = new Set([...FRESHNESS_STAGES.map((s) => s.metric), 'CompactedL0Age'])

/** The latency model the floor is computed at. */
export interface FloorModel {
  /** S3 first-byte latency per request, ms */
  firstByteMs: number
  /** the writer event source's batching window, ms */
  batchingWindowMs: number
  /** the queued committer's first pause before it polls for its landing, ms (QueuedCommitter: 20) */
  firstPollMs: number
}

export const FIRST_POLL_MS = 20

export function stageFloorMs(s: StageSpec, m: FloorModel): number {
  return s.roundTrips * m.firstByteMs + (s.window ? m.batchingWindowMs : 0) + (s.pollPauses ?? 0) * m.firstPollMs
}

/** Stage metric values, by metric name. */
export class StageSamples {
  readonly values = new Map<string, number[]>()

  add(name: string, value: number): void {
    if (!STAGE_METRICS.has(name) || !Number.isFinite(value)) return
    const xs = this.values.get(name)
    if (xs) xs.push(value)
    else this.values.set(name, [value])
  }

  /** The `stageMetrics` an invocation result carries (local/stage-probe.ts), if any. */
  addResult(value: unknown): void {
    const ms = (value as { stageMetrics?: [string, number][] } | null)?.stageMetrics
    if (Array.isArray(ms)) for (const [name, v] of ms) this.add(name, v)
  }

  of(name: string): number[] {
    return this.values.get(name) ?? []
  }
}

/**
 * The sampling reader's discovery: a status read that started at `startedAt` found
 * `snapshotId`; adds SnapshotDiscoveryLag when the snapshot was new to it.
 */
export async function noteDiscovery(samples: StageSamples, discovery: SnapshotDiscovery, snapshotId: number | undefined, startedAt: number, snapshots: { snapshot(id: number): Promise<{ timeMillis: number } | null> }): Promise<void> {
  if (snapshotId === undefined) return
  const lag = await discovery.observe(snapshotId, startedAt, async (id) => (await snapshots.snapshot(id))?.timeMillis ?? null)
  if (lag !== null) samples.add('SnapshotDiscoveryLag', lag)
}

export interface StageFigure {
  key: StageKey
  label: string
  metric: string
  n: number
  p50Ms: number
  p99Ms: number
  floorMs: number
}

export interface Budget {
  stages: StageFigure[]
  /** Σ of the stages' p50 and their floors */
  sumP50Ms: number
  floorMs: number
  /** CompactedL0Age p50 / p99: a level-0 file's creation → the compaction that lifted it landed */
  l0AgeP50Ms: number | null
  l0AgeP99Ms: number | null
  /** the stage with the largest p50 */
  largest: StageKey
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return 0
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]
}

export function budgetOf(samples: StageSamples, model: FloorModel): Budget {
  const stages = FRESHNESS_STAGES.map((s) => {
    const xs = samples.of(s.metric)
    return { key: s.key, label: s.label, metric: s.metric, n: xs.length, p50Ms: pct(xs, 50), p99Ms: pct(xs, 99), floorMs: stageFloorMs(s, model) }
  })
  const l0 = samples.of('CompactedL0Age')
  const largest = stages.reduce((a, b) => (b.p50Ms > a.p50Ms ? b : a)).key
  return {
    stages,
    sumP50Ms: stages.reduce((n, s) => n + s.p50Ms, 0),
    floorMs: stages.reduce((n, s) => n + s.floorMs, 0),
    l0AgeP50Ms: l0.length ? pct(l0, 50) : null,
    l0AgeP99Ms: l0.length ? pct(l0, 99) : null,
    largest,
  }
}

const ms = (x: number) => x.toFixed(0)

/** One table: a row per stage, a column pair (p50 / p99) per run, and the floor. */
export function budgetMarkdown(runs: { label: string; budget: Budget }[]): string {
  const head = ['stage', 'metric', ...runs.map((r) => `${r.label}: p50 / p99 (ms)`), 'floor (ms)']
  const lines = [`| ${head.join(' | ')} |`, `| ${head.map(() => '---').join(' | ')} |`]
  FRESHNESS_STAGES.forEach((s, i) => {
    const cells = runs.map((r) => {
      const f = r.budget.stages[i]
      return f.n ? `${ms(f.p50Ms)} / ${ms(f.p99Ms)}` : '-'
    })
    lines.push(`| ${s.label} | \`${s.metric}\` | ${cells.join(' | ')} | ${ms(runs[0]?.budget.stages[i].floorMs ?? 0)} |`)
  })
  lines.push(`| **sum of the stages** | | ${runs.map((r) => `**${ms(r.budget.sumP50Ms)}** (p50s)`).join(' | ')} | **${ms(runs[0]?.budget.floorMs ?? 0)}** |`)
  lines.push(`| level-0 file written → lifted | \`CompactedL0Age\` | ${runs.map((r) => (r.budget.l0AgeP50Ms === null ? '-' : `${ms(r.budget.l0AgeP50Ms)} / ${ms(r.budget.l0AgeP99Ms!)}`)).join(' | ')} | |`)
  return lines.join('\n')
}

/** The largest stage of a run, and what would shrink it. */
export function largestStage(b: Budget): string {
  const s = FRESHNESS_STAGES.find((x) => x.key === b.largest)!
  const f = b.stages.find((x) => x.key === b.largest)!
  return `the largest stage is ${s.label} (p50 ${ms(f.p50Ms)} ms against a floor of ${ms(f.floorMs)} ms); what would shrink it: ${s.shrink}`
}
