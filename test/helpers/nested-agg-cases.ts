// A table with ARRAY, MAP and ROW columns under each aggregate over nested values, its inputs
// (a fixed one worked out by hand, seeded random ones) and the rendering both
// test/interop-nested-agg.test.ts and test/nested-aggregate-e2e.test.ts compare rows in.

import fc from 'fast-check'
import type { DataField, DataType, MapValue, Value } from '../../lib/types.ts'
import { renderValue } from './interop.ts'

export const SCHEMA = {
  fields: [
    { name: 'id', type: 'INT NOT NULL' },
    { name: 'tags', type: 'ARRAY<STRING>' },
    { name: 'bag', type: 'ARRAY<INT>' },
    { name: 'attrs', type: 'MAP<STRING, INT>' },
    { name: 'items', type: 'ARRAY<ROW<k INT, v STRING>>' },
    { name: 'log', type: 'ARRAY<ROW<k INT, v STRING>>' },
    { name: 'parts', type: 'ARRAY<ROW<k INT, a STRING, b INT>>' },
    { name: 'kt', type: 'MAP<STRING, ROW<v INT, ts STRING>>' },
    { name: 'info', type: 'ROW<a INT, b STRING>' },
  ],
  primaryKeys: ['id'],
  options: {
    bucket: '1',
    'merge-engine': 'aggregation',
    'fields.tags.aggregate-function': 'collect',
    'fields.tags.distinct': 'true',
    'fields.bag.aggregate-function': 'collect',
    'fields.attrs.aggregate-function': 'merge_map',
    'fields.items.aggregate-function': 'nested_update',
    'fields.items.nested-key': 'k',
    'fields.log.aggregate-function': 'nested_update',
    'fields.parts.aggregate-function': 'nested_partial_update',
    'fields.parts.nested-key': 'k',
    'fields.parts.ignore-retract': 'true',
    'fields.kt.aggregate-function': 'merge_map_with_keytime',
    'fields.kt.ignore-retract': 'true',
    'fields.info.aggregate-function': 'last_non_null_value',
  },
}

/** Fields whose order Paimon leaves to Java's hashing: compared sorted. */
export const UNORDERED = new Set(['tags', 'attrs', 'items', 'parts', 'kt'])

export type Rec = Record<string, unknown>

export const FIXED: Rec[][] = [
  [
    { id: 1, tags: ['a', 'b', 'a'], bag: [1, 2], attrs: [['x', 1]], items: [{ k: 1, v: 'one' }], log: [{ k: 1, v: 'one' }], parts: [{ k: 1, a: 'p', b: null }], kt: [['x', { v: 1, ts: '2024-01-02' }]], info: { a: 1, b: 'i' } },
    { id: 2, tags: ['z', 'z'], bag: [5, 5] },
  ],
  [
    { id: 1, tags: ['b', 'c'], bag: [2, null], attrs: [['y', 2], ['x', null]], items: [{ k: 1, v: 'uno' }, { k: 2, v: 'two' }], log: [null, { k: 2, v: 'two' }], parts: [{ k: 1, a: null, b: 7 }, { k: 2, a: 'q', b: 1 }], kt: [['x', { v: 9, ts: '2024-01-01' }], ['y', { v: 2, ts: 'a' }]] },
    { id: 3, attrs: [['k', 3]], items: [], info: { a: null, b: 'x' } },
  ],
  [
    { _kind: '-U', id: 1, tags: ['c'], bag: [2], attrs: [['x', 0]], items: [{ k: 2, v: null }], log: [{ k: 1, v: 'one' }], parts: [{ k: 1, a: 'zz', b: 0 }], kt: [['x', { v: 0, ts: 'z' }]], info: null },
    { id: 2, tags: ['y'], bag: [6] },
    { _kind: '-D', id: 3, attrs: [['k', 0]], items: [{ k: 5, v: 'f' }] },
  ],
]

