// Apache Iceberg's own Java library (interop-iceberg/, Iceberg 1.12.0) reads the Iceberg
// metadata Strata writes beside a table (`metadata.iceberg.storage` table-location, one
// table hadoop-catalog), and its generic reader must return exactly Strata's rows:
// - deletion vectors off (v2, and v3 first-row): Iceberg sees the top level only, so after a
//   full compaction its read equals Strata's, and at every snapshot between it shows what the
//   last full compaction left; every merge engine, partitioned and not.
// - v3 with 64-bit deletion vectors: Iceberg sees every level above 0 with Strata's deletion
//   vectors handed over, so at every snapshot (writes and compactions, none full) Iceberg's
//   read equals Strata's read of that snapshot, which skips level 0 too.
// - after expirations, orphan removal and alters (add, rename, drop, widen a column); every
//   metadata version left in the directory opens, and version-hint.text names the newest.
// Side by side, Paimon 1.4.2 (interop/) writes its own Iceberg metadata for the same writes,
// compactions, expirations and alters; Iceberg's reads of both tables are equal, and so is the
// metadata's shape (schema with field ids, partition spec, rows per partition). Paimon's v3
// metadata lacks `next-row-id`, which Iceberg refuses; a cell records that refusal, and the
// v3 comparison reads a copy with the field added (interop-iceberg/README.md says why).
// Where the two differ in what a reader sees, a `DIVERGENT:` cell asserts the difference.
// All tables are built first (Strata's while a JVM writes Paimon's); then one JVM reads them
// all. DuckDB's iceberg_scan reads one table where its extension loads. Without Java or Maven
// the file is skipped with one line, except under CI, where it fails.

import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DuckDBInstance } from '@duckdb/node-api'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { NotFoundError, type ObjectStore, SnapshotExpiredError, createTable, openTable, type SchemaChange, type StrataTable } from '../lib/api/index.ts'
import { JAR as PAIMON_JAR, buildHarness, byKey, describeWithJava, jarBatch, parseRows, writeJsonLines, type PaimonResult } from './helpers/interop.ts'
import {
  ICEBERG_RUN_COMMAND,
  type IcebergMeta,
  type IcebergResult,
  buildIcebergHarness,
  currentMetadataFile,
  icebergBatch,
  icebergRendering,
  missingTools,
  withNextRowId,
} from './helpers/iceberg-java.ts'

type Rec = Record<string, unknown>
type Engine = 'deduplicate' | 'partial-update' | 'aggregation' | 'first-row'

// ---- the data: one deterministic history per merge engine ----

const pick = <T>(n: number, values: T[]): T => values[n % values.length]
const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k)

const FIELDS: [string, string][] = [
  ['dt', 'STRING'],
  ['id', 'BIGINT'],
  ['i', 'INT'],
  ['s', 'STRING'],
  ['d', 'DOUBLE'],
  ['f', 'FLOAT'],
  ['t', 'TINYINT'],
  ['dec', 'DECIMAL(10, 2)'],
  ['ts', 'TIMESTAMP(3)'],
  ['ts6', 'TIMESTAMP(6)'],
  ['day', 'DATE'],
  ['bin', 'BYTES'],
  ['b', 'BOOLEAN'],
  ['sm', 'SMALLINT'],
  ['c', 'CHAR(3)'],
  ['vc', 'VARCHAR(10)'],
  ['b4', 'BINARY(4)'],
  ['vb', 'VARBINARY(8)'],
  ['big', 'DECIMAL(38, 10)'],
  ['pd', 'DATE'],
  ['pi', 'INT'],
]

/** Row `id` at version `v`: edge values of every type; the columns an engine sums stay small. */
function row(id: number, v: number): Rec {
  const n = id + 7 * v
  return {
    dt: id % 3 === 0 ? '2024-05-02' : '2024-05-01',
    id,
    i: pick(n, [n * 7 - 100, null, 0, 123456]),
    s: pick(n + 1, [`s${id}v${v}`, '', 'héllo ✓ 𝄞 wide', null]),
    d: pick(n + 2, [n / 3, -0, 1e300, null, 'NaN', '-Infinity']),
    f: pick(n + 3, [n / 7, null, -1.5, 3.4e38]),
    t: pick(n, [-128, 127, n % 100, null]),
    dec: pick(n + 3, [`${n}.25`, '-12.90', null, '0.01']),
    ts: pick(n + 4, ['2024-05-01 12:34:56.789', '1969-12-31 23:59:59.999', null, '1900-01-01 00:00:00.000']),
    ts6: pick(n + 5, ['2024-05-01 12:34:56.123456', '1970-01-01 00:00:00.000001', null, '2262-04-11 23:47:16.854775']),
    day: pick(n + 6, ['2024-02-29', '1969-12-31', '0001-01-01', null, '9999-12-31']),
    bin: pick(n + 1, [Buffer.from([0, 255, id & 255, v]).toString('base64'), '', null]),
    b: pick(n, [true, false, null]),
    sm: pick(n + 2, [-32768, 32767, n, null]),
    c: pick(n + 1, ['abc', 'x✓z', null]),
    vc: pick(n + 3, ['', 'ten chars!', `v${n}`, null]),
    b4: pick(n, [Buffer.from([1, 2, 3, id & 255]).toString('base64'), Buffer.from([0, 0, 0, 0]).toString('base64'), null]),
    vb: pick(n + 2, [Buffer.from([255, v]).toString('base64'), '', null]),
    big: pick(n + 4, ['1234567890123456789012345678.0123456789', `-${n}.0000000001`, null]),
    // the second table family's partition: a date and an int, never null
    pd: id % 2 === 0 ? '1969-12-31' : '2024-02-29',
    pi: (id % 3) - 1,
  }
}

