// What an engine descriptor says: everything the rest of Strata needs to know of one merge
// engine, so that no module outside lib/merge branches on an engine's name. One descriptor per
// engine (lib/merge/deduplicate.ts, partial-update.ts, aggregation.ts, first-row.ts), listed
// in lib/merge/engines.ts.

import type { RowKind } from '../types.ts'
import type { FieldAggregation, MergeEngineConfig, MergeEngineName, MergeFunction } from './merge-types.ts'

/**
 * What the columnar merge of a compaction step (lib/lsm/columnar-merge.ts) knows of an
 * engine: how one key's records (in merge order, oldest first: `sequence.field`, then
 * `_SEQUENCE_NUMBER`, ties to the newer run) reduce to the record the key keeps.
 */
export type ColumnarEngine =
  | {
      /**
       * The key keeps its last record in merge order among those the row-kind filter
       * (`ignore-delete`, `ignore-update-before`) lets through, whatever its kind; none when
       * the filter drops them all. That is deduplicate under both of Paimon's compositions,
       * the table's (filter, reducer, engine) and the lookup merge's (filter, engine): the
       * reducer only passes a key's lone retraction through, which deduplicate keeps anyway.
       * Rising keys looked up in older levels (deletion vectors) supersede the older row
       * unless it sorts after them in merge order, as the row path decides with the engine's
       * merge of the two.
       */
      keeps: 'last'
    }
  | {
      /**
       * The engine's own merge function (the row path's, the reference) folds each key that
       * has more than one record, or one it does not keep as it is, and each key found in an
       * older level, with that level's row; its result is written as a row of its own. A key
       * with one record of a kind `keepsAlone` accepts, met in no older level, is gathered as
       * it is: what the merge function would return for it is that record unchanged.
       */
      keeps: 'fold'
      /** a lone record of this kind merges to itself (the kind, sequence number and values unchanged) */
      keepsAlone: (kind: RowKind) => boolean
      /**
       * Records that are all +I or +U merge field by field to each field's last non-null
       * value in merge order, as +I with the last record's sequence number (partial-update):
       * such a key is reduced over the columns as they are, without making records
       */
      lastNonNull?: true
      /** a lone record with null in a NOT NULL value field is refused by the merge function: fold it to get its error */
      refusesNullInNotNull: boolean
    }

/** What a compaction that looks keys up in older levels, and its changelog, need of an engine. */
export interface EngineLookup {
  /**
   * Paimon compacts the engine with lookup whatever the options (first-row): every
   * compaction takes all of level 0 up and drops a rising key the older levels already hold,
   * so the levels above 0 hold each key once, and its batch read skips level 0.
   */
  readonly always: boolean
  /**
   * The newer record replaces the older whole, decided by sequence number and
   * `sequence.field` alone: a compaction's lookup of the older row needs its position and
   * those fields, not its value.
   */
  readonly newerReplacesOlder: boolean
  /**
   * The changelog of `changelog-producer: lookup` (lib/lsm/lookup-changelog.ts):
   * 'before-and-after' compares the key's value above level 0 before the compaction with its
   * value after it (+I, -D, -U/+U; Paimon's LookupChangelogMergeFunctionWrapper);
   * 'new-keys' gives +I for a key no level above 0 holds, else nothing, since the row a key
   * keeps never changes (Paimon's FirstRowMergeFunctionWrapper).
   */
  readonly changelog: 'before-and-after' | 'new-keys'
}

/** What Strata (as Paimon) refuses of a table of the engine, each with its message. */
export interface EngineRefusals {
  /** `sequence.field` on this engine: why it is refused, or null */
  readonly sequenceField: string | null
  /**
   * Why Paimon's schema validation refuses the engine with deletion vectors (at create and
   * at open), or null: Strata refuses to create or write such a table, and still reads one
   * an older Strata made.
   */
  readonly deletionVectors: string | null
  /** the `changelog-producer` values Paimon takes with the engine, or null for all of them */
  readonly changelogProducers: readonly string[] | null
  /** its merge function may refuse a retraction, which a write then checks record by record */
  readonly retractions: boolean
  /** option keys of the engine Strata refuses whatever the table's engine: key → why */
  readonly optionKeys: Readonly<Record<string, string>>
  /** `fields.<field>.<suffix>` options of the engine Strata refuses whatever the engine: suffix → why */
  readonly fieldOptions: Readonly<Record<string, string>>
}

/** The options of a table as the engine's `configure` sees them, the common ones parsed. */
export interface EngineOptions {
  /** the parsed options every engine shares (`aggregations` is what `configure` adds) */
  readonly common: Omit<MergeEngineConfig, 'aggregations'>
  /** the raw table options */
  readonly raw: Record<string, string>
  /** the value of `fields.<field>.<suffix>`, checked to name a field of the table */
  fieldOption(field: string, suffix: string): string | undefined
}

export interface MergeEngineDescriptor {
  readonly name: MergeEngineName
  /**
   * Option keys the engine reads besides those every engine reads (lib/merge/merge-config.ts
   * COMMON_OPTION_KEYS); their values are checked whatever the table's engine, as Strata
   * always did, and only this engine applies them.
   */
  readonly optionKeys: readonly string[]
  /**
   * `fields.<field>.<suffix>` options the engine reads: suffix → its kind of value (a
   * boolean's value is checked whatever the table's engine, as Strata always did)
   */
  readonly fieldOptions: Readonly<Record<string, 'boolean' | 'text'>>
  /**
   * Checks what the engine alone refuses of the options, once the common ones are parsed,
   * and returns its per-field aggregations (empty for engines that aggregate nothing).
   */
  configure(options: EngineOptions): readonly FieldAggregation[]
  readonly refusals: EngineRefusals
  /**
   * A merge keeps one record whole (the newest for deduplicate, the oldest for first-row):
   * it needs no value column besides those asked for and `sequence.field`.
   */
  readonly keepsOneRecord: boolean
  /** how the columnar merge path merges the engine, or null when only the row path can */
  readonly columnar: ColumnarEngine | null
  readonly lookup: EngineLookup
  /** The engine's merge function alone (lib/merge/merge-function.ts composes it with Paimon's wrappers). */
  createMergeFunction(cfg: MergeEngineConfig): MergeFunction
}
