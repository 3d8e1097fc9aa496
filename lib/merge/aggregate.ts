// Field aggregate functions of the aggregation merge engine (Paimon's FieldAggregator family,
// paimon-core mergetree/compact/aggregate/Field*Agg.java and their factories). Each works on
// one field: `agg` folds an added value (+I/+U) into the accumulator, `retract` takes a
// retracted value (-U/-D) out of it. Arithmetic follows Java's, since Paimon computes in Java:
// TINYINT/SMALLINT/INT/BIGINT wrap on overflow, FLOAT rounds to single precision, DECIMAL works
// on unscaled values of the column's scale and becomes null when a result no longer fits the
// column's precision (Paimon's Decimal.fromBigDecimal returns null).

import { StrataInputError } from '../errors.ts'
import type { DataType, TypeRoot, Value } from '../types.ts'
import { compareBytes, compareDoubles, compareStringsUtf8 } from '../format/compare.ts'
import { formatDataType } from '../format/data-type.ts'
import { NESTED_AGGREGATE_FUNCTIONS, checkNestedAggregate, isNestedAggregate, nestedAggregator, type NestedAggregateOptions } from './nested-aggregate.ts'

/** The aggregate functions Strata implements, by their Paimon identifiers. */
export const AGGREGATE_FUNCTIONS = [
  'sum',
  'product',
  'min',
  'max',
  'last_value',
  'last_non_null_value',
  'first_value',
  'first_non_null_value',
  'bool_and',
  'bool_or',
  'listagg',
  'primary-key',
  ...NESTED_AGGREGATE_FUNCTIONS,
] as const
export type AggregateFunctionName = (typeof AGGREGATE_FUNCTIONS)[number]

// Paimon's legacy spelling, still registered (FieldFirstNonNullValueAggLegacyFactory).
const ALIASES: Record<string, AggregateFunctionName> = { first_not_null_value: 'first_non_null_value' }

// Paimon functions over VARBINARY sketches/bitmaps whose serialized formats Strata does not implement.
const NOT_IMPLEMENTED = new Set(['hll_sketch', 'theta_sketch', 'rbm32', 'rbm64'])

const NUMERIC: ReadonlySet<TypeRoot> = new Set(['TINYINT', 'SMALLINT', 'INT', 'BIGINT', 'FLOAT', 'DOUBLE', 'DECIMAL'])

/** Types min and max order (InternalRowUtils.compare; not BOOLEAN nor the nested types). */
const COMPARABLE: ReadonlySet<TypeRoot> = new Set([...NUMERIC, 'DATE', 'TIMESTAMP', 'CHAR', 'VARCHAR', 'BINARY', 'VARBINARY'])


/**
 * Checks that `value`, given under option `optionKey`, names an aggregate function Strata can
 * run on a field of type `type` (with the field's options `opts`: a nested aggregate's key or
 * timestamp field), and returns its canonical name. Paimon's factory check messages are
 * quoted so a Paimon user recognises them.
 */
export function resolveAggregateFunction(optionKey: string, value: string, field: string, type: DataType, opts: NestedAggregateOptions = {}): AggregateFunctionName {
  const bad = (why: string) => new StrataInputError(`Option '${optionKey}' = '${value}' is invalid for field '${field}' (${formatDataType(type)}): ${why}`)
  const name = ALIASES[value] ?? value
  if (NOT_IMPLEMENTED.has(value)) throw bad(`aggregate function '${value}' is not supported by Strata`)
  if (!(AGGREGATE_FUNCTIONS as readonly string[]).includes(name)) {
    // Paimon registers no `count` (nor anything else outside its factory list) and refuses
    // the table with this message.
    throw bad(`Use unsupported aggregation: ${value} or spell aggregate function incorrectly! Expected one of ${AGGREGATE_FUNCTIONS.join(', ')}`)
  }
  const fn = name as AggregateFunctionName
  if (isNestedAggregate(fn)) checkNestedAggregate(fn, field, type, opts, bad)
  switch (fn) {
    case 'sum':
    case 'product':
      if (!NUMERIC.has(type.root)) throw bad(`Data type for ${fn} column must be 'NumericType' but was '${formatDataType(type)}'.`)
      break
    case 'bool_and':
    case 'bool_or':
      if (type.root !== 'BOOLEAN') throw bad(`Data type for ${fn === 'bool_and' ? 'bool and' : 'bool or'} column must be 'BooleanType' but was '${formatDataType(type)}'.`)
      break
    case 'listagg':
      if (type.root !== 'VARCHAR') throw bad(`Data type for list agg column must be 'VarCharType' but was '${formatDataType(type)}'.`)
      break
    case 'min':
    case 'max':
      // Paimon accepts the table and fails at the first merge (InternalRowUtils.compare).
      if (!COMPARABLE.has(type.root)) throw bad(`Incomparable type: ${type.root}`)
      break
  }
  return fn
}

