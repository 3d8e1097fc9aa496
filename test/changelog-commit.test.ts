// Changelog files through the commit paths and maintenance (docs/format.md "Changelog files"):
// - the folding committer lands every message's changelog files in the folded snapshot's
//   changelog manifests, with their record counts summed, through a lost race and a
//   redelivered message, neither lost nor listed twice; the message codec carries them;
// - expiration deletes the changelog files and manifests of expired snapshots and keeps the
//   retained ones readable; orphan cleanup keeps referenced changelog files and deletes a
//   stray one;
// - refusals: full-compaction and Paimon's decoupled changelog retention at create, and
//   expiration of a stored schema that decouples it.

import { describe, expect, it } from 'vitest'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import { decodeCommitMessage, encodeCommitMessage } from '../lib/commit/commit-message.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { changelogEntries, changelogRecords } from '../lib/read/changelog.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { RefusedError, StrataInputError } from '../lib/errors.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { compactionMessage, writeMessage } from './helpers/commit.ts'
import { type Op, schemaFor } from './helpers/model.ts'

const DT = '2024-05-01'
const ops = (ids: number[], kind: Op['_kind'] = '+I', a = 1): Op[] => ids.map((id) => ({ _kind: kind, dt: DT, id, a, b: null, c: null }))
const records = (table: Table, list: Op[]) => list.map((op, i) => recordFromJson(table.view, op, `op ${i}`))

async function newTable(options: Record<string, string>): Promise<Table> {
  const s = schemaFor('deduplicate') as { options: Record<string, string> }
  return Table.create(new MemoryStore(), { ...s, options: { ...s.options, ...options } })
}

async function changelogText(table: Table, id: number): Promise<string[]> {
  return (await changelogRecords(table, (await table.snapshots.snapshot(id))!)).map((r) => `${ROW_KIND_SHORT[r.kind]} ${r.row[1]}`).sort()
}

async function keys(table: Table): Promise<string[]> {
  return (await table.store.list('')).map((o) => o.key)
}

