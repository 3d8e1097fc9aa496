// What one (partition, bucket) holds at a snapshot: its live data files and, in
// deletion-vector mode, the deletion vectors of those files (from the bucket's index file
// named in the snapshot's index manifest; docs/format.md "Avro manifests" and
// "Deletion-vector index files").

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { type DeletionVector, DELETION_VECTORS_INDEX, deletionVectorReadLength, readDeletionVector } from '../format/deletion-vector.ts'
import { bucketPath } from '../format/partition-path.ts'
import { CorruptFileError, RefusedError } from '../errors.ts'
import { type DataFileMeta, type IndexManifestEntry, type KeyValue, type ManifestEntry, type Row, type Snapshot } from '../types.ts'
import { bucketIdentifier } from '../manifest/identifiers.ts'
import { indexKey } from '../table/paths.ts'
import type { ManifestIO } from '../manifest/manifests.ts'
import type { SchemaView } from '../table/schema.ts'

export interface BucketFiles {
  partition: Uint8Array
  partitionValues: Row
  bucket: number
  /** `k=v/…/bucket-N` */
  path: string
  files: ManifestEntry[]
}

/** The table's root: a file at an external path is read only when it lies under it. */
export interface TableRoot {
  readonly uri: string
}

/** What names a bucket's directory: the partition fields and the table's options. */
export interface BucketLayout {
  readonly view: Pick<SchemaView, 'partitionFields' | 'options'>
}

/** What finds and reads a deletion-vector index file (the table handle is one). */
export interface IndexFiles extends TableRoot, BucketLayout {
  readonly manifests: Pick<ManifestIO, 'readImmutableRange'>
}

/** The deletion-vector index entries of a snapshot, by bucket identifier. */
export async function dvIndexByBucket(table: { readonly manifests: Pick<ManifestIO, 'readIndexManifest'> }, snapshot: Snapshot | null): Promise<Map<string, IndexManifestEntry[]>> {
  const out = new Map<string, IndexManifestEntry[]>()
  if (!snapshot?.indexManifest) return out
  for (const e of await table.manifests.readIndexManifest(snapshot.indexManifest)) {
    if (e.indexType !== DELETION_VECTORS_INDEX) continue
    const id = bucketIdentifier(e.partition, e.bucket)
    const list = out.get(id)
    if (list) list.push(e)
    else out.set(id, [e])
  }
  return out
}

/**
 * Loads the deletion vector of each named data file with one range read per vector, so a
 * reader of one file fetches only that file's vector.
 */
export async function loadDeletionVectors(table: IndexFiles, indexEntries: IndexManifestEntry[] | undefined, only?: Set<string>): Promise<Map<string, DeletionVector>> {
  const out = new Map<string, DeletionVector>()
  if (!indexEntries) return out
  const reads: Promise<void>[] = []
  for (const e of indexEntries) {
    for (const meta of e.dvRanges ?? []) {
      if (only && !only.has(meta.dataFileName)) continue
      reads.push(
        (async () => {
          const key = indexFileKey(table, e)
          const bytes = await table.manifests.readImmutableRange(key, meta.offset, Math.min(Number(e.fileSize), meta.offset + deletionVectorReadLength(meta)))
          try {
            out.set(meta.dataFileName, readDeletionVector(bytes, meta))
          } catch (err) {
            // the decoder names the data file the vector is for, not the index file it is in
            throw new CorruptFileError(key, (err as Error).message, { cause: err })
          }
        })(),
      )
    }
  }
  await Promise.all(reads)
  return out
}

/**
 * The key, relative to the table root, of a file Paimon placed at an external path (a full
 * URI: `data-file.external-paths`). Strata reads only through the table's own store, so a
 * location outside the table directory is refused, naming the option.
 */
export function externalKey(table: TableRoot, uri: string, what: string): string {
  // Paimon writes local paths as `file:/…`, a table's URI is `file:///…`
  const norm = (u: string) => u.replace(/^file:\/\/\//, 'file:/').replace(/\/+$/, '')
  const root = `${norm(table.uri)}/`
  const path = norm(uri)
  if (path.startsWith(root) && !path.slice(root.length).split('/').includes('..')) return path.slice(root.length)
  throw new RefusedError(
    `${what} is stored at the external path ${JSON.stringify(uri)}, outside the table at ${table.uri}: external data paths (option 'data-file.external-paths') are not supported by Strata yet`,
  )
}

/** Where a live data file of the bucket directory `dir` is: `dir/<name>`, or its external path. */
export function dataFileKey(table: TableRoot, dir: string, file: DataFileMeta): string {
  return file.externalPath ? externalKey(table, file.externalPath, `data file ${file.fileName}`) : `${dir}/${file.fileName}`
}

/**
 * Where a deletion-vector index file is: its external path when it has one; in its bucket
 * directory when the table sets `index-file-in-data-file-dir` (Paimon then records no path,
 * the option says where); else under `index/`.
 */
export function indexFileKey(table: TableRoot & BucketLayout, e: Pick<IndexManifestEntry, 'fileName' | 'partition' | 'bucket' | 'externalPath'>, bucketDir = (partition: Uint8Array, bucket: number) => bucketDirOf(table, partition, bucket).path): string {
  if (e.externalPath) return externalKey(table, e.externalPath, `index file ${e.fileName}`)
  return table.view.options.indexFileInDataFileDir ? `${bucketDir(e.partition, e.bucket)}/${e.fileName}` : indexKey(e.fileName)
}

export function bucketDirOf(table: BucketLayout, partition: Uint8Array, bucket: number): { partitionValues: Row; path: string } {
  const view = table.view
  const partitionValues = deserializeBinaryRow(
    view.partitionFields.map((f) => f.type),
    partition,
  )
  return { partitionValues, path: bucketPath(view.partitionFields, partitionValues, bucket, view.options.partitionDefaultName) }
}

/** Live rows of a file with their physical row positions. */
export interface PositionedBatch {
  kvs: KeyValue[]
  positions: number[]
}

/**
 * Drops the rows a deletion vector marks, walking the sorted deleted positions alongside
 * the rows (no per-row membership test), and reports each kept row's physical position.
 */
export async function* livePositioned(batches: AsyncIterable<KeyValue[]>, dv: DeletionVector | undefined): AsyncGenerator<PositionedBatch> {
  const deleted = dv && dv.cardinality > 0 ? dv.sortedPositions() : null
  let next = 0
  let pos = 0
  for await (const batch of batches) {
    const kvs: KeyValue[] = []
    const positions: number[] = []
    for (let i = 0; i < batch.length; i++, pos++) {
      if (deleted !== null && next < deleted.length && deleted[next] === pos) {
        next++
        continue
      }
      kvs.push(batch[i])
      positions.push(pos)
    }
    if (kvs.length) yield { kvs, positions }
  }
}

