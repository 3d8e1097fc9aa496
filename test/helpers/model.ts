// A deliberately simple in-memory model of a primary-key table, written from Paimon's
// documented semantics and independent of lib/lsm: a Map from key to row, with each merge
// engine's rule applied record by record in write order.

import fc from 'fast-check'
import type { Row, Value } from '../../lib/types.ts'

export type Kind = '+I' | '-U' | '+U' | '-D'
export interface Op {
  _kind: Kind
  dt: string
  id: number
  a: number | null
  b: string | null
  c: number | null
}

export type Engine = 'deduplicate' | 'partial-update' | 'aggregation' | 'first-row'

/** The test table: dt STRING (partition), id INT, a INT, b STRING, c BIGINT; PK (dt, id). */
export function schemaFor(engine: Engine, extra: Record<string, string> = {}): unknown {
  const options: Record<string, string> = { bucket: '3', 'merge-engine': engine, ...extra }
  if (engine === 'partial-update') options['partial-update.remove-record-on-delete'] = 'true'
  if (engine === 'aggregation') {
    options['fields.a.aggregate-function'] = 'sum'
    options['fields.b.aggregate-function'] = 'last_non_null_value'
    options['fields.c.aggregate-function'] = 'max'
    options['aggregation.remove-record-on-delete'] = 'true'
  }
  if (engine === 'first-row') options['ignore-delete'] = 'true'
  return {
    fields: [
      { name: 'dt', type: 'STRING' },
      { name: 'id', type: 'INT' },
      { name: 'a', type: 'INT' },
      { name: 'b', type: 'STRING' },
      { name: 'c', type: 'BIGINT' },
    ],
    primaryKeys: ['dt', 'id'],
    partitionKeys: ['dt'],
    options,
  }
}

/**
 * Ops an engine accepts: retractions only where the test table's options allow them. A -D
 * of partial-update or aggregation carries only its key: under remove-record-on-delete a
 * -D with values restarts its key's row from them until a compaction that drops deletes
 * removes it (Paimon >= 1.4.1), which depends on compaction timing that this model does not
 * follow; test/merge-function.test.ts and the interop suite pin that case.
 */
export function opArb(engine: Engine, keys = 12): fc.Arbitrary<Op> {
  const kinds: Kind[] =
    engine === 'deduplicate' ? ['+I', '+I', '+U', '-U', '-D'] : engine === 'first-row' ? ['+I', '+I', '-D'] : ['+I', '+I', '+U', '-D']
  const keyOnlyDelete = engine === 'partial-update' || engine === 'aggregation'
  return fc.record({
    _kind: fc.constantFrom(...kinds),
    dt: fc.constantFrom('2024-05-01', '2024-05-02'),
    id: fc.integer({ min: 0, max: keys - 1 }),
    a: fc.option(fc.integer({ min: -1000, max: 1000 }), { nil: null }),
    b: fc.option(fc.string({ maxLength: 6 }), { nil: null }),
    c: fc.option(fc.integer({ min: -1_000_000, max: 1_000_000 }), { nil: null }),
  }).map((op) => (keyOnlyDelete && op._kind === '-D' ? { ...op, a: null, b: null, c: null } : op))
}

type ModelRow = { dt: string; id: number; a: number | null; b: string | null; c: number | null }

type Fold = { row: ModelRow | null; removed: boolean }

/**
 * Merges one record into a key's state by the engine's rule. For partial-update and
 * aggregation a -D (with remove-record-on-delete) starts the key afresh rather than
 * forgetting what follows, as Paimon's merge functions do.
 */
