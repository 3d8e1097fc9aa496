// Rows per second of `strata write` (N rows of JSON lines, one commit) and of a full
// `strata read --json`, on local disk and on the embedded S3 backend, side by side in one
// run. Each measurement runs the CLI's own code in a fresh child process, so its peak RSS
// is its own.
//
//   npx tsx bench/write-read.ts [--rows 1000000] [--runs 3]

import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { peakRssMb } from './lib/child.ts'
import { WRITE_SCHEMA, makeWriteInput } from './lib/json-input.ts'

const args = process.argv.slice(2)
const flag = (name: string, def: number) => {
  const i = args.indexOf(name)
  return i >= 0 ? Number(args[i + 1]) : def
}

async function child(mode: string, table: string, file: string): Promise<void> {
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED = 'true'
  const { main } = await import('../lib/cli/main.ts')
  const write = process.stdout.write.bind(process.stdout)
  let lines = 0
  process.stdout.write = ((chunk: string) => {
    for (let i = 0; i < chunk.length; i++) if (chunk.charCodeAt(i) === 10) lines++
    return true
  }) as typeof process.stdout.write
  const t0 = performance.now()
  const code = mode === 'write' ? await main(['write', table, file]) : await main(['read', table, '--json'])
  const seconds = (performance.now() - t0) / 1000
  process.stdout.write = write
  if (code !== 0) throw new Error(`strata ${mode} exited ${code}`)
  // VmHWM, not resourceUsage().maxRSS, which a child inherits from its parent's peak
  write(JSON.stringify({ seconds, lines, maxRssMb: peakRssMb() }) + '\n')
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

async function parent(): Promise<void> {
  const rows = flag('--rows', 1_000_000)
  const runs = flag('--runs', 3)
  const { startEmbeddedBackend } = await import('../local/embedded.ts')
  const dir = mkdtempSync(join(tmpdir(), 'strata-bench-'))
  const backend = await startEmbeddedBackend()
  await backend.createBucket('bench')
  const input = join(dir, 'rows.jsonl')
  await makeWriteInput(input, rows)
  writeFileSync(join(dir, 'schema.json'), JSON.stringify(WRITE_SCHEMA))
  const env = {
    ...process.env,
    AWS_ENDPOINT_URL: backend.endpoint,
    AWS_REGION: backend.region,
    AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  }
  const results: Record<string, { seconds: number[]; rss: number[] }> = {}
  const { main } = await import('../lib/cli/main.ts')
  try {
    for (let run = 0; run < runs; run++) {
      for (const store of ['local', 's3']) {
        const table = store === 'local' ? join(dir, `t-${run}`) : `s3://bench/t-${run}`
        Object.assign(process.env, env)
        if ((await main(['create', table, '--schema', join(dir, 'schema.json')])) !== 0) throw new Error('create failed')
        for (const mode of ['write', 'read']) {
          // async: the embedded backend serves the child from this process's event loop
          const { stdout: out } = await promisify(execFile)(process.execPath, ['--import', 'tsx', import.meta.filename, '--child', mode, table, input], { env, encoding: 'utf8', maxBuffer: 1 << 20 })
          const r = JSON.parse(out.trim().split('\n').pop()!) as { seconds: number; lines: number; maxRssMb: number }
          if (mode === 'read' && r.lines !== rows) throw new Error(`read returned ${r.lines} rows, expected ${rows}`)
          const key = `${mode} ${store}`
          results[key] ??= { seconds: [], rss: [] }
          results[key].seconds.push(r.seconds)
          results[key].rss.push(r.maxRssMb)
          process.stderr.write(`run ${run + 1}/${runs} ${key}: ${r.seconds.toFixed(2)} s, ${r.maxRssMb.toFixed(0)} MB\n`)
        }
      }
    }
  } finally {
    await backend.stop()
    rmSync(dir, { recursive: true, force: true })
  }
  console.log(`\n${rows} rows, median of ${runs} runs (node ${process.version})\n`)
  console.log('| operation | store | seconds | rows/s | peak RSS (MB) |')
  console.log('| --- | --- | --- | --- | --- |')
  for (const [key, r] of Object.entries(results)) {
    const [mode, store] = key.split(' ')
    const s = median(r.seconds)
    console.log(`| ${mode === 'write' ? '`strata write`' : '`strata read --json`'} | ${store === 's3' ? 'embedded S3' : 'local disk'} | ${s.toFixed(2)} | ${Math.round(rows / s).toLocaleString('en-US')} | ${median(r.rss).toFixed(0)} |`)
  }
}

if (args[0] === '--child') await child(args[1], args[2], args[3])
else await parent()
