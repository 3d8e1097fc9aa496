// Commit messages from the real write and compaction paths: a Committer that records the
// request it is handed instead of landing it (the port writeBatch and compactBucket take),
// turned into the message the queued committer would send.

import type { CommitRequest, CommitResult, Committer } from '../../lib/commit/committer.ts'
import { type CommitMessage, commitMessageOf } from '../../lib/commit/commit-message.ts'
import { compactBucket } from '../../lib/lsm/compact/compact-bucket.ts'
import type { CompactBucketRequest } from '../../lib/lsm/compact/context.ts'
import type { Table } from '../../lib/handle/table.ts'
import type { WriteRecord } from '../../lib/write/record-checks.ts'
import { type WriteOptions, writeBatch } from '../../lib/write/table-write.ts'

export class RecordingCommitter implements Committer {
  readonly requests: CommitRequest[] = []
  async commit(req: CommitRequest): Promise<CommitResult> {
    this.requests.push(req)
    return { snapshotId: -1, retries: 0, deduplicated: false }
  }
}

/** writeBatch, with its commit as a message (null when the batch wrote nothing). */
export async function writeMessage(table: Table, records: WriteRecord[], opts: WriteOptions & { table?: string } = {}): Promise<CommitMessage | null> {
  const rec = new RecordingCommitter()
  await writeBatch(table, records, { ...opts, committer: rec })
  return rec.requests.length ? commitMessageOf(rec.requests[0], opts.table) : null
}

/** compactBucket, with its commit as a message (null when the bucket needs nothing). */
export async function compactionMessage(table: Table, req: CompactBucketRequest, tableName?: string): Promise<CommitMessage | null> {
  const rec = new RecordingCommitter()
  await compactBucket(table, { ...req, committer: rec })
  return rec.requests.length ? commitMessageOf(rec.requests[0], tableName) : null
}
