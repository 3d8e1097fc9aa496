// S3 round trips of one job: what a writer commit, a one-bucket
// compaction and a point lookup send to S3, and how many of those requests follow one
// another, on deletion-vector tables of 64 and 1,024 buckets, side by side in one run.
//
// Every S3 request is recorded by an SDK middleware with its start and end
// (bench/lib/request-trace.ts); a job's figures are its requests by operation, the bytes
// it moved, its wall time and its dependent depth (the most requests that do not overlap
// in time: round trips that could not have run in parallel). The embedded S3 runs in a
// child process of its own (so the measured job does not share an event loop with the
// server) with a first-byte latency on every request that the parent switches between
// 0 and 20 ms, the model of bench/commit-contention.ts (`s3Latency`): the tables are built
// at 0 ms and every job is measured at both. Depth is what matters at 20 ms; at 0 ms a
// request takes about a millisecond and "parallel" requests often do not overlap, so the
// 0 ms depth is noisy and only an upper bound.
//
// The table (bench/lib/dataset.ts: id BIGINT primary key, four value columns, deletion
// vectors on, no partitions) is written by writer commits of 200 random upserts over
// 200,000 keys (seeded), through writeBatch and the direct committer, as the CLI and a
// single writer do. Each bucket count gets one table; after 20 writer commits (and, in
// the full run, again after 100) and at each latency, the jobs are:
//
// - one-bucket compaction with 1 L0 file: the bucket is fully compacted first (at 0 ms),
//   then a small commit of its own (as many rows as a writer commit gives one bucket)
//   adds one L0 file to it, upserting keys the bucket already holds, so the compaction
//   looks them up and marks deletion vectors as upserts of a live key do. **Warm**: a
//   compactor handle that has done jobs on this table before (the setup compactions) and
//   so holds their immutable metadata; it has not seen the commit since. **Cold**: a fresh
//   child process that opens the table and compacts (every manifest it needs is a GET,
//   Table.open included); a fresh process rather than a fresh handle, so no module-level
//   cache lib/ may keep can make it warm.
// - point lookup, warm: a reader handle that has just looked up another key (so the
//   latest snapshot's metadata is cached) looks up a key the compactions just lifted above
//   level 0, as the reader function does: latest snapshot id, then lookup(). Again after
//   one writer commit landed ("one commit later"): that snapshot's metadata is new to it.
// - writer commit: 200 random upserts, one L0 file per touched bucket (≈ 61 of 64, ≈ 180
//   of 1,024), one APPEND snapshot, by the writer handle that wrote the table; three
//   times, each after a compaction it has not seen, the one of median wall time reported
//   (its target is a time).
// - one-bucket compaction with 48 L0 files, warm and cold: the bucket is fully compacted,
//   then 48 small commits each add one L0 file to it (and its twin for the cold run), of
//   random keys of the bucket as writer commits would give it: at 1,024 buckets one row
//   per file, so the 48 files are key-disjoint; the warm compactor last worked before
//   those 48 commits.
// Every compaction uses the direct committer (table.committer): a job's own request chain,
// without the commit queue's hop, which bench/commit-contention.ts measures. The setup
// commits and compactions add snapshots beyond the writer commits; each row names the
// snapshot its job started from.
//
// The manifest table splits a cold compaction's GETs under manifest/ into manifest lists,
// manifest files and index manifests (by name prefix): what a fresh compactor downloads
// and decodes before it can touch its bucket, at 64 against 1,024 buckets.
//
// The CLI check: `strata write` (bin/strata.ts through tsx, a child process per write, as a user runs
// it; the 20 ms model is the server's, so the CLI gets it through AWS_ENDPOINT_URL) of
// 200 rows touching ≈ 180 of 1,024 buckets against 200 rows all in one bucket, on the
// 1,024-bucket table at 20 ms; the median process wall time of --cli-runs each, and
// their ratio. The same two writes also run through the CLI's entry point (lib/cli/main.ts
// `main`) in a child process whose S3 clients are traced, for their requests and depth.
//
//   npx tsx bench/round-trips.ts [--quick] [--cli-runs 3]
//
// Writes bench/out/round-trips.md (the markdown section between the round-trips markers,
// also printed to stdout) and bench/out/round-trips.json (every job's figures and, at
// 20 ms, its requests); --quick writes round-trips-quick.{md,json}: 20 writer commits
// only and one CLI run per write.

import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { promisify } from 'node:util'
import { S3Client } from '@aws-sdk/client-s3'
import { bucketFunction } from '../lib/format/bucket.ts'
import { tableStatus } from '../lib/maintenance/table-status.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { lookup } from '../lib/read/table-read.ts'
import { S3Store, clientFromEnvironment } from '../lib/store/s3-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { Table } from '../lib/handle/table.ts'
import { RowKind } from '../lib/types.ts'
import type { WriteRecord } from '../lib/write/record-checks.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { parseBenchArgs } from './lib/args.ts'
import { type ChildReport, cpuSecondsOf, reportToParent, runChild } from './lib/child.ts'
import { KeySampler, NO_PARTITION, batchOf, createBenchTable, rowOf, seededRandom } from './lib/dataset.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { OUT_DIR, markdownTable, writeResults } from './lib/report.ts'
import { type TraceSummary, type TracedRequest, RequestTrace, S3_OPS, dependentChain, metadataKindOf, summarize } from './lib/request-trace.ts'
import { median } from './lib/stats.ts'

const PACKAGES = ['fauxqs', '@aws-sdk/client-s3', 'hyparquet', 'hyparquet-writer', 'tsx']
const SEED = 20_260_614
const KEY_SPACE = 200_000
const ROWS_PER_COMMIT = 200
const BUCKET_COUNTS = [64, 1024]
const CHECKPOINTS = { full: [20, 100], quick: [20] }
/** first-byte latency of every S3 request, ms: none, and the model of bench/commit-contention.ts */
const LATENCIES = [0, 20]
const TARGET_MS = 20
const BACKLOG = 48
/** writer commits measured in a row at each checkpoint and latency (the median is reported) */
const WRITER_REPEATS = 3
const S3_BUCKET = 'round-trips'
const BIN = join(import.meta.dirname, '..', 'bin', 'strata.ts')
const MARKERS = { begin: '<!-- round-trips:begin -->', end: '<!-- round-trips:end -->' }

