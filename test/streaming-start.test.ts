// Streaming starts (lib/read/streaming-start.ts): Paimon's scan modes resolved from read and
// table options, the full state of a start merged with level 0 in, and a follower driven by
// steps (no clock). The property: a consumer that starts at a random point while writes and
// compactions go on, then follows, is handed every key's latest state exactly once, for every
// merge engine, deletion vectors on and off, delta and lookup changelog.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { RefusedError, StrataInputError, NotFoundError } from '../lib/errors.ts'
import { Table } from '../lib/handle/table.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { readAll } from '../lib/read/table-read.ts'
import { type StreamStep, consumerProgressStart, earlierThanTimeMillis, locateStart, readStep, recordStep, resolveScan, streamSteps } from '../lib/read/streaming-start.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { ROW_KIND_SHORT, type Row } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type Engine, type Kind, type Op, TableModel, schemaFor } from './helpers/model.ts'

async function write(table: Table, ops: Op[]): Promise<void> {
  await writeBatch(table, ops.map((op, i) => recordFromJson(table.view, op, `op ${i}`)))
}

const op = (id: number, a: number, _kind: Kind = '+I', dt = '2024-05-01'): Op => ({ _kind, dt, id, a, b: `v${a}`, c: a })

/** Every row of a step, as `_kind` and the row's values (BIGINT as number). */
async function rowsOf(table: Table, step: StreamStep): Promise<{ kind: string; row: Row }[]> {
  const out: { kind: string; row: Row }[] = []
  for await (const batch of readStep(table, step)) for (const c of batch) out.push({ kind: ROW_KIND_SHORT[c.kind], row: c.row.map((v) => (typeof v === 'bigint' ? Number(v) : v)) })
  return out
}

const ids = (rows: { kind: string; row: Row }[]) => rows.map((r) => `${r.kind}${r.row[1]}:${r.row[2]}`).sort()

describe('scan modes', () => {
  it('resolves default as Paimon does: from-timestamp with a timestamp, from-snapshot with a snapshot id, else latest-full; full is latest-full', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate'))
    expect(resolveScan(table, {}).startupMode).toBe('latest-full')
    expect(resolveScan(table, { scanMode: 'full' }).startupMode).toBe('latest-full')
    expect(resolveScan(table, { scanSnapshotId: 3 }).startupMode).toBe('from-snapshot')
    expect(resolveScan(table, { scanTimestampMillis: 5 })).toMatchObject({ startupMode: 'from-timestamp', timestampMillis: 5 })
    expect(resolveScan(table, { scanMode: 'LATEST' }).startupMode).toBe('latest')
  })

  it('refuses what Paimon refuses, naming the input, and the modes Strata does not implement', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate'))
    expect(() => resolveScan(table, { scanMode: 'from-snapshot' })).toThrow(/--scan-mode from-snapshot: expected --scan-snapshot-id/)
    expect(() => resolveScan(table, { scanMode: 'from-timestamp' })).toThrow(/expected --scan-timestamp-millis/)
    expect(() => resolveScan(table, { scanMode: 'latest-full', scanSnapshotId: 2 })).toThrow(/--scan-snapshot-id: not with scan mode latest-full/)
    expect(() => resolveScan(table, { scanMode: 'from-snapshot', scanSnapshotId: 2, scanTimestampMillis: 1 })).toThrow(/--scan-timestamp-millis: not with scan mode from-snapshot/)
    expect(() => resolveScan(table, { scanMode: 'sideways' })).toThrow(StrataInputError)
    expect(() => resolveScan(table, { scanMode: 'sideways' })).toThrow(/--scan-mode "sideways": expected one of default, latest-full/)
    expect(() => resolveScan(table, { scanMode: 'compacted-full' })).toThrow(RefusedError)
    expect(() => resolveScan(table, { scanSnapshotId: 0 })).toThrow(/--scan-snapshot-id 0: expected an integer >= 1/)
    expect(() => resolveScan(table, { mode: 'changelog' })).toThrow(/--mode changelog: the table has changelog-producer 'none'/)
  })

  it('reads scan.mode, scan.snapshot-id and scan.timestamp-millis from the table options too, the read options over them', async () => {
    const store = new MemoryStore()
    const created = await Table.create(store, schemaFor('deduplicate'))
    // Strata's create does not take scan.* options; Paimon's ALTER TABLE … SET does: put them in a schema as Paimon would
    const view = { ...created.view, options: { ...created.view.options, raw: { ...created.view.options.raw, 'scan.mode': 'from-snapshot', 'scan.snapshot-id': '4' } } }
    const table = { view }
    expect(resolveScan(table, {})).toMatchObject({ startupMode: 'from-snapshot', snapshotId: 4 })
    expect(resolveScan(table, { scanSnapshotId: 2 })).toMatchObject({ startupMode: 'from-snapshot', snapshotId: 2 })
    expect(() => resolveScan(table, { scanMode: 'latest' })).toThrow(/table option 'scan.snapshot-id': not with scan mode latest/)
    const tagged = { view: { ...view, options: { ...view.options, raw: { ...view.options.raw, 'scan.tag-name': 't1' } } } }
    expect(() => resolveScan(tagged, {})).toThrow(/table option 'scan.tag-name' "t1": Strata's streaming reads do not implement it/)
  })

  it('from-timestamp starts at the earliest snapshot whose time is at or after the timestamp', async () => {
    const times = [100, 200, 200, 300, 450]
    const snapshots = { latestId: async () => times.length, earliestId: async () => 1, snapshot: async (id: number) => ({ id, timeMillis: times[id - 1] }) as never }
    const table = { snapshots } as never
    const cases: [number, number][] = [[0, 0], [100, 0], [101, 1], [200, 1], [201, 3], [300, 3], [449, 4], [450, 4], [451, 5], [10_000, 5]]
    for (const [ts, before] of cases) expect([ts, await earlierThanTimeMillis(table, ts)]).toEqual([ts, before])
    const start = await locateStart(table, { startupMode: 'from-timestamp', snapshotId: null, timestampMillis: 201, mode: 'delta' })
    expect(start).toEqual({ startupMode: 'from-timestamp', fullSnapshot: null, nextSnapshot: 4, mode: 'delta' })
    expect(await earlierThanTimeMillis({ snapshots: { ...snapshots, latestId: async () => 0 } } as never, 5)).toBeNull()
  })
})

