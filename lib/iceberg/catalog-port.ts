// Where a table's Iceberg metadata is announced once written: a catalog (AWS Glue Data
// Catalog) whose table entry points at the newest `v<N>.metadata.json`. The committer calls
// `published` after each metadata file it writes and `flush` before it stops, so a pointer
// that moves at most once per interval still ends on the newest metadata.

export interface IcebergCatalogPort {
  /** `v<snapshotId>.metadata.json` was written at `metadataLocation` (a full URI, s3://… or file://…). */
  published(metadataLocation: string, snapshotId: number): Promise<void>
  /** The committer is about to stop: move the pointer to the newest metadata published, if it lags. */
  flush(): Promise<void>
}
