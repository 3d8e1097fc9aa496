// What objects a snapshot references, as keys relative to the table root. Snapshot
// expiration and orphan cleanup both decide "still needed" from this one function, so they
// can never disagree about a file (Paimon computes it twice: core:operation/FileDeletionBase
// for expiration, core:operation/OrphanFilesClean collectWithoutDataFile for orphans).
//
// Physical files are named by path, not by manifest identity: a level upgrade is a DELETE and
// an ADD of the same file name at another level (core:io/PojoDataFileMeta.java `upgrade`), so
// two manifest identities can name one object.
//
// A live set read from a garbled file would delete live objects, so every file read here is
// checked against what names it (addReferences) and what the files say about the objects
// they name is checked against the store before anything is deleted (ExpectedObjects,
// verifyExpected). A failed check throws, naming the file; callers delete nothing then.

import pLimit from 'p-limit'
import { deserializeBinaryRow } from '../format/binary-row.ts'
import { bucketPath } from '../format/partition-path.ts'
import { unknownSnapshotKeys } from '../format/snapshot.ts'
import { hex } from '../manifest/identifiers.ts'
import { foldEntries } from '../manifest/manifests.ts'
import { type ManifestEntry, type ManifestFileMeta, type Row, type Snapshot, FileKind } from '../types.ts'
import { MissingReferenceError, CorruptFileError } from '../errors.ts'
import { INDEX_DIR, MANIFEST_DIR, manifestKey, schemaKey, snapshotKey } from '../table/paths.ts'
import { externalKey, indexFileKey } from '../handle/bucket-state.ts'
import type { ObjectInfo } from '../store/object-store.ts'
import type { Table } from '../handle/table.ts'

/** `core:utils/FileStorePathFactory.java` statsFileFactory: `statistics/<name>`. */
export const STATISTICS_DIR = 'statistics/'

/**
 * What the files read for a run's references say about the objects they name: each must
 * exist, with the size recorded when one is (a manifest list's in its snapshot, a manifest's
 * in its list, a data or index file's in its manifest). Maintenance checks them against the
 * store (verifyExpected) before it deletes anything: a name read wrong from a garbled file
 * names an object that is not there, and leaves the object it should have named looking
 * unreferenced.
 */
export class ExpectedObjects {
  private readonly objects = new Map<string, Expected>()

  /** `owner` names the file that names `key`, for messages. */
  expect(key: string, size: bigint | number | null | undefined, owner: string, indexFile = false): void {
    const want = size === null || size === undefined ? null : Number(size)
    const had = this.objects.get(key)
    if (!had) this.objects.set(key, { size: want, owner, indexFile })
    else if (had.size === null) this.objects.set(key, { size: want, owner: want === null ? had.owner : owner, indexFile: had.indexFile || indexFile })
    else if (want !== null && want !== had.size) {
      throw new CorruptFileError(key, `${had.owner} records ${had.size} bytes, ${owner} ${want}`)
    }
  }

  /** Adds `other`'s expectations (a snapshot's, once it has been read through). */
  merge(other: ExpectedObjects): void {
    for (const [key, { size, owner, indexFile }] of other.objects) this.expect(key, size, owner, indexFile)
  }

  entries(): IterableIterator<[string, Expected]> {
    return this.objects.entries()
  }
}

export interface Expected {
  /** bytes, when a file that names the object records them */
  size: number | null
  /** the file that names it, for messages */
  owner: string
  /** an index file, named by an index manifest (a full listing many snapshots share) */
  indexFile: boolean
}

/** Keys in one directory past which verifyExpected lists the directory rather than asking for each. */
const LIST_DIRECTORY_OVER = 8

/**
 * Checks every object `expected` names (those `only` accepts) against the store: present,
 * and of the recorded size when there is one. `listing` (objects listed earlier) answers
 * first; what it lacks is asked for, a HEAD per key, or a LIST of a directory holding more
 * than LIST_DIRECTORY_OVER of them. Throws, for the first object in key order that fails,
 * MissingReferenceError or CorruptFileError naming it and the file that names it.
 */
