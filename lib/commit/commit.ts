// The direct committer (docs/design.md "How a commit travels"; docs/format.md):
// everything a snapshot references is written first, then `snapshot-N` is created with an
// atomic create-if-absent. Losing the race means another commit took N: re-read, re-check
// conflicts, retry with backoff. A commit is idempotent by (commitUser, commitIdentifier).

import { randomUUID } from 'node:crypto'
import { serializeSnapshot } from '../format/snapshot.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { CommitConflictError, CommitFailedError } from '../errors.ts'
import { type ManifestEntry, type ManifestFileMeta, type Snapshot, FileKind } from '../types.ts'
import { snapshotKey } from '../table/paths.ts'
import type { SchemaView } from '../table/schema.ts'
import { bucketIdentifier, fileIdentifier, hex } from '../manifest/identifiers.ts'
import { type ManifestIO, type ManifestPacking, foldEntries } from '../manifest/manifests.ts'
import { deserializeBinaryRow } from '../format/binary-row.ts'
import { rowComparator } from '../format/compare.ts'
import type { SnapshotManager } from '../manifest/snapshot-manager.ts'
import { type BucketScope, bucketsScope } from '../manifest/bucket-scope.ts'
import type { CommitRequest, CommitResult, Committer } from './committer.ts'
import { CommitState, checkCompaction, checkPartitionIndex } from './conflicts.ts'
import { HASH_INDEX } from '../format/hash-index.ts'
import { type LandedCommits, commitKeyOf } from './landed.ts'
import { setTimeout as sleep } from 'node:timers/promises'

/** The direct path's request: the port's, plus a check of its own for the folding committer. */
export interface DirectCommitRequest extends CommitRequest {
  /**
   * Replaces the request's own conflict checks (checkCompaction for a COMPACT): run against
   * the live entries and index of the touched buckets at every attempt.
   */
  checkConflicts?: (state: CommitState) => void | Promise<void>
  /**
   * Runs at every attempt with the latest snapshot id, before anything is written for it;
   * throws (CommitConflictError) when the request must not land on that snapshot.
   */
  recheck?: (latestId: number) => Promise<void>
  /**
   * The latest snapshot id as the caller just read it: the first attempt builds on it
   * without reading it again (a stale one only costs a lost race, the create being
   * conditional).
   */
  knownLatestId?: number
  /**
   * The caller has already run this request's checks (its deletes live, `checkConflicts`)
   * against the state of this snapshot, exactly: an attempt that builds on it skips reading
   * the live files and checking again. (The folding committer plans every message against
   * the state it folds; re-checking it at once on the same snapshot was a fifth of a fold.)
   */
  checkedAt?: number
  /** largest pause between attempts (default 10 s, design.md's backoff) */
  maxBackoffMs?: number
  /** resolves before the snapshot is created (the folding committer's sidecar, written alongside the manifests) */
  beforeCreate?: Promise<unknown>
}

/**
 * Told of each snapshot the direct committer creates, once it exists (the table handle
 * composes the Iceberg metadata writer this way: docs/design.md "Iceberg metadata"). `landed`
 * returns at once and never throws: nothing it does can fail or delay the commit.
 */
export interface LandingListener {
  landed(snapshot: Snapshot, req: CommitRequest): void
  /** resolves once the work `landed` queued is done */
  settle(): Promise<void>
}

/**
 * Bucket groups a commit writes one manifest each for (16,384 buckets of one partition at
 * the default group size): past it they are packed, so a write touching 100,000 partitions
 * does not write 100,000 manifests and a manifest list of as many records.
 */
export const PACK_GROUPS_OVER = 256

/** How a commit (or a writer writing manifests ahead) packs entries of more than PACK_GROUPS_OVER bucket groups. */
export function manifestPacking(view: SchemaView): ManifestPacking {
  const types = view.partitionFields.map((f) => f.type)
  const compare = rowComparator(types)
  return { over: PACK_GROUPS_OVER, partitionValues: (p) => deserializeBinaryRow(types, p), compare: (a, b) => compare(a as never, b as never) }
}

function backoffMs(attempt: number, capMs = 10_000): number {
  const base = Math.min(capMs, 10 * 2 ** attempt)
  return base * (0.8 + Math.random() * 0.4)
}


