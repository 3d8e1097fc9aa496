// Paimon data types ↔ Parquet columns (docs/format.md "Data files", Paimon
// `format:parquet/ParquetSchemaConverter.java` `convertToParquetType`). Three concerns, one per
// type root: the SchemaElement a column is written with, the checked physical value handed to
// hyparquet-writer, and the decoder from what hyparquet returns for a column (read with its
// logical annotations stripped, so nothing goes through a float or a Date) back to a `Value`.

import type { SchemaElement } from 'hyparquet'
import { RefusedError, StrataInputError } from '../errors.ts'
import type { DataType, MapValue, TypeRoot, Value } from '../types.ts'

/** Largest precision of TIMESTAMP(p) that a Value (bigint microseconds) can hold. */
export const MAX_TIMESTAMP_PRECISION = 6

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n

/**
 * Bytes of a FIXED_LEN_BYTE_ARRAY DECIMAL(p, s): the least n with 2^(8n−1) ≥ 10^p
 * (`ParquetSchemaConverter.computeMinBytesForDecimalPrecision`; p = 38 → 16).
 */
export function decimalByteLength(precision: number): number {
  const limit = 10n ** BigInt(precision)
  let n = 1
  while (2n ** BigInt(8 * n - 1) < limit) n++
  return n
}

function decimalPrecision(type: DataType, column: string): { precision: number; scale: number } {
  const precision = type.precision ?? 10
  const scale = type.scale ?? 0
  if (!Number.isInteger(precision) || precision < 1 || precision > 38 || !Number.isInteger(scale) || scale < 0 || scale > precision) {
    throw new StrataInputError(`column ${column}: DECIMAL(${precision}, ${scale}) is invalid; expected 1 <= precision <= 38 and 0 <= scale <= precision`)
  }
  return { precision, scale }
}

function timestampPrecision(type: DataType, column: string): number {
  const p = type.precision ?? 6
  if (!Number.isInteger(p) || p < 0 || p > MAX_TIMESTAMP_PRECISION) {
    // Paimon writes p > 6 as INT96 nanoseconds; a Strata Value holds microseconds only.
    throw new RefusedError(`column ${column}: TIMESTAMP(${p}) is not supported; expected precision 0..${MAX_TIMESTAMP_PRECISION} (nanosecond timestamps do not fit a microsecond Value)`)
  }
  return p
}

/**
 * The Parquet schema node of one column, as Paimon's Java writer declares it. Each node is
 * one complete object literal, not a spread of a common base: objects a spread makes change
 * hidden class once V8 has sized them (after some thousands), so code optimized for the
 * first compaction's nodes would be thrown away in the next one's (docs/benchmarks.md).
 */
export function parquetSchemaElement(name: string, fieldId: number, type: DataType): SchemaElement {
  const repetition_type = type.nullable ? 'OPTIONAL' : 'REQUIRED'
  const field_id = fieldId
  switch (type.root) {
    case 'BOOLEAN':
      return { name, repetition_type, field_id, type: 'BOOLEAN' }
    // Only the legacy converted type: hyparquet-writer 0.17 encodes the IntType logical
    // type's bitWidth as an i32 where the Parquet spec says i8, and readers that check the
    // footer strictly (DuckDB; likely parquet-java) then reject the whole file. INT_8 and
    // INT_16 say the same thing and every reader maps them to TINYINT/SMALLINT.
    case 'TINYINT':
      return { name, repetition_type, field_id, type: 'INT32', converted_type: 'INT_8' }
    case 'SMALLINT':
      return { name, repetition_type, field_id, type: 'INT32', converted_type: 'INT_16' }
    case 'INT':
      return { name, repetition_type, field_id, type: 'INT32' }
    case 'BIGINT':
      return { name, repetition_type, field_id, type: 'INT64' }
    case 'FLOAT':
      return { name, repetition_type, field_id, type: 'FLOAT' }
    case 'DOUBLE':
      return { name, repetition_type, field_id, type: 'DOUBLE' }
    case 'CHAR':
    case 'VARCHAR':
      return { name, repetition_type, field_id, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' } }
    case 'BINARY':
    case 'VARBINARY':
      return { name, repetition_type, field_id, type: 'BYTE_ARRAY' }
    case 'DATE':
      return { name, repetition_type, field_id, type: 'INT32', converted_type: 'DATE', logical_type: { type: 'DATE' } }
    case 'DECIMAL': {
      const { precision, scale } = decimalPrecision(type, name)
      const logical_type = { type: 'DECIMAL' as const, precision, scale }
      if (precision <= 9) return { name, repetition_type, field_id, type: 'INT32', converted_type: 'DECIMAL', precision, scale, logical_type }
      if (precision <= 18) return { name, repetition_type, field_id, type: 'INT64', converted_type: 'DECIMAL', precision, scale, logical_type }
      return { name, repetition_type, field_id, type: 'FIXED_LEN_BYTE_ARRAY', type_length: decimalByteLength(precision), converted_type: 'DECIMAL', precision, scale, logical_type }
    }
    case 'TIMESTAMP': {
      // parquet-java writes the legacy converted type next to the logical type for MILLIS and
      // MICROS whatever isAdjustedToUTC says (ParquetMetadataConverter.ConvertedTypeConverterVisitor).
      const millis = timestampPrecision(type, name) <= 3
      return {
        name,
        repetition_type,
        field_id,
        type: 'INT64',
        converted_type: millis ? 'TIMESTAMP_MILLIS' : 'TIMESTAMP_MICROS',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: false, unit: millis ? 'MILLIS' : 'MICROS' },
      }
    }
    default:
      throw new StrataInputError(`column ${name}: type ${(type as { root: string }).root} has no Parquet mapping`)
  }
}