export async function verifyExpected(table: Table, expected: ExpectedObjects, opts: { listing?: ReadonlyMap<string, ObjectInfo>; only?: (key: string, want: Expected) => boolean } = {}): Promise<void> {
  const found = new Map<string, ObjectInfo | null>()
  const byDir = new Map<string, string[]>()
  for (const [key, want] of expected.entries()) {
    if (opts.only && !opts.only(key, want)) continue
    const listed = opts.listing?.get(key)
    if (listed) {
      found.set(key, listed)
      continue
    }
    const dir = key.slice(0, key.lastIndexOf('/') + 1)
    const keys = byDir.get(dir)
    if (keys) keys.push(key)
    else byDir.set(dir, [key])
  }
  const limit = pLimit(16)
  const store = table.store
  await Promise.all(
    [...byDir].flatMap(([dir, keys]) =>
      dir !== '' && keys.length > LIST_DIRECTORY_OVER
        ? [
            limit(async () => {
              const listed = new Map((await store.list(dir)).map((o) => [o.key, o]))
              for (const k of keys) found.set(k, listed.get(k) ?? null)
            }),
          ]
        : keys.map((k) => limit(async () => void found.set(k, await store.head(k)))),
    ),
  )
  const failures: Error[] = []
  for (const [key, want] of [...expected.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (!found.has(key)) continue
    const info = found.get(key)
    if (!info) failures.push(new MissingReferenceError(`${want.owner} references ${key}, which is missing from ${table.uri}`))
    else if (want.size !== null && info.size !== want.size) {
      failures.push(new CorruptFileError(key, `${info.size} bytes, but ${want.owner} records ${want.size} (table ${table.uri})`))
    }
  }
  if (failures.length === 0) return
  const first = failures[0]
  if (failures.length > 1) first.message += `; ${failures.length - 1} other object(s) fail the same check`
  throw first
}

/** A file name as a manifest or manifest list may hold one: one path segment, printable. */
function checkName(name: unknown, file: string, what: string, uri: string): void {
  if (typeof name !== 'string' || name === '' || name === '.' || name === '..' || /[/\\\u0000-\u001f\u007f]/.test(name)) {
    throw new CorruptFileError(file, `${what} is ${JSON.stringify(name)}, expected a file name (table ${uri})`)
  }
}

/** Entries of manifest `key` checked against the list record `meta` that names it. */
function checkManifest(table: Table, key: string, meta: ManifestFileMeta, entries: ManifestEntry[]): void {
  let added = 0n
  let deleted = 0n
  entries.forEach((e, i) => {
    if (e.kind === FileKind.ADD) added++
    else if (e.kind === FileKind.DELETE) deleted++
    else throw new CorruptFileError(key, `entry #${i} has kind ${String(e.kind)}, expected ADD (0) or DELETE (1) (table ${table.uri})`)
    checkName(e.file.fileName, key, `entry #${i}'s file name`, table.uri)
    e.file.extraFiles.forEach((x, j) => checkName(x, key, `entry #${i}'s extra file #${j}`, table.uri))
  })
  if (added !== meta.numAddedFiles || deleted !== meta.numDeletedFiles) {
    throw new CorruptFileError(key, `${added} ADD and ${deleted} DELETE entries, but its manifest list records ${meta.numAddedFiles} and ${meta.numDeletedFiles} (table ${table.uri})`)
  }
}

/**
 * `throw`: a missing manifest is an error (the snapshot is still needed, so it is corrupt).
 * `skip`: contribute what can still be read (the snapshot is being expired, or was expired
 * between listing and reading it).
 */
export type OnMissing = 'throw' | 'skip'

/** Decodes partitions to bucket directories once per distinct partition. */
export class BucketDirs {
  private readonly partitions = new Map<string, Row>()

  constructor(private readonly table: Table) {}

  of(partition: Uint8Array, bucket: number): string {
    const view = this.table.view
    const k = hex(partition)
    let values = this.partitions.get(k)
    if (!values) {
      values = deserializeBinaryRow(
        view.partitionFields.map((f) => f.type),
        partition,
      )
      this.partitions.set(k, values)
    }
    return bucketPath(view.partitionFields, values, bucket, view.options.partitionDefaultName)
  }
}

/**
 * Keys of a data file and its `_EXTRA_FILES` sidecars (same directory, docs/format.md
 * "Directory and file names").
 * A file with `_EXTERNAL_PATH` is referenced by its key when that path lies inside the table
 * directory; outside it is neither referenced nor ever deleted here.
 */
export function dataFileKeys(table: Table, dirs: BucketDirs, e: ManifestEntry): string[] {
  if (e.file.externalPath) {
    // inside the table directory it is a key like any other; outside, never listed, never deleted
    let key: string
    try {
      key = externalKey(table, e.file.externalPath, `data file ${e.file.fileName}`)
    } catch {
      return []
    }
    const dir = key.slice(0, key.lastIndexOf('/') + 1)
    return [key, ...e.file.extraFiles.map((x) => `${dir}${x}`)]
  }
  const dir = dirs.of(e.partition, e.bucket)
  return [`${dir}/${e.file.fileName}`, ...e.file.extraFiles.map((x) => `${dir}/${x}`)]
}

async function exists(table: Table, key: string): Promise<boolean> {
  return (await table.store.head(key)) !== null
}

/** Runs `read`; when it fails because `key` is absent, applies `onMissing`. */
async function readOr<T>(table: Table, key: string, read: () => Promise<T>, onMissing: OnMissing, owner: string): Promise<T | null> {
  try {
    return await read()
  } catch (err) {
    if (await exists(table, key)) throw err
    if (onMissing === 'skip') return null
    throw new MissingReferenceError(`${owner} references ${key}, which is missing from ${table.uri}`)
  }
}

/**
 * The ids of the existing snapshots, `earliest..latest` (0..0 when none). The EARLIEST hint
 * and a listing may both lag, so the result is probed against the store in both directions:
 * starting too high would leave older snapshots whose files a cleanup then deletes.
 */
export async function snapshotRange(table: Table): Promise<{ earliest: number; latest: number }> {
  const latest = await table.snapshots.latestId()
  if (latest === 0) return { earliest: 0, latest: 0 }
  const present = (id: number) => table.snapshots.exists(id)
  let earliest = Math.max(1, Math.min(await table.snapshots.earliestId(), latest))
  while (earliest < latest && !(await present(earliest))) earliest++
  while (earliest > 1 && (await present(earliest - 1))) earliest--
  return { earliest, latest }
}

/** Where the references of one snapshot are checked (addReferences). */
export interface CheckOptions {
  /** collects what the files read say about the objects they name, for verifyExpected */
  expected?: ExpectedObjects
  /** the file the snapshot was read from, for messages (default `snapshot/snapshot-<id>`; a tag's is its tag file) */
  file?: string
}

/** Every object key `snapshot` needs for a read of it (and of its changelog) to succeed. */
export async function snapshotReferences(table: Table, snapshot: Snapshot, onMissing: OnMissing = 'throw', dirs = new BucketDirs(table), check: CheckOptions = {}): Promise<Set<string>> {
  const refs = new Set<string>()
  await addReferences(table, snapshot, refs, { whole: true, onMissing, dirs, indexManifestsRead: new Set(), ...check })
  return refs
}

interface AddOptions extends CheckOptions {
  /** every data file live in the snapshot; else only those its delta adds */
  whole: boolean
  onMissing: OnMissing
  dirs: BucketDirs
  /** index manifests already expanded into `refs` (one is shared by every snapshot until the index changes) */
  indexManifestsRead: Set<string>
}

/**
 * Adds `snapshot`'s references to `refs`: its manifest lists, every manifest they name, its
 * index manifest and the index files it lists, its statistics, the data files its changelog
 * adds, and either every data file live in it (`whole`) or only those its delta adds.
 *
 * Every file read is checked against what names it, and a failed check throws, naming the
 * file: a snapshot with a field Strata does not know (it may name files), a manifest list
 * naming something that is not a file name, a manifest whose entries are not what its list
 * record counts, an entry's file name that is not one. What the files say about the objects
 * they name (present, of this size; the snapshot's schema file present) goes to
 * `o.expected` for verifyExpected.
 */
async function addReferences(table: Table, snapshot: Snapshot, refs: Set<string>, o: AddOptions): Promise<void> {
  const owner = `snapshot ${snapshot.id}`
  const file = o.file ?? snapshotKey(snapshot.id)
  const uri = table.uri
  const expect = (key: string, size: bigint | number | null | undefined, by: string) => o.expected?.expect(key, size, by)
  const unknown = unknownSnapshotKeys(snapshot)
  if (unknown.length) {
    throw new CorruptFileError(file, `field(s) ${unknown.map((k) => JSON.stringify(k)).join(', ')} not known to Strata: they may name files, which maintenance would then take for unreferenced (table ${uri})`)
  }
  expect(schemaKey(snapshot.schemaId), null, owner)
  const list = async (name: string, size: number | undefined): Promise<ManifestFileMeta[]> => {
    checkName(name, file, 'a manifest list name', uri)
    const key = manifestKey(name)
    refs.add(key)
    expect(key, size, `${owner} (${file})`)
    const metas = (await readOr(table, key, () => table.manifests.readList(name), o.onMissing, owner)) ?? []
    metas.forEach((m, i) => checkName(m.fileName, key, `entry #${i}'s manifest name`, uri))
    return metas
  }
  const manifests = async (metas: ManifestFileMeta[]): Promise<ManifestEntry[][]> =>
    Promise.all(
      metas.map(async (m) => {
        const key = manifestKey(m.fileName)
        refs.add(key)
        expect(key, m.fileSize, `the manifest list naming it in ${owner}`)
        const entries = await readOr(table, key, () => table.manifests.readManifest(m.fileName), o.onMissing, owner)
        if (!entries) return []
        checkManifest(table, key, m, entries)
        return entries
      }),
    )
  const addData = (e: ManifestEntry, by: string) => {
    const [main, ...extras] = dataFileKeys(table, o.dirs, e)
    if (main === undefined) return
    refs.add(main)
    expect(main, e.file.fileSize, by)
    for (const k of extras) {
      refs.add(k)
      expect(k, null, by)
    }
  }

  const [base, delta] = await Promise.all([list(snapshot.baseManifestList, snapshot.baseManifestListSize), list(snapshot.deltaManifestList, snapshot.deltaManifestListSize)])
  if (o.whole) {
    // data files: live in base ∪ delta, folded in order (core:manifest/FileEntry.java)
    const metas = [...base, ...delta]
    const read = await manifests(metas)
    const live = new Map<string, ManifestEntry>()
    // which manifest each live entry came from, for messages
    const from = new Map<ManifestEntry, string>()
    read.forEach((entries, i) => {
      foldEntries(entries, live)
      if (o.expected) for (const e of entries) from.set(e, manifestKey(metas[i].fileName))
    })
    for (const e of live.values()) addData(e, from.get(e) ?? owner)
  } else {
    // the base manifests hold what the snapshot before held (or a merge of it): named, not read
    for (const m of base) {
      refs.add(manifestKey(m.fileName))
      expect(manifestKey(m.fileName), m.fileSize, `the manifest list naming it in ${owner}`)
    }
    const read = await manifests(delta)
    read.forEach((entries, i) => {
      for (const e of entries) if (e.kind === FileKind.ADD) addData(e, manifestKey(delta[i].fileName))
    })
  }

  // changelog files are what the changelog manifests add (Strata writes none; Paimon may)
  if (snapshot.changelogManifestList) {
    const metas = await list(snapshot.changelogManifestList, snapshot.changelogManifestListSize)
    const read = await manifests(metas)
    read.forEach((entries, i) => {
      for (const e of entries) if (e.kind === FileKind.ADD) addData(e, manifestKey(metas[i].fileName))
    })
  }

  // the index manifest is a full listing of the snapshot's index files (docs/format.md
  // "Avro manifests"). Last: once it is expanded, later snapshots sharing it skip it, so
  // nothing after it may fail.
  if (snapshot.indexManifest) {
    checkName(snapshot.indexManifest, file, 'the index manifest name', uri)
    const key = manifestKey(snapshot.indexManifest)
    refs.add(key)
    expect(key, null, `${owner} (${file})`)
    if (!o.indexManifestsRead.has(snapshot.indexManifest)) {
      const entries = await readOr(table, key, () => table.manifests.readIndexManifest(snapshot.indexManifest), o.onMissing, owner)
      const found: [string, bigint | null][] = []
      entries?.forEach((e, i) => {
        checkName(e.fileName, key, `entry #${i}'s file name`, uri)
        if (e.kind !== FileKind.ADD && e.kind !== FileKind.DELETE) throw new CorruptFileError(key, `entry #${i} has kind ${String(e.kind)}, expected ADD (0) or DELETE (1) (table ${uri})`)
        let at: string
        try {
          at = indexFileKey(table, e, (p, b) => o.dirs.of(p, b))
        } catch {
          return // outside the table directory: never listed, never deleted
        }
        // readers take every entry (lib/handle/bucket-state.ts), so every one is kept; an
        // ADD's file must be there as recorded
        found.push([at, e.kind === FileKind.ADD ? e.fileSize : null])
      })
      for (const [at, size] of found) {
        refs.add(at)
        if (size !== null) o.expected?.expect(at, size, key, true)
      }
      if (entries) o.indexManifestsRead.add(snapshot.indexManifest)
    }
  }

  if (snapshot.statistics) {
    refs.add(`${STATISTICS_DIR}${snapshot.statistics}`)
    expect(`${STATISTICS_DIR}${snapshot.statistics}`, null, owner)
  }
}

/** Union of the references of several snapshots. */
export async function referencesOf(table: Table, snapshots: Iterable<Snapshot>, onMissing: OnMissing = 'throw'): Promise<Set<string>> {
  const dirs = new BucketDirs(table)
  const all = new Set<string>()
  for (const s of snapshots) for (const k of await snapshotReferences(table, s, onMissing, dirs)) all.add(k)
  return all
}

export interface RangeOptions {
  /** a manifest missing while its snapshot exists (see OnMissing) */
  onMissing: OnMissing
  /**
   * a snapshot of the range missing, or gone while it is read: `throw`, or `skip` (an
   * expiration racing the caller; the walk takes the next snapshot whole)
   */
  missingSnapshot: 'throw' | 'skip'
  dirs?: BucketDirs
  /** adds to this set rather than a new one */
  into?: Set<string>
  /** collects what the files read say about the objects they name (snapshots read through only) */
  expected?: ExpectedObjects
  /** told of each snapshot the walk found missing, or gone while it was read */
  onGap?: (id: number) => void
}

/**
 * The union of the references of snapshots in id order (as referencesOf over them), read
 * without folding each snapshot's live files: the data files live in snapshot s are those
 * live in s − 1 plus those its delta adds, less those it deletes, so the data files live in
 * any snapshot of an unbroken run of ids are those live in its first (read whole) plus
 * those the later deltas add. A gap in the ids breaks the run: the next snapshot is read
 * whole. The cost is one whole snapshot per run and, per later snapshot, its two manifest
 * lists and its delta manifests, where referencesOf reads and folds every manifest of
 * every snapshot. `snapshots` yields null for a snapshot found missing (a gap).
 */
export async function runReferences(table: Table, snapshots: AsyncIterable<Snapshot | null> | Iterable<Snapshot | null>, o: RangeOptions): Promise<Set<string>> {
  const refs = o.into ?? new Set<string>()
  const add: AddOptions = { whole: true, onMissing: o.onMissing, dirs: o.dirs ?? new BucketDirs(table), indexManifestsRead: new Set() }
  let previous: number | null = null
  for await (const s of snapshots) {
    if (s === null || (previous !== null && s.id !== previous + 1)) add.whole = true
    previous = s?.id ?? null
    if (!s) continue
    // a snapshot's references (and what it says of them) go in once it has been read through
    const mine = new Set<string>()
    add.expected = o.expected && new ExpectedObjects()
    try {
      await addReferences(table, s, mine, add)
    } catch (err) {
      if (!(err instanceof MissingReferenceError) || o.missingSnapshot === 'throw' || (await exists(table, snapshotKey(s.id)))) throw err
      // expired while it was read: a gap
      o.onGap?.(s.id)
      add.whole = true
      previous = null
      continue
    }
    for (const k of mine) refs.add(k)
    if (add.expected) o.expected!.merge(add.expected)
    add.whole = false
  }
  return refs
}

/** runReferences over the snapshots `from..to` that exist now (see RangeOptions for a missing one). */
export async function rangeReferences(table: Table, from: number, to: number, o: RangeOptions): Promise<Set<string>> {
  async function* existing(): AsyncGenerator<Snapshot | null> {
    for (let id = from; id <= to; id++) {
      const s = await table.snapshots.existing(id)
      if (!s && o.missingSnapshot === 'throw') throw new MissingReferenceError(`snapshot ${id} is missing from ${table.uri} although ${from}..${to} should all exist`)
      if (!s) o.onGap?.(id)
      yield s
    }
  }
  return runReferences(table, existing(), o)
}

/** True for keys in the directories whose files snapshots reference (manifest, index, data). */
export function isSnapshotManagedKey(table: Table, key: string): boolean {
  if (key.startsWith(MANIFEST_DIR) || key.startsWith(INDEX_DIR) || key.startsWith(STATISTICS_DIR)) return true
  // a data directory: one `k=v` segment per partition key, then `bucket-N`, then the file
  // (core:operation/OrphanFilesClean.java listPaimonFileDirs)
  const segments = key.split('/')
  const depth = table.view.partitionFields.length
  if (segments.length !== depth + 2) return false
  for (let i = 0; i < depth; i++) if (!segments[i].includes('=')) return false
  return segments[depth].startsWith('bucket-')
}