/** The round-trip targets of docs/benchmarks.md "S3 round trips per job", at 20 ms. */
const TARGETS = {
  writerCommit: { depth: 12, seconds: 0.6 },
  cliRatio: 2,
  warmCompactionDepth: 10,
  warmLookupDepth: 6,
  coldManifestRatio: 1.2,
}

const log = (s: string) => process.stderr.write(`[round-trips] ${s}\n`)

// --- the embedded S3 in a child process, its latency switched by the parent --------------

interface BackendHello {
  endpoint: string
  region: string
  credentials: { accessKeyId: string; secretAccessKey: string }
}

/** Child side: serve S3 with a first-byte latency the parent sets by a line on stdin. */
async function backendMain(): Promise<void> {
  const { startEmbeddedBackend } = await import('../local/embedded.ts')
  let latencyMs = 0
  // the per-request form of the latency option: read at every request, so a switch applies
  // to the next request
  const backend = await startEmbeddedBackend({ latency: () => latencyMs })
  await backend.createBucket(S3_BUCKET)
  const hello: BackendHello = { endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials }
  process.stdout.write(JSON.stringify(hello) + '\n')
  for await (const line of createInterface({ input: process.stdin })) {
    latencyMs = (JSON.parse(line) as { latencyMs: number }).latencyMs
    process.stdout.write(JSON.stringify({ latencyMs }) + '\n')
  }
  // the parent ended stdin (or died)
  await backend.stop()
  process.exit(0)
}

class LatencyBackend {
  private latencyMs = 0
  private constructor(
    private readonly child: ReturnType<typeof spawn>,
    private readonly lines: AsyncIterator<string>,
    private readonly exited: Promise<number | null>,
    readonly hello: BackendHello,
  ) {}

  static async start(): Promise<LatencyBackend> {
    const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, '--backend'], {
      stdio: ['pipe', 'pipe', 'inherit'],
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    })
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
    const lines = createInterface({ input: child.stdout! })[Symbol.asyncIterator]()
    const first = await Promise.race([lines.next(), exited.then((code) => Promise.reject(new Error(`backend process exited with ${code} before it was ready`)))])
    return new LatencyBackend(child, lines, exited, JSON.parse((first as IteratorResult<string>).value as string) as BackendHello)
  }

  get latency(): number {
    return this.latencyMs
  }

  async setLatency(ms: number): Promise<void> {
    if (ms === this.latencyMs) return
    this.child.stdin!.write(JSON.stringify({ latencyMs: ms }) + '\n')
    const ack = await this.lines.next()
    if (ack.done || (JSON.parse(ack.value) as { latencyMs: number }).latencyMs !== ms) throw new Error(`backend did not confirm latency ${ms} ms`)
    this.latencyMs = ms
  }

  /**
   * A fresh client of this backend (each table handle of the parent gets its own, as a
   * Lambda would), built as lib builds one (clientFromEnvironment: its retries, its socket
   * pool), so the parent's jobs send requests as the CLI's and the functions' do.
   */
  client(): S3Client {
    Object.assign(process.env, this.variables())
    return clientFromEnvironment()
  }

  /** The environment a child (or the CLI) needs to reach this backend. */
  env(): NodeJS.ProcessEnv {
    return { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', ...this.variables() }
  }

  private variables(): Record<string, string> {
    return {
      AWS_ENDPOINT_URL: this.hello.endpoint,
      AWS_REGION: this.hello.region,
      AWS_ACCESS_KEY_ID: this.hello.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: this.hello.credentials.secretAccessKey,
    }
  }

  async stop(): Promise<void> {
    this.child.stdin!.end()
    await this.exited
  }
}

// --- what one measured job reports -------------------------------------------------------

/** A request as the JSON keeps it: times relative to the job's start, the key without the table's prefix. */
interface RequestRecord {
  op: string
  key: string
  startMs: number
  endMs: number
  bytesIn: number
  bytesOut: number
  status: number
}

interface JobFigures {
  wallMs: number
  trace: TraceSummary
  /** one longest chain of requests that followed one another (its length is the depth), as `op object` labels */
  chain: string
  /** the requests (kept for the 20 ms jobs: where the chains come from) */
  requests?: RequestRecord[]
}

/** What a request touched, by the table's layout (docs/format.md), for the chains. */
function objectOf(r: { key: string; status: number }): string {
  const k = r.key
  const kind = metadataKindOf(k)
  if (kind) return kind
  const [dir, name = ''] = k.split('/')
  if (dir === 'snapshot') return name.startsWith('snapshot-') ? (r.status === 404 ? 'snapshot (absent)' : 'snapshot') : name
  if (dir === 'index') return 'DV index'
  if (dir.startsWith('bucket-')) return 'data'
  return dir
}

/** Consecutive equal labels folded: `GET range data ×24`. */
function chainOf(requests: TracedRequest[], strip: (k: string) => string): string {
  const labels = dependentChain(requests).map((r) => `${r.op} ${objectOf({ key: strip(r.key), status: r.status })}`)
  const out: string[] = []
  for (let i = 0; i < labels.length; ) {
    let j = i + 1
    while (j < labels.length && labels[j] === labels[i]) j++
    out.push(j - i > 1 ? `${labels[i]} ×${j - i}` : labels[i])
    i = j
  }
  return out.join(' → ')
}

function figuresOf(requests: TracedRequest[], t0: number, wallMs: number, prefix: string, keep: boolean): JobFigures {
  const strip = (k: string) => (k.startsWith(prefix + '/') ? k.slice(prefix.length + 1) : k)
  return {
    wallMs,
    trace: summarize(requests),
    chain: chainOf(requests, strip),
    requests: keep
      ? requests.map((r) => ({ op: r.op, key: strip(r.key), startMs: round1(r.start - t0), endMs: round1(r.end - t0), bytesIn: r.bytesIn, bytesOut: r.bytesOut, status: r.status }))
      : undefined,
  }
}

const round1 = (x: number) => Math.round(x * 10) / 10

/** Runs one job with the trace's window around it. */
async function measure<T>(trace: RequestTrace, prefix: string, keep: boolean, job: () => Promise<T>): Promise<{ value: T; figures: JobFigures }> {
  trace.reset()
  const t0 = performance.now()
  const value = await job()
  const wallMs = performance.now() - t0
  return { value, figures: figuresOf(trace.take(), t0, wallMs, prefix, keep) }
}

