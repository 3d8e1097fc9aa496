// The Glue pointer (lib/iceberg/glue-pointer.ts) through the real @aws-sdk/client-glue against
// a loopback server speaking Glue's JSON 1.1 protocol (test/helpers/glue-server.ts): no Glue
// API server can run here (LocalStack and moto need Docker or a Python registry), so the tests
// check the SDK's requests as recorded, byte for byte as JSON, and Glue's VersionId check and
// error shapes as its API reference describes them. Time is the injected clock; interleavings
// are steps (a request held at the server until released). Faults a real Glue would have to be
// provoked into (an internal error, a table modified on every attempt) are injected at the
// server as Glue's own error responses.

import { GlueClient, UpdateTableCommand } from '@aws-sdk/client-glue'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { committerFunction } from '../functions/committer.ts'
import { glueTarget } from '../functions/shared/glue.ts'
import { type AddedMetric, FunctionRuntime, resetRuntime } from '../functions/shared/runtime.ts'
import { encodeCommitMessage } from '../lib/commit/commit-message.ts'
import { Table } from '../lib/handle/table.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { type EmbeddedBackend, startEmbeddedBackend } from '../local/embedded.ts'
import { writeMessage } from './helpers/commit.ts'
import { sqsEvent, sqsRecord, useFunctionEnv } from './helpers/lambda.ts'
import { GlueConcurrentModificationError, GluePointer, type GluePointerOptions } from '../lib/iceberg/glue-pointer.ts'
import { icebergTableInput, metadataSnapshotId } from '../lib/iceberg/glue-table-input.ts'
import { GlueServer } from './helpers/glue-server.ts'

const DB = 'lake'
const TABLE = 'orders'
const ROOT = 's3://bucket/lake/lake.db/orders'
const meta = (n: number) => `${ROOT}/metadata/v${n}.metadata.json`

/** A Glue table as a user or the construct registered it, with fields a pointer must keep. */
const SEED = {
  Name: TABLE,
  Description: 'orders, kept by Strata',
  Owner: 'data-team',
  TableType: 'EXTERNAL_TABLE',
  LastAccessTime: 1_690_000_000,
  Retention: 0,
  PartitionKeys: [],
  StorageDescriptor: { Location: ROOT, Columns: [{ Name: 'id', Type: 'bigint' }] },
  Parameters: { table_type: 'ICEBERG', metadata_location: meta(1), classification: 'iceberg' },
}

let server: GlueServer
let glue: GlueClient
let clock: number

beforeEach(async () => {
  server = await GlueServer.start()
  server.createDatabase(DB)
  server.putTable(DB, SEED)
  // one attempt per request: the SDK's own retries would back off in real time, and a fault
  // injected once must reach the pointer
  glue = new GlueClient({ endpoint: server.endpoint, region: 'us-east-1', credentials: { accessKeyId: 'test', secretAccessKey: 'test' }, maxAttempts: 1 })
  clock = 0
})

afterEach(async () => {
  glue.destroy()
  await server.close()
})

function pointer(o: Partial<GluePointerOptions> = {}): GluePointer {
  return new GluePointer({ glue, database: DB, table: TABLE, intervalMs: 1000, now: () => clock, ...o })
}

const glueLocation = () => server.table(DB, TABLE)!.input.Parameters.metadata_location

/**
 * One interleaving in steps: `first` runs until its `operation` request reaches the server,
 * which parks it while `meanwhile` runs; then the request goes on and `first` is awaited.
 */
async function whileHeld(operation: string, first: () => Promise<void>, meanwhile: () => Promise<unknown>): Promise<void> {
  const held = server.hold(operation)
  const done = first()
  await held.arrived
  await meanwhile()
  held.release()
  await done
}
const operations = () => server.requests.map((r) => r.operation)

