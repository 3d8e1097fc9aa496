// The table-init custom resource (cdk/handlers/table-init.ts) against the embedded S3
// backend, through CloudFormation's protocol (the response PUT to a local server): a deploy
// that changes an option applies it as a new schema; one that changes what Paimon keeps
// fixed once a table has snapshots (`bucket`) fails naming the option and writes nothing;
// compaction.task-threads is left alone; a column change still fails as before.

import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { ListObjectsV2Command } from '@aws-sdk/client-s3'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type CustomResourceEvent, handler } from '../cdk/handlers/table-init.ts'
import { Table } from '../lib/handle/table.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'

const BUCKET = 'strata-table-init'
const SCHEMA = {
  fields: [
    { name: 'id', type: 'BIGINT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '2', 'compaction.task-threads': '1' },
}

let backend: EmbeddedBackend
let server: Server
const responses: { Status: string; Reason: string; PhysicalResourceId: string }[] = []
const saved: Record<string, string | undefined> = {}

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  // the handler opens s3:// URIs with the SDK's default client, as in Lambda: point it here
  const env = { AWS_ENDPOINT_URL: backend.endpoint, AWS_REGION: backend.region, AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId, AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey }
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k]
    process.env[k] = v
  }
  server = createServer((req, res) => {
    let body = ''
    req.on('data', (d) => (body += d))
    req.on('end', () => {
      responses.push(JSON.parse(body))
      res.end()
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
})

afterAll(async () => {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k]
    else process.env[k] = v
  }
  await new Promise((r) => server?.close(r))
  await backend?.stop()
})

/** Runs the handler on one event and returns CloudFormation's response to it. */
async function deploy(table: string, type: 'Create' | 'Update', schema: unknown) {
  const event: CustomResourceEvent = {
    RequestType: type,
    ResponseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/response`,
    StackId: 'arn:aws:cloudformation:us-east-1:000000000000:stack/Strata/1',
    RequestId: `r-${responses.length}`,
    LogicalResourceId: 'TableT',
    ResourceProperties: { TableName: table, TableUri: `s3://${BUCKET}/tables/${table}`, Schema: JSON.stringify(schema) },
  }
  const before = responses.length
  await handler(event)
  expect(responses).toHaveLength(before + 1)
  return responses[before]
}

const handle = (table: string) => Table.open(new S3Store({ bucket: BUCKET, prefix: `tables/${table}`, client: backend.s3Client() }))

async function schemaKeys(table: string): Promise<string[]> {
  const out = await backend.s3Client().send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `tables/${table}/schema/` }))
  return (out.Contents ?? []).map((o) => o.Key!.slice(`tables/${table}/`.length)).sort()
}

async function writeOneRow(table: string): Promise<void> {
  const t = await handle(table)
  await writeBatch(t, [{ ...recordFromJson(t.view, { id: 1, v: 'a' }, 'r'), where: 'r' }])
}

describe('table-init on Update', () => {
  it('applies an option change as the next schema, leaving compaction.task-threads alone', async () => {
    expect((await deploy('opts', 'Create', SCHEMA)).Status).toBe('SUCCESS')
    await writeOneRow('opts')
    const changed = { ...SCHEMA, options: { ...SCHEMA.options, 'snapshot.num-retained.min': '20', 'compaction.task-threads': '4' } }
    const res = await deploy('opts', 'Update', changed)
    expect(res.Status, res.Reason).toBe('SUCCESS')
    expect(res.Reason).toBe(`table 'opts' at s3://${BUCKET}/tables/opts: applied set 'snapshot.num-retained.min' = '20' (schema 1)`)
    const t = await handle('opts')
    expect(t.schema.id).toBe(1)
    expect(t.schema.options).toEqual({ bucket: '2', 'compaction.task-threads': '1', 'snapshot.num-retained.min': '20' })
    // the same deploy again changes nothing
    expect((await deploy('opts', 'Update', changed)).Reason).toBe(`table 'opts' at s3://${BUCKET}/tables/opts exists with the configured schema`)
    // an option removed from the config is reset
    const reset = await deploy('opts', 'Update', SCHEMA)
    expect(reset.Reason).toContain("applied reset 'snapshot.num-retained.min' (schema 2)")
    expect((await handle('opts')).schema.options).toEqual({ bucket: '2', 'compaction.task-threads': '1' })
  })

  it('fails a change Paimon refuses on a table with snapshots, naming the option, and writes nothing', async () => {
    expect((await deploy('fixed', 'Create', SCHEMA)).Status).toBe('SUCCESS')
    await writeOneRow('fixed')
    const before = await schemaKeys('fixed')
    const res = await deploy('fixed', 'Update', { ...SCHEMA, options: { ...SCHEMA.options, bucket: '4', 'snapshot.num-retained.min': '20' } })
    expect(res.Status).toBe('FAILED')
    expect(res.Reason).toContain(`table 'fixed' at s3://${BUCKET}/tables/fixed: the deployment changes options the table cannot take (nothing was changed`)
    expect(res.Reason).toContain(`option 'bucket' cannot change from "2" to "4" once the table has snapshots`)
    expect(await schemaKeys('fixed')).toEqual(before)
    expect((await handle('fixed')).schema.options).toEqual(SCHEMA.options)
  })

  it('still fails a column or key change, naming it', async () => {
    expect((await deploy('cols', 'Create', SCHEMA)).Status).toBe('SUCCESS')
    const res = await deploy('cols', 'Update', { ...SCHEMA, fields: [...SCHEMA.fields, { name: 'w', type: 'INT' }] })
    expect(res.Status).toBe('FAILED')
    expect(res.Reason).toContain('a deployment does not alter columns or keys')
    expect(res.Reason).toContain('fields: stored "id BIGINT NOT NULL, v STRING", configured "id BIGINT NOT NULL, v STRING, w INT"')
    expect(await schemaKeys('cols')).toEqual(['schema/schema-0'])
  })
})
