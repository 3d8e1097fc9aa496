// Compaction and deletion vectors against the in-memory model: random interleavings of
// writes, compactions (picked, full, one bucket), expirations and reads, for every merge
// engine, with deletion vectors off, on, and on with merge-on-read.

import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { dvIndexByBucket } from '../lib/handle/bucket-state.ts'
import { bucketIdentifier } from '../lib/manifest/identifiers.ts'
import { CommitConflictError } from '../lib/errors.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { referencesOf } from '../lib/maintenance/references.ts'
import { MIN_ORPHAN_OLDER_THAN_MS, removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { lookup, newReadStats, readAll } from '../lib/read/table-read.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { Table } from '../lib/handle/table.ts'
import type { Row } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type Engine, type Op, TableModel, opArb, schemaFor, sortRows } from './helpers/model.ts'
import { localStores, s3Stores } from './helpers/stores.ts'

type Mode = 'mor' | 'dv' | 'dv+mor' | 'dv, an index file per vector'
const MODE_OPTIONS: Record<Mode, Record<string, string>> = {
  mor: {},
  dv: { 'deletion-vectors.enabled': 'true' },
  'dv+mor': { 'deletion-vectors.enabled': 'true', 'deletion-vectors.merge-on-read': 'true' },
  // index files rolled at every vector (deletion-vector.index-file.target-size): a bucket holds several
  'dv, an index file per vector': { 'deletion-vectors.enabled': 'true', 'deletion-vector.index-file.target-size': '1 b' },
}

type Step =
  | { t: 'write'; ops: Op[] }
  | { t: 'compact' }
  | { t: 'full' }
  | { t: 'bucket'; bucket: number }
  | { t: 'expire' }

const stepArb = (engine: Engine): fc.Arbitrary<Step> =>
  fc.oneof(
    { weight: 5, arbitrary: fc.array(opArb(engine), { minLength: 1, maxLength: 10 }).map((ops): Step => ({ t: 'write', ops })) },
    // a bulk load makes one run much larger than the others, so size-ratio picks leave it
    // alone and compactions output below the top level (where deletes must be kept)
    {
      weight: 1,
      arbitrary: fc.tuple(fc.integer({ min: 20, max: 60 }), fc.integer({ min: -5, max: 5 })).map(([n, a]): Step => ({
        t: 'write',
        ops: Array.from({ length: n }, (_, id): Op => ({ _kind: '+I', dt: id % 3 ? '2024-05-01' : '2024-05-02', id, a, b: `bulk${id}`, c: id })),
      })),
    },
    { weight: 2, arbitrary: fc.constant<Step>({ t: 'compact' }) },
    { weight: 1, arbitrary: fc.constant<Step>({ t: 'full' }) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 }).map((bucket): Step => ({ t: 'bucket', bucket })) },
    { weight: 1, arbitrary: fc.constant<Step>({ t: 'expire' }) },
  )

async function write(table: Table, ops: Op[]) {
  return writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
}

async function l0Count(table: Table): Promise<number> {
  const s = await table.snapshots.latest()
  if (!s) return 0
  return (await table.manifests.liveEntries(s)).filter((e) => e.file.level === 0).length
}

async function compactAll(table: Table, full = false): Promise<void> {
  await compactTable(table, { full })
}

