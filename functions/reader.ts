// Reader function: scans, key lookups and table status over a Lambda Function URL
// (AWS_IAM auth, payload format 2.0: GET with query parameters or POST with a JSON body,
// base64 or not), or invoked directly with the request object as the event (the library
// and CLI path). Either way the answer is `{statusCode, headers, body}`, the body JSON text
// built here so BIGINT and DECIMAL values print digit for digit.
//
// Results are capped at `limit` rows (default and maximum STRATA_MAX_RESULT_ROWS) and every
// response fits Lambda's 6 MB (shared/response-size.ts): a page ends before the row that
// would take it over, and a row too large to go out alone is answered 422, naming its key
// and size, with a cursor that skips it. Pages continue with an opaque cursor that pins the
// snapshot, so every page reads one snapshot however many commits land in between.
// `tag` reads the snapshot a tag pins (lib/handle/tags.ts), as `strata read --tag` does; its
// cursor pins the tag and the snapshot. Op `changes` reads what the snapshots (fromSnapshot,
// toSnapshot] changed, each row with its `_kind` (lib/read/incremental.ts), as `strata read
// --from-snapshot` does; its cursor pins the range and the mode. Consumer progress is not
// recorded here: the reader only reads (its role has no write access to the table).

import { createHash } from 'node:crypto'
import middy from '@middy/core'
import { MetricUnit } from '@aws-lambda-powertools/metrics'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Context } from 'aws-lambda'
import { tableStatus } from '../lib/cli/status.ts'
import { valueComparator } from '../lib/format/compare.ts'
import { valueColumnsForMerge } from '../lib/merge/merge-function.ts'
import { type KeyFilter, type ReadStats, FileOpener, lookup, newReadStats, planScan, readSplitRecords } from '../lib/read/table-read.ts'
import { rowToJsonLine, valueFromJson } from '../lib/table/json-values.ts'
import { INCREMENTAL_MODES, type IncrementalMode, changeColumns, planIncremental, readPlanSplits } from '../lib/read/incremental.ts'
import type { Table } from '../lib/handle/table.ts'
import { checkTagName, getTag, requireTag } from '../lib/handle/tags.ts'
import { ROW_KIND_SHORT, type Row, StrataInputError, isRetract } from '../lib/types.ts'
import { ConfigError } from './shared/config.ts'
import { HttpError, type HttpResponse, errorResponse, isFunctionUrlEvent, jsonResponse, parseJsonObject, requestOf } from './shared/http.ts'
import { MAX_RESPONSE_BYTES, ResponseTooLargeError, bytesInBody, responseBytes } from './shared/response-size.ts'
import { logger, newMetrics, resolveTable, runtimeConfig } from './shared/runtime.ts'

const metrics = newMetrics('reader')

const INSTEAD = 'request fewer columns (columns), or read it with the library or the CLI (strata read, strata lookup), which have no response limit'

export type ReadOp = 'scan' | 'lookup' | 'status' | 'changes'

export interface ReaderRequest {
  table: string
  op: ReadOp
  snapshotId?: number
  /** read the snapshot this tag pins; not with snapshotId */
  tag?: string
  columns?: string[]
  /** scan: equality on partition and primary-key fields */
  filter?: KeyFilter
  /** lookup: the whole primary key */
  key?: KeyFilter
  limit?: number
  cursor?: string
  /** changes: the range (fromSnapshot, toSnapshot] and the mode, as `strata read --from-snapshot` */
  fromSnapshot?: number
  toSnapshot?: number
  mode?: IncrementalMode
}

const OPS: ReadOp[] = ['scan', 'lookup', 'status', 'changes']
const FIELDS_OF: Record<ReadOp, string[]> = {
  scan: ['table', 'op', 'snapshotId', 'tag', 'columns', 'filter', 'limit', 'cursor'],
  changes: ['table', 'op', 'fromSnapshot', 'toSnapshot', 'mode', 'columns', 'filter', 'limit', 'cursor'],
  lookup: ['table', 'op', 'snapshotId', 'tag', 'columns', 'key'],
  status: ['table', 'op'],
}
const ALL_FIELDS = [...new Set(Object.values(FIELDS_OF).flat())]

