// The embedded S3 + SQS backend (local/embedded.ts) in a child process of its own. In process,
// the server shares one event loop with the code under test (writers encoding files,
// committers following the snapshot chain), so a busy loop adds tens of ms to every round
// trip; and it shares the process's memory, so every stored object body lands in the same
// malloc arenas as the functions' allocations, which a memory soak cannot then tell apart.
// S3 and SQS are somewhere else in production; here they get their own process.
//
//   child:  node --import tsx local/backend-process.ts '<options as JSON>'
//   parent: const b = await startBackendProcess({ firstByteMs: 20 }); ...; await b.stats(); await b.stop()
//
// Protocol: the child prints one JSON line when it listens ({endpoint, region, credentials,
// pid}); then it answers each `{"id":n,"op":"stats"}` line on its stdin with
// `{"id":n,"stats":…,"memory":…}` on its stdout (with `"settle":true`, after a full
// collection). Ending its stdin stops it (a parent that dies closes it too).

import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { s3RequestHandlerOptions } from '../lib/store/s3-store.ts'
import { type EmbeddedBackend, type EmbeddedStats, startEmbeddedBackend } from './embedded.ts'

export interface BackendProcessOptions {
  /** server-side first-byte delay of every request, ms; default 0 */
  firstByteMs?: number
  /** the delay applies only to request paths starting with this (e.g. '/strata-local/': S3, not SQS); default all */
  pathPrefix?: string
}

/** The child process's own memory, as process.memoryUsage() reports it there (bytes). */
export type BackendProcessMemory = NodeJS.MemoryUsage

/** The embedded backend's interface, served from a child process (no server object here). */
export interface BackendProcess extends Omit<EmbeddedBackend, 'app'> {
  pid: number
  /** what the backend holds now, and the child's memory (`settle`: after a full collection there) */
  stats(settle?: boolean): Promise<{ stats: EmbeddedStats; memory: BackendProcessMemory }>
}

interface Ready {
  endpoint: string
  region: string
  credentials: { accessKeyId: string; secretAccessKey: string }
  pid: number
}

/** Starts the backend in a child process. */
export async function startBackendProcess(opts: BackendProcessOptions = {}): Promise<BackendProcess> {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', import.meta.filename, JSON.stringify(opts)], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  })
  let exitCode: number | null | undefined
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve((exitCode = code))))
  const lines = createInterface({ input: child.stdout! })
  const waiting = new Map<number, { resolve: (v: { stats: EmbeddedStats; memory: BackendProcessMemory }) => void; reject: (e: Error) => void }>()
  let ready: Ready | undefined
  const readyPromise = new Promise<Ready>((resolve, reject) => {
    lines.on('line', (l) => {
      let message: unknown
      try {
        message = JSON.parse(l)
      } catch (e) {
        const err = new Error(`backend process: unexpected line ${JSON.stringify(l.slice(0, 200))} (${(e as Error).message})`)
        if (!ready) reject(err)
        return
      }
      if (!ready) {
        resolve((ready = message as Ready))
        return
      }
      const reply = message as { id: number; stats: EmbeddedStats; memory: BackendProcessMemory }
      waiting.get(reply.id)?.resolve(reply)
      waiting.delete(reply.id)
    })
    void exited.then((code) => {
      const err = new Error(`backend process exited with ${code}${ready ? '' : ' before it was ready'}`)
      if (!ready) reject(err)
      for (const w of waiting.values()) w.reject(err)
      waiting.clear()
    })
  })
  const r = await readyPromise
  let client: S3Client | undefined
  const s3Client = () => (client ??= new S3Client({ endpoint: r.endpoint, region: r.region, credentials: r.credentials, forcePathStyle: true, requestHandler: s3RequestHandlerOptions() }))
  let next = 0
  return {
    endpoint: r.endpoint,
    region: r.region,
    credentials: r.credentials,
    pid: r.pid,
    s3Client,
    async createBucket(name) {
      await s3Client().send(new CreateBucketCommand({ Bucket: name }))
    },
    stats(settle = false) {
      if (exitCode !== undefined) return Promise.reject(new Error(`backend process exited with ${exitCode}`))
      const id = next++
      return new Promise((resolve, reject) => {
        waiting.set(id, { resolve, reject })
        child.stdin!.write(JSON.stringify({ id, op: 'stats', settle }) + '\n')
      })
    },
    async stop() {
      client?.destroy()
      client = undefined
      if (exitCode === undefined) child.stdin!.end()
      await exited
    },
  }
}

if (import.meta.filename === process.argv[1]) {
  const opts = JSON.parse(process.argv[2] ?? '{}') as BackendProcessOptions
  const ms = opts.firstByteMs ?? 0
  const prefix = opts.pathPrefix
  const backend = await startEmbeddedBackend(ms > 0 ? { latency: { firstByteMs: ms, applies: prefix === undefined ? undefined : (req) => req.url.startsWith(prefix) } } : {})
  process.stdout.write(JSON.stringify({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, pid: process.pid }) + '\n')
  const requests = createInterface({ input: process.stdin })
  requests.on('line', (l) => {
    const { id, op, settle } = JSON.parse(l) as { id: number; op: string; settle?: boolean }
    if (op !== 'stats') throw new Error(`backend process: unknown op ${JSON.stringify(op)}; expected "stats"`)
    if (settle) (globalThis as { gc?: () => void }).gc?.()
    process.stdout.write(JSON.stringify({ id, stats: backend.stats(), memory: process.memoryUsage() }) + '\n')
  })
  requests.on('close', () => {
    void backend.stop().finally(() => process.exit(0))
  })
}
