// `strata`: the command-line face of the library API (lib/api/), whose tables it opens; reads
// and lookups print the engine's rows as they stream. Every failure exits non-zero with one line
// saying why; every option and input is validated before anything is written, deleted or
// printed.

import { createReadStream, readFileSync } from 'node:fs'
import { Command, CommanderError } from 'commander'
import { lookup, scan } from '../read/table-read.ts'
import { INCREMENTAL_MODES, type IncrementalMode, consumerStart, planIncremental, readPlan, recordConsumer } from '../read/incremental.ts'
import { checkConsumerId } from '../handle/consumers.ts'
import { type ResolvedScan, SCAN_MODES, type StreamStartOptions, asksForStreamingStart, consumerProgressStart, readStep, recordStep, resolveScan, startOfRead, streamSteps } from '../read/streaming-start.ts'
import { DEFAULT_ORPHAN_OLDER_THAN_MS, MIN_ORPHAN_OLDER_THAN_MS, checkOrphanAge, formatAge } from '../maintenance/orphans.ts'
import { parseDuration } from '../table/options.ts'
import { formatStatus } from './status.ts'
import { rowToJsonLine, valueToText } from '../table/json-values.ts'
import { Table } from '../handle/table.ts'
import { checkTagName, listTags, requireTag } from '../handle/tags.ts'
import { localDateTimeText } from '../format/tag.ts'
import { errorKind, type ErrorKind, NotFoundError, StrataInputError } from '../errors.ts'
import { type DataField, ROW_KIND_SHORT, type Snapshot } from '../types.ts'
import type { StrataTable, WriteSummary } from '../api/strata-table.ts'
import { createTable, openTable, openWarehouse } from '../api/warehouse.ts'
import { addWarehouseCommands, chosenWarehouse, looksLikeTableName, missingDatabaseHint, tableArgument, tableLocation, WAREHOUSE_ENV } from './warehouse.ts'
import type { ObjectStore } from '../store/object-store.ts'
import { Progress } from './progress.ts'
import { OutputError, RowOutput, quietOnClosedPipe } from './row-output.ts'
import { ROW_FORMATS, type RowFormat, RowPrinter, chooseFormat } from './row-formats.ts'
import { packageVersion } from './version.ts'
import { rowsWaitingForCompaction } from '../read/level0-rows.ts'

function out(line: string): void {
  process.stdout.write(line + '\n')
}

async function readSchemaFile(path: string): Promise<unknown> {
  let text: string
  try {
    text = readFileSync(path, 'utf8')
  } catch (e) {
    throw new StrataInputError(`--schema ${path}: cannot read the file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`)
  }
  try {
    return JSON.parse(text)
  } catch (e) {
    throw new StrataInputError(`--schema ${path}: malformed JSON (${(e as Error).message})`)
  }
}

/** `strata write`: the input's JSON lines (a file, or stdin for none or '-') as one commit. */
async function writeInput(table: StrataTable, source: string | undefined, progress: Progress): Promise<WriteSummary> {
  // 64 KiB reads: a chunk decodes to a string small enough for V8's young generation, where it
  // dies cheaply; 1 MiB strings went to the large-object space and piled up there until a full
  // collection (~80 MB more peak RSS over a 1M-line write, docs/benchmarks.md "Streaming writes")
  const input = !source || source === '-' ? process.stdin : createReadStream(source, { highWaterMark: 1 << 16 })
  if (source && source !== '-') {
    await new Promise<void>((resolve, reject) => {
      input.once('open' as never, () => resolve())
      input.once('error', (e: NodeJS.ErrnoException) => reject(new StrataInputError(`${source}: cannot read the file (${e.code ?? e.message})`)))
    })
  }
  return table.writeJsonLines(input, { name: source ?? 'stdin', onProgress: (m) => progress.update(m) })
}

function parseSnapshotId(flag: string, v: string, min: number): number {
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < min) throw new StrataInputError(`${flag}: expected a snapshot id >= ${min}, got ${JSON.stringify(v)}`)
  return Number(v)
}

function parseSnapshotOption(v: string | undefined): number | undefined {
  if (v === undefined) return undefined
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(Number(v)) || Number(v) < 1) throw new StrataInputError(`--snapshot: expected a snapshot id >= 1, got ${JSON.stringify(v)}`)
  return Number(v)
}

/** `--columns a,b`: every name a column of the table, none empty. */
function parseColumns(table: Table, v: string | undefined): string[] | undefined {
  if (v === undefined) return undefined
  const names = v.split(',').map((s) => s.trim())
  const all = table.view.fields.map((f) => f.name).join(', ')
  if (names.some((n) => n === '')) {
    throw new StrataInputError(`--columns ${JSON.stringify(v)}: expected a comma-separated list of column names with none empty (columns: ${all})`)
  }
  const unknown = names.find((n) => !table.view.fieldIndex.has(n))
  if (unknown !== undefined) throw new StrataInputError(`--columns ${JSON.stringify(v)}: unknown column '${unknown}' (columns: ${all})`)
  return names
}

/** `--older-than`: a duration no shorter than orphan cleanup's floor. */
function parseOrphanAge(v: string): number {
  const ms = parseDuration(v)
  if (ms === null) throw new StrataInputError(`--older-than ${JSON.stringify(v)}: expected a duration such as '1 d' or '13 h'`)
  return checkOrphanAge(ms, `--older-than ${JSON.stringify(v)}`)
}

