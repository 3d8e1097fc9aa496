// The embedded S3 + SQS backend for local runs and tests: a fauxqs server (one fastify app
// serving S3, SQS and SNS on one port) bound to loopback only, plus the S3 conditional
// writes fauxqs 1.9 lacks. fauxqs stores a PutObject unconditionally, ignoring
// `If-None-Match` and `If-Match`; the commit protocol's exclusive snapshot create depends on
// them, so a hook here answers them the way S3 does before the fauxqs handler runs.
import { randomUUID } from 'node:crypto'
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from '@aws-sdk/client-s3'
import { buildApp } from 'fauxqs'
import { s3RequestHandlerOptions } from '../lib/store/s3-store.ts'
import { applyFauxqsFifoFix, fauxqsModule } from './fauxqs-fifo-fix.ts'
import { type RequestCount, RequestRecorder } from './request-counts.ts'

type FauxqsApp = ReturnType<typeof buildApp>

// fauxqs's FIFO queue as Strata needs it (receive order, messages per group, deduplication
// window): changed in one file of its own, which says what and why.
await applyFauxqsFifoFix()

// The stores fauxqs keeps its state in, created here and handed to buildApp so that stats()
// can count what they hold (their fields as fauxqs 1.9 names them).
interface FauxqsQueueState {
  fifoMessages: Map<string, unknown[]>
  fifoLockedGroups: Map<string, number>
  inflightMessages: Map<string, unknown>
  name: string
  messages: unknown[]
  delayedMessages: unknown[]
  fifoDelayed: Map<string, unknown[]>
  deduplicationCache: { size: number }
}
interface FauxqsSqsStore {
  queues: Map<string, FauxqsQueueState>
}
interface FauxqsS3Store {
  buckets: Map<string, Map<string, { body: Buffer }>>
  multipartUploads: Map<string, { parts: Map<number, { body: Buffer }> }>
  putObject(bucket: string, key: string, body: Buffer, ...rest: unknown[]): unknown
}

/**
 * A stored body in an allocation of its own. fastify reads a request body with
 * Buffer.concat, which serves anything under 4 KiB from Node's shared 8 KiB pool: a stored
 * small object (a snapshot, a hint, a zero-byte marker) would keep a whole pool slab alive
 * for as long as it is stored, about 3× the stored bytes in the soak.
 */
function ownAllocation(body: Buffer): Buffer {
  if (body.byteLength === body.buffer.byteLength) return body
  const own = Buffer.allocUnsafeSlow(body.byteLength)
  body.copy(own)
  return own
}
const { SqsStore } = (await fauxqsModule('./sqs/sqsStore.js')) as { SqsStore: new () => FauxqsSqsStore }
const { S3Store: FauxqsS3StoreClass } = (await fauxqsModule('./s3/s3Store.js')) as { S3Store: new () => FauxqsS3Store }
const { SnsStore } = (await fauxqsModule('./sns/snsStore.js')) as { SnsStore: new () => unknown }

export interface EmbeddedBackend {
  /** http://127.0.0.1:<port>, for S3 (path-style) and SQS clients alike */
  endpoint: string
  region: string
  /** fauxqs accepts any credentials; these are fixed placeholders */
  credentials: { accessKeyId: string; secretAccessKey: string }
  /** one shared S3 client on the endpoint; destroyed by stop() */
  s3Client(): S3Client
  createBucket(name: string): Promise<void>
  stop(): Promise<void>
  /** the fauxqs server object for SQS use by later code */
  app: unknown
}

/** The embedded backend's state, counted (EmbeddedBackend.stats()). */
export interface EmbeddedStats {
  s3: {
    objects: number
    /** the objects' sizes summed */
    bytes: number
    /**
     * bytes of the ArrayBuffers the stored bodies keep alive, each counted once: more than
     * `bytes` where a small body is a slice of a larger allocation (Node's 8 KiB Buffer pool)
     */
    retainedBytes: number
    multipartUploads: number
    multipartBytes: number
    /**
     * objects and bytes per directory, ids and hashes in it written `*`
     * (`strata-local/tables/orders/_strata/commits/*`), the largest first
     */
    byDirectory: { directory: string; objects: number; bytes: number }[]
  }
  sqs: EmbeddedQueueStats[]
}

