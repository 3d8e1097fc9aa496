// zstd pages on any Node: node:zlib's encoder where this Node has it (>= 22.15), else a
// stand-in writing stored (raw) zstd blocks, which every decoder reads, so the zstd paths of
// the writer are tested on Node 20 too.

import zlib from 'node:zlib'

/** `input` as one zstd frame of raw blocks (RFC 8878 §3.1.1.2, Block_Type 0). */
function rawZstdFrame(input: Uint8Array): Uint8Array {
  const block = 1 << 17
  const parts: number[] = [0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38] // magic, no content size, window 2^17
  let off = 0
  do {
    const n = Math.min(block, input.length - off)
    const last = off + n >= input.length ? 1 : 0
    const header = (n << 3) | last // block type 0 = raw
    parts.push(header & 0xff, (header >> 8) & 0xff, (header >> 16) & 0xff)
    for (let i = 0; i < n; i++) parts.push(input[off + i])
    off += n
  } while (off < input.length)
  return new Uint8Array(parts)
}

type ZstdFn = (input: Uint8Array, opts?: { params?: Record<number, number> }) => Uint8Array
export const zlibAny = zlib as unknown as { zstdCompressSync?: ZstdFn }

/**
 * Runs `fn` with node:zlib's zstd encoder, or with a stand-in writing stored blocks on Node <
 * 22.15; `calls` are the options of each compression. The encoder is restored when `fn`
 * returns, or, when it returns a promise, when that settles.
 */
export function withZstd<T>(fn: (calls: { params?: Record<number, number> }[]) => T): T {
  const original = zlibAny.zstdCompressSync
  const calls: { params?: Record<number, number> }[] = []
  const base: ZstdFn = original ?? ((input) => rawZstdFrame(input))
  zlibAny.zstdCompressSync = (input, opts) => {
    calls.push(opts ?? {})
    return base(input, opts)
  }
  const restore = () => {
    if (original) zlibAny.zstdCompressSync = original
    else delete zlibAny.zstdCompressSync
  }
  let result: T
  try {
    result = fn(calls)
  } catch (e) {
    restore()
    throw e
  }
  if (result instanceof Promise) return result.finally(restore) as T
  restore()
  return result
}
