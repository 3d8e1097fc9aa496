// Each Lambda bundle exactly as the stack deploys it: synthesized once with bundling on, its
// asset directory taken from the cloud assembly, copied to a directory of its own and loaded
// by a fresh `node` (no tsx, no node_modules within reach), then handed a real-shaped event
// against the embedded S3 + SQS backend with the environment the template gives that
// function. The run goes table-init → writer → compactor → reader → maintenance over one
// table, and checks the EMF each bundle prints against the alarms' metric dimensions. While
// the writer and the compactor run, the test stands in for the committer's event source:
// what arrives on the commit queue goes to the committer bundle.

import { spawn } from 'node:child_process'
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CreateQueueCommand, DeleteMessageBatchCommand, GetQueueAttributesCommand, ReceiveMessageCommand, SQSClient, SendMessageBatchCommand } from '@aws-sdk/client-sqs'
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { App } from 'aws-cdk-lib'
import type { CfnElement } from 'aws-cdk-lib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildApp } from '../cdk/app.ts'
import { logicalIdOf } from '../cdk/nag.ts'
import type { StrataStack } from '../cdk/stack.ts'
import { readAll } from '../lib/read/table-read.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { Table } from '../lib/handle/table.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { sqsEventOf, sqsRecordOf } from '../local/runtime/sqs-event.ts'

const BUCKET = 'strata-bundle-test'
const TABLE = 'events'
const SCHEMA = {
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'name', type: 'STRING' },
    { name: 'qty', type: 'INT' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '2', 'deletion-vectors.enabled': 'true', 'compaction.task-threads': '2' },
}
const CONFIG = { tables: [{ name: TABLE, schema: SCHEMA }] }

type Resources = Record<string, { Type: string; Properties: Record<string, any> }>

interface Deployed {
  bundleDir: string
  env: Record<string, string>
}

let backend: EmbeddedBackend
let sqs: SQSClient
let stack: StrataStack
let resources: Resources
let work: string
let ingestQueue: { url: string; arn: string }
let compactionQueue: { url: string; arn: string }
let commitQueue: { url: string; arn: string }
let feedQueue: { url: string; arn: string }
const fns: Record<'tableInit' | 'writer' | 'compactor' | 'committer' | 'reader' | 'maintenance', Deployed> = {} as never

/** Just the intrinsics the stack uses in function environments; anything else is a test failure. */
function resolveValue(v: unknown, refs: Map<string, string>): string {
  if (typeof v === 'string') return v
  const o = v as Record<string, any>
  if (o && typeof o.Ref === 'string') {
    const r = refs.get(o.Ref)
    if (r === undefined) throw new Error(`environment refers to ${o.Ref}, which the test does not stand in for`)
    return r
  }
  if (o && Array.isArray(o['Fn::Join'])) return (o['Fn::Join'][1] as unknown[]).map((p) => resolveValue(p, refs)).join(o['Fn::Join'][0])
  throw new Error(`unexpected intrinsic in a function environment: ${JSON.stringify(v)}`)
}

function deployed(fn: { node: { defaultChild?: unknown } }, assemblyDir: string, refs: Map<string, string>): Deployed {
  const props = resources[logicalIdOf(fn.node.defaultChild as CfnElement)].Properties
  const key = props.Code.S3Key as string
  const src = join(assemblyDir, `asset.${key.replace(/\.zip$/, '')}`)
  const bundleDir = mkdtempSync(join(work, 'bundle-'))
  cpSync(src, bundleDir, { recursive: true })
  const env = Object.fromEntries(Object.entries(props.Environment?.Variables ?? {}).map(([k, v]) => [k, resolveValue(v, refs)]))
  return { bundleDir, env }
}

interface Run {
  result: { ok: boolean; out?: any; error?: string }
  emf: any[]
  stdout: string
  stderr: string
}

