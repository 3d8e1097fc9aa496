// A faster reader of one JSON line as a record of a table, for bulk writes (`strata write`).
// It takes the common shape only — one flat object of plain strings (no escapes), numbers,
// booleans and nulls, every key a column or `_kind`, none repeated — and converts the common
// values (integers, decimals without exponent) directly. Anything else, and every value it
// cannot convert, goes to the strict reader (recordFromJsonLine in lib/table/json-values.ts),
// which gives the result or the error: so a line reads exactly as the strict reader reads it,
// error messages included (test/json-record-reader.test.ts compares the two on random lines).

import { type DataField, type Row, RowKind, type Value } from '../types.ts'
import { JsonNumber } from '../table/json-line.ts'
import { recordFromJsonLine, valueFromJson } from '../table/json-values.ts'
import { daysFromCivil, daysInMonth } from '../format/partition-path.ts'
import type { SchemaView } from '../table/schema.ts'

const KIND_BY_TEXT: Record<string, RowKind> = { '+I': RowKind.INSERT, '-U': RowKind.UPDATE_BEFORE, '+U': RowKind.UPDATE_AFTER, '-D': RowKind.DELETE }

const QUOTE = 0x22
const BACKSLASH = 0x5c
const MINUS = 0x2d
const ZERO = 0x30
const NINE = 0x39

/** A value of the common shape, before conversion: a string or a number's text, true/false/null. */
type Plain = string | boolean | null

/** Thrown inside the fast path when a line leaves the common shape; never escapes. */
const NOT_PLAIN = Symbol('not plain')

/** What a line holds for a field: nothing, a string without escapes, a number, true, false, null. */
const enum Tag {
  MISSING = 0,
  STR = 1,
  NUM = 2,
  TRUE = 3,
  FALSE = 4,
  NULL = 5,
}

/**
 * Per-field conversion of a plain value, read in place: `text` [start, end) is a string's
 * characters (between its quotes) or a number's text; returns NOT_PLAIN to hand the line to
 * the strict reader, which then names any error.
 */
type Convert = (text: string, start: number, end: number, tag: Tag) => Value | typeof NOT_PLAIN

/** The value as JSON gives it (a number as its text), or undefined when the line has none. */
function plainOf(text: string, start: number, end: number, tag: Tag): Plain | undefined {
  switch (tag) {
    case Tag.STR:
    case Tag.NUM:
      return text.slice(start, end)
    case Tag.TRUE:
      return true
    case Tag.FALSE:
      return false
    case Tag.NULL:
      return null
    default:
      return undefined
  }
}

/**
 * An integer's text [s, e) as INT_TEXT (at most 9 digits) or LONG_TEXT (18) accepts it —
 * '0', or an optional minus and a nonzero digit first — as a number (exact up to 15 digits);
 * NaN for any other text.
 */
function plainInteger(t: string, s: number, e: number, maxDigits: number): number {
  let i = s
  const neg = t.charCodeAt(i) === MINUS
  if (neg) i++
  const first = t.charCodeAt(i) - ZERO
  if (first === 0) return e === i + 1 && !neg ? 0 : NaN
  if (!(first >= 1 && first <= 9) || e - i > maxDigits) return NaN
  let n = 0
  for (; i < e; i++) {
    const c = t.charCodeAt(i) - ZERO
    if (c < 0 || c > 9) return NaN
    n = n * 10 + c
  }
  return neg ? -n : n
}

const DECIMAL_PLAIN = /^(-?)(\d+)(?:\.(\d+))?$/
const INT_BOUNDS: Record<string, [number, number]> = { TINYINT: [-128, 127], SMALLINT: [-32768, 32767], INT: [-2147483648, 2147483647] }

