// The identities a snapshot's files and buckets are compared by (Paimon's FileEntry.Identifier).

import type { ManifestEntry } from '../types.ts'

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')
}

/** Identity of a data file inside a snapshot (the fields FileEntry.Identifier compares). */
export function fileIdentifier(e: ManifestEntry): string {
  return `${hex(e.partition)}|${e.bucket}|${e.file.level}|${e.file.fileName}`
}

/** Identity of a (partition, bucket). */
export function bucketIdentifier(partition: Uint8Array, bucket: number): string {
  return `${hex(partition)}|${bucket}`
}
