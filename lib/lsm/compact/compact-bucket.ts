// Compaction of one (partition, bucket) as a library call, in the steps of Paimon's
// MergeTreeCompactTask: plan (read the bucket's levels at the latest snapshot, pick with
// universal compaction: plan.ts), rewrite (merge the picked runs into new files: rewrite.ts),
// deletion vectors (rising keys looked up in the older levels, their rows marked; the
// bucket's new index: deletion-vectors.ts), commit (a COMPACT snapshot: commit.ts). The
// Lambda compactor wraps this.

import { type CommitResult, commitUserFor } from '../../commit/committer.ts'
import { compressionThreadUseful, startCompressionThread } from '../../format/compression-thread.ts'
import { bucketDirOf, indexFileKey } from '../../handle/bucket-state.ts'
import { compactsWithLookup } from '../../merge/engines.ts'
import { BoundedStore } from '../../store/bounded.ts'
import { assertBucketModeKnown, assertWritable } from '../../table/options.ts'
import { needsBackPressure } from '../universal-compaction.ts'
import { type CompactCommit, commitCompaction, settleFailedJob } from './commit.ts'
import type { CompactBucketRequest, CompactBucketResult, CompactionContext, CompactionTimings } from './context.ts'
import { nextDeletionVectors, writeDeletionVectorIndex } from './deletion-vectors.ts'
import { BucketInputs, entryOf } from './inputs.ts'
import { CompactionOutput } from './output.ts'
import { pickOptionsOf, pickUnit, planSteps, readBucket, whyNoPick } from './plan.ts'
import type { RewriteJob } from './rewrite-job.ts'
import { rewriteStep } from './rewrite.ts'

/** Input bytes below which a job compresses its output inline: the writer's default row group (lib/format/data-file-writer.ts). */
export const THREAD_MIN_INPUT_BYTES = 128 * 1024

