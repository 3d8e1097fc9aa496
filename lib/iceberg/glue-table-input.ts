// What the Glue pointer writes into a Glue table: the table as GetTable returned it, rebuilt as
// the TableInput that UpdateTable takes, with the Iceberg parameters the open-source Glue
// catalog sets (Iceberg's GlueTableOperations): `table_type` ICEBERG, `metadata_location`
// and `previous_metadata_location`. Everything else of the table is kept as it was.

import type { Table, TableInput } from '@aws-sdk/client-glue'

const TABLE_TYPE_PARAM = 'table_type'
export const METADATA_LOCATION_PARAM = 'metadata_location'
const PREVIOUS_METADATA_LOCATION_PARAM = 'previous_metadata_location'
const ICEBERG_TABLE_TYPE = 'ICEBERG'

/**
 * The snapshot id of a metadata file Strata writes (`…/metadata/v<N>.metadata.json`, Paimon's
 * name with `metadata.iceberg.storage` = `table-location`), or null for any other name.
 */
export function metadataSnapshotId(location: string): number | null {
  const m = /(?:^|\/)v(\d+)\.metadata\.json$/.exec(location)
  return m ? Number(m[1]) : null
}

/**
 * The TableInput of a new Glue table for the metadata at `metadataLocation`, as Iceberg's Glue
 * catalog registers one: an external table at the Iceberg table's location (the directory
 * above `metadata/`) with the Iceberg parameters. Athena reads the columns from the metadata
 * file; `PartitionKeys` is an empty list because Glue's API reference asks that of a table
 * Athena uses.
 */
export function newIcebergTableInput(name: string, metadataLocation: string): TableInput {
  return {
    Name: name,
    TableType: 'EXTERNAL_TABLE',
    Parameters: { [TABLE_TYPE_PARAM]: ICEBERG_TABLE_TYPE, [METADATA_LOCATION_PARAM]: metadataLocation },
    StorageDescriptor: { Location: metadataLocation.replace(/\/metadata\/[^/]+$/, '') },
    PartitionKeys: [],
  }
}

/**
 * The TableInput of `table` pointing at `metadataLocation`. Only the fields TableInput
 * accepts are copied (Table also carries read-only ones: CreateTime, VersionId, CatalogId, …);
 * a federated table and a view's definition are not Iceberg tables Strata points, and are left out.
 */
export function icebergTableInput(table: Table, metadataLocation: string): TableInput {
  const previous = table.Parameters?.[METADATA_LOCATION_PARAM]
  const parameters: Record<string, string> = { ...table.Parameters, [TABLE_TYPE_PARAM]: ICEBERG_TABLE_TYPE, [METADATA_LOCATION_PARAM]: metadataLocation }
  if (previous !== undefined && previous !== metadataLocation) parameters[PREVIOUS_METADATA_LOCATION_PARAM] = previous
  const input: TableInput = {
    Name: table.Name,
    Description: table.Description,
    Owner: table.Owner,
    LastAccessTime: table.LastAccessTime,
    LastAnalyzedTime: table.LastAnalyzedTime,
    Retention: table.Retention,
    StorageDescriptor: table.StorageDescriptor,
    PartitionKeys: table.PartitionKeys,
    ViewOriginalText: table.ViewOriginalText,
    ViewExpandedText: table.ViewExpandedText,
    TableType: table.TableType,
    Parameters: parameters,
    TargetTable: table.TargetTable,
  }
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as TableInput
}
