// Postpone bucket mode (bucket -2), on a memory store and a real FIFO-style job queue in memory:
//   1. Property: writes, postpone compactions of a partition (capped at 1..3 files) and
//      compactions of real buckets in any order; every read equals a model of the batches
//      whose postponed files a compaction took (the rest are invisible), and once drained the
//      table equals the model of every batch.
//   2. A partition's bucket count: postpone.default-bucket-num the first time, kept after.
//   3. Replay order: Strata's files by sequence number, Paimon's (-1) by creation time.
//   4. The job for bucket-postpone: its group, and the jobs it sends for the buckets it filled.
//   5. Status and metrics count postponed rows as not visible.
//   6. Refusals: bucket 0 and -3 at create, input changelog with bucket -2, --bucket.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { alterTable } from '../lib/handle/alter.ts'
import { MemoryJobQueue, messageGroupId } from '../lib/jobs/compaction-job.ts'
import { stalledBucketJobs, writerJobs } from '../lib/jobs/coalesce.ts'
import { processCompactionJobs } from '../lib/jobs/process-jobs.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { compactPostponed, replayOrder } from '../lib/lsm/postpone.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { type ManifestEntry, FileKind } from '../lib/types.ts'
import { serializeBinaryRow } from '../lib/format/binary-row.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { ingest } from '../lib/ingest/ingest.ts'
import { tableMetrics } from '../lib/maintenance/table-metrics.ts'
import { tableStatus } from '../lib/maintenance/table-status.ts'
import { formatStatus } from '../lib/cli/status.ts'
import { type Engine, type Op, TableModel, opArb, schemaFor, sortRows } from './helpers/model.ts'

const DAYS = ['2024-05-01', '2024-05-02']

async function write(table: Table, ops: Op[]) {
  return writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
}

/** The BinaryRow of a partition of the test table (dt STRING). */
function encodePartition(table: Table, dt: string): Uint8Array {
  return serializeBinaryRow(table.view.partitionFields.map((f) => f.type), [dt])
}

async function liveEntries(table: Table): Promise<ManifestEntry[]> {
  const s = await table.snapshots.latest()
  return s ? table.manifests.liveEntries(s) : []
}

type Step = { t: 'write'; ops: Op[] } | { t: 'postpone'; dt: string; cap: number } | { t: 'bucket'; bucket: number } | { t: 'all' }

const stepArb = (engine: Engine): fc.Arbitrary<Step> =>
  fc.oneof(
    { weight: 4, arbitrary: fc.array(opArb(engine), { minLength: 1, maxLength: 8 }).map((ops): Step => ({ t: 'write', ops })) },
    { weight: 3, arbitrary: fc.record({ dt: fc.constantFrom(...DAYS), cap: fc.integer({ min: 1, max: 3 }) }).map((s): Step => ({ t: 'postpone', ...s })) },
    { weight: 1, arbitrary: fc.integer({ min: 0, max: 2 }).map((bucket): Step => ({ t: 'bucket', bucket })) },
    { weight: 1, arbitrary: fc.constant<Step>({ t: 'all' }) },
  )

describe('postpone bucket mode against a model', () => {
  for (const engine of ['deduplicate', 'aggregation'] as Engine[]) {
    it(`${engine}: reads see exactly the batches a postpone compaction took; drained, the table equals the model`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(stepArb(engine), { minLength: 2, maxLength: 10 }), async (steps) => {
          const table = await Table.create(new MemoryStore(), schemaFor(engine, { bucket: '-2', 'postpone.default-bucket-num': '3', 'num-sorted-run.compaction-trigger': '3' }))
          const all = new TableModel(engine)
          const visible = new TableModel(engine)
          // per partition, the batches (their ops in that partition) whose postponed file waits
          const pending = new Map<string, Op[][]>(DAYS.map((d) => [d, []]))
          // every postponed file of each partition in one postpone compaction, so the model knows which batches merged together
          const drain = async () => {
            for (const d of DAYS) {
              const taken = pending.get(d)!.splice(0)
              if (taken.length) await compactPostponed(table, { partition: encodePartition(table, d), maxInputFiles: taken.length })
              visible.applyBatch(taken.flatMap((ops) => visible.writtenRecords(ops)))
            }
          }
          for (const step of steps) {
            if (step.t === 'write') {
              const r = await write(table, step.ops)
              all.applyBatch(step.ops)
              for (const b of r.buckets) expect(b.bucket).toBe(-2)
              for (const d of DAYS) {
                const ops = step.ops.filter((o) => o.dt === d)
                if (r.buckets.some((b) => b.partitionPath === `dt=${d}/`)) pending.get(d)!.push(ops)
              }
            } else if (step.t === 'postpone') {
              const r = await compactPostponed(table, { partition: encodePartition(table, step.dt), maxInputFiles: step.cap })
              const taken = pending.get(step.dt)!.splice(0, step.cap)
              expect(r.inputFiles).toBe(taken.length)
              // the files one postpone compaction takes merge as one write buffer (as Paimon's rewrite of them)
              visible.applyBatch(taken.flatMap((ops) => visible.writtenRecords(ops)))
            } else if (step.t === 'bucket') {
              for (const e of await liveEntries(table)) {
                if (e.bucket !== step.bucket) continue
                await compactBucket(table, { partition: e.partition, bucket: e.bucket })
                break
              }
            } else {
              await drain()
              await compactTable(table)
            }
            expect(sortRows(await readAll(table))).toEqual(visible.snapshot())
          }
          await drain()
          await compactTable(table)
          expect(sortRows(await readAll(table))).toEqual(visible.snapshot())
          // merging batches together only changes what a delete followed by inserts of a key does to an older row
          if (engine === 'deduplicate') expect(visible.snapshot()).toEqual(all.snapshot())
          const live = await liveEntries(table)
          expect(live.filter((e) => e.bucket < 0)).toEqual([])
          // every bucket of a partition records the partition's one count (3, the default)
          expect(new Set(live.map((e) => e.totalBuckets))).toEqual(new Set(live.length ? [3] : []))
        }),
        { numRuns: 12 },
      )
    })
  }
})

