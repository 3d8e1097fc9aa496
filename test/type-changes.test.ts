// Column type changes (ALTER TABLE … MODIFY) as Paimon makes them: which changes an alter
// takes and refuses (Paimon's DataTypeCasts + CastExecutors, SchemaManager's conditions), and
// what a row written before the change reads as after it — through a read, a lookup and a
// compaction by either merge path, whose output holds the new type. The model of a value is
// Paimon's cast (lib/format/casts.ts resolveCast), which test/interop-schema.test.ts holds to
// Paimon's own CastExecutors value by value; the spot checks below pin values from Paimon's
// sources by hand, so the model is not only checked against itself.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { CastError, resolveCast, typeChangeKind } from '../lib/format/casts.ts'
import { serializeBinaryRow } from '../lib/format/binary-row.ts'
import { formatDataType } from '../lib/format/data-type.ts'
import { alterTable, applySchemaChanges } from '../lib/handle/alter.ts'
import { Table } from '../lib/handle/table.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { lookup, planScan, readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { RefusedError, StrataInputError } from '../lib/errors.ts'
import type { TableSchema, Value } from '../lib/types.ts'
import { RowKind } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { TYPE_SAMPLES, sourceValue, type } from './helpers/type-cases.ts'

const cast = (from: string, to: string, v: Value): Value => resolveCast(type(from), type(to))!(v)
const utf8 = (s: string) => new TextEncoder().encode(s)

describe("Paimon's casts, spot checks from its sources", () => {
  const cases: [string, string, Value, Value | RegExp][] = [
    // numeric → numeric: Java's narrowing (wraps), (int) of a double truncates and saturates
    ['INT', 'TINYINT', 383, 127],
    ['INT', 'TINYINT', 200, -56],
    ['BIGINT', 'INT', 2n ** 32n + 5n, 5],
    ['DOUBLE', 'INT', -2.9, -2],
    ['DOUBLE', 'BIGINT', 1e30, 9223372036854775807n],
    ['DOUBLE', 'INT', NaN, 0],
    ['BIGINT', 'FLOAT', 9007199254740993n, 9007199254740992],
    // DECIMAL: HALF_UP to the new scale, null when the precision overflows; to an integer toward zero
    ['DECIMAL(10, 2)', 'DECIMAL(3, 1)', 125n, 13n],
    ['DECIMAL(10, 2)', 'DECIMAL(3, 1)', -125n, -13n],
    ['DECIMAL(10, 2)', 'DECIMAL(3, 1)', 123456n, null],
    ['DECIMAL(10, 2)', 'INT', -199n, -1],
    ['INT', 'DECIMAL(3, 1)', 100, null],
    ['FLOAT', 'DECIMAL(20, 18)', Math.fround(0.1), 100000001490116120n],
    ['DOUBLE', 'DECIMAL(5, 2)', 2.675, 268n],
    ['BOOLEAN', 'DECIMAL(5, 2)', true, 100n],
    // to strings: Java's toString, cut to the length, CHAR padded
    ['INT', 'CHAR(5)', 42, '42   '],
    ['DOUBLE', 'STRING', 1e21, '1.0E21'],
    ['FLOAT', 'STRING', 0.5, '0.5'],
    ['DECIMAL(10, 2)', 'VARCHAR(4)', -5n, '-0.0'],
    ['BOOLEAN', 'STRING', false, 'false'],
    ['STRING', 'CHAR(3)', 'abcdef', 'abc'],
    ['TIMESTAMP(6)', 'STRING', 1_700_000_000_000_000n, '2023-11-14 22:13:20.000000'],
    ['TIMESTAMP(3)', 'STRING', 1_700_000_000_123_000n, '2023-11-14 22:13:20.123'],
    ['TIMESTAMP(0)', 'STRING', 1_700_000_000_000_000n, '2023-11-14 22:13:20'],
    ['DATE', 'STRING', 19000, '2022-01-08'],
    ['BYTES', 'STRING', utf8('héllo'), 'héllo'],
    // a leading EF BB BF is the string's first character, U+FEFF (Java's UTF-8 decoding keeps it)
    ['BYTES', 'STRING', new Uint8Array([0xef, 0xbb, 0xbf, 0x41]), '\uFEFFA'],
    // from strings: Paimon's parsers, and what they refuse
    ['STRING', 'INT', '12.9', 12],
    ['STRING', 'INT', '+7', 7],
    ['STRING', 'INT', ' 1', /invalid character/],
    ['STRING', 'TINYINT', '128', /overflow/],
    ['STRING', 'BIGINT', '9223372036854775808', /overflow/],
    ['STRING', 'DOUBLE', ' 1e3d ', 1000],
    ['STRING', 'DOUBLE', '0x1p3', 8],
    ['STRING', 'DECIMAL(5, 2)', '1.005E1', 1005n],
    ['STRING', 'DECIMAL(5, 2)', 'abc', /not a decimal/],
    ['STRING', 'BOOLEAN', 'YES', true],
    ['STRING', 'BOOLEAN', 'maybe', /expected t, true/],
    ['STRING', 'DATE', '2024-03-01', 19783],
    ['STRING', 'DATE', '2024-3-1 10:00', 19783],
    ['STRING', 'DATE', '2023-02-29', /not a valid date/],
    ['STRING', 'DATE', '100', 100],
    ['STRING', 'TIMESTAMP(3)', '2024-02-30 10:11:12.123456', 1709201472123000n],
    ['STRING', 'TIMESTAMP(6)', '2024-01-01 24:00:00', 1704153600000000n],
    ['STRING', 'TIMESTAMP(3)', '1700000000123', 1700000000123000n],
    ['STRING', 'TIMESTAMP(0)', '1700000000', 1700000000000000n],
    ['STRING', 'TIMESTAMP(4)', '1700000000', /precision 0, 3 or 6/],
    ['STRING', 'BYTES', 'héllo', utf8('héllo')],
    ['STRING', 'BINARY(3)', 'a', new Uint8Array([97, 0, 0])],
    ['BYTES', 'VARBINARY(2)', utf8('abc'), utf8('ab')],
    // temporal
    ['TIMESTAMP(6)', 'DATE', -1n, 0],
    ['TIMESTAMP(6)', 'DATE', -86_400_000_001n, -1],
    ['DATE', 'TIMESTAMP(3)', 1, 86_400_000_000n],
    ['INT', 'TIMESTAMP(6)', 60, 60_000_000n],
    ['TIMESTAMP(6)', 'BIGINT', -1_500_000n, -1n],
    ['TIMESTAMP(6)', 'TIMESTAMP(0)', 1_999_999n, 1_000_000n],
    ['TIMESTAMP(6)', 'TIMESTAMP(0)', -1_500_000n, -1_000_000n],
    ['TIMESTAMP(6)', 'TIMESTAMP(4)', 5n, 5n],
    ['TIMESTAMP(6)', 'TIMESTAMP(4)', 1_000_150n, 1_000_100n],
    ['BOOLEAN', 'INT', true, 1],
    ['SMALLINT', 'BOOLEAN', -3, true],
  ]
  for (const [from, to, v, want] of cases) {
    it(`${from} → ${to}: ${String(v)}`, () => {
      if (want instanceof RegExp) {
        expect(() => cast(from, to, v)).toThrow(CastError)
        expect(() => cast(from, to, v)).toThrow(want)
      } else expect(cast(from, to, v)).toEqual(want)
    })
  }
})

