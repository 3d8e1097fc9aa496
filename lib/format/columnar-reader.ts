// Reads a data file a row group at a time as column batches (lib/format/columnar-types.ts)
// rather than `KeyValue` records: the input side of the columnar compaction path.
//
// The batches hold the physical values `DataFileWriter.write` would buffer for the rows
// `DataFileReader` returns, so writing them back (`DataFileWriter.writeColumns`) gives the
// file the row path gives. A column stored exactly as Strata's writer stores it (same
// physical type, repetition and annotations) passes through as decoded (typed when numeric
// without nulls, see below); any other column (a file from another writer) goes value by
// value through the row path's own conversions, `valueDecoder` then `physicalEncoder`, with
// their checks. `_SEQUENCE_NUMBER` always comes back as a `BigInt64Array` and `_VALUE_KIND`
// as an `Int32Array` holding only row kinds 0..3.
//
// Who decodes: a column stored as Strata stores it (or a TINYINT/SMALLINT as parquet-java
// stores it, range-checked as the row path checks it), flat, whose chunks use only the codecs
// and encodings Strata's decoder reads (lib/format/parquet-decode.ts: PLAIN and dictionary
// encodings, data pages v1 and v2, uncompressed, snappy, gzip, zstd) is decoded by it, straight
// into the batch column; every other column, and a page that decoder turns down, goes
// through hyparquet as before. Both give the same batch columns (test/parquet-decode.test.ts),
// except that a numeric column without nulls may come back typed from the former where
// hyparquet gave a plain array (columnar-types.ts: both encode alike). Two columns stored in
// the same bytes (a primary-key field, as `_KEY_<k>` and `<k>`) come back as one shared array.

import { parquetRead, parquetSchema } from 'hyparquet'
import type { AsyncBuffer, ColumnData, ColumnMetaData, DecodedArray, FileMetaData, SchemaElement, SchemaTree } from 'hyparquet'
import { StrataInputError } from '../errors.ts'
import type { DataType, Value } from '../types.ts'
import type { ByteSource } from '../store/byte-source.ts'
import { type DataFileLayout, KEY_FIELD_PREFIX, SEQUENCE_NUMBER, VALUE_KIND, fileColumns } from './data-file-layout.ts'
import { type NestedReadColumn, assembleNested, columnElements, decodeLeafChunk, nestedReadColumn } from './parquet-nested.ts'
import { ManifestCheck } from './data-file-check.ts'
import { RAW_PARSERS, firstByName, topLevelElements, namedFileError, openFooter, openNamed } from './data-file-source.ts'
import { DECOMPRESSORS } from './decompressors.ts'
import { type Column, type ColumnBatch, columnRows, concatColumns, isUtf8Column, pickRows, valueAt } from './columnar-types.ts'
import { physicalEncoder, rawReadElement, sameStorage, valueDecoder } from './parquet-types.ts'
import { type ByteRange, PrefetchedFile } from './page-index.ts'
import { ColumnBuilder, type FlatColumn, UnsupportedParquet, chunkReadable, flatColumnOf } from './parquet-decode.ts'
import { checkPages } from './parquet-page-header.ts'

const DEFAULT_TAIL_BYTES = 512 * 1024
/** Rows and compressed bytes of the row groups fetched with one request per run of chunks (at least one group). */
const FETCH_ROWS = 65536
const FETCH_BYTES = 8 * 1024 * 1024
/**
 * Rows of the row groups one batch decodes together (at least one group): small batches
 * hold less (measured at 1M rows in 5 runs: 4k rows 238 MB peak RSS, 64k rows 339 MB) and
 * cost no more CPU.
 */
const BATCH_ROWS = 4096
/** columns one hyparquet read decodes at most (`#hyparquetColumns`) */
const HYPARQUET_COLUMNS = 64

/** What a column's decoded chunks become: the batch column. */
type ToPhysical = (chunks: DecodedArray[], n: number) => Column

interface ReadSpec {
  name: string
  type: DataType
  toPhysical: ToPhysical
  /** stored otherwise than Strata stores it: read value by value through the row path's conversions */
  converted: boolean
  /** decoded by Strata's decoder (lib/format/parquet-decode.ts), its chunk's index in every row group; else null (hyparquet) */
  flat: FlatSpec | null
  /** a nested column: its leaves decoded and assembled (lib/format/parquet-nested.ts), a plain array of its `Value`s */
  nested?: { column: NestedReadColumn; schemaPaths: SchemaTree[][]; positions: number[] }
}

