// The soak, as a function bench/soak.ts and test/soak.test.ts both run: the local runtime
// (embedded S3 + SQS, real writer, compactor and maintenance handlers in worker threads)
// under a steady write load while faults are injected one after another, then a drain and
// a check of everything that must hold.
//
// Tables (deletion vectors on, so a row is visible only once compaction lifted it out of L0):
// - orders: deduplicate engine ordered by `version` (sequence.field), upserts over a fixed key
//   space, plus probe rows (ids from PROBE_BASE, one per probe) whose visibility a reader of
//   the latest snapshot polls by point lookup: freshness lag = time from sending a probe to
//   the first latest snapshot that shows it. The final state must equal the model exactly.
// - totals: aggregation engine (sum of qty and of n = 1 per message), so a message applied
//   twice shows as an excess and a lost one as a shortfall. A message SQS redelivered inside
//   a different batch is the writer's known weak spot (docs/reliability.md); an excess that
//   such messages can explain is reported as that gap, anything else fails.
//
// Faults (local/runtime/soak-control.ts): writer throw / exit at a random S3 write / exit
// after commit before ack; compactor throw / exit at a random S3 write (mid-job) / exit
// after commit before ack; compactor restart (every compactor environment killed at once).
// One fault is armed at a time; the next comes a random 0.5–1.5 × `faultEverySeconds` after
// the previous one fired. With `events` (the test) the run goes by steps instead: faults
// are armed after so many invocations of their function, and the load goes on until every
// kind has struck and the work each fault undid was done again, whatever the clock says.
//
// Lag at a sample = max(age of the oldest probe not yet visible, age of the oldest L0 file
// of either table). A fault has recovered when, after the peak lag that followed it, the lag
// is back under the threshold within `recoverWithinSeconds`.
//
// Here: the run's phases (the runtime started, the actors, the drain, the checks, the result).
// The parts: soak-load.ts (load, model, probes), soak-faults.ts, soak-sampler.ts,
// soak-maintenance.ts, soak-invocations.ts (what the invocations reported), soak-checks.ts;
// their shared state is SoakShared (soak-types.ts).

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { tableStatus } from '../../lib/maintenance/table-status.ts'
import { S3Store } from '../../lib/store/s3-store.ts'
import { Table } from '../../lib/handle/table.ts'
import { ExecutionEnvironmentPool } from '../../local/runtime/execution-environment.ts'
import { type LocalRuntime, startLocalRuntime } from '../../local/runtime/local-runtime.ts'
import { SoakControl } from '../../local/runtime/soak-control.ts'
import { ORDERS_FIELDS, seededRandom } from './dataset.ts'
import { type LagVerdict, SoakChecks } from './soak-checks.ts'
import { FaultDriver } from './soak-faults.ts'
import { InvocationLog } from './soak-invocations.ts'
import { LoadModel, Sender, probeVisibility } from './soak-load.ts'
import { type MaintenanceStats, runMaintenance } from './soak-maintenance.ts'
import { memoryDetail, memoryVerdict } from './soak-memory.ts'
import { Sampler } from './soak-sampler.ts'
import { type Durations, type SoakOptions, type SoakResult, type SoakShared, type WindowStats, SOAK_DEFAULTS, pct, secondsSince, sleep } from './soak-types.ts'

export {
  type Check,
  type Durations,
  type EventDrive,
  FAULT_KINDS,
  type FaultKind,
  type FaultRecord,
  PROBE_BASE,
  type Sample,
  SOAK_DEFAULTS,
  type SoakOptions,
  type SoakResult,
  type WindowStats,
  replacesEnvironment,
} from './soak-types.ts'

const RUNTIME = join(import.meta.dirname, '..', '..', 'local', 'runtime')
const FUNCTIONS = join(import.meta.dirname, '..', '..', 'functions')
/** metadata cache of the soak's own long-lived readers, MiB, unless metadataCacheMb sets both */
const HARNESS_CACHE_MB = 4

function durationsOf(xs: number[]): Durations {
  const r = (v: number | null) => (v === null ? null : Math.round(v))
  return { p50: r(pct(xs, 50)), p99: r(pct(xs, 99)), max: xs.length ? Math.round(Math.max(...xs)) : null }
}

