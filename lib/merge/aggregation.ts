// The aggregation engine (paimon-core mergetree/compact/aggregate/AggregateMergeFunction): each
// field folds its values with an aggregate function (lib/merge/aggregate.ts); the result is a
// fresh +I, or -D when the last record was a -D under `aggregation.remove-record-on-delete`,
// with the key and sequence number of the last record.

import { StrataInputError } from '../errors.ts'
import { RowKind, isRetract, type DataField, type DataType, type KeyValue, type Row } from '../types.ts'
import { formatDataType } from '../format/data-type.ts'
import { createFieldAggregator, resolveAggregateFunction, type AggregateFunctionName, type FieldAggregator } from './aggregate.ts'
import type { EngineOptions, MergeEngineDescriptor } from './descriptor.ts'
import { initRow } from './merge-rows.ts'
import type { FieldAggregation, MergeEngineConfig, MergeFunction } from './merge-types.ts'
import type { NestedAggregateOptions } from './nested-aggregate.ts'
import { invalid, parseBool, parseJavaInt } from './option-values.ts'

class AggregateMergeFunction implements MergeFunction {
  private latest: KeyValue | null = null
  private row: Row = []
  private deleteRow = false
  private records = 0
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
    this.records = 0
  }

  add(kv: KeyValue): void {
    this.latest = kv
    this.records++
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
    // A key's lone adding record keeps its values as they are: Paimon's reducer returns it
    // without aggregating. Every function's first input is its result, except collect with
    // distinct, which would drop the duplicates of a lone array.
    const lone = this.records === 1 && !isRetract(this.latest.kind)
    const value = lone ? this.latest.value.slice() : this.row.slice()
    return { key: this.latest.key, seq: this.latest.seq, kind: this.deleteRow ? RowKind.DELETE : RowKind.INSERT, value }
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

/** Java's String.split(","): trailing empty strings dropped. */
function javaSplit(text: string): string[] {
  const parts = text.split(',')
  while (parts.length > 1 && parts[parts.length - 1] === '') parts.pop()
  return parts
}

/**
 * The options of field `name` the nested aggregates read (CoreOptions
 * fieldNestedUpdateAggNestedKey, fieldNestedUpdateAggCountLimit, fieldMergeMapTsField).
 */
function nestedOptions({ fieldOption }: EngineOptions, f: DataField): Required<Omit<NestedAggregateOptions, 'distinct'>> {
  const key = fieldOption(f.name, 'nested-key')
  const limit = fieldOption(f.name, 'count-limit')
  const tsField = fieldOption(f.name, 'ts-field') ?? null
  const nestedKey = key === undefined ? [] : javaSplit(key).map((k) => k.trim())
  // Paimon ignores these keys unless the field's function reads them; Strata checks that they
  // name fields of the ROW they point into, so a misspelt key fails at create.
  const element = f.type.root === 'ARRAY' && f.type.element!.root === 'ROW' ? f.type.element! : null
  if (key !== undefined) checkRowFields(`fields.${f.name}.nested-key`, key, nestedKey, element, `an ARRAY<ROW> field's element ROW`, f)
  const value = f.type.root === 'MAP' && f.type.value!.root === 'ROW' ? f.type.value! : null
  if (tsField !== null) checkRowFields(`fields.${f.name}.ts-field`, tsField, [tsField], value, `a MAP field's value ROW`, f)
  return {
    nestedKey,
    countLimit: limit === undefined ? 2147483647 : parseJavaInt(`fields.${f.name}.count-limit`, limit),
    tsField,
  }
}

function checkRowFields(optionKey: string, text: string, names: readonly string[], row: DataType | null, where: string, f: DataField): void {
  if (row === null) throw invalid(optionKey, text, `it names fields of ${where}, and field '${f.name}' is ${formatDataType(f.type)}`)
  const known = row.fields!.map((x) => x.name)
  for (const n of names) {
    if (!known.includes(n)) throw invalid(optionKey, text, `'${n}' is not a field of the ROW of field '${f.name}' (fields: ${known.join(', ')})`)
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
    const nested = nestedOptions(options, f)
    // sequence fields take the latest value, keys stay as they are
    const explicit = fieldOption(f.name, 'aggregate-function')
    let fn: AggregateFunctionName
    if (sequenceFields.has(f.name)) fn = 'last_value'
    else if (common.primaryKeys.includes(f.name)) fn = 'primary-key'
    else if (explicit !== undefined) fn = resolveAggregateFunction(`fields.${f.name}.aggregate-function`, explicit, f.name, f.type, nested)
    else if (defaultFunction !== undefined) fn = resolveAggregateFunction('fields.default-aggregate-function', defaultFunction, f.name, f.type, nested)
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
      ...nested,
    })
  }
  return aggregations
}

export const AGGREGATION: MergeEngineDescriptor = {
  name: 'aggregation',
  optionKeys: ['aggregation.remove-record-on-delete', 'fields.default-aggregate-function'],
  fieldOptions: {
    'aggregate-function': 'text',
    'ignore-retract': 'boolean',
    'list-agg-delimiter': 'text',
    distinct: 'boolean',
    'nested-key': 'text',
    'count-limit': 'text',
    'ts-field': 'text',
  },
  configure: configureAggregations,
  refusals: { sequenceField: null, deletionVectors: null, changelogProducers: null, retractions: true, optionKeys: {}, fieldOptions: {} },
  keepsOneRecord: false,
  // a lone +I keeps its values as they are (AggregateMergeFunction.result, as Paimon's reducer);
  // the fold runs the merge function on Values, nested ones included
  columnar: { keeps: 'fold', keepsAlone: (kind) => kind === RowKind.INSERT, refusesNullInNotNull: false },
  lookup: { always: false, newerReplacesOlder: false, changelog: 'before-and-after' },
  createMergeFunction: (cfg) => new AggregateMergeFunction(cfg),
}