describe('the full state of a start', () => {
  it('on a deletion-vector table merges level 0 in, so a start at N and its changes after N miss nothing (a batch read of N plus the changes after it does)', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { 'deletion-vectors.enabled': 'true' }))
    await write(table, [op(1, 1), op(2, 2)])
    await compactTable(table, { full: true })
    await write(table, [op(2, 20), op(3, 3)]) // waits in level 0 at the start
    const scan = resolveScan(table, { scanMode: 'latest-full' })
    const [step] = await collect(streamSteps(table, scan))
    expect(step).toMatchObject({ fullSnapshot: 3, from: 3, to: 3, nextSnapshot: 4 })
    expect(ids(await rowsOf(table, step))).toEqual(['+I1:1', '+I2:20', '+I3:3'])
    // what a batch read of snapshot 3 shows: level 0 skipped
    expect((await readAll(table, { snapshotId: 3 })).map((r) => r[2])).toEqual([1, 2])
    await write(table, [op(4, 4)])
    const [next] = await collect(streamSteps(table, scan, { start: { ...step, startupMode: 'latest-full', fullSnapshot: null, nextSnapshot: 4 } as never }))
    expect(ids(await rowsOf(table, next))).toEqual(['+I4:4'])
  })

  it('a first-row table keeps each key\'s first row, level 0 included', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('first-row'))
    await write(table, [op(1, 1)])
    await compactTable(table, { full: true })
    await write(table, [op(1, 10), op(2, 2)])
    const [step] = await collect(streamSteps(table, resolveScan(table, {})))
    expect(ids(await rowsOf(table, step))).toEqual(['+I1:1', '+I2:2'])
  })

  it('with a lookup changelog producer leaves level 0 to the changelog its compaction writes (Paimon\'s first plan filters level > 0)', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { 'changelog-producer': 'lookup' }))
    await write(table, [op(1, 1)])
    await compactTable(table, { full: true })
    await write(table, [op(1, 10), op(2, 2)])
    const scan = resolveScan(table, {})
    const [step] = await collect(streamSteps(table, scan))
    expect(step.mode).toBe('changelog')
    expect(ids(await rowsOf(table, step))).toEqual(['+I1:1'])
    await compactTable(table)
    const [next] = await collect(streamSteps(table, scan, { start: { startupMode: 'latest-full', fullSnapshot: null, nextSnapshot: step.nextSnapshot!, mode: 'changelog' } }))
    expect(ids(await rowsOf(table, next))).toEqual(['+I2:2', '+U1:10', '-U1:1'])
    // read as delta, the same table's start merges level 0 in
    const [delta] = await collect(streamSteps(table, resolveScan(table, { mode: 'delta', scanMode: 'from-snapshot-full', scanSnapshotId: 3 })))
    expect(ids(await rowsOf(table, delta))).toEqual(['+I1:10', '+I2:2'])
  })
})

