// `npm run bench`: the commit-contention, freshness and simulation benchmarks in one run
// (the simulation is calibrated with the other two's measurements), then, in the full run,
// the compaction, scan and round-trips benchmarks as child processes. Writes bench/out/results.json,
// bench/out/*.svg and the header, contention, freshness and simulation sections of
// docs/benchmarks.md (other sections, e.g. compaction, are left as they are).
//
//   npm run bench                 # full: medians of 3 contention runs, 90 s per freshness setting
//   npm run bench -- --quick      # ~4 minutes: fewer settings, 4 s contention and 15 s freshness windows
//   npm run bench -- --freshness-seconds 300   # a longer load window per freshness setting (default 90, quick 15)
//   npm run bench -- --contention-seconds 20   # a longer window per contention point (default 10, quick 4)
//   npx tsx bench/run.ts --resimulate   # re-fit and re-run the simulation from bench/out/results.json
//   npx tsx bench/run.ts --resimulate --latest-sweep   # … with the fold sweep of the last
//                                       # `bench/commit-contention.ts --sweep-only` (bench/out/commit-contention.json)
//   add --no-docs to leave docs/benchmarks.md as it is (results.json and the charts only)
//   npx tsx bench/run.ts --docs-only    # re-render the generated sections of docs/benchmarks.md from
//                                       # bench/out/results.json, running no benchmark
//   npx tsx bench/run.ts --freshness-budget [--freshness-seconds 60] [--settings 1,4,-1]
//                                       # the freshness benchmark alone, its stage budget written between
//                                       # the freshness-budget markers (inside the freshness section)
//   add --doc <file> to write the generated sections into another Markdown file instead
//   (--docs-only --doc /tmp/benchmarks.md shows what a render would change)

import { execFileSync, spawn } from 'node:child_process'
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { freshnessChart } from '../local/chart.ts'
import { parseBenchArgs } from './lib/args.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { OUT_DIR, markdownTable, writeResults } from './lib/report.ts'
import { REALISTIC_MS, type ContentionResult, contentionMarkdown, runContention, targetMarkdown } from './commit-contention.ts'
import { type FreshnessResult, budgetSection, compactionCostFits, compactionThroughput, freshnessMarkdown, runFreshness, writeFreshnessChart } from './freshness.ts'
import { DEFAULT_BUCKETS_AT_ONCE } from '../lib/jobs/process-jobs.ts'
import { type SimCalibration, type SimulationResult, runSimulation, simulationMarkdown } from './simulate.ts'

const ROOT = join(import.meta.dirname, '..')
const DEFAULT_DOC = join(ROOT, 'docs', 'benchmarks.md')
const SIM_SEED = 20_260_601
const SIM_BUCKETS = 1024
const LAMBDA_CONCURRENCY = 1000

const log = (s: string) => process.stderr.write(`[bench] ${s}\n`)

/** Other processes above 10% CPU right now, so a noisy run says so. */
function busyProcesses(): string[] {
  try {
    const out = execFileSync('ps', ['-eo', 'pid=,pcpu=,comm='], { encoding: 'utf8' })
    return out
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/))
      .filter(([pid, cpu]) => Number(pid) !== process.pid && Number(cpu) > 10)
      .map(([, cpu, comm]) => `${comm} ${cpu}%`)
  } catch {
    return []
  }
}

/**
 * The simulation's inputs from one run's measurements. The folded model is the deployed
 * design, so its costs are the deployed committer's: a round from the fold sweep (one
 * committer invocation alone), the gap between invocations and the senders' landing-seen
 * wait from the writers' runs. Results from before the rounds fit a round as drain + fold
 * with per-message receipts; results from before the deployed-path benchmark (no
 * params.committerConcurrency) fall back to the in-process prototype's fit, one committer,
 * no overheads. Each fallback says so.
 */
