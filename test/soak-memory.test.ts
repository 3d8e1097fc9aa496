// The soak's memory verdict (bench/lib/soak-memory.ts): its slopes are taken over the
// settled samples (every isolate collected first) when there are enough of them, so that
// the GC timing of a dozen isolates cannot make a flat process look like it grows, or hide
// growth; and the malloc-arena reading of /proc/self/smaps.

import { describe, expect, it } from 'vitest'
import { type MemorySample, ROLES, mallocArenasMb, memoryDetail, memoryVerdict } from '../bench/lib/soak-memory.ts'

function sample(t: number, rssMb: number, settled: boolean): { t: number; memory: MemorySample } {
  const role = { environments: 1, heapUsedMb: 0, heapTotalMb: 0, externalMb: 0, arrayBuffersMb: 0, maxHeapMb: 0, cacheMb: 0 }
  return {
    t,
    memory: {
      settled,
      rssMb,
      rssAnonMb: null,
      rssFileMb: null,
      threads: null,
      mallocArenasMb: null,
      main: { heapUsedMb: 0, heapTotalMb: 0, externalMb: 0, arrayBuffersMb: 0 },
      roles: Object.fromEntries(ROLES.map((r) => [r, role])) as MemorySample['roles'],
      envHeapUsedMb: 0,
      envHeapTotalMb: 0,
      envExternalMb: 0,
      envCacheMb: 0,
      nonHeapMb: rssMb,
    },
  }
}

