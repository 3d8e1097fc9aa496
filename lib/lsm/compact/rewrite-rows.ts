// The row merge of a rewrite step (the reference model of the columnar merge): records
// merged by key (merge-reader.ts), each merged record looked up in the older levels where
// the job keeps deletion vectors or writes changelog, and written.

import { mergeEngineOf } from '../../merge/engines.ts'
import { isRetract } from '../../types.ts'
import { LookupChangelog } from '../lookup-changelog.ts'
import { mergeSortedRuns } from '../merge-reader.ts'
import type { CompactStep } from '../universal-compaction.ts'
import { RisingKeys, lookUpOlder } from './deletion-vectors.ts'
import type { StepRewrite } from './rewrite-job.ts'

export async function rewriteRows(s: StepRewrite, step: Extract<CompactStep, { kind: 'rewrite' }>, changelogStep: boolean): Promise<void> {
  const { inputs, output, view, mergeConfig: cfg } = s.job
  const opts = view.options
  const tracker = changelogStep ? new LookupChangelog(cfg, opts.changelogRowDeduplicate) : null
  // level 0's records are marked for the changelog (a run of a step may join files of several levels)
  const sources = s.runs.map((run) => inputs.run(run, tracker ? (kvs) => tracker.level0(kvs) : undefined))
  // the changelog needs the whole old row, not only the fields that decide the merge
  const lookups = s.lookupRuns.map((files) => inputs.levelLookup(files, changelogStep ? undefined : s.lookupColumns, s.fromKey))
  const changelog = s.changelogFiles()
  const supersede = s.job.lookup ? { mf: s.stepMerge(), seqCmp: s.seqCmp, keepsOneRecord: mergeEngineOf(cfg.engine).keepsOneRecord, output } : null
  // with lookups, each key's records meet the older row in one merge (docs/design.md "Compaction and deletion vectors")
  const rising = lookups.length ? new RisingKeys(s.stepMerge()) : null
  const stepMerge = rising ? rising.mergeFunction : s.stepMerge()
  const merging = tracker ? tracker.track(stepMerge) : stepMerge
  for await (const batch of mergeSortedRuns(sources, { keyComparator: s.job.levels.keyComparator, sequenceComparator: s.seqCmp, mergeFunction: merging })) {
    for (const kv of batch) {
      const taken = tracker?.take(kv)
      const key = rising?.take(kv)
      const { out, after, hits } = key ? await lookUpOlder(key, lookups, supersede) : { out: kv, after: undefined, hits: [] }
      // records that merge to nothing, with no older row: nothing to write or report, as without lookups
      if (key && key.merged === null && hits.length === 0) continue
      if (tracker && taken?.containsLevel0) {
        const merged = key ? key.merged : kv
        for (const c of tracker.changes([...taken.high, ...hits], after !== undefined ? after : tracker.merged(merged ? [...hits, merged] : hits))) changelog.append(c)
        await changelog.rollIfFull()
      }
      if (!out) continue
      if (step.dropDelete && isRetract(out.kind)) continue
      await s.files.write(out)
    }
  }
  await s.files.flush()
  await changelog.flush()
}
