// JSON in and out of table rows. Input is validated against the field's type with an error
// naming the field, the value and what was expected; output is exact (bigints, decimals and
// timestamps print without going through a float).

import { type DataField, type DataType, type Row, type RowKind, RowKind as RK, type Value, StrataInputError } from '../types.ts'
import { MAX_LENGTH, typeLabel } from './data-type.ts'
import type { SchemaView } from './schema.ts'

const INT_RANGE: Record<string, [number, number]> = {
  TINYINT: [-128, 127],
  SMALLINT: [-32768, 32767],
  INT: [-2147483648, 2147483647],
}
const LONG_MIN = -(2n ** 63n)
const LONG_MAX = 2n ** 63n - 1n
const MICROS_PER_DAY = 86_400_000_000n

function describe(v: unknown): string {
  const s = JSON.stringify(v)
  return s === undefined ? String(v) : s.length > 60 ? s.slice(0, 57) + '...' : s
}


/** Days since 1970-01-01 of a proleptic Gregorian date. */
export function daysFromCivil(y: number, m: number, d: number): number {
  // setUTCFullYear, unlike Date.UTC, does not map years 0..99 to 1900..1999
  const date = new Date(0)
  date.setUTCFullYear(y, m - 1, d)
  return Math.floor(date.getTime() / 86_400_000)
}

function parseDecimal(text: string, p: number, s: number): bigint | null {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?$/.exec(text.trim())
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null
  const digits = (m[2] || '') + (m[3] ?? '')
  const exp = (m[4] ? Number(m[4]) : 0) - (m[3] ?? '').length
  // rescale to `s` fraction digits, rounding half up as BigDecimal.setScale(HALF_UP)
  let unscaled = BigInt(digits || '0')
  const shift = exp + s
  if (shift >= 0) unscaled *= 10n ** BigInt(shift)
  else {
    const div = 10n ** BigInt(-shift)
    const q = unscaled / div
    const r = unscaled % div
    unscaled = q + (r * 2n >= div ? 1n : 0n)
  }
  if (m[1] === '-') unscaled = -unscaled
  if ((unscaled < 0n ? -unscaled : unscaled) >= 10n ** BigInt(p)) return null
  return unscaled
}

