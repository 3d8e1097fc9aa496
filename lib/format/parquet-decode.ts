// Strata's decoder of flat Parquet column chunks into column batches (lib/format/columnar-types.ts):
// the input side of the columnar compaction path, used by ColumnarFileReader
// (lib/format/columnar-reader.ts) for the columns stored as Strata's writer stores them.
// hyparquet stays the reader of everything else (nested columns, other encodings and codecs,
// other physical storage), and the reference this decoder is tested against
// (test/parquet-decode.test.ts).
//
// What it reads (Parquet format, parquet-format's Encodings.md and the PageHeader in
// parquet.thrift):
// - top-level primitive columns, REQUIRED or OPTIONAL (definition levels 0..1, no repetition);
// - data pages v1 (levels and values compressed together; definition levels RLE with a
//   4-byte length) and v2 (levels uncompressed before the values, which are compressed
//   unless the header says otherwise);
// - values PLAIN, or PLAIN_DICTIONARY / RLE_DICTIONARY (a PLAIN dictionary page, then a bit
//   width byte and indices in the RLE/bit-packed hybrid), and RLE for BOOLEAN;
// - codecs UNCOMPRESSED, SNAPPY (decoded here into one reused buffer: on the benchmark's pages
//   as fast as hysnappy's WASM, which copies every page in and out of its memory, and no
//   allocation per page), GZIP and ZSTD (node:zlib, or hyparquet-compressors where this Node
//   has no zstd).
// A page it does not read throws `UnsupportedParquet`, and the caller reads that column with
// hyparquet instead; a malformed page throws an Error naming the column and what was wrong.
//
// What it produces for a batch's rows is the column ColumnarFileReader's hyparquet path
// produces: the same values, typed arrays for numeric columns without nulls (Int32Array for
// INT32, BigInt64Array for INT64, Float32Array, Float64Array), else plain arrays holding null
// for SQL NULL; booleans, strings, byte arrays and decimals stored as INT32 or fixed-length
// bytes (as unscaled bigints) in plain arrays. Strings decode as UTF-8 with U+FFFD for
// invalid bytes, a leading U+FEFF kept (it is data, not a byte-order mark).

import { isUtf8 } from 'node:buffer'
import type { ColumnMetaData, CompressionCodec, SchemaElement } from 'hyparquet'
import type { DataType } from '../types.ts'
import { type Column, Utf8Column } from './columnar-types.ts'
import { DECOMPRESSORS } from './decompressors.ts'
import { SNAPPY_SLACK, snappyInto } from './snappy.ts'
import { ENC_PLAIN, ENC_PLAIN_DICTIONARY, ENC_RLE, ENC_RLE_DICTIONARY, PAGE_DATA, PAGE_DATA_V2, PAGE_DICTIONARY, type PageHeader, Thrift, readPageHeader } from './parquet-page-header.ts'

if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error("Strata's Parquet decoder needs a little-endian platform")

/** A page or chunk this decoder does not read (the caller falls back to hyparquet). */
export class UnsupportedParquet extends Error {}

/** What a column's values become. */
export type FlatKind = 'int32' | 'int64' | 'float' | 'double' | 'boolean' | 'string' | 'bytes' | 'decimal32' | 'decimalFixed'

export interface FlatColumn {
  /** the column's name, for errors */
  name: string
  kind: FlatKind
  /** OPTIONAL: one definition level per value (max level 1) */
  optional: boolean
  /** bytes per value of a FIXED_LEN_BYTE_ARRAY */
  typeLength: number
}

/**
 * The flat column this decoder reads for a top-level primitive `element` holding `type`, or
 * null when it does not read it. The caller has checked that the element is stored as
 * Strata's writer stores `type` (lib/format/parquet-types.ts `parquetSchemaElement`).
 */
export function flatColumnOf(name: string, element: SchemaElement, type: DataType): FlatColumn | null {
  const rep = element.repetition_type ?? 'REQUIRED'
  if (rep !== 'REQUIRED' && rep !== 'OPTIONAL') return null
  if ((element.num_children ?? 0) > 0) return null
  const optional = rep === 'OPTIONAL'
  const col = (kind: FlatKind, typeLength = 0): FlatColumn => ({ name, kind, optional, typeLength })
  switch (element.type) {
    case 'BOOLEAN':
      return type.root === 'BOOLEAN' ? col('boolean') : null
    case 'INT32':
      return type.root === 'DECIMAL' ? col('decimal32') : col('int32')
    case 'INT64':
      return col('int64')
    case 'FLOAT':
      return col('float')
    case 'DOUBLE':
      return col('double')
    case 'BYTE_ARRAY':
      if (type.root === 'CHAR' || type.root === 'VARCHAR') return col('string')
      if (type.root === 'BINARY' || type.root === 'VARBINARY') return col('bytes')
      return null
    case 'FIXED_LEN_BYTE_ARRAY':
      return type.root === 'DECIMAL' && element.type_length !== undefined && element.type_length > 0 ? col('decimalFixed', element.type_length) : null
    default:
      return null
  }
}

