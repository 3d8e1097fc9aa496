// The `strata` command, and bad input at every boundary: a clear one-line reason, a non-zero
// exit, the table unchanged. The round trip, a closed pipe and one refusal of each kind run as
// a user runs them (a real child process through bin/strata.ts: stdin, exit codes, nothing
// else on stderr); the other cases run the same main in-process (test/helpers/cli-in-process.ts),
// since each child process costs a second of start-up.

import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { fileTree } from './helpers/file-tree.ts'
import { type CliResult, strata } from './helpers/cli-in-process.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'

const run = promisify(execFile)
const BIN = join(import.meta.dirname, '..', 'bin', 'strata.ts')

/** `strata` as a child process, `input` on its stdin. */
async function binary(args: string[], input?: string): Promise<CliResult> {
  const child = run(process.execPath, ['--import', 'tsx', BIN, ...args], { encoding: 'utf8' })
  if (input !== undefined) {
    child.child.stdin!.end(input)
  } else child.child.stdin!.end()
  try {
    const { stdout, stderr } = await child
    return { code: 0, stdout, stderr }
  } catch (e) {
    const err = e as { code: number; stdout: string; stderr: string }
    return { code: err.code, stdout: err.stdout, stderr: err.stderr }
  }
}

const tree = (dir: string): string[] => fileTree(dir)

/**
 * Waits until the table's LATEST hint names snapshot `id`: an in-process commit rewrites it
 * after it returns (lib/commit/commit.ts), a child process before it exits, so a tree taken
 * next is final.
 */
async function latestHinted(table: string, id: number): Promise<void> {
  const hint = join(table, 'snapshot', 'LATEST')
  while (!existsSync(hint) || readFileSync(hint, 'utf8').trim() !== String(id)) await new Promise((r) => setTimeout(r, 5))
}

const SCHEMA = {
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'BIGINT' },
    { name: 'name', type: 'STRING' },
    { name: 'price', type: 'DECIMAL(10, 2)' },
    { name: 'ts', type: 'TIMESTAMP(3)' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  options: { bucket: '4' },
}

let dir: string
let table: string
const lines = (...objs: unknown[]) => objs.map((o) => (typeof o === 'string' ? o : JSON.stringify(o))).join('\n') + '\n'

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'strata-cli-'))
  table = join(dir, 'orders')
  writeFileSync(join(dir, 'schema.json'), JSON.stringify(SCHEMA))
  const r = await strata(['create', table, '--schema', join(dir, 'schema.json')])
  expect(r.code).toBe(0)
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('strata CLI round trip', () => {
  it('writes, reads, time-travels, looks up and reports status', async () => {
    writeFileSync(
      join(dir, 'a.jsonl'),
      lines(
        { dt: '2024-05-01', id: 1, name: 'apple', price: '1.50', ts: '2024-05-01 10:00:00.123' },
        { dt: '2024-05-01', id: 4, name: 'pear', price: 2 },
        '',
        { dt: '2024-05-02', id: 21, name: 'fig' },
      ),
    )
    let r = await binary(['write', table, join(dir, 'a.jsonl')])
    expect(r).toMatchObject({ code: 0, stdout: '1\n' })
    r = await binary(['write', table, '-'], lines({ dt: '2024-05-01', id: 1, name: 'apple', price: '3.25', _kind: '+U' }, { dt: '2024-05-01', id: 4, _kind: '-D' }))
    expect(r).toMatchObject({ code: 0, stdout: '2\n' })

    r = await binary(['read', table, '--json'])
    expect(r.code).toBe(0)
    expect(r.stdout.trim().split('\n').map((l) => JSON.parse(l))).toEqual([
      { dt: '2024-05-01', id: 1, name: 'apple', price: 3.25, ts: null },
      { dt: '2024-05-02', id: 21, name: 'fig', price: null, ts: null },
    ])
    r = await binary(['read', table, '--json', '--snapshot', '1', '--columns', 'id,ts'])
    expect(r.stdout.trim().split('\n')).toEqual(['{"id":1,"ts":"2024-05-01 10:00:00.123"}', '{"id":4,"ts":null}', '{"id":21,"ts":null}'])
    r = await binary(['read', table])
    expect(r.stdout.split('\n')[0]).toBe('dt\tid\tname\tprice\tts')

    r = await binary(['lookup', table, '--key', '{"dt":"2024-05-01","id":1}', '--json'])
    expect(r).toMatchObject({ code: 0 })
    expect(JSON.parse(r.stdout)).toEqual({ dt: '2024-05-01', id: 1, name: 'apple', price: 3.25, ts: null })
    r = await binary(['lookup', table, '--key', '{"dt":"2024-05-01","id":4}'])
    expect(r).toMatchObject({ code: 1, stdout: 'not found\n' })

    r = await binary(['status', table, '--json'])
    const status = JSON.parse(r.stdout)
    expect(status.snapshot).toMatchObject({ id: 2, commitKind: 'APPEND', totalRecordCount: 5 })
    expect(status.buckets).toEqual([
      expect.objectContaining({ partition: 'dt=2024-05-01', bucket: 2, files: 2, rows: 4 }),
      expect.objectContaining({ partition: 'dt=2024-05-02', bucket: 2, files: 1, rows: 1 }),
    ])
  })
})

