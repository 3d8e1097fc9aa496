// Nested types (ARRAY, MAP, MULTISET, ROW) as value columns (docs/format.md "Nested types"):
// - types: SQL text and Paimon's schema JSON parse to the same type and print back; ROW field
//   ids as Paimon numbers them; refusals (keys, partitions, depth, shapes) name what is wrong;
// - values: random types and values, with nulls at every level and empty arrays and maps,
//   survive JSON (in and out), a data file (row reader and columnar reader), and a table's
//   writes and compactions, against a model (the latest record of each key);
// - bad nested input is refused naming the path inside the value.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { DuckDBInstance } from '@duckdb/node-api'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { MAX_NESTING_DEPTH, assignFieldIds, dataTypeJson, formatDataType, parseDataType } from '../lib/format/data-type.ts'
import { ColumnarFileReader } from '../lib/format/columnar-reader.ts'
import { physicalToValue, valueAt } from '../lib/format/columnar-types.ts'
import { readDataFile } from '../lib/format/data-file-reader.ts'
import { byteSource } from '../lib/format/data-file-source.ts'
import { writeDataFile } from '../lib/format/data-file-writer.ts'
import { Table } from '../lib/handle/table.ts'
import { alterTable } from '../lib/handle/alter.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { lookup, readAll } from '../lib/read/table-read.ts'
import { deserializeBinaryRow, serializeBinaryRow } from '../lib/format/binary-row.ts'
import { parseJsonLine } from '../lib/table/json-line.ts'
import { recordFromJson, valueFromJson, valueToJson } from '../lib/table/json-values.ts'
import { createSchema, parseSchema, serializeSchema } from '../lib/table/schema.ts'
import { recordValue } from '../lib/api/values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import type { DataField, DataType, KeyValue, MapValue, Value } from '../lib/types.ts'

const scratch = mkdtempSync(join(tmpdir(), 'strata-nested-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

// ---------------------------------------------------------------------------------------------
// Random types and values

const ATOMIC: DataType[] = [
  { root: 'INT', nullable: true },
  { root: 'BIGINT', nullable: true },
  { root: 'VARCHAR', nullable: true, length: 2147483647 },
  { root: 'BOOLEAN', nullable: true },
  { root: 'DOUBLE', nullable: true },
  { root: 'DECIMAL', nullable: true, precision: 5, scale: 2 },
  { root: 'DECIMAL', nullable: true, precision: 25, scale: 3 },
  { root: 'TIMESTAMP', nullable: true, precision: 3 },
  { root: 'VARBINARY', nullable: true, length: 2147483647 },
  { root: 'DATE', nullable: true },
]
const KEYS: DataType[] = [ATOMIC[0], ATOMIC[2], ATOMIC[1]]

const nullableArb = fc.boolean()
const typeArb: fc.Arbitrary<DataType> = fc.letrec<{ type: DataType; atomic: DataType }>((tie) => ({
  atomic: fc.tuple(fc.constantFrom(...ATOMIC), nullableArb).map(([t, n]) => ({ ...t, nullable: n })),
  type: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    tie('atomic'),
    fc.tuple(tie('type'), nullableArb).map(([element, nullable]): DataType => ({ root: 'ARRAY', nullable, element })),
    fc.tuple(fc.constantFrom(...KEYS), tie('type'), nullableArb).map(([key, value, nullable]): DataType => ({ root: 'MAP', nullable, key, value })),
    fc.tuple(fc.constantFrom(...KEYS), nullableArb).map(([element, nullable]): DataType => ({ root: 'MULTISET', nullable, element })),
    fc.tuple(fc.array(tie('type'), { minLength: 1, maxLength: 3 }), nullableArb).map(([types, nullable]): DataType => ({ root: 'ROW', nullable, fields: types.map((type, i) => ({ id: -1, name: `f${i}`, type })) })),
  ),
})).type

function atomicValueArb(t: DataType): fc.Arbitrary<Value> {
  switch (t.root) {
    case 'INT':
      return fc.integer()
    case 'BIGINT':
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n })
    case 'VARCHAR':
      return fc.constantFrom('', 'a', 'ç', 'a string longer than seven bytes', '\u{1F600}', 'b')
    case 'BOOLEAN':
      return fc.boolean()
    case 'DOUBLE':
      return fc.double({ noNaN: true, noDefaultInfinity: true }).map((x) => (Object.is(x, -0) ? 0 : x))
    case 'DECIMAL': {
      const limit = 10n ** BigInt(t.precision!) - 1n
      return fc.bigInt({ min: -limit, max: limit })
    }
    case 'TIMESTAMP':
      return fc.bigInt({ min: -(10n ** 12n), max: 10n ** 13n }).map((ms) => ms * 1000n)
    case 'VARBINARY':
      return fc.uint8Array({ maxLength: 12 })
    case 'DATE':
      return fc.integer({ min: -100000, max: 100000 })
    default:
      throw new Error(`no values for ${t.root}`)
  }
}

