// Copies a table object by object from one store to another (local directory to a fresh
// directory, or to an S3 prefix), so each repetition of a compaction starts from the same
// bytes.

import type { ObjectStore } from '../../lib/store/object-store.ts'

export async function copyStore(from: ObjectStore, to: ObjectStore, concurrency = 8): Promise<number> {
  const infos = await from.list('')
  let next = 0
  let bytes = 0
  const worker = async () => {
    while (next < infos.length) {
      const { key } = infos[next++]
      const data = await from.get(key)
      if (!data) throw new Error(`copyStore: ${key} vanished from ${from.uri} while copying`)
      await to.put(key, data)
      bytes += data.length
    }
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
  return bytes
}

/** Deletes every object of a store (the S3 copies; local ones are removed with rmSync). */
export async function clearStore(store: ObjectStore, concurrency = 8): Promise<void> {
  const infos = await store.list('')
  let next = 0
  const worker = async () => {
    while (next < infos.length) await store.delete(infos[next++].key)
  }
  await Promise.all(Array.from({ length: concurrency }, worker))
}
