// The memory of one write touching many partitions, and of a read of them, stays bounded:
// the writer holds at most its write-ahead budget of file entries (the rest go into manifests
// written ahead of the commit), a failed or abandoned commit leaves only objects the orphan
// pass removes, the folding committer lands a message naming manifests written ahead, and a
// read plans one run of manifests at a time. Counts only, never times or memory.

import { describe, expect, it } from 'vitest'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { commitMessageOf, decodeCommitMessage, encodeCommitMessage } from '../lib/commit/commit-message.ts'
import { commitFromQueue } from '../lib/commit/commit-service.ts'
import { Table } from '../lib/handle/table.ts'
import { removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { planScan, planScanChunks, readAll } from '../lib/read/table-read.ts'
import { independentGroups } from '../lib/read/manifest-chunks.ts'
import fc from 'fast-check'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { RowKind, type Row } from '../lib/types.ts'
import { BatchWriter, writeBatch } from '../lib/write/table-write.ts'
import type { WriteRecord } from '../lib/write/record-checks.ts'
import { RecordingCommitter } from './helpers/commit.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'

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
const spread = (n: number, v = 'x', from = 0) => Array.from({ length: n }, (_, i) => rec(from + i, 1, `${v}${from + i}`))
const sorted = (rows: Row[]) => rows.map((r) => `${r[0]}|${r[1]}|${r[2]}`).sort()

/** Writes records through a BatchWriter, flushing when full; the most entries it held after any flush. */
async function writeWatching(table: Table, records: WriteRecord[], opts: ConstructorParameters<typeof BatchWriter>[1]) {
  const w = new BatchWriter(table, opts)
  let maxHeld = 0
  for (const r of records) {
    w.add(r)
    if (w.full) {
      await w.flush()
      maxHeld = Math.max(maxHeld, w.entriesHeld)
    }
  }
  const ahead = w.entriesWrittenAhead
  const res = await w.finish()
  return { res, maxHeld, ahead }
}

async function keys(store: MemoryStore): Promise<string[]> {
  return (await store.list('')).map((o) => o.key).sort()
}

describe('a write of many partitions holds a bounded number of file entries', () => {
  it('holds at most the budget plus one flush of entries however many partitions it touches, and commits every file', async () => {
    const budget = 100
    const bufferBytes = 30_000
    const held: number[] = []
    for (const n of [400, 1_600]) {
      const table = await Table.create(new MemoryStore(), SCHEMA)
      const { res, maxHeld, ahead } = await writeWatching(table, spread(n), { writeAheadFiles: budget, writeBufferSize: bufferBytes })
      held.push(maxHeld)
      expect(res.rowsWritten).toBe(n)
      expect(res.buckets.length).toBe(n)
      // all but the last budget's worth went ahead
      expect(ahead).toBeGreaterThanOrEqual(n - 2 * budget)
      const s = (await table.snapshots.latest())!
      expect(s.totalRecordCount).toBe(n)
      expect(s.deltaRecordCount).toBe(n)
      expect((await table.manifests.liveEntries(s)).length).toBe(n)
      expect(sorted(await readAll(table))).toEqual(sorted(spread(n).map((r) => r.row)))
    }
    // a flush of this buffer holds fewer than `budget` groups, so the entries held stay under
    // twice the budget at 400 and at 1,600 partitions alike
    for (const h of held) expect(h).toBeLessThan(2 * budget)
    expect(held[1]).toBeLessThanOrEqual(held[0] + budget)
  })

  it('sends manifests written ahead, not every entry, in its commit request; small writes keep every entry inline', async () => {
    const table = await Table.create(new MemoryStore(), SCHEMA)
    const rec1 = new RecordingCommitter()
    await writeBatch(table, spread(2_000), { committer: rec1, writeAheadFiles: 500, writeBufferSize: 100_000 })
    const req = rec1.requests[0]
    expect(req.writtenAhead!.manifests.length).toBeGreaterThan(0)
    expect(req.adds.length).toBeLessThan(1_000)
    expect(req.adds.length + req.writtenAhead!.manifests.reduce((n, m) => n + Number(m.numAddedFiles), 0)).toBe(2_000)
    expect(req.writtenAhead!.rowCount + req.adds.length).toBe(2_000)
    const rec2 = new RecordingCommitter()
    await writeBatch(table, spread(50), { committer: rec2, writeAheadFiles: 500 })
    expect(rec2.requests[0].writtenAhead).toBeUndefined()
    expect(rec2.requests[0].adds.length).toBe(50)
  })
})

describe('manifests written ahead and a commit that does not land', () => {
  it('a commit that fails leaves only objects the orphan pass removes; what was committed stays', async () => {
    const store = new MemoryStore()
    const table = await Table.create(store, SCHEMA)
    await writeBatch(table, spread(40, 'a'))
    const before = await keys(store)
    await expect(
      writeBatch(table, spread(1_500, 'b'), {
        writeAheadFiles: 200,
        writeBufferSize: 50_000,
        beforeSnapshotCreate: () => {
          throw new Error('the process died before the snapshot')
        },
      }),
    ).rejects.toThrow('died')
    const after = await keys(store)
    expect(after.filter((k) => k.startsWith('manifest/manifest-') && !before.includes(k)).length).toBeGreaterThan(1)
    // nothing landed: the table reads as before
    expect((await table.snapshots.latestId())).toBe(1)
    expect(sorted(await readAll(table))).toEqual(sorted(spread(40, 'a').map((r) => r.row)))
    const res = await removeOrphanFiles(await Table.open(store), { now: Date.now() + 2 * 24 * 3600_000 })
    expect(res.deleted.length).toBeGreaterThan(0)
    expect(await keys(store)).toEqual(before)
    expect(sorted(await readAll(await Table.open(store)))).toEqual(sorted(spread(40, 'a').map((r) => r.row)))
  })

  it('a batch that fails before its commit deletes its files and the manifests it wrote ahead', async () => {
    const store = new MemoryStore()
    const table = await Table.create(store, SCHEMA)
    await writeBatch(table, spread(10, 'a'))
    const before = await keys(store)
    function* failing() {
      yield* spread(1_200, 'b')
      throw new Error('the input broke off')
    }
    await expect(writeBatch(table, failing(), { writeAheadFiles: 200, writeBufferSize: 50_000 })).rejects.toThrow('broke off')
    expect(await keys(store)).toEqual(before)
  })

  it('the folding committer lands a message naming manifests written ahead beside an inline one, in one snapshot', async () => {
    const store = new MemoryStore()
    const table = await Table.create(store, SCHEMA)
    const big = new RecordingCommitter()
    await writeBatch(table, spread(1_500, 'b'), { committer: big, writeAheadFiles: 400, writeBufferSize: 100_000 })
    const small = new RecordingCommitter()
    await writeBatch(table, [rec(5_000, 1, 'c'), rec(5_001, 1, 'c')], { committer: small })
    const bodies = await Promise.all([big, small].map(async (c, i) => ({ id: `m${i}`, body: (await encodeCommitMessage(commitMessageOf(c.requests[0], 't'), store)).body })))
    // the message names its manifests (envelope version 2: a committer that knows only 1 refuses it), and round-trips
    expect(JSON.parse(bodies[0].body).v).toBe(2)
    expect(JSON.parse(bodies[1].body).v).toBe(1)
    const decoded = await decodeCommitMessage(bodies[0].body, store)
    expect(decoded.writtenAhead!.manifests.length).toBe(big.requests[0].writtenAhead!.manifests.length)
    const out = await commitFromQueue(new BatchingCommitter(await Table.open(store)), bodies, { tableName: 't' })
    expect(out).toMatchObject({ landed: 2, snapshots: [1] })
    const t = await Table.open(store)
    const s = (await t.snapshots.latest())!
    expect(s.totalRecordCount).toBe(1_502)
    expect(sorted(await readAll(t))).toEqual(sorted([...spread(1_500, 'b'), rec(5_000, 1, 'c'), rec(5_001, 1, 'c')].map((r) => r.row)))
    // nothing the orphan pass finds: every object is referenced
    const res = await removeOrphanFiles(t, { now: Date.now() + 2 * 24 * 3600_000, dryRun: true })
    expect(res.deleted.filter((k) => !k.startsWith('_strata/'))).toEqual([])
  })
})

describe('a read plans one run of manifests at a time', () => {
  it("groups the manifests of disjoint partitions apart, and the streamed plan equals the whole one", async () => {
    const table = await Table.create(new MemoryStore(), { ...SCHEMA, options: { ...SCHEMA.options, 'manifest.merge-min-count': '1000' } })
    // one write of many partitions packs them into manifests of disjoint partition ranges
    await writeBatch(table, spread(1_500), { writeAheadFiles: 250, writeBufferSize: 100_000 })
    // two later writes into partitions within those ranges (their manifests overlap them)
    await writeBatch(table, [rec(10, 2, 'y'), rec(20, 2, 'y')])
    await writeBatch(table, [rec(1_490, 2, 'z')])
    const metas = await table.manifests.dataManifests((await table.snapshots.latest())!)
    const groups = independentGroups(metas, table.view.partitionFields.map((f) => f.type))
    // every manifest in one group, groups in the order of their first manifest
    expect(groups.flat().sort((a, b) => a - b)).toEqual([...metas.keys()])
    for (let i = 1; i < groups.length; i++) expect(groups[i][0]).toBeGreaterThan(groups[i - 1][0])
    expect(groups.length).toBeGreaterThan(1)
    const whole = await planScan(table)
    const chunked = await planScanChunks(table)
    const streamed: string[] = []
    let most = 0
    for await (const splits of chunked.splits) {
      most = Math.max(most, splits.length)
      for (const s of splits) streamed.push(`${s.path}:${s.files.map((f) => f.file.fileName).join(',')}`)
    }
    expect(streamed).toEqual(whole.splits.map((s) => `${s.path}:${s.files.map((f) => f.file.fileName).join(',')}`))
    // no batch holds the whole table
    expect(most).toBeLessThan(1_500)
  })

  // partitioned by one INT, by an INT and a STRING, and not at all (groups by bucket range)
  const layouts = [
    { name: 'one partition field', schema: SCHEMA, row: (p: number, id: number): Row => [p, BigInt(id), 'v'] },
    {
      name: 'two partition fields',
      schema: {
        fields: [
          { name: 'p', type: 'INT NOT NULL' },
          { name: 'q', type: 'STRING NOT NULL' },
          { name: 'id', type: 'BIGINT NOT NULL' },
        ],
        primaryKeys: ['p', 'q', 'id'],
        partitionKeys: ['p', 'q'],
        options: { bucket: '2' },
      },
      row: (p: number, id: number): Row => [p % 13, `q${p % 3}`, BigInt(id)],
    },
    {
      name: 'no partitions',
      schema: { fields: [{ name: 'id', type: 'BIGINT NOT NULL' }, { name: 'v', type: 'STRING' }], primaryKeys: ['id'], partitionKeys: [], options: { bucket: '8', 'manifest.bucket-group-size': '2' } },
      row: (p: number, id: number): Row => [BigInt(p * 3 + id), 'v'],
    },
  ]
  for (const layout of layouts) {
    it(`streams splits in the order of the whole plan, whatever the commits, deletes and compactions (${layout.name})`, async () => {
      const op = fc.record({ p: fc.integer({ min: 0, max: 40 }), id: fc.integer({ min: 0, max: 2 }), del: fc.boolean() })
      await fc.assert(
        fc.asyncProperty(fc.array(fc.record({ ops: fc.array(op, { minLength: 1, maxLength: 30 }), compact: fc.boolean() }), { minLength: 1, maxLength: 6 }), async (batches) => {
          const schema = layout.schema as typeof SCHEMA
          const table = await Table.create(new MemoryStore(), { ...schema, options: { ...schema.options, 'manifest.merge-min-count': '4' } })
          for (const b of batches) {
            await writeBatch(table, b.ops.map((o) => ({ row: layout.row(o.p, o.id), kind: o.del ? RowKind.DELETE : RowKind.INSERT })))
            if (b.compact) await compactTable(table, { full: true })
            const whole = (await planScan(table)).splits.map((s) => `${s.path}:${s.files.map((f) => f.file.fileName).join(',')}`)
            const streamed: string[] = []
            for await (const splits of (await planScanChunks(table)).splits) for (const s of splits) streamed.push(`${s.path}:${s.files.map((f) => f.file.fileName).join(',')}`)
            expect(streamed).toEqual(whole)
          }
        }),
        { numRuns: 12 },
      )
    }, 120_000)
  }

  it('reads back a model across writes of many partitions, compactions and deletes', async () => {
    const table = await Table.create(new MemoryStore(), { ...SCHEMA, options: { ...SCHEMA.options, 'manifest.merge-min-count': '3' } })
    const model = new Map<string, Row>()
    const apply = (rs: WriteRecord[]) => {
      for (const r of rs) {
        const k = `${r.row[0]}|${r.row[1]}`
        if (r.kind === RowKind.DELETE) model.delete(k)
        else model.set(k, r.row)
      }
    }
    const batches: WriteRecord[][] = [
      spread(400, 'a'),
      spread(240, 'b', 300),
      Array.from({ length: 100 }, (_, i) => rec(i * 3, 1, null, RowKind.DELETE)),
      spread(170, 'c', 35),
    ]
    for (const [i, b] of batches.entries()) {
      apply(b)
      await writeBatch(table, b, { writeAheadFiles: 80, writeBufferSize: 30_000 })
      if (i === 1) await compactTable(table, { full: true })
      expect(sorted(await readAll(table))).toEqual(sorted([...model.values()]))
    }
  }, 120_000)
})
