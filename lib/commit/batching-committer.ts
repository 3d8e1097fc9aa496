// The batching committer: the committer function folds every commit message it holds (its
// batch and what it drained from the queue), in order, into as few snapshots as it can (one
// APPEND, then one COMPACT), so commit throughput grows with the number of senders. The
// folding rules and why they are safe: docs/design.md "The path of one commit".

import { randomBytes } from 'node:crypto'
import pLimit from 'p-limit'
import { partitionStatsOf } from '../table/file-meta.ts'
import type { ManifestIO } from '../manifest/manifests.ts'
import type { SchemaView } from '../table/schema.ts'
import type { CommitContext } from './commit-context.ts'
import { CommitConflictError, StrataInputError } from '../errors.ts'
import type { IndexManifestEntry, Snapshot } from '../types.ts'
import type { CommitRequest, IndexReplacement, WrittenAhead } from './committer.ts'
import { type CommitMessage, type ReceivedMessage, readSpilled } from './commit-message.ts'
import { CommitState, bucketsOf, checkCompaction, checkPartitionIndex } from './conflicts.ts'
import { HASH_INDEX } from '../format/hash-index.ts'
import { FOLDING_COMMIT_USER, commitKeyOf, foldedCommitsBody, foldedCommitsKey, foldedKeys, supersededKeyOf } from './landed.ts'
import { bucketIdentifier, fileIdentifier } from '../manifest/identifiers.ts'
import { bucketsScope } from '../manifest/bucket-scope.ts'

/** One input of a fold: a decoded message, or a received body (a spilled one is read only if needed). */
export type FoldInput = CommitMessage | ReceivedMessage

export type FoldOutcome =
  | { status: 'landed'; snapshotId: number }
  /** an earlier delivery (or an earlier copy in this batch) already landed it */
  | { status: 'duplicate'; snapshotId: number }
  /** conflict: the message can never land as it is (its job must be redone from fresh state); other: may succeed on redelivery */
  | { status: 'failed'; error: Error; conflict: boolean }

export interface FoldResult {
  /** one per input, in input order */
  outcomes: FoldOutcome[]
  /** snapshots created, in order */
  snapshots: { id: number; kind: 'APPEND' | 'COMPACT'; messages: number }[]
  /** lost races for `snapshot-N` (a direct committer got there first) */
  retries: number
  /** times the batch was planned again after a check failed at commit time */
  replans: number
  /** the store failed mid-fold: what was not settled failed with this error (a redelivery may land it) */
  interrupted?: Error
}

interface Item {
  index: number
  key: string
  identity: { kind: 'APPEND' | 'COMPACT'; builtAfterSnapshotId: number }
  /** a spilled body not read yet */
  spilled?: string
  message?: CommitMessage
}

/** A COMPACT message's checks against the folded state (lib/commit/conflicts.ts). */
export function checkCompactMessage(view: SchemaView, m: CommitMessage, state: CommitState): void {
  checkCompaction(view, { ...m, label: `COMPACT ${m.commitUser}/${m.commitIdentifier}` }, state)
}

/**
 * Dynamic bucket mode: checks an APPEND's assignment against the HASH index as folded so far
 * (checkPartitionIndex), then folds in its new HASH files so the next APPEND checks against them.
 */
function foldAssignment(m: CommitMessage, state: CommitState): void {
  checkPartitionIndex({ ...m, label: `APPEND ${m.commitUser}/${m.commitIdentifier}` }, state)
  state.apply({ adds: [], deletes: [], indexReplacements: m.indexReplacements })
}

/** The outcome of an attempt superseded by a redelivery of its records: it never lands (a conflict, so its receipt says so). */
function superseded(key: string, why: string): FoldOutcome {
  return { status: 'failed', conflict: true, error: new CommitConflictError(`commit ${key} never lands: ${why} (docs/design.md "Abandoned attempts")`) }
}

/** Index replacements of several messages: per (bucket, index type) the last one wins, it being the complete new set. */
function mergeReplacements(ms: CommitMessage[]): IndexReplacement[] {
  const out = new Map<string, IndexReplacement>()
  for (const m of ms) for (const r of m.indexReplacements) out.set(`${bucketIdentifier(r.partition, r.bucket)}|${r.indexType}`, r)
  return [...out.values()]
}

/**
 * A message as a direct FileStoreCommit request (what committing it alone, without the
 * queue, means; used for comparisons and by a caller that wants to bypass the queue).
 */
