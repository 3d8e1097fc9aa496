// Tags (issue 19, part 4): Paimon's tag file format, create/delete/list, `read --tag`, and
// that expiration and orphan cleanup keep everything a tag needs while deleting a tag
// deletes what only it kept. The model-based property runs random writes, tag creates and
// deletes, expirations and orphan cleanups against an in-memory model: every live tag reads
// exactly the rows of the snapshot it tagged, every retained snapshot its own, and no
// object is ever left that nothing references (so tag deletion and expiration leave no
// garbage and orphan cleanup has nothing to do). Bad input is refused with a clear reason
// and leaves the table as it was.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { serializeSnapshot } from '../lib/format/snapshot.ts'
import { type Tag, parseTag, serializeTag } from '../lib/format/tag.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { MIN_ORPHAN_OLDER_THAN_MS, removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { lookup, readAll } from '../lib/read/table-read.ts'
import { InterceptingStore, type StoreOp } from '../lib/store/intercepting-store.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { snapshotKey, tagKey } from '../lib/table/paths.ts'
import { Table } from '../lib/handle/table.ts'
import { checkTagName, createTag, listTags } from '../lib/handle/tags.ts'
import { deleteTag } from '../lib/maintenance/tag-deletion.ts'
import { StrataInputError } from '../lib/errors.ts'
import type { Row, Snapshot } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { strata } from './helpers/cli-in-process.ts'
import { fileTree } from './helpers/file-tree.ts'
import { type Op, TableModel, opArb, schemaFor, sortRows } from './helpers/model.ts'

const DAY = 86_400_000
const decoder = new TextDecoder()

let root = ''
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'strata-tags-'))
})
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const freshDir = () => join(root, `t${n++}`)

type History = Map<number, Row[]>

/** A full compaction: the files of earlier snapshots leave the latest one. */
async function compactTableFull(table: Table): Promise<void> {
  await compactTable(table, { full: true })
}

async function commit(table: Table, model: TableModel, history: History, ops: Op[]): Promise<number> {
  const res = await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
  model.applyBatch(ops)
  history.set(res.snapshotId, model.snapshot())
  // the LATEST hint is rewritten in the background; a refusal must find the store settled
  await table.snapshots.settleHints()
  return res.snapshotId
}

const SNAPSHOT: Snapshot = {
  version: 3,
  id: 7,
  schemaId: 0,
  baseManifestList: 'manifest-list-a-0',
  baseManifestListSize: 1000,
  deltaManifestList: 'manifest-list-a-1',
  deltaManifestListSize: 900,
  commitUser: 'u',
  commitIdentifier: 9223372036854775807n,
  commitKind: 'APPEND',
  timeMillis: 1714560000000,
  totalRecordCount: 3,
  deltaRecordCount: 3,
  changelogRecordCount: 0,
}

