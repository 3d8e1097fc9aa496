// A data file as its readers fetch it: ranged reads of a ByteSource (inside the tail read on open
// from memory), errors that name the file, and hyparquet's parsers for raw values.

import { parquetMetadataAsync, parquetSchema } from 'hyparquet'
import type { AsyncBuffer, FileMetaData, SchemaElement, SchemaTree } from 'hyparquet'
import { CorruptFileError, StrataInputError } from '../errors.ts'
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

/** `open()`, for a source whose size is a byte count, its failures as errors that name the file. */
export async function openNamed<T>(src: ByteSource, open: () => Promise<T>): Promise<T> {
  if (!Number.isSafeInteger(src.size) || src.size < 0) throw new StrataInputError(`ByteSource.size ${src.size} is not a byte count`)
  try {
    return await open()
  } catch (e) {
    throw namedFileError(src, e)
  }
}

/** A data file's top-level columns by name: the schema element, and whether it is a group. */
export type FooterColumns = Map<string, { element: SchemaElement; group: boolean }>

/**
 * Opens a data file: its last `tailBytes` in one request (most footers fit, so parsing them
 * costs no other), the footer parsed, and its top-level columns by name. Both readers open a
 * file this way; `parsers` are hyparquet's statistics parsers, if any.
 */
export async function openFooter(src: ByteSource, tailBytes: number, parsers?: object): Promise<{ file: AsyncBuffer; metadata: FileMetaData; present: FooterColumns }> {
  if (src.size < 12) throw new Error(`data file is ${src.size} bytes, too short for Parquet (magic + footer need 12)`)
  const tailStart = Math.max(0, src.size - tailBytes)
  const tail = await readSource(src, tailStart, src.size)
  if (tail.length !== src.size - tailStart) throw new Error(`data file read [${tailStart}, ${src.size}) returned ${tail.length} bytes; is the file ${src.size} bytes long?`)
  const file = cachedTail(src, tail, tailStart)
  let metadata: FileMetaData
  try {
    metadata = await parquetMetadataAsync(file, { initialFetchSize: tailBytes, ...(parsers ? { parsers } : {}) } as Parameters<typeof parquetMetadataAsync>[1])
  } catch (e) {
    throw new Error(`data file (${src.size} bytes) is not a readable Parquet file: ${(e as Error).message}`)
  }
  const present: FooterColumns = new Map()
  for (const child of parquetSchema(metadata).children) present.set(child.element.name, { element: child.element, group: child.children.length > 0 })
  return { file, metadata, present }
}

/** Schema nodes by name, the first of a name kept (as a search from the front finds it). */
export function firstByName(nodes: SchemaTree[]): Map<string, SchemaTree> {
  const out = new Map<string, SchemaTree>()
  for (const t of nodes) if (!out.has(t.element.name)) out.set(t.element.name, t)
  return out
}

/** The root's children of a flat schema list, by name (the first of a name), each subtree (num_children, depth first) passed over. */
export function topLevelElements(schema: SchemaElement[]): Map<string, SchemaElement> {
  const byName = new Map<string, SchemaElement>()
  const skip = (i: number): number => {
    let children = schema[i].num_children ?? 0
    let next = i + 1
    while (children-- > 0) next = skip(next)
    return next
  }
  for (let i = 1; i < schema.length; i = skip(i)) if (!byName.has(schema[i].name)) byName.set(schema[i].name, schema[i])
  return byName
}
