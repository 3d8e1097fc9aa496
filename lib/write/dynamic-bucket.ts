// Dynamic bucket mode (`bucket` -1): a key's bucket is where the partition's HASH index puts
// its hash, and a key the index does not hold goes to the first bucket under
// `dynamic-bucket.target-row-num`, else to a new bucket (Paimon's HashBucketAssigner and
// PartitionIndex). A batch assigns against the HASH index of the snapshot it read; its commit
// carries the partitions' new HASH files and the index it read, and lands only while that is
// still the partition's index (lib/commit/conflicts.ts checkPartitionIndex). Why that keeps
// every key in one bucket, and what a writer does when it does not land: docs/design.md
// "Dynamic buckets".

import { HASH_INDEX, readHashIndex, writeHashIndex } from '../format/hash-index.ts'
import { ByteLru, DEFAULT_METADATA_CACHE_BYTES } from '../format/byte-cache.ts'
import { transientRowBytes, writeBinaryRowTransient } from '../format/binary-row.ts'
import { murmurHashRange } from '../format/murmur.ts'
import { CorruptFileError, StrataInputError } from '../errors.ts'
import { type DataType, type IndexManifestEntry, type Snapshot, type Value, FileKind } from '../types.ts'
import type { ExpectedPartitionIndex, IndexReplacement } from '../commit/committer.ts'
import { indexFileKey } from '../handle/bucket-state.ts'
import { hex } from '../manifest/identifiers.ts'
import { DYNAMIC_UNBOUNDED_MAX_BUCKETS } from '../table/options.ts'
import type { SchemaView } from '../table/schema.ts'

/**
 * Decoded HASH files this process read, by table and key: a file never changes (a bucket's
 * new keys go to a new file), so a warm writer reads again only the files replaced since its
 * last batch. Bounded like a table handle's metadata cache.
 */
const HASH_FILES = new ByteLru<Int32Array>(DEFAULT_METADATA_CACHE_BYTES)

/** `BinaryRow.hashCode()` of a key's bucket-key fields (the trimmed primary key in dynamic mode). */
export function keyHash(types: DataType[], values: Value[]): number {
  const size = writeBinaryRowTransient(types, values)
  return murmurHashRange(transientRowBytes(), 0, size)
}

/** What assignment reads: where the table is, its layout, the index manifest and the index files. */
export interface HashIndexSource {
  readonly uri: string
  readonly view: Pick<SchemaView, 'partitionFields' | 'options'>
  readonly store: { get?(key: string): Promise<Uint8Array | null> }
  readonly manifests: { readIndexManifest?(name: string | undefined): Promise<IndexManifestEntry[]> }
}

/** int32 hash → bucket, open addressing: a bucket of two million keys costs ~12 bytes a key, not a Map's ~80. */
class HashToBucket {
  #keys = new Int32Array(16)
  #buckets = new Int32Array(16).fill(-1)
  #size = 0

