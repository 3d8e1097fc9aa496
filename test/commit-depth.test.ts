// Issue 14: a commit's dependent round trips. Measured on a TracedStore
// (test/helpers/traced-store.ts), which records which requests overlapped; never a clock.
// A direct commit built on the latest snapshot is: a probe of the next snapshot id, its
// manifests, lists and index manifest at once, the conditional snapshot create, the hint.

import { describe, expect, it } from 'vitest'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { TracedStore } from './helpers/traced-store.ts'

function schema(options: Record<string, string>): unknown {
  return { fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'STRING' }], primaryKeys: ['id'], options }
}

const range = (n: number, from = 0) => Array.from({ length: n }, (_, i) => from + i)

async function write(table: Table, ids: number[], v: string) {
  return writeBatch(table, ids.map((id, i) => recordFromJson(table.view, { id, v: `${v}${id}` }, `row ${i}`)))
}

/** The dependent depth of the requests under `manifest/` and `snapshot/` after the data files. */
function commitDepth(store: TracedStore): number {
  const firstMeta = store.calls.findIndex((c) => c.op === 'put' && c.key.startsWith('manifest/'))
  const dataDepth = Math.max(0, ...store.calls.slice(0, firstMeta).map((c) => c.depth))
  return depthHeld(store) - dataDepth
}

/** The depth of what the caller waited for: the LATEST rewrite goes on after it returns. */
function depthHeld(store: TracedStore): number {
  return Math.max(0, ...store.calls.filter((c) => !(c.op === 'put' && c.key === 'snapshot/LATEST')).map((c) => c.depth))
}

describe('a commit’s dependent requests', () => {
  it('a writer commit over many bucket groups writes its manifests and lists in one step: metadata, then create', async () => {
    const store = new TracedStore(new MemoryStore())
    const table = await Table.create(store, schema({ bucket: '256', 'manifest.bucket-group-size': '16' }))
    await write(table, range(300), 'a')
    store.reset()
    await write(table, range(300, 1000), 'b')
    const manifestPuts = store.calls.filter((c) => c.op === 'put' && c.key.startsWith('manifest/manifest-') && !c.key.startsWith('manifest/manifest-list-'))
    expect(manifestPuts.length).toBeGreaterThan(4) // one per bucket group
    // manifests, delta list and base list all went out together
    expect(new Set(store.calls.filter((c) => c.op === 'put' && c.key.startsWith('manifest/')).map((c) => c.depth)).size).toBe(1)
    // after the data files: the metadata, the snapshot create (LATEST is rewritten after the commit returns)
    expect(commitDepth(store)).toBeLessThanOrEqual(2)
    expect((await readAll(await Table.open(store.inner))).length).toBe(600)
  })

  it('a compaction commit reads the latest state in one step after its probe, and lands it in two more', async () => {
    const store = new TracedStore(new MemoryStore())
    const table = await Table.create(store, schema({ bucket: '1', 'deletion-vectors.enabled': 'true' }))
    for (let c = 0; c < 3; c++) await write(table, range(50, c * 25), `c${c}`)
    store.reset()
    let before = 0
    await compactBucket(table, { partition: new Uint8Array((await table.manifests.liveEntries((await table.snapshots.latest())!))[0].partition), bucket: 0, beforeCommit: () => void (before = store.depth) })
    // the commit itself: a probe of snapshot N+1 (the live files and index manifest it checks
    // are the ones the job read, cached); its metadata at once; the create (the hint goes on after)
    expect(depthHeld(store) - before).toBeLessThanOrEqual(3)
    expect((await readAll(await Table.open(store.inner))).length).toBe(100)
  })

  it('a writer starts its data-file PUTs at once, reading the snapshot and its sequence floor beside them', async () => {
    const store = new TracedStore(new MemoryStore())
    const table = await Table.create(store, schema({ bucket: '8' }))
    await write(table, range(50), 'a')
    const fresh = await Table.open(store) // nothing cached: the floor needs the manifests
    store.reset()
    await write(fresh, range(50), 'b')
    const dataPuts = store.calls.filter((c) => c.op === 'put' && c.key.startsWith('bucket-'))
    expect(dataPuts.length).toBe(8)
    expect(Math.min(...dataPuts.map((c) => c.depth))).toBe(1)
    expect(store.calls.some((c) => c.key.startsWith('manifest/') && c.op === 'get')).toBe(true)
  })

  it('a batch numbered below the floor it read (an earlier writer\'s clock ran ahead) is numbered again above it, its first files deleted', async () => {
    const store = new MemoryStore()
    const table = await Table.create(store, schema({ bucket: '2' }))
    // an earlier writer whose clock ran an hour ahead
    const ahead = (BigInt(Date.now() + 3_600_000) << 20n)
    await writeBatch(table, range(10).map((id) => recordFromJson(table.view, { id, v: 'early' }, 'r')), { sequenceBase: ahead })
    await write(table, range(10), 'late')
    const rows = await readAll(await Table.open(store))
    expect([...rows].sort((a, b) => (a[0] as number) - (b[0] as number)).map((r) => r[1])).toEqual(range(10).map((id) => `late${id}`))
    const live = new Set((await table.manifests.liveEntries((await table.snapshots.latest())!)).map((e) => e.file.fileName))
    const stored = (await store.list('bucket-')).map((o) => o.key.split('/').pop()!)
    expect(stored.sort()).toEqual([...live].sort())
  })

  it('LATEST is rewritten after the commit returns, never back to an older id by the same handle', async () => {
    const store = new MemoryStore()
    const table = await Table.create(store, schema({ bucket: '1' }))
    await write(table, [1], 'a')
    await write(table, [2], 'b')
    await table.snapshots.settleHints()
    expect(new TextDecoder().decode((await store.get('snapshot/LATEST'))!)).toBe('2')
    table.snapshots.hintLatest(1) // an older commit's hint, late
    await table.snapshots.settleHints()
    expect(new TextDecoder().decode((await store.get('snapshot/LATEST'))!)).toBe('2')
  })

  it('a commit returns while its LATEST rewrite is still in flight', async () => {
    let release!: () => void
    const gate = new Promise<void>((r) => (release = r))
    class SlowHint extends MemoryStore {
      override async put(key: string, data: Uint8Array) {
        if (key === 'snapshot/LATEST') await gate
        return super.put(key, data)
      }
    }
    const store = new SlowHint()
    const table = await Table.create(store, schema({ bucket: '1' }))
    const res = await write(table, [1], 'a') // would never return if the hint held it
    expect(res.snapshotId).toBe(1)
    expect(await store.get('snapshot/LATEST')).toBeNull()
    release()
    await table.snapshots.settleHints()
    expect(new TextDecoder().decode((await store.get('snapshot/LATEST'))!)).toBe('1')
  })
})

