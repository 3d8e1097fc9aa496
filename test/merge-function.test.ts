import { describe, it, expect } from 'vitest'
import fc from 'fast-check'
import { StrataInputError } from '../lib/errors.ts'
import { RowKind, isRetract, type DataField, type DataType, type KeyValue, type Row, type TypeRoot } from '../lib/types.ts'
import { createEngineMergeFunction, createMergeFunction } from '../lib/merge/merge-function.ts'
import { optionKeysOfMergeEngines, parseMergeEngineConfig } from '../lib/merge/merge-config.ts'
import type { MergeEngineConfig } from '../lib/merge/merge-types.ts'
import { sequenceComparator } from '../lib/merge/sequence-order.ts'

const type = (root: TypeRoot, nullable = true, extra: Partial<DataType> = {}): DataType => ({ root, nullable, ...extra })
const field = (id: number, name: string, t: DataType): DataField => ({ id, name, type: t })

// id INT NOT NULL (primary key), ts BIGINT (a version column), v INT, s STRING
const FIELDS: DataField[] = [
  field(0, 'id', type('INT', false)),
  field(1, 'ts', type('BIGINT')),
  field(2, 'v', type('INT')),
  field(3, 's', type('VARCHAR', true, { length: 2147483647 })),
]
const PK = ['id']
const cfgOf = (options: Record<string, string>, fields = FIELDS, pk = PK) => parseMergeEngineConfig(fields, pk, options)

const { INSERT: I, UPDATE_BEFORE: UB, UPDATE_AFTER: UA, DELETE: D } = RowKind
const rec = (seq: number, kind: RowKind, ts: bigint | null, v: number | null, s: string | null = null): KeyValue => ({
  key: [1],
  seq: BigInt(seq),
  kind,
  value: [1, ts, v, s],
})

/** Sorts with the table's comparator and folds through the table's merge function. */
function merge(cfg: MergeEngineConfig, records: KeyValue[]): KeyValue | null {
  const sorted = [...records].sort(sequenceComparator(cfg))
  const mf = createMergeFunction(cfg)
  mf.reset()
  for (const kv of sorted) mf.add(kv)
  return mf.result()
}

function errorOf(f: () => unknown): Error {
  try {
    f()
  } catch (e) {
    return e as Error
  }
  throw new Error('expected an error')
}

