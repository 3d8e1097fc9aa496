// Batch writer: records stream into per-(partition, bucket) buffers; when the buffer reaches
// `write-buffer-size` each buffered bucket is sorted, merged per the merge engine and written
// as a level-0 file; at the end every file of the batch lands in one APPEND snapshot
// (BatchWriter below).
//
// Sequence numbers follow commit order, as Paimon's do: a batch numbers its rows from above
// the highest sequence number of every bucket it touches in the snapshot it read at its
// start (the true latest), so a batch that starts after another one committed numbers above
// it whatever the writers' clocks say. Within that floor the writer's clock,
// `(ms << 20) + row`, spaces batches that race (or are folded into one snapshot) so they do
// not share a base. docs/format.md says how this deviates from Paimon's counter.

import { randomInt, randomUUID } from 'node:crypto'
import { bucketFunction } from '../format/bucket.ts'
import { serializeBinaryRow } from '../format/binary-row.ts'
import { rowComparator } from '../format/compare.ts'
import type { DataFileStats } from '../format/data-file-stats.ts'
import { POSTPONE_BUCKET, bucketPath } from '../format/partition-path.ts'
import { mergeEngineOf } from '../merge/engines.ts'
import { sequenceComparator } from '../merge/sequence-order.ts'
import { createMergeFunction, mergeEqualKeys } from '../merge/merge-function.ts'
import { CommitConflictError, StrataInputError } from '../errors.ts'
import { type DataType, type KeyValue, type Row, type Snapshot, type Value, RowKind, isRetract } from '../types.ts'
import { BATCH_COMMIT_IDENTIFIER, type CommitResult, type Committer, commitUserFor } from '../commit/committer.ts'
import { HASH_INDEX_CONFLICT } from '../commit/conflicts.ts'
import { DynamicBucketAssigner, type HashIndexChanges, type HashIndexSource, keyHash } from './dynamic-bucket.ts'
import { type BucketScope, bucketsScope } from '../manifest/bucket-scope.ts'
import { hex } from '../manifest/identifiers.ts'
import { mapBounded } from '../store/bounded.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { newDataFileWriter, partitionStatsOf } from '../table/file-meta.ts'
import { CHANGELOG_FILE_PREFIX, FileNamer } from '../table/paths.ts'
import type { SchemaView } from '../table/schema.ts'
import { DYNAMIC_BUCKET, assertBucketModeKnown, assertWritable } from '../table/options.ts'
import { ColumnLayout, GroupColumns } from './column-buffer.ts'
import { type RecordRules, type WriteRecord, oversizeRow, refusedRetraction, unstorablePartition } from './record-checks.ts'
import { type SequenceClock, defaultSequenceClock } from './sequence-clock.ts'
import { FREE_GROUPS, bufferedGroupBytes, bufferedRecordBytes } from './write-buffer.ts'
import { type AheadManifestIO, PendingFiles, type TouchedBucket, WRITE_AHEAD_FILES, type WrittenFile } from './pending-files.ts'

export { FREE_GROUPS, WRITE_AHEAD_FILES, bufferedGroupBytes, bufferedRecordBytes }
export type { TouchedBucket }


/**
 * What a batch writer needs of a table: where files go, the schema and merge engine, the
 * latest snapshot and its buckets' highest sequence numbers, and the committer. The Table
 * handle (lib/handle/table.ts) is one; a test can build one without a table.
 */
export interface WriteContext extends RecordRules {
  readonly uri: string
  /** `get`: dynamic bucket mode reads the HASH index files */
  readonly store: Pick<ObjectStore, 'put' | 'delete'> & HashIndexSource['store']
  readonly snapshots: { latest(): Promise<Snapshot | null> }
  /**
   * `readIndexManifest`: dynamic bucket mode reads the HASH index; the manifest writes, when
   * given: a batch of many files writes their entries ahead of the commit (lib/write/pending-files.ts)
   */
  readonly manifests: { maxSequenceNumber(snapshot: Snapshot, scope: BucketScope): Promise<bigint> } & HashIndexSource['manifests'] & Partial<AheadManifestIO>
  /** the default committer; WriteOptions.committer overrides it */
  readonly committer: Committer
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
  /** identities of earlier attempts whose records this batch carries again (CommitRequest.supersedes) */
  supersedes?: string[]
  /** tests only: number the rows from this instead of the sequence clock (to build exact ties) */
  sequenceBase?: bigint
  /** the process's claim on sequence numbers; default defaultSequenceClock (a test may give its own) */
  sequenceClock?: SequenceClock
  /** bytes of buffered records before a flush; default the table's `write-buffer-size` */
  writeBufferSize?: number
  /**
   * How records are buffered: 'columns' (default: typed columns per bucket, sorted by a
   * permutation and written with DataFileWriter.writeColumns, lib/write/column-buffer.ts) or
   * 'rows' (one KeyValue per record, written row by row: the reference the tests compare with)
   */
  buffer?: 'columns' | 'rows'
  /**
   * Files whose entries the writer holds before writing them into manifests ahead of the
   * commit (default WRITE_AHEAD_FILES; Infinity: never, every entry goes with the commit)
   */
  writeAheadFiles?: number
}

