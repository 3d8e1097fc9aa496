// A least-recently-used cache of immutable table metadata (manifests, manifest lists, index
// manifests, deletion-vector ranges), bounded by the bytes those objects take in the store.
// A warm function instance keeps what its jobs read, so a job on one bucket re-reads only
// what changed since; the bound keeps a long-lived instance from growing without limit.
// Decoded objects take several times their stored size in memory: the bound is what was
// downloaded, which is what the operator can reason about (docs/operations.md).

/** Default bound: 32 MiB of stored bytes per table handle. */
export const DEFAULT_METADATA_CACHE_BYTES = 32 * 1024 * 1024

export class ByteLru<V> {
  private readonly items = new Map<string, { value: V; bytes: number }>()
  private total = 0

  constructor(readonly maxBytes: number) {
    if (!(maxBytes >= 0)) throw new RangeError(`cache size must be >= 0 bytes, got ${maxBytes}`)
  }

  get size(): number {
    return this.items.size
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.total
  }

  get(key: string): V | undefined {
    const hit = this.items.get(key)
    if (!hit) return undefined
    // Map keeps insertion order: moving a hit to the end makes the first key the coldest
    this.items.delete(key)
    this.items.set(key, hit)
    return hit.value
  }

  /** Keeps `value` unless it alone exceeds the bound; evicts the coldest to make room. */
  set(key: string, value: V, bytes: number): void {
    const old = this.items.get(key)
    if (old) {
      this.items.delete(key)
      this.total -= old.bytes
    }
    if (bytes > this.maxBytes) return
    this.items.set(key, { value, bytes })
    this.total += bytes
    for (const [k, v] of this.items) {
      if (this.total <= this.maxBytes) break
      this.items.delete(k)
      this.total -= v.bytes
    }
  }
}
