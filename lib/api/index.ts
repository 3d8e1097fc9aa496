// The package's library API (`import { openTable } from 'strata-tables'`): open or create a
// table, by URI or by name in a Paimon warehouse, then write, read, look up, read changes,
// compact, alter, tag and expire it through StrataTable. Errors are the classes below; branch
// on them with instanceof or errorKind. docs/api.md is the reference.

export { StrataTable } from './strata-table.ts'
export { createTable, openTable, openWarehouse, Warehouse } from './warehouse.ts'
export type { TableLocation, WarehouseTable, WarehouseTableName } from './warehouse.ts'
export type { TableIdentifier } from '../table/warehouse.ts'
export type {
  Changes,
  ChangeRecord,
  ChangesOptions,
  CompactOptions,
  CompactionJob,
  CompactSummary,
  ExpireSummary,
  ExpireTableOptions,
  OpenTableOptions,
  ReadOptions,
  SnapshotChoice,
  StreamOptions,
  TableShape,
  WriteSummary,
} from './strata-table.ts'
export type { RecordValue, TableRecord, WriteRecordInput } from './values.ts'
export type { SchemaChange, ColumnPosition } from '../handle/alter.ts'
export type { IncrementalMode } from '../read/incremental.ts'
export type { ScanMode } from '../read/streaming-start.ts'
export type { SkipReason } from '../lsm/compact/plan.ts'
export type { TableStatus, BucketStatus } from '../maintenance/table-status.ts'
export type { ObjectStore } from '../store/object-store.ts'
export {
  AlreadyExistsError,
  CommitConflictError,
  CommitFailedError,
  ConflictError,
  CorruptFileError,
  errorKind,
  MissingReferenceError,
  NotFoundError,
  RefusedError,
  SnapshotExpiredError,
  StaleSchemaError,
  StoreError,
  StrataError,
  StrataInputError,
} from '../errors.ts'
export type { ErrorKind, StrataErrorKind } from '../errors.ts'
