import { describe, it, expect } from 'vitest'
import fc from 'fast-check'
import {
  EMPTY_ROW_SERIALIZED,
  deserializeBinaryRow,
  fixedPartSize,
  readBinaryRow,
  serializeBinaryRow,
  writeBinaryRow,
} from '../lib/format/binary-row.ts'
import { binaryRowHash } from '../lib/format/bucket.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { DataType, TypeRoot, Value } from '../lib/types.ts'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')

const t = (root: TypeRoot, extra: Partial<DataType> = {}): DataType => ({ root, nullable: true, ...extra })
const STRING = t('VARCHAR', { length: 2147483647 })
const BYTES = t('VARBINARY', { length: 2147483647 })
const INT = t('INT')
const BIGINT = t('BIGINT')

const utcMicros = (iso: string, extraMicros = 0n): bigint => BigInt(Date.parse(`${iso}Z`)) * 1000n + extraMicros

describe('BinaryRow worked example (docs/format.md "BinaryRow layout")', () => {
  it('encodes INT 5, "abc", "hello world!", BIGINT null as the 56 bytes Java writes', () => {
    const types = [INT, STRING, STRING, BIGINT]
    const body = writeBinaryRow(types, [5, 'abc', 'hello world!', null])
    expect(hex(body)).toBe(
      '0008000000000000' +
        '0500000000000000' +
        '6162630000000083' +
        '0c00000028000000' +
        '0000000000000000' +
        '68656c6c6f20776f726c642100000000',
    )
    expect(body.length).toBe(56)
    expect(readBinaryRow(types, body)).toEqual([5, 'abc', 'hello world!', null])
  })
})

// Java InternalRowSerializer.toBinaryRow(...).hashCode(), from
// apache/paimon paimon-python/pypaimon/tests/write/dynamic_bucket_test.py.
const JAVA_VECTORS: { name: string; types: DataType[]; values: Value[]; hex: string; hash: number }[] = [
  { name: '"hello"', types: [STRING], values: ['hello'], hex: '0000000000000000 68656c6c6f000085', hash: 243722546 },
  {
    name: '"hello-java"',
    types: [STRING],
    values: ['hello-java'],
    hex: '0000000000000000 0a00000010000000 68656c6c6f2d6a61 7661000000000000',
    hash: -201703277,
  },
  {
    name: '("hello-java", 42)',
    types: [STRING, BIGINT],
    values: ['hello-java', 42n],
    hex: '0000000000000000 0a00000018000000 2a00000000000000 68656c6c6f2d6a61 7661000000000000',
    hash: -2066620165,
  },
  {
    name: '12345.67 DECIMAL(10, 2)',
    types: [t('DECIMAL', { precision: 10, scale: 2 })],
    values: [1234567n],
    hex: '0000000000000000 87d6120000000000',
    hash: 754928256,
  },
  {
    name: '12345678901234567890123.45 DECIMAL(25, 2)',
    types: [t('DECIMAL', { precision: 25, scale: 2 })],
    values: [1234567890123456789012345n],
    hex: '0000000000000000 0b00000010000000 01056e0f36a6443d e2df790000000000',
    hash: 1388205002,
  },
  {
    name: '2026-01-02 03:04:05.123 TIMESTAMP(3)',
    types: [t('TIMESTAMP', { precision: 3 })],
    values: [utcMicros('2026-01-02T03:04:05.123')],
    hex: '0000000000000000 038da97c9b010000',
    hash: -1766746798,
  },
  {
    name: '2026-01-02 03:04:05.123456 TIMESTAMP(6)',
    types: [t('TIMESTAMP', { precision: 6 })],
    values: [utcMicros('2026-01-02T03:04:05.123', 456n)],
    hex: '0000000000000000 40f5060010000000 038da97c9b010000',
    hash: 1245041971,
  },
  {
    name: 'bytes 00 01 ff 7f',
    types: [BYTES],
    values: [new Uint8Array([0x00, 0x01, 0xff, 0x7f])],
    hex: '0000000000000000 0001ff7f00000084',
    hash: 586821318,
  },
  {
    name: 'bytes 00..09',
    types: [BYTES],
    values: [new Uint8Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9])],
    hex: '0000000000000000 0a00000010000000 0001020304050607 0809000000000000',
    hash: 1822312655,
  },
]

describe('BinaryRow Java test vectors', () => {
  for (const v of JAVA_VECTORS) {
    it(`${v.name}: bytes, Java hashCode and read-back`, () => {
      const body = writeBinaryRow(v.types, v.values)
      expect(hex(body)).toBe(v.hex.replace(/\s+/g, ''))
      expect(binaryRowHash(body)).toBe(v.hash)
      expect(readBinaryRow(v.types, body)).toEqual(v.values)
    })
  }
})

