// Streaming starts: where a streaming read begins and what it hands over first, as Paimon's
// streaming source does it (core:table/source/AbstractDataTableScan.java createStartingScanner,
// core:table/source/DataTableStreamScan.java; the modes are api:CoreOptions.StartupMode).
// docs/design.md "Streaming starts" has the decisions; in short:
//
// - `latest-full` (`full`, and `default` without a snapshot id or timestamp): the full merged
//   state of the latest snapshot N, every live row as an insert (+I, whatever kind its last
//   write had; Paimon's kind there depends on its file layout), then what the snapshots after
//   N change.
// - `from-snapshot-full` with `scan.snapshot-id` N: the same from snapshot N (an expired N is
//   raised to the earliest retained snapshot, as Paimon does).
// - `from-snapshot` with `scan.snapshot-id` N: the changes of snapshot N and after, no full
//   state (raised to the earliest retained snapshot).
// - `latest`: the changes after the latest snapshot (from the first snapshot on an empty table).
// - `from-timestamp` with `scan.timestamp-millis` T: the changes of the earliest snapshot whose
//   time is >= T and after (Paimon's TimeTravelUtil.earlierThanTimeMills, plus one).
//
// The full state merges every level, level 0 included, with the deletion vectors applied: a
// batch read of a deletion-vector or first-row table skips level 0, but the changes that
// follow start after N, so rows waiting in level 0 at N would never be delivered. With a
// `lookup` changelog producer the changes that follow are its changelog, which a compaction
// writes when it lifts level 0, so the full state leaves level 0 out, as Paimon's does
// (DataTableStreamScan.tryFirstPlan); `full-compaction` reads the top level alone.

import { RefusedError, NotFoundError, StrataInputError } from '../errors.ts'
import { valueColumnsForMerge } from '../merge/engines.ts'
import { checkConsumerId, getConsumer, setConsumer } from '../handle/consumers.ts'
import type { TableStore } from '../handle/table.ts'
import { type KeyValue, RowKind, isRetract } from '../types.ts'
import { columnIndexes } from '../table/schema.ts'
import { type ChangeRow, type IncrementalContext, type IncrementalMode, type IncrementalPlan, INCREMENTAL_MODES, changelogProducerOf, planIncremental, readPlan } from './incremental.ts'
import { type KeyFilter, type ReadStats, type ScanContext, type Split, FileOpener, compileFilter, mergeSplit, orderFiles, planScan } from './table-read.ts'

/** The scan modes a streaming read takes (Paimon's `scan.mode` values it implements). */
export const SCAN_MODES = ['default', 'latest-full', 'full', 'latest', 'from-snapshot', 'from-snapshot-full', 'from-timestamp'] as const
export type ScanMode = (typeof SCAN_MODES)[number]
export type StartupMode = 'latest-full' | 'latest' | 'from-snapshot' | 'from-snapshot-full' | 'from-timestamp'

/** Paimon's scan modes and options Strata does not implement for a streaming read: refused, naming them. */
const REFUSED_SCAN_MODES = ['compacted-full', 'from-file-creation-time', 'from-creation-timestamp', 'incremental']
const REFUSED_SCAN_KEYS = ['scan.timestamp', 'scan.tag-name', 'scan.watermark', 'scan.version', 'scan.file-creation-time-millis', 'scan.creation-time-millis']

export interface StreamStartOptions {
  /** Paimon's `scan.mode`; default the table's option, else `default` */
  scanMode?: string
  /** Paimon's `scan.snapshot-id`; default the table's option */
  scanSnapshotId?: number
  /** Paimon's `scan.timestamp-millis`; default the table's option */
  scanTimestampMillis?: number
  /** how the changes after the start are read: auto (default), delta or changelog */
  mode?: IncrementalMode
  /** how the inputs are named in messages (the CLI's flags by default) */
  names?: StartNames
}

export interface StartNames {
  scanMode: string
  snapshotId: string
  timestampMillis: string
  mode: string
}

const CLI_NAMES: StartNames = { scanMode: '--scan-mode', snapshotId: '--scan-snapshot-id', timestampMillis: '--scan-timestamp-millis', mode: '--mode' }

/** Where a streaming read starts. */
export interface StreamStart {
  startupMode: StartupMode
  /** the snapshot whose full state comes first, or null for none */
  fullSnapshot: number | null
  /** the first snapshot whose changes follow (after the full state) */
  nextSnapshot: number
  /** how the changes are read */
  mode: 'delta' | 'changelog'
}

