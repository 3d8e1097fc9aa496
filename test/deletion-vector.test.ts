import { describe, it, expect } from 'vitest'
import { readFileSync } from 'node:fs'
import fc from 'fast-check'
import {
  DELETION_VECTORS_INDEX,
  deletionVectorOf,
  deletionVectorReadLength,
  readDeletionVector,
  readDeletionVectors,
  writeDeletionVectorFile,
  writeDeletionVectorFiles,
  type DeletionVector,
} from '../lib/format/deletion-vector.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { DeletionVectorMeta } from '../lib/types.ts'

const fixture = (path: string): Uint8Array =>
  new Uint8Array(readFileSync(new URL(`./fixtures/${path}`, import.meta.url)))

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')
const positionsOf = (dv: DeletionVector): number[] => Array.from(dv.sortedPositions())

const meta = (
  dataFileName: string,
  offset: number,
  length: number,
  cardinality: bigint | null,
): DeletionVectorMeta => ({ dataFileName, offset, length, cardinality })

// The metas Paimon's DeletionVectorsIndexFileTest reads the fixtures with (test/fixtures/README.md).
const golden = [
  {
    file: 'paimon/dvindex-32',
    bitmap64: false,
    metas: [meta('data-1.parquet', 1, 24, 2n), meta('data-2.parquet', 33, 22, 1n)],
  },
  {
    file: 'paimon/dvindex-64',
    bitmap64: true,
    metas: [meta('data-1.parquet', 1, 44, 2n), meta('data-2.parquet', 45, 42, 1n)],
  },
]

describe('Paimon deletion-vector index files (golden, Java writer)', () => {
  it('names the index type as Paimon does', () => {
    expect(DELETION_VECTORS_INDEX).toBe('DELETION_VECTORS')
  })

  for (const { file, bitmap64, metas } of golden) {
    it(`reads ${file}`, () => {
      const dvs = readDeletionVectors(fixture(file), metas)
      expect([...dvs.keys()]).toEqual(['data-1.parquet', 'data-2.parquet'])
      const first = dvs.get('data-1.parquet')!
      const second = dvs.get('data-2.parquet')!
      expect(positionsOf(first)).toEqual([2, 3])
      expect(positionsOf(second)).toEqual([1])
      expect([first.cardinality, second.cardinality]).toEqual([2, 1])
      expect(first.bitmap64).toBe(bitmap64)
      expect([1, 2, 3, 4].map((p) => first.isDeleted(p))).toEqual([false, true, true, false])
      expect(first.sortedPositions()).toBeInstanceOf(bitmap64 ? Float64Array : Uint32Array)
    })

    it(`writes ${file} byte-identical with the same metas`, () => {
      const vectors = new Map([
        ['data-1.parquet', deletionVectorOf([2, 3], bitmap64)],
        ['data-2.parquet', deletionVectorOf([1], bitmap64)],
      ])
      const { bytes, metas: written } = writeDeletionVectorFile(vectors, bitmap64)
      expect(hex(bytes)).toBe(hex(fixture(file)))
      expect(written).toEqual(metas)
    })

    it(`reads single entries of ${file} from range slices`, () => {
      const bytes = fixture(file)
      for (const m of metas) {
        const rest = readDeletionVector(bytes.subarray(m.offset), m)
        const ranged = readDeletionVector(
          bytes.subarray(m.offset, m.offset + deletionVectorReadLength(m)),
          m,
        )
        expect(positionsOf(ranged)).toEqual(positionsOf(rest))
      }
      // the exact entry is enough: 32-bit = length + 8, 64-bit = length
      const m = metas[1]
      const exact = bitmap64 ? m.length : m.length + 8
      expect(exact).toBe(bytes.length - m.offset)
      const entry = bytes.subarray(m.offset, m.offset + exact)
      expect(positionsOf(readDeletionVector(entry, m))).toEqual([1])
    })
  }

  it('reads Iceberg deletion-vector blobs as 64-bit entries and writes them back', () => {
    const cases: [string, number[]][] = [
      ['empty-position-index.bin', []],
      ['small-alternating-values-position-index.bin', [1, 3, 5, 7, 9]],
      ['small-and-large-values-position-index.bin', [100, 101, 2147483747, 2147483748]],
    ]
    for (const [name, positions] of cases) {
      const blob = fixture(`roaring/${name}`)
      const m = meta(name, 0, blob.length, BigInt(positions.length))
      const dv = readDeletionVector(blob, m)
      expect(positionsOf(dv), name).toEqual(positions)
      const { bytes, metas } = writeDeletionVectorFile(new Map([[name, dv]]), true)
      expect(hex(bytes.subarray(1)), name).toBe(hex(blob))
      expect(metas[0], name).toEqual({ ...m, offset: 1 })
    }
    const all = fixture('roaring/all-container-types-position-index.bin')
    const dv = readDeletionVector(all, meta('all', 0, all.length, null))
    expect(dv.cardinality).toBe(132561)
    const { bytes } = writeDeletionVectorFile(new Map([['all', dv]]), true)
    expect(hex(bytes.subarray(1))).toBe(hex(all))
  })
})

