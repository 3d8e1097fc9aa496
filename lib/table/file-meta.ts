// A table's data files: the writer of a new one, with the table's file options, and its
// DataFileMeta and SimpleStats from the file's decoded statistics (docs/format.md "File statistics").

import { deserializeBinaryRow, serializeBinaryRow } from '../format/binary-row.ts'
import { compareValues } from '../format/compare.ts'
import { type ColumnStats, type DataFileStats } from '../format/data-file-stats.ts'
import { DataFileWriter } from '../format/data-file-writer.ts'
import type { DataFileMeta, DataType, ManifestEntry, SimpleStats, Value } from '../types.ts'
import { withNullable } from '../format/data-type.ts'
import type { SchemaView } from './schema.ts'

function statsOf(types: DataType[], s: ColumnStats): SimpleStats {
  const nullable = types.map((t) => withNullable(t, true))
  return {
    minValues: serializeBinaryRow(nullable, s.min),
    maxValues: serializeBinaryRow(nullable, s.max),
    nullCounts: s.nullCounts.map((n) => (n === null ? null : BigInt(n))),
  }
}

/**
 * A writer of a new data file of the table: its layout, `file.compression` and
 * `file.compression.zstd-level` (`expectedBytes`, `compressionThread`: DataFileWriterOptions).
 */
export function newDataFileWriter(view: SchemaView, opts: { expectedBytes?: number; compressionThread?: boolean } = {}): DataFileWriter {
  return new DataFileWriter(
    { keyFields: view.keyFields, valueFields: view.fields },
    { compression: view.options.fileCompression, zstdLevel: view.options.fileCompressionZstdLevel, expectedBytes: opts.expectedBytes, compressionThread: opts.compressionThread },
  )
}

export function dataFileMeta(
  view: SchemaView,
  fileName: string,
  fileSize: number,
  stats: DataFileStats,
  level: number,
  fileSource: 0 | 1,
): DataFileMeta {
  return {
    fileName,
    fileSize: BigInt(fileSize),
    rowCount: BigInt(stats.rowCount),
    minKey: serializeBinaryRow(view.keyTypes, stats.minKey),
    maxKey: serializeBinaryRow(view.keyTypes, stats.maxKey),
    keyStats: statsOf(view.keyTypes, stats.keyStats),
    valueStats: statsOf(view.fieldTypes, stats.valueStats),
    minSequenceNumber: stats.minSequenceNumber,
    maxSequenceNumber: stats.maxSequenceNumber,
    schemaId: BigInt(view.schema.id),
    level,
    extraFiles: [],
    creationTime: BigInt(Date.now()),
    deleteRowCount: BigInt(stats.deleteRowCount),
    embeddedIndex: null,
    fileSource,
    valueStatsCols: null,
    externalPath: null,
    firstRowId: null,
    writeCols: null,
  }
}

/** Partition statistics over manifest entries, for ManifestFileMeta._PARTITION_STATS. */
export function partitionStatsOf(view: SchemaView, entries: ManifestEntry[]): SimpleStats {
  const types = view.partitionFields.map((f) => withNullable(f.type, true))
  const n = types.length
  const min: Value[] = new Array(n).fill(null)
  const max: Value[] = new Array(n).fill(null)
  const nulls = new Array<number>(n).fill(0)
  // one collect per entry, as Paimon's manifest writer does, so null counts count entries
  const cache = new Map<string, Value[]>()
  for (const e of entries) {
    const k = Buffer.from(e.partition).toString('hex')
    let values = cache.get(k)
    if (!values) cache.set(k, (values = deserializeBinaryRow(types, e.partition)))
        for (let i = 0; i < n; i++) {
      const v = values[i]
      if (v === null) {
        nulls[i]++
        continue
      }
      if (min[i] === null || compareValues(types[i], v, min[i]) < 0) min[i] = v
      if (max[i] === null || compareValues(types[i], v, max[i]) > 0) max[i] = v
    }
  }
  return {
    minValues: serializeBinaryRow(types, min),
    maxValues: serializeBinaryRow(types, max),
    nullCounts: nulls.map((x) => BigInt(x)),
  }
}

export function decodeKey(view: SchemaView, serialized: Uint8Array): Value[] {
  return deserializeBinaryRow(view.keyTypes, serialized)
}
