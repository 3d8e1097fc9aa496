// Step two of a bucket's compaction: each planned step, as it comes. A file that moves up
// unchanged is an upgrade; runs are rewritten by streaming merge, column by column where
// columnar-merge.ts supports the table (the default), else record by record (rewrite-rows.ts).

import { mergeEngineOf } from '../../merge/engines.ts'
import { sequenceComparator } from '../../merge/sequence-order.ts'
import { createLookupMergeFunction, createMergeFunction } from '../../merge/merge-function.ts'
import type { ColumnarEngine } from '../../merge/descriptor.ts'
import { chooseMergePath, mergeColumnarRuns } from '../columnar-merge.ts'
import type { CompactStep } from '../universal-compaction.ts'
import { entryOf } from './inputs.ts'
import type { RewriteJob, StepRewrite } from './rewrite-job.ts'
import { rewriteRows } from './rewrite-rows.ts'

export async function rewriteStep(step: CompactStep, job: RewriteJob): Promise<void> {
  const { output, mergeConfig: cfg } = job
  if (step.kind === 'upgrade') return output.upgrade(entryOf(step.file), step.outputLevel)
  const fromLevel0 = step.runs.some((run) => run.some((f) => f.level === 0))
  const changelogStep = job.changelogLookup && fromLevel0
  output.rewrite(step.runs.flat().map(entryOf))
  // older levels not rewritten by this job, newest first, for deletion-vector lookups (a pick
  // is a newest-first prefix of the runs, so every run it leaves is older and sits above the
  // output level)
  const stepFiles = step.runs.flat()
  const keyCmp = job.levels.keyComparator
  const fromKey = stepFiles.reduce((min, f) => (keyCmp(f.minKey, min) < 0 ? f.minKey : min), stepFiles[0].minKey)
  const lookupRuns = job.lookup || changelogStep ? job.levels.levelSortedRuns().filter((r) => r.level > step.outputLevel && !r.run.files.some((f) => job.inputNames.has(f.name))).map((r) => r.run.files) : []
  // a step that writes changelog merges by rows (the columnar merge does not track a key's inputs)
  const choice = changelogStep ? { path: 'row' as const } : chooseMergePath(cfg, job.mergePath)
  const lookupMerge = job.lookup && fromLevel0
  // a step writes about what it reads
  const stepBytes = stepFiles.reduce((n, f) => n + Number(entryOf(f).file.fileSize), 0)
  const s: StepRewrite = {
    job,
    runs: [...step.runs].reverse(),
    lookupRuns,
    fromKey,
    lookupColumns: mergeEngineOf(cfg.engine).lookup.newerReplacesOlder ? [...cfg.sequenceFields] : undefined,
    stepMerge: () => (lookupMerge ? createLookupMergeFunction(cfg) : createMergeFunction(cfg)),
    seqCmp: sequenceComparator(cfg),
    files: output.files(step.outputLevel, stepBytes, job.compressionThread),
    changelogFiles: () => output.files(step.outputLevel, stepBytes, job.compressionThread, true),
  }
  if (choice.path === 'columnar') await rewriteColumnar(s, choice.engine, step.dropDelete)
  else await rewriteRows(s, step, changelogStep)
}

/**
 * The same merge as the row path, without a record object per row: column batches in, a
 * permutation merged, columns gathered and written (lib/lsm/columnar-merge.ts).
 */
async function rewriteColumnar(s: StepRewrite, engine: ColumnarEngine, dropDelete: boolean): Promise<void> {
  const { inputs, output, view, mergeConfig } = s.job
  output.columnarSteps++
  const runs = s.runs.map((run) => inputs.columnarRun(run))
  const lookups = s.lookupRuns.map((files) => inputs.columnarLookupLevel(files, s.lookupColumns, s.fromKey))
  const mergeOpts = {
    keyTypes: view.keyTypes,
    cfg: mergeConfig,
    engine,
    // an engine that folds merges with the row path's own merge function
    mergeFunction: engine.keeps === 'fold' ? s.stepMerge() : undefined,
    recordOrder: s.seqCmp,
    dropDelete,
    lookupLevels: lookups.map((l) => l.files),
    lookupStart: lookups.map((l) => l.startAt),
    onSuperseded: (file: string, position: number) => output.mark(file, position),
  }
  await mergeColumnarRuns(runs, mergeOpts, (batch) => s.files.writeColumns(batch))
  await s.files.flush()
}