describe('starts against the snapshots', () => {
  it('latest, from-snapshot and from-snapshot-full: where each starts, an expired snapshot raised to the earliest, a missing one refused', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { 'snapshot.num-retained.min': '1', 'snapshot.num-retained.max': '2' }))
    const latest = resolveScan(table, { scanMode: 'latest' })
    expect(await locateStart(table, latest)).toMatchObject({ fullSnapshot: null, nextSnapshot: 1 })
    expect(await locateStart(table, resolveScan(table, {}))).toBeNull()
    for (let i = 1; i <= 4; i++) await write(table, [op(i, i)])
    expect(await locateStart(table, latest)).toMatchObject({ fullSnapshot: null, nextSnapshot: 5 })
    expect(await locateStart(table, resolveScan(table, { scanSnapshotId: 2 }))).toMatchObject({ fullSnapshot: null, nextSnapshot: 2 })
    expect(await locateStart(table, resolveScan(table, { scanMode: 'from-snapshot-full', scanSnapshotId: 2 }))).toMatchObject({ fullSnapshot: 2, nextSnapshot: 3 })
    await expect(locateStart(table, resolveScan(table, { scanMode: 'from-snapshot-full', scanSnapshotId: 9 }))).rejects.toThrow(NotFoundError)
    const { expireSnapshots } = await import('../lib/maintenance/expire.ts')
    await expireSnapshots(table, { now: Date.now() + 3_600_000 * 2 })
    const earliest = await table.snapshots.earliestId()
    expect(earliest).toBeGreaterThan(2)
    expect(await locateStart(table, resolveScan(table, { scanMode: 'from-snapshot-full', scanSnapshotId: 1 }))).toMatchObject({ fullSnapshot: earliest })
    expect(await locateStart(table, resolveScan(table, { scanSnapshotId: 1 }))).toMatchObject({ nextSnapshot: earliest })
  })

  it('a follower on an empty table starts once the first snapshot lands, and ends when its wait says so', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate'))
    const scan = resolveScan(table, {})
    let polls = 0
    const plan = [async () => write(table, [op(1, 1)]), async () => {}, async () => write(table, [op(2, 2)])]
    const seen: string[][] = []
    for await (const step of streamSteps(table, scan, { waitForSnapshot: async () => (polls < plan.length ? (await plan[polls++](), true) : false) })) {
      seen.push([`full ${step.fullSnapshot} (${step.from}, ${step.to}]`, ...ids(await rowsOf(table, step))])
    }
    expect(seen).toEqual([
      ['full 1 (1, 1]', '+I1:1'],
      ['full null (1, 2]', '+I2:2'],
    ])
    expect(polls).toBe(3)
  })

  it('a consumer records where its start got to, and continues after it with changes only', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { 'deletion-vectors.enabled': 'true' }))
    await write(table, [op(1, 1)])
    const scan = resolveScan(table, {})
    expect(await consumerProgressStart(table, 'c', scan, false)).toBeUndefined()
    const [step] = await collect(streamSteps(table, scan))
    expect(await recordStep(table, 'c', step)).toBe(2)
    await write(table, [op(2, 2)])
    const start = await consumerProgressStart(table, 'c', scan, false)
    expect(start).toEqual({ startupMode: 'latest-full', fullSnapshot: null, nextSnapshot: 2, mode: 'delta' })
    const [next] = await collect(streamSteps(table, scan, { start }))
    expect(ids(await rowsOf(table, next))).toEqual(['+I2:2'])
    expect(await consumerProgressStart(table, 'c', scan, true)).toBeUndefined()
    expect(await recordStep(table, 'c', { fullSnapshot: null, from: 0, to: 0, mode: 'delta', nextSnapshot: null, plan: null })).toBeNull()
  })
})