describe('parseMergeEngineConfig', () => {
  it('defaults to deduplicate ordered by sequence number', () => {
    const cfg = cfgOf({})
    expect(cfg.engine).toBe('deduplicate')
    expect(cfg.ignoreDelete).toBe(false)
    expect(cfg.sequenceFields).toEqual([])
    expect(cfg.aggregations).toEqual([])
  })
  it('reads engines case-insensitively and refuses unknown ones naming key and value', () => {
    expect(cfgOf({ 'merge-engine': 'Partial-Update' }).engine).toBe('partial-update')
    const e = errorOf(() => cfgOf({ 'merge-engine': 'aggregate' }))
    expect(e).toBeInstanceOf(StrataInputError)
    expect(e.message).toContain("'merge-engine' = 'aggregate'")
    expect(e.message).toContain('deduplicate, partial-update, aggregation, first-row')
    expect(() => cfgOf({ 'merge-engine': 'versioned-partial-update' })).toThrow(/not supported by Strata/)
  })
  it('reads ignore-delete and its fallback keys; bad booleans name key and value', () => {
    expect(cfgOf({ 'partial-update.ignore-delete': 'TRUE' }).ignoreDelete).toBe(true)
    expect(cfgOf({ 'ignore-delete': 'false', 'first-row.ignore-delete': 'true' }).ignoreDelete).toBe(false)
    expect(() => cfgOf({ 'ignore-delete': 'yes' })).toThrow("Option 'ignore-delete' = 'yes' is invalid: expected 'true' or 'false'")
    expect(() => cfgOf({ 'fields.v.ignore-retract': '1' })).toThrow("'fields.v.ignore-retract' = '1'")
  })
  it('validates sequence.field as Paimon SchemaValidation does', () => {
    const cfg = cfgOf({ 'sequence.field': 'ts,v', 'sequence.field.sort-order': 'descending' })
    expect(cfg.sequenceFields).toEqual(['ts', 'v'])
    expect(cfg.sequenceFieldIndexes).toEqual([1, 2])
    expect(cfg.sequenceAscending).toBe(false)
    expect(() => cfgOf({ 'sequence.field': 'ts,nope' })).toThrow("Option 'sequence.field' = 'ts,nope' is invalid: Sequence field: 'nope' can not be found")
    expect(() => cfgOf({ 'sequence.field': 'ts,ts' })).toThrow("Sequence field 'ts' is defined repeatedly.")
    expect(() => cfgOf({ 'sequence.field': 'ts', 'merge-engine': 'first-row' })).toThrow(/Do not support use sequence field on FIRST_ROW merge engine/)
    expect(() => cfgOf({ 'sequence.field': 'ts', 'fields.ts.aggregate-function': 'max' })).toThrow("Should not define aggregation on sequence field: 'ts'.")
    expect(() => cfgOf({ 'sequence.field.sort-order': 'up' })).toThrow("'sequence.field.sort-order' = 'up'")
  })
  it('requires fields.<f>.* options to name a field', () => {
    const e = errorOf(() => cfgOf({ 'merge-engine': 'aggregation', 'fields.cnt.aggregate-function': 'sum' }))
    expect(e.message).toContain("'fields.cnt.aggregate-function' = 'sum'")
    expect(e.message).toContain('Field cnt can not be found in table schema')
  })
  it('resolves per-field aggregate functions for the aggregation engine', () => {
    const cfg = cfgOf({
      'merge-engine': 'aggregation',
      'sequence.field': 'ts',
      'fields.v.aggregate-function': 'sum',
      'fields.v.ignore-retract': 'true',
      'fields.default-aggregate-function': 'listagg',
      'fields.s.list-agg-delimiter': ';',
      'fields.s.distinct': 'true',
    })
    expect(cfg.aggregations.map((a) => a.function)).toEqual(['primary-key', 'last_value', 'sum', 'listagg'])
    expect(cfg.aggregations[2].ignoreRetract).toBe(true)
    expect(cfg.aggregations[3]).toMatchObject({ listAggDelimiter: ';', distinct: true })
    expect(cfgOf({ 'merge-engine': 'aggregation' }).aggregations.map((a) => a.function)).toEqual(['primary-key', 'last_non_null_value', 'last_non_null_value', 'last_non_null_value'])
  })
  it('refuses count and misfit types on aggregation tables, naming the option', () => {
    const e = errorOf(() => cfgOf({ 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'count' }))
    expect(e).toBeInstanceOf(StrataInputError)
    expect(e.message).toContain("'fields.v.aggregate-function' = 'count'")
    expect(e.message).toContain('Use unsupported aggregation: count')
    // the default function applies to every non-key field, so a STRING column refuses sum
    expect(() => cfgOf({ 'merge-engine': 'aggregation', 'fields.default-aggregate-function': 'sum' })).toThrow(
      /'fields.default-aggregate-function' = 'sum' is invalid for field 's'.*NumericType/,
    )
    expect(() => cfgOf({ 'merge-engine': 'aggregation', 'fields.id.aggregate-function': 'sum' })).toThrow(/primary key field/)
  })
  it('accepts and ignores aggregation options on a deduplicate table, as Paimon', () => {
    expect(cfgOf({ 'fields.v.aggregate-function': 'count', 'aggregation.remove-record-on-delete': 'true' }).aggregations).toEqual([])
  })
  it('refuses sequence groups', () => {
    expect(() => cfgOf({ 'merge-engine': 'partial-update', 'fields.ts.sequence-group': 'v,s' })).toThrow(/sequence groups .* are not supported by Strata/)
    expect(() => cfgOf({ 'merge-engine': 'partial-update', 'partial-update.remove-record-on-sequence-group': 'ts' })).toThrow(
      /'partial-update.remove-record-on-sequence-group' = 'ts'.*not supported by Strata/,
    )
  })
  it('refuses option combinations Paimon refuses', () => {
    expect(() => cfgOf({ 'merge-engine': 'partial-update', 'fields.v.aggregate-function': 'sum' })).toThrow(
      /'fields.v.aggregate-function' = 'sum'.*Must use sequence group for aggregation functions but not found for field v/,
    )
    expect(cfgOf({ 'merge-engine': 'partial-update', 'fields.default-aggregate-function': 'last_non_null_value' }).engine).toBe('partial-update')
    expect(() => cfgOf({ 'merge-engine': 'partial-update', 'ignore-delete': 'true', 'partial-update.remove-record-on-delete': 'true' })).toThrow(
      /'ignore-delete' = 'true' and 'partial-update.remove-record-on-delete' = 'true' have conflicting behavior/,
    )
    expect(() => cfgOf({ 'merge-engine': 'aggregation', 'aggregation.remove-record-on-delete': 'true', 'fields.v.ignore-retract': 'true' })).toThrow(
      /'aggregation.remove-record-on-delete' = 'true' and 'fields.v.ignore-retract' = 'true' have conflicting behavior/,
    )
  })
})

