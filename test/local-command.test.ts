// `strata local` (local/serve.ts) run as a user runs it: in a process of its own (the CLI with
// `local` added through main's `extend`, test/helpers/strata-local-runner.ts), its printed
// environment read from stdout, then `strata create`, `write` and `read` in this process with
// that environment against it, then SIGTERM. Also its refusals: a taken port, bad flags, and
// fauxqs missing.

import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { type Server, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterAll, afterEach, describe, expect, it, vi } from 'vitest'
import { main } from '../lib/cli/main.ts'
import { addLocalCommand } from '../local/serve.ts'
import { strata } from './helpers/cli-in-process.ts'

const RUNNER = join(import.meta.dirname, 'helpers', 'strata-local-runner.ts')
const HIDE_FAUXQS = pathToFileURL(join(import.meta.dirname, 'helpers', 'hide-fauxqs.mjs')).href

interface LocalProcess {
  child: ChildProcess
  /** stdout once it has printed its `# ready` line; rejects if the process ends first */
  ready: Promise<string>
  /** the exit code, and all of stdout and stderr */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>
}

function runLocal(args: string[], nodeArgs: string[] = []): LocalProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', ...nodeArgs, RUNNER, 'local', ...args], { stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }>((resolve) =>
    child.once('close', (code, signal) => resolve({ code, signal, stdout, stderr })),
  )
  const ready = new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d: Buffer) => {
      stdout += d.toString()
      if (/^# ready$/m.test(stdout)) resolve(stdout)
    })
    void exited.then((r) => reject(new Error(`strata local exited with ${r.code} before it was ready: ${r.stderr}`)))
  })
  // a test that waits only for the exit leaves `ready` unawaited
  ready.catch(() => {})
  return { child, ready, exited }
}

const children: ChildProcess[] = []
afterAll(() => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL')
})
afterEach(() => {
  vi.unstubAllEnvs()
})

describe('strata local', () => {
  it('serves S3 with its bucket at the environment it prints, for strata create, write and read, until SIGTERM (exit 0)', async () => {
    const local = runLocal(['--port', '0', '--bucket', 'strata-local-test'])
    children.push(local.child)
    const printed = await local.ready

    // the environment, as a shell would take it from the export and unset lines
    const env = Object.fromEntries([...printed.matchAll(/^export (\w+)=(\S+)$/gm)].map((m) => [m[1], m[2]]))
    expect(Object.keys(env).sort()).toEqual(['AWS_ACCESS_KEY_ID', 'AWS_ENDPOINT_URL', 'AWS_REGION', 'AWS_SECRET_ACCESS_KEY'])
    expect(env.AWS_ENDPOINT_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    expect(printed).toMatch(/^unset AWS_ENDPOINT_URL_S3 AWS_PROFILE$/m)
    for (const [k, v] of Object.entries(env)) vi.stubEnv(k, v)
    vi.stubEnv('AWS_ENDPOINT_URL_S3', undefined)
    vi.stubEnv('AWS_PROFILE', undefined)

    // the printed example's schema and table, as printed
    const schema = /^#\s+echo '(.+)' > demo-schema\.json$/m.exec(printed)?.[1]
    const uri = /^#\s+strata create (\S+) --schema demo-schema\.json$/m.exec(printed)?.[1]
    expect(uri).toBe('s3://strata-local-test/tables/demo')
    const dir = mkdtempSync(join(tmpdir(), 'strata-local-'))
    try {
      writeFileSync(join(dir, 'demo-schema.json'), schema!)
      writeFileSync(join(dir, 'rows.jsonl'), '{"id":1,"name":"apple"}\n{"id":2,"name":"pear"}\n')
      expect(await strata(['create', uri!, '--schema', join(dir, 'demo-schema.json')])).toMatchObject({ code: 0 })
      expect(await strata(['write', uri!, join(dir, 'rows.jsonl')])).toMatchObject({ code: 0, stdout: '1\n' })
      const read = await strata(['read', uri!, '--json'])
      expect(read.code).toBe(0)
      expect(read.stdout.trim().split('\n').map((l) => JSON.parse(l))).toEqual([
        { id: 1, name: 'apple' },
        { id: 2, name: 'pear' },
      ])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }

    local.child.kill('SIGTERM')
    const end = await local.exited
    expect(end).toMatchObject({ code: 0, signal: null })
    expect(end.stderr).toContain('strata local: stopped on SIGTERM')
    // stopped: nothing listens there any more
    await expect(fetch(`${env.AWS_ENDPOINT_URL}/strata-local-test`)).rejects.toThrow()
  })

  it('refuses a port that is taken, naming it (exit 2)', async () => {
    const taken: Server = createServer()
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve))
    const port = (taken.address() as { port: number }).port
    try {
      const local = runLocal(['--port', String(port)])
      children.push(local.child)
      const end = await local.exited
      expect(end.code).toBe(2)
      expect(end.stdout).toBe('')
      expect(end.stderr).toContain(`strata: --port ${port}: 127.0.0.1:${port} is already in use`)
    } finally {
      taken.close()
    }
  })

  it('says how to install fauxqs when it is missing (exit 1)', async () => {
    // The one fault here that cannot be caused for real: fauxqs is installed in this checkout,
    // so a resolution hook answers it as Node answers a package that is not.
    const register = `data:text/javascript,import{register}from'node:module';register(${JSON.stringify(HIDE_FAUXQS)})`
    const local = runLocal(['--port', '0'], ['--import', register])
    children.push(local.child)
    const end = await local.exited
    expect(end.code).toBe(1)
    expect(end.stdout).toBe('')
    expect(end.stderr).toMatch(/^strata: strata local needs fauxqs .* not installed: run 'npm install fauxqs@1\.9\.2'/)
  })

  it('refuses a bad --port or --bucket before starting anything, naming the flag and value (exit 2)', async () => {
    const run = async (args: string[]) => {
      const stderr: string[] = []
      const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (stderr.push(String(chunk)), true))
      try {
        return { code: await main(args, { extend: addLocalCommand }), stderr: stderr.join('') }
      } finally {
        err.mockRestore()
      }
    }
    expect(await run(['local', '--port', '70000'])).toEqual({ code: 2, stderr: 'strata: --port "70000": expected a port number from 0 to 65535 (0: any free port)\n' })
    expect(await run(['local', '--port', 'any'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--port "any"') })
    expect(await run(['local', '--bucket', 'Strata_Local'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--bucket "Strata_Local": expected an S3 bucket name') })
  })
})