type Scenario =
  | 'writer commit'
  | 'compaction, warm'
  | 'compaction, cold'
  | 'lookup, warm'
  | 'lookup, warm, one commit later'

interface Measurement extends JobFigures {
  scenario: Scenario
  buckets: number
  /** writer commits (200 random upserts each) before this job */
  writerCommits: number
  /** the checkpoint this job belongs to (20 or 100 writer commits) */
  checkpoint: number
  /** latest snapshot id when the job started */
  snapshotId: number
  latencyMs: number
  /** compactions: L0 files of the bucket before the job */
  l0Files?: number
  /** writer commit: buckets it wrote a file to */
  bucketsTouched?: number
  /** writer commit: every repetition (this row is the one of median wall time) */
  repeats?: { wallMs: number; depth: number; requests: number; bucketsTouched: number }[]
  /** compactions: input files and outputs as compactBucket reported them */
  compaction?: { bucket: number; inputFiles: number; outputFiles: number; rowsDeletedByVector: number; outputLevel: number | null }
}

// --- the child jobs: a cold compaction, and the CLI's entry point traced ------------------

interface ColdReport extends ChildReport, JobFigures {
  compaction: NonNullable<Measurement['compaction']>
}

interface CliMainReport extends ChildReport, JobFigures {
  snapshotId: string
}

async function childMain(argv: string[]): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const [job, prefix] = argv
  if (job === 'cold-compact') {
    const bucket = Number(argv[2])
    const keep = argv[3] === 'keep'
    const client = clientFromEnvironment()
    const trace = new RequestTrace(client)
    const t0 = performance.now()
    const cpu0 = process.cpuUsage()
    // a fresh process: Table.open is part of what a cold compactor pays
    const table = await Table.open(new S3Store({ bucket: S3_BUCKET, prefix, client }))
    const r = await compactBucket(table, { partition: NO_PARTITION, bucket, committer: table.committer })
    const wallMs = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    if (r.snapshotId === null) throw new Error(`cold compaction of bucket ${bucket} found nothing to do`)
    const figures = figuresOf(trace.take(), t0, wallMs, prefix, keep)
    reportToParent({
      seconds: wallMs / 1000,
      cpuSeconds: cpuSecondsOf(cpu),
      ...figures,
      compaction: { bucket, inputFiles: r.inputFiles, outputFiles: r.outputFiles, rowsDeletedByVector: r.rowsDeletedByVector, outputLevel: r.outputLevel },
    })
    return
  }
  if (job === 'cli-main') {
    // the trace goes onto the client of every S3 store the CLI opens (its wrapStore seam)
    const trace = new RequestTrace()
    const wrapStore = (store: ObjectStore) => {
      if (store instanceof S3Store) trace.attach(store.client)
      return store
    }
    const { main } = await import('../lib/cli/main.ts')
    const write = process.stdout.write.bind(process.stdout)
    let printed = ''
    process.stdout.write = ((chunk: string) => {
      printed += chunk
      return true
    }) as typeof process.stdout.write
    const t0 = performance.now()
    const cpu0 = process.cpuUsage()
    const code = await main(['write', `s3://${S3_BUCKET}/${prefix}`, argv[2]], { wrapStore })
    const wallMs = performance.now() - t0
    const cpu = process.cpuUsage(cpu0)
    process.stdout.write = write
    if (code !== 0) throw new Error(`strata write exited ${code}`)
    reportToParent({ seconds: wallMs / 1000, cpuSeconds: cpuSecondsOf(cpu), ...figuresOf(trace.take(), t0, wallMs, prefix, true), snapshotId: printed.trim() })
    return
  }
  throw new Error(`unknown child job ${JSON.stringify(job)}`)
}

// --- building and measuring one table -----------------------------------------------------

/** The roles of the buckets of one checkpoint at one latency: each compaction gets a bucket of its own. */
interface Roles {
  oneWarm: number
  oneCold: number
  backlogWarm: number
  backlogCold: number
}

function rolesOf(checkpointIndex: number, latencyIndex: number): Roles {
  const base = checkpointIndex * 8 + latencyIndex * 4
  return { oneWarm: base, oneCold: base + 1, backlogWarm: base + 2, backlogCold: base + 3 }
}

class BenchTable {
  /** writer handle: every commit */
  readonly writer: Table
  /** compactor handle: the setup compactions and the warm ones */
  readonly compactor: Table
  /** reader handle: lookups */
  readonly reader: Table
  /** a handle of its own for checking bucket shapes, so the others' caches stay as the jobs left them */
  readonly inspector: Table
  readonly traces: { writer: RequestTrace; compactor: RequestTrace; reader: RequestTrace }
  readonly keysByBucket: number[][]
  /** keys some commit wrote, by bucket, in the order first written */
  private readonly writtenByBucket: number[][]
  private readonly written = new Uint8Array(KEY_SPACE)
  private readonly bucketOf: (values: unknown[]) => number
  private readonly sampler = new KeySampler(KEY_SPACE, SEED)
  private readonly random = seededRandom(SEED + 1)
  writerCommits = 0
  private tag = 1

  private constructor(readonly buckets: number, readonly prefix: string, handles: Table[], traces: RequestTrace[]) {
    this.writer = handles[0]
    this.compactor = handles[1]
    this.reader = handles[2]
    this.inspector = handles[3]
    this.traces = { writer: traces[0], compactor: traces[1], reader: traces[2] }
    // Paimon's bucket function over the key, as writeBatch computes it
    const bucketOf = bucketFunction(this.writer.view.bucketKeyTypes, buckets)
    this.bucketOf = (values) => bucketOf(values as bigint[])
    this.keysByBucket = Array.from({ length: buckets }, () => [])
    this.writtenByBucket = Array.from({ length: buckets }, () => [])
    for (let k = 0; k < KEY_SPACE; k++) this.keysByBucket[bucketOf([BigInt(k)])].push(k)
  }

  private noteWritten(keys: ArrayLike<number>): void {
    for (let i = 0; i < keys.length; i++) {
      const k = keys[i]
      if (this.written[k]) continue
      this.written[k] = 1
      this.writtenByBucket[this.bucketOf([BigInt(k)])].push(k)
    }
  }

