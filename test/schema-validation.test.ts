// Schemas that would make a table unusable or unsafe: refused by `Table.create` with a
// StrataInputError naming the option or field, the value and what was expected; and stored
// schemas (written by another tool) that hold such values, which still open for reading
// where that is safe (docs/operations.md "Table options", docs/format.md "Schema files").

import * as zlib from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { MAX_BUCKETS, MAX_LEVELS, coreOptions } from '../lib/table/options.ts'
import { parseSchema } from '../lib/table/schema.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { withZstd } from './helpers/zstd.ts'

const FIELDS = [
  { name: 'dt', type: 'STRING' },
  { name: 'id', type: 'INT' },
  { name: 'v', type: 'STRING' },
]

function schemaWith(options: Record<string, string>, fields = FIELDS) {
  return { fields, primaryKeys: ['dt', 'id'], partitionKeys: ['dt'], options }
}

async function refusal(input: unknown): Promise<string> {
  const store = new MemoryStore()
  const err = await Table.create(store, input).then(
    () => null,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(StrataInputError)
  expect(await store.list('')).toEqual([]) // nothing stored
  return (err as Error).message
}

async function writeAndRead(table: Table, rows: Record<string, unknown>[]) {
  await writeBatch(table, rows.map((r, i) => recordFromJson(table.view, r, `row ${i}`)))
  return readAll(table)
}

/** A table whose stored schema-0 is `mutate`d raw JSON of a valid one, as another tool might write it. */
async function storedTable(mutate: (raw: Record<string, any>) => void): Promise<MemoryStore> {
  const store = new MemoryStore()
  await Table.create(store, schemaWith({}))
  const raw = JSON.parse(new TextDecoder().decode((await store.get('schema/schema-0'))!))
  mutate(raw)
  await store.put('schema/schema-0', new TextEncoder().encode(JSON.stringify(raw, null, 2)))
  return store
}

describe('options refused at create', () => {
  it.each([
    ['../evil-', /^option 'data-file\.prefix': invalid value "\.\.\/evil-", expected .*letters, digits/],
    ['a/b-', /^option 'data-file\.prefix': invalid value "a\/b-"/],
    ['a\\b-', /^option 'data-file\.prefix'/],
    ['.hidden-', /^option 'data-file\.prefix'/],
    ['.tmp-', /^option 'data-file\.prefix'/],
    ['da ta-', /^option 'data-file\.prefix'/],
    ['x'.repeat(65), /^option 'data-file\.prefix'.*at most 64/],
  ])('data-file.prefix %j', async (prefix, message) => {
    expect(await refusal(schemaWith({ 'data-file.prefix': prefix }))).toMatch(message)
  })

  it('safe data-file prefixes are used for every data file, written and compacted', async () => {
    for (const prefix of ['part_A.v2-', '', 'x'.repeat(64)]) {
      const table = await Table.create(new MemoryStore(), schemaWith({ 'data-file.prefix': prefix }))
      expect(await writeAndRead(table, [{ dt: 'd', id: 1, v: 'a' }])).toHaveLength(1)
      const files = (await table.store.list('dt=d/bucket-0/')).map((o) => o.key.slice('dt=d/bucket-0/'.length))
      expect(files.length).toBe(1)
      expect(files[0].startsWith(prefix)).toBe(true)
      expect(files[0].slice(prefix.length)).toMatch(/^[0-9a-f-]{36}-0\.parquet$/)
    }
  })

  it(`bucket: 1..${MAX_BUCKETS}`, async () => {
    expect(MAX_BUCKETS).toBe(32768)
    expect(await refusal(schemaWith({ bucket: '2147483647' }))).toMatch(/^option 'bucket': invalid value "2147483647", expected an integer in 1\.\.32768/)
    expect(await refusal(schemaWith({ bucket: String(MAX_BUCKETS + 1) }))).toMatch(/^option 'bucket'/)
    const table = await Table.create(new MemoryStore(), schemaWith({ bucket: String(MAX_BUCKETS) }))
    expect(await writeAndRead(table, [{ dt: 'd', id: 1, v: 'a' }, { dt: 'd', id: 2, v: 'b' }])).toHaveLength(2)
  })

  it('snapshot.num-retained.max below snapshot.num-retained.min', async () => {
    expect(await refusal(schemaWith({ 'snapshot.num-retained.min': '5', 'snapshot.num-retained.max': '2' }))).toMatch(
      /^option 'snapshot\.num-retained\.max': invalid value "2", expected an integer >= snapshot\.num-retained\.min \(5\)/,
    )
    // against the default min (10)
    expect(await refusal(schemaWith({ 'snapshot.num-retained.max': '3' }))).toMatch(/expected an integer >= snapshot\.num-retained\.min \(10\)/)
    await Table.create(new MemoryStore(), schemaWith({ 'snapshot.num-retained.min': '4', 'snapshot.num-retained.max': '4' }))
  })

  it('num-sorted-run.stop-trigger below num-sorted-run.compaction-trigger', async () => {
    expect(await refusal(schemaWith({ 'num-sorted-run.compaction-trigger': '5', 'num-sorted-run.stop-trigger': '2' }))).toMatch(
      /^option 'num-sorted-run\.stop-trigger': invalid value "2", expected an integer >= num-sorted-run\.compaction-trigger \(5\)/,
    )
    // the default compaction trigger is 5
    expect(await refusal(schemaWith({ 'num-sorted-run.stop-trigger': '4' }))).toMatch(/compaction-trigger \(5\)/)
    const equal = await Table.create(new MemoryStore(), schemaWith({ 'num-sorted-run.compaction-trigger': '3', 'num-sorted-run.stop-trigger': '3' }))
    expect(equal.view.options.stopTrigger).toBe(3)
  })

  it(`num-levels and the compaction trigger it defaults from stay within ${MAX_LEVELS} levels`, async () => {
    expect(await refusal(schemaWith({ 'num-levels': '100000000' }))).toMatch(/^option 'num-levels': invalid value "100000000", expected an integer in 2\.\.100/)
    expect(await refusal(schemaWith({ 'num-sorted-run.compaction-trigger': '2147483647' }))).toMatch(/^option 'num-sorted-run\.compaction-trigger': invalid value "2147483647", expected an integer in 1\.\.99/)
    const t = await Table.create(new MemoryStore(), schemaWith({ 'num-sorted-run.compaction-trigger': '99' }))
    expect(t.view.options.numLevels).toBe(MAX_LEVELS)
  })

  it('write.max-row-size must leave room for the smallest row of the schema (8 bytes a field)', async () => {
    expect(await refusal(schemaWith({ 'write.max-row-size': '1' }))).toMatch(/^option 'write\.max-row-size': invalid value "1", expected at least 24 bytes \(8 per field of this schema\)/)
    const table = await Table.create(new MemoryStore(), schemaWith({ 'write.max-row-size': '24' }))
    expect(await writeAndRead(table, [{ dt: '', id: 1, v: null }])).toHaveLength(1)
  })

  it('partition key names leave room for a value in a 255-byte directory name and a 512-byte path', async () => {
    const long = 'k'.repeat(254)
    const fields = [{ name: long, type: 'STRING' }, ...FIELDS.slice(1)]
    expect(await refusal({ fields, primaryKeys: [long, 'id'], partitionKeys: [long] })).toMatch(/^schema\.partitionKeys: partition key 'k{37}\.\.\.' is 254 bytes escaped; expected at most 253/)
    // escaping counts: '/' is 3 bytes in a directory name
    const slashes = '/'.repeat(90)
    expect(await refusal({ fields: [{ name: slashes, type: 'STRING' }, ...FIELDS.slice(1)], primaryKeys: [slashes, 'id'], partitionKeys: [slashes] })).toMatch(/is 270 bytes escaped/)
    const names = ['a', 'b', 'c'].map((c) => c.repeat(200))
    const three = { fields: [...names.map((name) => ({ name, type: 'INT' })), { name: 'id', type: 'INT' }], primaryKeys: [...names, 'id'], partitionKeys: names }
    expect(await refusal(three)).toMatch(/^schema\.partitionKeys: the partition key names take 609 bytes of a partition path; expected at most 512/)
    expect(await refusal(schemaWith({ 'partition.default-name': 'd'.repeat(253) }))).toMatch(/^option 'partition\.default-name': invalid value of 253 bytes escaped, expected at most 252/)
    const ok = 'k'.repeat(253)
    const table = await Table.create(new MemoryStore(), { fields: [{ name: ok, type: 'INT' }, ...FIELDS.slice(1)], primaryKeys: [ok, 'id'], partitionKeys: [ok] })
    expect(await writeAndRead(table, [{ [ok]: 1, id: 1, v: 'a' }])).toHaveLength(1)
  })

  it('a zstd table made where the encoder exists (Lambda runs Node 22) refuses a write on a Node without one, naming the option, nothing committed', async () => {
    const writable = typeof (zlib as { zstdCompressSync?: unknown }).zstdCompressSync === 'function'
    for (const option of ['file.compression', 'manifest.compression']) {
      // created as on Node 22 (create itself refuses zstd where this Node cannot write it: test/option-runtime.test.ts)
      const table = await Table.create(new MemoryStore(), schemaWith({ [option]: 'zstd' }), { zstdAvailable: true })
      const result = await writeAndRead(table, [{ dt: 'd', id: 1, v: 'a' }]).catch((e: unknown) => e)
      if (writable) expect(result).toHaveLength(1)
      else {
        expect(result).toBeInstanceOf(StrataInputError)
        expect((result as Error).message).toMatch(new RegExp(`^${option.replace('.', '\\.')}:? .*zstd`))
        expect(await table.snapshots.latestId()).toBe(0)
      }
    }
  })

  it("file.compression.zstd-level reaches the page compressor of writes and compactions (default 1, Paimon's); a new table is held to <= 22", async () => {
    for (const [options, level] of [[{}, 1], [{ 'file.compression.zstd-level': '3' }, 3]] as const) {
      await withZstd(async (calls) => {
        const table = await Table.create(new MemoryStore(), schemaWith({ 'file.compression': 'zstd', ...options }))
        await writeAndRead(table, [{ dt: 'd', id: 1, v: 'a' }])
        await writeAndRead(table, [{ dt: 'd', id: 2, v: 'b' }])
        const written = calls.length
        expect(written).toBeGreaterThan(0)
        const partition = (await table.manifests.liveEntries((await table.snapshots.latest())!))[0].partition
        expect((await compactBucket(table, { partition, bucket: 0, full: true })).outputFiles).toBe(1)
        expect(calls.length).toBeGreaterThan(written)
        expect(calls.map((c) => c.params?.[100])).toEqual(calls.map(() => level))
        expect(await readAll(table)).toHaveLength(2)
      })
    }
    expect(await refusal(schemaWith({ 'file.compression.zstd-level': '23' }))).toMatch(/^option 'file\.compression\.zstd-level': invalid value "23", expected an integer <= 22/)
  })

  it('partition.default-name must not be empty (a blank partition value could name no directory)', async () => {
    expect(await refusal(schemaWith({ 'partition.default-name': '' }))).toMatch(/^option 'partition\.default-name': invalid value "", expected a non-empty string/)
  })

  it('options that are not an object are named as the schema\'s (a fuzz run found `false` reported as a bare "options:")', async () => {
    for (const options of [false, 0, 'x', []]) {
      expect(await refusal({ ...schemaWith({}), options })).toBe(`schema.options: expected an object of string values, got ${JSON.stringify(options)}`)
    }
  })
})

describe('field names refused at create', () => {
  it.each([
    ['_kind', /schema\.fields\[2\]\.name: '_kind' is a key of Strata's JSON lines \(the row kind\)/],
    ['_table', /schema\.fields\[2\]\.name: '_table' is a key of Strata's JSON lines \(the writer's table name\)/],
    ['_KEY_v', /schema\.fields\[2\]\.name: '_KEY_v' is a Paimon system field name/],
    ['_SEQUENCE_NUMBER', /Paimon system field name/],
    ['_VALUE_KIND', /Paimon system field name/],
    ['_LEVEL', /Paimon system field name/],
    ['rowkind', /Paimon system field name/],
    ['_ROW_ID', /Paimon system field name/],
    ['a\ud800', /schema\.fields\[2\]\.name: "a\\ud800" is not well-formed Unicode \(a lone surrogate\)/],
  ])('%j', async (name, message) => {
    const fields = [...FIELDS.slice(0, 2), { name, type: 'STRING' }]
    expect(await refusal(schemaWith({}, fields))).toMatch(message)
  })

  it('names that merely resemble reserved ones are fields like any other', async () => {
    const fields = [...FIELDS, { name: '_KIND', type: 'INT' }, { name: 'kind', type: 'INT' }, { name: '_key_x', type: 'INT' }]
    const table = await Table.create(new MemoryStore(), schemaWith({}, fields))
    const [row] = await writeAndRead(table, [{ dt: 'd', id: 1, v: 'a', _KIND: 1, kind: 2, _key_x: 3, _kind: '+I' }])
    expect(row).toEqual(['d', 1, 'a', 1, 2, 3])
  })
})

describe('stored schemas written by another tool', () => {
  it('an unsafe data-file.prefix: the table opens and reads; writes are refused naming the option, nothing written', async () => {
    const store = await storedTable((raw) => (raw.options['data-file.prefix'] = '../evil-'))
    const table = await Table.open(store)
    expect(await readAll(table)).toEqual([])
    const before = (await store.list('')).map((o) => o.key)
    const err = await writeAndRead(table, [{ dt: 'd', id: 1, v: 'a' }]).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StrataInputError)
    expect((err as Error).message).toMatch(/^option 'data-file\.prefix': the stored value "\.\.\/evil-" is not a safe file-name prefix .*; this table can be read but Strata does not write to it/)
    expect((await store.list('')).map((o) => o.key)).toEqual(before)
  })

  it('a bucket count over the maximum (valid in the format) opens, writes and reads', async () => {
    const store = await storedTable((raw) => (raw.options.bucket = '2147483647'))
    const table = await Table.open(store)
    expect(await writeAndRead(table, [{ dt: 'd', id: 1, v: 'a' }])).toEqual([['d', 1, 'a']])
  })

  it('retained max below min and stop-trigger below the compaction trigger are read as Paimon reads them', async () => {
    const store = await storedTable((raw) => {
      raw.options['snapshot.num-retained.min'] = '5'
      raw.options['snapshot.num-retained.max'] = '2'
      raw.options['num-sorted-run.compaction-trigger'] = '6'
      raw.options['num-sorted-run.stop-trigger'] = '1'
    })
    const table = await Table.open(store)
    // Paimon clamps the stop trigger to the compaction trigger; expiration keeps at least min
    expect(table.view.options.stopTrigger).toBe(6)
    expect(table.view.options.snapshotNumRetainedMax).toBe(5)
    expect(await writeAndRead(table, [{ dt: 'd', id: 1, v: 'a' }])).toHaveLength(1)
  })

  it('num-levels over the maximum: reads work; what needs the levels is refused naming the option', async () => {
    const store = await storedTable((raw) => (raw.options['num-levels'] = '100000000'))
    const table = await Table.open(store)
    expect(await writeAndRead(table, [{ dt: 'd', id: 1, v: 'a' }])).toHaveLength(1)
    expect(() => table.view.options.numLevels).toThrow(/^option 'num-levels': the stored value "100000000" is over Strata's maximum of 100 levels/)
  })

  it('a field named _kind opens and reads; a JSON line cannot give it a value of its own', async () => {
    const store = await storedTable((raw) => {
      raw.fields.push({ id: 3, name: '_kind', type: 'STRING' })
      raw.highestFieldId = 3
    })
    const table = await Table.open(store)
    expect(await writeAndRead(table, [{ dt: 'd', id: 1, v: 'a' }])).toEqual([['d', 1, 'a', null]])
    expect(() => recordFromJson(table.view, { dt: 'd', id: 2, v: 'b', _kind: 'mine' }, 'row 0')).toThrow(StrataInputError)
  })

  it.each([
    ['not JSON', '{"fields":', /^mem:\/\/x\/schema\/schema-0: not valid JSON/],
    ['not an object', '[1]', /^mem:\/\/x\/schema\/schema-0: expected a JSON object/],
    ['fields missing', '{"id":0}', /^mem:\/\/x\/schema\/schema-0: 'fields': expected a non-empty array/],
    ['a field that is not an object', '{"fields":[null]}', /'fields\[0\]': expected an object/],
    ['a field without an id', '{"fields":[{"name":"a","type":"INT"}]}', /'fields\[0\]\.id': expected an integer in 0\.\./],
    ['a field id in Paimon\'s system range', '{"fields":[{"id":1073741823,"name":"a","type":"INT"}]}', /'fields\[0\]\.id': expected an integer in 0\.\.1073741822/],
    ['a field name that is not a string', '{"fields":[{"id":0,"name":5,"type":"INT"}]}', /'fields\[0\]\.name': expected a non-empty string, got 5/],
    ['a nested type without its element', '{"fields":[{"id":0,"name":"a","type":{"type":"ARRAY"}}]}', /'fields\[0\]\.type' \(field 'a'\): a ARRAY type needs 'element'/],
    ['a nested primary key', '{"fields":[{"id":0,"name":"a","type":{"type":"ARRAY","element":"INT"}},{"id":1,"name":"b","type":"INT"}],"primaryKeys":["a"]}', /'primaryKeys': primary key field 'a' has type ARRAY<INT>; as in Paimon, a primary key field must not be ARRAY, MAP, MULTISET or ROW/],
    ['a system field name', '{"fields":[{"id":0,"name":"_SEQUENCE_NUMBER","type":"BIGINT"}]}', /'fields\[0\]\.name': '_SEQUENCE_NUMBER' is a Paimon system field name/],
    ['duplicate names', '{"fields":[{"id":0,"name":"a","type":"INT"},{"id":1,"name":"a","type":"INT"}]}', /'fields\[1\]\.name': field 'a' is defined twice/],
    ['duplicate ids', '{"fields":[{"id":0,"name":"a","type":"INT"},{"id":0,"name":"b","type":"INT"}]}', /'fields\[1\]\.id': id 0 is used twice/],
    ['no primary key', '{"fields":[{"id":0,"name":"a","type":"INT"}],"primaryKeys":[]}', /'primaryKeys': Strata reads primary-key tables only/],
    ['a primary key that is no field', '{"fields":[{"id":0,"name":"a","type":"INT"}],"primaryKeys":["b"]}', /'primaryKeys': "b" is not a field/],
    ['a partition key outside the primary key', '{"fields":[{"id":0,"name":"a","type":"INT"},{"id":1,"name":"b","type":"INT"}],"primaryKeys":["a"],"partitionKeys":["b"]}', /'partitionKeys': partition key 'b' is not part of the primary key/],
    ['an option that is not a string', '{"fields":[{"id":0,"name":"a","type":"INT"}],"primaryKeys":["a"],"options":{"bucket":4}}', /'options': option 'bucket' must be a string, got 4/],
    ['an option below the minimum the code relies on', '{"fields":[{"id":0,"name":"a","type":"INT"}],"primaryKeys":["a"],"options":{"io.max-concurrent-requests":"0"}}', /option 'io\.max-concurrent-requests': invalid value "0", expected an integer >= 1/],
    ['an ill-typed option', '{"fields":[{"id":0,"name":"a","type":"INT"}],"primaryKeys":["a"],"options":{"bucket":"four"}}', /option 'bucket': invalid value "four", expected an integer/],
  ])('refused at open with the file and the field named: %s', (_, text, message) => {
    const err = (() => {
      try {
        parseSchema(text, 'mem://x/schema/schema-0')
      } catch (e) {
        return e
      }
    })()
    expect(err).toBeInstanceOf(StrataInputError)
    expect((err as Error).message).toMatch(message)
  })

  // Paimon honours these on write and Strata cannot: writing would leave the table wrong for
  // Paimon (a streaming consumer missing changelog, keys in the wrong bucket mode, files in a
  // format or codec the table does not declare), so writes and compactions are refused at
  // open, not only at create; reads go on
  it.each([
    ['changelog-producer full-compaction', (o: Record<string, string>) => (o['changelog-producer'] = 'full-compaction'), /option 'changelog-producer' is "full-compaction"; Strata writes only "none" or "input" or "lookup" \(Strata does not produce the full-compaction changelog\)/],
    // dynamic bucket mode is written (test/dynamic-bucket.test.ts), except what Paimon refuses in it
    ['no bucket option (Paimon: dynamic bucket mode) with a bucket-key', (o: Record<string, string>) => { delete o.bucket; o['bucket-key'] = 'id' }, /option 'bucket-key' is "id" with dynamic bucket mode \(bucket -1\)/],
    ['bucket -1 with dynamic-bucket.max-buckets 0', (o: Record<string, string>) => { o.bucket = '-1'; o['dynamic-bucket.max-buckets'] = '0' }, /option 'dynamic-bucket.max-buckets' is "0"; expected -1 \(no limit\) or at least 1/],
    ['bucket -2 with an input changelog', (o: Record<string, string>) => Object.assign(o, { bucket: '-2', 'changelog-producer': 'input' }), /option 'changelog-producer' is "input" with 'bucket' -2 \(postpone bucket mode\)/],
    ['file.format orc', (o: Record<string, string>) => (o['file.format'] = 'orc'), /option 'file\.format' is "orc"; Strata writes only "parquet"/],
    ['file.compression lz4', (o: Record<string, string>) => (o['file.compression'] = 'lz4'), /option 'file\.compression' is "lz4"/],
  ])('a stored %s: the table opens and reads; writes and compactions are refused naming the option, nothing written', async (_, mutate, message) => {
    const store = new MemoryStore()
    const created = await Table.create(store, schemaWith({ bucket: '1' }))
    await writeAndRead(created, [{ dt: 'd', id: 1, v: 'a' }])
    const raw = JSON.parse(new TextDecoder().decode((await store.get('schema/schema-0'))!))
    mutate(raw.options)
    await store.put('schema/schema-0', new TextEncoder().encode(JSON.stringify(raw, null, 2)))
    const table = await Table.open(store)
    expect(await readAll(table)).toEqual([['d', 1, 'a']])
    const before = (await store.list('')).map((o) => o.key)
    const write = await writeAndRead(table, [{ dt: 'd', id: 2, v: 'b' }]).catch((e: unknown) => e)
    expect(write).toBeInstanceOf(StrataInputError)
    expect((write as Error).message).toMatch(/^write refused: table .* can be read but not written by Strata: /)
    expect((write as Error).message).toMatch(message)
    const partition = (await table.manifests.liveEntries((await table.snapshots.latest())!))[0].partition
    const compact = await compactBucket(table, { partition, bucket: 0, full: true }).catch((e: unknown) => e)
    expect(compact).toBeInstanceOf(StrataInputError)
    expect((compact as Error).message).toMatch(message)
    expect((await store.list('')).map((o) => o.key)).toEqual(before)
  })

  it('a table created without a bucket option stores bucket 1, so Paimon reads the bucket count it is written with', async () => {
    const store = new MemoryStore()
    await Table.create(store, schemaWith({}))
    const raw = JSON.parse(new TextDecoder().decode((await store.get('schema/schema-0'))!))
    expect(raw.options).toEqual({ bucket: '1' })
  })

  it("options other tools write (Paimon's dynamic bucket, unknown keys) do not stop a table from opening", () => {
    const s = parseSchema('{"id":0,"fields":[{"id":0,"name":"a","type":"INT NOT NULL"}],"primaryKeys":["a"],"options":{"bucket":"-1","sink.parallelism":"4"}}', 'x')
    expect(coreOptions(s.options).bucket).toBe(-1)
  })
})
