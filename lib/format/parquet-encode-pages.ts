// The Parquet encoder's page bytes: values PLAIN or as dictionary indices in the RLE/bit-packed
// hybrid, definition levels, page headers (Thrift compact protocol), and where pages break.

import type { SchemaElement } from 'hyparquet'
import { writeVarint } from './snappy.ts'
import { Kind, type Prepared, type Utf8Values } from './parquet-encode-columns.ts'

// ---------------------------------------------------------------------------------------------
// Growable scratch buffers (reused across pages and chunks)

let scratch = new Uint8Array(1 << 16)
export let levelScratch = new Uint8Array(1 << 12)
export const header = new Uint8Array(128)

/** Scratch buffers above this are dropped after the chunk that grew them (one huge value must not pin memory). */
export const SCRATCH_KEEP = 4 << 20

/** Drops the page scratch buffers grown past SCRATCH_KEEP. */
export function releasePageScratch(): void {
  if (scratch.length > SCRATCH_KEEP) scratch = new Uint8Array(1 << 16)
  if (levelScratch.length > SCRATCH_KEEP) levelScratch = new Uint8Array(1 << 12)
  if (objScratch.length > SCRATCH_KEEP) objScratch = new Uint8Array(1 << 16)
}

export function ensureScratch(n: number): Uint8Array {
  if (scratch.length < n) scratch = new Uint8Array(Math.max(n, scratch.length * 2))
  return scratch
}

export function ensureLevels(n: number): Uint8Array {
  if (levelScratch.length < n) levelScratch = new Uint8Array(Math.max(n, levelScratch.length * 2))
  return levelScratch
}

// ---------------------------------------------------------------------------------------------
// Encodings

/**
 * Values [from, to) of `vals` in the RLE/bit-packed hybrid of width `w` (<= 24), at `pos`;
 * returns the end. Runs of 8 or more equal values are RLE runs, the rest bit-packed groups of 8
 * (the last group padded with zeros).
 */
export function writeHybrid(buf: Uint8Array, pos: number, vals: ArrayLike<number>, from: number, to: number, w: number): number {
  const valueBytes = (w + 7) >> 3
  let i = from
  while (i < to) {
    const v = vals[i]
    let j = i + 1
    while (j < to && vals[j] === v) j++
    if (j - i >= 8 || w === 0) {
      pos = writeVarint(buf, pos, (j - i) * 2)
      for (let b = 0, x = v; b < valueBytes; b++, x >>>= 8) buf[pos++] = x & 0xff
      i = j
      continue
    }
    // bit-packed groups until a run of 8 starts at a group boundary
    const start = i
    let groups = 0
    for (;;) {
      i += 8
      groups++
      if (i >= to) break
      const u = vals[i]
      let k = i + 1
      while (k < to && k < i + 8 && vals[k] === u) k++
      if (k - i >= 8) break
    }
    pos = writeVarint(buf, pos, groups * 2 + 1)
    const end = start + groups * 8
    let acc = 0
    let bits = 0
    for (let k = start; k < end; k++) {
      acc |= (k < to ? vals[k] : 0) << bits
      bits += w
      while (bits >= 8) {
        buf[pos++] = acc & 0xff
        acc >>>= 8
        bits -= 8
      }
    }
    if (bits > 0) buf[pos++] = acc & 0xff
    if (i > to) i = to
  }
  return pos
}

/** PLAIN bytes of non-null values [a, b) of a fixed-width or BOOLEAN column. */
export function writePlain(p: Prepared, a: number, b: number): Uint8Array {
  if (p.words !== null) {
    const w = p.words
    return new Uint8Array(w.buffer, w.byteOffset + a * 4 * p.width, (b - a) * 4 * p.width)
  }
  const v = p.bools!
  const buf = ensureScratch(((b - a + 7) >> 3) + 8)
  let pos = 0
  for (let i = a; i < b; i += 8) {
    let byte = 0
    for (let k = 0; k < 8 && i + k < b; k++) byte |= v[i + k] << k
    buf[pos++] = byte
  }
  return buf.subarray(0, pos)
}

let objScratch = new Uint8Array(1 << 16)

/**
 * PLAIN encoding of objects o[0..n) (strings as UTF-8, byte arrays, or FIXED decimals as
 * big-endian two's complement) into a shared buffer: value k is bytes [ends[k-1], ends[k])
 * (from 0 for k = 0), its 4-byte length included for BYTE_ARRAY.
 */
export function encodeObjs(o: unknown[], n: number, kind: Kind, element: SchemaElement): { buf: Uint8Array; ends: Int32Array } {
  const ends = new Int32Array(n)
  if (kind === Kind.Fixed) {
    const len = element.type_length ?? 0
    if (objScratch.length < n * len) objScratch = new Uint8Array(Math.max(n * len, objScratch.length * 2))
    const buf = objScratch
    let pos = 0
    for (let i = 0; i < n; i++) {
      let v = o[i] as bigint
      for (let k = len - 1; k >= 0; k--) {
        buf[pos + k] = Number(v & 0xffn)
        v >>= 8n
      }
      pos += len
      ends[i] = pos
    }
    return { buf, ends }
  }
  let bound = 0
  for (let i = 0; i < n; i++) {
    const v = o[i]
    bound += 4 + (typeof v === 'string' ? 3 * v.length : (v as Uint8Array).length)
  }
  if (objScratch.length < bound) objScratch = new Uint8Array(Math.max(bound, objScratch.length * 2))
  const buf = objScratch
  let pos = 0
  for (let i = 0; i < n; i++) {
    const v = o[i]
    const start = pos + 4
    let q = start
    if (typeof v === 'string') {
      const len = v.length
      let k = 0
      for (; k < len; k++) {
        const c = v.charCodeAt(k)
        if (c >= 0x80) break
        buf[q++] = c
      }
      if (k < len) q = start + utf8.encodeInto(v, buf.subarray(start)).written
    } else {
      buf.set(v as Uint8Array, start)
      q = start + (v as Uint8Array).length
    }
    const len = q - start
    buf[pos] = len & 0xff
    buf[pos + 1] = (len >>> 8) & 0xff
    buf[pos + 2] = (len >>> 16) & 0xff
    buf[pos + 3] = len >>> 24
    pos = q
    ends[i] = pos
  }
  return { buf, ends }
}

