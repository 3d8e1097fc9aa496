// What a data file's footer and page index say about where rows and keys are, in the form a
// point lookup, a scan and a deletion-vector scan use them (docs/format.md "Row groups, pages
// and the page index"), kept compactly (FileIndex) because a table handle caches it per file:
// - per row group: its first row and row count and, per layout column, where its chunk is
//   (bytes, dictionary and first data page, codec) and, from the OffsetIndex, where each data
//   page starts, in bytes and in rows;
// - for the key columns, the chunk's min/max statistics and, per page, the min/max of the
//   ColumnIndex.
// Statistics stay physical values (numbers, bigints, bytes) so that a key can be compared
// with them in the same terms: the key is encoded as the writer encodes it and put through
// hyparquet's own statistics conversion, so both sides of a comparison went through the same
// (monotone) function. Only types whose Parquet statistics order is Paimon's key order are
// compared (integers, dates, timestamps, decimals up to precision 18, strings and binaries
// by unsigned bytes, booleans); for floats and wide decimals nothing is pruned.

import { readColumnIndex, readOffsetIndex } from 'hyparquet'
import type { AsyncBuffer, ColumnChunk, ColumnIndex, CompressionCodec, FileMetaData, OffsetIndex, ParquetType, SchemaElement } from 'hyparquet'
import { DEFAULT_PARSERS } from 'hyparquet/src/convert.js'
import { convertMetadata } from 'hyparquet/src/metadata.js'
import type { DataType } from '../types.ts'
import { approximateBytes, viewBytes } from './byte-cache.ts'

/** Where a data page is, in bytes and rows (an OffsetIndex entry). */
export type PageLocation = OffsetIndex['page_locations'][number]

/**
 * Parsers under which hyparquet leaves statistics physical: epoch units and days as numbers,
 * byte arrays as (copied) bytes. Decimals of INT32/INT64 still come back as unscaled / 10^scale
 * (hyparquet does that whatever the parsers), which is monotone, so it orders as the unscaled value.
 */
export const STAT_PARSERS = {
  timestampFromMilliseconds: (v: bigint): unknown => v,
  timestampFromMicroseconds: (v: bigint): unknown => v,
  timestampFromNanoseconds: (v: bigint): unknown => v,
  dateFromDays: (d: number): unknown => d,
  // a copy: a view would keep the whole footer read alive in the footer cache
  stringFromBytes: (b: Uint8Array): unknown => b.slice(),
}
const ALL_STAT_PARSERS = { ...DEFAULT_PARSERS, ...STAT_PARSERS }

/** One column chunk of a row group as GroupIndex shows it (FileIndex.group; tests, benchmarks). */
export interface ChunkIndex {
  /** bytes of the column chunk, dictionary page included: [start, end) */
  start: number
  end: number
  /** the data pages (OffsetIndex); absent when the chunk has no offset index (one page, or another writer) */
  pages?: PageLocation[]
  /** chunk statistics as physical values (key columns only); undefined when unknown */
  min?: unknown
  max?: unknown
  /** per page (ColumnIndex, key columns only): min, max and whether the page holds only nulls */
  pageMin?: unknown[]
  pageMax?: unknown[]
  nullPages?: boolean[]
}

/** A row group's layout and page index, as objects (FileIndex.group). */
export interface GroupIndex {
  /** file position of the group's first row */
  rowStart: number
  rows: number
  /** by layout column (the order of `fileColumns`) */
  chunks: ChunkIndex[]
}

/** Half-open byte range [0] .. [1]. */
export type ByteRange = [number, number]

// ---------------------------------------------------------------------------------------------
// The compact index

/** Parquet's compression codecs in the order of its enum. */
const CODECS: CompressionCodec[] = ['UNCOMPRESSED', 'SNAPPY', 'GZIP', 'LZO', 'BROTLI', 'LZ4', 'ZSTD', 'LZ4_RAW']
const NO_CODEC = 255
/** FileIndex.flags: the chunk names a dictionary_page_offset (its start is that offset) */
const HAS_DICTIONARY_OFFSET = 1

/** Integers in 4 bytes each when they all fit, else as doubles. */
type Ints = Uint32Array | Int32Array | Float64Array

