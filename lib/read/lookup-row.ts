// A key lookup as the reader function answers it: the row of one whole primary key in the
// latest snapshot (or a given one, or a tag's), as `{"snapshotId", "row"}`, refused when the
// row cannot fit in a response.

import type { Table } from '../handle/table.ts'
import { requireTag } from '../handle/tags.ts'
import { rowToJsonLine, valueFromJson } from '../table/json-values.ts'
import { columnIndexes } from '../table/schema.ts'
import { StrataInputError } from '../errors.ts'
import type { Row } from '../types.ts'
import { type ReadOutcome, type ResponseLimit, RowTooLargeError } from './page-rows.ts'
import { requireSnapshot, whilePinned, whileTagged } from './read-pins.ts'
import { type KeyFilter, lookup } from './table-read.ts'

export interface LookupRowRequest {
  key: KeyFilter
  snapshotId?: number
  tag?: string
  columns?: string[]
}

/** The key names every primary-key field and nothing else, each value of its field's type. */
function checkKey(table: Table, key: KeyFilter): void {
  const view = table.view
  const pk = view.schema.primaryKeys
  for (const k of Object.keys(key)) {
    if (!pk.includes(k)) throw new StrataInputError(`key: '${k}' is not a primary key field (primary key: [${pk.join(', ')}])`)
  }
  for (const k of pk) {
    if (!(k in key)) throw new StrataInputError(`key: missing primary key field '${k}' (primary key: [${pk.join(', ')}])`)
    valueFromJson(view.fields[view.fieldIndex.get(k)!], key[k], 'key')
  }
}

/** The row and the snapshot it was read from (none while the table has no snapshot). */
async function readRow(table: Table, req: LookupRowRequest, columns: string[]): Promise<{ row: Row | null; snapshotId: number | undefined }> {
  const { key } = req
  if (req.tag !== undefined) {
    const tag = req.tag
    const id = (await requireTag(table, tag, 'tag')).snapshot.id
    return { row: await whileTagged(table, tag, id, 'tag', () => lookup(table, key, { tag, columns })), snapshotId: id }
  }
  let snapshotId = req.snapshotId
  if (snapshotId !== undefined) await requireSnapshot(table.snapshots, snapshotId, 'snapshotId')
  else snapshotId = (await table.snapshots.latestId()) || undefined
  const at = snapshotId
  const row = at === undefined ? null : await whilePinned(table.snapshots, at, 'snapshotId', () => lookup(table, key, { snapshotId: at, columns }))
  return { row, snapshotId }
}

/** Throws StrataInputError for a bad key or column, ReadGoneError, or RowTooLargeError. */
export async function lookupRow(table: Table, req: LookupRowRequest, limit: ResponseLimit): Promise<ReadOutcome> {
  const view = table.view
  checkKey(table, req.key)
  const names = req.columns ?? view.fields.map((f) => f.name)
  const fields = columnIndexes(view, names).map((i) => view.fields[i])
  const { row, snapshotId } = await readRow(table, req, names)
  const text = row === null ? 'null' : rowToJsonLine(fields, fields.map((_, i) => i), row)
  const body = `{"snapshotId":${snapshotId ?? null},"row":${text}}`
  if (limit.responseBytes(body) > limit.maxResponseBytes) {
    const pkFields = view.schema.primaryKeys.map((k) => view.fields[view.fieldIndex.get(k)!])
    const keyText = rowToJsonLine(pkFields, pkFields.map((_, i) => i), pkFields.map((f) => valueFromJson(f, req.key[f.name], 'key')))
    throw new RowTooLargeError(`the row with primary key ${keyText}`, limit.bodyBytes(text), limit.maxResponseBytes)
  }
  return { body, snapshotId: snapshotId ?? null, rows: row === null ? 0 : 1, stats: null }
}
