// `compaction.task-threads` → the compactor's reserved concurrency, event-source maxConcurrency
// and message groups. The mapping, and why no mode relies on Lambda throttling the event source:
// docs/operations.md "compaction.task-threads on Lambda".

import { StrataInputError } from '../lib/errors.ts'

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
