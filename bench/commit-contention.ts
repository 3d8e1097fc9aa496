// Commit contention on one table: N independent Table handles (as N writer invocations
// would hold) each call writeBatch with a few rows in a loop for a fixed time, so every
// iteration is one APPEND commit racing the others for `snapshot-N` (design.md "Commit
// protocol": conditional create, retry with 10 ms·2^n ±20% backoff, commit.max-retries).
// Run on the embedded S3, with and without a first-byte latency per request, N = 1..32.
//
//   npx tsx bench/commit-contention.ts [--quick] [--seconds 10] [--runs 3]
//
// Three commit paths, side by side in one run:
// - direct: every writeBatch commits its own snapshot (today's writer function);
// - folded: a prototype of design.md's batching committer, in process. Each writer's
//   commit request is handed to one committer that, whenever it is idle, folds every
//   request waiting into a single APPEND snapshot and answers all of them. The real one
//   would sit behind a FIFO queue (one message group per table); the SQS hop is not
//   measured here, and see docs/benchmarks.md for what it must also handle (idempotency per
//   folded message, sequence numbers).
// - queued: the deployable batching committer (lib/commit/batching-committer.ts) behind a
//   real embedded SQS FIFO queue. Each writer writes its data file, turns its commit into a
//   commit message and sends it; one committer loop receives batches of up to 10 and hands
//   each to the committer function (functions/committer.ts), which folds it into one
//   snapshot and answers with a partial batch response; the loop deletes what landed. A
//   writer waits until its message is visible before its next batch (closed loop, as
//   direct). The queue uses one message group per writer, not one per table: the embedded
//   SQS (fauxqs) hands out a single message per group per receive, where SQS and Lambda's
//   FIFO mapping give up to 10 of one group, so one group would measure fauxqs, not the
//   design. The latency model covers SQS requests too.
//
// Reported: writer batches committed per second within the window, snapshots per second, lost
// races (retries) per commit, commits that gave up (CommitFailedError), the latency of one
// writeBatch call, and commit-to-visible latency (direct and folded: the commit call; queued:
// from sending the message to the committer's answer, its snapshot created). At the end the
// table's latest snapshot id must equal the commits that returned, or the run fails.

import { S3Store } from '../lib/store/s3-store.ts'
import { Table } from '../lib/table/table.ts'
import { RowKind } from '../lib/types.ts'
import { CommitFailedError } from '../lib/commit/committer.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { startEmbeddedBackend, type TransferModel } from '../local/embedded.ts'
import { parseBenchArgs } from './lib/args.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { markdownTable, writeResults } from './lib/report.ts'
import { median, percentile } from './lib/stats.ts'
import { randomUUID } from 'node:crypto'
import { loadavg } from 'node:os'
import { CreateQueueCommand, DeleteMessageBatchCommand, ReceiveMessageCommand, SendMessageCommand, SQSClient } from '@aws-sdk/client-sqs'
import { committerHandler } from '../functions/committer.ts'
import { logger, resetRuntime } from '../functions/shared/runtime.ts'
import { commitMessageOf, encodeCommitMessage } from '../lib/commit/commit-message.ts'
import { sqsEventOf, sqsRecordOf } from '../local/runtime/sqs-event.ts'

export const COMMITTERS = [1, 2, 4, 8, 16, 32]
const PATHS: CommitPath[] = ['direct', 'folded', 'queued']
/** S3 first-byte latency of small requests, tens of ms (the model the simulation uses) */
export const REALISTIC_MS = 20
const ROWS_PER_BATCH = 10
// one bucket: each iteration writes one small data file, so the CPU this shared machine
// gives the run goes to the commit path under test
const BUCKETS = 1

export type CommitPath = 'direct' | 'folded' | 'queued'

export interface ContentionPoint {
  path: CommitPath
  latencyMs: number
  /** snapshots created in the window (= commits for direct; fewer for folded) */
  snapshots: number
  /** folded and queued: requests per snapshot and that snapshot's commit time (queued: one committer invocation) */
  folds: { size: number; ms: number }[]
  committers: number
  run: number
  seconds: number
  commits: number
  commitsPerSecond: number
  retries: number
  retriesPerCommit: number
  failures: number
  /** one writeBatch call, successful ones only */
  latencyP50Ms: number
  latencyP99Ms: number
  /** the commit alone (table.committer.commit, retries included), successful ones only */
  commitP50Ms: number
  /** commit to visible: direct and folded the commit call; queued send to snapshot created */
  visibleP50Ms: number
  visibleP99Ms: number
  loadAvg: number
}

