// Smoke test of a stack deployed into LocalStack by `npm run deploy:local`: writes orders
// through the deployed ingest queue (and one bad record), waits until the writer has
// committed them and the compactor has made them visible to deletion-vector readers,
// updates some of them, waits again, then reads the table back through the library and
// through the reader's Function URL (SigV4-signed), and checks the rows, the reject and
// that every DLQ is empty. Exits non-zero on the first failed check.
//
// LocalStack needs Docker, which the project machines do not have: this script is outside
// `npm test` and CI and has not been run here. On an x86-64 host, LocalStack must run with
// LAMBDA_IGNORE_ARCHITECTURE=1, since every function is arm64 (see scripts/deploy-local.sh).
//
//   npm run smoke:local          (after npm run deploy:local)
//   env: AWS_ENDPOINT_URL (default http://localhost:4566), STRATA_SMOKE_TIMEOUT_S (300),
//        STRATA_OUTPUTS (.tmp/localstack-outputs.json), STRATA_CONFIG (cdk/strata.config.json)

import { createHash, createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { GetQueueAttributesCommand, SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs'
import { loadDeployConfig } from '../cdk/config.ts'
import { readAll } from '../lib/read/table-read.ts'
import { S3Store, clientFromEnvironment } from '../lib/store/s3-store.ts'
import { rowToJsonLine } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'

process.env.AWS_ENDPOINT_URL ??= 'http://localhost:4566'
process.env.AWS_REGION ??= process.env.AWS_DEFAULT_REGION ?? 'us-east-1'
process.env.AWS_ACCESS_KEY_ID ??= 'test'
process.env.AWS_SECRET_ACCESS_KEY ??= 'test'
const REGION = process.env.AWS_REGION
const TIMEOUT_MS = Number(process.env.STRATA_SMOKE_TIMEOUT_S ?? 300) * 1000

// the commonest reason nothing happens at all: the functions are arm64 (docs/operations.md,
// "LocalStack"), and LocalStack on an x86-64 host runs them as arm64 unless told otherwise
const ARCH_HINT =
  "if the writer or compactor never ran, look at LocalStack's log for Lambda start failures: on an x86-64 host LocalStack needs LAMBDA_IGNORE_ARCHITECTURE=1 to run Strata's arm64 functions (npm run deploy:local checks it)"

function fail(message: string): never {
  console.error(`smoke-local: FAILED: ${message}`)
  process.exit(1)
}

const config = loadDeployConfig(process.env.STRATA_CONFIG ?? 'cdk/strata.config.json')
const outputsPath = process.env.STRATA_OUTPUTS ?? '.tmp/localstack-outputs.json'
let outputs: Record<string, string>
try {
  outputs = JSON.parse(readFileSync(outputsPath, 'utf8'))[config.stackName]
} catch (e) {
  fail(`cannot read the stack outputs at ${outputsPath} (${(e as Error).message}); run npm run deploy:local first`)
}
if (!outputs) fail(`${outputsPath} has no outputs of stack ${config.stackName}`)
const ingestUrl = outputs.IngestQueueUrl ?? fail('the stack has no IngestQueueUrl output: the smoke test writes through an SQS ingest source')

const tableConfig = config.tables[0]
const names = tableConfig.schema.fields.map((f) => f.name)
for (const need of ['dt', 'order_id', 'customer', 'amount', 'updated_at']) {
  if (!names.includes(need)) fail(`the first table '${tableConfig.name}' has no field '${need}'; the smoke test writes the example 'orders' table of cdk/strata.config.json`)
}
const tableKey = Object.keys(outputs).find((k) => k.endsWith('Uri') && outputs[k].endsWith(`/tables/${tableConfig.name}`))
if (!tableKey) fail(`no output names the location of table '${tableConfig.name}'`)
const uri = outputs[tableKey]
const [bucket, ...prefix] = uri.slice('s3://'.length).split('/')

const sqs = new SQSClient({ endpoint: process.env.AWS_ENDPOINT_URL, region: REGION, useQueueUrlAsEndpoint: false })
const s3 = clientFromEnvironment(REGION)
const store = new S3Store({ bucket, prefix: prefix.join('/'), client: s3 })

interface Order {
  dt: string
  order_id: number
  customer: string
  amount: string
  updated_at: string
}

const runId = Date.now()
const order = (i: number, version: number): Order => ({
  dt: i % 2 ? '2024-05-01' : '2024-05-02',
  order_id: runId * 1000 + i,
  customer: `customer-${i}-v${version}`,
  amount: `${10 + i}.${String(version).padStart(2, '0')}`,
  updated_at: `2024-05-0${1 + (i % 2)} 10:00:0${version}.000`,
})

async function send(bodies: string[]): Promise<void> {
  for (let i = 0; i < bodies.length; i += 10) {
    const res = await sqs.send(new SendMessageBatchCommand({ QueueUrl: ingestUrl, Entries: bodies.slice(i, i + 10).map((b, j) => ({ Id: String(j), MessageBody: b })) }))
    if (res.Failed?.length) fail(`SendMessageBatch refused ${res.Failed.length} messages: ${JSON.stringify(res.Failed)}`)
  }
}

/** This run's rows as deletion-vector readers see them, by order id. */
async function visibleRows(): Promise<Map<number, Record<string, unknown>>> {
  const table = await Table.open(store)
  const fields = table.view.fields
  const idx = fields.map((_, i) => i)
  const out = new Map<number, Record<string, unknown>>()
  for (const row of await readAll(table)) {
    const obj = JSON.parse(rowToJsonLine(fields, idx, row)) as Record<string, unknown>
    const id = Number(obj.order_id)
    if (Math.floor(id / 1000) === runId) out.set(id, obj)
  }
  return out
}

function matches(rows: Map<number, Record<string, unknown>>, expected: Order[]): string | null {
  if (rows.size !== expected.length) return `${rows.size} of ${expected.length} rows visible`
  for (const e of expected) {
    const r = rows.get(e.order_id)
    if (!r) return `order ${e.order_id} missing`
    if (r.customer !== e.customer || Number(r.amount) !== Number(e.amount)) return `order ${e.order_id} is ${JSON.stringify(r)}, expected ${JSON.stringify(e)}`
  }
  return null
}

async function waitFor(what: string, check: () => Promise<string | null>): Promise<void> {
  const started = Date.now()
  let last: string | null = 'not checked yet'
  while (Date.now() - started < TIMEOUT_MS) {
    try {
      last = await check()
    } catch (e) {
      last = (e as Error).message
    }
    if (last === null) {
      console.log(`smoke-local: ${what} after ${((Date.now() - started) / 1000).toFixed(1)} s`)
      return
    }
    await new Promise((r) => setTimeout(r, 2000))
  }
  fail(`${what}: not reached within ${TIMEOUT_MS / 1000} s (last: ${last}); ${ARCH_HINT}`)
}

/** A SigV4-signed GET (service lambda), as a Function URL with AWS_IAM auth requires. */
async function signedGet(url: URL): Promise<Response> {
  const now = new Date().toISOString().replace(/[-:]/g, '').replace(/\.\d{3}/, '')
  const day = now.slice(0, 8)
  const hash = (s: string) => createHash('sha256').update(s).digest('hex')
  const hmac = (k: string | Buffer, s: string) => createHmac('sha256', k).update(s).digest()
  const enc = (s: string) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  const query = [...url.searchParams.entries()].map(([k, v]) => `${enc(k)}=${enc(v)}`).sort().join('&')
  const headers: Record<string, string> = { host: url.host, 'x-amz-date': now, 'x-amz-content-sha256': hash('') }
  if (process.env.AWS_SESSION_TOKEN) headers['x-amz-security-token'] = process.env.AWS_SESSION_TOKEN
  const signed = Object.keys(headers).sort()
  const canonical = ['GET', url.pathname || '/', query, ...signed.map((h) => `${h}:${headers[h]}`), '', signed.join(';'), hash('')].join('\n')
  const scope = `${day}/${REGION}/lambda/aws4_request`
  const toSign = ['AWS4-HMAC-SHA256', now, scope, hash(canonical)].join('\n')
  let key = hmac(`AWS4${process.env.AWS_SECRET_ACCESS_KEY}`, day)
  for (const part of [REGION, 'lambda', 'aws4_request']) key = hmac(key, part)
  const signature = createHmac('sha256', key).update(toSign).digest('hex')
  headers.authorization = `AWS4-HMAC-SHA256 Credential=${process.env.AWS_ACCESS_KEY_ID}/${scope}, SignedHeaders=${signed.join(';')}, Signature=${signature}`
  const { host: _host, ...sent } = headers
  return fetch(url, { headers: sent })
}

async function queueDepth(url: string): Promise<number> {
  const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: url, AttributeNames: ['ApproximateNumberOfMessages', 'ApproximateNumberOfMessagesNotVisible'] }))
  return Number(a.Attributes?.ApproximateNumberOfMessages ?? 0) + Number(a.Attributes?.ApproximateNumberOfMessagesNotVisible ?? 0)
}

