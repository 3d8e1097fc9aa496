import { describe, it, expect } from 'vitest'
import fc from 'fast-check'
import {
  DEFAULT_PARTITION_NAME,
  bucketPath,
  civilFromDays,
  escapePathName,
  javaNumberString,
  localDateTimeString,
  partitionPath,
  partitionValueString,
} from '../lib/format/partition-path.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { DataField, DataType, TypeRoot } from '../lib/types.ts'

const t = (root: TypeRoot, extra: Partial<DataType> = {}): DataType => ({ root, nullable: true, ...extra })
const STRING = t('VARCHAR', { length: 2147483647 })
const field = (id: number, name: string, type: DataType): DataField => ({ id, name, type })
const micros = (iso: string, extra = 0n): bigint => BigInt(Date.parse(`${iso}Z`)) * 1000n + extra

// PartitionPathUtils.CHAR_TO_ESCAPE (docs/format.md "Directory and file names")
const ESCAPED = new Set<number>([
  ...Array.from({ length: 0x20 }, (_, i) => i),
  ...Array.from('"#%\'*/:=?\\{}[]^', (c) => c.charCodeAt(0)),
  0x7f,
])

describe('escapePathName', () => {
  it('escapes exactly the documented ASCII set as upper-case %XX', () => {
    for (let c = 0; c < 128; c++) {
      const s = String.fromCharCode(c)
      const want = ESCAPED.has(c) ? `%${c.toString(16).toUpperCase().padStart(2, '0')}` : s
      expect(escapePathName(s), `char ${c}`).toBe(want)
    }
  })

  it('keeps space and non-ASCII, escapes inside longer strings', () => {
    expect(escapePathName('a b')).toBe('a b')
    expect(escapePathName('ü日本😀')).toBe('ü日本😀')
    expect(escapePathName('2024-05-01 10:00:00')).toBe('2024-05-01 10%3A00%3A00')
    expect(escapePathName('a/b=c%d')).toBe('a%2Fb%3Dc%25d')
    expect(escapePathName('\n\t\u0001x\u007f')).toBe('%0A%09%01x%7F')
    expect(escapePathName('[x]{y}^')).toBe('%5Bx%5D%7By%7D%5E')
  })

  it('rejects the empty string', () => {
    expect(() => escapePathName('')).toThrow(StrataInputError)
  })

  it('is reversible by %XX decoding and leaves no escaped character bare (property)', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary', minLength: 1, maxLength: 30 }), (s) => {
        const e = escapePathName(s)
        expect(e.replace(/%([0-9A-F]{2})/g, (_, h: string) => String.fromCharCode(parseInt(h, 16)))).toBe(s)
        for (const ch of e.replace(/%[0-9A-F]{2}/g, '')) {
          expect(ESCAPED.has(ch.charCodeAt(0))).toBe(false)
        }
      }),
    )
  })
})

