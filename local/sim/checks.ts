// The invariants of one simulation run (simulation.ts), read from the stored tables without
// faults: cheap ones after every step, the full ones every few virtual seconds, the end
// state once drained, and orphan cleanup a day later. A broken one goes to ctx.fail.

import { COMMITTER_LEASE_KEY, COMMITTER_LEASE_TTL_MS } from '../../lib/commit/committer-lease.ts'
import { Table } from '../../lib/handle/table.ts'
import { removeOrphanFiles } from '../../lib/maintenance/orphans.ts'
import { snapshotReferences } from '../../lib/maintenance/references.ts'
import { readAll } from '../../lib/read/table-read.ts'
import { JOBS_PER_BUCKET_BOUND, type KeySums, type Sent, type SimContext, TABLE_NAMES, type TableName } from './context.ts'
import { MergeOnReadView } from './sim-store.ts'

export class Checks {
  private readonly checker = new Map<TableName, Table>()

  constructor(private readonly ctx: SimContext) {}

  /** The checker's handle of a table (merge on read: every committed row shows). */
  private async checkerTable(name: TableName): Promise<Table> {
    let t = this.checker.get(name)
    if (!t || (await t.newerSchemaExists())) this.checker.set(name, (t = await Table.open(new MergeOnReadView(this.ctx.raw, this.ctx.resources.get(name)!.uri))))
    return t
  }

  private acked(): Set<string> {
    const { sent, ingestQueue } = this.ctx
    const ids = new Set<string>()
    for (const id of sent.keys()) if (!ingestQueue.messages.some((m) => m.id === id) && !ingestQueue.deadLetters.some((m) => m.id === id)) ids.add(id)
    return ids
  }

  /** per key: the sum over acknowledged messages, and over those received but not acknowledged */
  private totalsModel(): { low: KeySums; pending: KeySums } {
    const done = this.acked()
    const low: KeySums = new Map()
    const pending: KeySums = new Map()
    for (const [id, s] of this.ctx.sent) {
      if (s.table !== 'totals') continue
      const into = done.has(id) ? low : pending
      const c = into.get(s.key) ?? { qty: 0, n: 0 }
      c.qty += s.qty
      c.n += 1
      into.set(s.key, c)
    }
    return { low, pending }
  }

  /** No bucket has more writer and follow-up jobs queued than the documented bound. */
  checkJobsPerBucket(): void {
    const { ctx } = this
    const stats = ctx.stats
    for (const r of ctx.resources.values()) {
      const jobs = new Map<string, number>()
      const sweeps = new Map<string, number>()
      for (const m of r.compaction.messages) {
        const into = (JSON.parse(m.body) as { dedupKey?: string }).dedupKey?.startsWith('sweep:') ? sweeps : jobs
        into.set(m.groupId, (into.get(m.groupId) ?? 0) + 1)
      }
      for (const [group, n] of jobs) {
        stats.maxJobsPerBucket = Math.max(stats.maxJobsPerBucket ?? 0, n)
        if (n > JOBS_PER_BUCKET_BOUND) ctx.fail(`compaction queue ${r.compaction.name}: ${n} writer and follow-up jobs queued for bucket ${group} (bound ${JOBS_PER_BUCKET_BOUND}): ${r.compaction.messages.filter((m) => m.groupId === group).map((m) => m.body).join(' | ')}`)
      }
      for (const n of sweeps.values()) stats.maxSweepJobsPerBucket = Math.max(stats.maxSweepJobsPerBucket ?? 0, n)
    }
  }

  /** Everything the latest snapshot (`all`: every retained one) references exists. */
  async checkReferences(name: TableName, all: boolean): Promise<void> {
    const t = await this.checkerTable(name)
    const latest = await t.snapshots.latest()
    if (!latest) return
    const earliest = all ? await t.snapshots.earliestId() : latest.id
    for (let id = earliest; id <= latest.id; id++) {
      const s = await t.snapshots.snapshot(id)
      if (!s) continue
      for (const key of await snapshotReferences(t, s)) {
        if (!(await this.ctx.raw.head(`${this.ctx.resources.get(name)!.uri}${key}`))) this.ctx.fail(`${name}: snapshot ${id} references ${key}, which is missing`)
      }
    }
  }

