// Scan of the latest snapshot, deletion-vector mode against merge-on-read, side by side in
// one run (medians of --runs). The same 1,000,000 records (a batch of all 600k keys, then 4
// batches each upserting a random 100k of them; 5% deletes) go into a 4-bucket table three
// ways:
// - merge-on-read: deletion vectors off, 5 level-0 sorted runs per bucket, merged by key;
// - deletion vectors: batch 1 fully compacted to the top level, batches 2-5 then compacted
//   with lookups (force-up-level-0), so each bucket is a top-level file whose superseded
//   rows are marked in its deletion vector plus one file of the newer rows; read file by
//   file, vectors applied, no merge;
// - fully compacted (deletion vectors on, one top-level file per bucket, no vectors): the floor.
// Each scan is `scan()` from lib/read/table-read.ts counting rows, in a fresh child process;
// local disk, and the embedded S3 backend unless --no-s3.
//
// Point lookups (embedded S3 only): in a fresh child per layout, one reader handle opens the
// table and looks up --lookups random keys of the key space (the first batch writes every
// key, so a key is either live or deleted) as the reader function does (latest snapshot id, then `lookup()`); an SDK
// middleware counts every S3 request and the bytes it moved. The first lookup is reported
// apart as the cold one (table open, snapshot, manifests), the others as a warm handle's.
//
//   npx tsx bench/scan.ts [--quick] [--runs 3] [--no-s3] [--lookups 200]

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { lookup, newReadStats, scan } from '../lib/read/table-read.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import { openStore } from '../lib/store/open-store.ts'
import { S3Store, clientFromEnvironment } from '../lib/store/s3-store.ts'
import { Table } from '../lib/handle/table.ts'
import type { EmbeddedBackend } from '../local/embedded.ts'
import { parseBenchArgs } from './lib/args.ts'
import { type ChildReport, reportToParent, runChild, timed } from './lib/child.ts'
import { copyStore } from './lib/copy-store.ts'
import { type LoadPlan, KeySampler, createBenchTable, loadBatches, seededRandom } from './lib/dataset.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { markdownTable, writeResults } from './lib/report.ts'
import { type S3Traffic, S3RequestCounter } from './lib/s3-counter.ts'
import { count, median, percentile, rate } from './lib/stats.ts'

const PACKAGES = ['hyparquet', 'hyparquet-writer', 'hyparquet-compressors', 'fauxqs', '@aws-sdk/client-s3', 'tsx']
const BUCKETS = 4
const RUNS_PER_BUCKET = 5
const DELETE_RATIO = 0.05
const SEED = 20_260_502

interface ScanReport extends ChildReport {
  rows: number
  filesOpened: number[]
  mergedSplits: number
  deletionVectorSplits: number
  /** rows handed to the Parquet decoder, and rows left undecoded (their pages wholly deleted) */
  rowsDecoded: number
  rowsSkipped: number
}

interface LookupSample {
  traffic: S3Traffic
  ms: number
}

interface LookupReport extends ChildReport {
  cold: LookupSample
  warm: LookupSample[]
  found: number
  /** the rows found, one JSON text per key (null when absent), to compare the layouts */
  digest: string
}

/** Keys to look up: uniform over the key space, live and deleted ones alike. */
function lookupKeys(keySpace: number, n: number, seed: number): number[] {
  const random = seededRandom(seed)
  return Array.from({ length: n }, () => Math.floor(random() * keySpace))
}

