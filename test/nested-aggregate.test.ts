// The aggregates over nested values (lib/merge/nested-aggregate.ts) and the equality they use
// (lib/merge/value-equality.ts): unit cases from Paimon's semantics, and property tests of
// each aggregate folded over random adds and retractions against a simple model on Value
// arrays. Also the aggregation and partial-update engines over nested columns.

import { describe, expect, it } from 'vitest'
import fc from 'fast-check'
import { StrataInputError } from '../lib/errors.ts'
import { RowKind, type DataField, type DataType, type KeyValue, type MapValue, type TypeRoot, type Value } from '../lib/types.ts'
import { createFieldAggregator, resolveAggregateFunction, type AggregateFunctionName, type FieldAggregatorOptions } from '../lib/merge/aggregate.ts'
import { valueKey, valuesEqual } from '../lib/merge/value-equality.ts'
import { parseMergeEngineConfig } from '../lib/merge/merge-config.ts'
import { createMergeFunction } from '../lib/merge/merge-function.ts'

const t = (root: TypeRoot, extra: Partial<DataType> = {}): DataType => ({ root, nullable: true, ...extra })
const INT = t('INT')
const BIGINT = t('BIGINT')
const DOUBLE = t('DOUBLE')
const STRING = t('VARCHAR', { length: 2147483647 })
const BYTES = t('VARBINARY', { length: 2147483647 })
const ARRAY = (element: DataType) => t('ARRAY', { element })
const MAP = (key: DataType, value: DataType) => t('MAP', { key: { ...key, nullable: false }, value })
const MULTISET = (element: DataType) => t('MULTISET', { element })
let nextId = 100
const field = (name: string, type: DataType): DataField => ({ id: nextId++, name, type })
const ROW = (...fields: [string, DataType][]) => t('ROW', { fields: fields.map(([n, ty]) => field(n, ty)) })
const map = (entries: [Value, Value][]): MapValue => ({ keys: entries.map((e) => e[0]), values: entries.map((e) => e[1]) })
const bytes = (...b: number[]) => new Uint8Array(b)

type Step = ['+' | '-', Value]

/** Folds steps through a fresh aggregator: '+' adds, '-' retracts. */
function fold(name: AggregateFunctionName, type: DataType, steps: Step[], opts: FieldAggregatorOptions = {}): Value {
  const a = createFieldAggregator(name, 'f', type, opts)
  let acc: Value = null
  for (const [op, v] of steps) acc = op === '+' ? a.agg(acc, v) : a.retract(acc, v)
  return acc
}

// ---------------------------------------------------------------------------------------------
// A model of "the same value", written independently of value-equality.ts: a canonical JSON.

function canon(type: DataType, v: Value): unknown {
  if (v === null) return null
  switch (type.root) {
    case 'FLOAT':
    case 'DOUBLE':
      return Number.isNaN(v) ? 'NaN' : Object.is(v, -0) ? '-0' : v
    case 'BINARY':
    case 'VARBINARY':
      return { b: Array.from(v as Uint8Array) }
    case 'BIGINT':
    case 'DECIMAL':
    case 'TIMESTAMP':
      return { n: String(v) }
    case 'ARRAY':
      return (v as Value[]).map((e) => canon(type.element!, e))
    case 'ROW':
      return type.fields!.map((f, i) => canon(f.type, (v as Value[])[i]))
    case 'MAP':
    case 'MULTISET': {
      const m = v as MapValue
      const kt = type.root === 'MAP' ? type.key! : type.element!
      const vt = type.root === 'MAP' ? type.value! : INT
      return { m: m.keys.map((k, i) => JSON.stringify([canon(kt, k), canon(vt, m.values[i])])).sort() }
    }
    default:
      return v
  }
}
const same = (type: DataType, a: Value, b: Value) => JSON.stringify(canon(type, a)) === JSON.stringify(canon(type, b))

// Random types and values, from small domains so that equal values meet often.

