// `strata alter` and lib/handle/alter.ts: the schema files an alter writes (Paimon's
// versioning: schema-N+1, field ids from highestFieldId, options following a rename), the
// race of two alters for one id, and every refusal: each names the change, the column, the
// value and what was expected, and writes nothing.

import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { type SchemaChange, alterTable, applySchemaChanges } from '../lib/handle/alter.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { formatDataType } from '../lib/format/data-type.ts'
import { StrataInputError } from '../lib/errors.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { strata } from './helpers/cli-in-process.ts'

const SCHEMA = {
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'BIGINT' },
    { name: 'qty', type: 'INT' },
    { name: 'price', type: 'DECIMAL(10, 2)' },
    { name: 'ratio', type: 'DOUBLE' },
    { name: 'name', type: 'VARCHAR(10)' },
    { name: 'ts', type: 'TIMESTAMP(3)' },
    { name: 'req', type: 'INT NOT NULL' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  options: { bucket: '2' },
}

async function fresh(schema: unknown = SCHEMA): Promise<{ store: MemoryStore; table: Table }> {
  const store = new MemoryStore()
  const table = await Table.create(store, schema)
  await writeBatch(table, [{ ...recordFromJson(table.view, { dt: 'x', id: 1, qty: 2, price: '1.25', ratio: 0.5, name: 'n', ts: '2024-01-01 00:00:00.123', req: 1 }, 'r'), where: 'r' }])
  return { store, table }
}

const schemaFiles = async (store: MemoryStore) => (await store.list('schema/')).map((o) => o.key).sort()

