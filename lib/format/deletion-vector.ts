// Paimon deletion vectors and their index files (docs/format.md "Deletion-vector index files"; paimon-core
// deletionvectors/DeletionFileWriter.java, BitmapDeletionVector.java, Bitmap64DeletionVector.java,
// DeletionVector.read).
//
// File: byte 0 = version 1, then one entry per data file.
//   32-bit entry: int32 BE size, bin = [int32 BE magic 1581511376][portable RoaringBitmap],
//                 int32 BE CRC32(bin); meta length = size = len(bin).
//   64-bit entry (`deletion-vectors.bitmap64`, Iceberg's DV blob): int32 BE len, bin =
//                 [int32 LE magic 1681511377][64-bit portable bitmap], int32 BE CRC32(bin);
//                 meta length = the whole entry = len + 8.
// Positions are 0-based row positions in the data file.

import { crc32 } from 'node:zlib'
import { StrataInputError } from '../errors.ts'
import type { DeletionVectorMeta } from '../types.ts'
import { RoaringBitmap32 } from './roaring32.ts'
import { RoaringBitmap64 } from './roaring64.ts'

/** `IndexFileMeta._INDEX_TYPE` of deletion-vector index files. */
export const DELETION_VECTORS_INDEX = 'DELETION_VECTORS'
/** `DeletionVectorsIndexFile.VERSION_ID_V1`, byte 0 of every file. */
export const DELETION_VECTORS_VERSION = 1
/** `BitmapDeletionVector.MAGIC_NUMBER`, written big-endian. */
export const BITMAP32_MAGIC = 1581511376
/** `Bitmap64DeletionVector.MAGIC_NUMBER`, written little-endian (Iceberg DV blob). */
export const BITMAP64_MAGIC = 1681511377
/** `RoaringBitmap32.MAX_VALUE` (Java `Integer.MAX_VALUE`): the 32-bit variant's position limit. */
const MAX_POSITION_32 = 0x7fffffff

export interface DeletionVector {
  readonly cardinality: number
  /** whether this vector is written in the 64-bit layout by default */
  readonly bitmap64: boolean
  isDeleted(pos: number): boolean
  /** Uint32Array for a 32-bit vector, Float64Array for a 64-bit one */
  sortedPositions(): Uint32Array | Float64Array
  /** The union as a new vector of this vector's kind; neither input changes. */
  merge(other: DeletionVector): DeletionVector
}

class BitmapDeletionVector implements DeletionVector {
  readonly cardinality: number
  readonly bitmap64: boolean

  constructor(readonly bits: RoaringBitmap32 | RoaringBitmap64) {
    this.cardinality = bits.cardinality
    this.bitmap64 = bits instanceof RoaringBitmap64
  }

  isDeleted(pos: number): boolean {
    return this.bits.has(pos)
  }

  sortedPositions(): Uint32Array | Float64Array {
    return this.bits.toSortedArray()
  }

  merge(other: DeletionVector): DeletionVector {
    if (this.bits instanceof RoaringBitmap64) {
      return new BitmapDeletionVector(this.bits.or(as64(other)))
    }
    return new BitmapDeletionVector(this.bits.or(as32(other, 'merge')))
  }
}

function as64(dv: DeletionVector): RoaringBitmap64 {
  if (dv instanceof BitmapDeletionVector) {
    return dv.bits instanceof RoaringBitmap64 ? dv.bits : RoaringBitmap64.fromBitmap32(dv.bits)
  }
  return RoaringBitmap64.fromSorted(dv.sortedPositions())
}

function as32(dv: DeletionVector, what: string): RoaringBitmap32 {
  if (dv instanceof BitmapDeletionVector && dv.bits instanceof RoaringBitmap32) return dv.bits
  const positions = dv.sortedPositions()
  const last = positions.length > 0 ? positions[positions.length - 1] : 0
  if (last > MAX_POSITION_32) {
    throw new StrataInputError(
      `${what}: deletion vector holds position ${last}, expected at most ${MAX_POSITION_32} ` +
        `for the 32-bit layout (set 'deletion-vectors.bitmap64' = 'true' for larger files)`,
    )
  }
  return RoaringBitmap32.fromSorted(positions)
}