export interface ContentionSummary {
  path: CommitPath
  latencyMs: number
  snapshotsPerSecond: number
  committers: number
  commitsPerSecond: number
  retriesPerCommit: number
  failures: number
  latencyP50Ms: number
  latencyP99Ms: number
  commitP50Ms: number
  visibleP50Ms: number
  visibleP99Ms: number
  /** commitsPerSecond ÷ the direct 1-committer figure at the same latency */
  speedup: number
}

export interface ContentionResult {
  params: { committers: number[]; latenciesMs: number[]; paths: CommitPath[]; seconds: number; runs: number; rowsPerBatch: number; buckets: number }
  points: ContentionPoint[]
  summary: ContentionSummary[]
  /** per latency: median commit (committer.commit) time with one committer, the serialized cost of a snapshot */
  singleCommitMs: Record<number, number>
  /** direct commits, per latency */
  collapse: Record<number, { peakCommitsPerSecond: number; peakAt: number; at32: number; collapsed: boolean }>
  /** folded ÷ direct commits/s at 32 committers, per latency */
  foldedGainAt32: Record<number, number>
  /** queued ÷ direct commits/s at 32 committers, per latency */
  queuedGainAt32: Record<number, number>
  /** per latency: fit of one queued committer invocation's time, ms = base + perCommit·messages */
  queuedFit: Record<number, { baseMs: number; perCommitMs: number; snapshots: number }>
  /** per latency: least-squares fit of one folded snapshot's commit time, ms = base + perCommit·folded */
  foldFit: Record<number, { baseMs: number; perCommitMs: number; snapshots: number }>
}

const pct = (xs: number[], p: number): number => percentile(xs, p, NaN)

const SCHEMA = {
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  partitionKeys: [],
  options: { bucket: String(BUCKETS) },
}

type Committer = Table['committer']
type CommitRequest = Parameters<Committer['commit']>[0]
type CommitResult = Awaited<ReturnType<Committer['commit']>>

/**
 * The folding committer prototype: requests queue up while a commit is in flight; the next
 * commit carries all of them (their ADD entries in one APPEND snapshot) and answers each.
 */
class FoldingCommitter {
  private waiting: { req: CommitRequest; resolve: (r: CommitResult) => void; reject: (e: unknown) => void }[] = []
  private busy = false
  snapshots = 0
  /** each snapshot: how many requests it folded and how long its commit took */
  readonly folds: { size: number; ms: number }[] = []

  constructor(private readonly table: Table) {}

  submit(req: CommitRequest): Promise<CommitResult> {
    if (req.deletes.length || req.indexReplacements?.length || req.checkConflicts) throw new Error('the folding prototype takes APPEND commits only')
    return new Promise((resolve, reject) => {
      this.waiting.push({ req, resolve, reject })
      void this.drain()
    })
  }

  private async drain(): Promise<void> {
    if (this.busy) return
    this.busy = true
    try {
      while (this.waiting.length) {
        const batch = this.waiting
        this.waiting = []
        const first = batch[0].req
        const t0 = performance.now()
        try {
          const r = await this.table.committer.commit({
            ...first,
            adds: batch.flatMap((b) => b.req.adds),
            commitUser: 'folding-committer',
            commitIdentifier: BigInt(this.snapshots + 1),
            dedupAfterSnapshotId: undefined,
          })
          this.snapshots++
          this.folds.push({ size: batch.length, ms: performance.now() - t0 })
          for (const b of batch) b.resolve(r)
        } catch (e) {
          for (const b of batch) b.reject(e)
        }
      }
    } finally {
      this.busy = false
    }
  }
}

type Backend = Awaited<ReturnType<typeof startEmbeddedBackend>>

/**
 * The queued path: writers send commit messages to an SQS FIFO queue; one loop receives
 * batches of up to 10 (as Lambda's FIFO event-source mapping does), invokes the committer
 * function with them and deletes what landed. A writer's commit returns once the
 * invocation holding its message has returned without naming it as failed.
 */