/** Values of `t`: null where nullable (and sometimes), maps with distinct non-null keys, multisets with counts >= 1. */
function valueArb(t: DataType): fc.Arbitrary<Value> {
  const nonNull = ((): fc.Arbitrary<Value> => {
    switch (t.root) {
      case 'ARRAY':
        return fc.array(valueArb(t.element!), { maxLength: 4 })
      case 'ROW':
        return fc.tuple(...t.fields!.map((f) => valueArb(f.type)))
      case 'MAP':
        return fc.uniqueArray(fc.tuple(atomicValueArb(t.key!), valueArb(t.value!)), { maxLength: 4, selector: ([k]) => valueToJson(t.key!, k) }).map((es): MapValue => ({ keys: es.map((e) => e[0]), values: es.map((e) => e[1]) }))
      case 'MULTISET':
        return fc.uniqueArray(fc.tuple(atomicValueArb(t.element!), fc.integer({ min: 1, max: 3 })), { maxLength: 4, selector: ([k]) => valueToJson(t.element!, k) }).map((es): MapValue => ({ keys: es.map((e) => e[0]), values: es.map((e) => e[1]) }))
      default:
        return atomicValueArb(t)
    }
  })()
  return t.nullable ? fc.option(nonNull, { nil: null, freq: 4 }) : nonNull
}

const field = (type: DataType, name = 'v', id = 1): DataField => ({ id, name, type: assignFieldIds(type, { id: 100 }) })

/** Values compared as text (bigints, bytes, -0 and maps in order all distinct). */
const text = (t: DataType, v: Value) => valueToJson(t, v)

// ---------------------------------------------------------------------------------------------

