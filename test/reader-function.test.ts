// The reader function against the embedded S3 backend, through Function URL events (GET,
// POST, base64 POST) and direct invocation: paginated scans that concatenate to readAll's
// rows at one pinned snapshot, caps, lookups, status, and every refusal naming its field.

import type { APIGatewayProxyEventV2, Context } from 'aws-lambda'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'

// Metrics read POWERTOOLS_METRICS_DISABLED when the module creates them, before any hook
vi.hoisted(() => {
  process.env.POWERTOOLS_METRICS_DISABLED = 'false'
  process.env.POWERTOOLS_LOG_LEVEL = 'SILENT'
})

import { executeRead, handler, parseReaderRequest } from '../functions/reader.ts'
import { MAX_RESPONSE_BYTES, ResponseTooLargeError, responseBytes } from '../functions/shared/response-size.ts'
import { jsonResponse } from '../functions/shared/http.ts'
import { resetRuntime } from '../functions/shared/runtime.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { readAll } from '../lib/read/table-read.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson, rowToJsonLine } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import type { Row } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'

const BUCKET = 'reader-test'
const MAX_ROWS = 100
const SCHEMA = {
  fields: [
    { name: 'dt', type: 'STRING' },
    { name: 'id', type: 'INT' },
    { name: 'big', type: 'BIGINT' },
    { name: 'amount', type: 'DECIMAL(20, 4)' },
    { name: 'name', type: 'STRING' },
  ],
  primaryKeys: ['dt', 'id'],
  partitionKeys: ['dt'],
  options: { bucket: '3' },
}
const DAYS = ['2024-05-01', '2024-05-02']

let backend: EmbeddedBackend
let orders: Table
const stdout: string[] = []
const ctx = { awsRequestId: 'req-test', functionName: 'strata-reader' } as Context

function tableAt(prefix: string): Promise<Table> {
  return Table.create(new S3Store({ bucket: BUCKET, prefix, client: backend.s3Client() }), SCHEMA)
}

/** ids `from..to` in both partitions; `big` beyond 2^53 and `amount` with more digits than a double holds. */
function rowsFor(from: number, to: number, tag: string) {
  const out = []
  for (const dt of DAYS) {
    for (let id = from; id <= to; id++) {
      out.push({ dt, id, big: (9007199254740993n + BigInt(id)).toString(), amount: `12345678901234.${String(id % 10000).padStart(4, '0')}`, name: `${tag}-${id}` })
    }
  }
  return out
}

async function write(table: Table, objs: Record<string, unknown>[]) {
  return writeBatch(table, objs.map((o, i) => recordFromJson(table.view, o, `row ${i}`)))
}

function urlEvent(method: string, opts: { query?: Record<string, string>; body?: string; base64?: boolean } = {}): APIGatewayProxyEventV2 {
  return {
    version: '2.0',
    routeKey: '$default',
    rawPath: '/',
    rawQueryString: new URLSearchParams(opts.query ?? {}).toString(),
    headers: { 'content-type': 'application/json', host: 'abc.lambda-url.us-east-1.on.aws' },
    ...(opts.query ? { queryStringParameters: opts.query } : {}),
    requestContext: {
      accountId: '000000000000',
      apiId: 'abc',
      domainName: 'abc.lambda-url.us-east-1.on.aws',
      domainPrefix: 'abc',
      http: { method, path: '/', protocol: 'HTTP/1.1', sourceIp: '127.0.0.1', userAgent: 'vitest' },
      requestId: 'req-test',
      routeKey: '$default',
      stage: '$default',
      time: '01/May/2024:00:00:00 +0000',
      timeEpoch: 0,
    },
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    isBase64Encoded: opts.base64 ?? false,
  }
}

type Res = { statusCode: number; headers: Record<string, string>; body: string }
const call = (event: unknown) => handler(event as APIGatewayProxyEventV2, ctx) as Promise<Res>
const post = (req: unknown) => call(urlEvent('POST', { body: JSON.stringify(req) }))

