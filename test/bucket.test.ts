import { describe, it, expect } from 'vitest'
import fc from 'fast-check'
import { binaryRowHash, bucketFunction, bucketOf, bucketOfHash } from '../lib/format/bucket.ts'
import { EMPTY_ROW_BODY, writeBinaryRow } from '../lib/format/binary-row.ts'
import { murmurHashBytes, murmurHashRange } from '../lib/format/murmur.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { DataType, Value } from '../lib/types.ts'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
const INT: DataType = { root: 'INT', nullable: false }
const BIGINT: DataType = { root: 'BIGINT', nullable: false }
const STRING: DataType = { root: 'VARCHAR', nullable: false, length: 2147483647 }

describe('Paimon murmur hash (docs/format.md "Bucket function")', () => {
  // apache/paimon-cpp src/paimon/common/utils/murmurhash_utils_test.cpp, TestCompatibleWithJava
  const base = [3, 10, 20, 30, 40, 50, 67, 89, 111, 51, 33, 67, 70, 25, 48, 10]
  it('matches Java on word-aligned input', () => {
    expect(murmurHashBytes(new Uint8Array([...base, 54, 100, 43, 21]))).toBe(0xb39f33e6 | 0)
    expect(murmurHashBytes(new Uint8Array(base))).toBe(0x46bdab5b | 0)
  })

  it("matches Java's per-byte, sign-extended tail on unaligned input", () => {
    const bytes = [3, 10, 120, 130, 240, 50, 167, 189, 211, 51, 233, 167, 170, 25, 148, 10, 226, 19]
    expect(murmurHashBytes(new Uint8Array(bytes))).toBe(0x94a92b77 | 0)
  })

  it('hashes a range exactly like the same bytes on their own', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 64 }), fc.nat(8), fc.nat(8), (mid, pre, post) => {
        const all = new Uint8Array(pre + mid.length + post).fill(0xaa)
        all.set(mid, pre)
        expect(murmurHashRange(all, pre, mid.length)).toBe(murmurHashBytes(mid))
      }),
    )
  })

  it('returns a signed int32 and depends on the seed', () => {
    const b = new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8])
    expect(murmurHashBytes(b)).toBe(murmurHashBytes(b, 42))
    expect(murmurHashBytes(b, 0)).not.toBe(murmurHashBytes(b, 42))
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 32 }), (x) => {
        const h = murmurHashBytes(x)
        expect(Number.isInteger(h) && h >= -(2 ** 31) && h < 2 ** 31).toBe(true)
      }),
    )
  })
})

describe('fixed-bucket function', () => {
  // apache/paimon FixedBucketRowKeyExtractorTest#testBucket: row (5, 6, 7), 100 buckets.
  const cases: { key: number[]; hex: string; hash: number; bucket: number }[] = [
    { key: [5], hex: '0000000000000000 0500000000000000', hash: 260196596, bucket: 96 },
    { key: [5, 6], hex: '0000000000000000 0500000000000000 0600000000000000', hash: 131015827, bucket: 27 },
    {
      key: [5, 6, 7],
      hex: '0000000000000000 0500000000000000 0600000000000000 0700000000000000',
      hash: 1805332940,
      bucket: 40,
    },
  ]
  for (const c of cases) {
    it(`INT key (${c.key.join(', ')}) → bucket ${c.bucket} of 100`, () => {
      const types = c.key.map(() => INT)
      const body = writeBinaryRow(types, c.key)
      expect(hex(body)).toBe(c.hex.replace(/\s+/g, ''))
      expect(binaryRowHash(body)).toBe(c.hash)
      expect(bucketOf(types, c.key, 100)).toBe(c.bucket)
    })
  }

  it('empty row hash is -1670924195', () => {
    expect(binaryRowHash(EMPTY_ROW_BODY)).toBe(-1670924195)
    expect(binaryRowHash(writeBinaryRow([], []))).toBe(-1670924195)
  })

  it('BIGINT ids with 4 buckets: 1 → 2, 2 → 0, 3 → 1; 1, 4, 21, 25, 26 → 2', () => {
    expect(binaryRowHash(writeBinaryRow([BIGINT], [1n]))).toBe(1465514398)
    const b = (id: bigint): number => bucketOf([BIGINT], [id], 4)
    expect([b(1n), b(2n), b(3n)]).toEqual([2, 0, 1])
    expect([1n, 4n, 21n, 25n, 26n].map(b)).toEqual([2, 2, 2, 2, 2])
  })

  it('"hello-java" → bucket 1 of 4 (pypaimon table_write_test, Java-generated)', () => {
    expect(bucketOf([STRING], ['hello-java'], 4)).toBe(1)
  })

  it("uses Java's truncating remainder for negative hashes", () => {
    // "hello-java" hashes to -201703277 (test/binary-row.test.ts): Java -201703277 % 10 = -7 → 7; a floor-mod would give 3.
    expect(bucketOfHash(-201703277, 10)).toBe(7)
    expect(bucketOf([STRING], ['hello-java'], 10)).toBe(7)
    expect(bucketOfHash(-2147483648, 3)).toBe(2)
    expect(bucketOfHash(2147483647, 1)).toBe(0)
  })

  it('agrees with hashing writeBinaryRow output, and bucketFunction with bucketOf (property)', () => {
    const keyArb = fc.tuple(fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n }), fc.string({ maxLength: 30 }), fc.option(fc.integer(), { nil: null }))
    const types: DataType[] = [BIGINT, STRING, { root: 'INT', nullable: true }]
    fc.assert(
      fc.property(keyArb, fc.integer({ min: 1, max: 1000 }), (key, n) => {
        const values: Value[] = [...key]
        const expected = Math.abs(binaryRowHash(writeBinaryRow(types, values)) % n)
        expect(bucketOf(types, values, n)).toBe(expected)
        expect(bucketFunction(types, n)(values)).toBe(expected)
        expect(expected).toBeGreaterThanOrEqual(0)
        expect(expected).toBeLessThan(n)
      }),
    )
  })

  it('rejects a bucket count that is not a positive integer', () => {
    for (const n of [0, -1, 1.5, Number.NaN, 2 ** 31]) {
      expect(() => bucketOf([INT], [1], n)).toThrow(StrataInputError)
      expect(() => bucketFunction([INT], n)).toThrow(/expected a positive int32/)
    }
  })
})