async function lookupChild(uri: string, keySpace: number, n: number, seed: number): Promise<void> {
  const m = /^s3:\/\/([^/]+)\/(.+)$/.exec(uri)
  if (!m) throw new Error(`lookup child needs an s3:// URI, got ${uri}`)
  const client = clientFromEnvironment()
  const counter = new S3RequestCounter(client)
  const keys = lookupKeys(keySpace, n, seed)
  const rows: unknown[] = []
  let table: Table | null = null
  const one = async (k: number): Promise<LookupSample> => {
    const t0 = performance.now()
    if (!table) table = await Table.open(new S3Store({ bucket: m[1], prefix: m[2], client }))
    const snapshotId = await table.snapshots.latestId()
    rows.push(await lookup(table, { id: k }, { snapshotId }))
    return { ms: performance.now() - t0, traffic: counter.take() }
  }
  const { value, seconds, cpuSeconds } = await timed(async () => {
    const cold = await one(keys[0])
    const warm: LookupSample[] = []
    for (const k of keys.slice(1)) warm.push(await one(k))
    return { cold, warm }
  })
  const digest = JSON.stringify(rows, (_, v) => (typeof v === 'bigint' ? String(v) : v))
  reportToParent({ seconds, cpuSeconds, ...value, found: rows.filter((r) => r !== null).length, digest })
}

async function childMain(argv: string[]): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const [job, uri, columns] = argv
  if (job === 'lookup') return lookupChild(uri, Number(argv[2]), Number(argv[3]), Number(argv[4]))
  if (job !== 'scan') throw new Error(`unknown child job ${JSON.stringify(job)}`)
  const table = await Table.open(openStore(uri))
  const stats = newReadStats()
  const { value: rows, seconds, cpuSeconds } = await timed(async () => {
    let n = 0
    for await (const batch of scan(table, { stats, columns: columns === 'all' ? undefined : columns.split(',') })) n += batch.length
    return n
  })
  reportToParent({ seconds, cpuSeconds, rows, ...stats })
}

type Layout = 'mor' | 'dv' | 'full'

const LAYOUTS: { id: Layout; label: string }[] = [
  { id: 'mor', label: `merge-on-read, ${RUNS_PER_BUCKET} L0 runs per bucket` },
  { id: 'dv', label: 'deletion vectors: top level + vectors, plus 1 compacted run' },
  { id: 'full', label: 'fully compacted (1 file per bucket, no vectors)' },
]

async function buildLayout(dir: string, layout: Layout, plan: LoadPlan): Promise<void> {
  const t0 = performance.now()
  const table = await createBenchTable(dir, { buckets: BUCKETS, deletionVectors: layout !== 'mor' })
  if (layout === 'dv') {
    const sampler = new KeySampler(plan.keySpace, plan.seed)
    await loadBatches(table, { ...plan, batches: plan.batches.slice(0, 1) }, sampler, 1)
    await compactTable(table, { full: true })
    await loadBatches(table, { ...plan, batches: plan.batches.slice(1) }, sampler, 2)
    const lifted = await compactTable(table)
    if (lifted.length !== BUCKETS || lifted.some((r) => r.rowsDeletedByVector === 0)) throw new Error(`expected every bucket to lift its L0 runs with deletion-vector marks, got ${JSON.stringify(lifted.map((r) => r.rowsDeletedByVector))}`)
  } else {
    await loadBatches(table, plan)
    if (layout === 'full') await compactTable(table, { full: true })
  }
  process.stderr.write(`built ${layout} in ${((performance.now() - t0) / 1000).toFixed(1)} s\n`)
}