function concatChunks(chunks: DecodedArray[]): Column {
  if (chunks.length === 0) return []
  return concatColumns(chunks.map((c) => ({ col: c as Column, from: 0, to: c.length })))
}

/**
 * Decoded raw values → batch column. As stored by Strata, hyparquet's raw value is already
 * the physical value except for DECIMAL (an INT32 number or big-endian bytes, where the
 * writer takes the unscaled bigint) and a STRING hyparquet left as bytes.
 */
function toPhysicalOf(name: string, type: DataType, found: SchemaElement, ours: SchemaElement): ToPhysical {
  const decode = valueDecoder(name, type, found)
  if (sameStorage(found, ours)) {
    const mapped = type.root === 'DECIMAL' && found.type !== 'INT64'
    const strings = type.root === 'CHAR' || type.root === 'VARCHAR'
    if (!mapped && !strings) return (chunks) => concatChunks(chunks)
    return (chunks, n) => {
      // strings hyparquet decoded already (the usual case) pass through
      if (strings && chunks.length === 1 && Array.isArray(chunks[0]) && chunks[0].every((v) => v === null || typeof v === 'string')) return chunks[0]
      const out = new Array<unknown>(n)
      let at = 0
      for (const c of chunks) {
        for (let i = 0; i < c.length; i++) {
          const raw = c[i]
          out[at++] = raw === null || raw === undefined ? null : strings && typeof raw === 'string' ? raw : decode(raw)
        }
      }
      return out
    }
  }
  // another writer's storage: the row path's conversions, value by value
  const encode = physicalEncoder(name, type)
  return (chunks, n) => {
    const out = new Array<unknown>(n)
    let at = 0
    for (const c of chunks) {
      for (let i = 0; i < c.length; i++) {
        const raw = c[i]
        out[at++] = encode(raw === null || raw === undefined ? null : decode(raw))
      }
    }
    return out
  }
}

/** A row group's live rows, with the file position of each. */
export interface PositionedBatch extends ColumnBatch {
  /** file position of the row group's first row (of row 0 when `positions` is null) */
  firstPosition: number
  /** file position of every row, when rows were left out (else null) */
  positions: Int32Array | null
}

export interface RowGroupOptions {
  /** ascending row positions (a deletion vector's) left out of the batches */
  deleted?: ArrayLike<number>
  /**
   * value fields (indexes into the layout's fields) to read; the others come back as empty
   * columns. Default all. Key columns, `_SEQUENCE_NUMBER` and `_VALUE_KIND` are always read.
   */
  valueFields?: number[]
  /**
   * CHAR/VARCHAR value columns (not a key's) as `Utf8Column`s, their UTF-8 bytes, rather than
   * strings: for a reader that moves the values without looking at them (the compaction's merge)
   */
  utf8Values?: boolean
}

export interface ColumnarReaderOptions {
  /** bytes fetched from the end of the file on open, as `DataFileReader`'s option */
  tailBytes?: number
  /**
   * 'strata' (default): Strata's decoder for the columns it reads, hyparquet for the others;
   * 'hyparquet': hyparquet for every column (the reference in tests)
   */
  decoder?: 'strata' | 'hyparquet'
}

/** One data file read as column batches, one per row group. */
export class ColumnarFileReader {
  readonly #file: AsyncBuffer
  readonly #metadata: FileMetaData
  readonly #specs: ReadSpec[]
  readonly #nk: number
  readonly #src: ByteSource
  readonly #layout: DataFileLayout
  /** for each key field, the batch column of its value field (same id), or -1: the two must agree */
  readonly #keyValueColumns: number[]
  /** the raw-read schema's top-level elements by name (made on first use) */
  #topElements: Map<string, SchemaElement> | null = null