const RUNNER = `
import { pathToFileURL } from 'node:url'
const chunks = []
for await (const c of process.stdin) chunks.push(c)
const { event, context } = JSON.parse(Buffer.concat(chunks).toString('utf8'))
const mod = await import(pathToFileURL(process.argv[1]).href)
let result
try {
  result = { ok: true, out: await mod.handler(event, { ...context, getRemainingTimeInMillis: () => 60000 }) }
} catch (e) {
  result = { ok: false, error: String((e && e.stack) || e) }
}
process.stdout.write('\\n@@RESULT@@' + JSON.stringify(result) + '\\n')
`

/** Runs one bundle's handler in a fresh node process with only the function's environment. */
function invoke(fn: Deployed, name: string, event: unknown): Promise<Run> {
  const entry = join(fn.bundleDir, 'index.mjs')
  const env = {
    ...fn.env,
    AWS_ENDPOINT_URL: backend.endpoint,
    AWS_REGION: backend.region,
    AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey,
    AWS_LAMBDA_FUNCTION_NAME: name,
    AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
  }
  const context = { functionName: name, awsRequestId: `req-${name}`, functionVersion: '$LATEST', memoryLimitInMB: '1024', invokedFunctionArn: `arn:aws:lambda:us-east-1:000000000000:function:${name}` }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', RUNNER, entry], { cwd: fn.bundleDir, env, stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => (stdout += d))
    child.stderr.on('data', (d) => (stderr += d))
    child.on('error', reject)
    child.on('close', () => {
      const at = stdout.lastIndexOf('@@RESULT@@')
      if (at < 0) return reject(new Error(`${name}: the bundle printed no result\nstdout: ${stdout}\nstderr: ${stderr}`))
      const result = JSON.parse(stdout.slice(at + '@@RESULT@@'.length).trim())
      const emf = stdout
        .slice(0, at)
        .split('\n')
        .filter((l) => l.startsWith('{') && l.includes('"_aws"'))
        .map((l) => JSON.parse(l))
      resolve({ result, emf, stdout, stderr })
    })
    child.stdin.end(JSON.stringify({ event, context }))
  })
}

/** The EMF records that carry `metric`, as {dimension names (sorted), values, unit}. */
function published(run: Run, metric: string): { dimensions: string[]; values: Record<string, string>; unit: string }[] {
  const out = []
  for (const line of run.emf) {
    for (const d of line._aws.CloudWatchMetrics) {
      const m = d.Metrics.find((x: { Name: string }) => x.Name === metric)
      if (!m) continue
      for (const set of d.Dimensions as string[][]) {
        out.push({ dimensions: [...set].sort(), values: Object.fromEntries(set.map((k) => [k, line[k]])), unit: m.Unit })
      }
    }
  }
  return out
}

async function createQueue(name: string, attributes: Record<string, string>): Promise<{ url: string; arn: string }> {
  const q = await sqs.send(new CreateQueueCommand({ QueueName: name, Attributes: attributes }))
  const a = await sqs.send(new GetQueueAttributesCommand({ QueueUrl: q.QueueUrl!, AttributeNames: ['QueueArn'] }))
  return { url: q.QueueUrl!, arn: a.Attributes!.QueueArn! }
}

async function receiveAll(queue: { url: string; arn: string }) {
  const out = []
  for (let i = 0; i < 20; i++) {
    const res = await sqs.send(new ReceiveMessageCommand({ QueueUrl: queue.url, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 0 }))
    if (!res.Messages?.length) break
    out.push(...res.Messages.map((m) => sqsRecordOf(m, queue.arn, backend.region)))
  }
  return out
}

/**
 * Awaits `during` (a writer or compactor run) while doing what the committer's event source
 * would: commit messages that arrive go to the committer bundle in batches of at most 10,
 * and the ones it did not report as failed are deleted.
 */
