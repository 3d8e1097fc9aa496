// Paimon BinaryRow: the byte form of partitions, keys, stats rows and bucket keys
// (paimon-common data/BinaryRow.java, BinaryRowWriter.java, AbstractBinaryWriter.java;
// docs/format.md "BinaryRow layout"). Java compares and hashes these bytes raw (partition identity, manifest
// ADD/DELETE matching, bucket hashing), so every padding byte is written as zero and nulls of
// non-compact DECIMAL/TIMESTAMP keep Java's layout, not pypaimon's.

import { StrataInputError } from '../errors.ts'
import { typeLabel } from './data-type.ts'
import type { DataType, Value } from '../types.ts'

// Paimon's DecimalType / TimestampType defaults, used when a type object omits them.
const DEFAULT_DECIMAL_PRECISION = 10
const DEFAULT_TIMESTAMP_PRECISION = 6
const MAX_DECIMAL_PRECISION = 38
// Decimal.MAX_COMPACT_PRECISION and Timestamp.isCompact: above these the value lives in the
// variable part.
const MAX_COMPACT_DECIMAL_PRECISION = 18
const MAX_COMPACT_TIMESTAMP_PRECISION = 3
// BinarySection.MAX_FIX_PART_DATA_SIZE: strings and binaries up to 7 bytes are stored inline.
const MAX_INLINE_BYTES = 7

const K_BOOLEAN = 0
const K_TINYINT = 1
const K_SMALLINT = 2
const K_INT = 3
const K_BIGINT = 4
const K_FLOAT = 5
const K_DOUBLE = 6
const K_DECIMAL_COMPACT = 7
const K_DECIMAL_WIDE = 8
const K_TIMESTAMP_COMPACT = 9
const K_TIMESTAMP_WIDE = 10
const K_STRING = 11
const K_BYTES = 12
const K_NESTED = 13

const INT64_MIN = -(1n << 63n)
const INT64_MAX = (1n << 63n) - 1n

/** The per-type plan of a row, computed once per `DataType[]`. */
interface RowLayout {
  types: DataType[]
  kinds: Uint8Array
  /** exclusive bound on |unscaled| for DECIMAL fields (10^precision), else 0n */
  decimalLimits: bigint[]
  arity: number
  nullBitsSize: number
  fixedSize: number
  /** some field is ARRAY, MAP, MULTISET or ROW */
  hasNested: boolean
}

// Keyed by the array itself: callers pass the same schema-derived `DataType[]` for every row
// and never mutate it afterwards.
const layouts = new WeakMap<DataType[], RowLayout>()

/** Header byte + null bitset size (`BinaryRow.calculateBitSetWidthInBytes`). */
export function nullBitsSizeInBytes(arity: number): number {
  return Math.floor((arity + 63 + 8) / 64) * 8
}

/** Bytes before the variable part: header, null bits and one 8-byte slot per field. */
export function fixedPartSize(arity: number): number {
  return nullBitsSizeInBytes(arity) + 8 * arity
}


function kindOf(type: DataType, index: number): number {
  switch (type.root) {
    case 'BOOLEAN':
      return K_BOOLEAN
    case 'TINYINT':
      return K_TINYINT
    case 'SMALLINT':
      return K_SMALLINT
    case 'INT':
    case 'DATE':
      return K_INT
    case 'BIGINT':
      return K_BIGINT
    case 'FLOAT':
      return K_FLOAT
    case 'DOUBLE':
      return K_DOUBLE
    case 'DECIMAL': {
      const p = type.precision ?? DEFAULT_DECIMAL_PRECISION
      if (!Number.isInteger(p) || p < 1 || p > MAX_DECIMAL_PRECISION) {
        throw new StrataInputError(
          `BinaryRow field ${index}: DECIMAL precision ${p} is not an integer in 1..${MAX_DECIMAL_PRECISION}`,
        )
      }
      return p <= MAX_COMPACT_DECIMAL_PRECISION ? K_DECIMAL_COMPACT : K_DECIMAL_WIDE
    }
    case 'TIMESTAMP': {
      const p = type.precision ?? DEFAULT_TIMESTAMP_PRECISION
      if (!Number.isInteger(p) || p < 0 || p > 9) {
        throw new StrataInputError(
          `BinaryRow field ${index}: TIMESTAMP precision ${p} is not an integer in 0..9`,
        )
      }
      return p <= MAX_COMPACT_TIMESTAMP_PRECISION ? K_TIMESTAMP_COMPACT : K_TIMESTAMP_WIDE
    }
    case 'CHAR':
    case 'VARCHAR':
      return K_STRING
    case 'BINARY':
    case 'VARBINARY':
      return K_BYTES
    case 'ARRAY':
    case 'MAP':
    case 'MULTISET':
    case 'ROW':
      return K_NESTED
    default:
      throw new StrataInputError(
        `BinaryRow field ${index}: type ${String((type as DataType).root)} is not supported`,
      )
  }
}

