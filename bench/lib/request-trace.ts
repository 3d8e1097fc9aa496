// Records every HTTP request an S3 client sends, with its start and end time, by a
// middleware inside the SDK's retry layer (so a retried call is one request per attempt,
// as S3 bills it), and summarizes a window of them: requests by operation, bytes moved,
// the GETs of table metadata by kind, and the dependent depth.
//
// The dependent depth is the most requests of the window that are pairwise disjoint in
// time: a set of requests none of which overlaps another cannot have run in parallel, so
// at least that many round trips followed one another. It is found greedily by earliest
// end (the classic interval-scheduling argument makes that the maximum). It counts round
// trips, not milliseconds; with a first-byte latency per request (the embedded backend's
// model) the latency dominates every request and the depth is the chain of waits a job
// pays. Without added latency a request takes about a millisecond and two requests sent
// "at once" from a busy event loop often do not overlap, so the depth at 0 ms is an upper
// bound that swings from run to run.
//
// A GET ends when its body has been read, not when its headers arrived: the caller can
// start a request that depends on the bytes only then. The middleware listens for the
// body stream's `end` (a listener that does not switch the stream into flowing mode);
// an unread body keeps its headers time.

import type { S3Client } from '@aws-sdk/client-s3'

export type S3Op = 'GET' | 'GET range' | 'HEAD' | 'PUT' | 'conditional PUT' | 'DELETE' | 'LIST' | 'other'

export const S3_OPS: S3Op[] = ['GET', 'GET range', 'HEAD', 'PUT', 'conditional PUT', 'DELETE', 'LIST', 'other']

/** What a manifest/ GET read, by the object's name prefix (docs/format.md "Avro manifests"). */
export type MetadataKind = 'manifest list' | 'manifest' | 'index manifest'

export const METADATA_KINDS: MetadataKind[] = ['manifest list', 'manifest', 'index manifest']

export interface TracedRequest {
  op: S3Op
  /** SDK command name, e.g. GetObjectCommand */
  command: string
  /** object key as sent (the store's prefix included); for LIST its prefix */
  key: string
  /** performance.now() when the attempt was handed to the HTTP layer */
  start: number
  /** performance.now() when its response (for a GET: its body) was complete, or it failed */
  end: number
  /** response body bytes (Content-Length of a successful response) */
  bytesIn: number
  /** request body bytes */
  bytesOut: number
  /** HTTP status, or 0 when none came back */
  status: number
}

export interface MetadataReads {
  gets: number
  bytes: number
}

export interface TraceSummary {
  requests: number
  byOp: Record<S3Op, number>
  bytesIn: number
  bytesOut: number
  /** the most pairwise non-overlapping requests (see above) */
  depth: number
  /** first start to last end of the window's requests, ms (0 when there were none) */
  spanMs: number
  /** GETs of keys under manifest/, by kind */
  metadata: Record<MetadataKind, MetadataReads>
}

function header(headers: Record<string, string> | undefined, name: string): string | undefined {
  if (!headers) return undefined
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === name) return v
  return undefined
}

function bodyLength(body: unknown): number {
  if (typeof body === 'string') return Buffer.byteLength(body)
  if (body instanceof Uint8Array) return body.byteLength
  return 0
}

function opOf(command: string, input: Record<string, unknown>): S3Op {
  switch (command) {
    case 'GetObjectCommand':
      return input.Range ? 'GET range' : 'GET'
    case 'HeadObjectCommand':
      return 'HEAD'
    case 'PutObjectCommand':
      return input.IfNoneMatch !== undefined || input.IfMatch !== undefined ? 'conditional PUT' : 'PUT'
    case 'DeleteObjectCommand':
    case 'DeleteObjectsCommand':
      return 'DELETE'
    case 'ListObjectsV2Command':
    case 'ListObjectsCommand':
      return 'LIST'
    default:
      // multipart uploads (objects past the part size), which the benchmarks' small files never need
      return 'other'
  }
}

/** The kind of a metadata object by its key, or null for data files, snapshots, hints… */
export function metadataKindOf(key: string): MetadataKind | null {
  const m = /(?:^|\/)manifest\/([^/]+)$/.exec(key)
  if (!m) return null
  const name = m[1]
  // the longer prefixes first: every manifest list name also starts with `manifest-`
  if (name.startsWith('manifest-list-')) return 'manifest list'
  if (name.startsWith('index-manifest-')) return 'index manifest'
  if (name.startsWith('manifest-')) return 'manifest'
  return null
}