/** Converts a checked `Value` to what hyparquet-writer encodes for the column; throws on a wrong value. */
export type PhysicalEncoder = (v: Value) => unknown

function describe(v: Value): string {
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)
  if (typeof v === 'bigint') return `${v}n`
  if (v instanceof Uint8Array) return `Uint8Array(${v.length})`
  return String(v)
}

function bad(column: string, type: DataType, v: Value, expected: string): never {
  throw new StrataInputError(`column ${column} (${type.root}${type.nullable ? '' : ' NOT NULL'}): value ${describe(v)} is not ${expected}`)
}

function intRange(bits: number): [number, number] {
  return [-(2 ** (bits - 1)), 2 ** (bits - 1) - 1]
}

/**
 * The encoder of one column. Nulls are checked against the type's nullability; each non-null
 * value against the representation `Value` documents for the root (lib/types.ts).
 */
export function physicalEncoder(column: string, type: DataType): PhysicalEncoder {
  if (type.root === 'ARRAY' || type.root === 'MAP' || type.root === 'MULTISET' || type.root === 'ROW') return nestedEncoder(column, type)
  const inner = nonNullEncoder(column, type)
  if (!type.nullable) {
    return (v) => (v === null || v === undefined ? bad(column, type, v ?? null, 'allowed: the column is NOT NULL') : inner(v))
  }
  return (v) => (v === null || v === undefined ? null : inner(v))
}

function integerEncoder(column: string, type: DataType, bits: number): PhysicalEncoder {
  const [lo, hi] = intRange(bits)
  const expected = `an integer number in [${lo}, ${hi}]`
  return (v) => (typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi ? v : bad(column, type, v, expected))
}

