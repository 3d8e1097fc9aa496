// The error classes a caller branches on (lib/errors.ts): each kind, how the classes nest,
// the CLI's exit code per kind (lib/cli/main.ts exitOf), and store failures classified as
// such, through a fault-injecting store and through S3Store's wrapping of SDK errors.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ensureTable } from '../cdk/handlers/table-init.ts'
import { exitOf, main } from '../lib/cli/main.ts'
import {
  AlreadyExistsError, CommitConflictError, CommitFailedError, ConflictError, CorruptFileError, MissingReferenceError, NotFoundError, RefusedError,
  SnapshotExpiredError, StaleSchemaError, StoreError, StrataError, StrataInputError, errorKind,
} from '../lib/errors.ts'
import { Table } from '../lib/handle/table.ts'
import { createTag } from '../lib/handle/tags.ts'
import { ReadGoneError } from '../lib/read/read-pins.ts'
import { FaultyStore } from '../lib/store/faulty-store.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { RetryingStore, isTransientStoreError } from '../lib/store/retrying-store.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const SCHEMA = { fields: [{ name: 'id', type: 'BIGINT NOT NULL' }, { name: 'v', type: 'STRING' }], primaryKeys: ['id'], options: { bucket: '1' } }

const dirs: string[] = []
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'strata-errors-'))
  dirs.push(d)
  return d
}
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function failure(p: Promise<unknown>): Promise<unknown> {
  try {
    await p
  } catch (e) {
    return e
  }
  throw new Error('expected the call to fail')
}

/** Runs the CLI in process with stderr kept, so its `strata: ...` line does not reach the test output. */
async function cli(args: string[]): Promise<{ code: number; stderr: string }> {
  const write = process.stderr.write
  let stderr = ''
  process.stderr.write = ((chunk: string | Uint8Array) => {
    stderr += String(chunk)
    return true
  }) as typeof process.stderr.write
  try {
    return { code: await main(args), stderr }
  } finally {
    process.stderr.write = write
  }
}

describe('error classes', () => {
  it('each kind has its class, and the classes nest as docs/design.md "Errors" says', () => {
    const cases: [StrataError, string][] = [
      [new StrataInputError('x'), 'input'],
      [new AlreadyExistsError('x'), 'input'],
      [new NotFoundError('x'), 'not-found'],
      [new RefusedError('x'), 'refused'],
      [new ConflictError('x'), 'conflict'],
      [new CommitConflictError('x'), 'conflict'],
      [new CommitFailedError('x'), 'conflict'],
      [new SnapshotExpiredError(3), 'conflict'],
      [new ReadGoneError('x'), 'conflict'],
      [new StaleSchemaError('x'), 'stale-schema'],
      [new StoreError('x'), 'store'],
      [new CorruptFileError('f', 'x'), 'corrupt'],
      [new MissingReferenceError('x'), 'corrupt'],
    ]
    for (const [e, kind] of cases) {
      expect(e).toBeInstanceOf(StrataError)
      expect(e).toBeInstanceOf(Error)
      expect(e.kind, e.name).toBe(kind)
      expect(errorKind(e)).toBe(kind)
    }
    // callers that answer bad input keep answering a missing name and a refusal the same way
    expect(new NotFoundError('x')).toBeInstanceOf(StrataInputError)
    expect(new RefusedError('x')).toBeInstanceOf(StrataInputError)
    expect(new AlreadyExistsError('x')).toBeInstanceOf(StrataInputError)
    // a lost race is not bad input, and the commit errors stay apart from each other
    expect(new CommitConflictError('x')).toBeInstanceOf(ConflictError)
    expect(new CommitConflictError('x')).not.toBeInstanceOf(StrataInputError)
    expect(new CommitFailedError('x')).not.toBeInstanceOf(CommitConflictError)
    expect(new StaleSchemaError('x')).not.toBeInstanceOf(StrataInputError)
    expect(new MissingReferenceError('x')).not.toBeInstanceOf(CorruptFileError)
    expect(new CommitConflictError('x', true).landsNever).toBe(true)
    expect(new CorruptFileError('data/f.parquet', 'bad').message).toBe('data/f.parquet: bad')
    expect(errorKind(new Error('a bug'))).toBe('internal')
    expect(errorKind('thrown text')).toBe('internal')
  })

  it('errorKind finds a StrataError or a store error along the cause chain', () => {
    expect(errorKind(new Error('outer', { cause: new NotFoundError('inner') }))).toBe('not-found')
    const sdk = Object.assign(new Error('Access Denied'), { name: 'AccessDenied', $metadata: { httpStatusCode: 403 } })
    expect(errorKind(sdk)).toBe('store')
    const fsError = Object.assign(new Error('EACCES: permission denied'), { code: 'EACCES', syscall: 'open' })
    expect(errorKind(new Error('wrapped', { cause: fsError }))).toBe('store')
  })
})

