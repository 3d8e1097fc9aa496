// Incremental reads: what the snapshots in (from, to] changed, as Paimon's batch read with
// `incremental-between = 'from,to'` returns it (core:table/source/snapshot/
// IncrementalDeltaStartingScanner.java, core:table/source/AbstractDataTableScan.java):
//
// - mode `delta`: the data files the APPEND snapshots of the range added (each snapshot's
//   deltaManifestList); COMPACT and OVERWRITE snapshots are skipped, since a compaction only
//   rewrites rows already seen.
// - mode `changelog`: the changelog files the APPEND and COMPACT snapshots of the range
//   name (changelogManifestList; OVERWRITE skipped), as a changelog producer (`input`,
//   `lookup`, `full-compaction`) writes them.
// - mode `auto` (Paimon's default `incremental-between-scan-mode`): changelog when the
//   table's `changelog-producer` is not `none`, else delta.
//
// Rows come back raw, with their row kinds (+I, -U, +U, -D), as Paimon reads such a split
// (its splits are "streaming" ones, read by MergeFileSplitRead without a key merge and with
// retracts kept, and with no deletion vectors): a key written in two commits of the range
// comes back twice, once per commit, and a delete as a -D row. Nothing is merged per key
// within the range. A Strata write merges each key once within one write (its write
// buffer), so within one commit a key appears at most once per flush.
//
// Order: one group per (partition, bucket), in the order the range first touches them;
// within a group the files in snapshot order, then manifest order; within a file its rows.

import { bucketPath } from '../format/partition-path.ts'
import { deserializeBinaryRow } from '../format/binary-row.ts'
import { BoundedStore, mapBounded, startedAhead } from '../store/bounded.ts'
import { bucketIdentifier } from '../manifest/identifiers.ts'
import { NotFoundError, StrataInputError } from '../errors.ts'
import { FileKind, type KeyValue, type ManifestEntry, type Row, type RowKind, type Snapshot } from '../types.ts'
import type { TableStore } from '../handle/table.ts'
import { columnIndexes, type SchemaView } from '../table/schema.ts'
import type { ManifestIO } from '../manifest/manifests.ts'
import type { SnapshotManager } from '../manifest/snapshot-manager.ts'
import { checkConsumerId, getConsumer, setConsumer } from '../handle/consumers.ts'
import type { RecordFileReader } from '../table/evolution.ts'
import { type KeyFilter, type ReadContext, type ReadStats, type Split, compileFilter, openFile } from './table-read.ts'

export const INCREMENTAL_MODES = ['auto', 'delta', 'changelog'] as const
export type IncrementalMode = (typeof INCREMENTAL_MODES)[number]

export interface IncrementalOptions {
  /** the snapshot the range starts after (exclusive); 0 reads from the first snapshot */
  fromSnapshot: number
  /** the last snapshot of the range (inclusive); default the latest */
  toSnapshot?: number
  /** default auto */
  mode?: IncrementalMode
  /** value columns to return, in this order; default all */
  columns?: string[]
  /** equality filter on partition and primary-key fields */
  filter?: KeyFilter
  stats?: ReadStats
  /** how the inputs are named in messages (the CLI's flags by default) */
  names?: { from: string; to: string; mode: string }
}

export interface IncrementalPlan {
  /** exclusive */
  from: number
  /** inclusive; equal to `from` when the range is empty */
  to: number
  mode: 'delta' | 'changelog'
  /** per (partition, bucket) the files to read, in order */
  splits: Split[]
  columns: number[]
}

export interface ChangeRow {
  kind: RowKind
  row: Row
}

/**
 * What planning and reading a range of snapshots needs: the file reader's context
 * (ReadContext), the snapshots, and the manifest lists and manifests they name. The Table
 * handle (lib/handle/table.ts) is one.
 */
export interface IncrementalContext extends ReadContext {
  readonly snapshots: Pick<SnapshotManager, 'snapshot' | 'earliestId' | 'latestId'>
  readonly manifests: Pick<ManifestIO, 'readIndexManifest' | 'readImmutableRange' | 'readList' | 'readManifest'>
}

const CLI_NAMES = { from: '--from-snapshot', to: '--to-snapshot', mode: '--mode' }

/** The table's changelog producer as Paimon reads the option (default none). */
export function changelogProducerOf(table: Pick<ReadContext, 'view'>): string {
  return (table.view.options.raw['changelog-producer'] ?? 'none').trim().toLowerCase()
}

function snapshotId(name: string, v: number, min: number): number {
  if (!Number.isSafeInteger(v) || v < min) throw new StrataInputError(`${name} ${v}: expected a snapshot id >= ${min}`)
  return v
}