function layoutOf(types: DataType[]): RowLayout {
  let layout = layouts.get(types)
  if (layout !== undefined) return layout
  const arity = types.length
  const kinds = new Uint8Array(arity)
  const decimalLimits: bigint[] = new Array(arity).fill(0n)
  for (let i = 0; i < arity; i++) {
    kinds[i] = kindOf(types[i], i)
    if (types[i].root === 'DECIMAL') {
      decimalLimits[i] = 10n ** BigInt(types[i].precision ?? DEFAULT_DECIMAL_PRECISION)
    }
  }
  const nullBitsSize = nullBitsSizeInBytes(arity)
  layout = { types, kinds, decimalLimits, arity, nullBitsSize, fixedSize: nullBitsSize + 8 * arity, hasNested: kinds.includes(K_NESTED) }
  layouts.set(types, layout)
  return layout
}

function describe(v: unknown): string {
  if (v === null) return 'null'
  if (v === undefined) return 'undefined'
  if (typeof v === 'bigint') return `${v}n (bigint)`
  if (typeof v === 'string') {
    const shown = v.length > 40 ? `${v.slice(0, 40)}…` : v
    return `${JSON.stringify(shown)} (string)`
  }
  if (v instanceof Uint8Array) return `Uint8Array(${v.length})`
  if (typeof v === 'object') return `${Object.prototype.toString.call(v)}`
  return `${String(v)} (${typeof v})`
}

function badValue(layout: RowLayout, i: number, v: unknown, expected: string): StrataInputError {
  return new StrataInputError(
    `BinaryRow field ${i} (${typeLabel(layout.types[i])}): got ${describe(v)}, expected ${expected}`,
  )
}

function roundUp8(n: number): number {
  return (n + 7) & ~7
}

/**
 * UTF-8 length of `s` as TextEncoder writes it (a lone surrogate becomes U+FFFD, 3 bytes).
 * Pure ASCII returns `s.length`.
 */
export function utf8Length(s: string): number {
  const len = s.length
  let n = len
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) continue
    if (c < 0x800) {
      n += 1
    } else if ((c & 0xfc00) === 0xd800 && i + 1 < len && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2
      i++
    } else {
      n += 2
    }
  }
  return n
}

const encoder = new TextEncoder()
// ignoreBOM: a leading U+FEFF is data, not a byte-order mark.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true })

/** Writes `s` (UTF-8 length `n`) at `pos`. */
function writeUtf8(buf: Uint8Array, pos: number, s: string, n: number): void {
  if (n === s.length) {
    for (let j = 0; j < n; j++) buf[pos + j] = s.charCodeAt(j)
  } else {
    encoder.encodeInto(s, buf.subarray(pos, pos + n))
  }
}

function readUtf8(body: Uint8Array, pos: number, n: number): string {
  if (n <= 16) {
    let s = ''
    for (let j = 0; j < n; j++) {
      const b = body[pos + j]
      if (b >= 0x80) return decoder.decode(body.subarray(pos, pos + n))
      s += String.fromCharCode(b)
    }
    return s
  }
  return decoder.decode(body.subarray(pos, pos + n))
}

/** Java `BigInteger.toByteArray()` length: minimal two's complement, sign bit included. */
export function twosComplementLength(v: bigint): number {
  const magnitude = v < 0n ? ~v : v
  const bits = magnitude === 0n ? 0 : magnitude.toString(2).length
  return (bits >> 3) + 1
}

