// The end of a Strata data file: the page indexes (every ColumnIndex, then every OffsetIndex,
// of chunks with more than one page), the FileMetaData footer, its length and "PAR1", in
// Thrift's compact protocol (parquet-format's parquet.thrift). It writes the bytes
// hyparquet-writer's ParquetWriter.finish wrote for the same chunks (test/parquet-encode.test.ts
// compares them), without its per-field object walk: a data file has a footer entry per
// column chunk and row groups of ~2,000 rows, so this ran once per ~250 values.

import type { ColumnChunk, SchemaElement } from 'hyparquet'
import type { ByteWriter } from 'hyparquet-writer'
import { unconvertMinMax } from 'hyparquet-writer/src/unconvert.js'
import type { EncodedChunk } from './parquet-encode.ts'

export interface FooterRowGroup {
  chunks: EncodedChunk[]
  numRows: number
  /** sum of the chunks' uncompressed sizes */
  totalByteSize: bigint
  /** bytes of the row group in the file */
  compressedSize: number
}

// compact protocol types
const T_TRUE = 1
const T_FALSE = 2
const T_I32 = 5
const T_I64 = 6
const T_BINARY = 8
const T_LIST = 9
const T_STRUCT = 12

const TYPES = ['BOOLEAN', 'INT32', 'INT64', 'INT96', 'FLOAT', 'DOUBLE', 'BYTE_ARRAY', 'FIXED_LEN_BYTE_ARRAY']
const REPETITIONS = ['REQUIRED', 'OPTIONAL', 'REPEATED']
const CONVERTED = ['UTF8', 'MAP', 'MAP_KEY_VALUE', 'LIST', 'ENUM', 'DECIMAL', 'DATE', 'TIME_MILLIS', 'TIME_MICROS', 'TIMESTAMP_MILLIS', 'TIMESTAMP_MICROS', 'UINT_8', 'UINT_16', 'UINT_32', 'UINT_64', 'INT_8', 'INT_16', 'INT_32', 'INT_64', 'JSON', 'BSON', 'INTERVAL']
const ENCODINGS = ['PLAIN', 'GROUP_VAR_INT', 'PLAIN_DICTIONARY', 'RLE', 'BIT_PACKED', 'DELTA_BINARY_PACKED', 'DELTA_LENGTH_BYTE_ARRAY', 'DELTA_BYTE_ARRAY', 'RLE_DICTIONARY', 'BYTE_STREAM_SPLIT']
const CODECS = ['UNCOMPRESSED', 'SNAPPY', 'GZIP', 'LZO', 'BROTLI', 'LZ4', 'ZSTD', 'LZ4_RAW']
const PAGE_TYPES = ['DATA_PAGE', 'INDEX_PAGE', 'DICTIONARY_PAGE', 'DATA_PAGE_V2']
const BOUNDARY_ORDERS = ['UNORDERED', 'ASCENDING', 'DESCENDING']

const utf8 = new TextEncoder()

/** A growable byte buffer with the compact protocol's primitives. */
class Out {
  buf = new Uint8Array(1 << 16)
  pos = 0
  /** last field id per open struct */
  #fids: number[] = []
  #fid = 0

  ensure(n: number): void {
    if (this.pos + n > this.buf.length) {
      const next = new Uint8Array(Math.max(this.buf.length * 2, this.pos + n))
      next.set(this.buf.subarray(0, this.pos))
      this.buf = next
    }
  }

  byte(b: number): void {
    this.ensure(1)
    this.buf[this.pos++] = b
  }

  /** unsigned varint of a non-negative safe integer */
  varint(v: number): void {
    this.ensure(10)
    const buf = this.buf
    while (v >= 0x80) {
      buf[this.pos++] = (v % 0x80) | 0x80
      v = Math.floor(v / 0x80)
    }
    buf[this.pos++] = v
  }

  zigzag32(v: number): void {
    this.varint(((v << 1) ^ (v >> 31)) >>> 0)
  }

  zigzag64(v: bigint | number): void {
    const n = Number(v)
    if (Number.isSafeInteger(n) && Math.abs(n) < 2 ** 52) this.varint(n >= 0 ? 2 * n : -2 * n - 1)
    else {
      // beyond 2^52: the 64-bit zigzag with bigints
      let z = BigInt.asUintN(64, (BigInt(v) << 1n) ^ (BigInt(v) >> 63n))
      this.ensure(10)
      while (z >= 0x80n) {
        this.buf[this.pos++] = Number(z & 0x7fn) | 0x80
        z >>= 7n
      }
      this.buf[this.pos++] = Number(z)
    }
  }

  bytes(b: Uint8Array): void {
    this.varint(b.length)
    this.ensure(b.length)
    this.buf.set(b, this.pos)
    this.pos += b.length
  }

  string(s: string): void {
    this.bytes(utf8.encode(s))
  }

  field(fid: number, type: number): void {
    const delta = fid - this.#fid
    if (delta > 0 && delta <= 15) this.byte((delta << 4) | type)
    else {
      this.byte(type)
      this.zigzag32(fid)
    }
    this.#fid = fid
  }