function describe(v: unknown): string {
  const s = JSON.stringify(v)
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s
}

function integerField(name: string, v: unknown, min: number, max: number, fromQuery: boolean): number {
  const n = fromQuery && typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new StrataInputError(`${name}: expected an integer in ${min}..${max}, got ${describe(v)}`)
  }
  return n
}

function objectField(name: string, v: unknown, fromQuery: boolean): KeyFilter {
  if (fromQuery && typeof v === 'string') return parseJsonObject(v, name)
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new StrataInputError(`${name}: expected a JSON object of column → value, got ${describe(v)}`)
  return v as KeyFilter
}

/**
 * Validates a request: from a JSON body or direct invocation (typed values), or from query
 * parameters (strings: `columns=a,b`, `filter`/`key` as JSON text). Unknown fields and
 * fields the op does not use are errors, not silently ignored.
 */
export function parseReaderRequest(fields: Record<string, unknown>, { fromQuery = false, maxRows = runtimeConfig().maxResultRows } = {}): ReaderRequest {
  for (const f of Object.keys(fields)) {
    if (!ALL_FIELDS.includes(f)) throw new StrataInputError(`${f}: unknown request field (expected: ${ALL_FIELDS.join(', ')})`)
  }
  const { table, op } = fields
  if (table === undefined || table === '') throw new StrataInputError('table: missing; expected the name of a configured table')
  if (typeof table !== 'string') throw new StrataInputError(`table: expected a string, got ${describe(table)}`)
  if (op === undefined) throw new StrataInputError(`op: missing; expected one of ${OPS.join(', ')}`)
  if (!OPS.includes(op as ReadOp)) throw new StrataInputError(`op: expected one of ${OPS.join(', ')}, got ${describe(op)}`)
  const req: ReaderRequest = { table, op: op as ReadOp }
  for (const f of Object.keys(fields)) {
    if (fields[f] !== undefined && !FIELDS_OF[req.op].includes(f)) throw new StrataInputError(`${f}: not used by op '${req.op}' (it takes ${FIELDS_OF[req.op].join(', ')})`)
  }
  if (fields.snapshotId !== undefined) req.snapshotId = integerField('snapshotId', fields.snapshotId, 1, Number.MAX_SAFE_INTEGER, fromQuery)
  if (fields.fromSnapshot !== undefined) req.fromSnapshot = integerField('fromSnapshot', fields.fromSnapshot, 0, Number.MAX_SAFE_INTEGER, fromQuery)
  if (fields.toSnapshot !== undefined) req.toSnapshot = integerField('toSnapshot', fields.toSnapshot, 1, Number.MAX_SAFE_INTEGER, fromQuery)
  if (fields.mode !== undefined) {
    if (typeof fields.mode !== 'string' || !(INCREMENTAL_MODES as readonly string[]).includes(fields.mode)) throw new StrataInputError(`mode: expected one of ${INCREMENTAL_MODES.join(', ')}, got ${describe(fields.mode)}`)
    req.mode = fields.mode as IncrementalMode
  }
  if (req.op === 'changes' && req.fromSnapshot === undefined && fields.cursor === undefined) throw new StrataInputError('fromSnapshot: missing; op changes reads the snapshots (fromSnapshot, toSnapshot], e.g. the fromSnapshot of a commit-feed event')
  if (fields.tag !== undefined) {
    if (typeof fields.tag !== 'string') throw new StrataInputError(`tag: expected a tag name, got ${describe(fields.tag)}`)
    if (req.snapshotId !== undefined) throw new StrataInputError(`tag: ${describe(fields.tag)} and snapshotId ${req.snapshotId}: expected one of them (a tag names its snapshot)`)
    req.tag = checkTagName(fields.tag, 'tag')
  }
  if (fields.limit !== undefined) req.limit = integerField('limit', fields.limit, 1, maxRows, fromQuery)
  if (fields.columns !== undefined) {
    const c = fromQuery && typeof fields.columns === 'string' ? fields.columns.split(',').map((s) => s.trim()) : fields.columns
    if (!Array.isArray(c) || c.length === 0 || c.some((x) => typeof x !== 'string' || x === '')) {
      throw new StrataInputError(`columns: expected a non-empty list of column names${fromQuery ? ' (columns=a,b)' : ''}, got ${describe(fields.columns)}`)
    }
    req.columns = c as string[]
  }
  if (fields.filter !== undefined) req.filter = objectField('filter', fields.filter, fromQuery)
  if (fields.key !== undefined) req.key = objectField('key', fields.key, fromQuery)
  if (req.op === 'lookup' && req.key === undefined) throw new StrataInputError('key: missing; op lookup needs the whole primary key, e.g. {"id": 7}')
  if (fields.cursor !== undefined) {
    if (typeof fields.cursor !== 'string' || fields.cursor === '') throw new StrataInputError(`cursor: expected the nextCursor string of an earlier page, got ${describe(fields.cursor)}`)
    req.cursor = fields.cursor
  }
  return req
}

