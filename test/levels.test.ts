import { describe, it, expect } from 'vitest'
import fc from 'fast-check'
import { Levels, intervalPartition, type LsmFile } from '../lib/lsm/levels.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { Value } from '../lib/types.ts'

const cmp = (a: Value[], b: Value[]) => (a[0] as number) - (b[0] as number)

let serial = 0
function file(level: number, min: number, max: number, extra: Partial<LsmFile> = {}): LsmFile {
  serial++
  return {
    name: `data-${String(serial).padStart(4, '0')}.parquet`,
    level,
    size: 100,
    minKey: [min],
    maxKey: [max],
    maxSequenceNumber: BigInt(serial),
    rowCount: 10,
    deleteRowCount: 0,
    ...extra,
  }
}

describe('Levels', () => {
  it('orders level 0 newest first by maxSequenceNumber, then by file name', () => {
    const a = file(0, 0, 9, { name: 'b', maxSequenceNumber: 5n })
    const b = file(0, 0, 9, { name: 'a', maxSequenceNumber: 5n })
    const c = file(0, 0, 9, { name: 'c', maxSequenceNumber: 7n })
    const d = file(0, 0, 9, { name: 'd', maxSequenceNumber: 1n })
    const levels = new Levels([d, a, c, b], 3, cmp)
    expect(levels.level0.map((f) => f.name)).toEqual(['c', 'a', 'b', 'd'])
  })

  it('breaks a tie of maxSequenceNumber as Paimon does: smaller minSequenceNumber, then earlier creation time, then file name first', () => {
    const f = (name: string, min: bigint, creationTime: bigint | null) => file(0, 0, 9, { name, maxSequenceNumber: 9n, minSequenceNumber: min, creationTime })
    const files = [f('e', 5n, 20n), f('a', 5n, 30n), f('d', 3n, 99n), f('c', 5n, 20n), f('b', 5n, null), f('z', 1n, 50n)]
    const newer = file(0, 0, 9, { name: 'y', maxSequenceNumber: 10n, minSequenceNumber: 10n, creationTime: 1n })
    const levels = new Levels([...files, newer], 3, cmp)
    // a null creation time counts as 0 (earliest)
    expect(levels.level0.map((x) => x.name)).toEqual(['y', 'z', 'd', 'b', 'c', 'e', 'a'])
  })

  it('lists sorted runs as Paimon does: each level-0 file, then non-empty levels upwards', () => {
    const l0a = file(0, 0, 50, { maxSequenceNumber: 10n })
    const l0b = file(0, 5, 60, { maxSequenceNumber: 20n })
    const l2x = file(2, 30, 40)
    const l2y = file(2, 0, 10)
    const l4 = file(4, 0, 100)
    const levels = new Levels([l4, l2x, l0a, l2y, l0b], 6, cmp)
    const runs = levels.levelSortedRuns()
    expect(runs.map((r) => r.level)).toEqual([0, 0, 2, 4])
    expect(runs[0].run.files).toEqual([l0b])
    expect(runs[2].run.files).toEqual([l2y, l2x])
    expect(runs[2].run.size).toBe(200)
    expect(levels.numberOfSortedRuns).toBe(4)
    expect(levels.numberOfLevels).toBe(6)
    expect(levels.maxLevel).toBe(5)
    expect(levels.nonEmptyHighestLevel()).toBe(4)
    expect(levels.runOfLevel(3).files).toEqual([])
    expect(levels.allFiles()).toEqual([l0b, l0a, l2y, l2x, l4])
    expect(levels.totalFileSize).toBe(500)
  })

  it('reports -1 for an empty bucket and 0 when only level 0 holds files', () => {
    expect(new Levels([], 3, cmp).nonEmptyHighestLevel()).toBe(-1)
    expect(new Levels([file(0, 1, 2)], 3, cmp).nonEmptyHighestLevel()).toBe(0)
    expect(new Levels([], 3, cmp).numberOfSortedRuns).toBe(0)
  })

  it('refuses overlapping files in a level >= 1, naming both (touching keys overlap)', () => {
    const a = file(1, 0, 10, { name: 'data-a.parquet' })
    const b = file(1, 10, 20, { name: 'data-b.parquet' })
    expect(() => new Levels([b, a], 3, cmp)).toThrow(/level 1 files overlap: data-a\.parquet \(0\)\.\.\(10\) and data-b\.parquet \(10\)\.\.\(20\)/)
    // overlapping level-0 files are normal
    expect(() => new Levels([file(0, 0, 10), file(0, 5, 20)], 3, cmp)).not.toThrow()
    expect(() => new Levels([file(2, 0, 9), file(2, 10, 20)], 3, cmp)).not.toThrow()
  })

  it('widens to hold a file above num-levels, as Paimon restores levels', () => {
    const levels = new Levels([file(0, 0, 1), file(7, 0, 9)], 3, cmp)
    expect(levels.numberOfLevels).toBe(8)
    expect(levels.maxLevel).toBe(7)
    expect(levels.nonEmptyHighestLevel()).toBe(7)
  })

  it('refuses bad input with clear errors', () => {
    expect(() => new Levels([], 1, cmp)).toThrow(StrataInputError)
    expect(() => new Levels([], 1, cmp)).toThrow(/num-levels.*1.*integer >= 2/)
    expect(() => new Levels([file(-1, 0, 1, { name: 'x' })], 3, cmp)).toThrow(/data file x has level -1/)
    const dup = file(1, 0, 1, { name: 'same' })
    expect(() => new Levels([dup, { ...dup, level: 2 }], 3, cmp)).toThrow(/same is listed twice/)
    expect(() => new Levels([file(1, 5, 1, { name: 'y' })], 3, cmp)).toThrow(/y has minKey \(5\) > maxKey \(1\)/)
    expect(() => new Levels([], 3, cmp).runOfLevel(0)).toThrow(RangeError)
  })

  it('formats string and binary keys in errors', () => {
    const strCmp = (a: Value[], b: Value[]) => ((a[0] as string) < (b[0] as string) ? -1 : (a[0] as string) > (b[0] as string) ? 1 : 0)
    const a = { ...file(1, 0, 0), minKey: ['a'], maxKey: ['m'] }
    const b = { ...file(1, 0, 0), minKey: ['c'], maxKey: ['z'] }
    expect(() => new Levels([a, b], 3, strCmp)).toThrow(/\("a"\)\.\.\("m"\)/)
    const c = { ...file(1, 0, 0), minKey: [new Uint8Array([1, 255])], maxKey: [new Uint8Array([0])] }
    const binCmp = (x: Value[], y: Value[]) => (x[0] as Uint8Array)[0] - (y[0] as Uint8Array)[0]
    expect(() => new Levels([c], 3, binCmp)).toThrow(/\(0x01ff\) > maxKey \(0x00\)/)
  })

  it('update replaces files and returns new levels; an unknown file is an error', () => {
    const a = file(0, 0, 10)
    const b = file(0, 5, 20)
    const c = file(2, 0, 100)
    const levels = new Levels([a, b, c], 3, cmp)
    const out = file(2, 0, 100)
    const next = levels.update([a, b, c], [out, { ...a, level: 1 }])
    expect(next.levelSortedRuns().map((r) => [r.level, r.run.files.map((f) => f.name)])).toEqual([
      [1, [a.name]],
      [2, [out.name]],
    ])
    expect(levels.numberOfSortedRuns).toBe(3)
    expect(() => levels.update([file(0, 0, 1, { name: 'ghost' })], [])).toThrow(/ghost is not in the bucket/)
    // an update that makes a level overlap is refused
    expect(() => levels.update([], [file(2, 50, 150)])).toThrow(/level 2 files overlap/)
  })
})

