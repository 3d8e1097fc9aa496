// A table's LSM shape, per partition and bucket, at its latest snapshot: files and rows per
// level, sorted runs, rows marked deleted, back-pressure, and how long level-0 rows have
// waited to be visible (freshness lag). `strata status` prints it; the maintenance function
// publishes it as metrics (table-metrics.ts).

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { partitionPath } from '../format/partition-path.ts'
import type { Table } from '../handle/table.ts'
import { bucketIdentifier } from '../manifest/identifiers.ts'
import { dvIndexByBucket } from '../handle/bucket-state.ts'
import { compactsWithLookup } from '../merge/engines.ts'
import { POSTPONE_BUCKET } from '../format/partition-path.ts'

export interface BucketStatus {
  partition: string
  bucket: number
  /** files per level, index = level */
  filesPerLevel: number[]
  rowsPerLevel: number[]
  files: number
  rows: number
  l0Files: number
  /** L0 files count one each, every non-empty higher level one */
  sortedRuns: number
  /** rows marked deleted in this bucket's deletion vectors */
  dvCardinality: number
  /** age of the oldest committed L0 file in ms (rows not yet visible to readers) in deletion-vector mode and in bucket-postpone; null without L0 files or where readers merge level 0 */
  freshnessLagMs: number | null
  /** sorted runs past num-sorted-run.stop-trigger */
  backPressure: boolean
}

export interface TableStatus {
  table: string
  snapshot: { id: number; commitKind: string; timeMillis: number; totalRecordCount: number; schemaId: number } | null
  deletionVectors: boolean
  /** level 0 is read only once a compaction takes it up (deletion vectors, or first-row): freshness lag is counted */
  levelZeroWaits: boolean
  buckets: BucketStatus[]
  /** max over buckets, for a one-line summary */
  maxL0Files: number
  maxFreshnessLagMs: number | null
  /** rows in bucket-postpone (postpone bucket mode), which no reader sees until a postpone compaction moves them */
  postponedRows: number
}

export async function tableStatus(table: Table, now = Date.now()): Promise<TableStatus> {
  const snapshot = await table.snapshots.latest()
  const dvMode = table.view.options.deletionVectors
  // level 0 waits for a compaction to be read: with deletion vectors, and for first-row (Paimon's lookup engine)
  const lagged = compactsWithLookup(table.mergeConfig.engine, dvMode)
  if (!snapshot) return { table: table.uri, snapshot: null, deletionVectors: dvMode, levelZeroWaits: lagged, buckets: [], maxL0Files: 0, maxFreshnessLagMs: null, postponedRows: 0 }
  const view = table.view
  const entries = await table.manifests.liveEntries(snapshot)
  const partTypes = view.partitionFields.map((f) => f.type)
  const byBucket = new Map<string, BucketStatus>()
  const oldestL0 = new Map<string, number>()
  const dvIndex = await dvIndexByBucket(table, snapshot)
  // a vector counts only for a file that is live: an index may still hold one for a file
  // its compaction removed (Paimon keeps the last index after a full compaction), and
  // readers match vectors to files by name
  const liveFiles = new Set(entries.map((e) => `${bucketIdentifier(e.partition, e.bucket)}|${e.file.fileName}`))
  for (const e of entries) {
    const part = partitionPath(view.partitionFields, deserializeBinaryRow(partTypes, e.partition), view.options.partitionDefaultName).replace(/\/$/, '')
    const id = `${part}|${e.bucket}`
    let b = byBucket.get(id)
    if (!b) {
      const bucketId = bucketIdentifier(e.partition, e.bucket)
      const dvCardinality = (dvIndex.get(bucketId) ?? [])
        .flatMap((x) => x.dvRanges ?? [])
        .filter((m) => liveFiles.has(`${bucketId}|${m.dataFileName}`))
        .reduce((n, m) => n + Number(m.cardinality ?? 0), 0)
      b = {
        partition: part, bucket: e.bucket, filesPerLevel: new Array(view.options.numLevels).fill(0), rowsPerLevel: new Array(view.options.numLevels).fill(0),
        files: 0, rows: 0, l0Files: 0, sortedRuns: 0, dvCardinality, freshnessLagMs: null, backPressure: false,
      }
      byBucket.set(id, b)
    }
    if (e.file.level === 0) {
      b.l0Files++
      const t = Number(e.file.creationTime ?? BigInt(snapshot.timeMillis))
      oldestL0.set(id, Math.min(oldestL0.get(id) ?? Infinity, t))
    }
    b.filesPerLevel[e.file.level]++
    b.rowsPerLevel[e.file.level] += Number(e.file.rowCount)
    b.files++
    b.rows += Number(e.file.rowCount)
  }
  for (const [id, b] of byBucket) {
    // bucket-postpone is no LSM tree: its files wait for a postpone compaction, all of them invisible
    const postponed = b.bucket === POSTPONE_BUCKET
    b.sortedRuns = postponed ? 0 : b.l0Files + b.filesPerLevel.slice(1).filter((n) => n > 0).length
    b.backPressure = b.sortedRuns > view.options.stopTrigger
    if ((lagged || postponed) && oldestL0.has(id)) b.freshnessLagMs = Math.max(0, now - oldestL0.get(id)!)
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
    deletionVectors: dvMode,
    levelZeroWaits: lagged,
    buckets,
    maxL0Files: Math.max(0, ...buckets.map((b) => b.l0Files)),
    maxFreshnessLagMs: buckets.some((b) => b.freshnessLagMs !== null) ? Math.max(...buckets.map((b) => b.freshnessLagMs ?? 0)) : null,
    postponedRows: buckets.reduce((n, b) => n + (b.bucket === POSTPONE_BUCKET ? b.rows : 0), 0),
  }
}
