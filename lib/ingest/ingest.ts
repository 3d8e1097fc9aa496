// The writer's work, independent of how records arrive (SQS, Kinesis, a test): validate
// every record, send the bad ones to the reject location with their reason and source
// position, commit the good ones per table as one APPEND snapshot, and enqueue one
// compaction job per touched bucket. Idempotent under redelivery: a batch that already
// committed (its process died before acking) is recognised and not written twice.

import { createHash, randomUUID } from 'node:crypto'
import { type CompactionJob, type JobQueue } from '../jobs/compaction-job.ts'
import { writerJobs } from '../jobs/coalesce.ts'
import type { Committer } from '../commit/committer.ts'
import { commitKeyOf } from '../commit/landed.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { JsonNumber, parseJsonLine } from '../table/json-line.ts'
import { recordFromJson } from '../table/json-values.ts'
import type { Table } from '../handle/table.ts'
import { type Snapshot, CorruptFileError, StrataInputError } from '../types.ts'
import { type WriteRecord, refusedRecord } from '../write/record-checks.ts'
import { writeBatch } from '../write/table-write.ts'

export interface IngestRecord {
  /** stable id of the record at its source, the same on every redelivery (SQS messageId, Kinesis sequence number) */
  id: string
  /** human-readable source position, stored with a rejected record */
  source: string
  /** the record: a JSON object with the table's columns, optional "_kind" and "_table" */
  body: string
  /** set when the source's bytes were not text (`body` then holds a lossy decoding): the record is rejected with this reason */
  unreadable?: string
  /**
   * SQS redelivery facts (ApproximateReceiveCount, ApproximateFirstReceiveTimestamp). A
   * record received more than once may have been committed by an earlier attempt in a
   * different batch; such records are looked up one by one (see committedEarlier).
   */
  receiveCount?: number
  firstReceivedAt?: number
}

export interface IngestTarget {
  table: Table
  jobs: JobQueue | null
  /** where the batch's commit goes; default the table's direct committer */
  committer?: Committer
}

export interface IngestOptions {
  /** resolves a table by name (a record's "_table", or `defaultTable`) */
  resolve: (name: string) => Promise<IngestTarget | null>
  defaultTable?: string
  rejects: ObjectStore
  /** commit user of this writer: fixed per deployment so redeliveries are recognised */
  commitUser: string
  /**
   * Kinesis semantics: a failure at record k makes the source retry from k, so nothing
   * after the first failed record may be committed.
   */
  orderedSource?: boolean
  now?: () => number
  /** test hook, called after the data files are written and before the snapshot is created */
  beforeSnapshotCreate?: (table: string, id: number) => Promise<void> | void
}

export interface TableIngestResult {
  table: string
  snapshotId: number
  rows: number
  /** this batch had already committed in an earlier attempt */
  deduplicated: boolean
  /** redelivered records found committed by an earlier attempt of another batch, so not written again */
  alreadyCommitted: number
  jobs: number
  retries: number
}

export interface IngestResult {
  tables: TableIngestResult[]
  rejected: number
  /** ids the source must redeliver (partial batch response) */
  failedIds: string[]
  /** why records failed, for the logs */
  errors: { table: string; error: string }[]
}

interface Rejection {
  id: string
  source: string
  reason: string
  record: string
}

/** 63-bit commit identifier from the batch's record ids, so a redelivery computes the same one. */
export function batchIdentifier(table: string, ids: string[]): bigint {
  const h = createHash('sha256').update(table).update('\u0000').update(ids.join('\u0000')).digest()
  return h.readBigUInt64BE(0) & 0x7fffffffffffffffn
}

const MARKER_DIR = '_strata/commits/'
/** How far back a redelivered record without a first-receipt time is looked for: a Lambda's 15 min timeout plus clock slack. */
const MAX_ATTEMPT_MS = 20 * 60_000

interface Marker {
  startedAfter: number
  startedAt: number
  /** the batch's record ids, so a per-record lookup can confirm a hash match */
  ids?: string[]
}