describe('the tag file format', () => {
  // As Paimon's ObjectMapper writes a Tag with a retention (Jackson's JavaTimeModule,
  // timestamps on, default pretty printer): the snapshot's fields, then the two tag fields.
  const PAIMON_STYLE = `${serializeSnapshot(SNAPSHOT).slice(0, -2)},\n  "tagCreateTime" : [ 2024, 5, 1, 12, 34, 56, 123456000 ],\n  "tagTimeRetained" : 86400.000000000\n}`

  it('a tag without retention is the snapshot JSON as it is', () => {
    const tag: Tag = { snapshot: SNAPSHOT, tagCreateTime: null, tagTimeRetained: null }
    expect(serializeTag(tag)).toBe(serializeSnapshot(SNAPSHOT))
    expect(parseTag(serializeSnapshot(SNAPSHOT))).toEqual(tag)
  })

  it("reads and rewrites Paimon's tagCreateTime and tagTimeRetained character for character", () => {
    const tag = parseTag(PAIMON_STYLE)
    expect(tag.tagCreateTime).toEqual({ year: 2024, month: 5, day: 1, hour: 12, minute: 34, second: 56, nano: 123456000 })
    expect(tag.tagTimeRetained).toEqual({ seconds: 86400, nanos: 0 })
    expect(tag.snapshot).toEqual(SNAPSHOT)
    expect(serializeTag(tag)).toBe(PAIMON_STYLE)
  })

  it("Jackson's short forms: trailing zero second and nanosecond left out, a zero duration as 0.0, an ISO string and whole seconds read", () => {
    const t = (tagCreateTime: Tag['tagCreateTime'], tagTimeRetained: Tag['tagTimeRetained']) => serializeTag({ snapshot: SNAPSHOT, tagCreateTime, tagTimeRetained }).slice(serializeSnapshot(SNAPSHOT).length - 1).split('\n').slice(1, -1)
    expect(t({ year: 2024, month: 1, day: 2, hour: 3, minute: 4, second: 0, nano: 0 }, { seconds: 0, nanos: 0 })).toEqual(['  "tagCreateTime" : [ 2024, 1, 2, 3, 4 ],', '  "tagTimeRetained" : 0.0'])
    expect(t({ year: 2024, month: 1, day: 2, hour: 3, minute: 4, second: 5, nano: 0 }, { seconds: 1, nanos: 5 })).toEqual(['  "tagCreateTime" : [ 2024, 1, 2, 3, 4, 5 ],', '  "tagTimeRetained" : 1.000000005'])
    expect(t({ year: 2024, month: 1, day: 2, hour: 3, minute: 4, second: 0, nano: 7 }, null)).toEqual(['  "tagCreateTime" : [ 2024, 1, 2, 3, 4, 0, 7 ]'])
    const iso = serializeSnapshot(SNAPSHOT).slice(0, -2) + ',\n"tagCreateTime":"2024-02-29T23:59:01.5","tagTimeRetained":3600}'
    expect(parseTag(iso)).toMatchObject({ tagCreateTime: { year: 2024, month: 2, day: 29, hour: 23, minute: 59, second: 1, nano: 500000000 }, tagTimeRetained: { seconds: 3600, nanos: 0 } })
    const nulls = serializeSnapshot(SNAPSHOT).slice(0, -2) + ',\n"tagCreateTime":null,"tagTimeRetained":null}'
    expect(parseTag(nulls)).toEqual({ snapshot: SNAPSHOT, tagCreateTime: null, tagTimeRetained: null })
  })

  it('refuses a malformed tag file, naming the file, the field, the value and what was expected', () => {
    const withField = (json: string) => serializeSnapshot(SNAPSHOT).slice(0, -2) + `,\n${json}\n}`
    const cases: [string, RegExp][] = [
      [withField('"tagCreateTime" : [ 2024, 13, 1, 0, 0 ]'), /^tag 'x' field "tagCreateTime": month 13, expected an integer in 1\.\.12$/],
      [withField('"tagCreateTime" : [ 2023, 2, 29, 0, 0 ]'), /^tag 'x' field "tagCreateTime": day 29, expected at most 28 for 2023-2$/],
      [withField('"tagCreateTime" : [ 2024, 1 ]'), /^tag 'x' field "tagCreateTime": \[2024, 1\], expected \[year, month, day, hour, minute\]/],
      [withField('"tagCreateTime" : "yesterday"'), /^tag 'x' field "tagCreateTime": "yesterday", expected an ISO-8601 local date-time/],
      [withField('"tagTimeRetained" : -5'), /^tag 'x' field "tagTimeRetained": -5, expected a non-negative number of seconds/],
      [withField('"tagTimeRetained" : "PT1H"'), /^tag 'x' field "tagTimeRetained": "PT1H", expected a non-negative number of seconds/],
      ['{"version": 3}', /^tag 'x': required field "id" is missing$/],
      ['{"version": 3', /^tag 'x': snapshot JSON invalid at offset/],
    ]
    for (const [text, message] of cases) expect(() => parseTag(text, "tag 'x'")).toThrow(message)
  })

  it('tag names: Paimon refuses blank ones; Strata also what cannot be one file name', () => {
    for (const ok of ['v1', 'release 2024-05-01', '42', 'é✓', 'x'.repeat(251)]) expect(checkTagName(ok)).toBe(ok)
    const bad: [string, RegExp][] = [
      ['', /^tag name "": expected a name that is not blank$/],
      ['  \t', /not blank/],
      ['a/b', /^tag name "a\/b": expected no '\/'/],
      ['a\nb', /^tag name "a\\nb": expected no control characters, found U\+000A$/],
      ['x'.repeat(252), /: 252 bytes of UTF-8, expected at most 251/],
    ]
    for (const [name, message] of bad) expect(() => checkTagName(name)).toThrow(message)
  })
})