async function parentMain(argv: string[]): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const args = parseBenchArgs(argv, ['--quick', '--no-s3'], ['--runs', '--lookups'])
  const quick = args.has('--quick')
  const runs = args.num('--runs', 3)
  const withS3 = !args.has('--no-s3')
  const lookups = args.num('--lookups', quick ? 50 : 200)
  const records = 1_000_000 / (quick ? 10 : 1)
  // the first batch writes every key and outweighs the other four together, so in
  // deletion-vector mode the lift of batches 2-5 leaves it in place (size ratio) and marks it
  const plan: LoadPlan = { keySpace: (records * 3) / 5, batches: [(records * 3) / 5, ...Array.from({ length: RUNS_PER_BUCKET - 1 }, () => records / 10)], deleteRatio: DELETE_RATIO, seed: SEED }
  const machine = machineInfo(PACKAGES)
  const work = mkdtempSync(join(tmpdir(), 'strata-bench-scan-'))
  const childEnv: NodeJS.ProcessEnv = { ...process.env }
  let backend: EmbeddedBackend | null = null
  try {
    const uris = new Map<string, string>()
    for (const l of LAYOUTS) {
      const dir = join(work, l.id)
      await buildLayout(dir, l.id, plan)
      uris.set(`${l.id}/local`, dir)
    }
    if (withS3) {
      const { startEmbeddedBackend } = await import('../local/embedded.ts')
      backend = await startEmbeddedBackend()
      await backend.createBucket('bench')
      Object.assign(childEnv, {
        AWS_ENDPOINT_URL: backend.endpoint,
        AWS_REGION: backend.region,
        AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey,
      })
      for (const l of LAYOUTS) {
        await copyStore(new LocalFileStore(join(work, l.id)), new S3Store({ bucket: 'bench', prefix: l.id, client: backend.s3Client() }))
        uris.set(`${l.id}/s3`, `s3://bench/${l.id}`)
      }
    }

    const stores = withS3 ? ['local', 's3'] : ['local']
    const projections = ['all', 'id']
    const results = new Map<string, ScanReport[]>()
    for (let rep = 0; rep < runs; rep++) {
      for (const store of stores) {
        for (const columns of projections) {
          for (const l of LAYOUTS) {
            const key = `${l.id}/${store}/${columns}`
            const r = await runChild<ScanReport>(import.meta.filename, ['scan', uris.get(`${l.id}/${store}`)!, columns], { env: childEnv })
            if (!results.has(key)) results.set(key, [])
            results.get(key)!.push(r)
            process.stderr.write(`run ${rep + 1}/${runs} ${key}: ${r.rows} rows, ${r.seconds.toFixed(2)} s (CPU ${r.cpuSeconds.toFixed(2)} s, load ${r.loadAvg.toFixed(1)}), ${r.peakRssMb.toFixed(0)} MB\n`)
          }
        }
      }
    }
    // the three layouts hold the same table
    const expected = results.get('mor/local/all')![0].rows
    for (const [key, rs] of results) {
      if (rs.some((r) => r.rows !== expected)) throw new Error(`${key} scanned ${rs.map((r) => r.rows).join('/')} rows, merge-on-read ${expected}`)
    }

    const lines: string[] = [`\n### Scan of the latest snapshot, ${BUCKETS} buckets, ${count(records)} records written (${count(expected)} live rows), median of ${runs} runs\n`]
    const rows: (string | number)[][] = []
    for (const store of stores) {
      for (const columns of projections) {
        const morSecs = median(results.get(`mor/${store}/${columns}`)!.map((r) => r.seconds))
        const morCpu = median(results.get(`mor/${store}/${columns}`)!.map((r) => r.cpuSeconds))
        for (const l of LAYOUTS) {
          const rs = results.get(`${l.id}/${store}/${columns}`)!
          const secs = median(rs.map((r) => r.seconds))
          const cpu = median(rs.map((r) => r.cpuSeconds))
          const files = rs[0].filesOpened.map((n, level) => (n ? `L${level}×${n}` : '')).filter(Boolean).join(' ')
          rows.push([l.label, store === 's3' ? 'embedded S3' : 'local disk', columns === 'all' ? 'all 5' : '`id`', files, count(rs[0].rowsDecoded), secs.toFixed(2), cpu.toFixed(2), rate(expected, secs), median(rs.map((r) => r.peakRssMb)).toFixed(0), (morSecs / secs).toFixed(2), (morCpu / cpu).toFixed(2)])
        }
      }
    }
    lines.push(markdownTable(['layout', 'store', 'columns', 'files opened', 'rows decoded', 'wall s', 'CPU s', 'rows/s (wall)', 'peak RSS (MB)', 'merge-on-read wall ÷ this', 'merge-on-read CPU ÷ this'], rows))
    const lookupResults = withS3 ? await measureLookups(uris, childEnv, plan.keySpace, lookups) : []
    if (lookupResults.length) lines.push(lookupMarkdown(lookupResults, lookups, plan.keySpace))
    lines.push(`\n${machineMarkdown(machine)}`)
    console.log(lines.join('\n'))
    const path = writeResults(quick ? 'scan-quick' : 'scan', {
      machine,
      params: { records, buckets: BUCKETS, runsPerBucket: RUNS_PER_BUCKET, keySpace: plan.keySpace, deleteRatio: DELETE_RATIO, seed: SEED, runs, withS3, liveRows: expected, lookups },
      scans: [...results].map(([key, reports]) => ({ key, reports })),
      lookups: lookupResults.map(({ layout, report }) => ({ layout, cold: report.cold, warm: report.warm, found: report.found, seconds: report.seconds })),
    })
    process.stderr.write(`results: ${path}\n`)
  } finally {
    await backend?.stop()
    rmSync(work, { recursive: true, force: true })
  }
}

