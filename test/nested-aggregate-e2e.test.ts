// The aggregates over nested values end to end: a table with ARRAY, MAP and ROW columns under
// collect, merge_map, merge_map_with_keytime, nested_update and nested_partial_update
// (test/helpers/nested-agg-cases.ts), written as JSON records one commit at a time, read
// merged from level 0, then fully compacted by the row path and by the columnar path and read
// again; and a partial-update table with nested columns. The merge semantics themselves are
// held to models in test/nested-aggregate.test.ts and to Paimon in
// test/interop-nested-agg.test.ts.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { FIXED, FIXED_EXPECTED, type Rec, SCHEMA, commits, normalize, render } from './helpers/nested-agg-cases.ts'

const root = mkdtempSync(join(tmpdir(), 'strata-nested-agg-e2e-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let tables = 0

async function tableWith(schema: object, input: Rec[][]): Promise<Table> {
  const t = await Table.create(join(root, `t-${tables++}`), schema)
  for (const [i, batch] of input.entries()) await writeBatch(t, batch.map((r, j) => recordFromJson(t.view, r, `commit ${i} row ${j}`)))
  return t
}

async function rowsOf(t: Table): Promise<Rec[]> {
  return (await readAll(t)).map((r) => Object.fromEntries(t.view.fields.map((f, i) => [f.name, render(f, r[i])])))
}

/** The rows merged on read, then after a full compaction by the given path. */
async function readings(input: Rec[][], mergePath: 'row' | 'columnar'): Promise<{ merged: Rec[]; compacted: Rec[] }> {
  const t = await tableWith(SCHEMA, input)
  const merged = await rowsOf(t)
  await compactTable(t, { full: true, mergePath })
  return { merged, compacted: await rowsOf(t) }
}

describe('aggregates over nested values, written, compacted and read', () => {
  it('the fixed input reads as worked out by hand, merged on read and after each compaction path', async () => {
    for (const path of ['row', 'columnar'] as const) {
      const { merged, compacted } = await readings(FIXED, path)
      expect(normalize(merged), path).toEqual(normalize(FIXED_EXPECTED))
      expect(normalize(compacted), path).toEqual(normalize(FIXED_EXPECTED))
      // Strata's own order: first appearance (the distinct collect of key 2, the map of key 1's kt)
      expect(compacted.find((r) => r.id === 2)!.tags, path).toEqual(['z', 'y'])
      expect(compacted.find((r) => r.id === 1)!.kt, path).toEqual([
        ['x', { v: 1, ts: '2024-01-02' }],
        ['y', { v: 2, ts: 'a' }],
      ])
    }
  })

  it("a key's lone record keeps a distinct collect's duplicates through both compaction paths, as Paimon's reducer", async () => {
    for (const path of ['row', 'columnar'] as const) {
      const { merged, compacted } = await readings([[{ id: 9, tags: ['q', 'q'], bag: [1, 1] }]], path)
      expect(merged[0].tags, path).toEqual(['q', 'q'])
      expect(compacted[0].tags, path).toEqual(['q', 'q'])
    }
  })

  it('property: random commits read alike merged on read and after row and columnar compaction', async () => {
    await fc.assert(
      fc.asyncProperty(commits, async (input) => {
        const row = await readings(input, 'row')
        const columnar = await readings(input, 'columnar')
        // both paths give Strata's order, so the rows compare exactly, not sorted
        expect(row.compacted).toEqual(row.merged)
        expect(columnar.compacted).toEqual(row.merged)
        expect(columnar.merged).toEqual(row.merged)
      }),
      { numRuns: 6, seed: 7 },
    )
  })
})

describe('partial-update over nested columns', () => {
  const schema = {
    fields: [
      { name: 'id', type: 'INT NOT NULL' },
      { name: 'tags', type: 'ARRAY<STRING>' },
      { name: 'attrs', type: 'MAP<STRING, INT>' },
      { name: 'info', type: 'ROW<a INT, b ARRAY<INT>>' },
    ],
    primaryKeys: ['id'],
    options: { bucket: '1', 'merge-engine': 'partial-update' },
  }
  it('replaces each nested value whole with its newest non-null value, merged on read and compacted by either path', async () => {
    for (const mergePath of ['row', 'columnar'] as const) {
      const t = await tableWith(schema, [
        [{ id: 1, tags: ['a', 'b'], attrs: [['x', 1]], info: { a: 1, b: [1] } }],
        [{ id: 1, tags: ['c'], attrs: null, info: { a: null, b: null } }],
        [{ id: 1, tags: null, attrs: [['y', 2]] }],
      ])
      const expected = [{ id: 1, tags: ['c'], attrs: [['y', 2]], info: { a: null, b: null } }]
      expect(await rowsOf(t), mergePath).toEqual(expected)
      await compactTable(t, { full: true, mergePath })
      expect(await rowsOf(t), mergePath).toEqual(expected)
    }
  })
})