const del = (id: number): Rec => ({ dt: row(id, 0).dt, id, pd: row(id, 0).pd, pi: row(id, 0).pi, _kind: '-D' })
/** A partial-update row: the key and the named columns; the others stay as they were. */
const partial = (id: number, v: number, columns: string[]): Rec => {
  const full = row(id, v)
  return Object.fromEntries(['dt', 'id', ...columns].map((c) => [c, full[c]]))
}

/** Three writes an engine takes (Paimon refuses retractions partial-update, aggregation and first-row cannot merge). */
function writes(engine: Engine): Rec[][] {
  switch (engine) {
    case 'deduplicate':
      return [range(0, 12).map((id) => row(id, 0)), [...range(4, 14).map((id) => row(id, 1)), del(0), del(1)], [...[2, 3, 6].map((id) => row(id, 2)), del(5), { ...row(7, 2), _kind: '+U' }]]
    case 'partial-update':
      return [range(0, 12).map((id) => row(id, 0)), range(4, 14).map((id) => partial(id, 1, ['i', 's'])), [2, 3, 6, 7].map((id) => partial(id, 2, ['d', 'dec', 'ts']))]
    default:
      return [range(0, 12).map((id) => row(id, 0)), range(4, 14).map((id) => row(id, 1)), [2, 3, 6].map((id) => row(id, 2))]
  }
}

const ENGINE_OPTIONS: Record<Engine, Record<string, string>> = {
  deduplicate: {},
  'partial-update': { 'merge-engine': 'partial-update' },
  aggregation: { 'merge-engine': 'aggregation', 'fields.i.aggregate-function': 'sum', 'fields.dec.aggregate-function': 'sum', 'fields.ts.aggregate-function': 'max' },
  'first-row': { 'merge-engine': 'first-row' },
}

const V2 = { 'metadata.iceberg.storage': 'table-location' }
const V3 = { ...V2, 'metadata.iceberg.format-version': '3', 'deletion-vectors.enabled': 'true', 'deletion-vectors.bitmap64': 'true', 'num-sorted-run.compaction-trigger': '2' }
/** Every metadata version kept (Paimon's and Strata's default deletes the older ones), so each snapshot's is read. */
const KEEP_VERSIONS = 'metadata.iceberg.delete-after-commit.enabled'
const MERGE_MANIFESTS = { 'metadata.iceberg.compaction.min.file-num': '2', 'metadata.iceberg.compaction.max.file-num': '3' }
const RETAIN = { 'snapshot.num-retained.min': '1', 'snapshot.num-retained.max': '2' }

type Step = { write: Rec[] } | { compact: 'full' | 'minor' } | { expire: true } | { removeOrphans: true } | { alter: SchemaChange[] }

interface Spec {
  /** what Paimon 1.4.2 says when it refuses the table's options (then no twin compares) */
  paimonRefuses?: string
  /** partitioned by (pd DATE, pi INT) instead of dt STRING, with them in the primary key */
  typedPartition?: boolean
  name: string
  engine: Engine
  partitioned: boolean
  version: 2 | 3
  options: Record<string, string>
  steps: Step[]
}

/** Writes, each followed by a compaction: full for v2 (Iceberg sees the top level), minor for v3. */
function interleave(ws: Rec[][], compact: 'full' | 'minor'): Step[] {
  return ws.flatMap((w): Step[] => [{ write: w }, { compact }])
}

/** The alters, each followed by a write of rows shaped by the schema it made, and a compaction. */
function alterSteps(compact: 'full' | 'minor'): Step[] {
  let shape = (r: Rec): Rec => r
  const steps: Step[] = [{ write: range(0, 10).map((id) => row(id, 0)) }, { compact }]
  const stages: [SchemaChange, (r: Rec, id: number, v: number) => Rec][] = [
    [{ kind: 'add-column', name: 'extra', type: 'INT', position: { after: 'i' } }, (r, id, v) => ({ ...r, extra: id * 10 + v })],
    [{ kind: 'rename-column', name: 's', newName: 's2' }, ({ s, ...r }) => ({ ...r, s2: s })],
    [{ kind: 'drop-column', name: 'b' }, ({ b: _b, ...r }) => r],
    [{ kind: 'update-column-type', name: 'i', type: 'BIGINT' }, (r, id) => ({ ...r, i: 3_000_000_000 + id })],
  ]
  for (const [k, [change, next]] of stages.entries()) {
    const before = shape
    shape = (r: Rec) => next(before(r), Number(r.id), k + 1)
    const ids = range(2 * k, 2 * k + 6)
    steps.push({ alter: [change] }, { write: ids.map((id) => shape(row(id, k + 1))) }, { compact })
  }
  return steps
}

