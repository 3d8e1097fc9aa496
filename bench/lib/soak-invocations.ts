// What the soak learns from the functions' invocations (soak-run.ts): failures and
// durations per function, cold starts, every delivery of every totals message, which orders
// messages were acknowledged, each compaction job received and what the compactors logged of
// it, and (driven by events) what each fault's work still waits for.

import { createHash } from 'node:crypto'
import type { InvokeResult } from '../../local/runtime/execution-environment.ts'

export interface JobReceived {
  /** seconds since the load started */
  at: number
  messageId: string
  bucket: number
  key: string
  followUp: boolean
  receive: number
  /** deleted, left (returned for another try) or the invocation's error */
  outcome: string
}

export interface Delivery {
  /** hash of the batch's message ids */
  batch: string
  receive: number
  /** 'ok' or the error name of a failed invocation */
  outcome: string
  deleted: boolean
  /** epoch ms the invocation started */
  at: number
}

/**
 * One compactor log line (Powertools JSON, functions/compactor.ts) in a few words, with the
 * messages it is about: a job's outcome (compacted, nothing to compact, overtaken; the
 * snapshot it read and landed, its input files, whether it sent a follow-up) or a bucket's
 * failure; null for any other line.
 */
export function compactorLogDetail(line: string): { messageIds: string[]; text: string } | null {
  let entry: Record<string, unknown>
  try {
    entry = JSON.parse(line) as Record<string, unknown>
  } catch {
    return null
  }
  if (Array.isArray(entry.messageIds)) {
    const text = `${entry.message}: read ${entry.baseSnapshot}, landed ${entry.snapshot ?? '-'}, ${entry.inputFiles} in${entry.needsMore ? ', capped' : ''}${entry.conflictRetries ? `, ${entry.conflictRetries} conflict retries` : ''}, follow-up ${entry.followUp ? 'sent' : 'none'}`
    return { messageIds: entry.messageIds as string[], text }
  }
  if (typeof entry.messageId === 'string' && typeof entry.error === 'string') return { messageIds: [entry.messageId], text: `failed: ${entry.error.slice(0, 200)}` }
  return null
}

/** A function's progress under `events`: see InvocationLog.progress. */
export interface Progress {
  failed: { startedAt: number; endedAt: number; left: string[] }[]
  deleted: Set<string>
  lastOkStart: number
}

function newProgress(): Progress {
  return { failed: [] as { startedAt: number; endedAt: number; left: string[] }[], deleted: new Set<string>(), lastOkStart: 0 }
}

type Fn = 'writer' | 'compactor'
interface InvocationInfo {
  records: { messageId: string; body: string; attributes: { ApproximateReceiveCount: string } }[]
  result: InvokeResult
  startedAt: number
  endedAt: number
  deleted: string[]
}

export class InvocationLog {
  /**
   * every delivery of every totals message (which batch, what became of it), for the report
   * on an excess or a shortfall
   */
  readonly totalsMeta = new Map<string, { customer: string; qty: number; deliveries: Delivery[] }>()
  writerColdStarts = 0
  compactorColdStarts = 0
  redeliveredRecords = 0
  /** failed invocations by error, per function: injected faults, and anything else */
  readonly failures = { writer: new Map<string, number>(), compactor: new Map<string, number>() }
  readonly durations = { writer: [] as number[], compactor: [] as number[] }
  /**
   * orders messages not yet acknowledged → (id, version); once the poller deleted one after
   * a successful invocation (which the writer answers only after its commit), the highest
   * acknowledged version per id
   */
  readonly ordersPending = new Map<string, [number, number]>()
  readonly ackedVersion = new Map<number, number>()
  /**
   * with `events`: per function, the invocations that left messages on the queue, the
   * messages deleted since, and the start of the latest invocation that succeeded, to tell
   * when a fault's work was done again (kept only then: a long run's heap)
   */
  readonly progress = { writer: newProgress(), compactor: newProgress() }
  jobsDelivered = 0
  /** every compaction job received (the last few thousand per table), for the drain's diagnosis */
  readonly jobLog = new Map<string, JobReceived[]>()
  /** what the compactors logged of each message (lib/jobs/process-jobs.ts outcomes and failures), by message id */
  readonly jobDetail = new Map<string, string>()
  /** epoch ms the load started (until then: when the soak started), for the times of jobs received */
  loadStart = Date.now()

