// Opening a data file by its format, as Paimon does: a file's format is its name's extension
// (DataFilePathFactory.formatIdentifier, a compression extension such as `.zst` skipped), not
// the table's `file.format`, so one table can hold files of several formats (docs/format.md
// "Data file formats"). Parquet and Avro are read; ORC is refused before any byte is fetched.

import { RefusedError } from '../errors.ts'
import type { ByteSource } from '../store/byte-source.ts'
import type { DataFileLayout } from './data-file-layout.ts'
import { DataFileReader, type DataFileReaderOptions } from './data-file-reader.ts'
import { ColumnarFileReader } from './columnar-reader.ts'
import { AvroDataFileReader } from './avro-data-file.ts'

/** What reads, lookups and the row compaction path use of a data file, whatever its format. */
export type DataFileRecords = Pick<DataFileReader, 'batches' | 'lookup' | 'rowCount'>

/** What the columnar compaction path uses of a data file, whatever its format. */
export type DataFileColumns = Pick<ColumnarFileReader, 'rowGroups'>

/** The file extensions of Paimon's Hadoop compression types (HadoopCompressionType), which come after the format's. */
const COMPRESSION_EXTENSIONS = new Set(['gz', 'bz2', 'deflate', 'snappy', 'lz4', 'zst'])

/**
 * The format of the data file `name` (a file name or key): `avro` for `….avro`, `parquet` for
 * `….parquet` and for any name Paimon gives no other reader Strata has. ORC and Paimon's other
 * formats are refused, naming the file (`where`: its key, when known) and `file.format`.
 */
export function dataFileFormat(name: string, where: string = name): 'parquet' | 'avro' {
  const base = name.slice(name.lastIndexOf('/') + 1)
  const parts = base.split('.')
  let ext = parts.length > 1 ? parts[parts.length - 1].toLowerCase() : ''
  if (COMPRESSION_EXTENSIONS.has(ext) && parts.length > 2) ext = parts[parts.length - 2].toLowerCase()
  if (ext === 'avro') return 'avro'
  if (ext === 'orc') {
    throw new RefusedError(`data file ${where} is an ORC file (file.format 'orc'): Strata reads Parquet and Avro data files only (there is no maintained ORC reader for JavaScript); read this table with Paimon, or rewrite its files as Parquet (Paimon: ALTER TABLE SET ('file.format' = 'parquet'), then a full compaction)`)
  }
  if (['csv', 'json', 'lance', 'blob', 'vector', 'text'].includes(ext)) {
    throw new RefusedError(`data file ${where} has the format '${ext}' (its extension; Paimon's file.format): Strata reads Parquet and Avro data files only`)
  }
  return 'parquet'
}

/** Opens data file `name` (its format from the name) for the row path: records, lookups. */
export async function openDataFileRecords(name: string, src: ByteSource, layout: DataFileLayout, opts?: DataFileReaderOptions): Promise<DataFileRecords> {
  return dataFileFormat(name, src.name) === 'avro' ? AvroDataFileReader.open(src, layout) : DataFileReader.open(src, layout, opts)
}

/** Opens data file `name` (its format from the name) for the columnar compaction path. */
export async function openDataFileColumns(name: string, src: ByteSource, layout: DataFileLayout): Promise<DataFileColumns> {
  return dataFileFormat(name, src.name) === 'avro' ? AvroDataFileReader.open(src, layout) : ColumnarFileReader.open(src, layout)
}
