// Soak: the local runtime (embedded S3 + SQS, real writer, compactor and maintenance
// handlers in worker threads) under a steady write load for minutes while writer and
// compactor invocations crash at random points and the compactor's environments are killed,
// then a drain and the checks: nothing lost, nothing twice, no snapshot pointing at a
// missing file, lag back under a threshold after each fault, memory flat (over the second
// half of the load, the host's RSS slope and each environment's, its young generation left
// out, at most 2 MB/min each, heap and non-heap reported apart: bench/lib/soak-memory.ts). What
// is run and measured: bench/lib/soak-run.ts. A short version runs in `npm test`
// (test/soak.test.ts). --cache-mb sets the functions' STRATA_METADATA_CACHE_MB (default 8),
// --footer-cache-mb their STRATA_FOOTER_CACHE_MB (default 2); --memory-from the second the
// memory slope starts at (default: half the load); --replacing-faults-until S arms no fault
// that replaces an environment (exits, restarts) after second S, throws going on, so that a
// memory window starting later sees warm environments only. The embedded backend runs in a child
// process of its own (local/backend-process.ts), so this process's RSS is the functions' and
// the harness's; --in-process-backend runs it here, as the soak did before. Every function
// environment is a process of its own, as a Lambda sandbox is, and its memory is judged on its
// own; --threads runs them as worker threads of this process, as the soak did before (then RSS
// is all of them together). Every isolate's young generation starts at its full size unless
// --young-ramp (see below).
//
//   npx tsx bench/soak.ts [--minutes 10] [--seconds N] [--rate 40] [--buckets 16] [--keys 5000]
//     [--crash-every 45] [--warmup 60] [--visibility 30] [--task-threads 4] [--seed N]
//     [--lag-threshold S] [--recover-within 150] [--maintenance-every 20] [--orphans-every 300] [--no-totals] [--no-s3-latency]
//     [--cache-mb MB] [--footer-cache-mb MB] [--memory-from S] [--in-process-backend]
//     [--replacing-faults-until S] [--young-ramp] [--threads]
//   npx tsx bench/soak.ts --reanalyze --lag-threshold S [--recover-within S]
//     (fault recovery of the last run, bench/out/soak.json, under another threshold)
//
// Writes bench/out/soak.json (every sample, fault and check) and bench/out/soak-lag.svg,
// prints a summary; exits 1 when an invariant failed.

import { spawnSync } from 'node:child_process'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { freshnessChart } from '../local/chart.ts'
import { parseBenchArgs } from './lib/args.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { OUT_DIR, markdownTable, writeResults } from './lib/report.ts'
import { faultRecovery } from './lib/soak-checks.ts'
import { SOAK_DEFAULTS, type SoakResult, runSoak } from './lib/soak-run.ts'
import { memoryDetail } from './lib/soak-memory.ts'

/** the semi-space size every isolate's young generation starts at, in MB (see below) */
const SOAK_SEMI_SPACE_MB = 16
/** MALLOC_ARENA_MAX the soak runs under (see below) */
const SOAK_ARENAS = 2

const s = (ms: number | null) => (ms === null ? '-' : (ms / 1000).toFixed(1))