const ENGINES: Engine[] = ['deduplicate', 'partial-update', 'aggregation', 'first-row']
const SPECS: Spec[] = [
  ...ENGINES.flatMap((engine) =>
    [true, false].map((partitioned): Spec => ({ name: `v2 ${engine}${partitioned ? ' partitioned' : ''}`, engine, partitioned, version: 2, options: { ...V2, [KEEP_VERSIONS]: 'false', ...ENGINE_OPTIONS[engine] }, steps: interleave(writes(engine), 'full') })),
  ),
  // format version 2 with deletion vectors, as Paimon writes it: the top level, vectors not handed over
  { name: 'v2 deduplicate with deletion vectors', engine: 'deduplicate', partitioned: true, version: 2, options: { ...V2, [KEEP_VERSIONS]: 'false', 'deletion-vectors.enabled': 'true' }, steps: interleave(writes('deduplicate'), 'full') },
  // first-row takes no deletion vectors (Paimon refuses the table)
  ...ENGINES.filter((e) => e !== 'first-row').flatMap((engine) =>
    [true, false].map((partitioned): Spec => ({ name: `v3 ${engine}${partitioned ? ' partitioned' : ''}`, engine, partitioned, version: 3, options: { ...V3, [KEEP_VERSIONS]: 'false', ...ENGINE_OPTIONS[engine] }, steps: interleave(writes(engine), 'minor') })),
  ),
  // partition values of other types in Iceberg's manifests: a date and an int
  { name: 'v2 date and int partitions', typedPartition: true, engine: 'deduplicate', partitioned: true, version: 2, options: V2, steps: interleave(writes('deduplicate'), 'full') },
  { name: 'v3 date and int partitions', typedPartition: true, engine: 'deduplicate', partitioned: true, version: 3, options: { ...V3, [KEEP_VERSIONS]: 'false' }, steps: interleave(writes('deduplicate'), 'minor') },
  // uncompressed Avro by the name Paimon 1.4.2 takes (it hands the value to Avro: 'null')
  { name: 'v2 uncompressed manifests', engine: 'deduplicate', partitioned: true, version: 2, options: { ...V2, 'metadata.iceberg.manifest-compression': 'null' }, steps: interleave(writes('deduplicate').slice(0, 2), 'full') },
  // format version 3 without deletion vectors: the top level only, as in v2
  { name: 'v3 first-row', engine: 'first-row', partitioned: true, version: 3, options: { ...V2, 'metadata.iceberg.format-version': '3', [KEEP_VERSIONS]: 'false', ...ENGINE_OPTIONS['first-row'] }, steps: interleave(writes('first-row'), 'full') },
  // the metadata in the warehouse's Hadoop catalog, <warehouse>/iceberg/<db>/<table>/metadata/
  { name: 'v2 hadoop-catalog', engine: 'deduplicate', partitioned: true, version: 2, options: { 'metadata.iceberg.storage': 'hadoop-catalog', 'metadata.iceberg.manifest-compression': 'deflate', 'metadata.iceberg.manifest-legacy-version': 'true' }, steps: interleave(writes('deduplicate'), 'full') },
  { name: 'v2 expired', engine: 'deduplicate', partitioned: false, version: 2, options: { ...V2, ...RETAIN }, steps: [...interleave(writes('deduplicate'), 'full'), { expire: true }] },
  // then orphan removal, with every file aged past its floor: the Iceberg metadata is no orphan
  { name: 'v3 expired', engine: 'deduplicate', partitioned: true, version: 3, options: { ...V3, ...RETAIN }, steps: [...interleave(writes('deduplicate'), 'minor'), { expire: true }, { removeOrphans: true }] },
  // with Iceberg's manifests merged as soon as two are small (metadata.iceberg.compaction.*)
  { name: 'v2 altered', engine: 'deduplicate', partitioned: true, version: 2, options: { ...V2, ...MERGE_MANIFESTS }, steps: alterSteps('full') },
  { name: 'v3 altered', engine: 'deduplicate', partitioned: true, version: 3, options: { ...V3, ...MERGE_MANIFESTS }, steps: alterSteps('minor') },
]

function schemaOf(spec: Spec) {
  return {
    fields: FIELDS.map(([name, type]) => ({ name, type })),
    primaryKeys: spec.typedPartition ? ['pd', 'pi', 'id'] : ['dt', 'id'],
    partitionKeys: spec.typedPartition ? ['pd', 'pi'] : spec.partitioned ? ['dt'] : [],
    options: { bucket: '2', ...spec.options },
  }
}

const dirName = (spec: Spec) => spec.name.replaceAll(' ', '_').replaceAll('-', '_')

/** Where a table's Iceberg metadata is (its table is <warehouse>/db.db/<name>). */
function metadataDirOf(spec: Spec, tableDir: string): string {
  if (spec.options['metadata.iceberg.storage'] === 'hadoop-catalog') return join(tableDir, '..', '..', 'iceberg', 'db', dirName(spec), 'metadata')
  return join(tableDir, 'metadata')
}

// ---- filtered reads: Iceberg prunes by partition summaries and column bounds ----

type Cond = [string, '=' | '<' | '<=' | '>' | '>=', unknown] | [string, 'is_null' | 'not_null']

/**
 * Row filters on every type, in the harness's rendering; Iceberg's planner skips manifests
 * and files by the metadata's partition summaries and column bounds, so a bound Strata wrote
 * wrong loses rows. (No `!=` and no comparison on a column holding NaN: Iceberg's row
 * evaluator orders NaN where SQL would not match it; nulls, see `sent`.)
 */
const FILTERS: Cond[][] = [
  [['dt', '=', '2024-05-01']],
  [['id', '=', '7']],
  [['id', '>=', '10']],
  [['i', '>', 100]],
  [['dec', '<', '0']],
  [['ts', '<', '2000-01-01T00:00:00']],
  [['ts6', '>', '2200-01-01T00:00:00']],
  [['day', '=', '2024-02-29']],
  [['s', 'is_null']],
  [['f', '<', 0]],
  [['b', '=', true]],
  [['c', '=', 'abc'], ['sm', '=', 32767]],
  [['vc', '>=', 'ten']],
  [['t', '<=', -128]],
  [['pd', '=', '1969-12-31'], ['pi', '=', 0]],
  [['big', '>', '0']],
]

/**
 * A filter as sent: each comparison with its column's `not_null` beside it. Iceberg's row
 * evaluator orders null before every value, so `col < x` alone keeps a null row whose file
 * was planned and loses one whose file the bounds pruned (SQL's rule); with `not_null` both
 * agree, and what is compared is the pruning.
 */
