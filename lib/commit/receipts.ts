// Conflict receipts: how a sender learns that its commit message can never land. A landing
// needs no receipt (the sender finds its identity in the snapshot chain: queued-committer.ts);
// a compaction whose inputs are gone creates no snapshot, so the committer writes one small
// object under `_strata/commit-receipts/`, named by a hash of the message's identity,
// before it deletes the message from the queue. The sender polls that key beside the next
// snapshot, reads the conflict and deletes the receipt; the stack's S3 lifecycle rule
// removes receipts nobody read after a day, past the commit queue's retention. Senders still
// honour a landed or duplicate receipt, which committers before this scheme wrote.

import { createHash } from 'node:crypto'
import type { ObjectStore } from '../store/object-store.ts'

export const COMMIT_RECEIPT_DIR = '_strata/commit-receipts/'

export type CommitReceipt =
  | { status: 'landed' | 'duplicate'; snapshotId: number }
  /** the message can never land as it is (a compaction whose inputs are gone) */
  | { status: 'conflict'; error: string }

export function receiptKey(identity: string): string {
  return `${COMMIT_RECEIPT_DIR}${createHash('sha256').update(identity).digest('hex')}.json`
}

export async function writeReceipt(store: ObjectStore, identity: string, r: CommitReceipt): Promise<void> {
  await store.put(receiptKey(identity), new TextEncoder().encode(JSON.stringify({ identity, ...r })))
}

export async function readReceipt(store: ObjectStore, identity: string): Promise<CommitReceipt | null> {
  const bytes = await store.get(receiptKey(identity))
  if (!bytes) return null
  const { identity: named, ...r } = JSON.parse(new TextDecoder().decode(bytes)) as CommitReceipt & { identity?: string }
  // a hash collision is not expected; a receipt of another identity is not ours
  if (named !== identity) return null
  return r as CommitReceipt
}