export function writeBigIntBE(buf: Uint8Array, pos: number, v: bigint, len: number): void {
  let x = v
  for (let j = len - 1; j >= 0; j--) {
    buf[pos + j] = Number(x & 0xffn)
    x >>= 8n
  }
}

function readBigIntBE(body: Uint8Array, pos: number, len: number): bigint {
  let x = 0n
  for (let j = 0; j < len; j++) x = (x << 8n) | BigInt(body[pos + j])
  if (len > 0 && (body[pos] & 0x80) !== 0) x -= 1n << BigInt(8 * len)
  return x
}

function floorDivBig(a: bigint, b: bigint): bigint {
  const q = a / b
  return a % b < 0n ? q - 1n : q
}

// One reusable buffer for encoding: rows are written into it and then copied out (or hashed in
// place by bucket.ts), so the per-row cost is one exact-size allocation or none.
let scratch = new Uint8Array(256)
let scratchView = new DataView(scratch.buffer)
let utf8Lens = new Int32Array(16)

function ensureScratch(size: number): void {
  if (scratch.length >= size) return
  let cap = scratch.length
  while (cap < size) cap *= 2
  scratch = new Uint8Array(cap)
  scratchView = new DataView(scratch.buffer)
}

/** Checks the values the variable part holds and returns the row's size; notes each string's UTF-8 length in `lens`. */
function encodedSize(layout: RowLayout, values: Value[], lens: Int32Array, nested: (Uint8Array | null)[] | null): number {
  const { kinds, arity, fixedSize, decimalLimits } = layout
  let size = fixedSize
  for (let i = 0; i < arity; i++) {
    const v = values[i]
    const kind = kinds[i]
    if (kind === K_DECIMAL_WIDE) {
      size += 16
      if (v === null) continue
      if (typeof v !== 'bigint' || v >= decimalLimits[i] || v <= -decimalLimits[i]) {
        throw badValue(layout, i, v, `a bigint unscaled value with |v| < ${decimalLimits[i]}`)
      }
    } else if (kind === K_TIMESTAMP_WIDE) {
      size += 8
    } else if (kind === K_STRING) {
      if (v === null) continue
      if (typeof v !== 'string') throw badValue(layout, i, v, 'a string')
      const n = utf8Length(v)
      lens[i] = n
      if (n > MAX_INLINE_BYTES) size += roundUp8(n)
    } else if (kind === K_BYTES) {
      if (v === null) continue
      if (!(v instanceof Uint8Array)) throw badValue(layout, i, v, 'a Uint8Array')
      if (v.length > MAX_INLINE_BYTES) size += roundUp8(v.length)
    } else if (kind === K_NESTED) {
      if (v !== null) size += roundUp8(nested![i]!.length)
    }
  }
  return size
}

/** The slot of a null field at `slot`; returns the cursor past the variable chunk Java reserves for it. */
function writeNull(buf: Uint8Array, view: DataView, i: number, kind: number, slot: number, cursor: number): number {
  buf[(i + 8) >>> 3] |= 1 << ((i + 8) & 7)
  // Java reserves the variable chunk of a null non-compact value and points the slot at it
  // (AbstractBinaryWriter.writeDecimal/writeTimestamp with null).
  if (kind === K_DECIMAL_WIDE) {
    view.setUint32(slot + 4, cursor, true)
    return cursor + 16
  }
  if (kind === K_TIMESTAMP_WIDE) {
    view.setUint32(slot + 4, cursor, true)
    return cursor + 8
  }
  return cursor
}

/** Whether a field of this kind may use the variable part (wide decimals and timestamps, strings, bytes). */
function usesVariablePart(kind: number): boolean {
  return kind === K_DECIMAL_WIDE || kind === K_TIMESTAMP_WIDE || kind === K_STRING || kind === K_BYTES
}

