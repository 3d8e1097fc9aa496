// V8's compile work in a cold compactor's first job, counted: builds bench/compaction.ts's
// full-compaction fixture once (1M rows in 5 runs, kept under --fixture), bundles the cold
// entry as cold-levers.ts does, and runs it in new processes under `--trace-opt
// --trace-deopt`, counting the optimizations (OSR apart) and deoptimizations, with the main
// thread's and the process's CPU. The counts do not depend on the machine's load as times do.
//
//   npx tsx bench/lib/cold-trace.ts [--node /path/to/node] [--runs 3] [--fixture DIR] [--top 20]
//                                   [--no-trace]   (CPU only: tracing costs CPU itself)
//                                   [--against REV] (a second bundle with the lib/ files commits since git REV
//                                                    changed as they were at REV, run in turn with the
//                                                    working tree's: medians of both)

import { execFileSync, spawnSync } from 'node:child_process'
import { cpSync, existsSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { FUNCTION_PROCESS_ENVIRONMENT } from '../../cdk/config.ts'
import { parseBenchArgs } from './args.ts'
import { buildColdEntries, type ColdReport } from './cold-levers.ts'
import { createBenchTable, loadBatches } from './dataset.ts'
import { OUT_DIR } from './report.ts'
import { median } from './stats.ts'

const ROWS = 1_000_000
const RUNS = 5
/** the fixture's live keys: the rows every full compaction of it writes (docs/benchmarks.md "Compaction") */
const LIVE_KEYS = 494_848

interface Trace {
  optimized: number
  osr: number
  deopts: number
  /** the compiles' milliseconds on the compile threads (V8's second figure, all isolates), which grow with the machine's load */
  compileMs: number
  byFunction: Map<string, { opt: number; deopt: number; reasons: Set<string> }>
  log: string
}

function fnName(line: string): string {
  const m = /<JSFunction ([^ >]+)/.exec(line)
  return m ? m[1] : '?'
}

/** Counts a `--trace-opt --trace-deopt` log: completed TurboFan compiles, OSR ones apart, and deoptimizations. */
function countTrace(log: string): Trace {
  const t: Trace = { optimized: 0, osr: 0, deopts: 0, compileMs: 0, byFunction: new Map(), log }
  const at = (name: string) => t.byFunction.get(name) ?? t.byFunction.set(name, { opt: 0, deopt: 0, reasons: new Set() }).get(name)!
  for (const line of log.split('\n')) {
    if (line.startsWith('[completed compiling')) {
      if (/OSR/.test(line)) t.osr++
      else t.optimized++
      const took = / - took [0-9.]+, ([0-9.]+),/.exec(line)
      if (took) t.compileMs += Number(took[1])
      at(fnName(line)).opt++
    } else if (/^\[bailout \(kind: deopt-(eager|lazy|soft)/.test(line)) {
      t.deopts++
      const f = at(fnName(line))
      f.deopt++
      const reason = /reason: ([^)]+)\)/.exec(line)
      if (reason) f.reasons.add(reason[1])
    }
  }
  return t
}

async function ensureFixture(dir: string): Promise<void> {
  if (existsSync(join(dir, 'bucket-0'))) return
  rmSync(dir, { recursive: true, force: true })
  const table = await createBenchTable(dir, { buckets: 1, deletionVectors: false, options: {} })
  await loadBatches(table, { keySpace: (ROWS * 3) / 5, batches: Array.from({ length: RUNS }, () => ROWS / RUNS), deleteRatio: 0.05, seed: 20_260_501 })
}

/** An esbuild plugin that loads the files under lib/ that commits since git `rev` changed as they were at `rev` (the rest as they are). */
function libAt(rev: string): import('esbuild').Plugin {
  const root = join(import.meta.dirname, '..', '..')
  const changed = new Set(execFileSync('git', ['diff', '--name-only', rev, 'HEAD', '--', 'lib'], { cwd: root, encoding: 'utf8' }).split('\n').filter(Boolean))
  return {
    name: `lib-at-${rev}`,
    setup(b) {
      b.onLoad({ filter: /\.ts$/ }, (a) => {
        const rel = relative(root, a.path)
        return changed.has(rel) ? { contents: execFileSync('git', ['show', `${rev}:${rel}`], { cwd: root, encoding: 'utf8' }), loader: 'ts' } : undefined
      })
    },
  }
}

interface Measured {
  trace: Trace
  jobMain: number
  main: number
  cpu: number
}

async function main(): Promise<void> {
  const args = parseBenchArgs(process.argv.slice(2), ['--no-trace'], ['--runs', '--top'], ['--node', '--fixture', '--against'])
  const node = args.str('--node', process.execPath)
  const fixture = args.str('--fixture', join(tmpdir(), 'strata-cold-trace-fixture'))
  const trace = !args.has('--no-trace')
  const against = args.str('--against', '')
  await ensureFixture(fixture)
  // with the trace, identifiers stay unminified so the log names the functions
  const outdir = join(OUT_DIR, trace ? 'cold-trace' : 'cold-trace-min')
  const builds = [{ label: 'working tree', entry: (await buildColdEntries(outdir, { readableNames: trace })).strata, runs: [] as Measured[] }]
  if (against !== '') builds.unshift({ label: `lib/ changes since ${against} undone`, entry: (await buildColdEntries(`${outdir}-against`, { readableNames: trace, plugins: [libAt(against)] })).strata, runs: [] })
  const childVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim()
  for (let rep = 0; rep < args.num('--runs', 3); rep++) {
    for (const build of builds) {
      const m = runOnce(node, build.entry, fixture, trace)
      build.runs.push(m)
      const t = m.trace
      process.stderr.write(`${build.label}, run ${rep + 1}: optimized ${t.optimized}, OSR ${t.osr}, deopts ${t.deopts}, compile ${t.compileMs.toFixed(0)} ms; job main-thread CPU ${m.jobMain.toFixed(3)} s, start→done CPU ${m.cpu.toFixed(3)} s (main ${m.main.toFixed(3)}), load ${loadavg()[0].toFixed(1)}\n`)
      if (trace && rep === 0 && build === builds.at(-1)) {
        writeFileSync(join(OUT_DIR, 'cold-trace', `trace-${childVersion}.log`), t.log)
        const top = [...t.byFunction].filter(([, v]) => v.deopt > 0 || v.opt > 1).sort((a, b) => b[1].deopt - a[1].deopt || b[1].opt - a[1].opt)
        for (const [name, v] of top.slice(0, args.num('--top', 30))) process.stderr.write(`  ${name}: ${v.opt} compiles, ${v.deopt} deopts (${[...v.reasons].join('; ')})\n`)
      }
    }
  }
  for (const { label, runs } of builds) {
    const med = (f: (m: Measured) => number) => median(runs.map(f))
    process.stderr.write(`${label}, medians of ${runs.length}: ${trace ? `optimized ${med((m) => m.trace.optimized)}, OSR ${med((m) => m.trace.osr)}, deopts ${med((m) => m.trace.deopts)}, compile ${med((m) => m.trace.compileMs).toFixed(0)} ms; ` : ''}job main-thread CPU ${med((m) => m.jobMain).toFixed(3)} s, start→done main ${med((m) => m.main).toFixed(3)} s, process ${med((m) => m.cpu).toFixed(3)} s\n`)
  }
}

/** One cold process of `entry` on a fresh copy of the fixture. */
function runOnce(node: string, entry: string, fixture: string, trace: boolean): Measured {
  const run = join(tmpdir(), `strata-cold-trace-run-${process.pid}`)
  cpSync(fixture, run, { recursive: true })
  const flags = trace ? ['--trace-opt', '--trace-deopt'] : []
  const env = { ...process.env, ...FUNCTION_PROCESS_ENVIRONMENT, NODE_OPTIONS: '--enable-source-maps' }
  const r = spawnSync(node, [...flags, entry, run], { env, encoding: 'utf8', maxBuffer: 256 << 20 })
  rmSync(run, { recursive: true, force: true })
  if (r.status !== 0) throw new Error(`cold process failed: ${r.stderr}`)
  const json = r.stdout.split('\n').find((l) => l.startsWith('{"'))
  if (!json) throw new Error('no report')
  const rep = JSON.parse(json) as ColdReport
  if (rep.rowsOut !== LIVE_KEYS) throw new Error(`cold process wrote ${rep.rowsOut} rows, expected ${LIVE_KEYS}`)
  const main = rep.processMainCpuSeconds ?? NaN
  return { trace: countTrace(r.stdout), jobMain: main - (rep.readyMainCpuSeconds ?? 0), main, cpu: rep.processCpuSeconds }
}

await main()
