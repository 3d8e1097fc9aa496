// Compaction across a table: every (partition, bucket) that needs it, or the ones named,
// landed together in one snapshot.

import { deserializeBinaryRow } from '../format/binary-row.ts'
import { bucketIdentifier } from '../manifest/identifiers.ts'
import { valueFromJson } from '../table/json-values.ts'
import { DYNAMIC_BUCKET, DYNAMIC_UNBOUNDED_MAX_BUCKETS } from '../table/options.ts'
import type { Table } from '../handle/table.ts'
import type { Row } from '../types.ts'
import { CommitConflictError, CommitFailedError, StrataInputError } from '../errors.ts'
import type { CompactBucketResult } from './compact/context.ts'
import { compactRound } from './compact/fold-round.ts'
import type { SkipReason } from './compact/plan.ts'
import type { MergePathRequest } from './columnar-merge.ts'
import { POSTPONE_BUCKET } from '../format/partition-path.ts'
import { type PostponeResult, asCompactBucketResult, compactPostponed } from './postpone.ts'

export interface CompactTableOptions {
  /** partition values by key, as in `--partition dt=2024-05-01` */
  partition?: Record<string, string>
  bucket?: number
  full?: boolean
  /** the merge path of every job (default: as the engine chooses) */
  mergePath?: MergePathRequest
  /** each job's result once its round's snapshot landed, and each bucket that needed nothing */
  onBucket?: (partition: string, bucket: number, result: CompactBucketResult) => void
  /** test hook: runs in each round once every job has written its output, before the commit */
  beforeCommit?: () => Promise<void> | void
}

/** Parses `k=v,k2=v2` into partition values, validated against the partition keys. */
export function parsePartitionSpec(table: Table, spec: string): Record<string, string> {
  const out: Record<string, string> = {}
  for (const part of spec.split(',').filter(Boolean)) {
    const i = part.indexOf('=')
    if (i <= 0) throw new StrataInputError(`--partition: expected k=v[,k=v…], got ${JSON.stringify(spec)}`)
    out[part.slice(0, i)] = part.slice(i + 1)
  }
  return checkPartitionKeys(table, out, '--partition')
}

/** `bucket` itself, once it is a bucket number of the table (`what` names the input, `given` as it was given). */
export function checkBucket(table: Table, bucket: number, what: string, given: unknown = bucket): number {
  const count = table.view.options.bucket
  if (count === POSTPONE_BUCKET) throw new StrataInputError(`${what}: ${JSON.stringify(given)} names a bucket, but the table is in postpone bucket mode ('bucket' -2), whose partitions each have their own bucket count; expected no bucket (compact whole partitions)`)
  // dynamic bucket mode: a partition has the buckets its keys were assigned to, at most 32767
  const top = count === DYNAMIC_BUCKET ? DYNAMIC_UNBOUNDED_MAX_BUCKETS : count
  if (!Number.isInteger(bucket) || bucket < 0 || bucket >= top) throw new StrataInputError(`${what}: expected a bucket number in [0, ${top - 1}], got ${JSON.stringify(given)}`)
  return bucket
}

/** `spec` itself, once every key in it is a partition key of the table (`what` names the input). */
export function checkPartitionKeys(table: Table, spec: Record<string, string>, what: string): Record<string, string> {
  const keys = table.view.partitionFields.map((f) => f.name)
  for (const k of Object.keys(spec)) {
    if (!keys.includes(k)) throw new StrataInputError(`${what}: '${k}' is not a partition key (partition keys: ${keys.join(', ') || 'none'})`)
  }
  return spec
}

function partitionBytesMatching(table: Table, spec: Record<string, string>): (values: Row) => boolean {
  const fields = table.view.partitionFields
  const want = fields.map((f) => (f.name in spec ? valueFromJson(f, coerce(f.type.root, spec[f.name]), '--partition') : undefined))
  return (values) => want.every((w, i) => w === undefined || String(w) === String(values[i]))
}

function coerce(root: string, text: string): unknown {
  if (['TINYINT', 'SMALLINT', 'INT', 'FLOAT', 'DOUBLE'].includes(root)) return Number(text)
  if (root === 'BOOLEAN') return text === 'true'
  return text
}