console.log(`smoke-local: table '${tableConfig.name}' at ${uri}, ingest ${ingestUrl}`)
const first = Array.from({ length: 40 }, (_, i) => order(i, 1))
const badMarker = `bad-${runId}`
await send([...first.map((o) => JSON.stringify(o)), JSON.stringify({ ...order(99, 1), customer: badMarker, order_id: 'not a number' })])
await waitFor('first 40 orders visible to deletion-vector readers', async () => matches(await visibleRows(), first))

// a later batch of the same keys commits a later snapshot, so its versions win
const updated = first.map((o, i) => (i % 4 === 0 ? order(i, 2) : o))
await send(updated.filter((_, i) => i % 4 === 0).map((o) => JSON.stringify(o)))
await waitFor('10 updates visible', async () => matches(await visibleRows(), updated))

const table = await Table.open(store)
const snapshot = await table.snapshots.snapshot(await table.snapshots.latestId())
console.log(`smoke-local: latest snapshot ${snapshot?.id} (${snapshot?.commitKind})`)

const rejectStore = new S3Store({ bucket, prefix: 'rejects', client: s3 })
const ours: { reason: string }[] = []
for (const r of await rejectStore.list('')) {
  const text = new TextDecoder().decode((await rejectStore.get(r.key))!)
  for (const line of text.split('\n').filter(Boolean)) if (line.includes(badMarker)) ours.push(JSON.parse(line))
}
if (ours.length !== 1) fail(`expected the bad record once under s3://${bucket}/rejects/, found it ${ours.length} times`)
if (!ours[0].reason.includes('order_id')) fail(`the reject's reason does not name the bad field: ${ours[0].reason}`)
console.log('smoke-local: the bad record was rejected with its reason')

const readerUrl = new URL(outputs.ReaderUrl)
readerUrl.searchParams.set('table', tableConfig.name)
readerUrl.searchParams.set('op', 'lookup')
readerUrl.searchParams.set('key', JSON.stringify({ dt: updated[0].dt, order_id: updated[0].order_id }))
const res = await signedGet(readerUrl)
const body = await res.text()
if (res.status !== 200) fail(`reader Function URL answered ${res.status}: ${body}`)
const row = JSON.parse(body).row
if (!row || row.customer !== updated[0].customer) fail(`reader lookup of order ${updated[0].order_id} returned ${body}`)
console.log(`smoke-local: reader Function URL lookup returned ${JSON.stringify(row)}`)

for (const [k, url] of Object.entries(outputs).filter(([k]) => k.endsWith('DeadLetterQueueUrl'))) {
  const n = await queueDepth(url)
  if (n !== 0) fail(`${k} holds ${n} messages`)
}
console.log('smoke-local: every DLQ is empty')
console.log('smoke-local: OK')
sqs.destroy()
s3.destroy()