// --- cursor ---------------------------------------------------------------------------

/**
 * Where the next page starts: the pinned snapshot, a split index and how many result rows
 * of that split earlier pages returned. The position is stable because a snapshot is
 * immutable: planning the same snapshot with the same filter yields the same splits in the
 * same order (the manifests fold in their list order, lib/read/table-read.ts planScan), and
 * reading a split yields its rows in the same order (merge by key and sequence, or in DV
 * mode the same files in manifest order with the same deletion vectors). `query` binds the
 * cursor to the table and filter that produced that plan.
 */
interface Cursor {
  v: 1
  table: string
  snapshotId: number
  /** the tag the first page read (its snapshotId is the tag's snapshot) */
  tag?: string
  split: number
  offset: number
  query: string
}

function queryFingerprint(table: string, filter: KeyFilter | undefined): string {
  const canonical = JSON.stringify([table, Object.entries(filter ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))])
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 16)
}

export function encodeCursor(c: Omit<Cursor, 'v'>): string {
  return Buffer.from(JSON.stringify({ v: 1, ...c })).toString('base64url')
}

/** A cursor's fields as its text carries them, unchecked (null when the text is not base64url JSON). */
function cursorFields<T>(text: string): Partial<T> | null {
  try {
    return JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<T>
  } catch {
    return null
  }
}

const nat = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0

function decodeCursor(text: string): Cursor {
  const c = cursorFields<Cursor>(text)
  if (!c || c.v !== 1 || typeof c.table !== 'string' || typeof c.query !== 'string' || !nat(c.snapshotId) || !nat(c.split) || !nat(c.offset) || (c.tag !== undefined && typeof c.tag !== 'string')) {
    throw new StrataInputError('cursor: not a cursor this reader issued; pass the nextCursor of the previous page unchanged')
  }
  return c as Cursor
}

// --- reads ----------------------------------------------------------------------------

export interface ReadOutcome {
  /** JSON text of the 200 response */
  body: string
  snapshotId: number | null
  rows: number
  stats: ReadStats | null
}

/** The snapshot exists in the store now (a warm handle's cache may outlive an expiration). */
async function requireSnapshot(table: Table, id: number, field: 'snapshotId' | 'cursor'): Promise<void> {
  if (await table.snapshots.existing(id)) return
  const [earliest, latest] = [await table.snapshots.earliestId(), await table.snapshots.latestId()]
  const retained = latest === 0 ? 'none' : `${earliest}..${latest}`
  if (field === 'cursor') throw new HttpError(410, `cursor: snapshot ${id} of this scan has expired (retained snapshots: ${retained}); start the scan again without a cursor`)
  throw new StrataInputError(`snapshotId: no snapshot ${id} (retained snapshots: ${retained})`)
}

/**
 * A read whose snapshot was expired by maintenance while its files were being read fails
 * on a missing object; that is answered 410 (start again), not 500.
 */
