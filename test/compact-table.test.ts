// compactTable, the CLI's `strata compact`: one call lands one COMPACT snapshot for every
// bucket it compacts (their commits folded), reads are unchanged by it, a bucket whose inputs
// changed underneath is not committed over (it is redone from fresh state), and a table with
// nothing due says why, with the planner's reason.

import fc from 'fast-check'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dvIndexByBucket } from '../lib/handle/bucket-state.ts'
import { Table } from '../lib/handle/table.ts'
import { bucketIdentifier } from '../lib/manifest/identifiers.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { type TableCompactionJob, compactTable, describeSkipped, skippedOf } from '../lib/lsm/compact-table.ts'
import { MIN_ORPHAN_OLDER_THAN_MS, removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { readAll } from '../lib/read/table-read.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { strata } from './helpers/cli-in-process.ts'
import { type Op, TableModel, opArb, schemaFor, sortRows } from './helpers/model.ts'
import { localStores } from './helpers/stores.ts'

const stores = localStores()
beforeAll(() => stores.setup())
afterAll(() => stores.teardown())

const DV = { 'deletion-vectors.enabled': 'true' }

async function write(table: Table, model: TableModel, ops: Op[]): Promise<void> {
  await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
  model.applyBatch(ops)
}

/** Rows of ids 0..n-1 in both partitions: every bucket of both gets a level-0 file. */
const everywhere = (n: number, a: number): Op[] =>
  Array.from({ length: n }, (_, id) => [
    { _kind: '+I' as const, dt: '2024-05-01', id, a, b: `x${id}`, c: id },
    { _kind: '+I' as const, dt: '2024-05-02', id, a, b: `y${id}`, c: id },
  ]).flat()

/** The (partition, bucket)s holding live files at the latest snapshot. */
async function liveBuckets(table: Table): Promise<Set<string>> {
  const s = await table.snapshots.latest()
  return new Set((s ? await table.manifests.liveEntries(s) : []).map((e) => bucketIdentifier(e.partition, e.bucket)))
}

async function noOrphans(table: Table): Promise<void> {
  const orphans = await removeOrphanFiles(table, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now: Date.now() + MIN_ORPHAN_OLDER_THAN_MS + 60_000, dryRun: true })
  expect(orphans.deleted).toEqual([])
}

