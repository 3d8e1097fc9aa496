// Compaction of one (partition, bucket) as a library call: read the bucket's LSM shape
// from the latest snapshot, pick with universal compaction (force-up-level-0 in
// deletion-vector mode), rewrite by streaming merge (column by column where
// columnar-merge.ts supports the table, else record by record), maintain deletion vectors, and commit
// a COMPACT snapshot with the conflict checks of docs/design.md "How a commit travels".
// The Lambda compactor wraps this.
//
// Deletion-vector mode (Paimon's LookupMergeTreeCompactRewriter): every key that rises out
// of level 0 is looked up in the older levels the compaction does not rewrite; the row it
// supersedes gets a bit in its file's deletion vector instead of a rewrite of that file.
// Readers then skip level 0 and read every other file on its own, vector applied.

import { rowComparator } from '../format/compare.ts'
import type { ByteSource } from '../store/byte-source.ts'
import { DataFileWriter } from '../format/data-file-writer.ts'
import { KEY_FIELD_PREFIX } from '../format/data-file-layout.ts'
import { type DeletionVector, DELETION_VECTORS_INDEX, deletionVectorOf, writeDeletionVectorFiles } from '../format/deletion-vector.ts'
import { type IndexManifestEntry, type KeyValue, type ManifestEntry, type Snapshot, type Value, CommitConflictError, FileKind, isRetract } from '../types.ts'
import { bucketsScope } from '../manifest/bucket-scope.ts'
import { bucketIdentifier, fileIdentifier } from '../manifest/identifiers.ts'
import { byteSourceOf } from '../store/byte-source.ts'
import { BoundedStore, Uploads, startedAhead } from '../store/bounded.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { compressionThreadUseful, startCompressionThread } from '../format/compression-thread.ts'
import { dataFileMeta, decodeKey, newDataFileWriter, partitionStatsOf } from '../table/file-meta.ts'
import { CHANGELOG_FILE_PREFIX, FileNamer } from '../table/paths.ts'
import type { Table } from '../handle/table.ts'
import { bucketDirOf, dataFileKey, dvIndexByBucket, indexFileKey, livePositioned, loadDeletionVectors } from '../handle/bucket-state.ts'
import { type CompactOptions, type CompactStep, type CompactUnit, type LsmFile, Levels, compactionFileSize, limitInput, needsBackPressure, pickCompaction, pickFullCompaction, planCompaction, shouldDropDelete } from './universal-compaction.ts'
import { mergeSortedRuns } from './merge-reader.ts'
import { type LookupFile, type MergePathRequest, chooseMergePath, mergeColumnarRuns } from './columnar-merge.ts'
import { physicalEncoder } from '../format/parquet-types.ts'
import { type ColumnarSource, type RecordFileReader, openColumnarFile, openRecordFile } from '../table/evolution.ts'
import type { ColumnBatch } from '../format/columnar-types.ts'
import { compactsWithLookup, createLookupMergeFunction, createMergeFunction, engineTraits, sequenceComparator } from '../merge/merge-function.ts'
import { BATCH_COMMIT_IDENTIFIER, type Committer, type ExpectedIndex, commitUserFor } from '../commit/committer.ts'
import { commitKeyOf } from '../commit/landed.ts'
import { type CoreOptions, assertWritable } from '../table/options.ts'
import { LookupChangelog } from './lookup-changelog.ts'

/**
 * Output bytes a compaction keeps uploading while it merges on: one file at the default
 * `target-file-size` (128 MB) besides the one being built, several smaller ones.
 */
const UPLOAD_BYTES_IN_FLIGHT = 64 * 1024 * 1024

export interface CompactBucketRequest {
  partition: Uint8Array
  bucket: number
  /** compact everything into the highest level */
  full?: boolean
  /** cap on input files of this job (default `compaction.max-input-files`) */
  maxInputFiles?: number
  /** the commit's identity with COMPACT and Paimon's batch identifier: unique per compaction; default a fresh one */
  commitUser?: string
  /** where the COMPACT commit goes; default the table's direct committer */
  committer?: Committer
  /** test hook: runs after the output is written, before the commit */
  beforeCommit?: () => Promise<void> | void
  /**
   * Which merge rewrites the files (`chooseMergePath` in columnar-merge.ts): `auto` (the
   * default) merges columnar where it supports the table and the step, else by rows; `row`
   * always by rows (the reference model); `columnar` throws where it is unsupported.
   */
  mergePath?: MergePathRequest
  /**
   * Compress the output's pages on the process's compression thread while the merge goes on
   * (lib/format/compression-thread.ts); the files are the same either way. Default: where a
   * second thread can run beside the merge (`compressionThreadUseful`).
   */
  compressionThread?: boolean
}