  private constructor(src: ByteSource, layout: DataFileLayout, file: AsyncBuffer, metadata: FileMetaData, specs: ReadSpec[], nk: number) {
    this.#src = src
    this.#layout = layout
    this.#file = file
    this.#metadata = metadata
    this.#specs = specs
    this.#nk = nk
    this.#keyValueColumns = layout.keyFields.map((k) => {
      const j = layout.valueFields.findIndex((f) => f.id === k.id)
      return j < 0 ? -1 : nk + 2 + j
    })
  }

  /** Reads the footer and checks that every column of the layout is there (by name) and readable as its type. */
  static async open(src: ByteSource, layout: DataFileLayout, opts: ColumnarReaderOptions = {}): Promise<ColumnarFileReader> {
    return openNamed(src, () => ColumnarFileReader.#open(src, layout, opts))
  }

  static async #open(src: ByteSource, layout: DataFileLayout, opts: ColumnarReaderOptions): Promise<ColumnarFileReader> {
    const { tailBytes = DEFAULT_TAIL_BYTES, decoder = 'strata' } = opts
    const { file, metadata, present } = await openFooter(src, tailBytes)

    const ours = fileColumns(layout).map((c) => columnElements(c.name, c.fieldId, c.type)[0])
    const types: DataType[] = [
      ...layout.keyFields.map((f) => f.type),
      { root: 'BIGINT', nullable: false },
      { root: 'TINYINT', nullable: false },
      ...layout.valueFields.map((f) => f.type),
    ]
    const specs: ReadSpec[] = []
    const rawElements = new Map<SchemaElement, SchemaElement>()
    const chunkAt = chunkPositions(metadata, false)
    let tree: SchemaTree | undefined
    let topLevel: Map<string, SchemaTree> | undefined
    let leafAt: Map<string, number> | undefined
    for (let c = 0; c < ours.length; c++) {
      const name = ours[c].name
      const found = present.get(name)
      if (found === undefined) {
        const thin = name.startsWith(KEY_FIELD_PREFIX) ? ` (every primary-key file has ${KEY_FIELD_PREFIX}<field> columns; files written with data-file.thin-mode=true are not supported)` : ''
        throw new Error(`data file has no column ${name}${thin}; its columns are: ${[...present.keys()].join(', ')}`)
      }
      const nested = types[c].root === 'ARRAY' || types[c].root === 'MAP' || types[c].root === 'MULTISET' || types[c].root === 'ROW'
      if (found.group !== nested) throw new Error(`data file column ${name} is ${found.group ? 'a nested group' : 'a primitive column'}; expected ${nested ? `the group of a ${types[c].root}` : `a primitive ${types[c].root} column`}`)
      if (nested) {
        // the schema's tree and the chunks' places made once for all nested columns
        tree ??= parquetSchema(metadata)
        topLevel ??= firstByName(tree.children)
        leafAt ??= chunkPositions(metadata, true)
        const root = tree
        const column = nestedReadColumn(name, types[c], topLevel.get(name)!)
        const schemaPaths = column.leaves.map((leaf) => {
          const path: SchemaTree[] = [root]
          // (the root's child by the map: the root has a child per column)
          for (const part of leaf.path) path.push(path.length === 1 ? topLevel!.get(part)! : path[path.length - 1].children.find((t) => t.element.name === part)!)
          return path
        })
        const positions = column.leaves.map((leaf) => leafAt!.get(leaf.path.join('.')) ?? -1)
        specs.push({ name, type: types[c], toPhysical: (chunks) => concatChunks(chunks), converted: false, flat: null, nested: { column, schemaPaths, positions } })
        continue
      }
      const converted = !sameStorage(found.element, ours[c])
      const flat = decoder === 'strata' && (!converted || narrowInteger(found.element, ours[c])) ? flatSpec(metadata, chunkAt, name, found.element, types[c], converted) : null
      specs.push({ name, type: types[c], toPhysical: toPhysicalOf(name, types[c], found.element, ours[c]), converted, flat })
      rawElements.set(found.element, rawReadElement(found.element, types[c]))
    }
    const rawSchema = metadata.schema.map((element) => rawElements.get(element) ?? element)
    ManifestCheck.footerRows(src, Number(metadata.num_rows), metadata.row_groups.reduce((n, g) => n + Number(g.num_rows), 0))
    return new ColumnarFileReader(src, layout, file, { ...metadata, schema: rawSchema }, specs, layout.keyFields.length)
  }

  get rowCount(): number {
    return Number(this.#metadata.num_rows)
  }

  /** Columns Strata's decoder reads (lib/format/parquet-decode.ts); hyparquet reads the others. */
  get decoderColumns(): string[] {
    return this.#specs.filter((s) => s.flat !== null).map((s) => s.name)
  }

  /** Columns stored otherwise than Strata's writer stores them (another writer's file), read value by value. */
  get convertedColumns(): string[] {
    return this.#specs.filter((s) => s.converted).map((s) => s.name)
  }

  /**
   * The file's live rows, one batch per row group, in file order, with their positions; a
   * row group left empty yields no batch.
   */
  async *rowGroups(opts: RowGroupOptions = {}): AsyncGenerator<PositionedBatch> {
    const src = this.#src
    const check = src.expect ? new ManifestCheck(src.name ?? 'data file', src.expect, this.#layout.keyFields, true) : null
    try {
      for await (const batch of this.#rowGroups(opts)) {
        if (check) this.#checkBatch(check, batch)
        yield batch
      }
      // a read of every row: the file's first and last key and its counts are the entry's
      if (check && !(opts.deleted && opts.deleted.length > 0)) check.whole()
    } catch (e) {
      throw namedFileError(src, e)
    }
  }

  /**
   * Keys in order and within the entry's bounds (compared per batch, and row by row in a loop
   * over the key columns), and a primary-key field read as a value column holding its key:
   * the same array when both columns are stored in the same bytes (Strata's files), else
   * compared row by row.
   */
  #checkBatch(check: ManifestCheck, batch: PositionedBatch): void {
    const nk = this.#nk
    const n = batch.rows
    const keys = batch.columns.slice(0, nk) as ArrayLike<unknown>[]
    check.batch(
      n,
      (r) => keys.map((c) => c[r]),
      () => check.firstDisorder(keys, n),
      countRetracts(batch.columns[nk + 1] as Int32Array, n),
    )
    for (let i = 0; i < nk; i++) {
      const c = this.#keyValueColumns[i]
      if (c < 0) continue
      const col = batch.columns[c]
      if (col === keys[i] || columnRows(col) === 0) continue
      const bad = firstKeyValueMismatch(check, i, keys[i], col, n)
      if (bad >= 0) {
        check.fail(`key ${JSON.stringify(String(keys[i][bad]))} holds ${JSON.stringify(String(valueAt(col, bad)))} in its value column ${this.#layout.valueFields[c - nk - 2].name}`)
      }
    }
  }

  async *#rowGroups(opts: RowGroupOptions): AsyncGenerator<PositionedBatch> {
    const { deleted } = opts
    const nk = this.#nk
    const read = opts.valueFields === undefined ? null : new Set([...Array(nk + 2).keys(), ...opts.valueFields.map((j) => nk + 2 + j)])
    let groupStart = 0
    let next = 0
    const groups = this.#metadata.row_groups
    const specs = this.#specs.map((s, i) => (read === null || read.has(i) ? s : null))
    // row groups fetched together, up to FETCH_ROWS rows or FETCH_BYTES of column chunks
    // (level-0 files have small row groups, for lookups), then decoded BATCH_ROWS at a time;
    // the next window's request is sent when a window arrives, so decoding does not wait on it
    type Window = { groups: FileMetaData['row_groups']; file: Promise<PrefetchedFile> }
    const windowAt = (g: number): Window => {
      const fetch = [groups[g]]
      let rows = Number(groups[g].num_rows)
      let bytes = Number(groups[g].total_compressed_size ?? 0)
      for (let k = g + 1; k < groups.length && rows + Number(groups[k].num_rows) <= FETCH_ROWS && bytes + Number(groups[k].total_compressed_size ?? 0) <= FETCH_BYTES; k++) {
        rows += Number(groups[k].num_rows)
        bytes += Number(groups[k].total_compressed_size ?? 0)
        fetch.push(groups[k])
      }
      const file = this.#fetchGroups(fetch, specs)
      // a window fetched ahead that the reader never reaches (it stopped early) fails unheard;
      // one it reaches rethrows where it is awaited
      file.catch(() => {})
      return { groups: fetch, file }
    }
    const window: { groups: FileMetaData['row_groups']; file: PrefetchedFile | null } = { groups: [], file: null }
    let ahead: Window | null = null
    for (let g = 0; g < groups.length; ) {
      if (!window.groups.includes(groups[g])) {
        const w: Window = ahead !== null && ahead.groups[0] === groups[g] ? ahead : windowAt(g)
        window.groups = w.groups
        window.file = await w.file
        const following: number = g + w.groups.length
        ahead = following < groups.length ? windowAt(following) : null
      }
      const take = [groups[g++]]
      let rows = Number(take[0].num_rows)
      while (g < groups.length && window.groups.includes(groups[g]) && rows + Number(groups[g].num_rows) <= BATCH_ROWS) {
        rows += Number(groups[g].num_rows)
        take.push(groups[g++])
      }
      const n = rows
      const groupEnd = groupStart + n
      if (n > 0) {
        const batch = await this.#readGroups(window.file!, specs, take, groupStart, groupEnd, opts.utf8Values === true)
        if (deleted && next < deleted.length && deleted[next] < groupEnd) {
          const keep = new Int32Array(n)
          let kept = 0
          for (let r = 0; r < n; r++) {
            if (next < deleted.length && deleted[next] === groupStart + r) {
              next++
              continue
            }
            keep[kept++] = r
          }
          const positions = new Int32Array(kept)
          for (let r = 0; r < kept; r++) positions[r] = groupStart + keep[r]
          if (kept > 0) {
            // a column shared by two (decoded once) stays shared
            const picked = new Map<Column, Column>()
            const columns = batch.columns.map((c) => {
              if (columnRows(c) === 0) return c
              let p = picked.get(c)
              if (p === undefined) picked.set(c, (p = pickRows(c, keep, kept)))
              return p
            })
            yield { rows: kept, columns, firstPosition: groupStart, positions }
          }
        } else {
          // the same fields in the same order as the yield above: one object shape for #checkBatch and the merge
          yield { rows: batch.rows, columns: batch.columns, firstPosition: groupStart, positions: null }
        }
      }
      groupStart = groupEnd
    }
  }

  /**
   * The row group's column chunks that `specs` names, fetched with one request per run of
   * adjacent chunks (one for a whole group; a chunk of a column not read leaves a gap), and
   * served from memory to hyparquet, which would ask for each chunk on its own.
   */
  async #fetchGroups(groups: FileMetaData['row_groups'], specs: (ReadSpec | null)[]): Promise<PrefetchedFile> {
    const wanted = new Set(specs.flatMap((s) => (s === null ? [] : [s.name])))
    // no span limit and no gap: one request per run of touching chunks
    const file = new PrefetchedFile(this.#file)
    await file.fetch(chunkRanges(groups, wanted), 0, 0)
    return file
  }

  /**
   * Rows [from, to) (the whole consecutive row groups `groups`, fetched into `file`) of the
   * columns `specs` names; the others empty.
   */
  async #readGroups(file: PrefetchedFile, specs: (ReadSpec | null)[], groups: FileMetaData['row_groups'], from: number, to: number, utf8Values: boolean): Promise<ColumnBatch> {
    const n = to - from
    const columns: Column[] = new Array(specs.length)
    const viaHyparquet = specs.map((s) => s !== null && s.flat === null && s.nested === undefined)
    const decoded: number[] = []
    for (let i = 0; i < specs.length; i++) {
      const spec = specs[i]
      if (spec === null) columns[i] = []
      else if (spec.nested !== undefined) columns[i] = nestedRows(file, spec.nested, groups, n)
      else if (spec.flat !== null) {
        // a primary-key column is stored twice (_KEY_<k> and <k>), as a rule in the same bytes:
        // decoded once; only key columns are candidates, so this costs the same at any width
        const same = decoded.find((j) => sameChunks(file, specs[j]!.flat!, spec.flat!, groups))
        if (same !== undefined) {
          columns[i] = columns[same]
          checkValues(spec.flat, columns[i], n)
          continue
        }
        try {
          // (a value column stored as its key's is decoded as the key above: strings)
          columns[i] = decodeFlat(file, spec.name, spec.flat, groups, n, utf8Values && i >= this.#nk + 2)
          if (i < this.#nk) decoded.push(i)
        } catch (e) {
          if (!(e instanceof UnsupportedParquet)) throw e
          viaHyparquet[i] = true
        }
      }
    }
    if (viaHyparquet.includes(true)) {
      const read = await this.#hyparquetColumns(file, specs.map((s, i) => (viaHyparquet[i] ? s : null)), groups, from, to)
      for (let i = 0; i < specs.length; i++) if (viaHyparquet[i]) columns[i] = read[i]
    }
    const nk = this.#nk
    columns[nk] = int64Column(columns[nk], n)
    columns[nk + 1] = kindColumn(columns[nk + 1], n, from)
    return { rows: n, columns }
  }

  /**
   * Rows [from, to) (the whole consecutive row groups `groups`) of the columns `specs` names,
   * decoded by hyparquet; the others empty. It gets those row groups only and at most
   * HYPARQUET_COLUMNS columns a call, under a schema of those columns: its cost per call grows
   * with the row groups and with the square of the columns it is given.
   */
  async #hyparquetColumns(file: PrefetchedFile, specs: (ReadSpec | null)[], groups: FileMetaData['row_groups'], from: number, to: number): Promise<Column[]> {
    const n = to - from
    const wanted = new Set(specs.flatMap((s) => (s === null ? [] : [s.name])))
    // the chunks' page headers checked first: hyparquet trusts them (checkPages)
    for (const group of groups) {
      for (const chunk of group.columns) {
        const meta = chunk.meta_data
        if (!meta || !wanted.has(meta.path_in_schema[0])) continue
        const [start, end] = chunkRange(meta)
        const bytes = file.bytes(start, end)
        if (bytes === null) throw new Error(`data file column ${meta.path_in_schema[0]}: chunk [${start}, ${end}) was not fetched`)
        checkPages(bytes, `column ${meta.path_in_schema[0]}`, start)
      }
    }
    // chunks may arrive out of row order across row groups: kept with their first row
    const chunks: { at: number; data: DecodedArray }[][] = specs.map(() => [])
    const filled = specs.map(() => 0)
    const index = new Map(specs.flatMap((s, i) => (s === null ? [] : [[s.name, i] as const])))
    // rows numbered from the first of `groups`, as the metadata below holds only those
    const onChunk = ({ columnName, columnData, rowStart, rowEnd }: ColumnData): void => {
      const i = index.get(columnName)
      if (i === undefined) return
      if (rowEnd <= rowStart) return
      chunks[i].push({ at: from + rowStart, data: columnData })
      filled[i] += rowEnd - rowStart
    }
    const names = [...wanted]
    for (let k = 0; k < names.length; k += HYPARQUET_COLUMNS) {
      const part = new Set(names.slice(k, k + HYPARQUET_COLUMNS))
      await parquetRead({
        file,
        metadata: this.#metadataOf(groups, part, n),
        columns: [...part],
        utf8: false,
        parsers: RAW_PARSERS,
        compressors: DECOMPRESSORS,
        onChunk,
      })
    }
    const columns: Column[] = []
    for (let i = 0; i < specs.length; i++) {
      const spec = specs[i]
      if (spec === null) {
        columns.push([])
        continue
      }
      if (filled[i] !== n) throw new Error(`data file column ${spec.name}: decoded ${filled[i]} of rows [${from}, ${to})`)
      columns.push(spec.toPhysical(chunks[i].sort((a, b) => a.at - b.at).map((c) => c.data), n))
    }
    return columns
  }

  /** The file's metadata cut to `groups` (`rows` rows in all) and the flat top-level columns `names`: the root and their elements only. */
  #metadataOf(groups: FileMetaData['row_groups'], names: Set<string>, rows: number): FileMetaData {
    const schema = this.#metadata.schema
    this.#topElements ??= topLevelElements(schema)
    const elements = [...names].map((name) => this.#topElements!.get(name)!)
    return {
      ...this.#metadata,
      schema: [{ ...schema[0], num_children: elements.length }, ...elements],
      num_rows: BigInt(rows),
      row_groups: groups.map((g) => ({ ...g, columns: g.columns.filter((c) => c.meta_data !== undefined && c.meta_data.path_in_schema.length === 1 && names.has(c.meta_data.path_in_schema[0])) })),
    }
  }
}