describe('changelog through the folding committer', () => {
  it("a fold of writer messages lists every message's changelog files once, with the record counts summed, through a lost race and a redelivery", async () => {
    const table = await newTable({ 'changelog-producer': 'input', bucket: '2' })
    const other = await Table.open(table.store)
    let raced = 0
    const committer = new BatchingCommitter(table, {
      // the first attempt loses the race for snapshot-N to another writer
      beforeSnapshotCreate: async () => {
        if (raced++ === 0) await writeBatch(other, records(other, ops([100])))
      },
    })
    const m1 = (await writeMessage(table, records(table, [...ops([1, 2]), ...ops([1], '-D')])))!
    const m2 = (await writeMessage(table, records(table, ops([3, 4, 5]))))!
    expect(m1.changelog!.length).toBeGreaterThan(0)
    // the codec carries the changelog entries
    const decoded = await decodeCommitMessage((await encodeCommitMessage(m1, table.store)).body, table.store)
    expect(decoded.changelog!.map((e) => e.file.fileName)).toEqual(m1.changelog!.map((e) => e.file.fileName))
    // m1 again: a redelivery in the same batch
    const res = await committer.commit([m1, m2, decoded])
    expect(res.retries).toBe(1)
    expect(res.outcomes.map((o) => o.status)).toEqual(['landed', 'landed', 'duplicate'])
    const [snap] = res.snapshots
    const s = (await table.snapshots.snapshot(snap.id))!
    const listed = (await changelogEntries(table, s)).map((e) => e.file.fileName).sort()
    expect(listed).toEqual([...m1.changelog!, ...m2.changelog!].map((e) => e.file.fileName).sort())
    expect(s.changelogRecordCount).toBe(6)
    expect(await changelogText(table, snap.id)).toEqual(['+I 1', '+I 2', '+I 3', '+I 4', '+I 5', '-D 1'])
    // the race's winner carries its own changelog
    expect(await changelogText(table, snap.id - 1)).toEqual(['+I 100'])
    // delivered again later: nothing lands twice
    const again = await committer.commit([m2])
    expect(again.outcomes[0].status).toBe('duplicate')
    expect(await table.snapshots.latestId()).toBe(snap.id)
  })

  it("a fold of lookup compactions of two buckets lists both jobs' changelog in one COMPACT snapshot", async () => {
    const table = await newTable({ 'changelog-producer': 'lookup', bucket: '2' })
    await writeBatch(table, records(table, ops([1, 2, 3, 4, 5, 6])))
    const buckets = new Map<number, Uint8Array>()
    for (const e of await table.manifests.liveEntries((await table.snapshots.latest())!)) buckets.set(e.bucket, e.partition)
    expect(buckets.size).toBe(2)
    const messages = []
    for (const [bucket, partition] of buckets) messages.push((await compactionMessage(table, { partition, bucket }))!)
    const res = await new BatchingCommitter(table).commit(messages)
    expect(res.snapshots.map((x) => [x.kind, x.messages])).toEqual([['COMPACT', 2]])
    const s = (await table.snapshots.snapshot(res.snapshots[0].id))!
    expect(s.changelogRecordCount).toBe(6)
    expect(await changelogText(table, s.id)).toEqual(['+I 1', '+I 2', '+I 3', '+I 4', '+I 5', '+I 6'])
    for (const e of await changelogEntries(table, s)) {
      expect(e.file.fileName).toMatch(/^changelog-/)
      expect(e.file.fileSource).toBe(1)
    }
  })

  it("a conflicting compaction in a fold fails alone: its changelog is not listed, the other's is", async () => {
    const table = await newTable({ 'changelog-producer': 'lookup', bucket: '1' })
    await writeBatch(table, records(table, ops([1, 2])))
    const partition = (await table.manifests.liveEntries((await table.snapshots.latest())!))[0].partition
    // two jobs built on the same state take the same level-0 file up: the second conflicts
    const c1 = (await compactionMessage(table, { partition, bucket: 0 }))!
    const c2 = (await compactionMessage(table, { partition, bucket: 0 }))!
    const w = (await writeMessage(table, records(table, ops([3]))))!
    const res = await new BatchingCommitter(table).commit([c1, w, c2])
    expect(res.outcomes.map((o) => o.status)).toEqual(['landed', 'landed', 'failed'])
    const compact = res.snapshots.find((x) => x.kind === 'COMPACT')!
    const s = (await table.snapshots.snapshot(compact.id))!
    expect((await changelogEntries(table, s)).map((e) => e.file.fileName)).toEqual(c1.changelog!.map((e) => e.file.fileName))
    expect(await changelogText(table, compact.id)).toEqual(['+I 1', '+I 2'])
    // the writer's key 3 reaches the changelog with the next compaction
    await compactionMessage(table, { partition, bucket: 0 }).then((m) => new BatchingCommitter(table).commit([m!]))
    expect(await changelogText(table, await table.snapshots.latestId())).toEqual(['+I 3'])
  })
})

