// The library's handle on one table: every operation the CLI offers, typed, over the engine's
// own functions. What a caller gets back is plain data (records, summaries); errors are the
// classes of lib/errors.ts, re-exported by lib/api/index.ts. docs/api.md is the reference.

import { NotFoundError, StrataInputError } from '../errors.ts'
import { alterTable, type SchemaChange } from '../handle/alter.ts'
import { checkConsumerId, consumerKey, deleteConsumer, listConsumers } from '../handle/consumers.ts'
import { checkTagName, createTag, listTags } from '../handle/tags.ts'
import { Table, type TableOpenOptions } from '../handle/table.ts'
import { compactTable, skippedOf } from '../lsm/compact-table.ts'
import type { CompactBucketResult } from '../lsm/compact/context.ts'
import type { SkipReason } from '../lsm/compact/plan.ts'
import { expireSnapshots } from '../maintenance/expire.ts'
import { checkOrphanAge, DEFAULT_ORPHAN_OLDER_THAN_MS, removeOrphanFiles } from '../maintenance/orphans.ts'
import { deleteTag } from '../maintenance/tag-deletion.ts'
import { tableStatus, type TableStatus } from '../maintenance/table-status.ts'
import { consumerStart, type IncrementalMode, planIncremental, readPlan, recordConsumer } from '../read/incremental.ts'
import { lookup, scan } from '../read/table-read.ts'
import { type ScanMode, type StreamStep, asksForStreamingStart, notStarted, planStep, readStep, recordStep, resolveScan, startOfRead, streamSteps } from '../read/streaming-start.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { openStore } from '../store/open-store.ts'
import { formatDataType } from '../format/data-type.ts'
import { columnIndexes } from '../table/schema.ts'
import { parseDuration } from '../table/options.ts'
import { recordFromJson } from '../table/json-values.ts'
import { writeJsonLines } from '../write/json-lines.ts'
import { writeBatch, type WriteResult } from '../write/table-write.ts'
import type { WriteRecord } from '../write/record-checks.ts'
import { ROW_KIND_SHORT, type DataField, type TableSchema } from '../types.ts'
import { jsonFormOf, rowRecord, type TableRecord, type WriteRecordInput } from './values.ts'

/** How a table is opened: where its files are, and the handle's memory bounds. */
export interface OpenTableOptions extends TableOpenOptions {
  /** wraps the store the table is opened on (a trace, a fault, a cache): for tests and tools */
  wrapStore?: (store: ObjectStore) => ObjectStore
}

/** What a write landed. */
export interface WriteSummary {
  /** the snapshot the write committed */
  snapshotId: number
  /** records given */
  rowsIn: number
  /** rows written to files (records of one key in one write are merged first) */
  rowsWritten: number
}

/** Which snapshot a read sees: the latest by default, or one snapshot id, or a tag's. */
export interface SnapshotChoice {
  snapshotId?: number
  tag?: string
}

export interface ReadOptions extends SnapshotChoice {
  /** columns to return, in this order; default all */
  columns?: string[]
  /** equality filter on partition and primary-key columns, values as a write takes them */
  filter?: Record<string, unknown>
}

export interface ChangesOptions {
  /** the range starts after this snapshot (0: from the first); with consumerId, only for its first read; not with the scan options */
  fromSnapshot?: number
  /** the last snapshot of the range; default the latest */
  toSnapshot?: number
  /** default 'auto': the changelog when the table has a changelog producer, else the delta */
  mode?: IncrementalMode
  columns?: string[]
  filter?: Record<string, unknown>
  /** read from this consumer's progress; `Changes.commit()` records the new progress */
  consumerId?: string
  /**
   * A streaming start, Paimon's `scan.mode` (the table's option when not given): 'latest-full'
   * or 'full' (the latest snapshot's full state, then its changes), 'from-snapshot-full' (the
   * full state of scanSnapshotId), 'from-snapshot' (the changes of scanSnapshotId and after),
   * 'latest' (the changes after the latest snapshot), 'from-timestamp' (the changes from the
   * first snapshot at or after scanTimestampMillis), 'default' (Paimon's choice among them).
   * With a consumerId that has progress, the read continues from it instead.
   */
  scanMode?: ScanMode
  /** Paimon's `scan.snapshot-id`, for from-snapshot and from-snapshot-full */
  scanSnapshotId?: number
  /** Paimon's `scan.timestamp-millis`, for from-timestamp */
  scanTimestampMillis?: number
}

