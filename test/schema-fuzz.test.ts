// Grammar-based fuzzing of the schema parser: the schema JSON `Table.create` (and so
// `strata create` and the CDK config) accepts, and the stored `schema/schema-N` file another
// tool may have written. First the corpus in test/fuzz-corpus/schemas/ is replayed (one input
// per .json or .txt file, each through both paths), then schemas generated from a grammar and
// mutated run for STRATA_FUZZ_SECONDS (default 10) seconds, half on each path
// (STRATA_FUZZ_SEED replays a run).
//
// The property: an input is refused with a StrataInputError that names the field or option
// (and, created, leaves nothing in the store), or it yields a table that takes a write and
// reads it back. A stored schema that opens must read; a write to it may be refused, with a
// StrataInputError and nothing committed, where the schema holds a value Strata does not
// write with. Never another exception, never a hang (each case has a timeout).

import { readdirSync, readFileSync } from 'node:fs'
import * as zlib from 'node:zlib'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readsSkipLevel0 } from '../lib/merge/engines.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { MAX_BUCKETS, MAX_LEVELS, OPTION_SPECS } from '../lib/table/options.ts'
import { createSchema, serializeSchema } from '../lib/table/schema.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { DataField } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const SECONDS = Number(process.env.STRATA_FUZZ_SECONDS ?? 10)
const CORPUS_DIR = new URL('./fuzz-corpus/schemas/', import.meta.url)
const SCHEMA_KEY = 'schema/schema-0'
const STORE_URI = 'memory://fuzz'
const enc = new TextEncoder()
const ZSTD_WRITABLE = typeof (zlib as { zstdCompressSync?: unknown }).zstdCompressSync === 'function'

function usesZstd(table: Table): boolean {
  const o = table.view.options
  return o.fileCompression === 'zstd' || o.manifestCompression === 'zstd'
}

// --- the property -----------------------------------------------------------------------

/** A StrataInputError whose message names what it refuses. */
function expectNamedRefusal(e: unknown, names: RegExp): void {
  if (!(e instanceof StrataInputError)) throw e
  expect(e.message, e.message).toMatch(names)
}

