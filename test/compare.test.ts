import { describe, it, expect } from 'vitest'
import fc from 'fast-check'
import {
  compareBytes,
  compareDoubles,
  compareRows,
  compareStringsUtf8,
  compareValues,
  rowComparator,
} from '../lib/format/compare.ts'
import type { DataType, TypeRoot, Value } from '../lib/types.ts'

const t = (root: TypeRoot, extra: Partial<DataType> = {}): DataType => ({ root, nullable: true, ...extra })
const STRING = t('VARCHAR', { length: 2147483647 })
const sign = (x: number): number => (x < 0 ? -1 : x > 0 ? 1 : 0)

const utf8 = new TextEncoder()
/** Model: unsigned lexicographic order of the UTF-8 bytes TextEncoder writes. */
function modelStringOrder(a: string, b: string): number {
  const x = utf8.encode(a)
  const y = utf8.encode(b)
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] < y[i] ? -1 : 1
  return sign(x.length - y.length)
}

// Characters around the places where UTF-16 and UTF-8 orders part: lone and paired surrogates,
// the private-use area and U+FFFD/U+FFFF just below the supplementary planes.
const edgeUnit = fc.constantFrom(
  'a', 'z', '\u0000', '\u007f', '\u0080', 'é', '\u07ff', '\u0800', '日',
  '\uD7FF', '\uD800', '\uDBFF', '\uDC00', '\uDFFF', '\uE000', '\uFFFD', '\uFFFF',
  '\u{10000}', '😀', '😁', '\u{10FFFF}',
)
const unit = fc.oneof(
  { arbitrary: edgeUnit, weight: 3 },
  { arbitrary: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)), weight: 1 },
  { arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }), weight: 1 },
)
const str = fc.string({ unit, maxLength: 6 })

describe('compareStringsUtf8', () => {
  it('orders by unsigned UTF-8 bytes where UTF-16 code units disagree', () => {
    // U+FFFD is EF BF BD, U+1F600 is F0 9F 98 80: the BMP sorts first in UTF-8, not in UTF-16.
    expect('😀' < '\uFFFD').toBe(true)
    expect(compareStringsUtf8('\uFFFD', '😀')).toBe(-1)
    expect(compareStringsUtf8('\uE000', '\u{10000}')).toBe(-1)
    expect(compareStringsUtf8('x\uFFFF', 'x😀')).toBe(-1)
    expect(compareStringsUtf8('😀', '😁')).toBe(-1)
    expect(compareStringsUtf8('a', 'é')).toBe(-1)
    expect(compareStringsUtf8('', 'a')).toBe(-1)
    expect(compareStringsUtf8('ab', 'a')).toBe(1)
    expect(compareStringsUtf8('same', 'same')).toBe(0)
  })

  it('treats lone surrogates as the U+FFFD that TextEncoder writes', () => {
    expect(compareStringsUtf8('\uD800', '\uFFFD')).toBe(0)
    expect(compareStringsUtf8('\uDC00', '\uDFFF')).toBe(0)
    expect(compareStringsUtf8('\uD83D', '\uD83D\uDE00')).toBe(-1)
    expect(compareStringsUtf8('\uD83D\uDE00', '\uD83DA')).toBe(1)
  })

  it('agrees with comparing the UTF-8 encodings (property)', () => {
    fc.assert(
      fc.property(str, str, (a, b) => {
        expect(compareStringsUtf8(a, b)).toBe(modelStringOrder(a, b))
      }),
      { numRuns: 5000 },
    )
  })

  it('agrees on strings sharing a long prefix (property)', () => {
    fc.assert(
      fc.property(str, str, str, (p, a, b) => {
        expect(compareStringsUtf8(p + a, p + b)).toBe(modelStringOrder(p + a, p + b))
      }),
      { numRuns: 2000 },
    )
  })
})

describe('compareBytes and compareDoubles', () => {
  it('bytes are unsigned and a prefix sorts first', () => {
    expect(compareBytes(new Uint8Array([0x7f]), new Uint8Array([0x80]))).toBe(-1)
    expect(compareBytes(new Uint8Array([0xff]), new Uint8Array([0x00, 0x00]))).toBe(1)
    expect(compareBytes(new Uint8Array([1]), new Uint8Array([1, 0]))).toBe(-1)
    expect(compareBytes(new Uint8Array([]), new Uint8Array([]))).toBe(0)
  })

  it("doubles follow Java's Double.compare: -0.0 < 0.0, NaN last and equal to itself", () => {
    expect(compareDoubles(-0, 0)).toBe(-1)
    expect(compareDoubles(0, -0)).toBe(1)
    expect(compareDoubles(Number.NaN, Number.NaN)).toBe(0)
    expect(compareDoubles(Number.NaN, Infinity)).toBe(1)
    expect(compareDoubles(-Infinity, Number.NaN)).toBe(-1)
    expect(compareDoubles(1.5, 2)).toBe(-1)
  })
})

