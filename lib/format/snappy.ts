// Snappy compression: the raw block format of google/snappy's format_description.txt (a
// varint of the uncompressed length, then literals and copies with offsets up to 64 KiB).
// Compression is used for Parquet pages (lib/format/parquet-encode.ts, data-file-writer.ts) and Avro
// manifest blocks (lib/format/avro.ts); decompression for the Parquet pages Strata's decoder
// reads (lib/format/parquet-decode.ts). Avro blocks and the pages hyparquet reads are
// decompressed by hyparquet's snappyUncompress.

/** `v` (0 <= v < 2^53) as an unsigned LEB128 varint at `pos` of `buf`; returns the end (also the RLE hybrid's run headers). */
export function writeVarint(buf: Uint8Array, pos: number, v: number): number {
  while (v >= 0x80) {
    buf[pos++] = (v & 0x7f) | 0x80
    v = Math.floor(v / 128)
  }
  buf[pos++] = v
  return pos
}

/**
 * A snappy compressor: `compressInto(src, out, at)` writes the block of `src` at out[at..] and
 * returns its end; `out` must have `snappyBound(src.length)` bytes from `at`. Each call of the
 * factory makes a compressor with its own hash table (about 64 KiB).
 *
 * The factory's body refers to nothing outside it, not even this module's other functions,
 * so its source text, as any bundler emits it, also runs on its own: that is how a
 * compression thread gets the same compressor (lib/format/compression-thread.ts).
 */
