// Iceberg metadata for every snapshot a table's committers land (docs/design.md "Iceberg
// metadata"; Paimon's IcebergCommitCallback). After `snapshot-N` exists, `v<N>.metadata.json`
// is derived from `v<N-1>` and the snapshot's delta: a delta that changes no visible file
// reuses the previous manifest list, one that adds files writes one manifest, one that removes
// files rewrites the manifests that held them. Without a usable base (a crash between a
// snapshot and its metadata, a base written by Paimon's Java or in another format version) the
// metadata is rebuilt from the snapshot. Failures are counted, never thrown at the commit: the
// next snapshot catches up.

import { randomUUID } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import type { IcebergCatalogPort } from './catalog-port.ts'
import type { ManifestIO } from '../manifest/manifests.ts'
import type { SnapshotManager } from '../manifest/snapshot-manager.ts'
import { openStore } from '../store/open-store.ts'
import type { ObjectStore } from '../store/object-store.ts'
import type { SchemaView } from '../table/schema.ts'
import { type DataField, FileKind, type ManifestEntry, type Snapshot, type TableSchema } from '../types.ts'
import { Content, type IcebergDataFile, type IcebergEntry, type IcebergManifestMeta, Status, manifestMetaOf, readIcebergManifest, readIcebergManifestList, writeIcebergManifest, writeIcebergManifestList } from './manifests.ts'
import { type BaseMetadata, METADATA_DIR, VERSION_HINT, VISIBLE_LEVELS, buildMetadata, metadataFileName, metadataVersionOf, parseBaseMetadata, tableUuidOf } from './metadata.ts'
import { type IcebergLocation, type IcebergOptions, icebergLocation, icebergOptions } from './options.ts'
import { icebergSchemaOf, partitionSpecOf } from './schema.ts'
import { TableFiles } from './table-files.ts'
import { MetadataDir } from './versions.ts'

/** What the writer reads of its table: the handle's parts (lib/handle/table.ts composes it). */
export interface IcebergSource {
  readonly store: ObjectStore
  readonly view: SchemaView
  readonly snapshots: SnapshotManager
  readonly manifests: ManifestIO
  schemaById(id: number): Promise<TableSchema>
}

/** A snapshot's changes as its committer knows them (read from the snapshot when not given). */
export interface SnapshotDelta {
  adds: ManifestEntry[]
  deletes: ManifestEntry[]
  /** whether the snapshot changed any bucket's deletion vectors */
  indexChanged: boolean
  /** the buckets whose deletion vectors it changed, when known (else every bucket counts as changed) */
  indexBuckets?: { partition: Uint8Array; bucket: number }[]
}

/** What callers can see of the writer's work (docs/operations.md "Table options"). */
export interface IcebergWriteStats {
  /** metadata files written */
  written: number
  /** of those, built from their snapshot's live files without a base (the first one, and after a lost base) */
  rebuilt: number
  /** snapshots whose metadata failed (the next snapshot catches up) */
  failed: number
  /** the last failure's message */
  lastError: string | null
  /** the highest snapshot id whose metadata this writer wrote or found */
  latest: number
}

export interface IcebergWriterOptions {
  catalog?: IcebergCatalogPort
  /** the store of a metadata directory outside the table (hadoop-catalog); default openStore(root) */
  metadataStore?: ObjectStore
  /** told of each failure (the stats count it too) */
  onError?: (snapshotId: number, error: Error) => void
  now?: () => number
}

/** One version as the writer builds the next on it. */
interface Version {
  snapshotId: number
  listKey: string
  data: IcebergManifestMeta[]
  deletes: IcebergManifestMeta[]
  nextRowId: bigint
  uuid: string
  /** data file location → the manifest (key) holding it, once known */
  files: Map<string, string> | null
  /** the delete manifests by group of buckets (TableFiles.groupOf), once known */
  dvGroups: Map<string, IcebergManifestMeta[]> | null
}

