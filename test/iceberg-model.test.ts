// The Iceberg metadata against the Paimon table it mirrors (docs/design.md "Iceberg
// metadata"), over random sequences of writes, compactions (full and not), alters,
// expirations, orphan cleanups and crashes between a snapshot and its metadata: after each
// step, the newest version's data files are the Paimon snapshot's files at the visible levels,
// its delete entries are the snapshot's deletion vectors, its sequence numbers and schemas are
// the snapshot's, row ids only grow, and every file any kept version names exists.
//
// The crash is a fault the test cannot cause otherwise: a FaultyStore fails the writes under
// `metadata/` for one step (the snapshot lands, its metadata does not).

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { createTable, openTable, type StrataTable } from '../lib/api/index.ts'
import { FaultyStore } from '../lib/store/faulty-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { removeOrphanFiles, MIN_ORPHAN_OLDER_THAN_MS } from '../lib/maintenance/orphans.ts'
import { readIcebergManifest, readIcebergManifestList } from '../lib/iceberg/manifests.ts'
import { coreOptions } from '../lib/table/options.ts'
import type { IcebergMetadataWriter } from '../lib/iceberg/metadata-writer.ts'

type Op =
  | { kind: 'write'; keys: number[]; tag: number }
  | { kind: 'delete'; keys: number[] }
  | { kind: 'compact'; full: boolean; part: number | null }
  | { kind: 'alter'; change: 'add' | 'rename' | 'drop' | 'widen' | 'levels' }
  | { kind: 'expire' }
  | { kind: 'orphans' }
  | { kind: 'crash' }

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('write' as const), keys: fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 8 }), tag: fc.integer({ min: 0, max: 99 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const), keys: fc.uniqueArray(fc.integer({ min: 0, max: 30 }), { minLength: 1, maxLength: 4 }) }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('compact' as const), full: fc.boolean(), part: fc.option(fc.integer({ min: 0, max: 2 })) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('alter' as const), change: fc.constantFrom('add' as const, 'rename' as const, 'drop' as const, 'widen' as const, 'levels' as const) }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'expire' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'orphans' as const }) },
  { weight: 1, arbitrary: fc.constant({ kind: 'crash' as const }) },
)

let tables = 0

const V3 = { 'deletion-vectors.enabled': 'true', 'deletion-vectors.bitmap64': 'true', 'metadata.iceberg.format-version': '3', 'metadata.iceberg.compaction.min.file-num': '2', 'metadata.iceberg.compaction.max.file-num': '3' }
const MODES: Record<string, { options: Record<string, string>; partitioned: boolean }> = {
  v2: { options: { 'num-sorted-run.compaction-trigger': '2' }, partitioned: false },
  'v2 with deletion vectors': { options: { 'deletion-vectors.enabled': 'true', 'num-sorted-run.compaction-trigger': '2' }, partitioned: false },
  'v3 with deletion vectors': { options: V3, partitioned: false },
  // three partitions: a compaction rewrites the delete manifests of the groups it touched only
  'v3 with deletion vectors, partitioned': { options: V3, partitioned: true },
}

/** The key of a location under the table's store, or null for one elsewhere. */
function keyIn(store: ObjectStore, uri: string): string {
  const prefix = `${store.uri}/`
  expect(uri.startsWith(prefix), `${uri} is under ${store.uri}`).toBe(true)
  return uri.slice(prefix.length)
}

async function mustGet(store: ObjectStore, key: string): Promise<Uint8Array> {
  const b = await store.get(key)
  expect(b, `${key} exists`).not.toBeNull()
  return b!
}

