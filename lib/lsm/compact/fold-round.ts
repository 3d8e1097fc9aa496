// One round of a table-wide compaction (lib/lsm/compact-table.ts): every bucket's job is
// planned and rewritten by compactBucket, at most `mergesAtOnce` merging at once, and their
// COMPACT commits are gathered and handed together to the folding committer, which checks
// each against the table as folded so far and lands the ones that pass in one snapshot
// (docs/design.md "The path of one commit"). A bucket whose inputs changed underneath fails
// alone with a conflict, its output deleted, exactly as its own commit would have.

import { BatchingCommitter, type FoldResult } from '../../commit/batching-committer.ts'
import type { CommitContext } from '../../commit/commit-context.ts'
import { type CommitMessage, commitMessageOf } from '../../commit/commit-message.ts'
import type { CommitRequest, CommitResult, Committer } from '../../commit/committer.ts'
import { CommitConflictError } from '../../errors.ts'
import type { MergePathRequest } from '../columnar-merge.ts'
import { compactBucket } from './compact-bucket.ts'
import type { CompactBucketResult, CompactionContext } from './context.ts'

export interface RoundBucket {
  partition: Uint8Array
  bucket: number
}

export interface RoundOptions {
  full?: boolean
  mergePath?: MergePathRequest
  /** jobs merging at once (reading and writing files); a job waiting for the fold holds none */
  mergesAtOnce: number
  /** test hook: runs once every job has written its output, before the fold */
  beforeCommit?: () => Promise<void> | void
}

/** A bucket's job in the round: its result, or what it threw (a conflict: redo it from fresh state). */
export type RoundOutcome = { result: CompactBucketResult } | { error: unknown }

interface Deferred<T> {
  promise: Promise<T>
  resolve: (v: T) => void
  reject: (e: unknown) => void
}

function deferred<T>(): Deferred<T> {
  let resolve!: (v: T) => void
  let reject!: (e: unknown) => void
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)))
  return { promise, resolve, reject }
}

/** A commit request handed to the round instead of a committer; settled by the fold. */
interface Gathered {
  message: CommitMessage
  reply: Deferred<CommitResult>
}

/** Compacts the buckets, landing every commit of the round in one fold; one outcome per bucket, in order. */
export async function compactRound(table: CompactionContext & CommitContext, buckets: RoundBucket[], o: RoundOptions): Promise<RoundOutcome[]> {
  const gathered: Gathered[] = []
  // a job reaches the fold when it asks for its commit, or when it ends without one
  const reached = buckets.map(() => deferred<void>())
  const jobs: Promise<CompactBucketResult>[] = []
  let next = 0
  const worker = async () => {
    while (next < buckets.length) {
      const i = next++
      const committer: Committer = {
        commit: async (req: CommitRequest) => {
          const reply = deferred<CommitResult>()
          try {
            gathered.push({ message: commitMessageOf(req), reply })
          } finally {
            reached[i].resolve()
          }
          return reply.promise
        },
      }
      jobs[i] = compactBucket(table, { partition: buckets[i].partition, bucket: buckets[i].bucket, full: o.full, mergePath: o.mergePath, committer })
      const ended = () => reached[i].resolve()
      jobs[i].then(ended, ended)
      await reached[i].promise
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(o.mergesAtOnce, buckets.length)) }, worker))
  if (gathered.length) await fold(table, gathered, o)
  return (await Promise.allSettled(jobs)).map((s) => (s.status === 'fulfilled' ? { result: s.value } : { error: s.reason }))
}

/** Folds the gathered commits and answers each job with its outcome. */
async function fold(table: CommitContext, gathered: Gathered[], o: RoundOptions): Promise<void> {
  let folded: FoldResult
  try {
    await o.beforeCommit?.()
    folded = await new BatchingCommitter(table).commit(gathered.map((g) => g.message))
  } catch (e) {
    for (const g of gathered) g.reply.reject(e)
    return
  }
  gathered.forEach((g, i) => {
    const out = folded.outcomes[i]
    if (out.status !== 'failed') g.reply.resolve({ snapshotId: out.snapshotId, retries: folded.retries, deduplicated: out.status === 'duplicate' })
    // refused by the fold's checks, the message was handed to no other committer: it never
    // lands, so its job deletes what it wrote (settleFailedJob)
    else g.reply.reject(out.conflict ? new CommitConflictError(out.error.message, true) : out.error)
  })
}