/**
 * Pauses before a writer gives up on the version of a snapshot another process landed and
 * rebuilds instead (that process writes it a few round trips after its snapshot).
 */
const BASE_WAITS_MS = [50, 100, 200, 400]
/** Entries per manifest a rebuild or a merge writes. */
const ROLL_ENTRIES = 20_000
/** Decoded manifests kept for the next removal. */
const ENTRY_CACHE = 64

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export class IcebergMetadataWriter {
  readonly options: IcebergOptions
  readonly location: IcebergLocation
  readonly dir: MetadataDir
  readonly stats: IcebergWriteStats = { written: 0, rebuilt: 0, failed: 0, lastError: null, latest: 0 }
  private readonly files: TableFiles
  private state: Version | null = null
  private tail: Promise<void> = Promise.resolve()
  private hinted = 0
  /** ids of the snapshots queued and not yet written (one may be queued twice: a catch-up) */
  private readonly queued: number[] = []
  /** snapshots this writer tried to write (recent ones): their missing versions are not waited for */
  private readonly attempted = new Set<number>()
  /** no version below this id is left (expireAfterCommit); 0 when not known */
  private sweptBelow = 0
  private readonly schemas = new Map<number, Promise<TableSchema>>()
  private readonly entries = new Map<string, IcebergEntry[]>()

  constructor(
    private readonly src: IcebergSource,
    private readonly opts: IcebergWriterOptions = {},
  ) {
    this.options = icebergOptions(src.view.schema.options)
    const where = icebergLocation(src.store.uri, this.options)
    if ('refused' in where) throw new Error(where.refused)
    this.location = where
    this.dir = new MetadataDir(where.inTable ? src.store : (opts.metadataStore ?? openStore(where.root)), where.root)
    this.files = new TableFiles(src.store.uri.replace(/\/+$/, ''), src.view, this.options.formatVersion)
  }

  /** Queues the metadata of a snapshot that exists now; returns at once (the commit does not wait). */
  landed(snapshot: Snapshot, delta?: SnapshotDelta): void {
    this.queued.push(snapshot.id)
    this.tail = this.tail
      .then(() => this.write(snapshot, delta))
      .catch((e: Error) => this.failed(snapshot.id, e))
      .finally(() => this.queued.splice(this.queued.indexOf(snapshot.id), 1))
  }

  /** Resolves once every queued snapshot's metadata is written or has failed. */
  settle(): Promise<void> {
    return this.tail
  }

  /**
   * Writes the latest snapshot's metadata when it is missing; the id it ends on (0: no
   * snapshot). Throws when it could not be written.
   */
  async catchUp(): Promise<number> {
    const latest = await this.src.snapshots.latest()
    if (!latest) return 0
    const key = `${METADATA_DIR}${metadataFileName(latest.id)}`
    if (this.state?.snapshotId === latest.id || (await this.dir.store.head(key))) return latest.id
    this.landed(latest)
    await this.settle()
    if (!(await this.dir.store.head(key))) throw new Error(`the Iceberg metadata of snapshot ${latest.id} could not be written (${this.stats.lastError ?? 'no error recorded'})`)
    return latest.id
  }

  private failed(snapshotId: number, e: Error): void {
    this.stats.failed++
    this.stats.lastError = `snapshot ${snapshotId}: ${e.message}`
    this.opts.onError?.(snapshotId, e)
  }

  /**
   * A version is derived only from the version just before it, so whatever it shares with an
   * older version that version's successor shares too (what removing old versions relies on,
   * MetadataDir.remove). Without that base it is rebuilt, sharing nothing.
   */
  private async write(snapshot: Snapshot, delta?: SnapshotDelta): Promise<void> {
    const n = snapshot.id
    if (this.state && this.state.snapshotId >= n) return
    // the first snapshot of a table: a directory outside it (hadoop-catalog) may still hold
    // the versions of a table dropped there before, which must not be taken for this one's
    // (Paimon clears the directory at the first snapshot). Only the version files go: their
    // manifests are then named by no version, for orphan cleanup, and a version another
    // writer of this table creates meanwhile names no file deleted here.
    if (n === 1) await Promise.all((await this.dir.store.list(METADATA_DIR)).filter((o) => metadataVersionOf(o.key.slice(METADATA_DIR.length)) !== null).map((o) => this.dir.store.delete(o.key)))
    const attempted = this.attempted.has(n - 1)
    this.attempted.add(n)
    if (this.attempted.size > 64) this.attempted.delete(Math.min(...this.attempted))
    let base = this.state?.snapshotId === n - 1 ? this.state : await this.readVersion(n - 1)
    // a snapshot another process landed: its version may be on its way
    for (let i = 0; !base && !attempted && i < BASE_WAITS_MS.length && n > 1; i++) {
      await sleep(BASE_WAITS_MS[i])
      base = await this.readVersion(n - 1)
    }
    const next = base ? await this.derive(base, snapshot, delta ?? (await this.deltaOf(snapshot))) : await this.rebuild(snapshot)
    await this.publish(snapshot, next)
  }

  // ---- reading what is there ----

  /** Version `id` as a base, or null when it is missing or not one to build on. */
  private async readVersion(id: number): Promise<Version | null> {
    if (id < 1) return null
    const bytes = await this.dir.store.get(`${METADATA_DIR}${metadataFileName(id)}`)
    const base = bytes ? parseBaseMetadata(decoder.decode(bytes)) : null
    if (!base || base.formatVersion !== this.options.formatVersion || base.snapshotId !== id || base.visibleLevels !== this.files.visibleLevels) return null
    const listKey = this.dir.keyOf(base.manifestList)
    const listBytes = listKey ? await this.dir.store.get(listKey) : null
    if (!listKey || !listBytes) return null
    const metas = readIcebergManifestList(listBytes)
    return this.versionOf(base, listKey, metas)
  }

  private versionOf(base: BaseMetadata, listKey: string, metas: IcebergManifestMeta[]): Version {
    return {
      snapshotId: base.snapshotId,
      listKey,
      data: metas.filter((m) => m.content === Content.DATA),
      deletes: metas.filter((m) => m.content !== Content.DATA),
      nextRowId: BigInt(base.nextRowId ?? 0),
      uuid: base.uuid,
      files: null,
      dvGroups: null,
    }
  }

  private async deltaOf(s: Snapshot): Promise<SnapshotDelta> {
    const [entries, prev] = await Promise.all([this.src.manifests.deltaEntries(s), s.id > 1 ? this.src.snapshots.snapshot(s.id - 1) : null])
    return {
      adds: entries.filter((e) => e.kind === FileKind.ADD),
      deletes: entries.filter((e) => e.kind === FileKind.DELETE),
      indexChanged: !prev || prev.indexManifest !== s.indexManifest,
    }
  }

  private async manifestEntries(m: IcebergManifestMeta): Promise<IcebergEntry[]> {
    const hit = this.entries.get(m.path)
    if (hit) return hit
    const key = this.dir.keyOf(m.path)
    const bytes = key ? await this.dir.store.get(key) : null
    if (!bytes) throw new Error(`Iceberg manifest ${m.path} is missing`)
    const entries = readIcebergManifest(bytes, this.src.view.partitionFields, m.firstRowId)
    this.cacheEntries(m.path, entries)
    return entries
  }

  private cacheEntries(path: string, entries: IcebergEntry[]): void {
    this.entries.set(path, entries)
    if (this.entries.size > ENTRY_CACHE) this.entries.delete(this.entries.keys().next().value!)
  }

  /** Which data manifest holds each live data file of `v` (read once per writer, then kept up). */
  private async fileIndex(v: Version): Promise<Map<string, string>> {
    if (v.files) return v.files
    const files = new Map<string, string>()
    const all = await Promise.all(v.data.map(async (m) => [m.path, await this.manifestEntries(m)] as const))
    for (const [path, entries] of all) for (const e of entries) if (e.status !== Status.DELETED) files.set(e.file.path, path)
    v.files = files
    return files
  }

  // ---- building the next version ----

  /** The next version from `base` and the snapshot's delta (docs/design.md "Iceberg metadata"). */
  private async derive(base: Version, snapshot: Snapshot, delta: SnapshotDelta): Promise<Pending> {
    const removed = new Set<string>()
    const added = new Map<string, ManifestEntry>()
    // a file a snapshot moves between two visible levels (an upgrade) is deleted and added: it stays
    for (const e of delta.deletes) if (this.files.visible(e.file.level)) removed.add(this.files.dataPath(e))
    for (const e of delta.adds) {
      if (!this.files.visible(e.file.level)) continue
      const p = this.files.dataPath(e)
      if (!removed.delete(p)) added.set(p, e)
    }
    const sid = BigInt(snapshot.id)
    const pending = new Pending(this, base, sid)
    const fresh = await this.addedEntries([...added.values()], sid)
    let data = base.data
    let files = base.files ? new Map(base.files) : null
    if (removed.size) {
      const index = await this.fileIndex(base)
      files = new Map(index)
      const affected = new Set<string>()
      for (const p of removed) {
        const m = index.get(p)
        if (m) affected.add(m)
        files.delete(p)
      }
      const rewritten = await Promise.all(data.filter((m) => affected.has(m.path)).map((m) => this.manifestEntries(m)))
      for (const e of rewritten.flat()) if (e.status !== Status.DELETED && !removed.has(e.file.path)) fresh.push(existing(e))
      data = data.filter((m) => !affected.has(m.path))
    }
    if (fresh.length) data = [...data, pending.manifest(fresh, Content.DATA)]
    data = await this.mergeIfNeeded(data, pending)
    const dv = this.files.withDeletionVectors && delta.indexChanged ? await this.deletionVectorManifests(snapshot, pending, base, delta.indexBuckets ?? null) : { deletes: base.deletes, groups: base.dvGroups }
    pending.finish(data, dv.deletes, files, { removed: removed.size, added: added.size }, false, dv.groups)
    return pending
  }

  /** The version of a snapshot built from its live files alone. */
  private async rebuild(snapshot: Snapshot): Promise<Pending> {
    const prior = await this.priorVersion(snapshot.id)
    const sid = BigInt(snapshot.id)
    const base: Version = { snapshotId: 0, listKey: '', data: [], deletes: [], nextRowId: BigInt(prior?.nextRowId ?? 0), uuid: prior?.uuid ?? tableUuidOf(this.src.store.uri), files: new Map(), dvGroups: new Map() }
    const pending = new Pending(this, base, sid)
    const live = (await this.src.manifests.liveEntries(snapshot)).filter((e) => this.files.visible(e.file.level))
    const fresh = await this.addedEntries(live, sid)
    const data = pending.rolled(fresh, Content.DATA)
    const dv = this.files.withDeletionVectors ? await this.deletionVectorManifests(snapshot, pending, null, null) : { deletes: [], groups: new Map() }
    pending.finish(data, dv.deletes, new Map(), { removed: 0, added: fresh.length }, true, dv.groups)
    return pending
  }

  /** The table uuid and next row id of the newest version before `id` that parses at all. */
  private async priorVersion(id: number): Promise<{ uuid: string; nextRowId: number | null } | null> {
    const ids = (await this.dir.versionIds()).filter((v) => v < id)
    for (const v of ids.reverse().slice(0, 3)) {
      const bytes = await this.dir.store.get(`${METADATA_DIR}${metadataFileName(v)}`)
      if (!bytes) continue
      try {
        const m = JSON.parse(decoder.decode(bytes))
        if (typeof m?.['table-uuid'] === 'string') return { uuid: m['table-uuid'], nextRowId: typeof m['next-row-id'] === 'number' ? m['next-row-id'] : null }
      } catch {
        // an unreadable version names nothing to keep
      }
    }
    return null
  }

  /**
   * The delete manifests of the snapshot (v3): one per group of buckets (TableFiles.groupOf),
   * so only the groups whose deletion vectors changed (`buckets`; null: any) are rewritten
   * from the snapshot's index, the others kept as `base` lists them. A base whose delete
   * manifests are not one group each (or not known) has every group rewritten once.
   */
  private async deletionVectorManifests(snapshot: Snapshot, pending: Pending, base: Version | null, buckets: { partition: Uint8Array; bucket: number }[] | null): Promise<{ deletes: IcebergManifestMeta[]; groups: Map<string, IcebergManifestMeta[]> }> {
    const [index, known] = await Promise.all([this.src.manifests.readIndexManifest(snapshot.indexManifest), base ? this.dvGroupsOf(base) : null])
    const changed = buckets && known ? new Set(buckets.map((b) => this.files.groupOf(b.partition, b.bucket))) : null
    const groups = new Map(changed ? known : [])
    const sid = BigInt(snapshot.id)
    const byGroup = new Map<string, IcebergEntry[]>()
    for (const { group, file } of this.files.deletionVectors(index)) {
      if (changed && !changed.has(group)) continue
      let g = byGroup.get(group)
      if (!g) byGroup.set(group, (g = []))
      g.push(addedEntry(file, sid))
    }
    for (const g of changed ?? []) groups.delete(g)
    for (const [g, entries] of byGroup) groups.set(g, pending.rolled(entries, Content.POSITION_DELETES))
    const deletes = [...groups.keys()].sort().flatMap((g) => groups.get(g)!)
    return { deletes, groups }
  }

  /** The delete manifests of `v` by group; null when one of them holds several groups (read once per writer). */
  private async dvGroupsOf(v: Version): Promise<Map<string, IcebergManifestMeta[]> | null> {
    if (v.dvGroups) return v.dvGroups
    const groups = new Map<string, IcebergManifestMeta[]>()
    for (const m of v.deletes) {
      const of = new Set((await this.manifestEntries(m)).map((e) => (e.file.referencedDataFile ? this.files.groupOfPath(e.file.referencedDataFile) : null)))
      if (of.size !== 1 || of.has(null)) return null
      const g = [...of][0]!
      groups.set(g, [...(groups.get(g) ?? []), m])
    }
    v.dvGroups = groups
    return groups
  }

  /**
   * Paimon's compactMetadataIfNeeded: the data manifests under 2/3 of manifest.target-file-size
   * are merged into one once there are compaction.min.file-num of them and either
   * compaction.max.file-num of them or manifest.target-file-size of bytes.
   */
  private async mergeIfNeeded(data: IcebergManifestMeta[], pending: Pending): Promise<IcebergManifestMeta[]> {
    const target = this.src.view.options.manifestTargetFileSize
    const small = data.filter((m) => Number(m.length) < (target * 2) / 3)
    const total = small.reduce((n, m) => n + Number(m.length), 0)
    if (small.length < this.options.compactMinFileNum) return data
    if (small.length < this.options.compactMaxFileNum && total < target) return data
    const sid = pending.snapshotId
    const merged: IcebergEntry[] = []
    for (const m of small) {
      const own = pending.take(m.path)
      for (const e of own ?? (await this.manifestEntries(m))) {
        if (e.status === Status.DELETED) continue
        merged.push(e.fileSequenceNumber === sid && e.status === Status.ADDED ? e : existing(e))
      }
    }
    return [...data.filter((m) => !small.includes(m)), ...pending.rolled(merged, Content.DATA)]
  }

  // ---- writing it ----

  /**
   * The ADDED entries of Paimon data files at snapshot `sid`, each with the metrics of the
   * schema it was written under (its statistics cover that schema's fields).
   */
  private async addedEntries(entries: ManifestEntry[], sid: bigint): Promise<IcebergEntry[]> {
    const top = entries.reduce((m, e) => Math.max(m, Number(e.file.schemaId)), 0)
    const schemas = entries.length ? await this.schemasUpTo(top) : []
    return entries.map((e) => addedEntry(this.files.dataFile(e, schemas[Number(e.file.schemaId)].fields), sid))
  }

  /** Schemas 0..id of the table (each read once per writer). */
  private async schemasUpTo(id: number): Promise<TableSchema[]> {
    return Promise.all(
      Array.from({ length: id + 1 }, (_, i) => {
        let s = this.schemas.get(i)
        if (!s) {
          s = this.src.schemaById(i)
          s.catch(() => this.schemas.delete(i))
          this.schemas.set(i, s)
        }
        return s
      }),
    )
  }

  private async publish(snapshot: Snapshot, p: Pending): Promise<void> {
    const n = snapshot.id
    const currentSchemaId = Math.max(snapshot.schemaId, this.src.view.schema.id)
    const [schemas, listKey] = await Promise.all([this.schemasUpTo(currentSchemaId), p.write()])
    const schema = schemas[currentSchemaId]
    const version = p.version(listKey)
    const metadata = buildMetadata({
      formatVersion: this.options.formatVersion,
      uuid: version.uuid,
      location: this.src.store.uri.replace(/\/+$/, ''),
      snapshotId: n,
      timestampMs: snapshot.timeMillis,
      operation: p.change.removed === 0 ? 'append' : p.change.added === 0 ? 'delete' : 'overwrite',
      summary: { 'added-data-files': String(p.change.added), 'deleted-data-files': String(p.change.removed), [VISIBLE_LEVELS]: this.files.visibleLevels },
      manifestList: this.dir.uriOf(listKey),
      snapshotSchemaId: snapshot.schemaId,
      schemas: schemas.map(icebergSchemaOf),
      currentSchemaId,
      lastColumnId: Math.max(...schemas.map((s) => s.highestFieldId)),
      partitionFields: partitionSpecOf(schema),
      properties: this.options.tableProperties,
      firstRowId: Number(p.firstRowId),
      addedRows: Number(version.nextRowId - p.firstRowId),
      now: (this.opts.now ?? Date.now)(),
    })
    const key = `${METADATA_DIR}${metadataFileName(n)}`
    if (!(await this.dir.store.putIfAbsent(key, encoder.encode(JSON.stringify(metadata))))) {
      // another committer wrote this version first: build on its version, drop what was written here
      await p.discard()
      this.state = await this.readVersion(n)
      this.stats.latest = Math.max(this.stats.latest, n)
      return
    }
    this.state = version
    this.dir.remember(n, { list: listKey, manifests: [...version.data, ...version.deletes].map((m) => this.dir.keyOf(m.path)!) })
    this.stats.written++
    if (p.rebuilt) this.stats.rebuilt++
    this.stats.latest = Math.max(this.stats.latest, n)
    const published = this.opts.catalog?.published(this.dir.uriOf(key), n)
    // with newer snapshots queued behind this one, the last of them moves the hint and removes
    // old versions: a backlog costs one request per level-0 snapshot
    if (this.queued.some((id) => id > n)) return void (await published)
    // the hint names a version that exists (written just before) and never moves back in this
    // process; old versions go only once it names this one
    const hint = n > this.hinted ? this.dir.store.put(`${METADATA_DIR}${VERSION_HINT}`, encoder.encode(String(n))) : undefined
    this.hinted = Math.max(this.hinted, n)
    await Promise.all([hint, published])
    await this.expireAfterCommit(n)
  }

  /**
   * metadata.iceberg.delete-after-commit.enabled: the version that falls out of the kept
   * window goes, with the files no kept version names. Strata keeps at least one previous
   * version, so a version-hint a concurrent committer wrote late still names a file.
   */
  private async expireAfterCommit(n: number): Promise<void> {
    if (!this.options.deleteAfterCommit) return
    const keep = Math.max(1, this.options.previousVersionsMax)
    const oldest = n - keep
    if (oldest <= 1) return
    // once this writer has seen the directory hold no version below `sweptBelow`, a commit has
    // the versions from there to the window to remove (one, without a backlog); until then (a
    // new process, a failed removal, a crash that skipped versions) one LIST finds them all
    const ids = this.sweptBelow > 0 ? Array.from({ length: n - this.sweptBelow + 1 }, (_, i) => this.sweptBelow + i) : await this.dir.versionIds()
    const victims = ids.filter((id) => id < oldest)
    this.sweptBelow = 0
    await this.dir.remove(victims, ids.filter((id) => id >= oldest))
    this.sweptBelow = oldest
  }

  /**
   * Removes the versions older than Paimon's first kept snapshot (expiration) after making
   * sure the latest snapshot has its version, so every kept version lists a snapshot whose
   * files expiration keeps. Returns the ids removed.
   */
  async expireBefore(firstKept: number): Promise<number[]> {
    await this.catchUp()
    const ids = await this.dir.versionIds()
    if (ids.length === 0) return []
    const newest = ids[ids.length - 1]
    const victims = ids.filter((id) => id < firstKept && id !== newest)
    await this.dir.remove(victims, ids.filter((id) => !victims.includes(id)))
    return victims
  }

  /** `randomUUID`-named file keys of a new manifest or list. */
  newKey(kind: 'manifest' | 'list', snapshotId: bigint, i = 0): string {
    const u = randomUUID()
    return `${METADATA_DIR}${kind === 'list' ? `snap-${snapshotId}-${u}.avro` : `${u}-m${i}.avro`}`
  }

  get partitionFields(): DataField[] {
    return this.src.view.partitionFields
  }

  encodeManifest(entries: IcebergEntry[]): Uint8Array {
    return writeIcebergManifest(entries, this.src.view.partitionFields, this.options.formatVersion, this.options.manifestCompression)
  }

  encodeList(metas: IcebergManifestMeta[]): Uint8Array {
    return writeIcebergManifestList(metas, this.options.formatVersion, this.options.manifestLegacyVersion, this.options.manifestCompression)
  }

  remember(path: string, entries: IcebergEntry[]): void {
    this.cacheEntries(path, entries)
  }
}

