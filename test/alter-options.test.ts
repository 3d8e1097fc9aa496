// Table options after create: Paimon's ALTER TABLE … SET / RESET as set-option and
// reset-option changes (lib/handle/alter.ts), their refusals, optionChanges, and the CLI's
// `strata alter <table> set|reset`.

import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { type SchemaChange, alterTable, applySchemaChanges, optionChanges } from '../lib/handle/alter.ts'
import { Table } from '../lib/handle/table.ts'
import { RefusedError, StrataInputError } from '../lib/errors.ts'
import { IMMUTABLE_OPTION_KEYS } from '../lib/table/options.ts'
import { createSchema } from '../lib/table/schema.ts'
import type { TableSchema } from '../lib/types.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { readAll } from '../lib/read/table-read.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { strata } from './helpers/cli-in-process.ts'

const SCHEMA = {
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'INT' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  options: { bucket: '2', 'snapshot.num-retained.min': '3' },
}

async function table(written: boolean, schema: unknown = SCHEMA): Promise<{ store: MemoryStore; table: Table }> {
  const store = new MemoryStore()
  const t = await Table.create(store, schema)
  if (written) await writeBatch(t, [{ ...recordFromJson(t.view, { dt: 'a', id: 1, v: 1 }, 'r'), where: 'r' }])
  return { store, table: t }
}

const schemaFiles = async (store: MemoryStore) => (await store.list('schema/')).map((o) => o.key).sort()

async function refusal(p: Promise<unknown>): Promise<Error> {
  const e = await p.then(
    () => null,
    (err: unknown) => err,
  )
  if (!(e instanceof Error)) throw new Error('expected a refusal, the alter landed')
  return e
}

