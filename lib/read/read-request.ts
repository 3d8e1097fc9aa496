// A reader request, validated: from a JSON body or a direct invocation (typed values), or
// from a Function URL's query parameters (strings). Which fields each op takes, and what
// each must hold; the reader function answers a StrataInputError here 400.

import { checkTagName } from '../handle/tags.ts'
import { StrataInputError } from '../errors.ts'
import { INCREMENTAL_MODES, type IncrementalMode } from './incremental.ts'
import type { KeyFilter } from './table-read.ts'

export type ReadOp = 'scan' | 'lookup' | 'status' | 'changes' | 'stream'

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
  /** stream: a streaming start (stream-pages.ts), as `strata read --scan-mode` */
  scanMode?: string
  scanSnapshotId?: number
  scanTimestampMillis?: number
}

const OPS: ReadOp[] = ['scan', 'lookup', 'status', 'changes', 'stream']
const FIELDS_OF: Record<ReadOp, string[]> = {
  scan: ['table', 'op', 'snapshotId', 'tag', 'columns', 'filter', 'limit', 'cursor'],
  changes: ['table', 'op', 'fromSnapshot', 'toSnapshot', 'mode', 'columns', 'filter', 'limit', 'cursor'],
  lookup: ['table', 'op', 'snapshotId', 'tag', 'columns', 'key'],
  status: ['table', 'op'],
  stream: ['table', 'op', 'scanMode', 'scanSnapshotId', 'scanTimestampMillis', 'mode', 'columns', 'filter', 'limit', 'cursor'],
}
const ALL_FIELDS = [...new Set(Object.values(FIELDS_OF).flat())]

/** A value as messages quote it: its JSON, cut at 60 characters. */
export function describeValue(v: unknown): string {
  const s = JSON.stringify(v)
  return s === undefined ? String(v) : s.length > 60 ? `${s.slice(0, 57)}...` : s
}

/** A JSON object from text, or a StrataInputError naming `field`. */
export function parseJsonObject(text: string, field: string): Record<string, unknown> {
  if (text.trim() === '') throw new StrataInputError(`${field}: empty; expected a JSON object`)
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (e) {
    throw new StrataInputError(`${field}: not valid JSON (${(e as Error).message})`)
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new StrataInputError(`${field}: expected a JSON object, got ${Array.isArray(v) ? 'an array' : JSON.stringify(v)}`)
  }
  return v as Record<string, unknown>
}

function integerField(name: string, v: unknown, min: number, max: number, fromQuery: boolean): number {
  const n = fromQuery && typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new StrataInputError(`${name}: expected an integer in ${min}..${max}, got ${describeValue(v)}`)
  }
  return n
}

function objectField(name: string, v: unknown, fromQuery: boolean): KeyFilter {
  if (fromQuery && typeof v === 'string') return parseJsonObject(v, name)
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new StrataInputError(`${name}: expected a JSON object of column → value, got ${describeValue(v)}`)
  return v as KeyFilter
}

/**
 * Validates a request: from a JSON body or direct invocation (typed values), or from query
 * parameters (strings: `columns=a,b`, `filter`/`key` as JSON text). Unknown fields and
 * fields the op does not use are errors, not silently ignored.
 */