/** A file added at snapshot `sid` (its sequence numbers are the snapshot id). */
function addedEntry(file: IcebergDataFile, sid: bigint): IcebergEntry {
  return { status: Status.ADDED, snapshotId: sid, sequenceNumber: sid, fileSequenceNumber: sid, file }
}

/** An entry carried into a new manifest: EXISTING, its row id written out (spec "First Row ID Inheritance"). */
function existing(e: IcebergEntry): IcebergEntry {
  return { ...e, status: Status.EXISTING }
}

/** Entries with the row ids a reader inherits from their manifest's `first_row_id` (as readIcebergManifest gives them). */
function inherit(entries: IcebergEntry[], first: bigint | null): IcebergEntry[] {
  if (first === null) return entries
  let next = first
  return entries.map((e) => {
    if (e.file.firstRowId !== null || e.file.content !== Content.DATA) return e
    const out = { ...e, file: { ...e.file, firstRowId: next } }
    next += e.file.recordCount
    return out
  })
}

/** The files of the next version, encoded but not yet written. */
class Pending {
  readonly written: { key: string; meta: IcebergManifestMeta; entries: IcebergEntry[]; bytes: Uint8Array }[] = []
  change = { removed: 0, added: 0 }
  private data: IcebergManifestMeta[] = []
  private deletes: IcebergManifestMeta[] = []
  private files: Map<string, string> | null = null
  private dvGroups: Map<string, IcebergManifestMeta[]> | null = null
  private reuse = false
  private listKey: string | null = null
  /** the next version's next-row-id, once write() assigned the new manifests theirs */
  private nextRowId: bigint | null = null
  /** built from the snapshot's live files, without a base */
  rebuilt = false

