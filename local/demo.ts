// `npm run demo`: a CLI round trip on the embedded S3 backend, no AWS account needed.
// Starts fauxqs on 127.0.0.1 with the conditional-write hook, creates a partitioned table
// under s3://strata-demo/orders, writes three commits through the `strata` CLI code
// (inserts, an update, a delete), reads, time-travels, looks up a key, prints status and
// checks that the reads equal what was written. Exits non-zero if a check fails.

import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startEmbeddedBackend, selfTestConditionalWrites } from './embedded.ts'

process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true'
const BUCKET = 'strata-demo'
const TABLE = `s3://${BUCKET}/orders`

async function captureStdout(fn: () => Promise<number>): Promise<{ code: number; out: string }> {
  const write = process.stdout.write.bind(process.stdout)
  let out = ''
  process.stdout.write = ((chunk: string | Uint8Array) => {
    out += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString()
    return true
  }) as typeof process.stdout.write
  try {
    return { code: await fn(), out }
  } finally {
    process.stdout.write = write
  }
}

function say(s: string): void {
  process.stdout.write(s + '\n')
}

async function main(): Promise<number> {
  const backend = await startEmbeddedBackend()
  const dir = mkdtempSync(join(tmpdir(), 'strata-demo-'))
  try {
    await backend.createBucket(BUCKET)
    await selfTestConditionalWrites(backend)
    process.env.AWS_ENDPOINT_URL = backend.endpoint
    process.env.AWS_REGION = backend.region
    process.env.AWS_ACCESS_KEY_ID = backend.credentials.accessKeyId
    process.env.AWS_SECRET_ACCESS_KEY = backend.credentials.secretAccessKey
    const { main: strata } = await import('../lib/cli/main.ts')
    const run = async (args: string[], echo = true) => {
      const r = await captureStdout(() => strata(args))
      if (echo) say(`$ strata ${args.map((a) => (/[\s{"]/.test(a) ? `'${a}'` : a)).join(' ')}\n${r.out.trimEnd()}`)
      if (r.code !== 0 && args[0] !== 'lookup') throw new Error(`strata ${args[0]} failed with exit code ${r.code}`)
      return r
    }
    say(`embedded S3 at ${backend.endpoint} (fauxqs, loopback only); conditional-write self-test passed\n`)

    writeFileSync(
      join(dir, 'schema.json'),
      JSON.stringify({
        fields: [
          { name: 'dt', type: 'STRING' },
          { name: 'order_id', type: 'BIGINT' },
          { name: 'customer', type: 'STRING' },
          { name: 'amount', type: 'DECIMAL(10, 2)' },
          { name: 'updated_at', type: 'TIMESTAMP(3)' },
        ],
        primaryKeys: ['dt', 'order_id'],
        partitionKeys: ['dt'],
        options: { bucket: '4' },
      }),
    )
    const expected = new Map<string, Record<string, unknown>>()
    const batch1: Record<string, unknown>[] = []
    for (let i = 1; i <= 200; i++) {
      batch1.push({
        dt: i % 2 ? '2026-12-01' : '2026-12-02',
        order_id: i,
        customer: `customer-${i % 17}`,
        amount: (i * 3.5).toFixed(2),
        updated_at: '2026-12-01 09:00:00.000',
      })
    }
    const batch2 = [
      { dt: '2026-12-01', order_id: 1, customer: 'customer-1', amount: '99.99', updated_at: '2026-12-01 10:00:00.000', _kind: '+U' },
      { dt: '2026-12-02', order_id: 2, _kind: '-D' },
    ]
    const batch3 = [{ dt: '2026-12-02', order_id: 1000, customer: 'late', amount: '1.00', updated_at: '2026-12-02 23:59:59.999' }]
    const files = [batch1, batch2, batch3].map((b, i) => {
      const f = join(dir, `batch-${i + 1}.jsonl`)
      writeFileSync(f, b.map((r) => JSON.stringify(r)).join('\n') + '\n')
      return f
    })

    await run(['create', TABLE, '--schema', join(dir, 'schema.json')])
    for (const [i, f] of files.entries()) {
      await run(['write', TABLE, f])
      for (const r of [batch1, batch2, batch3][i] as Record<string, unknown>[]) {
        const key = `${r.dt}|${r.order_id}`
        if (r._kind === '-D') expected.delete(key)
        else expected.set(key, r)
      }
    }

    const latest = await run(['read', TABLE, '--json'], false)
    const rows = latest.out.trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>)
    const snap1 = await run(['read', TABLE, '--json', '--snapshot', '1', '--columns', 'order_id'], false)
    await run(['lookup', TABLE, '--key', '{"dt":"2026-12-01","order_id":1}', '--json'])
    await run(['lookup', TABLE, '--key', '{"dt":"2026-12-02","order_id":2}'])
    await run(['status', TABLE])

    // check: the latest read holds exactly the rows written, each once, with its last value
    const problems: string[] = []
    const seen = new Set<string>()
    for (const r of rows) {
      const key = `${r.dt}|${r.order_id}`
      if (seen.has(key)) problems.push(`row ${key} read twice`)
      seen.add(key)
      const want = expected.get(key)
      if (!want) problems.push(`row ${key} read but not expected`)
      else if (Number(want.amount) !== Number(r.amount) || want.customer !== r.customer) problems.push(`row ${key} has stale values`)
    }
    for (const key of expected.keys()) if (!seen.has(key)) problems.push(`row ${key} lost`)
    const snap1Count = snap1.out.trim().split('\n').length
    if (snap1Count !== 200) problems.push(`snapshot 1 read ${snap1Count} rows, expected 200`)

    say('')
    say(`wrote 3 commits (${batch1.length} inserts; 1 update and 1 delete; 1 late insert) to ${TABLE}`)
    say(`latest snapshot reads ${rows.length} rows (expected ${expected.size}); snapshot 1 reads ${snap1Count} (time travel)`)
    if (problems.length) {
      say(`CHECK FAILED:\n  ${problems.slice(0, 10).join('\n  ')}`)
      return 1
    }
    say('check passed: none lost, none twice, every row at its latest value')
    return 0
  } finally {
    rmSync(dir, { recursive: true, force: true })
    await backend.stop()
  }
}

main().then(
  (code) => process.exit(code),
  (e) => {
    process.stderr.write(`demo failed: ${(e as Error).message}\n`)
    process.exit(1)
  },
)
