// Which files of a bucket to compact, to which level, and how: Paimon's universal compaction
// picker (mergetree/compact/UniversalCompaction.java, after the level-1 inflation fixes of
// apache/paimon#8993 and #9185), ForceUpLevel0Compaction for deletion-vector mode,
// CompactStrategy.pickFullCompaction, the pick filter and dropDelete rule of
// MergeTreeCompactManager, and the upgrade-or-rewrite plan of MergeTreeCompactTask.
// Pure logic: the caller reads, merges and writes.
//
// Not modelled (no Strata option): compaction.optimization-interval and the size thresholds
// of EarlyFullCompaction, off-peak ratios, lookup-compact GENTLE, record-level expiry.

import { StrataInputError } from '../errors.ts'
import { type KeyComparator, type LevelSortedRun, type LsmFile, compareLevel0, intervalPartition, Levels } from './levels.ts'


/**
 * Files to compact into `outputLevel`. `maxLevel` is the bucket's top level when the unit was
 * picked (MergeTreeCompactTask needs it). `fileRewrite`: every file is rewritten on its own
 * (Paimon's FileRewriteCompactTask), used when a full compaction finds one run at the top.
 */
export interface CompactUnit {
  outputLevel: number
  files: LsmFile[]
  fileRewrite: boolean
  maxLevel: number
}

export interface CompactOptions {
  /** num-sorted-run.compaction-trigger */
  compactionTrigger: number
  /** compaction.max-size-amplification-percent */
  maxSizeAmplificationPercent: number
  /** compaction.size-ratio */
  sizeRatio: number
  /** num-levels (a bucket whose files sit higher widens it, as Levels does) */
  numLevels: number
  /**
   * deletion-vectors.enabled, or an engine compacted with lookup (first-row;
   * compactsWithLookup): pick with ForceUpLevel0Compaction (all of level 0, every time)
   */
  deletionVectors: boolean
}

function unitOf(outputLevel: number, runs: LevelSortedRun[], maxLevel: number): CompactUnit {
  return { outputLevel, files: runs.flatMap((r) => r.run.files), fileRewrite: false, maxLevel }
}

/**
 * Reduce space amplification: when all runs but the oldest are more than
 * maxSizeAmplificationPercent of the oldest, everything goes to the top level.
 */
export function pickForSizeAmp(runs: LevelSortedRun[], maxLevel: number, opts: CompactOptions): CompactUnit | null {
  if (runs.length < opts.compactionTrigger) return null
  let candidateSize = 0
  for (let i = 0; i < runs.length - 1; i++) candidateSize += runs[i].run.size
  const earliestRunSize = runs[runs.length - 1].run.size
  if (candidateSize * 100 > opts.maxSizeAmplificationPercent * earliestRunSize) return unitOf(maxLevel, runs, maxLevel)
  return null
}

/**
 * Grow the newest `candidateCount` runs while the next run is no bigger than the candidates'
 * total plus sizeRatio percent. Once two runs are taken, a following level-0 or level-1 run
 * joins whatever its size: the no-level-0-output rule of createUnit would merge it anyway,
 * and counting it lets level 2 be weighed against the combined size, so level 1 does not
 * swell forever (apache/paimon#8993, #9185). null unless at least two runs are taken, or
 * `forcePick`.
 */
export function pickForSizeRatio(
  runs: LevelSortedRun[],
  maxLevel: number,
  sizeRatio: number,
  candidateCount = 1,
  forcePick = false,
): CompactUnit | null {
  let candidateSize = 0
  for (let i = 0; i < candidateCount; i++) candidateSize += runs[i].run.size
  let triggered = forcePick || candidateCount > 1
  for (let i = candidateCount; i < runs.length; i++) {
    const next = runs[i]
    if ((candidateSize * (100 + sizeRatio)) / 100 < next.run.size && (!triggered || next.level > 1)) break
    candidateSize += next.run.size
    candidateCount++
    triggered = true
  }
  return triggered ? createUnit(runs, maxLevel, candidateCount) : null
}

/**
 * Output level of the newest `runCount` runs: the top level when they are all the runs, else
 * one below the next (older) run's level. Never level 0: then the pick grows up to and
 * including the first run above level 0, and outputs at that run's level.
 */
export function createUnit(runs: LevelSortedRun[], maxLevel: number, runCount: number): CompactUnit {
  let outputLevel = runCount === runs.length ? maxLevel : Math.max(0, runs[runCount].level - 1)
  if (outputLevel === 0) {
    for (let i = runCount; i < runs.length; i++) {
      runCount++
      if (runs[i].level !== 0) {
        outputLevel = runs[i].level
        break
      }
    }
  }
  if (runCount === runs.length) outputLevel = maxLevel
  return unitOf(outputLevel, runs.slice(0, runCount), maxLevel)
}

