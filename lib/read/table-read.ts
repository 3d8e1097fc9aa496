// Reads of a snapshot: plan splits (one per partition and bucket), prune by partition,
// bucket and key range, merge each bucket's sorted runs, drop retracts, project columns.
// Data files are opened ahead of the read, at most `io.max-concurrent-requests` requests at
// once (FileOpener), so a read does not wait one round trip per file.

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { bucketOf } from '../format/bucket.ts'
import { rowComparator } from '../format/compare.ts'
import { byteSourceOf } from '../store/byte-source.ts'
import { bucketPath } from '../format/partition-path.ts'
import { compareLevel0 } from '../lsm/levels.ts'
import { mergeSortedRuns } from '../lsm/merge-reader.ts'
import { readsSkipLevel0, valueColumnsForMerge } from '../merge/engines.ts'
import { sequenceComparator } from '../merge/sequence-order.ts'
import { createMergeFunction } from '../merge/merge-function.ts'
import { BoundedStore, mapBounded, startedAhead } from '../store/bounded.ts'
import type { ObjectStore } from '../store/object-store.ts'
import type { DeletionVector } from '../format/deletion-vector.ts'
import { NotFoundError, StrataInputError } from '../errors.ts'
import { type IndexManifestEntry, type KeyValue, type ManifestEntry, type Row, type Snapshot, type Value, FileKind, isRetract } from '../types.ts'
import { type BucketScope, filteredScope } from '../manifest/bucket-scope.ts'
import { independentGroups } from './manifest-chunks.ts'
import { bucketIdentifier, fileIdentifier } from '../manifest/identifiers.ts'
import { type IndexFiles, dataFileKey, dvIndexByBucket, loadDeletionVectors } from '../handle/bucket-state.ts'
import { decodeKey } from '../table/file-meta.ts'
import { valueFromJson } from '../table/json-values.ts'
import { columnIndexes, type SchemaView } from '../table/schema.ts'
import type { TableStore } from '../handle/table.ts'
import type { SnapshotManager } from '../manifest/snapshot-manager.ts'
import type { FooterCache } from '../format/data-file-reader.ts'
import type { ManifestIO } from '../manifest/manifests.ts'
import type { MergeEngineConfig } from '../merge/merge-types.ts'
import { type EvolvingTable, type RecordFileReader, openRecordFile } from '../table/evolution.ts'
import { requireTag } from '../handle/tags.ts'

/**
 * What reading a table's data files needs: its store and root, schema and merge engine, the
 * footer cache, how a file of another schema maps (EvolvingTable), and the manifests' index
 * entries and ranges (deletion vectors). The Table handle (lib/handle/table.ts) is one.
 */
export interface ReadContext extends IndexFiles, EvolvingTable {
  readonly store: ObjectStore
  readonly view: SchemaView
  readonly mergeConfig: MergeEngineConfig
  readonly footers: FooterCache
  readonly manifests: Pick<ManifestIO, 'readIndexManifest' | 'readImmutableRange'>
}

/** What planning a scan uses besides the file reads: snapshots by id, live manifest entries, the table's tags. */
export interface ScanContext extends ReadContext, TableStore {
  readonly snapshots: Pick<SnapshotManager, 'snapshot' | 'latest' | 'earliestId' | 'latestId'>
  readonly manifests: Pick<ManifestIO, 'readIndexManifest' | 'readImmutableRange' | 'liveEntries' | 'dataManifests' | 'readManifest'>
}

export interface Split {
  partition: Uint8Array
  partitionValues: Row
  bucket: number
  /** `k=v/…/bucket-N` */
  path: string
  files: ManifestEntry[]
}

/** Equality filter on partition and primary-key fields, values as in input JSON. */
export type KeyFilter = Record<string, unknown>