function runs(engine: Engine, mode: Mode, stores: ReturnType<typeof localStores>, numRuns: number) {
  it(`${engine}, ${mode}: every read of every retained snapshot equals the model`, async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb(engine), { minLength: 2, maxLength: 16 }), async (steps) => {
        const table = await Table.create(
          stores.fresh(),
          schemaFor(engine, { ...MODE_OPTIONS[mode], 'num-sorted-run.compaction-trigger': '3', 'snapshot.num-retained.min': '3', 'snapshot.time-retained': '0 ms' }),
        )
        const model = new TableModel(engine)
        // reads skip level 0 with deletion vectors, and for first-row (as Paimon reads it)
        const skipsLevel0 = mode === 'dv' || mode === 'dv, an index file per vector' || engine === 'first-row'
        // expected read of each snapshot id; in plain deletion-vector mode only snapshots
        // whose buckets hold no level-0 file read as the model (L0 rows are invisible)
        const history = new Map<number, Row[]>()
        const record = async () => {
          const id = await table.snapshots.latestId()
          if (id === 0) return
          if (skipsLevel0 && (await l0Count(table)) > 0) return
          history.set(id, model.snapshot())
        }
        for (const step of steps) {
          switch (step.t) {
            case 'write':
              await write(table, step.ops)
              model.applyBatch(step.ops)
              break
            case 'compact':
              await compactAll(table)
              break
            case 'full':
              await compactAll(table, true)
              break
            case 'bucket': {
              const s = await table.snapshots.latest()
              for (const e of s ? await table.manifests.liveEntries(s) : []) {
                if (e.bucket !== step.bucket) continue
                await compactBucket(table, { partition: e.partition, bucket: e.bucket })
                break
              }
              break
            }
            case 'expire': {
              const r = await expireSnapshots(table, { numRetainedMin: 3, timeRetainedMs: 0 })
              for (const id of r.expired) history.delete(id)
              break
            }
          }
          await record()
          if (mode === 'dv, an index file per vector') {
            for (const entries of (await dvIndexByBucket(table, await table.snapshots.latest())).values()) for (const e of entries) expect(e.dvRanges?.length).toBe(1)
          }
          if (!skipsLevel0) {
            expect(sortRows(await readAll(table))).toEqual(model.snapshot())
          }
        }
        if (skipsLevel0) {
          // compaction makes everything visible; then a read opens no L0 file and merges nothing
          await compactAll(table)
          expect(await l0Count(table)).toBe(0)
          const stats = newReadStats()
          expect(sortRows(await readAll(table, { stats }))).toEqual(model.snapshot())
          expect(stats.filesOpened[0] ?? 0).toBe(0)
          // first-row still merges the levels above 0 (they hold each key once, so it costs nothing)
          if (mode !== 'mor') expect(stats.mergedSplits).toBe(0)
          await record()
        }
        const retained = new Set(await table.snapshots.listIds())
        for (const [id, rows] of history) {
          if (!retained.has(id)) continue
          expect(sortRows(await readAll(table, { snapshotId: id }))).toEqual(rows)
        }
        // every retained snapshot references only objects that exist
        const snaps = await Promise.all([...retained].map((id) => table.snapshots.snapshot(id)))
        const refs = await referencesOf(table, snaps.filter((s) => s !== null))
        for (const key of refs) expect(await table.store.head(key), key).not.toBeNull()
      }),
      { numRuns },
    )
  })
}

describe('compaction on local disk', () => {
  const stores = localStores()
  beforeAll(() => stores.setup())
  afterAll(() => stores.teardown())
  for (const engine of ['deduplicate', 'partial-update', 'aggregation', 'first-row'] as Engine[]) {
    // first-row with deletion vectors is refused at create, as Paimon refuses it
    for (const mode of ['mor', 'dv', 'dv+mor'] as Mode[]) if (engine !== 'first-row' || mode === 'mor') runs(engine, mode, stores, 8)
  }
  runs('deduplicate', 'dv, an index file per vector', stores, 8)
})

describe('compaction rules, deterministic', () => {
  const stores = localStores()
  beforeAll(() => stores.setup())
  afterAll(() => stores.teardown())
  const put = (ids: number[], kind: Op['_kind'] = '+I'): Op[] => ids.map((id) => ({ _kind: kind, dt: '2024-05-01', id, a: id, b: null, c: null }))

  for (const mode of ['mor', 'dv'] as Mode[]) {
    it(`${mode}: a delete compacted below the top level still hides the older row`, async () => {
      const table = await Table.create(stores.fresh(), schemaFor('deduplicate', { ...MODE_OPTIONS[mode], bucket: '1', 'num-sorted-run.compaction-trigger': '3' }))
      await write(table, put(Array.from({ length: 200 }, (_, i) => i)))
      await compactAll(table, true)
      await write(table, put([5], '-D'))
      await write(table, put([6]))
      await write(table, put([7], '-D'))
      const [res] = await compactTable(table)
      // the small runs were lifted without the large top level: output below it
      expect(res.outputLevel).toBeLessThan(5)
      const ids = (await readAll(table)).map((r) => r[1])
      expect(ids).not.toContain(5)
      expect(ids).not.toContain(7)
      expect(ids).toHaveLength(198)
      if (mode === 'dv') expect(res.rowsDeletedByVector).toBe(3)
    })
  }
})

