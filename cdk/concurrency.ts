// `compaction.task-threads` → the compactor's Lambda concurrency (docs/operations.md,
// "compaction.task-threads on Lambda"). One bucket never runs two compactions at once in
// any mode: the FIFO message group of a bucket does that. This only sets how many buckets
// of a table compact at once.
//
//   1      reserved concurrency 1: one compaction at a time per table, as Paimon's single
//          compaction thread. (An SQS event source's maxConcurrency cannot be below 2.)
//   N >= 2 event-source maxConcurrency N, so the pollers never invoke more than N at once
//          and are not throttled; reserved concurrency N (or the configured value >= N)
//          so that N environments are always available from the account's pool.
//   -1     neither: Lambda scales with the active message groups (one per active bucket).

import { StrataInputError } from '../lib/types.ts'

export interface CompactorConcurrency {
  reservedConcurrency?: number
  maxConcurrency?: number
}

export function compactorConcurrency(taskThreads: number, reservedOverride?: number): CompactorConcurrency {
  if (taskThreads === -1) return {}
  if (taskThreads === 1) return { reservedConcurrency: 1 }
  if (!Number.isInteger(taskThreads) || taskThreads < 2) {
    throw new StrataInputError(`option 'compaction.task-threads': invalid value "${taskThreads}", expected -1 or an integer >= 1`)
  }
  if (reservedOverride !== undefined && reservedOverride < taskThreads) {
    throw new StrataInputError(`compactor reservedConcurrency ${reservedOverride} is below compaction.task-threads ${taskThreads}; expected at least ${taskThreads}`)
  }
  return { maxConcurrency: taskThreads, reservedConcurrency: reservedOverride ?? taskThreads }
}
