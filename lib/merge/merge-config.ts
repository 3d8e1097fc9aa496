// Parsing and validating the merge options of a primary-key table (Paimon's CoreOptions and
// schema/SchemaValidation): the options every engine reads here, those of one engine in its
// descriptor (lib/merge/engines.ts).

import { StrataInputError } from '../errors.ts'
import type { DataField, TypeRoot } from '../types.ts'
import type { EngineOptions } from './descriptor.ts'
import { MERGE_ENGINES, UNSUPPORTED_MERGE_ENGINES, mergeEngineNamed } from './engines.ts'
import type { MergeEngineConfig } from './merge-types.ts'
import { invalid, parseBool } from './option-values.ts'

/**
 * `ignore-delete` and its fallback keys, in the order Paimon reads them; the fallbacks are
 * named after engines but read whatever the table's engine.
 */
const IGNORE_DELETE_KEYS = ['ignore-delete', 'first-row.ignore-delete', 'deduplicate.ignore-delete', 'partial-update.ignore-delete']

const NESTED_ROOTS: ReadonlySet<TypeRoot> = new Set(['ARRAY', 'MAP', 'MULTISET', 'ROW'])

/** Option keys every engine reads. */
const COMMON_OPTION_KEYS = ['merge-engine', ...IGNORE_DELETE_KEYS, 'ignore-update-before', 'sequence.field', 'sequence.field.sort-order']

/** fields.<field>.<suffix> options of any engine: suffix → its kind of value, or why Strata refuses it. */
const FIELD_OPTIONS = new Map<string, { kind: 'boolean' | 'text'; refused?: string }>()
for (const e of MERGE_ENGINES) {
  for (const [suffix, kind] of Object.entries(e.fieldOptions)) FIELD_OPTIONS.set(suffix, { kind, refused: e.refusals.fieldOptions[suffix] ?? FIELD_OPTIONS.get(suffix)?.refused })
}

/** The option keys the merge engines understand, for the central unknown-key check. */
export function optionKeysOfMergeEngines(): { exact: string[]; patterns: RegExp[] } {
  return {
    exact: [...new Set([...COMMON_OPTION_KEYS, ...MERGE_ENGINES.flatMap((e) => e.optionKeys)])],
    patterns: [...FIELD_OPTIONS.keys()].map((s) => new RegExp(`^fields\\..+\\.${s.replace(/-/g, '\\-')}$`)),
  }
}

/** fields.<field>.<suffix> options by field; the field must exist (SchemaValidation.validateFieldsPrefix). */
function readFieldOptions(options: Record<string, string>, indexOf: Map<string, number>, names: string[]): Map<string, Map<string, string>> {
  const fieldOptions = new Map<string, Map<string, string>>()
  for (const [key, value] of Object.entries(options)) {
    if (!key.startsWith('fields.')) continue
    const suffix = [...FIELD_OPTIONS.keys()].find((s) => key.endsWith(`.${s}`) && key.length > 'fields.'.length + s.length + 1)
    if (!suffix) continue
    const { kind, refused } = FIELD_OPTIONS.get(suffix)!
    if (refused) throw invalid(key, value, refused)
    const field = key.slice('fields.'.length, key.length - suffix.length - 1)
    if (!indexOf.has(field)) throw invalid(key, value, `Field ${field} can not be found in table schema (fields: ${names.join(', ')})`)
    if (kind === 'boolean') parseBool(options, key)
    let m = fieldOptions.get(field)
    if (!m) fieldOptions.set(field, (m = new Map()))
    m.set(suffix, value)
  }
  return fieldOptions
}