export function soakMarkdown(r: SoakResult): string {
  const out: string[] = []
  out.push(
    `Load ${r.loadSeconds} s at ${r.params.rate} events/s (+1 probe/s${r.params.totalsEvery ? `, +1 totals message per ${r.params.totalsEvery} events` : ''}), ${r.params.buckets} buckets; drain ${r.drainSeconds} s; wall ${r.wallSeconds} s. ` +
      `Sent ${r.sent.orders} upserts over ${r.distinctOrderKeys - r.sent.probes} keys, ${r.sent.probes} probes, ${r.sent.totals} totals messages (${r.sent.messages} SQS messages).`,
  )
  out.push(
    `Writer: ${r.writer.invocations} invocations, ${r.writer.crashes} crashed, ${r.writer.failedRecords} records left for redelivery, ${r.writer.redeliveredRecords} redelivered records received, ${r.writer.coldStarts} cold starts. ` +
      `Compactor: ${r.compactor.invocations} invocations, ${r.compactor.crashes} crashed, ${r.compactor.failedRecords} jobs returned, ${r.compactor.coldStarts} cold starts. ` +
      `Maintenance: ${r.maintenance.runs} runs (${r.maintenance.failed} failed), ${r.maintenance.snapshotsExpired} snapshots expired, ${r.maintenance.orphansDeleted} orphans and ${r.maintenance.markersDeleted} ingest markers deleted; ` +
      `steps (total / longest s): ${Object.entries(r.maintenance.stepSeconds ?? {}).map(([k, t]) => `${k} ${t.total} / ${t.max}`).join(', ') || '-'}.`,
  )
  out.push(
    `Compaction jobs: ${r.jobs.delivered} received by compactors for ${r.jobs.bucketCompactions} bucket compactions that landed (${(r.jobs.delivered / Math.max(1, r.jobs.bucketCompactions)).toFixed(2)} jobs per compaction); compaction queue peak depth ${r.jobs.peakDepth.orders} (orders, ${r.params.buckets} buckets: ${r.jobs.peakPerBucket.orders.toFixed(2)} per bucket) and ${r.jobs.peakDepth.totals} (totals, ${r.params.totalsBuckets} buckets: ${r.jobs.peakPerBucket.totals.toFixed(2)} per bucket).`,
  )
  const d = (x: SoakResult['writer']['durationMs']) => `${x.p50 ?? '-'} / ${x.p99 ?? '-'} / ${x.max ?? '-'} ms`
  out.push(`Invocation durations p50 / p99 / max: writer ${d(r.writer.durationMs)}, compactor ${d(r.compactor.durationMs)}.`)
  for (const [fn, f] of [['writer', r.writer.failures], ['compactor', r.compactor.failures]] as const) {
    const e = Object.entries(f)
    if (e.length) out.push(`Failed ${fn} invocations: ${e.map(([k, n]) => `${n}× ${k}`).join('; ')}.`)
  }
  out.push('')
  out.push(
    markdownTable(
      ['fault', 'armed', 'fired', 'lag back under threshold', 'slowest recovery (s)', 'highest peak lag (s)'],
      Object.entries(r.faultCounts).map(([kind, c]) => {
        const fs = r.faults.filter((f) => f.kind === kind && f.firedAt !== null)
        return [
          kind,
          c.armed,
          c.fired,
          `${c.recovered}/${c.fired}${c.overlapped ? ` (${c.overlapped} overlapped by the next fault)` : ''}`,
          fs.some((f) => f.recoverySeconds !== null) ? Math.max(...fs.map((f) => f.recoverySeconds ?? 0)).toFixed(1) : '-',
          fs.length ? s(Math.max(...fs.map((f) => f.peakLagMs ?? 0))) : '-',
        ]
      }),
    ),
  )
  out.push('')
  out.push(
    markdownTable(
      ['window (s)', 'faults', 'probe lag p50 / p99 / max (s)', 'max lag (s)', 'max L0 age (s)', 'RSS median / max (MB)', 'main heap (MB)', 'environments\' heaps (MB)', 'non-heap (MB)', 'max ingest queue', 'max jobs queued'],
      r.windows.map((w) => [
        `${w.from}–${w.to}${w.from >= r.loadSeconds ? ' (drain)' : ''}`,
        w.faults.length ? w.faults.join(', ') : '-',
        `${s(w.probeLagP50Ms)} / ${s(w.probeLagP99Ms)} / ${s(w.probeLagMaxMs)}`,
        s(w.lagMaxMs),
        s(w.l0AgeMaxMs),
        `${w.rssMedianMb.toFixed(0)} / ${w.rssMaxMb.toFixed(0)}`,
        w.mainHeapMedianMb.toFixed(0),
        w.envHeapMedianMb.toFixed(0),
        w.nonHeapMedianMb.toFixed(0),
        w.maxIngestQueue,
        w.maxJobs,
      ]),
    ),
  )
  out.push('')
  out.push(
    `Lag: probes p50 ${s(r.lag.probeP50Ms)} s, p99 ${s(r.lag.probeP99Ms)} s, max ${s(r.lag.probeMaxMs)} s; threshold ${s(r.lag.thresholdMs)} s (baseline p99 before the first fault ${s(r.lag.baselineP99Ms)} s). ` +
      `Memory: ${memoryDetail(r.memory)}; stored objects ${r.memory.storeMbFirst ?? '-'} → ${r.memory.storeMbLast ?? '-'} MB.`,
  )
  out.push('')
  out.push(markdownTable(['check', 'result', 'detail'], r.checks.map((c) => [c.name, c.ok ? 'held' : c.info ? 'no (reported)' : '**FAILED**', c.detail.replaceAll('|', '\\|')])))
  return out.join('\n')
}