export interface EmbeddedQueueStats {
  name: string
  /** ready to receive (FIFO: summed over groups) */
  visible: number
  inflight: number
  delayed: number
  /** deduplication records kept (FIFO; fauxqs keeps at most 10,000 for 5 minutes) */
  dedupRecords: number
  /** FIFO message groups with messages waiting, and groups locked by messages in flight */
  groups: number
  lockedGroups: number
}

/** What startEmbeddedBackend returns: the backend plus server-side S3 fault injection. */
export interface FaultableBackend extends EmbeddedBackend {
  /**
   * Makes the next `times` S3 requests that match answer an S3 error, server side (the
   * client sees a real HTTP error response). Faults are matched in the order injected.
   */
  injectFault(fault: EmbeddedFault): EmbeddedFaultHandle
  /** Drops every fault not yet used up. */
  clearFaults(): void
  /** what the backend holds now: objects and their bytes, and each queue's messages and records */
  stats(): EmbeddedStats
  /**
   * The requests the backend answered since it started (or since resetRequestCounts), per
   * service, operation and caller (local/request-counts.ts): its own count of what AWS bills
   */
  requestCounts(): RequestCount[]
  resetRequestCounts(): void
}

/**
 * Server-side delay before each request is handled, in ms: fixed, chosen per request, or a
 * transfer model with a bandwidth cap.
 */
export type EmbeddedLatency = number | ((request: { method: string; url: string }) => number) | TransferModel

/**
 * First-byte latency plus a per-request bandwidth cap, for benchmarks that need object-store
 * I/O to cost what it costs on S3 (each request waits `firstByteMs`, then its request body
 * and its response body each take `bytes / bytesPerSecond`; S3 serves one connection at
 * tens of MB/s, and parallel requests each get their own cap, as on S3). A response sent as
 * a stream is not slowed (fauxqs sends object bodies as buffers). `applies` picks the
 * requests the model covers (e.g. S3 paths, not SQS's `POST /`); default: all.
 */
export interface TransferModel {
  firstByteMs: number
  bytesPerSecond?: number
  applies?: (request: { method: string; url: string }) => boolean
}

/** An S3 request as a fault sees it: `/:bucket/*` and `/:bucket` routes only (not SQS's `POST /`). */
export interface FaultRequest {
  method: string
  bucket: string
  /** object key, '' for bucket-level requests (ListObjectsV2, CreateBucket) */
  key: string
  query: Record<string, string | undefined>
}

export interface EmbeddedFault {
  /** HTTP method ('GET', 'PUT', 'HEAD', 'POST', 'DELETE'); default any */
  method?: string
  /** the object key (without bucket): exactly this string, or matching this pattern; default any */
  key?: string | RegExp
  /** a further filter, e.g. on the query (`partNumber` marks UploadPart, `uploadId` a multipart call) */
  where?: (request: FaultRequest) => boolean
  /** HTTP status to answer, e.g. 503, 500, 403 */
  status: number
  /** S3 error code in the XML body, e.g. 'SlowDown', 'InternalError', 'AccessDenied' */
  code: string
  message?: string
  /** matching requests that fail; default 1 (Infinity for all) */
  times?: number
  /**
   * 'before' (default): answer instead of handling, so nothing applies. 'after': handle the
   * request, then send the error instead of its reply: a lost reply, where a write applied
   * but the client sees a failure.
   */
  when?: 'before' | 'after'
}

export interface EmbeddedFaultHandle {
  /** requests this fault answered so far */
  readonly hits: number
}

const REGION = 'us-east-1'
const CREDENTIALS = { accessKeyId: 'test', secretAccessKey: 'test' }