describe('metadataSnapshotId', () => {
  it('reads the snapshot id of v<N>.metadata.json and nothing else', () => {
    expect(metadataSnapshotId(meta(42))).toBe(42)
    expect(metadataSnapshotId('v7.metadata.json')).toBe(7)
    expect(metadataSnapshotId(`${ROOT}/metadata/00001-5f3c.metadata.json`)).toBeNull()
    expect(metadataSnapshotId(`${ROOT}/metadata/xv7.metadata.json`)).toBeNull()
  })
})

describe('GluePointer', () => {
  it('sends GetTable, then UpdateTable with the VersionId read and the table rebuilt as TableInput (the exact bodies)', async () => {
    const p = pointer()
    await p.published(meta(3), 3)
    expect(server.requests).toEqual([
      { operation: 'GetTable', body: { DatabaseName: DB, Name: TABLE } },
      {
        operation: 'UpdateTable',
        body: {
          DatabaseName: DB,
          SkipArchive: false,
          VersionId: '0',
          TableInput: {
            Name: TABLE,
            Description: 'orders, kept by Strata',
            Owner: 'data-team',
            TableType: 'EXTERNAL_TABLE',
            LastAccessTime: 1_690_000_000,
            Retention: 0,
            PartitionKeys: [],
            StorageDescriptor: { Location: ROOT, Columns: [{ Name: 'id', Type: 'bigint' }] },
            Parameters: { table_type: 'ICEBERG', metadata_location: meta(3), previous_metadata_location: meta(1), classification: 'iceberg' },
          },
        },
      },
    ])
    expect(server.table(DB, TABLE)).toEqual({ versionId: '1', input: server.recorded('UpdateTable')[0].TableInput })
    expect(server.archived.get(`${DB}.${TABLE}`)).toHaveLength(1)
    expect(p.takeCounts()).toEqual({ updates: 1, skipped: 0, failures: 0 })
  })

  it('passes metadata.iceberg.glue.skip-archive as SkipArchive, and Glue then keeps no archived version', async () => {
    const p = pointer({ skipArchive: true })
    await p.published(meta(2), 2)
    expect(server.recorded('UpdateTable')[0].SkipArchive).toBe(true)
    expect(server.archived.get(`${DB}.${TABLE}`)).toBeUndefined()
  })

  it('adds table_type and metadata_location to a table registered without them, with no previous location', () => {
    const input = icebergTableInput({ Name: 't', Parameters: { a: 'b' }, VersionId: '3', CreateTime: new Date(0), DatabaseName: 'd' }, meta(1))
    expect(input).toEqual({ Name: 't', Parameters: { a: 'b', table_type: 'ICEBERG', metadata_location: meta(1) } })
  })

  it('moves at most once per interval by the injected clock: publishes inside it only keep the newest pending', async () => {
    const p = pointer()
    await p.published(meta(2), 2) // t=0: the first publish sends
    expect(glueLocation()).toBe(meta(2))
    clock = 500
    await p.published(meta(3), 3)
    clock = 999
    await p.published(meta(4), 4)
    expect(operations()).toEqual(['GetTable', 'UpdateTable'])
    expect(glueLocation()).toBe(meta(2))
    clock = 1000 // the interval has passed: this publish sends its own, the newest
    await p.published(meta(5), 5)
    expect(operations()).toEqual(['GetTable', 'UpdateTable', 'GetTable', 'UpdateTable'])
    expect(server.table(DB, TABLE)!.input.Parameters).toMatchObject({ metadata_location: meta(5), previous_metadata_location: meta(2) })
    expect(server.recorded('UpdateTable').map((b) => b.TableInput.Parameters.metadata_location)).toEqual([meta(2), meta(5)])
  })

  it('flush sends the newest pending location whatever the interval, and nothing when none is pending', async () => {
    const p = pointer()
    await p.published(meta(2), 2)
    clock = 10
    await p.published(meta(3), 3)
    await p.published(meta(4), 4)
    expect(glueLocation()).toBe(meta(2))
    await p.flush()
    expect(glueLocation()).toBe(meta(4))
    expect(server.table(DB, TABLE)!.input.Parameters.previous_metadata_location).toBe(meta(2))
    const before = server.requests.length
    await p.flush()
    // an older id published after the newer one changes nothing either
    await p.published(meta(3), 3)
    await p.flush()
    expect(server.requests.length).toBe(before)
    expect(p.takeCounts()).toEqual({ updates: 2, skipped: 0, failures: 0 })
  })

  it('never moves backwards: a pointer whose snapshot Glue already passed skips the update', async () => {
    const a = pointer()
    const b = pointer()
    await b.published(meta(7), 7)
    await a.published(meta(6), 6)
    await a.flush()
    expect(glueLocation()).toBe(meta(7))
    expect(operations()).toEqual(['GetTable', 'UpdateTable', 'GetTable'])
    expect(a.takeCounts()).toEqual({ updates: 0, skipped: 1, failures: 0 })
  })

  it('two pointers interleaved step by step: the older one, overtaken between its read and its update, re-reads and skips', async () => {
    const a = pointer()
    const b = pointer()
    await whileHeld(
      'UpdateTable',
      // step 1: A reads version 0 (v1) and sends its update of v5, which the server parks
      () => a.published(meta(5), 5),
      // step 2: B reads version 0 and lands v7 (version 1)
      async () => {
        await b.published(meta(7), 7)
        expect(glueLocation()).toBe(meta(7))
      },
    )
    // step 3: A's update arrived with version 0: Glue refused it; A read v7 and stopped
    expect(glueLocation()).toBe(meta(7))
    expect(server.table(DB, TABLE)!.versionId).toBe('1')
    expect(operations()).toEqual(['GetTable', 'UpdateTable', 'GetTable', 'UpdateTable', 'GetTable'])
    expect(server.recorded('UpdateTable').map((u) => [u.VersionId, u.TableInput.Parameters.metadata_location])).toEqual([
      ['0', meta(5)],
      ['0', meta(7)],
    ])
    expect(a.takeCounts()).toEqual({ updates: 0, skipped: 1, failures: 0 })
  })

  it('a concurrent modification is retried: the newer pointer, overtaken by an older one, re-reads and lands on top', async () => {
    const a = pointer()
    const b = pointer()
    await whileHeld('UpdateTable', () => a.published(meta(9), 9), () => b.published(meta(8), 8))
    expect(server.table(DB, TABLE)).toMatchObject({ versionId: '2', input: { Parameters: { metadata_location: meta(9), previous_metadata_location: meta(8) } } })
    expect(server.recorded('UpdateTable').map((u) => u.VersionId)).toEqual(['0', '0', '1'])
    expect(a.takeCounts()).toEqual({ updates: 1, skipped: 0, failures: 0 })
  })

  it('a table modified by another client between the read and the update (a user editing its description) is re-read and kept', async () => {
    const p = pointer()
    // the other client's UpdateTable is the second to arrive, so it is not held
    await whileHeld('UpdateTable', () => p.published(meta(4), 4), () => glue.send(new UpdateTableCommand({ DatabaseName: DB, TableInput: { ...SEED, Description: 'edited', LastAccessTime: undefined } })))
    expect(server.table(DB, TABLE)!.input).toMatchObject({ Description: 'edited', Parameters: { metadata_location: meta(4), previous_metadata_location: meta(1) } })
  })

  it('gives up after its attempts when every update meets a concurrent modification: counted, reported, not thrown, retried by the next flush', async () => {
    const failures: unknown[] = []
    const p = pointer({ attempts: 2, onFailure: (e) => failures.push(e) })
    const cme = { status: 400, type: 'ConcurrentModificationException', message: 'Update table failed due to concurrent modifications.' }
    server.failNext('UpdateTable', cme)
    server.failNext('UpdateTable', cme)
    await expect(p.published(meta(2), 2)).resolves.toBeUndefined()
    expect(operations()).toEqual(['GetTable', 'UpdateTable', 'GetTable', 'UpdateTable'])
    expect(failures).toHaveLength(1)
    expect(failures[0]).toBeInstanceOf(GlueConcurrentModificationError)
    expect(p.takeCounts()).toEqual({ updates: 0, skipped: 0, failures: 1 })
    expect(glueLocation()).toBe(meta(1))
    await p.flush()
    expect(glueLocation()).toBe(meta(2))
    expect(p.takeCounts()).toEqual({ updates: 1, skipped: 0, failures: 0 })
  })

  it('a failed update is counted and not thrown; the next publish after the interval sends the newest location', async () => {
    const failures: { error: unknown; location: string }[] = []
    const p = pointer({ onFailure: (error, pending) => failures.push({ error, location: pending.location }) })
    server.failNext('UpdateTable', { status: 500, type: 'InternalServiceException', message: 'Internal service error' })
    await expect(p.published(meta(2), 2)).resolves.toBeUndefined()
    expect(failures).toHaveLength(1)
    expect(failures[0]).toMatchObject({ location: meta(2), error: { name: 'InternalServiceException' } })
    expect(p.takeCounts()).toEqual({ updates: 0, skipped: 0, failures: 1 })
    clock = 500 // inside the interval: kept pending, nothing sent
    await p.published(meta(3), 3)
    expect(server.requests).toHaveLength(2)
    clock = 1000
    await p.published(meta(4), 4)
    expect(glueLocation()).toBe(meta(4))
    expect(p.takeCounts()).toEqual({ updates: 1, skipped: 0, failures: 0 })
    expect(p.takeCounts()).toEqual({ updates: 0, skipped: 0, failures: 0 })
  })

  it('creates a table that is not in Glue yet, as an Iceberg table at the metadata\'s table location (the exact CreateTable body)', async () => {
    const p = new GluePointer({ glue, database: DB, table: 'fresh', now: () => clock })
    await p.published(meta(1), 1)
    expect(server.requests).toEqual([
      { operation: 'GetTable', body: { DatabaseName: DB, Name: 'fresh' } },
      {
        operation: 'CreateTable',
        body: {
          DatabaseName: DB,
          TableInput: { Name: 'fresh', TableType: 'EXTERNAL_TABLE', Parameters: { table_type: 'ICEBERG', metadata_location: meta(1) }, StorageDescriptor: { Location: ROOT }, PartitionKeys: [] },
        },
      },
    ])
    expect(server.table(DB, 'fresh')!.input.Parameters.metadata_location).toBe(meta(1))
    clock = 10_000 // the default interval
    await p.published(meta(2), 2)
    expect(server.table(DB, 'fresh')).toMatchObject({ versionId: '1', input: { Parameters: { metadata_location: meta(2), previous_metadata_location: meta(1) } } })
    expect(p.takeCounts()).toEqual({ updates: 2, skipped: 0, failures: 0 })
  })

  it('a table created by another committer between the read and the create is read again and moved forward', async () => {
    const a = new GluePointer({ glue, database: DB, table: 'fresh', now: () => clock })
    const b = new GluePointer({ glue, database: DB, table: 'fresh', now: () => clock })
    await whileHeld('CreateTable', () => a.published(meta(5), 5), () => b.published(meta(3), 3))
    expect(operations()).toEqual(['GetTable', 'CreateTable', 'GetTable', 'CreateTable', 'GetTable', 'UpdateTable'])
    expect(server.table(DB, 'fresh')).toMatchObject({ versionId: '1', input: { Parameters: { metadata_location: meta(5), previous_metadata_location: meta(3) } } })
  })

  it('a database that is not in Glue is a failure (EntityNotFoundException), counted and not thrown', async () => {
    const failures: unknown[] = []
    const p = new GluePointer({ glue, database: 'nodb', table: TABLE, now: () => clock, onFailure: (e) => failures.push(e) })
    await p.published(meta(1), 1)
    await p.flush()
    expect(failures.map((e) => (e as Error).name)).toEqual(['EntityNotFoundException', 'EntityNotFoundException'])
    expect(p.takeCounts()).toEqual({ updates: 0, skipped: 0, failures: 2 })
  })

  it('a location pending while an update finds Glue already past it is dropped, not sent', async () => {
    const a = pointer()
    const b = pointer()
    await b.published(meta(9), 9)
    // v6 is published while the update of v5 is in flight, and stays pending behind it; that
    // update finds Glue on v9: v5 skipped, and v6 known to be older
    await whileHeld('GetTable', () => a.published(meta(5), 5), () => a.published(meta(6), 6))
    const before = server.requests.length
    await a.flush()
    expect(server.requests.length).toBe(before)
    expect(glueLocation()).toBe(meta(9))
  })

  it('a publish while an update is in flight stays pending, and flush waits for the update and then sends it', async () => {
    const p = pointer()
    const held = server.hold('UpdateTable')
    const first = p.published(meta(2), 2)
    await held.arrived
    clock = 5000
    await p.published(meta(3), 3) // returns at once: the update of v2 is in flight
    const flushed = p.flush()
    held.release()
    await Promise.all([first, flushed])
    expect(glueLocation()).toBe(meta(3))
    expect(server.recorded('UpdateTable').map((u) => u.TableInput.Parameters.metadata_location)).toEqual([meta(2), meta(3)])
  })
})

