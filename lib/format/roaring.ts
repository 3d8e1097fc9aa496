// Roaring bitmaps in the portable serialization of RoaringFormatSpec, 32-bit and the 64-bit
// "array of 32-bit bitmaps" layout that Iceberg and Paimon use for deletion vectors
// (docs/format.md "Deletion-vector index files"; paimon-common utils/RoaringBitmap32.java, OptimizedRoaringBitmap64.java).
//
// Written here rather than taken from npm: `roaring` is a native addon (a platform binary per
// install, awkward for Lambda bundles) and the WASM builds of CRoaring are 32-bit only, need an
// async start-up and explicit freeing of every bitmap on the WASM heap. What deletion vectors
// need (build from sorted positions, union, iterate, byte-exact portable bytes) is small.
//
// In memory a container is an array (≤ 4096 sorted u16 values) or a bitmap (65536 bits), exactly
// the forms Java holds after `add`/`or`. Run containers exist only on the wire: `serialize`
// decides per container as Java's `runOptimize` does (ArrayContainer / BitmapContainer
// `.runOptimize`): runs are written when 2 + 4·runs is strictly smaller than 2·card (array) or
// 8192 (bitmap). One divergence remains: Java keeps a container that is already a run container
// in memory (e.g. just deserialized) when its run form is merely not larger (RunContainer
// `toEfficientContainer`), so on the two tie cases card = 2·runs or 2·runs + 1 (card ≤ 4096)
// Java may keep runs where this writer, like a Java bitmap built by `add`, writes an array.

import { StrataInputError } from '../types.ts'

/** Largest cardinality of an array container (Java `ArrayContainer.DEFAULT_MAX_SIZE`). */
const ARRAY_MAX = 4096
/** A bitmap container: 65536 bits as 2048 little-endian 32-bit words. */
const BITMAP_WORDS = 2048
const BITMAP_BYTES = 8192
/** RoaringFormatSpec cookies. */
const SERIAL_COOKIE_NO_RUNCONTAINER = 12346
const SERIAL_COOKIE = 12347
/** With run containers, the offset header is written only from this many containers on. */
const NO_OFFSET_THRESHOLD = 4
const TWO_POW_32 = 4294967296
/** Largest 64-bit key whose positions stay exact JavaScript numbers (key · 2^32 + low < 2^53). */
const MAX_KEY_64 = 0x1fffff

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

type Container = ArrayContainer | BitmapContainer

function popcount(x: number): number {
  x = x >>> 0
  x -= (x >>> 1) & 0x55555555
  x = (x & 0x33333333) + ((x >>> 2) & 0x33333333)
  x = (x + (x >>> 4)) & 0x0f0f0f0f
  return Math.imul(x, 0x01010101) >>> 24
}

