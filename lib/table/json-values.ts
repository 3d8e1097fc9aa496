// JSON in and out of table rows. Input is validated against the field's type with an error
// naming the field, the value and what was expected, and a value is stored exactly or
// refused: nothing is rounded, clamped or replaced on the way in (docs/operations.md,
// "Values in JSON lines"). Output is exact (bigints, decimals and timestamps print without
// going through a float), and every stored value reads back in through its own text.

import { StrataInputError } from '../errors.ts'
import { type DataField, type DataType, type MapValue, type Row, type RowKind, RowKind as RK, type Value } from '../types.ts'
import { civilFromDays, daysFromCivil, daysInMonth } from '../format/partition-path.ts'
import { MAX_LENGTH, typeLabel } from '../format/data-type.ts'
import { JsonNumber, parseJsonLine } from './json-line.ts'
import type { SchemaView } from './schema.ts'

const INT_RANGE: Record<string, [bigint, bigint]> = {
  TINYINT: [-128n, 127n],
  SMALLINT: [-32768n, 32767n],
  INT: [-2147483648n, 2147483647n],
}
const LONG_MIN = -(2n ** 63n)
const LONG_MAX = 2n ** 63n - 1n
/** digits of the largest 64-bit integer: no integer column holds a longer one */
const LONG_DIGITS = 19
const MICROS_PER_DAY = 86_400_000_000n
const DESCRIBE_CHARS = 60

/** A value as an error message shows it: short, whatever its size or depth. */
function describe(v: unknown): string {
  const s = preview(v, DESCRIBE_CHARS + 1)
  return s.length > DESCRIBE_CHARS ? s.slice(0, DESCRIBE_CHARS - 3) + '...' : s
}

/** JSON-like text of `v`, stopping once `budget` characters are produced (so never deep). */
function preview(v: unknown, budget: number): string {
  if (v instanceof JsonNumber) return v.text.slice(0, budget)
  if (typeof v === 'string') return JSON.stringify(v.slice(0, budget))
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v)
  if (v === null) return 'null'
  if (typeof v !== 'object') return String(v)
  const array = Array.isArray(v)
  let out = array ? '[' : '{'
  for (const k of array ? v.keys() : Object.keys(v)) {
    if (out.length >= budget) break
    if (out.length > 1) out += ','
    if (!array) out += JSON.stringify(String(k).slice(0, budget)) + ':'
    out += preview((v as Record<string, unknown>)[k as string], budget - out.length)
  }
  return out.length >= budget ? out : out + (array ? ']' : '}')
}

/**
 * A decimal number split exactly: (negative ? -1 : 1) × digits × 10^exp, `digits` without
 * leading or trailing zeros ('' for zero). The exponent is a plain number — huge or even
 * infinite for `1e99999…` — so no power of ten is ever computed from it here.
 */
interface ExactNumber {
  negative: boolean
  digits: string
  exp: number
}

const DECIMAL_TEXT = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/

function exactNumber(text: string): ExactNumber | null {
  const m = DECIMAL_TEXT.exec(text)
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null
  const frac = m[3] ?? ''
  const all = m[2] + frac
  let first = 0
  while (first < all.length && all.charCodeAt(first) === 48) first++
  let end = all.length
  while (end > first && all.charCodeAt(end - 1) === 48) end--
  if (first === end) return { negative: false, digits: '', exp: 0 }
  const exp = (m[4] ? Number(m[4]) : 0) - frac.length + (all.length - end)
  return { negative: m[1] === '-', digits: all.slice(first, end), exp }
}

/** Why a number does not fit `scale` fraction digits and `maxDigits` digits in all, or its scaled value. */
function scaled(n: ExactNumber, scale: number, maxDigits: number): bigint | 'fraction' | 'size' {
  if (n.digits === '') return 0n
  // the last digit sits at 10^exp: below 10^-scale it would need rounding
  const shift = n.exp + scale
  if (shift < 0) return 'fraction'
  // both bounds hold, so digits.length <= maxDigits and shift <= maxDigits: small powers only
  if (n.digits.length + shift > maxDigits) return 'size'
  const u = BigInt(n.digits) * 10n ** BigInt(shift)
  return n.negative ? -u : u
}

