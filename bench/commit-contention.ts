// Commit contention on one table: N independent Table handles (as N writer invocations would
// hold) each call writeBatch with a few rows in a loop for a fixed time, so every iteration is
// one APPEND commit (docs/design.md "How a commit travels"). Run on the embedded S3, with and
// without a first-byte latency per request, N = 1..32.
//
//   npx tsx bench/commit-contention.ts [--quick] [--seconds 10] [--runs 3] [--writers 32]
//                                      [--first-poll-ms 10] [--max-poll-ms 100] [--queued-only]
//                                      [--in-process-backend] [--no-sweep | --sweep-only] [--no-lease]
//                                      [--iceberg]
//
// --iceberg runs every point twice, without and then with Iceberg metadata
// (metadata.iceberg.storage table-location), and counts the S3 requests the metadata adds per
// snapshot (icebergRequestsPerSnapshot, counted at the store seam).
//
// Three commit paths, side by side in one run:
// - direct: every writeBatch creates its own snapshot through the table's FileStoreCommit,
//   racing the others for `snapshot-N` (conditional create, retry with 10 ms·2^n ±20%
//   backoff, commit.max-retries): what a table without a commit queue does.
// - folded: an in-process prototype of folding, without the queue: each writer hands its
//   commit request to one in-process committer that, whenever it is idle, folds every
//   request waiting into one APPEND snapshot and answers all of them. No SQS hop, no
//   polling, no second committer: the ceiling of folding on this machine, so the gap to
//   "queued" is what the deployed path's queue and the senders' polling cost.
// - queued: the path the stack deploys. Each writer calls writeBatch with a QueuedCommitter
//   (lib/commit/queued-committer.ts) on an SqsCommitQueue of a real embedded SQS FIFO queue
//   (each message its own group): it writes its data file, sends its commit message and
//   follows the snapshot chain in S3 (probes `snapshot-(known+1)`, reads a folded
//   snapshot's sidecar, and GETs its conflict receipt key on its first poll and every third after) until a
//   snapshot names its commit. The committer side is the committer function
//   (functions/committer.ts `handler`, wrapped by bench/lib/committer-probe.ts to report what
//   each invocation did) in worker-thread execution environments behind the local
//   event-source poller, at most 2 at once (the stack's maxConcurrency 2): each invocation
//   gets up to 10 messages, drains the queue beyond them (STRATA_COMMIT_DRAIN_MAX, default
//   1000), folds them, and keeps folding in rounds, receiving the next round's messages
//   while a round folds; it writes a receipt only for a conflict and deletes what it
//   drained; the poller deletes the invoked batch. The latency model covers SQS requests too.
//
// Reported: writer batches committed per second within the window, snapshots per second,
// lost races visible to callers (writeBatch retries and commits that gave up with
// CommitFailedError), the latency of one writeBatch call and of its commit; for queued also
// the committer side (invocations, rounds, messages per snapshot, lost races between the
// two committers, where an invocation's time goes, its S3 requests) and the writer side of
// learning the landing: send → the landing snapshot created (the probe's record of the
// conditional create), send → the writer's commit() returned, and the difference (how long
// the landing waited for the writer's poll), with the writer's GETs per commit. At the end
// the table's latest snapshot id must equal the snapshots the committers made and its
// record count the batches that returned, or the run fails.

import { join } from 'node:path'
import { loadavg } from 'node:os'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { CreateQueueCommand, GetQueueAttributesCommand, SQSClient } from '@aws-sdk/client-sqs'
import { S3Store } from '../lib/store/s3-store.ts'
import { Table } from '../lib/handle/table.ts'
import { RowKind } from '../lib/types.ts'
import { CommitFailedError } from '../lib/errors.ts'
import type { CommitRequest, CommitResult, Committer } from '../lib/commit/committer.ts'
import { SqsCommitQueue } from '../lib/commit/commit-queue.ts'
import { QueuedCommitter } from '../lib/commit/queued-committer.ts'
import { COMMIT_RECEIPT_DIR } from '../lib/commit/receipts.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { InterceptingStore, type StoreOp } from '../lib/store/intercepting-store.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { bucketFunction } from '../lib/format/bucket.ts'
import { serializeBinaryRow } from '../lib/format/binary-row.ts'
import { commitMessageOf, encodeCommitMessage } from '../lib/commit/commit-message.ts'
import { FOLDED_COMMITS_DIR, commitKeyOf } from '../lib/commit/landed.ts'
import { LATEST_KEY, SNAPSHOT_DIR } from '../lib/table/paths.ts'
import { startEmbeddedBackend, type TransferModel } from '../local/embedded.ts'
import { ExecutionEnvironmentPool } from '../local/runtime/execution-environment.ts'
import { EventSourcePoller } from '../local/runtime/poller.ts'
import { sqsEventOf } from '../local/runtime/sqs-event.ts'
import { parseBenchArgs } from './lib/args.ts'
import { type BackendProcess, startBackendProcess } from '../local/backend-process.ts'
import { handlerEnvironment } from '../local/runtime/local-runtime.ts'
import { type CommitterProbe, probeOf } from './lib/committer-probe.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { markdownTable, writeResults } from './lib/report.ts'
import { S3RequestCounter } from './lib/s3-counter.ts'
import { median, percentile } from './lib/stats.ts'

export const COMMITTERS = [1, 2, 4, 8, 16, 32]
const PATHS: CommitPath[] = ['direct', 'folded', 'queued']
/** S3 first-byte latency of small requests, tens of ms (the model the simulation uses) */
export const REALISTIC_MS = 20
/** the issue's target for the deployed path: at REALISTIC_MS and 32 writers */
export const TARGET = { writers: 32, commitsPerSecond: 30 }
/** concurrent committer invocations per table: the event-source mapping's maxConcurrency in the stack */
export const COMMITTER_CONCURRENCY = 2
/** the writers' first pause before probing the snapshot chain (QueuedCommitter firstPollMs; deployed default 20) */
export const FIRST_POLL_MS = 10
/** QueuedCommitter's largest pause between probes when not given one (lib/commit/queued-committer.ts maxPollMs) */
const DEFAULT_MAX_POLL_MS = 100
const ROWS_PER_BATCH = 10
// one bucket: each iteration writes one small data file, so the CPU this shared machine
// gives the run goes to the commit path under test
const BUCKETS = 1
const PROBE_MODULE = join(import.meta.dirname, 'lib', 'committer-probe.ts')

export type CommitPath = 'direct' | 'folded' | 'queued'

/**
 * The queued path of one point: committer side and the writers' side of learning the
 * landing. The writer-side field names are those of the receipt era (bench/run.ts reads
 * older results); what they measure is in ContentionResult.params.landingSeenFrom.
 */
export interface QueuedStats {
  /** committer invocations with at least one message, in the window and after it */
  invocations: number
  snapshots: number
  /** messages folded into those snapshots */
  messages: number
  messagesPerSnapshot: number
  messagesPerInvocation: number
  /** lost races for `snapshot-N` between the committers (inside their folds), and re-plans */
  committerRetries: number
  committerRetriesPerSnapshot: number
  replans: number
  /** per invocation, mean: folds (rounds; absent in results before rounds were probed) */
  rounds?: number
  /** per invocation, mean: receives and summed ms in them, fold ms (all rounds), conflict receipt writes ms, deletes ms, whole invocation ms */
  drainReceives: number
  receiveMs: number
  foldMs: number
  receiptsMs: number
  deleteMs: number
  invocationMs: number
  invocationP99Ms: number
  /** per invocation, mean S3 requests: by kind of key, and in all */
  s3ByKey: Record<string, number>
  s3Requests: number
  /** per invocation, mean summed duration of its S3 requests (several overlap), ms */
  s3Ms: number
  /** one environment's idle time between two invocations while messages waited (poller delete + receive), median */
  gapMs: number
  /**
   * writer side, per commit: SQS send ms; send start → landing seen (commit() returned);
   * send start → landed (the conditional create of the snapshot that landed it returned);
   * landed → seen (how long the landing waited for the writer's poll). Results before the
   * snapshot chain (no params.landingSeenFrom): the receipt GET that found it, the receipt
   * PUT, and between them.
   */
  sendP50Ms: number
  sendToReceiptP50Ms: number
  sendToReceiptP99Ms: number
  sendToWrittenP50Ms: number
  receiptWaitP50Ms: number
  receiptWaitP99Ms: number
  /** the writer's store GETs per commit while it waits (snapshot probes, sidecar reads, conflict receipt GETs); before the snapshot chain, receipt GETs */
  pollsPerCommit: number
  /** those GETs by what they read, per commit (absent before the snapshot chain) */
  pollsByKind?: Record<string, number>
}