/** One entry of a table-wide compaction's result: a job that compacted, or a bucket that needed none (`skipped` says why). */
export interface TableCompactionJob extends CompactBucketResult {
  /** the partition's values joined by '/', as `onBucket` names it */
  partition: string
  bucket: number
}

/** Fresh-state retries of a bucket whose commit conflicted (its inputs changed underneath), as the compactor does. */
export const MAX_CONFLICT_RETRIES = 3

/** Jobs merging at once for `compaction.task-threads` -1 (one per active bucket), as the compactor's batch does. */
const MERGES_AT_ONCE_UNBOUNDED = 4

/** Jobs merging at once: `compaction.task-threads`, or a few for -1. */
function mergesAtOnce(table: Table): number {
  const n = table.view.options.compactionTaskThreads
  return n === -1 ? MERGES_AT_ONCE_UNBOUNDED : Math.max(1, n)
}

/**
 * Compacts every (partition, bucket) that needs it, or the ones named, landing all their
 * commits in one COMPACT snapshot (lib/lsm/compact/fold-round.ts). A bucket whose job was
 * capped (`needsMore`) goes again in a second round, and one whose commit conflicted is redone
 * from fresh state: each round lands at most one snapshot. Returns every job that compacted
 * and every bucket that needed nothing, with the planner's reason; no snapshot when nothing
 * changed. A job that fails otherwise (a refusal, a store error) fails the call once its
 * round's snapshot, holding the other buckets, has landed.
 */
export async function compactTable(table: Table, opts: CompactTableOptions = {}): Promise<TableCompactionJob[]> {
  if (opts.partition) checkPartitionKeys(table, opts.partition, 'partition')
  if (opts.bucket !== undefined) checkBucket(table, opts.bucket, 'bucket')
  const partTypes = table.view.partitionFields.map((f) => f.type)
  const matches = opts.partition ? partitionBytesMatching(table, opts.partition) : () => true
  const results: TableCompactionJob[] = []
  // postpone bucket mode: the postponed rows go to their buckets first, which are then compacted below
  if (table.view.options.bucket === POSTPONE_BUCKET && opts.bucket === undefined) results.push(...(await compactPostponedPartitions(table, matches, opts)))
  const snapshot = await table.snapshots.latest()
  if (!snapshot) return []
  const buckets = new Map<string, { partition: Uint8Array; bucket: number; values: Row }>()
  for (const e of await table.manifests.liveEntries(snapshot)) {
    if ((opts.bucket !== undefined && e.bucket !== opts.bucket) || e.bucket < 0) continue
    const id = bucketIdentifier(e.partition, e.bucket)
    if (buckets.has(id)) continue
    const values = deserializeBinaryRow(partTypes, e.partition)
    if (!matches(values)) continue
    buckets.set(id, { partition: e.partition, bucket: e.bucket, values })
  }
  let todo = [...buckets.values()].map((b) => ({ ...b, round: 0, conflicts: 0 }))
  while (todo.length > 0) {
    const outcomes = await compactRound(table, todo, { full: opts.full, mergePath: opts.mergePath, mergesAtOnce: mergesAtOnce(table), beforeCommit: opts.beforeCommit })
    const again: typeof todo = []
    let failure: unknown = undefined
    outcomes.forEach((o, i) => {
      const b = todo[i]
      if ('error' in o) {
        const retry = (o.error instanceof CommitConflictError || o.error instanceof CommitFailedError) && b.conflicts < MAX_CONFLICT_RETRIES
        if (retry) again.push({ ...b, round: b.round + 1, conflicts: b.conflicts + 1 })
        else failure ??= o.error
        return
      }
      // a later round that found the rest already done adds nothing to report
      if (o.result.snapshotId === null && b.round > 0 && b.conflicts === 0) return
      const partition = b.values.join('/')
      opts.onBucket?.(partition, b.bucket, o.result)
      results.push({ ...o.result, partition, bucket: b.bucket })
      // a capped job leaves work behind: the bucket goes again until it is done
      if (o.result.needsMore && o.result.snapshotId !== null) again.push({ ...b, round: b.round + 1 })
    })
    if (failure !== undefined) throw failure
    todo = again
  }
  return results
}

