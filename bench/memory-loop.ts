// Memory of one long-lived process that keeps a table handle, as a warm function does: many
// rounds of write → compact → expire → scan on one Table, with the heap measured after a
// full GC every N rounds. What a warm handle holds between invocations (the metadata
// cache, snapshots, landed commits) must stop growing once its bounds are reached; RSS,
// external and arrayBuffers are reported apart from the heap, because Buffers and
// ArrayBuffers live outside it.
//
//   npx tsx bench/memory-loop.ts [--rounds 600] [--every 50] [--rows 200] [--buckets 8]
//     [--keys 5000] [--cache-mb 32] [--fresh-handle] [--memory-store]
//
// --fresh-handle opens a new handle every round (nothing kept between rounds: the floor);
// --memory-store keeps the table in the process (its objects count in arrayBuffers) instead
// of a temporary directory. GC: `global.gc` when node ran with --expose-gc, else the flag is
// set at run time (v8.setFlagsFromString) and gc taken from a fresh context.
// Writes bench/out/memory-loop.json and prints a table.

import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { readAll } from '../lib/read/table-read.ts'
import { LocalFileStore } from '../lib/store/local-store.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import type { ObjectStore } from '../lib/store/object-store.ts'
import { Table } from '../lib/handle/table.ts'
import { RowKind } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { parseBenchArgs } from './lib/args.ts'
import { ORDERS_FIELDS, seededRandom } from './lib/dataset.ts'
import { machineInfo, machineMarkdown } from './lib/machine.ts'
import { markdownTable, writeResults } from './lib/report.ts'

export interface MemoryPoint {
  round: number
  /** after a full GC, MB */
  heapUsedMb: number
  rssMb: number
  externalMb: number
  arrayBuffersMb: number
  /** the handle's caches: entries and MB charged against their bounds (lib/format/byte-cache.ts) */
  metadataEntries: number
  metadataMb: number
  snapshotsCached: number
  snapshotsMb: number
  landedCached: number
  landedMb: number
}

export interface MemoryLoopOptions {
  rounds: number
  every: number
  rows: number
  buckets: number
  keys: number
  cacheMb: number
  freshHandle: boolean
  memoryStore: boolean
}

function forceGc(): () => void {
  const g = (globalThis as { gc?: () => void }).gc
  if (g) return g
  setFlagsFromString('--expose-gc')
  return runInNewContext('gc') as () => void
}

const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10

function schema(buckets: number): unknown {
  return {
    fields: ORDERS_FIELDS,
    primaryKeys: ['id'],
    partitionKeys: [],
    options: { bucket: String(buckets), 'deletion-vectors.enabled': 'true', 'sequence.field': 'version' },
  }
}

/** What the handle's caches hold. */
function cachesOf(table: Table): Pick<MemoryPoint, 'metadataEntries' | 'metadataMb' | 'snapshotsCached' | 'snapshotsMb' | 'landedCached' | 'landedMb'> {
  const m = table.manifests.cacheStats()
  const s = table.snapshots.cacheStats()
  const l = table.landed.cacheStats()
  return { metadataEntries: m.entries, metadataMb: mb(m.bytes), snapshotsCached: s.entries, snapshotsMb: mb(s.bytes), landedCached: l.entries, landedMb: mb(l.bytes) }
}

export async function runMemoryLoop(o: MemoryLoopOptions, log: (line: string) => void = () => {}): Promise<MemoryPoint[]> {
  const gc = forceGc()
  const dir = o.memoryStore ? null : mkdtempSync(join(tmpdir(), 'strata-memory-loop-'))
  const store: ObjectStore = dir ? new LocalFileStore(dir) : new MemoryStore()
  const open = { metadataCacheBytes: o.cacheMb * 2 ** 20 }
  let table = await Table.create(store, schema(o.buckets), open)
  const random = seededRandom(42)
  const versions = new Map<number, number>()
  const points: MemoryPoint[] = []
  const measure = (round: number) => {
    gc()
    gc()
    const m = process.memoryUsage()
    const p: MemoryPoint = { round, heapUsedMb: mb(m.heapUsed), rssMb: mb(m.rss), externalMb: mb(m.external), arrayBuffersMb: mb(m.arrayBuffers), ...cachesOf(table) }
    points.push(p)
    log(`round ${round}: heap ${p.heapUsedMb} MB, rss ${p.rssMb} MB, external ${p.externalMb} MB, arrayBuffers ${p.arrayBuffersMb} MB; caches: metadata ${p.metadataEntries} / ${p.metadataMb} MB, snapshots ${p.snapshotsCached} / ${p.snapshotsMb} MB, landed ${p.landedCached} / ${p.landedMb} MB`)
  }
  try {
    measure(0)
    for (let round = 1; round <= o.rounds; round++) {
      if (o.freshHandle) table = await Table.open(store, open)
      const records = []
      for (let i = 0; i < o.rows; i++) {
        const id = Math.floor(random() * o.keys)
        const version = (versions.get(id) ?? 0) + 1
        versions.set(id, version)
        records.push({ kind: RowKind.INSERT, row: [BigInt(id), `c${id % 97}`, BigInt((id * 7 + version) % 100000), version] })
      }
      await writeBatch(table, records)
      await compactTable(table)
      await expireSnapshots(table, { numRetainedMin: 5, numRetainedMax: 10, timeRetainedMs: 0 })
      const rows = await readAll(table)
      if (rows.length !== versions.size) throw new Error(`round ${round}: read ${rows.length} rows, expected ${versions.size}`)
      if (round % o.every === 0) measure(round)
    }
  } finally {
    if (dir) rmSync(dir, { recursive: true, force: true })
  }
  return points
}

if (import.meta.filename === process.argv[1]) {
  const args = parseBenchArgs(process.argv.slice(2), ['--fresh-handle', '--memory-store'], ['--rounds', '--every', '--rows', '--buckets', '--keys', '--cache-mb'])
  const o: MemoryLoopOptions = {
    rounds: args.num('--rounds', 600),
    every: args.num('--every', 50),
    rows: args.num('--rows', 200),
    buckets: args.num('--buckets', 8),
    keys: args.num('--keys', 5000),
    cacheMb: args.num('--cache-mb', 32),
    freshHandle: args.has('--fresh-handle'),
    memoryStore: args.has('--memory-store'),
  }
  const machine = machineInfo([])
  const started = Date.now()
  const points = await runMemoryLoop(o, (line) => process.stderr.write(line + '\n'))
  console.log(
    markdownTable(
      ['round', 'heap after GC (MB)', 'RSS (MB)', 'external (MB)', 'arrayBuffers (MB)', 'metadata cache (entries / MB)', 'snapshots (entries / MB)', 'landed commits (entries / MB)'],
      points.map((p) => [p.round, p.heapUsedMb, p.rssMb, p.externalMb, p.arrayBuffersMb, `${p.metadataEntries} / ${p.metadataMb}`, `${p.snapshotsCached} / ${p.snapshotsMb}`, `${p.landedCached} / ${p.landedMb}`]),
    ),
  )
  console.log(`\n${o.rounds} rounds in ${Math.round((Date.now() - started) / 1000)} s.\n\n${machineMarkdown(machine)}`)
  process.stderr.write(`results: ${writeResults('memory-loop', { machine, options: o, points })}\n`)
}
