// The soak's checks (soak-run.ts), once the load has drained: what the tables hold against
// the model (soak-load.ts), the dead-letter queues, rejects, snapshot references, orphan
// cleanup, maintenance, level-0 waits, probes, and each fault's recovery of the lag.

import { tableStatus } from '../../lib/maintenance/table-status.ts'
import { Table } from '../../lib/handle/table.ts'
import { bucketsNeedingJobs } from '../../lib/jobs/coalesce.ts'
import { MIN_ORPHAN_OLDER_THAN_MS, removeOrphanFiles } from '../../lib/maintenance/orphans.ts'
import { snapshotRange, snapshotReferences } from '../../lib/maintenance/references.ts'
import { readAll } from '../../lib/read/table-read.ts'
import type { S3Store } from '../../lib/store/s3-store.ts'
import { NO_PARTITION } from './dataset.ts'
import type { InvocationLog } from './soak-invocations.ts'
import { type LoadModel, unscaledAmountOf } from './soak-load.ts'
import type { MaintenanceStats } from './soak-maintenance.ts'
import { type Check, type FaultRecord, PROBE_BASE, type Sample, type SoakResult, type SoakShared, pct } from './soak-types.ts'

/** The stretches of samples whose oldest level-0 file was older than `limitMs`, each with its peak. */
export function longLevelZeroWaits(samples: Sample[], limitMs: number): { from: number; to: number; maxMs: number; peakAt: number; ordersL0: number; totalsL0: number }[] {
  const out: { from: number; to: number; maxMs: number; peakAt: number; ordersL0: number; totalsL0: number }[] = []
  let cur: (typeof out)[number] | null = null
  for (const x of samples) {
    if (x.l0AgeMs <= limitMs) {
      cur = null
      continue
    }
    if (!cur) out.push((cur = { from: x.t, to: x.t, maxMs: x.l0AgeMs, peakAt: x.t, ordersL0: x.ordersL0, totalsL0: x.totalsL0 }))
    cur.to = x.t
    if (x.l0AgeMs > cur.maxMs) Object.assign(cur, { maxMs: x.l0AgeMs, peakAt: x.t, ordersL0: x.ordersL0, totalsL0: x.totalsL0 })
  }
  return out
}

/**
 * Per fault: the peak lag between its firing and the end of its window (`recoverWithin`
 * seconds, cut short by the next fault, whose lag is its own), and whether the lag came back
 * under the threshold after that peak inside the window. A window cut short before the lag
 * came back leaves `recovered` null: the fault is judged together with the next one (the
 * last fault of such a chain has a full window, so a lag that never comes back fails).
 */
export function faultRecovery(faults: FaultRecord[], samples: Sample[], thresholdMs: number, recoverWithinSeconds: number): void {
  const fired = faults.filter((f) => f.firedAt !== null).sort((a, b) => a.firedAt! - b.firedAt!)
  fired.forEach((f, i) => {
    const next = fired[i + 1]?.firedAt ?? Infinity
    const end = Math.min(f.firedAt! + recoverWithinSeconds, next)
    const win = samples.filter((s) => s.t >= f.firedAt! && s.t <= end)
    f.peakLagMs = null
    f.recovered = null
    f.recoverySeconds = null
    if (win.length === 0) return
    let peakIdx = 0
    win.forEach((s, j) => {
      if (s.lagMs > win[peakIdx].lagMs) peakIdx = j
    })
    f.peakLagMs = win[peakIdx].lagMs
    if (f.peakLagMs <= thresholdMs) {
      f.recovered = true
      f.recoverySeconds = 0
      return
    }
    const back = win.slice(peakIdx).find((s) => s.lagMs <= thresholdMs)
    if (back) {
      f.recovered = true
      f.recoverySeconds = Math.round((back.t - f.firedAt!) * 10) / 10
    } else if (end >= f.firedAt! + recoverWithinSeconds) {
      f.recovered = false
    }
  })
}

/** How the lag judged the faults (SoakResult.lag, in part). */
export interface LagVerdict {
  thresholdMs: number
  baselineP99Ms: number | null
  firedFaults: FaultRecord[]
}

export class SoakChecks {
  readonly checks: Check[] = []
  /** orders keys left at an older version after their latest was acknowledged (tolerateStaleVersions) */
  staleVersions = 0
  readonly gap: SoakResult['totalsGap'] = { keys: 0, excess: 0, explainable: 0, regroupedMessages: 0, redeliveredMessages: 0 }
  /** per table, every object a retained snapshot references */
  private readonly referenced = new Map<string, Set<string>>()