describe('glueTarget (the committer\'s STRATA_GLUE_* variables)', () => {
  it('reads both names and the interval, defaults the interval, and is undefined without them', () => {
    expect(glueTarget({ STRATA_GLUE_DATABASE: 'd', STRATA_GLUE_TABLE: 't', STRATA_GLUE_UPDATE_INTERVAL_MS: '0' })).toEqual({ database: 'd', table: 't', updateIntervalMs: 0 })
    expect(glueTarget({ STRATA_GLUE_DATABASE: 'd', STRATA_GLUE_TABLE: 't' })).toEqual({ database: 'd', table: 't', updateIntervalMs: 10_000 })
    expect(glueTarget({})).toBeUndefined()
  })

  it('refuses one name without the other and an interval that is not a whole number, naming the variable', () => {
    expect(() => glueTarget({ STRATA_GLUE_DATABASE: 'd' })).toThrow(/STRATA_GLUE_DATABASE and STRATA_GLUE_TABLE: expected both or neither, got only STRATA_GLUE_DATABASE/)
    expect(() => glueTarget({ STRATA_GLUE_DATABASE: 'd', STRATA_GLUE_TABLE: 't', STRATA_GLUE_UPDATE_INTERVAL_MS: '10s' })).toThrow(/STRATA_GLUE_UPDATE_INTERVAL_MS: expected a non-negative integer, got "10s"/)
  })
})

