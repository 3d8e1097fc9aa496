// V8's compile work in a cold compactor's first job, counted: builds bench/compaction.ts's
// full-compaction fixture once (1M rows in 5 runs, kept under --fixture), bundles the cold
// entry as cold-levers.ts does, and runs it in new processes under `--trace-opt
// --trace-deopt`, counting the optimizations (OSR apart) and deoptimizations, with the main
// thread's and the process's CPU. The counts do not depend on the machine's load as times do.
//
//   npx tsx bench/lib/cold-trace.ts [--node /path/to/node] [--runs 3] [--fixture DIR] [--top 20]
//                                   [--no-trace]   (CPU only: tracing costs CPU itself)

import { spawnSync } from 'node:child_process'
import { cpSync, existsSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { FUNCTION_PROCESS_ENVIRONMENT } from '../../cdk/config.ts'
import { parseBenchArgs } from './args.ts'
import { buildColdEntries, type ColdReport } from './cold-levers.ts'
import { createBenchTable, loadBatches } from './dataset.ts'
import { OUT_DIR } from './report.ts'

const ROWS = 1_000_000
const RUNS = 5

interface Trace {
  optimized: number
  osr: number
  deopts: number
  byFunction: Map<string, { opt: number; deopt: number; reasons: Set<string> }>
}

function fnName(line: string): string {
  const m = /<JSFunction ([^ >]+)/.exec(line)
  return m ? m[1] : '?'
}

/** Counts a `--trace-opt --trace-deopt` log: completed TurboFan compiles, OSR ones apart, and deoptimizations. */
function countTrace(log: string): Trace {
  const t: Trace = { optimized: 0, osr: 0, deopts: 0, byFunction: new Map() }
  const at = (name: string) => t.byFunction.get(name) ?? t.byFunction.set(name, { opt: 0, deopt: 0, reasons: new Set() }).get(name)!
  for (const line of log.split('\n')) {
    if (line.startsWith('[completed compiling')) {
      if (/OSR/.test(line)) t.osr++
      else t.optimized++
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

async function main(): Promise<void> {
  const args = parseBenchArgs(process.argv.slice(2), ['--no-trace'], ['--runs', '--top'], ['--node', '--fixture'])
  const node = args.str('--node', process.execPath)
  const fixture = args.str('--fixture', join(tmpdir(), 'strata-cold-trace-fixture'))
  const trace = !args.has('--no-trace')
  await ensureFixture(fixture)
  // with the trace, identifiers stay unminified so the log names the functions
  const entries = await buildColdEntries(join(OUT_DIR, trace ? 'cold-trace' : 'cold-trace-min'), { readableNames: trace })
  const rows: string[] = []
  const childVersion = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim()
  for (let rep = 0; rep < args.num('--runs', 3); rep++) {
    const run = join(tmpdir(), `strata-cold-trace-run-${process.pid}`)
    cpSync(fixture, run, { recursive: true })
    const flags = trace ? ['--trace-opt', '--trace-deopt'] : []
    const env = { ...process.env, ...FUNCTION_PROCESS_ENVIRONMENT, NODE_OPTIONS: '--enable-source-maps' }
    const r = spawnSync(node, [...flags, entries.strata, run], { env, encoding: 'utf8', maxBuffer: 256 << 20 })
    rmSync(run, { recursive: true, force: true })
    if (r.status !== 0) throw new Error(`cold process failed: ${r.stderr}`)
    const json = r.stdout.split('\n').find((l) => l.startsWith('{"'))
    if (!json) throw new Error('no report')
    const rep0 = JSON.parse(json) as ColdReport
    const t = countTrace(r.stdout)
    if (trace && rep === 0) writeFileSync(join(OUT_DIR, 'cold-trace', `trace-${childVersion}.log`), r.stdout)
    const main = rep0.processMainCpuSeconds !== null && rep0.processMainCpuSeconds !== undefined ? rep0.processMainCpuSeconds - (rep0.readyMainCpuSeconds ?? 0) : NaN
    rows.push(`run ${rep + 1}: optimized ${t.optimized}, OSR ${t.osr}, deopts ${t.deopts}; job main-thread CPU ${main.toFixed(3)} s, job CPU ${rep0.cpuSeconds.toFixed(3)} s, start→done CPU ${rep0.processCpuSeconds.toFixed(3)} s (main ${rep0.processMainCpuSeconds?.toFixed(3)}), load ${rep0.loadAvg.toFixed(1)}, rows ${rep0.rowsOut}`)
    process.stderr.write(`${rows.at(-1)}\n`)
    if (trace && rep === 0) {
      const top = [...t.byFunction].filter(([, v]) => v.deopt > 0 || v.opt > 1).sort((a, b) => b[1].deopt - a[1].deopt || b[1].opt - a[1].opt)
      for (const [name, v] of top.slice(0, args.num('--top', 30))) process.stderr.write(`  ${name}: ${v.opt} compiles, ${v.deopt} deopts (${[...v.reasons].join('; ')})\n`)
    }
  }
}

await main()
