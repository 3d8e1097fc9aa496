// Paimon's casts between column types, as one descriptor: which type changes `ALTER TABLE …
// MODIFY` allows (api:types/DataTypeCasts.java, implicitly or explicitly, and only where
// common:casting/CastExecutors.java resolves an executor, as SchemaManager checks) and what a
// value of the old type reads as in the new one (the cast rules of common:casting). Reads of
// older files, lookups, compaction and the alter checks all go through here
// (docs/format.md "Schema evolution", "Type changes").

import { StrataInputError } from '../errors.ts'
import type { DataType, TypeRoot, Value } from '../types.ts'
import { MAX_LENGTH, formatDataType, typeLabel } from './data-type.ts'
import { civilFromDays, daysFromCivil, daysInMonth, decimalToPlainString, javaNumberString } from './partition-path.ts'

/** A cast of one non-null value; null only where Paimon's cast gives null (a DECIMAL that overflows). Throws CastError when the value does not convert. */
export type Cast = (v: Value) => Value

/** A value that Paimon's cast refuses (an unparsable string); the reader names the field and file. */
export class CastError extends Error {}

type Root = TypeRoot
const INTEGERS: Root[] = ['TINYINT', 'SMALLINT', 'INT', 'BIGINT']
const NUMERIC: Root[] = [...INTEGERS, 'FLOAT', 'DOUBLE', 'DECIMAL']
const STRINGS: Root[] = ['CHAR', 'VARCHAR']
const BINARIES: Root[] = ['BINARY', 'VARBINARY']
/** Paimon's PREDEFINED family among Strata's roots. */
const ATOMIC: Root[] = ['BOOLEAN', ...NUMERIC, ...STRINGS, ...BINARIES, 'DATE', 'TIMESTAMP']

/**
 * Paimon's DataTypeCasts for Strata's type roots: per target root, the source roots it takes
 * implicitly and explicitly (identity casts are implicit for every root). TIME and TIMESTAMP
 * WITH LOCAL TIME ZONE are left out: Strata has no such columns.
 */
export const CAST_RULES: Readonly<Partial<Record<Root, { implicit: readonly Root[]; explicit: readonly Root[] }>>> = {
  CHAR: { implicit: ['CHAR'], explicit: ATOMIC },
  VARCHAR: { implicit: STRINGS, explicit: ATOMIC },
  BOOLEAN: { implicit: ['BOOLEAN'], explicit: [...STRINGS, ...INTEGERS] },
  BINARY: { implicit: ['BINARY'], explicit: [...STRINGS, 'VARBINARY'] },
  VARBINARY: { implicit: BINARIES, explicit: STRINGS },
  DECIMAL: { implicit: NUMERIC, explicit: [...STRINGS, 'BOOLEAN', 'TIMESTAMP'] },
  TINYINT: { implicit: ['TINYINT'], explicit: [...NUMERIC, ...STRINGS, 'BOOLEAN', 'TIMESTAMP'] },
  SMALLINT: { implicit: ['TINYINT', 'SMALLINT'], explicit: [...NUMERIC, ...STRINGS, 'BOOLEAN', 'TIMESTAMP'] },
  INT: { implicit: ['TINYINT', 'SMALLINT', 'INT'], explicit: [...NUMERIC, ...STRINGS, 'BOOLEAN', 'TIMESTAMP'] },
  BIGINT: { implicit: INTEGERS, explicit: [...NUMERIC, ...STRINGS, 'BOOLEAN', 'TIMESTAMP'] },
  FLOAT: { implicit: [...INTEGERS, 'FLOAT', 'DECIMAL'], explicit: [...NUMERIC, ...STRINGS, 'BOOLEAN', 'TIMESTAMP'] },
  DOUBLE: { implicit: NUMERIC, explicit: [...STRINGS, 'BOOLEAN', 'TIMESTAMP'] },
  DATE: { implicit: ['DATE', 'TIMESTAMP'], explicit: ['TIMESTAMP', ...STRINGS] },
  TIMESTAMP: { implicit: ['TIMESTAMP'], explicit: ['DATE', ...STRINGS, ...NUMERIC] },
}

