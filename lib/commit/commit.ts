// The commit protocol (design.md "Commit protocol"; paimon-format.md §3.3, §9):
// everything a snapshot references is written first, then `snapshot-N` is created with an
// atomic create-if-absent. Losing the race means another commit took N: re-read, re-check
// conflicts, retry with backoff. A commit is idempotent by (commitUser, commitIdentifier).

import { randomUUID } from 'node:crypto'
import { serializeSnapshot } from '../format/snapshot.ts'
import type { ObjectStore } from '../store/object-store.ts'
import {
  type CommitKind,
  type IndexManifestEntry,
  type ManifestEntry,
  type ManifestFileMeta,
  type SimpleStats,
  type Snapshot,
  CommitConflictError,
  FileKind,
} from '../types.ts'
import { snapshotKey } from '../table/paths.ts'
import { type ManifestIO, bucketIdentifier, fileIdentifier, foldEntries } from '../manifest/manifests.ts'
import type { SnapshotManager } from '../manifest/snapshot-manager.ts'

/** Paimon's batch commit identifier (BatchWriteBuilder.COMMIT_IDENTIFIER = Long.MAX_VALUE). */
export const BATCH_COMMIT_IDENTIFIER = 9223372036854775807n

/** `manifest.merge-min-count`: past this many base manifests, fold them into one. */
const MANIFEST_MERGE_MIN_COUNT = 30

export interface IndexReplacement {
  partition: Uint8Array
  bucket: number
  /** the complete new set of index files of this (partition, bucket) and index type */
  entries: IndexManifestEntry[]
  indexType: string
}

export interface CommitRequest {
  kind: CommitKind
  /** ADD entries */
  adds: ManifestEntry[]
  /** DELETE entries; each must still be live in the snapshot the commit lands on */
  deletes: ManifestEntry[]
  indexReplacements?: IndexReplacement[]
  commitUser: string
  commitIdentifier: bigint
  /**
   * Idempotency window: when set, snapshots after this id are searched for one with the
   * same commitUser and commitIdentifier and kind; if found, that commit already landed.
   */
  dedupAfterSnapshotId?: number
  /** Extra conflict check run against the live entries of the touched buckets. */
  checkConflicts?: (live: ManifestEntry[], latest: Snapshot | null) => void | Promise<void>
  partitionStats: (entries: ManifestEntry[]) => SimpleStats
  schemaId: number
  maxRetries: number
  /** test hook: called after the files are written and before the snapshot is created */
  beforeSnapshotCreate?: (id: number) => Promise<void> | void
}

export interface CommitResult {
  snapshotId: number
  /** attempts that lost the race for `snapshot-N` */
  retries: number
  /** true when an earlier attempt of the same commit had already landed */
  deduplicated: boolean
}

export class CommitFailedError extends Error {
  override name = 'CommitFailedError'
}