/** Checks the metadata directory against the table; returns the newest version's next-row-id. */
async function check(t: StrataTable, w: IcebergMetadataWriter, raw: ObjectStore, lastRowId: number): Promise<number> {
  const h = t.handle
  const latest = await h.snapshots.latest()
  if (!latest) return lastRowId
  const ids = await w.dir.versionIds()
  expect(ids[ids.length - 1]).toBe(latest.id)
  // delete-after-commit keeps the newest and one more
  expect(ids.length).toBeLessThanOrEqual(2)
  // every kept version names existing files only, and every manifest or list is named by one
  const named = new Set<string>()
  for (const id of ids) {
    const meta = JSON.parse(new TextDecoder().decode(await mustGet(raw, `metadata/v${id}.metadata.json`)))
    expect(meta['current-snapshot-id']).toBe(id)
    expect(meta.snapshots).toHaveLength(1)
    named.add(keyIn(raw, meta.snapshots[0]['manifest-list']))
    const list = readIcebergManifestList(await mustGet(raw, keyIn(raw, meta.snapshots[0]['manifest-list'])))
    for (const m of list) {
      named.add(keyIn(raw, m.path))
      for (const e of readIcebergManifest(await mustGet(raw, keyIn(raw, m.path)), h.view.partitionFields, m.firstRowId)) {
        if (e.status === 2) continue
        await mustGet(raw, keyIn(raw, e.file.path))
        if (e.file.referencedDataFile) await mustGet(raw, keyIn(raw, e.file.referencedDataFile))
      }
    }
  }
  expect((await raw.list('metadata/')).map((o) => o.key).filter((k) => k.endsWith('.avro') && !named.has(k))).toEqual([])
  // the newest version mirrors the latest snapshot
  const meta = JSON.parse(new TextDecoder().decode(await mustGet(raw, `metadata/v${latest.id}.metadata.json`)))
  const snap = meta.snapshots[0]
  // deletion vectors reach Iceberg in format version 3 only; v2 lists the top level without them
  const dv = h.view.options.deletionVectors && meta['format-version'] === 3
  expect(snap['sequence-number']).toBe(latest.id)
  expect(meta['last-sequence-number']).toBe(latest.id)
  expect(snap['schema-id']).toBe(latest.schemaId)
  expect(meta.schemas.map((s: any) => s['schema-id'])).toEqual(Array.from({ length: meta['current-schema-id'] + 1 }, (_, i) => i))
  expect(meta['current-schema-id']).toBeGreaterThanOrEqual(latest.schemaId)
  for (const s of meta.schemas) expect(s.fields.map((f: any) => [f.id, f.name])).toEqual((await h.schemaById(s['schema-id'])).fields.map((f) => [f.id, f.name]))
  const list = readIcebergManifestList(await mustGet(raw, keyIn(raw, snap['manifest-list'])))
  const entries = async (content: number) =>
    (await Promise.all(list.filter((m) => m.content === content).map(async (m) => readIcebergManifest(await mustGet(raw, keyIn(raw, m.path)), h.view.partitionFields, m.firstRowId)))).flat().filter((e) => e.status !== 2)
  // the levels the version lists, as it records them: every level above 0 with deletion vectors
  // handed over, else the top level of the version's schema (an alter of num-levels takes
  // effect at the next snapshot)
  const rule = snap.summary['visible-levels']
  const numLevels = coreOptions((await h.schemaById(meta['current-schema-id'])).options).numLevels
  expect(rule).toBe(dv ? 'above 0' : String(numLevels - 1))
  const visible = (level: number) => (rule === 'above 0' ? level > 0 : level === Number(rule))
  const live = (await h.manifests.liveEntries(latest)).filter((e) => visible(e.file.level))
  const data = await entries(0)
  expect(data.map((e) => e.file.path.split('/').pop()).sort()).toEqual(live.map((e) => e.file.fileName).sort())
  for (const e of data) expect(e.sequenceNumber <= BigInt(latest.id)).toBe(true)
  if (!dv) expect(await entries(1)).toEqual([])
  if (dv) {
    const index = await h.manifests.readIndexManifest(latest.indexManifest)
    const dvs = index.flatMap((e) => (e.dvRanges ?? []).map((r) => `${e.fileName}|${r.dataFileName}|${r.offset}|${r.length}|${r.cardinality}`)).sort()
    const got = (await entries(1)).map((e) => `${e.file.path.split('/').pop()}|${e.file.referencedDataFile!.split('/').pop()}|${e.file.contentOffset}|${e.file.contentSize}|${e.file.recordCount}`).sort()
    expect(got).toEqual(dvs)
    // row ids: every data file has a range below next-row-id, no two overlap, next-row-id never moves back
    expect(meta['next-row-id']).toBeGreaterThanOrEqual(lastRowId)
    expect(snap['first-row-id'] + snap['added-rows']).toBe(meta['next-row-id'])
    const ranges = data.map((e) => [e.file.firstRowId!, e.file.firstRowId! + e.file.recordCount] as const).sort((a, b) => (a[0] < b[0] ? -1 : 1))
    for (let i = 0; i < ranges.length; i++) {
      expect(ranges[i][1] <= BigInt(meta['next-row-id'])).toBe(true)
      if (i) expect(ranges[i][0] >= ranges[i - 1][1]).toBe(true)
    }
    return meta['next-row-id']
  }
  return lastRowId
}

