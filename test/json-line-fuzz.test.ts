// Grammar-based fuzzing of the JSON-line parser and the record conversion behind it
// (parseJsonLine, recordFromJsonLine). First the corpus in test/fuzz-corpus/json-lines/
// is replayed (inputs that once hung, crashed or changed a value), then lines are generated
// from a JSON grammar shaped like the table's records and mutated at the character level,
// for STRATA_FUZZ_SECONDS seconds (default 10). test/fuzz-corpus/README.md says how to run
// it longer and how to keep an input it finds.
//
// The property for every input: a row, or a StrataInputError naming the line (and, for
// malformed JSON, the character) — never another exception, never a hang (a hang runs into
// the test's timeout). Two oracles beside it: JSON.parse must agree with the parser on what
// is JSON (the parser refuses more only for a repeated key or nesting past its bound, and
// reads the same values), and an accepted row printed as JSON reads back as the same row.

import { readFileSync, readdirSync } from 'node:fs'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { JsonNumber, MAX_JSON_DEPTH, type JsonValue, parseJsonLine } from '../lib/table/json-line.ts'
import { recordFromJsonLine, rowToJsonLine } from '../lib/table/json-values.ts'
import { createSchema, describeSchema } from '../lib/table/schema.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { Row } from '../lib/types.ts'

const SECONDS = Number(process.env.STRATA_FUZZ_SECONDS ?? 10)
const CORPUS_DIR = new URL('./fuzz-corpus/json-lines/', import.meta.url)

/** The table every corpus line and generated line is a record of (test/fuzz-corpus/README.md). */
const view = describeSchema(
  createSchema(
    {
      fields: [
        { name: 'dt', type: 'STRING' },
        { name: 'id', type: 'BIGINT' },
        { name: 'price', type: 'DECIMAL(10, 2)' },
        { name: 'x', type: 'DOUBLE' },
        { name: 'f', type: 'FLOAT' },
        { name: 'n', type: 'INT' },
        { name: 'small', type: 'TINYINT' },
        { name: 'flag', type: 'BOOLEAN' },
        { name: 'day', type: 'DATE' },
        { name: 'ts', type: 'TIMESTAMP(3)' },
        { name: 'raw', type: 'BYTES' },
        { name: 'code', type: 'CHAR(3)' },
        { name: 'note', type: 'STRING' },
      ],
      primaryKeys: ['dt', 'id'],
      partitionKeys: ['dt'],
    },
    0,
  ),
)
const ALL_COLUMNS = view.fields.map((_, i) => i)
const WHERE = 'line 1'

/** The parser's value as JSON.parse gives it: numbers as doubles, objects with the usual prototype. */
function plain(v: JsonValue): unknown {
  if (v instanceof JsonNumber) return v.value
  if (Array.isArray(v)) return v.map(plain)
  if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, plain(x)]))
  return v
}

function expectInputError(e: unknown, input: string): asserts e is StrataInputError {
  if (!(e instanceof StrataInputError)) {
    throw new Error(`expected a StrataInputError for ${JSON.stringify(input.slice(0, 200))}, got ${(e as Error)?.name}: ${(e as Error)?.message}`, { cause: e })
  }
  expect(e.message.startsWith(`${WHERE}: `)).toBe(true)
}

/** Every check on one input line. */
function check(input: string): void {
  // the parser against JSON.parse
  let mine: JsonValue | undefined
  let mineError: unknown
  try {
    mine = parseJsonLine(input, WHERE)
  } catch (e) {
    mineError = e
  }
  let theirs: unknown
  let theirsFailed = false
  try {
    theirs = JSON.parse(input)
  } catch {
    theirsFailed = true
  }
  if (mineError !== undefined) {
    expectInputError(mineError, input)
    expect(mineError.message).toMatch(/^line 1: malformed JSON at character \d+: /)
    // JSON that the parser still refuses: only a repeated key or nesting past the bound
    if (!theirsFailed) expect(mineError.message).toMatch(/appears twice in one object|nested deeper than \d+ levels/)
  } else {
    expect(theirsFailed).toBe(false)
    expect(plain(mine!)).toEqual(theirs)
  }

  // the record: a row or an input error naming the line
  let row: Row
  try {
    row = recordFromJsonLine(view, input, WHERE).row
  } catch (e) {
    expectInputError(e, input)
    return
  }
  expect(row).toHaveLength(view.fields.length)
  // stored exactly: the row printed as JSON reads back as the same row (compared as printed:
  // the printing is exact for every type, and a deep comparison of megabyte-long bytes is slow)
  const printed = rowToJsonLine(view.fields, ALL_COLUMNS, row)
  const again = rowToJsonLine(view.fields, ALL_COLUMNS, recordFromJsonLine(view, printed, 'echo').row)
  if (again !== printed) throw new Error(`a row changed on its way back in: ${printed.slice(0, 300)} became ${again.slice(0, 300)}`)
}