/** Field i, of a kind held in its 8-byte slot alone (numbers, booleans, compact decimals and timestamps), checked and written. */
function writeSlotValue(layout: RowLayout, buf: Uint8Array, view: DataView, i: number, kind: number, slot: number, v: Value): void {
  const decimalLimits = layout.decimalLimits
  switch (kind) {
    case K_BOOLEAN:
      if (typeof v !== 'boolean') throw badValue(layout, i, v, 'a boolean')
      buf[slot] = v ? 1 : 0
      break
    case K_TINYINT:
      if (typeof v !== 'number' || !Number.isInteger(v) || v < -128 || v > 127) {
        throw badValue(layout, i, v, 'an integer number in -128..127')
      }
      view.setInt8(slot, v)
      break
    case K_SMALLINT:
      if (typeof v !== 'number' || !Number.isInteger(v) || v < -32768 || v > 32767) {
        throw badValue(layout, i, v, 'an integer number in -32768..32767')
      }
      view.setInt16(slot, v, true)
      break
    case K_INT:
      if (typeof v !== 'number' || !Number.isInteger(v) || v < -2147483648 || v > 2147483647) {
        throw badValue(layout, i, v, 'an integer number in the int32 range')
      }
      view.setInt32(slot, v, true)
      break
    case K_BIGINT:
      if (typeof v !== 'bigint' || v < INT64_MIN || v > INT64_MAX) {
        throw badValue(layout, i, v, 'a bigint in the int64 range')
      }
      view.setBigInt64(slot, v, true)
      break
    case K_FLOAT:
      if (typeof v !== 'number') throw badValue(layout, i, v, 'a number')
      view.setFloat32(slot, v, true)
      break
    case K_DOUBLE:
      if (typeof v !== 'number') throw badValue(layout, i, v, 'a number')
      view.setFloat64(slot, v, true)
      break
    case K_DECIMAL_COMPACT:
      if (typeof v !== 'bigint' || v >= decimalLimits[i] || v <= -decimalLimits[i]) {
        throw badValue(layout, i, v, `a bigint unscaled value with |v| < ${decimalLimits[i]}`)
      }
      view.setBigInt64(slot, v, true)
      break
    case K_TIMESTAMP_COMPACT:
      view.setBigInt64(slot, timestampMillis(layout, i, v), true)
      break
  }
}

/** A timestamp's microseconds `v` as the epoch milliseconds BinaryRow stores (floored), or a named error. */
function timestampMillis(layout: RowLayout, i: number, v: Value): bigint {
  if (typeof v !== 'bigint') throw badValue(layout, i, v, 'a bigint of microseconds')
  const millis = floorDivBig(v, 1000n)
  if (millis < INT64_MIN || millis > INT64_MAX) throw badValue(layout, i, v, 'microseconds whose milliseconds fit in int64')
  return millis
}

/**
 * Field i, of a kind that may use the variable part (`encodedSize` checked all but timestamps),
 * written at `slot` and, when it does not fit there, at `cursor`; returns the cursor past it.
 */
function writeVariableValue(layout: RowLayout, buf: Uint8Array, view: DataView, i: number, kind: number, slot: number, cursor: number, v: Value, lens: Int32Array): number {
  switch (kind) {
    case K_DECIMAL_WIDE: {
      const d = v as bigint
      const len = twosComplementLength(d)
      writeBigIntBE(buf, cursor, d, len)
      view.setUint32(slot, len, true)
      view.setUint32(slot + 4, cursor, true)
      cursor += 16
      break
    }
    case K_TIMESTAMP_WIDE: {
      const millis = timestampMillis(layout, i, v)
      view.setBigInt64(cursor, millis, true)
      view.setUint32(slot, Number((v as bigint) - millis * 1000n) * 1000, true)
      view.setUint32(slot + 4, cursor, true)
      cursor += 8
      break
    }
    case K_STRING: {
      const s = v as string
      const n = lens[i]
      if (n <= MAX_INLINE_BYTES) {
        writeUtf8(buf, slot, s, n)
        buf[slot + 7] = 0x80 | n
      } else {
        writeUtf8(buf, cursor, s, n)
        view.setUint32(slot, n, true)
        view.setUint32(slot + 4, cursor, true)
        cursor += roundUp8(n)
      }
      break
    }
    case K_BYTES: {
      const b = v as Uint8Array
      const n = b.length
      if (n <= MAX_INLINE_BYTES) {
        buf.set(b, slot)
        buf[slot + 7] = 0x80 | n
      } else {
        buf.set(b, cursor)
        view.setUint32(slot, n, true)
        view.setUint32(slot + 4, cursor, true)
        cursor += roundUp8(n)
      }
      break
    }
  }
  return cursor
}