/** The partition a record goes to: its values, encoded row and storability, checked once per distinct value. */
interface PartitionSlot {
  values: Row
  bytes: Uint8Array
  /** why the storage cannot hold it, or null */
  unstorable: string | null
  /** this sub-batch's groups by bucket */
  groups: (Group | undefined)[]
  /** the column buffer: each bucket's records in the last flush, to size its next group */
  lastRows: number[]
  /** dynamic bucket mode: records that arrived while the partition's HASH index was being read, in arrival order */
  parked: { row: Row; kind: RowKind; index: number }[]
}

/** One (partition, bucket) of the sub-batch being buffered: records in arrival order. */
interface Group {
  slot: PartitionSlot
  bucket: number
  /** the records as columns (the default buffer), or null for the 'rows' buffer */
  cols: GroupColumns | null
  /** 'rows' buffer: the records */
  rows: Row[]
  kinds: RowKind[]
  /** each row's index in the batch (its sequence number is the flush's base plus this) */
  index: number[]
}

/** A data file encoded, not yet written; `release` hands its output buffer on once the PUT has settled. */
interface Encoded {
  bytes: Uint8Array
  stats: DataFileStats
  release(): void
}

function finished(writer: ReturnType<typeof newDataFileWriter>): Encoded {
  const { bytes, stats } = writer.finish()
  return { bytes, stats, release: () => writer.release() }
}

/** Input errors by precedence: a bad row or partition (1) before a retraction the engine refuses (2). */
interface RecordedError {
  rank: 1 | 2
  error: StrataInputError
}

/**
 * Streams one batch into per-bucket level-0 files and commits them as one APPEND snapshot.
 *
 * Records are buffered per (partition, bucket) until their estimated memory
 * (bufferedRecordBytes) reaches `write-buffer-size`; then each buffered bucket is sorted by key,
 * merged with the table's merge function and written as a level-0 file (Paimon's write buffer
 * flushes a sorted run the same way). Nothing is visible until the commit, and a failure before
 * it deletes what was written. Memory is one buffer plus the files being encoded: typed columns
 * per bucket (lib/write/column-buffer.ts), or with `buffer: 'rows'` one KeyValue per record, the
 * reference test/columnar-write.test.ts compares the columns with, file for file.
 *
 * A record's sequence number is the batch's base (SequenceClock.claim, raised above the touched
 * buckets' floor) plus its index, ascending across flushes: docs/design.md "Sequence numbers".
 */
export class BatchWriter {
  readonly table: WriteContext
  readonly #opts: WriteOptions
  /** names a record by its index when it has no `where` (only for an error) */
  readonly #whereOf: (index: number) => string
  readonly #view: SchemaView
  readonly #bufferLimit: number
  /** bufferedGroupBytes of this table */
  readonly #groupBytes: number
  readonly #bucketFn: (values: Value[]) => number
  /** dynamic bucket mode (bucket -1): assigns buckets through the HASH index; null otherwise */
  readonly #dynamic: DynamicBucketAssigner | null
  /** dynamic bucket mode: a retraction of a key the index has never seen is dropped (see #dynamicBucket) */
  readonly #dropsUnseenRetractions: boolean
  /** dynamic bucket mode: records parked until their partition's index is read */
  #parked = 0
  /** dynamic bucket mode: the batch's new HASH files, once written */
  #hashChanges: HashIndexChanges | null = null
  /** dynamic bucket mode: keys of the HASH files written, deleted by abort */
  #hashKeys: string[] = []
  readonly #bucketKey: Value[]
  readonly #partitionTypes: DataType[]
  readonly #slots = new Map<unknown, PartitionSlot>()
  readonly #namer = new FileNamer()
  /**
   * Postpone bucket mode: bucket-postpone's file names carry a writer id as Paimon's do
   * (`<prefix>-u-<commit user>-s-<write id>-w-`, PostponeBucketFileStoreWrite), which Paimon's
   * postpone compaction parses to spread files over its readers
   */
  readonly #postponePrefix: string
  readonly #latestP: Promise<Snapshot | null>
  /** the files written, until the commit: their entries, or the manifests they went into */
  readonly #pending: PendingFiles
  readonly #refusesRetractions: boolean
  /** buckets whose sequence floor has been read (`hex(partition)|bucket`) */
  readonly #floorRead = new Set<string>()
  #buffered: Group[] = []
  #bufferedBytes = 0
  #records = 0
  #flushStart = 0
  #error: RecordedError | null = null
  /** the sequence number of batch index 0: numbers are #shift + index */
  #shift: bigint
  /** the process's claim on sequence numbers */
  readonly #clock: SequenceClock
  /** the end of this writer's last claim on the clock's range (SequenceClock.end) */
  #claimEnd = 0n
  readonly #fixedBase: boolean
  #finished = false
  /** the column buffer's per-table part, or null for the 'rows' buffer */
  readonly #layout: ColumnLayout | null

