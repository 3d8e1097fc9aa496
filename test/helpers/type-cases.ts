// Column types and their values for the type-change tests (test/type-changes.test.ts and the
// Paimon oracle in test/interop-schema.test.ts): a sample of every type root Strata has, with
// the parameters that change a cast (lengths, precisions, scales), and fast-check arbitraries
// for values a file of each type holds, and for strings meant to parse as each target type.

import fc from 'fast-check'
import { parseDataType } from '../../lib/format/data-type.ts'
import type { DataType, Value } from '../../lib/types.ts'

/** One or more types of every root, with the parameters a cast depends on. */
export const TYPE_SAMPLES = [
  'BOOLEAN',
  'TINYINT',
  'SMALLINT',
  'INT',
  'BIGINT',
  'FLOAT',
  'DOUBLE',
  'DECIMAL(3, 1)',
  'DECIMAL(10, 2)',
  'DECIMAL(38, 10)',
  'CHAR(3)',
  'CHAR(10)',
  'VARCHAR(5)',
  'STRING',
  'BINARY(3)',
  'VARBINARY(5)',
  'BYTES',
  'DATE',
  'TIMESTAMP(0)',
  'TIMESTAMP(3)',
  'TIMESTAMP(6)',
]

export const type = (s: string): DataType => parseDataType(s, 'test type')

const MIN_DAY = -719162 // 0001-01-01
const MAX_DAY = 2932896 // 9999-12-31
const MICROS_PER_DAY = 86_400_000_000n

/** A value a data file of type `t` holds (no -0: the harness's JSON input loses its sign). */
export function valueOf(t: DataType): fc.Arbitrary<Value> {
  switch (t.root) {
    case 'BOOLEAN':
      return fc.boolean()
    case 'TINYINT':
      return fc.integer({ min: -128, max: 127 })
    case 'SMALLINT':
      return fc.integer({ min: -32768, max: 32767 })
    case 'INT':
      return fc.oneof(fc.integer(), fc.integer({ min: -100000, max: 100000 }))
    case 'BIGINT':
      return fc.oneof(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }), fc.bigInt({ min: -100000n, max: 100000n }))
    case 'FLOAT':
      return fc.oneof(fc.float(), fc.integer({ min: -4000, max: 4000 }).map((n) => n / 8)).map((x) => (Object.is(x, -0) ? 0 : x))
    case 'DOUBLE':
      return fc.oneof(fc.double(), fc.integer({ min: -4000, max: 4000 }).map((n) => n / 8), fc.double({ min: -1e6, max: 1e6, noNaN: true })).map((x) => (Object.is(x, -0) ? 0 : x))
    case 'DECIMAL': {
      const bound = 10n ** BigInt(t.precision ?? 10) - 1n
      const small = bound < 1000n ? bound : 1000n
      return fc.oneof(fc.bigInt({ min: -bound, max: bound }), fc.bigInt({ min: -small, max: small }))
    }
    case 'CHAR':
    case 'VARCHAR': {
      const max = Math.min(t.length ?? 1, 12)
      return fc.oneof(fc.string({ maxLength: max }), fc.string({ maxLength: max, unit: 'grapheme' }).filter((s) => Array.from(s).length <= max))
    }
    case 'BINARY':
      return fc.uint8Array({ minLength: t.length ?? 1, maxLength: t.length ?? 1 })
    case 'VARBINARY':
      return fc.uint8Array({ maxLength: Math.min(t.length ?? 1, 12) })
    case 'DATE':
      return fc.oneof(fc.integer({ min: MIN_DAY, max: MAX_DAY }), fc.integer({ min: -1000, max: 30000 }))
    case 'TIMESTAMP': {
      const unit = 10n ** BigInt(6 - (t.precision ?? 6))
      return fc
        .oneof(fc.bigInt({ min: BigInt(MIN_DAY) * MICROS_PER_DAY, max: BigInt(MAX_DAY + 1) * MICROS_PER_DAY - 1n }), fc.bigInt({ min: -(10n ** 12n), max: 10n ** 12n }))
        .map((us) => (us >= 0n ? us - (us % unit) : us - (((us % unit) + unit) % unit)))
    }
    default:
      throw new Error(`no values for ${t.root}`)
  }
}