function nonNullEncoder(column: string, type: DataType): PhysicalEncoder {
  switch (type.root) {
    case 'BOOLEAN':
      return (v) => (typeof v === 'boolean' ? v : bad(column, type, v, 'a boolean'))
    case 'TINYINT':
      return integerEncoder(column, type, 8)
    case 'SMALLINT':
      return integerEncoder(column, type, 16)
    case 'INT':
    case 'DATE':
      return integerEncoder(column, type, 32)
    case 'BIGINT':
      return (v) => (typeof v === 'bigint' && v >= INT64_MIN && v <= INT64_MAX ? v : bad(column, type, v, 'a bigint in the int64 range'))
    case 'FLOAT':
    case 'DOUBLE':
      return (v) => (typeof v === 'number' ? v : bad(column, type, v, 'a number'))
    case 'CHAR':
    case 'VARCHAR':
      return (v) => (typeof v === 'string' ? v : bad(column, type, v, 'a string'))
    case 'BINARY':
    case 'VARBINARY':
      return (v) => (v instanceof Uint8Array ? v : bad(column, type, v, 'a Uint8Array'))
    case 'DECIMAL': {
      const { precision, scale } = decimalPrecision(type, column)
      const limit = 10n ** BigInt(precision)
      const expected = `an unscaled bigint of DECIMAL(${precision}, ${scale}) (|v| < 10^${precision})`
      return (v) => (typeof v === 'bigint' && v < limit && v > -limit ? v : bad(column, type, v, expected))
    }
    case 'TIMESTAMP': {
      const p = timestampPrecision(type, column)
      if (p > 3) {
        return (v) => (typeof v === 'bigint' && v >= INT64_MIN && v <= INT64_MAX ? v : bad(column, type, v, 'a bigint of microseconds'))
      }
      // TIMESTAMP(0..3) is stored as INT64 millis; a sub-millisecond part would be lost silently.
      return (v) => {
        if (typeof v !== 'bigint') bad(column, type, v, 'a bigint of microseconds')
        if (v % 1000n !== 0n) bad(column, type, v, `a whole number of milliseconds (TIMESTAMP(${p}) is stored in millis)`)
        return v / 1000n
      }
    }
    default:
      throw new StrataInputError(`column ${column}: type ${(type as { root: string }).root} has no Parquet mapping`)
  }
}

const NESTED_COUNT: DataType = { root: 'INT', nullable: false }

function describeNested(v: unknown): string {
  if (typeof v === 'bigint') return `${v}n`
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v)
  if (v instanceof Uint8Array) return `Uint8Array(${v.length})`
  if (Array.isArray(v)) return `an array of ${v.length}`
  if (typeof v === 'object' && v !== null) return 'an object'
  return String(v)
}

function isMapValue(v: unknown): v is MapValue {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Array.isArray((v as MapValue).keys) && Array.isArray((v as MapValue).values) && (v as MapValue).keys.length === (v as MapValue).values.length
}

/** Why `v` is not a value of `t` (a message starting with the path inside the value), or null. */
function problem(t: DataType, v: Value, at: string, leaf: (t: DataType, v: Value) => string | null): string | null {
  if (v === null || v === undefined) return t.nullable ? null : `${at || 'the value'} is null, but the type is NOT NULL`
  switch (t.root) {
    case 'ARRAY': {
      if (!Array.isArray(v)) return `${at || 'the value'}: expected an array (ARRAY), got ${describeNested(v)}`
      for (let i = 0; i < v.length; i++) {
        const p = problem(t.element!, v[i], `${at}[${i}]`, leaf)
        if (p) return p
      }
      return null
    }
    case 'ROW': {
      const n = t.fields!.length
      if (!Array.isArray(v) || v.length !== n) return `${at || 'the value'}: expected an array of the ${n} field values of a ROW, got ${describeNested(v)}`
      for (let i = 0; i < n; i++) {
        const p = problem(t.fields![i].type, v[i], `${at}.${t.fields![i].name}`, leaf)
        if (p) return p
      }
      return null
    }
    case 'MAP':
    case 'MULTISET': {
      if (!isMapValue(v)) return `${at || 'the value'}: expected a MapValue { keys, values } of equal lengths, got ${describeNested(v)}`
      const keyType = t.root === 'MAP' ? t.key! : t.element!
      for (let i = 0; i < v.keys.length; i++) {
        if (v.keys[i] === null || v.keys[i] === undefined) return `${at}[${i}]: a key of ${t.root} is null; keys are never null`
        const p = problem({ ...keyType, nullable: false }, v.keys[i], `${at}[${i}] (key)`, leaf) ?? problem(t.root === 'MAP' ? t.value! : NESTED_COUNT, v.values[i], `${at}[${i}]`, leaf)
        if (p) return p
      }
      return null
    }
    default: {
      const p = leaf(t, v)
      return p === null ? null : `${at || 'the value'}: ${p}`
    }
  }
}

const leafChecks = new WeakMap<DataType, PhysicalEncoder>()

function leafProblem(t: DataType, v: Value): string | null {
  let enc = leafChecks.get(t)
  if (enc === undefined) leafChecks.set(t, (enc = physicalEncoder('', t)))
  try {
    enc(v)
    return null
  } catch (e) {
    if (!(e instanceof StrataInputError)) throw e
    // "column  (T): value x is not y" without its column, which the caller names
    return e.message.replace(/^column\s*\([^)]*\):\s*/, '')
  }
}

