// Strata's encoder of Parquet column chunks (encoding was ~30% of compaction CPU in
// hyparquet-writer). It writes one flat column chunk of a data file from a typed array
// (Int32Array, BigInt64Array, Float32Array, Float64Array, …) or a plain array (strings, bytes,
// bigints, nulls) without making an object per value where it can, and returns the chunk's
// metadata and page index for the file footer. It does so in two halves: `encodeColumnChunk`
// encodes the pages into an arena, `placeChunk` writes them, compressed, at the file's offset
// (lib/format/page-compression.ts: a compression thread works in between); `writeColumnChunk`
// does both at once. The pieces it assembles: parquet-encode-columns.ts (a column as the
// encoder holds it), parquet-encode-stats.ts (min/max), parquet-encode-dictionary.ts, and
// parquet-encode-pages.ts (page values, levels and headers).
//
// What it writes (Parquet format, parquet-format's Encodings.md and PageIndex.md):
// - data pages v2 (levels uncompressed, values compressed with the chunk's codec), as
//   hyparquet-writer wrote them before; definition levels (OPTIONAL columns only, max level
//   1) in the RLE/bit-packed hybrid with bit width 1;
// - values PLAIN, or RLE_DICTIONARY (a PLAIN dictionary page first, then per data page a
//   bit-width byte and the indices in the hybrid encoding, one bit width for the chunk as
//   parquet-java does); BOOLEAN always PLAIN (bit-packed), which every reader accepts;
// - whether a chunk gets a dictionary, and where pages break, by the rules hyparquet-writer
//   used (sample of up to 1,000 values, then "dictionary + indices at most half of plain";
//   a page ends once its estimated values reach the page size), so the page index of a file
//   is the one the old encoder wrote for the same rows;
// - chunk statistics (min/max, null count, NaN count for floats) and, on request, a
//   ColumnIndex (per-page min/max, null pages and counts, boundary order); an OffsetIndex
//   when the chunk has more than one page.

import type { ColumnChunk, ColumnIndex, ColumnMetaData, CompressionCodec, OffsetIndex, SchemaElement } from 'hyparquet'
import type { ByteWriter } from 'hyparquet-writer'
import { unconvertMinMax } from 'hyparquet-writer/src/unconvert.js'
import { type Column } from './columnar-types.ts'
import { InlinePageCompressor, type PageArena, type PageCompressor } from './page-compression.ts'
import { releaseSnappyScratch, writeVarint } from './snappy.ts'
import { type Dictionary, buildDictionary, releaseDictionaryScratch, sampleAllows } from './parquet-encode-dictionary.ts'
import { ENC_PLAIN, ENC_RLE_DICTIONARY, SCRATCH_KEEP, dataPageHeader, dictionaryPageHeader, encodeObjs, encodeUtf8, ensureLevels, ensureScratch, header, levelScratch, pageStarts, releasePageScratch, writeHybrid, writePlain } from './parquet-encode-pages.ts'
import { Kind, type Prepared, prepare } from './parquet-encode-columns.ts'
import { bounds, compareStat, isFloat } from './parquet-encode-stats.ts'
import { type NestedColumn, shred } from './parquet-nested.ts'

export interface ChunkEncodeOptions {
  codec: CompressionCodec
  /** compressor of `codec`; null for UNCOMPRESSED */
  compress: ((input: Uint8Array) => Uint8Array) | null
  /** target estimated value bytes per data page */
  pageSize: number
  /** whether to build a ColumnIndex (page min/max) */
  columnIndex: boolean
}

/** A ColumnIndex as hyparquet-writer's footer code takes it (with NaN counts for floats). */
export interface PageColumnIndex extends ColumnIndex {
  nan_counts?: bigint[]
}

export interface EncodedChunk {
  chunk: ColumnChunk
  columnIndex?: PageColumnIndex
  offsetIndex?: OffsetIndex
}

