// The steps of a bucket's compaction (lib/lsm/compact/), each called on its own, without
// compactBucket: plan (pick and plan on levels built by hand), rewrite (an upgrade; files
// rolled at the target size), deletion vectors (a rising key against an older level; the
// bucket's vectors after a job), commit (the request's conflict checks; a failed job's
// output kept or deleted), and a whole job through a context of parts that is not a Table.

import { describe, expect, it } from 'vitest'
import type { CommitRequest, CommitResult } from '../lib/commit/committer.ts'
import { deletionVectorOf } from '../lib/format/deletion-vector.ts'
import { Table } from '../lib/handle/table.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import type { CompactionContext } from '../lib/lsm/compact/context.ts'
import { lookUpOlder, nextDeletionVectors } from '../lib/lsm/compact/deletion-vectors.ts'
import type { LevelLookup } from '../lib/lsm/compact/level-lookup.ts'
import { commitCompaction, settleFailedJob } from '../lib/lsm/compact/commit.ts'
import { CompactionOutput, RollingFiles } from '../lib/lsm/compact/output.ts'
import { type BucketState, pickUnit, planSteps } from '../lib/lsm/compact/plan.ts'
import type { RewriteJob } from '../lib/lsm/compact/rewrite-job.ts'
import { rewriteStep } from '../lib/lsm/compact/rewrite.ts'
import { type LsmFile, Levels } from '../lib/lsm/levels.ts'
import { parseMergeEngineConfig } from '../lib/merge/merge-config.ts'
import { sequenceComparator } from '../lib/merge/sequence-order.ts'
import { createMergeFunction } from '../lib/merge/merge-function.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { createSchema, describeSchema } from '../lib/table/schema.ts'
import { CommitConflictError } from '../lib/errors.ts'
import { type KeyValue, type ManifestEntry, FileKind, RowKind } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const schemaInput = {
  fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'STRING' }],
  primaryKeys: ['id'],
  options: { bucket: '1', 'deletion-vectors.enabled': 'true' },
}
const schema = createSchema(schemaInput)
const view = describeSchema(schema)
const where = { partition: new Uint8Array(0), bucket: 0, totalBuckets: 1, dir: 'bucket-0' }

function entry(name: string, level: number, rows = 10): ManifestEntry {
  return {
    kind: FileKind.ADD, partition: new Uint8Array(0), bucket: 0, totalBuckets: 1,
    file: {
      fileName: name, fileSize: 1000n, rowCount: BigInt(rows), minKey: new Uint8Array(0), maxKey: new Uint8Array(0), keyStats: null, valueStats: null,
      minSequenceNumber: 0n, maxSequenceNumber: 0n, schemaId: 0n, level, extraFiles: [], creationTime: 0n, deleteRowCount: 0n, embeddedIndex: null,
      fileSource: 0, valueStatsCols: null, externalPath: null, firstRowId: null, writeCols: null,
    },
  } as unknown as ManifestEntry
}

function lsmFile(name: string, level: number, minKey: number, maxKey: number, seq: number): LsmFile {
  return {
    name, level, size: 1000, minKey: [minKey], maxKey: [maxKey], maxSequenceNumber: BigInt(seq), minSequenceNumber: BigInt(seq),
    creationTime: BigInt(seq), rowCount: 10, deleteRowCount: 0, entry: entry(name, level),
  }
}

function bucketOf(files: LsmFile[]): BucketState {
  return {
    levels: new Levels(files, 5, (a, b) => (a[0] as number) - (b[0] as number)),
    dvIndex: undefined,
    hasDeletionVector: () => false,
    deletionVectors: async () => new Map(),
  }
}

const kv = (id: number, seq: number, v: string): KeyValue => ({ key: [id], seq: BigInt(seq), kind: RowKind.INSERT, value: [id, v] })

