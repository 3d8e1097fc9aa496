// Paimon's Murmur3 variant (paimon-common utils/MurmurHashUtils.hashBytes; docs/format.md "Bucket function").
// It is murmur3_x86_32 over little-endian 4-byte words, except for the tail: each trailing byte
// is sign-extended and mixed as a whole word of its own, so for lengths that are not a multiple
// of 4 the result differs from the standard murmur3. BinaryRow sizes are multiples of 8, so
// bucket hashing never reaches the tail, but the tail is kept exact for other callers.

/** `MurmurHashUtils.DEFAULT_SEED`, the seed `BinaryRow.hashCode()` uses. */
export const MURMUR_DEFAULT_SEED = 42

const C1 = 0xcc9e2d51 | 0
const C2 = 0x1b873593 | 0

function mixK1(k: number): number {
  k = Math.imul(k, C1)
  k = (k << 15) | (k >>> 17)
  return Math.imul(k, C2)
}

function mixH1(h: number, k: number): number {
  h ^= k
  h = (h << 13) | (h >>> 19)
  return (Math.imul(h, 5) + 0xe6546b64) | 0
}

/** Hash of `bytes[offset, offset + length)`, as a signed int32 (Java `int`). */
export function murmurHashRange(
  bytes: Uint8Array,
  offset: number,
  length: number,
  seed: number = MURMUR_DEFAULT_SEED,
): number {
  let h = seed | 0
  const end = offset + length
  const alignedEnd = end - (length & 3)
  let i = offset
  for (; i < alignedEnd; i += 4) {
    const word = bytes[i] | (bytes[i + 1] << 8) | (bytes[i + 2] << 16) | (bytes[i + 3] << 24)
    h = mixH1(h, mixK1(word))
  }
  for (; i < end; i++) h = mixH1(h, mixK1((bytes[i] << 24) >> 24))
  h ^= length
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b | 0)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35 | 0)
  h ^= h >>> 16
  return h | 0
}

/** Paimon `MurmurHashUtils.hashBytes` over all of `bytes`: a signed int32. */
export function murmurHashBytes(bytes: Uint8Array, seed: number = MURMUR_DEFAULT_SEED): number {
  return murmurHashRange(bytes, 0, bytes.length, seed)
}