const scalarType = fc.constantFrom(INT, BIGINT, DOUBLE, STRING, BYTES)
const typeArb: fc.Arbitrary<DataType> = fc.letrec<{ type: DataType }>((tie) => ({
  type: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalarType,
    tie('type').map((e) => ARRAY(e as DataType)),
    fc.tuple(scalarType, tie('type')).map(([k, v]) => MAP(k, v as DataType)),
    scalarType.map((e) => MULTISET(e)),
    fc.array(tie('type'), { minLength: 1, maxLength: 3 }).map((ts) => ROW(...ts.map((ty, i) => [`f${i}`, ty as DataType] as [string, DataType]))),
  ),
})).type

function valueArb(type: DataType, depth = 0): fc.Arbitrary<Value> {
  const nullable = (a: fc.Arbitrary<Value>) => (type.nullable ? fc.option(a, { nil: null, freq: 5 }) : a)
  switch (type.root) {
    case 'INT':
      return nullable(fc.integer({ min: -2, max: 2 }))
    case 'BIGINT':
      return nullable(fc.bigInt(-2n, 2n))
    case 'DOUBLE':
      return nullable(fc.constantFrom(0, -0, 1.5, NaN))
    case 'VARCHAR':
      return nullable(fc.constantFrom('', 'a', 'b', 'a,b'))
    case 'VARBINARY':
      return nullable(fc.constantFrom([], [1], [1, 2]).map((b) => new Uint8Array(b)))
    case 'ARRAY':
      return nullable(fc.array(valueArb(type.element!, depth + 1), { maxLength: depth > 1 ? 1 : 3 }))
    case 'ROW':
      return nullable(fc.tuple(...type.fields!.map((f) => valueArb(f.type, depth + 1))).map((vs) => vs as Value[]))
    case 'MAP':
    case 'MULTISET': {
      const kt = type.root === 'MAP' ? type.key! : { ...type.element!, nullable: false }
      const vt = type.root === 'MAP' ? type.value! : t('INT', { nullable: false })
      const keys = fc.uniqueArray(valueArb({ ...kt, nullable: false }, depth + 1), { maxLength: 3, selector: (k) => JSON.stringify(canon(kt, k)) })
      const entries = keys.chain((ks) => fc.tuple(...ks.map(() => (type.root === 'MULTISET' ? fc.integer({ min: 1, max: 3 }) : valueArb(vt, depth + 1)))).map((vs) => ({ keys: ks, values: vs as Value[] })))
      return nullable(entries.map((m) => m as MapValue))
    }
    default:
      throw new Error(`no arbitrary for ${type.root}`)
  }
}

/** A copy with fresh arrays and byte arrays, so equality cannot lean on identity. */
function deepCopy(v: Value): Value {
  if (v === null || typeof v !== 'object') return v
  if (v instanceof Uint8Array) return v.slice()
  if (Array.isArray(v)) return v.map(deepCopy)
  return { keys: v.keys.map(deepCopy), values: v.values.map(deepCopy) }
}

