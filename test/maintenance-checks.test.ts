// Maintenance deletes nothing because of one garbled file. Every snapshot read is checked
// against the name it was read under, and every manifest list, manifest and index manifest
// that expiration or orphan cleanup reads against what names it; when a check fails, the run
// fails with an error naming the file and deletes nothing (the full listing is compared before
// and after). A commit that meets a garbled snapshot fails with that error, not with "lost
// races". The last test corrupts one snapshot or manifest file of a random history at random
// and checks that expiration and orphan cleanup then delete only what they delete on a clean
// copy of the table, or fail without deleting.
//
// Files are made "old" with fs.utimes on disk (the CLI probe) and by passing `now` a day or
// more ahead on the memory store.

import { mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { readIndexManifest, readManifestFile, readManifestList, writeIndexManifest, writeManifestFile, writeManifestList } from '../lib/format/manifest.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { CorruptFileError, MissingReferenceError } from '../lib/errors.ts'
import { removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { manifestKey, snapshotKey } from '../lib/table/paths.ts'
import { Table } from '../lib/handle/table.ts'
import { FileKind, type Snapshot } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { strata } from './helpers/cli-in-process.ts'
import { fileTree } from './helpers/file-tree.ts'
import { type Op, schemaFor } from './helpers/model.ts'

const DAY = 86_400_000
const enc = new TextEncoder()
const dec = new TextDecoder()
const DV = { bucket: '2', 'deletion-vectors.enabled': 'true' }

const put = (ids: number[], a: number): Op[] => ids.flatMap((id) => ['2024-05-01', '2024-05-02'].map((dt) => ({ _kind: '+I' as const, dt, id, a, b: null, c: null })))

async function write(table: Table, ops: Op[], opts: Parameters<typeof writeBatch>[2] = {}): Promise<number> {
  return (await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)), opts)).snapshotId
}

/**
 * Several writes, a full compaction, then updates each followed by a compaction that marks
 * the old rows in deletion vectors: the latest snapshot is a compaction with manifest lists,
 * a manifest, an index manifest, data files and index files that no earlier snapshot has.
 */
async function history(table: Table): Promise<void> {
  for (let a = 1; a <= 4; a++) await write(table, put([a, a + 1, a + 2], a))
  await compactTable(table, { full: true })
  for (const [ids, a] of [[[1, 2], 5], [[3], 6], [[1, 5], 7]] as const) {
    await write(table, put([...ids], a))
    await compactTable(table, { full: false })
  }
  await table.snapshots.settleHints()
}

/** Every object with its size: what "nothing was deleted" is compared on. */
async function listing(store: ObjectStore): Promise<string[]> {
  return (await store.list('')).map((o) => `${o.key}:${o.size}`)
}

async function latestSnapshot(table: Table): Promise<Snapshot> {
  return (await table.snapshots.latest())!
}

async function rewrite(store: ObjectStore, key: string, change: (text: string) => string): Promise<void> {
  const text = dec.decode((await store.get(key))!)
  const changed = change(text)
  expect(changed).not.toBe(text)
  await store.put(key, enc.encode(changed))
}

const EXPIRE = { numRetainedMin: 2, timeRetainedMs: 0 }

/** Every object's bytes: a clean copy of the table to compare a garbled one with. */
async function filesOf(store: ObjectStore): Promise<Map<string, Uint8Array>> {
  const files = new Map<string, Uint8Array>()
  for (const o of await store.list('')) files.set(o.key, (await store.get(o.key))!)
  return files
}

async function copyOf(files: Map<string, Uint8Array>): Promise<MemoryStore> {
  const store = new MemoryStore({ uri: 'memory://copy' })
  for (const [k, v] of files) await store.put(k, v)
  return store
}

/** Keys `run` deletes from a copy of `files`, and what it threw (null when it returned). */
async function deletedBy(files: Map<string, Uint8Array>, run: (store: MemoryStore) => Promise<unknown>): Promise<{ deleted: Set<string>; error: Error | null }> {
  const store = await copyOf(files)
  const error = await run(store).then(() => null, (e: Error) => e)
  const after = new Set((await store.list('')).map((o) => o.key))
  return { deleted: new Set([...files.keys()].filter((k) => !after.has(k))), error }
}

