import { describe, it, expect } from 'vitest'
import { readFileSync } from 'node:fs'
import { crc32 } from 'node:zlib'
import fc from 'fast-check'
import { RoaringBitmap32 } from '../lib/format/roaring32.ts'
import { RoaringBitmap64 } from '../lib/format/roaring64.ts'
import { StrataInputError } from '../lib/errors.ts'

const fixture = (name: string): Uint8Array =>
  new Uint8Array(readFileSync(new URL(`./fixtures/roaring/${name}`, import.meta.url)))

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString('hex')
const fromHex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s.replace(/\s+/g, ''), 'hex'))

function range(start: number, endExclusive: number, step = 1): number[] {
  const out: number[] = []
  for (let v = start; v < endExclusive; v += step) out.push(v)
  return out
}

/** Element-wise equality as one byte comparison (expect's deep equality is slow on big arrays). */
function same(actual: ArrayLike<number>, expected: ArrayLike<number>): boolean {
  const a = Float64Array.from(actual)
  const b = Float64Array.from(expected)
  return Buffer.from(a.buffer).equals(Buffer.from(b.buffer))
}

const TWO_32 = 2 ** 32
const C = 65536

/** RoaringFormatSpec testdata: the values the Java generator added. */
const specValues = [
  ...range(0, 100000, 1000),
  ...range(300000, 600000, 3),
  ...range(700000, 800000),
]

/** Iceberg blob framing: int32 BE length, magic LE, 64-bit bitmap, int32 BE CRC32 of the middle. */
function icebergBlob(bytes: Uint8Array): Uint8Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  expect(view.getInt32(0)).toBe(bytes.length - 8)
  expect(view.getUint32(4, true)).toBe(1681511377)
  expect(view.getUint32(bytes.length - 4)).toBe(crc32(bytes.subarray(4, bytes.length - 4)))
  return bytes.subarray(8, bytes.length - 4)
}

describe('RoaringBitmap32 golden files (RoaringFormatSpec testdata, Java)', () => {
  it('reads bitmapwithoutruns.bin and bitmapwithruns.bin to the generated values', () => {
    const without = fixture('bitmapwithoutruns.bin')
    const withRuns = fixture('bitmapwithruns.bin')
    // the two files really use the two cookies
    expect(new DataView(without.buffer).getUint32(0, true)).toBe(12346)
    expect(new DataView(withRuns.buffer).getUint32(0, true) & 0xffff).toBe(12347)
    for (const bytes of [without, withRuns]) {
      const b = RoaringBitmap32.deserialize(bytes)
      expect(b.cardinality).toBe(200100)
      expect(same(b.toSortedArray(), specValues)).toBe(true)
    }
  })

  it('writes bitmapwithruns.bin byte for byte, from positions and by re-serializing', () => {
    const withRuns = fixture('bitmapwithruns.bin')
    expect(hex(RoaringBitmap32.fromSorted(specValues).serialize())).toBe(hex(withRuns))
    expect(hex(RoaringBitmap32.deserialize(withRuns).serialize())).toBe(hex(withRuns))
    // run optimisation of the run-less file yields Java's run-optimised file
    expect(hex(RoaringBitmap32.deserialize(fixture('bitmapwithoutruns.bin')).serialize())).toBe(
      hex(withRuns),
    )
  })
})

