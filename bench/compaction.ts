// Compaction throughput of one bucket, side by side in one run (medians of --runs):
// - full compaction of 1,000,000 rows in 5 sorted runs (5 level-0 files of 200k rows, each
//   upserting a random 200k of 600k keys, 5% deletes), deletion vectors off and on, each by
//   the default merge (columnar where supported, lib/lsm/columnar-merge.ts) and by the row
//   merge (`mergePath: 'row'`, the reference model), and the lift below both ways too;
// - the deletion-vector common case: a compacted top level of 600k rows plus 4 new level-0
//   runs of 100k rows, lifted by the force-up-level-0 pick with lookups into the top level;
// - the same full compaction on partial-update and aggregation tables (the same records,
//   deletes removing the row), columnar and by rows;
// - DuckDB doing the same merge (latest _SEQUENCE_NUMBER per key, deletes dropped, sorted,
//   COPY to Parquet) on the very same 5 Parquet files;
// - peak RSS against rows (1/4, 1/2, all of them in 5 runs) and against runs (10 runs);
// - the columnar full compaction (deletion vectors off) in a warm process too: the child
//   first compacts another copy of the same fixture, unmeasured, as a Lambda compactor's
//   second job runs (code compiled, heap grown), and after five such copies, as a busy
//   compactor's later jobs run (V8 has re-optimized what the second job's new closures and
//   maps deoptimized);
// - those three columnar jobs (fresh, second, sixth) again with the output's pages compressed
//   inline (`compressionThread: false`), beside the default, which compresses them on the
//   compression thread on a machine with two CPUs (lib/format/compression-thread.ts); each
//   job prints the row groups compressed on the thread and how long the writer waited for it;
// - a cold process, from its start: the columnar full compaction (deletion vectors off) as
//   the first job of a compactor bundled as the Lambda functions are (bench/lib/cold-strata.ts,
//   built with esbuild and cdk/bundling.ts's options, run with the functions' environment and
//   source maps on), beside DuckDB loading its native module and doing the same merge
//   (bench/lib/cold-duckdb.ts); each reports the job and the time from the process's start;
//   beside it, the same cold process with each start-up lever (bench/lib/cold-levers.ts:
//   Node's compile cache filled and missing, the first job's pages compressed inline, a larger
//   young generation, V8 tiering flags), every variant once per round, interleaved;
// - with --compression, the columnar full compaction (deletion vectors off) and DuckDB
//   single-threaded once per `file.compression` listed, each on a fixture written with that
//   codec (DuckDB writing the same codec and level), with input and output file sizes.
// Each job runs in a fresh child process on a fresh copy of a prebuilt table, and reports
// its own peak RSS (VmHWM; bench/lib/child.ts says why not maxRSS) and, on Linux, the CPU
// time of its main thread alone (/proc/thread-self/schedstat: the rest of a process's CPU is
// V8's collector and compiler threads and libuv's file reads); local disk, and the embedded
// S3 backend unless --no-s3. Strata's children start with the environment every deployed
// function starts with (FUNCTION_PROCESS_ENVIRONMENT, cdk/config.ts: glibc's mmap threshold
// fixed), unless this process has those variables set; DuckDB's with this process's.
//
//   npx tsx bench/compaction.ts [--quick] [--runs 3] [--no-s3] [--profile] [--heap-probe]
//                                [--compression snappy,zstd,zstd:3] [--no-function-env]
//                                [--cold-only] [--cold-variants compile-cache,maglev]
//
// --compression takes codecs of `file.compression` (none, snappy, gzip, zstd), zstd with an
// optional `:level` (`file.compression.zstd-level`, default 1 as Paimon's); zstd needs a Node
// whose node:zlib writes it (>= 22.15). Every other job runs at the table default (snappy).
// --quick divides every row count by 10. --profile also runs each local compaction once
// under `node --cpu-prof` (a warm job: V8's profiler over its measured compaction only) and
// prints where its CPU went. --heap-probe finds, for the
// rows/runs series, the smallest `--max-old-space-size` each compaction completes in.
// --no-function-env starts Strata's children without the deployed functions' environment
// (glibc's malloc as it comes: a dynamic mmap threshold). --cold-only builds the one fixture
// the cold processes compact and runs only them (and DuckDB's cold start); --cold-variants
// names the levers measured beside the deployed compactor (default: all of them).

import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import zlib from 'node:zlib'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { compressionThreadCounts } from '../lib/format/compression-thread.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import type { MergePathRequest } from '../lib/lsm/columnar-merge.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import { openStore } from '../lib/store/open-store.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { EmbeddedBackend } from '../local/embedded.ts'
import { parseBenchArgs } from './lib/args.ts'
import { type ChildReport, reportToParent, runChild, timed } from './lib/child.ts'
import { type ColdEntries, type ColdReport, type ColdRun, buildColdEntries, coldTable, coldVariants, runColdStrata } from './lib/cold-levers.ts'
import { duckdbSql } from './lib/duckdb-merge.ts'
import { clearStore, copyStore } from './lib/copy-store.ts'
import { summarizeCpuProfile, type ProfileSummary } from './lib/cpu-profile.ts'
import { type LoadPlan, NO_PARTITION, createBenchTable, loadBatches, loadCompactedBase } from './lib/dataset.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { OUT_DIR, markdownTable, writeResults } from './lib/report.ts'
import { count, median, rate } from './lib/stats.ts'
import { FUNCTION_PROCESS_ENVIRONMENT } from '../cdk/config.ts'

const PACKAGES = ['hyparquet', 'hyparquet-writer', 'hyparquet-compressors', '@duckdb/node-api', '@duckdb/node-bindings', 'fauxqs', '@aws-sdk/client-s3', 'tsx']
const DELETE_RATIO = 0.05
const SEED = 20_260_501
const SMALL_TARGET = '8 mb'
/** the other engines' tables: the same records, deletes removing the row */
const ENGINE_OPTIONS = {
  'partial-update': { 'merge-engine': 'partial-update', 'partial-update.remove-record-on-delete': 'true' },
  aggregation: { 'merge-engine': 'aggregation', 'aggregation.remove-record-on-delete': 'true', 'fields.qty.aggregate-function': 'sum', 'fields.price.aggregate-function': 'max' },
} satisfies Record<string, Record<string, string>>
const SMALL_SUFFIX = '-8mb'

interface CompactReport extends ChildReport {
  rowsIn: number
  rowsOut: number
  rowsDeletedByVector: number
  inputFiles: number
  outputFiles: number
  outputLevel: number | null
  columnarSteps: number
  /** bytes of the data files the compaction wrote (local disk only, else null) */
  outputBytes: number | null
  /** CPU seconds of the child's main thread alone during the compaction (Linux; else null) */
  mainThreadCpuSeconds: number | null
  /** row groups whose pages the compression thread compressed, and the writer's waits for it (ms), in the measured compaction */
  threadRowGroups: number
  compressionWaitMs: number
}

interface DuckReport extends ChildReport {
  rowsOut: number
  threads: number
  outputBytes: number
}