const sent = (f: Cond[]): Cond[] => f.flatMap((c): Cond[] => (c[1] === 'is_null' || c[1] === 'not_null' ? [c] : [c, [c[0], 'not_null']]))

/** Whether a rendered row meets a filter (SQL's rule: a comparison with null is not met). */
function meets(row: Rec, conds: Cond[]): boolean {
  return conds.every(([name, op, value]) => {
    const v = row[name]
    if (op === 'is_null') return v === null
    if (op === 'not_null') return v !== null
    if (v === null) return false
    const c = compare(v, value)
    return op === '=' ? c === 0 : op === '<' ? c < 0 : op === '<=' ? c <= 0 : op === '>' ? c > 0 : c >= 0
  })
}

function compare(a: unknown, b: unknown): number {
  const integer = /^-?\d+$/
  const decimal = /^-?\d+(\.\d+)?$/
  if (typeof a === 'boolean') return a === b ? 0 : a ? 1 : -1
  if (typeof a === 'number') return a - Number(b)
  const x = String(a)
  const y = String(b)
  if (integer.test(x) && integer.test(y)) return BigInt(x) < BigInt(y) ? -1 : BigInt(x) > BigInt(y) ? 1 : 0
  if (decimal.test(x) && decimal.test(y)) return Number(x) - Number(y)
  // strings, and dates and timestamps with four-digit years, in text order
  return x < y ? -1 : x > y ? 1 : 0
}

// ---- what each table's cell holds once built and read ----

interface Cell {
  spec: Spec
  strataDir: string
  paimonDir: string
  /** Strata's rows at each snapshot Iceberg's metadata lists (and Strata still has), in Iceberg's rendering */
  strataRows: Map<number, Rec[]>
  /** Iceberg's reads of Strata's metadata: current, then each listed snapshot */
  current?: IcebergResult
  meta?: IcebergResult
  atSnapshot: Map<number, IcebergResult>
  /** Iceberg's filtered reads of Strata's metadata, each with its filter */
  filtered: [Cond[], IcebergResult | undefined][]
  /** v3 with every metadata version kept: Iceberg's read of each `v<N>.metadata.json` */
  versions: Map<number, IcebergResult>
  /** what Strata's metadata writer reported failing */
  failures: string[]
  /** the snapshots full compactions made */
  fullAt: number[]
  /** rows Strata's deletion vectors delete, from its status */
  dvCardinality: number
  /** Iceberg's reads of Paimon's metadata (for v3, of the copy with next-row-id) */
  paimonCurrent?: IcebergResult
  paimonMeta?: IcebergResult
  /** v3: Iceberg's load of Paimon's metadata as Paimon wrote it */
  paimonRaw?: IcebergResult
  paimonSteps: PaimonResult[]
  strataError?: string
}

const sortRows = (rows: Rec[]) => byKey(rows, ['dt', 'id'])
const rowsOf = (r: IcebergResult | undefined) => {
  if (!r?.ok) throw new Error(`Iceberg failed: ${r?.error}`)
  return sortRows(parseRows(r.output))
}
const metaOf = (r: IcebergResult | undefined): IcebergMeta => {
  if (!r?.ok) throw new Error(`Iceberg failed: ${r?.error}`)
  return JSON.parse(r.output) as IcebergMeta
}
/** The snapshot ids a metadata file lists. */
const listedSnapshots = (file: string): number[] => ((JSON.parse(readFileSync(file, 'utf8')) as { snapshots?: { 'snapshot-id': number }[] }).snapshots ?? []).map((s) => s['snapshot-id'])

async function strataRead(table: StrataTable, snapshotId?: number): Promise<Rec[]> {
  const fields = table.shape.fields
  return sortRows((await table.readAll(snapshotId === undefined ? {} : { snapshotId })).map((r) => icebergRendering(fields, r)))
}

/**
 * The Iceberg metadata writer of a handle (null without `metadata.iceberg.storage`). Strata
 * writes a snapshot's metadata after the commit, not inside it, so a step settles it before
 * the next one and before Iceberg reads; its stats count the snapshots whose metadata failed.
 */
const icebergWriter = (table: StrataTable) => table.handle.iceberg

/** Sets every file's modification time under `dir` back by `ms`, so orphan removal may take what no snapshot holds. */
function ageFiles(dir: string, ms: number): void {
  const then = (Date.now() - ms) / 1000
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    if (statSync(path).isDirectory()) ageFiles(path, ms)
    utimesSync(path, then, then)
  }
}

/** Runs a spec's steps on Strata; returns the handle on the latest schema and the writers' failures. */
async function buildStrata(spec: Spec, dir: string): Promise<{ table: StrataTable; failures: string[]; fullAt: number[] }> {
  let table = await createTable(dir, schemaOf(spec))
  const failures: string[] = []
  const fullAt: number[] = []
  const settle = async () => {
    const writer = icebergWriter(table)
    if (!writer) throw new Error('the table has no Iceberg metadata writer')
    await writer.settle()
    if (writer.stats.failed > 0) failures.push(`${writer.stats.failed} failed, the last: ${writer.stats.lastError}`)
  }
  for (const step of spec.steps) {
    if ('write' in step) await table.write(step.write as never)
    else if ('compact' in step) {
      const done = await table.compact({ full: step.compact === 'full' })
      if (step.compact === 'full' && done.snapshotId !== null) fullAt.push(done.snapshotId)
    } else if ('expire' in step) {
      // the metadata of every snapshot written first: expiring while the writer has a backlog
      // is the cell 'version-hint after an expiration…' below
      await settle()
      await table.expire()
    } else if ('removeOrphans' in step) {
      await settle()
      ageFiles(dir, 3 * 86_400_000)
      await table.expire({ removeOrphans: true, olderThan: '1 d' })
    } else {
      await settle()
      table = await table.alter(step.alter)
    }
  }
  await settle()
  return { table: await openTable(dir), failures, fullAt }
}

