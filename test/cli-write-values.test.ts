// `strata write` on hostile input lines reported against it, as a user runs it (a child process through
// bin/strata.ts): the exponent that ran past 90 s, the one that exited with a bare
// `Maximum BigInt size exceeded`, and a repeated key. Each must exit 2 with one line naming
// the line number and the field, and leave the table as it was.

import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { strata as inProcess } from './helpers/cli-in-process.ts'

const run = promisify(execFile)
const BIN = join(import.meta.dirname, '..', 'bin', 'strata.ts')

async function strata(args: string[], input: string): Promise<{ code: number; stderr: string }> {
  const child = run(process.execPath, ['--import', 'tsx', BIN, ...args], { encoding: 'utf8' })
  child.child.stdin!.end(input)
  try {
    const { stderr } = await child
    return { code: 0, stderr }
  } catch (e) {
    const err = e as { code: number; stderr: string }
    return { code: err.code, stderr: err.stderr }
  }
}

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()
}

let dir: string
let table: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'strata-cli-values-'))
  table = join(dir, 'orders')
  const schema = join(dir, 'schema.json')
  writeFileSync(
    schema,
    JSON.stringify({
      fields: [
        { name: 'dt', type: 'STRING' },
        { name: 'id', type: 'BIGINT' },
        { name: 'price', type: 'DECIMAL(10, 2)' },
        { name: 'x', type: 'DOUBLE' },
      ],
      primaryKeys: ['dt', 'id'],
      partitionKeys: ['dt'],
    }),
  )
  // the table is set up in-process; the writes below are the child processes under test
  expect((await inProcess(['create', table, '--schema', schema])).stdout).toMatch(/^created /)
}, 60_000)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const GOOD = '{"dt":"2024-05-01","id":7,"price":"1.50"}\n'

describe('strata write names the line and the field of a hostile value', () => {
  it.each([
    ['"1e400000000" (ran past 90 s)', '{"dt":"2024-05-01","id":1,"price":"1e400000000"}', `strata: line 2: field 'price' (DECIMAL(10, 2)) expected a decimal number with at most 8 integer digits, got "1e400000000"`],
    ['"1e9999999999" (Maximum BigInt size exceeded, exit 1)', '{"dt":"2024-05-01","id":1,"price":"1e9999999999"}', `strata: line 2: field 'price' (DECIMAL(10, 2)) expected a decimal number with at most 8 integer digits, got "1e9999999999"`],
  ])('%s', async (_, line, message) => {
    const before = files(table)
    const r = await strata(['write', table, '-'], GOOD + line + '\n')
    expect(r.code).toBe(2)
    expect(r.stderr.startsWith(message)).toBe(true)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(files(table)).toEqual(before)
  }, 60_000)

  it('a key given twice (JSON.parse took the last value silently)', async () => {
    const before = files(table)
    const r = await strata(['write', table, '-'], GOOD + '{"dt":"2024-05-01","id":2,"id":3}\n')
    expect(r.stderr.trim()).toBe('strata: line 2: malformed JSON at character 27: key "id" appears twice in one object')
    expect(r.code).toBe(2)
    expect(files(table)).toEqual(before)
  }, 60_000)
})