function backoffMs(attempt: number): number {
  const base = Math.min(10_000, 10 * 2 ** attempt)
  return base * (0.8 + Math.random() * 0.4)
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export class FileStoreCommit {
  constructor(
    private readonly store: ObjectStore,
    private readonly snapshots: SnapshotManager,
    private readonly manifests: ManifestIO,
  ) {}

  async commit(req: CommitRequest): Promise<CommitResult> {
    const touched = new Set([...req.adds, ...req.deletes].map((e) => bucketIdentifier(e.partition, e.bucket)))
    for (const r of req.indexReplacements ?? []) touched.add(bucketIdentifier(r.partition, r.bucket))
    const deltaEntries = [...req.deletes.map((e) => ({ ...e, kind: FileKind.DELETE })), ...req.adds.map((e) => ({ ...e, kind: FileKind.ADD }))]
    let deltaMeta: ManifestFileMeta | null = null
    let deltaList: { name: string; size: number } | null = null
    let retries = 0
    let liveSet = new Map<string, ManifestEntry>()
    let liveAt = -1
    for (let attempt = 0; ; attempt++) {
      const latestId = await this.snapshots.latestId()
      const latest = latestId === 0 ? null : await this.snapshots.snapshot(latestId)
      if (req.dedupAfterSnapshotId !== undefined) {
        const landed = await this.findLanded(req, req.dedupAfterSnapshotId, latestId)
        if (landed !== null) return { snapshotId: landed, retries, deduplicated: true }
      }
      if (req.deletes.length > 0 || req.checkConflicts || req.indexReplacements?.length) {
        // the touched buckets' live files, read once and then advanced by the deltas of
        // the snapshots that landed since: a retry costs those deltas, not a full re-read
        const inTouched = (p: Uint8Array, b: number) => touched.has(bucketIdentifier(p, b))
        if (liveAt === -1) {
          liveSet = new Map((latest ? await this.manifests.liveEntries(latest, inTouched) : []).map((e) => [fileIdentifier(e), e]))
          liveAt = latestId
        }
        for (let id = liveAt + 1; id <= latestId; id++) {
          const s = await this.snapshots.snapshot(id)
          if (s) foldEntries((await this.manifests.deltaEntries(s)).filter((e) => inTouched(e.partition, e.bucket)), liveSet)
        }
        liveAt = latestId
        const live = [...liveSet.values()]
        const liveIds = new Set(liveSet.keys())
        for (const d of req.deletes) {
          if (!liveIds.has(fileIdentifier(d))) {
            throw new CommitConflictError(
              `commit conflict: file ${d.file.fileName} (bucket ${d.bucket}, level ${d.file.level}) was already removed by snapshot ${latestId} or earlier; the job must be retried from fresh state`,
            )
          }
        }
        await req.checkConflicts?.(live, latest)
      }
      if (!deltaMeta) {
        deltaMeta = await this.manifests.writeManifest(deltaEntries, req.partitionStats(deltaEntries), BigInt(req.schemaId))
        deltaList = await this.manifests.writeList(deltaEntries.length ? [deltaMeta] : [])
      }
      const written: string[] = []
      const baseMetas = latest ? await this.baseFor(latest, req, written) : []
      const baseList = await this.manifests.writeList(baseMetas)
      written.push(baseList.name)
      const indexManifest = await this.indexFor(latest, req, written)
      const id = latestId + 1
      const deltaCount = deltaEntries.reduce((n, e) => n + (e.kind === FileKind.ADD ? 1 : -1) * Number(e.file.rowCount), 0)
      const snapshot: Snapshot = {
        version: 3,
        uuid: randomUUID(),
        id,
        schemaId: req.schemaId,
        baseManifestList: baseList.name,
        baseManifestListSize: baseList.size,
        deltaManifestList: deltaList!.name,
        deltaManifestListSize: deltaList!.size,
        ...(indexManifest ? { indexManifest } : {}),
        commitUser: req.commitUser,
        commitIdentifier: req.commitIdentifier,
        commitKind: req.kind,
        timeMillis: Date.now(),
        totalRecordCount: (latest?.totalRecordCount ?? 0) + deltaCount,
        deltaRecordCount: deltaCount,
        nextRowId: 0,
      }
      await req.beforeSnapshotCreate?.(id)
      let created = await this.store.putIfAbsent(snapshotKey(id), new TextEncoder().encode(serializeSnapshot(snapshot)))
      // "already exists" can be our own create: an SDK-level retry after a lost reply gets
      // 412 for the object its first attempt wrote. Deleting this attempt's manifests then
      // would break the snapshot that landed, so the uuid decides whose snapshot it is.
      if (!created) created = (await this.snapshots.snapshot(id))?.uuid === snapshot.uuid
      if (created) {
        try {
          await this.snapshots.writeLatestHint(id)
        } catch {
          // LATEST is a hint; readers probe past it
        }
        return { snapshotId: id, retries, deduplicated: false }
      }
      retries++
      for (const name of written) await this.manifests.deleteQuietly(name)
      if (retries > req.maxRetries) {
        for (const name of [deltaMeta.fileName, deltaList!.name]) await this.manifests.deleteQuietly(name)
        throw new CommitFailedError(
          `commit gave up after ${retries} lost races for the next snapshot (commit.max-retries = ${req.maxRetries}); nothing was committed`,
        )
      }
      await sleep(backoffMs(attempt))
    }
  }

  private async findLanded(req: CommitRequest, afterId: number, latestId: number): Promise<number | null> {
    for (let id = latestId; id > afterId; id--) {
      const s = await this.snapshots.snapshot(id)
      if (s && s.commitUser === req.commitUser && s.commitIdentifier === req.commitIdentifier && s.commitKind === req.kind) return id
    }
    return null
  }

  /**
   * New base = previous base + previous delta (core:operation/FileStoreCommitImpl). Past
   * MANIFEST_MERGE_MIN_COUNT manifests they are folded into one, so a read of the snapshot
   * opens a bounded number of manifests however many commits came before.
   */
  private async baseFor(latest: Snapshot, req: CommitRequest, written: string[]): Promise<ManifestFileMeta[]> {
    const metas = await this.manifests.dataManifests(latest)
    if (metas.length <= MANIFEST_MERGE_MIN_COUNT) return metas
    const live = foldEntries((await Promise.all(metas.map((m) => this.manifests.readManifest(m.fileName)))).flat())
    const entries = [...live.values()]
    if (entries.length === 0) return []
    const merged = await this.manifests.writeManifest(entries, req.partitionStats(entries), BigInt(Math.max(...entries.map((e) => Number(e.file.schemaId)))))
    written.push(merged.fileName)
    return [merged]
  }

  /** The index manifest is a full listing; replacements swap one bucket's entries. */
  private async indexFor(latest: Snapshot | null, req: CommitRequest, written: string[]): Promise<string | undefined> {
    if (!req.indexReplacements?.length) return latest?.indexManifest
    const replaced = new Set(req.indexReplacements.map((r) => `${bucketIdentifier(r.partition, r.bucket)}|${r.indexType}`))
    const previous = await this.manifests.readIndexManifest(latest?.indexManifest)
    const kept = previous.filter((e) => !replaced.has(`${bucketIdentifier(e.partition, e.bucket)}|${e.indexType}`))
    const entries = [...kept, ...req.indexReplacements.flatMap((r) => r.entries)]
    if (entries.length === 0 && !latest?.indexManifest) return undefined
    const name = await this.manifests.writeIndex(entries)
    written.push(name)
    return name
  }
}

