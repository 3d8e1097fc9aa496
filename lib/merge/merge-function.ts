// Paimon's merge engines (`merge-engine`) as merge functions: fold one key's records, oldest
// first, into the record the key holds. Sources: paimon-core mergetree/compact/
// DeduplicateMergeFunction, PartialUpdateMergeFunction, FirstRowMergeFunction,
// aggregate/AggregateMergeFunction, ReducerMergeFunctionWrapper; paimon-api utils/RowKindFilter;
// options and checks from CoreOptions and schema/SchemaValidation.
//
// Layering, as in Paimon:
// 1. RowKindFilter: `ignore-delete` drops -U/-D records and `ignore-update-before` drops -U
//    before they are written, for every engine. Strata applies it when merging, which gives
//    the same rows whoever wrote the file.
// 2. ReducerMergeFunctionWrapper: a key's only record, if it is a retraction, is returned as is.
// 3. The engine's merge function (`createEngineMergeFunction`).
// `createMergeFunction` composes the three; `createEngineMergeFunction` is step 3 alone.
//
// Results (what `result()` returns):
// - deduplicate: the greatest record by order, whatever its kind, so a trailing -D comes back
//   as that -D record (Paimon's DeduplicateMergeFunction); the top-level reader drops retracts.
//   null only when every record was dropped by `ignore-delete`.
// - first-row: the first record, its kind kept; null when every record was a dropped retraction.
// - partial-update: a fresh record with kind +I, or -D when the last record removed the row
//   (`partial-update.remove-record-on-delete`) or no add record was seen; seq is that of the
//   last record that was not ignored (0 if none, as Paimon).
// - aggregation: a fresh record with kind +I, or -D when the last record was a -D under
//   `aggregation.remove-record-on-delete`; key and seq of the last record.
// Paimon never emits +U from a merge; neither does Strata.

import { RowKind, StrataInputError, isRetract, type DataField, type DataType, type KeyValue, type Row, type Value } from '../types.ts'
import { compareBytes, compareStringsUtf8 } from '../format/compare.ts'
import { createFieldAggregator, resolveAggregateFunction, type AggregateFunctionName, type FieldAggregator } from './aggregate.ts'

export interface MergeFunction {
  reset(): void
  /** called for one key's records in merge order (oldest first, see sequenceComparator) */
  add(kv: KeyValue): void
  /** the merged record for the key, or null when the key has no record at all */
  result(): KeyValue | null
}

export type MergeEngine = 'deduplicate' | 'partial-update' | 'aggregation' | 'first-row'

const MERGE_ENGINES: readonly MergeEngine[] = ['deduplicate', 'partial-update', 'aggregation', 'first-row']

/**
 * What the rest of Strata needs to know of an engine besides its options and its merge
 * function: one entry per engine, read through `engineTraits`, so that no module outside
 * this one branches on an engine's name.
 */
export interface MergeEngineTraits {
  /**
   * A merge keeps one record whole (the newest for deduplicate, the oldest for first-row):
   * it needs no value column besides those asked for and `sequence.field`.
   */
  readonly keepsOneRecord: boolean
  /**
   * The newer record replaces the older whole, decided by sequence number and
   * `sequence.field` alone: a compaction's lookup of the older row needs its position and
   * those fields, not its value.
   */
  readonly newerReplacesOlder: boolean
  /** Its merge function may refuse a retraction, which a write then checks record by record. */
  readonly mayRefuseRetractions: boolean
  /**
   * Paimon compacts the engine with lookup whatever the options (first-row): every
   * compaction takes all of level 0 up and drops a rising key the older levels already hold,
   * so the levels above 0 hold each key once, and its batch read skips level 0.
   */
  readonly lookupCompaction: boolean
  /**
   * Why Paimon's schema validation refuses the engine with deletion vectors (at create and
   * at open), or null: Strata refuses to create or write such a table, and still reads one
   * an older Strata made.
   */
  readonly refusesDeletionVectors: string | null
}

const ENGINE_TRAITS: Record<MergeEngine, MergeEngineTraits> = {
  deduplicate: { keepsOneRecord: true, newerReplacesOlder: true, mayRefuseRetractions: false, lookupCompaction: false, refusesDeletionVectors: null },
  'first-row': {
    keepsOneRecord: true,
    newerReplacesOlder: false,
    mayRefuseRetractions: true,
    lookupCompaction: true,
    refusesDeletionVectors: 'First row merge engine does not need deletion vectors because there is no deletion of old data in this merge engine',
  },
  'partial-update': { keepsOneRecord: false, newerReplacesOlder: false, mayRefuseRetractions: true, lookupCompaction: false, refusesDeletionVectors: null },
  aggregation: { keepsOneRecord: false, newerReplacesOlder: false, mayRefuseRetractions: true, lookupCompaction: false, refusesDeletionVectors: null },
}