function calibrate(c: ContentionResult, f: FreshnessResult): { calibration: SimCalibration; notes: string[] } {
  const notes: string[] = []
  const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
  const writerCommitsPerSecond = med(f.runs.map((r) => r.writerInvocations / r.seconds))
  const rowsPerCommit = med(f.runs.map((r) => r.rowsSent / Math.max(1, r.writerInvocations)))
  const direct = c.summary.filter((s) => s.path === 'direct' && s.latencyMs === REALISTIC_MS)
  const queued = c.queuedFit?.[REALISTIC_MS]
  const deployed = c.params.committerConcurrency !== undefined && queued !== undefined && Number.isFinite(queued.baseMs)
  let fold: Pick<
    SimCalibration,
    | 'foldBaseMs' | 'foldPerCommitMs' | 'committers' | 'committerOverheadMs' | 'receiptWaitMs' | 'rounds' | 'firstRoundBaseMs' | 'firstRoundPerCommitMs'
    | 'settleBaseMs' | 'settlePerCommitMs' | 'receiptBaseMs' | 'receiptPerCommitMs' | 'foldSource'
    | 'foreignRoundBaseMs' | 'foreignRoundPerCommitMs' | 'lostRaceMs'
  >
  if (deployed) {
    const base = {
      // with the committer lease one invocation folds at a time; the other forwards its
      // batches (their extra hop is in the writers' measured commit times, not in the model)
      committers: c.params.committerLease ? 1 : c.params.committerConcurrency,
      committerLease: c.params.committerLease === true,
      committerOverheadMs: finiteOr(c.queuedGapMs?.[REALISTIC_MS], 0),
      receiptWaitMs: finiteOr(c.receiptWaitMs?.[REALISTIC_MS], 0),
    }
    const queuedText = `the queued (deployed) path's fit over ${queued.snapshots} committer invocations at ${REALISTIC_MS} ms (${queued.baseMs.toFixed(0)} ms + ${queued.perCommitMs.toFixed(1)} ms per message)`
    const sw = c.foldSweep
    const round = sw?.roundFit?.COMPACT
    const settle = sw?.settleFit?.COMPACT
    const first = sw?.firstRoundFit?.COMPACT
    const finite = (f?: { baseMs: number; perCommitMs: number }) => f !== undefined && Number.isFinite(f.baseMs) && Number.isFinite(f.perCommitMs)
    const foreign = sw?.foreignRoundFit?.COMPACT
    if (sw?.roundModel === 'fold' && finite(round) && finite(settle) && finite(first) && finite(foreign)) {
      fold = { ...base, ...steadyRounds(c, round!, first!, settle!, notes, foreign!) }
    } else if (sw?.roundModel === 'fold + one receive' && finite(round) && finite(settle) && finite(first)) {
      fold = { ...base, ...steadyRounds(c, round!, first!, settle!, notes) }
    } else if (round && settle && Number.isFinite(round.perCommitMs) && Number.isFinite(settle.perCommitMs)) {
      // a sweep from before the snapshot chain (a receipt per message), kept for its results.
      // committer rounds: a round is the drain and the fold; receipts and deletes overlap the
      // next round. The round's base is the larger of the sweep's (one committer alone) and
      // the writers' runs' invocation base less the sweep's receipts and deletes (two
      // committers racing, as deployed); per message, the sweep's compaction messages: the
      // simulation folds hundreds of them, far beyond the writers' folds of ≤ 32
      const roundBase = Math.max(round.baseMs, queued.baseMs - settle.baseMs)
      notes.push('the fold sweep predates the snapshot chain: its round is drain + fold and each compactor is held until its round\'s receipts are written; re-run `npx tsx bench/commit-contention.ts --sweep-only` for the current committer')
      fold = {
        ...base,
        foldBaseMs: roundBase,
        foldPerCommitMs: round.perCommitMs,
        receiptBaseMs: settle.baseMs,
        receiptPerCommitMs: settle.perCommitMs,
        foldSource: `committer rounds: a round (drain + fold) ${roundBase.toFixed(0)} ms + ${round.perCommitMs.toFixed(2)} ms per message (the fold sweep's COMPACT round fit, ${round.baseMs.toFixed(0)} ms + ${round.perCommitMs.toFixed(2)} ms, its base raised to ${queuedText} less the sweep's receipts and deletes), receipts and deletes ${settle.baseMs.toFixed(0)} ms + ${settle.perCommitMs.toFixed(2)} ms per message overlapping the next round`,
      }
    } else {
      // one round per invocation (results from before committer rounds): the base from the
      // writers' runs, the cost per message from the fold sweep when there is one
      const sweep = sw?.fit.COMPACT
      const perMessage = sweep && Number.isFinite(sweep.perCommitMs) ? sweep.perCommitMs : queued.perCommitMs
      fold = {
        ...base,
        foldBaseMs: queued.baseMs,
        foldPerCommitMs: perMessage,
        foldSource: `base: ${queuedText}; per message: ${sweep && Number.isFinite(sweep.perCommitMs) ? `the fold sweep's COMPACT fit (${sweep.baseMs.toFixed(0)} ms + ${sweep.perCommitMs.toFixed(2)} ms per message, folds of up to ${Math.max(...sw!.points.map((p) => p.size))})` : 'the same fit (no fold sweep in these results)'}`,
      }
    }
  } else {
    const proto = c.foldFit[REALISTIC_MS]
    fold = { foldBaseMs: proto.baseMs, foldPerCommitMs: proto.perCommitMs, committers: 1, committerOverheadMs: 0, receiptWaitMs: 0, foldSource: `FALLBACK: the in-process folding prototype's fit (${proto.snapshots} snapshots); these results predate the deployed-path contention benchmark` }
    notes.push('results.json has no deployed-path contention figures (params.committerConcurrency): the folded model falls back to the in-process prototype\'s fold cost, one committer, no receipt wait; re-run `npm run bench` for the deployed path')
  }
  const probed = f.compactionCostFit.commitWaitExcluded === true
  if (!probed) notes.push('the freshness results carry no commit-wait figures (from before the commit queue): the compaction cost is the whole invocation time, one bucket at a time per compactor')
  return {
    calibration: {
      writerCommitsPerSecond,
      touchProbability: 1 - (1 - 1 / f.params.buckets) ** rowsPerCommit,
      perBucketMs: f.compactionCostFit.perBucketMs,
      perJobMs: f.compactionCostFit.perJobMs,
      // a measured 0 would stall the model; the window is short, so floor it at one commit per window
      directCurve: direct.map((s) => ({ committers: s.committers, commitsPerSecond: Math.max(s.commitsPerSecond, 1 / c.params.seconds) })),
      // the compactor compacts this many buckets of its batch at once (lib/jobs/process-jobs.ts)
      bucketsAtOnce: probed ? DEFAULT_BUCKETS_AT_ONCE : 1,
      ...fold,
    },
    notes,
  }
}

const finiteOr = (x: number | undefined, d: number) => (x !== undefined && Number.isFinite(x) ? x : d)

type Fit = { baseMs: number; perCommitMs: number; snapshots: number }

/**
 * The committer as deployed since senders follow the snapshot chain: a round's messages
 * are received while the round before folds, so a round costs its fold (the sweep's round
 * fit; sweeps from before the next round stopped waiting for the receive in flight: its
 * fold and the tail of one receive); a cold invocation's first round costs the whole first
 * drain and the fold (the sweep's first-round fit); deletes delay no one. With `foreign`
 * (sweeps that measure both): a round after the other committer's snapshot costs the
 * sweep's fold after another committer's snapshot, and a lost race that round's base
 * again (an approximation: the retry re-reads the winner's delta, rewrites the base list
 * and creates again, about what such a fold does before its own work). The round is the
 * sweep's, one committer alone on this machine: what a Lambda committer with its own CPU
 * sees. The writers' runs measure rounds too, with two committers racing for `snapshot-N`
 * and 32 writers and the S3/SQS backend on the same 2 cores; they are reported, not used.
 */