describe('strata compact, status and expire on a deletion-vector table', () => {
  it('L0 rows are invisible until compaction; status shows L0, runs, vectors and freshness lag', async () => {
    const file = join(dir, 'dv.json')
    writeFileSync(file, JSON.stringify({ ...SCHEMA, options: { bucket: '2', 'deletion-vectors.enabled': 'true', 'snapshot.num-retained.min': '1', 'snapshot.time-retained': '0 s' } }))
    const dv = join(dir, 'dv')
    expect((await strata(['create', dv, '--schema', file])).code).toBe(0)
    const rows = Array.from({ length: 40 }, (_, i) => ({ dt: '2024-05-01', id: i, name: `n${i}` }))
    expect((await strata(['write', dv, '-'], lines(...rows))).code).toBe(0)
    // deletion-vector readers skip level 0: nothing is visible before compaction
    expect((await strata(['read', dv, '--json'])).stdout).toBe('')
    let status = JSON.parse((await strata(['status', dv, '--json'])).stdout)
    expect(status.deletionVectors).toBe(true)
    expect(status.maxL0Files).toBe(1)
    expect(status.buckets.every((b: { l0Files: number; freshnessLagMs: number }) => b.l0Files === 1 && b.freshnessLagMs >= 0)).toBe(true)

    let r = await strata(['compact', dv])
    expect(r.code).toBe(0)
    // both buckets' compactions land in one snapshot
    expect(r.stdout).toMatch(/^2 compaction\(s\): 2 files in, 0 written, 2 upgraded; snapshot 2\n$/)
    expect((await strata(['read', dv, '--json'])).stdout.trim().split('\n')).toHaveLength(40)

    // an update and a delete: marked in deletion vectors of the compacted files
    expect((await strata(['write', dv, '-'], lines({ dt: '2024-05-01', id: 1, name: 'new' }, { dt: '2024-05-01', id: 2, _kind: '-D' }))).code).toBe(0)
    r = await strata(['compact', dv, '--json'])
    const jobs = r.stdout.trim().split('\n').map((l) => JSON.parse(l))
    expect(jobs.reduce((n: number, j: { rowsDeletedByVector: number }) => n + j.rowsDeletedByVector, 0)).toBe(2)
    status = JSON.parse((await strata(['status', dv, '--json'])).stdout)
    expect(status.maxL0Files).toBe(0)
    expect(status.maxFreshnessLagMs).toBeNull()
    expect(status.buckets.reduce((n: number, b: { dvCardinality: number }) => n + b.dvCardinality, 0)).toBe(2)
    const read = (await strata(['read', dv, '--json'])).stdout.trim().split('\n').map((l) => JSON.parse(l))
    expect(read).toHaveLength(39)
    expect(read.find((x: { id: number }) => x.id === 1).name).toBe('new')

    expect((await strata(['compact', dv])).stdout).toMatch(/^nothing to compact: 2 buckets with no level-0 file \(with deletion vectors a level-0 file makes compaction due; .*\); 'strata compact --full' rewrites every bucket into the top level\n$/)
    r = await strata(['compact', dv, '--bucket', '7'])
    expect(r.code).toBe(2)
    expect(r.stderr.trim()).toBe('strata: --bucket: expected a bucket number in [0, 1], got "7"')
    r = await strata(['compact', dv, '--partition', 'day=1'])
    expect(r.stderr.trim()).toBe("strata: --partition: 'day' is not a partition key (partition keys: dt)")
    r = await strata(['compact', dv, '--partition', 'dt=2024-05-01', '--full'])
    expect(r.code).toBe(0)

    r = await strata(['expire', dv, '--remove-orphans', '--older-than', '13 h'])
    expect(r.code).toBe(0)
    expect(r.stdout).toMatch(/^expired snapshots 1\.\.\d+ \(\d+ files deleted\); retained \d+\.\.\d+\nremoved \d+ orphan file\(s\)\n$/)
    expect((await strata(['read', dv, '--json'])).stdout.trim().split('\n')).toHaveLength(39)
  })
})