export interface CompactBucketResult {
  /** the COMPACT snapshot, or null when nothing needed doing */
  snapshotId: number | null
  /** the snapshot the compaction read */
  baseSnapshotId: number
  inputFiles: number
  outputFiles: number
  upgradedFiles: number
  rowsIn: number
  rowsOut: number
  /** rows newly marked in deletion vectors */
  rowsDeletedByVector: number
  outputLevel: number | null
  /** the bucket still needs compaction after this job (its input was capped) */
  needsMore: boolean
  /** sorted runs past `num-sorted-run.stop-trigger` before this job */
  backPressure: boolean
  retries: number
  /** rewrite steps merged by the columnar path (the others by rows) */
  columnarSteps?: number
}

export function lsmFileOf(table: Table, e: ManifestEntry): LsmFile {
  return {
    name: e.file.fileName,
    level: e.file.level,
    size: Number(e.file.fileSize),
    minKey: decodeKey(table.view, e.file.minKey),
    maxKey: decodeKey(table.view, e.file.maxKey),
    maxSequenceNumber: e.file.maxSequenceNumber,
    minSequenceNumber: e.file.minSequenceNumber,
    creationTime: e.file.creationTime,
    rowCount: Number(e.file.rowCount),
    deleteRowCount: e.file.deleteRowCount === null ? null : Number(e.file.deleteRowCount),
    entry: e,
  }
}

export async function bucketLevels(table: Table, snapshot: Snapshot | null, partition: Uint8Array, bucket: number): Promise<{ entries: ManifestEntry[]; levels: Levels }> {
  // only the manifests whose list records can hold this bucket are opened
  const entries = snapshot ? await table.manifests.liveEntries(snapshot, bucketsScope(table.view, [{ partition, bucket }])) : []
  const levels = new Levels(
    entries.map((e) => lsmFileOf(table, e)),
    table.view.options.numLevels,
    rowComparator(table.view.keyTypes),
  )
  return { entries, levels }
}

/** The options a bucket's compaction pick runs with (`pickCompaction`), from the table's. */
export function pickOptionsOf(table: Table): CompactOptions {
  const opts = table.view.options
  return {
    compactionTrigger: opts.compactionTrigger,
    maxSizeAmplificationPercent: opts.maxSizeAmplificationPercent,
    sizeRatio: opts.sizeRatio,
    numLevels: opts.numLevels,
    // changelog-producer lookup: Paimon's ForceUpLevel0Compaction too, so that every
    // level-0 key meets the lookup that writes its changelog
    deletionVectors: compactsWithLookup(table.mergeConfig.engine, opts.deletionVectors) || opts.changelogProducer === 'lookup',
  }
}

/**
 * Whether a bucket holding these live files has something to compact: the pick a compaction
 * job of it would make (not a full compaction) is not empty.
 */
export function compactionNeeded(table: Table, entries: ManifestEntry[]): boolean {
  const levels = new Levels(entries.map((e) => lsmFileOf(table, e)), table.view.options.numLevels, rowComparator(table.view.keyTypes))
  return pickCompaction(levels, pickOptionsOf(table)) !== null
}

function entryOf(f: LsmFile): ManifestEntry {
  return f.entry as ManifestEntry
}

/** An input file's bytes. */
function inputOf(table: Table, io: ObjectStore, dir: string, f: LsmFile): ByteSource {
  const file = entryOf(f).file
  // with its manifest entry: the reads check keys and row counts against it
  return byteSourceOf(io, dataFileKey(table, dir, file), Number(file.fileSize), file)
}

/** An input file for the row merge: a file of an older schema is mapped to the table's by field id (lib/table/evolution.ts). */
function openInput(table: Table, io: ObjectStore, dir: string, f: LsmFile): Promise<RecordFileReader> {
  return openRecordFile(table, f.name, entryOf(f).file.schemaId, inputOf(table, io, dir, f))
}

