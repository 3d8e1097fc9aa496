// The serverless pipeline on the local runtime: real handlers in worker threads behind
// event-source pollers, the embedded S3 + SQS. Serialization per bucket under every
// compaction.task-threads mapping, and recovery from crashes by redelivery.

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { readAll } from '../lib/read/table-read.ts'
import { tableStatus } from '../lib/maintenance/table-status.ts'
import { Table } from '../lib/handle/table.ts'
import { type LocalRuntime, startLocalRuntime } from '../local/runtime/local-runtime.ts'
import { sortRows } from './helpers/model.ts'

const HANDLERS = join(import.meta.dirname, 'fixtures', 'handlers')
// Each test's bound: a local runtime's handlers, pollers and embedded S3 + SQS share the
// machine's cores, and on a loaded machine a drain takes minutes; the waits inside (until)
// end sooner, saying what they waited for. No test asserts how long anything took.
const TEST_TIMEOUT_MS = 240_000

function schema(taskThreads: number, buckets = 8, extra: Record<string, string> = {}) {
  return {
    fields: [
      { name: 'id', type: 'INT' },
      { name: 'qty', type: 'BIGINT' },
    ],
    primaryKeys: ['id'],
    options: {
      bucket: String(buckets),
      'deletion-vectors.enabled': 'true',
      'compaction.task-threads': String(taskThreads),
      'merge-engine': 'aggregation',
      'fields.qty.aggregate-function': 'sum',
      ...extra,
    },
  }
}

async function until(what: string, cond: () => Promise<boolean>, timeoutMs = 180_000): Promise<void> {
  const start = Date.now()
  while (!(await cond())) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 200))
  }
}

/** Queues empty, nothing in flight, no L0 file left: every written row is visible. */
async function drained(rt: LocalRuntime, table: Table): Promise<boolean> {
  const t = [...rt.tables.values()][0]
  if (rt.writer.inFlight > 0 || t.poller.inFlight > 0) return false
  if ((await rt.queueDepth(rt.ingestQueueUrl)) > 0 || (await rt.queueDepth(t.compactionQueueUrl)) > 0) return false
  const s = await tableStatus(table)
  return s.snapshot !== null && s.maxL0Files === 0
}

interface Interval {
  group: string
  start: number
  end: number
}

function peakOverlap(xs: Interval[]): number {
  const events = xs.flatMap((x) => [[x.start, 1] as const, [x.end, -1] as const]).sort((a, b) => a[0] - b[0] || a[1] - b[1])
  let cur = 0, peak = 0
  for (const [, d] of events) peak = Math.max(peak, (cur += d))
  return peak
}

describe('compaction.task-threads on the local runtime', () => {
  // 1: the table is one message group; 4: a cap below the 8 buckets; -1: no cap (another cap
  // value would run the same code as 4)
  for (const threads of [1, 4, -1]) {
    it(`task-threads ${threads}: one bucket never compacts twice at once; the peak across buckets is ${threads === -1 ? 'the active buckets' : 'the cap'}`, async () => {
      const intervals: Interval[] = []
      const rt = await startLocalRuntime({
        tables: [{ name: 't', schema: schema(threads) }],
        compactorModule: join(HANDLERS, 'slow-compactor.ts'),
        compactorBatchSize: 1,
        env: { STRATA_TEST_HOLD_MS: '400' },
        onCompactorInvocation: (_t, info) => {
          // by bucket, from the job: at task-threads 1 every job of the table shares one message group
          for (const r of info.records) intervals.push({ group: String((JSON.parse(r.body) as { bucket: number }).bucket), start: info.startedAt, end: info.endedAt })
        },
      })
      try {
        const table = await Table.open(rt.tables.get('t')!.table.store)
        // two waves of 64 keys: every one of the 8 buckets gets jobs, twice
        for (let wave = 0; wave < 2; wave++) {
          await rt.send(Array.from({ length: 64 }, (_, id) => JSON.stringify({ id, qty: 1 })))
          await until('the wave to be written', async () => (await table.snapshots.latestId()) > 0)
        }
        await until('the pipeline to drain', () => drained(rt, table))
        expect(sortRows(await readAll(table)).map((r) => r[1])).toEqual(new Array(64).fill(2n))
        const groups = new Set(intervals.map((i) => i.group))
        expect(groups.size).toBe(8)
        for (const g of groups) {
          const mine = intervals.filter((i) => i.group === g).sort((a, b) => a.start - b.start)
          for (let i = 1; i < mine.length; i++) expect(mine[i].start, `bucket ${g} overlapped`).toBeGreaterThanOrEqual(mine[i - 1].end)
        }
        expect(peakOverlap(intervals)).toBe(threads === -1 ? 8 : threads)
        // as deployed (cdk/concurrency.ts): no setting reaches its peak by being throttled
        expect(rt.tables.get('t')!.poller.stats.throttles).toBe(0)
      } finally {
        await rt.stop()
      }
    }, TEST_TIMEOUT_MS)
  }
})

