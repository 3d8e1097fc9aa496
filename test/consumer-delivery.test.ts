// A consumer's progress never runs ahead of what `strata read --consumer-id` delivered: the
// real CLI (bin/strata.ts) in a child process, its stdout a pipe the test reads as a slow
// or vanishing reader would. A reader that closes the pipe early leaves the consumer where
// it was and strata exits non-zero; a paused reader holds strata back (it waits for stdout
// to drain, with a bounded amount pending, and records nothing) until it reads on. The
// child announces each wait for 'drain' on stderr (test/helpers/stdout-drain-signal.mjs),
// so the test follows events, not timers. Garbled consumer files are refused by reads and
// by expiration, naming the file.

import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { consumerKey, parseConsumer } from '../lib/handle/consumers.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { strata as strataInProcess } from './helpers/cli-in-process.ts'

const BIN = join(import.meta.dirname, '..', 'bin', 'strata.ts')
const SIGNAL = join(import.meta.dirname, 'helpers', 'stdout-drain-signal.mjs')
const SCHEMA = { fields: [{ name: 'id', type: 'BIGINT' }, { name: 'payload', type: 'STRING' }], primaryKeys: ['id'], options: { bucket: '2' } }
// 4000 rows of ~330 bytes as JSON: ~1.3 MB of output, far more than a pipe (64 KiB), the
// reader's socket buffer and what strata may hold pending together
const BIG = 4000
const PAYLOAD = 'p'.repeat(300)
// what strata may hold in stdout's buffer while it waits: its high-water mark plus one piece
const PENDING_BOUND = 256 * 1024

let dir = ''
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'strata-delivery-'))
})
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** A table with a small first snapshot (ids 1..10) and a big second one (ids 1001..1000+BIG). */
async function makeTable(name: string): Promise<string> {
  const uri = join(dir, name)
  const table = await Table.create(uri, SCHEMA)
  const rows = (from: number, n: number) => Array.from({ length: n }, (_, i) => recordFromJson(table.view, { id: from + i, payload: PAYLOAD }, `row ${i}`))
  await writeBatch(table, rows(1, 10))
  await writeBatch(table, rows(1001, BIG))
  return uri
}

function consumerNext(uri: string, id: string): number | null {
  const file = join(uri, consumerKey(id))
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { nextSnapshot: number }).nextSnapshot : null
}

/** `strata …` in a child process, its stdout left unread until the test reads it. */
class Child {
  readonly child: ChildProcess
  stderr = ''
  /** every "waiting for drain" the child announced: bytes pending in its stdout then */
  readonly pending: number[] = []
  readonly exited: Promise<number | null>
  private readonly watchers = new Set<(line: string) => void>()

  constructor(args: string[], stdout: 'pipe' | number = 'pipe') {
    this.child = spawn(process.execPath, ['--import', 'tsx', '--import', SIGNAL, BIN, ...args], { stdio: ['ignore', stdout, 'pipe'] })
    let partial = ''
    this.child.stderr!.setEncoding('utf8').on('data', (s: string) => {
      this.stderr += s
      const lines = (partial + s).split('\n')
      partial = lines.pop()!
      for (const line of lines) {
        const m = /^strata-test: waiting for drain, (\d+) bytes pending$/.exec(line)
        if (m) this.pending.push(Number(m[1]))
        for (const w of this.watchers) w(line)
      }
    })
    this.exited = new Promise((resolve) => this.child.on('close', (code) => resolve(code)))
  }

  /** The name of the first pattern a stderr line matches from now on, or 'exit' if the child exits first. */
  firstOf(patterns: Record<string, RegExp>): Promise<string> {
    return new Promise((resolve) => {
      const watch = (line: string) => {
        const hit = Object.keys(patterns).find((k) => patterns[k].test(line))
        if (hit) done(hit)
      }
      const onExit = () => done('exit')
      const done = (what: string) => {
        this.watchers.delete(watch)
        this.child.off('exit', onExit)
        resolve(what)
      }
      this.watchers.add(watch)
      this.child.on('exit', onExit)
    })
  }

  /** Reads stdout to its end. */
  async readAll(): Promise<string> {
    const chunks: Buffer[] = []
    for await (const c of this.child.stdout!) chunks.push(c as Buffer)
    return Buffer.concat(chunks).toString('utf8')
  }
}

const ids = (out: string) => out.trim().split('\n').filter((l) => l !== '').map((l) => (JSON.parse(l) as { id: number }).id)
const range = (from: number, n: number) => Array.from({ length: n }, (_, i) => from + i)

