// Dictionary encoding of the Parquet encoder: whether a chunk gets a dictionary (a sample, then
// "dictionary + indices at most half of plain"), and the dictionary's entries and indices.

import type { SchemaElement } from 'hyparquet'
import { type Column, Utf8Column } from './columnar-types.ts'
import { Kind, type Prepared, type Utf8Values, u8Units } from './parquet-encode-columns.ts'

// Dictionary

/** FNV-1a of bytes[a, b). */
function hashRange(bytes: Uint8Array, a: number, b: number): number {
  let h = 0x811c9dc5
  for (let i = a; i < b; i++) h = Math.imul(h ^ bytes[i], 0x01000193)
  return h
}

function sameRange(bytes: Uint8Array, a1: number, b1: number, a2: number, b2: number): boolean {
  if (b1 - a1 !== b2 - a2) return false
  for (let i = 0; i < b1 - a1; i++) if (bytes[a1 + i] !== bytes[a2 + i]) return false
  return true
}

const SAMPLE_VALUES = 1000
const SAMPLE_REJECT_RATIO = 0.9

export interface Dictionary {
  /** per non-null value, its entry */
  indices: Int32Array
  /** fixed-width kinds: the entries' first positions among the non-null values */
  firsts: Int32Array | null
  /** object kinds: the entries */
  entries: unknown[] | null
  size: number
  bitWidth: number
}

/** Bits per index of a dictionary of n entries: ceil(log2(n)). */
function indexBits(n: number): number {
  return n <= 1 ? 0 : 32 - Math.clz32(n - 1)
}

function fixedSize(p: Prepared, element: SchemaElement): number {
  switch (p.kind) {
    case Kind.Int32:
    case Kind.Float:
      return 4
    case Kind.Int64:
    case Kind.Double:
      return 8
    case Kind.Fixed:
      return element.type_length ?? 0
    default:
      return -1
  }
}

function objSize(v: unknown): number {
  return typeof v === 'string' ? v.length : (v as Uint8Array).byteLength
}

/** Whether a sample of the rows (nulls included) says a dictionary may pay. */
export function sampleAllows(p: Prepared, element: SchemaElement, col: Column): boolean {
  const n = p.rows
  const sampleSize = Math.min(n, SAMPLE_VALUES)
  if (sampleSize === 0) return false
  const fixed = fixedSize(p, element)
  if (p.words !== null && p.defs === null) return sampleAllowsWords(p.words, p.width, n, sampleSize)
  if (col instanceof Utf8Column) return sampleAllowsUtf8(col, n, sampleSize)
  const c = col as ArrayLike<unknown>
  const prefix = p.kind === Kind.ByteArray ? 4 : 0
  const seen = new Map<unknown, number>()
  let distinct = 0
  let total = 0
  for (let i = 0; i < sampleSize; i++) {
    const at = sampleSize === 1 ? 0 : Math.floor((i * (n - 1)) / (sampleSize - 1))
    let v = c[at] as unknown
    if (v === undefined) v = null
    let key = v
    if (v instanceof Uint8Array) key = latin1(v)
    let size = seen.get(key)
    if (size === undefined) {
      size = v === null ? 0 : fixed >= 0 ? fixed : objSize(v) + prefix
      seen.set(key, size)
      distinct += size
    }
    total += size
  }
  return total > 0 && distinct / total <= SAMPLE_REJECT_RATIO
}

const sampleTable = new Int32Array(4096)
const sampleFirst = new Int32Array(SAMPLE_VALUES)

/**
 * `sampleAllows` of a Utf8Column: the same sample and sizes (a string's UTF-16 length plus
 * 4, a null's 0), distinct values told apart by their bytes.
 */
