// What a batch writer keeps of the files it has written until its commit lands: each file's
// manifest entry (its statistics) only until WRITE_AHEAD_FILES of them are held, then they
// go into manifests written ahead of the commit (CommitRequest.writtenAhead), and the writer
// keeps the manifests' list records, the touched buckets it returns and what an abort
// deletes. So a write of N files holds at most WRITE_AHEAD_FILES entries, not N
// (docs/design.md "Manifests written ahead").

import type { DataFileStats } from '../format/data-file-stats.ts'
import { bucketPath } from '../format/partition-path.ts'
import type { WrittenAhead } from '../commit/committer.ts'
import { manifestPacking } from '../commit/commit.ts'
import type { ManifestIO } from '../manifest/manifests.ts'
import { hex } from '../manifest/identifiers.ts'
import { dataFileMeta, partitionStatsOf } from '../table/file-meta.ts'
import type { SchemaView } from '../table/schema.ts'
import { type ManifestEntry, type Row, FileKind } from '../types.ts'

export interface TouchedBucket {
  partition: Uint8Array
  /** partition values in partition-key order */
  partitionValues: Row
  /** `k=v/…/` or '' */
  partitionPath: string
  bucket: number
  /** the bucket's last file of the batch */
  fileName: string
  /** every level-0 file the batch wrote to the bucket, in flush order (one unless the batch outgrew write-buffer-size) */
  fileNames: string[]
  rowCount: number
}

/** A level-0 file a batch wrote, its entry not yet built. */
export interface WrittenFile {
  partition: Uint8Array
  partitionValues: Row
  bucket: number
  dir: string
  fileName: string
  size: number
  stats: DataFileStats
  /** rows of input that went into the file (before the merge) */
  rowsIn: number
  /** a changelog file (`changelog-producer` input: the group's records as given), not a data file */
  changelog?: boolean
}

/**
 * Files whose entries a writer holds before it writes them ahead into manifests: as many as
 * a packed manifest takes (PACKED_MANIFEST_ENTRIES), each about 3 KB of memory with its
 * statistics, so about 12 MB at most, a fifth of the default write-buffer-size.
 */
export const WRITE_AHEAD_FILES = 4096

/** What writing manifests ahead needs of the table's manifests. */
export type AheadManifestIO = Pick<ManifestIO, 'groupedManifests' | 'putManifests' | 'deleteQuietly'>

export class PendingFiles {
  /** files written whose entries are held, in write order */
  readonly held: WrittenFile[] = []
  /** the touched buckets of the files no longer held, in the order their first file was */
  readonly buckets: TouchedBucket[] = []
  readonly #byBucket = new Map<string, TouchedBucket>()
  /** changelog files no longer held, by key (for abort) */
  readonly #changelogKeys: string[] = []
  #rowsWritten = 0
  #files = 0
  readonly #ahead: WrittenAhead = { manifests: [], rowCount: 0, changelogManifests: [], changelogRowCount: 0 }
  /** manifests written ahead or being written (for abort) */
  readonly #aheadNames: string[] = []

  constructor(
    private readonly view: SchemaView,
    /** null: this writer does not write ahead (every entry goes inline with the commit) */
    private readonly io: AheadManifestIO | null,
    private readonly budget: number = WRITE_AHEAD_FILES,
  ) {}

  add(f: WrittenFile): void {
    this.held.push(f)
    this.#files++
  }

  /** Forgets held files (deleted, to be written again). */
  drop(gone: Set<WrittenFile>): void {
    const kept = this.held.filter((f) => !gone.has(f))
    this.#files -= this.held.length - kept.length
    this.held.splice(0, this.held.length, ...kept)
  }

  /** Files written so far. */
  get count(): number {
    return this.#files
  }

  /** Rows in the data files no longer held. */
  get rowsWritten(): number {
    return this.#rowsWritten
  }

