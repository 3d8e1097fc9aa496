// RoaringBitmap64: positions below 2^53 as 32-bit bitmaps keyed by their high 32 bits, in the
// "array of 32-bit bitmaps" serialization Iceberg and Paimon use for deletion vectors.

import { StrataInputError } from '../errors.ts'
import { RoaringBitmap32 } from './roaring32.ts'
import { TWO_POW_32, checkPosition, checkRange, corrupt } from './roaring-container.ts'

/** Largest 64-bit key whose positions stay exact JavaScript numbers (key · 2^32 + low < 2^53). */
const MAX_KEY_64 = 0x1fffff


/**
 * A set of non-negative integers below 2^53, as 32-bit bitmaps keyed by the high 32 bits
 * (Iceberg `RoaringPositionBitmap`, Paimon `OptimizedRoaringBitmap64`). Like those, it keeps a
 * dense array of bitmaps from key 0 to the highest key ever touched, and serializes every slot,
 * empty ones included: u64 LE count, then per slot u32 LE key and a portable 32-bit bitmap.
 */
export class RoaringBitmap64 {
  /** index = key; holes are empty bitmaps */
  private bitmaps: (RoaringBitmap32 | undefined)[] = []

  static fromSorted(positions: ArrayLike<number>): RoaringBitmap64 {
    const n = positions.length
    for (let i = 0; i < n; i++) {
      const v = positions[i]
      checkPosition('RoaringBitmap64.fromSorted', i, v, Number.MAX_SAFE_INTEGER)
      if (i > 0 && v < positions[i - 1]) {
        throw new StrataInputError(
          `RoaringBitmap64.fromSorted: positions[${i}] = ${v} < positions[${i - 1}] = ` +
            `${positions[i - 1]}, expected ascending order`,
        )
      }
    }
    const out = new RoaringBitmap64()
    let i = 0
    while (i < n) {
      const key = Math.floor(positions[i] / TWO_POW_32)
      let j = i
      while (j < n && Math.floor(positions[j] / TWO_POW_32) === key) j++
      const lows = new Uint32Array(j - i)
      const base = key * TWO_POW_32
      for (let p = i; p < j; p++) lows[p - i] = positions[p] - base
      out.put(key, RoaringBitmap32.fromSorted(lows))
      i = j
    }
    return out
  }

  /** The 32-bit bitmap as key 0 (Paimon `OptimizedRoaringBitmap64.fromRoaringBitmap32`). */
  static fromBitmap32(bitmap: RoaringBitmap32): RoaringBitmap64 {
    const out = new RoaringBitmap64()
    out.bitmaps = [bitmap.clone()]
    return out
  }

  static readFrom(bytes: Uint8Array, offset: number): { bitmap: RoaringBitmap64; end: number } {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    if (offset + 8 > bytes.length) throw corrupt(`truncated 64-bit bitmap count at byte ${offset}`)
    const countLow = dv.getUint32(offset, true)
    const countHigh = dv.getUint32(offset + 4, true)
    let p = offset + 8
    // 12 bytes is the smallest entry (key + empty bitmap), which bounds a plausible count.
    if (countHigh !== 0 || countLow > 0x7fffffff || countLow * 12 > bytes.length - p) {
      throw corrupt(
        `64-bit bitmap count ${countHigh * TWO_POW_32 + countLow} at byte ${offset} does not ` +
          `fit the ${bytes.length - p} bytes that follow`,
      )
    }
    const out = new RoaringBitmap64()
    let lastKey = -1
    for (let n = 0; n < countLow; n++) {
      if (p + 4 > bytes.length) throw corrupt(`truncated 64-bit bitmap key at byte ${p}`)
      const key = dv.getUint32(p, true)
      if (key <= lastKey) {
        throw corrupt(`64-bit bitmap keys not ascending: ${lastKey} then ${key} at byte ${p}`)
      }
      if (key > MAX_KEY_64) {
        throw corrupt(
          `64-bit bitmap key ${key} at byte ${p} holds positions ≥ 2^53, beyond the exact ` +
            `range of a JavaScript number (largest key ${MAX_KEY_64})`,
        )
      }
      const read = RoaringBitmap32.readFrom(bytes, p + 4)
      out.put(key, read.bitmap)
      p = read.end
      lastKey = key
    }
    return { bitmap: out, end: p }
  }