describe('serialized form with arity prefix', () => {
  it('partition dt = "2024-05-01" is the 36 bytes Java writes', () => {
    const bytes = serializeBinaryRow([STRING], ['2024-05-01'])
    expect(hex(bytes)).toBe('00000001' + '0000000000000000' + '0a00000010000000' + '323032342d30352d3031000000000000')
    expect(deserializeBinaryRow([STRING], bytes)).toEqual(['2024-05-01'])
  })

  it('key id = 1 (BIGINT)', () => {
    expect(hex(serializeBinaryRow([BIGINT], [1n]))).toBe('00000001' + '0000000000000000' + '0100000000000000')
  })

  it('empty row: 12 bytes, arity 0 and an 8-byte zero header', () => {
    expect(hex(EMPTY_ROW_SERIALIZED)).toBe('000000000000000000000000')
    expect(serializeBinaryRow([], [])).toEqual(EMPTY_ROW_SERIALIZED)
    expect(hex(writeBinaryRow([], []))).toBe('0000000000000000')
    expect(deserializeBinaryRow([], EMPTY_ROW_SERIALIZED)).toEqual([])
  })

  it('rejects an arity that does not match the types, naming both', () => {
    const bytes = serializeBinaryRow([BIGINT], [1n])
    expect(() => deserializeBinaryRow([BIGINT, INT], bytes)).toThrow(/arity 1, expected 2/)
    expect(() => deserializeBinaryRow([], bytes)).toThrow(/arity 1, expected 0/)
    expect(() => deserializeBinaryRow([BIGINT], new Uint8Array(2))).toThrow(/no arity prefix/)
  })

  it('works on a subarray view with a non-zero byteOffset', () => {
    const bytes = serializeBinaryRow([INT, STRING], [7, 'a string of length 20'])
    const padded = new Uint8Array(bytes.length + 5)
    padded.set(bytes, 3)
    expect(deserializeBinaryRow([INT, STRING], padded.subarray(3, 3 + bytes.length))).toEqual([
      7,
      'a string of length 20',
    ])
  })
})

