// The machine and software a benchmark ran on, recorded with its figures so a number is
// never quoted without its context.

import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { availableParallelism, cpus, loadavg, totalmem } from 'node:os'
import { join } from 'node:path'

export interface MachineInfo {
  nproc: number
  cpuModel: string
  memoryGb: number
  node: string
  platform: string
  packages: Record<string, string>
  /** the checked-out commit (and whether lib/ had uncommitted changes): in results files, never in docs */
  gitCommit: string | null
  command: string
  /** 1, 5 and 15-minute load averages when the benchmark started (other work on the cores) */
  loadAvgAtStart: number[]
}

const ROOT = join(import.meta.dirname, '..', '..')

function packageVersion(name: string): string {
  try {
    return (JSON.parse(readFileSync(join(ROOT, 'node_modules', name, 'package.json'), 'utf8')) as { version: string }).version
  } catch {
    return 'not installed'
  }
}

function gitCommit(): string | null {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: ROOT, encoding: 'utf8' }).trim()
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'lib'], { cwd: ROOT, encoding: 'utf8' }).trim() !== ''
    return dirty ? `${head} (lib/ modified)` : head
  } catch {
    return null
  }
}

export function machineInfo(packages: string[]): MachineInfo {
  return {
    nproc: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memoryGb: Math.round((totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    packages: Object.fromEntries(packages.map((p) => [p, packageVersion(p)])),
    gitCommit: gitCommit(),
    command: `npx tsx ${process.argv.slice(1).map((a) => a.replace(ROOT + '/', '')).join(' ')}`,
    loadAvgAtStart: loadavg().map((x) => Math.round(x * 100) / 100),
  }
}

/**
 * The machine and command in words, for docs and console reports. The commit a run measured
 * stays in its JSON results (`gitCommit`): docs state the present and leave history to git.
 */
export function machineMarkdown(m: MachineInfo): string {
  const pk = Object.entries(m.packages).map(([k, v]) => `${k} ${v}`).join(', ')
  return `Machine: ${m.nproc} cores (${m.cpuModel}), ${m.memoryGb} GB, ${m.platform}, Node ${m.node}; ${pk}; load average at start ${m.loadAvgAtStart.join(', ')}.\nCommand: \`${m.command}\``
}