const KEY_SCHEMA = (from: string, options: Record<string, string> = {}) => ({
  fields: [{ name: 'k', type: 'INT' }, { name: 'v', type: from }],
  primaryKeys: ['k'],
  options: { bucket: '1', ...options },
})

async function put(t: Table, rows: [number, Value][]): Promise<void> {
  await writeBatch(t, rows.map(([k, v]) => ({ kind: RowKind.INSERT, row: [k, v], where: `k ${k}` })))
}

/** Every (from, to) of the sample types that Paimon allows with explicit casts, the type itself left out. */
const ALLOWED: [string, string][] = TYPE_SAMPLES.flatMap((a) => TYPE_SAMPLES.filter((b) => b !== a && typeChangeKind(type(a), type(b), true) !== null).map((b) => [a, b] as [string, string]))

describe('a type change: rows written before read through the cast, and compaction writes the new type', () => {
  it('property: read, lookup and compaction (row and columnar merge) equal Paimon’s cast of each value; a value that does not convert fails them naming the field, writing nothing', async () => {
    const arb = fc
      .constantFrom(...ALLOWED)
      .chain(([from, to]) => fc.tuple(fc.constant(from), fc.constant(to), fc.array(sourceValue(type(from), type(to)), { minLength: 1, maxLength: 6 }), fc.constantFrom('row' as const, 'columnar' as const)))
    await fc.assert(
      fc.asyncProperty(arb, async ([from, to, vals, mergePath]) => {
        const store = new MemoryStore()
        const t0 = await Table.create(store, KEY_SCHEMA(from))
        // two files over the same keys: a compaction merges them (a lone file would only move up)
        await put(t0, vals.map((_, k) => [k, null]))
        await put(t0, vals.map((v, k) => [k, v]))
        const t1 = await alterTable(store, [{ kind: 'update-column-type', name: 'v', type: to }])
        expect(formatDataType(t1.schema.fields[1].type)).toBe(formatDataType(type(to)))
        let model: Value[][] | null = []
        try {
          model = vals.map((v, k) => [k, v === null ? null : cast(from, to, v)])
        } catch (e) {
          if (!(e instanceof CastError)) throw e
          model = null
        }
        const compact = () => compactBucket(t1, { partition: serializeBinaryRow([], []), bucket: 0, full: true, mergePath })
        if (model === null) {
          await expect(readAll(t1)).rejects.toThrow(/field 'v' of data file data-.*: cannot cast/)
          const before = (await store.list('')).map((o) => o.key).sort()
          await expect(compact()).rejects.toThrow(/field 'v' of data file/)
          expect((await store.list('')).map((o) => o.key).sort()).toEqual(before)
          return
        }
        expect(await readAll(t1)).toEqual(model)
        expect(await lookup(t1, { k: vals.length - 1 })).toEqual(model[vals.length - 1])
        await compact()
        const t2 = await Table.open(store)
        expect(await readAll(t2)).toEqual(model)
        // the compacted file is in the new schema, its values of the new type
        const files = (await planScan(t2)).splits.flatMap((sp) => sp.files)
        expect(files.map((e) => Number(e.file.schemaId))).toEqual([1])
      }),
      { numRuns: 150, seed: 20261206 },
    )
  }, 120_000)

  it('a DECIMAL that overflows reads null (Paimon\'s cast gives null), and compaction writes null; in a NOT NULL column the read is refused naming the field', async () => {
    for (const nullable of [true, false]) {
      const store = new MemoryStore()
      const t0 = await Table.create(store, KEY_SCHEMA(nullable ? 'DECIMAL(10, 2)' : 'DECIMAL(10, 2) NOT NULL'))
      await put(t0, [[1, 123456n], [2, 125n]])
      await put(t0, [[1, 123456n]])
      const t1 = await alterTable(store, [{ kind: 'update-column-type', name: 'v', type: 'DECIMAL(3, 1)' }])
      if (nullable) {
        expect(await readAll(t1)).toEqual([[1, null], [2, 13n]])
        await compactBucket(t1, { partition: serializeBinaryRow([], []), bucket: 0, full: true })
        expect(await readAll(await Table.open(store))).toEqual([[1, null], [2, 13n]])
      } else {
        await expect(readAll(t1)).rejects.toThrow(/field 'v' of data file data-.*: the cast of 123456 to DECIMAL\(3, 1\) overflows to null, and the column is NOT NULL/)
        await expect(compactBucket(t1, { partition: serializeBinaryRow([], []), bucket: 0, full: true })).rejects.toThrow(/overflows to null, and the column is NOT NULL/)
      }
    }
  })

  it('widenings that lose nothing keep working (INT → BIGINT, FLOAT → DOUBLE, DECIMAL up, VARCHAR longer)', async () => {
    const store = new MemoryStore()
    const t0 = await Table.create(store, { fields: [{ name: 'k', type: 'INT' }, { name: 'a', type: 'INT' }, { name: 'b', type: 'FLOAT' }, { name: 'c', type: 'DECIMAL(5, 2)' }, { name: 'd', type: 'VARCHAR(3)' }], primaryKeys: ['k'], options: { bucket: '1' } })
    await writeBatch(t0, [{ kind: RowKind.INSERT, row: [1, -7, 1.5, 12345n, 'abc'], where: 'r' }])
    const t1 = await alterTable(store, [
      { kind: 'update-column-type', name: 'a', type: 'BIGINT' },
      { kind: 'update-column-type', name: 'b', type: 'DOUBLE' },
      { kind: 'update-column-type', name: 'c', type: 'DECIMAL(10, 4)' },
      { kind: 'update-column-type', name: 'd', type: 'STRING' },
    ])
    expect(await readAll(t1)).toEqual([[1, -7n, 1.5, 1234500n, 'abc']])
  })
})

