// A page of a streaming start, as the reader function's op `stream` answers it: the full
// state of the start's snapshot (every row as +I, level 0 merged in), then the changes after
// it up to the latest snapshot, each row with its `_kind` (streaming-start.ts). The first page
// resolves the start (Paimon's scan mode and options, as `strata read --scan-mode`); its
// cursor pins the full snapshot, the range and the mode, and the place within them, so every
// page reads the same start however many commits land in between. The reader records no
// consumer progress: the answer's `nextSnapshot` is where the caller's next read starts
// (op `changes` with fromSnapshot = nextSnapshot - 1, or a commit-feed event's range).

import type { Table } from '../handle/table.ts'
import { rowToJsonLine } from '../table/json-values.ts'
import { StrataInputError } from '../errors.ts'
import { ROW_KIND_SHORT } from '../types.ts'
import { checkCursorQuery, queryFingerprint } from './cursor.ts'
import { changeColumns, type IncrementalMode, type IncrementalPlan, planIncremental, readPlanSplits } from './incremental.ts'
import { PageBuilder, type PageLimits, type ReadOutcome, filterMatcher, primaryKeyText, rowBudget } from './page-rows.ts'
import { ReadGoneError, whilePinned } from './read-pins.ts'
import { type StartNames, type StreamStep, fullStateLevels, fullStateRecords, locateStart, planStep, resolveScan } from './streaming-start.ts'
import { type KeyFilter, newReadStats } from './table-read.ts'
import { columnIndexes } from '../table/schema.ts'

/** An op `stream` request, as read-request.ts parses it. */
export interface StreamPageRequest {
  /** the table's configured name, which cursors are bound to */
  table: string
  scanMode?: string
  scanSnapshotId?: number
  scanTimestampMillis?: number
  mode?: IncrementalMode
  columns?: string[]
  filter?: KeyFilter
  limit?: number
  cursor?: string
}

/** Where the next page of a stream starts: the pinned start and range, the phase, a split of it and the rows of it already returned. */
interface StreamCursor {
  v: 1
  op: 'stream'
  table: string
  full: number | null
  from: number
  to: number
  mode: 'delta' | 'changelog'
  phase: 'full' | 'changes'
  split: number
  offset: number
  query: string
}

const NAMES: StartNames = { scanMode: 'scanMode', snapshotId: 'scanSnapshotId', timestampMillis: 'scanTimestampMillis', mode: 'mode' }

const encode = (c: StreamCursor): string => Buffer.from(JSON.stringify(c)).toString('base64url')

function decode(text: string): StreamCursor {
  let c: Partial<StreamCursor> | null = null
  try {
    c = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<StreamCursor>
  } catch {
    c = null
  }
  const nat = (x: unknown) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0
  if (!c || c.v !== 1 || c.op !== 'stream' || typeof c.table !== 'string' || typeof c.query !== 'string' || !(c.full === null || nat(c.full)) || !nat(c.from) || !nat(c.to) || !nat(c.split) || !nat(c.offset) || (c.mode !== 'delta' && c.mode !== 'changelog') || (c.phase !== 'full' && c.phase !== 'changes')) {
    throw new StrataInputError('cursor: not a cursor of op stream this reader issued; pass the nextCursor of the previous page unchanged')
  }
  return c as StreamCursor
}

/** The step a page reads: the request's start the first time, else the cursor's, with where the page starts. */
async function startOfPage(table: Table, req: StreamPageRequest, query: string): Promise<{ step: StreamStep | null; phase: 'full' | 'changes'; split: number; offset: number }> {
  const columns = req.columns
  if (req.cursor === undefined) {
    const start = await locateStart(table, resolveScan(table, { ...req, names: NAMES }), NAMES)
    if (start === null) return { step: null, phase: 'full', split: 0, offset: 0 }
    return { step: await planStep(table, start, { columns, filter: req.filter, fromName: 'the start at snapshot', names: NAMES }), phase: 'full', split: 0, offset: 0 }
  }
  for (const f of ['scanMode', 'scanSnapshotId', 'scanTimestampMillis'] as const) {
    if (req[f] !== undefined) throw new StrataInputError(`${f}: not with a cursor, which pins the start; omit it when passing a cursor`)
  }
  const c = decode(req.cursor)
  checkCursorQuery(c, req.table, query)
  const pinned = c.phase === 'full' && c.full !== null ? c.full : c.from + 1
  if (c.from < c.to || c.phase === 'full') {
    if (!(await table.snapshots.existing(pinned))) throw new ReadGoneError(`cursor: snapshot ${pinned} of this read has expired; start again without a cursor`)
  }
  let plan: IncrementalPlan | null = null
  if (c.from < c.to) plan = await planIncremental(table, { fromSnapshot: c.from, toSnapshot: c.to, mode: c.mode, columns, filter: req.filter, names: { from: 'cursor', to: 'cursor', mode: 'mode' } })
  return { step: { fullSnapshot: c.full, from: c.from, to: c.to, mode: c.mode, nextSnapshot: c.to + 1, plan }, phase: c.phase, split: c.split, offset: c.offset }
}

