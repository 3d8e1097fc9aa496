// What a deployment is billed for, counted: the embedded backend's own request counts
// (local/request-counts.ts) sorted into AWS's billing classes per component of the
// deployment, the functions' invocations and billed durations, and the prices of
// bench/prices-us-east-1.json that turn them into dollars. bench/cost.ts drives it;
// test/cost-counting.test.ts checks the tally against the backend's counts.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { RequestCount } from '../../local/request-counts.ts'
import { CALLER } from '../../local/runtime/local-runtime.ts'

export const PRICE_FILE = join(import.meta.dirname, '..', 'prices-us-east-1.json')

/** Seconds in a month as AWS prices by the hour: 730 hours. */
export const SECONDS_PER_MONTH = 730 * 3600

export interface PriceEntry {
  usd: number
  unit: string
  source: string
  seen: string | null
  verified: boolean
}

export interface PriceFile {
  region: string
  taken: string
  note: string
  prices: Record<string, PriceEntry>
}

export function loadPrices(path = PRICE_FILE): PriceFile {
  return JSON.parse(readFileSync(path, 'utf8')) as PriceFile
}

/** A price by its name in the file; a missing one is an error, never zero. */
export function priceOf(p: PriceFile, name: string): number {
  const e = p.prices[name]
  if (!e || !Number.isFinite(e.usd)) throw new Error(`price file ${p.region} ${p.taken}: no price '${name}'`)
  return e.usd
}

/** S3's request classes: PUT, COPY, POST, LIST (tier 1); GET, HEAD and every other request (tier 2); DELETE and abort, free. */
export type S3Class = 'tier1' | 'tier2' | 'free'

const S3_TIER1 = /^(Put|Copy|Post|List|Create|UploadPart|CompleteMultipartUpload)/
const S3_FREE = new Set(['DeleteObject', 'DeleteObjects', 'AbortMultipartUpload', 'DeleteBucket'])

export function s3ClassOf(operation: string): S3Class {
  if (S3_FREE.has(operation)) return 'free'
  return S3_TIER1.test(operation) ? 'tier1' : 'tier2'
}

/** The parts of a deployment a request is billed to. */
export const COMPONENTS = ['writer', 'compactor', 'committer', 'maintenance', 'esm-writer', 'esm-compactor', 'esm-committer', 'upstream'] as const
export type Component = (typeof COMPONENTS)[number]
/** The maintenance function's app id on the local runtime (bench/cost.ts invokes it). */
export const MAINTENANCE_CALLER = 'mt'

/** The component whose client sent a request, from its app id (local-runtime CALLER); null: not the deployment's (setup, the benchmark's own reads). */
export function componentOf(caller: string): Component | null {
  const fn = (id: string): 'writer' | 'compactor' | 'committer' | 'maintenance' | null =>
    id === CALLER.writer ? 'writer' : /^c\d+$/.test(id) ? 'compactor' : /^m\d+$/.test(id) ? 'committer' : id === MAINTENANCE_CALLER ? 'maintenance' : null
  if (caller === CALLER.upstream) return 'upstream'
  const esm = CALLER.eventSource('')
  if (caller.startsWith(esm)) {
    const f = fn(caller.slice(esm.length))
    return f === 'writer' || f === 'compactor' || f === 'committer' ? `esm-${f}` : null
  }
  return fn(caller)
}

/** Billed requests of one component. */
export interface RequestTally {
  s3Tier1: number
  s3Tier2: number
  s3Free: number
  /** SQS requests as billed: 64 KiB chunks, on FIFO and on standard queues */
  sqsFifoChunks: number
  sqsStandardChunks: number
  /** SQS API calls (one per request, whatever its size) */
  sqsRequests: number
  /** ReceiveMessage calls answered empty (their chunks are in the sums above) */
  sqsEmptyReceives: number
  /** requests that are neither S3 nor SQS */
  other: number
}

export const emptyTally = (): RequestTally => ({ s3Tier1: 0, s3Tier2: 0, s3Free: 0, sqsFifoChunks: 0, sqsStandardChunks: 0, sqsRequests: 0, sqsEmptyReceives: 0, other: 0 })

/** Adds a backend count cell to a tally. */
export function addCell(t: RequestTally, c: RequestCount): void {
  if (c.service === 's3') {
    const k = s3ClassOf(c.operation)
    if (k === 'tier1') t.s3Tier1 += c.requests
    else if (k === 'tier2') t.s3Tier2 += c.requests
    else t.s3Free += c.requests
  } else if (c.service === 'sqs') {
    t.sqsRequests += c.requests
    if (c.resource.endsWith('.fifo')) t.sqsFifoChunks += c.chunks
    else t.sqsStandardChunks += c.chunks
    if (c.operation === 'ReceiveMessage') t.sqsEmptyReceives += c.empty
  } else t.other += c.requests
}

export interface RequestTallies {
  byComponent: Record<Component, RequestTally>
  /** requests of no component of the deployment, by caller */
  notBilled: Record<string, RequestTally>
}

/** Sorts the backend's counts into each component's billed requests. */
export function tallyRequests(counts: RequestCount[]): RequestTallies {
  const byComponent = Object.fromEntries(COMPONENTS.map((c) => [c, emptyTally()])) as Record<Component, RequestTally>
  const notBilled: Record<string, RequestTally> = {}
  for (const cell of counts) {
    const c = componentOf(cell.caller)
    addCell(c ? byComponent[c] : (notBilled[cell.caller] ??= emptyTally()), cell)
  }
  return { byComponent, notBilled }
}

/** The sum of tallies. */
export function sumTallies(ts: RequestTally[]): RequestTally {
  const out = emptyTally()
  for (const t of ts) for (const k of Object.keys(out) as (keyof RequestTally)[]) out[k] += t[k]
  return out
}

/** S3 requests by object kind (snapshot, manifest, index, data, …) and class, for one component or all. */
export function s3ByKind(counts: RequestCount[], component?: Component): Record<string, { tier1: number; tier2: number }> {
  const out: Record<string, { tier1: number; tier2: number }> = {}
  for (const c of counts) {
    if (c.service !== 's3' || (component && componentOf(c.caller) !== component)) continue
    const k = s3ClassOf(c.operation)
    if (k === 'free') continue
    const row = (out[`${c.kind} ${c.operation}`] ??= { tier1: 0, tier2: 0 })
    row[k] += c.requests
  }
  return out
}