describe('bucket counts', () => {
  it('a partition takes postpone.default-bucket-num when first compacted and keeps its count after the option changes', async () => {
    const store = new MemoryStore()
    let table = await Table.create(store, schemaFor('deduplicate', { bucket: '-2', 'postpone.default-bucket-num': '2' }))
    const rows = (dt: string) => Array.from({ length: 40 }, (_, id): Op => ({ _kind: '+I', dt, id, a: id, b: null, c: null }))
    await write(table, rows(DAYS[0]))
    const first = await compactPostponed(table, { partition: encodePartition(table, DAYS[0]) })
    expect(first.bucketCount).toBe(2)
    expect(first.buckets).toEqual([0, 1])
    table = await alterTable(store, [{ kind: 'set-option', key: 'postpone.default-bucket-num', value: '5' }])
    await write(table, rows(DAYS[0]))
    await write(table, rows(DAYS[1]))
    expect((await compactPostponed(table, { partition: encodePartition(table, DAYS[0]) })).bucketCount).toBe(2)
    const second = await compactPostponed(table, { partition: encodePartition(table, DAYS[1]) })
    expect(second.bucketCount).toBe(5)
    expect(second.buckets).toEqual([0, 1, 2, 3, 4])
    const counts = new Map<string, Set<number>>()
    for (const e of await liveEntries(table)) {
      const k = Buffer.from(e.partition).toString('hex')
      counts.set(k, new Set([...(counts.get(k) ?? []), e.totalBuckets]))
    }
    expect([...counts.values()].map((s) => [...s])).toEqual(expect.arrayContaining([[2], [5]]))
    expect(await readAll(table)).toHaveLength(80)
  })
})

describe('replay order', () => {
  const entry = (name: string, seq: bigint, creationTime: bigint): ManifestEntry =>
    ({ kind: FileKind.ADD, partition: new Uint8Array(), bucket: -2, totalBuckets: -2, file: { fileName: name, minSequenceNumber: seq, maxSequenceNumber: seq, creationTime } }) as unknown as ManifestEntry

  it("orders Strata's files by sequence number, Paimon's (-1) by creation time in the same scale, ties by landing order", () => {
    const ms = 1_700_000_000_000n
    const files = [
      entry('strata-late-clock', (ms + 50n) << 20n, ms - 10_000n), // its number says when it started, not its file time
      entry('paimon-b', -1n, ms + 20n),
      entry('strata-early', ms << 20n, ms + 999n),
      entry('paimon-a', -1n, ms + 10n),
      entry('paimon-a-again', -1n, ms + 10n),
    ]
    expect(replayOrder(files).map((e) => e.file.fileName)).toEqual(['strata-early', 'paimon-a', 'paimon-a-again', 'paimon-b', 'strata-late-clock'])
  })

  it('a later batch wins over an earlier one of the same key, whatever the cap', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '-2' }))
    for (let i = 0; i < 4; i++) await write(table, [{ _kind: '+I', dt: DAYS[0], id: 7, a: i, b: null, c: null }])
    await compactPostponed(table, { partition: encodePartition(table, DAYS[0]), maxInputFiles: 3 })
    expect(await readAll(table)).toEqual([[DAYS[0], 7, 2, null, null]])
    await compactPostponed(table, { partition: encodePartition(table, DAYS[0]) })
    expect(await readAll(table)).toEqual([[DAYS[0], 7, 3, null, null]])
  })
})