export interface ContentionPoint {
  path: CommitPath
  latencyMs: number
  /** snapshots created in the window (= commits for direct; fewer for folded and queued) */
  snapshots: number
  /** folded: requests per snapshot and its commit time; queued: messages per committer invocation and its time */
  folds: { size: number; ms: number }[]
  committers: number
  run: number
  seconds: number
  commits: number
  commitsPerSecond: number
  /** lost races the writers saw (writeBatch result.retries; a give-up counts commit.max-retries + 1) */
  retries: number
  retriesPerCommit: number
  /** commits that gave up (CommitFailedError) */
  failures: number
  /** one writeBatch call, successful ones only */
  latencyP50Ms: number
  latencyP99Ms: number
  /** the commit call alone (direct: FileStoreCommit, retries included; folded: until answered; queued: encode, send, until its landing is seen), successful ones only */
  commitP50Ms: number
  commitP99Ms: number
  /** writer-side S3 requests per commit (data file, latest snapshot, sequence floor; queued: the snapshot probes, sidecar reads and conflict receipt GETs while it waits) */
  writerS3PerCommit: number
  /**
   * event-loop delay of this process during the window (mean / p99 ms): the embedded S3 and
   * SQS server and the writers share it, so a busy loop slows every S3 request the
   * committers send too
   */
  loopDelayMeanMs: number
  loopDelayP99Ms: number
  queued?: QueuedStats
  /** queued: each round of every invocation, its messages and its fold plus that invocation's mean receive latency (ms) */
  rounds?: { size: number; ms: number }[]
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
  commitP99Ms: number
  /** commitsPerSecond ÷ the direct 1-committer figure at the same latency */
  speedup: number
  /** queued: the median run's committer-side figures */
  queued?: QueuedStats
}

export interface FoldFit {
  baseMs: number
  perCommitMs: number
  snapshots: number
}

export interface ContentionResult {
  params: {
    committers: number[]; latenciesMs: number[]; paths: CommitPath[]; seconds: number; runs: number; rowsPerBatch: number; buckets: number
    committerConcurrency?: number; firstPollMs?: number; maxPollMs?: number
    /** the committer lease was on (one invocation folds at a time); absent in older results: off */
    committerLease?: boolean
    /** where the embedded S3 + SQS server ran (absent: in process, the runs before it moved) */
    backend?: 'in process' | 'child process'
    /** how the queued path's senders learn of a landing; absent: a receipt per message (results before the snapshot chain) */
    landingSeenFrom?: 'snapshot chain'
  }
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
  /** per latency: fit of one committer invocation's time (queued), ms = base + perCommit·messages */
  queuedFit: Record<number, FoldFit>
  /** per latency: median idle time of a committer environment between invocations at the most writers (queued) */
  queuedGapMs?: Record<number, number>
  /**
   * per latency, queued, median over every point: from the snapshot that landed a commit
   * being created to its sender's commit() returning (the landing-seen wait); results
   * before the snapshot chain: from a receipt written to its sender reading it
   */
  receiptWaitMs?: Record<number, number>
  /**
   * per latency, queued: fit of a round (its fold plus its invocation's mean receive
   * latency) against its messages, over every round of every point: two committers racing
   * while the writers share this machine's cores with them
   */
  queuedRoundFit?: Record<number, FoldFit>
  /** per latency: least-squares fit of one folded snapshot's commit time (the in-process prototype) */
  foldFit: Record<number, FoldFit>
  /** one committer invocation folding k waiting messages, k up to hundreds (REALISTIC_MS) */
  foldSweep?: FoldSweep
  /** the issue's target at REALISTIC_MS and 32 writers, queued path */
  target?: { writers: number; commitsPerSecond: number; measured: number; lostRacesVisible: number; met: boolean }
}

const pct = (xs: number[], p: number): number => percentile(xs, p, NaN)
const mean = (xs: number[]): number => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : NaN)

const SCHEMA = {
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  partitionKeys: [],
  options: { bucket: String(BUCKETS) },
}

/** The same table with Iceberg metadata (docs/format.md "Iceberg metadata"), for --iceberg. */
const ICEBERG_SCHEMA = { ...SCHEMA, options: { ...SCHEMA.options, 'metadata.iceberg.storage': 'table-location' } }

/**
 * The folding prototype: requests queue up while a commit is in flight; the next commit
 * carries all of them (their ADD entries in one APPEND snapshot) and answers each.
 */
class FoldingCommitter {
  private waiting: { req: CommitRequest; resolve: (r: CommitResult) => void; reject: (e: unknown) => void }[] = []
  private busy = false
  snapshots = 0
  /** each snapshot: how many requests it folded and how long its commit took */
  readonly folds: { size: number; ms: number }[] = []

  constructor(private readonly table: Table) {}

