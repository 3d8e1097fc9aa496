// Dynamic bucket mode against Apache Paimon 1.4.2 (docs/design.md "Dynamic buckets"): Paimon
// creates a table without `bucket` (its default, bucket -1) and writes it through its
// HashBucketAssigner (the harness's dyn-write); Strata writes it on (updates of Paimon's keys,
// new keys, deletes) and compacts it; Paimon reads the result equal to a model, then writes
// again through the HASH index Strata left, and both read the model once more. A key in two
// buckets reads twice (a batch read merges per bucket), so the model check also checks that
// each side found the other's assignment. Deletion vectors off and on.
// Without Java or Maven the file is skipped with one line saying how to run it, except under CI.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { HASH_INDEX } from '../lib/format/hash-index.ts'
import { type PaimonResult, RUN_COMMAND, buildHarness, byKey, describeWithJava, jarBatch, JAR, parseRows, renderRow, writeJsonLines } from './helpers/interop.ts'

type Rec = Record<string, unknown>

const SCHEMA = {
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'INT' },
    { name: 'v', type: 'STRING' },
    { name: 'n', type: 'BIGINT' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
}

const rec = (dt: string, id: number, v: string, kind?: string): Rec => ({ dt, id, v, n: String(id * 10), ...(kind ? { _kind: kind } : {}) })
/** Paimon's first write: 14 keys over two partitions, 4 a bucket. */
const PAIMON_FIRST = [...Array.from({ length: 9 }, (_, i) => rec('a', i, 'p1')), ...Array.from({ length: 5 }, (_, i) => rec('b', i, 'p1'))]
/** Strata's write: updates of Paimon's keys, new keys in both partitions (one a new bucket), deletes of known keys and of a key never written. */
const STRATA = [rec('a', 0, 's'), rec('a', 8, 's'), rec('b', 4, 's'), ...Array.from({ length: 5 }, (_, i) => rec('a', 100 + i, 's')), rec('b', 50, 's'), rec('a', 3, 's', '-D'), rec('b', 999, 's', '-D')]
/** Paimon's second write: updates of keys Strata assigned and of its own, and more new keys. */
const PAIMON_SECOND = [rec('a', 100, 'p2'), rec('a', 104, 'p2'), rec('b', 50, 'p2'), rec('a', 1, 'p2'), rec('a', 200, 'p2'), rec('b', 60, 'p2')]

function applyModel(model: Map<string, Rec>, records: Rec[]): void {
  for (const r of records) {
    const k = `${r.dt}|${r.id}`
    if (r._kind === '-D') model.delete(k)
    else model.set(k, { dt: r.dt, id: r.id, v: r.v, n: r.n })
  }
}

const rowsOf = (r: PaimonResult): Rec[] => {
  if (!r.ok) throw new Error(`Paimon failed: ${r.error}`)
  return byKey(parseRows(r.output), SCHEMA.primaryKeys)
}

describeWithJava('Paimon interop: dynamic bucket mode', RUN_COMMAND.replace('interop.test.ts', 'interop-dynamic-bucket.test.ts'), () => {
  let root = ''
  const cases: { dv: boolean; model: Rec[]; finalModel: Rec[]; paimonAfterStrata?: PaimonResult; paimonFinal?: PaimonResult; strataFinal: Rec[]; strataAfterStrata: Rec[]; buckets: number[]; hashFiles: number }[] = []

  beforeAll(async () => {
    buildHarness()
    root = mkdtempSync(join(tmpdir(), 'strata-interop-dynamic-'))
    const tables = [false, true].map((dv) => ({ dv, dir: join(root, `dv-${dv}`) }))
    const schemaJson = (dv: boolean) => JSON.stringify({ ...SCHEMA, options: { 'dynamic-bucket.target-row-num': '4', ...(dv ? { 'deletion-vectors.enabled': 'true' } : {}) } })
    const first = await jarBatch(JAR, tables.map(({ dv, dir }) => ['dyn-write', dir, '--in', writeJsonLines(join(root, `first-${dv}.jsonl`), PAIMON_FIRST), '--schema', schemaJson(dv)]))
    for (const r of first) if (!r.ok) throw new Error(`Paimon's dynamic-bucket write failed: ${r.error}`)
    const reads: string[][] = []
    for (const { dv, dir } of tables) {
      const model = new Map<string, Rec>()
      applyModel(model, PAIMON_FIRST)
      const table = await Table.open(dir)
      expect(table.view.options.bucket).toBe(-1)
      await writeBatch(table, STRATA.map((r, i) => recordFromJson(table.view, r, `record ${i}`)))
      applyModel(model, STRATA)
      await compactTable(table, { full: true })
      const latest = (await table.snapshots.latest())!
      const live = await table.manifests.liveEntries(latest)
      const index = (await table.manifests.readIndexManifest(latest.indexManifest)).filter((e) => e.indexType === HASH_INDEX)
      cases.push({
        dv,
        model: byKey([...model.values()], SCHEMA.primaryKeys),
        finalModel: [],
        strataFinal: [],
        strataAfterStrata: byKey((await readAll(table)).map((r) => renderRow(table.view.fields, r)), SCHEMA.primaryKeys),
        buckets: [...new Set(live.map((e) => e.bucket))].sort(),
        hashFiles: index.length,
      })
      applyModel(model, PAIMON_SECOND)
      cases[cases.length - 1].finalModel = byKey([...model.values()], SCHEMA.primaryKeys)
      reads.push(['read', dir], ['dyn-write', dir, '--in', writeJsonLines(join(root, `second-${dv}.jsonl`), PAIMON_SECOND)], ['compact', dir, '--full'], ['read', dir])
    }
    const out = await jarBatch(JAR, reads)
    tables.forEach(({ dir }, i) => {
      cases[i].paimonAfterStrata = out[i * 4]
      if (!out[i * 4 + 1].ok) throw new Error(`Paimon's second dynamic-bucket write failed: ${out[i * 4 + 1].error}`)
      if (!out[i * 4 + 2].ok) throw new Error(`Paimon's compaction failed: ${out[i * 4 + 2].error}`)
      cases[i].paimonFinal = out[i * 4 + 3]
      void dir
    })
    for (const [i, { dir }] of tables.entries()) {
      const table = await Table.open(dir)
      cases[i].strataFinal = byKey((await readAll(table)).map((r) => renderRow(table.view.fields, r)), SCHEMA.primaryKeys)
    }
  }, 600_000)

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true })
  })

  for (const dv of [false, true]) {
    it(`deletion vectors ${dv ? 'on' : 'off'}: Strata writes and compacts Paimon's dynamic-bucket table, and Paimon reads it equal to the model`, () => {
      const c = cases.find((x) => x.dv === dv)!
      expect(c.buckets.length).toBeGreaterThan(2)
      expect(c.hashFiles).toBeGreaterThan(2)
      expect(c.strataAfterStrata).toEqual(c.model)
      expect(rowsOf(c.paimonAfterStrata!)).toEqual(c.model)
    })

    it(`deletion vectors ${dv ? 'on' : 'off'}: Paimon writes on through the HASH index Strata left, and both read the model`, () => {
      const c = cases.find((x) => x.dv === dv)!
      expect(rowsOf(c.paimonFinal!)).toEqual(c.finalModel)
      expect(c.strataFinal).toEqual(c.finalModel)
    })
  }
})
