// `strata write` of N JSON lines (one commit), a change's before and after side by side in
// one run: rows/s, CPU and peak RSS (VmHWM) of a fresh child process running the CLI's own
// code, on local disk and on the embedded S3 backend (no latency model).
//
// "before" is the source tree of `--before <rev>` (default HEAD~1, the commit before the
// checked-out one), extracted with `git archive` into a temporary directory that borrows this
// checkout's node_modules; "after" is this checkout. Runs alternate before/after so load on
// the machine falls on both alike. --no-before measures this checkout alone.
//
//   npx tsx bench/write.ts [--rows 1000000] [--runs 3] [--before <rev> (default HEAD~1)] [--after <rev>] [--no-before] [--no-s3] [--buffer <size>] [--profile]
//
// --buffer sets the table's write-buffer-size (default: the table default). --heap-mb N runs
// every child with `--max-old-space-size=N`, as a runtime with that much memory sizes V8's heap
// (a child that runs out of heap is reported, not fatal).
//
// --after <rev>[,<rev>…] measures those commits' trees instead of this checkout (whose
// uncommitted changes, anyone's, the default includes).
//
// --profile also runs one local "after" write under `node --cpu-prof` and prints where its
// CPU went.

import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { type ChildReport, reportToParent, runChild, timed } from './lib/child.ts'
import { WRITE_SCHEMA, makeWriteInput } from './lib/json-input.ts'
import { summarizeCpuProfile } from './lib/cpu-profile.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { markdownTable, writeResults } from './lib/report.ts'
import { median, rate } from './lib/stats.ts'

const ROOT = join(import.meta.dirname, '..')
/** The tree measured as "before" when --before names none: the commit before the checked-out one. */
const DEFAULT_BEFORE = 'HEAD~1'
const PACKAGES = ['hyparquet', 'hyparquet-writer', 'fauxqs', '@aws-sdk/client-s3', 'tsx']

interface WriteReport extends ChildReport {
  snapshot: string
}

// ---------------------------------------------------------------------------------------------
// Child: one `strata write` with the given source tree's CLI

async function childMain(argv: string[]): Promise<void> {
  const [root, table, file] = argv
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const { main } = (await import(pathToFileURL(join(root, 'lib/cli/main.ts')).href)) as { main: (argv: string[]) => Promise<number> }
  const write = process.stdout.write.bind(process.stdout)
  let printed = ''
  process.stdout.write = ((chunk: string) => {
    printed += chunk
    return true
  }) as typeof process.stdout.write
  const { value: code, seconds, cpuSeconds } = await timed(() => main(['write', table, file]))
  process.stdout.write = write
  if (code !== 0) throw new Error(`strata write exited ${code}`)
  reportToParent({ seconds, cpuSeconds, snapshot: printed.trim() })
}

// ---------------------------------------------------------------------------------------------
// Parent

/** The source tree of `rev` in a temporary directory, with this checkout's node_modules. */
function extractTree(rev: string, dir: string): string {
  mkdirSync(dir, { recursive: true })
  const tar = execFileSync('git', ['archive', '--format=tar', rev, 'lib', 'bin', 'package.json', 'tsconfig.json'], { cwd: ROOT, maxBuffer: 256 << 20 })
  execFileSync('tar', ['-x', '-C', dir], { input: tar })
  symlinkSync(join(ROOT, 'node_modules'), join(dir, 'node_modules'))
  return dir
}

function dataFiles(dir: string): number {
  let n = 0
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) if (e.isFile() && e.name.startsWith('data-') && e.name.endsWith('.parquet')) n++
  return n
}

