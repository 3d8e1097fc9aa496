// The soak's memory samples: the process that runs the local runtime (the runtime, its event
// sources and the soak's own readers; the embedded S3 + SQS run in a process of their own) and
// the function environments, taken apart so growth can be attributed:
// - the main thread's V8 heap, and its external / arrayBuffers;
// - every environment's own V8 heap, external and arrayBuffers, per role (writer, compactor,
//   committer, maintenance), as each environment reports them (ExecutionEnvironmentPool.memory());
// - non-heap: RSS less the V8 heaps' committed size (heapTotal) that RSS holds, i.e. Buffers,
//   native allocations, compiled code, thread stacks and whatever the C allocator keeps;
// - from /proc/self/status (Linux): anonymous and file-backed RSS, and the thread count;
// - from /proc/self/smaps (Linux): the resident part of the C allocator's arenas (glibc's
//   main brk heap and its per-thread arenas, each a 64 MiB-aligned reservation of 64 MiB),
//   where native allocations freed by one thread may stay resident.
//
// Environments as threads or as processes. With the local runtime's `isolation: 'thread'`
// every environment is a worker thread of the host, and RSS is the sum of them all: an
// environment that starts (on demand, or to replace one lost to a fault) adds its 70–130 MB to
// the slope, and a dozen isolates share the C allocator. With `isolation: 'process'` (the
// soak's default) each environment is a process of its own, as a Lambda sandbox is: each
// reports its own RSS, and the verdict takes the host and every environment that lived
// through the window one by one (MemoryVerdict.processes).
//
// Settled samples. V8 grows an isolate's heap lazily and collects when its own heuristics
// say so, so the committed heaps of a dozen isolates swing by tens of MB each with the
// timing of their last collections (and the main thread's by more), which swamps a slope
// of 2 MB/min over a few minutes. Every tenth sample therefore first asks every isolate (the
// main thread and each environment) for a full collection, waits for V8 to return the freed
// pages, and only then reads the process: that sample's heaps and RSS are the live data plus
// what stays resident, and the memory verdict is computed over these samples. It needs the
// process to run with --expose-gc (bench/soak.ts starts itself so); without it the samples
// are ordinary ones and marked so.

import { readFileSync } from 'node:fs'
import type { EnvironmentMemory, ExecutionEnvironmentPool } from '../../local/runtime/execution-environment.ts'
import { heapSpaces } from '../../local/runtime/worker.ts'

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
  /** charged by the environments' bounded caches (part of heapUsed) */
  cacheMb: number
}

export interface MemorySample {
  /** taken after a full collection of every isolate (see above) */
  settled: boolean
  rssMb: number
  /** /proc/self/status RssAnon, RssFile and Threads; null off Linux */
  rssAnonMb: number | null
  rssFileMb: number | null
  threads: number | null
  /**
   * resident MB of glibc's malloc arenas (brk heap + per-thread arenas), from smaps; null off
   * Linux and on samples that skip it (reading smaps of a large process takes ~0.4 s)
   */
  mallocArenasMb: number | null
  main: { heapUsedMb: number; heapTotalMb: number; externalMb: number; arrayBuffersMb: number }
  roles: Record<Role, RoleMemory>
  /** every environment's heap, summed */
  envHeapUsedMb: number
  envHeapTotalMb: number
  envExternalMb: number
  /** every environment's bounded caches, summed (part of envHeapUsedMb) */
  envCacheMb: number
  /** RSS − main heapTotal − every environment's heapTotal */
  nonHeapMb: number
  /**
   * committed MB of each V8 heap space (new_space, old_space, code_space, large_object_space, …),
   * summed over the main thread and every environment: which part of the heaps' committed
   * size grows (young generation growing towards its cap, compiled code, old generation)
   */
  spacesMb?: Record<string, number>
  /**
   * the embedded backend's child process (S3 and SQS's stand-in, not part of RSS above), when
   * it runs in one; set by the soak on the samples it asks the backend for
   */
  backend?: { rssMb: number; heapUsedMb: number; arrayBuffersMb: number }
  /**
   * With every environment a process of its own (the local runtime's `isolation: 'process'`):
   * each environment's own process, and RSS above is the host's alone (the runtime, its event
   * sources and the soak's readers). Absent when the environments are threads of the host.
   */
  processes?: EnvironmentProcess[]
}