/** UniversalCompaction.pick: size amplification, then size ratio, then sorted-run count. */
export function universalPick(runs: LevelSortedRun[], numLevels: number, opts: CompactOptions): CompactUnit | null {
  const maxLevel = numLevels - 1
  const amp = pickForSizeAmp(runs, maxLevel, opts)
  if (amp) return amp
  if (runs.length >= opts.compactionTrigger) {
    const ratio = pickForSizeRatio(runs, maxLevel, opts.sizeRatio)
    if (ratio) return ratio
  }
  if (runs.length > opts.compactionTrigger) {
    // enough of the newest runs to get back to the trigger, grown further by size ratio
    return pickForSizeRatio(runs, maxLevel, opts.sizeRatio, runs.length - opts.compactionTrigger + 1)
  }
  return null
}

/**
 * ForceUpLevel0Compaction (lookup-compact RADICAL, the default): the universal pick if there is
 * one, else all level-0 files (plus whatever the size ratio adds) up to level >= 1. Every
 * universal pick already holds all of level 0, since its output is never level 0 and picks are
 * newest-first prefixes.
 */
export function forceUpLevel0Pick(runs: LevelSortedRun[], numLevels: number, opts: CompactOptions): CompactUnit | null {
  const pick = universalPick(runs, numLevels, opts)
  if (pick) return pick
  let level0 = 0
  while (level0 < runs.length && runs[level0].level === 0) level0++
  return level0 === 0 ? null : pickForSizeRatio(runs, numLevels - 1, opts.sizeRatio, level0, true)
}

function checkOptions(opts: CompactOptions): void {
  const int = (name: string, v: number, min: number) => {
    if (!Number.isInteger(v) || v < min) throw new StrataInputError(`option '${name}': invalid value ${v}, expected an integer >= ${min}`)
  }
  int('num-sorted-run.compaction-trigger', opts.compactionTrigger, 1)
  int('compaction.max-size-amplification-percent', opts.maxSizeAmplificationPercent, 0)
  int('compaction.size-ratio', opts.sizeRatio, 0)
  int('num-levels', opts.numLevels, 2)
}

/**
 * The compaction a bucket needs now, or null. A pick is always a newest-first prefix of
 * `levels.levelSortedRuns()` with an output level of at least 1 and below every run it leaves.
 * Like MergeTreeCompactManager, a pick that would only leave one file where it is is dropped.
 */
export function pickCompaction(levels: Levels, opts: CompactOptions): CompactUnit | null {
  checkOptions(opts)
  const numLevels = Math.max(opts.numLevels, levels.numberOfLevels)
  const runs = levels.levelSortedRuns()
  const unit = opts.deletionVectors ? forceUpLevel0Pick(runs, numLevels, opts) : universalPick(runs, numLevels, opts)
  if (!unit || unit.files.length === 0) return null
  if (unit.files.length === 1 && unit.files[0].level === unit.outputLevel) return null
  return unit
}

export interface FullCompactionOptions {
  /** files with a deletion vector: a lone top-level run still rewrites them to apply it */
  hasDeletionVector?: (file: LsmFile) => boolean
  /** rewrite every file even when the bucket is already one top-level run */
  forceRewriteAllFiles?: boolean
}

/**
 * CompactStrategy.pickFullCompaction: every file to the top level. When the bucket already is
 * one run at the top level, only files that gain from a rewrite are taken, each rewritten on
 * its own: files with a deletion vector (Paimon), and files holding retract rows (Strata: a
 * top-level file keeps no deletes). null when nothing would change.
 */
export function pickFullCompaction(levels: Levels, numLevels: number, opts: FullCompactionOptions = {}): CompactUnit | null {
  if (!Number.isInteger(numLevels) || numLevels < 2) {
    throw new StrataInputError(`option 'num-levels': invalid value ${numLevels}, expected an integer >= 2`)
  }
  const maxLevel = Math.max(numLevels, levels.numberOfLevels) - 1
  const runs = levels.levelSortedRuns()
  if (runs.length === 0) return null
  if (runs.length === 1 && runs[0].level === maxLevel) {
    const files = runs[0].run.files.filter(
      (f) => opts.forceRewriteAllFiles || opts.hasDeletionVector?.(f) || (f.deleteRowCount ?? 0) > 0,
    )
    return files.length === 0 ? null : { outputLevel: maxLevel, files, fileRewrite: true, maxLevel }
  }
  return unitOf(maxLevel, runs, maxLevel)
}

/**
 * MergeTreeCompactManager's dropDelete: retract rows may be dropped when nothing older can lie
 * below the output: it is not level 0 and at or above the highest non-empty level. In
 * deletion-vector mode always above level 0, since superseded rows are marked in vectors and
 * readers merge nothing (`dvMaintainer != null`). `levels` is the bucket before the compaction.
 */