/**
 * A page of a streaming start: its body `{"fullSnapshot", "fromSnapshot", "toSnapshot",
 * "mode", "nextSnapshot", "rows", "nextCursor"}`. Throws StrataInputError for a bad request or
 * cursor, ReadGoneError when what the cursor pins has expired, RowTooLargeError when a row
 * cannot fit in a response alone.
 */
export async function streamPage(table: Table, req: StreamPageRequest, limits: PageLimits): Promise<ReadOutcome> {
  const query = queryFingerprint(req.table, req.filter)
  const at = await startOfPage(table, req, query)
  const stats = newReadStats()
  const step = at.step
  const head = step === null ? '"fullSnapshot":null,"fromSnapshot":0,"toSnapshot":0,"mode":null,"nextSnapshot":null' : `"fullSnapshot":${step.fullSnapshot},"fromSnapshot":${step.from},"toSnapshot":${step.to},"mode":"${step.mode}","nextSnapshot":${step.nextSnapshot}`
  const bodyOf = (rows: string[], cursor: string) => `{${head},"rows":[${rows.join(',')}],"nextCursor":${cursor}}`
  if (step === null) return { body: bodyOf([], 'null'), snapshotId: null, rows: 0, stats }
  const cursorAt = (phase: 'full' | 'changes', split: number, offset: number): StreamCursor => ({ v: 1, op: 'stream', table: req.table, full: step.fullSnapshot, from: step.from, to: step.to, mode: step.mode, phase, split, offset, query })
  const longest = JSON.stringify(encode(cursorAt('changes', Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER)))
  const page = new PageBuilder<StreamCursor>(limits, rowBudget(limits, bodyOf([], longest)))
  const fields = table.view.fields
  const columns = columnIndexes(table.view, req.columns)
  const line = (kind: string, value: Parameters<typeof rowToJsonLine>[2]) => `{"_kind":"${kind}",${rowToJsonLine(fields, columns, value).slice(1)}`
  // rows of one split, the first `skip` of them returned by earlier pages; false once the page is full
  const take = async (phase: 'full' | 'changes', batches: AsyncIterable<{ index: number; rows: { kind: string; value: Parameters<typeof rowToJsonLine>[2]; key: () => string }[] }>) => {
    let split = -1
    let seen = 0
    for await (const { index, rows } of batches) {
      if (index !== split) [split, seen] = [index, 0]
      const skip = at.phase === phase && index === at.split ? at.offset : 0
      for (const r of rows) {
        if (seen++ < skip) continue
        if (!page.add(() => line(r.kind, r.value), () => cursorAt(phase, index, seen - 1), r.key)) return false
      }
    }
    return true
  }
  const matches = filterMatcher(table, req.filter)
  const pinned = at.phase === 'full' && step.fullSnapshot !== null ? step.fullSnapshot : step.from < step.to ? step.from + 1 : undefined
  await whilePinned(table.snapshots, pinned, req.cursor !== undefined ? 'cursor' : 'snapshotId', async () => {
    if (at.phase === 'full' && step.fullSnapshot !== null) {
      const full = fullStateRecords(table, step.fullSnapshot, { columns: req.columns, filter: req.filter, levels: fullStateLevels(table, step.mode), stats, fromSplit: at.split })
      const batches = (async function* () {
        for await (const { split, index, batch } of full) yield { index, rows: batch.map((kv) => ({ kind: '+I', value: kv.value, key: () => primaryKeyText(table, split.partitionValues, kv.key) })) }
      })()
      if (!(await take('full', batches))) return
    }
    if (!step.plan) return
    const plan = step.plan
    const from = at.phase === 'changes' ? at.split : 0
    const batches = (async function* () {
      for await (const { split, batch } of readPlanSplits(table, plan, changeColumns(table, plan, req.filter), from, stats)) {
        yield { index: split, rows: batch.filter((kv) => matches(kv.value)).map((kv) => ({ kind: ROW_KIND_SHORT[kv.kind], value: kv.value, key: () => primaryKeyText(table, plan.splits[split].partitionValues, kv.key) })) }
      }
    })()
    await take('changes', batches)
  })
  page.checkFits('the row with primary key', encode)
  const cursor = page.next === null ? 'null' : JSON.stringify(encode(page.next))
  return { body: bodyOf(page.rows, cursor), snapshotId: step.to, rows: page.rows.length, stats }
}