  constructor(
    private readonly s: SoakShared,
    private readonly model: LoadModel,
    private readonly invocations: InvocationLog,
  ) {}

  check(name: string, problems: string[], okDetail: string, info = false): void {
    this.checks.push({ name, ok: problems.length === 0, detail: problems.length ? `${problems.length} problem(s): ${problems.slice(0, 8).join('; ')}` : okDetail, info })
  }

  /** a bucket left with level-0 files and no job: its job key now, and the jobs it got under that key */
  async stalledBuckets(): Promise<string[]> {
    const stalled: string[] = []
    const { jobLog } = this.invocations
    for (const [name, reader] of [['orders', this.s.ordersReader], ['totals', this.s.totalsReader]] as const) {
      if (!reader) continue
      try {
        const status = await tableStatus(reader)
        const latest = await reader.snapshots.latestId()
        for (const b of status.buckets.filter((x) => x.l0Files > 0)) {
          const [job] = await bucketsNeedingJobs(reader, latest, [{ partition: NO_PARTITION, bucket: b.bucket }])
          const got = (jobLog.get(name) ?? []).filter((j) => j.bucket === b.bucket)
          const sameKey = job ? got.filter((j) => j.key === job.dedupKey) : []
          stalled.push(
            `${name} bucket ${b.bucket}: ${b.l0Files} L0 files at snapshot ${latest}, job key now ${job?.dedupKey ?? '(none due)'}; ` +
              `jobs received under it: ${sameKey.map((j) => this.invocations.describeJob(j, false)).join(', ') || 'none'}; ` +
              `last jobs received: ${got.slice(-4).map((j) => this.invocations.describeJob(j, true)).join(', ') || 'none'}`,
          )
        }
      } catch (e) {
        stalled.push(`${name}: status not read (${(e as Error).message})`)
      }
    }
    return stalled
  }

  async drainAndQueues(drained: boolean, drainSeconds: number, bucketStore: S3Store): Promise<void> {
    const { o, rt, log } = this.s
    const stalled = drained ? [] : await this.stalledBuckets()
    for (const line of stalled) log(`stalled: ${line}`)
    this.check('drain', drained ? [] : [`not drained within ${o.drainTimeoutSeconds} s (queues, in-flight invocations, L0 files or unseen probes left)`, ...stalled], `queues empty, no L0 file left, in ${drainSeconds.toFixed(0)} s`)

    const dlqProblems: string[] = []
    const ingestDlq = await rt.queueDepth(rt.ingestDlqUrl)
    if (ingestDlq) dlqProblems.push(`${ingestDlq} ingest message(s) in the dead-letter queue`)
    for (const x of rt.tables.values()) {
      const d = await rt.queueDepth(x.dlqUrl)
      if (d) dlqProblems.push(`${d} ${x.name} compaction job(s) in the dead-letter queue`)
    }
    this.check('dead-letter queues empty', dlqProblems, 'no message dead-lettered')

    const rejects = await bucketStore.list('rejects/')
    this.check('nothing rejected', rejects.length ? [`${rejects.length} reject file(s)`] : [], 'no reject file')
  }

  async verifyOrders(what: string): Promise<void> {
    const { o, orders } = this.s
    const { versions, sent } = this.model
    const { ackedVersion } = this.invocations
    const table = await Table.open(orders.table.store)
    const rows = await readAll(table)
    const problems: string[] = []
    const stale: string[] = []
    const seen = new Set<number>()
    for (const r of rows) {
      const id = Number(r[0])
      if (seen.has(id)) problems.push(`id ${id} read twice`)
      seen.add(id)
      const want = versions.get(id)
      if (want === undefined) problems.push(`id ${id} read but never sent`)
      else if (r[3] !== want) {
        // the latest version was acknowledged, so committed: an older version written
        // after it won the merge, not a lost message
        if (ackedVersion.get(id) === want && o.tolerateStaleVersions) stale.push(`id ${id} at version ${r[3]}, expected ${want}`)
        else problems.push(`id ${id} at version ${r[3]}, expected ${want}${ackedVersion.get(id) === want ? ' (the latest was acknowledged: an older version written later won)' : ` (the latest acknowledged: ${ackedVersion.get(id) ?? 'none'})`}`)
      }
      else if (r[2] !== unscaledAmountOf(id, want) || r[1] !== (id >= PROBE_BASE ? 'probe' : `c${id % 97}`)) problems.push(`id ${id}: columns ${JSON.stringify(r.map(String))} differ from what was sent`)
    }
    for (const id of versions.keys()) if (!seen.has(id)) problems.push(`id ${id} lost`)
    this.check(`orders${what}: every key once, at its latest version`, problems, `${rows.length} rows = ${versions.size} keys sent (${sent.probes} probes), each once at its latest version${stale.length ? ', except the stale ones below' : ''}`)
    if (what === '' && o.tolerateStaleVersions) {
      this.staleVersions = stale.length
      this.checks.push({
        name: 'orders: the highest version wins when an older one is committed after it (sequence.field with deletion vectors)',
        ok: stale.length === 0,
        info: true,
        detail: stale.length ? `${stale.length} key(s) at an older version although the latest was acknowledged: ${stale.slice(0, 6).join('; ')}` : 'held',
      })
    }
  }

