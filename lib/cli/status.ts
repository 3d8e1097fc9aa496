// `strata status`: the latest snapshot and, per partition and bucket, its LSM shape, as text.
// The status itself is lib/maintenance/table-status.ts's.

import type { TableStatus } from '../maintenance/table-status.ts'

export function formatStatus(s: TableStatus): string {
  if (!s.snapshot) return `${s.table}: no snapshots yet`
  // postpone bucket mode: bucket-postpone's files are all invisible, so their lag shows too
  const lagShown = s.levelZeroWaits || s.buckets.some((b) => b.bucket < 0)
  const lines = [
    `${s.table}: snapshot ${s.snapshot.id} (${s.snapshot.commitKind}, ${new Date(s.snapshot.timeMillis).toISOString()}), ${s.snapshot.totalRecordCount} records in live files`,
    ['partition', 'bucket', 'files', 'rows', 'files per level (L0..)', 'L0', 'runs', 'dv rows', ...(lagShown ? ['freshness lag'] : [])].join('\t'),
  ]
  for (const b of s.buckets) {
    const lag = b.freshnessLagMs === null ? '-' : `${(b.freshnessLagMs / 1000).toFixed(1)} s`
    lines.push([b.partition || '-', b.bucket < 0 ? 'postpone' : b.bucket, b.files, b.rows, b.filesPerLevel.join('/'), b.l0Files, `${b.sortedRuns}${b.backPressure ? ' (stop-trigger)' : ''}`, b.dvCardinality, ...(lagShown ? [lag] : [])].join('\t'))
  }
  if (s.postponedRows > 0) lines.push(`${s.postponedRows} rows postponed (bucket-postpone): not visible until a postpone compaction assigns them to buckets`)
  return lines.join('\n')
}
