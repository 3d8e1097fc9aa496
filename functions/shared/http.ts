// A Lambda Function URL's request and response (the API Gateway HTTP API payload format
// 2.0, which Function URLs use): the request fields out of a GET query or a POST JSON body,
// and JSON responses. Bad input is a StrataInputError (400); other statuses an HttpError.

import type { APIGatewayProxyEventV2, APIGatewayProxyStructuredResultV2 } from 'aws-lambda'
import { parseJsonObject } from '../../lib/read/read-request.ts'


/** An answer other than 400 or 500, with the status it maps to. */
export class HttpError extends Error {
  override name = 'HttpError'
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message)
  }
}

export type HttpResponse = APIGatewayProxyStructuredResultV2 & { statusCode: number; body: string; headers: Record<string, string> }

/** True for a Function URL invocation (payload 2.0 always carries requestContext.http). */
export function isFunctionUrlEvent(event: unknown): event is APIGatewayProxyEventV2 {
  const http = (event as { requestContext?: { http?: { method?: unknown } } } | null)?.requestContext?.http
  return typeof http?.method === 'string'
}

export interface HttpRequest {
  method: 'GET' | 'POST'
  /** POST: the parsed JSON body object; GET: the query parameters, each a string */
  fields: Record<string, unknown>
}

export function requestOf(event: APIGatewayProxyEventV2): HttpRequest {
  const method = event.requestContext.http.method.toUpperCase()
  if (method === 'GET') {
    // Function URLs pass decoded values; a repeated parameter arrives comma-joined
    return { method, fields: { ...(event.queryStringParameters ?? {}) } }
  }
  if (method !== 'POST') throw new HttpError(405, `method ${method}: expected GET (query parameters) or POST (a JSON body)`)
  const raw = event.body ?? ''
  const text = event.isBase64Encoded ? Buffer.from(raw, 'base64').toString('utf8') : raw
  return { method, fields: parseJsonObject(text, 'body') }
}

const HEADERS = { 'content-type': 'application/json', 'cache-control': 'no-store' }

/** A response whose body is JSON text built by the caller (so bigints stay exact). */
export function jsonResponse(statusCode: number, body: string, headers: Record<string, string> = {}): HttpResponse {
  return { statusCode, headers: { ...HEADERS, ...headers }, body }
}

export function errorResponse(statusCode: number, message: string): HttpResponse {
  return jsonResponse(statusCode, JSON.stringify({ error: message }), statusCode === 405 ? { allow: 'GET, POST' } : {})
}
