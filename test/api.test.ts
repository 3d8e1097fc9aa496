// The library API (lib/api/index.ts) as a TypeScript user calls it: every operation of the
// CLI on a real table in a temp directory, values round-tripping between read and write,
// the error classes a caller branches on, and a property against a map of the latest row
// per key.

import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { InterceptingStore, type StoreOp } from '../lib/store/intercepting-store.ts'
import { AlreadyExistsError, createTable, errorKind, NotFoundError, openTable, RefusedError, StrataInputError, type TableRecord } from '../lib/api/index.ts'

const root = mkdtempSync(join(tmpdir(), 'strata-api-'))
afterAll(() => rmSync(root, { recursive: true, force: true }))
let n = 0
const fresh = () => join(root, `t${n++}`)

const SCHEMA = {
  fields: [
    { name: 'id', type: 'BIGINT NOT NULL' },
    { name: 'name', type: 'STRING' },
    { name: 'amount', type: 'DECIMAL(12, 2)' },
    { name: 'at', type: 'TIMESTAMP(3)' },
    { name: 'day', type: 'DATE' },
    { name: 'raw', type: 'BYTES' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '2' },
}

describe('the library API', () => {
  it('creates, writes, reads, looks up, and values round-trip between read and write', async () => {
    const uri = fresh()
    const t = await createTable(uri, SCHEMA)
    expect(t.shape.primaryKeys).toEqual(['id'])
    expect(t.shape.fields.map((f) => f.type)).toEqual(['BIGINT NOT NULL', 'STRING', 'DECIMAL(12, 2)', 'TIMESTAMP(3)', 'DATE', 'BYTES'])
    const w = await t.write([
      { id: 9007199254740993n, name: 'tab\there\nnewline \\ NULL', amount: '12.50', at: new Date(Date.UTC(2024, 4, 1, 12, 0, 0, 250)), day: '2024-05-01', raw: new Uint8Array([0, 1, 255]) },
      { id: 2, name: 'NULL', amount: 3, at: '2024-05-01 00:00:00.001', day: new Date(Date.UTC(2024, 0, 31)), raw: null },
      { id: 3, name: null },
    ])
    expect(w).toMatchObject({ snapshotId: 1, rowsIn: 3 })
    const rows = await t.readAll()
    const byId = new Map(rows.map((r) => [r.id, r]))
    expect(byId.get(9007199254740993n)).toEqual({ id: 9007199254740993n, name: 'tab\there\nnewline \\ NULL', amount: '12.50', at: '2024-05-01 12:00:00.250', day: '2024-05-01', raw: new Uint8Array([0, 1, 255]) })
    expect(byId.get(2n)).toEqual({ id: 2n, name: 'NULL', amount: '3.00', at: '2024-05-01 00:00:00.001', day: '2024-01-31', raw: null })
    expect(byId.get(3n)?.name).toBeNull()
    // what a read gives, a write takes again, unchanged
    const copy = await createTable(fresh(), SCHEMA)
    await copy.write(rows)
    const byKey = (a: TableRecord, b: TableRecord) => Number(a.id) - Number(b.id)
    expect((await copy.readAll()).sort(byKey)).toEqual([...rows].sort(byKey))
    expect(await t.lookup({ id: 2 })).toEqual(byId.get(2n))
    expect(await t.lookup({ id: 4 })).toBeNull()
    expect(await t.readAll({ columns: ['name', 'id'], filter: { id: 3 } })).toEqual([{ name: null, id: 3n }])
    const reopened = await openTable(uri)
    expect((await reopened.readAll()).length).toBe(3)
  })

  it('writes JSON lines as the CLI does, naming a bad line and committing nothing', async () => {
    const t = await createTable(fresh(), SCHEMA)
    expect((await t.writeJsonLines('{"id":1,"name":"a"}\n\n{"id":2,"_kind":"+I"}\n')).rowsIn).toBe(2)
    const bad = t.writeJsonLines('{"id":3}\n{"id":"x"}\n')
    await expect(bad).rejects.toThrow(/line 2: field 'id' \(BIGINT\) expected an integer/)
    await expect(bad).rejects.toBeInstanceOf(StrataInputError)
    expect((await t.status()).snapshot?.id).toBe(1)
    await expect(t.write([{ id: 5, nope: 1 }])).rejects.toThrow(/record 0: unknown column 'nope'/)
  })

  it('reads changes for a consumer and records its progress only on commit', async () => {
    const t = await createTable(fresh(), { ...SCHEMA, options: { bucket: '1', 'changelog-producer': 'input' } })
    await t.write([{ id: 1, name: 'a' }])
    await t.write([{ id: 1, name: 'b' }, { id: 2, _kind: '-D' }])
    await expect(t.changes({ consumerId: 'c1' })).rejects.toThrow(/consumer has no progress.*expected fromSnapshot/)
    const first = await t.changes({ consumerId: 'c1', fromSnapshot: 0, columns: ['id', 'name'] })
    const seen = []
    for await (const c of first) seen.push(c)
    expect(seen).toEqual([
      { _kind: '+I', id: 1n, name: 'a' },
      { _kind: '+I', id: 1n, name: 'b' },
      { _kind: '-D', id: 2n, name: null },
    ])
    // not committed: the consumer has no progress yet
    expect(await t.listConsumers()).toEqual([])
    expect(await first.commit()).toBe(3)
    expect((await t.listConsumers()).map((c) => [c.id, c.nextSnapshot])).toEqual([['c1', 3]])
    await t.write([{ id: 7, name: 'c' }])
    const next = await t.changes({ consumerId: 'c1' })
    expect([next.from, next.to]).toEqual([2, 3])
    const plain = await t.changes({ fromSnapshot: 2 })
    await expect(plain.commit()).rejects.toThrow(/expected the read to name a consumerId/)
    await t.deleteConsumer('c1')
    expect(await t.listConsumers()).toEqual([])
    await expect(t.deleteConsumer('c1')).rejects.toBeInstanceOf(NotFoundError)
  })

  it('compacts, sets and resets options, tags, expires and reports status', async () => {
    const t = await createTable(fresh(), { ...SCHEMA, options: { bucket: '2', 'deletion-vectors.enabled': 'true' } })
    for (let i = 0; i < 3; i++) await t.write([{ id: i, name: `v${i}` }, { id: i + 10, name: 'x' }])
    expect((await t.status()).maxL0Files).toBeGreaterThan(0)
    const seen: number[] = []
    // with deletion vectors a level-0 file makes compaction due
    const c = await t.compact({ onCompaction: (j) => seen.push(j.bucket) })
    expect(c.jobs.map((j) => j.bucket).sort()).toEqual([0, 1])
    expect(seen.sort()).toEqual([0, 1])
    // every bucket in one snapshot
    expect([c.snapshotId, c.snapshots]).toEqual([4, 1])
    const again = await t.compact()
    expect([again.jobs, again.snapshotId, again.skipped.length]).toEqual([[], null, 2])
    await expect(t.compact({ partition: { dt: 'x' } })).rejects.toThrow(/partition: 'dt' is not a partition key \(partition keys: none\)/)
    expect((await t.status()).maxL0Files).toBe(0)
    expect((await t.readAll()).length).toBe(6)
    const altered = await t.setOptions({ 'snapshot.num-retained.min': '1', 'snapshot.num-retained.max': '2' })
    expect(altered.shape.options['snapshot.num-retained.max']).toBe('2')
    await expect(altered.setOptions({ bucket: '4' })).rejects.toBeInstanceOf(RefusedError)
    await expect(altered.setOptions({ bucket: '4' })).rejects.toThrow(/bucket/)
    expect(await altered.createTag('compacted')).toEqual({ name: 'compacted', snapshotId: 4 })
    await expect(altered.createTag('compacted')).rejects.toBeInstanceOf(AlreadyExistsError)
    const e = await altered.expire()
    expect(e.expired.length).toBeGreaterThan(0)
    expect(e.latest).toBe(4)
    expect(e.earliest).toBe(3)
    expect((await altered.readAll({ tag: 'compacted' })).length).toBe(6)
    expect((await altered.listTags()).map((x) => x.name)).toEqual(['compacted'])
    expect((await altered.deleteTag('compacted')).snapshotId).toBe(4)
    const reset = await altered.resetOptions(['snapshot.num-retained.max'])
    expect(reset.shape.options['snapshot.num-retained.max']).toBeUndefined()
    expect(reset.shape.schemaId).toBe(altered.shape.schemaId + 1)
  })

  it('fails with the classes a caller branches on', async () => {
    const missing = openTable(fresh())
    await expect(missing).rejects.toBeInstanceOf(NotFoundError)
    expect(errorKind(await missing.catch((e) => e))).toBe('not-found')
    const uri = fresh()
    await createTable(uri, SCHEMA)
    await expect(createTable(uri, SCHEMA)).rejects.toBeInstanceOf(AlreadyExistsError)
    const t = await openTable(uri)
    await expect(t.readAll({ columns: ['nope'] })).rejects.toThrow(/columns: unknown column 'nope'/)
    await expect(t.compact({ bucket: 2 })).rejects.toThrow(/bucket: expected a bucket number in \[0, 1\], got 2/)
  })

  it('reads back the latest row of every key after any upserts and deletes (property)', async () => {
    const op = fc.record({ id: fc.integer({ min: 0, max: 7 }), name: fc.option(fc.string({ maxLength: 4 })), del: fc.boolean() })
    await fc.assert(
      fc.asyncProperty(fc.array(fc.array(op, { minLength: 1, maxLength: 6 }), { minLength: 1, maxLength: 4 }), async (batches) => {
        const t = await createTable(fresh(), { fields: [{ name: 'id', type: 'INT NOT NULL' }, { name: 'name', type: 'STRING' }], primaryKeys: ['id'], options: { bucket: '2' } })
        const model = new Map<number, TableRecord>()
        for (const batch of batches) {
          await t.write(batch.map((o) => (o.del ? { id: o.id, _kind: '-D' as const } : { id: o.id, name: o.name })))
          for (const o of batch) o.del ? model.delete(o.id) : model.set(o.id, { id: o.id, name: o.name })
        }
        const got = (await t.readAll()).sort((a, b) => Number(a.id) - Number(b.id))
        expect(got).toEqual([...model.values()].sort((a, b) => Number(a.id) - Number(b.id)))
      }),
      { numRuns: 25, seed: 39 },
    )
  })
})

describe('a call returns once its background work is written', () => {
  // The Iceberg metadata of a write's snapshot is written after the snapshot lands; write()
  // must not resolve before it (a program that stops after a call would leave it unwritten).
  // The store holds that metadata's create until the test lets it go, so the order is certain.
  it('write resolves only after its snapshot\'s Iceberg metadata is written', async () => {
    mkdirSync(join(root, 'wh', 'db.db'), { recursive: true })
    let reached!: () => void
    const atMetadata = new Promise<void>((r) => (reached = r))
    let release!: () => void
    const released = new Promise<void>((r) => (release = r))
    class HoldMetadata extends InterceptingStore {
      protected async call<T>(op: StoreOp, key: string, run: () => Promise<T>): Promise<T> {
        if (op === 'putIfAbsent' && key === 'metadata/v1.metadata.json') {
          reached()
          await released
        }
        return run()
      }
    }
    const uri = join(root, 'wh', 'db.db', 'iceberg')
    const t = await createTable(uri, { ...SCHEMA, options: { bucket: '1', 'metadata.iceberg.storage': 'table-location' } }, { wrapStore: (s) => new HoldMetadata(s) })
    let resolved = false
    const writing = t.write([{ id: 1, name: 'a' }]).then((w) => ((resolved = true), w))
    await atMetadata
    await new Promise((r) => setImmediate(r))
    expect(resolved).toBe(false)
    release()
    expect((await writing).snapshotId).toBe(1)
    expect(readFileSync(join(uri, 'metadata', 'version-hint.text'), 'utf8').trim()).toBe('1')
  })
})

describe('docs/api.md', () => {
  it('names every export of the library and every public member of StrataTable', async () => {
    const doc = readFileSync(join(import.meta.dirname, '..', 'docs', 'api.md'), 'utf8')
    const index = readFileSync(join(import.meta.dirname, '..', 'lib', 'api', 'index.ts'), 'utf8')
    const exported = [...index.matchAll(/^\s+(?:type )?(\w+),?$/gm), ...index.matchAll(/export \{ ([^}]+) \}/g)].flatMap((m) => m[1].split(',').map((s) => s.trim()).filter(Boolean))
    const source = readFileSync(join(import.meta.dirname, '..', 'lib', 'api', 'strata-table.ts'), 'utf8')
    const members = [...source.matchAll(/^  (?:async \*?|get )?(\w+)\(/gm)].map((m) => m[1]).filter((m) => m !== 'constructor')
    const missing = [...exported.filter((e) => !/^(ObjectStore|BucketStatus|ColumnPosition|StrataErrorKind|ErrorKind|RecordValue)$/.test(e)), ...members].filter((name) => !doc.includes(`\`${name}`) && !doc.includes(`${name}(`) && !doc.includes(`${name}\``))
    expect(missing).toEqual([])
    expect(members.length).toBeGreaterThan(15)
  })
})
