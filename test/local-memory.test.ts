// The local runtime enforces a function's memory as Lambda does: each execution environment
// (a worker thread, or a process of its own) runs under V8 limits derived from memoryLimitInMB;
// one that runs out of memory fails the invocation in flight with Runtime.OutOfMemory and is
// replaced by a cold environment. Each environment reports its own memory (heap, external,
// arrayBuffers; a process also its RSS and pid) on request, which the soak samples. Real
// worker threads and child processes, no mocks; every behaviour in both isolations.

import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { ExecutionEnvironmentPool, type InvokeResult, processStderr, processV8Flags, RUNTIME_ALLOWANCE_MB, workerResourceLimits } from '../local/runtime/execution-environment.ts'
import type { MemoryHogInfo } from './fixtures/handlers/memory-hog.ts'
import type { WhoAmI } from './fixtures/handlers/whoami.ts'

const HOG = join(import.meta.dirname, 'fixtures', 'handlers', 'memory-hog.ts')
const PROBE = join(import.meta.dirname, 'fixtures', 'handlers', 'probe.ts')
const RETAINER = join(import.meta.dirname, 'fixtures', 'handlers', 'retainer.ts')
const WHOAMI = join(import.meta.dirname, 'fixtures', 'handlers', 'whoami.ts')

const valueOf = <T>(result: InvokeResult): T => {
  if (!result.ok) throw new Error(`invocation failed: ${result.error.name}: ${result.error.message}`)
  return result.value as T
}

const pools: ExecutionEnvironmentPool[] = []
const poolOf = (opts: Partial<ConstructorParameters<typeof ExecutionEnvironmentPool>[0]> = {}) => {
  const p = new ExecutionEnvironmentPool({ handlerModule: HOG, maxEnvironments: 1, memoryLimitInMB: 256, timeoutMs: 60_000, ...opts })
  pools.push(p)
  return p
}
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()))
})

describe('workerResourceLimits', () => {
  it('gives the old generation the function memory less the runtime allowance and the young generation', () => {
    expect(workerResourceLimits(128)).toEqual({ maxYoungGenerationSizeMb: 8, maxOldGenerationSizeMb: 56, codeRangeSizeMb: 16, stackSizeMb: 4 })
    expect(workerResourceLimits(256)).toEqual({ maxYoungGenerationSizeMb: 16, maxOldGenerationSizeMb: 176, codeRangeSizeMb: 16, stackSizeMb: 4 })
    expect(workerResourceLimits(1024)).toEqual({ maxYoungGenerationSizeMb: 48, maxOldGenerationSizeMb: 912, codeRangeSizeMb: 64, stackSizeMb: 4 })
    expect(workerResourceLimits(10240)).toEqual({ maxYoungGenerationSizeMb: 48, maxOldGenerationSizeMb: 10240 - RUNTIME_ALLOWANCE_MB - 48, codeRangeSizeMb: 64, stackSizeMb: 4 })
    for (let mb = 128; mb <= 10240; mb += 64) {
      const l = workerResourceLimits(mb)
      expect(l.maxOldGenerationSizeMb + l.maxYoungGenerationSizeMb + RUNTIME_ALLOWANCE_MB).toBe(mb)
    }
  })
})

describe('processV8Flags', () => {
  it("bounds a process's old generation as a thread's and its semi-space at a third of the young generation, rounded up", () => {
    expect(processV8Flags(workerResourceLimits(128), [])).toEqual(['--max-old-space-size=56', '--max-semi-space-size=3'])
    expect(processV8Flags(workerResourceLimits(256), [])).toEqual(['--max-old-space-size=176', '--max-semi-space-size=6'])
    expect(processV8Flags(workerResourceLimits(1024), [])).toEqual(['--max-old-space-size=912', '--max-semi-space-size=16'])
    expect(processV8Flags({ maxOldGenerationSizeMb: 100, maxYoungGenerationSizeMb: 2 }, [])).toEqual(['--max-old-space-size=100', '--max-semi-space-size=1'])
  })

  it("passes this process's --expose-gc and --min-semi-space-size on, the latter at most the environment's semi-space, and nothing else", () => {
    const limits = workerResourceLimits(256)
    expect(processV8Flags(limits, ['--expose-gc', '--min-semi-space-size=16', '--max-old-space-size=4000', '--import', 'tsx'])).toEqual([
      '--max-old-space-size=176',
      '--max-semi-space-size=6',
      '--expose-gc',
      '--min-semi-space-size=6',
    ])
    expect(processV8Flags(workerResourceLimits(1024), ['--expose_gc', '--min_semi_space_size', '4'])).toEqual(['--max-old-space-size=912', '--max-semi-space-size=16', '--expose-gc', '--min-semi-space-size=4'])
  })
})