interface FlatSpec {
  column: FlatColumn
  /** the column chunk's index in every row group */
  chunk: number
  /** the row path's check of each value, for a column stored otherwise (narrowInteger) */
  check: ((v: Value) => unknown) | null
}

/**
 * A TINYINT or SMALLINT stored as parquet-java stores it: INT32 with the INTEGER(8 or 16,
 * signed) logical type next to Strata's INT_8 or INT_16: the values are the same numbers,
 * which the row path range-checks (physicalEncoder).
 */
function narrowInteger(found: SchemaElement, ours: SchemaElement): boolean {
  if (found.type !== 'INT32' || ours.type !== 'INT32' || (found.repetition_type ?? 'REQUIRED') !== ours.repetition_type) return false
  if (ours.converted_type !== 'INT_8' && ours.converted_type !== 'INT_16') return false
  const bits = ours.converted_type === 'INT_8' ? 8 : 16
  const lt = found.logical_type
  const ltOk = lt === undefined || (lt.type === 'INTEGER' && lt.bitWidth === bits && lt.isSigned)
  return ltOk && (found.converted_type === undefined || found.converted_type === ours.converted_type) && (lt !== undefined || found.converted_type !== undefined)
}

/**
 * How Strata's decoder reads column `name` of the file, or null when it does not: a flat
 * column it reads, at the same chunk index in every row group, every chunk in a codec and
 * encodings it reads.
 */
