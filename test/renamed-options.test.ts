// The job input cap is `compaction.max-input-files`; it was `compaction.max.file-num`, an
// append-table option Paimon removed. Creating a table with the old name is refused, naming
// the new one; a schema an older Strata stored with it is still read, and its cap holds.

import { describe, expect, it } from 'vitest'
import { compactBucket } from '../lib/lsm/compact/compact-bucket.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { StrataInputError } from '../lib/errors.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const schema = (options: Record<string, string>) => ({
  fields: [{ name: 'id', type: 'INT' }, { name: 'a', type: 'INT' }],
  primaryKeys: ['id'],
  options: { bucket: '1', 'num-sorted-run.compaction-trigger': '3', ...options },
})

describe('compaction.max-input-files, formerly compaction.max.file-num', () => {
  it('create with the old name is refused, naming the new one; nothing is stored', async () => {
    const store = new MemoryStore()
    const err = await Table.create(store, schema({ 'compaction.max.file-num': '2' })).catch((e) => e)
    expect(err).toBeInstanceOf(StrataInputError)
    expect(err.message).toMatch(/option 'compaction\.max\.file-num' \(value "2"\) is now 'compaction\.max-input-files'.*Paimon removed/)
    expect(await store.list('')).toEqual([])
  })

  it('a stored schema with the old name: the cap is read from it, and a job takes that many files', async () => {
    for (const [options, cap] of [[{ 'compaction.max.file-num': '2' }, 2], [{ 'compaction.max-input-files': '3' }, 3], [{}, 50]] as const) {
      const store = new MemoryStore()
      const table = await Table.create(store, schema({}))
      // the schema as an older Strata stored it
      const key = 'schema/schema-0'
      const stored = JSON.parse(new TextDecoder().decode((await store.get(key))!))
      Object.assign(stored.options, options)
      await store.put(key, new TextEncoder().encode(JSON.stringify(stored)))
      const old = await Table.open(store)
      expect(old.view.options.compactionMaxInputFiles).toBe(cap)
      for (let i = 0; i < 5; i++) await writeBatch(old, [{ ...recordFromJson(old.view, { id: i, a: i }, 'r'), where: 'r' }])
      const [e] = await old.manifests.liveEntries((await old.snapshots.latest())!)
      const res = await compactBucket(old, { partition: e.partition, bucket: 0 })
      expect(res.inputFiles).toBe(Math.min(5, cap))
      expect(res.needsMore).toBe(cap < 5)
    }
  })
})