export function requestFromMessage(view: SchemaView, m: CommitMessage): CommitRequest {
  return {
    kind: m.kind,
    adds: m.adds,
    deletes: m.deletes,
    indexReplacements: m.indexReplacements.length ? m.indexReplacements : undefined,
    changelog: m.changelog ?? [],
    ...(m.writtenAhead ? { writtenAhead: m.writtenAhead } : {}),
    commitUser: m.commitUser,
    commitIdentifier: m.commitIdentifier,
    baseSnapshotId: m.builtAfterSnapshotId,
    dedup: true,
    requireLive: m.requireLive,
    expectIndex: m.expectIndex,
    ...(m.expectPartitionIndex?.length ? { expectPartitionIndex: m.expectPartitionIndex } : {}),
    partitionStats: (entries) => partitionStatsOf(view, entries),
    schemaId: view.schema.id,
    maxRetries: view.options.commitMaxRetries,
  }
}

/** The manifests written ahead of several messages, in message order, and their row counts summed. */
function foldWrittenAhead(ms: CommitMessage[]): WrittenAhead {
  const out: WrittenAhead = { manifests: [], rowCount: 0, changelogManifests: [], changelogRowCount: 0 }
  for (const m of ms) {
    const w = m.writtenAhead
    if (!w) continue
    out.manifests.push(...w.manifests)
    out.changelogManifests.push(...w.changelogManifests)
    out.rowCount += w.rowCount
    out.changelogRowCount += w.changelogRowCount
  }
  return out
}

async function indexOf(manifests: ManifestIO, s: Snapshot | null): Promise<IndexManifestEntry[]> {
  return s?.indexManifest ? manifests.readIndexManifest(s.indexManifest) : []
}

function randomIdentifier(): bigint {
  // positive 63-bit, never Paimon's batch identifier (Long.MAX_VALUE)
  const x = randomBytes(8).readBigUInt64BE() & 0x7fffffffffffffffn
  return x === 0x7fffffffffffffffn ? 1n : x
}

/** lost races a folded snapshot retries before the committer gives its messages back */
const COMMITTER_MAX_RETRIES = 100
/** a lost race costs a re-read and a base list; a long pause would only let the other committer win again */
const COMMITTER_MAX_BACKOFF_MS = 200

export interface BatchingCommitterOptions {
  /** re-plans of one batch after a check failed at commit time, default 3 */
  maxReplans?: number
  /** test hook: after a snapshot's files are written, before it is created */
  beforeSnapshotCreate?: (id: number) => Promise<void> | void
}

export class BatchingCommitter {
  constructor(
    readonly table: CommitContext,
    private readonly opts: BatchingCommitterOptions = {},
  ) {}

  /** Folds the messages, in order, into as few snapshots as it can; see the file comment. */
  async commit(inputs: FoldInput[]): Promise<FoldResult> {
    const outcomes: (FoldOutcome | undefined)[] = new Array(inputs.length).fill(undefined)
    const items: Item[] = inputs.map((x, index) => {
      if ('inline' in x) {
        if (x.inline) return { index, key: commitKeyOf(x.message), identity: x.message, message: x.message }
        return { index, key: commitKeyOf(x.identity), identity: x.identity, spilled: x.key }
      }
      return { index, key: commitKeyOf(x), identity: x, message: x }
    })
    // a copy later in the batch is a duplicate of the first
    const firstOf = new Map<string, number>()
    const pending: Item[] = []
    const copies: { item: Item; of: number }[] = []
    for (const it of items) {
      const f = firstOf.get(it.key)
      if (f !== undefined) copies.push({ item: it, of: f })
      else {
        firstOf.set(it.key, it.index)
        pending.push(it)
      }
    }
    const result: FoldResult = { outcomes: [], snapshots: [], retries: 0, replans: 0 }
    let todo = pending
    for (let attempt = 0; todo.length > 0; attempt++) {
      try {
        todo = await this.foldOnce(todo, outcomes, result)
      } catch (e) {
        // a non-conflict error (the store failed): everything not settled may succeed on redelivery
        for (const it of todo) outcomes[it.index] ??= { status: 'failed', error: e as Error, conflict: false }
        result.interrupted = e as Error
        break
      }
      if (todo.length === 0) break
      result.replans++
      if (attempt >= (this.opts.maxReplans ?? 3)) {
        const error = new Error(`batching committer: the folded checks kept failing at commit time after ${attempt + 1} plans (a direct committer keeps changing the table); ${todo.length} message(s) not committed`)
        for (const it of todo) outcomes[it.index] ??= { status: 'failed', error, conflict: false }
        break
      }
    }
    for (const { item, of } of copies) {
      const o = outcomes[of]!
      outcomes[item.index] = o.status === 'failed' ? o : { status: 'duplicate', snapshotId: o.snapshotId }
    }
    result.outcomes = outcomes as FoldOutcome[]
    return result
  }

