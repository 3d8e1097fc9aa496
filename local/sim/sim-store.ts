// The object store of the simulation: an in-memory store whose every request goes through
// the world (world.ts), so it completes after a simulated latency, may fail as the world's
// fault plan says, and never completes for a process that died.
// Also the views of one table in that bucket: under its prefix, and as the checker reads it.

import { InterceptingStore, type StoreOp } from '../../lib/store/intercepting-store.ts'
import type { ObjectStore } from '../../lib/store/object-store.ts'
import { SCHEMA_DIR } from '../../lib/table/paths.ts'
import type { World } from './world.ts'

const MUTATING: ReadonlySet<StoreOp> = new Set(['put', 'putIfAbsent', 'delete'])

export class SimStore extends InterceptingStore {
  constructor(
    inner: ObjectStore,
    private readonly world: World,
  ) {
    super(inner)
  }

  // A request's body is the bytes it was sent with: a late-applied PUT must not store what
  // the caller wrote into its buffer after the request settled (ObjectStore.put's contract).
  override put(key: string, data: Uint8Array): Promise<void> {
    return super.put(key, data.slice())
  }

  override putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    return super.putIfAbsent(key, data.slice())
  }

  protected call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
    return this.world.request(`s3 ${op} ${key}`, run, { mutating: MUTATING.has(op) })
  }
}

/** A store seen under a prefix of another (each table is a prefix of the one simulated bucket). */
export class PrefixStore implements ObjectStore {
  readonly uri: string
  constructor(
    private readonly inner: ObjectStore,
    private readonly prefix: string,
  ) {
    this.uri = `${inner.uri}/${prefix}`
  }
  get(key: string) {
    return this.inner.get(this.prefix + key)
  }
  getRange(key: string, start: number, end: number) {
    return this.inner.getRange(this.prefix + key, start, end)
  }
  async head(key: string) {
    const h = await this.inner.head(this.prefix + key)
    return h && { ...h, key }
  }
  put(key: string, data: Uint8Array) {
    return this.inner.put(this.prefix + key, data)
  }
  putIfAbsent(key: string, data: Uint8Array) {
    return this.inner.putIfAbsent(this.prefix + key, data)
  }
  delete(key: string) {
    return this.inner.delete(this.prefix + key)
  }
  async list(prefix: string) {
    return (await this.inner.list(this.prefix + prefix)).map((o) => ({ ...o, key: o.key.slice(this.prefix.length) }))
  }
}

/**
 * The checker's view of a table: its schema as stored, with `deletion-vectors.merge-on-read`
 * on, so a read merges level 0 in and shows every committed row, compacted or not.
 */
export class MergeOnReadView extends PrefixStore {
  override async get(key: string) {
    const bytes = await super.get(key)
    if (!bytes || !key.startsWith(SCHEMA_DIR)) return bytes
    const schema = JSON.parse(new TextDecoder().decode(bytes)) as { options: Record<string, string> }
    schema.options['deletion-vectors.merge-on-read'] = 'true'
    return new TextEncoder().encode(JSON.stringify(schema))
  }
}
