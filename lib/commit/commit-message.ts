// Commit messages: a commit request as data, for the table's commit queue (docs/design.md
// "How a commit travels"). A writer or compactor writes its data and index files, then sends
// one of these instead of creating `snapshot-N` itself. Everything a commit needs travels as
// data: the ADD/DELETE manifest entries, index replacements and, for a compaction, the
// inputs of its conflict checks (lib/commit/conflicts.ts).
//
// The JSON codec carries bigints as {"$bigint": "…"} and byte arrays as {"$bytes": base64}.
// A body past SQS's 256 KiB limit is stored under `_strata/commit-messages/` and the queue
// gets a pointer that still names the commit (user, identifier, kind), so a redelivery of a
// message that already landed is recognised without reading the spilled body. A committer
// that forwards a message to the lease's holder counts the forward in the envelope
// (`forwards`), so that forwarding has a limit (lib/commit/commit-service.ts, MAX_FORWARDS).

import { randomUUID } from 'node:crypto'
import type { ObjectStore } from '../store/object-store.ts'
import { StrataInputError } from '../errors.ts'
import type { CommitKind, IndexManifestEntry, ManifestEntry, ManifestFileMeta } from '../types.ts'
import type { CommitRequest, ExpectedIndex, ExpectedPartitionIndex, IndexReplacement, WrittenAhead } from './committer.ts'
import { HASH_INDEX } from '../format/hash-index.ts'

/** SQS's largest message (body plus attributes), 256 KiB. */
export const SQS_MAX_MESSAGE_BYTES = 262_144
/** Bodies above this go to S3; the margin leaves room for message attributes. */
export const INLINE_LIMIT_BYTES = SQS_MAX_MESSAGE_BYTES - 4096
export const COMMIT_MESSAGE_DIR = '_strata/commit-messages/'
const VERSION = 1
/**
 * The envelope version of a message naming manifests written ahead (CommitMessage.writtenAhead):
 * a committer that knows only version 1 would land its inline entries alone and lose the
 * rest, so it refuses the body instead
 */
const VERSION_WRITTEN_AHEAD = 2

function versionOf(m: Pick<CommitMessage, 'writtenAhead'>): number {
  return m.writtenAhead ? VERSION_WRITTEN_AHEAD : VERSION
}

export type MessageKind = Extract<CommitKind, 'APPEND' | 'COMPACT'>

export interface CommitMessage {
  /** the table's name in STRATA_TABLES; checked by the committer function when present */
  table?: string
  kind: MessageKind
  commitUser: string
  commitIdentifier: bigint
  /** the latest snapshot id when the message was built: it cannot have landed at or before it */
  builtAfterSnapshotId: number
  schemaId: number
  adds: ManifestEntry[]
  deletes: ManifestEntry[]
  indexReplacements: IndexReplacement[]
  /** changelog files (ADD entries) the commit lists in its snapshot's changelog manifests; absent in a message of an older Strata */
  changelog?: ManifestEntry[]
  /**
   * APPEND: more ADD entries (and changelog entries), in manifests the writer wrote ahead of
   * the commit (CommitRequest.writtenAhead), by their list records; absent: none. A writer of
   * many files sends these instead of every entry inline; the body's envelope is version 2.
   */
  writtenAhead?: WrittenAhead
  /** COMPACT: data files (names, in the message's buckets) that must still be live, e.g. files given deletion-vector marks */
  requireLive: string[]
  /** COMPACT: the index files each replacement was computed from; a different current set is a conflict */
  expectIndex: ExpectedIndex[]
  /**
   * APPEND in dynamic bucket mode: the HASH index of each partition it assigned new keys in,
   * as it read it (CommitRequest.expectPartitionIndex); absent: none
   */
  expectPartitionIndex?: ExpectedPartitionIndex[]
  /**
   * APPEND: identities (commitKeyOf) of earlier attempts whose records this commit carries
   * again; once it lands they never do, and it does not land once one of them has
   * (docs/design.md "Abandoned attempts"). Absent: none.
   */
  supersedes?: string[]
}

