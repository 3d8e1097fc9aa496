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

/** Ops an engine accepts: retractions only where the test table's options allow them. */
export function opArb(engine: Engine, keys = 12): fc.Arbitrary<Op> {
  const kinds: Kind[] =
    engine === 'deduplicate' ? ['+I', '+I', '+U', '-U', '-D'] : engine === 'first-row' ? ['+I', '+I', '-D'] : ['+I', '+I', '+U', '-D']
  return fc.record({
    _kind: fc.constantFrom(...kinds),
    dt: fc.constantFrom('2024-05-01', '2024-05-02'),
    id: fc.integer({ min: 0, max: keys - 1 }),
    a: fc.option(fc.integer({ min: -1000, max: 1000 }), { nil: null }),
    b: fc.option(fc.string({ maxLength: 6 }), { nil: null }),
    c: fc.option(fc.integer({ min: -1_000_000, max: 1_000_000 }), { nil: null }),
  })
}

type ModelRow = { dt: string; id: number; a: number | null; b: string | null; c: number | null }

export class TableModel {
  readonly rows = new Map<string, ModelRow>()
  constructor(readonly engine: Engine) {}

  apply(op: Op): void {
    const k = `${op.dt}|${op.id}`
    const cur = this.rows.get(k)
    const row: ModelRow = { dt: op.dt, id: op.id, a: op.a, b: op.b, c: op.c }
    const retract = op._kind === '-U' || op._kind === '-D'
    switch (this.engine) {
      case 'deduplicate':
        if (retract) this.rows.delete(k)
        else this.rows.set(k, row)
        break
      case 'first-row':
        if (!retract && !cur) this.rows.set(k, row)
        break
      case 'partial-update':
        if (op._kind === '-D') this.rows.delete(k)
        else if (!cur) this.rows.set(k, row)
        else this.rows.set(k, { ...cur, a: op.a ?? cur.a, b: op.b ?? cur.b, c: op.c ?? cur.c })
        break
      case 'aggregation':
        if (op._kind === '-D') this.rows.delete(k)
        else if (!cur) this.rows.set(k, row)
        else {
          const sum = cur.a === null ? op.a : op.a === null ? cur.a : cur.a + op.a
          const max = cur.c === null ? op.c : op.c === null ? cur.c : Math.max(cur.c, op.c)
          this.rows.set(k, { ...cur, a: sum, b: op.b ?? cur.b, c: max })
        }
        break
    }
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