  constructor(
    private readonly w: IcebergMetadataWriter,
    private readonly base: Version,
    readonly snapshotId: bigint,
  ) {}

  /** The snapshot's first row id: the base's next-row-id. */
  get firstRowId(): bigint {
    return this.base.nextRowId
  }

  /** Encodes one manifest of `entries`; its list record. */
  manifest(entries: IcebergEntry[], content: number): IcebergManifestMeta {
    const key = this.w.newKey('manifest', this.snapshotId, this.written.length)
    const bytes = this.w.encodeManifest(entries)
    const meta = manifestMetaOf(this.w.dir.uriOf(key), bytes.length, content, this.snapshotId, entries, this.w.partitionFields)
    this.written.push({ key, meta, entries, bytes })
    return meta
  }

  /** Encodes `entries` as manifests of at most ROLL_ENTRIES each; their list records. */
  rolled(entries: IcebergEntry[], content: number): IcebergManifestMeta[] {
    const out: IcebergManifestMeta[] = []
    for (let i = 0; i < entries.length; i += ROLL_ENTRIES) out.push(this.manifest(entries.slice(i, i + ROLL_ENTRIES), content))
    return out
  }

  /** Takes back a manifest encoded in this step (a merge folds it), or null for an older one. */
  take(path: string): IcebergEntry[] | null {
    const i = this.written.findIndex((w) => w.meta.path === path)
    if (i < 0) return null
    return this.written.splice(i, 1)[0].entries
  }