async function run({ options, partitioned }: { options: Record<string, string>; partitioned: boolean }, ops: Op[]): Promise<void> {
  const uri = `memory://iceberg-model-${tables++}/wh/db1.db/t`
  let faulty: FaultyStore | null = null
  const wrapStore = (s: ObjectStore) => (faulty = new FaultyStore(s))
  const fields = [...(partitioned ? [{ name: 'p', type: 'INT NOT NULL' }] : []), { name: 'k', type: 'INT NOT NULL' }, { name: 'v', type: 'INT' }]
  let t = await createTable(uri, { fields, partitionKeys: partitioned ? ['p'] : [], primaryKeys: [...(partitioned ? ['p'] : []), 'k'], options: { bucket: '2', 'metadata.iceberg.storage': 'table-location', ...options } }, { wrapStore })
  const key = (k: number) => (partitioned ? { p: k % 3, k } : { k })
  const raw = faulty!
  let columns = ['v']
  let extra = 0
  let rowId = 0
  let clock = Date.now()
  for (const o of ops) {
    const w = t.handle.iceberg!
    switch (o.kind) {
      case 'write':
        await t.write(o.keys.map((k) => ({ ...key(k), ...Object.fromEntries(columns.map((c) => [c, o.tag])) })))
        break
      case 'delete':
        await t.write(o.keys.map((k) => ({ ...key(k), _kind: '-D' })))
        break
      case 'compact':
        // a partitioned table compacts one partition at times: the other groups' delete manifests stay
        await t.compact({ full: o.full, ...(partitioned && o.part !== null ? { partition: { p: String(o.part) } } : {}) })
        break
      case 'alter': {
        await w.settle()
        // one more level moves the top level a v2 reader sees
        const levels = t.handle.view.options.numLevels
        const change =
          o.change === 'levels' ? { kind: 'set-option' as const, key: 'num-levels', value: String(Math.min(levels + 1, 6)) }
          : o.change === 'add' ? { kind: 'add-column' as const, name: `c${extra++}`, type: 'INT' }
          : o.change === 'rename' && columns.length ? { kind: 'rename-column' as const, name: columns[0], newName: `r${extra++}` }
          : o.change === 'drop' && columns.length > 1 ? { kind: 'drop-column' as const, name: columns[columns.length - 1] }
          : columns.length ? { kind: 'update-column-type' as const, name: columns[0], type: 'BIGINT' }
          : { kind: 'add-column' as const, name: `c${extra++}`, type: 'INT' }
        const next = await t.alter([change])
        columns = next.handle.schema.fields.map((f) => f.name).filter((n) => n !== 'k' && n !== 'p')
        t = await openTable(uri, { wrapStore: () => raw })
        break
      }
      case 'expire':
        await w.settle()
        clock += 1000
        await expireSnapshots(t.handle, { numRetainedMin: 1, numRetainedMax: 2, timeRetainedMs: 0, now: clock })
        break
      case 'orphans':
        await w.settle()
        await removeOrphanFiles(t.handle, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now: Date.now() + 2 * MIN_ORPHAN_OLDER_THAN_MS })
        break
      case 'crash': {
        // the next write lands; its metadata does not (every write under metadata/ fails)
        raw.inject({ kind: 'error', when: (c) => c.key.startsWith('metadata/') && (c.op === 'put' || c.op === 'putIfAbsent'), times: Infinity })
        const failedBefore = w.stats.failed
        await t.write([{ ...key(99), ...Object.fromEntries(columns.map((c) => [c, 1])) }])
        await w.settle()
        raw.heal()
        expect(w.stats.failed).toBe(failedBefore + 1)
        // a fresh handle (the crashed process is gone) catches up at its next snapshot
        t = await openTable(uri, { wrapStore: () => raw })
        await t.write([{ ...key(98), ...Object.fromEntries(columns.map((c) => [c, 1])) }])
        break
      }
    }
    await t.handle.iceberg!.settle()
    expect(t.handle.iceberg!.stats.lastError).toBeNull()
    rowId = await check(t, t.handle.iceberg!, raw, rowId)
  }
}

describe('Iceberg metadata against the Paimon table', () => {
  for (const [name, mode] of Object.entries(MODES)) {
    it(`${name}: the newest version mirrors the latest snapshot, and every file a kept version names exists`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 14 }), (ops) => run(mode, ops)),
        // 12 sequences of up to 14 steps per mode: four modes share the suite's ten minutes
        { numRuns: 12 },
      )
    }, 120_000)
  }
})