  /**
   * One plan against the latest snapshot, then its commits. Returns the items to plan again
   * (a group whose checks failed at commit time); settles every other item's outcome.
   */
  private async foldOnce(items: Item[], outcomes: (FoldOutcome | undefined)[], result: FoldResult): Promise<Item[]> {
    const table = this.table
    // a warm committer probes past the last snapshot it knows: one round trip when nothing else landed
    const latestId = (await table.snapshots.latestFrom(table.snapshots.highestKnownId()))?.id ?? 0
    // duplicates: identities landed after the message was built
    const lowest = Math.min(...items.map((it) => it.identity.builtAfterSnapshotId))
    // a warm committer knows what it landed itself without reading the snapshot
    const { landed: landedAt, horizon } = await table.landed.landedWithHorizon(lowest, latestId)
    const live: Item[] = []
    for (const it of items) {
      const at = landedAt.get(it.key)
      const by = landedAt.get(supersededKeyOf(it.key))
      if (at !== undefined && at > it.identity.builtAfterSnapshotId) outcomes[it.index] = { status: 'duplicate', snapshotId: at }
      else if (by !== undefined && by > it.identity.builtAfterSnapshotId) outcomes[it.index] = superseded(it.key, `a redelivery of its records landed in snapshot ${by}`)
      // an APPEND built before the horizon may have landed in a snapshot that has expired
      // since: landing it again would add its files twice, or files expiration deleted. A
      // COMPACT needs no such guard: its inputs would no longer be live.
      else if (it.identity.kind === 'APPEND' && it.identity.builtAfterSnapshotId < horizon) {
        outcomes[it.index] = { status: 'failed', conflict: true, error: new CommitConflictError(`commit ${it.key} was built after snapshot ${it.identity.builtAfterSnapshotId}, and snapshots up to ${horizon} have expired: whether it landed cannot be told, so it does not land (its records come again; docs/design.md "Abandoned attempts")`) }
      } else live.push(it)
    }
    // read spilled bodies now that they are needed; one that cannot be read fails alone
    const limit = pLimit(table.view.options.ioMaxConcurrentRequests)
    await Promise.all(
      live
        .filter((it) => !it.message)
        .map((it) =>
          limit(async () => {
            try {
              it.message = await readSpilled(it.spilled!, table.store)
              if (commitKeyOf(it.message) !== it.key) throw new StrataInputError(`commit message: spilled body ${it.spilled} is ${commitKeyOf(it.message)}, the pointer names ${it.key}`)
            } catch (e) {
              outcomes[it.index] = { status: 'failed', error: e as Error, conflict: false }
            }
          }),
        ),
    )
    const ready = live.filter((it) => it.message && outcomes[it.index] === undefined)
    for (const it of ready) {
      const m = it.message!
      // a message of an older schema lands (its files map to later schemas by field id); one
      // of a newer schema than this handle's means the table was altered since it opened
      if (m.schemaId > table.view.schema.id) {
        outcomes[it.index] = {
          status: 'failed',
          error: new StrataInputError(`commit message ${it.key}: schemaId ${m.schemaId}, newer than the committer's schema ${table.view.schema.id} (the table was altered after the committer opened it); expected at most ${table.view.schema.id}`),
          conflict: false,
        }
      }
    }
    // abandoned attempts (docs/design.md "Abandoned attempts"): an APPEND that carries an
    // earlier attempt's records again does not land once that attempt has; an attempt that
    // an APPEND of this fold supersedes does not land beside it
    for (const it of ready) {
      const m = it.message!
      const landedFirst = (m.supersedes ?? []).find((j) => (landedAt.get(j) ?? -1) > m.builtAfterSnapshotId)
      if (landedFirst !== undefined && outcomes[it.index] === undefined) {
        outcomes[it.index] = { status: 'failed', conflict: true, error: new CommitConflictError(`commit ${it.key} carries records of ${landedFirst} again, which landed in snapshot ${landedAt.get(landedFirst)} after this batch looked; it is redone without them`) }
      }
    }
    const supersededHere = new Map<string, string>()
    for (const it of ready) if (outcomes[it.index] === undefined) for (const j of it.message!.supersedes ?? []) supersededHere.set(j, it.key)
    for (const it of ready) {
      const by = supersededHere.get(it.key)
      if (by !== undefined && outcomes[it.index] === undefined) outcomes[it.index] = superseded(it.key, `${by} carries its records again and lands in this fold`)
    }
    const appends = await this.checkAssignments(ready.filter((it) => it.message!.kind === 'APPEND' && outcomes[it.index] === undefined), latestId, outcomes)
    const compacts = ready.filter((it) => it.message!.kind === 'COMPACT' && outcomes[it.index] === undefined)

    // plan the COMPACT messages against the state as folded so far
    const groups: Item[][] = []
    if (compacts.length) {
      const scope = bucketsScope(table.view, compacts.flatMap((it) => [...bucketsOf(it.message!).values()]))
      const latest = latestId === 0 ? null : await table.snapshots.snapshot(latestId)
      // the live files and the index manifest at once: one round trip less per fold
      const [live, index] = await Promise.all([latest ? table.manifests.liveEntries(latest, scope) : [], indexOf(table.manifests, latest)])
      const state = new CommitState(live, index.filter((e) => scope.holds(e.partition, e.bucket)))
      // (an APPEND's manifests written ahead are not read: they add level-0 files, which no compaction check looks at)
      for (const it of appends) state.apply(it.message!)
      let group: Item[] = []
      let addedInGroup = new Set<string>()
      for (const it of compacts) {
        const m = it.message!
        try {
          checkCompactMessage(table.view, m, state)
        } catch (e) {
          if (!(e instanceof CommitConflictError)) throw e
          outcomes[it.index] = { status: 'failed', error: e, conflict: true }
          continue
        }
        if (m.deletes.some((d) => addedInGroup.has(fileIdentifier(d)))) {
          groups.push(group)
          group = []
          addedInGroup = new Set()
        }
        group.push(it)
        for (const a of m.adds) addedInGroup.add(fileIdentifier(a))
        state.apply(m)
      }
      if (group.length) groups.push(group)
    }

    // the latest snapshot as this fold knows it: each snapshot it creates builds on the last
    let at = latestId
    // while every snapshot of this fold landed on the one before without a lost race, the
    // table at `at` is the plan's state, which its checks ran against
    let exact = true
    if (appends.length) {
      try {
        const r = await this.commitGroup('APPEND', appends, latestId, latestId, latestId)
        at = r.snapshotId
        exact = r.retries === 0
        result.retries += r.retries
        result.snapshots.push({ id: r.snapshotId, kind: 'APPEND', messages: appends.length })
        for (const it of appends) outcomes[it.index] = { status: 'landed', snapshotId: r.snapshotId }
      } catch (e) {
        if (!(e instanceof CommitConflictError)) throw e
        // another committer landed one of these meanwhile: plan everything again
        return [...appends, ...groups.flat()]
      }
    }
    for (let g = 0; g < groups.length; g++) {
      try {
        const r = await this.commitGroup('COMPACT', groups[g], latestId, at, exact ? at : undefined)
        at = r.snapshotId
        exact &&= r.retries === 0
        result.retries += r.retries
        result.snapshots.push({ id: r.snapshotId, kind: 'COMPACT', messages: groups[g].length })
        for (const it of groups[g]) outcomes[it.index] = { status: 'landed', snapshotId: r.snapshotId }
      } catch (e) {
        if (!(e instanceof CommitConflictError)) throw e
        // the table changed under us (another committer): plan what is left again
        return groups.slice(g).flat()
      }
    }
    await this.deleteSpilled(ready.filter((it) => it.spilled && outcomes[it.index]?.status === 'landed'))
    return []
  }