function steadyRounds(
  c: ContentionResult,
  round: Fit,
  first: Fit,
  settle: Fit,
  notes: string[],
  foreign?: Fit,
): Pick<SimCalibration, 'foldBaseMs' | 'foldPerCommitMs' | 'rounds' | 'firstRoundBaseMs' | 'firstRoundPerCommitMs' | 'settleBaseMs' | 'settlePerCommitMs' | 'foldSource' | 'foreignRoundBaseMs' | 'foreignRoundPerCommitMs' | 'lostRaceMs'> {
  const fit = (f: Fit, d = 2) => `${f.baseMs.toFixed(0)} ms + ${f.perCommitMs.toFixed(d)} ms per message`
  const contended = c.queuedRoundFit?.[REALISTIC_MS]
  const largest = Math.max(0, ...c.points.filter((p) => p.latencyMs === REALISTIC_MS).flatMap((p) => (p.rounds ?? []).map((r) => r.size)))
  const contendedText =
    contended && contended.snapshots > 0 && Number.isFinite(contended.baseMs)
      ? `in the writers' runs at ${REALISTIC_MS} ms, where ${c.params.committerLease ? 'two committer invocations share the lease' : 'two committers race for \`snapshot-N\`'} and up to ${Math.max(...c.params.committers)} writers and the S3/SQS backend share this machine's cores, a round measured ${fit(contended, 1)} (fit over ${contended.snapshots} rounds of at most ${largest} messages, so its per-message cost says little); not used, since a Lambda committer has its own CPU${foreign ? '' : ', but the lost races it includes are not in the model'}`
      : 'the writers\' runs of these results have no per-round figures'
  if (c.params.landingSeenFrom !== 'snapshot chain') {
    notes.push('the contention results predate the snapshot chain: the sender\'s wait is their receipt poll wait (receipt written → read), not the landing-seen wait; re-run `npm run bench` for it')
  }
  const common = {
    rounds: true,
    foldBaseMs: round.baseMs,
    foldPerCommitMs: round.perCommitMs,
    firstRoundBaseMs: first.baseMs,
    firstRoundPerCommitMs: first.perCommitMs,
    settleBaseMs: settle.baseMs,
    settlePerCommitMs: settle.perCommitMs,
  }
  if (foreign) {
    return {
      ...common,
      foreignRoundBaseMs: foreign.baseMs,
      foreignRoundPerCommitMs: foreign.perCommitMs,
      lostRaceMs: foreign.baseMs,
      foldSource: `committer rounds, from the fold sweep's COMPACT fits (one committer invocation alone): a round, its messages received while the round before folded, costs its fold, ${fit(round)} after the committer's own snapshot and ${fit(foreign)} after a snapshot of the other committer (its delta read first); a round during which the other committer landed a snapshot loses the race for \`snapshot-N\` and pays ${foreign.baseMs.toFixed(0)} ms more (re-read, base list, create again; that fold's base, an approximation); a cold invocation's first round (the whole first drain, then the fold) ${fit(first)}; ${contendedText}. The round's deletes, ${fit(settle)}, go on behind the next round and delay no one`,
    }
  }
  return {
    ...common,
    foldSource: `committer rounds, from the fold sweep's COMPACT fits (one committer invocation alone): a round, its messages received while the round before folded, costs its fold plus one receive, ${fit(round)}; a cold invocation's first round (the whole first drain, then the fold) ${fit(first)}; ${contendedText}. The round's deletes, ${fit(settle)}, go on behind the next round and delay no one`,
  }
}

/** One bucket's measured compaction time for the simulation's target: the task-threads 1 run's median, else the fit. */
function bucketCompaction(f: FreshnessResult): { ms: number; source: string } {
  const one = f.runs.find((r) => r.taskThreads === 1)
  if (one?.bucketCompactionP50Ms) return { ms: one.bucketCompactionP50Ms, source: 'median of one bucket\'s compaction, its commit included, measured at task-threads 1' }
  const fit = f.compactionCostFit
  return { ms: fit.perBucketMs + fit.perJobMs, source: 'FALLBACK: the compaction cost fit for one bucket and one job (no per-bucket figures in these results)' }
}

function replaceSection(doc: string, name: string, body: string): string {
  const begin = `<!-- ${name}:begin -->`
  const end = `<!-- ${name}:end -->`
  const block = `${begin}\n${body.trim()}\n${end}`
  const i = doc.indexOf(begin)
  const j = doc.indexOf(end)
  if (i >= 0 && j > i) return doc.slice(0, i) + block + doc.slice(j + end.length)
  return `${doc.trimEnd()}\n\n${block}\n`
}

function chart(path: string, series: { label: string; points: [number, number][] }[], title: string, xLabel: string, yLabel: string): string {
  writeFileSync(path, freshnessChart(series, { title, xLabel, yLabel }))
  return path
}

async function runOtherBenchmark(script: string, quick: boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'bench', script), ...(quick ? ['--quick'] : [])], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', (d) => (out += d))
    child.on('error', reject)
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`bench/${script} exited ${code}`))))
  })
}

async function main(): Promise<void> {
  const args = parseBenchArgs(process.argv.slice(2), ['--quick', '--no-others', '--docs-only', '--resimulate', '--latest-sweep', '--no-docs', '--freshness-budget'], ['--freshness-seconds', '--contention-seconds'], ['--doc', '--settings'])
  const doc = args.has('--no-docs') ? undefined : args.str('--doc', DEFAULT_DOC)
  if (args.has('--freshness-budget')) return freshnessBudgetOnly(doc, args.num('--freshness-seconds', 60), args.str('--settings', ''))
  if (args.has('--docs-only')) return writeDocs(JSON.parse(readFileSync(join(OUT_DIR, 'results.json'), 'utf8')) as Results, doc ?? DEFAULT_DOC)
  if (args.has('--resimulate')) return resimulate(doc, args.has('--latest-sweep'))
  const quick = args.has('--quick')
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const started = Date.now()
  const machine = machineInfo(['fauxqs', '@aws-sdk/client-s3', '@aws-sdk/client-sqs', 'hyparquet', 'hyparquet-writer', 'tsx'])
  const busyAtStart = busyProcesses()
  log(`load average at start ${machine.loadAvgAtStart.join(', ')}; other busy processes: ${busyAtStart.join(', ') || 'none'}`)

  log('commit contention')
  const contention = await runContention({ quick, seconds: args.num('--contention-seconds', quick ? 4 : 10), log })
  log('freshness vs compaction.task-threads')
  const freshness = await runFreshness({ quick, seconds: args.num('--freshness-seconds', quick ? 15 : 90), log })
  log('simulation')
  const simulation = simulate(contention, freshness, quick)
  const others: Record<string, string> = {}
  if (!quick && !args.has('--no-others')) {
    for (const script of ['compaction.ts', 'scan.ts', 'round-trips.ts']) {
      log(`bench/${script}`)
      others[script] = await runOtherBenchmark(script, quick)
      writeFileSync(join(OUT_DIR, script.replace('.ts', '.md')), others[script])
    }
  }
  const loadAtEnd = loadavg().map((x) => Math.round(x * 100) / 100)
  const busyAtEnd = busyProcesses()
  const results = {
    mode: quick ? 'quick' : 'full',
    machine: { ...machine, busyProcessesAtStart: busyAtStart, busyProcessesAtEnd: busyAtEnd, loadAvgAtEnd: loadAtEnd },
    wallSeconds: (Date.now() - started) / 1000,
    contention,
    freshness,
    simulation,
  }
  finish(results, doc)
}

function simulate(contention: ContentionResult, freshness: FreshnessResult, quick: boolean): SimulationResult {
  const { calibration, notes } = calibrate(contention, freshness)
  for (const n of notes) log(`simulation: ${n}`)
  const r = runSimulation(calibration, { buckets: SIM_BUCKETS, lambdaConcurrency: LAMBDA_CONCURRENCY, seconds: quick ? 900 : 3600, warmupSeconds: quick ? 300 : 900, seed: SIM_SEED }, undefined, bucketCompaction(freshness))
  log(simulationSummary(r))
  return { ...r, notes }
}