/** Every object key of the store, sorted. */
async function keys(store: ObjectStore): Promise<string[]> {
  return (await store.list('')).map((o) => o.key).sort()
}

describe('tags on a table', () => {
  it('property: random writes, compactions, tag creates and deletes, expirations and orphan cleanups; every tag reads its snapshot, nothing needed goes, nothing unneeded stays', async () => {
    const NAMES = ['a', 'b', 'c']
    const step = fc.oneof(
      { weight: 4, arbitrary: fc.array(opArb('deduplicate', 8), { minLength: 1, maxLength: 5 }).map((ops) => ({ kind: 'write' as const, ops })) },
      { weight: 3, arbitrary: fc.record({ kind: fc.constant('tag' as const), name: fc.constantFrom(...NAMES), back: fc.option(fc.nat(6), { nil: undefined }) }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('untag' as const), name: fc.constantFrom(...NAMES) }) },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('expire' as const), numRetainedMin: fc.integer({ min: 1, max: 3 }) }) },
      { weight: 1, arbitrary: fc.constant({ kind: 'orphans' as const }) },
      // compaction takes files out of the later snapshots, so tags pin data files, not only manifests
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('compact' as const), full: fc.boolean() }) },
    )
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 3, maxLength: 14 }), async (steps) => {
        const store = new LocalFileStore(freshDir())
        const table = await Table.create(store, schemaFor('deduplicate', { bucket: '2' }))
        const model = new TableModel('deduplicate')
        const history: History = new Map()
        const tags = new Map<string, number>()
        let earliest = 1
        let latest = await commit(table, model, history, [{ _kind: '+I', dt: '2024-05-01', id: 1, a: 1, b: 'x', c: 1 }])
        // a refusal changes nothing
        const refused = async (action: () => Promise<unknown>, message: RegExp) => {
          const before = await keys(store)
          await expect(action()).rejects.toThrow(message)
          expect(await keys(store)).toEqual(before)
        }
        for (const s of steps) {
          if (s.kind === 'write') latest = await commit(table, model, history, s.ops)
          else if (s.kind === 'compact') {
            await compactTable(table, { full: s.full })
            await table.snapshots.settleHints()
            for (let id = latest + 1; id <= (await table.snapshots.latestId()); id++) history.set(id, model.snapshot())
            latest = await table.snapshots.latestId()
          } else if (s.kind === 'tag') {
            const id = s.back === undefined ? latest : Math.max(1, latest - s.back)
            if (tags.has(s.name)) await refused(() => createTag(table, s.name, { snapshotId: id }), /already exists/)
            else if (id < earliest) await refused(() => createTag(table, s.name, { snapshotId: id }), /no such snapshot \(retained snapshots: /)
            else {
              expect(await createTag(table, s.name, s.back === undefined ? {} : { snapshotId: id })).toEqual({ name: s.name, snapshotId: id })
              tags.set(s.name, id)
            }
          } else if (s.kind === 'untag') {
            if (!tags.has(s.name)) await refused(() => deleteTag(table, s.name), /no such tag/)
            else {
              expect((await deleteTag(table, s.name)).snapshotId).toBe(tags.get(s.name))
              tags.delete(s.name)
            }
          } else if (s.kind === 'expire') {
            const r = await expireSnapshots(table, { numRetainedMin: s.numRetainedMin, timeRetainedMs: 0, now: Date.now() + DAY })
            earliest = r.earliest
            expect(earliest).toBe(Math.max(earliest, latest - s.numRetainedMin + 1))
          } else {
            await removeOrphanFiles(table, { now: Date.now() + 3 * MIN_ORPHAN_OLDER_THAN_MS })
          }

          // a fresh handle: no cache can hide a deleted object
          const fresh = await Table.open(store)
          expect((await listTags(fresh)).map((t) => [t.name, t.snapshot.id])).toEqual([...tags].sort((x, y) => x[1] - y[1] || (x[0] < y[0] ? -1 : 1)))
          for (const [name, id] of tags) expect(sortRows(await readAll(fresh, { tag: name })), `tag ${name} (snapshot ${id})`).toEqual(history.get(id))
          for (let id = earliest; id <= latest; id++) expect(sortRows(await readAll(fresh, { snapshotId: id })), `snapshot ${id}`).toEqual(history.get(id))
          // expiration and tag deletion left nothing unreferenced behind
          const orphans = await removeOrphanFiles(fresh, { now: Date.now() + 3 * MIN_ORPHAN_OLDER_THAN_MS, dryRun: true })
          expect(orphans.deleted, `after ${s.kind}`).toEqual([])
        }
      }),
      { numRuns: 25, seed: 19 },
    )
  }, 300_000)

  it("a tag created while expiration runs, on a snapshot it is expiring, keeps that snapshot's files", async () => {
    // the tag lands after expiration read the tags and before it deleted the snapshot files
    class TagOnFirstDelete extends InterceptingStore {
      armed = false
      table: Table | null = null
      protected async call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
        if (this.armed && op === 'delete' && key === snapshotKey(2)) {
          this.armed = false
          await createTag(this.table!, 'late', { snapshotId: 2 })
        }
        return run()
      }
    }
    const store = new TagOnFirstDelete(new LocalFileStore(freshDir()))
    const table = await Table.create(store, schemaFor('deduplicate', { bucket: '2' }))
    store.table = table
    const model = new TableModel('deduplicate')
    const history: History = new Map()
    for (let i = 0; i < 4; i++) await commit(table, model, history, [{ _kind: '+I', dt: '2024-05-01', id: i % 2, a: i, b: `v${i}`, c: i }])
    store.armed = true
    const r = await expireSnapshots(table, { numRetainedMin: 1, timeRetainedMs: 0, now: Date.now() + DAY })
    expect(r.expired).toEqual([1, 2, 3])
    expect(store.armed).toBe(false)
    const fresh = await Table.open(store.inner)
    expect(sortRows(await readAll(fresh, { tag: 'late' }))).toEqual(history.get(2))
    await removeOrphanFiles(fresh, { now: Date.now() + 3 * MIN_ORPHAN_OLDER_THAN_MS })
    expect(sortRows(await readAll(await Table.open(store.inner), { tag: 'late' }))).toEqual(history.get(2))
  })

  it('a tag created while orphan cleanup runs, on a snapshot expired before the cleanup walks it, keeps its files', async () => {
    // the cleanup has read the tags (none yet) when the tag is created and its snapshot expires
    class TagAfterTagListing extends InterceptingStore {
      armed = false
      table: Table | null = null
      protected async call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
        const result = await run()
        if (this.armed && op === 'list' && key === 'tag/') {
          this.armed = false
          await createTag(this.table!, 'late', { snapshotId: 2 })
          await expireSnapshots(this.table!, { numRetainedMin: 1, timeRetainedMs: 0, now: Date.now() + DAY })
        }
        return result
      }
    }
    const store = new TagAfterTagListing(new LocalFileStore(freshDir()))
    const table = await Table.create(store, schemaFor('deduplicate', { bucket: '2' }))
    store.table = table
    const model = new TableModel('deduplicate')
    const history: History = new Map()
    for (let i = 0; i < 4; i++) await commit(table, model, history, [{ _kind: '+U', dt: '2024-05-01', id: 1, a: i, b: `v${i}`, c: i }])
    await compactTableFull(table)
    store.armed = true
    await removeOrphanFiles(table, { now: Date.now() + 3 * MIN_ORPHAN_OLDER_THAN_MS })
    expect(store.armed).toBe(false)
    expect(await store.inner.head(snapshotKey(2))).toBeNull()
    expect(sortRows(await readAll(await Table.open(store.inner), { tag: 'late' }))).toEqual(history.get(2))
  })

  it('deleting one of two tags of an expired snapshot keeps its files; deleting the last deletes them', async () => {
    const store = new LocalFileStore(freshDir())
    const table = await Table.create(store, schemaFor('deduplicate', { bucket: '1' }))
    const model = new TableModel('deduplicate')
    const history: History = new Map()
    for (let i = 0; i < 3; i++) await commit(table, model, history, [{ _kind: '+I', dt: '2024-05-01', id: 1, a: i, b: null, c: null }])
    await createTag(table, 'one', { snapshotId: 1 })
    await createTag(table, 'uno', { snapshotId: 1 })
    // a tag of a snapshot that still exists: deleting it deletes only the tag file
    await createTag(table, 'three')
    expect(await deleteTag(table, 'three')).toEqual({ name: 'three', snapshotId: 3, deletedFiles: 0 })
    await expireSnapshots(table, { numRetainedMin: 1, timeRetainedMs: 0, now: Date.now() + DAY })
    expect((await deleteTag(table, 'one')).deletedFiles).toBe(0)
    expect(sortRows(await readAll(await Table.open(store), { tag: 'uno' }))).toEqual(history.get(1))
    const before = await keys(store)
    const r = await deleteTag(table, 'uno')
    const after = await keys(store)
    // snapshot 1's two manifest lists (its data file and manifest are snapshot 3's too): the tag file and those
    expect(r.deletedFiles).toBe(2)
    expect(before.filter((k) => !after.includes(k))).toHaveLength(3)
    expect(sortRows(await readAll(await Table.open(store)))).toEqual(history.get(3))
    expect((await removeOrphanFiles(table, { now: Date.now() + 3 * MIN_ORPHAN_OLDER_THAN_MS, dryRun: true })).deleted).toEqual([])
  })

  it('a tag file Paimon wrote with a retention is read, listed and honoured', async () => {
    const store = new LocalFileStore(freshDir())
    const table = await Table.create(store, schemaFor('deduplicate', { bucket: '1' }))
    const model = new TableModel('deduplicate')
    const history: History = new Map()
    await commit(table, model, history, [{ _kind: '+I', dt: '2024-05-01', id: 1, a: 1, b: null, c: null }])
    await commit(table, model, history, [{ _kind: '+I', dt: '2024-05-01', id: 2, a: 2, b: null, c: null }])
    const snapshot = decoder.decode((await store.get(snapshotKey(1)))!)
    await store.put(tagKey('kept'), new TextEncoder().encode(`${snapshot.slice(0, -2)},\n  "tagCreateTime" : [ 2024, 5, 1, 12, 0 ],\n  "tagTimeRetained" : 3600.000000000\n}`))
    await expireSnapshots(table, { numRetainedMin: 1, timeRetainedMs: 0, now: Date.now() + DAY })
    const [tag] = await listTags(table)
    expect(tag).toMatchObject({ name: 'kept', tagCreateTime: { year: 2024, hour: 12 }, tagTimeRetained: { seconds: 3600, nanos: 0 } })
    expect(sortRows(await readAll(await Table.open(store), { tag: 'kept' }))).toEqual(history.get(1))
  })
})