function packInts(xs: number[]): Ints {
  let min = 0
  let max = 0
  for (const x of xs) {
    if (!Number.isInteger(x)) return Float64Array.from(xs)
    if (x < min) min = x
    if (x > max) max = x
  }
  if (min >= 0 && max <= 0xffffffff) return Uint32Array.from(xs)
  if (min >= -0x80000000 && max <= 0x7fffffff) return Int32Array.from(xs)
  return Float64Array.from(xs)
}

const INT64_MIN = -(1n << 63n)
const INT64_MAX = (1n << 63n) - 1n
const OBJECT_BYTES = 64

/**
 * Statistics of one key column (physical values, as STAT_PARSERS leave them), by position:
 * in a typed array of their kind (numbers, int64 bigints, booleans, or byte strings laid end
 * to end), or as a plain array when they are of mixed or other kinds. Unknown values (null,
 * undefined) read back as undefined, which prunes nothing either way (mayHold).
 */
class StatValues {
  private constructor(
    readonly length: number,
    private readonly kind: 'none' | 'number' | 'bigint' | 'boolean' | 'bytes' | 'any',
    private readonly values: Float64Array | BigInt64Array | Uint8Array | unknown[] | null,
    /** bytes: where value i ends in `values` (it starts where i - 1 ends) */
    private readonly ends: Ints | null,
    /** 1 where the value is known; null when every value is */
    private readonly known: Uint8Array | null,
  ) {}

  static of(xs: readonly unknown[]): StatValues {
    const n = xs.length
    let kind: 'number' | 'bigint' | 'boolean' | 'bytes' | 'any' | null = null
    let missing = false
    for (const x of xs) {
      if (x === undefined || x === null) {
        missing = true
        continue
      }
      const k =
        typeof x === 'number' ? 'number'
        : typeof x === 'bigint' ? (x >= INT64_MIN && x <= INT64_MAX ? 'bigint' : 'any')
        : typeof x === 'boolean' ? 'boolean'
        : x instanceof Uint8Array ? 'bytes'
        : 'any'
      kind = kind === null || kind === k ? k : 'any'
    }
    if (kind === null) return new StatValues(n, 'none', null, null, null)
    if (kind === 'any') return new StatValues(n, 'any', xs.map((x) => x ?? undefined), null, null)
    const known = missing ? Uint8Array.from(xs, (x) => (x === undefined || x === null ? 0 : 1)) : null
    switch (kind) {
      case 'number':
        return new StatValues(n, kind, Float64Array.from(xs, (x) => (typeof x === 'number' ? x : 0)), null, known)
      case 'bigint':
        return new StatValues(n, kind, BigInt64Array.from(xs, (x) => (typeof x === 'bigint' ? x : 0n)), null, known)
      case 'boolean':
        return new StatValues(n, kind, Uint8Array.from(xs, (x) => (x === true ? 1 : 0)), null, known)
      case 'bytes': {
        const ends: number[] = []
        let total = 0
        for (const x of xs) {
          if (x instanceof Uint8Array) total += x.length
          ends.push(total)
        }
        // a copy of its own: a view would keep the footer read alive in the cache
        const bytes = new Uint8Array(total)
        let at = 0
        for (const x of xs) {
          if (x instanceof Uint8Array) {
            bytes.set(x, at)
            at += x.length
          }
        }
        return new StatValues(n, kind, bytes, packInts(ends), known)
      }
    }
  }

  get(i: number): unknown {
    if (this.kind === 'none' || (this.known !== null && this.known[i] === 0)) return undefined
    switch (this.kind) {
      case 'number':
        return (this.values as Float64Array)[i]
      case 'bigint':
        return (this.values as BigInt64Array)[i]
      case 'boolean':
        return (this.values as Uint8Array)[i] === 1
      case 'bytes': {
        const ends = this.ends!
        return (this.values as Uint8Array).subarray(i === 0 ? 0 : ends[i - 1], ends[i])
      }
      default:
        return (this.values as unknown[])[i]
    }
  }