/** What a caller of the CLI in-process may hand it: a wrapper around every store a command opens (a trace, a fault). */
export interface CliSeams {
  wrapStore?: (store: ObjectStore) => ObjectStore
  /** adds commands that live outside lib/ (the bin's `local`), called last with the program */
  extend?: (program: Command) => void
  /** `read --follow`: how it waits for the next snapshot (true: look again, false: end); default a sleep of --discovery-interval, never ending */
  waitForSnapshot?: (intervalMs: number) => Promise<boolean>
}

/**
 * How a command gets its table: through the library API, with the caller's store wrapper; a
 * `<table>` is a table URI, or `<database>.<table>` in the warehouse (lib/cli/warehouse.ts).
 */
interface Tables {
  open(table: string): Promise<StrataTable>
  create(table: string, schema: unknown): Promise<StrataTable>
  /** the table as a hint names it, for a command it suggests */
  argument(table: string): string
  /** `read --follow`'s wait for the next snapshot (CliSeams.waitForSnapshot) */
  waitForSnapshot?: (intervalMs: number) => Promise<boolean>
}

export function buildProgram(seams: CliSeams = {}): Command {
  const options = { wrapStore: seams.wrapStore }
  const program = new Command()
  // a name with no warehouse chosen was read as a path: say how to name a table in a warehouse
  const hinted = async <T>(table: string, work: Promise<T>): Promise<T> => {
    try {
      return await work
    } catch (e) {
      if (!(e instanceof NotFoundError) || chosenWarehouse(program) !== null || !looksLikeTableName(table)) throw e
      throw new NotFoundError(`${e.message}; to name <database>.<table> in a Paimon warehouse, give --warehouse <uri> or set ${WAREHOUSE_ENV}`)
    }
  }
  const at: Tables = {
    open: (table) => hinted(table, openTable(tableLocation(program, table), options)),
    create: async (table, schema) => {
      try {
        return await createTable(tableLocation(program, table), schema, options)
      } catch (e) {
        throw missingDatabaseHint(e, table)
      }
    },
    argument: (table) => tableArgument(program, table),
    waitForSnapshot: seams.waitForSnapshot,
  }
  program
    .name('strata')
    .description('Primary-key tables on S3 or local disk in Apache Paimon format')
    .option('--warehouse <uri>', `a Paimon warehouse (a path, file:// or s3://bucket/prefix) in which a <table> of the form <database>.<table> is named; default $${WAREHOUSE_ENV}`)
    .addHelpText('after', `\nA <table> is a table URI (a path, file:///abs/path, s3://bucket/prefix) or, with --warehouse or ${WAREHOUSE_ENV}, <database>.<table> in that warehouse.\n`)
    .showHelpAfterError(false)
    // every command's help shows --warehouse, which any <table> argument can lean on
    .configureHelp({ showGlobalOptions: true })
    .configureOutput({ writeErr: (s) => process.stderr.write(s) })
    .exitOverride()
    .version(packageVersion(), '-V, --version', 'print the version')
  // in this order in the help
  addDataCommands(program, at)
  addUpkeepCommands(program, at)
  addConsumerCommands(program, at)
  addTagCommands(program, at)
  addWarehouseCommands(program, (uri) => openWarehouse(uri, options))
  seams.extend?.(program)
  return program
}

