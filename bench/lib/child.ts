// Every measurement runs in a fresh child process (the benchmark script itself with
// `--child …`), so no heap state of an earlier job leaks into it.
//
// Its peak RSS is read from /proc/self/status VmHWM, not `process.resourceUsage().maxRSS`:
// on Linux, getrusage's ru_maxrss survives execve and starts from the high-water mark of the
// forked copy of the parent, so a child spawned by a parent holding 800 MB reports at least
// 800 MB however little it uses (checked here on Node 20: an idle child of a parent with an
// 800 MB buffer reports maxRSS 804 MB, VmHWM 140 MB). VmHWM belongs to the exec'd image only.

import { execFile } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { promisify } from 'node:util'

export interface ChildReport {
  /** wall-clock seconds of the measured job */
  seconds: number
  /**
   * user + system CPU seconds of the child during the job: less sensitive than wall time to
   * other processes sharing the cores (and above it when the job runs threads, as DuckDB does)
   */
  cpuSeconds: number
  /** peak resident set of the child's own image (VmHWM), MB, modules and table open included */
  peakRssMb: number
  /** `process.resourceUsage().maxRSS` in MB, which includes the parent's RSS at fork (see above) */
  maxRssMb: number
  /** 1-minute load average when the job ended, to spot a run disturbed by other work */
  loadAvg: number
}

export interface RunChildOptions {
  env?: NodeJS.ProcessEnv
  /** node options before the script, e.g. `--cpu-prof` */
  nodeArgs?: string[]
  /** a built JavaScript file run as it is: no tsx, no `--child` before the arguments */
  built?: boolean
}

/**
 * Runs `script --child ...args` under tsx (with `built`, a built `script ...args` as it is)
 * and parses the last stdout line as JSON. Async on purpose: the embedded S3 backend serves
 * the child from this process's event loop.
 */
export async function runChild<T extends ChildReport>(script: string, args: string[], opts: RunChildOptions = {}): Promise<T> {
  const argv = opts.built ? [...(opts.nodeArgs ?? []), script, ...args] : [...(opts.nodeArgs ?? []), '--import', 'tsx', script, '--child', ...args]
  let stdout: string
  try {
    ;({ stdout } = await promisify(execFile)(process.execPath, argv, { env: opts.env ?? process.env, encoding: 'utf8', maxBuffer: 16 << 20 }))
  } catch (e) {
    const err = e as Error & { stderr?: string }
    throw new Error(`child ${args.join(' ')} failed: ${err.message}\n${err.stderr ?? ''}`)
  }
  const last = stdout.trim().split('\n').pop() ?? ''
  try {
    return JSON.parse(last) as T
  } catch {
    throw new Error(`child ${args.join(' ')} printed no JSON report; its last line was ${JSON.stringify(last)}`)
  }
}

/** User + system seconds of a `process.cpuUsage()` reading. */
export function cpuSecondsOf(usage: NodeJS.CpuUsage): number {
  return (usage.user + usage.system) / 1e6
}

/**
 * CPU seconds the calling thread has run (Linux: /proc/thread-self/schedstat), or null: on a
 * loaded machine, the main thread's CPU time follows its critical path better than wall time.
 */
export function mainThreadCpuSeconds(): number | null {
  try {
    return Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e9
  } catch {
    return null
  }
}

/** Runs the measured job, timing it in wall-clock and CPU seconds. */
export async function timed<T>(job: () => Promise<T>): Promise<{ value: T; seconds: number; cpuSeconds: number }> {
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const value = await job()
  const seconds = (performance.now() - t0) / 1000
  return { value, seconds, cpuSeconds: cpuSecondsOf(process.cpuUsage(cpu0)) }
}

/** VmHWM of this process in MB; maxRSS where there is no /proc (not Linux). */
export function peakRssMb(): number {
  try {
    const m = /^VmHWM:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))
    if (m) return Number(m[1]) / 1024
  } catch {
    // no procfs
  }
  return process.resourceUsage().maxRSS / 1024
}

/** The child's side: one JSON line with the job's figures and the process's peak RSS. */
export function reportToParent(fields: Record<string, unknown> & { seconds: number; cpuSeconds: number }): void {
  const report = { ...fields, peakRssMb: peakRssMb(), maxRssMb: process.resourceUsage().maxRSS / 1024, loadAvg: loadavg()[0] }
  const json = JSON.stringify(report, (_, v) => (typeof v === 'bigint' ? Number(v) : v))
  process.stdout.write(json + '\n')
}