describe('partitionValueString (partition.legacy-name = true)', () => {
  it('integers, BIGINT and BOOLEAN as Java toString()', () => {
    expect(partitionValueString(t('INT'), -448489)).toBe('-448489')
    expect(partitionValueString(t('TINYINT'), -20)).toBe('-20')
    expect(partitionValueString(t('SMALLINT'), 1556)).toBe('1556')
    expect(partitionValueString(t('BIGINT'), -9223372036854775808n)).toBe('-9223372036854775808')
    expect(partitionValueString(t('BOOLEAN'), true)).toBe('true')
    expect(partitionValueString(t('BOOLEAN'), false)).toBe('false')
  })

  it('DATE as the int day count, not an ISO date', () => {
    expect(partitionValueString(t('DATE'), 19844)).toBe('19844')
    expect(partitionValueString(t('DATE'), 5)).toBe('5')
    expect(partitionValueString(t('DATE'), -1)).toBe('-1')
  })

  it('DECIMAL as BigDecimal.toPlainString() with all scale digits', () => {
    const d = (p: number, s: number) => t('DECIMAL', { precision: p, scale: s })
    expect(partitionValueString(d(10, 2), 12345n)).toBe('123.45')
    expect(partitionValueString(d(10, 2), -5n)).toBe('-0.05')
    expect(partitionValueString(d(10, 2), 0n)).toBe('0.00')
    expect(partitionValueString(d(10, 2), 100n)).toBe('1.00')
    expect(partitionValueString(d(10, 0), -42n)).toBe('-42')
    expect(partitionValueString(d(38, 10), 10n ** 37n)).toBe('1000000000000000000000000000.0000000000')
  })

  it('TIMESTAMP as LocalDateTime.toString()', () => {
    const ts6 = t('TIMESTAMP', { precision: 6 })
    expect(partitionValueString(ts6, micros('2024-01-01T00:00:00'))).toBe('2024-01-01T00:00')
    expect(partitionValueString(ts6, micros('2024-01-01T10:20:00'))).toBe('2024-01-01T10:20')
    expect(partitionValueString(ts6, micros('2024-01-01T00:00:01'))).toBe('2024-01-01T00:00:01')
    expect(partitionValueString(ts6, micros('2024-01-01T00:00:00.500'))).toBe('2024-01-01T00:00:00.500')
    expect(partitionValueString(ts6, micros('2024-01-01T00:00:00', 1n))).toBe('2024-01-01T00:00:00.000001')
    expect(partitionValueString(ts6, micros('2026-01-02T03:04:05.123', 456n))).toBe('2026-01-02T03:04:05.123456')
    expect(partitionValueString(ts6, -1n)).toBe('1969-12-31T23:59:59.999999')
    expect(partitionValueString(ts6, micros('+010000-01-01T00:00:00'))).toBe('+10000-01-01T00:00')
  })

  it('compact TIMESTAMP (p <= 3) keeps only the milliseconds the BinaryRow stores', () => {
    const ts3 = t('TIMESTAMP', { precision: 3 })
    expect(partitionValueString(ts3, micros('2026-01-02T03:04:05.123', 456n))).toBe('2026-01-02T03:04:05.123')
    expect(partitionValueString(ts3, -1n)).toBe('1969-12-31T23:59:59.999')
  })

  it('FLOAT and DOUBLE as Java Float/Double.toString()', () => {
    const dbl = t('DOUBLE')
    const cases: [number, string][] = [
      [1, '1.0'],
      [0.1, '0.1'],
      [100, '100.0'],
      [-2.5, '-2.5'],
      [123456.789, '123456.789'],
      [9999999, '9999999.0'],
      [1e7, '1.0E7'],
      [1.5e10, '1.5E10'],
      [0.001, '0.001'],
      [0.0001, '1.0E-4'],
      [1.2345e-7, '1.2345E-7'],
      [5e-324, '4.9E-324'],
      [Number.MAX_VALUE, '1.7976931348623157E308'],
      [0, '0.0'],
      [-0, '-0.0'],
      [Number.NaN, 'NaN'],
      [-Infinity, '-Infinity'],
    ]
    for (const [x, s] of cases) expect(partitionValueString(dbl, x), String(x)).toBe(s)
    const flt = t('FLOAT')
    const floats: [number, string][] = [
      [0.1, '0.1'],
      [1.1, '1.1'],
      [0.3, '0.3'],
      [3.14159, '3.14159'],
      [16777216, '1.6777216E7'],
      [3.4028234663852886e38, '3.4028235E38'],
      [1.401298464324817e-45, '1.4E-45'],
      [1e10, '1.0E10'],
    ]
    for (const [x, s] of floats) expect(partitionValueString(flt, x), String(x)).toBe(s)
    expect(javaNumberString(Math.fround(0.1))).toBe('0.10000000149011612')
  })

  it('null, empty and whitespace-only values become the default partition name', () => {
    expect(partitionValueString(STRING, null)).toBe(DEFAULT_PARTITION_NAME)
    expect(partitionValueString(t('INT'), null)).toBe('__DEFAULT_PARTITION__')
    expect(partitionValueString(STRING, '')).toBe(DEFAULT_PARTITION_NAME)
    expect(partitionValueString(STRING, ' ')).toBe(DEFAULT_PARTITION_NAME)
    expect(partitionValueString(STRING, ' \t\n\u3000\u2028')).toBe(DEFAULT_PARTITION_NAME)
    expect(partitionValueString(STRING, null, 'none')).toBe('none')
    expect(partitionValueString(STRING, '', 'none')).toBe('none')
    // Java's Character.isWhitespace excludes no-break spaces.
    expect(partitionValueString(STRING, '\u00a0')).toBe('\u00a0')
    expect(partitionValueString(STRING, 'ab ')).toBe('ab ')
  })

  it('rejects values of the wrong representation and BINARY fields', () => {
    expect(() => partitionValueString(t('INT'), '5')).toThrow(StrataInputError)
    expect(() => partitionValueString(t('BIGINT'), 5)).toThrow(/expected a bigint/)
    expect(() => partitionValueString(t('VARBINARY'), new Uint8Array([1]))).toThrow(/VARBINARY/)
  })
})

