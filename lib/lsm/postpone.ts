// Postpone compaction (bucket -2): a partition's postponed files are replayed in order, their
// rows numbered afresh above the partition's buckets, routed to buckets by the bucket key's
// hash over the partition's bucket count, and written as one level-0 file per bucket; one
// COMPACT commit deletes the postponed files and adds the new ones. The protocol, the order
// and the bucket count: docs/design.md "Postpone buckets".

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { bucketFunction } from '../format/bucket.ts'
import { rowComparator } from '../format/compare.ts'
import { POSTPONE_BUCKET } from '../format/partition-path.ts'
import { BATCH_COMMIT_IDENTIFIER, type Committer, commitUserFor } from '../commit/committer.ts'
import { bucketDirOf, dataFileKey } from '../handle/bucket-state.ts'
import { filteredScope } from '../manifest/bucket-scope.ts'
import { hex } from '../manifest/identifiers.ts'
import { createMergeFunction, mergeEqualKeys } from '../merge/merge-function.ts'
import { sequenceComparator } from '../merge/sequence-order.ts'
import { byteSourceOf } from '../store/byte-source.ts'
import { mapBounded } from '../store/bounded.ts'
import { openRecordFile } from '../table/evolution.ts'
import { dataFileMeta, newDataFileWriter, partitionStatsOf } from '../table/file-meta.ts'
import { FileNamer } from '../table/paths.ts'
import { CommitConflictError, RefusedError } from '../errors.ts'
import { type KeyValue, type ManifestEntry, type Value, FileKind } from '../types.ts'
import type { CompactBucketResult, CompactionContext } from './compact/context.ts'

export interface PostponeRequest {
  /** the partition's serialized BinaryRow */
  partition: Uint8Array
  /** cap on postponed files one job takes (default `compaction.max-input-files`); the rest wait for a follow-up */
  maxInputFiles?: number
  /** where the COMPACT commit goes; default the table's direct committer */
  committer?: Committer
  commitUser?: string
  /** test hook: runs after the new files are written, before the commit */
  beforeCommit?: () => Promise<void> | void
}

export interface PostponeResult {
  /** the COMPACT snapshot, or null when the partition had no postponed file */
  snapshotId: number | null
  /** the snapshot the job read */
  baseSnapshotId: number
  /** the partition's bucket count (its buckets' own, else postpone.default-bucket-num) */
  bucketCount: number
  inputFiles: number
  rowsIn: number
  rowsOut: number
  /** the buckets that got a level-0 file */
  buckets: number[]
  /** postponed files left for a follow-up (the input cap) */
  needsMore: boolean
  retries: number
}

/** A postpone compaction's result in a bucket compaction's terms (the job's and the compact command's report). */
export function asCompactBucketResult(r: PostponeResult): CompactBucketResult {
  return {
    snapshotId: r.snapshotId,
    baseSnapshotId: r.baseSnapshotId,
    inputFiles: r.inputFiles,
    outputFiles: r.buckets.length,
    upgradedFiles: 0,
    rowsIn: r.rowsIn,
    rowsOut: r.rowsOut,
    rowsDeletedByVector: 0,
    outputLevel: r.snapshotId === null ? null : 0,
    needsMore: r.needsMore,
    backPressure: false,
    retries: r.retries,
  }
}

/**
 * Where a postponed file stands in the replay: Strata's files by their sequence numbers (its
 * writer's clock in ms shifted 20 bits, raised above the postponed files live at the batch's
 * start), Paimon's (numbered -1) by their creation time shifted the same way.
 */
export function replayKey(e: ManifestEntry): bigint {
  const f = e.file
  if (f.minSequenceNumber >= 0n) return f.minSequenceNumber
  return (f.creationTime ?? 0n) << 20n
}

/** The partition's postponed files in replay order (landing order breaks ties). */
export function replayOrder(postponed: ManifestEntry[]): ManifestEntry[] {
  return postponed
    .map((e, i) => ({ e, i, k: replayKey(e) }))
    .sort((a, b) => (a.k < b.k ? -1 : a.k > b.k ? 1 : a.i - b.i))
    .map((x) => x.e)
}