/** Whether two types are the same but for nullability (Paimon's equalsIgnoreNullable). */
export function sameTypeIgnoringNull(a: DataType, b: DataType): boolean {
  return formatDataType({ ...a, nullable: true }) === formatDataType({ ...b, nullable: true })
}

/**
 * How Paimon's SchemaManager judges a change of a column's type from `from` to `to`: 'same'
 * (nullability aside), 'implicit', 'explicit', or null when refused. A change is allowed when
 * DataTypeCasts.supportsCast allows it (explicit casts only with `allowExplicit`) and
 * CastExecutors resolves a cast for the pair (which it does not for BOOLEAN → BOOLEAN and DATE →
 * DATE, so Paimon refuses a no-op change of those). Nested types are only ever 'same'.
 */
export function typeChangeKind(from: DataType, to: DataType, allowExplicit: boolean): 'same' | 'implicit' | 'explicit' | null {
  // a NOT NULL type cannot store a NULL type, unless cast explicitly (DataTypeCasts.supportsCasting)
  if (from.nullable && !to.nullable && !allowExplicit) return null
  // no CastExecutors rule takes BOOLEAN to BOOLEAN or DATE to DATE, so SchemaManager refuses even those
  if (sameTypeIgnoringNull(from, to)) return from.root === 'BOOLEAN' || from.root === 'DATE' ? null : 'same'
  const rules = CAST_RULES[to.root]
  if (!rules) return null
  const kind = rules.implicit.includes(from.root) ? 'implicit' : rules.explicit.includes(from.root) ? 'explicit' : null
  if (kind === null || (kind === 'explicit' && !allowExplicit)) return null
  return resolveCast(from, to) === null ? null : kind
}

/** A representative type of each root, for listing what a type may change to. */
const SAMPLE: Partial<Record<Root, DataType>> = Object.fromEntries(
  ATOMIC.map((r) => [r, { root: r, nullable: true, ...(r === 'VARCHAR' || r === 'VARBINARY' ? { length: MAX_LENGTH } : r === 'CHAR' || r === 'BINARY' ? { length: 1 } : {}) }]),
)

/** What Paimon allows a column of type `from` to become, for messages. */
export function allowedChanges(from: DataType, allowExplicit: boolean): string {
  if (from.root === 'ARRAY' || from.root === 'MAP' || from.root === 'MULTISET' || from.root === 'ROW') return 'no change of a nested type (Strata refuses the changes Paimon makes to nested types and from them to STRING)'
  const name = (r: Root) => (r === 'VARCHAR' ? 'VARCHAR/STRING' : r === 'VARBINARY' ? 'VARBINARY/BYTES' : r)
  const implicit: string[] = []
  const explicit: string[] = []
  for (const r of ATOMIC) {
    const kind = typeChangeKind({ ...from, nullable: true }, SAMPLE[r]!, true)
    if (kind === 'same' || kind === 'implicit') implicit.push(name(r))
    else if (kind === 'explicit') explicit.push(name(r))
  }
  const stringOnly = from.root === 'DATE' || from.root === 'TIMESTAMP' ? ' (to a string: STRING only, nullable, not VARCHAR(n) or CHAR(n), as Paimon has no cast for those)' : ''
  const implicitText = implicit.length > 0 ? `implicitly to ${implicit.join(', ')}` : 'no implicit change'
  if (explicit.length === 0) return `${implicitText}${stringOnly}`
  return allowExplicit
    ? `${implicitText}; explicitly to ${explicit.join(', ')}${stringOnly}`
    : `${implicitText} (explicit casts to ${explicit.join(', ')} are off: option 'disable-explicit-type-casting' is true)`
}

// ---- value semantics -------------------------------------------------------------------

const fail = (v: Value, to: DataType, why: string): never => {
  const shown = typeof v === 'string' ? JSON.stringify(v) : typeof v === 'bigint' ? v.toString() : v instanceof Uint8Array ? `${v.length} bytes` : String(v)
  throw new CastError(`cannot cast ${shown} to ${typeLabel(to)}: ${why}`)
}

/** Java's narrowing of a long to `bits` (byte, short, int). */
function wrap(v: bigint, bits: number): number {
  return Number(BigInt.asIntN(bits, v))
}