/** A follower's options (StrataTable.stream): a streaming start, and how it waits for the next snapshot. */
export interface StreamOptions extends Omit<ChangesOptions, 'fromSnapshot' | 'toSnapshot'> {
  /**
   * Called when the reader has reached the latest snapshot: resolve true to look again, false
   * to end. Sleep here to poll (the CLI's --follow waits its discovery interval), or resolve
   * on a commit-feed event. Default: end at once.
   */
  waitForSnapshot?: () => Promise<boolean>
}

/** A change read: the record's columns and its `_kind`. */
export type ChangeRecord = TableRecord & { _kind: '+I' | '-U' | '+U' | '-D' }

/** A range of snapshots' changes: iterate them, then `commit()` a consumer's progress. */
export interface Changes extends AsyncIterable<ChangeRecord> {
  /** the snapshot whose full state comes first (every live row as +I), or null: a streaming start's */
  readonly fullSnapshot: number | null
  /** the range (from, to] and how it is read */
  readonly from: number
  readonly to: number
  readonly mode: 'delta' | 'changelog'
  /**
   * Records the consumer's progress (next snapshot to + 1) once the caller has taken every
   * change: at-least-once, as the CLI does after stdout took every row. Returns the next
   * snapshot, or null for an empty table. Refused without a consumerId.
   */
  commit(): Promise<number | null>
}

export interface CompactOptions {
  /** only this partition: values by partition key, as text (`{ dt: '2024-05-01' }`) */
  partition?: Record<string, string>
  bucket?: number
  /** rewrite every bucket into the top level */
  full?: boolean
  /** each compaction once its snapshot landed */
  onCompaction?: (job: CompactionJob) => void
}

/** One bucket's compaction: files and rows in and out, rows marked in deletion vectors, the level written. */
export interface CompactionJob extends Omit<CompactBucketResult, 'snapshotId' | 'skipped'> {
  /** the partition's values joined by '/' ('' when unpartitioned) */
  partition: string
  bucket: number
  /** the snapshot it landed in */
  snapshotId: number
}

export interface CompactSummary {
  /** the buckets compacted (a capped bucket may take more than one job) */
  jobs: CompactionJob[]
  /** the buckets left alone, and why (below the trigger, one run, …) */
  skipped: SkipReason[]
  /** the latest snapshot the compaction landed, or null when there was nothing to compact */
  snapshotId: number | null
  /** snapshots landed: one, unless capped jobs or a lost race took another round */
  snapshots: number
}

export interface ExpireTableOptions {
  /** also delete files no snapshot or tag references */
  removeOrphans?: boolean
  /** with removeOrphans: only files older than this ('1 d', '13 h' or milliseconds); default 1 day */
  olderThan?: string | number
}

export interface ExpireSummary {
  expired: number[]
  deletedFiles: number
  earliest: number
  latest: number
  /** with removeOrphans: the orphan files deleted */
  orphansRemoved?: number
}

/** A table's shape: its columns, keys and options. */
export interface TableShape {
  schemaId: number
  fields: { name: string; type: string; nullable: boolean; comment?: string }[]
  primaryKeys: string[]
  partitionKeys: string[]
  options: Record<string, string>
  comment?: string
}

/** Opens the store at `uri` (s3://bucket/prefix, file:// or a local path), wrapped if asked. */
function storeAt(uri: string, wrap?: (store: ObjectStore) => ObjectStore): ObjectStore | string {
  if (!wrap) return uri
  return wrap(openStore(uri))
}

/** Creates a table at `uri` from a schema ({ fields, primaryKeys, partitionKeys, options }). */
export async function createTable(uri: string, schema: unknown, opts: OpenTableOptions = {}): Promise<StrataTable> {
  return new StrataTable(await Table.create(storeAt(uri, opts.wrapStore), schema, opts))
}

