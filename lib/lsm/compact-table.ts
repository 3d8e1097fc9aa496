// Compaction across a table: every (partition, bucket) that needs it, or the ones named.

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { bucketIdentifier } from '../manifest/identifiers.ts'
import { valueFromJson } from '../table/json-values.ts'
import type { Table } from '../handle/table.ts'
import { StrataInputError } from '../errors.ts'
import type { Row } from '../types.ts'
import { compactBucket } from './compact/compact-bucket.ts'
import type { CompactBucketResult } from './compact/context.ts'
import type { MergePathRequest } from './columnar-merge.ts'

export interface CompactTableOptions {
  /** partition values by key, as in `--partition dt=2024-05-01` */
  partition?: Record<string, string>
  bucket?: number
  full?: boolean
  /** the merge path of every job (default: as the engine chooses) */
  mergePath?: MergePathRequest
  onBucket?: (partition: string, bucket: number, result: CompactBucketResult) => void
}

/** Parses `k=v,k2=v2` into partition values, validated against the partition keys. */
export function parsePartitionSpec(table: Table, spec: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of spec.split(',').filter(Boolean)) {
    const i = part.indexOf('=')
    if (i <= 0) throw new StrataInputError(`--partition: expected k=v[,k=v…], got ${JSON.stringify(spec)}`)
    out[part.slice(0, i)] = part.slice(i + 1)
  }
  const keys = table.view.partitionFields.map((f) => f.name)
  for (const k of Object.keys(out)) {
    if (!keys.includes(k)) throw new StrataInputError(`--partition: '${k}' is not a partition key (partition keys: ${keys.join(', ') || 'none'})`)
  }
  return out
}

function partitionBytesMatching(table: Table, spec: Record<string, string>): (values: Row) => boolean {
  const fields = table.view.partitionFields
  const want = fields.map((f) => (f.name in spec ? valueFromJson(f, coerce(f.type.root, spec[f.name]), '--partition') : undefined))
  return (values) => want.every((w, i) => w === undefined || String(w) === String(values[i]))
}

function coerce(root: string, text: string): unknown {
  if (['TINYINT', 'SMALLINT', 'INT', 'FLOAT', 'DOUBLE'].includes(root)) return Number(text)
  if (root === 'BOOLEAN') return text === 'true'
  return text
}

export async function compactTable(table: Table, opts: CompactTableOptions = {}): Promise<CompactBucketResult[]> {
  const snapshot = await table.snapshots.latest()
  if (!snapshot) return []
  const partTypes = table.view.partitionFields.map((f) => f.type)
  const matches = opts.partition ? partitionBytesMatching(table, opts.partition) : () => true
  const buckets = new Map<string, { partition: Uint8Array; bucket: number; values: Row }>()
  for (const e of await table.manifests.liveEntries(snapshot)) {
    if (opts.bucket !== undefined && e.bucket !== opts.bucket) continue
    const id = bucketIdentifier(e.partition, e.bucket)
    if (buckets.has(id)) continue
    const values = deserializeBinaryRow(partTypes, e.partition)
    if (!matches(values)) continue
    buckets.set(id, { partition: e.partition, bucket: e.bucket, values })
  }
  const results: CompactBucketResult[] = []
  for (const b of buckets.values()) {
    let r = await compactBucket(table, { partition: b.partition, bucket: b.bucket, full: opts.full, mergePath: opts.mergePath })
    opts.onBucket?.(b.values.join('/'), b.bucket, r)
    results.push(r)
    // a capped job leaves work behind; the CLI keeps going until the bucket is done
    while (r.needsMore && r.snapshotId !== null) {
      r = await compactBucket(table, { partition: b.partition, bucket: b.bucket, full: opts.full, mergePath: opts.mergePath })
      opts.onBucket?.(b.values.join('/'), b.bucket, r)
      results.push(r)
    }
  }
  return results
}
