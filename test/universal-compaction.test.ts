import { describe, it, expect } from 'vitest'
import fc from 'fast-check'
import { Levels, sortedRun, type LevelSortedRun, type LsmFile } from '../lib/lsm/levels.ts'
import {
  type CompactOptions,
  type CompactStep,
  type CompactUnit,
  compactionFileSize,
  createUnit,
  forceUpLevel0Pick,
  limitInput,
  needsBackPressure,
  pickCompaction,
  pickForSizeAmp,
  pickForSizeRatio,
  pickFullCompaction,
  planCompaction,
  shouldDropDelete,
  universalPick,
} from '../lib/lsm/universal-compaction.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { Value } from '../lib/types.ts'

const cmp = (a: Value[], b: Value[]) => (a[0] as number) - (b[0] as number)

let serial = 0
function file(level: number, size: number, min = 0, max = 0, extra: Partial<LsmFile> = {}): LsmFile {
  serial++
  return {
    name: `f${String(serial).padStart(5, '0')}`,
    level,
    size,
    minKey: [min],
    maxKey: [max],
    maxSequenceNumber: BigInt(serial),
    rowCount: 1,
    deleteRowCount: 0,
    ...extra,
  }
}

// Paimon UniversalCompactionTest helpers: one single-file run per entry
const run = (level: number, size: number): LevelSortedRun => ({ level, run: sortedRun(level, [file(level, size)]) })
const level0 = (...sizes: number[]) => sizes.map((s) => run(0, s))
const sizesOf = (u: CompactUnit | null) => u?.files.map((f) => f.size)
const options = (maxSizeAmplificationPercent: number, sizeRatio: number, compactionTrigger: number, deletionVectors = false): CompactOptions => ({
  maxSizeAmplificationPercent,
  sizeRatio,
  compactionTrigger,
  numLevels: 6,
  deletionVectors,
})

describe('universal compaction (Paimon UniversalCompactionTest)', () => {
  it('output level: below the next run, never level 0, the top when all runs are taken', () => {
    const runs = [0, 0, 1, 3, 4].map((l) => run(l, 1))
    expect([1, 2, 3, 4, 5].map((count) => createUnit(runs, 5, count).outputLevel)).toEqual([1, 1, 2, 3, 5])
    // the no-level-0 rule takes the first run above level 0 into the unit
    expect(createUnit(runs, 5, 1).files).toHaveLength(3)
    // only level-0 runs after the taken ones: all of them, to the top
    const zeros = createUnit(level0(1, 1, 1), 5, 1)
    expect([zeros.files.length, zeros.outputLevel]).toEqual([3, 5])
  })

  it('picks by size amplification, size ratio and file number', () => {
    const opts = options(25, 1, 3)
    expect(sizesOf(universalPick(level0(1, 2, 3, 3), 3, opts))).toEqual([1, 2, 3, 3])
    expect(sizesOf(universalPick([run(0, 1), run(1, 1), run(2, 1), run(3, 50)], 4, opts))).toEqual([1, 1, 1])
    // by file num: 3 joins by size ratio after the two runs taken for the count
    expect(sizesOf(universalPick([run(0, 1), run(1, 2), run(2, 3), run(3, 50)], 4, opts))).toEqual([1, 2, 3])
  })

  it('never outputs to level 0', () => {
    const opts = options(25, 1, 3)
    const a = universalPick([run(0, 1), run(0, 1), run(1, 1), run(2, 50)], 3, opts)
    expect(sizesOf(a)).toEqual([1, 1, 1])
    expect(a!.outputLevel).toBe(1)
    expect(sizesOf(universalPick([run(0, 1), run(0, 2), run(1, 3), run(2, 50)], 3, opts))).toEqual([1, 2, 3])
  })

  it('extreme case: five level-0 files of very different sizes all go to the top (paimon#2033)', () => {
    const pick = universalPick(level0(1, 1, 1, 1024, 1024 * 1024), 6, options(200, 1, 5))
    expect(sizesOf(pick)).toEqual([1, 1, 1, 1024, 1024 * 1024])
    expect(pick!.outputLevel).toBe(5)
  })

  it('size amplification sequence', () => {
    const opts = options(25, 0, 1)
    let sizes = [1]
    const step = () => {
      sizes = [1, ...sizes]
      const unit = pickForSizeAmp(level0(...sizes), 3, opts)
      if (unit) sizes = [unit.files.reduce((s, f) => s + f.size, 0)]
      return sizes
    }
    const expected = [[2], [3], [4], [1, 4], [6], [1, 6], [8], [1, 8], [1, 1, 8], [11], [1, 11], [1, 1, 11], [14], [1, 14], [1, 1, 14], [1, 1, 1, 14], [18]]
    for (const e of expected) expect(step()).toEqual(e)
  })

  it('size ratio sequence', () => {
    const opts = options(25, 1, 5)
    let sizes = [1, 1, 1, 1]
    const step = () => {
      sizes = ratioStep(opts, [1, ...sizes])
      return sizes
    }
    const expected = [
      [5], [1, 5], [1, 1, 5], [1, 1, 1, 5], [4, 5], [1, 4, 5], [1, 1, 4, 5], [3, 4, 5], [1, 3, 4, 5], [2, 3, 4, 5], [1, 2, 3, 4, 5], [16],
      [1, 16], [1, 1, 16], [1, 1, 1, 16], [4, 16], [1, 4, 16], [1, 1, 4, 16], [3, 4, 16], [1, 3, 4, 16], [2, 3, 4, 16], [1, 2, 3, 4, 16], [11, 16],
    ]
    for (const e of expected) expect(step()).toEqual(e)
  })

  it('size ratio threshold', () => {
    expect(ratioStep(options(25, 10, 2), [8, 9, 10])).toEqual([8, 9, 10])
    expect(ratioStep(options(25, 20, 2), [8, 9, 10])).toEqual([27])
  })

  it('lookup (force up level 0): level 0 to the top, force pick, to an empty level', () => {
    const opts = options(25, 1, 3, true)
    const a = forceUpLevel0Pick(level0(1, 2, 2, 2), 3, opts)!
    expect([sizesOf(a), a.outputLevel]).toEqual([[1, 2, 2, 2], 2])
    const b = forceUpLevel0Pick([run(0, 1), run(1, 2), run(2, 2)], 3, opts)!
    expect([sizesOf(b), b.outputLevel]).toEqual([[1, 2, 2], 2])
    const c = forceUpLevel0Pick([run(0, 1), run(2, 2)], 3, opts)!
    expect([sizesOf(c), c.outputLevel]).toEqual([[1], 1])
  })
})

