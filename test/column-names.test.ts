// Column names that an option list could not tell apart: options such as bucket-key and
// sequence.field list column names separated by commas (and readers trim each entry), so a
// name with ',' or with whitespace at either end would read as other columns, and a blank
// name is no name. Create, add-column and rename-column refuse them; a rename refuses to
// leave another tool's option naming the old column; nothing committed changes.

import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { parseMergeEngineConfig } from '../lib/merge/merge-config.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { type SchemaChange, alterTable, applySchemaChanges } from '../lib/handle/alter.ts'
import { createSchema, describeSchema } from '../lib/table/schema.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { TableSchema } from '../lib/types.ts'
import { strata } from './helpers/cli-in-process.ts'

const dir = mkdtempSync(join(tmpdir(), 'strata-column-names-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const schemaFiles = (uri: string) => readdirSync(join(uri, 'schema')).sort()

async function cli(args: string[]): Promise<string> {
  const r = await strata(args)
  expect(r.stderr, args.join(' ')).toBe('')
  expect(r.code, args.join(' ')).toBe(0)
  return r.stdout
}

/** The table's rows as JSON lines, sorted. */
async function rows(uri: string): Promise<string[]> {
  return (await cli(['read', uri, '--json'])).trim().split('\n').sort()
}

/** Creates a table at a fresh path from `schema`, writes `lines` and returns its uri. */
async function tableWith(name: string, schema: unknown, lines: string[]): Promise<string> {
  const uri = join(dir, name)
  const schemaPath = join(dir, `${name}.json`)
  writeFileSync(schemaPath, JSON.stringify(schema))
  await cli(['create', uri, '--schema', schemaPath])
  await write(uri, lines)
  return uri
}

async function write(uri: string, lines: string[]): Promise<void> {
  const input = join(dir, `rows-${Math.random().toString(36).slice(2)}.jsonl`)
  writeFileSync(input, lines.join('\n') + '\n')
  await cli(['write', uri, input])
}

describe('a rename to a name with a comma is refused; the options and the data stay as they were', () => {
  it("bucket-key: rename c to \"a,b\" would make the bucket key (a, b); refused, and rewriting the 8 keys still reads 8 rows", async () => {
    const keys = Array.from({ length: 8 }, (_, i) => ({ a: i % 2, b: Math.floor(i / 2) % 2, c: i }))
    const uri = await tableWith(
      'bucket-key',
      { fields: [{ name: 'a', type: 'INT' }, { name: 'b', type: 'INT' }, { name: 'c', type: 'INT' }, { name: 'v', type: 'STRING' }], primaryKeys: ['a', 'b', 'c'], options: { bucket: '4', 'bucket-key': 'c' } },
      keys.map((k) => JSON.stringify({ ...k, v: 'one' })),
    )
    const before = await rows(uri)
    const r = await strata(['alter', uri, 'rename', 'c', 'a,b'])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/alter rename-column 'c': new name "a,b": a column name may not contain ',' \(options such as bucket-key and sequence\.field list column names separated by commas\); expected a name without ','/)
    expect(schemaFiles(uri)).toEqual(['schema-0'])
    expect(await rows(uri)).toEqual(before)
    // the same keys again: each replaces its row, in the bucket it was written to
    await write(uri, keys.map((k) => JSON.stringify({ ...k, v: 'two' })))
    await cli(['compact', uri, '--full'])
    const after = await rows(uri)
    expect(after).toHaveLength(8)
    expect(after.every((l) => JSON.parse(l).v === 'two')).toBe(true)
  })

  it('sequence.field: rename s1 to "s2,v" would make the sequence (s2, v); refused, and the higher s1 still wins', async () => {
    const uri = await tableWith(
      'sequence-field',
      { fields: [{ name: 'k', type: 'INT' }, { name: 's1', type: 'BIGINT' }, { name: 's2', type: 'BIGINT' }, { name: 'v', type: 'STRING' }], primaryKeys: ['k'], options: { bucket: '1', 'sequence.field': 's1' } },
      ['{"k":1,"s1":10,"s2":1,"v":"newer"}'],
    )
    const r = await strata(['alter', uri, 'rename', 's1', 's2,v'])
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/alter rename-column 's1': new name "s2,v": a column name may not contain ','/)
    expect(schemaFiles(uri)).toEqual(['schema-0'])
    // written later with a lower s1 (and a higher s2): the row with s1 = 10 stays
    await write(uri, ['{"k":1,"s1":5,"s2":9,"v":"older"}'])
    expect(await rows(uri)).toEqual(['{"k":1,"s1":10,"s2":1,"v":"newer"}'])
  })
})

