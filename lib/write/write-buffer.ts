// What the batch writer's buffer charges against `write-buffer-size`: an estimate of the
// memory each buffered record and each buffered (partition, bucket) group takes
// (lib/write/table-write.ts BatchWriter).

import type { Row } from '../types.ts'

/**
 * How much memory a buffered record is charged against `write-buffer-size`: an estimate of
 * what the column buffer (lib/write/column-buffer.ts) holds for it — 8 bytes per number,
 * bigint or null in a typed array, a string's slot and characters, a byte array's object
 * and bytes — not its encoded size. Partition values are charged though a group holds them
 * once, and typed arrays grow by doubling, so the estimate is high rather than low.
 * Deterministic, so a test can tell where a batch's flushes fall; the 'rows' buffer is
 * charged the same, so both buffers flush at the same records.
 */
export function bufferedRecordBytes(row: Row): number {
  let bytes = RECORD_OVERHEAD_BYTES
  for (let i = 0; i < row.length; i++) {
    const v = row[i]
    if (typeof v === 'string') bytes += 24 + v.length
    else if (v instanceof Uint8Array) bytes += 96 + v.length
    else bytes += 8
  }
  return bytes
}

/** The record's kind and batch index, and its slot in the sort permutation and the gathered output at flush. */
const RECORD_OVERHEAD_BYTES = 16

/**
 * How much memory a (partition, bucket) group is charged when its first record arrives: its
 * objects and first arrays (about 1.9 KB for 4 fields, measured with V8's heap), so a batch
 * of one record into each of many partitions flushes at `write-buffer-size` too, not only
 * a batch of many records. Charged alike for both buffers, from the FREE_GROUPS + 1st group
 * of a flush on.
 */
export function bufferedGroupBytes(fieldCount: number): number {
  return 640 + 320 * fieldCount
}

/**
 * Groups of a flush not charged: their memory (at most about 64 × 4 KB) is within the
 * slack of the records' estimate, and a batch over a few buckets keeps the flush points
 * bufferedRecordBytes alone sets.
 */
export const FREE_GROUPS = 64