  async readTotals(): Promise<KeySums> {
    const rows = await readAll(await this.checkerTable('totals'))
    const got: KeySums = new Map()
    for (const r of rows) {
      const k = String(r[0])
      if (got.has(k)) this.ctx.fail(`totals: key ${k} read twice`)
      got.set(k, { qty: Number(r[1]), n: Number(r[2]) })
    }
    return got
  }

  private historyOf(key: string): string {
    const { sent, deliveries } = this.ctx
    return [...sent].filter(([id, x]) => x.table === 'totals' && x.key === key && (deliveries.get(id)?.length ?? 0) > 1).map(([id, x]) => `${id} qty ${x.qty}: ${deliveries.get(id)!.join(', ')}`).join('; ') || 'none'
  }

  /** every acknowledged message is in the table, and nothing beyond what was received */
  private async checkTotals(): Promise<void> {
    const got = await this.readTotals()
    const { low, pending } = this.totalsModel()
    for (const k of new Set([...low.keys(), ...pending.keys(), ...got.keys()])) {
      const g = got.get(k) ?? { qty: 0, n: 0 }
      const lo = low.get(k) ?? { qty: 0, n: 0 }
      const p = pending.get(k) ?? { qty: 0, n: 0 }
      if (g.n < lo.n || g.qty < lo.qty) this.ctx.fail(`totals ${k}: the table has n ${g.n} / qty ${g.qty}, below the acknowledged n ${lo.n} / qty ${lo.qty}: acknowledged messages lost; redelivered messages of the key: ${this.historyOf(k)}`)
      if (g.n > lo.n + p.n || g.qty > lo.qty + p.qty) this.ctx.fail(`totals ${k}: the table has n ${g.n} / qty ${g.qty}, above every message received (n ${lo.n + p.n} / qty ${lo.qty + p.qty}): a message applied twice; redelivered messages of the key: ${this.historyOf(k)}`)
    }
  }

  async checkEverything(): Promise<void> {
    for (const name of TABLE_NAMES) await this.checkReferences(name, false)
    await this.checkTotals()
  }

  /** the end state: every queue empty, level 0 empty, the tables equal to the model */
  async drained(): Promise<string | null> {
    const { ingestQueue, resources } = this.ctx
    if (ingestQueue.messages.length) return `${ingestQueue.messages.length} ingest message(s) left`
    for (const r of resources.values()) {
      if (r.compaction.messages.length) return `${r.compaction.messages.length} compaction job(s) left on ${r.name}`
      if (r.commits.messages.length) return `${r.commits.messages.length} commit message(s) left on ${r.name}`
    }
    for (const name of TABLE_NAMES) {
      const t = await this.checkerTable(name)
      const latest = await t.snapshots.latest()
      if (!latest) continue
      const l0 = (await t.manifests.liveEntries(latest)).filter((e) => e.file.level === 0).length
      if (l0) return `${name}: ${l0} level-0 file(s) left`
    }
    return null
  }

  async finalChecks(): Promise<void> {
    const { ctx } = this
    for (const q of [ctx.ingestQueue, ...[...ctx.resources.values()].flatMap((r) => [r.compaction, r.commits])]) {
      if (q.deadLetters.length) ctx.fail(`${q.deadLetters.length} message(s) dead-lettered on ${q.name}`)
    }
    await this.finalTotals()
    await this.finalOrders()
    for (const name of TABLE_NAMES) {
      await this.checkReferences(name, true)
      const lease = await ctx.raw.get(`${ctx.resources.get(name)!.uri}${COMMITTER_LEASE_KEY}`)
      if (lease) {
        const r = JSON.parse(new TextDecoder().decode(lease)) as { expiresAt: number }
        if (r.expiresAt > ctx.world.now + 2 * COMMITTER_LEASE_TTL_MS + 3_600_000) ctx.fail(`${name}: the committer lease is held until ${new Date(r.expiresAt).toISOString()}, long after the drain`)
      }
    }
  }