function converter(field: DataField): Convert {
  const t = field.type
  // the strict conversion of one value (exported by json-values.ts); an error sends the line
  // to the strict reader, which names it in its own order
  const strictValue = (v: Plain | undefined, num: boolean): Value | typeof NOT_PLAIN => {
    try {
      return valueFromJson(field, num ? new JsonNumber(v as string) : v, '')
    } catch {
      return NOT_PLAIN
    }
  }
  const strict: Convert = (text, start, end, tag) => strictValue(plainOf(text, start, end, tag), tag === Tag.NUM)
  switch (t.root) {
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT': {
      const [lo, hi] = INT_BOUNDS[t.root]
      return (text, start, end, tag) => {
        if (tag === Tag.NUM) {
          const n = plainInteger(text, start, end, 9)
          if (n >= lo && n <= hi) return n
        }
        return strict(text, start, end, tag)
      }
    }
    case 'BIGINT':
      return (text, start, end, tag) => {
        if (tag === Tag.NUM) {
          const n = plainInteger(text, start, end, 18)
          // up to 15 characters through a double (exact), which BigInt converts faster than text
          if (n === n) return end - start <= 15 ? BigInt(n) : BigInt(text.slice(start, end))
        }
        return strict(text, start, end, tag)
      }
    case 'DECIMAL': {
      const p = t.precision!
      const s = t.scale!
      const zeros = '0'.repeat(s)
      const pow = 10 ** s
      return (text, start, end, tag) => {
        if (tag === Tag.STR || tag === Tag.NUM) {
          const u = plainDecimal(text, start, end, p, s, pow)
          if (u !== null) return u
        }
        const v = plainOf(text, start, end, tag)
        const num = tag === Tag.NUM
        const m = typeof v === 'string' ? DECIMAL_PLAIN.exec(v) : null
        if (m) {
          const frac = m[3] ?? ''
          let int = m[2]
          let first = 0
          while (first < int.length - 1 && int.charCodeAt(first) === ZERO) first++
          if (first) int = int.slice(first)
          const intDigits = int === '0' ? 0 : int.length
          // at most `scale` fraction digits and `precision` digits in all: the exact value, unscaled
          if (frac.length <= s && intDigits + s <= p) {
            const u = BigInt(int + frac + zeros.slice(frac.length))
            return m[1] === '-' ? -u : u
          }
        }
        return strictValue(v, num)
      }
    }
    case 'TIMESTAMP': {
      const precision = t.precision!
      return (text, start, end, tag) => {
        if (tag === Tag.STR) {
          const micros = plainTimestamp(text, start, end - start, precision)
          if (micros !== null) return micros
        }
        return strict(text, start, end, tag)
      }
    }
    default:
      return strict
  }
}

/**
 * The unscaled value of DECIMAL(p, s) text '-?d+(.d+)?' whose digits all fit in a double
 * exactly (at most 15 significant, at most `s` after the point, at most p - s before it), as
 * the strict reader computes it; null for any other text (the exact path then decides).
 */
function plainDecimal(t: string, from: number, n: number, p: number, s: number, pow: number): bigint | null {
  let i = from
  const neg = t.charCodeAt(i) === MINUS
  if (neg) i++
  let int = 0
  let intDigits = 0
  let c = 0
  const start = i
  while (i < n && (c = t.charCodeAt(i) - ZERO) >= 0 && c <= 9) {
    int = int * 10 + c
    if (int !== 0) intDigits++
    i++
  }
  if (i === start) return null
  let frac = 0
  let fracDigits = 0
  if (i < n) {
    if (t.charCodeAt(i) !== 0x2e) return null
    i++
    const fs = i
    while (i < n && (c = t.charCodeAt(i) - ZERO) >= 0 && c <= 9) {
      frac = frac * 10 + c
      i++
    }
    fracDigits = i - fs
    if (fracDigits === 0 || i < n) return null
  }
  // leading zeros count nothing; the value must have at most p - s integer digits and s fraction digits
  if (fracDigits > s || intDigits + s > p || intDigits + s > 15) return null
  const u = int * pow + frac * 10 ** (s - fracDigits)
  return neg ? -BigInt(u) : BigInt(u)
}

/** Value of the digit at `i`, or -1. */
function digit(t: string, i: number): number {
  const c = t.charCodeAt(i) - ZERO
  return c >= 0 && c <= 9 ? c : -1
}

/** Value of the two digits at `i`, or -1. */
function twoDigits(t: string, i: number): number {
  const a = digit(t, i)
  const b = digit(t, i + 1)
  return a < 0 || b < 0 ? -1 : a * 10 + b
}

/**
 * Microseconds since the epoch of 'YYYY-MM-DD HH:MM:SS[.ffffff]' (or 'T' for the space), the
 * `n` characters of `t` from `o`, with no nonzero digit beyond `precision`, as the strict
 * reader computes them; null for any other text (the strict reader then decides).
 */
/** What k fraction digits read as an integer are multiplied by to give microseconds. */
const MICRO_SCALE = [1_000_000, 100_000, 10_000, 1000, 100, 10, 1]

