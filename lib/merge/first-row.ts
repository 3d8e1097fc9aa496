// The first-row engine (paimon-core mergetree/compact/FirstRowMergeFunction): a key keeps its
// first record, its kind kept (none when every record was a dropped retraction); a retraction
// is refused unless `ignore-delete` drops it. Paimon compacts it with lookup whatever the
// options, and refuses it with deletion vectors, with `sequence.field`, and with a changelog
// producer other than none or lookup (schema/SchemaValidation).

import { StrataInputError } from '../errors.ts'
import { RowKind, isRetract, type KeyValue } from '../types.ts'
import type { MergeEngineDescriptor } from './descriptor.ts'
import { kindName } from './merge-rows.ts'
import type { MergeFunction } from './merge-types.ts'

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

export const FIRST_ROW: MergeEngineDescriptor = {
  name: 'first-row',
  optionKeys: [],
  fieldOptions: {},
  configure: () => [],
  refusals: {
    sequenceField: "Do not support use sequence field on FIRST_ROW merge engine (merge-engine = 'first-row').",
    deletionVectors: 'First row merge engine does not need deletion vectors because there is no deletion of old data in this merge engine',
    changelogProducers: ['none', 'lookup'],
    retractions: true,
    optionKeys: {},
    fieldOptions: {},
  },
  keepsOneRecord: true,
  // a lone +U is kept whole, as every first record is
  columnar: { keeps: 'fold', keepsAlone: (kind) => kind === RowKind.INSERT || kind === RowKind.UPDATE_AFTER, refusesNullInNotNull: false },
  lookup: { always: true, newerReplacesOlder: false, changelog: 'new-keys' },
  createMergeFunction: (cfg) => new FirstRowMergeFunction(cfg.ignoreDelete),
}
