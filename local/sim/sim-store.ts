// The object store of the simulation: an in-memory store whose every request goes through
// the world (world.ts), so it completes after a simulated latency, may fail as the world's
// fault plan says, and never completes for a process that died.

import { InterceptingStore, type StoreOp } from '../../lib/store/intercepting-store.ts'
import type { ObjectStore } from '../../lib/store/object-store.ts'
import type { World } from './world.ts'

const MUTATING: ReadonlySet<StoreOp> = new Set(['put', 'putIfAbsent', 'delete'])

export class SimStore extends InterceptingStore {
  constructor(
    inner: ObjectStore,
    private readonly world: World,
  ) {
    super(inner)
  }

  protected call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
    return this.world.request(`s3 ${op} ${key}`, run, { mutating: MUTATING.has(op) })
  }
}
