// Shared vocabulary of the engine. Names follow Apache Paimon (TableSchema, DataField,
// RowKind, KeyValue, DataFileMeta, ManifestEntry) so a Paimon user finds them.

/** Type roots Strata supports (a subset of Paimon's `DataTypeRoot`). */
export type TypeRoot =
  | 'BOOLEAN'
  | 'TINYINT'
  | 'SMALLINT'
  | 'INT'
  | 'BIGINT'
  | 'FLOAT'
  | 'DOUBLE'
  | 'DECIMAL'
  | 'CHAR'
  | 'VARCHAR'
  | 'BINARY'
  | 'VARBINARY'
  | 'DATE'
  | 'TIMESTAMP'
  | 'ARRAY'
  | 'MAP'
  | 'MULTISET'
  | 'ROW'

/**
 * A Paimon data type. `length` is set for CHAR/VARCHAR/BINARY/VARBINARY (STRING is
 * VARCHAR(2147483647), BYTES is VARBINARY(2147483647)); `precision`/`scale` for DECIMAL;
 * `precision` (0..6) for TIMESTAMP. Nested types (value columns only): `element` for ARRAY
 * and MULTISET, `key` and `value` for MAP, `fields` for ROW.
 */
export interface DataType {
  root: TypeRoot
  nullable: boolean
  length?: number
  precision?: number
  scale?: number
  element?: DataType
  key?: DataType
  value?: DataType
  fields?: DataField[]
}

export interface DataField {
  id: number
  name: string
  type: DataType
  description?: string
}

/**
 * In-memory value of one field. One representation per type root, used everywhere in the
 * engine (rows, keys, stats, merge functions):
 * - BOOLEAN: boolean
 * - TINYINT, SMALLINT, INT: number (integer)
 * - BIGINT: bigint
 * - FLOAT, DOUBLE: number
 * - DECIMAL(p, s): bigint, the unscaled value (123.45 in DECIMAL(10, 2) is 12345n)
 * - CHAR, VARCHAR (STRING): string
 * - BINARY, VARBINARY (BYTES): Uint8Array
 * - DATE: number, days since 1970-01-01
 * - TIMESTAMP(p): bigint, microseconds since 1970-01-01T00:00 (wall clock, no time zone)
 * - ARRAY<T>: Value[], one element per position
 * - ROW<...>: Value[], one value per field in field order
 * - MAP<K, V>: MapValue, keys and values in entry order (keys are never null, never repeated)
 * - MULTISET<T>: MapValue whose values are the INT counts (Paimon stores it as MAP<T, INT>)
 * - null for SQL NULL
 */
export type Value = null | boolean | number | bigint | string | Uint8Array | Value[] | MapValue

/** A MAP or MULTISET value: parallel key and value arrays, as Paimon's BinaryMap holds them. */
export interface MapValue {
  readonly keys: Value[]
  readonly values: Value[]
}

/** A row as an array of values in schema field order. */
export type Row = Value[]

/** Paimon's RowKind byte (`_VALUE_KIND`). */
export const RowKind = {
  INSERT: 0,
  UPDATE_BEFORE: 1,
  UPDATE_AFTER: 2,
  DELETE: 3,
} as const
export type RowKind = (typeof RowKind)[keyof typeof RowKind]

export const ROW_KIND_SHORT: Record<RowKind, string> = { 0: '+I', 1: '-U', 2: '+U', 3: '-D' }

/** Retract kinds (-U, -D) remove a row; add kinds (+I, +U) put one. */
export function isRetract(kind: RowKind): boolean {
  return kind === RowKind.UPDATE_BEFORE || kind === RowKind.DELETE
}

/**
 * One record of an LSM data file: the trimmed primary key, its sequence number, its kind
 * and the full value row (all table fields in schema order, partition fields included).
 */
export interface KeyValue {
  key: Value[]
  seq: bigint
  kind: RowKind
  value: Row
}

/** Contents of `schema/schema-N` (Paimon TableSchema, version 3). */
export interface TableSchema {
  version: number
  id: number
  fields: DataField[]
  highestFieldId: number
  partitionKeys: string[]
  primaryKeys: string[]
  options: Record<string, string>
  comment?: string
  timeMillis: number
}

/** Simple column statistics (Paimon SimpleStats): serialized BinaryRows + null counts. */
export interface SimpleStats {
  minValues: Uint8Array
  maxValues: Uint8Array
  nullCounts: (bigint | null)[] | null
}

/** Paimon DataFileMeta as stored in a manifest entry's `_FILE`. */
export interface DataFileMeta {
  fileName: string
  fileSize: bigint
  rowCount: bigint
  /** serialized BinaryRow (with arity prefix) of the first key */
  minKey: Uint8Array
  /** serialized BinaryRow (with arity prefix) of the last key */
  maxKey: Uint8Array
  keyStats: SimpleStats
  valueStats: SimpleStats
  minSequenceNumber: bigint
  maxSequenceNumber: bigint
  schemaId: bigint
  level: number
  extraFiles: string[]
  /** epoch millis (Paimon stores local wall-clock millis; Strata writes UTC) */
  creationTime: bigint | null
  deleteRowCount: bigint | null
  embeddedIndex: Uint8Array | null
  /** 0 APPEND, 1 COMPACT */
  fileSource: number | null
  valueStatsCols: string[] | null
  externalPath: string | null
  firstRowId: bigint | null
  writeCols: string[] | null
}

export const FileKind = { ADD: 0, DELETE: 1 } as const
export type FileKind = (typeof FileKind)[keyof typeof FileKind]

export interface ManifestEntry {
  kind: FileKind
  /** serialized partition BinaryRow with arity prefix */
  partition: Uint8Array
  bucket: number
  totalBuckets: number
  file: DataFileMeta
}

/** One record of a manifest list (Paimon ManifestFileMeta). */
export interface ManifestFileMeta {
  fileName: string
  fileSize: bigint
  numAddedFiles: bigint
  numDeletedFiles: bigint
  partitionStats: SimpleStats
  schemaId: bigint
  minBucket: number | null
  maxBucket: number | null
  minLevel: number | null
  maxLevel: number | null
}

export interface DeletionVectorMeta {
  dataFileName: string
  offset: number
  length: number
  cardinality: bigint | null
}

/** One record of an index manifest (Paimon IndexManifestEntry). */
export interface IndexManifestEntry {
  kind: FileKind
  partition: Uint8Array
  bucket: number
  indexType: string
  fileName: string
  fileSize: bigint
  rowCount: bigint
  dvRanges: DeletionVectorMeta[] | null
  externalPath: string | null
}

export type CommitKind = 'APPEND' | 'COMPACT' | 'OVERWRITE' | 'ANALYZE'

/** Contents of `snapshot/snapshot-N` (Paimon Snapshot, version 3). */
export interface Snapshot {
  version: number
  uuid?: string
  id: number
  schemaId: number
  baseManifestList: string
  baseManifestListSize?: number
  deltaManifestList: string
  deltaManifestListSize?: number
  changelogManifestList?: string
  changelogManifestListSize?: number
  indexManifest?: string
  commitUser: string
  /** a Java long; Long.MAX_VALUE for batch commits, so kept as bigint */
  commitIdentifier: bigint
  commitKind: CommitKind
  timeMillis: number
  totalRecordCount: number
  deltaRecordCount: number
  changelogRecordCount?: number
  watermark?: bigint
  statistics?: string
  properties?: Record<string, string>
  nextRowId?: number
}