class QueuedCommitter {
  private readonly waiting = new Map<string, { resolve: () => void; reject: (e: unknown) => void }>()
  private stopped = false
  private readonly deletes: Promise<unknown>[] = []
  private loop: Promise<void> | null = null
  /** each committer invocation: messages in it and its time */
  readonly folds: { size: number; ms: number }[] = []
  snapshots = 0

  private constructor(
    private readonly sqs: SQSClient,
    private readonly queueUrl: string,
    private readonly queueArn: string,
    private readonly region: string,
    private readonly savedEnv: Record<string, string | undefined>,
  ) {}

  static async start(backend: Backend, tableName: string, uri: string): Promise<QueuedCommitter> {
    const sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
    const q = await sqs.send(new CreateQueueCommand({ QueueName: `${tableName}-commits.fifo`, Attributes: { FifoQueue: 'true', VisibilityTimeout: '60' } }))
    // the committer function's environment: it serves this one table (restored by stop(), so
    // the benchmarks after this one in the same process do not run with it)
    const env = {
      AWS_ENDPOINT_URL: backend.endpoint,
      AWS_REGION: backend.region,
      AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId,
      AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey,
      POWERTOOLS_METRICS_DISABLED: 'true',
      POWERTOOLS_LOG_LEVEL: 'SILENT',
      STRATA_TABLES: JSON.stringify({ [tableName]: { uri } }),
      STRATA_TABLE: tableName,
    }
    const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]))
    Object.assign(process.env, env)
    resetRuntime()
    // the function's logger was built at import, before POWERTOOLS_LOG_LEVEL was set here
    logger.setLogLevel('SILENT')
    const c = new QueuedCommitter(sqs, q.QueueUrl!, `arn:aws:sqs:${backend.region}:000000000000:${tableName}-commits.fifo`, backend.region, saved)
    c.loop = c.run()
    return c
  }

  /** Sends one commit (its message group: the writer) and resolves once it is visible. */
  async send(body: string, group: string): Promise<void> {
    const sent = await this.sqs.send(new SendMessageCommand({ QueueUrl: this.queueUrl, MessageBody: body, MessageGroupId: group, MessageDeduplicationId: randomUUID() }))
    return new Promise((resolve, reject) => this.waiting.set(sent.MessageId!, { resolve, reject }))
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const got = await this.sqs.send(new ReceiveMessageCommand({ QueueUrl: this.queueUrl, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 1 }))
      const msgs = got.Messages ?? []
      if (msgs.length === 0) continue
      const t0 = performance.now()
      const res = await committerHandler(sqsEventOf(msgs.map((m) => sqsRecordOf(m, this.queueArn, this.region))))
      this.folds.push({ size: msgs.length, ms: performance.now() - t0 })
      const failed = new Set(res.batchItemFailures.map((f) => f.itemIdentifier))
      const done = msgs.filter((m) => !failed.has(m.MessageId!))
      // the writers send APPEND messages only: an invocation that lands any creates one snapshot
      if (done.length) this.snapshots++
      for (const m of done) {
        this.waiting.get(m.MessageId!)?.resolve()
        this.waiting.delete(m.MessageId!)
      }
      // a failed message comes back after the visibility timeout, as on SQS. The delete runs
      // beside the next receive, as the event-source mapping's pollers do: a writer's next
      // message (its group) comes only after it has written another data file
      if (done.length) this.deletes.push(this.sqs.send(new DeleteMessageBatchCommand({ QueueUrl: this.queueUrl, Entries: done.map((m, i) => ({ Id: String(i), ReceiptHandle: m.ReceiptHandle! })) })))
    }
    await Promise.all(this.deletes)
  }

  async stop(): Promise<void> {
    this.stopped = true
    await this.loop
    for (const w of this.waiting.values()) w.reject(new Error('queued committer stopped with commits in flight'))
    this.sqs.destroy()
    for (const [k, v] of Object.entries(this.savedEnv)) {
      if (v === undefined) delete process.env[k]
      else process.env[k] = v
    }
    resetRuntime()
  }
}

