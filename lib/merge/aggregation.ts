// The aggregation engine (paimon-core mergetree/compact/aggregate/AggregateMergeFunction): each
// field folds its values with an aggregate function (lib/merge/aggregate.ts); the result is a
// fresh +I, or -D when the last record was a -D under `aggregation.remove-record-on-delete`,
// with the key and sequence number of the last record.

import { StrataInputError } from '../errors.ts'
import { RowKind, isRetract, type KeyValue, type Row } from '../types.ts'
import { createFieldAggregator, resolveAggregateFunction, type AggregateFunctionName, type FieldAggregator } from './aggregate.ts'
import type { EngineOptions, MergeEngineDescriptor } from './descriptor.ts'
import { initRow } from './merge-rows.ts'
import type { FieldAggregation, MergeEngineConfig, MergeFunction } from './merge-types.ts'
import { invalid, parseBool } from './option-values.ts'

class AggregateMergeFunction implements MergeFunction {
  private latest: KeyValue | null = null
  private row: Row = []
  private deleteRow = false
  private readonly aggregators: FieldAggregator[]

  constructor(private readonly cfg: MergeEngineConfig) {
    this.aggregators = cfg.fields.map((f, i) => {
      const a = cfg.aggregations[i]
      return createFieldAggregator(a.function, f.name, f.type, a)
    })
    this.reset()
  }

  reset(): void {
    this.latest = null
    this.row = new Array(this.cfg.fields.length).fill(null)
    for (const a of this.aggregators) a.reset()
    this.deleteRow = false
  }

  add(kv: KeyValue): void {
    this.latest = kv
    this.deleteRow = this.cfg.aggregationRemoveRecordOnDelete && kv.kind === RowKind.DELETE
    if (this.deleteRow) {
      // As in Paimon the aggregators are not reset here, so first_value/first_non_null_value
      // stay locked after a removal within one merge.
      this.row = new Array(this.cfg.fields.length).fill(null)
      initRow(this.cfg, this.row, kv)
      return
    }
    const retract = isRetract(kv.kind)
    for (let i = 0; i < this.aggregators.length; i++) {
      const a = this.aggregators[i]
      this.row[i] = retract ? a.retract(this.row[i], kv.value[i]) : a.agg(this.row[i], kv.value[i])
    }
  }

  result(): KeyValue | null {
    if (this.latest === null) return null
    return { key: this.latest.key, seq: this.latest.seq, kind: this.deleteRow ? RowKind.DELETE : RowKind.INSERT, value: this.row.slice() }
  }
}

/**
 * Refuses an aggregate function on a primary key field (aggregation and partial-update).
 * Stricter than Paimon, which silently ignores it.
 */
export function refuseAggregatesOnPrimaryKeys({ common, fieldOption }: EngineOptions): void {
  for (const f of common.fields) {
    const explicit = fieldOption(f.name, 'aggregate-function')
    if (explicit !== undefined && common.primaryKeys.includes(f.name)) {
      throw invalid(`fields.${f.name}.aggregate-function`, explicit, `'${f.name}' is a primary key field; primary key fields are never aggregated`)
    }
  }
}

/** One aggregation per field, in schema order (AggregateMergeFunction.getAggFuncName). */
function configureAggregations(options: EngineOptions): FieldAggregation[] {
  refuseAggregatesOnPrimaryKeys(options)
  const { common, raw, fieldOption } = options
  const defaultFunction = raw['fields.default-aggregate-function']
  const sequenceFields = new Set(common.sequenceFields)
  const aggregations: FieldAggregation[] = []
  for (const f of common.fields) {
    // sequence fields take the latest value, keys stay as they are
    const explicit = fieldOption(f.name, 'aggregate-function')
    let fn: AggregateFunctionName
    if (sequenceFields.has(f.name)) fn = 'last_value'
    else if (common.primaryKeys.includes(f.name)) fn = 'primary-key'
    else if (explicit !== undefined) fn = resolveAggregateFunction(`fields.${f.name}.aggregate-function`, explicit, f.name, f.type)
    else if (defaultFunction !== undefined) fn = resolveAggregateFunction('fields.default-aggregate-function', defaultFunction, f.name, f.type)
    else fn = 'last_non_null_value'
    const ignoreRetract = parseBool(raw, `fields.${f.name}.ignore-retract`)
    if (ignoreRetract && common.aggregationRemoveRecordOnDelete) {
      throw new StrataInputError(
        `Options 'aggregation.remove-record-on-delete' = 'true' and 'fields.${f.name}.ignore-retract' = 'true' have conflicting behavior so should not be enabled at the same time.`,
      )
    }
    aggregations.push({
      function: fn,
      ignoreRetract,
      listAggDelimiter: fieldOption(f.name, 'list-agg-delimiter') ?? ',',
      distinct: parseBool(raw, `fields.${f.name}.distinct`),
    })
  }
  return aggregations
}

export const AGGREGATION: MergeEngineDescriptor = {
  name: 'aggregation',
  optionKeys: ['aggregation.remove-record-on-delete', 'fields.default-aggregate-function'],
  fieldOptions: { 'aggregate-function': 'text', 'ignore-retract': 'boolean', 'list-agg-delimiter': 'text', distinct: 'boolean' },
  configure: configureAggregations,
  refusals: { sequenceField: null, deletionVectors: null, changelogProducers: null, retractions: true, optionKeys: {}, fieldOptions: {} },
  keepsOneRecord: false,
  // a lone +I starts every aggregator from its value: each implemented function returns its first input
  columnar: { keeps: 'fold', keepsAlone: (kind) => kind === RowKind.INSERT, refusesNullInNotNull: false },
  lookup: { always: false, newerReplacesOlder: false, changelog: 'before-and-after' },
  createMergeFunction: (cfg) => new AggregateMergeFunction(cfg),
}
