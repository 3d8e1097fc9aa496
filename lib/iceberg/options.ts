// A table's `metadata.iceberg.*` options, read (their keys, values and defaults are in
// lib/table/options.ts), and what a table must be for Strata to write its Iceberg metadata:
// the checks create and alter run (docs/format.md "Iceberg metadata").

import type { ManifestCompression } from '../format/avro.ts'
import type { TableSchema } from '../types.ts'
import { type CoreOptions, coreOptions, ICEBERG_TABLE_PROPERTIES_PREFIX } from '../table/options.ts'
import { warehouseLocationOf } from '../table/warehouse.ts'
import { fieldRefusal, partitionFieldRefusal } from './schema.ts'

export type IcebergStorage = 'disabled' | 'table-location' | 'hadoop-catalog'

export interface IcebergOptions {
  storage: IcebergStorage
  /** where the metadata directory is: the table's own, or the Hadoop catalog's */
  storageLocation: 'table-location' | 'catalog-location'
  formatVersion: 2 | 3
  manifestCompression: ManifestCompression
  manifestLegacyVersion: boolean
  compactMinFileNum: number
  compactMaxFileNum: number
  deleteAfterCommit: boolean
  previousVersionsMax: number
  database: string | null
  table: string | null
  /** `metadata.iceberg.table-properties.<key>`: the metadata's `properties` */
  tableProperties: Record<string, string>
}

export function icebergOptions(raw: Record<string, string>): IcebergOptions {
  const get = (k: string) => raw[`metadata.iceberg.${k}`]?.trim()
  const storage = (get('storage')?.toLowerCase() ?? 'disabled') as IcebergStorage
  const bool = (k: string, d: boolean) => (get(k) === undefined ? d : get(k)!.toLowerCase() === 'true')
  const tableProperties: Record<string, string> = {}
  for (const [k, v] of Object.entries(raw)) if (k.startsWith(ICEBERG_TABLE_PROPERTIES_PREFIX)) tableProperties[k.slice(ICEBERG_TABLE_PROPERTIES_PREFIX.length)] = v
  return {
    storage,
    // Paimon's inferDefaultMetadataLocation: the catalog's place for every catalog storage
    storageLocation: (get('storage-location')?.toLowerCase() as IcebergOptions['storageLocation']) ?? (storage === 'table-location' ? 'table-location' : 'catalog-location'),
    formatVersion: get('format-version') === '3' ? 3 : 2,
    manifestCompression: avroCodec(get('manifest-compression')?.toLowerCase() ?? 'snappy'),
    manifestLegacyVersion: bool('manifest-legacy-version', false),
    compactMinFileNum: Number(get('compaction.min.file-num') ?? 10),
    compactMaxFileNum: Number(get('compaction.max.file-num') ?? 50),
    deleteAfterCommit: bool('delete-after-commit.enabled', true),
    previousVersionsMax: Number(get('previous-versions-max') ?? 0),
    database: get('database') ?? null,
    table: get('table') ?? null,
    tableProperties,
  }
}

/** Where a table's Iceberg metadata lives. */
export interface IcebergLocation {
  /** the URI under which `metadata/` is: the table's, or `<warehouse>/iceberg/<db>/<table>` */
  root: string
  /** whether `root` is the table's own root (its store holds the metadata) */
  inTable: boolean
  database: string
  table: string
}

/**
 * Paimon's catalogDatabasePath: the table must be `<warehouse>/<db>.db/<table>` (it refuses
 * any other place for every storage type); table-location puts `metadata/` in the table,
 * catalog-location in `<warehouse>/iceberg/<db>/<table>`.
 */
export function icebergLocation(tableUri: string, o: IcebergOptions): IcebergLocation | { refused: string } {
  const loc = warehouseLocationOf(tableUri)
  if (!loc) {
    return { refused: `option 'metadata.iceberg.storage': value '${o.storage}' needs the table in a warehouse, at <warehouse>/<db>.db/<table> (Paimon's rule); ${tableUri} is not in a directory whose name ends in .db` }
  }
  const inTable = o.storageLocation === 'table-location'
  const catalogRoot = `${loc.warehouse.replace(/\/+$/, '')}/iceberg/${loc.database}/${loc.table}`
  return { root: inTable ? tableUri.replace(/\/+$/, '') : catalogRoot, inTable, database: o.database ?? loc.database, table: o.table ?? loc.table }
}

/**
 * Why Strata will not write Iceberg metadata for this schema at this location, or null (also
 * null when the option is off). Checked at create and at every alter, so a table that has the
 * option on can always be written. `core`: the schema's deletion-vector options as the engine
 * reads them (a handle passes its own).
 */
export function icebergRefusal(schema: TableSchema, tableUri: string, core?: Pick<CoreOptions, 'deletionVectors' | 'bitmap64'>): string | null {
  const o = icebergOptions(schema.options)
  if (o.storage === 'disabled') return null
  const where = icebergLocation(tableUri, o)
  if ('refused' in where) return where.refused
  const { deletionVectors, bitmap64 } = core ?? coreOptions(schema.options)
  // v2 with deletion vectors lists the top level without them, as Paimon does: the top level
  // is written only by merges of its whole run (docs/design.md "Iceberg metadata")
  if (deletionVectors && o.formatVersion === 3 && !bitmap64) {
    return `option 'deletion-vectors.bitmap64': value '${schema.options['deletion-vectors.bitmap64'] ?? 'false'}' with 'metadata.iceberg.format-version' = '3' and deletion vectors on is refused: Iceberg reads only 64-bit deletion vectors (its deletion-vector-v1 blob); expected true`
  }
  if (o.compactMaxFileNum < o.compactMinFileNum) {
    return `option 'metadata.iceberg.compaction.max.file-num': value '${o.compactMaxFileNum}' is below 'metadata.iceberg.compaction.min.file-num' (${o.compactMinFileNum}); expected an integer >= ${o.compactMinFileNum}`
  }
  for (const f of schema.fields) {
    const why = fieldRefusal(f)
    if (why) return `option 'metadata.iceberg.storage': ${why}`
  }
  for (const k of schema.partitionKeys) {
    const why = partitionFieldRefusal(schema.fields.find((f) => f.name === k)!)
    if (why) return `option 'metadata.iceberg.storage': ${why}`
  }
  return null
}

/** Paimon's (Avro's) codec names as Strata's Avro writer spells them: `null` is none, `zstandard` zstd. */
function avroCodec(name: string): ManifestCompression {
  return (name === 'null' ? 'none' : name === 'zstandard' ? 'zstd' : name) as ManifestCompression
}