/**
 * Per-record index of attempts: zero-byte objects named
 * `<MARKER_DIR><user>/r/<epoch minute>/<identifier hex>.<part>.<hash>.<hash>...`, one per
 * INDEX_IDS_PER_KEY records, where each hash is the first 64 bits of SHA-256 of a record
 * id. Written with the marker, before the commit; listed only when a batch holds
 * redelivered records, over the minutes since their first receipt. A hash match is then
 * confirmed against the full ids in the marker.
 */
const INDEX_DIR = 'r/'
const INDEX_IDS_PER_KEY = 48
const MINUTE_MS = 60_000
/** writers' clocks may disagree: index minutes searched before a record's first receipt */
const CLOCK_SLACK_MS = 2 * MINUTE_MS

function idHash(id: string): string {
  return createHash('sha256').update(id).digest('hex').slice(0, 16)
}

function indexKeys(user: string, identifier: bigint, ids: string[], now: number): string[] {
  const dir = `${MARKER_DIR}${user}/${INDEX_DIR}${Math.floor(now / MINUTE_MS)}/`
  const keys: string[] = []
  for (let part = 0; part * INDEX_IDS_PER_KEY < ids.length; part++) {
    const hashes = ids.slice(part * INDEX_IDS_PER_KEY, (part + 1) * INDEX_IDS_PER_KEY).map(idHash)
    keys.push(`${dir}${identifier.toString(16)}.${part}.${hashes.join('.')}`)
  }
  return keys
}

/**
 * Idempotency across process deaths. Before committing, a batch creates a marker named by
 * its commit identifier recording the latest snapshot it saw. A redelivered batch finds the
 * marker and searches only the snapshots committed after that point while the earlier
 * attempt could still have been running — a bounded walk, however long ago it was.
 * Markers live under `_strata/`, outside Paimon's directories; maintenance removes old ones.
 */
async function earlierAttempt(
  table: Table,
  user: string,
  identifier: bigint,
  ids: string[],
  now: number,
  latestSnapshot: Snapshot | null,
): Promise<{ landed: number | null; existed: boolean; latestSnapshot: Snapshot | null }> {
  const key = markerKey(user, identifier)
  const latest = latestSnapshot?.id ?? 0
  const marker: Marker = { startedAfter: latest, startedAt: now, ids }
  const body = new TextEncoder().encode(JSON.stringify(marker))
  // the index and the marker in parallel: both are in place before the commit starts, which
  // is all a later per-record lookup needs (an attempt that fails here commits nothing)
  const [created] = await Promise.all([
    table.store.putIfAbsent(key, body),
    ...indexKeys(user, identifier, ids, now).map((k) => table.store.put(k, new Uint8Array(0))),
  ])
  if (created) return { landed: null, existed: false, latestSnapshot }
  const prev = parseMarker(await table.store.get(key), key)
  const landed = prev ? await landedSince(table, user, identifier, prev, latest) : null
  if (landed !== null) return { landed, existed: true, latestSnapshot }
  await table.store.put(key, body)
  return { landed: null, existed: true, latestSnapshot }
}

function markerKey(user: string, identifier: bigint): string {
  return `${MARKER_DIR}${user}/${identifier.toString(16)}`
}

function parseMarker(bytes: Uint8Array | null, key: string): Marker | null {
  if (!bytes) return null
  try {
    return JSON.parse(new TextDecoder().decode(bytes)) as Marker
  } catch (e) {
    // JSON.parse's message names no file
    throw new CorruptFileError(key, `not valid JSON (${(e as Error).message})`, { cause: e })
  }
}

/**
 * The snapshot an attempt recorded by `marker` landed as, searching every retained snapshot
 * after the one it recorded. No time bound: an attempt's commit message can wait on the
 * commit queue and land long after its writer died (docs/design.md "Abandoned attempts").
 */
async function landedSince(table: Table, user: string, identifier: bigint, marker: Marker, latest: number): Promise<number | null> {
  return table.landed.find(commitKeyOf({ kind: 'APPEND', commitUser: user, commitIdentifier: identifier }), marker.startedAfter, latest)
}

/**
 * Redelivered records that an earlier attempt, in any batch, already committed: SQS may
 * return a message whose ack was lost beside other messages, so the batch identifier
 * differs and the batch-level check cannot see it. Returns record id → landed snapshot id.
 * Costs nothing for first deliveries; for redeliveries, one LIST per minute since the
 * earliest first receipt (plus pages), and for each hash match one marker GET and a
 * bounded snapshot walk.
 */
