// CPU of one fold, without S3 or SQS: k compaction messages (each a bucket of a
// deletion-vector table compacted from the same snapshot) folded by one BatchingCommitter
// on an in-memory store, so what is measured is the committer's own work per message.
// `npx tsx bench/fold-profile.ts [--quick]` (sizes 100, 300, 1000; --quick: 100); add `node --cpu-prof --import tsx`
// to see where it goes.

import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { commitMessageOf } from '../lib/commit/commit-message.ts'
import type { CommitRequest, Committer } from '../lib/commit/committer.ts'
import { serializeBinaryRow } from '../lib/format/binary-row.ts'
import { compactBucket } from '../lib/lsm/compact-task.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { bucketFunction } from '../lib/format/bucket.ts'
import { Table } from '../lib/table/table.ts'
import { RowKind } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { parseBenchArgs } from './lib/args.ts'

const args = parseBenchArgs(process.argv.slice(2), ['--quick'], [])
const sizes = args.has('--quick') ? [100] : [100, 300, 1000]

for (const k of sizes) {
  const store = new MemoryStore()
  const table = await Table.create(store, {
    fields: [{ name: 'id', type: 'BIGINT' }, { name: 'v', type: 'STRING' }],
    primaryKeys: ['id'],
    partitionKeys: [],
    options: { bucket: String(k), 'deletion-vectors.enabled': 'true' },
  })
  const bucketOf = bucketFunction(table.view.bucketKeyTypes, k)
  let next = 0
  for (let round = 0; round < 2; round++) {
    const ids: number[] = []
    const seen = new Set<number>()
    while (seen.size < k) {
      const id = next++
      const b = bucketOf([BigInt(id)])
      if (!seen.has(b)) (seen.add(b), ids.push(id))
    }
    await writeBatch(table, ids.map((id) => ({ kind: RowKind.INSERT, row: [BigInt(id), `v${id}`] })))
  }
  const reqs: CommitRequest[] = []
  const capture: Committer = { async commit(req) { reqs.push(req); return { snapshotId: -1, retries: 0, deduplicated: false } } }
  const partition = serializeBinaryRow([], [])
  for (let b = 0; b < k; b++) await compactBucket(table, { partition, bucket: b, full: true, committer: capture })
  const messages = reqs.map((r) => commitMessageOf(r, 't'))
  const t0 = performance.now()
  const r = await new BatchingCommitter(table).commit(messages)
  const ms = performance.now() - t0
  const landed = r.outcomes.filter((o) => o.status === 'landed').length
  console.log(`COMPACT × ${k}: fold ${ms.toFixed(0)} ms (${(ms / k).toFixed(2)} ms per message), ${landed} landed in ${r.snapshots.length} snapshot(s)`)
}