function encode(layout: RowLayout, values: Value[]): number {
  const { kinds, arity, nullBitsSize } = layout
  if (values.length !== arity) {
    throw new StrataInputError(
      `BinaryRow: got ${values.length} values for ${arity} fields (${layout.types.map(typeLabel).join(', ')})`,
    )
  }
  // Pass 0: nested values as their own bytes (this may encode rows itself, so it runs before
  // this row touches the shared buffers)
  const nested = layout.hasNested ? values.map((v, i) => (kinds[i] === K_NESTED && v !== null ? nestedField(layout, i, v) : null)) : null
  if (utf8Lens.length < arity) utf8Lens = new Int32Array(Math.max(arity, utf8Lens.length * 2))
  const lens = utf8Lens
  // Pass 1: validate and size the variable part.
  const size = encodedSize(layout, values, lens, nested)
  ensureScratch(size)
  const buf = scratch
  const view = scratchView
  buf.fill(0, 0, size)

  // Pass 2: write. Byte 0 (RowKind) stays 0 (+I), as for every row Strata serializes.
  let cursor = layout.fixedSize
  for (let i = 0; i < arity; i++) {
    const v = values[i]
    const kind = kinds[i]
    const slot = nullBitsSize + 8 * i
    if (v === null) cursor = writeNull(buf, view, i, kind, slot, cursor)
    else if (kind === K_NESTED) {
      const b = nested![i]!
      buf.set(b, cursor)
      view.setUint32(slot, b.length, true)
      view.setUint32(slot + 4, cursor, true)
      cursor += roundUp8(b.length)
    } else if (usesVariablePart(kind)) cursor = writeVariableValue(layout, buf, view, i, kind, slot, cursor, v, lens)
    else writeSlotValue(layout, buf, view, i, kind, slot, v)
  }
  return size
}

/**
 * Encodes a row into a shared buffer and returns its size; the bytes are
 * `transientRowBytes()[0, size)` and stay valid only until the next encode. For hot paths
 * (bucket hashing) that would otherwise allocate per row.
 */
export function writeBinaryRowTransient(types: DataType[], values: Value[]): number {
  return encode(layoutOf(types), values)
}

/** The shared buffer `writeBinaryRowTransient` wrote into. */
export function transientRowBytes(): Uint8Array {
  return scratch
}

/** BinaryRow body (no arity prefix) of `values` typed by `types`. */
export function writeBinaryRow(types: DataType[], values: Value[]): Uint8Array {
  const size = encode(layoutOf(types), values)
  return scratch.slice(0, size)
}

function corrupt(msg: string): Error {
  return new Error(`corrupt BinaryRow: ${msg}`)
}

function checkVarRange(i: number, offset: number, len: number, fixedSize: number, size: number): void {
  if (offset < fixedSize || offset + len > size) {
    throw corrupt(
      `field ${i} points at bytes [${offset}, ${offset + len}) outside the variable part [${fixedSize}, ${size})`,
    )
  }
}