describe('compareValues', () => {
  const samples: [DataType, Value, Value][] = [
    [t('BOOLEAN'), false, true],
    [t('TINYINT'), -128, 127],
    [t('INT'), -1, 0],
    [t('DATE'), 19000, 19844],
    [t('BIGINT'), -(1n << 63n), (1n << 63n) - 1n],
    [t('DECIMAL', { precision: 30, scale: 2 }), -(10n ** 29n), 1n],
    [t('TIMESTAMP', { precision: 6 }), -1n, 0n],
    [t('DOUBLE'), -Infinity, -0],
    [t('FLOAT'), 1.5, Number.NaN],
    [STRING, 'abc', 'abd'],
    [t('CHAR', { length: 3 }), 'ab', 'abc'],
    [t('VARBINARY'), new Uint8Array([1, 2]), new Uint8Array([1, 0xff])],
  ]
  for (const [type, lo, hi] of samples) {
    it(`${type.root}: nulls first, then ascending`, () => {
      expect(compareValues(type, lo, hi)).toBe(-1)
      expect(compareValues(type, hi, lo)).toBe(1)
      expect(compareValues(type, lo, lo)).toBe(0)
      expect(compareValues(type, null, lo)).toBe(-1)
      expect(compareValues(type, hi, null)).toBe(1)
      expect(compareValues(type, null, null)).toBe(0)
    })
  }
})

// ---------- row comparator properties ----------

const fieldTypes: DataType[] = [t('INT'), STRING, t('BIGINT'), t('DOUBLE'), t('VARBINARY'), t('BOOLEAN')]
function valueArb(type: DataType): fc.Arbitrary<Value> {
  const v = ((): fc.Arbitrary<Value> => {
    switch (type.root) {
      case 'INT':
        return fc.integer({ min: -3, max: 3 })
      case 'BIGINT':
        return fc.bigInt({ min: -3n, max: 3n })
      case 'DOUBLE':
        return fc.constantFrom(-Infinity, -1.5, -0, 0, 2, Infinity, Number.NaN)
      case 'VARBINARY':
        return fc.uint8Array({ maxLength: 3, max: 3 }).map((b) => b.map((x) => x * 85))
      case 'BOOLEAN':
        return fc.boolean()
      default:
        return fc.string({ unit: edgeUnit, maxLength: 3 })
    }
  })()
  return fc.option(v, { nil: null, freq: 4 })
}

const typesArb = fc.subarray(fieldTypes, { minLength: 1 }).chain((types) =>
  fc.shuffledSubarray(types, { minLength: types.length, maxLength: types.length }),
)
const rowsArb = typesArb.chain((types) =>
  fc.tuple(fc.constant(types), fc.array(fc.tuple(...types.map(valueArb)) as fc.Arbitrary<Value[]>, { minLength: 3, maxLength: 12 })),
)

/** Model: field-wise, nulls first, strings by encoded bytes, numbers by Java's compare. */
function modelRowOrder(types: DataType[], a: Value[], b: Value[]): number {
  for (let i = 0; i < types.length; i++) {
    const x = a[i]
    const y = b[i]
    let c: number
    if (x === null || y === null) c = x === y ? 0 : x === null ? -1 : 1
    else if (typeof x === 'string') c = modelStringOrder(x, y as string)
    else if (x instanceof Uint8Array) c = modelStringOrder(Buffer.from(x).toString('latin1'), Buffer.from(y as Uint8Array).toString('latin1'))
    else if (typeof x === 'number') c = Number.isNaN(x) || Number.isNaN(y as number) || x === 0 ? compareDoubles(x, y as number) : sign(x - (y as number))
    else if (typeof x === 'boolean') c = Number(x) - Number(y)
    else c = (x as bigint) < (y as bigint) ? -1 : (x as bigint) > (y as bigint) ? 1 : 0
    if (c !== 0) return c
  }
  return 0
}

describe('rowComparator / compareRows (properties)', () => {
  it('agree with each other and with the model', () => {
    fc.assert(
      fc.property(rowsArb, ([types, rows]) => {
        const cmp = rowComparator(types)
        for (const a of rows) {
          for (const b of rows) {
            const c = cmp(a, b)
            expect(c).toBe(compareRows(types, a, b))
            expect(sign(c)).toBe(sign(modelRowOrder(types, a, b)))
          }
        }
      }),
      { numRuns: 300 },
    )
  })

  it('are antisymmetric, reflexive and transitive', () => {
    fc.assert(
      fc.property(rowsArb, ([types, rows]) => {
        const cmp = rowComparator(types)
        for (const a of rows) {
          expect(cmp(a, a)).toBe(0)
          for (const b of rows) {
            expect(sign(cmp(a, b)) + sign(cmp(b, a))).toBe(0)
            for (const c of rows) {
              if (cmp(a, b) <= 0 && cmp(b, c) <= 0) expect(cmp(a, c)).toBeLessThanOrEqual(0)
            }
          }
        }
      }),
      { numRuns: 200 },
    )
  })

  it('sorting with it leaves every adjacent pair in order', () => {
    fc.assert(
      fc.property(rowsArb, ([types, rows]) => {
        const cmp = rowComparator(types)
        const sorted = [...rows].sort(cmp)
        for (let i = 1; i < sorted.length; i++) expect(cmp(sorted[i - 1], sorted[i])).toBeLessThanOrEqual(0)
      }),
    )
  })

  it('handles zero, one, two and many fields', () => {
    expect(rowComparator([])([], [])).toBe(0)
    expect(rowComparator([t('INT')])([1], [2])).toBe(-1)
    expect(rowComparator([t('INT'), STRING])([1, 'b'], [1, 'a'])).toBe(1)
    expect(rowComparator([t('INT'), STRING, t('BIGINT')])([1, 'a', null], [1, 'a', 0n])).toBe(-1)
    expect(compareRows([t('INT'), STRING, t('BIGINT')], [1, 'a', 5n], [1, 'a', 5n])).toBe(0)
  })
})
