// The JSON-lines input of the `strata write` benchmarks (bench/write-read.ts, bench/write.ts):
// a table of 6 fields in 10 partitions and 4 buckets, and a file of `rows` lines for it.

import { createWriteStream } from 'node:fs'
import { once } from 'node:events'

export const WRITE_SCHEMA = {
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'BIGINT' },
    { name: 'name', type: 'STRING' },
    { name: 'price', type: 'DECIMAL(10, 2)' },
    { name: 'qty', type: 'INT' },
    { name: 'ts', type: 'TIMESTAMP(3)' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  options: { bucket: '4' },
}

/** Writes `rows` JSON lines for WRITE_SCHEMA: distinct ids, 10 dates, 1,000 names. */
export async function makeWriteInput(file: string, rows: number): Promise<void> {
  const out = createWriteStream(file)
  for (let i = 0; i < rows; i++) {
    const line = `{"dt":"2026-12-${String(1 + (i % 10)).padStart(2, '0')}","id":${i},"name":"name-${i % 1000}","price":"${(i % 100000) / 100}","qty":${i % 50},"ts":"2026-12-01 10:00:00.${String(i % 1000).padStart(3, '0')}"}\n`
    if (!out.write(line)) await once(out, 'drain')
  }
  out.end()
  await once(out, 'finish')
}