  /** Bytes these values take in memory. */
  get memoryBytes(): number {
    let n = OBJECT_BYTES
    if (this.kind === 'any') n += approximateBytes(this.values)
    else if (this.values !== null) n += viewBytes(this.values as Uint8Array)
    if (this.ends !== null) n += viewBytes(this.ends)
    if (this.known !== null) n += viewBytes(this.known)
    return n
  }
}

/**
 * A data file's row groups, column chunks and page index, for the layout's columns, in typed
 * arrays: what a table handle caches per file (docs/format.md "Footer cache"). hyparquet's
 * parsed footer and page index take about 10 KiB per row group, so the footer of a file at
 * the default target-file-size (about 2,000 row groups) would outgrow the whole footer cache;
 * this takes some hundreds of bytes per row group. hyparquet's objects for a row group are
 * made again (columnChunk, pageLocations) only for the row group a read touches.
 *
 * Chunk k = g * columns + c is layout column c's chunk in row group g.
 */
export class FileIndex {
  /** layout columns (the order of `fileColumns`) */
  readonly columns: number
  /** the first `keyColumns` columns are the key's: they carry statistics */
  readonly keyColumns: number
  /** first row of each row group, then the rows of the file */
  readonly rowStarts: Float64Array
  /** physical type of each column's chunks */
  readonly types: ParquetType[]
  /** by chunk: where it starts (dictionary page, else first data page), its size, where its first data page is relative to its start */
  readonly chunkStart: Ints
  readonly chunkSize: Ints
  readonly dataPageDelta: Ints
  /** by chunk: its codec (CODECS) and HAS_DICTIONARY_OFFSET */
  readonly codecs: Uint8Array
  readonly flags: Uint8Array
  /** the pages of chunk k are firstPage[k] .. firstPage[k + 1] - 1 of the page arrays; none without an OffsetIndex */
  readonly firstPage: Ints
  readonly pageOffset: Ints
  readonly pageSize: Ints
  /** row of the page's first value, relative to its row group */
  readonly pageFirstRow: Ints
  /** by key column: chunk statistics, by row group */
  readonly chunkMin: StatValues[]
  readonly chunkMax: StatValues[]
  /** by row group and key column (g * keyColumns + c): where the chunk's ColumnIndex starts in pageMin[c], pageMax[c], nullPages[c]; -1 without one */
  readonly statFirst: Int32Array
  readonly pageMin: StatValues[]
  readonly pageMax: StatValues[]
  readonly nullPages: Uint8Array[]

  constructor(parts: Omit<FileIndex, 'groupCount' | 'rowStart' | 'groupRows' | 'start' | 'end' | 'pageCount' | 'pageRows' | 'largestPage' | 'chunkBytesFor' | 'keyMayHold' | 'keyRows' | 'columnChunk' | 'pageLocations' | 'group' | 'memoryBytes'>) {
    this.columns = parts.columns
    this.keyColumns = parts.keyColumns
    this.rowStarts = parts.rowStarts
    this.types = parts.types
    this.chunkStart = parts.chunkStart
    this.chunkSize = parts.chunkSize
    this.dataPageDelta = parts.dataPageDelta
    this.codecs = parts.codecs
    this.flags = parts.flags
    this.firstPage = parts.firstPage
    this.pageOffset = parts.pageOffset
    this.pageSize = parts.pageSize
    this.pageFirstRow = parts.pageFirstRow
    this.chunkMin = parts.chunkMin
    this.chunkMax = parts.chunkMax
    this.statFirst = parts.statFirst
    this.pageMin = parts.pageMin
    this.pageMax = parts.pageMax
    this.nullPages = parts.nullPages
  }

  get groupCount(): number {
    return this.rowStarts.length - 1
  }

  /** File position of row group g's first row. */
  rowStart(g: number): number {
    return this.rowStarts[g]
  }

  groupRows(g: number): number {
    return this.rowStarts[g + 1] - this.rowStarts[g]
  }

  /** Bytes of the chunk, dictionary page included: [start(g, c), end(g, c)). */
  start(g: number, c: number): number {
    return this.chunkStart[g * this.columns + c]
  }

