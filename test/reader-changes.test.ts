// The reader function's op `changes` (functions/reader.ts): what the snapshots
// (fromSnapshot, toSnapshot] changed, each row with its _kind, paged under the row cap with
// a cursor that pins the range, equal to the library's incremental read; bad input answered
// 400 naming the field, a range expired between pages 410. On the embedded S3.

import type { APIGatewayProxyEventV2, Context } from 'aws-lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { handler } from '../functions/reader.ts'
import { resetRuntime } from '../functions/shared/runtime.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { readIncremental } from '../lib/read/incremental.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson, rowToJsonLine } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { useFunctionEnv } from './helpers/lambda.ts'
import { type Op, schemaFor } from './helpers/model.ts'

const BUCKET = 'reader-changes'
let backend: EmbeddedBackend
let table: Table
const savedEnv = { ...process.env }
const ctx = { awsRequestId: 'req-test', functionName: 'strata-reader' } as Context

type Res = { statusCode: number; body: string }
const call = (req: unknown) => handler(req as APIGatewayProxyEventV2, ctx) as Promise<Res>

const op = (kind: Op['_kind'], dt: string, id: number, a: number): Op => ({ _kind: kind, dt, id, a, b: `v${a}`, c: null })
const write = (ops: Op[]) => writeBatch(table, ops.map((o, i) => recordFromJson(table.view, o, `op ${i}`)))

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  table = await Table.create(new S3Store({ bucket: BUCKET, prefix: 'orders', client: backend.s3Client() }), schemaFor('deduplicate'))
  useFunctionEnv(backend, { orders: { uri: `s3://${BUCKET}/orders` } }, { STRATA_MAX_RESULT_ROWS: '100' })
  await write([op('+I', '2024-05-01', 1, 1), op('+I', '2024-05-02', 2, 2), op('+I', '2024-05-01', 3, 3)])
  await write([op('+U', '2024-05-01', 1, 10), op('-D', '2024-05-02', 2, 2)])
  await compactTable(table, { full: true })
  await write([op('+I', '2024-05-02', 4, 4), op('+U', '2024-05-01', 1, 11), op('+I', '2024-05-01', 5, 5)])
})
afterAll(async () => {
  process.env = savedEnv
  resetRuntime()
  await backend?.stop()
})

/** Every page of a changes read, limit rows each. */
async function allPages(req: Record<string, unknown>, limit: number): Promise<{ rows: string[]; pages: number; first: Record<string, unknown> }> {
  const rows: string[] = []
  let cursor: string | null = null
  let pages = 0
  let first: Record<string, unknown> = {}
  do {
    const res = await call({ table: 'orders', op: 'changes', ...req, limit, ...(cursor ? { cursor } : {}) })
    expect(res.statusCode, res.body).toBe(200)
    const body = JSON.parse(res.body) as { rows: unknown[]; nextCursor: string | null }
    if (pages === 0) first = body as unknown as Record<string, unknown>
    for (const r of body.rows) rows.push(JSON.stringify(r))
    expect(body.rows.length).toBeLessThanOrEqual(limit)
    cursor = body.nextCursor
    pages++
  } while (cursor)
  return { rows, pages, first }
}

describe('reader op changes', () => {
  it('pages through the range with _kind on every row, equal to the library read', async () => {
    const latest = await table.snapshots.latestId()
    const fields = table.view.fields
    const want = (await readIncremental(table, { fromSnapshot: 0 })).map((c) => JSON.stringify(JSON.parse(`{"_kind":"${ROW_KIND_SHORT[c.kind]}",${rowToJsonLine(fields, fields.map((_, i) => i), c.row).slice(1)}`)))
    expect(want).toHaveLength(8)
    for (const limit of [1, 3, 100]) {
      const got = await allPages({ fromSnapshot: 0 }, limit)
      expect(got.rows).toEqual(want)
      expect(got.first).toMatchObject({ fromSnapshot: 0, toSnapshot: latest, mode: 'delta' })
      expect(got.pages).toBe(Math.max(1, Math.ceil(want.length / limit)))
    }
    // a range and a filter
    const two = await allPages({ fromSnapshot: 1, toSnapshot: 2, filter: { dt: '2024-05-02' } }, 10)
    expect(two.rows).toEqual(['{"_kind":"-D","dt":"2024-05-02","id":2,"a":2,"b":"v2","c":null}'])
    // the same over GET query parameters of a Function URL request
    const res = await call({
      version: '2.0', routeKey: '$default', rawPath: '/', rawQueryString: 'table=orders&op=changes&fromSnapshot=1&toSnapshot=2&columns=id,_x', headers: { host: 'x' },
      queryStringParameters: { table: 'orders', op: 'changes', fromSnapshot: '1', toSnapshot: '2', columns: 'id' },
      requestContext: { accountId: '0', apiId: 'a', domainName: 'x', domainPrefix: 'x', http: { method: 'GET', path: '/', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 't' }, requestId: 'r', routeKey: '$default', stage: '$default', time: '', timeEpoch: 0 },
      isBase64Encoded: false,
    })
    expect(res.statusCode, res.body).toBe(200)
    expect(JSON.parse(res.body).rows.map((r: { _kind: string; id: number }) => `${r._kind}${r.id}`).sort()).toEqual(['+U1', '-D2'])
  })

  it('refuses bad input naming the field, and answers 410 for a range that expired between pages', async () => {
    const cases: [Record<string, unknown>, number, string][] = [
      [{}, 400, 'fromSnapshot: missing'],
      [{ fromSnapshot: -1 }, 400, 'fromSnapshot: expected an integer'],
      [{ fromSnapshot: 1, mode: 'diff' }, 400, 'mode: expected one of auto, delta, changelog'],
      [{ fromSnapshot: 1, mode: 'changelog' }, 400, "mode changelog: table"],
      [{ fromSnapshot: 3, toSnapshot: 2 }, 400, 'fromSnapshot 3 is after toSnapshot 2'],
      [{ fromSnapshot: 1, toSnapshot: 99 }, 400, 'toSnapshot 99: no such snapshot'],
      [{ fromSnapshot: 1, snapshotId: 2 }, 400, "snapshotId: not used by op 'changes'"],
      [{ fromSnapshot: 0, cursor: 'bogus' }, 400, 'cursor: not a cursor of op changes'],
    ]
    for (const [req, status, msg] of cases) {
      const res = await call({ table: 'orders', op: 'changes', ...req })
      expect(res.statusCode, JSON.stringify(req)).toBe(status)
      expect(JSON.parse(res.body).error).toContain(msg)
    }
    // a first page, then expiration takes the range's first snapshot
    const res = await call({ table: 'orders', op: 'changes', fromSnapshot: 0, limit: 1 })
    const cursor = JSON.parse(res.body).nextCursor as string
    expect(cursor).toBeTruthy()
    await expireSnapshots(table, { numRetainedMin: 1, numRetainedMax: 1, timeRetainedMs: 0 })
    const later = await call({ table: 'orders', op: 'changes', cursor })
    expect(later.statusCode).toBe(410)
    expect(JSON.parse(later.body).error).toContain('cursor: snapshot 1 of this read has expired')
    const fresh = await call({ table: 'orders', op: 'changes', fromSnapshot: 0 })
    expect(fresh.statusCode).toBe(400)
    expect(JSON.parse(fresh.body).error).toContain('fromSnapshot 0: snapshot 1, the first of the range, has expired')
  })
})