/** Expiration (every snapshot but the latest two may go), then orphan cleanup, a day and more ahead, each on a fresh handle. */
const expire = async (store: ObjectStore) => expireSnapshots(await Table.open(store), { ...EXPIRE, now: Date.now() + DAY })
const cleanup = async (store: ObjectStore) => removeOrphanFiles(await Table.open(store), { now: Date.now() + 2 * DAY })
async function maintain(store: ObjectStore): Promise<void> {
  await expire(store)
  await cleanup(store)
}

/**
 * Orphan cleanup on a fresh handle fails with `pattern` and deletes nothing. Expiration, when
 * it reads the garbled file (`expireReadsIt`), fails the same way and deletes nothing; when it
 * may not read it (a file of the latest snapshot only, which it never needs), it deletes no
 * more than on the clean copy. Returns cleanup's error.
 */
async function expectRefused(store: ObjectStore, clean: Map<string, Uint8Array>, pattern: RegExp, expireReadsIt = true): Promise<Error> {
  const garbled = await filesOf(store)
  const orphans = await deletedBy(garbled, cleanup)
  expect(orphans.error?.message).toMatch(pattern)
  expect([...orphans.deleted]).toEqual([])
  const expired = await deletedBy(garbled, expire)
  if (expireReadsIt) {
    expect(expired.error?.message).toMatch(pattern)
    expect([...expired.deleted]).toEqual([])
  } else {
    const cleanly = await deletedBy(clean, expire)
    for (const k of expired.deleted) expect(cleanly.deleted.has(k), k).toBe(true)
  }
  return orphans.error!
}

/**
 * A table with a history on the memory store, its clean files, its latest snapshot and
 * `kept`, the snapshot expiration keeps first (EXPIRE keeps two), which both expiration and
 * cleanup read whole.
 */
async function garbledTable() {
  const store = new MemoryStore({ uri: 'memory://checks' })
  const table = await Table.create(store, schemaFor('deduplicate', DV))
  await history(table)
  const latest = await latestSnapshot(table)
  const kept = (await table.snapshots.snapshot(latest.id - 1))!
  expect(kept.indexManifest).toBeDefined()
  return { store, table, latest, kept, clean: await filesOf(store) }
}

const dirs: string[] = []
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