function simulationSummary(r: SimulationResult): string {
  const folded = r.points.filter((p) => p.path === 'folded')
  const lag = (s: number) => (s >= 120 ? `${(s / 60).toFixed(1)} min` : `${s.toFixed(1)} s`)
  const t = r.targets
  return `simulation, folded: ${folded.map((p) => `${p.taskThreads}: p50 ${lag(p.lagP50S)} p99 ${lag(p.lagP99S)}`).join('; ')}${t ? `; p50 never increases: ${t.p50NeverIncreases}; p99 at -1 ≤ 2 × ${lag(t.bucketCompactionS)}: ${t.p99WithinTwice}` : ''}`
}

/**
 * The simulation again from the measurements in results.json, with the compaction cost
 * re-fitted by the current rule (compactionCostFits): for when the calibration, not the
 * measurement, changed. The header keeps the measured run's machine and wall time.
 */
function resimulate(doc: string | undefined, latestSweep: boolean): void {
  const r = JSON.parse(readFileSync(join(OUT_DIR, 'results.json'), 'utf8')) as Results
  if (latestSweep) {
    // the committer's costs changed since the full run: its fold sweep again, the rest as measured then
    const c = JSON.parse(readFileSync(join(OUT_DIR, 'commit-contention.json'), 'utf8')) as ContentionResult
    if (!c.foldSweep) throw new Error('bench/out/commit-contention.json has no fold sweep; run `npx tsx bench/commit-contention.ts --sweep-only` first')
    r.contention.foldSweep = { ...c.foldSweep, remeasured: 're-measured alone with `npx tsx bench/commit-contention.ts --sweep-only`, after the rest of this section' }
    r.simulationSweepFrom = 'the fold sweep of `npx tsx bench/commit-contention.ts --sweep-only`; every other input from the full run'
    log(`simulating with ${r.simulationSweepFrom}`)
  }
  const fits = compactionCostFits(r.freshness.runs)
  r.freshness.compactionCostFit = fits.uncontended
  r.freshness.compactionCostFitAllSettings = fits.all
  log(`re-fitted compaction cost: ${fits.uncontended.perBucketMs.toFixed(0)} ms per bucket (task-threads ${fits.uncontended.fittedOn?.join(', ')}), ${fits.all.perBucketMs.toFixed(0)} ms over every setting; simulating`)
  r.simulation = simulate(r.contention, r.freshness, r.mode === 'quick')
  finish(r, doc)
}

/** Writes results.json and the charts, and the generated sections into `doc` when given. */
function finish(r: Results, doc: string | undefined): void {
  const { contention, freshness, simulation } = r
  mkdirSync(OUT_DIR, { recursive: true })
  const svgs = {
    freshness: writeFreshnessChart(freshness, 'freshness.svg'),
    contention: chart(
      join(OUT_DIR, 'commit-contention.svg'),
      contention.params.latenciesMs.flatMap((l) =>
        contention.params.paths.map((p) => ({
          label: `${p}, ${l} ms`,
          points: contention.summary.filter((s) => s.path === p && s.latencyMs === l).map((s) => [s.committers, s.commitsPerSecond] as [number, number]),
        })),
      ),
      'Writer batches committed per second on one table',
      'concurrent committers',
      'commits/s',
    ),
    simulation: chart(
      join(OUT_DIR, 'simulation.svg'),
      (['direct', 'folded'] as const).map((p) => ({
        label: `${p} commits`,
        points: simulation.points.filter((x) => x.path === p && x.taskThreads !== -1).map((x) => [Math.log2(x.slots), x.lagP50S / 60] as [number, number]),
      })),
      `Simulated freshness lag p50, ${SIM_BUCKETS} buckets`,
      'log2(task-threads)',
      'lag p50 (min)',
    ),
  }
  writeResults('results', { ...r, svgs })
  if (doc) writeDocs(r, doc)
  log(`wrote ${doc ? `${doc}, ` : ''}${join(OUT_DIR, 'results.json')} and ${Object.values(svgs).join(', ')} (measured in ${r.wallSeconds.toFixed(0)} s)`)
}

interface Results {
  mode: string
  machine: ReturnType<typeof machineInfo> & { busyProcessesAtStart: string[]; busyProcessesAtEnd: string[]; loadAvgAtEnd: number[] }
  wallSeconds: number
  contention: ContentionResult
  freshness: FreshnessResult
  simulation: SimulationResult
  /** set by --resimulate --latest-sweep: where the simulation's fold sweep came from */
  simulationSweepFrom?: string
}

/** The generated sections from one run's results, written into the Markdown file `path` (`--docs-only` renders them from results.json). */
function writeDocs(r: Results, path: string): void {
  let doc = existsSync(path) ? readFileSync(path, 'utf8') : '# Benchmarks\n'
  const m = r.machine
  doc = replaceSection(doc, 'header', headerSection(r.mode === 'quick', m, m.busyProcessesAtStart, m.busyProcessesAtEnd, m.loadAvgAtEnd, r.wallSeconds))
  doc = replaceSection(doc, 'contention', contentionSection(r.contention))
  // a budget measured alone (--freshness-budget) outlives a render of results without one
  const kept = /<!-- freshness-budget:begin -->\n([\s\S]*?)\n<!-- freshness-budget:end -->/.exec(doc)?.[1]
  doc = replaceSection(doc, 'freshness', freshnessSection(r.freshness, m.nproc))
  if (kept && !r.freshness.runs.some((x) => x.budget)) doc = replaceSection(doc, 'freshness-budget', kept)
  doc = replaceSection(doc, 'simulation', simulationSection(r.simulation, r.freshness, r.contention, r.simulationSweepFrom))
  writeFileSync(path, doc)
}

function headerSection(quick: boolean, m: ReturnType<typeof machineInfo>, busyStart: string[], busyEnd: string[], loadEnd: number[], wall: number): string {
  return [
    `Figures below the header, contention, freshness and simulation markers are written by \`npm run bench${quick ? ' -- --quick' : ''}\` (${quick ? 'the quick run: shorter windows, fewer settings, one repetition' : 'the full run'}), in ${Math.round(wall)} s. Reproduce with \`npm run bench\` (full) or \`npm run bench -- --quick\` (about 4 minutes on 2 cores); each benchmark also runs alone: \`npx tsx bench/commit-contention.ts\`, \`npx tsx bench/freshness.ts\`. Every figure is in \`bench/out/results.json\`; charts: \`bench/out/commit-contention.svg\`, \`bench/out/freshness.svg\`, \`bench/out/simulation.svg\` (bench/out is not committed).`,
    '',
    machineMarkdown(m),
    '',
    `**This machine was shared while the figures were taken**: load average ${m.loadAvgAtStart.join(', ')} at start and ${loadEnd.join(', ')} at the end on ${m.nproc} cores; other processes above 10% CPU at start: ${busyStart.join(', ') || 'none'}; at the end: ${busyEnd.join(', ') || 'none'} (the bench's own children among them). Absolute times are therefore pessimistic and noisy; compare the ratios measured side by side within one run.`,
  ].join('\n')
}