  static async create(backend: LatencyBackend, buckets: number): Promise<BenchTable> {
    const prefix = `b${buckets}`
    // a client per handle, as separate processes would have: writer, compactor, reader, inspector
    const clients = Array.from({ length: 4 }, () => backend.client())
    const stores = clients.map((client) => new S3Store({ bucket: S3_BUCKET, prefix, client }))
    await createBenchTable(stores[0], { buckets, deletionVectors: true })
    const handles = await Promise.all(stores.map((s) => Table.open(s)))
    return new BenchTable(buckets, prefix, handles, clients.slice(0, 3).map((c) => new RequestTrace(c)))
  }

  /** One writer commit of 200 random upserts (seeded). */
  writerCommit() {
    const keys = this.sampler.sample(ROWS_PER_COMMIT)
    const records = batchOf(keys, this.tag++, 0, this.sampler.random)
    this.noteWritten(keys)
    this.writerCommits++
    return writeBatch(this.writer, records, { committer: this.writer.committer })
  }

  async writeUpTo(n: number): Promise<void> {
    const t0 = performance.now()
    const from = this.writerCommits
    while (this.writerCommits < n) await this.writerCommit()
    log(`${this.buckets} buckets: writer commits ${from} → ${n} in ${((performance.now() - t0) / 1000).toFixed(1)} s`)
  }

  /**
   * `n` distinct keys of a bucket picked at random (seeded): of the whole key space, as a
   * writer commit's rows for the bucket are (at this fill mostly new keys); or, with
   * `live`, among the keys written before where there are enough, since an upsert of a
   * live key is what makes a compaction look the key up and mark the old row in a
   * deletion vector.
   */
  keysIn(bucket: number, n: number, live = false): number[] {
    const pick = (from: number[], out: Set<number>, upTo: number) => {
      while (out.size < Math.min(upTo, from.length)) out.add(from[Math.floor(this.random() * from.length)])
    }
    const out = new Set<number>()
    if (live) pick(this.writtenByBucket[bucket], out, n)
    if (out.size < n) pick(this.keysByBucket[bucket], out, n)
    return [...out]
  }

  /** A small commit adding one L0 file to each of these buckets (as many rows as a writer commit gives a bucket, at least 1); the keys it wrote, by bucket. */
  async touch(buckets: number[], live: boolean): Promise<Map<number, number[]>> {
    const perBucket = Math.max(1, Math.round(ROWS_PER_COMMIT / this.buckets))
    const keys = new Map(buckets.map((b) => [b, this.keysIn(b, perBucket, live)]))
    const records: WriteRecord[] = [...keys.values()].flat().map((k) => ({ kind: RowKind.INSERT, row: rowOf(k, this.tag) }))
    this.noteWritten([...keys.values()].flat())
    this.tag++
    const r = await writeBatch(this.writer, records, { committer: this.writer.committer })
    if (r.buckets.length !== buckets.length) throw new Error(`expected one L0 file in each of buckets ${buckets.join(', ')}, wrote ${r.buckets.map((b) => b.bucket).join(', ')}`)
    return keys
  }

  /** Compacts a bucket into the top level through the compactor handle (a job it has done). */
  async compactFully(bucket: number): Promise<void> {
    for (;;) {
      const r = await compactBucket(this.compactor, { partition: NO_PARTITION, bucket, full: true, committer: this.compactor.committer })
      if (!r.needsMore || r.snapshotId === null) return
    }
  }

  async l0Files(buckets: number[]): Promise<Map<number, number>> {
    const status = await tableStatus(this.inspector)
    return new Map(buckets.map((b) => [b, status.buckets.find((s) => s.bucket === b)?.l0Files ?? 0]))
  }

  latestId(): Promise<number> {
    return this.inspector.snapshots.latestId()
  }
}

interface MeasureContext {
  backend: LatencyBackend
  t: BenchTable
  checkpoint: number
  checkpointIndex: number
  out: Measurement[]
}

/** The jobs of one checkpoint at every latency. */
async function measureCheckpoint(ctx: MeasureContext): Promise<void> {
  const { backend, t, checkpoint, checkpointIndex, out } = ctx
  for (const [li, latencyMs] of LATENCIES.entries()) {
    const roles = rolesOf(checkpointIndex, li)
    const keep = latencyMs === TARGET_MS
    const base = { buckets: t.buckets, checkpoint, latencyMs }

    // setup at 0 ms: both one-file buckets compacted into the top level by the compactor
    // handle (its jobs), then one commit gives each exactly one L0 file
    await backend.setLatency(0)
    await t.compactFully(roles.oneWarm)
    await t.compactFully(roles.oneCold)
    const lookupKeys = await t.touch([roles.oneWarm, roles.oneCold], true)
    const oneL0 = await t.l0Files([roles.oneWarm, roles.oneCold])
    for (const [b, n] of oneL0) if (n !== 1) throw new Error(`bucket ${b}: ${n} L0 files, expected 1`)

    await backend.setLatency(latencyMs)
    out.push(await warmCompaction(t, roles.oneWarm, 1, base, keep))
    out.push(await coldCompaction(backend, t, roles.oneCold, 1, base, keep))

    // lookups of keys the two compactions just lifted above level 0, each in a data file the
    // reader has not opened; the first lookup, of a key in a third bucket, only brings the
    // reader up to the latest snapshot
    await readerLookup(t, t.keysIn(roles.backlogWarm, 1)[0])
    out.push(await warmLookup(t, 'lookup, warm', lookupKeys.get(roles.oneWarm)![0], base, keep))

    // the writer commit carries a wall-time target, so it is repeated and the one of median
    // wall time reported, the others' times beside it. Each finds a snapshot of another
    // handle's on top of its own last commit (the first: the compactions above; the others:
    // a compaction of a bucket the previous one touched, unmeasured), so each reads that
    // commit's new manifests, as a writer among other writers and compactors does.
    const commits: Measurement[] = []
    let previous: Awaited<ReturnType<BenchTable['writerCommit']>> | null = null
    for (let i = 0; i < WRITER_REPEATS; i++) {
      if (previous) await t.compactFully(previous.buckets[0].bucket)
      const snapshotId = await t.latestId()
      const writerCommits = t.writerCommits
      const w = await measure(t.traces.writer, t.prefix, keep, () => t.writerCommit())
      previous = w.value
      commits.push({ scenario: 'writer commit', ...base, writerCommits, snapshotId, bucketsTouched: w.value.buckets.length, ...w.figures })
      logRow(commits[i])
      // the reader, one commit behind
      if (i === 0) out.push(await warmLookup(t, 'lookup, warm, one commit later', lookupKeys.get(roles.oneCold)![0], base, keep))
    }
    const mid = median(commits.map((c) => c.wallMs))
    out.push({ ...commits.find((c) => c.wallMs === mid)!, repeats: commits.map((c) => ({ wallMs: c.wallMs, depth: c.trace.depth, requests: c.trace.requests, bucketsTouched: c.bucketsTouched! })) })

    // setup at 0 ms: two buckets compacted, then 48 commits each adding one L0 file to both
    await backend.setLatency(0)
    await t.compactFully(roles.backlogWarm)
    await t.compactFully(roles.backlogCold)
    for (let i = 0; i < BACKLOG; i++) await t.touch([roles.backlogWarm, roles.backlogCold], false)
    const backlog = await t.l0Files([roles.backlogWarm, roles.backlogCold])
    for (const [b, n] of backlog) if (n !== BACKLOG) throw new Error(`bucket ${b}: ${n} L0 files, expected ${BACKLOG}`)

    await backend.setLatency(latencyMs)
    out.push(await warmCompaction(t, roles.backlogWarm, BACKLOG, base, keep))
    out.push(await coldCompaction(backend, t, roles.backlogCold, BACKLOG, base, keep))
  }
  await backend.setLatency(0)
}

