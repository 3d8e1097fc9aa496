// One write touching N partitions, and a full read of the table it made: time, CPU and peak
// RSS (VmHWM) at each N, to show how their cost grows with the number of partitions.
//
// The table is partitioned by one INT column `p` with one bucket per partition; the write is
// one StrataTable.write (one commit) of `--rows-per-partition` rows (default 1) into each of N
// partitions, then a fresh process opens the table and reads every row. Every write and read
// runs in a fresh child process on a local-disk table (a temporary directory), so nothing of
// an earlier size stays in its heap.
//
//   npx tsx bench/scaling-partitions.ts [--sizes 1000,3000,10000,30000,100000] [--quick] [--rows-per-partition 1] [--buffer <write-buffer-size>] [--tree <rev>] [--live] [--profile]
//
// --quick stops at 10k partitions. --buffer sets the table's write-buffer-size. --tree <rev>
// measures that commit's lib/ (extracted with `git archive`) instead of this checkout, for a
// before/after. --live also reports each child's live heap: the most `heapUsed` after a full
// collection, sampled every 1,000 records written or rows read and every second while the job
// waits on the store (so the commit's peak is seen too); it costs CPU, so compare CPU seconds
// without it. --profile writes a CPU profile of each child's job to bench/out/ and prints
// its top functions.

import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { parseBenchArgs } from './lib/args.ts'
import { type ChildReport, reportToParent, runChild, timed } from './lib/child.ts'
import { summarizeCpuProfile } from './lib/cpu-profile.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { markdownTable, writeResults } from './lib/report.ts'

const ROOT = join(import.meta.dirname, '..')
const DEFAULT_SIZES = [1_000, 3_000, 10_000, 30_000, 100_000]

interface JobReport extends ChildReport {
  rows: number
  /** --live: the most heap in use after a full collection, sampled (MB) */
  liveMb?: number
  files?: number
}

type Api = typeof import('../lib/api/index.ts')

// ---------------------------------------------------------------------------------------------
// Child: the write, or the read, of one size

async function childMain(argv: string[]): Promise<void> {
  const [job, root, table, partitionsArg, rowsArg, buffer, liveArg] = argv
  // --live: heap in use after a full collection, at most, over the samples
  const gc = liveArg === 'live' ? (globalThis as { gc?: () => void }).gc : undefined
  let live = 0
  const sample = () => {
    if (!gc) return
    gc()
    live = Math.max(live, process.memoryUsage().heapUsed)
  }
  const liveMb = () => (gc ? { liveMb: live / 1e6 } : {})
  const timer = gc ? setInterval(sample, 1000) : undefined
  timer?.unref()
  const api = (await import(pathToFileURL(join(root, 'lib/api/index.ts')).href)) as Api
  const partitions = Number(partitionsArg)
  const perPartition = Number(rowsArg)
  if (job === 'write') {
    const t = await api.createTable(table, {
      fields: [
        { name: 'p', type: 'INT NOT NULL' },
        { name: 'id', type: 'BIGINT NOT NULL' },
        { name: 'name', type: 'STRING' },
        { name: 'amount', type: 'DOUBLE' },
      ],
      primaryKeys: ['p', 'id'],
      partitionKeys: ['p'],
      options: { bucket: '1', ...(buffer !== '-' ? { 'write-buffer-size': buffer } : {}) },
    })
    function* records() {
      let n = 0
      for (let p = 0; p < partitions; p++) {
        for (let i = 0; i < perPartition; i++) {
          if (n++ % 1000 === 0) sample()
          yield { p, id: BigInt(i), name: `row ${p}/${i}`, amount: p + i / 100 }
        }
      }
    }
    const { value, seconds, cpuSeconds } = await timed(() => t.write(records()))
    sample()
    reportToParent({ seconds, cpuSeconds, rows: partitions * perPartition, snapshotId: (value as { snapshotId: number }).snapshotId, ...liveMb() })
    return
  }
  const t = await api.openTable(table)
  const { value: rows, seconds, cpuSeconds } = await timed(async () => {
    let n = 0
    for await (const _ of t.read()) if (n++ % 1000 === 0) sample()
    return n
  })
  if (rows !== partitions * perPartition) throw new Error(`read ${rows} rows, expected ${partitions * perPartition}`)
  reportToParent({ seconds, cpuSeconds, rows, ...liveMb() })
}

// ---------------------------------------------------------------------------------------------
// Parent

function extractTree(rev: string, dir: string): string {
  mkdirSync(dir, { recursive: true })
  const tar = execFileSync('git', ['archive', '--format=tar', rev, 'lib', 'package.json', 'tsconfig.json'], { cwd: ROOT, maxBuffer: 256 << 20 })
  execFileSync('tar', ['-x', '-C', dir], { input: tar })
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  return dir
}

function countFiles(dir: string, suffix: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile() && e.name.endsWith(suffix)) n++
  return n
}

