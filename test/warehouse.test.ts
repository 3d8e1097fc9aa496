// A Paimon warehouse (lib/table/warehouse.ts, lib/store/directories.ts, lib/api/warehouse.ts,
// lib/cli/warehouse.ts): names and paths as Paimon's filesystem catalog makes them; listing,
// creating and dropping databases on local disk and on S3 (the embedded backend); tables by
// warehouse and name through the library and the CLI. Paimon's own catalog reading the same
// layout is test/interop-catalog.test.ts.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { AlreadyExistsError, createTable, NotFoundError, openTable, openWarehouse, RefusedError, StrataInputError, type Warehouse } from '../lib/api/index.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { listDirectories } from '../lib/store/directories.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import {
  checkDatabaseName,
  checkTableName,
  databaseOfDirectory,
  databaseUri,
  parseTableIdentifier,
  warehouseLocationOf,
  warehouseTableUri,
} from '../lib/table/warehouse.ts'
import { strata } from './helpers/cli-in-process.ts'

const SCHEMA = {
  fields: [
    { name: 'id', type: 'BIGINT NOT NULL' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '1' },
}

const messageOf = (f: () => unknown): string => {
  try {
    f()
  } catch (e) {
    return `${(e as Error).constructor.name}: ${(e as Error).message}`
  }
  throw new Error('expected an error')
}

describe('names and paths', () => {
  it('resolve <warehouse> + db.table to <warehouse>/<db>.db/<table>, splitting at the first dot as Paimon', () => {
    expect(warehouseTableUri('s3://bucket/wh', 'sales.orders')).toBe('s3://bucket/wh/sales.db/orders')
    expect(warehouseTableUri('s3://bucket/', 'sales.orders')).toBe('s3://bucket/sales.db/orders')
    expect(warehouseTableUri('/data/wh', 'sales.orders.v2')).toBe('/data/wh/sales.db/orders.v2')
    expect(warehouseTableUri('file:///', { database: 'a', table: 'b' })).toBe('file:///a.db/b')
    expect(databaseUri('s3://bucket/wh', 'sales')).toBe('s3://bucket/wh/sales.db')
    expect(parseTableIdentifier('a.b.c')).toEqual({ database: 'a', table: 'b.c' })
  })

  it('refuse names Paimon cannot hold, naming the value and the rule', () => {
    expect(messageOf(() => parseTableIdentifier('orders'))).toBe(`StrataInputError: table name "orders": expected <database>.<table>, such as 'default.orders'`)
    expect(messageOf(() => parseTableIdentifier('sys.tables'))).toMatch(/database "sys": is Paimon's system database/)
    expect(messageOf(() => parseTableIdentifier('db.t$snapshots'))).toMatch(/table "t\$snapshots": holds '\$', which Paimon reads as a system table or branch/)
    expect(messageOf(() => parseTableIdentifier('.t'))).toMatch(/database "": is empty/)
    expect(messageOf(() => parseTableIdentifier('db.'))).toMatch(/table "": is empty/)
    expect(messageOf(() => parseTableIdentifier('db.a/b'))).toMatch(/table "a\/b": holds '\/'/)
    expect(messageOf(() => checkDatabaseName('a\tb'))).toMatch(/database name "a\\tb": holds a control character/)
    expect(messageOf(() => checkDatabaseName('x'.repeat(253)))).toMatch(/longer than 252 bytes/)
    expect(messageOf(() => checkTableName('..'))).toMatch(/table name "\.\.": is '\.' or '\.\.'/)
    expect(messageOf(() => checkTableName(7))).toMatch(/table name 7: expected a string/)
    expect(messageOf(() => warehouseTableUri('', 'a.b'))).toMatch(/warehouse "": expected a warehouse URI/)
    expect(messageOf(() => warehouseTableUri('/wh', { database: 'a', table: 5 } as never))).toMatch(/table name 5: expected a string/)
    expect(messageOf(() => warehouseTableUri('/wh', null as never))).toMatch(/table name null: expected '<database>.<table>' or \{ database, table \}/)
  })

  it('read a table URI back into warehouse, database and table (property)', () => {
    const segment = fc.stringMatching(/^[a-zA-Z0-9_-]{1,12}$/)
    const warehouse = fc.oneof(
      fc.array(segment, { minLength: 1, maxLength: 3 }).map((s) => `/${s.join('/')}`),
      fc.array(segment, { minLength: 0, maxLength: 2 }).map((s) => `s3://bucket-x${s.map((x) => `/${x}`).join('')}`),
      fc.array(segment, { minLength: 1, maxLength: 2 }).map((s) => `file:///${s.join('/')}`),
    )
    const table = fc.tuple(segment, fc.option(segment, { nil: undefined })).map(([a, b]) => (b === undefined ? a : `${a}.${b}`))
    fc.assert(
      fc.property(warehouse, segment, table, (wh, database, name) => {
        const uri = warehouseTableUri(wh, `${database}.${name}`)
        expect(warehouseLocationOf(uri)).toEqual({ warehouse: wh, database, table: name })
        expect(warehouseLocationOf(`${uri}/`)).toEqual({ warehouse: wh, database, table: name })
      }),
    )
    expect(warehouseLocationOf('s3://bucket/tables/orders')).toBeNull()
    expect(warehouseLocationOf('s3://x.db/orders')).toBeNull()
    expect(warehouseLocationOf('/sales.db/orders')).toEqual({ warehouse: '/', database: 'sales', table: 'orders' })
    expect(databaseOfDirectory('sales.db')).toBe('sales')
    expect(databaseOfDirectory('.db')).toBeNull()
    expect(databaseOfDirectory('sales')).toBeNull()
  })
})

/** One kind of store under a warehouse: its URI, and the store at its root for planting foreign objects. */
interface Place {
  name: string
  setup(): Promise<void>
  fresh(): { uri: string; root: ObjectStore; mkdir(dir: string): void }
  teardown(): Promise<void>
}

const BUCKET = 'strata-warehouse'
let backend: EmbeddedBackend | null = null

function localPlace(): Place {
  let dir = ''
  let n = 0
  return {
    name: 'local disk',
    async setup() {
      dir = mkdtempSync(join(tmpdir(), 'strata-warehouse-'))
    },
    fresh() {
      const uri = join(dir, `wh-${n++}`)
      return { uri, root: new LocalFileStore(uri), mkdir: (d) => mkdirSync(join(uri, d), { recursive: true }) }
    },
    async teardown() {
      rmSync(dir, { recursive: true, force: true })
    },
  }
}

function s3Place(): Place {
  let n = 0
  return {
    name: 'S3 (embedded)',
    async setup() {
      backend = await startEmbeddedBackend()
      await backend.createBucket(BUCKET)
      // s3:// URIs are opened with the SDK's default client, as a user's are: point it here
      const env = { AWS_ENDPOINT_URL: backend.endpoint, AWS_REGION: backend.region, AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey }
      for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v)
    },
    fresh() {
      const prefix = `wh-${n++}`
      const root = new S3Store({ bucket: BUCKET, prefix, client: backend!.s3Client() })
      // an empty directory on S3 is a marker object, as S3A's mkdirs makes
      return { uri: `s3://${BUCKET}/${prefix}`, root, mkdir: () => {} }
    },
    async teardown() {
      vi.unstubAllEnvs()
      await backend?.stop()
    },
  }
}

for (const place of [localPlace(), s3Place()]) {
  describe(`a warehouse on ${place.name}`, () => {
    beforeAll(() => place.setup())
    afterAll(() => place.teardown())

    it('lists the databases (directories <name>.db) and their tables (directories with a schema), as Paimon does', async () => {
      const { uri, root, mkdir } = place.fresh()
      const wh = await openWarehouse(uri)
      expect(await wh.listDatabases()).toEqual([])
      await wh.createDatabase('sales')
      await wh.createDatabase('empty')
      await wh.createTable('sales.orders', SCHEMA)
      await wh.createTable('sales.items.v2', SCHEMA)
      // what is not a database or a table: an Iceberg catalog's directory, a directory without
      // '.db', a file named like a database, a directory with no schema, a table whose schema-0 expired
      await root.put('iceberg/sales/orders/metadata/v1.metadata.json', new TextEncoder().encode('{}'))
      await root.put('notes/readme.txt', new Uint8Array(1))
      await root.put('loose.db', new Uint8Array(1))
      await root.put('sales.db/scratch/data.txt', new Uint8Array(1))
      mkdir('sales.db/empty-dir')
      await root.put('sales.db/evolved/schema/schema-3', new TextEncoder().encode('{}'))
      expect(await wh.listDatabases()).toEqual(['empty', 'sales'])
      expect((await wh.listTables('sales')).map((t) => t.name)).toEqual(['sales.evolved', 'sales.items.v2', 'sales.orders'])
      expect(await wh.listTables('empty')).toEqual([])
      expect((await wh.listTables('sales'))[2]).toEqual({ database: 'sales', table: 'orders', name: 'sales.orders', uri: `${uri}/sales.db/orders` })
      expect(await listDirectories(root, '')).toEqual(['empty.db', 'iceberg', 'notes', 'sales.db'])
    })

    it('creates and drops databases as Paimon: exists refused, non-empty refused unless cascade', async () => {
      const { uri, root } = place.fresh()
      const wh = await openWarehouse(uri)
      expect(await wh.createDatabase('a')).toBe(true)
      expect(await wh.databaseExists('a')).toBe(true)
      if (root instanceof S3Store) expect(await root.head('a.db/')).toMatchObject({ size: 0 })
      await expect(wh.createDatabase('a')).rejects.toThrow(AlreadyExistsError)
      expect(await wh.createDatabase('a', { ignoreIfExists: true })).toBe(false)
      await expect(wh.createDatabase('sys')).rejects.toThrow(/database name "sys": is Paimon's system database/)
      const t = await wh.createTable('a.t', SCHEMA)
      await t.write([{ id: 1, v: 'x' }])
      await expect(wh.dropDatabase('a')).rejects.toThrow(RefusedError)
      await expect(wh.dropDatabase('a')).rejects.toThrow(`database "a" in warehouse ${uri} is not empty (tables: t)`)
      expect(await wh.listDatabases()).toEqual(['a'])
      expect(await wh.dropDatabase('a', { cascade: true })).toEqual({ dropped: true, tables: ['t'] })
      expect(await wh.listDatabases()).toEqual([])
      expect(await root.list('')).toEqual([])
      await expect(wh.dropDatabase('a')).rejects.toThrow(NotFoundError)
      expect(await wh.dropDatabase('a', { ignoreIfNotExists: true })).toEqual({ dropped: false, tables: [] })
      await wh.createDatabase('b')
      expect(await wh.dropDatabase('b')).toEqual({ dropped: true, tables: [] })
      expect(await wh.databaseExists('b')).toBe(false)
    })

    it('creates and opens tables by warehouse and name, the same table as by its URI', async () => {
      const { uri } = place.fresh()
      const wh = await openWarehouse(uri)
      await expect(createTable({ warehouse: uri, name: 'sales.orders' }, SCHEMA)).rejects.toThrow(`database "sales": no such database in warehouse ${uri} (databases: none)`)
      await wh.createDatabase('sales')
      const created = await createTable({ warehouse: uri, name: 'sales.orders' }, SCHEMA)
      await created.write([{ id: 1, v: 'one' }, { id: 2, v: 'two' }])
      const byUri = await openTable(`${uri}/sales.db/orders`)
      expect(await byUri.readAll()).toEqual([{ id: 1n, v: 'one' }, { id: 2n, v: 'two' }])
      expect(await (await openTable({ warehouse: uri, name: 'sales.orders' })).readAll()).toEqual(await byUri.readAll())
      expect(wh.tableUri('sales.orders')).toBe(`${uri}/sales.db/orders`)
      await expect(wh.createTable('sales.orders', SCHEMA)).rejects.toThrow(AlreadyExistsError)
      await expect(wh.openTable('sales.nope')).rejects.toThrow(`table sales.nope: no such table in warehouse ${uri} (tables of sales: orders)`)
      await expect(wh.openTable('other.orders')).rejects.toThrow(`database "other": no such database in warehouse ${uri} (databases: sales)`)
      await expect(wh.listTables('other')).rejects.toThrow(NotFoundError)
    })
  })
}

describe('a warehouse against a model (property)', () => {
  let dir = ''
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'strata-warehouse-model-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  type Op = { kind: 'create-db' | 'drop-db' | 'drop-db-cascade'; db: string } | { kind: 'create-table'; db: string; table: string }
  const db = fc.constantFrom('a', 'b', 'default')
  const op: fc.Arbitrary<Op> = fc.oneof(
    fc.record({ kind: fc.constantFrom('create-db' as const, 'drop-db' as const, 'drop-db-cascade' as const), db }),
    fc.record({ kind: fc.constant('create-table' as const), db, table: fc.constantFrom('t', 'u', 'v.w') }),
  )

  it('lists what was created and not dropped; refuses what Paimon refuses, with the class a caller branches on', async () => {
    let run = 0
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 12 }), async (ops) => {
        const wh = await openWarehouse(join(dir, `run-${run++}`))
        const model = new Map<string, Set<string>>()
        for (const o of ops) {
          const tables = model.get(o.db)
          let expected: (new (...args: never[]) => Error) | null = null
          if (o.kind === 'create-db') expected = tables ? AlreadyExistsError : null
          else if (o.kind === 'create-table') expected = !tables ? NotFoundError : tables.has(o.table) ? AlreadyExistsError : null
          else expected = !tables ? NotFoundError : o.kind === 'drop-db' && tables.size > 0 ? RefusedError : null
          const done = o.kind === 'create-db' ? wh.createDatabase(o.db) : o.kind === 'create-table' ? wh.createTable(`${o.db}.${o.table}`, SCHEMA) : wh.dropDatabase(o.db, { cascade: o.kind === 'drop-db-cascade' })
          if (expected) await expect(done).rejects.toThrow(expected)
          else await done
          if (expected) continue
          if (o.kind === 'create-db') model.set(o.db, new Set())
          else if (o.kind === 'create-table') tables!.add(o.table)
          else model.delete(o.db)
        }
        expect(await wh.listDatabases()).toEqual([...model.keys()].sort())
        for (const [name, tables] of model) expect((await wh.listTables(name)).map((t) => t.table)).toEqual([...tables].sort())
      }),
      { numRuns: 15 },
    )
  })
})