/**
 * The check of a nested column's values (`physicalEncoder` of a nested type): a value
 * of the wrong shape or a bad part is refused, naming the column and the path inside the
 * value (`column tags: [3].name: value 5 is not a string`); the value is its own physical value.
 */
function nestedEncoder(column: string, type: DataType): PhysicalEncoder {
  return (v) => {
    const p = problem(type, v, '', leafProblem)
    if (p !== null) throw new StrataInputError(`column ${column} (${type.root}): ${p}`)
    return v
  }
}

/** Approximate encoded bytes of a nested value (its leaves' values and levels), for row-group rolling. */
function nestedSizer(type: DataType): (v: unknown) => number {
  const size = (t: DataType, v: unknown): number => {
    if (v === null || v === undefined) return 1
    switch (t.root) {
      case 'ARRAY': {
        let n = 1
        for (const x of v as Value[]) n += size(t.element!, x)
        return n
      }
      case 'ROW': {
        let n = 0
        t.fields!.forEach((f, i) => (n += size(f.type, (v as Value[])[i])))
        return n
      }
      case 'MAP':
      case 'MULTISET': {
        const m = v as MapValue
        let n = 1
        for (let i = 0; i < m.keys.length; i++) n += size(t.root === 'MAP' ? t.key! : t.element!, m.keys[i]) + (t.root === 'MAP' ? size(t.value!, m.values[i]) : 5)
        return n
      }
      default:
        return 1 + physicalSizer(t)(v)
    }
  }
  return (v) => size(type, v)
}


// The sizers are the same functions from one writer to the next (not closures made per
// writer), so code V8 optimized for one compaction's writer still fits the next one's.
const SIZE_1 = (): number => 1
const SIZE_4 = (): number => 4
const SIZE_8 = (): number => 8
const STRING_SIZE = (s: unknown): number => (typeof s === 'string' ? 4 + s.length : 0)
const BINARY_SIZE = (b: unknown): number => (b instanceof Uint8Array ? 4 + b.length : 0)
const fixedSizes = new Map<number, () => number>()

/** Approximate encoded bytes of one physical value, for row-group and file-size rolling. */
export function physicalSizer(type: DataType): (physical: unknown) => number {
  switch (type.root) {
    case 'ARRAY':
    case 'MAP':
    case 'MULTISET':
    case 'ROW':
      return nestedSizer(type)
    case 'BOOLEAN':
      return SIZE_1
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'DATE':
    case 'FLOAT':
      return SIZE_4
    case 'BIGINT':
    case 'DOUBLE':
    case 'TIMESTAMP':
      return SIZE_8
    case 'DECIMAL': {
      const p = type.precision ?? 10
      if (p <= 9) return SIZE_4
      if (p <= 18) return SIZE_8
      const n = decimalByteLength(p)
      let f = fixedSizes.get(n)
      if (f === undefined) fixedSizes.set(n, (f = () => n))
      return f
    }
    case 'CHAR':
    case 'VARCHAR':
      return STRING_SIZE
    case 'BINARY':
    case 'VARBINARY':
      return BINARY_SIZE
    default:
      return SIZE_8
  }
}

/** Converts a decoded non-null raw column value to its `Value`. */
export type ValueDecoder = (raw: unknown) => Value

// a leading U+FEFF is the value's first character, not a byte-order mark to drop
const utf8 = new TextDecoder('utf-8', { ignoreBOM: true })

/** A big-endian two's complement integer (Java's BigInteger.toByteArray, Paimon's Decimal.toUnscaledBytes). */
export function bigEndianSigned(bytes: Uint8Array): bigint {
  if (bytes.length === 0) return 0n
  let v = 0n
  for (const b of bytes) v = (v << 8n) | BigInt(b)
  const bits = BigInt(bytes.length * 8)
  return bytes[0] & 0x80 ? v - (1n << bits) : v
}

function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b
  return a % b !== 0n && a < 0n !== b < 0n ? q - 1n : q
}

function mismatch(column: string, type: DataType, element: SchemaElement): never {
  const annotation = element.logical_type?.type ?? element.converted_type ?? 'no annotation'
  throw new Error(`data file column ${column}: Parquet ${element.type} (${annotation}) cannot be read as ${type.root}`)
}

