// The compactor function (functions/compactor.ts, its handler with the metrics flush, as
// deployed) with a probe, for the local runtime's `compactorModule`: what one invocation's
// compactions did with their commits, returned beside the partial batch response (the
// event-source poller reads only `batchItemFailures`).
//
// It runs the compactor on a runtime of its own (functions/shared/runtime.ts), built with two
// seams: a wrapper around each table's committer, which times each commit from its call until
// it returns (having seen its landing in the snapshot chain or its conflict receipt) and
// keeps its outcome; and an observer of the metrics the handler adds (its per-compaction
// metrics: `CompactionTime` per bucket, `CommitRetries` = the compaction's result.retries +
// the fresh-state retries process-jobs made after a conflict or a failed commit; and the
// freshness budget's stage metrics, returned as `stageMetrics`). The compactor's code runs
// unchanged.

import type { Context, SQSEvent } from 'aws-lambda'
import type { CommitRequest, CommitResult, Committer } from '../../lib/commit/committer.ts'
import { CommitConflictError } from '../../lib/errors.ts'
import { compactorFunction } from '../../functions/compactor.ts'
import { type AddedMetric, FunctionRuntime } from '../../functions/shared/runtime.ts'
import { STAGE_METRICS } from '../../local/freshness-budget.ts'

export interface CompactorProbe {
  startedAt: number
  endedAt: number
  /** compactions that finished (one per bucket of the batch), each its wall time from start to commit landed */
  compactionMs: number[]
  /** commits sent through the commit queue; of them conflicting (a conflict receipt) and failed (CommitFailedError: not landed in time; or another error) */
  commits: number
  conflicts: number
  failedCommits: number
  /** each commit's time from its call to its return: its landing seen, or its conflict receipt read */
  commitMs: number[]
  /** Σ retries the committer reported back (the compactions' result.retries; 0 through the queue, where the committer's races stay inside it) */
  commitRetries: number
  /** Σ `CommitRetries` metric: result.retries + process-jobs' fresh-state retries */
  commitRetriesMetric: number
  /**
   * time when every compaction in flight was waiting in its commit (none was reading,
   * merging or writing): what the invocation would not have spent with instant commits
   */
  blockedOnCommitMs: number
}

type Live = CompactorProbe & { commitSpans: [number, number][]; compactionSpans: [number, number][]; stageMetrics: [string, number][] }

let current: Live | null = null

/** The table's committer, each commit of the invocation in flight counted, its outcome and span kept. */
function timedCommitter(committer: Committer): Committer {
  return {
    async commit(req: CommitRequest): Promise<CommitResult> {
      const p = current
      const startedAt = Date.now()
      try {
        const result = await committer.commit(req)
        if (p) p.commitRetries += result.retries
        return result
      } catch (error) {
        if (p && error instanceof CommitConflictError) p.conflicts++
        else if (p) p.failedCommits++
        throw error
      } finally {
        if (p) {
          const endedAt = Date.now()
          p.commits++
          p.commitMs.push(endedAt - startedAt)
          p.commitSpans.push([startedAt, endedAt])
        }
      }
    },
  }
}

/** A metric the handler added during the invocation in flight: the ones the probe sums, and the freshness budget's. */
function noteMetric({ name, value }: AddedMetric): void {
  const p = current
  if (p && STAGE_METRICS.has(name)) p.stageMetrics.push([name, value])
  if (p && name === 'CommitRetries') p.commitRetriesMetric += value
  if (p && name === 'CompactionTime') {
    const now = Date.now()
    p.compactionMs.push(value)
    p.compactionSpans.push([now - value, now])
  }
}

const compactor = compactorFunction(new FunctionRuntime({ wrapCommitter: timedCommitter, onMetric: noteMetric }))

/** Length of the time covered by every compaction span in flight being inside a commit span. */
function blockedOnCommit(compactions: [number, number][], commits: [number, number][]): number {
  const events: [number, number, number][] = []
  for (const [a, b] of compactions) events.push([a, 1, 0], [b, -1, 0])
  for (const [a, b] of commits) events.push([a, 0, 1], [b, 0, -1])
  // ends before starts at the same instant
  events.sort((x, y) => x[0] - y[0] || x[1] + x[2] - (y[1] + y[2]))
  let running = 0
  let committing = 0
  let last = 0
  let blocked = 0
  for (const [t, dr, dc] of events) {
    if (running > 0 && committing >= running) blocked += t - last
    running += dr
    committing += dc
    last = t
  }
  return blocked
}

export async function handler(event: SQSEvent, context: Context): Promise<unknown> {
  const p: Live = {
    startedAt: Date.now(), endedAt: 0, compactionMs: [], commits: 0, conflicts: 0, failedCommits: 0, commitMs: [], commitRetries: 0, commitRetriesMetric: 0,
    blockedOnCommitMs: 0, commitSpans: [], compactionSpans: [], stageMetrics: [],
  }
  current = p
  try {
    const res = (await compactor.handler(event, context)) as object
    // the freshness budget's metrics beside it, as local/stage-probe.ts returns them
    const stageMetrics = p.stageMetrics
    return { ...res, probe: done(p), stageMetrics }
  } finally {
    current = null
  }
}

function done(p: Live): CompactorProbe {
  p.endedAt = Date.now()
  p.blockedOnCommitMs = blockedOnCommit(p.compactionSpans, p.commitSpans)
  const { commitSpans: _c, compactionSpans: _s, stageMetrics: _m, ...out } = p
  return out
}

/** The probe of an invocation result, if the compactor module was this one. */
export function compactorProbeOf(value: unknown): CompactorProbe | null {
  return (value as { probe?: CompactorProbe } | null)?.probe ?? null
}