export interface ScanOptions {
  snapshotId?: number
  /** read the snapshot this tag pins (lib/handle/tags.ts), even when the snapshot itself has expired; not with snapshotId */
  tag?: string
  /** value columns to return, in this order; default all */
  columns?: string[]
  filter?: KeyFilter
  /** filled in as the read goes: what it opened and whether it merged */
  stats?: ReadStats
  /**
   * open every file the read will read (footer, row count against the manifest) and load its
   * deletion vectors before the first row, so that a missing, truncated or garbled footer
   * fails the read before it yields anything (`checkFiles`)
   */
  checkFilesFirst?: boolean
}

/** What a read touched, for tests and metrics. */
export interface ReadStats {
  /** data files opened, by level */
  filesOpened: number[]
  /** splits read through a key merge (merge-on-read) */
  mergedSplits: number
  /** splits read file by file with deletion vectors and no merge */
  deletionVectorSplits: number
  /** rows handed to the Parquet decoder */
  rowsDecoded: number
  /** rows not decoded: their row group, or a run of pages, is wholly deleted by its vector */
  rowsSkipped: number
  /** row groups not read at all for that reason */
  rowGroupsSkipped: number
}

export function newReadStats(): ReadStats {
  return { filesOpened: [], mergedSplits: 0, deletionVectorSplits: 0, rowsDecoded: 0, rowsSkipped: 0, rowGroupsSkipped: 0 }
}

export interface ScanPlan {
  snapshot: Snapshot | null
  splits: Split[]
  columns: number[]
  /** deletion-vector index entries by bucket identifier (deletion-vector tables) */
  dvIndex: Map<string, IndexManifestEntry[]>
}

export interface CompiledFilter {
  partition: Map<number, Value>
  key: Map<number, Value>
  /** the bucket when every bucket-key field is fixed */
  bucket: number | null
  matches(row: Row): boolean
}

export function compileFilter(view: SchemaView, filter: KeyFilter | undefined): CompiledFilter {
  const partition = new Map<number, Value>()
  const key = new Map<number, Value>()
  const all = new Map<number, Value>()
  for (const [name, json] of Object.entries(filter ?? {})) {
    const i = view.fieldIndex.get(name)
    if (i === undefined) throw new StrataInputError(`filter: unknown column '${name}' (columns: ${view.fields.map((f) => f.name).join(', ')})`)
    const v = valueFromJson(view.fields[i], json, 'filter')
    if (view.partitionIndexes.includes(i)) partition.set(i, v)
    else if (view.keyIndexes.includes(i)) key.set(i, v)
    else throw new StrataInputError(`filter: column '${name}' is neither a partition key nor a primary key field; filters apply to [${view.schema.primaryKeys.join(', ')}]`)
    all.set(i, v)
  }
  const bucketFixed = view.bucketKeyIndexes.every((i) => key.has(i))
  // postpone bucket mode (-2): a partition's bucket count is its own, so no pruning by bucket
  const bucket = bucketFixed && key.size > 0 && view.options.bucket > 0 ? bucketOf(view.bucketKeyTypes, view.bucketKeyIndexes.map((i) => key.get(i)!), view.options.bucket) : null
  const cmp = rowComparator(view.fieldTypes.filter((_, i) => all.has(i)))
  const idx = [...all.keys()].sort((a, b) => a - b)
  const want = idx.map((i) => all.get(i)!)
  return {
    partition,
    key,
    bucket,
    matches: (row) => idx.length === 0 || cmp(idx.map((i) => row[i]), want) === 0,
  }
}

/** Prefix of the trimmed key fixed by the filter, for min/max-key file pruning. */
function keyPrefix(view: SchemaView, f: CompiledFilter): Value[] {
  const prefix: Value[] = []
  for (const i of view.keyIndexes) {
    if (!f.key.has(i)) break
    prefix.push(f.key.get(i)!)
  }
  return prefix
}

/** What planning a scan settles before reading manifests: the snapshot, what the filter keeps, how entries become splits. */
interface ScanTarget {
  snapshot: Snapshot | null
  columns: number[]
  /** which manifests may hold wanted entries, and which entries are wanted */
  scope: BucketScope
  dvIndex: Promise<Map<string, IndexManifestEntry[]>>
  /** live entries (of whole buckets) as splits, in the entries' order, pruned by the filter's key prefix */
  splitsOf(entries: Iterable<ManifestEntry>): Split[]
}