describe('plan', () => {
  const files = [lsmFile('a', 0, 1, 50, 1), lsmFile('b', 0, 20, 80, 2), lsmFile('c', 0, 60, 90, 3)]
  const pick = { compactionTrigger: 5, maxSizeAmplificationPercent: 200, sizeRatio: 1, numLevels: 5, deletionVectors: true }

  it('a full compaction takes every file into the top level, in one rewrite step', () => {
    const bucket = bucketOf(files)
    const picked = pickUnit(bucket, { pick, full: true, maxInputFiles: 30 })!
    expect(picked.needsMore).toBe(false)
    expect(picked.unit.outputLevel).toBe(4)
    expect(picked.unit.files.map((f) => f.name).sort()).toEqual(['a', 'b', 'c'])
    const steps = planSteps(picked.unit, bucket, { keyTypes: view.keyTypes, deletionVectors: true, lookup: true, changelogLookup: false, targetFileSize: 1 << 20 })
    expect(steps.map((s) => s.kind)).toEqual(['rewrite'])
  })

  it('a capped pick says the bucket needs more; nothing to pick is null', () => {
    const picked = pickUnit(bucketOf(files), { pick, full: true, maxInputFiles: 2 })!
    expect(picked.unit.files.length).toBeLessThan(3)
    expect(picked.needsMore).toBe(true)
    expect(pickUnit(bucketOf([]), { pick, full: false, maxInputFiles: 30 })).toBeNull()
  })
})

describe('rewrite', () => {
  it('an upgrade step moves the file up without reading it: deleted at its level, added at the new one', async () => {
    const output = new CompactionOutput(new MemoryStore(), view, where)
    const file = lsmFile('a', 0, 1, 9, 1)
    await rewriteStep({ kind: 'upgrade', file, outputLevel: 3 }, { output } as unknown as RewriteJob)
    expect(output.deletes.map((e) => [e.file.fileName, e.file.level])).toEqual([['a', 0]])
    expect(output.adds.map((e) => [e.file.fileName, e.file.level])).toEqual([['a', 3]])
    expect(output.upgraded).toBe(1)
  })

  it('files roll over at the target size, and a flush finishes the last one', async () => {
    const finished: number[] = []
    const newWriter = () => {
      const w = { rowCount: 0, estimatedSize: 0, write: () => { w.rowCount++; w.estimatedSize += 10 } }
      return w as never
    }
    const files = new RollingFiles(newWriter, 25, async (w) => void finished.push((w as unknown as { rowCount: number }).rowCount))
    for (let i = 0; i < 7; i++) await files.write(kv(i, 1, 'x'))
    expect(finished).toEqual([3, 3])
    await files.flush()
    await files.flush()
    expect(finished).toEqual([3, 3, 1])
  })
})

describe('deletion vectors', () => {
  const cfg = parseMergeEngineConfig(schema.fields, schema.primaryKeys, schema.options)
  const older = (found: KeyValue | null) => ({ find: async () => (found ? { kv: found, file: 'old', pos: 7 } : null) }) as unknown as LevelLookup

  it('a rising key supersedes the older row: its position is marked, the merge is written', async () => {
    const output = new CompactionOutput(new MemoryStore(), view, where)
    const rising = kv(1, 5, 'new')
    const r = await lookUpOlder({ records: [rising], merged: rising }, [older(kv(1, 2, 'old'))], { mf: createMergeFunction(cfg), seqCmp: sequenceComparator(cfg), keepsOneRecord: true, output })
    expect(r.out?.value).toEqual([1, 'new'])
    expect(r.hits.map((h) => h.value)).toEqual([[1, 'old']])
    expect([...output.marks]).toEqual([['old', [7]]])
    expect(output.marked).toBe(1)
  })

  it('an older row with the higher sequence number stays: nothing is written or marked', async () => {
    const output = new CompactionOutput(new MemoryStore(), view, where)
    const r = await lookUpOlder({ records: [kv(1, 2, 'late')], merged: kv(1, 2, 'late') }, [older(kv(1, 9, 'kept'))], { mf: createMergeFunction(cfg), seqCmp: sequenceComparator(cfg), keepsOneRecord: true, output })
    expect(r.out).toBeNull()
    expect(r.after?.value).toEqual([1, 'kept'])
    expect(output.marks.size).toBe(0)
  })

  it('the vectors after a job: rewritten files drop theirs, an upgraded file keeps its own, marked files gain bits', () => {
    const current = new Map([['rewritten', deletionVectorOf([1], false)], ['upgraded', deletionVectorOf([2], false)], ['kept', deletionVectorOf([4], false)]])
    const up = entry('upgraded', 0)
    const next = nextDeletionVectors(current, { deletes: [entry('rewritten', 0), up], adds: [{ ...up, file: { ...up.file, level: 2 } }], marks: new Map([['kept', [9, 5]]]) }, false)!
    expect([...next.keys()]).toEqual(['kept', 'upgraded'])
    expect([...next.get('kept')!.sortedPositions()]).toEqual([4, 5, 9])
    expect(nextDeletionVectors(current, { deletes: [], adds: [], marks: new Map() }, false)).toBeNull()
  })
})

