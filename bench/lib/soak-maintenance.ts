// The soak's maintenance (soak-run.ts), as the schedule would run it: each table's function
// on its own schedule (expiration and the sweep every maintenanceEverySeconds, orphan cleanup
// every orphansEverySeconds), until `running.maintaining` goes false.

import { REMOVE_ORPHANS_TASK } from '../../lib/maintenance/orphans.ts'
import type { ExecutionEnvironmentPool } from '../../local/runtime/execution-environment.ts'
import { type SoakResult, type SoakShared, secondsSince, sleep } from './soak-types.ts'

export type MaintenanceStats = SoakResult['maintenance']

/** Runs every table's maintenance on its schedule; what the runs did goes to `maint`. */
export function runMaintenance(s: SoakShared, pools: Map<string, ExecutionEnvironmentPool>, maint: MaintenanceStats): Promise<void[]> {
  return Promise.all([...pools].map(([name, pool]) => maintainTable(s, name, pool, maint)))
}

async function maintainTable(s: SoakShared, name: string, pool: ExecutionEnvironmentPool, maint: MaintenanceStats): Promise<void> {
  const o = s.o
  const now = () => secondsSince(s)
  let next = o.maintenanceEverySeconds
  let nextOrphans = o.orphansEverySeconds || Infinity
  while (s.running.maintaining) {
    const orphans = now() >= nextOrphans
    if (now() < next && !orphans) {
      await sleep(Math.min(500, (Math.min(next, nextOrphans) - now()) * 1000))
      continue
    }
    // a run that outlasts the period starts the next one late, not twice
    if (orphans) nextOrphans = Math.max(nextOrphans + o.orphansEverySeconds, now())
    else next = Math.max(next + o.maintenanceEverySeconds, now())
    const r = await pool.invoke(orphans ? { task: REMOVE_ORPHANS_TASK } : { 'detail-type': 'Scheduled Event', source: 'aws.events', time: new Date().toISOString(), detail: {} })
    maint.runs++
    if (!r.ok) {
      maint.failed++
      if (maint.errors.length < 10) maint.errors.push(`${name} at ${now().toFixed(0)} s: ${r.error.name}: ${r.error.message}`)
      continue
    }
    addRun(maint, r.value as RunSummary)
  }
}

interface RunSummary {
  expired: { expired: number[] } | null
  orphansDeleted: number | null
  markersDeleted: number | null
  sweptJobs?: number | null
  timings?: Record<string, number>
}

function addRun(maint: MaintenanceStats, v: RunSummary): void {
  maint.snapshotsExpired += v.expired?.expired.length ?? 0
  maint.orphansDeleted += v.orphansDeleted ?? 0
  maint.markersDeleted += v.markersDeleted ?? 0
  maint.sweptJobs = (maint.sweptJobs ?? 0) + (v.sweptJobs ?? 0)
  for (const [step, ms] of Object.entries(v.timings ?? {})) {
    const t = (maint.stepSeconds[step] ??= { total: 0, max: 0 })
    t.total = Math.round((t.total + ms / 1000) * 10) / 10
    t.max = Math.max(t.max, Math.round(ms / 100) / 10)
  }
}