if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) throw new Error('Strata\'s Parquet encoder needs a little-endian platform')

/** Drops scratch buffers grown past SCRATCH_KEEP by the chunk just encoded. */
function releaseScratch(): void {
  releasePageScratch()
  releaseDictionaryScratch(SCRATCH_KEEP)
  releaseSnappyScratch(SCRATCH_KEEP)
}

/**
 * Per page of a ChunkPlan: where its levels start, where its values start and end in the
 * arena, its rows, nulls and first row, its level entries (its rows in a flat column) and
 * the bytes of its repetition levels (0 in a flat column; they come before the definition levels).
 */
const PAGE_FIELDS = 8

/** One column chunk encoded into a PageArena, waiting for its pages' compression and its offsets in the file. */
export interface ChunkPlan {
  element: SchemaElement
  /** the leaf's path in the schema, for a leaf of a nested column (else [element.name]) */
  path?: string[]
  rows: number
  /** level entries of a nested leaf (else one per row) */
  values?: number
  codec: CompressionCodec
  /** the dictionary page's entries (it is the plan's first page), or -1 without one */
  dictEntries: number
  /** PAGE_FIELDS numbers per page, dictionary page first */
  pages: number[]
  encoding: number
  stats: ColumnMetaData['statistics']
  columnIndex: PageColumnIndex | undefined
}

/** The number of pages of `plan` (the dictionary page included). */
export function planPages(plan: ChunkPlan): number {
  return plan.pages.length / PAGE_FIELDS
}

/** Appends the arena ranges of `plan`'s page values, [start, end) pairs, to `ranges` (what a compressor takes). */
export function planRanges(plan: ChunkPlan, ranges: number[]): void {
  const p = plan.pages
  for (let k = 0; k < p.length; k += PAGE_FIELDS) ranges.push(p[k + 1], p[k + 2])
}

/**
 * Encodes rows [0, rows) of `col` as the pages of one column chunk of `element` into `arena`.
 * `col` holds physical values (lib/format/columnar-types.ts): a typed array holds no nulls.
 * `placeChunk` writes the pages once they are compressed. Its steps are small functions of
 * their own (V8 compiles a small function sooner and faster than one large one, which
 * matters in a process's first job: docs/benchmarks.md "The cold start's levers").
 */
export function encodeColumnChunk(arena: PageArena, element: SchemaElement, col: Column, rows: number, opts: Omit<ChunkEncodeOptions, 'compress'>): ChunkPlan {
  const p = prepare(element, col, rows)
  const planned: number[] = []
  const dict = p.kind !== Kind.Boolean && p.nonNull > 0 && sampleAllows(p, element, col) ? buildDictionary(p, element) : null
  // the bounds of a dictionary's objects are those of its entries
  const stats = dict !== null && dict.entries !== null ? bounds({ ...p, objs: dict.entries }, element, 0, dict.size) : bounds(p, element, 0, p.nonNull)
  if (dict !== null) appendDictionaryPage(arena, p, dict, element, planned)
  // PLAIN objects are encoded once for the chunk: their UTF-8 lengths set the page breaks
  const plainObjs = dict !== null ? null : plainObjects(p, element)
  const starts = pageStarts(p, dict !== null, opts.pageSize, plainObjs === null ? null : plainObjs.ends, p.kind === Kind.ByteArray ? 4 : 0)
  const float = isFloat(p)
  const index = opts.columnIndex && starts.length > 1 ? new PageIndexBuilder(float) : null
  appendDataPages(arena, p, element, rows, starts, dict, plainObjs, index, planned)
  releaseScratch()
  return {
    element,
    rows,
    codec: opts.codec,
    dictEntries: dict !== null ? dict.size : -1,
    pages: planned,
    encoding: dict !== null ? ENC_RLE_DICTIONARY : ENC_PLAIN,
    stats: chunkStatistics(stats, rows - p.nonNull, float),
    columnIndex: index === null ? undefined : index.result(),
  }
}