/** Paimon's pickForSizeRatio test helper: run i at level i, merged sizes replace the picked ones. */
function ratioStep(opts: CompactOptions, sizes: number[]): number[] {
  const runs = sizes.map((s, i) => run(i, s))
  const unit = runs.length < opts.compactionTrigger ? null : pickForSizeRatio(runs, sizes.length, opts.sizeRatio)
  if (!unit) return sizes
  const rest = [...sizes]
  for (const f of unit.files) rest.splice(rest.indexOf(f.size), 1)
  return [unit.files.reduce((s, f) => s + f.size, 0), ...rest]
}

describe('force up level 0 (Paimon ForceUpLevel0CompactionTest)', () => {
  it('takes all of level 0 up to level >= 1', () => {
    const opts = options(200, 1, 5, true)
    expect(forceUpLevel0Pick([run(0, 1), run(0, 1)], 3, opts)!.outputLevel).toBe(2)
    expect(forceUpLevel0Pick([run(0, 1), run(1, 10)], 3, opts)!.outputLevel).toBe(2)
    expect(forceUpLevel0Pick([run(0, 1), run(0, 5), run(2, 10)], 3, opts)!.outputLevel).toBe(1)
    expect(forceUpLevel0Pick([run(2, 10)], 3, opts)).toBeNull()
    expect(forceUpLevel0Pick([run(0, 1), run(0, 5), run(0, 10), run(0, 20)], 3, opts)!.outputLevel).toBe(2)
  })
})

describe('level 1 inflation fixes (apache/paimon#8993, #9185)', () => {
  it('a forced level-0 pick weighs level 2 against level 0 plus level 1', () => {
    const opts = options(200, 1, 5, true)
    // 1 + 10 = 11, and 11 * 1.01 >= 11: level 2 joins, all go to the top
    const take = forceUpLevel0Pick([run(0, 1), run(1, 10), run(2, 11)], 3, opts)!
    expect([sizesOf(take), take.outputLevel]).toEqual([[1, 10, 11], 2])
    // 11 * 1.01 < 12: level 2 stays, levels 0 and 1 merge into level 1
    const keep = forceUpLevel0Pick([run(0, 1), run(1, 10), run(2, 12)], 3, opts)!
    expect([sizesOf(keep), keep.outputLevel]).toEqual([[1, 10], 1])
  })

  it('a triggered size-ratio pick takes level 1 and weighs level 2 with it', () => {
    const opts = options(200, 1, 3)
    const take = universalPick([run(0, 1), run(0, 1), run(1, 10), run(2, 12)], 3, opts)!
    expect([sizesOf(take), take.outputLevel]).toEqual([[1, 1, 10, 12], 2])
    const keep = universalPick([run(0, 1), run(0, 1), run(1, 10), run(2, 100)], 3, opts)!
    expect([sizesOf(keep), keep.outputLevel]).toEqual([[1, 1, 10], 1])
    // not triggered (the second run is too big): nothing by size ratio
    expect(pickForSizeRatio([run(0, 1), run(1, 10), run(2, 12)], 2, 1)).toBeNull()
  })
})