/**
 * Postpone bucket mode: every matching partition's postponed files into its buckets, one
 * postpone compaction after another (a capped one goes again), each its own snapshot.
 */
async function compactPostponedPartitions(table: Table, matches: (values: Row) => boolean, opts: CompactTableOptions): Promise<TableCompactionJob[]> {
  const snapshot = await table.snapshots.latest()
  if (!snapshot) return []
  const partTypes = table.view.partitionFields.map((f) => f.type)
  const partitions = new Map<string, { bytes: Uint8Array; values: Row }>()
  for (const e of await table.manifests.liveEntries(snapshot)) {
    if (e.bucket !== POSTPONE_BUCKET) continue
    const id = bucketIdentifier(e.partition, e.bucket)
    const values = deserializeBinaryRow(partTypes, e.partition)
    if (!partitions.has(id) && matches(values)) partitions.set(id, { bytes: e.partition, values })
  }
  const out: TableCompactionJob[] = []
  for (const p of partitions.values()) {
    for (let conflicts = 0; ; ) {
      let r: PostponeResult
      try {
        r = await compactPostponed(table, { partition: p.bytes, beforeCommit: opts.beforeCommit })
      } catch (e) {
        if (!(e instanceof CommitConflictError || e instanceof CommitFailedError) || ++conflicts > MAX_CONFLICT_RETRIES) throw e
        continue
      }
      if (r.snapshotId === null) break
      const result = asCompactBucketResult(r)
      const partition = p.values.join('/')
      opts.onBucket?.(partition, POSTPONE_BUCKET, result)
      out.push({ ...result, partition, bucket: POSTPONE_BUCKET })
      if (!r.needsMore) break
    }
  }
  return out
}

/**
 * How many buckets were skipped for each reason, in words: "12 buckets below the trigger
 * (num-sorted-run.compaction-trigger 5; most runs in a bucket: 3)"; `brief` leaves out the
 * parentheses.
 */
export function describeSkipped(skipped: SkipReason[], brief = false): string {
  const byKind = new Map<SkipReason['kind'], SkipReason[]>()
  for (const r of skipped) byKind.set(r.kind, [...(byKind.get(r.kind) ?? []), r])
  const mostRuns = (rs: SkipReason[]) => Math.max(...rs.map((r) => ('sortedRuns' in r ? r.sortedRuns : 0)))
  const triggerOf = (rs: SkipReason[]) => (rs[0] as { trigger: number }).trigger
  const parts: string[] = []
  for (const [kind, rs] of byKind) {
    const n = `${rs.length} bucket${rs.length === 1 ? '' : 's'}`
    const [what, detail] = ((): [string, string?] => {
      switch (kind) {
        case 'below-trigger':
          return ['below the trigger', `num-sorted-run.compaction-trigger ${triggerOf(rs)}; most runs in a bucket: ${mostRuns(rs)}`]
        case 'no-level-0':
          return ['with no level-0 file', `with deletion vectors a level-0 file makes compaction due; below num-sorted-run.compaction-trigger ${triggerOf(rs)}, most runs in a bucket: ${mostRuns(rs)}`]
        case 'size-ratio':
          return ['at the trigger whose run sizes call for no merge yet', `num-sorted-run.compaction-trigger ${triggerOf(rs)}, compaction.size-ratio ${(rs[0] as { sizeRatio: number }).sizeRatio}`]
        case 'one-run':
          return ['already one sorted run']
        case 'one-top-run':
          return ['already one run at the top level']
        case 'no-files':
          return ['with no files']
        default:
          return ['whose pick would leave its one file where it is']
      }
    })()
    parts.push(`${n} ${what}${detail && !brief ? ` (${detail})` : ''}`)
  }
  return parts.join(', ')
}

/** The skipped buckets' reasons (entries with `skipped`) of a compactTable result. */
export function skippedOf(results: TableCompactionJob[]): SkipReason[] {
  return results.flatMap((r) => (r.skipped ? [r.skipped] : []))
}
