// Counts the HTTP requests an S3 client sends, per command, and the bytes they download, by
// a middleware inside the SDK's retry layer (so a retried call counts each attempt, as S3
// bills it). Bytes are the Content-Length of the responses: for a ranged GetObject, the
// length of the range.

import type { S3Client } from '@aws-sdk/client-s3'

export interface S3Traffic {
  requests: number
  /** response body bytes (downloaded) */
  bytesIn: number
  /** requests per command name, e.g. { GetObjectCommand: 3, HeadObjectCommand: 1 } */
  byCommand: Record<string, number>
  /** requests per kind of object (objectKind), e.g. { snapshot: 1, data: 2 } */
  byObject: Record<string, number>
}

const empty = (): S3Traffic => ({ requests: 0, bytesIn: 0, byCommand: {}, byObject: {} })

/** What a table's object key names: a snapshot (or hint), a manifest, a deletion-vector index, a data file, the schema. */
export function objectKind(key: string | undefined): string {
  if (key === undefined) return 'other'
  if (/(^|\/)snapshot\//.test(key)) return 'snapshot'
  if (/(^|\/)manifest\//.test(key)) return 'manifest'
  if (/(^|\/)index\//.test(key) || /\/index-[^/]*$/.test(key)) return 'index'
  if (/\.parquet$/.test(key)) return 'data'
  if (/(^|\/)schema\//.test(key)) return 'schema'
  return 'other'
}

function lengthOf(headers: Record<string, string> | undefined): number {
  if (!headers) return 0
  for (const [k, v] of Object.entries(headers)) if (k.toLowerCase() === 'content-length') return Number(v) || 0
  return 0
}

export class S3RequestCounter {
  private current = empty()

  constructor(client: S3Client) {
    client.middlewareStack.add(
      (next, context) => async (args) => {
        this.current.requests++
        const name = context.commandName ?? 'unknown'
        this.current.byCommand[name] = (this.current.byCommand[name] ?? 0) + 1
        const kind = objectKind((args.input as { Key?: string }).Key)
        this.current.byObject[kind] = (this.current.byObject[kind] ?? 0) + 1
        const res = await next(args)
        this.current.bytesIn += lengthOf((res.response as { headers?: Record<string, string> }).headers)
        return res
      },
      // finalizeRequest at low priority runs after the retry middleware, once per attempt;
      // a failed attempt still counts as a request, its bytes are not known
      { step: 'finalizeRequest', priority: 'low', name: 'benchCountS3Traffic', override: true },
    )
  }

  /** The traffic since the last take (or since the counter was made), resetting it. */
  take(): S3Traffic {
    const out = this.current
    this.current = empty()
    return out
  }
}