/** The exact integer a JSON number denotes, or null (a fraction, or more digits than any integer column). */
function exactInteger(n: ExactNumber | null): bigint | null {
  if (!n) return null
  const v = scaled(n, 0, LONG_DIGITS)
  return typeof v === 'bigint' ? v : null
}

/** The text and nearest double of a JSON number (JsonNumber from parseJsonLine, number from JSON.parse). */
function numberText(v: unknown): string | null {
  if (v instanceof JsonNumber) return v.text
  if (typeof v === 'number') return Number.isFinite(v) ? String(v) : null
  return null
}

const TIMESTAMP_RE = /^(-?\d{4,7})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?$/

/**
 * 'YYYY-MM-DD[ T]HH:MM[:SS[.fffffffff]]' → micros since epoch; null if not a valid
 * timestamp or if it has nonzero digits beyond `precision` (they would be cut off).
 */
function parseTimestamp(text: string, precision: number): bigint | null {
  const m = TIMESTAMP_RE.exec(text.trim())
  if (!m) return null
  const [, y, mo, d, h = '0', mi = '0', sec = '0', frac = ''] = m
  if (+h > 23 || +mi > 59 || +sec > 59) return null
  if (/[1-9]/.test(frac.slice(precision))) return null
  const day = parseDate(`${y}-${mo}-${d}`)
  if (day === null) return null
  return BigInt(day) * MICROS_PER_DAY + BigInt((+h * 3600 + +mi * 60 + +sec) * 1_000_000) + BigInt(frac.padEnd(6, '0').slice(0, 6))
}

// Input batches repeat a few dates many times; remember them (bounded, and only texts
// short enough to be a date, so hostile input cannot fill it with large strings). Years
// have at most 7 digits: the 32-bit day count of a DATE ends in year 5881580.
const dateCache = new Map<string, number | null>()
const DATE_CACHE_ENTRIES = 10_000
const DATE_CACHE_TEXT = 16

function parseDate(text: string): number | null {
  const hit = dateCache.get(text)
  if (hit !== undefined) return hit
  const m = /^(-?\d{4,7})-(\d{2})-(\d{2})$/.exec(text.trim())
  let day: number | null = null
  if (m && +m[2] >= 1 && +m[2] <= 12 && +m[3] >= 1 && +m[3] <= daysInMonth(+m[1], +m[2])) day = daysFromCivil(+m[1], +m[2], +m[3])
  if (text.length <= DATE_CACHE_TEXT) {
    if (dateCache.size >= DATE_CACHE_ENTRIES) dateCache.clear()
    dateCache.set(text, day)
  }
  return day
}

// one flat character class: a repeated group would make the regex engine recurse per group
const BASE64_TEXT = /^[A-Za-z0-9+/]*={0,2}$/

/** The bytes of canonical base64 (padded, unused bits zero: what the reader prints), or null. */
function base64Bytes(text: string): Uint8Array | null {
  if (text.length % 4 !== 0 || !BASE64_TEXT.test(text)) return null
  const bytes = Buffer.from(text, 'base64')
  // a last character with nonzero unused bits decodes the same as its canonical form
  if (bytes.toString('base64') !== text) return null
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.length)
}

/** Code points of a string, stopping once past `limit` (a string's length bounds them). */
function exceedsCodePoints(s: string, limit: number): boolean {
  if (s.length <= limit) return false
  if (s.length > 2 * limit) return true
  let n = 0
  for (const _ of s) if (++n > limit) return true
  return false
}

/** String.prototype.isWellFormed (Node 20 has it; the TypeScript lib in use does not declare it). */
function isWellFormed(s: string): boolean {
  return (s as string & { isWellFormed(): boolean }).isWellFormed()
}

// a plain function, not a closure per call: this runs once per input value
function badValue(t: DataType, v: unknown, where: string, what: string, path: string): StrataInputError {
  return new StrataInputError(`${where}: field ${path} (${typeLabel(t)}) expected ${what}, got ${describe(v)}`)
}

