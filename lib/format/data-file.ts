// Data files of primary-key tables: Parquet files of KeyValue records (docs/format.md "Data files").
// Columns, in the order Paimon's Java writer uses (`core:KeyValue.java` `schema`):
//   _KEY_<k> for each trimmed primary-key field, _SEQUENCE_NUMBER, _VALUE_KIND, all table fields.
// Readers (Java, pypaimon, this one) find columns by name, so only the names are load-bearing.
// The writer also collects the per-file statistics a DataFileMeta carries (docs/format.md "File statistics").

import zlib from 'node:zlib'
import { parquetMetadataAsync, parquetRead, parquetSchema } from 'hyparquet'
import type { AsyncBuffer, ColumnData, CompressionCodec, Compressors, FileMetaData, SchemaElement } from 'hyparquet'
import { ByteWriter } from 'hyparquet-writer'
import { CorruptFileError, isRetract, StrataInputError, type DataField, type DataType, type KeyValue, type RowKind, type Value } from '../types.ts'
import { compareDoubles, rowComparator, valueComparator } from './compare.ts'
import { type Column, type ColumnBatch, type TypedColumn, Utf8Column, columnRows, compareByteRanges, concatColumns, isTypedColumn, physicalToValue, valueAt } from './columnar-types.ts'
import { ThreadPageCompressor } from './compression-thread.ts'
import { type ChunkPlan, type EncodedChunk, encodeColumnChunk, placeChunk, planPages, planRanges } from './parquet-encode.ts'
import { InlinePageCompressor, type PageCompressor } from './page-compression.ts'
import { snappyCompressShared } from './snappy.ts'
import { type FooterRowGroup, writeFooter } from './parquet-footer.ts'
import {
  parquetSchemaElement,
  physicalEncoder,
  physicalSizer,
  rawReadElement,
  sameStorage,
  valueDecoder,
  type PhysicalEncoder,
  type ValueDecoder,
} from './parquet-types.ts'
import type { DeletionVector } from './deletion-vector.ts'
import { type ByteRange, type FileIndex, type GroupIndex, type PageLocation, PrefetchedFile, arrayBufferOf, STAT_PARSERS, indexFile, mergeRanges, statKey } from './page-index.ts'
import { type ByteLru, approximateBytes } from './byte-cache.ts'
import { deserializeBinaryRow } from './binary-row.ts'
import { checkPages } from './parquet-decode.ts'
import { DECOMPRESSORS } from './decompressors.ts'
import type { ByteSource, FileExpectation } from '../store/byte-source.ts'

export const KEY_FIELD_PREFIX = '_KEY_'
/** `SpecialFields.KEY_FIELD_ID_START` = Integer.MAX_VALUE / 2; a `_KEY_` column's id is this + the field id. */
export const KEY_FIELD_ID_START = 1073741823
export const SEQUENCE_NUMBER = '_SEQUENCE_NUMBER'
export const SEQUENCE_NUMBER_FIELD_ID = 2147483646
export const VALUE_KIND = '_VALUE_KIND'
export const VALUE_KIND_FIELD_ID = 2147483645
/** Message name of Paimon's Parquet schema (`ParquetSchemaConverter`). */
export const PARQUET_MESSAGE_NAME = 'paimon_schema'
/** Key stats collector of `_KEY_` fields: truncate(128) (`core:utils/StatsCollectorFactories.java`). */
export const KEY_STATS_TRUNCATE = 128
/** Default `metadata.stats-mode` of value fields: truncate(16). */
export const VALUE_STATS_TRUNCATE = 16

export interface DataFileLayout {
  /** trimmed primary-key fields (primary key minus partition keys), in primary-key order */
  keyFields: DataField[]
  /** all table fields in schema order, partition fields included */
  valueFields: DataField[]
}

/** Paimon's `file.compression` values. */
export type FileCompression = 'none' | 'snappy' | 'gzip' | 'zstd' | 'lz4'

/** Statistics of some fields: one entry per covered field; min/max null when unknown. */
export interface ColumnStats {
  min: Value[]
  max: Value[]
  nullCounts: number[]
}

export interface DataFileStats {
  rowCount: number
  /** key of the first row written */
  minKey: Value[]
  /** key of the last row written */
  maxKey: Value[]
  keyStats: ColumnStats
  valueStats: ColumnStats
  minSequenceNumber: bigint
  maxSequenceNumber: bigint
  /** rows whose kind is -U or -D (`_DELETE_ROW_COUNT`) */
  deleteRowCount: number
}

interface ColumnSpec {
  name: string
  fieldId: number
  type: DataType
}

const SEQUENCE_TYPE: DataType = { root: 'BIGINT', nullable: false }
const KIND_TYPE: DataType = { root: 'TINYINT', nullable: false }

function fileColumns(layout: DataFileLayout): ColumnSpec[] {
  return [
    ...layout.keyFields.map((f) => ({ name: KEY_FIELD_PREFIX + f.name, fieldId: f.id + KEY_FIELD_ID_START, type: f.type })),
    { name: SEQUENCE_NUMBER, fieldId: SEQUENCE_NUMBER_FIELD_ID, type: SEQUENCE_TYPE },
    { name: VALUE_KIND, fieldId: VALUE_KIND_FIELD_ID, type: KIND_TYPE },
    ...layout.valueFields.map((f) => ({ name: f.name, fieldId: f.id, type: f.type })),
  ]
}

/** The Parquet schema (flattened SchemaElements, root first) of a data file with this layout. */
export function dataFileSchema(layout: DataFileLayout): SchemaElement[] {
  const columns = fileColumns(layout)
  const names = new Set<string>()
  for (const c of columns) {
    if (names.has(c.name)) throw new StrataInputError(`data file column ${c.name} appears twice; field names must be unique and must not collide with ${KEY_FIELD_PREFIX}*, ${SEQUENCE_NUMBER} or ${VALUE_KIND}`)
    names.add(c.name)
  }
  return [{ name: PARQUET_MESSAGE_NAME, num_children: columns.length }, ...columns.map((c) => parquetSchemaElement(c.name, c.fieldId, c.type))]
}

// ---------------------------------------------------------------------------------------------
// Compression

type Codec = { codec: CompressionCodec; compressors: { [K in CompressionCodec]?: (input: Uint8Array) => Uint8Array } }

type ZstdSync = (input: Uint8Array, options?: { params?: Record<number, number> }) => Uint8Array
const zlibExtra = zlib as unknown as { zstdCompressSync?: ZstdSync; zstdDecompressSync?: ZstdSync; constants: Record<string, number> }

function codecOf(compression: FileCompression, zstdLevel: number): Codec {
  switch (compression) {
    case 'none':
      return { codec: 'UNCOMPRESSED', compressors: {} }
    case 'snappy':
      // (the encoder appends each compressed page before it compresses the next)
      return { codec: 'SNAPPY', compressors: { SNAPPY: snappyCompressShared } }
    case 'gzip':
      return { codec: 'GZIP', compressors: { GZIP: (input) => zlib.gzipSync(input) } }
    case 'zstd': {
      const compress = zlibExtra.zstdCompressSync
      if (typeof compress !== 'function') {
        throw new StrataInputError(`file.compression 'zstd' needs node:zlib zstdCompressSync (Node >= 22.15, e.g. Lambda nodejs22.x); this is Node ${process.versions.node}. Use 'snappy', 'gzip' or 'none'.`)
      }
      // node:zlib keys zstd parameters by zstd.h's ZSTD_c_* numbers (compressionLevel = 100).
      // One frame per page; a level of -1 reaches zstd as its default (3): node:zlib stores
      // parameters in a Uint32Array where 0xFFFFFFFF means "not set" (checked on 22.23).
      const levelKey = zlibExtra.constants.ZSTD_c_compressionLevel ?? 100
      return { codec: 'ZSTD', compressors: { ZSTD: (input) => compress(input, { params: { [levelKey]: zstdLevel } }) } }
    }
    case 'lz4':
      throw new StrataInputError(`file.compression 'lz4' is not supported by Strata's Parquet writer (no LZ4 encoder); use 'zstd', 'snappy', 'gzip' or 'none'`)
    default:
      throw new StrataInputError(`file.compression ${JSON.stringify(compression)} is not one of 'none', 'snappy', 'gzip', 'zstd', 'lz4'`)
  }
}

// ---------------------------------------------------------------------------------------------
// Statistics (docs/format.md "File statistics"; `TruncateSimpleColStatsCollector`)

type Compare = (a: Value, b: Value) => number

/**
 * The order Paimon's stats collectors use: the Java `Comparable` of the internal value, which
 * is the key order of compare.ts (floats by `Double.compare`: -0 < +0, NaN last). Binary
 * values are `byte[]`, which is not Comparable, so Java records no min/max for them: null here.
 */
function statsOrder(type: DataType): Compare | null {
  return type.root === 'BINARY' || type.root === 'VARBINARY' ? null : valueComparator(type)
}

/** First `n` code points of `s`, or null when `s` has no more than `n`. */
function codePointPrefix(s: string, n: number): string | null {
  if (s.length <= n) return null
  let units = 0
  for (let cps = 0; cps < n; cps++) {
    if (units >= s.length) return null
    const c = s.charCodeAt(units)
    units += c >= 0xd800 && c <= 0xdbff && units + 1 < s.length ? 2 : 1
  }
  return units >= s.length ? null : s.slice(0, units)
}

/** Paimon's truncated max: the prefix with its last incrementable code point incremented. */
function truncatedMax(s: string, n: number): string | null {
  const prefix = codePointPrefix(s, n)
  if (prefix === null) return s
  const cps = Array.from(prefix, (c) => c.codePointAt(0)!)
  for (let i = cps.length - 1; i >= 0; i--) {
    let next = cps[i] + 1
    // a surrogate is no character; Java would append one and encode it as '?', below the max
    if (next >= 0xd800 && next <= 0xdfff) next = 0xe000
    if (next <= 0x10ffff) return String.fromCodePoint(...cps.slice(0, i), next)
  }
  return null
}

class ColumnStatsCollector {
  min: Value = null
  max: Value = null
  nullCount = 0
  failed = false
  readonly #order: Compare | null
  readonly #truncate: number | null

