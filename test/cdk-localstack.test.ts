// scripts/deploy-local.sh's check of LocalStack's Lambda architecture setting, run against
// stand-ins for curl, uname, docker and npx (no LocalStack or Docker here): every function is
// arm64, so on an x86-64 host the script refuses a LocalStack container that lacks
// LAMBDA_IGNORE_ARCHITECTURE=1, and says so when it cannot tell.

import { spawnSync } from 'node:child_process'
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const ROOT = join(import.meta.dirname, '..')
let stubs: string
let log: string

const STUB = (body: string) => `#!/usr/bin/env bash\n${body}\n`

beforeAll(() => {
  stubs = mkdtempSync(join(tmpdir(), 'strata-deploy-local-'))
  log = join(stubs, 'calls.log')
  const put = (name: string, body: string) => {
    writeFileSync(join(stubs, name), STUB(body))
    chmodSync(join(stubs, name), 0o755)
  }
  put('curl', `echo "curl $*" >> "$STUB_LOG"; printf '%s' '{"version":"3.8.1","edition":"community","services":{}}'`)
  put('uname', `if [ "$1" = "-m" ]; then echo "$STUB_ARCH"; else echo Linux; fi`)
  put(
    'docker',
    `echo "docker $*" >> "$STUB_LOG"
case "$1" in
  ps) printf '%b' "\${STUB_DOCKER_PS:-}" ;;
  inspect) [ -n "\${STUB_INSPECT_FAIL:-}" ] && exit 1; printf '%b' "\${STUB_DOCKER_ENV:-}" ;;
esac`,
  )
  put('npx', `echo "npx $*" >> "$STUB_LOG"`)
})

afterAll(() => rmSync(stubs, { recursive: true, force: true }))

function deploy(env: Record<string, string>): { code: number | null; stdout: string; stderr: string; calls: string[] } {
  writeFileSync(log, '')
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('AWS_') && k !== 'MAIN_CONTAINER_NAME' && k !== 'STRATA_ALLOW_ARM64_EMULATION'))
  const res = spawnSync('bash', [join(ROOT, 'scripts', 'deploy-local.sh')], {
    cwd: ROOT,
    env: { ...clean, PATH: `${stubs}:${process.env.PATH}`, STUB_LOG: log, STUB_ARCH: 'x86_64', ...env },
    encoding: 'utf8',
  })
  return { code: res.status, stdout: res.stdout, stderr: res.stderr, calls: readFileSync(log, 'utf8').split('\n').filter(Boolean) }
}

const deployed = (calls: string[]) => calls.filter((c) => c.startsWith('npx cdklocal'))
const CONTAINER_PS = 'localstack-main localstack/localstack:3.8\\nother postgres:16\\n'

describe('deploy-local.sh and arm64 functions on LocalStack', () => {
  it('refuses an x86-64 host whose LocalStack container lacks LAMBDA_IGNORE_ARCHITECTURE=1, saying how to fix it', () => {
    const r = deploy({ STUB_DOCKER_PS: CONTAINER_PS, STUB_DOCKER_ENV: 'PATH=/usr/bin\\nLAMBDA_IGNORE_ARCHITECTURE=0\\n' })
    expect(r.code).toBe(1)
    expect(r.stderr).toContain("LocalStack container 'localstack-main' runs on an x86_64 host without LAMBDA_IGNORE_ARCHITECTURE=1 (it has 0)")
    expect(r.stderr).toContain('LAMBDA_IGNORE_ARCHITECTURE=1 localstack start')
    expect(r.calls).toContain(`docker inspect --format {{range .Config.Env}}{{println .}}{{end}} localstack-main`)
    expect(deployed(r.calls)).toEqual([])
  })

  it('deploys when the container has it', () => {
    const r = deploy({ STUB_DOCKER_PS: CONTAINER_PS, STUB_DOCKER_ENV: 'PATH=/usr/bin\\nLAMBDA_IGNORE_ARCHITECTURE=1\\n' })
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain("LocalStack container 'localstack-main' has LAMBDA_IGNORE_ARCHITECTURE=1: the arm64 functions run as x86_64")
    expect(deployed(r.calls)).toEqual([
      'npx cdklocal bootstrap aws://000000000000/us-east-1 -c config=cdk/strata.config.json',
      'npx cdklocal deploy --all --require-approval never -c config=cdk/strata.config.json --outputs-file .tmp/localstack-outputs.json',
    ])
  })

  it('finds the container by its image, or by MAIN_CONTAINER_NAME', () => {
    const byImage = deploy({ STUB_DOCKER_PS: 'ls1 localstack/localstack-pro:latest\\n', STUB_DOCKER_ENV: 'LAMBDA_IGNORE_ARCHITECTURE=true\\n' })
    expect(byImage.code, byImage.stderr).toBe(0)
    expect(byImage.calls.some((c) => c.startsWith('docker inspect') && c.endsWith(' ls1'))).toBe(true)
    const byName = deploy({ MAIN_CONTAINER_NAME: 'mine', STUB_DOCKER_ENV: 'LAMBDA_IGNORE_ARCHITECTURE=1\\n' })
    expect(byName.code, byName.stderr).toBe(0)
    expect(byName.calls.some((c) => c.startsWith('docker ps'))).toBe(false)
    expect(byName.calls.some((c) => c.startsWith('docker inspect') && c.endsWith(' mine'))).toBe(true)
  })

  it('deploys anyway with STRATA_ALLOW_ARM64_EMULATION=1, with a warning', () => {
    const r = deploy({ STUB_DOCKER_PS: CONTAINER_PS, STUB_DOCKER_ENV: 'PATH=/usr/bin\\n', STRATA_ALLOW_ARM64_EMULATION: '1' })
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toContain('lacks LAMBDA_IGNORE_ARCHITECTURE=1 on this x86_64 host; deploying anyway')
    expect(deployed(r.calls)).toHaveLength(2)
  })

  it('goes on with a note when it cannot inspect the container', () => {
    const r = deploy({ STUB_DOCKER_PS: '', STUB_INSPECT_FAIL: '1' })
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toContain("cannot inspect a LocalStack container named 'localstack-main'")
    expect(r.stderr).toContain('LAMBDA_IGNORE_ARCHITECTURE=1')
    expect(deployed(r.calls)).toHaveLength(2)
  })

  it('checks nothing on an arm64 host, and only notes it for a LocalStack elsewhere', () => {
    const arm = deploy({ STUB_ARCH: 'aarch64', STUB_DOCKER_ENV: '' })
    expect(arm.code, arm.stderr).toBe(0)
    expect(arm.calls.some((c) => c.startsWith('docker'))).toBe(false)
    expect(arm.stderr).not.toContain('LAMBDA_IGNORE_ARCHITECTURE')
    const remote = deploy({ AWS_ENDPOINT_URL: 'http://ls.internal:4566' })
    expect(remote.code, remote.stderr).toBe(0)
    expect(remote.stderr).toContain('LocalStack runs on ls.internal; if that host is x86-64, its container needs LAMBDA_IGNORE_ARCHITECTURE=1')
    expect(remote.calls.some((c) => c.startsWith('docker'))).toBe(false)
  })
})