describe('processStderr', () => {
  // as V8 20.20 wrote it for a process out of heap (native frames cut short)
  const report = [
    '',
    '<--- Last few GCs --->',
    '',
    '[27964:0x23fa9cf0]      113 ms: Mark-Compact (reduce) 55.6 (57.6) -> 55.6 (57.4) MB, 3.18 / 0.00 ms  (average mu = 0.376, current mu = 0.205) allocation failure; scavenge might not succeed',
    '',
    '',
    '<--- JS stacktrace --->',
    '',
    'FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory',
    '----- Native stack trace -----',
    '',
    ' 1: 0xb78db3 node::OOMErrorHandler(char const*, v8::OOMDetails const&) [node]',
  ]
  const run = (lines: string[]) => {
    const out: string[] = []
    const filter = processStderr((line) => out.push(line))
    for (const line of lines) filter.line(line)
    filter.end()
    return { out, outOfMemory: filter.outOfMemory }
  }

  it("forwards a handler's lines, blank ones included, and drops V8's out-of-memory report, recognizing it", () => {
    expect(run(['a warning', '', 'b', ...report])).toEqual({ out: ['a warning', '', 'b'], outOfMemory: true })
    expect(run(['x', '', '', 'y'])).toEqual({ out: ['x', '', '', 'y'], outOfMemory: false })
    expect(run(['FATAL ERROR: Ineffective mark-compacts near heap limit Allocation failed - JavaScript heap out of memory']).outOfMemory).toBe(true)
  })

  it('forwards a report that turns out not to be about the heap', () => {
    const cut = report.slice(0, 4)
    expect(run(['before', ...cut])).toEqual({ out: ['before', ...cut], outOfMemory: false })
  })
})

describe.each(['thread', 'process'] as const)('function memory on the local runtime (isolation: %s)', (isolation) => {
  const pool = (opts: Partial<ConstructorParameters<typeof ExecutionEnvironmentPool>[0]> = {}) => poolOf({ isolation, ...opts })

  it('runs a handler within its memory unaffected, in one warm environment under the derived V8 limits', async () => {
    const p = pool()
    const first = await p.invoke({ retainMb: 64 })
    const second = await p.invoke({ retainMb: 64 })
    const [a, b] = [valueOf<MemoryHogInfo>(first), valueOf<MemoryHogInfo>(second)]
    expect([a.retainedMb, b.retainedMb]).toEqual([64, 64])
    expect([first.coldStart, second.coldStart]).toEqual([true, false])
    expect(second.environmentId).toBe(first.environmentId)
    expect(b.loadId).toBe(a.loadId)
    // a thread's resourceLimits, a process's V8 flags (a main thread has no resourceLimits)
    expect(a.resourceLimits).toEqual(isolation === 'thread' ? workerResourceLimits(256) : {})
    expect(p.resourceLimits).toEqual(workerResourceLimits(256))
    expect(a.memorySizeEnv).toBe('256')
    // V8's whole heap limit stays below the function's memory, and is the same in either
    // isolation: 176 MB old generation + three 8 MB semi-spaces
    expect(a.heapSizeLimitMb).toBe(200)
  })

  it('fails an invocation that allocates far beyond the memory with an out-of-memory error, and the next runs in a fresh environment', async () => {
    const p = pool()
    const warm = await p.invoke({ retainMb: 1 })
    const before = valueOf<MemoryHogInfo>(warm)
    const stderr = vi.spyOn(process.stderr, 'write')
    const oom = await p.invoke({ retainMb: 4096 }).finally(() => stderr.mockRestore())
    // the error says it all: no V8 report on this process's stderr
    expect(stderr).not.toHaveBeenCalled()
    expect(oom).toMatchObject({ ok: false, crashed: true, coldStart: false, environmentId: warm.environmentId, error: { name: 'Runtime.OutOfMemory' } })
    if (oom.ok) throw new Error('unreachable')
    expect(oom.error.message).toMatch(/^Runtime exited with error: out of memory/)
    expect(oom.error.message).toContain('256 MB')
    expect(p.size).toBe(0)

    const next = await p.invoke({ retainMb: 1 })
    expect(next.ok).toBe(true)
    expect(next.coldStart).toBe(true)
    expect(next.environmentId).not.toBe(warm.environmentId)
    expect(valueOf<MemoryHogInfo>(next).loadId).not.toBe(before.loadId)
    expect(p.size).toBe(1)
  })

  it('an invocation queued behind one that runs out of memory runs in a replacement environment', async () => {
    const p = pool({ maxEnvironments: 1 })
    const [oom, queued] = await Promise.all([p.invoke({ retainMb: 4096 }), p.invoke({ retainMb: 8 })])
    expect(oom).toMatchObject({ ok: false, crashed: true, coldStart: true, error: { name: 'Runtime.OutOfMemory' } })
    expect(valueOf<MemoryHogInfo>(queued).retainedMb).toBe(8)
    expect(queued.coldStart).toBe(true)
    expect(queued.environmentId).not.toBe(oom.environmentId)
  })

  it('an out-of-memory environment leaves its siblings running, and timeouts still end an environment', async () => {
    const p = pool({ maxEnvironments: 2, timeoutMs: 5_000 })
    const [oom, sibling] = await Promise.all([p.invoke({ retainMb: 4096 }), p.invoke({ retainMb: 32 })])
    expect(oom).toMatchObject({ ok: false, error: { name: 'Runtime.OutOfMemory' } })
    expect(valueOf<MemoryHogInfo>(sibling).retainedMb).toBe(32)
    expect(p.size).toBe(1)

    const probe = pool({ handlerModule: PROBE, timeoutMs: 300, memoryLimitInMB: 128 })
    const timedOut = await probe.invoke({ op: 'sleep', ms: 20_000 })
    expect(timedOut).toMatchObject({ ok: false, crashed: true, error: { name: 'Sandbox.Timedout' } })
    const after = await probe.invoke({ op: 'info' })
    expect(after).toMatchObject({ ok: true, coldStart: true })
  })
})

