// The committer function (functions/committer.ts `handler`, the deployed export) as the
// benchmarks run it in an execution environment, with a probe: what one invocation did and
// where its time went, returned beside the partial batch response (the event-source poller
// reads only `batchItemFailures`, so the extra field changes nothing it does).
//
// The probe wraps, inside this worker thread only, the methods the committer calls:
// SqsCommitQueue receive/delete/release (the drain beyond the invoked batch and the receives
// that collect the next round while a round folds), the BatchingCommitter's fold (one per
// round: snapshots, lost races for `snapshot-N`, re-plans), and every S3 request the worker
// sends (by operation and by what it touches). It also records when each `snapshot-N`
// conditional create succeeded: senders learn of a landing from the snapshot chain, so that
// instant, not a receipt, is when a sender's poll can first see its commit. No lib/ code
// changes; the wrapped methods run unchanged. Load it as `committerModule` (local runtime) or as the
// handler module of an ExecutionEnvironmentPool.

import { S3Client } from '@aws-sdk/client-s3'
import type { Context, SQSEvent } from 'aws-lambda'
import { BatchingCommitter } from '../../lib/commit/batching-committer.ts'
import { SqsCommitQueue } from '../../lib/commit/commit-queue.ts'
import { handler as committerHandler } from '../../functions/committer.ts'

export interface CommitterProbe {
  startedAt: number
  endedAt: number
  /** records of the invoked batch */
  invoked: number
  /**
   * receives beyond the batch: the first drain, those that collect the next round while a
   * round folds (one at a time while the queue is idle), and the last look before the
   * invocation ends; receiveMs is their summed time (several overlap)
   */
  receives: number
  receiveMs: number
  drained: number
  /** the folds (BatchingCommitter.commit, one per round): the first one's start, the first and the last one's end, their summed time, snapshots created, messages in them */
  foldStartedAt: number | null
  firstFoldEndedAt?: number | null
  foldEndedAt: number | null
  folds: number
  foldMs: number
  /** each fold (round): messages folded, its time (ms) */
  rounds?: { size: number; ms: number }[]
  snapshots: number
  messages: number
  /** lost races for `snapshot-N` inside the fold (the other committer got there first) */
  retries: number
  replans: number
  /** delete (and release) of drained messages */
  deleteMs: number
  /** S3 requests of the invocation: per operation, and per operation and kind of key ("GetObject snapshot") */
  s3: Record<string, number>
  s3ByKey: Record<string, number>
  /** summed duration of those requests (they overlap where the committer sends several at once), ms */
  s3Ms: number
  /**
   * S3 time spent writing receipts, from the first receipt PUT's start to the last one's
   * end: only conflicts get one since senders follow the snapshot chain (before that, every
   * settled message did)
   */
  receiptsMs: number
  /** receipt key → Date.now() when its PUT completed */
  receipts: Record<string, number>
  /**
   * snapshot id → Date.now() when its conditional create (PutObject If-None-Match) returned
   * success: the snapshot exists from then on, so a sender's next probe can find it. Lost
   * races (412) are not in it.
   */
  snapshotsCreated?: Record<number, number>
}

type Live = CommitterProbe & { receiptsFirstStart?: number }

let current: Live | null = null

const keyKind = (key: string | undefined): string => {
  if (!key) return 'list/other'
  if (key.includes('_strata/commit-receipts/')) return 'receipt'
  if (key.includes('_strata/folded-commits/')) return 'folded-commits sidecar'
  if (key.includes('_strata/commit-messages/')) return 'spilled message'
  if (/\/snapshot\/(LATEST|EARLIEST)$/.test(key)) return 'snapshot hint'
  if (key.includes('/snapshot/')) return 'snapshot'
  if (key.includes('/manifest/')) return 'manifest'
  if (key.includes('/index/')) return 'index'
  return 'other'
}

/** N of a `…/snapshot/snapshot-N` key, else null. */
const snapshotIdOf = (key: string | undefined): number | null => {
  const m = key ? /(?:^|\/)snapshot\/snapshot-(\d+)$/.exec(key) : null
  return m ? Number(m[1]) : null
}

