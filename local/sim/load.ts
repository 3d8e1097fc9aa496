// The load of one simulation run (simulation.ts): ingest messages for both tables at a
// random pace, each one remembered in ctx.sent as the model the checks compare with.

import { setTimeout as sleep } from 'node:timers/promises'
import type { SimContext, Sent, TableName } from './context.ts'

const TOTALS_KEYS = 8
const ORDER_KEYS = 20

/** Sends for `loadMs` of virtual time, `rate` messages a second on average; returns when the last was sent. */
export async function runLoad(ctx: SimContext, loadMs: number, rate: number): Promise<void> {
  const loadRng = ctx.rng.fork('load')
  let nextVersion = 0
  const sendOne = async () => {
    const table: TableName = loadRng.chance(0.5) ? 'totals' : 'orders'
    const s: Sent =
      table === 'totals'
        ? { table, key: `k${loadRng.int(0, TOTALS_KEYS - 1)}`, qty: loadRng.int(1, 9), version: 0, value: '' }
        : { table, key: String(loadRng.int(0, ORDER_KEYS - 1)), qty: 0, version: ++nextVersion, value: `v${nextVersion}` }
    const body = table === 'totals' ? { _table: 'totals', customer: s.key, qty: s.qty, n: 1 } : { _table: 'orders', id: Number(s.key), version: s.version, v: s.value }
    const id = await ctx.ingestQueue.send(JSON.stringify(body), '', null)
    ctx.sent.set(id!, s)
  }
  const end = ctx.world.now + loadMs
  while (ctx.world.now < end) {
    await sendOne()
    await sleep(Math.max(1, Math.round(loadRng.float() * (2000 / rate))))
  }
}