async function withCommitter<T>(during: Promise<T>): Promise<{ result: T; committerRuns: Run[] }> {
  let done = false
  const committerRuns: Run[] = []
  const pump = (async () => {
    while (!done) {
      const res = await sqs.send(new ReceiveMessageCommand({ QueueUrl: commitQueue.url, MaxNumberOfMessages: 10, MessageSystemAttributeNames: ['All'], WaitTimeSeconds: 0 }))
      const records = (res.Messages ?? []).map((m) => sqsRecordOf(m, commitQueue.arn, backend.region))
      if (records.length === 0) {
        await new Promise((r) => setTimeout(r, 50))
        continue
      }
      const run = await invoke(fns.committer, 'strata-committer', sqsEventOf(records))
      committerRuns.push(run)
      if (!run.result.ok) continue // as Lambda does: the batch comes back after its visibility timeout
      const failed = new Set((run.result.out?.batchItemFailures ?? []).map((f: { itemIdentifier: string }) => f.itemIdentifier))
      const landed = records.filter((r) => !failed.has(r.messageId))
      if (landed.length) await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: commitQueue.url, Entries: landed.map((r, i) => ({ Id: String(i), ReceiptHandle: r.receiptHandle })) }))
    }
  })()
  try {
    return { result: await during, committerRuns }
  } finally {
    done = true
    await pump
  }
}

/** After a writer or compactor run: it committed through the committer, which succeeded; no commit message or receipt is left. */
async function expectCommitsSettled(committerRuns: Run[]): Promise<void> {
  expect(committerRuns.length).toBeGreaterThan(0)
  for (const run of committerRuns) expect(run.result, run.stderr).toMatchObject({ ok: true, out: { batchItemFailures: [] } })
  const left = await sqs.send(new ReceiveMessageCommand({ QueueUrl: commitQueue.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }))
  expect(left.Messages ?? []).toEqual([])
  const receipts = await backend.s3Client().send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `tables/${TABLE}/_strata/commit-receipts/` }))
  expect(receipts.KeyCount).toBe(0)
}

function tableHandle(): Promise<Table> {
  return Table.open(new S3Store({ bucket: BUCKET, prefix: `tables/${TABLE}`, client: backend.s3Client() }))
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'strata-cdk-bundle-'))
  const cdkJson = JSON.parse(readFileSync(join(import.meta.dirname, '..', 'cdk.json'), 'utf8'))
  const app = new App({ outdir: join(work, 'cdk.out'), context: { ...cdkJson.context, strata: CONFIG } })
  stack = buildApp(app).stack
  const assembly = app.synth()
  resources = assembly.getStackByName(stack.stackName).template.Resources

  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  sqs = new SQSClient({ endpoint: backend.endpoint, region: backend.region, credentials: backend.credentials, useQueueUrlAsEndpoint: false })
  ingestQueue = await createQueue('ingest', {})
  compactionQueue = await createQueue(`${TABLE}-compaction.fifo`, { FifoQueue: 'true' })
  commitQueue = await createQueue(`${TABLE}-commit.fifo`, { FifoQueue: 'true' })
  feedQueue = await createQueue('commit-feed', {})
  const table = stack.tables[0]
  const refs = new Map([
    [logicalIdOf(stack.feed!.queue.node.defaultChild as CfnElement), feedQueue.url],
    [logicalIdOf(stack.storage.bucket.node.defaultChild as CfnElement), BUCKET],
    [logicalIdOf(table.queue.node.defaultChild as CfnElement), compactionQueue.url],
    [logicalIdOf(table.commitQueue.node.defaultChild as CfnElement), commitQueue.url],
  ])
  fns.tableInit = deployed(stack.tableInit.fn, assembly.directory, refs)
  fns.writer = deployed(stack.writer.fn, assembly.directory, refs)
  fns.compactor = deployed(table.compactor.fn, assembly.directory, refs)
  fns.committer = deployed(table.committer.fn, assembly.directory, refs)
  fns.reader = deployed(stack.reader.fn, assembly.directory, refs)
  fns.maintenance = deployed(table.maintenance.fn, assembly.directory, refs)
}, 120_000)

afterAll(async () => {
  sqs?.destroy()
  await backend?.stop()
  if (work) rmSync(work, { recursive: true, force: true })
})