  /** totals: the table and the consumer equal the acknowledged messages, nothing left unacknowledged */
  private async finalTotals(): Promise<void> {
    const { ctx } = this
    const got = await this.readTotals()
    const { low, pending } = this.totalsModel()
    if ([...pending.values()].some((p) => p.n > 0)) ctx.fail('messages received and never acknowledged after the drain')
    for (const k of new Set([...low.keys(), ...got.keys()])) {
      const g = got.get(k) ?? { qty: 0, n: 0 }
      const w = low.get(k) ?? { qty: 0, n: 0 }
      if (g.n !== w.n || g.qty !== w.qty) ctx.fail(`totals ${k}: the table has n ${g.n} / qty ${g.qty}, the acknowledged messages n ${w.n} / qty ${w.qty}`)
      const c = ctx.consumed.get('totals')!.get(k) ?? { qty: 0, n: 0 }
      if (c.n !== w.n || c.qty !== w.qty) ctx.fail(`consumer of totals ${k}: read n ${c.n} / qty ${c.qty} in all, the acknowledged messages n ${w.n} / qty ${w.qty} (each change exactly once)`)
    }
  }

  /** orders: each key at its latest version, in the table and in what the consumer read */
  private async finalOrders(): Promise<void> {
    const { ctx } = this
    const latestVersion = new Map<string, Sent>()
    for (const s of ctx.sent.values()) if (s.table === 'orders' && (latestVersion.get(s.key)?.version ?? 0) < s.version) latestVersion.set(s.key, s)
    const orders = new Map((await readAll(await this.checkerTable('orders'))).map((r) => [String(r[0]), r]))
    for (const [k, s] of latestVersion) {
      const r = orders.get(k)
      if (!r || Number(r[1]) !== s.version || r[2] !== s.value) ctx.fail(`orders ${k}: read ${r ? `version ${r[1]} ${r[2]}` : 'nothing'}, the latest acknowledged is version ${s.version} ${s.value}`)
      const c = ctx.consumed.get('orders')!.get(k)
      if ((c?.qty ?? 0) !== s.version) ctx.fail(`consumer of orders ${k}: its highest version read is ${c?.qty ?? 0}, the latest is ${s.version}`)
    }
    if (orders.size !== latestVersion.size) ctx.fail(`orders: ${orders.size} keys read, ${latestVersion.size} written`)
  }

  /** Orphan cleanup a day later deletes only what no snapshot references. */
  async orphanCleanup(): Promise<void> {
    const { ctx } = this
    const world = ctx.world
    ctx.stopping = true
    const before = new Map<TableName, KeySums | number>()
    before.set('totals', await this.readTotals())
    for (let i = 0; i < 100 && world.step(); i++) await world.settle()
    world.advance(25 * 3_600_000)
    await world.settle()
    for (const name of TABLE_NAMES) {
      const env = world.newEnv('orphans', 0)
      let done = false
      const p = world.within(env, async () => removeOrphanFiles(await Table.open(ctx.storeOf(ctx.resources.get(name)!.uri)))).finally(() => (done = true))
      while (!done && world.step()) await world.settle()
      const res = await p
      ctx.count('orphans.deleted', res.deleted.length)
      await this.checkReferences(name, true)
    }
    const after = await this.readTotals()
    for (const [k, v] of before.get('totals') as KeySums) {
      const a = after.get(k)
      if (a?.n !== v.n || a?.qty !== v.qty) ctx.fail(`totals ${k} changed across orphan cleanup: ${JSON.stringify(v)} → ${JSON.stringify(a)}`)
    }
  }
}