/** Decodes a BinaryRow body (no arity prefix) into values of `types`. */
export function readBinaryRow(types: DataType[], body: Uint8Array): Value[] {
  const layout = layoutOf(types)
  const { kinds, arity, nullBitsSize, fixedSize } = layout
  if (body.length < fixedSize) {
    throw corrupt(`${body.length} bytes, a row of ${arity} fields needs at least ${fixedSize}`)
  }
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength)
  const out: Value[] = new Array(arity)
  for (let i = 0; i < arity; i++) {
    if ((body[(i + 8) >>> 3] & (1 << ((i + 8) & 7))) !== 0) {
      out[i] = null
      continue
    }
    const slot = nullBitsSize + 8 * i
    switch (kinds[i]) {
      case K_BOOLEAN:
        out[i] = body[slot] !== 0
        break
      case K_TINYINT:
        out[i] = view.getInt8(slot)
        break
      case K_SMALLINT:
        out[i] = view.getInt16(slot, true)
        break
      case K_INT:
        out[i] = view.getInt32(slot, true)
        break
      case K_BIGINT:
      case K_DECIMAL_COMPACT:
        out[i] = view.getBigInt64(slot, true)
        break
      case K_FLOAT:
        out[i] = view.getFloat32(slot, true)
        break
      case K_DOUBLE:
        out[i] = view.getFloat64(slot, true)
        break
      case K_DECIMAL_WIDE: {
        const len = view.getUint32(slot, true)
        const offset = view.getUint32(slot + 4, true)
        if (len > 16) throw corrupt(`field ${i}: decimal of ${len} bytes, at most 16 expected`)
        checkVarRange(i, offset, len, fixedSize, body.length)
        out[i] = readBigIntBE(body, offset, len)
        break
      }
      case K_TIMESTAMP_COMPACT:
        out[i] = view.getBigInt64(slot, true) * 1000n
        break
      case K_TIMESTAMP_WIDE: {
        const nanos = view.getUint32(slot, true)
        const offset = view.getUint32(slot + 4, true)
        if (nanos > 999_999) throw corrupt(`field ${i}: nanoOfMillisecond ${nanos} > 999999`)
        checkVarRange(i, offset, 8, fixedSize, body.length)
        out[i] = view.getBigInt64(offset, true) * 1000n + BigInt(Math.floor(nanos / 1000))
        break
      }
      case K_NESTED: {
        const len = view.getUint32(slot, true)
        const offset = view.getUint32(slot + 4, true)
        checkVarRange(i, offset, len, fixedSize, body.length)
        out[i] = readNested(layout.types[i], body.subarray(offset, offset + len))
        break
      }
      case K_STRING:
      case K_BYTES: {
        let pos: number
        let len: number
        const mark = body[slot + 7]
        if ((mark & 0x80) !== 0) {
          len = mark & 0x7f
          if (len > MAX_INLINE_BYTES) throw corrupt(`field ${i}: inline length ${len} > 7`)
          pos = slot
        } else {
          len = view.getUint32(slot, true)
          pos = view.getUint32(slot + 4, true)
          checkVarRange(i, pos, len, fixedSize, body.length)
        }
        out[i] = kinds[i] === K_STRING ? readUtf8(body, pos, len) : body.slice(pos, pos + len)
        break
      }
    }
  }
  return out
}

/**
 * Manifest form (`SerializationUtils.serializeBinaryRow`): int32 big-endian arity, then
 * the row body.
 */
export function serializeBinaryRow(types: DataType[], values: Value[]): Uint8Array {
  const size = encode(layoutOf(types), values)
  const out = new Uint8Array(4 + size)
  new DataView(out.buffer).setInt32(0, types.length, false)
  out.set(scratch.subarray(0, size), 4)
  return out
}

/** Arity prefix of a serialized BinaryRow. */
export function serializedArity(bytes: Uint8Array): number {
  if (bytes.length < 4) throw corrupt(`serialized row of ${bytes.length} bytes has no arity prefix`)
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getInt32(0, false)
}

/** Inverse of `serializeBinaryRow`; the arity prefix must equal `types.length`. */
export function deserializeBinaryRow(types: DataType[], bytes: Uint8Array): Value[] {
  const arity = serializedArity(bytes)
  if (arity !== types.length) {
    throw corrupt(
      `serialized row has arity ${arity}, expected ${types.length} (${types.map(typeLabel).join(', ')})`,
    )
  }
  return readBinaryRow(types, bytes.subarray(4))
}

/** `BinaryRow.EMPTY_ROW` serialized: arity 0 and an 8-byte zero header. */
export const EMPTY_ROW_SERIALIZED: Uint8Array = new Uint8Array(12)

/** `BinaryRow.EMPTY_ROW` body: 8 zero bytes. */
export const EMPTY_ROW_BODY: Uint8Array = new Uint8Array(8)

// ---------------------------------------------------------------------------------------------
// Nested values (docs/format.md "Nested types"): a ROW as a BinaryRow of its fields, an ARRAY
// as a BinaryArray, a MAP (and a MULTISET, a MAP of INT counts) as a BinaryMap, each in the
// variable part with the slot holding `offset << 32 | size` (AbstractBinaryWriter.writeRow,
// writeArray, writeMap). A BinaryArray (BinaryArrayWriter) is its element count (int32), a
// null bit per element from byte 4 (rounded up to 4 bytes), the elements' fixed parts (1, 2,
// 4 or 8 bytes by type, BinaryArray.calculateFixLengthPartSize; rounded up to 8 in all),
// then the variable part as in a row, offsets from the array's start. A BinaryMap is the
// byte size of its key array (int32), the key array, the value array.