async function parentMain(argv: string[]): Promise<void> {
  const args = parseBenchArgs(argv, ['--quick', '--profile', '--live'], ['--rows-per-partition'], ['--sizes', '--buffer', '--tree'])
  const sizesArg = args.str('--sizes', '')
  let sizes = sizesArg ? sizesArg.split(',').map(Number) : DEFAULT_SIZES
  if (args.has('--quick')) sizes = sizes.filter((n) => n <= 10_000)
  const perPartition = args.num('--rows-per-partition', 1)
  const buffer = args.str('--buffer', '-')
  const machine = machineInfo(['hyparquet', 'hyparquet-writer', 'avsc', 'tsx'])
  const dir = mkdtempSync(join(tmpdir(), 'strata-bench-partitions-'))
  const treeRev = args.str('--tree', '') || null
  const root = treeRev ? extractTree(treeRev, join(dir, 'tree')) : ROOT
  const profDir = join(ROOT, 'bench', 'out', 'scaling-partitions-prof')
  const results: { partitions: number; write: JobReport; read: JobReport; dataFiles: number; manifests: number }[] = []
  try {
    for (const n of sizes) {
      const table = join(dir, `t-${n}`)
      const live = args.has('--live')
      const common = [root, table, String(n), String(perPartition), buffer, live ? 'live' : '-']
      const nodeArgs = (job: string) => [...(live ? ['--expose-gc'] : []), ...(args.has('--profile') ? ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${job}-${n}.cpuprofile`] : [])]
      const write = await runChild<JobReport>(import.meta.filename, ['write', ...common], { nodeArgs: nodeArgs('write') })
      const dataFiles = countFiles(table, '.parquet')
      const manifests = readdirSync(join(table, 'manifest')).filter((f) => f.startsWith('manifest-') && !f.startsWith('manifest-list')).length
      const liveNote = (r: JobReport) => (r.liveMb !== undefined ? `, live heap ${r.liveMb.toFixed(0)} MB` : '')
      process.stderr.write(`${n} partitions: write ${write.seconds.toFixed(2)} s, CPU ${write.cpuSeconds.toFixed(2)} s, peak RSS ${write.peakRssMb.toFixed(0)} MB${liveNote(write)}, load ${write.loadAvg.toFixed(2)}; ${dataFiles} data files, ${manifests} manifests\n`)
      const read = await runChild<JobReport>(import.meta.filename, ['read', ...common], { nodeArgs: nodeArgs('read') })
      process.stderr.write(`${n} partitions: read ${read.seconds.toFixed(2)} s, CPU ${read.cpuSeconds.toFixed(2)} s, peak RSS ${read.peakRssMb.toFixed(0)} MB${liveNote(read)}, load ${read.loadAvg.toFixed(2)}\n`)
      results.push({ partitions: n, write, read, dataFiles, manifests })
      rmSync(table, { recursive: true, force: true })
      if (args.has('--profile')) {
        for (const job of ['write', 'read']) {
          const s = summarizeCpuProfile(join(profDir, `${job}-${n}.cpuprofile`), 12)
          console.log(`\nCPU profile, ${job} of ${n} partitions (${s.totalMs} ms sampled):\n\n` + markdownTable(['function', 'ms', '%'], s.byFunction.map((c) => [c.name, c.ms, c.percent])))
        }
      }
    }
    const us = (s: number, n: number) => ((s / n) * 1e6).toFixed(0)
    console.log(`\n${machineMarkdown(machine)}\n\nOne write of ${perPartition} row(s) into each of N partitions (one bucket each), local disk${buffer !== '-' ? `, write-buffer-size ${buffer}` : ''}${treeRev ? `, tree ${treeRev}` : ''}\n`)
    console.log(
      markdownTable(
        ['partitions', 'write s', 'write CPU s', 'µs per partition', 'write peak RSS (MB)', 'write live (MB)', 'read s', 'read CPU s', 'read peak RSS (MB)', 'read live (MB)', 'data files', 'manifests', 'load'],
        results.map((r) => [r.partitions.toLocaleString('en-US'), r.write.seconds.toFixed(2), r.write.cpuSeconds.toFixed(2), us(r.write.seconds, r.partitions), r.write.peakRssMb.toFixed(0), r.write.liveMb?.toFixed(0) ?? '-', r.read.seconds.toFixed(2), r.read.cpuSeconds.toFixed(2), r.read.peakRssMb.toFixed(0), r.read.liveMb?.toFixed(0) ?? '-', String(r.dataFiles), String(r.manifests), r.read.loadAvg.toFixed(2)]),
      ),
    )
    console.log(`\nfigures: ${writeResults('scaling-partitions', { machine, perPartition, buffer, tree: treeRev, results })}`)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

const argv = process.argv.slice(2)
if (argv[0] === '--child') await childMain(argv.slice(1))
else await parentMain(argv)