describe('bad input: a clear reason, a non-zero exit, the table unchanged', () => {
  const cases: [string, string, RegExp][] = [
    ['wrong type', lines({ dt: '2024-05-01', id: 'seven', name: 'x' }), /^strata: line 1: field 'id' \(BIGINT\) expected an integer, got "seven"$/],
    ['null primary key', lines({ dt: '2024-05-01', id: 1 }, { dt: '2024-05-01', id: null }), /^strata: line 2: field 'id' is NOT NULL but got null$/],
    ['missing primary key', lines({ dt: '2024-05-01', name: 'x' }), /^strata: line 1: field 'id' is NOT NULL but got no value$/],
    ['unknown column', lines({ dt: '2024-05-01', id: 1, colour: 'red' }), /^strata: line 1: unknown column 'colour' \(columns: dt, id, name, price, ts\)$/],
    ['malformed JSON', lines({ dt: '2024-05-01', id: 1 }, '{"dt": "2024-05-01", "id": 2'), /^strata: line 2: malformed JSON/],
    ['bad row kind', lines({ dt: '2024-05-01', id: 1, _kind: 'UPSERT' }), /^strata: line 1: field '_kind' expected one of "\+I", "-U", "\+U", "-D", got "UPSERT"$/],
    ['decimal overflow', lines({ dt: '2024-05-01', id: 1, price: 123456789 }), /^strata: line 1: field 'price' \(DECIMAL\(10, 2\)\) expected a decimal number with at most 8 integer digits, got 123456789$/],
    ['bad timestamp', lines({ dt: '2024-05-01', id: 1, ts: '2024-13-01 00:00:00' }), /^strata: line 1: field 'ts' \(TIMESTAMP\(3\)\) expected a timestamp/],
    ['not an object', lines([1, 2]), /^strata: line 1: expected a JSON object with the table's columns, got \[1,2\]$/],
  ]
  for (const [name, input, message] of cases) {
    it(name, async () => {
      const before = tree(table)
      const r = await (name === 'wrong type' ? binary : strata)(['write', table, '-'], input)
      expect(r.code).not.toBe(0)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
      expect(r.stderr.trim()).toMatch(message)
      expect(tree(table)).toEqual(before)
    })
  }

  const schemaCases: [string, unknown, RegExp][] = [
    ['unknown option', { ...SCHEMA, options: { bucket: '4', 'bukcet-key': 'id' } }, /option 'bukcet-key' is unknown/],
    ['ill-typed option', { ...SCHEMA, options: { bucket: 'four' } }, /option 'bucket': invalid value "four", expected an integer in 1\.\.32768/],
    ['partition key outside the primary key', { ...SCHEMA, primaryKeys: ['id'] }, /partition key 'dt' is not part of the primary key \[id\]/],
    ['unknown type', { ...SCHEMA, fields: [...SCHEMA.fields, { name: 'tags', type: 'GEOMETRY' }] }, /field 'tags'\): type "GEOMETRY" is not supported/],
    ['nested primary key', { ...SCHEMA, fields: [...SCHEMA.fields, { name: 'tags', type: 'ARRAY<STRING>' }], primaryKeys: [...SCHEMA.primaryKeys, 'tags'] }, /primary key field 'tags' has type ARRAY<STRING>; as in Paimon, a primary key field must not be ARRAY, MAP, MULTISET or ROW/],
    ['count aggregate (Paimon has none)', { ...SCHEMA, options: { 'merge-engine': 'aggregation', 'fields.name.aggregate-function': 'count' } }, /count/],
  ]
  for (const [name, schema, message] of schemaCases) {
    it(`schema: ${name}`, async () => {
      const file = join(dir, `bad-${name.replace(/\W+/g, '-')}.json`)
      writeFileSync(file, JSON.stringify(schema))
      const target = join(dir, `bad-${name.replace(/\W+/g, '-')}`)
      const r = await (name === 'unknown option' ? binary : strata)(['create', target, '--schema', file])
      expect(r.code).not.toBe(0)
      expect(r.stderr.trim().split('\n')).toHaveLength(1)
      expect(r.stderr).toMatch(message)
      expect(() => statSync(target)).toThrow()
    })
  }

  it('a partial-update table refuses a delete without ignore-delete, committing nothing', async () => {
    const file = join(dir, 'pu.json')
    writeFileSync(file, JSON.stringify({ ...SCHEMA, options: { bucket: '2', 'merge-engine': 'partial-update' } }))
    const pu = join(dir, 'pu')
    expect((await strata(['create', pu, '--schema', file])).code).toBe(0)
    expect((await strata(['write', pu, '-'], lines({ dt: '2024-05-01', id: 1, name: 'a' }))).code).toBe(0)
    await latestHinted(pu, 1)
    const before = tree(pu)
    const r = await strata(['write', pu, '-'], lines({ dt: '2024-05-01', id: 2, name: 'b' }, { dt: '2024-05-01', id: 1, _kind: '-D' }))
    expect(r.code).not.toBe(0)
    expect(r.stderr).toMatch(/^strata: line 2: .*(ignore-delete)/)
    expect(tree(pu)).toEqual(before)
  })

  it('reading a snapshot that does not exist names the retained range', async () => {
    const r = await strata(['read', table, '--snapshot', '99'])
    expect(r.code).not.toBe(0)
    expect(r.stderr.trim()).toBe('strata: --snapshot 99: no such snapshot (retained snapshots: 1..2)')
    expect(r.stdout).toBe('')
  })

  it('a reader that closes the pipe early (strata read | head) ends the command quietly', async () => {
    const big = join(dir, 'many')
    writeFileSync(join(dir, 'many.json'), JSON.stringify(SCHEMA))
    expect((await strata(['create', big, '--schema', join(dir, 'many.json')])).code).toBe(0)
    const rows = Array.from({ length: 20_000 }, (_, i) => ({ dt: '2024-05-01', id: i, name: `n${i}` }))
    expect((await strata(['write', big, '-'], lines(...rows))).code).toBe(0)
    const { spawn } = await import('node:child_process')
    const child = spawn(process.execPath, ['--import', 'tsx', BIN, 'read', big, '--json'], { stdio: ['ignore', 'pipe', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d) => (stderr += d))
    // the first chunk arrives, then the reader goes away, as `head` does
    await new Promise<void>((r) => child.stdout.once('data', () => r()))
    child.stdout.destroy()
    const code = await new Promise<number | null>((r) => child.on('close', r))
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
  })

  it('a missing table and a bad URI are named', async () => {
    let r = await strata(['read', join(dir, 'nope')])
    expect(r.stderr.trim()).toMatch(/^strata: no table at file:\/\/.*nope \(no schema\/schema-N\)/)
    r = await strata(['read', 'ftp://host/x'])
    expect(r.code).not.toBe(0)
    expect(r.stderr.trim()).toMatch(/ftp:\/\/host\/x/)
  })
})
