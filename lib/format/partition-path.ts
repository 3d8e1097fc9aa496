// Partition and bucket directory names (docs/format.md "Directory and file names"). Java readers recompute a data
// file's directory from the partition BinaryRow (DataFilePathFactory.toPath), so these strings
// must match Java's exactly. Strata implements `partition.legacy-name=true` (Paimon's default,
// InternalRowPartitionComputer): the value string is Java's `toString()` of the internal value,
// which for DATE is the day count, not an ISO date.

import { StrataInputError } from '../errors.ts'
import type { DataField, DataType, Value } from '../types.ts'

/** `partition.default-name` default: stands for a null or whitespace-only partition value. */
export const DEFAULT_PARTITION_NAME = '__DEFAULT_PARTITION__'

/** FileStorePathFactory: bucket -2 (postpone bucket mode) is written as `bucket-postpone`. */
export const POSTPONE_BUCKET = -2

// PartitionPathUtils.CHAR_TO_ESCAPE: control characters and characters that are special in
// paths, URIs or Hive partition specs. Everything else, space and non-ASCII included, is kept.
const ESCAPED = new Uint8Array(128)
for (let c = 0; c < 0x20; c++) ESCAPED[c] = 1
for (const ch of '"#%\'*/:=?\\\u007f{}[]^') ESCAPED[ch.charCodeAt(0)] = 1

/** PartitionPathUtils.escapePathName: each escaped character becomes `%XX` (upper-case hex). */
export function escapePathName(s: string): string {
  if (s.length === 0) {
    throw new StrataInputError('partition path: a partition key or value must not be empty')
  }
  let out: string | null = null
  let from = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 128 && ESCAPED[c] === 1) {
      out = (out ?? '') + s.slice(from, i) + '%' + (c < 16 ? '0' : '') + c.toString(16).toUpperCase()
      from = i + 1
    }
  }
  return out === null ? s : out + s.slice(from)
}

/** Java `Character.isWhitespace` (space separators other than no-break spaces, and controls). */
function isJavaWhitespace(c: number): boolean {
  if (c <= 0x20) return c === 0x20 || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)
  if (c < 0x1680) return false
  return (
    c === 0x1680 ||
    (c >= 0x2000 && c <= 0x2006) ||
    (c >= 0x2008 && c <= 0x200a) ||
    c === 0x2028 ||
    c === 0x2029 ||
    c === 0x205f ||
    c === 0x3000
  )
}

/** Paimon StringUtils.isNullOrWhitespaceOnly for a non-null string. */
function isWhitespaceOnly(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (!isJavaWhitespace(s.charCodeAt(i))) return false
  return true
}

/** Java `BigDecimal.toPlainString()` of unscaled value `unscaled` at `scale` (Decimal.toString). */
export function decimalToPlainString(unscaled: bigint, scale: number): string {
  if (scale <= 0) return (unscaled * 10n ** BigInt(-scale)).toString()
  const negative = unscaled < 0n
  const digits = (negative ? -unscaled : unscaled).toString().padStart(scale + 1, '0')
  const cut = digits.length - scale
  return `${negative ? '-' : ''}${digits.slice(0, cut)}.${digits.slice(cut)}`
}

/**
 * Days since 1970-01-01 of a proleptic Gregorian date, for any year (integer arithmetic on
 * 400-year eras, the inverse of civilFromDays; JavaScript's Date ends at year 275760, well
 * inside the 32-bit day count a DATE holds).
 */
export function daysFromCivil(y: number, m: number, d: number): number {
  const year = m <= 2 ? y - 1 : y
  const era = Math.floor(year / 400)
  const yoe = year - era * 400
  const doy = Math.floor((153 * ((m + 9) % 12) + 2) / 5) + d - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

/** Days in month `m` (1-12) of year `y`, proleptic Gregorian. */
export function daysInMonth(y: number, m: number): number {
  if (m !== 2) return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31
  return y % 4 === 0 && (y % 100 !== 0 || y % 400 === 0) ? 29 : 28
}

/** Proleptic Gregorian civil date of a day count since 1970-01-01 (Java LocalDate.ofEpochDay). */
export function civilFromDays(days: number): { year: number; month: number; day: number } {
  // Howard Hinnant's days-to-civil algorithm, on 400-year eras.
  const z = days + 719468
  const era = Math.floor(z / 146097)
  const doe = z - era * 146097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0)
  return { year, month, day }
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : `${n}`
}