/**
 * Converts one JSON value to the engine's Value for `field`, or throws naming the field (and,
 * inside a nested value, the path to the bad part: `field 'tags'[3].name`). `v` is what
 * parseJsonLine gives (numbers as JsonNumber, exact) or what JSON.parse gives (numbers as
 * doubles: digits beyond a double's are already gone, so BIGINT asks for a string).
 */
export function valueFromJson(field: DataField, v: unknown, where: string): Value {
  return valueFromJsonAt(field.type, v, where, `'${field.name}'`)
}

function valueFromJsonAt(t: DataType, v: unknown, where: string, path: string): Value {
  if (v === null || v === undefined) {
    if (!t.nullable) throw new StrataInputError(`${where}: field ${path} is NOT NULL but got ${v === null ? 'null' : 'no value'}`)
    return null
  }
  const bad = (_f: unknown, x: unknown, w: string, what: string): StrataInputError => badValue(t, x, w, what, path)
  const field = null
  switch (t.root) {
    case 'BOOLEAN':
      if (typeof v !== 'boolean') throw bad(field, v, where, 'true or false')
      return v
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT': {
      const [lo, hi] = INT_RANGE[t.root]
      const text = numberText(v)
      const i = text === null ? null : exactInteger(exactNumber(text))
      if (i === null || i < lo || i > hi) throw bad(field, v, where, `an integer in [${lo}, ${hi}]`)
      return Number(i)
    }
    case 'BIGINT': {
      let b: bigint | null
      if (typeof v === 'number') {
        if (!Number.isSafeInteger(v)) throw bad(field, v, where, 'an integer (write integers beyond 2^53 as a string of digits)')
        b = BigInt(v)
      } else if (v instanceof JsonNumber) {
        const n = exactNumber(v.text)
        if (n && n.digits !== '' && n.exp < 0) throw bad(field, v, where, 'an integer')
        b = exactInteger(n)
      } else if (typeof v === 'string' && /^-?\d+$/.test(v)) b = exactInteger(exactNumber(v))
      else throw bad(field, v, where, 'an integer')
      if (b === null || b < LONG_MIN || b > LONG_MAX) throw bad(field, v, where, 'an integer in the 64-bit range')
      return b
    }
    case 'FLOAT':
    case 'DOUBLE': {
      // the non-finite values are written as strings (JSON has no literal for them)
      if (v === 'NaN') return NaN
      if (v === 'Infinity') return Infinity
      if (v === '-Infinity') return -Infinity
      const x = v instanceof JsonNumber ? v.value : typeof v === 'number' ? v : null
      if (x === null) throw bad(field, v, where, 'a number')
      // rounded to the nearest FLOAT or DOUBLE, as any binary float is; but a number beyond
      // the type's range would become Infinity, which is a different value, not a rounding
      const stored = t.root === 'FLOAT' ? Math.fround(x) : x
      if (!Number.isFinite(stored)) {
        throw bad(field, v, where, `a finite number within ${t.root} range (±${t.root === 'FLOAT' ? '3.4028235e38' : '1.7976931348623157e308'}; write "Infinity", "-Infinity" or "NaN" as strings)`)
      }
      return stored
    }
    case 'DECIMAL': {
      const p = t.precision!
      const s = t.scale!
      const text = typeof v === 'string' ? v.trim() : numberText(v)
      const n = text === null ? null : exactNumber(text)
      const d = n === null ? 'size' : scaled(n, s, p)
      if (d === 'fraction') throw bad(field, v, where, `a decimal number with at most ${s} fraction digits (DECIMAL(${p}, ${s}) does not round)`)
      if (d === 'size') throw bad(field, v, where, `a decimal number with at most ${p - s} integer digits`)
      return d
    }
    case 'CHAR':
    case 'VARCHAR': {
      if (typeof v !== 'string') throw bad(field, v, where, 'a string')
      // UTF-8 has no encoding for half a surrogate pair: it would be stored as U+FFFD
      if (!isWellFormed(v)) throw bad(field, v, where, 'a string of whole Unicode characters (it holds an unpaired surrogate)')
      if (t.length! < MAX_LENGTH && exceedsCodePoints(v, t.length!)) throw bad(field, v, where, `a string of at most ${t.length} characters`)
      return v
    }
    case 'BINARY':
    case 'VARBINARY': {
      const bytes = typeof v === 'string' ? base64Bytes(v) : null
      if (bytes === null) throw bad(field, v, where, "standard base64 with '=' padding (as the reader prints bytes)")
      if (t.length! < MAX_LENGTH && bytes.length > t.length!) throw bad(field, v, where, `at most ${t.length} bytes`)
      return bytes
    }
    case 'DATE': {
      // stored as a 32-bit day count since 1970-01-01
      const text = numberText(v)
      const d = text !== null ? exactInteger(exactNumber(text)) : typeof v === 'string' ? parseDate(v) : null
      if (d === null || d < -2147483648 || d > 2147483647) {
        throw bad(field, v, where, "a date 'YYYY-MM-DD' or an integer day count in the 32-bit range")
      }
      return Number(d)
    }
    case 'TIMESTAMP': {
      // stored as 64-bit microseconds since the epoch, with `precision` fraction digits
      const p = t.precision!
      const text = numberText(v)
      let ts: bigint | null = null
      if (text !== null) {
        const ms = exactInteger(exactNumber(text))
        if (ms !== null && (ms * 1000n) % 10n ** BigInt(6 - p) === 0n) ts = ms * 1000n
      } else if (typeof v === 'string') ts = parseTimestamp(v, p)
      if (ts === null || ts < LONG_MIN || ts > LONG_MAX) {
        const fraction = p > 0 ? `[.${'f'.repeat(p)}]` : ''
        const multiple = p < 3 ? ` (a multiple of ${10 ** (3 - p)})` : ''
        throw bad(field, v, where, `a timestamp 'YYYY-MM-DD HH:MM:SS${fraction}' or integer epoch milliseconds${multiple} within the 64-bit microsecond range`)
      }
      return ts
    }
    case 'ARRAY':
    case 'MAP':
    case 'MULTISET':
    case 'ROW':
      return nestedFromJson(t, v, where, path)
  }
}