describe('crash recovery by redelivery', () => {
  for (const mode of ['before-commit', 'after-commit']) {
    it(`a writer that dies ${mode === 'before-commit' ? 'after writing files but before committing' : 'after committing but before its messages are deleted'} leaves a table equal to the model`, async () => {
      const rt = await startLocalRuntime({
        tables: [{ name: 't', schema: schema(2, 4) }],
        writerModule: join(HANDLERS, 'crashing-writer.ts'),
        writerConcurrency: 1,
        writerBatchingWindowMs: 200,
        visibilityTimeoutSeconds: 1,
        env: { STRATA_TEST_CRASH: mode },
      })
      try {
        const table = await Table.open(rt.tables.get('t')!.table.store)
        // sums reveal a batch applied twice; a lost batch leaves a sum short
        const model = new Map<number, bigint>()
        for (let wave = 0; wave < 3; wave++) {
          const ids = Array.from({ length: 20 }, (_, i) => (i * 7 + wave) % 25)
          for (const id of ids) model.set(id, (model.get(id) ?? 0n) + BigInt(wave + 1))
          await rt.send(ids.map((id) => JSON.stringify({ id, qty: wave + 1 })))
        }
        await until('the pipeline to drain', () => drained(rt, table))
        expect(rt.writer.stats.crashes).toBeGreaterThan(0)
        const want = [...model].sort((a, b) => a[0] - b[0]).map(([id, qty]) => [id, qty])
        expect(sortRows(await readAll(table))).toEqual(want)
        expect(await rt.queueDepth(rt.ingestDlqUrl)).toBe(0)
      } finally {
        await rt.stop()
      }
    }, TEST_TIMEOUT_MS)
  }
})

describe('function processes (isolation: process)', () => {
  it("every function's process starts with the stack's fixed mmap threshold, in the environment glibc reads at exec (/proc/<pid>/environ)", async () => {
    const rt = await startLocalRuntime({ tables: [{ name: 't', schema: schema(2, 2) }], isolation: 'process', writerBatchingWindowMs: 100 })
    try {
      const table = await Table.open(rt.tables.get('t')!.table.store)
      await rt.send(Array.from({ length: 8 }, (_, id) => JSON.stringify({ id, qty: 1 })))
      await until('the pipeline to drain', () => drained(rt, table))
      const t = rt.tables.get('t')!
      const pools = { writer: rt.writerPool, compactor: t.pool, committer: t.committerPool }
      for (const [role, pool] of Object.entries(pools)) {
        const pids = (await pool.memory()).map((m) => m.pid)
        expect(pids.length, role).toBeGreaterThan(0)
        for (const pid of pids) {
          expect(pid, role).not.toBe(process.pid)
          // the environment the process was exec'd with, not what its JavaScript sees later
          const environ = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0')
          expect(environ, `${role} ${pid}`).toContain('MALLOC_MMAP_THRESHOLD_=131072')
        }
      }
    } finally {
      await rt.stop()
    }
  }, TEST_TIMEOUT_MS)
})