export function parseReaderRequest(fields: Record<string, unknown>, { fromQuery, maxRows }: { fromQuery: boolean; maxRows: number }): ReaderRequest {
  for (const f of Object.keys(fields)) {
    if (!ALL_FIELDS.includes(f)) throw new StrataInputError(`${f}: unknown request field (expected: ${ALL_FIELDS.join(', ')})`)
  }
  const { table, op } = fields
  if (table === undefined || table === '') throw new StrataInputError('table: missing; expected the name of a configured table')
  if (typeof table !== 'string') throw new StrataInputError(`table: expected a string, got ${describeValue(table)}`)
  if (op === undefined) throw new StrataInputError(`op: missing; expected one of ${OPS.join(', ')}`)
  if (!OPS.includes(op as ReadOp)) throw new StrataInputError(`op: expected one of ${OPS.join(', ')}, got ${describeValue(op)}`)
  const req: ReaderRequest = { table, op: op as ReadOp }
  for (const f of Object.keys(fields)) {
    if (fields[f] !== undefined && !FIELDS_OF[req.op].includes(f)) throw new StrataInputError(`${f}: not used by op '${req.op}' (it takes ${FIELDS_OF[req.op].join(', ')})`)
  }
  if (fields.snapshotId !== undefined) req.snapshotId = integerField('snapshotId', fields.snapshotId, 1, Number.MAX_SAFE_INTEGER, fromQuery)
  if (fields.fromSnapshot !== undefined) req.fromSnapshot = integerField('fromSnapshot', fields.fromSnapshot, 0, Number.MAX_SAFE_INTEGER, fromQuery)
  if (fields.toSnapshot !== undefined) req.toSnapshot = integerField('toSnapshot', fields.toSnapshot, 1, Number.MAX_SAFE_INTEGER, fromQuery)
  if (fields.scanMode !== undefined) {
    if (typeof fields.scanMode !== 'string' || fields.scanMode === '') throw new StrataInputError(`scanMode: expected a scan mode's name, got ${describeValue(fields.scanMode)}`)
    req.scanMode = fields.scanMode
  }
  if (fields.scanSnapshotId !== undefined) req.scanSnapshotId = integerField('scanSnapshotId', fields.scanSnapshotId, 1, Number.MAX_SAFE_INTEGER, fromQuery)
  if (fields.scanTimestampMillis !== undefined) req.scanTimestampMillis = integerField('scanTimestampMillis', fields.scanTimestampMillis, 0, Number.MAX_SAFE_INTEGER, fromQuery)
  if (fields.mode !== undefined) {
    if (typeof fields.mode !== 'string' || !(INCREMENTAL_MODES as readonly string[]).includes(fields.mode)) throw new StrataInputError(`mode: expected one of ${INCREMENTAL_MODES.join(', ')}, got ${describeValue(fields.mode)}`)
    req.mode = fields.mode as IncrementalMode
  }
  if (req.op === 'changes' && req.fromSnapshot === undefined && fields.cursor === undefined) throw new StrataInputError('fromSnapshot: missing; op changes reads the snapshots (fromSnapshot, toSnapshot], e.g. the fromSnapshot of a commit-feed event')
  if (fields.tag !== undefined) {
    if (typeof fields.tag !== 'string') throw new StrataInputError(`tag: expected a tag name, got ${describeValue(fields.tag)}`)
    if (req.snapshotId !== undefined) throw new StrataInputError(`tag: ${describeValue(fields.tag)} and snapshotId ${req.snapshotId}: expected one of them (a tag names its snapshot)`)
    req.tag = checkTagName(fields.tag, 'tag')
  }
  if (fields.limit !== undefined) req.limit = integerField('limit', fields.limit, 1, maxRows, fromQuery)
  if (fields.columns !== undefined) {
    const c = fromQuery && typeof fields.columns === 'string' ? fields.columns.split(',').map((s) => s.trim()) : fields.columns
    if (!Array.isArray(c) || c.length === 0 || c.some((x) => typeof x !== 'string' || x === '')) {
      throw new StrataInputError(`columns: expected a non-empty list of column names${fromQuery ? ' (columns=a,b)' : ''}, got ${describeValue(fields.columns)}`)
    }
    req.columns = c as string[]
  }
  if (fields.filter !== undefined) req.filter = objectField('filter', fields.filter, fromQuery)
  if (fields.key !== undefined) req.key = objectField('key', fields.key, fromQuery)
  if (req.op === 'lookup' && req.key === undefined) throw new StrataInputError('key: missing; op lookup needs the whole primary key, e.g. {"id": 7}')
  if (fields.cursor !== undefined) {
    if (typeof fields.cursor !== 'string' || fields.cursor === '') throw new StrataInputError(`cursor: expected the nextCursor string of an earlier page, got ${describeValue(fields.cursor)}`)
    req.cursor = fields.cursor
  }
  return req
}