describe('nested types: parsing and printing', () => {
  it('SQL text and Paimon JSON parse to the same type, print back canonically, and ROW ids are numbered as Paimon numbers them', () => {
    const t = parseDataType("ARRAY<ROW<x ARRAY<INT NOT NULL>, `y z` MAP<INT, ROW<w BOOLEAN 'c'>> NOT NULL>>", 'x')
    expect(formatDataType(t)).toBe("ARRAY<ROW<`x` ARRAY<INT NOT NULL>, `y z` MAP<INT, ROW<`w` BOOLEAN COMMENT 'c'>> NOT NULL>>")
    // depth first, a field's own type before it (ReassignFieldId): w, then x, then `y z`
    const ids = assignFieldIds(t, { id: 4 })
    expect(JSON.stringify(dataTypeJson(ids))).toBe(
      '{"type":"ARRAY","element":{"type":"ROW","fields":[{"id":5,"name":"x","type":{"type":"ARRAY","element":"INT NOT NULL"}},{"id":7,"name":"y z","type":{"type":"MAP NOT NULL","key":"INT","value":{"type":"ROW","fields":[{"id":6,"name":"w","type":"BOOLEAN","description":"c"}]}}}]}}',
    )
    expect(formatDataType(parseDataType(dataTypeJson(ids), 'x'))).toBe(formatDataType(t))
  })

  it('random types round-trip through SQL text and through schema JSON', () => {
    fc.assert(
      fc.property(typeArb, (t) => {
        const sql = formatDataType(t)
        expect(formatDataType(parseDataType(sql, 'x'))).toBe(sql)
        const json = dataTypeJson(assignFieldIds(t, { id: 0 }))
        expect(dataTypeJson(parseDataType(json, 'x'))).toEqual(json)
      }),
      { numRuns: 200 },
    )
  })

  it('a schema stores nested types in their JSON form with ids after the column, and reads back', () => {
    const s = createSchema({ fields: [{ name: 'id', type: 'INT' }, { name: 'r', type: 'ROW<a INT, b ARRAY<ROW<c STRING>>>' }, { name: 'n', type: 'STRING' }], primaryKeys: ['id'] }, 0)
    expect(s.fields.map((f) => f.id)).toEqual([0, 1, 5])
    expect(s.highestFieldId).toBe(5)
    const back = parseSchema(serializeSchema(s), 'schema-0')
    expect(back.fields).toEqual(s.fields)
    expect(JSON.parse(serializeSchema(s)).fields[1].type).toEqual({ type: 'ROW', fields: [{ id: 2, name: 'a', type: 'INT' }, { id: 4, name: 'b', type: { type: 'ARRAY', element: { type: 'ROW', fields: [{ id: 3, name: 'c', type: 'STRING' }] } } }] })
  })

  it('refuses nested types in keys and partitions, too deep a type, bad text, and a stored ROW field without an id', () => {
    const create = (fields: { name: string; type: string }[], extra: object = {}) => () => createSchema({ fields, primaryKeys: ['id'], ...extra })
    expect(create([{ name: 'id', type: 'ARRAY<INT>' }])).toThrow(/primary key field 'id' has type ARRAY<INT>; as in Paimon, a primary key field must not be ARRAY, MAP, MULTISET or ROW/)
    expect(create([{ name: 'id', type: 'INT' }, { name: 'p', type: 'ROW<a INT>' }], { primaryKeys: ['id', 'p'], partitionKeys: ['p'] })).toThrow(/primary key field 'p' has type ROW/)
    const deep = 'ARRAY<'.repeat(MAX_NESTING_DEPTH) + 'INT' + '>'.repeat(MAX_NESTING_DEPTH)
    expect(() => parseDataType('ARRAY<'.repeat(MAX_NESTING_DEPTH - 1) + 'INT' + '>'.repeat(MAX_NESTING_DEPTH - 1), 't')).not.toThrow()
    expect(() => parseDataType(deep, 't')).toThrow(`nests deeper than ${MAX_NESTING_DEPTH} levels`)
    expect(() => parseDataType('MAP<INT>', 't')).toThrow(/expected ',' between the key and value types of a MAP/)
    expect(() => parseDataType('ROW<a INT, a STRING>', 't')).toThrow(/ROW field 'a' is defined twice/)
    expect(() => parseDataType('ARRAY<FOO>', 't')).toThrow(/type "FOO" is not supported/)
    const stored = serializeSchema(createSchema({ fields: [{ name: 'id', type: 'INT' }, { name: 'r', type: 'ROW<a INT>' }], primaryKeys: ['id'] }, 0)).replace('"id": 2,', '')
    expect(() => parseSchema(stored, 'schema-0')).toThrow(/every ROW field inside a nested type needs its "id"/)
  })
})

