// The write buffer of one (partition, bucket) held as columns: a typed
// array per fixed-width field instead of a `Row` array per record, so a buffered record costs
// a few dozen bytes outside the V8 heap instead of ~257 B of objects the collector has to
// trace. At a flush the group is sorted by a permutation over its key columns, each key's
// records are merged as the row path merges them, and the surviving rows are gathered into
// the file's physical columns and handed to `DataFileWriter.writeColumns`.
//
// The row path (BatchWriter with `buffer: 'rows'`: one `KeyValue` per record, sorted, merged with
// the table's merge function and written with `DataFileWriter.write`) is the reference:
// test/columnar-write.test.ts checks that both write the same files, byte for byte, on random
// inputs for every merge engine.
//
// Exactness:
// - a field's values are stored typed only when the typed value maps back to the same `Value`
//   and the same physical value (integers of the type's range, int64 values within ±2^53,
//   TIMESTAMP(0..3) in whole milliseconds, decimals of their precision); the first value that
//   does not fit turns that field of that group into a plain array of `Value`s, encoded at the
//   flush by `physicalEncoder` as `DataFileWriter.write` encodes it (same errors);
// - partition fields are one value per group (a group is one partition): stored once;
// - a key with one record that its engine keeps as it is (a lone +I under every engine, lone
//   kinds the engine's descriptor names, lib/merge/engines.ts) is gathered as it is; every other key's records are made
//   into `KeyValue`s and folded by the table's merge function, whose result is written.

import { valueComparator } from '../format/compare.ts'
import type { Column, ColumnBatch } from '../format/columnar-types.ts'
import { physicalEncoder, type PhysicalEncoder } from '../format/parquet-types.ts'
import { mergeEngineOf } from '../merge/engines.ts'
import type { MergeEngineConfig, MergeFunction } from '../merge/merge-types.ts'
import { sequenceValueComparator } from '../merge/sequence-order.ts'
import { StrataInputError } from '../errors.ts'
import type { DataField, DataType, KeyValue, Row, RowKind, Value } from '../types.ts'

/** How a field's values are stored in a group. */
const enum Mode {
  /** TINYINT, SMALLINT, INT, DATE: Int32Array */
  I32,
  /** FLOAT, DOUBLE: Float64Array */
  F64,
  /** BIGINT, DECIMAL(p <= 18), TIMESTAMP: the integer as a double (|v| <= 2^53) */
  I64,
  /** BOOLEAN: Uint8Array of 0/1 */
  BOOL,
  /** strings, bytes, wide decimals, and any field whose values left the typed shape: Value[] */
  ANY,
  /** a partition field: one value for the whole group */
  CONST,
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)
const MIN_SAFE = -MAX_SAFE

/** What the buffer knows of a field, once per table. */
export interface FieldSpec {
  readonly type: DataType
  readonly mode: Mode
  /** I32: the type's range */
  readonly lo: number
  readonly hi: number
  /** I64: TIMESTAMP(0..3), stored in microseconds but written in milliseconds */
  readonly millis: boolean
  /** I64 DECIMAL: |unscaled| < 10^precision (Infinity: any safe integer fits) */
  readonly decimalLimit: number
  readonly nullable: boolean
  readonly encode: PhysicalEncoder
}

function fieldSpec(f: DataField, partition: boolean): FieldSpec {
  const t = f.type
  let mode: Mode = Mode.ANY
  let lo = 0
  let hi = 0
  let millis = false
  let decimalLimit = Infinity
  switch (t.root) {
    case 'TINYINT':
      ;[mode, lo, hi] = [Mode.I32, -128, 127]
      break
    case 'SMALLINT':
      ;[mode, lo, hi] = [Mode.I32, -32768, 32767]
      break
    case 'INT':
    case 'DATE':
      ;[mode, lo, hi] = [Mode.I32, -2147483648, 2147483647]
      break
    case 'FLOAT':
    case 'DOUBLE':
      mode = Mode.F64
      break
    case 'BIGINT':
      mode = Mode.I64
      break
    case 'TIMESTAMP':
      mode = Mode.I64
      millis = (t.precision ?? 6) <= 3
      break
    case 'DECIMAL':
      if ((t.precision ?? 10) <= 18) {
        mode = Mode.I64
        decimalLimit = (t.precision ?? 10) <= 15 ? 10 ** (t.precision ?? 10) : Infinity
      }
      break
    case 'BOOLEAN':
      mode = Mode.BOOL
      break
  }
  if (partition) mode = Mode.CONST
  return { type: t, mode, lo, hi, millis, decimalLimit, nullable: t.nullable !== false, encode: physicalEncoder(f.name, t) }
}