/**
 * The oldest files of the replay order one job takes: at most `maxFiles`, and once it has one,
 * no more than `maxBytes` (target-file-size) of them, since the job holds their rows in memory.
 */
export function takeInput(ordered: ManifestEntry[], maxFiles: number, maxBytes: number): ManifestEntry[] {
  let bytes = 0
  let n = 0
  while (n < ordered.length && n < maxFiles) {
    const size = Number(ordered[n].file.fileSize)
    if (n > 0 && bytes + size > maxBytes) break
    bytes += size
    n++
  }
  return ordered.slice(0, n)
}

/** The bucket count of a partition whose live files in real buckets are `real`, else `fallback` (postpone.default-bucket-num). */
export function partitionBucketCount(real: ManifestEntry[], fallback: number, where: string): number {
  let count: number | null = null
  for (const e of real) {
    if (e.totalBuckets < 1) continue
    if (count !== null && count !== e.totalBuckets) {
      throw new RefusedError(`${where}: files of the partition record bucket counts ${count} and ${e.totalBuckets} (_TOTAL_BUCKETS); expected one count per partition, as Paimon's postpone compaction does`)
    }
    count = e.totalBuckets
  }
  return count ?? fallback
}

/** The partition's live files: postponed ones (landing order) and those in real buckets. */
async function partitionFiles(table: CompactionContext, snapshot: Parameters<CompactionContext['manifests']['liveEntries']>[0], partition: Uint8Array): Promise<{ postponed: ManifestEntry[]; real: ManifestEntry[] }> {
  const view = table.view
  const values = deserializeBinaryRow(view.partitionFields.map((f) => f.type), partition)
  const id = hex(partition)
  const entries = await table.manifests.liveEntries(snapshot, filteredScope(view, null, values, (p) => hex(p) === id))
  return { postponed: entries.filter((e) => e.bucket === POSTPONE_BUCKET), real: entries.filter((e) => e.bucket >= 0) }
}

/** The rows of the files, in replay order, numbered from `base` on. */
async function replayRows(table: CompactionContext, files: ManifestEntry[], dir: string, base: bigint): Promise<KeyValue[]> {
  const ahead = table.view.options.ioMaxConcurrentRequests
  const readers = await mapBounded(files, ahead, async (e) => {
    // Paimon's postponed files (numbered -1) hold rows in arrival order, not sorted by key: the
    // reader's checks against the manifest entry (key order, key range) would refuse them
    const expect = e.file.minSequenceNumber >= 0n ? e.file : undefined
    const src = byteSourceOf(table.store, dataFileKey(table, dir, e.file), Number(e.file.fileSize), expect)
    const out: KeyValue[] = []
    const reader = await openRecordFile(table, e.file.fileName, e.file.schemaId, src)
    for await (const batch of reader.batches()) for (const kv of batch) out.push(kv)
    return out
  })
  const rows: KeyValue[] = []
  let seq = base
  for (const list of readers) for (const kv of list) rows.push({ ...kv, seq: seq++ })
  return rows
}

/** Each bucket's rows sorted and merged as a writer's flush merges them, as one level-0 file. */
async function writeBuckets(table: CompactionContext, partition: Uint8Array, bucketCount: number, byBucket: Map<number, KeyValue[]>, written: string[]): Promise<ManifestEntry[]> {
  const view = table.view
  const keyCmp = rowComparator(view.keyTypes)
  const seqCmp = sequenceComparator(table.mergeConfig)
  const namer = new FileNamer()
  const adds = await mapBounded([...byBucket.entries()], view.options.ioMaxConcurrentRequests, async ([bucket, kvs]) => {
    kvs.sort((a, b) => keyCmp(a.key, b.key) || seqCmp(a, b))
    const mf = createMergeFunction(table.mergeConfig)
    const writer = newDataFileWriter(view)
    mergeEqualKeys(kvs, keyCmp, mf, (kv) => writer.write(kv))
    if (writer.rowCount === 0) return null
    const { bytes, stats } = writer.finish()
    const fileName = namer.next(view.options.dataFilePrefix, '.parquet')
    const key = `${bucketDirOf(table, partition, bucket).path}/${fileName}`
    written.push(key)
    await table.store.put(key, bytes)
    const entry: ManifestEntry = { kind: FileKind.ADD, partition, bucket, totalBuckets: bucketCount, file: dataFileMeta(view, fileName, bytes.length, stats, 0, 0) }
    return entry
  })
  return adds.filter((e): e is ManifestEntry => e !== null)
}

