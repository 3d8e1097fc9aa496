import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { startEmbeddedBackend, type EmbeddedBackend } from '../local/embedded.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { openStore } from '../lib/store/open-store.ts'
import { S3Store } from '../lib/store/s3-store.ts'
import { StrataInputError } from '../lib/errors.ts'

const enc = new TextEncoder()
const dec = new TextDecoder()
const bytes = (s: string) => enc.encode(s)
const text = (b: Uint8Array | null) => (b === null ? null : dec.decode(b))

let backend: EmbeddedBackend
const tempDirs: string[] = []
let counter = 0

beforeAll(async () => {
  backend = await startEmbeddedBackend()
  await backend.createBucket('strata-store-test')
})

afterAll(async () => {
  await backend?.stop()
  await Promise.all(tempDirs.map((d) => rm(d, { recursive: true, force: true })))
})

async function freshTempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'strata-store-'))
  tempDirs.push(dir)
  return dir
}

interface Harness {
  name: string
  make(): Promise<ObjectStore>
  /** writes many small objects quickly; the S3 one seeds through the server to keep the test fast */
  bulkPut(store: ObjectStore, keys: string[]): Promise<void>
}

const putAll = async (store: ObjectStore, keys: string[]) => {
  for (let i = 0; i < keys.length; i += 64) {
    await Promise.all(keys.slice(i, i + 64).map((k) => store.put(k, bytes(k))))
  }
}

const harnesses: Harness[] = [
  { name: 'MemoryStore', make: async () => new MemoryStore(), bulkPut: putAll },
  { name: 'LocalFileStore', make: async () => new LocalFileStore(await freshTempDir()), bulkPut: putAll },
  {
    name: 'S3Store (embedded fauxqs)',
    make: async () =>
      new S3Store({ bucket: 'strata-store-test', prefix: `case-${++counter}`, client: backend.s3Client() }),
    bulkPut: async (store, keys) => {
      // Through fastify's inject: the same routes and hooks, without HTTP and SigV4 per key.
      const app = backend.app as { inject(o: object): Promise<{ statusCode: number }> }
      const prefix = (store as S3Store).prefix
      for (let i = 0; i < keys.length; i += 128) {
        const codes = await Promise.all(
          keys.slice(i, i + 128).map((k) =>
            app.inject({ method: 'PUT', url: `/strata-store-test/${prefix}/${k}`, payload: Buffer.from(k) }),
          ),
        )
        expect(codes.every((r) => r.statusCode === 200)).toBe(true)
      }
    },
  },
]

