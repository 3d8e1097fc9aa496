// Column metrics and partition summaries as Iceberg stores them (spec "Appendix D: Single-value
// serialization"; Paimon's IcebergDataFileMeta.create and IcebergManifestFile's summaries), so
// Iceberg readers can prune files and manifests. A data file's bounds come from its Paimon
// value statistics (truncated strings keep a valid upper bound: Paimon increments the last
// code point of a truncated max). FLOAT and DOUBLE get no bounds (Iceberg's bounds exclude
// NaN, which Paimon's statistics do not track apart).

import { deserializeBinaryRow, twosComplementLength, writeBigIntBE } from '../format/binary-row.ts'
import { compareValues } from '../format/compare.ts'
import type { DataField, DataType, SimpleStats, Value } from '../types.ts'

/** A metric keyed by field id. */
export type FieldMetric<T> = [number, T][]

export interface FileMetrics {
  valueCounts: FieldMetric<bigint>
  nullCounts: FieldMetric<bigint>
  lower: FieldMetric<Uint8Array>
  upper: FieldMetric<Uint8Array>
}

/** One value in Iceberg's single-value binary form; null for a type Strata gives no bound. */
function singleValue(t: DataType, v: Value): Uint8Array | null {
  if (v === null) return null
  switch (t.root) {
    case 'BOOLEAN':
      return Uint8Array.of(v ? 1 : 0)
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'DATE': {
      const b = Buffer.alloc(4)
      b.writeInt32LE(v as number)
      return b
    }
    case 'BIGINT':
    case 'TIMESTAMP': {
      const b = Buffer.alloc(8)
      b.writeBigInt64LE(BigInt(v as bigint))
      return b
    }
    case 'CHAR':
    case 'VARCHAR':
      return Buffer.from(v as string, 'utf8')
    case 'BINARY':
    case 'VARBINARY':
      return v as Uint8Array
    case 'DECIMAL':
      return twosComplement(v as bigint)
    case 'FLOAT':
    case 'DOUBLE':
    case 'ARRAY':
    case 'MAP':
    case 'MULTISET':
    case 'ROW':
      return null
  }
}

/** The unscaled value as the fewest big-endian two's-complement bytes (Java's BigInteger.toByteArray). */
function twosComplement(x: bigint): Uint8Array {
  const out = new Uint8Array(twosComplementLength(x))
  writeBigIntBE(out, 0, x, out.length)
  return out
}

/**
 * The metrics of a data file from its Paimon value statistics over `fields` (its schema's
 * fields, or those `_VALUE_STATS_COLS` names); null when the statistics do not fit them.
 */
export function fileMetrics(fields: DataField[], stats: SimpleStats, rowCount: bigint): FileMetrics | null {
  let min: Value[]
  let max: Value[]
  try {
    const types = fields.map((f) => ({ ...f.type, nullable: true }))
    min = deserializeBinaryRow(types, stats.minValues)
    max = deserializeBinaryRow(types, stats.maxValues)
  } catch {
    // no statistics (metadata.stats-mode none) or another layout: no metrics, nothing pruned
    return null
  }
  const m: FileMetrics = { valueCounts: [], nullCounts: [], lower: [], upper: [] }
  fields.forEach((f, i) => {
    // Iceberg keeps metrics of primitive columns; a nested field's statistics are empty anyway
    if (f.type.root === 'ARRAY' || f.type.root === 'MAP' || f.type.root === 'MULTISET' || f.type.root === 'ROW') return
    m.valueCounts.push([f.id, rowCount])
    const nulls = stats.nullCounts?.[i]
    if (nulls !== null && nulls !== undefined) m.nullCounts.push([f.id, nulls])
    const lo = singleValue(f.type, min[i])
    const hi = singleValue(f.type, max[i])
    // both or neither: a bound alone says nothing a reader may rely on here
    if (lo && hi) {
      m.lower.push([f.id, lo])
      m.upper.push([f.id, hi])
    }
  })
  return m
}

/** `field_summary` of a manifest's partition field (manifest list field 507). */
export interface PartitionSummary {
  containsNull: boolean
  containsNan: boolean | null
  lower: Uint8Array | null
  upper: Uint8Array | null
}

/**
 * The summaries of the partition values of a manifest's entries, one per partition field;
 * null when a field's type gets no bound (the list then carries none: a summary without
 * bounds would tell a reader that only nulls are there).
 */
export function partitionSummaries(fields: DataField[], partitions: Value[][]): PartitionSummary[] | null {
  if (fields.some((f) => f.type.root === 'FLOAT' || f.type.root === 'DOUBLE')) return null
  return fields.map((f, i) => {
    let lo: Value = null
    let hi: Value = null
    let containsNull = false
    for (const p of partitions) {
      const v = p[i]
      if (v === null) containsNull = true
      else {
        if (lo === null || compareValues(f.type, v, lo) < 0) lo = v
        if (hi === null || compareValues(f.type, v, hi) > 0) hi = v
      }
    }
    return { containsNull, containsNan: null, lower: singleValue(f.type, lo), upper: singleValue(f.type, hi) }
  })
}
