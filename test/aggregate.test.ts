import { describe, it, expect } from 'vitest'
import fc from 'fast-check'
import { StrataInputError } from '../lib/errors.ts'
import type { DataType, TypeRoot, Value } from '../lib/types.ts'
import { createFieldAggregator, resolveAggregateFunction, type AggregateFunctionName, type FieldAggregatorOptions } from '../lib/merge/aggregate.ts'
import { formatDataType as typeToString } from '../lib/format/data-type.ts'

const t = (root: TypeRoot, extra: Partial<DataType> = {}): DataType => ({ root, nullable: true, ...extra })
const INT = t('INT')
const BIGINT = t('BIGINT')
const STRING = t('VARCHAR', { length: 2147483647 })
const DEC = (p: number, s: number) => t('DECIMAL', { precision: p, scale: s })

/** Folds (kind, value) steps through a fresh aggregator: '+' adds, '-' retracts. */
function fold(name: AggregateFunctionName, type: DataType, steps: [('+' | '-'), Value][], opts: FieldAggregatorOptions = {}): Value {
  const a = createFieldAggregator(name, 'f', type, opts)
  let acc: Value = null
  for (const [op, v] of steps) acc = op === '+' ? a.agg(acc, v) : a.retract(acc, v)
  return acc
}

describe('sum', () => {
  it('adds, skips nulls and starts from the first non-null value', () => {
    expect(fold('sum', INT, [['+', null], ['+', 3], ['+', null], ['+', 4]])).toBe(7)
    expect(fold('sum', INT, [['+', null]])).toBeNull()
  })
  it('retracts; retracting from nothing gives the negated value', () => {
    expect(fold('sum', INT, [['+', 10], ['-', 3], ['-', null]])).toBe(7)
    expect(fold('sum', INT, [['-', 5]])).toBe(-5)
    expect(fold('sum', BIGINT, [['-', 5n], ['+', 1n]])).toBe(-4n)
  })
  it('wraps like Java integer arithmetic', () => {
    expect(fold('sum', INT, [['+', 2147483647], ['+', 1]])).toBe(-2147483648)
    expect(fold('sum', INT, [['-', -2147483648]])).toBe(-2147483648)
    expect(fold('sum', t('TINYINT'), [['+', 127], ['+', 1]])).toBe(-128)
    expect(fold('sum', t('SMALLINT'), [['+', 32767], ['+', 2]])).toBe(-32767)
    expect(fold('sum', BIGINT, [['+', 9223372036854775807n], ['+', 1n]])).toBe(-9223372036854775808n)
  })
  it('rounds FLOAT to single precision and keeps DOUBLE', () => {
    expect(fold('sum', t('FLOAT'), [['+', Math.fround(0.1)], ['+', Math.fround(0.2)]])).toBe(Math.fround(Math.fround(0.1) + Math.fround(0.2)))
    expect(fold('sum', t('DOUBLE'), [['+', 0.1], ['+', 0.2]])).toBe(0.1 + 0.2)
  })
  it('DECIMAL sums unscaled values and becomes null past the precision', () => {
    expect(fold('sum', DEC(5, 2), [['+', 12345n], ['+', 55n]])).toBe(12400n)
    // 999.99 + 0.01 does not fit DECIMAL(5, 2): null, and the next value starts over
    expect(fold('sum', DEC(5, 2), [['+', 99999n], ['+', 1n]])).toBeNull()
    expect(fold('sum', DEC(5, 2), [['+', 99999n], ['+', 1n], ['+', 7n]])).toBe(7n)
    expect(fold('sum', DEC(5, 2), [['+', -50000n], ['-', 49999n]])).toBe(-99999n)
    expect(fold('sum', DEC(5, 2), [['+', -50000n], ['-', 50000n]])).toBeNull()
  })
  it('matches an arithmetic model over INT and BIGINT (wrapping)', () => {
    const step = <T>(v: fc.Arbitrary<T>) => fc.tuple(fc.constantFrom<'+' | '-'>('+', '-'), fc.option(v, { nil: null }))
    fc.assert(
      fc.property(fc.array(step(fc.integer())), (steps) => {
        let total = 0n
        let any = false
        for (const [op, v] of steps) {
          if (v === null) continue
          any = true
          total += op === '+' ? BigInt(v) : -BigInt(v)
        }
        expect(fold('sum', INT, steps)).toBe(any ? Number(BigInt.asIntN(32, total)) : null)
      }),
    )
    fc.assert(
      fc.property(fc.array(step(fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n }))), (steps) => {
        let total = 0n
        let any = false
        for (const [op, v] of steps) {
          if (v === null) continue
          any = true
          total += op === '+' ? v : -v
        }
        expect(fold('sum', BIGINT, steps)).toBe(any ? BigInt.asIntN(64, total) : null)
      }),
    )
  })
})