describe('a snapshot whose body contradicts its file name', () => {
  it('the probe: `strata expire --remove-orphans` on a table whose latest snapshot says it is the one before fails, naming the file and the id, and deletes nothing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strata-checks-'))
    dirs.push(dir)
    const table = await Table.create(new LocalFileStore(dir), schemaFor('deduplicate', DV))
    await history(table)
    const latest = await latestSnapshot(table)
    const previous = (await table.snapshots.snapshot(latest.id - 1))!
    // the latest snapshot has objects of its own, which cleanup would take for orphans
    expect(latest.commitKind).toBe('COMPACT')
    expect(latest.indexManifest).toBeDefined()
    expect(latest.indexManifest).not.toBe(previous.indexManifest)
    const file = join(dir, 'snapshot', `snapshot-${latest.id}`)
    writeFileSync(file, readFileSync(file, 'utf8').replace(`"id" : ${latest.id},`, `"id" : ${latest.id - 1},`))
    const old = new Date(Date.now() - 2 * DAY)
    for (const f of fileTree(dir)) utimesSync(f.slice(0, f.indexOf(':', dir.length)), old, old)
    const before = fileTree(dir)

    const r = await strata(['expire', dir, '--remove-orphans', '--older-than', '13h'])
    expect(r.code).toBe(8) // a corrupt file (docs/operations.md "Exit codes")
    expect(r.stdout).toBe('')
    expect(r.stderr).toContain(`snapshot/snapshot-${latest.id}`)
    expect(r.stderr).toContain(`"id" is ${latest.id - 1}, expected ${latest.id}`)
    expect(fileTree(dir)).toEqual(before)
  })

  it('fails expiration and orphan cleanup with CorruptFileError before anything is deleted', async () => {
    const { store, latest, clean } = await garbledTable()
    await rewrite(store, snapshotKey(latest.id), (t) => t.replace(`"id" : ${latest.id},`, `"id" : ${latest.id - 1},`))
    const e = await expectRefused(store, clean, new RegExp(`snapshot/snapshot-${latest.id}\\b.*"id" is ${latest.id - 1}, expected ${latest.id}`))
    expect(e).toBeInstanceOf(CorruptFileError)
  })

  it('an expiring snapshot that claims another id fails the run', async () => {
    const { store, latest, clean } = await garbledTable()
    const id = latest.id - 3
    await rewrite(store, snapshotKey(id), (t) => t.replace(`"id" : ${id},`, `"id" : ${id + 7},`))
    await expectRefused(store, clean, new RegExp(`snapshot/snapshot-${id}\\b.*"id" is ${id + 7}, expected ${id}`))
  })

  it('a commit that meets it fails with that error, not with lost races; so does a compaction', async () => {
    const { store, latest } = await garbledTable()
    await rewrite(store, snapshotKey(latest.id), (t) => t.replace(`"id" : ${latest.id},`, `"id" : ${latest.id - 1},`))
    const snapshotFiles = async () => (await listing(store)).filter((k) => k.startsWith('snapshot/snapshot-'))
    const before = await snapshotFiles()
    const err = await write(await Table.open(store), put([9], 9)).then(() => null, (e: Error) => e)
    expect(err).toBeInstanceOf(CorruptFileError)
    expect(err!.message).toContain(`snapshot/snapshot-${latest.id}`)
    expect(err!.message).not.toMatch(/lost races/)
    await expect(compactTable(await Table.open(store), { full: true })).rejects.toThrow(`snapshot/snapshot-${latest.id}`)
    // no snapshot was created past the garbled one
    expect(await snapshotFiles()).toEqual(before)
  }, 60_000)
})