async function scanTarget(table: ScanContext, opts: ScanOptions): Promise<ScanTarget> {
  const view = table.view
  const columns = columnIndexes(view, opts.columns)
  const filter = compileFilter(view, opts.filter)
  if (opts.tag !== undefined && opts.snapshotId !== undefined) {
    throw new StrataInputError(`--tag ${JSON.stringify(opts.tag)} and --snapshot ${opts.snapshotId}: expected one of them (a tag names its snapshot)`)
  }
  const snapshot =
    opts.tag !== undefined
      ? (await requireTag(table, opts.tag)).snapshot
      : opts.snapshotId !== undefined
        ? await table.snapshots.snapshot(opts.snapshotId)
        : await table.snapshots.latest()
  if (opts.snapshotId !== undefined && !snapshot) {
    const earliest = await table.snapshots.earliestId()
    const latest = await table.snapshots.latestId()
    throw new NotFoundError(`--snapshot ${opts.snapshotId}: no such snapshot (retained snapshots: ${earliest === 0 ? 'none' : `${earliest}..${latest}`})`)
  }
  const partTypes = view.partitionFields.map((f) => f.type)
  // partition values by their bytes, for the splits of the run being planned (a streamed
  // plan clears it between runs, so it holds one run's partitions)
  const partCache = new Map<string, Row>()
  const partitionValuesOf = (bytes: Uint8Array): Row => {
    const k = Buffer.from(bytes).toString('hex')
    let v = partCache.get(k)
    if (!v) partCache.set(k, (v = deserializeBinaryRow(partTypes, bytes)))
    return v
  }
  const partFilterIdx = [...filter.partition.keys()].map((i) => view.partitionIndexes.indexOf(i))
  const partFilterVals = [...filter.partition.values()]
  const partCmp = partFilterIdx.map((pi) => rowComparator([partTypes[pi]]))
  // per partition field, the value the filter wants (undefined: any), so manifests whose
  // partition statistics or bucket range exclude it are not opened
  const wantedPartition: (Value | undefined)[] = view.partitionFields.map(() => undefined)
  partFilterIdx.forEach((pi, j) => (wantedPartition[pi] = partFilterVals[j] as Value))
  const scope = filteredScope(view, filter.bucket, wantedPartition, (p, b) => {
    // bucket-postpone holds rows not yet visible: readers see real buckets only (Paimon's onlyReadRealBuckets)
    if (b < 0) return false
    if (filter.bucket !== null && b !== filter.bucket) return false
    if (partFilterIdx.length === 0) return true
    const pv = partitionValuesOf(p)
    return partFilterIdx.every((pi, j) => partCmp[j]([pv[pi]], [partFilterVals[j]]) === 0)
  })
  // the data manifests and the index manifest are independent reads of the snapshot: at once
  const dvIndex = snapshot && view.options.deletionVectors ? dvIndexByBucket(table, snapshot) : Promise.resolve(new Map<string, IndexManifestEntry[]>())
  dvIndex.catch(() => undefined) // awaited by the caller; a failure first elsewhere must not leave it unhandled
  const prefix = keyPrefix(view, filter)
  const prefixCmp = rowComparator(view.keyTypes.slice(0, prefix.length))
  const splitsOf = (entries: Iterable<ManifestEntry>): Split[] => {
    const splits = new Map<string, Split>()
    for (const e of entries) {
      if (prefix.length > 0) {
        const min = decodeKey(view, e.file.minKey).slice(0, prefix.length)
        const max = decodeKey(view, e.file.maxKey).slice(0, prefix.length)
        if (prefixCmp(prefix, min) < 0 || prefixCmp(prefix, max) > 0) continue
      }
      const id = bucketIdentifier(e.partition, e.bucket)
      let s = splits.get(id)
      if (!s) {
        const partitionValues = partitionValuesOf(e.partition)
        s = {
          partition: e.partition,
          partitionValues,
          bucket: e.bucket,
          path: bucketPath(view.partitionFields, partitionValues, e.bucket, view.options.partitionDefaultName),
          files: [],
        }
        splits.set(id, s)
      }
      s.files.push(e)
    }
    partCache.clear()
    return [...splits.values()]
  }
  return { snapshot, columns, scope, dvIndex, splitsOf }
}