/** What the queue carries: the message itself, or a pointer to its spilled body. */
interface Envelope {
  v: number
  /** times a committer forwarded this body to the lease's holder; absent: never */
  forwards?: number
  message?: unknown
  pointer?: { key: string; kind: MessageKind; commitUser: string; commitIdentifier: string; builtAfterSnapshotId: number; table?: string }
}

function replacer(_key: string, v: unknown): unknown {
  if (typeof v === 'bigint') return { $bigint: v.toString() }
  if (v instanceof Uint8Array) return { $bytes: Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64') }
  return v
}

function reviver(_key: string, v: unknown): unknown {
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>
    const keys = Object.keys(o)
    if (keys.length === 1 && typeof o.$bigint === 'string') {
      if (!/^-?\d+$/.test(o.$bigint)) throw new StrataInputError(`commit message: $bigint ${JSON.stringify(o.$bigint)}, expected an integer literal`)
      return BigInt(o.$bigint)
    }
    if (keys.length === 1 && typeof o.$bytes === 'string') return new Uint8Array(Buffer.from(o.$bytes, 'base64'))
  }
  return v
}

/** The message as JSON text (no size check; see encodeCommitMessage). */
export function commitMessageJson(m: CommitMessage): string {
  validateCommitMessage(m, 'commit message')
  return JSON.stringify({ v: versionOf(m), message: m } satisfies Envelope, replacer)
}

/**
 * The SQS body for a message: inline when it fits, else spilled to
 * `_strata/commit-messages/<uuid>.json` in the table's store with a pointer inline.
 */
export async function encodeCommitMessage(m: CommitMessage, store: ObjectStore, limitBytes = INLINE_LIMIT_BYTES): Promise<{ body: string; spilledKey?: string }> {
  const json = commitMessageJson(m)
  if (Buffer.byteLength(json) <= limitBytes) return { body: json }
  const key = `${COMMIT_MESSAGE_DIR}${randomUUID()}.json`
  await store.put(key, new TextEncoder().encode(json))
  const pointer: Envelope = {
    v: versionOf(m),
    pointer: { key, kind: m.kind, commitUser: m.commitUser, commitIdentifier: m.commitIdentifier.toString(), builtAfterSnapshotId: m.builtAfterSnapshotId, ...(m.table !== undefined ? { table: m.table } : {}) },
  }
  return { body: JSON.stringify(pointer), spilledKey: key }
}

/** A received body: either the message, or (spilled) its identity and where its body is. */
export type ReceivedMessage =
  | { inline: true; message: CommitMessage }
  | { inline: false; key: string; identity: Pick<CommitMessage, 'kind' | 'commitUser' | 'commitIdentifier' | 'builtAfterSnapshotId' | 'table'> }

export function parseCommitMessageBody(body: string): ReceivedMessage {
  let env: Envelope
  try {
    env = JSON.parse(body, reviver) as Envelope
  } catch (e) {
    if (e instanceof StrataInputError) throw e
    throw new StrataInputError(`commit message: body is not JSON (${(e as Error).message}): ${body.slice(0, 80)}`)
  }
  if (env === null || typeof env !== 'object' || (env.v !== VERSION && env.v !== VERSION_WRITTEN_AHEAD)) {
    throw new StrataInputError(`commit message: field "v" is ${JSON.stringify((env as Envelope | null)?.v)}, expected ${VERSION} or ${VERSION_WRITTEN_AHEAD}`)
  }
  if (env.forwards !== undefined && !(Number.isSafeInteger(env.forwards) && env.forwards >= 0)) fail('commit message: field "forwards"', env.forwards, 'a non-negative integer')
  if (env.pointer !== undefined) {
    const p = env.pointer
    if (typeof p?.key !== 'string' || !p.key.startsWith(COMMIT_MESSAGE_DIR)) {
      throw new StrataInputError(`commit message: pointer.key is ${JSON.stringify(p?.key)}, expected a key under ${COMMIT_MESSAGE_DIR}`)
    }
    const identity = { kind: p.kind, commitUser: p.commitUser, commitIdentifier: bigintOf(p.commitIdentifier, 'pointer.commitIdentifier'), builtAfterSnapshotId: p.builtAfterSnapshotId, table: p.table }
    checkIdentity(identity, 'commit message pointer')
    return { inline: false, key: p.key, identity }
  }
  validateCommitMessage(env.message, 'commit message')
  return { inline: true, message: env.message }
}