/** Opens the table at `uri`; a NotFoundError when there is none. */
export async function openTable(uri: string, opts: OpenTableOptions = {}): Promise<StrataTable> {
  return new StrataTable(await Table.open(storeAt(uri, opts.wrapStore), opts))
}

export class StrataTable {
  /** @internal the engine's handle; a new schema (alter) makes a new StrataTable */
  constructor(readonly handle: Table) {}

  /** Where the table is. */
  get uri(): string {
    return this.handle.uri
  }

  /** The table's columns, keys and options as of its latest schema when opened. */
  get shape(): TableShape {
    return shapeOf(this.handle.schema)
  }

  /** Writes records as one commit (one snapshot). A bad record fails the write, naming it, and nothing is committed. */
  async write(records: Iterable<WriteRecordInput> | AsyncIterable<WriteRecordInput>): Promise<WriteSummary> {
    return this.settled(summary(await writeBatch(this.handle, writeRecords(this.handle, records))))
  }

  /** Writes JSON lines (the CLI's input) as one commit: a string, or a stream of text or bytes. */
  async writeJsonLines(input: string | AsyncIterable<string | Uint8Array>, opts: { name?: string; onProgress?: (message: string) => void } = {}): Promise<WriteSummary> {
    const source = typeof input === 'string' ? [input] : input
    return this.settled(summary(await writeJsonLines(this.handle, toAsync(source), { name: opts.name ?? 'input', onProgress: opts.onProgress })))
  }

  /**
   * `result` once what the commit set going in the background is done: the LATEST hint and
   * the Iceberg metadata (docs/design.md "Iceberg metadata"), so a program that stops after a
   * call leaves neither half-done; the same wait as the commit service's (lib/commit/commit-service.ts).
   * Neither can fail the call: a failed hint is dropped, the Iceberg writer counts its failures.
   */
  private async settled<T>(result: T): Promise<T> {
    await Promise.all([this.handle.snapshots.settleHints(), this.handle.committer.settle()])
    return result
  }

  /** The rows of a snapshot (the latest by default), in primary-key order per bucket. */
  async *read(opts: ReadOptions = {}): AsyncGenerator<TableRecord> {
    const fields = this.fieldsOf(opts.columns)
    const iter = scan(this.handle, { snapshotId: opts.snapshotId, tag: opts.tag, columns: fields.map((f) => f.name), filter: opts.filter })
    for await (const batch of iter) for (const row of batch) yield rowRecord(fields, row)
  }

  /** Every row of a snapshot, in one array. */
  async readAll(opts: ReadOptions = {}): Promise<TableRecord[]> {
    const out: TableRecord[] = []
    for await (const r of this.read(opts)) out.push(r)
    return out
  }

  /** The row with this primary key, or null. */
  async lookup(key: Record<string, unknown>, opts: SnapshotChoice = {}): Promise<TableRecord | null> {
    const row = await lookup(this.handle, key, { snapshotId: opts.snapshotId, tag: opts.tag })
    return row === null ? null : rowRecord(this.handle.view.fields, row)
  }

