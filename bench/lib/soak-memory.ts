// The soak's memory samples: the one process that runs the local runtime (the runtime and
// embedded S3 + SQS on the main thread, every function environment in a worker thread),
// taken apart so growth can be attributed:
// - the main thread's V8 heap, and its external / arrayBuffers (Buffers: the embedded
//   backend's stored object bodies live there);
// - every environment's own V8 heap, external and arrayBuffers, per role (writer, compactor,
//   committer, maintenance), as each thread reports them (ExecutionEnvironmentPool.memory());
// - non-heap: RSS less every V8 heap's committed size (heapTotal), i.e. Buffers, native
//   allocations, compiled code, thread stacks and whatever the C allocator keeps;
// - from /proc/self/status (Linux): anonymous and file-backed RSS, and the thread count.

import { readFileSync } from 'node:fs'
import type { EnvironmentMemory, ExecutionEnvironmentPool } from '../../local/runtime/execution-environment.ts'

export const ROLES = ['writer', 'compactor', 'committer', 'maintenance'] as const
export type Role = (typeof ROLES)[number]

export interface RoleMemory {
  /** environments that answered (or are given with their last answer) */
  environments: number
  heapUsedMb: number
  heapTotalMb: number
  externalMb: number
  arrayBuffersMb: number
  /** the largest single environment heap */
  maxHeapMb: number
}

export interface MemorySample {
  rssMb: number
  /** /proc/self/status RssAnon, RssFile and Threads; null off Linux */
  rssAnonMb: number | null
  rssFileMb: number | null
  threads: number | null
  main: { heapUsedMb: number; heapTotalMb: number; externalMb: number; arrayBuffersMb: number }
  roles: Record<Role, RoleMemory>
  /** every environment's heap, summed */
  envHeapUsedMb: number
  envHeapTotalMb: number
  envExternalMb: number
  /** RSS − main heapTotal − every environment's heapTotal */
  nonHeapMb: number
}

export const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10

function procStatus(): { rssAnonMb: number | null; rssFileMb: number | null; threads: number | null } {
  try {
    const text = readFileSync('/proc/self/status', 'utf8')
    const field = (name: string) => {
      const m = new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(text)
      return m ? Number(m[1]) : null
    }
    const kb = (v: number | null) => (v === null ? null : Math.round((v / 1024) * 10) / 10)
    return { rssAnonMb: kb(field('RssAnon')), rssFileMb: kb(field('RssFile')), threads: field('Threads') }
  } catch {
    return { rssAnonMb: null, rssFileMb: null, threads: null }
  }
}

function roleMemory(ms: EnvironmentMemory[]): RoleMemory {
  const sum = (f: (m: EnvironmentMemory) => number) => mb(ms.reduce((a, m) => a + f(m), 0))
  return {
    environments: ms.length,
    heapUsedMb: sum((m) => m.heapUsed),
    heapTotalMb: sum((m) => m.heapTotal),
    externalMb: sum((m) => m.external),
    arrayBuffersMb: sum((m) => m.arrayBuffers),
    maxHeapMb: ms.length ? mb(Math.max(...ms.map((m) => m.heapUsed))) : 0,
  }
}

/** One sample of the whole process: main thread, every pool's environments, /proc. */
export async function sampleMemory(pools: Record<Role, ExecutionEnvironmentPool[]>): Promise<MemorySample> {
  const perRole = await Promise.all(ROLES.map(async (r) => [r, roleMemory((await Promise.all(pools[r].map((p) => p.memory()))).flat())] as const))
  const roles = Object.fromEntries(perRole) as Record<Role, RoleMemory>
  const m = process.memoryUsage()
  const all = Object.values(roles)
  const envHeapTotalMb = mb(all.reduce((a, r) => a + r.heapTotalMb, 0) * 2 ** 20)
  return {
    rssMb: mb(m.rss),
    ...procStatus(),
    main: { heapUsedMb: mb(m.heapUsed), heapTotalMb: mb(m.heapTotal), externalMb: mb(m.external), arrayBuffersMb: mb(m.arrayBuffers) },
    roles,
    envHeapUsedMb: mb(all.reduce((a, r) => a + r.heapUsedMb, 0) * 2 ** 20),
    envHeapTotalMb,
    envExternalMb: mb(all.reduce((a, r) => a + r.externalMb, 0) * 2 ** 20),
    nonHeapMb: mb((m.rss - m.heapTotal) - envHeapTotalMb * 2 ** 20),
  }
}

