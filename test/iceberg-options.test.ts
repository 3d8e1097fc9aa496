// The `metadata.iceberg.*` options (docs/format.md "Iceberg metadata"): what create and alter
// refuse, each refusal naming the option and the value, and what the accepted ones write.

import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createTable, openTable, RefusedError, StrataInputError } from '../lib/api/index.ts'
import { icebergLocation, icebergOptions } from '../lib/iceberg/options.ts'

const root = mkdtempSync(join(tmpdir(), 'strata-iceberg-options-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const fresh = (db = 'db1.db') => join(root, 'wh', db, `t${n++}`)

const FIELDS = [
  { name: 'k', type: 'BIGINT NOT NULL' },
  { name: 'v', type: 'STRING' },
]
const schema = (options: Record<string, string>, fields: { name: string; type: string }[] = FIELDS, partitionKeys: string[] = []) => ({
  fields,
  primaryKeys: [...partitionKeys, 'k'],
  partitionKeys,
  options: { bucket: '1', 'metadata.iceberg.storage': 'table-location', ...options },
})

describe('metadata.iceberg.* at create', () => {
  const refused: [string, () => unknown, RegExp][] = [
    ['hive-catalog', () => schema({ 'metadata.iceberg.storage': 'hive-catalog' }), /option 'metadata.iceberg.storage': value "hive-catalog" is not supported.*Hive Metastore/],
    ['rest-catalog', () => schema({ 'metadata.iceberg.storage': 'rest-catalog' }), /option 'metadata.iceberg.storage': value "rest-catalog" is not supported.*REST catalog/],
    ['an unknown storage', () => schema({ 'metadata.iceberg.storage': 'glue' }), /option 'metadata.iceberg.storage': invalid value "glue", expected one of disabled, table-location, hadoop-catalog/],
    ['a Hive key', () => schema({ 'metadata.iceberg.uri': 'thrift://x:9083' }), /option 'metadata.iceberg.uri' \(value "thrift:\/\/x:9083"\) is not supported: only Paimon's hive-catalog and rest-catalog/],
    ['a REST key', () => schema({ 'metadata.iceberg.rest.uri': 'http://x' }), /option 'metadata.iceberg.rest.uri' \(value "http:\/\/x"\) is not supported/],
    ['format version 4', () => schema({ 'metadata.iceberg.format-version': '4' }), /option 'metadata.iceberg.format-version': invalid value "4", expected one of 2, 3/],
    ['a codec the writer lacks', () => schema({ 'metadata.iceberg.manifest-compression': 'bzip2' }), /option 'metadata.iceberg.manifest-compression': invalid value "bzip2", expected one of null, deflate, snappy, zstd, zstandard/],
    // Paimon hands the name to Avro, which knows uncompressed as 'null'
    ['a codec name Avro does not know', () => schema({ 'metadata.iceberg.manifest-compression': 'none' }), /option 'metadata.iceberg.manifest-compression': value "none" is not an Avro codec name.*expected null/],
    ['v3 with 32-bit deletion vectors', () => schema({ 'deletion-vectors.enabled': 'true', 'metadata.iceberg.format-version': '3' }), /option 'deletion-vectors.bitmap64': value 'false' with 'metadata.iceberg.format-version' = '3'.*expected true/],
    ['TIMESTAMP(0)', () => schema({}, [...FIELDS, { name: 'at', type: 'TIMESTAMP(0)' }]), /option 'metadata.iceberg.storage': field 'at': TIMESTAMP\(0\) has no Iceberg type/],
    ['a DECIMAL partition key', () => schema({}, [...FIELDS, { name: 'p', type: 'DECIMAL(5, 2) NOT NULL' }], ['p']), /partition key 'p' is DECIMAL/],
    ['max below min file-num', () => schema({ 'metadata.iceberg.compaction.min.file-num': '20', 'metadata.iceberg.compaction.max.file-num': '10' }), /option 'metadata.iceberg.compaction.max.file-num': value '10' is below 'metadata.iceberg.compaction.min.file-num' \(20\)/],
  ]
  for (const [what, make, message] of refused) {
    it(`refuses ${what}, naming the option and the value`, async () => {
      const err = await createTable(fresh(), make()).catch((e) => e)
      expect(err).toBeInstanceOf(StrataInputError)
      expect(err.message).toMatch(message)
    })
  }

  it('refuses a table outside a <db>.db directory (Paimon\'s rule)', async () => {
    const uri = fresh('plain')
    const err = await createTable(uri, schema({})).catch((e) => e)
    expect(err).toBeInstanceOf(RefusedError)
    expect(err.message).toMatch(/option 'metadata.iceberg.storage': value 'table-location' needs the table in a warehouse, at <warehouse>\/<db>.db\/<table>/)
    expect(err.message).toContain(uri)
    // nothing was created
    await expect(openTable(uri)).rejects.toThrow(/no table/)
  })

  it('accepts the supported keys and writes the table properties into the metadata', async () => {
    const uri = fresh()
    const t = await createTable(uri, schema({
      'metadata.iceberg.glue.skip-archive': 'true',
      'metadata.iceberg.database': 'sales',
      'metadata.iceberg.table': 'orders',
      'metadata.iceberg.previous-versions-max': '3',
      'metadata.iceberg.manifest-legacy-version': 'true',
      'metadata.iceberg.manifest-compression': 'deflate',
      'metadata.iceberg.table-properties.write.format.default': 'parquet',
    }))
    expect(t.handle.iceberg!.location).toMatchObject({ database: 'sales', table: 'orders', inTable: true })
    await t.write([{ k: 1, v: 'a' }])
    await t.handle.iceberg!.settle()
    const meta = JSON.parse(readFileSync(join(uri, 'metadata', 'v1.metadata.json'), 'utf8'))
    expect(meta.properties).toEqual({ 'write.format.default': 'parquet' })
  })
})

describe('metadata.iceberg.* at alter', () => {
  it('refuses an alter that makes a table Strata would not write Iceberg metadata for, and writes nothing', async () => {
    const uri = fresh()
    // format version 2 with 32-bit deletion vectors is written (the top level, as Paimon);
    // version 3 needs the 64-bit ones
    const t = await createTable(uri, schema({ 'deletion-vectors.enabled': 'true' }))
    await expect(t.alter([{ kind: 'set-option', key: 'metadata.iceberg.format-version', value: '3' }])).rejects.toThrow(/alter: option 'deletion-vectors.bitmap64': value 'false' with 'metadata.iceberg.format-version' = '3'.*nothing was written/)
    await expect(t.alter([{ kind: 'add-column', name: 'at', type: 'TIMESTAMP(1)' }])).rejects.toThrow(/field 'at': TIMESTAMP\(1\) has no Iceberg type/)
    await expect(t.alter([{ kind: 'set-option', key: 'metadata.iceberg.storage', value: 'rest-catalog' }])).rejects.toThrow(/value "rest-catalog" is not supported/)
    expect((await openTable(uri)).handle.schema.id).toBe(0)
  })

  it('refuses turning the option on for a table outside a <db>.db directory', async () => {
    const uri = fresh('plain')
    const t = await createTable(uri, schema({ 'metadata.iceberg.storage': 'disabled' }))
    await expect(t.alter([{ kind: 'set-option', key: 'metadata.iceberg.storage', value: 'hadoop-catalog' }])).rejects.toThrow(/option 'metadata.iceberg.storage': value 'hadoop-catalog' needs the table in a warehouse/)
  })
})

describe('a stored schema with Paimon\'s catalog storage', () => {
  it('is readable but not written: Strata would leave the Hive or REST catalog\'s Iceberg table behind', async () => {
    const { coreOptions } = await import('../lib/table/options.ts')
    const o = coreOptions({ bucket: '1', 'metadata.iceberg.storage': 'hive-catalog' })
    expect(o.unwritable.join('; ')).toMatch(/option 'metadata.iceberg.storage' is "hive-catalog"; Strata writes Iceberg metadata only for table-location and hadoop-catalog/)
    expect(coreOptions({ bucket: '1', 'metadata.iceberg.storage': 'table-location' }).unwritable).toEqual([])
  })
})

describe('where the metadata goes (icebergLocation)', () => {
  const at = (uri: string, storage: string) => icebergLocation(uri, icebergOptions({ 'metadata.iceberg.storage': storage }))
  it('finds the warehouse as the catalog does, for table-location and hadoop-catalog', () => {
    expect(at('s3://b/wh/sales.db/orders/', 'table-location')).toEqual({ root: 's3://b/wh/sales.db/orders', inTable: true, database: 'sales', table: 'orders' })
    expect(at('s3://b/wh/sales.db/orders', 'hadoop-catalog')).toEqual({ root: 's3://b/wh/iceberg/sales/orders', inTable: false, database: 'sales', table: 'orders' })
    expect(at('/sales.db/orders', 'hadoop-catalog')).toMatchObject({ root: '/iceberg/sales/orders' })
  })
  it('refuses a .db directory that is a bucket or a scheme, not a directory of a warehouse', () => {
    expect(at('s3://x.db/orders', 'hadoop-catalog')).toMatchObject({ refused: expect.stringMatching(/needs the table in a warehouse/) })
    expect(at('s3://b/wh/orders', 'table-location')).toMatchObject({ refused: expect.stringMatching(/not in a directory whose name ends in .db/) })
  })
})