const pad = (n: number, w = 2) => String(n).padStart(w, '0')

/** Strings meant for a cast to `to`: what parses (numbers, dates, timestamps, boolean words), near misses and anything. */
export function stringFor(to: DataType): fc.Arbitrary<string> {
  const digits = fc.oneof(fc.integer({ min: -1000, max: 1000 }).map(String), fc.bigInt({ min: -(1n << 64n), max: 1n << 64n }).map(String))
  const decimal = fc.tuple(fc.integer({ min: -99999, max: 99999 }), fc.nat({ max: 9999 }), fc.option(fc.integer({ min: -5, max: 5 }))).map(([i, f, e]) => `${i}.${f}${e === null ? '' : `E${e}`}`)
  const date = fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 1, max: 13 }), fc.integer({ min: 1, max: 31 })).map(([y, m, d]) => `${pad(y, 4)}-${pad(m)}-${pad(d)}`)
  const time = fc.tuple(fc.integer({ min: 0, max: 24 }), fc.integer({ min: 0, max: 59 }), fc.integer({ min: 0, max: 59 }), fc.option(fc.stringMatching(/^[0-9]{1,9}$/))).map(([h, m, s, f]) => `${pad(h)}:${pad(m)}:${pad(s)}${f === null ? '' : `.${f}`}`)
  const words = fc.constantFrom('true', 'FALSE', 'Yes', 'n', 't', '1', '0', 'maybe', '', ' 1', '1.', '.5', '+7', '-', 'NaN', '-Infinity', '1e3', '0x1p3', '12abc', '2024-02-29', '2023-02-29', '2024-1-5', '2024-12-31 23:59:59.999999999')
  const common = [digits, decimal, words, fc.string({ maxLength: 8 })]
  switch (to.root) {
    case 'DATE':
      return fc.oneof(date, fc.tuple(date, time).map(([d, t]) => `${d} ${t}`), ...common)
    case 'TIMESTAMP':
      // epoch numbers within years 0001 to 9999 at any precision (beyond ±292,277 years the microseconds wrap)
      return fc.oneof(date, fc.tuple(date, time).map(([d, t]) => `${d} ${t}`), fc.integer({ min: -62135596800, max: 253402300799 }).map(String), decimal, words, fc.string({ maxLength: 8 }))
    default:
      return fc.oneof(...common)
  }
}

/** A value of `from` for a change to `to`: strings going to a parsed type are mostly ones that parse. */
export function sourceValue(from: DataType, to: DataType): fc.Arbitrary<Value> {
  const isString = from.root === 'CHAR' || from.root === 'VARCHAR'
  const parsed = !['CHAR', 'VARCHAR', 'BINARY', 'VARBINARY'].includes(to.root)
  // BIGINT epoch seconds to a TIMESTAMP: within years 0001 to 9999 (beyond ±292,277 years the microseconds wrap; an INT's never do)
  if (from.root === 'BIGINT' && to.root === 'TIMESTAMP') {
    return fc.oneof(fc.integer({ min: -62135596800, max: 253402300799 }).map(BigInt), fc.bigInt({ min: -100000n, max: 100000n }))
  }
  // floats printed as strings: values whose shortest digits JDK 17 and JDK 19+ print alike (docs/format.md "Type changes")
  if ((from.root === 'FLOAT' || from.root === 'DOUBLE') && (to.root === 'CHAR' || to.root === 'VARCHAR')) {
    return fc.oneof(fc.integer({ min: -4000, max: 4000 }).map((n) => n / 8), fc.integer({ min: -99999, max: 99999 }).map((n) => (from.root === 'FLOAT' ? Math.fround(n / 100) : n / 100)), fc.constantFrom(NaN, Infinity, -Infinity, 1e10, 1.5e-5))
  }
  if (!isString || !parsed) return valueOf(from)
  const max = from.length ?? 1
  return fc.oneof(valueOf(from), stringFor(to).filter((s) => Array.from(s).length <= max))
}