describe('compactTable lands one snapshot for all its buckets', () => {
  it('two partitions × three buckets, merge-on-read: one COMPACT snapshot, every bucket in it, the rows unchanged', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', { 'num-sorted-run.compaction-trigger': '2' }))
    const model = new TableModel('deduplicate')
    for (let i = 0; i < 3; i++) await write(table, model, everywhere(12, i))
    expect((await liveBuckets(table)).size).toBe(6)
    const before = sortRows(await readAll(table))
    const reported: [string, number, number | null][] = []
    const results = await compactTable(table, { onBucket: (p, b, r) => reported.push([p, b, r.snapshotId]) })
    expect(await table.snapshots.latestId()).toBe(4)
    expect((await table.snapshots.snapshot(4))!.commitKind).toBe('COMPACT')
    expect(results).toHaveLength(6)
    expect(results.every((r) => r.snapshotId === 4 && r.inputFiles === 3 && r.skipped === undefined)).toBe(true)
    expect(new Set(results.map((r) => `${r.partition}/${r.bucket}`)).size).toBe(6)
    expect(reported.map(([, , id]) => id)).toEqual(Array(6).fill(4))
    // every bucket is now one file at the top level
    const live = await table.manifests.liveEntries((await table.snapshots.latest())!)
    expect(live.map((e) => e.file.level)).toEqual(Array(6).fill(results[0].outputLevel))
    expect(results[0].outputLevel).toBeGreaterThan(0)
    expect(sortRows(await readAll(table))).toEqual(before)
    expect(before).toEqual(model.snapshot())
    await noOrphans(table)
  })

  it('deletion vectors: the one snapshot changes every bucket\'s index', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', DV))
    const model = new TableModel('deduplicate')
    await write(table, model, everywhere(120, 0))
    await compactTable(table, { full: true })
    // updates of a quarter of the keys, in every bucket: lifted above the large top level
    // (not merged with it, being far smaller), they mark the old rows in vectors
    await write(table, model, everywhere(30, 1))
    const id = await table.snapshots.latestId()
    const results = await compactTable(table)
    expect(await table.snapshots.latestId()).toBe(id + 1)
    expect(results.every((r) => r.snapshotId === id + 1 && r.rowsDeletedByVector > 0)).toBe(true)
    const after = await table.snapshots.latest()
    const before = await table.snapshots.snapshot(id)
    const [was, now] = [await dvIndexByBucket(table, before), await dvIndexByBucket(table, after)]
    expect(was.size).toBe(0)
    expect([...now.keys()].sort()).toEqual([...(await liveBuckets(table))].sort())
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  })

  it('capped jobs (compaction.max-input-files 2) go again: one snapshot per round, each holding every bucket', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', { 'compaction.max-input-files': '2' }))
    const model = new TableModel('deduplicate')
    for (let i = 0; i < 4; i++) await write(table, model, everywhere(12, i))
    const results = await compactTable(table, { full: true })
    const rounds = [...new Set(results.map((r) => r.snapshotId))]
    expect(rounds).toEqual([5, 6, 7])
    for (const id of rounds) expect(results.filter((r) => r.snapshotId === id)).toHaveLength(6)
    expect(await table.snapshots.latestId()).toBe(7)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  })

  for (const mode of ['mor', 'dv'] as const) {
    it(`${mode}: random writes into several buckets, then one compactTable: at most one snapshot, reads as the model before and after`, async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.array(opArb('deduplicate'), { minLength: 1, maxLength: 12 }), { minLength: 1, maxLength: 6 }),
          fc.integer({ min: 1, max: 4 }),
          fc.boolean(),
          // jobs merging at once: one, three, or compaction.task-threads -1
          fc.constantFrom('1', '3', '-1'),
          async (batches, trigger, full, threads) => {
            const options = { 'num-sorted-run.compaction-trigger': String(trigger), 'compaction.task-threads': threads, ...(mode === 'dv' ? DV : {}) }
            const table = await Table.create(stores.fresh(), schemaFor('deduplicate', options))
            const model = new TableModel('deduplicate')
            for (const ops of batches) await write(table, model, ops)
            const before = sortRows(await readAll(table))
            // merge-on-read reads level 0: it reads as the model before compaction too
            if (mode === 'mor') expect(before).toEqual(model.snapshot())
            const id = await table.snapshots.latestId()
            const buckets = (await liveBuckets(table)).size
            const results = await compactTable(table, { full })
            const landed = new Set(results.flatMap((r) => (r.snapshotId === null ? [] : [r.snapshotId])))
            expect(results.some((r) => r.needsMore)).toBe(false)
            expect(await table.snapshots.latestId()).toBe(id + landed.size)
            expect(landed.size).toBeLessThanOrEqual(1)
            // every bucket is reported: compacted in the snapshot, or skipped with a reason
            expect(results.length).toBe(buckets)
            for (const r of results) expect(r.snapshotId === null).toBe(r.skipped !== undefined)
            // deletion-vector readers see level 0 only once compacted: after a full or
            // picked compaction (force-up-level-0 takes all of it), nothing is left there
            expect(sortRows(await readAll(table))).toEqual(model.snapshot())
          },
        ),
        { numRuns: 12 },
      )
    })
  }
})

describe('compactTable below the trigger', () => {
  it('three runs under trigger 5: no snapshot; every bucket is skipped as below the trigger, and says so', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', { 'num-sorted-run.compaction-trigger': '5' }))
    const model = new TableModel('deduplicate')
    for (let i = 0; i < 3; i++) await write(table, model, everywhere(12, i))
    const results = await compactTable(table)
    expect(await table.snapshots.latestId()).toBe(3)
    expect(results).toHaveLength(6)
    expect(skippedOf(results)).toEqual(Array(6).fill({ kind: 'below-trigger', sortedRuns: 3, trigger: 5, fullWouldCompact: true }))
    expect(describeSkipped(skippedOf(results))).toBe('6 buckets below the trigger (num-sorted-run.compaction-trigger 5; most runs in a bucket: 3)')
  })

  it('deletion vectors, level 0 empty: skipped for having no level-0 file; full on one top run: already one run at the top level', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', DV))
    const model = new TableModel('deduplicate')
    await write(table, model, everywhere(12, 0))
    await compactTable(table, { full: true })
    const id = await table.snapshots.latestId()
    const picked = skippedOf(await compactTable(table))
    expect(picked.map((r) => r.kind)).toEqual(Array(6).fill('no-level-0'))
    expect(describeSkipped(picked, true)).toBe('6 buckets with no level-0 file')
    // one top-level run each, no vectors: a full compaction would change nothing either
    expect(picked.every((r) => 'fullWouldCompact' in r && !r.fullWouldCompact)).toBe(true)
    const full = skippedOf(await compactTable(table, { full: true }))
    expect(full).toEqual(Array(6).fill({ kind: 'one-top-run' }))
    expect(await table.snapshots.latestId()).toBe(id)
  })
})