async function committedEarlier(
  table: Table,
  user: string,
  records: { id: string; receiveCount?: number; firstReceivedAt?: number }[],
  now: number,
  latest: number,
): Promise<{ landed: Map<string, number>; unresolved: Set<string> }> {
  const out = new Map<string, number>()
  /** identities of earlier attempts holding some of the records that had not landed by `latest` */
  const unresolved = new Set<string>()
  const again = records.filter((r) => (r.receiveCount ?? 1) > 1)
  if (again.length === 0) return { landed: out, unresolved }
  const since = Math.min(...again.map((r) => (Number.isFinite(r.firstReceivedAt) ? r.firstReceivedAt! : now - MAX_ATTEMPT_MS)))
  const first = Math.floor((since - CLOCK_SLACK_MS) / MINUTE_MS)
  const last = Math.floor((now + CLOCK_SLACK_MS) / MINUTE_MS)
  const byHash = new Map(again.map((r) => [idHash(r.id), r.id]))
  const candidates = new Map<string, Set<string>>() // identifier hex → record ids it may hold
  const minutes = Array.from({ length: Math.max(0, last - first + 1) }, (_, i) => first + i)
  const base = `${MARKER_DIR}${user}/${INDEX_DIR}`
  for (let i = 0; i < minutes.length; i += 16) {
    const listed = await Promise.all(minutes.slice(i, i + 16).map((m) => table.store.list(`${base}${m}/`)))
    for (const o of listed.flat()) {
      const [identifierHex, , ...hashes] = o.key.slice(o.key.lastIndexOf('/') + 1).split('.')
      for (const h of hashes) {
        const id = byHash.get(h)
        if (id === undefined) continue
        let set = candidates.get(identifierHex)
        if (!set) candidates.set(identifierHex, (set = new Set()))
        set.add(id)
      }
    }
  }
  if (candidates.size === 0) return { landed: out, unresolved }
  for (const [identifierHex, ids] of candidates) {
    const identifier = BigInt(`0x${identifierHex}`)
    const marker = parseMarker(await table.store.get(markerKey(user, identifier)), markerKey(user, identifier))
    if (!marker?.ids) continue
    const held = new Set(marker.ids)
    const confirmed = [...ids].filter((id) => held.has(id) && !out.has(id))
    if (confirmed.length === 0) continue
    const landed = await landedSince(table, user, identifier, marker, latest)
    if (landed !== null) for (const id of confirmed) out.set(id, landed)
    // its commit may still be on the commit queue and land later: this batch supersedes it
    else unresolved.add(commitKeyOf({ kind: 'APPEND', commitUser: user, commitIdentifier: identifier }))
  }
  return { landed: out, unresolved }
}

export const INGEST_MARKER_DIR = MARKER_DIR

/** A record's table and columns: its body parsed strictly (parseJsonLine), `_table` taken out. */
function route(r: IngestRecord, defaultTable: string | undefined): { name: string; columns: Record<string, unknown> } {
  if (r.unreadable) throw new StrataInputError(`${r.source}: ${r.unreadable}`)
  const obj = parseJsonLine(r.body, r.source)
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj) || obj instanceof JsonNumber) {
    throw new StrataInputError(`${r.source}: expected a JSON object with the table's columns`)
  }
  const table = obj._table
  if (table !== undefined && typeof table !== 'string') throw new StrataInputError(`${r.source}: field '_table' expected a table name (a string), got ${table instanceof JsonNumber ? table.text : JSON.stringify(table)?.slice(0, 60)}`)
  const name = table ?? defaultTable
  if (!name) throw new StrataInputError("field '_table' is missing and this writer serves several tables")
  delete obj._table
  return { name, columns: obj }
}

/** The reason stored with a rejected record: an input error's message, or what else went wrong reading it. */
function rejectReason(r: IngestRecord, e: unknown): string {
  if (e instanceof StrataInputError) return e.message
  return `${r.source}: the record could not be read (${(e as Error)?.name ?? 'error'}: ${(e as Error)?.message ?? String(e)})`
}

