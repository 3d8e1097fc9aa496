// Object keys of a table, relative to its root (docs/format.md "Directory and file names").

import { randomUUID } from 'node:crypto'

export const SNAPSHOT_DIR = 'snapshot/'
export const SCHEMA_DIR = 'schema/'
export const MANIFEST_DIR = 'manifest/'
export const INDEX_DIR = 'index/'
/** `core:utils/TagManager.java`: a tag is `tag/tag-<name>` */
export const TAG_DIR = 'tag/'
export const TAG_PREFIX = 'tag-'

export const snapshotKey = (id: number): string => `${SNAPSHOT_DIR}snapshot-${id}`
export const schemaKey = (id: number): string => `${SCHEMA_DIR}schema-${id}`
export const LATEST_KEY = `${SNAPSHOT_DIR}LATEST`
export const EARLIEST_KEY = `${SNAPSHOT_DIR}EARLIEST`
export const manifestKey = (name: string): string => `${MANIFEST_DIR}${name}`
export const indexKey = (name: string): string => `${INDEX_DIR}${name}`
export const tagKey = (name: string): string => `${TAG_DIR}${TAG_PREFIX}${name}`

/**
 * Partition directories: local and HDFS file systems cap a file or directory name at 255
 * bytes, and a Paimon reader of a table copied there must find its partitions; S3 caps a
 * whole key at 1,024 bytes, of which the table's prefix, `bucket-N/` and a data file name
 * need their share. The writer refuses values past these, the schema keys that leave no room.
 */
export const MAX_PARTITION_DIR_BYTES = 255
export const MAX_PARTITION_PATH_BYTES = 512

/**
 * Java names files `<prefix><uuid>-<counter>` with one uuid per writer and a counter from
 * 0 (core:utils/FileStorePathFactory.java); readers never parse either part. Strata keeps
 * that shape with one uuid per factory instance.
 */
/** File name prefix of changelog files (Paimon's `changelog-file.prefix` default; Strata has no option for it). */
export const CHANGELOG_FILE_PREFIX = 'changelog-'

export class FileNamer {
  private readonly uuid = randomUUID()
  private counter = 0
  next(prefix: string, suffix = ''): string {
    return `${prefix}${this.uuid}-${this.counter++}${suffix}`
  }
}

export function parseSnapshotId(name: string): number | null {
  const m = /^snapshot-(\d+)$/.exec(name)
  return m ? Number(m[1]) : null
}
