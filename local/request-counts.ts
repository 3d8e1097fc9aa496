// The embedded backend's own count of the requests it answered: per service (S3, SQS),
// operation (S3's API name from the route, method and query; SQS's from X-Amz-Target) and
// caller (the SDK's app id in the User-Agent, `app/<id>`, which the local runtime sets per
// function), with request and response body bytes. It is what AWS would bill, counted where
// the requests arrive, so a cost benchmark can check its own accounting against it
// (bench/lib/cost-count.ts, test/cost-counting.test.ts). The backend's internal checks
// (conditional writes, the transfer model's HEADs) are not requests and are not counted.

/** One (service, operation, caller) cell of the count. */
export interface RequestCount {
  service: 's3' | 'sqs' | 'other'
  /** e.g. GetObject, PutObject, ListObjectsV2, SendMessageBatch, ReceiveMessage */
  operation: string
  /** the SDK app id of the client that sent it (`AWS_SDK_UA_APP_ID` / `userAgentAppId`), or 'unknown' */
  caller: string
  /** the S3 bucket, or the SQS queue's name (a FIFO queue's ends in `.fifo`); '' when the request names neither */
  resource: string
  /**
   * what an S3 request's key names in a table: snapshot (the snapshot directory, hints
   * included), manifest, index, data, schema, `_strata/<dir>`, other; '' for a request with
   * no key (SQS, listings)
   */
  kind: string
  requests: number
  requestBytes: number
  responseBytes: number
  /** SQS bills every 64 KiB of a request's payload as one request: the larger of its request and response bodies, in 64 KiB chunks (at least 1) */
  chunks: number
  /** ReceiveMessage answered with no message */
  empty: number
  /** answered with an HTTP status of 400 or more (S3 and SQS bill these too) */
  errors: number
}

export const SQS_CHUNK_BYTES = 64 * 1024

interface RequestLike {
  method: string
  url: string
  headers: Record<string, string | string[] | undefined>
  routeOptions: { url?: string }
  params: unknown
  query: unknown
  body?: unknown
}

const header = (v: string | string[] | undefined): string => (Array.isArray(v) ? v.join(' ') : (v ?? ''))

/** The SDK app id a request carries (`app/<id>` in user-agent or x-amz-user-agent), or 'unknown'. */
export function callerOf(headers: RequestLike['headers']): string {
  const ua = `${header(headers['x-amz-user-agent'])} ${header(headers['user-agent'])}`
  // Powertools appends its own id to a function's (`<id>-PT-<version>-PTEnv-<runtime>`)
  const id = /(?:^|\s)app\/(\S+)/.exec(ua)?.[1]
  return id === undefined ? 'unknown' : id.replace(/-PT-.*$/, '')
}

/** The S3 or SQS API operation a request to the backend is, as S3's and SQS's billing names it. */
export function operationOf(r: RequestLike): { service: RequestCount['service']; operation: string } {
  const route = r.routeOptions.url
  const target = header(r.headers['x-amz-target'])
  if (route === '/' && r.method === 'POST') {
    if (target.startsWith('AmazonSQS.')) return { service: 'sqs', operation: target.slice('AmazonSQS.'.length) }
    const action = (r.body as { Action?: unknown } | undefined)?.Action
    return { service: 'other', operation: typeof action === 'string' ? action : 'POST /' }
  }
  const q = (r.query ?? {}) as Record<string, unknown>
  const has = (k: string) => k in q
  // a bucket-level request with a trailing slash (`/bucket/?list-type=2`) matches the object route with an empty key
  const key = (r.params as { '*'?: string } | undefined)?.['*'] ?? ''
  if (route === '/:bucket/*' && key !== '') {
    const m = r.method
    if (m === 'GET') return { service: 's3', operation: has('uploadId') ? 'ListParts' : 'GetObject' }
    if (m === 'HEAD') return { service: 's3', operation: 'HeadObject' }
    if (m === 'PUT') {
      const copy = header(r.headers['x-amz-copy-source']) !== ''
      if (has('partNumber') && has('uploadId')) return { service: 's3', operation: copy ? 'UploadPartCopy' : 'UploadPart' }
      return { service: 's3', operation: copy ? 'CopyObject' : 'PutObject' }
    }
    if (m === 'POST') return { service: 's3', operation: has('uploads') ? 'CreateMultipartUpload' : has('uploadId') ? 'CompleteMultipartUpload' : 'PostObject' }
    if (m === 'DELETE') return { service: 's3', operation: has('uploadId') ? 'AbortMultipartUpload' : 'DeleteObject' }
  }
  if (route === '/:bucket' || route === '/:bucket/*') {
    const m = r.method
    if (m === 'GET') return { service: 's3', operation: has('uploads') ? 'ListMultipartUploads' : q['list-type'] === '2' ? 'ListObjectsV2' : has('location') ? 'GetBucketLocation' : 'ListObjects' }
    if (m === 'HEAD') return { service: 's3', operation: 'HeadBucket' }
    if (m === 'PUT') return { service: 's3', operation: 'CreateBucket' }
    if (m === 'POST' && has('delete')) return { service: 's3', operation: 'DeleteObjects' }
    if (m === 'DELETE') return { service: 's3', operation: 'DeleteBucket' }
  }
  if (route === '/' && r.method === 'GET') return { service: 's3', operation: 'ListBuckets' }
  return { service: 'other', operation: `${r.method} ${route ?? r.url.split('?')[0]}` }
}

