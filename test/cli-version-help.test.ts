// `strata --version` prints the package's version, found from the CLI's own directory both in
// a checkout (lib/cli/) and compiled (dist/lib/cli/); `strata write --help` says what a line
// of input holds. The CLI runs in-process (test/helpers/cli-in-process.ts).

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { strata } from './helpers/cli-in-process.ts'
import { findPackage } from '../lib/package.ts'

const pkg = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'package.json'), 'utf8')) as { name: string; version: string }
const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

describe('strata --version', () => {
  it("prints package.json's version, with --version and -V", async () => {
    expect(pkg.version).toMatch(/^\d+\.\d+\.\d+/)
    expect(await strata(['--version'])).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' })
    expect(await strata(['-V'])).toEqual({ code: 0, stdout: `${pkg.version}\n`, stderr: '' })
  })

  it("walks up to the package's own package.json, past another package's (compiled: three directories up)", () => {
    const root = mkdtempSync(join(tmpdir(), 'strata-version-'))
    dirs.push(root)
    const cli = join(root, 'dist', 'lib', 'cli')
    mkdirSync(cli, { recursive: true })
    writeFileSync(join(root, 'package.json'), JSON.stringify({ name: 'strata-tables', version: '9.8.7' }))
    // a package.json nearer the CLI that is not the package's (a nested one a bundler left)
    writeFileSync(join(root, 'dist', 'package.json'), JSON.stringify({ type: 'module' }))
    writeFileSync(join(root, 'dist', 'lib', 'package.json'), '{ not json')
    expect(findPackage(cli)).toEqual({ root, version: '9.8.7' })
    // with no package of that name above it: none, not a crash
    expect(findPackage(join(tmpdir()))).toBeUndefined()
  })
})

describe('strata write --help', () => {
  it('describes the input: JSON lines, _kind and its values, how values are written, a bad line fails the write', async () => {
    const r = await strata(['write', '--help'])
    expect(r.code).toBe(0)
    expect(r.stderr).toBe('')
    for (const text of ['JSON lines', 'one JSON object', 'Keys are column names', '_kind', '"+I"', '"-U"', '"+U"', '"-D"', 'BIGINT', 'string of digits', 'DECIMAL(p, s)', 'base64', 'YYYY-MM-DD', 'Blank lines are skipped', 'naming its line', 'nothing of it is committed']) {
      expect(r.stdout).toContain(text)
    }
  })
})
