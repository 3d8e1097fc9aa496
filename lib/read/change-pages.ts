// A page of what the snapshots (fromSnapshot, toSnapshot] changed (incremental.ts), as the
// reader function's op `changes` answers it: each row with its `_kind`. The first page
// resolves the range (toSnapshot defaults to the latest) and the mode; its cursor
// (cursor.ts) pins them, so later pages read the same range. A range whose snapshots expire
// between pages is gone (ReadGoneError).

import type { Table } from '../handle/table.ts'
import { rowToJsonLine } from '../table/json-values.ts'
import { StrataInputError } from '../errors.ts'
import { ROW_KIND_SHORT } from '../types.ts'
import { type ChangesCursor, checkCursorQuery, decodeChangesCursor, encodeChangesCursor, queryFingerprint } from './cursor.ts'
import { type IncrementalMode, changeColumns, planIncremental, readPlanSplits } from './incremental.ts'
import { PageBuilder, type PageLimits, type ReadOutcome, filterMatcher, primaryKeyText, rowBudget } from './page-rows.ts'
import { ReadGoneError, whilePinned } from './read-pins.ts'
import { type KeyFilter, newReadStats } from './table-read.ts'

export interface ChangesPageRequest {
  /** the table's configured name, which cursors are bound to */
  table: string
  fromSnapshot?: number
  toSnapshot?: number
  mode?: IncrementalMode
  columns?: string[]
  filter?: KeyFilter
  cursor?: string
}

/** The request fields that name the range in messages. */
const NAMES = { from: 'fromSnapshot', to: 'toSnapshot', mode: 'mode' }

/** The range to plan and where the page starts: from the request, or the cursor it passes. */
async function startOfChanges(table: Table, req: ChangesPageRequest, query: string) {
  const range = { fromSnapshot: req.fromSnapshot ?? 0, toSnapshot: req.toSnapshot, mode: req.mode }
  if (req.cursor === undefined) return { range, split: 0, offset: 0 }
  const c = decodeChangesCursor(req.cursor)
  checkCursorQuery(c, req.table, query)
  for (const [field, v, pinned] of [['fromSnapshot', req.fromSnapshot, c.from], ['toSnapshot', req.toSnapshot, c.to]] as const) {
    if (v !== undefined && v !== pinned) throw new StrataInputError(`${field}: ${v} differs from the cursor's ${pinned}; omit it when passing a cursor`)
  }
  if (c.from < c.to && !(await table.snapshots.existing(c.from + 1))) {
    throw new ReadGoneError(`cursor: snapshot ${c.from + 1} of this read has expired; start again from a retained snapshot (the consumer's progress, or a newer event's fromSnapshot)`)
  }
  return { range: { fromSnapshot: c.from, toSnapshot: c.to, mode: c.mode as IncrementalMode }, split: c.split, offset: c.offset }
}

/**
 * A page of changes: its body `{"fromSnapshot", "toSnapshot", "mode", "rows", "nextCursor"}`.
 * Throws StrataInputError for a bad request or cursor, ReadGoneError when the range has
 * expired, RowTooLargeError when a change cannot fit in a response alone.
 */
export async function changesPage(table: Table, req: ChangesPageRequest, limits: PageLimits): Promise<ReadOutcome> {
  const query = queryFingerprint(req.table, req.filter)
  const start = await startOfChanges(table, req, query)
  const stats = newReadStats()
  const plan = await planIncremental(table, { ...start.range, columns: req.columns, filter: req.filter, names: NAMES })
  const matches = filterMatcher(table, req.filter)
  const fields = table.view.fields
  const bodyOf = (rows: string[], cursor: string) => `{"fromSnapshot":${plan.from},"toSnapshot":${plan.to},"mode":"${plan.mode}","rows":[${rows.join(',')}],"nextCursor":${cursor}}`
  const cursorAt = (split: number, offset: number): ChangesCursor => ({ v: 1, op: 'changes', table: req.table, from: plan.from, to: plan.to, mode: plan.mode, split, offset, query })
  const longestCursor = JSON.stringify(encodeChangesCursor(cursorAt(Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)))
  const page = new PageBuilder<ChangesCursor>(limits, rowBudget(limits, bodyOf([], longestCursor)))
  await whilePinned(table.snapshots, plan.from < plan.to ? plan.from + 1 : undefined, req.cursor !== undefined ? 'cursor' : 'snapshotId', async () => {
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
        const added = page.add(
          () => `{"_kind":"${ROW_KIND_SHORT[kv.kind]}",${rowToJsonLine(fields, plan.columns, kv.value).slice(1)}`,
          () => cursorAt(s, seen - 1),
          () => primaryKeyText(table, plan.splits[s].partitionValues, kv.key),
        )
        if (!added) return
      }
    }
  })
  page.checkFits('the change of the row with primary key', encodeChangesCursor)
  const cursor = page.next === null ? 'null' : JSON.stringify(encodeChangesCursor(page.next))
  return { body: bodyOf(page.rows, cursor), snapshotId: plan.to, rows: page.rows.length, stats }
}
