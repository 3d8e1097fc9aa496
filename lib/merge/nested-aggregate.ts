// Field aggregate functions over nested values (Paimon's FieldCollectAgg, FieldMergeMapAgg,
// FieldMergeMapWithKeyTimeAgg, FieldNestedUpdateAgg, FieldNestedPartialUpdateAgg in paimon-core
// mergetree/compact/aggregate, and their factories' type checks). Values are compared with
// lib/merge/value-equality.ts.
//
// Where Paimon collects into a Java HashMap or HashSet, the order of the result (an ARRAY's
// elements, a MAP's entries) follows Java's hashing, which nothing specifies; Strata keeps the
// order in which values first appear (an entry a later value replaces keeps its place). The
// elements and entries are the same; docs/format.md "Merge engines" says so.

import { StrataInputError } from '../errors.ts'
import type { DataField, DataType, MapValue, Value } from '../types.ts'
import { formatDataType } from '../format/data-type.ts'
import { valueKey, valuesEqual } from './value-equality.ts'

/** The nested aggregate functions, by their Paimon identifiers. */
export const NESTED_AGGREGATE_FUNCTIONS = ['collect', 'merge_map', 'merge_map_with_keytime', 'nested_update', 'nested_partial_update'] as const
export type NestedAggregateName = (typeof NESTED_AGGREGATE_FUNCTIONS)[number]

export function isNestedAggregate(name: string): name is NestedAggregateName {
  return (NESTED_AGGREGATE_FUNCTIONS as readonly string[]).includes(name)
}

/** The options of one field a nested aggregate reads. */
export interface NestedAggregateOptions {
  /** `fields.<f>.distinct` (collect) */
  distinct?: boolean
  /** `fields.<f>.nested-key`, split on "," and trimmed (nested_update, nested_partial_update) */
  nestedKey?: readonly string[]
  /** `fields.<f>.count-limit` (nested_update; default Integer.MAX_VALUE) */
  countLimit?: number
  /** `fields.<f>.ts-field` (merge_map_with_keytime; default the ROW's last field) */
  tsField?: string | null
}

/** `agg` and `retract` of one nested aggregate; no `retract` when Paimon's function has none. */
export interface NestedAggregatorParts {
  agg(acc: Value, input: Value): Value
  retract?: (acc: Value, input: Value) => Value
}

/**
 * The factory's type check of a nested aggregate on a field of `type`, with Paimon's message
 * (thrown by `bad`), and the check of the options it reads.
 */
export function checkNestedAggregate(name: NestedAggregateName, field: string, type: DataType, opts: NestedAggregateOptions, bad: (why: string) => Error): void {
  const shown = formatDataType(type)
  switch (name) {
    case 'collect':
      if (type.root !== 'ARRAY') throw bad(`Data type for collect column must be 'Array' but was '${shown}'.`)
      return
    case 'merge_map':
      if (type.root !== 'MAP') throw bad(`Data type for merge map column must be 'MAP' but was '${shown}'`)
      return
    case 'merge_map_with_keytime':
      timestampFieldOf(field, type, opts.tsField ?? null, bad)
      return
    case 'nested_update':
    case 'nested_partial_update': {
      if (type.root !== 'ARRAY' || type.element!.root !== 'ROW') throw bad(`Data type for nested table column must be 'Array<Row>' but was '${shown}'.`)
      const key = opts.nestedKey ?? []
      if (name === 'nested_partial_update' && key.length === 0) {
        throw bad(`aggregate function 'nested_partial_update' needs the nested key: set 'fields.${field}.nested-key' to the ROW fields that identify an element`)
      }
      nestedKeyIndexes(field, type.element!.fields!, key, bad)
      return
    }
  }
}

/** Positions of the nested key's fields in the element ROW. */
function nestedKeyIndexes(field: string, fields: readonly DataField[], key: readonly string[], bad: (why: string) => Error): number[] {
  return key.map((k) => {
    const i = fields.findIndex((f) => f.name === k)
    if (i < 0) throw bad(`nested key field '${k}' of 'fields.${field}.nested-key' is not a field of the element ROW (fields: ${fields.map((f) => f.name).join(', ')})`)
    return i
  })
}

