// The writer of data files: buffers rows (or column batches) into row groups, encodes and
// compresses their pages, collects the file's statistics and writes the footer.

import zlib from 'node:zlib'
import type { CompressionCodec, SchemaElement } from 'hyparquet'
import { ByteWriter } from 'hyparquet-writer'
import { RefusedError, StrataInputError } from '../errors.ts'
import { isRetract, type DataType, type KeyValue, type RowKind, type Value } from '../types.ts'
import { rowComparator } from './compare.ts'
import { type Column, type ColumnBatch, Utf8Column, columnRows, concatColumns, isTypedColumn, physicalToValue, valueAt } from './columnar-types.ts'
import { ThreadPageCompressor } from './compression-thread.ts'
import { type ChunkPlan, type EncodedChunk, encodeColumnChunk, encodeNestedChunks, placeChunk, planPages, planRanges } from './parquet-encode.ts'
import { type NestedColumn, nestedColumn } from './parquet-nested.ts'
import { InlinePageCompressor, type PageArena, type PageCompressor } from './page-compression.ts'
import { snappyCompressShared } from './snappy.ts'
import { type FooterRowGroup, writeFooter } from './parquet-footer.ts'
import { parquetSchemaElement, physicalEncoder, physicalSizer, sameStorage, type PhysicalEncoder } from './parquet-types.ts'
import { type ColumnSpec, type DataFileLayout, KEY_STATS_TRUNCATE, SEQUENCE_NUMBER, VALUE_KIND, VALUE_STATS_TRUNCATE, dataFileSchema, describeKey, fileColumns } from './data-file-layout.ts'
import { ColumnStatsCollector, type DataFileStats, collectRange, minMaxRows, compareBigintValues, statsResult, storedValue, valueOf } from './data-file-stats.ts'

/** Paimon's `file.compression` values. */
export type FileCompression = 'none' | 'snappy' | 'gzip' | 'zstd' | 'lz4'

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
      throw new RefusedError(`file.compression 'lz4' is not supported by Strata's Parquet writer (no LZ4 encoder); use 'zstd', 'snappy', 'gzip' or 'none'`)
    default:
      throw new StrataInputError(`file.compression ${JSON.stringify(compression)} is not one of 'none', 'snappy', 'gzip', 'zstd', 'lz4'`)
  }
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
  /**
   * estimated uncompressed bytes per row group, the other bound on the buffer; default 128 KiB,
   * or 8 KiB per column chunk for a wide row (up to 64 MiB): `defaultRowGroupBytes`
   */
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
//
// A wide row gets a row group of at least a page per column chunk (DEFAULT_CHUNK_BYTES per
// chunk, up to MAX_DEFAULT_ROW_GROUP_BYTES): a fixed 128 KiB would close a group of 10,000
// INT columns after 3 rows, so row groups, and the footer's entries (one per chunk per group),
// grew with the square of the width; at a page per chunk the footer stays about 1% of the
// file at any width, and a lookup, which needs a page of every column anyway, reads no more.
const DEFAULT_ROW_GROUP_ROWS = 65536
const DEFAULT_ROW_GROUP_BYTES = 128 * 1024
const DEFAULT_PAGE_SIZE = 8 * 1024
const DEFAULT_CHUNK_BYTES = DEFAULT_PAGE_SIZE
/** the bound of a wide row's default row group: the default `write-buffer-size` (a flush's records are held anyway) */
const MAX_DEFAULT_ROW_GROUP_BYTES = 64 << 20