describe('read --consumer-id delivers before it records progress', () => {
  it('a reader that closes the pipe early: strata exits non-zero, names the broken pipe, and the consumer stays where it was', async () => {
    const uri = await makeTable('closed')
    // the consumer has read snapshot 1: its next snapshot is 2
    // (in-process: only the reader that goes away below needs a pipe)
    const first = await strataInProcess(['read', uri, '--consumer-id', 'c', '--from-snapshot', '0', '--to-snapshot', '1', '--json'])
    expect(ids(first.stdout).sort((a, b) => a - b)).toEqual(range(1, 10))
    expect(first.code).toBe(0)
    expect(consumerNext(uri, 'c')).toBe(2)

    const reader = new Child(['read', uri, '--consumer-id', 'c', '--json'])
    // one chunk, then the reader goes away
    await new Promise((resolve) => reader.child.stdout!.once('data', resolve))
    reader.child.stdout!.destroy()
    const code = await reader.exited
    expect(code, reader.stderr).not.toBe(0)
    expect(reader.stderr).toMatch(/^strata: read: output closed after \d+ rows \(EPIPE\); consumer "c" not advanced \(its next snapshot stays 2\)$/m)
    expect(consumerNext(uri, 'c')).toBe(2)

    // the next read gets the whole range again, then records it
    const again = await strataInProcess(['read', uri, '--consumer-id', 'c', '--json'])
    expect(ids(again.stdout).sort((a, b) => a - b)).toEqual(range(1001, BIG))
    expect(again.code).toBe(0)
    expect(consumerNext(uri, 'c')).toBe(3)
  }, 60_000)

  it('a first read whose reader goes away records no progress at all', async () => {
    const uri = await makeTable('closed-first')
    const reader = new Child(['read', uri, '--consumer-id', 'fresh', '--from-snapshot', '0', '--json'])
    await new Promise((resolve) => reader.child.stdout!.once('data', resolve))
    reader.child.stdout!.destroy()
    expect(await reader.exited).not.toBe(0)
    expect(reader.stderr).toMatch(/output closed after \d+ rows \(EPIPE\); consumer "fresh" not advanced \(it has no progress recorded\)/)
    expect(consumerNext(uri, 'fresh')).toBeNull()
  }, 60_000)

  it('a paused reader holds strata back with bounded output pending and nothing recorded; reading on delivers every row, then progress', async () => {
    const uri = await makeTable('paused')
    const reader = new Child(['read', uri, '--consumer-id', 'slow', '--from-snapshot', '0', '--json'])
    // stdout is not read yet: strata must wait for it to drain before it can finish
    const first = await reader.firstOf({ waiting: /^strata-test: waiting for drain/, recorded: /consumer "slow" next snapshot/ })
    expect(first, reader.stderr).toBe('waiting')
    expect(reader.child.exitCode).toBeNull()
    expect(consumerNext(uri, 'slow')).toBeNull()
    // the reader reads on
    const out = await reader.readAll()
    expect(await reader.exited, reader.stderr).toBe(0)
    expect(ids(out).sort((a, b) => a - b)).toEqual([...range(1, 10), ...range(1001, BIG)])
    expect(Buffer.byteLength(out)).toBeGreaterThan(4 * PENDING_BOUND)
    expect(consumerNext(uri, 'slow')).toBe(3)
    expect(reader.stderr).toContain('consumer "slow" next snapshot 3')
    // every time strata waited, what it held pending was bounded
    expect(reader.pending.length).toBeGreaterThan(0)
    expect(Math.max(...reader.pending)).toBeLessThanOrEqual(PENDING_BOUND)
  }, 60_000)

  it('a plain read waits for a paused reader too, and still ends quietly when its reader stops early', async () => {
    const uri = await makeTable('plain')
    const paused = new Child(['read', uri, '--json'])
    expect(await paused.firstOf({ waiting: /^strata-test: waiting for drain/ })).toBe('waiting')
    expect(ids(await paused.readAll())).toHaveLength(10 + BIG)
    expect(await paused.exited).toBe(0)
    expect(Math.max(...paused.pending)).toBeLessThanOrEqual(PENDING_BOUND)
    // `strata read … | head`: no consumer to keep honest, so a closed pipe is the end of it
    for (const args of [['--json'], ['--from-snapshot', '0']]) {
      const head = new Child(['read', uri, ...args])
      await new Promise((resolve) => head.child.stdout!.once('data', resolve))
      head.child.stdout!.destroy()
      expect(await head.exited, head.stderr).toBe(0)
      expect(head.stderr.replace(/^strata-test: .*\n/gm, '')).toBe('')
    }
  }, 60_000)

  it('any other stdout error fails the read and records nothing', async () => {
    const uri = await makeTable('bad-fd')
    const ro = join(dir, 'read-only-output')
    writeFileSync(ro, '')
    // stdout opened for reading only: every write fails (EBADF)
    const fd = openSync(ro, 'r')
    try {
      const reader = new Child(['read', uri, '--consumer-id', 'c', '--from-snapshot', '0', '--json'], fd)
      expect(await reader.exited).not.toBe(0)
      expect(reader.stderr).toMatch(/^strata: read: output failed after 0 rows \(EBADF\b.*\); consumer "c" not advanced/m)
      expect(consumerNext(uri, 'c')).toBeNull()
    } finally {
      closeSync(fd)
    }
  }, 60_000)
})