describe('strata tag and read --tag: bad input gets a clear reason and changes nothing', () => {
  let dir = ''
  let table = ''
  beforeAll(async () => {
    dir = freshDir()
    table = join(dir, 't')
    const schema = join(root, 'tags-schema.json')
    writeFileSync(schema, JSON.stringify(schemaFor('deduplicate', { bucket: '2' })))
    expect((await strata(['create', table, '--schema', schema])).code).toBe(0)
    const t = await Table.open(table)
    for (let i = 0; i < 3; i++) await writeBatch(t, [recordFromJson(t.view, { dt: '2024-05-01', id: i, a: i }, 'r')])
    await t.snapshots.settleHints()
    expect((await strata(['tag', 'create', table, 'v1', '--snapshot', '1'])).stdout).toBe('tagged snapshot 1 as "v1"\n')
    expect((await strata(['tag', 'create', table, 'latest'])).stdout).toBe('tagged snapshot 3 as "latest"\n')
    await expireSnapshots(t, { numRetainedMin: 2, timeRetainedMs: 0, now: Date.now() + DAY })
  })

  it('list, read and lookup a tag whose snapshot has expired', async () => {
    const list = await strata(['tag', 'list', table, '--json'])
    expect(list.stdout.trim().split('\n').map((l) => JSON.parse(l))).toMatchObject([
      { name: 'v1', snapshot: 1, rows: 1, tagCreateTime: null, tagTimeRetained: null },
      { name: 'latest', snapshot: 3, rows: 3 },
    ])
    expect((await strata(['read', table, '--tag', 'v1', '--json'])).stdout).toBe('{"dt":"2024-05-01","id":0,"a":0,"b":null,"c":null}\n')
    expect((await strata(['read', table, '--tag', 'latest', '--columns', 'id'])).stdout).toBe('id\n0\n1\n2\n')
    expect((await strata(['lookup', table, '--tag', 'v1', '--key', '{"dt":"2024-05-01","id":1}'])).code).toBe(1)
    const t = await Table.open(table)
    expect(await lookup(t, { dt: '2024-05-01', id: 0 }, { tag: 'v1', columns: ['a'] })).toEqual([0])
  })

  const cases: [string, string[], RegExp][] = [
    ['read of an unknown tag', ['read', '<t>', '--tag', 'nope'], /^strata: --tag "nope": no such tag in file:.* \(tags: v1, latest\)$/],
    ['lookup of an unknown tag', ['lookup', '<t>', '--tag', 'nope', '--key', '{"dt":"2024-05-01","id":1}'], /^strata: --tag "nope": no such tag/],
    ['delete of an unknown tag', ['tag', 'delete', '<t>', 'nope'], /^strata: tag "nope": no such tag in file:.* \(tags: v1, latest\)$/],
    ['a duplicate tag name', ['tag', 'create', '<t>', 'v1'], /^strata: tag "v1" already exists in file:.*; delete it first to move it$/],
    ['a blank tag name', ['tag', 'create', '<t>', ' '], /^strata: tag name " ": expected a name that is not blank$/],
    ['a tag name with a slash', ['tag', 'create', '<t>', '../x'], /^strata: tag name "\.\.\/x": expected no '\/'/],
    ['an invalid --tag name', ['read', '<t>', '--tag', 'a/b'], /^strata: --tag "a\/b": expected no '\/'/],
    ['--snapshot of a snapshot that does not exist', ['tag', 'create', '<t>', 'x', '--snapshot', '99'], /^strata: --snapshot 99: no such snapshot \(retained snapshots: 2\.\.3\); a tag can only pin a retained snapshot$/],
    ['--snapshot of an expired snapshot', ['tag', 'create', '<t>', 'x', '--snapshot', '1'], /^strata: --snapshot 1: no such snapshot \(retained snapshots: 2\.\.3\)/],
    ['--snapshot that is not an id', ['tag', 'create', '<t>', 'x', '--snapshot', 'two'], /^strata: --snapshot: expected a snapshot id >= 1, got "two"$/],
    ['read --tag with --snapshot', ['read', '<t>', '--tag', 'v1', '--snapshot', '2'], /^strata: --tag "v1" and --snapshot 2: expected one of them \(a tag names its snapshot\)$/],
  ]
  for (const [name, args, message] of cases) {
    it(name, async () => {
      const before = fileTree(dir)
      const r = await strata(args.map((a) => (a === '<t>' ? table : a)))
      // a name that does not exist is exit 3, other bad input 2 (docs/operations.md "Exit codes")
      expect(r.code).toBe(/no such (tag|snapshot)/.test(message.source) ? 3 : 2)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
      expect(r.stderr.trim()).toMatch(message)
      expect(r.stdout).toBe('')
      expect(fileTree(dir)).toEqual(before)
    })
  }

  it('a table with no snapshot has nothing to tag', async () => {
    const t = await Table.create(freshDir(), schemaFor('deduplicate'))
    await expect(createTag(t, 'x')).rejects.toThrow(StrataInputError)
    await expect(createTag(t, 'x')).rejects.toThrow(/has no snapshot to tag yet/)
    expect(await listTags(t)).toEqual([])
  })
})