type Base = Pick<Measurement, 'buckets' | 'checkpoint' | 'latencyMs'>

async function warmCompaction(t: BenchTable, bucket: number, l0Files: number, base: Base, keep: boolean): Promise<Measurement> {
  const snapshotId = await t.latestId()
  const { value: r, figures } = await measure(t.traces.compactor, t.prefix, keep, () =>
    compactBucket(t.compactor, { partition: NO_PARTITION, bucket, committer: t.compactor.committer }),
  )
  if (r.snapshotId === null) throw new Error(`warm compaction of bucket ${bucket} found nothing to do`)
  const m: Measurement = {
    scenario: 'compaction, warm', ...base, writerCommits: t.writerCommits, snapshotId, l0Files,
    compaction: { bucket, inputFiles: r.inputFiles, outputFiles: r.outputFiles, rowsDeletedByVector: r.rowsDeletedByVector, outputLevel: r.outputLevel },
    ...figures,
  }
  logRow(m)
  return m
}

async function coldCompaction(backend: LatencyBackend, t: BenchTable, bucket: number, l0Files: number, base: Base, keep: boolean): Promise<Measurement> {
  const snapshotId = await t.latestId()
  const r = await runChild<ColdReport>(import.meta.filename, ['cold-compact', t.prefix, String(bucket), keep ? 'keep' : 'summary'], { env: backend.env() })
  const m: Measurement = { scenario: 'compaction, cold', ...base, writerCommits: t.writerCommits, snapshotId, l0Files, compaction: r.compaction, wallMs: r.wallMs, trace: r.trace, chain: r.chain, requests: r.requests }
  logRow(m)
  return m
}

/** A lookup as the reader function makes it: the latest snapshot id, then lookup(). */
async function readerLookup(t: BenchTable, key: number): Promise<boolean> {
  const snapshotId = await t.reader.snapshots.latestId()
  return (await lookup(t.reader, { id: key }, { snapshotId })) !== null
}

async function warmLookup(t: BenchTable, scenario: Scenario, key: number, base: Base, keep: boolean): Promise<Measurement> {
  const snapshotId = await t.latestId()
  const { value: found, figures } = await measure(t.traces.reader, t.prefix, keep, () => readerLookup(t, key))
  // the key was lifted above level 0 by a compaction, so a deletion-vector reader sees it
  if (!found) throw new Error(`lookup of key ${key} found nothing`)
  const m: Measurement = { scenario, ...base, writerCommits: t.writerCommits, snapshotId, ...figures }
  logRow(m)
  return m
}

function logRow(m: Measurement): void {
  const tr = m.trace
  log(
    `${m.buckets} buckets, ${m.writerCommits} commits (snapshot ${m.snapshotId}), ${m.latencyMs} ms, ${m.scenario}${m.l0Files ? ` (${m.l0Files} L0)` : ''}: ` +
      `${tr.requests} requests, depth ${tr.depth}, ${m.wallMs.toFixed(0)} ms${m.bucketsTouched ? `, ${m.bucketsTouched} buckets touched` : ''}`,
  )
}

// --- the CLI check ------------------------------------------------------------------------

interface CliResult {
  kind: 'spread' | 'one bucket'
  rows: number
  bucketsTouched: number
  /** process wall time of each `strata write` run, s */
  processSeconds: number[]
  /** the CLI's main() in a traced child, one per run */
  mains: CliMainReport[]
  /** the run of median main() time */
  main: CliMainReport
}

/** One input line of the bench schema as `strata write` takes it. */
function jsonLine(k: number, tag: number): string {
  const [, name, price, qty] = rowOf(k, tag) as [bigint, string, bigint, number, bigint]
  const cents = Number(price)
  return JSON.stringify({ id: k, name, price: `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`, qty, ts: 1_780_000_000_000 + k })
}