/** A run's files opened up to `ahead` before the one being read, in order. */
async function* openedAhead<R>(files: LsmFile[], ahead: number, open: (f: LsmFile) => Promise<R>): AsyncGenerator<{ reader: R; file: LsmFile }> {
  const opens: (Promise<R> | null)[] = []
  for (let i = 0; i < files.length; i++) {
    while (opens.length < files.length && opens.length < i + Math.max(1, ahead)) opens.push(startedAhead(open(files[opens.length])))
    const reader = await opens[i]!
    opens[i] = null
    yield { reader, file: files[i] }
  }
}

/**
 * Sequential reader over one sorted run's files (in key order), deletion vectors applied.
 * Files are opened up to `ahead` before the one being read: each open is a footer GET, and
 * a run of level-0 files packed together (non-overlapping ones, as sequential keys give)
 * would otherwise wait one round trip per file. A job's inputs are capped
 * (`compaction.max-input-files`), so the footers held ahead are too.
 */
async function* readRun(
  table: Table,
  io: ObjectStore,
  dir: string,
  files: LsmFile[],
  dvs: Promise<Map<string, DeletionVector>>,
  ahead: number,
  valueColumns?: string[],
  /** called with each batch read from a level-0 file (the lookup changelog marks them) */
  onLevel0?: (kvs: KeyValue[]) => void,
): AsyncGenerator<KeyValue[]> {
  for await (const { reader, file } of openedAhead(files, ahead, (f) => openInput(table, io, dir, f))) {
    for await (const batch of reader.batches({ valueColumns, deleted: (await dvs).get(file.name) })) {
      if (onLevel0 && file.level === 0) onLevel0(batch)
      yield batch
    }
  }
}

/** `openInput` for the columnar merge. */
function openColumnarInput(table: Table, io: ObjectStore, dir: string, f: LsmFile): Promise<ColumnarSource> {
  return openColumnarFile(table, f.name, entryOf(f).file.schemaId, inputOf(table, io, dir, f))
}

/**
 * `readRun` for the columnar merge: one sorted run's live rows as column batches, one per
 * row group, files opened up to `ahead` before the one being read.
 */
async function* readRunColumnar(
  table: Table,
  io: ObjectStore,
  dir: string,
  files: LsmFile[],
  dvs: Promise<Map<string, DeletionVector>>,
  ahead: number,
): AsyncGenerator<ColumnBatch> {
  for await (const { reader, file } of openedAhead(files, ahead, (f) => openColumnarInput(table, io, dir, f))) {
    const dv = (await dvs).get(file.name)
    // string values as their bytes: the merge moves them to the writer without making strings
    yield* reader.rowGroups({ deleted: dv && dv.cardinality > 0 ? dv.sortedPositions() : undefined, utf8Values: true })
  }
}

/**
 * One older level for the columnar merge's lookups (`ColumnarLevelLookup`): its files with
 * their key ranges as physical values, and where probes start; the first file a probe can
 * hit starts opening at once, as `LevelLookup` does.
 */
function columnarLookupLevel(
  table: Table,
  io: ObjectStore,
  dir: string,
  files: LsmFile[],
  dvs: Promise<Map<string, DeletionVector>>,
  valueColumns: string[] | undefined,
  fromKey: unknown[],
): { files: LookupFile[]; startAt: number } {
  const view = table.view
  const cmp = rowComparator(view.keyTypes) as (a: unknown[], b: unknown[]) => number
  const encoders = view.keyFields.map((f) => physicalEncoder(KEY_FIELD_PREFIX + f.name, f.type))
  const physical = (key: unknown[]) => key.map((v, i) => encoders[i](v as Value))
  const valueFields = valueColumns?.map((name) => view.fields.findIndex((f) => f.name === name))
  const open = (f: LsmFile) => openColumnarInput(table, io, dir, f)
  let startAt = 0
  while (startAt < files.length && cmp(fromKey, files[startAt].maxKey) > 0) startAt++
  const opening = startAt < files.length ? startedAhead(open(files[startAt])) : null
  return {
    startAt,
    files: files.map((f, i) => ({
      name: f.name,
      minKey: physical(f.minKey),
      maxKey: physical(f.maxKey),
      rows: () =>
        (async function* () {
          const reader = await (i === startAt && opening ? opening : open(f))
          const dv = (await dvs).get(f.name)
          yield* reader.rowGroups({ deleted: dv && dv.cardinality > 0 ? dv.sortedPositions() : undefined, valueFields })
        })(),
    })),
  }
}