describe.each(['thread', 'process'] as const)("each environment's memory, as it reports it (isolation: %s)", (isolation) => {
  const pool = (opts: Partial<ConstructorParameters<typeof ExecutionEnvironmentPool>[0]> = {}) => poolOf({ isolation, ...opts })

  it('gives heap and Buffer memory apart for every warm environment, and forgets an environment that exited', async () => {
    const p = pool({ handlerModule: RETAINER, maxEnvironments: 2, memoryLimitInMB: 512 })
    expect(await p.memory()).toEqual([])
    const [a, b] = await Promise.all([p.invoke({ heapMb: 1 }), p.invoke({ heapMb: 1 })])
    expect(a.environmentId).not.toBe(b.environmentId)
    const before = new Map((await p.memory()).map((m) => [m.environmentId, m]))
    expect([...before.keys()].sort()).toEqual([a.environmentId, b.environmentId].sort())
    // one environment now keeps 32 MB on its heap and 24 MB in Buffers (held by its module, as a warm sandbox's caches)
    const grown = await p.invoke({ heapMb: 32, bufferMb: 24 })
    const after = new Map((await p.memory()).map((m) => [m.environmentId, m]))
    const id = grown.environmentId!
    const other = id === a.environmentId ? b.environmentId! : a.environmentId!
    // a margin below the 32 MB kept: garbage counted in `before` may be collected by `after` (a CI run saw +29.4 MB)
    expect(after.get(id)!.heapUsed - before.get(id)!.heapUsed).toBeGreaterThanOrEqual(20 * 2 ** 20)
    // likewise below the 24 MB of Buffers: a process environment holds about 200 KiB of
    // ArrayBuffers of its own (its loader's and IPC channel's), some garbage the next GC takes
    expect(after.get(id)!.arrayBuffers - before.get(id)!.arrayBuffers).toBeGreaterThanOrEqual(23 * 2 ** 20)
    expect(after.get(id)!.external).toBeGreaterThanOrEqual(after.get(id)!.arrayBuffers)
    // the other environment's figures are its own, not the process's
    expect(after.get(other)!.arrayBuffers).toBeLessThan(8 * 2 ** 20)
    expect(after.get(id)!.invocations).toBe(before.get(id)!.invocations + 1)
    expect(after.get(id)!.stale).toBe(false)
    await p.close()
    expect(await p.memory()).toEqual([])
  })

  it(isolation === 'process' ? "gives each environment's own process id and RSS" : 'gives no process id or RSS: a thread has none of its own', async () => {
    const p = pool({ handlerModule: WHOAMI, maxEnvironments: 2, memoryLimitInMB: 128 })
    const [a, b] = await Promise.all([p.invoke({}), p.invoke({})])
    const [x, y] = [valueOf<WhoAmI>(a), valueOf<WhoAmI>(b)]
    // the pool's init variable never reaches a handler
    expect([x.poolVariables, y.poolVariables]).toEqual([[], []])
    const memory = await p.memory()
    expect(memory).toHaveLength(2)
    if (isolation === 'thread') {
      expect([x.pid, y.pid]).toEqual([process.pid, process.pid])
      for (const m of memory) expect([m.pid, m.rss]).toEqual([undefined, undefined])
      return
    }
    expect(x.pid).not.toBe(process.pid)
    expect(y.pid).not.toBe(x.pid)
    const pids = new Map([[a.environmentId, x.pid], [b.environmentId, y.pid]])
    for (const m of memory) {
      // the process the handler ran in, which holds its own heap (and Node besides) in its RSS
      expect(m.pid).toBe(pids.get(m.environmentId))
      expect(m.rss).toBeGreaterThan(m.heapTotal)
      expect(m.rss).toBeLessThan(process.memoryUsage().rss + 512 * 2 ** 20)
    }
    // close() returns once every environment's process is gone
    await p.close()
    for (const pid of [x.pid, y.pid]) expect(() => process.kill(pid, 0)).toThrow(expect.objectContaining({ code: 'ESRCH' }))
  })

  it('says whether each environment was in an invocation when it answered', async () => {
    const p = pool({ handlerModule: PROBE, maxEnvironments: 2, memoryLimitInMB: 128 })
    // two warm environments, then one of them sleeping in an invocation while the other idles
    await Promise.all([p.invoke({ op: 'sleep', ms: 300 }), p.invoke({ op: 'sleep', ms: 300 })])
    const sleeping = p.invoke({ op: 'sleep', ms: 1500 })
    await new Promise((r) => setTimeout(r, 200))
    const during = await p.memory()
    expect(during.map((m) => m.busy).sort()).toEqual([false, true])
    const busyId = during.find((m) => m.busy)!.environmentId
    expect((await sleeping).environmentId).toBe(busyId)
    expect((await p.memory()).map((m) => m.busy)).toEqual([false, false])
  })

  it('between invocations: asks a busy environment once its invocation ends, and starts none there until it answered', async () => {
    const p = pool({ handlerModule: PROBE, maxEnvironments: 1, memoryLimitInMB: 128 })
    await p.invoke({ op: 'sleep', ms: 10 })
    const events: string[] = []
    const note = <T>(what: string) => (value: T): T => {
      events.push(what)
      return value
    }
    const first = p.invoke({ op: 'sleep', ms: 800 }).then(note('first ended'))
    await new Promise((r) => setTimeout(r, 100))
    const measured = p.memory({ timeoutMs: 10_000, collect: true, settleMs: 300, betweenInvocations: true }).then(note('measured'))
    // queued behind the measurement: it must not start before the environment answered
    const second = p.invoke({ op: 'info' }).then(note('second ended'))
    const [memory] = await Promise.all([measured, first, second])
    expect(events).toEqual(['first ended', 'measured', 'second ended'])
    expect(memory).toHaveLength(1)
    expect(memory[0]).toMatchObject({ busy: false, stale: false })
    // an idle environment is measured at once
    expect(await p.memory({ betweenInvocations: true })).toMatchObject([{ busy: false, stale: false }])
  })

  it('between invocations: an invocation that outlasts the wait is measured during it, as busy, not left out', async () => {
    const p = pool({ handlerModule: PROBE, maxEnvironments: 1, memoryLimitInMB: 128 })
    await p.invoke({ op: 'sleep', ms: 10 })
    const events: string[] = []
    const long = p.invoke({ op: 'sleep', ms: 2500 }).then((r) => (events.push('invocation ended'), r))
    await new Promise((r) => setTimeout(r, 100))
    const memory = await p.memory({ timeoutMs: 400, betweenInvocations: true }).then((m) => (events.push('measured'), m))
    // answered inside the invocation (it has never answered before, so there is no stale figure to give)
    expect(memory).toMatchObject([{ busy: true, stale: false }])
    expect((await long).ok).toBe(true)
    expect(events).toEqual(['measured', 'invocation ended'])
    expect(await p.memory({ betweenInvocations: true })).toMatchObject([{ busy: false, stale: false }])
  })

  it("passes a handler's stderr on to this process's", async () => {
    const p = pool({ handlerModule: WHOAMI, memoryLimitInMB: 128 })
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true)
    try {
      expect((await p.invoke({ stderr: 'a line for stderr' })).ok).toBe(true)
      await vi.waitFor(() => expect(stderr.mock.calls.map(([chunk]) => String(chunk)).join('')).toContain('a line for stderr\n'))
    } finally {
      stderr.mockRestore()
    }
  })
})