describe('partitionPath and bucketPath', () => {
  const dt = field(0, 'dt', STRING)
  const hr = field(1, 'hr', t('INT'))

  it("is '' for an unpartitioned table and 'k=v/' per field otherwise, in field order", () => {
    expect(partitionPath([], [])).toBe('')
    expect(partitionPath([dt], ['2024-05-01'])).toBe('dt=2024-05-01/')
    expect(partitionPath([dt, hr], ['2024-05-01', 10])).toBe('dt=2024-05-01/hr=10/')
    expect(partitionPath([hr, dt], [10, '2024-05-01'])).toBe('hr=10/dt=2024-05-01/')
  })

  it('escapes keys and values, and writes the default name for nulls', () => {
    expect(partitionPath([field(0, 'a:b', STRING)], ['x/y'])).toBe('a%3Ab=x%2Fy/')
    expect(partitionPath([dt, hr], [null, null])).toBe('dt=__DEFAULT_PARTITION__/hr=__DEFAULT_PARTITION__/')
    expect(partitionPath([dt], ['  '], 'empty')).toBe('dt=empty/')
  })

  it('rejects a value count that does not match the fields', () => {
    expect(() => partitionPath([dt, hr], ['x'])).toThrow(/got 1 values for partition fields \[dt, hr\]/)
  })

  it("appends 'bucket-N' (bucket-postpone for -2)", () => {
    expect(bucketPath([], [], 0)).toBe('bucket-0')
    expect(bucketPath([dt], ['2024-05-01'], 3)).toBe('dt=2024-05-01/bucket-3')
    expect(bucketPath([dt], ['2024-05-01'], -2)).toBe('dt=2024-05-01/bucket-postpone')
    expect(() => bucketPath([], [], -1)).toThrow(StrataInputError)
    expect(() => bucketPath([], [], 1.5)).toThrow(StrataInputError)
  })
})

describe('date arithmetic', () => {
  it('civilFromDays agrees with the JS Date calendar for years 0..9999 (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: -719528, max: 2932896 }), (days) => {
        const iso = new Date(days * 86_400_000).toISOString().slice(0, 10)
        const { year, month, day } = civilFromDays(days)
        expect(`${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`).toBe(iso)
      }),
    )
  })

  it('prints years as LocalDate does: 4 digits, sign for negative', () => {
    expect(localDateTimeString(-719528n * 86_400_000_000n)).toBe('0000-01-01T00:00')
    expect(localDateTimeString(-719893n * 86_400_000_000n)).toBe('-0001-01-01T00:00')
    expect(localDateTimeString(0n)).toBe('1970-01-01T00:00')
  })
})