/**
 * Cursor over the live rows of one older level (a sorted run of files), for the lookup of
 * rising keys. Skips files whose key range cannot hold the probe; advances monotonically.
 */
class LevelLookup {
  private fileIdx = 0
  private batch: KeyValue[] = []
  private positions: number[] = []
  private pos = 0
  private iter: AsyncIterator<{ kvs: KeyValue[]; positions: number[] }> | null = null
  /** the open of the file at fileIdx, started before its first probe */
  private opening: Promise<RecordFileReader> | null = null
  private cmp: (a: unknown[], b: unknown[]) => number

  constructor(
    private readonly table: Table,
    private readonly io: ObjectStore,
    private readonly dir: string,
    private readonly files: LsmFile[],
    private readonly dvs: Promise<Map<string, DeletionVector>>,
    private readonly valueColumns: string[] | undefined,
    /** the smallest key the job can probe (its inputs' smallest) */
    fromKey: unknown[],
  ) {
    this.cmp = rowComparator(table.view.keyTypes) as (a: unknown[], b: unknown[]) => number
    // files wholly below every probe are skipped by find() anyway; skip them now and start
    // opening the first file a probe can hit, so its footer arrives with the inputs' own
    // instead of after the merge's first key
    while (this.fileIdx < files.length && this.cmp(fromKey, files[this.fileIdx].maxKey) > 0) this.fileIdx++
    if (this.fileIdx < files.length) this.opening = startedAhead(openInput(table, io, dir, files[this.fileIdx]))
  }

  /** The live record with this key in the level, with its file and row position. */
  async find(key: unknown[]): Promise<{ kv: KeyValue; file: string; pos: number } | null> {
    while (this.fileIdx < this.files.length) {
      const f = this.files[this.fileIdx]
      if (this.cmp(key, f.maxKey) > 0) {
        this.nextFile()
        continue
      }
      if (this.cmp(key, f.minKey) < 0) return null
      if (!this.iter) {
        const reader = await (this.opening ?? openInput(this.table, this.io, this.dir, f))
        this.opening = null
        this.iter = livePositioned(reader.batches({ valueColumns: this.valueColumns }), (await this.dvs).get(f.name))[Symbol.asyncIterator]()
      }
      while (true) {
        if (this.pos >= this.batch.length) {
          const next = await this.iter.next()
          if (next.done) {
            this.nextFile()
            break
          }
          this.batch = next.value.kvs
          this.positions = next.value.positions
          this.pos = 0
        }
        const c = this.cmp(this.batch[this.pos].key, key)
        if (c < 0) {
          this.pos++
          continue
        }
        if (c === 0) return { kv: this.batch[this.pos], file: f.name, pos: this.positions[this.pos] }
        return null
      }
    }
    return null
  }

  private nextFile(): void {
    this.fileIdx++
    this.opening = null
    this.iter = null
    this.batch = []
    this.positions = []
    this.pos = 0
  }
}

