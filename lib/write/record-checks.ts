// What a table refuses of a record before anything is written: a row larger than
// `write.max-row-size`, a partition the storage cannot name, a retraction the merge engine
// cannot apply. The batch writer checks each record; the writer function asks per record
// (refusedRecord) so it can reject records one by one.

import { partitionPath } from '../format/partition-path.ts'
import type { MergeEngineConfig } from '../merge/merge-types.ts'
import { mergeEngineOf } from '../merge/engines.ts'
import { createMergeFunction } from '../merge/merge-function.ts'
import { StrataInputError } from '../errors.ts'
import { type Row, type Value, RowKind, isRetract } from '../types.ts'
import { rowToJsonLine } from '../table/json-values.ts'
import { MAX_PARTITION_DIR_BYTES, MAX_PARTITION_PATH_BYTES } from '../table/paths.ts'
import type { SchemaView } from '../table/schema.ts'

/** What the checks need of a table: its schema and merge engine (the Table handle is one). */
export interface RecordRules {
  readonly view: SchemaView
  readonly mergeConfig: MergeEngineConfig
}

/** A record as the writer takes it. */
export interface WriteRecord {
  kind: RowKind
  row: Row
  /** where the record came from, for error messages (e.g. 'line 12') */
  where?: string
}

/**
 * Why the table's merge engine refuses this record (a retraction it cannot apply), or null.
 * Paimon refuses some retractions when it merges (a partial-update table given a -D
 * without `ignore-delete`, an aggregate function that cannot retract) or, for first-row,
 * in the lookup compaction of the commit that writes them (a -D or -U without
 * `ignore-delete`). Strata asks the merge function up front, so a refused record fails the
 * whole batch before anything stays written instead of poisoning later reads.
 */
export function refusedRetraction(table: Pick<RecordRules, 'mergeConfig'>, r: WriteRecord): string | null {
  if (!mergeEngineOf(table.mergeConfig.engine).refusals.retractions || !isRetract(r.kind)) return null
  const mf = createMergeFunction(table.mergeConfig)
  mf.reset()
  mf.add({ key: [], seq: 0n, kind: RowKind.INSERT, value: r.row })
  try {
    mf.add({ key: [], seq: 1n, kind: r.kind, value: r.row })
    mf.result()
    return null
  } catch (e) {
    return (e as Error).message
  }
}

/**
 * The size of a row as `write.max-row-size` counts it: strings as UTF-8, bytes raw, 8 for
 * every other non-null value (null counts nothing).
 */
export function rowSize(row: Row): number {
  let size = 0
  for (const v of row) size += valueSize(v)
  return size
}

function valueSize(v: Value): number {
  if (v === null) return 0
  if (typeof v === 'string') return Buffer.byteLength(v, 'utf8')
  if (v instanceof Uint8Array) return v.length
  return 8
}

/** Longest key text an error message shows. */
const KEY_TEXT_CHARS = 80

/** Why a row is too large for the table (naming its key, size and largest field), or null. Runs once per input row. */
export function oversizeRow(view: SchemaView, row: Row): string | null {
  const limit = view.options.maxRowBytes
  // a cheap upper bound first (a UTF-16 unit is at most 3 UTF-8 bytes): most rows end here
  let bound = 0
  for (const v of row) bound += typeof v === 'string' ? v.length * 3 : valueSize(v)
  if (bound <= limit) return null
  const size = rowSize(row)
  if (size <= limit) return null
  let largest = 0
  for (let i = 1; i < row.length; i++) if (valueSize(row[i]) > valueSize(row[largest])) largest = i
  const keyIndexes = view.schema.primaryKeys.map((k) => view.fieldIndex.get(k)!)
  let key = rowToJsonLine(view.fields, keyIndexes, row)
  if (key.length > KEY_TEXT_CHARS) key = key.slice(0, KEY_TEXT_CHARS - 3) + '...'
  return `row of ${size} bytes is larger than write.max-row-size (${limit} bytes); key ${key}, largest field '${view.fields[largest].name}' (${valueSize(row[largest])} bytes)`
}

/** Why the storage cannot hold a partition's directory (a value too long once escaped), or null. */
export function unstorablePartition(view: SchemaView, partitionValues: Row): string | null {
  if (view.partitionFields.length === 0) return null
  let path: string
  try {
    path = partitionPath(view.partitionFields, partitionValues, view.options.partitionDefaultName)
  } catch (e) {
    if (e instanceof StrataInputError) return e.message
    throw e
  }
  const dirs = path.slice(0, -1).split('/')
  for (let i = 0; i < dirs.length; i++) {
    const bytes = Buffer.byteLength(dirs[i], 'utf8')
    if (bytes > MAX_PARTITION_DIR_BYTES) {
      const shown = dirs[i].length > 40 ? dirs[i].slice(0, 37) + '...' : dirs[i]
      return `partition field '${view.partitionFields[i].name}': directory name '${shown}' is ${bytes} bytes; a partition directory name (key=value, escaped) has at most ${MAX_PARTITION_DIR_BYTES}`
    }
  }
  const total = Buffer.byteLength(path, 'utf8')
  if (total > MAX_PARTITION_PATH_BYTES) {
    return `partition path of ${total} bytes (fields ${view.partitionFields.map((f) => `'${f.name}'`).join(', ')}, escaped); a partition path has at most ${MAX_PARTITION_PATH_BYTES} bytes, so a data file's S3 key stays within 1024`
  }
  return null
}

/**
 * Why a record cannot be written to the table — a row too large, a partition the storage
 * cannot name, a retraction the merge engine refuses — or null. What writeBatch checks for
 * each record, for a caller (the writer function) that rejects records one by one.
 */
export function refusedRecord(table: RecordRules, r: WriteRecord): string | null {
  const view = table.view
  return oversizeRow(view, r.row) ?? unstorablePartition(view, view.partitionIndexes.map((j) => r.row[j])) ?? refusedRetraction(table, r)
}
