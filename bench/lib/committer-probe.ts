// The committer function (functions/committer.ts, its handler with the metrics flush, as
// deployed) as the benchmarks run it in an execution environment, with a probe: what one
// invocation did and where its time went, returned beside the partial batch response (the
// event-source poller reads only `batchItemFailures`, so the extra field changes nothing it
// does).
//
// The probe runs the committer on a runtime of its own (functions/shared/runtime.ts), built
// with three seams: wrappers around the commit queue it drains (receive/delete/release: the
// drain beyond the invoked batch and the receives that collect the next round while a round
// folds) and around its fold (one per round: snapshots, lost races for `snapshot-N`,
// re-plans); and a store wrapper that puts a middleware on the client of each S3 store the
// runtime opens, counting every S3 request (by operation and by what it touches). It also
// records when each `snapshot-N` conditional create succeeded: senders learn of a landing
// from the snapshot chain, so that instant, not a receipt, is when a sender's poll can first
// see its commit. The committer's code runs unchanged. Load it as `committerModule` (local
// runtime) or as the handler module of an ExecutionEnvironmentPool.

import type { S3Client } from '@aws-sdk/client-s3'
import type { Context, SQSEvent } from 'aws-lambda'
import type { DrainableCommitQueue } from '../../lib/commit/commit-queue.ts'
import type { Fold } from '../../lib/commit/commit-service.ts'
import type { ObjectStore } from '../../lib/store/object-store.ts'
import { S3Store } from '../../lib/store/s3-store.ts'
import { committerFunction } from '../../functions/committer.ts'
import { FunctionRuntime } from '../../functions/shared/runtime.ts'

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

/** Counts an S3 request of the invocation in flight: by operation and key kind, its time, a receipt's or snapshot's landing. */
function noteS3Request(p: Live, op: string, input: { Key?: string; Prefix?: string; IfNoneMatch?: string }, res: Promise<unknown>): void {
  const t0 = Date.now()
  p.s3[op] = (p.s3[op] ?? 0) + 1
  const kind = keyKind(input.Key ?? input.Prefix)
  p.s3ByKey[`${op} ${kind}`] = (p.s3ByKey[`${op} ${kind}`] ?? 0) + 1
  void res.then(
    () => (p.s3Ms += Date.now() - t0),
    () => (p.s3Ms += Date.now() - t0),
  )
  if (kind === 'receipt' && op === 'PutObject') {
    const key = input.Key!
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
  const created = op === 'PutObject' && input.IfNoneMatch ? snapshotIdOf(input.Key) : null
  if (created !== null) {
    void res.then(
      () => (p.snapshotsCreated![created] = Date.now()),
      () => undefined,
    )
  }
}

const counted = new WeakSet<S3Client>()

/** A middleware before the SDK's retries, so each command counts once, as a call of send did. */
function countRequests(client: S3Client): void {
  if (counted.has(client)) return
  counted.add(client)
  client.middlewareStack.add(
    (next, context) => (args) => {
      const res = next(args)
      const p = current
      if (p) noteS3Request(p, (context.commandName ?? 'Unknown').replace(/Command$/, ''), args.input as { Key?: string }, res)
      return res
    },
    { step: 'initialize', name: 'committerProbeS3Requests', override: true },
  )
}

/** The commit queue as the committer drains it, each call timed into the invocation in flight. */
function probedQueue(queue: DrainableCommitQueue): DrainableCommitQueue {
  const timedDelete = (call: () => Promise<void>) => async () => {
    const t0 = Date.now()
    try {
      return await call()
    } finally {
      if (current) current.deleteMs += Date.now() - t0
    }
  }
  return {
    async receive(max) {
      const t0 = Date.now()
      const got = await queue.receive(max)
      if (current) {
        current.receives++
        current.receiveMs += Date.now() - t0
        current.drained += got.length
      }
      return got
    },
    delete: (messages) => timedDelete(() => queue.delete(messages))(),
    release: (messages) => timedDelete(() => queue.release(messages))(),
  }
}

/** The fold as the committer calls it, each round's time and outcome added to the invocation in flight. */
function probedFold(fold: Fold): Fold {
  return {
    table: fold.table,
    async commit(inputs) {
      const p = current
      const t0 = Date.now()
      if (p) p.foldStartedAt ??= t0
      const r = await fold.commit(inputs)
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
    },
  }
}

/** A store the runtime opened: an S3 store's requests counted (the store itself unchanged). */
function countedStore(store: ObjectStore): ObjectStore {
  if (store instanceof S3Store) countRequests(store.client)
  return store
}

const committer = committerFunction(new FunctionRuntime({ wrapStore: countedStore, wrapFold: probedFold, wrapQueue: probedQueue }))

export async function handler(event: SQSEvent, context: Context): Promise<unknown> {
  const p: Live = {
    startedAt: Date.now(), endedAt: 0, invoked: event?.Records?.length ?? 0, receives: 0, receiveMs: 0, drained: 0,
    foldStartedAt: null, firstFoldEndedAt: null, foldEndedAt: null, folds: 0, foldMs: 0, rounds: [], snapshots: 0, messages: 0, retries: 0, replans: 0, deleteMs: 0,
    s3: {}, s3ByKey: {}, s3Ms: 0, receiptsMs: 0, receipts: {}, snapshotsCreated: {},
  }
  current = p
  try {
    const res = (await committer.handler(event, context)) as object
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
