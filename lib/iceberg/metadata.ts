// Iceberg table metadata JSON (spec "Table Metadata"; Iceberg's TableMetadataParser and
// SnapshotParser): what Strata writes for one Paimon snapshot, and what it reads back of a
// previous one. Each metadata file lists one snapshot, the current one (docs/design.md
// "Iceberg metadata"); its id and sequence number are Paimon's snapshot id.

import { createHash } from 'node:crypto'
import type { IcebergPartitionField, IcebergSchema } from './schema.ts'

export interface IcebergSnapshotJson {
  'sequence-number': number
  'snapshot-id': number
  'timestamp-ms': number
  summary: Record<string, string>
  'manifest-list': string
  'schema-id': number
  'first-row-id'?: number
  'added-rows'?: number
}

export interface IcebergMetadataJson {
  'format-version': number
  'table-uuid': string
  location: string
  'last-sequence-number': number
  'last-updated-ms': number
  'last-column-id': number
  'current-schema-id': number
  schemas: IcebergSchema[]
  'default-spec-id': number
  'partition-specs': { 'spec-id': number; fields: IcebergPartitionField[] }[]
  'last-partition-id': number
  'default-sort-order-id': number
  'sort-orders': { 'order-id': number; fields: never[] }[]
  properties: Record<string, string>
  'current-snapshot-id': number
  refs: Record<string, { 'snapshot-id': number; type: 'branch' | 'tag' }>
  snapshots: IcebergSnapshotJson[]
  'snapshot-log': { 'timestamp-ms': number; 'snapshot-id': number }[]
  'metadata-log': { 'timestamp-ms': number; 'metadata-file': string }[]
  'next-row-id'?: number
}

/** `v<N>.metadata.json`, Iceberg's Hadoop-catalog name (HadoopTableOperations). */
export const metadataFileName = (snapshotId: number): string => `v${snapshotId}.metadata.json`
export const VERSION_HINT = 'version-hint.text'
export const METADATA_DIR = 'metadata/'

/** The snapshot id of a `v<N>.metadata.json` name, or null. */
export function metadataVersionOf(name: string): number | null {
  const m = /^v(\d+)\.metadata\.json$/.exec(name)
  return m ? Number(m[1]) : null
}

/**
 * A table uuid derived from the table's location, so a metadata rebuilt after its base was
 * lost names the same table (Iceberg's catalogs refuse a refresh whose uuid changed).
 */
export function tableUuidOf(location: string): string {
  const h = createHash('sha256').update(`strata-iceberg:${location}`).digest()
  h[6] = (h[6] & 0x0f) | 0x50
  h[8] = (h[8] & 0x3f) | 0x80
  const x = h.subarray(0, 16).toString('hex')
  return `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20, 32)}`
}

/**
 * The summary key that marks a version Strata wrote. Only such a version is built on: one
 * Paimon's Java wrote may list level-0 files (its first snapshot's scan includes them).
 */
const WRITTEN_BY = 'written-by'
/** The summary key naming the levels a version lists (TableFiles.visibleLevels). */
export const VISIBLE_LEVELS = 'visible-levels'

export interface MetadataInput {
  formatVersion: number
  uuid: string
  location: string
  snapshotId: number
  timestampMs: number
  operation: 'append' | 'overwrite' | 'delete'
  summary: Record<string, string>
  manifestList: string
  snapshotSchemaId: number
  schemas: IcebergSchema[]
  currentSchemaId: number
  lastColumnId: number
  partitionFields: IcebergPartitionField[]
  properties: Record<string, string>
  /** v3: the base's next-row-id (the snapshot's first-row-id) and the rows assigned ids now */
  firstRowId: number
  addedRows: number
  now: number
}

export function buildMetadata(i: MetadataInput): IcebergMetadataJson {
  const v3 = i.formatVersion >= 3
  const snapshot: IcebergSnapshotJson = {
    'sequence-number': i.snapshotId,
    'snapshot-id': i.snapshotId,
    'timestamp-ms': i.timestampMs,
    summary: { operation: i.operation, ...i.summary, [WRITTEN_BY]: 'strata' },
    'manifest-list': i.manifestList,
    'schema-id': i.snapshotSchemaId,
    ...(v3 ? { 'first-row-id': i.firstRowId, 'added-rows': i.addedRows } : {}),
  }
  return {
    'format-version': i.formatVersion,
    'table-uuid': i.uuid,
    location: i.location,
    'last-sequence-number': i.snapshotId,
    // Iceberg refuses a snapshot-log entry more than a minute after last-updated-ms
    'last-updated-ms': Math.max(i.now, i.timestampMs),
    'last-column-id': i.lastColumnId,
    'current-schema-id': i.currentSchemaId,
    schemas: i.schemas,
    'default-spec-id': 0,
    'partition-specs': [{ 'spec-id': 0, fields: i.partitionFields }],
    // Paimon writes 999 for an unpartitioned table (one below the first partition field id)
    'last-partition-id': i.partitionFields.length ? Math.max(...i.partitionFields.map((f) => f['field-id'])) : 999,
    'default-sort-order-id': 0,
    'sort-orders': [{ 'order-id': 0, fields: [] }],
    properties: i.properties,
    'current-snapshot-id': i.snapshotId,
    refs: { main: { 'snapshot-id': i.snapshotId, type: 'branch' } },
    snapshots: [snapshot],
    'snapshot-log': [{ 'timestamp-ms': i.timestampMs, 'snapshot-id': i.snapshotId }],
    'metadata-log': [],
    ...(v3 ? { 'next-row-id': i.firstRowId + i.addedRows } : {}),
  }
}

/** The manifest list of a metadata file's current snapshot, whoever wrote it; null when it names none. */
export function currentManifestList(text: string): string | null {
  try {
    const m = JSON.parse(text)
    const current = m?.snapshots?.find?.((s: any) => s?.['snapshot-id'] === m['current-snapshot-id'])
    return typeof current?.['manifest-list'] === 'string' ? current['manifest-list'] : null
  } catch {
    return null
  }
}

/** What a writer takes from a previous metadata file; null when it is not one Strata can build on. */
export interface BaseMetadata {
  formatVersion: number
  /** the summary's visible-levels */
  visibleLevels: string | null
  uuid: string
  snapshotId: number
  manifestList: string
  nextRowId: number | null
}

export function parseBaseMetadata(text: string): BaseMetadata | null {
  let m: any
  try {
    m = JSON.parse(text)
  } catch {
    return null
  }
  if (typeof m !== 'object' || m === null) return null
  const current = Array.isArray(m.snapshots) ? m.snapshots.find((s: any) => s?.['snapshot-id'] === m['current-snapshot-id']) : undefined
  if (typeof m['format-version'] !== 'number' || typeof m['table-uuid'] !== 'string' || !current || typeof current['manifest-list'] !== 'string') return null
  if (current.summary?.[WRITTEN_BY] !== 'strata') return null
  // a v3 base without row lineage (Paimon 1.4.2 writes none) cannot be built on
  if (m['format-version'] >= 3 && typeof m['next-row-id'] !== 'number') return null
  return {
    formatVersion: m['format-version'],
    visibleLevels: typeof current.summary?.[VISIBLE_LEVELS] === 'string' ? current.summary[VISIBLE_LEVELS] : null,
    uuid: m['table-uuid'],
    snapshotId: m['current-snapshot-id'],
    manifestList: current['manifest-list'],
    nextRowId: typeof m['next-row-id'] === 'number' ? m['next-row-id'] : null,
  }
}
