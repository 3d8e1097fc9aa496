// The aggregates over nested values against Apache Paimon 1.4.2 (the interop harness's
// `nested-agg` command, interop/src/main/java/strata/interop/NestedAggInterop.java). For each
// input (a fixed one and seeded random ones: commits of +I, -U and -D records on ARRAY, MAP and
// ROW columns under collect, merge_map, merge_map_with_keytime, nested_update and
// nested_partial_update), three readings agree:
// - Paimon writes the commits into a table of the same schema and reads it;
// - Paimon reads Strata's table after Strata wrote the same commits (Paimon merges Strata's
//   level-0 files);
// - Strata reads its own table after a full compaction.
// Where Paimon's order follows Java's hashing (a MAP's entries, a distinct collect's elements,
// rows of a nested key) both sides are sorted before they compare; the other arrays (collect
// without distinct, nested_update without a key) compare in order. With deletion vectors a
// key's lone record agrees, and so does a retraction of a row an earlier commit wrote (the
// lookup compaction merges the older row with the level-0 records in one pass).
// Skipped with one line without Java and Maven, failing under CI, as test/interop.test.ts.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type PaimonResult, RUN_COMMAND, buildHarness, describeWithJava, paimonBatch, parseRows } from './helpers/interop.ts'
import { FIXED, FIXED_EXPECTED, type Rec, SCHEMA, commits, normalize, render } from './helpers/nested-agg-cases.ts'

const INPUTS: Rec[][][] = [FIXED, ...fc.sample(commits, { seed: 20260412, numRuns: 10 })]

/**
 * Deletion-vector tables: Paimon compacts level 0 with its lookup merge at each commit, Strata
 * compacts after each commit (its lookup compaction); reads skip level 0 on both.
 */
const DV_SCHEMA = { ...SCHEMA, options: { ...SCHEMA.options, 'deletion-vectors.enabled': 'true' } }
const LONE: Rec[][] = [[{ id: 9, tags: ['q', 'q'], bag: [1, 1] }]]

interface Case {
  schema: object
  input: Rec[][]
  compactEach: boolean
}
const CASES: Case[] = [
  ...INPUTS.map((input) => ({ schema: SCHEMA, input, compactEach: false })),
  { schema: DV_SCHEMA, input: FIXED, compactEach: true },
  { schema: DV_SCHEMA, input: LONE, compactEach: true },
]
const DV_FIXED = INPUTS.length
const DV_LONE = INPUTS.length + 1

function paimonRows(r: PaimonResult): string[] {
  if (!r.ok) throw new Error(`Paimon failed: ${r.error}`)
  return normalize(parseRows(r.output))
}

describeWithJava('nested aggregates against Paimon', RUN_COMMAND.replace('interop.test.ts', 'interop-nested-agg.test.ts'), () => {
  let root = ''
  const results: { paimon: string[]; paimonOnStrata: string[]; strata: string[]; strataRaw: Rec[] }[] = []

  beforeAll(async () => {
    buildHarness()
    root = mkdtempSync(join(tmpdir(), 'strata-interop-nested-agg-'))
    const commands: string[][] = []
    const strataTables: Table[] = []
    for (const [n, { schema, input, compactEach }] of CASES.entries()) {
      const s = await Table.create(join(root, `strata-${n}`), schema)
      for (const [i, batch] of input.entries()) {
        await writeBatch(s, batch.map((r, j) => recordFromJson(s.view, r, `commit ${i} row ${j}`)))
        if (compactEach) await compactTable(s)
      }
      strataTables.push(s)
      await Table.create(join(root, `paimon-${n}`), schema)
      const inFile = join(root, `in-${n}.jsonl`)
      writeFileSync(inFile, input.map((c) => JSON.stringify(c)).join('\n') + '\n')
      commands.push(['nested-agg', join(root, `paimon-${n}`), '--in', inFile])
      commands.push(['nested-agg', join(root, `strata-${n}`)])
    }
    const answers = paimonBatch(commands)
    for (const [n, s] of strataTables.entries()) {
      await compactTable(s, { full: true })
      const strataRaw = (await readAll(s)).map((r) => Object.fromEntries(s.view.fields.map((f, i) => [f.name, render(f, r[i])])))
      results.push({ paimon: paimonRows(answers[2 * n]), paimonOnStrata: paimonRows(answers[2 * n + 1]), strata: normalize(strataRaw), strataRaw })
    }
  }, 300_000)

  afterAll(() => root && rmSync(root, { recursive: true, force: true }))

  it('the fixed input merges to the rows worked out by hand, in Paimon and in Strata', () => {
    const expected = normalize(FIXED_EXPECTED)
    expect(results[0].paimon).toEqual(expected)
    expect(results[0].strata).toEqual(expected)
  })

  it('Paimon on its own table, Paimon on Strata’s and Strata after compaction agree on every input without deletion vectors', () => {
    for (const [n, r] of results.entries()) {
      if (n === DV_FIXED || n === DV_LONE) continue
      expect(r.paimonOnStrata, `case ${n}: Paimon reading Strata's table`).toEqual(r.paimon)
      expect(r.strata, `case ${n}: Strata`).toEqual(r.paimon)
    }
  })

  it("with deletion vectors a key's lone record keeps a distinct collect's duplicates in both", () => {
    const r = results[DV_LONE]
    expect(r.strataRaw[0].tags).toEqual(['q', 'q'])
    expect(r.paimon).toEqual(r.strata)
    expect(r.paimonOnStrata).toEqual(r.strata)
  })

  it('with deletion vectors a retraction of a row an earlier commit wrote is applied by both: the looked-up row and the level-0 records merge in one pass', () => {
    const r = results[DV_FIXED]
    expect(r.paimon).toEqual(normalize(FIXED_EXPECTED))
    // merging the level-0 -U alone first (a retraction from nothing) would keep 'c'
    const strataKey1 = r.strataRaw.find((x) => x.id === 1)!
    expect(strataKey1.tags).toEqual(['a', 'b'])
    expect(r.strata).toEqual(r.paimon)
    expect(r.paimonOnStrata).toEqual(r.strata)
  })
})