function mergeInto(engine: Engine, cur: ModelRow | null, op: Op | ModelRow, kind: Kind): Fold {
  const row: ModelRow = { dt: op.dt, id: op.id, a: op.a, b: op.b, c: op.c }
  const retract = kind === '-U' || kind === '-D'
  switch (engine) {
    case 'deduplicate':
      return retract ? { row: null, removed: true } : { row, removed: false }
    case 'first-row':
      return retract || cur ? { row: cur, removed: false } : { row, removed: false }
    case 'partial-update':
      if (kind === '-D') return { row: null, removed: true }
      return { row: cur ? { ...cur, a: op.a ?? cur.a, b: op.b ?? cur.b, c: op.c ?? cur.c } : row, removed: false }
    case 'aggregation': {
      if (kind === '-D') return { row: null, removed: true }
      if (!cur) return { row, removed: false }
      const sum = cur.a === null ? op.a : op.a === null ? cur.a : cur.a + op.a
      const max = cur.c === null ? op.c : op.c === null ? cur.c : Math.max(cur.c, op.c)
      return { row: { ...cur, a: sum, b: op.b ?? cur.b, c: max }, removed: false }
    }
  }
}

export class TableModel {
  readonly rows = new Map<string, ModelRow>()
  constructor(readonly engine: Engine) {}

  /**
   * One commit. Paimon's writer first merges a batch's records of one key with the merge
   * function (its write buffer), then readers merge that result with older files. For
   * deduplicate and first-row that equals applying the records one by one; for
   * partial-update and aggregation a -D followed by inserts in the same batch folds into
   * one insert that is then merged with the older row (the delete does not reach it).
   */
  applyBatch(ops: Op[]): void {
    const byKey = new Map<string, Op[]>()
    for (const op of ops) {
      const k = `${op.dt}|${op.id}`
      byKey.set(k, [...(byKey.get(k) ?? []), op])
    }
    for (const [k, keyOps] of byKey) {
      if (this.engine === 'deduplicate' || this.engine === 'first-row') {
        let cur = this.rows.get(k) ?? null
        for (const op of keyOps) cur = mergeInto(this.engine, cur, op, op._kind).row
        if (cur) this.rows.set(k, cur)
        else this.rows.delete(k)
        continue
      }
      let batch: Fold = { row: null, removed: false }
      for (const op of keyOps) batch = mergeInto(this.engine, batch.row, op, op._kind)
      if (batch.row === null) {
        if (batch.removed) this.rows.delete(k)
        continue
      }
      const merged = mergeInto(this.engine, this.rows.get(k) ?? null, batch.row, '+I').row!
      this.rows.set(k, merged)
    }
  }

  /**
   * The records a writer's buffer writes for one batch: per key, its ops folded as applyBatch
   * folds them, a -D when they remove the key (deduplicate and first-row: the ops as given,
   * which apply one by one anyway). A postpone compaction merges such records of several
   * batches as one batch.
   */
  writtenRecords(ops: Op[]): Op[] {
    if (this.engine === 'deduplicate' || this.engine === 'first-row') return ops
    const byKey = new Map<string, Op[]>()
    for (const op of ops) byKey.set(`${op.dt}|${op.id}`, [...(byKey.get(`${op.dt}|${op.id}`) ?? []), op])
    const out: Op[] = []
    for (const keyOps of byKey.values()) {
      let batch: Fold = { row: null, removed: false }
      for (const op of keyOps) batch = mergeInto(this.engine, batch.row, op, op._kind)
      const { dt, id } = keyOps[0]
      if (batch.row) out.push({ _kind: '+I', ...batch.row })
      else if (batch.removed) out.push({ _kind: '-D', dt, id, a: null, b: null, c: null })
    }
    return out
  }

  /** Rows as the engine returns them (BIGINT as bigint), sorted by (dt, id). */
  snapshot(): Row[] {
    return [...this.rows.values()]
      .sort((x, y) => (x.dt < y.dt ? -1 : x.dt > y.dt ? 1 : x.id - y.id))
      .map((r) => [r.dt, r.id, r.a, r.b, r.c === null ? null : BigInt(r.c)])
  }
}

export function sortRows(rows: Row[]): Row[] {
  return [...rows].sort((x, y) => {
    const a = x[0] as string, b = y[0] as string
    return a < b ? -1 : a > b ? 1 : (x[1] as number) - (y[1] as number)
  })
}

export function normalize(rows: Row[]): Value[][] {
  return rows.map((r) => r.map((v) => v))
}