  /**
   * What the snapshots (from, to] changed, each record with its `_kind`; or, with a scan mode
   * (or the table's `scan.mode`), a streaming start: the full state first when the mode has
   * one, then the changes after it up to the latest snapshot (docs/api.md). Planned (and
   * refused) before it returns.
   */
  async changes(opts: ChangesOptions): Promise<Changes> {
    const { consumerId, fromSnapshot } = opts
    if (consumerId !== undefined) checkConsumerId(consumerId, 'consumerId')
    const table = this.handle
    const fields = this.fieldsOf(opts.columns)
    const startOpts = { scanMode: opts.scanMode, scanSnapshotId: opts.scanSnapshotId, scanTimestampMillis: opts.scanTimestampMillis, mode: opts.mode, names: API_START_NAMES }
    if (asksForStreamingStart(table, startOpts, fromSnapshot !== undefined)) {
      if (fromSnapshot !== undefined) throw new StrataInputError(`fromSnapshot ${fromSnapshot} with a scan option (scanMode, scanSnapshotId, scanTimestampMillis): expected one of them (fromSnapshot names a range, a scan mode a streaming start)`)
      const scan = resolveScan(table, startOpts)
      const { start, fromProgress } = await startOfRead(table, scan, consumerId, API_START_NAMES)
      const fromName = fromProgress ? `consumerId ${JSON.stringify(consumerId)} (its progress) from snapshot` : 'the start at snapshot'
      const step = start === null ? notStarted(scan.mode) : await planStep(table, start, { columns: fields.map((f) => f.name), filter: opts.filter, toSnapshot: opts.toSnapshot, fromName, toName: 'toSnapshot', names: API_START_NAMES })
      return changesOfStep(table, step, fields, opts.filter, consumerId)
    }
    if (consumerId === undefined && fromSnapshot === undefined) throw new StrataInputError('changes: expected fromSnapshot, a scan mode (scanMode) or consumerId')
    const from = consumerId !== undefined ? await consumerStart(table, consumerId, fromSnapshot, API_NAMES) : fromSnapshot!
    const plan = await planIncremental(table, { fromSnapshot: from, toSnapshot: opts.toSnapshot, mode: opts.mode, columns: fields.map((f) => f.name), filter: opts.filter, names: API_NAMES })
    return {
      fullSnapshot: null,
      from: plan.from,
      to: plan.to,
      mode: plan.mode,
      async *[Symbol.asyncIterator]() {
        for await (const batch of readPlan(table, plan, { filter: opts.filter })) {
          for (const c of batch) yield { _kind: ROW_KIND_SHORT[c.kind], ...rowRecord(fields, c.row) } as ChangeRecord
        }
      },
      commit: async () => {
        if (consumerId === undefined) throw new StrataInputError('changes: commit() records a consumer\'s progress; expected the read to name a consumerId')
        return recordConsumer(table, consumerId, plan)
      },
    }
  }

  /**
   * A streaming read that follows the table: the start (as `changes` with a scan mode, or the
   * consumer's progress), then each time new snapshots land the changes up to the latest, one
   * `Changes` per step. Take each step's records, then `commit()` it to record a consumer's
   * progress; the next step is planned once the caller asks for it. `waitForSnapshot` says
   * when to look again (docs/api.md "Streaming starts").
   */
  async *stream(opts: StreamOptions = {}): AsyncGenerator<Changes> {
    const { consumerId } = opts
    if (consumerId !== undefined) checkConsumerId(consumerId, 'consumerId')
    const table = this.handle
    const fields = this.fieldsOf(opts.columns)
    const startOpts = { scanMode: opts.scanMode, scanSnapshotId: opts.scanSnapshotId, scanTimestampMillis: opts.scanTimestampMillis, mode: opts.mode, names: API_START_NAMES }
    const scan = resolveScan(table, startOpts)
    const { start, fromProgress } = await startOfRead(table, scan, consumerId, API_START_NAMES)
    const fromName = fromProgress ? `consumerId ${JSON.stringify(consumerId)} (its progress) from snapshot` : 'the stream from snapshot'
    const steps = streamSteps(table, scan, { start, columns: fields.map((f) => f.name), filter: opts.filter, fromName, names: API_START_NAMES, waitForSnapshot: opts.waitForSnapshot ?? (async () => false) })
    for await (const step of steps) yield changesOfStep(table, step, fields, opts.filter, consumerId)
  }

  /** Compacts every bucket that needs it (or the ones named); one snapshot for the call. */
  async compact(opts: CompactOptions = {}): Promise<CompactSummary> {
    const job = (partition: string, bucket: number, r: CompactBucketResult): CompactionJob => {
      const { skipped: _, ...done } = r
      return { partition, bucket, ...done, snapshotId: r.snapshotId! }
    }
    const onCompaction = opts.onCompaction
    const results = await compactTable(this.handle, {
      partition: opts.partition,
      bucket: opts.bucket,
      full: opts.full,
      onBucket: onCompaction && ((partition, bucket, r) => r.snapshotId !== null && onCompaction(job(partition, bucket, r))),
    })
    const jobs = results.filter((r) => r.snapshotId !== null).map((r) => job(r.partition, r.bucket, r))
    return this.settled({ jobs, skipped: skippedOf(results), snapshotId: jobs.length ? jobs[jobs.length - 1].snapshotId : null, snapshots: new Set(jobs.map((j) => j.snapshotId)).size })
  }