describe('equality of nested values', () => {
  it('compares bytes by content, bigints by value and floats as Java equals', () => {
    expect(valuesEqual(BYTES, bytes(1, 2), bytes(1, 2))).toBe(true)
    expect(valuesEqual(BYTES, bytes(1, 2), bytes(1))).toBe(false)
    expect(valuesEqual(BIGINT, 5n, 5n)).toBe(true)
    expect(valuesEqual(DOUBLE, NaN, NaN)).toBe(true)
    expect(valuesEqual(DOUBLE, 0, -0)).toBe(false)
    expect(valuesEqual(DOUBLE, 1.5, 1.5)).toBe(true)
    expect(valueKey(DOUBLE, 0)).not.toBe(valueKey(DOUBLE, -0))
    expect(valuesEqual(STRING, 'a', null)).toBe(false)
    expect(valuesEqual(STRING, null, null)).toBe(true)
  })
  it('compares ARRAY and ROW position by position, MAP and MULTISET whatever the entry order', () => {
    const rowT = ROW(['a', INT], ['b', ARRAY(BYTES)])
    expect(valuesEqual(rowT, [1, [bytes(1), null]], [1, [bytes(1), null]])).toBe(true)
    expect(valuesEqual(rowT, [1, [bytes(1), null]], [1, [null, bytes(1)]])).toBe(false)
    const mapT = MAP(STRING, ARRAY(INT))
    expect(valuesEqual(mapT, map([['x', [1]], ['y', null]]), map([['y', null], ['x', [1]]]))).toBe(true)
    expect(valueKey(mapT, map([['x', [1]], ['y', null]]))).toBe(valueKey(mapT, map([['y', null], ['x', [1]]])))
    expect(valuesEqual(mapT, map([['x', [1]], ['y', null]]), map([['y', [1]], ['x', null]]))).toBe(false)
    expect(valuesEqual(mapT, map([['x', [1]]]), map([['x', [1]], ['y', null]]))).toBe(false)
    expect(valuesEqual(MULTISET(STRING), map([['a', 2]]), map([['a', 3]]))).toBe(false)
    // a string holding the separators of the key encoding stays one value
    expect(valueKey(ARRAY(STRING), ['a,b'])).not.toBe(valueKey(ARRAY(STRING), ['a', 'b']))
  })
  it('property: valuesEqual is the model equality, valueKey agrees with it, and a fresh copy is equal', () => {
    const pair = typeArb.chain((type) => fc.tuple(fc.constant(type), valueArb(type), valueArb(type)))
    fc.assert(
      fc.property(pair, ([type, a, b]) => {
        const eq = valuesEqual(type, a, b)
        expect(eq).toBe(same(type, a, b))
        expect(valueKey(type, a) === valueKey(type, b)).toBe(eq)
        expect(valuesEqual(type, a, deepCopy(a))).toBe(true)
        expect(valueKey(type, a)).toBe(valueKey(type, deepCopy(a)))
      }),
      { numRuns: 400 },
    )
  })
})

// ---------------------------------------------------------------------------------------------

describe('collect', () => {
  const A = ARRAY(INT)
  it('appends, keeps duplicates and nulls, skips null inputs', () => {
    expect(fold('collect', A, [['+', [1, 2]], ['+', null], ['+', [2, null]]])).toEqual([1, 2, 2, null])
    expect(fold('collect', A, [['+', null]])).toBeNull()
  })
  it('with distinct keeps each element once, in order of first appearance', () => {
    expect(fold('collect', A, [['+', [1, 1, 2]], ['+', [2, 3, null, null]]], { distinct: true })).toEqual([1, 2, 3, null])
    // nested elements compare deeply, bytes by content
    const B = ARRAY(ARRAY(BYTES))
    expect(fold('collect', B, [['+', [[bytes(1)]]], ['+', [[bytes(1)], [bytes(2)]]]], { distinct: true })).toEqual([[bytes(1)], [bytes(2)]])
  })
  it('retracts one matching element per retracted element', () => {
    expect(fold('collect', A, [['+', [1, 2, 1, null]], ['-', [1, null, 5]]])).toEqual([2, 1])
    expect(fold('collect', A, [['-', [1]]])).toBeNull()
    expect(fold('collect', A, [['+', [1]], ['-', null], ['-', []]])).toEqual([1])
  })
  it('property: matches the model (concatenation, first-appearance distinct, multiset removal)', () => {
    const elementT = fc.constantFrom(INT, STRING, BYTES, ROW(['k', INT], ['v', STRING]), ARRAY(INT))
    const input = elementT.chain((e) => fc.tuple(fc.constant(e), fc.boolean(), fc.array(fc.tuple(fc.constantFrom<'+' | '-'>('+', '+', '-'), valueArb(ARRAY(e))), { maxLength: 8 })))
    fc.assert(
      fc.property(input, ([e, distinct, steps]) => {
        const k = (v: Value) => JSON.stringify(canon(e, v))
        let model: Value[] | null = null
        for (const [op, v] of steps as Step[]) {
          const arr = v as Value[] | null
          if (op === '-') {
            if (model === null || arr === null) continue
            const rest: Value[] = model.slice()
            for (const r of arr) {
              const j = rest.findIndex((x) => k(x) === k(r))
              if (j >= 0) rest.splice(j, 1)
            }
            model = rest
          } else if (arr !== null || model !== null) {
            const all: Value[] = [...(model ?? []), ...(arr ?? [])]
            model = distinct ? all.filter((x, i) => all.findIndex((y) => k(y) === k(x)) === i) : all
          }
        }
        expect(canon(ARRAY(e), fold('collect', ARRAY(e), steps as Step[], { distinct }))).toEqual(canon(ARRAY(e), model))
      }),
      { numRuns: 300 },
    )
  })
})

