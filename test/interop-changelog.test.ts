// Changelog files between Strata and Apache Paimon (issue 19, part 1), through the harness
// in interop/ (its `changelog` command: Paimon's batch incremental read with
// `incremental-between` and `incremental-between-scan-mode = changelog`):
// - Paimon reads Strata's changelog: tables Strata wrote with `changelog-producer` input and
//   lookup (deduplicate; aggregation with deletion vectors), over several snapshot ranges,
//   must give exactly the changes Strata's own listing (lib/read/changelog.ts) gives, row
//   kinds included, each key's changes in order.
// - Strata handles Paimon's changelog: tables Paimon wrote with input and lookup (whose
//   writer lookup-compacts every commit) list in Strata the changes Paimon reads; Strata's
//   expiration then deletes the changelog files of the snapshots it expires, keeps the
//   retained ones (and so does its orphan cleanup), and Paimon still reads the retained range.
// - Parity: for one history, Strata's changelog is the one Paimon's writer produces (input;
//   lookup for deduplicate, partial-update, aggregation and first-row).
// Without Java or Maven the file is skipped with one line, except under CI, where it fails.

import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { MIN_ORPHAN_OLDER_THAN_MS, removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { changelogEntries, changelogRecords } from '../lib/read/changelog.ts'
import { bucketDirOf } from '../lib/handle/bucket-state.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { RUN_COMMAND, type PaimonResult, buildHarness, missingTools, paimonBatch, parseRows, renderRow, writeJsonLines } from './helpers/interop.ts'

type Rec = Record<string, unknown>

const FIELDS = [
  { name: 'id', type: 'INT NOT NULL' },
  { name: 'v', type: 'STRING' },
  { name: 'n', type: 'BIGINT' },
]

/** Three commits of upserts, updates and deletes over keys 1..7. */
const HISTORY: Rec[][] = [
  [1, 2, 3, 4].map((id) => ({ _kind: '+I', id, v: `a${id}`, n: id })),
  [{ _kind: '+U', id: 1, v: 'b1', n: 10 }, { _kind: '-D', id: 2, v: 'a2', n: 2 }, { _kind: '+I', id: 5, v: 'a5', n: 5 }, { _kind: '+I', id: 4, v: 'a4', n: 4 }],
  [{ _kind: '-U', id: 3, v: 'a3', n: 3 }, { _kind: '+U', id: 3, v: 'c3', n: 30 }, { _kind: '+I', id: 6, v: 'a6', n: 6 }, { _kind: '-D', id: 5, v: 'a5', n: 5 }, { _kind: '+I', id: 7, v: 'a7', n: 7 }],
]

interface StrataCell {
  name: string
  options: Record<string, string>
  /** compact after every write (the lookup producer's changelog comes from compactions) */
  compact: boolean
  /** the row kinds the history's changelog holds */
  kinds: string[]
  /** the history written (default HISTORY) */
  history?: Rec[][]
  /** Paimon writes the same history to a table with the same options (its writer lookup-compacts each commit) */
  parity?: boolean
  /** the parity cell diverges: why (an it.fails, so it fails once fixed) */
  divergent?: string
}

const STRATA_CELLS: StrataCell[] = [
  { name: 'input, deduplicate, 2 buckets', options: { 'changelog-producer': 'input', bucket: '2' }, compact: false, kinds: ['+I', '-U', '+U', '-D'] },
  { name: 'lookup, deduplicate', options: { 'changelog-producer': 'lookup', bucket: '1' }, compact: true, kinds: ['+I', '-U', '+U', '-D'] },
  {
    name: 'lookup, aggregation with deletion vectors',
    options: { 'changelog-producer': 'lookup', bucket: '1', 'merge-engine': 'aggregation', 'fields.n.aggregate-function': 'sum', 'fields.v.aggregate-function': 'last_non_null_value', 'deletion-vectors.enabled': 'true' },
    compact: true,
    // a -D is aggregated (sum retracts), not a removal: the key stays
    kinds: ['+I', '-U', '+U'],
    // last_non_null_value retracted by a -D becomes null in both: the looked-up row and the level-0 records merge in one pass
    parity: true,
  },
  {
    name: 'lookup, aggregation',
    options: { 'changelog-producer': 'lookup', bucket: '1', 'merge-engine': 'aggregation', 'fields.n.aggregate-function': 'sum', 'fields.v.aggregate-function': 'last_non_null_value' },
    compact: true,
    kinds: ['+I', '-U', '+U'],
    parity: true,
  },
  {
    name: 'lookup, partial-update',
    options: { 'changelog-producer': 'lookup', bucket: '1', 'merge-engine': 'partial-update', 'partial-update.remove-record-on-delete': 'true' },
    compact: true,
    kinds: ['+I', '-U', '+U', '-D'],
    // Paimon's partial-update refuses a -U without sequence groups
    history: HISTORY.map((b) => b.filter((r) => r._kind !== '-U')),
    parity: true,
  },
  {
    // Paimon's writer drops what ignore-delete ignores before buffering: -U and -D reach no changelog
    name: 'input, deduplicate, ignore-delete',
    options: { 'changelog-producer': 'input', bucket: '1', 'ignore-delete': 'true' },
    compact: false,
    kinds: ['+I', '+U'],
    parity: true,
  },
  { name: 'lookup, first-row', options: { 'changelog-producer': 'lookup', bucket: '1', 'merge-engine': 'first-row', 'ignore-delete': 'true' }, compact: true, kinds: ['+I'], parity: true },
]

/** A change as both sides render it: `_kind` first, then the row. */
const line = (r: Rec) => JSON.stringify(r)

/**
 * Changes by key, each key's in order (the harness orders Paimon's the same way). Within one
 * snapshot a key's changes keep their order on both sides; across snapshots Paimon's reader
 * does not keep snapshot order, so ranges of several snapshots are compared as multisets.
 */
function byKeyStable(lines: Rec[]): string[] {
  return [...lines].sort((a, b) => (a.id as number) - (b.id as number)).map(line)
}

const multiset = (lines: string[]) => [...lines].sort()

async function strataChanges(table: Table, from: number, to: number): Promise<string[]> {
  const out: Rec[] = []
  for (let id = from + 1; id <= to; id++) {
    const s = await table.snapshots.snapshot(id)
    if (!s) continue
    for (const r of await changelogRecords(table, s)) out.push({ _kind: ROW_KIND_SHORT[r.kind], ...renderRow(table.view.fields, r.row) })
  }
  return byKeyStable(out)
}

const missing = missingTools()

if (missing.length > 0 && !process.env.CI) {
  process.stdout.write(`interop changelog suite skipped: ${missing.join(' and ')} not on PATH; to run it: ${RUN_COMMAND.replace('interop.test.ts', 'interop-changelog.test.ts')}\n`)
  describe.skip('Paimon interop: changelog', () => it('needs Java and Maven', () => {}))
} else if (missing.length > 0) {
  describe('Paimon interop: changelog', () => {
    it('runs under CI', () => {
      throw new Error(`CI must run the interop changelog suite, but ${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not on PATH (${RUN_COMMAND})`)
    })
  })
} else {
  describe('Paimon interop: changelog', () => {
    let root = ''
    const strata = new Map<string, { table: Table; latest: number; ranges: [number, number][]; paimon: PaimonResult[] }>()
    const paimonDirs = { input: '', lookup: '' }
    let first: PaimonResult[] = []
    /** Paimon's changes of its own tables, over (1, latest], before Strata expires anything */
    const paimonOwn = new Map<string, { latest: number; changes: PaimonResult; strata: string[] }>()
    let second: PaimonResult[] = []
    /** Strata's write and compaction of a Paimon-made lookup table: its changelog as Strata lists it and as Paimon reads it */
    let continued = { from: 0, to: 0, strata: [] as string[], paimon: { ok: false, output: '' } as PaimonResult }
    /** the parity cells' Paimon tables: Paimon's changes over (1, latest] and Strata's listing of them */
    const paritySeen = new Map<string, { dir: string; latest: number; changes: PaimonResult; strata: string[] }>()
    const expired = new Map<string, { expiredFiles: string[]; keptFiles: string[]; retainedFrom: number; latest: number; strataRetained: string[] }>()

    beforeAll(async () => {
      buildHarness()
      root = mkdtempSync(join(tmpdir(), 'strata-interop-changelog-'))

      // A: Strata writes; the first JVM reads its changelog over several ranges
      const commands: string[][] = []
      const pending: (() => void)[] = []
      for (const cell of STRATA_CELLS) {
        const dir = join(root, `strata-${cell.name.replace(/[^a-z]+/g, '-')}`)
        const table = await Table.create(dir, { fields: FIELDS, primaryKeys: ['id'], options: cell.options })
        for (const batch of cell.history ?? HISTORY) {
          await writeBatch(table, batch.map((r, i) => recordFromJson(table.view, r, `record ${i}`)))
          if (cell.compact) await compactTable(table)
        }
        const latest = await table.snapshots.latestId()
        // every single snapshot after the first, and longer ranges
        const ranges: [number, number][] = [[1, latest], [2, latest], [1, Math.min(3, latest)]]
        for (let a = 1; a < latest; a++) ranges.push([a, a + 1])
        const entry = { table, latest, ranges, paimon: [] as PaimonResult[] }
        strata.set(cell.name, entry)
        const start = commands.length
        for (const [a, b] of ranges) commands.push(['changelog', dir, '--from', String(a), '--to', String(b)])
        pending.push(() => (entry.paimon = first.slice(start, start + ranges.length)))
      }

      // B: Paimon writes tables with input and lookup changelog, then reads its own changelog
      for (const producer of ['input', 'lookup'] as const) {
        const dir = join(root, `paimon-${producer}`)
        paimonDirs[producer] = dir
        const schema = JSON.stringify({ fields: FIELDS, primaryKeys: ['id'], options: { bucket: '1', 'changelog-producer': producer } })
        HISTORY.forEach((batch, i) => commands.push(['write', dir, '--schema', schema, '--in', writeJsonLines(join(root, `${producer}-${i}.jsonl`), batch)]))
      }
      // the parity cells: Paimon writes the Strata cell's history with its options
      for (const cell of STRATA_CELLS.filter((c) => c.parity)) {
        const dir = join(root, `parity-${cell.name.replace(/[^a-z]+/g, '-')}`)
        paritySeen.set(cell.name, { dir, latest: 0, changes: { ok: false, output: '' }, strata: [] })
        const schema = JSON.stringify({ fields: FIELDS, primaryKeys: ['id'], options: cell.options })
        ;(cell.history ?? HISTORY).forEach((batch, i) => commands.push(['write', dir, '--schema', schema, '--in', writeJsonLines(join(root, `parity-${i}-${cell.name.replace(/[^a-z]+/g, '-')}.jsonl`), batch)]))
      }
      first = paimonBatch(commands)
      for (const p of pending) p()
      for (const r of first) expect(r.error).toBeUndefined()

      // Paimon's latest snapshot ids, from the tables themselves; then what Paimon reads of
      // its changelog over (1, latest]
      const own: string[][] = []
      for (const producer of ['input', 'lookup'] as const) {
        const table = await Table.open(paimonDirs[producer])
        const latest = await table.snapshots.latestId()
        paimonOwn.set(producer, { latest, changes: { ok: false, output: '' }, strata: await strataChanges(table, 1, latest) })
        own.push(['changelog', paimonDirs[producer], '--from', '1', '--to', String(latest)])
      }
      for (const seen of paritySeen.values()) {
        const table = await Table.open(seen.dir)
        seen.latest = await table.snapshots.latestId()
        seen.strata = await strataChanges(table, 1, seen.latest)
        own.push(['changelog', seen.dir, '--from', '1', '--to', String(seen.latest)])
      }
      const ownResults = paimonBatch(own)
      ;(['input', 'lookup'] as const).forEach((p, i) => (paimonOwn.get(p)!.changes = ownResults[i]))
      ;[...paritySeen.values()].forEach((seen, i) => (seen.changes = ownResults[2 + i]))

      // Strata expires Paimon's tables down to two snapshots; the second JVM reads what is retained
      const after: string[][] = []
      for (const producer of ['input', 'lookup'] as const) {
        const table = await Table.open(paimonDirs[producer])
        const latest = await table.snapshots.latestId()
        const strataRetained = await strataChanges(table, latest - 2, latest)
        const fileKeys = async (id: number) => {
          const s = (await table.snapshots.snapshot(id))!
          return [
            ...(s.changelogManifestList ? [`manifest/${s.changelogManifestList}`] : []),
            ...(await changelogEntries(table, s)).map((e) => `${bucketDirOf(table, e.partition, e.bucket).path}/${e.file.fileName}`),
          ]
        }
        const expiredFiles: string[] = []
        for (let id = 1; id <= latest - 2; id++) expiredFiles.push(...(await fileKeys(id)))
        const keptFiles = [...(await fileKeys(latest - 1)), ...(await fileKeys(latest))]
        const res = await expireSnapshots(table, { numRetainedMin: 2, numRetainedMax: 2, timeRetainedMs: 0 })
        expect(res.earliest).toBe(latest - 1)
        // orphan cleanup, as if days had passed: the retained changelog is referenced, so it stays
        await removeOrphanFiles(table, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now: Date.now() + 3 * MIN_ORPHAN_OLDER_THAN_MS })
        expired.set(producer, { expiredFiles, keptFiles, retainedFrom: latest - 2, latest, strataRetained })
        after.push(['changelog', paimonDirs[producer], '--from', String(latest - 2), '--to', String(latest)])
      }
      // Strata continues the partial-update table Paimon lookup-compacted: a write and a compaction
      {
        const seen = paritySeen.get('lookup, partial-update')!
        const table = await Table.open(seen.dir)
        const from = await table.snapshots.latestId()
        await writeBatch(table, [{ _kind: '+I', id: 1, v: null, n: 100 }, { _kind: '+I', id: 8, v: 'a8', n: 8 }, { _kind: '-D', id: 4, v: null, n: null }].map((r, i) => recordFromJson(table.view, r, `record ${i}`)))
        await compactTable(table)
        const to = await table.snapshots.latestId()
        continued = { from, to, strata: await strataChanges(table, from, to), paimon: { ok: false, output: '' } }
        after.push(['changelog', seen.dir, '--from', String(from), '--to', String(to)])
      }
      second = paimonBatch(after)
      continued.paimon = second[2]
    }, 180_000)

    afterAll(() => {
      if (root) rmSync(root, { recursive: true, force: true })
    })

    for (const cell of STRATA_CELLS) {
      it(`Paimon reads Strata's changelog (${cell.name}) over every range as Strata lists it, row kinds included`, async () => {
        const { table, ranges, paimon } = strata.get(cell.name)!
        expect(paimon).toHaveLength(ranges.length)
        for (const [i, [a, b]] of ranges.entries()) {
          expect(paimon[i].error, `(${a}, ${b}]`).toBeUndefined()
          const want = await strataChanges(table, a, b)
          const got = byKeyStable(parseRows(paimon[i].output))
          if (b === a + 1) expect(got, `(${a}, ${b}]`).toEqual(want)
          else expect(multiset(got), `(${a}, ${b}]`).toEqual(multiset(want))
        }
        // not vacuous: the whole history has changes of every kind the producer makes of it
        const all = (await strataChanges(table, 0, strata.get(cell.name)!.latest)).map((l) => JSON.parse(l)._kind as string)
        expect(new Set(all)).toEqual(new Set(cell.kinds))
      })
    }

    it('for one history, Strata writes the changelog Paimon writes: input, and lookup (deduplicate) compacting after each commit as Paimon\'s writer does', async () => {
      for (const [producer, cell] of [['input', STRATA_CELLS[0]], ['lookup', STRATA_CELLS[1]]] as const) {
        const { table, latest } = strata.get(cell.name)!
        const paimon = paimonOwn.get(producer)!
        expect(latest, producer).toBe(paimon.latest)
        expect(multiset(await strataChanges(table, 1, latest)), producer).toEqual(multiset(paimon.strata))
      }
    })

    for (const cell of STRATA_CELLS.filter((c) => c.parity)) {
      ;(cell.divergent ? it.fails : it)(`for one history, Strata's changelog (${cell.name}) is the one Paimon's writer produces, and Strata lists Paimon's as Paimon reads it`, async () => {
        const seen = paritySeen.get(cell.name)!
        expect(seen.changes.error).toBeUndefined()
        const paimon = multiset(byKeyStable(parseRows(seen.changes.output)))
        expect(paimon.length).toBeGreaterThan(0)
        expect(multiset(seen.strata)).toEqual(paimon)
        const { table, latest } = strata.get(cell.name)!
        expect(latest).toBe(seen.latest)
        expect(multiset(await strataChanges(table, 1, latest))).toEqual(paimon)
      })
    }

    it('Strata writes and lookup-compacts a partial-update table Paimon made, and Paimon reads the changelog it produced', () => {
      expect(continued.paimon.error).toBeUndefined()
      expect(continued.to).toBe(continued.from + 2)
      expect(continued.strata).toEqual([
        '{"_kind":"-U","id":1,"v":"b1","n":"10"}',
        '{"_kind":"+U","id":1,"v":"b1","n":"100"}',
        '{"_kind":"-D","id":4,"v":"a4","n":"4"}',
        '{"_kind":"+I","id":8,"v":"a8","n":"8"}',
      ])
      expect(byKeyStable(parseRows(continued.paimon.output))).toEqual(continued.strata)
    })

    for (const producer of ['input', 'lookup'] as const) {
      it(`Strata lists the changelog Paimon wrote with changelog-producer ${producer} as Paimon reads it`, async () => {
        const { latest, changes, strata: mine } = paimonOwn.get(producer)!
        expect(changes.error).toBeUndefined()
        const table = await Table.open(paimonDirs[producer])
        expect(mine.length).toBeGreaterThan(0)
        expect(multiset(mine)).toEqual(multiset(byKeyStable(parseRows(changes.output))))
        if (producer === 'lookup') {
          // Paimon's lookup writer compacts each commit: the COMPACT snapshots carry the changelog
          // (read before Strata expired the older snapshots: only the retained ones are left)
          for (let id = latest - 1; id <= latest; id++) {
            const s = (await table.snapshots.snapshot(id))!
            if (s.changelogManifestList) expect(s.commitKind, `snapshot ${id}`).toBe('COMPACT')
          }
        }
      })

      it(`Strata's expiration of Paimon's ${producer} table deletes the expired snapshots' changelog files and keeps the retained ones, which Paimon still reads`, () => {
        const { expiredFiles, keptFiles, strataRetained } = expired.get(producer)!
        const dir = paimonDirs[producer]
        expect(expiredFiles.length).toBeGreaterThan(0)
        expect(keptFiles.length).toBeGreaterThan(0)
        for (const k of expiredFiles) expect(existsSync(join(dir, k)), k).toBe(false)
        for (const k of keptFiles) expect(existsSync(join(dir, k)), k).toBe(true)
        const i = producer === 'input' ? 0 : 1
        expect(second[i].error).toBeUndefined()
        expect(multiset(byKeyStable(parseRows(second[i].output)))).toEqual(multiset(strataRetained))
      })
    }
  })
}
