// Property: whatever the interleaving of writes, compactions, expiration and orphan cleanup
// at any age the cleanup accepts, no retained snapshot ever references a missing object and
// every row that landed reads back, provided each commit lands within
// LONGEST_COMMIT_DELAY_MS of writing its files (the bound the floor is argued from,
// lib/maintenance/orphans.ts).
//
// Commits in flight take the two real paths: commit messages built by the real writer and
// compactor (their files written, the message waiting as on the commit queue) that a
// BatchingCommitter lands later, and direct writes paused just before their snapshot is
// created (their manifests written too). Time is simulated: only Date is faked, so the
// memory store stamps objects with the simulated clock, and the clock jumps by hours.
// With the floor lowered below the bound (6 h, tried by hand) this finds a snapshot whose
// manifest list cleanup deleted within four steps.

import fc from 'fast-check'
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { BatchingCommitter } from '../lib/commit/batching-committer.ts'
import type { CommitMessage } from '../lib/commit/commit-message.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { LONGEST_COMMIT_DELAY_MS, MIN_ORPHAN_OLDER_THAN_MS, removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { snapshotRange } from '../lib/maintenance/references.ts'
import { planScan, readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { indexKey, manifestKey } from '../lib/table/paths.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { compactionMessage, writeMessage } from './helpers/commit.ts'
import { schemaFor } from './helpers/model.ts'

const HOUR = 3_600_000
const START = Date.UTC(2024, 4, 1)

type Step =
  | { t: 'send' } // a writer's commit message, waiting
  | { t: 'sendCompaction'; bucket: number } // a compactor's commit message, waiting
  | { t: 'begin' } // a direct write paused before its snapshot
  | { t: 'die' } // a write that dies before its snapshot: its files are orphans
  | { t: 'land'; pick: number }
  | { t: 'compact' }
  | { t: 'expire'; keep: number }
  | { t: 'clean'; extraMs: number }
  | { t: 'advance'; ms: number }

const stepArb: fc.Arbitrary<Step> = fc.oneof(
  { arbitrary: fc.constant<Step>({ t: 'send' }), weight: 2 },
  { arbitrary: fc.integer({ min: 0, max: 1 }).map((bucket): Step => ({ t: 'sendCompaction', bucket })), weight: 1 },
  { arbitrary: fc.constant<Step>({ t: 'begin' }), weight: 2 },
  { arbitrary: fc.constant<Step>({ t: 'die' }), weight: 1 },
  { arbitrary: fc.nat(7).map((pick): Step => ({ t: 'land', pick })), weight: 2 },
  { arbitrary: fc.constant<Step>({ t: 'compact' }), weight: 1 },
  { arbitrary: fc.integer({ min: 1, max: 3 }).map((keep): Step => ({ t: 'expire', keep })), weight: 1 },
  { arbitrary: fc.integer({ min: 0, max: 2 * HOUR }).map((extraMs): Step => ({ t: 'clean', extraMs })), weight: 2 },
  { arbitrary: fc.integer({ min: 0, max: 14 * HOUR }).map((ms): Step => ({ t: 'advance', ms })), weight: 3 },
)

/** A commit whose files exist and whose snapshot does not yet. */
interface Pending {
  /** the earliest modification time of its files: it must land by this plus LONGEST_COMMIT_DELAY_MS */
  writtenAt: number
  /** rows it adds (fresh keys), or none for a compaction */
  rows: string[]
  land: () => Promise<boolean>
}

/** Every retained snapshot: each object a read of it touches (found through the reader's planning) exists, and the read succeeds. */
async function checkRetained(table: Table): Promise<void> {
  const { earliest, latest } = await snapshotRange(table)
  for (let id = earliest; id <= latest && latest > 0; id++) {
    const s = (await table.snapshots.snapshot(id))!
    const keys = [manifestKey(s.baseManifestList), manifestKey(s.deltaManifestList)]
    for (const m of await table.manifests.dataManifests(s)) keys.push(manifestKey(m.fileName))
    for (const split of (await planScan(table, { snapshotId: id })).splits) for (const e of split.files) keys.push(`${split.path}/${e.file.fileName}`)
    if (s.indexManifest) {
      keys.push(manifestKey(s.indexManifest))
      for (const e of await table.manifests.readIndexManifest(s.indexManifest)) keys.push(indexKey(e.fileName))
    }
    for (const k of keys) expect(await table.store.head(k), `snapshot ${id} references ${k}`).not.toBeNull()
    await readAll(table, { snapshotId: id })
  }
}

describe('orphan cleanup interleaved with commits in flight', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date'], now: START })
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('never leaves a snapshot referencing a missing file when every age is at least the floor', async () => {
    let deletedInAll = 0
    let landedLate = 0
    await fc.assert(
      fc.asyncProperty(fc.array(stepArb, { minLength: 4, maxLength: 18 }), async (steps) => {
        vi.setSystemTime(START)
        const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { bucket: '2', 'deletion-vectors.enabled': 'true' }))
        const landedRows = new Set<string>()
        let pending: Pending[] = []
        let nextId = 0
        const batch = () => {
          const ids = [nextId++, nextId++]
          return { ids: ids.map(String), records: ids.map((id) => recordFromJson(table.view, { _kind: '+I', dt: '2024-05-01', id, a: id, b: null, c: null }, `id ${id}`)) }
        }
        const viaCommitter = async (message: CommitMessage | null, rows: string[]) => {
          if (!message) return
          const writtenAt = Date.now()
          pending.push({
            writtenAt,
            rows,
            land: async () => {
              const [outcome] = (await new BatchingCommitter(table).commit([message])).outcomes
              if (outcome.status === 'failed') {
                // a compaction whose inputs another one took: its files are left to cleanup
                expect(outcome.conflict, outcome.error.message).toBe(true)
                expect(message.kind).toBe('COMPACT')
                return false
              }
              return true
            },
          })
        }
        const landOne = async (p: Pending) => {
          pending = pending.filter((x) => x !== p)
          expect(Date.now()).toBeLessThanOrEqual(p.writtenAt + LONGEST_COMMIT_DELAY_MS)
          if (Date.now() - p.writtenAt > LONGEST_COMMIT_DELAY_MS - HOUR) landedLate++
          if (await p.land()) for (const r of p.rows) landedRows.add(r)
        }

        for (const step of steps) {
          switch (step.t) {
            case 'send': {
              const { ids, records } = batch()
              await viaCommitter(await writeMessage(table, records), ids)
              break
            }
            case 'sendCompaction': {
              const latest = await table.snapshots.latest()
              const file = latest && (await table.manifests.liveEntries(latest)).find((e) => e.bucket === step.bucket)
              if (file) await viaCommitter(await compactionMessage(table, { partition: file.partition, bucket: step.bucket, full: true }), [])
              break
            }
            case 'begin': {
              const { ids, records } = batch()
              let paused!: () => void
              const reached = new Promise<void>((r) => (paused = r))
              let release!: () => void
              const gate = new Promise<void>((r) => (release = r))
              let first = true
              const done = writeBatch(table, records, {
                beforeSnapshotCreate: async () => {
                  if (!first) return
                  first = false
                  paused()
                  await gate
                },
              })
              await Promise.race([reached, done])
              pending.push({ writtenAt: Date.now(), rows: ids, land: async () => (release(), await done, true) })
              break
            }
            case 'die': {
              const { records } = batch()
              await expect(writeBatch(table, records, { beforeSnapshotCreate: () => Promise.reject(new Error('writer died')) })).rejects.toThrow('writer died')
              break
            }
            case 'land':
              if (pending.length) await landOne(pending[step.pick % pending.length])
              break
            case 'compact':
              await compactTable(table)
              break
            case 'expire':
              await expireSnapshots(table, { numRetainedMin: step.keep, numRetainedMax: step.keep, timeRetainedMs: 0, now: Date.now() + 1 })
              break
            case 'clean':
              deletedInAll += (await removeOrphanFiles(await Table.open(table.store), { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS + step.extraMs })).deleted.length
              break
            case 'advance': {
              // every commit lands within its bound: one the jump would carry past it lands
              // at the last moment, right after a cleanup at the smallest age
              const to = Date.now() + step.ms
              for (const p of [...pending].sort((a, b) => a.writtenAt - b.writtenAt)) {
                if (p.writtenAt + LONGEST_COMMIT_DELAY_MS >= to) continue
                vi.setSystemTime(Math.max(Date.now(), p.writtenAt + LONGEST_COMMIT_DELAY_MS))
                deletedInAll += (await removeOrphanFiles(await Table.open(table.store), { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS })).deleted.length
                await landOne(p)
              }
              vi.setSystemTime(to)
              break
            }
          }
          await checkRetained(await Table.open(table.store))
        }
        for (const p of [...pending]) await landOne(p)
        // quiescent: once every file is past the floor, cleanup takes what no commit will land
        vi.setSystemTime(Date.now() + MIN_ORPHAN_OLDER_THAN_MS + 1)
        deletedInAll += (await removeOrphanFiles(await Table.open(table.store), { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS })).deleted.length
        const fresh = await Table.open(table.store)
        await checkRetained(fresh)
        // deletion-vector readers skip level 0: lift every landed row out of it first
        await compactTable(fresh, { full: true })
        const ids = (await readAll(fresh)).map((r) => String(r[1])).sort()
        expect(ids).toEqual([...landedRows].sort())
      }),
      { numRuns: 30, seed: 1616 },
    )
    // the runs exercised what they claim: cleanup deleted files, and commits landed close to their bound
    expect({ deletedInAll: deletedInAll > 0, landedLate: landedLate > 0 }).toEqual({ deletedInAll: true, landedLate: true })
  }, 120_000)
})
