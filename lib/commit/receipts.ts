// Commit receipts: how a sender learns what became of its commit message. After a fold, the
// committer writes one small object per settled message under `_strata/commit-receipts/`,
// named by a hash of the message's identity, before it deletes the message from the queue.
// The sender polls that key (one GET per poll), reads the outcome and deletes the receipt.
// A receipt nobody read (its sender gave up waiting and its batch was redelivered) is what
// tells the redelivered attempt that its first message landed after all; the stack's S3
// lifecycle rule removes receipts after a day, past the commit queue's retention.

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