async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = []
  for await (const x of it) out.push(x)
  return out
}

// ---- the property ----------------------------------------------------------------------

type Action = { kind: 'write'; ops: { id: number; kind: Kind }[] } | { kind: 'compact'; full: boolean } | { kind: 'start' } | { kind: 'poll' }

const CONFIGS: { engine: Engine; options: Record<string, string>; name: string }[] = [
  { engine: 'deduplicate', options: {}, name: 'deduplicate' },
  { engine: 'deduplicate', options: { 'deletion-vectors.enabled': 'true' }, name: 'deduplicate, deletion vectors' },
  { engine: 'deduplicate', options: { 'changelog-producer': 'lookup' }, name: 'deduplicate, lookup changelog' },
  { engine: 'partial-update', options: { 'deletion-vectors.enabled': 'true' }, name: 'partial-update, deletion vectors' },
  { engine: 'partial-update', options: { 'changelog-producer': 'lookup', 'deletion-vectors.enabled': 'true' }, name: 'partial-update, lookup changelog, deletion vectors' },
  { engine: 'aggregation', options: { 'deletion-vectors.enabled': 'true' }, name: 'aggregation, deletion vectors' },
  { engine: 'aggregation', options: { 'changelog-producer': 'lookup' }, name: 'aggregation, lookup changelog' },
  { engine: 'first-row', options: {}, name: 'first-row' },
  { engine: 'first-row', options: { 'changelog-producer': 'lookup' }, name: 'first-row, lookup changelog' },
]

function actionArb(engine: Engine): fc.Arbitrary<Action> {
  const kinds: Kind[] = engine === 'deduplicate' ? ['+I', '+I', '+U', '-D'] : engine === 'first-row' ? ['+I'] : ['+I', '+I', '-D']
  const write = fc.uniqueArray(fc.record({ id: fc.integer({ min: 0, max: 7 }), kind: fc.constantFrom(...kinds) }), { minLength: 1, maxLength: 5, selector: (o) => o.id }).map((ops) => ({ kind: 'write' as const, ops }))
  return fc.oneof(
    { weight: 5, arbitrary: write },
    { weight: 2, arbitrary: fc.boolean().map((full) => ({ kind: 'compact' as const, full })) },
    { weight: 2, arbitrary: fc.constant({ kind: 'poll' as const }) },
    { weight: 1, arbitrary: fc.constant({ kind: 'start' as const }) },
  )
}

/**
 * What the consumer holds. Delta rows (and a delta read's full state) are folded with the
 * engine's rule (the model's); a changelog (and its read's full state, as +I) is applied
 * strictly: +I only for an absent key, -U/-D only of the row held, +U only after its -U.
 * Every written value is unique, so a delta row delivered twice shows as a (key, value) seen
 * twice, and a changelog row twice as a strict step that does not apply.
 */
class Consumer {
  readonly model: TableModel
  readonly held = new Map<string, string>()
  readonly seen = new Set<string>()
  private pendingUpdate: string | null = null
  constructor(engine: Engine) {
    this.model = new TableModel(engine)
  }

  take(kind: string, row: Row, mode: 'delta' | 'changelog', full: boolean): void {
    const [dt, id, a, b, c] = row as [string, number, number | null, string | null, number | null]
    const key = `${dt}|${id}`
    const text = JSON.stringify([a, b, c])
    if (full) expect(kind === '+I' || kind === '+U', `full state row ${kind}`).toBe(true)
    if (mode === 'delta') {
      if (kind === '+I' || kind === '+U') {
        expect(this.seen.has(`${key}=${text}`), `${key} ${text} delivered twice`).toBe(false)
        this.seen.add(`${key}=${text}`)
      }
      this.model.applyBatch([{ _kind: kind as Kind, dt, id, a, b, c }])
      return
    }
    switch (full ? '+I' : kind) {
      case '+I':
        expect(this.held.has(key), `+I of ${key}, which the consumer holds`).toBe(false)
        this.held.set(key, text)
        break
      case '-U':
      case '-D':
        expect(this.held.get(key), `${kind} of ${key}`).toBe(text)
        this.held.delete(key)
        if (kind === '-U') this.pendingUpdate = key
        break
      case '+U':
        expect(this.pendingUpdate, `+U of ${key} without its -U`).toBe(key)
        this.pendingUpdate = null
        this.held.set(key, text)
        break
    }
  }