  async verifyTotals(what: string): Promise<void> {
    const { totals } = this.s
    if (!totals) return
    const table = await Table.open(totals.table.store)
    const rows = await readAll(table)
    const got = new Map(rows.map((r) => [String(r[0]), { qty: Number(r[1]), n: Number(r[2]) }]))
    const { bound, regrouped, redelivered } = this.redeliveryBound()
    const problems: string[] = []
    const gapNotes: string[] = []
    let excessN = 0, gapKeys = 0
    for (const [k, want] of this.model.totalsModel) {
      const g = got.get(k)
      if (!g) {
        problems.push(`${k} lost (expected n=${want.n}) [${this.historyOf(k)}]`)
        continue
      }
      const dq = g.qty - want.qty, dn = g.n - want.n
      if (dq === 0 && dn === 0) continue
      const b = bound.get(k) ?? { qty: 0, n: 0 }
      if (dq < 0 || dn < 0) problems.push(`${k}: qty ${g.qty}/n ${g.n}, expected ${want.qty}/${want.n} (short: messages lost) [${this.historyOf(k)}]`)
      else if (dq > b.qty || dn > b.n) problems.push(`${k}: qty ${g.qty}/n ${g.n}, expected ${want.qty}/${want.n}, more than redeliveries explain (≤ +${b.qty}/+${b.n}) [${this.historyOf(k)}]`)
      else {
        gapKeys++
        excessN += dn
        gapNotes.push(`${k} +${dn} message(s)`)
      }
    }
    for (const k of got.keys()) if (!this.model.totalsModel.has(k)) problems.push(`${k} read but never sent`)
    if (what === '') {
      Object.assign(this.gap, { keys: gapKeys, excess: excessN, explainable: [...bound.values()].reduce((a, b) => a + b.n, 0), regroupedMessages: regrouped, redeliveredMessages: redelivered })
    }
    this.check(
      `totals${what}: no message lost, no excess beyond what redeliveries explain`,
      problems,
      gapKeys ? `${rows.length} keys; nothing short; an excess only where redeliveries explain it (below)` : `${rows.length} keys, sums of ${this.model.sent.totals} messages exact`,
    )
    if (what === '') {
      this.checks.push({
        name: 'totals: every redelivered message applied once (docs/reliability.md: the batch-regrouping gap)',
        ok: gapKeys === 0,
        info: true,
        detail: `${gapKeys ? `${excessN} message(s) applied twice over ${gapKeys} key(s) (${gapNotes.slice(0, 6).join(', ')})` : 'no excess'}; ${redelivered} message(s) delivered more than once, ${regrouped} of them in more than one distinct batch`,
      })
    }
  }

  /**
   * The most each key could be over by: every delivery after the first may have been
   * written again (in another batch: the known gap; concurrently with the first, when a
   * visibility timeout ran out under a slow invocation).
   */
  private redeliveryBound(): { bound: Map<string, { qty: number; n: number }>; regrouped: number; redelivered: number } {
    const bound = new Map<string, { qty: number; n: number }>()
    let regrouped = 0
    let redelivered = 0
    for (const m of this.invocations.totalsMeta.values()) {
      if (new Set(m.deliveries.map((d) => d.batch)).size > 1) regrouped++
      if (m.deliveries.length < 2) continue
      redelivered++
      const b = bound.get(m.customer) ?? { qty: 0, n: 0 }
      b.qty += m.qty * (m.deliveries.length - 1)
      b.n += m.deliveries.length - 1
      bound.set(m.customer, b)
    }
    return { bound, regrouped, redelivered }
  }

