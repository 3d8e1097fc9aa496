// Names and paths of a Paimon warehouse, as Paimon's filesystem catalog lays one out
// (core:catalog/AbstractCatalog.java `newDatabasePath`, `newTableLocation`): a database is the
// directory `<warehouse>/<database>.db`, a table the directory `<database>.db/<table>` holding
// `schema/schema-N`. Pure strings, no I/O; listing and creating live in lib/api/warehouse.ts.
// docs/format.md "Warehouse layout".

import { StrataInputError } from '../errors.ts'

/** Paimon's `Catalog.DB_SUFFIX`: a database's directory is its name and this. */
export const DB_SUFFIX = '.db'
/** Paimon's `Catalog.SYSTEM_DATABASE_NAME`: its global system tables; no catalog creates or drops it. */
export const SYSTEM_DATABASE = 'sys'
/** Paimon's `Catalog.DEFAULT_DATABASE`: Flink's catalog creates it at start; the filesystem catalog itself does not. */
export const DEFAULT_DATABASE = 'default'
/** Paimon's `Identifier.SYSTEM_TABLE_SPLITTER`: `t$snapshots` is a system table of `t`, `t$branch_b` a branch. */
const SYSTEM_TABLE_SPLITTER = '$'
/** Local and HDFS file systems cap a directory name at 255 bytes (as lib/table/paths.ts). */
const MAX_DIR_BYTES = 255

/** A table's name in a warehouse. */
export interface TableIdentifier {
  database: string
  table: string
}

/** Where a table in a warehouse is: the warehouse's URI, its database and its name. */
export interface WarehouseLocation extends TableIdentifier {
  warehouse: string
}

/** What a directory name must be to be one directory on S3, local disk and HDFS alike. */
function directoryRule(name: string): string | null {
  if (name === '') return 'is empty'
  if (/[/\\]/.test(name)) return "holds '/' or '\\' (a name is one directory)"
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(name)) return 'holds a control character'
  if (name === '.' || name === '..') return "is '.' or '..'"
  return null
}

/**
 * A database name as Paimon takes one: no '.', since `db.table` splits at the first '.'
 * (`Identifier.fromString`); not `sys`, Paimon's system database; and one directory.
 */
export function checkDatabaseName(name: unknown, what = 'database name'): string {
  const fail = (rule: string) => new StrataInputError(`${what} ${JSON.stringify(name)}: ${rule}`)
  if (typeof name !== 'string') throw fail('expected a string')
  const bad = directoryRule(name)
  if (bad) throw fail(`${bad}; expected a name of one directory, without '.'`)
  if (name.includes('.')) throw fail("holds '.'; expected a name without '.' (a table is named <database>.<table>, split at the first '.')")
  if (name === SYSTEM_DATABASE) throw fail(`is Paimon's system database; expected another name`)
  if (Buffer.byteLength(name + DB_SUFFIX) > MAX_DIR_BYTES) throw fail(`is longer than ${MAX_DIR_BYTES - DB_SUFFIX.length} bytes (its directory '${DB_SUFFIX}' name must fit ${MAX_DIR_BYTES})`)
  return name
}

/**
 * A table name as Paimon creates one: no '$' (Paimon reads `t$x` as a system table or a
 * branch of `t`, and refuses to create one), and one directory. A '.' is allowed: the name
 * is what follows the first '.' of `db.table`.
 */
export function checkTableName(name: unknown, what = 'table name'): string {
  const fail = (rule: string) => new StrataInputError(`${what} ${JSON.stringify(name)}: ${rule}`)
  if (typeof name !== 'string') throw fail('expected a string')
  const bad = directoryRule(name)
  if (bad) throw fail(`${bad}; expected a name of one directory`)
  if (name.includes(SYSTEM_TABLE_SPLITTER)) throw fail(`holds '${SYSTEM_TABLE_SPLITTER}', which Paimon reads as a system table or branch of a table; expected a name without it`)
  if (Buffer.byteLength(name) > MAX_DIR_BYTES) throw fail(`is longer than ${MAX_DIR_BYTES} bytes`)
  return name
}