export function shouldDropDelete(outputLevel: number, levels: Levels, deletionVectors: boolean): boolean {
  return outputLevel !== 0 && (deletionVectors || outputLevel >= levels.nonEmptyHighestLevel())
}

/** shouldWaitForLatestCompaction: more sorted runs than num-sorted-run.stop-trigger. */
export function needsBackPressure(levels: Levels, stopTrigger: number): boolean {
  return levels.numberOfSortedRuns > stopTrigger
}

/**
 * CoreOptions.compactionFileSize: files smaller than this are rewritten with their neighbours
 * rather than upgraded, target-file-size x compaction.small-file-ratio (0.7). The margin stops
 * a rewrite output that came out just under the target from being rewritten again.
 */
export function compactionFileSize(targetFileSize: number, smallFileRatio = 0.7): number {
  return Math.floor(targetFileSize * smallFileRatio)
}

/**
 * One action of a compaction plan.
 * - upgrade: give the file `outputLevel` in the manifest; its bytes stay.
 * - rewrite: merge the runs by key and sequence into new files at `outputLevel`, rolling at
 *   target-file-size, dropping retract rows when `dropDelete`. `sections` is Paimon's shape
 *   (key-disjoint sections, in key order, each a list of runs); `runs` holds the same files as
 *   the fewest sorted runs (a run of each section joined in key order), for a k-way merge.
 *   `lookup`: deletion-vector mode with level-0 rows rising below the top level: each output
 *   key's older version in the levels above `outputLevel` must be found and marked deleted
 *   (or merged in, for merge engines other than deduplicate). Inputs are read with their
 *   deletion vectors applied.
 */
export type CompactStep =
  | { kind: 'upgrade'; file: LsmFile; outputLevel: number }
  | { kind: 'rewrite'; runs: LsmFile[][]; sections: LsmFile[][][]; outputLevel: number; dropDelete: boolean; lookup: boolean }

export interface PlanOptions {
  keyComparator: KeyComparator
  /** from shouldDropDelete */
  dropDelete: boolean
  /** level-0 keys are looked up in the older levels (compactsWithLookup): such files are rewritten, not upgraded */
  deletionVectors: boolean
  /** changelog-producer lookup: every level-0 file is rewritten (its keys' changes are written as it is), never upgraded */
  changelogFromLevel0?: boolean
  /** compactionFileSize(target-file-size): smaller files are rewritten, not upgraded */
  minFileSize: number
  /** a file already at the output level is rewritten when it has a deletion vector (Paimon) */
  hasDeletionVector?: (file: LsmFile) => boolean
}

/**
 * MergeTreeCompactTask: walk the unit's key-disjoint sections in key order. A section of
 * several runs, and each small file, joins the pending rewrite; a large file alone in its
 * section first closes the pending rewrite (so no output spans it), then is upgraded. A
 * pending rewrite of one lone file is an upgrade too. A file is rewritten instead of upgraded
 * when it would reach the top level with retract rows (or an unknown count) in it, and, in
 * deletion-vector mode, when it comes from level 0 and stops below the top: its keys may hold
 * older versions above that must be looked up (Paimon reads such a file through the lookup
 * without rewriting it for deduplicate; Strata rewrites, as an upgrade step changes only
 * metadata). Files already at the output level are left alone (no step) unless they carry a
 * deletion vector.
 */
export function planCompaction(unit: CompactUnit, opts: PlanOptions): CompactStep[] {
  const { outputLevel, maxLevel } = unit
  const cmp = opts.keyComparator
  const steps: CompactStep[] = []
  const rewrite = (sections: LsmFile[][][]) => {
    const files = sections.flat(2)
    steps.push({
      kind: 'rewrite',
      runs: joinRuns(sections),
      sections,
      outputLevel,
      dropDelete: opts.dropDelete,
      lookup: opts.deletionVectors && outputLevel < maxLevel && files.some((f) => f.level === 0),
    })
  }
  if (unit.fileRewrite) {
    for (const f of unit.files) rewrite([[[f]]])
    return steps
  }
  const upgrade = (f: LsmFile) => {
    if (f.level === outputLevel) {
      if (opts.hasDeletionVector?.(f)) rewrite([[[f]]])
      return
    }
    const keepsDeletes = outputLevel === maxLevel && f.deleteRowCount !== 0
    const needsLookup = (opts.deletionVectors && f.level === 0 && outputLevel < maxLevel) || (opts.changelogFromLevel0 === true && f.level === 0)
    if (keepsDeletes || needsLookup) rewrite([[[f]]])
    else steps.push({ kind: 'upgrade', file: f, outputLevel })
  }
  let pending: LsmFile[][][] = []
  const flush = () => {
    if (pending.length === 1 && pending[0].length === 1) for (const f of pending[0][0]) upgrade(f)
    else if (pending.length > 0) rewrite(pending)
    pending = []
  }
  for (const section of intervalPartition(unit.files, cmp)) {
    if (section.length > 1) {
      pending.push(section)
      continue
    }
    for (const f of section[0]) {
      if (f.size < opts.minFileSize) pending.push([[f]])
      else {
        flush()
        upgrade(f)
      }
    }
  }
  flush()
  return steps
}