describe('memory verdict', () => {
  // 1 Hz samples over 450–900 s; every tenth settled at a flat 1,000 MB, the others carrying
  // uncollected garbage that piles up towards the end (as a lazily collected heap does)
  const run = (settledMb: (t: number) => number) =>
    Array.from({ length: 451 }, (_, i) => {
      const t = 450 + i
      return i % 10 === 0 ? sample(t, settledMb(t), true) : sample(t, settledMb(t) + (t - 450) * 0.5, false)
    })

  it('takes its slopes over the settled samples when there are at least 10', () => {
    const flat = memoryVerdict(run(() => 1000), 450, 900, 2)
    expect(flat.samples).toBe('settled')
    expect(flat.slopes.rss).toBe(0)
    expect(flat.flat).toBe(true)
    expect(flat.criterion).toMatch(/over the 46 settled samples/)
    // growth of the live data still shows: 3 MB/min
    const growing = memoryVerdict(run((t) => 1000 + (t - 450) * 0.05), 450, 900, 2)
    expect(growing.slopes.rss).toBeCloseTo(3, 5)
    expect(growing.flat).toBe(false)
  })

  it('separates growth from environments coming and going', () => {
    // flat per environment at 80 MB each; a fifth environment from 600 s on
    const samples = run(() => 1000).map((s) => {
      const envs = s.t >= 600 ? 5 : 4
      const memory = { ...s.memory, rssMb: s.memory.rssMb + 80 * envs, roles: { ...s.memory.roles, compactor: { ...s.memory.roles.compactor, environments: envs - 3 } } }
      return { ...s, memory }
    })
    const v = memoryVerdict(samples, 450, 900, 2)
    expect(v.slopes.rss).toBeGreaterThan(10)
    expect(v.slopes.rssAtFixedEnvironments).toBeCloseTo(0, 5)
    expect(v.slopes.mbPerEnvironment).toBeCloseTo(80, 5)
    // no change in the count: no fit
    expect(memoryVerdict(run(() => 1000), 450, 900, 2).slopes.rssAtFixedEnvironments).toBeNull()
  })

  it("reports the backend process's growth apart from the verdict", () => {
    // the backend's own process grows 6 MB/min on the settled samples; the functions' RSS is flat
    const samples = run(() => 1000).map((s) => (s.memory.settled ? { ...s, memory: { ...s.memory, backend: { rssMb: 200 + (s.t - 450) * 0.1, heapUsedMb: 50, arrayBuffersMb: 10 } } } : s))
    const v = memoryVerdict(samples, 450, 900, 2)
    expect(v.slopes.backendRss).toBeCloseTo(6, 5)
    expect(v.slopes.rss).toBe(0)
    expect(v.flat).toBe(true)
    expect(memoryVerdict(run(() => 1000), 450, 900, 2).slopes.backendRss).toBeNull()
  })

  it("gives each V8 heap space's committed growth apart, leaving out spaces under 1 MB", () => {
    // the young generation grows 1 MB/min towards its cap, code 0.5, old space stays put
    const samples = run(() => 1000).map((s) => ({
      ...s,
      memory: { ...s.memory, spacesMb: { new_space: 8 + (s.t - 450) / 60, code_space: 4 + (s.t - 450) / 120, old_space: 100, read_only_space: 0.2 } },
    }))
    const v = memoryVerdict(samples, 450, 900, 2)
    expect(v.slopes.spaces.new_space).toBeCloseTo(1, 5)
    expect(v.slopes.spaces.code_space).toBeCloseTo(0.5, 5)
    expect(v.slopes.spaces.old_space).toBe(0)
    expect(Object.keys(v.slopes.spaces)).not.toContain('read_only_space')
    expect(memoryDetail(v)).toMatch(/by V8 space, every isolate: new 1, code 0\.5, old 0 MB\/min/)
  })

  describe('with every environment a process of its own', () => {
    // the host flat at 300 MB; environment 11 flat at 120 MB through the range, 12 growing 1
    // MB/min through it, 13 started at 600 s and filling its caches (20 MB/min: its own
    // warm-up); on settled samples only, as the soak sends them
    const env = (pid: number, role: 'writer' | 'compactor', rssMb: number, busy = false) => ({ role, pid, rssMb, heapUsedMb: rssMb / 2, heapTotalMb: rssMb / 2 + 5, newSpaceMb: 16, busy, stale: false })
    const withProcesses = (growing: number) =>
      run(() => 300).map((s) => {
        if (!s.memory.settled) return s
        const processes = [env(11, 'writer', 120), env(12, 'compactor', 110 + ((s.t - 450) / 60) * growing)]
        if (s.t >= 600) processes.push(env(13, 'compactor', 60 + ((s.t - 600) / 60) * 20))
        return { ...s, memory: { ...s.memory, processes } }
      })

    it('judges the host and each environment that lived through the range, one by one', () => {
      const v = memoryVerdict(withProcesses(1), 450, 900, 2)
      expect(v.slopes.rss).toBe(0)
      expect(v.processes!.throughout.map((p) => [p.pid, p.role, p.rss, p.samples, p.count])).toEqual([[11, 'writer', 0, 'idle', 46], [12, 'compactor', 1, 'idle', 46]])
      expect(v.processes!.throughout[1].heap).toBeCloseTo(0.5, 5)
      expect(v.processes!.throughout[1].nonHeap).toBeCloseTo(0.5, 5)
      expect(v.processes!.maxRssLessYoung).toBe(1)
      // the late starter is listed, not judged; the sum moves with it
      expect(v.processes!.partial).toEqual([{ role: 'compactor', pid: 13, fromSecond: 600, toSecond: 900 }])
      expect(v.processes!.totalRss!).toBeGreaterThan(20)
      expect(v.flat).toBe(true)
      expect(v.criterion).toMatch(/for the host process, and of RSS less its young generation for each environment's process that lived through the range/)
      expect(memoryDetail(v)).toMatch(/the host process's RSS 0 MB\/min.*2 lived through the range, steepest slope of RSS less the young generation 1 MB\/min.*1 started or ended inside it \(their own warm-up, not counted: compactor 600–900 s\)/)
    })

    it("judges an environment's RSS less its young generation, whose second half a sample's collection may uncommit", () => {
      // flat at 110 MB less a young generation of 16 MB in the first half of the range (an
      // idle isolate's), 32 MB in the second (a busy one's): RSS steps up 16 MB
      const samples = run(() => 300).map((s) => {
        if (!s.memory.settled) return s
        const young = s.t < 675 ? 16 : 32
        return { ...s, memory: { ...s.memory, processes: [{ ...env(12, 'compactor', 94 + young), newSpaceMb: young }] } }
      })
      const v = memoryVerdict(samples, 450, 900, 2)
      expect(v.processes!.throughout[0].rss!).toBeGreaterThan(2)
      expect(v.processes!.throughout[0].rssLessYoung).toBe(0)
      expect(v.flat).toBe(true)
    })

    it('fails when one environment grows past the limit, though the host stays flat', () => {
      const v = memoryVerdict(withProcesses(3), 450, 900, 2)
      expect(v.slopes.rss).toBe(0)
      expect(v.processes!.maxRssLessYoung).toBe(3)
      expect(v.flat).toBe(false)
    })

    it("takes an environment's slope between its invocations: a job's data held at sample time is not growth", () => {
      // environment 12 flat at 110 MB between invocations; busy in every third sample, holding
      // a job's 40 MB, more often towards the end (as a compactor whose jobs grow would be)
      const samples = run(() => 300).map((s, i) => {
        if (!s.memory.settled) return s
        const busy = s.t > 700 ? i % 20 !== 0 : i % 30 === 0
        return { ...s, memory: { ...s.memory, processes: [env(11, 'writer', 120), env(12, 'compactor', busy ? 150 : 110, busy)] } }
      })
      const v = memoryVerdict(samples, 450, 900, 2)
      const twelve = v.processes!.throughout.find((p) => p.pid === 12)!
      expect(twelve).toMatchObject({ rss: 0, samples: 'idle' })
      expect(twelve.count).toBeGreaterThanOrEqual(10)
      expect(v.flat).toBe(true)
      // with fewer than 10 idle samples, every sample counts, and the busy ones show
      const busier = run(() => 300).map((s) => (s.memory.settled ? { ...s, memory: { ...s.memory, processes: [env(12, 'compactor', s.t > 860 ? 110 : 150, s.t <= 860)] } } : s))
      const w = memoryVerdict(busier, 450, 900, 2)
      expect(w.processes!.throughout[0]).toMatchObject({ samples: 'all', count: 46 })
      expect(w.processes!.throughout[0].rss!).toBeLessThan(-2)
      // a stale answer repeats an earlier one: never a point of the slope
      const stale = run(() => 300).map((s) => (s.memory.settled ? { ...s, memory: { ...s.memory, processes: [{ ...env(12, 'compactor', s.t > 800 ? 400 : 110), stale: s.t > 800 }] } } : s))
      expect(memoryVerdict(stale, 450, 900, 2).processes!.throughout[0]).toMatchObject({ rss: 0, count: 36 })
    })

    it('is absent when the environments are threads of the host', () => {
      expect(memoryVerdict(run(() => 1000), 450, 900, 2).processes).toBeNull()
    })
  })

  it('falls back to every sample without enough settled ones', () => {
    const unsettled = run(() => 1000).map((s) => ({ ...s, memory: { ...s.memory, settled: false } }))
    const v = memoryVerdict(unsettled, 450, 900, 2)
    expect(v.samples).toBe('all')
    // the garbage's 0.5 MB/s, diluted by the flat tenth
    expect(v.slopes.rss).toBeGreaterThan(20)
    expect(v.flat).toBe(false)
    expect(v.criterion).toMatch(/over every sample$/)
  })
})

describe('malloc arenas from smaps', () => {
  const map = (start: number, end: number, name: string, rssKb: number) =>
    `${start.toString(16)}-${end.toString(16)} rw-p 00000000 00:00 0 ${name}\nSize: ${(end - start) / 1024} kB\nRss: ${rssKb} kB\n`
  const MiB = 2 ** 20

  it('counts the brk heap and whole 64 MiB-aligned arena reservations, nothing else', () => {
    const smaps = [
      map(0x55_0000_0000, 0x55_0000_0000 + 8 * MiB, '[heap]', 4096),
      // a thread arena: 3 MiB used, 61 MiB reserved, starting on a 64 MiB boundary
      map(0x7f_0000_0000, 0x7f_0000_0000 + 3 * MiB, '', 2048),
      map(0x7f_0000_0000 + 3 * MiB, 0x7f_0000_0000 + 64 * MiB, '', 0),
      // an anonymous mapping that is not an arena (not aligned)
      map(0x7f_1000_1000, 0x7f_1000_1000 + 64 * MiB, '', 9999),
      // a file mapping
      map(0x7f_2000_0000, 0x7f_2000_0000 + 64 * MiB, '/usr/lib/libc.so.6', 8888),
    ].join('')
    expect(mallocArenasMb(smaps)).toBe(6)
  })
})
