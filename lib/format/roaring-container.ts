// The containers of a 32-bit Roaring bitmap (an array of up to 4096 sorted u16 values, or a
// 65536-bit bitmap), their operations, their run form on the wire, and the argument checks.

import { StrataInputError } from '../errors.ts'

/** Largest cardinality of an array container (Java `ArrayContainer.DEFAULT_MAX_SIZE`). */
export const ARRAY_MAX = 4096
/** A bitmap container: 65536 bits as 2048 little-endian 32-bit words. */
export const BITMAP_WORDS = 2048
export const BITMAP_BYTES = 8192
/** RoaringFormatSpec cookies. */
export const SERIAL_COOKIE_NO_RUNCONTAINER = 12346
export const SERIAL_COOKIE = 12347
/** With run containers, the offset header is written only from this many containers on. */
export const NO_OFFSET_THRESHOLD = 4
export const TWO_POW_32 = 4294967296

interface ArrayContainer {
  kind: 'array'
  /** sorted, distinct; only `values[0, card)` is meaningful (the rest is spare capacity) */
  values: Uint16Array
  card: number
}

interface BitmapContainer {
  kind: 'bitmap'
  words: Uint32Array
  card: number
}

export type Container = ArrayContainer | BitmapContainer

export function popcount(x: number): number {
  x = x >>> 0
  x -= (x >>> 1) & 0x55555555
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333)
  x = (x + (x >>> 4)) & 0x0f0f0f0f
  return Math.imul(x, 0x01010101) >>> 24
}

export function trailingZeros(x: number): number {
  return 31 - Math.clz32(x & -x)
}

/** First index in `values[0, card)` whose value is ≥ x. */
function lowerBound(values: Uint16Array, card: number, x: number): number {
  let lo = 0
  let hi = card
  while (lo < hi) {
    const mid = (lo + hi) >>> 1
    if (values[mid] < x) lo = mid + 1
    else hi = mid
  }
  return lo
}

/** Sets bits [lo, hi] (inclusive) and returns how many were newly set. */
export function setBitRange(words: Uint32Array, lo: number, hi: number): number {
  const first = lo >>> 5
  const last = hi >>> 5
  let added = 0
  for (let w = first; w <= last; w++) {
    let mask = -1
    if (w === first) mask &= -1 << (lo & 31)
    if (w === last) mask &= -1 >>> (31 - (hi & 31))
    const old = words[w]
    added += popcount(mask & ~old)
    words[w] = old | mask
  }
  return added
}

function bitmapOfArray(values: Uint16Array, card: number): BitmapContainer {
  const words = new Uint32Array(BITMAP_WORDS)
  for (let i = 0; i < card; i++) words[values[i] >>> 5] |= 1 << (values[i] & 31)
  return { kind: 'bitmap', words, card }
}

function rangeContainer(lo: number, hi: number): Container {
  const len = hi - lo + 1
  if (len <= ARRAY_MAX) {
    const values = new Uint16Array(len)
    for (let i = 0; i < len; i++) values[i] = lo + i
    return { kind: 'array', values, card: len }
  }
  const words = new Uint32Array(BITMAP_WORDS)
  return { kind: 'bitmap', words, card: setBitRange(words, lo, hi) }
}

export function containerHas(c: Container, low: number): boolean {
  if (c.kind === 'bitmap') return (c.words[low >>> 5] & (1 << (low & 31))) !== 0
  const i = lowerBound(c.values, c.card, low)
  return i < c.card && c.values[i] === low
}

/** Adds `low`, mutating `c` where possible; returns the container to keep. */
export function containerAdd(c: Container, low: number): Container {
  if (c.kind === 'bitmap') {
    const bit = 1 << (low & 31)
    const w = low >>> 5
    if ((c.words[w] & bit) === 0) {
      c.words[w] |= bit
      c.card++
    }
    return c
  }
  const i = lowerBound(c.values, c.card, low)
  if (i < c.card && c.values[i] === low) return c
  if (c.card === ARRAY_MAX) {
    const b = bitmapOfArray(c.values, c.card)
    return containerAdd(b, low)
  }
  if (c.values.length === c.card) {
    const grown = new Uint16Array(Math.min(ARRAY_MAX, Math.max(4, c.card * 2)))
    grown.set(c.values.subarray(0, c.card))
    c.values = grown
  }
  c.values.copyWithin(i + 1, i, c.card)
  c.values[i] = low
  c.card++
  return c
}

/** Adds [lo, hi] (inclusive), mutating `c` where possible; returns the container to keep. */
export function containerAddRange(c: Container | undefined, lo: number, hi: number): Container {
  if (c === undefined) return rangeContainer(lo, hi)
  if (c.kind === 'bitmap') {
    c.card += setBitRange(c.words, lo, hi)
    return c
  }
  const len = hi - lo + 1
  const a = lowerBound(c.values, c.card, lo)
  const b = lowerBound(c.values, c.card, hi + 1)
  const newCard = c.card - (b - a) + len
  if (newCard <= ARRAY_MAX) {
    const values = new Uint16Array(newCard)
    values.set(c.values.subarray(0, a))
    for (let i = 0; i < len; i++) values[a + i] = lo + i
    values.set(c.values.subarray(b, c.card), a + len)
    return { kind: 'array', values, card: newCard }
  }
  const bm = bitmapOfArray(c.values, c.card)
  bm.card += setBitRange(bm.words, lo, hi)
  return bm
}