/** One `file.compression` (and zstd level) of the --compression series. */
interface CodecVariant {
  /** as given on the command line: `snappy`, `zstd`, `zstd:3` */
  name: string
  compression: 'none' | 'snappy' | 'gzip' | 'zstd'
  /** zstd level; null for the other codecs */
  level: number | null
}

function parseCodecs(list: string): CodecVariant[] {
  const variants = list.split(',').map((raw): CodecVariant => {
    const name = raw.trim().toLowerCase()
    const m = /^(none|snappy|gzip|zstd)(?::(-?\d+))?$/.exec(name)
    if (!m || (m[2] !== undefined && m[1] !== 'zstd')) throw new StrataInputError(`--compression: ${JSON.stringify(raw)} is not one of none, snappy, gzip, zstd or zstd:LEVEL`)
    const compression = m[1] as CodecVariant['compression']
    return { name, compression, level: compression === 'zstd' ? Number(m[2] ?? 1) : null }
  })
  if (variants.some((v) => v.compression === 'zstd') && typeof (zlib as { zstdCompressSync?: unknown }).zstdCompressSync !== 'function') {
    throw new StrataInputError(`--compression zstd needs node:zlib zstdCompressSync (Node >= 22.15); this is Node ${process.versions.node}`)
  }
  return variants
}

function codecTableOptions(v: CodecVariant): Record<string, string> {
  return { 'file.compression': v.compression, ...(v.level === null ? {} : { 'file.compression.zstd-level': String(v.level) }) }
}

/** The data files of a local bucket directory and their sizes. */
function parquetSizes(dir: string): Map<string, number> {
  if (!existsSync(dir)) return new Map()
  return new Map(readdirSync(dir).filter((n) => n.endsWith('.parquet')).map((n) => [n, statSync(join(dir, n)).size]))
}

// ---------------------------------------------------------------------------------------------
// Child side

/** CPU seconds this thread has run (Linux: /proc/thread-self/schedstat), or null. */
function threadCpuSeconds(): number | null {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e9
  } catch {
    return null
  }
}

async function childMain(argv: string[]): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const [job, ...rest] = argv
  if (job === 'compact') {
    const [uri, mode, path = 'auto', ...warmUpUris] = rest
    const mergePath = path as MergePathRequest
    // STRATA_BENCH_COMPRESSION_THREAD=off: the output's pages compressed inline; else compactBucket's default
    const compressionThread = process.env.STRATA_BENCH_COMPRESSION_THREAD === 'off' ? false : undefined
    // a warm process: the same compaction of other copies first, not measured
    for (const warmUpUri of warmUpUris) await compactBucket(await Table.open(openStore(warmUpUri)), { partition: NO_PARTITION, bucket: 0, full: mode === 'full', mergePath, compressionThread })
    const table = await Table.open(openStore(uri))
    const bucketDir = uri.includes('://') ? null : join(uri, 'bucket-0')
    const before = bucketDir === null ? null : parquetSizes(bucketDir)
    // --profile of a warm job: V8's sampling profiler over the measured compaction only, not the warm-up
    const profileOut = process.env.STRATA_BENCH_PROFILE_OUT
    const inspector = profileOut === undefined ? null : new Session()
    if (inspector !== null) {
      inspector.connect()
      await inspector.post('Profiler.enable')
      await inspector.post('Profiler.start')
    }
    const counts0 = compressionThreadCounts()
    const main0 = threadCpuSeconds()
    const { value: r, seconds, cpuSeconds } = await timed(() => compactBucket(table, { partition: NO_PARTITION, bucket: 0, full: mode === 'full', mergePath, compressionThread }))
    const main1 = threadCpuSeconds()
    const counts1 = compressionThreadCounts()
    if (inspector !== null) {
      const { profile } = await inspector.post('Profiler.stop')
      writeFileSync(profileOut!, JSON.stringify(profile))
      inspector.disconnect()
    }
    if (r.snapshotId === null) throw new Error(`compaction of ${uri} (${mode}) found nothing to do`)
    let outputBytes: number | null = null
    if (bucketDir !== null) {
      outputBytes = 0
      for (const [name, size] of parquetSizes(bucketDir)) if (!before!.has(name)) outputBytes += size
    }
    reportToParent({ seconds, cpuSeconds, rowsIn: r.rowsIn, rowsOut: r.rowsOut, rowsDeletedByVector: r.rowsDeletedByVector, inputFiles: r.inputFiles, outputFiles: r.outputFiles, outputLevel: r.outputLevel, columnarSteps: r.columnarSteps ?? 0, outputBytes, mainThreadCpuSeconds: main0 === null || main1 === null ? null : main1 - main0, threadRowGroups: counts1.threadBatches - counts0.threadBatches, compressionWaitMs: counts1.waitMs - counts0.waitMs })
  } else if (job === 'idle') {
    // what a compaction child holds before it compacts: modules loaded, table and snapshot read
    const table = await Table.open(openStore(rest[0]))
    await table.snapshots.latest()
    reportToParent({ seconds: 0, cpuSeconds: 0 })
  } else if (job === 'duckdb') {
    const [out, threads, codec, ...files] = rest
    reportToParent(await duckdbCompact(files, out, Number(threads), codec))
  } else {
    throw new Error(`unknown child job ${JSON.stringify(job)}`)
  }
}