async function whilePinned<T>(table: Table, id: number | undefined, field: 'snapshotId' | 'cursor', read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (err) {
    if (id === undefined || err instanceof StrataInputError || (await table.snapshots.existing(id).catch(() => true))) throw err
    throw new HttpError(410, `${field}: snapshot ${id} expired while it was being read; start the read again${field === 'cursor' ? ' without a cursor' : ''}`)
  }
}

/** The tag still pins snapshot `id` (it may have been deleted, or deleted and made again elsewhere). */
async function tagPins(table: Table, tag: string, id: number): Promise<boolean> {
  return (await getTag(table, tag))?.snapshot.id === id
}

/** As whilePinned, for a read of a tag: a tag deleted while it was read is answered 410. */
async function whileTagged<T>(table: Table, tag: string, id: number, field: 'tag' | 'cursor', read: () => Promise<T>): Promise<T> {
  try {
    return await read()
  } catch (err) {
    if (err instanceof StrataInputError || (await tagPins(table, tag, id).catch(() => true))) throw err
    throw new HttpError(410, `${field}: tag ${JSON.stringify(tag)} was deleted while it was being read; start the read again${field === 'cursor' ? ' without a cursor' : ''}`)
  }
}

/** The rows the filter keeps; planScan has already checked its fields and prunes partitions. */
function filterMatcher(table: Table, filter: KeyFilter | undefined): (row: Row) => boolean {
  const view = table.view
  const checks = Object.entries(filter ?? {}).map(([name, json]) => {
    const i = view.fieldIndex.get(name)!
    return { i, want: valueFromJson(view.fields[i], json, 'filter'), cmp: valueComparator(view.fields[i].type) }
  })
  return (row) => checks.every((c) => c.cmp(row[c.i], c.want) === 0)
}

/** Value columns the split reads: as lib/read/table-read.ts scan chooses them. */
function valueColumnsFor(table: Table, columns: number[], filter: KeyFilter | undefined): string[] {
  return valueColumnsForMerge(table.mergeConfig, [...columns.map((i) => table.view.fields[i].name), ...Object.keys(filter ?? {})])
}

/** The primary key of a scanned record as a JSON object, for messages: partition fields from the split, the rest from the key. */
function primaryKeyText(table: Table, partitionValues: Row, key: Row): string {
  const view = table.view
  const names = view.schema.primaryKeys
  const fields = names.map((n) => view.fields[view.fieldIndex.get(n)!])
  const values = fields.map((f) => {
    const p = view.partitionFields.indexOf(f)
    return p >= 0 ? partitionValues[p] : key[view.keyFields.indexOf(f)]
  })
  return rowToJsonLine(fields, fields.map((_, i) => i), values)
}

function rowTooLarge(what: string, bytes: number, maxResponseBytes: number, details: Record<string, unknown> = {}): ResponseTooLargeError {
  return new ResponseTooLargeError(
    `row too large: ${what} takes ${bytes} bytes in a response, over the reader's limit of ${maxResponseBytes} bytes (a Lambda response is at most 6 MB); ${INSTEAD}`,
    { rowBytes: bytes, maxResponseBytes, ...details },
  )
}

