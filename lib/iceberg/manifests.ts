// Iceberg manifests and manifest lists in Avro (Iceberg's format/spec.md "Manifests",
// "Manifest Lists"; Paimon's iceberg/manifest/). Every field carries its Iceberg `field-id`,
// which Iceberg's readers resolve by, and the writer schema is embedded as given
// (lib/format/avro.ts). Optional fields Strata does not fill (column sizes, NaN counts, split
// offsets, sort order) are left out of the schema: a reader projects them as null.

import { readAvroFile, writeAvroFile, type ManifestCompression } from '../format/avro.ts'
import type { DataField, Value } from '../types.ts'
import { type FieldMetric, type FileMetrics, type PartitionSummary, partitionSummaries } from './bounds.ts'
import { partitionAvroType, partitionAvroValue } from './schema.ts'

/** `status` of a manifest entry. */
export const Status = { EXISTING: 0, ADDED: 1, DELETED: 2 } as const
/** `content` of a data file entry: data, or position deletes (a deletion vector). */
export const Content = { DATA: 0, POSITION_DELETES: 1 } as const

export interface IcebergDataFile {
  content: number
  /** full URI */
  path: string
  format: 'PARQUET' | 'AVRO' | 'PUFFIN'
  partition: Value[]
  recordCount: bigint
  fileSize: bigint
  /** v3: the first row id; null for a file added by this manifest (inherited) and for deletes */
  firstRowId: bigint | null
  /** v3 deletion vector: the data file it applies to, and the blob's place in `path` */
  referencedDataFile: string | null
  contentOffset: bigint | null
  contentSize: bigint | null
  /** column metrics of a data file (value counts, null counts, bounds), when its statistics give them */
  metrics: FileMetrics | null
}

export interface IcebergEntry {
  status: number
  snapshotId: bigint
  sequenceNumber: bigint
  fileSequenceNumber: bigint
  file: IcebergDataFile
}

/** One record of a manifest list. */
export interface IcebergManifestMeta {
  path: string
  length: bigint
  /** 0 data, 1 deletes */
  content: number
  sequenceNumber: bigint
  minSequenceNumber: bigint
  addedSnapshotId: bigint
  addedFiles: number
  existingFiles: number
  deletedFiles: number
  addedRows: bigint
  existingRows: bigint
  deletedRows: bigint
  /** v3 data manifests: assigned when first listed, kept after */
  firstRowId: bigint | null
  /** one per partition field, or null (no summaries written) */
  partitions: PartitionSummary[] | null
}

const opt = (type: unknown, id: number, name: string) => ({ name, type: ['null', type], default: null, 'field-id': id })
const req = (type: unknown, id: number, name: string) => ({ name, type, 'field-id': id })

/** Iceberg's map with int keys in Avro: an array of key/value records (logicalType map). */
const intMap = (keyId: number, valueId: number, value: string) => ({
  type: 'array',
  logicalType: 'map',
  items: { type: 'record', name: `k${keyId}_v${valueId}`, fields: [req('int', keyId, 'key'), req(value, valueId, 'value')] },
})

const metricOut = <T>(m: FieldMetric<T> | undefined) => (m ? m.map(([key, value]) => ({ key, value })) : null)
const metricIn = <T>(m: { key: number; value: T }[] | null | undefined): FieldMetric<T> | null => (m ? m.map((x) => [x.key, x.value] as [number, T]) : null)

/** The manifest entry schema (Iceberg's ManifestEntry / DataFile field ids). */
function manifestEntrySchema(partitionFields: DataField[], formatVersion: number): object {
  const v3 = formatVersion >= 3
  return {
    type: 'record',
    name: 'manifest_entry',
    fields: [
      req('int', 0, 'status'),
      opt('long', 1, 'snapshot_id'),
      opt('long', 3, 'sequence_number'),
      opt('long', 4, 'file_sequence_number'),
      req(
        {
          type: 'record',
          name: 'r2',
          fields: [
            req('int', 134, 'content'),
            req('string', 100, 'file_path'),
            req('string', 101, 'file_format'),
            req(partitionAvroType(partitionFields), 102, 'partition'),
            req('long', 103, 'record_count'),
            req('long', 104, 'file_size_in_bytes'),
            opt(intMap(119, 120, 'long'), 109, 'value_counts'),
            opt(intMap(121, 122, 'long'), 110, 'null_value_counts'),
            opt(intMap(126, 127, 'bytes'), 125, 'lower_bounds'),
            opt(intMap(129, 130, 'bytes'), 128, 'upper_bounds'),
            ...(v3
              ? [opt('long', 142, 'first_row_id'), opt('string', 143, 'referenced_data_file'), opt('long', 144, 'content_offset'), opt('long', 145, 'content_size_in_bytes')]
              : []),
          ],
        },
        2,
        'data_file',
      ),
    ],
  }
}

