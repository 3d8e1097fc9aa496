// The benchmark tables: a primary-key table of (id BIGINT, name STRING, price DECIMAL(10,2),
// qty INT, ts TIMESTAMP(3)) loaded with batches that each upsert (or delete) a random subset
// of a fixed key space, drawn from a seeded generator so every run and both deletion-vector
// modes see exactly the same records.

import { serializeBinaryRow } from '../../lib/format/binary-row.ts'
import { compactBucket } from '../../lib/lsm/compact/compact-bucket.ts'
import { openStore } from '../../lib/store/open-store.ts'
import type { ObjectStore } from '../../lib/store/object-store.ts'
import { Table } from '../../lib/handle/table.ts'
import { type Row, RowKind } from '../../lib/types.ts'
import type { WriteRecord } from '../../lib/write/record-checks.ts'
import { writeBatch } from '../../lib/write/table-write.ts'

/** The serialized empty partition of an unpartitioned table. */
export const NO_PARTITION: Uint8Array = serializeBinaryRow([], [])

/**
 * The orders table of the freshness, soak and memory benchmarks: an upsert stream whose
 * events carry their version, which the table orders by (`sequence.field: version`).
 */
export const ORDERS_FIELDS = [
  { name: 'id', type: 'BIGINT' },
  { name: 'customer', type: 'STRING' },
  { name: 'amount', type: 'DECIMAL(10, 2)' },
  { name: 'version', type: 'INT' },
]

export interface TableShape {
  buckets: number
  deletionVectors: boolean
  /** further table options, e.g. a smaller `target-file-size` */
  options?: Record<string, string>
}

export function schemaInput(shape: TableShape): unknown {
  return {
    fields: [
      { name: 'id', type: 'BIGINT' },
      { name: 'name', type: 'STRING' },
      { name: 'price', type: 'DECIMAL(10, 2)' },
      { name: 'qty', type: 'INT' },
      { name: 'ts', type: 'TIMESTAMP(3)' },
    ],
    primaryKeys: ['id'],
    partitionKeys: [],
    options: {
      bucket: String(shape.buckets),
      'deletion-vectors.enabled': String(shape.deletionVectors),
      // above the benchmark's run counts, so only the compaction under test picks anything
      'num-sorted-run.compaction-trigger': '10',
      ...shape.options,
    },
  }
}

export async function createBenchTable(store: ObjectStore | string, shape: TableShape): Promise<Table> {
  return Table.create(typeof store === 'string' ? openStore(store) : store, schemaInput(shape))
}

/** mulberry32: small, fast and deterministic; quality is ample for picking keys. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

/**
 * Draws distinct keys from 0..keySpace-1 by a partial Fisher-Yates shuffle of one
 * permutation kept across draws (each draw is uniform whatever the earlier ones took).
 */
export class KeySampler {
  private readonly perm: Int32Array
  readonly random: () => number

  constructor(readonly keySpace: number, seed: number) {
    this.perm = new Int32Array(keySpace)
    for (let i = 0; i < keySpace; i++) this.perm[i] = i
    this.random = seededRandom(seed)
  }

  sample(n: number): Int32Array {
    if (n > this.keySpace) throw new RangeError(`cannot draw ${n} distinct keys from ${this.keySpace}`)
    for (let i = 0; i < n; i++) {
      const j = i + Math.floor(this.random() * (this.keySpace - i))
      const t = this.perm[i]
      this.perm[i] = this.perm[j]
      this.perm[j] = t
    }
    return this.perm.slice(0, n)
  }
}

const TS_BASE = 1_780_000_000_000_000n

/** The row of key `k` as written by batch `tag` (values change from batch to batch). */
export function rowOf(k: number, tag: number): Row {
  return [
    BigInt(k),
    `customer-${(k * 7919 + tag * 13) % 50_000}`,
    BigInt((k * 31 + tag * 977) % 10_000_000),
    (k + tag) % 100,
    TS_BASE + BigInt(k) * 1000n + BigInt(tag) * 3_600_000_000n,
  ]
}

/** Records for these keys: upserts, and deletes with probability `deleteRatio`. */
export function batchOf(keys: ArrayLike<number>, tag: number, deleteRatio: number, random: () => number): WriteRecord[] {
  const out: WriteRecord[] = new Array(keys.length)
  for (let i = 0; i < keys.length; i++) {
    out[i] = { kind: random() < deleteRatio ? RowKind.DELETE : RowKind.INSERT, row: rowOf(keys[i], tag) }
  }
  return out
}

export interface LoadPlan {
  /** key space the batches draw from */
  keySpace: number
  /** records per batch, one batch per entry (each a new level-0 file per bucket) */
  batches: number[]
  deleteRatio: number
  seed: number
}

/** Writes the plan's batches, one APPEND commit each, so each is one sorted run per bucket. */
export async function loadBatches(table: Table, plan: LoadPlan, sampler = new KeySampler(plan.keySpace, plan.seed), firstTag = 1): Promise<KeySampler> {
  for (let b = 0; b < plan.batches.length; b++) {
    const keys = sampler.sample(plan.batches[b])
    await writeBatch(table, batchOf(keys, firstTag + b, plan.deleteRatio, sampler.random))
  }
  return sampler
}

/**
 * The deletion-vector common case: every key inserted once and fully compacted to the top
 * level, then `plan.batches` new level-0 runs on top.
 */
export async function loadCompactedBase(table: Table, plan: LoadPlan): Promise<void> {
  // in slices, so no level-0 file outgrows the embedded backend's 11 MiB request limit
  const slice = 200_000
  for (let from = 0; from < plan.keySpace; from += slice) {
    const keys = Array.from({ length: Math.min(slice, plan.keySpace - from) }, (_, i) => from + i)
    await writeBatch(table, batchOf(keys, 0, 0, () => 1))
  }
  for (let b = 0; b < table.view.options.bucket; b++) await compactBucket(table, { partition: NO_PARTITION, bucket: b, full: true })
  await loadBatches(table, plan)
}

/**
 * `n` upsert records of ORDERS_FIELDS over random keys of `keySpace`, as JSON bodies for the
 * ingest queue: each key's `version` counts up in `versions`, so the newest row of a key is
 * known (the freshness and cost benchmarks' synthetic upstream).
 */
export function orderUpserts(random: () => number, versions: Map<number, number>, keySpace: number, n: number): string[] {
  const bodies: string[] = []
  for (let i = 0; i < n; i++) {
    const id = Math.floor(random() * keySpace)
    const version = (versions.get(id) ?? 0) + 1
    versions.set(id, version)
    bodies.push(JSON.stringify({ id, customer: `c${id % 97}`, amount: ((id + version) % 100000 / 100).toFixed(2), version }))
  }
  return bodies
}