function contentionSection(c: ContentionResult): string {
  const lat = REALISTIC_MS
  const col = c.collapse[lat]
  const top = Math.max(...c.params.committers)
  const row = (path: string, n: number) => c.summary.find((s) => s.path === path && s.latencyMs === lat && s.committers === n)
  const d1 = row('direct', 1)
  const dTop = row('direct', top)
  const deployed = c.params.committerConcurrency !== undefined
  // senders learn of their landing from the snapshot chain (absent: a receipt per message)
  const chain = c.params.landingSeenFrom === 'snapshot chain'
  // the tables show the realistic latency; the other latencies' rows stay in results.json
  const shown = c.params.latenciesMs.includes(lat) ? [lat] : c.params.latenciesMs
  const others = c.params.latenciesMs.filter((l) => !shown.includes(l))
  const latencyWords = (ls: number[]) => ls.map((l) => (l === 0 ? 'without added latency' : `with ${l} ms first-byte latency on every request`)).join(' and ')
  const runs = c.params.runs
  return [
    '## Commit contention',
    '',
    `N independent \`Table\` handles on one table (N writers) each call \`writeBatch\` with ${c.params.rowsPerBatch} rows (one bucket) in a loop for ${c.params.seconds} s, each waiting for its commit before the next batch. Embedded S3 and SQS ${latencyWords(shown)}${others.length ? ` (the run also measures them ${latencyWords(others)}; those rows are in \`bench/out/results.json\`)` : ''}${c.params.backend === 'child process' ? ', served from a child process of its own' : ''}; median of ${runs} run${runs === 1 ? '' : 's'}. Three commit paths:`,
    '',
    '- **direct**: every batch creates its own snapshot through `FileStoreCommit`, racing the others for `snapshot-N` (conditional create, backoff 10 ms·2^n ±20%, `commit.max-retries` 10): a table without a commit queue.',
    '- **folded**: an in-process prototype of folding without the queue: writers hand their commit request to one committer in the same process, which folds every request waiting into one snapshot. No SQS, no receipts, one committer: the ceiling of folding here.',
    !deployed
      ? '- **queued**: (these results predate the deployed-path benchmark: one committer loop, no receipts.)'
      : chain
        ? `- **queued**: the path the stack deploys. Each writer commits through a \`QueuedCommitter\` on a real embedded SQS FIFO queue, then follows the snapshot chain in S3 until a snapshot names its commit (probes from ${c.params.firstPollMs} ms, growing ×1.5 to ${c.params.maxPollMs ?? 100} ms). The committer function runs in worker-thread environments behind the local event-source poller, at most ${c.params.committerConcurrency} at once (the stack's maxConcurrency), and folds in rounds (docs/design.md, "How a commit travels").`
        : `- **queued**: the path the stack deployed when these results were taken. Each writer commits through a \`QueuedCommitter\` (lib/commit/queued-committer.ts) on a real embedded SQS FIFO queue (each message its own group), then polls its receipt in S3 (first poll after ${c.params.firstPollMs} ms, growing ×1.5 to ${c.params.maxPollMs ?? 'QueuedCommitter\'s default'} ms). The committer function (functions/committer.ts) runs in worker-thread execution environments behind the local event-source poller, at most ${c.params.committerConcurrency} at once (the stack's maxConcurrency): each invocation gets up to 10 messages, drains the queue beyond them, folds everything into one snapshot, writes the receipts and deletes what it drained.`,
    '',
    'At the end of every point the table\'s latest snapshot and total record count must equal what the committers and writers were told, or the benchmark fails.',
    '',
    contentionMarkdown(c, shown),
    '',
    col && d1 && dTop
      ? col.collapsed
        ? `**Direct commits collapse.** With ${lat} ms per request, one writer lands ${d1.commitsPerSecond.toFixed(1)} commits/s (a commit takes ${c.singleCommitMs[lat].toFixed(0)} ms: about a dozen dependent S3 requests plus CPU); the peak is ${col.peakCommitsPerSecond.toFixed(1)}/s at ${col.peakAt} writer(s), and ${top} writers land ${dTop.commitsPerSecond.toFixed(1)}/s with ${dTop.retriesPerCommit.toFixed(1)} lost races per commit. Every lost race redoes the read of the latest snapshot and rewrites the base manifest list, and the backoff grows, so adding writers lowers throughput instead of raising it.`
        : `Direct commits did not collapse in this run: the peak was ${col.peakCommitsPerSecond.toFixed(1)} commits/s at ${col.peakAt} writers and ${top} writers landed ${dTop.commitsPerSecond.toFixed(1)}/s (${dTop.retriesPerCommit.toFixed(1)} lost races per commit).`
      : '',
    ...(c.target ? ['', targetMarkdown(c)] : []),
  ].join('\n')
}

const label = (t: number) => (t === -1 ? '-1' : String(t))