/** Java's (long) of a double: truncated, saturating, NaN as 0. */
function doubleToLong(d: number): bigint {
  if (Number.isNaN(d)) return 0n
  if (d >= 9223372036854775807) return 9223372036854775807n
  if (d <= -9223372036854775808) return -9223372036854775808n
  return BigInt(Math.trunc(d))
}

/** Java's (int) of a double: truncated, saturating, NaN as 0. */
function doubleToInt(d: number): number {
  if (Number.isNaN(d)) return 0
  if (d >= 2147483647) return 2147483647
  if (d <= -2147483648) return -2147483648
  // + 0: an int has no negative zero
  return Math.trunc(d) + 0
}

/** Java's (float) of a long: the nearest float, ties to even (not through a double). */
function longToFloat(v: bigint): number {
  const neg = v < 0n
  const abs = neg ? -v : v
  const bits = abs.toString(2).length
  if (bits <= 24) return Number(v)
  const shift = BigInt(bits - 24)
  let m = abs >> shift
  const rem = abs & ((1n << shift) - 1n)
  const half = 1n << (shift - 1n)
  if (rem > half || (rem === half && (m & 1n) === 1n)) m += 1n
  const f = Number(m) * 2 ** Number(shift)
  return neg ? -f : f
}

/** A value of an integer, float or BOOLEAN root as a bigint (integers) or number (floats). */
function asLong(v: Value): bigint {
  return typeof v === 'bigint' ? v : typeof v === 'boolean' ? (v ? 1n : 0n) : BigInt(v as number)
}

function digitCount(unscaled: bigint): number {
  return (unscaled < 0n ? -unscaled : unscaled).toString().length
}

/** Paimon's Decimal.fromBigDecimal: `digits` × 10^-`scale` rounded HALF_UP to `to`'s scale; null when it needs more than the precision. */
function toDecimal(unscaled: bigint, scale: number, to: DataType): bigint | null {
  const s = to.scale ?? 0
  let out: bigint
  if (s >= scale) out = unscaled * 10n ** BigInt(s - scale)
  else {
    const d = 10n ** BigInt(scale - s)
    const neg = unscaled < 0n
    const abs = neg ? -unscaled : unscaled
    let q = abs / d
    if ((abs % d) * 2n >= d) q += 1n
    out = neg ? -q : q
  }
  return digitCount(out) > (to.precision ?? 10) ? null : out
}

/** Java's `new BigDecimal(text)` as unscaled digits and a scale; throws CastError when it does not parse. */
function parseBigDecimal(text: string, to: DataType): { unscaled: bigint; scale: number } {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text)
  if (!m || (m[2] + (m[3] ?? '')).length === 0) return fail(text, to, 'not a decimal number (Java BigDecimal syntax)')
  const frac = m[3] ?? ''
  const digits = BigInt(m[2] + frac)
  return { unscaled: m[1] === '-' ? -digits : digits, scale: frac.length - Number(m[4] ?? 0) }
}

/** Paimon's DecimalUtils.doubleValue: a compact decimal (precision <= 18) divides two doubles. */
function decimalToDouble(unscaled: bigint, from: DataType): number {
  const scale = from.scale ?? 0
  if ((from.precision ?? 10) <= 18) return Number(unscaled) / 10 ** scale
  return Number(`${unscaled}e${-scale}`)
}

/** Java's String.trim: chars up to U+0020 off both ends. */
function javaTrim(s: string): string {
  let a = 0
  let b = s.length
  while (a < b && s.charCodeAt(a) <= 32) a++
  while (b > a && s.charCodeAt(b - 1) <= 32) b--
  return s.slice(a, b)
}