describe('optionKeysOfMergeEngines', () => {
  it('covers every key the parser reads', () => {
    const { exact, patterns } = optionKeysOfMergeEngines()
    const known = (k: string) => exact.includes(k) || patterns.some((p) => p.test(k))
    for (const k of [
      'merge-engine',
      'ignore-delete',
      'partial-update.ignore-delete',
      'ignore-update-before',
      'sequence.field',
      'sequence.field.sort-order',
      'partial-update.remove-record-on-delete',
      'aggregation.remove-record-on-delete',
      'fields.default-aggregate-function',
      'fields.v.aggregate-function',
      'fields.v.ignore-retract',
      'fields.s.list-agg-delimiter',
      'fields.s.distinct',
      'fields.a,b.sequence-group',
    ]) {
      expect(known(k), k).toBe(true)
    }
    for (const k of ['bucket', 'fields.v.default-value', 'fields.aggregate-function', 'merge-engine.x']) expect(known(k), k).toBe(false)
  })
})

describe('sequenceComparator', () => {
  it('orders by sequence number without sequence.field', () => {
    const cmp = sequenceComparator(cfgOf({}))
    expect(cmp(rec(1, I, 9n, 0), rec(2, I, 1n, 0))).toBeLessThan(0)
    expect(cmp(rec(2, I, 1n, 0), rec(2, I, 9n, 0))).toBe(0)
  })
  it('orders by sequence.field first, nulls first in both orders, then sequence number', () => {
    const asc = sequenceComparator(cfgOf({ 'sequence.field': 'ts' }))
    expect(asc(rec(1, I, 9n, 0), rec(2, I, 1n, 0))).toBeGreaterThan(0)
    expect(asc(rec(5, I, null, 0), rec(2, I, 1n, 0))).toBeLessThan(0)
    expect(asc(rec(1, I, 3n, 0), rec(2, I, 3n, 0))).toBeLessThan(0)
    const desc = sequenceComparator(cfgOf({ 'sequence.field': 'ts', 'sequence.field.sort-order': 'descending' }))
    expect(desc(rec(1, I, 9n, 0), rec(2, I, 1n, 0))).toBeLessThan(0)
    expect(desc(rec(5, I, null, 0), rec(2, I, 1n, 0))).toBeLessThan(0)
    const two = sequenceComparator(cfgOf({ 'sequence.field': 'ts,s' }))
    expect(two(rec(9, I, 1n, 0, 'b'), rec(1, I, 1n, 0, '\u{1f600}'))).toBeLessThan(0)
  })
})