describe('merge_map', () => {
  const M = MAP(STRING, INT)
  it('lets the input override the accumulator; retraction removes the keys', () => {
    expect(fold('merge_map', M, [['+', map([['a', 1], ['b', 2]])], ['+', map([['b', null], ['c', 3]])]])).toEqual(map([['a', 1], ['b', null], ['c', 3]]))
    expect(fold('merge_map', M, [['+', map([['a', 1], ['b', 2]])], ['-', map([['a', 99]])]])).toEqual(map([['b', 2]]))
    expect(fold('merge_map', M, [['-', map([['a', 1]])]])).toBeNull()
    // bytes keys compare by content
    const MB = MAP(BYTES, INT)
    expect(fold('merge_map', MB, [['+', map([[bytes(1), 1]])], ['+', map([[bytes(1), 2]])]])).toEqual(map([[bytes(1), 2]]))
  })
  it('property: matches a model map (first-appearance order, later values win)', () => {
    const keyT = fc.constantFrom(INT, STRING, BYTES, ROW(['a', INT]))
    const input = keyT.chain((kt) => fc.tuple(fc.constant(MAP(kt, INT)), fc.array(fc.tuple(fc.constantFrom<'+' | '-'>('+', '+', '-'), valueArb(MAP(kt, INT))), { maxLength: 8 })))
    fc.assert(
      fc.property(input, ([type, steps]) => {
        const k = (v: Value) => JSON.stringify(canon(type.key!, v))
        let model: Map<string, [Value, Value]> | null = null
        for (const [op, v] of steps as Step[]) {
          const m = v as MapValue | null
          if (m === null) continue
          if (op === '-') {
            if (model === null) continue
            for (const key of m.keys) model.delete(k(key))
          } else {
            const next: Map<string, [Value, Value]> = new Map(model ?? [])
            m.keys.forEach((key, i) => {
              const e = next.get(k(key))
              if (e) next.set(k(key), [e[0], m.values[i]])
              else next.set(k(key), [key, m.values[i]])
            })
            model = next
          }
        }
        const expected = model === null ? null : map([...model.values()])
        expect(canon(type, fold('merge_map', type, steps as Step[]))).toEqual(canon(type, expected))
      }),
      { numRuns: 300 },
    )
  })
})

describe('merge_map_with_keytime', () => {
  const V = ROW(['v', INT], ['ts', STRING])
  const M = MAP(STRING, V)
  it('keeps the newer timestamp per key, drops a key whose ROW is null, skips a null timestamp', () => {
    const acc = fold('merge_map_with_keytime', M, [
      ['+', map([['a', [1, '2024-01-02']], ['b', [2, '2024-01-01']], ['c', [3, null]]])],
      ['+', map([['a', [9, '2024-01-01']], ['b', [8, '2024-01-03']], ['c', [7, '2024-01-01']], ['d', null], ['e', [5, null]]])],
    ])
    expect(acc).toEqual(map([['a', [1, '2024-01-02']], ['b', [8, '2024-01-03']], ['c', [7, '2024-01-01']]]))
    expect(fold('merge_map_with_keytime', M, [['+', map([['a', [1, 'x']]])], ['+', map([['a', null]])]])).toEqual(map([]))
  })
  it('reads ts-field, and refuses a retraction', () => {
    const V2 = ROW(['ts', STRING], ['v', INT])
    const acc = fold('merge_map_with_keytime', MAP(INT, V2), [['+', map([[1, ['b', 1]]])], ['+', map([[1, ['a', 2]]])]], { tsField: 'ts' })
    expect(acc).toEqual(map([[1, ['b', 1]]]))
    expect(() => fold('merge_map_with_keytime', M, [['+', map([])], ['-', map([])]])).toThrow(
      "Aggregate function 'merge_map_with_keytime' does not support retraction, If you allow this function to ignore retraction messages, you can configure 'fields.f.ignore-retract'='true'.",
    )
    expect(fold('merge_map_with_keytime', M, [['+', map([['a', [1, 'x']]])], ['-', map([['a', [1, 'x']]])]], { ignoreRetract: true })).toEqual(map([['a', [1, 'x']]]))
  })
})

