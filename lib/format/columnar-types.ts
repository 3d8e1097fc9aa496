// Column batches: rows of a data file held as one array per column instead of one
// `KeyValue` object per row (the columnar compaction path, lib/lsm/columnar-merge.ts).
//
// A batch's columns are in a data file's column order: `_KEY_<k>`…, `_SEQUENCE_NUMBER`,
// `_VALUE_KIND`, then every table field (lib/format/data-file-layout.ts). Each column holds, per
// row, the *physical* value that `DataFileWriter.write` would buffer for that row's `Value`
// (`physicalEncoder`'s output, which is what the column encoder, lib/format/parquet-encode.ts, encodes): a TIMESTAMP(0..3)
// holds epoch milliseconds, every other type its `Value`; null stands for SQL NULL. A column
// without nulls may be a typed array (`BigInt64Array` for `_SEQUENCE_NUMBER` and BIGINT,
// `Int32Array` for `_VALUE_KIND`, INT, DATE…, `Float32Array`/`Float64Array`): the encoder
// writes a typed array's values as it writes the same values in a plain array, so both
// encode to the same bytes.

import type { DataType, Value } from '../types.ts'

/**
 * One column of a batch: a plain array (may hold nulls), a typed array (no nulls), or the
 * strings of a CHAR/VARCHAR value column as their UTF-8 bytes (`Utf8Column`, what the
 * compaction reader makes so that no JS string is made for a value the merge only moves).
 */
export type Column = ArrayLike<unknown> | Utf8Column

/**
 * Strings as UTF-8 bytes: row r is bytes[offsets[r], offsets[r + 1]) (offsets[0] need not be
 * 0: a slice shares its parent's bytes), or null where `nulls[r]` is 1. The bytes are valid
 * UTF-8, each row the encoding of the string the row path would hold (the decoder replaces a
 * file's invalid sequences as TextDecoder does), so byte order is code point order, the
 * order Strata compares strings in (lib/format/compare.ts), and equal bytes are equal strings.
 */
export class Utf8Column {
  readonly rows: number
  constructor(
    readonly bytes: Uint8Array,
    readonly offsets: Int32Array,
    readonly nulls: Uint8Array | null,
    /** every byte below 0x80: a string's length in UTF-16 units is its length in bytes */
    readonly ascii: boolean,
  ) {
    this.rows = offsets.length - 1
  }

  isNull(r: number): boolean {
    return this.nulls !== null && this.nulls[r] === 1
  }

  #node: Buffer | null = null

  /** Row r as a string, or null. */
  string(r: number): string | null {
    if (this.nulls !== null && this.nulls[r] === 1) return null
    const b = this.bytes
    this.#node ??= Buffer.from(b.buffer, b.byteOffset, b.byteLength)
    return utf8Text(b, this.offsets[r], this.offsets[r + 1], this.#node)
  }

  /** Row r's length in UTF-16 units (a JS string's length), 0 for null. */
  units(r: number): number {
    const a = this.offsets[r]
    const b = this.offsets[r + 1]
    return this.ascii ? b - a : utf16Units(this.bytes, a, b)
  }
}

export function isUtf8Column(c: Column): c is Utf8Column {
  return c instanceof Utf8Column
}

/** Rows a column holds. */
export function columnRows(c: Column): number {
  return c instanceof Utf8Column ? c.rows : c.length
}

/** Row r of a column as the other kinds hold it (a Utf8Column's as a string). */
export function valueAt(c: Column, r: number): unknown {
  return c instanceof Utf8Column ? c.string(r) : c[r]
}

/** Whether row r of a column is null. */
export function isNullAt(c: Column, r: number): boolean {
  if (c instanceof Utf8Column) return c.isNull(r)
  const v = c[r]
  return v === null || v === undefined
}

/** A column as an array-like of values: a Utf8Column's rows made into strings, any other as it is. */
export function asValues(c: Column): ArrayLike<unknown> {
  if (!(c instanceof Utf8Column)) return c
  const out = new Array<unknown>(c.rows)
  for (let r = 0; r < c.rows; r++) out[r] = c.string(r)
  return out
}

const latin1Slice: ((this: Buffer, start: number, end: number) => string) | undefined = (Buffer.prototype as unknown as { latin1Slice?: (this: Buffer, s: number, e: number) => string }).latin1Slice
const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true })