/**
 * A nested value from JSON (docs/operations.md "Values in JSON lines"): an ARRAY from an array;
 * a ROW from an object of its fields (a field left out is null); a MAP from an object when its
 * keys are strings, or from an array of [key, value] pairs; a MULTISET from an array of its
 * elements, each occurrence counted once. Map keys and multiset elements are never null and
 * a map key never repeats.
 */
function nestedFromJson(t: DataType, v: unknown, where: string, path: string): Value {
  const bad = (what: string): StrataInputError => badValue(t, v, where, what, path)
  switch (t.root) {
    case 'ARRAY': {
      if (!Array.isArray(v)) throw bad('an array')
      return v.map((x, i) => valueFromJsonAt(t.element!, x, where, `${path}[${i}]`))
    }
    case 'ROW': {
      if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof JsonNumber) throw bad(`an object with the fields ${t.fields!.map((f) => f.name).join(', ')}`)
      const o = v as Record<string, unknown>
      for (const k of Object.keys(o)) {
        if (!t.fields!.some((f) => f.name === k)) throw new StrataInputError(`${where}: field ${path} (${typeLabel(t)}) has no field '${k}' (fields: ${t.fields!.map((f) => f.name).join(', ')})`)
      }
      return t.fields!.map((f) => valueFromJsonAt(f.type, Object.hasOwn(o, f.name) ? o[f.name] : undefined, where, `${path}.${f.name}`))
    }
    case 'MAP': {
      const keys: Value[] = []
      const values: Value[] = []
      const seen = new Set<string>()
      const add = (k: unknown, x: unknown, at: string): void => {
        if (k === null || k === undefined) throw new StrataInputError(`${where}: field ${at} is a key of ${typeLabel(t)}, which may not be null`)
        const key = valueFromJsonAt({ ...t.key!, nullable: false }, k, where, `${at} (key)`)
        const id = valueToJson(t.key!, key)
        if (seen.has(id)) throw new StrataInputError(`${where}: field ${at}: key ${describe(k)} appears twice in ${typeLabel(t)}; expected each key once`)
        seen.add(id)
        keys.push(key)
        values.push(valueFromJsonAt(t.value!, x, where, at))
      }
      if (Array.isArray(v)) {
        v.forEach((pair, i) => {
          if (!Array.isArray(pair) || pair.length !== 2) throw badValue(t, pair, where, 'a [key, value] pair', `${path}[${i}]`)
          add(pair[0], pair[1], `${path}[${i}]`)
        })
      } else if (typeof v === 'object' && v !== null && !(v instanceof JsonNumber) && isStringKeyed(t)) {
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) add(k, x, `${path}[${JSON.stringify(k)}]`)
      } else throw bad(isStringKeyed(t) ? 'an object or an array of [key, value] pairs' : 'an array of [key, value] pairs')
      return { keys, values }
    }
    default: {
      // MULTISET: an array of elements, counted
      if (!Array.isArray(v)) throw bad('an array of elements')
      const keys: Value[] = []
      const counts: number[] = []
      const index = new Map<string, number>()
      v.forEach((x, i) => {
        if (x === null || x === undefined) throw new StrataInputError(`${where}: field ${path}[${i}] is an element of ${typeLabel(t)}, which may not be null`)
        const e = valueFromJsonAt({ ...t.element!, nullable: false }, x, where, `${path}[${i}]`)
        const id = valueToJson(t.element!, e)
        const at = index.get(id)
        if (at === undefined) {
          index.set(id, keys.length)
          keys.push(e)
          counts.push(1)
        } else counts[at]++
      })
      return { keys, values: counts }
    }
  }
}

