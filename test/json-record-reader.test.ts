// The bulk writer's JSON line reader (lib/write/json-record-reader.ts) reads every line
// exactly as the strict reader (recordFromJsonLine) does: the same row kind and values, or
// the same error message. Random lines of plain and not-so-plain shape, against a schema
// with every type the fast path converts itself and several it hands on.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { recordFromJsonLine } from '../lib/table/json-values.ts'
import { createSchema, describeSchema } from '../lib/table/schema.ts'
import { jsonRecordReader } from '../lib/write/json-record-reader.ts'

const view = describeSchema(
  createSchema({
    fields: [
      { name: 'id', type: 'BIGINT' },
      { name: 't', type: 'TINYINT' },
      { name: 'i', type: 'INT' },
      { name: 'd', type: 'DECIMAL(10, 2)' },
      { name: 'w', type: 'DECIMAL(38, 10)' },
      { name: 'z', type: 'DECIMAL(5, 0)' },
      { name: 's', type: 'STRING' },
      { name: 'v', type: 'VARCHAR(3)' },
      { name: 'ts', type: 'TIMESTAMP(3)' },
      { name: 'day', type: 'DATE' },
      { name: 'b', type: 'BOOLEAN' },
      { name: 'x', type: 'DOUBLE' },
      { name: 'n', type: 'INT NOT NULL' },
    ],
    primaryKeys: ['id'],
  }),
)
const KEYS = [...view.fields.map((f) => f.name), '_kind', 'other', '__proto__']

function outcome(read: (line: string, where: string) => unknown, line: string): unknown {
  try {
    return { ok: read(line, 'line 7') }
  } catch (e) {
    return { error: (e as Error).message }
  }
}

const digits = (min: number, max: number) => fc.stringMatching(new RegExp(`^[0-9]{${min},${max}}$`))
const numberText = fc.oneof(
  fc.integer().map(String),
  fc.bigInt({ min: -(2n ** 70n), max: 2n ** 70n }).map(String),
  fc.tuple(fc.constantFrom('', '-'), digits(1, 22), fc.option(digits(0, 14)), fc.option(fc.tuple(fc.constantFrom('e', 'E'), fc.constantFrom('', '+', '-'), digits(0, 3)))).map(
    ([sign, int, frac, exp]) => `${sign}${int}${frac === null ? '' : `.${frac}`}${exp === null ? '' : exp.join('')}`,
  ),
  fc.constantFrom('0', '-0', '00', '01', '-', '1.', '.5', '1e', '2147483647', '2147483648', '-2147483648', '127', '128', '-128', '99999999.99', '100000000', '9223372036854775807', '9223372036854775808', '1.005', '1.50', '0.00', '-0.5'),
)
const stringBody = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.constantFrom('2024-05-01', '2024-02-30', '2024-05-01 10:00:00.123', '2024-05-01 10:00:00.1234', '2024-05-01T23:59:59', ' 2024-05-01', '12.5', '-1.25', '1e3', '+1', 'NaN', 'abc', 'abcd', 'é', '\\n', '\\u0041', '\\"', '\t', 'a"b', '+I', '-D', '-U', '+U', '+X'),
)
const timestamp = fc.oneof(
  fc.stringMatching(/^[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?$/),
  fc.tuple(fc.date({ min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true }), fc.constantFrom('', '.0', '.1', '.123', '.1230', '.000100', '.0001', '.1234567', ''), fc.constantFrom(' ', 'T', 'x')).map(([d, frac, sep]) => d.toISOString().slice(0, 19).replace('T', sep) + frac),
  fc.constantFrom('2024-02-29 00:00:00', '2023-02-29 00:00:00', '1900-02-29 12:00:00', '2000-02-29 23:59:59.999999', '1969-12-31 23:59:59.999', '0000-01-01 00:00:00', '2024-05-01 24:00:00', '2024-05-01 10:60:00', '2024-13-01 10:00:00', '2024-05-01 10:00:00.', '2024-05-01 10:00', '2024-05-01'),
)
const jsonValue = fc.oneof(
  timestamp.map((s) => `"${s}"`),
  numberText,
  stringBody.map((s) => `"${s}"`),
  fc.constantFrom('true', 'false', 'null', '[]', '{}', '[1]', '{"a":1}', 'tru', 'nul', 'True'),
)
const ws = fc.constantFrom('', '', '', ' ', '\t', '  ', '\r', '\n', '\u00a0')
const member = fc.tuple(fc.constantFrom(...KEYS), ws, ws, jsonValue, ws).map(([k, a, b, v, c]) => `"${k}"${a}:${b}${v}${c}`)
const line = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(ws, fc.array(member, { maxLength: 16 }), ws, fc.constantFrom('', '', '', 'x', ',', '}')).map(([a, ms, b, tail]) => `${a}{${ms.join(',')}}${b}${tail}`) },
  // a plain, valid record with random values, and then a few characters changed
  {
    weight: 3,
    arbitrary: fc.tuple(fc.array(member, { maxLength: 4 }), fc.array(fc.tuple(fc.nat(), fc.constantFrom('"', '\\', ',', '}', '{', ':', ' ', '0', '-', 'e', '.')), { maxLength: 2 })).map(([extra, edits]) => {
      let l = `{"id":1,"n":2,${extra.join(',')}${extra.length ? ',' : ''}"s":"x"}`
      for (const [at, c] of edits) {
        const p = at % (l.length + 1)
        l = l.slice(0, p) + c + l.slice(p + 1)
      }
      return l
    }),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 30 }) },
)