export async function planScan(table: ScanContext, opts: ScanOptions = {}): Promise<ScanPlan> {
  const t = await scanTarget(table, opts)
  if (!t.snapshot) return { snapshot: null, splits: [], columns: t.columns, dvIndex: new Map() }
  const [entries, dvIndex] = await Promise.all([table.manifests.liveEntries(t.snapshot, t.scope), t.dvIndex])
  return { snapshot: t.snapshot, splits: t.splitsOf(entries), columns: t.columns, dvIndex }
}

/** A plan whose splits come a group of manifests at a time (planScanChunks). */
export interface ScanPlanChunks extends Omit<ScanPlan, 'splits'> {
  /** the plan's splits, in planScan's order, in batches */
  splits: AsyncGenerator<Split[]>
}

/** A file's place in a fold of the whole list: its manifest's index and its own, as one number. */
const placeOf = (manifest: number, entry: number) => manifest * 2 ** 32 + entry

/**
 * planScan without holding the whole plan: the snapshot's manifests fall into groups that
 * share no bucket (lib/read/manifest-chunks.ts), and each group is read, folded and turned
 * into splits only when the splits before it have been taken. Memory is then about one
 * group's entries and splits: a table written by one commit of N partitions, or whose
 * manifests were merged, packs them into manifests of disjoint partition ranges, each its
 * own group (or with the few small manifests of later commits into those partitions).
 *
 * The splits come in planScan's order: a fold of the whole list orders live files by where
 * each was (last) added, and a split comes where its first file does. Groups are read in the
 * order of their first manifest, and a split is handed on once no group still unread can
 * hold a file placed before it (every such file sits at or after that group's first manifest).
 */
export async function planScanChunks(table: ScanContext, opts: ScanOptions = {}): Promise<ScanPlanChunks> {
  const t = await scanTarget(table, opts)
  const empty = async function* (): AsyncGenerator<Split[]> {}
  if (!t.snapshot) return { snapshot: null, splits: empty(), columns: t.columns, dvIndex: new Map() }
  const [metas, dvIndex] = await Promise.all([table.manifests.dataManifests(t.snapshot), t.dvIndex])
  const wanted = metas.filter((m) => t.scope.mayHold(m))
  const groups = independentGroups(wanted, table.view.partitionFields.map((f) => f.type))
  const limit = table.view.options.ioMaxConcurrentRequests
  /** A group's splits by place: its manifests read and folded, keeping where each live file was added. */
  const planGroup = async (group: number[]): Promise<{ place: number; split: Split }[]> => {
    const all = await mapBounded(group, limit, (i) => table.manifests.readManifest(wanted[i].fileName))
    const live = new Map<string, ManifestEntry>()
    const place = new Map<string, number>()
    all.forEach((entries, k) => {
      for (let j = 0; j < entries.length; j++) {
        const e = entries[j]
        if (!t.scope.holds(e.partition, e.bucket)) continue
        const id = fileIdentifier(e)
        if (e.kind !== FileKind.ADD) {
          live.delete(id)
          place.delete(id)
        } else {
          if (!place.has(id)) place.set(id, placeOf(group[k], j))
          live.set(id, e)
        }
      }
    })
    return t.splitsOf(live.values()).map((split) => ({ place: place.get(fileIdentifier(split.files[0]))!, split }))
  }
  /** Splits waiting, with a group's added: those placed before `bound` go on, in place order. */
  const release = (waiting: { place: number; split: Split }[], bound: number) => {
    waiting.sort((a, b) => a.place - b.place)
    const k = waiting.findIndex((w) => w.place >= bound)
    return { ready: (k === -1 ? waiting : waiting.slice(0, k)).map((w) => w.split), waiting: k === -1 ? [] : waiting.slice(k) }
  }
  async function* splits(): AsyncGenerator<Split[]> {
    // splits planned and not handed on yet
    let waiting: { place: number; split: Split }[] = []
    for (let g = 0; g < groups.length; g++) {
      for (const w of await planGroup(groups[g])) waiting.push(w)
      // a group not read yet places its files at or after its first manifest
      let r: ReturnType<typeof release> | null = release(waiting, g + 1 < groups.length ? placeOf(groups[g + 1][0], 0) : Infinity)
      waiting = r.waiting
      if (r.ready.length) yield r.ready
      // a suspended generator keeps its locals: what was handed on must not stay reachable here
      r = null
    }
  }
  return { snapshot: t.snapshot, splits: splits(), columns: t.columns, dvIndex }
}

