// The maintenance function against the embedded S3 + SQS backend: expiration by the
// table's options and old ingest markers on the frequent schedule, orphan cleanup on its own
// task (ages made relative, since S3
// objects cannot be back-dated: a marker threshold of 0 or an injected `now`; orphan ages
// below 13 h are refused), and the table
// metrics as EMF, QueuedJobs included from a real FIFO queue.

import { CreateQueueCommand, ReceiveMessageCommand, SQSClient, SendMessageCommand } from '@aws-sdk/client-sqs'
import type { Context, ScheduledEvent } from 'aws-lambda'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'

// Metrics read POWERTOOLS_METRICS_DISABLED when the module creates them, before any hook
vi.hoisted(() => {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false'
  process.env.POWERTOOLS_LOG_LEVEL = 'SILENT'
})

import { handler, runMaintenance } from '../functions/maintenance.ts'
import { resetRuntime } from '../functions/shared/runtime.ts'
import { INGEST_MARKER_DIR } from '../lib/ingest/attempts.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { MIN_ORPHAN_OLDER_THAN_MS } from '../lib/maintenance/orphans.ts'
import { referencesOf } from '../lib/maintenance/references.ts'
import { readAll } from '../lib/read/table-read.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { snapshotKey } from '../lib/table/paths.ts'
import { Table } from '../lib/handle/table.ts'
import type { ManifestEntry } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'

const BUCKET = 'maintenance-test'
const SCHEMA = {
  fields: [
    { name: 'id', type: 'INT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  partitionKeys: [],
  options: {
    bucket: '2',
    'deletion-vectors.enabled': 'true',
    'snapshot.num-retained.min': '1',
    'snapshot.num-retained.max': '3',
    // low, so the table shows back-pressure without dozens of commits
    'num-sorted-run.compaction-trigger': '2',
    'num-sorted-run.stop-trigger': '2',
  },
}

let backend: EmbeddedBackend
let sqs: SQSClient
let queueUrl: string
let table: Table
let lastWrite: Awaited<ReturnType<typeof writeBatch>>
const stdout: string[] = []
const ctx = { awsRequestId: 'req-maint', functionName: 'strata-maintenance' } as Context
const scheduled = { 'detail-type': 'Scheduled Event', source: 'aws.events', time: '2024-05-01T00:00:00Z', detail: {} } as ScheduledEvent
const enc = new TextEncoder()

const ORPHANS = ['bucket-0/data-orphan-0.parquet', 'manifest/manifest-orphan-0', 'index/index-orphan-0']
const FOREIGN = ['notes/keep.txt', '_strata/other/keep']
const MARKERS = [`${INGEST_MARKER_DIR}strata-writer-a/1f`, `${INGEST_MARKER_DIR}strata-writer-b/2e`]

function useEnv(extra: Record<string, string | undefined> = {}, tables: Record<string, unknown> = { orders: { uri: `s3://${BUCKET}/orders`, compactionQueueUrl: queueUrl } }) {
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: backend.endpoint,
    AWS_REGION: backend.region,
    AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey,
    STRATA_TABLES: JSON.stringify(tables),
  })
  for (const k of ['STRATA_TABLE', 'STRATA_ORPHAN_OLDER_THAN_MS', 'STRATA_DEDUP_WINDOW_MS', 'STRATA_STALLED_BUCKET_MS']) delete process.env[k]
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) process.env[k] = v
  resetRuntime()
}

async function write(ops: { id: number; v: string }[]) {
  lastWrite = await writeBatch(table, ops.map((o, i) => recordFromJson(table.view, o, `op ${i}`)))
  return lastWrite
}

const exists = async (key: string) => (await table.store.head(key)) !== null

function emfLines(): Record<string, unknown>[] {
  return stdout
    .flatMap((s) => s.split('\n'))
    .filter((l) => l.includes('"_aws"'))
    .map((l) => JSON.parse(l) as Record<string, unknown>)
}