/** The same steps as Paimon harness commands (a v3 table's minor compaction is Paimon's own lookup compaction at each write). */
function paimonCommands(spec: Spec, dir: string, scratch: string): string[][] {
  const schema = JSON.stringify(schemaOf(spec))
  return spec.steps.flatMap((step, k): string[][] => {
    if ('write' in step) return [['write', dir, '--schema', schema, '--in', writeJsonLines(join(scratch, `${dirName(spec)}-${k}.jsonl`), step.write)]]
    if ('compact' in step) return [step.compact === 'full' ? ['compact', dir, '--full'] : ['compact', dir]]
    if ('expire' in step) return [['expire', dir, '--retain', '2']]
    // the Paimon harness has no orphan removal; Paimon's twin skips the step
    if ('removeOrphans' in step) return []
    const changes = join(scratch, `${dirName(spec)}-${k}.json`)
    writeFileSync(changes, JSON.stringify(step.alter))
    return [['alter', dir, '--in', changes]]
  })
}

/**
 * A second reader: DuckDB's iceberg extension, when it is on this machine (DuckDB downloads
 * extensions on first use; this machine cannot reach DuckDB's extension site, and no package
 * registry it reaches carries the extension: interop-iceberg/README.md). Loaded with
 * autoinstall off, so the test never goes to the network; without it the cell is skipped.
 */
async function duckdbIceberg(): Promise<{ db: DuckDBInstance } | { reason: string }> {
  const db = await DuckDBInstance.create(':memory:')
  const conn = await db.connect()
  try {
    await conn.run('SET autoinstall_known_extensions = false')
    await conn.run('LOAD iceberg')
    return { db }
  } catch (e) {
    return { reason: String(e).split('\n')[0] }
  } finally {
    conn.closeSync()
  }
}
/**
 * A store whose writes of Iceberg metadata versions wait until the writer is asked (by `head`)
 * whether version `held` exists: an expiration that catches the metadata up while the writer
 * still has that version queued, made to happen every time rather than under load only.
 */
function holdVersionUntilAsked(held: number): { wrap: (store: ObjectStore) => ObjectStore; hold: () => void } {
  let release: (() => void) | null = null
  let released: Promise<void> = Promise.resolve()
  const isVersion = (key: string, n?: number) => {
    const m = /(?:^|\/)metadata\/v(\d+)\.metadata\.json$/.exec(key)
    return m !== null && (n === undefined || Number(m[1]) === n)
  }
  const wrap = (store: ObjectStore): ObjectStore =>
    new Proxy(store, {
      get(target, prop) {
        if (prop === 'putIfAbsent') {
          return async (key: string, data: Uint8Array) => {
            if (isVersion(key)) await released
            return target.putIfAbsent(key, data)
          }
        }
        if (prop === 'head') {
          return async (key: string) => {
            const info = await target.head(key)
            if (release && isVersion(key, held)) {
              release()
              release = null
            }
            return info
          }
        }
        const v = Reflect.get(target, prop, target) as unknown
        return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
      },
    })
  const hold = () => {
    released = new Promise<void>((r) => (release = r))
  }
  return { wrap, hold }
}

// Strata's Iceberg writer moves version-hint.text only for the last of the snapshots queued
// behind one another; an expiration that finds the newest version not yet written queues that
// snapshot again. The hint must still end on the newest version, or a reader that follows it
// (Iceberg's HadoopTables, this harness) reads an older snapshot until the next commit. The
// hold makes the backlog certain rather than a matter of load.
describe('Iceberg metadata: version-hint after an expiration that caught up a backlog', () => {
  it('version-hint.text names the newest version', async () => {
    const root = mkdtempSync(join(tmpdir(), 'strata-iceberg-hint-'))
    try {
      mkdirSync(join(root, 'db.db'))
      const dir = join(root, 'db.db', 't')
      const { wrap, hold } = holdVersionUntilAsked(3)
      const table = await createTable(dir, { fields: [{ name: 'id', type: 'BIGINT' }, { name: 'v', type: 'INT' }], primaryKeys: ['id'], options: { bucket: '1', ...V2, ...RETAIN } }, { wrapStore: wrap })
      for (const v of [1, 2]) {
        await table.write([{ id: 1, v }])
        await table.handle.iceberg!.settle()
      }
      hold()
      // the write returns once its metadata is written, which the hold keeps back until the
      // expiration asks for it: expire once snapshot 3 has landed, then let the write finish
      const writing = table.write([{ id: 1, v: 3 }])
      await vi.waitFor(async () => expect(await table.handle.snapshots.latestId()).toBe(3), { timeout: 60_000, interval: 10 })
      const expired = await table.expire()
      await writing
      await table.handle.iceberg!.settle()
      expect(expired.expired).toEqual([1])
      expect(readdirSync(join(dir, 'metadata'))).toContain('v3.metadata.json')
      expect(readFileSync(join(dir, 'metadata', 'version-hint.text'), 'utf8').trim()).toBe('3')
    } finally {
      rmSync(root, { recursive: true, force: true })
    }
  })
})

const missing = missingTools()
// asked only where the suite runs, so a machine without Java says one line, not two
const duck = missing.length > 0 ? { reason: 'the suite does not run' } : await duckdbIceberg()
if (missing.length === 0 && 'reason' in duck) process.stdout.write(`DuckDB's iceberg_scan cell skipped: the iceberg extension does not load here (${duck.reason})\n`)

