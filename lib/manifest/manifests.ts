// Reading and writing a snapshot's manifests. A snapshot's files are base ∪ delta, folded
// by file identifier: an ADD and a later DELETE of the same (partition, bucket, level, name)
// cancel (core:manifest/FileEntry.java; docs/format.md "Manifest folding by file identity").

import type { ManifestCompression } from '../format/avro.ts'
import {
  readIndexManifest,
  readManifestFile,
  readManifestSequences,
  readManifestList,
  writeIndexManifest,
  writeManifestFile,
  writeManifestList,
} from '../format/manifest.ts'
import pLimit, { type LimitFunction } from 'p-limit'
import type { ObjectStore } from '../store/object-store.ts'
import { CorruptFileError, MissingReferenceError } from '../errors.ts'
import { type IndexManifestEntry, type ManifestEntry, type ManifestFileMeta, type SimpleStats, type Snapshot, type Value, FileKind } from '../types.ts'
import { FileNamer, manifestKey } from '../table/paths.ts'
import type { BucketScope } from './bucket-scope.ts'
import { fileIdentifier, hex } from './identifiers.ts'
import { ByteLru, type CacheStats, DEFAULT_METADATA_CACHE_BYTES, approximateBytes } from '../format/byte-cache.ts'

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
 * Manifests, manifest lists and index manifests are immutable, so decoded ones are cached
 * per table handle (a warm Lambda or a CLI process reads each at most once while it stays
 * in the cache), bounded by the memory the decoded objects take (byte-cache.ts). One this
 * handle deletes leaves the cache with it.
 */
export interface ManifestIOOptions {
  /** bound of the metadata cache, in bytes of memory (default DEFAULT_METADATA_CACHE_BYTES) */
  cacheBytes?: number
  /** buckets per manifest group (manifest.bucket-group-size) */
  bucketGroupSize: number
  /** manifest reads and writes in flight at once (io.max-concurrent-requests) */
  maxConcurrentRequests: number
}

/**
 * How groupedManifests packs a commit that touches many bucket groups: past `over` groups,
 * in the order of the partitions' values.
 */
export interface ManifestPacking {
  over: number
  partitionValues(partition: Uint8Array): readonly Value[]
  compare(a: readonly Value[], b: readonly Value[]): number
}

/** About how large a packed manifest is, at most: a job on one bucket opens one or two of them. */
export const PACKED_MANIFEST_BYTES = 1 << 20
/**
 * At most this many entries to a packed manifest: entries of one-row files compress to a few
 * dozen bytes each, and a job on one bucket decodes the whole manifest (about 2 KB of memory
 * per entry), so a packed manifest is cut by count too.
 */
export const PACKED_MANIFEST_ENTRIES = 4096
/** Entries encoded to estimate a packed manifest's bytes per entry. */
const PACK_SAMPLE_ENTRIES = 256

/** A manifest encoded and described, not written yet. */
export interface PreparedManifest {
  meta: ManifestFileMeta
  bytes: Uint8Array
  entries: ManifestEntry[]
}

export class ManifestIO {
  private readonly cache: ByteLru<unknown>
  private readonly namer = new FileNamer()
  readonly bucketGroupSize: number
  private readonly limit: LimitFunction

  constructor(
    private readonly store: ObjectStore,
    private readonly compression: ManifestCompression,
    opts: ManifestIOOptions,
  ) {
    this.cache = new ByteLru(opts.cacheBytes ?? DEFAULT_METADATA_CACHE_BYTES)
    this.bucketGroupSize = opts.bucketGroupSize
    this.limit = pLimit(opts.maxConcurrentRequests)
  }

  /** `key`'s object, decoded and cached under `cacheKey` (the key itself unless a reduced decoding has its own). */
  private async cached<T>(key: string, decode: (bytes: Uint8Array) => T, cacheKey = key): Promise<T> {
    const hit = this.cache.get(cacheKey) as T | undefined
    if (hit !== undefined) return hit
    const bytes = await this.store.get(key)
    if (!bytes) throw new MissingReferenceError(`manifest file ${key} is missing from ${this.store.uri}`)
    let value: T
    try {
      value = decode(bytes)
    } catch (e) {
      // the decoder's message names no file
      throw new CorruptFileError(key, `${(e as Error).message} (table ${this.store.uri})`, { cause: e })
    }
    this.keep(cacheKey, value)
    return value
  }

  private keep(cacheKey: string, value: unknown): void {
    this.cache.set(cacheKey, value, approximateBytes(value))
  }

  /** What the metadata cache holds now, in entries and bytes of memory. */
  cacheStats(): CacheStats {
    return this.cache.stats()
  }

  readList(name: string): Promise<ManifestFileMeta[]> {
    return this.cached(manifestKey(name), readManifestList)
  }

