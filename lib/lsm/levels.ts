// The LSM levels of one bucket as Paimon keeps them (mergetree/Levels.java, SortedRun.java,
// LevelSortedRun.java), and the key-interval partition a compaction splits its input with
// (mergetree/compact/IntervalPartition.java). Pure logic over file descriptions: no I/O.
//
// Level 0 holds files straight from writers, each its own sorted run, newest first. Every
// level >= 1 is one sorted run: files in key order whose [minKey, maxKey] do not overlap.

import { StrataInputError } from '../errors.ts'
import type { Value } from '../types.ts'

export type KeyComparator = (a: Value[], b: Value[]) => number

/** What the LSM logic needs to know of one data file (keys already decoded). */
export interface LsmFile {
  name: string
  level: number
  /** file size in bytes */
  size: number
  minKey: Value[]
  maxKey: Value[]
  maxSequenceNumber: bigint
  /** level-0 order only (compareLevel0); absent: not compared */
  minSequenceNumber?: bigint
  /** Paimon DataFileMeta.creationTime (ms), level-0 order only; absent: not compared, null: as 0 */
  creationTime?: bigint | null
  rowCount: number
  /** Paimon DataFileMeta.deleteRowCount: retract rows (-U, -D) in the file; null when unknown */
  deleteRowCount: number | null
  /** opaque to this module: the caller's ManifestEntry */
  entry?: unknown
}

/** Files in key order whose key intervals do not overlap. Level 0: one file per run. */
export interface SortedRun {
  level: number
  files: LsmFile[]
  size: number
}

export interface LevelSortedRun {
  level: number
  run: SortedRun
}

export function sortedRun(level: number, files: LsmFile[]): SortedRun {
  let size = 0
  for (const f of files) size += f.size
  return { level, files, size }
}

export type Level0Order = Pick<LsmFile, 'name' | 'maxSequenceNumber' | 'minSequenceNumber' | 'creationTime'>

/**
 * Paimon's level-0 order (mergetree/Levels.java), newest first: larger maxSequenceNumber
 * first; on a tie (two writers), smaller minSequenceNumber first, then earlier creation
 * time, then file name. A file earlier in this order wins a tie of sequence numbers.
 */
export function compareLevel0(a: Level0Order, b: Level0Order): number {
  if (a.maxSequenceNumber !== b.maxSequenceNumber) return a.maxSequenceNumber > b.maxSequenceNumber ? -1 : 1
  if (a.minSequenceNumber !== undefined && b.minSequenceNumber !== undefined && a.minSequenceNumber !== b.minSequenceNumber) {
    return a.minSequenceNumber < b.minSequenceNumber ? -1 : 1
  }
  if (a.creationTime !== undefined && b.creationTime !== undefined) {
    const ta = a.creationTime ?? 0n
    const tb = b.creationTime ?? 0n
    if (ta !== tb) return ta < tb ? -1 : 1
  }
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0
}

function formatValue(v: Value): string {
  if (v === null) return 'null'
  if (typeof v === 'string') return JSON.stringify(v)
  if (v instanceof Uint8Array) return `0x${Buffer.from(v).toString('hex')}`
  return String(v)
}

export function formatKey(key: Value[]): string {
  return `(${key.map(formatValue).join(', ')})`
}

function describe(f: LsmFile): string {
  return `${f.name} ${formatKey(f.minKey)}..${formatKey(f.maxKey)}`
}

/**
 * Immutable view of one bucket's files by level. `update` returns a new Levels.
 *
 * Like Paimon, a file whose level is at or past `numLevels` widens the tree instead of being
 * refused (Levels.java `restoredNumLevels`): a table whose `num-levels` (or compaction trigger)
 * was lowered after files reached the old top level stays readable and compactable.
 */
export class Levels {
  readonly keyComparator: KeyComparator
  /** newest first */
  readonly level0: readonly LsmFile[]
  /** runs of levels 1..maxLevel, index i holds level i + 1; each in key order */
  private readonly runs: SortedRun[]