describe('deletion-vector reader validation', () => {
  const file32 = fixture('paimon/dvindex-32')
  const file64 = fixture('paimon/dvindex-64')
  const [m32a, m32b] = golden[0].metas
  const [m64a] = golden[1].metas

  it('rejects a wrong version byte', () => {
    const bad = file32.slice()
    bad[0] = 2
    expect(() => readDeletionVectors(bad, golden[0].metas)).toThrow(/version byte 2, expected 1/)
  })

  it('checks the length prefix against the meta length of each layout', () => {
    expect(() => readDeletionVectors(file32, [{ ...m32a, length: 25 }])).toThrow(
      /data file data-1\.parquet at offset 1: length prefix 24 does not match meta length 25/,
    )
    // a 64-bit meta carrying only the bitmap length (the 32-bit convention) is rejected
    expect(() => readDeletionVectors(file64, [{ ...m64a, length: 36 }])).toThrow(
      /data-1\.parquet.*length prefix 36 does not match meta length 36 − 8/,
    )
  })

  it('rejects a corrupted bitmap or CRC', () => {
    const badBitmap = file32.slice()
    badBitmap[m32a.offset + 4 + 4 + 16] ^= 0x01 // the first value of the first bitmap
    expect(() => readDeletionVectors(badBitmap, golden[0].metas)).toThrow(
      /data-1\.parquet.*CRC32 .* does not match/,
    )
    const badCrc = file64.slice()
    badCrc[badCrc.length - 1] ^= 0xff
    expect(() => readDeletionVectors(badCrc, golden[1].metas)).toThrow(
      /data-2\.parquet at offset 45: CRC32/,
    )
  })

  it('rejects an unknown magic, offsets outside the file and truncated entries', () => {
    const badMagic = file32.slice()
    badMagic[m32b.offset + 4] = 0
    expect(() => readDeletionVectors(badMagic, golden[0].metas)).toThrow(/data-2\.parquet.*magic/)
    expect(() => readDeletionVectors(file32, [{ ...m32a, offset: 63 }])).toThrow(
      /data-1\.parquet: offset 63 is outside/,
    )
    expect(() => readDeletionVectors(file32, [{ ...m32a, offset: 0 }])).toThrow(/offset 0/)
    const cut = file32.subarray(1, 20)
    expect(() => readDeletionVector(cut, m32a)).toThrow(/does not fit the 19 bytes/)
    expect(() => readDeletionVector(file32.subarray(1, 5), m32a)).toThrow(/truncated/)
  })

  it('checks the meta cardinality and duplicate data files', () => {
    expect(() => readDeletionVectors(file32, [{ ...m32a, cardinality: 3n }])).toThrow(
      /data-1\.parquet.*holds 2 positions, meta cardinality says 3/,
    )
    const twice = [m32a, { ...m32b, dataFileName: m32a.dataFileName }]
    expect(() => readDeletionVectors(file32, twice)).toThrow(
      /two entries for data file data-1\.parquet/,
    )
  })
})