/** The direct committer: creates `snapshot-N` itself (Paimon's FileStoreCommitImpl). */
export class FileStoreCommit implements Committer {
  constructor(
    private readonly store: ObjectStore,
    private readonly snapshots: SnapshotManager,
    private readonly manifests: ManifestIO,
    private readonly landed: LandedCommits,
    private readonly view: SchemaView,
    private readonly listener?: LandingListener,
  ) {}

  /** A commit touching more than PACK_GROUPS_OVER bucket groups packs them (ManifestIO.groupedManifests). */
  private get packing(): ManifestPacking {
    return manifestPacking(this.view)
  }

  /** Resolves once the listener has done what the snapshots landed so far asked of it. */
  settle(): Promise<void> {
    return this.listener?.settle() ?? Promise.resolve()
  }

  async commit(req: DirectCommitRequest): Promise<CommitResult> {
    const check =
      req.checkConflicts ??
      (req.kind === 'COMPACT'
        ? (state: CommitState) => checkCompaction(this.view, { ...req, label: `COMPACT ${req.commitUser}` }, state)
        : req.expectPartitionIndex?.length
          ? (state: CommitState) => checkPartitionIndex({ ...req, label: `APPEND ${req.commitUser}` }, state)
          : undefined)
    // built only by a commit that reads state: an APPEND of many partitions never needs it
    let scopeMemo: BucketScope | null = null
    const scope = () => (scopeMemo ??= bucketsScope(this.view, [...req.adds, ...req.deletes, ...(req.indexReplacements ?? [])]))
    const deltaEntries = [...req.deletes.map((e) => ({ ...e, kind: FileKind.DELETE })), ...req.adds.map((e) => ({ ...e, kind: FileKind.ADD }))]
    let deltaMetas: ManifestFileMeta[] | null = null
    let deltaList: { name: string; size: number } | null = null
    // changelog manifests and their list: like the delta, written once and kept across retries
    const changelog = (req.changelog ?? []).map((e) => ({ ...e, kind: FileKind.ADD }))
    // manifests the writer wrote ahead: listed first, never deleted here (a retry lists them again)
    const ahead = req.writtenAhead
    const changelogWritten: { metas: ManifestFileMeta[]; list: { name: string; size: number } | null } = { metas: [], list: null }
    let retries = 0
    let liveSet = new Map<string, ManifestEntry>()
    let liveAt = -1
    for (let attempt = 0; ; attempt++) {
      // first attempt: the id the caller knows, or a probe past the snapshot it built on
      // (one round trip when nothing landed since; a stale guess only costs a lost race,
      // the create being conditional)
      const latest =
        attempt === 0 && req.knownLatestId !== undefined
          ? req.knownLatestId === 0 ? null : await this.snapshots.snapshot(req.knownLatestId)
          : attempt === 0 && req.baseSnapshotId > 0
            ? await this.snapshots.latestFrom(req.baseSnapshotId)
            : await this.snapshots.latest()
      const latestId = latest?.id ?? 0
      await req.recheck?.(latestId)
      const needsState = (req.deletes.length > 0 || check || req.indexReplacements?.length) && req.checkedAt !== latestId
      // what this attempt checks depends only on the latest snapshot: read it all at once
      const [landed, live, index] = await Promise.all([
        req.dedup ? this.landed.find(commitKeyOf(req), req.baseSnapshotId, latestId) : null,
        needsState ? this.advanceLive(latest, liveAt === -1 ? null : { live: liveSet, at: liveAt }, scope()) : null,
        needsState && check && latest?.indexManifest ? this.manifests.readIndexManifest(latest.indexManifest) : [],
      ])
      if (landed !== null) return { snapshotId: landed, retries, deduplicated: true }
      if (needsState) {
        liveSet = live!
        liveAt = latestId
        for (const d of req.deletes) {
          if (!liveSet.has(fileIdentifier(d))) {
            throw new CommitConflictError(
              `commit conflict: file ${d.file.fileName} (bucket ${d.bucket}, level ${d.file.level}) was already removed by snapshot ${latestId} or earlier; the job must be retried from fresh state`,
              true,
            )
          }
        }
        if (check) {
          try {
            // HASH entries of every bucket: a dynamic-bucket check reads its whole partition
            await check(new CommitState(liveSet.values(), index.filter((e) => scope().holds(e.partition, e.bucket) || e.indexType === HASH_INDEX)))
          } catch (e) {
            if (e instanceof CommitConflictError) throw new CommitConflictError(e.message, true)
            throw e
          }
        }
      }
      // the delta (first attempt only), the base and the index manifest are independent:
      // written at once, a snapshot costs the longest of them, not their sum
      const written: string[] = []
      const [, baseList, indexManifest] = await Promise.all([
        deltaMetas
          ? undefined
          : (async () => {
              // one manifest per bucket group, so a job on one bucket can skip the others;
              // their list records are known before they are written, so the list goes at once
              const prepared = this.manifests.groupedManifests(deltaEntries, req.partitionStats, BigInt(req.schemaId), undefined, this.packing)
              deltaMetas = prepared.map((p) => p.meta)
              const [, list] = await Promise.all([this.manifests.putManifests(prepared), this.manifests.writeList([...(ahead?.manifests ?? []), ...deltaMetas])])
              deltaList = list
              if (changelog.length || ahead?.changelogManifests.length) {
                const cl = this.manifests.groupedManifests(changelog, req.partitionStats, BigInt(req.schemaId), undefined, this.packing)
                changelogWritten.metas = cl.map((p) => p.meta)
                const [, clList] = await Promise.all([this.manifests.putManifests(cl), this.manifests.writeList([...(ahead?.changelogManifests ?? []), ...changelogWritten.metas])])
                changelogWritten.list = clList
              }
            })(),
        (async () => {
          // merged manifests and the list naming them are written at once
          const base = latest ? await this.baseFor(latest, req, written) : { metas: [] }
          const [list] = await Promise.all([this.manifests.writeList(base.metas), base.write])
          written.push(list.name)
          return list
        })(),
        this.indexFor(latest, req, written),
      ])
      await req.beforeCreate
      const id = latestId + 1
      const deltaCount = deltaEntries.reduce((n, e) => n + (e.kind === FileKind.ADD ? 1 : -1) * Number(e.file.rowCount), ahead?.rowCount ?? 0)
      const snapshot: Snapshot = {
        version: 3,
        uuid: randomUUID(),
        id,
        // never below the latest snapshot's: a writer still on an older schema (its files map
        // by field id) does not make the snapshot claim a schema older than files it holds
        schemaId: Math.max(req.schemaId, latest?.schemaId ?? 0),
        baseManifestList: baseList.name,
        baseManifestListSize: baseList.size,
        deltaManifestList: deltaList!.name,
        deltaManifestListSize: deltaList!.size,
        ...(changelogWritten.list ? { changelogManifestList: changelogWritten.list.name, changelogManifestListSize: changelogWritten.list.size, changelogRecordCount: changelog.reduce((n, e) => n + Number(e.file.rowCount), ahead?.changelogRowCount ?? 0) } : {}),
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
        this.landed.remember(id, [commitKeyOf(req)])
        // LATEST is a hint (readers probe past a stale one): rewritten without holding the commit
        this.snapshots.hintLatest(id)
        this.listener?.landed(snapshot, req)
        return { snapshotId: id, retries, deduplicated: false }
      }
      retries++
      await Promise.all(written.map((name) => this.manifests.deleteQuietly(name)))
      if (retries > req.maxRetries) {
        const changelogNames = [...changelogWritten.metas.map((m) => m.fileName), ...(changelogWritten.list ? [changelogWritten.list.name] : [])]
        await Promise.all([...deltaMetas!.map((m) => m.fileName), deltaList!.name, ...changelogNames].map((name) => this.manifests.deleteQuietly(name)))
        throw new CommitFailedError(
          `commit gave up after ${retries} lost races for the next snapshot (commit.max-retries = ${req.maxRetries}); nothing was committed`,
        )
      }
      await sleep(backoffMs(attempt, req.maxBackoffMs))
    }
  }