export async function compactBucket(table: Table, req: CompactBucketRequest): Promise<CompactBucketResult> {
  const view = table.view
  const opts = view.options
  assertWritable(opts, table.uri, `compaction of bucket ${req.bucket}`)
  const snapshot = await table.snapshots.latest()
  const baseSnapshotId = snapshot?.id ?? 0
  // the bucket's files and its index entries are independent reads of the snapshot: at once
  const [{ levels }, dvIndex] = await Promise.all([
    bucketLevels(table, snapshot, req.partition, req.bucket),
    opts.deletionVectors ? dvIndexByBucket(table, snapshot).then((m) => m.get(bucketIdentifier(req.partition, req.bucket))) : undefined,
  ])
  const backPressure = needsBackPressure(levels, opts.stopTrigger)
  const nothing: CompactBucketResult = {
    snapshotId: null, baseSnapshotId, inputFiles: 0, outputFiles: 0, upgradedFiles: 0, rowsIn: 0, rowsOut: 0,
    rowsDeletedByVector: 0, outputLevel: null, needsMore: false, backPressure, retries: 0,
  }
  // Which files carry a non-empty vector is in the index entries (each vector's
  // cardinality), so picking and planning need not wait for the vectors themselves: they
  // load while the inputs are opened. A vector recorded without a cardinality (another
  // writer's) has to be read first to know.
  const cardinality = new Map<string, bigint | null>()
  for (const e of dvIndex ?? []) for (const m of e.dvRanges ?? []) cardinality.set(m.dataFileName, m.cardinality)
  let dvsLoading: Promise<Map<string, DeletionVector>> | null = null
  const loadDvs = () => (dvsLoading ??= startedAhead(opts.deletionVectors ? loadDeletionVectors(table, dvIndex) : Promise.resolve(new Map<string, DeletionVector>())))
  const knownDvs = [...cardinality.values()].includes(null) ? await loadDvs() : null
  const hasDeletionVector = (f: LsmFile) => (knownDvs ? (knownDvs.get(f.name)?.cardinality ?? 0) > 0 : (cardinality.get(f.name) ?? 0n) > 0n)
  const picked: CompactUnit | null = req.full
    ? pickFullCompaction(levels, opts.numLevels, { hasDeletionVector })
    : pickCompaction(levels, pickOptionsOf(table))
  if (!picked) return nothing
  const dvsPromise = loadDvs()
  const unit = limitInput(picked, req.maxInputFiles ?? opts.compactionMaxInputFiles, levels)
  const needsMore = unit.files.length < picked.files.length
  const keyCmp = rowComparator(view.keyTypes)
  const dropDelete = shouldDropDelete(unit.outputLevel, levels, opts.deletionVectors)
  const { path: dir } = bucketDirOf(table, req.partition, req.bucket)
  const lookup = compactsWithLookup(table.mergeConfig.engine, opts.deletionVectors)
  // changelog-producer lookup: every key taken up from level 0 is looked up in the levels
  // above and its change written to a changelog file (lib/lsm/lookup-changelog.ts)
  const changelogLookup = opts.changelogProducer === 'lookup'
  const steps: CompactStep[] = planCompaction(unit, {
    keyComparator: keyCmp,
    dropDelete,
    deletionVectors: lookup,
    changelogFromLevel0: changelogLookup,
    minFileSize: compactionFileSize(opts.targetFileSize),
    hasDeletionVector,
  })
  const inputNames = new Set(unit.files.map((f) => f.name))

  const seqCmp = sequenceComparator(table.mergeConfig)
  const namer = new FileNamer()
  // started now, it is running when the first row group's pages are ready (it takes ~30 ms)
  const compressionThread = req.compressionThread ?? compressionThreadUseful()
  if (compressionThread && steps.some((s) => s.kind !== 'upgrade')) startCompressionThread()
  // the job's data-file and index requests: inputs opened together, outputs PUT while the
  // merge goes on, at most `io.max-concurrent-requests` in flight
  const io = new BoundedStore(table.store, opts.ioMaxConcurrentRequests)
  const uploads = new Uploads(io, UPLOAD_BYTES_IN_FLIGHT)
  const written: string[] = []
  const adds: ManifestEntry[] = []
  const deletes: ManifestEntry[] = []
  const changelog: ManifestEntry[] = []
  /** new deletion-vector marks, by data file */
  const marks = new Map<string, number[]>()
  let rowsIn = 0, rowsOut = 0, upgraded = 0, marked = 0, columnarSteps = 0
  const commitUser = req.commitUser ?? commitUserFor(table.view.options.commitUserPrefix)
  let commitStarted = false
  // an engine whose newer record replaces the older whole needs the superseded row's
  // position and the `sequence.field` fields that decide; others merge its whole value
  const lookupColumns = engineTraits(table.mergeConfig.engine).newerReplacesOlder ? [...table.mergeConfig.sequenceFields] : undefined
  const keepsOneRecord = engineTraits(table.mergeConfig.engine).keepsOneRecord

  try {
    for (const step of steps) {
      if (step.kind === 'upgrade') {
        const e = entryOf(step.file)
        deletes.push(e)
        adds.push({ ...e, kind: FileKind.ADD, file: { ...e.file, level: step.outputLevel } })
        upgraded++
        continue
      }
      // the runs come newest first; the merge takes sources oldest first (the later source
      // wins a tie of sequence numbers), as the read path orders them (orderFiles)
      const changelogStep = changelogLookup && step.runs.some((run) => run.some((f) => f.level === 0))
      const tracker = changelogStep ? new LookupChangelog(table.mergeConfig, opts.changelogRowDeduplicate) : null
      const sources = [...step.runs].reverse().map((run) => {
        for (const f of run) rowsIn += f.rowCount
        // level 0's records are marked for the changelog (a run of a step may join files of several levels)
        return readRun(table, io, dir, run, dvsPromise, opts.ioMaxConcurrentRequests, undefined, tracker ? (kvs) => tracker.level0(kvs) : undefined)
      })
      for (const run of step.runs) for (const f of run) deletes.push(entryOf(f))
      // older levels not rewritten by this job, newest first, for deletion-vector lookups
      // (a pick is a newest-first prefix of the runs, so every run it leaves is older and
      // sits above the output level)
      const stepFiles = step.runs.flat()
      const fromKey = stepFiles.reduce((min, f) => (keyCmp(f.minKey, min) < 0 ? f.minKey : min), stepFiles[0].minKey)
      const lookupRuns = lookup || changelogStep
        ? levels
            .levelSortedRuns()
            .filter((r) => r.level > step.outputLevel && !r.run.files.some((f) => inputNames.has(f.name)))
        : []
      // a step that writes changelog merges by rows (the columnar merge does not track a key's inputs)
      const choice = changelogStep ? { path: 'row' as const } : chooseMergePath(table.mergeConfig, req.mergePath)
      // the changelog needs the whole old row, not only the fields that decide the merge
      const lookups = choice.path === 'row' ? lookupRuns.map((r) => new LevelLookup(table, io, dir, r.run.files, dvsPromise, changelogStep ? undefined : lookupColumns, fromKey)) : []
      let changelogWriter: DataFileWriter | null = null
      const flushChangelog = async () => {
        if (!changelogWriter || changelogWriter.rowCount === 0) return
        const { bytes, stats } = changelogWriter.finish()
        const fileName = namer.next(CHANGELOG_FILE_PREFIX, '.parquet')
        written.push(`${dir}/${fileName}`)
        await uploads.put(`${dir}/${fileName}`, bytes)
        // Paimon writes a compaction's changelog files at its output level, source COMPACT
        changelog.push({ kind: FileKind.ADD, partition: req.partition, bucket: req.bucket, totalBuckets: opts.bucket, file: dataFileMeta(view, fileName, bytes.length, stats, step.outputLevel, 1) })
        changelogWriter = null
      }
      let writer: DataFileWriter | null = null
      const flush = async () => {
        if (!writer || writer.rowCount === 0) return
        const done = writer
        const { bytes, stats } = done.finish()
        const fileName = namer.next(opts.dataFilePrefix, '.parquet')
        written.push(`${dir}/${fileName}`)
        // the merge goes on while the file uploads; the commit waits for every upload; once
        // the upload has settled, the writer's buffer serves a later writer
        await uploads.put(`${dir}/${fileName}`, bytes, () => done.release())
        adds.push({
          kind: FileKind.ADD,
          partition: req.partition,
          bucket: req.bucket,
          totalBuckets: opts.bucket,
          file: dataFileMeta(view, fileName, bytes.length, stats, step.outputLevel, 1),
        })
        rowsOut += stats.rowCount
        writer = null
      }
      // records taken up from level 0 of a lookup table meet Paimon's lookup merge, as in
      // Paimon's writer at their commit (createLookupMergeFunction)
      const fromLevel0 = lookup && step.runs.some((run) => run.some((f) => f.level === 0))
      const stepMerge = () => (fromLevel0 ? createLookupMergeFunction(table.mergeConfig) : createMergeFunction(table.mergeConfig))
      // a step writes about what it reads, at most a target-size file at a time
      const stepBytes = step.runs.reduce((n, run) => run.reduce((m, f) => m + Number(entryOf(f).file.fileSize), n), 0)
      const newWriter = () => newDataFileWriter(view, { expectedBytes: Math.min(stepBytes, opts.targetFileSize), compressionThread })
      if (choice.path === 'columnar') {
        // the same merge as below, without a record object per row: column batches in, a
        // permutation merged, columns gathered and written (lib/lsm/columnar-merge.ts)
        columnarSteps++
        const runs = [...step.runs].reverse().map((run) => readRunColumnar(table, io, dir, run, dvsPromise, opts.ioMaxConcurrentRequests))
        const engine = choice.engine
        const columnarLookups = lookupRuns.map((r) => columnarLookupLevel(table, io, dir, r.run.files, dvsPromise, lookupColumns, fromKey))
        const onSuperseded = (file: string, position: number) => {
          let m = marks.get(file)
          if (!m) marks.set(file, (m = []))
          m.push(position)
          marked++
        }
        const mergeOpts = {
          keyTypes: view.keyTypes,
          cfg: table.mergeConfig,
          engine,
          // an engine that folds merges with the row path's own merge function
          mergeFunction: engine.keeps === 'fold' ? stepMerge() : undefined,
          recordOrder: seqCmp,
          dropDelete: step.dropDelete,
          lookupLevels: columnarLookups.map((l) => l.files),
          lookupStart: columnarLookups.map((l) => l.startAt),
          onSuperseded,
        }
        await mergeColumnarRuns(runs, mergeOpts, async (batch) => {
          for (let from = 0; from < batch.rows; ) {
            const w = (writer ??= newWriter())
            from = w.writeColumns(batch, from, batch.rows, opts.targetFileSize)
            if (w.estimatedSize >= opts.targetFileSize) await flush()
          }
        })
        await flush()
        continue
      }
      const mf = stepMerge()
      const merging = tracker ? tracker.track(stepMerge()) : stepMerge()
      for await (const batch of mergeSortedRuns(sources, { keyComparator: keyCmp, sequenceComparator: seqCmp, mergeFunction: merging })) {
        for (let kv of batch) {
          const inputs = tracker?.take(kv)
          /** the key's records in the older levels this step does not rewrite */
          const hits: KeyValue[] = []
          /** what the step writes for the key (null: nothing) */
          let out: KeyValue | null = kv
          /** the key's value after the job, for the changelog; undefined: computed from the levels */
          let after: KeyValue | null | undefined
          if (lookups.length && lookup) {
            let old: { kv: KeyValue; file: string; pos: number } | null = null
            for (const l of lookups) {
              old = await l.find(kv.key)
              if (old) break
            }
            if (old) {
              hits.push(old.kv)
              const group = [old.kv, kv].sort(seqCmp)
              mf.reset()
              for (const r of group) mf.add(r)
              const merged = mf.result()
              if (merged && keepsOneRecord && merged.seq === old.kv.seq && merged.kind === old.kv.kind) {
                // the merge kept the older record whole (deduplicate's higher number,
                // first-row): it stays, nothing is written. An engine that folds values
                // (aggregation, partial-update) always writes its merge, even when the rising
                // record's sequence number is the lower one (docs/design.md "Sequence numbers")
                out = null
                after = old.kv
              } else {
                let m = marks.get(old.file)
                if (!m) marks.set(old.file, (m = []))
                m.push(old.pos)
                marked++
                out = merged
              }
            }
            // deletion vectors mark the older row: the step's output is the key's value
            if (after === undefined) after = out
          } else if (lookups.length) {
            // without deletion vectors the older levels stay as they are: only the changelog looks
            for (const l of lookups) {
              const hit = await l.find(kv.key)
              if (hit) hits.push(hit.kv)
            }
          }
          if (tracker && inputs?.containsLevel0) {
            const changes = tracker.changes([...inputs.high, ...hits], after !== undefined ? after : tracker.merged([...hits, kv]))
            for (const c of changes) {
              changelogWriter ??= newWriter()
              changelogWriter.write(c)
            }
            if (changelogWriter && changelogWriter.estimatedSize >= opts.targetFileSize) await flushChangelog()
          }
          if (!out) continue
          kv = out
          if (step.dropDelete && isRetract(kv.kind)) continue
          writer ??= newWriter()
          writer.write(kv)
          if (writer.estimatedSize >= opts.targetFileSize) await flush()
        }
      }
      await flush()
      await flushChangelog()
    }

    // the bucket's deletion vectors after this job: rewritten files drop theirs, marked
    // files gain bits; one new index file holds them all (one per bucket per change)
    let indexReplacements: { partition: Uint8Array; bucket: number; entries: IndexManifestEntry[]; indexType: string }[] | undefined
    if (opts.deletionVectors) {
      const deletedNames = new Set(deletes.map((d) => d.file.fileName))
      const upgradedNames = new Set(adds.filter((a) => deletedNames.has(a.file.fileName)).map((a) => a.file.fileName))
      const dvsNow = await dvsPromise
      const next = new Map<string, DeletionVector>()
      for (const [name, dv] of dvsNow) if (!deletedNames.has(name) || upgradedNames.has(name)) next.set(name, dv)
      for (const [name, positions] of marks) {
        const add = deletionVectorOf(positions.sort((a, b) => a - b), opts.bitmap64)
        const cur = next.get(name)
        next.set(name, cur ? cur.merge(add) : add)
      }
      const changed = marks.size > 0 || [...dvsNow.keys()].some((n) => !next.has(n))
      if (changed) {
        const entries: IndexManifestEntry[] = []
        const sorted = new Map([...next].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
        for (const { bytes, metas } of writeDeletionVectorFiles(sorted, opts.bitmap64, opts.dvIndexFileTargetSize)) {
          const fileName = namer.next('index-')
          const key = indexFileKey(table, { fileName, partition: req.partition, bucket: req.bucket, externalPath: null }, () => dir)
          written.push(key)
          // independent of the last data files' uploads: it goes up beside them
          await uploads.put(key, bytes)
          entries.push({
            kind: FileKind.ADD,
            partition: req.partition,
            bucket: req.bucket,
            indexType: DELETION_VECTORS_INDEX,
            fileName,
            fileSize: BigInt(bytes.length),
            rowCount: BigInt(metas.length),
            dvRanges: metas,
            externalPath: null,
          })
        }
        indexReplacements = [{ partition: req.partition, bucket: req.bucket, entries, indexType: DELETION_VECTORS_INDEX }]
      }
    }

    await uploads.done()
    await req.beforeCommit?.()
    commitStarted = true
    // the conflict checks as data (lib/commit/conflicts.ts): a file that carries a vector in
    // the new index must still be live, and the bucket's index must be the one it was built on
    const added = new Set(adds.map((a) => a.file.fileName))
    const requireLive = new Set<string>()
    for (const r of indexReplacements ?? []) for (const e of r.entries) for (const d of e.dvRanges ?? []) if (!added.has(d.dataFileName)) requireLive.add(d.dataFileName)
    const expectIndex: ExpectedIndex[] = opts.deletionVectors
      ? [{ partition: req.partition, bucket: req.bucket, indexType: DELETION_VECTORS_INDEX, fileNames: (dvIndex ?? []).map((e) => e.fileName) }]
      : []
    const result = await (req.committer ?? table.committer).commit({
      kind: 'COMPACT',
      adds,
      deletes,
      indexReplacements,
      ...(changelog.length ? { changelog } : {}),
      commitUser,
      commitIdentifier: BATCH_COMMIT_IDENTIFIER,
      baseSnapshotId,
      requireLive: [...requireLive],
      expectIndex,
      partitionStats: (entries) => partitionStatsOf(view, entries),
      schemaId: view.schema.id,
      maxRetries: opts.commitMaxRetries,
    })
    return {
      snapshotId: result.snapshotId, baseSnapshotId, inputFiles: unit.files.length, outputFiles: adds.length - upgraded, upgradedFiles: upgraded,
      rowsIn, rowsOut, rowsDeletedByVector: marked, outputLevel: unit.outputLevel, needsMore, backPressure, retries: result.retries, columnarSteps,
    }
  } catch (e) {
    // A commit that threw may still have landed: its snapshot write was applied and only
    // the reply was lost (or a store-level retry then saw its own snapshot and reported a
    // lost race, which ends in a conflict on the next attempt). Its output is then live, so
    // it must not be deleted; found, the compaction succeeded. The output is deleted only
    // when nothing was handed to a committer, or the committer says the request can never
    // land (a queued commit that was not confirmed may still land later); otherwise it is
    // left to orphan cleanup rather than risk deleting live data.
    // an upload still in flight would land after the cleanup below deleted its key
    await uploads.settled()
    const key = commitKeyOf({ kind: 'COMPACT', commitUser, commitIdentifier: BATCH_COMMIT_IDENTIFIER })
    const landed = commitStarted ? await table.landed.find(key, baseSnapshotId, await table.snapshots.latestId()).catch(() => undefined) : null
    const never = !commitStarted || (e instanceof CommitConflictError && e.landsNever)
    if (landed === null && never) await Promise.all(written.map((k) => table.store.delete(k).catch(() => undefined)))
    if (typeof landed === 'number') {
      return {
        snapshotId: landed, baseSnapshotId, inputFiles: unit.files.length, outputFiles: adds.length - upgraded, upgradedFiles: upgraded,
        rowsIn, rowsOut, rowsDeletedByVector: marked, outputLevel: unit.outputLevel, needsMore, backPressure, retries: 0, columnarSteps,
      }
    }
    throw e
  }
}
