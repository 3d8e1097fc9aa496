// rangeReferences (lib/maintenance/references.ts), what snapshot expiration and orphan cleanup
// keep, walks a run of snapshots as the first one whole plus what each later delta adds.
// Property, on the local file system: after random writes, compactions (with and without
// deletion vectors, with manifest merges every few commits) and expirations, the walk over
// any range of the existing snapshots equals the union of each snapshot's own references
// (snapshotReferences, which folds every manifest of each); and with a snapshot of the range
// gone (an expiration racing an orphan cleanup), the walk over the rest equals their union.

import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { MissingReferenceError } from '../lib/errors.ts'
import { rangeReferences, snapshotReferences } from '../lib/maintenance/references.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { snapshotKey } from '../lib/table/paths.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type Op, opArb, schemaFor } from './helpers/model.ts'
import { localStores } from './helpers/stores.ts'

const stores = localStores()
beforeAll(() => stores.setup())
afterAll(() => stores.teardown())

type Step = { write: Op[] } | { compact: { bucket: number; full: boolean } } | { expire: number }

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { weight: 4, arbitrary: fc.array(opArb('deduplicate'), { minLength: 1, maxLength: 6 }).map((write) => ({ write })) },
  { weight: 2, arbitrary: fc.record({ bucket: fc.integer({ min: 0, max: 1 }), full: fc.boolean() }).map((compact) => ({ compact })) },
  { weight: 1, arbitrary: fc.integer({ min: 2, max: 5 }).map((expire) => ({ expire })) },
)

async function union(table: Table, ids: number[]): Promise<Set<string>> {
  const out = new Set<string>()
  for (const id of ids) for (const k of await snapshotReferences(table, (await table.snapshots.snapshot(id))!)) out.add(k)
  return out
}

const sorted = (s: Set<string>) => [...s].sort()

describe('rangeReferences', () => {
  it('property: equals the union of every snapshot\'s own references, over any range, and around a snapshot gone', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 3, maxLength: 16 }), fc.boolean(), fc.nat(), fc.nat(), async (steps, dv, a, b) => {
        const table = await Table.create(
          stores.fresh(),
          schemaFor('deduplicate', { bucket: '2', 'deletion-vectors.enabled': String(dv), 'manifest.merge-min-count': '3', 'num-sorted-run.compaction-trigger': '2' }),
        )
        for (const s of steps) {
          if ('write' in s) await writeBatch(table, s.write.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
          else if ('compact' in s) {
            const latest = await table.snapshots.latest()
            const e = latest ? (await table.manifests.liveEntries(latest)).find((x) => x.bucket === s.compact.bucket) : undefined
            if (e) await compactBucket(table, { partition: e.partition, bucket: e.bucket, full: s.compact.full })
          } else await expireSnapshots(table, { numRetainedMin: s.expire, numRetainedMax: s.expire, timeRetainedMs: 0 })
        }
        const latest = await table.snapshots.latestId()
        if (latest === 0) return
        const earliest = await table.snapshots.earliestId()
        const ids = Array.from({ length: latest - earliest + 1 }, (_, i) => earliest + i)
        const from = ids[a % ids.length]
        const to = ids[ids.length - 1 - (b % (ids.length - ids.indexOf(from)))]
        const inRange = ids.filter((id) => id >= from && id <= to)
        expect(sorted(await rangeReferences(table, from, to, { onMissing: 'throw', missingSnapshot: 'throw' }))).toEqual(sorted(await union(table, inRange)))
        if (inRange.length < 3) return
        // a snapshot in the middle gone
        const gone = inRange[1 + (a % (inRange.length - 2))]
        await table.store.delete(snapshotKey(gone))
        table.snapshots.forget(gone)
        const rest = inRange.filter((id) => id !== gone)
        expect(sorted(await rangeReferences(table, from, to, { onMissing: 'throw', missingSnapshot: 'skip' }))).toEqual(sorted(await union(table, rest)))
        await expect(rangeReferences(table, from, to, { onMissing: 'throw', missingSnapshot: 'throw' })).rejects.toThrow(MissingReferenceError)
      }),
      { numRuns: 25 },
    )
  }, 240_000)
})