describe('the CLI exit code of each kind', () => {
  it('maps every kind to its own code; usage errors stay 2', () => {
    expect(exitOf(new StrataInputError('--snapshot "x": expected a snapshot id')).code).toBe(2)
    expect(exitOf(new NotFoundError('no table')).code).toBe(3)
    expect(exitOf(new CommitConflictError('snapshot 4 was taken')).code).toBe(4)
    expect(exitOf(new CommitFailedError('not confirmed')).code).toBe(4)
    expect(exitOf(new StaleSchemaError('reopen')).code).toBe(5)
    expect(exitOf(new StoreError('S3 GetObject failed')).code).toBe(6)
    expect(exitOf(new RefusedError('not supported')).code).toBe(7)
    expect(exitOf(new CorruptFileError('f', 'bad')).code).toBe(8)
    expect(exitOf(new MissingReferenceError('gone')).code).toBe(8)
    expect(exitOf(new Error('a bug')).code).toBe(1)
  })

  it('on a real table: bad input 2, a missing table 3, an existing tag 2, a refused column type 7', async () => {
    const dir = tempDir()
    const uri = join(dir, 't')
    const missing = await cli(['status', join(dir, 'nothing-here')])
    expect(missing.code).toBe(3)
    expect(missing.stderr).toMatch(/no table at/)
    expect(errorKind(await failure(Table.open(join(dir, 'nothing-here'))))).toBe('not-found')

    const refused = await failure(Table.create(join(dir, 'nested'), { ...SCHEMA, fields: [...SCHEMA.fields, { name: 'a', type: 'ARRAY<INT>' }], primaryKeys: [...SCHEMA.primaryKeys, 'a'] }))
    expect(refused).toBeInstanceOf(RefusedError)
    expect(exitOf(refused).code).toBe(7)

    const table = await Table.create(uri, SCHEMA)
    const exists = await failure(Table.create(uri, SCHEMA))
    expect(exists).toBeInstanceOf(AlreadyExistsError)
    expect(exitOf(exists).code).toBe(2)

    expect((await cli(['read', uri, '--snapshot', 'x'])).code).toBe(2)
    expect((await cli(['read', uri, '--snapshot', '5'])).code).toBe(3)
    expect((await cli(['tag', 'delete', uri, 'no-such-tag'])).code).toBe(3)

    await writeBatch(table, [recordFromJson(table.view, { id: 1, v: 'a' }, 'r')])
    await createTag(table, 'first')
    const tagTwice = await failure(createTag(table, 'first'))
    expect(tagTwice).toBeInstanceOf(AlreadyExistsError)
    expect(exitOf(tagTwice).code).toBe(2)
  })
})

describe("the stack's table-init", () => {
  it('creates a missing table (NotFoundError) and, racing another deployment, checks the one it finds (AlreadyExistsError)', async () => {
    const uri = join(tempDir(), 't')
    const props = { TableName: 't', TableUri: uri, Schema: JSON.stringify(SCHEMA) }
    const lines = await Promise.all([ensureTable(props), ensureTable(props), ensureTable(props)])
    expect(lines.filter((l) => l.startsWith('created')).length).toBe(1)
    expect(await ensureTable(props)).toMatch(/exists with the configured schema/)
  })
})

describe('store failures', () => {
  it('a fault that outlasts the retries surfaces classified as a store failure (exit 6)', async () => {
    const faulty = new FaultyStore(new MemoryStore(), { rules: [{ kind: 'error', when: (c) => c.op === 'putIfAbsent', times: Infinity }] })
    const store = new RetryingStore(faulty, { maxAttempts: 3, sleep: async () => {} })
    const e = await failure(Table.create(store, SCHEMA))
    expect(faulty.injected.length).toBe(3)
    expect(errorKind(e)).toBe('store')
    expect(exitOf(e).code).toBe(6)
  })

  it('a missing object asked a range of is a StoreError', async () => {
    const e = await failure(new MemoryStore().getRange('absent', 0, 1))
    expect(e).toBeInstanceOf(StoreError)
    expect((e as Error).message).toMatch(/getRange: no object 'absent'/)
  })

  it("S3Store wraps the SDK's error in a StoreError that keeps it as the cause, so retry policies still see it", async () => {
    const sdkError = (status: number, name: string) => Object.assign(new Error(name), { name, $metadata: { httpStatusCode: status, attempts: 1 } })
    let next = sdkError(403, 'AccessDenied')
    const client = { send: async () => Promise.reject(next) } as unknown as ConstructorParameters<typeof S3Store>[0]['client']
    const s3 = new S3Store({ bucket: 'b', client })
    const denied = await failure(s3.get('k'))
    expect(denied).toBeInstanceOf(StoreError)
    expect((denied as Error).cause).toBe(next)
    expect(isTransientStoreError(denied)).toBe(false)
    next = sdkError(503, 'SlowDown')
    const slow = await failure(s3.put('k', new Uint8Array([1])))
    expect(slow).toBeInstanceOf(StoreError)
    expect(isTransientStoreError(slow)).toBe(true)
    expect(exitOf(slow).code).toBe(6)
  })

  it('a RetryingStore over an S3Store is refused', () => {
    const client = { send: async () => ({}) } as unknown as ConstructorParameters<typeof S3Store>[0]['client']
    expect(() => new RetryingStore(new S3Store({ bucket: 'b', client }))).toThrow(RefusedError)
  })
})