describe.each(harnesses)('ObjectStore conformance: $name', ({ make, bulkPut }) => {
  it('get and head of a missing key are null', async () => {
    const store = await make()
    expect(await store.get('nope/x')).toBeNull()
    expect(await store.head('nope/x')).toBeNull()
  })

  it('put then get returns the bytes; head reports size and a time', async () => {
    const store = await make()
    const before = Date.now()
    await store.put('dir/sub/obj.bin', bytes('hello world'))
    expect(text(await store.get('dir/sub/obj.bin'))).toBe('hello world')
    const info = await store.head('dir/sub/obj.bin')
    expect(info?.key).toBe('dir/sub/obj.bin')
    expect(info?.size).toBe(11)
    // S3's HEAD time has whole-second precision
    expect(info!.lastModified).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000)
  })

  it('stores empty objects', async () => {
    const store = await make()
    await store.put('empty', new Uint8Array(0))
    expect(await store.get('empty')).toEqual(new Uint8Array(0))
    expect((await store.head('empty'))?.size).toBe(0)
  })

  it('put overwrites', async () => {
    const store = await make()
    await store.put('k', bytes('first version'))
    await store.put('k', bytes('v2'))
    expect(text(await store.get('k'))).toBe('v2')
    expect((await store.head('k'))?.size).toBe(2)
  })

  it('keeps its own copy of the bytes', async () => {
    const store = await make()
    const data = bytes('abc')
    await store.put('k', data)
    data[0] = 0x7a
    const got = (await store.get('k'))!
    expect(text(got)).toBe('abc')
    got[1] = 0x7a
    expect(text(await store.get('k'))).toBe('abc')
  })

  it('getRange returns [start, end) and rejects ranges outside the object', async () => {
    const store = await make()
    await store.put('r', bytes('0123456789'))
    expect(text(await store.getRange('r', 0, 10))).toBe('0123456789')
    expect(text(await store.getRange('r', 3, 7))).toBe('3456')
    expect(text(await store.getRange('r', 9, 10))).toBe('9')
    expect(await store.getRange('r', 4, 4)).toEqual(new Uint8Array(0))
    await expect(store.getRange('r', 5, 11)).rejects.toThrow(/exceeds object size 10/)
    await expect(store.getRange('r', 10, 12)).rejects.toThrow(/exceeds object size 10/)
    await expect(store.getRange('r', 5, 4)).rejects.toThrow(/start <= end/)
    await expect(store.getRange('missing', 0, 1)).rejects.toThrow(/no object 'missing'/)
    await expect(store.getRange('missing', 0, 0)).rejects.toThrow(/no object 'missing'/)
  })

  it('delete removes an object; deleting a missing key is fine', async () => {
    const store = await make()
    await store.put('a/b', bytes('x'))
    await store.delete('a/b')
    expect(await store.get('a/b')).toBeNull()
    expect(await store.head('a/b')).toBeNull()
    expect(await store.list('')).toEqual([])
    await store.delete('a/b')
    await store.delete('never/was')
  })

  it('list filters by string prefix and sorts by key', async () => {
    const store = await make()
    const keys = [
      'snapshot/snapshot-10',
      'snapshot/snapshot-2',
      'snapshot/LATEST',
      'snapshot/snapshot-1',
      'a/1',
      'ab',
      'a/2/deep/er',
      'b/x/y',
    ]
    for (const k of keys) await store.put(k, bytes(k))
    const keysOf = async (prefix: string) => (await store.list(prefix)).map((o) => o.key)
    expect(await keysOf('')).toEqual([...keys].sort())
    expect(await keysOf('a/')).toEqual(['a/1', 'a/2/deep/er'])
    expect(await keysOf('a')).toEqual(['a/1', 'a/2/deep/er', 'ab'])
    expect(await keysOf('snapshot/snap')).toEqual(['snapshot/snapshot-1', 'snapshot/snapshot-10', 'snapshot/snapshot-2'])
    expect(await keysOf('b/x/y')).toEqual(['b/x/y'])
    expect(await keysOf('nope/')).toEqual([])
    expect(await keysOf('b/x/y/')).toEqual([])
    const infos = await store.list('snapshot/')
    expect(infos.map((o) => o.size)).toEqual(infos.map((o) => o.key.length))
    expect(infos.every((o) => o.lastModified > 0)).toBe(true)
  })

  it('list returns every key past S3 page size (1000)', async () => {
    const store = await make()
    const keys = Array.from({ length: 1234 }, (_, i) => `bucket-${i % 3}/data-${i.toString(36)}.parquet`)
    await bulkPut(store, keys)
    const listed = await store.list('')
    expect(listed.map((o) => o.key)).toEqual([...keys].sort())
    expect((await store.list('bucket-1/')).length).toBe(keys.filter((k) => k.startsWith('bucket-1/')).length)
  })

  it('putIfAbsent creates once and never overwrites', async () => {
    const store = await make()
    expect(await store.putIfAbsent('snapshot/snapshot-1', bytes('mine'))).toBe(true)
    expect(text(await store.get('snapshot/snapshot-1'))).toBe('mine')
    expect(await store.putIfAbsent('snapshot/snapshot-1', bytes('theirs'))).toBe(false)
    expect(text(await store.get('snapshot/snapshot-1'))).toBe('mine')
    await store.put('snapshot/snapshot-1', bytes('forced'))
    expect(await store.putIfAbsent('snapshot/snapshot-1', bytes('again'))).toBe(false)
    expect(text(await store.get('snapshot/snapshot-1'))).toBe('forced')
    await store.delete('snapshot/snapshot-1')
    expect(await store.putIfAbsent('snapshot/snapshot-1', bytes('after delete'))).toBe(true)
    expect((await store.list('snapshot/')).map((o) => o.key)).toEqual(['snapshot/snapshot-1'])
  })

  it('16 concurrent putIfAbsent on one key: exactly one wins and its bytes are stored', async () => {
    const store = await make()
    for (let round = 0; round < 3; round++) {
      const key = `snapshot/snapshot-${round}`
      const results = await Promise.all(
        Array.from({ length: 16 }, (_, i) => store.putIfAbsent(key, bytes(`committer-${i}-${'x'.repeat(i * 100)}`))),
      )
      const winners = results.flatMap((won, i) => (won ? [i] : []))
      expect(winners).toHaveLength(1)
      expect(text(await store.get(key))).toBe(`committer-${winners[0]}-${'x'.repeat(winners[0] * 100)}`)
    }
    expect((await store.list('')).map((o) => o.key)).toEqual(['snapshot/snapshot-0', 'snapshot/snapshot-1', 'snapshot/snapshot-2'])
  })

  it('behaves like a Map under random operation sequences', async () => {
    const keyArb = fc.constantFrom('a', 'a/b', 'a/c', 'b/a', 'ba')
    const opArb = fc.oneof(
      fc.record({ op: fc.constant('put' as const), key: keyArb, value: fc.string({ maxLength: 8 }) }),
      fc.record({ op: fc.constant('putIfAbsent' as const), key: keyArb, value: fc.string({ maxLength: 8 }) }),
      fc.record({ op: fc.constant('delete' as const), key: keyArb }),
      fc.record({ op: fc.constant('get' as const), key: keyArb }),
      fc.record({ op: fc.constant('list' as const), prefix: fc.constantFrom('', 'a', 'a/', 'b') }),
    )
    await fc.assert(
      fc.asyncProperty(fc.array(opArb, { maxLength: 12 }), async (ops) => {
        const store = await make()
        const model = new Map<string, string>()
        for (const o of ops) {
          if (o.op === 'put') {
            // 'a' and 'a/b' cannot both be files on a file system; keep sequences representable.
            if (conflictsWithDirectory(model, o.key)) continue
            await store.put(o.key, bytes(o.value))
            model.set(o.key, o.value)
          } else if (o.op === 'putIfAbsent') {
            if (conflictsWithDirectory(model, o.key)) continue
            expect(await store.putIfAbsent(o.key, bytes(o.value))).toBe(!model.has(o.key))
            if (!model.has(o.key)) model.set(o.key, o.value)
          } else if (o.op === 'delete') {
            await store.delete(o.key)
            model.delete(o.key)
          } else if (o.op === 'get') {
            expect(text(await store.get(o.key))).toBe(model.get(o.key) ?? null)
          } else {
            const expected = [...model.keys()].filter((k) => k.startsWith(o.prefix)).sort()
            expect((await store.list(o.prefix)).map((x) => x.key)).toEqual(expected)
          }
        }
      }),
      { numRuns: 15 },
    )
  })
})