/** One environment's process, as the environment reported it. */
export interface EnvironmentProcess {
  role: Role
  pid: number
  rssMb: number
  heapUsedMb: number
  heapTotalMb: number
  /**
   * committed MB of its young generation (V8's new_space): at most 3 × --max-semi-space-size,
   * and half of it or all of it depending on the allocation rate before the sample's forced
   * collection (an isolate that has been idle gets its second semi-space uncommitted)
   */
  newSpaceMb: number
  /** in an invocation when it answered (ThreadMemory.busy) */
  busy: boolean
  /** did not answer in time: these are its previous answer's figures (EnvironmentMemory.stale) */
  stale: boolean
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

const ARENA_BYTES = 64 * 2 ** 20

/**
 * Resident MB of glibc's malloc arenas: the `[heap]` mapping (the main arena) and every run
 * of unnamed mappings that starts on a 64 MiB boundary and spans exactly 64 MiB (a thread
 * arena's reservation, its used part read-write and the rest inaccessible).
 */
export function mallocArenasMb(smaps: string): number {
  const maps: { start: number; end: number; name: string; rssKb: number }[] = []
  for (const line of smaps.split('\n')) {
    const m = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \S+\s*(.*)$/.exec(line)
    if (m) maps.push({ start: parseInt(m[1], 16), end: parseInt(m[2], 16), name: m[3].trim(), rssKb: 0 })
    else if (line.startsWith('Rss:') && maps.length) maps[maps.length - 1].rssKb = Number(line.split(/\s+/)[1])
  }
  let kb = 0
  for (let i = 0; i < maps.length; i++) {
    const m = maps[i]
    if (m.name === '[heap]') {
      kb += m.rssKb
      continue
    }
    if (m.name !== '' || m.start % ARENA_BYTES !== 0) continue
    let span = 0, rss = 0, j = i
    while (j < maps.length && maps[j].name === '' && maps[j].start === m.start + span && span < ARENA_BYTES) {
      span += maps[j].end - maps[j].start
      rss += maps[j].rssKb
      j++
    }
    if (span === ARENA_BYTES) {
      kb += rss
      i = j - 1
    }
  }
  return Math.round((kb / 1024) * 10) / 10
}

function arenas(): number | null {
  try {
    return mallocArenasMb(readFileSync('/proc/self/smaps', 'utf8'))
  } catch {
    return null
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
    cacheMb: sum((m) => m.cachedBytes ?? 0),
  }
}

/** How long a settled sample waits after the collections: V8 unmaps freed pages on a background thread. */
const SETTLE_MS = 1500

const gc = (globalThis as { gc?: () => void }).gc

/**
 * How long a settled sample waits for an environment that is in an invocation to end it:
 * twice the writers' and compactors' p99 invocation in the soak. A maintenance run can take
 * longer; its environment is then asked during the run and answers as busy (one still
 * silent after as long again is given with its last answer, marked stale, which the verdict
 * leaves out). Before, such an environment gave only stale samples, and one whose runs
 * followed each other through the whole range had no slope, which failed the verdict with
 * nothing measured (soaks ak and an, docs/reliability.md).
 */
const BETWEEN_INVOCATIONS_TIMEOUT_MS = 10_000

/**
 * One sample of the whole process: main thread, every pool's environments, /proc.
 * `settle`: collect every isolate first (a settled sample; only with --expose-gc). An
 * environment that is a process of its own is then read between two of its invocations
 * (ExecutionEnvironmentPool.memory()'s betweenInvocations): collected, given SETTLE_MS, read,
 * and only then handed its next invocation; one in an invocation is read when that ends.
 */
export async function sampleMemory(pools: Record<Role, ExecutionEnvironmentPool[]>, withArenas: boolean, settle = false): Promise<MemorySample> {
  const settled = settle && gc !== undefined
  const betweenInvocations = (p: ExecutionEnvironmentPool) => settled && p.isolation === 'process'
  if (settled) gc!()
  // processes measured between invocations: asked now, answered in their own time
  const early = new Map<ExecutionEnvironmentPool, Promise<EnvironmentMemory[]>>(
    ROLES.flatMap((r) => pools[r].filter(betweenInvocations)).map((p) => [p, p.memory({ timeoutMs: BETWEEN_INVOCATIONS_TIMEOUT_MS, collect: true, settleMs: SETTLE_MS, betweenInvocations: true })]),
  )
  if (settled) {
    await Promise.all(ROLES.flatMap((r) => pools[r].filter((p) => !betweenInvocations(p)).map((p) => p.memory({ timeoutMs: 5000, collect: true }))))
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS))
  }
  const environmentMemories = await Promise.all(ROLES.map(async (r) => (await Promise.all(pools[r].map((p) => early.get(p) ?? p.memory()))).flat()))
  const processes: EnvironmentProcess[] = ROLES.flatMap((role, i) =>
    environmentMemories[i].filter((e) => e.rss !== undefined && e.pid !== undefined).map((e) => ({ role, pid: e.pid!, rssMb: mb(e.rss!), heapUsedMb: mb(e.heapUsed), heapTotalMb: mb(e.heapTotal), newSpaceMb: mb(e.spaces?.new_space ?? 0), busy: e.busy, stale: e.stale })),
  )
  const isolated = processes.length > 0
  const roles = Object.fromEntries(ROLES.map((r, i) => [r, roleMemory(environmentMemories[i])])) as Record<Role, RoleMemory>
  const m = process.memoryUsage()
  const all = Object.values(roles)
  const envHeapTotalMb = mb(all.reduce((a, r) => a + r.heapTotalMb, 0) * 2 ** 20)
  const spaces: Record<string, number> = { ...heapSpaces() }
  for (const ms of environmentMemories) for (const e of ms) for (const [name, bytes] of Object.entries(e.spaces ?? {})) spaces[name] = (spaces[name] ?? 0) + bytes
  return {
    settled,
    rssMb: mb(m.rss),
    ...procStatus(),
    mallocArenasMb: withArenas ? arenas() : null,
    main: { heapUsedMb: mb(m.heapUsed), heapTotalMb: mb(m.heapTotal), externalMb: mb(m.external), arrayBuffersMb: mb(m.arrayBuffers) },
    roles,
    envHeapUsedMb: mb(all.reduce((a, r) => a + r.heapUsedMb, 0) * 2 ** 20),
    envHeapTotalMb,
    envExternalMb: mb(all.reduce((a, r) => a + r.externalMb, 0) * 2 ** 20),
    envCacheMb: mb(all.reduce((a, r) => a + r.cacheMb, 0) * 2 ** 20),
    // the host's RSS holds the environments' heaps only when they are its threads
    nonHeapMb: mb(m.rss - m.heapTotal - (isolated ? 0 : envHeapTotalMb * 2 ** 20)),
    spacesMb: Object.fromEntries(Object.entries(spaces).map(([name, bytes]) => [name, mb(bytes)])),
    ...(isolated ? { processes } : {}),
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

/**
 * Least-squares fit y = a + b·x + c·z; returns [b, c], or null when the columns are
 * degenerate (z constant: then b is the plain slope, reported apart).
 */
export function slopeWith(points: [number, number, number][]): [number, number] | null {
  if (points.length < 4) return null
  const n = points.length
  const m = (f: (p: [number, number, number]) => number) => points.reduce((a, p) => a + f(p), 0) / n
  const mx = m((p) => p[0]), mz = m((p) => p[1]), my = m((p) => p[2])
  let sxx = 0, szz = 0, sxz = 0, sxy = 0, szy = 0
  for (const [x, z, y] of points) {
    const dx = x - mx, dz = z - mz, dy = y - my
    sxx += dx * dx
    szz += dz * dz
    sxz += dx * dz
    sxy += dx * dy
    szy += dz * dy
  }
  const det = sxx * szz - sxz * sxz
  if (!(Math.abs(det) > 1e-9 * Math.max(1, sxx * szz))) return null
  return [(sxy * szz - szy * sxz) / det, (szy * sxx - sxy * sxz) / det]
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
    /** the environments' bounded caches, and their heap less those caches (what is not a cache filling) */
    envCaches: number | null
    envHeapLessCaches: number | null
    roles: Record<Role, number | null>
    nonHeap: number | null
    /**
     * RSS over time with the number of live environments held fixed (RSS = a + b·t + c·envs):
     * a crash or restart replaces an environment, whose heap then grows back from nothing,
     * and a busier minute starts one more; this is the growth those do not explain (a
     * diagnostic, not the criterion). null when the count did not change.
     */
    rssAtFixedEnvironments: number | null
    /** MB of RSS per live environment in that fit */
    mbPerEnvironment: number | null
    /** the part of non-heap in glibc's malloc arenas (null off Linux) */
    mallocArenas: number | null
    mainExternal: number | null
    envExternal: number | null
    /** the backend's child process (not in RSS): its RSS; null when it runs in this process */
    backendRss: number | null
    /** committed size of each V8 heap space, every isolate summed (spaces that stay under 1 MB are left out) */
    spaces: Record<string, number | null>
  }
  /**
   * With every environment a process of its own: each environment's process, the way Lambda
   * runs it. RSS above (slopes.rss) is then the host's alone, and the criterion holds when the
   * host and every environment that lived through the whole range each stayed within the
   * limit. An environment that started or ended inside the range (started on demand, or
   * replaced after a fault) is its own warm-up: counted, listed, and left out of the
   * criterion. An environment's slopes are over the samples it gave between invocations
   * (`samples: 'idle'`; the soak asks for them so), when there are at least 10, and never over
   * a stale answer (a repeat of the previous one): one that answers in the middle of a
   * compaction holds that job's columns and buffers, tens of MB that come and go with the
   * timing of the sample, and what is asked is whether what it keeps from one invocation to
   * the next grows. What is judged of an environment is its RSS less its young generation's
   * committed size: that generation is capped (3 × --max-semi-space-size, 48 MB for the
   * compactor), and a forced collection in an isolate that has been idle uncommits half of
   * it (checked on Node 20.20: 32 → 16 MB after 12 s without allocation, with or without
   * --no-memory-reducer), so the sample's own collection moves an environment's RSS by 16 MB
   * with how busy it was before: a step that a slope over minutes reads as growth or loss.
   * Its RSS slope as is, heap and non-heap are reported beside.
   * null when the environments are threads of the host.
   */
  processes: {
    throughout: {
      role: Role
      pid: number
      /** the judged slope: RSS less the young generation's committed size (see above) */
      rssLessYoung: number | null
      /** RSS as it is */
      rss: number | null
      heap: number | null
      nonHeap: number | null
      rssFirstMb: number | null
      rssLastMb: number | null
      /** the samples the slopes are over: those taken between invocations, or (fewer than 10 of those) every one */
      samples: 'idle' | 'all'
      /** how many samples that is */
      count: number
    }[]
    /** environments seen inside the range that did not live through all of it */
    partial: { role: Role; pid: number; fromSecond: number; toSecond: number }[]
    /** the steepest judged slope (rssLessYoung) among `throughout` */
    maxRssLessYoung: number | null
    /** the host's RSS plus every environment process's, summed (a diagnostic: it moves with the number of environments) */
    totalRss: number | null
  } | null
  /** the slopes are over settled samples only (there were enough of them), or over every sample */
  samples: 'settled' | 'all'
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
  const inRange = samples.filter((s) => s.t >= fromSecond && s.t <= toSecond)
  const settled = inRange.filter((s) => s.memory.settled)
  const useSettled = settled.length >= 10
  const range = useSettled ? settled : inRange
  const slopeOf = (points: [number, number][]) => {
    const k = slope(points)
    return k === null ? null : Math.round(k * 60 * 100) / 100
  }
  const perMin = (f: (m: MemorySample) => number) => slopeOf(range.map((s) => [s.t, f(s.memory)]))
  const medianOf = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] : null)
  const first = range.filter((s) => s.t < fromSecond + 60).map((s) => s.memory)
  const last = range.filter((s) => s.t > toSecond - 60).map((s) => s.memory)
  const rss = perMin((m) => m.rssMb)
  const environments = (m: MemorySample) => ROLES.reduce((n, r) => n + m.roles[r].environments, 0)
  const fixed = slopeWith(range.map((s) => [s.t, environments(s.memory), s.memory.rssMb]))
  const processes = processVerdict(range, fromSecond, toSecond, slopeOf, medianOf)
  const rssFlat = rss !== null && rss <= limitMbPerMin
  const processesFlat = processes === null || processes.throughout.every((p) => p.rssLessYoung !== null && p.rssLessYoung <= limitMbPerMin)
  return {
    fromSecond: Math.round(fromSecond),
    toSecond: Math.round(toSecond),
    limitMbPerMin,
    slopes: {
      rss,
      mainHeap: perMin((m) => m.main.heapUsedMb),
      envHeap: perMin((m) => m.envHeapUsedMb),
      envCaches: perMin((m) => m.envCacheMb ?? 0),
      envHeapLessCaches: perMin((m) => m.envHeapUsedMb - (m.envCacheMb ?? 0)),
      roles: Object.fromEntries(ROLES.map((r) => [r, perMin((m) => m.roles[r].heapUsedMb)])) as Record<Role, number | null>,
      nonHeap: perMin((m) => m.nonHeapMb),
      rssAtFixedEnvironments: fixed === null ? null : Math.round(fixed[0] * 60 * 100) / 100,
      mbPerEnvironment: fixed === null ? null : Math.round(fixed[1] * 10) / 10,
      mallocArenas: slopeOf(range.filter((s) => s.memory.mallocArenasMb !== null).map((s) => [s.t, s.memory.mallocArenasMb!])),
      mainExternal: perMin((m) => m.main.externalMb),
      envExternal: perMin((m) => m.envExternalMb),
      backendRss: slopeOf(range.filter((s) => s.memory.backend !== undefined).map((s) => [s.t, s.memory.backend!.rssMb])),
      spaces: spaceSlopes(range.map((s) => [s.t, s.memory.spacesMb ?? {}]), slopeOf),
    },
    rssFirstMb: medianOf(first.map((m) => m.rssMb)),
    rssLastMb: medianOf(last.map((m) => m.rssMb)),
    nonHeapFirstMb: medianOf(first.map((m) => m.nonHeapMb)),
    nonHeapLastMb: medianOf(last.map((m) => m.nonHeapMb)),
    processes,
    samples: useSettled ? 'settled' : 'all',
    flat: rssFlat && processesFlat,
    criterion:
      `least-squares RSS slope over ${Math.round(fromSecond)}–${Math.round(toSecond)} s ≤ ${limitMbPerMin} MB/min` +
      (processes === null ? '' : ` for the host process, and of RSS less its young generation for each environment's process that lived through the range`) +
      `, ${useSettled ? `over the ${settled.length} settled samples (every isolate collected first)` : 'over every sample'}`,
  }
}