describe('a snapshot that does not parse', () => {
  it('not JSON: the error names the file', async () => {
    const { store, kept, clean } = await garbledTable()
    // a control character inside a string
    await rewrite(store, snapshotKey(kept.id), (t) => t.replace('"commitUser" : "', '"commitUser" : "\u0001'))
    const e = await expectRefused(store, clean, new RegExp(`snapshot/snapshot-${kept.id}\\b.*(JSON|offset)`))
    expect(e).toBeInstanceOf(CorruptFileError)
  })

  it('a required field missing: the error names the file and the field', async () => {
    const { store, latest, clean } = await garbledTable()
    await rewrite(store, snapshotKey(latest.id), (t) => t.replace(/\n {2}"baseManifestList" : "[^"]*",/, ''))
    await expectRefused(store, clean, new RegExp(`snapshot/snapshot-${latest.id}\\b.*"baseManifestList" is missing`))
  })

  it('a field Strata does not know: maintenance refuses it (it may name files)', async () => {
    const { store, kept, clean } = await garbledTable()
    // one flipped bit in the key of the index manifest: its index files would look unreferenced
    await rewrite(store, snapshotKey(kept.id), (t) => t.replace('"indexManifest"', '"indexManifesu"'))
    await expectRefused(store, clean, new RegExp(`snapshot/snapshot-${kept.id}\\b.*"indexManifesu"`))
  })

  it('a schema id with no schema file', async () => {
    const { store, kept, clean } = await garbledTable()
    await rewrite(store, snapshotKey(kept.id), (t) => t.replace('"schemaId" : 0,', '"schemaId" : 7,'))
    await expectRefused(store, clean, /schema\/schema-7\b.*missing/)
  })

  it('a snapshot file past the latest (ids not contiguous) fails orphan cleanup', async () => {
    const { store, latest } = await garbledTable()
    const stray = snapshotKey(latest.id + 5)
    await store.put(stray, (await store.get(snapshotKey(latest.id)))!)
    await rewrite(store, stray, (t) => t.replace(`"id" : ${latest.id},`, `"id" : ${latest.id + 5},`))
    const { deleted, error } = await deletedBy(await filesOf(store), cleanup)
    expect(error?.message).toContain(stray)
    expect([...deleted]).toEqual([])
  })
})

describe('manifests that contradict what names them', () => {
  it('a missing manifest list of a retained snapshot', async () => {
    const { store, kept, clean } = await garbledTable()
    await store.delete(manifestKey(kept.deltaManifestList))
    const e = await expectRefused(store, clean, new RegExp(`manifest/${kept.deltaManifestList}\\b.*missing`))
    expect(e).toBeInstanceOf(MissingReferenceError)
  })

  it('a manifest list that does not decode: the error names it', async () => {
    const { store, kept, clean } = await garbledTable()
    const key = manifestKey(kept.baseManifestList)
    const bytes = (await store.get(key))!
    await store.put(key, bytes.slice(0, bytes.length - 9))
    const e = await expectRefused(store, clean, new RegExp(`manifest/${kept.baseManifestList}\\b`))
    expect(e).toBeInstanceOf(CorruptFileError)
  })

  it('a manifest that does not decode: the error names it', async () => {
    const { store, table, kept, clean } = await garbledTable()
    const [meta] = await table.manifests.readList(kept.baseManifestList)
    const key = manifestKey(meta.fileName)
    const garbled = (await store.get(key))!
    garbled.fill(0x41, garbled.length - 40, garbled.length - 20)
    await store.put(key, garbled)
    const e = await expectRefused(store, clean, new RegExp(`manifest/${meta.fileName}\\b`))
    expect(e).toBeInstanceOf(CorruptFileError)
  })

  it('a manifest that decodes, with one data file name changed: the live file it named is not deleted', async () => {
    const { store, table, kept, clean } = await garbledTable()
    const [meta] = await table.manifests.readList(kept.baseManifestList)
    const key = manifestKey(meta.fileName)
    const entries = readManifestFile((await store.get(key))!)
    const victim = entries.find((e) => e.kind === FileKind.ADD)!
    const name = victim.file.fileName
    // one character of the uuid, so the name keeps its length and its shape
    victim.file.fileName = `data-${name[5] === 'a' ? 'b' : 'a'}${name.slice(6)}`
    await store.put(key, writeManifestFile(entries, 'deflate'))
    // the list's recorded size may or may not still match; either check names the manifest or the name read from it
    await expectRefused(store, clean, new RegExp(`manifest/${meta.fileName}\\b|${victim.file.fileName}`), false)
  })

  it('a manifest with one entry flipped from ADD to DELETE (the counts its list records disagree)', async () => {
    const { store, table, kept, clean } = await garbledTable()
    const [meta] = await table.manifests.readList(kept.baseManifestList)
    const key = manifestKey(meta.fileName)
    const entries = readManifestFile((await store.get(key))!)
    entries.find((e) => e.kind === FileKind.ADD)!.kind = FileKind.DELETE
    await store.put(key, writeManifestFile(entries, 'deflate'))
    await expectRefused(store, clean, new RegExp(`manifest/${meta.fileName}\\b`))
  })

  it('a manifest of another size than its list records', async () => {
    const { store, table, kept, clean } = await garbledTable()
    const [meta] = await table.manifests.readList(kept.baseManifestList)
    const key = manifestKey(meta.fileName)
    await store.put(key, writeManifestFile(readManifestFile((await store.get(key))!), 'none'))
    await expectRefused(store, clean, new RegExp(`manifest/${meta.fileName}\\b.*bytes`), false)
  })

  it('a manifest list naming a manifest by a malformed name', async () => {
    const { store, kept, clean } = await garbledTable()
    const key = manifestKey(kept.deltaManifestList)
    const metas = readManifestList((await store.get(key))!)
    expect(metas.length).toBeGreaterThan(0)
    metas[0].fileName = `../${metas[0].fileName}`
    await store.put(key, writeManifestList(metas, 'deflate'))
    await expectRefused(store, clean, new RegExp(`manifest/${kept.deltaManifestList}\\b`))
  })

  it('an index manifest naming an index file that is not there', async () => {
    const { store, kept, clean } = await garbledTable()
    const key = manifestKey(kept.indexManifest!)
    const entries = readIndexManifest((await store.get(key))!)
    expect(entries.length).toBeGreaterThan(0)
    const victim = entries[entries.length - 1]
    const name = victim.fileName
    victim.fileName = `${name.slice(0, -1)}${name.endsWith('9') ? '8' : '9'}`
    await store.put(key, writeIndexManifest(entries, 'deflate'))
    await expectRefused(store, clean, new RegExp(`${victim.fileName}.*missing|missing.*${victim.fileName}`), false)
  })
})

describe('one random corruption of a snapshot or manifest file', () => {
  // a few histories, each corrupted many times: building a table is the expensive part
  const histories = new Map<number, { files: Map<string, Uint8Array>; deletedClean: Set<string> }>()

  async function cleanHistory(seed: number) {
    const known = histories.get(seed)
    if (known) return known
    const store = new MemoryStore({ uri: `memory://clean-${seed}` })
    const table = await Table.create(store, schemaFor('deduplicate', { ...DV, 'manifest.merge-min-count': '3' }))
    const step = fc.tuple(fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 4 }), fc.constantFrom('none', 'minor', 'full', 'failed'))
    const rounds = fc.sample(fc.array(step, { minLength: 5, maxLength: 9 }), { numRuns: 1, seed })[0]
    let a = 0
    for (const [ids, then] of rounds) {
      await write(table, put(ids, ++a))
      if (then === 'minor') await compactTable(table, { full: false })
      if (then === 'full') await compactTable(table, { full: true })
      // a commit that dies after writing its files: orphans for the cleanup
      if (then === 'failed') await write(table, put(ids, ++a), { beforeSnapshotCreate: () => Promise.reject(new Error('died')) }).catch(() => undefined)
    }
    await table.snapshots.settleHints()
    const files = await filesOf(store)
    const clean = await deletedBy(files, maintain)
    expect(clean.error).toBeNull()
    expect(clean.deleted.size).toBeGreaterThan(0)
    const h = { files, deletedClean: clean.deleted }
    histories.set(seed, h)
    return h
  }

  it('expiration and orphan cleanup delete only what they delete on a clean copy, or fail and delete no more', async () => {
    const outcomes = { failed: 0, ran: 0 }
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 3 }),
        fc.nat(),
        fc.oneof(
          fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), mask: fc.integer({ min: 1, max: 255 }) }),
          fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
          fc.record({ kind: fc.constant('id' as const), by: fc.integer({ min: -3, max: 3 }).filter((n) => n !== 0) }),
        ),
        async (seed, pick, corruption) => {
          const { files, deletedClean } = await cleanHistory(seed)
          const targets = [...files.keys()].filter((k) => (corruption.kind === 'id' ? /^snapshot\/snapshot-\d+$/.test(k) : /^(snapshot\/snapshot-\d+|manifest\/.*)$/.test(k))).sort()
          const key = targets[pick % targets.length]
          const bytes = files.get(key)!.slice()
          let garbled: Uint8Array
          if (corruption.kind === 'flip') {
            bytes[corruption.at % bytes.length] ^= corruption.mask
            garbled = bytes
          } else if (corruption.kind === 'truncate') {
            garbled = bytes.slice(0, corruption.at % bytes.length)
          } else {
            const id = Number(key.slice('snapshot/snapshot-'.length))
            garbled = enc.encode(dec.decode(bytes).replace(`"id" : ${id},`, `"id" : ${Math.max(0, id + corruption.by)},`))
          }
          // expiration may finish before cleanup fails: then it deleted what it deletes on the clean copy
          const { deleted, error } = await deletedBy(new Map([...files, [key, garbled]]), maintain)
          outcomes[error ? 'failed' : 'ran']++
          for (const k of deleted) expect(deletedClean.has(k), `${key} ${JSON.stringify(corruption)}: ${k} deleted (${error?.message ?? 'no error'})`).toBe(true)
        },
      ),
      { numRuns: 300, seed: 20240501 },
    )
    // most corruptions are caught; some change nothing a deletion depends on (a uuid, a count)
    expect(outcomes.failed).toBeGreaterThan(100)
  }, 180_000)
})