  end(g: number, c: number): number {
    const k = g * this.columns + c
    return this.chunkStart[k] + this.chunkSize[k]
  }

  /** Data pages the chunk's OffsetIndex lists (0 without one). */
  pageCount(g: number, c: number): number {
    const k = g * this.columns + c
    return this.firstPage[k + 1] - this.firstPage[k]
  }

  /** Rows [from, to) of page i of a chunk, relative to its row group. */
  pageRows(g: number, c: number, i: number): ByteRange {
    const k = g * this.columns + c
    const p = this.firstPage[k] + i
    return [this.pageFirstRow[p], p + 1 < this.firstPage[k + 1] ? this.pageFirstRow[p + 1] : this.groupRows(g)]
  }

  /** Rows of the chunk's largest page; -1 when it has fewer than two pages in its OffsetIndex. */
  largestPage(g: number, c: number): number {
    const n = this.pageCount(g, c)
    if (n < 2) return -1
    let most = 0
    for (let i = 0; i < n; i++) {
      const [s, e] = this.pageRows(g, c, i)
      if (e - s > most) most = e - s
    }
    return most
  }

  /**
   * Bytes a read of rows [from, to) (relative to the group) of a chunk needs: the pages holding
   * them and, before them, the dictionary page; the whole chunk without an offset index.
   */
  chunkBytesFor(g: number, c: number, from: number, to: number): ByteRange[] {
    const k = g * this.columns + c
    const p0 = this.firstPage[k]
    const n = this.firstPage[k + 1] - p0
    const start = this.chunkStart[k]
    if (n === 0) return [[start, start + this.chunkSize[k]]]
    let first = -1
    let last = -1
    for (let i = 0; i < n; i++) {
      const [s, e] = this.pageRows(g, c, i)
      if (e > from && s < to) {
        if (first < 0) first = i
        last = i
      }
    }
    if (first < 0) return []
    const out: ByteRange[] = []
    const firstPage = this.pageOffset[p0]
    if (firstPage > start) out.push([start, firstPage])
    out.push([this.pageOffset[p0 + first], this.pageOffset[p0 + last] + this.pageSize[p0 + last]])
    return out
  }

  /** Whether key column c's chunk statistics in row group g can hold `key` (a statKey). */
  keyMayHold(g: number, c: number, key: unknown): boolean {
    return mayHold(key, this.chunkMin[c].get(g), this.chunkMax[c].get(g))
  }

  /**
   * Rows of row group g (relative) whose pages can hold the key, as one hull [from, to), by
   * the key columns' ColumnIndex; the whole group when no key column has one. Null when no
   * page can.
   */
  keyRows(g: number, keys: unknown[]): ByteRange | null {
    let from = 0
    let to = this.groupRows(g)
    for (let c = 0; c < keys.length; c++) {
      const first = this.statFirst[g * this.keyColumns + c]
      if (keys[c] === undefined || first < 0) continue
      const mins = this.pageMin[c]
      const maxs = this.pageMax[c]
      const nulls = this.nullPages[c]
      const n = this.pageCount(g, c)
      let lo = -1
      let hi = -1
      for (let i = 0; i < n; i++) {
        if (nulls[first + i] === 1) continue
        if (!mayHold(keys[c], mins.get(first + i), maxs.get(first + i))) continue
        const [s, e] = this.pageRows(g, c, i)
        if (lo < 0) lo = s
        hi = e
      }
      if (lo < 0) return null
      from = Math.max(from, lo)
      to = Math.min(to, hi)
      if (from >= to) return null
    }
    return [from, to]
  }

  /** hyparquet's ColumnChunk of column c in row group g, with what its reads use (name: the column's). */
  columnChunk(g: number, c: number, name: string): ColumnChunk {
    const k = g * this.columns + c
    const start = this.chunkStart[k]
    const dictionary = (this.flags[k] & HAS_DICTIONARY_OFFSET) !== 0
    return {
      file_offset: BigInt(start),
      meta_data: {
        type: this.types[c],
        encodings: [],
        path_in_schema: [name],
        codec: CODECS[this.codecs[k]],
        num_values: BigInt(this.groupRows(g)),
        total_uncompressed_size: 0n,
        total_compressed_size: BigInt(this.chunkSize[k]),
        data_page_offset: BigInt(start + this.dataPageDelta[k]),
        dictionary_page_offset: dictionary ? BigInt(start) : undefined,
      },
    }
  }

