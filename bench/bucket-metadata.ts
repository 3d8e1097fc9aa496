// How a partition's metadata grows with its bucket count, for the `bucket` limit
// (docs/operations.md "Limits a new table is held to"): a table of N buckets in memory,
// every bucket written twice and then compacted, and the sizes a scan plan reads.
//
//   npx tsx bench/bucket-metadata.ts 1024
//   npx tsx bench/bucket-metadata.ts 4096

import { compactTable } from '../lib/lsm/compact-table.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { manifestKey } from '../lib/table/paths.ts'
import { Table } from '../lib/handle/table.ts'
import { writeBatch } from '../lib/write/table-write.ts'

const buckets = Number(process.argv[2] ?? 1024)
const store = new MemoryStore()
const table = await Table.create(store, {
  fields: [
    { name: 'id', type: 'INT' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  options: { bucket: String(buckets), 'deletion-vectors.enabled': 'true' },
})
const started = Date.now()
for (const version of ['v1', 'v2']) {
  const rows = Array.from({ length: buckets * 4 }, (_, id) => recordFromJson(table.view, { id, v: version }, 'row'))
  await writeBatch(table, rows)
}
await compactTable(table, {})
const snapshot = (await table.snapshots.latest())!
const bytesOf = async (name: string) => (await store.get(manifestKey(name)))!.length
const base = await table.manifests.readList(snapshot.baseManifestList)
console.log(
  JSON.stringify({
    buckets,
    snapshots: snapshot.id,
    baseManifests: base.length,
    baseListBytes: await bytesOf(snapshot.baseManifestList),
    manifestBytes: base.reduce((sum, m) => sum + Number(m.fileSize), 0),
    seconds: (Date.now() - started) / 1000,
  }),
)
