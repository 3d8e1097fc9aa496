// The reader function's op `stream` (functions/reader.ts, lib/read/stream-pages.ts): a
// streaming start paged under the row cap, its cursor pinning the start, equal to the
// library's start and changes; rows waiting in level 0 of a deletion-vector table are in the
// full state; bad input answered 400 naming the field, a start expired between pages 410.
// On the embedded S3.

import type { APIGatewayProxyEventV2, Context } from 'aws-lambda'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { handler } from '../functions/reader.ts'
import { resetRuntime } from '../functions/shared/runtime.ts'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { locateStart, planStep, readStep, resolveScan } from '../lib/read/streaming-start.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson, rowToJsonLine } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { ROW_KIND_SHORT } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { useFunctionEnv } from './helpers/lambda.ts'
import { type Op, schemaFor } from './helpers/model.ts'

const BUCKET = 'reader-stream'
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
  table = await Table.create(new S3Store({ bucket: BUCKET, prefix: 'orders', client: backend.s3Client() }), schemaFor('deduplicate', { 'deletion-vectors.enabled': 'true', 'snapshot.num-retained.min': '1', 'snapshot.num-retained.max': '1' }))
  useFunctionEnv(backend, { orders: { uri: `s3://${BUCKET}/orders` } }, { STRATA_MAX_RESULT_ROWS: '100' })
  await write([op('+I', '2024-05-01', 1, 1), op('+I', '2024-05-02', 2, 2), op('+I', '2024-05-01', 3, 3)])
  await compactTable(table, { full: true })
  // in level 0 at the start: a batch read of the latest snapshot does not show them
  await write([op('+U', '2024-05-01', 1, 10), op('+I', '2024-05-02', 4, 4), op('+I', '2024-05-01', 5, 5)])
  await write([op('-D', '2024-05-02', 2, 2), op('+I', '2024-05-01', 6, 6)])
})
afterAll(async () => {
  process.env = savedEnv
  resetRuntime()
  await backend?.stop()
})

/** Every page of a stream read, limit rows each. */
async function allPages(req: Record<string, unknown>, limit: number): Promise<{ rows: string[]; pages: number; first: Record<string, unknown> }> {
  const rows: string[] = []
  let cursor: string | null = null
  let pages = 0
  let first: Record<string, unknown> = {}
  do {
    // later pages pass the cursor, which pins the start, and the columns and filter again
    const { scanMode, scanSnapshotId, scanTimestampMillis, ...rest } = req
    const res = await call({ table: 'orders', op: 'stream', ...(cursor ? { ...rest, cursor } : req), limit })
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

async function libraryRows(opts: Parameters<typeof resolveScan>[1]): Promise<string[]> {
  const start = (await locateStart(table, resolveScan(table, opts)))!
  const step = await planStep(table, start)
  const fields = table.view.fields
  const out: string[] = []
  for await (const batch of readStep(table, step)) for (const c of batch) out.push(JSON.stringify(JSON.parse(`{"_kind":"${ROW_KIND_SHORT[c.kind]}",${rowToJsonLine(fields, fields.map((_, i) => i), c.row).slice(1)}`)))
  return out
}

describe('reader op stream', () => {
  it('pages through the full state (level 0 in) and the changes after it, equal to the library', async () => {
    const latest = await table.snapshots.latestId()
    for (const [req, full] of [
      [{ scanMode: 'latest-full' }, latest],
      [{ scanMode: 'from-snapshot-full', scanSnapshotId: 2 }, 2],
    ] as const) {
      const want = await libraryRows(req)
      for (const limit of [1, 2, 100]) {
        const got = await allPages(req, limit)
        expect(got.rows).toEqual(want)
        expect(got.first).toMatchObject({ fullSnapshot: full, toSnapshot: latest, mode: 'delta', nextSnapshot: latest + 1 })
        expect(got.pages).toBe(Math.max(1, Math.ceil(want.length / limit)))
      }
    }
    const latestFull = (await allPages({ scanMode: 'latest-full', columns: ['id'] }, 100)).rows
    expect(latestFull.sort()).toEqual(['{"_kind":"+I","id":1}', '{"_kind":"+I","id":3}', '{"_kind":"+I","id":4}', '{"_kind":"+I","id":5}', '{"_kind":"+I","id":6}'])
    const fromTwo = await allPages({ scanMode: 'from-snapshot-full', scanSnapshotId: 2, columns: ['id', 'a'] }, 100)
    // the full state of snapshot 2 (the compaction), then the update and the delete after it
    expect(fromTwo.rows.filter((r) => !r.startsWith('{"_kind":"+I"')).sort()).toEqual(['{"_kind":"+U","id":1,"a":10}', '{"_kind":"-D","id":2,"a":2}'])
    expect(fromTwo.first).toMatchObject({ fullSnapshot: 2, fromSnapshot: 2 })
  })

  it('answers bad input 400 naming the field, and a start expired between pages 410', async () => {
    for (const [req, msg] of [
      [{ scanMode: 'sideways' }, 'scanMode "sideways": expected one of'],
      [{ scanMode: 'from-snapshot' }, 'scanMode from-snapshot: expected scanSnapshotId'],
      [{ scanSnapshotId: 0 }, 'scanSnapshotId: expected an integer in 1..'],
      [{ fromSnapshot: 1 }, "fromSnapshot: not used by op 'stream'"],
      [{ cursor: 'nope' }, 'cursor: not a cursor of op stream'],
      [{ cursor: 'nope', scanMode: 'latest' }, 'scanMode: not with a cursor, which pins the start'],
    ] as [Record<string, unknown>, string][]) {
      const res = await call({ table: 'orders', op: 'stream', ...req })
      expect(res.statusCode, JSON.stringify(req)).toBe(400)
      expect(JSON.parse(res.body).error ?? res.body).toContain(msg)
    }
    const res = await call({ table: 'orders', op: 'stream', scanMode: 'from-snapshot-full', scanSnapshotId: 2, limit: 1 })
    const cursor = (JSON.parse(res.body) as { nextCursor: string }).nextCursor
    expect(cursor).toBeTruthy()
    await write([op('+I', '2024-05-01', 7, 7)])
    await expireSnapshots(table, { now: Date.now() + 2 * 3_600_000 })
    expect(await table.snapshots.existing(2)).toBeNull()
    const gone = await call({ table: 'orders', op: 'stream', cursor, limit: 1 })
    expect(gone.statusCode, gone.body).toBe(410)
  })
})