  /** The chunk's OffsetIndex entries as hyparquet reads them; undefined without an OffsetIndex. */
  pageLocations(g: number, c: number): PageLocation[] | undefined {
    const k = g * this.columns + c
    const p0 = this.firstPage[k]
    const n = this.firstPage[k + 1] - p0
    if (n === 0) return undefined
    const out: PageLocation[] = new Array(n)
    for (let i = 0; i < n; i++) {
      out[i] = { offset: BigInt(this.pageOffset[p0 + i]), compressed_page_size: this.pageSize[p0 + i], first_row_index: BigInt(this.pageFirstRow[p0 + i]) }
    }
    return out
  }

  /** Row group g as objects (tests, benchmarks). */
  group(g: number): GroupIndex {
    const chunks: ChunkIndex[] = []
    for (let c = 0; c < this.columns; c++) {
      const chunk: ChunkIndex = { start: this.start(g, c), end: this.end(g, c) }
      const pages = this.pageLocations(g, c)
      if (pages) chunk.pages = pages
      if (c < this.keyColumns) {
        chunk.min = this.chunkMin[c].get(g)
        chunk.max = this.chunkMax[c].get(g)
        const first = this.statFirst[g * this.keyColumns + c]
        if (first >= 0) {
          const n = this.pageCount(g, c)
          chunk.pageMin = Array.from({ length: n }, (_, i) => this.pageMin[c].get(first + i))
          chunk.pageMax = Array.from({ length: n }, (_, i) => this.pageMax[c].get(first + i))
          chunk.nullPages = Array.from({ length: n }, (_, i) => this.nullPages[c][first + i] === 1)
        }
      }
      chunks.push(chunk)
    }
    return { rowStart: this.rowStart(g), rows: this.groupRows(g), chunks }
  }

  /** Bytes this index takes in memory: its typed arrays and statistics, computed from their lengths. */
  get memoryBytes(): number {
    let n = OBJECT_BYTES * 2 + 8 * (this.types.length + this.chunkMin.length * 5)
    for (const a of [this.rowStarts, this.chunkStart, this.chunkSize, this.dataPageDelta, this.codecs, this.flags, this.firstPage, this.pageOffset, this.pageSize, this.pageFirstRow, this.statFirst, ...this.nullPages]) {
      n += viewBytes(a)
    }
    for (const s of [...this.chunkMin, ...this.chunkMax, ...this.pageMin, ...this.pageMax]) n += s.memoryBytes
    return n
  }
}

/**
 * Reads the row groups' layout and the page index of the layout's columns (`chunkOf`: their
 * positions among row group 0's column chunks; `elements`: their schema elements) into a
 * FileIndex. The page index sits between the last row group and the footer, so after a footer
 * read it is usually in memory already (`file` serves it from there); otherwise it costs one
 * more read, once per file.
 */
