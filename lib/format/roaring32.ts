// RoaringBitmap32: Roaring bitmaps in the portable serialization of RoaringFormatSpec; the 64-bit
// "array of 32-bit bitmaps" layout that Iceberg and Paimon use for deletion vectors is roaring64.ts
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

import { StrataInputError } from '../errors.ts'
import { ARRAY_MAX, BITMAP_BYTES, BITMAP_WORDS, type Container, NO_OFFSET_THRESHOLD, SERIAL_COOKIE, SERIAL_COOKIE_NO_RUNCONTAINER, TWO_POW_32, checkPosition, checkRange, cloneContainer, containerAdd, containerAddRange, containerHas, containerUnion, corrupt, popcount, runCount, setBitRange, trailingZeros, writeRuns } from './roaring-container.ts'

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
