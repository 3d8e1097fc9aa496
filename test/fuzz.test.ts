// Bad-input fuzzing of every place user input enters: the writer's record bodies (ingest),
// the CLI's JSON records (recordFromJson), schema files (createSchema, Table.create) and
// table options (validateOptions). The rule everywhere: either the input is accepted, or
// a StrataInputError with a message comes back — never a TypeError or RangeError, never a
// hang (async cases run under fast-check's per-case `timeout`; every run is bounded by
// `interruptAfterTimeLimit`), never a partial commit (a rejected write leaves the table's
// object list unchanged).

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ingest } from '../lib/ingest/ingest.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { OPTION_SPECS, coreOptions, validateOptions } from '../lib/table/options.ts'
import { createSchema, describeSchema, parseSchema, serializeSchema } from '../lib/table/schema.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const RUN = { numRuns: 300, interruptAfterTimeLimit: 8_000, timeout: 2_000 }

const SCHEMA = {
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'INT' },
    { name: 'qty', type: 'BIGINT' },
    { name: 'price', type: 'DECIMAL(10, 2)' },
    { name: 'x', type: 'DOUBLE' },
    { name: 'flag', type: 'BOOLEAN' },
    { name: 'day', type: 'DATE' },
    { name: 'ts', type: 'TIMESTAMP(3)' },
    { name: 'raw', type: 'BYTES' },
    { name: 'code', type: 'CHAR(3)' },
    { name: 'small', type: 'TINYINT' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  // aggregation without remove-record-on-delete refuses a -D at write time: a whole-batch refusal
  // (max cannot retract, so a -D is refused for the whole batch)
  options: { bucket: '2', 'merge-engine': 'aggregation', 'fields.qty.aggregate-function': 'sum', 'fields.small.aggregate-function': 'max' },
}

const VALID = { dt: '2024-05-01', id: 1, qty: 5, price: '12.34', x: 1.5, flag: true, day: '2024-05-01', ts: '2024-05-01 10:00:00.123', raw: 'AAEC', code: 'abc', small: 7 }

/** Exponents that once hung or crashed the writer (issue 16), and their relatives. */
const EXPONENTS = [
  '1e400000000', '1e9999999999', '1E+400000000', '-1e400000000', '1e-400000000', '5e-9999999999', '0e99999999999', '1.5e-99999999999999999999',
  `1e${'9'.repeat(400)}`, `-1e-${'9'.repeat(400)}`, `${'9'.repeat(400)}e-398`, '1234000e-5', '1.5e7', '1e18', '1e19', '-9.223372036854775808e18',
]

/** Huge and deep values, built once: megabyte strings and digits, nesting past any stack. */
let deepArray: unknown = 1
for (let i = 0; i < 100_000; i++) deepArray = [deepArray]
const HUGE = ['x'.repeat(5_000_001), '9'.repeat(1_000_000), 'é'.repeat(2_200_000), Buffer.alloc(4_500_000).toString('base64')]

/** Edge values a field may be given: wrong types, out of range, odd strings. */
const nasty = fc.oneof(
  fc.jsonValue(),
  fc.constantFrom(
    '', ' ', 'NaN', 'Infinity', '-0', '1e400', '99999999999999999999999', '-9223372036854775809', '9223372036854775807',
    '2024-02-30', '0000-01-01', '9999-12-31 23:59:59.999999', '2024-05-01T10:00:00Z', '\u0000', '\ud800', 'é'.repeat(4),
    '====', 'A', 'AAA=', 'QR==', '12.345', '1.005', '-', '.', '1.', '+1', 2 ** 31, -(2 ** 31) - 1, 2 ** 53, 1e308, -1e-308, 128, -129, 0.5,
    Infinity, -Infinity, 1e-320, 3.5e38, 700_000_000, 9e15, '5881580-07-11', '-5877641-06-23', '275760-09-14 00:00:00',
  ),
  fc.constantFrom(...EXPONENTS),
  fc.constantFrom(...EXPONENTS).map(Number),
  fc.constantFrom(...HUGE),
)

/** A valid record with some fields replaced, dropped or added, and an odd `_kind`. */
const mutatedRecord = fc
  .record({
    replace: fc.dictionary(fc.constantFrom(...Object.keys(VALID)), nasty, { maxKeys: 3 }),
    drop: fc.subarray(Object.keys(VALID), { maxLength: 2 }),
    extra: fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue(), { maxKeys: 1 }),
    kind: fc.option(fc.oneof(fc.constantFrom('+I', '-U', '+U', '-D', 'I', '+i', '', 'constructor', 'toString', { toString: false }, ['+I']), fc.jsonValue()), { nil: undefined }),
  })
  .map(({ replace, drop, extra, kind }) => {
    const r: Record<string, unknown> = { ...VALID, ...replace }
    for (const k of drop) delete r[k]
    Object.assign(r, extra)
    if (kind !== undefined) r._kind = kind
    return r
  })