function ordersSchema(o: SoakOptions) {
  return {
    fields: ORDERS_FIELDS,
    primaryKeys: ['id'],
    partitionKeys: [],
    options: {
      bucket: String(o.buckets),
      'deletion-vectors.enabled': 'true',
      'compaction.task-threads': String(o.taskThreads),
      'sequence.field': 'version',
      ...retention(o),
    },
  }
}

function totalsSchema(o: SoakOptions) {
  return {
    fields: [
      { name: 'customer', type: 'STRING' },
      { name: 'qty', type: 'BIGINT' },
      { name: 'n', type: 'BIGINT' },
    ],
    primaryKeys: ['customer'],
    partitionKeys: [],
    options: {
      bucket: String(o.totalsBuckets),
      'deletion-vectors.enabled': 'true',
      'compaction.task-threads': String(Math.min(o.taskThreads, o.totalsBuckets)),
      'merge-engine': 'aggregation',
      'fields.qty.aggregate-function': 'sum',
      'fields.n.aggregate-function': 'sum',
      ...retention(o),
    },
  }
}

function retention(o: SoakOptions): Record<string, string> {
  // expiration must keep up with a commit every few hundred ms (Paimon's limit of 50 per
  // call would not at a 20 s schedule)
  return { 'snapshot.time-retained': `${o.snapshotRetainedSeconds} s`, 'snapshot.num-retained.min': '10', 'snapshot.expire.limit': '2000' }
}

/** The local runtime with the soak's handlers, reporting every invocation to `invocations`. */
function startSoakRuntime(o: SoakOptions, control: SoakControl, invocations: InvocationLog): Promise<LocalRuntime> {
  const tables: { name: string; schema: unknown }[] = [{ name: 'orders', schema: ordersSchema(o) }]
  if (o.totalsEvery > 0) tables.push({ name: 'totals', schema: totalsSchema(o) })
  return startLocalRuntime({
    tables,
    writerModule: join(RUNTIME, 'soak-writer.ts'),
    compactorModule: join(RUNTIME, 'soak-compactor.ts'),
    writerConcurrency: o.writerConcurrency,
    writerBatchingWindowMs: o.writerBatchingWindowMs,
    visibilityTimeoutSeconds: o.visibilityTimeoutSeconds,
    maxReceiveCount: o.maxReceiveCount,
    timeoutMs: o.timeoutMs,
    isolation: o.isolation,
    ...(o.backendInProcess
      ? { latency: o.s3LatencyMs > 0 ? { firstByteMs: o.s3LatencyMs, applies: (r: { url: string }) => r.url.startsWith('/strata-local/') } : undefined }
      : { backendProcess: { firstByteMs: o.s3LatencyMs, pathPrefix: '/strata-local/' } }),
    env: {
      ...control.env(),
      STRATA_DEDUP_WINDOW_MS: String(o.dedupWindowMs),
      ...(o.metadataCacheMb === undefined ? {} : { STRATA_METADATA_CACHE_MB: String(o.metadataCacheMb) }),
      ...(o.footerCacheMb === undefined ? {} : { STRATA_FOOTER_CACHE_MB: String(o.footerCacheMb) }),
    },
    onWriterInvocation: (info) => invocations.onWriter(info),
    onCompactorLog: (t, line) => invocations.onCompactorLog(t, line),
    onCompactorInvocation: (t, info) => invocations.onCompactor(t, info),
  })
}

/** Each table's maintenance function, one environment each, into `pools`. */
function addMaintenancePools(o: SoakOptions, rt: LocalRuntime, pools: Map<string, ExecutionEnvironmentPool>): void {
  for (const t of rt.tables.values()) {
    pools.set(
      t.name,
      new ExecutionEnvironmentPool({
        handlerModule: join(FUNCTIONS, 'maintenance.ts'),
        env: { ...rt.env, STRATA_TABLE: t.name, AWS_LAMBDA_FUNCTION_NAME: `strata-${t.name}-maintenance`, STRATA_ORPHAN_OLDER_THAN_MS: String(o.orphanOlderThanMs) },
        maxEnvironments: 1,
        timeoutMs: 300_000,
        isolation: o.isolation,
      }),
    )
  }
}