describe('input cap', () => {
  it('a job takes at most target-file-size bytes of postponed files (one at least), the oldest first', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '-2', 'target-file-size': '1 b' }))
    for (let i = 0; i < 3; i++) await write(table, [{ _kind: '+I', dt: DAYS[0], id: 7, a: i, b: null, c: null }])
    const runs = []
    for (let r = await compactPostponed(table, { partition: encodePartition(table, DAYS[0]) }); r.snapshotId !== null; r = await compactPostponed(table, { partition: encodePartition(table, DAYS[0]) })) {
      runs.push([r.inputFiles, r.needsMore])
      expect(await readAll(table)).toEqual([[DAYS[0], 7, runs.length - 1, null, null]])
    }
    expect(runs).toEqual([[1, true], [1, true], [1, false]])
  })
})

describe('the postpone job', () => {
  it('runs in its partition\'s postpone group and sends jobs for the buckets it filled', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '-2', 'postpone.default-bucket-num': '3', 'deletion-vectors.enabled': 'true' }))
    const r = await write(table, Array.from({ length: 30 }, (_, id): Op => ({ _kind: '+I', dt: DAYS[0], id, a: id, b: null, c: null })))
    // named as Paimon's postponed files are: its compaction parses the write id after '-s-' (getWriteId)
    expect(r.buckets[0].fileName).toMatch(/^data--u-[0-9a-f-]+-s-\d+-w-[0-9a-f-]+-\d+\.parquet$/)
    expect(Number.isInteger(Number(r.buckets[0].fileName.split('-s-')[1].split('-')[0]))).toBe(true)
    // the maintenance sweep sends bucket-postpone a job once its oldest file is older than the threshold
    const created = Math.min(...(await liveEntries(table)).map((e) => Number(e.file.creationTime)))
    expect(await stalledBucketJobs('t', table, created + 1000, 1000)).toEqual([])
    const swept = await stalledBucketJobs('t', table, created + 1001, 1000)
    expect(swept.map((j) => [j.bucket, j.dedupKey])).toEqual([[-2, `sweep:${r.snapshotId}`]])
    const jobs = await writerJobs('t', table, r.snapshotId, r.buckets)
    expect(jobs.map((j) => [j.partition, j.bucket])).toEqual([[`dt=${DAYS[0]}`, -2]])
    expect(messageGroupId(jobs[0])).toBe(`t/dt=${DAYS[0]}/-2`)
    const queue = new MemoryJobQueue()
    const res = await processCompactionJobs([{ id: 'm1', body: JSON.stringify(jobs[0]), groupId: messageGroupId(jobs[0]) }], { resolve: async () => ({ table, jobs: queue }) })
    expect(res.errors).toEqual([])
    expect(res.outcomes[0].result.inputFiles).toBe(1)
    // deletion vectors: the rows wait at level 0 of their buckets, each of which got a job
    expect(await readAll(table)).toEqual([])
    expect(queue.jobs.map((j) => j.bucket).sort()).toEqual([0, 1, 2])
    const res2 = await processCompactionJobs(
      queue.jobs.map((j, i) => ({ id: `b${i}`, body: JSON.stringify(j), groupId: messageGroupId(j) })),
      { resolve: async () => ({ table, jobs: new MemoryJobQueue() }) },
    )
    expect(res2.errors).toEqual([])
    expect(await readAll(table)).toHaveLength(30)
  })
})

describe('a postpone job beside a bucket compaction', () => {
  for (const dv of [false, true]) {
    it(`${dv ? 'deletion vectors' : 'merge on read'}: either landing first, the other still lands and the table equals the model`, async () => {
      for (const postponeFirst of [true, false]) {
        const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '-2', 'deletion-vectors.enabled': String(dv) }))
        const model = new TableModel('deduplicate')
        const batch = (v: number): Op[] => Array.from({ length: 6 }, (_, id): Op => ({ _kind: id === 5 && v > 1 ? '-D' : '+I', dt: DAYS[0], id, a: v * 10 + id, b: null, c: null }))
        for (const v of [1, 2]) {
          await write(table, batch(v))
          model.applyBatch(batch(v))
          await compactPostponed(table, { partition: encodePartition(table, DAYS[0]) })
        }
        await write(table, batch(3))
        model.applyBatch(batch(3))
        // bucket 0 (the only one) is compacted in full while the postpone job moves batch 3 in
        const landed: string[] = []
        const postpone = () => compactPostponed(table, { partition: encodePartition(table, DAYS[0]), beforeCommit: () => void landed.push('postpone') })
        const result = await compactBucket(table, {
          partition: encodePartition(table, DAYS[0]),
          bucket: 0,
          full: true,
          beforeCommit: async () => {
            if (postponeFirst) await postpone()
            landed.push('bucket')
          },
        })
        if (!postponeFirst) await postpone()
        expect(result.snapshotId).not.toBeNull()
        expect(landed).toEqual(postponeFirst ? ['postpone', 'bucket'] : ['bucket', 'postpone'])
        await compactTable(table)
        expect(sortRows(await readAll(table))).toEqual(model.snapshot())
      }
    })
  }
})