const READ_ENCODINGS = new Set(['PLAIN', 'PLAIN_DICTIONARY', 'RLE_DICTIONARY', 'RLE', 'BIT_PACKED'])

/** Whether this decoder reads the column chunk `meta` describes (its codec and the encodings it lists). */
export function chunkReadable(meta: ColumnMetaData): boolean {
  return decompressorOf(meta.codec) !== undefined && meta.encodings.every((e) => READ_ENCODINGS.has(e))
}

// ---------------------------------------------------------------------------------------------
// Decompression

type Decompress = (input: Uint8Array, size: number) => Uint8Array

function decompressorOf(codec: CompressionCodec): Decompress | null | undefined {
  switch (codec) {
    case 'UNCOMPRESSED':
      return null
    case 'SNAPPY':
      return snappyScratch
    case 'GZIP':
    case 'ZSTD': {
      const f = DECOMPRESSORS[codec]
      return f === undefined ? undefined : (input, size) => f(input, size)
    }
    default:
      return undefined
  }
}

let pageScratch = new Uint8Array(1 << 16)
let pageScratchView = new DataView(pageScratch.buffer)
/** Above this, the page scratch buffer is dropped after the chunk that grew it. */
const SCRATCH_KEEP = 4 << 20

function snappyScratch(input: Uint8Array, size: number): Uint8Array {
  if (pageScratch.length < size + SNAPPY_SLACK) {
    pageScratch = new Uint8Array(Math.max(size + SNAPPY_SLACK, pageScratch.length * 2))
    pageScratchView = new DataView(pageScratch.buffer)
  }
  snappyInto(input, new DataView(input.buffer, input.byteOffset, input.byteLength), pageScratch, pageScratchView, size)
  return pageScratch.subarray(0, size)
}

/**
 * Decodes at load a made-up snappy block whose literals (5 to 300 bytes, one and two length
 * bytes, one at the end) and copies (one- and two-byte offsets, overlapping or not) take every
 * common branch of snappyInto, so a cold job's code for it has type feedback for all of them:
 * it deoptimized at the first long or 9-byte literal, two or three times a cold compaction.
 */
function warmUpSnappy(): void {
  const b: number[] = []
  let size = 0
  const literal = (n: number): void => {
    const m = n - 1
    if (m < 60) b.push(m << 2)
    else if (m < 256) b.push(60 << 2, m)
    else b.push(61 << 2, m & 255, m >>> 8)
    for (let i = 0; i < n; i++) b.push((i * 7 + n) & 255)
    size += n
  }
  const copy1 = (len: number, offset: number): void => {
    b.push(((offset >>> 8) << 5) | ((len - 4) << 2) | 1, offset & 255)
    size += len
  }
  const copy2 = (len: number, offset: number): void => {
    b.push(((len - 1) << 2) | 2, offset & 255, offset >>> 8)
    size += len
  }
  literal(300)
  copy2(20, 8)
  literal(5)
  copy1(9, 3)
  literal(12)
  copy1(6, 100)
  literal(70)
  copy2(40, 5)
  literal(30)
  copy2(64, 290)
  literal(7)
  const head: number[] = []
  for (let v = size; ; v >>>= 7) {
    if (v < 0x80) {
      head.push(v)
      break
    }
    head.push((v & 0x7f) | 0x80)
  }
  const block = new Uint8Array([...head, ...b])
  // V8 records type feedback only once a function has run a few times (lazy feedback allocation)
  for (let k = 0; k < 12; k++) snappyScratch(block, size)
}
warmUpSnappy()

// ---------------------------------------------------------------------------------------------
// RLE / bit-packed hybrid

let indexScratch = new Int32Array(1 << 12)
let levelScratch = new Int32Array(1 << 12)

function ensureIndices(n: number): Int32Array {
  if (indexScratch.length < n) indexScratch = new Int32Array(Math.max(n, indexScratch.length * 2))
  return indexScratch
}

function ensureLevels(n: number): Int32Array {
  if (levelScratch.length < n) levelScratch = new Int32Array(Math.max(n, levelScratch.length * 2))
  return levelScratch
}

/**
 * Decodes `count` values of bit width `width` (0..32) from the hybrid encoding in buf[pos,
 * end) into out[0, count). Bit-packed runs hold groups of 8 values, the last padded.
 */
