// The reader of data files written by Strata, Paimon's Java writer or pypaimon: opens the footer
// (cached), streams records with a projection and a deletion vector, and looks keys up.

import { parquetRead, parquetSchema } from 'hyparquet'
import type { AsyncBuffer, ColumnChunk, ColumnData, CompressionCodec, FileMetaData, SchemaElement, SchemaTree } from 'hyparquet'
import { StrataInputError } from '../errors.ts'
import type { KeyValue, RowKind, Value } from '../types.ts'
import { physicalEncoder, rawReadElement, valueDecoder, type PhysicalEncoder, type ValueDecoder } from './parquet-types.ts'
import type { DeletionVector } from './deletion-vector.ts'
import { type ByteRange, type FileIndex, type GroupIndex, type PageLocation, PrefetchedFile, STAT_PARSERS, indexFile, mergeRanges, statKey } from './page-index.ts'
import { type ByteLru, approximateBytes } from './byte-cache.ts'
import { checkPages } from './parquet-page-header.ts'
import { DECOMPRESSORS } from './decompressors.ts'
import { type ColumnSpec, type DataFileLayout, KEY_FIELD_PREFIX, VALUE_KIND, describeKey, fileColumns } from './data-file-layout.ts'
import { ManifestCheck } from './data-file-check.ts'
import { type NestedReadColumn, assembleNested, decodeLeafChunk, nestedReadColumn } from './parquet-nested.ts'
import { RAW_PARSERS, firstByName, topLevelElements, directBuffer, namedFileError, openFooter, openNamed } from './data-file-source.ts'
import type { ByteSource } from '../store/byte-source.ts'

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

interface ReadColumn {
  spec: ColumnSpec
  decode: ValueDecoder
  /** a nested column: how its leaves assemble, and where its leaf chunks are in each row group */
  nested?: NestedChunks
}

/**
 * A nested column's leaf chunks (lib/format/parquet-nested.ts), which Strata decodes itself:
 * the FileIndex holds the column as one chunk spanning its leaves (contiguous, in schema
 * order, as every writer lays a column out); this keeps where each leaf's chunk is.
 */
interface NestedChunks {
  column: NestedReadColumn
  /** hyparquet's path from the root to each leaf (its levels) */
  schemaPaths: SchemaTree[][]
  /** by row group and leaf (g * leaves + l): the chunk's start and size, and its codec */
  starts: number[]
  sizes: number[]
  codecs: CompressionCodec[]
  /** the first leaf's chunk's place in row group 0 */
  firstAt: number
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
 * request when that is at most this many bytes (a Strata file's row group of a narrow row is
 * smaller: see DEFAULT_ROW_GROUP_BYTES in data-file-writer.ts; a wide row's holds a page per
 * column); otherwise the key pages, then the row's pages, separately.
 */
const LOOKUP_SPAN_BYTES = 128 * 1024
/** the row's pages in all its columns as one request when they span at most this */
const ROW_SPAN_BYTES = 128 * 1024
/** ranges less than this apart share a request when they cannot all share one */
const RANGE_GAP_BYTES = 16 * 1024
/** columns one hyparquet read decodes at most (`#readRows`) */
const HYPARQUET_COLUMNS = 64
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
  /** by layout column, its element in the footer's raw-read schema (made on first use) */
  #rawElements: SchemaElement[] | null = null
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
    return openNamed(src, () => DataFileReader.#open(src, layout, opts))
  }