  begin(): void {
    this.#fids.push(this.#fid)
    this.#fid = 0
  }

  end(): void {
    this.byte(0)
    this.#fid = this.#fids.pop()!
  }

  i32(fid: number, v: number | undefined): void {
    if (v === undefined) return
    this.field(fid, T_I32)
    this.zigzag32(v)
  }

  i64(fid: number, v: bigint | number | undefined): void {
    if (v === undefined) return
    this.field(fid, T_I64)
    this.zigzag64(v)
  }

  bool(fid: number, v: boolean | undefined): void {
    if (v === undefined) return
    this.field(fid, v ? T_TRUE : T_FALSE)
  }

  bin(fid: number, v: Uint8Array | undefined): void {
    if (v === undefined) return
    this.field(fid, T_BINARY)
    this.bytes(v)
  }

  str(fid: number, v: string | undefined): void {
    if (v === undefined) return
    this.field(fid, T_BINARY)
    this.string(v)
  }

  struct(fid: number): void {
    this.field(fid, T_STRUCT)
    this.begin()
  }

  list(fid: number, elemType: number, size: number): void {
    this.field(fid, T_LIST)
    this.listHeader(elemType, size)
  }

  listHeader(elemType: number, size: number): void {
    if (size > 14) {
      this.byte(0xf0 | elemType)
      this.varint(size)
    } else this.byte((size << 4) | elemType)
  }
}

function indexOf(names: string[], name: string | undefined, what: string): number | undefined {
  if (name === undefined) return undefined
  const i = names.indexOf(name)
  if (i < 0) throw new Error(`Parquet footer: unknown ${what} ${name}`)
  return i
}

function emptyStruct(o: Out, fid: number): void {
  o.struct(fid)
  o.end()
}

function logicalType(o: Out, lt: SchemaElement['logical_type']): void {
  if (lt === undefined) return
  o.struct(10)
  switch (lt.type) {
    case 'STRING':
      emptyStruct(o, 1)
      break
    case 'MAP':
      emptyStruct(o, 2)
      break
    case 'LIST':
      emptyStruct(o, 3)
      break
    case 'DECIMAL':
      o.struct(5)
      o.i32(1, lt.scale)
      o.i32(2, lt.precision)
      o.end()
      break
    case 'DATE':
      emptyStruct(o, 6)
      break
    case 'TIMESTAMP':
      o.struct(8)
      o.bool(1, lt.isAdjustedToUTC)
      o.struct(2)
      emptyStruct(o, lt.unit === 'NANOS' ? 3 : lt.unit === 'MICROS' ? 2 : 1)
      o.end()
      o.end()
      break
    case 'INTEGER':
      o.struct(10)
      o.i32(1, lt.bitWidth)
      o.bool(2, lt.isSigned)
      o.end()
      break
    default:
      throw new Error(`Parquet footer: logical type ${lt.type} is not written by Strata`)
  }
  o.end()
}

function schemaElement(o: Out, e: SchemaElement): void {
  o.begin()
  o.i32(1, indexOf(TYPES, e.type, 'type'))
  o.i32(2, e.type_length)
  o.i32(3, indexOf(REPETITIONS, e.repetition_type, 'repetition'))
  o.str(4, e.name)
  o.i32(5, e.num_children)
  o.i32(6, indexOf(CONVERTED, e.converted_type, 'converted type'))
  o.i32(7, e.scale)
  o.i32(8, e.precision)
  o.i32(9, e.field_id)
  logicalType(o, e.logical_type)
  o.end()
}

/** Whether a statistics bound of this column may be truncated (a BYTE_ARRAY that is no decimal). */
function truncatable(e: SchemaElement): boolean {
  return e.type === 'BYTE_ARRAY' && e.converted_type !== 'DECIMAL'
}

/** min/max as written: the bytes (truncated as hyparquet-writer truncates) and whether they are exact. */
function statBound(value: unknown, e: SchemaElement, isMax: boolean): { bytes?: Uint8Array; exact?: false } {
  if (value === undefined || value === null) return {}
  if (!truncatable(e)) return { bytes: unconvertMinMax(value as never, e as never, isMax) }
  const raw = value instanceof Uint8Array ? value : utf8.encode(String(value))
  const bytes = unconvertMinMax(raw, e as never, isMax)!
  return bytes === raw ? { bytes } : { bytes, exact: false }
}