/** The rows of a scan body as JSON text, exactly as sent. */
function rowsText(body: string): string[] {
  const inner = body.slice(body.indexOf('"rows":[') + 8, body.lastIndexOf('],"nextCursor":'))
  return inner === '' ? [] : splitTopLevel(inner)
}

/** Splits `{…},{…}` at top-level commas (strings in these rows hold no braces). */
function splitTopLevel(s: string): string[] {
  const out: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < s.length; i++) {
    if (s[i] === '{') depth++
    else if (s[i] === '}') depth--
    else if (s[i] === ',' && depth === 0) {
      out.push(s.slice(start, i))
      start = i + 1
    }
  }
  out.push(s.slice(start))
  return out
}

function expectedText(table: Table, rows: Row[], columns?: string[]): string[] {
  const idx = (columns ?? table.view.fields.map((f) => f.name)).map((c) => table.view.fieldIndex.get(c)!)
  return rows.map((r) => rowToJsonLine(table.view.fields, idx, r))
}

/** All pages of a scan request; every page's snapshot id must be the first one's. */
async function allPages(req: Record<string, unknown>, between?: (page: number) => Promise<void>) {
  const pages: { snapshotId: number; rows: string[]; nextCursor: string | null }[] = []
  let cursor: string | undefined
  do {
    const res = await post({ ...req, ...(cursor ? { cursor } : {}) })
    expect(res.statusCode, res.body).toBe(200)
    const parsed = JSON.parse(res.body)
    pages.push({ snapshotId: parsed.snapshotId, rows: rowsText(res.body), nextCursor: parsed.nextCursor })
    cursor = parsed.nextCursor ?? undefined
    if (between) await between(pages.length)
  } while (cursor)
  return pages
}

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket(BUCKET)
  Object.assign(process.env, {
    AWS_ENDPOINT_URL: backend.endpoint,
    AWS_REGION: backend.region,
    AWS_ACCESS_KEY_ID: backend.credentials.accessKeyId,
    AWS_SECRET_ACCESS_KEY: backend.credentials.secretAccessKey,
    STRATA_MAX_RESULT_ROWS: String(MAX_ROWS),
    STRATA_TABLES: JSON.stringify({
      orders: { uri: `s3://${BUCKET}/orders` },
      small: { uri: `s3://${BUCKET}/small` },
      broken: { uri: `s3://${BUCKET}/broken` },
      empty: { uri: `s3://${BUCKET}/empty` },
      wide: { uri: `s3://${BUCKET}/wide` },
    }),
  })
  resetRuntime()
  vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    stdout.push(String(chunk))
    return true
  })
  orders = await tableAt('orders')
  // three commits: inserts, overlapping updates, deletes, so reads merge several runs
  await write(orders, rowsFor(0, 119, 'v1'))
  await write(orders, rowsFor(100, 159, 'v2'))
  await write(orders, rowsFor(10, 19, 'v3').map((r) => ({ ...r, _kind: '-D' })))
})

afterAll(async () => {
  vi.restoreAllMocks()
  await backend.stop()
})