// Seeded random commits over small domains, so keys, elements and map keys meet often.
const str = fc.constantFrom('a', 'b', 'c')
const opt = <T>(a: fc.Arbitrary<T>) => fc.option(a, { nil: null, freq: 4 })
const row2 = fc.record({ k: fc.integer({ min: 0, max: 3 }), v: opt(str) })
const record: fc.Arbitrary<Rec> = fc.record({
  _kind: fc.constantFrom('+I', '+I', '+I', '-U', '-D'),
  id: fc.integer({ min: 1, max: 3 }),
  tags: opt(fc.array(opt(str), { maxLength: 3 })),
  bag: opt(fc.array(opt(fc.integer({ min: 0, max: 3 })), { maxLength: 3 })),
  attrs: opt(fc.uniqueArray(fc.tuple(str, opt(fc.integer({ min: 0, max: 9 }))), { maxLength: 3, selector: (e) => e[0] })),
  items: opt(fc.array(opt(row2), { maxLength: 3 })),
  log: opt(fc.array(opt(row2), { maxLength: 2 })),
  parts: opt(fc.array(opt(fc.record({ k: fc.integer({ min: 0, max: 2 }), a: opt(str), b: opt(fc.integer({ min: 0, max: 9 })) })), { maxLength: 3 })),
  kt: opt(fc.uniqueArray(fc.tuple(fc.constantFrom('a', 'b'), opt(fc.record({ v: fc.integer({ min: 0, max: 9 }), ts: opt(fc.constantFrom('1', '2')) }))), { maxLength: 2, selector: (e) => e[0] })),
  info: opt(fc.record({ a: opt(fc.integer({ min: 0, max: 9 })), b: opt(str) })),
})
// a key's first record adds (a retraction of a key that has no row is Paimon's own corner)
export const commits = fc.array(fc.array(record, { minLength: 1, maxLength: 4 }), { minLength: 1, maxLength: 4 }).map((cs) => {
  const seen = new Set<unknown>()
  return cs.map((c) =>
    c.map((r) => {
      const first = !seen.has(r.id)
      seen.add(r.id)
      return first ? { ...r, _kind: '+I' } : r
    }),
  )
})

/** A Strata value as the harness renders a nested one: arrays, [key, value] pairs, objects. */
export function render(field: DataField, v: Value): unknown {
  return renderNested(field.type, v, field)
}
function renderNested(t: DataType, v: Value, f: DataField): unknown {
  if (v === null) return null
  switch (t.root) {
    case 'ARRAY':
      return (v as Value[]).map((e) => renderNested(t.element!, e, f))
    case 'MAP': {
      const m = v as MapValue
      return m.keys.map((k, i) => [renderNested(t.key!, k, f), renderNested(t.value!, m.values[i], f)])
    }
    case 'ROW':
      return Object.fromEntries(t.fields!.map((x, i) => [x.name, renderNested(x.type, (v as Value[])[i], f)]))
    default:
      return renderValue({ ...f, type: t }, v)
  }
}

/** Rows as text, by key, the unordered fields' arrays sorted. */
export function normalize(rows: Rec[]): string[] {
  const sortArray = (a: unknown) => (Array.isArray(a) ? a.map((x) => JSON.stringify(x)).sort() : a)
  return rows
    .map((r) => JSON.stringify(Object.fromEntries(Object.entries(r).map(([k, v]) => [k, UNORDERED.has(k) ? sortArray(v) : v]))))
    .sort((a, b) => (JSON.parse(a).id as number) - (JSON.parse(b).id as number))
}

/** What the fixed input merges to (Paimon 1.4.2 reads the same). */
export const FIXED_EXPECTED: Rec[] = [
  { id: 1, tags: ['a', 'b'], bag: [1, 2, null], attrs: [['y', 2]], items: [{ k: 1, v: 'uno' }], log: [{ k: 2, v: 'two' }], parts: [{ k: 1, a: 'p', b: 7 }, { k: 2, a: 'q', b: 1 }], kt: [['x', { v: 1, ts: '2024-01-02' }], ['y', { v: 2, ts: 'a' }]], info: { a: 1, b: 'i' } },
  // a key's lone record is kept as it is; a second record collects distinct
  { id: 2, tags: ['z', 'y'], bag: [5, 5, 6], attrs: null, items: null, log: null, parts: null, kt: null, info: null },
  // without remove-record-on-delete a -D retracts field by field and the row stays
  { id: 3, tags: null, bag: null, attrs: [], items: [], log: null, parts: null, kt: null, info: { a: null, b: 'x' } },
]