describe('compactTable with a concurrent change', () => {
  const compactWith = async (table: Table, during: () => Promise<void>): Promise<TableCompactionJob[]> => {
    let rounds = 0
    return compactTable(table, {
      beforeCommit: async () => {
        if (rounds++ === 0) await during()
      },
    })
  }

  it('a writer lands between the rewrite and the commit: both land, no row lost', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', { ...DV, 'num-sorted-run.compaction-trigger': '2' }))
    const model = new TableModel('deduplicate')
    await write(table, model, everywhere(20, 0))
    await compactTable(table, { full: true })
    await write(table, model, everywhere(20, 1))
    const id = await table.snapshots.latestId()
    const writer = await Table.open(table.store)
    const results = await compactWith(table, () => write(writer, model, everywhere(5, 2)))
    // the append took id + 1, the fold id + 2, with every bucket
    expect((await table.snapshots.snapshot(id + 1))!.commitKind).toBe('APPEND')
    expect(results.every((r) => r.snapshotId === id + 2)).toBe(true)
    expect(await table.snapshots.latestId()).toBe(id + 2)
    // the append's level-0 files wait for the next compaction, then read as the model
    await compactTable(table)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    await noOrphans(table)
  })

  it('another compaction of one bucket lands first: that bucket is not committed over (redone from fresh state), the others land in one snapshot', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', { ...DV, 'num-sorted-run.compaction-trigger': '2' }))
    const model = new TableModel('deduplicate')
    await write(table, model, everywhere(120, 0))
    await compactTable(table, { full: true })
    await write(table, model, everywhere(30, 1))
    const id = await table.snapshots.latestId()
    const s = (await table.snapshots.latest())!
    const target = (await table.manifests.liveEntries(s)).find((e) => e.file.level === 0)!
    const other = await Table.open(table.store)
    let inner: number | null = null
    const results = await compactWith(table, async () => {
      inner = (await compactBucket(other, { partition: target.partition, bucket: target.bucket })).snapshotId
    })
    expect(inner).toBe(id + 1)
    // the fold landed the five other buckets; the sixth conflicted and was redone: nothing left to do
    expect(await table.snapshots.latestId()).toBe(id + 2)
    const compacted = results.filter((r) => r.snapshotId !== null)
    expect(compacted).toHaveLength(5)
    expect(compacted.every((r) => r.snapshotId === id + 2)).toBe(true)
    const redone = results.filter((r) => r.snapshotId === null)
    expect(redone.map((r) => r.skipped?.kind)).toEqual(['no-level-0'])
    // the vectors of the contested bucket are the other compaction's, its rows all there
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    const dv = await dvIndexByBucket(table, await table.snapshots.latest())
    expect(dv.size).toBe(6)
    await noOrphans(table)
  })
})

describe('strata compact', () => {
  let dir = ''
  beforeAll(() => void (dir = mkdtempSync(join(tmpdir(), 'strata-compact-'))))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('nothing due: says why and names --full; then --full compacts every bucket in one snapshot', async () => {
    const uri = join(dir, 't')
    const table = await Table.create(new LocalFileStore(uri), schemaFor('deduplicate', { 'num-sorted-run.compaction-trigger': '5' }))
    const model = new TableModel('deduplicate')
    for (let i = 0; i < 3; i++) await write(table, model, everywhere(12, i))
    let r = await strata(['compact', uri])
    expect(r.code).toBe(0)
    expect(r.stdout).toBe(
      "nothing to compact: 6 buckets below the trigger (num-sorted-run.compaction-trigger 5; most runs in a bucket: 3); 'strata compact --full' rewrites every bucket into the top level\n",
    )
    r = await strata(['compact', uri, '--full'])
    expect(r.stdout).toBe('6 compaction(s): 18 files in, 6 written, 0 upgraded; snapshot 4\n')
    r = await strata(['compact', uri, '--full'])
    expect(r.stdout).toBe('nothing to compact: 6 buckets already one run at the top level\n')
  })

  it('some buckets due: the summary says how many were skipped and why, briefly', async () => {
    const uri = join(dir, 'u')
    const table = await Table.create(new LocalFileStore(uri), schemaFor('deduplicate', { 'num-sorted-run.compaction-trigger': '2' }))
    const model = new TableModel('deduplicate')
    await write(table, model, everywhere(12, 0))
    // only the first partition gets a second run
    await write(table, model, everywhere(12, 1).filter((op) => op.dt === '2024-05-01'))
    const r = await strata(['compact', uri])
    expect(r.stdout).toBe('3 compaction(s): 6 files in, 3 written, 0 upgraded; snapshot 3; skipped 3 buckets below the trigger\n')
  })
})