/** Java's Double.parseDouble (FloatingDecimal): trimmed; NaN, Infinity, decimal or hex, an optional f/F/d/D suffix. */
function parseJavaDouble(text: string, to: DataType): number {
  const s = javaTrim(text)
  const m = /^([+-]?)(?:(NaN)|(Infinity)|((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)[fFdD]?|0[xX]([0-9a-fA-F]*)(?:\.([0-9a-fA-F]*))?[pP]([+-]?\d+)[fFdD]?)$/.exec(s)
  if (!m) return fail(text, to, 'not a number (Java Double.parseDouble syntax)')
  const sign = m[1] === '-' ? -1 : 1
  if (m[2]) return NaN
  if (m[3]) return sign * Infinity
  if (m[4] !== undefined) return sign * Number(m[4])
  const hex = (m[5] ?? '') + (m[6] ?? '')
  if (hex.length === 0) return fail(text, to, 'a hexadecimal number without digits')
  return sign * Number(BigInt(`0x${hex}`)) * 2 ** (Number(m[7]) - 4 * (m[6] ?? '').length)
}

/** Paimon's BinaryStringUtils.toLong / toInt: sign, digits, an optional '.' and digits (dropped); overflow refused. */
function parseJavaLong(text: string, to: DataType, bits: 32 | 64): bigint {
  if (text.length === 0) return fail(text, to, 'input is empty')
  let i = 0
  const negative = text[0] === '-'
  if (negative || text[0] === '+') {
    i++
    if (text.length === 1) return fail(text, to, 'input has only a sign')
  }
  let digits = ''
  for (; i < text.length; i++) {
    const c = text[i]
    if (c === '.') {
      if (!/^\d*$/.test(text.slice(i + 1))) return fail(text, to, 'invalid character found')
      break
    }
    if (c < '0' || c > '9') return fail(text, to, 'invalid character found')
    digits += c
  }
  const v = (negative ? -1n : 1n) * BigInt(digits || '0')
  if (BigInt.asIntN(bits, v) !== v) return fail(text, to, 'overflow')
  return v
}

/** Java's Character.isDigit over the whole string, after an optional '-' (StringUtils.isNumeric). */
function isNumeric(s: string): boolean {
  return /^-?\p{Nd}+$/u.test(s)
}

/** Paimon's BinaryStringUtils.toCharacterString: cut to the length in characters, CHAR padded with spaces. */
function toCharacterString(s: string, to: DataType): string {
  const length = to.length ?? (to.root === 'CHAR' ? 1 : MAX_LENGTH)
  const chars = Array.from(s)
  if (chars.length > length) return chars.slice(0, length).join('')
  if (chars.length < length && to.root === 'CHAR') return s + ' '.repeat(length - chars.length)
  return s
}

/** Paimon's BinaryStringUtils.toBinaryString: BINARY cut or padded with zeros to its length, VARBINARY cut. */
function toBinaryString(b: Uint8Array, to: DataType): Uint8Array {
  const length = to.length ?? (to.root === 'BINARY' ? 1 : MAX_LENGTH)
  if (b.length === length) return b
  if (to.root === 'BINARY') {
    const out = new Uint8Array(length)
    out.set(b.subarray(0, length))
    return out
  }
  return b.length <= length ? b : b.slice(0, length)
}

const int4 = (n: number) => String(Math.abs(n) % 10000).padStart(4, '0')
const int2 = (n: number) => String(n % 100).padStart(2, '0')
const MICROS_PER_DAY = 86_400_000_000n
const floorDiv = (a: bigint, b: bigint) => (a >= 0n ? a / b : -((-a + b - 1n) / b))

/** Paimon's DateTimeUtils.formatDate: yyyy-MM-dd. */
function formatDate(days: number): string {
  const { year, month, day } = civilFromDays(days)
  return `${int4(year)}-${int2(month)}-${int2(day)}`
}

/** Paimon's DateTimeUtils.formatTimestamp (UTC): the 9 fraction digits lose trailing zeros down to the precision. */
function formatTimestamp(micros: bigint, precision: number): string {
  const days = floorDiv(micros, MICROS_PER_DAY)
  const microOfDay = Number(micros - days * MICROS_PER_DAY)
  const sec = Math.floor(microOfDay / 1e6)
  let fraction = String((microOfDay % 1e6) * 1000).padStart(9, '0')
  while (fraction.length > precision && fraction.endsWith('0')) fraction = fraction.slice(0, -1)
  const time = `${int2(Math.floor(sec / 3600))}:${int2(Math.floor(sec / 60) % 60)}:${int2(sec % 60)}`
  return `${formatDate(Number(days))} ${time}${fraction.length > 0 ? `.${fraction}` : ''}`
}

/** Paimon's BinaryStringUtils.toDate: a number of days, or yyyy[-m[-d]] (what follows a space ignored). */
function parseDate(text: string, to: DataType): number {
  if (isNumeric(text)) return Number(parseJavaLong(text, to, 32))
  let s = text
  const ws = s.indexOf(' ')
  if (ws > 0) s = s.slice(0, ws)
  const parts = s.split('-')
  if (parts.length > 3) parts.splice(2, parts.length - 2, parts.slice(2).join('-'))
  const nums = parts.map((p) => javaTrim(p))
  if (nums.some((p) => !/^\d+$/.test(p))) return fail(text, to, 'not a date (yyyy-mm-dd)')
  const [y, m = 1, d = 1] = nums.map((p) => {
    const n = Number(p)
    return n > 2147483647 ? fail(text, to, 'a number out of range') : n
  })
  const valid = y >= 0 && y <= 9999 && m >= 1 && m <= 12 && d >= 1 && d <= daysInMonth(y, m)
  if (!valid) return fail(text, to, 'not a valid date')
  return daysFromCivil(y, m, d)
}

/**
 * Paimon's BinaryStringUtils.toTimestamp: a number is epoch seconds, milliseconds or
 * microseconds at precision 0, 3 or 6 (other precisions refuse it); otherwise
 * `yyyy-M-d[ H:m:s[.fraction]]` (DateTimeUtils' formatter, SMART resolution: a day past the
 * month's end within 31 is its last day, 24:00:00 the next midnight), the fraction cut to the
 * precision.
 */
function parseTimestamp(text: string, to: DataType): bigint {
  const precision = to.precision ?? 6
  if (isNumeric(text)) {
    const epoch = parseJavaLong(text, to, 64)
    // milliseconds wrap as Java's long; microseconds as the long Paimon's file would hold
    if (precision === 0) return BigInt.asIntN(64, BigInt.asIntN(64, epoch * 1000n) * 1000n)
    if (precision === 3) return BigInt.asIntN(64, epoch * 1000n)
    if (precision === 6) return epoch
    return fail(text, to, `a number is read as epoch time only at precision 0, 3 or 6, not ${precision}`)
  }
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2})(?: (\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.(\d{0,9}))?)?$/.exec(text)
  if (!m) return fail(text, to, "not a timestamp (expected 'yyyy-MM-dd[ HH:mm:ss[.fraction]]')")
  const [y, mo, d, h = 0, mi = 0, s = 0] = m.slice(1, 7).map((x) => (x === undefined ? 0 : Number(x)))
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 24 || mi > 59 || s > 59) return fail(text, to, 'a field out of range')
  const nanos = Number((m[7] ?? '').padEnd(9, '0'))
  let day = daysFromCivil(y, mo, Math.min(d, daysInMonth(y, mo)))
  let hour = h
  if (h === 24) {
    if (mi !== 0 || s !== 0 || nanos !== 0) return fail(text, to, 'hour 24 is only 24:00:00')
    day += 1
    hour = 0
  }
  const unit = 10 ** (9 - precision)
  const kept = Math.floor(nanos / unit) * unit
  return BigInt(day) * MICROS_PER_DAY + BigInt((hour * 3600 + mi * 60 + s) * 1e6) + BigInt(Math.floor(kept / 1000))
}

