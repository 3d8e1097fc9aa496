// What the maintenance function publishes of a table each run: its LSM shape and backlog
// (table-status.ts) and how many snapshots it retains, as one number per metric.

import type { Table } from '../handle/table.ts'
import { snapshotRange } from './references.ts'
import { tableStatus } from './table-status.ts'

export interface TableMetrics {
  L0FileCountMax: number
  L0FileCountAvg: number
  /** ms, max over buckets (bucket-postpone included); 0 when no bucket has L0 files readers cannot see yet */
  FreshnessLag: number
  /** rows in bucket-postpone waiting for a postpone compaction (0 outside postpone bucket mode) */
  PostponedRows: number
  SortedRunsMax: number
  BackPressureBuckets: number
  DeletionVectorRows: number
  /** snapshots retained after expiration */
  Snapshots: number
}

export async function tableMetrics(table: Table, now: number): Promise<TableMetrics> {
  const status = await tableStatus(table, now)
  const b = status.buckets
  const { earliest, latest } = await snapshotRange(table)
  return {
    L0FileCountMax: status.maxL0Files,
    L0FileCountAvg: b.length ? b.reduce((n, x) => n + x.l0Files, 0) / b.length : 0,
    FreshnessLag: status.maxFreshnessLagMs ?? 0,
    PostponedRows: status.postponedRows,
    SortedRunsMax: Math.max(0, ...b.map((x) => x.sortedRuns)),
    BackPressureBuckets: b.filter((x) => x.backPressure).length,
    DeletionVectorRows: b.reduce((n, x) => n + x.dvCardinality, 0),
    Snapshots: latest === 0 ? 0 : latest - earliest + 1,
  }
}