describe('slot encodings', () => {
  it('null non-compact DECIMAL keeps Java layout: 16 reserved zero bytes, slot = offset << 32', () => {
    const types = [t('DECIMAL', { precision: 25, scale: 2 })]
    expect(hex(writeBinaryRow(types, [null]))).toBe(
      '0001000000000000' + '0000000010000000' + '00000000000000000000000000000000',
    )
    expect(readBinaryRow(types, writeBinaryRow(types, [null]))).toEqual([null])
  })

  it('null non-compact TIMESTAMP keeps Java layout: 8 reserved zero bytes, slot = offset << 32', () => {
    const types = [INT, t('TIMESTAMP', { precision: 6 })]
    expect(hex(writeBinaryRow(types, [1, null]))).toBe(
      '0002000000000000' + '0100000000000000' + '0000000018000000' + '0000000000000000',
    )
  })

  it('null compact fields have a zero slot and only the null bit set', () => {
    const types = [t('BOOLEAN'), t('DECIMAL', { precision: 18, scale: 0 }), t('TIMESTAMP', { precision: 3 }), STRING]
    expect(hex(writeBinaryRow(types, [null, null, null, null]))).toBe('000f000000000000' + '00'.repeat(32))
  })

  it('null bits spill into the next header word past 56 fields', () => {
    expect(fixedPartSize(56)).toBe(8 + 56 * 8)
    expect(fixedPartSize(57)).toBe(16 + 57 * 8)
    const types = Array.from({ length: 60 }, () => INT)
    const values: Value[] = types.map((_, i) => (i === 59 ? null : i))
    const body = writeBinaryRow(types, values)
    expect(body.length).toBe(16 + 60 * 8)
    // field 59 → bit 67 → byte 8, bit 3
    expect(body[8]).toBe(0x08)
    expect(readBinaryRow(types, body)).toEqual(values)
  })

  it('negative non-compact decimals use BigInteger.toByteArray() lengths (−128 is one byte)', () => {
    const types = [t('DECIMAL', { precision: 20, scale: 0 })]
    expect(hex(writeBinaryRow(types, [-128n]))).toBe('0000000000000000' + '0100000010000000' + '80' + '00'.repeat(15))
    expect(hex(writeBinaryRow(types, [-129n]))).toBe('0000000000000000' + '0200000010000000' + 'ff7f' + '00'.repeat(14))
    expect(hex(writeBinaryRow(types, [128n]))).toBe('0000000000000000' + '0200000010000000' + '0080' + '00'.repeat(14))
    expect(hex(writeBinaryRow(types, [0n]))).toBe('0000000000000000' + '0100000010000000' + '00'.repeat(16))
    for (const v of [-128n, -129n, 128n, 0n, -1n, 10n ** 20n - 1n, -(10n ** 20n - 1n)]) {
      expect(readBinaryRow(types, writeBinaryRow(types, [v]))).toEqual([v])
    }
  })

  it('timestamps before 1970 floor to milliseconds with a positive nano-of-millisecond', () => {
    const types = [t('TIMESTAMP', { precision: 6 })]
    // -1 µs = millis -1, nanoOfMillisecond 999000
    expect(hex(writeBinaryRow(types, [-1n]))).toBe('0000000000000000' + '583e0f0010000000' + 'ffffffffffffffff')
    expect(readBinaryRow(types, writeBinaryRow(types, [-1n]))).toEqual([-1n])
    const compact = [t('TIMESTAMP', { precision: 3 })]
    expect(readBinaryRow(compact, writeBinaryRow(compact, [-1n]))).toEqual([-1000n])
  })

  it('strings are UTF-8: 7 bytes inline, 8 bytes in the variable part', () => {
    expect(hex(writeBinaryRow([STRING], ['ü日']))).toBe('0000000000000000' + 'c3bce697a5000085')
    expect(hex(writeBinaryRow([STRING], ['ü日本']))).toBe('0000000000000000' + '0800000010000000' + 'c3bce697a5e69cac')
    expect(hex(writeBinaryRow([STRING], ['abcdefg']))).toBe('0000000000000000' + '6162636465666787')
    expect(hex(writeBinaryRow([STRING], ['abcdefgh']))).toBe(
      '0000000000000000' + '0800000010000000' + '6162636465666768',
    )
    expect(hex(writeBinaryRow([STRING], ['']))).toBe('0000000000000000' + '0000000000000080')
    expect(readBinaryRow([STRING], writeBinaryRow([STRING], ['\uFEFFbom']))).toEqual(['\uFEFFbom'])
  })

  it('every fixed-width type at its slot', () => {
    const types = [t('BOOLEAN'), t('TINYINT'), t('SMALLINT'), t('DATE'), t('FLOAT'), t('DOUBLE')]
    expect(hex(writeBinaryRow(types, [true, -1, -2, 19844, 1.5, -2]))).toBe(
      '0000000000000000' +
        '0100000000000000' +
        'ff00000000000000' +
        'feff000000000000' +
        '844d000000000000' +
        '0000c03f00000000' +
        '00000000000000c0',
    )
  })
})

describe('input validation', () => {
  const cases: [DataType, Value, RegExp][] = [
    [INT, 1.5, /field 0 \(INT\): got 1.5 \(number\), expected an integer number/],
    [INT, 2 ** 31, /int32 range/],
    [t('TINYINT'), 128, /-128\.\.127/],
    [BIGINT, 1, /expected a bigint/],
    [BIGINT, 1n << 63n, /int64 range/],
    [STRING, 5, /\(STRING\): got 5 \(number\), expected a string/],
    [BYTES, 'x', /expected a Uint8Array/],
    [t('DECIMAL', { precision: 5, scale: 2 }), 100000n, /DECIMAL\(5, 2\)\): got 100000n \(bigint\), expected .*< 100000/],
    [t('DECIMAL', { precision: 25, scale: 2 }), 1.5, /DECIMAL\(25, 2\)/],
    [t('TIMESTAMP', { precision: 6 }), 5, /microseconds/],
    [t('BOOLEAN'), 1, /expected a boolean/],
  ]
  for (const [type, value, message] of cases) {
    it(`rejects ${String(value)} for ${type.root}`, () => {
      expect(() => writeBinaryRow([type], [value])).toThrow(StrataInputError)
      expect(() => writeBinaryRow([type], [value])).toThrow(message)
    })
  }

  it('rejects a value count that differs from the type count', () => {
    expect(() => writeBinaryRow([INT, INT], [1])).toThrow(/got 1 values for 2 fields/)
  })

  it('reports corrupt bodies instead of reading garbage', () => {
    expect(() => readBinaryRow([INT], new Uint8Array(8))).toThrow(/corrupt BinaryRow: 8 bytes/)
    const body = writeBinaryRow([STRING], ['a longer string value'])
    expect(() => readBinaryRow([STRING], body.subarray(0, 24))).toThrow(/outside the variable part/)
  })
})

// ---------- round-trip properties ----------

