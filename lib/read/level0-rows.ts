// Rows a batch read of a snapshot does not see yet: a table whose reads skip level 0
// (deletion vectors without `deletion-vectors.merge-on-read`, or the first-row engine, as in
// Paimon) shows a write's rows only once a compaction takes its level-0 files up.

import { readsSkipLevel0 } from '../merge/engines.ts'
import type { MergeEngineName } from '../merge/merge-types.ts'
import type { ManifestIO } from '../manifest/manifests.ts'
import type { Snapshot } from '../types.ts'

/** The rows of `snapshot`'s level-0 files (their manifest entries' row counts, deleted rows included). */
export async function level0RowCount(manifests: Pick<ManifestIO, 'liveEntries'>, snapshot: Snapshot): Promise<number> {
  let rows = 0
  for (const e of await manifests.liveEntries(snapshot)) if (e.file.level === 0) rows += Number(e.file.rowCount)
  return rows
}

/**
 * The rows of `snapshot`'s level-0 files when reads of the table skip level 0 (they wait for a
 * compaction to become visible), else 0.
 */
export async function rowsWaitingForCompaction(
  table: { readonly mergeConfig: { readonly engine: MergeEngineName }; readonly view: { readonly options: { deletionVectors: boolean; dvMergeOnRead: boolean } }; readonly manifests: Pick<ManifestIO, 'liveEntries'> },
  snapshot: Snapshot,
): Promise<number> {
  if (!readsSkipLevel0(table.mergeConfig.engine, table.view.options)) return 0
  return level0RowCount(table.manifests, snapshot)
}