describeWithJava('Iceberg interop', ICEBERG_RUN_COMMAND, () => {
  let root = ''
  const cells = new Map<string, Cell>()

  beforeAll(async () => {
    buildHarness()
    buildIcebergHarness()
    root = mkdtempSync(join(tmpdir(), 'strata-iceberg-'))
    const scratch = join(root, 'scratch')
    // table-location storage wants a Paimon warehouse layout: <warehouse>/<db>.db/<table>
    for (const side of ['strata', 'paimon', 'scratch']) mkdirSync(join(root, side, 'db.db'), { recursive: true })

    // Paimon's twins, all in one JVM
    const paimon: string[][] = []
    const owners: [Cell, number][] = []
    for (const spec of SPECS) {
      const cell: Cell = { spec, strataDir: join(root, 'strata', 'db.db', dirName(spec)), paimonDir: join(root, 'paimon', 'db.db', dirName(spec)), strataRows: new Map(), atSnapshot: new Map(), versions: new Map(), filtered: [], failures: [], fullAt: [], dvCardinality: 0, paimonSteps: [] }
      cells.set(spec.name, cell)
      for (const c of paimonCommands(spec, cell.paimonDir, scratch)) {
        paimon.push(c)
        owners.push([cell, paimon.length - 1])
      }
    }
    const paimonRun = jarBatch(PAIMON_JAR, paimon).then((results) => {
      for (const [cell, k] of owners) cell.paimonSteps.push(results[k])
    })

    // Strata's tables while that JVM works, then every read Iceberg is to make, in one JVM
    const reads: string[][] = []
    const then: ((r: IcebergResult) => void)[] = []
    const ask = (command: string[], done: (r: IcebergResult) => void) => {
      reads.push(command)
      then.push(done)
    }
    for (const cell of cells.values()) {
      try {
        const { table, failures, fullAt } = await buildStrata(cell.spec, cell.strataDir)
        cell.failures = failures
        cell.fullAt = fullAt
        cell.dvCardinality = (await table.status()).buckets.reduce((n, b) => n + b.dvCardinality, 0)
        const metadataDir = metadataDirOf(cell.spec, cell.strataDir)
        ask(['read', metadataDir], (r) => (cell.current = r))
        ask(['meta', metadataDir], (r) => (cell.meta = r))
        cell.strataRows.set(-1, await strataRead(table))
        const columns = new Set(table.shape.fields.map((f) => f.name))
        for (const f of FILTERS.filter((f) => f.every(([name]) => columns.has(name)))) {
          const k = cell.filtered.push([f, undefined]) - 1
          ask(['read', metadataDir, '--filter', JSON.stringify(sent(f))], (r) => (cell.filtered[k][1] = r))
        }
        for (const s of listedSnapshots(currentMetadataFile(metadataDir))) {
          // Iceberg must read every snapshot its metadata lists; Strata's read compares where Strata still has it
          try {
            cell.strataRows.set(s, await strataRead(table, s))
          } catch (e) {
            if (!(e instanceof NotFoundError || e instanceof SnapshotExpiredError)) throw e
          }
          ask(['read', metadataDir, '--snapshot', String(s), '--current-schema'], (r) => cell.atSnapshot.set(s, r))
        }
        // every version the directory holds (a catalog pointer that lags may name any of them);
        // with all kept, every snapshot as Iceberg saw it when it landed
        for (const name of readdirSync(metadataDir)) {
          const n = /^v(\d+)\.metadata\.json$/.exec(name)?.[1]
          if (n === undefined) continue
          if (cell.spec.options[KEEP_VERSIONS] === 'false') cell.strataRows.set(Number(n), await strataRead(table, Number(n)))
          ask(['read', join(metadataDir, name)], (r) => cell.versions.set(Number(n), r))
        }
      } catch (e) {
        cell.strataError = String(e)
      }
    }
    await paimonRun
    for (const cell of cells.values()) {
      const paimonMetadata = metadataDirOf(cell.spec, cell.paimonDir)
      try {
        let location = paimonMetadata
        if (cell.spec.version === 3) {
          ask(['read', paimonMetadata], (r) => (cell.paimonRaw = r))
          location = withNextRowId(currentMetadataFile(paimonMetadata), join(root, 'scratch'))
        }
        ask(['read', location], (r) => (cell.paimonCurrent = r))
        ask(['meta', location], (r) => (cell.paimonMeta = r))
      } catch (e) {
        cell.paimonCurrent = { ok: false, error: String(e), output: '' }
      }
    }
    const results = await icebergBatch(reads)
    results.forEach((r, k) => then[k](r))
  }, 600_000)

  afterAll(() => {
    // KEEP_ICEBERG_ROOT=1 keeps the tables for a look with the harness
    if (process.env.KEEP_ICEBERG_ROOT) return void process.stdout.write(`Iceberg interop tables kept in ${root}\n`)
    if (root) rmSync(root, { recursive: true, force: true })
  })

  it.skipIf('reason' in duck)("DuckDB's iceberg_scan reads Strata's v2 metadata and returns Strata's rows", async () => {
    const c = cells.get('v2 deduplicate partitioned')!
    const conn = await (duck as { db: DuckDBInstance }).db.connect()
    try {
      const file = currentMetadataFile(join(c.strataDir, 'metadata')).replaceAll("'", "''")
      const read = await conn.runAndReadAll(`SELECT dt, CAST(id AS VARCHAR) AS id, i, s FROM iceberg_scan('${file}')`)
      const theirs = sortRows(read.getRowObjectsJson() as Rec[])
      const ours = c.strataRows.get(-1)!.map((r) => ({ dt: r.dt, id: r.id, i: r.i, s: r.s }))
      expect(theirs).toEqual(ours)
    } finally {
      conn.closeSync()
    }
  })

  for (const spec of SPECS) {
    describe(spec.name, () => {
      // deletion vectors reach Iceberg in format version 3 only (v2 lists the top level without them)
      const dv = spec.options['deletion-vectors.enabled'] === 'true' && spec.version === 3
      const cell = () => {
        const c = cells.get(spec.name)!
        if (c.strataError) throw new Error(`Strata could not build the table: ${c.strataError}`)
        return c
      }

      it("Iceberg reads Strata's metadata and returns Strata's rows", () => {
        const c = cell()
        expect(rowsOf(c.current)).toEqual(c.strataRows.get(-1))
        expect(c.strataRows.get(-1)!.length).toBeGreaterThan(0)
      })

      if (dv || spec.name.includes('expired') || spec.name.includes('altered')) {
        it('at every snapshot the metadata lists, Iceberg returns what Strata reads at it', () => {
          const c = cell()
          expect(c.atSnapshot.size).toBeGreaterThan(0)
          for (const [s, r] of c.atSnapshot) {
            expect({ snapshot: s, error: r.error }).toEqual({ snapshot: s, error: undefined })
            if (c.strataRows.has(s)) expect({ snapshot: s, rows: rowsOf(r) }).toEqual({ snapshot: s, rows: c.strataRows.get(s) })
          }
        })
      }

      it('filtered reads, pruned by the partition summaries and column bounds Strata wrote, lose no row', () => {
        const c = cell()
        expect(c.filtered.length).toBeGreaterThan(10)
        const want = c.filtered.map(([f]) => c.strataRows.get(-1)!.filter((row) => meets(row, f)))
        // which filters differ first, then the rows of each
        expect(c.filtered.map(([f, r]) => `${JSON.stringify(f)}: ${rowsOf(r).length}`)).toEqual(c.filtered.map(([f], k) => `${JSON.stringify(f)}: ${want[k].length}`))
        for (const [k, [f, r]] of c.filtered.entries()) expect({ filter: f, rows: rowsOf(r) }).toEqual({ filter: f, rows: want[k] })
      })

      it("Strata's metadata writer reported no failure", () => {
        expect(cell().failures).toEqual([])
      })

      it('every metadata version left in the directory opens and reads, and version-hint.text names the newest', () => {
        const c = cell()
        expect(c.versions.size).toBeGreaterThan(0)
        for (const [n, r] of c.versions) expect({ version: n, error: r.error }).toEqual({ version: n, error: undefined })
        expect(Number(readFileSync(join(metadataDirOf(spec, c.strataDir), 'version-hint.text'), 'utf8').trim())).toBe(Math.max(...c.versions.keys()))
      })

      if (spec.options[KEEP_VERSIONS] === 'false' && !dv) {
        it("each snapshot's metadata version shows the top level only: what the latest full compaction up to it left", () => {
          const c = cell()
          expect(c.versions.size).toBeGreaterThanOrEqual(spec.steps.length)
          expect(c.fullAt.length).toBe(spec.steps.filter((s) => 'compact' in s).length)
          for (const [n, r] of c.versions) {
            const full = Math.max(0, ...c.fullAt.filter((f) => f <= n))
            expect({ snapshot: n, rows: rowsOf(r) }).toEqual({ snapshot: n, rows: full === 0 ? [] : c.strataRows.get(full) })
          }
        })
      }

      if (spec.options[KEEP_VERSIONS] === 'false' && dv) {
        it('each snapshot\'s metadata version, as Iceberg reads it, returns what Strata reads at that snapshot', () => {
          const c = cell()
          expect(c.versions.size).toBeGreaterThanOrEqual(spec.steps.length)
          for (const [n, r] of c.versions) expect({ snapshot: n, rows: rowsOf(r) }).toEqual({ snapshot: n, rows: c.strataRows.get(n) })
        })
      }

      if (spec.paimonRefuses) {
        it(`Paimon 1.4.2 refuses the options Strata takes: ${spec.paimonRefuses}`, () => {
          expect(cell().paimonSteps.map((r) => r.error ?? '').join('\n')).toContain(spec.paimonRefuses)
        })
      } else {
        it("Paimon's twin: Iceberg's reads of both tables are equal", () => {
          const c = cell()
          for (const step of c.paimonSteps) expect(step.error).toBeUndefined()
          expect(rowsOf(c.paimonCurrent)).toEqual(rowsOf(c.current))
        })

        if (spec.version === 2 && spec.engine === 'deduplicate') {
          // the same steps make the same snapshot ids on both sides here (no lookup compaction at
          // Paimon's writes), so the lists compare; Strata's metadata lists its current snapshot
          // only, so Iceberg's time travel and incremental reads on it find no older snapshot. The
          // cell asserts that difference (not an it.fails, which a failed build or read would also
          // pass), so it fails once Strata lists Paimon's snapshots
          it("DIVERGENT: lists fewer snapshots than Paimon's metadata lists (Strata's lists only the current one)", () => {
            const ours = metaOf(cell().meta)
            expect(ours.snapshots).toEqual([ours.currentSnapshotId])
            expect(ours.snapshots).not.toEqual(metaOf(cell().paimonMeta).snapshots)
          })

          // what a planner prunes files by: lower and upper bounds and null counts per column, as
          // Paimon's data files carry them, except that Strata gives FLOAT and DOUBLE columns no
          // bounds (a NaN bound would let a reader prune a file that matches); rows are equal either way
          it("data files carry column bounds and null counts as Paimon's do (FLOAT and DOUBLE without bounds)", () => {
            const floating = (m: IcebergMeta) => new Set(m.schema.fields.filter((f) => f.type === 'float' || f.type === 'double').map((f) => f.id))
            const columns = (m: IcebergMeta) => [...new Set(m.dataFiles.map((f) => JSON.stringify([f.boundedColumns.filter((id) => !floating(m).has(id)), f.nullCountedColumns])))].sort()
            const ours = metaOf(cell().meta)
            expect(columns(ours)).toEqual(columns(metaOf(cell().paimonMeta)))
            expect(ours.dataFiles.every((f) => f.boundedColumns.length > 0)).toBe(true)
          })

          // what a planner prunes whole manifests by: the manifest list's partition summaries
          // (null or not, lower and upper bound per partition field)
          if (spec.partitioned) {
            it("the manifest list carries partition summaries as Paimon's does", () => {
              const summarized = (m: IcebergMeta) => m.manifests.filter((f) => f.content === 'DATA').every((f) => f.partitions !== null && f.partitions.length === m.spec.fields.length)
              expect(summarized(metaOf(cell().paimonMeta))).toBe(true)
              expect(summarized(metaOf(cell().meta))).toBe(true)
            })
          }
        }

        it('the metadata has the shape of Paimon\'s: format, schema, partition spec, live rows per partition', () => {
          const ours = metaOf(cell().meta)
          const theirs = metaOf(cell().paimonMeta)
          expect(ours.formatVersion).toBe(spec.version)
          expect(ours.schema.fields).toEqual(theirs.schema.fields)
          expect(ours.spec.fields).toEqual(theirs.spec.fields)
          expect(liveRowsPerPartition(ours)).toEqual(liveRowsPerPartition(theirs))
          if (!dv) {
            // the top level after a full compaction: the same files' partitions and rows on both sides
            expect(ours.deleteFiles).toEqual([])
            expect(filesShape(ours)).toEqual(filesShape(theirs))
          }
        })
      }

      if (spec.version === 3) {
        it('row lineage: next-row-id and the snapshot\'s first-row-id are written', () => {
          const m = metaOf(cell().meta)
          expect(m.nextRowId).toEqual(expect.any(Number))
          expect(m.snapshot!.firstRowId).toEqual(expect.any(Number))
          expect(m.nextRowId!).toBeGreaterThanOrEqual(m.snapshot!.firstRowId! + (m.snapshot!.addedRows ?? 0))
          // each live data file's rows take row ids [first-row-id, + record count): apart, and below next-row-id
          const ranges = m.dataFiles.map((f) => [f.firstRowId!, f.firstRowId! + f.recordCount] as const).sort((a, b) => a[0] - b[0])
          for (const [k, [from, to]] of ranges.entries()) {
            expect(from).toEqual(expect.any(Number))
            expect(to).toBeLessThanOrEqual(m.nextRowId!)
            if (k > 0) expect(from).toBeGreaterThanOrEqual(ranges[k - 1][1])
          }
        })
      }

      if (dv) {
        it("each deletion vector Strata hands over is Iceberg's: a Puffin blob in Paimon's index file for one visible data file", () => {
          const m = metaOf(cell().meta)
          checkDeletionVectors(m)
          checkDeletionVectors(metaOf(cell().paimonMeta))
          // every row Strata's deletion vectors delete is handed over
          expect(m.deleteFiles.reduce((n, d) => n + d.recordCount, 0)).toBe(cell().dvCardinality)
          // the deduplicate histories' deletes and upserts leave deletion vectors behind their last compaction
          if (spec.engine === 'deduplicate' && !spec.name.includes('altered')) expect(m.deleteFiles.length).toBeGreaterThan(0)
        })
      }

      if (spec.version === 3) {
        it("Paimon 1.4.2's own v3 metadata has no next-row-id, which Iceberg refuses", () => {
          const raw = cells.get(spec.name)!.paimonRaw
          expect(raw?.ok).toBe(false)
          expect(raw?.error).toContain('Cannot parse missing long: next-row-id')
        })
      }
    })
  }
}, missing)

