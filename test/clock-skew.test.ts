// Sequence numbers follow commit order, whatever the writers' clocks say: a writer whose
// clock runs 5 s fast commits a row, then a writer with a correct clock, one second later,
// commits a new version of it. The later commit wins in reads, lookups, and after
// compaction. Each writer is a real `strata` process (bin/strata.ts); the fast clock comes
// from test/helpers/clock-skew.mjs, preloaded into the first one. Creating, compacting and
// reading, with the right clock, run the same CLI in-process (test/helpers/cli-in-process.ts).

import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, describe, expect, it } from 'vitest'
import { strata as inProcess } from './helpers/cli-in-process.ts'

const run = promisify(execFile)
const BIN = join(import.meta.dirname, '..', 'bin', 'strata.ts')
const SKEW = join(import.meta.dirname, 'helpers', 'clock-skew.mjs')
const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))

/** A writer: `strata write` as a child process whose clock runs `skewMs` fast. */
async function writer(args: string[], input: string, skewMs = 0): Promise<string> {
  const child = run(process.execPath, ['--import', 'tsx', '--import', SKEW, BIN, ...args], { encoding: 'utf8', env: { ...process.env, STRATA_TEST_CLOCK_SKEW_MS: String(skewMs) } })
  child.child.stdin!.end(input)
  return (await child).stdout
}

/** Any other command, in-process with the right clock: its stdout, once it exits 0. */
async function strata(args: string[]): Promise<string> {
  const r = await inProcess(args)
  expect(r.code, r.stderr).toBe(0)
  return r.stdout
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('sequence numbers under a skewed writer clock', () => {
  for (const dv of [false, true]) {
    it(`the later commit wins over an earlier one from a clock 5 s fast (deletion vectors ${dv ? 'on' : 'off'})`, async () => {
      const dir = mkdtempSync(join(tmpdir(), 'strata-skew-'))
      dirs.push(dir)
      const table = join(dir, 't')
      const schema = join(dir, 'schema.json')
      writeFileSync(schema, JSON.stringify({
        fields: [{ name: 'id', type: 'BIGINT' }, { name: 'v', type: 'STRING' }],
        primaryKeys: ['id'],
        options: { bucket: '1', ...(dv ? { 'deletion-vectors.enabled': 'true' } : {}) },
      }))
      await strata(['create', table, '--schema', schema])
      expect((await writer(['write', table, '-'], '{"id":1,"v":"first"}\n{"id":2,"v":"other"}\n', 5000)).trim()).toBe('1')
      await sleep(1000)
      expect((await writer(['write', table, '-'], '{"id":1,"v":"second"}\n')).trim()).toBe('2')
      if (dv) await strata(['compact', table]) // deletion-vector readers see only compacted rows
      const read = async () => (await strata(['read', table, '--json'])).trim().split('\n').map((l) => JSON.parse(l))
      expect(await read()).toEqual([{ id: 1, v: 'second' }, { id: 2, v: 'other' }])
      expect(JSON.parse(await strata(['lookup', table, '--key', '{"id":1}', '--json']))).toEqual({ id: 1, v: 'second' })
      await strata(['compact', table, '--full'])
      expect(await read()).toEqual([{ id: 1, v: 'second' }, { id: 2, v: 'other' }])
    }, 60_000)
  }
})
