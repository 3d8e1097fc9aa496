// ManifestCheck: what a read of one data file checks against its manifest entry (keys in order
// and within the entry's bounds, row and retraction counts).

import { CorruptFileError } from '../errors.ts'
import type { DataField, Value } from '../types.ts'
import { valueComparator } from './compare.ts'
import { deserializeBinaryRow } from './binary-row.ts'
import { physicalEncoder } from './parquet-types.ts'
import { KEY_FIELD_PREFIX, describeKey } from './data-file-layout.ts'
import type { ByteSource, FileExpectation } from '../store/byte-source.ts'

function describeKeyOf(key: ArrayLike<unknown>): string {
  return describeKey(Array.from(key) as Value[])
}

/**
 * What a read of one file checks against its manifest entry, keys compared in the stored
 * terms the reader holds them in (Values, or physical values for the columnar reader). No key
 * may be below the one before it (files are sorted by key: a data file holds a key once, a
 * changelog file a key's changes in a row) and every key lies within the entry's min/max key;
 * a read of the whole file must also begin at minKey, end at maxKey, and give the entry's row
 * count and retraction count. A violation is a CorruptFileError.
 */
export class ManifestCheck {
  readonly file: string
  readonly expect: FileExpectation
  readonly minKey: unknown[]
  readonly maxKey: unknown[]
  readonly #fns: ((a: Value, b: Value) => number)[]
  /** the first and the last key checked, to order the next batch's first key after the last */
  #first: unknown[] | null = null
  #last: unknown[] | null = null
  #rows = 0
  #retracts = 0

  constructor(file: string, expect: FileExpectation, keyFields: DataField[], physical: boolean) {
    this.file = file
    this.expect = expect
    const types = keyFields.map((f) => f.type)
    let min: Value[]
    let max: Value[]
    try {
      min = deserializeBinaryRow(types, expect.minKey)
      max = deserializeBinaryRow(types, expect.maxKey)
    } catch (e) {
      throw new CorruptFileError(file, `the manifest's minKey/maxKey do not decode as the key (${(e as Error).message})`, { cause: e })
    }
    if (physical) {
      const enc = keyFields.map((f) => physicalEncoder(KEY_FIELD_PREFIX + f.name, f.type))
      this.minKey = min.map((v, i) => enc[i](v))
      this.maxKey = max.map((v, i) => enc[i](v))
    } else {
      this.minKey = min
      this.maxKey = max
    }
    this.#fns = types.map(valueComparator)
  }

  fail(problem: string): never {
    throw new CorruptFileError(this.file, `${problem}; the file is damaged or is not the file its manifest entry describes`)
  }

  /**
   * The footer's row count, checked when the file is opened (no key is decoded for it): its
   * row groups' sum, and the entry's.
   */
  static footerRows(src: ByteSource, rows: number, groupRows: number): void {
    const expect = src.expect
    if (expect === undefined) return
    const file = src.name ?? 'data file'
    if (rows !== groupRows) throw new CorruptFileError(file, `footer says ${rows} rows, its row groups hold ${groupRows}`)
    if (BigInt(rows) !== expect.rowCount) throw new CorruptFileError(file, `footer says ${rows} rows, the manifest says ${expect.rowCount}; the file is damaged or is not the file its manifest entry describes`)
  }

  /** Order of two values of key field i. */
  compareField(i: number, a: unknown, b: unknown): number {
    return this.#fns[i](a as Value, b as Value)
  }

  /** Order of two keys. */
  compare(a: ArrayLike<unknown>, b: ArrayLike<unknown>): number {
    const fns = this.#fns
    for (let i = 0; i < fns.length; i++) {
      const c = fns[i](a[i] as Value, b[i] as Value)
      if (c !== 0) return c
    }
    return 0
  }