  /** Every row of a step: its full state, then its changes. */
  async deliver(table: Table, step: StreamStep): Promise<void> {
    const num = (r: Row) => r.map((v) => (typeof v === 'bigint' ? Number(v) : v))
    for await (const batch of readStep(table, { ...step, plan: null })) for (const ch of batch) this.take(ROW_KIND_SHORT[ch.kind], num(ch.row), step.mode, true)
    for await (const batch of readStep(table, { ...step, fullSnapshot: null })) for (const ch of batch) this.take(ROW_KIND_SHORT[ch.kind], num(ch.row), step.mode, false)
  }

  /** The state the consumer reached, as text per key. */
  state(mode: 'delta' | 'changelog'): Map<string, string> {
    if (mode === 'changelog') return new Map(this.held)
    return new Map([...this.model.rows.entries()].map(([k, r]) => [k, JSON.stringify([r.a, r.b, r.c])]))
  }
}

describe('a consumer that starts full while writes and compactions go on', () => {
  for (const cfg of CONFIGS) {
    it(`is handed every key's state exactly once: ${cfg.name}`, async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(actionArb(cfg.engine), { minLength: 3, maxLength: 12 }), fc.boolean(), async (actions, fromSnapshotFull) => {
          const table = await Table.create(new MemoryStore(), schemaFor(cfg.engine, cfg.options))
          const truth = new TableModel(cfg.engine)
          let counter = 0
          let consumer: Consumer | null = null
          const scan = resolveScan(table, {})
          // a poll: from the consumer's progress, or from the start again while it has none (an empty table)
          const poll = async (first: boolean) => {
            const latest = await table.snapshots.latestId()
            // the first start: from-snapshot-full at the latest snapshot, or latest-full, the same place
            const s = first && fromSnapshotFull && latest > 0 ? resolveScan(table, { scanMode: 'from-snapshot-full', scanSnapshotId: latest }) : scan
            const start = await consumerProgressStart(table, 'p', s, false)
            for await (const step of streamSteps(table, s, { start })) {
              await consumer!.deliver(table, step)
              await recordStep(table, 'p', step)
            }
          }
          for (const action of [...actions, { kind: 'start' as const }]) {
            if (action.kind === 'write') {
              const ops = action.ops.map((o) => {
                const a = ++counter
                // a -D of partial-update and aggregation carries only its key (test/helpers/model.ts opArb)
                const keyOnly = o.kind === '-D' && (cfg.engine === 'partial-update' || cfg.engine === 'aggregation')
                return { _kind: o.kind, dt: '2024-05-01', id: o.id, a: keyOnly ? null : a, b: keyOnly ? null : `v${a}`, c: keyOnly ? null : a } as Op
              })
              await write(table, ops)
              truth.applyBatch(ops)
            } else if (action.kind === 'compact') await compactTable(table, { full: action.full })
            else if (action.kind === 'poll') {
              if (consumer) await poll(false)
            } else if (!consumer) {
              consumer = new Consumer(cfg.engine)
              await poll(true)
            }
          }
          // the end: every level-0 file compacted (a lookup changelog is written then), and a last poll
          await compactTable(table, { full: true })
          await poll(false)
          const mode = scan.mode
          const want = new Map([...truth.rows.entries()].map(([k, r]) => [k, JSON.stringify([r.a, r.b, r.c])]))
          expect(consumer!.state(mode)).toEqual(want)
        }),
        { numRuns: 15 },
      )
    }, 60_000)
  }
})

