// A page of a scan, as the reader function answers it: at most `limits.rows` rows of the
// latest snapshot (or a given one, or a tag's) within the response's byte budget, and a
// cursor (cursor.ts) that pins the snapshot, so every page reads one snapshot however many
// commits land in between.

import type { Table } from '../handle/table.ts'
import { requireTag } from '../handle/tags.ts'
import { rowToJsonLine } from '../table/json-values.ts'
import { StrataInputError } from '../errors.ts'
import { isRetract } from '../types.ts'
import { type ScanCursor, checkCursorQuery, decodeScanCursor, encodeScanCursor, queryFingerprint } from './cursor.ts'
import { PageBuilder, type PageLimits, type ReadOutcome, filterMatcher, primaryKeyText, rowBudget, valueColumnsFor } from './page-rows.ts'
import { ReadGoneError, requireSnapshot, tagPins, whilePinned, whileTagged } from './read-pins.ts'
import { type KeyFilter, FileOpener, newReadStats, planScan, readSplitRecords } from './table-read.ts'

export interface ScanPageRequest {
  /** the table's configured name, which cursors are bound to */
  table: string
  snapshotId?: number
  tag?: string
  columns?: string[]
  filter?: KeyFilter
  cursor?: string
}

/** Where a page starts and what it reads: from the request, or the cursor it passes. */
interface ScanStart {
  split: number
  offset: number
  snapshotId?: number
  tag?: string
}

/** Checks the cursor against the request, and that what it pins is still there. */
async function startOfScan(table: Table, req: ScanPageRequest, query: string): Promise<ScanStart> {
  const { snapshotId, tag } = req
  if (req.cursor === undefined) {
    if (tag !== undefined) await requireTag(table, tag, 'tag')
    else if (snapshotId !== undefined) await requireSnapshot(table.snapshots, snapshotId, 'snapshotId')
    return { split: 0, offset: 0, snapshotId, tag }
  }
  const c = decodeScanCursor(req.cursor)
  checkCursorQuery(c, req.table, query)
  if (snapshotId !== undefined && (snapshotId !== c.snapshotId || c.tag !== undefined)) {
    throw new StrataInputError(`snapshotId: ${snapshotId} differs from the cursor's snapshot ${c.snapshotId}; omit snapshotId when passing a cursor`)
  }
  if (tag !== undefined && tag !== c.tag) {
    throw new StrataInputError(`tag: ${JSON.stringify(tag)} differs from the cursor's ${c.tag === undefined ? 'snapshot' : `tag ${JSON.stringify(c.tag)}`}; omit tag when passing a cursor`)
  }
  if (c.tag !== undefined) {
    if (!(await tagPins(table, c.tag, c.snapshotId))) throw new ReadGoneError(`cursor: tag ${JSON.stringify(c.tag)} of this scan was deleted; start the scan again without a cursor`)
    return { split: c.split, offset: c.offset, snapshotId, tag: c.tag }
  }
  await requireSnapshot(table.snapshots, c.snapshotId, 'cursor')
  return { split: c.split, offset: c.offset, snapshotId: c.snapshotId, tag }
}

/**
 * A page of the scan: its body `{"snapshotId", "rows", "nextCursor"}`. Throws
 * StrataInputError for a bad request or cursor, ReadGoneError when the pinned snapshot or
 * tag is gone, RowTooLargeError when a row cannot fit in a response alone.
 */
export async function scanPage(table: Table, req: ScanPageRequest, limits: PageLimits): Promise<ReadOutcome> {
  const query = queryFingerprint(req.table, req.filter)
  const start = await startOfScan(table, req, query)
  const { tag } = start
  const stats = newReadStats()
  const plan = await planScan(table, { snapshotId: tag === undefined ? start.snapshotId : undefined, tag, columns: req.columns, filter: req.filter })
  const matches = filterMatcher(table, req.filter)
  const valueColumns = valueColumnsFor(table, plan.columns, req.filter)
  const fields = table.view.fields
  const id = plan.snapshot?.id ?? null
  const bodyOf = (rows: string[], cursor: string) => `{"snapshotId":${id},"rows":[${rows.join(',')}],"nextCursor":${cursor}}`
  const cursorAt = (split: number, offset: number): Omit<ScanCursor, 'v'> => ({ table: req.table, snapshotId: id ?? 0, ...(tag === undefined ? {} : { tag }), split, offset, query })
  const longestCursor = JSON.stringify(encodeScanCursor(cursorAt(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)))
  const page = new PageBuilder<Omit<ScanCursor, 'v'>>(limits, rowBudget(limits, bodyOf([], longestCursor)))
  // one opener over the page's splits: the next split's files open while this one is read
  const opener = new FileOpener(table, plan.splits.slice(start.split), plan.dvIndex, stats)
  const field = req.cursor !== undefined ? 'cursor' : undefined
  const pinned = <T>(read: () => Promise<T>): Promise<T> =>
    tag !== undefined && id !== null ? whileTagged(table, tag, id, field ?? 'tag', read) : whilePinned(table.snapshots, plan.snapshot?.id, field ?? 'snapshotId', read)
  await pinned(async () => {
    for (let s = start.split; s < plan.splits.length; s++) {
      const skip = s === start.split ? start.offset : 0
      let seen = 0
      for await (const batch of readSplitRecords(table, plan.splits[s], valueColumns, plan.dvIndex, stats, opener)) {
        for (const kv of batch) {
          if (isRetract(kv.kind) || !matches(kv.value)) continue
          if (seen++ < skip) continue
          const added = page.add(
            () => rowToJsonLine(fields, plan.columns, kv.value),
            () => cursorAt(s, seen - 1),
            () => primaryKeyText(table, plan.splits[s].partitionValues, kv.key),
          )
          if (!added) return
        }
      }
    }
  })
  page.checkFits('the row with primary key', encodeScanCursor)
  const cursor = page.next === null ? 'null' : JSON.stringify(encodeScanCursor(page.next))
  return { body: bodyOf(page.rows, cursor), snapshotId: id, rows: page.rows.length, stats }
}