/** A bucket: level-0 files by [min, max, size], each level >= 1 as a list of file sizes. */
function bucket(numLevels: number, l0: [number, number, number][], higher: Record<number, number[]> = {}): Levels {
  const files: LsmFile[] = l0.map(([min, max, size]) => file(0, size, min, max))
  for (const [level, sizes] of Object.entries(higher)) sizes.forEach((s, i) => files.push(file(Number(level), s, i * 10, i * 10 + 9)))
  return new Levels(files, numLevels, cmp)
}

describe('pickCompaction', () => {
  const opts = (extra: Partial<CompactOptions> = {}): CompactOptions => ({ ...options(200, 1, 3), numLevels: 4, ...extra })

  it('returns null below the trigger and when only one file would stay where it is', () => {
    expect(pickCompaction(bucket(4, [[0, 9, 1]]), opts())).toBeNull()
    expect(pickCompaction(bucket(4, [], { 3: [10] }), opts({ compactionTrigger: 1 }))).toBeNull()
    expect(pickCompaction(bucket(4, []), opts({ deletionVectors: true }))).toBeNull()
  })

  it('picks a newest-first prefix and records the bucket top level', () => {
    const levels = bucket(4, [[0, 9, 1], [0, 9, 1], [0, 9, 1]], { 3: [100, 100] })
    const unit = pickCompaction(levels, opts())!
    expect(unit.files.map((f) => f.name)).toEqual(levels.level0.map((f) => f.name))
    expect(unit.outputLevel).toBe(2)
    expect(unit.maxLevel).toBe(3)
    expect(unit.fileRewrite).toBe(false)
  })

  it('in deletion-vector mode lifts level 0 even below the trigger', () => {
    const levels = bucket(4, [[0, 9, 1]], { 3: [100] })
    const unit = pickCompaction(levels, opts({ deletionVectors: true }))!
    expect([sizesOf(unit), unit.outputLevel]).toEqual([[1], 2])
  })

  it('uses the widened levels of a bucket whose files sit above num-levels', () => {
    const levels = bucket(3, [[0, 9, 50], [0, 9, 50], [0, 9, 50]], { 5: [10] })
    const unit = pickCompaction(levels, opts({ numLevels: 3 }))!
    expect([unit.outputLevel, unit.maxLevel]).toEqual([5, 5])
  })

  it('refuses ill-typed options, naming the option', () => {
    const levels = bucket(4, [])
    expect(() => pickCompaction(levels, opts({ compactionTrigger: 0 }))).toThrow(StrataInputError)
    expect(() => pickCompaction(levels, opts({ sizeRatio: 1.5 }))).toThrow(/compaction\.size-ratio.*1\.5/)
    expect(() => pickCompaction(levels, opts({ numLevels: 1 }))).toThrow(/num-levels/)
  })
})

describe('pickFullCompaction', () => {
  it('takes everything to the top level', () => {
    const levels = bucket(4, [[0, 9, 1]], { 1: [5], 3: [9] })
    const unit = pickFullCompaction(levels, 4)!
    expect([sizesOf(unit), unit.outputLevel, unit.fileRewrite]).toEqual([[1, 5, 9], 3, false])
  })

  it('nothing for an empty bucket or a clean single top-level run', () => {
    expect(pickFullCompaction(bucket(4, []), 4)).toBeNull()
    expect(pickFullCompaction(bucket(4, [], { 3: [9, 9] }), 4)).toBeNull()
    // a single run below the top still goes up
    expect(pickFullCompaction(bucket(4, [], { 2: [9] }), 4)!.outputLevel).toBe(3)
  })

  it('a top-level run rewrites only files with deletes or a deletion vector, each on its own', () => {
    const a = file(3, 9, 0, 9)
    const b = file(3, 9, 10, 19, { deleteRowCount: 2 })
    const c = file(3, 9, 20, 29)
    const levels = new Levels([a, b, c], 4, cmp)
    expect(pickFullCompaction(levels, 4)).toEqual({ outputLevel: 3, files: [b], fileRewrite: true, maxLevel: 3 })
    const withDv = pickFullCompaction(levels, 4, { hasDeletionVector: (f) => f === c })!
    expect(withDv.files).toEqual([b, c])
    expect(pickFullCompaction(levels, 4, { forceRewriteAllFiles: true })!.files).toEqual([a, b, c])
    expect(() => pickFullCompaction(levels, 0)).toThrow(StrataInputError)
  })
})

describe('shouldDropDelete, needsBackPressure, compactionFileSize', () => {
  it('drops deletes only where nothing older lies below, and always above level 0 with deletion vectors', () => {
    const levels = bucket(5, [[0, 9, 1]], { 2: [5] })
    expect(shouldDropDelete(0, levels, false)).toBe(false)
    expect(shouldDropDelete(0, levels, true)).toBe(false)
    expect(shouldDropDelete(1, levels, false)).toBe(false)
    expect(shouldDropDelete(2, levels, false)).toBe(true)
    expect(shouldDropDelete(4, levels, false)).toBe(true)
    expect(shouldDropDelete(1, levels, true)).toBe(true)
  })

  it('back-pressure past num-sorted-run.stop-trigger', () => {
    const levels = bucket(4, [[0, 9, 1], [0, 9, 1]], { 2: [5] })
    expect(needsBackPressure(levels, 3)).toBe(false)
    expect(needsBackPressure(levels, 2)).toBe(true)
  })

  it('small-file threshold is target-file-size x 0.7', () => {
    expect(compactionFileSize(128 * 1024 * 1024)).toBe(93952409)
    expect(compactionFileSize(1000, 0.5)).toBe(500)
  })
})

