// `strata local`: the embedded S3 + SQS backend (local/embedded.ts) as a command. It listens on
// 127.0.0.1, creates a bucket, prints the environment that points `strata` and the AWS SDKs at
// it (lines a shell can run), and serves until SIGINT or SIGTERM. lib/ never imports local/,
// so the bin adds this command through main's `extend` seam (lib/cli/main.ts CliSeams).
//
// Loopback only, with no --host: the server checks no credentials, so anyone who could reach
// it could read and overwrite every object. Its state is in memory (fauxqs has no storage on
// disk) and goes when it stops. fauxqs is an optional peer dependency of the package, so the
// backend is imported only when the command runs.

import type { Command } from 'commander'
import { StrataInputError } from '../lib/errors.ts'
import type { EmbeddedBackend } from './embedded.ts'

/**
 * The default port: fauxqs's own default and LocalStack's edge port, so a stable endpoint
 * across restarts that tools made for a local AWS already point at.
 */
export const LOCAL_PORT = 4566
export const LOCAL_BUCKET = 'strata-local'

export interface LocalOptions {
  /** port on 127.0.0.1; 0 picks any free port */
  port: number
  bucket: string
}

/** Registers `strata local` on the CLI's program (passed to main as `extend`). */
export function addLocalCommand(program: Command): void {
  program
    .command('local')
    .description(
      'run an embedded S3 + SQS server on 127.0.0.1 with a bucket, and print the environment (export lines) that points strata and the AWS SDKs at it; serves until Ctrl-C or SIGTERM. Its data is held in memory and lost when it stops',
    )
    .option('--port <n>', 'port on 127.0.0.1 (0: any free port)', String(LOCAL_PORT))
    .option('--bucket <name>', 'the bucket to create', LOCAL_BUCKET)
    .addHelpText(
      'after',
      '\nThe server listens on 127.0.0.1 only: it checks no credentials, so it must not be reachable from other machines.\nNothing is written to disk: every table on it is gone when it stops.',
    )
    .action((o: { port: string; bucket: string }) => serveLocal(parseLocalOptions(o)))
}

/** `--port` and `--bucket`, checked before anything starts. */
export function parseLocalOptions(o: { port: string; bucket: string }): LocalOptions {
  if (!/^\d+$/.test(o.port) || Number(o.port) > 65535) {
    throw new StrataInputError(`--port ${JSON.stringify(o.port)}: expected a port number from 0 to 65535 (0: any free port)`)
  }
  // S3's bucket naming rules, as lib/store/open-store.ts checks an s3:// URI's bucket
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(o.bucket)) {
    throw new StrataInputError(`--bucket ${JSON.stringify(o.bucket)}: expected an S3 bucket name (3-63 characters of lowercase letters, digits, '.' and '-')`)
  }
  return { port: Number(o.port), bucket: o.bucket }
}

/** Starts the backend with its bucket, prints the environment, and serves until a signal stops it. */
export async function serveLocal(opts: LocalOptions): Promise<void> {
  const { startEmbeddedBackend } = await importBackend()
  let backend: EmbeddedBackend
  try {
    backend = await startEmbeddedBackend({ port: opts.port })
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE') {
      throw new StrataInputError(
        `--port ${opts.port}: 127.0.0.1:${opts.port} is already in use (another strata local, or LocalStack?); expected a free port: pass --port <n>, or --port 0 for any free one`,
      )
    }
    if (code === 'EACCES') throw new StrataInputError(`--port ${opts.port}: not allowed to listen on 127.0.0.1:${opts.port}; expected a port this user may open (1024 or above)`)
    throw e
  }
  try {
    await backend.createBucket(opts.bucket)
  } catch (e) {
    await backend.stop()
    throw e
  }
  const stopped = untilSignal()
  process.stdout.write(localEnvironment(backend, opts.bucket))
  const signal = await stopped.signal
  try {
    await backend.stop()
  } finally {
    stopped.release()
  }
  process.stderr.write(`strata local: stopped on ${signal}; its data is gone\n`)
}

/**
 * What `strata local` prints: shell lines that point the SDK (and so `strata … s3://…`) at the
 * backend, and as comments what it is and an example. lib/store/s3-store.ts takes a custom
 * endpoint from AWS_ENDPOINT_URL_S3, else AWS_ENDPOINT_URL, and addresses it path-style, so the
 * endpoint alone is enough; a set AWS_ENDPOINT_URL_S3 would win over it, and a set AWS_PROFILE
 * over the keys (the SDK then skips the environment's keys), hence the unset.
 */
export function localEnvironment(b: Pick<EmbeddedBackend, 'endpoint' | 'region' | 'credentials'>, bucket: string): string {
  const table = `s3://${bucket}/tables/demo`
  return [
    `# strata local: S3 and SQS on ${b.endpoint}, bucket ${bucket}; loopback only, no auth`,
    '# held in memory: every table on it is lost when it stops (Ctrl-C or SIGTERM)',
    '# run these lines in the shell that uses it (the keys are fixed placeholders it accepts, not secrets):',
    `export AWS_ENDPOINT_URL=${b.endpoint}`,
    `export AWS_REGION=${b.region}`,
    `export AWS_ACCESS_KEY_ID=${b.credentials.accessKeyId}`,
    `export AWS_SECRET_ACCESS_KEY=${b.credentials.secretAccessKey}`,
    'unset AWS_ENDPOINT_URL_S3 AWS_PROFILE',
    '# then, for example:',
    `#   echo '{"fields":[{"name":"id","type":"BIGINT"},{"name":"name","type":"STRING"}],"primaryKeys":["id"]}' > demo-schema.json`,
    `#   strata create ${table} --schema demo-schema.json`,
    `#   echo '{"id":1,"name":"apple"}' | strata write ${table} -`,
    `#   strata read ${table}`,
    '# ready',
    '',
  ].join('\n')
}

/** local/embedded.ts, or a clear error when its server, fauxqs (an optional peer dependency), is not installed. */
async function importBackend(): Promise<typeof import('./embedded.ts')> {
  try {
    return await import('./embedded.ts')
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' && /['"]fauxqs['"]/.test((e as Error).message)) {
      throw new Error(
        "strata local needs fauxqs (the embedded S3 + SQS server), an optional peer dependency of strata-tables that is not installed: run 'npm install fauxqs@1.9.2' where strata-tables is installed ('npm install -g fauxqs@1.9.2' beside a global strata)",
      )
    }
    throw e
  }
}

/**
 * The first SIGINT or SIGTERM. While the server closes, a second one ends the process at
 * once (a client holding a request open would otherwise keep it waiting); release() removes
 * every listener, so an in-process caller's signals are its own again.
 */
function untilSignal(): { signal: Promise<NodeJS.Signals>; release(): void } {
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM']
  let first: ((s: NodeJS.Signals) => void) | undefined
  const onSignal = (s: NodeJS.Signals) => {
    if (first) {
      const resolve = first
      first = undefined
      resolve(s)
      return
    }
    process.stderr.write(`strata local: ${s} again: exiting without waiting for the server to close\n`)
    process.exit(1)
  }
  const signal = new Promise<NodeJS.Signals>((resolve) => (first = resolve))
  for (const s of signals) process.on(s, onSignal)
  return {
    signal,
    release() {
      for (const s of signals) process.off(s, onSignal)
    },
  }
}