if (import.meta.filename === process.argv[1]) {
  const args = parseBenchArgs(
    process.argv.slice(2),
    ['--no-totals', '--no-s3-latency', '--reanalyze', '--in-process-backend', '--young-ramp', '--threads'],
    ['--minutes', '--seconds', '--rate', '--buckets', '--keys', '--crash-every', '--warmup', '--visibility', '--task-threads', '--seed', '--lag-threshold', '--recover-within', '--maintenance-every', '--orphans-every', '--cache-mb', '--footer-cache-mb', '--memory-from', '--replacing-faults-until'],
  )
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  // glibc gives every thread that allocates an arena of its own (up to 8 per core): with a
  // dozen function environments as threads of one process (--threads), memory one
  // environment frees stays resident in its arena. Two arenas, as a Lambda sandbox (one
  // process per function, one or two vCPUs) has about; read at process start, so the soak
  // starts itself again with it, and environments that are processes inherit it. An
  // explicit MALLOC_ARENA_MAX is kept. And --expose-gc, for the memory check's settled
  // samples (bench/lib/soak-memory.ts): the local runtime passes it and the young
  // generation's size below on to environments that are processes; threads share them.
  //
  // And every isolate's young generation at its full size from the start
  // (--min-semi-space-size=16: the local runtime caps each function's young generation at
  // 48 MB, three 16 MB semi-spaces): V8 otherwise starts it at 1–2 MB and grows it under
  // allocation pressure, a bounded ramp per environment that took run w's slope to 13.7
  // MB/min of new space alone, and would hide in the slope whatever else grows.
  // --young-ramp keeps V8's default.
  const needsArenas = process.platform === 'linux' && process.env.MALLOC_ARENA_MAX === undefined
  const needsGc = typeof (globalThis as { gc?: unknown }).gc !== 'function'
  const needsYoung = !args.has('--young-ramp') && !process.execArgv.some((a) => a.startsWith('--min-semi-space-size'))
  if ((needsArenas || needsGc || needsYoung) && !args.has('--reanalyze')) {
    const execArgv = [...process.execArgv, ...(needsGc ? ['--expose-gc'] : []), ...(needsYoung ? [`--min-semi-space-size=${SOAK_SEMI_SPACE_MB}`] : [])]
    const env = needsArenas ? { ...process.env, MALLOC_ARENA_MAX: String(SOAK_ARENAS) } : process.env
    const child = spawnSync(process.execPath, [...execArgv, ...process.argv.slice(1)], { stdio: 'inherit', env })
    process.exit(child.status ?? 1)
  }
  if (args.has('--reanalyze')) {
    const last = JSON.parse(readFileSync(join(OUT_DIR, 'soak.json'), 'utf8')) as SoakResult
    const thresholdMs = args.num('--lag-threshold', last.lag.thresholdMs / 1000) * 1000
    const within = args.num('--recover-within', last.params.recoverWithinSeconds)
    faultRecovery(last.faults, last.samples, thresholdMs, within)
    console.log(`fault recovery of bench/out/soak.json with lag threshold ${thresholdMs / 1000} s, window ${within} s (cut at the next fault):\n`)
    console.log(
      markdownTable(
        ['fault', 'kind', 'fired (s)', 'peak lag (s)', 'back under threshold after (s)', 'where it struck'],
        last.faults.map((f) => [f.seq, f.kind, f.firedAt?.toFixed(0) ?? 'never', s(f.peakLagMs), f.recovered === null ? 'next fault first' : f.recovered ? String(f.recoverySeconds) : '**no**', (f.points[0] ?? '').replace(/\(PutObject[^)]*\/([^/)]+)\)/, '($1)').replaceAll('|', '\\|')]),
      ),
    )
    process.exit(last.faults.some((f) => f.recovered === false) ? 1 : 0)
  }
  const machine = machineInfo(['fauxqs', '@aws-sdk/client-s3', '@aws-sdk/client-sqs', 'tsx'])
  const seconds = args.num('--seconds', args.num('--minutes', 10) * 60)
  const visibility = args.num('--visibility', SOAK_DEFAULTS.visibilityTimeoutSeconds)
  const recoverWithin = args.num('--recover-within', SOAK_DEFAULTS.recoverWithinSeconds)
  const lagThreshold = args.num('--lag-threshold', 0)
  const r = await runSoak({
    seconds,
    rate: args.num('--rate', SOAK_DEFAULTS.rate),
    buckets: args.num('--buckets', SOAK_DEFAULTS.buckets),
    keys: args.num('--keys', SOAK_DEFAULTS.keys),
    totalsEvery: args.has('--no-totals') ? 0 : SOAK_DEFAULTS.totalsEvery,
    faultEverySeconds: args.num('--crash-every', SOAK_DEFAULTS.faultEverySeconds),
    warmupSeconds: args.num('--warmup', Math.min(SOAK_DEFAULTS.warmupSeconds, Math.round(seconds / 5))),
    visibilityTimeoutSeconds: visibility,
    // the function timeout stays under the visibility timeout, as AWS requires
    timeoutMs: Math.min(SOAK_DEFAULTS.timeoutMs, Math.round(visibility * 1000 * 0.8)),
    taskThreads: args.num('--task-threads', SOAK_DEFAULTS.taskThreads),
    seed: args.num('--seed', SOAK_DEFAULTS.seed),
    lagThresholdMs: lagThreshold > 0 ? lagThreshold * 1000 : undefined,
    recoverWithinSeconds: recoverWithin,
    maintenanceEverySeconds: args.num('--maintenance-every', SOAK_DEFAULTS.maintenanceEverySeconds),
    orphansEverySeconds: args.num('--orphans-every', SOAK_DEFAULTS.orphansEverySeconds),
    metadataCacheMb: args.num('--cache-mb', 0) || SOAK_DEFAULTS.metadataCacheMb,
    footerCacheMb: args.num('--footer-cache-mb', 0) || SOAK_DEFAULTS.footerCacheMb,
    backendInProcess: args.has('--in-process-backend'),
    isolation: args.has('--threads') ? 'thread' : 'process',
    memoryFromSeconds: args.num('--memory-from', 0) || SOAK_DEFAULTS.memoryFromSeconds,
    replacingFaultsUntilSeconds: args.num('--replacing-faults-until', 0) || undefined,
    s3LatencyMs: args.has('--no-s3-latency') ? 0 : SOAK_DEFAULTS.s3LatencyMs,
    log: (line) => process.stderr.write(line + '\n'),
  })
  console.log(soakMarkdown(r))
  const semi = process.execArgv.find((a) => a.startsWith('--min-semi-space-size'))
  console.log(`\n${machineMarkdown(machine)}; MALLOC_ARENA_MAX=${process.env.MALLOC_ARENA_MAX ?? 'unset'}; --expose-gc ${typeof (globalThis as { gc?: unknown }).gc === 'function' ? 'on' : 'off'}; ${semi ?? 'young generation ramping (--young-ramp)'}.`)
  mkdirSync(OUT_DIR, { recursive: true })
  const svg = join(OUT_DIR, 'soak-lag.svg')
  writeFileSync(
    svg,
    freshnessChart(
      [
        { label: 'oldest unseen probe', points: r.samples.map((x) => [x.t, x.probeAgeMs / 1000] as [number, number]) },
        { label: 'oldest L0 file', points: r.samples.map((x) => [x.t, x.l0AgeMs / 1000] as [number, number]) },
      ],
      { title: `Soak: freshness lag under faults (${r.faults.filter((f) => f.firedAt !== null).length} faults)` },
    ),
  )
  process.stderr.write(`results: ${writeResults('soak', { machine, ...r })}\nchart: ${svg}\n`)
  const failed = r.checks.filter((c) => !c.ok && !c.info)
  if (failed.length) {
    process.stderr.write(`SOAK FAILED: ${failed.map((c) => c.name).join('; ')}\n`)
    process.exit(1)
  }
  process.exit(0)
}