/** Java `LocalDate.toString()`: 4-digit year (sign for negative, `+` above 9999). */
function localDateString(days: number): string {
  const { year, month, day } = civilFromDays(days)
  let y: string
  if (Math.abs(year) < 1000) {
    y = (year < 0 ? '-' : '') + String(Math.abs(year)).padStart(4, '0')
  } else {
    y = (year > 9999 ? '+' : '') + String(year)
  }
  return `${y}-${pad2(month)}-${pad2(day)}`
}

const MICROS_PER_DAY = 86_400_000_000n

/**
 * Java `LocalDateTime.toString()` of a wall-clock timestamp in microseconds: `HH:mm`, then
 * `:ss` unless seconds and fraction are zero, then the fraction in groups of 3 digits.
 */
export function localDateTimeString(micros: bigint): string {
  let days = micros / MICROS_PER_DAY
  let rest = micros % MICROS_PER_DAY
  if (rest < 0n) {
    days -= 1n
    rest += MICROS_PER_DAY
  }
  const microOfDay = Number(rest)
  const secOfDay = Math.floor(microOfDay / 1_000_000)
  const micro = microOfDay - secOfDay * 1_000_000
  const hour = Math.floor(secOfDay / 3600)
  const minute = Math.floor(secOfDay / 60) % 60
  const second = secOfDay % 60
  let time = `${pad2(hour)}:${pad2(minute)}`
  if (second > 0 || micro > 0) {
    time += `:${pad2(second)}`
    if (micro > 0) {
      time += micro % 1000 === 0 ? `.${String(micro / 1000).padStart(3, '0')}` : `.${String(micro).padStart(6, '0')}`
    }
  }
  return `${localDateString(Number(days))}T${time}`
}

/**
 * Formats `digits` (significant digits, no trailing zeros) × 10^exp like Java's
 * Double/Float.toString: plain in [10^-3, 10^7), else `d.dddE<exp>`; at least one fraction digit.
 */
function javaFloatingString(negative: boolean, digits: string, exp: number): string {
  const sign = negative ? '-' : ''
  if (exp >= -3 && exp < 7) {
    if (exp < 0) return `${sign}0.${'0'.repeat(-exp - 1)}${digits}`
    const intPart = digits.length > exp + 1 ? digits.slice(0, exp + 1) : digits.padEnd(exp + 1, '0')
    const frac = digits.length > exp + 1 ? digits.slice(exp + 1) : '0'
    return `${sign}${intPart}.${frac}`
  }
  return `${sign}${digits[0]}.${digits.length > 1 ? digits.slice(1) : '0'}E${exp}`
}

function splitExponential(s: string): { digits: string; exp: number } {
  const e = s.indexOf('e')
  const mantissa = s.slice(0, e).replace('-', '').replace('.', '')
  return { digits: mantissa.replace(/0+$/, '') || '0', exp: Number(s.slice(e + 1)) }
}

/**
 * Java's Double.toString (JDK 19+, shortest digits that round-trip; at least two significant
 * digits are considered, so 5e-324 prints as 4.9E-324). With `float32`, Float.toString.
 */
export function javaNumberString(x: number, float32 = false): string {
  if (Number.isNaN(x)) return 'NaN'
  if (x === Infinity) return 'Infinity'
  if (x === -Infinity) return '-Infinity'
  if (x === 0) return Object.is(x, -0) ? '-0.0' : '0.0'
  const abs = Math.abs(x)
  let shortest: string
  if (float32) {
    let p = 0
    while (p < 8 && Math.fround(Number(abs.toExponential(p))) !== abs) p++
    shortest = abs.toExponential(p)
  } else {
    shortest = abs.toExponential()
  }
  let { digits, exp } = splitExponential(shortest)
  if (digits.length === 1) {
    // Of the decimals that round to x, Java picks the one closest to x among those of length 2.
    ;({ digits, exp } = splitExponential(abs.toExponential(1)))
  }
  return javaFloatingString(x < 0, digits, exp)
}