export function engineTraits(engine: MergeEngine): MergeEngineTraits {
  return ENGINE_TRAITS[engine]
}

/**
 * Raw table options that name an engine Paimon refuses with deletion vectors, and turn them
 * on: the reason, naming both options; else null.
 */
export function deletionVectorsConflict(raw: Record<string, string>): string | null {
  const name = raw['merge-engine']?.trim().toLowerCase()
  const engine = MERGE_ENGINES.find((e) => e === name)
  const why = engine ? ENGINE_TRAITS[engine].refusesDeletionVectors : null
  if (!why || raw['deletion-vectors.enabled']?.trim().toLowerCase() !== 'true') return null
  return `option 'deletion-vectors.enabled' is ${JSON.stringify(raw['deletion-vectors.enabled'])} with 'merge-engine' = ${JSON.stringify(raw['merge-engine'])}: ${why} (Paimon refuses such a table); expected 'deletion-vectors.enabled' = 'false'`
}

/**
 * Compactions take all of level 0 up (Paimon's force-up-level-0 pick) and look each rising
 * key up in the older levels: with deletion vectors (to mark the row it supersedes) or for
 * an engine Paimon compacts with lookup (first-row: to drop the rising row).
 */
export function compactsWithLookup(engine: MergeEngine, deletionVectors: boolean): boolean {
  return deletionVectors || ENGINE_TRAITS[engine].lookupCompaction
}

/**
 * Reads skip level 0: with deletion vectors (unless `deletion-vectors.merge-on-read`), and
 * for an engine Paimon compacts with lookup (its batch read skips level 0 too). Rows in
 * level 0 become visible when a compaction takes them up.
 */
export function readsSkipLevel0(engine: MergeEngine, options: { deletionVectors: boolean; dvMergeOnRead: boolean }): boolean {
  return (options.deletionVectors && !options.dvMergeOnRead) || ENGINE_TRAITS[engine].lookupCompaction
}

/**
 * The value columns a merged read must fetch to return `wanted` (names): all of them when
 * the engine merges values across records, else `wanted` and `sequence.field`.
 */
export function valueColumnsForMerge(cfg: MergeEngineConfig, wanted: Iterable<string>): string[] {
  if (!ENGINE_TRAITS[cfg.engine].keepsOneRecord) return cfg.fields.map((f) => f.name)
  return [...new Set([...wanted, ...cfg.sequenceFields])]
}

/** How the aggregation engine folds one field. */
export interface FieldAggregation {
  function: AggregateFunctionName
  ignoreRetract: boolean
  listAggDelimiter: string
  distinct: boolean
}