  /** the key's messages with a delivery history worth reading (redelivered or failed first) */
  private historyOf(k: string): string {
    const start = this.s.start
    return [...this.invocations.totalsMeta.entries()]
      .filter(([, m]) => m.customer === k)
      .sort(([, a], [, b]) => b.deliveries.length - a.deliveries.length)
      .slice(0, 3)
      .map(([id, m]) => `${id.slice(0, 8)} qty ${m.qty}: ${m.deliveries.map((d) => `#${d.receive} batch ${d.batch.slice(0, 6)} ${d.outcome}${d.deleted ? ' deleted' : ''} @${((d.at - start) / 1000).toFixed(1)}s`).join(', ') || 'never delivered'}`)
      .join('; ')
  }

  /** every retained snapshot reads, and everything it references exists */
  async references(): Promise<void> {
    const refProblems: string[] = []
    let snapshotsChecked = 0
    for (const x of this.s.rt.tables.values()) {
      const table = await Table.open(x.table.store)
      const { earliest, latest } = await snapshotRange(table)
      const keys = new Set<string>()
      for (let id = earliest; id <= latest && latest > 0; id++) {
        const s = await table.snapshots.snapshot(id)
        if (!s) {
          refProblems.push(`${x.name}: snapshot ${id} missing inside ${earliest}..${latest}`)
          continue
        }
        snapshotsChecked++
        try {
          for (const k of await snapshotReferences(table, s, 'throw')) keys.add(k)
        } catch (e) {
          refProblems.push(`${x.name}: snapshot ${id}: ${(e as Error).message}`)
        }
      }
      const list = [...keys]
      for (let i = 0; i < list.length; i += 32) {
        await Promise.all(
          list.slice(i, i + 32).map(async (k) => {
            if ((await x.table.store.head(k)) === null) refProblems.push(`${x.name}: a retained snapshot references missing ${k}`)
          }),
        )
      }
      this.referenced.set(x.name, keys)
    }
    this.check('no snapshot references a missing file', refProblems, `${snapshotsChecked} retained snapshots, ${[...this.referenced.values()].reduce((a, s) => a + s.size, 0)} referenced objects, all present`)
  }

  /** what is not referenced is garbage orphan cleanup takes, and taking it loses nothing */
  async orphanCleanup(): Promise<void> {
    const orphanProblems: string[] = []
    let orphansAtEnd = 0
    for (const x of this.s.rt.tables.values()) {
      const table = await Table.open(x.table.store)
      try {
        orphansAtEnd += (await removeOrphanFiles(table, { olderThanMs: MIN_ORPHAN_OLDER_THAN_MS, now: Date.now() + MIN_ORPHAN_OLDER_THAN_MS + 3_600_000 })).deleted.length
      } catch (e) {
        orphanProblems.push(`${x.name}: orphan cleanup failed: ${(e as Error).message}`)
      }
      const keys = this.referenced.get(x.name)!
      for (const obj of await x.table.store.list('')) {
        if (/^(schema|snapshot|_strata)\//.test(obj.key)) continue
        if (!keys.has(obj.key)) orphanProblems.push(`${x.name}: ${obj.key} is neither referenced nor removed by orphan cleanup`)
      }
    }
    this.check('orphan cleanup leaves only referenced files', orphanProblems, `${orphansAtEnd} unreferenced object(s) removed at the end (crashed writes, expired snapshots' leftovers)`)
    await this.verifyOrders(' after orphan cleanup')
    await this.verifyTotals(' after orphan cleanup')
  }

  /** maintenance, the sweep, level-0 waits and probes */
  schedules(maint: MaintenanceStats, samples: Sample[]): void {
    const o = this.s.o
    this.check(
      'maintenance runs succeeded',
      maint.errors,
      `${maint.runs} runs: ${maint.snapshotsExpired} snapshots expired, ${maint.orphansDeleted} orphans and ${maint.markersDeleted} ingest markers deleted`,
      true,
    )
    // the maintenance sweep (lib/jobs/coalesce.ts stalledBucketJobs) had to send a job: a
    // bucket waited past its age without one, which the coalescing argument rules out unless
    // its job was queued behind a backlog that long; reported, with the jobs it received
    // with the jobs the bucket received before the sweep's, and what the compactors made of them
    const swept = [...this.invocations.jobLog.entries()].flatMap(([t, js]) =>
      js.flatMap((j, i) => {
        if (!j.key.startsWith('sweep:')) return []
        const before = js.slice(0, i).filter((x) => x.bucket === j.bucket).slice(-4)
        return [`${t} bucket ${j.bucket} @${j.at}s, after ${before.map((x) => this.invocations.describeJob(x, true)).join(', ') || 'no job'}`]
      }),
    )
    this.check('no bucket needed the maintenance sweep', swept.length ? [`${maint.sweptJobs} sweep job(s) sent, received: ${swept.join(', ')}`] : [], 'no sweep job sent', true)
    // a level-0 file that waited longer than a fault's recovery allows: a bucket without a
    // job (its jobs dropped as duplicates until SQS's 5-minute window lets one through, or
    // the sweep sends one), which the probes' lag does not show when it is the totals table's
    const waits = longLevelZeroWaits(samples, o.recoverWithinSeconds * 1000)
    this.check(
      `no level-0 file waited longer than ${o.recoverWithinSeconds} s`,
      waits.map((w) => `oldest level-0 file ${(w.maxMs / 1000).toFixed(0)} s old at ${w.peakAt} s (over ${o.recoverWithinSeconds} s from ${w.from} to ${w.to} s; level-0 files then: orders ${w.ordersL0}, totals ${w.totalsL0})`),
      `oldest level-0 file at most ${(Math.max(0, ...samples.map((x) => x.l0AgeMs)) / 1000).toFixed(1)} s old`,
      true,
    )
    const { unseen, probes } = this.model
    this.check('every probe became visible', unseen.size ? [`${unseen.size} of ${probes.length} probes never visible`] : [], `${probes.length} probes`)
  }

  /** each fault's recovery of the lag, and that every fault fired (driven by events: every kind struck) */
  faults(faults: FaultRecord[], samples: Sample[], loadSeconds: number, loadStoppedBy: string): LagVerdict {
    const o = this.s.o
    const loadSamples = samples.filter((s) => s.t <= loadSeconds)
    const firstFault = faults.find((f) => f.firedAt !== null)?.firedAt ?? loadSeconds
    const baselineLags = loadSamples.filter((s) => s.t >= Math.min(10, o.warmupSeconds / 2) && s.t < firstFault).map((s) => s.lagMs)
    const baselineP99 = pct(baselineLags, 99)
    const thresholdMs = o.lagThresholdMs ?? Math.max(10_000, 2 * (baselineP99 ?? 0))
    faultRecovery(faults, samples, thresholdMs, o.recoverWithinSeconds)
    const firedFaults = faults.filter((f) => f.firedAt !== null)
    const notRecovered = firedFaults.filter((f) => f.recovered === false)
    const overlapped = firedFaults.filter((f) => f.recovered === null)
    this.check(
      `lag back under ${(thresholdMs / 1000).toFixed(0)} s within ${o.recoverWithinSeconds} s of each fault (or before the next one)`,
      notRecovered.map((f) => `fault ${f.seq} (${f.kind} at ${f.firedAt!.toFixed(0)} s): peak ${((f.peakLagMs ?? 0) / 1000).toFixed(1)} s, not back under the threshold in ${o.recoverWithinSeconds} s`),
      `${firedFaults.length - overlapped.length} faults recovered (slowest ${Math.max(0, ...firedFaults.map((f) => f.recoverySeconds ?? 0)).toFixed(0)} s)${overlapped.length ? `; ${overlapped.length} not yet back when the next fault struck, judged with it` : ''}`,
      !o.strictTiming,
    )
    const notFired = faults.filter((f) => f.firedAt === null)
    this.check('every armed fault fired', notFired.map((f) => `fault ${f.seq} (${f.kind}) was never claimed`), `${faults.length} faults fired`, true)
    if (o.events) {
      // driven by events, the load went on until every kind struck: one that did not means the bound was reached
      const never = o.kinds.filter((k) => !faults.some((f) => f.kind === k && f.firedAt !== null))
      this.check(
        'every fault kind struck',
        never.length ? [`never struck: ${never.join(', ')}; the load stopped: ${loadStoppedBy}`] : [],
        `${firedFaults.length} faults of ${o.kinds.length} kinds; the load stopped: ${loadStoppedBy}`,
      )
    }
    return { thresholdMs, baselineP99Ms: baselineP99, firedFaults }
  }
}