/** Rows a reader sees per partition: data files' rows less the rows their deletion vectors delete. */
function liveRowsPerPartition(m: IcebergMeta): Record<string, number> {
  const out: Record<string, number> = {}
  for (const f of m.dataFiles) out[JSON.stringify(f.partition)] = (out[JSON.stringify(f.partition)] ?? 0) + f.recordCount
  for (const f of m.deleteFiles) out[JSON.stringify(f.partition)] -= f.recordCount
  return out
}

/** The visible data files as (partition, rows), in one order. */
function filesShape(m: IcebergMeta): string[] {
  return m.dataFiles.map((f) => `${JSON.stringify(f.partition)} ${f.recordCount}`).sort()
}

/** What Iceberg's v3 spec asks of a deletion vector entry, and that the planner applies it to its file. */
function checkDeletionVectors(m: IcebergMeta): void {
  const data = new Set(m.dataFiles.map((f) => f.path))
  const referenced = new Set<string>()
  for (const d of m.deleteFiles) {
    expect(d).toMatchObject({ content: 'POSITION_DELETES', format: 'PUFFIN' })
    expect(data.has(d.referencedDataFile!)).toBe(true)
    expect(referenced.has(d.referencedDataFile!)).toBe(false)
    referenced.add(d.referencedDataFile!)
    expect(d.contentOffset).toBeGreaterThanOrEqual(0)
    expect(d.contentSizeInBytes).toBeGreaterThan(0)
    expect(d.recordCount).toBeGreaterThan(0)
    const task = m.tasks.find((t) => t.file === d.referencedDataFile)
    expect(task?.deletes).toEqual([`${d.path}@${d.contentOffset}`])
  }
  for (const t of m.tasks) if (!referenced.has(t.file)) expect(t.deletes).toEqual([])
}