describe('commit', () => {
  const commitOf = () => ({ commitUser: 'u', baseSnapshotId: 4, dvIndex: [{ fileName: 'index-old' }] as never, indexReplacement: null })

  it('the request carries the conflict checks: files given marks must be live, the index must be the one built on', async () => {
    const output = new CompactionOutput(new MemoryStore(), view, where)
    output.adds.push(entry('new', 4))
    const c = { ...commitOf(), indexReplacement: { partition: where.partition, bucket: 0, indexType: 'DELETION_VECTORS', entries: [{ dvRanges: [{ dataFileName: 'marked' }, { dataFileName: 'new' }] }] as never } }
    let req: CommitRequest | undefined
    const result = await commitCompaction({ commit: async (r): Promise<CommitResult> => ((req = r), { snapshotId: 5, retries: 0, deduplicated: false }) }, view, output, c)
    expect(result.snapshotId).toBe(5)
    expect(req!.kind).toBe('COMPACT')
    expect(req!.baseSnapshotId).toBe(4)
    expect(req!.requireLive).toEqual(['marked'])
    expect(req!.expectIndex).toEqual([{ partition: where.partition, bucket: 0, indexType: 'DELETION_VECTORS', fileNames: ['index-old'] }])
  })

  it('a failed job: its output is deleted when nothing reached a committer or the commit can never land, kept when it may have, and a landed commit is found', async () => {
    const run = async (commitStarted: boolean, error: unknown, landedAt: number | null) => {
      const deleted: string[] = []
      const output = new CompactionOutput(new MemoryStore(), view, where)
      output.written.push('bucket-0/data-1.parquet')
      const ports = { store: { delete: async (k: string) => void deleted.push(k) }, snapshots: { latestId: async () => 6 }, landed: { find: async () => landedAt } }
      return { landed: await settleFailedJob(ports, output, commitOf(), commitStarted, error), deleted }
    }
    expect(await run(false, new Error('merge failed'), null)).toEqual({ landed: null, deleted: ['bucket-0/data-1.parquet'] })
    expect(await run(true, new CommitConflictError('lost', true), null)).toEqual({ landed: null, deleted: ['bucket-0/data-1.parquet'] })
    expect(await run(true, new Error('reply lost'), null)).toEqual({ landed: null, deleted: [] })
    expect(await run(true, new Error('reply lost'), 5)).toEqual({ landed: 5, deleted: [] })
  })
})

describe('a context of parts', () => {
  it('compacts a bucket through a CompactionContext that is not a Table, committing through its own committer', async () => {
    const table = await Table.create(new MemoryStore(), { ...schemaInput, options: { bucket: '1' } })
    for (let w = 0; w < 2; w++) await writeBatch(table, [1, 2, 3].map((id) => ({ ...recordFromJson(table.view, { id, v: `w${w}` }, 'r'), where: 'r' })))
    const requests: CommitRequest[] = []
    const ctx: CompactionContext = {
      uri: table.uri, store: table.store, view: table.view, mergeConfig: table.mergeConfig, snapshots: table.snapshots, manifests: table.manifests, landed: table.landed,
      committer: { commit: async (r) => (requests.push(r), { snapshotId: 99, retries: 0, deduplicated: false }) },
      fieldMapping: (id, name) => table.fieldMapping(id, name),
    }
    const { partition } = (await table.manifests.liveEntries((await table.snapshots.latest())!))[0]
    const r = await compactBucket(ctx, { partition, bucket: 0, full: true })
    expect(r).toMatchObject({ snapshotId: 99, inputFiles: 2, rowsIn: 6, rowsOut: 3 })
    expect(requests).toHaveLength(1)
    expect(requests[0].deletes.map((e) => e.file.level)).toEqual([0, 0])
    expect(requests[0].adds.map((e) => Number(e.file.rowCount))).toEqual([3])
  })
})