describe('RoaringBitmap64 golden files', () => {
  it('reads portable_bitmap64.bin (CRoaring) and writes it back byte-identical', () => {
    const bytes = fixture('portable_bitmap64.bin')
    const expected: number[] = []
    for (const base of [0, TWO_32]) {
      expected.push(...range(base, base + 0x9001), ...range(base + 0xa000, base + 0x10001))
      expected.push(base + 0x20000, base + 0x20005, ...range(base + 0x80000, base + 0x90000, 2))
    }
    const b = RoaringBitmap64.deserialize(bytes)
    expect(b.cardinality).toBe(expected.length)
    expect(same(b.toSortedArray(), expected)).toBe(true)
    // CRoaring's and Java's run choices agree on these containers, so the bytes match
    expect(hex(b.serialize())).toBe(hex(bytes))
    expect(hex(RoaringBitmap64.fromSorted(expected).serialize())).toBe(hex(bytes))
  })

  it('reads the CRoaring example maps Iceberg ships (64map*.bin)', () => {
    expect(RoaringBitmap64.deserialize(fixture('64mapempty.bin')).cardinality).toBe(0)
    expect(hex(RoaringBitmap64.deserialize(fixture('64mapempty.bin')).serialize())).toBe(
      hex(fixture('64mapempty.bin')),
    )
    const small = RoaringBitmap64.deserialize(fixture('64map32bitvals.bin'))
    expect(Array.from(small.toSortedArray())).toEqual(range(0, 10))
    // written without run optimisation; Java's runOptimize turns 0..9 into one run
    expect(hex(small.serialize())).toBe(
      '0100000000000000' + '00000000' + '3b300000' + '01' + '00000900' + '0100' + '00000900',
    )
    const spread = RoaringBitmap64.deserialize(fixture('64mapspreadvals.bin'))
    const expected = range(0, 10).flatMap((key) => range(0, 10).map((v) => key * TWO_32 + v))
    expect(Array.from(spread.toSortedArray())).toEqual(expected)
  })

  it('reads Iceberg position-index blobs and writes them back byte-identical', () => {
    const cases: [string, number[]][] = [
      ['empty-position-index.bin', []],
      ['small-alternating-values-position-index.bin', [1, 3, 5, 7, 9]],
      [
        'small-and-large-values-position-index.bin',
        [100, 101, 2147483647 + 100, 2147483647 + 101],
      ],
      [
        'all-container-types-position-index.bin',
        [
          5,
          7,
          ...range(C + 1, C + 1000),
          ...range(2 * C + 1, 3 * C - 1),
          TWO_32 + 10,
          TWO_32 + 20,
          ...range(TWO_32 + C + 10, TWO_32 + C + 500),
          ...range(TWO_32 + 2 * C + 1, TWO_32 + 3 * C - 1),
        ],
      ],
    ]
    for (const [name, positions] of cases) {
      const bytes = fixture(name)
      const body = icebergBlob(bytes)
      const b = RoaringBitmap64.deserialize(body)
      expect(same(b.toSortedArray(), positions), name).toBe(true)
      expect(hex(b.serialize()), name).toBe(hex(body))
      expect(hex(RoaringBitmap64.fromSorted(positions).serialize()), name).toBe(hex(body))
    }
    expect(fixture('all-container-types-position-index.bin').length).toBe(94)
  })

  it('builds all-container-types the way Iceberg does (single adds and ranges)', () => {
    const b = new RoaringBitmap64()
    b.add(5)
    b.add(7)
    b.addRange(C + 1, C + 1000)
    b.addRange(2 * C + 1, 3 * C - 1)
    b.add(TWO_32 + 10)
    b.add(TWO_32 + 20)
    b.addRange(TWO_32 + C + 10, TWO_32 + C + 500)
    b.addRange(TWO_32 + 2 * C + 1, TWO_32 + 3 * C - 1)
    const blob = fixture('all-container-types-position-index.bin')
    expect(hex(b.serialize())).toBe(hex(icebergBlob(blob)))
  })
})

