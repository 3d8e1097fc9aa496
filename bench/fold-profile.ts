// CPU of one fold, without S3 or SQS: k compaction messages (each a bucket of a
// deletion-vector table compacted from the same snapshot) folded by one BatchingCommitter
// on an in-memory store, so what is measured is the committer's own work per message.
// `npx tsx bench/fold-profile.ts [--quick]` (sizes 100, 300, 1000; --quick: 100); add `node --cpu-prof --import tsx`
// to see where it goes.
//
// `--steady`: the committer's own previous snapshots, as in a committer's back-to-back
// rounds: the writer batches go through the same committer (as APPEND messages) before each
// compaction fold, so a fold finds nothing foreign; the third COMPACT fold is measured.
// With `--trace` it prints that fold's requests.
//
// `--s3` (with --steady): the store is S3 through the AWS SDK, on the embedded backend in a
// child process with 20 ms first-byte latency, so the fold's own CPU (here, for --cpu-prof)
// includes the SDK's, as in the committer function.
//
// `--trace`: every store request waits 20 ms (the benchmarks' S3 first-byte latency) and
// the second fold of a warm committer, on its own table handle after two writer commits
// and the compactions it folds landed through another, prints its requests with their
// start and end times, so the chain of dependent round trips a round waits for can be read off.

import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { commitMessageOf, type CommitMessage } from '../lib/commit/commit-message.ts'
import type { CommitRequest, Committer } from '../lib/commit/committer.ts'
import { serializeBinaryRow } from '../lib/format/binary-row.ts'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { InterceptingStore, type StoreOp } from '../lib/store/intercepting-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { bucketFunction } from '../lib/format/bucket.ts'
import { Table } from '../lib/handle/table.ts'
import { RowKind } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { parseBenchArgs } from './lib/args.ts'
import { startBackendProcess } from '../local/backend-process.ts'
import { S3Store } from '../lib/store/s3-store.ts'

const args = parseBenchArgs(process.argv.slice(2), ['--quick', '--trace', '--steady', '--s3'], [])
const sizes = args.has('--quick') ? [100] : args.has('--trace') && args.has('--steady') ? [10, 100, 300, 1000] : [100, 300, 1000]
const LATENCY_MS = 20

/** A store whose requests each wait LATENCY_MS and, while `on`, are logged. */
class TracedStore extends InterceptingStore {
  on = false
  readonly log: { op: StoreOp; key: string; t0: number; t1: number }[] = []
  protected async call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
    const t0 = performance.now()
    await new Promise((r) => setTimeout(r, LATENCY_MS))
    const v = await run()
    if (this.on) this.log.push({ op, key, t0, t1: performance.now() })
    return v
  }
}

/**
 * Two fresh L0 files in each of k buckets, then each bucket's compaction as a commit message.
 * With `via`, the writer batches are folded by that committer (as APPEND messages) instead
 * of committed directly.
 */
async function compactionMessages(table: Table, k: number, next: { id: number }, via?: BatchingCommitter): Promise<CommitMessage[]> {
  const bucketOf = bucketFunction(table.view.bucketKeyTypes, k)
  for (let round = 0; round < 2; round++) {
    const ids: number[] = []
    const seen = new Set<number>()
    while (seen.size < k) {
      const id = next.id++
      const b = bucketOf([BigInt(id)])
      if (!seen.has(b)) (seen.add(b), ids.push(id))
    }
    const rows = ids.map((id) => ({ kind: RowKind.INSERT, row: [BigInt(id), `v${id}`] }))
    if (!via) await writeBatch(table, rows)
    else {
      const appends: CommitRequest[] = []
      await writeBatch(table, rows, { committer: capturing(appends) })
      const r = await via.commit(appends.map((a) => commitMessageOf(a, 't')))
      if (r.outcomes.some((o) => o.status !== 'landed')) throw new Error('steady: a writer batch did not land')
    }
  }
  const reqs: CommitRequest[] = []
  const capture = capturing(reqs)
  const partition = serializeBinaryRow([], [])
  for (let b = 0; b < k; b++) await compactBucket(table, { partition, bucket: b, full: true, committer: capture })
  return reqs.map((r) => commitMessageOf(r, 't'))
}

function capturing(into: CommitRequest[]): Committer {
  return { async commit(req) { into.push(req); return { snapshotId: -1, retries: 0, deduplicated: false } } }
}

