// `compaction.task-threads` → the compactor's Lambda concurrency (docs/operations.md,
// "compaction.task-threads on Lambda"). One bucket never runs two compactions at once in
// any mode: all jobs of a bucket share a FIFO message group, and SQS hands out nothing of a
// group while a message of it is in flight. This only sets how many buckets of a table
// compact at once, and no mode relies on Lambda throttling the event source to get there:
// a throttled batch goes back to the queue with its receive count raised, and after 5
// receives a job that never failed lands in the DLQ.
//
//   1      reserved concurrency 1 and event-source maxConcurrency 2 (the smallest Lambda
//          accepts). The Lambda side (lib/jobs/compaction-job.ts) then puts every job of
//          the table into ONE message group, the table's name, instead of one per bucket.
//          A FIFO event source never has more than one batch of a message group in flight
//          (SQS returns nothing more of a group until the batch's messages are deleted or
//          become visible again), so with a single group there is at most one batch of the
//          queue in flight and so at most one compactor invocation: one compaction at a
//          time per table, as Paimon's single compaction thread, and the second poller that
//          maxConcurrency 2 allows has nothing to invoke with, so nothing is throttled. The
//          reserved concurrency of 1 is a second fence (and keeps one environment free for
//          the table whatever else the account runs), not the mechanism.
//   N >= 2 event-source maxConcurrency N, so the pollers never invoke more than N at once
//          and are not throttled; reserved concurrency N (or the configured value >= N)
//          so that N environments are always available from the account's pool. One
//          message group per bucket (`<table>/<partition>/<bucket>`).
//   -1     one message group per bucket, so concurrency never exceeds the buckets with jobs
//          waiting; event-source maxConcurrency is the table's `compactor.maxConcurrency`
//          (default 100), an explicit cap on what one table can take from the account.
//          Reserved concurrency only if configured, and then at least that cap.

import { StrataInputError } from '../lib/types.ts'

/** The smallest maxConcurrency an SQS event source takes (Lambda's limit). */
export const MIN_EVENT_SOURCE_CONCURRENCY = 2
/** Most concurrent invocations an SQS event source can be capped at (Lambda's limit). */
export const MAX_EVENT_SOURCE_CONCURRENCY = 1000
/** The event-source cap of a `compaction.task-threads` -1 compactor unless configured. */
export const DEFAULT_UNBOUNDED_MAX_CONCURRENCY = 100

export interface CompactorConcurrency {
  /** the function's reserved concurrency; undefined = none (shares the account's pool) */
  reservedConcurrency?: number
  /** the SQS event source's maxConcurrency (always set: 2..1000) */
  maxConcurrency: number
  /** what a compaction job's FIFO message group is: the table, or its bucket */
  messageGroup: 'table' | 'bucket'
}

export interface CompactorConcurrencyOptions {
  /** `tables[].compactor.reservedConcurrency` */
  reservedConcurrency?: number
  /** `tables[].compactor.maxConcurrency`: the event-source cap at task-threads -1 only */
  maxConcurrency?: number
}

export function compactorConcurrency(taskThreads: number, opts: CompactorConcurrencyOptions = {}): CompactorConcurrency {
  const { reservedConcurrency: reserved, maxConcurrency: cap } = opts
  if (taskThreads !== -1 && cap !== undefined) {
    throw new StrataInputError(`compactor maxConcurrency ${cap} applies only when compaction.task-threads is -1; with ${taskThreads} the event source's maxConcurrency follows from task-threads`)
  }
  if (taskThreads === -1) {
    const max = cap ?? DEFAULT_UNBOUNDED_MAX_CONCURRENCY
    if (!Number.isInteger(max) || max < MIN_EVENT_SOURCE_CONCURRENCY || max > MAX_EVENT_SOURCE_CONCURRENCY) {
      throw new StrataInputError(`compactor maxConcurrency ${max}: expected an integer in ${MIN_EVENT_SOURCE_CONCURRENCY}..${MAX_EVENT_SOURCE_CONCURRENCY}`)
    }
    if (reserved !== undefined && reserved < max) {
      throw new StrataInputError(`compactor reservedConcurrency ${reserved} is below the event source's maxConcurrency ${max}; expected at least ${max}`)
    }
    return { reservedConcurrency: reserved, maxConcurrency: max, messageGroup: 'bucket' }
  }
  if (taskThreads === 1) {
    if (reserved !== undefined) throw new StrataInputError(`compactor reservedConcurrency ${reserved}: compaction.task-threads 1 sets reserved concurrency 1`)
    return { reservedConcurrency: 1, maxConcurrency: MIN_EVENT_SOURCE_CONCURRENCY, messageGroup: 'table' }
  }
  if (!Number.isInteger(taskThreads) || taskThreads < 2 || taskThreads > MAX_EVENT_SOURCE_CONCURRENCY) {
    throw new StrataInputError(`option 'compaction.task-threads': invalid value "${taskThreads}", expected -1 or an integer in 1..${MAX_EVENT_SOURCE_CONCURRENCY}`)
  }
  if (reserved !== undefined && reserved < taskThreads) {
    throw new StrataInputError(`compactor reservedConcurrency ${reserved} is below compaction.task-threads ${taskThreads}; expected at least ${taskThreads}`)
  }
  return { reservedConcurrency: reserved ?? taskThreads, maxConcurrency: taskThreads, messageGroup: 'bucket' }
}