describe('compaction on embedded S3', () => {
  const stores = s3Stores()
  beforeAll(() => stores.setup())
  afterAll(() => stores.teardown())
  runs('deduplicate', 'dv', stores, 5)
  runs('partial-update', 'dv+mor', stores, 4)

  const ops = (ids: number[], a: number): Op[] => ids.map((id) => ({ _kind: '+I', dt: '2024-05-01', id, a, b: null, c: null }))

  async function oneBucket(table: Table) {
    const s = await table.snapshots.latest()
    const e = (await table.manifests.liveEntries(s!)).find((x) => x.file.level === 0)!
    return { partition: e.partition, bucket: e.bucket }
  }

  it('a compaction racing an append to the same bucket: both land, nothing lost', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', { bucket: '1', 'deletion-vectors.enabled': 'true' }))
    const model = new TableModel('deduplicate')
    for (let i = 0; i < 3; i++) {
      await write(table, ops([1, 2, 3, 4], i))
      model.applyBatch(ops([1, 2, 3, 4], i))
    }
    const target = await oneBucket(table)
    const res = await compactBucket(table, {
      ...target,
      beforeCommit: async () => {
        // the append lands between the compaction's read and its commit
        await write(table, ops([2, 5], 9))
        model.applyBatch(ops([2, 5], 9))
      },
    })
    expect(res.snapshotId).toBe(5)
    expect((await table.snapshots.snapshot(4))!.commitKind).toBe('APPEND')
    // the append's L0 file is still there; one more compaction makes it visible
    expect(await l0Count(table)).toBe(1)
    await compactAll(table)
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
  })

  it('two compactions of one bucket racing: exactly one lands, the other changes nothing', async () => {
    const table = await Table.create(stores.fresh(), schemaFor('deduplicate', { bucket: '1', 'deletion-vectors.enabled': 'true' }))
    const model = new TableModel('deduplicate')
    // a large top level, so the next compaction lifts only L0 and marks deletion vectors
    const many = Array.from({ length: 60 }, (_, i) => i)
    await write(table, ops(many, 0))
    model.applyBatch(ops(many, 0))
    await compactAll(table)
    await write(table, ops([2, 3, 4], 1))
    model.applyBatch(ops([2, 3, 4], 1))
    const target = await oneBucket(table)
    let inner: Awaited<ReturnType<typeof compactBucket>> | null = null
    const outer = compactBucket(table, {
      ...target,
      beforeCommit: async () => {
        const other = await Table.open(table.store)
        inner = await compactBucket(other, target)
      },
    })
    await expect(outer).rejects.toBeInstanceOf(CommitConflictError)
    expect(inner!.snapshotId).toBe(4)
    expect(await table.snapshots.latestId()).toBe(4)
    // the loser removed what it wrote: no object is left that no snapshot references
    const orphans = await removeOrphanFiles(table, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now: Date.now() + MIN_ORPHAN_OLDER_THAN_MS + 60_000, dryRun: true })
    expect(orphans.deleted).toEqual([])
    expect(sortRows(await readAll(table))).toEqual(model.snapshot())
    const dv = (await table.manifests.readIndexManifest((await table.snapshots.latest())!.indexManifest)).filter(
      (e) => bucketIdentifier(e.partition, e.bucket) === bucketIdentifier(target.partition, target.bucket),
    )
    expect(dv).toHaveLength(1)
    expect(dv[0].dvRanges!.reduce((n, m) => n + Number(m.cardinality), 0)).toBe(3)
  })
})

