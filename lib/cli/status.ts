// `strata status`: the latest snapshot and, per partition and bucket, its LSM shape, as text.
// The status itself is lib/maintenance/table-status.ts's.

import type { TableStatus } from '../maintenance/table-status.ts'

export function formatStatus(s: TableStatus): string {
  if (!s.snapshot) return `${s.table}: no snapshots yet`
  const lines = [
    `${s.table}: snapshot ${s.snapshot.id} (${s.snapshot.commitKind}, ${new Date(s.snapshot.timeMillis).toISOString()}), ${s.snapshot.totalRecordCount} records in live files`,
    ['partition', 'bucket', 'files', 'rows', 'files per level (L0..)', 'L0', 'runs', 'dv rows', ...(s.levelZeroWaits ? ['freshness lag'] : [])].join('\t'),
  ]
  for (const b of s.buckets) {
    const lag = b.freshnessLagMs === null ? '-' : `${(b.freshnessLagMs / 1000).toFixed(1)} s`
    lines.push([b.partition || '-', b.bucket, b.files, b.rows, b.filesPerLevel.join('/'), b.l0Files, `${b.sortedRuns}${b.backPressure ? ' (stop-trigger)' : ''}`, b.dvCardinality, ...(s.levelZeroWaits ? [lag] : [])].join('\t'))
  }
  return lines.join('\n')
}
