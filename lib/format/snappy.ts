// Snappy compression: the raw block format of google/snappy's format_description.txt (a
// varint of the uncompressed length, then literals and copies with offsets up to 64 KiB).
// Used for Parquet pages (lib/format/parquet-encode.ts, data-file.ts) and Avro manifest
// blocks (lib/format/avro.ts). Decoding stays with hyparquet's snappyUncompress.

/** `v` (0 <= v < 2^53) as an unsigned LEB128 varint at `pos` of `buf`; returns the end (also the RLE hybrid's run headers). */
export function writeVarint(buf: Uint8Array, pos: number, v: number): number {
  while (v >= 0x80) {
    buf[pos++] = (v & 0x7f) | 0x80
    v = Math.floor(v / 128)
  }
  buf[pos++] = v
  return pos
}

const HASH_BITS = 14
const hashTable = new Int32Array(1 << HASH_BITS)
/** entries of earlier calls are below `hashBase`, so the table is never cleared */
let hashBase = 1
const MAX_OFFSET = 65535

let snappyOut = new Uint8Array(1 << 16)

/** Drops the shared output buffer when one large input grew it past `keep` bytes. */
export function releaseSnappyScratch(keep: number): void {
  if (snappyOut.length > keep) snappyOut = new Uint8Array(1 << 16)
}

function emitLiteral(out: Uint8Array, op: number, src: Uint8Array, from: number, to: number): number {
  const n = to - from - 1
  if (n < 60) out[op++] = n << 2
  else if (n < 0x100) {
    out[op++] = 60 << 2
    out[op++] = n
  } else if (n < 0x10000) {
    out[op++] = 61 << 2
    out[op++] = n & 0xff
    out[op++] = n >>> 8
  } else if (n < 0x1000000) {
    out[op++] = 62 << 2
    out[op++] = n & 0xff
    out[op++] = (n >>> 8) & 0xff
    out[op++] = n >>> 16
  } else {
    out[op++] = 63 << 2
    out[op++] = n & 0xff
    out[op++] = (n >>> 8) & 0xff
    out[op++] = (n >>> 16) & 0xff
    out[op++] = n >>> 24
  }
  if (to - from < 16) for (let i = from; i < to; i++) out[op++] = src[i]
  else {
    out.set(src.subarray(from, to), op)
    op += to - from
  }
  return op
}

function emitCopy(out: Uint8Array, op: number, offset: number, len: number): number {
  while (len >= 68) {
    out[op++] = (63 << 2) | 2
    out[op++] = offset & 0xff
    out[op++] = offset >>> 8
    len -= 64
  }
  if (len > 64) {
    out[op++] = (59 << 2) | 2
    out[op++] = offset & 0xff
    out[op++] = offset >>> 8
    len -= 60
  }
  if (len < 12 && offset < 2048) {
    out[op++] = ((offset >>> 8) << 5) | ((len - 4) << 2) | 1
    out[op++] = offset & 0xff
  } else {
    out[op++] = ((len - 1) << 2) | 2
    out[op++] = offset & 0xff
    out[op++] = offset >>> 8
  }
  return op
}

/** Snappy compression of `src` (a new array). */
export function snappyCompress(src: Uint8Array): Uint8Array {
  return snappyCompressShared(src).slice()
}

/** Snappy compression of `src` into a buffer the next call reuses: copy it before that. */
export function snappyCompressShared(src: Uint8Array): Uint8Array {
  const n = src.length
  const bound = 32 + n + Math.ceil(n / 6)
  if (snappyOut.length < bound) snappyOut = new Uint8Array(Math.max(bound, snappyOut.length * 2))
  const out = snappyOut
  let op = writeVarint(out, 0, n)
  if (n < 16) {
    if (n > 0) op = emitLiteral(out, op, src, 0, n)
    return out.subarray(0, op)
  }
  if (hashBase + n + 1 >= 0x7fffffff) {
    hashTable.fill(0)
    hashBase = 1
  }
  const base = hashBase
  hashBase += n + 1
  const table = hashTable
  // a table about the input's size (at most 2^14 entries) stays in the CPU's cache
  let bits = 8
  while (bits < HASH_BITS && 1 << bits < n) bits++
  const shift = 32 - bits
  const limit = n - 4
  const dv = new DataView(src.buffer, src.byteOffset, n)
  let ip = 0
  let lit = 0
  let misses = 32
  while (ip <= limit) {
    const v = dv.getInt32(ip, true)
    const h = Math.imul(v, 0x1e35a7bd) >>> shift
    const cand = table[h] - base
    table[h] = ip + base
    if (cand >= 0 && ip - cand <= MAX_OFFSET && dv.getInt32(cand, true) === v) {
      let len = 4
      while (ip + len <= limit && dv.getInt32(cand + len, true) === dv.getInt32(ip + len, true)) len += 4
      while (ip + len < n && src[cand + len] === src[ip + len]) len++
      if (lit < ip) op = emitLiteral(out, op, src, lit, ip)
      op = emitCopy(out, op, ip - cand, len)
      ip += len
      lit = ip
      misses = 32
      // the position before the match's end, so the next repeat of it is found
      if (ip - 1 <= limit) table[Math.imul(dv.getInt32(ip - 1, true), 0x1e35a7bd) >>> shift] = ip - 1 + base
    } else {
      ip += misses++ >> 5
    }
  }
  if (lit < n) op = emitLiteral(out, op, src, lit, n)
  return out.subarray(0, op)
}