function freshnessSection(f: FreshnessResult, cores: number): string {
  const fit = f.compactionCostFit
  return [
    '## Freshness lag vs `compaction.task-threads` (measured, local runtime)',
    '',
    `One run, one setting after another, each on a fresh local runtime (embedded S3 + SQS, the real writer and compactor handlers in worker threads behind event-source pollers; compactor concurrency mapped from \`compaction.task-threads\` as the CDK stack maps it): a deletion-vector table with ${f.params.buckets} buckets, ${f.params.rate} upserts/s of random keys from 200,000 for ${f.params.seconds} s through the ingest queue, ${f.params.writerConcurrency} writer invocations at most, ${f.params.writerBatchingWindowMs / 1000} s batching window, so each writer commit adds an L0 file to most buckets and enqueues a job for each. Settings: ${f.params.settings.map((s) => (s === -1 ? '-1' : s)).join(', ')}${f.params.settings.length < 6 ? ' (the quick run; the full run adds the others of 1, 2, 3, 4, 8, -1)' : ''}.`,
    '',
    `S3 model (local/embedded.ts \`TransferModel\`): every S3 request waits ${f.params.s3.firstByteMs} ms before it is handled (first-byte latency), then its request and response bodies move at ${(f.params.s3.bytesPerSecond / 2 ** 20).toFixed(0)} MiB/s per request (parallel requests each get their own cap, as S3 connections do); SQS gets no added latency. With it a compaction is bound by dependent S3 round trips and by how many compactions run at once, not by this machine's ${cores} cores.`,
    '',
    'Freshness lag is `tableStatus().maxFreshnessLagMs`: the age of the oldest L0 file of any bucket (rows deletion-vector readers cannot see yet), sampled every second during the load; "peak L0 files per bucket" is the most L0 files one bucket had at a sample.',
    '',
    ...(f.runs.some((r) => r.committerInvocations !== undefined)
      ? [
          'Writers and compactors commit through the table\'s committer, as deployed, so a compaction\'s time includes its commit. "Lag steady": the last third\'s lag p50 at most 20% + 2 s above the middle third\'s. Recompactions are compactions redone after a conflicting or failed commit.',
          '',
        ]
      : []),
    freshnessMarkdown(f),
    '',
    `Per-bucket compaction cost (the simulation's input), least squares over the ${fit.invocations} compactor invocations of the task-threads ${fit.fittedOn?.join(', ') ?? 'all'} run, where one compactor ran at a time${fit.commitWaitExcluded ? ', less the time in which every compaction of an invocation only waited for its commit (the simulation models the commit path itself)' : ''}: ${fit.perBucketMs.toFixed(0)} ms per bucket compacted + ${fit.perJobMs.toFixed(0)} ms per coalesced job. ${f.compactionCostFitAllSettings ? `Fitted over every setting's ${f.compactionCostFitAllSettings.invocations} invocations it is ${f.compactionCostFitAllSettings.perBucketMs.toFixed(0)} ms: at higher settings the compactors share this machine's ${cores} cores, which a Lambda invocation with its own CPU does not, so at high settings CPU, not S3 round trips, caps the gain.` : `Worker threads share this machine's ${cores} cores, so at high settings CPU, not S3 round trips, caps the gain.`}`,
    '',
    (() => {
      const one = f.runs.find((r) => r.taskThreads === 1)
      const best = f.runs.reduce((a, b) => (b.lagP50Ms < a.lagP50Ms ? b : a))
      const failed = f.runs.filter((r) => r.compactorFailedRecords > 0)
      const parts: string[] = []
      if (one) {
        const tp = (r: (typeof f.runs)[number]) => compactionThroughput(r)
        const top = f.runs.reduce((a, b) => (tp(b) > tp(a) ? b : a))
        parts.push(`Compaction throughput rose from ${tp(one).toFixed(2)} buckets/s at 1 thread to ${f.runs.filter((r) => r !== one).map((r) => `${tp(r).toFixed(2)} at ${label(r.taskThreads)} (${(tp(r) / Math.max(1e-9, tp(one))).toFixed(1)}×)`).join(', ')}; the most was at ${label(top.taskThreads)}. Where it stops rising, this machine's cores, not the queue or S3, are the limit.`)
      }
      if (one && best.taskThreads === 1) {
        parts.push(`**In this run more task-threads did not lower the measured lag.** Per-bucket compaction time rose with concurrency (${f.runs.map((r) => `${r.perBucketCompactionMs.toFixed(0)} ms at ${label(r.taskThreads)}`).join(', ')}): the compactor worker threads, the writers and the other sessions' processes all shared ${cores} cores, so added compactors competed for CPU instead of overlapping S3 waits, and a ${f.params.seconds} s window is dominated by the first writer commits and worker start-up. The measured table shows this machine's limit, not the model's; the simulation below carries the measured costs to Lambda, where each invocation has its own CPU.`)
      } else if (one) {
        parts.push(`The lowest p50 was at task-threads ${label(best.taskThreads)}: ${(best.lagP50Ms / 1000).toFixed(1)} s against ${(one.lagP50Ms / 1000).toFixed(1)} s with 1 (${(one.lagP50Ms / Math.max(1, best.lagP50Ms)).toFixed(1)}×).`)
      }
      if (failed.length) parts.push(`Compactor jobs failed and were redelivered (no job reached the DLQ) at ${failed.map((r) => `${label(r.taskThreads)}: ${r.compactorFailedRecords}`).join(', ')}: the benchmark does not record why (lost commit races past \`commit.max-retries\`, as in the contention section, are the likely cause, not verified here).`)
      return parts.join('\n\n')
    })(),
    '',
    'Chart: `bench/out/freshness.svg` (lag over time, one line per setting).',
    '',
    '### Freshness budget',
    '',
    // its own markers: `--freshness-budget` re-measures it alone, in a shorter run
    `<!-- freshness-budget:begin -->\n${f.runs.some((r) => r.budget) ? `From the run above.\n\n${budgetSection(f)}` : 'Not measured by the run above: `npx tsx bench/run.ts --freshness-budget` measures it.'}\n<!-- freshness-budget:end -->`,
  ].join('\n')
}

/**
 * `--freshness-budget`: the freshness benchmark alone at the given settings and window, its
 * budget written between the freshness-budget markers (inside the freshness section, whose
 * other figures and the simulation calibrated from them stay as they are) and its results
 * to bench/out/freshness-budget.json.
 */
async function freshnessBudgetOnly(doc: string | undefined, seconds: number, settingsArg: string): Promise<void> {
  const settings = settingsArg ? settingsArg.split(',').map(Number) : [1, 4, -1]
  if (settings.some((x) => !Number.isInteger(x) || (x < 1 && x !== -1))) throw new Error(`--settings: expected task-threads values separated by commas, got ${settingsArg}`)
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const machine = machineInfo(['fauxqs', '@aws-sdk/client-s3', '@aws-sdk/client-sqs', 'tsx'])
  const started = Date.now()
  const f = await runFreshness({ quick: false, seconds, settings, log })
  const loadEnd = loadavg().map((x) => Math.round(x * 100) / 100)
  mkdirSync(OUT_DIR, { recursive: true })
  const { runs, ...rest } = f
  writeFileSync(join(OUT_DIR, 'freshness-budget.json'), JSON.stringify({ machine, loadAvgAtEnd: loadEnd, wallSeconds: (Date.now() - started) / 1000, ...rest, runs: runs.map(({ samples: _s, invocations: _i, committers: _c, ...r }) => r) }, null, 2))
  const body = [
    `Measured alone by \`npx tsx bench/run.ts --freshness-budget --freshness-seconds ${seconds} --settings ${settings.join(',')}\` (${Math.round((Date.now() - started) / 1000)} s): the run above's table, load and S3 model, ${seconds} s per setting. Load average ${machine.loadAvgAtStart.join(', ')} at start and ${loadEnd.join(', ')} at the end on ${machine.nproc} cores (other sessions shared the machine). Lag p50 per setting in this run: ${runs.map((r) => `${r.taskThreads === -1 ? '-1' : r.taskThreads}: ${(r.lagP50Ms / 1000).toFixed(1)} s`).join(', ')}.`,
    ...(Math.max(...machine.loadAvgAtStart, ...loadEnd) > 2 * machine.nproc
      ? ['', `**The machine was saturated** (load above twice its ${machine.nproc} cores): every function waited for CPU, its first invocations for their cold starts, so each stage here measures that wait, and a lag p50 of 0 s means the writes had not landed for most of the window. These figures say where this machine's time went, not how close the design comes to its floor; rerun on a quiet machine.`]
      : []),
    '',
    budgetSection(f),
  ].join('\n')
  if (doc) {
    writeFileSync(doc, replaceSection(readFileSync(doc, 'utf8'), 'freshness-budget', body))
    log(`wrote the freshness budget into ${doc}`)
  } else console.log(body)
}