function readHybrid(buf: Uint8Array, pos: number, end: number, width: number, out: Int32Array, count: number, what: string): void {
  let seen = 0
  const bytes = (width + 7) >>> 3
  const mask = width === 32 ? -1 : (1 << width) - 1
  while (seen < count) {
    if (pos >= end) throw new Error(`${what}: the RLE/bit-packed data ends after ${seen} of ${count} values`)
    // run header: an unsigned varint
    let header = 0
    for (let shift = 0; ; shift += 7) {
      if (pos >= end) throw new Error(`${what}: truncated run header`)
      const b = buf[pos++]
      header += (b & 0x7f) * 2 ** shift
      if (b < 0x80) break
      if (shift > 28) throw new Error(`${what}: run header over 5 bytes`)
    }
    if (header % 2 === 0) {
      // RLE run: the value in `bytes` little-endian bytes, repeated header/2 times
      const run = header / 2
      if (pos + bytes > end) throw new Error(`${what}: truncated RLE run`)
      let v = 0
      for (let i = 0; i < bytes; i++) v += buf[pos + i] * 2 ** (8 * i)
      pos += bytes
      const stop = Math.min(count, seen + run)
      out.fill(v | 0, seen, stop)
      seen = stop
    } else {
      const groups = (header - 1) / 2
      const total = groups * 8
      const runBytes = groups * width
      const stop = Math.min(count, seen + total)
      const avail = Math.min(runBytes, end - pos)
      if (width === 1) {
        for (let i = 0; seen < stop; i++) {
          const b = i < avail ? buf[pos + i] : 0
          for (let k = 0; k < 8 && seen < stop; k++) out[seen++] = (b >>> k) & 1
        }
      } else if (width <= 24) {
        // (reads past the typed array give undefined, which the bit operators take as 0)
        if (avail === runBytes) {
          for (let bit = 0; seen < stop; bit += width) {
            const p = pos + (bit >>> 3)
            out[seen++] = ((buf[p] | (buf[p + 1] << 8) | (buf[p + 2] << 16) | (buf[p + 3] << 24)) >>> (bit & 7)) & mask
          }
        } else {
          const q = pos + avail
          for (let bit = 0; seen < stop; bit += width) {
            const p = pos + (bit >>> 3)
            const w = (p < q ? buf[p] : 0) | (p + 1 < q ? buf[p + 1] << 8 : 0) | (p + 2 < q ? buf[p + 2] << 16 : 0) | (p + 3 < q ? buf[p + 3] << 24 : 0)
            out[seen++] = (w >>> (bit & 7)) & mask
          }
        }
      } else {
        for (let i = 0; seen < stop; i++) {
          let v = 0
          for (let b = 0; b < width; b++) {
            const bit = i * width + b
            const p = pos + (bit >>> 3)
            if (p < pos + avail && (buf[p] >>> (bit & 7)) & 1) v += 2 ** b
          }
          out[seen++] = v | 0
        }
      }
      pos += runBytes
    }
  }
}

/**
 * Reads made-up runs at load (RLE, bit-packed of width 1, and of width 5 ending at the buffer's
 * end, read past), so readHybrid is optimized having seen reads past the array (it deoptimized
 * at a cold job's first page-final run). Twelve times, as warmUpSnappy says. */
function warmUpHybrid(): void {
  const out = new Int32Array(16)
  const levels = new Uint8Array([8, 1, 3, 0b10110101])
  const packed = new Uint8Array([3, 0x21, 0x43, 0x65, 0x87, 0xa9])
  for (let k = 0; k < 12; k++) {
    readHybrid(levels, 0, levels.length, 1, out, 12, 'warm-up')
    readHybrid(packed, 0, packed.length, 5, out, 8, 'warm-up')
  }
}
warmUpHybrid()

// ---------------------------------------------------------------------------------------------
// Column building

const latin1Slice: ((this: Buffer, start: number, end: number) => string) | undefined = (Buffer.prototype as unknown as { latin1Slice?: (this: Buffer, s: number, e: number) => string }).latin1Slice
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true })
const utf8Encoder = new TextEncoder()

function bigEndianSigned(buf: Uint8Array, from: number, len: number): bigint {
  if (len === 0) return 0n
  if (len <= 6) {
    let v = 0
    for (let i = 0; i < len; i++) v = v * 256 + buf[from + i]
    if (buf[from] & 0x80) v -= 2 ** (8 * len)
    return BigInt(v)
  }
  let v = 0n
  for (let i = 0; i < len; i++) v = (v << 8n) | BigInt(buf[from + i])
  return buf[from] & 0x80 ? v - (1n << BigInt(len * 8)) : v
}

/** A page's bytes and where its values start. */
interface PageBody {
  buf: Uint8Array
  pos: number
  end: number
  /** node Buffer over `buf`, made on first use (strings) */
  node: Buffer | null
}