describe('nested values: JSON, data files and tables', () => {
  it('JSON in and out, and a data file read by the row and the columnar reader, give back every value', async () => {
    await fc.assert(
      fc.asyncProperty(
        typeArb.chain((t) => fc.tuple(fc.constant(t), fc.array(valueArb(t), { minLength: 1, maxLength: 30 }))),
        async ([type, values]) => {
          const f = field(type)
          for (const v of values) {
            const j = valueToJson(f.type, v)
            expect(text(f.type, valueFromJson(f, (parseJsonLine(`{"v":${j}}`, 'line') as Record<string, unknown>).v, 'line'))).toBe(j)
            expect(text(f.type, valueFromJson(f, JSON.parse(JSON.stringify(recordValue(f, v), (_, x) => (typeof x === 'bigint' ? x.toString() : x instanceof Uint8Array ? Buffer.from(x).toString('base64') : x))), 'api'))).toBe(j)
          }
          const key: DataField = { id: 0, name: 'id', type: { root: 'INT', nullable: false } }
          const layout = { keyFields: [key], valueFields: [key, f] }
          const records: KeyValue[] = values.map((v, i) => ({ key: [i], seq: BigInt(i), kind: 0, value: [i, v] }))
          const { bytes } = writeDataFile(layout, records, { pageSize: 64, rowGroupRows: 7 })
          const back = await readDataFile(byteSource(bytes), layout)
          expect(back.map((kv) => text(f.type, kv.value[1]))).toEqual(values.map((v) => text(f.type, v)))
          const reader = await ColumnarFileReader.open(byteSource(bytes), layout)
          const columnar: Value[] = []
          // (columns hold physical values: a top-level TIMESTAMP(0..3) in millis)
          const toValue = physicalToValue(f.type) ?? ((p: unknown) => p as Value)
          for await (const b of reader.rowGroups()) for (let r = 0; r < b.rows; r++) columnar.push(toValue(valueAt(b.columns[4], r)))
          expect(columnar.map((v) => text(f.type, v))).toEqual(values.map((v) => text(f.type, v)))
        },
      ),
      // a nested column with no level at all (every part NOT NULL, no list): its pages carry no levels
      { numRuns: 60, examples: [[[{ root: 'ROW', nullable: false, fields: [{ id: -1, name: 'f0', type: { root: 'INT', nullable: false } }] }, [[0], [-5]]]]] },
    )
  })

  it('writes, compactions and reads of a table with a random nested column equal the latest record of each key', async () => {
    let n = 0
    await fc.assert(
      fc.asyncProperty(
        typeArb.chain((t) =>
          fc.tuple(
            fc.constant(t),
            fc.array(fc.tuple(fc.array(fc.tuple(fc.integer({ min: 0, max: 6 }), valueArb(t)), { minLength: 1, maxLength: 8 }), fc.boolean()), { minLength: 1, maxLength: 4 }),
            fc.constantFrom<Record<string, string>>({}, { 'deletion-vectors.enabled': 'true' }, { 'changelog-producer': 'lookup' }, { 'merge-engine': 'first-row' }),
          ),
        ),
        async ([type, commits, options]) => {
          const v = { ...type, nullable: true }
          const dv = options['deletion-vectors.enabled'] === 'true' || options['merge-engine'] === 'first-row'
          const firstRow = options['merge-engine'] === 'first-row'
          const table = await Table.create(join(scratch, `t${n++}`), {
            fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: dataTypeJson(assignFieldIds(v, { id: -1 })) as string }],
            primaryKeys: ['id'],
            options: { bucket: '2', ...options },
          })
          const f = table.view.fields[1]
          const model = new Map<number, string>()
          for (const [rows, compact] of commits) {
            // JSON lines in, as a writer takes them (numbers exact)
            const recs = rows.map(([id, x]) => parseJsonLine(`{"id":${id},"v":${valueToJson(f.type, x)}}`, 'line'))
            await writeBatch(table, recs.map((r, i) => ({ ...recordFromJson(table.view, r, `record ${i}`), where: `record ${i}` })))
            for (const [id, x] of rows) if (!firstRow || !model.has(id)) model.set(id, text(f.type, x))
            if (compact || dv) await compactTable(table, { full: compact })
          }
          const rows = await readAll(table)
          expect(new Map(rows.map((r) => [r[0] as number, text(f.type, r[1])]))).toEqual(model)
          // point lookups read the nested column of one row
          for (const [id, want] of model) {
            const row = await lookup(table, { id })
            expect(row === null ? null : text(f.type, row[1])).toBe(want)
          }
        },
      ),
      { numRuns: 12 },
    )
  }, 60_000)

  it('a nested column added by alter takes ids after the highest, reads null in older rows, and compacts with them; its type does not change', async () => {
    const dir = join(scratch, 'alter')
    let table = await Table.create(dir, { fields: [{ name: 'id', type: 'INT' }, { name: 'r', type: 'ROW<a INT>' }], primaryKeys: ['id'] })
    const write = async (t: Table, recs: Record<string, unknown>[]) => writeBatch(t, recs.map((r, i) => ({ ...recordFromJson(t.view, r, `record ${i}`), where: `record ${i}` })))
    await write(table, [{ id: 1, r: { a: 1 } }])
    table = await alterTable(dir, [{ kind: 'add-column', name: 'm', type: 'MAP<STRING, ROW<x INT, y ARRAY<STRING>>>' }])
    expect(table.schema.fields[2].id).toBe(3)
    expect(JSON.parse(serializeSchema(table.schema)).fields[2].type.value.fields.map((f: { id: number }) => f.id)).toEqual([4, 5])
    expect(table.schema.highestFieldId).toBe(5)
    await write(table, [{ id: 2, r: null, m: { k: { x: 1, y: ['p', null] } } }])
    const read = async () => (await readAll(await Table.open(dir))).map((row) => table.view.fields.map((f, i) => valueToJson(f.type, row[i])).join(' '))
    const expected = ['1 {"a":1} null', '2 null {"k":{"x":1,"y":["p",null]}}']
    expect(await read()).toEqual(expected)
    await compactTable(await Table.open(dir), { full: true })
    expect(await read()).toEqual(expected)
    await expect(alterTable(dir, [{ kind: 'update-column-type', name: 'r', type: 'ROW<a BIGINT>' }])).rejects.toThrow(/cannot change the type from ROW<`a` INT> to ROW<`a` BIGINT>: Strata does not change the type of an ARRAY, MAP, MULTISET or ROW column/)
    await expect(alterTable(dir, [{ kind: 'update-column-type', name: 'id', type: 'ARRAY<INT>' }])).rejects.toThrow(/primary key/)
  })

  it("BinaryRow: nested fields in Paimon's BinaryArray / BinaryMap / nested BinaryRow layout, byte for byte as Java writes them", () => {
    const types = [
      { root: 'INT', nullable: true },
      parseDataType('ARRAY<INT>', 'x'),
      parseDataType('MAP<STRING, BIGINT>', 'x'),
      assignFieldIds(parseDataType('ROW<f0 STRING, f1 DECIMAL(20, 2)>', 'x'), { id: 0 }),
      parseDataType('ARRAY<STRING>', 'x'),
      parseDataType('MULTISET<INT>', 'x'),
    ] as DataType[]
    const values: Value[] = [7, [1, null, 3], { keys: ['k', 'a longer key'], values: [5n, null] }, ['longer than 7', 12345n], ['ab', null, 'a string of more'], { keys: [3], values: [2] }]
    // Paimon 1.4.2's InternalRowSerializer.toBinaryRow of the same GenericRow (BinaryRow.toBytes)
    const JAVA =
      '0000000000000000070000000000000018000000380000004400000050000000380000009800000030000000d000000024000000000100000300000002000000010000000000000003000000000000002800000002000000000000006b000000000000810c0000001800000061206c6f6e676572206b6579000000000200000002000000050000000000000000000000000000000000000000000000000000000d0000001800000002000000280000006c6f6e676572207468616e20370000003039000000000000000000000000000003000000020000006162000000000082000000000000000010000000200000006120737472696e67206f66206d6f726510000000010000000000000003000000000000000100000000000000020000000000000000000000'
    const bytes = serializeBinaryRow(types, values)
    expect(Buffer.from(bytes.subarray(4)).toString('hex')).toBe(JAVA)
    expect(deserializeBinaryRow(types, bytes)).toEqual(values)
    const nulls = serializeBinaryRow(types, values.map(() => null))
    expect(Buffer.from(nulls.subarray(4)).toString('hex')).toBe('003f' + '0'.repeat(108))
    expect(() => serializeBinaryRow(types, [7, [1, 'x'], null, null, null, null])).toThrow(/BinaryRow field 1 \(ARRAY<INT>\): inside the value, BinaryRow field 0 \(INT\): got "x" \(string\), expected an integer number in the int32 range/)
  })

  it('BinaryRow: random nested values round-trip', () => {
    fc.assert(
      fc.property(typeArb.chain((t) => fc.tuple(fc.constant(t), valueArb(t))), ([t, v]) => {
        const types = [assignFieldIds({ ...t, nullable: true }, { id: 0 })]
        const back = deserializeBinaryRow(types, serializeBinaryRow(types, [v]))[0]
        expect(text(types[0], back)).toBe(text(types[0], v))
      }),
      { numRuns: 300 },
    )
  })

  it('BinaryRow: large arrays of variable-length elements (strings, bytes, rows of them, nulls) read back whole', () => {
    // each element is read from one copy of the array (binary-row.ts readArray); its speed is
    // not asserted here (no test asserts a wall-clock time)
    const types = [parseDataType('ARRAY<ROW<s STRING, b BYTES>>', 'x'), parseDataType('ARRAY<STRING>', 'x')]
    const n = 16000
    const rows = Array.from({ length: n }, (_, i) => (i % 7 === 0 ? null : [i % 2 ? `s${i}` : `a longer string ${i}`, new Uint8Array([i & 255, i >> 8])]))
    const strings = Array.from({ length: n }, (_, i) => (i % 5 === 0 ? null : `value-number-${i}`))
    const bytes = serializeBinaryRow(types, [rows, strings])
    expect(deserializeBinaryRow(types, bytes)).toEqual([rows, strings])
  })

  it('refuses bad nested input naming the path inside the value', () => {
    const f = field(parseDataType('ARRAY<ROW<name STRING, tags MAP<STRING, INT NOT NULL>>>', 'x'), 'items')
    const bad = (v: unknown) => () => valueFromJson(f, v, 'line 3')
    expect(bad([{ name: 'a' }, { name: 5 }])).toThrow("line 3: field 'items'[1].name (STRING) expected a string, got 5")
    expect(bad([{ name: 'a', tags: { x: null } }])).toThrow(`line 3: field 'items'[0].tags["x"] is NOT NULL but got null`)
    expect(bad([{ nam: 'a' }])).toThrow("line 3: field 'items'[0] (ROW<`name` STRING, `tags` MAP<STRING, INT NOT NULL>>) has no field 'nam' (fields: name, tags)")
    expect(bad({ name: 'a' })).toThrow("field 'items' (ARRAY<ROW<`name` STRING, `tags` MAP<STRING, INT NOT NULL>>>) expected an array")
    const m = field(parseDataType('MAP<INT, STRING>', 'x'), 'm')
    expect(() => valueFromJson(m, [[null, 'a']], 'line 1')).toThrow("line 1: field 'm'[0] is a key of MAP<INT, STRING>, which may not be null")
    expect(() => valueFromJson(m, [[1, 'a'], [1, 'b']], 'line 1')).toThrow("line 1: field 'm'[1]: key 1 appears twice in MAP<INT, STRING>; expected each key once")
    expect(() => valueFromJson(m, { 1: 'a' }, 'line 1')).toThrow("field 'm' (MAP<INT, STRING>) expected an array of [key, value] pairs")
    const s = field(parseDataType('MULTISET<STRING>', 'x'), 's')
    expect(() => valueFromJson(s, ['a', null], 'line 1')).toThrow("line 1: field 's'[1] is an element of MULTISET<STRING>, which may not be null")
    expect(valueFromJson(s, ['a', 'b', 'a'], 'line 1')).toEqual({ keys: ['a', 'b'], values: [2, 1] })
  })

  it('refuses a nested value of the wrong shape at the data file, naming the column and the path', () => {
    const key: DataField = { id: 0, name: 'id', type: { root: 'INT', nullable: false } }
    const f = field(parseDataType('MAP<STRING, ARRAY<INT NOT NULL>>', 'x'), 'm')
    const layout = { keyFields: [key], valueFields: [key, f] }
    const write = (v: unknown) => () => writeDataFile(layout, [{ key: [1], seq: 1n, kind: 0, value: [1, v as Value] }])
    expect(write({ keys: ['a'], values: [[1, null]] })).toThrow('column m (MAP): [0][1] is null, but the type is NOT NULL')
    expect(write({ keys: [null], values: [[]] })).toThrow('column m (MAP): [0]: a key of MAP is null; keys are never null')
    expect(write([1])).toThrow('column m (MAP): the value: expected a MapValue { keys, values } of equal lengths, got an array of 1')
    expect(write({ keys: ['a'], values: [['x']] })).toThrow('column m (MAP): [0][0]: value "x" is not an integer number')
  })
})