function chunkStatistics(stats: { min: unknown; max: unknown; nans: number }, nulls: number, float: boolean): ColumnMetaData['statistics'] {
  const statistics = { min_value: stats.min, max_value: stats.max, null_count: BigInt(nulls), ...(float ? { nan_count: BigInt(stats.nans) } : {}) }
  return statistics as ColumnMetaData['statistics']
}

/** The chunk's PLAIN objects (strings, bytes, fixed-length decimals) encoded, or null for a fixed-width kind. */
function plainObjects(p: Prepared, element: SchemaElement): { buf: Uint8Array; ends: Int32Array } | null {
  if (p.u8 !== null) return encodeUtf8(p.u8, null, p.nonNull)
  if (p.objs !== null) return encodeObjs(p.objs, p.nonNull, p.kind, element)
  return null
}

/** Appends the dictionary page's values (its entries PLAIN) to `arena`, and the page to `planned`. */
function appendDictionaryPage(arena: PageArena, p: Prepared, dict: Dictionary, element: SchemaElement, planned: number[]): void {
  const at = arena.length
  if (p.u8 !== null) {
    const { buf, ends } = encodeUtf8(p.u8, dict.firsts, dict.size)
    arena.append(buf.subarray(0, ends[dict.size - 1]))
  } else if (dict.firsts !== null) {
    const vals = dictionaryWords(p.words!, p.width, dict.firsts, dict.size)
    arena.append(new Uint8Array(vals.buffer, 0, vals.byteLength))
  } else {
    const { buf, ends } = encodeObjs(dict.entries!, dict.size, p.kind, element)
    arena.append(buf.subarray(0, ends[dict.size - 1]))
  }
  planned.push(at, at, arena.length, 0, 0, 0, 0, 0)
}

/** The words of a fixed-width dictionary's entries, `width` per entry, from their first positions. */
function dictionaryWords(w: Int32Array, width: number, f: Int32Array, size: number): Int32Array {
  const vals = new Int32Array(size * width)
  if (width === 1) for (let e = 0; e < size; e++) vals[e] = w[f[e]]
  else {
    for (let e = 0; e < size; e++) {
      vals[2 * e] = w[2 * f[e]]
      vals[2 * e + 1] = w[2 * f[e] + 1]
    }
  }
  return vals
}

/** Non-null rows of [r0, r1): the sum of their definition levels. */
function countDefined(defs: Uint8Array, r0: number, r1: number): number {
  let n = 0
  for (let r = r0; r < r1; r++) n += defs[r]
  return n
}

/** Appends the data pages that begin at `starts` (levels, then values) to `arena`, and each page to `planned`. */
function appendDataPages(arena: PageArena, p: Prepared, element: SchemaElement, rows: number, starts: number[], dict: Dictionary | null, plainObjs: { buf: Uint8Array; ends: Int32Array } | null, index: PageIndexBuilder | null, planned: number[]): void {
  const pages = starts.length
  const optional = element.repetition_type !== 'REQUIRED'
  const defs = p.defs
  let a = 0 // first non-null value of the page
  for (let pg = 0; pg < pages; pg++) {
    const r0 = starts[pg]
    const r1 = pg + 1 < pages ? starts[pg + 1] : rows
    const b = defs === null ? a + (r1 - r0) : a + countDefined(defs, r0, r1)
    const nulls = r1 - r0 - (b - a)
    const levelStart = arena.length
    if (optional) appendDefinitionLevels(arena, defs, r0, r1, nulls)
    const valueStart = arena.length
    if (dict !== null) appendIndices(arena, dict, a, b)
    else if (plainObjs !== null) arena.append(plainObjs.buf.subarray(a === 0 ? 0 : plainObjs.ends[a - 1], b === 0 ? 0 : plainObjs.ends[b - 1]))
    else arena.append(writePlain(p, a, b))
    planned.push(levelStart, valueStart, arena.length, r1 - r0, nulls, r0, r1 - r0, 0)
    if (index !== null) index.add(p, element, a, b, nulls)
    a = b
  }
}

