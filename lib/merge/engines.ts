// The merge engines Strata implements, one descriptor each (lib/merge/descriptor.ts), and the
// facts other floors read of a table's engine: what it refuses together with other options,
// how its compactions and reads treat level 0, which columns a merged read needs.

import { AGGREGATION } from './aggregation.ts'
import { DEDUPLICATE } from './deduplicate.ts'
import type { MergeEngineDescriptor } from './descriptor.ts'
import { FIRST_ROW } from './first-row.ts'
import type { MergeEngineConfig, MergeEngineName } from './merge-types.ts'
import { PARTIAL_UPDATE } from './partial-update.ts'

/** Every engine, in the order messages list them. */
export const MERGE_ENGINES: readonly MergeEngineDescriptor[] = [DEDUPLICATE, PARTIAL_UPDATE, AGGREGATION, FIRST_ROW]

const BY_NAME = new Map<string, MergeEngineDescriptor>(MERGE_ENGINES.map((e) => [e.name, e]))

/** Paimon engines Strata does not implement: name → why, for the message that refuses them. */
export const UNSUPPORTED_MERGE_ENGINES: Readonly<Record<string, string>> = {
  'versioned-partial-update': 'the versioned-partial-update merge engine is not supported by Strata',
}

/** The descriptor of an engine. */
export function mergeEngineOf(name: MergeEngineName): MergeEngineDescriptor {
  return BY_NAME.get(name)!
}

/** The descriptor a `merge-engine` option value names (any case, trimmed), or undefined. */
export function mergeEngineNamed(text: string): MergeEngineDescriptor | undefined {
  return BY_NAME.get(text.trim().toLowerCase())
}

/** The engine raw table options name; deduplicate when they name none, undefined for an unknown name. */
function engineOfRaw(raw: Record<string, string>): MergeEngineDescriptor | undefined {
  const text = raw['merge-engine']
  return text === undefined ? DEDUPLICATE : mergeEngineNamed(text)
}

/**
 * Raw table options that name an engine Paimon refuses with deletion vectors, and turn them
 * on: the reason, naming both options; else null.
 */
export function deletionVectorsConflict(raw: Record<string, string>): string | null {
  const why = engineOfRaw(raw)?.refusals.deletionVectors ?? null
  if (!why || raw['deletion-vectors.enabled']?.trim().toLowerCase() !== 'true') return null
  return `option 'deletion-vectors.enabled' is ${JSON.stringify(raw['deletion-vectors.enabled'])} with 'merge-engine' = ${JSON.stringify(raw['merge-engine'])}: ${why} (Paimon refuses such a table); expected 'deletion-vectors.enabled' = 'false'`
}

/**
 * Raw options Paimon's SchemaValidation refuses together: an engine that produces only some
 * changelogs (first-row: "Only support 'none' and 'lookup' changelog-producer on FIRST_ROW
 * merge engine") with another. The reason, naming both options; else null.
 */
export function changelogProducerConflict(raw: Record<string, string>): string | null {
  const engine = engineOfRaw(raw)
  const accepted = engine?.refusals.changelogProducers
  const producer = raw['changelog-producer']?.trim().toLowerCase()
  if (!engine || !accepted || producer === undefined || accepted.includes(producer)) return null
  return `option 'changelog-producer' is ${JSON.stringify(raw['changelog-producer'])} with 'merge-engine' = ${JSON.stringify(raw['merge-engine'])}: Paimon supports only ${accepted.map((p) => `'${p}'`).join(' and ')} changelog-producer on the ${engine.name} merge engine (and refuses such a table)`
}

/**
 * Compactions take all of level 0 up (Paimon's force-up-level-0 pick) and look each rising
 * key up in the older levels: with deletion vectors (to mark the row it supersedes) or for
 * an engine Paimon compacts with lookup (first-row: to drop the rising row).
 */
export function compactsWithLookup(engine: MergeEngineName, deletionVectors: boolean): boolean {
  return deletionVectors || mergeEngineOf(engine).lookup.always
}

/**
 * Reads skip level 0: with deletion vectors (unless `deletion-vectors.merge-on-read`), and
 * for an engine Paimon compacts with lookup (its batch read skips level 0 too). Rows in
 * level 0 become visible when a compaction takes them up.
 */
export function readsSkipLevel0(engine: MergeEngineName, options: { deletionVectors: boolean; dvMergeOnRead: boolean }): boolean {
  return (options.deletionVectors && !options.dvMergeOnRead) || mergeEngineOf(engine).lookup.always
}

/**
 * The value columns a merged read must fetch to return `wanted` (names): all of them when
 * the engine merges values across records, else `wanted` and `sequence.field`.
 */
export function valueColumnsForMerge(cfg: MergeEngineConfig, wanted: Iterable<string>): string[] {
  if (!mergeEngineOf(cfg.engine).keepsOneRecord) return cfg.fields.map((f) => f.name)
  return [...new Set([...wanted, ...cfg.sequenceFields])]
}