async function cliCheck(backend: LatencyBackend, t: BenchTable, dir: string, runs: number): Promise<CliResult[]> {
  const bucketOf = bucketFunction(t.writer.view.bucketKeyTypes, t.buckets)
  // 200 random keys of the key space; and 200 keys of one bucket: a bucket holds only
  // ~195 of the 200,000, so the one-bucket file takes new keys above the key space too
  const spread = new KeySampler(KEY_SPACE, SEED + 7).sample(ROWS_PER_COMMIT)
  const target = t.buckets - 1
  const single: number[] = []
  for (let k = 0; single.length < ROWS_PER_COMMIT; k++) if (bucketOf([BigInt(k)]) === target) single.push(k)
  const inputs = [
    { kind: 'spread' as const, keys: [...spread] },
    { kind: 'one bucket' as const, keys: single },
  ].map(({ kind, keys }, i) => {
    const file = join(dir, `cli-${i}.jsonl`)
    writeFileSync(file, keys.map((k) => jsonLine(k, 9_000 + i)).join('\n') + '\n')
    return { kind, file, rows: keys.length, bucketsTouched: new Set(keys.map((k) => bucketOf([BigInt(k)]))).size }
  })
  await backend.setLatency(TARGET_MS)
  const processSeconds = new Map(inputs.map((x) => [x.kind, [] as number[]]))
  const mains = new Map(inputs.map((x) => [x.kind, [] as CliMainReport[]]))
  const run = promisify(execFile)
  for (let r = 0; r < runs; r++) {
    // alternating, so a drift of the machine's load hits both alike
    for (const x of inputs) {
      const t0 = performance.now()
      await run(process.execPath, ['--import', 'tsx', BIN, 'write', `s3://${S3_BUCKET}/${t.prefix}`, x.file], { env: backend.env() })
      const s = (performance.now() - t0) / 1000
      processSeconds.get(x.kind)!.push(s)
      const main = await runChild<CliMainReport>(import.meta.filename, ['cli-main', t.prefix, x.file], { env: backend.env() })
      mains.get(x.kind)!.push(main)
      log(`strata write (${x.kind}, ${x.bucketsTouched} buckets), run ${r + 1}/${runs}: process ${s.toFixed(2)} s; main() ${main.wallMs.toFixed(0)} ms, ${main.trace.requests} requests, depth ${main.trace.depth}`)
    }
  }
  await backend.setLatency(0)
  return inputs.map((x) => {
    const ms = mains.get(x.kind)!
    const mid = median(ms.map((m) => m.wallMs))
    return { kind: x.kind, rows: x.rows, bucketsTouched: x.bucketsTouched, processSeconds: processSeconds.get(x.kind)!, mains: ms, main: ms.find((m) => m.wallMs === mid)! }
  })
}

// --- the report ---------------------------------------------------------------------------

const kib = (b: number) => (b / 1024).toFixed(1)
const yes = (ok: boolean) => (ok ? 'yes' : '**no**')

/** The issue's target for a row, and whether it is met (at 20 ms only, where depth means round trips). */
function targetOf(m: Measurement): { target: string; met: string } {
  if (m.latencyMs !== TARGET_MS) return { target: '', met: '' }
  const d = m.trace.depth
  if (m.scenario === 'writer commit' && m.buckets === 1024) {
    const { depth, seconds } = TARGETS.writerCommit
    return { target: `depth ≤ ${depth}, ≤ ${seconds} s`, met: yes(d <= depth && m.wallMs / 1000 <= seconds) }
  }
  if (m.scenario === 'compaction, warm') return { target: `depth ≤ ${TARGETS.warmCompactionDepth}`, met: yes(d <= TARGETS.warmCompactionDepth) }
  if (m.scenario.startsWith('lookup, warm')) return { target: `depth ≤ ${TARGETS.warmLookupDepth}`, met: yes(d <= TARGETS.warmLookupDepth) }
  return { target: '', met: '' }
}

interface ManifestRatio {
  checkpoint: number
  l0Files: number
  latencyMs: number
  bytes: Record<number, number>
  /** manifest bytes at the most buckets ÷ at the fewest */
  ratio: number
}

function manifestRatios(ms: Measurement[]): ManifestRatio[] {
  const out: ManifestRatio[] = []
  const cold = ms.filter((m) => m.scenario === 'compaction, cold')
  for (const checkpoint of [...new Set(cold.map((m) => m.checkpoint))]) {
    for (const l0Files of [1, BACKLOG]) {
      for (const latencyMs of LATENCIES) {
        const at = cold.filter((m) => m.checkpoint === checkpoint && m.l0Files === l0Files && m.latencyMs === latencyMs)
        if (at.length < 2) continue
        const bytes = Object.fromEntries(at.map((m) => [m.buckets, manifestBytes(m.trace)]))
        // the most buckets against the fewest: the target is that a cold compaction's
        // metadata does not grow with the bucket count (less at 1,024 meets it)
        const counts = at.map((m) => m.buckets).sort((a, b) => a - b)
        out.push({ checkpoint, l0Files, latencyMs, bytes, ratio: bytes[counts[counts.length - 1]] / Math.max(1, bytes[counts[0]]) })
      }
    }
  }
  return out
}

const manifestBytes = (tr: TraceSummary) => tr.metadata['manifest list'].bytes + tr.metadata.manifest.bytes + tr.metadata['index manifest'].bytes

