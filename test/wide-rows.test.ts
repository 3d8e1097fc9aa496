// Wide rows (thousands of columns) cost what their values cost, not the square of the width:
// - a default row group holds at least a page's worth (8 KiB) per column chunk, so 100 rows
//   are one row group at any width, and a file of many rows still splits into row groups by
//   bytes, each of at least a page of INT values per column;
// - the footer (page indexes and FileMetaData, everything after the last chunk) takes about
//   the same bytes per column at every width;
// - a wide file reads back equal through the row reader (which hands hyparquet a slice of the
//   columns at a time), with a projection and by lookup, and through the columnar reader.
// Counts only: the times are measured in bench/scaling-columns.ts, never asserted.

import { parquetMetadata } from 'hyparquet'
import { describe, expect, it } from 'vitest'
import { rowComparator } from '../lib/format/compare.ts'
import { ColumnarFileReader } from '../lib/format/columnar-reader.ts'
import { valueAt } from '../lib/format/columnar-types.ts'
import { DataFileReader } from '../lib/format/data-file-reader.ts'
import { byteSource } from '../lib/format/data-file-source.ts'
import type { DataFileLayout } from '../lib/format/data-file-layout.ts'
import { defaultRowGroupBytes, writeDataFile } from '../lib/format/data-file-writer.ts'
import type { DataField, KeyValue } from '../lib/types.ts'

/** A BIGINT key `id` and `width` nullable INT columns. */
function layoutOf(width: number): DataFileLayout {
  const id: DataField = { id: 0, name: 'id', type: { root: 'BIGINT', nullable: false } }
  const ints = Array.from({ length: width }, (_, c): DataField => ({ id: c + 1, name: `c${c}`, type: { root: 'INT', nullable: true } }))
  return { keyFields: [id], valueFields: [id, ...ints] }
}

/** Rows 0..rows-1: distinct values per row and column, every 7th value of a column null. */
function recordsOf(width: number, rows: number): KeyValue[] {
  return Array.from({ length: rows }, (_, r) => ({
    key: [BigInt(r)],
    seq: BigInt(r + 1),
    kind: 0 as const,
    value: [BigInt(r), ...Array.from({ length: width }, (_, c) => ((r + c) % 7 === 0 ? null : r * 1000 + c))],
  }))
}

/** Row groups of a Parquet file, rows in each, and its footer bytes: from the end of its last column chunk to the end of the file. */
function shapeOf(bytes: Uint8Array): { groups: number[]; footerBytes: number } {
  const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer)
  let dataEnd = 4
  for (const g of meta.row_groups) {
    for (const c of g.columns) {
      const m = c.meta_data!
      dataEnd = Math.max(dataEnd, Number(m.dictionary_page_offset ?? m.data_page_offset) + Number(m.total_compressed_size))
    }
  }
  return { groups: meta.row_groups.map((g) => Number(g.num_rows)), footerBytes: bytes.length - dataEnd }
}