  /**
   * The first row r in [1, n) of the key columns `cols` whose key is below row r - 1's, or 0
   * when they are in order. A typed single key column is walked without a comparator call.
   */
  firstDisorder(cols: readonly ArrayLike<unknown>[], n: number): number {
    if (cols.length === 1) {
      const a = cols[0]
      if (a instanceof Int32Array || a instanceof Int16Array || a instanceof Int8Array) {
        for (let r = 1; r < n; r++) if (a[r] < a[r - 1]) return r
        return 0
      }
      if (a instanceof BigInt64Array) {
        // as int32 halves (high signed, low unsigned): no bigint made per row
        const w = new Int32Array(a.buffer, a.byteOffset, n * 2)
        for (let r = 1; r < n; r++) {
          const hi = w[2 * r + 1]
          const prevHi = w[2 * r - 1]
          if (hi < prevHi || (hi === prevHi && w[2 * r] >>> 0 < w[2 * r - 2] >>> 0)) return r
        }
        return 0
      }
      for (let r = 1; r < n; r++) if (this.#fieldBelow(0, a[r - 1], a[r]) > 0) return r
      return 0
    }
    const nk = cols.length
    for (let r = 1; r < n; r++) {
      let c = 0
      for (let i = 0; i < nk && c === 0; i++) c = this.#fieldBelow(i, cols[i][r - 1], cols[i][r])
      if (c > 0) return r
    }
    return 0
  }

  /** Whether the key `cur`, read after `prev`, is below it (the row path's keys). */
  below(prev: readonly unknown[], cur: readonly unknown[]): boolean {
    let c = 0
    for (let i = 0; i < prev.length && c === 0; i++) c = this.#fieldBelow(i, prev[i], cur[i])
    return c > 0
  }

  /**
   * > 0 when `cur` is below `prev` in key field i, < 0 above, 0 equal. Strings are compared by
   * UTF-16 units first (no scan for surrogates, which the exact order needs) and by the exact
   * order only when those put `cur` below: a pair out of order only in code point order
   * (a surrogate pair against U+E000..U+FFFF) passes, a pair in order never fails.
   */
  #fieldBelow(i: number, prev: unknown, cur: unknown): number {
    if (prev === cur) return 0
    const t = typeof prev
    if (t === typeof cur) {
      // (bigints are equal only when ===; numbers in order by < are in order by compareFloats too)
      if (t === 'bigint') return (cur as bigint) < (prev as bigint) ? 1 : -1
      if ((t === 'string' || t === 'number') && (prev as number) < (cur as number)) return -1
    }
    return this.#fns[i](prev as Value, cur as Value)
  }

  /** The first key of a batch: not below the last key checked, nor the first below minKey. */
  #next(key: ArrayLike<unknown>): void {
    const last = this.#last
    if (last === null) {
      this.#first = Array.from(key)
      if (this.compare(key, this.minKey) < 0) this.fail(`key ${describeKeyOf(key)} is below the manifest's minKey ${describeKeyOf(this.minKey)}`)
    } else if (this.compare(last, key) > 0) {
      this.fail(`key ${describeKeyOf(key)} follows ${describeKeyOf(last)}: rows are sorted by key`)
    }
  }

  /**
   * A batch of rows read in file order, `n` of them: `keyAt(r)` row r's key (called for the
   * first and the last, and a bad row), `disorder()` the first row whose key is below the one
   * before it, or 0 (the caller's loop, made for its columns: `firstDisorder`), `retracts` the
   * batch's -U/-D rows.
   */
  batch(n: number, keyAt: (r: number) => unknown[], disorder: () => number, retracts: number): void {
    if (n === 0) return
    const first = keyAt(0)
    this.#next(first)
    const bad = disorder()
    if (bad > 0) this.fail(`key ${describeKeyOf(keyAt(bad))} follows ${describeKeyOf(keyAt(bad - 1))}: rows are sorted by key`)
    const last = n === 1 ? first : keyAt(n - 1)
    if (this.compare(last, this.maxKey) > 0) this.fail(`key ${describeKeyOf(last)} is above the manifest's maxKey ${describeKeyOf(this.maxKey)}`)
    this.#last = last
    this.#rows += n
    this.#retracts += retracts
  }

  /** A read of the whole file (no rows left out) ended: it began at minKey, ended at maxKey, and read every row. */
  whole(): void {
    const { rowCount, deleteRowCount } = this.expect
    const firstKey = this.#first
    if (BigInt(this.#rows) !== rowCount) this.fail(`read ${this.#rows} rows, the manifest says ${rowCount}`)
    if (firstKey !== null && this.compare(firstKey, this.minKey) !== 0) this.fail(`first key ${describeKeyOf(firstKey)}, the manifest's minKey is ${describeKeyOf(this.minKey)}`)
    if (this.#last !== null && this.compare(this.#last, this.maxKey) !== 0) this.fail(`last key ${describeKeyOf(this.#last)}, the manifest's maxKey is ${describeKeyOf(this.maxKey)}`)
    if (deleteRowCount !== null && BigInt(this.#retracts) !== deleteRowCount) this.fail(`read ${this.#retracts} retractions (-U/-D), the manifest says ${deleteRowCount}`)
  }
}