/** The simulation's folded commit path in words, as its calibration models it. */
function foldedBullet(c: SimCalibration, contention: ContentionResult): string {
  if (c.rounds && c.receiptBaseMs === undefined && c.foreignRoundBaseMs !== undefined) return roundsBullet(c, contention)
  const head = c.committerLease
    ? '- folded commits, the deployed design: writers and compactors send commit messages; one committer invocation folds at a time (the committer lease: the event source\'s second invocation forwards its batches to the queue, an extra hop not modelled)'
    : `- folded commits, the deployed design: writers and compactors send commit messages; ${c.committers ?? 1} committer invocation(s) at most`
  const idle = `idle ${(c.committerOverheadMs ?? 0).toFixed(0)} ms between invocations (the poller's delete and next receive)`
  if (c.rounds && c.receiptBaseMs === undefined) {
    // the first round's cost is in foldSource when the calibration came from steadyRounds
    const first = c.firstRoundBaseMs !== undefined && !c.foldSource ? `; a cold invocation's first round costs ${c.firstRoundBaseMs.toFixed(0)} ms + ${(c.firstRoundPerCommitMs ?? c.foldPerCommitMs).toFixed(2)} ms per message (its whole first drain)` : ''
    return `${head}; each round folds every message waiting (up to ${c.drainMax ?? 1000}) at ${c.foldBaseMs.toFixed(0)} ms + ${c.foldPerCommitMs.toFixed(2)} ms per message, and a committer that finds messages waiting when its round has landed folds them at once${c.foldSource ? ` (${c.foldSource})` : ''}${first}; ${idle}. A compactor keeps its slot and its bucket until the snapshot that lands its commit exists and ${(c.receiptWaitMs ?? 0).toFixed(0)} ms more, the measured wait of a sender's probe of the snapshot chain for its landing; no receipt is written for a landing.`
  }
  return `${head}, each folding every message waiting when it starts (up to ${c.drainMax ?? 1000}) at ${c.foldBaseMs.toFixed(0)} ms + ${c.foldPerCommitMs.toFixed(2)} ms per message (${c.foldSource ?? 'the folding prototype\'s fit'})${c.receiptBaseMs !== undefined ? `; a committer that finds messages waiting after a round folds them at once, while that round's receipts and deletes (${c.receiptBaseMs.toFixed(0)} ms + ${(c.receiptPerCommitMs ?? 0).toFixed(2)} ms per message) are written` : ''}; ${idle}; a compactor keeps its slot and its bucket until its commit has landed${c.receiptBaseMs !== undefined ? ', its receipt is written,' : ''} and it has read its receipt ${(c.receiptWaitMs ?? 0).toFixed(0)} ms later (the measured poll wait).`
}

/**
 * The folded commit path of a calibration by committer rounds, with the costs of a round
 * after the other committer's snapshot (steadyRounds): what the deployed committer does.
 */
