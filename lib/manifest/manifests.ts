// Reading and writing a snapshot's manifests. A snapshot's files are base ∪ delta, folded
// by file identifier: an ADD and a later DELETE of the same (partition, bucket, level, name)
// cancel (core:manifest/FileEntry.java; docs/format.md "Manifest folding by file identity").

import type { ManifestCompression } from '../format/avro.ts'
import {
  readIndexManifest,
  readManifestFile,
  readManifestList,
  writeIndexManifest,
  writeManifestFile,
  writeManifestList,
} from '../format/manifest.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { type IndexManifestEntry, type ManifestEntry, type ManifestFileMeta, type SimpleStats, type Snapshot, FileKind } from '../types.ts'
import { FileNamer, manifestKey } from '../table/paths.ts'

export function hex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')
}

/** Identity of a data file inside a snapshot (the fields FileEntry.Identifier compares). */
export function fileIdentifier(e: ManifestEntry): string {
  return `${hex(e.partition)}|${e.bucket}|${e.file.level}|${e.file.fileName}`
}

/** Identity of a (partition, bucket). */
export function bucketIdentifier(partition: Uint8Array, bucket: number): string {
  return `${hex(partition)}|${bucket}`
}

/** Folds entries in order into the live set of ADDs. */
export function foldEntries(entries: Iterable<ManifestEntry>, into = new Map<string, ManifestEntry>()): Map<string, ManifestEntry> {
  for (const e of entries) {
    const id = fileIdentifier(e)
    if (e.kind === FileKind.ADD) into.set(id, e)
    else into.delete(id)
  }
  return into
}

/**
 * Manifests are immutable, so decoded ones are cached per process (a warm Lambda or a CLI
 * process reads each at most once). The cache is bounded by entry count.
 */
const CACHE_LIMIT_ENTRIES = 2_000_000

export class ManifestIO {
  private readonly lists = new Map<string, ManifestFileMeta[]>()
  private readonly manifests = new Map<string, ManifestEntry[]>()
  private readonly indexManifests = new Map<string, IndexManifestEntry[]>()
  private cachedEntries = 0
  private readonly namer = new FileNamer()

  constructor(
    private readonly store: ObjectStore,
    private readonly compression: ManifestCompression,
  ) {}

  private async load(name: string): Promise<Uint8Array> {
    const bytes = await this.store.get(manifestKey(name))
    if (!bytes) throw new Error(`manifest file ${manifestKey(name)} is missing from ${this.store.uri}`)
    return bytes
  }

  async readList(name: string): Promise<ManifestFileMeta[]> {
    let metas = this.lists.get(name)
    if (!metas) {
      metas = readManifestList(await this.load(name))
      this.lists.set(name, metas)
    }
    return metas
  }

  async readManifest(name: string): Promise<ManifestEntry[]> {
    let entries = this.manifests.get(name)
    if (!entries) {
      entries = readManifestFile(await this.load(name))
      if (this.cachedEntries + entries.length > CACHE_LIMIT_ENTRIES) {
        this.manifests.clear()
        this.cachedEntries = 0
      }
      this.manifests.set(name, entries)
      this.cachedEntries += entries.length
    }
    return entries
  }

  async readIndexManifest(name: string | undefined): Promise<IndexManifestEntry[]> {
    if (!name) return []
    let entries = this.indexManifests.get(name)
    if (!entries) {
      entries = readIndexManifest(await this.load(name))
      this.indexManifests.set(name, entries)
    }
    return entries
  }

  /** Manifest metas of base then delta. */
  async dataManifests(s: Snapshot): Promise<ManifestFileMeta[]> {
    const [base, delta] = await Promise.all([this.readList(s.baseManifestList), this.readList(s.deltaManifestList)])
    return [...base, ...delta]
  }

  /** Live data files of a snapshot, optionally only those of some buckets. */
  async liveEntries(s: Snapshot, filter?: (partition: Uint8Array, bucket: number) => boolean): Promise<ManifestEntry[]> {
    const metas = await this.dataManifests(s)
    const all = await Promise.all(metas.map((m) => this.readManifest(m.fileName)))
    const live = new Map<string, ManifestEntry>()
    for (const entries of all) {
      foldEntries(filter ? entries.filter((e) => filter(e.partition, e.bucket)) : entries, live)
    }
    return [...live.values()]
  }

  /** Only a snapshot's own changes. */
  async deltaEntries(s: Snapshot): Promise<ManifestEntry[]> {
    const metas = await this.readList(s.deltaManifestList)
    return (await Promise.all(metas.map((m) => this.readManifest(m.fileName)))).flat()
  }

  async writeManifest(entries: ManifestEntry[], partitionStats: SimpleStats, schemaId: bigint): Promise<ManifestFileMeta> {
    const fileName = this.namer.next('manifest-')
    const bytes = writeManifestFile(entries, this.compression)
    await this.store.put(manifestKey(fileName), bytes)
    this.manifests.set(fileName, entries)
    this.cachedEntries += entries.length
    let minBucket = Infinity, maxBucket = -Infinity, minLevel = Infinity, maxLevel = -Infinity
    let added = 0n, deleted = 0n
    for (const e of entries) {
      minBucket = Math.min(minBucket, e.bucket)
      maxBucket = Math.max(maxBucket, e.bucket)
      minLevel = Math.min(minLevel, e.file.level)
      maxLevel = Math.max(maxLevel, e.file.level)
      if (e.kind === FileKind.ADD) added++
      else deleted++
    }
    const empty = entries.length === 0
    return {
      fileName,
      fileSize: BigInt(bytes.length),
      numAddedFiles: added,
      numDeletedFiles: deleted,
      partitionStats,
      schemaId,
      minBucket: empty ? null : minBucket,
      maxBucket: empty ? null : maxBucket,
      minLevel: empty ? null : minLevel,
      maxLevel: empty ? null : maxLevel,
    }
  }

  async writeList(metas: ManifestFileMeta[]): Promise<{ name: string; size: number }> {
    const name = this.namer.next('manifest-list-')
    const bytes = writeManifestList(metas, this.compression)
    await this.store.put(manifestKey(name), bytes)
    this.lists.set(name, metas)
    return { name, size: bytes.length }
  }

  async writeIndex(entries: IndexManifestEntry[]): Promise<string> {
    const name = this.namer.next('index-manifest-')
    await this.store.put(manifestKey(name), writeIndexManifest(entries, this.compression))
    this.indexManifests.set(name, entries)
    return name
  }

  async deleteQuietly(name: string): Promise<void> {
    try {
      await this.store.delete(manifestKey(name))
    } catch {
      // an orphan is harmless; orphan cleanup removes it later
    }
  }
}
