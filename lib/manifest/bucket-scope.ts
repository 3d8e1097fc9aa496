// Which manifests a job on some buckets must open. A manifest list record carries the
// manifest's partition statistics (min, max and null count of each partition field) and,
// in current Paimon versions, its bucket and level ranges (docs/format.md "Avro
// manifests"). A job on one bucket skips every manifest whose ranges cannot hold it; with
// manifests written one bucket group at a time (docs/format.md "Manifest layout"), that
// leaves only its group's manifests, however many buckets the table has.

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { compareValues } from '../format/compare.ts'
import type { SchemaView } from '../table/schema.ts'
import { withNullable } from '../format/data-type.ts'
import type { ManifestFileMeta, Value } from '../types.ts'
import { bucketIdentifier } from './identifiers.ts'

export interface BucketScope {
  /** whether an entry of this (partition, bucket) is wanted */
  holds(partition: Uint8Array, bucket: number): boolean
  /** false only when the manifest, by its list record, holds no wanted entry */
  mayHold(meta: ManifestFileMeta): boolean
}

/** Every bucket: no pruning. */
export const ALL_BUCKETS: BucketScope = { holds: () => true, mayHold: () => true }

type StatsRange = { min: Value[]; max: Value[]; nulls: (bigint | null)[] }

/** One target: a bucket (or any), and per partition field a value to equal (undefined: any). */
interface Target {
  bucket: number | null
  partition: (Value | undefined)[]
}

/** A partition's values as a Map key that tells them apart as equality does (bytes by content, -0 from 0). */
function valuesKey(values: readonly Value[]): string {
  let s = ''
  for (const v of values) s += v === null ? '\u0001' : `\u0002${typeof v}:${v instanceof Uint8Array ? Buffer.from(v).toString('hex') : Object.is(v, -0) ? '-0' : String(v)}\u0000`
  return s
}

class Scope implements BucketScope {
  private readonly ranges = new WeakMap<ManifestFileMeta, StatsRange>()
  private readonly types
  /**
   * Targets by their partition's values, when every target names all of them: a manifest of
   * one partition (min = max, no nulls) is then checked against that partition's targets
   * only, so pruning N manifests for N targets costs N lookups, not N × N comparisons
   */
  private readonly byPartition: Map<string, Target[]> | null

  constructor(
    view: SchemaView,
    private readonly targets: Target[],
    readonly holds: (partition: Uint8Array, bucket: number) => boolean,
  ) {
    this.types = view.partitionFields.map((f) => withNullable(f.type, true))
    const full = targets.length > 1 && this.types.length > 0 && targets.every((t) => t.partition.every((v) => v !== undefined))
    this.byPartition = full ? new Map() : null
    if (this.byPartition) {
      for (const t of targets) {
        const k = valuesKey(t.partition as Value[])
        const list = this.byPartition.get(k)
        if (list) list.push(t)
        else this.byPartition.set(k, [t])
      }
    }
  }

  private range(meta: ManifestFileMeta): StatsRange {
    let r = this.ranges.get(meta)
    if (!r) {
      const s = meta.partitionStats
      r = { min: deserializeBinaryRow(this.types, s.minValues), max: deserializeBinaryRow(this.types, s.maxValues), nulls: s.nullCounts ?? [] }
      this.ranges.set(meta, r)
    }
    return r
  }

  mayHold(meta: ManifestFileMeta): boolean {
    const one = this.byPartition && this.onePartition(meta)
    if (one) return (this.byPartition!.get(valuesKey(one)) ?? []).some((t) => this.bucketMayBeIn(meta, t.bucket))
    return this.targets.some((t) => this.bucketMayBeIn(meta, t.bucket) && this.partitionMayBeIn(meta, t.partition))
  }

  /** The manifest's one partition when its statistics name exactly one with no null field, else null. */
  private onePartition(meta: ManifestFileMeta): Value[] | null {
    const s = meta.partitionStats
    if (Buffer.compare(s.minValues, s.maxValues) !== 0) return null
    let r: StatsRange
    try {
      r = this.range(meta)
    } catch {
      return null
    }
    return r.min.length === this.types.length && r.min.every((v) => v !== null) ? r.min : null
  }

  private bucketMayBeIn(meta: ManifestFileMeta, bucket: number | null): boolean {
    if (bucket === null || meta.minBucket === null || meta.maxBucket === null) return true
    return bucket >= meta.minBucket && bucket <= meta.maxBucket
  }

  private partitionMayBeIn(meta: ManifestFileMeta, want: (Value | undefined)[]): boolean {
    if (want.every((v) => v === undefined)) return true
    let r: StatsRange
    try {
      r = this.range(meta)
    } catch {
      return true // statistics we cannot decode prune nothing
    }
    for (let i = 0; i < want.length; i++) {
      const v = want[i]
      if (v === undefined) continue
      const nulls = r.nulls[i] ?? undefined
      if (v === null) {
        if (nulls === 0n) return false
        continue
      }
      // null min and max: every entry's value is null (or no statistics): only nulls inside
      if (r.min[i] === null && r.max[i] === null) {
        if (nulls !== undefined && nulls > 0n) return false // only nulls inside
        continue
      }
      if (r.min[i] !== null && compareValues(this.types[i], v, r.min[i]) < 0) return false
      if (r.max[i] !== null && compareValues(this.types[i], v, r.max[i]) > 0) return false
    }
    return true
  }
}

/** Exactly these (partition, bucket) pairs. */
export function bucketsScope(view: SchemaView, pairs: Iterable<{ partition: Uint8Array; bucket: number }>): BucketScope {
  const ids = new Set<string>()
  const targets: Target[] = []
  const types = view.partitionFields.map((f) => f.type)
  for (const p of pairs) {
    const id = bucketIdentifier(p.partition, p.bucket)
    if (ids.has(id)) continue
    ids.add(id)
    targets.push({ bucket: p.bucket, partition: deserializeBinaryRow(types, p.partition) })
  }
  return new Scope(view, targets, (partition, bucket) => ids.has(bucketIdentifier(partition, bucket)))
}

/**
 * A bucket (or every bucket) of the partitions whose fields equal `partition`'s defined
 * values; `holds` is the caller's exact test on an entry.
 */
export function filteredScope(view: SchemaView, bucket: number | null, partition: (Value | undefined)[], holds: (partition: Uint8Array, bucket: number) => boolean): BucketScope {
  return new Scope(view, [{ bucket, partition }], holds)
}