/** create, write, read, lookup: a table's data in and out. */
function addDataCommands(program: Command, at: Tables): void {
  program
    .command('create <table>')
    .description('create a table from a schema JSON file')
    .requiredOption('--schema <file>', 'schema JSON: {"fields":[{"name","type"}],"primaryKeys":[],"partitionKeys":[],"options":{}}')
    .action(async (uri: string, o: { schema: string }) => {
      const table = await at.create(uri, await readSchemaFile(o.schema))
      const { fields, options } = table.shape
      out(`created ${table.uri} (schema 0, ${fields.length} fields, ${options.bucket === '-2' ? 'postpone bucket mode' : options.bucket === '-1' ? 'dynamic bucket mode' : `${options.bucket} buckets`})`)
    })

  program
    .command('write <table> [file]')
    .description('write JSON lines (a file or - for stdin) as one commit; prints the snapshot id')
    .addHelpText('after', WRITE_INPUT_HELP)
    .action(async (uri: string, file: string | undefined) => {
      const table = await at.open(uri)
      const progress = new Progress()
      const res = await writeInput(table, file, progress)
      progress.done()
      out(String(res.snapshotId))
    })

  program
    .command('read <table>')
    .description('read the latest (or a given) snapshot, or what the snapshots (from, to] changed')
    .option('--snapshot <id>', 'snapshot id to read (time travel)')
    .option('--tag <name>', 'read the snapshot this tag pins (not with --snapshot)')
    .option('--columns <a,b>', 'columns to return, in this order')
    .option('--filter <json>', 'equality filter on partition and primary-key fields, e.g. {"dt":"2024-05-01"}')
    .option('--format <format>', `${ROW_FORMATS.join(', ')}: an aligned table for people, or for programs tab- or comma-separated values (PostgreSQL's text format, RFC 4180) or one JSON object per line; default table on a terminal, else tsv`)
    .option('--json', 'the same as --format json')
    .option('--from-snapshot <id>', 'incremental read: the changes after this snapshot (exclusive), each row with its _kind')
    .option('--to-snapshot <id>', 'incremental read: up to this snapshot (inclusive); default the latest')
    .option('--mode <mode>', 'incremental read: auto (changelog when the table has a changelog producer, else delta), delta or changelog')
    .option('--consumer-id <id>', "incremental read from the consumer's next snapshot (--from-snapshot or a scan mode the first time); once stdout has taken every row, records its progress in consumer/consumer-<id>")
    .option('--scan-mode <mode>', `streaming start, Paimon's scan.mode: ${SCAN_MODES.join(', ')} (default the table's scan.mode, else default: latest-full); the full-state modes print every row of the start as +I, level 0 included, then the changes after it`)
    .option('--scan-snapshot-id <id>', "Paimon's scan.snapshot-id: the snapshot of from-snapshot (its changes and after) and from-snapshot-full (its full state, then the changes after it)")
    .option('--scan-timestamp-millis <ms>', "Paimon's scan.timestamp-millis: from-timestamp reads the changes from the first snapshot at or after it")
    .option('--follow', 'after the start, keep reading the changes as snapshots land, until interrupted (with --consumer-id, progress is recorded after each batch)')
    .option('--discovery-interval <duration>', 'with --follow: how long to wait before looking for a new snapshot again (Paimon\'s continuous.discovery-interval); default 10 s')
    .action((uri: string, o: ReadCommandOptions) => readCommand(at, uri, o))

  program
    .command('lookup <table>')
    .description('point lookup by primary key')
    .requiredOption('--key <json>', 'the primary key, e.g. {"id":1}')
    .option('--snapshot <id>', 'snapshot id to read')
    .option('--tag <name>', 'read the snapshot this tag pins (not with --snapshot)')
    .option('--json', 'print the row as one JSON object')
    .action(async (uri: string, o: { key: string; snapshot?: string; tag?: string; json?: boolean }) => {
      const key = parseJsonOption('--key', o.key)
      const snapshotId = parseSnapshotOption(o.snapshot)
      const tag = parseTagOption(o.tag, snapshotId)
      const table = (await at.open(uri)).handle
      const row = await lookup(table, key, { snapshotId, tag })
      const fields = table.view.fields
      if (!row) {
        if (o.json) out('null')
        else out('not found')
        // a soft failure: exit code 1 without a message (main)
        process.exitCode = 1
        return
      }
      if (o.json) out(rowToJsonLine(fields, fields.map((_, i) => i), row))
      else for (let i = 0; i < fields.length; i++) out(`${fields[i].name}\t${valueToText(fields[i].type, row[i])}`)
    })
}

/** `write --help`: what a line of input holds (docs/operations.md "Values in JSON lines" has the whole table). */
const WRITE_INPUT_HELP = `
Input: JSON lines (UTF-8; CRLF line ends and a byte-order mark are taken), one JSON object
per record. Keys are column names; a column left out is null. Blank lines are skipped.
  _kind   the record's row kind: "+I" (insert; the default: a row with the same primary
          key replaces the one before, as an upsert), "+U" (update: the same as +I),
          "-U" and "-D" (retractions: a deduplicate table deletes the key's row; partial-
          update, aggregation and first-row tables apply them as Paimon does, and a
          retraction one of them cannot apply fails the write).
Values by column type:
  BOOLEAN               true or false
  TINYINT/SMALLINT/INT  an integer number (7, 7.0, 7e2), within the type's range
  BIGINT                an integer number, or a string of digits with an optional minus
                        ("9223372036854775807"): 64 bits
  FLOAT, DOUBLE         a number (rounded to the type); "NaN", "Infinity", "-Infinity"
  DECIMAL(p, s)         a number or a decimal string ("1.50"), never rounded: at most s
                        fraction digits and p - s integer digits
  CHAR/VARCHAR/STRING   a string of at most n characters
  BINARY/VARBINARY/BYTES  standard base64 with '=' padding, as read prints bytes
  DATE                  "YYYY-MM-DD" or an integer day count since 1970-01-01
  TIMESTAMP(p)          "YYYY-MM-DD HH:MM[:SS[.fraction]]" (or T for the space), at most p
                        fraction digits, or integer epoch milliseconds (a multiple of
                        10^(3 - p) when p < 3)
  null                  NULL (refused for a NOT NULL column, as every primary-key column is)
A bad line (malformed JSON, an unknown column, a value of the wrong type) fails the whole
write naming its line and field, and nothing of it is committed.`

interface ReadCommandOptions {
  snapshot?: string
  tag?: string
  columns?: string
  filter?: string
  format?: string
  json?: boolean
  fromSnapshot?: string
  toSnapshot?: string
  mode?: string
  consumerId?: string
  scanMode?: string
  scanSnapshotId?: string
  scanTimestampMillis?: string
  follow?: boolean
  discoveryInterval?: string
}