/** `db.table` (split at the first '.', as Paimon's `Identifier.fromString`), both parts checked. */
export function parseTableIdentifier(text: unknown, what = 'table name'): TableIdentifier {
  if (typeof text !== 'string') throw new StrataInputError(`${what} ${JSON.stringify(text)}: expected a string <database>.<table>`)
  const dot = text.indexOf('.')
  if (dot < 0) throw new StrataInputError(`${what} ${JSON.stringify(text)}: expected <database>.<table>, such as 'default.orders'`)
  const database = checkDatabaseName(text.slice(0, dot), `${what} ${JSON.stringify(text)}: database`)
  const table = checkTableName(text.slice(dot + 1), `${what} ${JSON.stringify(text)}: table`)
  return { database, table }
}

/** A table's name, `'db.table'` or `{ database, table }`, both parts checked. */
export function tableIdentifier(name: unknown): TableIdentifier {
  if (typeof name === 'string') return parseTableIdentifier(name)
  if (typeof name !== 'object' || name === null) throw new StrataInputError(`table name ${JSON.stringify(name)}: expected '<database>.<table>' or { database, table }`)
  const { database, table } = name as Record<string, unknown>
  return { database: checkDatabaseName(database), table: checkTableName(table) }
}

/** The database a directory name holds (`orders.db` → `orders`), or null when it is not one. */
export function databaseOfDirectory(dirName: string): string | null {
  // Paimon's listDatabasesInFileSystem takes every directory ending in '.db'
  if (!dirName.endsWith(DB_SUFFIX) || dirName.length === DB_SUFFIX.length) return null
  return dirName.slice(0, -DB_SUFFIX.length)
}

/** The warehouse URI, checked: a path, file://, s3:// or memory:// URI (openStore checks the rest). */
export function checkWarehouseUri(uri: unknown, what = 'warehouse'): string {
  if (typeof uri !== 'string' || uri.trim() === '') {
    throw new StrataInputError(`${what} ${JSON.stringify(uri)}: expected a warehouse URI (a path, 'file:///abs/path' or 's3://bucket[/prefix]')`)
  }
  return uri
}

/** `<base>/<segment>`, keeping a base that already ends in '/' (`s3://bucket/`, `file:///`) as it is. */
function join(base: string, segment: string): string {
  return base.endsWith('/') ? `${base}${segment}` : `${base}/${segment}`
}

/** The URI of a database's directory: `<warehouse>/<database>.db`. */
export function databaseUri(warehouse: string, database: string): string {
  return join(checkWarehouseUri(warehouse), checkDatabaseName(database) + DB_SUFFIX)
}

/**
 * The root URI of a table in a warehouse, `<warehouse>/<database>.db/<table>`: what Paimon's
 * catalog opens for `database.table`. The name is `'db.table'` or `{ database, table }`.
 */
export function warehouseTableUri(warehouse: string, name: string | TableIdentifier): string {
  const id = tableIdentifier(name)
  return join(databaseUri(warehouse, id.database), id.table)
}

/**
 * Where a table URI sits in a warehouse, read from its path as Paimon does
 * (`IcebergCommitCallback.catalogDatabasePath`, `SchemaManager.identifierFromPath`): its last
 * segment is the table, the one before it must end in '.db'. Null for a table outside one.
 */
export function warehouseLocationOf(tableUri: string): WarehouseLocation | null {
  const trimmed = tableUri.replace(/\/+$/, '')
  const tableSlash = trimmed.lastIndexOf('/')
  if (tableSlash < 0) return null
  const dbSlash = trimmed.lastIndexOf('/', tableSlash - 1)
  const dbDir = trimmed.slice(dbSlash + 1, tableSlash)
  const database = databaseOfDirectory(dbDir)
  const table = trimmed.slice(tableSlash + 1)
  if (database === null || table === '') return null
  const warehouse = dbSlash < 0 ? '.' : trimmed.slice(0, dbSlash)
  if (warehouse === '') return { warehouse: '/', database, table }
  // a scheme's own slashes are no directory: 's3://x.db/t' has no warehouse, 'file:///x.db/t' the root
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/?$/.test(warehouse)) return null
  if (/^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/$/.test(warehouse)) return warehouse.toLowerCase() === 'file://' ? { warehouse: 'file:///', database, table } : null
  return { warehouse, database, table }
}