/** A page's definition levels (max level 1, bit width 1) in the RLE/bit-packed hybrid. */
function appendDefinitionLevels(arena: PageArena, defs: Uint8Array | null, r0: number, r1: number, nulls: number): void {
  let defBytes: number
  if (defs === null || nulls === 0) {
    const buf = ensureLevels(16)
    defBytes = writeVarint(buf, 0, (r1 - r0) * 2)
    buf[defBytes++] = 1
  } else {
    const buf = ensureLevels((r1 - r0) / 4 + 32)
    defBytes = writeHybrid(buf, 0, defs, r0, r1, 1)
  }
  arena.append(levelScratch.subarray(0, defBytes))
}

/** A page's dictionary indices of non-null values [a, b): a bit-width byte, then the hybrid encoding. */
function appendIndices(arena: PageArena, dict: Dictionary, a: number, b: number): void {
  const buf = ensureScratch(Math.ceil(((b - a) * (dict.bitWidth + 1)) / 8) * 2 + 64)
  buf[0] = dict.bitWidth
  const end = writeHybrid(buf, 1, dict.indices, a, b, dict.bitWidth)
  arena.append(buf.subarray(0, end))
}

/** A chunk's ColumnIndex, page by page: per-page bounds, null pages and counts, and the boundary order. */
class PageIndexBuilder {
  readonly #float: boolean
  readonly #nullPages: boolean[] = []
  readonly #mins: Uint8Array[] = []
  readonly #maxes: Uint8Array[] = []
  readonly #nullCounts: bigint[] = []
  readonly #nanCounts: bigint[] = []
  /** a page of NaNs only has no bounds: then the chunk has no ColumnIndex */
  #dropped = false
  #ascending = true
  #descending = true
  #prevMin: unknown = undefined
  #prevMax: unknown = undefined

  constructor(float: boolean) {
    this.#float = float
  }

