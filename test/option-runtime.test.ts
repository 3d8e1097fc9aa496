// Options the running Node cannot serve: zstd (file.compression, manifest.compression) needs
// node:zlib's encoder (Node >= 22.15). Refused where a schema is written (an alter's
// set-option here; create through assertRuntimeServes), never where a table is opened. The
// capability is an argument, so both answers run on any Node; one test reads this Node's.

import zlib from 'node:zlib'
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { alterTable, applySchemaChanges } from '../lib/handle/alter.ts'
import { Table } from '../lib/handle/table.ts'
import { RefusedError } from '../lib/errors.ts'
import { assertRuntimeServes, runtimeOptionRefusal, zstdEncoderAvailable } from '../lib/table/options.ts'
import { createSchema, serializeSchema } from '../lib/table/schema.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { strata } from './helpers/cli-in-process.ts'

const SCHEMA = { fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'STRING' }], primaryKeys: ['id'] }
const NODE_MAJOR = process.versions.node.split('.')[0]
const HAS_ZSTD = typeof (zlib as unknown as { zstdCompressSync?: unknown }).zstdCompressSync === 'function'

describe('runtimeOptionRefusal', () => {
  it('names the option, the value, the Node running and what it needs, when the Node has no zstd encoder', () => {
    for (const key of ['file.compression', 'manifest.compression']) {
      const refusal = runtimeOptionRefusal({ [key]: 'zstd' }, false)
      expect(refusal).toContain(`option '${key}': value "zstd" needs Node >= 22.15 (node:zlib zstd)`)
      expect(refusal).toContain(`this is Node ${NODE_MAJOR}.x (${process.versions.node}); Lambda nodejs22.x has it`)
      expect(runtimeOptionRefusal({ [key]: 'ZSTD ' }, false)).not.toBeNull()
      expect(runtimeOptionRefusal({ [key]: 'zstd' }, true)).toBeNull()
    }
    expect(runtimeOptionRefusal({ 'file.compression': 'snappy', 'manifest.compression': 'deflate' }, false)).toBeNull()
    expect(() => assertRuntimeServes({ 'file.compression': 'zstd' }, 'create', false)).toThrow(RefusedError)
    expect(() => assertRuntimeServes({ 'file.compression': 'zstd' }, 'create', false)).toThrow(/^create: option 'file.compression'/)
    expect(() => assertRuntimeServes({ 'file.compression': 'zstd' }, 'create', true)).not.toThrow()
  })

  it("the default is this Node's node:zlib, read at each call", () => {
    expect(zstdEncoderAvailable()).toBe(HAS_ZSTD)
    expect(runtimeOptionRefusal({ 'file.compression': 'zstd' }) === null).toBe(HAS_ZSTD)
  })
})

describe('alter set-option of zstd', () => {
  it('is refused on a Node without the encoder, naming the option, and writes nothing; lands on one with it', async () => {
    for (const key of ['file.compression', 'manifest.compression']) {
      const store = new MemoryStore()
      await Table.create(store, SCHEMA)
      const e = await alterTable(store, [{ kind: 'set-option', key, value: 'zstd' }], { zstdAvailable: false }).catch((err: unknown) => err)
      expect(e).toBeInstanceOf(RefusedError)
      expect((e as Error).message).toMatch(new RegExp(`^alter set-option '${key}': option '${key}': value "zstd" needs Node >= 22.15`))
      expect((await store.list('schema/')).map((o) => o.key)).toEqual(['schema/schema-0'])
      const t = await alterTable(store, [{ kind: 'set-option', key, value: 'zstd' }], { zstdAvailable: true })
      expect(t.schema.options[key]).toBe('zstd')
    }
  })

  it('a table that already has zstd opens, and alters other than setting zstd go on, on a Node without the encoder', async () => {
    const store = new MemoryStore()
    const made = createSchema({ ...SCHEMA, options: { 'file.compression': 'zstd', 'manifest.compression': 'zstd' } })
    // stored as another Node (or Paimon) would: opening never asks about the encoder
    await store.putIfAbsent('schema/schema-0', new TextEncoder().encode(serializeSchema(made)))
    const opened = await Table.open(store)
    expect(opened.view.options.fileCompression).toBe('zstd')
    const next = applySchemaChanges(opened.schema, [{ kind: 'add-column', name: 'w', type: 'INT' }, { kind: 'set-option', key: 'file.compression', value: 'zstd' }, { kind: 'set-option', key: 'snapshot.expire.limit', value: '9' }], 0, { zstdAvailable: false })
    expect(next.options).toMatchObject({ 'file.compression': 'zstd', 'manifest.compression': 'zstd', 'snapshot.expire.limit': '9' })
    // and away from zstd
    expect(applySchemaChanges(opened.schema, [{ kind: 'set-option', key: 'file.compression', value: 'snappy' }], 0, { zstdAvailable: false }).options['file.compression']).toBe('snappy')
  })
})

describe('create', () => {
  it('Table.create refuses zstd on a Node without the encoder, naming the option and the Node, writing nothing; with one it creates', async () => {
    for (const key of ['file.compression', 'manifest.compression']) {
      const store = new MemoryStore()
      const refused = await Table.create(store, { ...SCHEMA, options: { [key]: 'zstd' } }, { zstdAvailable: false }).catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(RefusedError)
      expect((refused as Error).message).toMatch(new RegExp(`^create .*option '${key.replace('.', '\\.')}': value "zstd" needs Node >= 22\\.15`))
      expect(await store.list('')).toEqual([])
      const made = await Table.create(new MemoryStore(), { ...SCHEMA, options: { [key]: 'zstd' } }, { zstdAvailable: true })
      expect(made.schema.options[key]).toBe('zstd')
    }
  })

  it(`strata create on this Node (${process.versions.node}) ${HAS_ZSTD ? 'creates' : 'refuses (exit 7)'} a zstd table`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strata-create-zstd-'))
    try {
      const schemaPath = join(dir, 'schema.json')
      writeFileSync(schemaPath, JSON.stringify({ ...SCHEMA, options: { 'file.compression': 'zstd' } }))
      const r = await strata(['create', join(dir, 't'), '--schema', schemaPath])
      if (HAS_ZSTD) expect(r.code).toBe(0)
      else {
        expect(r.code).toBe(7)
        expect(r.stderr).toContain(`this is Node ${NODE_MAJOR}.x`)
        expect(readdirSync(dir)).toEqual(['schema.json'])
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('strata alter set file.compression zstd on this Node', () => {
  const dir = mkdtempSync(join(tmpdir(), 'strata-option-runtime-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it(HAS_ZSTD ? 'lands (this Node has the encoder)' : 'exits 7 naming the Node it needs (this Node has no encoder), and writes nothing', async () => {
    const uri = join(dir, 't')
    const schemaPath = join(dir, 's.json')
    writeFileSync(schemaPath, JSON.stringify(SCHEMA))
    expect((await strata(['create', uri, '--schema', schemaPath])).code).toBe(0)
    const r = await strata(['alter', uri, 'set', 'file.compression', 'zstd'])
    if (HAS_ZSTD) {
      expect(r.code).toBe(0)
      expect(r.stdout.trim()).toBe('schema 1: set file.compression=zstd')
    } else {
      expect(r.code).toBe(7)
      expect(r.stderr).toContain(`option 'file.compression': value "zstd" needs Node >= 22.15 (node:zlib zstd) to be written; this is Node ${NODE_MAJOR}.x`)
      expect(readdirSync(join(uri, 'schema'))).toEqual(['schema-0'])
    }
  })
})