async function tableOf(store: ObjectStore, k: number): Promise<Table> {
  return Table.create(store, {
    fields: [{ name: 'id', type: 'BIGINT' }, { name: 'v', type: 'STRING' }],
    primaryKeys: ['id'],
    partitionKeys: [],
    options: { bucket: String(k), 'deletion-vectors.enabled': 'true' },
  })
}

for (const k of sizes) {
  const next = { id: 0 }
  if (args.has('--steady')) {
    const backend = args.has('--s3') ? await startBackendProcess({ firstByteMs: LATENCY_MS }) : undefined
    if (backend) await backend.createBucket(`fold-${k}`)
    const store: ObjectStore = backend ? new S3Store({ bucket: `fold-${k}`, prefix: 't', client: backend.s3Client() }) : args.has('--trace') ? new TracedStore(new MemoryStore()) : new MemoryStore()
    const table = await tableOf(store, k)
    const committer = new BatchingCommitter(await Table.open(store))
    for (let i = 0; i < 2; i++) await committer.commit(await compactionMessages(table, k, next, committer))
    const messages = await compactionMessages(table, k, next, committer)
    if (store instanceof TracedStore) store.on = true
    // FOLD_PROFILE=<file>: a V8 CPU profile of the measured fold alone
    const session = process.env.FOLD_PROFILE ? new Session() : undefined
    if (session) {
      session.connect()
      await session.post('Profiler.enable')
      await session.post('Profiler.start')
    }
    const t0 = performance.now()
    const r = await committer.commit(messages)
    const ms = performance.now() - t0
    if (session) {
      const { profile } = await session.post('Profiler.stop')
      writeFileSync(`${process.env.FOLD_PROFILE}-${k}.cpuprofile`, JSON.stringify(profile))
      session.disconnect()
    }
    if (store instanceof TracedStore) {
      store.on = false
      for (const l of store.log) console.log(`${(l.t0 - t0).toFixed(0).padStart(5)} → ${(l.t1 - t0).toFixed(0).padStart(5)} ms  ${l.op.padEnd(11)} ${l.key}`)
    }
    const landed = r.outcomes.filter((o) => o.status === 'landed').length
    await backend?.stop()
    console.log(`COMPACT × ${k}, steady (third fold, nothing foreign)${store instanceof TracedStore || backend ? `, ${LATENCY_MS} ms per request${backend ? ', S3 on the embedded backend' : ''}` : ''}: fold ${ms.toFixed(0)} ms (${(ms / k).toFixed(2)} ms per message), ${landed} landed in ${r.snapshots.length} snapshot(s)`)
    continue
  }
  if (args.has('--trace')) {
    const store = new TracedStore(new MemoryStore())
    const table = await tableOf(store, k)
    // the committer's own handle, as in the committer function: what the writes and
    // compactions of the other handle land is new to it, as another committer's and the
    // writers' snapshots are to a committer between its rounds
    const committer = new BatchingCommitter(await Table.open(store))
    // the first fold warms the handle's caches, as a committer's earlier rounds do
    await committer.commit(await compactionMessages(table, k, next))
    const messages = await compactionMessages(table, k, next)
    store.on = true
    const t0 = performance.now()
    const r = await committer.commit(messages)
    const ms = performance.now() - t0
    store.on = false
    for (const l of store.log) console.log(`${(l.t0 - t0).toFixed(0).padStart(5)} → ${(l.t1 - t0).toFixed(0).padStart(5)} ms  ${l.op.padEnd(11)} ${l.key}`)
    console.log(`COMPACT × ${k}, warm, ${LATENCY_MS} ms per request: fold ${ms.toFixed(0)} ms, ${store.log.length} requests, ${r.snapshots.length} snapshot(s)`)
    continue
  }
  const table = await tableOf(new MemoryStore(), k)
  const messages = await compactionMessages(table, k, next)
  const t0 = performance.now()
  const r = await new BatchingCommitter(table).commit(messages)
  const ms = performance.now() - t0
  const landed = r.outcomes.filter((o) => o.status === 'landed').length
  console.log(`COMPACT × ${k}: fold ${ms.toFixed(0)} ms (${(ms / k).toFixed(2)} ms per message), ${landed} landed in ${r.snapshots.length} snapshot(s)`)
}