// ---------------------------------------------------------------------------------------------

const ELEMENT = ROW(['k', INT], ['v', STRING], ['w', INT])
const NESTED = ARRAY(ELEMENT)
const rowArb = fc.tuple(fc.option(fc.integer({ min: 0, max: 3 }), { nil: null, freq: 6 }), fc.option(fc.constantFrom('a', 'b'), { nil: null }), fc.option(fc.integer({ min: 0, max: 2 }), { nil: null }))
const nestedArb = fc.option(fc.array(fc.option(rowArb.map((r) => r as Value[]), { nil: null, freq: 8 }), { maxLength: 4 }), { nil: null, freq: 6 })

describe('nested_update', () => {
  it('without a nested key appends rows, dropping null elements once two values meet', () => {
    expect(fold('nested_update', NESTED, [['+', [[1, 'a', 0], null]], ['+', [[1, 'a', 0]]]])).toEqual([
      [1, 'a', 0],
      [1, 'a', 0],
    ])
    expect(fold('nested_update', NESTED, [['+', [[1, 'a', 0], null]]])).toEqual([[1, 'a', 0], null])
  })
  it('with a nested key replaces the row of the key; retraction removes the keys', () => {
    const opts = { nestedKey: ['k'] }
    const acc = fold('nested_update', NESTED, [['+', [[1, 'a', 0], [2, 'b', 0]]], ['+', [[1, null, 5], [3, 'c', 1]]]], opts)
    expect(acc).toEqual([
      [1, null, 5],
      [2, 'b', 0],
      [3, 'c', 1],
    ])
    expect(fold('nested_update', NESTED, [['+', [[1, 'a', 0], [2, 'b', 0]]], ['-', [[1, 'zzz', 9]]]], opts)).toEqual([[2, 'b', 0]])
  })
  it('without a key retracts every row equal to a retracted row', () => {
    expect(fold('nested_update', NESTED, [['+', [[1, 'a', 0], [1, 'a', 0], [2, 'b', 0]]], ['+', [null]], ['-', [[1, 'a', 0]]]])).toEqual([[2, 'b', 0]])
  })
  it('count-limit: a full accumulator takes nothing, an input fills it up (nulls counted in the accumulator)', () => {
    const opts = { countLimit: 3 }
    expect(fold('nested_update', NESTED, [['+', [[1, 'a', 0], null]], ['+', [[2, 'b', 0], [3, 'c', 0]]]], opts)).toEqual([
      [1, 'a', 0],
      [2, 'b', 0],
    ])
    expect(fold('nested_update', NESTED, [['+', [[1, 'a', 0], null, null]], ['+', [[2, 'b', 0]]]], opts)).toEqual([[1, 'a', 0], null, null])
  })
  it('property: matches the model (rows by key, last wins, first position kept; count-limit)', () => {
    const input = fc.tuple(fc.boolean(), fc.integer({ min: 1, max: 6 }), fc.array(fc.tuple(fc.constantFrom<'+' | '-'>('+', '+', '-'), nestedArb), { maxLength: 8 }))
    fc.assert(
      fc.property(input, ([keyed, countLimit, steps]) => {
        const key = (r: Value[]) => (keyed ? JSON.stringify([r[0]]) : JSON.stringify(r))
        let model: Value[] | null = null
        for (const [op, v] of steps as Step[]) {
          const arr = v as (Value[] | null)[] | null
          if (model === null || arr === null) {
            if (op === '+' && model === null) model = arr
            continue
          }
          const held = model.filter((r): r is Value[] => r !== null)
          const incoming = arr.filter((r): r is Value[] => r !== null)
          if (op === '-') {
            const gone = new Set(incoming.map(key))
            const kept = new Map<string, Value[]>()
            for (const r of held) if (!gone.has(key(r))) keyed ? kept.set(key(r), r) : kept.set(String(kept.size), r)
            model = [...kept.values()]
            continue
          }
          if (model.length >= countLimit) continue
          const rows = [...held, ...incoming.slice(0, countLimit - model.length)]
          if (!keyed) model = rows
          else {
            const m = new Map<string, Value[]>()
            for (const r of rows) m.set(key(r), r)
            model = [...m.values()]
          }
        }
        expect(fold('nested_update', NESTED, steps as Step[], { nestedKey: keyed ? ['k'] : [], countLimit })).toEqual(model)
      }),
      { numRuns: 300 },
    )
  })
})

