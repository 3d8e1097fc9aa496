// Which of a snapshot's manifests a read can plan apart. A bucket's files may sit in several
// manifests (base and delta), and a file's ADD and DELETE in two: the live files of a bucket
// are known only once every manifest that may hold the bucket is folded. Two manifests whose
// first partition field's ranges are disjoint (for a table without partitions: whose bucket
// ranges are) share no bucket, so the manifests fall into groups of overlapping ranges that
// share none, each folded and planned alone (lib/read/table-read.ts planScanChunks).

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { valueComparator } from '../format/compare.ts'
import { withNullable } from '../format/data-type.ts'
import type { DataType, ManifestFileMeta, Value } from '../types.ts'

/** A closed range along the cut's dimension; `lo` null: from below every value (a null is). */
interface Range {
  lo: Value | null
  hi: Value | null
}

/** The range of a manifest along the cut's dimension; null: any value (statistics missing or undecodable). */
function rangeOf(meta: ManifestFileMeta, partitionTypes: readonly DataType[]): Range | null {
  if (partitionTypes.length === 0) {
    if (meta.minBucket === null || meta.maxBucket === null) return null
    return { lo: meta.minBucket, hi: meta.maxBucket }
  }
  const s = meta.partitionStats
  const nulls = s.nullCounts?.[0]
  if (nulls === undefined || nulls === null) return null
  const types = partitionTypes.map((t) => withNullable(t, true))
  let min: Value, max: Value
  try {
    min = deserializeBinaryRow(types, s.minValues)[0]
    max = deserializeBinaryRow(types, s.maxValues)[0]
  } catch {
    return null
  }
  // nulls only (min and max null, nulls counted): the range is the null value alone
  if (max === null) return nulls > 0n ? { lo: null, hi: null } : null
  if (min === null) return null
  return { lo: nulls > 0n ? null : min, hi: max }
}

/**
 * The manifests in groups that share no bucket: each group's list indexes ascending, the
 * groups in the order of their first index. `partitionTypes`: the table's partition fields' types.
 */
export function independentGroups(metas: readonly ManifestFileMeta[], partitionTypes: readonly DataType[]): number[][] {
  const n = metas.length
  if (n === 0) return []
  const ranges = metas.map((m) => rangeOf(m, partitionTypes))
  if (ranges.some((r) => r === null)) return [[...metas.keys()]]
  const rs = ranges as Range[]
  const cmp = partitionTypes.length === 0 ? (a: Value, b: Value) => (a as number) - (b as number) : valueComparator(withNullable(partitionTypes[0], true))
  // a < b, null below every value
  const lt = (a: Value | null, b: Value | null) => (a === null ? b !== null : b !== null && cmp(a, b) < 0)
  // groups of overlapping ranges, by a sweep in the order of their low ends
  const order = [...rs.keys()].sort((a, b) => (lt(rs[a].lo, rs[b].lo) ? -1 : lt(rs[b].lo, rs[a].lo) ? 1 : a - b))
  const groups: number[][] = []
  let hi: Value | null = null
  let group: number[] | null = null
  for (const i of order) {
    const r = rs[i]
    if (group !== null && !lt(hi, r.lo)) {
      if (lt(hi, r.hi)) hi = r.hi
      group.push(i)
      continue
    }
    group = [i]
    groups.push(group)
    hi = r.hi
  }
  for (const g of groups) g.sort((a, b) => a - b)
  return groups.sort((a, b) => a[0] - b[0])
}