export function makeSnappyCompressor(): (src: Uint8Array, out: Uint8Array, at: number) => number {
  const HASH_BITS = 14
  const MAX_OFFSET = 65535
  const table = new Int32Array(1 << HASH_BITS)
  // entries of earlier calls are below `hashBase`, so the table is never cleared
  let hashBase = 1

  function literal(out: Uint8Array, op: number, src: Uint8Array, from: number, to: number): number {
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

  function copy(out: Uint8Array, op: number, offset: number, len: number): number {
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

  return function compressInto(src: Uint8Array, out: Uint8Array, at: number): number {
    const n = src.length
    // the uncompressed length as a varint
    let op = at
    let v = n
    while (v >= 0x80) {
      out[op++] = (v & 0x7f) | 0x80
      v = Math.floor(v / 128)
    }
    out[op++] = v
    if (n < 16) return n > 0 ? literal(out, op, src, 0, n) : op
    if (hashBase + n + 1 >= 0x7fffffff) {
      table.fill(0)
      hashBase = 1
    }
    const base = hashBase
    hashBase += n + 1
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
      const w = dv.getInt32(ip, true)
      const h = Math.imul(w, 0x1e35a7bd) >>> shift
      const cand = table[h] - base
      table[h] = ip + base
      if (cand >= 0 && ip - cand <= MAX_OFFSET && dv.getInt32(cand, true) === w) {
        let len = 4
        while (ip + len <= limit && dv.getInt32(cand + len, true) === dv.getInt32(ip + len, true)) len += 4
        while (ip + len < n && src[cand + len] === src[ip + len]) len++
        if (lit < ip) op = literal(out, op, src, lit, ip)
        op = copy(out, op, ip - cand, len)
        ip += len
        lit = ip
        misses = 32
        // the position before the match's end, so the next repeat of it is found
        if (ip - 1 <= limit) table[Math.imul(dv.getInt32(ip - 1, true), 0x1e35a7bd) >>> shift] = ip - 1 + base
      } else {
        ip += misses++ >> 5
      }
    }
    if (lit < n) op = literal(out, op, src, lit, n)
    return op
  }
}

/** The most bytes snappy's block of `n` bytes can take (a varint header, literals' tags). */
export function snappyBound(n: number): number {
  return 32 + n + Math.ceil(n / 6)
}

const compressIntoShared = makeSnappyCompressor()
let snappyOut = new Uint8Array(1 << 16)

/** Drops the shared output buffer when one large input grew it past `keep` bytes. */
export function releaseSnappyScratch(keep: number): void {
  if (snappyOut.length > keep) snappyOut = new Uint8Array(1 << 16)
}

/** Snappy compression of `src` (a new array). */
export function snappyCompress(src: Uint8Array): Uint8Array {
  return snappyCompressShared(src).slice()
}

/** Snappy compression of `src` into a buffer the next call reuses: copy it before that. */
export function snappyCompressShared(src: Uint8Array): Uint8Array {
  const bound = snappyBound(src.length)
  if (snappyOut.length < bound) snappyOut = new Uint8Array(Math.max(bound, snappyOut.length * 2))
  return snappyOut.subarray(0, compressIntoShared(src, snappyOut, 0))
}

// ---------------------------------------------------------------------------------------------
// Decompression (Parquet pages: lib/format/parquet-decode.ts)

/** Bytes an output buffer needs past the decompressed size: the decoder moves words at a time and may write past a copy's end. */
export const SNAPPY_SLACK = 16

/**
 * Decompresses a raw snappy block (google/snappy's format_description.txt: a varint of the
 * uncompressed length, then literals and copies) into `out`, which must be exactly that long.
 */
export function snappyDecompress(src: Uint8Array, out: Uint8Array): void {
  const size = out.length
  const tmp = new Uint8Array(size + SNAPPY_SLACK)
  snappyInto(src, new DataView(src.buffer, src.byteOffset, src.byteLength), tmp, new DataView(tmp.buffer), size)
  out.set(tmp.subarray(0, size))
}

/**
 * Snappy block `src` (viewed by `sv`) into out[0, size) (viewed by `ov`); `out` has at least
 * SNAPPY_SLACK bytes past `size`. Literals up to 16 bytes and copies from at least 8 bytes back move
 * in 4-byte words (a copy may write up to 7 bytes past its end, which later bytes overwrite
 * or the slack absorbs).
 */
export function snappyInto(src: Uint8Array, sv: DataView, out: Uint8Array, ov: DataView, size: number): void {
  const n = src.length
  let ip = 0
  let expected = 0
  for (let shift = 0; ; shift += 7) {
    if (ip >= n || shift > 28) throw new Error('snappy: truncated or oversized length header')
    const b = src[ip++]
    expected += (b & 0x7f) * 2 ** shift
    if (b < 0x80) break
  }
  if (expected !== size) throw new Error(`snappy: block holds ${expected} bytes, the page header says ${size}`)
  let op = 0
  while (ip < n) {
    const tag = src[ip++]
    const type = tag & 3
    if (type === 0) {
      let len = tag >>> 2
      if (len >= 60) {
        const extra = len - 59
        if (ip + extra > n) throw new Error('snappy: truncated literal length')
        len = src[ip]
        if (extra > 1) len |= src[ip + 1] << 8
        if (extra > 2) len |= src[ip + 2] << 16
        if (extra > 3) len = (len | 0) + src[ip + 3] * 16777216
        ip += extra
      }
      len += 1
      if (ip + len > n || op + len > size) throw new Error('snappy: literal runs past the end of its input or output')
      if (len <= 16 && ip + 16 <= n) {
        ov.setInt32(op, sv.getInt32(ip, true), true)
        ov.setInt32(op + 4, sv.getInt32(ip + 4, true), true)
        if (len > 8) {
          ov.setInt32(op + 8, sv.getInt32(ip + 8, true), true)
          ov.setInt32(op + 12, sv.getInt32(ip + 12, true), true)
        }
      } else if (len < 16) {
        for (let i = 0; i < len; i++) out[op + i] = src[ip + i]
      } else {
        out.set(src.subarray(ip, ip + len), op)
      }
      ip += len
      op += len
      continue
    }
    let len: number
    let offset: number
    if (type === 1) {
      if (ip >= n) throw new Error('snappy: truncated copy')
      len = ((tag >>> 2) & 7) + 4
      offset = ((tag >>> 5) << 8) | src[ip++]
    } else if (type === 2) {
      if (ip + 2 > n) throw new Error('snappy: truncated copy')
      len = (tag >>> 2) + 1
      offset = src[ip] | (src[ip + 1] << 8)
      ip += 2
    } else {
      if (ip + 4 > n) throw new Error('snappy: truncated copy')
      len = (tag >>> 2) + 1
      offset = (src[ip] | (src[ip + 1] << 8) | (src[ip + 2] << 16)) + src[ip + 3] * 16777216
      ip += 4
    }
    if (offset === 0 || offset > op || op + len > size) throw new Error(`snappy: copy of ${len} bytes from ${offset} back at output byte ${op} is out of range`)
    const stop = op + len
    if (offset >= 8) {
      for (let f = op - offset; op < stop; op += 8, f += 8) {
        ov.setInt32(op, ov.getInt32(f, true), true)
        ov.setInt32(op + 4, ov.getInt32(f + 4, true), true)
      }
    } else {
      for (let f = op - offset; op < stop; op++, f++) out[op] = out[f]
    }
    op = stop
  }
  if (op !== size) throw new Error(`snappy: block decoded to ${op} bytes, expected ${size}`)
}