function install(): void {
  const s3Send = S3Client.prototype.send
  S3Client.prototype.send = function (this: S3Client, command: { constructor: { name: string }; input?: { Key?: string; Prefix?: string; IfNoneMatch?: string } }, ...rest: unknown[]) {
    const p = current
    if (!p) return (s3Send as (...a: unknown[]) => unknown).call(this, command, ...rest)
    const op = command.constructor.name.replace(/Command$/, '')
    p.s3[op] = (p.s3[op] ?? 0) + 1
    const kind = keyKind(command.input?.Key ?? command.input?.Prefix)
    p.s3ByKey[`${op} ${kind}`] = (p.s3ByKey[`${op} ${kind}`] ?? 0) + 1
    const t0 = Date.now()
    const res = (s3Send as (...a: unknown[]) => Promise<unknown>).call(this, command, ...rest)
    void res.then(
      () => (p.s3Ms += Date.now() - t0),
      () => (p.s3Ms += Date.now() - t0),
    )
    if (kind === 'receipt' && op === 'PutObject') {
      const key = command.input!.Key!
      const name = key.slice(key.lastIndexOf('/') + 1)
      void res.then(
        () => {
          const t1 = Date.now()
          p.receipts[name] = t1
          p.receiptsFirstStart ??= t0
          p.receiptsMs = t1 - p.receiptsFirstStart
        },
        () => undefined,
      )
    }
    const created = op === 'PutObject' && command.input?.IfNoneMatch ? snapshotIdOf(command.input.Key) : null
    if (created !== null) {
      void res.then(
        () => (p.snapshotsCreated![created] = Date.now()),
        () => undefined,
      )
    }
    return res
  } as typeof S3Client.prototype.send

  const receive = SqsCommitQueue.prototype.receive
  SqsCommitQueue.prototype.receive = async function (this: SqsCommitQueue, max: number) {
    const t0 = Date.now()
    const got = await receive.call(this, max)
    if (current) {
      current.receives++
      current.receiveMs += Date.now() - t0
      current.drained += got.length
    }
    return got
  }
  for (const name of ['delete', 'release'] as const) {
    const orig = SqsCommitQueue.prototype[name]
    SqsCommitQueue.prototype[name] = async function (this: SqsCommitQueue, messages) {
      const t0 = Date.now()
      try {
        return await orig.call(this, messages)
      } finally {
        if (current) current.deleteMs += Date.now() - t0
      }
    }
  }

  const fold = BatchingCommitter.prototype.commit
  BatchingCommitter.prototype.commit = async function (this: BatchingCommitter, inputs) {
    const p = current
    const t0 = Date.now()
    if (p) p.foldStartedAt ??= t0
    const r = await fold.call(this, inputs)
    if (p) {
      p.foldEndedAt = Date.now()
      p.firstFoldEndedAt ??= p.foldEndedAt
      p.folds++
      p.foldMs += p.foldEndedAt - t0
      p.rounds!.push({ size: inputs.length, ms: p.foldEndedAt - t0 })
      p.snapshots += r.snapshots.length
      p.messages += r.snapshots.reduce((n, s) => n + s.messages, 0)
      p.retries += r.retries
      p.replans += r.replans
    }
    return r
  }
}

install()

export async function handler(event: SQSEvent, context: Context): Promise<unknown> {
  const p: Live = {
    startedAt: Date.now(), endedAt: 0, invoked: event?.Records?.length ?? 0, receives: 0, receiveMs: 0, drained: 0,
    foldStartedAt: null, firstFoldEndedAt: null, foldEndedAt: null, folds: 0, foldMs: 0, rounds: [], snapshots: 0, messages: 0, retries: 0, replans: 0, deleteMs: 0,
    s3: {}, s3ByKey: {}, s3Ms: 0, receiptsMs: 0, receipts: {}, snapshotsCreated: {},
  }
  current = p
  try {
    const res = (await committerHandler(event, context)) as object
    return { ...res, probe: done(p) }
  } finally {
    current = null
  }
}

function done(p: Live): CommitterProbe {
  p.endedAt = Date.now()
  delete p.receiptsFirstStart
  return p
}

/** The probe of an invocation result, if the committer module was this one. */
export function probeOf(value: unknown): CommitterProbe | null {
  return (value as { probe?: CommitterProbe } | null)?.probe ?? null
}