describe('alter: the schema files', () => {
  it('each alter is schema-N+1 with Paimon fields: new ids from highestFieldId, positions, comments, the table comment', async () => {
    const { store, table } = await fresh()
    const t1 = await alterTable(table, [
      { kind: 'add-column', name: 'note', type: 'STRING', comment: 'free text', position: { after: 'id' } },
      { kind: 'add-column', name: 'first', type: 'INT', position: { first: true } },
      { kind: 'update-column-comment', name: 'qty', comment: 'units' },
      { kind: 'update-comment', comment: 'orders' },
    ])
    expect(await schemaFiles(store)).toEqual(['schema/schema-0', 'schema/schema-1'])
    const stored = JSON.parse(new TextDecoder().decode((await store.get('schema/schema-1'))!))
    expect(Object.keys(stored)).toEqual(['version', 'id', 'fields', 'highestFieldId', 'partitionKeys', 'primaryKeys', 'options', 'comment', 'timeMillis'])
    expect(stored.id).toBe(1)
    expect(stored.highestFieldId).toBe(9)
    expect(stored.fields.slice(0, 4)).toEqual([
      { id: 9, name: 'first', type: 'INT' },
      { id: 0, name: 'dt', type: 'STRING NOT NULL' },
      { id: 1, name: 'id', type: 'BIGINT NOT NULL' },
      { id: 8, name: 'note', type: 'STRING', description: 'free text' },
    ])
    expect(stored.fields[4]).toEqual({ id: 2, name: 'qty', type: 'INT', description: 'units' })
    expect(stored.comment).toBe('orders')
    expect(t1.schema.id).toBe(1)
    // widenings Paimon's implicit casts allow without loss, and nullability NOT NULL → nullable
    const t2 = await alterTable(t1, [
      { kind: 'update-column-type', name: 'qty', type: 'DECIMAL(10, 0)' },
      { kind: 'update-column-type', name: 'price', type: 'DECIMAL(12, 3)' },
      { kind: 'update-column-type', name: 'name', type: 'STRING' },
      { kind: 'update-column-type', name: 'ts', type: 'TIMESTAMP(6)' },
      { kind: 'update-column-nullability', name: 'req', nullable: true },
      { kind: 'update-column-type', name: 'ratio', type: 'DOUBLE' },
    ])
    expect(t2.schema.fields.filter((f) => ['qty', 'price', 'name', 'ts', 'req'].includes(f.name)).map((f) => [f.name, f.type])).toEqual([
      ['qty', { root: 'DECIMAL', nullable: true, precision: 10, scale: 0 }],
      ['price', { root: 'DECIMAL', nullable: true, precision: 12, scale: 3 }],
      ['name', { root: 'VARCHAR', nullable: true, length: 2147483647 }],
      ['ts', { root: 'TIMESTAMP', nullable: true, precision: 6 }],
      ['req', { root: 'INT', nullable: true }],
    ])
    expect(await readAll(t2, { columns: ['qty', 'price', 'name', 'ts', 'req', 'note', 'first'] })).toEqual([[2n, 1250n, 'n', 1704067200123000n, 1, null, null]])
  })

  it("Paimon's narrowings and explicit casts (a table without 'disable-explicit-type-casting'): allowed, rows read through Paimon's cast", async () => {
    const { table } = await fresh()
    const t = await alterTable(table, [
      { kind: 'update-column-type', name: 'qty', type: 'SMALLINT' },
      { kind: 'update-column-type', name: 'price', type: 'DECIMAL(3, 1)' },
      { kind: 'update-column-type', name: 'ratio', type: 'STRING' },
      { kind: 'update-column-type', name: 'name', type: 'BYTES' },
      { kind: 'update-column-type', name: 'ts', type: 'STRING' },
      { kind: 'update-column-type', name: 'req', type: 'BOOLEAN' },
    ])
    expect(t.schema.fields.map((f) => `${f.name} ${formatDataType(f.type)}`)).toEqual(['dt STRING NOT NULL', 'id BIGINT NOT NULL', 'qty SMALLINT', 'price DECIMAL(3, 1)', 'ratio STRING', 'name BYTES', 'ts STRING', 'req BOOLEAN NOT NULL'])
    // 1.25 rounds HALF_UP to 1.3; a TIMESTAMP(3) prints with its millis; 'n' as UTF-8; 1 is true
    expect(await readAll(t, { columns: ['qty', 'price', 'ratio', 'name', 'ts', 'req'] })).toEqual([[2, 13n, '0.5', new TextEncoder().encode('n'), '2024-01-01 00:00:00.123', true]])
  })

  it('a rename follows into the primary key, bucket-key, sequence.field and fields.<name>.* options, as Paimon renames them', async () => {
    const store = new MemoryStore()
    await Table.create(store, {
      fields: [{ name: 'k1', type: 'INT' }, { name: 'k2', type: 'INT' }, { name: 'v', type: 'INT' }, { name: 'seq', type: 'BIGINT' }],
      primaryKeys: ['k1', 'k2'],
      options: { bucket: '2', 'bucket-key': 'k2', 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum', 'sequence.field': 'seq' },
    })
    let t = await alterTable(store, [{ kind: 'rename-column', name: 'k2', newName: 'key2' }])
    t = await alterTable(t, [{ kind: 'rename-column', name: 'v', newName: 'total' }, { kind: 'rename-column', name: 'seq', newName: 'version' }])
    expect(t.schema.primaryKeys).toEqual(['k1', 'key2'])
    expect(t.schema.options).toEqual({ bucket: '2', 'bucket-key': 'key2', 'merge-engine': 'aggregation', 'fields.total.aggregate-function': 'sum', 'sequence.field': 'version' })
  })

  it('two alters racing for one schema id: one takes it, the other applies its change again to the schema that won', async () => {
    const { store } = await fresh()
    await Promise.all([alterTable(store, [{ kind: 'add-column', name: 'x', type: 'INT' }]), alterTable(store, [{ kind: 'add-column', name: 'y', type: 'INT' }])])
    expect(await schemaFiles(store)).toEqual(['schema/schema-0', 'schema/schema-1', 'schema/schema-2'])
    const t = await Table.open(store)
    expect(t.schema.fields.slice(-2).map((f) => f.name).sort()).toEqual(['x', 'y'])
    expect(new Set(t.schema.fields.map((f) => f.id)).size).toBe(t.schema.fields.length)
    // the same column twice: the second finds it there and is refused
    const both = await Promise.allSettled([alterTable(store, [{ kind: 'add-column', name: 'z', type: 'INT' }]), alterTable(store, [{ kind: 'add-column', name: 'z', type: 'STRING' }])])
    expect(both.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    expect(String((both.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason)).toMatch(/alter add-column 'z': name: column 'z' already exists/)
    expect(await schemaFiles(store)).toHaveLength(4)
  })
})

describe('alter: refusals name the column, the value and what was expected, and write nothing', () => {
  const cases: [string, SchemaChange[], RegExp][] = [
    ['unknown column (rename)', [{ kind: 'rename-column', name: 'nope', newName: 'x' }], /alter rename-column 'nope': no column 'nope' \(columns: dt, id, qty/],
    ['unknown column (drop)', [{ kind: 'drop-column', name: 'nope' }], /alter drop-column 'nope': no column 'nope'/],
    ['unknown column (type)', [{ kind: 'update-column-type', name: 'nope', type: 'INT' }], /alter update-column-type 'nope': no column 'nope'/],
    ['unknown --after column', [{ kind: 'add-column', name: 'x', type: 'INT', position: { after: 'nope' } }], /alter add-column 'x': no column 'nope'/],
    ['duplicate name (add)', [{ kind: 'add-column', name: 'qty', type: 'INT' }], /alter add-column 'qty': name: column 'qty' already exists/],
    ['duplicate name (rename)', [{ kind: 'rename-column', name: 'qty', newName: 'price' }], /alter rename-column 'qty': new name: column 'price' already exists/],
    ['a reserved name', [{ kind: 'add-column', name: '_KEY_id', type: 'INT' }], /'_KEY_id' is a Paimon system field name/],
    ['a JSON-line key', [{ kind: 'rename-column', name: 'qty', newName: '_kind' }], /'_kind' is a key of Strata's JSON lines/],
    ['an added NOT NULL column', [{ kind: 'add-column', name: 'x', type: 'INT NOT NULL' }], /type "INT NOT NULL": an added column cannot be NOT NULL .*expected a nullable type/],
    ['an unknown type', [{ kind: 'add-column', name: 'x', type: 'INTEGRAL' }], /alter add-column 'x': type: type "INTEGRAL" is not supported; expected one of/],
    ['dropping a primary key field', [{ kind: 'drop-column', name: 'id' }], /alter drop-column 'id': 'id' is a primary key field; Paimon cannot drop a partition key or primary key/],
    ['dropping a partition key', [{ kind: 'drop-column', name: 'dt' }], /alter drop-column 'dt': 'dt' is a partition key field/],
    ['renaming a partition key', [{ kind: 'rename-column', name: 'dt', newName: 'day' }], /alter rename-column 'dt': 'dt' is a partition key; Paimon cannot rename a partition column/],
    ['retyping a primary key', [{ kind: 'update-column-type', name: 'id', type: 'DECIMAL(20, 0)' }], /alter update-column-type 'id': 'id' is a primary key field; Paimon cannot update a primary key's type/],
    ['retyping a partition key', [{ kind: 'update-column-type', name: 'dt', type: 'STRING' }], /'dt' is a partition key; Paimon cannot update a partition column's type/],
    // what Paimon's cast rules refuse (DataTypeCasts, or no CastExecutors rule); the message lists what Paimon allows from the type
    ['INT → DATE (no cast)', [{ kind: 'update-column-type', name: 'qty', type: 'DATE' }], /alter update-column-type 'qty': cannot change the type of 'qty' from INT to DATE: Paimon has no such cast; from INT it allows implicitly to INT, BIGINT, FLOAT, DOUBLE, DECIMAL; explicitly to BOOLEAN, TINYINT, SMALLINT, CHAR, VARCHAR\/STRING, TIMESTAMP/],
    ['TIMESTAMP → TINYINT (DataTypeCasts allows it, no executor)', [{ kind: 'update-column-type', name: 'ts', type: 'TINYINT' }], /from TIMESTAMP\(3\) to TINYINT: Paimon has no such cast; from TIMESTAMP\(3\) it allows implicitly to DATE, TIMESTAMP; explicitly to INT, BIGINT, VARCHAR\/STRING \(to a string: STRING only/],
    ['TIMESTAMP → VARCHAR(20) (only STRING has a cast)', [{ kind: 'update-column-type', name: 'ts', type: 'VARCHAR(20)' }], /from TIMESTAMP\(3\) to VARCHAR\(20\): Paimon has no such cast/],
    ['DOUBLE → TIMESTAMP (epoch seconds only from INT and BIGINT)', [{ kind: 'update-column-type', name: 'ratio', type: 'TIMESTAMP(3)' }], /from DOUBLE to TIMESTAMP\(3\): Paimon has no such cast/],
    ['DECIMAL → BOOLEAN', [{ kind: 'update-column-type', name: 'price', type: 'BOOLEAN' }], /from DECIMAL\(10, 2\) to BOOLEAN: Paimon has no such cast/],
    ['VARCHAR → DECIMAL NOT NULL keeps the refusal of NOT NULL first', [{ kind: 'update-column-type', name: 'name', type: 'DECIMAL(5, 1) NOT NULL' }], /cannot make 'name' NOT NULL/],
    ['nullable → NOT NULL', [{ kind: 'update-column-nullability', name: 'qty', nullable: false }], /alter update-column-nullability 'qty': cannot make 'qty' NOT NULL: it is nullable/],
    ['nullable → NOT NULL through a type', [{ kind: 'update-column-type', name: 'qty', type: 'BIGINT NOT NULL' }], /cannot make 'qty' NOT NULL/],
    ['a primary key made nullable', [{ kind: 'update-column-nullability', name: 'id', nullable: true }], /'id' is a primary key field, which is NOT NULL; Paimon cannot change the nullability of a primary key/],
    ['no change', [], /alter: expected at least one change/],
    // a later change fails: the earlier ones of the same call are not written either
    ['a valid change then an invalid one', [{ kind: 'add-column', name: 'ok', type: 'INT' }, { kind: 'drop-column', name: 'nope' }], /alter drop-column 'nope': no column 'nope'/],
  ]
  for (const [what, changes, message] of cases) {
    it(what, async () => {
      const { store, table } = await fresh()
      const before = await schemaFiles(store)
      const err = await alterTable(table, changes).catch((e) => e)
      expect(err).toBeInstanceOf(StrataInputError)
      expect(err.message).toMatch(message)
      expect(await schemaFiles(store)).toEqual(before)
      expect((await Table.open(store)).schema.id).toBe(0)
    })
  }

  it('a drop that leaves an option naming the column: refused naming the option', async () => {
    const { store } = await fresh({ ...SCHEMA, options: { bucket: '2', 'sequence.field': 'ts' } })
    await expect(alterTable(store, [{ kind: 'drop-column', name: 'ts' }])).rejects.toThrow(/sequence\.field.*'ts' can not be found in table schema.*nothing was written/)
    expect(await schemaFiles(store)).toEqual(['schema/schema-0'])
  })

  it('an added column that write.max-row-size leaves no room for: refused naming the option', async () => {
    const store = new MemoryStore()
    await Table.create(store, { fields: [{ name: 'k', type: 'INT' }, { name: 'v', type: 'INT' }], primaryKeys: ['k'], options: { bucket: '1', 'write.max-row-size': '16 b' } })
    await expect(alterTable(store, [{ kind: 'add-column', name: 'w', type: 'INT' }])).rejects.toThrow(/alter: option 'write.max-row-size' is "16 b", expected at least 24 bytes for the 3 fields after these changes/)
    expect(await schemaFiles(store)).toEqual(['schema/schema-0'])
  })

  it('dropping every column is impossible: the primary key stays (Paimon: cannot drop all fields)', () => {
    const s = applySchemaChanges({ version: 3, id: 0, fields: [{ id: 0, name: 'k', type: { root: 'INT', nullable: false } }, { id: 1, name: 'v', type: { root: 'INT', nullable: true } }], highestFieldId: 1, partitionKeys: [], primaryKeys: ['k'], options: { bucket: '1' }, timeMillis: 0 }, [{ kind: 'drop-column', name: 'v' }])
    expect(s.fields.map((f) => f.name)).toEqual(['k'])
    expect(() => applySchemaChanges(s, [{ kind: 'drop-column', name: 'k' }])).toThrow(/'k' is a primary key field/)
  })
})

describe('strata alter (CLI)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-alter-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('add, rename, modify, drop and comment, one schema file each; bad words refused with usage and nothing written', async () => {
    const uri = join(dir, 't')
    const schemaPath = join(dir, 's.json')
    writeFileSync(schemaPath, JSON.stringify({ fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'INT' }], primaryKeys: ['id'] }))
    expect((await strata(['create', uri, '--schema', schemaPath])).code).toBe(0)
    const input = join(dir, 'rows.jsonl')
    writeFileSync(input, '{"id":1,"v":5}\n')
    expect((await strata(['write', uri, input])).code).toBe(0)
    const ok = async (args: string[], line: string) => {
      const r = await strata(['alter', uri, ...args])
      expect(r.stderr).toBe('')
      expect(r.code).toBe(0)
      expect(r.stdout.trim()).toBe(line)
    }
    await ok(['add', 'note', 'STRING', '--after', 'id', '--comment', 'hi'], 'schema 1: id INT NOT NULL (key), note STRING, v INT')
    await ok(['modify', 'v', 'BIGINT', '--comment', 'wide'], 'schema 2: id INT NOT NULL (key), note STRING, v BIGINT')
    // a type of several words need not be quoted
    await ok(['add', 'price', 'DECIMAL(10,', '2)'], 'schema 3: id INT NOT NULL (key), note STRING, v BIGINT, price DECIMAL(10, 2)')
    await ok(['modify', 'price', 'DECIMAL(12,', '2)'], 'schema 4: id INT NOT NULL (key), note STRING, v BIGINT, price DECIMAL(12, 2)')
    await ok(['drop', 'price'], 'schema 5: id INT NOT NULL (key), note STRING, v BIGINT')
    await ok(['rename', 'v', 'amount'], 'schema 6: id INT NOT NULL (key), note STRING, amount BIGINT')
    await ok(['add', 'x', 'DOUBLE', '--first'], 'schema 7: x DOUBLE, id INT NOT NULL (key), note STRING, amount BIGINT')
    await ok(['drop', 'x'], 'schema 8: id INT NOT NULL (key), note STRING, amount BIGINT')
    await ok(['comment', 'a table'], 'schema 9: id INT NOT NULL (key), note STRING, amount BIGINT')
    const read = await strata(['read', uri, '--json'])
    expect(read.stdout.trim()).toBe('{"id":1,"note":null,"amount":5}')
    const stored = JSON.parse(readFileSync(join(uri, 'schema', 'schema-9'), 'utf8'))
    expect(stored.comment).toBe('a table')
    expect(stored.fields[2]).toEqual({ id: 1, name: 'amount', type: 'BIGINT', description: 'wide' })
    const bad: [string[], RegExp][] = [
      [['frob', 'x'], /alter: unknown change "frob"; expected one of: add <column> <type>/],
      [['add', 'x'], /alter add: expected add <column> <type> .*got 1 argument\(s\) \["x"\]/],
      [['rename', 'a', 'b', 'c'], /alter rename: expected rename <column> <new-name>, got 3 argument\(s\)/],
      [['add', 'x', 'INT', '--first', '--after', 'id'], /alter add: --first and --after "id": expected one of them/],
      [['drop', 'note', '--first'], /alter drop: --first does not apply; expected drop <column>/],
      [['modify', 'amount'], /alter modify 'amount': nothing to change/],
      [['modify', 'amount', 'DATE'], /alter update-column-type 'amount': cannot change the type of 'amount' from BIGINT to DATE: Paimon has no such cast/],
      [['modify', 'note', '--not-null'], /cannot make 'note' NOT NULL/],
      [['drop', 'id'], /'id' is a primary key field/],
    ]
    for (const [args, message] of bad) {
      const r = await strata(['alter', uri, ...args])
      expect(r.code, args.join(' ')).toBe(2)
      expect(r.stderr).toMatch(message)
    }
    expect(readdirSync(join(uri, 'schema')).sort()).toEqual(Array.from({ length: 10 }, (_, i) => `schema-${i}`).sort())
  })
})