export function containerUnion(a: Container, b: Container): Container {
  if (a.kind === 'array' && b.kind === 'array') {
    const merged = new Uint16Array(a.card + b.card)
    let i = 0
    let j = 0
    let k = 0
    while (i < a.card && j < b.card) {
      const x = a.values[i]
      const y = b.values[j]
      if (x < y) {
        merged[k++] = x
        i++
      } else if (y < x) {
        merged[k++] = y
        j++
      } else {
        merged[k++] = x
        i++
        j++
      }
    }
    while (i < a.card) merged[k++] = a.values[i++]
    while (j < b.card) merged[k++] = b.values[j++]
    if (k <= ARRAY_MAX) return { kind: 'array', values: merged.slice(0, k), card: k }
    return bitmapOfArray(merged, k)
  }
  if (a.kind === 'array') return containerUnion(b, a)
  const words = a.words.slice()
  if (b.kind === 'array') {
    let card = a.card
    for (let i = 0; i < b.card; i++) {
      const v = b.values[i]
      const bit = 1 << (v & 31)
      const w = v >>> 5
      if ((words[w] & bit) === 0) {
        words[w] |= bit
        card++
      }
    }
    return { kind: 'bitmap', words, card }
  }
  let card = 0
  for (let w = 0; w < BITMAP_WORDS; w++) {
    words[w] |= b.words[w]
    card += popcount(words[w])
  }
  return { kind: 'bitmap', words, card }
}

export function cloneContainer(c: Container): Container {
  if (c.kind === 'array') return { kind: 'array', values: c.values.slice(0, c.card), card: c.card }
  return { kind: 'bitmap', words: c.words.slice(), card: c.card }
}

export function runCount(c: Container): number {
  if (c.kind === 'array') {
    let runs = c.card > 0 ? 1 : 0
    for (let i = 1; i < c.card; i++) if (c.values[i] !== c.values[i - 1] + 1) runs++
    return runs
  }
  let runs = 0
  let carry = 0
  for (let w = 0; w < BITMAP_WORDS; w++) {
    const word = c.words[w]
    runs += popcount(word & ~((word << 1) | carry))
    carry = word >>> 31
  }
  return runs
}

function nextSetBit(words: Uint32Array, from: number): number {
  if (from >= 65536) return -1
  let w = from >>> 5
  let word = words[w] & (-1 << (from & 31))
  while (word === 0) {
    if (++w === BITMAP_WORDS) return -1
    word = words[w]
  }
  return w * 32 + trailingZeros(word)
}

function nextClearBit(words: Uint32Array, from: number): number {
  if (from >= 65536) return 65536
  let w = from >>> 5
  let word = ~words[w] & (-1 << (from & 31))
  while (word === 0) {
    if (++w === BITMAP_WORDS) return 65536
    word = ~words[w]
  }
  return w * 32 + trailingZeros(word)
}

/** Writes `c` as a run container: u16 run count, (start, length − 1) pairs. Returns the end. */
export function writeRuns(dv: DataView, p: number, c: Container, runs: number): number {
  dv.setUint16(p, runs, true)
  p += 2
  if (c.kind === 'array') {
    let i = 0
    while (i < c.card) {
      const start = c.values[i]
      let j = i + 1
      while (j < c.card && c.values[j] === c.values[j - 1] + 1) j++
      dv.setUint16(p, start, true)
      dv.setUint16(p + 2, j - i - 1, true)
      p += 4
      i = j
    }
    return p
  }
  let from = 0
  for (;;) {
    const start = nextSetBit(c.words, from)
    if (start < 0) return p
    const end = nextClearBit(c.words, start)
    dv.setUint16(p, start, true)
    dv.setUint16(p + 2, end - start - 1, true)
    p += 4
    from = end
  }
}

export function corrupt(message: string): Error {
  return new Error(`corrupt Roaring bitmap: ${message}`)
}

export function checkPosition(kind: string, index: number, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new StrataInputError(
      `${kind}: positions[${index}] = ${value}, expected an integer in [0, ${max}]`,
    )
  }
}

export function checkRange(kind: string, start: number, end: number, maxEnd: number): void {
  const integers = Number.isInteger(start) && Number.isInteger(end)
  if (!integers || start < 0 || start > end || end > maxEnd) {
    throw new StrataInputError(
      `${kind}.addRange: [start, endExclusive) = [${start}, ${end}), expected integers with ` +
        `0 <= start <= endExclusive <= ${maxEnd}`,
    )
  }
}