  static async #open(src: ByteSource, layout: DataFileLayout, opts: DataFileReaderOptions): Promise<DataFileReader> {
    const { tailBytes = DEFAULT_TAIL_BYTES, footerCache, cacheKey } = opts
    if (footerCache && cacheKey !== undefined) {
      const hit = footerCache.get(cacheKey)
      if (hit) return new DataFileReader(layout, src, directBuffer(src), hit)
    }
    const { file, metadata, present } = await openFooter(src, tailBytes, STAT_PARSERS)
    const columns: ReadColumn[] = []
    const elements: SchemaElement[] = []
    const rawElements = new Map<SchemaElement, SchemaElement>()
    let shape: SchemaShape | undefined
    for (const spec of fileColumns(layout)) {
      const found = present.get(spec.name)
      if (found === undefined) {
        const thin = spec.name.startsWith(KEY_FIELD_PREFIX) ? ` (every primary-key file has ${KEY_FIELD_PREFIX}<field> columns; files written with data-file.thin-mode=true are not supported)` : ''
        throw new Error(`data file has no column ${spec.name}${thin}; its columns are: ${[...present.keys()].join(', ')}`)
      }
      const isNested = spec.type.root === 'ARRAY' || spec.type.root === 'MAP' || spec.type.root === 'MULTISET' || spec.type.root === 'ROW'
      if (found.group !== isNested) throw new Error(`data file column ${spec.name} is ${found.group ? 'a nested group' : 'a primitive column'}; expected ${isNested ? `the group of a ${spec.type.root}` : `a primitive ${spec.type.root} column`}`)
      if (isNested) {
        // the schema's tree and the chunks' places made once for all nested columns
        shape ??= schemaShape(metadata)
        columns.push({ spec, decode: (r) => r as Value, nested: nestedChunksOf(nestedReadColumn(spec.name, spec.type, shape.topLevel.get(spec.name)!), metadata, shape) })
        elements.push(found.element)
        continue
      }
      columns.push({ spec, decode: valueDecoder(spec.name, spec.type, found.element) })
      elements.push(found.element)
      rawElements.set(found.element, rawReadElement(found.element, spec.type))
    }
    // a nested column is indexed as one chunk spanning its leaves, appended to each row group's chunks
    const indexed = withSpanChunks(metadata, columns)
    // each column's chunk in row group 0, found by name through a map: the same cost per column at any width
    const chunkAt = new Map<string, number>()
    indexed.row_groups[0]?.columns.forEach((ch, pos) => {
      const path = ch.meta_data?.path_in_schema
      if (path?.length === 1 && !chunkAt.has(path[0])) chunkAt.set(path[0], pos)
    })
    const chunkOf = columns.map((c) => {
      if (indexed.row_groups.length === 0) return 0
      const pos = chunkAt.get(c.spec.name)
      if (pos === undefined) throw new Error(`data file row group 0 has no column chunk ${c.spec.name}`)
      return pos
    })
    // what reads need of the footer, compactly: the chunks' places, codecs and pages, the key
    // columns' bounds; hyparquet's objects (~10 KiB per row group) would crowd the cache
    const index = await indexFile(file, indexed, chunkOf, elements, layout.keyFields.length)
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
    const fieldAt = new Map<string, number>()
    valueFields.forEach((f, j) => fieldAt.has(f.name) || fieldAt.set(f.name, j))
    return valueColumns.map((name) => {
      const j = fieldAt.get(name) ?? -1
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
   * index, in which the rows are numbered from the group's first; HYPARQUET_COLUMNS columns at
   * a time, under a schema of those columns only, as its cost per read grows with the square
   * of the columns it is given (it finds each chunk's column by name in lists).
   */
  async #readRows(idx: number[], g: number, from: number, to: number, file: PrefetchedFile): Promise<Value[][]> {
    if (idx.some((c) => this.#columns[c].nested)) return this.#readWithNested(idx, g, from, to, file)
    const index = this.#index
    const base = index.rowStart(g)
    // the pages hyparquet will decode, their headers checked first (it trusts them: checkPages)
    const ranges = idx.map((c) => index.chunkBytesFor(g, c, from - base, to - base))
    await file.fetch(ranges.flat(), ROW_SPAN_BYTES, RANGE_GAP_BYTES)
    for (let i = 0; i < idx.length; i++) {
      for (const [s, e] of ranges[i]) checkPages(file.bytes(s, e)!, `column ${this.#columns[idx[i]].spec.name}`, s)
    }
    if (idx.length <= HYPARQUET_COLUMNS) return this.#decodeRows(idx, g, from, to, file)
    const out: Value[][] = []
    for (let i = 0; i < idx.length; i += HYPARQUET_COLUMNS) {
      for (const col of await this.#decodeRows(idx.slice(i, i + HYPARQUET_COLUMNS), g, from, to, file)) out.push(col)
    }
    return out
  }

  /** `#readRows`' decoding by hyparquet of flat columns `idx`, their pages fetched and checked. */
  async #decodeRows(idx: number[], g: number, from: number, to: number, file: PrefetchedFile): Promise<Value[][]> {
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
    const schema = this.#footer.schema
    const metadata: FileMetaData = {
      version: 1,
      // the root and these columns: every column read is a flat child of the root
      schema: [{ ...schema[0], num_children: idx.length }, ...idx.map((c) => this.#rawElement(c))],
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

  /** The raw-read schema element (footer.schema) of flat layout column c: the root's child of its name. */
  #rawElement(c: number): SchemaElement {
    if (this.#rawElements === null) {
      const byName = topLevelElements(this.#footer.schema)
      this.#rawElements = this.#columns.map((col) => byName.get(col.spec.name)!)
    }
    return this.#rawElements[c]
  }

  /** `#readRows` of columns some of which are nested: the flat ones through hyparquet, each nested one decoded and assembled here. */
  async #readWithNested(idx: number[], g: number, from: number, to: number, file: PrefetchedFile): Promise<Value[][]> {
    const flat = idx.filter((c) => !this.#columns[c].nested)
    const flatRows = flat.length ? await this.#readRows(flat, g, from, to, file) : []
    const base = this.#index.rowStart(g)
    const out: Value[][] = []
    let f = 0
    for (const c of idx) {
      const nested = this.#columns[c].nested
      if (!nested) {
        out.push(flatRows[f++])
        continue
      }
      const start = this.#index.start(g, c)
      const end = this.#index.end(g, c)
      await file.fetch([[start, end]], ROW_SPAN_BYTES, RANGE_GAP_BYTES)
      const bytes = file.bytes(start, end)!
      checkPages(bytes, `column ${nested.column.name}`, start)
      const n = nested.column.leaves.length
      const leaves = nested.column.leaves.map((leaf, l) => {
        const k = g * n + l
        const at = nested.starts[k] - start
        return decodeLeafChunk(bytes.subarray(at, at + nested.sizes[k]), leaf, nested.schemaPaths[l], nested.codecs[k], DECOMPRESSORS as never, RAW_PARSERS)
      })
      const rows = assembleNested(nested.column, leaves)
      if (rows.length !== this.#index.groupRows(g)) throw new Error(`data file column ${nested.column.name}: row group ${g} holds ${rows.length} rows, expected ${this.#index.groupRows(g)}`)
      out.push(rows.slice(from - base, to - base))
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

/** A file's schema tree, its top-level columns by name, and where each chunk is in row group 0 by path ('.'-joined). */
interface SchemaShape {
  tree: SchemaTree
  topLevel: Map<string, SchemaTree>
  chunkAt: Map<string, number>
}

function schemaShape(metadata: FileMetaData): SchemaShape {
  const tree = parquetSchema(metadata)
  const chunkAt = new Map<string, number>()
  metadata.row_groups[0]?.columns.forEach((ch, pos) => {
    const path = ch.meta_data?.path_in_schema.join('.')
    if (path !== undefined && !chunkAt.has(path)) chunkAt.set(path, pos)
  })
  return { tree, topLevel: firstByName(tree.children), chunkAt }
}

/** Row group rg's chunk of the leaf at `path`: at its place in row group 0 (`at`, -1 if none), else found by a search. */
function leafChunk(rg: FileMetaData['row_groups'][number], path: string, at: number): ColumnChunk | undefined {
  const there = rg.columns[at]
  if (there !== undefined && there.meta_data?.path_in_schema.join('.') === path) return there
  return rg.columns.find((ch) => ch.meta_data?.path_in_schema.join('.') === path)
}

/** Where a nested column's leaf chunks are in each row group (they must lie end to end, in schema order). */
function nestedChunksOf(column: NestedReadColumn, metadata: FileMetaData, shape: SchemaShape): NestedChunks {
  const schemaTree = shape.tree
  const schemaPaths = column.leaves.map((leaf) => {
    const path: SchemaTree[] = [schemaTree]
    let node = schemaTree
    for (const part of leaf.path) {
      // (the root's child by the map: the root has a child per column)
      node = node === schemaTree ? shape.topLevel.get(part)! : node.children.find((c) => c.element.name === part)!
      path.push(node)
    }
    return path
  })
  const starts: number[] = []
  const sizes: number[] = []
  const codecs: CompressionCodec[] = []
  metadata.row_groups.forEach((rg, g) => {
    let end = -1
    for (const leaf of column.leaves) {
      const name = leaf.path.join('.')
      const meta = leafChunk(rg, name, shape.chunkAt.get(name) ?? -1)?.meta_data
      if (!meta) throw new Error(`data file row group ${g}: no column chunk of ${name}`)
      const start = Number(meta.dictionary_page_offset || meta.data_page_offset)
      if (end >= 0 && start !== end) throw new Error(`data file row group ${g}: the leaf chunks of column ${column.name} are not end to end (${name} starts at ${start}, the leaf before ends at ${end}); not supported`)
      end = start + Number(meta.total_compressed_size)
      starts.push(start)
      sizes.push(Number(meta.total_compressed_size))
      codecs.push(meta.codec)
    }
  })
  return { column, schemaPaths, starts, sizes, codecs, firstAt: shape.chunkAt.get(column.leaves[0].path.join('.')) ?? -1 }
}

/** The metadata as the FileIndex is built from it: each nested column one chunk spanning its leaves, without a page index. */
function withSpanChunks(metadata: FileMetaData, columns: ReadColumn[]): FileMetaData {
  const nested = columns.filter((c) => c.nested)
  if (nested.length === 0) return metadata
  return {
    ...metadata,
    row_groups: metadata.row_groups.map((rg, g) => {
      const spans: ColumnChunk[] = nested.map((c) => {
        const n = c.nested!.column.leaves.length
        const start = c.nested!.starts[g * n]
        const end = c.nested!.starts[g * n + n - 1] + c.nested!.sizes[g * n + n - 1]
        const first = leafChunk(rg, c.nested!.column.leaves[0].path.join('.'), c.nested!.firstAt)!.meta_data!
        return {
          file_offset: BigInt(start),
          meta_data: { type: first.type, encodings: [], path_in_schema: [c.spec.name], codec: first.codec, num_values: rg.num_rows, total_uncompressed_size: 0n, total_compressed_size: BigInt(end - start), data_page_offset: BigInt(start) },
        }
      })
      return { ...rg, columns: [...rg.columns, ...spans] }
    }),
  }
}
