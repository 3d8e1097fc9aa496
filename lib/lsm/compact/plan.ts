// Step one of a bucket's compaction: read the bucket's LSM shape at a snapshot and pick what
// to compact (universal compaction; force-up-level-0 in deletion-vector mode), planned as
// steps that each upgrade one file or rewrite some runs.

import { rowComparator } from '../../format/compare.ts'
import type { DeletionVector } from '../../format/deletion-vector.ts'
import { type IndexFiles, dvIndexByBucket, loadDeletionVectors } from '../../handle/bucket-state.ts'
import { bucketsScope } from '../../manifest/bucket-scope.ts'
import { bucketIdentifier } from '../../manifest/identifiers.ts'
import type { ManifestIO } from '../../manifest/manifests.ts'
import type { MergeEngineConfig } from '../../merge/merge-types.ts'
import { compactsWithLookup } from '../../merge/engines.ts'
import { startedAhead } from '../../store/bounded.ts'
import { decodeKey } from '../../table/file-meta.ts'
import type { SchemaView } from '../../table/schema.ts'
import type { IndexManifestEntry, ManifestEntry, Snapshot } from '../../types.ts'
import { type LsmFile, Levels } from '../levels.ts'
import { type CompactOptions, type CompactStep, type CompactUnit, compactionFileSize, limitInput, pickCompaction, pickFullCompaction, planCompaction, shouldDropDelete } from '../universal-compaction.ts'

/** What reading a bucket needs of a table: its schema, its merge engine, its manifests and index files. */
export interface BucketSource extends IndexFiles {
  readonly view: SchemaView
  readonly mergeConfig: MergeEngineConfig
  readonly manifests: Pick<ManifestIO, 'liveEntries' | 'readIndexManifest' | 'readImmutableRange'>
}

/** A bucket at a snapshot: its files as levels, and its deletion vectors. */
export interface BucketState {
  levels: Levels
  /** the bucket's deletion-vector index entries (deletion-vector mode) */
  dvIndex: IndexManifestEntry[] | undefined
  /** whether a file carries a non-empty vector, known before the vectors load */
  hasDeletionVector: (f: LsmFile) => boolean
  /** the bucket's deletion vectors, loading from the first call on (empty outside deletion-vector mode) */
  deletionVectors: () => Promise<Map<string, DeletionVector>>
}

export function lsmFileOf(view: SchemaView, e: ManifestEntry): LsmFile {
  return {
    name: e.file.fileName,
    level: e.file.level,
    size: Number(e.file.fileSize),
    minKey: decodeKey(view, e.file.minKey),
    maxKey: decodeKey(view, e.file.maxKey),
    maxSequenceNumber: e.file.maxSequenceNumber,
    minSequenceNumber: e.file.minSequenceNumber,
    creationTime: e.file.creationTime,
    rowCount: Number(e.file.rowCount),
    deleteRowCount: e.file.deleteRowCount === null ? null : Number(e.file.deleteRowCount),
    entry: e,
  }
}

/** A bucket's live files as LSM levels. */
export function levelsOf(view: SchemaView, entries: ManifestEntry[]): Levels {
  return new Levels(
    entries.map((e) => lsmFileOf(view, e)),
    view.options.numLevels,
    rowComparator(view.keyTypes),
  )
}

/** The options a bucket's compaction pick runs with (`pickCompaction`), from the table's. */
export function pickOptionsOf(table: { readonly view: SchemaView; readonly mergeConfig: MergeEngineConfig }): CompactOptions {
  const opts = table.view.options
  return {
    compactionTrigger: opts.compactionTrigger,
    maxSizeAmplificationPercent: opts.maxSizeAmplificationPercent,
    sizeRatio: opts.sizeRatio,
    numLevels: opts.numLevels,
    // changelog-producer lookup: Paimon's ForceUpLevel0Compaction too, so that every
    // level-0 key meets the lookup that writes its changelog
    deletionVectors: compactsWithLookup(table.mergeConfig.engine, opts.deletionVectors) || opts.changelogProducer === 'lookup',
  }
}

/**
 * Whether a bucket holding these live files has something to compact: the pick a compaction
 * job of it would make (not a full compaction) is not empty.
 */
export function compactionNeeded(table: { readonly view: SchemaView; readonly mergeConfig: MergeEngineConfig }, entries: ManifestEntry[]): boolean {
  return pickCompaction(levelsOf(table.view, entries), pickOptionsOf(table)) !== null
}