/** The per-table part of the column buffers: field specs and the merge's shape. */
export class ColumnLayout {
  readonly specs: FieldSpec[]
  readonly fields: readonly DataField[]
  readonly keyIndexes: readonly number[]
  readonly partitionIndexes: readonly number[]
  readonly mergeConfig: MergeEngineConfig
  /** a lone record of this kind is written as it is */
  readonly keepsAlone: (kind: RowKind) => boolean
  /** a lone record with null in a NOT NULL field must go through the merge function (which refuses it) */
  readonly refusesNullInNotNull: boolean
  readonly notNullFields: number[]

  constructor(fields: readonly DataField[], keyIndexes: readonly number[], partitionIndexes: readonly number[], mergeConfig: MergeEngineConfig) {
    this.fields = fields
    this.keyIndexes = keyIndexes
    this.partitionIndexes = partitionIndexes
    this.mergeConfig = mergeConfig
    const part = new Set(partitionIndexes)
    this.specs = fields.map((f, i) => fieldSpec(f, part.has(i)))
    const engine = mergeEngineOf(mergeConfig.engine).columnar
    // a lone +I merges to itself under every engine; deduplicate keeps any lone record its
    // row-kind filter lets through, which the merge function decides: only +I here
    this.keepsAlone = engine?.keeps === 'fold' ? engine.keepsAlone : (kind) => kind === 0
    this.refusesNullInNotNull = engine?.keeps === 'fold' && engine.refusesNullInNotNull
    this.notNullFields = fields.flatMap((f, i) => (f.type.nullable === false ? [i] : []))
  }
}

/** One field of one group. */
class FieldColumn {
  mode: Mode
  i32: Int32Array | null = null
  f64: Float64Array | null = null
  u8: Uint8Array | null = null
  any: Value[] | null = null
  /** 1 where the value is null (typed modes), allocated at the first null */
  nulls: Uint8Array | null = null

  constructor(
    readonly spec: FieldSpec,
    capacity: number,
  ) {
    this.mode = spec.mode
    switch (this.mode) {
      case Mode.I32:
        this.i32 = new Int32Array(capacity)
        break
      case Mode.F64:
      case Mode.I64:
        this.f64 = new Float64Array(capacity)
        break
      case Mode.BOOL:
        this.u8 = new Uint8Array(capacity)
        break
      case Mode.ANY:
        this.any = []
        break
    }
  }

  grow(capacity: number): void {
    if (this.i32) this.i32 = grown(this.i32, new Int32Array(capacity))
    if (this.f64) this.f64 = grown(this.f64, new Float64Array(capacity))
    if (this.u8) this.u8 = grown(this.u8, new Uint8Array(capacity))
    if (this.nulls) this.nulls = grown(this.nulls, new Uint8Array(capacity))
  }

  /** Stores `v` as row `r` (rows arrive in order, r = rows so far). */
  set(r: number, v: Value, capacity: number): void {
    switch (this.mode) {
      case Mode.I32:
        if (typeof v === 'number' && (v | 0) === v && v >= this.spec.lo && v <= this.spec.hi && (v !== 0 || 1 / v > 0)) {
          this.i32![r] = v
          return
        }
        break
      case Mode.F64:
        if (typeof v === 'number') {
          this.f64![r] = v
          return
        }
        break
      case Mode.I64:
        if (typeof v === 'bigint' && v <= MAX_SAFE && v >= MIN_SAFE) {
          const x = Number(v)
          if ((!this.spec.millis || x % 1000 === 0) && Math.abs(x) < this.spec.decimalLimit) {
            this.f64![r] = x
            return
          }
        }
        break
      case Mode.BOOL:
        if (typeof v === 'boolean') {
          this.u8![r] = v ? 1 : 0
          return
        }
        break
      case Mode.ANY:
        this.any!.push(v)
        return
      case Mode.CONST:
        return
    }
    if (v === null) {
      ;(this.nulls ??= new Uint8Array(capacity))[r] = 1
      return
    }
    // a value the typed array cannot hold as it is: this field of the group goes plain
    this.toAny(r)
    this.any!.push(v)
  }