describe('product', () => {
  it('multiplies, wraps and skips nulls', () => {
    expect(fold('product', INT, [['+', 3], ['+', null], ['+', -4]])).toBe(-12)
    expect(fold('product', INT, [['+', 65536], ['+', 65536]])).toBe(0)
    expect(fold('product', t('TINYINT'), [['+', 16], ['+', 16]])).toBe(0)
    expect(fold('product', BIGINT, [['+', 2n ** 62n], ['+', 4n]])).toBe(0n)
  })
  it('retracts by dividing (Java truncating division); from nothing it keeps the value', () => {
    expect(fold('product', INT, [['+', 7], ['+', 6], ['-', 4]])).toBe(10)
    expect(fold('product', INT, [['+', -7], ['-', 2]])).toBe(-3)
    expect(fold('product', INT, [['+', -2147483648], ['-', -1]])).toBe(-2147483648)
    expect(fold('product', INT, [['-', 5]])).toBe(5)
    expect(() => fold('product', INT, [['+', 5], ['-', 0]])).toThrow(/divides by zero/)
    expect(fold('product', t('DOUBLE'), [['+', 1], ['-', 0]])).toBe(Infinity)
  })
  it('DECIMAL rounds half up to the scale and divides only exactly', () => {
    // 1.25 * 1.25 = 1.5625 -> 1.56; 0.05 * 0.15 = 0.0075 -> 0.01; -0.0075 -> -0.01
    expect(fold('product', DEC(10, 2), [['+', 125n], ['+', 125n]])).toBe(156n)
    expect(fold('product', DEC(10, 2), [['+', 5n], ['+', 15n]])).toBe(1n)
    expect(fold('product', DEC(10, 2), [['+', -5n], ['+', 15n]])).toBe(-1n)
    expect(fold('product', DEC(10, 2), [['+', 4n], ['+', 1n]])).toBe(0n)
    // 99999.99 * 2 does not fit DECIMAL(7, 2)
    expect(fold('product', DEC(7, 2), [['+', 9999999n], ['+', 200n]])).toBeNull()
    // 1.00 / 8.00 = 0.125 -> 0.13; 1.00 / 3.00 has no exact quotient
    expect(fold('product', DEC(10, 2), [['+', 100n], ['-', 800n]])).toBe(13n)
    expect(fold('product', DEC(10, 2), [['+', 600n], ['-', 300n]])).toBe(200n)
    expect(() => fold('product', DEC(10, 2), [['+', 100n], ['-', 300n]])).toThrow(/Non-terminating decimal expansion/)
    expect(() => fold('product', DEC(10, 2), [['+', 100n], ['-', 0n]])).toThrow(/divides by zero/)
  })
})

