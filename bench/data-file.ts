// Throughput of the Parquet data-file writer and reader (lib/format/data-file-writer.ts,
// lib/format/data-file-reader.ts) for 500k rows of (BIGINT key, STRING, DOUBLE). Prints the
// cost per row; asserts nothing.
// Run: npx tsx bench/data-file.ts [rows]

import { DataFileReader } from '../lib/format/data-file-reader.ts'
import { byteSource } from '../lib/format/data-file-source.ts'
import { writeDataFile, type FileCompression } from '../lib/format/data-file-writer.ts'
import { type DataFileLayout } from '../lib/format/data-file-layout.ts'
import type { KeyValue } from '../lib/types.ts'

const rows = Number(process.argv[2] ?? 500_000)
const layout: DataFileLayout = {
  keyFields: [{ id: 0, name: 'id', type: { root: 'BIGINT', nullable: false } }],
  valueFields: [
    { id: 0, name: 'id', type: { root: 'BIGINT', nullable: false } },
    { id: 1, name: 'name', type: { root: 'VARCHAR', nullable: true, length: 2147483647 } },
    { id: 2, name: 'score', type: { root: 'DOUBLE', nullable: true } },
  ],
}

function* records(): Iterable<KeyValue> {
  for (let i = 0; i < rows; i++) {
    const id = BigInt(i)
    yield { key: [id], seq: id, kind: 0, value: [id, `user-${(i * 7919) % 100_000}`, i * 0.25] }
  }
}

const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6

for (const compression of ['snappy', 'gzip', 'none'] as FileCompression[]) {
  let t0 = process.hrtime.bigint()
  const { bytes } = writeDataFile(layout, records(), { compression })
  const writeMs = ms(t0)

  t0 = process.hrtime.bigint()
  const reader = await DataFileReader.open(byteSource(bytes), layout)
  let read = 0
  for await (const batch of reader.batches()) read += batch.length
  const readMs = ms(t0)
  if (read !== rows) throw new Error(`read ${read} of ${rows} rows`)

  console.log(
    `${compression.padEnd(6)} ${rows} rows, ${(bytes.length / 1e6).toFixed(1)} MB: ` +
      `write ${writeMs.toFixed(0)} ms (${((writeMs * 1000) / rows).toFixed(2)} µs/row), ` +
      `read ${readMs.toFixed(0)} ms (${((readMs * 1000) / rows).toFixed(2)} µs/row)`,
  )
}
