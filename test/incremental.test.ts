// Incremental reads (lib/read/incremental.ts) and consumer progress (lib/handle/consumers.ts):
// a model-based property test of random writes, compactions and expirations followed by
// incremental reads between random retained snapshots, compared with the model's delta
// (per APPEND commit, per key, the commit's last record with its kind, raw and unmerged
// across commits, as Paimon's `incremental-between` delta mode returns them); consumer ids
// holding back expiration; the CLI flags; and the bad inputs, each refused naming its value.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { removeOrphanFiles } from '../lib/maintenance/orphans.ts'
import { consumerStart, planIncremental, readIncremental, recordConsumer } from '../lib/read/incremental.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import { checkConsumerId, consumerKey, getConsumer, listConsumers, parseConsumer, serializeConsumer, setConsumer } from '../lib/handle/consumers.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { strata } from './helpers/cli-in-process.ts'
import { type Op, opArb, schemaFor } from './helpers/model.ts'

const DAY = 86_400_000

/** A change as the model and the reader both print it: kind and row as JSON text. */
function changeText(kind: string, row: unknown[]): string {
  return JSON.stringify([kind, ...row.map((v) => (typeof v === 'bigint' ? `${v}n` : v))])
}

/** The model of a commit's delta: per key, the batch's last record (the writer merges a batch per key). */
function deltaOf(ops: Op[]): string[] {
  const last = new Map<string, Op>()
  for (const op of ops) last.set(`${op.dt}|${op.id}`, op)
  return [...last.values()].map((op) => changeText(op._kind, [op.dt, op.id, op.a, op.b, op.c === null ? null : BigInt(op.c)]))
}

async function write(table: Table, ops: Op[]): Promise<number> {
  return (await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))).snapshotId
}

async function changes(table: Table, from: number, to?: number, mode?: 'auto' | 'delta'): Promise<string[]> {
  return (await readIncremental(table, { fromSnapshot: from, toSnapshot: to, mode })).map((c) => changeText(ROW_KIND_SHORT[c.kind], c.row)).sort()
}

type Cmd = { t: 'write'; ops: Op[] } | { t: 'compact'; full: boolean } | { t: 'expire'; keep: number } | { t: 'consume'; id: 'c1' | 'c2' }

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 5, arbitrary: fc.array(opArb('deduplicate', 8), { minLength: 1, maxLength: 6 }).map((ops) => ({ t: 'write' as const, ops })) },
  { weight: 2, arbitrary: fc.boolean().map((full) => ({ t: 'compact' as const, full })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }).map((keep) => ({ t: 'expire' as const, keep })) },
  { weight: 2, arbitrary: fc.constantFrom('c1' as const, 'c2' as const).map((id) => ({ t: 'consume' as const, id })) },
)

