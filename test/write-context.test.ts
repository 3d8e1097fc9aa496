// The batch writer takes a narrow WriteContext, not a table handle: a store, a schema view,
// the engine's merge config, a snapshot and a manifest reader, and a committer. Built here
// from those parts alone, with a committer that records what it is asked to commit, and with
// a sequence clock of the test's own.

import { describe, expect, it } from 'vitest'
import type { CommitRequest, CommitResult } from '../lib/commit/committer.ts'
import { parseMergeEngineConfig } from '../lib/merge/merge-config.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { createSchema, describeSchema } from '../lib/table/schema.ts'
import { type WriteContext, writeBatch } from '../lib/write/table-write.ts'
import { SEQUENCE_ROW_BITS, SequenceClock, defaultSequenceClock } from '../lib/write/sequence-clock.ts'

function context(): { ctx: WriteContext; store: MemoryStore; requests: CommitRequest[] } {
  const schema = createSchema({
    fields: [
      { name: 'id', type: 'INT' },
      { name: 'v', type: 'STRING' },
    ],
    primaryKeys: ['id'],
    options: { bucket: '2' },
  })
  const store = new MemoryStore({ uri: 'memory://write-context' })
  const requests: CommitRequest[] = []
  const ctx: WriteContext = {
    uri: store.uri,
    store,
    view: describeSchema(schema),
    mergeConfig: parseMergeEngineConfig(schema.fields, schema.primaryKeys, schema.options),
    // an empty table: no snapshot, so no bucket's sequence floor is read
    snapshots: { latest: async () => null },
    manifests: {
      maxSequenceNumber: async () => {
        throw new Error('no snapshot to read')
      },
    },
    committer: {
      commit: async (req: CommitRequest): Promise<CommitResult> => {
        requests.push(req)
        return { snapshotId: 1, retries: 0, deduplicated: false }
      },
    },
  }
  return { ctx, store, requests }
}

describe('a batch writer built from its narrow context', () => {
  it('writes one level-0 file per touched bucket and hands them to its committer as one APPEND', async () => {
    const { ctx, store, requests } = context()
    const records = [1, 2, 3, 4, 2].map((id, i) => ({ ...recordFromJson(ctx.view, { id, v: `v${i}` }, `r${i}`), where: `r${i}` }))
    const res = await writeBatch(ctx, records, { sequenceClock: new SequenceClock() })
    expect(res.snapshotId).toBe(1)
    expect(res.rowsIn).toBe(5)
    expect(res.rowsWritten).toBe(4) // key 2 merged
    expect(requests).toHaveLength(1)
    const req = requests[0]
    expect(req.kind).toBe('APPEND')
    expect(req.adds.map((e) => e.bucket).sort()).toEqual(res.buckets.map((b) => b.bucket).sort())
    const keys = (await store.list('')).map((o) => o.key).sort()
    expect(keys).toEqual(res.buckets.map((b) => `${b.partitionPath}bucket-${b.bucket}/${b.fileName}`).sort())
  })

  it('numbers rows from the clock it is given, not the process default', async () => {
    const { ctx, requests } = context()
    // a clock far ahead of the real one: a writer that used the default would number below it
    const clock = new SequenceClock()
    const ahead = BigInt(Date.now() + 3_600_000) << SEQUENCE_ROW_BITS
    clock.claim(1, Date.now(), ahead)
    const before = defaultSequenceClock.end
    await writeBatch(ctx, [{ ...recordFromJson(ctx.view, { id: 1, v: 'a' }, 'r'), where: 'r' }], { sequenceClock: clock })
    const min = requests[0].adds[0].file.minSequenceNumber
    expect(min).toBe(ahead + 1n)
    expect(clock.end).toBe(ahead + 2n)
    // the process's clock was not touched by this writer
    expect(defaultSequenceClock.end).toBe(before)
  })
})