  /** Applies schema changes as one new schema; returns a handle on it. */
  async alter(changes: readonly SchemaChange[]): Promise<StrataTable> {
    return new StrataTable(await alterTable(this.handle, changes))
  }

  /** Sets table options (ALTER TABLE … SET), validated as at create; what Paimon refuses to change is refused. */
  async setOptions(options: Record<string, string>): Promise<StrataTable> {
    const changes: SchemaChange[] = Object.entries(options).map(([key, value]) => ({ kind: 'set-option', key, value }))
    return this.alter(changes)
  }

  /** Resets table options to their defaults (ALTER TABLE … RESET). */
  async resetOptions(keys: readonly string[]): Promise<StrataTable> {
    return this.alter(keys.map((key) => ({ kind: 'reset-option', key })))
  }

  /** Tags a snapshot (the latest by default). */
  async createTag(name: string, opts: { snapshotId?: number } = {}): Promise<{ name: string; snapshotId: number }> {
    checkTagName(name, 'tag name')
    return createTag(this.handle, name, opts)
  }

  /** Deletes a tag and the files only it kept. */
  async deleteTag(name: string): Promise<{ name: string; snapshotId: number; deletedFiles: number }> {
    checkTagName(name, 'tag name')
    const r = await deleteTag(this.handle, name)
    return { name: r.name, snapshotId: r.snapshotId, deletedFiles: r.deletedFiles }
  }

  /** The tags: name, snapshot id, and the snapshot's time and rows. */
  async listTags(): Promise<{ name: string; snapshotId: number; snapshotTimeMillis: number; rows: number }[]> {
    return (await listTags(this.handle)).map((t) => ({ name: t.name, snapshotId: t.snapshot.id, snapshotTimeMillis: t.snapshot.timeMillis, rows: t.snapshot.totalRecordCount }))
  }

  /** The consumers (ids of incremental readers) and their next snapshots. */
  async listConsumers(): Promise<{ id: string; nextSnapshot: number; lastModifiedMillis: number }[]> {
    return (await listConsumers(this.handle)).map((c) => ({ id: c.id, nextSnapshot: c.nextSnapshot, lastModifiedMillis: c.lastModified }))
  }

  /** Deletes a consumer, so expiration no longer keeps snapshots for it; a NotFoundError when there is none. */
  async deleteConsumer(id: string): Promise<void> {
    checkConsumerId(id, 'consumer id')
    const table = this.handle
    // the file's presence, not its content: a garbled consumer file can be deleted too
    if ((await table.store.head(consumerKey(id))) === null) {
      throw new NotFoundError(`consumer id ${JSON.stringify(id)}: no such consumer in ${table.uri} (consumers: ${(await listConsumers(table)).map((c) => c.id).join(', ') || 'none'})`)
    }
    await deleteConsumer(table, id)
  }

  /** Expires old snapshots by the table's retention options; optionally removes orphan files. */
  async expire(opts: ExpireTableOptions = {}): Promise<ExpireSummary> {
    const olderThanMs = opts.olderThan === undefined ? DEFAULT_ORPHAN_OLDER_THAN_MS : orphanAge(opts.olderThan)
    if (opts.olderThan !== undefined && !opts.removeOrphans) throw new StrataInputError(`olderThan ${JSON.stringify(opts.olderThan)}: applies only with removeOrphans`)
    const r = await expireSnapshots(this.handle)
    const out: ExpireSummary = { expired: r.expired, deletedFiles: r.deletedFiles, earliest: r.earliest, latest: r.latest }
    if (opts.removeOrphans) out.orphansRemoved = (await removeOrphanFiles(this.handle, { olderThanMs })).deleted.length
    return out
  }

  /** The latest snapshot and, per partition and bucket, files per level and rows. */
  async status(): Promise<TableStatus> {
    return tableStatus(this.handle)
  }