export async function indexFile(file: AsyncBuffer, metadata: FileMetaData, chunkOf: number[], elements: SchemaElement[], keyColumns: number): Promise<FileIndex> {
  const groups = metadata.row_groups.length
  const columns = chunkOf.length
  const chunks = groups * columns
  const rowStarts = new Float64Array(groups + 1)
  const types: ParquetType[] = []
  const chunkStart = new Array<number>(chunks)
  const chunkSize = new Array<number>(chunks)
  const dataPageDelta = new Array<number>(chunks)
  const codecs = new Uint8Array(chunks)
  const flags = new Uint8Array(chunks)
  const chunkMin = Array.from({ length: keyColumns }, () => new Array<unknown>(groups))
  const chunkMax = Array.from({ length: keyColumns }, () => new Array<unknown>(groups))
  const wanted: { k: number; kind: 'offset' | 'column'; range: ByteRange }[] = []
  metadata.row_groups.forEach((rg, g) => {
    rowStarts[g + 1] = rowStarts[g] + Number(rg.num_rows)
    chunkOf.forEach((pos, c) => {
      const name = elements[c].name
      const at = rg.columns[pos]?.meta_data?.path_in_schema[0] === name ? pos : rg.columns.findIndex((ch) => ch.meta_data?.path_in_schema[0] === name)
      const chunk = rg.columns[at]
      const meta = chunk?.meta_data
      if (!meta) throw new Error(`data file row group ${g}: no column chunk (with metadata) of column ${name}`)
      if (chunk.file_path) throw new Error(`data file row group ${g}: column ${name} is in another file (${chunk.file_path}); not supported`)
      if (g === 0) types.push(meta.type)
      else if (meta.type !== types[c]) throw new Error(`data file row group ${g}: column ${name} is ${meta.type}, in row group 0 ${types[c]}`)
      const k = g * columns + c
      const start = Number(meta.dictionary_page_offset || meta.data_page_offset)
      chunkStart[k] = start
      chunkSize[k] = Number(meta.total_compressed_size)
      dataPageDelta[k] = Number(meta.data_page_offset) - start
      const codec = CODECS.indexOf(meta.codec)
      codecs[k] = codec < 0 ? NO_CODEC : codec
      if (meta.dictionary_page_offset) flags[k] |= HAS_DICTIONARY_OFFSET
      if (c < keyColumns) {
        chunkMin[c][g] = meta.statistics?.min_value
        chunkMax[c][g] = meta.statistics?.max_value
      }
      if (chunk.offset_index_offset !== undefined && chunk.offset_index_length) {
        const s = Number(chunk.offset_index_offset)
        wanted.push({ k, kind: 'offset', range: [s, s + chunk.offset_index_length] })
        if (c < keyColumns && chunk.column_index_offset !== undefined && chunk.column_index_length) {
          const t = Number(chunk.column_index_offset)
          wanted.push({ k, kind: 'column', range: [t, t + chunk.column_index_length] })
        }
      }
    })
  })
  const pagesOf = new Array<PageLocation[] | undefined>(chunks)
  const indexOf = new Map<number, ColumnIndex>()
  if (wanted.length > 0) {
    let lo = Infinity
    let hi = -Infinity
    for (const w of wanted) {
      lo = Math.min(lo, w.range[0])
      hi = Math.max(hi, w.range[1])
    }
    const region = new Uint8Array(await file.slice(lo, hi))
    for (const w of wanted) {
      const view = new DataView(region.buffer, region.byteOffset + w.range[0] - lo, w.range[1] - w.range[0])
      const c = w.k % columns
      try {
        if (w.kind === 'offset') pagesOf[w.k] = readOffsetIndex({ view, offset: 0 }).page_locations
        else indexOf.set(w.k, readColumnIndex({ view, offset: 0 }, elements[c], ALL_STAT_PARSERS))
      } catch (e) {
        throw new Error(`data file row group ${Math.floor(w.k / columns)}: unreadable ${w.kind === 'offset' ? 'OffsetIndex' : 'ColumnIndex'} of column ${elements[c].name}: ${(e as Error).message}`)
      }
    }
  }
  const firstPage = new Array<number>(chunks + 1)
  const pageOffset: number[] = []
  const pageSize: number[] = []
  const pageFirstRow: number[] = []
  const statFirst = new Int32Array(groups * keyColumns).fill(-1)
  const pageMin = Array.from({ length: keyColumns }, () => [] as unknown[])
  const pageMax = Array.from({ length: keyColumns }, () => [] as unknown[])
  const nullPages = Array.from({ length: keyColumns }, () => [] as number[])
  for (let k = 0; k < chunks; k++) {
    firstPage[k] = pageOffset.length
    const pages = pagesOf[k]
    if (!pages) continue
    for (const p of pages) {
      pageOffset.push(Number(p.offset))
      pageSize.push(p.compressed_page_size)
      pageFirstRow.push(Number(p.first_row_index))
    }
    // a column index without page locations (or of another page count) cannot place its pages
    const ci = indexOf.get(k)
    if (ci === undefined || ci.min_values.length !== pages.length) continue
    const g = Math.floor(k / columns)
    const c = k % columns
    statFirst[g * keyColumns + c] = pageMin[c].length
    for (let i = 0; i < pages.length; i++) {
      pageMin[c].push(ci.min_values[i])
      pageMax[c].push(ci.max_values[i])
      nullPages[c].push(ci.null_pages[i] ? 1 : 0)
    }
  }
  firstPage[chunks] = pageOffset.length
  return new FileIndex({
    columns,
    keyColumns,
    rowStarts,
    types,
    chunkStart: packInts(chunkStart),
    chunkSize: packInts(chunkSize),
    dataPageDelta: packInts(dataPageDelta),
    codecs,
    flags,
    firstPage: packInts(firstPage),
    pageOffset: packInts(pageOffset),
    pageSize: packInts(pageSize),
    pageFirstRow: packInts(pageFirstRow),
    chunkMin: chunkMin.map((xs) => StatValues.of(xs)),
    chunkMax: chunkMax.map((xs) => StatValues.of(xs)),
    statFirst,
    pageMin: pageMin.map((xs) => StatValues.of(xs)),
    pageMax: pageMax.map((xs) => StatValues.of(xs)),
    nullPages: nullPages.map((xs) => Uint8Array.from(xs)),
  })
}