// The committer function wired as the stack deploys it (STRATA_GLUE_* in its environment, the
// SDK pointed at the Glue server by AWS_ENDPOINT_URL_GLUE), on the embedded S3 backend: the
// Iceberg metadata its fold writes reaches Glue by the end of the invocation, and a Glue that
// refuses the update fails nothing and is counted.
describe('the committer function with a Glue registration', () => {
  let backend: EmbeddedBackend
  const BUCKET = 'glue-committer'
  const savedEnv = { ...process.env }
  beforeAll(async () => {
    backend = await startEmbeddedBackend()
    await backend.createBucket(BUCKET)
  })
  afterAll(async () => {
    process.env = savedEnv
    resetRuntime()
    await backend?.stop()
  })

  it('moves the Glue table to the metadata of each invocation\'s snapshot, as the table\'s skip-archive says, and counts a refused update without failing', async () => {
    const prefix = 'lake/sales.db/orders'
    const uri = `s3://${BUCKET}/${prefix}`
    const store = new S3Store({ bucket: BUCKET, prefix, client: backend.s3Client() })
    const table = await Table.create(store, {
      fields: [
        { name: 'id', type: 'BIGINT NOT NULL' },
        { name: 'v', type: 'STRING' },
      ],
      primaryKeys: ['id'],
      options: { bucket: '1', 'metadata.iceberg.storage': 'table-location', 'metadata.iceberg.delete-after-commit.enabled': 'false', 'metadata.iceberg.glue.skip-archive': 'true' },
    })
    process.env = { ...savedEnv }
    // an interval longer than the test: only the flush at each invocation's end moves Glue
    useFunctionEnv(backend, { orders: { uri } }, { STRATA_TABLE: 'orders', STRATA_GLUE_DATABASE: DB, STRATA_GLUE_TABLE: 'fresh', STRATA_GLUE_UPDATE_INTERVAL_MS: '3600000', AWS_ENDPOINT_URL_GLUE: server.endpoint })
    const metrics: AddedMetric[] = []
    const { committerHandler } = committerFunction(new FunctionRuntime({ onMetric: (m) => metrics.push(m) }))
    const invoke = async (id: number) => {
      const message = await writeMessage(table, [recordFromJson(table.view, { id, v: `v${id}` }, 'row')], { table: 'orders' })
      const body = (await encodeCommitMessage(message!, table.store)).body
      return committerHandler(sqsEvent([sqsRecord(body, { messageId: `m${id}` })]))
    }
    const icebergMetrics = () => metrics.filter((m) => m.name.startsWith('Iceberg')).map((m) => [m.name, m.value])
    const glueMetrics = () => metrics.splice(0).filter((m) => m.name.startsWith('Glue')).map((m) => [m.name, m.value])

    expect((await invoke(1)).batchItemFailures).toEqual([])
    expect(server.table(DB, 'fresh')!.input).toMatchObject({ TableType: 'EXTERNAL_TABLE', StorageDescriptor: { Location: uri }, Parameters: { table_type: 'ICEBERG', metadata_location: `${uri}/metadata/v1.metadata.json` } })
    expect(await store.head('metadata/v1.metadata.json')).not.toBeNull()
    expect(icebergMetrics()).toEqual([['IcebergMetadataWritten', 1], ['IcebergMetadataFailures', 0]])
    expect(glueMetrics()).toEqual([['GlueUpdates', 1], ['GlueUpdateFailures', 0]])

    // the same warm environment, inside the interval: the flush at the end still sends
    expect((await invoke(2)).batchItemFailures).toEqual([])
    expect(server.table(DB, 'fresh')!.input.Parameters).toMatchObject({ metadata_location: `${uri}/metadata/v2.metadata.json`, previous_metadata_location: `${uri}/metadata/v1.metadata.json` })
    // the runtime hands the table's metadata.iceberg.glue.skip-archive to the pointer
    expect(server.recorded('UpdateTable').map((u) => u.SkipArchive)).toEqual([true])
    expect(glueMetrics()).toEqual([['GlueUpdates', 1], ['GlueUpdateFailures', 0]])

    // a role without glue:UpdateTable: Glue says AccessDeniedException (not retried by the SDK)
    server.failNext('UpdateTable', { status: 400, type: 'AccessDeniedException', message: 'User is not authorized to perform: glue:UpdateTable' })
    expect((await invoke(3)).batchItemFailures).toEqual([])
    expect(server.table(DB, 'fresh')!.input.Parameters.metadata_location).toBe(`${uri}/metadata/v2.metadata.json`)
    expect(await table.snapshots.latestId()).toBe(3)
    expect(icebergMetrics()).toEqual([['IcebergMetadataWritten', 1], ['IcebergMetadataFailures', 0]])
    expect(glueMetrics()).toEqual([['GlueUpdates', 0], ['GlueUpdateFailures', 1]])

    // the next invocation sends its own, newer metadata
    expect((await invoke(4)).batchItemFailures).toEqual([])
    expect(server.table(DB, 'fresh')!.input.Parameters.metadata_location).toBe(`${uri}/metadata/v4.metadata.json`)
    expect(glueMetrics()).toEqual([['GlueUpdates', 1], ['GlueUpdateFailures', 0]])
  })
})
