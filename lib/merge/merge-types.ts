// The types every part of the merge floor shares: an engine's name, a merge function, and the
// parsed options that decide merging (lib/merge/merge-config.ts parses them).

import type { DataField, KeyValue } from '../types.ts'
import type { AggregateFunctionName } from './aggregate.ts'

/** Paimon's `merge-engine` values Strata implements. */
export type MergeEngineName = 'deduplicate' | 'partial-update' | 'aggregation' | 'first-row'

export interface MergeFunction {
  reset(): void
  /** called for one key's records in merge order (oldest first, see sequenceComparator) */
  add(kv: KeyValue): void
  /** the merged record for the key, or null when the key has no record at all */
  result(): KeyValue | null
}

/** How the aggregation engine folds one field. */
export interface FieldAggregation {
  function: AggregateFunctionName
  ignoreRetract: boolean
  listAggDelimiter: string
  distinct: boolean
  /** `fields.<f>.nested-key` (nested_update, nested_partial_update), empty when unset */
  nestedKey?: readonly string[]
  /** `fields.<f>.count-limit` (nested_update) */
  countLimit?: number
  /** `fields.<f>.ts-field` (merge_map_with_keytime), null when unset */
  tsField?: string | null
}

/** The parsed, validated options that decide merging. */
export interface MergeEngineConfig {
  readonly engine: MergeEngineName
  readonly fields: readonly DataField[]
  readonly primaryKeys: readonly string[]
  /** `ignore-delete` (fallback keys first-row./deduplicate./partial-update.ignore-delete) */
  readonly ignoreDelete: boolean
  /** `ignore-update-before` */
  readonly ignoreUpdateBefore: boolean
  /** `sequence.field`, names in order */
  readonly sequenceFields: readonly string[]
  /** positions of `sequenceFields` in the value row */
  readonly sequenceFieldIndexes: readonly number[]
  /** `sequence.field.sort-order` is ascending */
  readonly sequenceAscending: boolean
  readonly partialUpdateRemoveRecordOnDelete: boolean
  readonly aggregationRemoveRecordOnDelete: boolean
  /** aggregation engine: one entry per field in schema order; empty for other engines */
  readonly aggregations: readonly FieldAggregation[]
}