async function onePoint(
  backend: Backend,
  bucket: string,
  prefix: string,
  path: CommitPath,
  committers: number,
  seconds: number,
): Promise<Omit<ContentionPoint, 'latencyMs' | 'run'>> {
  const client = backend.s3Client()
  const store = () => new S3Store({ bucket, prefix, client })
  await Table.create(store(), SCHEMA)
  const handles = await Promise.all(Array.from({ length: committers }, () => Table.open(store())))
  const folder = path === 'folded' ? new FoldingCommitter(await Table.open(store())) : null
  const queued = path === 'queued' ? await QueuedCommitter.start(backend, `q${prefix.replace(/[^a-zA-Z0-9]/g, '-')}`, `s3://${bucket}/${prefix}`) : null
  const visibleMs: number[] = []
  let commits = 0
  let returned = 0
  let retries = 0
  let failures = 0
  const latencies: number[] = []
  const commitMs: number[] = []
  handles.forEach((h, c) => {
    const inner = h.committer.commit.bind(h.committer)
    h.committer.commit = async (req) => {
      const t0 = performance.now()
      let r: CommitResult
      if (queued) {
        // the snapshot the writer built on: at latest the one before its commit began
        const base = await h.snapshots.latestId()
        const { body } = await encodeCommitMessage(await commitMessageOf(h, req, base), h.store)
        const t1 = performance.now()
        await queued.send(body, `writer-${c}`)
        visibleMs.push(performance.now() - t1)
        r = { snapshotId: -1, retries: 0, deduplicated: false }
      } else {
        r = folder ? await folder.submit(req) : await inner(req)
        visibleMs.push(performance.now() - t0)
      }
      commitMs.push(performance.now() - t0)
      return r
    }
  })
  const start = performance.now()
  const deadline = start + seconds * 1000
  const wallDeadline = Date.now() + seconds * 1000
  await Promise.all(
    handles.map(async (table, c) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const rows = Array.from({ length: ROWS_PER_BATCH }, (_, j) => ({ kind: RowKind.INSERT, row: [BigInt(c * 1_000_000 + i * ROWS_PER_BATCH + j), `c${c}-${i}`] }))
        const t0 = performance.now()
        try {
          const r = await writeBatch(table, rows)
          returned++
          retries += r.retries
          if (performance.now() <= deadline) {
            commits++
            latencies.push(performance.now() - t0)
          }
        } catch (e) {
          if (!(e instanceof CommitFailedError)) throw e
          failures++
          retries += table.view.options.commitMaxRetries + 1
        }
      }
    }),
  )
  await queued?.stop()
  const latest = await handles[0].snapshots.latestId()
  const expectSnapshots = folder ? folder.snapshots : queued ? queued.snapshots : returned
  if (latest !== expectSnapshots) throw new Error(`contention ${path} ${committers} committers: ${expectSnapshots} snapshots committed but the latest is ${latest}; a commit was lost or doubled`)
  const total = (await handles[0].snapshots.latest())?.totalRecordCount ?? 0
  if (total !== returned * ROWS_PER_BATCH) throw new Error(`contention ${path} ${committers} committers: ${returned} batches of ${ROWS_PER_BATCH} returned but the table holds ${total} records`)
  let snapshots = 0
  for (let id = 1; id <= latest; id++) {
    const s = await handles[0].snapshots.snapshot(id)
    if (s && s.timeMillis <= wallDeadline) snapshots++
  }
  return {
    path,
    snapshots,
    folds: folder?.folds ?? queued?.folds ?? [],
    committers,
    seconds,
    commits,
    commitsPerSecond: commits / seconds,
    retries,
    retriesPerCommit: retries / Math.max(1, returned),
    failures,
    latencyP50Ms: pct(latencies, 50),
    latencyP99Ms: pct(latencies, 99),
    commitP50Ms: pct(commitMs, 50),
    visibleP50Ms: pct(visibleMs, 50),
    visibleP99Ms: pct(visibleMs, 99),
    loadAvg: loadavg()[0],
  }
}

/** The realistic latency model of this benchmark: S3 first-byte latency on every request. */
export function s3Latency(firstByteMs: number): TransferModel {
  return { firstByteMs }
}