/** Sorted runs of a bucket counted from its files: one per L0 file, one per non-empty higher level. */
function runsOf(entries: ManifestEntry[]): number {
  const l0 = entries.filter((e) => e.file.level === 0).length
  return l0 + new Set(entries.filter((e) => e.file.level > 0).map((e) => e.file.level)).size
}

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
  queueUrl = (await sqs.send(new CreateQueueCommand({ QueueName: 'orders-compaction.fifo', Attributes: { FifoQueue: 'true' } }))).QueueUrl!
  useEnv()
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout.push(String(chunk))
    return true
  })

  table = await Table.create(new S3Store({ bucket: BUCKET, prefix: 'orders', client: backend.s3Client() }), SCHEMA)
  await write(Array.from({ length: 20 }, (_, id) => ({ id, v: `a${id}` })))
  await compactTable(table, { full: true })
  // updates of five keys; compaction lifts them and marks their old rows in deletion vectors
  await write(Array.from({ length: 5 }, (_, id) => ({ id, v: `b${id}` })))
  await compactTable(table)
  // fresh L0 files that deletion-vector readers do not see yet
  await write([{ id: 100, v: 'c' }, { id: 101, v: 'c' }, { id: 102, v: 'c' }])
  await write([{ id: 100, v: 'd' }])

  for (const k of [...ORPHANS, ...FOREIGN, ...MARKERS]) await table.store.put(k, enc.encode('x'))
  // three compaction jobs, one of them received and in flight
  for (const g of ['g1', 'g2', 'g3']) {
    await sqs.send(new SendMessageCommand({ QueueUrl: queueUrl, MessageBody: `{"job":"${g}"}`, MessageGroupId: g, MessageDeduplicationId: g }))
  }
  const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queueUrl, MaxNumberOfMessages: 1, VisibilityTimeout: 300 }))
  expect(got.Messages?.length).toBe(1)
})

afterAll(async () => {
  vi.restoreAllMocks()
  sqs.destroy()
  await backend.stop()
})

