// A least-recently-used cache bounded by bytes, for what a long-lived process keeps between
// operations: a table handle's immutable metadata (manifests, manifest lists, index
// manifests, deletion-vector ranges), its snapshots, the commits its snapshots landed. A
// warm function instance keeps what its jobs read, so a job re-reads only what changed since;
// the bound keeps a long-lived instance from growing without limit. Entries are charged
// what they take in memory, estimated by approximateBytes() from the decoded value, so the
// bound is what the operator budgets against the function's memory (docs/operations.md).

/** Default bound of a table handle's metadata cache: 32 MiB of memory. */
export const DEFAULT_METADATA_CACHE_BYTES = 32 * 1024 * 1024

export interface CacheStats {
  entries: number
  /** bytes charged for the entries held now; never above maxBytes */
  bytes: number
  maxBytes: number
  evictions: number
}

// Every ByteLru of this isolate, weakly, for memory diagnostics: the soak tells a heap that
// grows because its bounded caches are still filling from one that leaks.
const liveCaches = new Set<WeakRef<ByteLru<unknown, unknown>>>()
// a cache collected with its table handle takes its entry here along
const forget = new FinalizationRegistry<WeakRef<ByteLru<unknown, unknown>>>((ref) => liveCaches.delete(ref))

/** Bytes charged now by the ByteLru caches of this isolate that are still reachable. */
export function cachedBytesInIsolate(): number {
  let bytes = 0
  for (const ref of liveCaches) {
    const cache = ref.deref()
    if (cache === undefined) liveCaches.delete(ref)
    else bytes += cache.bytes
  }
  return bytes
}

export class ByteLru<V, K = string> {
  private readonly items = new Map<K, { value: V; bytes: number }>()
  private total = 0
  private evicted = 0

  constructor(readonly maxBytes: number) {
    if (!(maxBytes >= 0)) throw new RangeError(`cache size must be >= 0 bytes, got ${maxBytes}`)
    const ref = new WeakRef(this as ByteLru<unknown, unknown>)
    liveCaches.add(ref)
    forget.register(this, ref)
  }

  get size(): number {
    return this.items.size
  }

  /** Bytes held now. */
  get bytes(): number {
    return this.total
  }

  stats(): CacheStats {
    return { entries: this.items.size, bytes: this.total, maxBytes: this.maxBytes, evictions: this.evicted }
  }

  get(key: K): V | undefined {
    const hit = this.items.get(key)
    if (!hit) return undefined
    // Map keeps insertion order: moving a hit to the end makes the first key the coldest
    this.items.delete(key)
    this.items.set(key, hit)
    return hit.value
  }

  /** Keeps `value` unless it alone exceeds the bound; evicts the coldest to make room. */
  set(key: K, value: V, bytes: number): void {
    this.delete(key)
    if (!(bytes <= this.maxBytes)) return
    this.items.set(key, { value, bytes })
    this.total += bytes
    for (const [k, v] of this.items) {
      if (this.total <= this.maxBytes) break
      this.items.delete(k)
      this.total -= v.bytes
      this.evicted++
    }
  }

  /** Drops `key` (an object that was deleted). */
  delete(key: K): boolean {
    const old = this.items.get(key)
    if (!old) return false
    this.items.delete(key)
    this.total -= old.bytes
    return true
  }
}

// V8 on 64-bit without pointer compression (Node's default build): a tagged slot is 8 bytes.
const SLOT = 8
const OBJECT_HEADER = 24
const ARRAY_HEADER = 32 + 16
const STRING_HEADER = 16
const HEAP_NUMBER = 16
const BIGINT_HEADER = 16
/** a typed array object plus its ArrayBuffer object, without the backing store */
const VIEW_OBJECTS = 80
const MAP_PER_ENTRY = 3 * SLOT
const TWO_TO_64 = 1n << 64n

/** Bytes a typed array takes in memory: its objects and its whole backing store. */
export function viewBytes(view: ArrayBufferView): number {
  return VIEW_OBJECTS + view.buffer.byteLength
}

/**
 * Bytes a value takes in memory, estimated from its shape: object and array headers and
 * slots, string characters, heap numbers and bigints, and each ArrayBuffer's whole backing
 * store once (a view into a larger buffer keeps all of it alive). An object reached twice
 * counts once; a string reached twice counts twice, so shared strings make it an over- rather
 * than an underestimate. Functions and symbols count as a slot.
 */
export function approximateBytes(value: unknown): number {
  const seen = new Set<object>()
  const stack: unknown[] = [value]
  let total = 0
  while (stack.length > 0) {
    const v = stack.pop()
    switch (typeof v) {
      case 'string':
        total += STRING_HEADER + v.length * (/[^\u0000-\u00ff]/.test(v) ? 2 : 1)
        continue
      case 'number':
        if (!Number.isInteger(v) || v > 0x3fffffff || v < -0x40000000) total += HEAP_NUMBER
        continue
      case 'bigint': {
        const magnitude = v < 0n ? -v : v
        total += BIGINT_HEADER + SLOT * (magnitude < TWO_TO_64 ? 1 : Math.ceil(magnitude.toString(16).length / 16))
        continue
      }
      case 'object':
        break
      default:
        continue
    }
    if (v === null || seen.has(v)) continue
    seen.add(v)
    if (ArrayBuffer.isView(v)) {
      total += VIEW_OBJECTS
      if (!seen.has(v.buffer)) {
        seen.add(v.buffer)
        total += v.buffer.byteLength
      }
    } else if (v instanceof ArrayBuffer) {
      total += VIEW_OBJECTS + v.byteLength
    } else if (Array.isArray(v)) {
      total += ARRAY_HEADER + SLOT * v.length
      for (const x of v) stack.push(x)
    } else if (v instanceof Map) {
      total += OBJECT_HEADER + MAP_PER_ENTRY * v.size
      for (const [k, x] of v) stack.push(k, x)
    } else if (v instanceof Set) {
      total += OBJECT_HEADER + 2 * SLOT * v.size
      for (const x of v) stack.push(x)
    } else {
      const keys = Object.keys(v)
      total += OBJECT_HEADER + SLOT * keys.length
      for (const k of keys) stack.push((v as Record<string, unknown>)[k])
    }
  }
  return total
}