const describeSteps = (steps: CompactStep[]) =>
  steps.map((s) => (s.kind === 'upgrade' ? `up ${s.file.name}` : `rw ${s.runs.map((r) => r.map((f) => f.name).join('+')).join(' | ')}${s.lookup ? ' lookup' : ''}`))

describe('planCompaction (Paimon MergeTreeCompactTask)', () => {
  const plan = (unit: Omit<CompactUnit, 'fileRewrite' | 'maxLevel'> & Partial<CompactUnit>, extra: Partial<Parameters<typeof planCompaction>[1]> = {}) =>
    planCompaction({ fileRewrite: false, maxLevel: 5, ...unit }, { keyComparator: cmp, dropDelete: false, deletionVectors: false, minFileSize: 100, ...extra })

  it('upgrades large key-disjoint files and rewrites small neighbours between them', () => {
    const big1 = file(0, 500, 0, 9, { name: 'big1' })
    const s1 = file(0, 10, 10, 19, { name: 's1' })
    const s2 = file(0, 10, 20, 29, { name: 's2' })
    const big2 = file(1, 500, 30, 39, { name: 'big2' })
    const s3 = file(0, 10, 40, 49, { name: 's3' })
    const steps = plan({ outputLevel: 2, files: [s3, big2, s2, big1, s1] })
    expect(describeSteps(steps)).toEqual(['up big1', 'rw s1+s2', 'up big2', 'up s3'])
    expect(steps.every((s) => s.outputLevel === 2)).toBe(true)
  })

  it('rewrites overlapping sections with the small files around them, in key order', () => {
    const a = file(0, 500, 0, 10, { name: 'a' })
    const b = file(1, 500, 5, 15, { name: 'b' })
    const c = file(1, 500, 16, 20, { name: 'c' })
    const small = file(0, 10, 21, 22, { name: 'small' })
    const steps = plan({ outputLevel: 1, files: [a, b, c, small] })
    // c is alone in its section but already at level 1: it stays (no step) and closes the rewrite
    expect(describeSteps(steps)).toEqual(['rw a | b', 'up small'])
    const rw = steps[0] as Extract<CompactStep, { kind: 'rewrite' }>
    expect(rw.sections.map((s) => s.map((r) => r.map((f) => f.name)))).toEqual([[['a'], ['b']]])
  })

  it('joins runs across sections into the fewest key-ordered runs', () => {
    const fs = [file(0, 10, 0, 5, { name: 'a' }), file(0, 10, 3, 8, { name: 'b' }), file(0, 10, 10, 12, { name: 'c' }), file(0, 10, 20, 30, { name: 'd' }), file(0, 10, 25, 27, { name: 'e' }), file(0, 10, 26, 40, { name: 'f' })]
    const [step] = plan({ outputLevel: 1, files: fs }) as Extract<CompactStep, { kind: 'rewrite' }>[]
    expect(step.sections).toHaveLength(3)
    expect(step.runs.map((r) => r.map((f) => f.name))).toEqual([['a', 'c', 'd'], ['b', 'e'], ['f']])
  })

  it('rewrites instead of upgrading a file that would reach the top level with deletes', () => {
    const dirty = file(2, 500, 0, 9, { name: 'dirty', deleteRowCount: 3 })
    const unknown = file(2, 500, 10, 19, { name: 'unknown', deleteRowCount: null })
    const clean = file(2, 500, 20, 29, { name: 'clean' })
    expect(describeSteps(plan({ outputLevel: 5, files: [dirty, unknown, clean] }))).toEqual(['rw dirty', 'rw unknown', 'up clean'])
    expect(describeSteps(plan({ outputLevel: 4, files: [dirty, unknown, clean] }))).toEqual(['up dirty', 'up unknown', 'up clean'])
  })

  it('deletion-vector mode: a level-0 file is rewritten with lookup below the top, upgraded at the top', () => {
    const l0 = file(0, 500, 0, 9, { name: 'l0' })
    const l1 = file(1, 500, 10, 19, { name: 'l1' })
    const steps = plan({ outputLevel: 3, files: [l0, l1] }, { deletionVectors: true, dropDelete: true })
    expect(describeSteps(steps)).toEqual(['rw l0 lookup', 'up l1'])
    expect((steps[0] as Extract<CompactStep, { kind: 'rewrite' }>).dropDelete).toBe(true)
    expect(describeSteps(plan({ outputLevel: 5, files: [l0, l1] }, { deletionVectors: true }))).toEqual(['up l0', 'up l1'])
    // a rewrite without level-0 input needs no lookup; one at the top has nothing to look up
    const a = file(1, 10, 0, 5, { name: 'a' })
    const b = file(2, 10, 3, 9, { name: 'b' })
    expect(describeSteps(plan({ outputLevel: 3, files: [a, b] }, { deletionVectors: true }))).toEqual(['rw a | b'])
    const c = file(0, 10, 0, 5, { name: 'c' })
    expect(describeSteps(plan({ outputLevel: 5, files: [c, b] }, { deletionVectors: true }))).toEqual(['rw c | b'])
  })

  it('leaves a file already at the output level unless it has a deletion vector', () => {
    const top = file(5, 500, 0, 9, { name: 'top' })
    const l0 = file(0, 500, 10, 19, { name: 'l0' })
    expect(describeSteps(plan({ outputLevel: 5, files: [top, l0] }))).toEqual(['up l0'])
    expect(describeSteps(plan({ outputLevel: 5, files: [top, l0] }, { hasDeletionVector: (f) => f.name === 'top' }))).toEqual(['rw top', 'up l0'])
  })

  it('a file-rewrite unit rewrites each file on its own', () => {
    const a = file(5, 500, 0, 9, { name: 'a' })
    const b = file(5, 500, 10, 19, { name: 'b' })
    expect(describeSteps(plan({ outputLevel: 5, files: [a, b], fileRewrite: true }))).toEqual(['rw a', 'rw b'])
  })
})