  /** The next version's manifests; `files` (when known) gets the data files written in this step. */
  finish(data: IcebergManifestMeta[], deletes: IcebergManifestMeta[], files: Map<string, string> | null, change: { removed: number; added: number }, rebuilt: boolean, dvGroups: Map<string, IcebergManifestMeta[]> | null): void {
    if (files) for (const w of this.written) if (w.meta.content === Content.DATA) for (const e of w.entries) files.set(e.file.path, w.meta.path)
    this.dvGroups = dvGroups
    this.data = data
    this.deletes = deletes
    this.files = files
    this.change = change
    this.rebuilt = rebuilt
    // nothing visible changed: the next version lists the same manifests, so it names the same list
    this.reuse = !rebuilt && this.written.length === 0 && deletes === this.base.deletes && data.length === this.base.data.length && data.every((m, i) => m === this.base.data[i])
  }

  /** Writes the manifests and the list at once (the list records are known before the PUTs); the list's key. */
  async write(): Promise<string> {
    if (this.listKey) return this.listKey
    if (this.reuse) return (this.listKey = this.base.listKey)
    // row lineage (spec "First Row ID Assignment"): each data manifest without one gets the next
    // id range, as long as its added and existing rows
    let next = this.base.nextRowId
    if (this.w.options.formatVersion >= 3) {
      this.data = this.data.map((m) => {
        if (m.firstRowId !== null) return m
        const assigned = { ...m, firstRowId: next }
        next += m.addedRows + m.existingRows
        return assigned
      })
    }
    this.nextRowId = next
    const key = this.w.newKey('list', this.snapshotId)
    await Promise.all([...this.written.map((f) => this.w.dir.store.put(f.key, f.bytes)), this.w.dir.store.put(key, this.w.encodeList([...this.data, ...this.deletes]))])
    const assigned = new Map(this.data.map((m) => [m.path, m.firstRowId]))
    for (const f of this.written) this.w.remember(f.meta.path, inherit(f.entries, assigned.get(f.meta.path) ?? null))
    return (this.listKey = key)
  }

  version(listKey: string): Version {
    return {
      snapshotId: Number(this.snapshotId),
      listKey,
      data: this.data,
      deletes: this.deletes,
      nextRowId: this.nextRowId ?? this.base.nextRowId,
      uuid: this.base.uuid,
      files: this.files,
      dvGroups: this.dvGroups,
    }
  }

  /** Deletes what write() put (another committer's version won). */
  async discard(): Promise<void> {
    if (this.reuse || !this.listKey) return
    await Promise.all([...this.written.map((f) => this.w.dir.store.delete(f.key)), this.w.dir.store.delete(this.listKey)])
  }
}