/** Value columns a merge needs besides the projected ones. */
function valueColumnsToRead(table: Pick<ReadContext, 'view' | 'mergeConfig'>, columns: number[], filter?: KeyFilter): string[] {
  return valueColumnsForMerge(table.mergeConfig, [...columns.map((i) => table.view.fields[i].name), ...Object.keys(filter ?? {})])
}

/**
 * A split's files oldest first, the order mergeSortedRuns takes (on equal sequence numbers
 * the later source wins): higher levels first, deepest first, then level 0 from oldest to
 * newest by compareLevel0 — the same order compaction merges in, so a tie resolves the same
 * way before and after a compaction.
 */
export function orderFiles(files: ManifestEntry[]): ManifestEntry[] {
  const lsm = (e: ManifestEntry) => ({ name: e.file.fileName, maxSequenceNumber: e.file.maxSequenceNumber, minSequenceNumber: e.file.minSequenceNumber, creationTime: e.file.creationTime })
  return [...files].sort((a, b) => {
    if (a.file.level !== b.file.level) return a.file.level === 0 ? 1 : b.file.level === 0 ? -1 : b.file.level - a.file.level
    return a.file.level === 0 ? compareLevel0(lsm(b), lsm(a)) : 0
  })
}

function countOpen(stats: ReadStats | undefined, level: number): void {
  if (!stats) return
  while (stats.filesOpened.length <= level) stats.filesOpened.push(0)
  stats.filesOpened[level]++
}

export async function openFile(table: ReadContext, store: ObjectStore, split: Split, e: ManifestEntry, stats?: ReadStats): Promise<RecordFileReader> {
  countOpen(stats, e.file.level)
  const key = dataFileKey(table, split.path, e.file)
  // a file of an older schema is read in its own layout and mapped by field id (lib/table/evolution.ts)
  return openRecordFile(
    table,
    e.file.fileName,
    e.file.schemaId,
    byteSourceOf(store, key, Number(e.file.fileSize), e.file),
    // the handle's footer cache: a file opened before costs no request to open again
    { footerCache: table.footers, cacheKey: key },
  )
}

/** The files a read of the split opens, in the order it reads them. */
function filesToRead(table: Pick<ReadContext, 'view' | 'mergeConfig'>, split: Split): ManifestEntry[] {
  const { deletionVectors, dvMergeOnRead } = table.view.options
  // a deletion-vector read merges nothing, so its files go in any order; a merge takes them oldest first
  const files = deletionVectors && !dvMergeOnRead ? split.files : orderFiles(split.files)
  // deletion vectors and first-row skip level 0 (first-row's levels above are still merged,
  // which costs nothing when its lookup compactions left each key once)
  return readsSkipLevel0(table.mergeConfig.engine, table.view.options) ? files.filter((e) => e.file.level !== 0) : files
}