export async function startEmbeddedBackend(
  opts: { port?: number; latency?: EmbeddedLatency } = {},
): Promise<FaultableBackend> {
  const { port = 0, latency } = opts
  const sqsStore = new SqsStore()
  const s3Store = new FauxqsS3StoreClass()
  const putObject = s3Store.putObject.bind(s3Store)
  s3Store.putObject = (bucket, key, body, ...rest) => putObject(bucket, key, ownAllocation(body), ...rest)
  const app = buildApp({ logger: false, defaultRegion: REGION, stores: { sqsStore, s3Store, snsStore: new SnsStore() } as never })
  if (latency !== undefined) installLatency(app, latency)
  // before the conditional-write hook, so a fault answered up front takes no key lock
  const faults = installFaults(app)
  installConditionalWrites(app)
  const recorder = installRequestCounts(app)
  await app.listen({ host: '127.0.0.1', port })
  const address = app.server.address()
  if (address === null || typeof address === 'string') {
    await app.close()
    throw new Error(`embedded backend: unexpected listen address ${String(address)}`)
  }
  const endpoint = `http://127.0.0.1:${address.port}`
  let client: S3Client | undefined
  return {
    endpoint,
    region: REGION,
    credentials: { ...CREDENTIALS },
    app,
    s3Client() {
      client ??= new S3Client({ endpoint, region: REGION, credentials: CREDENTIALS, forcePathStyle: true, requestHandler: s3RequestHandlerOptions() })
      return client
    },
    async createBucket(name) {
      const res = await app.inject({ method: 'PUT', url: `/${encodeURIComponent(name)}` })
      if (res.statusCode !== 200) {
        throw new Error(`embedded backend: CreateBucket '${name}' answered HTTP ${res.statusCode}: ${res.body}`)
      }
    },
    stats: () => embeddedStats(sqsStore, s3Store),
    requestCounts: () => recorder.counts(),
    resetRequestCounts: () => recorder.reset(),
    injectFault: (fault) => faults.inject(fault),
    clearFaults: () => faults.clear(),
    async stop() {
      client?.destroy()
      client = undefined
      await app.close()
    },
  }
}

function embeddedStats(sqs: FauxqsSqsStore, s3: FauxqsS3Store): EmbeddedStats {
  let objects = 0, bytes = 0, retainedBytes = 0
  const buffers = new Set<ArrayBufferLike>()
  const retain = (body: Buffer) => {
    if (buffers.has(body.buffer)) return
    buffers.add(body.buffer)
    retainedBytes += body.buffer.byteLength
  }
  const directories = new Map<string, { directory: string; objects: number; bytes: number }>()
  for (const [name, bucket] of s3.buckets) {
    for (const [key, obj] of bucket) {
      objects++
      bytes += obj.body.length
      retain(obj.body)
      const directory = `${name}/${key.slice(0, key.lastIndexOf('/') + 1)}`.replace(/[0-9a-f]{8,}|\d+/g, '*')
      const d = directories.get(directory) ?? directories.set(directory, { directory, objects: 0, bytes: 0 }).get(directory)!
      d.objects++
      d.bytes += obj.body.length
    }
  }
  let multipartBytes = 0
  for (const upload of s3.multipartUploads.values()) for (const part of upload.parts.values()) multipartBytes += part.body.length
  const sum = (groups: Map<string, unknown[]>) => [...groups.values()].reduce((n, g) => n + g.length, 0)
  const queues = [...sqs.queues.values()].map((q) => ({
    name: q.name,
    visible: q.messages.length + sum(q.fifoMessages),
    inflight: q.inflightMessages.size,
    delayed: q.delayedMessages.length + sum(q.fifoDelayed),
    dedupRecords: q.deduplicationCache.size,
    groups: q.fifoMessages.size,
    lockedGroups: q.fifoLockedGroups.size,
  }))
  const byDirectory = [...directories.values()].sort((a, b) => b.bytes - a.bytes)
  return { s3: { objects, bytes, retainedBytes, multipartUploads: s3.multipartUploads.size, multipartBytes, byDirectory }, sqs: queues }
}

/** Marks the hook's own HEAD requests, which stand for no S3 round trip and get no latency. */
const INTERNAL_HEADER = 'x-strata-internal-check'

const pause = (ms: number) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : undefined)

function installLatency(app: FauxqsApp, latency: EmbeddedLatency): void {
  if (typeof latency === 'object') return installTransferModel(app, latency)
  app.addHook('onRequest', async (request) => {
    if (request.headers[INTERNAL_HEADER] !== undefined) return
    await pause(typeof latency === 'number' ? latency : latency({ method: request.method, url: request.url }))
  })
}