  constructor(files: LsmFile[], numLevels: number, keyComparator: KeyComparator) {
    if (!Number.isInteger(numLevels) || numLevels < 2) {
      throw new StrataInputError(`option 'num-levels': invalid value ${numLevels}, expected an integer >= 2`)
    }
    this.keyComparator = keyComparator
    const names = new Set<string>()
    let top = 0
    for (const f of files) {
      if (!Number.isInteger(f.level) || f.level < 0) {
        throw new Error(`data file ${f.name} has level ${f.level}, expected an integer >= 0`)
      }
      if (names.has(f.name)) throw new Error(`data file ${f.name} is listed twice in one bucket`)
      names.add(f.name)
      if (keyComparator(f.minKey, f.maxKey) > 0) {
        throw new Error(`data file ${f.name} has minKey ${formatKey(f.minKey)} > maxKey ${formatKey(f.maxKey)}`)
      }
      if (f.level > top) top = f.level
    }
    const levelCount = Math.max(numLevels, top + 1)
    const byLevel: LsmFile[][] = Array.from({ length: levelCount }, () => [])
    for (const f of files) byLevel[f.level].push(f)
    this.level0 = byLevel[0].sort(compareLevel0)
    this.runs = []
    for (let level = 1; level < levelCount; level++) {
      const sorted = byLevel[level].sort((a, b) => keyComparator(a.minKey, b.minKey))
      for (let i = 1; i < sorted.length; i++) {
        // SortedRun.validate: each file starts strictly after the previous one ends
        if (keyComparator(sorted[i].minKey, sorted[i - 1].maxKey) <= 0) {
          throw new Error(`level ${level} files overlap: ${describe(sorted[i - 1])} and ${describe(sorted[i])}`)
        }
      }
      this.runs.push(sortedRun(level, sorted))
    }
  }

  get numberOfLevels(): number {
    return this.runs.length + 1
  }

  get maxLevel(): number {
    return this.runs.length
  }

  /** Level-0 files count one each, every non-empty higher level one (Paimon's trigger unit). */
  get numberOfSortedRuns(): number {
    let n = this.level0.length
    for (const r of this.runs) if (r.files.length > 0) n++
    return n
  }

  runOfLevel(level: number): SortedRun {
    if (!Number.isInteger(level) || level < 1 || level > this.maxLevel) {
      throw new RangeError(`runOfLevel: level ${level} is not in 1..${this.maxLevel}`)
    }
    return this.runs[level - 1]
  }

  /** The highest level holding a file; 0 when only level 0 does, -1 when the bucket is empty. */
  nonEmptyHighestLevel(): number {
    for (let i = this.runs.length - 1; i >= 0; i--) if (this.runs[i].files.length > 0) return i + 1
    return this.level0.length > 0 ? 0 : -1
  }

  /** Newest data first: each level-0 file, then levels 1..max that hold files. */
  levelSortedRuns(): LevelSortedRun[] {
    const out: LevelSortedRun[] = this.level0.map((f) => ({ level: 0, run: sortedRun(0, [f]) }))
    for (const r of this.runs) if (r.files.length > 0) out.push({ level: r.level, run: r })
    return out
  }

  allFiles(): LsmFile[] {
    return this.levelSortedRuns().flatMap((r) => r.run.files)
  }

  get totalFileSize(): number {
    let n = 0
    for (const f of this.level0) n += f.size
    for (const r of this.runs) n += r.size
    return n
  }

  /**
   * The levels after a change: `before` files (matched by name) leave, `after` files join.
   * An upgraded file is in both, with its old and new level.
   */
  update(before: LsmFile[], after: LsmFile[]): Levels {
    const current = new Map(this.allFiles().map((f) => [f.name, f]))
    for (const f of before) {
      if (!current.delete(f.name)) throw new Error(`levels update: file ${f.name} is not in the bucket`)
    }
    return new Levels([...current.values(), ...after], this.numberOfLevels, this.keyComparator)
  }
}

/**
 * Paimon's IntervalPartition: files ordered by (minKey, maxKey) are cut into sections whose key
 * ranges do not overlap; within a section, files are packed greedily into the fewest sorted
 * runs (each file goes to the run that ends first, if it starts after that run's end). Sections
 * come in key order; runs within a section in the order they were opened.
 */
export function intervalPartition(files: LsmFile[], keyComparator: KeyComparator): LsmFile[][][] {
  const sorted = [...files].sort((a, b) => keyComparator(a.minKey, b.minKey) || keyComparator(a.maxKey, b.maxKey))
  const sections: LsmFile[][][] = []
  let section: LsmFile[] = []
  let bound: Value[] | null = null
  for (const f of sorted) {
    if (section.length > 0 && keyComparator(f.minKey, bound!) > 0) {
      sections.push(packRuns(section, keyComparator))
      section = []
      bound = null
    }
    section.push(f)
    if (bound === null || keyComparator(f.maxKey, bound) > 0) bound = f.maxKey
  }
  if (section.length > 0) sections.push(packRuns(section, keyComparator))
  return sections
}

function packRuns(files: LsmFile[], keyComparator: KeyComparator): LsmFile[][] {
  const runs: LsmFile[][] = [[files[0]]]
  for (let i = 1; i < files.length; i++) {
    const f = files[i]
    let first = 0
    for (let r = 1; r < runs.length; r++) {
      if (keyComparator(runs[r][runs[r].length - 1].maxKey, runs[first][runs[first].length - 1].maxKey) < 0) first = r
    }
    const run = runs[first]
    if (keyComparator(f.minKey, run[run.length - 1].maxKey) > 0) run.push(f)
    else runs.push([f])
  }
  return runs
}