/**
 * The envelope as plain JSON (bigints and bytes left encoded), its forward count checked;
 * the message itself is not (parseCommitMessageBody checks it).
 */
function envelopeOf(body: string): Envelope {
  let env: Envelope
  try {
    env = JSON.parse(body) as Envelope
  } catch (e) {
    throw new StrataInputError(`commit message: body is not JSON (${(e as Error).message}): ${body.slice(0, 80)}`)
  }
  if (env === null || typeof env !== 'object' || Array.isArray(env)) fail('commit message', env, 'an envelope object')
  if (env.forwards !== undefined && !(Number.isSafeInteger(env.forwards) && env.forwards >= 0)) fail('commit message: field "forwards"', env.forwards, 'a non-negative integer')
  return env
}

/** How many times committers forwarded this body (0: never); throws for a body that is not an envelope. */
export function forwardsOf(body: string): number {
  return envelopeOf(body).forwards ?? 0
}

/**
 * The body a committer sends when it forwards this one to the lease's holder: the same
 * envelope, bigints and bytes as they came, with its forward count one higher (a few bytes,
 * within the margin INLINE_LIMIT_BYTES leaves).
 */
export function forwardedBody(body: string): string {
  const env = envelopeOf(body)
  return JSON.stringify({ ...env, forwards: (env.forwards ?? 0) + 1 })
}

/** Decodes a body, reading a spilled message from the store. */
export async function decodeCommitMessage(body: string, store: ObjectStore): Promise<CommitMessage> {
  const r = parseCommitMessageBody(body)
  if (r.inline) return r.message
  return readSpilled(r.key, store)
}

export async function readSpilled(key: string, store: ObjectStore): Promise<CommitMessage> {
  const bytes = await store.get(key)
  if (!bytes) throw new Error(`commit message: spilled body ${key} is missing from ${store.uri}`)
  const r = parseCommitMessageBody(new TextDecoder().decode(bytes))
  if (!r.inline) throw new StrataInputError(`commit message: spilled body ${key} is itself a pointer`)
  return r.message
}

function bigintOf(v: unknown, at: string): bigint {
  if (typeof v === 'bigint') return v
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return BigInt(v)
  throw new StrataInputError(`${at}: ${JSON.stringify(v)}, expected an integer`)
}

function fail(at: string, v: unknown, expected: string): never {
  let shown: string
  try {
    shown = JSON.stringify(v, replacer) ?? String(v)
  } catch {
    shown = String(v)
  }
  throw new StrataInputError(`${at}: ${shown.length > 120 ? shown.slice(0, 120) + '…' : shown}, expected ${expected}`)
}

function checkIdentity(m: Record<string, unknown>, at: string): void {
  if (m.kind !== 'APPEND' && m.kind !== 'COMPACT') fail(`${at}.kind`, m.kind, "'APPEND' or 'COMPACT'")
  if (typeof m.commitUser !== 'string' || m.commitUser.length === 0) fail(`${at}.commitUser`, m.commitUser, 'a non-empty string')
  if (typeof m.commitIdentifier !== 'bigint') fail(`${at}.commitIdentifier`, m.commitIdentifier, 'a bigint')
  if (!Number.isSafeInteger(m.builtAfterSnapshotId) || (m.builtAfterSnapshotId as number) < 0) fail(`${at}.builtAfterSnapshotId`, m.builtAfterSnapshotId, 'a non-negative integer')
  if (m.table !== undefined && typeof m.table !== 'string') fail(`${at}.table`, m.table, 'a string')
}