describe('deduplicate', () => {
  const cfg = cfgOf({})
  it('keeps the latest record whatever its kind', () => {
    expect(merge(cfg, [rec(1, I, null, 1), rec(3, UA, null, 3), rec(2, UA, null, 2)])).toEqual(rec(3, UA, null, 3))
    expect(merge(cfg, [rec(1, I, null, 1), rec(2, D, null, 1)])).toEqual(rec(2, D, null, 1))
    expect(merge(cfg, [rec(2, I, null, 2), rec(1, UB, null, 1)])).toEqual(rec(2, I, null, 2))
  })
  it('with ignore-delete drops -U/-D, and a key of only retractions has no record', () => {
    const cfgIgnore = cfgOf({ 'ignore-delete': 'true' })
    expect(merge(cfgIgnore, [rec(1, I, null, 1), rec(2, D, null, 1)])).toEqual(rec(1, I, null, 1))
    expect(merge(cfgIgnore, [rec(1, UB, null, 1), rec(2, D, null, 1)])).toBeNull()
    const engine = createEngineMergeFunction(cfgIgnore)
    engine.add(rec(1, I, null, 1))
    engine.add(rec(2, UB, null, 1))
    expect(engine.result()).toEqual(rec(1, I, null, 1))
  })
  it('with ignore-update-before drops only -U', () => {
    const c = cfgOf({ 'ignore-update-before': 'true' })
    expect(merge(c, [rec(1, I, null, 1), rec(2, UB, null, 1)])).toEqual(rec(1, I, null, 1))
    expect(merge(c, [rec(1, I, null, 1), rec(2, D, null, 1)])).toEqual(rec(2, D, null, 1))
  })
  it('follows sequence.field over arrival order', () => {
    const c = cfgOf({ 'sequence.field': 'ts' })
    expect(merge(c, [rec(1, I, 10n, 1), rec(2, I, 5n, 2), rec(3, I, null, 3)])).toEqual(rec(1, I, 10n, 1))
  })
})

describe('first-row', () => {
  const cfg = cfgOf({ 'merge-engine': 'first-row' })
  it('keeps the first record and its kind', () => {
    expect(merge(cfg, [rec(2, I, null, 2), rec(1, UA, null, 1), rec(3, I, null, 3)])).toEqual(rec(1, UA, null, 1))
  })
  it("refuses retractions with Paimon's message unless ignore-delete", () => {
    const e = errorOf(() => merge(cfg, [rec(1, I, null, 1), rec(2, D, null, 1)]))
    expect(e).toBeInstanceOf(StrataInputError)
    expect(e.message).toContain('By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records')
    expect(e.message).toContain("'ignore-delete'")
    const ignoring = cfgOf({ 'merge-engine': 'first-row', 'ignore-delete': 'true' })
    expect(merge(ignoring, [rec(1, D, null, 1), rec(2, I, null, 2), rec(3, UB, null, 2)])).toEqual(rec(2, I, null, 2))
    expect(merge(ignoring, [rec(1, D, null, 1), rec(2, UB, null, 2)])).toBeNull()
  })
  it('passes a lone retraction through, as Paimon\'s reducer does', () => {
    expect(merge(cfg, [rec(1, D, null, 1)])).toEqual(rec(1, D, null, 1))
  })
})