describe('refusals', () => {
  it('a memory:// warehouse, a malformed location, a bad name', async () => {
    await expect(openWarehouse('memory://wh')).rejects.toThrow(/warehouse "memory:\/\/wh": a memory:\/\/ store cannot hold a warehouse/)
    await expect(openTable({ warehouse: '/tmp/x' } as never)).rejects.toThrow(/table location \{"warehouse":"\/tmp\/x"\}: expected a table URI string or \{ warehouse, name/)
    await expect(openTable({ warehouse: '/tmp/x', name: 'nodot' })).rejects.toThrow(StrataInputError)
    await expect(openWarehouse('')).rejects.toThrow(/warehouse "": expected a warehouse URI/)
  })

  it('docs/api.md names every public member of Warehouse', () => {
    const doc = readFileSync(join(import.meta.dirname, '..', 'docs', 'api.md'), 'utf8')
    const source = readFileSync(join(import.meta.dirname, '..', 'lib', 'api', 'warehouse.ts'), 'utf8')
    const members = [...source.matchAll(/^ {2}(?:async )?(\w+)\(/gm)].map((m) => m[1]).filter((m) => m !== 'constructor')
    expect(members).toContain('listDatabases')
    expect(members.filter((m) => !doc.includes(`\`${m}(`))).toEqual([])
  })
})

describe('the CLI with a warehouse', () => {
  let dir = ''
  let wh = ''
  let schemaFile = ''
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'strata-warehouse-cli-'))
    wh = join(dir, 'wh')
    schemaFile = join(dir, 'schema.json')
    writeFileSync(schemaFile, JSON.stringify(SCHEMA))
    vi.stubEnv('STRATA_WAREHOUSE', undefined)
  })
  afterAll(() => {
    vi.unstubAllEnvs()
    rmSync(dir, { recursive: true, force: true })
  })

  it('creates databases and tables, lists them, and works on a table by <database>.<table>', async () => {
    expect(await strata(['create', 'sales.orders', '--schema', schemaFile, '--warehouse', wh])).toMatchObject({ code: 3, stderr: `strata: database "sales": no such database in warehouse ${wh} (databases: none); create it with 'strata database create sales'\n` })
    expect(await strata(['database', 'create', 'sales', '--warehouse', wh])).toEqual({ code: 0, stdout: `created database "sales" in ${wh}\n`, stderr: '' })
    expect((await strata(['--warehouse', wh, 'database', 'create', 'sales', '--ignore-if-exists'])).stdout).toBe(`database "sales" exists already in ${wh}\n`)
    expect((await strata(['database', 'create', 'sales', '--warehouse', wh])).code).toBe(2)
    expect((await strata(['create', 'sales.orders', '--schema', schemaFile, '--warehouse', wh])).code).toBe(0)
    const rows = join(dir, 'rows.jsonl')
    writeFileSync(rows, '{"id":1,"v":"a"}\n{"id":2,"v":"b"}\n')
    expect(await strata(['write', 'sales.orders', rows, '--warehouse', wh])).toMatchObject({ code: 0, stdout: '1\n' })
    vi.stubEnv('STRATA_WAREHOUSE', wh)
    try {
      expect((await strata(['read', 'sales.orders', '--json'])).stdout).toBe('{"id":1,"v":"a"}\n{"id":2,"v":"b"}\n')
      expect((await strata(['lookup', 'sales.orders', '--key', '{"id":2}', '--json'])).stdout).toBe('{"id":2,"v":"b"}\n')
      expect((await strata(['database', 'list'])).stdout).toBe('sales\n')
      expect((await strata(['database', 'list', '--json'])).stdout).toBe('{"database":"sales"}\n')
      expect((await strata(['table', 'list'])).stdout).toBe(`table\turi\nsales.orders\t${wh}/sales.db/orders\n`)
      expect((await strata(['table', 'list', 'sales', '--json'])).stdout).toBe(JSON.stringify({ database: 'sales', table: 'orders', name: 'sales.orders', uri: `${wh}/sales.db/orders` }) + '\n')
      // a path is a path, warehouse or not
      expect((await strata(['read', join(wh, 'sales.db', 'orders'), '--json'])).stdout).toBe('{"id":1,"v":"a"}\n{"id":2,"v":"b"}\n')
      // the flag wins over the environment
      expect(await strata(['read', 'sales.orders', '--warehouse', join(dir, 'other')])).toMatchObject({ code: 3 })
    } finally {
      vi.stubEnv('STRATA_WAREHOUSE', undefined)
    }
    // a hint names the table as the command was given it, so the command it suggests finds it
    const dv = join(dir, 'dv.json')
    writeFileSync(dv, JSON.stringify({ ...SCHEMA, options: { bucket: '1', 'deletion-vectors.enabled': 'true' } }))
    expect((await strata(['create', 'sales.dv', '--schema', dv, '--warehouse', wh])).code).toBe(0)
    expect((await strata(['write', 'sales.dv', rows, '--warehouse', wh])).code).toBe(0)
    expect((await strata(['read', 'sales.dv', '--warehouse', wh])).stderr).toContain(`run 'strata compact --warehouse ${wh} sales.dv' to make them visible`)
    expect(await strata(['database', 'drop', 'sales', '--warehouse', wh])).toMatchObject({ code: 7, stderr: `strata: database "sales" in warehouse ${wh} is not empty (tables: dv, orders); set cascade to drop its tables with it ('strata database drop --cascade')\n` })
    expect(await strata(['database', 'drop', 'sales', '--cascade', '--warehouse', wh])).toEqual({ code: 0, stdout: 'dropped database "sales" and its 2 table(s): dv, orders\n', stderr: '' })
    expect((await strata(['database', 'drop', 'sales', '--ignore-if-not-exists', '--warehouse', wh])).stdout).toBe(`no database "sales" in ${wh}; nothing dropped\n`)
  })

  it('errors name the flag, the variable and the rule', async () => {
    expect(await strata(['database', 'list'])).toEqual({ code: 2, stdout: '', stderr: "strata: database list: no warehouse; expected --warehouse <uri> (a path, 'file:///abs/path' or 's3://bucket[/prefix]') or STRATA_WAREHOUSE\n" })
    expect((await strata(['table', 'list'])).stderr).toMatch(/^strata: table list: no warehouse; expected --warehouse <uri>/)
    expect(await strata(['database', 'list', '--warehouse', ''])).toMatchObject({ code: 2, stderr: `strata: --warehouse "": expected a warehouse URI (a path, 'file:///abs/path' or 's3://bucket[/prefix]')\n` })
    expect(await strata(['database', 'create', 'a.b', '--warehouse', wh])).toMatchObject({ code: 2, stderr: `strata: database name "a.b": holds '.'; expected a name without '.' (a table is named <database>.<table>, split at the first '.')\n` })
    expect((await strata(['read', 'db.t$x', '--warehouse', wh])).stderr).toMatch(/^strata: table name "db\.t\$x": table "t\$x": holds '\$'/)
    // without a warehouse a name is a path, and the error says how to name a table in one
    const r = await strata(['read', 'sales.orders'])
    expect(r.code).toBe(3)
    expect(r.stderr).toMatch(/no table at .*sales\.orders .*; to name <database>\.<table> in a Paimon warehouse, give --warehouse <uri> or set STRATA_WAREHOUSE\n$/)
    expect((await strata(['--help'])).stdout).toMatch(/--warehouse <uri> .*default\s+\$STRATA_WAREHOUSE/s)
    expect((await strata(['read', '--help'])).stdout).toMatch(/Global Options:\s+--warehouse <uri>/)
  })
})
