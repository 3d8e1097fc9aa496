// The object-store seam. Everything the engine persists goes through this interface; S3,
// the local file system and memory implement it, and cross-cutting concerns (latency
// models, fault injection, metrics, retries) wrap it.

/** Metadata of one stored object. */
export interface ObjectInfo {
  /** key relative to the store's root, '/'-separated, no leading '/' */
  key: string
  size: number
  /** last modification time, epoch millis */
  lastModified: number
}

export interface ObjectStore {
  /** A URI naming the store's root, e.g. `s3://bucket/prefix` or `file:///tmp/t`. */
  readonly uri: string
  /** Whole object, or null when absent. */
  get(key: string): Promise<Uint8Array | null>
  /** Bytes [start, end) of an object; throws when absent. */
  getRange(key: string, start: number, end: number): Promise<Uint8Array>
  /** Size and time of an object, or null when absent. */
  head(key: string): Promise<ObjectInfo | null>
  /**
   * Unconditional write (overwrites). Here and in putIfAbsent the store does not read `data`
   * once the returned promise has settled (landed or failed): the caller may reuse its memory
   * then, as the data file writer does with its output buffer. A store that keeps the bytes
   * keeps a copy.
   */
  put(key: string, data: Uint8Array): Promise<void>
  /**
   * Atomic create-if-absent: writes and returns true when the key did not exist; returns
   * false, writing nothing, when it did. On S3 this is `PutObject` with `If-None-Match: *`
   * (412 → false); on the local file system the bytes go to a temp file first, which is
   * then hard-linked to the key (link(2) fails when the key exists, so the create is
   * exclusive and a reader never sees a partial file).
   */
  putIfAbsent(key: string, data: Uint8Array): Promise<boolean>
  /** Deletes an object; deleting a missing key is not an error. */
  delete(key: string): Promise<void>
  /** All objects whose key starts with `prefix`, in lexicographic key order. */
  list(prefix: string): Promise<ObjectInfo[]>
  /**
   * What writes that never finished left behind under `prefix`, which `list` never shows:
   * on the local file system, the temp files of a process that died mid-write. Each `key`
   * names the leftover for `deleteLeftover` only; it is never an object key. Stores whose
   * writes leave nothing behind (S3, memory) do not implement it.
   */
  listLeftovers?(prefix: string): Promise<ObjectInfo[]>
  /** Deletes a leftover that `listLeftovers` reported; a missing one is not an error. */
  deleteLeftover?(key: string): Promise<void>
}