/**
 * The most pairwise disjoint intervals, greedy by earliest end: one longest chain of
 * requests that followed one another, in time order (its length is the depth).
 */
export function dependentChain<T extends { start: number; end: number }>(intervals: readonly T[]): T[] {
  const byEnd = [...intervals].sort((a, b) => a.end - b.end)
  const chain: T[] = []
  let lastEnd = -Infinity
  for (const r of byEnd) {
    if (r.start >= lastEnd) {
      chain.push(r)
      lastEnd = r.end
    }
  }
  return chain
}

export function dependentDepth(intervals: readonly { start: number; end: number }[]): number {
  return dependentChain(intervals).length
}

export function summarize(requests: readonly TracedRequest[]): TraceSummary {
  const byOp = Object.fromEntries(S3_OPS.map((o) => [o, 0])) as Record<S3Op, number>
  const metadata = Object.fromEntries(METADATA_KINDS.map((k) => [k, { gets: 0, bytes: 0 }])) as Record<MetadataKind, MetadataReads>
  let bytesIn = 0, bytesOut = 0
  let first = Infinity, last = -Infinity
  for (const r of requests) {
    byOp[r.op]++
    bytesIn += r.bytesIn
    bytesOut += r.bytesOut
    first = Math.min(first, r.start)
    last = Math.max(last, r.end)
    const kind = r.op === 'GET' || r.op === 'GET range' ? metadataKindOf(r.key) : null
    if (kind) {
      metadata[kind].gets++
      metadata[kind].bytes += r.bytesIn
    }
  }
  return { requests: requests.length, byOp, bytesIn, bytesOut, depth: dependentDepth(requests), spanMs: requests.length ? last - first : 0, metadata }
}

export class RequestTrace {
  private current: TracedRequest[] = []
  private readonly attached = new WeakSet<S3Client>()

  constructor(client?: S3Client) {
    if (client) this.attach(client)
  }

  /** Adds the recording middleware to a client (once per client). */
  attach(client: S3Client): void {
    if (this.attached.has(client)) return
    this.attached.add(client)
    client.middlewareStack.add(
      (next, context) => async (args) => {
        const input = ((args as unknown as { input?: Record<string, unknown> }).input ?? {}) as Record<string, unknown>
        const request = (args as unknown as { request?: { headers?: Record<string, string>; body?: unknown } }).request
        const command = context.commandName ?? 'unknown'
        const sent = header(request?.headers, 'content-length')
        const r: TracedRequest = {
          op: opOf(command, input),
          command,
          key: typeof input.Key === 'string' ? input.Key : typeof input.Prefix === 'string' ? input.Prefix : '',
          start: performance.now(),
          end: NaN,
          bytesIn: 0,
          bytesOut: sent !== undefined ? Number(sent) || 0 : bodyLength(input.Body ?? request?.body),
          status: 0,
        }
        // recorded up front, so a window taken while it is in flight still holds it
        this.current.push(r)
        try {
          const res = await next(args)
          const response = res.response as { statusCode?: number; headers?: Record<string, string>; body?: unknown }
          r.end = performance.now()
          r.status = response.statusCode ?? 0
          r.bytesIn = Number(header(response.headers, 'content-length') ?? 0) || 0
          const body = response.body as { once?: (ev: string, fn: () => void) => void; readableEnded?: boolean } | undefined
          if (r.op !== 'HEAD' && r.bytesIn > 0 && typeof body?.once === 'function' && !body.readableEnded) {
            body.once('end', () => {
              r.end = performance.now()
            })
          }
          return res
        } catch (e) {
          // a 404 or 412 is a round trip too (the deserializer throws inside this layer)
          r.end = performance.now()
          r.status = (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? 0
          throw e
        }
      },
      // finalizeRequest at low priority runs after the retry and signing middleware, once
      // per attempt, right before the HTTP handler
      { step: 'finalizeRequest', priority: 'low', name: 'benchTraceS3Requests', override: true },
    )
  }

  /** Drops what was recorded so far: the next window starts now. */
  reset(): void {
    this.current = []
  }

  /** The requests since the last take or reset, ending the window. */
  take(): TracedRequest[] {
    const out = this.current
    this.current = []
    for (const r of out) if (Number.isNaN(r.end)) r.end = performance.now()
    return out
  }
}
