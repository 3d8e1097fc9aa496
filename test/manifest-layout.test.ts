// The manifest layout (docs/format.md "Manifest layout"): every manifest Strata writes holds
// one bucket group of one partition, merges fold one group at a time, and a job on some
// buckets opens only the manifests whose list records can hold them. The model is the
// unpruned read: pruned live files must equal the full listing filtered to the buckets.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { ByteLru } from '../lib/format/byte-cache.ts'
import { bucketsScope } from '../lib/manifest/bucket-scope.ts'
import { fileIdentifier } from '../lib/manifest/identifiers.ts'
import { lookup, readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { manifestKey } from '../lib/table/paths.ts'
import { Table } from '../lib/handle/table.ts'
import type { ManifestEntry, ManifestFileMeta } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { TracedStore } from './helpers/traced-store.ts'

function schema(buckets: number, extra: Record<string, string> = {}, partitioned = false): unknown {
  return {
    fields: [
      ...(partitioned ? [{ name: 'p', type: 'STRING' }] : []),
      { name: 'k', type: 'INT' },
      { name: 'v', type: 'STRING' },
    ],
    primaryKeys: partitioned ? ['p', 'k'] : ['k'],
    partitionKeys: partitioned ? ['p'] : [],
    options: { bucket: String(buckets), ...extra },
  }
}

const ids = (entries: ManifestEntry[]) => entries.map(fileIdentifier).sort()

/** Keys of the GETs a traced store saw since its last reset. */
const gets = (store: TracedStore) => store.calls.filter((c) => c.op === 'get' || c.op === 'getRange').map((c) => c.key)

async function write(table: Table, rows: Record<string, unknown>[]) {
  return writeBatch(
    table,
    rows.map((r, i) => recordFromJson(table.view, r, `row ${i}`)),
  )
}

describe('manifest layout', () => {
  it('a write touching several bucket groups writes one manifest per group, each within its group', async () => {
    const table = await Table.create(new MemoryStore(), schema(256, { 'manifest.bucket-group-size': '16' }))
    await write(
      table,
      Array.from({ length: 400 }, (_, k) => ({ k, v: 'a' })),
    )
    const s = (await table.snapshots.latest())!
    const deltas = await table.manifests.readList(s.deltaManifestList)
    const buckets = new Set((await table.manifests.deltaEntries(s)).map((e) => e.bucket))
    const groups = new Set([...buckets].map((b) => Math.floor(b / 16)))
    expect(groups.size).toBeGreaterThan(4)
    expect(deltas.length).toBe(groups.size)
    for (const m of deltas) expect(Math.floor(m.minBucket! / 16)).toBe(Math.floor(m.maxBucket! / 16))
  })

  it('a job on one bucket opens only the manifests of its group, however many buckets the table has', async () => {
    // the same 20 commits into tables of 64 and 1,024 buckets: one bucket's manifests are
    // the same in number; the table-wide listing is not
    const opened: Record<number, { pruned: number; all: number }> = {}
    for (const buckets of [64, 1024]) {
      const store = new TracedStore(new MemoryStore())
      const table = await Table.create(store, schema(buckets, { 'manifest.merge-min-count': '10' }))
      for (let c = 0; c < 20; c++) await write(table, Array.from({ length: 300 }, (_, i) => ({ k: (c * 7919 + i * 104729) % 200_000, v: `c${c}` })))
      const cold = await Table.open(store)
      const s = (await cold.snapshots.latest())!
      const bucket = (await cold.manifests.deltaEntries(s))[0].bucket
      const pair = { partition: (await cold.manifests.deltaEntries(s))[0].partition, bucket }
      store.reset()
      const pruned = await cold.manifests.liveEntries(s, bucketsScope(cold.view, [pair]))
      const prunedGets = gets(store).filter((k) => k.startsWith('manifest/manifest-') && !k.startsWith('manifest/manifest-list-')).length
      const all = await cold.manifests.liveEntries(s)
      expect(ids(pruned)).toEqual(ids(all.filter((e) => e.bucket === bucket)))
      expect(pruned.length).toBeGreaterThan(0)
      opened[buckets] = { pruned: prunedGets, all: (await cold.manifests.dataManifests(s)).length }
    }
    expect(opened[1024].all).toBeGreaterThan(opened[64].all * 4)
    expect(opened[1024].pruned).toBeLessThanOrEqual(opened[64].pruned + 1)
  })

  it('pruned reads equal the full listing, through writes, compactions and per-group merges (property)', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.record({
          buckets: fc.constantFrom(3, 16, 40),
          groupSize: fc.constantFrom(1, 4, 64),
          minCount: fc.constantFrom(2, 3, 5),
          partitioned: fc.boolean(),
          steps: fc.array(
            fc.oneof(
              fc.record({ kind: fc.constant('write' as const), keys: fc.array(fc.integer({ min: 0, max: 60 }), { minLength: 1, maxLength: 12 }), p: fc.constantFrom('a', 'b', 'c') }),
              fc.record({ kind: fc.constant('compact' as const), bucket: fc.integer({ min: 0, max: 39 }) }),
            ),
            { minLength: 1, maxLength: 14 },
          ),
        }),
        async ({ buckets, groupSize, minCount, partitioned, steps }) => {
          const table = await Table.create(new MemoryStore(), schema(buckets, { 'manifest.bucket-group-size': String(groupSize), 'manifest.merge-min-count': String(minCount) }, partitioned))
          const model = new Map<string, string>()
          let n = 0
          for (const step of steps) {
            if (step.kind === 'write') {
              const rows = step.keys.map((k) => ({ ...(partitioned ? { p: step.p } : {}), k, v: `v${n++}` }))
              for (const r of rows) model.set(`${partitioned ? r.p : ''}|${r.k}`, r.v)
              await write(table, rows)
            } else {
              await compactTable(table, { bucket: step.bucket % buckets })
            }
          }
          const s = await table.snapshots.latest()
          if (!s) return
          const cold = await Table.open(table.store)
          const all = await cold.manifests.liveEntries(s)
          const metas = await cold.manifests.dataManifests(s)
          // every manifest written is one partition and one bucket group
          for (const m of metas) if (m.minBucket !== null) expect(Math.floor(m.minBucket / groupSize)).toBe(Math.floor(m.maxBucket! / groupSize))
          // merges keep each group at most merge-min-count manifests (plus the one delta of this snapshot)
          const perGroup = new Map<string, number>()
          for (const m of await cold.manifests.readList(s.baseManifestList)) {
            const g = `${Buffer.from(m.partitionStats.minValues).toString('hex')}|${Math.floor(m.minBucket! / groupSize)}`
            perGroup.set(g, (perGroup.get(g) ?? 0) + 1)
          }
          for (const c of perGroup.values()) expect(c).toBeLessThanOrEqual(minCount + 1)
          // every entry the manifests name (ADDs of files deleted since too), fully decoded
          const named = (await Promise.all(metas.map((m) => cold.manifests.readManifest(m.fileName)))).flat()
          const sameBucket = (x: ManifestEntry, e: ManifestEntry) => x.bucket === e.bucket && Buffer.compare(x.partition, e.partition) === 0
          for (const e of all) {
            const pruned = await cold.manifests.liveEntries(s, bucketsScope(cold.view, [e]))
            expect(ids(pruned)).toEqual(ids(all.filter((x) => sameBucket(x, e))))
            // the sequence floor's projected read, on a handle that decoded nothing yet
            const floorHandle = await Table.open(table.store)
            const max = await floorHandle.manifests.maxSequenceNumber(s, bucketsScope(floorHandle.view, [e]))
            expect(max).toBe(named.filter((x) => sameBucket(x, e)).reduce((m, x) => (x.file.maxSequenceNumber > m ? x.file.maxSequenceNumber : m), -1n))
            expect(max >= pruned.reduce((m, x) => (x.file.maxSequenceNumber > m ? x.file.maxSequenceNumber : m), -1n)).toBe(true)
          }
          const rows = await readAll(cold)
          const got = new Map(rows.map((r) => [`${partitioned ? r[0] : ''}|${r[partitioned ? 1 : 0]}`, r[partitioned ? 2 : 1]]))
          expect(got).toEqual(model)
        },
      ),
      { numRuns: 25, seed: 1403 },
    )
  })

  it('a base of manifests spanning several groups (an older layout) is merged into one manifest per group', async () => {
    const table = await Table.create(new MemoryStore(), schema(64, { 'manifest.bucket-group-size': '64', 'manifest.merge-min-count': '4' }))
    for (let c = 0; c < 3; c++) await write(table, Array.from({ length: 50 }, (_, i) => ({ k: c * 1000 + i, v: 'x' })))
    // reopen with a smaller group: the existing manifests now span groups
    const raw = JSON.parse(new TextDecoder().decode((await table.store.get('schema/schema-0'))!))
    raw.options['manifest.bucket-group-size'] = '8'
    await table.store.put('schema/schema-0', new TextEncoder().encode(JSON.stringify(raw)))
    const t2 = await Table.open(table.store)
    const before = await readAll(t2)
    for (let c = 3; c < 6; c++) await write(t2, Array.from({ length: 50 }, (_, i) => ({ k: c * 1000 + i, v: 'y' })))
    const s = (await t2.snapshots.latest())!
    const base = await t2.manifests.readList(s.baseManifestList)
    const spans = (m: ManifestFileMeta) => Math.floor(m.minBucket! / 8) !== Math.floor(m.maxBucket! / 8)
    expect(base.some(spans)).toBe(false)
    expect(base.length).toBeGreaterThan(1)
    const after = await readAll(await Table.open(t2.store))
    expect(after.length).toBe(before.length + 150)
  })

  it('a read filtered to one partition, and a lookup of one key, open only the manifests that can hold them', async () => {
    const store = new TracedStore(new MemoryStore())
    const table = await Table.create(store, schema(128, { 'manifest.bucket-group-size': '8' }, true))
    for (const p of ['a', 'b', 'c']) for (let c = 0; c < 3; c++) await write(table, Array.from({ length: 60 }, (_, i) => ({ p, k: c * 100 + i, v: `${p}${c}` })))
    const manifestGets = () => gets(store).filter((k) => k.startsWith('manifest/manifest-') && !k.startsWith('manifest/manifest-list-')).length
    const cold = () => Table.open(store)
    const s = (await table.snapshots.latest())!
    const all = (await table.manifests.dataManifests(s)).length

    let t = await cold()
    store.reset()
    const rows = await readAll(t, { filter: { p: 'b' } })
    expect(rows.length).toBe(180)
    expect(rows.every((r) => r[0] === 'b')).toBe(true)
    expect(manifestGets()).toBe(all / 3)

    t = await cold()
    store.reset()
    expect(await lookup(t, { p: 'c', k: 205 })).toEqual(['c', 205, 'c2'])
    expect(manifestGets()).toBeGreaterThan(0)
    expect(manifestGets()).toBeLessThanOrEqual(3) // the key's group in its partition, one per commit
  })

  it('the metadata cache is bounded by bytes and evicts the least recently used', () => {
    const lru = new ByteLru<string>(100)
    lru.set('a', 'A', 40)
    lru.set('b', 'B', 40)
    expect(lru.get('a')).toBe('A') // a is now the most recent
    lru.set('c', 'C', 40) // 120 > 100: b, the coldest, goes
    expect(lru.get('b')).toBeUndefined()
    expect(lru.get('a')).toBe('A')
    expect(lru.get('c')).toBe('C')
    expect(lru.bytes).toBe(80)
    lru.set('big', 'X', 101) // alone over the bound: not kept, nothing evicted for it
    expect(lru.get('big')).toBeUndefined()
    expect(lru.size).toBe(2)
  })

  it('a warm handle re-reads no manifest it already holds, and a small cache bound makes it read again', async () => {
    const store = new TracedStore(new MemoryStore())
    const table = await Table.create(store, schema(8))
    for (let c = 0; c < 5; c++) await write(table, [{ k: c, v: 'x' }])
    const count = () => gets(store).filter((k) => k.startsWith(manifestKey(''))).length
    for (const cacheBytes of [32 * 1024 * 1024, 0]) {
      const t = await Table.open(store, { metadataCacheBytes: cacheBytes })
      const s = (await t.snapshots.latest())!
      await t.manifests.liveEntries(s)
      const first = count()
      await t.manifests.liveEntries(s)
      if (cacheBytes > 0) expect(count()).toBe(first)
      else expect(count()).toBeGreaterThan(first)
    }
  })
})