/** Ranges merged where they touch or overlap, sorted. */
export function mergeRanges(ranges: ByteRange[], gap = 0): ByteRange[] {
  const sorted = ranges.filter((r) => r[1] > r[0]).sort((a, b) => a[0] - b[0] || a[1] - b[1])
  const out: ByteRange[] = []
  for (const r of sorted) {
    const last = out[out.length - 1]
    if (last && r[0] <= last[1] + gap) last[1] = Math.max(last[1], r[1])
    else out.push([r[0], r[1]])
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// Keys against statistics

/** A stats-comparable form of a key value, or undefined when this column's statistics cannot be trusted for it. */
export function statKey(type: DataType, element: SchemaElement, physical: unknown): unknown {
  if (physical === null || physical === undefined) return undefined
  let bytes: Uint8Array
  switch (type.root) {
    case 'BOOLEAN':
      if (element.type !== 'BOOLEAN') return undefined
      bytes = Uint8Array.of(physical ? 1 : 0)
      break
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'DATE':
      if (element.type !== 'INT32' || element.converted_type === 'DECIMAL') return undefined
      bytes = int32Bytes(Number(physical))
      break
    case 'BIGINT':
      if (element.type !== 'INT64' || element.converted_type === 'DECIMAL' || element.converted_type?.startsWith('TIMESTAMP') || element.logical_type?.type === 'TIMESTAMP') return undefined
      bytes = int64Bytes(physical as bigint)
      break
    case 'TIMESTAMP': {
      if (element.type !== 'INT64') return undefined
      const millis = (type.precision ?? 6) <= 3
      const unit = element.logical_type?.type === 'TIMESTAMP' ? element.logical_type.unit : element.converted_type === 'TIMESTAMP_MILLIS' ? 'MILLIS' : element.converted_type === 'TIMESTAMP_MICROS' ? 'MICROS' : undefined
      if (unit !== (millis ? 'MILLIS' : 'MICROS')) return undefined
      bytes = int64Bytes(physical as bigint)
      break
    }
    case 'DECIMAL': {
      const p = type.precision ?? 10
      if (p > 18 || element.converted_type !== 'DECIMAL' || (element.scale ?? 0) !== (type.scale ?? 0)) return undefined
      if (p <= 9 && element.type === 'INT32') bytes = int32Bytes(Number(physical))
      else if (element.type === 'INT64') bytes = int64Bytes(BigInt(physical as bigint))
      else return undefined
      break
    }
    case 'CHAR':
    case 'VARCHAR':
    case 'BINARY':
    case 'VARBINARY':
      if (element.type !== 'BYTE_ARRAY') return undefined
      bytes = typeof physical === 'string' ? new TextEncoder().encode(physical) : (physical as Uint8Array)
      break
    default:
      // FLOAT/DOUBLE: NaN and -0.0 are outside Parquet's statistics order
      return undefined
  }
  return convertMetadata(bytes, element, ALL_STAT_PARSERS)
}

function int32Bytes(v: number): Uint8Array {
  const b = new Uint8Array(4)
  new DataView(b.buffer).setInt32(0, v, true)
  return b
}

function int64Bytes(v: bigint): Uint8Array {
  const b = new Uint8Array(8)
  new DataView(b.buffer).setBigInt64(0, v, true)
  return b
}

/** Order of two statistics of one column (both physical as STAT_PARSERS leave them); NaN when incomparable. */
function compareStat(a: unknown, b: unknown): number {
  if (a instanceof Uint8Array && b instanceof Uint8Array) {
    const n = Math.min(a.length, b.length)
    for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i]
    return a.length - b.length
  }
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) return a < b ? -1 : a > b ? 1 : 0
  if (typeof a === 'boolean' && typeof b === 'boolean') return Number(a) - Number(b)
  return NaN
}