function sampleAllowsUtf8(col: Utf8Column, n: number, sampleSize: number): boolean {
  const table = sampleTable
  table.fill(0)
  const mask = table.length - 1
  const { bytes, offsets } = col
  let entries = 0
  let distinct = 0
  let total = 0
  for (let i = 0; i < sampleSize; i++) {
    const at = sampleSize === 1 ? 0 : Math.floor((i * (n - 1)) / (sampleSize - 1))
    if (col.isNull(at)) continue
    const a = offsets[at]
    const b = offsets[at + 1]
    const size = col.units(at) + 4
    let h = hashRange(bytes, a, b) & mask
    for (;;) {
      const e = table[h]
      if (e === 0) {
        sampleFirst[entries] = at
        table[h] = ++entries
        distinct += size
        break
      }
      const f = sampleFirst[e - 1]
      if (sameRange(bytes, a, b, offsets[f], offsets[f + 1])) break
      h = (h + 1) & mask
    }
    total += size
  }
  return total > 0 && distinct / total <= SAMPLE_REJECT_RATIO
}

/** `sampleAllows` of a fixed-width column without nulls: distinct sampled values over sampled values (by their bits). */
function sampleAllowsWords(w: Int32Array, width: number, n: number, sampleSize: number): boolean {
  const table = sampleTable
  table.fill(0)
  const mask = table.length - 1
  let distinct = 0
  for (let i = 0; i < sampleSize; i++) {
    const at = sampleSize === 1 ? 0 : Math.floor((i * (n - 1)) / (sampleSize - 1))
    const a = w[at * width]
    const b = width === 2 ? w[at * width + 1] : 0
    let h = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0x9e3779b1) >>> 20
    for (;;) {
      const e = table[h]
      if (e === 0) {
        sampleFirst[distinct] = at
        table[h] = ++distinct
        break
      }
      const f = sampleFirst[e - 1] * width
      if (w[f] === a && (width === 1 || w[f + 1] === b)) break
      h = (h + 1) & mask
    }
  }
  return distinct / sampleSize <= SAMPLE_REJECT_RATIO
}

function latin1(b: Uint8Array): string {
  let s = ''
  for (let i = 0; i < b.length; i += 4096) s += String.fromCharCode(...b.subarray(i, i + 4096))
  return '\u0000' + s
}

/** Whether a dictionary of `entries` entries taking `entryBytes` loses against `plainBytes` of PLAIN values. */
function dictionaryLoses(entries: number, entryBytes: number, nonNull: number, plainBytes: number): boolean {
  // (writeHybrid packs at most 24 bits: a chunk of over 2^24 distinct values stays PLAIN)
  return 2 * (entryBytes + Math.ceil((nonNull * indexBits(entries)) / 8)) > plainBytes || entries > 1 << 24
}

/** Int32 scratch arrays of a chunk's dictionary (indices, hash table, first positions), reused from chunk to chunk. */
const reusable: Int32Array[] = [new Int32Array(4096), new Int32Array(4096), new Int32Array(4096)]

/** The first n elements of reusable array k (contents left over). */
function reuse(k: number, n: number): Int32Array {
  if (reusable[k].length < n) reusable[k] = new Int32Array(Math.max(n, reusable[k].length * 2))
  return reusable[k].subarray(0, n)
}