describe('names a comma-separated option list could not tell apart, and blank names, are refused', () => {
  const bad: [string, RegExp][] = [
    ['a,b', /"a,b": a column name may not contain ','.*expected a name without ','/],
    [',', /",": a column name may not contain ','/],
    ['', /"": a column name may not be blank.*expected a name with at least one character other than whitespace/],
    [' ', /" ": a column name may not be blank/],
    ['\t\n', /"\\t\\n": a column name may not be blank/],
    [' c', /" c": a column name may not start or end with whitespace or a control character.*expected "c"/],
    ['c ', /"c ": a column name may not start or end with whitespace or a control character.*expected "c"/],
    ['\u0001c', /"\\u0001c": a column name may not start or end with whitespace or a control character/],
  ]

  it.each(bad)('create: field name %j', (name, message) => {
    const input = { fields: [{ name: 'k', type: 'INT' }, { name, type: 'INT' }], primaryKeys: ['k'] }
    const err = (() => {
      try {
        createSchema(input)
      } catch (e) {
        return e
      }
    })()
    expect(err).toBeInstanceOf(StrataInputError)
    expect((err as Error).message).toMatch(/^schema\.fields\[1\]\.name "/)
    expect((err as Error).message).toMatch(message)
  })

  async function refusedAlter(changes: SchemaChange[], where: RegExp, message: RegExp): Promise<void> {
    const store = new MemoryStore()
    await Table.create(store, { fields: [{ name: 'k', type: 'INT' }, { name: 'c', type: 'INT' }], primaryKeys: ['k'], options: { bucket: '1', 'sequence.field': 'c' } })
    const err = await alterTable(store, changes).catch((e) => e)
    expect(err).toBeInstanceOf(StrataInputError)
    expect(err.message).toMatch(where)
    expect(err.message).toMatch(message)
    expect((await store.list('schema/')).map((o) => o.key)).toEqual(['schema/schema-0'])
    const t = await Table.open(store)
    expect(t.schema.id).toBe(0)
    expect(t.schema.fields.map((f) => f.name)).toEqual(['k', 'c'])
    expect(t.schema.options['sequence.field']).toBe('c')
  }

  it.each(bad)('add-column: name %j', async (name, message) => {
    await refusedAlter([{ kind: 'add-column', name, type: 'INT' }], /^alter add-column '.*': name "/s, message)
  })

  it.each(bad)('rename-column: new name %j', async (name, message) => {
    await refusedAlter([{ kind: 'rename-column', name: 'c', newName: name }], /^alter rename-column 'c': new name "/, message)
  })

  it('names with a comma, a space or a dot inside, not at either end, are accepted', () => {
    const s = createSchema({ fields: [{ name: 'k', type: 'INT' }, { name: 'a b', type: 'INT' }, { name: 'x.y', type: 'INT' }], primaryKeys: ['k'], options: { 'sequence.field': 'a b' } })
    expect(s.fields.map((f) => f.name)).toEqual(['k', 'a b', 'x.y'])
  })
})

describe("a rename and another tool's options that name columns", () => {
  const stored = (options: Record<string, string>): TableSchema => ({
    version: 3,
    id: 0,
    fields: [
      { id: 0, name: 'k', type: { root: 'INT', nullable: false } },
      { id: 1, name: 'c', type: { root: 'INT', nullable: false } },
      { id: 2, name: 'v', type: { root: 'INT', nullable: true } },
    ],
    highestFieldId: 2,
    partitionKeys: [],
    primaryKeys: ['k', 'c'],
    options: { bucket: '2', ...options },
    timeMillis: 0,
  })

  it.each([
    ['changelog-producer.row-deduplicate-ignore-fields', 'k,v'],
    ['fields.v.default-value', '1'],
    ['file-index.bloom-filter.columns', 'v'],
    ['file-index.bloom-filter.v.fpp', '0.01'],
  ])("option %j = %j that Strata does not read: renaming the column it names is refused, naming the option", (key, value) => {
    expect(() => applySchemaChanges(stored({ [key]: value }), [{ kind: 'rename-column', name: 'v', newName: 'w' }])).toThrow(
      new RegExp(`^alter rename-column 'v': option '${key.replace(/\./g, '\\.')}' = "${value.replace(/\./g, '\\.')}" may name column 'v', and Strata does not know how to rename it there`),
    )
    // a column it does not name renames as usual
    expect(applySchemaChanges(stored({ [key]: value }), [{ kind: 'rename-column', name: 'c', newName: 'd' }]).options[key]).toBe(value)
  })

  it("fields.<f>.nested-key, which Paimon's rename leaves under the old name (it renames no nested key): renaming the column is refused naming the option, nothing written", () => {
    expect(() => applySchemaChanges(stored({ 'fields.v.nested-key': 'id' }), [{ kind: 'rename-column', name: 'v', newName: 'w' }])).toThrow(
      /^alter: schema 1: Option 'fields\.v\.nested-key' = 'id' is invalid: Field v can not be found in table schema \(fields: k, c, w\)/,
    )
  })

  it('bucket-key stored with spaces after the commas (readers trim each entry): the entry is renamed', () => {
    const s = applySchemaChanges(stored({ 'bucket-key': 'k, c' }), [{ kind: 'rename-column', name: 'c', newName: 'd' }])
    expect(s.options['bucket-key']).toBe('k,d')
    expect(describeSchema(s).bucketKeyIndexes).toEqual([0, 1])
  })
})

describe('property: a name create or alter accepts survives every column-list option', () => {
  const unit = fc.constantFrom('k', 'a', 'b', 'é', '😀', ',', ' ', '\t', '.', '=', '_', '-', '\u0001', '\u00a0')
  // with look-alikes of the table's own names, which a misread list entry would turn into
  const name = fc.oneof(fc.constantFrom('k,a', 'x,k', 'k ', ' k', '\u0001k', ',', '', ' '), fc.string({ unit, minLength: 0, maxLength: 4 }), fc.string({ maxLength: 4 }))
  const three = fc.uniqueArray(name, { minLength: 3, maxLength: 3 }).filter((ns) => !ns.some((n) => ['k', 'a', 's', 'v'].includes(n)))

  /** bucket-key names `key`, sequence.field `seq`, fields.<agg>.aggregate-function `agg`: each reads back as that one column. */
  function expectRoundTrip(schema: TableSchema, key: string, seq: string, agg: string): void {
    const view = describeSchema(schema)
    expect(view.bucketKeyIndexes.map((i) => view.fields[i].name)).toEqual([key])
    const config = parseMergeEngineConfig(schema.fields, schema.primaryKeys, schema.options)
    expect(config.sequenceFields).toEqual([seq])
    expect(config.aggregations[view.fieldIndex.get(agg)!].function).toBe('sum')
  }

  const expectRefusal = (e: unknown) => {
    if (!(e instanceof StrataInputError)) throw e
  }

  it('create', () => {
    fc.assert(
      fc.property(three, ([key, seq, agg]) => {
        let schema: TableSchema
        try {
          schema = createSchema({
            fields: [{ name: 'k', type: 'INT' }, { name: key, type: 'INT' }, { name: seq, type: 'BIGINT' }, { name: agg, type: 'INT' }],
            primaryKeys: ['k', key],
            options: { bucket: '2', 'bucket-key': key, 'sequence.field': seq, 'merge-engine': 'aggregation', [`fields.${agg}.aggregate-function`]: 'sum' },
          })
          // as Table.create: the merge engine's options are checked against the fields
          parseMergeEngineConfig(schema.fields, schema.primaryKeys, schema.options)
        } catch (e) {
          return expectRefusal(e)
        }
        expectRoundTrip(schema, key, seq, agg)
      }),
      { numRuns: 300 },
    )
  })

  it('rename-column', () => {
    const base = createSchema({
      fields: [{ name: 'k', type: 'INT' }, { name: 'a', type: 'INT' }, { name: 's', type: 'BIGINT' }, { name: 'v', type: 'INT' }],
      primaryKeys: ['k', 'a'],
      options: { bucket: '2', 'bucket-key': 'a', 'sequence.field': 's', 'merge-engine': 'aggregation', 'fields.v.aggregate-function': 'sum' },
    })
    fc.assert(
      fc.property(three, ([key, seq, agg]) => {
        let schema: TableSchema
        try {
          schema = applySchemaChanges(base, [
            { kind: 'rename-column', name: 'a', newName: key },
            { kind: 'rename-column', name: 's', newName: seq },
            { kind: 'rename-column', name: 'v', newName: agg },
          ])
        } catch (e) {
          return expectRefusal(e)
        }
        expectRoundTrip(schema, key, seq, agg)
      }),
      { numRuns: 300 },
    )
  })
})