/** Reads the bucket's files and, in deletion-vector mode, its index entries: independent reads of the snapshot, at once. */
export async function readBucket(source: BucketSource, snapshot: Snapshot | null, partition: Uint8Array, bucket: number): Promise<BucketState> {
  const indexReading = source.view.options.deletionVectors ? dvIndexByBucket(source, snapshot).then((m) => m.get(bucketIdentifier(partition, bucket))) : undefined
  const loadVectors = async () => loadDeletionVectors(source, await indexReading)
  // only the manifests whose list records can hold this bucket are opened
  const entriesReading = snapshot ? source.manifests.liveEntries(snapshot, bucketsScope(source.view, [{ partition, bucket }])) : []
  const [entries, dvIndex] = await Promise.all([entriesReading, indexReading])
  // Which files carry a non-empty vector is in the index entries (each vector's
  // cardinality), so picking and planning need not wait for the vectors themselves: they
  // load while the inputs are opened. A vector recorded without a cardinality (another
  // writer's) has to be read first to know.
  const cardinality = new Map<string, bigint | null>()
  for (const e of dvIndex ?? []) for (const m of e.dvRanges ?? []) cardinality.set(m.dataFileName, m.cardinality)
  let loading: Promise<Map<string, DeletionVector>> | null = null
  const deletionVectors = () => (loading ??= startedAhead(indexReading ? loadVectors() : Promise.resolve(new Map<string, DeletionVector>())))
  const known = [...cardinality.values()].includes(null) ? await deletionVectors() : null
  const hasDeletionVector = (f: LsmFile) => (known ? (known.get(f.name)?.cardinality ?? 0) > 0 : (cardinality.get(f.name) ?? 0n) > 0n)
  return { levels: levelsOf(source.view, entries), dvIndex, hasDeletionVector, deletionVectors }
}

/** What a pick is made with: the table's pick options, and the request's. */
export interface PickSettings {
  pick: CompactOptions
  /** compact everything into the highest level */
  full?: boolean
  /** cap on the job's input files */
  maxInputFiles: number
}

/** The files the job compacts, capped to `maxInputFiles`; null when there is nothing to do. */
export function pickUnit(bucket: BucketState, s: PickSettings): { unit: CompactUnit; needsMore: boolean } | null {
  const picked = s.full ? pickFullCompaction(bucket.levels, s.pick.numLevels, { hasDeletionVector: bucket.hasDeletionVector }) : pickCompaction(bucket.levels, s.pick)
  if (!picked) return null
  const unit = limitInput(picked, s.maxInputFiles, bucket.levels)
  return { unit, needsMore: unit.files.length < picked.files.length }
}

/**
 * Why a bucket's pick was empty, as the planner saw it (the CLI's "nothing to compact" and a
 * table-wide compaction's report say it; `whyNoPick`). `fullWouldCompact`: a full compaction
 * of the bucket would pick something.
 */
export type SkipReason =
  /** the bucket has no live files */
  | { kind: 'no-files' }
  /** full: already one run at the top level, with no file a rewrite would shrink */
  | { kind: 'one-top-run' }
  | ({ fullWouldCompact: boolean } & (
      /** fewer sorted runs than `num-sorted-run.compaction-trigger` */
      | { kind: 'below-trigger'; sortedRuns: number; trigger: number }
      /** force-up-level-0 (deletion vectors, lookup): no level-0 file, and the runs above it pick nothing */
      | { kind: 'no-level-0'; sortedRuns: number; trigger: number }
      /** a single sorted run */
      | { kind: 'one-run'; level: number }
      /** at the trigger, but neither size amplification nor `compaction.size-ratio` calls for a merge */
      | { kind: 'size-ratio'; sortedRuns: number; trigger: number; sizeRatio: number }
      /** the pick would only leave its one file where it is */
      | { kind: 'in-place' }
    ))

/** The reason `pickUnit` found nothing with these settings (call it only when it did). */
export function whyNoPick(bucket: BucketState, s: PickSettings): SkipReason {
  const { levels } = bucket
  const runs = levels.levelSortedRuns()
  const trigger = s.pick.compactionTrigger
  if (runs.length === 0) return { kind: 'no-files' }
  if (s.full) return { kind: 'one-top-run' }
  const fullWouldCompact = pickFullCompaction(levels, s.pick.numLevels, { hasDeletionVector: bucket.hasDeletionVector }) !== null
  // force-up-level-0 picks whenever level 0 holds a file (the runs are newest first)
  if (s.pick.deletionVectors && runs[0].level !== 0) return { kind: 'no-level-0', sortedRuns: runs.length, trigger, fullWouldCompact }
  if (runs.length < trigger) return { kind: 'below-trigger', sortedRuns: runs.length, trigger, fullWouldCompact }
  if (runs.length === 1) return { kind: 'one-run', level: runs[0].level, fullWouldCompact }
  if (runs.length === trigger) return { kind: 'size-ratio', sortedRuns: runs.length, trigger, sizeRatio: s.pick.sizeRatio, fullWouldCompact }
  return { kind: 'in-place', fullWouldCompact }
}

/** What the steps of a unit are planned with. */
export interface StepSettings {
  keyTypes: SchemaView['keyTypes']
  deletionVectors: boolean
  /** the merge looks each rising key up in the older levels (`compactsWithLookup`) */
  lookup: boolean
  /** changelog-producer lookup: every key taken up from level 0 writes its change */
  changelogLookup: boolean
  targetFileSize: number
}

/** The unit as steps: files upgraded where they are, runs rewritten by merge. */
export function planSteps(unit: CompactUnit, bucket: BucketState, s: StepSettings): CompactStep[] {
  return planCompaction(unit, {
    keyComparator: rowComparator(s.keyTypes),
    dropDelete: shouldDropDelete(unit.outputLevel, bucket.levels, s.deletionVectors),
    deletionVectors: s.lookup,
    changelogFromLevel0: s.changelogLookup,
    minFileSize: compactionFileSize(s.targetFileSize),
    hasDeletionVector: bucket.hasDeletionVector,
  })
}