/** Create's refusals name `schema…`, an option or a field (merge-engine messages quote Paimon's `Option '…'`). */
const CREATE_NAMES = /^(create \S+: option '|schema[.:]|options?\b|Option '|field |Primary key ')/
/** Open's refusals name the schema file first; a write's refusal names an option, field or value. */
const STORED_NAMES = new RegExp(`^${STORE_URI}/${SCHEMA_KEY}: `)

/** A value of the field's type, smallest (`minimal`) or an ordinary one. */
function valueFor(f: DataField, minimal: boolean): unknown {
  const t = f.type
  if (minimal && t.nullable) return null
  switch (t.root) {
    case 'BOOLEAN':
      return !minimal
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'BIGINT':
      return minimal ? 0 : 7
    case 'FLOAT':
    case 'DOUBLE':
      return minimal ? 0 : 1.5
    case 'DECIMAL':
      return minimal || (t.precision ?? 10) === (t.scale ?? 0) ? '0' : '1'
    case 'CHAR':
    case 'VARCHAR':
      return minimal ? '' : 'x'
    case 'BINARY':
    case 'VARBINARY':
      return minimal ? '' : 'AA=='
    case 'DATE':
      return '2024-05-01'
    case 'TIMESTAMP':
      return '2024-05-01 10:00:00'
  }
}

function rowFor(table: Table, minimal: boolean): Record<string, unknown> {
  const row: Record<string, unknown> = {}
  for (const f of table.view.fields) Object.defineProperty(row, f.name, { value: valueFor(f, minimal), enumerable: true })
  return row
}

/** Writes one row and reads it back, before and after a full compaction (deletion-vector and first-row readers see it only after). */
async function writeAndReadBack(table: Table, minimal: boolean): Promise<void> {
  const rec = recordFromJson(table.view, rowFor(table, minimal), 'probe')
  await writeBatch(table, [rec])
  await expectReadsAfterCompaction(table, rec.row)
}

async function expectReadsAfterCompaction(table: Table, row: unknown[]): Promise<void> {
  // deletion-vector and first-row readers skip level 0: they see the row after the compaction
  expect(await readAll(table)).toEqual(readsSkipLevel0(table.mergeConfig.engine, table.view.options) ? [] : [row])
  await compactTable(table, { full: true })
  expect(await readAll(table)).toEqual([row])
}

/** How many inputs made a table, for the run's summary line. */
const accepted = { create: 0, stored: 0 }

async function checkCreate(text: string): Promise<void> {
  let input: unknown
  try {
    input = JSON.parse(text)
  } catch {
    return // `strata create` refuses a file that is not JSON before the schema parser sees it
  }
  const store = new MemoryStore({ uri: STORE_URI })
  let table: Table
  try {
    table = await Table.create(store, input)
  } catch (e) {
    expectNamedRefusal(e, CREATE_NAMES)
    expect(await store.list('')).toEqual([])
    return
  }
  accepted.create++
  try {
    await writeAndReadBack(table, false)
  } catch (e) {
    if (!(e instanceof StrataInputError)) throw e
    // zstd is the table's choice for Lambda's Node 22; a Node without a zstd encoder refuses the write
    if (usesZstd(table) && !ZSTD_WRITABLE) {
      expect(e.message).toMatch(/zstd/)
      return
    }
    // an ordinary row may be over a small write.max-row-size; the smallest row always fits
    if (table.view.options.maxRowBytes >= 4096) throw e
    await writeAndReadBack(table, true)
  }
  // and the stored file reads back as the same schema
  expect((await Table.open(store)).schema).toEqual(table.schema)
}

async function checkStored(text: string): Promise<void> {
  const store = new MemoryStore({ uri: STORE_URI })
  await store.put(SCHEMA_KEY, enc.encode(text))
  let table: Table
  try {
    table = await Table.open(store)
  } catch (e) {
    expectNamedRefusal(e, STORED_NAMES)
    return
  }
  accepted.stored++
  expect(await readAll(table)).toEqual([])
  let rec
  try {
    rec = recordFromJson(table.view, rowFor(table, true), 'probe')
  } catch (e) {
    expectNamedRefusal(e, /^probe: /)
    return
  }
  try {
    await writeBatch(table, [rec])
  } catch (e) {
    expectNamedRefusal(e, /option|field|bucket|partition|value|(file|manifest)\.compression/i)
    // nothing committed (a data file written before the refusal is an orphan, for orphan cleanup)
    expect(await table.snapshots.latestId()).toBe(0)
    expect(await readAll(table)).toEqual([])
    return
  }
  try {
    await expectReadsAfterCompaction(table, rec.row)
  } catch (e) {
    // a compaction may be refused where a stored value keeps Strata from compacting
    expectNamedRefusal(e, /^option '/)
  }
}

// --- the corpus -------------------------------------------------------------------------

const corpus = readdirSync(CORPUS_DIR)
  .filter((n) => n.endsWith('.json') || n.endsWith('.txt'))
  .sort()

describe('schema corpus (test/fuzz-corpus/schemas)', () => {
  it('holds the seeds', () => {
    expect(corpus.length).toBeGreaterThanOrEqual(20)
  })

  it.each(corpus)('%s: refused naming the field, or a table that writes and reads', async (name) => {
    const text = readFileSync(new URL(name, CORPUS_DIR), 'utf8')
    await checkCreate(text)
    await checkStored(text)
  })
})

// --- the grammar --------------------------------------------------------------------------

/** Field names: mostly ordinary, then look-alikes of reserved ones, reserved ones, and odd strings. */
const fieldName = fc.oneof(
  { weight: 12, arbitrary: fc.constantFrom('id', 'dt', 'v', 'n', 'amount', 'ts', 'region', 'qty') },
  {
    weight: 2,
    arbitrary: fc.constantFrom(
      '_kind', '_table', '_KIND', 'kind', '_KEY_id', '_key_id', '_SEQUENCE_NUMBER', '_VALUE_KIND', '_LEVEL', 'rowkind', '_ROW_ID',
      '__proto__', 'constructor', 'toString', 'a.b', 'a b', 'a,b', 'a/b', 'a=b', '%41', 'é', 'Ω', '\u0000', '\n', '\ud800', '\udc00x', '', ' ',
      'x'.repeat(300),
    ),
  },
  { weight: 1, arbitrary: fc.string({ maxLength: 6 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 3 }) },
)

/** An argument list: mostly in the type's range, sometimes at or past its edges. */
function typeArgs(valid: fc.Arbitrary<number[]>): fc.Arbitrary<number[]> {
  const edge: fc.Arbitrary<number> = fc.constantFrom(0, -1, 39, 2147483647, 2147483648, 99999999999999999999)
  return fc.oneof({ weight: 8, arbitrary: valid }, { weight: 1, arbitrary: fc.array(edge, { minLength: 1, maxLength: 2 }) }, { weight: 1, arbitrary: fc.constant([] as number[]) })
}

const lengthArgs = typeArgs(fc.integer({ min: 1, max: 40 }).map((n) => [n]))
const decimalArgs = typeArgs(fc.integer({ min: 1, max: 38 }).chain((p) => fc.oneof(fc.constant([p] as number[]), fc.integer({ min: 0, max: p }).map((sc) => [p, sc]))))
const timestampArgs = typeArgs(fc.integer({ min: 0, max: 9 }).map((n) => [n]))
const noArgs = fc.oneof({ weight: 9, arbitrary: fc.constant([] as number[]) }, { weight: 1, arbitrary: fc.array(fc.nat(40), { minLength: 1, maxLength: 2 }) })

/** Type strings: Paimon's names with arguments, case and spacing variants, NOT NULL, and types Strata lacks. */
const typeText = fc.oneof(
  {
    weight: 10,
    arbitrary: fc
      .oneof(
        fc.tuple(fc.constantFrom('BOOLEAN', 'TINYINT', 'SMALLINT', 'INT', 'INTEGER', 'BIGINT', 'FLOAT', 'DOUBLE', 'DATE', 'STRING', 'BYTES'), noArgs),
        fc.tuple(fc.constantFrom('VARCHAR', 'CHAR', 'VARBINARY', 'BINARY'), lengthArgs),
        fc.tuple(fc.constantFrom('DECIMAL', 'NUMERIC'), decimalArgs),
        fc.tuple(fc.constant('TIMESTAMP'), timestampArgs),
      )
      .chain(([base, args]) =>
        fc
          .record({ nullability: fc.constantFrom('', '', ' NOT NULL', ' NULL', ' not null'), lower: fc.boolean(), spaces: fc.constantFrom('', ' ', '  ') })
          .map(({ nullability, lower, spaces }) => {
            const text = `${base}${args.length ? `${spaces}(${args.join(`,${spaces}`)})` : ''}${nullability}`
            return lower ? text.toLowerCase() : text
          }),
      ),
  },
  {
    weight: 1,
    arbitrary: fc.constantFrom('ARRAY<INT>', 'MAP<STRING, INT>', 'ROW<a INT>', 'TIMESTAMP WITH LOCAL TIME ZONE', 'TIMESTAMP(9)', 'VARIANT', 'DOUBLE PRECISION', 'DECIMAL(10,', 'INT NOT', ''),
  },
)

const fieldDef = fc.record(
  { name: fieldName, type: typeText, description: fc.constantFrom('a column', '') },
  { requiredKeys: ['name', 'type'] },
)

/** Option values by kind: around each spec's bounds, the spellings Paimon accepts, and junk. */
function optionValue(key: string, names: string[]): fc.Arbitrary<string> {
  const spec = OPTION_SPECS.find((s) => s.key === key)
  const junk = fc.constantFrom('', ' ', 'x', '-1', '0', '1.5', '2147483648', 'true', '1 kb', '1 h')
  if (!spec) {
    // merge-engine keys
    if (key === 'merge-engine') return fc.constantFrom('deduplicate', 'partial-update', 'aggregation', 'first-row', 'nope')
    if (key.endsWith('aggregate-function')) return fc.constantFrom('sum', 'max', 'min', 'last_value', 'listagg', 'bool_and', 'product', 'nope')
    return fc.oneof(fc.constantFrom(...names, names.join(','), 'nope'), junk)
  }
  let typed: fc.Arbitrary<string>
  switch (spec.type) {
    case 'int':
    case 'long': {
      const lo = spec.min ?? -1
      const hi = spec.max ?? 2147483647
      typed = fc.oneof(fc.integer({ min: lo, max: Math.min(hi, lo + 10) }).map(String), fc.constantFrom(String(lo - 1), String(hi), String(hi + 1), String(MAX_BUCKETS), String(MAX_LEVELS)))
      break
    }
    case 'boolean':
      typed = fc.constantFrom('true', 'false', 'TRUE')
      break
    case 'memory':
      typed = fc.constantFrom('1', '8', '64 b', '1 kb', '4 mb', '128 mb', '1 gb', '0 b', '100 tb', '99999999999999999999 tb')
      break
    case 'duration':
      typed = fc.constantFrom('0', '1 s', '30 min', '1 h', '7 d', '99999999999999999999 d')
      break
    case 'enum':
      typed = fc.constantFrom(...spec.values!, 'nope')
      break
    default:
      typed =
        key === 'bucket-key'
          ? fc.constantFrom(...names, names.join(','), ` ${names[0]} `, `${names[0]},${names[0]}`, '')
          : fc.constantFrom('data-', 'part_A.v2-', '', '../evil-', 'a/b', '.tmp-', 'x'.repeat(65), '__DEFAULT_PARTITION__', 'null', '/')
  }
  return fc.oneof({ weight: 5, arbitrary: typed }, { weight: 1, arbitrary: junk })
}

const OPTION_KEYS = [...OPTION_SPECS.map((s) => s.key), 'merge-engine', 'sequence.field', 'ignore-delete', 'partial-update.remove-record-on-delete']

/** A schema from the grammar: fields (names mostly unique), keys mostly as Paimon requires them, options by kind. */
const grammarSchema = fc
  .oneof({ weight: 5, arbitrary: fc.uniqueArray(fieldDef, { minLength: 1, maxLength: 6, selector: (f) => f.name }) }, { weight: 1, arbitrary: fc.array(fieldDef, { minLength: 1, maxLength: 6 }) })
  .chain((fields) => {
    const names = fields.map((f) => f.name)
    const anyName = fc.oneof({ weight: 8, arbitrary: fc.constantFrom(...names) }, { weight: 1, arbitrary: fieldName })
    // a primary key, then partition keys among its fields but not all of them
    const keys = fc.oneof(
      {
        weight: 5,
        arbitrary: fc.shuffledSubarray(names, { minLength: 1 }).chain((pk) => fc.subarray(pk.slice(1)).map((part) => ({ primaryKeys: pk, partitionKeys: part }))),
      },
      { weight: 1, arbitrary: fc.record({ primaryKeys: fc.uniqueArray(anyName, { maxLength: 3 }), partitionKeys: fc.uniqueArray(anyName, { maxLength: 2 }) }) },
    )
    const optionKey = fc.oneof(
      { weight: 6, arbitrary: fc.constantFrom(...OPTION_KEYS) },
      { weight: 2, arbitrary: fc.constantFrom(...names).map((n) => `fields.${n}.aggregate-function`) },
      { weight: 1, arbitrary: fc.string({ maxLength: 8 }) },
    )
    const option = optionKey.chain((k) => optionValue(k, names).map((v) => [k, v] as const))
    return fc
      .record(
        {
          keys,
          options: fc.array(option, { maxLength: 4 }).map((es) => Object.fromEntries(es)),
          comment: fc.constantFrom('orders', ''),
        },
        { requiredKeys: ['keys'] },
      )
      .map(({ keys, ...rest }) => ({ fields, ...keys, ...rest }))
  })

/** A JSON path into a value, and replacements: the mutations applied to a grammar schema. */
function mutate(value: unknown, steps: { at: number; op: number; junk: unknown }[]): unknown {
  let out = structuredClone(value)
  for (const { at, op, junk } of steps) {
    const nodes: { parent: Record<string, unknown> | unknown[]; key: string | number }[] = []
    const walk = (v: unknown) => {
      if (typeof v !== 'object' || v === null) return
      for (const [k, child] of Object.entries(v)) {
        nodes.push({ parent: v as Record<string, unknown>, key: Array.isArray(v) ? Number(k) : k })
        walk(child)
      }
    }
    walk(out)
    if (nodes.length === 0) {
      out = junk
      continue
    }
    const { parent, key } = nodes[at % nodes.length]
    const p = parent as Record<string | number, unknown>
    switch (op % 5) {
      case 0: // replace with junk
        p[key] = junk
        break
      case 1: // drop
        if (Array.isArray(parent)) parent.splice(key as number, 1)
        else delete p[key]
        break
      case 2: // duplicate an array element
        if (Array.isArray(parent)) parent.push(structuredClone(parent[key as number]))
        else p[`${String(key)}2`] = structuredClone(p[key])
        break
      case 3: // stringify or number-ify
        p[key] = typeof p[key] === 'string' ? Number(p[key]) : JSON.stringify(p[key])
        break
      default: // wrap
        p[key] = [p[key]]
    }
  }
  return out
}

const mutation = fc.record({ at: fc.nat(), op: fc.nat(), junk: fc.oneof(fc.jsonValue({ maxDepth: 2 }), fc.constantFrom('', '_kind', '../x', -1, 2147483648, null)) })

/** Created schemas: the grammar's, a few with mutations. */
const createInput = fc.oneof(
  { weight: 4, arbitrary: grammarSchema },
  { weight: 1, arbitrary: fc.tuple(grammarSchema, fc.array(mutation, { minLength: 1, maxLength: 3 })).map(([s, m]) => mutate(s, m)) },
)

/** Stored schema files: what a valid create stores, mutated as JSON or cut as text. */
const storedInput = fc
  .tuple(grammarSchema, fc.array(mutation, { maxLength: 2 }), fc.oneof({ weight: 6, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.nat() }))
  .map(([input, steps, cut]) => {
    let stored: Record<string, unknown>
    try {
      // what Strata itself would store, with the ids, version and timestamps of a stored file
      stored = JSON.parse(serializeSchema(createSchema(input, 1)))
    } catch {
      stored = { version: 3, id: 0, highestFieldId: input.fields.length - 1, timeMillis: 1, ...input, fields: input.fields.map((f, id) => ({ id, ...f })) }
    }
    const text = JSON.stringify(mutate(stored, steps), null, 2)
    return cut === undefined ? text : text.slice(0, cut % (text.length + 1))
  })

// --- the runs ---------------------------------------------------------------------------

/** The counterexample, how to replay it, and the error it raised (with its stack). */
function failure<T>(stats: fc.RunDetails<T>): Error {
  const cause = stats.errorInstance
  const detail = cause instanceof Error ? `${cause.stack ?? cause.message}` : String(cause)
  return new Error(`${fc.defaultReportMessage(stats)}\n${detail}\nTo keep it, save the counterexample as a file in test/fuzz-corpus/schemas/ (test/fuzz-corpus/README.md)`)
}

describe(`schema fuzzing (${SECONDS} s; STRATA_FUZZ_SECONDS sets it)`, () => {
  const budgetMs = (SECONDS * 1000) / 2
  const seed = process.env.STRATA_FUZZ_SEED === undefined ? {} : { seed: Number(process.env.STRATA_FUZZ_SEED) }
  const params = { numRuns: 1_000_000, interruptAfterTimeLimit: budgetMs, timeout: 5_000, markInterruptAsFailure: false, ...seed }

  it('created schemas from the grammar, mutated', { timeout: budgetMs + 30_000 }, async () => {
    accepted.create = 0
    const stats = await fc.check(
      fc.asyncProperty(createInput, async (input) => {
        await checkCreate(JSON.stringify(input))
      }),
      params,
    )
    if (stats.failed) throw failure(stats)
    expect(stats.numRuns).toBeGreaterThan(0)
    console.info(`schema fuzzing: ${stats.numRuns} created schemas in ${budgetMs / 1000} s, ${accepted.create} made a table`)
  })

  it('stored schema files, mutated as JSON and cut as text', { timeout: budgetMs + 30_000 }, async () => {
    accepted.stored = 0
    const stats = await fc.check(
      fc.asyncProperty(storedInput, async (text) => {
        await checkStored(text)
      }),
      params,
    )
    if (stats.failed) throw failure(stats)
    expect(stats.numRuns).toBeGreaterThan(0)
    console.info(`schema fuzzing: ${stats.numRuns} stored schema files in ${budgetMs / 1000} s, ${accepted.stored} opened`)
  })
})