async function measureLookups(uris: Map<string, string>, env: NodeJS.ProcessEnv, keySpace: number, n: number): Promise<{ layout: (typeof LAYOUTS)[number]; report: LookupReport }[]> {
  const out: { layout: (typeof LAYOUTS)[number]; report: LookupReport }[] = []
  for (const l of LAYOUTS) {
    const report = await runChild<LookupReport>(import.meta.filename, ['lookup', uris.get(`${l.id}/s3`)!, String(keySpace), String(n), String(SEED + 1)], { env })
    process.stderr.write(`lookups ${l.id}: ${report.found}/${n} found, ${report.seconds.toFixed(2)} s\n`)
    out.push({ layout: l, report })
  }
  // every layout holds the same table, so every lookup must answer the same
  for (const { layout, report } of out.slice(1)) {
    if (report.digest !== out[0].report.digest) throw new Error(`lookups on ${layout.id} answered differently from ${out[0].layout.id}`)
  }
  return out
}

function lookupMarkdown(results: { layout: (typeof LAYOUTS)[number]; report: LookupReport }[], n: number, keySpace: number): string {
  const kib = (b: number) => (b / 1024).toFixed(1)
  const rows = results.map(({ layout, report }) => {
    const req = report.warm.map((w) => w.traffic.requests)
    const bytes = report.warm.map((w) => w.traffic.bytesIn)
    const byCommand: Record<string, number> = {}
    const byObject: Record<string, number> = {}
    for (const w of report.warm) for (const [c, k] of Object.entries(w.traffic.byCommand)) byCommand[c] = (byCommand[c] ?? 0) + k
    for (const w of report.warm) for (const [c, k] of Object.entries(w.traffic.byObject ?? {})) byObject[c] = (byObject[c] ?? 0) + k
    const mean = (k: number) => (k / report.warm.length).toFixed(2)
    const mix = [
      Object.entries(byCommand).map(([c, k]) => `${c.replace(/Command$/, '')} ${mean(k)}`).join(', '),
      Object.entries(byObject).map(([c, k]) => `${c} ${mean(k)}`).join(', '),
    ].join('; ')
    return [
      layout.label,
      `${median(req)} / ${percentile(req, 95, NaN)} / ${Math.max(...req)}`,
      mix,
      `${kib(median(bytes))} / ${kib(percentile(bytes, 95, NaN))} / ${kib(Math.max(...bytes))}`,
      median(report.warm.map((w) => w.ms)).toFixed(1),
      `${report.cold.traffic.requests} req, ${kib(report.cold.traffic.bytesIn)} KiB, ${report.cold.ms.toFixed(0)} ms`,
    ]
  })
  return [
    `\n### Point lookups on the embedded S3, ${count(n)} random keys of ${count(keySpace)} (${results[0].report.found} found), one reader handle per layout\n`,
    markdownTable(['layout', 'S3 requests per warm lookup (median / p95 / max)', 'requests per warm lookup by call; by object (mean)', 'KiB downloaded per warm lookup (median / p95 / max)', 'ms per warm lookup (median, no added latency)', 'first (cold) lookup: table open included'], rows),
  ].join('\n')
}

const argv = process.argv.slice(2)
if (argv[0] === '--child') await childMain(argv.slice(1))
else await parentMain(argv)
