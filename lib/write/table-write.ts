// Batch writer: validated rows → grouped by (partition, bucket) → sorted and merged per the
// merge engine → one level-0 file per bucket → one APPEND snapshot.
//
// Sequence numbers follow commit order, as Paimon's do: a batch numbers its rows from above
// the highest sequence number of every bucket it touches in the snapshot it read at its
// start (the true latest), so a batch that starts after another one committed numbers above
// it whatever the writers' clocks say. Within that floor the writer's clock,
// `(ms << 20) + row`, spaces batches that race (or are folded into one snapshot) so they do
// not share a base. docs/format.md says how this deviates from Paimon's counter.

import { bucketFunction } from '../format/bucket.ts'
import { serializeBinaryRow } from '../format/binary-row.ts'
import { rowComparator } from '../format/compare.ts'
import { DataFileWriter } from '../format/data-file.ts'
import { bucketPath, partitionPath } from '../format/partition-path.ts'
import { createMergeFunction, engineTraits, sequenceComparator } from '../lsm/merge-function.ts'
import { type KeyValue, type ManifestEntry, type Row, type Snapshot, type Value, FileKind, RowKind, StrataInputError, isRetract } from '../types.ts'
import { BATCH_COMMIT_IDENTIFIER, type CommitResult, type Committer } from '../commit/committer.ts'
import { bucketsScope } from '../manifest/bucket-scope.ts'
import { bucketIdentifier, hex } from '../manifest/manifests.ts'
import { mapBounded } from '../store/bounded.ts'
import { dataFileMeta, partitionStatsOf } from '../table/file-meta.ts'
import { rowToJsonLine } from '../table/json-values.ts'
import { FileNamer, MAX_PARTITION_DIR_BYTES, MAX_PARTITION_PATH_BYTES } from '../table/paths.ts'
import type { SchemaView } from '../table/schema.ts'
import type { Table } from '../table/table.ts'
import { randomUUID } from 'node:crypto'
import { assertWritable } from '../table/options.ts'

export interface WriteRecord {
  kind: RowKind
  row: Row
  /** where the record came from, for error messages (e.g. 'line 12') */
  where?: string
}

export interface TouchedBucket {
  partition: Uint8Array
  /** partition values in partition-key order */
  partitionValues: Row
  /** `k=v/…/` or '' */
  partitionPath: string
  bucket: number
  fileName: string
  rowCount: number
}

export interface WriteResult extends CommitResult {
  buckets: TouchedBucket[]
  rowsIn: number
  rowsWritten: number
}

export interface WriteOptions {
  /** where the commit goes; default the table's direct committer */
  committer?: Committer
  commitUser?: string
  commitIdentifier?: bigint
  /**
   * with commitUser/commitIdentifier: skip the commit if an earlier attempt already landed
   * after this snapshot (the latest the caller saw before it checked for earlier attempts)
   */
  dedupAfterSnapshotId?: number
  onProgress?: (done: number, total: number, phase: string) => void
  beforeSnapshotCreate?: (id: number) => Promise<void> | void
  /**
   * The table's latest snapshot as the caller read it when the batch began (null: none),
   * so the writer does not look it up again; the batch numbers its rows above it and,
   * without dedupAfterSnapshotId, builds its commit on it. Default: looked up here.
   */
  baseSnapshot?: Snapshot | null
  /** tests only: number the rows from this instead of sequenceBase() (to build exact ties) */
  sequenceBase?: bigint
}

/**
 * Paimon refuses some retractions when it merges (a partial-update table given a -D
 * without `ignore-delete`, an aggregate function that cannot retract) or, for first-row,
 * in the lookup compaction of the commit that writes them (a -D or -U without
 * `ignore-delete`). Strata asks the merge function up front, so a refused record fails the
 * whole batch before anything is written instead of poisoning later reads.
 */
function checkRetractsAccepted(table: Table, records: WriteRecord[]): void {
  for (let i = 0; i < records.length; i++) {
    const refusal = refusedRetraction(table, records[i])
    if (refusal) throw new StrataInputError(`${records[i].where ?? `record ${i + 1}`}: ${refusal}`)
  }
}