describe('incremental reads against the model', () => {
  it('delta between random retained snapshots equals the model, after writes, compactions and expirations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmdArb, { minLength: 1, maxLength: 12 }), fc.boolean(), fc.nat(), fc.nat(), async (cmds, dv, r1, r2) => {
        const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { 'deletion-vectors.enabled': String(dv) }))
        // snapshot id → the model's changes (a COMPACT snapshot changes nothing)
        const delta = new Map<number, string[]>()
        // a consumer reads every change exactly once, whatever expiration does meanwhile
        const consumed = new Map<string, string[]>()
        const started = new Map<string, number>()
        for (const c of cmds) {
          const before = await table.snapshots.latestId()
          if (c.t === 'write') delta.set(await write(table, c.ops), deltaOf(c.ops))
          else if (c.t === 'compact') await compactTable(table, { full: c.full })
          else if (c.t === 'expire') await expireSnapshots(table, { numRetainedMin: c.keep, numRetainedMax: c.keep, timeRetainedMs: 0 })
          else {
            // the first read starts at what is retained
            const latestNow = await table.snapshots.latestId()
            const first = latestNow === 0 ? 0 : (await table.snapshots.earliestId()) - 1
            // until a read records progress, the consumer starts afresh
            if ((await getConsumer(table, c.id)) === null) started.set(c.id, first)
            const from = await consumerStart(table, c.id, first)
            const plan = await planIncremental(table, { fromSnapshot: from })
            const got = await changes(table, from, plan.to)
            consumed.set(c.id, [...(consumed.get(c.id) ?? []), ...got])
            await recordConsumer(table, c.id, plan)
          }
          const after = await table.snapshots.latestId()
          for (let id = before + 1; id <= after; id++) {
            if (!delta.has(id)) {
              expect((await table.snapshots.snapshot(id))!.commitKind).toBe('COMPACT')
              delta.set(id, [])
            }
          }
        }
        const latest = await table.snapshots.latestId()
        const earliest = latest === 0 ? 0 : await table.snapshots.earliestId()
        const lo = Math.max(0, earliest - 1)
        const a = lo + (r1 % (latest - lo + 1))
        const b = a + (r2 % (latest - a + 1))
        const want: string[] = []
        for (let id = a + 1; id <= b; id++) want.push(...delta.get(id)!)
        expect(await changes(table, a, b)).toEqual(want.sort())
        if (b === latest) expect(await changes(table, a, undefined, 'auto')).toEqual(want.sort())
        // expiration at its most eager still leaves every consumer its next range
        await expireSnapshots(table, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0 })
        for (const id of consumed.keys()) {
          if ((await getConsumer(table, id)) === null) continue
          const from = await consumerStart(table, id, undefined)
          const plan = await planIncremental(table, { fromSnapshot: from })
          consumed.get(id)!.push(...(await changes(table, from, plan.to)))
          await recordConsumer(table, id, plan)
        }
        for (const [id, got] of consumed) {
          const next = (await getConsumer(table, id))!
          const want: string[] = []
          for (let s = started.get(id)! + 1; s < next; s++) want.push(...(delta.get(s) ?? []))
          expect(got.sort(), `consumer ${id} up to ${next - 1}`).toEqual(want.sort())
        }
        // a range starting before what expiration kept is refused, naming the value
        if (earliest > 1) await expect(changes(table, earliest - 2)).rejects.toThrow(`--from-snapshot ${earliest - 2}: snapshot ${earliest - 1}, the first of the range, has expired`)
      }),
      { numRuns: 60, seed: 19 },
    )
  })

  it('returns every commit of a key raw, deletes as -D, and skips COMPACT snapshots', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate'))
    const row = (kind: Op['_kind'], id: number, a: number): Op => ({ _kind: kind, dt: '2024-05-01', id, a, b: null, c: null })
    const s1 = await write(table, [row('+I', 1, 10), row('+I', 2, 20)])
    const s2 = await write(table, [row('+U', 1, 11), row('+I', 1, 12)])
    await compactTable(table, { full: true })
    const compacted = await table.snapshots.latestId()
    expect(compacted).toBeGreaterThan(s2)
    expect((await table.snapshots.snapshot(compacted))!.commitKind).toBe('COMPACT')
    await write(table, [row('-D', 2, 20)])
    expect(await changes(table, s1)).toEqual(
      [changeText('+I', ['2024-05-01', 1, 12, null, null]), changeText('-D', ['2024-05-01', 2, 20, null, null])].sort(),
    )
    expect(await changes(table, s2, compacted)).toEqual([])
    expect(await changes(table, 0, s1)).toHaveLength(2)
    // from == to: an empty range, as Paimon
    expect(await changes(table, s2, s2)).toEqual([])
  })
})

describe('bad input', () => {
  it('refuses each bad range or mode naming the value, and records no consumer progress', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate'))
    const op: Op = { _kind: '+I', dt: '2024-05-01', id: 1, a: 1, b: null, c: null }
    for (let i = 0; i < 5; i++) await write(table, [op])
    await expireSnapshots(table, { numRetainedMin: 2, numRetainedMax: 2, timeRetainedMs: 0 })
    expect(await table.snapshots.earliestId()).toBe(4)
    const plan = (o: Parameters<typeof planIncremental>[1]) => planIncremental(table, o)
    await expect(plan({ fromSnapshot: 2 })).rejects.toThrow('--from-snapshot 2: snapshot 3, the first of the range, has expired (retained snapshots: 4..5); expected --from-snapshot >= 3')
    await expect(plan({ fromSnapshot: 3, toSnapshot: 9 })).rejects.toThrow('--to-snapshot 9: no such snapshot (retained snapshots: 4..5)')
    await expect(plan({ fromSnapshot: 5, toSnapshot: 4 })).rejects.toThrow('--from-snapshot 5 is after --to-snapshot 4: expected --from-snapshot <= --to-snapshot')
    await expect(plan({ fromSnapshot: 7 })).rejects.toThrow('--from-snapshot 7 is after the latest snapshot 5')
    await expect(plan({ fromSnapshot: -1 })).rejects.toThrow('--from-snapshot -1: expected a snapshot id >= 0')
    await expect(plan({ fromSnapshot: 3, mode: 'changelog' })).rejects.toThrow("--mode changelog: table memory://anonymous has changelog-producer 'none'")
    await expect(plan({ fromSnapshot: 3, mode: 'diff' as 'auto' })).rejects.toThrow('--mode "diff": expected one of auto, delta, changelog')
    for (const bad of ['', ' ', 'a/b', 'x\u0001', 'x'.repeat(300)]) expect(() => checkConsumerId(bad)).toThrow(StrataInputError)
    await expect(consumerStart(table, 'fresh', undefined)).rejects.toThrow('--consumer-id "fresh": the consumer has no progress recorded')
    expect(await listConsumers(table)).toEqual([])
    await expect(plan({ fromSnapshot: 3, mode: 'changelog' })).rejects.toThrow(StrataInputError)
  })
})