describe('limitInput', () => {
  const unitOf = (levels: Levels, outputLevel: number): CompactUnit => ({ outputLevel, files: levels.allFiles(), fileRewrite: false, maxLevel: levels.maxLevel })
  const levelsOf = (u: CompactUnit) => [...new Set(u.files.map((f) => f.level))]

  it('returns the unit itself when it fits', () => {
    const levels = bucket(6, [[0, 9, 1], [0, 9, 1]], { 5: [1] })
    const unit = unitOf(levels, 5)
    expect(limitInput(unit, 3, levels)).toBe(unit)
  })

  it('a level-0 backlog: the oldest level-0 files rise to just below the first level run', () => {
    const l0 = Array.from({ length: 60 }, (_, i): [number, number, number] => [i, i + 5, 1])
    const levels = bucket(6, l0, { 5: Array(10).fill(100) })
    const capped = limitInput(unitOf(levels, 5), 50, levels)
    expect(capped.files).toEqual(levels.level0.slice(10))
    expect(capped.outputLevel).toBe(4)
  })

  it('keeps the newest runs when the first run left out is at level >= 2', () => {
    const levels = bucket(6, [[0, 9, 1], [0, 9, 1], [0, 9, 1]], { 2: [5, 5], 4: Array(60).fill(100) })
    const capped = limitInput(unitOf(levels, 5), 10, levels)
    expect([levelsOf(capped), capped.files.length, capped.outputLevel]).toEqual([[0, 2], 5, 3])
  })

  it('takes the oldest level-0 files with the level-1 run when level 1 cannot be left below them', () => {
    const l0 = Array.from({ length: 30 }, (_, i): [number, number, number] => [i, i + 5, 1])
    const levels = bucket(6, l0, { 1: Array(30).fill(10) })
    const capped = limitInput(unitOf(levels, 5), 50, levels)
    expect(capped.files).toEqual([...levels.level0.slice(10), ...levels.runOfLevel(1).files])
    expect(capped.outputLevel).toBe(5)
  })

  it('returns the unit uncapped when one level run alone exceeds the cap', () => {
    const levels = bucket(6, [[0, 9, 1]], { 1: Array(60).fill(10) })
    const unit = unitOf(levels, 5)
    expect(limitInput(unit, 50, levels)).toBe(unit)
  })

  it('a single level-0 file may rise alone; a single level run may not', () => {
    const levels = bucket(6, [[0, 9, 1]], { 5: Array(60).fill(10) })
    const capped = limitInput(unitOf(levels, 5), 50, levels)
    expect([capped.files, capped.outputLevel]).toEqual([levels.level0, 4])
  })

  it('among segments merging as many runs, the one with the fewest bytes wins', () => {
    const a = file(0, 1, 0, 9, { name: 'a', maxSequenceNumber: 9n })
    const b = file(0, 100, 0, 9, { name: 'b', maxSequenceNumber: 8n })
    const l1 = [file(1, 100, 0, 4), file(1, 100, 5, 9)]
    const l3 = file(3, 1, 0, 9)
    const levels = new Levels([a, b, ...l1, l3], 6, cmp)
    // [b, L1] -> level 2 costs 300 bytes; [L1, L3] -> level 5 costs 201
    const capped = limitInput(unitOf(levels, 5), 3, levels)
    expect([capped.files, capped.outputLevel]).toEqual([[...l1, l3], 5])
  })

  it('never keeps a lone level run (it would only move up)', () => {
    const a = file(0, 1000, 0, 9, { name: 'a' })
    const l2 = [file(2, 1, 0, 2), file(2, 1, 3, 5), file(2, 1, 6, 9)]
    const l4 = Array.from({ length: 60 }, (_, i) => file(4, 1, i * 10, i * 10 + 9))
    const levels = new Levels([a, ...l2, ...l4], 6, cmp)
    const capped = limitInput(unitOf(levels, 5), 3, levels)
    expect([capped.files, capped.outputLevel]).toEqual([[a], 1])
  })

  it('a file-rewrite unit keeps its first files; a bad cap is an input error', () => {
    const fs = [file(5, 1, 0, 1), file(5, 1, 2, 3), file(5, 1, 4, 5)]
    const unit: CompactUnit = { outputLevel: 5, files: fs, fileRewrite: true, maxLevel: 5 }
    expect(limitInput(unit, 2).files).toEqual(fs.slice(0, 2))
    expect(() => limitInput(unit, 0)).toThrow(StrataInputError)
    expect(() => limitInput(unit, 0)).toThrow(/compaction\.max-input-files/)
  })
})

