// What a JSON value becomes in each column type: refused with a message naming the field
// and the value, or stored exactly (docs/operations.md, "Values in JSON lines"). The
// hostile inputs of issue 16 first (exponents that hung or crashed the writer, values
// changed without a word), then properties: an accepted value is never changed on its way
// in, and every value a table stores comes back in through its own JSON text.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { JsonNumber, parseJsonLine } from '../lib/table/json-line.ts'
import { formatDecimal, recordFromJson, recordFromJsonLine, valueFromJson, valueToJson } from '../lib/table/json-values.ts'
import { describeSchema, createSchema } from '../lib/table/schema.ts'
import { parseDataType } from '../lib/format/data-type.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { DataField, Value } from '../lib/types.ts'

const field = (type: string, name = 'v'): DataField => ({ id: 0, name, type: parseDataType(type, 'test') })
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
        { name: 'b', type: 'BYTES' },
        { name: 'ts', type: 'TIMESTAMP(3)' },
        { name: 'day', type: 'DATE' },
      ],
      primaryKeys: ['dt', 'id'],
      partitionKeys: ['dt'],
    },
    0,
  ),
)
const line = (extra: string) => `{"dt":"2024-05-01","id":1${extra}}`

/** The StrataInputError `fn` throws (fails the test on any other outcome). */
function inputError(fn: () => unknown): StrataInputError {
  try {
    fn()
  } catch (e) {
    if (e instanceof StrataInputError) return e
    throw new Error(`expected a StrataInputError, got ${(e as Error).name}: ${(e as Error).message}`)
  }
  throw new Error('expected a StrataInputError, got a value')
}

describe('exponents are bounded before any power is computed (issue 16)', () => {
  it.each(['1e400000000', '1e9999999999', '1e99999999999999999999999999', '-1e400000000', '1E+400000000'])('DECIMAL %s is refused naming the field and the value', (text) => {
    for (const input of [line(`,"price":"${text}"`), line(`,"price":${text}`)]) {
      const e = inputError(() => recordFromJsonLine(view, input, 'line 4'))
      expect(e.message).toContain(`line 4: field 'price' (DECIMAL(10, 2)) expected a decimal number with at most 8 integer digits, got `)
      expect(e.message).toContain(text)
    }
  })

  it.each(['1e-400000000', '5e-9999999999', '1.5e-99999999999999999999'])('DECIMAL %s (digits below the scale) is refused, not rounded to 0', (text) => {
    const e = inputError(() => recordFromJsonLine(view, line(`,"price":"${text}"`), 'line 1'))
    expect(e.message).toMatch(/field 'price' \(DECIMAL\(10, 2\)\) expected a decimal number with at most 2 fraction digits/)
  })

  it('zero with any exponent is zero, and an exponent that lands inside the scale is exact', () => {
    expect(recordFromJsonLine(view, line(',"price":"0e999999999999"'), 'x').row[2]).toBe(0n)
    expect(recordFromJsonLine(view, line(',"price":0.00e-99999999999'), 'x').row[2]).toBe(0n)
    expect(recordFromJsonLine(view, line(',"price":"1234000e-5"'), 'x').row[2]).toBe(1234n)
    expect(recordFromJsonLine(view, line(',"price":1.5e7'), 'x').row[2]).toBe(1_500_000_000n)
  })

  it.each([
    ['id', '1e400', "field 'id' (BIGINT) expected an integer in the 64-bit range, got 1e400"],
    ['id', '-1e9999999999', "field 'id' (BIGINT) expected an integer in the 64-bit range, got -1e9999999999"],
    ['id', '1.5', "field 'id' (BIGINT) expected an integer, got 1.5"],
    ['n', '1e10', "field 'n' (INT) expected an integer in [-2147483648, 2147483647], got 1e10"],
    ['n', '1.0000000000000000001', "field 'n' (INT) expected an integer in [-2147483648, 2147483647], got 1.0000000000000000001"],
    ['ts', '1e99999999', "field 'ts' (TIMESTAMP(3)) expected a timestamp"],
    ['day', '1e99999999', "field 'day' (DATE) expected a date"],
  ])('%s = %s is refused naming the value as written', (name, text, message) => {
    const e = inputError(() => recordFromJsonLine(view, `{"dt":"2024-05-01","id":1,"${name}":${text}}`.replace('"id":1,"id"', '"id"'), 'line 2'))
    expect(e.message).toContain(`line 2: ${message}`)
  })

  it('a BIGINT given 1e400 through JSON.parse names Infinity, not null', () => {
    const e = inputError(() => recordFromJson(view, JSON.parse(line(',"x":1,"price":1').replace('"id":1', '"id":1e400')), 'line 1'))
    expect(e.message).toBe("line 1: field 'id' (BIGINT) expected an integer (write integers beyond 2^53 as a string of digits), got Infinity")
  })
})