describe('equal sequence numbers (two writers, one millisecond)', () => {
  // Writers number rows from their clock (sequenceBase), so two batches started in the same
  // millisecond by two writers share a base and a key at the same row position ties. Which
  // batch wins is arbitrary;
  // what must hold is that readers and compaction pick the same one, so a value never
  // changes without a write.
  it('merge-on-read and compaction resolve a tie the same way, before and after a full compaction', async () => {
    const { MemoryStore } = await import('../lib/store/memory-store.ts')
    const schema = { fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'STRING' }], primaryKeys: ['id'], options: { bucket: '1' } }
    for (let round = 0; round < 12; round++) {
      const store = new MemoryStore()
      await Table.create(store, schema)
      const [a, b] = [await Table.open(store), await Table.open(store)]
      // two writers whose clocks read the same millisecond: key 1 at row 0 in each
      const base = 1_000_000n << 20n
      await Promise.all([
        writeBatch(a, [{ kind: 0, row: [1, `a${round}`] }], { sequenceBase: base }),
        writeBatch(b, [{ kind: 0, row: [1, `b${round}`] }], { sequenceBase: base }),
      ])
      const t = await Table.open(store)
      expect(await t.snapshots.latestId()).toBe(2)
      const before = await readAll(t)
      expect([[1, ...(await lookup(t, { id: 1 }))!.slice(1)]]).toEqual(before)
      await compactTable(t, { full: true })
      const after = await readAll(await Table.open(store))
      expect(after).toEqual(before)
    }
  })
})

describe('sequence.field with deletion vectors (the soak found older versions winning)', () => {
  it('writes of random versions, compactions between them: every key reads at its highest version, later write on a tie', async () => {
    const { MemoryStore } = await import('../lib/store/memory-store.ts')
    const step = fc.oneof(
      fc.record({ t: fc.constant('write' as const), rows: fc.array(fc.tuple(fc.integer({ min: 0, max: 5 }), fc.integer({ min: 0, max: 9 })), { minLength: 1, maxLength: 4 }) }),
      fc.record({ t: fc.constant('compact' as const), full: fc.boolean() }),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 14 }), fc.constantFrom('deduplicate', 'partial-update'), async (steps, engine) => {
        const table = await Table.create(new MemoryStore(), {
          fields: [{ name: 'id', type: 'INT' }, { name: 'version', type: 'INT' }, { name: 'w', type: 'INT' }],
          primaryKeys: ['id'],
          options: { bucket: '1', 'deletion-vectors.enabled': 'true', 'sequence.field': 'version', 'merge-engine': engine },
        })
        const model = new Map<number, { version: number; w: number }>()
        let w = 0
        for (const s of steps) {
          if (s.t === 'compact') {
            await compactTable(table, { full: s.full })
            continue
          }
          const rows: Row[] = s.rows.map(([id, version]) => [id, version, w++])
          await writeBatch(table, rows.map((row) => ({ kind: 0, row })))
          for (const [id, version, wv] of rows as [number, number, number][]) {
            const cur = model.get(id)
            if (!cur || version >= cur.version) model.set(id, { version, w: wv })
          }
        }
        await compactTable(table, { full: true })
        const got = (await readAll(table)).sort((a, b) => (a[0] as number) - (b[0] as number))
        expect(got).toEqual([...model].sort(([a], [b]) => a - b).map(([id, v]) => [id, v.version, v.w]))
      }),
      { numRuns: 60 },
    )
  })
})

describe('deletion-vector index files rolled at deletion-vector.index-file.target-size', () => {
  it('a compaction marking rows in two files writes two index files when the target is one byte, one when it is the default; reads are the same', async () => {
    for (const [target, files] of [['1 b', 2], ['2 mb', 1]] as const) {
      const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '1', 'deletion-vectors.enabled': 'true', 'deletion-vector.index-file.target-size': target }))
      const put = (ids: number[], a: number) => write(table, ids.map((id) => ({ _kind: '+I' as const, dt: '2024-05-01', id, a, b: null, c: null })))
      await put([1, 2, 3, 7, 8, 9], 1)
      await compactAll(table, true) // one file at the top level
      await put([1, 7], 2)
      await compactAll(table) // a file a level below; marks ids 1 and 7 in the top one
      await put([1], 3)
      await compactAll(table) // a file below that; marks id 1 in the level-below one: two files carry a vector
      const index = [...(await dvIndexByBucket(table, await table.snapshots.latest())).values()].flat()
      expect(index.flatMap((e) => e.dvRanges ?? []).length, `target ${target}: vectors`).toBe(2)
      expect(index.length, `target ${target}: index files`).toBe(files)
      expect(sortRows(await readAll(table)).map((r) => [r[1], r[2]])).toEqual([[1, 3], [2, 1], [3, 1], [7, 2], [8, 1], [9, 1]])
    }
  })
})