export async function runContention(opts: { quick: boolean; seconds?: number; runs?: number; log?: (s: string) => void }): Promise<ContentionResult> {
  const seconds = opts.seconds ?? (opts.quick ? 2 : 10)
  const runs = opts.runs ?? (opts.quick ? 1 : 3)
  // --quick keeps the realistic latency model only
  const latencies = opts.quick ? [REALISTIC_MS] : [0, REALISTIC_MS]
  const log = opts.log ?? ((s) => process.stderr.write(s + '\n'))
  const points: ContentionPoint[] = []
  for (const latencyMs of latencies) {
    const backend = await startEmbeddedBackend(latencyMs > 0 ? { latency: s3Latency(latencyMs) } : {})
    try {
      await backend.createBucket('contention')
      for (let run = 0; run < runs; run++) {
        for (const n of COMMITTERS) {
          for (const path of PATHS) {
            const p = await onePoint(backend, 'contention', `l${latencyMs}/r${run}/${path}/n${n}`, path, n, seconds)
            points.push({ latencyMs, run, ...p })
            log(`contention ${path} ${latencyMs} ms, ${n} committers, run ${run + 1}/${runs}: ${p.commitsPerSecond.toFixed(1)} commits/s in ${(p.snapshots / seconds).toFixed(1)} snapshots/s, ${p.retriesPerCommit.toFixed(2)} retries/commit, ${p.failures} failed, commit p50 ${p.commitP50Ms.toFixed(0)} ms, visible p50/p99 ${p.visibleP50Ms.toFixed(0)}/${p.visibleP99Ms.toFixed(0)} ms`)
          }
        }
      }
    } finally {
      await backend.stop()
    }
  }
  const summary: ContentionSummary[] = []
  for (const latencyMs of latencies) {
    const base = median(points.filter((p) => p.path === 'direct' && p.latencyMs === latencyMs && p.committers === 1).map((p) => p.commitsPerSecond))
    for (const path of PATHS) for (const n of COMMITTERS) {
      const ps = points.filter((p) => p.path === path && p.latencyMs === latencyMs && p.committers === n)
      const cps = median(ps.map((p) => p.commitsPerSecond))
      summary.push({
        path,
        latencyMs,
        snapshotsPerSecond: median(ps.map((p) => p.snapshots / p.seconds)),
        committers: n,
        commitsPerSecond: cps,
        retriesPerCommit: median(ps.map((p) => p.retriesPerCommit)),
        failures: median(ps.map((p) => p.failures)),
        latencyP50Ms: median(ps.map((p) => p.latencyP50Ms)),
        latencyP99Ms: median(ps.map((p) => p.latencyP99Ms)),
        commitP50Ms: median(ps.map((p) => p.commitP50Ms)),
        visibleP50Ms: median(ps.map((p) => p.visibleP50Ms)),
        visibleP99Ms: median(ps.map((p) => p.visibleP99Ms)),
        speedup: cps / base,
      })
    }
  }
  const singleCommitMs: Record<number, number> = {}
  const collapse: ContentionResult['collapse'] = {}
  const foldedGainAt32: Record<number, number> = {}
  const foldFit: ContentionResult['foldFit'] = {}
  const queuedGainAt32: Record<number, number> = {}
  const queuedFit: ContentionResult['queuedFit'] = {}
  for (const latencyMs of latencies) {
    const folds = points.filter((p) => p.path === 'folded' && p.latencyMs === latencyMs).flatMap((p) => p.folds)
    foldFit[latencyMs] = linearFit(folds)
    const at = (path: CommitPath) => summary.find((s) => s.path === path && s.latencyMs === latencyMs && s.committers === 32)!.commitsPerSecond
    foldedGainAt32[latencyMs] = at('folded') / at('direct')
    queuedGainAt32[latencyMs] = at('queued') / at('direct')
    queuedFit[latencyMs] = linearFit(points.filter((p) => p.path === 'queued' && p.latencyMs === latencyMs).flatMap((p) => p.folds))
    const rows = summary.filter((s) => s.path === 'direct' && s.latencyMs === latencyMs)
    singleCommitMs[latencyMs] = rows.find((s) => s.committers === 1)!.commitP50Ms
    const peak = rows.reduce((a, b) => (b.commitsPerSecond > a.commitsPerSecond ? b : a))
    const at32 = rows.find((s) => s.committers === 32)!.commitsPerSecond
    // "collapse": more committers bring fewer commits than a smaller group had
    collapse[latencyMs] = { peakCommitsPerSecond: peak.commitsPerSecond, peakAt: peak.committers, at32, collapsed: at32 < 0.7 * peak.commitsPerSecond }
  }
  return { params: { committers: COMMITTERS, latenciesMs: latencies, paths: PATHS, seconds, runs, rowsPerBatch: ROWS_PER_BATCH, buckets: BUCKETS }, points, summary, singleCommitMs, collapse, foldedGainAt32, foldFit, queuedGainAt32, queuedFit }
}

