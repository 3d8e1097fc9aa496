// The deduplicate engine (Paimon's default; paimon-core mergetree/compact/
// DeduplicateMergeFunction): a key keeps its newest record by merge order, whatever its kind,
// so a trailing -D comes back as that -D (the top-level reader drops retractions); no record
// only when `ignore-delete` dropped them all.

import { isRetract, type KeyValue } from '../types.ts'
import type { MergeEngineDescriptor } from './descriptor.ts'
import type { MergeFunction } from './merge-types.ts'

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

export const DEDUPLICATE: MergeEngineDescriptor = {
  name: 'deduplicate',
  optionKeys: [],
  fieldOptions: {},
  configure: () => [],
  refusals: { sequenceField: null, deletionVectors: null, changelogProducers: null, retractions: false, optionKeys: {}, fieldOptions: {} },
  keepsOneRecord: true,
  columnar: { keeps: 'last' },
  lookup: { always: false, newerReplacesOlder: true, changelog: 'before-and-after' },
  createMergeFunction: (cfg) => new DeduplicateMergeFunction(cfg.ignoreDelete),
}