function flatSpec(metadata: FileMetaData, chunkAt: Map<string, number>, name: string, element: SchemaElement, type: DataType, converted: boolean): FlatSpec | null {
  const column = flatColumnOf(name, element, type)
  if (column === null) return null
  const check = converted ? physicalEncoder(name, type) : null
  const groups = metadata.row_groups
  if (groups.length === 0) return { column, chunk: 0, check }
  const chunk = chunkAt.get(name)
  if (chunk === undefined) return null
  for (const g of groups) {
    const meta = g.columns[chunk]?.meta_data
    if (meta === undefined || meta.path_in_schema.length !== 1 || meta.path_in_schema[0] !== name || !chunkReadable(meta)) return null
  }
  return { column, chunk, check }
}

/**
 * Where each chunk is in row group 0, by its path joined with '.' (`nested`: every chunk;
 * else those of flat columns): a map, so finding a column costs the same at any width.
 */
function chunkPositions(metadata: FileMetaData, nested: boolean): Map<string, number> {
  const at = new Map<string, number>()
  metadata.row_groups[0]?.columns.forEach((c, pos) => {
    const path = c.meta_data?.path_in_schema
    if (path === undefined || (!nested && path.length !== 1)) return
    const key = path.join('.')
    if (!at.has(key)) at.set(key, pos)
  })
  return at
}