/** The soak's shared state once the runtime is up: its own readers opened, the load's clock started. */
async function sharedState(o: SoakOptions, rt: LocalRuntime, random: () => number, running: SoakShared['running']): Promise<SoakShared> {
  const orders = rt.tables.get('orders')!
  const totals = rt.tables.get('totals')
  // the soak's own readers (probes, status, compaction count) live as long as the soak: their
  // metadata caches are bounded like the functions' ones
  const readerOpen = { metadataCacheBytes: (o.metadataCacheMb ?? HARNESS_CACHE_MB) * 2 ** 20, ...(o.footerCacheMb === undefined ? {} : { footerCacheBytes: o.footerCacheMb * 2 ** 20 }) }
  const ordersReader = await Table.open(orders.table.store, readerOpen)
  const totalsReader = totals ? await Table.open(totals.table.store, readerOpen) : null
  return { o, log: o.log ?? (() => {}), random, rt, orders, totals, ordersReader, totalsReader, start: Date.now(), running }
}

export async function runSoak(partial: Partial<SoakOptions> = {}): Promise<SoakResult> {
  const o: SoakOptions = { ...SOAK_DEFAULTS, ...partial }
  const wallStart = Date.now()
  const random = seededRandom(o.seed)
  const dir = mkdtempSync(join(tmpdir(), 'strata-soak-'))
  const control = new SoakControl(dir)
  const invocations = new InvocationLog(o.events !== undefined)
  const rt = await startSoakRuntime(o, control, invocations)
  const maintenancePools = new Map<string, ExecutionEnvironmentPool>()
  let stopped = false
  // the loops end when these go false (also when the soak fails half-way)
  const running = { load: true, probing: true, maintaining: o.maintenanceEverySeconds > 0 }
  let sampler: Sampler | undefined
  try {
    addMaintenancePools(o, rt, maintenancePools)
    await o.afterStart?.(rt)
    const s = await sharedState(o, rt, random, running)
    invocations.loadStart = s.start
    const model = new LoadModel()
    const faults = new FaultDriver(s, control, invocations, model)
    const sender = new Sender(s, model, invocations, () => (o.events ? faults.eventDriveStop(o.events) : null))
    // every function's environments, by role, for the memory samples
    sampler = new Sampler(s, { writer: [rt.writerPool], compactor: [...rt.tables.values()].map((x) => x.pool), committer: [...rt.tables.values()].map((x) => x.committerPool), maintenance: [...maintenancePools.values()] }, model, faults)
    const maint: MaintenanceStats = { runs: 0, failed: 0, errors: [], snapshotsExpired: 0, orphansDeleted: 0, markersDeleted: 0, sweptJobs: 0, stepSeconds: {} }

    const loaded = sender.run()
    const prober = probeVisibility(s, model)
    const faultLoop = faults.run()
    const maintenanceLoop = runMaintenance(s, maintenancePools, maint)
    sampler.start()

    await loaded
    const loadSeconds = secondsSince(s)
    running.load = false
    await faultLoop
    // maintenance goes on through the drain, as its schedule does when the writes stop: its
    // sweep is what heals a bucket whose job was lost (lib/jobs/coalesce.ts stalledBucketJobs)
    s.log(`load done at ${loadSeconds.toFixed(0)} s (${sender.loadStoppedBy}); draining`)
    const drainStart = Date.now()
    const drained = await drain(s, model, drainStart)
    const drainSeconds = (Date.now() - drainStart) / 1000
    running.maintaining = false
    await maintenanceLoop
    await sampler.stop()
    running.probing = false
    await prober
    faults.absorbFired()
    s.log(`drain ${drained ? 'done' : 'TIMED OUT'} in ${drainSeconds.toFixed(0)} s; checking`)

    const checks = new SoakChecks(s, model, invocations)
    await checks.drainAndQueues(drained, drainSeconds, new S3Store({ bucket: rt.bucket, client: rt.backend.s3Client() }))
    await checks.verifyOrders('')
    await checks.verifyTotals('')
    await checks.references()
    await checks.orphanCleanup()
    checks.schedules(maint, sampler.samples)
    const lag = checks.faults(faults.faults, sampler.samples, loadSeconds, sender.loadStoppedBy)
    const phases = { loadSeconds, loadStoppedBy: sender.loadStoppedBy, drained, drainSeconds }
    const result = soakResult(s, phases, { model, invocations, faults, sampler, checks, maint, lag })
    await rt.stop()
    stopped = true
    for (const p of maintenancePools.values()) await p.close()
    result.wallSeconds = Math.round((Date.now() - wallStart) / 1000)
    return result
  } finally {
    running.load = running.probing = running.maintaining = false
    sampler?.clear()
    if (!stopped) {
      await rt.stop().catch(() => undefined)
      for (const p of maintenancePools.values()) await p.close().catch(() => undefined)
    }
    control.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Waits until nothing is in flight or queued, no level-0 file is left and every probe was seen; false at the drain timeout. */
async function drain(s: SoakShared, model: LoadModel, drainStart: number): Promise<boolean> {
  const { rt, orders, totals, o } = s
  const l0Of = async (tb: Table | null) => {
    if (!tb) return 0
    try {
      return (await tableStatus(tb)).buckets.reduce((n, b) => n + b.l0Files, 0)
    } catch {
      return -1 // read raced an expiration: not known to be drained
    }
  }
  while (Date.now() - drainStart < o.drainTimeoutSeconds * 1000) {
    const idle = rt.writer.inFlight === 0 && [...rt.tables.values()].every((x) => x.poller.inFlight === 0)
    const queues = (await rt.queueDepth(rt.ingestQueueUrl)) + (await rt.queueDepth(orders.compactionQueueUrl)) + (totals ? await rt.queueDepth(totals.compactionQueueUrl) : 0)
    if (idle && queues === 0 && model.unseen.size === 0 && (await l0Of(s.ordersReader)) === 0 && (await l0Of(s.totalsReader)) === 0) return true
    await sleep(500)
  }
  return false
}

/** The soak's parts, as the result is made of them. */
interface SoakParts {
  model: LoadModel
  invocations: InvocationLog
  faults: FaultDriver
  sampler: Sampler
  checks: SoakChecks
  maint: MaintenanceStats
  lag: LagVerdict
}

/** The result: the memory check added, windows and fault counts summed up, every figure gathered. */
function soakResult(s: SoakShared, phases: { loadSeconds: number; loadStoppedBy: string; drained: boolean; drainSeconds: number }, parts: SoakParts): SoakResult {
  const { o, rt } = s
  const { model, invocations: inv, faults, sampler, checks, lag } = parts
  const { loadSeconds } = phases
  const samples = sampler.samples
  const windows = lagWindows(s, model, faults.faults, samples, loadSeconds + phases.drainSeconds)
  // memory once the caches and retention reached their steady state (soak-memory.ts)
  const loadSamples = samples.filter((x) => x.t <= loadSeconds)
  const stores = loadSamples.filter((x) => x.storeMb !== undefined)
  const memory = { ...memoryVerdict(loadSamples, o.memoryFromSeconds ?? loadSeconds / 2, loadSeconds, o.memoryLimitMbPerMin), storeMbFirst: stores[0]?.storeMb ?? null, storeMbLast: stores.at(-1)?.storeMb ?? null }
  checks.checks.push({ name: 'memory flat', ok: memory.flat, info: !o.strictTiming, detail: memoryDetail(memory) })

  const probeLags = model.probes.filter((p) => p.seenAt !== null).map((p) => p.seenAt! - p.sentAt)
  const faultCounts: SoakResult['faultCounts'] = {}
  for (const f of faults.faults) {
    const c = (faultCounts[f.kind] ??= { armed: 0, fired: 0, recovered: 0, overlapped: 0 })
    c.armed++
    if (f.firedAt !== null) c.fired++
    if (f.recovered) c.recovered++
    if (f.firedAt !== null && f.recovered === null) c.overlapped++
  }
  const compStats = [...rt.tables.values()].map((x) => x.poller.stats)
  const sum = (k: 'invocations' | 'succeeded' | 'crashes' | 'failedRecords') => compStats.reduce((a, x) => a + x[k], 0)
  return {
    params: { ...o, log: undefined, afterStart: undefined } as Omit<SoakOptions, 'log'>,
    loadSeconds: Math.round(loadSeconds),
    loadStoppedBy: phases.loadStoppedBy,
    drainSeconds: Math.round(phases.drainSeconds),
    drained: phases.drained,
    wallSeconds: 0,
    sent: model.sent,
    distinctOrderKeys: model.versions.size,
    writer: { ...rt.writer.stats, coldStarts: inv.writerColdStarts, redeliveredRecords: inv.redeliveredRecords, failures: Object.fromEntries(inv.failures.writer), durationMs: durationsOf(inv.durations.writer) },
    compactor: {
      invocations: sum('invocations'),
      succeeded: sum('succeeded'),
      crashes: sum('crashes'),
      failedRecords: sum('failedRecords'),
      coldStarts: inv.compactorColdStarts,
      failures: Object.fromEntries(inv.failures.compactor),
      durationMs: durationsOf(inv.durations.compactor),
    },
    maintenance: parts.maint,
    jobs: {
      delivered: inv.jobsDelivered,
      traced: inv.jobDetail.size,
      bucketCompactions: sampler.bucketCompactions,
      peakDepth: { orders: sampler.peakJobs.orders, totals: sampler.peakJobs.totals },
      peakPerBucket: { orders: sampler.peakJobs.orders / o.buckets, totals: s.totalsReader ? sampler.peakJobs.totals / o.totalsBuckets : 0 },
    },
    faults: faults.faults,
    faultCounts,
    lag: {
      thresholdMs: lag.thresholdMs,
      baselineP99Ms: lag.baselineP99Ms,
      probeP50Ms: pct(probeLags, 50),
      probeP99Ms: pct(probeLags, 99),
      probeMaxMs: probeLags.length ? Math.max(...probeLags) : null,
      unseenProbes: model.unseen.size,
      maxRecoverySeconds: lag.firedFaults.length ? Math.max(...lag.firedFaults.map((f) => f.recoverySeconds ?? Infinity)) : null,
    },
    memory,
    totalsGap: checks.gap,
    staleVersions: checks.staleVersions,
    windows,
    samples,
    checks: checks.checks,
    ok: checks.checks.every((c) => c.ok || c.info),
  }
}

/** Per window of windowSeconds over the load and the drain: probe lags, lag, memory, queues and the faults that struck. */
function lagWindows(s: SoakShared, model: LoadModel, faults: SoakResult['faults'], samples: SoakResult['samples'], untilSeconds: number): WindowStats[] {
  const { o, start } = s
  const windows: WindowStats[] = []
  for (let from = 0; from < untilSeconds; from += o.windowSeconds) {
    const to = from + o.windowSeconds
    const ws = samples.filter((x) => x.t >= from && x.t < to)
    if (ws.length === 0) continue
    const ps = model.probes.filter((p) => (p.sentAt - start) / 1000 >= from && (p.sentAt - start) / 1000 < to)
    const lags = ps.filter((p) => p.seenAt !== null).map((p) => p.seenAt! - p.sentAt)
    windows.push({
      from,
      to,
      probes: ps.length,
      probeLagP50Ms: pct(lags, 50),
      probeLagP99Ms: pct(lags, 99),
      probeLagMaxMs: lags.length ? Math.max(...lags) : null,
      l0AgeMaxMs: Math.max(...ws.map((x) => x.l0AgeMs)),
      lagMaxMs: Math.max(...ws.map((x) => x.lagMs)),
      rssMedianMb: pct(ws.map((x) => x.rssMb), 50)!,
      rssMaxMb: Math.max(...ws.map((x) => x.rssMb)),
      mainHeapMedianMb: pct(ws.map((x) => x.memory.main.heapUsedMb), 50)!,
      envHeapMedianMb: pct(ws.map((x) => x.memory.envHeapUsedMb), 50)!,
      nonHeapMedianMb: pct(ws.map((x) => x.memory.nonHeapMb), 50)!,
      maxIngestQueue: Math.max(...ws.map((x) => x.ingestQueue)),
      maxJobs: Math.max(...ws.map((x) => x.ordersJobs + x.totalsJobs)),
      faults: faults.filter((f) => f.firedAt !== null && f.firedAt >= from && f.firedAt < to).map((f) => f.kind),
    })
  }
  return windows
}
