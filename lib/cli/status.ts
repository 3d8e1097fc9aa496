// `strata status`: the latest snapshot and, per partition and bucket, its LSM shape.

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { partitionPath } from '../format/partition-path.ts'
import type { Table } from '../table/table.ts'

export interface BucketStatus {
  partition: string
  bucket: number
  /** files per level, index = level */
  filesPerLevel: number[]
  rowsPerLevel: number[]
  files: number
  rows: number
}

export interface TableStatus {
  table: string
  snapshot: { id: number; commitKind: string; timeMillis: number; totalRecordCount: number; schemaId: number } | null
  buckets: BucketStatus[]
}

export async function tableStatus(table: Table): Promise<TableStatus> {
  const snapshot = await table.snapshots.latest()
  if (!snapshot) return { table: table.uri, snapshot: null, buckets: [] }
  const view = table.view
  const entries = await table.manifests.liveEntries(snapshot)
  const partTypes = view.partitionFields.map((f) => f.type)
  const byBucket = new Map<string, BucketStatus>()
  for (const e of entries) {
    const part = partitionPath(view.partitionFields, deserializeBinaryRow(partTypes, e.partition), view.options.partitionDefaultName).replace(/\/$/, '')
    const id = `${part}|${e.bucket}`
    let b = byBucket.get(id)
    if (!b) {
      b = { partition: part, bucket: e.bucket, filesPerLevel: new Array(view.options.numLevels).fill(0), rowsPerLevel: new Array(view.options.numLevels).fill(0), files: 0, rows: 0 }
      byBucket.set(id, b)
    }
    b.filesPerLevel[e.file.level]++
    b.rowsPerLevel[e.file.level] += Number(e.file.rowCount)
    b.files++
    b.rows += Number(e.file.rowCount)
  }
  const buckets = [...byBucket.values()].sort((a, b) => (a.partition < b.partition ? -1 : a.partition > b.partition ? 1 : a.bucket - b.bucket))
  return {
    table: table.uri,
    snapshot: {
      id: snapshot.id,
      commitKind: snapshot.commitKind,
      timeMillis: snapshot.timeMillis,
      totalRecordCount: snapshot.totalRecordCount,
      schemaId: snapshot.schemaId,
    },
    buckets,
  }
}

export function formatStatus(s: TableStatus): string {
  if (!s.snapshot) return `${s.table}: no snapshots yet`
  const lines = [
    `${s.table}: snapshot ${s.snapshot.id} (${s.snapshot.commitKind}, ${new Date(s.snapshot.timeMillis).toISOString()}), ${s.snapshot.totalRecordCount} records in live files`,
    ['partition', 'bucket', 'files', 'rows', 'files per level (L0..)'].join('\t'),
  ]
  for (const b of s.buckets) {
    lines.push([b.partition || '-', b.bucket, b.files, b.rows, b.filesPerLevel.join('/')].join('\t'))
  }
  return lines.join('\n')
}