  constructor(type: DataType, truncate: number) {
    this.#order = statsOrder(type)
    this.#truncate = type.root === 'CHAR' || type.root === 'VARCHAR' ? truncate : null
  }

  // Same steps as Paimon's collector, so the bounds match a Java writer's for the same rows:
  // compare against the stored (already truncated) bounds, give up on a max that cannot be rounded up.
  collect(v: Value): void {
    if (v === null) {
      this.nullCount++
      return
    }
    const order = this.#order
    if (order === null || this.failed) return
    if (this.min === null || order(v, this.min) < 0) {
      this.min = this.#truncate === null ? v : (codePointPrefix(v as string, this.#truncate) ?? v)
    }
    if (this.max === null || order(v, this.max) > 0) {
      const max = this.#truncate === null ? v : truncatedMax(v as string, this.#truncate)
      if (max === null) this.failed = true
      else this.max = max
    }
  }
}

function statsResult(collectors: ColumnStatsCollector[]): ColumnStats {
  return {
    min: collectors.map((c) => (c.failed ? null : c.min)),
    max: collectors.map((c) => (c.failed ? null : c.max)),
    nullCounts: collectors.map((c) => c.nullCount),
  }
}

/** FLOAT is stored as float32: stats and keys must describe the stored value. */
function storedValue(type: DataType): ((v: Value) => Value) | null {
  return type.root === 'FLOAT' ? (v) => (v === null ? null : Math.fround(v as number)) : null
}

// ---------------------------------------------------------------------------------------------
// Writer

export interface DataFileWriterOptions {
  /** Paimon `file.compression`; Paimon defaults to zstd, which Node 20 cannot encode, so snappy here */
  compression?: FileCompression
  /** Paimon `file.compression.zstd-level`, default 1 */
  zstdLevel?: number
  /** rows per row group (also the bound on rows buffered in memory) */
  rowGroupRows?: number
  /** estimated uncompressed bytes per row group, the other bound on the buffer */
  rowGroupBytes?: number
  /** target uncompressed page size (parquet-java default 1 MiB) */
  pageSize?: number
  /** throw when a key is not strictly greater than the previous one (debugging aid) */
  assertSorted?: boolean
  /**
   * about how large the file will be (a compaction knows its inputs): the output buffer starts
   * at this size (within 1 MiB to 256 MiB) instead of growing by doubling, each doubling a
   * fresh allocation and a copy of everything so far; a guess too large costs address space,
   * not memory, as pages never written are never made resident
   */
  expectedBytes?: number
  /**
   * compress snappy pages on the process's compression thread (lib/format/compression-thread.ts)
   * while the next row group is being written; the file's bytes are the same either way
   */
  compressionThread?: boolean
}

// Row groups are small, about 128 KiB of values before compression (roughly half that in a
// file): a point lookup needs its row's value in every column, Parquet keeps a row group's
// columns apart, and one S3 request reads one range, so a lookup reads from its key's page
// to the end of the row group in one request (DataFileReader.lookup). The cost is a larger
// footer, about 1% of the file, which a table handle caches. Pages of about 8 KiB let the
// page index narrow reads inside a group. docs/format.md "Row groups, pages and the page index".
const DEFAULT_ROW_GROUP_ROWS = 65536
const DEFAULT_ROW_GROUP_BYTES = 128 * 1024
const DEFAULT_PAGE_SIZE = 8 * 1024
/** Bounds of the output buffer's first size (DataFileWriterOptions.expectedBytes). */
const OUTPUT_START_BYTES = 1 << 20
const OUTPUT_START_MAX_BYTES = 256 << 20
/**
 * One spare output buffer: a compaction hands its writer's buffer back (`release`) once the
 * file's upload has settled, and the next writer that fits in it appends into memory already
 * resident instead of faulting fresh pages in (about 1 ms per MB on these machines:
 * docs/benchmarks.md). Only buffers up to SPARE_OUTPUT_MAX_BYTES are kept, so an idle
 * process holds at most that much.
 */
let spareOutput: ArrayBuffer | null = null
const SPARE_OUTPUT_MAX_BYTES = 64 << 20
const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

function positiveInteger(name: string, v: number): number {
  if (!Number.isSafeInteger(v) || v < 1) throw new StrataInputError(`DataFileWriter option ${name}: ${v} is not a positive integer`)
  return v
}

/**
 * Writes one data file. Rows are buffered column by column up to one row group, then encoded
 * into pages, which are compressed and placed in the file when the next row group is encoded
 * (lib/format/page-compression.ts); memory is the output so far plus two row groups. Rows
 * must arrive sorted by key with one row per key (the caller merges); only `assertSorted`
 * checks it.
 */
export class DataFileWriter {
  readonly #layout: DataFileLayout
  readonly #columns: ColumnSpec[]
  readonly #encoders: PhysicalEncoder[]
  readonly #sizers: ((physical: unknown) => number)[]
  readonly #stored: (((v: Value) => Value) | null)[]
  readonly #scratch: unknown[]
  readonly #rowGroupRows: number
  readonly #rowGroupBytes: number
  readonly #pageSize: number
  // grown by doubling; starting at 1 MiB (or the expected size) saves the first doublings' copies
  readonly #out: ByteWriter
  /** the file's Parquet schema and the row groups written so far (for the footer) */
  readonly #schema: SchemaElement[]
  readonly #groups: FooterRowGroup[] = []
  /** the schema element of each column, and the codec its chunks are written with */
  readonly #elements: SchemaElement[]
  readonly #codec: CompressionCodec
  readonly #compressor: PageCompressor
  /**
   * The encoded row group not yet placed in the file (its pages are being compressed), in
   * the compressor's arena `1 - #slot`, placed when the next row group has been encoded into
   * arena `#slot`, or at finish; that other arena is empty when nothing is pending
   */
  #pending: { plans: (ChunkPlan | number)[]; rows: number } | null = null
  #slot: 0 | 1 = 0
  readonly #keyStats: ColumnStatsCollector[]
  readonly #valueStats: ColumnStatsCollector[]
  readonly #keyOrder: ((a: Value[], b: Value[]) => number) | null
  #buffers: unknown[][]
  /** rows buffered by `writeColumns`, as ranges of the caller's columns (then `#buffers` is empty) */
  #segments: { cols: Column[]; from: number; to: number }[] = []
  /** `writeColumns`: physical value → Value per column (null: the same) */
  readonly #toValue: (((p: unknown) => Value) | null)[]
  /** `writeColumns`: the row-group size estimate of a row's fixed-width columns, and the variable-width ones */
  readonly #fixedRowBytes: number
  readonly #variableColumns: number[]
  #buffered = 0
  #bufferedBytes = 0
  #rowCount = 0
  #minKey: Value[] = []
  #maxKey: Value[] = []
  #minSeq = 0n
  #maxSeq = 0n
  #deleteRows = 0
  #finished = false
  #released = false

  constructor(layout: DataFileLayout, opts: DataFileWriterOptions = {}) {
    const {
      compression = 'snappy',
      zstdLevel = 1,
      rowGroupRows = DEFAULT_ROW_GROUP_ROWS,
      rowGroupBytes = DEFAULT_ROW_GROUP_BYTES,
      pageSize = DEFAULT_PAGE_SIZE,
      assertSorted = false,
      expectedBytes = OUTPUT_START_BYTES,
      compressionThread = false,
    } = opts
    if (!(expectedBytes >= 0)) throw new Error(`DataFileWriter: expectedBytes must be a number of bytes, got ${expectedBytes}`)
    const start = Math.min(Math.max(Math.ceil(expectedBytes), OUTPUT_START_BYTES), OUTPUT_START_MAX_BYTES)
    const spare = spareOutput
    if (spare !== null && spare.byteLength >= start) {
      spareOutput = null
      this.#out = new ByteWriter(0)
      this.#out.buffer = spare
      this.#out.view = new DataView(spare)
    } else {
      this.#out = new ByteWriter(start)
    }
    this.#layout = layout
    this.#rowGroupRows = positiveInteger('rowGroupRows', rowGroupRows)
    this.#rowGroupBytes = positiveInteger('rowGroupBytes', rowGroupBytes)
    this.#pageSize = positiveInteger('pageSize', pageSize)
    const schema = dataFileSchema(layout)
    this.#columns = fileColumns(layout)
    this.#encoders = this.#columns.map((c) => physicalEncoder(c.name, c.type))
    this.#sizers = this.#columns.map((c) => physicalSizer(c.type))
    this.#stored = this.#columns.map((c) => storedValue(c.type))
    this.#scratch = new Array(this.#columns.length)
    this.#buffers = this.#columns.map(() => [])
    this.#toValue = this.#columns.map((c) => physicalToValue(c.type))
    const variable = (t: DataType) => t.root === 'CHAR' || t.root === 'VARCHAR' || t.root === 'BINARY' || t.root === 'VARBINARY'
    this.#variableColumns = this.#columns.flatMap((c, i) => (variable(c.type) ? [i] : []))
    this.#fixedRowBytes = this.#columns.reduce((n, c, i) => (variable(c.type) ? n : n + this.#sizers[i](null)), 0)
    this.#keyStats = layout.keyFields.map((f) => new ColumnStatsCollector(f.type, KEY_STATS_TRUNCATE))
    this.#valueStats = layout.valueFields.map((f) => new ColumnStatsCollector(f.type, VALUE_STATS_TRUNCATE))
    this.#keyOrder = assertSorted ? rowComparator(layout.keyFields.map((f) => f.type)) : null
    const { codec, compressors } = codecOf(compression, zstdLevel)
    this.#elements = schema.slice(1)
    this.#codec = codec
    const compress = codec === 'UNCOMPRESSED' ? null : compressors[codec]!
    this.#compressor = compressionThread && codec === 'SNAPPY' ? ThreadPageCompressor.take() : new InlinePageCompressor(compress)
    this.#schema = schema
    this.#out.appendUint32(0x31524150) // "PAR1"
  }

  get rowCount(): number {
    return this.#rowCount
  }