describe('values are stored exactly or refused, never changed (issue 16)', () => {
  it.each([
    ['x', '1e400', "field 'x' (DOUBLE) expected a finite number within DOUBLE range"],
    ['x', '-1e400', "field 'x' (DOUBLE) expected a finite number within DOUBLE range"],
    ['f', '1e39', "field 'f' (FLOAT) expected a finite number within FLOAT range"],
    ['f', '-3.5e38', "field 'f' (FLOAT) expected a finite number within FLOAT range"],
    ['price', '"1.005"', "field 'price' (DECIMAL(10, 2)) expected a decimal number with at most 2 fraction digits"],
    ['price', '1.005', "field 'price' (DECIMAL(10, 2)) expected a decimal number with at most 2 fraction digits"],
    ['b', '"A"', "field 'b' (BYTES) expected standard base64 with '=' padding"],
    ['b', '"QQ"', "field 'b' (BYTES) expected standard base64 with '=' padding"],
    ['b', '"QR=="', "field 'b' (BYTES) expected standard base64 with '=' padding"],
    ['b', '"AB=C"', "field 'b' (BYTES) expected standard base64 with '=' padding"],
    ['ts', '"2024-05-01 10:00:00.1234"', "field 'ts' (TIMESTAMP(3)) expected a timestamp"],
    ['dt', '"\\ud800"', "field 'dt' (STRING) expected a string of whole Unicode characters"],
  ])('%s = %s is refused', (name, json, message) => {
    const e = inputError(() => recordFromJsonLine(view, `{"dt":"2024-05-01","id":1,"${name}":${json}}`.replace(/"dt":"2024-05-01","id":1,"dt"/, '"id":1,"dt"'), 'line 9'))
    expect(e.message).toContain(`line 9: ${message}`)
  })

  it('what fits is kept exactly', () => {
    const r = recordFromJsonLine(view, line(',"price":"1.500","x":1e-400,"f":3.4e38,"b":"QQ==","ts":"2024-05-01 10:00:00.123000","n":2.0'), 'x').row
    expect(r[2]).toBe(150n)
    expect(r[3]).toBe(0) // below the smallest double: rounded to nearest, as every float is
    expect(r[4]).toBe(Math.fround(3.4e38))
    expect(r[5]).toBe(2)
    expect(r[6]).toEqual(new Uint8Array([0x41]))
    expect(r[7]).toBe(1714557600123000n)
    expect(recordFromJsonLine(view, line(',"x":"Infinity","f":"NaN"'), 'x').row.slice(3, 5)).toEqual([Infinity, NaN])
  })

  it('number literals keep every digit: a BIGINT beyond 2^53 and a long DECIMAL', () => {
    const wide = describeSchema(createSchema({ fields: [{ name: 'id', type: 'BIGINT' }, { name: 'd', type: 'DECIMAL(38, 2)' }], primaryKeys: ['id'] }, 0))
    const r = recordFromJsonLine(wide, '{"id":9223372036854775807,"d":123456789012345678901234567890123456.78}', 'x').row
    expect(r).toEqual([9223372036854775807n, 12345678901234567890123456789012345678n])
    expect(inputError(() => recordFromJsonLine(wide, '{"id":9223372036854775808}', 'line 1')).message).toContain("field 'id' (BIGINT) expected an integer in the 64-bit range, got 9223372036854775808")
  })

  it('a key given twice is refused naming the key and where it is', () => {
    const e = inputError(() => recordFromJsonLine(view, '{"dt":"2024-05-01","id":2,"id":3}', 'line 5'))
    expect(e.message).toBe('line 5: malformed JSON at character 27: key "id" appears twice in one object')
  })

  it('an absent column named like an Object method is an absent value, not the method', () => {
    const odd = describeSchema(createSchema({ fields: [{ name: 'id', type: 'INT' }, { name: 'toString', type: 'STRING' }, { name: 'constructor', type: 'INT' }], primaryKeys: ['id'] }, 0))
    expect(recordFromJson(odd, { id: 1 }, 'x').row).toEqual([1, null, null])
    expect(recordFromJsonLine(odd, '{"id":1}', 'x').row).toEqual([1, null, null])
  })

  it('a deeply nested value is refused with a StrataInputError, by both parsers', () => {
    const deep = '['.repeat(100_000) + ']'.repeat(100_000)
    expect(inputError(() => recordFromJsonLine(view, line(`,"x":${deep}`), 'line 1')).message).toMatch(/^line 1: malformed JSON at character \d+: objects and arrays nested deeper than 64 levels$/)
    expect(inputError(() => recordFromJson(view, JSON.parse(line(`,"x":${deep}`)), 'line 1')).message).toMatch(/^line 1: field 'x' \(DOUBLE\) expected a number, got \[\[\[/)
  })

  it('a huge string is described by its start, not copied into the message', () => {
    const e = inputError(() => recordFromJsonLine(view, line(`,"n":"${'9'.repeat(5_000_000)}"`), 'line 1'))
    expect(e.message.length).toBeLessThan(200)
    // megabytes of base64, of decimal digits, of year digits: checked in linear time, no regex recursion
    const bytes = Buffer.alloc(4_000_000, 7)
    // compared as one boolean: a deep equality walks 4 million elements one by one (seconds)
    expect(Buffer.from(valueFromJson(field('BYTES'), bytes.toString('base64'), 'x') as Uint8Array).equals(bytes)).toBe(true)
    expect(inputError(() => valueFromJson(field('DECIMAL(10, 2)'), `0.${'0'.repeat(5_000_000)}1`, 'x')).message).toContain('at most 2 fraction digits')
    expect(inputError(() => valueFromJson(field('TIMESTAMP(6)'), `${'9'.repeat(5_000_000)}-01-01`, 'x')).message).toContain('expected a timestamp')
  })
})

/** JSON text of a value as the CLI's `read --json` prints it: what a user would feed back in. */
const typed = <T>(type: string, arb: fc.Arbitrary<T>) => ({ type, arb })
const TYPES = [
  typed('BIGINT', fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })),
  typed('INT', fc.integer()),
  typed('TINYINT', fc.integer({ min: -128, max: 127 })),
  typed('DOUBLE', fc.double()),
  typed('FLOAT', fc.float()),
  typed('DECIMAL(38, 10)', fc.bigInt({ min: -(10n ** 38n) + 1n, max: 10n ** 38n - 1n })),
  typed('DECIMAL(5, 5)', fc.bigInt({ min: -99999n, max: 99999n })),
  typed('STRING', fc.string({ unit: 'grapheme' })),
  typed('BYTES', fc.uint8Array().map((b) => new Uint8Array(b))),
  // the whole 32-bit day count and 64-bit microsecond range, past JavaScript's Date (found by the JSON-line fuzzer)
  typed('DATE', fc.oneof(fc.integer({ min: -719162, max: 2932896 }), fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }))),
  typed('TIMESTAMP(6)', fc.oneof(fc.bigInt({ min: -62135596800000000n, max: 253402300799999999n }), fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }))),
  typed('TIMESTAMP(0)', fc.bigInt({ min: -62135596800n, max: 253402300799n }).map((s) => s * 1_000_000n)),
]

