// Uploads (lib/store/bounded.ts): the `settled` callback a caller reuses its bytes' memory on.
import { describe, expect, it } from 'vitest'
import { Uploads } from '../lib/store/bounded.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'

/** A memory store whose puts wait for `release(key)`, and fail when told to. */
class GatedStore extends MemoryStore {
  readonly gates = new Map<string, () => void>()
  failing = new Set<string>()
  override async put(key: string, data: Uint8Array): Promise<void> {
    await new Promise<void>((resolve) => this.gates.set(key, resolve))
    if (this.failing.has(key)) throw new Error(`injected failure of ${key}`)
    return super.put(key, data)
  }
  release(key: string): void {
    this.gates.get(key)!()
  }
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 0))

describe('Uploads', () => {
  it('calls `settled` once the store is done with the bytes, landed or failed, and not before', async () => {
    const store = new GatedStore()
    store.failing.add('b')
    const uploads = new Uploads(store, 1 << 20)
    const settled: string[] = []
    await uploads.put('a', new Uint8Array([1]), () => settled.push('a'))
    await uploads.put('b', new Uint8Array([2]), () => settled.push('b'))
    await tick()
    expect(settled).toEqual([])
    store.release('b')
    await tick()
    expect(settled).toEqual(['b'])
    store.release('a')
    await tick()
    expect(settled).toEqual(['b', 'a'])
    await expect(uploads.done()).rejects.toThrow('injected failure of b')
    expect(await store.get('a')).toEqual(new Uint8Array([1]))
  })
})