function markdown(ms: Measurement[], cli: CliResult[], cliRuns: number, machine: ReturnType<typeof machineInfo>, quick: boolean, wallSeconds: number): string {
  const lines: string[] = [MARKERS.begin, '## S3 round trips per job (measured, embedded S3)', '']
  lines.push(
    `Deletion-vector tables with a primary key (bench/lib/dataset.ts), ${BUCKET_COUNTS.join(' and ')} buckets, written by writer commits of ${ROWS_PER_COMMIT} random upserts over ${KEY_SPACE.toLocaleString('en-US')} keys (seeded) through writeBatch and the direct committer; measured after ${(quick ? CHECKPOINTS.quick : CHECKPOINTS.full).join(' and ')} writer commits, at S3 first-byte latency ${LATENCIES.join(' and ')} ms (the embedded backend in a child process; every S3 request waits that long before it is handled, the model of bench/commit-contention.ts). ` +
      `Every request is recorded by an SDK middleware with its start and end (bench/lib/request-trace.ts). **Depth** is the most requests of the job that pairwise do not overlap in time: round trips that followed one another. It is meaningful at ${TARGET_MS} ms; at 0 ms a request takes about a millisecond, "parallel" ones often do not overlap, and the depth is noisy (an upper bound).`,
    '',
    `Jobs: **compaction, warm** is compactBucket on a compactor handle that did jobs on this table before (so holds their immutable metadata) but has not seen the commits since; **cold** is a fresh child process: Table.open, then compactBucket. "1 L0" buckets were fully compacted, then one commit added one L0 file (upserts of keys the bucket holds, ${ROWS_PER_COMMIT} ÷ buckets rows, at least 1); "48 L0" buckets got 48 commits after their full compaction, each of as many random keys of the bucket (as writer commits give it; at 1,024 buckets one row per file, so the files are key-disjoint). Compactions and the writer commit use the direct committer (no commit-queue hop). The **writer commit** is measured ${WRITER_REPEATS} times, each after another handle's commit (a compaction) it has not seen: the row is the one of median wall time, all times in brackets. **lookup, warm** is the reader function's way (latest snapshot id, then lookup()) on a reader handle that has just looked up another key, of a key that lives above level 0; **one commit later** is the same after one writer commit landed. Setup commits and compactions add snapshots beyond the writer commits: "snapshot" is the latest one when the job started. Other jobs are one sample each; wall times are of this 2-core machine, shared with the backend process.`,
    '',
  )
  const rows = ms.map((m) => {
    const tr = m.trace
    const { target, met } = targetOf(m)
    return [
      m.scenario + (m.l0Files ? ` (${m.l0Files} L0)` : '') + (m.bucketsTouched ? ` (${m.bucketsTouched} buckets)` : ''),
      m.buckets, m.writerCommits, m.snapshotId, m.latencyMs,
      ...S3_OPS.filter((o) => o !== 'other').map((o) => tr.byOp[o]),
      tr.requests, kib(tr.bytesIn), kib(tr.bytesOut), `**${tr.depth}**`, m.repeats ? `${m.wallMs.toFixed(0)} (${m.repeats.map((r) => r.wallMs.toFixed(0)).join(', ')})` : m.wallMs.toFixed(0), target, met,
    ]
  })
  const order = (m: Measurement) => ['writer commit', 'compaction, warm', 'compaction, cold', 'lookup, warm', 'lookup, warm, one commit later'].indexOf(m.scenario)
  const sorted = ms.map((m, i) => ({ m, row: rows[i] })).sort((a, b) => order(a.m) - order(b.m) || (a.m.l0Files ?? 0) - (b.m.l0Files ?? 0) || a.m.checkpoint - b.m.checkpoint || a.m.buckets - b.m.buckets || a.m.latencyMs - b.m.latencyMs)
  lines.push(markdownTable(['job', 'buckets', 'writer commits', 'snapshot', 'latency ms', 'GET', 'GET range', 'HEAD', 'PUT', 'cond. PUT', 'DELETE', 'LIST', 'requests', 'KiB read', 'KiB written', 'depth', 'wall ms', 'target (at 20 ms)', 'met'], sorted.map((x) => x.row)))
  const other = ms.filter((m) => m.trace.byOp.other > 0)
  if (other.length) lines.push('', `Requests of other kinds (multipart uploads) in ${other.length} job(s), counted in "requests": ${other.map((m) => `${m.scenario} ${m.buckets}/${m.latencyMs} ms ${m.trace.byOp.other}`).join(', ')}.`)

  lines.push('', '### Metadata a cold compaction downloads and decodes', '')
  lines.push(`GETs of keys under \`manifest/\` by the cold compaction, by name prefix (\`manifest-list-\`, \`manifest-\`, \`index-manifest-\`); every one is decoded (Avro). GETs / KiB. The target is that these bytes do not grow with the bucket count: at most ${TARGETS.coldManifestRatio}× the 64-bucket figure at 1,024 buckets (less meets it).`, '')
  const cold = ms.filter((m) => m.scenario === 'compaction, cold').sort((a, b) => a.checkpoint - b.checkpoint || (a.l0Files ?? 0) - (b.l0Files ?? 0) || a.latencyMs - b.latencyMs || a.buckets - b.buckets)
  const ratios = manifestRatios(ms)
  lines.push(
    markdownTable(
      ['writer commits (checkpoint)', 'L0 files', 'latency ms', 'buckets', 'snapshot', 'manifest lists', 'manifest files', 'index manifests', 'manifest KiB', '1,024 ÷ 64 buckets', `target ≤ ${TARGETS.coldManifestRatio}×`],
      cold.map((m) => {
        const md = m.trace.metadata
        const r = ratios.find((x) => x.checkpoint === m.checkpoint && x.l0Files === m.l0Files && x.latencyMs === m.latencyMs)
        const last = r && m.buckets === Math.max(...Object.keys(r.bytes).map(Number))
        return [
          m.checkpoint, m.l0Files ?? '', m.latencyMs, m.buckets, m.snapshotId,
          `${md['manifest list'].gets} / ${kib(md['manifest list'].bytes)}`, `${md.manifest.gets} / ${kib(md.manifest.bytes)}`, `${md['index manifest'].gets} / ${kib(md['index manifest'].bytes)}`,
          kib(manifestBytes(m.trace)), last ? `${r.ratio.toFixed(2)}×` : '', last ? yes(r.ratio <= TARGETS.coldManifestRatio) : '',
        ]
      }),
    ),
  )

  let cliRatio = NaN
  if (cli.length === 2) {
    const [spread, one] = cli
    cliRatio = median(spread.processSeconds) / median(one.processSeconds)
    const mainRatio = spread.main.wallMs / one.main.wallMs
    lines.push('', `### \`strata write\`: ${spread.bucketsTouched} buckets against one (1,024-bucket table, ${TARGET_MS} ms)`, '')
    lines.push(
      `bin/strata.ts (through tsx) in a child process per write, against the embedded S3 at ${TARGET_MS} ms (the latency is the server's, so the CLI gets it through AWS_ENDPOINT_URL); ${spread.rows} rows each, alternating, median of ${cliRuns} run(s). Process time includes Node and tsx start-up (the same for both). Each run also calls the CLI's entry point (lib/cli/main.ts \`main(['write', …])\`) in a child process whose S3 clients are traced, timed from the call to its return: Table.open, parsing, writeBatch and its commit; its columns are the run of median main() time. Every write is a commit of its own on the 1,024-bucket table.`,
      '',
    )
    lines.push(
      markdownTable(
        ['write', 'rows', 'buckets touched', 'process s (median)', 'process s (runs)', 'main() ms', 'main() requests', 'main() PUT', 'main() depth', 'ratio spread ÷ one bucket', `target ≤ ${TARGETS.cliRatio}×`],
        cli.map((c, i) => [
          c.kind, c.rows, c.bucketsTouched, median(c.processSeconds).toFixed(2), c.processSeconds.map((s) => s.toFixed(2)).join(', '), c.main.wallMs.toFixed(0), c.main.trace.requests, c.main.trace.byOp.PUT, c.main.trace.depth,
          i === 0 ? `${cliRatio.toFixed(2)}× (main(): ${mainRatio.toFixed(2)}×)` : '', i === 0 ? yes(cliRatio <= TARGETS.cliRatio) : '',
        ]),
      ),
    )
  }

  const lastCheckpoint = Math.max(...ms.map((m) => m.checkpoint))
  lines.push('', `### Where the depth comes from (${TARGET_MS} ms, ${lastCheckpoint} writer commits)`, '')
  lines.push('One longest chain of requests that followed one another (the depth), in time order; where requests ran in parallel the chain names the one that ended first. `snapshot (absent)` is the probe for the next snapshot that the latest snapshot id ends with.', '')
  lines.push(
    markdownTable(
      ['job', 'buckets', 'depth', 'chain'],
      ms
        .filter((m) => m.latencyMs === TARGET_MS && m.checkpoint === lastCheckpoint)
        .map((m) => [m.scenario + (m.l0Files ? ` (${m.l0Files} L0)` : ''), m.buckets, m.trace.depth, m.chain]),
    ),
  )
  if (cli.length === 2) lines.push('', `\`strata write\` through main(), ${TARGET_MS} ms: ${cli.map((c) => `${c.kind} (depth ${c.main.trace.depth}): ${c.main.chain}`).join('; ')}.`)

  // the targets in one list
  lines.push('', `### Targets at ${TARGET_MS} ms`, '')
  const at20 = ms.filter((m) => m.latencyMs === TARGET_MS)
  const list = (xs: Measurement[], f: (m: Measurement) => string) => xs.map(f).join('; ')
  const wc = at20.filter((m) => m.scenario === 'writer commit' && m.buckets === 1024)
  lines.push(`- Writer commit touching ~186 of 1,024 buckets: depth ≤ ${TARGETS.writerCommit.depth} and ≤ ${TARGETS.writerCommit.seconds} s: ${list(wc, (m) => `${m.bucketsTouched} buckets after ${m.writerCommits} commits: depth ${m.trace.depth}, ${(m.wallMs / 1000).toFixed(2)} s, ${yes(m.trace.depth <= TARGETS.writerCommit.depth && m.wallMs / 1000 <= TARGETS.writerCommit.seconds)}`)}.`)
  if (cli.length === 2) lines.push(`- \`strata write\` of ${cli[0].bucketsTouched} buckets ≤ ${TARGETS.cliRatio}× a one-bucket write: ${cliRatio.toFixed(2)}×, ${yes(cliRatio <= TARGETS.cliRatio)}.`)
  const wcomp = at20.filter((m) => m.scenario === 'compaction, warm')
  lines.push(`- Warm one-bucket compaction depth ≤ ${TARGETS.warmCompactionDepth} with 1 or 48 L0 files: ${list(wcomp, (m) => `${m.buckets} buckets/${m.writerCommits} commits/${m.l0Files} L0: ${m.trace.depth}`)}; ${yes(wcomp.every((m) => m.trace.depth <= TARGETS.warmCompactionDepth))}.`)
  const wl = at20.filter((m) => m.scenario.startsWith('lookup, warm'))
  lines.push(`- Warm lookup depth ≤ ${TARGETS.warmLookupDepth}: ${list(wl, (m) => `${m.buckets} buckets/${m.writerCommits} commits${m.scenario.endsWith('later') ? ' (one commit later)' : ''}: ${m.trace.depth}`)}; ${yes(wl.every((m) => m.trace.depth <= TARGETS.warmLookupDepth))}.`)
  const cr = ratios.filter((r) => r.latencyMs === TARGET_MS)
  lines.push(`- Cold compaction manifest bytes at 1,024 buckets ≤ ${TARGETS.coldManifestRatio}× those at 64, at the same commit count: ${cr.map((r) => `${r.checkpoint} commits/${r.l0Files} L0: ${Object.entries(r.bytes).map(([b, x]) => `${kib(x)} KiB at ${b}`).join(' vs ')} = ${r.ratio.toFixed(2)}×`).join('; ')}; ${yes(cr.every((r) => r.ratio <= TARGETS.coldManifestRatio))}.`)

  lines.push('', `Run: ${wallSeconds.toFixed(0)} s${quick ? ' (--quick)' : ''}. ${machineMarkdown(machine)}`, MARKERS.end)
  return lines.join('\n')
}