// ---------------------------------------------------------------------------------------------
// Properties over random buckets

interface Shape {
  numLevels: number
  trigger: number
  sizeRatio: number
  maxAmp: number
  dv: boolean
  l0: [number, number, number][]
  higher: (number[] | null)[]
}

const shapeArb: fc.Arbitrary<Shape> = fc.record({
  numLevels: fc.integer({ min: 2, max: 6 }),
  trigger: fc.integer({ min: 1, max: 6 }),
  sizeRatio: fc.integer({ min: 0, max: 5 }),
  maxAmp: fc.constantFrom(0, 25, 100, 200, 400),
  dv: fc.boolean(),
  l0: fc.array(fc.tuple(fc.integer({ min: 0, max: 50 }), fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 300 })), { maxLength: 8 }),
  higher: fc.array(fc.option(fc.array(fc.integer({ min: 1, max: 300 }), { minLength: 1, maxLength: 4 })), { minLength: 5, maxLength: 5 }),
})

function levelsOfShape(s: Shape): Levels {
  const files = s.l0.map(([min, len, size]) => file(0, size, min, min + len))
  for (let level = 1; level < s.numLevels; level++) {
    s.higher[level - 1]?.forEach((size, i) => files.push(file(level, size, i * 15, i * 15 + 9)))
  }
  return new Levels(files, s.numLevels, cmp)
}

const optsOfShape = (s: Shape): CompactOptions => ({
  compactionTrigger: s.trigger,
  maxSizeAmplificationPercent: s.maxAmp,
  sizeRatio: s.sizeRatio,
  numLevels: s.numLevels,
  deletionVectors: s.dv,
})

/** Picked files must be exactly runs[0..m) for some m; returns m. */
function prefixLength(levels: Levels, unit: CompactUnit): number {
  const runs = levels.levelSortedRuns()
  const names = unit.files.map((f) => f.name)
  let taken = 0
  let m = 0
  while (taken < names.length) {
    const run = runs[m].run.files.map((f) => f.name)
    expect(names.slice(taken, taken + run.length)).toEqual(run)
    taken += run.length
    m++
  }
  return m
}

/** Applies a plan with one output file per rewrite step spanning the step's keys. */
function applyPlan(levels: Levels, unit: CompactUnit, steps: CompactStep[]): Levels {
  const before: LsmFile[] = []
  const after: LsmFile[] = []
  for (const s of steps) {
    if (s.kind === 'upgrade') {
      before.push(s.file)
      after.push({ ...s.file, level: s.outputLevel })
    } else {
      const fs = s.runs.flat()
      before.push(...fs)
      const min = Math.min(...fs.map((f) => f.minKey[0] as number))
      const max = Math.max(...fs.map((f) => f.maxKey[0] as number))
      after.push(file(s.outputLevel, fs.reduce((n, f) => n + f.size, 0), min, max))
    }
  }
  return levels.update(before, after)
}