describe('the library: changes with a scan mode, and stream', () => {
  it('a consumer that starts latest-full on a deletion-vector table gets the rows waiting in level 0, then continues after the start', async () => {
    const { createTable } = await import('../lib/api/warehouse.ts')
    const t = await createTable(`memory://lib-${Math.random()}`, schemaFor('deduplicate', { 'deletion-vectors.enabled': 'true' }), { wrapStore: () => new MemoryStore() })
    await t.write([{ dt: '2024-05-01', id: 1, a: 1 }])
    await t.compact({ full: true })
    await t.write([{ dt: '2024-05-01', id: 2, a: 2 }])
    const first = await t.changes({ scanMode: 'latest-full', consumerId: 'etl', columns: ['id', 'a'] })
    expect([first.fullSnapshot, first.from, first.to, first.mode]).toEqual([3, 3, 3, 'delta'])
    const got: unknown[] = []
    for await (const r of first) got.push(r)
    expect(got).toEqual([{ _kind: '+I', id: 1, a: 1 }, { _kind: '+I', id: 2, a: 2 }])
    expect(await first.commit()).toBe(4)
    // a batch read of the same snapshot does not show id 2 yet
    expect((await t.readAll({ snapshotId: 3 })).map((r) => r.id)).toEqual([1])
    await t.write([{ dt: '2024-05-01', id: 3, a: 3 }])
    const next = await t.changes({ scanMode: 'latest-full', consumerId: 'etl', columns: ['id', 'a'] })
    expect([next.fullSnapshot, next.from, next.to]).toEqual([null, 3, 4])
    const more: unknown[] = []
    for await (const r of next) more.push(r)
    expect(more).toEqual([{ _kind: '+I', id: 3, a: 3 }])
    await expect(t.changes({ fromSnapshot: 1, scanMode: 'latest' })).rejects.toThrow(/fromSnapshot 1 with a scan option/)
    await expect(t.changes({ scanMode: 'from-snapshot' })).rejects.toThrow(/scanMode from-snapshot: expected scanSnapshotId/)
    await expect(t.changes({})).rejects.toThrow(/changes: expected fromSnapshot, a scan mode \(scanMode\) or consumerId/)
  })

  it('stream follows the table step by step, each step committed', async () => {
    const { createTable } = await import('../lib/api/warehouse.ts')
    const t = await createTable(`memory://lib-${Math.random()}`, schemaFor('first-row'), { wrapStore: () => new MemoryStore() })
    await t.write([{ dt: '2024-05-01', id: 1, a: 1 }])
    const writes = [[{ dt: '2024-05-01', id: 1, a: 10 }, { dt: '2024-05-01', id: 2, a: 2 }], [{ dt: '2024-05-01', id: 3, a: 3 }]]
    const steps: string[] = []
    for await (const step of t.stream({ consumerId: 'f', columns: ['id', 'a'], waitForSnapshot: async () => (writes.length ? (await t.write(writes.shift()!), true) : false) })) {
      const rows: string[] = []
      for await (const r of step) rows.push(`${r._kind}${r.id}:${r.a}`)
      steps.push(`${step.fullSnapshot ?? '-'} (${step.from},${step.to}] ${rows.join(' ')}`)
      await step.commit()
    }
    expect(steps).toEqual(['1 (1,1] +I1:1', '- (1,2] +I1:10 +I2:2', '- (2,3] +I3:3'])
    expect(await t.listConsumers()).toMatchObject([{ id: 'f', nextSnapshot: 4 }])
  })
})

