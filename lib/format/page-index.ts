// What a data file's footer and page index say about where rows and keys are, in the form a
// point lookup and a deletion-vector scan use them (docs/format.md "Data files: row groups,
// pages and the page index"):
// - per row group: its first row, its row count and, per column, the byte range of its chunk,
//   the chunk's min/max statistics, and (from the OffsetIndex) where each data page starts,
//   in bytes and in rows;
// - for the key columns, per page, the min/max of the ColumnIndex.
// Statistics stay physical values (numbers, bigints, bytes) so that a key can be compared
// with them in the same terms: the key is encoded as the writer encodes it and put through
// hyparquet's own statistics conversion, so both sides of a comparison went through the same
// (monotone) function. Only types whose Parquet statistics order is Paimon's key order are
// compared (integers, dates, timestamps, decimals up to precision 18, strings and binaries
// by unsigned bytes, booleans); for floats and wide decimals nothing is pruned.

import { readColumnIndex, readOffsetIndex } from 'hyparquet'
import type { AsyncBuffer, FileMetaData, OffsetIndex, SchemaElement } from 'hyparquet'
import { DEFAULT_PARSERS } from 'hyparquet/src/convert.js'
import { convertMetadata } from 'hyparquet/src/metadata.js'
import type { DataType } from '../types.ts'

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

export interface ChunkIndex {
  /** bytes of the column chunk, dictionary page included: [start, end) */
  start: number
  end: number
  /** the data pages (OffsetIndex); absent when the chunk has no offset index (one page, or another writer) */
  pages?: PageLocation[]
  /** chunk statistics as physical values; undefined when unknown */
  min?: unknown
  max?: unknown
  /** per page (ColumnIndex, key columns only): min, max and whether the page holds only nulls */
  pageMin?: unknown[]
  pageMax?: unknown[]
  nullPages?: boolean[]
}

export interface GroupIndex {
  /** file position of the group's first row */
  rowStart: number
  rows: number
  /** by layout column (the order of `fileColumns`) */
  chunks: ChunkIndex[]
}

/** Half-open byte range [0] .. [1]. */
export type ByteRange = [number, number]

/**
 * Reads the row groups' layout and the page index of `columns` (positions of the layout's
 * columns among the file's column chunks). The page index sits between the last row group
 * and the footer, so after a footer read it is usually in memory already (`file` serves it
 * from there); otherwise it costs one more read, once per file.
 */
export async function indexGroups(file: AsyncBuffer, metadata: FileMetaData, chunkOf: number[], elements: SchemaElement[], keyColumns: number): Promise<GroupIndex[]> {
  const groups: GroupIndex[] = []
  const wanted: { g: number; c: number; kind: 'offset' | 'column'; range: ByteRange }[] = []
  let rowStart = 0
  metadata.row_groups.forEach((rg, g) => {
    const chunks: ChunkIndex[] = chunkOf.map((pos, c) => {
      const name = elements[c].name
      const at = rg.columns[pos]?.meta_data?.path_in_schema[0] === name ? pos : rg.columns.findIndex((ch) => ch.meta_data?.path_in_schema[0] === name)
      const chunk = rg.columns[at]
      const meta = chunk?.meta_data
      if (!meta) throw new Error(`data file row group ${g}: no column chunk (with metadata) of column ${name}`)
      const start = Number(meta.dictionary_page_offset || meta.data_page_offset)
      const stats = meta.statistics
      const out: ChunkIndex = { start, end: start + Number(meta.total_compressed_size), min: stats?.min_value, max: stats?.max_value }
      if (chunk.offset_index_offset !== undefined && chunk.offset_index_length) {
        const s = Number(chunk.offset_index_offset)
        wanted.push({ g, c, kind: 'offset', range: [s, s + chunk.offset_index_length] })
        if (c < keyColumns && chunk.column_index_offset !== undefined && chunk.column_index_length) {
          const t = Number(chunk.column_index_offset)
          wanted.push({ g, c, kind: 'column', range: [t, t + chunk.column_index_length] })
        }
      }
      return out
    })
    groups.push({ rowStart, rows: Number(rg.num_rows), chunks })
    rowStart += Number(rg.num_rows)
  })
  if (wanted.length === 0) return groups
  const lo = Math.min(...wanted.map((w) => w.range[0]))
  const hi = Math.max(...wanted.map((w) => w.range[1]))
  const region = new Uint8Array(await file.slice(lo, hi))
  for (const w of wanted) {
    const view = new DataView(region.buffer, region.byteOffset + w.range[0] - lo, w.range[1] - w.range[0])
    const chunk = groups[w.g].chunks[w.c]
    try {
      if (w.kind === 'offset') {
        chunk.pages = readOffsetIndex({ view, offset: 0 }).page_locations
      } else {
        const ci = readColumnIndex({ view, offset: 0 }, elements[w.c], ALL_STAT_PARSERS)
        chunk.pageMin = ci.min_values
        chunk.pageMax = ci.max_values
        chunk.nullPages = ci.null_pages
      }
    } catch (e) {
      throw new Error(`data file row group ${w.g}: unreadable ${w.kind === 'offset' ? 'OffsetIndex' : 'ColumnIndex'} of column ${elements[w.c].name}: ${(e as Error).message}`)
    }
  }
  // a column index without page locations (or of another page count) cannot place its pages
  for (const g of groups) {
    for (const c of g.chunks) {
      if (c.pageMin && (!c.pages || c.pages.length !== c.pageMin.length)) {
        delete c.pageMin
        delete c.pageMax
        delete c.nullPages
      }
    }
  }
  return groups
}

