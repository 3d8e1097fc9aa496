// Reader function: scans, key lookups and table status over a Lambda Function URL (AWS_IAM
// auth, payload 2.0: GET with query parameters or POST with a JSON body, base64 or not), or
// invoked directly with the request object as the event. The answer is `{statusCode,
// headers, body}`, the body JSON text built here so BIGINT and DECIMAL print digit for digit.
// Results are capped at `limit` rows (default and maximum STRATA_MAX_RESULT_ROWS) and every
// response fits Lambda's 6 MB (shared/response-size.ts): a page ends before the row that would
// take it over; a row too large to go out alone is answered 422, naming its key and size, with
// a cursor that skips it. Pages continue with an opaque cursor. `tag` reads the snapshot a tag
// pins, as `strata read --tag` does. Op `changes` reads what (fromSnapshot, toSnapshot]
// changed, each row with its `_kind`, as `strata read --from-snapshot`; op `stream` a
// streaming start (scanMode, scanSnapshotId, scanTimestampMillis: the full state, then the
// changes after it), as `strata read --scan-mode` (lib/read/stream-pages.ts). Cursors pin
// what they read. No consumer progress is recorded: the reader only reads (no write access).

import middy from '@middy/core'
import { MetricUnit } from '@aws-lambda-powertools/metrics'
import { logMetrics } from '@aws-lambda-powertools/metrics/middleware'
import type { Context } from 'aws-lambda'
import { tableStatus } from '../lib/maintenance/table-status.ts'
import type { Table } from '../lib/handle/table.ts'
import { changesPage } from '../lib/read/change-pages.ts'
import { lookupRow } from '../lib/read/lookup-row.ts'
import { type PageLimits, type ReadOutcome, RowTooLargeError } from '../lib/read/page-rows.ts'
import { ReadGoneError } from '../lib/read/read-pins.ts'
import { type ReaderRequest, describeValue, parseJsonObject, parseReaderRequest as parseRequest } from '../lib/read/read-request.ts'
import { scanPage } from '../lib/read/scan-pages.ts'
import { ReaderDiscoveries } from '../lib/read/snapshot-discovery.ts'
import { streamPage } from '../lib/read/stream-pages.ts'
import { errorKind, StrataInputError } from '../lib/errors.ts'
import { ConfigError } from './shared/config.ts'
import { HttpError, type HttpResponse, errorResponse, isFunctionUrlEvent, jsonResponse, requestOf } from './shared/http.ts'
import { MAX_RESPONSE_BYTES, ResponseTooLargeError, bytesInBody, responseBytes } from './shared/response-size.ts'
import { logger, newMetrics, resolveTable, runtimeConfig } from './shared/runtime.ts'

const metrics = newMetrics('reader')
const discoveries = new ReaderDiscoveries()

const INSTEAD = 'request fewer columns (columns), or read it with the library or the CLI (strata read, strata lookup), which have no response limit'

/** Validates a request (lib/read/read-request.ts): `limit` at most STRATA_MAX_RESULT_ROWS unless `maxRows` says otherwise. */
export function parseReaderRequest(fields: Record<string, unknown>, { fromQuery = false, maxRows = runtimeConfig().maxResultRows } = {}): ReaderRequest {
  return parseRequest(fields, { fromQuery, maxRows })
}

async function statusOfTable(table: Table, maxResponseBytes: number): Promise<ReadOutcome> {
  const status = await tableStatus(table)
  const body = JSON.stringify(status)
  const size = responseBytes(jsonResponse(200, body))
  if (size > maxResponseBytes) {
    throw new ResponseTooLargeError(
      `status too large: the table's status (${status.buckets.length} buckets) takes ${size} bytes, over the reader's limit of ${maxResponseBytes} bytes (a Lambda response is at most 6 MB); run 'strata status' against the table, or watch the maintenance function's metrics`,
      { statusBytes: size, maxResponseBytes },
    )
  }
  return { body, snapshotId: status.snapshot?.id ?? null, rows: 0, stats: null }
}

/** lib/read's refusals as this function answers them: a read that is gone 410, a row too large 422. */
function asHttpError(err: unknown): unknown {
  if (err instanceof ReadGoneError) return new HttpError(410, err.message)
  if (!(err instanceof RowTooLargeError)) return err
  return new ResponseTooLargeError(
    `row too large: ${err.what} takes ${err.rowBytes} bytes in a response, over the reader's limit of ${err.maxResponseBytes} bytes (a Lambda response is at most 6 MB); ${INSTEAD}`,
    { rowBytes: err.rowBytes, maxResponseBytes: err.maxResponseBytes, ...(err.skipCursor === undefined ? {} : { skipCursor: err.skipCursor }) },
  )
}

