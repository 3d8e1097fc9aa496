// The reader's page cursors: opaque base64url JSON that says where the next page starts,
// and binds it to the table and filter that planned the read. A scan's cursor pins its
// snapshot (or tag); a `changes` read's cursor pins its range and mode. Decoding checks
// every field, so a cursor this reader did not issue is refused as bad input.

import { createHash } from 'node:crypto'
import { StrataInputError } from '../errors.ts'
import type { KeyFilter } from './table-read.ts'

/**
 * Where the next page of a scan starts: the pinned snapshot, a split index and how many
 * result rows of that split earlier pages returned. The position is stable because a
 * snapshot is immutable: planning the same snapshot with the same filter yields the same
 * splits in the same order (the manifests fold in their list order, table-read.ts planScan),
 * and reading a split yields its rows in the same order (merge by key and sequence, or in DV
 * mode the same files in manifest order with the same deletion vectors). `query` binds the
 * cursor to the table and filter that produced that plan.
 */
export interface ScanCursor {
  v: 1
  table: string
  snapshotId: number
  /** the tag the first page read (its snapshotId is the tag's snapshot) */
  tag?: string
  split: number
  offset: number
  query: string
}

/** Where the next page of a `changes` read starts: the resolved range and mode, a split and the rows of it already returned. */
export interface ChangesCursor {
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

/** A short digest of the table name and the filter (its fields in name order). */
export function queryFingerprint(table: string, filter: KeyFilter | undefined): string {
  const canonical = JSON.stringify([table, Object.entries(filter ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))])
  return createHash('sha256').update(canonical).digest('base64url').slice(0, 16)
}

export function encodeScanCursor(c: Omit<ScanCursor, 'v'>): string {
  return Buffer.from(JSON.stringify({ v: 1, ...c })).toString('base64url')
}

export function encodeChangesCursor(c: ChangesCursor): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url')
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

export function decodeScanCursor(text: string): ScanCursor {
  const c = cursorFields<ScanCursor>(text)
  if (!c || c.v !== 1 || typeof c.table !== 'string' || typeof c.query !== 'string' || !nat(c.snapshotId) || !nat(c.split) || !nat(c.offset) || (c.tag !== undefined && typeof c.tag !== 'string')) {
    throw new StrataInputError('cursor: not a cursor this reader issued; pass the nextCursor of the previous page unchanged')
  }
  return c as ScanCursor
}

export function decodeChangesCursor(text: string): ChangesCursor {
  const c = cursorFields<ChangesCursor>(text)
  if (!c || c.v !== 1 || c.op !== 'changes' || typeof c.table !== 'string' || typeof c.query !== 'string' || !nat(c.from) || !nat(c.to) || !nat(c.split) || !nat(c.offset) || (c.mode !== 'delta' && c.mode !== 'changelog')) {
    throw new StrataInputError('cursor: not a cursor of op changes this reader issued; pass the nextCursor of the previous page unchanged')
  }
  return c as ChangesCursor
}

/** A cursor of another table or filter than the request's is refused. */
export function checkCursorQuery(c: { table: string; query: string }, table: string, query: string): void {
  if (c.table !== table || c.query !== query) throw new StrataInputError('cursor: was issued for another table or filter; pass the same table and filter as on the first page')
}