  /**
   * Dynamic bucket mode: an APPEND that assigned new keys lands only on the HASH index it
   * assigned against, checked in arrival order against the index as folded so far, so of two
   * that assigned in one partition the first lands and the second is a conflict (its writer
   * assigns again: docs/design.md "Dynamic buckets"). Returns the APPENDs that passed.
   */
  private async checkAssignments(appends: Item[], latestId: number, outcomes: (FoldOutcome | undefined)[]): Promise<Item[]> {
    if (!appends.some((it) => it.message!.expectPartitionIndex?.length)) return appends
    const latest = latestId === 0 ? null : await this.table.snapshots.snapshot(latestId)
    const state = new CommitState([], (await indexOf(this.table.manifests, latest)).filter((e) => e.indexType === HASH_INDEX))
    const passed: Item[] = []
    for (const it of appends) {
      const m = it.message!
      try {
        foldAssignment(m, state)
      } catch (e) {
        if (!(e instanceof CommitConflictError)) throw e
        outcomes[it.index] = { status: 'failed', error: e, conflict: true }
        continue
      }
      passed.push(it)
    }
    return passed
  }

  /**
   * `plannedAt`: the latest snapshot when the group was planned (its duplicates checked);
   * `knownLatestId`: the latest snapshot as the fold knows it now; `checkedAt`: set when the
   * table at that snapshot is exactly the state the group's checks passed against, so a
   * first attempt on it need not read and check again.
   */
  private async commitGroup(kind: 'APPEND' | 'COMPACT', group: Item[], plannedAt: number, knownLatestId: number, checkedAt?: number): Promise<{ snapshotId: number; retries: number }> {
    const table = this.table
    const view = table.view
    const ms = group.map((it) => it.message!)
    let commitUser = ms[0].commitUser
    let commitIdentifier = ms[0].commitIdentifier
    let sidecar: Promise<void> | undefined
    // a commit that supersedes earlier attempts needs the sidecar to say so, even alone
    if (ms.length > 1 || ms.some((m) => m.supersedes?.length)) {
      commitUser = FOLDING_COMMIT_USER
      commitIdentifier = randomIdentifier()
      // written alongside the manifests; the snapshot that names it waits for it
      sidecar = table.store.put(foldedCommitsKey(commitIdentifier), foldedCommitsBody(ms))
      sidecar.catch(() => undefined)
    }
    const replacements = mergeReplacements(ms)
    const r = await table.committer.commit({
      kind,
      adds: ms.flatMap((m) => m.adds),
      deletes: ms.flatMap((m) => m.deletes),
      // every message's changelog files land in the folded snapshot's changelog manifests
      // (its changelogRecordCount their sum); a fold planned again re-folds the messages
      changelog: ms.flatMap((m) => m.changelog ?? []),
      // and their manifests written ahead, listed as they are (no APPEND check reads an APPEND's own adds)
      ...(ms.some((m) => m.writtenAhead) ? { writtenAhead: foldWrittenAhead(ms) } : {}),
      indexReplacements: replacements.length ? replacements : undefined,
      commitUser,
      commitIdentifier,
      knownLatestId,
      checkedAt,
      beforeCreate: sidecar,
      baseSnapshotId: Math.min(...ms.map((m) => m.builtAfterSnapshotId)),
      // a snapshot that landed since the plan (another committer's, the event source runs
      // two) may hold a copy of one of these messages (a sender's retry, a redelivery):
      // landing it again would apply it twice, so the batch is planned again instead
      recheck: async (latestId) => {
        if (latestId <= plannedAt) return
        const landed = await table.landed.landedBetween(plannedAt, latestId)
        for (const m of ms) {
          const at = landed.get(commitKeyOf(m)) ?? landed.get(supersededKeyOf(commitKeyOf(m))) ?? (m.supersedes ?? []).map((j) => landed.get(j)).find((x) => x !== undefined)
          if (at !== undefined) throw new CommitConflictError(`commit ${commitKeyOf(m)}, an attempt it supersedes, or one superseding it landed in snapshot ${at} while this fold was being made; planning again`)
        }
      },
      // on a lost race, the folded checks run again against the state that won
      checkConflicts:
        kind === 'COMPACT'
          ? (state: CommitState) => {
              for (const m of ms) {
                checkCompactMessage(table.view, m, state)
                state.apply(m)
              }
            }
          : ms.some((m) => m.expectPartitionIndex?.length)
            ? (state: CommitState) => {
                for (const m of ms) foldAssignment(m, state)
              }
            : undefined,
      partitionStats: (entries) => partitionStatsOf(view, entries),
      schemaId: view.schema.id,
      // the only other committer of the table is the second invocation the event source
      // runs: every race this one loses is a snapshot that one landed, so the table makes
      // progress and giving up would only return the messages for a visibility timeout.
      // Lost races are retried at a short pause, many times.
      maxRetries: Math.max(COMMITTER_MAX_RETRIES, view.options.commitMaxRetries),
      maxBackoffMs: COMMITTER_MAX_BACKOFF_MS,
      beforeSnapshotCreate: this.opts.beforeSnapshotCreate,
    })
    table.landed.remember(r.snapshotId, foldedKeys(ms))
    return r
  }

  private async deleteSpilled(items: Item[]): Promise<void> {
    for (const it of items) {
      try {
        await this.table.store.delete(it.spilled!)
      } catch {
        // a leftover body is harmless: a redelivered pointer is recognised by its identity
      }
    }
  }
}
