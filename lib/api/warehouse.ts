// A Paimon warehouse through the library: its databases and tables, laid out as Paimon's
// filesystem catalog lays them out (core:catalog/FileSystemCatalog.java, AbstractCatalog.java),
// so a Paimon catalog over the same warehouse in Flink, Spark or Trino lists and opens what
// Strata made, and Strata what they made. Names and paths are lib/table/warehouse.ts;
// directories per store kind lib/store/directories.ts. docs/api.md "Warehouses",
// docs/format.md "Warehouse layout".

import { AlreadyExistsError, NotFoundError, RefusedError, StrataInputError } from '../errors.ts'
import { directoryExists, listDirectories, makeDirectory, removeDirectory } from '../store/directories.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { openStore } from '../store/open-store.ts'
import { SCHEMA_DIR, schemaKey } from '../table/paths.ts'
import {
  checkDatabaseName,
  checkTableName,
  checkWarehouseUri,
  DB_SUFFIX,
  databaseOfDirectory,
  tableIdentifier,
  type TableIdentifier,
  warehouseTableUri,
} from '../table/warehouse.ts'
import { createTable as createTableAt, openTable as openTableAt, type OpenTableOptions, type StrataTable } from './strata-table.ts'

/** A table named in a warehouse: `{ warehouse: 's3://bucket/wh', name: 'db.orders' }`. */
export interface WarehouseTableName {
  warehouse: string
  /** `<database>.<table>`, split at the first '.' */
  name: string
}

/** Where a table is: its URI (a path, file://, s3://bucket/prefix), or a warehouse and a name. */
export type TableLocation = string | WarehouseTableName

function warehouseName(location: WarehouseTableName): WarehouseTableName {
  if (typeof location !== 'object' || location === null || typeof location.warehouse !== 'string' || typeof location.name !== 'string') {
    throw new StrataInputError(`table location ${JSON.stringify(location)}: expected a table URI string or { warehouse, name: '<database>.<table>' }`)
  }
  return location
}

/** Creates a table at a URI, or as `name` in a warehouse (whose database must exist), from a schema. */
export async function createTable(location: TableLocation, schema: unknown, opts: OpenTableOptions = {}): Promise<StrataTable> {
  if (typeof location === 'string') return createTableAt(location, schema, opts)
  const { warehouse, name } = warehouseName(location)
  return new Warehouse(warehouse, opts).createTable(name, schema)
}

/** Opens the table at a URI, or `name` in a warehouse; a NotFoundError when there is none. */
export async function openTable(location: TableLocation, opts: OpenTableOptions = {}): Promise<StrataTable> {
  if (typeof location === 'string') return openTableAt(location, opts)
  const { warehouse, name } = warehouseName(location)
  return new Warehouse(warehouse, opts).openTable(name)
}

/** Opens the warehouse at `uri` (a path, file:// or s3://bucket/prefix). Nothing is read or written yet. */
export async function openWarehouse(uri: string, opts: OpenTableOptions = {}): Promise<Warehouse> {
  return new Warehouse(uri, opts)
}

/** What a table listing gives: the table's names and where its files are. */
export interface WarehouseTable {
  database: string
  table: string
  /** `database.table` */
  name: string
  /** the table's root URI, `<warehouse>/<database>.db/<table>` */
  uri: string
}

export class Warehouse {
  /** The warehouse's URI, as given. */
  readonly uri: string
  private readonly store: ObjectStore
  private readonly opts: OpenTableOptions

  constructor(uri: string, opts: OpenTableOptions = {}) {
    this.uri = checkWarehouseUri(uri)
    if (/^memory:\/\//i.test(uri)) {
      // each memory:// name is a store of its own, so a warehouse could not see its tables' files
      throw new RefusedError(`warehouse ${JSON.stringify(uri)}: a memory:// store cannot hold a warehouse (every memory:// table is a separate store); expected a path, file:// or s3:// URI`)
    }
    this.store = openStore(uri)
    this.opts = opts
  }

  /** The databases: every directory named `<name>.db` directly in the warehouse, sorted. */
  async listDatabases(): Promise<string[]> {
    const names = (await listDirectories(this.store, '')).map(databaseOfDirectory)
    return names.filter((n): n is string => n !== null)
  }

  /** Whether the database's directory exists. */
  async databaseExists(database: string): Promise<boolean> {
    return directoryExists(this.store, checkDatabaseName(database) + DB_SUFFIX)
  }