/** merge_map_with_keytime's timestamp field: its position in the value ROW (Paimon's factory checks, and a string type). */
function timestampFieldOf(field: string, type: DataType, tsField: string | null, bad: (why: string) => Error): number {
  if (type.root !== 'MAP') throw bad(`Data type for field '${field}' must be 'MAP' but was '${formatDataType(type)}'`)
  const value = type.value!
  if (value.root !== 'ROW') throw bad(`Value type of MAP for field '${field}' must be ROW but was '${formatDataType(value)}'`)
  const fields = value.fields!
  if (fields.length < 2) throw bad(`ROW type for field '${field}' must have at least 2 fields, but found ${fields.length}`)
  const i = tsField === null ? fields.length - 1 : fields.findIndex((f) => f.name === tsField)
  if (i < 0) throw bad(`Timestamp field '${tsField}' not found in ROW type for field '${field}'. Available fields: [${fields.map((f) => f.name).join(', ')}]`)
  // Paimon reads it with getString and fails at the first merge on another type; Strata refuses the table.
  const ts = fields[i].type
  if (ts.root !== 'VARCHAR' && ts.root !== 'CHAR') {
    throw bad(`Timestamp field '${fields[i].name}' of the value ROW of field '${field}' is ${formatDataType(ts)}; merge_map_with_keytime compares it as a string, so it must be CHAR or VARCHAR`)
  }
  return i
}

/** The aggregate `name` (checked by checkNestedAggregate) on a field of `type`. */
export function nestedAggregator(name: NestedAggregateName, field: string, type: DataType, opts: NestedAggregateOptions): NestedAggregatorParts {
  const fail = (why: string) => new StrataInputError(why)
  switch (name) {
    case 'collect':
      return collectAggregator(type.element!, opts.distinct ?? false)
    case 'merge_map':
      return mergeMapAggregator(type.key!)
    case 'merge_map_with_keytime':
      return mergeMapWithKeyTimeAggregator(type.key!, timestampFieldOf(field, type, opts.tsField ?? null, fail))
    case 'nested_update':
      return nestedUpdateAggregator(type.element!, nestedKeyIndexes(field, type.element!.fields!, opts.nestedKey ?? [], fail), opts.countLimit ?? 2147483647)
    case 'nested_partial_update':
      return nestedPartialUpdateAggregator(type.element!, nestedKeyIndexes(field, type.element!.fields!, opts.nestedKey ?? [], fail))
  }
}

/** Elements in order of first appearance, each once. */
function distinctInto(out: Value[], seen: Set<string>, element: DataType, values: readonly Value[]): void {
  for (const v of values) {
    const k = valueKey(element, v)
    if (seen.has(k)) continue
    seen.add(k)
    out.push(v)
  }
}

/**
 * FieldCollectAgg. Without distinct: the accumulator's elements, then the input's. With
 * distinct: each element once (Paimon's HashSet, or its equaliser for nested elements, where
 * it leaves the accumulator as it is: it is already distinct). Retraction takes out one
 * matching element of the accumulator per retracted element.
 */
function collectAggregator(element: DataType, distinct: boolean): NestedAggregatorParts {
  return {
    agg(acc, input) {
      if (acc === null && input === null) return null
      if (!distinct) {
        if (acc === null || input === null) return acc === null ? input : acc
        return [...(acc as Value[]), ...(input as Value[])]
      }
      const out: Value[] = []
      const seen = new Set<string>()
      if (acc !== null) distinctInto(out, seen, element, acc as Value[])
      if (input !== null) distinctInto(out, seen, element, input as Value[])
      return out
    },
    retract(acc, input) {
      if (acc === null) return null
      if (input === null || (input as Value[]).length === 0) return acc
      const pending = (input as Value[]).slice()
      return (acc as Value[]).filter((candidate) => {
        const j = pending.findIndex((r) => valuesEqual(element, r, candidate))
        if (j < 0) return true
        pending.splice(j, 1)
        return false
      })
    },
  }
}

/** Entries of a map keyed by valueKey, in first-appearance order. */
class OrderedEntries {
  readonly entries = new Map<string, [Value, Value]>()
  constructor(private readonly keyType: DataType) {}
  put(k: Value, v: Value): void {
    const key = valueKey(this.keyType, k)
    const e = this.entries.get(key)
    if (e) e[1] = v
    else this.entries.set(key, [k, v])
  }
  putAll(m: MapValue): void {
    for (let i = 0; i < m.keys.length; i++) this.put(m.keys[i], m.values[i])
  }
  toMap(): MapValue {
    const keys: Value[] = []
    const values: Value[] = []
    for (const [k, v] of this.entries.values()) {
      keys.push(k)
      values.push(v)
    }
    return { keys, values }
  }
}