  constructor(table: WriteContext, opts: WriteOptions & { expectedRows?: number; whereOf?: (index: number) => string } = {}) {
    const view = table.view
    assertWritable(view.options, table.uri, 'write')
    this.table = table
    this.#opts = opts
    this.#fixedBase = opts.sequenceBase !== undefined
    this.#clock = opts.sequenceClock ?? defaultSequenceClock
    if (opts.sequenceBase !== undefined) this.#shift = opts.sequenceBase
    else {
      this.#shift = this.#clock.claim(opts.expectedRows ?? 1, Date.now())
      this.#claimEnd = this.#clock.end
    }
    this.#whereOf = opts.whereOf ?? ((i) => `record ${i + 1}`)
    this.#view = view
    this.#bufferLimit = opts.writeBufferSize ?? view.options.writeBufferSize
    this.#groupBytes = bufferedGroupBytes(view.fields.length)
    this.#postponePrefix = `${view.options.dataFilePrefix}-u-${opts.commitUser ?? randomUUID()}-s-${randomInt(2147483647)}-w-`
    // postpone bucket mode: every row goes to bucket-postpone, a postpone compaction picks its bucket (docs/design.md "Postpone buckets")
    this.#bucketFn = view.options.bucket === POSTPONE_BUCKET ? () => POSTPONE_BUCKET : view.options.bucket === DYNAMIC_BUCKET ? () => DYNAMIC_BUCKET : bucketFunction(view.bucketKeyTypes, view.options.bucket)
    this.#bucketKey = new Array(view.bucketKeyIndexes.length)
    this.#partitionTypes = view.partitionFields.map((f) => f.type)
    this.#refusesRetractions = mergeEngineOf(table.mergeConfig.engine).refusals.retractions
    this.#layout = opts.buffer === 'rows' ? null : new ColumnLayout(view.fields, view.keyIndexes, view.partitionIndexes, table.mergeConfig)
    // dynamic bucket mode keeps every entry inline: its commit checks the touched buckets' state
    const m = table.manifests
    const aheadIO = view.options.bucket !== DYNAMIC_BUCKET && m.groupedManifests && m.putManifests && m.deleteQuietly ? (m as AheadManifestIO) : null
    this.#pending = new PendingFiles(view, aheadIO, opts.writeAheadFiles ?? WRITE_AHEAD_FILES)
    this.#latestP = opts.baseSnapshot !== undefined ? Promise.resolve(opts.baseSnapshot) : table.snapshots.latest()
    this.#latestP.catch(() => undefined) // awaited at the first flush; a batch that fails first must not leave it unhandled
    assertBucketModeKnown(view.options, view.schema.version, table.uri, 'write')
    // dynamic bucket mode: keys are assigned against the HASH index of the snapshot the batch read
    this.#dynamic = view.options.bucket === DYNAMIC_BUCKET ? new DynamicBucketAssigner(table, this.#latestP) : null
    const cfg = table.mergeConfig
    this.#dropsUnseenRetractions = cfg.ignoreDelete || (cfg.engine === 'deduplicate' && view.options.changelogProducer !== 'input')
  }

  /** Records accepted so far. */
  get records(): number {
    return this.#records
  }

  /** The buffer has reached write-buffer-size (or, in dynamic bucket mode, records wait for a partition's index): call flush() before adding more. */
  get full(): boolean {
    return this.#bufferedBytes >= this.#bufferLimit || this.#parked > 0
  }

  /** Level-0 files written so far. */
  get filesWritten(): number {
    return this.#pending.count
  }

  /** Files whose entries are held now (not yet in manifests written ahead); tests only. */
  get entriesHeld(): number {
    return this.#pending.held.length
  }

  /** Entries in manifests written ahead so far; tests only. */
  get entriesWrittenAhead(): number {
    return this.#pending.entriesAhead
  }