/** `read`'s options, checked before the table is opened. */
function parseReadOptions(o: ReadCommandOptions) {
  const snapshotId = parseSnapshotOption(o.snapshot)
  const tag = parseTagOption(o.tag, snapshotId)
  const streamFlag = o.follow ? '--follow' : o.scanMode !== undefined ? '--scan-mode' : o.scanSnapshotId !== undefined ? '--scan-snapshot-id' : o.scanTimestampMillis !== undefined ? '--scan-timestamp-millis' : null
  const incremental = o.fromSnapshot !== undefined || o.consumerId !== undefined || streamFlag !== null
  if (incremental && (snapshotId !== undefined || tag !== undefined)) {
    throw new StrataInputError(`${o.consumerId !== undefined ? '--consumer-id' : o.fromSnapshot !== undefined ? '--from-snapshot' : streamFlag} with ${snapshotId !== undefined ? '--snapshot' : '--tag'}: expected one of them (an incremental read covers a range of snapshots, --snapshot and --tag read one)`)
  }
  const stream = parseStreamOptions(o)
  if (!incremental && (o.toSnapshot !== undefined || o.mode !== undefined)) {
    throw new StrataInputError(`${o.toSnapshot !== undefined ? '--to-snapshot' : '--mode'}: only with --from-snapshot or --consumer-id (an incremental read)`)
  }
  const filter = o.filter === undefined ? undefined : parseJsonOption('--filter', o.filter)
  const fromSnapshot = o.fromSnapshot === undefined ? undefined : parseSnapshotId('--from-snapshot', o.fromSnapshot, 0)
  const toSnapshot = o.toSnapshot === undefined ? undefined : parseSnapshotId('--to-snapshot', o.toSnapshot, 1)
  if (o.mode !== undefined && !(INCREMENTAL_MODES as readonly string[]).includes(o.mode)) {
    throw new StrataInputError(`--mode ${JSON.stringify(o.mode)}: expected one of ${INCREMENTAL_MODES.join(', ')}`)
  }
  if (o.consumerId !== undefined) checkConsumerId(o.consumerId)
  const format = chooseFormat(o, process.stdout.isTTY === true)
  return { snapshotId, tag, incremental, filter, fromSnapshot, toSnapshot, format, stream }
}

/** `read`'s streaming options (--scan-mode and its snapshot id and timestamp, --follow), checked before the table is opened. */
function parseStreamOptions(o: ReadCommandOptions) {
  const scanSnapshotId = o.scanSnapshotId === undefined ? undefined : parseSnapshotId('--scan-snapshot-id', o.scanSnapshotId, 1)
  if (o.scanTimestampMillis !== undefined && !/^\d+$/.test(o.scanTimestampMillis)) throw new StrataInputError(`--scan-timestamp-millis: expected epoch milliseconds (an integer >= 0), got ${JSON.stringify(o.scanTimestampMillis)}`)
  const scanTimestampMillis = o.scanTimestampMillis === undefined ? undefined : Number(o.scanTimestampMillis)
  const scanGiven = o.scanMode !== undefined || scanSnapshotId !== undefined || scanTimestampMillis !== undefined
  if (scanGiven && o.fromSnapshot !== undefined) {
    throw new StrataInputError(`--from-snapshot with ${o.scanMode !== undefined ? '--scan-mode' : scanSnapshotId !== undefined ? '--scan-snapshot-id' : '--scan-timestamp-millis'}: expected one of them (--from-snapshot names a range, a scan mode a streaming start)`)
  }
  if (o.follow && o.toSnapshot !== undefined) throw new StrataInputError('--to-snapshot with --follow: expected one of them (a follower reads on past every snapshot)')
  if (o.discoveryInterval !== undefined && !o.follow) throw new StrataInputError('--discovery-interval: only with --follow')
  const intervalMs = o.discoveryInterval === undefined ? DEFAULT_DISCOVERY_INTERVAL_MS : parseDuration(o.discoveryInterval)
  if (intervalMs === null || !Number.isFinite(intervalMs) || intervalMs <= 0) throw new StrataInputError(`--discovery-interval ${JSON.stringify(o.discoveryInterval)}: expected a duration above zero, such as '10 s' or '500 ms'`)
  return { scanMode: o.scanMode, scanSnapshotId, scanTimestampMillis, follow: o.follow === true, intervalMs }
}

/** Paimon's continuous.discovery-interval default. */
const DEFAULT_DISCOVERY_INTERVAL_MS = 10_000