function roundsBullet(c: SimCalibration, contention: ContentionResult): string {
  const fit = (base: number, perMessage: number, d = 2) => `${base.toFixed(0)} ms + ${perMessage.toFixed(d)} ms`
  const who = c.committerLease ? 'one committer invocation folds at a time (the lease)' : `${c.committers ?? 1} committer invocations fold at once at most`
  const first = c.firstRoundBaseMs !== undefined ? `; a cold invocation's first round ${fit(c.firstRoundBaseMs, c.firstRoundPerCommitMs ?? c.foldPerCommitMs)} per message` : ''
  const deletes = c.settleBaseMs !== undefined ? `; deletes (${fit(c.settleBaseMs, c.settlePerCommitMs ?? 0)} per message) go on behind the next round` : ''
  const contended = contention.queuedRoundFit?.[REALISTIC_MS]
  const writersRuns =
    contended && contended.snapshots > 0 && Number.isFinite(contended.baseMs)
      ? ` The writers' runs at ${REALISTIC_MS} ms measured a round at ${fit(contended.baseMs, contended.perCommitMs, 1)} per message with ${Math.max(...contention.params.committers)} writers sharing the CPU; not used, since a Lambda committer has its own CPU.`
      : ''
  return (
    `- folded commits, the deployed design: ${who}; each round folds every message waiting (up to ${c.drainMax ?? 1000}) at the fold sweep's COMPACT cost, ${fit(c.foldBaseMs, c.foldPerCommitMs)} per message after its own snapshot and ${fit(c.foreignRoundBaseMs!, c.foreignRoundPerCommitMs ?? c.foldPerCommitMs)} after the other committer's` +
    `${c.lostRaceMs !== undefined ? ` (a lost race for \`snapshot-N\` costs ${c.lostRaceMs.toFixed(0)} ms more)` : ''}${first}${deletes}; idle ${(c.committerOverheadMs ?? 0).toFixed(0)} ms between invocations.` +
    ` A compactor keeps its slot until the snapshot that lands its commit exists and ${(c.receiptWaitMs ?? 0).toFixed(0)} ms more (a sender's measured probe wait).${writersRuns}`
  )
}

function simulationSection(s: SimulationResult, f: FreshnessResult, contention: ContentionResult, sweepFrom?: string): string {
  const c = s.calibration
  const at = (path: string, k: number) => s.points.find((p) => p.path === path && p.taskThreads === k)
  const firstCommitBound = s.points.find((p) => p.path === 'direct' && p.bottleneck === 'commit path')
  const measured = (k: number) => f.runs.find((r) => r.taskThreads === k)
  const lagOf = (k: number) => {
    const m = measured(k)
    return m ? `${(m.lagP50Ms / 1000).toFixed(1)} s` : 'not run'
  }
  const tpOf = (k: number) => {
    const m = measured(k)
    const one = measured(1)
    return m && one ? `${(compactionThroughput(m) / Math.max(1e-9, compactionThroughput(one))).toFixed(1)}×` : 'not run'
  }
  const fmt = (x?: { lagP50S: number; lagGrowthPerS?: number }) =>
    !x ? '-' : (x.lagGrowthPerS ?? 0) > 0.5 ? 'unbounded (grows ~1 s/s)' : x.lagP50S >= 120 ? `${(x.lagP50S / 60).toFixed(1)} min` : `${x.lagP50S.toFixed(1)} s`
  const unbounded = (x: { lagGrowthPerS: number }) => x.lagGrowthPerS > 0.5
  const ratio = (a?: SimulationResult['points'][number], b?: SimulationResult['points'][number]) =>
    !a || !b || b.lagP50S <= 0 ? '-' : unbounded(a) || unbounded(b) ? (unbounded(b) ? 'both unbounded' : 'bounded; 1 thread is not') : `${(a.lagP50S / b.lagP50S).toFixed(1)}×`
  return [
    '## Beyond this machine: simulated 1,024 buckets on Lambda',
    '',
    `A discrete-event model (bench/simulate.ts, seed ${s.options.seed}, ${s.options.seconds} simulated seconds after ${s.options.warmupSeconds} s warm-up, Lambda concurrency ${s.options.lambdaConcurrency}) of one table with ${s.options.buckets} buckets, calibrated with this run's measurements:`,
    '',
    `- write load as in the freshness run, per bucket: ${c.writerCommitsPerSecond.toFixed(2)} writer commits/s, each touching a bucket with probability ${c.touchProbability.toFixed(2)} (${f.params.rate} rows/s over ${f.params.buckets} buckets); the table-wide load therefore grows with the buckets;`,
    `- compaction of one bucket: ${c.perBucketMs.toFixed(0)} ms + ${c.perJobMs.toFixed(0)} ms per coalesced job (≤ 10 per invocation, the FIFO batch), ±20% jitter, fitted on the freshness run's task-threads ${f.compactionCostFit.fittedOn?.join(', ') ?? ''} invocations${f.compactionCostFit.commitWaitExcluded ? ' less their commit waits' : ''}; a compactor compacts up to ${c.bucketsAtOnce ?? 1} bucket${(c.bucketsAtOnce ?? 1) === 1 ? '' : 's'} of its batch at once;`,
    `- direct commits: the commit path completes waiting commits at the rate the contention benchmark measured for that many concurrent committers at ${REALISTIC_MS} ms (${c.directCurve.map((d) => `${d.committers}: ${d.commitsPerSecond.toFixed(1)}/s`).join(', ')}); a compactor holds its slot until its commit lands;`,
    foldedBullet(c, contention),
    ...(sweepFrom ? ['', `**Re-simulated** with ${sweepFrom}.`] : []),
    ...(s.notes?.length ? ['', ...s.notes.map((n) => `**Calibration note**: ${n}.`)] : []),
    '',
    c.rounds
      ? `Not modelled, so the model is optimistic for both paths: compaction commits heavier than the appends the direct curve was measured with; folds larger than the fold sweep's; ${c.lostRaceMs !== undefined ? 'the varying cost of lost races; which committer receives which message' : 'the lost races between the two committers (the round is measured with one)'}; an invocation's rounds ending after \`STRATA_COMMIT_ROUNDS_MS\`; cold starts; S3 request rates per prefix and per key; writers waiting for their own landings (the write load is open loop).`
      : 'Not modelled, so the model is optimistic for both paths: compaction commits heavier than the appends the direct curve was measured with; folds larger than the fold sweep\'s; cold starts; S3 request rates per prefix (every compaction adds a receipt PUT and receipt GETs); writers waiting for their own receipts (the write load is open loop).',
    '',
    simulationMarkdown(s),
    '',
    firstCommitBound
      ? `With direct commits the commit path, not compaction, is the bottleneck from task-threads ${firstCommitBound.taskThreads} on: the table cannot create more than ~${Math.max(...c.directCurve.map((d) => d.commitsPerSecond)).toFixed(1)} snapshots/s, writers need ${c.writerCommitsPerSecond.toFixed(1)} of them, and every compaction needs one more, so more compactor slots only queue at the commit path. Folding removes that limit: one snapshot carries every commit that arrived while the previous one was being created.`
      : 'With direct commits the commit path did not saturate at any setting in this run.',
    '',
    (() => {
      const folded = s.points.filter((p) => p.path === 'folded')
      const best = folded.reduce((a, b) => (b.lagP50S < a.lagP50S ? b : a))
      const steady = folded.find((p) => p.lagGrowthPerS <= 0.05)
      return `With folded commits the lowest p50 is ${fmt(best)} at task-threads ${best.taskThreads} (${best.slots} slots, bottleneck: ${best.bottleneck}); the first setting whose lag stops growing is ${steady ? steady.taskThreads : 'none of them'}. The direct path's best p50 is ${fmt(s.points.filter((p) => p.path === 'direct').reduce((a, b) => (b.lagP50S < a.lagP50S ? b : a)))}.`
    })(),
    '',
    '### The seed\'s headline, side by side',
    '',
    'The seed reported, for a Paimon deletion-vector table under one write load, a read delay of ~40 min with 1 compaction thread, ~20 with 2 and ~8 with 3. Its load, bucket count and hardware are not known, so only the shape compares, not the minutes.',
    '',
    markdownTable(
      ['task-threads', 'Paimon (seed, reported)', `Strata measured, ${f.params.buckets} buckets, lag p50`, 'measured compaction throughput vs 1 thread', `Strata simulated, ${s.options.buckets} buckets, direct, lag p50`, 'simulated, folded', 'simulated, folded, vs 1 thread'],
      [
        [1, '~40 min', lagOf(1), '-', fmt(at('direct', 1)), fmt(at('folded', 1)), '-'],
        [2, '~20 min (2×)', lagOf(2), tpOf(2), fmt(at('direct', 2)), fmt(at('folded', 2)), ratio(at('folded', 1), at('folded', 2))],
        [3, '~8 min (5×)', lagOf(3), tpOf(3), fmt(at('direct', 3)), fmt(at('folded', 3)), ratio(at('folded', 1), at('folded', 3))],
        ['-1 (one per bucket, ≤ 1,000)', 'n/a', lagOf(-1), tpOf(-1), fmt(at('direct', -1)), fmt(at('folded', -1)), ratio(at('folded', 1), at('folded', -1))],
      ],
    ),
    '',
    'Chart: `bench/out/simulation.svg` (lag p50 against log2 task-threads, direct and folded).',
  ].join('\n')
}

main().then(
  () => process.exit(0),
  (e) => {
    process.stderr.write(`bench failed: ${(e as Error).stack ?? e}\n`)
    process.exit(1)
  },
)