async function scanPage(table: Table, name: string, req: ReaderRequest, limit: number, maxResponseBytes: number): Promise<ReadOutcome> {
  const query = queryFingerprint(name, req.filter)
  let start = { split: 0, offset: 0 }
  let snapshotId = req.snapshotId
  let tag = req.tag
  if (req.cursor !== undefined) {
    const c = decodeCursor(req.cursor)
    if (c.table !== name || c.query !== query) throw new StrataInputError('cursor: was issued for another table or filter; pass the same table and filter as on the first page')
    if (snapshotId !== undefined && (snapshotId !== c.snapshotId || c.tag !== undefined)) {
      throw new StrataInputError(`snapshotId: ${snapshotId} differs from the cursor's snapshot ${c.snapshotId}; omit snapshotId when passing a cursor`)
    }
    if (tag !== undefined && tag !== c.tag) {
      throw new StrataInputError(`tag: ${JSON.stringify(tag)} differs from the cursor's ${c.tag === undefined ? 'snapshot' : `tag ${JSON.stringify(c.tag)}`}; omit tag when passing a cursor`)
    }
    if (c.tag !== undefined) {
      if (!(await tagPins(table, c.tag, c.snapshotId))) throw new HttpError(410, `cursor: tag ${JSON.stringify(c.tag)} of this scan was deleted; start the scan again without a cursor`)
      tag = c.tag
    } else {
      await requireSnapshot(table, c.snapshotId, 'cursor')
      snapshotId = c.snapshotId
    }
    start = c
  } else if (tag !== undefined) {
    await requireTag(table, tag, 'tag')
  } else if (snapshotId !== undefined) {
    await requireSnapshot(table, snapshotId, 'snapshotId')
  }
  const stats = newReadStats()
  const plan = await planScan(table, { snapshotId: tag === undefined ? snapshotId : undefined, tag, columns: req.columns, filter: req.filter })
  const matches = filterMatcher(table, req.filter)
  const valueColumns = valueColumnsFor(table, plan.columns, req.filter)
  const fields = table.view.fields
  const id = plan.snapshot?.id ?? null
  const bodyOf = (rows: string[], cursor: string) => `{"snapshotId":${id},"rows":[${rows.join(',')}],"nextCursor":${cursor}}`
  const cursorAt = (split: number, offset: number): Cursor => ({ v: 1, table: name, snapshotId: id ?? 0, ...(tag === undefined ? {} : { tag }), split, offset, query })
  // the response without rows, with the longest cursor this plan can issue
  const longestCursor = JSON.stringify(encodeCursor(cursorAt(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)))
  const budget = maxResponseBytes - responseBytes(jsonResponse(200, bodyOf([], longestCursor)))
  const rows: string[] = []
  let bytes = 0
  let next: Cursor | null = null
  let tooLarge: { key: string; bytes: number } | null = null
  // one opener over the page's splits: the next split's files open while this one is read
  const opener = new FileOpener(table, plan.splits.slice(start.split), plan.dvIndex, stats)
  const pinned = <T>(read: () => Promise<T>): Promise<T> =>
    tag !== undefined && id !== null
      ? whileTagged(table, tag, id, req.cursor !== undefined ? 'cursor' : 'tag', read)
      : whilePinned(table, plan.snapshot?.id, req.cursor !== undefined ? 'cursor' : 'snapshotId', read)
  await pinned(async () => {
    scan: for (let s = start.split; s < plan.splits.length; s++) {
      const skip = s === start.split ? start.offset : 0
      let seen = 0
      for await (const batch of readSplitRecords(table, plan.splits[s], valueColumns, plan.dvIndex, stats, opener)) {
        for (const kv of batch) {
          if (isRetract(kv.kind) || !matches(kv.value)) continue
          if (seen++ < skip) continue
          // the next row exists, so a cursor never leads to an empty page (nor skips to one)
          if (rows.length >= limit || tooLarge) {
            next = cursorAt(s, seen - 1)
            break scan
          }
          const line = rowToJsonLine(fields, plan.columns, kv.value)
          const size = bytesInBody(line) + 1
          if (bytes + size <= budget) {
            rows.push(line)
            bytes += size
          } else if (rows.length > 0) {
            next = cursorAt(s, seen - 1)
            break scan
          } else {
            // alone over the limit: look on for a row after it, for the cursor that skips it
            tooLarge = { key: primaryKeyText(table, plan.splits[s].partitionValues, kv.key), bytes: size - 1 }
          }
        }
      }
    }
  })
  if (tooLarge !== null) {
    const { key, bytes: rowBytes } = tooLarge as { key: string; bytes: number }
    throw rowTooLarge(`the row with primary key ${key}`, rowBytes, maxResponseBytes, { skipCursor: next === null ? null : encodeCursor(next) })
  }
  const cursor = next === null ? 'null' : JSON.stringify(encodeCursor(next))
  return { body: bodyOf(rows, cursor), snapshotId: id, rows: rows.length, stats }
}