function installTransferModel(app: FauxqsApp, model: TransferModel): void {
  const covered = (request: { method: string; url: string; headers: Record<string, unknown> }) =>
    request.headers[INTERNAL_HEADER] === undefined && (model.applies?.({ method: request.method, url: request.url }) ?? true)
  const bps = model.bytesPerSecond
  app.addHook('onRequest', async (request) => {
    if (covered(request)) await pause(model.firstByteMs)
  })
  if (bps === undefined) return
  // Registered before the conditional-write hook, so an upload's transfer time is spent
  // before, not while, it holds its key's lock. A download's time is spent here too, from
  // the object's size: delaying in onSend instead makes fastify answer fauxqs's async
  // handlers with an empty body.
  app.addHook('preHandler', async (request) => {
    if (!covered(request)) return
    let length = Number(request.headers['content-length'] ?? 0)
    if (request.method === 'GET' && request.routeOptions.url === '/:bucket/*' && ((request.params as { '*'?: string })['*'] ?? '') !== '') {
      const head = await app.inject({ method: 'HEAD', url: request.url, headers: { [INTERNAL_HEADER]: '1' } })
      length += rangeLength(headerValue(request.headers.range), Number(head.headers['content-length'] ?? 0))
    }
    if (length > 0) await pause((1000 * length) / bps)
  })
}

/**
 * Counts every request as its response goes out (registered last, so it sees an injected
 * fault's reply too); the backend's own internal requests are left out.
 */
function installRequestCounts(app: FauxqsApp): RequestRecorder {
  const recorder = new RequestRecorder()
  // fastify runs a root onSend hook twice for a request of fauxqs's routes: count each once
  const counted = new WeakSet<object>()
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.headers[INTERNAL_HEADER] === undefined && !counted.has(request)) {
      counted.add(request)
      recorder.record(request, reply.statusCode, payload, reply.getHeaders())
    }
    return payload
  })
  return recorder
}

interface ArmedFault {
  fault: EmbeddedFault
  left: number
  hits: number
}

function installFaults(app: FauxqsApp): { inject(fault: EmbeddedFault): EmbeddedFaultHandle; clear(): void } {
  let armed: ArmedFault[] = []
  const lostReplies = new WeakMap<object, EmbeddedFault>()
  const matches = (f: EmbeddedFault, r: FaultRequest) =>
    (f.method === undefined || f.method.toUpperCase() === r.method) &&
    (f.key === undefined || (typeof f.key === 'string' ? f.key === r.key : f.key.test(r.key))) &&
    (f.where === undefined || f.where(r))

  // preHandler runs after the body is read, so the client gets the error, not a reset.
  app.addHook('preHandler', async (request, reply) => {
    if (armed.length === 0 || request.headers[INTERNAL_HEADER] !== undefined) return
    const route = request.routeOptions.url
    if (route !== '/:bucket/*' && route !== '/:bucket') return
    const params = request.params as { bucket: string; '*'?: string }
    const r: FaultRequest = {
      method: request.method,
      bucket: params.bucket,
      key: params['*'] ?? '',
      query: { ...((request.query ?? {}) as Record<string, string | undefined>) },
    }
    const hit = armed.find((a) => a.left > 0 && matches(a.fault, r))
    if (!hit) return
    hit.left--
    hit.hits++
    armed = armed.filter((a) => a.left > 0)
    if (hit.fault.when === 'after') {
      lostReplies.set(request, hit.fault)
      return
    }
    return sendS3Error(reply, hit.fault.status, hit.fault.code, hit.fault.message ?? `injected ${hit.fault.code}`)
  })
  app.addHook('onSend', async (request, reply, payload) => {
    const fault = lostReplies.get(request)
    if (!fault) return payload
    lostReplies.delete(request)
    reply.code(fault.status)
    reply.removeHeader('etag')
    reply.removeHeader('content-length')
    reply.header('content-type', 'application/xml')
    return s3ErrorBody(fault.code, fault.message ?? `injected ${fault.code} after the request applied`)
  })

  return {
    inject(fault) {
      const times = fault.times ?? 1
      if (!(times >= 1)) throw new RangeError(`embedded backend: fault times = ${times}: expected a number >= 1`)
      const a: ArmedFault = { fault, left: times, hits: 0 }
      armed.push(a)
      return {
        get hits() {
          return a.hits
        },
      }
    },
    clear() {
      armed = []
    },
  }
}

/** Bytes a GET of an object of `size` bytes returns under an HTTP Range header (one range). */
function rangeLength(range: string | undefined, size: number): number {
  const m = range === undefined ? null : /^bytes=(\d*)-(\d*)$/.exec(range.trim())
  if (!m) return size
  if (m[1] === '') return Math.min(size, Number(m[2]))
  const from = Number(m[1])
  const to = m[2] === '' ? size - 1 : Math.min(size - 1, Number(m[2]))
  return Math.max(0, to - from + 1)
}