  /**
   * Placed bytes so far, the row group waiting to be placed (its pages before compression) and
   * an estimate of the buffered rows: the same whichever compressor the writer has.
   */
  get estimatedSize(): number {
    return this.#placedOrPending() + this.#bufferedBytes
  }

  write(kv: KeyValue): void {
    if (this.#finished) throw new Error('DataFileWriter.write after finish')
    if (this.#segments.length) this.#segmentsToBuffers()
    const { keyFields, valueFields } = this.#layout
    const nk = keyFields.length
    const nv = valueFields.length
    if (!Array.isArray(kv.key) || kv.key.length !== nk) {
      throw new StrataInputError(`KeyValue.key: expected ${nk} values (${keyFields.map((f) => f.name).join(', ')}), got ${Array.isArray(kv.key) ? kv.key.length : typeof kv.key}`)
    }
    if (!Array.isArray(kv.value) || kv.value.length !== nv) {
      throw new StrataInputError(`KeyValue.value: expected ${nv} values (${valueFields.map((f) => f.name).join(', ')}), got ${Array.isArray(kv.value) ? kv.value.length : typeof kv.value}`)
    }
    const seq = kv.seq
    if (typeof seq !== 'bigint' || seq < INT64_MIN || seq > INT64_MAX) {
      throw new StrataInputError(`${SEQUENCE_NUMBER}: value ${String(seq)} is not a bigint in the int64 range`)
    }
    const kind = kv.kind
    if (kind !== 0 && kind !== 1 && kind !== 2 && kind !== 3) {
      throw new StrataInputError(`${VALUE_KIND}: value ${String(kind)} is not a RowKind (0 +I, 1 -U, 2 +U, 3 -D)`)
    }
    // encode the whole row before buffering any of it, so a rejected row leaves no trace
    const enc = this.#encoders
    const s = this.#scratch
    for (let i = 0; i < nk; i++) s[i] = enc[i](kv.key[i])
    s[nk] = seq
    s[nk + 1] = kind
    for (let j = 0; j < nv; j++) s[nk + 2 + j] = enc[nk + 2 + j](kv.value[j])

    const key = this.#storedKey(kv.key)
    if (this.#keyOrder !== null && this.#rowCount > 0 && this.#keyOrder(this.#maxKey, key) >= 0) {
      throw new Error(`DataFileWriter: key ${describeKey(key)} does not follow ${describeKey(this.#maxKey)}; rows must be sorted by key, one row per key`)
    }
    const buffers = this.#buffers
    const sizers = this.#sizers
    let bytes = 0
    for (let c = 0; c < s.length; c++) {
      buffers[c].push(s[c])
      bytes += sizers[c](s[c])
    }
    this.#bufferedBytes += bytes
    const stored = this.#stored
    for (let i = 0; i < nk; i++) this.#keyStats[i].collect(key[i])
    for (let j = 0; j < nv; j++) {
      const toStored = stored[nk + 2 + j]
      this.#valueStats[j].collect(toStored === null ? kv.value[j] : toStored(kv.value[j]))
    }
    if (this.#rowCount === 0) {
      this.#minKey = key
      this.#minSeq = seq
      this.#maxSeq = seq
    } else {
      if (seq < this.#minSeq) this.#minSeq = seq
      if (seq > this.#maxSeq) this.#maxSeq = seq
    }
    this.#maxKey = key
    if (isRetract(kind as RowKind)) this.#deleteRows++
    this.#rowCount++
    this.#buffered++
    if (this.#buffered >= this.#rowGroupRows || this.#bufferedBytes >= this.#rowGroupBytes) this.#flushRowGroup()
  }

  /**
   * Writes rows [from, to) of a column batch (lib/format/columnar-types.ts: the file's
   * columns in order, physical values) as `write` would write them one at a time: the same
   * row groups, statistics and encoded bytes. Stops after the first row at which
   * `estimatedSize` reaches `stopAtSize` (where a caller that rolls files at a target size
   * checks after every `write`) and returns the index after the last row written. The values
   * are not checked one by one as `write` checks them: the caller hands values
   * `physicalEncoder` accepts, sorted by key (lib/format/columnar-reader.ts reads them so).
   */
  writeColumns(batch: ColumnBatch, from = 0, to = batch.rows, stopAtSize = Infinity): number {
    if (this.#finished) throw new Error('DataFileWriter.writeColumns after finish')
    const cols = batch.columns
    const nc = this.#columns.length
    if (cols.length !== nc) {
      throw new StrataInputError(`column batch: expected ${nc} columns (${this.#columns.map((c) => c.name).join(', ')}), got ${cols.length}`)
    }
    if (!Number.isSafeInteger(from) || !Number.isSafeInteger(to) || from < 0 || to < from || to > batch.rows) {
      throw new StrataInputError(`column batch rows [${from}, ${to}): expected 0 <= from <= to <= ${batch.rows}`)
    }
    for (let c = 0; c < nc; c++) {
      if (columnRows(cols[c]) < to) throw new StrataInputError(`column batch: column ${this.#columns[c].name} holds ${columnRows(cols[c])} rows, expected ${to}`)
    }
    // rows `write` buffered go first, as a segment of their own
    if (this.#buffered > 0 && this.#segments.length === 0) {
      this.#segments.push({ cols: this.#buffers, from: 0, to: this.#buffered })
      this.#buffers = this.#columns.map(() => [])
    }
    const variable = this.#variableColumns
    const sizers = this.#sizers
    let r = from
    while (r < to) {
      const start = r
      const placedOrPending = this.#placedOrPending()
      let bytes = this.#bufferedBytes
      let group = this.#buffered
      let full = false
      let stop = false
      // the same bounds `write` checks after each row
      while (r < to) {
        let b = this.#fixedRowBytes
        for (let v = 0; v < variable.length; v++) {
          const vc = cols[variable[v]]
          // a Utf8Column's row is sized as its string would be (UTF-16 units), so row groups end where `write`'s do
          b += vc instanceof Utf8Column ? (vc.isNull(r) ? 0 : 4 + vc.units(r)) : sizers[variable[v]](vc[r])
        }
        bytes += b
        group++
        r++
        if (group >= this.#rowGroupRows || bytes >= this.#rowGroupBytes) {
          full = true
          break
        }
        if (placedOrPending + bytes >= stopAtSize) {
          stop = true
          break
        }
      }
      this.#collectColumns(cols, start, r)
      this.#segments.push({ cols, from: start, to: r })
      this.#buffered = group
      this.#bufferedBytes = bytes
      this.#rowCount += r - start
      if (full) {
        this.#flushRowGroup()
        if (this.#placedOrPending() >= stopAtSize) return r
      }
      if (stop) return r
    }
    return r
  }

  /** The statistics `write` collects, for rows [from, to) of columns (before #rowCount counts them). */
  #collectColumns(cols: Column[], from: number, to: number): void {
    const nk = this.#layout.keyFields.length
    const nv = this.#layout.valueFields.length
    const stored = this.#stored
    const toValue = this.#toValue
    const specs = this.#columns
    // rows arrive sorted by key: the first key column's integers rise, its bounds are the ends
    const first = cols[0]
    if (nk > 0 && isTypedColumn(first) && !(first instanceof Float32Array || first instanceof Float64Array || first instanceof BigUint64Array)) {
      this.#keyStats[0].collect(valueOf(first[from], toValue[0], stored[0]))
      this.#keyStats[0].collect(valueOf(first[to - 1], toValue[0], stored[0]))
    } else if (nk > 0) collectRange(this.#keyStats[0], first, from, to, specs[0].type, toValue[0], stored[0])
    for (let i = 1; i < nk; i++) collectRange(this.#keyStats[i], cols[i], from, to, specs[i].type, toValue[i], stored[i])
    for (let j = 0; j < nv; j++) {
      const c = nk + 2 + j
      collectRange(this.#valueStats[j], cols[c], from, to, specs[c].type, toValue[c], stored[c])
    }
    const keyAt = (r: number): Value[] => {
      const key = new Array<Value>(nk)
      for (let i = 0; i < nk; i++) key[i] = valueOf(valueAt(cols[i], r), toValue[i], stored[i])
      return key
    }
    // (_SEQUENCE_NUMBER and _VALUE_KIND are never Utf8Columns: those hold CHAR/VARCHAR fields)
    const seqs = cols[nk] as ArrayLike<unknown>
    const [lo, hi] = minMaxRows(seqs, from, to, compareBigintValues)
    const minSeq = seqs[lo] as bigint
    const maxSeq = seqs[hi] as bigint
    if (this.#rowCount === 0) {
      this.#minKey = keyAt(from)
      this.#minSeq = minSeq
      this.#maxSeq = maxSeq
    } else {
      if (minSeq < this.#minSeq) this.#minSeq = minSeq
      if (maxSeq > this.#maxSeq) this.#maxSeq = maxSeq
    }
    this.#maxKey = keyAt(to - 1)
    const kinds = cols[nk + 1] as ArrayLike<unknown>
    let deletes = 0
    for (let r = from; r < to; r++) {
      const k = kinds[r]
      if (k === 1 || k === 3) deletes++
    }
    this.#deleteRows += deletes
  }

  /** Rows buffered by `writeColumns` into `write`'s buffers, when `write` follows it. */
  #segmentsToBuffers(): void {
    const buffers = this.#buffers
    for (const s of this.#segments) {
      for (let c = 0; c < buffers.length; c++) {
        const col = s.cols[c]
        for (let r = s.from; r < s.to; r++) buffers[c].push(valueAt(col, r))
      }
    }
    this.#segments = []
  }

  /**
   * Hands the output buffer on to a later writer. Call it once nothing reads the bytes
   * `finish` returned any more (their upload has settled): they are overwritten from then on.
   */
  release(): void {
    if (!this.#finished) throw new Error('DataFileWriter.release before finish')
    if (this.#released) return
    this.#released = true
    const buffer = this.#out.buffer
    if (buffer.byteLength <= SPARE_OUTPUT_MAX_BYTES && (spareOutput === null || buffer.byteLength > spareOutput.byteLength)) spareOutput = buffer
  }

  /** Encodes the buffered rows and the footer; returns the file and its statistics. */
  finish(): { bytes: Uint8Array; stats: DataFileStats } {
    if (this.#finished) throw new Error('DataFileWriter.finish called twice')
    if (this.#rowCount === 0) throw new Error('DataFileWriter.finish: no rows were written (Paimon never commits an empty data file)')
    this.#flushRowGroup()
    this.#placePending()
    this.#compressor.done()
    // created_by must parse as "<app> version <v>": parquet-java ignores binary column
    // statistics of files whose writer it cannot identify (CorruptStatistics)
    writeFooter(this.#out, this.#schema, this.#groups, 'strata version 0.1.0')
    this.#finished = true
    return {
      bytes: this.#out.getBytes(),
      stats: {
        rowCount: this.#rowCount,
        minKey: this.#minKey,
        maxKey: this.#maxKey,
        keyStats: statsResult(this.#keyStats),
        valueStats: statsResult(this.#valueStats),
        minSequenceNumber: this.#minSeq,
        maxSequenceNumber: this.#maxSeq,
        deleteRowCount: this.#deleteRows,
      },
    }
  }

  /** A copy of the key as stored, so later mutation of the caller's array cannot change the stats. */
  #storedKey(key: Value[]): Value[] {
    const stored = this.#stored
    const out = new Array<Value>(key.length)
    for (let i = 0; i < key.length; i++) {
      const toStored = stored[i]
      out[i] = toStored === null ? key[i] : toStored(key[i])
    }
    return out
  }

  /**
   * An earlier column whose chunk column `i`'s chunk repeats byte for byte, or -1: every
   * buffered segment holds the very same array for both (a primary-key field, stored as
   * _KEY_<k> and <k>, read once, lib/format/columnar-reader.ts), stored alike (the same
   * Parquet type, repetition and annotations), and `i` wants a ColumnIndex only if that column has one.
   */
  #twinOf(i: number, nk: number): number {
    const segments = this.#segments
    const e = this.#elements[i]
    for (let j = 0; j < i; j++) {
      if (i < nk && j >= nk) continue
      if (!segments.every((s) => s.cols[i] === s.cols[j])) continue
      const f = this.#elements[j]
      if (sameStorage(e, f)) return j
    }
    return -1
  }

  /** The file's bytes so far and the pending row group's before compression: the same whichever compressor compresses. */
  #placedOrPending(): number {
    return this.#out.offset + this.#compressor.arenas[1 - this.#slot].length
  }

  /**
   * Encodes the buffered rows as a row group's pages and hands them to the compressor; the
   * row group before it, whose pages were compressed meanwhile, is placed in the file first.
   */
  #flushRowGroup(): void {
    const rows = this.#buffered
    if (rows === 0) return
    const segments = this.#segments
    const buffers = this.#buffers
    // key columns carry a ColumnIndex (page min/max) beside every column's OffsetIndex, so a
    // lookup reads only the pages that can hold its key (docs/format.md "Row groups, pages and the page index")
    const nk = this.#layout.keyFields.length
    const slot = this.#slot
    const arena = this.#compressor.arenas[slot]
    const plans: (ChunkPlan | number)[] = []
    const ranges: number[] = []
    for (let i = 0; i < this.#columns.length; i++) {
      const twin = segments.length ? this.#twinOf(i, nk) : -1
      if (twin >= 0) {
        plans.push(twin)
        continue
      }
      const col = segments.length ? concatColumns(segments.map((s) => ({ col: s.cols[i], from: s.from, to: s.to }))) : buffers[i]
      const plan = encodeColumnChunk(arena, this.#elements[i], col, rows, { codec: this.#codec, pageSize: this.#pageSize, columnIndex: i < nk })
      planRanges(plan, ranges)
      plans.push(plan)
    }
    this.#placePending()
    this.#compressor.begin(slot, ranges)
    this.#pending = { plans, rows }
    this.#slot = slot === 0 ? 1 : 0
    this.#segments = []
    this.#buffers = this.#columns.map(() => [])
    this.#buffered = 0
    this.#bufferedBytes = 0
  }

  /** Places the pending row group's compressed pages in the file and records its chunks for the footer. */
  #placePending(): void {
    const pending = this.#pending
    if (pending === null) return
    this.#pending = null
    const nk = this.#layout.keyFields.length
    const out = this.#out
    const groupStart = out.offset
    const arena = this.#compressor.arenas[1 - this.#slot]
    const bytes = arena.bytes
    const chunks: EncodedChunk[] = []
    let uncompressed = 0n
    let page = 0
    for (let i = 0; i < pending.plans.length; i++) {
      const plan = pending.plans[i]
      let encoded: EncodedChunk
      if (typeof plan === 'number') encoded = copyChunk(out, chunks[plan], this.#elements[i].name, i < nk)
      else {
        encoded = placeChunk(out, plan, bytes, this.#compressor, page)
        page += planPages(plan)
      }
      chunks.push(encoded)
      uncompressed += encoded.chunk.meta_data!.total_uncompressed_size
    }
    this.#groups.push({ chunks, numRows: pending.rows, totalByteSize: uncompressed, compressedSize: out.offset - groupStart })
    arena.reset()
  }
}

/**
 * A copy of the chunk `from` (just written to `out`) as the chunk of column `name`: the same
 * bytes again, its offsets moved; its ColumnIndex kept when `columnIndex` (both key columns).
 */
function copyChunk(out: ByteWriter, from: EncodedChunk, name: string, columnIndex: boolean): EncodedChunk {
  const meta = from.chunk.meta_data!
  const start = Number(from.chunk.file_offset)
  const size = Number(meta.total_compressed_size)
  const at = out.offset
  out.appendBytes(out.getBytes().slice(start, start + size))
  const delta = BigInt(at - start)
  return {
    chunk: {
      ...from.chunk,
      file_offset: from.chunk.file_offset + delta,
      meta_data: {
        ...meta,
        path_in_schema: [name],
        data_page_offset: meta.data_page_offset + delta,
        dictionary_page_offset: meta.dictionary_page_offset === undefined ? undefined : meta.dictionary_page_offset + delta,
      },
    },
    columnIndex: columnIndex ? from.columnIndex : undefined,
    offsetIndex: from.offsetIndex === undefined ? undefined : { page_locations: from.offsetIndex.page_locations.map((p) => ({ ...p, offset: p.offset + delta })) },
  }
}

function valueOf(p: unknown, toValue: ((p: unknown) => Value) | null, stored: ((v: Value) => Value) | null): Value {
  const v = toValue === null ? (p as Value) : toValue(p)
  return stored === null ? v : stored(v)
}

const compareBigintValues = (a: unknown, b: unknown): number => ((a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0)

/** Rows holding the least and the greatest value of [from, to) of a column without nulls, by `order`. */
function minMaxRows(col: ArrayLike<unknown>, from: number, to: number, order: (a: unknown, b: unknown) => number): [number, number] {
  let lo = from
  let hi = from
  if (col instanceof BigInt64Array) {
    // compare int64s by their 32-bit halves: no bigint is made per row
    const w = new Int32Array(col.buffer, col.byteOffset, col.length * 2)
    for (let r = from + 1; r < to; r++) {
      const h = w[2 * r + 1]
      const l = w[2 * r] >>> 0
      const hl = w[2 * lo + 1]
      if (h < hl || (h === hl && l < w[2 * lo] >>> 0)) lo = r
      const hh = w[2 * hi + 1]
      if (h > hh || (h === hh && l > w[2 * hi] >>> 0)) hi = r
    }
    return [lo, hi]
  }
  if (col instanceof Float32Array || col instanceof Float64Array) {
    for (let r = from + 1; r < to; r++) {
      if (compareDoubles(col[r], col[lo]) < 0) lo = r
      if (compareDoubles(col[r], col[hi]) > 0) hi = r
    }
    return [lo, hi]
  }
  if (isTypedColumn(col) && !(col instanceof BigUint64Array)) {
    const c = col as Exclude<TypedColumn, BigInt64Array | BigUint64Array>
    for (let r = from + 1; r < to; r++) {
      if (c[r] < c[lo]) lo = r
      if (c[r] > c[hi]) hi = r
    }
    return [lo, hi]
  }
  for (let r = from + 1; r < to; r++) {
    if (order(col[r], col[lo]) < 0) lo = r
    if (order(col[r], col[hi]) > 0) hi = r
  }
  return [lo, hi]
}

/**
 * What `collector.collect` of every value of rows [from, to) leaves. The collector truncates
 * only strings, which go value by value; of any other type it keeps the least and the
 * greatest value by the type's order (a total order, which the physical values share:
 * TIMESTAMP(0..3) millis scale to micros) and counts nulls, so only those two values are
 * collected. A typed column holds no nulls.
 */
function collectRange(collector: ColumnStatsCollector, col: Column, from: number, to: number, type: DataType, toValue: ((p: unknown) => Value) | null, stored: ((v: Value) => Value) | null): void {
  if (col instanceof Utf8Column) {
    collectUtf8(collector, col, from, to)
    return
  }
  if (type.root === 'CHAR' || type.root === 'VARCHAR') {
    for (let r = from; r < to; r++) collector.collect(valueOf(col[r], toValue, stored))
    return
  }
  if (isTypedColumn(col) && !(col instanceof BigUint64Array)) {
    const [lo, hi] = minMaxRows(col, from, to, compareBigintValues)
    collector.collect(valueOf(col[lo], toValue, stored))
    collector.collect(valueOf(col[hi], toValue, stored))
    return
  }
  const order = valueComparator(type)
  let lo = -1
  let hi = -1
  let nulls = 0
  for (let r = from; r < to; r++) {
    const v = (col as ArrayLike<unknown>)[r] as Value
    if (v === null || v === undefined) {
      nulls++
      continue
    }
    if (lo < 0) {
      lo = hi = r
      continue
    }
    if (order(v, (col as ArrayLike<unknown>)[lo] as Value) < 0) lo = r
    if (order(v, (col as ArrayLike<unknown>)[hi] as Value) > 0) hi = r
  }
  collector.nullCount += nulls
  if (lo >= 0) {
    collector.collect(valueOf((col as ArrayLike<unknown>)[lo], toValue, stored))
    collector.collect(valueOf((col as ArrayLike<unknown>)[hi], toValue, stored))
  }
}

const utf8Encoder = new TextEncoder()

/**
 * `collectRange` of a Utf8Column (valid UTF-8, so byte order is the collector's code point
 * order): a row between the collector's current bounds would change nothing and is passed
 * over without making its string; every other row is collected as its string.
 */
function collectUtf8(collector: ColumnStatsCollector, col: Utf8Column, from: number, to: number): void {
  const { bytes, offsets } = col
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  let minS: Value = null
  let maxS: Value = null
  let minB = new Uint8Array(0)
  let maxB = new Uint8Array(0)
  let minV = new DataView(minB.buffer)
  let maxV = new DataView(maxB.buffer)
  for (let r = from; r < to; r++) {
    if (col.isNull(r)) {
      collector.nullCount++
      continue
    }
    if (collector.failed) continue
    const min = collector.min
    const max = collector.max
    if (min !== null && max !== null) {
      if (min !== minS) {
        minB = utf8Encoder.encode((minS = min) as string)
        minV = new DataView(minB.buffer, minB.byteOffset, minB.byteLength)
      }
      if (max !== maxS) {
        maxB = utf8Encoder.encode((maxS = max) as string)
        maxV = new DataView(maxB.buffer, maxB.byteOffset, maxB.byteLength)
      }
      const a = offsets[r]
      const b = offsets[r + 1]
      if (compareByteRanges(bytes, dv, a, b, minB, minV, 0, minB.length) >= 0 && compareByteRanges(bytes, dv, a, b, maxB, maxV, 0, maxB.length) <= 0) continue
    }
    collector.collect(col.string(r))
  }
}


function describeKey(key: Value[]): string {
  return '[' + key.map((v) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? `bytes(${v.length})` : JSON.stringify(v))).join(', ') + ']'
}

/** Writes all records (sorted by key) into one data file. */
export function writeDataFile(layout: DataFileLayout, records: Iterable<KeyValue>, opts?: DataFileWriterOptions): { bytes: Uint8Array; stats: DataFileStats } {
  const writer = new DataFileWriter(layout, opts)
  for (const kv of records) writer.write(kv)
  return writer.finish()
}

// ---------------------------------------------------------------------------------------------
// Reader

// Errors the store raised reading a file (a missing object, a network failure): they name
// the key already and keep their class (retries look at it), so they pass unwrapped.
const storeErrors = new WeakSet<object>()

/** `src.read`, its failures marked as the store's. */
export async function readSource(src: ByteSource, start: number, end: number): Promise<Uint8Array> {
  try {
    return await src.read(start, end)
  } catch (e) {
    if (typeof e === 'object' && e !== null) storeErrors.add(e)
    throw e
  }
}

/**
 * `e`, raised reading `src`, as an error naming the file: a CorruptFileError whose message
 * starts with the file's key, the original as its cause. Errors that already name it (the
 * store's, a CorruptFileError) and errors of a source without a name pass as they are.
 */
export function namedFileError(src: ByteSource, e: unknown): unknown {
  if (src.name === undefined || e instanceof CorruptFileError || (typeof e === 'object' && e !== null && storeErrors.has(e))) return e
  return new CorruptFileError(src.name, e instanceof Error ? e.message : String(e), { cause: e })
}

function describeKeyOf(key: ArrayLike<unknown>): string {
  return describeKey(Array.from(key) as Value[])
}

/**
 * What a read of one file checks against its manifest entry, keys compared in the stored
 * terms the reader holds them in (Values, or physical values for the columnar reader). No key
 * may be below the one before it (files are sorted by key: a data file holds a key once, a
 * changelog file a key's changes in a row) and every key lies within the entry's min/max key;
 * a read of the whole file must also begin at minKey, end at maxKey, and give the entry's row
 * count and retraction count. A violation is a CorruptFileError.
 */
export class ManifestCheck {
  readonly file: string
  readonly expect: FileExpectation
  readonly minKey: unknown[]
  readonly maxKey: unknown[]
  readonly #fns: ((a: Value, b: Value) => number)[]
  /** the first and the last key checked, to order the next batch's first key after the last */
  #first: unknown[] | null = null
  #last: unknown[] | null = null
  #rows = 0
  #retracts = 0

  constructor(file: string, expect: FileExpectation, keyFields: DataField[], physical: boolean) {
    this.file = file
    this.expect = expect
    const types = keyFields.map((f) => f.type)
    let min: Value[]
    let max: Value[]
    try {
      min = deserializeBinaryRow(types, expect.minKey)
      max = deserializeBinaryRow(types, expect.maxKey)
    } catch (e) {
      throw new CorruptFileError(file, `the manifest's minKey/maxKey do not decode as the key (${(e as Error).message})`, { cause: e })
    }
    if (physical) {
      const enc = keyFields.map((f) => physicalEncoder(KEY_FIELD_PREFIX + f.name, f.type))
      this.minKey = min.map((v, i) => enc[i](v))
      this.maxKey = max.map((v, i) => enc[i](v))
    } else {
      this.minKey = min
      this.maxKey = max
    }
    this.#fns = types.map(valueComparator)
  }

  fail(problem: string): never {
    throw new CorruptFileError(this.file, `${problem}; the file is damaged or is not the file its manifest entry describes`)
  }

  /**
   * The footer's row count, checked when the file is opened (no key is decoded for it): its
   * row groups' sum, and the entry's.
   */
  static footerRows(src: ByteSource, rows: number, groupRows: number): void {
    const expect = src.expect
    if (expect === undefined) return
    const file = src.name ?? 'data file'
    if (rows !== groupRows) throw new CorruptFileError(file, `footer says ${rows} rows, its row groups hold ${groupRows}`)
    if (BigInt(rows) !== expect.rowCount) throw new CorruptFileError(file, `footer says ${rows} rows, the manifest says ${expect.rowCount}; the file is damaged or is not the file its manifest entry describes`)
  }

  /** Order of two values of key field i. */
  compareField(i: number, a: unknown, b: unknown): number {
    return this.#fns[i](a as Value, b as Value)
  }

  /** Order of two keys. */
  compare(a: ArrayLike<unknown>, b: ArrayLike<unknown>): number {
    const fns = this.#fns
    for (let i = 0; i < fns.length; i++) {
      const c = fns[i](a[i] as Value, b[i] as Value)
      if (c !== 0) return c
    }
    return 0
  }

  /**
   * The first row r in [1, n) of the key columns `cols` whose key is below row r - 1's, or 0
   * when they are in order. A typed single key column is walked without a comparator call.
   */
  firstDisorder(cols: readonly ArrayLike<unknown>[], n: number): number {
    if (cols.length === 1) {
      const a = cols[0]
      if (a instanceof Int32Array || a instanceof Int16Array || a instanceof Int8Array) {
        for (let r = 1; r < n; r++) if (a[r] < a[r - 1]) return r
        return 0
      }
      if (a instanceof BigInt64Array) {
        // as int32 halves (high signed, low unsigned): no bigint made per row
        const w = new Int32Array(a.buffer, a.byteOffset, n * 2)
        for (let r = 1; r < n; r++) {
          const hi = w[2 * r + 1]
          const prevHi = w[2 * r - 1]
          if (hi < prevHi || (hi === prevHi && w[2 * r] >>> 0 < w[2 * r - 2] >>> 0)) return r
        }
        return 0
      }
      for (let r = 1; r < n; r++) if (this.#fieldBelow(0, a[r - 1], a[r]) > 0) return r
      return 0
    }
    const nk = cols.length
    for (let r = 1; r < n; r++) {
      let c = 0
      for (let i = 0; i < nk && c === 0; i++) c = this.#fieldBelow(i, cols[i][r - 1], cols[i][r])
      if (c > 0) return r
    }
    return 0
  }

  /** Whether the key `cur`, read after `prev`, is below it (the row path's keys). */
  below(prev: readonly unknown[], cur: readonly unknown[]): boolean {
    let c = 0
    for (let i = 0; i < prev.length && c === 0; i++) c = this.#fieldBelow(i, prev[i], cur[i])
    return c > 0
  }

  /**
   * > 0 when `cur` is below `prev` in key field i, < 0 above, 0 equal. Strings are compared by
   * UTF-16 units first (no scan for surrogates, which the exact order needs) and by the exact
   * order only when those put `cur` below: a pair out of order only in code point order
   * (a surrogate pair against U+E000..U+FFFF) passes, a pair in order never fails.
   */
  #fieldBelow(i: number, prev: unknown, cur: unknown): number {
    if (prev === cur) return 0
    const t = typeof prev
    if (t === typeof cur) {
      // (bigints are equal only when ===; numbers in order by < are in order by compareFloats too)
      if (t === 'bigint') return (cur as bigint) < (prev as bigint) ? 1 : -1
      if ((t === 'string' || t === 'number') && (prev as number) < (cur as number)) return -1
    }
    return this.#fns[i](prev as Value, cur as Value)
  }

  /** The first key of a batch: not below the last key checked, nor the first below minKey. */
  #next(key: ArrayLike<unknown>): void {
    const last = this.#last
    if (last === null) {
      this.#first = Array.from(key)
      if (this.compare(key, this.minKey) < 0) this.fail(`key ${describeKeyOf(key)} is below the manifest's minKey ${describeKeyOf(this.minKey)}`)
    } else if (this.compare(last, key) > 0) {
      this.fail(`key ${describeKeyOf(key)} follows ${describeKeyOf(last)}: rows are sorted by key`)
    }
  }

  /**
   * A batch of rows read in file order, `n` of them: `keyAt(r)` row r's key (called for the
   * first and the last, and a bad row), `disorder()` the first row whose key is below the one
   * before it, or 0 (the caller's loop, made for its columns: `firstDisorder`), `retracts` the
   * batch's -U/-D rows.
   */
  batch(n: number, keyAt: (r: number) => unknown[], disorder: () => number, retracts: number): void {
    if (n === 0) return
    const first = keyAt(0)
    this.#next(first)
    const bad = disorder()
    if (bad > 0) this.fail(`key ${describeKeyOf(keyAt(bad))} follows ${describeKeyOf(keyAt(bad - 1))}: rows are sorted by key`)
    const last = n === 1 ? first : keyAt(n - 1)
    if (this.compare(last, this.maxKey) > 0) this.fail(`key ${describeKeyOf(last)} is above the manifest's maxKey ${describeKeyOf(this.maxKey)}`)
    this.#last = last
    this.#rows += n
    this.#retracts += retracts
  }

  /** A read of the whole file (no rows left out) ended: it began at minKey, ended at maxKey, and read every row. */
  whole(): void {
    const { rowCount, deleteRowCount } = this.expect
    const firstKey = this.#first
    if (BigInt(this.#rows) !== rowCount) this.fail(`read ${this.#rows} rows, the manifest says ${rowCount}`)
    if (firstKey !== null && this.compare(firstKey, this.minKey) !== 0) this.fail(`first key ${describeKeyOf(firstKey)}, the manifest's minKey is ${describeKeyOf(this.minKey)}`)
    if (this.#last !== null && this.compare(this.#last, this.maxKey) !== 0) this.fail(`last key ${describeKeyOf(this.#last)}, the manifest's maxKey is ${describeKeyOf(this.maxKey)}`)
    if (deleteRowCount !== null && BigInt(this.#retracts) !== deleteRowCount) this.fail(`read ${this.#retracts} retractions (-U/-D), the manifest says ${deleteRowCount}`)
  }
}

export function byteSource(bytes: Uint8Array): ByteSource {
  return { size: bytes.length, read: async (start, end) => bytes.subarray(start, end) }
}

export interface DataFileReaderOptions {
  /**
   * Bytes fetched from the end of the file on open (hyparquet's default footer guess). Files
   * no larger than this are read with this single request; later reads inside it are served
   * from memory, which matters when each read is an S3 GET.
   */
  tailBytes?: number
  /** footers of files opened before (a table handle's); a hit costs no request */
  footerCache?: FooterCache
  /** the file's key in the cache (its key in the store) */
  cacheKey?: string
}

export interface DataFileBatchOptions {
  /** names of value fields to materialize; the others are null in `value`. Default: all */
  valueColumns?: string[]
  /** first row (file position, inclusive); default 0 */
  rowStart?: number
  /** last row (file position, exclusive); default rowCount */
  rowEnd?: number
  /** most records per yielded batch; a row group is decoded at once and handed out in slices */
  batchRows?: number
  /** the file's deletion vector: its rows are left out, and row groups or page runs it drops whole are not read */
  deleted?: Pick<DeletionVector, 'cardinality' | 'isDeleted' | 'sortedPositions'>
  /** filled in as the read goes */
  stats?: DataFileReadStats
}

const DEFAULT_TAIL_BYTES = 512 * 1024
const DEFAULT_BATCH_ROWS = 8192
// INT96 arrives as epoch nanoseconds through this parser; everything else is read unannotated
const utf8KeepBom = new TextDecoder('utf-8', { ignoreBOM: true })
/**
 * hyparquet's parsers for raw reads: INT96 as epoch nanoseconds, and strings decoded with a
 * leading U+FEFF kept (hyparquet's default decoder drops it as a byte-order mark, but in a
 * column it is the value's first character).
 */
export const RAW_PARSERS = {
  timestampFromNanoseconds: (nanos: bigint) => nanos,
  stringFromBytes: (bytes: Uint8Array | undefined) => bytes && utf8KeepBom.decode(bytes),
}

/** The file as hyparquet reads it: reads inside the tail fetched on open are served from it. */
export function cachedTail(src: ByteSource, tail: Uint8Array, tailStart: number): AsyncBuffer {
  return {
    byteLength: src.size,
    async slice(start: number, end: number = src.size): Promise<ArrayBuffer> {
      if (start >= tailStart && end <= src.size) return arrayBufferOf(tail.slice(start - tailStart, end - tailStart))
      const bytes = await readSource(src, start, end)
      if (bytes.length !== end - start) throw new Error(`data file read [${start}, ${end}) returned ${bytes.length} bytes; is the file ${src.size} bytes long?`)
      return arrayBufferOf(bytes)
    },
  }
}

interface ReadColumn {
  spec: ColumnSpec
  decode: ValueDecoder
}

/**
 * What a reader keeps of a data file between opens (data files are immutable): the layout's
 * columns found and checked, and where their row groups, chunks and pages are, compactly
 * (FileIndex: typed arrays, a few hundred bytes per row group); hyparquet's FileMetaData is
 * made again for the one row group a read touches.
 */
export interface DataFileFooter {
  /** the file's schema, with elements that make hyparquet return raw values */
  schema: SchemaElement[]
  /** the footer's row count */
  numRows: number
  columns: ReadColumn[]
  /** the file's own schema element of each layout column (its statistics are in these terms) */
  elements: SchemaElement[]
  index: FileIndex
}

/** What a footer takes in memory, as the footer cache charges it: the index from its typed arrays' lengths, the schema walked (some dozens of objects). */
export function footerBytes(footer: DataFileFooter): number {
  return footer.index.memoryBytes + approximateBytes([footer.schema, footer.elements, footer.columns])
}

/** A table handle's cache of data file footers, keyed by the file's key in the store. */
export type FooterCache = ByteLru<DataFileFooter, string>

/** What reads of data files decoded and skipped, for tests and metrics. */
export interface DataFileReadStats {
  /** rows handed to the Parquet decoder (it decodes whole pages around them) */
  rowsDecoded: number
  /** rows not decoded because a deletion vector drops every row of their row group or page run */
  rowsSkipped: number
  /** row groups not read at all for that reason */
  rowGroupsSkipped: number
}

export function newDataFileReadStats(): DataFileReadStats {
  return { rowsDecoded: 0, rowsSkipped: 0, rowGroupsSkipped: 0 }
}

/** A key found in a file: its position, and its record unless `live` refused the position. */
export interface KeyLookupResult {
  pos: number
  record: KeyValue | null
}

export interface DataFileLookupOptions {
  /** names of value fields to materialize; the others are null. Default: all */
  valueColumns?: string[]
  /** whether the row at this position counts (a deletion vector); a refused row's values are not read */
  live?: (pos: number) => boolean | Promise<boolean>
}

/**
 * A lookup fetches its key's page and everything after it to the end of the row group in one
 * request when that is at most this many bytes (a Strata file's row group is smaller: see
 * DEFAULT_ROW_GROUP_BYTES); otherwise the key pages, then the row's pages, separately.
 */
const LOOKUP_SPAN_BYTES = 128 * 1024
/** the row's pages in all its columns as one request when they span at most this */
const ROW_SPAN_BYTES = 128 * 1024
/** ranges less than this apart share a request when they cannot all share one */
const RANGE_GAP_BYTES = 16 * 1024
/** a scan fetches consecutive row groups together, up to this many bytes at once */
const SCAN_SPAN_BYTES = 4 * 1024 * 1024
/** and in at most this many requests at once (a projection's runs, apart in the file) */
const SCAN_RUNS = 16

/** Reads one data file written by Strata, Paimon's Java writer or pypaimon. */
export class DataFileReader {
  readonly #layout: DataFileLayout
  readonly #file: AsyncBuffer
  readonly #footer: DataFileFooter
  readonly #index: FileIndex
  readonly #columns: ReadColumn[]
  readonly #src: ByteSource
  #keyEncoders: PhysicalEncoder[] | null = null
  /** for each key field, its value field (same id), or -1: the two columns must agree */
  readonly #keyValueFields: number[]

  private constructor(layout: DataFileLayout, src: ByteSource, file: AsyncBuffer, footer: DataFileFooter) {
    this.#layout = layout
    this.#src = src
    this.#file = file
    this.#footer = footer
    this.#index = footer.index
    this.#columns = footer.columns
    this.#keyValueFields = layout.keyFields.map((k) => layout.valueFields.findIndex((f) => f.id === k.id))
    ManifestCheck.footerRows(src, footer.numRows, this.#index.rowStart(this.#index.groupCount))
  }

  get #name(): string {
    return this.#src.name ?? 'data file'
  }

  /** A check of this read against the file's manifest entry, or null when the source has none. */
  #check(): ManifestCheck | null {
    return this.#src.expect ? new ManifestCheck(this.#name, this.#src.expect, this.#layout.keyFields, false) : null
  }

  /**
   * Reads the footer and checks that every column of the layout is there (by name) and
   * readable as its type; with a `footerCache`, a file opened before costs no request.
   */
  static async open(src: ByteSource, layout: DataFileLayout, opts: DataFileReaderOptions = {}): Promise<DataFileReader> {
    if (!Number.isSafeInteger(src.size) || src.size < 0) throw new StrataInputError(`ByteSource.size ${src.size} is not a byte count`)
    try {
      return await DataFileReader.#open(src, layout, opts)
    } catch (e) {
      throw namedFileError(src, e)
    }
  }

  static async #open(src: ByteSource, layout: DataFileLayout, opts: DataFileReaderOptions): Promise<DataFileReader> {
    const { tailBytes = DEFAULT_TAIL_BYTES, footerCache, cacheKey } = opts
    if (src.size < 12) throw new Error(`data file is ${src.size} bytes, too short for Parquet (magic + footer need 12)`)
    if (footerCache && cacheKey !== undefined) {
      const hit = footerCache.get(cacheKey)
      if (hit) return new DataFileReader(layout, src, directBuffer(src), hit)
    }
    const tailStart = Math.max(0, src.size - tailBytes)
    const tail = await readSource(src, tailStart, src.size)
    if (tail.length !== src.size - tailStart) throw new Error(`data file read [${tailStart}, ${src.size}) returned ${tail.length} bytes; is the file ${src.size} bytes long?`)
    const file = cachedTail(src, tail, tailStart)
    let metadata: FileMetaData
    try {
      metadata = await parquetMetadataAsync(file, { initialFetchSize: tailBytes, parsers: STAT_PARSERS } as Parameters<typeof parquetMetadataAsync>[1])
    } catch (e) {
      throw new Error(`data file (${src.size} bytes) is not a readable Parquet file: ${(e as Error).message}`)
    }

    const present = new Map<string, { element: SchemaElement; group: boolean }>()
    for (const child of parquetSchema(metadata).children) {
      present.set(child.element.name, { element: child.element, group: child.children.length > 0 })
    }
    const columns: ReadColumn[] = []
    const elements: SchemaElement[] = []
    const rawElements = new Map<SchemaElement, SchemaElement>()
    for (const spec of fileColumns(layout)) {
      const found = present.get(spec.name)
      if (found === undefined) {
        const thin = spec.name.startsWith(KEY_FIELD_PREFIX) ? ` (every primary-key file has ${KEY_FIELD_PREFIX}<field> columns; files written with data-file.thin-mode=true are not supported)` : ''
        throw new Error(`data file has no column ${spec.name}${thin}; its columns are: ${[...present.keys()].join(', ')}`)
      }
      if (found.group) throw new Error(`data file column ${spec.name} is a nested group; expected a primitive ${spec.type.root} column`)
      columns.push({ spec, decode: valueDecoder(spec.name, spec.type, found.element) })
      elements.push(found.element)
      rawElements.set(found.element, rawReadElement(found.element, spec.type))
    }
    const chunkOf = columns.map((c) => {
      const pos = metadata.row_groups[0]?.columns.findIndex((ch) => ch.meta_data?.path_in_schema.length === 1 && ch.meta_data.path_in_schema[0] === c.spec.name) ?? 0
      if (pos < 0) throw new Error(`data file row group 0 has no column chunk ${c.spec.name}`)
      return pos
    })
    // what reads need of the footer, compactly: the chunks' places, codecs and pages, the key
    // columns' bounds; hyparquet's objects (~10 KiB per row group) would crowd the cache
    const index = await indexFile(file, metadata, chunkOf, elements, layout.keyFields.length)
    const schema = metadata.schema.map((element) => rawElements.get(element) ?? element)
    const footer: DataFileFooter = { schema, numRows: Number(metadata.num_rows), columns, elements, index }
    // checked against the manifest before it is cached: a cached footer is a sound one
    const reader = new DataFileReader(layout, src, file, footer)
    if (footerCache && cacheKey !== undefined) footerCache.set(cacheKey, footer, footerBytes(footer))
    return reader
  }

  get rowCount(): number {
    return this.#footer.numRows
  }

  /** The row groups' layout and page index, as objects made on each call (tests, benchmarks). */
  get groups(): readonly GroupIndex[] {
    return Array.from({ length: this.#index.groupCount }, (_, g) => this.#index.group(g))
  }

  #selected(valueColumns: string[] | undefined): number[] {
    const { valueFields } = this.#layout
    if (valueColumns === undefined) return valueFields.map((_, j) => j)
    return valueColumns.map((name) => {
      const j = valueFields.findIndex((f) => f.name === name)
      if (j < 0) throw new StrataInputError(`valueColumns: ${JSON.stringify(name)} is not a field; fields are ${valueFields.map((f) => f.name).join(', ')}`)
      return j
    })
  }

  /**
   * Streams records in file order, one row group at a time, in slices of at most `batchRows`.
   * With `deleted`, the rows it marks are left out, and row groups (and runs of pages) whose
   * rows it marks all are not read at all.
   */
  async *batches(opts: DataFileBatchOptions = {}): AsyncIterable<KeyValue[]> {
    const { valueColumns, rowStart = 0, rowEnd = this.rowCount, batchRows = DEFAULT_BATCH_ROWS, deleted, stats } = opts
    if (!Number.isSafeInteger(rowStart) || !Number.isSafeInteger(rowEnd) || rowStart < 0 || rowEnd < rowStart) {
      throw new StrataInputError(`data file rows [${rowStart}, ${rowEnd}): expected integers with 0 <= rowStart <= rowEnd`)
    }
    if (!Number.isSafeInteger(batchRows) || batchRows < 1) throw new StrataInputError(`batchRows ${batchRows} is not a positive integer`)
    const selected = this.#selected(valueColumns)
    const end = Math.min(rowEnd, this.rowCount)
    const dead = deleted && deleted.cardinality > 0 ? deleted.sortedPositions() : null
    const check = this.#check()
    try {
      for await (const batch of this.#batches(selected, rowStart, end, batchRows, dead, deleted, stats)) {
        if (check) this.#checkBatch(check, batch, selected)
        yield batch
      }
      // a read of every row: the file's first and last key and its counts are the entry's
      if (check && rowStart === 0 && end === this.rowCount && dead === null) check.whole()
    } catch (e) {
      throw namedFileError(this.#src, e)
    }
  }

  /** Keys in order and within the entry's bounds; a primary-key field read as a value holds its key. */
  #checkBatch(check: ManifestCheck, batch: KeyValue[], selected: number[]): void {
    let retracts = 0
    for (let r = 0; r < batch.length; r++) retracts += batch[r].kind & 1
    check.batch(
      batch.length,
      (r) => batch[r].key,
      () => {
        for (let r = 1; r < batch.length; r++) if (check.below(batch[r - 1].key, batch[r].key)) return r
        return 0
      },
      retracts,
    )
    this.#checkKeyValues(check, batch, selected)
  }

  /** Each record's key agrees with the value columns of its primary-key fields, where they were read. */
  #checkKeyValues(check: ManifestCheck, batch: KeyValue[], selected: number[]): void {
    const nk = this.#layout.keyFields.length
    for (let i = 0; i < nk; i++) {
      const j = this.#keyValueFields[i]
      if (j < 0 || !selected.includes(j)) continue
      const name = this.#layout.valueFields[j].name
      for (const kv of batch) {
        const k = kv.key[i]
        const v = kv.value[j]
        if (k !== v && check.compareField(i, k, v) !== 0) {
          check.fail(`key ${describeKey(kv.key)} holds ${describeKey([v])} in its value column ${name}`)
        }
      }
    }
  }

  async *#batches(
    selected: number[],
    rowStart: number,
    end: number,
    batchRows: number,
    dead: Uint32Array | Float64Array | null,
    deleted: DataFileBatchOptions['deleted'],
    stats: DataFileReadStats | undefined,
  ): AsyncGenerator<KeyValue[]> {
    const { keyFields } = this.#layout
    const nk = keyFields.length
    const readIdx = [...Array.from({ length: nk + 2 }, (_, i) => i), ...selected.map((j) => nk + 2 + j)]
    const index = this.#index
    const groups = index.groupCount
    const prefetched = new PrefetchedFile(this.#file)
    const segmentsOf = (g: number): ByteRange[] => {
      const from = Math.max(index.rowStart(g), rowStart)
      const to = Math.min(index.rowStart(g + 1), end)
      if (from >= to) return []
      return dead === null ? [[from, to]] : liveSegments(dead, from, to, minSkipRun(index, g, readIdx))
    }
    for (let g = 0; g < groups; g++) {
      if (index.rowStart(g) >= end) break
      const from = Math.max(index.rowStart(g), rowStart)
      const to = Math.min(index.rowStart(g + 1), end)
      if (from >= to) continue
      const segments = segmentsOf(g)
      if (stats) {
        const live = segments.reduce((n, [s, e]) => n + e - s, 0)
        stats.rowsSkipped += to - from - live
        if (segments.length === 0) stats.rowGroupsSkipped++
      }
      if (segments.length === 0) continue
      const need = groupBytes(index, g, readIdx, segments)
      if (!need.every(([s, e]) => prefetched.covers(s, e))) {
        // this group and, while the read goes on past it, the next ones up to SCAN_SPAN_BYTES
        // of wanted bytes: one request when at least half of its span is wanted (all columns,
        // or most), else the wanted runs at once, at most SCAN_RUNS of them
        prefetched.clear()
        const ranges = [...need]
        let needed = sumRanges(need)
        for (let k = g + 1; k < groups && index.rowStart(k) < end; k++) {
          const more = groupBytes(index, k, readIdx, segmentsOf(k))
          const n = needed + sumRanges(more)
          if (n > SCAN_SPAN_BYTES || mergeRanges([...ranges, ...more], RANGE_GAP_BYTES).length > SCAN_RUNS) break
          ranges.push(...more)
          needed = n
        }
        await prefetched.fetch(ranges, SCAN_SPAN_BYTES, RANGE_GAP_BYTES, 2)
      }
      for (const [s, e] of segments) {
        const data = await this.#readRows(readIdx, g, s, e, prefetched)
        if (stats) stats.rowsDecoded += e - s
        for (let off = 0; off < e - s; off += batchRows) {
          const batch = this.#records(data, nk, selected, off, Math.min(off + batchRows, e - s), s, dead === null ? undefined : deleted)
          if (batch.length) yield batch
        }
      }
    }
  }

  /**
   * Finds the row of `key` (the trimmed primary key, as `KeyValue.key`) and reads it. Row
   * groups whose key statistics exclude the key are passed over, and within a group only the
   * key columns' pages whose ColumnIndex bounds can hold it are read; then the row's pages
   * in the other columns (OffsetIndex). A row group small enough is fetched from the key's
   * page to its end in one request. Null when the file has no row of that key.
   */
  async lookup(key: Value[], keyCmp: (a: Value[], b: Value[]) => number, opts: DataFileLookupOptions = {}): Promise<KeyLookupResult | null> {
    const nk = this.#layout.keyFields.length
    if (!Array.isArray(key) || key.length !== nk) throw new StrataInputError(`lookup key: expected ${nk} values, got ${Array.isArray(key) ? key.length : typeof key}`)
    const selected = this.#selected(opts.valueColumns)
    try {
      return await this.#lookup(key, keyCmp, opts, selected)
    } catch (e) {
      throw namedFileError(this.#src, e)
    }
  }

  async #lookup(key: Value[], keyCmp: (a: Value[], b: Value[]) => number, opts: DataFileLookupOptions, selected: number[]): Promise<KeyLookupResult | null> {
    const nk = this.#layout.keyFields.length
    // the key pages read must be in order and within the entry's bounds, as in a scan
    const check = this.#check()
    const statKeys = this.#statKeys(key)
    const keyIdx = Array.from({ length: nk }, (_, i) => i)
    const rowIdx = [nk, nk + 1, ...selected.map((j) => nk + 2 + j)]
    const prefetched = new PrefetchedFile(this.#file)
    const index = this.#index
    for (let g = 0; g < index.groupCount; g++) {
      if (!statKeys.every((k, i) => index.keyMayHold(g, i, k))) continue
      const rows = index.keyRows(g, statKeys)
      if (rows === null) continue
      const [lo, hi] = rows
      const groupStart = index.rowStart(g)
      const keyBytes = groupBytes(index, g, keyIdx, [[groupStart + lo, groupStart + hi]])
      const spanStart = Math.min(...keyBytes.map((r) => r[0]))
      const spanEnd = Math.max(...[...keyIdx, ...rowIdx].map((i) => index.end(g, i)))
      if (spanEnd - spanStart <= LOOKUP_SPAN_BYTES) await prefetched.fetch([[spanStart, spanEnd]], Infinity, 0)
      else await prefetched.fetch(keyBytes, LOOKUP_SPAN_BYTES, RANGE_GAP_BYTES)
      const keys = await this.#readRows(keyIdx, g, groupStart + lo, groupStart + hi, prefetched)
      const at = (r: number): Value[] => keys.map((col) => col[r])
      if (check) {
        check.batch(
          hi - lo,
          at,
          () => check.firstDisorder(keys, hi - lo),
          0,
        )
      }
      let a = 0
      let b = hi - lo - 1
      let found = -1
      while (a <= b) {
        const mid = (a + b) >> 1
        const c = keyCmp(at(mid), key)
        if (c === 0) {
          found = mid
          break
        }
        if (c < 0) a = mid + 1
        else b = mid - 1
      }
      if (found < 0) {
        // rows are sorted by key: past a larger key no later group holds it
        if (hi > lo && keyCmp(at(hi - lo - 1), key) > 0) return null
        continue
      }
      const pos = groupStart + lo + found
      if (opts.live && !(await opts.live(pos))) return { pos, record: null }
      await prefetched.fetch(groupBytes(index, g, rowIdx, [[pos, pos + 1]]), ROW_SPAN_BYTES, RANGE_GAP_BYTES)
      const row = await this.#readRows(rowIdx, g, pos, pos + 1, prefetched)
      const data = [...keys.map((col) => [col[found]]), ...row]
      const record = this.#records(data, nk, selected, 0, 1, pos)[0]
      if (check) this.#checkKeyValues(check, [record], selected)
      return { pos, record }
    }
    return null
  }

  /** The key's values in the terms of each key column's statistics (undefined: that column prunes nothing). */
  #statKeys(key: Value[]): unknown[] {
    const { keyFields } = this.#layout
    this.#keyEncoders ??= keyFields.map((f, i) => physicalEncoder(this.#columns[i].spec.name, f.type))
    return keyFields.map((f, i) => {
      let physical: unknown
      try {
        physical = this.#keyEncoders![i](key[i])
      } catch {
        return undefined
      }
      return statKey(f.type, this.#footer.elements[i], physical)
    })
  }

  /**
   * Decoded values of the layout's columns `idx` for rows [from, to), which lie inside row
   * group g. hyparquet reads them from a FileMetaData of that one row group, made from the
   * index, in which the rows are numbered from the group's first.
   */
  async #readRows(idx: number[], g: number, from: number, to: number, file: PrefetchedFile): Promise<Value[][]> {
    const columns = idx.map((c) => this.#columns[c])
    const n = to - from
    const out = columns.map(() => new Array<Value>(n))
    const filled = columns.map(() => 0)
    const byName = new Map(columns.map((c, i) => [c.spec.name, i]))
    const index = this.#index
    const base = index.rowStart(g)
    const onChunk = ({ columnName, columnData, rowStart: chunkStart, rowEnd: chunkEnd }: ColumnData): void => {
      const rowStart = base + chunkStart
      const rowEnd = base + chunkEnd
      const i = byName.get(columnName)
      if (i === undefined) return
      const decode = columns[i].decode
      const dst = out[i]
      const lo = Math.max(rowStart, from)
      const hi = Math.min(rowEnd, to)
      for (let r = lo; r < hi; r++) {
        const raw = columnData[r - rowStart]
        dst[r - from] = raw === null || raw === undefined ? null : decode(raw)
      }
      if (hi > lo) filled[i] += hi - lo
    }
    const rows = BigInt(index.groupRows(g))
    const metadata: FileMetaData = {
      version: 1,
      schema: this.#footer.schema,
      num_rows: rows,
      row_groups: [{ columns: idx.map((c) => index.columnChunk(g, c, this.#columns[c].spec.name)), num_rows: rows, total_byte_size: 0n }],
      metadata_length: 0,
    }
    // the page locations let hyparquet read only the pages of [from, to) in each column
    const pageLocations: Record<string, PageLocation[]> = {}
    for (const c of idx) {
      const pages = index.pageLocations(g, c)
      if (pages) pageLocations[this.#columns[c].spec.name] = pages
    }
    // the pages hyparquet will decode, their headers checked first (it trusts them: checkPages)
    const ranges = idx.map((c) => index.chunkBytesFor(g, c, from - base, to - base))
    await file.fetch(ranges.flat(), ROW_SPAN_BYTES, RANGE_GAP_BYTES)
    for (let i = 0; i < idx.length; i++) {
      for (const [s, e] of ranges[i]) checkPages(file.bytes(s, e)!, `column ${columns[i].spec.name}`, s)
    }
    await parquetRead({
      file,
      metadata,
      columns: columns.map((c) => c.spec.name),
      rowStart: from - base,
      rowEnd: to - base,
      utf8: false,
      parsers: RAW_PARSERS,
      compressors: DECOMPRESSORS,
      onChunk,
      pageLocationsByGroup: [pageLocations],
    } as Parameters<typeof parquetRead>[0])
    for (let i = 0; i < columns.length; i++) {
      if (filled[i] !== n) throw new Error(`data file column ${columns[i].spec.name}: decoded ${filled[i]} of rows [${from}, ${to})`)
    }
    return out
  }

  #records(data: Value[][], nk: number, selected: number[], lo: number, hi: number, base: number, deleted?: DataFileBatchOptions['deleted']): KeyValue[] {
    const nv = this.#layout.valueFields.length
    const seqs = data[nk]
    const kinds = data[nk + 1]
    const records: KeyValue[] = []
    for (let r = lo; r < hi; r++) {
      if (deleted && deleted.isDeleted(base + r)) continue
      const key = new Array<Value>(nk)
      for (let i = 0; i < nk; i++) key[i] = data[i][r]
      const kind = kinds[r] as number
      if (kind !== 0 && kind !== 1 && kind !== 2 && kind !== 3) throw new Error(`data file row ${base + r}: ${VALUE_KIND} ${String(kind)} is not a RowKind (0..3)`)
      const value = new Array<Value>(nv).fill(null)
      for (let s = 0; s < selected.length; s++) value[selected[s]] = data[nk + 2 + s][r]
      records.push({ key, seq: seqs[r] as bigint, kind: kind as RowKind, value })
    }
    return records
  }
}

function directBuffer(src: ByteSource): AsyncBuffer {
  return {
    byteLength: src.size,
    async slice(start: number, end: number = src.size): Promise<ArrayBuffer> {
      const bytes = await readSource(src, start, end)
      if (bytes.length !== end - start) throw new Error(`data file read [${start}, ${end}) returned ${bytes.length} bytes; is the file ${src.size} bytes long?`)
      return arrayBufferOf(bytes)
    },
  }
}

/** Bytes of `columns` (layout indexes) a read of the row ranges (file positions) needs in row group g. */
function groupBytes(index: FileIndex, g: number, columns: number[], segments: ByteRange[]): ByteRange[] {
  const out: ByteRange[] = []
  const start = index.rowStart(g)
  for (const [s, e] of segments) {
    for (const c of columns) out.push(...index.chunkBytesFor(g, c, s - start, e - start))
  }
  return mergeRanges(out)
}

function sumRanges(ranges: ByteRange[]): number {
  return ranges.reduce((n, [s, e]) => n + e - s, 0)
}

/**
 * The shortest run of deleted rows worth reading around: one that covers a page of every
 * column read (the largest page), so skipping it saves decoding; a column without an offset
 * index is one page, and then only a wholly deleted group is skipped.
 */
function minSkipRun(index: FileIndex, g: number, columns: number[]): number {
  let run = 1
  for (const c of columns) {
    const largest = index.largestPage(g, c)
    if (largest < 0) return index.groupRows(g)
    run = Math.max(run, largest)
  }
  return run
}

/** Rows of [from, to) to read: around the runs of at least `minRun` deleted rows (sorted positions). */
function liveSegments(dead: Uint32Array | Float64Array, from: number, to: number, minRun: number): ByteRange[] {
  // first deleted position >= from
  let lo = 0
  let hi = dead.length
  while (lo < hi) {
    const mid = (lo + hi) >> 1
    if (dead[mid] < from) lo = mid + 1
    else hi = mid
  }
  const out: ByteRange[] = []
  let start = from
  let i = lo
  while (i < dead.length && dead[i] < to) {
    const runStart = dead[i]
    let j = i
    while (j + 1 < dead.length && dead[j + 1] === dead[j] + 1 && dead[j + 1] < to) j++
    const runEnd = dead[j] + 1
    if (runEnd - runStart >= minRun || (runStart === from && runEnd === to)) {
      if (runStart > start) out.push([start, runStart])
      start = runEnd
    }
    i = j + 1
  }
  if (start < to) out.push([start, to])
  return out
}

/** All records of a data file, in file order. */
export async function readDataFile(src: ByteSource, layout: DataFileLayout, opts?: DataFileBatchOptions & DataFileReaderOptions): Promise<KeyValue[]> {
  const reader = await DataFileReader.open(src, layout, opts)
  const all: KeyValue[] = []
  for await (const batch of reader.batches(opts)) for (const kv of batch) all.push(kv)
  return all
}