  /**
   * The touched buckets' live files at `latest`: read once, then advanced by the deltas of
   * the snapshots that landed since (read at once, folded in order), so a retry costs those
   * deltas, not a full re-read.
   */
  private async advanceLive(latest: Snapshot | null, from: { live: Map<string, ManifestEntry>; at: number } | null, scope: BucketScope): Promise<Map<string, ManifestEntry>> {
    if (!latest) return new Map()
    if (!from) return new Map((await this.manifests.liveEntries(latest, scope)).map((e) => [fileIdentifier(e), e]))
    const ids: number[] = []
    for (let id = from.at + 1; id <= latest.id; id++) ids.push(id)
    const deltas = await Promise.all(
      ids.map(async (id) => {
        const s = await this.snapshots.snapshot(id)
        return s ? this.manifests.deltaEntries(s) : []
      }),
    )
    for (const d of deltas) foldEntries(d.filter((e) => scope.holds(e.partition, e.bucket)), from.live)
    return from.live
  }

  /**
   * New base = previous base + previous delta (core:operation/FileStoreCommitImpl). Every
   * manifest Strata writes holds one bucket group (docs/format.md "Manifest layout"), so a
   * group's manifests hold every entry of its files, and folding them alone is exact: when
   * one group has more than `manifest.merge-min-count` manifests, they are folded into one
   * (rolled at `manifest.target-file-size`), and the other groups are left as they are. A
   * manifest that spans groups (written before this layout, or by another writer) makes the
   * first merge a full one, which leaves every manifest in one group.
   */
  private async baseFor(latest: Snapshot, req: DirectCommitRequest, written: string[]): Promise<{ metas: ManifestFileMeta[]; write?: Promise<void> }> {
    const metas = await this.manifests.dataManifests(latest)
    const { manifestMergeMinCount: minCount, manifestTargetFileSize: target } = this.view.options
    if (metas.length <= minCount) return { metas }
    const groupOf = metas.map((m) => this.groupOfMeta(m))
    const counts = new Map<string, number>()
    for (const g of groupOf) if (g !== null) counts.set(g, (counts.get(g) ?? 0) + 1)
    const full = groupOf.includes(null)
    const merging = (g: string | null) => full || (g !== null && counts.get(g)! > minCount)
    if (!full && ![...counts.values()].some((n) => n > minCount)) return { metas }

    const toMerge = metas.filter((_, i) => merging(groupOf[i]))
    const live = foldEntries((await Promise.all(toMerge.map((m) => this.manifests.readManifest(m.fileName)))).flat())
    const entries = [...live.values()]
    const prepared = entries.length ? this.manifests.groupedManifests(entries, req.partitionStats, BigInt(entries.reduce((m, e) => Math.max(m, Number(e.file.schemaId)), 0)), target, this.packing) : []
    written.push(...prepared.map((p) => p.meta.fileName))
    // merged groups first, then the manifests left as they were, in their order: groups
    // share no file, so their relative order does not matter
    return { metas: [...prepared.map((p) => p.meta), ...metas.filter((_, i) => !merging(groupOf[i]))], write: this.manifests.putManifests(prepared) }
  }

  /**
   * The bucket group a manifest holds, from its list record: null when it may span several
   * (several partitions, or buckets of different groups).
   */
  private groupOfMeta(m: ManifestFileMeta): string | null {
    if (m.minBucket === null || m.maxBucket === null) return null
    const size = this.manifests.bucketGroupSize
    if (Math.floor(m.minBucket / size) !== Math.floor(m.maxBucket / size)) return null
    const { minValues, maxValues, nullCounts } = m.partitionStats
    if (Buffer.compare(minValues, maxValues) !== 0) return null
    // equal bounds hide a mix of nulls and one value: only all-null or no-null fields are one partition
    if (nullCounts?.some((n) => n !== null && n > 0n) && this.view.partitionFields.length > 0) {
      const allNull = m.numAddedFiles + m.numDeletedFiles
      if (nullCounts.some((n) => n !== null && n > 0n && n !== allNull)) return null
    }
    return `${hex(minValues)}|${Math.floor(m.minBucket / size)}`
  }

  /** The index manifest is a full listing; replacements swap one bucket's entries. */
  private async indexFor(latest: Snapshot | null, req: DirectCommitRequest, written: string[]): Promise<string | undefined> {
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