async function duckdbCompact(files: string[], out: string, threads: number, codec: string): Promise<Omit<DuckReport, 'peakRssMb' | 'maxRssMb' | 'loadAvg'>> {
  const { DuckDBInstance } = await import('@duckdb/node-api')
  const instance = await DuckDBInstance.create(':memory:', { threads: String(threads) })
  const conn = await instance.connect()
  const { seconds, cpuSeconds } = await timed(() => conn.run(duckdbSql(files, out, codec)))
  const counted = await conn.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM read_parquet('${out.replaceAll("'", "''")}')`)
  const rowsOut = Number(counted.getRowObjects()[0].n)
  conn.closeSync()
  instance.closeSync()
  return { seconds, cpuSeconds, rowsOut, threads, outputBytes: statSync(out).size }
}

// ---------------------------------------------------------------------------------------------
// Parent side

type Store = 'local' | 's3'

interface Fixture {
  id: string
  dir: string
  rows: number
  runs: number
  deletionVectors: boolean
  /** 'full': all runs are level 0; 'base': a compacted top level plus level-0 runs */
  kind: 'full' | 'base'
  /** table option `target-file-size`, when not Paimon's default 128 mb */
  targetFileSize?: string
  /** further table options (another merge engine) */
  options?: Record<string, string>
}

interface CompactJob {
  id: string
  label: string
  fixture: Fixture
  store: Store
  mode: 'full' | 'auto'
  /** compactBucket's mergePath: 'auto' (columnar where supported) or 'row' */
  path: MergePathRequest
  /** measured in a warm process, after the same compaction of this many other copies (local disk only) */
  warmUps?: number
  /** false: the output's pages compressed inline, not on the compression thread */
  compressionThread?: false
}

interface Env {
  work: string
  childEnv: NodeJS.ProcessEnv
  /** Strata's compaction children: childEnv and the deployed functions' process environment */
  compactEnv: NodeJS.ProcessEnv
  s3: { store(prefix: string): S3Store; uri(prefix: string): string } | null
}

function plainPlan(rows: number, runs: number, keySpace: number): LoadPlan {
  return { keySpace, batches: Array.from({ length: runs }, () => rows / runs), deleteRatio: DELETE_RATIO, seed: SEED }
}

async function buildFixture(work: string, id: string, spec: Omit<Fixture, 'id' | 'dir'>, plan: LoadPlan): Promise<Fixture> {
  const dir = join(work, 'fixtures', id)
  const t0 = performance.now()
  const options: Record<string, string> = { ...(spec.targetFileSize ? { 'target-file-size': spec.targetFileSize } : {}), ...spec.options }
  const table = await createBenchTable(dir, { buckets: 1, deletionVectors: spec.deletionVectors, options })
  if (spec.kind === 'full') await loadBatches(table, plan)
  else await loadCompactedBase(table, plan)
  process.stderr.write(`built ${id} in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`)
  return { id, dir, ...spec }
}

/** The level-0 data files of a never-compacted fixture: the input DuckDB reads. */
function dataFilesOf(f: Fixture): string[] {
  const dir = join(f.dir, 'bucket-0')
  return readdirSync(dir).filter((n) => n.endsWith('.parquet')).sort().map((n) => join(dir, n))
}

async function runCompactJob(env: Env, job: CompactJob, rep: number, nodeArgs: string[] = []): Promise<CompactReport> {
  const name = `${job.id}-${job.store}-${rep}`
  let uri: string
  let cleanup: () => Promise<void>
  const warmUp: string[] = []
  if (job.store === 'local') {
    const dir = join(env.work, 'runs', name)
    cpSync(job.fixture.dir, dir, { recursive: true })
    uri = dir
    for (let w = 0; w < (job.warmUps ?? 0); w++) {
      cpSync(job.fixture.dir, `${dir}-warm-up-${w}`, { recursive: true })
      warmUp.push(`${dir}-warm-up-${w}`)
    }
    cleanup = async () => {
      for (const d of [dir, ...warmUp]) rmSync(d, { recursive: true, force: true })
    }
  } else {
    if (job.warmUps) throw new Error(`${job.id}: a warm process is measured on local disk only`)
    const s3 = env.s3!
    const target = s3.store(name)
    await copyStore(new LocalFileStore(job.fixture.dir), target)
    uri = s3.uri(name)
    cleanup = () => clearStore(target)
  }
  try {
    const childEnv = job.compressionThread === false ? { ...env.compactEnv, STRATA_BENCH_COMPRESSION_THREAD: 'off' } : env.compactEnv
    return await runChild<CompactReport>(import.meta.filename, ['compact', uri, job.mode, job.path, ...warmUp], { env: childEnv, nodeArgs })
  } finally {
    await cleanup()
  }
}

async function idleRss(env: Env, fixture: Fixture, store: Store): Promise<number> {
  const name = `idle-${store}`
  let uri = fixture.dir
  if (store === 's3') {
    await copyStore(new LocalFileStore(fixture.dir), env.s3!.store(name))
    uri = env.s3!.uri(name)
  }
  const r = await runChild<ChildReport>(import.meta.filename, ['idle', uri], { env: env.compactEnv })
  if (store === 's3') await clearStore(env.s3!.store(name))
  return r.peakRssMb
}

const HEAP_STEP_MB = 32

interface HeapProbe {
  fixture: Fixture
  /** the largest cap tried that ran out of heap, null if the first cap sufficed */
  failedAtMb: number | null
  minOldSpaceMb: number
  report: CompactReport
}

/** Tries --max-old-space-size from 64 MB up in steps until the compaction completes. */
async function probeHeap(env: Env, job: CompactJob): Promise<HeapProbe> {
  let failedAtMb: number | null = null
  for (let cap = 64; cap <= 4096; cap += HEAP_STEP_MB) {
    try {
      const report = await runCompactJob(env, job, 0, [`--max-old-space-size=${cap}`])
      return { fixture: job.fixture, failedAtMb, minOldSpaceMb: cap, report }
    } catch (e) {
      if (!/heap out of memory|Allocation failed/i.test((e as Error).message)) throw e
      failedAtMb = cap
    }
  }
  throw new Error(`${job.id}: no --max-old-space-size up to 4096 MB was enough`)
}

interface Series<T> {
  reports: T[]
}

function med<T extends ChildReport>(s: Series<T>, pick: (r: T) => number): number {
  return median(s.reports.map(pick))
}

interface BenchArgs {
  codecs: CodecVariant[]
  quick: boolean
  runs: number
  withS3: boolean
  rows: number
  profile: boolean
  heapProbe: boolean
  functionEnv: boolean
  /** only the cold processes (and the one fixture they compact) */
  coldOnly: boolean
  /** the cold variants besides the deployed one (bench/lib/cold-levers.ts ids); null: all */
  coldVariants: string[] | null
}

function parseParentArgs(argv: string[]): BenchArgs {
  const args = parseBenchArgs(argv, ['--quick', '--no-s3', '--profile', '--heap-probe', '--no-function-env', '--cold-only'], ['--runs'], ['--compression', '--cold-variants'])
  const codecList = args.str('--compression', '')
  const quick = args.has('--quick')
  const scale = quick ? 10 : 1
  return {
    codecs: codecList === '' ? [] : parseCodecs(codecList),
    quick,
    runs: args.num('--runs', 3),
    withS3: !args.has('--no-s3'),
    rows: 1_000_000 / scale,
    profile: args.has('--profile'),
    heapProbe: args.has('--heap-probe'),
    functionEnv: !args.has('--no-function-env'),
    coldOnly: args.has('--cold-only'),
    coldVariants: args.str('--cold-variants', '') === '' ? null : args.str('--cold-variants', '').split(','),
  }
}

/** Every prebuilt table; every job compacts a fresh copy of one. */
interface Fixtures {
  fullOff: Fixture
  fullOn: Fixture
  baseOn: Fixture
  quarter: Fixture
  half: Fixture
  tenRuns: Fixture
  /** the engines that fold a key's records, on the same records (their deletes remove the row) */
  engines: Fixture[]
  /** --compression: the full compaction's fixture per codec (the default's is fullOff) */
  codecs: Map<string, Fixture>
  /** with S3: full-off, full-on and base-on rolling output files at 8 mb */
  small: Fixture[] | null
}

async function buildFixtures(work: string, a: BenchArgs): Promise<Fixtures> {
  const { rows } = a
  const keySpace = (rows * 3) / 5
  const fullOff = await buildFixture(work, 'full-off', { rows, runs: 5, deletionVectors: false, kind: 'full' }, plainPlan(rows, 5, keySpace))
  const fullOn = await buildFixture(work, 'full-on', { rows, runs: 5, deletionVectors: true, kind: 'full' }, plainPlan(rows, 5, keySpace))
  const baseOn = await buildFixture(work, 'base-on', { rows, runs: 5, deletionVectors: true, kind: 'base' }, plainPlan((rows * 2) / 5, 4, keySpace))
  const quarter = await buildFixture(work, 'full-off-quarter', { rows: rows / 4, runs: 5, deletionVectors: false, kind: 'full' }, plainPlan(rows / 4, 5, keySpace / 4))
  const half = await buildFixture(work, 'full-off-half', { rows: rows / 2, runs: 5, deletionVectors: false, kind: 'full' }, plainPlan(rows / 2, 5, keySpace / 2))
  const tenRuns = await buildFixture(work, 'full-off-10runs', { rows, runs: 10, deletionVectors: false, kind: 'full' }, plainPlan(rows, 10, keySpace))
  const engines = [
    await buildFixture(work, 'full-partial-update', { rows, runs: 5, deletionVectors: false, kind: 'full', options: ENGINE_OPTIONS['partial-update'] }, plainPlan(rows, 5, keySpace)),
    await buildFixture(work, 'full-aggregation', { rows, runs: 5, deletionVectors: false, kind: 'full', options: ENGINE_OPTIONS.aggregation }, plainPlan(rows, 5, keySpace)),
  ]
  const codecs = new Map<string, Fixture>()
  for (const v of a.codecs) {
    if (codecs.has(v.name)) continue
    const isDefault = v.compression === 'snappy'
    codecs.set(v.name, isDefault ? fullOff : await buildFixture(work, `full-off-${v.name.replace(':', '')}`, { rows, runs: 5, deletionVectors: false, kind: 'full', options: codecTableOptions(v) }, plainPlan(rows, 5, keySpace)))
  }
  let small: Fixture[] | null = null
  if (a.withS3) {
    // The embedded backend (fastify under fauxqs 1.9) refuses bodies over 11 MiB with HTTP
    // 413, and S3Store.put sends a data file as one PutObject, so a 1M-row compaction's
    // ~12 MB output cannot land there at the default 128 mb target. These fixtures roll
    // output files at 8 mb and run on both stores, so the store comparison is like for like.
    const target = { targetFileSize: SMALL_TARGET }
    small = [
      await buildFixture(work, `full-off${SMALL_SUFFIX}`, { rows, runs: 5, deletionVectors: false, kind: 'full', ...target }, plainPlan(rows, 5, keySpace)),
      await buildFixture(work, `full-on${SMALL_SUFFIX}`, { rows, runs: 5, deletionVectors: true, kind: 'full', ...target }, plainPlan(rows, 5, keySpace)),
      await buildFixture(work, `base-on${SMALL_SUFFIX}`, { rows, runs: 5, deletionVectors: true, kind: 'base', ...target }, plainPlan((rows * 2) / 5, 4, keySpace)),
    ]
  }
  return { fullOff, fullOn, baseOn, quarter, half, tenRuns, engines, codecs, small }
}

/** The jobs of one round, in the order they run and report. */
interface JobPlan {
  stores: Store[]
  /** the main table: full compactions and lifts, warm and inline variants, both stores */
  main: CompactJob[]
  engines: CompactJob[]
  scaling: CompactJob[]
  codecJobs: CompactJob[]
  jobs: CompactJob[]
}

function planJobs(f: Fixtures, withS3: boolean): JobPlan {
  const stores: Store[] = withS3 ? ['local', 's3'] : ['local']
  const mainJobs = (suffix: string, fixtures: Fixture[], store: Store): CompactJob[] => [
    { id: `full-off${suffix}`, label: 'full compaction, deletion vectors off (columnar merge)', fixture: fixtures[0], store, mode: 'full', path: 'auto' },
    { id: `full-off-row${suffix}`, label: 'full compaction, deletion vectors off (row merge)', fixture: fixtures[0], store, mode: 'full', path: 'row' },
    { id: `full-on${suffix}`, label: 'full compaction, deletion vectors on (columnar merge)', fixture: fixtures[1], store, mode: 'full', path: 'auto' },
    { id: `full-on-row${suffix}`, label: 'full compaction, deletion vectors on (row merge)', fixture: fixtures[1], store, mode: 'full', path: 'row' },
    { id: `lift-on${suffix}`, label: 'deletion vectors on: 4 L0 runs lifted over a compacted top level (lookups; columnar merge)', fixture: fixtures[2], store, mode: 'auto', path: 'auto' },
    { id: `lift-on-row${suffix}`, label: 'deletion vectors on: 4 L0 runs lifted over a compacted top level (lookups; row merge)', fixture: fixtures[2], store, mode: 'auto', path: 'row' },
  ]
  const main = mainJobs('', [f.fullOff, f.fullOn, f.baseOn], 'local')
  const warm: CompactJob = { id: 'full-off-warm', label: 'full compaction, deletion vectors off (columnar merge), warm process (second job)', fixture: f.fullOff, store: 'local', mode: 'full', path: 'auto', warmUps: 1 }
  const steady: CompactJob = { id: 'full-off-steady', label: 'full compaction, deletion vectors off (columnar merge), warm process (sixth job)', fixture: f.fullOff, store: 'local', mode: 'full', path: 'auto', warmUps: 5 }
  // the same jobs with the output's pages compressed inline, for the compression thread's effect
  const inline = (j: CompactJob): CompactJob => ({ ...j, id: `${j.id}-inline`, label: `${j.label}, pages compressed inline`, compressionThread: false })
  main.splice(1, 0, warm, steady, inline(main[0]), inline(warm), inline(steady))
  if (f.small) for (const store of stores) main.push(...mainJobs(SMALL_SUFFIX, f.small, store))
  const scaling: CompactJob[] = [f.quarter, f.half, f.tenRuns].map((x) => ({ id: x.id, label: `${x.rows} rows in ${x.runs} runs`, fixture: x, store: 'local' as const, mode: 'full' as const, path: 'auto' as const }))
  const engines: CompactJob[] = f.engines.flatMap((x) => [
    { id: x.id, label: `full compaction, ${x.options!['merge-engine']} (columnar merge)`, fixture: x, store: 'local' as const, mode: 'full' as const, path: 'auto' as const },
    { id: `${x.id}-row`, label: `full compaction, ${x.options!['merge-engine']} (row merge)`, fixture: x, store: 'local' as const, mode: 'full' as const, path: 'row' as const },
  ])
  const codecJobs: CompactJob[] = [...f.codecs]
    .filter(([, x]) => x !== f.fullOff)
    .map(([name, x]) => ({ id: x.id, label: `full compaction, deletion vectors off (columnar merge), file.compression ${name}`, fixture: x, store: 'local' as const, mode: 'full' as const, path: 'auto' as const }))
  return { stores, main, engines, scaling, codecJobs, jobs: [...main, ...engines, ...scaling, ...codecJobs] }
}

/** Every report of every round, by job, DuckDB setting, codec and cold process. */
interface Measured {
  results: Map<string, Series<CompactReport>>
  duck: Map<number, Series<DuckReport>>
  /** DuckDB single-threaded on each non-default codec's fixture, writing that codec */
  duckCodec: Map<string, Series<DuckReport>>
  idle: Map<Store, number[]>
  /** the cold processes: Strata's variants (the deployed one first) and DuckDB */
  cold: { strata: ColdRun[]; duckdb: Series<ColdReport> }
  /** DuckDB reads the same data files Strata compacts (no copy, no patch) */
  inputFiles: string[]
  inputBytes: number
}

async function measure(env: Env, a: BenchArgs, f: Fixtures, plan: JobPlan, nproc: number): Promise<Measured> {
  const results = new Map<string, Series<CompactReport>>(plan.jobs.map((j) => [`${j.id}/${j.store}`, { reports: [] }]))
  const duck = new Map<number, Series<DuckReport>>(a.coldOnly ? [] : [[nproc, { reports: [] }], [1, { reports: [] }]])
  const duckCodec = new Map<string, Series<DuckReport>>([...f.codecs].filter(([, x]) => x !== f.fullOff).map(([name]) => [name, { reports: [] }]))
  const idle = new Map<Store, number[]>(plan.stores.map((s) => [s, []]))
  const coldEntries = await buildColdEntries(join(OUT_DIR, 'cold-process'))
  const runOnce = async (extra: Record<string, string>) => {
    await runColdStrata(coldEntries.strata, { id: 'prepare', label: 'prepare', nodeArgs: [], env: extra }, f.fullOff.dir, join(env.work, 'runs', 'cold-prepare'), env.compactEnv)
  }
  const variants = coldVariants(env.work, runOnce).filter((v) => a.coldVariants === null || v.id === 'deployed' || a.coldVariants.includes(v.id))
  const cold = { strata: variants.map((variant) => ({ variant, reports: [] })), duckdb: { reports: [] } }
  const m: Measured = { results, duck, duckCodec, idle, cold, inputFiles: dataFilesOf(f.fullOff), inputBytes: 0 }
  m.inputBytes = m.inputFiles.reduce((n, x) => n + statSync(x).size, 0)
  for (let rep = 0; rep < a.runs; rep++) {
    for (const store of plan.stores) idle.get(store)!.push(await idleRss(env, f.fullOff, store))
    for (const job of plan.jobs) {
      const r = await runCompactJob(env, job, rep)
      results.get(`${job.id}/${job.store}`)!.reports.push(r)
      if (job.path === 'row' && r.columnarSteps !== 0) throw new Error(`${job.id}: the row merge was requested, ${r.columnarSteps} steps went columnar`)
      if (job.path === 'auto' && r.columnarSteps === 0) throw new Error(`${job.id}: expected the columnar merge, the row merge ran`)
      process.stderr.write(`run ${rep + 1}/${a.runs} ${job.id} ${job.store}: ${r.rowsIn} → ${r.rowsOut} rows (${r.columnarSteps} columnar steps), ${r.seconds.toFixed(2)} s (CPU ${r.cpuSeconds.toFixed(2)} s, load ${r.loadAvg.toFixed(1)}), ${r.peakRssMb.toFixed(0)} MB, ${r.threadRowGroups} row groups compressed on the thread (waited ${r.compressionWaitMs.toFixed(0)} ms)\n`)
    }
    await measureCold(env, f.fullOff, m, coldEntries, rep, a.runs)
    await measureDuckDb(env, a, f, m, rep)
  }
  return m
}

function coldLine(who: string, r: ColdReport): string {
  const main = typeof r.processMainCpuSeconds === 'number' ? `, main thread ${r.processMainCpuSeconds.toFixed(2)} s` : ''
  return `${who}: ready at ${r.readySeconds.toFixed(2)} s, job ${r.seconds.toFixed(2)} s (CPU ${r.cpuSeconds.toFixed(2)} s), start to end ${r.processSeconds.toFixed(2)} s (CPU ${r.processCpuSeconds.toFixed(2)} s${main}), load ${r.loadAvg.toFixed(1)}\n`
}

/** One round of the cold processes: each of Strata's variants, then DuckDB loading its module, interleaved. */
async function measureCold(env: Env, fullOff: Fixture, m: Measured, entries: ColdEntries, rep: number, runs: number): Promise<void> {
  for (const run of m.cold.strata) {
    const r = await runColdStrata(entries.strata, run.variant, fullOff.dir, join(env.work, 'runs', `cold-${run.variant.id}-${rep}`), env.compactEnv)
    run.reports.push(r)
    process.stderr.write(`run ${rep + 1}/${runs} ${coldLine(`cold process, ${run.variant.id}`, r)}`)
  }
  const out = join(env.work, 'runs', `cold-duckdb-${rep}.parquet`)
  const d = await runChild<ColdReport>(entries.duckdb, [out, ...m.inputFiles], { env: env.childEnv, built: true })
  rmSync(out, { force: true })
  m.cold.duckdb.reports.push(d)
  process.stderr.write(`run ${rep + 1}/${runs} ${coldLine('cold process, DuckDB', d)}`)
}

/** One round of DuckDB: every thread count on the default fixture, then single-threaded per codec. */
async function measureDuckDb(env: Env, a: BenchArgs, f: Fixtures, m: Measured, rep: number): Promise<void> {
  /** the codec as the DuckDB child takes it, its zstd level explicit (DuckDB's default is 3) */
  const duckCodecName = new Map(a.codecs.map((v) => [v.name, v.level === null ? v.compression : `${v.compression}:${v.level}`]))
  for (const [threads, series] of m.duck) {
    const out = join(env.work, 'runs', `duckdb-${threads}-${rep}.parquet`)
    const r = await runChild<DuckReport>(import.meta.filename, ['duckdb', out, String(threads), 'snappy', ...m.inputFiles], { env: env.childEnv })
    rmSync(out, { force: true })
    series.reports.push(r)
    process.stderr.write(`run ${rep + 1}/${a.runs} duckdb threads=${threads}: ${r.rowsOut} rows, ${r.seconds.toFixed(2)} s (CPU ${r.cpuSeconds.toFixed(2)} s, load ${r.loadAvg.toFixed(1)}), ${r.peakRssMb.toFixed(0)} MB\n`)
  }
  for (const [name, series] of m.duckCodec) {
    const out = join(env.work, 'runs', `duckdb-${name.replace(':', '')}-${rep}.parquet`)
    const r = await runChild<DuckReport>(import.meta.filename, ['duckdb', out, '1', duckCodecName.get(name)!, ...dataFilesOf(f.codecs.get(name)!)], { env: env.childEnv })
    rmSync(out, { force: true })
    series.reports.push(r)
    process.stderr.write(`run ${rep + 1}/${a.runs} duckdb threads=1 ${name}: ${r.rowsOut} rows, ${r.seconds.toFixed(2)} s (CPU ${r.cpuSeconds.toFixed(2)} s, load ${r.loadAvg.toFixed(1)}), ${r.peakRssMb.toFixed(0)} MB\n`)
  }
}

/** The two engines, every full compaction and the cold processes must have produced the same rows. */
function checkRowsAgree(m: Measured, plan: JobPlan): void {
  // --cold-only runs no other job: the cold processes are checked against DuckDB's
  const strataOut = m.results.get('full-off/local')?.reports[0].rowsOut ?? m.cold.duckdb.reports[0].rowsOut
  for (const [threads, s] of m.duck) {
    if (s.reports.some((r) => r.rowsOut !== strataOut)) throw new Error(`DuckDB (threads=${threads}) wrote ${s.reports.map((r) => r.rowsOut).join('/')} rows, Strata ${strataOut}`)
  }
  for (const [who, reports] of [...m.cold.strata.map((r) => [r.variant.id, r.reports] as const), ['DuckDB', m.cold.duckdb.reports] as const]) {
    if (reports.some((r) => r.rowsOut !== strataOut)) throw new Error(`the cold process (${who}) wrote ${reports.map((r) => r.rowsOut).join('/')} rows, full-off ${strataOut}`)
  }
  for (const [name, s] of m.duckCodec) {
    if (s.reports.some((r) => r.rowsOut !== strataOut)) throw new Error(`DuckDB (${name}) wrote ${s.reports.map((r) => r.rowsOut).join('/')} rows, Strata ${strataOut}`)
  }
  for (const j of [...plan.main.filter((x) => x.mode === 'full'), ...plan.codecJobs]) {
    const out = m.results.get(`${j.id}/${j.store}`)!.reports[0].rowsOut
    if (out !== strataOut) throw new Error(`full compaction ${j.id} (${j.store}) wrote ${out} rows, full-off on local disk ${strataOut}`)
  }
}

// Uncapped, V8 grows its heap lazily, so peak RSS shows headroom as much as need. The
// smallest --max-old-space-size a compaction completes under shows the need itself.
async function runHeapProbes(env: Env, f: Fixtures): Promise<HeapProbe[]> {
  const heapProbe: HeapProbe[] = []
  for (const x of [f.quarter, f.half, f.fullOff, f.tenRuns]) {
    const job: CompactJob = { id: x.id, label: x.id, fixture: x, store: 'local', mode: 'full', path: 'auto' }
    heapProbe.push(await probeHeap(env, job))
    const p = heapProbe[heapProbe.length - 1]
    process.stderr.write(`heap probe ${x.id}: fails at ${p.failedAtMb ?? '-'} MB, completes at ${p.minOldSpaceMb} MB (${p.report.seconds.toFixed(2)} s, ${p.report.peakRssMb.toFixed(0)} MB RSS)\n`)
  }
  return heapProbe
}

/** Each local compaction once more under V8's CPU profiler, summed up by category, file and function. */
async function runProfiles(env: Env, a: BenchArgs, plan: JobPlan): Promise<Record<string, ProfileSummary>> {
  const profiles: Record<string, ProfileSummary> = {}
  const dir = join(OUT_DIR, 'profiles')
  mkdirSync(dir, { recursive: true })
  for (const job of plan.main.filter((j) => j.store === 'local' && j.fixture.targetFileSize === undefined)) {
    const name = `compaction-${job.id}${a.quick ? '-quick' : ''}.cpuprofile`
    // a warm job's profile covers its measured compaction only (the child starts the profiler after its warm-ups)
    if (job.warmUps) await runCompactJob({ ...env, compactEnv: { ...env.compactEnv, STRATA_BENCH_PROFILE_OUT: join(dir, name) } }, job, a.runs)
    else await runCompactJob(env, job, a.runs, ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-name', name])
    profiles[job.id] = summarizeCpuProfile(join(dir, name))
  }
  return profiles
}

/** Starts the embedded S3 backend and points the children and env.s3 at it. */
async function startS3(env: Env): Promise<EmbeddedBackend> {
  const { startEmbeddedBackend } = await import('../local/embedded.ts')
  const backend = await startEmbeddedBackend()
  await backend.createBucket('bench')
  Object.assign(env.childEnv, {
    AWS_ENDPOINT_URL: backend.endpoint,
    AWS_REGION: backend.region,
    AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey,
  })
  const client = backend.s3Client()
  env.s3 = { store: (prefix) => new S3Store({ bucket: 'bench', prefix, client }), uri: (prefix) => `s3://bench/${prefix}` }
  return backend
}

async function parentMain(argv: string[]): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const a = parseParentArgs(argv)
  const machine = machineInfo(PACKAGES)
  const work = mkdtempSync(join(tmpdir(), 'strata-bench-compaction-'))
  mkdirSync(join(work, 'runs'), { recursive: true })

  const childEnv: NodeJS.ProcessEnv = { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' }
  let backend: EmbeddedBackend | null = null
  const env: Env = { work, childEnv, compactEnv: childEnv, s3: null }
  try {
    // Strata's children start as deployed functions do, unless told otherwise or already so
    if (a.functionEnv) env.compactEnv = { ...FUNCTION_PROCESS_ENVIRONMENT, ...childEnv }
    if (a.coldOnly) return await coldOnlyMain(env, a, machine)
    if (a.withS3) backend = await startS3(env)
    // fixtures, built once; every job compacts a fresh copy
    const f = await buildFixtures(work, a)
    const plan = planJobs(f, a.withS3)
    const m = await measure(env, a, f, plan, machine.nproc)
    checkRowsAgree(m, plan)
    const heapProbe = a.heapProbe ? await runHeapProbes(env, f) : undefined
    const profiles = a.profile ? await runProfiles(env, a, plan) : undefined
    const idleMb = Object.fromEntries(plan.stores.map((s) => [s, median(m.idle.get(s)!)]))
    console.log(reportMarkdown({ a, f, plan, m, machine, idleMb, heapProbe, profiles }))
    const path = writeResults(a.quick ? 'compaction-quick' : 'compaction', {
      machine,
      params: { rows: a.rows, runs: a.runs, deleteRatio: DELETE_RATIO, seed: SEED, withS3: a.withS3, inputFiles: m.inputFiles.length, inputBytes: m.inputBytes },
      duckdbSql: duckdbSql(['<5 level-0 files>'], '<out>'),
      idleRssMb: idleMb,
      compaction: plan.jobs.map((j) => ({ id: j.id, label: j.label, store: j.store, mode: j.mode, fixtureRows: j.fixture.rows, fixtureRuns: j.fixture.runs, reports: m.results.get(`${j.id}/${j.store}`)!.reports })),
      duckdb: [...m.duck].map(([threads, s]) => ({ threads, reports: s.reports })),
      coldProcess: { strata: m.cold.strata.map((r) => ({ id: r.variant.id, label: r.variant.label, nodeArgs: r.variant.nodeArgs, env: r.variant.env, reports: r.reports })), duckdb: m.cold.duckdb.reports },
      codecs: a.codecs.length ? [...f.codecs].map(([name, x]) => ({ name, fixture: x.id, inputBytes: dataFilesOf(x).reduce((n, p) => n + statSync(p).size, 0), duckdb: x === f.fullOff ? 'duckdb threads=1' : m.duckCodec.get(name)!.reports })) : undefined,
      heapProbe: heapProbe?.map((p) => ({ id: p.fixture.id, rows: p.fixture.rows, runs: p.fixture.runs, failedAtMb: p.failedAtMb, minOldSpaceMb: p.minOldSpaceMb, report: p.report })),
      profiles,
    })
    process.stderr.write(`results: ${path}\n`)
  } finally {
    await backend?.stop()
    rmSync(work, { recursive: true, force: true })
  }
}

/** --cold-only: the one fixture the cold processes compact, the cold rounds, the cold table. */
async function coldOnlyMain(env: Env, a: BenchArgs, machine: ReturnType<typeof machineInfo>): Promise<void> {
  const keySpace = (a.rows * 3) / 5
  const fullOff = await buildFixture(env.work, 'full-off', { rows: a.rows, runs: 5, deletionVectors: false, kind: 'full' }, plainPlan(a.rows, 5, keySpace))
  const f: Fixtures = { fullOff, fullOn: fullOff, baseOn: fullOff, quarter: fullOff, half: fullOff, tenRuns: fullOff, engines: [], codecs: new Map(), small: null }
  const plan: JobPlan = { stores: [], main: [], engines: [], scaling: [], codecJobs: [], jobs: [] }
  const m = await measure(env, a, f, plan, machine.nproc)
  checkRowsAgree(m, plan)
  console.log([...coldSection({ a, f, plan, m, machine, idleMb: {}, heapProbe: undefined, profiles: undefined }), `\n${machineMarkdown(machine)}`].join('\n'))
  const path = writeResults(a.quick ? 'compaction-cold-quick' : 'compaction-cold', {
    machine,
    params: { rows: a.rows, runs: a.runs, deleteRatio: DELETE_RATIO, seed: SEED, inputFiles: m.inputFiles.length, inputBytes: m.inputBytes },
    coldProcess: { strata: m.cold.strata.map((r) => ({ id: r.variant.id, label: r.variant.label, nodeArgs: r.variant.nodeArgs, env: r.variant.env, reports: r.reports })), duckdb: m.cold.duckdb.reports },
  })
  process.stderr.write(`results: ${path}\n`)
}

interface ReportInput {
  a: BenchArgs
  f: Fixtures
  plan: JobPlan
  m: Measured
  machine: ReturnType<typeof machineInfo>
  idleMb: Record<string, number>
  heapProbe: HeapProbe[] | undefined
  profiles: Record<string, ProfileSummary> | undefined
}

// ----- report

function reportMarkdown(r: ReportInput): string {
  const lines: string[] = [...mainSection(r), ...enginesSection(r), ...versusDuckDbSection(r), ...coldSection(r)]
  if (r.a.codecs.length) lines.push(...codecsSection(r))
  lines.push(...scalingSection(r))
  if (r.heapProbe) {
    lines.push(`\n### Smallest old space the same compactions complete in (one run per cap, steps of ${HEAP_STEP_MB} MB)\n`)
    lines.push(
      markdownTable(
        ['rows in', 'sorted runs', 'fails at --max-old-space-size', 'completes at', 'wall s there', 'peak RSS there (MB)'],
        r.heapProbe.map((p) => [count(p.fixture.rows), p.fixture.runs, p.failedAtMb === null ? '-' : `${p.failedAtMb} MB`, `${p.minOldSpaceMb} MB`, p.report.seconds.toFixed(2), p.report.peakRssMb.toFixed(0)]),
      ),
    )
  }
  if (r.profiles) lines.push(...profilesSection(r.profiles, r.plan))
  lines.push(`\n${machineMarkdown(r.machine)}`)
  return lines.join('\n')
}

function mainSection({ a, plan, m, idleMb }: ReportInput): string[] {
  return [
    `\n### Compaction of one bucket, median of ${a.runs} runs\n`,
    markdownTable(
      ['job', 'store', 'target-file-size', 'rows in (sorted runs)', 'rows out (files)', 'rows marked in DVs', 'wall s', 'CPU s', 'rows in/s (wall)', 'peak RSS (MB)'],
      plan.main.map((j) => {
        const s = m.results.get(`${j.id}/${j.store}`)!
        const r = s.reports[0]
        const secs = med(s, (x) => x.seconds)
        const runsIn = j.mode === 'full' ? `${count(r.rowsIn)} (${j.fixture.runs})` : `${count(r.rowsIn)} (4 L0 runs; lookups in ${count(j.fixture.rows - r.rowsIn)} top-level rows)`
        return [j.label, j.store === 's3' ? 'embedded S3' : 'local disk', j.fixture.targetFileSize ?? '128 mb', runsIn, `${count(r.rowsOut)} (${r.outputFiles})`, count(r.rowsDeletedByVector), secs.toFixed(2), med(s, (x) => x.cpuSeconds).toFixed(2), rate(r.rowsIn, secs), med(s, (x) => x.peakRssMb).toFixed(0)]
      }),
    ),
    `\nIdle child (modules loaded, table opened, nothing compacted): ${plan.stores.map((s) => `${idleMb[s].toFixed(0)} MB (${s})`).join(', ')}.`,
  ]
}

function enginesSection({ a, f, m }: ReportInput): string[] {
  return [
    `\n### The engines that fold a key's records: full compaction, ${count(a.rows)} rows in 5 runs, local disk, median of ${a.runs} runs\n`,
    markdownTable(
      ['merge engine', 'rows out', 'columnar wall s', 'columnar CPU s', 'row merge wall s', 'row merge CPU s', 'wall ÷ row merge', 'CPU ÷ row merge', 'columnar peak RSS (MB)', 'row merge peak RSS (MB)'],
      f.engines.map((x) => {
        const c = m.results.get(`${x.id}/local`)!
        const r = m.results.get(`${x.id}-row/local`)!
        const [cw, cc, rw, rc] = [med(c, (y) => y.seconds), med(c, (y) => y.cpuSeconds), med(r, (y) => y.seconds), med(r, (y) => y.cpuSeconds)]
        if (c.reports[0].rowsOut !== r.reports[0].rowsOut) throw new Error(`${x.id}: columnar wrote ${c.reports[0].rowsOut} rows, the row merge ${r.reports[0].rowsOut}`)
        return [x.options!['merge-engine'], count(c.reports[0].rowsOut), cw.toFixed(2), cc.toFixed(2), rw.toFixed(2), rc.toFixed(2), (cw / rw).toFixed(2), (cc / rc).toFixed(2), med(c, (y) => y.peakRssMb).toFixed(0), med(r, (y) => y.peakRssMb).toFixed(0)]
      }),
    ),
  ]
}

/** DuckDB single-threaded and Strata's row merge on the default fixture: what the other sections compare with. */
function baselines(m: Measured) {
  const duck1 = m.duck.get(1)!
  const rowSeries = m.results.get('full-off-row/local')!
  return { duck1, duckSecs: med(duck1, (x) => x.seconds), duckCpu: med(duck1, (x) => x.cpuSeconds), rowSeries, rowSecs: med(rowSeries, (x) => x.seconds), rowCpu: med(rowSeries, (x) => x.cpuSeconds) }
}

// every engine against DuckDB single-threaded and against Strata's row merge
function versusDuckDbSection({ a, m, machine }: ReportInput): string[] {
  const { duckSecs, duckCpu, rowSeries, rowSecs, rowCpu } = baselines(m)
  const results = m.results
  const vsLine = (engine: string, threads: number, s: Series<ChildReport & { rowsOut: number; mainThreadCpuSeconds?: number | null }>) => {
    const secs = med(s, (x) => x.seconds)
    const cpu = med(s, (x) => x.cpuSeconds)
    const main = s.reports.every((r) => typeof r.mainThreadCpuSeconds === 'number') ? med(s, (x) => x.mainThreadCpuSeconds!).toFixed(2) : '-'
    return [engine, threads, secs.toFixed(2), cpu.toFixed(2), main, count(s.reports[0].rowsOut), med(s, (x) => x.peakRssMb).toFixed(0), (secs / duckSecs).toFixed(2), (cpu / duckCpu).toFixed(2), (secs / rowSecs).toFixed(2), (cpu / rowCpu).toFixed(2)]
  }
  return [
    `\n### Strata vs DuckDB on the same ${m.inputFiles.length} Parquet files (${(m.inputBytes / 2 ** 20).toFixed(1)} MiB, ${count(a.rows)} rows), local disk, median of ${a.runs} runs\n`,
    markdownTable(
      ['engine', 'threads', 'wall s', 'CPU s', 'main thread CPU s', 'rows out', 'peak RSS (MB)', 'wall ÷ DuckDB 1 thread', 'CPU ÷ DuckDB 1 thread', 'wall ÷ Strata row merge', 'CPU ÷ Strata row merge'],
      [
        vsLine('Strata `compactBucket` full, deletion vectors off, row merge', 1, rowSeries),
        vsLine('Strata `compactBucket` full, deletion vectors off, columnar merge', 1, results.get('full-off/local')!),
        vsLine('Strata `compactBucket` full, deletion vectors off, columnar merge, warm process (second job)', 1, results.get('full-off-warm/local')!),
        vsLine('Strata `compactBucket` full, deletion vectors off, columnar merge, warm process (sixth job)', 1, results.get('full-off-steady/local')!),
        vsLine('the same, fresh process, pages compressed inline (no compression thread)', 1, results.get('full-off-inline/local')!),
        vsLine('the same, second job, pages compressed inline', 1, results.get('full-off-warm-inline/local')!),
        vsLine('the same, sixth job, pages compressed inline', 1, results.get('full-off-steady-inline/local')!),
        ...[...m.duck].map(([threads, s]) => vsLine(`DuckDB ${machine.packages['@duckdb/node-api']} window + COPY`, threads, s)),
      ],
    ),
  ]
}

function coldSection({ a, m, machine }: ReportInput): string[] {
  return [
    `\n### A cold process, from its start: the compactor's bundle (esbuild, the functions' options and environment) against DuckDB loading its module, the same full compaction, Node ${process.versions.node}, median of ${a.runs} runs\n`,
    coldTable(m.cold.strata, m.cold.duckdb.reports, `DuckDB ${machine.packages['@duckdb/node-api']} window + COPY, 1 thread`),
  ]
}

function codecsSection({ a, f, m }: ReportInput): string[] {
  const { duck1, duckSecs, duckCpu } = baselines(m)
  const mib = (b: number | null) => (b === null ? '-' : (b / 2 ** 20).toFixed(1))
  return [
    `\n### file.compression: full compaction (deletion vectors off, columnar merge, local disk) and DuckDB 1 thread writing the same codec, on the same ${count(a.rows)} rows written with each codec, Node ${process.versions.node}, median of ${a.runs} runs\n`,
    markdownTable(
      ['file.compression', 'input MiB (5 files)', 'Strata out MiB', 'Strata wall s', 'Strata CPU s', 'Strata peak RSS (MB)', 'DuckDB out MiB', 'DuckDB wall s', 'DuckDB CPU s', 'wall ÷ DuckDB 1 thread snappy', 'CPU ÷ DuckDB 1 thread snappy', 'wall ÷ DuckDB same codec', 'CPU ÷ DuckDB same codec'],
      [...f.codecs].map(([name, x]) => {
        const s = x === f.fullOff ? m.results.get('full-off/local')! : m.results.get(`${x.id}/local`)!
        const d = x === f.fullOff ? duck1 : m.duckCodec.get(name)!
        const [sw, sc, dw, dc] = [med(s, (y) => y.seconds), med(s, (y) => y.cpuSeconds), med(d, (y) => y.seconds), med(d, (y) => y.cpuSeconds)]
        const inBytes = dataFilesOf(x).reduce((n, p) => n + statSync(p).size, 0)
        return [name === 'zstd' ? 'zstd (level 1)' : name.replace(':', ' level '), mib(inBytes), mib(med(s, (y) => y.outputBytes ?? NaN)), sw.toFixed(2), sc.toFixed(2), med(s, (y) => y.peakRssMb).toFixed(0), mib(med(d, (y) => y.outputBytes)), dw.toFixed(2), dc.toFixed(2), (sw / duckSecs).toFixed(2), (sc / duckCpu).toFixed(2), (sw / dw).toFixed(2), (sc / dc).toFixed(2)]
      }),
    ),
  ]
}

function scalingSection({ a, f, m, idleMb }: ReportInput): string[] {
  const scaleRows = [f.quarter, f.half, f.fullOff, f.tenRuns].map((x) => {
    const s = m.results.get(`${x.id}/local`)!
    const secs = med(s, (y) => y.seconds)
    const rss = med(s, (y) => y.peakRssMb)
    return [count(s.reports[0].rowsIn), x.runs, count(s.reports[0].rowsOut), secs.toFixed(2), med(s, (y) => y.cpuSeconds).toFixed(2), rate(s.reports[0].rowsIn, secs), rss.toFixed(0), (rss - idleMb.local).toFixed(0)]
  })
  return [
    `\n### Peak RSS against rows and sorted runs (full compaction, deletion vectors off, local disk), median of ${a.runs} runs\n`,
    markdownTable(['rows in', 'sorted runs', 'rows out', 'wall s', 'CPU s', 'rows in/s (wall)', 'peak RSS (MB)', 'above idle child (MB)'], scaleRows),
  ]
}

function profilesSection(profiles: Record<string, ProfileSummary>, plan: JobPlan): string[] {
  const lines: string[] = []
  for (const [id, p] of Object.entries(profiles)) {
    const scope = plan.main.find((j) => j.id === id)?.warmUps ? 'its measured compaction after the warm-ups' : 'the whole child'
    lines.push(`\n### CPU profile of ${id} (one local run, ${p.totalMs} ms sampled, ${scope}): self time by category\n`)
    lines.push(markdownTable(['category', 'ms', '%'], p.byCategory.map((e) => [e.name, e.ms, e.percent])))
    lines.push(`\nby file\n`)
    lines.push(markdownTable(['file', 'ms', '%'], p.byFile.map((e) => [`\`${e.name}\``, e.ms, e.percent])))
    lines.push(`\nby function\n`)
    lines.push(markdownTable(['function', 'ms', '%'], p.byFunction.map((e) => [`\`${e.name}\``, e.ms, e.percent])))
  }
  return lines
}

const argv = process.argv.slice(2)
if (argv[0] === '--child') await childMain(argv.slice(1))
else await parentMain(argv)