// #checkBatch's loops as functions of their own: V8 optimizes each once as a called function,
// not by on-stack replacement of a loop in the method, which deoptimized at the code after it.

/** Retractions (-U, -D: odd kinds) among the first `n` row kinds. */
function countRetracts(kinds: Int32Array, n: number): number {
  let retracts = 0
  for (let r = 0; r < n; r++) retracts += kinds[r] & 1
  return retracts
}

/** The first of `n` rows whose key field `i` differs from its value column's, or -1. */
function firstKeyValueMismatch(check: ManifestCheck, i: number, keys: ArrayLike<unknown>, col: Column, n: number): number {
  for (let r = 0; r < n; r++) {
    const k = keys[r]
    const v = valueAt(col, r)
    if (k !== v && check.compareField(i, k, v) !== 0) return r
  }
  return -1
}

/** Column `name` of the row groups `groups` (fetched into `file`), `n` rows, by Strata's decoder. */
function decodeFlat(file: PrefetchedFile, name: string, flat: FlatSpec, groups: FileMetaData['row_groups'], n: number, utf8: boolean): Column {
  // a column stored otherwise is checked value by value: as strings
  const builder = new ColumnBuilder(flat.column, n, { utf8: utf8 && flat.check === null })
  for (const group of groups) {
    const meta = group.columns[flat.chunk].meta_data!
    const [start, end] = chunkRange(meta)
    const bytes = file.bytes(start, end)
    if (bytes === null) throw new Error(`data file column ${name}: chunk [${start}, ${end}) was not fetched`)
    try {
      builder.readChunk(bytes, meta, Number(group.num_rows))
    } catch (e) {
      if (e instanceof UnsupportedParquet) throw e
      throw new Error(`data file ${(e as Error).message} (column chunk at byte ${start})`)
    }
  }
  const col = builder.finish()
  checkValues(flat, col, n)
  return col
}