/** Where the next page of a `changes` read starts: the resolved range and mode, a split and the rows of it already returned. */
interface ChangesCursor {
  v: 1
  op: 'changes'
  table: string
  from: number
  to: number
  mode: 'delta' | 'changelog'
  split: number
  offset: number
  query: string
}

function decodeChangesCursor(text: string): ChangesCursor {
  const c = cursorFields<ChangesCursor>(text)
  if (!c || c.v !== 1 || c.op !== 'changes' || typeof c.table !== 'string' || typeof c.query !== 'string' || !nat(c.from) || !nat(c.to) || !nat(c.split) || !nat(c.offset) || (c.mode !== 'delta' && c.mode !== 'changelog')) {
    throw new StrataInputError('cursor: not a cursor of op changes this reader issued; pass the nextCursor of the previous page unchanged')
  }
  return c as ChangesCursor
}

/**
 * A page of what the snapshots (fromSnapshot, toSnapshot] changed (lib/read/incremental.ts),
 * each row with its `_kind`. The first page resolves the range (toSnapshot defaults to the
 * latest) and the mode; its cursor pins them, so later pages read the same range. A range
 * whose snapshots expire between pages is answered 410.
 */
async function changesPage(table: Table, name: string, req: ReaderRequest, limit: number, maxResponseBytes: number): Promise<ReadOutcome> {
  const query = queryFingerprint(name, req.filter)
  let start = { split: 0, offset: 0 }
  let range = { fromSnapshot: req.fromSnapshot ?? 0, toSnapshot: req.toSnapshot, mode: req.mode as IncrementalMode | undefined }
  const names = { from: 'fromSnapshot', to: 'toSnapshot', mode: 'mode' }
  if (req.cursor !== undefined) {
    const c = decodeChangesCursor(req.cursor)
    if (c.table !== name || c.query !== query) throw new StrataInputError('cursor: was issued for another table or filter; pass the same table and filter as on the first page')
    for (const [field, v, pinned] of [['fromSnapshot', req.fromSnapshot, c.from], ['toSnapshot', req.toSnapshot, c.to]] as const) {
      if (v !== undefined && v !== pinned) throw new StrataInputError(`${field}: ${v} differs from the cursor's ${pinned}; omit it when passing a cursor`)
    }
    if (c.from < c.to && !(await table.snapshots.existing(c.from + 1))) {
      throw new HttpError(410, `cursor: snapshot ${c.from + 1} of this read has expired; start again from a retained snapshot (the consumer's progress, or a newer event's fromSnapshot)`)
    }
    range = { fromSnapshot: c.from, toSnapshot: c.to, mode: c.mode }
    start = c
  }
  const stats = newReadStats()
  const plan = await planIncremental(table, { ...range, columns: req.columns, filter: req.filter, names })
  const matches = filterMatcher(table, req.filter)
  const fields = table.view.fields
  const bodyOf = (rows: string[], cursor: string) => `{"fromSnapshot":${plan.from},"toSnapshot":${plan.to},"mode":"${plan.mode}","rows":[${rows.join(',')}],"nextCursor":${cursor}}`
  const cursorAt = (split: number, offset: number): ChangesCursor => ({ v: 1, op: 'changes', table: name, from: plan.from, to: plan.to, mode: plan.mode, split, offset, query })
  const encode = (c: ChangesCursor) => Buffer.from(JSON.stringify(c)).toString('base64url')
  const longestCursor = JSON.stringify(encode(cursorAt(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)))
  const budget = maxResponseBytes - responseBytes(jsonResponse(200, bodyOf([], longestCursor)))
  const rows: string[] = []
  let bytes = 0
  let next: ChangesCursor | null = null
  let tooLarge: { key: string; bytes: number } | null = null
  await whilePinned(table, plan.from < plan.to ? plan.from + 1 : undefined, req.cursor !== undefined ? 'cursor' : 'snapshotId', async () => {
    let split = -1
    let seen = 0
    for await (const { split: s, batch } of readPlanSplits(table, plan, changeColumns(table, plan, req.filter), start.split, stats)) {
      if (s !== split) {
        split = s
        seen = 0
      }
      const skip = s === start.split ? start.offset : 0
      for (const kv of batch) {
        if (!matches(kv.value)) continue
        if (seen++ < skip) continue
        if (rows.length >= limit || tooLarge) {
          next = cursorAt(s, seen - 1)
          return
        }
        const line = `{"_kind":"${ROW_KIND_SHORT[kv.kind]}",${rowToJsonLine(fields, plan.columns, kv.value).slice(1)}`
        const size = bytesInBody(line) + 1
        if (bytes + size <= budget) {
          rows.push(line)
          bytes += size
        } else if (rows.length > 0) {
          next = cursorAt(s, seen - 1)
          return
        } else {
          tooLarge = { key: primaryKeyText(table, plan.splits[s].partitionValues, kv.key), bytes: size - 1 }
        }
      }
    }
  })
  if (tooLarge !== null) {
    const { key, bytes: rowBytes } = tooLarge as { key: string; bytes: number }
    throw rowTooLarge(`the change of the row with primary key ${key}`, rowBytes, maxResponseBytes, { skipCursor: next === null ? null : encode(next) })
  }
  const cursor = next === null ? 'null' : JSON.stringify(encode(next))
  return { body: bodyOf(rows, cursor), snapshotId: plan.to, rows: rows.length, stats }
}