describe('RoaringBitmap32 serialization choices (Java runOptimize)', () => {
  const ser = (values: number[]): string => hex(RoaringBitmap32.fromSorted(values).serialize())

  it('writes the empty bitmap as the run-less cookie and zero containers', () => {
    expect(hex(new RoaringBitmap32().serialize())).toBe('3a30000000000000')
  })

  it('keeps an array when the run form is not strictly smaller', () => {
    // card 3, 1 run: array 6 bytes vs run 2 + 4 = 6 bytes → array (Java keeps the array on ties)
    expect(ser([1, 2, 3])).toBe('3a300000' + '01000000' + '00000200' + '10000000' + '010002000300')
    // card 2, 1 run: array 4 bytes < run 6 bytes
    expect(ser([1, 2])).toBe('3a300000' + '01000000' + '00000100' + '10000000' + '01000200')
  })

  it('switches to a run container once runs are strictly smaller', () => {
    // card 4, 1 run: run 6 bytes < array 8 bytes; one container → no offset header
    expect(ser([1, 2, 3, 4])).toBe('3b300000' + '01' + '00000300' + '0100' + '01000300')
  })

  it('turns a bitmap container into runs at 2047 runs but not at 2048', () => {
    const runsOf = (n: number): number[] =>
      range(0, n).flatMap((i) => [4 * i, 4 * i + 1, 4 * i + 2])
    const r2047 = RoaringBitmap32.fromSorted(runsOf(2047)).serialize()
    expect(r2047.length).toBe(4 + 1 + 4 + (2 + 4 * 2047)) // 8190-byte run container
    expect(new DataView(r2047.buffer).getUint16(9, true)).toBe(2047)
    const r2048 = RoaringBitmap32.fromSorted(runsOf(2048)).serialize()
    expect(r2048.length).toBe(8 + 8 + 8192) // bitmap container, run-less cookie
    expect(new DataView(r2048.buffer).getUint32(0, true)).toBe(12346)
  })

  it('writes the offset header with runs only from 4 containers on (NO_OFFSET_THRESHOLD)', () => {
    const tenEach = (containers: number): number[] =>
      range(0, containers).flatMap((k) => range(k * C, k * C + 10))
    const three = RoaringBitmap32.fromSorted(tenEach(3)).serialize()
    expect(three.length).toBe(4 + 1 + 3 * 4 + 3 * 6)
    const four = RoaringBitmap32.fromSorted(tenEach(4)).serialize()
    expect(hex(four.subarray(0, 5))).toBe('3b300300' + '0f')
    const view = new DataView(four.buffer)
    const offsets = range(0, 4).map((i) => view.getUint32(4 + 1 + 16 + 4 * i, true))
    expect(offsets).toEqual([37, 43, 49, 55])
    expect(four.length).toBe(61)
    // without runs the offsets are always there
    const sparse = RoaringBitmap32.fromSorted([0, 2, C, C + 2, 2 * C]).serialize()
    expect(sparse.length).toBe(8 + 3 * 8 + 4 + 4 + 2)
    expect(new DataView(sparse.buffer).getUint32(8 + 12, true)).toBe(32)
  })

  it('puts count − 1 in the high half of the run cookie', () => {
    const values = range(0, 300).flatMap((k) => range(k * C, k * C + 5))
    const bytes = RoaringBitmap32.fromSorted(values).serialize()
    expect(new DataView(bytes.buffer).getUint32(0, true)).toBe((12347 | (299 << 16)) >>> 0)
    expect(Array.from(RoaringBitmap32.deserialize(bytes).toSortedArray())).toEqual(values)
  })

  it('splits ranges at the 65535/65536 container boundary', () => {
    const b = new RoaringBitmap32()
    b.addRange(65530, 65542)
    expect(Array.from(b.toSortedArray())).toEqual(range(65530, 65542))
    expect(b.has(65535) && b.has(65536) && !b.has(65542) && !b.has(65529)).toBe(true)
    const last = new RoaringBitmap32()
    last.addRange(TWO_32 - 3, TWO_32)
    expect(Array.from(last.toSortedArray())).toEqual([TWO_32 - 3, TWO_32 - 2, TWO_32 - 1])
  })
})

describe('Roaring input and corruption errors', () => {
  it('rejects positions that are out of range, fractional or descending', () => {
    expect(() => RoaringBitmap32.fromSorted([3, 2])).toThrow(StrataInputError)
    expect(() => RoaringBitmap32.fromSorted([1, 2.5])).toThrow(/positions\[1\] = 2\.5/)
    expect(() => RoaringBitmap32.fromSorted([TWO_32])).toThrow(/\[0, 4294967295\]/)
    expect(() => new RoaringBitmap32().add(-1)).toThrow(StrataInputError)
    expect(() => new RoaringBitmap32().addRange(5, 4)).toThrow(/addRange/)
    expect(() => new RoaringBitmap32().addRange(0, TWO_32 + 1)).toThrow(StrataInputError)
    expect(() => RoaringBitmap64.fromSorted([2 ** 53])).toThrow(StrataInputError)
    expect(() => new RoaringBitmap64().add(-3)).toThrow(StrataInputError)
  })

  it('rejects malformed portable bitmaps with a message', () => {
    expect(() => RoaringBitmap32.deserialize(fromHex('39300000'))).toThrow(/cookie 12345/)
    expect(() => RoaringBitmap32.deserialize(fromHex('3a30000001000000'))).toThrow(/truncated/)
    const ok = RoaringBitmap32.fromSorted([1, 2]).serialize()
    expect(() => RoaringBitmap32.deserialize(new Uint8Array([...ok, 0]))).toThrow(/trailing/)
    // array container with descending values
    expect(() =>
      RoaringBitmap32.deserialize(fromHex('3a300000 01000000 00000100 10000000 02000100')),
    ).toThrow(/ascending/)
    // two containers with the same key
    expect(() =>
      RoaringBitmap32.deserialize(
        fromHex('3a300000 02000000 00000000 00000000 18000000 1a000000 0100 0200'),
      ),
    ).toThrow(/keys not ascending/)
    // run container whose runs do not sum to the header cardinality
    const shortRuns = fromHex('3b300000 01 00000400 0100 01000300')
    expect(() => RoaringBitmap32.deserialize(shortRuns)).toThrow(/header says 5/)
    // 64-bit: keys must ascend and stay below 2^53
    const one = RoaringBitmap32.fromSorted([7]).serialize()
    const map = (key: number): Uint8Array => {
      const out = new Uint8Array(12 + one.length)
      const v = new DataView(out.buffer)
      v.setUint32(0, 1, true)
      v.setUint32(8, key, true)
      out.set(one, 12)
      return out
    }
    expect(Array.from(RoaringBitmap64.deserialize(map(0x1fffff)).toSortedArray())).toEqual([
      0x1fffff * TWO_32 + 7,
    ])
    expect(() => RoaringBitmap64.deserialize(map(0x200000))).toThrow(/2\^53/)
    expect(() => RoaringBitmap64.deserialize(fromHex('ffffffff00000000'))).toThrow(/count/)
  })

  it('handles the largest exact position in a 64-bit bitmap', () => {
    const b = new RoaringBitmap64()
    b.add(Number.MAX_SAFE_INTEGER)
    b.add(3)
    expect(b.has(Number.MAX_SAFE_INTEGER)).toBe(true)
    expect(b.has(Number.MAX_SAFE_INTEGER - 1)).toBe(false)
    expect(Array.from(b.toSortedArray())).toEqual([3, Number.MAX_SAFE_INTEGER])
    expect(b.cardinality).toBe(2)
  })
})