describe('the pipeline', () => {
  it('ingest sends one job per partition for bucket-postpone; the compactor drains the queue; the table equals the model', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '-2', 'postpone.default-bucket-num': '2', 'deletion-vectors.enabled': 'true' }))
    const queue = new MemoryJobQueue()
    const model = new TableModel('deduplicate')
    const resolve = async () => ({ table, jobs: queue })
    let n = 0
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(opArb('deduplicate'), { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 4 }), async (batches) => {
        for (const ops of batches) {
          const records = ops.map((op) => ({ id: `r${n++}`, source: 'test', body: JSON.stringify(op) }))
          const res = await ingest(records, { resolve, defaultTable: 't', rejects: new MemoryStore(), commitUser: 'writer' })
          expect([res.failedIds, res.rejected]).toEqual([[], 0])
          model.applyBatch(ops)
        }
        // every job the writers sent is for bucket-postpone; the compactor's jobs follow
        const sent = queue.jobs.splice(0)
        expect(sent.every((j) => j.bucket === -2)).toBe(true)
        for (let pending = sent, round = 0; pending.length > 0; pending = queue.jobs.splice(0), round++) {
          expect(round).toBeLessThan(10)
          const res = await processCompactionJobs(pending.map((j, i) => ({ id: `m${round}-${i}`, body: JSON.stringify(j), groupId: messageGroupId(j) })), { resolve })
          expect(res.errors).toEqual([])
        }
        expect(sortRows(await readAll(table))).toEqual(model.snapshot())
        expect((await liveEntries(table)).filter((e) => e.bucket < 0 || e.file.level === 0)).toEqual([])
      }),
      { numRuns: 6 },
    )
  })
})

describe('status and metrics', () => {
  it('postponed rows count as not visible: PostponedRows, and freshness lag from the oldest postponed file', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '-2', 'postpone.default-bucket-num': '2' }))
    await write(table, Array.from({ length: 7 }, (_, id): Op => ({ _kind: '+I', dt: DAYS[0], id, a: id, b: null, c: null })))
    await write(table, [{ _kind: '+I', dt: DAYS[1], id: 1, a: 1, b: null, c: null }])
    const oldest = Math.min(...(await liveEntries(table)).map((e) => Number(e.file.creationTime)))
    const now = oldest + 60_000
    const m = await tableMetrics(table, now)
    expect(m.PostponedRows).toBe(8)
    expect(m.FreshnessLag).toBe(60_000)
    expect(m.SortedRunsMax).toBe(0)
    const text = formatStatus(await tableStatus(table, now))
    expect(text).toMatch(/\tpostpone\t/)
    expect(text).toMatch(/60\.0 s/)
    expect(text).toMatch(/8 rows postponed/)
    await compactTable(table)
    const after = await tableMetrics(table, now)
    // without deletion vectors readers merge level 0: nothing waits once the rows are in buckets
    expect([after.PostponedRows, after.FreshnessLag]).toEqual([0, 0])
  })
})

describe('refusals', () => {
  it('bucket 0 and -3 are refused at create; -2 is taken', async () => {
    await expect(Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '0' }))).rejects.toThrow(/option 'bucket': invalid value "0"/)
    await expect(Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '-3' }))).rejects.toThrow(/option 'bucket': invalid value "-3"/)
    const t = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '-2' }))
    expect(t.view.options.bucket).toBe(-2)
  })

  it('an input changelog with bucket -2 is refused before anything is written', async () => {
    const store = new MemoryStore()
    const t = await Table.create(store, schemaFor('deduplicate', { bucket: '-2', 'changelog-producer': 'input' })).catch((e) => e)
    if (t instanceof Error) {
      expect(t.message).toMatch(/changelog-producer.*postpone/)
      return
    }
    await expect(write(t, [{ _kind: '+I', dt: DAYS[0], id: 1, a: 1, b: null, c: null }])).rejects.toThrow(/'changelog-producer' is "input" with 'bucket' -2/)
    expect(await t.snapshots.latestId()).toBe(0)
  })

  it('strata compact --bucket names why a postpone table takes none', async () => {
    const t = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '-2' }))
    await expect(compactTable(t, { bucket: 0 })).rejects.toThrow(/postpone bucket mode .* expected no bucket/)
  })
})