describe("which changes an alter takes: Paimon's, and its refusals", () => {
  const schema = (options: Record<string, string> = {}): TableSchema => ({
    version: 3,
    id: 0,
    fields: [
      { id: 0, name: 'k', type: { root: 'INT', nullable: false } },
      { id: 1, name: 'p', type: { root: 'VARCHAR', nullable: false, length: 2147483647 } },
      ...TYPE_SAMPLES.map((t, i) => ({ id: i + 2, name: `c${i}`, type: type(t) })),
    ],
    highestFieldId: TYPE_SAMPLES.length + 1,
    partitionKeys: ['p'],
    primaryKeys: ['k', 'p'],
    options: { bucket: '1', ...options },
    timeMillis: 0,
  })

  it('property: an alter takes every pair of sample types exactly when the cast table (lib/format/casts.ts, checked against Paimon in interop-schema) allows it, with and without disable-explicit-type-casting; a refusal names the column, both types and what is allowed', () => {
    fc.assert(
      fc.property(fc.nat({ max: TYPE_SAMPLES.length - 1 }), fc.constantFrom(...TYPE_SAMPLES, 'STRING NULL', 'INT NULL'), fc.boolean(), (i, to, noExplicit) => {
        const s = schema(noExplicit ? { 'disable-explicit-type-casting': 'TRUE' } : {})
        const from = s.fields[i + 2].type
        const kind = typeChangeKind(from, { ...type(to), nullable: true }, !noExplicit)
        const apply = () => applySchemaChanges(s, [{ kind: 'update-column-type', name: `c${i}`, type: to }])
        if (kind === null) {
          expect(apply).toThrow(StrataInputError)
          expect(apply).toThrow(new RegExp(`cannot change the type of 'c${i}' from ${formatDataType(from).replace(/[()]/g, '\\$&')} to .*: Paimon has no such cast; from .* it allows (implicitly to|no implicit change)`))
        } else expect(formatDataType(apply().fields[i + 2].type)).toBe(formatDataType({ ...type(to), nullable: true }))
      }),
      { numRuns: 400, seed: 7 },
    )
  })

  it('explicit casts are off with the stored option, implicit ones stay; keys and partition columns never change type; NOT NULL is refused first', () => {
    const s = schema({ 'disable-explicit-type-casting': 'true' })
    const int = TYPE_SAMPLES.indexOf('INT')
    const str = TYPE_SAMPLES.indexOf('STRING')
    expect(() => applySchemaChanges(s, [{ kind: 'update-column-type', name: `c${str}`, type: 'BYTES' }])).toThrow(/from STRING to BYTES: Paimon has no such cast; .*explicit casts to .*BINARY, VARBINARY\/BYTES.* are off: option 'disable-explicit-type-casting' is true/)
    expect(applySchemaChanges(s, [{ kind: 'update-column-type', name: `c${int}`, type: 'BIGINT' }]).fields[int + 2].type.root).toBe('BIGINT')
    expect(applySchemaChanges(schema(), [{ kind: 'update-column-type', name: `c${str}`, type: 'BYTES' }]).fields[str + 2].type.root).toBe('VARBINARY')
    expect(() => applySchemaChanges(schema(), [{ kind: 'update-column-type', name: 'k', type: 'BIGINT' }])).toThrow(/'k' is a primary key field; Paimon cannot update a primary key's type/)
    expect(() => applySchemaChanges(schema(), [{ kind: 'update-column-type', name: 'p', type: 'BYTES' }])).toThrow(/'p' is a partition key; Paimon cannot update a partition column's type/)
    expect(() => applySchemaChanges(schema(), [{ kind: 'update-column-type', name: `c${int}`, type: 'BIGINT NOT NULL' }])).toThrow(/cannot make 'c\d+' NOT NULL/)
    // Paimon has no cast from BOOLEAN to BOOLEAN or DATE to DATE, so it refuses even those
    const bool = TYPE_SAMPLES.indexOf('BOOLEAN')
    expect(() => applySchemaChanges(schema(), [{ kind: 'update-column-type', name: `c${bool}`, type: 'BOOLEAN' }])).toThrow(/from BOOLEAN to BOOLEAN: Paimon has no such cast/)
  })

  it('a table with Iceberg metadata takes only the changes Iceberg follows with the values unchanged', async () => {
    const store = `memory://type-changes-iceberg/wh/db.db/t`
    await Table.create(store, KEY_SCHEMA('INT', { 'metadata.iceberg.storage': 'table-location' }))
    const err = await alterTable(store, [{ kind: 'update-column-type', name: 'v', type: 'STRING' }]).catch((e) => e)
    expect(err).toBeInstanceOf(RefusedError)
    expect(err.message).toMatch(/cannot change the type of 'v' from INT to STRING while the table keeps Iceberg metadata/)
    const t = await alterTable(store, [{ kind: 'update-column-type', name: 'v', type: 'BIGINT' }])
    expect(t.schema.fields[1].type.root).toBe('BIGINT')
  })
})