/** bytes[a, b) decoded as UTF-8 (invalid sequences become U+FFFD, as TextDecoder does); `node`: a Buffer over `bytes`, if the caller keeps one. */
export function utf8Text(bytes: Uint8Array, a: number, b: number, node?: Buffer): string {
  let high = 0
  for (let i = a; i < b; i++) high |= bytes[i]
  if (high < 0x80 && latin1Slice !== undefined) return latin1Slice.call(node ?? Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), a, b)
  return utf8Decoder.decode(bytes.subarray(a, b))
}

/**
 * a[a0, a1) against b[b0, b1) (`av` and `bv` view `a` and `b`): unsigned lexicographic, a
 * prefix first, four bytes at a time (big-endian words order as their bytes do). For UTF-8
 * this is code point order.
 */
export function compareByteRanges(a: Uint8Array, av: DataView, a0: number, a1: number, b: Uint8Array, bv: DataView, b0: number, b1: number): number {
  const n = Math.min(a1 - a0, b1 - b0)
  let i = 0
  for (; i + 4 <= n; i += 4) {
    const x = av.getUint32(a0 + i)
    const y = bv.getUint32(b0 + i)
    if (x !== y) return x < y ? -1 : 1
  }
  for (; i < n; i++) {
    const d = a[a0 + i] - b[b0 + i]
    if (d !== 0) return d < 0 ? -1 : 1
  }
  const la = a1 - a0
  const lb = b1 - b0
  return la < lb ? -1 : la > lb ? 1 : 0
}

/** UTF-16 units of the UTF-8 text bytes[a, b): one per character, two for those above U+FFFF. */
export function utf16Units(bytes: Uint8Array, a: number, b: number): number {
  let n = 0
  for (let i = a; i < b; i++) {
    const x = bytes[i]
    if ((x & 0xc0) !== 0x80) n += x >= 0xf0 ? 2 : 1
  }
  return n
}

export type TypedColumn = Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array | Float32Array | Float64Array | BigInt64Array | BigUint64Array

export interface ColumnBatch {
  rows: number
  /** one per data-file column, each at least `rows` long */
  columns: Column[]
}

export function isTypedColumn(c: Column): c is TypedColumn {
  return ArrayBuffer.isView(c) && !(c instanceof DataView)
}

/** TIMESTAMP(0..3)'s physical millis as the Value's micros: one function for every column and writer, so code V8 optimized for one writer fits the next. */
const millisToMicros = (p: unknown): Value => (p === null || p === undefined ? null : (p as bigint) * 1000n)

/**
 * The `Value` of a physical value of `type` (the inverse of `physicalEncoder` on the values
 * it accepts), or null when the two are the same (every type but TIMESTAMP(0..3)).
 */
export function physicalToValue(type: DataType): ((p: unknown) => Value) | null {
  if (type.root === 'TIMESTAMP' && (type.precision ?? 6) <= 3) return millisToMicros
  return null
}

type TypedCtor = new (n: number) => TypedColumn

/** Signed integer view of the same bytes (two int32 per element for 8-byte elements), to copy elements bit for bit. */
function bitsView(a: TypedColumn): { view: Int8Array | Int16Array | Int32Array; width: number } {
  switch (a.BYTES_PER_ELEMENT) {
    case 1:
      return { view: new Int8Array(a.buffer, a.byteOffset, a.length), width: 1 }
    case 2:
      return { view: new Int16Array(a.buffer, a.byteOffset, a.length), width: 1 }
    case 4:
      return { view: new Int32Array(a.buffer, a.byteOffset, a.length), width: 1 }
    default:
      return { view: new Int32Array(a.buffer, a.byteOffset, a.length * 2), width: 2 }
  }
}

/** The common typed-array constructor of `parts`, or null when any part is a plain array or they differ. */
function commonTypedCtor(parts: readonly Column[]): TypedCtor | null {
  let ctor: TypedCtor | null = null
  for (const p of parts) {
    if (!isTypedColumn(p)) return null
    const c = p.constructor as TypedCtor
    if (ctor === null) ctor = c
    else if (ctor !== c) return null
  }
  return ctor
}