/** The parsed, validated options that decide merging. */
export interface MergeEngineConfig {
  readonly engine: MergeEngine
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

const IGNORE_DELETE_KEYS = ['ignore-delete', 'first-row.ignore-delete', 'deduplicate.ignore-delete', 'partial-update.ignore-delete']

// fields.<field>.<suffix> options this module reads; fields.<groups>.sequence-group is refused.
const FIELD_SUFFIXES = ['aggregate-function', 'ignore-retract', 'list-agg-delimiter', 'distinct', 'sequence-group'] as const

/** The option keys this module understands, for the central unknown-key check. */
export function optionKeysOfMergeEngines(): { exact: string[]; patterns: RegExp[] } {
  return {
    exact: [
      'merge-engine',
      ...IGNORE_DELETE_KEYS,
      'ignore-update-before',
      'sequence.field',
      'sequence.field.sort-order',
      'partial-update.remove-record-on-delete',
      'partial-update.remove-record-on-sequence-group',
      'aggregation.remove-record-on-delete',
      'fields.default-aggregate-function',
    ],
    patterns: FIELD_SUFFIXES.map((s) => new RegExp(`^fields\\..+\\.${s.replace(/-/g, '\\-')}$`)),
  }
}

function invalid(key: string, value: string, expected: string): StrataInputError {
  return new StrataInputError(`Option '${key}' = '${value}' is invalid: ${expected}`)
}

/** Paimon booleans: "true" or "false", any case (ConfigurationUtils.convertToBoolean). */
function parseBool(options: Record<string, string>, key: string, fallbackKeys: string[] = []): boolean {
  for (const k of [key, ...fallbackKeys]) {
    const v = options[k]
    if (v === undefined) continue
    const t = v.trim().toLowerCase()
    if (t === 'true') return true
    if (t === 'false') return false
    throw invalid(k, v, "expected 'true' or 'false'")
  }
  return false
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
  let engine: MergeEngine = 'deduplicate'
  if (engineText !== undefined) {
    const e = MERGE_ENGINES.find((m) => m === engineText.trim().toLowerCase())
    if (!e) {
      if (engineText.trim().toLowerCase() === 'versioned-partial-update') {
        throw invalid('merge-engine', engineText, 'the versioned-partial-update merge engine is not supported by Strata')
      }
      throw invalid('merge-engine', engineText, `expected one of ${MERGE_ENGINES.join(', ')}`)
    }
    engine = e
  }

  const ignoreDelete = parseBool(options, 'ignore-delete', IGNORE_DELETE_KEYS.slice(1))
  const ignoreUpdateBefore = parseBool(options, 'ignore-update-before')
  const partialUpdateRemoveRecordOnDelete = parseBool(options, 'partial-update.remove-record-on-delete')
  const aggregationRemoveRecordOnDelete = parseBool(options, 'aggregation.remove-record-on-delete')

  // fields.<f>.<suffix>: the field must exist (SchemaValidation.validateFieldsPrefix)
  const fieldOptions = new Map<string, Map<string, string>>()
  for (const [key, value] of Object.entries(options)) {
    if (!key.startsWith('fields.')) continue
    const suffix = FIELD_SUFFIXES.find((s) => key.endsWith(`.${s}`) && key.length > 'fields.'.length + s.length + 1)
    if (!suffix) continue
    if (suffix === 'sequence-group') {
      throw invalid(key, value, 'sequence groups (fields.<field>.sequence-group) are not supported by Strata')
    }
    const field = key.slice('fields.'.length, key.length - suffix.length - 1)
    if (!indexOf.has(field)) throw invalid(key, value, `Field ${field} can not be found in table schema (fields: ${names.join(', ')})`)
    if (suffix === 'ignore-retract' || suffix === 'distinct') parseBool(options, key)
    let m = fieldOptions.get(field)
    if (!m) fieldOptions.set(field, (m = new Map()))
    m.set(suffix, value)
  }
  const fieldOption = (field: string, suffix: string) => fieldOptions.get(field)?.get(suffix)

  if (options['partial-update.remove-record-on-sequence-group'] !== undefined) {
    throw invalid(
      'partial-update.remove-record-on-sequence-group',
      options['partial-update.remove-record-on-sequence-group'],
      'it names sequence groups, and sequence groups are not supported by Strata',
    )
  }

  // sequence.field (SchemaValidation.validateSequenceField); Paimon splits on "," without trimming
  const seqText = options['sequence.field']
  const sequenceFields = seqText === undefined ? [] : seqText.split(',')
  const seen = new Set<string>()
  for (const f of sequenceFields) {
    if (!indexOf.has(f)) throw invalid('sequence.field', seqText!, `Sequence field: '${f}' can not be found in table schema (fields: ${names.join(', ')})`)
    if (fieldOption(f, 'aggregate-function') !== undefined) {
      throw invalid(`fields.${f}.aggregate-function`, fieldOption(f, 'aggregate-function')!, `Should not define aggregation on sequence field: '${f}'.`)
    }
    if (seen.has(f)) throw invalid('sequence.field', seqText!, `Sequence field '${f}' is defined repeatedly.`)
    seen.add(f)
  }
  if (sequenceFields.length > 0 && engine === 'first-row') {
    throw invalid('sequence.field', seqText!, "Do not support use sequence field on FIRST_ROW merge engine (merge-engine = 'first-row').")
  }
  const orderText = options['sequence.field.sort-order']
  let sequenceAscending = true
  if (orderText !== undefined) {
    const t = orderText.trim().toLowerCase()
    if (t !== 'ascending' && t !== 'descending') throw invalid('sequence.field.sort-order', orderText, "expected 'ascending' or 'descending'")
    sequenceAscending = t === 'ascending'
  }

  const defaultFunction = options['fields.default-aggregate-function']
  const aggregations: FieldAggregation[] = []
  if (engine === 'aggregation' || engine === 'partial-update') {
    for (const f of fields) {
      const explicit = fieldOption(f.name, 'aggregate-function')
      // Stricter than Paimon, which silently ignores a function on a primary key field.
      if (explicit !== undefined && primaryKeys.includes(f.name)) {
        throw invalid(`fields.${f.name}.aggregate-function`, explicit, `'${f.name}' is a primary key field; primary key fields are never aggregated`)
      }
    }
  }
  if (engine === 'aggregation') {
    for (const f of fields) {
      // AggregateMergeFunction.getAggFuncName: sequence fields take the latest value, keys stay as they are
      const explicit = fieldOption(f.name, 'aggregate-function')
      let fn: AggregateFunctionName
      if (seen.has(f.name)) fn = 'last_value'
      else if (primaryKeys.includes(f.name)) fn = 'primary-key'
      else if (explicit !== undefined) fn = resolveAggregateFunction(`fields.${f.name}.aggregate-function`, explicit, f.name, f.type)
      else if (defaultFunction !== undefined) fn = resolveAggregateFunction('fields.default-aggregate-function', defaultFunction, f.name, f.type)
      else fn = 'last_non_null_value'
      const ignoreRetract = parseBool(options, `fields.${f.name}.ignore-retract`)
      if (ignoreRetract && aggregationRemoveRecordOnDelete) {
        throw new StrataInputError(
          `Options 'aggregation.remove-record-on-delete' = 'true' and 'fields.${f.name}.ignore-retract' = 'true' have conflicting behavior so should not be enabled at the same time.`,
        )
      }
      aggregations.push({
        function: fn,
        ignoreRetract,
        listAggDelimiter: fieldOption(f.name, 'list-agg-delimiter') ?? ',',
        distinct: parseBool(options, `fields.${f.name}.distinct`),
      })
    }
  }
  if (engine === 'partial-update') {
    // PartialUpdateMergeFunction.getAggFuncName: without sequence groups only last_non_null_value,
    // which is what partial-update does anyway, is allowed.
    for (const f of fields) {
      if (primaryKeys.includes(f.name)) continue
      const explicit = fieldOption(f.name, 'aggregate-function')
      const key = explicit !== undefined ? `fields.${f.name}.aggregate-function` : 'fields.default-aggregate-function'
      const value = explicit ?? defaultFunction
      if (value === undefined) continue
      if (resolveAggregateFunction(key, value, f.name, f.type) !== 'last_non_null_value') {
        throw invalid(
          key,
          value,
          `Must use sequence group for aggregation functions but not found for field ${f.name}. (merge-engine = 'partial-update'; sequence groups are not supported by Strata, so only last_non_null_value is allowed)`,
        )
      }
    }
    if (ignoreDelete && partialUpdateRemoveRecordOnDelete) {
      throw new StrataInputError(
        "Options 'ignore-delete' = 'true' and 'partial-update.remove-record-on-delete' = 'true' have conflicting behavior so should not be enabled at the same time.",
      )
    }
  }

  return {
    engine,
    fields,
    primaryKeys,
    ignoreDelete,
    ignoreUpdateBefore,
    sequenceFields,
    sequenceFieldIndexes: sequenceFields.map((f) => indexOf.get(f)!),
    sequenceAscending,
    partialUpdateRemoveRecordOnDelete,
    aggregationRemoveRecordOnDelete,
    aggregations,
  }
}

/**
 * Order of one sequence.field value, as Paimon's generated RecordComparator: nulls before any
 * value whatever the sort order, numbers by `<`/`>` (so NaN ties), strings by UTF-8 bytes.
 */
export function sequenceValueComparator(type: DataType): (a: Value, b: Value) => number {
  switch (type.root) {
    case 'BOOLEAN':
      return (a, b) => (a === b ? 0 : a ? 1 : -1)
    case 'CHAR':
    case 'VARCHAR':
      return (a, b) => compareStringsUtf8(a as string, b as string)
    case 'BINARY':
    case 'VARBINARY':
      return (a, b) => compareBytes(a as Uint8Array, b as Uint8Array)
    default:
      return (a, b) => ((a as number | bigint) > (b as number | bigint) ? 1 : (a as number | bigint) < (b as number | bigint) ? -1 : 0)
  }
}

/**
 * Orders two records of one key, oldest first: by the sequence.field values if configured
 * (nulls first, then ascending or descending per sequence.field.sort-order), then by
 * `_SEQUENCE_NUMBER` (Paimon's SortMergeReader with UserDefinedSeqComparator).
 */
export function sequenceComparator(cfg: MergeEngineConfig): (a: KeyValue, b: KeyValue) => number {
  const bySeq = (a: KeyValue, b: KeyValue) => (a.seq < b.seq ? -1 : a.seq > b.seq ? 1 : 0)
  if (cfg.sequenceFieldIndexes.length === 0) return bySeq
  const idx = cfg.sequenceFieldIndexes
  const cmps = idx.map((i) => sequenceValueComparator(cfg.fields[i].type))
  const sign = cfg.sequenceAscending ? 1 : -1
  return (a, b) => {
    for (let j = 0; j < idx.length; j++) {
      const x = a.value[idx[j]]
      const y = b.value[idx[j]]
      if (x === null || y === null) {
        if (x === y) continue
        return x === null ? -1 : 1
      }
      const c = cmps[j](x, y)
      if (c !== 0) return sign * c
    }
    return bySeq(a, b)
  }
}

/**
 * Paimon's initRow, as of 1.4.1 (apache/paimon#7645): every field takes the retraction's
 * value, nullable ones included (before, only the non-nullable ones did), so a row that a
 * -D under remove-record-on-delete restarts starts from that -D's values; a non-nullable
 * field must have one.
 */
function initRow(cfg: MergeEngineConfig, row: Row, kv: KeyValue): void {
  cfg.fields.forEach((f, i) => {
    const v = kv.value[i]
    if (v === null && !f.type.nullable) throw notNull(f, i, kv)
    row[i] = v
  })
}

function notNull(f: DataField, i: number, kv: KeyValue): StrataInputError {
  return new StrataInputError(`Field ${i} ('${f.name}', NOT NULL) can not be null: a ${kindName(kv.kind)} record with sequence number ${kv.seq} has null there`)
}

function kindName(kind: RowKind): string {
  return kind === RowKind.INSERT ? '+I' : kind === RowKind.UPDATE_BEFORE ? '-U' : kind === RowKind.UPDATE_AFTER ? '+U' : '-D'
}

class DeduplicateMergeFunction implements MergeFunction {
  private latest: KeyValue | null = null
  constructor(private readonly ignoreDelete: boolean) {}
  reset(): void {
    this.latest = null
  }
  add(kv: KeyValue): void {
    if (this.ignoreDelete && isRetract(kv.kind)) return
    this.latest = kv
  }
  result(): KeyValue | null {
    return this.latest
  }
}

class FirstRowMergeFunction implements MergeFunction {
  private first: KeyValue | null = null
  constructor(private readonly ignoreDelete: boolean) {}
  reset(): void {
    this.first = null
  }
  add(kv: KeyValue): void {
    if (isRetract(kv.kind)) {
      if (this.ignoreDelete) return
      throw new StrataInputError(
        `By default, First row merge engine can not accept DELETE/UPDATE_BEFORE records (got a ${kindName(kv.kind)} record with sequence number ${kv.seq}). You can config 'ignore-delete' to ignore the DELETE/UPDATE_BEFORE records.`,
      )
    }
    if (this.first === null) this.first = kv
  }
  result(): KeyValue | null {
    return this.first
  }
}

class PartialUpdateMergeFunction implements MergeFunction {
  private key: Value[] | null = null
  private seq = 0n
  private row: Row = []
  private meetInsert = false
  private notNullFilled = false
  private deleteRow = false

