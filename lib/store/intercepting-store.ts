// A store wrapper that routes every request through one method, so a wrapper that only
// observes or gates requests (fault injection, a request bound, a test trace) writes that
// method and nothing else.

import type { ObjectInfo, ObjectStore } from './object-store.ts'

export type StoreOp = 'get' | 'getRange' | 'head' | 'put' | 'putIfAbsent' | 'delete' | 'list'

export abstract class InterceptingStore implements ObjectStore {
  readonly uri: string

  constructor(readonly inner: ObjectStore) {
    this.uri = inner.uri
  }

  /** Runs one request (`run`), named by its operation and key (a list's prefix). */
  protected abstract call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T>

  get(key: string): Promise<Uint8Array | null> {
    return this.call('get', key, () => this.inner.get(key))
  }
  getRange(key: string, start: number, end: number): Promise<Uint8Array> {
    return this.call('getRange', key, () => this.inner.getRange(key, start, end))
  }
  head(key: string): Promise<ObjectInfo | null> {
    return this.call('head', key, () => this.inner.head(key))
  }
  put(key: string, data: Uint8Array): Promise<void> {
    return this.call('put', key, () => this.inner.put(key, data))
  }
  putIfAbsent(key: string, data: Uint8Array): Promise<boolean> {
    return this.call('putIfAbsent', key, () => this.inner.putIfAbsent(key, data))
  }
  delete(key: string): Promise<void> {
    return this.call('delete', key, () => this.inner.delete(key))
  }
  list(prefix: string): Promise<ObjectInfo[]> {
    return this.call('list', prefix, () => this.inner.list(prefix))
  }
}