describe('deletion vectors', () => {
  it('builds from unsorted positions with duplicates', () => {
    for (const bitmap64 of [false, true]) {
      const dv = deletionVectorOf([9, 3, 3, 70000, 0], bitmap64)
      expect(positionsOf(dv)).toEqual([0, 3, 9, 70000])
      expect(dv.cardinality).toBe(4)
    }
    expect(deletionVectorOf([], false).cardinality).toBe(0)
  })

  it('bounds positions by the layout (Java int for 32-bit, exact numbers for 64-bit)', () => {
    expect(() => deletionVectorOf([1, 2 ** 31], false)).toThrow(StrataInputError)
    expect(() => deletionVectorOf([1, 2 ** 31], false)).toThrow(/positions\[1\] = 2147483648/)
    expect(() => deletionVectorOf([-1], true)).toThrow(StrataInputError)
    expect(() => deletionVectorOf([0.5], true)).toThrow(StrataInputError)
    const big = deletionVectorOf([2 ** 31, 2 ** 40 + 1], true)
    expect(positionsOf(big)).toEqual([2 ** 31, 2 ** 40 + 1])
    expect(big.isDeleted(2 ** 40 + 1) && !big.isDeleted(2 ** 40)).toBe(true)
  })

  it('merges into a new vector of the receiver kind', () => {
    const a = deletionVectorOf([1, 5, 9], false)
    const b = deletionVectorOf([2, 5, 100000], false)
    const u = a.merge(b)
    expect(positionsOf(u)).toEqual([1, 2, 5, 9, 100000])
    expect(positionsOf(a)).toEqual([1, 5, 9])
    expect(a.cardinality).toBe(3)
    const wide = deletionVectorOf([7, 2 ** 33], true)
    const u64 = wide.merge(a)
    expect(u64.bitmap64).toBe(true)
    expect(positionsOf(u64)).toEqual([1, 5, 7, 9, 2 ** 33])
    expect(positionsOf(a.merge(deletionVectorOf([4], true)))).toEqual([1, 4, 5, 9])
    expect(() => a.merge(wide)).toThrow(StrataInputError)
  })

  it('writes a 32-bit vector in the 64-bit layout like Paimon (bitmap key 0)', () => {
    const as64 = writeDeletionVectorFile(new Map([['f', deletionVectorOf([2, 3], false)]]), true)
    const native = writeDeletionVectorFile(new Map([['f', deletionVectorOf([2, 3], true)]]), true)
    expect(hex(as64.bytes)).toBe(hex(native.bytes))
    expect(() =>
      writeDeletionVectorFile(new Map([['f', deletionVectorOf([2 ** 32], true)]]), false),
    ).toThrow(/data file f.*4294967296/)
  })
})

/** Deletion vectors of a few data files: sparse, dense, runs, across container boundaries. */
const fileVectors = fc.array(
  fc.oneof(
    fc.array(fc.integer({ min: 0, max: 2 ** 31 - 1 }), { maxLength: 50 }),
    fc
      .record({
        start: fc.oneof(fc.integer({ min: 0, max: 200000 }), fc.constantFrom(65530, 131060)),
        length: fc.integer({ min: 1, max: 9000 }),
        step: fc.constantFrom(1, 2, 3, 50),
      })
      .map(({ start, length, step }) => Array.from({ length }, (_, i) => start + i * step)),
  ),
  { maxLength: 5 },
)