const TIMESTAMP_RE = /^(-?\d{4,}-\d{2}-\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?$/

/** 'YYYY-MM-DD[ T]HH:MM[:SS[.fffffffff]]' → micros since epoch, truncated to precision. */
function parseTimestamp(text: string, precision: number): bigint | null {
  const m = TIMESTAMP_RE.exec(text.trim())
  if (!m) return null
  const [, date, h = '0', mi = '0', sec = '0'] = m
  if (+h > 23 || +mi > 59 || +sec > 59) return null
  const day = parseDate(date)
  if (day === null) return null
  const frac = (m[5] ?? '').padEnd(6, '0').slice(0, 6)
  let micros = BigInt(day) * MICROS_PER_DAY + BigInt((+h * 3600 + +mi * 60 + +sec) * 1_000_000) + BigInt(frac || '0')
  const unit = 10n ** BigInt(6 - precision)
  micros -= ((micros % unit) + unit) % unit
  return micros
}

// Input batches repeat a few dates many times; remember them (bounded).
const dateCache = new Map<string, number | null>()

function parseDate(text: string): number | null {
  const hit = dateCache.get(text)
  if (hit !== undefined) return hit
  const m = /^(-?\d{4,})-(\d{2})-(\d{2})$/.exec(text.trim())
  let day: number | null = null
  if (m && +m[2] >= 1 && +m[2] <= 12 && +m[3] >= 1) {
    day = daysFromCivil(+m[1], +m[2], +m[3])
    if (new Date(day * 86_400_000).getUTCDate() !== +m[3]) day = null
  }
  if (dateCache.size > 10_000) dateCache.clear()
  dateCache.set(text, day)
  return day
}

// a plain function, not a closure per call: this runs once per input value
function badValue(field: DataField, v: unknown, where: string, what: string): StrataInputError {
  return new StrataInputError(`${where}: field '${field.name}' (${typeLabel(field.type)}) expected ${what}, got ${describe(v)}`)
}

/** Converts one JSON value to the engine's Value for `field`, or throws naming the field. */
export function valueFromJson(field: DataField, v: unknown, where: string): Value {
  const t = field.type
  if (v === null || v === undefined) {
    if (!t.nullable) throw new StrataInputError(`${where}: field '${field.name}' is NOT NULL but got ${v === null ? 'null' : 'no value'}`)
    return null
  }
  const bad = badValue
  switch (t.root) {
    case 'BOOLEAN':
      if (typeof v !== 'boolean') throw bad(field, v, where, 'true or false')
      return v
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT': {
      const [lo, hi] = INT_RANGE[t.root]
      if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) throw bad(field, v, where, `an integer in [${lo}, ${hi}]`)
      return v
    }
    case 'BIGINT': {
      let b: bigint
      if (typeof v === 'number') {
        if (!Number.isSafeInteger(v)) throw bad(field, v, where, 'an integer (write integers beyond 2^53 as a string of digits)')
        b = BigInt(v)
      } else if (typeof v === 'string' && /^-?\d+$/.test(v)) b = BigInt(v)
      else throw bad(field, v, where, 'an integer')
      if (b < LONG_MIN || b > LONG_MAX) throw bad(field, v, where, 'an integer in the 64-bit range')
      return b
    }
    case 'FLOAT':
    case 'DOUBLE':
      if (typeof v === 'number') return t.root === 'FLOAT' ? Math.fround(v) : v
      if (v === 'NaN') return NaN
      if (v === 'Infinity') return Infinity
      if (v === '-Infinity') return -Infinity
      throw bad(field, v, where, 'a number')
    case 'DECIMAL': {
      if (typeof v !== 'number' && typeof v !== 'string') throw bad(field, v, where, `a decimal number with at most ${t.precision! - t.scale!} integer digits`)
      const d = parseDecimal(typeof v === 'number' ? String(v) : v, t.precision!, t.scale!)
      if (d === null) throw bad(field, v, where, `a decimal number with at most ${t.precision! - t.scale!} integer digits`)
      return d
    }
    case 'CHAR':
    case 'VARCHAR': {
      if (typeof v !== 'string') throw bad(field, v, where, 'a string')
      if (t.length! < MAX_LENGTH && [...v].length > t.length!) throw bad(field, v, where, `a string of at most ${t.length} characters`)
      return v
    }
    case 'BINARY':
    case 'VARBINARY': {
      if (typeof v !== 'string' || !/^[A-Za-z0-9+/]*={0,2}$/.test(v)) throw bad(field, v, where, 'base64-encoded bytes')
      const bytes = new Uint8Array(Buffer.from(v, 'base64'))
      if (t.length! < MAX_LENGTH && bytes.length > t.length!) throw bad(field, v, where, `at most ${t.length} bytes`)
      return bytes
    }
    case 'DATE': {
      // stored as a 32-bit day count since 1970-01-01
      const d = typeof v === 'number' && Number.isInteger(v) ? v : typeof v === 'string' ? parseDate(v) : null
      if (d === null || d < -2147483648 || d > 2147483647) {
        throw bad(field, v, where, "a date 'YYYY-MM-DD' or an integer day count in the 32-bit range")
      }
      return d
    }
    case 'TIMESTAMP': {
      let ts: bigint | null = null
      if (typeof v === 'number' && Number.isSafeInteger(v)) {
        const unit = 10n ** BigInt(6 - t.precision!)
        const micros = BigInt(v) * 1000n
        ts = micros - (((micros % unit) + unit) % unit)
      } else if (typeof v === 'string') ts = parseTimestamp(v, t.precision!)
      // stored as 64-bit microseconds since the epoch
      if (ts === null || ts < LONG_MIN || ts > LONG_MAX) {
        throw bad(field, v, where, "a timestamp 'YYYY-MM-DD HH:MM:SS[.ffffff]' or epoch milliseconds within the 64-bit microsecond range")
      }
      return ts
    }
  }
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
  for (let i = 0; i < fields.length; i++) row[i] = valueFromJson(fields[i], rec[fields[i].name], where)
  return { kind, row }
}

function pad(n: number | bigint, w: number): string {
  return String(n).padStart(w, '0')
}

export function formatDate(days: number): string {
  const d = new Date(days * 86_400_000)
  const y = d.getUTCFullYear()
  return `${y < 0 ? '-' + pad(-y, 4) : pad(y, 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)}`
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
      return Number.isFinite(v as number) ? JSON.stringify(v) : JSON.stringify(String(v))
    case 'BINARY':
    case 'VARBINARY':
      return JSON.stringify(Buffer.from(v as Uint8Array).toString('base64'))
    case 'DATE':
      return JSON.stringify(formatDate(v as number))
    case 'TIMESTAMP':
      return JSON.stringify(formatTimestamp(v as bigint, t.precision!))
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
