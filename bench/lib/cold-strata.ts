// A cold compactor's first job, from the process's start: bench/compaction.ts bundles this
// entry as the Lambda functions are bundled (cdk/bundling.ts) and runs the bundle in a new
// Node process with the functions' environment, so its figures include starting Node,
// loading and evaluating the bundle, opening the table, and a full compaction whose code V8
// has not compiled yet: what a compactor's first job after a cold start costs (Lambda's own
// start-up aside). Prints the one JSON line runChild reads.
//
//   node cold-strata.mjs <table uri>      (a table with one unpartitioned bucket)

import { serializeBinaryRow } from '../../lib/format/binary-row.ts'
import { compressionThreadCounts } from '../../lib/format/compression-thread.ts'
import { compactBucket } from '../../lib/lsm/compact/compact-bucket.ts'
import { openStore } from '../../lib/store/open-store.ts'
import { Table } from '../../lib/handle/table.ts'
import { cpuSecondsOf, mainThreadCpuSeconds, reportToParent, timed } from './child.ts'

const table = await Table.open(openStore(process.argv[2]))
const readySeconds = process.uptime()
const readyCpuSeconds = cpuSecondsOf(process.cpuUsage())
const readyMainCpuSeconds = mainThreadCpuSeconds()
// compactBucket's defaults, as the compactor calls it: the columnar merge, the compression thread where useful
// (the empty partition made here: bench/lib/dataset.ts's NO_PARTITION would bring the benchmark's writers into the bundle)
// STRATA_BENCH_COMPRESSION_THREAD=off: the output's pages compressed inline
const compressionThread = process.env.STRATA_BENCH_COMPRESSION_THREAD === 'off' ? false : undefined
const { value: r, ...job } = await timed(() => compactBucket(table, { partition: serializeBinaryRow([], []), bucket: 0, full: true, compressionThread }))
reportToParent({ ...job, readySeconds, readyCpuSeconds, processSeconds: process.uptime(), processCpuSeconds: cpuSecondsOf(process.cpuUsage()), readyMainCpuSeconds, processMainCpuSeconds: mainThreadCpuSeconds(), rowsOut: r.rowsOut, columnarSteps: r.columnarSteps ?? 0, compression: compressionThreadCounts() })