  constructor(private readonly cfg: MergeEngineConfig) {
    this.reset()
  }

  reset(): void {
    this.key = null
    this.seq = 0n
    this.row = new Array(this.cfg.fields.length).fill(null)
    this.meetInsert = false
    this.notNullFilled = false
    this.deleteRow = false
  }

  add(kv: KeyValue): void {
    this.key = kv.key
    this.deleteRow = false
    if (isRetract(kv.kind)) {
      if (!this.notNullFilled) {
        initRow(this.cfg, this.row, kv)
        this.notNullFilled = true
      }
      if (this.cfg.ignoreDelete) return
      this.seq = kv.seq
      if (this.cfg.partialUpdateRemoveRecordOnDelete) {
        // Only -D removes the row; a -U is skipped (and, as in Paimon, clears a pending removal).
        if (kv.kind === RowKind.DELETE) {
          this.deleteRow = true
          this.row = new Array(this.cfg.fields.length).fill(null)
          initRow(this.cfg, this.row, kv)
        }
        return
      }
      throw new StrataInputError(
        `By default, Partial update can not accept delete records (got a ${kindName(kv.kind)} record with sequence number ${kv.seq}). ` +
          "Configure 'ignore-delete' = 'true' to ignore delete records, or 'partial-update.remove-record-on-delete' = 'true' to remove the whole row when a -D record arrives " +
          '(Paimon also offers sequence groups to retract partial columns; Strata does not support them).',
      )
    }
    this.seq = kv.seq
    const fields = this.cfg.fields
    for (let i = 0; i < fields.length; i++) {
      const v = kv.value[i]
      if (v !== null) this.row[i] = v
      else if (!fields[i].type.nullable) throw notNull(fields[i], i, kv)
    }
    this.meetInsert = true
    this.notNullFilled = true
  }