/** Whether a MAP's keys are strings, so that it is written as a JSON object (and a record's as an object). */
export function isStringKeyed(t: DataType): boolean {
  return t.key!.root === 'VARCHAR' || t.key!.root === 'CHAR'
}

const KIND_BY_TEXT: Record<string, RowKind> = { '+I': RK.INSERT, '-U': RK.UPDATE_BEFORE, '+U': RK.UPDATE_AFTER, '-D': RK.DELETE }

/** One input record: `{col: value, ..., "_kind": "+I"}` → row kind and full row. */
export function recordFromJson(view: SchemaView, obj: unknown, where: string): { kind: RowKind; row: Row } {
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj)) {
    throw new StrataInputError(`${where}: expected a JSON object with the table's columns, got ${describe(obj)}`)
  }
  const rec = obj as Record<string, unknown>
  let kind: RowKind = RK.INSERT
  for (const key in rec) {
    if (key === '_kind') {
      // own keys of strings only: an object value would be coerced (a TypeError for
      // {"toString": false}) and "constructor" would find Object.prototype's
      const text = rec[key]
      const k = typeof text === 'string' && Object.hasOwn(KIND_BY_TEXT, text) ? KIND_BY_TEXT[text] : undefined
      if (k === undefined) throw new StrataInputError(`${where}: field '_kind' expected one of "+I", "-U", "+U", "-D", got ${describe(rec[key])}`)
      kind = k
    } else if (!view.fieldIndex.has(key)) {
      throw new StrataInputError(`${where}: unknown column '${key}' (columns: ${view.fields.map((f) => f.name).join(', ')})`)
    }
  }
  const fields = view.fields
  const row: Row = new Array(fields.length)
  for (let i = 0; i < fields.length; i++) {
    // own keys only: an absent column named `toString` must not find Object.prototype's
    const name = fields[i].name
    const v = Object.hasOwn(rec, name) ? rec[name] : undefined
    try {
      row[i] = valueFromJson(fields[i], v, where)
    } catch (e) {
      if (e instanceof StrataInputError) throw e
      // no value should get here (the fuzz tests look for one); if one does, it is still
      // that field's input error, not a crash of the whole write
      throw new StrataInputError(`${where}: field '${name}' (${typeLabel(fields[i].type)}) could not be read (${(e as Error)?.name}: ${(e as Error)?.message}), got ${describe(v)}`)
    }
  }
  return { kind, row }
}

/**
 * One input line → row kind and full row, through the strict parser (parseJsonLine): a key
 * given twice is refused and number literals keep every digit. Throws a StrataInputError
 * starting with `where` for anything else than a record of the table.
 */
export function recordFromJsonLine(view: SchemaView, line: string, where: string): { kind: RowKind; row: Row } {
  return recordFromJson(view, parseJsonLine(line, where), where)
}