describe('nested_partial_update', () => {
  it('merges rows of one key field by field, each field its last non-null value; refuses a retraction', () => {
    const opts = { nestedKey: ['k'] }
    expect(fold('nested_partial_update', NESTED, [['+', [[1, 'a', null], [2, 'b', 0]]], ['+', [[1, null, 5], null, [1, 'c', null]]]], opts)).toEqual([
      [1, 'c', 5],
      [2, 'b', 0],
    ])
    expect(() => fold('nested_partial_update', NESTED, [['+', []], ['-', []]], opts)).toThrow(/does not support retraction/)
  })
  it('property: matches the model', () => {
    fc.assert(
      fc.property(fc.array(nestedArb, { maxLength: 6 }), (inputs) => {
        let model: Value[] | null = null
        for (const arr of inputs as (Value[] | null)[]) {
          if (model === null || arr === null) {
            if (model === null) model = arr
            continue
          }
          const m = new Map<string, Value[]>()
          for (const r of [...model, ...arr]) {
            if (r === null) continue
            const row = r as Value[]
            const k = JSON.stringify(row[0])
            const cur = m.get(k) ?? [null, null, null]
            m.set(k, cur.map((x, i) => (row[i] !== null ? row[i] : x)))
          }
          model = [...m.values()]
        }
        const steps = inputs.map((v): Step => ['+', v])
        expect(fold('nested_partial_update', NESTED, steps, { nestedKey: ['k'] })).toEqual(model)
      }),
      { numRuns: 300 },
    )
  })
})

// ---------------------------------------------------------------------------------------------