/** Which object mutation a request is, per fauxqs's routing of `/:bucket/*`; null for others. */
function objectMutation(request: {
  method: string
  routeOptions: { url?: string }
  params: unknown
  query: unknown
}): { op: 'PutObject' | 'CompleteMultipartUpload' | 'DeleteObject'; lockKey: string } | null {
  if (request.routeOptions.url !== '/:bucket/*') return null
  const params = request.params as { bucket: string; '*'?: string }
  const key = params['*'] ?? ''
  if (key === '') return null
  const query = (request.query ?? {}) as Record<string, string | undefined>
  const lockKey = `${params.bucket}/${key}`
  if (request.method === 'PUT' && !(query.uploadId && query.partNumber)) return { op: 'PutObject', lockKey }
  if (request.method === 'POST' && query.uploadId && !('uploads' in query)) return { op: 'CompleteMultipartUpload', lockKey }
  if (request.method === 'DELETE' && !query.uploadId) return { op: 'DeleteObject', lockKey }
  return null
}

function installConditionalWrites(app: FauxqsApp): void {
  // Checking the precondition and storing the object are two steps: the check reads the
  // current ETag (an internal HEAD, which awaits), the write happens later in fauxqs's
  // handler. Two concurrent `If-None-Match: *` PUTs of one key could both see "absent" and
  // both write, and the loser's 200 would break the exclusive create. With fauxqs 1.9 the
  // internal HEAD happens to settle within one microtask drain, so no other request runs
  // in between; that is an accident of fastify's and light-my-request's scheduling, not a
  // guarantee. So every mutation of a key (conditional or not, so that an unconditional PUT
  // or DELETE cannot slip in between either) holds that key's lock from before the check
  // until its response is being sent, by which point fauxqs's synchronous store write has
  // happened.
  const locks = new KeyLocks()
  const releases = new WeakMap<object, () => void>()
  const release = (request: object) => {
    releases.get(request)?.()
    releases.delete(request)
  }

  // preHandler runs after the body is read, so a 412 never cuts off an upload mid-body.
  app.addHook('preHandler', async (request, reply) => {
    const mutation = objectMutation(request)
    if (!mutation) return
    const unlock = await locks.acquire(mutation.lockKey)
    let done = false
    const once = () => {
      if (!done) {
        done = true
        unlock()
      }
    }
    releases.set(request, once)
    // The response closing covers paths that skip onSend (client gone, errors in send).
    reply.raw.once('close', once)
    if (mutation.op === 'DeleteObject') return

    const ifNoneMatch = headerValue(request.headers['if-none-match'])
    const ifMatch = headerValue(request.headers['if-match'])
    if (ifNoneMatch === undefined && ifMatch === undefined) return

    const path = request.url.split('?')[0]
    const head = await app.inject({ method: 'HEAD', url: path, headers: { [INTERNAL_HEADER]: '1' } })
    if (head.statusCode !== 200 && head.statusCode !== 404) {
      once()
      return sendS3Error(reply, 500, 'InternalError', `conditional-write check got HTTP ${head.statusCode} from HEAD`)
    }
    const etag = head.statusCode === 200 ? headerValue(head.headers.etag) : undefined
    const exists = head.statusCode === 200

    if (ifNoneMatch !== undefined) {
      if (ifNoneMatch.trim() !== '*') {
        once()
        return sendS3Error(reply, 501, 'NotImplemented', 'If-None-Match on a write supports only *')
      }
      if (exists) {
        once()
        return sendS3Error(reply, 412, 'PreconditionFailed', PRECONDITION_MESSAGE, 'If-None-Match')
      }
    }
    if (ifMatch !== undefined) {
      if (!exists) {
        once()
        return sendS3Error(reply, 404, 'NoSuchKey', 'The specified key does not exist.')
      }
      if (!etagMatches(ifMatch, etag)) {
        once()
        return sendS3Error(reply, 412, 'PreconditionFailed', PRECONDITION_MESSAGE, 'If-Match')
      }
    }
  })
  app.addHook('onSend', async (request) => release(request))
  app.addHook('onRequestAbort', async (request) => release(request))
}

const PRECONDITION_MESSAGE = 'At least one of the pre-conditions you specified did not hold'

function sendS3Error(
  reply: { code(n: number): unknown; header(k: string, v: string): unknown; send(body: string): unknown },
  status: number,
  code: string,
  message: string,
  condition?: string,
): unknown {
  reply.code(status)
  reply.header('content-type', 'application/xml')
  reply.send(s3ErrorBody(code, message, condition))
  return reply
}