/**
 * Compacts a partition's postponed files into its buckets (see the file comment). Nothing
 * to do (no postponed file) lands nothing. A failure deletes what the job wrote unless its
 * commit may still land (then orphan cleanup takes it).
 */
export async function compactPostponed(table: CompactionContext, req: PostponeRequest): Promise<PostponeResult> {
  const view = table.view
  if (view.options.bucket !== POSTPONE_BUCKET) throw new RefusedError(`postpone compaction: table ${table.uri} has 'bucket' ${view.options.bucket}, expected -2 (postpone bucket mode)`)
  const snapshot = await table.snapshots.latest()
  const where = `postpone compaction of ${bucketDirOf(table, req.partition, POSTPONE_BUCKET).path}`
  const empty: PostponeResult = { snapshotId: null, baseSnapshotId: snapshot?.id ?? 0, bucketCount: 0, inputFiles: 0, rowsIn: 0, rowsOut: 0, buckets: [], needsMore: false, retries: 0 }
  if (!snapshot) return empty
  const { postponed, real } = await partitionFiles(table, snapshot, req.partition)
  if (postponed.length === 0) return empty
  const bucketCount = partitionBucketCount(real, view.options.postponeDefaultBucketNum, where)
  const taken = takeInput(replayOrder(postponed), Math.max(1, req.maxInputFiles ?? view.options.compactionMaxInputFiles), view.options.targetFileSize)
  // numbered above every row of the partition's buckets: postponed rows are newer than all of them
  let base = 0n
  for (const e of real) if (e.file.maxSequenceNumber + 1n > base) base = e.file.maxSequenceNumber + 1n
  const rows = await replayRows(table, taken, bucketDirOf(table, req.partition, POSTPONE_BUCKET).path, base)
  const bucketOf = bucketFunction(view.bucketKeyTypes, bucketCount)
  const bki = view.bucketKeyIndexes
  const byBucket = new Map<number, KeyValue[]>()
  const bucketKey: Value[] = new Array(bki.length)
  for (const kv of rows) {
    for (let j = 0; j < bki.length; j++) bucketKey[j] = kv.value[bki[j]]
    const b = bucketOf(bucketKey)
    const list = byBucket.get(b)
    if (list) list.push(kv)
    else byBucket.set(b, [kv])
  }
  const written: string[] = []
  let commitStarted = false
  try {
    const adds = await writeBuckets(table, req.partition, bucketCount, byBucket, written)
    await req.beforeCommit?.()
    commitStarted = true
    const result = await (req.committer ?? table.committer).commit({
      kind: 'COMPACT',
      adds,
      deletes: taken.map((e) => ({ ...e, kind: FileKind.DELETE })),
      commitUser: req.commitUser ?? commitUserFor(view.options.commitUserPrefix),
      commitIdentifier: BATCH_COMMIT_IDENTIFIER,
      baseSnapshotId: snapshot.id,
      partitionStats: (entries) => partitionStatsOf(view, entries),
      schemaId: view.schema.id,
      maxRetries: view.options.commitMaxRetries,
    })
    return {
      snapshotId: result.snapshotId,
      baseSnapshotId: snapshot.id,
      bucketCount,
      inputFiles: taken.length,
      rowsIn: rows.length,
      rowsOut: adds.reduce((n, e) => n + Number(e.file.rowCount), 0),
      buckets: adds.map((e) => e.bucket).sort((a, b) => a - b),
      needsMore: taken.length < postponed.length,
      retries: result.retries,
    }
  } catch (e) {
    const never = !commitStarted || (e instanceof CommitConflictError && e.landsNever)
    if (never) await Promise.all(written.map((k) => table.store.delete(k).catch(() => undefined)))
    throw e
  }
}