/** The date part ('YYYY-MM-DD') of the last timestamp plainTimestamp read, and its days since the epoch. */
let lastDate = ''
let lastDays = 0

function plainTimestamp(t: string, o: number, n: number, precision: number): bigint | null {
  if (n < 19 || n > 26 || n === 20 || t.charCodeAt(o + 4) !== MINUS || t.charCodeAt(o + 7) !== MINUS || t.charCodeAt(o + 13) !== 0x3a || t.charCodeAt(o + 16) !== 0x3a) return null
  const sep = t.charCodeAt(o + 10)
  if (sep !== 0x20 && sep !== 0x54) return null
  let days: number
  // timestamps of a batch mostly share their date: the last valid one's days are kept
  if (lastDate !== '' && t.startsWith(lastDate, o)) days = lastDays
  else {
    const y = twoDigits(t, o + 0) * 100 + twoDigits(t, o + 2)
    const m = twoDigits(t, o + 5)
    const d = twoDigits(t, o + 8)
    if (t.charCodeAt(o + 0) === MINUS || y < 0 || twoDigits(t, o + 0) < 0 || twoDigits(t, o + 2) < 0) return null
    if (m < 1 || m > 12 || d < 1 || d > daysInMonth(y, m)) return null
    days = daysFromCivil(y, m, d)
    lastDate = t.slice(o, o + 10)
    lastDays = days
  }
  const h = twoDigits(t, o + 11)
  const mi = twoDigits(t, o + 14)
  const sec = twoDigits(t, o + 17)
  if (h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59) return null
  let micros = 0
  if (n > 19) {
    if (t.charCodeAt(o + 19) !== 0x2e) return null
    // 1 to 6 fraction digits (n is at most 26), none nonzero beyond `precision`
    for (let i = 20; i < n; i++) {
      const f = t.charCodeAt(o + i) - ZERO
      if (f < 0 || f > 9 || (f !== 0 && i - 20 >= precision)) return null
      micros = micros * 10 + f
    }
    micros *= MICRO_SCALE[n - 20]
  }
  const seconds = days * 86400 + h * 3600 + mi * 60 + sec
  const exact = seconds * 1_000_000 + micros
  // one bigint when the sum is exact in a double (years up to about 2255)
  return Number.isSafeInteger(exact) && Math.abs(seconds) < 9e9 ? BigInt(exact) : BigInt(seconds) * 1_000_000n + BigInt(micros)
}

/**
 * A reader of a table's JSON lines: `read(line, n)` returns what recordFromJsonLine returns for
 * the line with `whereOf(n)` as its position, or throws the StrataInputError it throws (the
 * position's text is made only then).
 */