describe('the JSON-line corpus (test/fuzz-corpus/json-lines)', () => {
  const files = readdirSync(CORPUS_DIR).filter((f) => f.endsWith('.txt')).sort()
  it('is there', () => expect(files.length).toBeGreaterThan(10))
  it.each(files)('%s', (file) => {
    // one input per file; the final newline an editor adds is not part of it
    check(readFileSync(new URL(file, CORPUS_DIR), 'utf8').replace(/\n$/, ''))
  })
})

// ---- the grammar ----

const ws = fc.constantFrom('', '', '', ' ', '\t', '\n', '\r\n', '  ')
const digitString = (minLength: number, maxLength: number) => fc.string({ unit: fc.constantFrom(...'0123456789'), minLength, maxLength })

/** JSON number texts, weighted toward what breaks conversions: long digit runs and huge exponents. */
const numberText = fc
  .tuple(
    fc.constantFrom('', '', '-'),
    fc.oneof(fc.constant('0'), fc.tuple(fc.constantFrom(...'123456789'), digitString(0, 3)).map(([a, b]) => a + b), fc.tuple(fc.constantFrom(...'123456789'), digitString(15, 45)).map(([a, b]) => a + b)),
    fc.option(fc.oneof(digitString(1, 3), digitString(10, 40)), { nil: undefined }),
    fc.option(
      fc.tuple(
        fc.constantFrom('e', 'E'),
        fc.constantFrom('', '+', '-'),
        fc.oneof(digitString(1, 2), fc.constantFrom('308', '309', '400', '400000000', '9999999999', '99999999999999999999999999'), digitString(30, 400)),
      ),
      { nil: undefined },
    ),
  )
  .map(([sign, int, frac, exp]) => `${sign}${int}${frac !== undefined ? `.${frac}` : ''}${exp ? exp.join('') : ''}`)

/** String bodies (between the quotes) with escapes, surrogates and controls. */
const stringBody = fc
  .array(
    fc.oneof(
      { weight: 6, arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }).map((s) => s.replace(/["\\\u0000-\u001f]/g, '')) },
      { weight: 2, arbitrary: fc.constantFrom('\\n', '\\"', '\\\\', '\\/', '\\b', '\\f', '\\r', '\\t', '\\u0000', '\\u00e9', '\\ud83d\\ude00', '\\ud800', '\\udc00', '\\uD800x') },
      { weight: 1, arbitrary: fc.constantFrom('2024-05-01', '2024-05-01 10:00:00.123', '2024-02-30', '1.005', '1e400', 'NaN', 'Infinity', 'AAEC', 'QQ==', 'QR==', 'A', '+I', '-D', '-0', '.5') },
      { weight: 1, arbitrary: fc.constantFrom('\\x', '\\u12', '\u0001', '"', '\\') }, // invalid inside a string
    ),
    { maxLength: 6 },
  )
  .map((parts) => parts.join(''))

const KEYS = [...view.fields.map((f) => f.name), '_kind', '_table', '__proto__', 'toString', 'constructor', '', 'price ']
const key = fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...KEYS) }, { weight: 1, arbitrary: stringBody })

const { value } = fc.letrec<{ value: string; array: string; object: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', maxDepth: 6, withCrossShrink: true },
    { weight: 4, arbitrary: numberText },
    { weight: 4, arbitrary: stringBody.map((s) => `"${s}"`) },
    { weight: 1, arbitrary: fc.constantFrom('true', 'false', 'null', 'tru', 'nul', 'NaN', 'Infinity', '+1', '.5', '01', '1.', '1e', '-') },
    { weight: 1, arbitrary: tie('array') },
    { weight: 1, arbitrary: tie('object') },
  ),
  array: fc.array(fc.tuple(ws, tie('value'), ws), { maxLength: 4 }).map((xs) => `[${xs.map((x) => x.join('')).join(',')}]`),
  object: fc.array(fc.tuple(ws, key, ws, ws, tie('value'), ws), { maxLength: 4 }).map((ms) => `{${ms.map(([a, k, b, c, v, d]) => `${a}"${k}"${b}:${c}${v}${d}`).join(',')}}`),
}))

