// The Iceberg metadata directory as a set of versions (docs/design.md "Iceberg metadata"):
// `v<N>.metadata.json` names one manifest list, which names manifests. Versions share
// manifests and lists, so a version goes with only the files no kept version names.

import pLimit from 'p-limit'
import type { ObjectInfo, ObjectStore } from '../store/object-store.ts'
import { METADATA_DIR, currentManifestList, metadataFileName, metadataVersionOf } from './metadata.ts'
import { readIcebergManifestList } from './manifests.ts'

const decoder = new TextDecoder()

/** The files one version names, as keys of the metadata store. */
export interface VersionFiles {
  list: string
  manifests: string[]
}

/** The metadata directory of one table: its store (rooted at `root`) and what it knows of its versions. */
export class MetadataDir {
  private readonly known = new Map<number, VersionFiles | null>()
  /** the manifests of lists read, by list key */
  private readonly lists = new Map<string, string[]>()
  /** requests one removal or listing keeps in flight */
  private readonly limit = pLimit(32)

  constructor(
    readonly store: ObjectStore,
    /** the URI the store is rooted at; `<root>/metadata/…` are the files' locations */
    readonly root: string,
  ) {}

  uriOf(key: string): string {
    return `${this.root}/${key}`
  }

  /** The store key of a location under this directory, or null for one elsewhere (`file:/…` and `file:///…` alike: Paimon writes the first). */
  keyOf(uri: string): string | null {
    const norm = (u: string) => u.replace(/^file:\/\/\//, 'file:/')
    const prefix = `${norm(this.root)}/${METADATA_DIR}`
    const u = norm(uri)
    return u.startsWith(prefix) && !u.slice(prefix.length).includes('/') ? u.slice(prefix.length - METADATA_DIR.length) : null
  }

  /** Remembers what a version names (one this process wrote or read), so removing it later reads nothing. */
  remember(id: number, files: VersionFiles): void {
    this.known.set(id, files)
    if (this.known.size > 64) this.known.delete(Math.min(...this.known.keys()))
  }

  /** Versions present, ascending (one LIST). */
  async versionIds(): Promise<number[]> {
    const ids: number[] = []
    for (const o of await this.store.list(METADATA_DIR)) {
      const id = metadataVersionOf(o.key.slice(METADATA_DIR.length))
      if (id !== null) ids.push(id)
    }
    return ids.sort((a, b) => a - b)
  }

  /** What version `id` names; null when it is absent. Throws when a file it names cannot be read. */
  async filesOf(id: number): Promise<VersionFiles | null> {
    const hit = this.known.get(id)
    if (hit) return hit
    const bytes = await this.store.get(`${METADATA_DIR}${metadataFileName(id)}`)
    if (!bytes) return null
    const listUri = currentManifestList(decoder.decode(bytes))
    const list = listUri ? this.keyOf(listUri) : null
    if (!list) return { list: '', manifests: [] }
    // consecutive versions often share their list (a level-0 snapshot changes nothing visible)
    let manifests = this.lists.get(list)
    if (!manifests) {
      const listBytes = await this.store.get(list)
      if (!listBytes) return { list, manifests: [] }
      manifests = readIcebergManifestList(listBytes).map((m) => this.keyOf(m.path)).filter((k): k is string => k !== null)
      this.lists.set(list, manifests)
      if (this.lists.size > 256) this.lists.delete(this.lists.keys().next().value!)
    }
    const files = { list, manifests }
    this.remember(id, files)
    return files
  }

  /**
   * The manifests and lists of the directory that no version names and that were last
   * modified before `cutoff`: orphans of a crash between a version's deletion and its files',
   * or of a write that never got its version. Listed first; the versions are read after, and
   * read again until no new one appears, so a version written meanwhile (which names only its
   * base's files or new ones) is seen.
   */
  async unreferenced(cutoff: number): Promise<ObjectInfo[]> {
    const listed = await this.store.list(METADATA_DIR)
    const named = new Set<string>()
    const read = new Set<number>()
    for (let ids = listed.map((o) => metadataVersionOf(o.key.slice(METADATA_DIR.length))).filter((id): id is number => id !== null); ; ids = await this.versionIds()) {
      const fresh = ids.filter((id) => !read.has(id))
      if (fresh.length === 0) break
      fresh.forEach((id) => read.add(id))
      const files = await Promise.all(fresh.map((id) => this.limit(() => this.filesOf(id))))
      for (const f of files) if (f) [f.list, ...f.manifests].forEach((k) => named.add(k))
    }
    return listed.filter((o) => o.key.endsWith('.avro') && !named.has(o.key) && o.lastModified < cutoff)
  }

  /**
   * Removes versions `victims`, all older than every version in `kept`: each metadata file
   * first, then the lists and manifests the first kept version does not name. A version shares
   * files only with the version just before it (lib/iceberg/metadata-writer.ts), so a file two
   * versions name every version between them names too, and the first kept version stands
   * for every later one (as the first kept snapshot does in Paimon's expiration). A crash in
   * between leaves only files no version names, which orphan cleanup removes
   * (lib/maintenance/orphans.ts).
   */
  async remove(victims: number[], kept: number[]): Promise<number> {
    if (victims.length === 0) return 0
    const newestVictim = Math.max(...victims)
    let stay: VersionFiles | null = null
    for (const id of [...kept].sort((a, b) => a - b)) {
      if (id < newestVictim) throw new Error(`Iceberg metadata: version ${id} is kept below version ${newestVictim}, which goes`)
      if ((stay = await this.filesOf(id))) break
    }
    const named = new Set(stay ? [stay.list, ...stay.manifests] : [])
    const gone = await Promise.all(victims.map((id) => this.limit(() => this.filesOf(id))))
    await Promise.all(victims.map((id) => this.limit(() => this.store.delete(`${METADATA_DIR}${metadataFileName(id)}`))))
    const drop = new Set<string>()
    for (const f of gone) if (f) for (const k of [f.list, ...f.manifests]) if (k && !named.has(k)) drop.add(k)
    await Promise.all([...drop].map((k) => this.limit(() => this.store.delete(k))))
    for (const id of victims) this.known.delete(id)
    return victims.length
  }
}