  readManifest(name: string): Promise<ManifestEntry[]> {
    return this.cached(manifestKey(name), readManifestFile)
  }

  async readIndexManifest(name: string | undefined): Promise<IndexManifestEntry[]> {
    if (!name) return []
    return this.cached(manifestKey(name), readIndexManifest)
  }

  /**
   * Bytes [start, end) of an immutable object outside manifest/ (a deletion-vector index
   * file), through the same cache.
   */
  async readImmutableRange(key: string, start: number, end: number): Promise<Uint8Array> {
    const k = `${key}@${start}-${end}`
    const hit = this.cache.get(k) as Uint8Array | undefined
    if (hit) return hit
    const got = await this.store.getRange(key, start, end)
    // a range cut out of a larger response buffer would keep all of that buffer alive
    const bytes = got.byteLength < got.buffer.byteLength ? got.slice() : got
    this.keep(k, bytes)
    return bytes
  }

  /** Manifest metas of base then delta. */
  async dataManifests(s: Snapshot): Promise<ManifestFileMeta[]> {
    const [base, delta] = await Promise.all([this.readList(s.baseManifestList), this.readList(s.deltaManifestList)])
    return [...base, ...delta]
  }

  /**
   * Live data files of a snapshot, or only those a scope holds: then the manifests whose
   * list records show they cannot hold its buckets are not opened.
   */
  async liveEntries(s: Snapshot, scope?: BucketScope): Promise<ManifestEntry[]> {
    const metas = await this.dataManifests(s)
    const wanted = scope ? metas.filter((m) => scope.mayHold(m)) : metas
    const all = await Promise.all(wanted.map((m) => this.limit(() => this.readManifest(m.fileName))))
    const live = new Map<string, ManifestEntry>()
    for (const entries of all) {
      foldEntries(scope ? entries.filter((e) => scope.holds(e.partition, e.bucket)) : entries, live)
    }
    return [...live.values()]
  }

  /**
   * The highest sequence number any entry of the scope's buckets carries in a snapshot's
   * manifests (-1 when none). ADDs of files deleted since count too: the answer is an upper
   * bound of the live files' numbers, which is what a sequence floor needs. A manifest not
   * decoded yet is read through a projection (partition, bucket, sequence number only).
   */
  async maxSequenceNumber(s: Snapshot, scope: BucketScope): Promise<bigint> {
    const metas = (await this.dataManifests(s)).filter((m) => scope.mayHold(m))
    const maxes = await Promise.all(
      metas.map((m) =>
        this.limit(async () => {
          // a manifest decoded in full already answers; otherwise only the three fields
          const full = this.cache.get(manifestKey(m.fileName)) as ManifestEntry[] | undefined
          const entries = full ?? (await this.cached(manifestKey(m.fileName), readManifestSequences, `${manifestKey(m.fileName)}#sequences`))
          let max = -1n
          for (const e of entries) {
            const seq = 'file' in e ? e.file.maxSequenceNumber : e.maxSequenceNumber
            if (seq > max && scope.holds(e.partition, e.bucket)) max = seq
          }
          return max
        }),
      ),
    )
    return maxes.reduce((a, b) => (b > a ? b : a), -1n)
  }

  /** Only a snapshot's own changes. */
  async deltaEntries(s: Snapshot): Promise<ManifestEntry[]> {
    const metas = await this.readList(s.deltaManifestList)
    return (await Promise.all(metas.map((m) => this.limit(() => this.readManifest(m.fileName))))).flat()
  }

  /**
   * Encodes entries as manifests of one bucket group each (docs/format.md "Manifest
   * layout"), each rolled at `targetFileSize` when given, in group order. Entries of more
   * than `pack.over` groups are packed instead: groups in partition order, several to a
   * manifest of about PACKED_MANIFEST_BYTES, so a commit touching N partitions writes
   * N / (entries per manifest) manifests, not N. Nothing is written yet: a manifest's list
   * record is known before its PUT, so the manifests and the list naming them can be
   * written at once (putManifests).
   */
  groupedManifests(entries: ManifestEntry[], partitionStats: (entries: ManifestEntry[]) => SimpleStats, schemaId: bigint, targetFileSize?: number, pack?: ManifestPacking): PreparedManifest[] {
    const groups = new Map<string, ManifestEntry[]>()
    for (const e of entries) {
      const g = this.groupOf(e.partition, e.bucket)
      const list = groups.get(g)
      if (list) list.push(e)
      else groups.set(g, [e])
    }
    if (pack && groups.size > pack.over) return this.packedManifests([...groups.values()], partitionStats, schemaId, Math.min(targetFileSize ?? PACKED_MANIFEST_BYTES, PACKED_MANIFEST_BYTES), pack)
    const out: PreparedManifest[] = []
    for (const k of [...groups.keys()].sort()) {
      const list = groups.get(k)!
      const whole = this.prepareManifest(list, partitionStats(list), schemaId)
      if (!targetFileSize || whole.bytes.length <= targetFileSize) {
        out.push(whole)
        continue
      }
      // a merged group past the target size is split evenly by entry count
      const per = Math.ceil(list.length / Math.ceil(whole.bytes.length / targetFileSize))
      for (let i = 0; i < list.length; i += per) {
        const chunk = list.slice(i, i + per)
        out.push(this.prepareManifest(chunk, partitionStats(chunk), schemaId))
      }
    }
    return out
  }