  /**
   * Creates a database: its directory (on S3 a marker object), nothing in it, as Paimon's
   * filesystem catalog (which keeps no database properties). Returns false when it existed
   * and `ignoreIfExists` let that pass.
   */
  async createDatabase(database: string, { ignoreIfExists = false }: { ignoreIfExists?: boolean } = {}): Promise<boolean> {
    if (await this.databaseExists(database)) {
      if (ignoreIfExists) return false
      throw new AlreadyExistsError(`database ${JSON.stringify(database)} already exists in warehouse ${this.uri}`)
    }
    await makeDirectory(this.store, database + DB_SUFFIX)
    return true
  }

  /**
   * Drops a database and its directory. One that holds tables is refused unless `cascade`
   * (then its tables go with it), as Paimon's `dropDatabase`. Returns whether it was there
   * and the tables dropped with it.
   */
  async dropDatabase(database: string, { cascade = false, ignoreIfNotExists = false }: { cascade?: boolean; ignoreIfNotExists?: boolean } = {}): Promise<{ dropped: boolean; tables: string[] }> {
    if (!(await this.databaseExists(database))) {
      if (ignoreIfNotExists) return { dropped: false, tables: [] }
      throw await this.noDatabase(database)
    }
    const tables = await this.listTablesIn(database)
    if (tables.length > 0 && !cascade) {
      throw new RefusedError(`database ${JSON.stringify(database)} in warehouse ${this.uri} is not empty (tables: ${tables.join(', ')}); set cascade to drop its tables with it ('strata database drop --cascade')`)
    }
    await removeDirectory(this.store, database + DB_SUFFIX)
    return { dropped: true, tables }
  }

  /** The tables of a database: its directories holding a `schema/schema-N`, sorted by name. */
  async listTables(database: string): Promise<WarehouseTable[]> {
    if (!(await this.databaseExists(database))) throw await this.noDatabase(database)
    return (await this.listTablesIn(database)).map((table) => this.describe({ database, table }))
  }

  /** The root URI of `database.table` (or `{ database, table }`). */
  tableUri(name: string | TableIdentifier): string {
    return warehouseTableUri(this.uri, name)
  }

  /** Opens `database.table`; a NotFoundError naming the warehouse when it is not there. */
  async openTable(name: string | TableIdentifier, opts: OpenTableOptions = {}): Promise<StrataTable> {
    const id = tableIdentifier(name)
    try {
      return await openTableAt(this.tableUri(id), { ...this.opts, ...opts })
    } catch (e) {
      if (!(e instanceof NotFoundError)) throw e
      if (!(await this.databaseExists(id.database))) throw await this.noDatabase(id.database)
      const tables = await this.listTablesIn(id.database)
      throw new NotFoundError(`table ${id.database}.${id.table}: no such table in warehouse ${this.uri} (tables of ${id.database}: ${tables.join(', ') || 'none'})`)
    }
  }

  /** Creates `database.table` from a schema, as `createTable` does; the database must exist (as in Paimon). */
  async createTable(name: string | TableIdentifier, schema: unknown, opts: OpenTableOptions = {}): Promise<StrataTable> {
    const id = tableIdentifier(name)
    if (!(await this.databaseExists(id.database))) throw await this.noDatabase(id.database)
    return createTableAt(this.tableUri(id), schema, { ...this.opts, ...opts })
  }

  private describe(id: TableIdentifier): WarehouseTable {
    return { database: id.database, table: id.table, name: `${id.database}.${id.table}`, uri: this.tableUri(id) }
  }

  /**
   * Paimon's listTablesInFileSystem: a directory is a table when it has schema-0, or any
   * schema-N. A directory whose name Paimon could not open as a table (a '$' in it) is skipped.
   */
  private async listTablesIn(database: string): Promise<string[]> {
    const dir = checkDatabaseName(database) + DB_SUFFIX
    const out: string[] = []
    for (const name of await listDirectories(this.store, dir)) {
      try {
        checkTableName(name)
      } catch {
        continue
      }
      const schemaDir = `${dir}/${name}/${SCHEMA_DIR}`
      if ((await this.store.head(`${dir}/${name}/${schemaKey(0)}`)) !== null) out.push(name)
      else if ((await this.store.list(schemaDir)).some((o) => /^schema-\d+$/.test(o.key.slice(schemaDir.length)))) out.push(name)
    }
    return out
  }

  private async noDatabase(database: string): Promise<NotFoundError> {
    const all = await this.listDatabases()
    return new NotFoundError(`database ${JSON.stringify(database)}: no such database in warehouse ${this.uri} (databases: ${all.join(', ') || 'none'})`)
  }
}
