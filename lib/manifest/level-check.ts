// The LSM shape rule a commit must keep (docs/design.md "Compaction and deletion vectors"): in every level >= 1
// of a bucket, the files' key ranges do not overlap (each such level is one sorted run).
// Level 0 files overlap freely.

import { rowComparator } from '../format/compare.ts'
import { decodeKey } from '../table/file-meta.ts'
import type { SchemaView } from '../table/schema.ts'
import type { ManifestEntry, Value } from '../types.ts'

/**
 * Throws an Error naming the two overlapping files when the entries (one bucket's live files)
 * break the rule; returns quietly otherwise.
 */
export function checkLevelsDisjoint(view: SchemaView, entries: ManifestEntry[]): void {
  const byLevel = new Map<number, { name: string; min: Value[]; max: Value[] }[]>()
  for (const e of entries) {
    if (e.file.level === 0) continue
    let list = byLevel.get(e.file.level)
    if (!list) byLevel.set(e.file.level, (list = []))
    list.push({ name: e.file.fileName, min: decodeKey(view, e.file.minKey), max: decodeKey(view, e.file.maxKey) })
  }
  const cmp = rowComparator(view.keyTypes)
  for (const [level, files] of byLevel) {
    files.sort((a, b) => cmp(a.min, b.min))
    for (let i = 1; i < files.length; i++) {
      if (cmp(files[i - 1].max, files[i].min) >= 0) {
        throw new Error(`level ${level} would hold overlapping files ${files[i - 1].name} and ${files[i].name}`)
      }
    }
  }
}