describe('maintenance handler', () => {
  it('expires by the table options, keeps young files and markers, and emits the table metrics', async () => {
    const latest = await table.snapshots.latestId()
    expect(latest).toBeGreaterThan(4)
    const before = await readAll(table)
    stdout.length = 0

    const summary = await handler(scheduled, ctx)

    // snapshot.num-retained.max = 3
    expect(summary.errors).toEqual({})
    expect(summary.expired!.expired).toEqual(Array.from({ length: latest - 3 }, (_, i) => i + 1))
    for (let id = 1; id <= latest; id++) expect(await exists(snapshotKey(id))).toBe(id > latest - 3)
    expect(await readAll(table)).toEqual(before)
    // orphan cleanup is the other schedule's task; the dedup window (6 h) keeps every marker
    expect(summary.orphansDeleted).toBeNull()
    expect(summary.timings.Orphans).toBeUndefined()
    expect(summary.markersDeleted).toBe(0)
    for (const k of [...ORPHANS, ...FOREIGN, ...MARKERS]) expect(await exists(k)).toBe(true)

    const entries = await table.manifests.liveEntries((await table.snapshots.latest())!)
    const byBucket = [0, 1].map((b) => entries.filter((e) => e.bucket === b))
    const l0 = byBucket.map((es) => es.filter((e) => e.file.level === 0).length)
    const runs = byBucket.map(runsOf)
    expect(summary.metrics).toMatchObject({
      L0FileCountMax: Math.max(...l0),
      L0FileCountAvg: (l0[0] + l0[1]) / 2,
      SortedRunsMax: Math.max(...runs),
      BackPressureBuckets: runs.filter((r) => r > 2).length,
      DeletionVectorRows: 5,
      Snapshots: 3,
    })
    expect(summary.metrics!.L0FileCountMax).toBeGreaterThan(0)
    expect(summary.metrics!.FreshnessLag).toBeGreaterThanOrEqual(0)
    expect(summary.queuedJobs).toBe(3)

    const emf = emfLines()
    expect(emf.length).toBe(1)
    const m = emf[0]
    const directive = (m._aws as { CloudWatchMetrics: { Namespace: string; Dimensions: string[][]; Metrics: { Name: string; Unit: string }[] }[] }).CloudWatchMetrics[0]
    expect(directive.Namespace).toBe('Strata')
    expect(directive.Dimensions[0]).toContain('table')
    expect(m.table).toBe('orders')
    const names = directive.Metrics.map((x) => x.Name)
    for (const n of ['L0FileCountMax', 'L0FileCountAvg', 'FreshnessLag', 'SortedRunsMax', 'BackPressureBuckets', 'DeletionVectorRows', 'Snapshots', 'QueuedJobs']) {
      expect(names).toContain(n)
    }
    expect(directive.Metrics.find((x) => x.Name === 'FreshnessLag')!.Unit).toBe('Milliseconds')
    expect(m.QueuedJobs).toBe(3)
    expect(m.Snapshots).toBe(3)
    expect(m.DeletionVectorRows).toBe(5)
    expect(m.L0FileCountMax).toBe(summary.metrics!.L0FileCountMax)
  })

  it('removes only the markers older than the dedup window (ages relative to an injected now)', async () => {
    useEnv()
    const [a, b] = [`${INGEST_MARKER_DIR}w/aa`, `${INGEST_MARKER_DIR}w/bb`]
    await table.store.put(a, enc.encode('{}'))
    const aTime = (await table.store.head(a))!.lastModified
    let bTime = aTime
    while (bTime <= aTime) {
      await new Promise((r) => setTimeout(r, 2))
      await table.store.put(b, enc.encode('{}'))
      bTime = (await table.store.head(b))!.lastModified
    }
    const window = 3_600_000
    // b is exactly as old as the window (kept), a older (removed)
    const summary = await runMaintenance({ now: bTime + window, markerMaxAgeMs: window })
    // a and the markers written before it
    expect(summary.markersDeleted).toBe(1 + MARKERS.length)
    // the same now puts all but the newest snapshot past `snapshot.time-retained` (1 h)
    expect(summary.expired!.expired.length).toBe(2)
    expect(summary.metrics!.Snapshots).toBe(1)
    expect(await exists(a)).toBe(false)
    expect(await exists(b)).toBe(true)
    // the freshness lag is measured from the same now: the oldest L0 file's creation time
    const entries = await table.manifests.liveEntries((await table.snapshots.latest())!)
    const oldestL0 = Math.min(...entries.filter((e) => e.file.level === 0).map((e) => Number(e.file.creationTime)))
    expect(summary.metrics!.FreshnessLag).toBe(bTime + window - oldestL0)
  })

  it('refuses an orphan age below 13 h before any step runs, naming the variable or field', async () => {
    const keys = async () => (await table.store.list('')).map((o) => o.key)
    const before = await keys()
    const latest = await table.snapshots.latestId()
    for (const v of ['0', String(MIN_ORPHAN_OLDER_THAN_MS - 1)]) {
      useEnv({ STRATA_ORPHAN_OLDER_THAN_MS: v, STRATA_DEDUP_WINDOW_MS: '0' })
      stdout.length = 0
      await expect(handler(scheduled, ctx)).rejects.toThrow(
        new RegExp(`^environment variable STRATA_ORPHAN_OLDER_THAN_MS = "${v}": expected an orphan age of at least 13 h \\(46800000 ms\\)`),
      )
      expect(emfLines()[0].MaintenanceErrors).toBe(1)
    }
    useEnv({ STRATA_DEDUP_WINDOW_MS: '0' })
    await expect(runMaintenance({ orphanOlderThanMs: 60_000, now: Date.now() + 2 * MIN_ORPHAN_OLDER_THAN_MS })).rejects.toThrow(/^maintenance: orphanOlderThanMs = 60000: expected an orphan age of at least 13 h/)
    await expect(runMaintenance({ markerMaxAgeMs: -1, now: Date.now() + 2 * MIN_ORPHAN_OLDER_THAN_MS })).rejects.toThrow(/^maintenance: markerMaxAgeMs = -1, expected a non-negative number/)
    await expect(runMaintenance({ now: Number.NaN })).rejects.toThrow(/^maintenance: now = NaN, expected epoch milliseconds$/)
    // nothing expired, no orphan and no marker deleted
    expect(await keys()).toEqual(before)
    expect(await table.snapshots.latestId()).toBe(latest)
  })

  it('the orphan task removes only orphans; a bad task is refused before anything runs', async () => {
    useEnv({ STRATA_ORPHAN_OLDER_THAN_MS: String(MIN_ORPHAN_OLDER_THAN_MS), STRATA_DEDUP_WINDOW_MS: '0' })
    const keys = async () => (await table.store.list('')).map((o) => o.key)
    const before = await keys()
    const latest = await table.snapshots.latestId()
    for (const task of ['expire', 7, null]) {
      stdout.length = 0
      await expect(handler({ task } as never, ctx)).rejects.toThrow(
        new RegExp(`^maintenance event: task = ${JSON.stringify(task)}, expected "remove-orphans" \\(or a Scheduled Event without task\\)$`),
      )
      expect(emfLines()[0].MaintenanceErrors).toBe(1)
    }
    await expect(runMaintenance({ task: 'orphans' as never })).rejects.toThrow(/^maintenance: task = "orphans", expected "maintain" or "remove-orphans"$/)
    expect(await keys()).toEqual(before)
    // the orphans are just written, so younger than any accepted age: the task deletes nothing
    stdout.length = 0
    const young = await handler({ task: 'remove-orphans' }, ctx)
    expect(young).toMatchObject({ orphansDeleted: 0, expired: null, markersDeleted: null, metrics: null, queuedJobs: null, errors: {} })
    expect(Object.keys(young.timings)).toEqual(['Orphans'])
    expect(emfLines()[0].OrphanFilesDeleted).toBe(0)
    // past the smallest accepted age the orphans go, and nothing else: no snapshot expires, no marker goes
    const old = await runMaintenance({ task: 'remove-orphans', now: Date.now() + MIN_ORPHAN_OLDER_THAN_MS + 60_000 })
    expect(old.orphansDeleted).toBe(ORPHANS.length)
    expect(await keys()).toEqual(before.filter((k) => !ORPHANS.includes(k)))
    expect(await table.snapshots.latestId()).toBe(latest)
    for (const k of ORPHANS) await table.store.put(k, enc.encode('x'))
  })

  it('at the smallest accepted ages (the clock moved past them) removes unreferenced files and every marker, and nothing a snapshot needs', async () => {
    useEnv({ STRATA_ORPHAN_OLDER_THAN_MS: String(MIN_ORPHAN_OLDER_THAN_MS), STRATA_DEDUP_WINDOW_MS: '0' })
    const markers = (await table.store.list(INGEST_MARKER_DIR)).length
    expect(markers).toBeGreaterThan(0)
    const before = await readAll(table)
    const now = Date.now() + MIN_ORPHAN_OLDER_THAN_MS + 60_000
    const summary = await runMaintenance({ now })
    expect(summary.errors).toEqual({})
    expect(summary.orphansDeleted).toBeNull()
    expect(summary.markersDeleted).toBe(markers)
    for (const k of ORPHANS) expect(await exists(k)).toBe(true)
    const orphans = await runMaintenance({ task: 'remove-orphans', now })
    expect(orphans.errors).toEqual({})
    expect(orphans.orphansDeleted).toBe(ORPHANS.length)
    for (const k of ORPHANS) expect(await exists(k)).toBe(false)
    expect(await table.store.list(INGEST_MARKER_DIR)).toEqual([])
    for (const k of FOREIGN) expect(await exists(k)).toBe(true)
    // every object the retained snapshots reference is still there
    const retained = []
    for (let id = 1; id <= (await table.snapshots.latestId()); id++) {
      const s = await table.snapshots.snapshot(id)
      if (s && (await exists(snapshotKey(id)))) retained.push(s)
    }
    expect(retained.length).toBe(summary.metrics!.Snapshots)
    for (const k of await referencesOf(table, retained)) expect(await exists(k), k).toBe(true)
    expect(await readAll(table)).toEqual(before)
  })

  it('a failing step does not stop the others; the invocation then fails naming it', async () => {
    useEnv({ STRATA_DEDUP_WINDOW_MS: '0' }, { orders: { uri: `s3://${BUCKET}/orders`, compactionQueueUrl: `${queueUrl.replace(/orders-compaction\.fifo$/, 'missing.fifo')}` } })
    const marker = `${INGEST_MARKER_DIR}w/cc`
    await table.store.put(marker, enc.encode('{}'))
    await new Promise((r) => setTimeout(r, 5))
    stdout.length = 0
    await expect(handler(scheduled, ctx)).rejects.toThrow(/^maintenance of table 'orders': Queue failed/)
    expect(await exists(marker)).toBe(false)
    const m = emfLines()[0]
    expect(m.MaintenanceErrors).toBe(1)
    expect(m.Snapshots).toBe(1)
    expect(m.QueuedJobs).toBeUndefined()
  })

  it('sends a job for each bucket whose level-0 files waited past STRATA_STALLED_BUCKET_MS, once per snapshot', async () => {
    const sweepQueue = (await sqs.send(new CreateQueueCommand({ QueueName: 'orders-sweep-compaction.fifo', Attributes: { FifoQueue: 'true' } }))).QueueUrl!
    useEnv({}, { orders: { uri: `s3://${BUCKET}/orders`, compactionQueueUrl: sweepQueue } })
    const latest = (await table.snapshots.latest())!
    const entries = await table.manifests.liveEntries(latest)
    const withL0 = [...new Set(entries.filter((e) => e.file.level === 0).map((e) => e.bucket))].sort()
    expect(withL0.length).toBeGreaterThan(0)

    // the files are minutes old at most: below the default 5 minutes nothing is sent
    expect((await runMaintenance()).sweptJobs).toBe(0)
    // ten minutes on, every bucket with level-0 files gets one job, keyed by the snapshot
    const later = Date.now() + 10 * 60_000
    const first = await runMaintenance({ now: later })
    expect(first.errors).toEqual({})
    expect(first.sweptJobs).toBe(withL0.length)
    expect(first.queuedJobs).toBe(withL0.length)
    // the same snapshot swept again: the queue drops the repeated keys
    expect((await runMaintenance({ now: later })).queuedJobs).toBe(withL0.length)
    const got = await sqs.send(new ReceiveMessageCommand({ QueueUrl: sweepQueue, MaxNumberOfMessages: 10, AttributeNames: ['All'] }))
    const jobs = (got.Messages ?? []).map((m) => JSON.parse(m.Body!) as { table: string; bucket: number; dedupKey: string; snapshotId: number })
    expect(jobs.map((j) => j.bucket).sort()).toEqual(withL0)
    for (const j of jobs) expect(j).toMatchObject({ table: 'orders', dedupKey: `sweep:${latest.id}`, snapshotId: latest.id })

    // the age is the setting's: 1 ms sweeps now; a bad value is refused naming it
    useEnv({ STRATA_STALLED_BUCKET_MS: '1' }, { orders: { uri: `s3://${BUCKET}/orders`, compactionQueueUrl: sweepQueue } })
    expect((await runMaintenance()).sweptJobs).toBe(withL0.length)
    useEnv({ STRATA_STALLED_BUCKET_MS: '5m' }, { orders: { uri: `s3://${BUCKET}/orders`, compactionQueueUrl: sweepQueue } })
    await expect(runMaintenance()).rejects.toThrow('STRATA_STALLED_BUCKET_MS: expected a non-negative integer, got "5m"')
    useEnv()
  })

  it('refuses a configuration that does not say which table it serves, naming the variable', async () => {
    useEnv({}, { orders: { uri: `s3://${BUCKET}/orders` }, other: { uri: `s3://${BUCKET}/other` } })
    stdout.length = 0
    await expect(handler(scheduled, ctx)).rejects.toThrow(/environment variable STRATA_TABLE is not set/)
    expect(emfLines()[0].MaintenanceErrors).toBe(1)
    useEnv({ STRATA_ORPHAN_OLDER_THAN_MS: '1d' })
    await expect(handler(scheduled, ctx)).rejects.toThrow(/^environment variable STRATA_ORPHAN_OLDER_THAN_MS = "1d": expected an integer number of milliseconds >= 46800000$/)
  })
})