/** The default row-group byte estimate of a file with `chunks` column chunks per row group. */
export function defaultRowGroupBytes(chunks: number): number {
  return Math.max(DEFAULT_ROW_GROUP_BYTES, Math.min(chunks * DEFAULT_CHUNK_BYTES, MAX_DEFAULT_ROW_GROUP_BYTES))
}
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
  #pending: { plans: (ChunkPlan | number | ChunkPlan[])[]; rows: number } | null = null
  /** the nested columns' layouts (null for a flat column), whose chunks are one per leaf */
  readonly #nested: (NestedColumn | null)[]
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
      rowGroupBytes,
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
    this.#pageSize = positiveInteger('pageSize', pageSize)
    const schema = dataFileSchema(layout)
    this.#columns = fileColumns(layout)
    // a nested column has a chunk per leaf
    const chunks = schema.reduce((n, e) => (e.type !== undefined ? n + 1 : n), 0)
    this.#rowGroupBytes = rowGroupBytes === undefined ? defaultRowGroupBytes(chunks) : positiveInteger('rowGroupBytes', rowGroupBytes)
    this.#encoders = this.#columns.map((c) => physicalEncoder(c.name, c.type))
    this.#sizers = this.#columns.map((c) => physicalSizer(c.type))
    this.#nested = this.#columns.map((c) => (c.type.root === 'ARRAY' || c.type.root === 'MAP' || c.type.root === 'MULTISET' || c.type.root === 'ROW' ? nestedColumn(c.name, c.fieldId, c.type) : null))
    this.#stored = this.#columns.map((c) => storedValue(c.type))
    this.#scratch = new Array(this.#columns.length)
    this.#buffers = this.#columns.map(() => [])
    this.#toValue = this.#columns.map((c) => physicalToValue(c.type))
    const variable = (t: DataType) => t.root === 'CHAR' || t.root === 'VARCHAR' || t.root === 'BINARY' || t.root === 'VARBINARY' || t.root === 'ARRAY' || t.root === 'MAP' || t.root === 'MULTISET' || t.root === 'ROW'
    this.#variableColumns = this.#columns.flatMap((c, i) => (variable(c.type) ? [i] : []))
    this.#fixedRowBytes = this.#columns.reduce((n, c, i) => (variable(c.type) ? n : n + this.#sizers[i](null)), 0)
    this.#keyStats = layout.keyFields.map((f) => new ColumnStatsCollector(f.type, KEY_STATS_TRUNCATE))
    this.#valueStats = layout.valueFields.map((f) => new ColumnStatsCollector(f.type, VALUE_STATS_TRUNCATE))
    this.#keyOrder = assertSorted ? rowComparator(layout.keyFields.map((f) => f.type)) : null
    const { codec, compressors } = codecOf(compression, zstdLevel)
    this.#elements = this.#columns.map((c, i) => this.#nested[i]?.elements[0] ?? parquetSchemaElement(c.name, c.fieldId, c.type))
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

  /**
   * The statistics `write` collects, for rows [from, to) of columns (before #rowCount counts
   * them), in small steps: V8 compiles small methods sooner than one large one (a process's
   * first job, docs/benchmarks.md "The cold start's levers").
   */
  #collectColumns(cols: Column[], from: number, to: number): void {
    const nk = this.#keyStats.length
    if (nk > 0) this.#collectFirstKey(cols[0], from, to)
    for (let i = 1; i < nk; i++) this.#collectColumn(this.#keyStats[i], cols[i], i, from, to)
    const nv = this.#valueStats.length
    for (let j = 0; j < nv; j++) this.#collectColumn(this.#valueStats[j], cols[nk + 2 + j], nk + 2 + j, from, to)
    // (_SEQUENCE_NUMBER and _VALUE_KIND are never Utf8Columns: those hold CHAR/VARCHAR fields)
    this.#collectSequences(cols[nk] as ArrayLike<unknown>, from, to)
    if (this.#rowCount === 0) this.#minKey = this.#keyAt(cols, from)
    this.#maxKey = this.#keyAt(cols, to - 1)
    this.#deleteRows += countRetracts(cols[nk + 1] as ArrayLike<unknown>, from, to)
  }

  /** Rows arrive sorted by key: the first key column's integers rise, its bounds are the ends. */
  #collectFirstKey(first: Column, from: number, to: number): void {
    const toValue = this.#toValue[0]
    const stored = this.#stored[0]
    if (isTypedColumn(first) && !(first instanceof Float32Array || first instanceof Float64Array || first instanceof BigUint64Array)) {
      this.#keyStats[0].collect(valueOf(first[from], toValue, stored))
      this.#keyStats[0].collect(valueOf(first[to - 1], toValue, stored))
    } else collectRange(this.#keyStats[0], first, from, to, this.#columns[0].type, toValue, stored)
  }

  #collectColumn(collector: ColumnStatsCollector, col: Column, c: number, from: number, to: number): void {
    collectRange(collector, col, from, to, this.#columns[c].type, this.#toValue[c], this.#stored[c])
  }

  #collectSequences(seqs: ArrayLike<unknown>, from: number, to: number): void {
    const [lo, hi] = minMaxRows(seqs, from, to, compareBigintValues)
    const minSeq = seqs[lo] as bigint
    const maxSeq = seqs[hi] as bigint
    if (this.#rowCount === 0) {
      this.#minSeq = minSeq
      this.#maxSeq = maxSeq
    } else {
      if (minSeq < this.#minSeq) this.#minSeq = minSeq
      if (maxSeq > this.#maxSeq) this.#maxSeq = maxSeq
    }
  }

  /** Row r's key as stored (the file's min/max key). */
  #keyAt(cols: Column[], r: number): Value[] {
    const nk = this.#keyStats.length
    const key = new Array<Value>(nk)
    for (let i = 0; i < nk; i++) key[i] = valueOf(valueAt(cols[i], r), this.#toValue[i], this.#stored[i])
    return key
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
   * Parquet type, repetition and annotations), and `i` wants a ColumnIndex only if that column
   * has one. `holders` maps each array of the first segment to the columns holding it, so
   * finding a twin costs the same at any width.
   */
  #twinOf(i: number, nk: number, holders: Map<unknown, number[]>): number {
    const segments = this.#segments
    const e = this.#elements[i]
    if (this.#nested[i] !== null) return -1
    for (const j of holders.get(segments[0].cols[i]) ?? []) {
      if (j >= i) break
      if (i < nk && j >= nk) continue
      if (!sameInEverySegment(segments, i, j)) continue
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
    // key columns carry a ColumnIndex (page min/max) beside every column's OffsetIndex, so a
    // lookup reads only the pages that can hold its key (docs/format.md "Row groups, pages and the page index")
    const nk = this.#layout.keyFields.length
    const slot = this.#slot
    const arena = this.#compressor.arenas[slot]
    const plans: (ChunkPlan | number | ChunkPlan[])[] = []
    const ranges: number[] = []
    const holders = segments.length ? holdersOf(segments[0].cols) : null
    for (let i = 0; i < this.#columns.length; i++) {
      const twin = holders !== null ? this.#twinOf(i, nk, holders) : -1
      plans.push(twin >= 0 ? twin : this.#encodeColumn(arena, i, rows, i < nk, ranges))
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

  /** Column i's buffered rows as one column chunk (a chunk per leaf for a nested column) encoded into `arena`; its pages' ranges appended to `ranges`. */
  #encodeColumn(arena: PageArena, i: number, rows: number, columnIndex: boolean, ranges: number[]): ChunkPlan | ChunkPlan[] {
    const col = this.#segments.length ? concatColumns(segmentParts(this.#segments, i)) : this.#buffers[i]
    const nested = this.#nested[i]
    if (nested !== null) {
      const leafPlans = encodeNestedChunks(arena, nested, col as ArrayLike<unknown>, rows, { codec: this.#codec, pageSize: this.#pageSize })
      for (const plan of leafPlans) planRanges(plan, ranges)
      return leafPlans
    }
    const plan = encodeColumnChunk(arena, this.#elements[i], col, rows, { codec: this.#codec, pageSize: this.#pageSize, columnIndex })
    planRanges(plan, ranges)
    return plan
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
    // each column's (first) chunk, for a twin to copy
    const byColumn: EncodedChunk[] = []
    let uncompressed = 0n
    let page = 0
    for (let i = 0; i < pending.plans.length; i++) {
      const plan = pending.plans[i]
      const placed: EncodedChunk[] = []
      if (typeof plan === 'number') placed.push(copyChunk(out, byColumn[plan], this.#elements[i].name, i < nk))
      else {
        for (const p of Array.isArray(plan) ? plan : [plan]) {
          placed.push(placeChunk(out, p, bytes, this.#compressor, page))
          page += planPages(p)
        }
      }
      byColumn.push(placed[0])
      for (const encoded of placed) {
        chunks.push(encoded)
        uncompressed += encoded.chunk.meta_data!.total_uncompressed_size
      }
    }
    this.#groups.push({ chunks, numRows: pending.rows, totalByteSize: uncompressed, compressedSize: out.offset - groupStart })
    arena.reset()
  }
}

/** Each array among `cols` and the columns holding it. */
function holdersOf(cols: Column[]): Map<unknown, number[]> {
  const holders = new Map<unknown, number[]>()
  for (let j = 0; j < cols.length; j++) {
    const list = holders.get(cols[j])
    if (list === undefined) holders.set(cols[j], [j])
    else list.push(j)
  }
  return holders
}

/** Whether every segment holds the very same array for columns i and j. */
function sameInEverySegment(segments: { cols: Column[] }[], i: number, j: number): boolean {
  for (let s = 0; s < segments.length; s++) if (segments[s].cols[i] !== segments[s].cols[j]) return false
  return true
}

/** Column i's rows of each segment, as concatColumns takes them. */
function segmentParts(segments: { cols: Column[]; from: number; to: number }[], i: number): { col: Column; from: number; to: number }[] {
  const parts: { col: Column; from: number; to: number }[] = [] // packed, as an array literal or map makes
  for (let s = 0; s < segments.length; s++) parts.push({ col: segments[s].cols[i], from: segments[s].from, to: segments[s].to })
  return parts
}

/** Rows of [from, to) whose _VALUE_KIND is a retraction (-U or -D, kinds 1 and 3). */
function countRetracts(kinds: ArrayLike<unknown>, from: number, to: number): number {
  let deletes = 0
  for (let r = from; r < to; r++) {
    const k = kinds[r]
    if (k === 1 || k === 3) deletes++
  }
  return deletes
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

/** Writes all records (sorted by key) into one data file. */
export function writeDataFile(layout: DataFileLayout, records: Iterable<KeyValue>, opts?: DataFileWriterOptions): { bytes: Uint8Array; stats: DataFileStats } {
  const writer = new DataFileWriter(layout, opts)
  for (const kv of records) writer.write(kv)
  return writer.finish()
}