/** True when `key` would be a file where another key needs a directory, or the reverse. */
function conflictsWithDirectory(model: Map<string, string>, key: string): boolean {
  for (const k of model.keys()) {
    if (k.startsWith(`${key}/`) || key.startsWith(`${k}/`)) return true
  }
  return false
}

describe('LocalFileStore specifics', () => {
  it('hides in-flight temp files from list and leaves none behind', async () => {
    const dir = await freshTempDir()
    const store = new LocalFileStore(dir)
    await mkdir(join(dir, 'snapshot'), { recursive: true })
    await writeFile(join(dir, 'snapshot', '.tmp-crashed-writer'), 'partial')
    await store.put('snapshot/snapshot-1', bytes('a'))
    await store.putIfAbsent('snapshot/snapshot-2', bytes('b'))
    await store.putIfAbsent('snapshot/snapshot-2', bytes('c'))
    expect((await store.list('')).map((o) => o.key)).toEqual(['snapshot/snapshot-1', 'snapshot/snapshot-2'])
    expect((await readdir(join(dir, 'snapshot'))).sort()).toEqual(['.tmp-crashed-writer', 'snapshot-1', 'snapshot-2'])
  })

  it('shows the temp files of a crashed write through listLeftovers only, and deletes them through deleteLeftover', async () => {
    const dir = await freshTempDir()
    const store = new LocalFileStore(dir)
    await store.put('manifest/m-1', bytes('m'))
    await mkdir(join(dir, 'dt=1', 'bucket-0'), { recursive: true })
    await writeFile(join(dir, 'manifest', '.tmp-a'), 'partial')
    await writeFile(join(dir, 'dt=1', 'bucket-0', '.tmp-b'), 'partial data')
    await writeFile(join(dir, '.tmp-c'), '')
    expect((await store.list('')).map((o) => o.key)).toEqual(['manifest/m-1'])
    const leftovers = await store.listLeftovers('')
    expect(leftovers.map((o) => [o.key, o.size])).toEqual([
      ['.tmp-c', 0],
      ['dt=1/bucket-0/.tmp-b', 12],
      ['manifest/.tmp-a', 7],
    ])
    expect((await store.listLeftovers('manifest/')).map((o) => o.key)).toEqual(['manifest/.tmp-a'])
    expect(await store.listLeftovers('snapshot/')).toEqual([])
    // a leftover key is not an object key, and an object key is not a leftover key
    await expect(store.get('manifest/.tmp-a')).rejects.toThrow(StrataInputError)
    await expect(store.deleteLeftover('manifest/m-1')).rejects.toThrow(/expected a key from listLeftovers/)
    await expect(store.deleteLeftover('../x/.tmp-a')).rejects.toThrow(StrataInputError)
    for (const o of leftovers) await store.deleteLeftover(o.key)
    await store.deleteLeftover('manifest/.tmp-a') // already gone: not an error
    expect(await store.listLeftovers('')).toEqual([])
    // the emptied bucket directory went too, as after deleting its last object
    expect((await readdir(dir)).sort()).toEqual(['manifest'])
    expect(text(await store.get('manifest/m-1'))).toBe('m')
  })

  it('lists nothing under a root that does not exist yet', async () => {
    const store = new LocalFileStore(join(await freshTempDir(), 'not', 'yet'))
    expect(await store.list('')).toEqual([])
    expect(await store.get('x')).toBeNull()
  })

  it('a key naming a directory is absent', async () => {
    const store = new LocalFileStore(await freshTempDir())
    await store.put('dir/file', bytes('x'))
    expect(await store.get('dir')).toBeNull()
    expect(await store.head('dir')).toBeNull()
    await expect(store.getRange('dir', 0, 0)).rejects.toThrow(/no object 'dir'/)
  })

  it('deleting the last object under a directory frees its name, like S3 (seed 1039619116 found this)', async () => {
    const dir = await freshTempDir()
    const store = new LocalFileStore(dir)
    expect(await store.putIfAbsent('a/b/c', bytes('x'))).toBe(true)
    await store.put('a/d', bytes('y'))
    await store.delete('a/b/c')
    expect(await readdir(join(dir, 'a'))).toEqual(['d']) // a/b is gone, a still holds d
    await store.put('a/b', bytes('now an object'))
    await store.delete('a/d')
    await store.delete('a/b')
    expect(await readdir(dir)).toEqual([])
    await store.put('a', bytes('z'))
    expect(text(await store.get('a'))).toBe('z')
  })

  it('an object where objects live under the same name, or the reverse, is refused with both named', async () => {
    const store = new LocalFileStore(await freshTempDir())
    await store.put('a/b', bytes('x'))
    await expect(store.put('a', bytes('y'))).rejects.toThrow(/object key 'a' cannot be stored .* both an object and objects under it/)
    await expect(store.putIfAbsent('a', bytes('y'))).rejects.toThrow(StrataInputError)
    await expect(store.put('a/b/c', bytes('y'))).rejects.toThrow(/object key 'a\/b\/c' cannot be stored/)
    expect((await store.list('')).map((o) => o.key)).toEqual(['a/b'])
    expect(text(await store.get('a/b'))).toBe('x')
  })

  it.each(['../escape', '/abs', 'a//b', 'a/./b', 'a/', '', 'a\\b', 'x/.tmp-1'])('rejects key %j', async (key) => {
    const store = new LocalFileStore(await freshTempDir())
    await expect(store.put(key, bytes('x'))).rejects.toThrow(StrataInputError)
    await expect(store.get(key)).rejects.toThrow(/is not valid/)
  })

  it('names its root as a file:// URI', () => {
    const store = new LocalFileStore('relative/dir')
    expect(store.root).toBe(resolve('relative/dir'))
    expect(store.uri).toBe(pathToFileURL(resolve('relative/dir')).href)
  })
})