describe('min and max', () => {
  it('keep the least / greatest non-null value', () => {
    expect(fold('min', INT, [['+', 5], ['+', null], ['+', 2], ['+', 9]])).toBe(2)
    expect(fold('max', INT, [['+', 5], ['+', null], ['+', 2], ['+', 9]])).toBe(9)
    expect(fold('max', INT, [['+', null]])).toBeNull()
  })
  it('order floats as Java Double.compare: NaN above all, -0.0 below 0.0', () => {
    expect(fold('max', t('DOUBLE'), [['+', 1], ['+', NaN], ['+', Infinity]])).toBeNaN()
    expect(fold('min', t('DOUBLE'), [['+', NaN], ['+', -Infinity]])).toBe(-Infinity)
    expect(Object.is(fold('min', t('DOUBLE'), [['+', 0], ['+', -0]]), -0)).toBe(true)
    expect(Object.is(fold('max', t('DOUBLE'), [['+', -0], ['+', 0]]), 0)).toBe(true)
  })
  it('order strings by UTF-8 bytes and binaries by unsigned bytes', () => {
    // U+FFFF sorts before U+1F600 in UTF-8 although its UTF-16 code unit is larger
    expect(fold('max', STRING, [['+', '\uffff'], ['+', '\u{1f600}']])).toBe('\u{1f600}')
    expect(fold('min', STRING, [['+', 'b'], ['+', 'ab']])).toBe('ab')
    const big = new Uint8Array([0x80])
    expect(fold('max', t('VARBINARY'), [['+', big], ['+', new Uint8Array([0x7f, 0xff])]])).toBe(big)
    expect(fold('min', DEC(10, 2), [['+', 5n], ['+', -7n]])).toBe(-7n)
  })
  it('match a sort-based model', () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.integer(), { nil: null })), (vs) => {
        const nn = vs.filter((v): v is number => v !== null).sort((a, b) => a - b)
        expect(fold('min', INT, vs.map((v) => ['+', v]))).toBe(nn.length ? nn[0] : null)
        expect(fold('max', INT, vs.map((v) => ['+', v]))).toBe(nn.length ? nn[nn.length - 1] : null)
      }),
    )
  })
  it('refuse retraction with Paimon message unless ignore-retract', () => {
    expect(() => fold('min', INT, [['+', 1], ['-', 1]])).toThrow(
      "Aggregate function 'min' does not support retraction, If you allow this function to ignore retraction messages, you can configure 'fields.f.ignore-retract'='true'.",
    )
    expect(() => fold('max', INT, [['-', 1]])).toThrow(StrataInputError)
    expect(fold('max', INT, [['+', 1], ['-', 1], ['+', 0]], { ignoreRetract: true })).toBe(1)
  })
})

describe('last and first values', () => {
  it('last_value takes every value, null included; a retraction clears it', () => {
    expect(fold('last_value', INT, [['+', 1], ['+', null]])).toBeNull()
    expect(fold('last_value', INT, [['+', 1], ['+', 2]])).toBe(2)
    expect(fold('last_value', INT, [['+', 1], ['-', 7]])).toBeNull()
  })
  it('last_non_null_value skips nulls; retracting a value clears it, retracting null keeps it', () => {
    expect(fold('last_non_null_value', INT, [['+', 1], ['+', null]])).toBe(1)
    expect(fold('last_non_null_value', INT, [['+', 1], ['-', 9]])).toBeNull()
    expect(fold('last_non_null_value', INT, [['+', 1], ['-', null]])).toBe(1)
  })
  it('first_value keeps the first value even when it is null; reset re-arms it', () => {
    expect(fold('first_value', INT, [['+', null], ['+', 2]])).toBeNull()
    const a = createFieldAggregator('first_value', 'f', INT)
    expect(a.agg(a.agg(null, 5), 6)).toBe(5)
    a.reset()
    expect(a.agg(null, 6)).toBe(6)
    expect(() => a.retract(6, 6)).toThrow(/'first_value' does not support retraction/)
  })
  it('first_non_null_value keeps the first non-null value', () => {
    expect(fold('first_non_null_value', INT, [['+', null], ['+', 2], ['+', 3]])).toBe(2)
    expect(() => fold('first_non_null_value', INT, [['-', 2]])).toThrow(/does not support retraction/)
    expect(fold('first_non_null_value', INT, [['+', 2], ['-', 2]], { ignoreRetract: true })).toBe(2)
  })
  it('primary-key passes the input through, on add and retract', () => {
    expect(fold('primary-key', INT, [['+', 1], ['+', 2], ['-', 3]])).toBe(3)
  })
})

describe('bool_and and bool_or', () => {
  it('combine non-null booleans', () => {
    const B = t('BOOLEAN')
    expect(fold('bool_and', B, [['+', true], ['+', null], ['+', false]])).toBe(false)
    expect(fold('bool_and', B, [['+', true], ['+', true]])).toBe(true)
    expect(fold('bool_or', B, [['+', false], ['+', null], ['+', true]])).toBe(true)
    expect(fold('bool_or', B, [['+', null]])).toBeNull()
    expect(() => fold('bool_or', B, [['-', true]])).toThrow(/'bool_or' does not support retraction/)
  })
})