async function readCommand(at: Tables, uri: string, o: ReadCommandOptions): Promise<void> {
  const { snapshotId, tag, incremental, filter, fromSnapshot, toSnapshot, format, stream } = parseReadOptions(o)
  // the engine's rows, printed per column type as they stream (no record objects in between)
  const table = (await at.open(uri)).handle
  const columns = parseColumns(table, o.columns) ?? table.view.fields.map((f) => f.name)
  const fields = columns.map((c) => table.view.fields[table.view.fieldIndex.get(c)!])
  const mode = o.mode as IncrementalMode | undefined
  const startOpts = { scanMode: stream.scanMode, scanSnapshotId: stream.scanSnapshotId, scanTimestampMillis: stream.scanTimestampMillis, mode }
  if (stream.follow || (incremental && asksForStreamingStart(table, startOpts, fromSnapshot !== undefined))) {
    const wait = at.waitForSnapshot ?? sleepThenLook
    return readStream(table, { columns, fields, filter, fromSnapshot, toSnapshot, consumerId: o.consumerId, format, startOpts, waitForSnapshot: stream.follow ? () => wait(stream.intervalMs) : undefined })
  }
  if (incremental) return readChanges(table, { columns, fields, filter, fromSnapshot, toSnapshot, mode, consumerId: o.consumerId, format })
  // a read of the latest snapshot reads the one it finds now, by id: the level-0 hint below
  // then counts the files of the snapshot whose rows were printed
  const pinned = snapshotId ?? (tag === undefined ? (await table.snapshots.latest())?.id : undefined)
  // checkFilesFirst: every file's footer and deletion vectors are read before the first
  // row, so a missing, truncated or garbled file fails the read with nothing printed;
  // damage inside a file's pages shows only as it is decoded (the read then fails, naming it)
  const iter = scan(table, { snapshotId: pinned, tag, columns, filter, checkFilesFirst: true })
  // the scan checks the snapshot and the filter when it plans, on its first batch: take
  // that batch before printing, so a refused read prints nothing on stdout
  let next = await iter.next()
  const output = new RowOutput()
  try {
    const printer = new RowPrinter(output, format, fields)
    for (; !next.done; next = await iter.next()) {
      for (const r of next.value) if (printer.add(r)) await output.flush()
    }
    printer.end()
    await output.end()
  } catch (e) {
    if (!(e instanceof OutputError)) throw e
    return quietOnClosedPipe(e)
  }
  const snapshot = tag !== undefined ? (await requireTag(table, tag)).snapshot : pinned === undefined ? null : await table.snapshots.snapshot(pinned)
  if (snapshot) await level0Hint(table, at.argument(uri), snapshot)
}

/**
 * On stderr, after a read of a table whose reads skip level 0: how many rows of the snapshot
 * wait in level 0 for a compaction to show them, and what shows them.
 */
async function level0Hint(table: Table, uri: string, snapshot: Snapshot): Promise<void> {
  const rows = await rowsWaitingForCompaction(table, snapshot)
  if (rows === 0) return
  const waiting = rows === 1 ? '1 row in level 0 waits for compaction' : `${rows} rows in level 0 wait for compaction`
  // merge-on-read lets deletion-vector reads merge level 0 in; first-row reads skip it whatever the options (as Paimon's)
  const instead = table.mergeConfig.engine === 'first-row' ? '' : `, or 'strata alter ${uri} set deletion-vectors.merge-on-read true' to merge level 0 into every read`
  process.stderr.write(`${waiting}; run 'strata compact ${uri}' to make ${rows === 1 ? 'it' : 'them'} visible${instead}\n`)
}

/** `read --from-snapshot` or `--consumer-id`: what the snapshots (from, to] changed, each row with its _kind. */
async function readChanges(
  table: Table,
  o: { columns: string[]; fields: DataField[]; filter?: Record<string, unknown>; fromSnapshot?: number; toSnapshot?: number; mode?: IncrementalMode; consumerId?: string; format: RowFormat },
): Promise<void> {
  const { consumerId, fromSnapshot } = o
  const from = consumerId !== undefined ? await consumerStart(table, consumerId, fromSnapshot) : fromSnapshot!
  // a range that starts at the consumer's progress is named as such in messages
  const fromProgress = consumerId !== undefined && from !== fromSnapshot
  const names = { from: fromProgress ? `--consumer-id ${JSON.stringify(consumerId)} (its progress) from snapshot` : '--from-snapshot', to: '--to-snapshot', mode: '--mode' }
  // planned (and refused) before anything is printed
  const plan = await planIncremental(table, { fromSnapshot: from, toSnapshot: o.toSnapshot, mode: o.mode, columns: o.columns, filter: o.filter, names })
  const output = new RowOutput()
  try {
    const printer = new RowPrinter(output, o.format, o.fields, true)
    for await (const batch of readPlan(table, plan, { filter: o.filter })) {
      for (const c of batch) if (printer.add(c.row, ROW_KIND_SHORT[c.kind])) await output.flush()
    }
    printer.end()
    await output.end()
  } catch (e) {
    if (!(e instanceof OutputError)) throw e
    // a reader that stopped early has not seen the range: its consumer stays put
    if (consumerId === undefined) return quietOnClosedPipe(e)
    const stays = fromProgress ? `its next snapshot stays ${from + 1}` : 'it has no progress recorded'
    throw new Error(`read: ${e.message}; consumer ${JSON.stringify(consumerId)} not advanced (${stays})`)
  }
  // progress is recorded once every row of the range has been handed to the OS
  if (consumerId !== undefined) {
    const next = await recordConsumer(table, consumerId, plan)
    process.stderr.write(`read snapshots (${plan.from}, ${plan.to}] (${plan.mode}); consumer ${JSON.stringify(consumerId)} next snapshot ${next ?? 'none yet'}\n`)
  }
}

/** `read --follow`'s wait: sleep the discovery interval, then look again (it never ends by itself; Ctrl-C does). */
function sleepThenLook(intervalMs: number): Promise<boolean> {
  return new Promise((resolve) => setTimeout(() => resolve(true), intervalMs))
}

