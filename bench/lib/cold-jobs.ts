// Several full compactions in one process, each of a fresh copy of the same table: what the
// first job costs beside the later ones, per job, on the main thread. bench/lib/cold-trace.ts
// bundles it beside cold-strata.ts (bench/out/cold-trace/cold-jobs.mjs, names kept); each job's
// start and end are CLOCK_MONOTONIC seconds, so a `perf record -k CLOCK_MONOTONIC` of the
// process splits by job:
//
//   perf record -k CLOCK_MONOTONIC -e cpu-clock -F 2000 node --perf-basic-prof \
//     bench/out/cold-trace/cold-jobs.mjs /tmp/strata-cold-trace-fixture 3
//
// Prints one JSON line: per job, main-thread CPU (schedstat), its user and system parts, and
// its monotonic start and end.

import { cpSync, readFileSync, rmSync } from 'node:fs'
import { serializeBinaryRow } from '../../lib/format/binary-row.ts'
import { compactBucket } from '../../lib/lsm/compact/compact-bucket.ts'
import { Table } from '../../lib/handle/table.ts'
import { openStore } from '../../lib/store/open-store.ts'

/** The main thread's CPU seconds, and its user and system parts (clock ticks of 1/100 s). */
function mainThread(): { cpu: number; user: number; system: number } {
  const stat = readFileSync('/proc/thread-self/stat', 'utf8').split(') ')[1].split(' ')
  return { cpu: Number(readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ')[0]) / 1e9, user: Number(stat[11]) / 100, system: Number(stat[12]) / 100 }
}

const fixture = process.argv[2]
const jobs = Number(process.argv[3] ?? 3)
const report: Record<string, number>[] = []
for (let j = 0; j < jobs; j++) {
  const dir = `${fixture}-job-${process.pid}-${j}`
  rmSync(dir, { recursive: true, force: true })
  cpSync(fixture, dir, { recursive: true })
  const a = mainThread()
  const start = Number(process.hrtime.bigint()) / 1e9
  const table = await Table.open(openStore(dir))
  const r = await compactBucket(table, { partition: serializeBinaryRow([], []), bucket: 0, full: true })
  const end = Number(process.hrtime.bigint()) / 1e9
  const b = mainThread()
  rmSync(dir, { recursive: true, force: true })
  report.push({ job: j + 1, mainCpuSeconds: b.cpu - a.cpu, userSeconds: b.user - a.user, systemSeconds: b.system - a.system, start, end, rowsOut: r.rowsOut })
}
console.log(JSON.stringify(report))