// --- main ---------------------------------------------------------------------------------

async function parentMain(argv: string[]): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const args = parseBenchArgs(argv, ['--quick'], ['--cli-runs'])
  const quick = args.has('--quick')
  const cliRuns = args.num('--cli-runs', quick ? 1 : 3)
  const checkpoints = quick ? CHECKPOINTS.quick : CHECKPOINTS.full
  const machine = machineInfo(PACKAGES)
  const started = performance.now()
  const dir = mkdtempSync(join(tmpdir(), 'strata-bench-round-trips-'))
  const backend = await LatencyBackend.start()
  const measurements: Measurement[] = []
  let cli: CliResult[] = []
  try {
    for (const buckets of BUCKET_COUNTS) {
      const t = await BenchTable.create(backend, buckets)
      for (const [ci, checkpoint] of checkpoints.entries()) {
        await t.writeUpTo(checkpoint)
        await measureCheckpoint({ backend, t, checkpoint, checkpointIndex: ci, out: measurements })
      }
      if (buckets === 1024) cli = await cliCheck(backend, t, dir, cliRuns)
    }
  } finally {
    await backend.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  const wallSeconds = (performance.now() - started) / 1000
  const md = markdown(measurements, cli, cliRuns, machine, quick, wallSeconds)
  console.log(md)
  const name = quick ? 'round-trips-quick' : 'round-trips'
  const path = writeResults(name, {
    machine,
    wallSeconds,
    params: { seed: SEED, keySpace: KEY_SPACE, rowsPerCommit: ROWS_PER_COMMIT, bucketCounts: BUCKET_COUNTS, checkpoints, latenciesMs: LATENCIES, backlog: BACKLOG, cliRuns, targets: TARGETS },
    measurements,
    manifestRatios: manifestRatios(measurements),
    cli,
  })
  writeFileSync(join(OUT_DIR, `${name}.md`), md + '\n')
  log(`results: ${path} and ${name}.md`)
}

const argv = process.argv.slice(2)
if (argv[0] === '--backend') await backendMain()
else if (argv[0] === '--child') await childMain(argv.slice(1))
else await parentMain(argv)
