// Paimon's fixed-bucket function (`bucket-function.type` = DEFAULT; paimon-core
// bucket/DefaultBucketFunction.java, table/sink/FixedBucketRowKeyExtractor.java;
// docs/format.md "Bucket function"): murmur hash of the bucket key's BinaryRow body, then
// `Math.abs(hash % numBuckets)`. Readers recompute it to prune buckets, so a row written to
// another bucket is invisible to key lookups.

import { StrataInputError } from '../errors.ts'
import type { DataType, Value } from '../types.ts'
import { transientRowBytes, writeBinaryRowTransient } from './binary-row.ts'
import { murmurHashBytes, murmurHashRange } from './murmur.ts'

/** `BinaryRow.hashCode()` of a row body (no arity prefix). */
export function binaryRowHash(body: Uint8Array): number {
  return murmurHashBytes(body)
}

/** Java's `Math.abs(hash % n)`: JS `%` on int32 values truncates toward zero like Java's. */
export function bucketOfHash(hash: number, numBuckets: number): number {
  return Math.abs(hash % numBuckets)
}

function checkNumBuckets(numBuckets: number): void {
  if (!Number.isInteger(numBuckets) || numBuckets < 1 || numBuckets > 2147483647) {
    throw new StrataInputError(
      `bucket: got ${numBuckets} buckets, expected a positive int32 (option 'bucket' of a fixed-bucket table)`,
    )
  }
}

/** Bucket of a row whose bucket-key fields (in bucket-key order) are `values`. */
export function bucketOf(types: DataType[], values: Value[], numBuckets: number): number {
  checkNumBuckets(numBuckets)
  // Hash the shared encode buffer in place: no allocation per row.
  const size = writeBinaryRowTransient(types, values)
  return Math.abs(murmurHashRange(transientRowBytes(), 0, size) % numBuckets)
}

/** `bucketOf` bound to one bucket-key type list and bucket count, for per-row use. */
export function bucketFunction(types: DataType[], numBuckets: number): (values: Value[]) => number {
  checkNumBuckets(numBuckets)
  return (values) => {
    const size = writeBinaryRowTransient(types, values)
    return Math.abs(murmurHashRange(transientRowBytes(), 0, size) % numBuckets)
  }
}