/** The manifest list's added, existing and deleted file counts; `legacy` spells them as Iceberg 1.4 did. */
const fileCountNames = (legacy: boolean) => (legacy ? ['added_data_files_count', 'existing_data_files_count', 'deleted_data_files_count'] : ['added_files_count', 'existing_files_count', 'deleted_files_count'])

/** The manifest list schema. */
function manifestListSchema(formatVersion: number, legacy: boolean): object {
  const files = fileCountNames(legacy)
  return {
    type: 'record',
    name: 'manifest_file',
    fields: [
      req('string', 500, 'manifest_path'),
      req('long', 501, 'manifest_length'),
      req('int', 502, 'partition_spec_id'),
      req('int', 517, 'content'),
      req('long', 515, 'sequence_number'),
      req('long', 516, 'min_sequence_number'),
      req('long', 503, 'added_snapshot_id'),
      req('int', 504, files[0]),
      req('int', 505, files[1]),
      req('int', 506, files[2]),
      req('long', 512, 'added_rows_count'),
      req('long', 513, 'existing_rows_count'),
      req('long', 514, 'deleted_rows_count'),
      opt(
        {
          type: 'array',
          items: {
            type: 'record',
            name: 'r508',
            fields: [req('boolean', 509, 'contains_null'), opt('boolean', 518, 'contains_nan'), opt('bytes', 510, 'lower_bound'), opt('bytes', 511, 'upper_bound')],
          },
          'element-id': 508,
        },
        507,
        'partitions',
      ),
      ...(formatVersion >= 3 ? [opt('long', 520, 'first_row_id')] : []),
    ],
  }
}

export function writeIcebergManifest(entries: IcebergEntry[], partitionFields: DataField[], formatVersion: number, compression: ManifestCompression): Uint8Array {
  const v3 = formatVersion >= 3
  const records = entries.map((e) => ({
    status: e.status,
    snapshot_id: e.snapshotId,
    sequence_number: e.sequenceNumber,
    file_sequence_number: e.fileSequenceNumber,
    data_file: {
      content: e.file.content,
      file_path: e.file.path,
      file_format: e.file.format,
      partition: partitionAvroValue(partitionFields, e.file.partition),
      record_count: e.file.recordCount,
      file_size_in_bytes: e.file.fileSize,
      value_counts: metricOut(e.file.metrics?.valueCounts),
      null_value_counts: metricOut(e.file.metrics?.nullCounts),
      lower_bounds: metricOut(e.file.metrics?.lower),
      upper_bounds: metricOut(e.file.metrics?.upper),
      ...(v3
        ? { first_row_id: e.file.firstRowId, referenced_data_file: e.file.referencedDataFile, content_offset: e.file.contentOffset, content_size_in_bytes: e.file.contentSize }
        : {}),
    },
  }))
  return writeAvroFile(manifestEntrySchema(partitionFields, formatVersion), records, compression)
}

/**
 * The entries of a manifest Strata wrote, with `first_row_id` inherited as Iceberg's readers
 * inherit it (spec "First Row ID Inheritance"): a data file without one gets the manifest's
 * plus the record counts of the files before it that had none.
 */