function checkEntry(e: unknown, at: string): void {
  const x = e as ManifestEntry
  if (x === null || typeof x !== 'object') fail(at, e, 'a manifest entry')
  if (!(x.partition instanceof Uint8Array)) fail(`${at}.partition`, x.partition, 'bytes')
  if (!Number.isInteger(x.bucket)) fail(`${at}.bucket`, x.bucket, 'an integer')
  if (!Number.isInteger(x.totalBuckets)) fail(`${at}.totalBuckets`, x.totalBuckets, 'an integer')
  const f = x.file
  if (f === null || typeof f !== 'object') fail(`${at}.file`, f, 'a data file meta')
  if (typeof f.fileName !== 'string' || f.fileName.length === 0) fail(`${at}.file.fileName`, f.fileName, 'a non-empty string')
  if (!Number.isInteger(f.level) || f.level < 0) fail(`${at}.file.level`, f.level, 'an integer >= 0')
  for (const k of ['fileSize', 'rowCount', 'minSequenceNumber', 'maxSequenceNumber', 'schemaId'] as const) {
    if (typeof f[k] !== 'bigint') fail(`${at}.file.${k}`, f[k], 'a bigint')
  }
  for (const k of ['minKey', 'maxKey'] as const) if (!(f[k] instanceof Uint8Array)) fail(`${at}.file.${k}`, f[k], 'bytes')
}

function checkManifestMeta(m: unknown, at: string): void {
  const x = m as ManifestFileMeta
  if (x === null || typeof x !== 'object') fail(at, m, 'a manifest list record')
  if (typeof x.fileName !== 'string' || !/^manifest-(?!list-)[^/]+$/.test(x.fileName)) fail(`${at}.fileName`, x.fileName, "a manifest's name ('manifest-…')")
  for (const k of ['fileSize', 'numAddedFiles', 'numDeletedFiles', 'schemaId'] as const) if (typeof x[k] !== 'bigint') fail(`${at}.${k}`, x[k], 'a bigint')
  if (x.numDeletedFiles !== 0n) fail(`${at}.numDeletedFiles`, x.numDeletedFiles, '0 (a manifest written ahead adds files only)')
  const s = x.partitionStats
  if (s === null || typeof s !== 'object' || !(s.minValues instanceof Uint8Array) || !(s.maxValues instanceof Uint8Array)) fail(`${at}.partitionStats`, s, 'partition statistics')
  if (s.nullCounts !== null && (!Array.isArray(s.nullCounts) || s.nullCounts.some((n) => n !== null && typeof n !== 'bigint'))) fail(`${at}.partitionStats.nullCounts`, s.nullCounts, 'null or an array of bigints and nulls')
  for (const k of ['minBucket', 'maxBucket', 'minLevel', 'maxLevel'] as const) if (x[k] !== null && !Number.isInteger(x[k])) fail(`${at}.${k}`, x[k], 'an integer or null')
}

/** An APPEND's manifests written ahead: list records of ADD-only manifests and their row counts. */
function checkWrittenAhead(msg: CommitMessage, at: string): void {
  const w = msg.writtenAhead!
  if (w === null || typeof w !== 'object') fail(at, w, 'manifests written ahead')
  if (msg.kind !== 'APPEND') fail(at, 'present', 'none on a COMPACT (only a writer writes manifests ahead)')
  for (const k of ['manifests', 'changelogManifests'] as const) {
    if (!Array.isArray(w[k])) fail(`${at}.${k}`, w[k], 'an array')
    w[k].forEach((m, i) => checkManifestMeta(m, `${at}.${k}[${i}]`))
  }
  for (const k of ['rowCount', 'changelogRowCount'] as const) if (!Number.isSafeInteger(w[k]) || w[k] < 0) fail(`${at}.${k}`, w[k], 'a non-negative integer')
}

