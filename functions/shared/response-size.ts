// The size limit of a synchronous Lambda response, counted the way Lambda counts it, and
// the error a reader answers with when one row (or a status) cannot fit in it.
//
// Lambda serializes what a handler returns, `{statusCode, headers, body}`, as JSON and
// refuses a payload over 6 MB (its error names 6,291,556 bytes); a Function URL passes the
// same payload through. The body is a JSON string inside that payload, so every `"` and `\`
// of the body counts twice, and a control character escaped in the body (`\n`) three times.

import { HttpError, type HttpResponse, jsonResponse } from './http.ts'

/** The largest serialized response the reader returns: 6 MB in decimal, under Lambda's 6,291,556 bytes. */
export const MAX_RESPONSE_BYTES = 6_000_000

/** Bytes of the payload Lambda sends for this response. */
export function responseBytes(res: HttpResponse): number {
  return Buffer.byteLength(JSON.stringify(res))
}

/** Bytes `text` adds to the payload when it is part of a response body. */
export function bytesInBody(text: string): number {
  return Buffer.byteLength(JSON.stringify(text)) - 2
}

/**
 * A response that cannot fit: 422, the request was valid but this function cannot answer it.
 * `details` go into the error body beside the message (a cursor that skips the row, say).
 */
export class ResponseTooLargeError extends HttpError {
  constructor(
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(422, message)
  }

  response(): HttpResponse {
    return jsonResponse(this.statusCode, JSON.stringify({ error: this.message, ...this.details }))
  }
}
