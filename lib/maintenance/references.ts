// What objects a snapshot references, as keys relative to the table root. Snapshot
// expiration and orphan cleanup both decide "still needed" from this one function, so they
// can never disagree about a file (Paimon computes it twice: core:operation/FileDeletionBase
// for expiration, core:operation/OrphanFilesClean collectWithoutDataFile for orphans).
//
// Physical files are named by path, not by manifest identity: a level upgrade is a DELETE and
// an ADD of the same file name at another level (core:io/PojoDataFileMeta.java `upgrade`), so
// two manifest identities can name one object.

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { bucketPath } from '../format/partition-path.ts'
import { foldEntries, hex } from '../manifest/manifests.ts'
import { type ManifestEntry, type ManifestFileMeta, type Row, type Snapshot, FileKind } from '../types.ts'
import { INDEX_DIR, MANIFEST_DIR, manifestKey, snapshotKey } from '../table/paths.ts'
import { externalKey, indexFileKey } from '../manifest/bucket-state.ts'
import type { Table } from '../table/table.ts'

/** `core:utils/FileStorePathFactory.java` statsFileFactory: `statistics/<name>`. */
export const STATISTICS_DIR = 'statistics/'

/** A manifest a snapshot names is missing from the store. */
export class MissingReferenceError extends Error {
  override name = 'MissingReferenceError'
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

/** Every object key `snapshot` needs for a read of it (and of its changelog) to succeed. */
export async function snapshotReferences(table: Table, snapshot: Snapshot, onMissing: OnMissing = 'throw', dirs = new BucketDirs(table)): Promise<Set<string>> {
  const refs = new Set<string>()
  await addReferences(table, snapshot, refs, { whole: true, onMissing, dirs, indexManifestsRead: new Set() })
  return refs
}

interface AddOptions {
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
 */
async function addReferences(table: Table, snapshot: Snapshot, refs: Set<string>, o: AddOptions): Promise<void> {
  const owner = `snapshot ${snapshot.id}`
  const list = async (name: string): Promise<ManifestFileMeta[]> => {
    const key = manifestKey(name)
    refs.add(key)
    return (await readOr(table, key, () => table.manifests.readList(name), o.onMissing, owner)) ?? []
  }
  const manifests = async (metas: ManifestFileMeta[]): Promise<ManifestEntry[][]> =>
    Promise.all(
      metas.map(async (m) => {
        const key = manifestKey(m.fileName)
        refs.add(key)
        return (await readOr(table, key, () => table.manifests.readManifest(m.fileName), o.onMissing, owner)) ?? []
      }),
    )

  const [base, delta] = await Promise.all([list(snapshot.baseManifestList), list(snapshot.deltaManifestList)])
  if (o.whole) {
    // data files: live in base ∪ delta, folded in order (core:manifest/FileEntry.java)
    const live = new Map<string, ManifestEntry>()
    for (const entries of await manifests([...base, ...delta])) foldEntries(entries, live)
    for (const e of live.values()) for (const k of dataFileKeys(table, o.dirs, e)) refs.add(k)
  } else {
    // the base manifests hold what the snapshot before held (or a merge of it): named, not read
    for (const m of base) refs.add(manifestKey(m.fileName))
    for (const entries of await manifests(delta)) for (const e of entries) if (e.kind === FileKind.ADD) for (const k of dataFileKeys(table, o.dirs, e)) refs.add(k)
  }

  // changelog files are what the changelog manifests add (Strata writes none; Paimon may)
  if (snapshot.changelogManifestList) {
    for (const entries of await manifests(await list(snapshot.changelogManifestList))) {
      for (const e of entries) if (e.kind === FileKind.ADD) for (const k of dataFileKeys(table, o.dirs, e)) refs.add(k)
    }
  }

  // the index manifest is a full listing of the snapshot's index files (docs/format.md "Avro manifests")
  if (snapshot.indexManifest) {
    const key = manifestKey(snapshot.indexManifest)
    refs.add(key)
    if (!o.indexManifestsRead.has(snapshot.indexManifest)) {
      const entries = await readOr(table, key, () => table.manifests.readIndexManifest(snapshot.indexManifest), o.onMissing, owner)
      for (const e of entries ?? []) {
        if (e.kind !== FileKind.ADD) continue
        let key: string
        try {
          key = indexFileKey(table, e, (p, b) => o.dirs.of(p, b))
        } catch {
          continue // outside the table directory: never listed, never deleted
        }
        refs.add(key)
      }
      if (entries) o.indexManifestsRead.add(snapshot.indexManifest)
    }
  }

  if (snapshot.statistics) refs.add(`${STATISTICS_DIR}${snapshot.statistics}`)
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
    // a snapshot's references go in once it has been read through
    const mine = new Set<string>()
    try {
      await addReferences(table, s, mine, add)
    } catch (err) {
      if (!(err instanceof MissingReferenceError) || o.missingSnapshot === 'throw' || (await exists(table, snapshotKey(s.id)))) throw err
      // expired while it was read: a gap
      add.whole = true
      previous = null
      continue
    }
    for (const k of mine) refs.add(k)
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