describe('consumer ids', () => {
  it('writes and reads Paimon\'s consumer file', () => {
    expect(serializeConsumer(7)).toBe('{\n  "nextSnapshot" : 7\n}')
    expect(parseConsumer('{"nextSnapshot":12,"other":true}', 'x')).toBe(12)
    expect(() => parseConsumer('{"next":1}', 'x')).toThrow('"nextSnapshot" is missing')
  })

  it('progress moves to B+1, and expiration keeps every snapshot from the smallest next snapshot', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate'))
    const op = (id: number): Op => ({ _kind: '+I', dt: '2024-05-01', id, a: id, b: null, c: null })
    for (let i = 1; i <= 3; i++) await write(table, [op(i)])
    // first read: --from-snapshot; then progress
    let from = await consumerStart(table, 'etl', 0)
    let p = await planIncremental(table, { fromSnapshot: from })
    expect(p.to).toBe(3)
    expect(await recordConsumer(table, 'etl', p)).toBe(4)
    expect(await getConsumer(table, 'etl')).toBe(4)
    for (let i = 4; i <= 8; i++) await write(table, [op(i)])
    await setConsumer(table, 'slow', 2)
    // the slow consumer's next snapshot 2 holds everything from 2 on
    let r = await expireSnapshots(table, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0 })
    expect(r.earliest).toBe(2)
    expect(await changes(table, await consumerStart(table, 'slow', undefined))).toHaveLength(7)
    await setConsumer(table, 'slow', 6)
    r = await expireSnapshots(table, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0 })
    // etl's next is 4: snapshots 4.. stay, and etl reads exactly what it has not read
    expect(r.earliest).toBe(4)
    from = await consumerStart(table, 'etl', 0)
    expect(from).toBe(3)
    p = await planIncremental(table, { fromSnapshot: from })
    expect((await changes(table, from)).length).toBe(5)
    await recordConsumer(table, 'etl', p)
    expect(await getConsumer(table, 'etl')).toBe(9)
    r = await expireSnapshots(table, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0 })
    expect(r.earliest).toBe(6)
  })

  it('consumer.expiration-time deletes idle consumers so they stop holding snapshots; orphan cleanup keeps consumer files', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strata-consumer-'))
    try {
      const table = await Table.create(new LocalFileStore(dir), schemaFor('deduplicate', { 'consumer.expiration-time': '1 d' }))
      for (let i = 1; i <= 4; i++) await write(table, [{ _kind: '+I', dt: '2024-05-01', id: i, a: i, b: null, c: null }])
      await setConsumer(table, 'idle', 1)
      // not idle yet: holds snapshot 1
      let r = await expireSnapshots(table, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0 })
      expect(r.expired).toEqual([])
      await removeOrphanFiles(table, { olderThanMs: 2 * DAY, now: Date.now() + 3 * DAY })
      expect(await table.store.head(consumerKey('idle'))).not.toBeNull()
      // two days later the consumer is past its expiration time: deleted, and expiration proceeds
      r = await expireSnapshots(table, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0, now: Date.now() + 2 * DAY })
      expect(r.earliest).toBe(4)
      expect(await getConsumer(table, 'idle')).toBeNull()
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('strata read --from-snapshot / --consumer-id', () => {
  let dir = ''
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'strata-inc-cli-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('prints each change with its _kind, records consumer progress, and refuses bad flags with nothing printed', async () => {
    const uri = join(dir, 't')
    const table = await Table.create(uri, schemaFor('deduplicate'))
    await write(table, [{ _kind: '+I', dt: '2024-05-01', id: 1, a: 1, b: 'x', c: null }])
    await write(table, [{ _kind: '-D', dt: '2024-05-01', id: 1, a: 1, b: 'x', c: null }, { _kind: '+I', dt: '2024-05-02', id: 2, a: 2, b: null, c: 5 }])
    let r = await strata(['read', uri, '--from-snapshot', '1', '--json'])
    expect(r.code).toBe(0)
    expect(r.stdout.trim().split('\n').sort()).toEqual(['{"_kind":"+I","dt":"2024-05-02","id":2,"a":2,"b":null,"c":5}', '{"_kind":"-D","dt":"2024-05-01","id":1,"a":1,"b":"x","c":null}'])
    r = await strata(['read', uri, '--from-snapshot', '0', '--to-snapshot', '1', '--columns', 'id,b', '--mode', 'delta'])
    expect(r.stdout).toBe('_kind\tid\tb\n+I\t1\tx\n')
    // a consumer: first read from --from-snapshot, then from its progress
    r = await strata(['read', uri, '--consumer-id', 'job-1', '--from-snapshot', '1', '--json'])
    expect(r.stdout.trim().split('\n')).toHaveLength(2)
    expect(r.stderr).toContain('consumer "job-1" next snapshot 3')
    expect(await getConsumer(table, 'job-1')).toBe(3)
    r = await strata(['read', uri, '--consumer-id', 'job-1', '--json'])
    expect(r.code).toBe(0)
    expect(r.stdout).toBe('')
    await write(table, [{ _kind: '+U', dt: '2024-05-02', id: 2, a: 3, b: null, c: 5 }])
    r = await strata(['read', uri, '--consumer-id', 'job-1', '--json'])
    expect(r.stdout).toBe('{"_kind":"+U","dt":"2024-05-02","id":2,"a":3,"b":null,"c":5}\n')
    expect(await getConsumer(table, 'job-1')).toBe(4)
    for (const [args, msg] of [
      [['--from-snapshot', 'x'], '--from-snapshot: expected a snapshot id >= 0, got "x"'],
      [['--from-snapshot', '1', '--snapshot', '2'], '--from-snapshot with --snapshot: expected one of them'],
      [['--to-snapshot', '2'], '--to-snapshot: only with --from-snapshot or --consumer-id'],
      [['--from-snapshot', '1', '--mode', 'diff'], '--mode "diff": expected one of auto, delta, changelog'],
      [['--from-snapshot', '1', '--mode', 'changelog'], "--mode changelog: table"],
      [['--from-snapshot', '3', '--to-snapshot', '2'], '--from-snapshot 3 is after --to-snapshot 2'],
      [['--consumer-id', 'new-one'], '--consumer-id "new-one": the consumer has no progress recorded'],
      [['--consumer-id', 'a/b', '--from-snapshot', '0'], `--consumer-id "a/b": expected no '/'`],
      [['--consumer-id', 'job-1', '--to-snapshot', '2'], '--consumer-id "job-1" (its progress) from snapshot 3 is after --to-snapshot 2'],
    ] as [string[], string][]) {
      r = await strata(['read', uri, ...args])
      expect(r.code, args.join(' ')).not.toBe(0)
      expect(r.stderr).toContain(msg)
      expect(r.stdout).toBe('')
    }
    expect((await listConsumers(table)).map((c) => [c.id, c.nextSnapshot])).toEqual([['job-1', 4]])
    // list and delete
    r = await strata(['consumer', 'list', uri, '--json'])
    expect(JSON.parse(r.stdout)).toMatchObject({ id: 'job-1', nextSnapshot: 4 })
    r = await strata(['consumer', 'delete', uri, 'nope'])
    expect(r.code).not.toBe(0)
    expect(r.stderr).toContain('consumer id "nope": no such consumer')
    r = await strata(['consumer', 'delete', uri, 'job-1'])
    expect(r.stdout).toBe('deleted consumer "job-1"\n')
    expect(await listConsumers(table)).toEqual([])
  })
})