describe('scan', () => {
  it('pages concatenate to exactly readAll at one snapshot, even when a commit lands between pages', async () => {
    const first = await orders.snapshots.latestId()
    const expected = expectedText(orders, await readAll(orders, { snapshotId: first }))
    expect(expected.length).toBe(2 * (160 - 10))
    const pages = await allPages({ table: 'orders', op: 'scan', limit: 70 }, async (page) => {
      if (page === 1) await write(orders, rowsFor(150, 200, 'v4'))
    })
    expect(pages.length).toBe(Math.ceil(expected.length / 70))
    expect(pages.every((p) => p.snapshotId === first)).toBe(true)
    expect(pages.slice(0, -1).every((p) => p.rows.length === 70)).toBe(true)
    const got = pages.flatMap((p) => p.rows)
    expect(got).toEqual(expected)
    const keys = got.map((r) => JSON.parse(r)).map((r) => `${r.dt}/${r.id}`)
    expect(new Set(keys).size).toBe(keys.length)
    // the commit between pages did change the table: the pinned snapshot is what kept it out
    const latest = await orders.snapshots.latestId()
    expect(latest).toBe(first + 1)
    expect(expectedText(orders, await readAll(orders, { snapshotId: latest }))).not.toEqual(expected)
    // and a fresh scan reads the new snapshot
    const fresh = JSON.parse((await post({ table: 'orders', op: 'scan', limit: 1 })).body)
    expect(fresh.snapshotId).toBe(latest)
  })

  it('prints BIGINT and DECIMAL values digit for digit', async () => {
    const res = await post({ table: 'orders', op: 'scan', filter: { dt: '2024-05-01', id: 7 } })
    expect(res.statusCode).toBe(200)
    expect(res.headers['content-type']).toBe('application/json')
    expect(rowsText(res.body)).toEqual(['{"dt":"2024-05-01","id":7,"big":9007199254741000,"amount":12345678901234.0007,"name":"v1-7"}'])
    expect(JSON.parse(res.body).nextCursor).toBeNull()
  })

  it('caps a page at STRATA_MAX_RESULT_ROWS by default and at limit when given', async () => {
    const all = await readAll(orders)
    const byDefault = JSON.parse((await post({ table: 'orders', op: 'scan' })).body)
    expect(byDefault.rows.length).toBe(MAX_ROWS)
    expect(byDefault.nextCursor).toEqual(expect.any(String))
    const five = JSON.parse((await post({ table: 'orders', op: 'scan', limit: 5 })).body)
    expect(five.rows.length).toBe(5)
    expect(all.length).toBeGreaterThan(MAX_ROWS)
  })

  it('a filtered scan pages through the filtered rows only, and its cursor is bound to the filter', async () => {
    const filter = { dt: '2024-05-02' }
    const pages = await allPages({ table: 'orders', op: 'scan', filter, columns: ['id', 'name'], limit: 40 })
    const snapshotId = pages[0].snapshotId
    expect(pages.flatMap((p) => p.rows)).toEqual(expectedText(orders, await readAll(orders, { snapshotId, filter }), ['id', 'name']))
    const bad = await post({ table: 'orders', op: 'scan', filter: { dt: '2024-05-01' }, cursor: pages[0].nextCursor })
    expect(bad.statusCode).toBe(400)
    expect(JSON.parse(bad.body).error).toMatch(/^cursor:/)
  })

  it('property: any limit and response cap give pages within the cap that concatenate to readAll', async () => {
    const snapshotId = await orders.snapshots.latestId()
    const expected = expectedText(orders, await readAll(orders, { snapshotId }))
    await fc.assert(
      fc.asyncProperty(fc.integer({ min: 25, max: MAX_ROWS }), fc.integer({ min: 4_000, max: 40_000 }), async (limit, maxResponseBytes) => {
        const got: string[] = []
        let cursor: string | undefined
        do {
          const out = await executeRead(parseReaderRequest({ table: 'orders', op: 'scan', snapshotId, limit, ...(cursor ? { cursor } : {}) }), { maxResponseBytes })
          const page = rowsText(out.body)
          expect(page.length).toBeGreaterThan(0)
          expect(page.length).toBeLessThanOrEqual(limit)
          expect(responseBytes(jsonResponse(200, out.body))).toBeLessThanOrEqual(maxResponseBytes)
          got.push(...page)
          cursor = JSON.parse(out.body).nextCursor ?? undefined
        } while (cursor)
        expect(got).toEqual(expected)
      }),
      { numRuns: 6 },
    )
    // a cap no row fits under: the first row is refused, naming its key, with a cursor past it
    const err = await executeRead(parseReaderRequest({ table: 'orders', op: 'scan', snapshotId, limit: 3 }), { maxResponseBytes: 1 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ResponseTooLargeError)
    const first = JSON.parse(expected[0])
    expect((err as Error).message).toMatch(new RegExp(`^row too large: the row with primary key \\{"dt":"${first.dt}","id":${first.id}\\} takes \\d+ bytes in a response, over the reader's limit of 1 bytes`))
    expect((err as ResponseTooLargeError).details.skipCursor).toEqual(expect.any(String))
  })

  it('an empty table scans to no rows and no snapshot', async () => {
    await tableAt('empty')
    const res = await post({ table: 'empty', op: 'scan' })
    expect(res.statusCode).toBe(200)
    expect(res.body).toBe('{"snapshotId":null,"rows":[],"nextCursor":null}')
  })
})

describe('request forms', () => {
  it('GET with query parameters: columns=a,b, filter as JSON, limit', async () => {
    const res = await call(urlEvent('GET', { query: { table: 'orders', op: 'scan', columns: 'id,big', filter: '{"dt":"2024-05-01","id":3}', limit: '10' } }))
    expect(res.statusCode, res.body).toBe(200)
    expect(rowsText(res.body)).toEqual(['{"id":3,"big":9007199254740996}'])
  })

  it('POST with a base64-encoded body', async () => {
    const body = Buffer.from(JSON.stringify({ table: 'orders', op: 'lookup', key: { dt: '2024-05-02', id: 120 }, columns: ['name'] })).toString('base64')
    const res = await call(urlEvent('POST', { body, base64: true }))
    expect(res.statusCode, res.body).toBe(200)
    expect(JSON.parse(res.body).row).toEqual({ name: 'v2-120' })
  })

  it('direct invocation with the request object, or its JSON text, as the event', async () => {
    const a = await call({ table: 'orders', op: 'lookup', key: { dt: '2024-05-01', id: 5 }, columns: ['name'] })
    const b = await call(JSON.stringify({ table: 'orders', op: 'lookup', key: { dt: '2024-05-01', id: 5 }, columns: ['name'] }))
    expect(a.statusCode).toBe(200)
    expect(JSON.parse(a.body).row).toEqual({ name: 'v1-5' })
    expect(b.body).toBe(a.body)
  })

  it('other methods answer 405', async () => {
    const res = await call(urlEvent('PUT', { body: '{}' }))
    expect(res.statusCode).toBe(405)
    expect(res.headers.allow).toBe('GET, POST')
  })
})

describe('lookup and status', () => {
  it('lookup of a present key returns the row as scan shows it; absent and deleted keys return null', async () => {
    const snapshotId = await orders.snapshots.latestId()
    const [row] = await readAll(orders, { snapshotId, filter: { dt: '2024-05-02', id: 150 } })
    const present = await post({ table: 'orders', op: 'lookup', key: { dt: '2024-05-02', id: 150 } })
    expect(present.statusCode).toBe(200)
    expect(present.body).toBe(`{"snapshotId":${snapshotId},"row":${expectedText(orders, [row])[0]}}`)
    for (const key of [{ dt: '2024-05-02', id: 999 }, { dt: '2024-05-01', id: 12 }]) {
      const absent = await post({ table: 'orders', op: 'lookup', key })
      expect(absent.body).toBe(`{"snapshotId":${snapshotId},"row":null}`)
    }
  })

  it('lookup at an older snapshot sees the row before its deletion', async () => {
    const res = await post({ table: 'orders', op: 'lookup', snapshotId: 1, key: { dt: '2024-05-01', id: 12 }, columns: ['name'] })
    expect(JSON.parse(res.body)).toEqual({ snapshotId: 1, row: { name: 'v1-12' } })
  })

  it('status is the table status object of the latest snapshot', async () => {
    const res = await post({ table: 'orders', op: 'status' })
    expect(res.statusCode).toBe(200)
    const s = JSON.parse(res.body)
    expect(s.snapshot.id).toBe(await orders.snapshots.latestId())
    expect(s.buckets.length).toBe(DAYS.length * 3)
    expect(s.maxL0Files).toBe(4)
  })
})

describe('refusals', () => {
  const cases: [string, unknown, RegExp][] = [
    ['missing table', { op: 'scan' }, /^table: missing/],
    ['table not a string', { table: 7, op: 'scan' }, /^table:/],
    ['missing op', { table: 'orders' }, /^op: missing/],
    ['unknown op', { table: 'orders', op: 'delete' }, /^op: expected one of scan, lookup, status, changes, stream, got "delete"/],
    ['unknown request field', { table: 'orders', op: 'scan', colums: ['id'] }, /^colums: unknown request field/],
    ['field the op does not use', { table: 'orders', op: 'scan', key: { id: 1 } }, /^key: not used by op 'scan'/],
    ['unknown column', { table: 'orders', op: 'scan', columns: ['id', 'nope'] }, /^columns: unknown column 'nope'/],
    ['columns not a list', { table: 'orders', op: 'scan', columns: 'id' }, /^columns:/],
    ['filter on a value column', { table: 'orders', op: 'scan', filter: { name: 'x' } }, /^filter: column 'name'/],
    ['filter on an unknown column', { table: 'orders', op: 'scan', filter: { nope: 1 } }, /^filter: unknown column 'nope'/],
    ['filter value of the wrong type', { table: 'orders', op: 'scan', filter: { id: 'seven' } }, /^filter: field 'id' \(INT\)/],
    ['filter not an object', { table: 'orders', op: 'scan', filter: [1] }, /^filter:/],
    ['limit 0', { table: 'orders', op: 'scan', limit: 0 }, /^limit: expected an integer in 1\.\.100, got 0/],
    ['limit negative', { table: 'orders', op: 'scan', limit: -1 }, /^limit:/],
    ['limit fractional', { table: 'orders', op: 'scan', limit: 1.5 }, /^limit:/],
    ['limit a string in JSON', { table: 'orders', op: 'scan', limit: '10' }, /^limit:/],
    ['limit over the maximum', { table: 'orders', op: 'scan', limit: MAX_ROWS + 1 }, /^limit: expected an integer in 1\.\.100/],
    ['snapshotId 0', { table: 'orders', op: 'scan', snapshotId: 0 }, /^snapshotId:/],
    ['snapshotId that does not exist', { table: 'orders', op: 'scan', snapshotId: 999 }, /^snapshotId: no snapshot 999 \(retained snapshots: 1\.\./],
    ['cursor that is not one', { table: 'orders', op: 'scan', cursor: 'abc' }, /^cursor: not a cursor/],
    ['lookup without key', { table: 'orders', op: 'lookup' }, /^key: missing/],
    ['lookup key missing a field', { table: 'orders', op: 'lookup', key: { dt: '2024-05-01' } }, /^key: missing primary key field 'id'/],
    ['lookup key with a non-key field', { table: 'orders', op: 'lookup', key: { dt: '2024-05-01', id: 1, name: 'x' } }, /^key: 'name' is not a primary key field/],
    ['lookup key of the wrong type', { table: 'orders', op: 'lookup', key: { dt: '2024-05-01', id: 'x' } }, /^key: field 'id'/],
    ['status with a limit', { table: 'orders', op: 'status', limit: 1 }, /^limit: not used by op 'status'/],
  ]
  it.each(cases)('POST %s → 400 naming the field', async (_, req, message) => {
    const res = await post(req)
    expect(res.statusCode, res.body).toBe(400)
    expect(res.headers['content-type']).toBe('application/json')
    expect(JSON.parse(res.body).error).toMatch(message)
  })

  const getCases: [string, Record<string, string>, RegExp][] = [
    ['bad filter JSON', { table: 'orders', op: 'scan', filter: '{bad' }, /^filter: not valid JSON/],
    ['bad key JSON', { table: 'orders', op: 'lookup', key: 'dt=1' }, /^key: not valid JSON/],
    ['limit not a number', { table: 'orders', op: 'scan', limit: 'ten' }, /^limit: expected an integer in 1\.\.100, got "ten"/],
    ['snapshotId not a number', { table: 'orders', op: 'scan', snapshotId: '1.0' }, /^snapshotId:/],
    ['empty column name', { table: 'orders', op: 'scan', columns: 'id,,name' }, /^columns:/],
  ]
  it.each(getCases)('GET %s → 400 naming the field', async (_, query, message) => {
    const res = await call(urlEvent('GET', { query }))
    expect(res.statusCode, res.body).toBe(400)
    expect(JSON.parse(res.body).error).toMatch(message)
  })

  it('a POST body that is not JSON, or not an object, → 400 naming the body', async () => {
    for (const body of ['{"table":', '[1,2]', '']) {
      const res = await call(urlEvent('POST', { body }))
      expect(res.statusCode).toBe(400)
      expect(JSON.parse(res.body).error).toMatch(/^body:/)
    }
  })

  it('an unknown table → 404', async () => {
    const res = await post({ table: 'nope', op: 'scan' })
    expect(res.statusCode).toBe(404)
    expect(JSON.parse(res.body).error).toMatch(/^table: unknown table 'nope' \(configured: orders, small, broken, empty, wide\)/)
  })

  it('a cursor whose snapshot has expired → 410 naming the cursor', async () => {
    const small = await tableAt('small')
    await write(small, rowsFor(0, 9, 'a'))
    const page = JSON.parse((await post({ table: 'small', op: 'scan', limit: 3 })).body)
    expect(page.nextCursor).toEqual(expect.any(String))
    await write(small, rowsFor(0, 9, 'b'))
    const expired = await expireSnapshots(small, { numRetainedMin: 1, numRetainedMax: 1 })
    expect(expired.expired).toEqual([page.snapshotId])
    const res = await post({ table: 'small', op: 'scan', limit: 3, cursor: page.nextCursor })
    expect(res.statusCode).toBe(410)
    expect(JSON.parse(res.body).error).toMatch(/^cursor: snapshot 1 of this scan has expired \(retained snapshots: 2\.\.2\)/)
  })

  it('a storage failure → 500 with a generic message, details only in the logs', async () => {
    const broken = await tableAt('broken')
    const res0 = await write(broken, rowsFor(0, 3, 'x'))
    const file = res0.buckets[0]
    await broken.store.delete(`${file.partitionPath}bucket-${file.bucket}/${file.fileName}`)
    const res = await post({ table: 'broken', op: 'scan' })
    expect(res.statusCode).toBe(500)
    const error = JSON.parse(res.body).error as string
    expect(error).toMatch(/^internal error; the function's logs have the details \(request id req-test\)$/)
    expect(error).not.toContain(file.fileName)
  })
})

describe('response size', () => {
  // Rows as big as a write with write.max-row-size raised (or another tool) can store. Each
  // response is measured as Lambda measures it: the serialized {statusCode, headers, body}.
  const A = 'a'.repeat(2_500_000)
  const B = 'b'.repeat(2_500_000)
  // 1.6 M quotes: 3.2 MB in the row's JSON, 6.4 MB once the body is a string in the payload
  const QUOTES = '"'.repeat(1_600_000)
  const C = 'c'.repeat(6_500_000)
  let wide: Table

  beforeAll(async () => {
    wide = await Table.create(new S3Store({ bucket: BUCKET, prefix: 'wide', client: backend.s3Client() }), {
      fields: [
        { name: 'id', type: 'INT' },
        { name: 'doc', type: 'STRING' },
      ],
      primaryKeys: ['id'],
      options: { 'write.max-row-size': '64 mb' },
    })
    const rows = [
      { id: 1, doc: A },
      { id: 2, doc: B },
      { id: 3, doc: QUOTES },
      { id: 4, doc: 'small' },
      { id: 5, doc: C },
    ]
    await writeBatch(wide, rows.map((o, i) => recordFromJson(wide.view, o, `row ${i}`)))
  })

  const fits = (res: Res) => expect(responseBytes(res)).toBeLessThanOrEqual(MAX_RESPONSE_BYTES)
  /** what a row adds to the payload: its JSON, escaped once more as part of the body string */
  const inPayload = (row: object) => Buffer.byteLength(JSON.stringify(JSON.stringify(row))) - 2

  it('a page ends before the row that would take it over 6 MB; a row over it alone is a 422 naming its key, with a cursor past it', async () => {
    const page1 = await post({ table: 'wide', op: 'scan' })
    fits(page1)
    expect(page1.statusCode).toBe(200)
    expect(JSON.parse(page1.body).rows.map((r: { id: number }) => r.id)).toEqual([1, 2])
    const cursor = JSON.parse(page1.body).nextCursor

    const page2 = await post({ table: 'wide', op: 'scan', cursor })
    fits(page2)
    expect(page2.statusCode).toBe(422)
    const refused = JSON.parse(page2.body)
    const size3 = inPayload({ id: 3, doc: QUOTES })
    expect(size3).toBe(6_400_023) // its JSON line alone is 3.2 MB
    expect(refused.error).toBe(
      `row too large: the row with primary key {"id":3} takes ${size3} bytes in a response, over the reader's limit of 6000000 bytes (a Lambda response is at most 6 MB); request fewer columns (columns), or read it with the library or the CLI (strata read, strata lookup), which have no response limit`,
    )
    expect(refused).toMatchObject({ rowBytes: size3, maxResponseBytes: MAX_RESPONSE_BYTES, skipCursor: expect.any(String) })

    // the same cursor with fewer columns reads on
    const narrow = await post({ table: 'wide', op: 'scan', cursor, columns: ['id'] })
    fits(narrow)
    expect(JSON.parse(narrow.body)).toEqual({ snapshotId: 1, rows: [{ id: 3 }, { id: 4 }, { id: 5 }], nextCursor: null })

    // the skip cursor goes on after the row; the last row is too large alone, with nothing after it
    const page3 = await post({ table: 'wide', op: 'scan', cursor: refused.skipCursor })
    fits(page3)
    expect(JSON.parse(page3.body).rows).toEqual([{ id: 4, doc: 'small' }])
    const page4 = await post({ table: 'wide', op: 'scan', cursor: JSON.parse(page3.body).nextCursor })
    fits(page4)
    expect(page4.statusCode).toBe(422)
    expect(JSON.parse(page4.body)).toMatchObject({ error: expect.stringContaining(`the row with primary key {"id":5} takes ${inPayload({ id: 5, doc: C })} bytes`), skipCursor: null })
  })

  it('a lookup of a row over the limit is a 422 naming its key; with fewer columns it answers', async () => {
    const res = await post({ table: 'wide', op: 'lookup', key: { id: 5 } })
    fits(res)
    expect(res.statusCode).toBe(422)
    expect(JSON.parse(res.body).error).toMatch(new RegExp(`^row too large: the row with primary key \\{"id":5\\} takes ${inPayload({ id: 5, doc: C })} bytes in a response, over the reader's limit of 6000000 bytes`))
    const narrow = await post({ table: 'wide', op: 'lookup', key: { id: 5 }, columns: ['id'] })
    expect(JSON.parse(narrow.body)).toEqual({ snapshotId: 1, row: { id: 5 } })
    const big = await post({ table: 'wide', op: 'lookup', key: { id: 1 } })
    fits(big)
    expect(big.statusCode).toBe(200)
    expect(JSON.parse(big.body).row.doc).toBe(A)
  })

  it('a status over the limit is refused, not sent', async () => {
    const err = await executeRead(parseReaderRequest({ table: 'orders', op: 'status' }), { maxResponseBytes: 500 }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ResponseTooLargeError)
    expect((err as Error).message).toMatch(/^status too large: the table's status \(6 buckets\) takes \d+ bytes, over the reader's limit of 500 bytes/)
  })

  it('the refusal logs no data: only its first words', async () => {
    stdout.length = 0
    await post({ table: 'wide', op: 'lookup', key: { id: 5 } })
    const logged = stdout.join('')
    expect(logged).not.toContain('"id":5')
  })
})

describe('metrics', () => {
  it('a scan emits ReadLatency, RowsReturned and FilesOpened as EMF with a table dimension', async () => {
    stdout.length = 0
    const res = await post({ table: 'orders', op: 'scan', filter: { dt: '2024-05-01' }, limit: 9 })
    expect(res.statusCode).toBe(200)
    const emf = stdout.flatMap((s) => s.split('\n')).filter((l) => l.includes('"_aws"')).map((l) => JSON.parse(l))
    expect(emf.length).toBe(1)
    const m = emf[0]
    const directive = m._aws.CloudWatchMetrics[0]
    expect(directive.Namespace).toBe('Strata')
    expect(directive.Metrics.map((x: { Name: string }) => x.Name).sort()).toEqual(['FilesOpened', 'ReadLatency', 'RowsReturned'])
    expect(directive.Dimensions[0]).toContain('table')
    expect(m.table).toBe('orders')
    expect(m.RowsReturned).toBe(9)
    expect(m.FilesOpened).toBeGreaterThan(0)
    // the request's data never reaches the output
    expect(stdout.join('')).not.toContain('2024-05-01')
  })
})

describe('tag', () => {
  it("scan and lookup of a tag read the tagged snapshot, across pages while commits land; bad tag input is refused naming the field", async () => {
    const { createTag } = await import('../lib/handle/tags.ts')
    await createTag(orders, 'first', { snapshotId: 1 })
    const expected = expectedText(orders, await readAll(orders, { snapshotId: 1 }))
    let wrote = false
    const pages = await allPages({ table: 'orders', op: 'scan', tag: 'first', limit: 50 }, async (page) => {
      if (page === 1 && !wrote) {
        wrote = true
        await write(orders, rowsFor(0, 5, 'v4'))
      }
    })
    expect(pages.length).toBeGreaterThan(1)
    expect(pages.every((p) => p.snapshotId === 1)).toBe(true)
    expect(pages.flatMap((p) => p.rows)).toEqual(expected)
    const found = await post({ table: 'orders', op: 'lookup', tag: 'first', key: { dt: DAYS[0], id: 12 }, columns: ['name'] })
    expect(JSON.parse(found.body)).toEqual({ snapshotId: 1, row: { name: 'v1-12' } })

    const refused = async (req: Record<string, unknown>, message: RegExp) => {
      const res = await post(req)
      expect(res.statusCode, res.body).toBe(400)
      expect(JSON.parse(res.body).error).toMatch(message)
    }
    await refused({ table: 'orders', op: 'scan', tag: 'nope' }, /^tag "nope": no such tag in s3:\/\/.* \(tags: first\)$/)
    await refused({ table: 'orders', op: 'lookup', tag: 'nope', key: { dt: DAYS[0], id: 1 } }, /^tag "nope": no such tag/)
    await refused({ table: 'orders', op: 'scan', tag: 'first', snapshotId: 1 }, /^tag: "first" and snapshotId 1: expected one of them/)
    await refused({ table: 'orders', op: 'scan', tag: 'a/b' }, /^tag "a\/b": expected no '\/'/)
    await refused({ table: 'orders', op: 'scan', tag: 7 }, /^tag: expected a tag name, got 7$/)
    const first = JSON.parse((await post({ table: 'orders', op: 'scan', tag: 'first', limit: 10 })).body)
    await refused({ table: 'orders', op: 'scan', tag: 'other', cursor: first.nextCursor }, /^tag: "other" differs from the cursor's tag "first"; omit tag when passing a cursor$/)
  })
})
