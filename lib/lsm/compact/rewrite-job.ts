// What a rewrite step works with: the job's parts (RewriteJob) and one step's (StepRewrite).

import type { MergeEngineConfig, MergeFunction } from '../../merge/merge-types.ts'
import type { SchemaView } from '../../table/schema.ts'
import type { KeyValue } from '../../types.ts'
import type { MergePathRequest } from '../columnar-merge.ts'
import type { Levels, LsmFile } from '../levels.ts'
import type { BucketInputs } from './inputs.ts'
import type { CompactionOutput, RollingFiles } from './output.ts'

/** What rewriting a job's steps needs: the table's layout and engine, the inputs, the output. */
export interface RewriteJob {
  view: SchemaView
  mergeConfig: MergeEngineConfig
  inputs: BucketInputs
  output: CompactionOutput
  /** the bucket's levels before the job */
  levels: Levels
  /** names of the job's input files */
  inputNames: Set<string>
  /** rising keys are looked up in the older levels and superseded rows marked (`compactsWithLookup`) */
  lookup: boolean
  /** changelog-producer lookup: every key taken up from level 0 writes its change (lib/lsm/lookup-changelog.ts) */
  changelogLookup: boolean
  mergePath?: MergePathRequest
  compressionThread: boolean
}

/** One rewrite step as the merges take it. */
export interface StepRewrite {
  job: RewriteJob
  /** the step's runs, oldest first: the later source wins a tie of sequence numbers, as the read path orders them (orderFiles) */
  runs: LsmFile[][]
  /** older levels not rewritten by this job, newest first, for lookups */
  lookupRuns: LsmFile[][]
  /** the smallest key the step can probe (its inputs' smallest) */
  fromKey: unknown[]
  /** the fields a lookup reads besides the key: an engine whose newer record replaces the older whole needs only the `sequence.field` fields that decide */
  lookupColumns: string[] | undefined
  /** a new merge function of the step: records taken up from level 0 of a lookup table meet Paimon's lookup merge, as in Paimon's writer at their commit */
  stepMerge: () => MergeFunction
  seqCmp: (a: KeyValue, b: KeyValue) => number
  /** the step's data files */
  files: RollingFiles
  /** the step's changelog files (changelog-producer lookup) */
  changelogFiles: () => RollingFiles
}