/**
 * Opens a plan's data files ahead of the reader. Every split is read file after file (or
 * all its files at once, for a merge), and each open costs a footer GET, so a read that
 * opened each file only when it got to it would wait one round trip per file. This opens
 * files in the order the reads will take them, up to `io.max-concurrent-requests` ahead of
 * the one being read (across splits too), and loads a split's deletion vectors along with
 * its first file. Memory stays bounded: an opened file holds at most its footer read (512
 * KiB, none when its footer came from the handle's footer cache) until it is read. Files
 * opened ahead of a read that stops early (a page) are read for nothing; that is the price
 * of not waiting for them.
 */
export class FileOpener {
  private readonly io: BoundedStore
  private readonly window: number
  /** every file of every split, in read order */
  private readonly queue: { split: Split; entry: ManifestEntry }[] = []
  private readonly firstOf = new Map<Split, number>()
  /** opens started and not yet taken */
  private readonly ahead = new Map<ManifestEntry, Promise<RecordFileReader>>()
  private readonly dvs = new Map<Split, Promise<Map<string, DeletionVector>>>()
  /** queue position of the next file to start opening */
  private next = 0

  constructor(
    private readonly table: ReadContext,
    splits: Split[],
    private readonly dvIndex?: Map<string, IndexManifestEntry[]>,
    private readonly stats?: ReadStats,
    /** the files a read of a split takes, in order: a batch read's by default */
    private readonly select: (split: Split) => ManifestEntry[] = (split) => filesToRead(table, split),
  ) {
    this.window = table.view.options.ioMaxConcurrentRequests
    this.io = new BoundedStore(table.store, this.window)
    for (const split of splits) {
      this.firstOf.set(split, this.queue.length)
      for (const entry of select(split)) this.queue.push({ split, entry })
    }
  }

  /** The split's deletion vectors (empty outside deletion-vector mode), loading them if not yet started. */
  deletionVectors(split: Split): Promise<Map<string, DeletionVector>> {
    let p = this.dvs.get(split)
    if (!p) {
      p = this.table.view.options.deletionVectors
        ? startedAhead(loadDeletionVectors(this.table, this.dvIndex?.get(bucketIdentifier(split.partition, split.bucket))))
        : Promise.resolve(new Map())
      this.dvs.set(split, p)
    }
    return p
  }

  /** The files a read of the split opens, in order. */
  files(split: Split): ManifestEntry[] {
    const from = this.firstOf.get(split)
    if (from === undefined) return this.select(split)
    const out: ManifestEntry[] = []
    for (let i = from; i < this.queue.length && this.queue[i].split === split; i++) out.push(this.queue[i].entry)
    return out
  }

  /** The opened file, started ahead or now; then the window moves on past it. */
  open(split: Split, entry: ManifestEntry): Promise<RecordFileReader> {
    let p = this.ahead.get(entry)
    if (p) this.ahead.delete(entry)
    else {
      // a read that starts further on (a page after a cursor) skips what lies before it
      const at = this.queue.findIndex((q, i) => i >= this.next && q.entry === entry)
      if (at >= 0) this.next = at + 1
      p = this.start(split, entry)
    }
    this.fill()
    return p
  }

  private fill(): void {
    while (this.ahead.size < this.window && this.next < this.queue.length) {
      const { split, entry } = this.queue[this.next++]
      this.ahead.set(entry, startedAhead(this.start(split, entry)))
    }
  }

  private start(split: Split, entry: ManifestEntry): Promise<RecordFileReader> {
    this.deletionVectors(split)
    return openFile(this.table, this.io, split, entry, this.stats)
  }
}

/**
 * Records of one split, retracts included (callers drop them for reads).
 * - Deletion-vector mode: level-0 files are skipped and every other file is read on its
 *   own with its vector applied; no key merge (`deletion-vectors.merge-on-read` merges L0
 *   in instead, for freshness).
 * - Otherwise merge-on-read: a k-way merge of all the bucket's files.
 * Files are opened ahead by `opener` (one over the plan's splits lets a scan open the next
 * split's files while it reads this one); without one, over this split alone.
 */
