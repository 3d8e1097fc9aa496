// An in-process ObjectStore over a Map, for tests and benchmarks. Every operation copies the
// bytes in and out so a caller mutating its buffer cannot change what is stored, which is
// what S3 and the file system give too.
import type { ObjectInfo, ObjectStore } from './object-store.ts'
import { StoreError } from '../errors.ts'

interface StoredObject {
  data: Uint8Array
  lastModified: number
}

export class MemoryStore implements ObjectStore {
  readonly uri: string
  private readonly objects = new Map<string, StoredObject>()

  constructor({ uri = 'memory://anonymous' }: { uri?: string } = {}) {
    this.uri = uri
  }

  async get(key: string): Promise<Uint8Array | null> {
    const obj = this.objects.get(key)
    return obj ? obj.data.slice() : null
  }

  async getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    const obj = this.objects.get(key)
    if (!obj) throw new StoreError(`getRange: no object '${key}' in ${this.uri}`)
    checkRange(key, start, end, obj.data.length)
    return obj.data.slice(start, end)
  }

  async head(key: string): Promise<ObjectInfo | null> {
    const obj = this.objects.get(key)
    return obj ? { key, size: obj.data.length, lastModified: obj.lastModified } : null
  }

  async put(key: string, data: Uint8Array): Promise<void> {
    this.objects.set(key, { data: data.slice(), lastModified: Date.now() })
  }

  // The check and the set run in one synchronous step, so no other operation on this
  // store can interleave: the create is atomic.
  async putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    if (this.objects.has(key)) return false
    this.objects.set(key, { data: data.slice(), lastModified: Date.now() })
    return true
  }

  async delete(key: string): Promise<void> {
    this.objects.delete(key)
  }

  async list(prefix: string): Promise<ObjectInfo[]> {
    const out: ObjectInfo[] = []
    for (const [key, obj] of this.objects) {
      if (key.startsWith(prefix)) out.push({ key, size: obj.data.length, lastModified: obj.lastModified })
    }
    return out.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
  }
}

/** Throws unless [start, end) is a valid range inside an object of `size` bytes. */
export function checkRange(key: string, start: number, end: number, size: number): void {
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new RangeError(`getRange '${key}': expected integers 0 <= start <= end, got [${start}, ${end})`)
  }
  if (end > size) {
    throw new RangeError(`getRange '${key}': range [${start}, ${end}) exceeds object size ${size}`)
  }
}