/** A record line: the table's columns (some twice), with values of every kind. */
const recordLine = fc
  .tuple(ws, fc.array(fc.tuple(fc.constantFrom(...KEYS), ws, value), { minLength: 0, maxLength: 8 }), fc.boolean(), ws)
  .map(([a, members, withKey, b]) => {
    const base = withKey ? ['"dt":"2024-05-01"', '"id":1'] : []
    return `${a}{${[...base, ...members.map(([k, s, v]) => `"${k}":${s}${v}`)].join(',')}}${b}`
  })

/** Values meant for each column: mostly ones that fit, so accepted rows are common enough to test. */
/** A column's value: one that fits five times in six, else an edge case. */
const fitsOrEdge = (fits: fc.Arbitrary<string>, edge: fc.Arbitrary<string>) => fc.oneof({ weight: 5, arbitrary: fits }, { weight: 1, arbitrary: edge })
const COLUMN_VALUES: Record<string, fc.Arbitrary<string>> = {
  dt: fitsOrEdge(fc.constantFrom('"2024-05-01"', '"2024-05-02"', '" "', '""'), fc.constantFrom('null', '5', '"\\ud800"')),
  id: fitsOrEdge(fc.tuple(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.boolean()).map(([b, quoted]) => (quoted ? `"${b}"` : String(b))), numberText),
  price: fitsOrEdge(
    fc.tuple(fc.integer({ min: -99_999_999, max: 99_999_999 }), fc.integer({ min: 0, max: 99 }), fc.boolean()).map(([i, f, quoted]) => {
      const t = `${i}.${String(f).padStart(2, '0')}`
      return quoted ? `"${t}"` : t
    }),
    fc.oneof(numberText, numberText.map((t) => `"${t}"`)),
  ),
  x: fitsOrEdge(fc.double().map((d) => (Number.isFinite(d) ? JSON.stringify(d) : `"${d}"`)), numberText),
  f: fitsOrEdge(fc.float().map((d) => (Number.isFinite(d) ? JSON.stringify(d) : `"${d}"`)), numberText),
  n: fitsOrEdge(fc.integer().map(String), numberText),
  small: fitsOrEdge(fc.integer({ min: -128, max: 127 }).map(String), numberText),
  flag: fitsOrEdge(fc.constantFrom('true', 'false'), fc.constantFrom('"true"', '0')),
  day: fitsOrEdge(fc.oneof(fc.integer({ min: -800_000, max: 3_000_000 }).map(String), fc.date({ noInvalidDate: true }).map((d) => `"${d.toISOString().slice(0, 10)}"`)), numberText),
  ts: fitsOrEdge(
    fc.oneof(fc.integer({ min: -62135596800000, max: 253402300799999 }).map(String), fc.date({ noInvalidDate: true }).map((d) => `"${d.toISOString().slice(0, 23).replace('T', ' ')}"`)),
    numberText,
  ),
  raw: fitsOrEdge(fc.uint8Array({ maxLength: 12 }).map((b) => `"${Buffer.from(b).toString('base64')}"`), stringBody.map((b) => `"${b}"`)),
  code: fitsOrEdge(fc.string({ maxLength: 3 }).map((c) => JSON.stringify(c)), stringBody.map((b) => `"${b}"`)),
  note: fitsOrEdge(fc.string({ unit: 'grapheme', maxLength: 12 }).map((c) => JSON.stringify(c)), stringBody.map((b) => `"${b}"`)),
}
const OPTIONAL_COLUMNS = view.fields.map((f) => f.name).filter((n) => n !== 'dt' && n !== 'id')
const typedRecordLine = fc
  .tuple(ws, fc.subarray(OPTIONAL_COLUMNS), fc.option(fc.constantFrom('"+I"', '"-U"', '"+U"', '"-D"', '"x"'), { nil: undefined }))
  .chain(([a, optional, kind]) => {
    const names = ['dt', 'id', ...optional]
    return fc.tuple(...names.map((n) => COLUMN_VALUES[n])).map((vs) => `${a}{${[...names.map((n, i) => `"${n}":${vs[i]}`), ...(kind ? [`"_kind":${kind}`] : [])].join(',')}}`)
  })

