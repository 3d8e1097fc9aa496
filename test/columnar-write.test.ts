// The column write buffer (lib/write/column-buffer.ts, BatchWriter's default) against the
// row buffer it replaced, kept as the reference (`buffer: 'rows'`: one KeyValue per record,
// sorted, merged by the table's merge function and written row by row): on random batches
// both write the same level-0 files byte for byte (data, statistics, sequence numbers, row
// kinds) with the same flushes, or fail with the same error. Every merge engine, with
// sequence.field (both orders), ignore-delete, ignore-update-before, small buffers (several
// flushes), and a table of every column type with nulls and the values the typed columns
// cannot hold as they are (-0, NaN, int64 beyond 2^53, wide decimals, non-ASCII strings).

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { type Row, RowKind, type Value } from '../lib/types.ts'
import type { WriteRecord } from '../lib/write/record-checks.ts'
import { type WriteResult, writeBatch } from '../lib/write/table-write.ts'
import { type Engine, type Op, opArb, schemaFor } from './helpers/model.ts'

const ENGINES: Engine[] = ['deduplicate', 'partial-update', 'aggregation', 'first-row']

interface Written {
  error: string | null
  rowsIn: number
  rowsWritten: number
  /** per bucket (sorted), its files' bytes in flush order */
  files: [string, number[][]][]
  stats: unknown[]
}

/** Writes `records` with one buffer into a fresh table; what it wrote, or its error. */
async function writeWith(schema: unknown, records: WriteRecord[], buffer: 'columns' | 'rows', limit: number): Promise<Written> {
  const table = await Table.create(new MemoryStore(), schema)
  let res: WriteResult
  try {
    res = await writeBatch(table, records, { buffer, writeBufferSize: limit, sequenceBase: (1n << 40n) - 5n }) // the low word carries from the 6th record on
  } catch (e) {
    return { error: (e as Error).message, rowsIn: 0, rowsWritten: 0, files: [], stats: [] }
  }
  const files: [string, number[][]][] = []
  for (const b of [...res.buckets].sort((x, y) => (x.partitionPath + x.bucket < y.partitionPath + y.bucket ? -1 : 1))) {
    const bytes: number[][] = []
    for (const name of b.fileNames) bytes.push([...(await table.store.get(`${b.partitionPath}bucket-${b.bucket}/${name}`))!])
    files.push([`${b.partitionPath}bucket-${b.bucket}`, bytes])
  }
  const latest = await table.snapshots.latest()
  const stats = latest ? (await table.manifests.liveEntries(latest)).map((e) => ({ ...e.file, fileName: '', creationTime: null })) : []
  stats.sort((a, b) => (a.minSequenceNumber < b.minSequenceNumber ? -1 : a.minSequenceNumber > b.minSequenceNumber ? 1 : Number(a.fileSize - b.fileSize)))
  return { error: null, rowsIn: res.rowsIn, rowsWritten: res.rowsWritten, files, stats }
}

async function expectSameWrites(schema: unknown, records: WriteRecord[], limit: number): Promise<Written> {
  const columns = await writeWith(schema, records, 'columns', limit)
  const rows = await writeWith(schema, records, 'rows', limit)
  expect(columns.error).toBe(rows.error)
  expect(columns.rowsIn).toBe(rows.rowsIn)
  expect(columns.rowsWritten).toBe(rows.rowsWritten)
  expect(columns.files.map(([b, f]) => [b, f.length])).toEqual(rows.files.map(([b, f]) => [b, f.length]))
  for (let i = 0; i < rows.files.length; i++) {
    for (let j = 0; j < rows.files[i][1].length; j++) {
      expect(Buffer.from(columns.files[i][1][j]).equals(Buffer.from(rows.files[i][1][j])), `${rows.files[i][0]} file ${j}`).toBe(true)
    }
  }
  expect(columns.stats).toEqual(rows.stats)
  return rows
}

