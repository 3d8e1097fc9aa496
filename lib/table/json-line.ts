// A strict parser for one JSON line (one input record), used where JSON.parse would lose
// something a table must not: a key given twice (JSON.parse keeps the last silently), the
// digits of a number (JSON.parse rounds `12345678901234567.89` to a double and turns `1e400`
// into Infinity), and the stack (a deeply nested value must be refused, not overflow it).
//
// The grammar is RFC 8259's, nothing more: no comments, no trailing commas, no single
// quotes, no leading `+` or `.5`, whitespace only as space, tab, CR and LF. Objects come
// back with a null prototype (so a key such as `__proto__` or `toString` is an ordinary
// key), numbers as JsonNumber holding their text, strings, booleans, null and arrays as
// JavaScript values. Every error is a StrataInputError naming the character position.

import { StrataInputError } from '../errors.ts'

/** A JSON number as written: its text, so conversions to a column's type are exact. */
export class JsonNumber {
  constructor(readonly text: string) {}

  /** The nearest double (what JSON.parse would give). */
  get value(): number {
    return Number(this.text)
  }
}

export type JsonValue = null | boolean | string | JsonNumber | JsonValue[] | { [key: string]: JsonValue }

/**
 * Deepest nesting of objects and arrays a line may hold. A record is one object of
 * scalar values, so anything deeper than a few levels is already wrong; the bound keeps the
 * recursive descent far inside the stack.
 */
export const MAX_JSON_DEPTH = 64

const QUOTE = 0x22
const BACKSLASH = 0x5c
const COMMA = 0x2c
const COLON = 0x3a
const OPEN_BRACE = 0x7b
const CLOSE_BRACE = 0x7d
const OPEN_BRACKET = 0x5b
const CLOSE_BRACKET = 0x5d
const MINUS = 0x2d
const ZERO = 0x30
const NINE = 0x39

const ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' }

function isDigit(c: number): boolean {
  return c >= ZERO && c <= NINE
}

function isHex(c: number): boolean {
  return isDigit(c) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66)
}

/** How a character is named in an error: printable as itself, others by code point. */
function charName(text: string, pos: number): string {
  if (pos >= text.length) return 'the end of the line'
  const c = text.codePointAt(pos)!
  return c >= 0x20 && c !== 0x7f ? `'${String.fromCodePoint(c)}'` : `U+${c.toString(16).toUpperCase().padStart(4, '0')}`
}

class LineParser {
  pos = 0

  constructor(
    readonly text: string,
    readonly where: string,
  ) {}

  fail(what: string, at = this.pos): never {
    throw new StrataInputError(`${this.where}: malformed JSON at character ${at + 1}: ${what}`)
  }