/** Deep nesting around a value, past the parser's bound or just inside it. */
const nested = fc.tuple(fc.constantFrom(MAX_JSON_DEPTH - 1, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, 1000, 20_000), fc.constantFrom('[', '{"a":'), value).map(([depth, open, v]) => {
  const close = open === '[' ? ']' : '}'
  return `{"dt":"2024-05-01","id":1,"x":${open.repeat(depth)}${v}${close.repeat(depth)}}`
})

/** Huge strings and numbers: built once, shared by every case that picks them. */
const HUGE = ['9'.repeat(200_000), 'é'.repeat(150_000), 'A'.repeat(400_000)]
const huge = fc.tuple(fc.constantFrom(...view.fields.map((f) => f.name)), fc.constantFrom(...HUGE), fc.boolean()).map(([k, s, quoted]) => `{"dt":"2024-05-01","id":1,"${k}":${quoted || s[0] !== '9' ? `"${s}"` : s}}`)

type Mutation = { at: number; kind: 'insert' | 'delete' | 'replace' | 'duplicate' | 'truncate'; text: string; length: number }
const mutation: fc.Arbitrary<Mutation> = fc.record({
  at: fc.nat(),
  kind: fc.constantFrom('insert', 'delete', 'replace', 'duplicate', 'truncate'),
  text: fc.oneof(fc.constantFrom('{', '}', '[', ']', '"', ',', ':', '\\', 'e', '-', '.', '0', '9', ' ', '\u0000', '\ud800', 'é', 'null', '"id":2,'), fc.string({ maxLength: 3 })),
  length: fc.integer({ min: 1, max: 8 }),
})

function mutate(text: string, ms: Mutation[]): string {
  for (const m of ms) {
    const at = text.length === 0 ? 0 : m.at % (text.length + 1)
    if (m.kind === 'insert') text = text.slice(0, at) + m.text + text.slice(at)
    else if (m.kind === 'delete') text = text.slice(0, at) + text.slice(at + m.length)
    else if (m.kind === 'replace') text = text.slice(0, at) + m.text + text.slice(at + m.text.length)
    else if (m.kind === 'duplicate') text = text.slice(0, at + m.length) + text.slice(at, at + m.length) + text.slice(at + m.length)
    else text = text.slice(0, at)
  }
  return text
}

const line = fc.oneof(
  { weight: 6, arbitrary: typedRecordLine },
  { weight: 2, arbitrary: fc.tuple(typedRecordLine, fc.array(mutation, { minLength: 1, maxLength: 2 })).map(([l, ms]) => mutate(l, ms)) },
  { weight: 4, arbitrary: recordLine },
  { weight: 3, arbitrary: fc.tuple(recordLine, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([l, ms]) => mutate(l, ms)) },
  { weight: 2, arbitrary: value },
  { weight: 1, arbitrary: fc.tuple(value, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([l, ms]) => mutate(l, ms)) },
  { weight: 1, arbitrary: nested },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 1, arbitrary: huge },
)

describe(`generated JSON lines (${SECONDS} s; STRATA_FUZZ_SECONDS to change)`, () => {
  it(
    'each line is a row or a StrataInputError naming its position; the parser agrees with JSON.parse; accepted rows read back unchanged',
    () => {
      let runs = 0
      fc.assert(
        fc.property(line, (input) => {
          runs++
          check(input)
        }),
        // as many runs as fit in the time; a failure prints the input and the seed to replay it
        { numRuns: Number.MAX_SAFE_INTEGER, interruptAfterTimeLimit: SECONDS * 1000, seed: process.env.STRATA_FUZZ_SEED ? Number(process.env.STRATA_FUZZ_SEED) : undefined },
      )
      expect(runs).toBeGreaterThan(0)
      console.info(`json-line fuzz: ${runs} lines in ${SECONDS} s`)
    },
    (SECONDS + 60) * 1000,
  )
})