describe('compaction properties', () => {
  it('every pick is a newest-first prefix, holds all of level 0, and outputs below every run it leaves', () => {
    fc.assert(
      fc.property(shapeArb, (s) => {
        const levels = levelsOfShape(s)
        const runs = levels.levelSortedRuns()
        const unit = pickCompaction(levels, optsOfShape(s))
        if (!unit) {
          expect(s.dv && levels.level0.length > 0).toBe(false)
          expect(runs.length).toBeLessThanOrEqual(s.trigger)
          return
        }
        const m = prefixLength(levels, unit)
        expect(m).toBeGreaterThanOrEqual(1)
        expect(unit.outputLevel).toBeGreaterThanOrEqual(1)
        expect(unit.outputLevel).toBeLessThanOrEqual(levels.maxLevel)
        expect(unit.outputLevel).toBeGreaterThanOrEqual(Math.max(...unit.files.map((f) => f.level)))
        if (m < runs.length) expect(unit.outputLevel).toBeLessThan(runs[m].level)
        else expect(unit.outputLevel).toBe(levels.maxLevel)
        expect(levels.level0.every((f) => unit.files.includes(f))).toBe(true)
      }),
      { numRuns: 300 },
    )
  })

  it('applying a pick (one output run, or its plan) keeps every level >= 1 non-overlapping', () => {
    fc.assert(
      fc.property(shapeArb, fc.integer({ min: 0, max: 350 }), fc.boolean(), (s, minFileSize, full) => {
        const levels = levelsOfShape(s)
        const unit = full ? pickFullCompaction(levels, s.numLevels) : pickCompaction(levels, optsOfShape(s))
        if (!unit) return
        const min = Math.min(...unit.files.map((f) => f.minKey[0] as number))
        const max = Math.max(...unit.files.map((f) => f.maxKey[0] as number))
        expect(() => levels.update(unit.files, [file(unit.outputLevel, 1, min, max)])).not.toThrow()

        const dropDelete = shouldDropDelete(unit.outputLevel, levels, s.dv)
        const steps = planCompaction(unit, { keyComparator: cmp, dropDelete, deletionVectors: s.dv, minFileSize })
        const stepped = steps.flatMap((st) => (st.kind === 'upgrade' ? [st.file] : st.runs.flat()))
        expect(new Set(stepped.map((f) => f.name)).size).toBe(stepped.length)
        for (const f of unit.files) if (!stepped.includes(f)) expect(f.level).toBe(unit.outputLevel)
        for (const st of steps) {
          if (st.kind === 'rewrite') {
            expect(st.runs.flat().sort((a, b) => a.name.localeCompare(b.name))).toEqual(st.sections.flat(2).sort((a, b) => a.name.localeCompare(b.name)))
            for (const r of st.runs) for (let i = 1; i < r.length; i++) expect(cmp(r[i].minKey, r[i - 1].maxKey)).toBeGreaterThan(0)
          } else if (s.dv) {
            expect(st.file.level !== 0 || st.outputLevel === unit.maxLevel).toBe(true)
          }
        }
        expect(() => applyPlan(levels, unit, steps)).not.toThrow()
      }),
      { numRuns: 300 },
    )
  })
})

// ---------------------------------------------------------------------------------------------
// A bucket simulated with records: random level-0 arrivals, then pick, cap, plan and apply
// until no pick is left. Rewrites merge by sequence number (deduplicate), drop deletes when
// told, and in deletion-vector mode mark the older version of each output key in the levels
// above (the lookup). Checked against the last write of each key.

interface Rec {
  key: number
  seq: number
  del: boolean
}

class Bucket {
  readonly recs = new Map<string, Rec[]>()
  readonly dead = new Map<string, Set<number>>()
  readonly truth = new Map<number, Rec>()
  files: LsmFile[] = []
  private seq = 0

  constructor(readonly numLevels: number, readonly dv: boolean) {}

  levels(): Levels {
    return new Levels(this.files, this.numLevels, cmp)
  }

  private fileOf(level: number, recs: Rec[]): LsmFile {
    const f = file(level, recs.length * 10, recs[0].key, recs[recs.length - 1].key, {
      maxSequenceNumber: BigInt(Math.max(...recs.map((r) => r.seq))),
      rowCount: recs.length,
      deleteRowCount: recs.filter((r) => r.del).length,
    })
    this.recs.set(f.name, recs)
    this.dead.set(f.name, new Set())
    return f
  }

  live(f: LsmFile): Rec[] {
    const dead = this.dead.get(f.name)!
    return this.recs.get(f.name)!.filter((r) => !dead.has(r.key))
  }

  write(ops: [number, boolean][]): void {
    const byKey = new Map<number, Rec>()
    for (const [key, del] of ops) byKey.set(key, { key, seq: ++this.seq, del })
    const recs = [...byKey.values()].sort((a, b) => a.key - b.key)
    if (recs.length === 0) return
    for (const r of recs) this.truth.set(r.key, r)
    this.files.push(this.fileOf(0, recs))
  }

  apply(levels: Levels, unit: CompactUnit, steps: CompactStep[]): void {
    const inUnit = new Set(unit.files.map((f) => f.name))
    const gone = new Set<string>()
    const added: LsmFile[] = []
    for (const s of steps) {
      if (s.kind === 'upgrade') {
        gone.add(s.file.name)
        added.push({ ...s.file, level: s.outputLevel })
        continue
      }
      const newest = new Map<number, Rec>()
      for (const f of s.runs.flat()) {
        gone.add(f.name)
        for (const r of this.live(f)) if ((newest.get(r.key)?.seq ?? -1) < r.seq) newest.set(r.key, r)
      }
      if (s.lookup) {
        const above = levels.levelSortedRuns().filter((r) => r.level > s.outputLevel && !r.run.files.some((f) => inUnit.has(f.name)))
        for (const key of newest.keys()) {
          for (const r of above) {
            const hit = r.run.files.find((f) => this.live(f).some((x) => x.key === key))
            if (hit) {
              this.dead.get(hit.name)!.add(key)
              break
            }
          }
        }
      }
      const out = [...newest.values()].filter((r) => !(s.dropDelete && r.del)).sort((a, b) => a.key - b.key)
      if (out.length > 0) added.push(this.fileOf(s.outputLevel, out))
    }
    this.files = [...this.files.filter((f) => !gone.has(f.name)), ...added]
  }