  skipWhitespace(): void {
    const t = this.text
    let p = this.pos
    for (;;) {
      const c = t.charCodeAt(p)
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) p++
      else break
    }
    this.pos = p
  }

  value(depth: number): JsonValue {
    this.skipWhitespace()
    const c = this.text.charCodeAt(this.pos)
    if (c === OPEN_BRACE) return this.object(depth + 1)
    if (c === OPEN_BRACKET) return this.array(depth + 1)
    if (c === QUOTE) return this.string()
    if (c === MINUS || isDigit(c)) return this.number()
    if (this.text.startsWith('true', this.pos)) return this.literal(4, true)
    if (this.text.startsWith('false', this.pos)) return this.literal(5, false)
    if (this.text.startsWith('null', this.pos)) return this.literal(4, null)
    return this.fail(`expected a value, found ${charName(this.text, this.pos)}`)
  }

  literal<T>(length: number, v: T): T {
    this.pos += length
    return v
  }

  enter(depth: number): void {
    if (depth > MAX_JSON_DEPTH) this.fail(`objects and arrays nested deeper than ${MAX_JSON_DEPTH} levels`)
    this.pos++
  }

  object(depth: number): { [key: string]: JsonValue } {
    this.enter(depth)
    const out: { [key: string]: JsonValue } = Object.create(null)
    this.skipWhitespace()
    if (this.text.charCodeAt(this.pos) === CLOSE_BRACE) {
      this.pos++
      return out
    }
    for (;;) {
      this.skipWhitespace()
      const keyAt = this.pos
      if (this.text.charCodeAt(this.pos) !== QUOTE) this.fail(`expected a quoted key, found ${charName(this.text, this.pos)}`)
      const key = this.string()
      if (key in out) this.fail(`key ${JSON.stringify(key.length > 60 ? key.slice(0, 57) + '...' : key)} appears twice in one object`, keyAt)
      this.skipWhitespace()
      if (this.text.charCodeAt(this.pos) !== COLON) this.fail(`expected ':' after a key, found ${charName(this.text, this.pos)}`)
      this.pos++
      out[key] = this.value(depth)
      this.skipWhitespace()
      const c = this.text.charCodeAt(this.pos)
      this.pos++
      if (c === CLOSE_BRACE) return out
      if (c !== COMMA) this.fail(`expected ',' or '}' in an object, found ${charName(this.text, this.pos - 1)}`, this.pos - 1)
    }
  }

  array(depth: number): JsonValue[] {
    this.enter(depth)
    const out: JsonValue[] = []
    this.skipWhitespace()
    if (this.text.charCodeAt(this.pos) === CLOSE_BRACKET) {
      this.pos++
      return out
    }
    for (;;) {
      out.push(this.value(depth))
      this.skipWhitespace()
      const c = this.text.charCodeAt(this.pos)
      this.pos++
      if (c === CLOSE_BRACKET) return out
      if (c !== COMMA) this.fail(`expected ',' or ']' in an array, found ${charName(this.text, this.pos - 1)}`, this.pos - 1)
    }
  }

  /** A string at this.pos (its opening quote); the common case, no escapes, is one slice. */
  string(): string {
    const t = this.text
    const start = this.pos + 1
    let p = start
    let escaped = false
    for (;;) {
      if (p >= t.length) this.fail('a string is not closed', start - 1)
      const c = t.charCodeAt(p)
      if (c === QUOTE) break
      if (c < 0x20) this.fail(`control character ${charName(t, p)} inside a string (write it as an escape such as \\n or \\u0000)`, p)
      if (c === BACKSLASH) {
        escaped = true
        const e = t[p + 1]
        if (e === 'u') {
          for (let k = p + 2; k < p + 6; k++) if (!isHex(t.charCodeAt(k))) this.fail('expected four hex digits after \\u', p)
          p += 6
        } else if (e !== undefined && e in ESCAPES) p += 2
        else this.fail(`invalid escape \\${e ?? ''} in a string`, p)
      } else p++
    }
    this.pos = p + 1
    return escaped ? decodeEscapes(t.slice(start, p)) : t.slice(start, p)
  }

  number(): JsonNumber {
    const t = this.text
    const start = this.pos
    let p = start
    if (t.charCodeAt(p) === MINUS) p++
    if (t.charCodeAt(p) === ZERO) p++
    else if (isDigit(t.charCodeAt(p))) while (isDigit(t.charCodeAt(p))) p++
    else this.fail(`expected a digit in a number, found ${charName(t, p)}`, p)
    if (t.charCodeAt(p) === 0x2e) {
      p++
      if (!isDigit(t.charCodeAt(p))) this.fail(`expected a digit after the decimal point, found ${charName(t, p)}`, p)
      while (isDigit(t.charCodeAt(p))) p++
    }
    const e = t.charCodeAt(p)
    if (e === 0x65 || e === 0x45) {
      p++
      const s = t.charCodeAt(p)
      if (s === 0x2b || s === MINUS) p++
      if (!isDigit(t.charCodeAt(p))) this.fail(`expected a digit in the exponent, found ${charName(t, p)}`, p)
      while (isDigit(t.charCodeAt(p))) p++
    }
    this.pos = p
    return new JsonNumber(t.slice(start, p))
  }
}

/** The characters of a string body whose escapes were checked by the scan. */
function decodeEscapes(body: string): string {
  let out = ''
  let from = 0
  for (let i = body.indexOf('\\'); i !== -1; i = body.indexOf('\\', from)) {
    out += body.slice(from, i)
    const e = body[i + 1]
    if (e === 'u') {
      out += String.fromCharCode(parseInt(body.slice(i + 2, i + 6), 16))
      from = i + 6
    } else {
      out += ESCAPES[e]
      from = i + 2
    }
  }
  return out + body.slice(from)
}

/**
 * Parses one JSON text (a whole line: surrounding whitespace allowed, nothing else).
 * Throws a StrataInputError `<where>: malformed JSON at character N: …` for anything that is
 * not exactly one JSON value, for a key repeated in one object and for nesting deeper than
 * MAX_JSON_DEPTH.
 */
export function parseJsonLine(text: string, where: string): JsonValue {
  const p = new LineParser(text, where)
  const v = p.value(0)
  p.skipWhitespace()
  if (p.pos < text.length) p.fail(`unexpected ${charName(text, p.pos)} after the JSON value`)
  return v
}