describe('S3Store specifics', () => {
  it('paginates with small pages without losing or repeating keys', async () => {
    const store = new S3Store({ bucket: 'strata-store-test', prefix: 'paged', client: backend.s3Client(), listPageSize: 7 })
    const keys = Array.from({ length: 50 }, (_, i) => `k-${String(i).padStart(3, '0')}`)
    await Promise.all(keys.map((k) => store.put(k, bytes(k))))
    expect((await store.list('')).map((o) => o.key)).toEqual(keys)
    expect((await store.list('k-01')).map((o) => o.key)).toEqual(keys.slice(10, 20))
  })

  it('with no prefix, keys are bucket keys; with one, keys are relative to it', async () => {
    await backend.createBucket('strata-root-test')
    const root = new S3Store({ bucket: 'strata-root-test', client: backend.s3Client() })
    const nested = new S3Store({ bucket: 'strata-root-test', prefix: '/tables/t1/', client: backend.s3Client() })
    expect(root.uri).toBe('s3://strata-root-test')
    expect(nested.uri).toBe('s3://strata-root-test/tables/t1')
    await nested.put('schema/schema-0', bytes('{}'))
    await root.put('top', bytes('t'))
    expect((await root.list('')).map((o) => o.key)).toEqual(['tables/t1/schema/schema-0', 'top'])
    expect((await nested.list('')).map((o) => o.key)).toEqual(['schema/schema-0'])
    expect(text(await root.get('tables/t1/schema/schema-0'))).toBe('{}')
  })

  it('a missing bucket is an error naming the store, not an absent key', async () => {
    const store = new S3Store({ bucket: 'no-such-bucket', client: backend.s3Client() })
    await expect(store.get('k')).rejects.toThrow(/s3:\/\/no-such-bucket\/k failed: NoSuchBucket/)
    await expect(store.put('k', bytes('x'))).rejects.toThrow(/NoSuchBucket/)
  })

  describe('409 ConditionalRequestConflict (real S3 under racing conditional writes)', () => {
    const conflict = () => Object.assign(new Error('conflict'), { name: 'ConditionalRequestConflict', $metadata: { httpStatusCode: 409 } })
    const notFound = () => Object.assign(new Error('nf'), { name: 'NotFound', $metadata: { httpStatusCode: 404 } })
    /** A client that answers PutObject from `puts` in turn and HeadObject with `headExists`. */
    function scripted(puts: Array<'ok' | '409' | '412'>, headExists: boolean) {
      const calls: string[] = []
      const client = {
        async send(command: object) {
          if (command instanceof HeadObjectCommand) {
            calls.push('head')
            if (!headExists) throw notFound()
            return { ContentLength: 1, LastModified: new Date() }
          }
          expect(command).toBeInstanceOf(PutObjectCommand)
          expect((command as PutObjectCommand).input.IfNoneMatch).toBe('*')
          const next = puts[calls.filter((c) => c === 'put').length] ?? '409'
          calls.push('put')
          if (next === '409') throw conflict()
          if (next === '412') throw Object.assign(new Error('pf'), { name: 'PreconditionFailed', $metadata: { httpStatusCode: 412 } })
          return {}
        },
      } as unknown as S3Client
      return { store: new S3Store({ bucket: 'b', client }), calls }
    }
    const settle = async <T>(p: Promise<T>) => {
      const result = p.then((v) => ({ v }), (e: unknown) => ({ e }))
      await vi.runAllTimersAsync()
      return result
    }

    it('retries with backoff until the write applies', async () => {
      vi.useFakeTimers()
      try {
        const { store, calls } = scripted(['409', '409', 'ok'], false)
        expect(await settle(store.putIfAbsent('k', bytes('x')))).toEqual({ v: true })
        expect(calls).toEqual(['put', 'put', 'put'])
        const lost = scripted(['409', '412'], true)
        expect(await settle(lost.store.putIfAbsent('k', bytes('x')))).toEqual({ v: false })
      } finally {
        vi.useRealTimers()
      }
    })

    it('after the last conflict, decides by HEAD: present → false, absent → error', async () => {
      vi.useFakeTimers()
      try {
        const present = scripted([], true)
        expect(await settle(present.store.putIfAbsent('k', bytes('x')))).toEqual({ v: false })
        expect(present.calls).toEqual(['put', 'put', 'put', 'put', 'put', 'head'])
        const absent = scripted([], false)
        const { e } = (await settle(absent.store.putIfAbsent('k', bytes('x')))) as { e: Error }
        expect(e.message).toMatch(/s3:\/\/b\/k.*5 attempts answered 409 ConditionalRequestConflict and the key is still absent/)
      } finally {
        vi.useRealTimers()
      }
    })
  })

  it('rejects bad options', () => {
    expect(() => new S3Store({ bucket: '', client: backend.s3Client() })).toThrow(StrataInputError)
    expect(() => new S3Store({ bucket: 'b', client: backend.s3Client(), listPageSize: 1001 })).toThrow(/listPageSize 1001/)
  })
})

