// The compaction benchmark's cold processes (bench/lib/cold-levers.ts): the compactor's code,
// bundled as the Lambda functions are, compacts a table correctly in a new Node process, as
// deployed and with a start-up lever (a compile cache that holds nothing for this Node, which
// must fall back to compiling; a V8 flag on the command line). The benchmark's figures are
// only worth what these processes do: the rows they write are checked here against the
// table's live keys.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type ColdEntries, buildColdEntries, coldVariants, runColdStrata } from '../bench/lib/cold-levers.ts'
import { createBenchTable, loadBatches } from '../bench/lib/dataset.ts'
import { readAll } from '../lib/read/table-read.ts'

const ROWS = 5 * 2_000
const KEYS = 6_000

let work: string
let entries: ColdEntries
let tableDir: string
/** the live keys after the batches: keys whose last record is not a delete */
let liveKeys: number

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'strata-cold-start-'))
  entries = await buildColdEntries(join(work, 'bundle'))
  tableDir = join(work, 'table')
  const table = await createBenchTable(tableDir, { buckets: 1, deletionVectors: false })
  await loadBatches(table, { keySpace: KEYS, batches: [ROWS / 5, ROWS / 5, ROWS / 5, ROWS / 5, ROWS / 5], deleteRatio: 0.05, seed: 7 })
  // merge on read, no compaction: the table's live keys
  liveKeys = (await readAll(table)).length
}, 120_000)

afterAll(() => rmSync(work, { recursive: true, force: true }))

describe('the cold-process benchmark entry', () => {
  it('compacts the table in a new process as deployed: every live key, by the columnar merge', async () => {
    const deployed = coldVariants(work, async () => {}).find((v) => v.id === 'deployed')!
    const r = await runColdStrata(entries.strata, deployed, tableDir, join(work, 'run-deployed'), process.env)
    expect(r.rowsOut).toBe(liveKeys)
    expect(r.columnarSteps).toBeGreaterThan(0)
    expect(r.readySeconds).toBeGreaterThan(0)
    expect(r.processSeconds).toBeGreaterThanOrEqual(r.readySeconds)
  }, 120_000)

  it('falls back to compiling when the compile cache holds nothing usable, and a V8 flag changes no rows', async () => {
    const variants = coldVariants(work, async () => {})
    const levers = [variants.find((v) => v.id === 'maglev')!, { id: 'bad-cache', label: 'a compile cache directory that cannot be created', nodeArgs: [], env: { NODE_COMPILE_CACHE: join(entries.strata, 'not-a-directory') } }]
    for (const v of levers) {
      const r = await runColdStrata(entries.strata, v, tableDir, join(work, `run-${v.id}`), process.env)
      expect(r.rowsOut, v.id).toBe(liveKeys)
    }
  }, 120_000)
})