/** Rows [from, to) of `col` as a column of its own (a view for typed arrays and Utf8Columns). */
export function sliceColumn(col: Column, from: number, to: number): Column {
  if (from === 0 && to === columnRows(col)) return col
  if (col instanceof Utf8Column) return new Utf8Column(col.bytes, col.offsets.subarray(from, to + 1), col.nulls === null ? null : col.nulls.subarray(from, to), col.ascii)
  if (isTypedColumn(col)) return col.subarray(from, to)
  return (col as unknown[]).slice(from, to)
}

/**
 * A Utf8Column of `n` rows, row i being row `row[i]` of `sources[src[i]]` (src null: of
 * sources[0]), bytes copied; null when some source is not a Utf8Column. Its two loops are
 * functions of their own: an on-stack-replaced loop with an allocation after it deoptimized
 * at that allocation on every call, while a called loop is optimized once and stays so.
 */
function gatherUtf8(sources: readonly Column[], src: Int32Array | null, row: Int32Array, n: number): Utf8Column | null {
  let ascii = true
  let anyNulls = false
  for (const s of sources) {
    if (!(s instanceof Utf8Column)) return null
    ascii &&= s.ascii
    anyNulls ||= s.nulls !== null
  }
  const cols = sources as readonly Utf8Column[]
  const offsets = new Int32Array(n + 1)
  const bytes = new Uint8Array(gatherUtf8Offsets(cols, src, row, n, offsets))
  const nulls = anyNulls ? new Uint8Array(n) : null
  gatherUtf8Bytes(cols, src, row, n, bytes, nulls)
  return new Utf8Column(bytes, offsets, nulls, ascii)
}

/** gatherUtf8's offsets, into `offsets` (n + 1 long, offsets[0] = 0); returns the bytes they span. */
function gatherUtf8Offsets(cols: readonly Utf8Column[], src: Int32Array | null, row: Int32Array, n: number, offsets: Int32Array): number {
  let total = 0
  for (let i = 0; i < n; i++) {
    const o = cols[src === null ? 0 : src[i]].offsets
    const r = row[i]
    total += o[r + 1] - o[r]
    offsets[i + 1] = total
  }
  return total
}

/** gatherUtf8's bytes (and null flags, when `nulls`), copied in row order. */
function gatherUtf8Bytes(cols: readonly Utf8Column[], src: Int32Array | null, row: Int32Array, n: number, bytes: Uint8Array, nulls: Uint8Array | null): void {
  let at = 0
  for (let i = 0; i < n; i++) {
    const c = cols[src === null ? 0 : src[i]]
    const r = row[i]
    const from = c.offsets[r]
    const to = c.offsets[r + 1]
    const b = c.bytes
    if (to - from < 32) for (let k = from; k < to; k++) bytes[at++] = b[k]
    else {
      bytes.set(b.subarray(from, to), at)
      at += to - from
    }
    if (nulls !== null && c.nulls !== null) nulls[i] = c.nulls[r]
  }
}

/** The concatenation of row ranges of columns: typed when every part is of one typed kind. */
/** Writes part k's rows [from, to) as (k, row) pairs at `at` of src and row; returns the position after them. */
function partRows(src: Int32Array, row: Int32Array, at: number, k: number, from: number, to: number): number {
  for (let r = from; r < to; r++, at++) {
    src[at] = k
    row[at] = r
  }
  return at
}

export function concatColumns(parts: readonly { col: Column; from: number; to: number }[]): Column {
  if (parts.length === 1) return sliceColumn(parts[0].col, parts[0].from, parts[0].to)
  let n = 0
  for (const p of parts) n += p.to - p.from
  if (parts.every((p) => p.col instanceof Utf8Column)) {
    const src = new Int32Array(n)
    const row = new Int32Array(n)
    let at = 0
    for (let k = 0; k < parts.length; k++) at = partRows(src, row, at, k, parts[k].from, parts[k].to)
    return gatherUtf8(parts.map((p) => p.col), src, row, n)!
  }
  const ctor = commonTypedCtor(parts.map((p) => p.col))
  if (ctor !== null) {
    const out = new ctor(n) as TypedColumn
    let at = 0
    for (const p of parts) {
      ;(out as Int32Array).set((p.col as Int32Array).subarray(p.from, p.to), at)
      at += p.to - p.from
    }
    return out
  }
  const out = new Array<unknown>(n)
  let at = 0
  for (const p of parts) {
    const c = p.col
    if (c instanceof Utf8Column) for (let r = p.from; r < p.to; r++) out[at++] = c.string(r)
    else for (let r = p.from; r < p.to; r++) out[at++] = c[r]
  }
  return out
}