export function readIcebergManifest(bytes: Uint8Array, partitionFields: DataField[], manifestFirstRowId: bigint | null): IcebergEntry[] {
  let next = manifestFirstRowId
  return readAvroFile(bytes).records.map((r: any) => {
    const d = r.data_file
    let firstRowId: bigint | null = d.first_row_id ?? null
    if (firstRowId === null && next !== null && d.content === Content.DATA) {
      firstRowId = next
      next += d.record_count
    }
    return {
      status: r.status,
      snapshotId: r.snapshot_id,
      sequenceNumber: r.sequence_number,
      fileSequenceNumber: r.file_sequence_number,
      file: {
        content: d.content,
        path: d.file_path,
        format: d.file_format,
        partition: partitionFields.map((f) => {
          const v = d.partition[f.name]
          return v === null || v === undefined ? null : f.type.root === 'BIGINT' || f.type.root === 'TIMESTAMP' ? v : typeof v === 'bigint' ? Number(v) : v
        }),
        recordCount: d.record_count,
        fileSize: d.file_size_in_bytes,
        firstRowId,
        referencedDataFile: d.referenced_data_file ?? null,
        contentOffset: d.content_offset ?? null,
        contentSize: d.content_size_in_bytes ?? null,
        metrics: d.value_counts || d.lower_bounds
          ? { valueCounts: metricIn(d.value_counts) ?? [], nullCounts: metricIn(d.null_value_counts) ?? [], lower: metricIn(d.lower_bounds) ?? [], upper: metricIn(d.upper_bounds) ?? [] }
          : null,
      },
    }
  })
}

export function writeIcebergManifestList(metas: IcebergManifestMeta[], formatVersion: number, legacy: boolean, compression: ManifestCompression): Uint8Array {
  const [a, e, d] = fileCountNames(legacy)
  const records = metas.map((m) => ({
    manifest_path: m.path,
    manifest_length: m.length,
    partition_spec_id: 0,
    content: m.content,
    sequence_number: m.sequenceNumber,
    min_sequence_number: m.minSequenceNumber,
    added_snapshot_id: m.addedSnapshotId,
    [a]: m.addedFiles,
    [e]: m.existingFiles,
    [d]: m.deletedFiles,
    added_rows_count: m.addedRows,
    existing_rows_count: m.existingRows,
    deleted_rows_count: m.deletedRows,
    partitions: m.partitions?.map((p) => ({ contains_null: p.containsNull, contains_nan: p.containsNan, lower_bound: p.lower, upper_bound: p.upper })) ?? null,
    ...(formatVersion >= 3 ? { first_row_id: m.firstRowId } : {}),
  }))
  return writeAvroFile(manifestListSchema(formatVersion, legacy), records, compression)
}

export function readIcebergManifestList(bytes: Uint8Array): IcebergManifestMeta[] {
  return readAvroFile(bytes).records.map((r: any) => ({
    path: r.manifest_path,
    length: r.manifest_length,
    content: r.content ?? 0,
    sequenceNumber: r.sequence_number,
    minSequenceNumber: r.min_sequence_number,
    addedSnapshotId: r.added_snapshot_id,
    addedFiles: r.added_files_count ?? r.added_data_files_count,
    existingFiles: r.existing_files_count ?? r.existing_data_files_count,
    deletedFiles: r.deleted_files_count ?? r.deleted_data_files_count,
    addedRows: r.added_rows_count,
    existingRows: r.existing_rows_count,
    deletedRows: r.deleted_rows_count,
    firstRowId: r.first_row_id ?? null,
    partitions: r.partitions ? r.partitions.map((p: any) => ({ containsNull: p.contains_null, containsNan: p.contains_nan ?? null, lower: p.lower_bound ?? null, upper: p.upper_bound ?? null })) : null,
  }))
}

/** The list record of a manifest of `entries` written at `snapshotId` (its sequence number). */
export function manifestMetaOf(path: string, length: number, content: number, snapshotId: bigint, entries: IcebergEntry[], partitionFields: DataField[]): IcebergManifestMeta {
  let addedFiles = 0, existingFiles = 0, deletedFiles = 0
  let addedRows = 0n, existingRows = 0n, deletedRows = 0n
  let minSeq: bigint | null = null
  for (const e of entries) {
    if (e.status === Status.ADDED) (addedFiles++, (addedRows += e.file.recordCount))
    else if (e.status === Status.EXISTING) (existingFiles++, (existingRows += e.file.recordCount))
    else (deletedFiles++, (deletedRows += e.file.recordCount))
    if (e.status !== Status.DELETED && (minSeq === null || e.sequenceNumber < minSeq)) minSeq = e.sequenceNumber
  }
  return {
    path,
    length: BigInt(length),
    content,
    sequenceNumber: snapshotId,
    minSequenceNumber: minSeq ?? snapshotId,
    addedSnapshotId: snapshotId,
    addedFiles,
    existingFiles,
    deletedFiles,
    addedRows,
    existingRows,
    deletedRows,
    firstRowId: null,
    partitions: partitionSummaries(partitionFields, entries.map((e) => e.file.partition)),
  }
}