/**
 * Checks the range and the mode and lists the files to read. Refused, naming the input:
 * a range whose first snapshot has expired (or never existed), an end past the latest
 * snapshot, a start after the end, an unknown mode, changelog mode on a table without a
 * changelog producer.
 */
export async function planIncremental(table: IncrementalContext, opts: IncrementalOptions): Promise<IncrementalPlan> {
  const names = opts.names ?? CLI_NAMES
  const view = table.view
  const requested = opts.mode ?? 'auto'
  if (!INCREMENTAL_MODES.includes(requested)) {
    throw new StrataInputError(`${names.mode} ${JSON.stringify(requested)}: expected one of ${INCREMENTAL_MODES.join(', ')}`)
  }
  const producer = changelogProducerOf(table)
  if (requested === 'changelog' && producer === 'none') {
    throw new StrataInputError(
      `${names.mode} changelog: table ${table.uri} has changelog-producer 'none', so its snapshots name no changelog files; expected a table with changelog-producer 'input', 'lookup' or 'full-compaction', or ${names.mode} delta (or auto)`,
    )
  }
  const mode: 'delta' | 'changelog' = requested === 'auto' ? (producer === 'none' ? 'delta' : 'changelog') : requested
  const columns = columnIndexes(view, opts.columns)
  const filter = compileFilter(view, opts.filter)
  const from = snapshotId(names.from, opts.fromSnapshot, 0)
  const latest = await table.snapshots.latestId()
  const earliest = latest === 0 ? 0 : await table.snapshots.earliestId()
  const retained = latest === 0 ? 'none' : `${earliest}..${latest}`
  if (opts.toSnapshot !== undefined) {
    snapshotId(names.to, opts.toSnapshot, 0)
    if (opts.toSnapshot > latest) throw new NotFoundError(`${names.to} ${opts.toSnapshot}: no such snapshot (retained snapshots: ${retained})`)
  }
  const to = opts.toSnapshot ?? latest
  if (from > to) {
    throw new StrataInputError(
      opts.toSnapshot !== undefined
        ? `${names.from} ${from} is after ${names.to} ${to}: expected ${names.from} <= ${names.to} (the range is (from, to])`
        : `${names.from} ${from} is after the latest snapshot ${to}: expected ${names.from} <= ${to}`,
    )
  }
  if (from === to) return { from, to, mode, splits: [], columns }
  // Paimon allows the start to be earliest - 1: the range is open at the start
  if (from < earliest - 1) {
    throw new StrataInputError(
      `${names.from} ${from}: snapshot ${from + 1}, the first of the range, has expired (retained snapshots: ${retained}); expected ${names.from} >= ${earliest - 1}`,
    )
  }
  // the range's snapshots and their manifests, io.max-concurrent-requests at a time
  const ids = Array.from({ length: to - from }, (_, i) => from + 1 + i)
  const limit = view.options.ioMaxConcurrentRequests
  const snapshots: Snapshot[] = await mapBounded(ids, limit, async (id) => {
    const s = await table.snapshots.snapshot(id)
    if (!s) throw new NotFoundError(`${names.from} ${from}: snapshot ${id} of the range (${from}, ${to}] has expired meanwhile or does not exist (retained snapshots: ${retained}); nothing was read`)
    return s
  })
  const lists = snapshots.map((s) => {
    if (mode === 'delta') return s.commitKind === 'APPEND' ? s.deltaManifestList : null
    return s.commitKind === 'OVERWRITE' ? null : (s.changelogManifestList ?? null)
  })
  const metas = await mapBounded(lists, limit, async (list) => (list ? table.manifests.readList(list) : []))
  // every manifest of the range at once, then back in snapshot and list order
  const flat = metas.flatMap((ms, i) => ms.map((m) => ({ i, name: m.fileName })))
  const read = await mapBounded(flat, limit, (m) => table.manifests.readManifest(m.name))
  const entries: ManifestEntry[][] = snapshots.map(() => [])
  flat.forEach((m, k) => entries[m.i].push(...read[k]))
  const partTypes = view.partitionFields.map((f) => f.type)
  const splits = new Map<string, Split>()
  entries.forEach((list, i) => {
    for (const e of list) {
      if (e.kind !== FileKind.ADD) {
        throw new Error(`snapshot ${snapshots[i].id}: its ${mode} manifests delete file ${e.file.fileName}; a ${mode} should only add files`)
      }
      // bucket-postpone: rows not yet visible (docs/design.md "Postpone buckets")
      if (e.bucket < 0 || (filter.bucket !== null && e.bucket !== filter.bucket)) continue
      const id = bucketIdentifier(e.partition, e.bucket)
      let s = splits.get(id)
      if (!s) {
        const partitionValues = deserializeBinaryRow(partTypes, e.partition)
        s = { partition: e.partition, partitionValues, bucket: e.bucket, path: bucketPath(view.partitionFields, partitionValues, e.bucket, view.options.partitionDefaultName), files: [] }
        splits.set(id, s)
      }
      s.files.push(e)
    }
  })
  return { from, to, mode, splits: [...splits.values()], columns }
}