async function lookupRow(table: Table, req: ReaderRequest, maxResponseBytes: number): Promise<ReadOutcome> {
  const view = table.view
  const pk = view.schema.primaryKeys
  const key = req.key!
  for (const k of Object.keys(key)) {
    if (!pk.includes(k)) throw new StrataInputError(`key: '${k}' is not a primary key field (primary key: [${pk.join(', ')}])`)
  }
  for (const k of pk) {
    if (!(k in key)) throw new StrataInputError(`key: missing primary key field '${k}' (primary key: [${pk.join(', ')}])`)
    valueFromJson(view.fields[view.fieldIndex.get(k)!], key[k], 'key')
  }
  const names = req.columns ?? view.fields.map((f) => f.name)
  const fields = names.map((c) => {
    const i = view.fieldIndex.get(c)
    if (i === undefined) throw new StrataInputError(`columns: unknown column '${c}' (columns: ${view.fields.map((f) => f.name).join(', ')})`)
    return view.fields[i]
  })
  let snapshotId = req.snapshotId
  let row: Row | null
  if (req.tag !== undefined) {
    const tag = req.tag
    const id = (await requireTag(table, tag, 'tag')).snapshot.id
    snapshotId = id
    row = await whileTagged(table, tag, id, 'tag', () => lookup(table, key, { tag, columns: names }))
  } else {
    if (snapshotId !== undefined) await requireSnapshot(table, snapshotId, 'snapshotId')
    else snapshotId = (await table.snapshots.latestId()) || undefined
    const at = snapshotId
    row = at === undefined ? null : await whilePinned(table, at, 'snapshotId', () => lookup(table, key, { snapshotId: at, columns: names }))
  }
  const text = row === null ? 'null' : rowToJsonLine(fields, fields.map((_, i) => i), row)
  const body = `{"snapshotId":${snapshotId ?? null},"row":${text}}`
  const size = responseBytes(jsonResponse(200, body))
  if (size > maxResponseBytes) {
    const pkFields = pk.map((k) => view.fields[view.fieldIndex.get(k)!])
    const keyText = rowToJsonLine(pkFields, pkFields.map((_, i) => i), pkFields.map((f) => valueFromJson(f, key[f.name], 'key')))
    throw rowTooLarge(`the row with primary key ${keyText}`, bytesInBody(text), maxResponseBytes)
  }
  return { body, snapshotId: snapshotId ?? null, rows: row === null ? 0 : 1, stats: null }
}

async function statusOfTable(table: Table, maxResponseBytes: number): Promise<ReadOutcome> {
  const status = await tableStatus(table)
  const body = JSON.stringify(status)
  const size = responseBytes(jsonResponse(200, body))
  if (size > maxResponseBytes) {
    throw new ResponseTooLargeError(
      `status too large: the table's status (${status.buckets.length} buckets) takes ${size} bytes, over the reader's limit of ${maxResponseBytes} bytes (a Lambda response is at most 6 MB); run 'strata status' against the table, or watch the maintenance function's metrics`,
      { statusBytes: size, maxResponseBytes },
    )
  }
  return { body, snapshotId: status.snapshot?.id ?? null, rows: 0, stats: null }
}