  /** The first `n` values as a Value[]; the field is stored plain from now on. */
  toAny(n: number): void {
    const out: Value[] = new Array(n)
    for (let r = 0; r < n; r++) out[r] = this.valueAt(r, null)
    this.mode = Mode.ANY
    this.any = out
    this.i32 = this.f64 = this.u8 = this.nulls = null
  }

  /** Row r's Value (`constant`: a CONST field's value). */
  valueAt(r: number, constant: Value): Value {
    if (this.nulls !== null && this.nulls[r] === 1) return null
    switch (this.mode) {
      case Mode.I32:
        return this.i32![r]
      case Mode.F64:
        return this.f64![r]
      case Mode.I64:
        return BigInt(this.f64![r])
      case Mode.BOOL:
        return this.u8![r] === 1
      case Mode.ANY:
        return this.any![r]
      default:
        return constant
    }
  }

  /** Row r's value for ordering: as valueAt, but int64 values as numbers (they are safe integers, so they order alike). */
  orderAt(r: number, constant: Value): Value {
    if (this.mode === Mode.I64) return this.nulls !== null && this.nulls[r] === 1 ? null : this.f64![r]
    return this.valueAt(r, constant)
  }
}

const TWO_32 = 4294967296

/**
 * Output rows of an int64 field stored as doubles, as a BigInt64Array written word by word
 * (little-endian, as every platform Node runs on): no bigint per value. `divisor` 1000 turns
 * TIMESTAMP(0..3) microseconds into the milliseconds the file holds (they divide exactly).
 */
function int64Column(src: Float64Array, refs: Int32Array, m: number, divisor: number): BigInt64Array {
  const out = new BigInt64Array(m)
  const words = new Int32Array(out.buffer)
  for (let i = 0; i < m; i++) {
    const x = divisor === 1 ? src[refs[i]] : src[refs[i]] / divisor
    const hi = Math.floor(x / TWO_32)
    words[2 * i] = (x - hi * TWO_32) | 0
    words[2 * i + 1] = hi | 0
  }
  return out
}

function grown<T extends Int32Array | Float64Array | Uint8Array>(old: T, next: T): T {
  next.set(old as never)
  return next
}

const INITIAL_CAPACITY = 8

/** The records of one (partition, bucket) of the sub-batch being buffered, as columns. */
export class GroupColumns {
  rows = 0
  #capacity: number
  kinds: Uint8Array
  /** each record's index in the batch: its sequence number is the flush's base plus this */
  index: Int32Array
  readonly fields: FieldColumn[]
  /** the first record DataFileWriter.write would refuse (a kind that is not a RowKind, a row of the wrong length): its error, thrown at the flush */
  refused: StrataInputError | null = null

  constructor(
    readonly layout: ColumnLayout,
    /** the group's partition values, in partition-key order */
    readonly partitionValues: Row,
    /** rows to make room for at once (the bucket's rows in the previous flush): the arrays then rarely grow */
    expectedRows = 0,
  ) {
    const cap = Math.max(INITIAL_CAPACITY, Math.ceil(expectedRows * 1.125))
    this.#capacity = cap
    this.kinds = new Uint8Array(cap)
    this.index = new Int32Array(cap)
    this.fields = layout.specs.map((s) => new FieldColumn(s, cap))
  }

  add(row: Row, kind: RowKind, index: number): void {
    const r = this.rows
    if (r === this.#capacity) this.#grow()
    const fields = this.fields
    if (!Array.isArray(row) || row.length !== fields.length) {
      const names = this.layout.fields.map((f) => f.name).join(', ')
      this.refused ??= new StrataInputError(`KeyValue.value: expected ${fields.length} values (${names}), got ${Array.isArray(row) ? row.length : typeof row}`)
      return
    }
    if (kind === 0 || kind === 1 || kind === 2 || kind === 3) this.kinds[r] = kind
    else this.refused ??= new StrataInputError(`_VALUE_KIND: value ${String(kind)} is not a RowKind (0 +I, 1 -U, 2 +U, 3 -D)`)
    this.index[r] = index
    const cap = this.#capacity
    for (let j = 0; j < fields.length; j++) fields[j].set(r, row[j], cap)
    this.rows = r + 1
  }

  #grow(): void {
    const cap = this.#capacity * 2
    this.kinds = grown(this.kinds, new Uint8Array(cap))
    this.index = grown(this.index, new Int32Array(cap))
    for (const f of this.fields) f.grow(cap)
    this.#capacity = cap
  }