/** A vector of the given kind from row positions in any order (duplicates allowed). */
export function deletionVectorOf(positions: ArrayLike<number>, bitmap64: boolean): DeletionVector {
  const max = bitmap64 ? Number.MAX_SAFE_INTEGER : MAX_POSITION_32
  let sorted = true
  for (let i = 0; i < positions.length; i++) {
    const v = positions[i]
    if (!Number.isInteger(v) || v < 0 || v > max) {
      throw new StrataInputError(
        `deletionVectorOf: positions[${i}] = ${v}, expected an integer row position in [0, ${max}]`,
      )
    }
    if (i > 0 && v < positions[i - 1]) sorted = false
  }
  const ordered = sorted ? positions : Float64Array.from(positions).sort()
  return new BitmapDeletionVector(
    bitmap64 ? RoaringBitmap64.fromSorted(ordered) : RoaringBitmap32.fromSorted(ordered),
  )
}

function entryOf(dv: DeletionVector, bitmap64: boolean, dataFile: string): Uint8Array {
  const bitmap = bitmap64 ? as64(dv).serialize() : as32(dv, `data file ${dataFile}`).serialize()
  const entry = new Uint8Array(4 + 4 + bitmap.length + 4)
  const view = new DataView(entry.buffer)
  view.setInt32(0, 4 + bitmap.length)
  if (bitmap64) view.setUint32(4, BITMAP64_MAGIC, true)
  else view.setUint32(4, BITMAP32_MAGIC)
  entry.set(bitmap, 8)
  view.setUint32(8 + bitmap.length, crc32(entry.subarray(4, 8 + bitmap.length)))
  return entry
}

/**
 * One index file holding `vectors` (data file name → vector) in map order, each written in the
 * layout `bitmap64` selects, and the `DeletionVectorMeta` of each entry (docs/format.md "Deletion-vector index files").
 */
export function writeDeletionVectorFile(
  vectors: Map<string, DeletionVector>,
  bitmap64: boolean,
): { bytes: Uint8Array; metas: DeletionVectorMeta[] } {
  const entries: Uint8Array[] = []
  const metas: DeletionVectorMeta[] = []
  let offset = 1
  for (const [dataFileName, dv] of vectors) {
    const entry = entryOf(dv, bitmap64, dataFileName)
    entries.push(entry)
    metas.push({
      dataFileName,
      offset,
      length: bitmap64 ? entry.length : entry.length - 8,
      cardinality: BigInt(dv.cardinality),
    })
    offset += entry.length
  }
  const bytes = new Uint8Array(offset)
  bytes[0] = DELETION_VECTORS_VERSION
  let p = 1
  for (const entry of entries) {
    bytes.set(entry, p)
    p += entry.length
  }
  return { bytes, metas }
}

/**
 * The vectors in index files rolled at `targetSize` bytes, as Paimon's index file writer
 * rolls them (deletion-vector.index-file.target-size): a file takes the next vector, then
 * closes once it has reached the target, so it passes the target by at most one vector.
 */
export function writeDeletionVectorFiles(
  vectors: Map<string, DeletionVector>,
  bitmap64: boolean,
  targetSize: number,
): { bytes: Uint8Array; metas: DeletionVectorMeta[] }[] {
  const files: { bytes: Uint8Array; metas: DeletionVectorMeta[] }[] = []
  let current = new Map<string, DeletionVector>()
  let size = 1
  for (const [name, dv] of vectors) {
    current.set(name, dv)
    size += entryOf(dv, bitmap64, name).length
    if (size >= targetSize) {
      files.push(writeDeletionVectorFile(current, bitmap64))
      current = new Map()
      size = 1
    }
  }
  if (current.size > 0) files.push(writeDeletionVectorFile(current, bitmap64))
  return files
}