async function parentMain(args: string[]): Promise<void> {
  const flag = (name: string, def: number) => {
    const i = args.indexOf(name)
    return i >= 0 ? Number(args[i + 1]) : def
  }
  const rows = flag('--rows', 1_000_000)
  const runs = flag('--runs', 3)
  const beforeRev = args.includes('--before') ? args[args.indexOf('--before') + 1] : DEFAULT_BEFORE
  const withBefore = !args.includes('--no-before')
  const withS3 = !args.includes('--no-s3')
  const machine = machineInfo(PACKAGES)
  const dir = mkdtempSync(join(tmpdir(), 'strata-bench-write-'))
  const trees: { name: string; root: string }[] = []
  if (withBefore) trees.push({ name: `before (${beforeRev})`, root: extractTree(beforeRev, join(dir, 'before')) })
  // --after a,b,c: several commits' trees side by side
  const afterRevs = args.includes('--after') ? args[args.indexOf('--after') + 1].split(',') : []
  if (afterRevs.length === 0) trees.push({ name: 'after', root: ROOT })
  for (const rev of afterRevs) trees.push({ name: `after (${rev})`, root: extractTree(rev, join(dir, `after-${rev}`)) })
  const input = join(dir, 'rows.jsonl')
  await makeWriteInput(input, rows)
  const buffer = args.includes('--buffer') ? args[args.indexOf('--buffer') + 1] : null
  writeFileSync(join(dir, 'schema.json'), JSON.stringify(buffer ? { ...WRITE_SCHEMA, options: { ...WRITE_SCHEMA.options, 'write-buffer-size': buffer } } : WRITE_SCHEMA))

  const { startEmbeddedBackend } = await import('../local/embedded.ts')
  const backend = withS3 ? await startEmbeddedBackend() : null
  if (backend) await backend.createBucket('bench')
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
    ...(backend
      ? { AWS_ENDPOINT_URL: backend.endpoint, AWS_REGION: backend.region, AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey }
      : {}),
  }
  Object.assign(process.env, env)
  const { main } = await import('../lib/cli/main.ts')
  const stores = withS3 ? ['local', 's3'] : ['local']
  const heapMb = args.includes('--heap-mb') ? Number(args[args.indexOf('--heap-mb') + 1]) : null
  const results: Record<string, { seconds: number[]; cpuSeconds: number[]; peakRssMb: number[]; files: number[]; failed?: number }> = {}
  let n = 0
  try {
    for (let run = 0; run < runs; run++) {
      for (const store of stores) {
        // alternate the order, so no tree always runs first
        const order = run % 2 === 0 ? trees : [...trees].reverse()
        for (const tree of order) {
          const local = join(dir, `t-${n}`)
          const table = store === 'local' ? local : `s3://bench/t-${n}`
          n++
          if ((await main(['create', table, '--schema', join(dir, 'schema.json')])) !== 0) throw new Error('create failed')
          let r: WriteReport
          try {
            r = await runChild<WriteReport>(import.meta.filename, [tree.root, table, input], { env, nodeArgs: heapMb ? [`--max-old-space-size=${heapMb}`] : [] })
          } catch (e) {
            if (!heapMb) throw e
            const oom = /heap out of memory/i.test((e as Error).message)
            process.stderr.write(`run ${run + 1}/${runs} ${tree.name} ${store}: failed${oom ? ' (JavaScript heap out of memory)' : `: ${(e as Error).message.split('\n')[0]}`}\n`)
            const key = `${tree.name}|${store}`
            results[key] ??= { seconds: [], cpuSeconds: [], peakRssMb: [], files: [] }
            results[key].failed = (results[key].failed ?? 0) + 1
            if (store === 'local') rmSync(local, { recursive: true, force: true })
            continue
          }
          if (r.snapshot !== '1') throw new Error(`${tree.name}: strata write printed ${JSON.stringify(r.snapshot)}, expected snapshot 1 (one commit)`)
          const files = store === 'local' ? dataFiles(local) : NaN
          const key = `${tree.name}|${store}`
          results[key] ??= { seconds: [], cpuSeconds: [], peakRssMb: [], files: [] }
          results[key].seconds.push(r.seconds)
          results[key].cpuSeconds.push(r.cpuSeconds)
          results[key].peakRssMb.push(r.peakRssMb)
          results[key].files.push(files)
          process.stderr.write(`run ${run + 1}/${runs} ${tree.name} ${store}: ${r.seconds.toFixed(2)} s (${rate(rows, r.seconds)} rows/s), CPU ${r.cpuSeconds.toFixed(2)} s, peak RSS ${r.peakRssMb.toFixed(0)} MB, load ${r.loadAvg.toFixed(2)}${store === 'local' ? `, ${files} data files` : ''}\n`)
          if (store === 'local') rmSync(local, { recursive: true, force: true })
        }
      }
    }
    let profile = ''
    if (args.includes('--profile')) {
      const profDir = join(dir, 'prof')
      const table = join(dir, 't-prof')
      await main(['create', table, '--schema', join(dir, 'schema.json')])
      await runChild<WriteReport>(import.meta.filename, [trees[trees.length - 1].root, table, input], { env, nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${profDir}`] })
      const prof = readdirSync(profDir).find((f) => f.endsWith('.cpuprofile'))!
      const s = summarizeCpuProfile(join(profDir, prof), 20)
      profile = `\nCPU profile of one local write (after), ${s.totalMs} ms sampled:\n\n` +
        markdownTable(['category', 'ms', '%'], s.byCategory.map((c) => [c.name, c.ms, c.percent])) + '\n\n' +
        markdownTable(['function', 'ms', '%'], s.byFunction.map((c) => [c.name, c.ms, c.percent]))
    }
    const table = Object.entries(results).map(([key, r]) => {
      const [tree, store] = key.split('|')
      const where = store === 's3' ? 'embedded S3' : 'local disk'
      if (r.seconds.length === 0) return [`\`strata write\` ${tree}`, where, `failed ${r.failed} of ${r.failed} (heap out of memory)`, '-', '-', '-', '-']
      const s = median(r.seconds)
      return [`\`strata write\` ${tree}`, where, s.toFixed(2), rate(rows, s), median(r.cpuSeconds).toFixed(2), median(r.peakRssMb).toFixed(0), store === 's3' ? '-' : String(median(r.files))]
    })
    console.log(`\n${machineMarkdown(machine)}\n\n${rows.toLocaleString('en-US')} rows, median of ${runs} runs${heapMb ? `, children run with --max-old-space-size=${heapMb}` : ''}${buffer ? `, write-buffer-size ${buffer}` : ''}\n`)
    console.log(markdownTable(['write', 'store', 'seconds', 'rows/s', 'CPU s', 'peak RSS (MB)', 'data files'], table))
    if (profile) console.log(profile)
    console.log(`\nfigures: ${writeResults('write', { machine, rows, runs, results })}`)
  } finally {
    await backend?.stop()
    rmSync(dir, { recursive: true, force: true })
  }
}

const argv = process.argv.slice(2)
if (argv[0] === '--child') await childMain(argv.slice(1))
else await parentMain(argv)