describe('the column write buffer writes what the row buffer writes', () => {
  const variants: [string, Record<string, string>][] = [
    ['defaults', {}],
    ['sequence.field', { 'sequence.field': 'c' }],
    ['sequence.field descending', { 'sequence.field': 'a,c', 'sequence.field.sort-order': 'descending' }],
    ['ignore-delete', { 'ignore-delete': 'true' }],
    ['ignore-update-before', { 'ignore-update-before': 'true' }],
  ]
  for (const engine of ENGINES) {
    for (const [name, extra] of variants) {
      it(`${engine}, ${name}: random batches, random buffer sizes`, async () => {
        const schema = schemaFor(engine, extra)
        let view
        try {
          view = (await Table.create(new MemoryStore(), schema)).view
        } catch {
          return // a combination the engine refuses
        }
        await fc.assert(
          fc.asyncProperty(fc.array(opArb(engine, 8), { minLength: 1, maxLength: 80 }), fc.integer({ min: 1, max: 6000 }), async (ops: Op[], limit) => {
            const records = ops.map((op, i) => ({ ...recordFromJson(view, op, `op ${i}`), where: `op ${i}` }))
            await expectSameWrites(schema, records, limit)
          }),
          { numRuns: 40 },
        )
      })
    }
  }
})

// ---------------------------------------------------------------------------------------------
// Every column type

const WIDE_FIELDS: [string, string][] = [
  ['k1', 'BIGINT NOT NULL'],
  ['k2', 'STRING NOT NULL'],
  ['p', 'INT'],
  ['b', 'BOOLEAN'],
  ['ti', 'TINYINT'],
  ['si', 'SMALLINT'],
  ['i', 'INT'],
  ['bi', 'BIGINT'],
  ['f', 'FLOAT'],
  ['d', 'DOUBLE'],
  ['dec5', 'DECIMAL(5, 2)'],
  ['dec18', 'DECIMAL(18, 3)'],
  ['dec25', 'DECIMAL(25, 4)'],
  ['s', 'STRING'],
  ['by', 'BYTES'],
  ['dt', 'DATE'],
  ['ts3', 'TIMESTAMP(3)'],
  ['ts6', 'TIMESTAMP(6)'],
  ['nn', 'INT NOT NULL'],
]

const INT64 = { min: -(2n ** 63n), max: 2n ** 63n - 1n }

function valueArb(type: string): fc.Arbitrary<Value> {
  const nullable = <T extends Value>(a: fc.Arbitrary<T>): fc.Arbitrary<Value> => fc.option(a, { nil: null, freq: 4 })
  const int = (min: number, max: number) => fc.oneof(fc.integer({ min, max }), fc.constantFrom(0, -0, min, max))
  const big = (min: bigint, max: bigint) => fc.oneof(fc.bigInt({ min, max }), fc.bigInt({ min: -1000n, max: 1000n }))
  switch (type) {
    case 'BOOLEAN':
      return nullable(fc.boolean())
    case 'TINYINT':
      return nullable(int(-128, 127))
    case 'SMALLINT':
      return nullable(int(-32768, 32767))
    case 'INT':
      return nullable(int(-2147483648, 2147483647))
    case 'INT NOT NULL':
      return int(-5, 5)
    case 'DATE':
      return nullable(int(-100000, 100000))
    case 'BIGINT':
      return nullable(big(INT64.min, INT64.max))
    case 'FLOAT':
      return nullable(fc.oneof(fc.float(), fc.constantFrom(0.1, -0)))
    case 'DOUBLE':
      return nullable(fc.double())
    case 'DECIMAL(5, 2)':
      return nullable(big(-99999n, 99999n))
    case 'DECIMAL(18, 3)':
      return nullable(big(-(10n ** 18n) + 1n, 10n ** 18n - 1n))
    case 'DECIMAL(25, 4)':
      return nullable(big(-(10n ** 25n) + 1n, 10n ** 25n - 1n))
    case 'STRING':
      return nullable(fc.oneof(fc.string({ maxLength: 20 }), fc.string({ unit: 'binary', maxLength: 5 })))
    case 'BYTES':
      return nullable(fc.uint8Array({ maxLength: 8 }))
    case 'TIMESTAMP(3)':
      return nullable(big(-(2n ** 52n), 2n ** 52n).map((v) => v * 1000n))
    case 'TIMESTAMP(6)':
      return nullable(big(INT64.min, INT64.max))
    default:
      throw new Error(type)
  }
}