/** A start's inputs, read option over table option, checked as Paimon's SchemaValidation.validateStartupMode checks them. */
export interface ResolvedScan {
  startupMode: StartupMode
  snapshotId: number | null
  timestampMillis: number | null
  mode: 'delta' | 'changelog'
}

function integerOption(name: string, v: unknown, min: number): number {
  const n = typeof v === 'string' && /^\s*\d+\s*$/.test(v) ? Number(v) : v
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < min) throw new StrataInputError(`${name} ${JSON.stringify(v)}: expected an integer >= ${min}`)
  return n
}

/**
 * The scan mode, snapshot id and timestamp of a streaming read: each the read's option, else
 * the table's (Paimon reads `scan.*` from the table's options too, a read's dynamic options
 * over them), then `default` resolved as Paimon's CoreOptions.startupMode. Refused, naming the
 * input: an unknown or unimplemented mode, a mode without the option it needs, an option the
 * mode does not take.
 */
export function resolveScan(table: Pick<IncrementalContext, 'view'>, opts: StreamStartOptions): ResolvedScan {
  const names = opts.names ?? CLI_NAMES
  const raw = table.view.options.raw
  const fromTable = (key: string) => raw[key] !== undefined
  const modeName = opts.scanMode !== undefined ? names.scanMode : "table option 'scan.mode'"
  const text = (opts.scanMode ?? raw['scan.mode'] ?? 'default').trim().toLowerCase()
  if (REFUSED_SCAN_MODES.includes(text)) {
    throw new RefusedError(`${modeName} ${JSON.stringify(text)}: Strata's streaming reads do not implement this Paimon scan mode; expected one of ${SCAN_MODES.join(', ')}`)
  }
  if (!(SCAN_MODES as readonly string[]).includes(text)) throw new StrataInputError(`${modeName} ${JSON.stringify(text)}: expected one of ${SCAN_MODES.join(', ')}`)
  for (const key of REFUSED_SCAN_KEYS) {
    if (fromTable(key)) throw new RefusedError(`table option '${key}' ${JSON.stringify(raw[key])}: Strata's streaming reads do not implement it; expected scan.snapshot-id or scan.timestamp-millis, or reset the option`)
  }
  const snapshotName = opts.scanSnapshotId !== undefined ? names.snapshotId : "table option 'scan.snapshot-id'"
  const timeName = opts.scanTimestampMillis !== undefined ? names.timestampMillis : "table option 'scan.timestamp-millis'"
  const snapshotId = opts.scanSnapshotId ?? raw['scan.snapshot-id']
  const timestamp = opts.scanTimestampMillis ?? raw['scan.timestamp-millis']
  const sid = snapshotId === undefined ? null : integerOption(snapshotName, snapshotId, 1)
  const ts = timestamp === undefined ? null : integerOption(timeName, timestamp, 0)
  let startupMode: StartupMode
  if (text === 'default') startupMode = ts !== null ? 'from-timestamp' : sid !== null ? 'from-snapshot' : 'latest-full'
  else startupMode = text === 'full' ? 'latest-full' : (text as StartupMode)
  const needs = (name: string, present: boolean) => {
    if (!present) throw new StrataInputError(`${modeName} ${startupMode}: expected ${name} (Paimon's ${name === names.snapshotId ? 'scan.snapshot-id' : 'scan.timestamp-millis'}) with it`)
  }
  const refuses = (name: string, present: boolean) => {
    if (present) throw new StrataInputError(`${name}: not with scan mode ${startupMode}, which does not read it (Paimon refuses it too); expected it only with ${name.includes('snapshot') ? 'from-snapshot or from-snapshot-full' : 'from-timestamp'}`)
  }
  if (startupMode === 'from-snapshot' || startupMode === 'from-snapshot-full') {
    needs(names.snapshotId, sid !== null)
    refuses(timeName, ts !== null)
  } else if (startupMode === 'from-timestamp') {
    needs(names.timestampMillis, ts !== null)
    refuses(snapshotName, sid !== null)
  } else {
    refuses(snapshotName, sid !== null)
    refuses(timeName, ts !== null)
  }
  return { startupMode, snapshotId: sid, timestampMillis: ts, mode: followMode(table, opts.mode, names.mode) }
}

/** The mode of the changes after the start: Paimon's follow-up scanner reads the changelog when the table has a producer, else the delta. */
function followMode(table: Pick<IncrementalContext, 'view'>, requested: IncrementalMode | undefined, name: string): 'delta' | 'changelog' {
  const mode = requested ?? 'auto'
  if (!INCREMENTAL_MODES.includes(mode)) throw new StrataInputError(`${name} ${JSON.stringify(mode)}: expected one of ${INCREMENTAL_MODES.join(', ')}`)
  const producer = changelogProducerOf(table)
  if (mode === 'changelog' && producer === 'none') {
    throw new StrataInputError(`${name} changelog: the table has changelog-producer 'none', so its snapshots name no changelog files; expected ${name} delta (or auto)`)
  }
  return mode === 'auto' ? (producer === 'none' ? 'delta' : 'changelog') : mode
}