/**
 * One column of a batch, decoded chunk by chunk (`readChunk`), then `finish()`ed into the
 * batch column. Numeric kinds fill a typed array and note nulls; the others fill a plain array.
 */
export class ColumnBuilder {
  readonly #col: FlatColumn
  readonly #n: number
  #at = 0
  /** numeric kinds: the values' bits (one int32 per 4-byte value, two per 8-byte value) */
  readonly #bits: Int32Array | null
  readonly #bytes: Uint8Array | null
  readonly #words: number
  #nulls: Uint8Array | null = null
  #nullCount = 0
  /** other kinds: the values */
  readonly #values: unknown[] | null
  /** the current chunk's dictionary: bits (numeric) or values */
  #dictBits: Int32Array | null = null
  #dictValues: unknown[] | null = null
  #dictSize = -1
  /** `utf8` strings: their bytes so far, where each row ends in them, and the OR of every byte */
  #u8: Uint8Array | null = null
  #u8Len = 0
  readonly #u8Offsets: Int32Array | null = null
  #u8High = 0
  #dictU8: { bytes: Uint8Array; offsets: Int32Array } | null = null

  /**
   * `utf8`: a string column becomes a `Utf8Column` (its UTF-8 bytes, no JS strings); other
   * kinds ignore it.
   */
  constructor(col: FlatColumn, rows: number, opts: { utf8?: boolean } = {}) {
    this.#col = col
    this.#n = rows
    const numeric = col.kind === 'int32' || col.kind === 'int64' || col.kind === 'float' || col.kind === 'double'
    this.#words = col.kind === 'int64' || col.kind === 'double' ? 2 : 1
    if (numeric) {
      this.#bits = new Int32Array(rows * this.#words)
      this.#bytes = new Uint8Array(this.#bits.buffer)
      this.#values = null
    } else if (opts.utf8 === true && col.kind === 'string') {
      this.#bits = null
      this.#bytes = null
      this.#values = null
      this.#u8 = new Uint8Array(Math.max(64, rows * 16))
      this.#u8Offsets = new Int32Array(rows + 1)
    } else {
      this.#bits = null
      this.#bytes = null
      this.#values = new Array<unknown>(rows)
    }
  }

  get rows(): number {
    return this.#at
  }

  /**
   * Decodes one column chunk of `rows` rows (its bytes from the first page, dictionary or
   * data) into the next rows of the column.
   */
  readChunk(chunk: Uint8Array, meta: ColumnMetaData, rows: number): void {
    const name = this.#col.name
    const decompress = decompressorOf(meta.codec)
    if (decompress === undefined) throw new UnsupportedParquet(`column ${name}: codec ${meta.codec}`)
    if (this.#at + rows > this.#n) throw new Error(`column ${name}: chunk of ${rows} rows at row ${this.#at} overflows the batch of ${this.#n}`)
    this.#dictSize = -1
    this.#dictBits = null
    this.#dictValues = null
    this.#dictU8 = null
    const stop = this.#at + rows
    const t = new Thrift(chunk, 0)
    try {
      while (this.#at < stop) {
        if (t.pos >= chunk.length) throw new Error(`column ${name}: column chunk ends after ${this.#at - (stop - rows)} of ${rows} rows`)
        const h = readPageHeader(t)
        const start = t.pos
        if (h.compressed < 0 || start + h.compressed > chunk.length) throw new Error(`column ${name}: page of ${h.compressed} bytes at chunk offset ${start} runs past the chunk (${chunk.length} bytes)`)
        t.pos = start + h.compressed
        const raw = chunk.subarray(start, start + h.compressed)
        if (h.type === PAGE_DICTIONARY) this.#dictionaryPage(h, raw, decompress)
        else if (h.type === PAGE_DATA) this.#dataPageV1(h, raw, decompress, stop)
        else if (h.type === PAGE_DATA_V2) this.#dataPageV2(h, raw, decompress, stop)
        // index pages and unknown page types carry no rows
      }
    } finally {
      if (pageScratch.length > SCRATCH_KEEP) {
        pageScratch = new Uint8Array(1 << 16)
        pageScratchView = new DataView(pageScratch.buffer)
      }
    }
  }

  #decompressed(raw: Uint8Array, size: number, decompress: Decompress | null): Uint8Array {
    if (decompress === null) {
      if (raw.length !== size) throw new Error(`column ${this.#col.name}: uncompressed page holds ${raw.length} bytes, its header says ${size}`)
      return raw
    }
    let out: Uint8Array
    try {
      out = decompress(raw, size)
    } catch (e) {
      // the codec's own message says what is wrong, not where
      throw new Error(`column ${this.#col.name}: ${(e as Error).message}`, { cause: e })
    }
    if (out.length !== size) throw new Error(`column ${this.#col.name}: page decompressed to ${out.length} bytes, its header says ${size}`)
    return out
  }

