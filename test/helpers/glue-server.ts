// A small AWS Glue Data Catalog on loopback, speaking Glue's JSON 1.1 protocol (POST /,
// `X-Amz-Target: AWSGlue.<Operation>`, `application/x-amz-json-1.1`) for the three operations
// Strata calls: GetTable, UpdateTable and CreateTable. No Glue API server runs here (LocalStack
// and moto need Docker or Python's registry), so the real @aws-sdk/client-glue is pointed at
// this one: its serialization, error parsing and retries are exercised, and every request is
// recorded as the SDK sent it.
//
// What it keeps of Glue: databases and tables by name; a table's VersionId, a string counted up
// by every UpdateTable, and UpdateTable's optimistic check (a VersionId that is not the
// table's current one is refused with ConcurrentModificationException); EntityNotFoundException
// for a missing database or table and AlreadyExistsException for CreateTable of an existing
// one, in Glue's error shape (`__type` and `Message`, HTTP 400); an archived version per
// UpdateTable unless SkipArchive. Timestamps are epoch seconds, as in JSON 1.1.
//
// Test controls: `hold(operation)` parks the next request of that operation until released
// (a step of an interleaving), `failNext(operation, …)` answers the next one with an error.

import { type IncomingMessage, type Server, type ServerResponse, createServer } from 'node:http'
import type { AddressInfo } from 'node:net'

export interface RecordedGlueRequest {
  /** `GetTable`, `UpdateTable`, … (the X-Amz-Target without `AWSGlue.`) */
  operation: string
  body: Record<string, any>
}

export interface GlueFault {
  status: number
  type: string
  message: string
}

export interface HeldRequest {
  /** resolves when the held request has arrived (and is parked) */
  arrived: Promise<void>
  /** lets it through: it is then answered from the state as it is at that moment */
  release(): void
}

interface StoredTable {
  input: Record<string, any>
  version: number
  createTime: number
  updateTime: number
}

const TARGET_PREFIX = 'AWSGlue.'

class GlueFaultError extends Error {
  constructor(readonly fault: GlueFault) {
    super(fault.message)
  }
}

const notFound = (message: string): GlueFault => ({ status: 400, type: 'EntityNotFoundException', message })

export class GlueServer {
  readonly requests: RecordedGlueRequest[] = []
  /** archived table inputs per `db.table`, oldest first (an UpdateTable without SkipArchive adds one) */
  readonly archived = new Map<string, Record<string, any>[]>()
  private readonly databases = new Map<string, Map<string, StoredTable>>()
  private readonly holds = new Map<string, { arrive: () => void; released: Promise<void> }[]>()
  private readonly faults = new Map<string, GlueFault[]>()
  /** seconds since the epoch, for CreateTime and UpdateTime (fixed: no test asks when) */
  private readonly clock = 1_700_000_000

  private constructor(
    private readonly server: Server,
    readonly endpoint: string,
  ) {}