  static deserialize(bytes: Uint8Array): RoaringBitmap64 {
    const { bitmap, end } = RoaringBitmap64.readFrom(bytes, 0)
    if (end !== bytes.length) {
      throw corrupt(`${bytes.length - end} trailing bytes after the bitmap (ends at byte ${end})`)
    }
    return bitmap
  }

  /** The bitmap of `key`, growing the dense array as Java's `allocateBitmapsIfNeeded`. */
  private at(key: number): RoaringBitmap32 {
    return this.bitmaps[key] ?? this.put(key, new RoaringBitmap32())
  }

  private put(key: number, bitmap: RoaringBitmap32): RoaringBitmap32 {
    if (this.bitmaps.length <= key) this.bitmaps.length = key + 1
    this.bitmaps[key] = bitmap
    return bitmap
  }

  add(x: number): void {
    checkPosition('RoaringBitmap64.add', 0, x, Number.MAX_SAFE_INTEGER)
    const key = Math.floor(x / TWO_POW_32)
    this.at(key).add(x - key * TWO_POW_32)
  }

  addRange(start: number, endExclusive: number): void {
    checkRange('RoaringBitmap64', start, endExclusive, Number.MAX_SAFE_INTEGER + 1)
    if (start === endExclusive) return
    const firstKey = Math.floor(start / TWO_POW_32)
    const lastKey = Math.floor((endExclusive - 1) / TWO_POW_32)
    for (let key = firstKey; key <= lastKey; key++) {
      const base = key * TWO_POW_32
      const lo = key === firstKey ? start - base : 0
      const hi = key === lastKey ? endExclusive - base : TWO_POW_32
      this.at(key).addRange(lo, hi)
    }
  }

  has(x: number): boolean {
    if (!Number.isSafeInteger(x) || x < 0) return false
    const key = Math.floor(x / TWO_POW_32)
    const b = this.bitmaps[key]
    return b !== undefined && b.has(x - key * TWO_POW_32)
  }

  get cardinality(): number {
    let n = 0
    for (const b of this.bitmaps) if (b !== undefined) n += b.cardinality
    return n
  }

  or(other: RoaringBitmap64): RoaringBitmap64 {
    const out = new RoaringBitmap64()
    const length = Math.max(this.bitmaps.length, other.bitmaps.length)
    out.bitmaps.length = length
    for (let key = 0; key < length; key++) {
      const a = this.bitmaps[key]
      const b = other.bitmaps[key]
      if (a !== undefined && b !== undefined) out.bitmaps[key] = a.or(b)
      else if (a !== undefined) out.bitmaps[key] = a.clone()
      else if (b !== undefined) out.bitmaps[key] = b.clone()
    }
    return out
  }

  clone(): RoaringBitmap64 {
    const out = new RoaringBitmap64()
    out.bitmaps = this.bitmaps.map((b) => b?.clone())
    out.bitmaps.length = this.bitmaps.length
    return out
  }

  toSortedArray(): Float64Array {
    const out = new Float64Array(this.cardinality)
    let p = 0
    for (let key = 0; key < this.bitmaps.length; key++) {
      const b = this.bitmaps[key]
      if (b === undefined) continue
      const base = key * TWO_POW_32
      for (const low of b.toSortedArray()) out[p++] = base + low
    }
    return out
  }

  serialize(): Uint8Array {
    const empty = new RoaringBitmap32()
    const parts: Uint8Array[] = []
    let total = 8
    for (let key = 0; key < this.bitmaps.length; key++) {
      const part = (this.bitmaps[key] ?? empty).serialize()
      parts.push(part)
      total += 4 + part.length
    }
    const out = new Uint8Array(total)
    const dv = new DataView(out.buffer)
    dv.setUint32(0, this.bitmaps.length, true)
    let p = 8
    for (let key = 0; key < parts.length; key++) {
      dv.setUint32(p, key, true)
      out.set(parts[key], p + 4)
      p += 4 + parts[key].length
    }
    return out
  }
}