/**
 * The snapshot before the earliest one whose time is at or after `millis` (Paimon's
 * TimeTravelUtil.earlierThanTimeMills): the latest snapshot older than `millis`, or the
 * earliest minus one when none is; null on an empty table. Snapshot times rise with their ids
 * as far as the committers' clocks agree (a commit's time is taken after the one before it
 * landed; nothing checks it), so this bisects (docs/design.md "Streaming starts").
 */
export async function earlierThanTimeMillis(table: Pick<IncrementalContext, 'snapshots'>, millis: number): Promise<number | null> {
  const latest = await table.snapshots.latestId()
  if (latest === 0) return null
  let lo = await table.snapshots.earliestId()
  const timeOf = async (id: number) => {
    const s = await table.snapshots.snapshot(id)
    if (!s) throw new NotFoundError(`snapshot ${id}: expired while the start of a from-timestamp read was looked for; start again`)
    return s.timeMillis
  }
  if ((await timeOf(lo)) >= millis) return lo - 1
  let hi = latest
  while (lo < hi) {
    const mid = Math.floor((lo + hi + 1) / 2)
    if ((await timeOf(mid)) < millis) lo = mid
    else hi = mid - 1
  }
  return lo
}

/**
 * Where the resolved scan starts, against the table's snapshots now. Null when the table has
 * no snapshot yet and the mode needs one to start from (`latest-full`, `from-snapshot-full`,
 * `from-snapshot`, `from-timestamp`): a follower asks again at its next poll, as Paimon's
 * starting scanner does. `latest` on an empty table starts at snapshot 1 (everything).
 */
export async function locateStart(table: Pick<IncrementalContext, 'snapshots'>, scan: ResolvedScan, names: StartNames = CLI_NAMES): Promise<StreamStart | null> {
  const latest = await table.snapshots.latestId()
  const at = (fullSnapshot: number | null, nextSnapshot: number): StreamStart => ({ startupMode: scan.startupMode, fullSnapshot, nextSnapshot, mode: scan.mode })
  if (scan.startupMode === 'latest') return at(null, latest + 1)
  if (latest === 0) return null
  const earliest = await table.snapshots.earliestId()
  switch (scan.startupMode) {
    case 'latest-full':
      return at(latest, latest + 1)
    case 'from-snapshot-full': {
      const id = Math.max(scan.snapshotId!, earliest)
      if (id > latest) throw new NotFoundError(`${names.snapshotId} ${scan.snapshotId}: no such snapshot to read in full (retained snapshots: ${earliest}..${latest})`)
      return at(id, id + 1)
    }
    case 'from-snapshot':
      return at(null, Math.max(scan.snapshotId!, earliest))
    case 'from-timestamp':
      return at(null, (await earlierThanTimeMillis(table, scan.timestampMillis!))! + 1)
  }
}

/** The levels the full state reads, for the mode of the changes that follow (DataTableStreamScan.tryFirstPlan). */
export function fullStateLevels(table: Pick<IncrementalContext, 'view'>, mode: 'delta' | 'changelog'): (level: number) => boolean {
  const producer = changelogProducerOf(table)
  if (mode === 'changelog' && producer === 'lookup') return (level) => level > 0
  if (mode === 'changelog' && producer === 'full-compaction') {
    const top = table.view.options.numLevels - 1
    return (level) => level === top
  }
  return () => true
}

export interface FullStateOptions {
  columns?: string[]
  filter?: KeyFilter
  /** which levels to read (fullStateLevels); default all */
  levels?: (level: number) => boolean
  stats?: ReadStats
}

/** A bucket of a full state: its split (with its index in the plan) and the merged live records, filtered. */
export interface FullStateBatch {
  split: Split
  index: number
  batch: KeyValue[]
}

/**
 * The full merged state of snapshot `snapshotId`, split by split from `fromSplit` on: every
 * live key once, its merged record. Every bucket's files of the chosen levels (level 0 too)
 * are merged by key with their deletion vectors applied, oldest first as a merge-on-read
 * takes them (table-read.ts orderFiles). The splits and their order are planScan's, so a
 * page cursor's (split, offset) finds the same row again.
 */