export interface ReadOptions {
  /** bytes of the serialized response (the payload Lambda counts) at most; default MAX_RESPONSE_BYTES */
  maxResponseBytes?: number
}

/** Runs a validated request against its table. Throws StrataInputError (400) or HttpError. */
export async function executeRead(req: ReaderRequest, opts: ReadOptions = {}): Promise<ReadOutcome> {
  const resolved = await resolveTable(req.table)
  if (!resolved) throw new HttpError(404, `table: unknown table '${req.table}' (configured: ${[...runtimeConfig().tables.keys()].join(', ')})`)
  const { table } = resolved
  const maxResponseBytes = opts.maxResponseBytes ?? MAX_RESPONSE_BYTES
  if (req.op === 'status') return statusOfTable(table, maxResponseBytes)
  const limits: PageLimits = {
    rows: req.limit ?? runtimeConfig().maxResultRows,
    maxResponseBytes,
    responseBytes: (body) => responseBytes(jsonResponse(200, body)),
    bodyBytes: bytesInBody,
  }
  try {
    if (req.op === 'lookup') return await lookupRow(table, { key: req.key!, snapshotId: req.snapshotId, tag: req.tag, columns: req.columns }, limits)
    if (req.op === 'changes') return await changesPage(table, req, limits)
    if (req.op === 'stream') return await streamPage(table, req, limits)
    return await scanPage(table, req, limits)
  } catch (err) {
    throw asHttpError(err)
  }
}

/** A direct invocation's event: the request object, or its JSON text. */
function directRequest(event: unknown): Record<string, unknown> {
  if (typeof event === 'string') return parseJsonObject(event, 'event')
  if (typeof event !== 'object' || event === null || Array.isArray(event)) throw new StrataInputError(`event: expected a Function URL event or a request object {"table", "op", ...}, got ${describeValue(event)}`)
  return event as Record<string, unknown>
}

/**
 * An error's status by its kind: what the request asked for wrongly (bad input, a name that
 * does not exist, something Strata refuses) 400, anything else 500. A configuration error is
 * the deployment's, not the request's: 500. A missing table is answered 404 where it is found
 * (executeRead); other names that do not exist stay 400, as they always were.
 */
function statusOf(err: unknown): number {
  if (err instanceof HttpError) return err.statusCode
  if (err instanceof ConfigError) return 500
  const kind = errorKind(err)
  return kind === 'input' || kind === 'not-found' || kind === 'refused' ? 400 : 500
}

export async function readerHandler(event: unknown, context?: Context): Promise<HttpResponse> {
  const started = Date.now()
  let req: ReaderRequest | null = null
  try {
    if (isFunctionUrlEvent(event)) {
      const http = requestOf(event)
      req = parseReaderRequest(http.fields, { fromQuery: http.method === 'GET' })
    } else {
      req = parseReaderRequest(directRequest(event))
    }
    const out = await executeRead(req, {})
    const latency = Date.now() - started
    const filesOpened = out.stats ? out.stats.filesOpened.reduce((a, b) => a + b, 0) : 0
    metrics.addDimension('table', req.table)
    metrics.addMetric('ReadLatency', MetricUnit.Milliseconds, latency)
    metrics.addMetric('RowsReturned', MetricUnit.Count, out.rows)
    if (out.stats) metrics.addMetric('FilesOpened', MetricUnit.Count, filesOpened)
    await discoveries.observe(req, out.snapshotId, started, (await resolveTable(req.table))!.table.snapshots).then((lag) => lag !== null && metrics.addMetric('SnapshotDiscoveryLag', MetricUnit.Milliseconds, lag))
    logger.info('read', { table: req.table, op: req.op, snapshot: out.snapshotId, rows: out.rows, filesOpened, latencyMs: latency, requestId: context?.awsRequestId })
    return jsonResponse(200, out.body)
  } catch (err) {
    const status = statusOf(err)
    metrics.addMetric('ReadLatency', MetricUnit.Milliseconds, Date.now() - started)
    // the reason names a field and may quote a value from the request, so it is not logged
    if (status < 500) {
      logger.info('read refused', { status, table: req?.table, op: req?.op, field: (err as Error).message.split(':')[0], requestId: context?.awsRequestId })
      return err instanceof ResponseTooLargeError ? err.response() : errorResponse(status, (err as Error).message)
    }
    logger.error('read failed', { table: req?.table, op: req?.op, error: err as Error, requestId: context?.awsRequestId })
    return errorResponse(500, `internal error; the function's logs have the details${context?.awsRequestId ? ` (request id ${context.awsRequestId})` : ''}`)
  }
}

export const handler = middy(readerHandler).use(logMetrics(metrics))
