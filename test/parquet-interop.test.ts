// Data files must open in Parquet readers other than our own. DuckDB checks the footer
// strictly (it rejected files whose IntType annotation hyparquet-writer mis-encodes), so a
// file written by DataFileWriter is read back through DuckDB, column by column.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, describe, expect, it } from 'vitest'
import { writeDataFile } from '../lib/format/data-file.ts'
import { parseDataType } from '../lib/table/data-type.ts'
import { type DataField, type KeyValue, RowKind } from '../lib/types.ts'

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
})