/**
 * `read --scan-mode …` or `--follow` (docs/operations.md "Streaming reads"): a streaming start
 * (the full state when the mode has one, then the changes after it), or the consumer's
 * progress; with --follow, then the changes of each new snapshot. Each step is printed and
 * handed to the OS before the consumer's progress moves past it.
 */
async function readStream(
  table: Table,
  o: { columns: string[]; fields: DataField[]; filter?: Record<string, unknown>; fromSnapshot?: number; toSnapshot?: number; consumerId?: string; format: RowFormat; startOpts: StreamStartOptions; waitForSnapshot?: () => Promise<boolean> },
): Promise<void> {
  const { consumerId } = o
  const scan = resolveScan(table, o.startOpts)
  // --follow --from-snapshot A: the changes after A, then on (a range whose start has expired is refused)
  const begun = o.fromSnapshot !== undefined ? await startAfter(table, scan, consumerId, o.fromSnapshot) : await startOfRead(table, scan, consumerId)
  const fromName = begun.fromProgress ? `--consumer-id ${JSON.stringify(consumerId)} (its progress) from snapshot` : o.fromSnapshot !== undefined ? '--from-snapshot' : 'the start at snapshot'
  const steps = streamSteps(table, scan, { start: begun.start, columns: o.columns, filter: o.filter, toSnapshot: o.toSnapshot, fromName, waitForSnapshot: o.waitForSnapshot })
  let first = true
  for await (const step of steps) {
    const output = new RowOutput()
    // one header for tsv and csv however many steps follow; the table format prints a table per step
    const sink = { add: (text: string, row = true) => (row || first || o.format === 'table' ? output.add(text, row) : false) }
    try {
      const printer = new RowPrinter(sink, o.format, o.fields, true)
      for await (const batch of readStep(table, step, { columns: o.columns, filter: o.filter })) {
        for (const c of batch) if (printer.add(c.row, ROW_KIND_SHORT[c.kind])) await output.flush()
      }
      printer.end()
      await output.end()
    } catch (e) {
      if (!(e instanceof OutputError)) throw e
      if (consumerId === undefined) return quietOnClosedPipe(e)
      throw new Error(`read: ${e.message}; consumer ${JSON.stringify(consumerId)} not advanced past snapshot ${step.from}`)
    }
    first = false
    if (consumerId !== undefined) {
      const next = await recordStep(table, consumerId, step)
      const what = step.fullSnapshot !== null ? `the full state of snapshot ${step.fullSnapshot}${step.to > step.from ? ` and snapshots (${step.from}, ${step.to}]` : ''}` : `snapshots (${step.from}, ${step.to}]`
      process.stderr.write(`read ${what} (${step.mode}); consumer ${JSON.stringify(consumerId)} next snapshot ${next ?? 'none yet'}\n`)
    }
  }
}

/** The start of `--follow --from-snapshot A`: the consumer's progress if it has some, else the changes after A. */
async function startAfter(table: Table, scan: ResolvedScan, consumerId: string | undefined, fromSnapshot: number) {
  const progress = consumerId === undefined ? undefined : await consumerProgressStart(table, consumerId, scan, table.view.options.consumerIgnoreProgress)
  if (progress) return { start: progress, fromProgress: true }
  return { start: { startupMode: 'from-snapshot' as const, fullSnapshot: null, nextSnapshot: fromSnapshot + 1, mode: scan.mode }, fromProgress: false }
}

/** status, compact, expire, alter: a table's shape and upkeep. */
function addUpkeepCommands(program: Command, at: Tables): void {
  program
    .command('status <table>')
    .description('latest snapshot and, per partition and bucket, files per level and row counts')
    .option('--json', 'machine-readable output')
    .action(async (uri: string, o: { json?: boolean }) => {
      const status = await (await at.open(uri)).status()
      if (o.json) out(JSON.stringify(status))
      else out(formatStatus(status))
    })

  program
    .command('compact <table>')
    .description('compact every bucket that needs it, or the named partition/bucket, in one snapshot; says why buckets were left alone')
    .option('--partition <k=v,…>', 'only this partition')
    .option('--bucket <n>', 'only this bucket')
    .option('--full', 'full compaction into the highest level')
    .option('--json', 'one JSON line per compaction job')
    .action((uri: string, o: CompactCommandOptions) => compactCommand(at, uri, o))

  program
    .command('expire <table>')
    .description('expire old snapshots (snapshot.num-retained.*, snapshot.time-retained); --remove-orphans also deletes unreferenced files')
    .option('--remove-orphans', 'also delete files no snapshot references')
    .option('--older-than <duration>', `with --remove-orphans: only orphans older than this (default ${formatAge(DEFAULT_ORPHAN_OLDER_THAN_MS)}, at least ${formatAge(MIN_ORPHAN_OLDER_THAN_MS)})`)
    .action(async (uri: string, o: { removeOrphans?: boolean; olderThan?: string }) => {
      // every option is checked before expiration deletes anything
      if (o.olderThan !== undefined && !o.removeOrphans) throw new StrataInputError(`--older-than ${JSON.stringify(o.olderThan)}: applies only with --remove-orphans`)
      const olderThanMs = o.olderThan === undefined ? DEFAULT_ORPHAN_OLDER_THAN_MS : parseOrphanAge(o.olderThan)
      const table = await at.open(uri)
      const r = await table.expire({ removeOrphans: o.removeOrphans, olderThan: o.removeOrphans ? olderThanMs : undefined })
      out(r.expired.length ? `expired snapshots ${r.expired[0]}..${r.expired[r.expired.length - 1]} (${r.deletedFiles} files deleted); retained ${r.earliest}..${r.latest}` : `nothing to expire; retained ${r.earliest}..${r.latest}`)
      if (r.orphansRemoved !== undefined) out(`removed ${r.orphansRemoved} orphan file(s)`)
    })

  program
    .command('alter <table> <change> [args...]')
    .description(
      "evolve the schema or the table's options, one change per call, each a new schema file: add <column> <type> [--first | --after <col>] [--comment <text>]; rename <column> <new-name>; drop <column>; modify <column> [<type>] [--comment <text>] [--nullable]; comment <text> (the table's); set <key> <value> [<key> <value> …]; reset <key> [<key> …] (options; what Paimon keeps fixed once the table has snapshots is refused)",
    )
    .option('--first', 'add: put the column first')
    .option('--after <column>', 'add: put the column after this one (default: last)')
    .option('--comment <text>', "add, modify: the column's comment")
    .option('--nullable', 'modify: make a NOT NULL column nullable')
    .option('--not-null', 'modify: make a column NOT NULL (refused, as Paimon refuses it by default)')
    .action(async (uri: string, change: string, args: string[], o: { first?: boolean; after?: string; comment?: string; nullable?: boolean; notNull?: boolean }) => {
      const { alterChanges, describeOptionChanges, describeSchemaChange } = await import('./alter.ts')
      const changes = alterChanges(change, args, o)
      const table = (await (await at.open(uri)).alter(changes)).handle
      const options = change === 'set' || change === 'reset'
      out(`schema ${table.schema.id}: ${options ? describeOptionChanges(changes) : describeSchemaChange(table.schema)}`)
    })
}