describe('which functions take nested types (FieldAggregatorFactory)', () => {
  const key = 'fields.f.aggregate-function'
  const nameOf = (fn: string, type: DataType, opts = {}) => resolveAggregateFunction(key, fn, 'f', type, opts)
  it('takes the nested functions on their types, and the value functions on any nested type', () => {
    expect(nameOf('collect', ARRAY(MAP(STRING, INT)))).toBe('collect')
    expect(nameOf('merge_map', MAP(INT, ARRAY(INT)))).toBe('merge_map')
    expect(nameOf('merge_map_with_keytime', MAP(INT, ROW(['v', INT], ['ts', STRING])))).toBe('merge_map_with_keytime')
    expect(nameOf('nested_update', NESTED)).toBe('nested_update')
    expect(nameOf('nested_partial_update', NESTED, { nestedKey: ['k'] })).toBe('nested_partial_update')
    for (const fn of ['first_value', 'last_value', 'first_non_null_value', 'last_non_null_value']) {
      for (const type of [NESTED, MAP(STRING, INT), MULTISET(INT), ELEMENT]) expect(nameOf(fn, type)).toBe(fn)
    }
  })
  it("refuses the others with Paimon's messages", () => {
    expect(() => nameOf('collect', MULTISET(INT))).toThrow("Data type for collect column must be 'Array' but was")
    expect(() => nameOf('merge_map', MULTISET(INT))).toThrow("Data type for merge map column must be 'MAP' but was")
    expect(() => nameOf('nested_update', ARRAY(INT))).toThrow("Data type for nested table column must be 'Array<Row>' but was")
    expect(() => nameOf('nested_partial_update', ELEMENT)).toThrow("Data type for nested table column must be 'Array<Row>' but was")
    expect(() => nameOf('nested_partial_update', NESTED)).toThrow("needs the nested key: set 'fields.f.nested-key'")
    expect(() => nameOf('nested_update', NESTED, { nestedKey: ['nope'] })).toThrow("nested key field 'nope' of 'fields.f.nested-key' is not a field of the element ROW (fields: k, v, w)")
    expect(() => nameOf('merge_map_with_keytime', ARRAY(INT))).toThrow("Data type for field 'f' must be 'MAP' but was")
    expect(() => nameOf('merge_map_with_keytime', MAP(INT, INT))).toThrow("Value type of MAP for field 'f' must be ROW but was 'INT'")
    expect(() => nameOf('merge_map_with_keytime', MAP(INT, ROW(['ts', STRING])))).toThrow("ROW type for field 'f' must have at least 2 fields, but found 1")
    expect(() => nameOf('merge_map_with_keytime', MAP(INT, ROW(['v', INT], ['ts', STRING])), { tsField: 'x' })).toThrow("Timestamp field 'x' not found in ROW type for field 'f'. Available fields: [v, ts]")
    expect(() => nameOf('merge_map_with_keytime', MAP(INT, ROW(['v', STRING], ['ts', BIGINT])))).toThrow("Timestamp field 'ts' of the value ROW of field 'f' is BIGINT")
    for (const type of [NESTED, MAP(STRING, INT), MULTISET(INT), ELEMENT]) {
      expect(() => nameOf('min', type)).toThrow(`Incomparable type: ${type.root}`)
      expect(() => nameOf('max', type)).toThrow(`Incomparable type: ${type.root}`)
      expect(() => nameOf('sum', type)).toThrow("must be 'NumericType'")
      expect(() => nameOf('listagg', type)).toThrow("must be 'VarCharType'")
      expect(() => nameOf('bool_or', type)).toThrow("must be 'BooleanType'")
    }
    const e = (() => {
      try {
        nameOf('collect', INT)
      } catch (err) {
        return err
      }
    })()
    expect(e).toBeInstanceOf(StrataInputError)
    expect((e as Error).message).toContain(`Option '${key}' = 'collect' is invalid for field 'f'`)
  })
})

// ---------------------------------------------------------------------------------------------
// The engines over nested columns, through the table's merge function.

const FIELDS: DataField[] = [
  field('id', t('INT', { nullable: false })),
  field('tags', ARRAY(STRING)),
  field('attrs', MAP(STRING, INT)),
  field('items', NESTED),
  field('info', ROW(['a', INT], ['b', STRING])),
]
const kv = (seq: number, kind: RowKind, value: Value[]): KeyValue => ({ key: [value[0]], seq: BigInt(seq), kind, value })
function merge(options: Record<string, string>, records: KeyValue[]): KeyValue | null {
  const mf = createMergeFunction(parseMergeEngineConfig(FIELDS, ['id'], options))
  mf.reset()
  for (const r of records) mf.add(r)
  return mf.result()
}