/** `encodeObjs` of UTF-8 values: value pick[i] (or i) for i < n, each its 4-byte length and bytes. */
export function encodeUtf8(u: Utf8Values, pick: Int32Array | null, n: number): { buf: Uint8Array; ends: Int32Array } {
  const { bytes, starts, ends: vEnds } = u
  let bound = 0
  for (let i = 0; i < n; i++) {
    const j = pick === null ? i : pick[i]
    bound += 4 + vEnds[j] - starts[j]
  }
  if (objScratch.length < bound) objScratch = new Uint8Array(Math.max(bound, objScratch.length * 2))
  const buf = objScratch
  const ends = new Int32Array(n)
  let pos = 0
  for (let i = 0; i < n; i++) {
    const j = pick === null ? i : pick[i]
    const a = starts[j]
    const len = vEnds[j] - a
    buf[pos] = len & 0xff
    buf[pos + 1] = (len >>> 8) & 0xff
    buf[pos + 2] = (len >>> 16) & 0xff
    buf[pos + 3] = len >>> 24
    pos += 4
    if (len < 32) for (let k = 0; k < len; k++) buf[pos + k] = bytes[a + k]
    else buf.set(bytes.subarray(a, a + len), pos)
    pos += len
    ends[i] = pos
  }
  return { buf, ends }
}

const utf8 = new TextEncoder()

// ---------------------------------------------------------------------------------------------
// Page headers (Thrift compact protocol, parquet.thrift PageHeader)

const PAGE_DICTIONARY = 2
const PAGE_DATA_V2 = 3
export const ENC_PLAIN = 0
export const ENC_RLE_DICTIONARY = 8

function i32Field(buf: Uint8Array, pos: number, delta: number, v: number): number {
  buf[pos++] = (delta << 4) | 5
  return writeVarint(buf, pos, v * 2) // zigzag of a non-negative int
}

/** A data page v2 header: `values` level entries (one per row in a flat column) over `rows` rows; the levels' bytes (repetition, then definition) stay uncompressed. */
export function dataPageHeader(uncompressed: number, compressed: number, values: number, nulls: number, rows: number, encoding: number, defBytes: number, repBytes: number): number {
  const h = header
  let pos = i32Field(h, 0, 1, PAGE_DATA_V2)
  pos = i32Field(h, pos, 1, uncompressed)
  pos = i32Field(h, pos, 1, compressed)
  h[pos++] = (5 << 4) | 12 // field 8: data_page_header_v2
  pos = i32Field(h, pos, 1, values)
  pos = i32Field(h, pos, 1, nulls)
  pos = i32Field(h, pos, 1, rows)
  pos = i32Field(h, pos, 1, encoding)
  pos = i32Field(h, pos, 1, defBytes)
  pos = i32Field(h, pos, 1, repBytes)
  h[pos++] = 0
  h[pos++] = 0
  return pos
}

export function dictionaryPageHeader(uncompressed: number, compressed: number, entries: number): number {
  const h = header
  let pos = i32Field(h, 0, 1, PAGE_DICTIONARY)
  pos = i32Field(h, pos, 1, uncompressed)
  pos = i32Field(h, pos, 1, compressed)
  h[pos++] = (4 << 4) | 12 // field 7: dictionary_page_header
  pos = i32Field(h, pos, 1, entries)
  pos = i32Field(h, pos, 1, ENC_PLAIN)
  h[pos++] = 0
  h[pos++] = 0
  return pos
}

// ---------------------------------------------------------------------------------------------
// Pages

/** First rows of the pages: a page ends before the row at which its estimated value bytes reach `pageSize`. */
export function pageStarts(p: Prepared, dict: boolean, pageSize: number, plainEnds: Int32Array | null, prefix: number): number[] {
  const starts = [0]
  const defs = p.defs
  const rows = p.rows
  let acc = 0
  let start = 0
  if (plainEnds !== null) {
    let k = 0
    let prev = 0
    for (let r = 0; r < rows; r++) {
      let s = 0
      if (defs === null || defs[r] === 1) {
        s = plainEnds[k] - prev - prefix
        prev = plainEnds[k++]
      }
      acc += s
      if (acc >= pageSize && r > start) {
        starts.push(r)
        start = r
        acc = s
      }
    }
    return starts
  }
  const size = dict ? 4 : p.kind === Kind.Boolean ? 0.125 : p.width * 4
  if (defs === null) {
    const per = Math.max(1, Math.ceil(pageSize / size) - 1)
    for (let r = per; r < rows; r += per) starts.push(r)
    return starts
  }
  for (let r = 0; r < rows; r++) {
    const s = defs[r] === 1 ? size : 0
    acc += s
    if (acc >= pageSize && r > start) {
      starts.push(r)
      start = r
      acc = s
    }
  }
  return starts
}