describe('the CLI: read --scan-mode, --follow', () => {
  /** `strata …` in-process with the follow seam, stdout and stderr captured. */
  async function cli(args: string[], waitForSnapshot?: (ms: number) => Promise<boolean>): Promise<{ code: number; stdout: string; stderr: string }> {
    const { vi } = await import('vitest')
    const { main } = await import('../lib/cli/main.ts')
    const stdout: string[] = []
    const stderr: string[] = []
    const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (stdout.push(String(chunk)), true))
    const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (stderr.push(String(chunk)), true))
    try {
      const code = await main(args, { waitForSnapshot })
      return { code, stdout: stdout.join(''), stderr: stderr.join('') }
    } finally {
      out.mockRestore()
      err.mockRestore()
    }
  }

  it('a consumer starting latest-full on a deletion-vector table gets the level-0 rows, and its next read continues after the start', async () => {
    const { mkdtempSync, rmSync } = await import('node:fs')
    const { tmpdir } = await import('node:os')
    const { join } = await import('node:path')
    const dir = mkdtempSync(join(tmpdir(), 'strata-stream-cli-'))
    try {
      const uri = join(dir, 't')
      const table = await Table.create(uri, schemaFor('deduplicate', { 'deletion-vectors.enabled': 'true' }))
      await write(table, [op(1, 1)])
      await compactTable(table, { full: true })
      await write(table, [op(2, 2)])
      let r = await cli(['read', uri, '--scan-mode', 'latest-full', '--consumer-id', 'c', '--columns', 'id,a', '--json'])
      expect(r.stdout).toBe('{"_kind":"+I","id":1,"a":1}\n{"_kind":"+I","id":2,"a":2}\n')
      expect(r.stderr).toContain('read the full state of snapshot 3 (delta); consumer "c" next snapshot 4')
      r = await cli(['read', uri, '--snapshot', '3', '--columns', 'id', '--format', 'tsv'])
      expect(r.stdout).toBe('id\n1\n')
      await write(table, [op(3, 3)])
      r = await cli(['read', uri, '--consumer-id', 'c', '--columns', 'id,a', '--json'])
      expect(r.stdout).toBe('{"_kind":"+I","id":3,"a":3}\n')
      // from-snapshot-full, bounded by --to-snapshot, tsv with one header
      r = await cli(['read', uri, '--scan-mode', 'from-snapshot-full', '--scan-snapshot-id', '2', '--to-snapshot', '4', '--columns', 'id', '--format', 'tsv'])
      expect(r.stdout.split('\n').sort()).toEqual(['', '+I\t1', '+I\t2', '+I\t3', '_kind\tid'])
      // --follow: the start, then each new snapshot's changes, waiting through the seam
      const waits: number[] = []
      const pending = [[op(4, 4)], [], [op(5, 5), op(1, 10, '+U')]]
      r = await cli(['read', uri, '--follow', '--discovery-interval', '250 ms', '--consumer-id', 'f', '--columns', 'id,a', '--format', 'tsv'], async (ms) => {
        waits.push(ms)
        const ops = pending.shift()
        if (ops === undefined) return false
        if (ops.length) await write(table, ops)
        return true
      })
      expect(r.code).toBe(0)
      // one header; the full state of snapshot 4 (rows by bucket), then snapshot 5's change, then snapshot 6's two
      const lines = r.stdout.split('\n')
      expect(lines[0]).toBe('_kind\tid\ta')
      expect([lines.slice(1, 4).sort(), lines[4], lines.slice(5, 7).sort(), lines.slice(7)]).toEqual([['+I\t1\t1', '+I\t2\t2', '+I\t3\t3'], '+I\t4\t4', ['+I\t5\t5', '+U\t1\t10'], ['']])
      expect(waits).toEqual([250, 250, 250, 250])
      expect(r.stderr.split('\n').filter((l) => l.startsWith('read'))).toEqual([
        'read the full state of snapshot 4 (delta); consumer "f" next snapshot 5',
        'read snapshots (4, 5] (delta); consumer "f" next snapshot 6',
        'read snapshots (5, 6] (delta); consumer "f" next snapshot 7',
      ])
      for (const [args, msg] of [
        [['--scan-mode', 'latest', '--from-snapshot', '1'], '--from-snapshot with --scan-mode: expected one of them'],
        [['--discovery-interval', '1 s'], '--discovery-interval: only with --follow'],
        [['--follow', '--to-snapshot', '2'], '--to-snapshot with --follow: expected one of them'],
        [['--scan-mode', 'sideways'], '--scan-mode "sideways": expected one of default, latest-full'],
        [['--scan-mode', 'from-snapshot'], '--scan-mode from-snapshot: expected --scan-snapshot-id'],
        [['--scan-timestamp-millis', 'soon'], '--scan-timestamp-millis: expected epoch milliseconds'],
        [['--scan-mode', 'latest', '--snapshot', '2'], '--scan-mode with --snapshot: expected one of them'],
        [['--consumer-id', 'new'], '--consumer-id "new": the consumer has no progress recorded'],
      ] as [string[], string][]) {
        r = await cli(['read', uri, ...args])
        expect(r.code, args.join(' ')).not.toBe(0)
        expect(r.stderr).toContain(msg)
        expect(r.stdout).toBe('')
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