function s3ErrorBody(code: string, message: string, condition?: string): string {
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<Error>',
    `<Code>${code}</Code>`,
    `<Message>${message}</Message>`,
    condition ? `<Condition>${condition}</Condition>` : '',
    `<RequestId>${randomUUID().replaceAll('-', '').slice(0, 16).toUpperCase()}</RequestId>`,
    '</Error>',
  ].join('')
}

function headerValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value
}

/** RFC 9110 If-Match: '*' or a list of entity tags; S3 compares strongly (quotes optional). */
function etagMatches(ifMatch: string, etag: string | undefined): boolean {
  if (etag === undefined) return false
  const bare = (tag: string) => tag.trim().replace(/^W\//, '').replace(/^"|"$/g, '')
  return ifMatch.split(',').some((tag) => tag.trim() === '*' || bare(tag) === bare(etag))
}

/** FIFO per-key mutexes; a key's entry is dropped when its last holder releases. */
class KeyLocks {
  private readonly tails = new Map<string, Promise<void>>()

  async acquire(key: string): Promise<() => void> {
    const previous = this.tails.get(key) ?? Promise.resolve()
    let release!: () => void
    const held = new Promise<void>((resolve) => (release = resolve))
    const tail = previous.then(() => held)
    this.tails.set(key, tail)
    await previous
    return () => {
      release()
      if (this.tails.get(key) === tail) this.tails.delete(key)
    }
  }
}

/**
 * Proves the conditional-write hook applies, end to end through the S3 SDK: 16 concurrent
 * `If-None-Match: *` PUTs of one fresh key must yield exactly one 200 (the rest 412) with
 * the winner's bytes stored; `If-Match` with a stale ETag must be 412 and on a missing key
 * 404. Throws when any of that fails, because every commit on this backend would then be
 * silently unsafe.
 */
export async function selfTestConditionalWrites(backend: EmbeddedBackend): Promise<void> {
  const fail = (what: string): never => {
    throw new Error(`embedded backend self-test FAILED: the S3 conditional-write hook is not applying: ${what}`)
  }
  const client = backend.s3Client()
  const bucket = 'strata-self-test'
  await backend.createBucket(bucket)
  const key = `conditional/${randomUUID()}`
  const enc = new TextEncoder()

  const outcomes = await Promise.all(
    Array.from({ length: 16 }, async (_, i) => {
      try {
        await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: enc.encode(`writer-${i}`), IfNoneMatch: '*' }))
        return { i, status: 200 }
      } catch (err) {
        return { i, status: (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? -1 }
      }
    }),
  )
  const winners = outcomes.filter((o) => o.status === 200)
  const others = outcomes.filter((o) => o.status !== 200 && o.status !== 412)
  if (winners.length !== 1 || others.length > 0) {
    fail(`16 concurrent If-None-Match: * PUTs gave statuses ${outcomes.map((o) => o.status).join(',')}; expected one 200, fifteen 412`)
  }
  const stored = await client.send(new GetObjectCommand({ Bucket: bucket, Key: key }))
  const text = new TextDecoder().decode(await stored.Body!.transformToByteArray())
  if (text !== `writer-${winners[0].i}`) fail(`stored '${text}', but the winner was writer-${winners[0].i}`)

  const first = await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: enc.encode('v1') }))
  await client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: enc.encode('v2') }))
  const stale = await statusOf(client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: enc.encode('v3'), IfMatch: first.ETag })))
  if (stale !== 412) fail(`If-Match with a stale ETag answered ${stale}, expected 412`)
  const missing = await statusOf(
    client.send(new PutObjectCommand({ Bucket: bucket, Key: `${key}-missing`, Body: enc.encode('x'), IfMatch: first.ETag })),
  )
  if (missing !== 404) fail(`If-Match on a missing key answered ${missing}, expected 404`)
  const current = await client.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))
  const fresh = await statusOf(client.send(new PutObjectCommand({ Bucket: bucket, Key: key, Body: enc.encode('v4'), IfMatch: current.ETag })))
  if (fresh !== 200) fail(`If-Match with the current ETag answered ${fresh}, expected 200`)
  await client.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }))
}

async function statusOf(request: Promise<unknown>): Promise<number> {
  try {
    await request
    return 200
  } catch (err) {
    return (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode ?? -1
  }
}