describe('partial-update', () => {
  const cfg = cfgOf({ 'merge-engine': 'partial-update' })
  it('lets non-null fields of later records overwrite, result +I with the last sequence number', () => {
    const out = merge(cfg, [rec(1, I, 1n, 10, 'a'), rec(2, UA, null, null, 'b'), rec(3, I, 3n, null, null)])
    expect(out).toEqual({ key: [1], seq: 3n, kind: I, value: [1, 3n, 10, 'b'] })
  })
  it("refuses delete records with Paimon's message naming the options that allow them", () => {
    const e = errorOf(() => merge(cfg, [rec(1, I, null, 1), rec(2, D, null, 1)]))
    expect(e).toBeInstanceOf(StrataInputError)
    expect(e.message).toContain('By default, Partial update can not accept delete records')
    expect(e.message).toContain("'ignore-delete'")
    expect(e.message).toContain("'partial-update.remove-record-on-delete'")
    expect(() => merge(cfg, [rec(1, I, null, 1), rec(2, UB, null, 1)])).toThrow(/can not accept delete records/)
  })
  it('with ignore-delete (or partial-update.ignore-delete) skips retractions', () => {
    const c = cfgOf({ 'merge-engine': 'partial-update', 'partial-update.ignore-delete': 'true' })
    expect(merge(c, [rec(1, I, null, 1, 'a'), rec(2, D, null, null), rec(3, UA, null, null, 'c')])).toEqual({ key: [1], seq: 3n, kind: I, value: [1, null, 1, 'c'] })
    // the engine alone, as for files written without the write-time filter
    const engine = createEngineMergeFunction(c)
    engine.add(rec(4, D, null, 1))
    engine.add(rec(5, UB, null, 1))
    // the first retraction still starts the row (Paimon's initRow, every field since 1.4.1)
    expect(engine.result()).toEqual({ key: [1], seq: 0n, kind: D, value: [1, null, 1, null] })
  })
  it('with remove-record-on-delete: -D removes the row, -U is skipped', () => {
    const c = cfgOf({ 'merge-engine': 'partial-update', 'partial-update.remove-record-on-delete': 'true' })
    expect(merge(c, [rec(1, I, null, 1, 'a'), rec(2, D, null, null)])).toEqual({ key: [1], seq: 2n, kind: D, value: [1, null, null, null] })
    expect(merge(c, [rec(1, I, null, 1, 'a'), rec(2, D, null, null), rec(3, I, null, null, 'c')])).toEqual({ key: [1], seq: 3n, kind: I, value: [1, null, null, 'c'] })
    expect(merge(c, [rec(1, I, null, 1, 'a'), rec(2, UB, null, 1, 'a')])).toEqual({ key: [1], seq: 2n, kind: I, value: [1, null, 1, 'a'] })
    expect(merge(c, [rec(1, UB, null, 1), rec(2, UB, null, 2)])).toEqual({ key: [1], seq: 2n, kind: D, value: [1, null, 1, null] })
    // a -D that carries values restarts the row from them (Paimon >= 1.4.1, apache/paimon#7645)
    expect(merge(c, [rec(1, I, null, 1, 'a'), rec(2, D, null, 1, 'a'), rec(3, I, null, null, 'c')])).toEqual({ key: [1], seq: 3n, kind: I, value: [1, null, 1, 'c'] })
  })
  it('refuses null in a NOT NULL field', () => {
    const fields = [...FIELDS.slice(0, 3), field(3, 's', type('VARCHAR', false, { length: 10 }))]
    const c = cfgOf({ 'merge-engine': 'partial-update' }, fields)
    expect(() => merge(c, [rec(1, I, null, 1, 'a'), rec(2, I, null, 2, null)])).toThrow(/Field 3 \('s', NOT NULL\) can not be null/)
  })
})