describe('every stored value comes back in through its JSON text (property)', () => {
  it.each(TYPES)('$type', ({ type, arb }) => {
    const f = field(type)
    fc.assert(
      fc.property(arb as fc.Arbitrary<Value>, (v) => {
        const text = valueToJson(f.type, v)
        const back = valueFromJson(f, (parseJsonLine(`{"v":${text}}`, 'x') as Record<string, unknown>).v, 'x')
        if (typeof v === 'number' && Number.isNaN(v)) expect(back).toBeNaN()
        else expect(back).toEqual(type === 'FLOAT' ? Math.fround(v as number) : v)
      }),
      { numRuns: 200 },
    )
  })
})

describe('an accepted decimal text is never rounded (property)', () => {
  const decimalText = fc
    .tuple(fc.constantFrom('', '-', '+'), fc.stringMatching(/^\d{0,14}$/), fc.option(fc.stringMatching(/^\d{0,6}$/), { nil: undefined }), fc.option(fc.integer({ min: -12, max: 12 }), { nil: undefined }))
    .map(([sign, int, frac, exp]) => `${sign}${int}${frac !== undefined ? `.${frac}` : ''}${exp !== undefined ? `e${exp}` : ''}`)
  it('DECIMAL(12, 3): accepted values print back as the same number', () => {
    const f = field('DECIMAL(12, 3)')
    fc.assert(
      fc.property(decimalText, (text) => {
        let v: Value
        try {
          v = valueFromJson(f, text, 'x')
        } catch (e) {
          expect(e).toBeInstanceOf(StrataInputError)
          return
        }
        // the same number, compared as exact fractions with a common scale
        expect(formatDecimal(v as bigint, 3)).toBe(exactPlain(text, 3))
      }),
      { numRuns: 500 },
    )
  })
})

/** A decimal text as a plain string with `scale` fraction digits, by string shifting only. */
function exactPlain(text: string, scale: number): string {
  const m = /^([+-]?)(\d*)(?:\.(\d*))?(?:e(-?\d+))?$/.exec(text)!
  let digits = (m[2] ?? '') + (m[3] ?? '')
  let point = (m[2] ?? '').length + Number(m[4] ?? 0)
  if (point < 0) {
    digits = '0'.repeat(-point) + digits
    point = 0
  }
  digits = digits.padEnd(point + scale, '0')
  const int = digits.slice(0, point).replace(/^0+/, '') || '0'
  const frac = digits.slice(point, point + scale)
  const zero = /^0*$/.test(int + frac)
  return `${m[1] === '-' && !zero ? '-' : ''}${int}.${frac}`
}

it('JsonNumber keeps its text', () => {
  expect(new JsonNumber('1e400').text).toBe('1e400')
})