  /** The page of non-null values [a, b) with `nulls` nulls. */
  add(p: Prepared, element: SchemaElement, a: number, b: number, nulls: number): void {
    if (this.#dropped) return
    const { min, max, nans } = bounds(p, element, a, b)
    const nullPage = b === a
    const minBytes = unconvertMinMax(min as never, element as never, false)
    const maxBytes = unconvertMinMax(max as never, element as never, true)
    if (!nullPage && (!minBytes || !maxBytes)) {
      this.#dropped = true
      return
    }
    this.#nullPages.push(nullPage)
    this.#mins.push(minBytes ?? new Uint8Array())
    this.#maxes.push(maxBytes ?? new Uint8Array())
    this.#nullCounts.push(BigInt(nulls))
    if (this.#float) this.#nanCounts.push(BigInt(nans))
    if (min !== undefined) this.#order(min, max)
  }

  #order(min: unknown, max: unknown): void {
    if (this.#prevMin !== undefined) {
      const c = compareStat(this.#prevMin, min)
      if (c > 0) this.#ascending = false
      if (c < 0) this.#descending = false
    }
    const c = this.#prevMax !== undefined ? compareStat(this.#prevMax, max) : 0
    if (c > 0) this.#ascending = false
    if (c < 0) this.#descending = false
    this.#prevMin = min
    this.#prevMax = max
  }

  result(): PageColumnIndex | undefined {
    if (this.#dropped) return undefined
    const boundary_order = this.#ascending ? 'ASCENDING' : this.#descending ? 'DESCENDING' : 'UNORDERED'
    return { null_pages: this.#nullPages, min_values: this.#mins, max_values: this.#maxes, boundary_order, null_counts: this.#nullCounts, ...(this.#float ? { nan_counts: this.#nanCounts } : {}) }
  }
}

/**
 * Writes the chunk `plan` describes at the writer's offset: each page's header, levels (from
 * `arena`) and values as compressed, `pages.body(first + k)` for the plan's page k.
 */
export function placeChunk(out: ByteWriter, plan: ChunkPlan, arena: Uint8Array, pages: Pick<PageCompressor, 'body'>, first: number): EncodedChunk {
  const pg = plan.pages
  const count = pg.length / PAGE_FIELDS
  const chunkStart = out.offset
  let uncompressedTotal = 0
  let k = 0
  let dictionaryOffset: bigint | undefined
  if (plan.dictEntries >= 0) {
    dictionaryOffset = BigInt(out.offset)
    const raw = pg[2] - pg[1]
    const compressed = pages.body(first)
    const hl = dictionaryPageHeader(raw, compressed.length, plan.dictEntries)
    out.appendBytes(header.subarray(0, hl))
    out.appendBytes(compressed)
    uncompressedTotal += hl + raw
    k = 1
  }
  const dataPages = count - k
  const offsetIndex: OffsetIndex | undefined = dataPages > 1 ? { page_locations: [] } : undefined
  const dataOffset = BigInt(out.offset)
  for (; k < count; k++) {
    const f = k * PAGE_FIELDS
    const levelStart = pg[f]
    const valueStart = pg[f + 1]
    const defBytes = valueStart - levelStart
    const raw = pg[f + 2] - valueStart
    const pageOffset = out.offset
    const compressed = pages.body(first + k)
    const repBytes = pg[f + 7]
    const hl = dataPageHeader(defBytes + raw, defBytes + compressed.length, pg[f + 6], pg[f + 4], pg[f + 3], plan.encoding, defBytes - repBytes, repBytes)
    out.appendBytes(header.subarray(0, hl))
    if (defBytes > 0) out.appendBytes(arena.subarray(levelStart, valueStart))
    out.appendBytes(compressed)
    uncompressedTotal += hl + defBytes + raw
    offsetIndex?.page_locations.push({ offset: BigInt(pageOffset), compressed_page_size: out.offset - pageOffset, first_row_index: BigInt(pg[f + 5]) })
  }
  const dict = plan.dictEntries >= 0
  const element = plan.element
  const chunk: ColumnChunk = {
    file_offset: BigInt(chunkStart),
    meta_data: {
      type: element.type!,
      encodings: dict ? ['PLAIN', 'RLE_DICTIONARY'] : ['PLAIN'],
      path_in_schema: plan.path ?? [element.name],
      codec: plan.codec,
      num_values: BigInt(plan.values ?? plan.rows),
      total_uncompressed_size: BigInt(uncompressedTotal),
      total_compressed_size: BigInt(out.offset - chunkStart),
      data_page_offset: dataOffset,
      dictionary_page_offset: dictionaryOffset,
      statistics: plan.stats,
      encoding_stats: [
        ...(dict ? [{ page_type: 'DICTIONARY_PAGE' as const, encoding: 'PLAIN' as const, count: 1 }] : []),
        { page_type: 'DATA_PAGE_V2' as const, encoding: dict ? ('RLE_DICTIONARY' as const) : ('PLAIN' as const), count: dataPages },
      ],
    },
  }
  return { chunk, columnIndex: plan.columnIndex, offsetIndex }
}

/**
 * Writes rows [0, rows) of `col` as one column chunk of `element` at the writer's offset, its
 * pages compressed by `opts.compress` as they are placed.
 */
export function writeColumnChunk(out: ByteWriter, element: SchemaElement, col: Column, rows: number, opts: ChunkEncodeOptions): EncodedChunk {
  const compressor = new InlinePageCompressor(opts.compress)
  const plan = encodeColumnChunk(compressor.arenas[0], element, col, rows, opts)
  const ranges: number[] = []
  planRanges(plan, ranges)
  compressor.begin(0, ranges)
  return placeChunk(out, plan, compressor.arenas[0].bytes, compressor, 0)
}

/**
 * Encodes rows [0, rows) of a nested column (checked values, lib/format/parquet-nested.ts) as
 * one column chunk per leaf into `arena`: data pages v2 whose repetition and definition
 * levels are in the RLE/bit-packed hybrid at the bit width of the leaf's maximum level, values
 * PLAIN; a page ends at the first row boundary after its values reach the page size (a v2
 * page holds whole rows). Chunk statistics count the leaf's nulls at every level and bound its values.
 */
export function encodeNestedChunks(arena: PageArena, col: NestedColumn, values: ArrayLike<unknown>, rows: number, opts: Omit<ChunkEncodeOptions, 'compress' | 'columnIndex'>): ChunkPlan[] {
  const shredded = shred(col, values, rows)
  const plans = col.leaves.map((leaf, l) => {
    const { reps, defs, values: vals } = shredded[l]
    const n = reps.length
    const element = leaf.element
    // the non-null values as a REQUIRED column of their own: prepare makes no levels for them
    const p = prepare({ ...element, repetition_type: 'REQUIRED' }, vals, vals.length)
    const plainObjs = p.u8 !== null ? encodeUtf8(p.u8, null, p.nonNull) : p.objs !== null ? encodeObjs(p.objs, p.nonNull, p.kind, element) : null
    const fixed = p.kind === Kind.Boolean ? 0.125 : p.width * 4
    const repWidth = 32 - Math.clz32(leaf.maxRep)
    const defWidth = 32 - Math.clz32(leaf.maxDef)
    const planned: number[] = []
    let e0 = 0
    let a = 0
    let row = 0
    while (e0 < n) {
      // the page's entries [e0, e1) and values [a, b): whole rows until the page size is reached
      let e1 = e0
      let b = a
      let bytes = 0
      let pageRows = 0
      while (e1 < n && (e1 === e0 || reps[e1] !== 0 || bytes < opts.pageSize)) {
        if (reps[e1] === 0) pageRows++
        if (defs[e1] === leaf.maxDef) {
          bytes += plainObjs !== null ? plainObjs.ends[b] - (b === 0 ? 0 : plainObjs.ends[b - 1]) : fixed
          b++
        }
        e1++
      }
      const levelStart = arena.length
      const buf = ensureLevels(((e1 - e0) * 2 * Math.max(repWidth, defWidth)) / 8 + 64)
      let repBytes = 0
      if (repWidth > 0) repBytes = writeHybrid(buf, 0, reps, e0, e1, repWidth)
      let end = repBytes
      if (defWidth > 0) end = writeHybrid(buf, repBytes, defs, e0, e1, defWidth)
      arena.append(buf.subarray(0, end))
      const valueStart = arena.length
      if (plainObjs !== null) arena.append(plainObjs.buf.subarray(a === 0 ? 0 : plainObjs.ends[a - 1], b === 0 ? 0 : plainObjs.ends[b - 1]))
      else arena.append(writePlain(p, a, b))
      planned.push(levelStart, valueStart, arena.length, pageRows, e1 - e0 - (b - a), row, e1 - e0, repBytes)
      row += pageRows
      e0 = e1
      a = b
    }
    const stats = bounds(p, element, 0, p.nonNull)
    const float = isFloat(p)
    const statistics = { min_value: stats.min, max_value: stats.max, null_count: BigInt(n - p.nonNull), ...(float ? { nan_count: BigInt(stats.nans) } : {}) }
    const plan: ChunkPlan = { element, path: leaf.path, rows, values: n, codec: opts.codec, dictEntries: -1, pages: planned, encoding: ENC_PLAIN, stats: statistics as ColumnMetaData['statistics'], columnIndex: undefined }
    return plan
  })
  releaseScratch()
  return plans
}