export async function ingest(records: IngestRecord[], opts: IngestOptions): Promise<IngestResult> {
  const now = opts.now ?? Date.now
  const rejections: Rejection[] = []
  const byTable = new Map<string, { target: IngestTarget; records: WriteRecord[]; ids: string[] }>()
  const failed: string[] = []
  const errors: { table: string; error: string }[] = []
  let cut = records.length
  const byId = new Map(records.map((r) => [r.id, r]))
  // tables whose opening failed in this call: their records are redelivered, not retried one by one
  const unopened = new Set<string>()
  for (let i = 0; i < records.length; i++) {
    const r = records[i]
    const reject = (e: unknown) => rejections.push({ id: r.id, source: r.source, reason: rejectReason(r, e), record: r.body })
    let routed: { name: string; columns: Record<string, unknown> }
    try {
      routed = route(r, opts.defaultTable)
    } catch (e) {
      reject(e)
      continue
    }
    const { name, columns } = routed
    let entry = byTable.get(name)
    if (!entry) {
      let target: IngestTarget | null = null
      try {
        if (!unopened.has(name)) target = await opts.resolve(name)
      } catch (e) {
        unopened.add(name)
        errors.push({ table: name, error: (e as Error).message })
      }
      if (unopened.has(name)) {
        // the table could not be opened (storage): not the record's fault, so it comes again
        failed.push(r.id)
        if (opts.orderedSource) cut = Math.min(cut, i)
        continue
      }
      if (!target) {
        rejections.push({ id: r.id, source: r.source, reason: `field '_table': unknown table '${name}'`, record: r.body })
        continue
      }
      byTable.set(name, (entry = { target, records: [], ids: [] }))
    }
    // any error reading one record rejects that record alone, whatever its kind: a batch
    // that failed on one record would come back until the DLQ took the good ones with it
    try {
      const rec = { ...recordFromJson(entry.target.table.view, columns, r.source), where: r.source }
      const refusal = refusedRecord(entry.target.table, rec)
      if (refusal) throw new StrataInputError(`${r.source}: ${refusal}`)
      entry.records.push(rec)
      entry.ids.push(r.id)
    } catch (e) {
      reject(e)
    }
  }

  // rejects first: a record is acked only once it is either committed or stored as rejected
  if (rejections.length) {
    const day = new Date(now()).toISOString().slice(0, 10)
    const key = `dt=${day}/${randomUUID()}.jsonl`
    const body = rejections.map((x) => JSON.stringify({ reason: x.reason, source: x.source, id: x.id, record: x.record, rejectedAt: new Date(now()).toISOString() })).join('\n') + '\n'
    try {
      await opts.rejects.put(key, new TextEncoder().encode(body))
    } catch (e) {
      errors.push({ table: '', error: `reject location ${opts.rejects.uri}: ${(e as Error).message}` })
      for (const x of rejections) failed.push(x.id)
      if (opts.orderedSource) cut = Math.min(cut, ...rejections.map((x) => records.findIndex((r) => r.id === x.id)))
    }
  }

  const results: TableIngestResult[] = []
  for (const [name, entry] of byTable) {
    let recs = entry.records
    let ids = entry.ids
    if (cut < records.length) {
      const allowed = new Set(records.slice(0, cut).map((r) => r.id))
      const keep = ids.map((id) => allowed.has(id))
      recs = recs.filter((_, i) => keep[i])
      ids = ids.filter((_, i) => keep[i])
      for (const id of entry.ids) if (!allowed.has(id)) failed.push(id)
    }
    if (recs.length === 0) continue
    const table = entry.target.table
    try {
      // the one lookup of the latest snapshot a writer batch makes: the search for earlier
      // attempts ends at it, the marker records it, the commit's duplicate check and its
      // supersessions start after it, and the batch numbers its rows above it
      const latestSnapshot = await table.snapshots.latest()
      // redelivered records an earlier attempt of another batch committed: acknowledge, do not
      // write; attempts that had not landed are superseded by this batch's commit, so that
      // one still on the commit queue never lands beside it (docs/design.md "Abandoned attempts")
      const { landed: earlier, unresolved } = await committedEarlier(table, opts.commitUser, ids.map((id) => byId.get(id)!), now(), latestSnapshot?.id ?? 0)
      const landedBefore = [...new Set(earlier.values())]
      if (earlier.size) {
        const keep = ids.map((id) => !earlier.has(id))
        recs = recs.filter((_, i) => keep[i])
        ids = ids.filter((_, i) => keep[i])
      }
      let snapshotId: number
      let deduplicated = false
      let retries = 0
      let touched: { partition: Uint8Array; bucket: number }[] = []
      // the earlier attempts may have died before enqueueing their compaction jobs
      for (const id of landedBefore) touched.push(...(await deltaBuckets(table, id)))
      const identifier = batchIdentifier(name, ids)
      const prior = recs.length ? await earlierAttempt(table, opts.commitUser, identifier, ids, now(), latestSnapshot) : { landed: Math.max(...landedBefore), latestSnapshot: null }
      const own = commitKeyOf({ kind: 'APPEND', commitUser: opts.commitUser, commitIdentifier: identifier })
      const supersedes = [...unresolved].filter((k) => k !== own)
      if (prior.landed !== null) {
        snapshotId = prior.landed
        deduplicated = true
        if (recs.length) touched.push(...(await deltaBuckets(table, snapshotId)))
      } else {
        // the snapshot earlierAttempt read: an attempt that landed after it is the commit's
        // duplicate check to find, one that landed at or before it earlierAttempt's, so
        // nothing falls between the two (a second lookup here would leave a gap).
        // writeBatch streams the records into per-bucket buffers bounded by the table's
        // write-buffer-size (lib/write/table-write.ts BatchWriter), as `strata write` does; the
        // parsed records themselves are held until here because the Kinesis cut and the
        // redelivery check above decide which of them may be written, and they are bounded
        // by the invocation's event (6 MB of record bodies at most on Lambda)
        const res = await writeBatch(table, recs, {
          committer: entry.target.committer,
          commitUser: opts.commitUser,
          commitIdentifier: identifier,
          dedupAfterSnapshotId: prior.latestSnapshot?.id ?? 0,
          baseSnapshot: prior.latestSnapshot,
          ...(supersedes.length ? { supersedes } : {}),
          beforeSnapshotCreate: opts.beforeSnapshotCreate ? (id) => opts.beforeSnapshotCreate!(name, id) : undefined,
        })
        snapshotId = res.snapshotId
        deduplicated = res.deduplicated
        retries = res.retries
        touched.push(...res.buckets)
      }
      const buckets = dedupeBuckets(touched)
      let jobs: CompactionJob[] = []
      if (entry.target.jobs && buckets.length) {
        // keyed so that writers landing while a bucket's job waits or runs share it (lib/jobs/coalesce.ts);
        // files of an earlier attempt landed at or before the latest of these snapshots. Keyed
        // at least at the snapshot this batch read, not at an earlier attempt's old landing: a
        // redelivery minutes later then shares the bucket's current key instead of adding a
        // job keyed on a state long compacted (past SQS's deduplication window)
        jobs = await writerJobs(name, table, Math.max(snapshotId, ...landedBefore, latestSnapshot?.id ?? 0), buckets, now())
        await entry.target.jobs.enqueue(jobs)
      }
      results.push({ table: name, snapshotId, rows: recs.length, deduplicated, alreadyCommitted: earlier.size, jobs: jobs.length, retries })
    } catch (e) {
      errors.push({ table: name, error: (e as Error).message })
      // storage or commit failure: the source redelivers these records; nothing of them
      // was committed (a commit either lands whole or not at all)
      failed.push(...ids)
    }
  }
  return { tables: results, rejected: rejections.length, failedIds: failed, errors }
}

async function deltaBuckets(table: Table, snapshotId: number): Promise<{ partition: Uint8Array; bucket: number }[]> {
  const s = await table.snapshots.snapshot(snapshotId)
  if (!s) return [] // expired since: its files were compacted or are going
  return (await table.manifests.deltaEntries(s)).map((e) => ({ partition: e.partition, bucket: e.bucket }))
}

function dedupeBuckets<T extends { partition: Uint8Array; bucket: number }>(xs: T[]): T[] {
  const seen = new Set<string>()
  return xs.filter((x) => {
    const k = `${Buffer.from(x.partition).toString('hex')}|${x.bucket}`
    if (seen.has(k)) return false
    seen.add(k)
    return true
  })
}