/**
 * Paimon's DateTimeUtils.truncate of a timestamp to a lower precision: left as it is when the
 * nano-of-second's decimal digits fit the precision (so 5 µs survives precision 4), else
 * milliseconds cut toward zero (precision <= 3) or the nanos of the millisecond cut.
 */
function truncateTimestamp(micros: bigint, precision: number): bigint {
  const millis = floorDiv(micros, 1000n)
  const nanoOfMilli = Number(micros - millis * 1000n) * 1000
  const nanoOfSecond = Number(micros - floorDiv(micros, 1_000_000n) * 1_000_000n) * 1000
  if (String(nanoOfSecond).length <= precision) return micros
  if (precision <= 3) {
    const p = 10n ** BigInt(3 - precision)
    return (millis / p) * p * 1000n
  }
  const p = 10 ** (9 - precision)
  return millis * 1000n + BigInt(Math.floor(Math.floor(nanoOfMilli / p) * p / 1000))
}

const MICROS_PER_MILLI = 1000n
// one decoder and encoder for every value; a leading EF BB BF decodes to U+FEFF, the string's
// first character, as Java's UTF-8 decoding keeps it (a default TextDecoder drops it)
const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true })
const utf8Encoder = new TextEncoder()

/** The cast Paimon's CastExecutors resolves from `from` to `to` (identity for the same type), or null when it has none. */
export function resolveCast(from: DataType, to: DataType): Cast | null {
  if (sameTypeIgnoringNull(from, to)) return (v) => v
  const f = from.root
  const t = to.root
  const isString = (r: Root) => r === 'CHAR' || r === 'VARCHAR'
  const isBinary = (r: Root) => r === 'BINARY' || r === 'VARBINARY'
  const isInteger = INTEGERS.includes(f)
  const isFloat = f === 'FLOAT' || f === 'DOUBLE'
  if (isString(t)) {
    if (isString(f)) return (v) => toCharacterString(v as string, to)
    if (isBinary(f)) return (v) => utf8Decoder.decode(v as Uint8Array)
    if (f === 'BOOLEAN') return (v) => toCharacterString(v ? 'true' : 'false', to)
    if (isInteger) return (v) => toCharacterString(String(v), to)
    if (isFloat) return (v) => toCharacterString(javaNumberString(v as number, f === 'FLOAT'), to)
    if (f === 'DECIMAL') return (v) => toCharacterString(decimalToPlainString(v as bigint, from.scale ?? 0), to)
    // DATE and TIMESTAMP have a rule for exactly STRING (nullable), VarCharType.STRING_TYPE
    const exactlyString = t === 'VARCHAR' && (to.length ?? MAX_LENGTH) === MAX_LENGTH && to.nullable
    if (!exactlyString) return null
    if (f === 'DATE') return (v) => formatDate(v as number)
    if (f === 'TIMESTAMP') return (v) => formatTimestamp(v as bigint, from.precision ?? 6)
    return null
  }
  if (isBinary(t)) {
    if (isString(f)) return (v) => toBinaryString(utf8Encoder.encode(v as string), to)
    if (isBinary(f)) return (v) => toBinaryString(v as Uint8Array, to)
    return null
  }
  if (t === 'BOOLEAN') {
    if (isInteger) return (v) => asLong(v) !== 0n
    if (isString(f)) {
      return (v) => {
        const s = (v as string).toLowerCase()
        if (['t', 'true', 'y', 'yes', '1'].includes(s)) return true
        if (['f', 'false', 'n', 'no', '0'].includes(s)) return false
        return fail(v, to, 'expected t, true, y, yes, 1, f, false, n, no or 0 (any case)')
      }
    }
    return null
  }
  if (INTEGERS.includes(t) || t === 'FLOAT' || t === 'DOUBLE') return toNumberCast(from, to)
  if (t === 'DECIMAL') {
    if (f === 'DECIMAL') return (v) => toDecimal(v as bigint, from.scale ?? 0, to)
    if (isInteger || f === 'BOOLEAN') return (v) => toDecimal(asLong(v), 0, to)
    if (isFloat) {
      return (v) => {
        const d = v as number
        if (!Number.isFinite(d)) return fail(v, to, 'not a finite number')
        const { unscaled, scale } = parseBigDecimal(javaNumberString(d), to)
        return toDecimal(unscaled, scale, to)
      }
    }
    if (isString(f)) {
      return (v) => {
        const { unscaled, scale } = parseBigDecimal(v as string, to)
        return toDecimal(unscaled, scale, to)
      }
    }
    return null
  }
  if (t === 'DATE') {
    if (f === 'TIMESTAMP') return (v) => Number(floorDiv(v as bigint, MICROS_PER_MILLI) / 86_400_000n)
    if (isString(f)) return (v) => parseDate(v as string, to)
    return null
  }
  if (t === 'TIMESTAMP') {
    if (f === 'TIMESTAMP') {
      const p = to.precision ?? 6
      return (from.precision ?? 6) <= p ? (v) => v : (v) => truncateTimestamp(v as bigint, p)
    }
    if (f === 'DATE') return (v) => BigInt(v as number) * MICROS_PER_DAY
    // NumericPrimitiveToTimestamp has an executor for INT and BIGINT only: epoch seconds
    // (milliseconds wrap as Java's long does; microseconds beyond the long wrap as Paimon's file would hold them)
    if (f === 'INT' || f === 'BIGINT') return (v) => BigInt.asIntN(64, BigInt.asIntN(64, asLong(v) * 1000n) * MICROS_PER_MILLI)
    if (isString(f)) return (v) => parseTimestamp(v as string, to)
    return null
  }
  return null
}

