// One write touching many partitions: its buffer flushes at `write-buffer-size` however few
// records each partition gets (every (partition, bucket) group is charged its memory), its
// commit packs the groups into a few manifests instead of one per partition, and what is
// read back equals a simple model, through later writes and compactions that merge the
// packed manifests. Counts only (flushes, manifests), never times.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { RowKind, type Row } from '../lib/types.ts'
import { FREE_GROUPS, bufferedGroupBytes, bufferedRecordBytes, writeBatch } from '../lib/write/table-write.ts'
import type { WriteRecord } from '../lib/write/record-checks.ts'
import { PACK_GROUPS_OVER } from '../lib/commit/commit.ts'

const SCHEMA = {
  fields: [
    { name: 'p', type: 'INT NOT NULL' },
    { name: 'id', type: 'BIGINT NOT NULL' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['p', 'id'],
  partitionKeys: ['p'],
  options: { bucket: '1' },
}

const rec = (p: number, id: number, v: string | null, kind: RowKind = RowKind.INSERT): WriteRecord => ({ row: [p, BigInt(id), v], kind })

async function deltaManifestCount(table: Table): Promise<number> {
  const s = (await table.snapshots.latest())!
  return (await table.manifests.readList(s.deltaManifestList)).length
}

describe('one write touching many partitions', () => {
  it('flushes whenever the groups it buffers reach write-buffer-size, though each partition gets one record', async () => {
    const table = await Table.create(new MemoryStore(), SCHEMA)
    const partitions = 600
    const records = Array.from({ length: partitions }, (_, p) => rec(p, 1, `v${p}`))
    const groupBytes = bufferedGroupBytes(3)
    const recordBytes = bufferedRecordBytes(records[0].row)
    const limit = 40 * groupBytes
    // records alone would fill this buffer only after about 40 × groupBytes / recordBytes records
    expect(partitions * recordBytes).toBeLessThan(limit)
    const flushes: number[] = []
    let last = 0
    const res = await writeBatch(table, records, {
      writeBufferSize: limit,
      onProgress: (done, _total, phase) => {
        if (phase !== 'writing data files') return
        flushes.push(done - last)
        last = done
      },
    })
    // at most the free groups plus what fills the buffer, then one more (the record that filled it)
    const bound = FREE_GROUPS + Math.ceil(limit / (groupBytes + recordBytes)) + 1
    expect(flushes.length).toBeGreaterThanOrEqual(Math.floor(partitions / bound))
    for (const n of flushes) expect(n).toBeLessThanOrEqual(bound)
    expect(flushes.reduce((a, b) => a + b, 0)).toBe(partitions)
    expect(res.rowsWritten).toBe(partitions)
    expect((await readAll(table)).length).toBe(partitions)
  })

  it('packs the groups of a commit touching many partitions into a few manifests', async () => {
    const table = await Table.create(new MemoryStore(), SCHEMA)
    const partitions = 2000
    await writeBatch(table, Array.from({ length: partitions }, (_, p) => rec(p, 1, 'x')))
    const deltas = await deltaManifestCount(table)
    expect(deltas).toBeGreaterThanOrEqual(1)
    expect(deltas).toBeLessThan(partitions / 100)
    // a commit of few groups keeps one manifest per group
    await writeBatch(table, [rec(5, 2, 'y'), rec(7, 2, 'y')])
    expect(await deltaManifestCount(table)).toBe(2)
  })

  it('reads back what a model holds, across writes of many partitions, small buffers and compactions', async () => {
    const op = fc.record({ p: fc.integer({ min: 0, max: 500 }), id: fc.integer({ min: 0, max: 3 }), v: fc.option(fc.string({ maxLength: 3 })), del: fc.boolean() })
    let packed = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ ops: fc.array(op, { minLength: 1, maxLength: 400 }), buffer: fc.integer({ min: 2_000, max: 200_000 }), compact: fc.boolean() }), { minLength: 1, maxLength: 3 }),
        async (batches) => {
          // up to 500 partitions: commits past PACK_GROUPS_OVER groups pack them; merge-min-count 2
          // merges the packed and grouped manifests after a few commits
          const table = await Table.create(new MemoryStore(), { ...SCHEMA, options: { ...SCHEMA.options, 'manifest.merge-min-count': '2' } })
          const model = new Map<string, Row>()
          // first a commit of more groups than PACK_GROUPS_OVER, so every run has a packed commit
          const spread = { ops: Array.from({ length: PACK_GROUPS_OVER + 44 }, (_, p) => ({ p, id: 0, v: 's', del: false })), buffer: 1 << 20, compact: false }
          for (const b of [spread, ...batches]) {
            const records = b.ops.map((o) => rec(o.p, o.id, o.v, o.del ? RowKind.DELETE : RowKind.INSERT))
            for (const r of records) {
              const k = `${r.row[0]}|${r.row[1]}`
              if (r.kind === RowKind.DELETE) model.delete(k)
              else model.set(k, r.row)
            }
            const res = await writeBatch(table, records, { writeBufferSize: b.buffer })
            if (res.buckets.length > 0 && (await deltaManifestCount(table)) < res.buckets.length) packed++
            if (b.compact) await compactTable(table, { full: true })
            const rows = (await readAll(table)).map((r) => `${r[0]}|${r[1]}|${r[2]}`).sort()
            expect(rows).toEqual([...model.values()].map((r) => `${r[0]}|${r[1]}|${r[2]}`).sort())
          }
        },
      ),
      { numRuns: 6 },
    )
    // some commits were packed (the property covers both layouts)
    expect(packed).toBeGreaterThan(0)
  }, 300_000)
})