  result(): KeyValue | null {
    if (this.key === null) return null
    const kind = this.deleteRow || !this.meetInsert ? RowKind.DELETE : RowKind.INSERT
    return { key: this.key, seq: this.seq, kind, value: this.row.slice() }
  }
}

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

/** The engine's merge function alone, without the row-kind filter and reducer of `createMergeFunction`. */
export function createEngineMergeFunction(cfg: MergeEngineConfig): MergeFunction {
  switch (cfg.engine) {
    case 'deduplicate':
      return new DeduplicateMergeFunction(cfg.ignoreDelete)
    case 'first-row':
      return new FirstRowMergeFunction(cfg.ignoreDelete)
    case 'partial-update':
      return new PartialUpdateMergeFunction(cfg)
    case 'aggregation':
      return new AggregateMergeFunction(cfg)
  }
}

/**
 * Paimon's ReducerMergeFunctionWrapper: the first record goes to the merge function at once
 * if it adds a row; a retraction waits, and if it stays the only record it is the result.
 */
class ReducerMergeFunction implements MergeFunction {
  private initial: KeyValue | null = null
  private merged = false
  constructor(private readonly inner: MergeFunction) {}
  reset(): void {
    this.initial = null
    this.merged = false
    this.inner.reset()
  }
  add(kv: KeyValue): void {
    if (this.initial === null) {
      this.initial = kv
      if (!isRetract(kv.kind)) {
        this.inner.add(kv)
        this.merged = true
      }
      return
    }
    if (!this.merged) {
      this.inner.add(this.initial)
      this.merged = true
    }
    this.inner.add(kv)
  }
  result(): KeyValue | null {
    return this.merged ? this.inner.result() : this.initial
  }
}

/** Paimon's RowKindFilter: records `ignore-delete` / `ignore-update-before` keep out of tables. */
class RowKindFilterMergeFunction implements MergeFunction {
  constructor(
    private readonly inner: MergeFunction,
    private readonly ignoreDelete: boolean,
    private readonly ignoreUpdateBefore: boolean,
  ) {}
  reset(): void {
    this.inner.reset()
  }
  add(kv: KeyValue): void {
    if (kv.kind === RowKind.DELETE && this.ignoreDelete) return
    if (kv.kind === RowKind.UPDATE_BEFORE && (this.ignoreDelete || this.ignoreUpdateBefore)) return
    this.inner.add(kv)
  }
  result(): KeyValue | null {
    return this.inner.result()
  }
}

/**
 * The merge of a lookup compaction's records (Paimon's LookupMergeFunction): row-kind filter,
 * then the engine directly, without the reducer, so a key's lone retraction is merged too
 * (an aggregation's lone -D of a key with no row becomes a row). Paimon's writer
 * lookup-compacts every commit of such a table, so each record meets it once, on its way
 * out of level 0; Strata's compactions use it for steps that take level-0 files up.
 */
export function createLookupMergeFunction(cfg: MergeEngineConfig): MergeFunction {
  const engine = createEngineMergeFunction(cfg)
  return cfg.ignoreDelete || cfg.ignoreUpdateBefore ? new RowKindFilterMergeFunction(engine, cfg.ignoreDelete, cfg.ignoreUpdateBefore) : engine
}

/** The merge function of a table: row-kind filter, then Paimon's reducer, then the engine. */
export function createMergeFunction(cfg: MergeEngineConfig): MergeFunction {
  const reducer = new ReducerMergeFunction(createEngineMergeFunction(cfg))
  return cfg.ignoreDelete || cfg.ignoreUpdateBefore ? new RowKindFilterMergeFunction(reducer, cfg.ignoreDelete, cfg.ignoreUpdateBefore) : reducer
}