  static async start(): Promise<GlueServer> {
    let self: GlueServer | undefined
    const server = createServer((req, res) => void self!.handle(req, res))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as AddressInfo).port
    self = new GlueServer(server, `http://127.0.0.1:${port}`)
    return self
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.server.close(() => resolve()))
  }

  createDatabase(name: string): void {
    if (!this.databases.has(name)) this.databases.set(name, new Map())
  }

  /** Seeds a table as CreateTable would. */
  putTable(database: string, input: Record<string, any>): void {
    this.create({ DatabaseName: database, TableInput: input })
  }

  /** The table's current input and VersionId, or undefined. */
  table(database: string, name: string): { input: Record<string, any>; versionId: string } | undefined {
    const t = this.databases.get(database)?.get(name)
    return t && { input: structuredClone(t.input), versionId: String(t.version) }
  }

  /** The recorded requests of one operation, in arrival order. */
  recorded(operation: string): Record<string, any>[] {
    return this.requests.filter((r) => r.operation === operation).map((r) => r.body)
  }

  hold(operation: string): HeldRequest {
    let arrive!: () => void
    let release!: () => void
    const arrived = new Promise<void>((r) => (arrive = r))
    const released = new Promise<void>((r) => (release = r))
    const list = this.holds.get(operation) ?? []
    list.push({ arrive, released })
    this.holds.set(operation, list)
    return { arrived, release }
  }

  failNext(operation: string, fault: GlueFault): void {
    const list = this.faults.get(operation) ?? []
    list.push(fault)
    this.faults.set(operation, list)
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = []
    for await (const c of req) chunks.push(c as Buffer)
    const target = String(req.headers['x-amz-target'] ?? '')
    const operation = target.startsWith(TARGET_PREFIX) ? target.slice(TARGET_PREFIX.length) : target
    let body: Record<string, any> = {}
    try {
      body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {}
    } catch {
      return this.reply(res, 400, { __type: 'SerializationException', Message: 'body is not JSON' })
    }
    this.requests.push({ operation, body })
    const hold = this.holds.get(operation)?.shift()
    if (hold) {
      hold.arrive()
      await hold.released
    }
    const fault = this.faults.get(operation)?.shift()
    if (fault) return this.fail(res, fault)
    if (req.headers['content-type'] !== 'application/x-amz-json-1.1') {
      return this.fail(res, { status: 400, type: 'SerializationException', message: `unexpected content type ${req.headers['content-type']}` })
    }
    try {
      this.reply(res, 200, this.dispatch(operation, body))
    } catch (e) {
      if (e instanceof GlueFaultError) return this.fail(res, e.fault)
      throw e
    }
  }

  private dispatch(operation: string, body: Record<string, any>): Record<string, any> {
    switch (operation) {
      case 'GetTable':
        return this.getTable(body)
      case 'UpdateTable':
        return this.update(body)
      case 'CreateTable':
        return this.create(body)
      default:
        throw new GlueFaultError({ status: 400, type: 'UnknownOperationException', message: `operation ${operation} is not served here` })
    }
  }

  private database(name: unknown): Map<string, StoredTable> {
    const db = this.databases.get(String(name))
    if (!db) throw new GlueFaultError(notFound(`Database ${String(name)} not found.`))
    return db
  }

  private stored(database: unknown, name: unknown): StoredTable {
    const t = this.database(database).get(String(name))
    if (!t) throw new GlueFaultError(notFound(`Table ${String(name)} not found.`))
    return t
  }

  private getTable(body: Record<string, any>): Record<string, any> {
    const t = this.stored(body.DatabaseName, body.Name)
    return {
      Table: { ...structuredClone(t.input), DatabaseName: body.DatabaseName, VersionId: String(t.version), CreateTime: t.createTime, UpdateTime: t.updateTime, CatalogId: body.CatalogId ?? '123456789012' },
    }
  }

  private update(body: Record<string, any>): Record<string, any> {
    const input = body.TableInput as Record<string, any> | undefined
    const t = this.stored(body.DatabaseName, input?.Name)
    if (body.VersionId !== undefined && body.VersionId !== String(t.version)) {
      throw new GlueFaultError({ status: 400, type: 'ConcurrentModificationException', message: `Update table failed due to concurrent modifications (version ${body.VersionId}, current ${t.version}).` })
    }
    if (body.SkipArchive !== true) {
      const key = `${body.DatabaseName}.${input!.Name}`
      this.archived.set(key, [...(this.archived.get(key) ?? []), t.input])
    }
    t.input = structuredClone(input!)
    t.version++
    t.updateTime = this.clock
    return {}
  }

  private create(body: Record<string, any>): Record<string, any> {
    const db = this.database(body.DatabaseName)
    const input = body.TableInput as Record<string, any>
    if (db.has(input.Name)) throw new GlueFaultError({ status: 400, type: 'AlreadyExistsException', message: `Table already exists.` })
    db.set(input.Name, { input: structuredClone(input), version: 0, createTime: this.clock, updateTime: this.clock })
    return {}
  }

  private fail(res: ServerResponse, fault: GlueFault): void {
    res.setHeader('x-amzn-errortype', fault.type)
    this.reply(res, fault.status, { __type: fault.type, Message: fault.message })
  }

  private reply(res: ServerResponse, status: number, body: unknown): void {
    const text = JSON.stringify(body)
    res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1', 'content-length': Buffer.byteLength(text), 'x-amzn-requestid': `req-${this.requests.length}` })
    res.end(text)
  }
}