/** The bucket of an S3 request, or the queue name of an SQS request (from its QueueUrl or QueueName). */
function resourceOf(r: RequestLike, service: RequestCount['service']): string {
  if (service === 's3') return (r.params as { bucket?: string } | undefined)?.bucket ?? ''
  if (service !== 'sqs') return ''
  const body = (typeof r.body === 'object' && r.body !== null ? r.body : {}) as { QueueUrl?: unknown; QueueName?: unknown }
  if (typeof body.QueueUrl === 'string') return body.QueueUrl.slice(body.QueueUrl.lastIndexOf('/') + 1)
  return typeof body.QueueName === 'string' ? body.QueueName : ''
}

/** The kind of a table object from its key (RequestCount.kind). */
export function keyKind(key: string): string {
  if (key === '') return ''
  if (/(^|\/)snapshot\//.test(key)) return 'snapshot'
  if (/(^|\/)manifest\//.test(key)) return 'manifest'
  if (/(^|\/)index\//.test(key)) return 'index'
  if (/\.parquet$/.test(key)) return 'data'
  if (/(^|\/)schema\//.test(key)) return 'schema'
  const strata = /(?:^|\/)_strata\/([^/]+)/.exec(key)
  return strata ? `_strata/${strata[1]}` : 'other'
}

function bytesOf(payload: unknown, headers: Record<string, unknown>): number {
  if (payload === null || payload === undefined) return 0
  if (typeof payload === 'string') return Buffer.byteLength(payload)
  if (payload instanceof Uint8Array) return payload.byteLength
  return Number(headers['content-length'] ?? 0) || 0
}

/** The counts as they stand, one row per (service, operation, caller) cell. */
export class RequestRecorder {
  private readonly cells = new Map<string, RequestCount>()

  record(r: RequestLike, status: number, payload: unknown, replyHeaders: Record<string, unknown>): void {
    const { service, operation } = operationOf(r)
    const caller = callerOf(r.headers)
    const resource = resourceOf(r, service)
    const kind = service === 's3' ? keyKind((r.params as { '*'?: string } | undefined)?.['*'] ?? '') : ''
    const key = cellKey({ service, operation, caller, resource, kind })
    const cell = this.cells.get(key) ?? this.cells.set(key, { service, operation, caller, resource, kind, requests: 0, requestBytes: 0, responseBytes: 0, chunks: 0, empty: 0, errors: 0 }).get(key)!
    const requestBytes = Number(header(r.headers['content-length'])) || 0
    const responseBytes = bytesOf(payload, replyHeaders)
    cell.requests++
    cell.requestBytes += requestBytes
    cell.responseBytes += responseBytes
    cell.chunks += Math.max(1, Math.ceil(Math.max(requestBytes, responseBytes) / SQS_CHUNK_BYTES))
    if (operation === 'ReceiveMessage' && !(typeof payload === 'string' ? payload : String(payload ?? '')).includes('"MessageId"')) cell.empty++
    if (status >= 400) cell.errors++
  }

  /** A copy of every cell, sorted by service, operation, caller. */
  counts(): RequestCount[] {
    return [...this.cells.values()].map((c) => ({ ...c })).sort((a, b) => cellKey(a).localeCompare(cellKey(b)))
  }

  reset(): void {
    this.cells.clear()
  }
}

const cellKey = (c: Pick<RequestCount, 'service' | 'operation' | 'caller' | 'resource' | 'kind'>) => `${c.service}\u0000${c.operation}\u0000${c.caller}\u0000${c.resource}\u0000${c.kind}`

/** The counts of `after` less those of `before` (cells absent before count from zero). */
export function countsSince(before: RequestCount[], after: RequestCount[]): RequestCount[] {
  const key = cellKey
  const b = new Map(before.map((c) => [key(c), c]))
  const out: RequestCount[] = []
  for (const a of after) {
    const p = b.get(key(a))
    const d = { ...a, requests: a.requests - (p?.requests ?? 0), requestBytes: a.requestBytes - (p?.requestBytes ?? 0), responseBytes: a.responseBytes - (p?.responseBytes ?? 0), chunks: a.chunks - (p?.chunks ?? 0), empty: a.empty - (p?.empty ?? 0), errors: a.errors - (p?.errors ?? 0) }
    if (d.requests > 0) out.push(d)
  }
  return out
}