describe('jsonRecordReader', () => {
  const reader = jsonRecordReader(view, (n) => `line ${n}`)
  const fast = (l: string, where: string) => reader(l, Number(where.slice(5)))
  const strict = (l: string, where: string) => recordFromJsonLine(view, l, where)

  it('reads every line as recordFromJsonLine does, values and errors alike', () => {
    fc.assert(
      fc.property(line, (l) => {
        expect(outcome(fast, l)).toEqual(outcome(strict, l))
      }),
      { numRuns: 4000 },
    )
  })

  it('reads plain lines (the fast path: integers, decimals, timestamps read in place) as recordFromJsonLine does', () => {
    const dec = (maxInt: number, maxFrac: number) =>
      fc.tuple(fc.constantFrom('', '-'), fc.constantFrom('', '0', '00'), digits(1, maxInt), fc.option(digits(1, maxFrac))).map(([sign, zeros, int, frac]) => `${sign}${zeros}${int}${frac === null ? '' : `.${frac}`}`)
    const ts = fc
      .tuple(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 31 }), fc.integer({ min: 0, max: 23 }), fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 59 }), fc.constantFrom('', '.5', '.123', '.120', '.000', '.1234', '.000000'))
      .map(([y, mo, d, h, mi, sec, f]) => `${String(y).padStart(4, '0')}-${String(mo).padStart(2, '0')}-${String(d).padStart(2, '0')} ${String(h).padStart(2, '0')}:${String(mi).padStart(2, '0')}:${String(sec).padStart(2, '0')}${f}`)
    const plainLine = fc
      .record({
        id: fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -(10n ** 16n), max: 10n ** 16n }), fc.integer()).map(String),
        t: fc.integer({ min: -200, max: 200 }).map(String),
        i: fc.oneof(fc.integer(), fc.integer({ min: -999, max: 999 })).map(String),
        d: dec(10, 3),
        w: dec(30, 12),
        z: dec(6, 1),
        ts,
        n: fc.integer({ min: -5, max: 5 }).map(String),
        quoted: fc.boolean(),
      })
      .map(({ id, t, i, d, w, z, ts, n, quoted }) => `{"id":${id},"t":${t},"i":${i},"d":${quoted ? `"${d}"` : d},"w":"${w}","z":${z},"ts":"${ts}","n":${n}}`)
    fc.assert(
      fc.property(plainLine, (l) => {
        expect(outcome(fast, l)).toEqual(outcome(strict, l))
      }),
      { numRuns: 3000 },
    )
  })

  it('takes the fast path for plain lines and gets the same values', () => {
    const l = '{"id":-9007199254740993,"t":-128,"i":2147483647,"d":"-12345678.5","w":0.0000000001,"z":"00042","s":"plain","v":"abc","ts":"2024-05-01 10:00:00.123","day":"2024-02-29","b":true,"x":1.5,"n":0,"_kind":"-D"}'
    expect(fast(l, 'line 1')).toEqual(strict(l, 'line 1'))
    expect(fast(l, 'line 1').row.slice(0, 6)).toEqual([-9007199254740993n, -128, 2147483647, -1234567850n, 1n, 42n])
  })
})