const anyRecordValue = fc.oneof(mutatedRecord, mutatedRecord, fc.jsonValue())

/** A mutated record with, now and then, a value nested past any stack (not for JSON.stringify). */
const anyParsedRecord = fc.oneof(
  { weight: 8, arbitrary: anyRecordValue },
  { weight: 1, arbitrary: fc.tuple(mutatedRecord, fc.constantFrom(...Object.keys(VALID), '_kind')).map(([r, k]) => ({ ...r, [k]: deepArray })) },
  { weight: 1, arbitrary: fc.constant(deepArray) },
)

/**
 * Record lines as text, for what an object cannot hold: a key given twice, number literals
 * with exponents or more digits than a double keeps, nesting deeper than the parser allows.
 */
const hostileLine = fc.oneof(
  fc.tuple(fc.constantFrom(...Object.keys(VALID), '_kind', '_table'), nasty).map(([k, v]) => JSON.stringify(VALID).replace(/}$/, `,${JSON.stringify(k)}:${JSON.stringify(v)}}`)),
  fc.tuple(fc.constantFrom('qty', 'price', 'x', 'day', 'ts', 'small', 'id'), fc.constantFrom(...EXPONENTS)).map(([k, e]) => JSON.stringify({ ...VALID, [k]: 0 }).replace(`"${k}":0`, `"${k}":${e}`)),
  fc.tuple(fc.constantFrom('qty', 'x', 'raw'), fc.integer({ min: 60, max: 5000 })).map(([k, depth]) => JSON.stringify({ ...VALID, [k]: 0 }).replace(`"${k}":0`, `"${k}":${'['.repeat(depth)}${']'.repeat(depth)}`)),
  fc.constantFrom('{"dt":"2024-05-01","id":1,"id":2}', '{"dt":"2024-05-01","dt":"2024-05-01","id":1}', '{"dt":"2024-05-01","id":1,"_kind":"+I","_kind":"-D"}', '{"_table":"t","dt":"2024-05-01","id":1,"_table":"t"}'),
)

function expectInputError(e: unknown, where?: string): void {
  if (!(e instanceof StrataInputError)) throw new Error(`expected a StrataInputError, got ${(e as Error)?.name}: ${(e as Error)?.message}`, { cause: e })
  expect(e.message.length).toBeGreaterThan(10)
  if (where) expect(e.message.startsWith(where)).toBe(true)
}

async function keysOf(store: ObjectStore): Promise<string[]> {
  return (await store.list('')).map((o) => o.key)
}

describe('the CLI record parser (recordFromJson) on arbitrary JSON', () => {
  it('returns a full row or throws a StrataInputError naming the record', async () => {
    const view = (await Table.create(new MemoryStore(), SCHEMA)).view
    fc.assert(
      fc.property(anyParsedRecord, (obj) => {
        try {
          const { row } = recordFromJson(view, obj, 'line 7')
          expect(row).toHaveLength(view.fields.length)
        } catch (e) {
          expectInputError(e, 'line 7')
        }
      }),
      RUN,
    )
  })
})

describe('values outside what the column stores (found by the fuzzer, seed -639260151)', () => {
  it.each([
    ['day', -2147483649, /field 'day' \(DATE\) expected .*32-bit range, got -2147483649/],
    ['day', 2147483648, /field 'day' \(DATE\)/],
    ['day', '9999999-01-01', /field 'day' \(DATE\)/],
    ['ts', '99999999-01-01 00:00:00', /field 'ts' \(TIMESTAMP\(3\)\) expected .*64-bit microsecond range/],
    ['ts', 2 ** 60, /field 'ts'/],
  ])('%s = %j is refused naming the field and what fits', async (field, value, message) => {
    const view = (await Table.create(new MemoryStore(), SCHEMA)).view
    expect(() => recordFromJson(view, { ...VALID, [field]: value }, 'line 3')).toThrow(message)
    expect(() => recordFromJson(view, { ...VALID, [field]: value }, 'line 3')).toThrow(StrataInputError)
  })

  it('the edges still fit', async () => {
    const view = (await Table.create(new MemoryStore(), SCHEMA)).view
    expect(recordFromJson(view, { ...VALID, day: -2147483648 }, 'x').row).toHaveLength(view.fields.length)
    expect(recordFromJson(view, { ...VALID, day: 2147483647 }, 'x').row).toHaveLength(view.fields.length)
  })
})