function checkIndexEntry(e: unknown, at: string): void {
  const x = e as IndexManifestEntry
  if (x === null || typeof x !== 'object') fail(at, e, 'an index manifest entry')
  if (!(x.partition instanceof Uint8Array)) fail(`${at}.partition`, x.partition, 'bytes')
  if (!Number.isInteger(x.bucket)) fail(`${at}.bucket`, x.bucket, 'an integer')
  if (typeof x.fileName !== 'string' || x.fileName.length === 0) fail(`${at}.fileName`, x.fileName, 'a non-empty string')
  if (typeof x.indexType !== 'string') fail(`${at}.indexType`, x.indexType, 'a string')
}

/** Checks a decoded (or about-to-be-sent) message's shape; the error names the field. */
export function validateCommitMessage(v: unknown, at = 'commit message'): asserts v is CommitMessage {
  if (v === null || typeof v !== 'object' || Array.isArray(v)) fail(at, v, 'an object')
  const m = v as Record<string, unknown>
  checkIdentity(m, at)
  if (!Number.isSafeInteger(m.schemaId) || (m.schemaId as number) < 0) fail(`${at}.schemaId`, m.schemaId, 'a non-negative integer')
  for (const k of ['adds', 'deletes', 'indexReplacements', 'requireLive', 'expectIndex'] as const) {
    if (!Array.isArray(m[k])) fail(`${at}.${k}`, m[k], 'an array')
  }
  const msg = m as unknown as CommitMessage
  msg.adds.forEach((e, i) => checkEntry(e, `${at}.adds[${i}]`))
  msg.deletes.forEach((e, i) => checkEntry(e, `${at}.deletes[${i}]`))
  if (msg.changelog !== undefined) {
    if (!Array.isArray(msg.changelog)) fail(`${at}.changelog`, msg.changelog, 'an array')
    msg.changelog.forEach((e, i) => checkEntry(e, `${at}.changelog[${i}]`))
  }
  if (msg.writtenAhead !== undefined) checkWrittenAhead(msg, `${at}.writtenAhead`)
  msg.indexReplacements.forEach((r, i) => {
    const p = `${at}.indexReplacements[${i}]`
    if (r === null || typeof r !== 'object') fail(p, r, 'an index replacement')
    if (!(r.partition instanceof Uint8Array)) fail(`${p}.partition`, r.partition, 'bytes')
    if (!Number.isInteger(r.bucket)) fail(`${p}.bucket`, r.bucket, 'an integer')
    if (typeof r.indexType !== 'string') fail(`${p}.indexType`, r.indexType, 'a string')
    if (!Array.isArray(r.entries)) fail(`${p}.entries`, r.entries, 'an array')
    r.entries.forEach((e, j) => checkIndexEntry(e, `${p}.entries[${j}]`))
  })
  msg.requireLive.forEach((n, i) => {
    if (typeof n !== 'string') fail(`${at}.requireLive[${i}]`, n, 'a file name')
  })
  if (msg.supersedes !== undefined) {
    if (!Array.isArray(msg.supersedes)) fail(`${at}.supersedes`, msg.supersedes, 'an array of commit identities')
    msg.supersedes.forEach((k, i) => {
      if (typeof k !== 'string' || !/^APPEND\|\d+\|/.test(k)) fail(`${at}.supersedes[${i}]`, k, "an APPEND commit identity ('APPEND|<identifier>|<user>')")
    })
    if (msg.kind !== 'APPEND' && msg.supersedes.length) fail(`${at}.supersedes`, msg.supersedes, 'none on a COMPACT (only a writer carries records again)')
  }
  msg.expectIndex.forEach((x, i) => {
    const p = `${at}.expectIndex[${i}]`
    if (x === null || typeof x !== 'object') fail(p, x, 'an expected index')
    if (!(x.partition instanceof Uint8Array)) fail(`${p}.partition`, x.partition, 'bytes')
    if (!Number.isInteger(x.bucket)) fail(`${p}.bucket`, x.bucket, 'an integer')
    if (typeof x.indexType !== 'string') fail(`${p}.indexType`, x.indexType, 'a string')
    if (!Array.isArray(x.fileNames) || x.fileNames.some((n) => typeof n !== 'string')) fail(`${p}.fileNames`, x.fileNames, 'an array of file names')
  })
  if (msg.expectPartitionIndex !== undefined) {
    if (!Array.isArray(msg.expectPartitionIndex)) fail(`${at}.expectPartitionIndex`, msg.expectPartitionIndex, 'an array')
    msg.expectPartitionIndex.forEach((x, i) => {
      const p = `${at}.expectPartitionIndex[${i}]`
      if (x === null || typeof x !== 'object') fail(p, x, 'an expected partition index')
      if (!(x.partition instanceof Uint8Array)) fail(`${p}.partition`, x.partition, 'bytes')
      if (typeof x.indexType !== 'string') fail(`${p}.indexType`, x.indexType, 'a string')
      if (!Array.isArray(x.files) || x.files.some((f) => f === null || typeof f !== 'object' || !Number.isInteger(f.bucket) || typeof f.fileName !== 'string')) fail(`${p}.files`, x.files, 'an array of {bucket, fileName}')
    })
  }
  // an APPEND adds files; in dynamic bucket mode it also replaces the HASH files of the
  // buckets it gave new keys, against the partition index it read
  const hashOnly = msg.indexReplacements.every((r) => r.indexType === HASH_INDEX) && (msg.indexReplacements.length === 0 || (msg.expectPartitionIndex?.length ?? 0) > 0)
  if (msg.kind === 'APPEND' && (msg.deletes.length || !hashOnly || msg.requireLive.length || msg.expectIndex.length)) {
    fail(`${at}.deletes`, `${msg.deletes.length} deletes, ${msg.indexReplacements.length} index replacements`, 'an APPEND to add files only, and HASH index files with the partition index it assigned against (deletes and other index changes are COMPACT)')
  }
  if (msg.kind === 'COMPACT' && msg.expectPartitionIndex?.length) fail(`${at}.expectPartitionIndex`, msg.expectPartitionIndex, 'none on a COMPACT (only a writer assigns keys to buckets)')
}