describe('bundled handlers (esbuild output of the stack)', () => {
  it('are single-file ES modules with the require banner and a source map', () => {
    for (const [name, fn] of Object.entries(fns)) {
      const code = readFileSync(join(fn.bundleDir, 'index.mjs'), 'utf8')
      expect(code.startsWith("import { createRequire as __strataCreateRequire } from 'node:module'"), name).toBe(true)
      expect(code.trimEnd().endsWith('//# sourceMappingURL=index.mjs.map'), name).toBe(true)
      expect(readdirSync(fn.bundleDir).sort(), name).toEqual(['index.mjs', 'index.mjs.map'])
    }
    expect(fns.writer.env.NODE_OPTIONS).toBe('--enable-source-maps')
  })

  it('writer, compactor and committer are given the commit queue of the table', () => {
    for (const fn of [fns.writer, fns.compactor, fns.committer]) {
      expect(JSON.parse(fn.env.STRATA_TABLES)[TABLE]).toEqual({ uri: `s3://${BUCKET}/tables/${TABLE}`, compactionQueueUrl: compactionQueue.url, commitQueueUrl: commitQueue.url, taskThreads: 2 })
    }
    expect(fns.committer.env.STRATA_TABLE).toBe(TABLE)
  })

  it('table-init creates the table through the custom-resource protocol', async () => {
    const responses: any[] = []
    const server: Server = createServer((req, res) => {
      let body = ''
      req.on('data', (d) => (body += d))
      req.on('end', () => {
        responses.push({ method: req.method, contentType: req.headers['content-type'], body: JSON.parse(body) })
        res.end()
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      const customResource = resources[logicalIdOf(stack.tables[0].created.node.defaultChild as CfnElement)].Properties
      const props = Object.fromEntries(Object.entries(customResource).map(([k, v]) => [k, k === 'ServiceToken' ? 'arn' : resolveValue(v, new Map([[logicalIdOf(stack.storage.bucket.node.defaultChild as CfnElement), BUCKET]]))]))
      const event = (type: string) => ({
        RequestType: type,
        ResponseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/response`,
        StackId: 'arn:aws:cloudformation:us-east-1:000000000000:stack/Strata/1',
        RequestId: `r-${type}`,
        LogicalResourceId: 'TableEvents',
        ResourceType: 'Custom::StrataTable',
        ResourceProperties: props,
      })
      const created = await invoke(fns.tableInit, 'table-init', event('Create'))
      expect(created.result, created.stderr).toEqual({ ok: true })
      expect(responses[0]).toMatchObject({ method: 'PUT', body: { Status: 'SUCCESS', PhysicalResourceId: `s3://${BUCKET}/tables/${TABLE}`, RequestId: 'r-Create' } })
      const table = await tableHandle()
      expect(table.schema.primaryKeys).toEqual(['id'])
      expect(table.view.options.deletionVectors).toBe(true)

      // a redeploy with the same schema succeeds; one that changes a column fails, naming it
      // (option changes are applied: test/cdk-table-init.test.ts)
      await invoke(fns.tableInit, 'table-init', event('Update'))
      expect(responses[1].body.Status).toBe('SUCCESS')
      const changed = { ...event('Update'), ResourceProperties: { ...props, Schema: JSON.stringify({ ...SCHEMA, fields: [...SCHEMA.fields, { name: 'w', type: 'INT' }] }) } }
      await invoke(fns.tableInit, 'table-init', changed)
      expect(responses[2].body.Status).toBe('FAILED')
      expect(responses[2].body.Reason).toContain('fields: stored "id BIGINT NOT NULL, name STRING, qty INT", configured "id BIGINT NOT NULL, name STRING, qty INT, w INT"')
      // compaction.task-threads is a deployment setting and may change
      const rethreaded = { ...event('Update'), ResourceProperties: { ...props, Schema: JSON.stringify({ ...SCHEMA, options: { ...SCHEMA.options, 'compaction.task-threads': '-1' } }) } }
      await invoke(fns.tableInit, 'table-init', rethreaded)
      expect(responses[3].body.Status).toBe('SUCCESS')
    } finally {
      await new Promise((r) => server.close(r))
    }
  })

  it('the writer bundle commits an SQS batch, rejects the bad record and enqueues compaction jobs', async () => {
    const bodies = [
      JSON.stringify({ id: 1, name: 'apple', qty: 3 }),
      JSON.stringify({ id: 2, name: 'pear', qty: 5 }),
      JSON.stringify({ id: 3, name: 'fig', qty: 7 }),
      JSON.stringify({ id: 'four', name: 'bad', qty: 1 }),
    ]
    await sqs.send(new SendMessageBatchCommand({ QueueUrl: ingestQueue.url, Entries: bodies.map((b, i) => ({ Id: String(i), MessageBody: b })) }))
    const records = await receiveAll(ingestQueue)
    expect(records).toHaveLength(4)
    const { result: run, committerRuns } = await withCommitter(invoke(fns.writer, 'strata-writer', sqsEventOf(records)))
    expect(run.result, run.stderr).toEqual({ ok: true, out: { batchItemFailures: [] } })
    await expectCommitsSettled(committerRuns)

    const table = await tableHandle()
    const snapshot = await table.snapshots.snapshot(await table.snapshots.latestId())
    // the bundled committer published the commit to the feed queue the stack gave it
    const feed = await sqs.send(new ReceiveMessageCommand({ QueueUrl: feedQueue.url, MaxNumberOfMessages: 10, WaitTimeSeconds: 0 }))
    expect((feed.Messages ?? []).map((m) => JSON.parse(m.Body!))).toContainEqual(expect.objectContaining({ table: TABLE, toSnapshot: snapshot!.id, kinds: ['APPEND'] }))
    // and published the series its FeedFailures and CommitterLeaseOverridden alarms watch
    for (const metric of ['FeedFailures', 'CommitterLeaseOverridden']) {
      const alarm = Object.values(resources).find((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties.MetricName === metric)!.Properties
      const watched = { dimensions: alarm.Dimensions.map((d: { Name: string }) => d.Name).sort(), values: Object.fromEntries(alarm.Dimensions.map((d: { Name: string; Value: string }) => [d.Name, d.Value])) }
      expect(committerRuns.flatMap((r) => published(r, metric)).map(({ dimensions, values }) => ({ dimensions, values })), metric).toContainEqual(watched)
    }
    expect(snapshot).toMatchObject({ commitKind: 'APPEND', deltaRecordCount: 3 })
    const rejects = await backend.s3Client().send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: 'rejects/' }))
    expect(rejects.KeyCount).toBe(1)

    // the dashboard's per-table writer and committer series are what the bundles publish
    expect(published(run, 'RowsWritten')).toEqual([{ dimensions: ['function', 'service', 'table'], values: { service: 'strata', function: 'writer', table: TABLE }, unit: 'Count' }])
    expect(published(committerRuns[0], 'CommitRetries')).toEqual([{ dimensions: ['function', 'service', 'table'], values: { service: 'strata', function: 'committer', table: TABLE }, unit: 'Count' }])
    // the writer's stages of the freshness budget (docs/design.md "Freshness budget")
    for (const metric of ['IngestWait', 'WriteCommitTime']) {
      expect(published(run, metric), metric).toEqual([{ dimensions: ['function', 'service', 'table'], values: { service: 'strata', function: 'writer', table: TABLE }, unit: 'Milliseconds' }])
    }
  })

  it('the compactor bundle compacts the jobs, after which deletion-vector readers see the rows', async () => {
    const jobs = await receiveAll(compactionQueue)
    expect(jobs.length).toBeGreaterThan(0)
    expect(jobs.every((j) => j.attributes.MessageGroupId?.startsWith(`${TABLE}/`))).toBe(true)
    const { result: run, committerRuns } = await withCommitter(invoke(fns.compactor, 'strata-compactor', sqsEventOf(jobs)))
    expect(run.result, run.stderr).toEqual({ ok: true, out: { batchItemFailures: [] } })
    await expectCommitsSettled(committerRuns)
    // as the event source mapping does with a batch that reported no failures
    await sqs.send(new DeleteMessageBatchCommand({ QueueUrl: compactionQueue.url, Entries: jobs.map((j, i) => ({ Id: String(i), ReceiptHandle: j.receiptHandle })) }))

    const table = await tableHandle()
    const snapshot = await table.snapshots.snapshot(await table.snapshots.latestId())
    expect(snapshot?.commitKind).toBe('COMPACT')
    const rows = (await readAll(table)).map((r) => [Number(r[0]), r[1], r[2]]).sort((a, b) => (a[0] as number) - (b[0] as number))
    expect(rows).toEqual([
      [1, 'apple', 3],
      [2, 'pear', 5],
      [3, 'fig', 7],
    ])
    // one compactor serves one table, so its metrics carry the table dimension
    expect(published(run, 'CompactionTime')[0]).toMatchObject({ values: { service: 'strata', function: 'compactor', table: TABLE }, unit: 'Milliseconds' })
    // the compaction's stages of the freshness budget, under the same set
    for (const metric of ['JobQueueAge', 'CompactionSlotWait', 'CompactionReadTime', 'CompactionMergeTime', 'CompactionWriteTime', 'CompactionCommitTime', 'CompactedL0Age']) {
      expect(published(run, metric)[0], metric).toEqual({ dimensions: ['function', 'service', 'table'], values: { service: 'strata', function: 'compactor', table: TABLE }, unit: 'Milliseconds' })
    }
  })

  it('the reader bundle answers a Function URL scan', async () => {
    const event = {
      version: '2.0',
      routeKey: '$default',
      rawPath: '/',
      rawQueryString: `table=${TABLE}&op=scan`,
      queryStringParameters: { table: TABLE, op: 'scan' },
      headers: { host: 'example.lambda-url.us-east-1.on.aws' },
      requestContext: { http: { method: 'GET', path: '/', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'test' }, requestId: 'r1', routeKey: '$default', stage: '$default', time: '', timeEpoch: 0, accountId: '000000000000', apiId: 'x', domainName: 'x', domainPrefix: 'x' },
      isBase64Encoded: false,
    }
    const run = await invoke(fns.reader, 'strata-reader', event)
    expect(run.result.ok, run.result.error ?? run.stderr).toBe(true)
    expect(run.result.out.statusCode).toBe(200)
    const body = JSON.parse(run.result.out.body)
    expect(body.rows.map((r: { id: number }) => r.id).sort()).toEqual([1, 2, 3])
    expect(body.nextCursor).toBeNull()
  })

  it('the maintenance bundle runs and publishes the series the alarms watch', async () => {
    const run = await invoke(fns.maintenance, 'strata-maintenance', { 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date().toISOString(), detail: {} })
    expect(run.result.ok, run.result.error ?? run.stderr).toBe(true)
    expect(run.result.out).toMatchObject({ table: TABLE, errors: {}, queuedJobs: 0 })

    // the committer's FeedFailures and CommitterLeaseOverridden alarms are checked against the committer's runs (the writer test)
    const alarms = Object.values(resources).filter((r) => r.Type === 'AWS::CloudWatch::Alarm' && r.Properties.Namespace === 'Strata' && !['FeedFailures', 'CommitterLeaseOverridden'].includes(r.Properties.MetricName))
    expect(alarms.map((a) => a.Properties.MetricName).sort()).toEqual(['FreshnessLag', 'L0FileCountMax'])
    for (const alarm of alarms) {
      const p = alarm.Properties
      const watched = { dimensions: p.Dimensions.map((d: { Name: string }) => d.Name).sort(), values: Object.fromEntries(p.Dimensions.map((d: { Name: string; Value: string }) => [d.Name, d.Value])) }
      const series = published(run, p.MetricName).map(({ dimensions, values }) => ({ dimensions, values }))
      expect(series, p.MetricName).toContainEqual(watched)
    }
    expect(published(run, 'FreshnessLag')[0].unit).toBe('Milliseconds')
    // the orphan schedule's input (its rule's constant) runs the cleanup alone
    const orphans = await invoke(fns.maintenance, 'strata-maintenance', { task: 'remove-orphans' })
    expect(orphans.result.ok, orphans.result.error ?? orphans.stderr).toBe(true)
    expect(orphans.result.out).toMatchObject({ table: TABLE, errors: {}, orphansDeleted: 0, expired: null })
    expect(published(run, 'QueuedJobs')).toHaveLength(1)
  })
})
