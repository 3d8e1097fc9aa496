// The changelog of `changelog-producer: lookup` (docs/format.md "Changelog files"): when a
// compaction takes a key up from level 0, the key's value in the levels above 0 before the
// compaction (`before`) is compared with its value after it (`after`), as Paimon's
// LookupChangelogMergeFunctionWrapper does:
//   no before, an after       → +I after
//   a before, no after        → -D before
//   both                      → -U before, +U after (nothing when they are equal and
//                               `changelog-producer.row-deduplicate` is true; Paimon's
//                               default, false, writes the pair even then)
// A retraction (-U/-D) as before or after counts as no row. An engine whose descriptor says
// `lookup.changelog: 'new-keys'` (first-row) follows Paimon's FirstRowMergeFunctionWrapper
// instead: +I for a key no level above 0 holds, else nothing (its first row never changes).
//
// Paimon takes `before` from the newest record above level 0, its lookup merge keeping that
// record the whole of the older ones; Strata's reads merge every level, so `before` here is
// the merge of every record of the key above level 0 (the job's own inputs and the older
// levels it does not rewrite), and `after` is what a read of the key gives after the job.

import { type DataField, type KeyValue, type Value, RowKind, isRetract } from '../types.ts'
import { valuesEqual } from '../merge/value-equality.ts'
import { mergeEngineOf } from '../merge/engines.ts'
import { createMergeFunction } from '../merge/merge-function.ts'
import type { MergeEngineConfig, MergeFunction } from '../merge/merge-types.ts'
import { sequenceComparator } from '../merge/sequence-order.ts'

/** What one merged key of a compaction step saw among its inputs. */
export interface KeyInputs {
  /** a record came from level 0 */
  containsLevel0: boolean
  /** the records from levels above 0, in merge order */
  high: KeyValue[]
}

export class LookupChangelog {
  readonly #cfg: MergeEngineConfig
  readonly #seqCmp: (a: KeyValue, b: KeyValue) => number
  readonly #rowDeduplicate: boolean
  /** the engine's lookup changelog gives +I for new keys only (first-row) */
  readonly #newKeysOnly: boolean
  /** level-0 records, as the step's sources read them */
  readonly #level0 = new WeakSet<KeyValue>()
  /** the inputs of each merged record not taken yet (one output batch at most) */
  readonly #inputs = new Map<KeyValue, KeyInputs>()

  constructor(cfg: MergeEngineConfig, rowDeduplicate: boolean) {
    this.#cfg = cfg
    this.#seqCmp = sequenceComparator(cfg)
    this.#rowDeduplicate = rowDeduplicate
    this.#newKeysOnly = mergeEngineOf(cfg.engine).lookup.changelog === 'new-keys'
  }

  /** Marks records read from a level-0 file. */
  level0(records: KeyValue[]): void {
    for (const kv of records) this.#level0.add(kv)
  }

  /** `inner`, recording which inputs each merged record came from (take() hands them out). */
  track(inner: MergeFunction): MergeFunction {
    let current: KeyInputs = { containsLevel0: false, high: [] }
    return {
      reset: () => {
        inner.reset()
        current = { containsLevel0: false, high: [] }
      },
      add: (kv) => {
        if (this.#level0.has(kv)) current.containsLevel0 = true
        else current.high.push(kv)
        inner.add(kv)
      },
      result: () => {
        const r = inner.result()
        if (r) this.#inputs.set(r, current)
        return r
      },
    }
  }

  /** The inputs of a merged record the tracked merge function returned. */
  take(merged: KeyValue): KeyInputs | undefined {
    const inputs = this.#inputs.get(merged)
    this.#inputs.delete(merged)
    return inputs
  }

  /** The merge of records above level 0, or null when there are none. */
  merged(records: KeyValue[]): KeyValue | null {
    if (records.length === 0) return null
    const mf = createMergeFunction(this.#cfg)
    mf.reset()
    for (const r of [...records].sort(this.#seqCmp)) mf.add(r)
    return mf.result()
  }

  /**
   * The changes of one key taken up from level 0: `high` its records above level 0 before
   * the job, `after` its value after the job (null: none).
   */
  changes(high: KeyValue[], after: KeyValue | null): KeyValue[] {
    if (this.#newKeysOnly) return high.length === 0 && after && !isRetract(after.kind) ? [{ ...after, kind: RowKind.INSERT }] : []
    const before = this.merged(high)
    const b = before && !isRetract(before.kind) ? before : null
    const a = after && !isRetract(after.kind) ? after : null
    if (!b) return a ? [{ ...a, kind: RowKind.INSERT }] : []
    if (!a) return [{ ...b, kind: RowKind.DELETE }]
    if (this.#rowDeduplicate && sameValues(this.#cfg.fields, b.value, a.value)) return []
    return [{ ...b, kind: RowKind.UPDATE_BEFORE }, { ...a, kind: RowKind.UPDATE_AFTER }]
  }
}

/** Whether two rows hold the same values, field by field as Java's equals compares them (nested values deeply). */
function sameValues(fields: readonly DataField[], a: Value[], b: Value[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (!valuesEqual(fields[i].type, a[i], b[i])) return false
  return true
}