const fieldTypeLists = new WeakMap<DataType, DataType[]>()
const elementLayouts = new WeakMap<DataType, RowLayout>()
const INT_COUNT: DataType = { root: 'INT', nullable: false }

/** A ROW's field types, one array per type (layouts are cached by the array). */
function fieldTypesOf(t: DataType): DataType[] {
  let a = fieldTypeLists.get(t)
  if (a === undefined) fieldTypeLists.set(t, (a = t.fields!.map((f) => f.type)))
  return a
}

/** The one-field layout of an element type, whose value checks and writers the arrays share. */
function elementLayout(t: DataType): RowLayout {
  let l = elementLayouts.get(t)
  if (l === undefined) elementLayouts.set(t, (l = layoutOf([t])))
  return l
}

function elementSize(kind: number): number {
  return kind === K_BOOLEAN || kind === K_TINYINT ? 1 : kind === K_SMALLINT ? 2 : kind === K_INT || kind === K_FLOAT ? 4 : 8
}

/** Field i's nested value as bytes; a bad part inside it is refused naming the field. */
function nestedField(layout: RowLayout, i: number, v: Value): Uint8Array {
  try {
    return nestedBytes(layout, i, layout.types[i], v)
  } catch (e) {
    if (!(e instanceof StrataInputError) || e.message.startsWith(`BinaryRow field ${i} (${typeLabel(layout.types[i])})`)) throw e
    throw new StrataInputError(`BinaryRow field ${i} (${typeLabel(layout.types[i])}): inside the value, ${e.message}`)
  }
}

/** The bytes of nested value `v` of type `t` (in field i of `layout`, for messages). */
function nestedBytes(layout: RowLayout, i: number, t: DataType, v: Value): Uint8Array {
  switch (t.root) {
    case 'ROW':
      if (!Array.isArray(v) || v.length !== t.fields!.length) throw badValue(layout, i, v, `an array of the ${t.fields!.length} values of a ROW`)
      return writeBinaryRow(fieldTypesOf(t), v)
    case 'ARRAY':
      if (!Array.isArray(v)) throw badValue(layout, i, v, 'an array')
      return arrayBytes(layout, i, t.element!, v)
    default: {
      const m = v as { keys?: unknown; values?: unknown }
      if (typeof v !== 'object' || v === null || !Array.isArray(m.keys) || !Array.isArray(m.values) || m.keys.length !== m.values.length) {
        throw badValue(layout, i, v, 'a MapValue { keys, values } of equal lengths')
      }
      const keys = arrayBytes(layout, i, t.root === 'MAP' ? t.key! : t.element!, m.keys as Value[])
      const values = arrayBytes(layout, i, t.root === 'MAP' ? t.value! : INT_COUNT, m.values as Value[])
      const out = new Uint8Array(4 + keys.length + values.length)
      new DataView(out.buffer).setInt32(0, keys.length, true)
      out.set(keys, 4)
      out.set(values, 4 + keys.length)
      return out
    }
  }
}