/** Sections are key-disjoint and in key order, so run i of each concatenates into one run. */
function joinRuns(sections: LsmFile[][][]): LsmFile[][] {
  const runs: LsmFile[][] = []
  for (const section of sections) {
    section.forEach((run, i) => {
      runs[i] ??= []
      runs[i].push(...run)
    })
  }
  return runs
}

/** The unit's files as sorted runs, newest first (the order of Levels.levelSortedRuns). */
function runsOfUnit(files: LsmFile[]): LsmFile[][] {
  const level0 = files.filter((f) => f.level === 0).sort(compareLevel0)
  const higher = new Map<number, LsmFile[]>()
  for (const f of files) if (f.level > 0) (higher.get(f.level) ?? higher.set(f.level, []).get(f.level)!).push(f)
  return [...level0.map((f) => [f]), ...[...higher.keys()].sort((a, b) => a - b).map((l) => higher.get(l)!)]
}

/**
 * Caps one job's input at `maxFiles` files (compaction.max-input-files; a Lambda job must end in
 * time); the bucket gets a follow-up job for the rest. Returns `unit` itself when it fits, and
 * uncapped when no segment of whole runs fits. Which runs it keeps, and the level that keeps newer
 * versions lower: docs/design.md "A capped job keeps newer versions lower".
 *
 * `levels`, when given, is the bucket the unit was picked from; the result is checked against
 * all of it (a failed check is a bug, not bad input).
 */
export function limitInput(unit: CompactUnit, maxFiles: number, levels?: Levels): CompactUnit {
  if (!Number.isInteger(maxFiles) || maxFiles < 1) {
    throw new StrataInputError(`option 'compaction.max-input-files': invalid value ${maxFiles}, expected an integer >= 1`)
  }
  if (unit.files.length <= maxFiles) return unit
  if (unit.fileRewrite) return { ...unit, files: unit.files.slice(0, maxFiles) }
  const runs = runsOfUnit(unit.files)
  const n = runs.length
  // fileCount[i] = files in runs[0..i), bytes[i] likewise
  const fileCount = [0]
  const bytes = [0]
  for (const r of runs) {
    fileCount.push(fileCount[fileCount.length - 1] + r.length)
    bytes.push(bytes[bytes.length - 1] + r.reduce((s, f) => s + f.size, 0))
  }
  const level = (i: number) => runs[i][0].level
  let best: { j: number; k: number; outputLevel: number } | null = null
  let j = 0
  for (let k = 1; k <= n; k++) {
    while (fileCount[k] - fileCount[j] > maxFiles) j++
    if (j === k) continue
    const outputLevel = k === n ? unit.outputLevel : level(k) - 1
    if (outputLevel < 1) continue
    if (k - j < 2 && level(j) !== 0) continue
    const better =
      !best ||
      k - j > best.k - best.j ||
      (k - j === best.k - best.j && bytes[k] - bytes[j] < bytes[best.k] - bytes[best.j])
    if (better) best = { j, k, outputLevel }
  }
  if (!best) return unit
  const capped: CompactUnit = { outputLevel: best.outputLevel, files: runs.slice(best.j, best.k).flat(), fileRewrite: false, maxLevel: unit.maxLevel }
  if (levels) checkSegment(capped, levels)
  return capped
}

/** Every run of the bucket outside the segment: newer ones at level 0 or below O, older above. */
function checkSegment(unit: CompactUnit, levels: Levels): void {
  const inUnit = new Set(unit.files.map((f) => f.name))
  const runs = levels.levelSortedRuns()
  const first = runs.findIndex((r) => r.run.files.some((f) => inUnit.has(f.name)))
  let last = -1
  runs.forEach((r, i) => {
    if (r.run.files.some((f) => inUnit.has(f.name))) last = i
  })
  runs.forEach((r, i) => {
    const inside = r.run.files.filter((f) => inUnit.has(f.name)).length
    const wholeOrNone = inside === 0 || inside === r.run.files.length
    const ok =
      wholeOrNone &&
      (i < first ? r.level === 0 || r.level < unit.outputLevel : i > last ? r.level > unit.outputLevel : inside > 0)
    if (!ok) throw new Error(`limitInput: capped unit to level ${unit.outputLevel} is unsafe against the level-${r.level} run of ${r.run.files[0].name}`)
  })
}
