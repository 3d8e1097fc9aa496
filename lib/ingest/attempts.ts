// A writer batch's attempts and their markers (docs/design.md "Abandoned attempts"): how a
// redelivered batch, or a redelivered record in another batch, is recognised as committed
// by an earlier attempt, so it is not written twice.

import { createHash } from 'node:crypto'
import { type LandedCommits, commitKeyOf } from '../commit/landed.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { CorruptFileError } from '../errors.ts'
import type { ManifestEntry, Snapshot } from '../types.ts'

/** What the attempt markers need of a table: its store and which commits its snapshots landed (the Table handle is one). */
export interface AttemptLog {
  readonly store: Pick<ObjectStore, 'putIfAbsent' | 'put' | 'get' | 'list'>
  readonly landed: Pick<LandedCommits, 'find'>
}

/** What finding the buckets a landed snapshot wrote needs: its snapshots and manifests. */
export interface DeltaReader {
  readonly snapshots: { snapshot(id: number): Promise<Snapshot | null> }
  readonly manifests: { deltaEntries(s: Snapshot): Promise<ManifestEntry[]> }
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
export async function earlierAttempt(
  table: AttemptLog,
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
async function landedSince(table: AttemptLog, user: string, identifier: bigint, marker: Marker, latest: number): Promise<number | null> {
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
export async function committedEarlier(
  table: AttemptLog,
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

/** The buckets snapshot `snapshotId` added files to (none when it has expired). */
export async function deltaBuckets(table: DeltaReader, snapshotId: number): Promise<{ partition: Uint8Array; bucket: number }[]> {
  const s = await table.snapshots.snapshot(snapshotId)
  if (!s) return [] // expired since: its files were compacted or are going
  return (await table.manifests.deltaEntries(s)).map((e) => ({ partition: e.partition, bucket: e.bucket }))
}