  /** Manifests written ahead so far (their list records), or undefined when none. */
  get writtenAhead(): WrittenAhead | undefined {
    return this.#ahead.manifests.length || this.#ahead.changelogManifests.length ? this.#ahead : undefined
  }

  /** Manifest entries written ahead so far. */
  get entriesAhead(): number {
    let n = 0
    for (const m of [...this.#ahead.manifests, ...this.#ahead.changelogManifests]) n += Number(m.numAddedFiles)
    return n
  }

  /** Writes the held entries into manifests once they reach the budget. */
  async writeAheadIfDue(): Promise<void> {
    if (this.io === null || this.held.length < this.budget) return
    const { adds, changelog } = this.take()
    const view = this.view
    const stats = (entries: ManifestEntry[]) => partitionStatsOf(view, entries)
    const schemaId = BigInt(view.schema.id)
    // the commit's own layout: one manifest per bucket group, packed in partition order past PACK_GROUPS_OVER groups
    const data = this.io.groupedManifests(adds, stats, schemaId, undefined, manifestPacking(view))
    const cl = changelog.length ? this.io.groupedManifests(changelog, stats, schemaId, undefined, manifestPacking(view)) : []
    // named before the PUTs, so an abort deletes them whatever the PUTs did
    for (const p of [...data, ...cl]) this.#aheadNames.push(p.meta.fileName)
    await this.io.putManifests([...data, ...cl])
    this.#ahead.manifests.push(...data.map((p) => p.meta))
    this.#ahead.changelogManifests.push(...cl.map((p) => p.meta))
    for (const e of adds) this.#ahead.rowCount += Number(e.file.rowCount)
    for (const e of changelog) this.#ahead.changelogRowCount += Number(e.file.rowCount)
  }

  /** The held files' entries (they are no longer held): data files' and changelog files'. */
  take(): { adds: ManifestEntry[]; changelog: ManifestEntry[] } {
    const view = this.view
    const adds: ManifestEntry[] = []
    const changelog: ManifestEntry[] = []
    for (const f of this.held) {
      const entry: ManifestEntry = { kind: FileKind.ADD, partition: f.partition, bucket: f.bucket, totalBuckets: view.options.bucket, file: dataFileMeta(view, f.fileName, f.size, f.stats, 0, 0) }
      if (f.changelog) {
        changelog.push(entry)
        this.#changelogKeys.push(`${f.dir}/${f.fileName}`)
        continue
      }
      adds.push(entry)
      const id = `${hex(f.partition)}|${f.bucket}`
      let b = this.#byBucket.get(id)
      if (!b) {
        b = { partition: f.partition, partitionValues: f.partitionValues, partitionPath: f.dir.slice(0, f.dir.lastIndexOf('bucket-')), bucket: f.bucket, fileName: f.fileName, fileNames: [], rowCount: 0 }
        this.#byBucket.set(id, b)
        this.buckets.push(b)
      }
      b.fileName = f.fileName
      b.fileNames.push(f.fileName)
      b.rowCount += f.stats.rowCount
      this.#rowsWritten += f.stats.rowCount
    }
    this.held.length = 0
    return { adds, changelog }
  }

  /** Deletes every file and manifest written (best effort), for a batch that will not commit. */
  async abort(store: { delete(key: string): Promise<void> }, deleteAll: (keys: string[], del: (key: string) => Promise<void>) => Promise<unknown>): Promise<void> {
    const view = this.view
    const keys = this.held.splice(0).map((f) => `${f.dir}/${f.fileName}`)
    keys.push(...this.#changelogKeys.splice(0))
    for (const b of this.buckets.splice(0)) {
      const dir = bucketPath(view.partitionFields, b.partitionValues, b.bucket, view.options.partitionDefaultName)
      for (const n of b.fileNames) keys.push(`${dir}/${n}`)
    }
    this.#byBucket.clear()
    const names = this.#aheadNames.splice(0)
    await Promise.all([deleteAll(keys, (k) => store.delete(k).catch(() => undefined)), ...names.map((n) => this.io?.deleteQuietly(n))])
  }
}