/** The row path's check of each value, for a column stored otherwise than Strata stores it. */
function checkValues(flat: FlatSpec, col: Column, n: number): void {
  if (flat.check === null) return
  const check = flat.check
  for (let r = 0; r < n; r++) {
    const v = valueAt(col, r)
    if (v !== null) check(v as Value)
  }
}

/** Whether two columns decode to the same values: the same kind of column, stored in the same bytes in every row group. */
function sameChunks(file: PrefetchedFile, a: FlatSpec, b: FlatSpec, groups: FileMetaData['row_groups']): boolean {
  if (a.column.kind !== b.column.kind || a.column.optional !== b.column.optional || a.column.typeLength !== b.column.typeLength) return false
  for (const group of groups) {
    const x = group.columns[a.chunk].meta_data!
    const y = group.columns[b.chunk].meta_data!
    if (x.codec !== y.codec || x.total_compressed_size !== y.total_compressed_size) return false
  }
  for (const group of groups) {
    const x = chunkRange(group.columns[a.chunk].meta_data!)
    const y = chunkRange(group.columns[b.chunk].meta_data!)
    const bx = file.bytes(x[0], x[1])
    const by = file.bytes(y[0], y[1])
    if (bx === null || by === null || Buffer.compare(bx, by) !== 0) return false
  }
  return true
}

