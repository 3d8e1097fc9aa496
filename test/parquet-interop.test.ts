// Data files must open in Parquet readers other than our own. DuckDB checks the footer
// strictly (it rejected files whose IntType annotation hyparquet-writer mis-encodes), so a
// file written by DataFileWriter is read back through DuckDB, column by column, with every
// codec Strata writes (zstd through node:zlib where this Node has it, else stored zstd blocks).

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, describe, expect, it } from 'vitest'
import { type FileCompression, writeDataFile } from '../lib/format/data-file-writer.ts'
import { parseDataType } from '../lib/format/data-type.ts'
import { type DataField, type KeyValue, RowKind } from '../lib/types.ts'
import { withZstd } from './helpers/zstd.ts'

const dir = mkdtempSync(join(tmpdir(), 'strata-interop-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const f = (id: number, name: string, type: string): DataField => ({ id, name, type: parseDataType(type, name) })
const fields = [f(0, 'id', 'BIGINT NOT NULL'), f(1, 'ti', 'TINYINT'), f(2, 'si', 'SMALLINT'), f(3, 'name', 'STRING'), f(4, 'price', 'DECIMAL(10, 2)'), f(5, 'd', 'DATE')]

describe('Parquet interoperability', () => {
  it('DuckDB reads a Strata data file: system columns, small ints, strings, decimals, dates', async () => {
    const records: KeyValue[] = [1, 2, 3].map((i) => ({
      key: [BigInt(i)],
      seq: BigInt(i) << 32n,
      kind: i === 3 ? RowKind.DELETE : RowKind.INSERT,
      value: [BigInt(i), -i, i * 1000, `n${i}`, BigInt(i * 125), 19000 + i],
    }))
    const { bytes } = writeDataFile({ keyFields: [fields[0]], valueFields: fields }, records)
    const path = join(dir, 'data.parquet')
    writeFileSync(path, bytes)
    const db = await DuckDBInstance.create(':memory:')
    const conn = await db.connect()
    const reader = await conn.runAndReadAll(
      `SELECT _KEY_id, _SEQUENCE_NUMBER, _VALUE_KIND, id, ti, si, name, CAST(price AS VARCHAR) AS price, CAST(d AS VARCHAR) AS d FROM read_parquet('${path}') ORDER BY id`,
    )
    const rows = reader.getRowObjects()
    conn.closeSync()
    expect(rows).toEqual([
      { _KEY_id: 1n, _SEQUENCE_NUMBER: 1n << 32n, _VALUE_KIND: 0, id: 1n, ti: -1, si: 1000, name: 'n1', price: '1.25', d: '2022-01-09' },
      { _KEY_id: 2n, _SEQUENCE_NUMBER: 2n << 32n, _VALUE_KIND: 0, id: 2n, ti: -2, si: 2000, name: 'n2', price: '2.50', d: '2022-01-10' },
      { _KEY_id: 3n, _SEQUENCE_NUMBER: 3n << 32n, _VALUE_KIND: 3, id: 3n, ti: -3, si: 3000, name: 'n3', price: '3.75', d: '2022-01-11' },
    ])
  })

  it.each<[string, FileCompression, number?]>([
    ['snappy', 'snappy'],
    ['gzip', 'gzip'],
    ['uncompressed', 'none'],
    ['zstd level 1', 'zstd', 1],
    ['zstd level 3', 'zstd', 3],
  ])('DuckDB reads the %s pages of a Strata data file, many pages per chunk', async (_, compression, zstdLevel) => {
    const rows = 20_000
    const records: KeyValue[] = Array.from({ length: rows }, (_, i) => ({
      key: [BigInt(i)],
      seq: BigInt(i),
      kind: RowKind.INSERT,
      value: [BigInt(i), i % 100, i % 3 === 0 ? null : i, `customer-${i % 977}-${i}`, BigInt(i * 7), 19000 + (i % 400)],
    }))
    const { bytes } = withZstd(() => writeDataFile({ keyFields: [fields[0]], valueFields: fields }, records, { compression, zstdLevel }))
    const path = join(dir, `codec-${compression}-${zstdLevel ?? 0}.parquet`)
    writeFileSync(path, bytes)
    const db = await DuckDBInstance.create(':memory:')
    const conn = await db.connect()
    const codecs = await conn.runAndReadAll(`SELECT DISTINCT compression FROM parquet_metadata('${path}')`)
    const summary = await conn.runAndReadAll(`SELECT count(*)::INTEGER AS n, sum(id)::VARCHAR AS ids, sum(si)::VARCHAR AS si, count(si)::INTEGER AS si_n, sum(length(name))::VARCHAR AS chars, max(name) AS max_name, CAST(sum(price) AS VARCHAR) AS price FROM read_parquet('${path}')`)
    conn.closeSync()
    expect(codecs.getRowObjects().map((r) => String(r.compression).toUpperCase())).toEqual([compression === 'none' ? 'UNCOMPRESSED' : compression.toUpperCase()])
    const names = records.map((r) => r.value[3] as string)
    expect(summary.getRowObjects()).toEqual([
      {
        n: rows,
        ids: String((rows * (rows - 1)) / 2),
        si: String(records.reduce((n, r) => n + ((r.value[2] as number | null) ?? 0), 0)),
        si_n: records.filter((r) => r.value[2] !== null).length,
        chars: String(names.reduce((n, x) => n + x.length, 0)),
        max_name: names.reduce((a, b) => (a > b ? a : b)),
        price: (records.reduce((n, r) => n + Number(r.value[4]), 0) / 100).toFixed(2),
      },
    ])
  })
})