describe('the aggregation engine over nested columns', () => {
  const options = {
    'merge-engine': 'aggregation',
    'fields.tags.aggregate-function': 'collect',
    'fields.tags.distinct': 'true',
    'fields.attrs.aggregate-function': 'merge_map',
    'fields.items.aggregate-function': 'nested_update',
    'fields.items.nested-key': 'k',
    'fields.info.aggregate-function': 'last_non_null_value',
  }
  it('aggregates each field and retracts a -U', () => {
    const out = merge(options, [
      kv(1, RowKind.INSERT, [1, ['a', 'b'], map([['x', 1]]), [[1, 'one', 0]], [1, 'p']]),
      kv(2, RowKind.INSERT, [1, ['b', 'c'], map([['y', 2]]), [[2, 'two', 0]], null]),
      kv(3, RowKind.UPDATE_BEFORE, [1, ['a'], map([['x', 0]]), [[1, null, null]], null]),
    ])
    expect(out).toEqual(kv(3, RowKind.INSERT, [1, ['b', 'c'], map([['y', 2]]), [[2, 'two', 0]], [1, 'p']]))
  })
  it("keeps a key's lone record as it is (Paimon's reducer), and collects distinct once two records meet", () => {
    const lone = kv(1, RowKind.INSERT, [1, ['a', 'a'], null, null, null])
    expect(merge(options, [lone])).toEqual(lone)
    expect(merge(options, [lone, kv(2, RowKind.INSERT, [1, null, null, null, null])])!.value[1]).toEqual(['a'])
  })
  it('reads the nested options and refuses bad ones, naming the key', () => {
    expect(parseMergeEngineConfig(FIELDS, ['id'], { ...options, 'fields.items.count-limit': ' 7 ', 'fields.items.nested-key': 'k, v,' }).aggregations[3]).toMatchObject({
      function: 'nested_update',
      nestedKey: ['k', 'v'],
      countLimit: 7,
    })
    expect(() => parseMergeEngineConfig(FIELDS, ['id'], { ...options, 'fields.items.count-limit': 'many' })).toThrow(
      "Option 'fields.items.count-limit' = 'many' is invalid: expected an integer",
    )
    expect(() => parseMergeEngineConfig(FIELDS, ['id'], { ...options, 'fields.items.nested-key': 'q' })).toThrow(
      "Option 'fields.items.nested-key' = 'q' is invalid: 'q' is not a field of the ROW of field 'items' (fields: k, v, w)",
    )
    expect(() => parseMergeEngineConfig(FIELDS, ['id'], { ...options, 'fields.tags.nested-key': 'k' })).toThrow(
      "Option 'fields.tags.nested-key' = 'k' is invalid: it names fields of an ARRAY<ROW> field's element ROW, and field 'tags' is ARRAY",
    )
    expect(() => parseMergeEngineConfig(FIELDS, ['id'], { ...options, 'fields.attrs.ts-field': 'ts' })).toThrow("Option 'fields.attrs.ts-field' = 'ts' is invalid")
    expect(() => parseMergeEngineConfig(FIELDS, ['id'], { ...options, 'fields.info.aggregate-function': 'max' })).toThrow('Incomparable type: ROW')
    expect(() => parseMergeEngineConfig(FIELDS, ['id'], { 'merge-engine': 'partial-update', 'sequence.field': 'info' })).toThrow(
      "Option 'sequence.field' = 'info' is invalid: Sequence field 'info' is ROW; Strata orders sequence fields of scalar types only",
    )
  })
})

describe('the partial-update engine over nested columns', () => {
  it('refuses a nested aggregate, as any function but last_non_null_value, for want of sequence groups', () => {
    for (const [fn, extra] of [['nested_partial_update', {}], ['nested_update', { 'fields.items.nested-key': 'k' }], ['collect', {}]] as const) {
      const f = fn === 'collect' ? 'tags' : 'items'
      expect(() => parseMergeEngineConfig(FIELDS, ['id'], { 'merge-engine': 'partial-update', [`fields.${f}.aggregate-function`]: fn, ...extra })).toThrow(
        `Must use sequence group for aggregation functions but not found for field ${f}.`,
      )
    }
  })
  it('replaces each nested value whole with the last non-null one', () => {
    const out = merge({ 'merge-engine': 'partial-update' }, [
      kv(1, RowKind.INSERT, [1, ['a', 'b'], map([['x', 1]]), [[1, 'one', 0]], [1, 'p']]),
      kv(2, RowKind.INSERT, [1, ['c'], null, [], null]),
      kv(3, RowKind.INSERT, [1, null, map([['y', 2]]), null, [null, 'q']]),
    ])
    expect(out).toEqual(kv(3, RowKind.INSERT, [1, ['c'], map([['y', 2]]), [], [null, 'q']]))
  })
})