const recordArb: fc.Arbitrary<WriteRecord> = fc
  .record({
    kind: fc.constantFrom(RowKind.INSERT, RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.UPDATE_BEFORE, RowKind.DELETE),
    // few keys, so keys repeat; int64 keys beyond 2^53 too
    k1: fc.constantFrom(0n, 1n, -1n, 7n, 2n ** 60n, -(2n ** 62n), 2n ** 53n + 1n),
    k2: fc.constantFrom('', 'a', 'b', 'é', '\u{1F600}', '\uffff'),
    p: fc.constantFrom<Value>(1, 2, null),
    values: fc.tuple(...WIDE_FIELDS.slice(3).map(([, t]) => valueArb(t))),
  })
  .map(({ kind, k1, k2, p, values }) => ({ kind, row: [k1, k2, p, ...values] as Row }))

function wideSchema(options: Record<string, string>, partitioned: boolean, keys: string[]): unknown {
  return {
    fields: WIDE_FIELDS.map(([name, type]) => ({ name, type })),
    primaryKeys: partitioned ? [...keys, 'p'] : keys,
    partitionKeys: partitioned ? ['p'] : [],
    options: { bucket: '2', ...options },
  }
}

describe('every column type', () => {
  const variants: [string, Record<string, string>][] = [
    ['deduplicate', {}],
    ['deduplicate, sequence.field', { 'sequence.field': 'bi,ts6' }],
    ['deduplicate, sequence.field descending', { 'sequence.field': 'd', 'sequence.field.sort-order': 'descending' }],
    ['partial-update', { 'merge-engine': 'partial-update', 'partial-update.remove-record-on-delete': 'true' }],
    ['first-row', { 'merge-engine': 'first-row', 'ignore-delete': 'true' }],
  ]
  for (const [name, options] of variants) {
    for (const keys of [['k1'], ['k2', 'k1']]) {
      it(`${name}, key (${keys.join(', ')}): the same files`, async () => {
        await fc.assert(
          fc.asyncProperty(fc.array(recordArb, { minLength: 1, maxLength: 60 }), fc.integer({ min: 1, max: 20000 }), fc.boolean(), async (records, limit, partitioned) => {
            await expectSameWrites(wideSchema(options, partitioned, keys), records, limit)
          }),
          { numRuns: 30 },
        )
      })
    }
  }

  it('a value the writer refuses fails both alike', async () => {
    const schema = wideSchema({}, false, ['k1'])
    const ok = fc.sample(recordArb, { numRuns: 5, seed: 7 })
    const bad = (col: number, v: Value): WriteRecord[] => [...ok, { kind: RowKind.INSERT, row: ok[0].row.map((x, j) => (j === col ? v : x)) }]
    const ts3 = WIDE_FIELDS.findIndex(([n]) => n === 'ts3')
    const nn = WIDE_FIELDS.findIndex(([n]) => n === 'nn')
    const i = WIDE_FIELDS.findIndex(([n]) => n === 'i')
    const badKind: WriteRecord[] = [...ok, { kind: 7 as RowKind, row: ok[0].row }]
    const shortRow: WriteRecord[] = [...ok, { kind: RowKind.INSERT, row: ok[0].row.slice(0, -1) }]
    for (const records of [bad(ts3, 1234n), bad(nn, null), bad(i, 2 ** 40), bad(i, 'x' as Value), badKind, shortRow]) {
      const res = await expectSameWrites(schema, records, 1 << 20)
      expect(res.error).not.toBeNull()
    }
  })
})