  /** The fields of `columns` (all by default), each checked to be a column. */
  private fieldsOf(columns: string[] | undefined): DataField[] {
    const view = this.handle.view
    return columnIndexes(view, columns).map((i) => view.fields[i])
  }
}

/** How the range's inputs are named in messages from the library. */
const API_NAMES = { from: 'fromSnapshot', to: 'toSnapshot', mode: 'mode' }
const API_START_NAMES = { scanMode: 'scanMode', snapshotId: 'scanSnapshotId', timestampMillis: 'scanTimestampMillis', mode: 'mode' }

/** A streaming read's step as the library hands it over: the full state (as +I records), then the changes. */
function changesOfStep(table: Table, step: StreamStep, fields: DataField[], filter: Record<string, unknown> | undefined, consumerId: string | undefined): Changes {
  const columns = fields.map((f) => f.name)
  return {
    fullSnapshot: step.fullSnapshot,
    from: step.from,
    to: step.to,
    mode: step.mode,
    async *[Symbol.asyncIterator]() {
      for await (const batch of readStep(table, step, { columns, filter })) {
        for (const c of batch) yield { _kind: ROW_KIND_SHORT[c.kind], ...rowRecord(fields, c.row) } as ChangeRecord
      }
    },
    commit: async () => {
      if (consumerId === undefined) throw new StrataInputError("changes: commit() records a consumer's progress; expected the read to name a consumerId")
      return recordStep(table, consumerId, step)
    },
  }
}

function summary(r: WriteResult): WriteSummary {
  return { snapshotId: r.snapshotId, rowsIn: r.rowsIn, rowsWritten: r.rowsWritten }
}

function shapeOf(s: TableSchema): TableShape {
  return {
    schemaId: s.id,
    fields: s.fields.map((f) => ({ name: f.name, type: formatDataType(f.type), nullable: f.type.nullable, ...(f.description ? { comment: f.description } : {}) })),
    primaryKeys: [...s.primaryKeys],
    partitionKeys: [...s.partitionKeys],
    options: { ...s.options },
    ...(s.comment ? { comment: s.comment } : {}),
  }
}

/** `olderThan`: a duration text or milliseconds, no shorter than orphan cleanup's floor. */
function orphanAge(v: string | number): number {
  const ms = typeof v === 'number' ? v : parseDuration(v)
  if (ms === null || !Number.isFinite(ms)) throw new StrataInputError(`olderThan ${JSON.stringify(v)}: expected a duration such as '1 d' or '13 h', or milliseconds`)
  return checkOrphanAge(ms, `olderThan ${JSON.stringify(v)}`)
}

/** The caller's records as the writer takes them, each checked and named by its index. */
function* writeRecordsSync(table: Table, records: Iterable<WriteRecordInput>): Generator<WriteRecord> {
  let i = 0
  for (const r of records) yield toWriteRecord(table, r, i++)
}

async function* writeRecordsAsync(table: Table, records: AsyncIterable<WriteRecordInput>): AsyncGenerator<WriteRecord> {
  let i = 0
  for await (const r of records) yield toWriteRecord(table, r, i++)
}

function writeRecords(table: Table, records: Iterable<WriteRecordInput> | AsyncIterable<WriteRecordInput>): Iterable<WriteRecord> | AsyncIterable<WriteRecord> {
  return Symbol.asyncIterator in records ? writeRecordsAsync(table, records) : writeRecordsSync(table, records)
}

function toWriteRecord(table: Table, r: WriteRecordInput, index: number): WriteRecord {
  const where = `record ${index}`
  if (typeof r !== 'object' || r === null || Array.isArray(r)) return { ...recordFromJson(table.view, r, where), where }
  const json: Record<string, unknown> = {}
  for (const key of Object.keys(r)) {
    const i = table.view.fieldIndex.get(key)
    json[key] = i === undefined ? r[key] : jsonFormOf(table.view.fields[i], r[key])
  }
  return { ...recordFromJson(table.view, json, where), where }
}

async function* toAsync(source: Iterable<string> | AsyncIterable<string | Uint8Array>): AsyncGenerator<string | Uint8Array> {
  yield* source
}
