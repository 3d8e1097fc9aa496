// The partial-update engine (paimon-core mergetree/compact/PartialUpdateMergeFunction): each
// field takes its last non-null value; the result is a fresh +I, or -D when the last record
// removed the row (`partial-update.remove-record-on-delete`) or no add record was seen, with
// the sequence number of the last record not ignored (0 if none, as Paimon). Sequence groups
// are not supported.

import { StrataInputError } from '../errors.ts'
import { RowKind, isRetract, type KeyValue, type Row, type Value } from '../types.ts'
import { resolveAggregateFunction } from './aggregate.ts'
import { refuseAggregatesOnPrimaryKeys } from './aggregation.ts'
import { isNestedAggregate } from './nested-aggregate.ts'
import type { EngineOptions, MergeEngineDescriptor } from './descriptor.ts'
import { initRow, kindName, notNull } from './merge-rows.ts'
import type { MergeEngineConfig, MergeFunction } from './merge-types.ts'
import { invalid } from './option-values.ts'

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
      this.retract(kv)
      return
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

  private retract(kv: KeyValue): void {
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

  result(): KeyValue | null {
    if (this.key === null) return null
    const kind = this.deleteRow || !this.meetInsert ? RowKind.DELETE : RowKind.INSERT
    return { key: this.key, seq: this.seq, kind, value: this.row.slice() }
  }
}

/**
 * PartialUpdateMergeFunction.getAggFuncName: without sequence groups only
 * last_non_null_value, which is what partial-update does anyway, is allowed.
 */
function configurePartialUpdate(options: EngineOptions): [] {
  refuseAggregatesOnPrimaryKeys(options)
  const { common, raw, fieldOption } = options
  const defaultFunction = raw['fields.default-aggregate-function']
  for (const f of common.fields) {
    if (common.primaryKeys.includes(f.name)) continue
    const explicit = fieldOption(f.name, 'aggregate-function')
    const key = explicit !== undefined ? `fields.${f.name}.aggregate-function` : 'fields.default-aggregate-function'
    const value = explicit ?? defaultFunction
    if (value === undefined) continue
    // a nested aggregate needs its options only where it could run: refused here for want of sequence groups
    if (isNestedAggregate(value) || resolveAggregateFunction(key, value, f.name, f.type) !== 'last_non_null_value') {
      throw invalid(
        key,
        value,
        `Must use sequence group for aggregation functions but not found for field ${f.name}. (merge-engine = 'partial-update'; sequence groups are not supported by Strata, so only last_non_null_value is allowed)`,
      )
    }
  }
  if (common.ignoreDelete && common.partialUpdateRemoveRecordOnDelete) {
    throw new StrataInputError(
      "Options 'ignore-delete' = 'true' and 'partial-update.remove-record-on-delete' = 'true' have conflicting behavior so should not be enabled at the same time.",
    )
  }
  return []
}

export const PARTIAL_UPDATE: MergeEngineDescriptor = {
  name: 'partial-update',
  optionKeys: ['partial-update.remove-record-on-delete', 'partial-update.remove-record-on-sequence-group', 'fields.default-aggregate-function'],
  fieldOptions: { 'aggregate-function': 'text', 'sequence-group': 'text' },
  configure: configurePartialUpdate,
  refusals: {
    sequenceField: null,
    deletionVectors: null,
    changelogProducers: null,
    retractions: true,
    optionKeys: { 'partial-update.remove-record-on-sequence-group': 'it names sequence groups, and sequence groups are not supported by Strata' },
    fieldOptions: { 'sequence-group': 'sequence groups (fields.<field>.sequence-group) are not supported by Strata' },
  },
  keepsOneRecord: false,
  // a lone +I fills the row from itself; a lone +U becomes +I
  columnar: { keeps: 'fold', keepsAlone: (kind) => kind === RowKind.INSERT, refusesNullInNotNull: true, lastNonNull: true },
  lookup: { always: false, newerReplacesOlder: false, changelog: 'before-and-after' },
  createMergeFunction: (cfg) => new PartialUpdateMergeFunction(cfg),
}