function pad(n: number | bigint, w: number): string {
  return String(n).padStart(w, '0')
}

export function formatDate(days: number): string {
  // integer calendar arithmetic: a Date would print NaN past year 275760
  const { year: y, month, day } = civilFromDays(days)
  return `${y < 0 ? '-' + pad(-y, 4) : pad(y, 4)}-${pad(month, 2)}-${pad(day, 2)}`
}

export function formatTimestamp(micros: bigint, precision: number): string {
  const dayMicros = ((micros % MICROS_PER_DAY) + MICROS_PER_DAY) % MICROS_PER_DAY
  const days = Number((micros - dayMicros) / MICROS_PER_DAY)
  const secs = Number(dayMicros / 1_000_000n)
  const frac = dayMicros % 1_000_000n
  const base = `${formatDate(days)} ${pad(Math.floor(secs / 3600), 2)}:${pad(Math.floor(secs / 60) % 60, 2)}:${pad(secs % 60, 2)}`
  return precision > 0 ? `${base}.${pad(frac, 6).slice(0, precision)}` : base
}

export function formatDecimal(unscaled: bigint, scale: number): string {
  const neg = unscaled < 0n
  const digits = (neg ? -unscaled : unscaled).toString().padStart(scale + 1, '0')
  const text = scale > 0 ? `${digits.slice(0, -scale)}.${digits.slice(-scale)}` : digits
  return neg ? `-${text}` : text
}

/** JSON text of one value (exact: bigints and decimals are printed digit for digit). */
export function valueToJson(t: DataType, v: Value): string {
  if (v === null) return 'null'
  switch (t.root) {
    case 'BIGINT':
      return (v as bigint).toString()
    case 'DECIMAL':
      return formatDecimal(v as bigint, t.scale!)
    case 'FLOAT':
    case 'DOUBLE':
      // JSON.stringify(-0) is '0': the sign is part of the value
      return Number.isFinite(v as number) ? (Object.is(v, -0) ? '-0' : JSON.stringify(v)) : JSON.stringify(String(v))
    case 'BINARY':
    case 'VARBINARY':
      return JSON.stringify(Buffer.from(v as Uint8Array).toString('base64'))
    case 'DATE':
      return JSON.stringify(formatDate(v as number))
    case 'TIMESTAMP':
      return JSON.stringify(formatTimestamp(v as bigint, t.precision!))
    case 'ARRAY':
      return `[${(v as Value[]).map((x) => valueToJson(t.element!, x)).join(',')}]`
    case 'ROW':
      return `{${t.fields!.map((f, i) => `${JSON.stringify(f.name)}:${valueToJson(f.type, (v as Value[])[i])}`).join(',')}}`
    case 'MAP': {
      const m = v as MapValue
      if (isStringKeyed(t)) return `{${m.keys.map((k, i) => `${JSON.stringify(k)}:${valueToJson(t.value!, m.values[i])}`).join(',')}}`
      return `[${m.keys.map((k, i) => `[${valueToJson(t.key!, k)},${valueToJson(t.value!, m.values[i])}]`).join(',')}]`
    }
    case 'MULTISET': {
      // each element as often as its count, as a write takes it
      const m = v as MapValue
      const parts: string[] = []
      m.keys.forEach((k, i) => {
        const text = valueToJson(t.element!, k)
        for (let n = 0; n < (m.values[i] as number); n++) parts.push(text)
      })
      return `[${parts.join(',')}]`
    }
    default:
      return JSON.stringify(v)
  }
}

/** A JSON object line with the given columns of a row, nulls included. */
export function rowToJsonLine(fields: DataField[], indexes: number[], row: Row): string {
  const parts = indexes.map((i) => `${JSON.stringify(fields[i].name)}:${valueToJson(fields[i].type, row[i])}`)
  return `{${parts.join(',')}}`
}

/** Plain-text rendering of a value for tables on a terminal. */
export function valueToText(t: DataType, v: Value): string {
  if (v === null) return 'NULL'
  const j = valueToJson(t, v)
  return j.startsWith('"') ? (JSON.parse(j) as string) : j
}