  get(hash: number): number {
    const mask = this.#keys.length - 1
    for (let i = Math.imul(hash, 0x9e3779b1) & mask; ; i = (i + 1) & mask) {
      const b = this.#buckets[i]
      if (b === -1) return -1
      if (this.#keys[i] === hash) return b
    }
  }

  set(hash: number, bucket: number): void {
    if ((this.#size + 1) * 2 > this.#keys.length) this.#grow()
    const mask = this.#keys.length - 1
    for (let i = Math.imul(hash, 0x9e3779b1) & mask; ; i = (i + 1) & mask) {
      if (this.#buckets[i] === -1) {
        this.#keys[i] = hash
        this.#buckets[i] = bucket
        this.#size++
        return
      }
      if (this.#keys[i] === hash) return
    }
  }

  #grow(): void {
    const keys = this.#keys
    const buckets = this.#buckets
    this.#keys = new Int32Array(keys.length * 2)
    this.#buckets = new Int32Array(keys.length * 2).fill(-1)
    this.#size = 0
    for (let i = 0; i < keys.length; i++) if (buckets[i] !== -1) this.set(keys[i], buckets[i])
  }
}

/** A bucket's HASH file at the base snapshot. */
interface BaseBucket {
  entry: IndexManifestEntry
  hashes: Int32Array
}

/** One partition's assignment (Paimon's PartitionIndex with one assigner): the base index and what the batch adds. */
export class PartitionAssignment {
  readonly #map = new HashToBucket()
  /** rows a bucket holds (hashes), base and new */
  readonly #counts = new Map<number, number>()
  /** buckets below the target, ascending (Paimon walks its HashMap of small ints in that order) */
  #open: number[]
  /** hashes this batch gave each bucket */
  readonly added = new Map<number, number[]>()

  constructor(
    readonly partition: Uint8Array,
    readonly base: Map<number, BaseBucket>,
    private readonly targetRowNum: number,
    private readonly maxBuckets: number,
  ) {
    for (const [bucket, b] of base) {
      // a hash in two files (a foreign writer's bug) keeps its first bucket, as Paimon's map does
      for (const h of b.hashes) if (this.#map.get(h) === -1) this.#map.set(h, bucket)
      this.#counts.set(bucket, b.hashes.length)
    }
    this.#open = [...this.#counts.keys()].sort((a, b) => a - b)
  }

  /** The key's bucket, or -1 when the partition's index does not hold its hash. */
  bucketOf(hash: number): number {
    return this.#map.get(hash)
  }

  /** The bucket of a key hash, assigning a new hash as Paimon's PartitionIndex.assign does (with one assigner). */
  assign(hash: number): number {
    const known = this.#map.get(hash)
    if (known !== -1) return known
    while (this.#open.length > 0) {
      const bucket = this.#open[0]
      if (this.#counts.get(bucket)! < this.targetRowNum) return this.#give(hash, bucket)
      this.#open.shift()
    }
    const limit = (this.maxBuckets === -1 ? DYNAMIC_UNBOUNDED_MAX_BUCKETS : this.maxBuckets) - 1
    for (let i = 0; i <= limit; i++) {
      if (this.#counts.has(i)) continue
      this.#counts.set(i, 0)
      this.#open.push(i)
      this.#open.sort((a, b) => a - b)
      return this.#give(hash, i)
    }
    if (this.maxBuckets === -1) throw new StrataInputError(`dynamic-bucket.target-row-num: partition ${hex(this.partition) || '(none)'} would need more than ${DYNAMIC_UNBOUNDED_MAX_BUCKETS} buckets of ${this.targetRowNum} rows; expected a larger target row number`)
    // every bucket is full and no more may be made: Paimon picks one at random; the hash
    // picks here, so a batch assigned again from the same state assigns alike
    const all = [...this.#counts.keys()].sort((a, b) => a - b)
    return this.#give(hash, all[Math.abs(hash % all.length)])
  }

  #give(hash: number, bucket: number): number {
    this.#map.set(hash, bucket)
    this.#counts.set(bucket, this.#counts.get(bucket)! + 1)
    let list = this.added.get(bucket)
    if (!list) this.added.set(bucket, (list = []))
    list.push(hash)
    return bucket
  }

  /** The partition's HASH index as the batch read it: what its commit expects to find. */
  expectation(): ExpectedPartitionIndex {
    return { partition: this.partition, indexType: HASH_INDEX, files: [...this.base].map(([bucket, b]) => ({ bucket, fileName: b.entry.fileName })) }
  }
}

/** The new HASH files of a batch and what its commit must carry for them. */
export interface HashIndexChanges {
  replacements: IndexReplacement[]
  expectations: ExpectedPartitionIndex[]
}

/**
 * A batch's assignment: each partition's HASH index is read from the base snapshot the first
 * time the batch meets the partition (every bucket's file of the partition, as Paimon's
 * PartitionIndex.loadIndex), then keys are assigned in the order they arrive.
 */
export class DynamicBucketAssigner {
  readonly #partitions = new Map<string, PartitionAssignment>()
  readonly #loading = new Map<string, Promise<PartitionAssignment>>()
  /** the base snapshot's HASH entries by partition (hex), read and grouped once per batch */
  #byPartition: Promise<Map<string, IndexManifestEntry[]>> | null = null
  readonly #targetRowNum: number
  readonly #maxBuckets: number

  constructor(
    private readonly source: HashIndexSource,
    private readonly base: Promise<Snapshot | null>,
  ) {
    this.#targetRowNum = source.view.options.dynamicBucketTargetRowNum
    this.#maxBuckets = source.view.options.dynamicBucketMaxBuckets
  }

  /** The partition's assignment once its index has been read (undefined before). */
  loaded(partition: Uint8Array): PartitionAssignment | undefined {
    return this.#partitions.get(hex(partition))
  }

  /** Reads the partition's index (once) and makes it `loaded`. */
  load(partition: Uint8Array): Promise<PartitionAssignment> {
    const id = hex(partition)
    const done = this.#partitions.get(id)
    if (done) return Promise.resolve(done)
    let p = this.#loading.get(id)
    if (!p) {
      p = this.#read(partition).then((a) => {
        this.#partitions.set(id, a)
        return a
      })
      this.#loading.set(id, p)
    }
    return p
  }

  async #read(partition: Uint8Array): Promise<PartitionAssignment> {
    const { store, manifests } = this.source
    if (!store.get || !manifests.readIndexManifest) throw new Error('dynamic bucket mode: the write context cannot read the HASH index (it needs store.get and manifests.readIndexManifest)')
    const get = store.get.bind(store)
    const readIndexManifest = manifests.readIndexManifest.bind(manifests)
    this.#byPartition ??= this.base.then(async (s) => {
      const byPartition = new Map<string, IndexManifestEntry[]>()
      for (const e of s?.indexManifest ? await readIndexManifest(s.indexManifest) : []) {
        if (e.indexType !== HASH_INDEX) continue
        const id = hex(e.partition)
        const list = byPartition.get(id)
        if (list) list.push(e)
        else byPartition.set(id, [e])
      }
      return byPartition
    })
    const mine = (await this.#byPartition).get(hex(partition)) ?? []
    const base = new Map<number, BaseBucket>()
    await Promise.all(
      mine.map(async (entry) => {
        const key = indexFileKey(this.source, entry)
        const cacheKey = `${this.source.uri}|${key}`
        let hashes = HASH_FILES.get(cacheKey)
        if (!hashes) {
          const bytes = await get(key)
          if (!bytes) throw new CorruptFileError(key, `HASH index file of bucket ${entry.bucket} is missing`)
          try {
            hashes = readHashIndex(bytes)
          } catch (e) {
            throw new CorruptFileError(key, (e as Error).message, { cause: e })
          }
          HASH_FILES.set(cacheKey, hashes, hashes.byteLength)
        }
        if (base.has(entry.bucket)) throw new CorruptFileError(key, `a second HASH index file for bucket ${entry.bucket} (Paimon keeps one per bucket)`)
        base.set(entry.bucket, { entry, hashes })
      }),
    )
    return new PartitionAssignment(partition, base, this.#targetRowNum, this.#maxBuckets)
  }

  /**
   * Writes one new HASH file per bucket given new keys (its base hashes, then the new ones)
   * through `put`, named by `nameOf`; returns the replacements and the expectations of the
   * partitions that changed. Partitions the batch only updated known keys in expect nothing.
   */
  async finish(put: (key: string, bytes: Uint8Array) => Promise<void>, nameOf: () => string): Promise<HashIndexChanges> {
    const replacements: IndexReplacement[] = []
    const expectations: ExpectedPartitionIndex[] = []
    const writes: Promise<void>[] = []
    for (const a of this.#partitions.values()) {
      if (a.added.size === 0) continue
      expectations.push(a.expectation())
      for (const [bucket, added] of [...a.added].sort(([x], [y]) => x - y)) {
        const old = a.base.get(bucket)?.hashes ?? new Int32Array(0)
        const all = new Int32Array(old.length + added.length)
        all.set(old)
        all.set(added, old.length)
        const bytes = writeHashIndex(all)
        const fileName = nameOf()
        const entry: IndexManifestEntry = { kind: FileKind.ADD, partition: a.partition, bucket, indexType: HASH_INDEX, fileName, fileSize: BigInt(bytes.length), rowCount: BigInt(all.length), dvRanges: null, externalPath: null }
        writes.push(put(indexFileKey(this.source, entry), bytes))
        replacements.push({ partition: a.partition, bucket, indexType: HASH_INDEX, entries: [entry] })
      }
    }
    await Promise.all(writes)
    return { replacements, expectations }
  }
}
