// Helpers the merge functions that build a fresh row share (partial-update, aggregation):
// starting a row from a retraction, and naming a record in an error.

import { StrataInputError } from '../errors.ts'
import { RowKind, type DataField, type KeyValue, type Row } from '../types.ts'
import type { MergeEngineConfig } from './merge-types.ts'

/**
 * Paimon's initRow, as of Paimon 1.4.1: every field takes the retraction's
 * value, nullable ones included (before, only the non-nullable ones did), so a row that a
 * -D under remove-record-on-delete restarts starts from that -D's values; a non-nullable
 * field must have one.
 */
export function initRow(cfg: MergeEngineConfig, row: Row, kv: KeyValue): void {
  cfg.fields.forEach((f, i) => {
    const v = kv.value[i]
    if (v === null && !f.type.nullable) throw notNull(f, i, kv)
    row[i] = v
  })
}

export function notNull(f: DataField, i: number, kv: KeyValue): StrataInputError {
  return new StrataInputError(`Field ${i} ('${f.name}', NOT NULL) can not be null: a ${kindName(kv.kind)} record with sequence number ${kv.seq} has null there`)
}

export function kindName(kind: RowKind): string {
  return kind === RowKind.INSERT ? '+I' : kind === RowKind.UPDATE_BEFORE ? '-U' : kind === RowKind.UPDATE_AFTER ? '+U' : '-D'
}
