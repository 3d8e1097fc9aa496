// A data file as its readers fetch it: ranged reads of a ByteSource (inside the tail read on open
// from memory), errors that name the file, and hyparquet's parsers for raw values.

import type { AsyncBuffer } from 'hyparquet'
import { CorruptFileError } from '../errors.ts'
import { arrayBufferOf } from './page-index.ts'
import type { ByteSource } from '../store/byte-source.ts'

// Errors the store raised reading a file (a missing object, a network failure): they name
// the key already and keep their class (retries look at it), so they pass unwrapped.
const storeErrors = new WeakSet<object>()

/** `src.read`, its failures marked as the store's. */
export async function readSource(src: ByteSource, start: number, end: number): Promise<Uint8Array> {
  try {
    return await src.read(start, end)
  } catch (e) {
    if (typeof e === 'object' && e !== null) storeErrors.add(e)
    throw e
  }
}

/**
 * `e`, raised reading `src`, as an error naming the file: a CorruptFileError whose message
 * starts with the file's key, the original as its cause. Errors that already name it (the
 * store's, a CorruptFileError) and errors of a source without a name pass as they are.
 */
export function namedFileError(src: ByteSource, e: unknown): unknown {
  if (src.name === undefined || e instanceof CorruptFileError || (typeof e === 'object' && e !== null && storeErrors.has(e))) return e
  return new CorruptFileError(src.name, e instanceof Error ? e.message : String(e), { cause: e })
}

/** A ByteSource of bytes in memory. */
export function byteSource(bytes: Uint8Array): ByteSource {
  return { size: bytes.length, read: async (start, end) => bytes.subarray(start, end) }
}

// INT96 arrives as epoch nanoseconds through this parser; everything else is read unannotated
const utf8KeepBom = new TextDecoder('utf-8', { ignoreBOM: true })
/**
 * hyparquet's parsers for raw reads: INT96 as epoch nanoseconds, and strings decoded with a
 * leading U+FEFF kept (hyparquet's default decoder drops it as a byte-order mark, but in a
 * column it is the value's first character).
 */
export const RAW_PARSERS = {
  timestampFromNanoseconds: (nanos: bigint) => nanos,
  stringFromBytes: (bytes: Uint8Array | undefined) => bytes && utf8KeepBom.decode(bytes),
}

/** The file as hyparquet reads it: reads inside the tail fetched on open are served from it. */
export function cachedTail(src: ByteSource, tail: Uint8Array, tailStart: number): AsyncBuffer {
  return {
    byteLength: src.size,
    async slice(start: number, end: number = src.size): Promise<ArrayBuffer> {
      if (start >= tailStart && end <= src.size) return arrayBufferOf(tail.slice(start - tailStart, end - tailStart))
      const bytes = await readSource(src, start, end)
      if (bytes.length !== end - start) throw new Error(`data file read [${start}, ${end}) returned ${bytes.length} bytes; is the file ${src.size} bytes long?`)
      return arrayBufferOf(bytes)
    },
  }
}

/** The file as hyparquet reads it, every read a request. */
export function directBuffer(src: ByteSource): AsyncBuffer {
  return {
    byteLength: src.size,
    async slice(start: number, end: number = src.size): Promise<ArrayBuffer> {
      const bytes = await readSource(src, start, end)
      if (bytes.length !== end - start) throw new Error(`data file read [${start}, ${end}) returned ${bytes.length} bytes; is the file ${src.size} bytes long?`)
      return arrayBufferOf(bytes)
    },
  }
}