  /**
   * Groups packed in partition order (then bucket), cut every `target` bytes as estimated
   * from the encoded size of the first entries, or every PACKED_MANIFEST_ENTRIES entries if
   * sooner: each manifest's partition statistics then
   * cover a narrow range, so a job on one bucket still opens one or two of them.
   */
  private packedManifests(groups: ManifestEntry[][], partitionStats: (entries: ManifestEntry[]) => SimpleStats, schemaId: bigint, target: number, pack: ManifestPacking): PreparedManifest[] {
    const keyed = groups.map((g) => ({ key: pack.partitionValues(g[0].partition), bucket: g[0].bucket, g }))
    keyed.sort((a, b) => pack.compare(a.key, b.key) || a.bucket - b.bucket)
    const sorted: ManifestEntry[] = []
    for (const k of keyed) for (const e of k.g) sorted.push(e)
    const sample = sorted.slice(0, PACK_SAMPLE_ENTRIES)
    const perEntry = writeManifestFile(sample, this.compression).length / sample.length
    const per = Math.max(1, Math.min(PACKED_MANIFEST_ENTRIES, Math.floor(target / perEntry)))
    const out: PreparedManifest[] = []
    for (let i = 0; i < sorted.length; i += per) {
      const chunk = sorted.slice(i, i + per)
      out.push(this.prepareManifest(chunk, partitionStats(chunk), schemaId))
    }
    return out
  }

  /** Writes prepared manifests, at most io.max-concurrent-requests at once. */
  async putManifests(prepared: PreparedManifest[]): Promise<void> {
    await Promise.all(
      prepared.map((p) =>
        this.limit(async () => {
          await this.store.put(manifestKey(p.meta.fileName), p.bytes)
          this.keep(manifestKey(p.meta.fileName), p.entries)
        }),
      ),
    )
  }

  /** groupedManifests, then putManifests. */
  async writeGrouped(entries: ManifestEntry[], partitionStats: (entries: ManifestEntry[]) => SimpleStats, schemaId: bigint, targetFileSize?: number): Promise<ManifestFileMeta[]> {
    const prepared = this.groupedManifests(entries, partitionStats, schemaId, targetFileSize)
    await this.putManifests(prepared)
    return prepared.map((p) => p.meta)
  }

  /** The manifest group of a (partition, bucket): `partition-hex|bucket / bucket-group-size`. */
  groupOf(partition: Uint8Array, bucket: number): string {
    return `${hex(partition)}|${Math.floor(bucket / this.bucketGroupSize)}`
  }

  async writeManifest(entries: ManifestEntry[], partitionStats: SimpleStats, schemaId: bigint): Promise<ManifestFileMeta> {
    const prepared = this.prepareManifest(entries, partitionStats, schemaId)
    await this.putManifests([prepared])
    return prepared.meta
  }

  private prepareManifest(entries: ManifestEntry[], partitionStats: SimpleStats, schemaId: bigint): PreparedManifest {
    const fileName = this.namer.next('manifest-')
    const bytes = writeManifestFile(entries, this.compression)
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
    const meta: ManifestFileMeta = {
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
    return { meta, bytes, entries }
  }

  async writeList(metas: ManifestFileMeta[]): Promise<{ name: string; size: number }> {
    const name = this.namer.next('manifest-list-')
    const bytes = writeManifestList(metas, this.compression)
    await this.store.put(manifestKey(name), bytes)
    this.keep(manifestKey(name), metas)
    return { name, size: bytes.length }
  }

  async writeIndex(entries: IndexManifestEntry[]): Promise<string> {
    const name = this.namer.next('index-manifest-')
    const bytes = writeIndexManifest(entries, this.compression)
    await this.store.put(manifestKey(name), bytes)
    this.keep(manifestKey(name), entries)
    return name
  }

  async deleteQuietly(name: string): Promise<void> {
    const key = manifestKey(name)
    this.cache.delete(key)
    this.cache.delete(`${key}#sequences`)
    try {
      await this.store.delete(key)
    } catch {
      // an orphan is harmless; orphan cleanup removes it later
    }
  }
}