/** One field's aggregator; stateful functions (first_value) keep their state until reset(). */
export interface FieldAggregator {
  readonly name: AggregateFunctionName
  agg(accumulator: Value, input: Value): Value
  retract(accumulator: Value, input: Value): Value
  reset(): void
}

export interface FieldAggregatorOptions extends NestedAggregateOptions {
  /** `fields.<f>.ignore-retract`: retractions leave the accumulator as it is */
  ignoreRetract?: boolean
  /** `fields.<f>.list-agg-delimiter` (default ",") */
  listAggDelimiter?: string
  /** `fields.<f>.distinct`: listagg skips tokens already present, collect elements */
  distinct?: boolean
}

/** Order used by min/max: Paimon's InternalRowUtils.compare (Float/Double.compare for floats). */
export function compareForAggregate(type: DataType, a: Value, b: Value): number {
  switch (type.root) {
    case 'FLOAT':
    case 'DOUBLE':
      return compareDoubles(a as number, b as number)
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'DATE':
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0
    case 'BIGINT':
    case 'DECIMAL':
    case 'TIMESTAMP':
      return (a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0
    case 'CHAR':
    case 'VARCHAR':
      return compareStringsUtf8(a as string, b as string)
    case 'BINARY':
    case 'VARBINARY':
      return compareBytes(a as Uint8Array, b as Uint8Array)
    case 'BOOLEAN':
    case 'ARRAY':
    case 'MAP':
    case 'MULTISET':
    case 'ROW':
      throw new StrataInputError(`Incomparable type: ${type.root}`)
  }
}

const wrap8 = (x: number) => (x << 24) >> 24
const wrap16 = (x: number) => (x << 16) >> 16
const wrap64 = (x: bigint) => BigInt.asIntN(64, x)

function pow10(n: number): bigint {
  return 10n ** BigInt(n)
}

/** `n / d` rounded half away from zero (Java RoundingMode.HALF_UP). */
function divHalfUp(n: bigint, d: bigint): bigint {
  const q = n / d
  const r = n % d
  const absR = r < 0n ? -r : r
  const absD = d < 0n ? -d : d
  if (2n * absR >= absD) return (n < 0n) !== (d < 0n) ? q - 1n : q + 1n
  return q
}

function gcd(a: bigint, b: bigint): bigint {
  if (a < 0n) a = -a
  if (b < 0n) b = -b
  while (b !== 0n) [a, b] = [b, a % b]
  return a
}

/** Integer/float/decimal arithmetic of one column type, as Java computes it. */
class Arithmetic {
  private readonly limit: bigint
  private readonly scale: bigint
  private readonly scaleDigits: number

  constructor(
    private readonly type: DataType,
    private readonly field: string,
  ) {
    this.limit = pow10(type.precision ?? 10)
    this.scaleDigits = type.scale ?? 0
    this.scale = pow10(this.scaleDigits)
  }

  /** A DECIMAL result outside the precision is null (Decimal.fromBigDecimal). */
  private fit(x: bigint): bigint | null {
    return (x < 0n ? -x : x) < this.limit ? x : null
  }

  add(a: Value, b: Value): Value {
    switch (this.type.root) {
      case 'TINYINT':
        return wrap8((a as number) + (b as number))
      case 'SMALLINT':
        return wrap16((a as number) + (b as number))
      case 'INT':
        return ((a as number) + (b as number)) | 0
      case 'BIGINT':
        return wrap64((a as bigint) + (b as bigint))
      case 'FLOAT':
        return Math.fround((a as number) + (b as number))
      case 'DOUBLE':
        return (a as number) + (b as number)
      case 'DECIMAL':
        return this.fit((a as bigint) + (b as bigint))
    }
    throw new Error(`aggregate: ${this.type.root} is not numeric`)
  }

  subtract(a: Value, b: Value): Value {
    return this.add(a, this.negate(b))
  }

  negate(a: Value): Value {
    switch (this.type.root) {
      case 'TINYINT':
        return wrap8(-(a as number))
      case 'SMALLINT':
        return wrap16(-(a as number))
      case 'INT':
        return -(a as number) | 0
      case 'BIGINT':
        return wrap64(-(a as bigint))
      case 'FLOAT':
      case 'DOUBLE':
        return -(a as number)
      case 'DECIMAL':
        return -(a as bigint)
    }
    throw new Error(`aggregate: ${this.type.root} is not numeric`)
  }

  multiply(a: Value, b: Value): Value {
    switch (this.type.root) {
      case 'TINYINT':
        return wrap8((a as number) * (b as number))
      case 'SMALLINT':
        return wrap16((a as number) * (b as number))
      case 'INT':
        return Math.imul(a as number, b as number)
      case 'BIGINT':
        return wrap64((a as bigint) * (b as bigint))
      case 'FLOAT':
        return Math.fround((a as number) * (b as number))
      case 'DOUBLE':
        return (a as number) * (b as number)
      case 'DECIMAL':
        // the exact product has twice the scale; BigDecimal.setScale(scale, HALF_UP) brings it back
        return this.fit(divHalfUp((a as bigint) * (b as bigint), this.scale))
    }
    throw new Error(`aggregate: ${this.type.root} is not numeric`)
  }

  divide(a: Value, b: Value): Value {
    const zero = () => new StrataInputError(`product retraction on field '${this.field}' divides by zero (Java: ArithmeticException "/ by zero")`)
    switch (this.type.root) {
      case 'TINYINT':
      case 'SMALLINT':
      case 'INT': {
        if (b === 0) throw zero()
        const q = Math.trunc((a as number) / (b as number))
        return this.type.root === 'TINYINT' ? wrap8(q) : this.type.root === 'SMALLINT' ? wrap16(q) : q | 0
      }
      case 'BIGINT':
        if (b === 0n) throw zero()
        return wrap64((a as bigint) / (b as bigint))
      case 'FLOAT':
        return Math.fround((a as number) / (b as number))
      case 'DOUBLE':
        return (a as number) / (b as number)
      case 'DECIMAL': {
        const x = a as bigint
        const y = b as bigint
        if (y === 0n) throw zero()
        // BigDecimal.divide without a MathContext wants an exact quotient: one whose
        // denominator, in lowest terms, has no prime factors but 2 and 5.
        let d = (y < 0n ? -y : y) / gcd(x, y)
        while (d % 2n === 0n) d /= 2n
        while (d % 5n === 0n) d /= 5n
        if (d !== 1n) {
          throw new StrataInputError(
            `product retraction on DECIMAL field '${this.field}': ${x} / ${y} (unscaled) has no exact decimal quotient (Java: ArithmeticException "Non-terminating decimal expansion; no exact representable decimal result.")`,
          )
        }
        return this.fit(divHalfUp(x * this.scale, y))
      }
    }
    throw new Error(`aggregate: ${this.type.root} is not numeric`)
  }
}

function noRetract(name: AggregateFunctionName, field: string): never {
  throw new StrataInputError(
    `Aggregate function '${name}' does not support retraction, If you allow this function to ignore retraction messages, you can configure 'fields.${field}.ignore-retract'='true'.`,
  )
}

// Java's Character.isWhitespace, which Commons-Lang style splitting on an empty separator uses.
const JAVA_WHITESPACE = /[\t\n\u000b\f\r\u001c-\u001f \u1680\u2000-\u2006\u2008-\u200a\u2028\u2029\u205f\u3000]/

/** Paimon's BinaryStringUtils.splitByWholeSeparatorPreserveAllTokens on a non-empty string. */
function splitPreserveAllTokens(s: string, sep: string): string[] {
  return sep.length === 0 ? s.split(JAVA_WHITESPACE) : s.split(sep)
}

/** Creates the aggregator `name` (already checked by resolveAggregateFunction) for one field. */
export function createFieldAggregator(name: AggregateFunctionName, field: string, type: DataType, opts: FieldAggregatorOptions = {}): FieldAggregator {
  const inner = baseAggregator(name, field, type, opts)
  if (!opts.ignoreRetract) return inner
  // FieldIgnoreRetractAgg
  return {
    name,
    agg: (acc, input) => inner.agg(acc, input),
    retract: (acc) => acc,
    reset: () => inner.reset(),
  }
}

function baseAggregator(name: AggregateFunctionName, field: string, type: DataType, opts: FieldAggregatorOptions): FieldAggregator {
  const none = () => {}
  const unsupported = () => noRetract(name, field)
  if (isNestedAggregate(name)) {
    const parts = nestedAggregator(name, field, type, opts)
    return { name, reset: none, agg: parts.agg, retract: parts.retract ?? unsupported }
  }
  switch (name) {
    case 'sum': {
      const ar = new Arithmetic(type, field)
      return {
        name,
        reset: none,
        agg: (acc, input) => (acc === null ? input : input === null ? acc : ar.add(acc, input)),
        // retracting from nothing leaves the negated value (FieldSumAgg.retract)
        retract: (acc, input) => (acc === null ? (input === null ? null : ar.negate(input)) : input === null ? acc : ar.subtract(acc, input)),
      }
    }
    case 'product': {
      const ar = new Arithmetic(type, field)
      return {
        name,
        reset: none,
        agg: (acc, input) => (acc === null ? input : input === null ? acc : ar.multiply(acc, input)),
        // retracting from nothing leaves the retracted value itself (FieldProductAgg.retract)
        retract: (acc, input) => (acc === null ? input : input === null ? acc : ar.divide(acc, input)),
      }
    }
    case 'min':
    case 'max': {
      const keepAcc = name === 'min' ? (c: number) => c < 0 : (c: number) => c >= 0
      return {
        name,
        reset: none,
        agg: (acc, input) => (acc === null ? input : input === null ? acc : keepAcc(compareForAggregate(type, acc, input)) ? acc : input),
        retract: unsupported,
      }
    }
    case 'last_value':
      return { name, reset: none, agg: (_acc, input) => input, retract: () => null }
    case 'last_non_null_value':
      return { name, reset: none, agg: (acc, input) => (input === null ? acc : input), retract: (acc, input) => (input !== null ? null : acc) }
    case 'primary-key':
      return { name, reset: none, agg: (_acc, input) => input, retract: (_acc, input) => input }
    case 'first_value': {
      let initialized = false
      return {
        name,
        reset: () => {
          initialized = false
        },
        agg: (acc, input) => {
          if (initialized) return acc
          initialized = true
          return input
        },
        retract: unsupported,
      }
    }
    case 'first_non_null_value': {
      let initialized = false
      return {
        name,
        reset: () => {
          initialized = false
        },
        agg: (acc, input) => {
          if (initialized || input === null) return acc
          initialized = true
          return input
        },
        retract: unsupported,
      }
    }
    case 'bool_and':
    case 'bool_or': {
      const op = name === 'bool_and' ? (a: boolean, b: boolean) => a && b : (a: boolean, b: boolean) => a || b
      return {
        name,
        reset: none,
        agg: (acc, input) => (acc === null ? input : input === null ? acc : op(acc as boolean, input as boolean)),
        retract: unsupported,
      }
    }
    case 'listagg': {
      const delimiter = opts.listAggDelimiter ?? ','
      const distinct = opts.distinct ?? false
      return {
        name,
        reset: none,
        agg: (acc, input) => {
          if (acc === null) return input
          if (input === null) return acc
          const a = acc as string
          const b = input as string
          // empty strings add nothing (FieldListaggAgg checks getSizeInBytes)
          if (b.length === 0) return a
          if (a.length === 0) return b
          if (!distinct) return a + delimiter + b
          const seen = new Set(splitPreserveAllTokens(a, delimiter))
          let out = a
          for (const token of splitPreserveAllTokens(b, delimiter)) {
            if (token.length === 0 || seen.has(token)) continue
            seen.add(token)
            out += delimiter + token
          }
          return out
        },
        retract: unsupported,
      }
    }
  }
}