/**
 * A commit request as a message. `builtAfterSnapshotId` is the request's base: the message
 * cannot have landed at or before it. The request's closures (partition stats, test hooks)
 * stay behind; the folding committer computes its own stats.
 */
export function commitMessageOf(req: CommitRequest, tableName?: string): CommitMessage {
  if (req.kind !== 'APPEND' && req.kind !== 'COMPACT') throw new StrataInputError(`commit request kind: ${JSON.stringify(req.kind)}, expected 'APPEND' or 'COMPACT' (the batching committer folds no other kind)`)
  const m: CommitMessage = {
    ...(tableName !== undefined ? { table: tableName } : {}),
    kind: req.kind,
    commitUser: req.commitUser,
    commitIdentifier: req.commitIdentifier,
    builtAfterSnapshotId: Math.max(0, req.baseSnapshotId),
    schemaId: req.schemaId,
    adds: req.adds,
    deletes: req.deletes,
    indexReplacements: req.indexReplacements ?? [],
    ...(req.changelog?.length ? { changelog: req.changelog } : {}),
    ...(req.writtenAhead ? { writtenAhead: req.writtenAhead } : {}),
    requireLive: req.requireLive ?? [],
    expectIndex: req.expectIndex ?? [],
    ...(req.expectPartitionIndex?.length ? { expectPartitionIndex: req.expectPartitionIndex } : {}),
    ...(req.supersedes?.length ? { supersedes: req.supersedes } : {}),
  }
  validateCommitMessage(m)
  return m
}