export function buildDictionary(p: Prepared, element: SchemaElement): Dictionary | null {
  const n = p.nonNull
  const indices = reuse(0, n)
  if (p.words !== null) {
    const w = p.words
    const width = p.width
    const size = width * 4
    const plainBytes = n * size
    let cap = 16
    while (cap < 2 * n) cap <<= 1
    const shift = 32 - Math.log2(cap)
    const table = reuse(1, cap) // entry + 1, 0 empty
    table.fill(0)
    const firsts = reuse(2, Math.max(1, n))
    let entries = 0
    // the fewest entries at which the dictionary loses (it loses more with every entry)
    let lo = 1
    let hi = n + 1
    while (lo < hi) {
      const mid = (lo + hi) >>> 1
      if (dictionaryLoses(mid, mid * size, n, plainBytes)) hi = mid
      else lo = mid + 1
    }
    const lossAt = lo
    const mask = cap - 1
    for (let i = 0; i < n; i++) {
      const a = w[i * width]
      const b = width === 2 ? w[i * width + 1] : 0
      let h = Math.imul(a ^ Math.imul(b, 0x85ebca6b), 0x9e3779b1) >>> shift
      for (;;) {
        const e = table[h]
        if (e === 0) {
          if (entries + 1 >= lossAt) return null
          firsts[entries] = i
          table[h] = ++entries
          indices[i] = entries - 1
          break
        }
        const f = firsts[e - 1] * width
        if (w[f] === a && (width === 1 || w[f + 1] === b)) {
          indices[i] = e - 1
          break
        }
        h = (h + 1) & mask
      }
    }
    if (entries === 0 || dictionaryLoses(entries, entries * size, n, plainBytes)) return null
    return { indices, firsts: firsts.subarray(0, entries), entries: null, size: entries, bitWidth: indexBits(entries) }
  }
  if (p.u8 !== null) return buildDictionaryUtf8(p.u8, n, indices)
  const o = p.objs!
  const fixed = p.kind === Kind.Fixed ? (element.type_length ?? 0) : -1
  const prefix = fixed >= 0 ? 0 : 4
  let plainBytes = 0
  if (fixed >= 0) plainBytes = fixed * n
  else for (let i = 0; i < n; i++) plainBytes += objSize(o[i]) + 4
  const map = new Map<unknown, number>()
  const entries: unknown[] = []
  let entryBytes = 0
  for (let i = 0; i < n; i++) {
    const v = o[i]
    const key = v instanceof Uint8Array ? latin1(v) : v
    let e = map.get(key)
    if (e === undefined) {
      e = entries.length
      entries.push(v)
      map.set(key, e)
      entryBytes += (fixed >= 0 ? fixed : objSize(v)) + prefix
      if (2 * entryBytes > plainBytes) return null
    }
    indices[i] = e
  }
  if (entries.length === 0 || dictionaryLoses(entries.length, entryBytes, n, plainBytes)) return null
  return { indices, firsts: null, entries, size: entries.length, bitWidth: indexBits(entries.length) }
}

/**
 * `buildDictionary` of UTF-8 values: entries in order of first appearance, told apart by
 * their bytes, sized as strings (UTF-16 length plus 4), so it decides as the strings would.
 */
function buildDictionaryUtf8(u: Utf8Values, n: number, indices: Int32Array): Dictionary | null {
  const { bytes, starts, ends } = u
  let plainBytes = 0
  for (let i = 0; i < n; i++) plainBytes += u8Units(u, i) + 4
  let cap = 16
  while (cap < 2 * n) cap <<= 1
  const table = reuse(1, cap) // entry + 1, 0 empty
  table.fill(0)
  const firsts = reuse(2, Math.max(1, n))
  const mask = cap - 1
  let entries = 0
  let entryBytes = 0
  for (let i = 0; i < n; i++) {
    const a = starts[i]
    const b = ends[i]
    let h = hashRange(bytes, a, b) & mask
    for (;;) {
      const e = table[h]
      if (e === 0) {
        firsts[entries] = i
        table[h] = ++entries
        indices[i] = entries - 1
        entryBytes += u8Units(u, i) + 4
        if (2 * entryBytes > plainBytes) return null
        break
      }
      const f = firsts[e - 1]
      if (sameRange(bytes, a, b, starts[f], ends[f])) {
        indices[i] = e - 1
        break
      }
      h = (h + 1) & mask
    }
  }
  if (entries === 0 || dictionaryLoses(entries, entryBytes, n, plainBytes)) return null
  return { indices, firsts: firsts.subarray(0, entries), entries: null, size: entries, bitWidth: indexBits(entries) }
}

/** Drops dictionary scratch arrays grown past `keep` bytes (one huge chunk must not pin memory). */
export function releaseDictionaryScratch(keep: number): void {
  for (let k = 0; k < reusable.length; k++) if (reusable[k].byteLength > keep) reusable[k] = new Int32Array(4096)
}