/** `sequence.field` (SchemaValidation.validateSequenceField); Paimon splits on "," without trimming. */
function readSequenceFields(options: Record<string, string>, fields: DataField[], indexOf: Map<string, number>, fieldOption: EngineOptions['fieldOption']): string[] {
  const names = fields.map((f) => f.name)
  const seqText = options['sequence.field']
  const sequenceFields = seqText === undefined ? [] : seqText.split(',')
  const seen = new Set<string>()
  for (const f of sequenceFields) {
    if (!indexOf.has(f)) throw invalid('sequence.field', seqText!, `Sequence field: '${f}' can not be found in table schema (fields: ${names.join(', ')})`)
    if (fieldOption(f, 'aggregate-function') !== undefined) {
      throw invalid(`fields.${f}.aggregate-function`, fieldOption(f, 'aggregate-function')!, `Should not define aggregation on sequence field: '${f}'.`)
    }
    if (seen.has(f)) throw invalid('sequence.field', seqText!, `Sequence field '${f}' is defined repeatedly.`)
    // Paimon's generated comparator orders some nested values; Strata orders scalars only.
    const root = fields[indexOf.get(f)!].type.root
    if (NESTED_ROOTS.has(root)) throw invalid('sequence.field', seqText!, `Sequence field '${f}' is ${root}; Strata orders sequence fields of scalar types only`)
    seen.add(f)
  }
  return sequenceFields
}

/**
 * Parses and validates the merge options of a primary-key table. Refuses what Paimon refuses
 * (unknown engine or aggregate function, aggregate function on a type it does not fit,
 * sequence.field on first-row, conflicting delete options) and what Strata does not support
 * (sequence groups); options of another engine are accepted and ignored, as in Paimon.
 */
export function parseMergeEngineConfig(fields: DataField[], primaryKeys: string[], options: Record<string, string>): MergeEngineConfig {
  const names = fields.map((f) => f.name)
  const indexOf = new Map(names.map((n, i) => [n, i]))
  for (const pk of primaryKeys) {
    if (!indexOf.has(pk)) throw new StrataInputError(`Primary key '${pk}' is not a field of the table (fields: ${names.join(', ')})`)
  }

  const engineText = options['merge-engine']
  const engine = engineText === undefined ? mergeEngineNamed('deduplicate')! : mergeEngineNamed(engineText)
  if (!engine) {
    const unsupported = UNSUPPORTED_MERGE_ENGINES[engineText!.trim().toLowerCase()]
    throw invalid('merge-engine', engineText!, unsupported ?? `expected one of ${MERGE_ENGINES.map((e) => e.name).join(', ')}`)
  }

  const ignoreDelete = parseBool(options, 'ignore-delete', IGNORE_DELETE_KEYS.slice(1))
  const ignoreUpdateBefore = parseBool(options, 'ignore-update-before')
  const partialUpdateRemoveRecordOnDelete = parseBool(options, 'partial-update.remove-record-on-delete')
  const aggregationRemoveRecordOnDelete = parseBool(options, 'aggregation.remove-record-on-delete')

  const fieldOptions = readFieldOptions(options, indexOf, names)
  const fieldOption = (field: string, suffix: string) => fieldOptions.get(field)?.get(suffix)

  for (const e of MERGE_ENGINES) {
    for (const [key, why] of Object.entries(e.refusals.optionKeys)) {
      if (options[key] !== undefined) throw invalid(key, options[key], why)
    }
  }

  const sequenceFields = readSequenceFields(options, fields, indexOf, fieldOption)
  if (sequenceFields.length > 0 && engine.refusals.sequenceField !== null) throw invalid('sequence.field', options['sequence.field'], engine.refusals.sequenceField)
  const orderText = options['sequence.field.sort-order']
  let sequenceAscending = true
  if (orderText !== undefined) {
    const t = orderText.trim().toLowerCase()
    if (t !== 'ascending' && t !== 'descending') throw invalid('sequence.field.sort-order', orderText, "expected 'ascending' or 'descending'")
    sequenceAscending = t === 'ascending'
  }

  const common: EngineOptions['common'] = {
    engine: engine.name,
    fields,
    primaryKeys,
    ignoreDelete,
    ignoreUpdateBefore,
    sequenceFields,
    sequenceFieldIndexes: sequenceFields.map((f) => indexOf.get(f)!),
    sequenceAscending,
    partialUpdateRemoveRecordOnDelete,
    aggregationRemoveRecordOnDelete,
  }
  return { ...common, aggregations: engine.configure({ common, raw: options, fieldOption }) }
}