describe('wide rows', () => {
  it('100 rows are one row group at any width, and the footer takes about the same bytes per column', () => {
    const perColumn: number[] = []
    for (const width of [300, 1000, 3000]) {
      const { bytes } = writeDataFile(layoutOf(width), recordsOf(width, 100))
      const { groups, footerBytes } = shapeOf(bytes)
      expect(groups, `${width} columns`).toEqual([100])
      perColumn.push(footerBytes / width)
    }
    // one row group: about 80 bytes per column chunk (its metadata and statistics) at every width
    for (const b of perColumn) expect(b / perColumn[0]).toBeGreaterThan(0.8)
    for (const b of perColumn) expect(b / perColumn[0]).toBeLessThan(1.25)
  })

  it('many rows still split into row groups by bytes, each of at least a page of values per column', () => {
    const width = 200
    const rows = 6000
    const { bytes } = writeDataFile(layoutOf(width), recordsOf(width, rows))
    const { groups } = shapeOf(bytes)
    expect(groups.reduce((a, b) => a + b, 0)).toBe(rows)
    expect(groups.length).toBeGreaterThan(1)
    // the writer's estimate of a row: _KEY_id, _SEQUENCE_NUMBER, id 8 bytes each, _VALUE_KIND (TINYINT) and an INT 4;
    // a group closes once its rows reach 8 KiB per column chunk (about 2,000 rows here, where
    // a fixed 128 KiB closed one every 158 rows)
    const rowBytes = 8 + 8 + 4 + 8 + 4 * width
    const chunks = width + 4
    for (const n of groups.slice(0, -1)) {
      expect(n * rowBytes).toBeGreaterThanOrEqual(chunks * 8 * 1024)
      expect((n - 1) * rowBytes).toBeLessThan(chunks * 8 * 1024)
    }
    // a narrow row keeps the 128 KiB row group a lookup reads whole
    expect(defaultRowGroupBytes(10)).toBe(128 * 1024)
    expect(defaultRowGroupBytes(width + 4)).toBe((width + 4) * 8 * 1024)
  })

  it('a wide file reads back equal: scans, a projection and lookups by the row reader, and the columnar reader', async () => {
    const width = 2000
    const rows = 60
    const layout = layoutOf(width)
    const records = recordsOf(width, rows)
    const { bytes } = writeDataFile(layout, records)
    const reader = await DataFileReader.open(byteSource(bytes), layout)
    const all: KeyValue[] = []
    for await (const batch of reader.batches({ batchRows: 17 })) all.push(...batch)
    expect(all).toEqual(records)

    // a projection of columns far apart, in another order than the file's
    const names = ['c1999', 'c0', 'c1000', 'c63', 'c64']
    const projected: KeyValue[] = []
    for await (const batch of reader.batches({ valueColumns: names, rowStart: 5, rowEnd: 50 })) projected.push(...batch)
    expect(projected).toHaveLength(45)
    for (const kv of projected) {
      const r = Number(kv.key[0])
      const expected = records[r].value.map((v, j) => (names.includes(layout.valueFields[j].name) ? v : null))
      expect(kv.value).toEqual(expected)
    }

    const cmp = rowComparator([{ root: 'BIGINT', nullable: false }])
    for (const r of [0, 33, rows - 1]) expect((await reader.lookup([BigInt(r)], cmp))?.record).toEqual(records[r])
    expect(await reader.lookup([BigInt(rows)], cmp)).toBeNull()

    // Strata's decoder, and hyparquet (the columns another writer's file may need it for)
    for (const decoder of ['strata', 'hyparquet'] as const) {
      const columnar = await ColumnarFileReader.open(byteSource(bytes), layout, { decoder })
      let seen = 0
      for await (const batch of columnar.rowGroups()) {
        const wrong: string[] = []
        for (let r = 0; r < batch.rows; r++) {
          const rec = records[batch.firstPosition + r]
          // the file's columns: _KEY_id, _SEQUENCE_NUMBER, _VALUE_KIND, then the value fields
          if (valueAt(batch.columns[0], r) !== rec.key[0] || valueAt(batch.columns[1], r) !== rec.seq) wrong.push(`key or sequence of ${rec.key[0]}`)
          for (let j = 0; j < rec.value.length; j++) if (valueAt(batch.columns[3 + j], r) !== rec.value[j]) wrong.push(`${layout.valueFields[j].name} of ${rec.key[0]}`)
        }
        expect(wrong.slice(0, 5), decoder).toEqual([])
        seen += batch.rows
      }
      expect(seen, decoder).toBe(rows)
    }
  })

  it('the columnar reader decodes many row groups of wide rows through hyparquet too, a batch of groups at a time', async () => {
    const width = 100
    const layout = layoutOf(width)
    const records = recordsOf(width, 5000)
    // row groups of 700 rows: the columnar reader decodes them in two batches of several groups (up to 4,096 rows)
    const { bytes } = writeDataFile(layout, records, { rowGroupRows: 700 })
    for (const decoder of ['strata', 'hyparquet'] as const) {
      const columnar = await ColumnarFileReader.open(byteSource(bytes), layout, { decoder })
      let seen = 0
      for await (const batch of columnar.rowGroups({ deleted: [3, 3600, 4999] })) {
        const wrong: string[] = []
        for (let r = 0; r < batch.rows; r++) {
          const rec = records[batch.positions === null ? batch.firstPosition + r : batch.positions[r]]
          if (valueAt(batch.columns[0], r) !== rec.key[0]) wrong.push(`key of ${rec.key[0]}`)
          for (let j = 0; j < rec.value.length; j++) if (valueAt(batch.columns[3 + j], r) !== rec.value[j]) wrong.push(`${layout.valueFields[j].name} of ${rec.key[0]}`)
        }
        expect(wrong.slice(0, 5), decoder).toEqual([])
        seen += batch.rows
      }
      expect(seen, decoder).toBe(4997)
    }
  })
})
