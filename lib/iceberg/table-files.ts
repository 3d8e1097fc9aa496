// A Paimon table's files as Iceberg sees them (docs/format.md "Iceberg metadata"): which data
// files are visible (format v2: the top level only, since a v2 reader merges nothing;
// v3 with deletion vectors: every level above 0, each file's deletion vector applied), their
// full URIs, and each deletion vector as an Iceberg deletion vector pointing into Paimon's own
// index file (its 64-bit entries are Iceberg's deletion-vector-v1 blobs).

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { DELETION_VECTORS_INDEX } from '../format/deletion-vector.ts'
import { dataFileFormat } from '../format/data-file-open.ts'
import { bucketPath } from '../format/partition-path.ts'
import type { DataField, IndexManifestEntry, ManifestEntry, Value } from '../types.ts'
import { fileMetrics } from './bounds.ts'
import { indexKey } from '../table/paths.ts'
import type { SchemaView } from '../table/schema.ts'
import { Content, type IcebergDataFile } from './manifests.ts'

/** Buckets per group of delete manifests (as Strata's Paimon manifests group them, manifest.bucket-group-size's default). */
const BUCKET_GROUP = 64

/** `k=v/bucket-130` → `k=v/bucket-group-2`. */
function groupOfDir(dir: string): string {
  return dir.replace(/bucket-(\d+)$/, (_, n: string) => `bucket-group-${Math.floor(Number(n) / BUCKET_GROUP)}`)
}

export class TableFiles {
  private readonly partitions = new Map<string, { values: Value[]; dirs: Map<number, string> }>()

  constructor(
    /** the table root's URI (`s3://bucket/prefix/db.db/t`, `file:///…`) */
    private readonly tableUri: string,
    private readonly view: SchemaView,
    private readonly formatVersion: number,
  ) {}

  /**
   * Which levels a reader sees, as a version's summary records it (`visible-levels`): a
   * version listed under another rule (num-levels or deletion vectors altered since) is not
   * built on.
   */
  get visibleLevels(): string {
    return this.withDeletionVectors ? 'above 0' : `${this.view.options.numLevels - 1}`
  }

  /** Whether Iceberg readers get the deletion vectors (format version 3 and the table has them). */
  get withDeletionVectors(): boolean {
    return this.formatVersion >= 3 && this.view.options.deletionVectors
  }

  /** Whether a reader of this format version sees a file at `level`. */
  visible(level: number): boolean {
    return this.withDeletionVectors ? level > 0 : level === this.view.options.numLevels - 1
  }

  private partition(bytes: Uint8Array, bucket: number): { values: Value[]; dir: string } {
    const k = Buffer.from(bytes).toString('hex')
    let p = this.partitions.get(k)
    if (!p) this.partitions.set(k, (p = { values: deserializeBinaryRow(this.view.partitionFields.map((f) => f.type), bytes), dirs: new Map() }))
    let dir = p.dirs.get(bucket)
    if (dir === undefined) p.dirs.set(bucket, (dir = bucketPath(this.view.partitionFields, p.values, bucket, this.view.options.partitionDefaultName)))
    return { values: p.values, dir }
  }

  /** The full URI of a data file: its external path, or `<table>/<partition dirs>/bucket-N/<name>`. */
  dataPath(e: ManifestEntry): string {
    return e.file.externalPath ?? `${this.tableUri}/${this.partition(e.partition, e.bucket).dir}/${e.file.fileName}`
  }

  /**
   * A data file's entry; `schemaFields` are the fields of the schema it was written under,
   * which its value statistics cover (or those `_VALUE_STATS_COLS` names).
   */
  dataFile(e: ManifestEntry, schemaFields: DataField[]): IcebergDataFile {
    const cols = e.file.valueStatsCols
    const statsFields = cols ? cols.map((c) => schemaFields.find((f) => f.name === c)).filter((f): f is DataField => f !== undefined) : schemaFields
    return {
      content: Content.DATA,
      path: this.dataPath(e),
      // each file its own format, as Paimon's Iceberg writer records it (an avro table holds both)
      format: dataFileFormat(e.file.fileName) === 'avro' ? 'AVRO' : 'PARQUET',
      partition: this.partition(e.partition, e.bucket).values,
      recordCount: e.file.rowCount,
      fileSize: e.file.fileSize,
      firstRowId: null,
      referencedDataFile: null,
      contentOffset: null,
      contentSize: null,
      metrics: cols && statsFields.length !== cols.length ? null : fileMetrics(statsFields, e.file.valueStats, e.file.rowCount),
    }
  }

  private indexPath(e: IndexManifestEntry): string {
    if (e.externalPath) return e.externalPath
    return `${this.tableUri}/${this.view.options.indexFileInDataFileDir ? `${this.partition(e.partition, e.bucket).dir}/${e.fileName}` : indexKey(e.fileName)}`
  }

  /**
   * The group of a bucket's deletion vectors: its partition directory and the bucket's group of
   * BUCKET_GROUP consecutive buckets. Delete manifests hold one group each, so a compaction
   * rewrites the delete manifests of the groups it touched, not every one.
   */
  groupOf(partition: Uint8Array, bucket: number): string {
    return groupOfDir(this.partition(partition, bucket).dir)
  }

  /** The group of a data file by its location (a deletion vector's `referenced_data_file`); null for one elsewhere. */
  groupOfPath(path: string): string | null {
    const prefix = `${this.tableUri}/`
    if (!path.startsWith(prefix)) return null
    const rel = path.slice(prefix.length)
    return groupOfDir(rel.slice(0, rel.lastIndexOf('/')))
  }

  /**
   * One Iceberg deletion vector per Paimon deletion vector of the index (v3): the blob is the
   * 64-bit entry at its offset, `content_size_in_bytes` its whole length (prefix, magic,
   * bitmap, CRC), `record_count` its cardinality, which Iceberg checks against the blob.
   */
  deletionVectors(index: IndexManifestEntry[]): { group: string; file: IcebergDataFile }[] {
    const out: { group: string; file: IcebergDataFile }[] = []
    for (const e of index) {
      if (e.indexType !== DELETION_VECTORS_INDEX || !e.dvRanges) continue
      const { values, dir } = this.partition(e.partition, e.bucket)
      for (const dv of e.dvRanges) {
        // Iceberg checks a vector's cardinality against record_count; Paimon refuses such a vector too
        if (dv.cardinality === null) throw new Error(`deletion vector of data file ${dv.dataFileName} in index file ${e.fileName} has no cardinality, which an Iceberg deletion vector needs`)
        out.push({ group: groupOfDir(dir), file: {
          content: Content.POSITION_DELETES,
          path: this.indexPath(e),
          format: 'PUFFIN',
          partition: values,
          recordCount: dv.cardinality,
          fileSize: e.fileSize,
          firstRowId: null,
          referencedDataFile: `${this.tableUri}/${dir}/${dv.dataFileName}`,
          contentOffset: BigInt(dv.offset),
          contentSize: BigInt(dv.length),
          metrics: null,
        } })
      }
    }
    return out
  }
}