/**
 * The decoder of one column as stored in a file. Accepts what Paimon's Java reader accepts for
 * the type (`format:parquet/reader/ParquetVectorUpdaterFactory.java`): e.g. timestamps as INT64
 * MILLIS/MICROS/NANOS or INT96, decimals as INT32/INT64/FIXED/BINARY.
 */
export function valueDecoder(column: string, type: DataType, element: SchemaElement): ValueDecoder {
  const physical = element.type
  const expect = (...types: string[]): void => {
    if (!physical || !types.includes(physical)) mismatch(column, type, element)
  }
  const root: TypeRoot = type.root
  switch (root) {
    case 'BOOLEAN':
      expect('BOOLEAN')
      return (r) => r as boolean
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'DATE':
      expect('INT32')
      return (r) => r as number
    case 'BIGINT':
      expect('INT64')
      return (r) => r as bigint
    case 'FLOAT':
      expect('FLOAT')
      return (r) => r as number
    case 'DOUBLE':
      expect('DOUBLE')
      return (r) => r as number
    case 'CHAR':
    case 'VARCHAR':
      expect('BYTE_ARRAY')
      return (r) => (typeof r === 'string' ? r : utf8.decode(r as Uint8Array))
    case 'BINARY':
    case 'VARBINARY':
      expect('BYTE_ARRAY')
      return (r) => r as Uint8Array
    case 'DECIMAL':
      expect('INT32', 'INT64', 'FIXED_LEN_BYTE_ARRAY', 'BYTE_ARRAY')
      if (physical === 'INT32') return (r) => BigInt(r as number)
      if (physical === 'INT64') return (r) => r as bigint
      return (r) => bigEndianSigned(r as Uint8Array)
    case 'TIMESTAMP': {
      expect('INT64', 'INT96')
      // hyparquet turns INT96 into epoch nanoseconds and hands them to `timestampFromNanoseconds`,
      // which the data-file reader makes the identity
      if (physical === 'INT96') return (r) => floorDiv(r as bigint, 1000n)
      const lt = element.logical_type
      const unit = lt?.type === 'TIMESTAMP' ? lt.unit : element.converted_type === 'TIMESTAMP_MILLIS' ? 'MILLIS' : 'MICROS'
      if (unit === 'MILLIS') return (r) => (r as bigint) * 1000n
      if (unit === 'NANOS') return (r) => floorDiv(r as bigint, 1000n)
      return (r) => r as bigint
    }
    default:
      throw new StrataInputError(`column ${column}: type ${(type as { root: string }).root} has no Parquet mapping`)
  }
}

/**
 * The element hyparquet is given when reading: annotations removed so it returns physical values
 * (it would turn DECIMAL into a float and DATE/TIMESTAMP into Date). STRING keeps its annotation,
 * which decodes each dictionary entry once instead of every row.
 */
export function rawReadElement(element: SchemaElement, type: DataType): SchemaElement {
  const keepUtf8 = (type.root === 'CHAR' || type.root === 'VARCHAR') && element.type === 'BYTE_ARRAY'
  const { converted_type: _c, logical_type: _l, ...rest } = element
  return keepUtf8 ? { ...rest, converted_type: 'UTF8', logical_type: { type: 'STRING' } } : rest
}

/**
 * Whether two schema elements store a column alike: physical type, repetition and
 * annotations (a file's column against what Strata's writer declares, or two columns of one file).
 */
export function sameStorage(found: SchemaElement, ours: SchemaElement): boolean {
  return (
    found.type === ours.type &&
    (found.repetition_type ?? 'REQUIRED') === ours.repetition_type &&
    found.type_length === ours.type_length &&
    found.converted_type === ours.converted_type &&
    (found.converted_type !== 'DECIMAL' || (found.precision === ours.precision && (found.scale ?? 0) === (ours.scale ?? 0))) &&
    sameLogicalType(found.logical_type, ours.logical_type)
  )
}

function sameLogicalType(a: SchemaElement['logical_type'], b: SchemaElement['logical_type']): boolean {
  if (a === undefined || b === undefined) return a === b
  const x = a as unknown as Record<string, unknown>
  const y = b as unknown as Record<string, unknown>
  const keys = new Set([...Object.keys(x), ...Object.keys(y)])
  for (const k of keys) if (x[k] !== y[k]) return false
  return true
}