function trailingZeros(x: number): number {
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
function setBitRange(words: Uint32Array, lo: number, hi: number): number {
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

function containerHas(c: Container, low: number): boolean {
  if (c.kind === 'bitmap') return (c.words[low >>> 5] & (1 << (low & 31))) !== 0
  const i = lowerBound(c.values, c.card, low)
  return i < c.card && c.values[i] === low
}

/** Adds `low`, mutating `c` where possible; returns the container to keep. */
function containerAdd(c: Container, low: number): Container {
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
function containerAddRange(c: Container | undefined, lo: number, hi: number): Container {
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

function containerUnion(a: Container, b: Container): Container {
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

function cloneContainer(c: Container): Container {
  if (c.kind === 'array') return { kind: 'array', values: c.values.slice(0, c.card), card: c.card }
  return { kind: 'bitmap', words: c.words.slice(), card: c.card }
}

function runCount(c: Container): number {
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
function writeRuns(dv: DataView, p: number, c: Container, runs: number): number {
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

function corrupt(message: string): Error {
  return new Error(`corrupt Roaring bitmap: ${message}`)
}

function checkPosition(kind: string, index: number, value: number, max: number): void {
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw new StrataInputError(
      `${kind}: positions[${index}] = ${value}, expected an integer in [0, ${max}]`,
    )
  }
}

function checkRange(kind: string, start: number, end: number, maxEnd: number): void {
  const integers = Number.isInteger(start) && Number.isInteger(end)
  if (!integers || start < 0 || start > end || end > maxEnd) {
    throw new StrataInputError(
      `${kind}.addRange: [start, endExclusive) = [${start}, ${end}), expected integers with ` +
        `0 <= start <= endExclusive <= ${maxEnd}`,
    )
  }
}

/** A set of unsigned 32-bit integers (Java `org.roaringbitmap.RoaringBitmap`). */
export class RoaringBitmap32 {
  /** high 16 bits of each container, strictly ascending */
  private keys: number[] = []
  /** never empty */
  private containers: Container[] = []

  /** Builds from ascending positions (duplicates allowed) in one pass per container. */
  static fromSorted(positions: ArrayLike<number>): RoaringBitmap32 {
    const n = positions.length
    for (let i = 0; i < n; i++) {
      const v = positions[i]
      checkPosition('RoaringBitmap32.fromSorted', i, v, 0xffffffff)
      if (i > 0 && v < positions[i - 1]) {
        throw new StrataInputError(
          `RoaringBitmap32.fromSorted: positions[${i}] = ${v} < positions[${i - 1}] = ` +
            `${positions[i - 1]}, expected ascending order`,
        )
      }
    }
    const out = new RoaringBitmap32()
    let i = 0
    while (i < n) {
      const key = positions[i] >>> 16
      let j = i
      let distinct = 0
      let last = -1
      while (j < n && positions[j] >>> 16 === key) {
        if (positions[j] !== last) distinct++
        last = positions[j]
        j++
      }
      let c: Container
      if (distinct <= ARRAY_MAX) {
        const values = new Uint16Array(distinct)
        let k = 0
        for (let p = i; p < j; p++) {
          const low = positions[p] & 0xffff
          if (k === 0 || values[k - 1] !== low) values[k++] = low
        }
        c = { kind: 'array', values, card: distinct }
      } else {
        const words = new Uint32Array(BITMAP_WORDS)
        for (let p = i; p < j; p++) words[(positions[p] >>> 5) & 0x7ff] |= 1 << (positions[p] & 31)
        c = { kind: 'bitmap', words, card: distinct }
      }
      out.keys.push(key)
      out.containers.push(c)
      i = j
    }
    return out
  }

  /** Reads one portable bitmap starting at `offset`; returns it and the offset just past it. */
  static readFrom(bytes: Uint8Array, offset: number): { bitmap: RoaringBitmap32; end: number } {
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    let p = offset
    const need = (n: number, what: string): void => {
      if (p + n > bytes.length) {
        throw corrupt(`truncated ${what}: needs ${n} bytes at byte ${p}, ${bytes.length - p} left`)
      }
    }
    need(4, 'cookie')
    const cookie = dv.getUint32(p, true)
    p += 4
    let count: number
    let runFlags: Uint8Array | null = null
    if ((cookie & 0xffff) === SERIAL_COOKIE) {
      count = (cookie >>> 16) + 1
      const flagBytes = (count + 7) >>> 3
      need(flagBytes, 'run-container bitset')
      runFlags = bytes.subarray(p, p + flagBytes)
      p += flagBytes
    } else if (cookie === SERIAL_COOKIE_NO_RUNCONTAINER) {
      need(4, 'container count')
      count = dv.getUint32(p, true)
      p += 4
      if (count > 65536) throw corrupt(`container count ${count} at byte ${p - 4}, at most 65536`)
    } else {
      throw corrupt(
        `cookie ${cookie} at byte ${offset}, expected ${SERIAL_COOKIE_NO_RUNCONTAINER} or ` +
          `${SERIAL_COOKIE} in the low 16 bits`,
      )
    }
    need(4 * count, 'key/cardinality header')
    const keys = new Array<number>(count)
    const cards = new Array<number>(count)
    for (let i = 0; i < count; i++) {
      keys[i] = dv.getUint16(p, true)
      cards[i] = dv.getUint16(p + 2, true) + 1
      p += 4
      if (i > 0 && keys[i] <= keys[i - 1]) {
        throw corrupt(`container keys not ascending: ${keys[i - 1]} then ${keys[i]}`)
      }
    }
    // Offsets are redundant for a sequential reader (Java's `RoaringArray.deserialize` skips them).
    if (runFlags === null || count >= NO_OFFSET_THRESHOLD) {
      need(4 * count, 'offset header')
      p += 4 * count
    }
    const out = new RoaringBitmap32()
    for (let i = 0; i < count; i++) {
      const card = cards[i]
      const isRun = runFlags !== null && ((runFlags[i >>> 3] >>> (i & 7)) & 1) === 1
      let c: Container
      if (isRun) {
        need(2, `run count of container ${i}`)
        const runs = dv.getUint16(p, true)
        p += 2
        need(4 * runs, `runs of container ${i}`)
        let total = 0
        let prevEnd = -1
        const runStarts = new Uint32Array(runs)
        const runEnds = new Uint32Array(runs)
        for (let r = 0; r < runs; r++) {
          const start = dv.getUint16(p, true)
          const end = start + dv.getUint16(p + 2, true)
          p += 4
          if (start <= prevEnd || end > 0xffff) {
            throw corrupt(`run [${start}, ${end}] of container ${i} overlaps or exceeds 65535`)
          }
          runStarts[r] = start
          runEnds[r] = end
          total += end - start + 1
          prevEnd = end
        }
        if (total !== card) {
          throw corrupt(`run container ${i} holds ${total} values, header says ${card}`)
        }
        if (card <= ARRAY_MAX) {
          const values = new Uint16Array(card)
          let k = 0
          for (let r = 0; r < runs; r++) {
            for (let v = runStarts[r]; v <= runEnds[r]; v++) values[k++] = v
          }
          c = { kind: 'array', values, card }
        } else {
          const words = new Uint32Array(BITMAP_WORDS)
          for (let r = 0; r < runs; r++) setBitRange(words, runStarts[r], runEnds[r])
          c = { kind: 'bitmap', words, card }
        }
      } else if (card > ARRAY_MAX) {
        need(BITMAP_BYTES, `bitmap container ${i}`)
        const words = new Uint32Array(BITMAP_WORDS)
        let total = 0
        for (let w = 0; w < BITMAP_WORDS; w++) {
          words[w] = dv.getUint32(p, true)
          total += popcount(words[w])
          p += 4
        }
        if (total !== card) {
          throw corrupt(`bitmap container ${i} holds ${total} values, header says ${card}`)
        }
        c = { kind: 'bitmap', words, card }
      } else {
        need(2 * card, `array container ${i}`)
        const values = new Uint16Array(card)
        for (let k = 0; k < card; k++) {
          values[k] = dv.getUint16(p, true)
          p += 2
          if (k > 0 && values[k] <= values[k - 1]) {
            throw corrupt(`array container ${i} not strictly ascending at value ${k}`)
          }
        }
        c = { kind: 'array', values, card }
      }
      out.keys.push(keys[i])
      out.containers.push(c)
    }
    return { bitmap: out, end: p }
  }

  /** Reads a portable bitmap that fills `bytes` exactly. */
  static deserialize(bytes: Uint8Array): RoaringBitmap32 {
    const { bitmap, end } = RoaringBitmap32.readFrom(bytes, 0)
    if (end !== bytes.length) {
      throw corrupt(`${bytes.length - end} trailing bytes after the bitmap (ends at byte ${end})`)
    }
    return bitmap
  }

  private find(key: number): number {
    let lo = 0
    let hi = this.keys.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1
      const k = this.keys[mid]
      if (k < key) lo = mid + 1
      else if (k > key) hi = mid - 1
      else return mid
    }
    return -(lo + 1)
  }

  add(x: number): void {
    checkPosition('RoaringBitmap32.add', 0, x, 0xffffffff)
    const key = x >>> 16
    const i = this.find(key)
    if (i >= 0) {
      this.containers[i] = containerAdd(this.containers[i], x & 0xffff)
    } else {
      const at = -i - 1
      this.keys.splice(at, 0, key)
      this.containers.splice(at, 0, { kind: 'array', values: Uint16Array.of(x & 0xffff), card: 1 })
    }
  }

  addRange(start: number, endExclusive: number): void {
    checkRange('RoaringBitmap32', start, endExclusive, TWO_POW_32)
    if (start === endExclusive) return
    const last = endExclusive - 1
    const firstKey = start >>> 16
    const lastKey = last >>> 16
    for (let key = firstKey; key <= lastKey; key++) {
      const lo = key === firstKey ? start & 0xffff : 0
      const hi = key === lastKey ? last & 0xffff : 0xffff
      const i = this.find(key)
      if (i >= 0) {
        this.containers[i] = containerAddRange(this.containers[i], lo, hi)
      } else {
        const at = -i - 1
        this.keys.splice(at, 0, key)
        this.containers.splice(at, 0, containerAddRange(undefined, lo, hi))
      }
    }
  }

  has(x: number): boolean {
    if (!Number.isInteger(x) || x < 0 || x > 0xffffffff) return false
    const i = this.find(x >>> 16)
    return i >= 0 && containerHas(this.containers[i], x & 0xffff)
  }

  get cardinality(): number {
    let n = 0
    for (const c of this.containers) n += c.card
    return n
  }

  /** The union as a new bitmap; neither input changes. */
  or(other: RoaringBitmap32): RoaringBitmap32 {
    const out = new RoaringBitmap32()
    let i = 0
    let j = 0
    while (i < this.keys.length || j < other.keys.length) {
      const a = i < this.keys.length ? this.keys[i] : Infinity
      const b = j < other.keys.length ? other.keys[j] : Infinity
      if (a < b) {
        out.keys.push(a)
        out.containers.push(cloneContainer(this.containers[i++]))
      } else if (b < a) {
        out.keys.push(b)
        out.containers.push(cloneContainer(other.containers[j++]))
      } else {
        out.keys.push(a)
        out.containers.push(containerUnion(this.containers[i++], other.containers[j++]))
      }
    }
    return out
  }

  clone(): RoaringBitmap32 {
    const out = new RoaringBitmap32()
    out.keys = this.keys.slice()
    out.containers = this.containers.map(cloneContainer)
    return out
  }

  toSortedArray(): Uint32Array {
    const out = new Uint32Array(this.cardinality)
    let p = 0
    for (let i = 0; i < this.keys.length; i++) {
      const base = this.keys[i] * 65536
      const c = this.containers[i]
      if (c.kind === 'array') {
        for (let k = 0; k < c.card; k++) out[p++] = base + c.values[k]
      } else {
        for (let w = 0; w < BITMAP_WORDS; w++) {
          let word = c.words[w]
          while (word !== 0) {
            out[p++] = base + w * 32 + trailingZeros(word)
            word &= word - 1
          }
        }
      }
    }
    return out
  }

  /** Portable serialization, with run containers chosen as Java's `runOptimize` would. */
  serialize(): Uint8Array {
    const count = this.keys.length
    const runs = new Int32Array(count)
    let hasRun = false
    let body = 0
    for (let i = 0; i < count; i++) {
      const c = this.containers[i]
      const r = runCount(c)
      const plainSize = c.kind === 'array' ? 2 * c.card : BITMAP_BYTES
      if (2 + 4 * r < plainSize) {
        runs[i] = r
        hasRun = true
        body += 2 + 4 * r
      } else {
        runs[i] = -1
        body += plainSize
      }
    }
    const withOffsets = !hasRun || count >= NO_OFFSET_THRESHOLD
    const header = hasRun
      ? 4 + ((count + 7) >>> 3) + 4 * count + (withOffsets ? 4 * count : 0)
      : 8 + 8 * count
    const out = new Uint8Array(header + body)
    const dv = new DataView(out.buffer)
    let p = 0
    if (hasRun) {
      dv.setUint32(p, (SERIAL_COOKIE | ((count - 1) << 16)) >>> 0, true)
      p += 4
      for (let i = 0; i < count; i++) if (runs[i] >= 0) out[p + (i >>> 3)] |= 1 << (i & 7)
      p += (count + 7) >>> 3
    } else {
      dv.setUint32(p, SERIAL_COOKIE_NO_RUNCONTAINER, true)
      dv.setUint32(p + 4, count, true)
      p += 8
    }
    for (let i = 0; i < count; i++) {
      dv.setUint16(p, this.keys[i], true)
      dv.setUint16(p + 2, this.containers[i].card - 1, true)
      p += 4
    }
    if (withOffsets) {
      let offset = header
      for (let i = 0; i < count; i++) {
        dv.setUint32(p, offset, true)
        p += 4
        const c = this.containers[i]
        offset += runs[i] >= 0 ? 2 + 4 * runs[i] : c.kind === 'array' ? 2 * c.card : BITMAP_BYTES
      }
    }
    for (let i = 0; i < count; i++) {
      const c = this.containers[i]
      if (runs[i] >= 0) {
        p = writeRuns(dv, p, c, runs[i])
      } else if (c.kind === 'array') {
        for (let k = 0; k < c.card; k++) {
          dv.setUint16(p, c.values[k], true)
          p += 2
        }
      } else {
        for (let w = 0; w < BITMAP_WORDS; w++) {
          dv.setUint32(p, c.words[w], true)
          p += 4
        }
      }
    }
    return out
  }
}

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