export async function* readSplitRecords(
  table: ReadContext,
  split: Split,
  valueColumns: string[],
  dvIndex?: Map<string, IndexManifestEntry[]>,
  stats?: ReadStats,
  opener: FileOpener = new FileOpener(table, [split], dvIndex, stats),
): AsyncGenerator<KeyValue[]> {
  const view = table.view
  const { deletionVectors, dvMergeOnRead } = view.options
  const files = opener.files(split)
  const dvs = () => opener.deletionVectors(split)
  if (deletionVectors && !dvMergeOnRead) {
    if (stats) stats.deletionVectorSplits++
    for (const e of files) {
      const reader = await opener.open(split, e)
      // the reader leaves out the rows the vector marks and skips groups and pages it drops whole
      yield* reader.batches({ valueColumns, deleted: (await dvs()).get(e.file.fileName), stats })
    }
    return
  }
  yield* mergeSplit(table, split, valueColumns, opener, stats)
}

/**
 * A k-way merge of the split's files (the opener's choice of them), each a sorted run with
 * its deletion vector applied, by the table's merge function; retracts included.
 */
export function mergeSplit(table: ReadContext, split: Split, valueColumns: string[], opener: FileOpener, stats?: ReadStats): AsyncGenerator<KeyValue[]> {
  if (stats) stats.mergedSplits++
  const sources = opener.files(split).map((e) =>
    (async function* () {
      const reader = await opener.open(split, e)
      yield* reader.batches({ valueColumns, deleted: (await opener.deletionVectors(split)).get(e.file.fileName), stats })
    })(),
  )
  return mergeSortedRuns(sources, {
    keyComparator: rowComparator(table.view.keyTypes),
    sequenceComparator: sequenceComparator(table.mergeConfig),
    mergeFunction: createMergeFunction(table.mergeConfig),
  })
}

/**
 * Opens every data file the plan's reads will read and loads their deletion vectors, at most
 * `io.max-concurrent-requests` at once: a missing or truncated file, a footer that does not
 * parse or whose row count is not the manifest's, a garbled deletion vector, fails here. The
 * footers go to the handle's footer cache, so the read that follows opens them again without
 * a request (while the cache holds them). Damage inside a file's pages shows only when they
 * are decoded, which takes the read itself: the read then fails naming the file.
 */
export async function checkFiles(table: ReadContext, plan: ScanPlan): Promise<void> {
  const io = new BoundedStore(table.store, table.view.options.ioMaxConcurrentRequests)
  const files = plan.splits.flatMap((split) => filesToRead(table, split).map((e) => ({ split, e })))
  const limit = table.view.options.ioMaxConcurrentRequests
  // (the readers and vectors are dropped as soon as made: only the caches keep anything)
  await Promise.all([
    mapBounded(files, limit, async ({ split, e }) => {
      await openFile(table, io, split, e)
    }),
    table.view.options.deletionVectors
      ? mapBounded(plan.splits, limit, async (split) => {
          await loadDeletionVectors(table, plan.dvIndex.get(bucketIdentifier(split.partition, split.bucket)))
        })
      : null,
  ])
}

/** Rows of the snapshot, in (split, key) order, projected to the requested columns. */
export async function* scan(table: ScanContext, opts: ScanOptions = {}): AsyncGenerator<Row[]> {
  // checking every file first takes the whole plan; a read without it plans a group of
  // manifests at a time (planScanChunks), so its memory does not grow with the table
  const plan = opts.checkFilesFirst ? await planScan(table, opts) : await planScanChunks(table, opts)
  if (opts.checkFilesFirst) await checkFiles(table, plan as ScanPlan)
  const filter = compileFilter(table.view, opts.filter)
  const valueColumns = valueColumnsToRead(table, plan.columns, opts.filter)
  const runs = Array.isArray(plan.splits) ? [plan.splits] : plan.splits
  for await (const splits of runs) {
    const opener = new FileOpener(table, splits, plan.dvIndex, opts.stats)
    for (const split of splits) {
      for await (const batch of readSplitRecords(table, split, valueColumns, plan.dvIndex, opts.stats, opener)) {
        const rows: Row[] = []
        for (const kv of batch) {
          if (isRetract(kv.kind) || !filter.matches(kv.value)) continue
          rows.push(plan.columns.map((i) => kv.value[i]))
        }
        if (rows.length) yield rows
      }
    }
  }
}