/** FieldMergeMapAgg: the input's entries override the accumulator's; retraction removes the retracted keys. */
function mergeMapAggregator(keyType: DataType): NestedAggregatorParts {
  return {
    agg(acc, input) {
      if (acc === null || input === null) return acc === null ? input : acc
      const out = new OrderedEntries(keyType)
      out.putAll(acc as MapValue)
      out.putAll(input as MapValue)
      return out.toMap()
    },
    retract(acc, input) {
      if (acc === null) return null
      if (input === null || (input as MapValue).keys.length === 0) return acc
      const gone = new Set((input as MapValue).keys.map((k) => valueKey(keyType, k)))
      const out = new OrderedEntries(keyType)
      const m = acc as MapValue
      for (let i = 0; i < m.keys.length; i++) if (!gone.has(valueKey(keyType, m.keys[i]))) out.put(m.keys[i], m.values[i])
      return out.toMap()
    },
  }
}

/**
 * FieldMergeMapWithKeyTimeAgg: an input entry whose ROW is null removes the key; one whose
 * timestamp is null is skipped; otherwise it replaces the held entry unless that one's
 * timestamp is not null and not before it (Java String.compareTo: UTF-16 code units, as JS).
 * No retraction, as in Paimon.
 */
function mergeMapWithKeyTimeAggregator(keyType: DataType, ts: number): NestedAggregatorParts {
  return {
    agg(acc, input) {
      if (acc === null) return input
      if (input === null) return acc
      const out = new OrderedEntries(keyType)
      out.putAll(acc as MapValue)
      const m = input as MapValue
      for (let i = 0; i < m.keys.length; i++) {
        const key = valueKey(keyType, m.keys[i])
        const row = m.values[i] as Value[] | null
        if (row === null) {
          out.entries.delete(key)
          continue
        }
        const newTs = row[ts] as string | null
        if (newTs === null) continue
        const held = out.entries.get(key)?.[1] as Value[] | null | undefined
        const heldTs = held ? (held[ts] as string | null) : null
        if (heldTs === null || newTs > heldTs) out.put(m.keys[i], row)
      }
      return out.toMap()
    },
  }
}

function nonNullRows(array: Value): Value[][] {
  return (array as Value[]).filter((e): e is Value[] => e !== null)
}

/** Rows by their nested key (the key fields' valueKey), in first-appearance order. */
function rowKeyOf(element: DataType, key: readonly number[]): (row: Value[]) => string {
  const fields = element.fields!
  return (row) => key.map((i) => valueKey(fields[i].type, row[i] ?? null)).join('|')
}

/**
 * FieldNestedUpdateAgg on ARRAY<ROW>. With a nested key, a row replaces the held row of its
 * key; without one, rows are appended. Null elements are dropped once two values meet.
 * `count-limit`: an accumulator holding that many elements (nulls counted) takes nothing
 * more, and an input adds at most the elements that fill it (before rows of one key merge).
 * Retraction removes the rows of the retracted rows' keys, or without a key every row equal
 * to a retracted row.
 */
function nestedUpdateAggregator(element: DataType, key: readonly number[], countLimit: number): NestedAggregatorParts {
  const keyOf = key.length > 0 ? rowKeyOf(element, key) : null
  return {
    agg(acc, input) {
      if (acc === null || input === null) return acc === null ? input : acc
      const held = acc as Value[]
      if (held.length >= countLimit) return acc
      const rows = [...nonNullRows(held), ...nonNullRows(input).slice(0, countLimit - held.length)]
      if (keyOf === null) return rows
      const byKey = new Map<string, Value[]>()
      for (const r of rows) byKey.set(keyOf(r), r)
      return [...byKey.values()]
    },
    retract(acc, input) {
      if (acc === null || input === null) return acc
      const retracted = nonNullRows(input)
      if (keyOf === null) return nonNullRows(acc).filter((r) => !retracted.some((x) => valuesEqual(element, x, r)))
      const byKey = new Map<string, Value[]>()
      for (const r of nonNullRows(acc)) byKey.set(keyOf(r), r)
      for (const r of retracted) byKey.delete(keyOf(r))
      return [...byKey.values()]
    },
  }
}

/**
 * FieldNestedPartialUpdateAgg on ARRAY<ROW>: rows of one nested key merge field by field,
 * each field taking its last non-null value. No retraction, as in Paimon.
 */
function nestedPartialUpdateAggregator(element: DataType, key: readonly number[]): NestedAggregatorParts {
  const keyOf = rowKeyOf(element, key)
  const width = element.fields!.length
  return {
    agg(acc, input) {
      if (acc === null || input === null) return acc === null ? input : acc
      const byKey = new Map<string, Value[]>()
      for (const r of [...nonNullRows(acc), ...nonNullRows(input)]) {
        const k = keyOf(r)
        let merged = byKey.get(k)
        if (!merged) byKey.set(k, (merged = new Array<Value>(width).fill(null)))
        for (let i = 0; i < width; i++) if ((r[i] ?? null) !== null) merged[i] = r[i]
      }
      return [...byKey.values()]
    },
  }
}