describe('garbled consumer files', () => {
  const GARBLED: [string, string][] = [
    ['{\n  "nextSnapshot" : 0\n}', 'is 0'],
    ['{"nextSnapshot": -3}', 'is -3'],
    ['{"nextSnapshot": 1.5}', 'is 1.5'],
    ['{"nextSnapshot": 2e0}', 'is 2e0'],
    ['{"nextSnapshot": "7"}', 'is "7"'],
    ['{"nextSnapshot": null}', 'is null'],
    ['{"nextSnapshot": 99999999999999999999}', 'is 99999999999999999999'],
    ['{"next": 4}', 'is missing'],
    ['[4]', 'expected a JSON object'],
    ['', 'not a consumer file'],
    ['nextSnapshot=4', 'not a consumer file'],
  ]

  it('parseConsumer takes an integer >= 1 and refuses anything else, naming the file', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: Number.MAX_SAFE_INTEGER }), (n) => parseConsumer(`{"nextSnapshot" : ${n}}`, 'f') === n),
    )
    fc.assert(
      fc.property(fc.jsonValue().filter((v) => !(Number.isSafeInteger(v) && (v as number) >= 1)), (v) => {
        expect(() => parseConsumer(JSON.stringify({ nextSnapshot: v }), 't/consumer/consumer-x')).toThrow(StrataInputError)
        expect(() => parseConsumer(JSON.stringify({ nextSnapshot: v }), 't/consumer/consumer-x')).toThrow(/^t\/consumer\/consumer-x: field "nextSnapshot" is .*, expected an integer >= 1/)
      }),
    )
  })

  it('a read from the consumer is refused naming the file, the field, the value and what was expected', async () => {
    const uri = await makeTable('garbled-read')
    mkdirSync(join(uri, 'consumer'), { recursive: true })
    for (const [text, what] of GARBLED) {
      writeFileSync(join(uri, consumerKey('c')), text)
      const r = await strataInProcess(['read', uri, '--consumer-id', 'c', '--from-snapshot', '0', '--json'])
      expect(r.code, text).toBe(2)
      expect(r.stdout).toBe('')
      expect(r.stderr).toContain(`${uri}/consumer/consumer-c: `)
      expect(r.stderr, text).toContain(what)
      if (what.startsWith('is ')) expect(r.stderr).toContain(`field "nextSnapshot" ${what}, expected an integer >= 1`)
    }
    // `consumer list` names the file; `consumer delete` still removes it
    let r = await strataInProcess(['consumer', 'list', uri])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain(`${uri}/consumer/consumer-c: `)
    r = await strataInProcess(['consumer', 'delete', uri, 'c'])
    expect(r.code, r.stderr).toBe(0)
    expect(existsSync(join(uri, consumerKey('c')))).toBe(false)
  })

  it('expiration refuses to run while a consumer file is garbled, and deletes nothing', async () => {
    const uri = await makeTable('garbled-expire')
    mkdirSync(join(uri, 'consumer'), { recursive: true })
    const table = await Table.open(uri)
    const write = async (id: number) => writeBatch(table, [recordFromJson(table.view, { id, payload: 'x' }, 'row')])
    for (let i = 0; i < 3; i++) await write(5000 + i)
    const snapshots = () => table.snapshots.latestId().then(async (latest) => ({ earliest: await table.snapshots.earliestId(), latest }))
    const before = await snapshots()
    for (const [text, what] of GARBLED) {
      writeFileSync(join(uri, consumerKey('c')), text)
      const e = await expireSnapshots(table, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0 }).then(() => null, (e: unknown) => e)
      expect(e, text).toBeInstanceOf(StrataInputError)
      expect((e as Error).message).toMatch(/^expire refused, nothing expired: /)
      expect((e as Error).message).toContain(`${uri}/consumer/consumer-c: `)
      expect((e as Error).message, text).toContain(what)
      expect(await snapshots()).toEqual(before)
    }
    const r = await strataInProcess(['expire', uri])
    expect(r.code).not.toBe(0)
    expect(r.stderr).toContain(`${uri}/consumer/consumer-c: `)
    // mended, expiration runs and keeps what the consumer needs
    writeFileSync(join(uri, consumerKey('c')), '{"nextSnapshot" : 3}')
    const done = await expireSnapshots(table, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0 })
    expect(done.earliest).toBe(3)
  })

  it('a garbled consumer idle past consumer.expiration-time is deleted as any idle consumer is (by its age, unread)', async () => {
    const uri = join(dir, 'garbled-idle')
    const table = await Table.create(uri, { ...SCHEMA, options: { ...SCHEMA.options, 'consumer.expiration-time': '1 d' } })
    for (let i = 0; i < 3; i++) await writeBatch(table, [recordFromJson(table.view, { id: i, payload: 'x' }, 'row')])
    mkdirSync(join(uri, 'consumer'), { recursive: true })
    writeFileSync(join(uri, consumerKey('old')), '{"nextSnapshot": 0}')
    const r = await expireSnapshots(table, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0, now: Date.now() + 2 * 86_400_000 })
    expect(r.earliest).toBe(3)
    expect(existsSync(join(uri, consumerKey('old')))).toBe(false)
  })
})