describe('aggregation', () => {
  const cfg = cfgOf({ 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum', 'fields.s.aggregate-function': 'max' })
  it('aggregates each field, keeps the key, and gives +I with the last key and sequence number', () => {
    const out = merge(cfg, [rec(1, I, 5n, 1, 'a'), rec(2, UA, null, 2, 'c'), rec(3, I, 7n, null, 'b')])
    expect(out).toEqual({ key: [1], seq: 3n, kind: I, value: [1, 7n, 3, 'c'] })
  })
  it('applies retractions where the function supports them and refuses them elsewhere', () => {
    const sumOnly = cfgOf({ 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum' })
    expect(merge(sumOnly, [rec(1, I, 1n, 10), rec(2, UB, 1n, 4), rec(3, UA, 2n, 6)])).toEqual({ key: [1], seq: 3n, kind: I, value: [1, 2n, 12, null] })
    expect(() => merge(cfg, [rec(1, I, null, 10, 'a'), rec(2, UB, null, 4, 'a')])).toThrow(/Aggregate function 'max' does not support retraction.*'fields.s.ignore-retract'='true'/)
    const ignoring = cfgOf({ 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum', 'fields.s.aggregate-function': 'max', 'fields.s.ignore-retract': 'true' })
    expect(merge(ignoring, [rec(1, I, null, 10, 'a'), rec(2, UB, null, 4, 'a')])?.value).toEqual([1, null, 6, 'a'])
  })
  it('with aggregation.remove-record-on-delete, -D removes the row and later records start over', () => {
    const c = cfgOf({ 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum', 'aggregation.remove-record-on-delete': 'true' })
    // the row restarts from the -D's values (Paimon >= 1.4.1): later records add to them
    expect(merge(c, [rec(1, I, null, 10), rec(2, D, null, 10)])).toEqual({ key: [1], seq: 2n, kind: D, value: [1, null, 10, null] })
    expect(merge(c, [rec(1, I, null, 10), rec(2, D, null, 10), rec(3, I, null, 5)])).toEqual({ key: [1], seq: 3n, kind: I, value: [1, null, 15, null] })
    // a -D of the key alone starts over from nothing
    expect(merge(c, [rec(1, I, null, 10), rec(2, D, null, null), rec(3, I, null, 5)])).toEqual({ key: [1], seq: 3n, kind: I, value: [1, null, 5, null] })
    // -U still retracts
    expect(merge(c, [rec(1, I, null, 10), rec(2, UB, null, 3)])?.value).toEqual([1, null, 7, null])
  })
  it('with ignore-delete never sees retractions (Paimon filters them at write)', () => {
    const c = cfgOf({ 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'max', 'ignore-delete': 'true' })
    expect(merge(c, [rec(1, I, null, 10), rec(2, D, null, 10), rec(3, I, null, 5)])?.value).toEqual([1, null, 10, null])
  })
  it('gives sequence fields the latest value and orders by them', () => {
    const c = cfgOf({ 'merge-engine': 'aggregation', 'sequence.field': 'ts', 'fields.v.aggregate-function': 'last_value' })
    expect(merge(c, [rec(1, I, 9n, 1), rec(2, I, 3n, 2), rec(3, I, null, 3)])).toEqual({ key: [1], seq: 1n, kind: I, value: [1, 9n, 1, null] })
  })
})

// ---- properties against small independent models -------------------------------------------

interface Rec {
  kind: RowKind
  ts: bigint | null
  v: number | null
  s: string | null
}
const kindArb = fc.constantFrom<RowKind>(I, UB, UA, D)
const recArb = (kinds: fc.Arbitrary<RowKind>) =>
  fc.record<Rec>({
    kind: kinds,
    ts: fc.option(fc.bigInt({ min: -3n, max: 3n }), { nil: null }),
    v: fc.option(fc.integer(), { nil: null }),
    s: fc.option(fc.constantFrom('a', 'b', '\u{1f600}', '\uffff'), { nil: null }),
  })

/** Records with distinct sequence numbers, given in a shuffled arrival order. */
const historyArb = (kinds: fc.Arbitrary<RowKind>) =>
  fc.array(recArb(kinds), { minLength: 1, maxLength: 12 }).chain((rs) =>
    fc.shuffledSubarray(rs.map((r, i) => ({ ...r, seq: BigInt(i * 7 - 20) })), { minLength: rs.length, maxLength: rs.length }),
  )
const toKv = (r: Rec & { seq: bigint }): KeyValue => ({ key: [1], seq: r.seq, kind: r.kind, value: [1, r.ts, r.v, r.s] })

/** Model order: sequence field (nulls oldest; descending flips only non-null values), then seq. */
function modelOrder(useTs: boolean, descending: boolean) {
  return (a: KeyValue, b: KeyValue): number => {
    if (useTs) {
      const x = a.value[1] as bigint | null
      const y = b.value[1] as bigint | null
      if (x === null && y !== null) return -1
      if (x !== null && y === null) return 1
      if (x !== null && y !== null && x !== y) return (x < y ? -1 : 1) * (descending ? -1 : 1)
    }
    return a.seq < b.seq ? -1 : 1
  }
}
const orderArb = fc.record({ useTs: fc.boolean(), descending: fc.boolean() })
const seqOptions = (o: { useTs: boolean; descending: boolean }): Record<string, string> =>
  o.useTs ? { 'sequence.field': 'ts', 'sequence.field.sort-order': o.descending ? 'descending' : 'ascending' } : {}

function latest(kvs: KeyValue[], order: (a: KeyValue, b: KeyValue) => number): KeyValue | null {
  return kvs.reduce<KeyValue | null>((best, kv) => (best === null || order(kv, best) > 0 ? kv : best), null)
}

describe('engines against models', () => {
  it('deduplicate keeps the greatest record by order (ignore-delete: the greatest add)', () => {
    fc.assert(
      fc.property(historyArb(kindArb), orderArb, fc.boolean(), (hist, o, ignoreDelete) => {
        const kvs = hist.map(toKv)
        const cfg = cfgOf({ ...seqOptions(o), 'ignore-delete': String(ignoreDelete) })
        const candidates = ignoreDelete ? kvs.filter((kv) => !isRetract(kv.kind)) : kvs
        expect(merge(cfg, kvs)).toEqual(latest(candidates, modelOrder(o.useTs, o.descending)))
      }),
    )
  })

  it('first-row keeps the least add record by order', () => {
    fc.assert(
      fc.property(historyArb(kindArb), (hist) => {
        const kvs = hist.map(toKv)
        const cfg = cfgOf({ 'merge-engine': 'first-row', 'ignore-delete': 'true' })
        const adds = kvs.filter((kv) => !isRetract(kv.kind))
        const order = modelOrder(false, false)
        const first = adds.reduce<KeyValue | null>((best, kv) => (best === null || order(kv, best) < 0 ? kv : best), null)
        expect(merge(cfg, kvs)).toEqual(first)
      }),
    )
  })

  it('partial-update folds non-null fields in order', () => {
    fc.assert(
      fc.property(historyArb(fc.constantFrom<RowKind>(I, UA)), orderArb, (hist, o) => {
        const kvs = hist.map(toKv)
        const sorted = [...kvs].sort(modelOrder(o.useTs, o.descending))
        const row: Row = [null, null, null, null]
        for (const kv of sorted) kv.value.forEach((x, i) => x !== null && (row[i] = x))
        const want = { key: [1], seq: sorted[sorted.length - 1].seq, kind: I, value: row }
        expect(merge(cfgOf({ 'merge-engine': 'partial-update', ...seqOptions(o) }), kvs)).toEqual(want)
      }),
    )
  })

  it('aggregation sum is the wrapped sum of adds minus retractions', () => {
    fc.assert(
      fc.property(historyArb(kindArb), (hist) => {
        const kvs = hist.map(toKv)
        const cfg = cfgOf({ 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum', 'fields.ts.aggregate-function': 'sum' })
        const out = merge(cfg, kvs)
        const sorted = [...kvs].sort(modelOrder(false, false))
        if (sorted.length === 1 && isRetract(sorted[0].kind)) {
          // Paimon's reducer returns a lone retraction as it is
          expect(out).toEqual(sorted[0])
          return
        }
        const total = (i: number) => {
          let t = 0n
          let any = false
          for (const kv of sorted) {
            const x = kv.value[i]
            if (x === null) continue
            any = true
            t += (isRetract(kv.kind) ? -1n : 1n) * BigInt(x as number | bigint)
          }
          return any ? t : null
        }
        const v = total(2)
        const ts = total(1)
        expect(out?.kind).toBe(I)
        expect(out?.seq).toBe(sorted[sorted.length - 1].seq)
        expect(out?.value.slice(0, 3)).toEqual([1, ts === null ? null : BigInt.asIntN(64, ts), v === null ? null : Number(BigInt.asIntN(32, v))])
        // last_non_null_value (the default) on s: the last non-null value, unless it was retracted
        const lastTouch = [...sorted].reverse().find((kv) => kv.value[3] !== null)
        expect(out?.value[3]).toBe(lastTouch === undefined || isRetract(lastTouch.kind) ? null : lastTouch.value[3])
      }),
    )
  })
})
