// A cold compactor's first job against DuckDB's cold start, and the levers measured on it:
// bench/compaction.ts bundles bench/lib/cold-strata.ts and cold-duckdb.ts as the functions
// are bundled (cdk/bundling.ts), then runs each variant below in a new Node process, side by
// side in one run. A lever is what a deployment could change at a cold start without touching
// the engine: Node's compile cache for the bundle, V8 tiering flags (as an exec wrapper or
// v8.setFlagsFromString would set them), the first job's pages compressed inline.

import { cpSync, existsSync, mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { BUNDLING, ESM_REQUIRE_BANNER } from '../../cdk/bundling.ts'
import { type ChildReport, runChild } from './child.ts'
import { markdownTable } from './report.ts'
import { median } from './stats.ts'

/** A cold process's figures (cold-strata.ts, cold-duckdb.ts): `seconds`/`cpuSeconds` are the job's. */
export interface ColdReport extends ChildReport {
  /** Strata's: compaction steps merged by columns (0 would mean the row merge ran) */
  columnarSteps?: number
  /** from the process's start to the job's start: Node, the code loaded (the table opened; DuckDB's instance made) */
  readySeconds: number
  readyCpuSeconds: number
  /** from the process's start to the job's end */
  processSeconds: number
  processCpuSeconds: number
  /** Strata's main thread alone (Linux), at ready and at the job's end: its critical path on a loaded machine */
  readyMainCpuSeconds?: number | null
  processMainCpuSeconds?: number | null
  rowsOut: number
}

/** One way of starting Strata's cold process. */
export interface ColdVariant {
  id: string
  label: string
  /** node options before the script (what an AWS_LAMBDA_EXEC_WRAPPER script would add) */
  nodeArgs: string[]
  /** added to the functions' environment */
  env: Record<string, string>
  /** run before each measured process (unmeasured), e.g. filling a compile cache */
  prepare?: () => Promise<void>
}

export interface ColdEntries {
  strata: string
  duckdb: string
}

/**
 * The cold-process entries, bundled as cdk/bundling.ts bundles the functions (ESM, its target,
 * minified, its banner, a linked source map), into `outdir` (under bench/out, so DuckDB's
 * packages, left out of the bundle, resolve from the repository's node_modules).
 */
export async function buildColdEntries(outdir: string, opts: { readableNames?: boolean; plugins?: import('esbuild').Plugin[] } = {}): Promise<ColdEntries> {
  const { build } = await import('esbuild')
  const entry = (name: string) => join(import.meta.dirname, `${name}.ts`)
  await build({
    entryPoints: { 'cold-strata': entry('cold-strata'), 'cold-duckdb': entry('cold-duckdb'), 'cold-jobs': entry('cold-jobs') },
    outdir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: BUNDLING.target,
    // readableNames (bench/lib/cold-trace.ts): functions keep their names in V8's traces
    ...(opts.readableNames ? { minifyWhitespace: BUNDLING.minify, minifySyntax: BUNDLING.minify } : { minify: BUNDLING.minify }),
    sourcemap: BUNDLING.sourceMap ? 'linked' : false,
    sourcesContent: BUNDLING.sourcesContent,
    banner: { js: BUNDLING.banner ?? ESM_REQUIRE_BANNER },
    external: ['@duckdb/*'],
    logLevel: 'warning',
    plugins: opts.plugins ?? [],
  })
  return { strata: join(outdir, 'cold-strata.mjs'), duckdb: join(outdir, 'cold-duckdb.mjs') }
}

/** Node's compile cache (module.enableCompileCache / NODE_COMPILE_CACHE) exists from Node 22.1. */
function hasCompileCache(): boolean {
  const [major, minor] = process.versions.node.split('.').map(Number)
  return major > 22 || (major === 22 && minor >= 1)
}

/**
 * The variants measured: the deployed configuration first, then each lever. `runOnce` runs
 * the Strata entry once with a variant's environment (to fill a compile cache).
 */
export function coldVariants(work: string, runOnce: (env: Record<string, string>) => Promise<void>): ColdVariant[] {
  const variants: ColdVariant[] = [{ id: 'deployed', label: 'Strata, as deployed (compactBucket defaults)', nodeArgs: [], env: {} }]
  if (hasCompileCache()) {
    const warm = join(work, 'compile-cache-warm')
    const miss = join(work, 'compile-cache-miss')
    variants.push(
      {
        id: 'compile-cache',
        label: "the same, Node's compile cache holding the bundle (the most a cache shipped with the bundle could save)",
        nodeArgs: [],
        env: { NODE_COMPILE_CACHE: warm },
        // one unmeasured run writes the cache at its exit; later runs read it
        prepare: async () => {
          if (existsSync(warm)) return
          mkdirSync(warm, { recursive: true })
          await runOnce({ NODE_COMPILE_CACHE: warm })
        },
      },
      {
        id: 'compile-cache-miss',
        label: "the same, Node's compile cache holding nothing for this Node (a shipped cache that does not match)",
        nodeArgs: [],
        env: { NODE_COMPILE_CACHE: miss },
        prepare: async () => rmSync(miss, { recursive: true, force: true }),
      },
    )
  }
  variants.push({ id: 'inline', label: "the same, the first job's pages compressed inline (no compression thread)", nodeArgs: [], env: { STRATA_BENCH_COMPRESSION_THREAD: 'off' } })
  variants.push({ id: 'semi-space', label: 'the same, NODE_OPTIONS --max-semi-space-size=64 (a young generation that grows to 64 MB: fewer scavenges)', nodeArgs: [], env: { NODE_OPTIONS: '--enable-source-maps --max-semi-space-size=64' } })
  // Node 20's and 22's V8 are built without Maglev ("Maglev is not enabled" under --allow-natives-syntax):
  // the flag changes nothing, so this row is the same process again, a control of the run's noise
  variants.push({ id: 'maglev', label: 'the same, V8 flag --maglev (accepted, but these Nodes are built without Maglev: the same process again, a control)', nodeArgs: ['--maglev'], env: {} })
  variants.push({ id: 'sparkplug', label: 'the same, V8 flag --always-sparkplug (baseline code at first call)', nodeArgs: ['--always-sparkplug'], env: {} })
  variants.push({ id: 'no-lazy-feedback', label: 'the same, V8 flag --no-lazy-feedback-allocation (type feedback from the first call)', nodeArgs: ['--no-lazy-feedback-allocation'], env: {} })
  return variants
}

export interface ColdRun {
  variant: ColdVariant
  reports: ColdReport[]
}

/** One cold process of a variant on a fresh copy of the table. */
export async function runColdStrata(entry: string, variant: ColdVariant, tableDir: string, runDir: string, baseEnv: NodeJS.ProcessEnv): Promise<ColdReport> {
  // the functions run with source maps on (cdk/constructs/strata-function.ts); baseEnv holds their process environment
  const env = { ...baseEnv, NODE_OPTIONS: '--enable-source-maps', ...variant.env }
  await variant.prepare?.()
  cpSync(tableDir, runDir, { recursive: true })
  try {
    const r = await runChild<ColdReport>(entry, [runDir], { env, built: true, nodeArgs: variant.nodeArgs })
    if (r.columnarSteps === 0) throw new Error(`the cold process (${variant.id}): expected the columnar merge, the row merge ran`)
    return r
  } finally {
    rmSync(runDir, { recursive: true, force: true })
  }
}

function med(reports: ColdReport[], pick: (r: ColdReport) => number): number {
  return median(reports.map(pick))
}

/** The cold table: every variant and DuckDB, medians, and start → done against DuckDB's. */
export function coldTable(runs: ColdRun[], duckdb: ColdReport[], duckdbLabel: string): string {
  const dWall = med(duckdb, (x) => x.processSeconds)
  const dCpu = med(duckdb, (x) => x.processCpuSeconds)
  const line = (label: string, s: ColdReport[]) => {
    const main = s.every((x) => typeof x.processMainCpuSeconds === 'number') ? `${med(s, (x) => x.readyMainCpuSeconds!).toFixed(2)} / ${med(s, (x) => x.processMainCpuSeconds!).toFixed(2)}` : '-'
    return [
      label,
      `${med(s, (x) => x.readySeconds).toFixed(2)} / ${med(s, (x) => x.readyCpuSeconds).toFixed(2)}`,
      `${med(s, (x) => x.seconds).toFixed(2)} / ${med(s, (x) => x.cpuSeconds).toFixed(2)}`,
      `${med(s, (x) => x.processSeconds).toFixed(2)} / ${med(s, (x) => x.processCpuSeconds).toFixed(2)}`,
      main,
      med(s, (x) => x.peakRssMb).toFixed(0),
      `**${(med(s, (x) => x.processSeconds) / dWall).toFixed(2)}** / ${(med(s, (x) => x.processCpuSeconds) / dCpu).toFixed(2)}`,
      s.every((x) => typeof x.processMainCpuSeconds === 'number') ? (med(s, (x) => x.processMainCpuSeconds!) / dCpu).toFixed(2) : '-',
      `${Math.min(...s.map((x) => x.loadAvg)).toFixed(1)}–${Math.max(...s.map((x) => x.loadAvg)).toFixed(1)}`,
    ]
  }
  return markdownTable(
    ['cold process', 'start → ready: wall / CPU s', 'the job: wall / CPU s', 'start → job done: wall / CPU s', 'main thread CPU s: ready / done', 'peak RSS (MB)', 'start → done ÷ DuckDB cold: wall / CPU', 'main thread CPU ÷ DuckDB CPU, start → done', 'load average'],
    [...runs.map((r) => line(r.variant.label, r.reports)), line(duckdbLabel, duckdb)],
  )
}