  /** @param events the run is driven by events (SoakOptions.events): keep each function's progress */
  constructor(private readonly events: boolean) {}

  private noteFailure(fn: Fn, result: InvokeResult): void {
    this.durations[fn].push(result.durationMs)
    if (result.ok) return
    const key = `${result.error.name}: ${result.error.message.replace(/\d+/g, 'N').slice(0, 120)}`
    this.failures[fn].set(key, (this.failures[fn].get(key) ?? 0) + 1)
  }

  private noteProgress(fn: Fn, info: InvocationInfo): void {
    if (!this.events) return
    const p = this.progress[fn]
    for (const id of info.deleted) p.deleted.add(id)
    if (info.deleted.length < info.records.length) {
      const deleted = new Set(info.deleted)
      p.failed.push({ startedAt: info.startedAt, endedAt: info.endedAt, left: info.records.map((r) => r.messageId).filter((id) => !deleted.has(id)) })
    }
    if (info.result.ok) p.lastOkStart = Math.max(p.lastOkStart, info.startedAt)
  }

  onWriter(info: InvocationInfo): void {
    if (info.result.coldStart) this.writerColdStarts++
    this.noteFailure('writer', info.result)
    this.noteProgress('writer', info)
    const ids = info.records.map((r) => r.messageId).sort()
    const signature = createHash('sha1').update(ids.join(',')).digest('hex').slice(0, 16)
    for (const id of info.deleted) {
      const k = this.ordersPending.get(id)
      if (!k) continue
      this.ordersPending.delete(id)
      this.ackedVersion.set(k[0], Math.max(this.ackedVersion.get(k[0]) ?? 0, k[1]))
    }
    for (const r of info.records) {
      if (r.attributes.ApproximateReceiveCount !== '1') this.redeliveredRecords++
      this.totalsMeta.get(r.messageId)?.deliveries.push({
        batch: signature,
        receive: Number(r.attributes.ApproximateReceiveCount),
        outcome: info.result.ok ? 'ok' : info.result.error.name,
        deleted: info.deleted.includes(r.messageId),
        at: info.startedAt,
      })
    }
  }

  onCompactor(t: string, info: InvocationInfo): void {
    if (info.result.coldStart) this.compactorColdStarts++
    this.jobsDelivered += info.records.length
    this.noteFailure('compactor', info.result)
    this.noteProgress('compactor', info)
    // each job received, for the drain's diagnosis of a bucket left without one
    const log = this.jobLog.get(t) ?? this.jobLog.set(t, []).get(t)!
    const at = Math.round((info.startedAt - this.loadStart) / 100) / 10
    for (const r of info.records) {
      try {
        const job = JSON.parse(r.body) as { bucket: number; dedupKey?: string; followUp?: boolean }
        log.push({ at, messageId: r.messageId, bucket: job.bucket, key: job.dedupKey ?? '-', followUp: job.followUp === true, receive: Number(r.attributes.ApproximateReceiveCount), outcome: info.result.ok ? (info.deleted.includes(r.messageId) ? 'deleted' : 'left') : info.result.error.name })
      } catch {
        log.push({ at, messageId: r.messageId, bucket: -1, key: 'undecodable', followUp: false, receive: Number(r.attributes.ApproximateReceiveCount), outcome: '-' })
      }
    }
    if (log.length > 4000) log.splice(0, log.length - 2000)
  }

  onCompactorLog(_table: string, line: string): void {
    const detail = compactorLogDetail(line)
    if (!detail) return
    for (const id of detail.messageIds) this.jobDetail.set(id, detail.text)
    if (this.jobDetail.size > 20_000) for (const k of [...this.jobDetail.keys()].slice(0, 10_000)) this.jobDetail.delete(k)
  }

  describeJob(j: JobReceived, withKey: boolean): string {
    return `@${j.at}s${withKey ? ` ${j.key}` : ''}${j.followUp ? ' follow-up' : ''} receive ${j.receive} ${j.outcome}${this.jobDetail.has(j.messageId) ? ` (${this.jobDetail.get(j.messageId)})` : ''}`
  }
}
