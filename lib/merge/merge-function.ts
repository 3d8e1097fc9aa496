// A table's merge function: fold one key's records, oldest first (lib/merge/sequence-order.ts),
// into the record the key holds. Each engine's own merge function is in its descriptor
// (lib/merge/engines.ts); this module composes it with Paimon's wrappers
// (paimon-core mergetree/compact/ReducerMergeFunctionWrapper, paimon-api utils/RowKindFilter).
//
// Layering, as in Paimon:
// 1. RowKindFilter: `ignore-delete` drops -U/-D records and `ignore-update-before` drops -U
//    before they are written, for every engine. Strata applies it when merging, which gives
//    the same rows whoever wrote the file.
// 2. ReducerMergeFunctionWrapper: a key's only record, if it is a retraction, is returned as is.
// 3. The engine's merge function (`createEngineMergeFunction`).
// `createMergeFunction` composes the three; `createEngineMergeFunction` is step 3 alone.
// What each engine's `result()` returns is said in its file (deduplicate.ts, first-row.ts,
// partial-update.ts, aggregation.ts). Paimon never emits +U from a merge; neither does Strata.

import { RowKind, isRetract, type KeyValue, type Value } from '../types.ts'
import { mergeEngineOf } from './engines.ts'
import type { MergeEngineConfig, MergeFunction } from './merge-types.ts'

/** The engine's merge function alone, without the row-kind filter and reducer of `createMergeFunction`. */
export function createEngineMergeFunction(cfg: MergeEngineConfig): MergeFunction {
  return mergeEngineOf(cfg.engine).createMergeFunction(cfg)
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

/**
 * Folds each run of equal keys of `kvs` (sorted by key, each run in merge order) through
 * `mf`, handing every merge that is not null to `emit`: a write buffer's flush, as Paimon's
 * merges with the table's merge function, and a postpone compaction's bucket.
 */
export function mergeEqualKeys(kvs: readonly KeyValue[], keyCmp: (a: Value[], b: Value[]) => number, mf: MergeFunction, emit: (kv: KeyValue) => void): void {
  for (let i = 0; i < kvs.length; ) {
    let j = i + 1
    while (j < kvs.length && keyCmp(kvs[i].key, kvs[j].key) === 0) j++
    mf.reset()
    for (let k = i; k < j; k++) mf.add(kvs[k])
    const merged = mf.result()
    if (merged) emit(merged)
    i = j
  }
}

/** The merge function of a table: row-kind filter, then Paimon's reducer, then the engine. */
export function createMergeFunction(cfg: MergeEngineConfig): MergeFunction {
  const reducer = new ReducerMergeFunction(createEngineMergeFunction(cfg))
  return cfg.ignoreDelete || cfg.ignoreUpdateBefore ? new RowKindFilterMergeFunction(reducer, cfg.ignoreDelete, cfg.ignoreUpdateBefore) : reducer
}