describe('set-option and reset-option', () => {
  it('disable-explicit-type-casting, set by alter, leaves modify the implicit casts only (INT → BIGINT), refusing explicit ones (INT → STRING)', async () => {
    const { store, table: t } = await table(true)
    await alterTable(t, [{ kind: 'set-option', key: 'disable-explicit-type-casting', value: 'true' }])
    const e = await refusal(alterTable(store, [{ kind: 'update-column-type', name: 'v', type: 'STRING' }]))
    expect(e.message).toMatch(/disable-explicit-type-casting/)
    expect((await alterTable(store, [{ kind: 'update-column-type', name: 'v', type: 'BIGINT' }])).view.fields[2].type.root).toBe('BIGINT')
    await alterTable(store, [{ kind: 'reset-option', key: 'disable-explicit-type-casting' }])
    expect((await alterTable(store, [{ kind: 'update-column-type', name: 'v', type: 'STRING' }])).view.fields[2].type.root).toBe('VARCHAR')
  })

  it('land as the next schema file, which Table.open reads, and the table keeps working', async () => {
    const { store, table: t } = await table(true)
    const t1 = await alterTable(t, [
      { kind: 'set-option', key: 'snapshot.num-retained.min', value: '5' },
      { kind: 'set-option', key: 'compaction.task-threads', value: '4' },
      { kind: 'set-option', key: 'write-buffer-size', value: '8 mb' },
    ])
    expect(await schemaFiles(store)).toEqual(['schema/schema-0', 'schema/schema-1'])
    const opened = await Table.open(store)
    expect(opened.schema.id).toBe(1)
    expect(opened.schema.options).toEqual({ bucket: '2', 'snapshot.num-retained.min': '5', 'compaction.task-threads': '4', 'write-buffer-size': '8 mb' })
    expect(opened.view.options.compactionTaskThreads).toBe(4)
    expect(t1.schema).toEqual(opened.schema)
    const t2 = await alterTable(store, [{ kind: 'reset-option', key: 'compaction.task-threads' }, { kind: 'reset-option', key: 'not-set-anywhere' }])
    expect(t2.schema.id).toBe(2)
    expect(t2.schema.options).toEqual({ bucket: '2', 'snapshot.num-retained.min': '5', 'write-buffer-size': '8 mb' })
    // the alter changed no column: rows written before still read, and writes go on
    await writeBatch(t2, [{ ...recordFromJson(t2.view, { dt: 'a', id: 2, v: 2 }, 'r'), where: 'r' }])
    expect((await readAll(await Table.open(store))).length).toBe(2)
  })

  it('setting an option to its stored value is a no-op change that still writes a schema (as Paimon does)', async () => {
    const { store, table: t } = await table(true)
    const t1 = await alterTable(t, [{ kind: 'set-option', key: 'bucket', value: '2' }])
    expect(t1.schema.id).toBe(1)
    expect(t1.schema.options).toEqual(t.schema.options)
    expect(await schemaFiles(store)).toEqual(['schema/schema-0', 'schema/schema-1'])
  })

  it('refuses what Paimon keeps fixed once the table has snapshots, naming the option and why; nothing is written', async () => {
    const { store, table: t } = await table(true, { ...SCHEMA, options: { bucket: '2', 'merge-engine': 'deduplicate' } })
    const cases: [SchemaChange, RegExp][] = [
      [{ kind: 'set-option', key: 'bucket', value: '4' }, /alter set-option 'bucket': option 'bucket' cannot change from "2" to "4" once the table has snapshots: .*rescale overwrite .*which Strata does not have/],
      [{ kind: 'reset-option', key: 'bucket' }, /option 'bucket' cannot be reset: Paimon refuses it/],
      [{ kind: 'set-option', key: 'merge-engine', value: 'first-row' }, /option 'merge-engine' cannot change once the table has snapshots: Paimon fixes it at create \(an @Immutable option/],
      [{ kind: 'reset-option', key: 'merge-engine' }, /option 'merge-engine' cannot change once the table has snapshots/],
      [{ kind: 'set-option', key: 'bucket-key', value: 'id' }, /option 'bucket-key' cannot change once the table has snapshots/],
      [{ kind: 'set-option', key: 'deletion-vectors.enabled', value: 'true' }, /option 'deletion-vectors.enabled' cannot change from false to true once the table has snapshots: .*rows twice.*deletion-vectors.modifiable/],
      [{ kind: 'set-option', key: 'index-file-in-data-file-dir', value: 'true' }, /option 'index-file-in-data-file-dir' cannot change once the table has snapshots/],
      [{ kind: 'set-option', key: 'type', value: 'format-table' }, /option 'type': Paimon does not change a table's type/],
      [{ kind: 'set-option', key: 'path', value: 's3://elsewhere' }, /option 'path': Paimon does not change a table's path/],
    ]
    for (const [change, message] of cases) {
      const e = await refusal(alterTable(t, [change]))
      expect(e, JSON.stringify(change)).toBeInstanceOf(RefusedError)
      expect(e.message).toMatch(message)
    }
    expect(await schemaFiles(store)).toEqual(['schema/schema-0'])
  })

  it('before the first snapshot, Paimon lets those change: the bucket count and deletion-vector mode', async () => {
    const { table: t } = await table(false)
    const t1 = await alterTable(t, [
      { kind: 'set-option', key: 'bucket', value: '8' },
      { kind: 'set-option', key: 'deletion-vectors.enabled', value: 'true' },
    ])
    expect(t1.view.options.bucket).toBe(8)
    expect(t1.view.options.deletionVectors).toBe(true)
    // never: a schema without bucket is dynamic bucket mode, which Strata does not write
    expect((await refusal(alterTable(t1, [{ kind: 'reset-option', key: 'bucket' }]))).message).toMatch(/cannot be reset/)
  })

  it('a bad value or key is refused as create refuses it, naming the option, the value and what was expected', async () => {
    const { store, table: t } = await table(true)
    const cases: [SchemaChange[], RegExp][] = [
      [[{ kind: 'set-option', key: 'snapshot.num-retained.max', value: 'many' }], /^alter set-option 'snapshot.num-retained.max': option 'snapshot.num-retained.max': invalid value "many", expected an integer >= 1$/],
      [[{ kind: 'set-option', key: 'target-file-size', value: '12 parsecs' }], /option 'target-file-size': invalid value "12 parsecs", expected a memory size such as '128 mb'/],
      [[{ kind: 'set-option', key: 'file.format', value: 'orc' }], /option 'file.format': value "orc" is not supported: Strata neither reads nor writes ORC data files .*expected parquet/],
      [[{ kind: 'set-option', key: 'file.format', value: 'avro' }], /option 'file.format': value "avro" is not taken .*Strata writes Parquet data files.*expected parquet/],
      [[{ kind: 'set-option', key: 'manifest.compression', value: 'none' }], /option 'manifest.compression': value "none" is not an Avro codec name .*expected null for uncompressed manifests/],
      [[{ kind: 'set-option', key: 'sink.parallelism', value: '4' }], /option 'sink.parallelism' is unknown \(value "4"\)/],
      [[{ kind: 'set-option', key: 'changelog-producer', value: 'full-compaction' }], /value "full-compaction" is not supported by Strata/],
      // a combination, checked over the options the alter would make
      [[{ kind: 'set-option', key: 'snapshot.num-retained.max', value: '2' }], /^alter: option 'snapshot.num-retained.max': invalid value "2", expected an integer >= snapshot.num-retained.min \(3\).*nothing was written/],
      [[{ kind: 'set-option', key: 'partition.default-name', value: 'x'.repeat(300) }], /option 'partition.default-name': invalid value of 300 bytes escaped/],
      [[{ kind: 'set-option', key: '', value: 'x' }], /key: expected an option name/],
      [[{ kind: 'set-option', key: 'bucket', value: 4 as unknown as string }], /value: expected a string, got 4/],
    ]
    for (const [changes, message] of cases) {
      const e = await refusal(alterTable(t, changes))
      expect(e, JSON.stringify(changes)).toBeInstanceOf(StrataInputError)
      expect(e.message).toMatch(message)
    }
    expect(await schemaFiles(store)).toEqual(['schema/schema-0'])
    // an option Paimon lets change, refused with the engine the table has (SchemaValidation)
    const firstRow = await table(true, { ...SCHEMA, options: { bucket: '2', 'merge-engine': 'first-row' } })
    const e = await refusal(alterTable(firstRow.table, [{ kind: 'set-option', key: 'changelog-producer', value: 'input' }]))
    expect(e.message).toMatch(/^alter: option 'changelog-producer' is "input" with 'merge-engine' = "first-row": Paimon supports only 'none' and 'lookup'/)
    expect((await alterTable(firstRow.table, [{ kind: 'set-option', key: 'changelog-producer', value: 'lookup' }])).view.options.changelogProducer).toBe('lookup')
  })

  it('property: the changes optionChanges gives turn one options map into the other and back', () => {
    const base = createSchema(SCHEMA, 0)
    const value = fc.record(
      {
        'snapshot.num-retained.min': fc.integer({ min: 1, max: 5 }).map(String),
        'snapshot.num-retained.max': fc.integer({ min: 5, max: 100 }).map(String),
        'compaction.task-threads': fc.constantFrom('-1', '1', '2', '8'),
        'write-buffer-size': fc.constantFrom('1 mb', '64 mb'),
        'data-file.prefix': fc.constantFrom('data-', 'part-'),
        'commit.user-prefix': fc.string({ maxLength: 5 }),
      },
      { requiredKeys: [] },
    )
    fc.assert(
      fc.property(value, value, (a, b) => {
        // no change at all is refused ("expected at least one change"): an equal map stays as it is
        const apply = (schema: TableSchema, changes: SchemaChange[]) => (changes.length ? applySchemaChanges(schema, changes) : schema)
        const keys = (changes: SchemaChange[]) => changes.map((c) => (c as { key: string }).key)
        const from = apply(base, optionChanges(base.options, { ...base.options, ...a }))
        const to = { ...base.options, ...b }
        const forward = optionChanges(from.options, to)
        expect(keys(forward)).toEqual([...keys(forward)].sort())
        const there = apply(from, forward)
        expect(there.options).toEqual(to)
        expect(apply(there, optionChanges(there.options, from.options)).options).toEqual(from.options)
        // set, then reset the keys the table did not have: the original map again
        const added = Object.keys(a).filter((k) => !(k in base.options))
        const reset = apply(from, added.map((key): SchemaChange => ({ kind: 'reset-option', key })))
        expect(reset.options).toEqual({ ...base.options, ...Object.fromEntries(Object.entries(a).filter(([k]) => k in base.options)) })
      }),
      { numRuns: 200 },
    )
  })

  it('property: a change Paimon refuses never writes a schema file', async () => {
    const { store, table: t } = await table(true)
    const refusedKey = fc.constantFrom(...IMMUTABLE_OPTION_KEYS, 'bucket', 'type', 'path')
    const change = fc.oneof(
      fc.tuple(refusedKey, fc.constantFrom('1', '3', 'true', 'x')).map(([key, value]): SchemaChange => ({ kind: 'set-option', key, value })),
      refusedKey.filter((k) => k !== 'type' && k !== 'path' && k !== 'bucket' ? k in t.schema.options : true).map((key): SchemaChange => ({ kind: 'reset-option', key })),
    )
    const harmless = fc.constantFrom<SchemaChange>({ kind: 'set-option', key: 'snapshot.expire.limit', value: '7' }, { kind: 'update-comment', comment: 'c' })
    await fc.assert(
      fc.asyncProperty(fc.array(harmless, { maxLength: 2 }), change, fc.array(harmless, { maxLength: 2 }), async (before, refused, after) => {
        // an unchanged value is Paimon's no-op, not a refusal
        if (refused.kind === 'set-option' && t.schema.options[refused.key] === refused.value) return
        await expect(alterTable(store, [...before, refused, ...after])).rejects.toBeInstanceOf(StrataInputError)
        expect(await schemaFiles(store)).toEqual(['schema/schema-0'])
      }),
      { numRuns: 60 },
    )
  })

  it('optionChanges: sets and resets sorted by key, keys in ignore left alone, none when they agree', () => {
    const stored = { bucket: '2', 'b.x': '1', 'z.old': 'q', path: '/t' }
    expect(optionChanges(stored, { bucket: '2', 'b.x': '2', 'a.new': 'n', path: '/u' }, new Set(['path']))).toEqual([
      { kind: 'set-option', key: 'a.new', value: 'n' },
      { kind: 'set-option', key: 'b.x', value: '2' },
      { kind: 'reset-option', key: 'z.old' },
    ])
    expect(optionChanges(stored, { ...stored })).toEqual([])
  })
})

describe('strata alter set / reset (CLI)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-alter-options-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('create names the bucket mode: fixed buckets by count, -1 dynamic, -2 postpone', async () => {
    for (const [bucket, said] of [['3', '3 buckets'], ['-1', 'dynamic bucket mode'], ['-2', 'postpone bucket mode']]) {
      const schemaPath = join(dir, `mode${bucket}.json`)
      writeFileSync(schemaPath, JSON.stringify({ fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'INT' }], primaryKeys: ['id'], options: { bucket } }))
      const r = await strata(['create', join(dir, `mode${bucket}`), '--schema', schemaPath])
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toContain(`, ${said})`)
    }
  })

  it('prints the options changed; bad input exits 2, a refused change 7, and neither writes a schema', async () => {
    const uri = join(dir, 't')
    const schemaPath = join(dir, 's.json')
    writeFileSync(schemaPath, JSON.stringify({ fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'INT' }], primaryKeys: ['id'], options: { bucket: '2' } }))
    expect((await strata(['create', uri, '--schema', schemaPath])).code).toBe(0)
    const rows = join(dir, 'rows.jsonl')
    writeFileSync(rows, '{"id":1,"v":5}\n')
    expect((await strata(['write', uri, rows])).code).toBe(0)
    const ok = async (args: string[], line: string) => {
      const r = await strata(['alter', uri, ...args])
      expect(r.stderr).toBe('')
      expect(r.code).toBe(0)
      expect(r.stdout.trim()).toBe(line)
    }
    await ok(['set', 'compaction.task-threads', '4', 'snapshot.expire.limit', '20'], 'schema 1: set compaction.task-threads=4; set snapshot.expire.limit=20')
    await ok(['reset', 'compaction.task-threads'], 'schema 2: reset compaction.task-threads')
    const bad: [string[], number, RegExp][] = [
      [['set', 'snapshot.expire.limit'], 2, /alter set: expected set <key> <value> \[<key> <value> …\], got 1 argument\(s\) \["snapshot.expire.limit"\] \(a key without its value\)/],
      [['reset'], 2, /alter reset: expected reset <key> \[<key> …\], got 0 argument/],
      [['set', 'a', '1', 'a', '2'], 2, /alter set: option 'a' is given twice/],
      [['set', 'snapshot.expire.limit', 'lots'], 2, /option 'snapshot.expire.limit': invalid value "lots", expected an integer >= 1/],
      [['set', 'no.such.option', '1'], 2, /option 'no.such.option' is unknown/],
      [['set', 'bucket', '4'], 7, /option 'bucket' cannot change from "2" to "4" once the table has snapshots/],
      [['reset', 'bucket'], 7, /option 'bucket' cannot be reset/],
      [['set', 'merge-engine', 'first-row'], 7, /option 'merge-engine' cannot change once the table has snapshots/],
      [['set', 'compaction.task-threads', '2', '--first'], 2, /alter set: --first does not apply/],
    ]
    for (const [args, code, message] of bad) {
      const r = await strata(['alter', uri, ...args])
      expect(r.code, args.join(' ')).toBe(code)
      expect(r.stderr).toMatch(message)
    }
    expect(readdirSync(join(uri, 'schema')).sort()).toEqual(['schema-0', 'schema-1', 'schema-2'])
    const read = await strata(['read', uri, '--json'])
    expect(read.stdout.trim()).toBe('{"id":1,"v":5}')
  })
})