/** Least-squares slope of y over x. */
export function slope(points: [number, number][]): number | null {
  if (points.length < 3) return null
  const n = points.length
  const mx = points.reduce((a, p) => a + p[0], 0) / n
  const my = points.reduce((a, p) => a + p[1], 0) / n
  let sxy = 0, sxx = 0
  for (const [x, y] of points) {
    sxy += (x - mx) * (y - my)
    sxx += (x - mx) ** 2
  }
  return sxx === 0 ? null : sxy / sxx
}

export interface MemoryVerdict {
  /** the range the slopes cover, seconds since the load started */
  fromSecond: number
  toSecond: number
  /** the most RSS may grow, MB per minute, for memory to count as flat */
  limitMbPerMin: number
  /** least-squares slopes over the range, MB per minute (null: too few samples) */
  slopes: {
    rss: number | null
    mainHeap: number | null
    /** every environment's heap, summed, and per role */
    envHeap: number | null
    roles: Record<Role, number | null>
    nonHeap: number | null
    mainExternal: number | null
    envExternal: number | null
  }
  /** medians of the first and last minute of the range */
  rssFirstMb: number | null
  rssLastMb: number | null
  nonHeapFirstMb: number | null
  nonHeapLastMb: number | null
  flat: boolean
  criterion: string
}

/** Slopes of every part of the process over [from, to] and whether RSS stayed within the limit. */
export function memoryVerdict(samples: { t: number; memory: MemorySample }[], fromSecond: number, toSecond: number, limitMbPerMin: number): MemoryVerdict {
  const range = samples.filter((s) => s.t >= fromSecond && s.t <= toSecond)
  const perMin = (f: (m: MemorySample) => number) => {
    const k = slope(range.map((s) => [s.t, f(s.memory)]))
    return k === null ? null : Math.round(k * 60 * 100) / 100
  }
  const medianOf = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] : null)
  const first = range.filter((s) => s.t < fromSecond + 60).map((s) => s.memory)
  const last = range.filter((s) => s.t > toSecond - 60).map((s) => s.memory)
  const rss = perMin((m) => m.rssMb)
  return {
    fromSecond: Math.round(fromSecond),
    toSecond: Math.round(toSecond),
    limitMbPerMin,
    slopes: {
      rss,
      mainHeap: perMin((m) => m.main.heapUsedMb),
      envHeap: perMin((m) => m.envHeapUsedMb),
      roles: Object.fromEntries(ROLES.map((r) => [r, perMin((m) => m.roles[r].heapUsedMb)])) as Record<Role, number | null>,
      nonHeap: perMin((m) => m.nonHeapMb),
      mainExternal: perMin((m) => m.main.externalMb),
      envExternal: perMin((m) => m.envExternalMb),
    },
    rssFirstMb: medianOf(first.map((m) => m.rssMb)),
    rssLastMb: medianOf(last.map((m) => m.rssMb)),
    nonHeapFirstMb: medianOf(first.map((m) => m.nonHeapMb)),
    nonHeapLastMb: medianOf(last.map((m) => m.nonHeapMb)),
    flat: rss !== null && rss <= limitMbPerMin,
    criterion: `least-squares RSS slope over ${Math.round(fromSecond)}–${Math.round(toSecond)} s ≤ ${limitMbPerMin} MB/min`,
  }
}

/** The verdict in one line: RSS, then heap (main, environments by role) and non-heap apart. */
export function memoryDetail(v: MemoryVerdict): string {
  const f = (x: number | null) => (x === null ? '-' : String(x))
  const roles = ROLES.map((r) => `${r} ${f(v.slopes.roles[r])}`).join(', ')
  return (
    `RSS ${f(v.slopes.rss)} MB/min over ${v.fromSecond}–${v.toSecond} s (limit ${v.limitMbPerMin}; ${f(v.rssFirstMb)} → ${f(v.rssLastMb)} MB); ` +
    `heap: main ${f(v.slopes.mainHeap)}, environments ${f(v.slopes.envHeap)} (${roles}) MB/min; ` +
    `non-heap ${f(v.slopes.nonHeap)} MB/min (${f(v.nonHeapFirstMb)} → ${f(v.nonHeapLastMb)} MB; external: main ${f(v.slopes.mainExternal)}, environments ${f(v.slopes.envExternal)} MB/min)`
  )
}