describe('a rejected CLI write commits nothing', () => {
  it('parsing every line first, then writeBatch: any bad line or refused -D leaves the object list unchanged', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(anyParsedRecord, { minLength: 1, maxLength: 6 }), async (objs) => {
        const store = new MemoryStore()
        const table = await Table.create(store, SCHEMA)
        const before = await keysOf(store)
        try {
          const records = objs.map((o, i) => ({ ...recordFromJson(table.view, o, `line ${i + 1}`), where: `line ${i + 1}` }))
          await writeBatch(table, records)
        } catch (e) {
          expectInputError(e, 'line ')
          expect(await keysOf(store)).toEqual(before)
          return
        }
        // accepted: one APPEND snapshot (none when the records merged away to nothing)
        expect(await table.snapshots.latestId()).toBeLessThanOrEqual(1)
        expect((await readAll(table)).length).toBeLessThanOrEqual(objs.length)
      }),
      { ...RUN, numRuns: 100 },
    )
  })
})

describe('the writer (ingest) on arbitrary bodies', () => {
  it('never throws: each record is committed or rejected with a reason; an all-rejected batch writes nothing to the table', async () => {
    const body = fc.oneof(
      fc.string(),
      fc.jsonValue().map((v) => JSON.stringify(v)),
      anyRecordValue.map((v) => JSON.stringify(v)),
      hostileLine,
      hostileLine,
      fc.constantFrom('', '{', 'null', '[]', '"x"', '{"_table": 5}', '{"_table": "nope"}'),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(body, { minLength: 1, maxLength: 8 }), async (bodies) => {
        const store = new MemoryStore()
        const rejects = new MemoryStore()
        const table = await Table.create(store, SCHEMA)
        const before = await keysOf(store)
        const records = bodies.map((b, i) => ({ id: `m${i}`, source: `q#m${i}`, body: b }))
        const res = await ingest(records, { resolve: async (n) => (n === 't' ? { table, jobs: null } : null), defaultTable: 't', rejects, commitUser: 'w' })
        expect(res.failedIds).toEqual([])
        const committed = res.tables.reduce((n, t) => n + t.rows, 0)
        expect(committed + res.rejected).toBe(records.length)
        const lines = (await Promise.all((await rejects.list('')).map(async (o) => new TextDecoder().decode((await rejects.get(o.key))!))))
          .join('')
          .split('\n')
          .filter(Boolean)
          .map((l) => JSON.parse(l) as { reason: string; id: string; record: string })
        expect(lines).toHaveLength(res.rejected)
        for (const l of lines) {
          expect(l.reason.length).toBeGreaterThan(5)
          expect(l.record).toBe(bodies[Number(l.id.slice(1))])
        }
        if (committed === 0) expect(await keysOf(store)).toEqual(before)
        else expect(await table.snapshots.latestId()).toBe(1)
      }),
      { ...RUN, numRuns: 150 },
    )
  })
})

const typeText = fc.oneof(
  fc.constantFrom(
    'INT', 'STRING', 'BIGINT NOT NULL', 'DECIMAL(38, 18)', 'DECIMAL(39, 0)', 'DECIMAL(5, 6)', 'DECIMAL(0, 0)', 'VARCHAR(0)', 'CHAR(2147483648)',
    'TIMESTAMP(6)', 'TIMESTAMP(7)', 'TIMESTAMP(-1)', 'BYTES', 'BINARY(3)', 'ARRAY<INT>', 'MAP<STRING, INT>', 'int', ' INT ', 'INT NULL', 'DECIMAL(10,2',
    'TIMESTAMP WITH LOCAL TIME ZONE', 'DATE', 'BOOLEAN', 'FLOAT', 'VARCHAR(1)', 'DOUBLE PRECISION',
  ),
  fc.string({ maxLength: 12 }),
  fc.jsonValue(),
)

const optionEntry = fc.oneof(
  fc.tuple(fc.constantFrom(...OPTION_SPECS.map((s) => s.key), 'merge-engine', 'sequence.field', 'fields.a.aggregate-function', 'fields.zz.aggregate-function', 'ignore-delete', 'partial-update.remove-record-on-delete'), nasty),
  fc.tuple(
    fc.constantFrom(...OPTION_SPECS.map((s) => s.key), 'merge-engine', 'fields.a.aggregate-function', 'sequence.field'),
    fc.constantFrom('0', '1', '-1', '2', '3', '2147483648', '1 kb', '0 b', 'abc', 'true', 'FALSE', 'x', '1 h', '-1 s', 'first-row', 'partial-update', 'aggregation', 'deduplicate', 'sum', 'max', 'a', 'b', 'id', 'a,b', 'zstd', 'none', 'data/', '../x'),
  ),
  fc.tuple(fc.string({ maxLength: 10 }), fc.string({ maxLength: 6 })),
)