/** Casts to TINYINT, SMALLINT, INT, BIGINT, FLOAT and DOUBLE (Paimon's numeric, decimal, boolean, string and timestamp rules). */
function toNumberCast(from: DataType, to: DataType): Cast | null {
  const f = from.root
  const t = to.root
  // each source as a Java long (integers, booleans, truncated decimals, epoch seconds) or double
  let asJavaLong: ((v: Value) => bigint) | null = null
  let asJavaDouble: ((v: Value) => number) | null = null
  if (INTEGERS.includes(f) || f === 'BOOLEAN') asJavaLong = asLong
  else if (f === 'FLOAT' || f === 'DOUBLE') asJavaDouble = (v) => v as number
  else if (f === 'DECIMAL') {
    const div = 10n ** BigInt(from.scale ?? 0)
    if (t === 'FLOAT' || t === 'DOUBLE') asJavaDouble = (v) => decimalToDouble(v as bigint, from)
    // DecimalUtils.castToIntegral: rounded toward zero, then BigDecimal.longValue's low 64 bits
    else asJavaLong = (v) => BigInt.asIntN(64, (v as bigint) / div)
  } else if (f === 'TIMESTAMP') {
    if (t !== 'INT' && t !== 'BIGINT') return null
    // DateTimeUtils.unixTimestamp: milliseconds / 1000, toward zero
    asJavaLong = (v) => floorDiv(v as bigint, MICROS_PER_MILLI) / 1000n
  } else if (f === 'CHAR' || f === 'VARCHAR') {
    if (t === 'FLOAT') return (v) => Math.fround(parseJavaDouble(v as string, to))
    if (t === 'DOUBLE') return (v) => parseJavaDouble(v as string, to)
    if (t === 'BIGINT') return (v) => parseJavaLong(v as string, to, 64)
    const bits = t === 'TINYINT' ? 8 : t === 'SMALLINT' ? 16 : 32
    return (v) => {
      const n = parseJavaLong(v as string, to, 32)
      return BigInt.asIntN(bits, n) === n ? Number(n) : fail(v, to, 'overflow')
    }
  } else return null
  if (asJavaLong !== null) {
    const g = asJavaLong
    switch (t) {
      case 'TINYINT':
        return (v) => wrap(g(v), 8)
      case 'SMALLINT':
        return (v) => wrap(g(v), 16)
      case 'INT':
        return (v) => wrap(g(v), 32)
      case 'BIGINT':
        return (v) => BigInt.asIntN(64, g(v))
      case 'FLOAT':
        return (v) => longToFloat(g(v))
      default:
        return (v) => Number(g(v))
    }
  }
  const d = asJavaDouble!
  switch (t) {
    case 'TINYINT':
      return (v) => wrap(BigInt(doubleToInt(d(v))), 8)
    case 'SMALLINT':
      return (v) => wrap(BigInt(doubleToInt(d(v))), 16)
    case 'INT':
      return (v) => doubleToInt(d(v))
    case 'BIGINT':
      return (v) => doubleToLong(d(v))
    case 'FLOAT':
      return (v) => Math.fround(d(v))
    default:
      return (v) => d(v)
  }
}

/** `resolveCast`, or an error naming the field and both types when Paimon has no cast for them. */
export function castOrFail(from: DataType, to: DataType, where: string): Cast {
  const cast = resolveCast(from, to)
  if (cast === null) {
    throw new StrataInputError(`${where}: there is no cast from ${typeLabel(from)} to ${typeLabel(to)} (Paimon's CastExecutors has none either); expected a type change Paimon allows: from ${typeLabel(from)} ${allowedChanges(from, true)}`)
  }
  return cast
}