function describe(v: Value): string {
  if (typeof v === 'bigint') return `${v}n`
  if (typeof v === 'string') return JSON.stringify(v)
  if (v instanceof Uint8Array) return `Uint8Array(${v.length})`
  return String(v)
}

function expect(ok: boolean, type: DataType, v: Value, expected: string): void {
  if (!ok) {
    throw new StrataInputError(
      `partition value ${describe(v)} for a ${type.root} partition field: expected ${expected}`,
    )
  }
}

/**
 * The value string of one partition field as it appears in the path (before escaping):
 * Java `toString()` of the internal value, or `defaultName` for null or whitespace-only.
 */
export function partitionValueString(
  type: DataType,
  v: Value,
  defaultName: string = DEFAULT_PARTITION_NAME,
): string {
  if (v === null) return defaultName
  let s: string
  switch (type.root) {
    case 'BOOLEAN':
      expect(typeof v === 'boolean', type, v, 'a boolean')
      s = v ? 'true' : 'false'
      break
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'DATE':
      expect(typeof v === 'number' && Number.isInteger(v), type, v, 'an integer number')
      s = String(v)
      break
    case 'BIGINT':
      expect(typeof v === 'bigint', type, v, 'a bigint')
      s = String(v)
      break
    case 'FLOAT':
      expect(typeof v === 'number', type, v, 'a number')
      s = javaNumberString(Math.fround(v as number), true)
      break
    case 'DOUBLE':
      expect(typeof v === 'number', type, v, 'a number')
      s = javaNumberString(v as number)
      break
    case 'DECIMAL':
      expect(typeof v === 'bigint', type, v, 'a bigint unscaled value')
      s = decimalToPlainString(v as bigint, type.scale ?? 0)
      break
    case 'TIMESTAMP': {
      expect(typeof v === 'bigint', type, v, 'a bigint of microseconds')
      // A compact TIMESTAMP (p <= 3) keeps only milliseconds in the BinaryRow the path is
      // computed from.
      const micros = v as bigint
      const p = type.precision ?? 6
      const stored = p <= 3 ? (micros / 1000n - (micros % 1000n < 0n ? 1n : 0n)) * 1000n : micros
      s = localDateTimeString(stored)
      break
    }
    case 'CHAR':
    case 'VARCHAR':
      expect(typeof v === 'string', type, v, 'a string')
      s = v as string
      break
    default:
      // Java would print byte[].toString() (an identity hash) for BINARY: not reproducible.
      throw new StrataInputError(
        `partition field of type ${type.root} is not supported: Paimon's legacy partition name has no stable string for it`,
      )
  }
  return s.length === 0 || isWhitespaceOnly(s) ? defaultName : s
}

/** `k1=v1/k2=v2/` for the partition fields (in partition-key order); `''` if unpartitioned. */
export function partitionPath(
  fields: DataField[],
  values: Value[],
  defaultName: string = DEFAULT_PARTITION_NAME,
): string {
  if (values.length !== fields.length) {
    throw new StrataInputError(
      `partition path: got ${values.length} values for partition fields [${fields.map((f) => f.name).join(', ')}]`,
    )
  }
  let path = ''
  for (let i = 0; i < fields.length; i++) {
    const value = partitionValueString(fields[i].type, values[i], defaultName)
    path += `${escapePathName(fields[i].name)}=${escapePathName(value)}/`
  }
  return path
}

/** Directory of one bucket relative to the table root: `k=v/bucket-3`, or `bucket-3`. */
export function bucketPath(
  fields: DataField[],
  values: Value[],
  bucket: number,
  defaultName: string = DEFAULT_PARTITION_NAME,
): string {
  if (!Number.isInteger(bucket) || (bucket < 0 && bucket !== POSTPONE_BUCKET)) {
    throw new StrataInputError(`bucket path: bucket ${bucket} is not a non-negative integer`)
  }
  const name = bucket === POSTPONE_BUCKET ? 'bucket-postpone' : `bucket-${bucket}`
  return partitionPath(fields, values, defaultName) + name
}