const typeArb: fc.Arbitrary<DataType> = fc.oneof(
  fc.constantFrom<TypeRoot>('BOOLEAN', 'TINYINT', 'SMALLINT', 'INT', 'BIGINT', 'FLOAT', 'DOUBLE', 'DATE').map((r) => t(r)),
  fc.integer({ min: 1, max: 38 }).chain((p) => fc.integer({ min: 0, max: p }).map((s) => t('DECIMAL', { precision: p, scale: s }))),
  fc.integer({ min: 0, max: 6 }).map((p) => t('TIMESTAMP', { precision: p })),
  fc.constantFrom(t('CHAR', { length: 10 }), t('VARCHAR', { length: 100 }), STRING),
  fc.constantFrom(t('BINARY', { length: 10 }), BYTES),
)

const stringUnit = fc.oneof(
  fc.constantFrom('a', 'é', '日', '😀', '\uFFFD', '\uE000', '\u0000'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
)

function valueArb(type: DataType): fc.Arbitrary<Value> {
  const v = ((): fc.Arbitrary<Value> => {
    switch (type.root) {
      case 'BOOLEAN':
        return fc.boolean()
      case 'TINYINT':
        return fc.integer({ min: -128, max: 127 })
      case 'SMALLINT':
        return fc.integer({ min: -32768, max: 32767 })
      case 'INT':
      case 'DATE':
        return fc.integer()
      case 'BIGINT':
        return fc.bigInt({ min: -(1n << 63n), max: (1n << 63n) - 1n })
      case 'FLOAT':
      case 'DOUBLE':
        return fc.double()
      case 'DECIMAL': {
        const limit = 10n ** BigInt(type.precision!) - 1n
        return fc.bigInt({ min: -limit, max: limit })
      }
      case 'TIMESTAMP':
        return fc.bigInt({ min: -(10n ** 17n), max: 10n ** 17n })
      case 'CHAR':
      case 'VARCHAR':
        return fc.string({ unit: stringUnit, maxLength: 20 })
      default:
        return fc.uint8Array({ maxLength: 20 })
    }
  })()
  return fc.option(v, { nil: null, freq: 5 })
}

/** What reading back must give: float32 rounding, compact timestamps floored to millis. */
function expected(type: DataType, v: Value): Value {
  if (v === null) return null
  if (type.root === 'FLOAT') return Math.fround(v as number)
  if (type.root === 'TIMESTAMP' && type.precision! <= 3) {
    const micros = v as bigint
    const millis = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n)
    return millis * 1000n
  }
  if (type.root === 'CHAR' || type.root === 'VARCHAR') return new TextDecoder().decode(new TextEncoder().encode(v as string))
  return v
}

const rowArb = fc
  .array(typeArb, { maxLength: 70 })
  .chain((types) => fc.tuple(fc.constant(types), fc.tuple(...types.map(valueArb))))

describe('round trips (property)', () => {
  it('readBinaryRow(writeBinaryRow(v)) gives v back for every type, nulls included', () => {
    fc.assert(
      fc.property(rowArb, ([types, values]) => {
        const body = writeBinaryRow(types, values)
        expect(body.length % 8).toBe(0)
        expect(body.length).toBeGreaterThanOrEqual(fixedPartSize(types.length))
        expect(body[0]).toBe(0)
        expect(readBinaryRow(types, body)).toEqual(types.map((ty, i) => expected(ty, values[i])))
      }),
      { numRuns: 300 },
    )
  })

  it('serialize/deserialize round-trips and is the arity prefix plus the body', () => {
    fc.assert(
      fc.property(rowArb, ([types, values]) => {
        const body = writeBinaryRow(types, values)
        const ser = serializeBinaryRow(types, values)
        expect(new DataView(ser.buffer).getInt32(0, false)).toBe(types.length)
        expect(hex(ser.subarray(4))).toBe(hex(body))
        expect(deserializeBinaryRow(types, ser)).toEqual(readBinaryRow(types, body))
      }),
      { numRuns: 200 },
    )
  })

  it('encoding is canonical: re-encoding what was read gives the same bytes', () => {
    fc.assert(
      fc.property(rowArb, ([types, values]) => {
        const body = writeBinaryRow(types, values)
        expect(hex(writeBinaryRow(types, readBinaryRow(types, body)))).toBe(hex(body))
      }),
      { numRuns: 200 },
    )
  })

  it('a row written after a larger one has no leftover bytes', () => {
    writeBinaryRow([STRING], ['x'.repeat(1000)])
    expect(hex(writeBinaryRow([STRING, STRING], ['abcdefghij', 'b']))).toBe(
      '0000000000000000' + '0a00000018000000' + '6200000000000081' + '6162636465666768' + '696a000000000000',
    )
  })
})