function chunkRange(meta: ColumnMetaData): [number, number] {
  const start = Number(meta.dictionary_page_offset || meta.data_page_offset)
  return [start, start + Number(meta.total_compressed_size)]
}

function int64Column(col: Column, n: number): BigInt64Array {
  if (col instanceof BigInt64Array) return col
  const out = new BigInt64Array(n)
  for (let r = 0; r < n; r++) {
    const v = valueAt(col, r)
    if (typeof v !== 'bigint') throw new StrataInputError(`${SEQUENCE_NUMBER}: value ${String(v)} is not a bigint in the int64 range`)
    out[r] = v
  }
  return out
}

function kindColumn(col: Column, n: number, base: number): Int32Array {
  // (an INT32 column: never decoded as string bytes)
  if (isUtf8Column(col)) throw new Error(`data file: ${VALUE_KIND} decoded as strings`)
  const out = col instanceof Int32Array ? col : new Int32Array(n)
  for (let r = 0; r < n; r++) {
    const k = col[r] as Value
    if (k !== 0 && k !== 1 && k !== 2 && k !== 3) throw new Error(`data file row ${base + r}: ${VALUE_KIND} ${String(k)} is not a RowKind (0..3)`)
    if (out !== col) out[r] = k
  }
  return out
}

/**
 * The byte ranges of the row groups' chunks of the columns named in `wanted`. (A synchronous
 * function of its own: the loop is warm enough to be optimized, and an async method around it
 * is much more for V8 to compile.)
 */
function chunkRanges(groups: FileMetaData['row_groups'], wanted: Set<string>): ByteRange[] {
  const ranges: ByteRange[] = []
  for (const group of groups) {
    for (const chunk of group.columns) {
      const meta = chunk.meta_data
      if (!meta || !wanted.has(meta.path_in_schema[0])) continue
      const start = Number(meta.dictionary_page_offset || meta.data_page_offset)
      ranges.push([start, start + Number(meta.total_compressed_size)])
    }
  }
  return ranges
}

/** A nested column's rows in the consecutive row groups `groups` (fetched into `file`): each leaf chunk decoded, the rows assembled. */
function nestedRows(file: PrefetchedFile, nested: NonNullable<ReadSpec['nested']>, groups: FileMetaData['row_groups'], n: number): Value[] {
  const out: Value[] = []
  for (const group of groups) {
    const leaves = nested.column.leaves.map((leaf, l) => {
      const path = leaf.path.join('.')
      // the leaf's place in row group 0, else (another order in this group) a search
      const at = group.columns[nested.positions[l]]?.meta_data
      const meta = at !== undefined && at.path_in_schema.join('.') === path ? at : group.columns.find((ch) => ch.meta_data?.path_in_schema.join('.') === path)?.meta_data
      if (!meta) throw new Error(`data file: no column chunk of ${path}`)
      const [start, end] = chunkRange(meta)
      const bytes = file.bytes(start, end)
      if (bytes === null) throw new Error(`data file column ${path}: chunk [${start}, ${end}) was not fetched`)
      checkPages(bytes, `column ${path}`, start)
      return decodeLeafChunk(bytes, leaf, nested.schemaPaths[l], meta.codec, DECOMPRESSORS as never, RAW_PARSERS)
    })
    const rows = assembleNested(nested.column, leaves)
    if (rows.length !== Number(group.num_rows)) throw new Error(`data file column ${nested.column.name}: a row group holds ${rows.length} rows, expected ${group.num_rows}`)
    for (const r of rows) out.push(r)
  }
  if (out.length !== n) throw new Error(`data file column ${nested.column.name}: decoded ${out.length} rows, expected ${n}`)
  return out
}