/** Whether a value within [min, max] can be `key` (undefined bounds or key: it can). */
export function mayHold(key: unknown, min: unknown, max: unknown): boolean {
  if (key === undefined) return true
  if (min !== undefined && min !== null && compareStat(key, min) < 0) return false
  if (max !== undefined && max !== null && compareStat(key, max) > 0) return false
  return true
}

// ---------------------------------------------------------------------------------------------
// Prefetched byte ranges

/** The bytes as an ArrayBuffer of their own: the underlying one when they span it whole, else a copy. */
export function arrayBufferOf(bytes: Uint8Array): ArrayBuffer {
  if (bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer) return bytes.buffer
  return bytes.slice().buffer as ArrayBuffer
}

/**
 * An AsyncBuffer over `base` that serves reads inside ranges fetched ahead (fetch()) from
 * memory, so hyparquet's separate reads of a dictionary page and of each column's pages
 * cost the requests fetch() made and no more.
 */
export class PrefetchedFile implements AsyncBuffer {
  readonly byteLength: number
  private spans: { start: number; bytes: Uint8Array }[] = []

  constructor(private readonly base: AsyncBuffer) {
    this.byteLength = base.byteLength
  }

  covers(start: number, end: number): boolean {
    return this.spans.some((s) => s.start <= start && end <= s.start + s.bytes.length)
  }

  /** Bytes held in memory. */
  get heldBytes(): number {
    return this.spans.reduce((n, s) => n + s.bytes.length, 0)
  }

  /** Drops what was fetched (a scan moving past it). */
  clear(): void {
    this.spans = []
  }

  /**
   * Fetches the ranges not yet held: as one request spanning them all when that span is at
   * most `maxSpan` bytes and at most `maxWaste` times the bytes wanted, otherwise at once
   * one request per run of ranges less than `gap` apart.
   */
  async fetch(ranges: ByteRange[], maxSpan: number, gap: number, maxWaste = Infinity): Promise<void> {
    const missing = mergeRanges(ranges.filter(([s, e]) => !this.covers(s, e)))
    if (missing.length === 0) return
    const hull: ByteRange = [missing[0][0], missing[missing.length - 1][1]]
    const wanted = missing.reduce((n, [s, e]) => n + e - s, 0)
    const span = hull[1] - hull[0]
    const reads = span <= maxSpan && span <= wanted * maxWaste ? [hull] : mergeRanges(missing, gap)
    const got = await Promise.all(reads.map(async ([s, e]) => ({ start: s, bytes: new Uint8Array(await this.base.slice(s, e)) })))
    this.spans.push(...got)
  }

  /** Bytes [start, end) when a fetched range holds them (a view, not a copy), else null. */
  bytes(start: number, end: number): Uint8Array | null {
    for (const s of this.spans) {
      if (s.start <= start && end <= s.start + s.bytes.length) return s.bytes.subarray(start - s.start, end - s.start)
    }
    return null
  }

  slice(start: number, end: number = this.byteLength): Promise<ArrayBuffer> | ArrayBuffer {
    for (const s of this.spans) {
      if (s.start <= start && end <= s.start + s.bytes.length) return arrayBufferOf(s.bytes.subarray(start - s.start, end - s.start))
    }
    return this.base.slice(start, end)
  }
}
