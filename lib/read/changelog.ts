// The changelog one snapshot carries (docs/format.md "Changelog files"): the entries of the
// manifests its `changelogManifestList` names and the records of the files they add, with
// their row kinds. A building block for incremental reads, kept apart from the batch read.

import { type BucketLayout, type TableRoot, bucketDirOf, dataFileKey } from '../handle/bucket-state.ts'
import { mapBounded } from '../store/bounded.ts'
import { type EvolvingTable, openRecordFile } from '../table/evolution.ts'
import type { ManifestIO } from '../manifest/manifests.ts'
import type { ObjectStore } from '../store/object-store.ts'
import type { SchemaView } from '../table/schema.ts'
import { type ManifestEntry, type Row, type RowKind, type Snapshot, FileKind } from '../types.ts'
import { byteSourceOf } from '../store/byte-source.ts'

/** What reading a snapshot's changelog needs: its manifests, and the store, root and schema its files are read with (the Table handle is one). */
export interface ChangelogContext extends TableRoot, BucketLayout, EvolvingTable {
  readonly store: ObjectStore
  readonly view: SchemaView
  readonly manifests: Pick<ManifestIO, 'readList' | 'readManifest'>
}

export interface ChangelogRecord {
  partition: Uint8Array
  bucket: number
  /** the change: +I, -U, +U or -D */
  kind: RowKind
  seq: bigint
  /** the row's fields in schema order */
  row: Row
}

/** The changelog files `snapshot` adds (its changelog manifests' ADD entries, in manifest order); none when it carries no changelog. */
export async function changelogEntries(table: Pick<ChangelogContext, 'manifests'>, snapshot: Snapshot): Promise<ManifestEntry[]> {
  if (!snapshot.changelogManifestList) return []
  const metas = await table.manifests.readList(snapshot.changelogManifestList)
  const manifests = await Promise.all(metas.map((m) => table.manifests.readManifest(m.fileName)))
  return manifests.flat().filter((e) => e.kind === FileKind.ADD)
}

/**
 * The records of `snapshot`'s changelog files: file by file in manifest order, each file's
 * records in its order (by key, a key's changes in the order they happened).
 */
export async function changelogRecords(table: ChangelogContext, snapshot: Snapshot): Promise<ChangelogRecord[]> {
  const entries = await changelogEntries(table, snapshot)
  const perFile = await mapBounded(entries, table.view.options.ioMaxConcurrentRequests, async (e) => {
    const key = dataFileKey(table, bucketDirOf(table, e.partition, e.bucket).path, e.file)
    // a file of an older schema is mapped by field id (lib/table/evolution.ts)
    const reader = await openRecordFile(table, e.file.fileName, e.file.schemaId, byteSourceOf(table.store, key, Number(e.file.fileSize)))
    const out: ChangelogRecord[] = []
    for await (const batch of reader.batches()) for (const kv of batch) out.push({ partition: e.partition, bucket: e.bucket, kind: kv.kind, seq: kv.seq, row: kv.value })
    return out
  })
  return perFile.flat()
}