export async function* fullStateRecords(table: ScanContext, snapshotId: number, opts: FullStateOptions & { fromSplit?: number } = {}): AsyncGenerator<FullStateBatch> {
  const plan = await planScan(table, { snapshotId, columns: opts.columns, filter: opts.filter })
  const view = table.view
  const filter = compileFilter(view, opts.filter)
  const levels = opts.levels ?? (() => true)
  const valueColumns = valueColumnsForMerge(table.mergeConfig, [...plan.columns.map((i) => view.fields[i].name), ...Object.keys(opts.filter ?? {})])
  const from = opts.fromSplit ?? 0
  // every chosen level merged, oldest first, the files opened ahead across splits as a table read's
  const opener = new FileOpener(table, plan.splits.slice(from), plan.dvIndex, opts.stats, (split) => orderFiles(split.files.filter((e) => levels(e.file.level))))
  for (let index = from; index < plan.splits.length; index++) {
    const split = plan.splits[index]
    if (opener.files(split).length === 0) continue
    for await (const batch of mergeSplit(table, split, valueColumns, opener, opts.stats)) {
      const live = batch.filter((kv) => !isRetract(kv.kind) && filter.matches(kv.value))
      if (live.length) yield { split, index, batch: live }
    }
  }
}

/**
 * The full merged state of snapshot `snapshotId` as changes: every live key once as +I,
 * projected to `columns` (fullStateRecords).
 */
export async function* readFullState(table: ScanContext, snapshotId: number, opts: FullStateOptions = {}): AsyncGenerator<ChangeRow[]> {
  const columns = columnIndexes(table.view, opts.columns)
  for await (const { batch } of fullStateRecords(table, snapshotId, opts)) yield batch.map((kv) => ({ kind: RowKind.INSERT, row: columns.map((i) => kv.value[i]) }))
}

/** What a streaming read does next: a start's full state, or the changes of a range of snapshots. */
export interface StreamStep {
  /** the snapshot whose full state this step hands over first, or null */
  fullSnapshot: number | null
  /** the changes of (from, to] follow; from = to when there are none */
  from: number
  to: number
  mode: 'delta' | 'changelog'
  /** the consumer's next snapshot once every row of the step is taken; null while the read has no start (an empty table) */
  nextSnapshot: number | null
  /** the range's files, planned (and refused) before the step is handed over */
  plan: IncrementalPlan | null
}

export interface StreamReadOptions extends StreamStartOptions {
  columns?: string[]
  filter?: KeyFilter
  stats?: ReadStats
  /** the last snapshot of a bounded read's changes; default the latest */
  toSnapshot?: number
  /** how messages name the start of the range (planIncremental's names.from) */
  fromName?: string
  /** how messages name toSnapshot */
  toName?: string
}

/**
 * The step of a start: the full state (if the start has one) and the changes after it up to
 * the latest snapshot now, or up to `toSnapshot`. Without changes when the start is after the
 * latest snapshot (nothing new yet).
 */
export async function planStep(table: IncrementalContext, start: StreamStart, opts: StreamReadOptions = {}): Promise<StreamStep> {
  const from = start.fullSnapshot ?? start.nextSnapshot - 1
  const toName = opts.toName ?? '--to-snapshot'
  if (opts.toSnapshot !== undefined && opts.toSnapshot < from) {
    throw new StrataInputError(`${toName} ${opts.toSnapshot}: before the start of the read (${start.fullSnapshot !== null ? `the full state of snapshot ${from}` : `changes after snapshot ${from}`}); expected ${toName} >= ${from}`)
  }
  const latest = await table.snapshots.latestId()
  const to = Math.min(opts.toSnapshot ?? latest, latest)
  if (opts.toSnapshot !== undefined && opts.toSnapshot > latest) throw new NotFoundError(`${toName} ${opts.toSnapshot}: no such snapshot (the latest is ${latest})`)
  const base = { fullSnapshot: start.fullSnapshot, from, mode: start.mode }
  if (from >= to) return { ...base, to: from, nextSnapshot: from + 1, plan: null }
  const names = { from: opts.fromName ?? 'the read from snapshot', to: toName, mode: opts.names?.mode ?? CLI_NAMES.mode }
  const plan = await planIncremental(table, { fromSnapshot: from, toSnapshot: to, mode: start.mode, columns: opts.columns, filter: opts.filter, names })
  return { ...base, to: plan.to, nextSnapshot: plan.to + 1, plan }
}