describe('deletion-vector file properties', () => {
  it('round-trips every vector through the index file in both layouts', () => {
    fc.assert(
      fc.property(fileVectors, fc.boolean(), (lists, bitmap64) => {
        const vectors = new Map(
          lists.map((ps, i) => [`data-${i}.parquet`, deletionVectorOf(ps, bitmap64)]),
        )
        const { bytes, metas } = writeDeletionVectorFile(vectors, bitmap64)
        expect(bytes[0]).toBe(1)
        expect(metas.map((m) => m.dataFileName)).toEqual([...vectors.keys()])
        // entries are contiguous: 32-bit entry = length + 8, 64-bit entry = length
        let offset = 1
        for (const m of metas) {
          expect(m.offset).toBe(offset)
          offset += bitmap64 ? m.length : m.length + 8
        }
        expect(offset).toBe(bytes.length)
        const back = readDeletionVectors(bytes, metas)
        lists.forEach((ps, i) => {
          const dv = back.get(`data-${i}.parquet`)!
          const expected = Array.from(new Set(ps)).sort((x, y) => x - y)
          expect(dv.cardinality).toBe(expected.length)
          expect(metas[i].cardinality).toBe(BigInt(expected.length))
          expect(positionsOf(dv).join()).toBe(expected.join())
          const { offset: at } = metas[i]
          const slice = bytes.subarray(at, at + deletionVectorReadLength(metas[i]))
          expect(readDeletionVector(slice, metas[i]).cardinality).toBe(expected.length)
        })
      }),
      { numRuns: 60 },
    )
  })

  it('rolls index files at the target size as Paimon does: each file closes once it reaches the target, so passes it by at most one vector; together they hold every vector, in order', () => {
    fc.assert(
      fc.property(fileVectors, fc.boolean(), fc.integer({ min: 1, max: 400 }), (lists, bitmap64, target) => {
        const vectors = new Map(lists.map((ps, i) => [`data-${i}.parquet`, deletionVectorOf(ps, bitmap64)]))
        const files = writeDeletionVectorFiles(vectors, bitmap64, target)
        const entrySize = (m: DeletionVectorMeta) => (bitmap64 ? m.length : m.length + 8)
        expect(files.flatMap((f) => f.metas.map((m) => m.dataFileName))).toEqual([...vectors.keys()])
        files.forEach(({ bytes, metas }, k) => {
          expect(metas.length).toBeGreaterThan(0)
          const last = metas[metas.length - 1]
          // every file but the last reached the target, and only with its last vector
          if (k < files.length - 1) expect(bytes.length).toBeGreaterThanOrEqual(target)
          if (metas.length > 1) expect(bytes.length - entrySize(last)).toBeLessThan(target)
          const back = readDeletionVectors(bytes, metas)
          for (const m of metas) expect(back.get(m.dataFileName)!.cardinality).toBe(vectors.get(m.dataFileName)!.cardinality)
        })
        // below the target, one file, byte for byte the unrolled one
        const whole = writeDeletionVectorFile(vectors, bitmap64)
        if (vectors.size > 0 && whole.bytes.length - entrySize(whole.metas[whole.metas.length - 1]) < target) expect(files.map((f) => Buffer.from(f.bytes).toString('hex'))).toEqual([Buffer.from(whole.bytes).toString('hex')])
      }),
      { numRuns: 100 },
    )
  })

  it('merge equals set union', () => {
    fc.assert(
      fc.property(fileVectors, fc.boolean(), (lists, bitmap64) => {
        const dvs = lists.map((ps) => deletionVectorOf(ps, bitmap64))
        const merged = dvs.reduce((acc, dv) => acc.merge(dv), deletionVectorOf([], bitmap64))
        const expected = Array.from(new Set(lists.flat())).sort((x, y) => x - y)
        expect(merged.cardinality).toBe(expected.length)
        expect(expected.every((p) => merged.isDeleted(p))).toBe(true)
        expect(positionsOf(merged).join()).toBe(expected.join())
      }),
      { numRuns: 40 },
    )
  })
})