/** The per-process part of the verdict (see MemoryVerdict.processes), or null when no sample has processes. */
function processVerdict(
  range: { t: number; memory: MemorySample }[],
  fromSecond: number,
  toSecond: number,
  slopeOf: (points: [number, number][]) => number | null,
  medianOf: (xs: number[]) => number | null,
): MemoryVerdict['processes'] {
  if (!range.some((s) => s.memory.processes !== undefined)) return null
  const series = new Map<number, { role: Role; points: { t: number; p: EnvironmentProcess }[] }>()
  for (const s of range) {
    for (const p of s.memory.processes ?? []) {
      const entry = series.get(p.pid) ?? { role: p.role, points: [] }
      entry.points.push({ t: s.t, p })
      series.set(p.pid, entry)
    }
  }
  // lived through the range: seen in the range's first sample and in its last (a process keeps
  // its pid for life; one missing from either end started or exited inside the range)
  const firstT = range[0].t
  const lastT = range[range.length - 1].t
  const throughout: NonNullable<MemoryVerdict['processes']>['throughout'] = []
  const partial: NonNullable<MemoryVerdict['processes']>['partial'] = []
  for (const [pid, { role, points }] of series) {
    const whole = points[0].t === firstT && points[points.length - 1].t === lastT
    if (!whole) {
      partial.push({ role, pid, fromSecond: Math.round(points[0].t), toSecond: Math.round(points[points.length - 1].t) })
      continue
    }
    const answered = points.filter(({ p }) => !p.stale)
    const idle = answered.filter(({ p }) => !p.busy)
    const used = idle.length >= 10 ? idle : answered
    const per = (f: (p: EnvironmentProcess) => number) => slopeOf(used.map(({ t, p }) => [t, f(p)]))
    throughout.push({
      role,
      pid,
      rssLessYoung: per((p) => p.rssMb - p.newSpaceMb),
      rss: per((p) => p.rssMb),
      heap: per((p) => p.heapUsedMb),
      nonHeap: per((p) => p.rssMb - p.heapTotalMb),
      rssFirstMb: medianOf(used.filter(({ t }) => t < fromSecond + 60).map(({ p }) => p.rssMb)),
      rssLastMb: medianOf(used.filter(({ t }) => t > toSecond - 60).map(({ p }) => p.rssMb)),
      samples: used === idle ? 'idle' : 'all',
      count: used.length,
    })
  }
  const slopes = throughout.map((p) => p.rssLessYoung).filter((k): k is number => k !== null)
  return {
    throughout,
    partial,
    maxRssLessYoung: slopes.length ? Math.max(...slopes) : null,
    totalRss: slopeOf(range.map((s) => [s.t, s.memory.rssMb + (s.memory.processes ?? []).reduce((a, p) => a + p.rssMb, 0)])),
  }
}