/** Parses Paimon's IntervalPartitionTest notation "[100, 200], [100, 400]". */
function intervals(text: string): LsmFile[] {
  return [...text.matchAll(/\[(\d+), (\d+)\]/g)].map((m) => file(0, Number(m[1]), Number(m[2])))
}
const shape = (sections: LsmFile[][][]) =>
  sections.map((s) => s.map((run) => run.map((f) => `[${f.minKey[0]}, ${f.maxKey[0]}]`).join(', ')).sort())

describe('intervalPartition (Paimon IntervalPartitionTest)', () => {
  it('same min key: one section, one run per file', () => {
    const out = intervalPartition(intervals('[100, 200], [100, 400], [100, 300], [100, 500]'), cmp)
    expect(shape(out)).toEqual([['[100, 200]', '[100, 300]', '[100, 400]', '[100, 500]']])
  })

  it('same max key: one section, one run per file', () => {
    const out = intervalPartition(intervals('[100, 500], [300, 500], [200, 500], [400, 500]'), cmp)
    expect(shape(out)).toEqual([['[100, 500]', '[200, 500]', '[300, 500]', '[400, 500]']])
  })

  it('splits sections at gaps and packs each into the fewest runs', () => {
    const out = intervalPartition(intervals('[0, 9], [5, 7], [9, 15], [16, 22], [16, 28], [24, 32]'), cmp)
    expect(shape(out)).toEqual([
      ['[0, 9]', '[5, 7], [9, 15]'],
      ['[16, 22], [24, 32]', '[16, 28]'],
    ])
  })

  it('random files: sections disjoint and ordered, runs sorted, every file once, fewest runs', () => {
    const arb = fc.array(fc.tuple(fc.integer({ min: 0, max: 60 }), fc.integer({ min: 0, max: 8 })), { minLength: 1, maxLength: 30 })
    fc.assert(
      fc.property(arb, (spec) => {
        const files = spec.map(([lo, len]) => file(0, lo, lo + len))
        const sections = intervalPartition(files, cmp)
        expect(sections.flat(2).map((f) => f.name).sort()).toEqual(files.map((f) => f.name).sort())
        let prevMax = -Infinity
        for (const section of sections) {
          const fs = section.flat()
          const min = Math.min(...fs.map((f) => f.minKey[0] as number))
          const max = Math.max(...fs.map((f) => f.maxKey[0] as number))
          expect(min).toBeGreaterThan(prevMax)
          prevMax = max
          for (const run of section) {
            for (let i = 1; i < run.length; i++) expect(run[i].minKey[0] as number).toBeGreaterThan(run[i - 1].maxKey[0] as number)
          }
          // greedy interval colouring is optimal: as many runs as files covering one key
          let depth = 0
          for (let k = min; k <= max; k++) {
            depth = Math.max(depth, fs.filter((f) => (f.minKey[0] as number) <= k && k <= (f.maxKey[0] as number)).length)
          }
          expect(section.length).toBe(depth)
        }
      }),
    )
  })
})
