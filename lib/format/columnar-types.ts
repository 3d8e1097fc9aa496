// Column batches: rows of a data file held as one array per column instead of one
// `KeyValue` object per row (the columnar compaction path, lib/lsm/columnar-merge.ts).
//
// A batch's columns are in a data file's column order: `_KEY_<k>`…, `_SEQUENCE_NUMBER`,
// `_VALUE_KIND`, then every table field (lib/format/data-file.ts). Each column holds, per
// row, the *physical* value that `DataFileWriter.write` would buffer for that row's `Value`
// (`physicalEncoder`'s output, which is what the column encoder, lib/format/parquet-encode.ts, encodes): a TIMESTAMP(0..3)
// holds epoch milliseconds, every other type its `Value`; null stands for SQL NULL. A column
// without nulls may be a typed array (`BigInt64Array` for `_SEQUENCE_NUMBER` and BIGINT,
// `Int32Array` for `_VALUE_KIND`, INT, DATE…, `Float32Array`/`Float64Array`): the encoder
// writes a typed array's values as it writes the same values in a plain array, so both
// encode to the same bytes.

import type { DataType, Value } from '../types.ts'

/** One column of a batch: a plain array (may hold nulls) or a typed array (no nulls). */
export type Column = ArrayLike<unknown>

export type TypedColumn = Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array | Float32Array | Float64Array | BigInt64Array | BigUint64Array

export interface ColumnBatch {
  rows: number
  /** one per data-file column, each at least `rows` long */
  columns: Column[]
}

export function isTypedColumn(c: Column): c is TypedColumn {
  return ArrayBuffer.isView(c) && !(c instanceof DataView)
}

/**
 * The `Value` of a physical value of `type` (the inverse of `physicalEncoder` on the values
 * it accepts), or null when the two are the same (every type but TIMESTAMP(0..3)).
 */
export function physicalToValue(type: DataType): ((p: unknown) => Value) | null {
  if (type.root === 'TIMESTAMP' && (type.precision ?? 6) <= 3) return (p) => (p === null || p === undefined ? null : (p as bigint) * 1000n)
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

/** Rows [from, to) of `col` as a column of its own (a view for typed arrays). */
export function sliceColumn(col: Column, from: number, to: number): Column {
  if (from === 0 && to === col.length) return col
  if (isTypedColumn(col)) return col.subarray(from, to)
  return (col as unknown[]).slice(from, to)
}

/** The concatenation of row ranges of columns: typed when every part is of one typed kind. */
export function concatColumns(parts: readonly { col: Column; from: number; to: number }[]): Column {
  if (parts.length === 1) return sliceColumn(parts[0].col, parts[0].from, parts[0].to)
  let n = 0
  for (const p of parts) n += p.to - p.from
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
    for (let r = p.from; r < p.to; r++) out[at++] = c[r]
  }
  return out
}

/** Rows `rows` (ascending or not) of `col`, typed when `col` is. */
export function pickRows(col: Column, rows: Int32Array, n: number = rows.length): Column {
  if (isTypedColumn(col)) {
    const out = new (col.constructor as TypedCtor)(n)
    const src = bitsView(col)
    const dst = bitsView(out)
    if (src.width === 1) {
      const s = src.view
      const d = dst.view
      for (let i = 0; i < n; i++) d[i] = s[rows[i]]
    } else {
      const s = src.view
      const d = dst.view
      for (let i = 0; i < n; i++) {
        const j = rows[i] << 1
        d[i << 1] = s[j]
        d[(i << 1) + 1] = s[j + 1]
      }
    }
    return out
  }
  const out = new Array<unknown>(n)
  for (let i = 0; i < n; i++) out[i] = col[rows[i]]
  return out
}

/**
 * Gathers `n` rows from several columns: output row i is row `row[i]` of column
 * `sources[src[i]]`. Typed when every source is of one typed kind (copied bit for bit).
 */
export function gatherColumn(sources: readonly Column[], src: Int32Array, row: Int32Array, n: number): Column {
  if (sources.length === 1) return pickRows(sources[0], row, n)
  const ctor = commonTypedCtor(sources)
  if (ctor !== null) {
    const out = new ctor(n)
    const dst = bitsView(out)
    const views = sources.map((s) => bitsView(s as TypedColumn).view)
    const d = dst.view
    if (dst.width === 1) {
      for (let i = 0; i < n; i++) d[i] = views[src[i]][row[i]]
    } else {
      for (let i = 0; i < n; i++) {
        const s = views[src[i]]
        const j = row[i] << 1
        d[i << 1] = s[j]
        d[(i << 1) + 1] = s[j + 1]
      }
    }
    return out
  }
  const out = new Array<unknown>(n)
  for (let i = 0; i < n; i++) out[i] = sources[src[i]][row[i]]
  return out
}