interface CompactCommandOptions {
  partition?: string
  bucket?: string
  full?: boolean
  json?: boolean
}

async function compactCommand(at: Tables, uri: string, o: CompactCommandOptions): Promise<void> {
  const table = await at.open(uri)
  const { checkBucket, describeSkipped, parsePartitionSpec } = await import('../lsm/compact-table.ts')
  const bucket = o.bucket === undefined ? undefined : checkBucket(table.handle, /^\d+$/.test(o.bucket) ? Number(o.bucket) : Number.NaN, '--bucket', o.bucket)
  const progress = new Progress()
  let jobs = 0
  const r = await table.compact({
    partition: o.partition === undefined ? undefined : parsePartitionSpec(table.handle, o.partition),
    bucket,
    full: o.full,
    onCompaction: (job) => {
      jobs++
      progress.update(`compacted ${jobs} buckets`)
      if (o.json) out(JSON.stringify(job))
    },
  })
  progress.done()
  if (o.json) return
  const { jobs: done, skipped } = r
  if (done.length === 0) {
    const filtered = o.partition !== undefined || bucket !== undefined
    const why = skipped.length === 0 ? (filtered ? 'no bucket with data files matches --partition/--bucket' : 'the table has no data files') : describeSkipped(skipped)
    // --full rewrites what the picker leaves alone, where a full compaction would change something
    const hint = !o.full && skipped.some((k) => 'fullWouldCompact' in k && k.fullWouldCompact) ? "; 'strata compact --full' rewrites every bucket into the top level" : ''
    out(`nothing to compact: ${why}${hint}`)
    return
  }
  const sum = (f: (j: (typeof done)[number]) => number) => done.reduce((n, j) => n + f(j), 0)
  out(
    `${done.length} compaction(s): ${sum((j) => j.inputFiles)} files in, ${sum((j) => j.outputFiles)} written, ${sum((j) => j.upgradedFiles)} upgraded; ` +
      `${r.snapshots === 1 ? 'snapshot' : `${r.snapshots} snapshots, latest`} ${r.snapshotId}` +
      (skipped.length ? `; skipped ${describeSkipped(skipped, true)}` : ''),
  )
}

/** consumer list, consumer delete. */
function addConsumerCommands(program: Command, at: Tables): void {
  const consumer = program.command('consumer').description("consumer ids: the progress of `read --consumer-id`, kept by expiration (Paimon's consumer files)")
  consumer
    .command('list <table>')
    .description('the consumers: id, next snapshot, last update')
    .option('--json', 'one JSON object per consumer')
    .action(async (uri: string, o: { json?: boolean }) => {
      const all = await (await at.open(uri)).listConsumers()
      if (!o.json) out(['id', 'nextSnapshot', 'updated'].join('\t'))
      for (const c of all) {
        const updated = new Date(c.lastModifiedMillis).toISOString()
        out(o.json ? JSON.stringify({ id: c.id, nextSnapshot: c.nextSnapshot, updated }) : [c.id, c.nextSnapshot, updated].join('\t'))
      }
    })
  consumer
    .command('delete <table> <id>')
    .description('delete a consumer, so expiration no longer keeps snapshots for it')
    .action(async (uri: string, id: string) => {
      checkConsumerId(id, 'consumer id')
      await (await at.open(uri)).deleteConsumer(id)
      out(`deleted consumer ${JSON.stringify(id)}`)
    })
}

