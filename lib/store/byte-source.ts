// A file's bytes as ranged reads from a store, and what its manifest entry says of it.

import type { ObjectStore } from './object-store.ts'

/** Random access to a file's bytes; `read` returns bytes [start, end). */
export interface ByteSource {
  size: number
  read(start: number, end: number): Promise<Uint8Array>
  /** the file's key in its store: an error decoding the file is a CorruptFileError naming it */
  name?: string
  /** what the file's manifest entry says of its rows (a DataFileMeta): reads check it */
  expect?: FileExpectation
}

/** The fields of a file's DataFileMeta that reads check the decoded rows against. */
export interface FileExpectation {
  rowCount: bigint
  /** serialized BinaryRows (with arity prefix) of the first and the last key */
  minKey: Uint8Array
  maxKey: Uint8Array
  /** rows of kind -U or -D, when the entry records it */
  deleteRowCount: bigint | null
}

/**
 * The object `key` as a ByteSource named by its key (errors decoding it name it). With the
 * file's manifest entry (`expect`, its DataFileMeta), reads check what they decode against it:
 * keys in order within its min/max key, its row count (lib/format/data-file-check.ts ManifestCheck).
 */
export function byteSourceOf(store: ObjectStore, key: string, size: number, expect?: FileExpectation): ByteSource {
  return { size, name: key, expect, read: (start, end) => store.getRange(key, start, end) }
}