/**
 * Rows of the plan's files from split `fromSplit` on, raw and in order, with their kinds and
 * the index of their split; files are opened up to `io.max-concurrent-requests` ahead of the
 * one being read.
 */
export async function* readPlanSplits(table: ReadContext, plan: IncrementalPlan, valueColumns: string[], fromSplit = 0, stats?: ReadStats): AsyncGenerator<{ split: number; batch: KeyValue[] }> {
  const io = new BoundedStore(table.store, table.view.options.ioMaxConcurrentRequests)
  const queue = plan.splits.slice(fromSplit).flatMap((split, i) => split.files.map((entry) => ({ split, index: fromSplit + i, entry })))
  const window = table.view.options.ioMaxConcurrentRequests
  const opened: Promise<RecordFileReader>[] = []
  let next = 0
  const fill = () => {
    while (next < queue.length && opened.length < window) {
      const { split, entry } = queue[next++]
      opened.push(startedAhead(openFile(table, io, split, entry, stats)))
    }
  }
  for (const { index } of queue) {
    fill()
    const reader = await opened.shift()!
    for await (const batch of reader.batches({ valueColumns, stats })) yield { split: index, batch }
  }
}

/** The value columns a read of the plan decodes: the projected ones and the filter's (no merge needs more). */
export function changeColumns(table: Pick<ReadContext, 'view'>, plan: IncrementalPlan, filter?: KeyFilter): string[] {
  return [...new Set([...plan.columns.map((i) => table.view.fields[i].name), ...Object.keys(filter ?? {})])]
}

/** The changes of the range, in batches: each row projected to the requested columns, with its kind. */
export async function* scanIncremental(table: IncrementalContext, opts: IncrementalOptions): AsyncGenerator<ChangeRow[]> {
  yield* readPlan(table, await planIncremental(table, opts), opts)
}

/** The changes a plan names (planIncremental with the same options). */
export async function* readPlan(table: ReadContext, plan: IncrementalPlan, opts: Pick<IncrementalOptions, 'filter' | 'stats'> = {}): AsyncGenerator<ChangeRow[]> {
  const filter = compileFilter(table.view, opts.filter)
  // no merge: only the projected columns and the filter's
  for await (const { batch } of readPlanSplits(table, plan, changeColumns(table, plan, opts.filter), 0, opts.stats)) {
    const rows: ChangeRow[] = []
    for (const kv of batch) {
      if (!filter.matches(kv.value)) continue
      rows.push({ kind: kv.kind, row: plan.columns.map((i) => kv.value[i]) })
    }
    if (rows.length) yield rows
  }
}

export async function readIncremental(table: IncrementalContext, opts: IncrementalOptions): Promise<ChangeRow[]> {
  const out: ChangeRow[] = []
  for await (const rows of scanIncremental(table, opts)) out.push(...rows)
  return out
}

/**
 * Where a consumer's read starts (the exclusive `from`): the snapshot before its recorded
 * nextSnapshot, or `fromSnapshot` when it has none yet (or the table has
 * `consumer.ignore-progress`). A consumer without progress and no `fromSnapshot` is refused.
 */
export async function consumerStart(table: TableStore & { readonly view: SchemaView }, consumerId: string, fromSnapshot: number | undefined, names = CLI_NAMES): Promise<number> {
  checkConsumerId(consumerId)
  const next = await getConsumer(table, consumerId)
  if (next !== null && !(table.view.options.consumerIgnoreProgress && fromSnapshot !== undefined)) return next - 1
  if (fromSnapshot === undefined) {
    throw new StrataInputError(`--consumer-id ${JSON.stringify(consumerId)}: the consumer has no progress recorded in ${table.uri} yet; expected ${names.from} (or a scan mode, --scan-mode) for its first read`)
  }
  return fromSnapshot
}

/**
 * Records that the consumer has read the plan's range: nextSnapshot = to + 1. Nothing is
 * written for an empty table (to 0), nor when the progress would not move.
 */
export async function recordConsumer(table: TableStore, consumerId: string, plan: IncrementalPlan): Promise<number | null> {
  if (plan.to === 0) return null
  const next = plan.to + 1
  if ((await getConsumer(table, consumerId)) === next) return next
  await setConsumer(table, consumerId, next)
  return next
}