  /** Merge-on-read: the newest live version of each key across all levels. */
  read(fromLevel = 0): Map<number, Rec> {
    const newest = new Map<number, Rec>()
    for (const f of this.files) {
      if (f.level < fromLevel) continue
      for (const r of this.live(f)) if ((newest.get(r.key)?.seq ?? -1) < r.seq) newest.set(r.key, r)
    }
    return newest
  }

  check(): void {
    const levels = this.levels()
    expect(levels.numberOfLevels).toBe(this.numLevels)
    const visible = (m: Map<number, Rec>) => [...m.values()].filter((r) => !r.del).map((r) => [r.key, r.seq]).sort((a, b) => a[0] - b[0])
    expect(visible(this.read())).toEqual(visible(this.truth))
    // newer versions sit at lower levels: seqs fall along the newest-first run order
    const seen = new Map<number, number>()
    for (const r of levels.levelSortedRuns()) {
      for (const f of r.run.files) {
        for (const rec of this.live(f)) {
          const prev = seen.get(rec.key)
          if (prev !== undefined) expect(rec.seq).toBeLessThan(prev)
          seen.set(rec.key, rec.seq)
        }
      }
    }
    for (const f of levels.runOfLevel(levels.maxLevel).files) expect(this.live(f).some((r) => r.del)).toBe(false)
    if (this.dv) {
      // readers of levels >= 1 merge nothing: one live version per key, and no deletes kept
      const count = new Map<number, number>()
      for (const f of this.files) {
        if (f.level === 0) continue
        for (const r of this.live(f)) {
          count.set(r.key, (count.get(r.key) ?? 0) + 1)
          expect(r.del).toBe(false)
        }
      }
      expect([...count.values()].every((c) => c === 1)).toBe(true)
    }
  }
}

describe('simulated bucket', () => {
  const arb = fc.record({
    numLevels: fc.integer({ min: 2, max: 5 }),
    trigger: fc.integer({ min: 1, max: 5 }),
    sizeRatio: fc.integer({ min: 0, max: 3 }),
    maxAmp: fc.constantFrom(25, 100, 200),
    dv: fc.boolean(),
    cap: fc.integer({ min: 2, max: 8 }),
    minFileSize: fc.integer({ min: 0, max: 60 }),
    rounds: fc.array(
      fc.record({
        writes: fc.array(fc.array(fc.tuple(fc.integer({ min: 0, max: 25 }), fc.boolean()), { minLength: 1, maxLength: 4 }), { minLength: 0, maxLength: 4 }),
        full: fc.boolean(),
      }),
      { minLength: 1, maxLength: 10 },
    ),
  })

  it('stays correct and ordered, never leaves num-levels, and settles', () => {
    fc.assert(
      fc.property(arb, (p) => {
        const b = new Bucket(p.numLevels, p.dv)
        const opts: CompactOptions = { compactionTrigger: p.trigger, maxSizeAmplificationPercent: p.maxAmp, sizeRatio: p.sizeRatio, numLevels: p.numLevels, deletionVectors: p.dv }
        for (const round of p.rounds) {
          for (const w of round.writes) b.write(w)
          b.check()
          let full = round.full
          let jobs = 0
          for (;;) {
            const levels = b.levels()
            const picked = full ? pickFullCompaction(levels, p.numLevels) : pickCompaction(levels, opts)
            full = false
            if (!picked) break
            expect(++jobs).toBeLessThan(200)
            const unit = limitInput(picked, p.cap, levels)
            expect(unit.outputLevel).toBeLessThanOrEqual(levels.maxLevel)
            expect(unit.outputLevel).toBeGreaterThanOrEqual(1)
            if (unit !== picked) expect(unit.files.length).toBeLessThanOrEqual(p.cap)
            const dropDelete = shouldDropDelete(unit.outputLevel, levels, p.dv)
            b.apply(levels, unit, planCompaction(unit, { keyComparator: cmp, dropDelete, deletionVectors: p.dv, minFileSize: p.minFileSize }))
            b.check()
          }
          const settled = b.levels()
          expect(settled.numberOfSortedRuns).toBeLessThanOrEqual(p.trigger)
          if (p.dv) {
            expect(settled.level0).toHaveLength(0)
            // with level 0 drained, reading levels >= 1 without merging is the truth
            const visible = (m: Map<number, Rec>) => [...m.values()].filter((r) => !r.del).map((r) => r.key).sort((x, y) => x - y)
            expect(visible(b.read(1))).toEqual(visible(b.truth))
          }
        }
      }),
      { numRuns: 200 },
    )
  })
})