/** ms = base + perCommit·size by least squares; a negative slope (noise) is clamped to 0. */
function linearFit(xs: { size: number; ms: number }[]): { baseMs: number; perCommitMs: number; snapshots: number } {
  const n = xs.length
  if (n === 0) return { baseMs: NaN, perCommitMs: NaN, snapshots: 0 }
  const mx = xs.reduce((a, x) => a + x.size, 0) / n
  const my = xs.reduce((a, x) => a + x.ms, 0) / n
  const sxx = xs.reduce((a, x) => a + (x.size - mx) ** 2, 0)
  const slope = sxx > 0 ? Math.max(0, xs.reduce((a, x) => a + (x.size - mx) * (x.ms - my), 0) / sxx) : 0
  return { baseMs: my - slope * mx, perCommitMs: slope, snapshots: n }
}

export function contentionMarkdown(r: ContentionResult): string {
  const rows = r.summary.map((s) => [
    s.path,
    s.latencyMs === 0 ? 'none' : `${s.latencyMs} ms`,
    s.committers,
    s.commitsPerSecond.toFixed(1),
    s.snapshotsPerSecond.toFixed(1),
    `${s.speedup.toFixed(2)}×`,
    s.retriesPerCommit.toFixed(2),
    s.failures,
    s.commitP50Ms.toFixed(0),
    s.latencyP50Ms.toFixed(0),
    s.latencyP99Ms.toFixed(0),
    s.visibleP50Ms.toFixed(0),
    s.visibleP99Ms.toFixed(0),
  ])
  const table = markdownTable(['commit path', 'S3 first-byte latency', 'committers', 'writer batches committed/s', 'snapshots/s', 'vs 1 committer', 'lost races per commit', 'gave up', 'commit p50 (ms)', 'writeBatch p50 (ms)', 'writeBatch p99 (ms)', 'commit-to-visible p50 (ms)', 'commit-to-visible p99 (ms)'], rows)
  const q = r.params.latenciesMs.map((l) => {
    const fit = r.queuedFit[l]
    return `${l} ms: ${r.queuedGainAt32[l].toFixed(1)}× direct at 32 writers; one committer invocation costs about ${fit.baseMs.toFixed(0)} ms + ${fit.perCommitMs.toFixed(1)} ms per message (fit over ${fit.snapshots} invocations)`
  })
  return [
    table,
    '',
    `"Queued" is the batching committer as deployed (lib/commit/batching-committer.ts, functions/committer.ts): each writer writes its data file, sends its commit as a message to an embedded SQS FIFO queue and waits until it is visible; one committer loop receives up to 10 messages at a time, invokes the committer function with them (one folded APPEND snapshot per invocation, per-message idempotency records) and deletes what landed. Commit-to-visible is the commit call for direct and folded, and send-to-snapshot for queued. The queue has one message group per writer because the embedded SQS hands out one message per group per receive (SQS gives up to 10 of a group); the latency model covers SQS requests too. ${q.join('; ')}.`,
  ].join('\n')
}

if (import.meta.filename === process.argv[1]) {
  const args = parseBenchArgs(process.argv.slice(2), ['--quick'], ['--seconds', '--runs'])
  const quick = args.has('--quick')
  const machine = machineInfo(['fauxqs', '@aws-sdk/client-s3', 'tsx'])
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const r = await runContention({ quick, seconds: args.num('--seconds', quick ? 2 : 10), runs: args.num('--runs', quick ? 1 : 3) })
  console.log(contentionMarkdown(r))
  console.log(`\n${machineMarkdown(machine)}`)
  process.stderr.write(`results: ${writeResults(quick ? 'commit-contention-quick' : 'commit-contention', { machine, ...r })}\n`)
}