/** A BinaryArray of `vals`, elements of type `t`. */
function arrayBytes(layout: RowLayout, field: number, t: DataType, vals: Value[]): Uint8Array {
  const el = elementLayout(t)
  const kind = el.kinds[0]
  const n = vals.length
  const header = 4 + ((n + 31) >>> 5) * 4
  const es = elementSize(kind)
  const fixed = roundUp8(header + es * n)
  const lens = new Int32Array(1)
  const parts: (Uint8Array | null)[] = new Array(n).fill(null)
  let size = fixed
  for (let k = 0; k < n; k++) {
    const v = vals[k]
    if (kind === K_DECIMAL_WIDE) size += 16
    else if (kind === K_TIMESTAMP_WIDE) size += 8
    if (v === null) continue
    if (kind === K_NESTED) size += roundUp8((parts[k] = nestedBytes(layout, field, t, v)).length)
    else if (usesVariablePart(kind)) size += encodedSize(el, [v], lens, null) - el.fixedSize
  }
  const out = new Uint8Array(size)
  const view = new DataView(out.buffer)
  view.setInt32(0, n, true)
  let cursor = fixed
  for (let k = 0; k < n; k++) {
    const v = vals[k]
    const at = header + k * es
    if (v === null) {
      out[4 + (k >>> 3)] |= 1 << (k & 7)
      // a null wide decimal or timestamp keeps its chunk, as in a row (writeDecimal/writeTimestamp of null)
      if (kind === K_DECIMAL_WIDE || kind === K_TIMESTAMP_WIDE) {
        view.setUint32(at + 4, cursor, true)
        cursor += kind === K_DECIMAL_WIDE ? 16 : 8
      }
    } else if (kind === K_NESTED) {
      const b = parts[k]!
      out.set(b, cursor)
      view.setUint32(at, b.length, true)
      view.setUint32(at + 4, cursor, true)
      cursor += roundUp8(b.length)
    } else if (usesVariablePart(kind)) {
      if (kind === K_STRING) lens[0] = utf8Length(v as string)
      cursor = writeVariableValue(el, out, view, 0, kind, at, cursor, v, lens)
    } else writeSlotValue(el, out, view, 0, kind, at, v)
  }
  return out
}

/** A nested value of type `t` from its bytes. */
function readNested(t: DataType, b: Uint8Array): Value {
  switch (t.root) {
    case 'ROW':
      return readBinaryRow(fieldTypesOf(t), b)
    case 'ARRAY':
      return readArray(t.element!, b)
    default: {
      if (b.length < 4) throw corrupt(`a map of ${b.length} bytes`)
      const ks = new DataView(b.buffer, b.byteOffset, b.byteLength).getInt32(0, true)
      if (ks < 0 || 4 + ks > b.length) throw corrupt(`a map whose key array of ${ks} bytes overruns its ${b.length}`)
      const keys = readArray(t.root === 'MAP' ? t.key! : t.element!, b.subarray(4, 4 + ks))
      const values = readArray(t.root === 'MAP' ? t.value! : INT_COUNT, b.subarray(4 + ks))
      if (keys.length !== values.length) throw corrupt(`a map of ${keys.length} keys and ${values.length} values`)
      return { keys, values }
    }
  }
}

function readArray(t: DataType, b: Uint8Array): Value[] {
  const view = new DataView(b.buffer, b.byteOffset, b.byteLength)
  const n = b.length >= 4 ? view.getInt32(0, true) : -1
  const el = elementLayout(t)
  const kind = el.kinds[0]
  const header = 4 + ((n + 31) >>> 5) * 4
  const es = elementSize(kind)
  if (n < 0 || header + es * n > b.length) throw corrupt(`an array of ${n} elements in ${b.length} bytes`)
  const out: Value[] = new Array(n)
  let row: Uint8Array | undefined
  for (let k = 0; k < n; k++) {
    const at = header + k * es
    if ((b[4 + (k >>> 3)] & (1 << (k & 7))) !== 0) {
      out[k] = null
      continue
    }
    switch (kind) {
      case K_BOOLEAN:
        out[k] = b[at] !== 0
        break
      case K_TINYINT:
        out[k] = view.getInt8(at)
        break
      case K_SMALLINT:
        out[k] = view.getInt16(at, true)
        break
      case K_INT:
        out[k] = view.getInt32(at, true)
        break
      case K_FLOAT:
        out[k] = view.getFloat32(at, true)
        break
      case K_DOUBLE:
        out[k] = view.getFloat64(at, true)
        break
      case K_BIGINT:
      case K_DECIMAL_COMPACT:
        out[k] = view.getBigInt64(at, true)
        break
      case K_TIMESTAMP_COMPACT:
        out[k] = view.getBigInt64(at, true) * 1000n
        break
      default:
        // a variable-length element: read as a one-field row whose slot is the element's and
        // whose variable part is the array's (offsets from the same start). One copy of the
        // array serves every element: only its first 16 bytes change, and the variable part
        // starts past them; a copy per element made reading an array quadratic in its size.
        row ??= b.slice()
        row.fill(0, 0, 8)
        row.set(b.subarray(at, at + 8), 8)
        out[k] = readBinaryRow(el.types, row)[0]
    }
  }
  return out
}
