// The CLI's Paimon warehouse: which warehouse a command works in (`--warehouse`, else the
// environment's STRATA_WAREHOUSE), how a `<table>` argument names a table in it
// (`<database>.<table>`), and the commands on its databases and tables (`database list`,
// `database create`, `database drop`, `table list`). docs/operations.md "Warehouses".

import type { Command } from 'commander'
import { NotFoundError, StrataInputError } from '../errors.ts'
import type { TableLocation, Warehouse } from '../api/warehouse.ts'
import { checkWarehouseUri } from '../table/warehouse.ts'

/** The environment variable that names the warehouse when `--warehouse` is not given. */
export const WAREHOUSE_ENV = 'STRATA_WAREHOUSE'

/** The warehouse a command works in: `--warehouse`, else STRATA_WAREHOUSE, else none. */
export function chosenWarehouse(program: Command): { uri: string; from: 'flag' | 'env' } | null {
  const flag = program.opts<{ warehouse?: string }>().warehouse
  if (flag !== undefined) {
    return { uri: checkWarehouseUri(flag, '--warehouse'), from: 'flag' }
  }
  const env = process.env[WAREHOUSE_ENV]
  return env === undefined || env.trim() === '' ? null : { uri: env, from: 'env' }
}

/**
 * Whether a `<table>` argument is `<database>.<table>`: a '.' in it, and no '/', '\' or
 * scheme, so no path or URI is ever taken for a name (`./orders.v2` stays a path).
 */
export function looksLikeTableName(arg: string): boolean {
  return arg.includes('.') && !/[/\\]/.test(arg) && !/^[a-zA-Z][a-zA-Z0-9+.-]*:/.test(arg)
}

/** Where a `<table>` argument points: a name in the chosen warehouse, or a table URI as it is. */
export function tableLocation(program: Command, arg: string): TableLocation {
  const warehouse = chosenWarehouse(program)
  return warehouse !== null && looksLikeTableName(arg) ? { warehouse: warehouse.uri, name: arg } : arg
}

/** How a hint names the table again, so the command it suggests finds the same one. */
export function tableArgument(program: Command, arg: string): string {
  const warehouse = chosenWarehouse(program)
  return warehouse?.from === 'flag' && looksLikeTableName(arg) ? `--warehouse ${warehouse.uri} ${arg}` : arg
}

/** A create in a database that is not there says which command makes it. */
export function missingDatabaseHint(e: unknown, arg: string): unknown {
  if (!(e instanceof NotFoundError) || !looksLikeTableName(arg) || !e.message.startsWith('database ')) return e
  return new NotFoundError(`${e.message}; create it with 'strata database create ${arg.slice(0, arg.indexOf('.'))}'`)
}

/** The chosen warehouse, or an error naming the flag and the variable. */
function requireWarehouse(program: Command, command: string): string {
  const warehouse = chosenWarehouse(program)
  if (warehouse === null) throw new StrataInputError(`${command}: no warehouse; expected --warehouse <uri> (a path, 'file:///abs/path' or 's3://bucket[/prefix]') or ${WAREHOUSE_ENV}`)
  return warehouse.uri
}

function out(line: string): void {
  process.stdout.write(line + '\n')
}

/** database list, database create, database drop, table list. */
export function addWarehouseCommands(program: Command, open: (uri: string) => Promise<Warehouse>): void {
  const at = (command: string) => open(requireWarehouse(program, command))
  const database = program.command('database').description(`databases of a Paimon warehouse (--warehouse <uri> or ${WAREHOUSE_ENV}): the directories <warehouse>/<name>.db`)
  database
    .command('list')
    .description('the databases, one name a line')
    .option('--json', 'one JSON object per database')
    .action(async (o: { json?: boolean }) => {
      for (const name of await (await at('database list')).listDatabases()) out(o.json ? JSON.stringify({ database: name }) : name)
    })
  database
    .command('create <name>')
    .description("create a database: its directory (on S3 a marker object), as Paimon's CREATE DATABASE")
    .option('--ignore-if-exists', 'succeed when it exists already')
    .action(async (name: string, o: { ignoreIfExists?: boolean }) => {
      const warehouse = await at('database create')
      const created = await warehouse.createDatabase(name, { ignoreIfExists: o.ignoreIfExists })
      out(created ? `created database ${JSON.stringify(name)} in ${warehouse.uri}` : `database ${JSON.stringify(name)} exists already in ${warehouse.uri}`)
    })
  database
    .command('drop <name>')
    .description('drop a database; one that holds tables only with --cascade, which drops them too')
    .option('--cascade', 'drop its tables too')
    .option('--ignore-if-not-exists', 'succeed when there is no such database')
    .action(async (name: string, o: { cascade?: boolean; ignoreIfNotExists?: boolean }) => {
      const warehouse = await at('database drop')
      const r = await warehouse.dropDatabase(name, { cascade: o.cascade, ignoreIfNotExists: o.ignoreIfNotExists })
      const tables = r.tables.length === 0 ? '' : ` and its ${r.tables.length} table(s): ${r.tables.join(', ')}`
      out(r.dropped ? `dropped database ${JSON.stringify(name)}${tables}` : `no database ${JSON.stringify(name)} in ${warehouse.uri}; nothing dropped`)
    })

  const table = program.command('table').description(`tables of a Paimon warehouse (--warehouse <uri> or ${WAREHOUSE_ENV}); each command that takes a <table> also takes <database>.<table> there`)
  table
    .command('list [database]')
    .description('the tables of a database, or of every database: <database>.<table> and its URI')
    .option('--json', 'one JSON object per table')
    .action(async (db: string | undefined, o: { json?: boolean }) => {
      const warehouse = await at('table list')
      const databases = db === undefined ? await warehouse.listDatabases() : [db]
      if (!o.json) out(['table', 'uri'].join('\t'))
      for (const name of databases) {
        for (const t of await warehouse.listTables(name)) out(o.json ? JSON.stringify(t) : [t.name, t.uri].join('\t'))
      }
    })
}