// ---- property tests ----

/** Sets of uint32 positions mixing sparse values, runs, strided blocks and container edges. */
const positions32 = fc
  .array(
    fc.oneof(
      fc.integer({ min: 0, max: 0xffffffff }).map((v) => [v]),
      fc
        .record({
          start: fc.oneof(
            fc.integer({ min: 0, max: 0xffffffff }),
            fc
              .tuple(fc.integer({ min: 1, max: 8 }), fc.integer({ min: -40, max: 40 }))
              .map(([k, d]) => Math.max(0, k * C + d)),
            fc.constantFrom(0, 65535, 65536, 0xffffffff - 100),
          ),
          length: fc.integer({ min: 1, max: 6000 }),
          step: fc.constantFrom(1, 1, 2, 3, 7, 500),
        })
        .map(({ start, length, step }) => {
          const out: number[] = []
          for (let v = start, i = 0; i < length && v <= 0xffffffff; i++, v += step) out.push(v)
          return out
        }),
    ),
    { maxLength: 6 },
  )
  .map((parts) => Uint32Array.from(new Set(parts.flat())).sort())

function union(a: ArrayLike<number>, b: ArrayLike<number>): number[] {
  return Array.from(new Set([...Array.from(a), ...Array.from(b)])).sort((x, y) => x - y)
}