  /**
   * Buffers one record. A record the table cannot take (a row too large, a partition the
   * storage cannot name, a retraction the merge engine refuses) is not thrown at once: the
   * batch stops buffering and finish() throws the first one by writeBatch's precedence
   * (rows and partitions in input order, then refused retractions in input order), so a
   * caller that reads input can still report an earlier-ranked error found further on.
   */
  add(r: WriteRecord): void {
    if (this.#finished) throw new Error('BatchWriter.add after finish')
    const index = this.#records++
    if (this.#error?.rank === 1) return
    const view = this.#view
    const row = r.row
    const oversize = oversizeRow(view, row)
    if (oversize) return this.#record(1, `${r.where ?? this.#whereOf(index)}: ${oversize}`)
    const slot = this.#slot(row)
    if (slot.unstorable) return this.#record(1, `${r.where ?? this.#whereOf(index)}: ${slot.unstorable}`)
    if (this.#refusesRetractions && isRetract(r.kind)) {
      const refusal = refusedRetraction(this.table, r)
      if (refusal) return this.#record(2, `${r.where ?? this.#whereOf(index)}: ${refusal}`)
    }
    if (this.#error) return
    const bki = view.bucketKeyIndexes
    const bucketKey = this.#bucketKey
    for (let j = 0; j < bki.length; j++) bucketKey[j] = row[bki[j]]
    const bucket = this.#dynamic ? this.#dynamicBucket(slot, row, r.kind, index) : this.#bucketFn(bucketKey)
    if (bucket !== null) this.#buffer(slot, bucket, row, r.kind, index)
  }

  /**
   * Dynamic bucket mode: the record's bucket from its partition's assignment, or null when it
   * is parked (the partition's index is being read: flush() places it) or dropped. A
   * retraction of a key the index has never seen is dropped when it cannot change what reads
   * return (deduplicate without an input changelog, or ignore-delete), so it does not grow the
   * index; Paimon assigns and records it like any key (docs/design.md "Dynamic buckets").
   */
  #dynamicBucket(slot: PartitionSlot, row: Row, kind: RowKind, index: number): number | null {
    const a = this.#dynamic!.loaded(slot.bytes)
    if (!a) {
      slot.parked.push({ row, kind, index })
      this.#parked++
      this.#bufferedBytes += bufferedRecordBytes(row)
      this.#dynamic!.load(slot.bytes).catch(() => undefined) // awaited in #placeParked
      return null
    }
    const hash = keyHash(this.#view.bucketKeyTypes, this.#bucketKey)
    if (isRetract(kind) && this.#dropsUnseenRetractions && a.bucketOf(hash) === -1) return null
    return a.assign(hash)
  }

  /** Dynamic bucket mode: waits for the parked records' partitions' indexes and buffers the records, in arrival order per partition. */
  async #placeParked(): Promise<void> {
    if (this.#parked === 0) return
    const slots = [...this.#slots.values()].filter((s) => s.parked.length > 0)
    await Promise.all(slots.map((s) => this.#dynamic!.load(s.bytes)))
    const bki = this.#view.bucketKeyIndexes
    for (const slot of slots) {
      const parked = slot.parked
      slot.parked = []
      for (const p of parked) {
        this.#parked--
        this.#bufferedBytes -= bufferedRecordBytes(p.row)
        if (this.#error) continue
        for (let j = 0; j < bki.length; j++) this.#bucketKey[j] = p.row[bki[j]]
        const bucket = this.#dynamicBucket(slot, p.row, p.kind, p.index)
        if (bucket !== null) this.#buffer(slot, bucket, p.row, p.kind, p.index)
      }
    }
  }

  /** Adds a record to its (partition, bucket) group. */
  #buffer(slot: PartitionSlot, bucket: number, row: Row, kind: RowKind, index: number): void {
    let g = slot.groups[bucket]
    if (!g) {
      slot.groups[bucket] = g = { slot, bucket, cols: this.#layout && new GroupColumns(this.#layout, slot.values, slot.lastRows[bucket]), rows: [], kinds: [], index: [] }
      this.#buffered.push(g)
      if (this.#buffered.length > FREE_GROUPS) this.#bufferedBytes += this.#groupBytes
    }
    if (g.cols) g.cols.add(row, kind, index)
    else {
      g.rows.push(row)
      g.kinds.push(kind)
      g.index.push(index)
    }
    this.#bufferedBytes += bufferedRecordBytes(row)
  }

  #record(rank: 1 | 2, message: string): void {
    if (!this.#error || rank < this.#error.rank) this.#error = { rank, error: new StrataInputError(message) }
    // nothing buffered will be written
    this.#dropBuffer()
  }

  /** Takes a group out of the buffer (its records are being flushed). */
  #release(g: Group): void {
    g.slot.groups[g.bucket] = undefined
    if (g.cols) g.slot.lastRows[g.bucket] = g.cols.rows
  }

  #dropBuffer(): void {
    for (const g of this.#buffered) g.slot.groups[g.bucket] = undefined
    this.#buffered = []
    this.#bufferedBytes = 0
    for (const slot of this.#slots.values()) slot.parked = []
    this.#parked = 0
  }

  /** The record's partition, looked up by its values (a Map key that tells null from 'null'). */
  #slot(row: Row): PartitionSlot {
    const pi = this.#view.partitionIndexes
    let id: unknown
    if (pi.length === 0) id = ''
    else if (pi.length === 1) {
      const v = row[pi[0]]
      // a Map tells values apart as SameValueZero does: all but -0 from 0 (distinct partitions) and bytes by content
      id = typeof v === 'object' && v !== null ? `b:${hex(v as Uint8Array)}` : v === 0 && Object.is(v, -0) ? '-0' : v
    } else {
      let s = ''
      for (const j of pi) {
        const v = row[j]
        s += v === null ? '\u0001' : `\u0002${typeof v}:${v instanceof Uint8Array ? hex(v) : Object.is(v, -0) ? '-0' : String(v)}\u0000`
      }
      id = s
    }
    let slot = this.#slots.get(id)
    if (!slot) {
      const values = pi.map((j) => row[j])
      const unstorable = unstorablePartition(this.#view, values)
      slot = { values, bytes: unstorable ? new Uint8Array(0) : serializeBinaryRow(this.#partitionTypes, values), unstorable, groups: [], lastRows: [], parked: [] }
      this.#slots.set(id, slot)
    }
    return slot
  }

  /**
   * Writes the buffered records as one sorted, merged level-0 file per buffered bucket. Their
   * buckets' sequence floor is read first (once per bucket), so numbers never need changing
   * after the files are written.
   */
  async flush(): Promise<void> {
    if (this.#parked > 0) {
      await this.#placeParked()
      if (this.#bufferedBytes < this.#bufferLimit) return
    }
    if (this.#error || this.#buffered.length === 0) return
    const groups = this.#buffered
    const from = this.#flushStart
    this.#buffered = []
    this.#bufferedBytes = 0
    this.#flushStart = this.#records
    for (const g of groups) this.#release(g)
    if (!this.#fixedBase) {
      const floor = await this.#floorOf(groups)
      this.#raiseBase(from, this.#records, floor)
    }
    await this.#writeGroups(groups)
    // the flush's slots go when there are many: a partition seen again is looked up again
    if (!this.#dynamic && this.#slots.size > SLOTS_KEPT) this.#slots.clear()
    await this.#pending.writeAheadIfDue()
  }

  /** Raises the base so that numbers from batch index `from` on are at least `floor` and above other batches' claims in this process, then claims up to `to`. */
  #raiseBase(from: number, to: number, floor: bigint): void {
    let min = floor
    // another batch of this process claimed numbers since this one last did, and these
    // numbers reach past this one's claim: they go above the other's
    const claimed = this.#clock.end
    if (claimed !== this.#claimEnd && this.#shift + BigInt(to) > this.#claimEnd && claimed > min) min = claimed
    const start = this.#shift + BigInt(from)
    if (start < min) this.#shift += min - start
    const end = this.#shift + BigInt(Math.max(to, from + 1))
    this.#clock.extendTo(end)
    this.#claimEnd = this.#clock.end
  }

  /** The sequence floor of those of these buckets whose floor was not read yet (0 when none). */
  async #floorOf(groups: Group[]): Promise<bigint> {
    const fresh: Group[] = []
    for (const g of groups) {
      const id = `${hex(g.slot.bytes)}|${g.bucket}`
      if (this.#floorRead.has(id)) continue
      this.#floorRead.add(id)
      fresh.push(g)
    }
    if (fresh.length === 0) return 0n
    const latest = await this.#latestP
    return sequenceFloor(this.table, latest, fresh.map((g) => ({ partition: g.slot.bytes, bucket: g.bucket })))
  }

  /**
   * One level-0 file per group, encoded and PUT by `io.max-concurrent-requests` workers at
   * once: a flush touching hundreds of buckets costs a few round trips, not one per bucket,
   * and no more encoded files are held than there are PUTs in flight (a worker encodes its
   * next file only once its PUT is done).
   */
  async #writeGroups(groups: Group[]): Promise<WrittenFile[]> {
    const view = this.#view
    const table = this.table
    const keyCmp = rowComparator(view.keyTypes)
    const seqCmp = sequenceComparator(table.mergeConfig)
    const shift = this.#shift
    const inputChangelog = view.options.changelogProducer === 'input'
    const written = await mapBounded(groups, view.options.ioMaxConcurrentRequests, async (g) => {
      const dir = bucketPath(view.partitionFields, g.slot.values, g.bucket, view.options.partitionDefaultName)
      const rowsIn = g.cols ? g.cols.rows : g.rows.length
      const put = async (encoded: Encoded, changelog: boolean): Promise<WrittenFile> => {
        const { bytes, stats } = encoded
        const fileName = this.#namer.next(changelog ? CHANGELOG_FILE_PREFIX : g.bucket === POSTPONE_BUCKET ? this.#postponePrefix : view.options.dataFilePrefix, '.parquet')
        await table.store.put(`${dir}/${fileName}`, bytes)
        // the next file of the flush encodes into this output buffer, not a fresh MiB
        encoded.release()
        const f: WrittenFile = { partition: g.slot.bytes, partitionValues: g.slot.values, bucket: g.bucket, dir, fileName, size: bytes.length, stats, rowsIn, ...(changelog ? { changelog } : {}) }
        // recorded at once, so a failure elsewhere in the batch deletes it
        this.#pending.add(f)
        return f
      }
      const out: WrittenFile[] = []
      // changelog-producer input: the group's records as given, with their row kinds, in a
      // level-0 changelog file beside the data file (Paimon's MergeTreeWriter flush)
      if (inputChangelog) {
        const changelog = g.cols ? this.#encodeChangelogColumns(g.cols, shift) : this.#encodeChangelogRows(g, shift, keyCmp, seqCmp)
        if (changelog) out.push(await put(changelog, true))
      }
      const encoded = g.cols ? this.#encodeColumns(g.cols, shift) : this.#encodeRows(g, shift, keyCmp, seqCmp)
      if (encoded !== null) out.push(await put(encoded, false))
      return out
    })
    this.#opts.onProgress?.(this.#flushStart, this.#records, 'writing data files')
    return written.flat()
  }

  /** A group of the column buffer as a data file: sorted by a permutation, merged, gathered, written column by column. */
  #encodeColumns(cols: GroupColumns, shift: bigint): Encoded | null {
    const batch = cols.toFileColumns(shift, createMergeFunction(this.table.mergeConfig))
    if (batch === null) return null
    const writer = newDataFileWriter(this.#view)
    writer.writeColumns(batch)
    return finished(writer)
  }

  /**
   * Whether a record goes to the input changelog: Paimon's writer drops what `ignore-delete`
   * (-U, -D) and `ignore-update-before` (-U) ignore before it buffers anything (RowKindFilter),
   * so they reach neither its files nor its changelog; Strata's merge drops them from the data.
   */
  #inChangelog = (kind: RowKind): boolean => {
    const cfg = this.table.mergeConfig
    if (cfg.ignoreDelete && isRetract(kind)) return false
    return !(cfg.ignoreUpdateBefore && kind === RowKind.UPDATE_BEFORE)
  }

  /** A group of the column buffer as a changelog file: its records, unmerged, in key order (null: none). */
  #encodeChangelogColumns(cols: GroupColumns, shift: bigint): Encoded | null {
    const batch = cols.toChangelogColumns(shift, this.#inChangelog)
    if (batch === null) return null
    const writer = newDataFileWriter(this.#view)
    writer.writeColumns(batch)
    return finished(writer)
  }

  /** A group of the 'rows' buffer as a changelog file: its records, unmerged, in key order (the reference; null: none). */
  #encodeChangelogRows(g: Group, shift: bigint, keyCmp: (a: Value[], b: Value[]) => number, seqCmp: (a: KeyValue, b: KeyValue) => number): Encoded | null {
    const writer = newDataFileWriter(this.#view)
    for (const kv of this.#sortedKeyValues(g, shift, keyCmp, seqCmp)) if (this.#inChangelog(kv.kind)) writer.write(kv)
    return writer.rowCount === 0 ? null : finished(writer)
  }

  /** The group's records as KeyValues, sorted by key, then by merge order. */
  #sortedKeyValues(g: Group, shift: bigint, keyCmp: (a: Value[], b: Value[]) => number, seqCmp: (a: KeyValue, b: KeyValue) => number): KeyValue[] {
    const keyIndexes = this.#view.keyIndexes
    const n = g.rows.length
    const kvs: KeyValue[] = new Array(n)
    for (let i = 0; i < n; i++) {
      const row = g.rows[i]
      const key: Value[] = new Array(keyIndexes.length)
      for (let j = 0; j < keyIndexes.length; j++) key[j] = row[keyIndexes[j]]
      kvs[i] = { key, seq: shift + BigInt(g.index[i]), kind: g.kinds[i], value: row }
    }
    return kvs.sort((a, b) => keyCmp(a.key, b.key) || seqCmp(a, b))
  }

  /** A group of the 'rows' buffer as a data file: one KeyValue per record, sorted, merged and written row by row (the reference). */
  #encodeRows(g: Group, shift: bigint, keyCmp: (a: Value[], b: Value[]) => number, seqCmp: (a: KeyValue, b: KeyValue) => number): Encoded | null {
    const kvs = this.#sortedKeyValues(g, shift, keyCmp, seqCmp)
    const writer = newDataFileWriter(this.#view)
    // Paimon's write buffer merges with the table's merge function before flushing
    mergeEqualKeys(kvs, keyCmp, createMergeFunction(this.table.mergeConfig), (kv) => writer.write(kv))
    if (writer.rowCount === 0) return null
    return finished(writer)
  }

  /**
   * Writes what is buffered and commits every file of the batch as one APPEND snapshot; or
   * throws the batch's first input error having written nothing that stays. An empty batch
   * (every record merged away, or none) commits nothing, as Paimon skips empty commits.
   */
  async finish(): Promise<WriteResult> {
    if (this.#finished) throw new Error('BatchWriter.finish called twice')
    this.#finished = true
    try {
      if (this.#error) throw this.#error.error
      await this.#finalFlush()
      if (this.#dynamic && this.#pending.count > 0) await this.#writeHashIndex()
    } catch (e) {
      // nothing was committed: what this batch wrote goes
      await this.abort()
      throw e
    }
    const view = this.#view
    const latest = await this.#latestP
    const latestId = latest?.id ?? 0
    const { adds, changelog } = this.#pending.take()
    const ahead = this.#pending.writtenAhead
    const buckets = this.#pending.buckets
    const rowsWritten = this.#pending.rowsWritten
    const rowsIn = this.#records
    if (adds.length === 0 && changelog.length === 0 && !ahead) {
      // Paimon skips empty commits: nothing to write, no snapshot
      return { snapshotId: latestId, retries: 0, deduplicated: false, buckets, rowsIn, rowsWritten }
    }
    const opts = this.#opts
    const result = await this.#landing((opts.committer ?? this.table.committer).commit({
      kind: 'APPEND',
      adds,
      deletes: [],
      ...(changelog.length ? { changelog } : {}),
      ...(ahead ? { writtenAhead: ahead } : {}),
      commitUser: opts.commitUser ?? commitUserFor(this.table.view.options.commitUserPrefix),
      commitIdentifier: opts.commitIdentifier ?? BATCH_COMMIT_IDENTIFIER,
      baseSnapshotId: opts.dedupAfterSnapshotId ?? latestId,
      dedup: opts.dedupAfterSnapshotId !== undefined,
      ...(opts.supersedes?.length ? { supersedes: opts.supersedes } : {}),
      ...(this.#hashChanges?.replacements.length ? { indexReplacements: this.#hashChanges.replacements, expectPartitionIndex: this.#hashChanges.expectations } : {}),
      partitionStats: (entries) => partitionStatsOf(view, entries),
      schemaId: view.schema.id,
      maxRetries: view.options.commitMaxRetries,
      beforeSnapshotCreate: opts.beforeSnapshotCreate,
    }))
    return { ...result, buckets, rowsIn, rowsWritten }
  }

  /** The commit's result; a commit the committer refused before creating any snapshot deletes what the batch wrote (a dynamic-bucket conflict). */
  async #landing(commit: Promise<CommitResult>): Promise<CommitResult> {
    try {
      return await commit
    } catch (e) {
      if (e instanceof CommitConflictError && e.landsNever) await this.abort()
      throw e
    }
  }

  /**
   * The last flush. Its files are numbered from the current base while the floor of its
   * new buckets is read, and written again above the floor in the rare case the floor is
   * higher (a writer whose clock ran ahead committed to them): so a batch that fits in the
   * buffer pays the longer of the two chains of round trips, not their sum.
   */
  async #finalFlush(): Promise<void> {
    await this.#placeParked()
    if (this.#error) throw this.#error.error
    const groups = this.#buffered
    if (groups.length === 0) return
    const from = this.#flushStart
    const to = this.#records
    this.#buffered = []
    this.#bufferedBytes = 0
    this.#flushStart = to
    for (const g of groups) this.#release(g)
    if (this.#fixedBase) {
      await this.#writeGroups(groups)
      return
    }
    this.#raiseBase(from, to, 0n)
    const floorP = this.#floorOf(groups)
    floorP.catch(() => undefined) // awaited below; a write that fails first must not leave it unhandled
    let files = await this.#writeGroups(groups)
    const floor = await floorP
    if (this.#shift + BigInt(from) < floor) {
      await Promise.all(files.map((f) => this.table.store.delete(`${f.dir}/${f.fileName}`).catch(() => undefined)))
      this.#pending.drop(new Set(files))
      const next = this.#clock.claim(to - from, Date.now(), floor)
      this.#shift = next - BigInt(from)
      this.#claimEnd = this.#clock.end
      files = await this.#writeGroups(groups)
    }
  }

  /** Dynamic bucket mode: writes the new HASH file of every bucket given new keys (recorded for abort). */
  async #writeHashIndex(): Promise<void> {
    const written: string[] = []
    this.#hashKeys = written
    this.#hashChanges = await this.#dynamic!.finish(async (key, bytes) => {
      written.push(key)
      await this.table.store.put(key, bytes)
    }, () => this.#namer.next('index-'))
  }

  /** Deletes every file this batch wrote (best effort); for a batch that will not commit. */
  async abort(): Promise<void> {
    this.#finished = true
    this.#dropBuffer()
    const hashKeys = this.#hashKeys.splice(0)
    await Promise.all(hashKeys.map((k) => this.table.store.delete(k).catch(() => undefined)))
    await this.#pending.abort(this.table.store, (keys, del) => mapBounded(keys, this.#view.options.ioMaxConcurrentRequests, del))
  }
}

/** Partition slots a writer keeps across flushes before it lets them go (each a few hundred bytes). */
const SLOTS_KEPT = 4096

/** Assignments of a dynamic-bucket batch that a concurrent writer's landing made stale, before writeBatch gives up. */
export const DYNAMIC_BUCKET_ATTEMPTS = 10

/**
 * Writes a batch of records as one commit (BatchWriter over an array or iterable). In dynamic
 * bucket mode a batch given as an array whose commit conflicts with another writer's
 * assignment (HASH_INDEX_CONFLICT) is written again from fresh state, up to
 * DYNAMIC_BUCKET_ATTEMPTS times; a stream cannot be read twice, so its conflict is thrown
 * (docs/design.md "Dynamic buckets").
 */
export async function writeBatch(table: WriteContext, records: Iterable<WriteRecord> | AsyncIterable<WriteRecord>, opts: WriteOptions = {}): Promise<WriteResult> {
  if (table.view.options.bucket !== DYNAMIC_BUCKET || !Array.isArray(records)) return writeBatchOnce(table, records, opts)
  for (let attempt = 1; ; attempt++) {
    try {
      // a later attempt reads the latest snapshot again: the one the caller read is stale
      return await writeBatchOnce(table, records, attempt === 1 ? opts : { ...opts, baseSnapshot: undefined })
    } catch (e) {
      if (!(e instanceof CommitConflictError) || !e.message.includes(HASH_INDEX_CONFLICT) || attempt >= DYNAMIC_BUCKET_ATTEMPTS) throw e
    }
  }
}

async function writeBatchOnce(table: WriteContext, records: Iterable<WriteRecord> | AsyncIterable<WriteRecord>, opts: WriteOptions): Promise<WriteResult> {
  const w = new BatchWriter(table, { ...opts, expectedRows: Array.isArray(records) ? records.length : undefined })
  try {
    if (Symbol.asyncIterator in records) {
      for await (const r of records) {
        w.add(r)
        if (w.full) await w.flush()
      }
    } else {
      for (const r of records) {
        w.add(r)
        if (w.full) await w.flush()
      }
    }
  } catch (e) {
    await w.abort()
    throw e
  }
  return w.finish()
}

/**
 * One above the highest sequence number of the touched buckets in the snapshot the batch
 * read (0 when they hold nothing): the start no batch that follows a commit may go below.
 * Files those buckets held before and no longer do count too (the manifests still name
 * them): a higher floor is as correct, and the manifests need not be folded.
 */
async function sequenceFloor(table: WriteContext, latest: Snapshot | null, groups: Iterable<{ partition: Uint8Array; bucket: number }>): Promise<bigint> {
  if (!latest) return 0n
  const pairs = [...groups]
  if (pairs.length === 0) return 0n
  // only the manifests of the touched buckets' groups are opened, and of their entries
  // only partition, bucket and sequence number are decoded
  const max = await table.manifests.maxSequenceNumber(latest, bucketsScope(table.view, pairs))
  return max + 1n
}