/** Rows `rows` (ascending or not) of `col`, typed when `col` is. */
export function pickRows(col: Column, rows: Int32Array, n: number = rows.length): Column {
  if (col instanceof Utf8Column) return gatherUtf8([col], null, rows, n)!
  if (isTypedColumn(col)) {
    const out = new (col.constructor as TypedCtor)(n)
    const src = bitsView(col)
    const dst = bitsView(out)
    if (src.view instanceof Int32Array) {
      if (src.width === 1) pickWords(src.view, dst.view as Int32Array, rows, n)
      else pickWordPairs(src.view, dst.view as Int32Array, rows, n)
    } else pickNarrow(src.view, dst.view, rows, n)
    return out
  }
  return pickValues(col as ArrayLike<unknown>, rows, n)
}

// The copy loops below are small functions of their own, each fed one kind of array, so V8
// optimizes each once (a called function, no on-stack replacement) and no map check fails
// when a batch brings a column of another type. 4- and 8-byte elements are copied as int32s.

function pickWords(s: Int32Array, d: Int32Array, rows: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) d[i] = s[rows[i]]
}

function pickWordPairs(s: Int32Array, d: Int32Array, rows: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const j = rows[i] << 1
    d[i << 1] = s[j]
    d[(i << 1) + 1] = s[j + 1]
  }
}

function pickNarrow(s: Int8Array | Int16Array | Int32Array, d: Int8Array | Int16Array | Int32Array, rows: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) d[i] = s[rows[i]]
}

function pickValues(col: ArrayLike<unknown>, rows: Int32Array, n: number): unknown[] {
  const out = new Array<unknown>(n)
  for (let i = 0; i < n; i++) out[i] = col[rows[i]]
  return out
}

function gatherWords(views: readonly Int32Array[], d: Int32Array, src: Int32Array, row: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) d[i] = views[src[i]][row[i]]
}

function gatherWordPairs(views: readonly Int32Array[], d: Int32Array, src: Int32Array, row: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) {
    const s = views[src[i]]
    const j = row[i] << 1
    d[i << 1] = s[j]
    d[(i << 1) + 1] = s[j + 1]
  }
}

function gatherNarrow(views: readonly (Int8Array | Int16Array | Int32Array)[], d: Int8Array | Int16Array | Int32Array, src: Int32Array, row: Int32Array, n: number): void {
  for (let i = 0; i < n; i++) d[i] = views[src[i]][row[i]]
}

function gatherValues(sources: readonly Column[], src: Int32Array, row: Int32Array, n: number): unknown[] {
  const out = new Array<unknown>(n)
  for (let i = 0; i < n; i++) out[i] = valueAt(sources[src[i]], row[i])
  return out
}

/**
 * Gathers `n` rows from several columns: output row i is row `row[i]` of column
 * `sources[src[i]]`. Typed when every source is of one typed kind (copied bit for bit).
 */
export function gatherColumn(sources: readonly Column[], src: Int32Array, row: Int32Array, n: number): Column {
  if (sources.length === 1) return pickRows(sources[0], row, n)
  const utf8 = gatherUtf8(sources, src, row, n)
  if (utf8 !== null) return utf8
  const ctor = commonTypedCtor(sources)
  if (ctor !== null) {
    const out = new ctor(n)
    const dst = bitsView(out)
    const views = sources.map((s) => bitsView(s as TypedColumn).view)
    if (dst.view instanceof Int32Array) {
      if (dst.width === 1) gatherWords(views as Int32Array[], dst.view, src, row, n)
      else gatherWordPairs(views as Int32Array[], dst.view, src, row, n)
    } else gatherNarrow(views, dst.view, src, row, n)
    return out
  }
  // a mix (Utf8Column runs and the rows a merge function made): values as the plain arrays hold them
  return gatherValues(sources, src, row, n)
}
