// Deletion of the writer's idempotency markers once they are past its dedup window.

import type { ObjectStore } from '../store/object-store.ts'
import { forEachLimited } from './expire.ts'

/** Marker deletes in flight at once, as expiration's deletes (S3 latency bound). */
const DELETE_CONCURRENCY = 16

/**
 * Deletes the markers under `dir` (the ingest marker directory) last written before
 * `now - maxAgeMs`. A batch redelivered after that is no longer recognised, which is why
 * the age is the writer's own dedup window.
 */
export async function removeOldMarkers(store: ObjectStore, dir: string, now: number, maxAgeMs: number): Promise<number> {
  const cutoff = now - maxAgeMs
  const old = (await store.list(dir)).filter((o) => o.lastModified < cutoff)
  await forEachLimited(old, DELETE_CONCURRENCY, (o) => store.delete(o.key))
  return old.length
}
