// The embedded S3 + SQS backend (local/embedded.ts) in a child process of its own, for
// benchmarks whose measuring process is busy: in process, the server shares one event loop
// with the code under test (32 writers encoding files and following the snapshot chain), so every
// request the committers send waits for the writers' CPU too, and a busy writer loop adds
// tens of ms to each S3 round trip on top of the modelled first-byte latency. S3 and SQS
// are somewhere else in production; here they get their own event loop.
//
//   child:  node --import tsx bench/lib/backend-process.ts <firstByteMs>
//   parent: const b = await startBackendProcess(20); ...; await b.stop()

import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3'
import { type EmbeddedBackend, startEmbeddedBackend } from '../../local/embedded.ts'

/** The embedded backend's interface, served from a child process (no server object here). */
export type BackendProcess = Omit<EmbeddedBackend, 'app'>

interface Ready {
  endpoint: string
  region: string
  credentials: { accessKeyId: string; secretAccessKey: string }
}

/** Starts the backend in a child process with `firstByteMs` on every request (S3 and SQS). */
export async function startBackendProcess(firstByteMs: number): Promise<BackendProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', import.meta.filename, String(firstByteMs)], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  })
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)))
  const lines = createInterface({ input: child.stdout! })
  const ready = await new Promise<Ready>((resolve, reject) => {
    lines.once('line', (l) => {
      try {
        resolve(JSON.parse(l) as Ready)
      } catch (e) {
        reject(new Error(`backend process: unexpected first line ${JSON.stringify(l)} (${(e as Error).message})`))
      }
    })
    void exited.then((code) => reject(new Error(`backend process exited with ${code} before it was ready`)))
  })
  let client: S3Client | undefined
  const s3Client = () => (client ??= new S3Client({ endpoint: ready.endpoint, region: ready.region, credentials: ready.credentials, forcePathStyle: true }))
  return {
    ...ready,
    s3Client,
    async createBucket(name) {
      await s3Client().send(new CreateBucketCommand({ Bucket: name }))
    },
    async stop() {
      client?.destroy()
      client = undefined
      child.stdin!.end()
      await exited
    },
  }
}

if (import.meta.filename === process.argv[1]) {
  const ms = Number(process.argv[2] ?? 0)
  const backend = await startEmbeddedBackend(ms > 0 ? { latency: { firstByteMs: ms } } : {})
  process.stdout.write(JSON.stringify({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials }) + '\n')
  // the parent ends stdin to stop it (and a parent that dies closes it too)
  process.stdin.resume()
  process.stdin.on('end', () => {
    void backend.stop().finally(() => process.exit(0))
  })
}