function spaceSlopes(points: [number, Record<string, number>][], slopeOf: (points: [number, number][]) => number | null): Record<string, number | null> {
  const names = [...new Set(points.flatMap(([, spaces]) => Object.keys(spaces)))]
  const big = names.filter((name) => points.some(([, spaces]) => (spaces[name] ?? 0) >= 1))
  return Object.fromEntries(big.map((name) => [name, slopeOf(points.map(([t, spaces]) => [t, spaces[name] ?? 0]))]))
}

/** The verdict in one line: RSS, then heap (main, environments by role) and non-heap apart. */
export function memoryDetail(v: MemoryVerdict): string {
  const f = (x: number | null) => (x === null ? '-' : String(x))
  const roles = ROLES.map((r) => `${r} ${f(v.slopes.roles[r])}`).join(', ')
  return (
    `${v.processes === null ? 'RSS' : "the host process's RSS"} ${f(v.slopes.rss)} MB/min over ${v.fromSecond}–${v.toSecond} s, ${v.samples === 'settled' ? 'settled samples' : 'every sample'} (limit ${v.limitMbPerMin}; ${f(v.rssFirstMb)} → ${f(v.rssLastMb)} MB); ` +
    `heap: main ${f(v.slopes.mainHeap)}, environments ${f(v.slopes.envHeap)} (${roles}; bounded caches ${f(v.slopes.envCaches)}, the rest ${f(v.slopes.envHeapLessCaches)}) MB/min; ` +
    `RSS at a fixed number of environments ${f(v.slopes.rssAtFixedEnvironments)} MB/min (${f(v.slopes.mbPerEnvironment)} MB per environment); ` +
    `heaps' committed size by V8 space, every isolate: ${Object.entries(v.slopes.spaces ?? {}).map(([name, k]) => `${name.replace(/_space$/, '')} ${f(k)}`).join(', ') || '-'} MB/min; ` +
    `non-heap ${f(v.slopes.nonHeap)} MB/min (${f(v.nonHeapFirstMb)} → ${f(v.nonHeapLastMb)} MB; malloc arenas ${f(v.slopes.mallocArenas)}, external: main ${f(v.slopes.mainExternal)}, environments ${f(v.slopes.envExternal)} MB/min)` +
    (v.slopes.backendRss === null ? '' : `; the backend's own process (S3 and SQS's stand-in, not counted): RSS ${f(v.slopes.backendRss)} MB/min`) +
    (v.processes === null ? '' : `; ${processDetail(v.processes, f)}`)
  )
}

function processDetail(p: NonNullable<MemoryVerdict['processes']>, f: (x: number | null) => string): string {
  const byRole = ROLES.map((role) => {
    const own = p.throughout.filter((e) => e.role === role)
    if (!own.length) return null
    const each = own.map((e) => `${f(e.rssLessYoung)} (RSS ${f(e.rss)}, heap ${f(e.heap)}, non-heap ${f(e.nonHeap)}; ${f(e.rssFirstMb)} → ${f(e.rssLastMb)} MB; ${e.count} ${e.samples === 'idle' ? 'idle' : 'busy or idle'} samples)`).join(', ')
    return `${role}: ${each}`
  }).filter((x) => x !== null)
  const partial = p.partial.map((e) => `${e.role} ${e.fromSecond}–${e.toSecond} s`).join(', ')
  return (
    `the environments, a process each: ${p.throughout.length} lived through the range, steepest slope of RSS less the young generation ${f(p.maxRssLessYoung)} MB/min; ${byRole.join('; ')}` +
    `; ${p.partial.length} started or ended inside it (their own warm-up, not counted${partial ? `: ${partial}` : ''})` +
    `; every process's RSS summed ${f(p.totalRss)} MB/min`
  )
}
