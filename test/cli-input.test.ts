// The CLI's options are checked before it prints, expires or deletes anything: a refused
// read leaves stdout empty, a refused expire leaves the table as it was, and every reason
// names the option and the value given. The CLI runs in-process here (lib/cli/main.ts
// `main`, stdout and stderr captured), on real tables in a temp directory; test/cli.test.ts
// runs it as a child process.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileTree } from './helpers/file-tree.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { strata } from './helpers/cli-in-process.ts'


/** Files and mtimes, to prove nothing changed; not the LATEST hint (see fileTree). */
const tree = (dir: string): string[] => fileTree(dir, ['LATEST'])

const SCHEMA = {
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'BIGINT' },
    { name: 'name', type: 'STRING' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  // every snapshot but the latest may expire at once
  options: { bucket: '2', 'snapshot.num-retained.min': '1', 'snapshot.time-retained': '0 s' },
}
const COLUMNS = 'columns: dt, id, name'
const FLOOR =
  'expected an orphan age of at least 13 h (46800000 ms): a commit can land up to 12 h 30 min after its files were written ' +
  '(the commit queue keeps a message 12 h), so a younger unreferenced file may still become part of a snapshot'

let dir: string
let table: string

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'strata-cli-input-'))
  table = join(dir, 't')
  writeFileSync(join(dir, 'schema.json'), JSON.stringify(SCHEMA))
  expect((await strata(['create', table, '--schema', join(dir, 'schema.json')])).code).toBe(0)
  for (const id of [1, 2, 3]) {
    const file = join(dir, `${id}.jsonl`)
    writeFileSync(file, `${JSON.stringify({ dt: '2024-05-01', id, name: `n${id}` })}\n`)
    expect(await strata(['write', table, file])).toEqual({ code: 0, stdout: `${id}\n`, stderr: '' })
  }
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/**
 * Runs each case and expects exit 2 (3 for a snapshot that does not exist: docs/operations.md
 * "Exit codes"), nothing on stdout, the one-line reason, and the table untouched.
 */
async function expectRefused(command: string, cases: [string[], string][]): Promise<void> {
  const before = tree(table)
  for (const [args, reason] of cases) {
    const r = await strata([command, table, ...args])
    const code = reason.includes('no such snapshot') ? 3 : 2
    expect({ args, ...r }).toEqual({ args, code, stdout: '', stderr: `strata: ${reason}\n` })
    expect(tree(table)).toEqual(before)
  }
}

describe('strata read', () => {
  it('refuses bad options before printing the header', async () => {
    await expectRefused('read', [
      [['--columns', ','], `--columns ",": expected a comma-separated list of column names with none empty (${COLUMNS})`],
      [['--columns', 'id,,name'], `--columns "id,,name": expected a comma-separated list of column names with none empty (${COLUMNS})`],
      [['--columns', ''], `--columns "": expected a comma-separated list of column names with none empty (${COLUMNS})`],
      [['--columns', 'nope'], `--columns "nope": unknown column 'nope' (${COLUMNS})`],
      [['--columns', 'id,nope', '--json'], `--columns "id,nope": unknown column 'nope' (${COLUMNS})`],
      [['--snapshot', '999'], '--snapshot 999: no such snapshot (retained snapshots: 1..3)'],
      [['--snapshot', '999', '--columns', 'id', '--json'], '--snapshot 999: no such snapshot (retained snapshots: 1..3)'],
      [['--snapshot', '99999999999999999999'], '--snapshot: expected a snapshot id >= 1, got "99999999999999999999"'],
      [['--filter', '{"nope":1}'], `filter: unknown column 'nope' (${COLUMNS})`],
      [['--filter', '[1]'], '--filter: expected a JSON object, got [1]'],
    ])
  })

  it('still prints the header and the rows of a good read', async () => {
    expect(await strata(['read', table, '--columns', ' id , name'])).toEqual({ code: 0, stdout: 'id\tname\n1\tn1\n2\tn2\n3\tn3\n', stderr: '' })
    expect(await strata(['read', table, '--snapshot', '1', '--json'])).toEqual({ code: 0, stdout: '{"dt":"2024-05-01","id":1,"name":"n1"}\n', stderr: '' })
  })
})

describe('strata lookup and compact', () => {
  it('refuse bad options without printing or writing anything', async () => {
    await expectRefused('lookup', [
      [['--key', '{"dt":"2024-05-01","id":1}', '--snapshot', '0'], '--snapshot: expected a snapshot id >= 1, got "0"'],
      [['--key', '{"dt":"2024-05-01","id":1}', '--snapshot', '999'], '--snapshot 999: no such snapshot (retained snapshots: 1..3)'],
    ])
    await expectRefused(
      'compact',
      ['', ' 1', '0x1', '1e0', '2'].map((b) => [['--bucket', b], `--bucket: expected a bucket number in [0, 1], got ${JSON.stringify(b)}`]),
    )
  })
})

describe('strata expire', () => {
  it('checks every option before it expires or deletes anything', async () => {
    await expectRefused('expire', [
      [['--remove-orphans', '--older-than', 'abc'], `--older-than "abc": expected a duration such as '1 d' or '13 h'`],
      [['--remove-orphans', '--older-than', '0'], `--older-than "0": ${FLOOR}`],
      [['--remove-orphans', '--older-than', '0 s'], `--older-than "0 s": ${FLOOR}`],
      [['--remove-orphans', '--older-than', '779 min'], `--older-than "779 min": ${FLOOR}`],
      [['--older-than', '1 d'], '--older-than "1 d": applies only with --remove-orphans'],
    ])
  })

  it('runs with the smallest age accepted', async () => {
    const r = await strata(['expire', table, '--remove-orphans', '--older-than', '780 min'])
    expect(r).toMatchObject({ code: 0, stderr: '' })
    expect(r.stdout).toMatch(/^expired snapshots 1\.\.2 \(\d+ files deleted\); retained 3\.\.3\nremoved 0 orphan file\(s\)\n$/)
  })
})

describe('strata write reads bytes strictly', () => {
  it('refuses a line that is not UTF-8, naming the line and byte, and writes nothing', async () => {
    const file = join(dir, 'latin1.jsonl')
    const good = Buffer.from(`${JSON.stringify({ dt: '2024-05-01', id: 10, name: 'ok' })}\n`)
    // "café" in Latin-1: 0xE9 is a lead byte with no continuation
    const bad = Buffer.concat([Buffer.from('{"dt":"2024-05-01","id":11,"name":"caf'), Buffer.from([0xe9]), Buffer.from('"}\n')])
    writeFileSync(file, Buffer.concat([good, bad]))
    await expectRefused('write', [[[file], 'line 2: byte 39 is not valid UTF-8 (0xe9); expected UTF-8 text']])
  })

  it('takes CRLF line ends, a byte-order mark on the first line and a line longer than a read chunk', async () => {
    const file = join(dir, 'crlf.jsonl')
    const long = 'x'.repeat(200_000)
    const lines = [JSON.stringify({ dt: '2024-05-02', id: 1, name: 'é' }), JSON.stringify({ dt: '2024-05-02', id: 2, name: long })]
    writeFileSync(file, Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(lines.join('\r\n') + '\r\n')]))
    const w = await strata(['write', table, file])
    expect(w.code).toBe(0)
    const r = await strata(['read', table, '--filter', '{"dt":"2024-05-02"}', '--columns', 'id,name'])
    expect(r.code).toBe(0)
    // compared as a boolean: a failing diff of a 200 kB line helps no one
    expect(r.stdout === `id\tname\n1\té\n2\t${long}\n`).toBe(true)
  })
})