/** tag create, tag delete, tag list. */
function addTagCommands(program: Command, at: Tables): void {
  const tag = program.command('tag').description("tags: names that pin a snapshot, kept by expiration and orphan cleanup (Paimon's tag files)")
  tag
    .command('create <table> <name>')
    .description('tag the latest snapshot, or the one given')
    .option('--snapshot <id>', 'the snapshot to tag (a retained one); default the latest')
    .action(async (uri: string, name: string, o: { snapshot?: string }) => {
      checkTagName(name)
      const snapshotId = parseSnapshotOption(o.snapshot)
      const r = await (await at.open(uri)).createTag(name, { snapshotId })
      out(`tagged snapshot ${r.snapshotId} as ${JSON.stringify(r.name)}`)
    })
  tag
    .command('delete <table> <name>')
    .description('delete a tag, and the files only it kept')
    .action(async (uri: string, name: string) => {
      checkTagName(name)
      const r = await (await at.open(uri)).deleteTag(name)
      out(`deleted tag ${JSON.stringify(r.name)} of snapshot ${r.snapshotId} (${r.deletedFiles} files only it kept deleted)`)
    })
  tag
    .command('list <table>')
    .description('list the tags: name, snapshot id, snapshot time, rows, and when Paimon set them the tag time and retention')
    .option('--json', 'one JSON object per tag')
    .action(async (uri: string, o: { json?: boolean }) => {
      // the tags as stored, with the times Paimon may have set on them
      const tags = await listTags((await at.open(uri)).handle)
      if (!o.json) out(['name', 'snapshot', 'snapshotTime', 'rows', 'tagCreateTime', 'tagTimeRetained'].join('\t'))
      for (const t of tags) {
        const created = t.tagCreateTime ? localDateTimeText(t.tagCreateTime) : null
        const retained = t.tagTimeRetained ? `${t.tagTimeRetained.seconds + t.tagTimeRetained.nanos / 1e9} s` : null
        const time = new Date(t.snapshot.timeMillis).toISOString()
        if (o.json) out(JSON.stringify({ name: t.name, snapshot: t.snapshot.id, snapshotTime: time, rows: t.snapshot.totalRecordCount, tagCreateTime: created, tagTimeRetained: retained }))
        else out([t.name, t.snapshot.id, time, t.snapshot.totalRecordCount, created ?? '', retained ?? ''].join('\t'))
      }
    })
}

/** `--tag NAME`: a valid tag name, and not together with `--snapshot`. */
function parseTagOption(v: string | undefined, snapshotId: number | undefined): string | undefined {
  if (v === undefined) return undefined
  if (snapshotId !== undefined) throw new StrataInputError(`--tag ${JSON.stringify(v)} and --snapshot ${snapshotId}: expected one of them (a tag names its snapshot)`)
  return checkTagName(v, '--tag')
}

function parseJsonOption(name: string, text: string): Record<string, unknown> {
  let v: unknown
  try {
    v = JSON.parse(text)
  } catch (e) {
    throw new StrataInputError(`${name}: malformed JSON (${(e as Error).message})`)
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new StrataInputError(`${name}: expected a JSON object, got ${text}`)
  return v as Record<string, unknown>
}

/** The exit code of each kind of error (docs/operations.md lists them). */
export const EXIT_CODES: Readonly<Record<ErrorKind, number>> = {
  input: 2,
  'not-found': 3,
  conflict: 4,
  'stale-schema': 5,
  store: 6,
  refused: 7,
  corrupt: 8,
  internal: 1,
}

/**
 * What a failure ends the CLI with: its exit code and the one line printed after `strata: `
 * (null when nothing is printed). The one place errors become exit codes:
 * - commander's own exits (help, version: 0; a usage error: 2), which it has printed itself;
 * - a StrataError or a store's error: its kind's code in EXIT_CODES (bad input 2, not found 3,
 *   a lost race 4, a stale schema 5, the store 6, refused 7, a corrupt file 8);
 * - anything else (a closed output, a bug): 1.
 * A command that ends normally may still set a soft failure through process.exitCode (a
 * lookup that finds nothing: 1), with no message.
 */
export function exitOf(e: unknown): { code: number; message: string | null } {
  if (e instanceof CommanderError) return { code: e.exitCode === 0 ? 0 : 2, message: null }
  const msg = e instanceof Error ? e.message : String(e)
  return { code: EXIT_CODES[errorKind(e)], message: msg.split('\n')[0] }
}

export async function main(argv: string[], seams: CliSeams = {}): Promise<number> {
  const program = buildProgram(seams)
  // actions report a soft failure (a lookup that finds nothing) through process.exitCode;
  // isolate it so in-process callers (the demo, tests) get one call's code each
  const outer = process.exitCode
  process.exitCode = 0
  try {
    await program.parseAsync(argv, { from: 'user' })
    return typeof process.exitCode === 'number' ? process.exitCode : 0
  } catch (e) {
    const { code, message } = exitOf(e)
    if (message !== null) {
      process.stderr.write(`strata: ${message}\n`)
      if (process.env.STRATA_DEBUG && e instanceof Error) process.stderr.write(`${e.stack}\n`)
    }
    return code
  } finally {
    process.exitCode = outer
  }
}