describe('RoaringBitmap32 properties', () => {
  it('round-trips positions through fromSorted, serialize and deserialize', () => {
    fc.assert(
      fc.property(positions32, (model) => {
        const b = RoaringBitmap32.fromSorted(model)
        expect(b.cardinality).toBe(model.length)
        expect(same(b.toSortedArray(), model)).toBe(true)
        const bytes = b.serialize()
        const back = RoaringBitmap32.deserialize(bytes)
        expect(same(back.toSortedArray(), model)).toBe(true)
        expect(hex(back.serialize())).toBe(hex(bytes))
        // run optimisation never makes the bitmap larger than the run-less layout
        const plain = 8 + 8 * new Set(Array.from(model, (v) => v >>> 16)).size
        let plainBody = 0
        const perKey = new Map<number, number>()
        for (const v of model) perKey.set(v >>> 16, (perKey.get(v >>> 16) ?? 0) + 1)
        for (const card of perKey.values()) plainBody += card <= 4096 ? 2 * card : 8192
        expect(bytes.length).toBeLessThanOrEqual(plain + plainBody)
      }),
      { numRuns: 100 },
    )
  })

  it('serializes the same bytes however the set was built', () => {
    fc.assert(
      fc.property(positions32, fc.integer(), (model, seed) => {
        const shuffled = Array.from(model)
        let s = seed | 0
        for (let i = shuffled.length - 1; i > 0; i--) {
          s = (Math.imul(s, 1103515245) + 12345) | 0
          const j = (s >>> 0) % (i + 1)
          ;[shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]]
        }
        const added = new RoaringBitmap32()
        for (const v of shuffled) added.add(v)
        expect(hex(added.serialize())).toBe(hex(RoaringBitmap32.fromSorted(model).serialize()))
      }),
      { numRuns: 60 },
    )
  })

  it('addRange equals adding every value', () => {
    fc.assert(
      fc.property(
        positions32,
        fc.integer({ min: 0, max: 0xffffffff - 20000 }),
        fc.integer({ min: 0, max: 20000 }),
        (model, start, length) => {
          const b = RoaringBitmap32.fromSorted(model)
          b.addRange(start, start + length)
          const expected = union(model, range(start, start + length))
          expect(same(b.toSortedArray(), expected)).toBe(true)
          expect(hex(b.serialize())).toBe(hex(RoaringBitmap32.fromSorted(expected).serialize()))
        },
      ),
      { numRuns: 60 },
    )
  })

  it('or is set union and leaves its inputs unchanged', () => {
    fc.assert(
      fc.property(positions32, positions32, (ma, mb) => {
        const a = RoaringBitmap32.fromSorted(ma)
        const b = RoaringBitmap32.fromSorted(mb)
        const u = a.or(b)
        const expected = union(ma, mb)
        expect(same(u.toSortedArray(), expected)).toBe(true)
        expect(u.cardinality).toBe(expected.length)
        expect(hex(u.serialize())).toBe(hex(RoaringBitmap32.fromSorted(expected).serialize()))
        u.add(0)
        expect(same(a.toSortedArray(), ma)).toBe(true)
        expect(same(b.toSortedArray(), mb)).toBe(true)
      }),
      { numRuns: 80 },
    )
  })

  it('has agrees with membership', () => {
    fc.assert(
      fc.property(positions32, fc.array(fc.integer({ min: 0, max: 0xffffffff })), (model, pr) => {
        const b = RoaringBitmap32.fromSorted(model)
        const set = new Set(model)
        expect(model.every((v) => b.has(v))).toBe(true)
        expect(pr.every((v) => b.has(v) === set.has(v))).toBe(true)
        expect(model.every((v) => b.has(v + 1) === set.has(v + 1))).toBe(true)
      }),
      { numRuns: 60 },
    )
  })
})

/** Positions below 5 · 2^32 (keys 0..4), so the dense slot array stays small. */
const positions64 = fc
  .array(
    fc.tuple(fc.integer({ min: 0, max: 4 }), positions32.map((a) => Array.from(a).slice(0, 3000))),
    { maxLength: 3 },
  )
  .map((parts) =>
    Float64Array.from(
      new Set(parts.flatMap(([key, lows]) => lows.map((v) => key * TWO_32 + v))),
    ).sort(),
  )

describe('RoaringBitmap64 properties', () => {
  it('round-trips and unions like the set model', () => {
    fc.assert(
      fc.property(positions64, positions64, (ma, mb) => {
        const a = RoaringBitmap64.fromSorted(ma)
        expect(a.cardinality).toBe(ma.length)
        expect(same(a.toSortedArray(), ma)).toBe(true)
        const bytes = a.serialize()
        const back = RoaringBitmap64.deserialize(bytes)
        expect(same(back.toSortedArray(), ma)).toBe(true)
        expect(hex(back.serialize())).toBe(hex(bytes))
        // dense layout: count = highest key + 1, every key written in order
        const view = new DataView(bytes.buffer)
        const highest = ma.length > 0 ? Math.floor(ma[ma.length - 1] / TWO_32) + 1 : 0
        expect(view.getUint32(0, true)).toBe(highest)
        const u = a.or(RoaringBitmap64.fromSorted(mb))
        expect(same(u.toSortedArray(), union(ma, mb))).toBe(true)
        expect(mb.every((v) => u.has(v))).toBe(true)
      }),
      { numRuns: 80 },
    )
  })

  it('addRange across keys equals adding every value', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 3 }),
        fc.integer({ min: -3000, max: 3000 }),
        fc.integer({ min: 0, max: 6000 }),
        (key, delta, length) => {
          const start = Math.max(0, (key + 1) * TWO_32 + delta)
          const b = new RoaringBitmap64()
          b.addRange(start, start + length)
          expect(same(b.toSortedArray(), range(start, start + length))).toBe(true)
          expect(hex(b.serialize())).toBe(
            hex(RoaringBitmap64.fromSorted(range(start, start + length)).serialize()),
          )
        },
      ),
      { numRuns: 60 },
    )
  })
})