export async function readAll(table: ScanContext, opts: ScanOptions = {}): Promise<Row[]> {
  const out: Row[] = []
  for await (const rows of scan(table, opts)) for (const r of rows) out.push(r)
  return out
}

/**
 * Point lookup by primary key: touches only the key's bucket and the files whose key range
 * covers it; in each (DataFileReader.lookup), the footer comes from the handle's cache, row
 * groups and key pages are pruned by statistics and the page index, and only the pages that
 * can hold the key and then its row's pages are read (one request for a Strata row group).
 */
export async function lookup(table: ScanContext, key: KeyFilter, opts: { snapshotId?: number; tag?: string; columns?: string[] } = {}): Promise<Row | null> {
  const view = table.view
  for (const k of view.schema.primaryKeys) {
    if (!(k in key)) throw new StrataInputError(`--key: missing primary key field '${k}' (primary key: [${view.schema.primaryKeys.join(', ')}])`)
  }
  for (const k of Object.keys(key)) {
    if (!view.schema.primaryKeys.includes(k)) throw new StrataInputError(`--key: '${k}' is not a primary key field (primary key: [${view.schema.primaryKeys.join(', ')}])`)
  }
  const plan = await planScan(table, { snapshotId: opts.snapshotId, tag: opts.tag, columns: opts.columns, filter: key })
  const valueColumns = valueColumnsToRead(table, plan.columns, key)
  const keyCmp = rowComparator(view.keyTypes)
  const want = view.keyIndexes.map((i) => valueFromJson(view.fields[i], key[view.fields[i].name], '--key'))
  const dvMode = view.options.deletionVectors && !view.options.dvMergeOnRead
  const io = new BoundedStore(table.store, view.options.ioMaxConcurrentRequests)
  for (const split of plan.splits) {
    // merge-on-read: oldest first, so a sequence tie resolves as in scans and compaction
    const files = filesToRead(table, split)
    const names = new Set(files.map((e) => e.file.fileName))
    // the candidate files (those whose key range holds the key, planScan kept only them)
    // are searched at once, each open → find → read the row, with their deletion vectors
    // loading beside: a lookup costs the chain of one file, not of every level it passes
    const dvs = startedAhead(view.options.deletionVectors ? loadDeletionVectors(table, plan.dvIndex.get(bucketIdentifier(split.partition, split.bucket)), names) : Promise.resolve(new Map()))
    const rows = await mapBounded(files, view.options.ioMaxConcurrentRequests, async (e) => {
      // footer from the handle's cache; row groups and key pages pruned by statistics and
      // the page index; a row its deletion vector drops is not read
      const reader = await openFile(table, io, split, e)
      const hit = await reader.lookup(want, keyCmp, {
        valueColumns,
        live: async (pos) => !(await dvs).get(e.file.fileName)?.isDeleted(pos),
      })
      return hit?.record ? [hit.record] : []
    })
    // in deletion-vector mode a key has at most one live row above level 0: the first found
    const found: KeyValue[] = dvMode ? (rows.find((r) => r.length > 0) ?? []) : rows.flat()
    if (found.length === 0) continue
    found.sort(sequenceComparator(table.mergeConfig))
    const mf = createMergeFunction(table.mergeConfig)
    mf.reset()
    for (const kv of found) mf.add(kv)
    const merged = mf.result()
    if (!merged || isRetract(merged.kind)) return null
    return plan.columns.map((i) => merged!.value[i])
  }
  return null
}