describe('changelog and maintenance', () => {
  it("expiration deletes expired snapshots' changelog files and manifests and keeps the retained ones; orphan cleanup keeps referenced changelog files", async () => {
    const table = await newTable({ 'changelog-producer': 'input', bucket: '1', 'snapshot.num-retained.min': '2', 'snapshot.num-retained.max': '2' })
    for (let i = 0; i < 4; i++) await writeBatch(table, records(table, ops([i, 10 + i])))
    const filesOf = async (id: number) => {
      const s = (await table.snapshots.snapshot(id))!
      const entries = await changelogEntries(table, s)
      return { list: `manifest/${s.changelogManifestList}`, files: entries.map((e) => `dt=${DT}/bucket-0/${e.file.fileName}`) }
    }
    const before = await Promise.all([1, 2, 3, 4].map(filesOf))
    const all = await keys(table)
    for (const f of before) for (const k of [f.list, ...f.files]) expect(all).toContain(k)
    const res = await expireSnapshots(table, { timeRetainedMs: 0 })
    expect(res.expired).toEqual([1, 2])
    const after = await keys(table)
    for (const f of before.slice(0, 2)) for (const k of [f.list, ...f.files]) expect(after).not.toContain(k)
    for (const f of before.slice(2)) for (const k of [f.list, ...f.files]) expect(after).toContain(k)
    expect(await changelogText(table, 3)).toEqual(['+I 12', '+I 2'])
    expect(await changelogText(table, 4)).toEqual(['+I 13', '+I 3'])
    // a changelog file no snapshot lists (a failed writer's) is an orphan; the listed ones stay
    const stray = `dt=${DT}/bucket-0/changelog-00000000-0000-0000-0000-000000000000-0.parquet`
    await table.store.put(stray, new Uint8Array([1, 2, 3]))
    const orphans = await removeOrphanFiles(table, { olderThanMs: 24 * 60 * 60_000, now: Date.now() + 48 * 60 * 60_000 })
    expect(orphans.deleted).toContain(stray)
    const left = await keys(table)
    for (const f of before.slice(2)) for (const k of [f.list, ...f.files]) expect(left).toContain(k)
  })

  it('refuses full-compaction and decoupled changelog retention at create, naming the option, the value and what is supported', async () => {
    // refused by design (a StrataInputError too: docs/design.md "Errors")
    await expect(newTable({ 'changelog-producer': 'full-compaction' })).rejects.toThrow(
      new RefusedError(`option 'changelog-producer': value "full-compaction" is not supported by Strata; expected none, input or lookup (lookup gives the same -U/+U, +I, -D changelog from each compaction of level 0)`),
    )
    // Paimon's SchemaValidation: first-row produces only the lookup changelog
    const s = schemaFor('first-row') as { options: Record<string, string> }
    await expect(Table.create(new MemoryStore(), { ...s, options: { ...s.options, 'changelog-producer': 'input' } })).rejects.toThrow(
      new StrataInputError(`option 'changelog-producer' is "input" with 'merge-engine' = "first-row": Paimon supports only 'none' and 'lookup' changelog-producer on the first-row merge engine (and refuses such a table)`),
    )
    await expect(newTable({ 'changelog-producer': 'bogus' })).rejects.toThrow(`option 'changelog-producer': invalid value "bogus", expected one of none, input, lookup`)
    await expect(newTable({ 'changelog-producer': 'input', 'changelog.num-retained.min': '20' })).rejects.toThrow(
      /^option 'changelog\.num-retained\.min' \(value "20"\) is not supported: Strata keeps a snapshot's changelog files exactly as long as the snapshot/,
    )
  })

  it('expiration of a stored schema that keeps changelog longer than its snapshots (Paimon) is refused, nothing deleted', async () => {
    const table = await newTable({ 'changelog-producer': 'input', bucket: '1', 'snapshot.num-retained.min': '1' })
    for (let i = 0; i < 3; i++) await writeBatch(table, records(table, ops([i])))
    const raw = JSON.parse(new TextDecoder().decode((await table.store.get('schema/schema-0'))!))
    raw.options['changelog.num-retained.max'] = '50'
    await table.store.put('schema/schema-0', new TextEncoder().encode(JSON.stringify(raw, null, 2)))
    const reopened = await Table.open(table.store)
    const before = await keys(reopened)
    const err = await expireSnapshots(reopened, { timeRetainedMs: 0 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(StrataInputError)
    expect((err as Error).message).toMatch(/^expire refused: table .* sets option 'changelog\.num-retained\.max' \("50"\), which keeps changelog files longer than their snapshots/)
    expect(await keys(reopened)).toEqual(before)
  })
})