  submit(req: CommitRequest): Promise<CommitResult> {
    if (req.deletes.length || req.indexReplacements?.length) throw new Error('the folding prototype takes APPEND commits only')
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
            baseSnapshotId: Math.min(...batch.map((b) => b.req.baseSnapshotId)),
            dedup: false,
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

/** What the benchmark needs of a backend: in this process (local/embedded.ts) or in a child (local/backend-process.ts). */
type Backend = Omit<BackendProcess, 'stats' | 'pid'>

/** One queued commit as its writer saw it. */
interface QueuedCommitTrace {
  sentAt: number
  sendMs: number
  /** the snapshot that landed it (commit()'s result) and when commit() returned */
  snapshotId: number
  seenAt: number
  /** the writer's store GETs during commit(), by what they read */
  polls: Record<string, number>
}

/** What a sender's GET reads while it waits for its landing. */
const pollKind = (key: string): string =>
  key.startsWith(COMMIT_RECEIPT_DIR) ? 'conflict receipt'
  : key.startsWith(FOLDED_COMMITS_DIR) ? 'folded-commits sidecar'
  : key === LATEST_KEY ? 'snapshot hint'
  : key.startsWith(SNAPSHOT_DIR) ? 'snapshot'
  : 'other'

/** The commit queue a writer sends to, timing its sends. */
class TimedCommitQueue extends SqsCommitQueue {
  lastSentAt = 0
  lastSendMs = 0
  override async send(body: string, identity: string): Promise<void> {
    const t0 = Date.now()
    await super.send(body, identity)
    this.lastSentAt = t0
    this.lastSendMs = Date.now() - t0
  }
}

/**
 * The deployed committer side: a FIFO commit queue, the committer function in (at most
 * COMMITTER_CONCURRENCY) execution environments, and the event-source poller that invokes
 * them. The function's environment goes to its worker threads only, so this process's
 * environment is never changed.
 */
class QueuedPath {
  readonly invocations: { probe: CommitterProbe; environmentId: number | null; records: number; failed: number }[] = []
  readonly errors: string[] = []

  private constructor(
    readonly sqs: SQSClient,
    readonly queueUrl: string,
    readonly tableName: string,
    private readonly pool: ExecutionEnvironmentPool,
    private readonly poller: EventSourcePoller,
  ) {}

  /** `poll: false` starts no poller: the caller invokes the committer itself (invokeOnce) */
  static async start(backend: Backend, tableName: string, uri: string, opts: { poll?: boolean } = {}): Promise<QueuedPath> {
    const sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
    const q = await sqs.send(new CreateQueueCommand({ QueueName: `${tableName}-commit.fifo`, Attributes: { FifoQueue: 'true', VisibilityTimeout: '60' } }))
    const arn = (await sqs.send(new GetQueueAttributesCommand({ QueueUrl: q.QueueUrl!, AttributeNames: ['QueueArn'] }))).Attributes!.QueueArn!
    const pool = new ExecutionEnvironmentPool({
      handlerModule: PROBE_MODULE,
      env: {
        ...handlerEnvironment(backend, { [tableName]: { uri, commitQueueUrl: q.QueueUrl! } }),
        STRATA_TABLE: tableName,
        AWS_LAMBDA_FUNCTION_NAME: `strata-${tableName}-committer`,
        // --no-lease: both invocations fold, as before the committer lease
        ...(process.env.STRATA_COMMITTER_LEASE ? { STRATA_COMMITTER_LEASE: process.env.STRATA_COMMITTER_LEASE } : {}),
      },
      maxEnvironments: COMMITTER_CONCURRENCY,
      timeoutMs: 60_000,
    })
    // warm both environments (module import, table open) before the window: a cold start
    // belongs to the first minutes of a deployment, not to its steady state
    const warm = await Promise.all(Array.from({ length: COMMITTER_CONCURRENCY }, () => pool.invoke(sqsEventOf([]))))
    for (const w of warm) if (!w.ok) throw new Error(`committer warm-up failed: ${w.error.name}: ${w.error.message}`)
    const path: { self?: QueuedPath } = {}
    const poller = new EventSourcePoller({
      sqs,
      queueUrl: q.QueueUrl!,
      queueArn: arn,
      region: backend.region,
      pool,
      batchSize: 10,
      maxConcurrency: COMMITTER_CONCURRENCY,
      onInvocation: (info) => {
        const self = path.self!
        if (!info.result.ok) {
          self.errors.push(`${info.result.error.name}: ${info.result.error.message}`)
          return
        }
        const probe = probeOf(info.result.value)
        if (probe) self.invocations.push({ probe, environmentId: info.result.environmentId, records: info.records.length, failed: info.records.length - info.deleted.length })
      },
      onError: (e) => path.self!.errors.push(String(e)),
    })
    path.self = new QueuedPath(sqs, q.QueueUrl!, tableName, pool, poller)
    if (opts.poll ?? true) poller.start()
    return path.self
  }

  /** One committer invocation with an empty batch: it drains the queue (up to STRATA_COMMIT_DRAIN_MAX) and folds what it got. */
  async invokeOnce(): Promise<CommitterProbe> {
    const r = await this.pool.invoke(sqsEventOf([]))
    if (!r.ok) throw new Error(`committer invocation failed: ${r.error.name}: ${r.error.message}`)
    const probe = probeOf(r.value)
    if (!probe) throw new Error('committer invocation returned no probe')
    return probe
  }

  committerFor(table: Table, firstPollMs: number, maxPollMs: number | undefined): { committer: QueuedCommitter; queue: TimedCommitQueue } {
    const queue = new TimedCommitQueue(this.sqs, this.queueUrl)
    return { queue, committer: new QueuedCommitter(table, queue, { tableName: this.tableName, firstPollMs, maxPollMs }) }
  }

  async stop(): Promise<void> {
    await this.poller.stop()
    await this.pool.close()
    this.sqs.destroy()
  }
}

interface PointOptions {
  firstPollMs: number
  maxPollMs?: number
  iceberg?: boolean
}

async function onePoint(
  backend: Backend,
  bucket: string,
  prefix: string,
  path: CommitPath,
  committers: number,
  seconds: number,
  opts: PointOptions,
): Promise<Omit<ContentionPoint, 'latencyMs' | 'run'>> {
  const client = backend.s3Client()
  const counter = new S3RequestCounter(client)
  // each writer's store GETs by kind of key (a wrapper on its store: the QueuedCommitter's
  // snapshot probes, sidecar reads and conflict receipt GETs go through it)
  const gets: Record<string, number>[] = Array.from({ length: committers }, () => ({}))
  const store = (c?: number) => {
    const s = new S3Store({ bucket, prefix, client })
    if (c !== undefined) {
      const get = s.get.bind(s)
      s.get = (key: string) => {
        const k = pollKind(key)
        gets[c][k] = (gets[c][k] ?? 0) + 1
        return get(key)
      }
    }
    return s
  }
  await Table.create(store(), opts.iceberg ? ICEBERG_SCHEMA : SCHEMA)
  const handles = await Promise.all(Array.from({ length: committers }, (_, c) => Table.open(store(c))))
  const folder = path === 'folded' ? new FoldingCommitter(await Table.open(store())) : null
  const queued = path === 'queued' ? await QueuedPath.start(backend, `q${prefix.replace(/[^a-zA-Z0-9]/g, '-')}`, `s3://${bucket}/${prefix}`) : null
  const commitMs: number[] = []
  const traces: QueuedCommitTrace[] = []
  // every writer's committer, timed around its commit call
  const committerOf = (table: Table, c: number): Committer => {
    let inner: Committer
    let queue: TimedCommitQueue | null = null
    if (queued) ({ committer: inner, queue } = queued.committerFor(table, opts.firstPollMs, opts.maxPollMs))
    else if (folder) inner = { commit: (req) => folder.submit(req) }
    else inner = table.committer
    return {
      async commit(req) {
        const t0 = performance.now()
        const before = { ...gets[c] }
        const r = await inner.commit(req)
        const seenAt = Date.now()
        commitMs.push(performance.now() - t0)
        if (queue) {
          // one commit at a time per writer, so every GET of its store meanwhile is this commit's
          const polls = Object.fromEntries(Object.entries(gets[c]).map(([k, n]) => [k, n - (before[k] ?? 0)]).filter(([, n]) => (n as number) > 0))
          traces.push({ sentAt: queue.lastSentAt, sendMs: queue.lastSendMs, snapshotId: r.snapshotId, seenAt, polls })
        }
        return r
      },
    }
  }
  const writerCommitters = handles.map((h, c) => committerOf(h, c))
  counter.take()
  const loop = monitorEventLoopDelay({ resolution: 10 })
  loop.enable()
  let commits = 0
  let returned = 0
  let retries = 0
  let failures = 0
  const latencies: number[] = []
  const start = performance.now()
  const deadline = start + seconds * 1000
  const wallDeadline = Date.now() + seconds * 1000
  await Promise.all(
    handles.map(async (table, c) => {
      for (let i = 0; performance.now() < deadline; i++) {
        const rows = Array.from({ length: ROWS_PER_BATCH }, (_, j) => ({ kind: RowKind.INSERT, row: [BigInt(c * 1_000_000 + i * ROWS_PER_BATCH + j), `c${c}-${i}`] }))
        const t0 = performance.now()
        try {
          const r = await writeBatch(table, rows, { committer: writerCommitters[c] })
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
  const writerS3 = counter.take().requests
  loop.disable()
  await queued?.stop()
  if (queued?.errors.length) throw new Error(`contention queued ${committers} writers: the committer side failed: ${queued.errors.slice(0, 3).join('; ')}`)
  const latest = await handles[0].snapshots.latestId()
  const invs = queued?.invocations.filter((i) => i.probe.messages > 0) ?? []
  const expectSnapshots = folder ? folder.snapshots : queued ? invs.reduce((n, i) => n + i.probe.snapshots, 0) : returned
  if (latest !== expectSnapshots) throw new Error(`contention ${path} ${committers} committers: ${expectSnapshots} snapshots committed but the latest is ${latest}; a commit was lost or doubled`)
  const total = (await handles[0].snapshots.latest())?.totalRecordCount ?? 0
  if (total !== returned * ROWS_PER_BATCH) throw new Error(`contention ${path} ${committers} committers: ${returned} batches of ${ROWS_PER_BATCH} returned but the table holds ${total} records`)
  if (queued) {
    const landed = invs.reduce((n, i) => n + i.probe.messages, 0)
    if (landed !== returned) throw new Error(`contention queued ${committers} writers: the committers landed ${landed} messages but ${returned} writer batches returned`)
  }
  let snapshots = 0
  for (let id = 1; id <= latest; id++) {
    const s = await handles[0].snapshots.snapshot(id)
    if (s && s.timeMillis <= wallDeadline) snapshots++
  }
  return {
    path,
    snapshots,
    folds: folder?.folds ?? invs.map((i) => ({ size: i.probe.invoked + i.probe.drained, ms: i.probe.endedAt - i.probe.startedAt })),
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
    commitP99Ms: pct(commitMs, 99),
    writerS3PerCommit: writerS3 / Math.max(1, returned + failures),
    loopDelayMeanMs: loop.mean / 1e6,
    loopDelayP99Ms: loop.percentile(99) / 1e6,
    queued: queued ? queuedStats(queued, traces) : undefined,
    rounds: queued ? roundsOf(invs.map((i) => i.probe)) : undefined,
    loadAvg: loadavg()[0],
  }
}

function queuedStats(q: QueuedPath, traces: QueuedCommitTrace[]): QueuedStats {
  const invs = q.invocations.filter((i) => i.probe.messages > 0)
  const ps = invs.map((i) => i.probe)
  const sum = (f: (p: CommitterProbe) => number) => ps.reduce((n, p) => n + f(p), 0)
  const snapshots = sum((p) => p.snapshots)
  const messages = sum((p) => p.messages)
  const s3ByKey: Record<string, number> = {}
  for (const p of ps) for (const [k, v] of Object.entries(p.s3ByKey)) s3ByKey[k] = (s3ByKey[k] ?? 0) + v / ps.length
  // idle gaps between invocations that folded: with the committer lease one folds at a
  // time, so the table's gap is from one folding invocation's end to the next one's start,
  // whichever environment (per environment, the gap would include the other one's turn);
  // without it, per environment, as before
  const gaps: number[] = []
  if (process.env.STRATA_COMMITTER_LEASE !== 'off') {
    const list = invs.map((i) => i.probe).sort((a, b) => a.startedAt - b.startedAt)
    let lastEnd = -Infinity
    for (const p of list) {
      if (p.startedAt > lastEnd && lastEnd > -Infinity) gaps.push(p.startedAt - lastEnd)
      lastEnd = Math.max(lastEnd, p.endedAt)
    }
  } else {
    const byEnv = new Map<number | null, CommitterProbe[]>()
    for (const i of invs) byEnv.set(i.environmentId, [...(byEnv.get(i.environmentId) ?? []), i.probe])
    for (const list of byEnv.values()) {
      list.sort((a, b) => a.startedAt - b.startedAt)
      for (let k = 1; k < list.length; k++) gaps.push(list[k].startedAt - list[k - 1].endedAt)
    }
  }
  // when each snapshot came to exist, whichever committer created it
  const created = new Map<number, number>()
  for (const i of q.invocations) for (const [id, t] of Object.entries(i.probe.snapshotsCreated ?? {})) created.set(Number(id), t)
  const createdAt = (t: QueuedCommitTrace) => created.get(t.snapshotId) ?? NaN
  const ok = (xs: number[]) => xs.filter((x) => Number.isFinite(x))
  const pollsByKind: Record<string, number> = {}
  for (const t of traces) for (const [k, n] of Object.entries(t.polls)) pollsByKind[k] = (pollsByKind[k] ?? 0) + n / traces.length
  return {
    invocations: invs.length,
    snapshots,
    messages,
    messagesPerSnapshot: messages / Math.max(1, snapshots),
    messagesPerInvocation: mean(ps.map((p) => p.invoked + p.drained)),
    committerRetries: sum((p) => p.retries),
    committerRetriesPerSnapshot: sum((p) => p.retries) / Math.max(1, snapshots),
    replans: sum((p) => p.replans),
    rounds: mean(ps.map((p) => p.folds)),
    drainReceives: mean(ps.map((p) => p.receives)),
    receiveMs: mean(ps.map((p) => p.receiveMs)),
    foldMs: mean(ps.map((p) => p.foldMs)),
    receiptsMs: mean(ps.map((p) => p.receiptsMs)),
    deleteMs: mean(ps.map((p) => p.deleteMs)),
    invocationMs: mean(ps.map((p) => p.endedAt - p.startedAt)),
    invocationP99Ms: pct(ps.map((p) => p.endedAt - p.startedAt), 99),
    s3ByKey,
    s3Requests: mean(ps.map((p) => Object.values(p.s3).reduce((a, b) => a + b, 0))),
    s3Ms: mean(ps.map((p) => p.s3Ms)),
    gapMs: pct(gaps, 50),
    sendP50Ms: pct(traces.map((t) => t.sendMs), 50),
    sendToReceiptP50Ms: pct(traces.map((t) => t.seenAt - t.sentAt), 50),
    sendToReceiptP99Ms: pct(traces.map((t) => t.seenAt - t.sentAt), 99),
    sendToWrittenP50Ms: pct(ok(traces.map((t) => createdAt(t) - t.sentAt)), 50),
    receiptWaitP50Ms: pct(ok(traces.map((t) => t.seenAt - createdAt(t))), 50),
    receiptWaitP99Ms: pct(ok(traces.map((t) => t.seenAt - createdAt(t))), 99),
    pollsPerCommit: mean(traces.map((t) => Object.values(t.polls).reduce((a, b) => a + b, 0))),
    pollsByKind,
  }
}

/**
 * Every round of these invocations as the next snapshot waits for it: its fold, plus its
 * invocation's mean receive latency (the tail of the receive in flight when the fold ends,
 * at most one receive; the messages were collected while the round before folded).
 */
function roundsOf(ps: CommitterProbe[]): { size: number; ms: number }[] {
  return ps.flatMap((p) => {
    const receive = p.receives ? p.receiveMs / p.receives : 0
    return (p.rounds ?? []).map((r) => ({ size: r.size, ms: r.ms + receive }))
  })
}

/** One fold of the sweep: `size` messages waiting, one committer invocation drains and folds them. */
export interface SweepPoint {
  kind: 'APPEND' | 'COMPACT'
  /**
   * COMPACT, roundModel 'fold': what the snapshot the fold builds on is to the committer:
   * 'own' (it landed it: a round after its own round) or 'foreign' (another committer landed
   * it after the committer's last round, as the second invocation the event source runs does)
   */
  after?: 'own' | 'foreign'
  size: number
  /** the invocation: whole, and its parts */
  ms: number
  /**
   * summed time of the invocation's receives (the first drain's several in flight at once,
   * those during the fold, the last look), so more than their wall time; receiveMs ÷
   * receives is one receive's mean latency
   */
  receiveMs: number
  receives: number
  foldMs: number
  /** folds (rounds) the invocation made: 1 unless the first drain missed some messages */
  folds?: number
  /**
   * from the invocation's start to its first fold's end: the first drain, parsing, the fold.
   * What a cold invocation's first round costs; later rounds collect their messages while
   * the round before folds
   */
  roundMs?: number
  /** S3 time of conflict receipt writes (none in the sweep; before the snapshot chain, every message's receipt) */
  receiptsMs: number
  deleteMs: number
  snapshots: number
  s3Requests: number
}

export interface FoldSweep {
  latencyMs: number
  points: SweepPoint[]
  /** per kind: ms = base + perCommit·messages over the sweep's invocations */
  fit: Record<'APPEND' | 'COMPACT', FoldFit>
  /**
   * per kind, the parts of an invocation (commit-service rounds). With roundModel
   * 'fold + one receive': `round` = a steady-state round, the fold plus one receive's mean
   * latency (its messages were received while the round before folded, so only the tail of
   * the receive in flight when that fold ended is on the path); `firstRound` = a cold
   * invocation's first round, start → first fold end (the whole first drain); `settle` =
   * deletes and conflict receipts, which overlap the next round and delay no one. Without
   * roundModel (older results): `round` = start → fold end, `settle` = receipts + deletes,
   * which held their senders.
   */
  roundFit?: Record<'APPEND' | 'COMPACT', FoldFit>
  firstRoundFit?: Record<'APPEND' | 'COMPACT', FoldFit>
  settleFit?: Record<'APPEND' | 'COMPACT', FoldFit>
  /**
   * roundModel 'fold' (the next round no longer waits for the receive in flight): `round` =
   * a fold after the committer's own snapshot, `foreignRound` = a fold after one snapshot
   * another committer landed (its delta read first), COMPACT only
   */
  foreignRoundFit?: Record<'COMPACT', FoldFit>
  roundModel?: 'fold + one receive' | 'fold'
  /** set when the sweep was measured alone, later than the rest of its results (bench/run.ts --latest-sweep) */
  remeasured?: string
}

export const SWEEP_SIZES = { quick: [1, 10, 50], full: [1, 10, 100, 300] }

const SWEEP_SCHEMA = (buckets: number) => ({
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  partitionKeys: [],
  // as the freshness table: deletion vectors, so a compaction message carries index replacements too
  options: { bucket: String(buckets), 'deletion-vectors.enabled': 'true' },
})

/** A committer that records the request instead of committing it: the message a writer or compactor would send. */
function capturing(into: CommitRequest[]): Committer {
  return {
    async commit(req) {
      into.push(req)
      return { snapshotId: -1, retries: 0, deduplicated: false }
    },
  }
}

async function inBatches<T>(items: T[], atOnce: number, f: (x: T) => Promise<void>): Promise<void> {
  for (let i = 0; i < items.length; i += atOnce) await Promise.all(items.slice(i, i + atOnce).map(f))
}

/**
 * The fold cost beyond the contention points' small folds, without writers competing for
 * the CPU: for each size k, k commit messages of one kind are made by the real write and
 * compaction paths (writeBatch, compactBucket with a committer that only records the
 * request), sent to the commit queue, and then one committer invocation drains and folds
 * them all. APPEND: k writer batches of one bucket; COMPACT: k buckets of a deletion-vector
 * table, each with two fresh L0 files, compacted from the same snapshot. The two writer
 * batches before a COMPACT fold go through the committer too (one invocation each), so the
 * fold builds on its own snapshot ('own', a round after its own round), or the second one is
 * committed directly ('foreign': a snapshot of another committer landed since its last
 * round, as the second invocation the event source runs lands them).
 */
async function foldSweep(backend: Backend, bucket: string, latencyMs: number, sizes: number[], log: (s: string) => void): Promise<FoldSweep> {
  const points: SweepPoint[] = []
  const client = backend.s3Client()
  for (const kind of ['APPEND', 'COMPACT'] as const) {
    const prefix = `l${latencyMs}/sweep/${kind.toLowerCase()}`
    const buckets = kind === 'APPEND' ? 1 : Math.max(...sizes)
    const store = new S3Store({ bucket, prefix, client })
    const table = await Table.create(store, SWEEP_SCHEMA(buckets))
    const name = `sweep-${kind.toLowerCase()}-l${latencyMs}`
    const q = await QueuedPath.start(backend, name, `s3://${bucket}/${prefix}`, { poll: false })
    const queue = new SqsCommitQueue(q.sqs, q.queueUrl)
    let next = 0
    const bucketOf = bucketFunction(table.view.bucketKeyTypes, buckets)
    const rowsOf = (ids: number[]) => ids.map((id) => ({ kind: RowKind.INSERT, row: [BigInt(id), `v${id}`] }))
    /** Sends the requests as commit messages and has one committer invocation fold them all. */
    const fold = async (reqs: CommitRequest[], what: string): Promise<CommitterProbe> => {
      await inBatches(reqs, 32, async (req) => {
        const m = commitMessageOf(req, name)
        const { body } = await encodeCommitMessage(m, store)
        await queue.send(body, commitKeyOf(m))
      })
      const before = await table.snapshots.latestId()
      const p = await q.invokeOnce()
      if (p.messages !== reqs.length) throw new Error(`fold sweep ${what}: the committer landed ${p.messages} of ${reqs.length} messages (drained ${p.drained})`)
      const after = await table.snapshots.latestId()
      if (after !== before + p.snapshots) throw new Error(`fold sweep ${what}: ${p.snapshots} snapshots folded but the latest went from ${before} to ${after}`)
      return p
    }
    const cases: { k: number; after?: 'own' | 'foreign'; warmUp?: boolean }[] = sizes.flatMap((k) => (kind === 'APPEND' ? [{ k }] : (['own', 'foreign'] as const).map((after) => ({ k, after }))))
    // every case once unrecorded first: a committer folding round after round runs code the
    // JIT has compiled, while this one's first folds would run it cold (about 3× the CPU per
    // message in a profile of the committer's worker)
    cases.unshift(...cases.map((c) => ({ ...c, warmUp: true })))
    try {
      for (const { k, after, warmUp } of cases) {
        const reqs: CommitRequest[] = []
        if (kind === 'APPEND') {
          await inBatches(Array.from({ length: k }, (_, i) => i), 32, async () => {
            const ids = Array.from({ length: ROWS_PER_BATCH }, () => next++)
            await writeBatch(table, rowsOf(ids), { committer: capturing(reqs) })
          })
        } else {
          // two batches of a row per bucket, so every bucket has two L0 files to merge: folded
          // by the committer, the second committed directly when the fold is to follow another committer's snapshot
          for (let round = 0; round < 2; round++) {
            const ids: number[] = []
            const seen = new Set<number>()
            while (seen.size < buckets) {
              const id = next++
              const b = bucketOf([BigInt(id)])
              if (!seen.has(b)) {
                seen.add(b)
                ids.push(id)
              }
            }
            if (after === 'foreign' && round === 1) await writeBatch(table, rowsOf(ids))
            else {
              const appends: CommitRequest[] = []
              await writeBatch(table, rowsOf(ids), { committer: capturing(appends) })
              await fold(appends, `${kind} ${k}: the writer batch before it`)
            }
          }
          const partition = serializeBinaryRow([], [])
          await inBatches(Array.from({ length: k }, (_, b) => b), 16, async (b) => {
            await compactBucket(table, { partition, bucket: b, full: true, committer: capturing(reqs) })
          })
        }
        const p = await fold(reqs, `${kind} ${k}${after ? ` after ${after}` : ''}`)
        if (warmUp) continue
        const point: SweepPoint = {
          kind, after, size: reqs.length, ms: p.endedAt - p.startedAt, receiveMs: p.receiveMs, receives: p.receives, foldMs: p.foldMs, folds: p.folds,
          roundMs: (p.firstFoldEndedAt ?? p.foldEndedAt ?? p.startedAt) - p.startedAt,
          receiptsMs: p.receiptsMs, deleteMs: p.deleteMs, snapshots: p.snapshots, s3Requests: Object.values(p.s3).reduce((a, b) => a + b, 0),
        }
        points.push(point)
        log(`fold sweep ${latencyMs} ms, ${kind} × ${point.size}${after ? ` after ${after === 'own' ? 'its own snapshot' : 'another committer\'s snapshot'}` : ''}: invocation ${point.ms} ms (${point.receives} receives, ${point.receiveMs} ms summed, ${f0(receiveMean(point))} ms each; ${point.folds} fold(s) ${point.foldMs} ms; first round start → fold end ${point.roundMs} ms; conflict receipts ${point.receiptsMs}, deletes ${point.deleteMs}), ${point.snapshots} snapshot(s), ${point.s3Requests} S3 requests`)
        if (p.folds !== 1) log(`  the first drain missed messages: ${p.folds} folds; the round fit takes the invocation's folds together`)
      }
    } finally {
      await q.stop()
    }
  }
  // COMPACT: the folds after the committer's own snapshot, unless `after` says otherwise
  const fitOf = (kind: 'APPEND' | 'COMPACT', ms: (p: SweepPoint) => number = (p) => p.ms, after: 'own' | 'foreign' = 'own') =>
    linearFit(points.filter((p) => p.kind === kind && (kind === 'APPEND' || p.after === after)).map((p) => ({ size: p.size, ms: ms(p) })))
  // a steady-state round: its fold (the next round no longer waits for the receive in flight)
  const round = (p: SweepPoint) => p.foldMs
  const firstRound = (p: SweepPoint) => p.roundMs ?? p.ms - p.receiptsMs - p.deleteMs
  // a round's aftermath, which delays no one: deletes of what it drained, conflict receipts (none here)
  const settle = (p: SweepPoint) => p.receiptsMs + p.deleteMs
  const byKind = (ms: (p: SweepPoint) => number) => ({ APPEND: fitOf('APPEND', ms), COMPACT: fitOf('COMPACT', ms) })
  return {
    latencyMs,
    points,
    fit: byKind((p) => p.ms),
    roundFit: byKind(round),
    foreignRoundFit: { COMPACT: fitOf('COMPACT', round, 'foreign') },
    firstRoundFit: byKind(firstRound),
    settleFit: byKind(settle),
    roundModel: 'fold',
  }
}

/** One receive's mean latency in a sweep invocation. */
const receiveMean = (p: SweepPoint): number => (p.receives ? p.receiveMs / p.receives : 0)

/** The realistic latency model of this benchmark: S3 first-byte latency on every request. */
export function s3Latency(firstByteMs: number): TransferModel {
  return { firstByteMs }
}

export interface ContentionOptions {
  quick: boolean
  seconds?: number
  runs?: number
  /** only these writer counts (default COMMITTERS) */
  committers?: number[]
  /** only these paths (default all three) */
  paths?: CommitPath[]
  firstPollMs?: number
  maxPollMs?: number
  /** run the embedded S3 + SQS server in this process (as before) instead of a child process of its own */
  inProcessBackend?: boolean
  /** the fold sweep at REALISTIC_MS (default on) */
  sweep?: boolean
  /** the table writes Iceberg metadata (metadata.iceberg.storage table-location, in a `<db>.db` directory) */
  iceberg?: boolean
  log?: (s: string) => void
}

export async function runContention(opts: ContentionOptions): Promise<ContentionResult> {
  const seconds = opts.seconds ?? (opts.quick ? 4 : 10)
  const runs = opts.runs ?? (opts.quick ? 1 : 3)
  const committerCounts = opts.committers ?? COMMITTERS
  const paths = opts.paths ?? PATHS
  const firstPollMs = opts.firstPollMs ?? FIRST_POLL_MS
  // --quick keeps the realistic latency model only
  const latencies = opts.quick ? [REALISTIC_MS] : [0, REALISTIC_MS]
  const log = opts.log ?? ((s) => process.stderr.write(s + '\n'))
  const points: ContentionPoint[] = []
  let sweep: FoldSweep | undefined
  for (const latencyMs of latencies) {
    const backend: Backend = opts.inProcessBackend ? await startEmbeddedBackend(latencyMs > 0 ? { latency: s3Latency(latencyMs) } : {}) : await startBackendProcess({ firstByteMs: latencyMs })
    try {
      await backend.createBucket('contention')
      for (let run = 0; run < runs; run++) {
        for (const n of committerCounts) {
          for (const path of paths) {
            const p = await onePoint(backend, 'contention', `${opts.iceberg ? 'iceberg/' : ''}l${latencyMs}/r${run}/${path}/n${n}${opts.iceberg ? '/wh/bench.db/t' : ''}`, path, n, seconds, { firstPollMs, maxPollMs: opts.maxPollMs, iceberg: opts.iceberg })
            points.push({ latencyMs, run, ...p })
            const q = p.queued
            log(
              `contention ${path} ${latencyMs} ms, ${n} writers, run ${run + 1}/${runs}: ${p.commitsPerSecond.toFixed(1)} commits/s in ${(p.snapshots / seconds).toFixed(1)} snapshots/s, ${p.retriesPerCommit.toFixed(2)} lost races/commit seen by writers, ${p.failures} gave up, commit p50/p99 ${p.commitP50Ms.toFixed(0)}/${p.commitP99Ms.toFixed(0)} ms` +
                (q ? `; ${q.messagesPerSnapshot.toFixed(1)} messages/snapshot, ${q.committerRetries} committer lost races, invocation ${q.invocationMs.toFixed(0)} ms (${f1(q.rounds)} rounds, fold ${q.foldMs.toFixed(0)}, conflict receipts ${q.receiptsMs.toFixed(0)}, receives ${q.receiveMs.toFixed(0)} in ${q.drainReceives.toFixed(1)}, deletes ${q.deleteMs.toFixed(0)}), send→landed p50 ${f0(q.sendToWrittenP50Ms)} ms, send→landing seen p50/p99 ${f0(q.sendToReceiptP50Ms)}/${f0(q.sendToReceiptP99Ms)} ms, landing seen ${f0(q.receiptWaitP50Ms)} ms after the snapshot, ${q.pollsPerCommit.toFixed(1)} GETs/commit while waiting` : ''),
            )
            log(`  writer S3 requests/commit ${p.writerS3PerCommit.toFixed(1)}, event-loop delay mean/p99 ${p.loopDelayMeanMs.toFixed(0)}/${p.loopDelayP99Ms.toFixed(0)} ms, load ${p.loadAvg.toFixed(1)}` + (q ? `, committer S3 ${q.s3Requests.toFixed(1)} requests ${q.s3Ms.toFixed(0)} ms summed per invocation` : ''))
          }
        }
      }
      if ((opts.sweep ?? true) && latencyMs === REALISTIC_MS) sweep = await foldSweep(backend, 'contention', latencyMs, opts.quick ? SWEEP_SIZES.quick : SWEEP_SIZES.full, log)
    } finally {
      await backend.stop()
    }
  }
  const summary: ContentionSummary[] = []
  for (const latencyMs of latencies) {
    const base = median(points.filter((p) => p.path === 'direct' && p.latencyMs === latencyMs && p.committers === 1).map((p) => p.commitsPerSecond))
    for (const path of paths) for (const n of committerCounts) {
      const ps = points.filter((p) => p.path === path && p.latencyMs === latencyMs && p.committers === n)
      const cps = median(ps.map((p) => p.commitsPerSecond))
      // the committer-side figures of the run whose commits/s is the median
      const mid = [...ps].sort((a, b) => a.commitsPerSecond - b.commitsPerSecond)[Math.floor(ps.length / 2)]
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
        commitP99Ms: median(ps.map((p) => p.commitP99Ms)),
        speedup: cps / base,
        queued: mid?.queued,
      })
    }
  }
  const singleCommitMs: Record<number, number> = {}
  const collapse: ContentionResult['collapse'] = {}
  const foldedGainAt32: Record<number, number> = {}
  const foldFit: ContentionResult['foldFit'] = {}
  const queuedGainAt32: Record<number, number> = {}
  const queuedFit: ContentionResult['queuedFit'] = {}
  const queuedGapMs: Record<number, number> = {}
  const receiptWaitMs: Record<number, number> = {}
  const queuedRoundFit: Record<number, FoldFit> = {}
  const top = Math.max(...committerCounts)
  for (const latencyMs of latencies) {
    if (paths.length === 0) break
    const at = (path: CommitPath) => summary.find((s) => s.path === path && s.latencyMs === latencyMs && s.committers === top)?.commitsPerSecond ?? NaN
    foldFit[latencyMs] = linearFit(points.filter((p) => p.path === 'folded' && p.latencyMs === latencyMs).flatMap((p) => p.folds))
    foldedGainAt32[latencyMs] = at('folded') / at('direct')
    queuedGainAt32[latencyMs] = at('queued') / at('direct')
    const qs = points.filter((p) => p.path === 'queued' && p.latencyMs === latencyMs)
    queuedFit[latencyMs] = linearFit(qs.flatMap((p) => p.folds))
    // the gap at the most writers, where messages are nearly always waiting: the poller's delete and next receive, not idleness
    queuedGapMs[latencyMs] = summary.find((s) => s.path === 'queued' && s.latencyMs === latencyMs && s.committers === top)?.queued?.gapMs ?? NaN
    receiptWaitMs[latencyMs] = median(qs.map((p) => p.queued!.receiptWaitP50Ms).filter((x) => Number.isFinite(x)))
    queuedRoundFit[latencyMs] = linearFit(qs.flatMap((p) => p.rounds ?? []))
    const rows = summary.filter((s) => s.path === 'direct' && s.latencyMs === latencyMs)
    if (rows.length === 0) continue
    singleCommitMs[latencyMs] = (rows.find((s) => s.committers === 1) ?? rows[0]).commitP50Ms
    const peak = rows.reduce((a, b) => (b.commitsPerSecond > a.commitsPerSecond ? b : a))
    const atTop = rows.find((s) => s.committers === top)!.commitsPerSecond
    // "collapse": more committers bring fewer commits than a smaller group had
    collapse[latencyMs] = { peakCommitsPerSecond: peak.commitsPerSecond, peakAt: peak.committers, at32: atTop, collapsed: atTop < 0.7 * peak.commitsPerSecond }
  }
  const t = summary.find((s) => s.path === 'queued' && s.latencyMs === REALISTIC_MS && s.committers === TARGET.writers)
  const target = t
    ? { ...TARGET, measured: t.commitsPerSecond, lostRacesVisible: t.retriesPerCommit + t.failures, met: t.commitsPerSecond >= TARGET.commitsPerSecond && t.retriesPerCommit === 0 && t.failures === 0 }
    : undefined
  return {
    params: {
      committers: committerCounts, latenciesMs: latencies, paths, seconds, runs, rowsPerBatch: ROWS_PER_BATCH, buckets: BUCKETS, committerConcurrency: COMMITTER_CONCURRENCY, committerLease: process.env.STRATA_COMMITTER_LEASE !== 'off',
      firstPollMs, maxPollMs: opts.maxPollMs ?? DEFAULT_MAX_POLL_MS, backend: opts.inProcessBackend ? 'in process' : 'child process', landingSeenFrom: 'snapshot chain',
    },
    points, summary, singleCommitMs, collapse, foldedGainAt32, foldFit, queuedGainAt32, queuedFit, queuedGapMs, receiptWaitMs, queuedRoundFit, target, foldSweep: sweep,
  }
}

/** ms = base + perCommit·size by least squares; a negative slope (noise) is clamped to 0. */
function linearFit(xs: { size: number; ms: number }[]): FoldFit {
  const n = xs.length
  if (n === 0) return { baseMs: NaN, perCommitMs: NaN, snapshots: 0 }
  const mx = xs.reduce((a, x) => a + x.size, 0) / n
  const my = xs.reduce((a, x) => a + x.ms, 0) / n
  const sxx = xs.reduce((a, x) => a + (x.size - mx) ** 2, 0)
  const slope = sxx > 0 ? Math.max(0, xs.reduce((a, x) => a + (x.size - mx) * (x.ms - my), 0) / sxx) : 0
  return { baseMs: my - slope * mx, perCommitMs: slope, snapshots: n }
}

const f0 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(0))
const f1 = (x: number | undefined) => (x === undefined || !Number.isFinite(x) ? '-' : x.toFixed(1))

/**
 * How the queued path's sender-side figures are labelled and explained: from the snapshot
 * chain (params.landingSeenFrom), or from a receipt per message (results before it).
 */
function senderWords(r: ContentionResult) {
  const pauses = (first: number, max: number | undefined) => `start at ${first} ms and grow ×1.5 to ${max === undefined ? 'QueuedCommitter\'s default largest pause' : `${max} ms`}`
  if (r.params.landingSeenFrom === 'snapshot chain') {
    return {
      seen: 'landing seen',
      written: 'landed (snapshot created)',
      wait: 'landing seen after the snapshot',
      polls: 'GETs per commit while waiting',
      receiptsColumn: 'conflict receipts (ms)',
      committerText: `The queued path's committer side (the median run of each point). "Receives" are summed (several overlap); "idle between invocations" is one environment's gap between two invocations that carried messages.`,
      senderText: () =>
        `On the writer's side, "landed" is when the snapshot that landed its commit was created, "landing seen" when the writer's commit() returned, and "GETs per commit while waiting" its probes, sidecar reads and conflict-receipt GETs.`,
    }
  }
  return {
    seen: 'receipt read',
    written: 'receipt written',
    wait: 'receipt waited for its poll',
    polls: 'receipt polls per commit',
    receiptsColumn: 'receipts (ms)',
    committerText: `The queued path's committer side (the median run of each point; these results predate the snapshot chain: a receipt per settled message): an invocation's time is the drain receives beyond its batch, the fold (BatchingCommitter: latest snapshot, duplicate search, manifest, manifest list, conditional snapshot create, with lost races for \`snapshot-N\` against the other committer), the receipt writes (parallel) and the deletes of what it drained; "idle between invocations" is one environment's gap between two invocations that carried messages (the poller's delete of the invoked batch and its next receive).`,
    senderText: (first: number, max: number | undefined) =>
      `On the writer's side, "send → receipt read" is from sending the commit message to the receipt GET that found it, and "receipt waited for its poll" is from the receipt's PUT returning to that GET (QueuedCommitter's polls ${pauses(first, max)}).`,
  }
}

/** The fold sweep's text and table (a sweep from before the snapshot chain keeps its own words). */
function sweepMarkdown(sw: FoldSweep): string[] {
  const fitText = (f: FoldFit, d = 2) => `${f.baseMs.toFixed(0)} ms + ${f.perCommitMs.toFixed(d)} ms per message`
  const intro = `Fold sweep (${sw.latencyMs} ms${sw.remeasured ? `; ${sw.remeasured}` : ''}): k commit messages of one kind (APPEND: writer batches; COMPACT: buckets of a deletion-vector table compacted from one snapshot) wait on the queue; one committer invocation drains and folds them`
  const whole = `Fits: a whole invocation APPEND ≈ ${fitText(sw.fit.APPEND)}; COMPACT ≈ ${fitText(sw.fit.COMPACT)}.`
  if (sw.roundModel !== 'fold + one receive' && sw.roundModel !== 'fold') {
    return [
      `${intro}.`,
      '',
      markdownTable(
        ['kind', 'messages', 'invocation (ms)', 'round: start → fold end (ms)', 'drain receives (summed ms)', 'fold (ms)', 'receipts (ms)', 'deletes (ms)', 'snapshots', 'S3 requests'],
        sw.points.map((p) => [p.kind, p.size, p.ms, p.roundMs ?? '-', `${p.receives} (${p.receiveMs})`, p.foldMs, p.receiptsMs, p.deleteMs, p.snapshots, p.s3Requests]),
      ),
      '',
      whole +
        (sw.roundFit && sw.settleFit
          ? ` Split (the committer folds its next round while a round's receipts are written): a round (drain, parsing and fold) COMPACT ≈ ${fitText(sw.roundFit.COMPACT)}, APPEND ≈ ${fitText(sw.roundFit.APPEND)}; its receipts and deletes COMPACT ≈ ${fitText(sw.settleFit.COMPACT)}.`
          : ''),
    ]
  }
  if (sw.roundModel === 'fold') {
    const afterText = (p: SweepPoint) => (p.after === 'own' ? 'its own' : p.after === 'foreign' ? 'another committer\'s' : '-')
    return [
      `${intro}, building on its own last snapshot or on another committer's (whose delta it reads first). Every case ran once unrecorded first, so the code is JIT-compiled.`,
      '',
      markdownTable(
        ['kind', 'messages', 'snapshot the fold builds on', 'invocation (ms)', 'a cold invocation\'s first round: start → fold end (ms)', 'receives (summed ms; mean each)', 'fold = steady round (ms)', 'conflict receipts (ms)', 'deletes (ms)', 'snapshots', 'S3 requests'],
        sw.points.map((p) => [p.kind, p.size, afterText(p), p.ms, p.roundMs ?? '-', `${p.receives} (${p.receiveMs}; ${f0(receiveMean(p))})`, p.foldMs, p.receiptsMs, p.deleteMs, p.snapshots, p.s3Requests]),
      ),
      '',
      whole +
        (sw.roundFit && sw.firstRoundFit && sw.settleFit && sw.foreignRoundFit
          ? ` In steady state a round costs its fold: COMPACT after its own snapshot ≈ ${fitText(sw.roundFit.COMPACT)}, after another committer's ≈ ${fitText(sw.foreignRoundFit.COMPACT)}; APPEND ≈ ${fitText(sw.roundFit.APPEND)}. A cold invocation's first round (start → fold end: the whole first drain, parsing and the fold) COMPACT ≈ ${fitText(sw.firstRoundFit.COMPACT)}, APPEND ≈ ${fitText(sw.firstRoundFit.APPEND)}. After a round its deletes (and conflict receipts, none here) COMPACT ≈ ${fitText(sw.settleFit.COMPACT)} go on behind the next round and delay no sender.`
          : ''),
    ]
  }
  return [
    `${intro}.`,
    '',
    markdownTable(
      ['kind', 'messages', 'invocation (ms)', 'a cold invocation\'s first round: start → fold end (ms)', 'receives (summed ms; mean each)', 'fold (ms)', 'steady round: fold + one receive (ms)', 'conflict receipts (ms)', 'deletes (ms)', 'snapshots', 'S3 requests'],
      sw.points.map((p) => {
        const receive = p.receives ? p.receiveMs / p.receives : 0
        return [p.kind, p.size, p.ms, p.roundMs ?? '-', `${p.receives} (${p.receiveMs}; ${f0(receive)})`, p.foldMs, f0(p.foldMs + receive), p.receiptsMs, p.deleteMs, p.snapshots, p.s3Requests]
      }),
    ),
    '',
    whole +
      (sw.roundFit && sw.firstRoundFit && sw.settleFit
        ? ` In steady state a round's messages are received while the round before folds, so the next snapshot waits for a round's fold and the tail of the one receive in flight when it ends (counted here as a whole receive's mean latency): a round COMPACT ≈ ${fitText(sw.roundFit.COMPACT)}, APPEND ≈ ${fitText(sw.roundFit.APPEND)}. A cold invocation's first round (start → fold end: the whole first drain, parsing and the fold) COMPACT ≈ ${fitText(sw.firstRoundFit.COMPACT)}, APPEND ≈ ${fitText(sw.firstRoundFit.APPEND)}. After a round its deletes (and conflict receipts, none here) COMPACT ≈ ${fitText(sw.settleFit.COMPACT)} go on behind the next round and delay no sender.`
        : ''),
  ]
}

/**
 * The contention tables and their text, rows at `latencies` (default: every latency measured;
 * docs/benchmarks.md shows the realistic one). Requests and GETs by kind are left to the
 * results file.
 */
export function contentionMarkdown(r: ContentionResult, latencies: number[] = r.params.latenciesMs): string {
  const shown = r.summary.filter((s) => latencies.includes(s.latencyMs))
  const rows = shown.map((s) => [
    s.path,
    s.latencyMs === 0 ? 'none' : `${s.latencyMs} ms`,
    s.committers,
    s.commitsPerSecond.toFixed(1),
    s.snapshotsPerSecond.toFixed(1),
    `${s.speedup.toFixed(2)}×`,
    s.retriesPerCommit.toFixed(2),
    s.failures,
    f0(s.commitP50Ms),
    f0(s.commitP99Ms),
    f0(s.latencyP50Ms),
    f0(s.latencyP99Ms),
  ])
  const table = markdownTable(['commit path', 'S3 first-byte latency', 'writers', 'writer batches committed/s', 'snapshots/s', 'vs 1 direct writer', 'lost races per commit (seen by writers)', 'gave up', 'commit p50 (ms)', 'commit p99 (ms)', 'writeBatch p50 (ms)', 'writeBatch p99 (ms)'], rows)
  const queued = shown.filter((s) => s.path === 'queued' && s.queued)
  const w = senderWords(r)
  const pollsByKind = queued.some((s) => s.queued!.pollsByKind) ? ' (by kind: results.json)' : ''
  const qtable = markdownTable(
    ['S3 first-byte latency', 'writers', 'committer invocations', 'rounds per invocation', 'messages per invocation', 'messages per snapshot', 'committer lost races (per snapshot)', 'invocation mean / p99 (ms)', 'receives (summed ms)', 'fold, all rounds (ms)', w.receiptsColumn, 'deletes (ms)', 'S3 requests per invocation (by kind: bench/out/results.json)', 'idle between invocations (ms)', `send → ${w.seen} p50 / p99 (ms)`, `send → ${w.written} p50 (ms)`, `${w.wait} p50 / p99 (ms)`, `${w.polls}${pollsByKind}`],
    queued.map((s) => {
      const q = s.queued!
      return [
        s.latencyMs === 0 ? 'none' : `${s.latencyMs} ms`,
        s.committers,
        q.invocations,
        f1(q.rounds),
        f1(q.messagesPerInvocation),
        f1(q.messagesPerSnapshot),
        `${q.committerRetries} (${q.committerRetriesPerSnapshot.toFixed(2)})`,
        `${f0(q.invocationMs)} / ${f0(q.invocationP99Ms)}`,
        `${f1(q.drainReceives)} (${f0(q.receiveMs)})`,
        f0(q.foldMs),
        f0(q.receiptsMs),
        f0(q.deleteMs),
        f1(q.s3Requests),
        f0(q.gapMs),
        `${f0(q.sendToReceiptP50Ms)} / ${f0(q.sendToReceiptP99Ms)}`,
        f0(q.sendToWrittenP50Ms),
        `${f0(q.receiptWaitP50Ms)} / ${f0(q.receiptWaitP99Ms)}`,
        f1(q.pollsPerCommit),
      ]
    }),
  )
  const fits = r.params.latenciesMs.filter((l) => r.queuedFit[l] && r.foldFit[l]).map((l) => {
    const q = r.queuedFit[l]
    const f = r.foldFit[l]
    const rf = r.queuedRoundFit?.[l]
    const round = rf && rf.snapshots > 0 ? `; one round (its fold plus one receive) ≈ ${rf.baseMs.toFixed(0)} ms + ${rf.perCommitMs.toFixed(1)} ms per message (fit over ${rf.snapshots} rounds)` : ''
    return `${l} ms: queued ${r.queuedGainAt32[l].toFixed(1)}× direct at ${Math.max(...r.params.committers)} writers, one committer invocation ≈ ${q.baseMs.toFixed(0)} ms + ${q.perCommitMs.toFixed(1)} ms per message (fit over ${q.snapshots} invocations)${round}; the in-process folding prototype ${r.foldedGainAt32[l].toFixed(1)}× direct, one snapshot ≈ ${f.baseMs.toFixed(0)} ms + ${f.perCommitMs.toFixed(1)} ms per request (fit over ${f.snapshots})`
  })
  const sw = r.foldSweep
  const sweepPart = sw ? ['', ...sweepMarkdown(sw)] : []
  if (r.points.length === 0) return sweepPart.join('\n').trim()
  return [
    table,
    '',
    w.committerText,
    '',
    w.senderText(r.params.firstPollMs ?? 20, r.params.maxPollMs),
    '',
    qtable,
    '',
    `Fits: ${fits.join('; ')}.`,
    ...sweepPart,
  ].join('\n')
}

/** The deployed path's throughput target and whether the run met it (empty without one). */
export function targetMarkdown(r: ContentionResult): string {
  const t = r.target
  return t ? `Target (${REALISTIC_MS} ms, ${t.writers} writers, deployed path): at least ${t.commitsPerSecond} commits/s with no lost race seen by a writer: measured ${t.measured.toFixed(1)}/s, ${t.lostRacesVisible} seen, **${t.met ? 'met' : 'not met'}**.` : ''
}

/** Requests to the Iceberg metadata directory, by operation. */
class MetadataRequests extends InterceptingStore {
  readonly byOp: Record<string, number> = {}
  protected call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
    if (key.startsWith('metadata/')) this.byOp[op] = (this.byOp[op] ?? 0) + 1
    return run()
  }
  take(): Record<string, number> {
    const out = { ...this.byOp }
    for (const k of Object.keys(this.byOp)) delete this.byOp[k]
    return out
  }
}

export interface IcebergRequestRow {
  mode: string
  snapshot: string
  snapshots: number
  /** mean requests under metadata/ per snapshot, by operation, and in all */
  byOp: Record<string, number>
  perSnapshot: number
}

/**
 * The S3 requests the Iceberg metadata adds per snapshot, counted at the store seam (no
 * timing): a long-lived handle (the committer's) lands `n` level-0 APPENDs, then `n` rounds
 * of an APPEND and a compaction, for format v2 and for v3 with deletion vectors. The first
 * snapshot (a rebuild: no base) is left out.
 */
export async function icebergRequestsPerSnapshot(n = 20): Promise<IcebergRequestRow[]> {
  const rows: IcebergRequestRow[] = []
  const modes: Record<string, Record<string, string>> = {
    'v2': {},
    'v3, deletion vectors': { 'deletion-vectors.enabled': 'true', 'deletion-vectors.bitmap64': 'true', 'metadata.iceberg.format-version': '3' },
  }
  for (const [mode, options] of Object.entries(modes)) {
    const counter = new MetadataRequests(new MemoryStore({ uri: `memory://bench-iceberg/${rows.length}/wh/bench.db/t` }))
    const table = await Table.create(counter, { ...ICEBERG_SCHEMA, options: { ...ICEBERG_SCHEMA.options, bucket: '4', ...options } })
    let key = 0
    const write = async () => {
      await writeBatch(table, Array.from({ length: 8 }, (_, j) => ({ kind: RowKind.INSERT, row: [BigInt((key++ * 7 + j * 13) % 500), `v${key}`] })))
      await table.iceberg!.settle()
    }
    await write()
    counter.take()
    const add = (snapshot: string, count: number, byOp: Record<string, number>) => {
      const total = Object.values(byOp).reduce((a, b) => a + b, 0)
      rows.push({ mode, snapshot, snapshots: count, byOp: Object.fromEntries(Object.entries(byOp).map(([k, v]) => [k, v / count])), perSnapshot: total / count })
    }
    for (let i = 0; i < n; i++) await write()
    add('APPEND (level 0 only)', n, counter.take())
    const compacts: Record<string, number> = {}
    let compactions = 0
    for (let i = 0; i < n; i++) {
      await write()
      counter.take()
      const before = (await table.snapshots.latest())!.id
      await compactTable(table, { full: i % 4 === 3 })
      await table.iceberg!.settle()
      compactions += (await table.snapshots.latest())!.id - before
      for (const [k, v] of Object.entries(counter.take())) compacts[k] = (compacts[k] ?? 0) + v
    }
    add('COMPACT', compactions, compacts)
  }
  return rows
}

export function icebergRequestsMarkdown(rows: IcebergRequestRow[]): string {
  const ops = ['get', 'head', 'put', 'putIfAbsent', 'delete', 'list']
  return markdownTable(
    ['format', 'snapshot', 'snapshots', 'requests per snapshot', ...ops.map((o) => `${o}`)],
    rows.map((r) => [r.mode, r.snapshot, String(r.snapshots), r.perSnapshot.toFixed(1), ...ops.map((o) => (r.byOp[o] ?? 0).toFixed(1))]),
  )
}

if (import.meta.filename === process.argv[1]) {
  const args = parseBenchArgs(process.argv.slice(2), ['--quick', '--queued-only', '--in-process-backend', '--sweep-only', '--no-sweep', '--no-lease', '--iceberg'], ['--seconds', '--runs', '--writers', '--first-poll-ms', '--max-poll-ms'])
  if (args.has('--no-lease')) process.env.STRATA_COMMITTER_LEASE = 'off'
  const quick = args.has('--quick')
  const machine = machineInfo(['fauxqs', '@aws-sdk/client-s3', '@aws-sdk/client-sqs', 'tsx'])
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const writers = args.num('--writers', 0)
  const options: ContentionOptions = {
    quick,
    seconds: args.num('--seconds', quick ? 4 : 10),
    runs: args.num('--runs', quick ? 1 : 3),
    committers: writers ? [writers] : undefined,
    paths: args.has('--sweep-only') ? [] : args.has('--queued-only') ? ['queued'] : undefined,
    sweep: !args.has('--no-sweep'),
    inProcessBackend: args.has('--in-process-backend'),
    firstPollMs: args.num('--first-poll-ms', FIRST_POLL_MS),
    maxPollMs: args.num('--max-poll-ms', 0) || undefined,
  }
  // --iceberg: the same points without and with Iceberg metadata, one after the other in one run
  const r = await runContention(options)
  if (args.has('--iceberg')) {
    const on = await runContention({ ...options, iceberg: true })
    console.log('Iceberg metadata off:\n')
    console.log(contentionMarkdown(r))
    console.log('\nIceberg metadata on (metadata.iceberg.storage table-location):\n')
    console.log(contentionMarkdown(on))
    if (on.target) console.log(`\nWith Iceberg metadata: ${targetMarkdown(on)}`)
    console.log(`\nS3 requests the Iceberg metadata adds per snapshot:\n\n${icebergRequestsMarkdown(await icebergRequestsPerSnapshot())}`)
    writeResults(quick ? 'commit-contention-iceberg-quick' : 'commit-contention-iceberg', { machine, on })
  } else console.log(contentionMarkdown(r))
  if (r.target) console.log(`\n${targetMarkdown(r)}`)
  console.log(`\n${machineMarkdown(machine)}`)
  process.stderr.write(`results: ${writeResults(quick ? 'commit-contention-quick' : 'commit-contention', { machine, ...r })}\n`)
}