/** The rows of a step: the full state first (if any), then the changes, each with its kind. */
export async function* readStep(table: IncrementalContext & ScanContext, step: StreamStep, opts: Pick<StreamReadOptions, 'columns' | 'filter' | 'stats'> = {}): AsyncGenerator<ChangeRow[]> {
  if (step.fullSnapshot !== null) {
    yield* readFullState(table, step.fullSnapshot, { columns: opts.columns, filter: opts.filter, levels: fullStateLevels(table, step.mode), stats: opts.stats })
  }
  if (step.plan) yield* readPlan(table, step.plan, { filter: opts.filter, stats: opts.stats })
}

/** The step of a read that has no start yet: the table has no snapshot to start from. */
export const notStarted = (mode: 'delta' | 'changelog'): StreamStep => ({ fullSnapshot: null, from: 0, to: 0, mode, nextSnapshot: null, plan: null })

/**
 * A streaming read, step by step: the start (located again at each poll while the table has
 * no snapshot to start from), then each time the latest snapshot moves, the changes up to it.
 * Without `waitForSnapshot` it is a bounded read: one step, up to the latest snapshot (or
 * `toSnapshot`). With it, a follower: `waitForSnapshot` is called whenever there is nothing
 * new, and resolves true to poll again, false to end. The caller drives time through it (the
 * CLI's `--follow` sleeps its discovery interval; tests write and compact, then return), so
 * nothing here reads a clock (docs/design.md "Streaming starts"). Each step is planned
 * before it is yielded, the next one only once the caller has taken it.
 */
export async function* streamSteps(
  table: IncrementalContext & ScanContext,
  scan: ResolvedScan,
  opts: StreamReadOptions & { start?: StreamStart | null; waitForSnapshot?: () => Promise<boolean> } = {},
): AsyncGenerator<StreamStep> {
  const names = opts.names ?? CLI_NAMES
  let start = opts.start === undefined ? await locateStart(table, scan, names) : opts.start
  const wait = opts.waitForSnapshot
  if (!wait) {
    yield start === null ? notStarted(scan.mode) : await planStep(table, start, opts)
    return
  }
  for (;;) {
    if (start === null) start = await locateStart(table, scan, names)
    if (start !== null) {
      const step = await planStep(table, start, { ...opts, toSnapshot: undefined })
      if (step.fullSnapshot !== null || step.plan !== null) {
        yield step
        start = { ...start, fullSnapshot: null, nextSnapshot: step.nextSnapshot! }
        continue
      }
    }
    if (!(await wait())) return
  }
}

/** Whether a read asks for a streaming start: a scan option of its own, or the table's `scan.mode` (when the read names no range of its own). */
export function asksForStreamingStart(table: Pick<IncrementalContext, 'view'>, opts: StreamStartOptions, namesARange: boolean): boolean {
  if (opts.scanMode !== undefined || opts.scanSnapshotId !== undefined || opts.scanTimestampMillis !== undefined) return true
  return !namesARange && table.view.options.raw['scan.mode'] !== undefined
}

/**
 * The start of a streaming read: the consumer's progress when it has some (changes only),
 * else where the scan starts (null while the table has no snapshot to start from).
 */
export async function startOfRead(table: IncrementalContext & TableStore, scan: ResolvedScan, consumerId?: string, names: StartNames = CLI_NAMES): Promise<{ start: StreamStart | null; fromProgress: boolean }> {
  if (consumerId !== undefined) {
    const progress = await consumerProgressStart(table, consumerId, scan, table.view.options.consumerIgnoreProgress)
    if (progress) return { start: progress, fromProgress: true }
  }
  return { start: await locateStart(table, scan, names), fromProgress: false }
}

/**
 * Where a consumer's streaming read starts: its recorded progress, as changes only (Paimon's
 * ContinuousFromSnapshotStartingScanner at the consumer's nextSnapshot), unless it has none
 * or the table has `consumer.ignore-progress`; then undefined, and the scan mode decides.
 */
export async function consumerProgressStart(table: TableStore, consumerId: string, scan: ResolvedScan, ignoreProgress: boolean): Promise<StreamStart | undefined> {
  checkConsumerId(consumerId)
  const next = await getConsumer(table, consumerId)
  if (next === null || ignoreProgress) return undefined
  return { startupMode: scan.startupMode, fullSnapshot: null, nextSnapshot: next, mode: scan.mode }
}

/** Records that the consumer has taken every row of the step (its nextSnapshot); nothing for a read with no start yet, nor when the progress would not move. */
export async function recordStep(table: TableStore, consumerId: string, step: StreamStep): Promise<number | null> {
  if (step.nextSnapshot === null) return null
  if ((await getConsumer(table, consumerId)) === step.nextSnapshot) return step.nextSnapshot
  await setConsumer(table, consumerId, step.nextSnapshot)
  return step.nextSnapshot
}