function columnChunk(o: Out, c: ColumnChunk, e: SchemaElement): void {
  o.begin()
  o.i64(2, c.file_offset)
  const m = c.meta_data!
  o.struct(3)
  o.i32(1, indexOf(TYPES, m.type, 'type'))
  o.list(2, T_I32, m.encodings.length)
  for (const enc of m.encodings) o.zigzag32(indexOf(ENCODINGS, enc, 'encoding')!)
  o.list(3, T_BINARY, m.path_in_schema.length)
  for (const p of m.path_in_schema) o.string(p)
  o.i32(4, indexOf(CODECS, m.codec, 'codec'))
  o.i64(5, m.num_values)
  o.i64(6, m.total_uncompressed_size)
  o.i64(7, m.total_compressed_size)
  o.i64(9, m.data_page_offset)
  o.i64(10, m.index_page_offset)
  o.i64(11, m.dictionary_page_offset)
  const s = m.statistics as (typeof m.statistics & { nan_count?: bigint }) | undefined
  if (s !== undefined) {
    o.struct(12)
    const max = statBound(s.max_value, e, true)
    const min = statBound(s.min_value, e, false)
    o.i64(3, s.null_count)
    o.bin(5, max.bytes)
    o.bin(6, min.bytes)
    o.bool(7, max.exact)
    o.bool(8, min.exact)
    o.i64(9, s.nan_count)
    o.end()
  }
  const es = m.encoding_stats
  if (es !== undefined) {
    o.list(13, T_STRUCT, es.length)
    for (const x of es) {
      o.begin()
      o.i32(1, indexOf(PAGE_TYPES, x.page_type, 'page type'))
      o.i32(2, indexOf(ENCODINGS, x.encoding, 'encoding'))
      o.i32(3, x.count)
      o.end()
    }
  }
  o.end()
  o.i64(4, c.offset_index_offset)
  o.i32(5, c.offset_index_length)
  o.i64(6, c.column_index_offset)
  o.i32(7, c.column_index_length)
  o.end()
}

function i64List(o: Out, fid: number, values: bigint[] | undefined): void {
  if (values === undefined) return
  o.list(fid, T_I64, values.length)
  for (const v of values) o.zigzag64(v)
}

/**
 * Appends the page indexes, the footer and "PAR1" after the row groups (the file starts with
 * "PAR1"); sets the chunks' page-index offsets and lengths.
 */
export function writeFooter(out: ByteWriter, schema: SchemaElement[], groups: FooterRowGroup[], createdBy: string): void {
  const base = out.offset
  const o = new Out()
  // every ColumnIndex, then every OffsetIndex, of chunks with more than one page
  for (const g of groups) {
    for (const { chunk, columnIndex: ci } of g.chunks) {
      if (ci === undefined || ci.min_values.length <= 1) continue
      const start = o.pos
      o.begin()
      o.list(1, T_FALSE, ci.null_pages.length)
      for (const p of ci.null_pages) o.byte(p ? 1 : 0)
      o.list(2, T_BINARY, ci.min_values.length)
      for (const b of ci.min_values) o.bytes(b)
      o.list(3, T_BINARY, ci.max_values.length)
      for (const b of ci.max_values) o.bytes(b)
      o.i32(4, BOUNDARY_ORDERS.indexOf(ci.boundary_order))
      i64List(o, 5, ci.null_counts)
      i64List(o, 8, ci.nan_counts)
      o.end()
      chunk.column_index_offset = BigInt(base + start)
      chunk.column_index_length = o.pos - start
    }
  }
  for (const g of groups) {
    for (const { chunk, offsetIndex: oi } of g.chunks) {
      if (oi === undefined || oi.page_locations.length <= 1) continue
      const start = o.pos
      o.begin()
      o.list(1, T_STRUCT, oi.page_locations.length)
      for (const p of oi.page_locations) {
        o.begin()
        o.i64(1, p.offset)
        o.i32(2, p.compressed_page_size)
        o.i64(3, p.first_row_index)
        o.end()
      }
      o.end()
      chunk.offset_index_offset = BigInt(base + start)
      chunk.offset_index_length = o.pos - start
    }
  }
  // FileMetaData
  const metaStart = o.pos
  let rows = 0
  for (const g of groups) rows += g.numRows
  o.begin()
  o.i32(1, 2)
  o.list(2, T_STRUCT, schema.length)
  for (const e of schema) schemaElement(o, e)
  o.i64(3, rows)
  o.list(4, T_STRUCT, groups.length)
  // the leaf columns, in schema order (a nested column's groups have no type)
  const leaves = schema.filter((e) => e.type !== undefined)
  for (const g of groups) {
    o.begin()
    o.list(1, T_STRUCT, g.chunks.length)
    for (let c = 0; c < g.chunks.length; c++) columnChunk(o, g.chunks[c].chunk, leaves[c])
    o.i64(2, g.totalByteSize)
    o.i64(3, g.numRows)
    o.i64(6, g.compressedSize)
    o.end()
  }
  o.str(6, createdBy)
  // column_orders: TypeDefinedOrder for every leaf
  const typed = schema.filter((e) => e.type !== undefined).length
  o.list(7, T_STRUCT, typed)
  for (let i = 0; i < typed; i++) {
    o.begin()
    emptyStruct(o, 1)
    o.end()
  }
  o.end()
  const metaLength = o.pos - metaStart
  o.ensure(8)
  new DataView(o.buf.buffer).setUint32(o.pos, metaLength, true)
  o.pos += 4
  new DataView(o.buf.buffer).setUint32(o.pos, 0x31524150, true) // "PAR1"
  o.pos += 4
  out.appendBytes(o.buf.subarray(0, o.pos))
}