export interface ReadOptions {
  /** bytes of the serialized response (the payload Lambda counts) at most; default MAX_RESPONSE_BYTES */
  maxResponseBytes?: number
}

/** Runs a validated request against its table. Throws StrataInputError (400) or HttpError. */
export async function executeRead(req: ReaderRequest, opts: ReadOptions = {}): Promise<ReadOutcome> {
  const resolved = await resolveTable(req.table)
  if (!resolved) throw new HttpError(404, `table: unknown table '${req.table}' (configured: ${[...runtimeConfig().tables.keys()].join(', ')})`)
  const { table } = resolved
  const maxResponseBytes = opts.maxResponseBytes ?? MAX_RESPONSE_BYTES
  if (req.op === 'status') return statusOfTable(table, maxResponseBytes)
  if (req.op === 'lookup') return lookupRow(table, req, maxResponseBytes)
  if (req.op === 'changes') return changesPage(table, req.table, req, req.limit ?? runtimeConfig().maxResultRows, maxResponseBytes)
  return scanPage(table, req.table, req, req.limit ?? runtimeConfig().maxResultRows, maxResponseBytes)
}

/** A direct invocation's event: the request object, or its JSON text. */
function directRequest(event: unknown): Record<string, unknown> {
  if (typeof event === 'string') return parseJsonObject(event, 'event')
  if (typeof event !== 'object' || event === null || Array.isArray(event)) throw new StrataInputError(`event: expected a Function URL event or a request object {"table", "op", ...}, got ${describe(event)}`)
  return event as Record<string, unknown>
}

function statusOf(err: unknown): number {
  if (err instanceof HttpError) return err.statusCode
  if (err instanceof StrataInputError && !(err instanceof ConfigError)) return 400
  return 500
}

export async function readerHandler(event: unknown, context?: Context): Promise<HttpResponse> {
  const started = Date.now()
  let req: ReaderRequest | null = null
  try {
    if (isFunctionUrlEvent(event)) {
      const http = requestOf(event)
      req = parseReaderRequest(http.fields, { fromQuery: http.method === 'GET' })
    } else {
      req = parseReaderRequest(directRequest(event))
    }
    const out = await executeRead(req, {})
    const latency = Date.now() - started
    const filesOpened = out.stats ? out.stats.filesOpened.reduce((a, b) => a + b, 0) : 0
    metrics.addDimension('table', req.table)
    metrics.addMetric('ReadLatency', MetricUnit.Milliseconds, latency)
    metrics.addMetric('RowsReturned', MetricUnit.Count, out.rows)
    if (out.stats) metrics.addMetric('FilesOpened', MetricUnit.Count, filesOpened)
    logger.info('read', { table: req.table, op: req.op, snapshot: out.snapshotId, rows: out.rows, filesOpened, latencyMs: latency, requestId: context?.awsRequestId })
    return jsonResponse(200, out.body)
  } catch (err) {
    const status = statusOf(err)
    metrics.addMetric('ReadLatency', MetricUnit.Milliseconds, Date.now() - started)
    // the reason names a field and may quote a value from the request, so it is not logged
    if (status < 500) {
      logger.info('read refused', { status, table: req?.table, op: req?.op, field: (err as Error).message.split(':')[0], requestId: context?.awsRequestId })
      return err instanceof ResponseTooLargeError ? err.response() : errorResponse(status, (err as Error).message)
    }
    logger.error('read failed', { table: req?.table, op: req?.op, error: err as Error, requestId: context?.awsRequestId })
    return errorResponse(500, `internal error; the function's logs have the details${context?.awsRequestId ? ` (request id ${context.awsRequestId})` : ''}`)
  }
}

export const handler = middy(readerHandler).use(logMetrics(metrics))
