// Key order of data files, sorted runs and min/max stats (docs/format.md "Data files"): ascending,
// nulls first, strings by unsigned UTF-8 bytes (BinaryString.compareTo), binaries by unsigned
// bytes. Java checks sorted-run order on restore (SortedRun.validate), so this order must agree
// with Java's on the bytes Strata writes.
//
// Strings are compared as JS strings without encoding. UTF-16 code-unit order equals UTF-8
// byte order except where a surrogate meets U+E000..U+FFFF (UTF-8 puts supplementary code
// points after the whole BMP) and for lone surrogates, which TextEncoder writes as U+FFFD.
// So strings without surrogates use the engine's native comparison (a regex scan for
// surrogates is several times faster than a JS loop over long shared prefixes), and only the
// rest walk code points.
//
// FLOAT/DOUBLE follow Java's Double.compare (total order: -0.0 < 0.0, NaN last and equal to
// itself) so that sorting is well defined.

import type { DataType, Value } from '../types.ts'

type Compare = (a: Value, b: Value) => number

function isSurrogate(c: number): boolean {
  return (c & 0xf800) === 0xd800
}

/** Code point at `i` as TextEncoder would encode it: lone surrogates read as U+FFFD. */
function codePointAt(s: string, i: number): number {
  const c = s.charCodeAt(i)
  if ((c & 0xfc00) === 0xd800) {
    if (i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if ((d & 0xfc00) === 0xdc00) return ((c - 0xd800) << 10) + (d - 0xdc00) + 0x10000
    }
    return 0xfffd
  }
  if ((c & 0xfc00) === 0xdc00) return 0xfffd
  return c
}

/** Code-point comparison from `start`, a code-point boundary in both strings. */
function compareCodePointsFrom(a: string, b: string, start: number): number {
  let i = start
  let j = start
  while (i < a.length && j < b.length) {
    const ca = codePointAt(a, i)
    const cb = codePointAt(b, j)
    if (ca !== cb) return ca < cb ? -1 : 1
    i += ca >= 0x10000 ? 2 : 1
    j += cb >= 0x10000 ? 2 : 1
  }
  const ra = a.length - i
  const rb = b.length - j
  return ra === rb ? 0 : ra < rb ? -1 : 1
}

const SURROGATE = /[\ud800-\udfff]/

/** Order of the UTF-8 encodings of `a` and `b` (TextEncoder's), without encoding them. */
export function compareStringsUtf8(a: string, b: string): number {
  if (a === b) return 0
  if (!SURROGATE.test(a) && !SURROGATE.test(b)) return a < b ? -1 : 1
  return compareWithSurrogates(a, b)
}

function compareWithSurrogates(a: string, b: string): number {
  const n = a.length < b.length ? a.length : b.length
  for (let i = 0; i < n; i++) {
    const ca = a.charCodeAt(i)
    const cb = b.charCodeAt(i)
    if (ca !== cb) {
      if (!isSurrogate(ca) && !isSurrogate(cb)) return ca < cb ? -1 : 1
      // Back up to the start of a surrogate pair the two strings share the high half of.
      const start = i > 0 && (a.charCodeAt(i - 1) & 0xfc00) === 0xd800 ? i - 1 : i
      return compareCodePointsFrom(a, b, start)
    }
  }
  if (a.length === b.length) return 0
  // One is a code-unit prefix of the other. A lone high surrogate ending the shorter string
  // may pair up in the longer one; the code-point walk covers that.
  if (n > 0 && (a.charCodeAt(n - 1) & 0xfc00) === 0xd800) return compareCodePointsFrom(a, b, n - 1)
  return a.length < b.length ? -1 : 1
}

/** Unsigned lexicographic order of byte strings, a prefix first. */
export function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = a.length < b.length ? a.length : b.length
  for (let i = 0; i < n; i++) {
    const d = a[i] - b[i]
    if (d !== 0) return d < 0 ? -1 : 1
  }
  return a.length === b.length ? 0 : a.length < b.length ? -1 : 1
}

/** Java `Double.compare`. */
export function compareDoubles(a: number, b: number): number {
  if (a < b) return -1
  if (a > b) return 1
  if (a === b) {
    if (a !== 0) return 0
    const na = Object.is(a, -0)
    const nb = Object.is(b, -0)
    return na === nb ? 0 : na ? -1 : 1
  }
  const nanA = Number.isNaN(a)
  const nanB = Number.isNaN(b)
  return nanA === nanB ? 0 : nanA ? 1 : -1
}

const compareNumbers: Compare = (a, b) => {
  if (a === null) return b === null ? 0 : -1
  if (b === null) return 1
  return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0
}

const compareBigints: Compare = (a, b) => {
  if (a === null) return b === null ? 0 : -1
  if (b === null) return 1
  return (a as bigint) < (b as bigint) ? -1 : (a as bigint) > (b as bigint) ? 1 : 0
}

const compareBooleans: Compare = (a, b) => {
  if (a === null) return b === null ? 0 : -1
  if (b === null) return 1
  return a === b ? 0 : a ? 1 : -1
}

const compareFloats: Compare = (a, b) => {
  if (a === null) return b === null ? 0 : -1
  if (b === null) return 1
  return compareDoubles(a as number, b as number)
}

const compareStrings: Compare = (a, b) => {
  if (a === null) return b === null ? 0 : -1
  if (b === null) return 1
  return compareStringsUtf8(a as string, b as string)
}

const compareBinaries: Compare = (a, b) => {
  if (a === null) return b === null ? 0 : -1
  if (b === null) return 1
  return compareBytes(a as Uint8Array, b as Uint8Array)
}

/** The null-aware comparator of one type. */
export function valueComparator(type: DataType): Compare {
  switch (type.root) {
    case 'BOOLEAN':
      return compareBooleans
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
    case 'DATE':
      return compareNumbers
    case 'BIGINT':
    case 'DECIMAL':
    case 'TIMESTAMP':
      return compareBigints
    case 'FLOAT':
    case 'DOUBLE':
      return compareFloats
    case 'CHAR':
    case 'VARCHAR':
      return compareStrings
    case 'BINARY':
    case 'VARBINARY':
      return compareBinaries
    default:
      throw new Error(`compare: type ${String((type as DataType).root)} has no order`)
  }
}

/** Order of two values of `type`: nulls first, then the type's natural order. */
export function compareValues(type: DataType, a: Value, b: Value): number {
  return valueComparator(type)(a, b)
}

/** Lexicographic order of two rows over `types` (field 0 first). */
export function compareRows(types: DataType[], a: Value[], b: Value[]): number {
  for (let i = 0; i < types.length; i++) {
    const c = valueComparator(types[i])(a[i], b[i])
    if (c !== 0) return c
  }
  return 0
}

/** `compareRows` with the per-field comparators resolved once: the merge hot path. */
export function rowComparator(types: DataType[]): (a: Value[], b: Value[]) => number {
  const fns = types.map(valueComparator)
  switch (fns.length) {
    case 0:
      return () => 0
    case 1: {
      const f0 = fns[0]
      return (a, b) => f0(a[0], b[0])
    }
    case 2: {
      const f0 = fns[0]
      const f1 = fns[1]
      return (a, b) => f0(a[0], b[0]) || f1(a[1], b[1])
    }
    default: {
      const n = fns.length
      return (a, b) => {
        for (let i = 0; i < n; i++) {
          const c = fns[i](a[i], b[i])
          if (c !== 0) return c
        }
        return 0
      }
    }
  }
}