  #dictionaryPage(h: PageHeader, raw: Uint8Array, decompress: Decompress | null): void {
    if (h.encoding !== ENC_PLAIN && h.encoding !== ENC_PLAIN_DICTIONARY) throw new UnsupportedParquet(`column ${this.#col.name}: dictionary page encoding ${h.encoding}`)
    const page = this.#decompressed(raw, h.uncompressed, decompress)
    const n = h.numValues
    if (n < 0) throw new Error(`column ${this.#col.name}: dictionary page with ${n} values`)
    const body: PageBody = { buf: page, pos: 0, end: page.length, node: null }
    if (this.#bits !== null) {
      const w = this.#words * 4
      if (n * w > page.length) throw new Error(`column ${this.#col.name}: dictionary of ${n} values needs ${n * w} bytes, its page holds ${page.length}`)
      const bits = new Int32Array(n * this.#words)
      new Uint8Array(bits.buffer).set(page.subarray(0, n * w))
      this.#dictBits = bits
    } else if (this.#u8Offsets !== null) {
      // the entries' bytes copied out of the page (its buffer is reused), and where each ends
      const offsets = new Int32Array(n + 1)
      const buf = page
      let pos = 0
      let total = 0
      for (let k = 0; k < n; k++) {
        if (pos + 4 > page.length) throw new Error(`column ${this.#col.name}: PLAIN string ${k} of ${n} has no length`)
        const len = (buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)) + buf[pos + 3] * 16777216
        pos += 4 + len
        if (pos > page.length) throw new Error(`column ${this.#col.name}: PLAIN string of ${len} bytes runs past the page`)
        total += len
        offsets[k + 1] = total
      }
      const bytes = new Uint8Array(total)
      pos = 0
      for (let k = 0; k < n; k++) {
        const len = offsets[k + 1] - offsets[k]
        bytes.set(buf.subarray(pos + 4, pos + 4 + len), offsets[k])
        pos += 4 + len
      }
      let high = 0
      for (let i = 0; i < total; i++) high |= bytes[i]
      this.#u8High |= high
      this.#dictU8 = { bytes, offsets }
    } else {
      const values = new Array<unknown>(n)
      this.#plainObjects(body, n, values, null, 0)
      this.#dictValues = values
    }
    this.#dictSize = n
  }

  #dataPageV1(h: PageHeader, raw: Uint8Array, decompress: Decompress | null, stop: number): void {
    const name = this.#col.name
    const n = h.numValues
    if (n < 0 || this.#at + n > stop) throw new Error(`column ${name}: data page of ${n} values at row ${this.#at} runs past the row group's rows`)
    const page = this.#decompressed(raw, h.uncompressed, decompress)
    let pos = 0
    let defs: Int32Array | null = null
    let nonNull = n
    if (this.#col.optional) {
      if (h.defEncoding !== ENC_RLE) throw new UnsupportedParquet(`column ${name}: definition levels encoded ${h.defEncoding}`)
      if (page.length < 4) throw new Error(`column ${name}: data page too short for its definition levels`)
      const len = (page[0] | (page[1] << 8) | (page[2] << 16)) + page[3] * 16777216
      if (4 + len > page.length) throw new Error(`column ${name}: definition levels of ${len} bytes run past the page (${page.length} bytes)`)
      const r = this.#levels(page, 4, 4 + len, n)
      defs = r.defs
      nonNull = r.nonNull
      pos = 4 + len
    }
    this.#values_(h.encoding, { buf: page, pos, end: page.length, node: null }, n, nonNull, defs)
  }

  #dataPageV2(h: PageHeader, raw: Uint8Array, decompress: Decompress | null, stop: number): void {
    const name = this.#col.name
    const n = h.numValues
    if (n < 0 || this.#at + n > stop) throw new Error(`column ${name}: data page of ${n} values at row ${this.#at} runs past the row group's rows`)
    if (h.repBytes < 0 || h.defBytes < 0 || h.repBytes + h.defBytes > raw.length) throw new Error(`column ${name}: page levels (${h.repBytes} + ${h.defBytes} bytes) run past the page (${raw.length} bytes)`)
    let defs: Int32Array | null = null
    let nonNull = n
    const levelsEnd = h.repBytes + h.defBytes
    if (this.#col.optional) {
      const r = this.#levels(raw, h.repBytes, levelsEnd, n)
      defs = r.defs
      nonNull = r.nonNull
      if (n - nonNull !== h.numNulls) throw new Error(`column ${name}: page header says ${h.numNulls} nulls, its definition levels ${n - nonNull}`)
    } else if (h.numNulls !== 0) {
      throw new Error(`column ${name} is REQUIRED but a page header says ${h.numNulls} nulls`)
    }
    const size = h.uncompressed - levelsEnd
    const values = raw.subarray(levelsEnd)
    const page = h.isCompressed && size > 0 ? this.#decompressed(values, size, decompress) : values
    if (!h.isCompressed && page.length !== size) throw new Error(`column ${name}: uncompressed page values hold ${page.length} bytes, its header says ${size}`)
    this.#values_(h.encoding, { buf: page, pos: 0, end: page.length, node: null }, n, nonNull, defs)
  }

  /** Definition levels of `n` values (max level 1) from buf[pos, end): null when all are defined. */
  #levels(buf: Uint8Array, pos: number, end: number, n: number): { defs: Int32Array | null; nonNull: number } {
    const defs = ensureLevels(n)
    readHybrid(buf, pos, end, 1, defs, n, `column ${this.#col.name} definition levels`)
    let nonNull = 0
    for (let i = 0; i < n; i++) nonNull += defs[i]
    return { defs: nonNull === n ? null : defs, nonNull }
  }

  /** Decodes a data page's `nonNull` values (of `n` rows, placed where `defs` is 1) into the column. */
  #values_(encoding: number, body: PageBody, n: number, nonNull: number, defs: Int32Array | null): void {
    const name = this.#col.name
    const at = this.#at
    if (this.#u8Offsets !== null) {
      this.#utf8Values(encoding, body, n, nonNull, defs)
      this.#at = at + n
      return
    }
    if (defs !== null) this.#markNulls(defs, n)
    if (encoding === ENC_PLAIN) {
      if (this.#bits !== null) this.#plainNumeric(body, n, nonNull, defs)
      else this.#plainObjects(body, nonNull, this.#values!, defs, at)
    } else if (encoding === ENC_RLE_DICTIONARY || encoding === ENC_PLAIN_DICTIONARY) {
      if (this.#dictSize < 0) throw new Error(`column ${name}: dictionary-encoded page without a dictionary page`)
      this.#fromDictionary(this.#dictionaryIndices(body, nonNull, this.#dictSize), n, defs)
    } else if (encoding === ENC_RLE && this.#col.kind === 'boolean') {
      if (body.end - body.pos < 4) throw new Error(`column ${name}: RLE boolean page too short for its length`)
      const b = body.buf
      const len = (b[body.pos] | (b[body.pos + 1] << 8) | (b[body.pos + 2] << 16)) + b[body.pos + 3] * 16777216
      const idx = ensureIndices(nonNull)
      readHybrid(b, body.pos + 4, Math.min(body.end, body.pos + 4 + len), 1, idx, nonNull, `column ${name} RLE booleans`)
      const out = this.#values!
      let k = 0
      for (let i = 0; i < n; i++) if (defs === null || defs[i] === 1) out[at + i] = idx[k++] === 1
    } else {
      throw new UnsupportedParquet(`column ${name}: data page encoding ${encoding}`)
    }
    this.#at = at + n
  }

  /** A dictionary-encoded page's `nonNull` indices (its bit width, then the hybrid), each checked against a dictionary of `size` entries. */
  #dictionaryIndices(body: PageBody, nonNull: number, size: number): Int32Array {
    const name = this.#col.name
    const idx = ensureIndices(nonNull)
    if (nonNull === 0) return idx
    if (body.pos >= body.end) throw new Error(`column ${name}: dictionary-encoded page has no bit width`)
    const width = body.buf[body.pos]
    if (width > 32) throw new Error(`column ${name}: dictionary index bit width ${width} is over 32`)
    if (width === 0) idx.fill(0, 0, nonNull)
    else readHybrid(body.buf, body.pos + 1, body.end, width, idx, nonNull, `column ${name} dictionary indices`)
    for (let k = 0; k < nonNull; k++) {
      if (idx[k] >>> 0 >= size) throw new Error(`column ${name}: dictionary index ${idx[k] >>> 0} is out of range (dictionary of ${size} values)`)
    }
    return idx
  }

  /** `#values_` of a `utf8` string column: each row's bytes appended, a null's none. */
  #utf8Values(encoding: number, body: PageBody, n: number, nonNull: number, defs: Int32Array | null): void {
    const name = this.#col.name
    const at = this.#at
    const off = this.#u8Offsets!
    let idx: Int32Array | null = null
    let dict: { bytes: Uint8Array; offsets: Int32Array } | null = null
    if (encoding === ENC_RLE_DICTIONARY || encoding === ENC_PLAIN_DICTIONARY) {
      if (this.#dictU8 === null) throw new Error(`column ${name}: dictionary-encoded page without a dictionary page`)
      dict = this.#dictU8
      idx = this.#dictionaryIndices(body, nonNull, dict.offsets.length - 1)
    } else if (encoding !== ENC_PLAIN) {
      throw new UnsupportedParquet(`column ${name}: data page encoding ${encoding}`)
    }
    const buf = body.buf
    const end = body.end
    let pos = body.pos
    let k = 0
    for (let i = 0; i < n; i++) {
      if (defs !== null && defs[i] === 0) {
        this.#u8Null(at + i)
        off[at + i + 1] = this.#u8Len
        continue
      }
      let from: number
      let stop: number
      let src: Uint8Array
      if (dict !== null) {
        const e = idx![k]
        src = dict.bytes
        from = dict.offsets[e]
        stop = dict.offsets[e + 1]
      } else {
        if (pos + 4 > end) throw new Error(`column ${name}: PLAIN string ${k} of ${nonNull} has no length`)
        const len = (buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)) + buf[pos + 3] * 16777216
        from = pos + 4
        stop = from + len
        if (stop > end) throw new Error(`column ${name}: PLAIN string of ${len} bytes runs past the page`)
        src = buf
        pos = stop
      }
      k++
      this.#u8Append(src, from, stop)
      off[at + i + 1] = this.#u8Len
    }
  }

  /** Makes room for `extra` more string bytes. */
  #u8Room(extra: number): void {
    const u8 = this.#u8!
    if (this.#u8Len + extra <= u8.length) return
    const grown = new Uint8Array(Math.max(u8.length * 2, this.#u8Len + extra))
    grown.set(u8.subarray(0, this.#u8Len))
    this.#u8 = grown
  }

  /**
   * Appends src[from, stop) to the string bytes; bytes that are not UTF-8 become the UTF-8 of
   * the string the row path decodes from them (U+FFFD for each bad sequence), which can be
   * longer.
   */
  #u8Append(src: Uint8Array, from: number, stop: number): void {
    this.#u8Room(stop - from)
    const u8 = this.#u8!
    const start = this.#u8Len
    let len = start
    let high = 0
    for (let j = from; j < stop; j++) {
      const x = src[j]
      high |= x
      u8[len++] = x
    }
    if (high >= 0x80 && !isUtf8(u8.subarray(start, len))) {
      const replaced = utf8Encoder.encode(utf8.decode(src.subarray(from, stop)))
      this.#u8Len = start
      this.#u8Room(replaced.length)
      this.#u8!.set(replaced, start)
      len = start + replaced.length
    }
    this.#u8Len = len
    this.#u8High |= high
  }

  #u8Null(r: number): void {
    this.#nulls ??= new Uint8Array(this.#n)
    this.#nulls[r] = 1
    this.#nullCount++
  }

  #markNulls(defs: Int32Array, n: number): void {
    const at = this.#at
    if (this.#bits !== null) {
      this.#nulls ??= new Uint8Array(this.#n)
      for (let i = 0; i < n; i++) {
        if (defs[i] === 0) {
          this.#nulls[at + i] = 1
          this.#nullCount++
        }
      }
    } else {
      const out = this.#values!
      for (let i = 0; i < n; i++) if (defs[i] === 0) out[at + i] = null
    }
  }

  #plainNumeric(body: PageBody, n: number, nonNull: number, defs: Int32Array | null): void {
    const w = this.#words * 4
    const need = nonNull * w
    if (body.pos + need > body.end) throw new Error(`column ${this.#col.name}: PLAIN page holds ${body.end - body.pos} value bytes, ${nonNull} values need ${need}`)
    const at = this.#at
    const src = body.buf.subarray(body.pos, body.pos + need)
    if (defs === null) {
      this.#bytes!.set(src, at * w)
      return
    }
    // values land on the defined rows: copied aligned, then spread
    const tmp = ensureIndices(nonNull * this.#words)
    new Uint8Array(tmp.buffer, 0, need).set(src)
    const bits = this.#bits!
    let k = 0
    if (this.#words === 1) {
      for (let i = 0; i < n; i++) if (defs[i] === 1) bits[at + i] = tmp[k++]
    } else {
      for (let i = 0; i < n; i++) {
        if (defs[i] === 1) {
          bits[2 * (at + i)] = tmp[2 * k]
          bits[2 * (at + i) + 1] = tmp[2 * k + 1]
          k++
        }
      }
    }
  }

  #fromDictionary(idx: Int32Array, n: number, defs: Int32Array | null): void {
    const at = this.#at
    let k = 0
    if (this.#bits !== null) {
      const bits = this.#bits
      const dict = this.#dictBits!
      if (this.#words === 1) {
        for (let i = 0; i < n; i++) if (defs === null || defs[i] === 1) bits[at + i] = dict[idx[k++]]
      } else {
        for (let i = 0; i < n; i++) {
          if (defs === null || defs[i] === 1) {
            const j = idx[k++] << 1
            bits[2 * (at + i)] = dict[j]
            bits[2 * (at + i) + 1] = dict[j + 1]
          }
        }
      }
      return
    }
    const out = this.#values!
    const dict = this.#dictValues!
    for (let i = 0; i < n; i++) if (defs === null || defs[i] === 1) out[at + i] = dict[idx[k++]]
  }

  /**
   * `count` PLAIN values of an object kind from `body`, into out[at + i] for the rows i
   * where `defs` is 1 (every row when null).
   */
  #plainObjects(body: PageBody, count: number, out: unknown[], defs: Int32Array | null, at: number): void {
    const name = this.#col.name
    const buf = body.buf
    const end = body.end
    let pos = body.pos
    let row = 0
    const next = (): number => {
      if (defs !== null) while (defs[row] === 0) row++
      return at + row++
    }
    switch (this.#col.kind) {
      case 'boolean': {
        if (pos + ((count + 7) >>> 3) > end) throw new Error(`column ${name}: PLAIN booleans need ${(count + 7) >>> 3} bytes, the page holds ${end - pos}`)
        for (let k = 0; k < count; k++) out[next()] = ((buf[pos + (k >>> 3)] >>> (k & 7)) & 1) === 1
        return
      }
      case 'decimal32': {
        if (pos + count * 4 > end) throw new Error(`column ${name}: PLAIN page holds ${end - pos} value bytes, ${count} values need ${count * 4}`)
        for (let k = 0; k < count; k++, pos += 4) out[next()] = BigInt(buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16) | (buf[pos + 3] << 24))
        return
      }
      case 'decimalFixed': {
        const len = this.#col.typeLength
        if (pos + count * len > end) throw new Error(`column ${name}: PLAIN page holds ${end - pos} value bytes, ${count} values of ${len} bytes need ${count * len}`)
        for (let k = 0; k < count; k++, pos += len) out[next()] = bigEndianSigned(buf, pos, len)
        return
      }
      case 'bytes': {
        for (let k = 0; k < count; k++) {
          if (pos + 4 > end) throw new Error(`column ${name}: PLAIN byte array ${k} of ${count} has no length`)
          const len = (buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)) + buf[pos + 3] * 16777216
          pos += 4
          if (pos + len > end) throw new Error(`column ${name}: PLAIN byte array of ${len} bytes runs past the page`)
          out[next()] = buf.slice(pos, pos + len)
          pos += len
        }
        return
      }
      case 'string': {
        const node = (body.node ??= Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength))
        for (let k = 0; k < count; k++) {
          if (pos + 4 > end) throw new Error(`column ${name}: PLAIN string ${k} of ${count} has no length`)
          const len = (buf[pos] | (buf[pos + 1] << 8) | (buf[pos + 2] << 16)) + buf[pos + 3] * 16777216
          pos += 4
          const stop = pos + len
          if (stop > end) throw new Error(`column ${name}: PLAIN string of ${len} bytes runs past the page`)
          let high = 0
          for (let i = pos; i < stop; i++) high |= buf[i]
          out[next()] = high < 0x80 && latin1Slice !== undefined ? latin1Slice.call(node, pos, stop) : utf8.decode(buf.subarray(pos, stop))
          pos = stop
        }
        return
      }
      default:
        throw new Error(`column ${name}: ${this.#col.kind} is not an object kind`)
    }
  }

  /** The batch column: typed when numeric without nulls. */
  finish(): Column {
    const name = this.#col.name
    if (this.#at !== this.#n) throw new Error(`column ${name}: decoded ${this.#at} of ${this.#n} rows`)
    if (this.#values !== null) return this.#values
    if (this.#u8Offsets !== null) return new Utf8Column(this.#u8!.subarray(0, this.#u8Len), this.#u8Offsets, this.#nullCount > 0 ? this.#nulls : null, this.#u8High < 0x80)
    const buf = this.#bits!.buffer
    const n = this.#n
    const typed = this.#col.kind === 'int32' ? this.#bits! : this.#col.kind === 'int64' ? new BigInt64Array(buf, 0, n) : this.#col.kind === 'float' ? new Float32Array(buf, 0, n) : new Float64Array(buf, 0, n)
    if (this.#nullCount === 0) return typed
    const nulls = this.#nulls!
    const out = new Array<unknown>(n)
    for (let i = 0; i < n; i++) out[i] = nulls[i] === 1 ? null : typed[i]
    return out
  }
}