/**
 * How many bytes from `meta.offset` a range read must fetch so that `readDeletionVector` has the
 * whole entry whichever layout it turns out to be (the meta does not say which): `length + 8`
 * covers a 32-bit entry exactly and a 64-bit one with 8 bytes to spare.
 */
export function deletionVectorReadLength(meta: DeletionVectorMeta): number {
  return meta.length + 8
}

/**
 * Decodes one entry. `bytes` is the slice of the index file that starts at `meta.offset` (not
 * the whole file); it may run past the entry, e.g. `deletionVectorReadLength(meta)` bytes or the
 * rest of the file. Checks the length prefix against `meta.length`, the magic, the CRC and, when
 * the meta has one, the cardinality.
 */
export function readDeletionVector(bytes: Uint8Array, meta: DeletionVectorMeta): DeletionVector {
  const where = `deletion vector of data file ${meta.dataFileName} at offset ${meta.offset}`
  const fail = (message: string): Error => new Error(`${where}: ${message}`)
  if (bytes.length < 8) throw fail(`truncated: ${bytes.length} bytes, an entry has at least 8`)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const size = view.getInt32(0)
  let bitmap64: boolean
  if (view.getUint32(4) === BITMAP32_MAGIC) {
    bitmap64 = false
    if (size !== meta.length) {
      throw fail(`length prefix ${size} does not match meta length ${meta.length} (32-bit layout)`)
    }
  } else if (view.getUint32(4, true) === BITMAP64_MAGIC) {
    bitmap64 = true
    if (size !== meta.length - 8) {
      throw fail(
        `length prefix ${size} does not match meta length ${meta.length} − 8 (64-bit layout: ` +
          `the meta length counts the prefix and the CRC)`,
      )
    }
  } else {
    throw fail(
      `magic 0x${view.getUint32(4).toString(16)} is neither ${BITMAP32_MAGIC} (big-endian) ` +
        `nor ${BITMAP64_MAGIC} (little-endian)`,
    )
  }
  if (size < 4 || 4 + size + 4 > bytes.length) {
    throw fail(`entry of ${4 + size + 4} bytes does not fit the ${bytes.length} bytes given`)
  }
  const bin = bytes.subarray(4, 4 + size)
  const stored = view.getUint32(4 + size)
  const actual = crc32(bin)
  if (stored !== actual) {
    throw fail(
      `CRC32 ${actual.toString(16)} of the bitmap does not match stored ${stored.toString(16)}`,
    )
  }
  let bits: RoaringBitmap32 | RoaringBitmap64
  try {
    bits = bitmap64
      ? RoaringBitmap64.deserialize(bin.subarray(4))
      : RoaringBitmap32.deserialize(bin.subarray(4))
  } catch (e) {
    throw fail((e as Error).message)
  }
  const dv = new BitmapDeletionVector(bits)
  if (meta.cardinality !== null && BigInt(dv.cardinality) !== meta.cardinality) {
    throw fail(`holds ${dv.cardinality} positions, meta cardinality says ${meta.cardinality}`)
  }
  return dv
}

/** Decodes every entry of a whole index file, keyed by data file name. */
export function readDeletionVectors(
  bytes: Uint8Array,
  metas: DeletionVectorMeta[],
): Map<string, DeletionVector> {
  if (bytes.length < 1 || bytes[0] !== DELETION_VECTORS_VERSION) {
    throw new Error(
      `deletion-vector index file: version byte ${bytes[0]}, expected ${DELETION_VECTORS_VERSION}`,
    )
  }
  const out = new Map<string, DeletionVector>()
  for (const meta of metas) {
    if (!Number.isInteger(meta.offset) || meta.offset < 1 || meta.offset >= bytes.length) {
      throw new Error(
        `deletion vector of data file ${meta.dataFileName}: offset ${meta.offset} is outside ` +
          `the entries of a ${bytes.length}-byte index file`,
      )
    }
    if (out.has(meta.dataFileName)) {
      throw new Error(`deletion-vector index file: two entries for data file ${meta.dataFileName}`)
    }
    out.set(meta.dataFileName, readDeletionVector(bytes.subarray(meta.offset), meta))
  }
  return out
}