/** Why the table's merge engine refuses this record (a retraction it cannot apply), or null. */
export function refusedRetraction(table: Table, r: WriteRecord): string | null {
  if (!engineTraits(table.mergeConfig.engine).mayRefuseRetractions || !isRetract(r.kind)) return null
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
export function refusedRecord(table: Table, r: WriteRecord): string | null {
  const view = table.view
  return oversizeRow(view, r.row) ?? unstorablePartition(view, view.partitionIndexes.map((j) => r.row[j])) ?? refusedRetraction(table, r)
}

/** Low bits of a sequence number: the row's index in its batch (2^20 rows per millisecond). */
export const SEQUENCE_ROW_BITS = 20n
let lastSequenceEnd = 0n

/**
 * The first sequence number of a batch of `rows` rows: the writer's clock in milliseconds
 * shifted past the row bits, and past every number this process handed out before, so a
 * process's batches always ascend and a batch of more than 2^20 rows takes the next
 * milliseconds too. Two batches that race for one snapshot (concurrent writers, or a
 * committer folding several messages) get distinct ranges, ordered by when they started,
 * where numbering from the next snapshot id gave both the same base and left ties for
 * file order to settle. Clocks of different writers agree to well under the time a batch
 * takes to write and commit, so a batch that started after another one committed numbers
 * above it. 2^41 ms (year 2039) << 20 stays below 2^63; and above the `snapshot id << 32`
 * numbering of earlier Strata versions for any table of fewer than 4·10^8 snapshots.
 * `floor` (one above the touched buckets' highest number) wins over the clock: a writer
 * whose clock is behind an earlier writer's still numbers above what it read.
 */
export function sequenceBase(rows: number, nowMs: number = Date.now(), floor = 0n): bigint {
  let base = BigInt(Math.floor(nowMs)) << SEQUENCE_ROW_BITS
  if (floor > base) base = floor
  const start = base > lastSequenceEnd ? base : lastSequenceEnd
  lastSequenceEnd = start + BigInt(Math.max(rows, 1))
  return start
}

export function commitUserFor(table: Table): string {
  const prefix = table.view.options.commitUserPrefix
  return prefix ? `${prefix}_${randomUUID()}` : randomUUID()
}

export async function writeBatch(table: Table, records: WriteRecord[], opts: WriteOptions = {}): Promise<WriteResult> {
  const view = table.view
  assertWritable(view.options, table.uri, 'write')
  const { bucket: numBuckets } = view.options
  const partitionTypes = view.partitionFields.map((f) => f.type)

  // group by (partition, bucket); plain loops, this runs once per input row
  const bucketFn = bucketFunction(view.bucketKeyTypes, numBuckets)
  const { partitionIndexes, bucketKeyIndexes, keyIndexes } = view
  const bucketKey: Value[] = new Array(bucketKeyIndexes.length)
  const groups = new Map<string, { partitionValues: Row; partition: Uint8Array; bucket: number; kvs: KeyValue[] }>()
  for (let i = 0; i < records.length; i++) {
    const { kind, row } = records[i]
    const oversize = oversizeRow(view, row)
    if (oversize) throw new StrataInputError(`${records[i].where ?? `record ${i + 1}`}: ${oversize}`)
    for (let j = 0; j < bucketKeyIndexes.length; j++) bucketKey[j] = row[bucketKeyIndexes[j]]
    const bucket = bucketFn(bucketKey)
    let gk = String(bucket)
    for (const j of partitionIndexes) {
      const v = row[j]
      gk += '\u0000' + (v instanceof Uint8Array ? hex(v) : String(v))
    }
    let g = groups.get(gk)
    if (!g) {
      const partitionValues = partitionIndexes.map((j) => row[j])
      const unstorable = unstorablePartition(view, partitionValues)
      if (unstorable) throw new StrataInputError(`${records[i].where ?? `record ${i + 1}`}: ${unstorable}`)
      groups.set(gk, (g = { partitionValues, partition: serializeBinaryRow(partitionTypes, partitionValues), bucket, kvs: [] }))
    }
    const key: Value[] = new Array(keyIndexes.length)
    for (let j = 0; j < keyIndexes.length; j++) key[j] = row[keyIndexes[j]]
    // the row's index in the batch; the base is added once it is known (below)
    g.kvs.push({ key, seq: BigInt(i), kind, value: row })
  }
  // The snapshot this batch builds on and the sequence floor it sets are read while the
  // files are encoded and written: the batch is numbered from the clock at once, and only
  // if an earlier batch numbered above that clock (a writer whose clock ran ahead) are its
  // files numbered again above the floor and written again. So a write's round trips are
  // the longer of the two chains, not their sum.
  const latestP = opts.baseSnapshot !== undefined ? Promise.resolve(opts.baseSnapshot) : table.snapshots.latest()
  const groupList = [...groups.values()]
  const floorP = opts.sequenceBase !== undefined ? Promise.resolve(0n) : latestP.then((l) => sequenceFloor(table, l, groupList))
  floorP.catch(() => undefined) // awaited below; a write that fails first must not leave it unhandled
  let seqBase = opts.sequenceBase ?? sequenceBase(records.length, Date.now())
  for (const g of groupList) for (const kv of g.kvs) kv.seq += seqBase

  const keyCmp = rowComparator(view.keyTypes)
  const seqCmp = sequenceComparator(table.mergeConfig)
  checkRetractsAccepted(table, records)
  const namer = new FileNamer()
  let done = 0
  // One level-0 file per bucket, encoded and PUT by `io.max-concurrent-requests` workers at
  // once: a batch touching hundreds of buckets costs a few round trips, not one per bucket,
  // and no more encoded files are held than there are PUTs in flight (a worker encodes its
  // next file only once its PUT is done). Results keep the groups' order.
  const writeFiles = () =>
    mapBounded(groupList, view.options.ioMaxConcurrentRequests, async (g) => {
      g.kvs.sort((a, b) => keyCmp(a.key, b.key) || seqCmp(a, b))
      const mf = createMergeFunction(table.mergeConfig)
      const writer = new DataFileWriter({ keyFields: view.keyFields, valueFields: view.fields }, { compression: view.options.fileCompression })
      for (let i = 0; i < g.kvs.length; ) {
        let j = i + 1
        while (j < g.kvs.length && keyCmp(g.kvs[i].key, g.kvs[j].key) === 0) j++
        // Paimon's write buffer merges with the table's merge function before flushing
        mf.reset()
        for (let k = i; k < j; k++) mf.add(g.kvs[k])
        const merged = mf.result()
        if (merged) writer.write(merged)
        i = j
      }
      const rows = g.kvs.length
      if (writer.rowCount === 0) {
        done += rows
        return null
      }
      const { bytes, stats } = writer.finish()
      const fileName = namer.next(view.options.dataFilePrefix, '.parquet')
      const dir = bucketPath(view.partitionFields, g.partitionValues, g.bucket, view.options.partitionDefaultName)
      await table.store.put(`${dir}/${fileName}`, bytes)
      done += rows
      opts.onProgress?.(done, records.length, 'writing data files')
      return { g, dir, fileName, size: bytes.length, stats }
    })
  let files = await writeFiles()
  const floor = await floorP
  if (seqBase < floor) {
    await Promise.all(files.map((f) => f && table.store.delete(`${f.dir}/${f.fileName}`).catch(() => undefined)))
    const next = sequenceBase(records.length, Date.now(), floor)
    for (const g of groupList) for (const kv of g.kvs) kv.seq += next - seqBase
    seqBase = next
    done = 0
    files = await writeFiles()
  }
  const latest = await latestP
  const latestId = latest?.id ?? 0
  const adds: ManifestEntry[] = []
  const buckets: TouchedBucket[] = []
  let rowsWritten = 0
  for (const f of files) {
    if (!f) continue
    const { g, dir, fileName, stats } = f
    adds.push({
      kind: FileKind.ADD,
      partition: g.partition,
      bucket: g.bucket,
      totalBuckets: numBuckets,
      file: dataFileMeta(view, fileName, f.size, stats, 0, 0),
    })
    buckets.push({
      partition: g.partition,
      partitionValues: g.partitionValues,
      partitionPath: dir.slice(0, dir.length - `bucket-${g.bucket}`.length),
      bucket: g.bucket,
      fileName,
      rowCount: stats.rowCount,
    })
    rowsWritten += stats.rowCount
  }

  if (adds.length === 0) {
    // Paimon skips empty commits: nothing to write, no snapshot
    return { snapshotId: latestId, retries: 0, deduplicated: false, buckets, rowsIn: records.length, rowsWritten }
  }
  const result = await (opts.committer ?? table.committer).commit({
    kind: 'APPEND',
    adds,
    deletes: [],
    commitUser: opts.commitUser ?? commitUserFor(table),
    commitIdentifier: opts.commitIdentifier ?? BATCH_COMMIT_IDENTIFIER,
    baseSnapshotId: opts.dedupAfterSnapshotId ?? latestId,
    dedup: opts.dedupAfterSnapshotId !== undefined,
    partitionStats: (entries) => partitionStatsOf(view, entries),
    schemaId: view.schema.id,
    maxRetries: view.options.commitMaxRetries,
    beforeSnapshotCreate: opts.beforeSnapshotCreate,
  })
  return { ...result, buckets, rowsIn: records.length, rowsWritten }
}

/**
 * One above the highest sequence number of the touched buckets in the snapshot the batch
 * read (0 when they hold nothing): the start no batch that follows a commit may go below.
 * Files those buckets held before and no longer do count too (the manifests still name
 * them): a higher floor is as correct, and the manifests need not be folded.
 */
async function sequenceFloor(table: Table, latest: Snapshot | null, groups: Iterable<{ partition: Uint8Array; bucket: number }>): Promise<bigint> {
  if (!latest) return 0n
  const pairs = [...groups]
  if (pairs.length === 0) return 0n
  // only the manifests of the touched buckets' groups are opened, and of their entries
  // only partition, bucket and sequence number are decoded
  const max = await table.manifests.maxSequenceNumber(latest, bucketsScope(table.view, pairs))
  return max + 1n
}