describe('listagg', () => {
  it('joins non-null, non-empty strings with the delimiter', () => {
    expect(fold('listagg', STRING, [['+', 'a'], ['+', null], ['+', ''], ['+', 'b']])).toBe('a,b')
    expect(fold('listagg', STRING, [['+', ''], ['+', 'b']])).toBe('b')
    expect(fold('listagg', STRING, [['+', 'a'], ['+', 'b']], { listAggDelimiter: ' | ' })).toBe('a | b')
    expect(() => fold('listagg', STRING, [['+', 'a'], ['-', 'a']])).toThrow(/'listagg' does not support retraction/)
  })
  it('with distinct adds only tokens not yet present', () => {
    expect(fold('listagg', STRING, [['+', 'a,b'], ['+', 'b,c,,a'], ['+', 'c,d']], { distinct: true })).toBe('a,b,c,d')
    expect(fold('listagg', STRING, [['+', 'x'], ['+', 'y z x']], { distinct: true, listAggDelimiter: '' })).toBe('xyz')
  })
  it('matches a join model', () => {
    fc.assert(
      fc.property(fc.array(fc.option(fc.string(), { nil: null })), fc.string({ minLength: 1, maxLength: 2 }), (vs, d) => {
        const parts = vs.filter((v): v is string => v !== null && v.length > 0)
        const want = parts.length ? parts.join(d) : vs.some((v) => v !== null) ? '' : null
        expect(fold('listagg', STRING, vs.map((v) => ['+', v]), { listAggDelimiter: d })).toBe(want)
      }),
    )
  })
})

describe('resolveAggregateFunction', () => {
  const key = 'fields.f.aggregate-function'
  it('accepts Paimon names and the legacy first_not_null_value', () => {
    expect(resolveAggregateFunction(key, 'sum', 'f', DEC(10, 2))).toBe('sum')
    expect(resolveAggregateFunction(key, 'first_not_null_value', 'f', INT)).toBe('first_non_null_value')
    expect(resolveAggregateFunction(key, 'primary-key', 'f', STRING)).toBe('primary-key')
  })
  it('refuses count, which Paimon does not have, naming key, value and the choices', () => {
    const e = (() => {
      try {
        resolveAggregateFunction(key, 'count', 'f', BIGINT)
      } catch (err) {
        return err as Error
      }
    })()
    expect(e).toBeInstanceOf(StrataInputError)
    expect(e!.message).toContain(`'${key}' = 'count'`)
    expect(e!.message).toContain('Use unsupported aggregation: count or spell aggregate function incorrectly!')
    expect(e!.message).toContain('last_non_null_value')
    expect(() => resolveAggregateFunction(key, 'SUM', 'f', INT)).toThrow(/unsupported aggregation: SUM/)
  })
  it('refuses functions over formats it does not implement, and nested functions over other types', () => {
    expect(() => resolveAggregateFunction(key, 'collect', 'f', INT)).toThrow("Data type for collect column must be 'Array' but was 'INT'.")
    expect(() => resolveAggregateFunction(key, 'merge_map', 'f', INT)).toThrow("Data type for merge map column must be 'MAP' but was 'INT'")
    expect(() => resolveAggregateFunction(key, 'hll_sketch', 'f', t('VARBINARY'))).toThrow(/not supported by Strata/)
    expect(() => resolveAggregateFunction(key, 'rbm64', 'f', t('VARBINARY'))).toThrow(/not supported by Strata/)
  })
  it('checks the column type as Paimon factories do', () => {
    expect(() => resolveAggregateFunction(key, 'sum', 'f', STRING)).toThrow("Data type for sum column must be 'NumericType' but was 'STRING'.")
    expect(() => resolveAggregateFunction(key, 'product', 'f', t('DATE', { nullable: false }))).toThrow("but was 'DATE NOT NULL'")
    expect(() => resolveAggregateFunction(key, 'bool_and', 'f', INT)).toThrow("Data type for bool and column must be 'BooleanType' but was 'INT'.")
    expect(() => resolveAggregateFunction(key, 'listagg', 'f', t('CHAR', { length: 3 }))).toThrow("Data type for list agg column must be 'VarCharType' but was 'CHAR(3)'.")
    expect(() => resolveAggregateFunction(key, 'max', 'f', t('BOOLEAN'))).toThrow(/Incomparable type: BOOLEAN/)
  })
  it('spells types as Paimon', () => {
    expect(typeToString(t('VARCHAR', { length: 10 }))).toBe('VARCHAR(10)')
    expect(typeToString(t('VARBINARY', { length: 2147483647 }))).toBe('BYTES')
    expect(typeToString(DEC(38, 4))).toBe('DECIMAL(38, 4)')
    expect(typeToString(t('TIMESTAMP', { precision: 3, nullable: false }))).toBe('TIMESTAMP(3) NOT NULL')
  })
})