/** Rows [from, to) of page `i` of a chunk, relative to its row group. */
export function pageRows(pages: PageLocation[], i: number, groupRows: number): ByteRange {
  return [Number(pages[i].first_row_index), i + 1 < pages.length ? Number(pages[i + 1].first_row_index) : groupRows]
}

/**
 * Bytes a read of rows [from, to) (relative to the group) of a chunk needs: the pages holding
 * them and, before them, the dictionary page; the whole chunk without an offset index.
 */
export function chunkBytesFor(chunk: ChunkIndex, groupRows: number, from: number, to: number): ByteRange[] {
  const pages = chunk.pages
  if (!pages || pages.length === 0) return [[chunk.start, chunk.end]]
  let first = -1
  let last = -1
  for (let i = 0; i < pages.length; i++) {
    const [s, e] = pageRows(pages, i, groupRows)
    if (e > from && s < to) {
      if (first < 0) first = i
      last = i
    }
  }
  if (first < 0) return []
  const out: ByteRange[] = []
  const firstPage = Number(pages[0].offset)
  if (firstPage > chunk.start) out.push([chunk.start, firstPage])
  out.push([Number(pages[first].offset), Number(pages[last].offset) + pages[last].compressed_page_size])
  return out
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
export function compareStat(a: unknown, b: unknown): number {
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

/**
 * Rows of the group (relative) whose pages can hold the key, as one hull [from, to), by the
 * key columns' ColumnIndex; the whole group when no key column has one. Null when no page can.
 */
export function keyRows(group: GroupIndex, keys: unknown[]): ByteRange | null {
  let from = 0
  let to = group.rows
  for (let c = 0; c < keys.length; c++) {
    const chunk = group.chunks[c]
    if (keys[c] === undefined || !chunk.pageMin || !chunk.pages) continue
    let lo = -1
    let hi = -1
    for (let i = 0; i < chunk.pages.length; i++) {
      if (chunk.nullPages?.[i]) continue
      if (!mayHold(keys[c], chunk.pageMin[i], chunk.pageMax![i])) continue
      const [s, e] = pageRows(chunk.pages, i, group.rows)
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

  slice(start: number, end: number = this.byteLength): Promise<ArrayBuffer> | ArrayBuffer {
    for (const s of this.spans) {
      if (s.start <= start && end <= s.start + s.bytes.length) return arrayBufferOf(s.bytes.subarray(start - s.start, end - s.start))
    }
    return this.base.slice(start, end)
  }
}
