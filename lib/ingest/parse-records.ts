// The first step of a writer batch: each record's body parsed strictly, routed to its
// table and checked against it (lib/write/record-checks.ts), so a bad record is rejected on
// its own; then the rejects stored, before anything is acknowledged.

import { randomUUID } from 'node:crypto'
import type { ObjectStore } from '../store/object-store.ts'
import { JsonNumber, parseJsonLine } from '../table/json-line.ts'
import { recordFromJson } from '../table/json-values.ts'
import { NotFoundError, StrataInputError } from '../errors.ts'
import { type RecordRules, type WriteRecord, refusedRecord } from '../write/record-checks.ts'

/** A record as the source delivered it. */
export interface IngestRecord {
  /** stable id of the record at its source, the same on every redelivery (SQS messageId, Kinesis sequence number) */
  id: string
  /** human-readable source position, stored with a rejected record */
  source: string
  /** the record: a JSON object with the table's columns, optional "_kind" and "_table" */
  body: string
  /** set when the source's bytes were not text (`body` then holds a lossy decoding): the record is rejected with this reason */
  unreadable?: string
  /**
   * SQS redelivery facts (ApproximateReceiveCount, ApproximateFirstReceiveTimestamp). A
   * record received more than once may have been committed by an earlier attempt in a
   * different batch; such records are looked up one by one (see committedEarlier).
   */
  receiveCount?: number
  firstReceivedAt?: number
  /** epoch ms the source accepted the record (SQS SentTimestamp, Kinesis approximateArrivalTimestamp): the start of its freshness budget */
  sentAt?: number
}

export interface Rejection {
  id: string
  source: string
  reason: string
  record: string
}

/** A record's table and columns: its body parsed strictly (parseJsonLine), `_table` taken out. */
function route(r: IngestRecord, defaultTable: string | undefined): { name: string; columns: Record<string, unknown> } {
  if (r.unreadable) throw new StrataInputError(`${r.source}: ${r.unreadable}`)
  const obj = parseJsonLine(r.body, r.source)
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj) || obj instanceof JsonNumber) {
    throw new StrataInputError(`${r.source}: expected a JSON object with the table's columns`)
  }
  const table = obj._table
  if (table !== undefined && typeof table !== 'string') throw new StrataInputError(`${r.source}: field '_table' expected a table name (a string), got ${table instanceof JsonNumber ? table.text : JSON.stringify(table)?.slice(0, 60)}`)
  const name = table ?? defaultTable
  if (!name) throw new StrataInputError("field '_table' is missing and this writer serves several tables")
  delete obj._table
  return { name, columns: obj }
}

/** The reason stored with a rejected record: an input error's message, or what else went wrong reading it. */
function rejectReason(r: IngestRecord, e: unknown): string {
  if (e instanceof StrataInputError) return e.message
  return `${r.source}: the record could not be read (${(e as Error)?.name ?? 'error'}: ${(e as Error)?.message ?? String(e)})`
}

/** A table's records that parsed and that it takes, in input order, with their source ids. */
export interface ParsedRecords {
  records: WriteRecord[]
  ids: string[]
}

/** What parsing a batch found: the records per table, the rejected ones, and the ones the source must redeliver. */
export interface ParsedBatch {
  /** each table's records, in the order the tables first appeared */
  tables: Map<string, ParsedRecords>
  rejections: Rejection[]
  /** ids the source must redeliver */
  failed: string[]
  errors: { table: string; error: string }[]
  /** ordered sources: the index of the first record that failed; nothing from it on may be committed */
  cut: number
}

/** The tables a batch's records name, each resolved once (by its first record) and kept for the batch's later steps. */
export class TableTargets<T> {
  readonly #resolve: (name: string) => Promise<T | null>
  readonly #opened = new Map<string, T>()

  constructor(resolve: (name: string) => Promise<T | null>) {
    this.#resolve = resolve
  }

  /** The table's target, resolved now; null for an unknown table (not kept: the next record asks again). */
  async open(name: string): Promise<T | null> {
    const target = await this.#resolve(name)
    if (target) this.#opened.set(name, target)
    return target
  }

  /** The target `open` resolved for the table, or null. */
  opened(name: string): T | null {
    return this.#opened.get(name) ?? null
  }
}

/**
 * Parses and routes every record. Any error reading one record rejects that record alone,
 * whatever its kind: a batch that failed on one record would come back until the DLQ took
 * the good ones with it. A table that cannot be opened (storage) is not the record's fault:
 * its records are redelivered.
 */
export async function parseRecords<T extends { table: RecordRules }>(
  records: IngestRecord[],
  targets: TableTargets<T>,
  opts: { defaultTable?: string; orderedSource?: boolean },
): Promise<ParsedBatch> {
  const out: ParsedBatch = { tables: new Map(), rejections: [], failed: [], errors: [], cut: records.length }
  // tables whose opening failed in this call: their records are redelivered, not retried one by one
  const unopened = new Set<string>()
  for (let i = 0; i < records.length; i++) {
    const r = records[i]
    const reject = (e: unknown) => out.rejections.push({ id: r.id, source: r.source, reason: rejectReason(r, e), record: r.body })
    let routed: { name: string; columns: Record<string, unknown> }
    try {
      routed = route(r, opts.defaultTable)
    } catch (e) {
      reject(e)
      continue
    }
    const { name, columns } = routed
    let target = targets.opened(name)
    if (!target) {
      try {
        if (!unopened.has(name)) target = await targets.open(name)
      } catch (e) {
        unopened.add(name)
        out.errors.push({ table: name, error: (e as Error).message })
      }
      if (unopened.has(name)) {
        out.failed.push(r.id)
        if (opts.orderedSource) out.cut = Math.min(out.cut, i)
        continue
      }
      if (!target) {
        reject(new NotFoundError(`field '_table': unknown table '${name}'`))
        continue
      }
      out.tables.set(name, { records: [], ids: [] })
    }
    try {
      const rec = { ...recordFromJson(target.table.view, columns, r.source), where: r.source }
      const refusal = refusedRecord(target.table, rec)
      if (refusal) throw new StrataInputError(`${r.source}: ${refusal}`)
      const parsed = out.tables.get(name)!
      parsed.records.push(rec)
      parsed.ids.push(r.id)
    } catch (e) {
      reject(e)
    }
  }
  return out
}

/**
 * Stores the batch's rejected records in the reject location, one object per batch. Rejects
 * go first: a record is acked only once it is either committed or stored as rejected, so
 * when the store fails they are redelivered.
 */
export async function storeRejections(batch: ParsedBatch, records: IngestRecord[], rejects: ObjectStore, orderedSource: boolean | undefined, now: () => number): Promise<void> {
  const rejections = batch.rejections
  if (rejections.length === 0) return
  const day = new Date(now()).toISOString().slice(0, 10)
  const key = `dt=${day}/${randomUUID()}.jsonl`
  const body = rejections.map((x) => JSON.stringify({ reason: x.reason, source: x.source, id: x.id, record: x.record, rejectedAt: new Date(now()).toISOString() })).join('\n') + '\n'
  try {
    await rejects.put(key, new TextEncoder().encode(body))
  } catch (e) {
    batch.errors.push({ table: '', error: `reject location ${rejects.uri}: ${(e as Error).message}` })
    for (const x of rejections) batch.failed.push(x.id)
    if (orderedSource) batch.cut = Math.min(batch.cut, ...rejections.map((x) => records.findIndex((r) => r.id === x.id)))
  }
}