/** A valid schema with its fields, keys and options mutated. */
const mutatedSchema = fc
  .record({
    types: fc.array(fc.option(typeText, { nil: undefined }), { minLength: 3, maxLength: 3 }),
    names: fc.array(fc.option(fc.oneof(fc.constantFrom('id', 'a', '', '_KEY_x', '_SEQUENCE_NUMBER', 'dt'), fc.jsonValue()), { nil: undefined }), { minLength: 3, maxLength: 3 }),
    primaryKeys: fc.option(fc.oneof(fc.subarray(['dt', 'id', 'a', 'b', 'nope']), fc.jsonValue()), { nil: undefined }),
    partitionKeys: fc.option(fc.oneof(fc.subarray(['dt', 'id', 'a', 'nope']), fc.jsonValue()), { nil: undefined }),
    options: fc.oneof(fc.array(optionEntry, { maxLength: 4 }).map((es) => Object.fromEntries(es)), fc.jsonValue()),
    extraKey: fc.option(fc.constantFrom('comment', 'owner', 'fields'), { nil: undefined }),
  })
  .map(({ types, names, primaryKeys, partitionKeys, options, extraKey }) => {
    const fields: Record<string, unknown>[] = [
      { name: 'dt', type: 'STRING' },
      { name: 'id', type: 'INT' },
      { name: 'a', type: 'INT' },
      { name: 'b', type: 'STRING' },
    ]
    types.forEach((t, i) => t !== undefined && (fields[i + 1].type = t))
    names.forEach((n, i) => n !== undefined && (fields[i + 1].name = n))
    const s: Record<string, unknown> = { fields, primaryKeys: primaryKeys ?? ['dt', 'id'], partitionKeys: partitionKeys ?? ['dt'], options }
    if (extraKey === 'owner') s.owner = 'me'
    else if (extraKey === 'comment') s.comment = 5
    else if (extraKey === 'fields') s.fields = {}
    return s
  })

describe('schema files and table options', () => {
  it('createSchema on arbitrary JSON: a StrataInputError or a schema that round-trips', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), mutatedSchema), (input) => {
        let schema
        try {
          schema = createSchema(input, 1)
        } catch (e) {
          expectInputError(e, 'schema')
          return
        }
        expect(parseSchema(serializeSchema(schema), 'x')).toEqual(schema)
        describeSchema(schema)
      }),
      RUN,
    )
  })

  it('Table.create with a mutated schema: refused with nothing stored, or a table that takes a write and reads it back', async () => {
    await fc.assert(
      fc.asyncProperty(mutatedSchema, async (input) => {
        const store = new MemoryStore()
        let table: Table
        try {
          table = await Table.create(store, input)
        } catch (e) {
          expectInputError(e)
          expect(await keysOf(store)).toEqual([])
          return
        }
        // an accepted schema must work, not fail at the first write (a deferred crash)
        const row: Record<string, unknown> = {}
        for (const f of table.view.fields) row[f.name] = sample(f.type.root)
        let rec
        try {
          rec = recordFromJson(table.view, row, 'probe')
        } catch (e) {
          expectInputError(e, 'probe') // e.g. CHAR(1) refuses the probe's string
          return
        }
        await writeBatch(table, [rec])
        expect(await readAll(table)).toHaveLength(1)
      }),
      { ...RUN, numRuns: 150 },
    )
  })

  it('validateOptions on arbitrary maps: a StrataInputError naming the option, or options coreOptions reads without a crash', () => {
    fc.assert(
      fc.property(fc.oneof(fc.array(optionEntry, { maxLength: 5 }).map((es) => Object.fromEntries(es)), fc.jsonValue()), (raw) => {
        let out
        try {
          out = validateOptions(raw)
        } catch (e) {
          expectInputError(e)
          expect(e instanceof Error && /option|options/.test(e.message)).toBe(true)
          return
        }
        const o = coreOptions(out)
        expect(Number.isFinite(o.bucket)).toBe(true)
      }),
      RUN,
    )
  })
})

function sample(root: string): unknown {
  switch (root) {
    case 'BOOLEAN': return true
    case 'TINYINT': case 'SMALLINT': case 'INT': case 'BIGINT': return 1
    case 'FLOAT': case 'DOUBLE': return 1.5
    case 'DECIMAL': return '0'
    case 'BINARY': case 'VARBINARY': return 'AA=='
    case 'DATE': return '2024-05-01'
    case 'TIMESTAMP': return '2024-05-01 00:00:00'
    default: return 'v'
  }
}