export function jsonRecordReader(view: SchemaView, whereOf: (n: number) => string): (line: string, n: number) => { kind: RowKind; row: Row } {
  // a column named `_kind` is both the row kind and a value to the strict reader
  if (view.fieldIndex.has('_kind')) return (line, n) => recordFromJsonLine(view, line, whereOf(n))
  const fields = view.fields
  const n = fields.length
  const converters = fields.map(converter)
  // where each field's value is in the line, and what it is (Tag.MISSING: not there)
  const tags = new Uint8Array(n)
  const starts = new Int32Array(n)
  const ends = new Int32Array(n)
  // keys usually come in the same order line after line: the k-th key of the last line is
  // tried first, compared in place (no string made), for names that need no escaping
  const KIND = n
  const quoted = [...fields.map((f) => f.name), '_kind'].map((name) => (/["\\\u0000-\u001f]/.test(name) ? null : `"${name}"`))
  const order: number[] = []

  /** Where the values of a line of the common shape are (`tags`, `starts`, `ends`); the row kind; or NOT_PLAIN. */
  function scan(text: string): RowKind | typeof NOT_PLAIN {
    tags.fill(0)
    let kind: RowKind = RowKind.INSERT
    let kindSeen = false
    let p = skipWs(text, 0)
    if (text.charCodeAt(p) !== 0x7b) return NOT_PLAIN
    p = skipWs(text, p + 1)
    if (text.charCodeAt(p) === 0x7d) return NOT_PLAIN
    for (let k = 0; ; k++) {
      if (text.charCodeAt(p) !== QUOTE) return NOT_PLAIN
      let field = k < order.length ? order[k] : -1
      const q = field >= 0 ? quoted[field] : null
      if (q !== null && text.startsWith(q, p)) p += q.length
      else {
        const keyEnd = plainStringEnd(text, p + 1)
        if (keyEnd < 0) return NOT_PLAIN
        const key = text.slice(p + 1, keyEnd)
        field = key === '_kind' ? KIND : (view.fieldIndex.get(key) ?? -1)
        if (field < 0) return NOT_PLAIN
        order[k] = field
        p = keyEnd + 1
      }
      if (text.charCodeAt(p) <= 0x20) p = skipWs(text, p)
      if (text.charCodeAt(p) !== 0x3a) return NOT_PLAIN
      p++
      if (text.charCodeAt(p) <= 0x20) p = skipWs(text, p)
      // the value, found in place
      const c = text.charCodeAt(p)
      let tag: Tag
      let start = p
      let end: number
      if (c === QUOTE) {
        start = p + 1
        end = plainStringEnd(text, start)
        if (end < 0) return NOT_PLAIN
        tag = Tag.STR
        p = end + 1
      } else if (c === MINUS || (c >= ZERO && c <= NINE)) {
        end = numberEnd(text, p)
        if (end < 0) return NOT_PLAIN
        tag = Tag.NUM
        p = end
      } else if (text.startsWith('true', p)) {
        tag = Tag.TRUE
        end = p += 4
      } else if (text.startsWith('false', p)) {
        tag = Tag.FALSE
        end = p += 5
      } else if (text.startsWith('null', p)) {
        tag = Tag.NULL
        end = p += 4
      } else return NOT_PLAIN
      if (field === KIND) {
        const v = tag === Tag.STR ? text.slice(start, end) : null
        if (kindSeen || v === null || !Object.hasOwn(KIND_BY_TEXT, v)) return NOT_PLAIN
        kindSeen = true
        kind = KIND_BY_TEXT[v]
      } else {
        if (tags[field] !== Tag.MISSING) return NOT_PLAIN
        tags[field] = tag
        starts[field] = start
        ends[field] = end
      }
      if (text.charCodeAt(p) <= 0x20) p = skipWs(text, p)
      const sep = text.charCodeAt(p)
      if (sep === 0x7d) break
      if (sep !== 0x2c) return NOT_PLAIN
      p++
      if (text.charCodeAt(p) <= 0x20) p = skipWs(text, p)
    }
    return skipWs(text, p + 1) === text.length ? kind : NOT_PLAIN
  }

  return (line, lineNo) => {
    const kind = scan(line)
    if (kind !== NOT_PLAIN) {
      const row: Row = new Array(n)
      let i = 0
      for (; i < n; i++) {
        const v = converters[i](line, starts[i], ends[i], tags[i])
        if (v === NOT_PLAIN) break
        row[i] = v
      }
      if (i === n) return { kind, row }
    }
    return recordFromJsonLine(view, line, whereOf(lineNo))
  }
}

function skipWs(t: string, p: number): number {
  for (;;) {
    const c = t.charCodeAt(p)
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) p++
    else return p
  }
}

/** Index of the closing quote of a string starting at `from` (after its opening quote) with no escape or control character; -1 otherwise. */
function plainStringEnd(t: string, from: number): number {
  const n = t.length
  for (let i = from; i < n; i++) {
    const c = t.charCodeAt(i)
    if (c === QUOTE) return i
    if (c < 0x20 || c === BACKSLASH) return -1
  }
  return -1
}

/** End of a number at `p` in RFC 8259's grammar (as json-line.ts reads it); -1 if it is not one. */
function numberEnd(t: string, p: number): number {
  if (t.charCodeAt(p) === MINUS) p++
  let c = t.charCodeAt(p)
  if (c === ZERO) p++
  else if (c > ZERO && c <= NINE) while ((c = t.charCodeAt(p)) >= ZERO && c <= NINE) p++
  else return -1
  if (t.charCodeAt(p) === 0x2e) {
    p++
    c = t.charCodeAt(p)
    if (!(c >= ZERO && c <= NINE)) return -1
    while ((c = t.charCodeAt(p)) >= ZERO && c <= NINE) p++
  }
  c = t.charCodeAt(p)
  if (c === 0x65 || c === 0x45) {
    p++
    c = t.charCodeAt(p)
    if (c === 0x2b || c === MINUS) p++
    c = t.charCodeAt(p)
    if (!(c >= ZERO && c <= NINE)) return -1
    while ((c = t.charCodeAt(p)) >= ZERO && c <= NINE) p++
  }
  return p
}