describe('openStore', () => {
  it('opens a plain path (relative to cwd) or a file:// URI as a LocalFileStore', async () => {
    const rel = openStore('some/table')
    expect(rel).toBeInstanceOf(LocalFileStore)
    expect((rel as LocalFileStore).root).toBe(resolve('some/table'))
    const dir = await freshTempDir()
    const abs = openStore(dir)
    expect((abs as LocalFileStore).root).toBe(dir)
    const viaUrl = openStore(pathToFileURL(dir).href)
    expect(viaUrl).toBeInstanceOf(LocalFileStore)
    expect(viaUrl.uri).toBe(abs.uri)
    await viaUrl.put('x', bytes('1'))
    expect(text(await abs.get('x'))).toBe('1')
  })

  it('opens memory://name as one shared MemoryStore per name', async () => {
    const a = openStore('memory://shared-test')
    const b = openStore('memory://shared-test')
    const other = openStore('memory://other-test')
    expect(a).toBeInstanceOf(MemoryStore)
    expect(a.uri).toBe('memory://shared-test')
    await a.put('k', bytes('v'))
    expect(text(await b.get('k'))).toBe('v')
    expect(await other.get('k')).toBeNull()
  })

  it('opens s3://bucket/prefix as an S3Store using AWS_ENDPOINT_URL with path-style', async () => {
    vi.stubEnv('AWS_ENDPOINT_URL', backend.endpoint)
    vi.stubEnv('AWS_ENDPOINT_URL_S3', '')
    vi.stubEnv('AWS_REGION', backend.region)
    vi.stubEnv('AWS_ACCESS_KEY_ID', backend.credentials.accessKeyId)
    vi.stubEnv('AWS_SECRET_ACCESS_KEY', backend.credentials.secretAccessKey)
    try {
      const store = openStore('s3://strata-store-test/from-env/t') as S3Store
      const bare = openStore('s3://strata-store-test') as S3Store
      try {
        expect(store).toBeInstanceOf(S3Store)
        expect([store.bucket, store.prefix, store.uri]).toEqual(['strata-store-test', 'from-env/t', 's3://strata-store-test/from-env/t'])
        expect([bare.prefix, bare.uri]).toEqual(['', 's3://strata-store-test'])
        await store.put('k', bytes('through env'))
        expect(text(await bare.get('from-env/t/k'))).toBe('through env')
      } finally {
        store.destroy()
        bare.destroy()
      }
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it.each([
    ['', /is empty/],
    ['http://example.com/t', /unsupported scheme 'http:\/\/'/],
    ['gs://bucket/t', /unsupported scheme 'gs:\/\/'/],
    ['s3://', /no valid S3 bucket name/],
    ['s3:///prefix', /no valid S3 bucket name/],
    ['s3://Bad_Bucket/t', /no valid S3 bucket name/],
    ['s3://bucket//t', /empty segment/],
    ['memory://', /needs a name/],
    ['file://remote-host/t', /not a valid file URI/],
  ])('rejects %j naming the URI and the accepted forms', (uri, reason) => {
    let error: unknown
    try {
      openStore(uri)
    } catch (err) {
      error = err
    }
    expect(error).toBeInstanceOf(StrataInputError)
    const message = (error as Error).message
    expect(message).toMatch(reason)
    expect(message).toContain(`'${uri}'`)
    expect(message).toContain("'s3://bucket[/prefix]'")
    expect(message).toContain("'memory://name'")
  })
})