export async function compactBucket(ctx: CompactionContext, req: CompactBucketRequest): Promise<CompactBucketResult> {
  const { view, mergeConfig } = ctx
  const opts = view.options
  assertWritable(opts, ctx.uri, `compaction of bucket ${req.bucket}`)
  assertBucketModeKnown(opts, view.schema.version, ctx.uri, `compaction of bucket ${req.bucket}`)
  const clock = req.clock ?? Date.now
  const t0 = clock()
  const snapshot = await ctx.snapshots.latest()
  const bucket = await readBucket(ctx, snapshot, req.partition, req.bucket)
  const summary = { baseSnapshotId: snapshot?.id ?? 0, backPressure: needsBackPressure(bucket.levels, opts.stopTrigger) }
  const pickSettings = { pick: pickOptionsOf(ctx), full: req.full, maxInputFiles: req.maxInputFiles ?? opts.compactionMaxInputFiles }
  const picked = pickUnit(bucket, pickSettings)
  if (!picked) {
    const skipped = whyNoPick(bucket, pickSettings)
    return { snapshotId: null, ...summary, inputFiles: 0, outputFiles: 0, upgradedFiles: 0, rowsIn: 0, rowsOut: 0, rowsDeletedByVector: 0, outputLevel: null, needsMore: false, retries: 0, skipped }
  }
  const { unit, needsMore } = picked
  const dvs = bucket.deletionVectors()
  const lookup = compactsWithLookup(mergeConfig.engine, opts.deletionVectors)
  // changelog-producer lookup: every key taken up from level 0 is looked up in the levels
  // above and its change written to a changelog file (lib/lsm/lookup-changelog.ts)
  const changelogLookup = opts.changelogProducer === 'lookup'
  const steps = planSteps(unit, bucket, { keyTypes: view.keyTypes, deletionVectors: opts.deletionVectors, lookup, changelogLookup, targetFileSize: opts.targetFileSize })
  // started now, it is running when the first row group's pages are ready (it takes ~30 ms).
  // A job reading less than a row group writes about one (a step writes about what it
  // reads), compressed as its file closes with no merge left to overlap: inline, since a
  // thread costs its start (60-145 ms of CPU, once per environment) and a round trip
  const inputBytes = unit.files.reduce((n, f) => n + Number(entryOf(f).file.fileSize), 0)
  const compressionThread = req.compressionThread ?? (compressionThreadUseful() && inputBytes >= THREAD_MIN_INPUT_BYTES)
  if (compressionThread && steps.some((s) => s.kind !== 'upgrade')) startCompressionThread()
  // where the job's files go: the bucket's new index files, in its directory or under index/
  const indexFileKeyOf = (fileName: string) => indexFileKey(ctx, { fileName, partition: req.partition, bucket: req.bucket, externalPath: null }, () => dir)
  const dir = bucketDirOf(ctx, req.partition, req.bucket).path
  // the job's data-file and index requests: inputs opened together, outputs PUT while the
  // merge goes on, at most `io.max-concurrent-requests` in flight
  const io = new BoundedStore(ctx.store, opts.ioMaxConcurrentRequests)
  // postpone bucket mode: a bucket's files record its partition's own count, which its inputs carry
  const totalBuckets = opts.bucket > 0 ? opts.bucket : entryOf(unit.files[0]).totalBuckets
  const output = new CompactionOutput(io, view, { partition: req.partition, bucket: req.bucket, totalBuckets, dir })
  const commit: CompactCommit = { commitUser: req.commitUser ?? commitUserFor(opts.commitUserPrefix), baseSnapshotId: summary.baseSnapshotId, dvIndex: bucket.dvIndex, indexReplacement: null }
  const job: RewriteJob = {
    view, mergeConfig, output, lookup, changelogLookup, compressionThread, mergePath: req.mergePath,
    inputs: new BucketInputs(ctx, io, dir, dvs, opts.ioMaxConcurrentRequests),
    levels: bucket.levels,
    inputNames: new Set(unit.files.map((f) => f.name)),
  }
  const resultOf = (c: Pick<CommitResult, 'snapshotId' | 'retries'>, timings?: CompactionTimings): CompactBucketResult => ({
    snapshotId: c.snapshotId, ...summary, inputFiles: unit.files.length, outputFiles: output.adds.length - output.upgraded, upgradedFiles: output.upgraded,
    rowsIn: output.rowsIn, rowsOut: output.rowsOut, rowsDeletedByVector: output.marked, outputLevel: unit.outputLevel, needsMore, retries: c.retries, columnarSteps: output.columnarSteps,
    ...(timings ? { timings } : {}),
  })
  // the step times of docs/design.md "Freshness budget"
  const level0Times = unit.files.filter((f) => f.level === 0 && f.creationTime !== null).map((f) => Number(f.creationTime))
  const marks = { read: clock(), merged: 0, written: 0 }
  let commitStarted = false
  try {
    for (const step of steps) await rewriteStep(step, job)
    marks.merged = clock()
    if (opts.deletionVectors) {
      const next = nextDeletionVectors(await dvs, output, opts.bitmap64)
      if (next) commit.indexReplacement = await writeDeletionVectorIndex(next, output, { bitmap64: opts.bitmap64, targetSize: opts.dvIndexFileTargetSize, keyOf: indexFileKeyOf })
    }
    await output.uploads.done()
    await req.beforeCommit?.()
    marks.written = clock()
    commitStarted = true
    const committed = await commitCompaction(req.committer ?? ctx.committer, view, output, commit)
    const landedAt = clock()
    return resultOf(committed, {
      readMs: marks.read - t0, mergeMs: marks.merged - marks.read, writeMs: marks.written - marks.merged, commitMs: landedAt - marks.written,
      oldestLevel0CreatedAt: level0Times.length ? Math.min(...level0Times) : null, landedAt,
    })
  } catch (e) {
    const landed = await settleFailedJob(ctx, output, commit, commitStarted, e)
    if (landed !== null) return resultOf({ snapshotId: landed, retries: 0 })
    throw e
  }
}