  #constant(j: number): Value {
    const p = this.layout.partitionIndexes.indexOf(j)
    return p >= 0 ? this.partitionValues[p] : null
  }

  /** Field j of row r. */
  #valueAt(j: number, r: number): Value {
    const f = this.fields[j]
    return f.valueAt(r, f.mode === Mode.CONST ? this.#constant(j) : null)
  }

  /** Row r as a Row of Values. */
  rowAt(r: number): Row {
    const row: Row = new Array(this.fields.length)
    for (let j = 0; j < row.length; j++) row[j] = this.#valueAt(j, r)
    return row
  }

  /**
   * Sorts, merges and gathers the group into the columns of a data file (`_KEY_`…,
   * `_SEQUENCE_NUMBER`, `_VALUE_KIND`, the fields): what the row path writes, row for row.
   * `shift` + a record's batch index is its sequence number. Null when every key merged away.
   */
  toFileColumns(shift: bigint, mf: MergeFunction): ColumnBatch | null {
    if (this.refused) throw this.refused
    const n = this.rows
    const layout = this.layout
    const fields = this.fields
    const perm = this.#sorted()
    const keyIdx = layout.keyIndexes
    const keyCols = keyIdx.map((j) => fields[j])
    const keyCmps = keyIdx.map((j) => valueComparator(layout.fields[j].type))
    const sameKey = (a: number, b: number): boolean => {
      for (let k = 0; k < keyCols.length; k++) if (keyCmps[k](keyCols[k].orderAt(a, null), keyCols[k].orderAt(b, null)) !== 0) return false
      return true
    }
    // refs[i] >= 0: output row i is record refs[i] as it is; < 0: extras[-refs[i] - 1]
    const refs = new Int32Array(n)
    const extras: KeyValue[] = []
    let m = 0
    const notNull = layout.refusesNullInNotNull ? layout.notNullFields : []
    const kinds = this.kinds
    for (let i = 0; i < n; ) {
      let j = i + 1
      while (j < n && sameKey(perm[i], perm[j])) j++
      const r = perm[i]
      if (j === i + 1 && layout.keepsAlone(kinds[r] as RowKind) && !notNull.some((f) => this.#valueAt(f, r) === null)) refs[m++] = r
      else {
        // the row path's merge of this key's records, in its order (sequence.field, then arrival)
        mf.reset()
        for (let k = i; k < j; k++) mf.add(this.#keyValue(perm[k], shift))
        const merged = mf.result()
        if (merged) {
          extras.push(merged)
          refs[m++] = -extras.length
        }
      }
      i = j
    }
    if (m === 0) return null
    return this.#gather(refs, m, extras, shift)
  }

  /**
   * Every record of the group as it was given, with its row kind, in key order (ties by
   * sequence.field, then arrival), unmerged: the changelog file of `changelog-producer`
   * input. `shift` + a record's batch index is its sequence number.
   */
  toChangelogColumns(shift: bigint, keep: (kind: RowKind) => boolean = () => true): ColumnBatch | null {
    if (this.refused) throw this.refused
    const perm = this.#sorted()
    const refs = new Int32Array(perm.length)
    let m = 0
    for (let i = 0; i < perm.length; i++) if (keep(this.kinds[perm[i]] as RowKind)) refs[m++] = perm[i]
    return m === 0 ? null : this.#gather(refs, m, [], shift)
  }

  /** The columns of a data file from output rows: refs[i] >= 0 is record refs[i] as it is, < 0 is extras[-refs[i] - 1]. */
  #gather(refs: Int32Array, m: number, extras: KeyValue[], shift: bigint): ColumnBatch {
    const layout = this.layout
    const fields = this.fields
    const keyIdx = layout.keyIndexes
    const kinds = this.kinds
    const valueCols: Column[] = fields.map((_, j) => this.#physicalColumn(j, refs, m, extras))
    // sequence numbers written as two 32-bit words each (no bigint per row): shift + index
    const seq = new BigInt64Array(m)
    const words = new Int32Array(seq.buffer)
    const shiftHi = Number(BigInt.asIntN(32, shift >> 32n))
    const shiftLo = Number(BigInt.asUintN(32, shift))
    const kindCol = new Int32Array(m)
    const index = this.index
    for (let i = 0; i < m; i++) {
      const r = refs[i]
      if (r >= 0) {
        const lo = shiftLo + index[r]
        const carry = lo >= TWO_32 ? 1 : 0
        words[2 * i] = (lo - carry * TWO_32) | 0
        words[2 * i + 1] = (shiftHi + carry) | 0
        kindCol[i] = kinds[r]
      } else {
        const kv = extras[-r - 1]
        seq[i] = kv.seq
        kindCol[i] = kv.kind
      }
    }
    return { rows: m, columns: [...keyIdx.map((j) => valueCols[j]), seq, kindCol, ...valueCols] }
  }

  #keyValue(r: number, shift: bigint): KeyValue {
    const value = this.rowAt(r)
    return { key: this.layout.keyIndexes.map((j) => value[j]), seq: shift + BigInt(this.index[r]), kind: this.kinds[r] as RowKind, value }
  }

  /** The record indexes in key order, ties by sequence.field then arrival (the row path's order). */
  #sorted(): Int32Array {
    const n = this.rows
    const perm = new Int32Array(n)
    for (let i = 0; i < n; i++) perm[i] = i
    const layout = this.layout
    const fields = this.fields
    const keyIdx = layout.keyIndexes
    const cfg = layout.mergeConfig
    const seqIdx = cfg.sequenceFieldIndexes
    let cmp: (a: number, b: number) => number
    const single = keyIdx.length === 1 ? fields[keyIdx[0]] : null
    if (single && single.nulls === null && seqIdx.length === 0 && (single.mode === Mode.I32 || (single.mode === Mode.I64 && single.f64))) {
      // one integer key: numbers compare as the values do
      const col = single.mode === Mode.I32 ? single.i32! : single.f64!
      cmp = (a, b) => col[a] - col[b] || a - b
    } else {
      const keyCols = keyIdx.map((j) => fields[j])
      const keyCmps = keyIdx.map((j) => valueComparator(layout.fields[j].type))
      const seqCols = seqIdx.map((j) => fields[j])
      const seqCmps = seqIdx.map((j) => sequenceValueComparator(layout.fields[j].type))
      const sign = cfg.sequenceAscending ? 1 : -1
      cmp = (a, b) => {
        for (let k = 0; k < keyCols.length; k++) {
          const c = keyCmps[k](keyCols[k].orderAt(a, null), keyCols[k].orderAt(b, null))
          if (c !== 0) return c
        }
        for (let k = 0; k < seqCols.length; k++) {
          const x = seqCols[k].orderAt(a, this.#constant(seqIdx[k]))
          const y = seqCols[k].orderAt(b, this.#constant(seqIdx[k]))
          if (x === null || y === null) {
            if (x === y) continue
            return x === null ? -1 : 1
          }
          const c = seqCmps[k](x, y)
          if (c !== 0) return sign * c
        }
        return a - b
      }
    }
    perm.sort(cmp)
    return perm
  }

  /** Field j's physical values for the output rows (typed where the values allow). */
  #physicalColumn(j: number, refs: Int32Array, m: number, extras: KeyValue[]): Column {
    const f = this.fields[j]
    const spec = f.spec
    const enc = spec.encode
    if (f.mode === Mode.CONST) {
      const p = enc(this.#constant(j))
      if (extras.length === 0) return new Array(m).fill(p)
    }
    if (extras.length === 0 && f.nulls === null) {
      switch (f.mode) {
        case Mode.I32: {
          const src = f.i32!
          const out = new Int32Array(m)
          for (let i = 0; i < m; i++) out[i] = src[refs[i]]
          return out
        }
        case Mode.F64: {
          const src = f.f64!
          const out = new Float64Array(m)
          for (let i = 0; i < m; i++) out[i] = src[refs[i]]
          return out
        }
        case Mode.I64:
          return int64Column(f.f64!, refs, m, spec.millis ? 1000 : 1)
        case Mode.BOOL: {
          const src = f.u8!
          const out = new Array<boolean>(m)
          for (let i = 0; i < m; i++) out[i] = src[refs[i]] === 1
          return out
        }
        case Mode.ANY: {
          const src = f.any!
          const out = new Array<unknown>(m)
          for (let i = 0; i < m; i++) out[i] = enc(src[refs[i]])
          return out
        }
      }
    }
    // nulls or merged rows: through Values and the row path's encoder
    const constant = f.mode === Mode.CONST ? this.#constant(j) : null
    const out = new Array<unknown>(m)
    for (let i = 0; i < m; i++) {
      const r = refs[i]
      out[i] = enc(r >= 0 ? f.valueAt(r, constant) : extras[-r - 1].value[j])
    }
    return out
  }
}
