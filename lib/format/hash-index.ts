// Paimon's HASH index files, the key index of dynamic bucket mode (docs/format.md "Hash index
// files"; paimon-core index/HashIndexFile.java, paimon-common utils/IntFileUtils.java).
//
// One file per (partition, bucket), named `index-<uuid>-<n>` like every index file: the
// 32-bit hashes (`BinaryRow.hashCode()` of the trimmed primary key) of every key the bucket
// was ever given, each a big-endian int32, in no particular order, nothing else. Its index
// manifest entry has index type `HASH`, the file size, the number of hashes as row count and
// no deletion-vector ranges. A commit that changes a bucket's hashes replaces its one file.

/** `HashIndexFile.HASH_INDEX`: the index type of the entries. */
export const HASH_INDEX = 'HASH'

/** The hashes as a file: each a big-endian int32 (`IntFileUtils.writeInts`). */
export function writeHashIndex(hashes: ArrayLike<number>): Uint8Array {
  const out = new Uint8Array(hashes.length * 4)
  const dv = new DataView(out.buffer)
  for (let i = 0; i < hashes.length; i++) dv.setInt32(i * 4, hashes[i])
  return out
}

/**
 * The hashes of a file. Java reads ints until fewer than four bytes are left; a length that
 * is not a multiple of four can only be a torn or foreign file, so it is refused (the caller
 * names the file).
 */
export function readHashIndex(bytes: Uint8Array): Int32Array {
  if (bytes.length % 4 !== 0) throw new Error(`HASH index: ${bytes.length} bytes, expected a multiple of 4 (big-endian int32 key hashes)`)
  const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const out = new Int32Array(bytes.length / 4)
  for (let i = 0; i < out.length; i++) out[i] = dv.getInt32(i * 4)
  return out
}
