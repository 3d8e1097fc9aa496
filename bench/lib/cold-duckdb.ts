// DuckDB's side of bench/lib/cold-strata.ts: the same merge (bench/lib/duckdb-merge.ts),
// single-threaded, in a new process, from its start: loading DuckDB's native module, making
// an instance and a connection, then the job. bench/compaction.ts bundles it with the same
// options, DuckDB's packages left out of the bundle (a native module loads from
// node_modules). Prints the one JSON line runChild reads.
//
//   node cold-duckdb.mjs <output file> <input Parquet file>…

import { cpuSecondsOf, reportToParent, timed } from './child.ts'
import { duckdbSql } from './duckdb-merge.ts'

const [out, ...files] = process.argv.slice(2)
const { DuckDBInstance } = await import('@duckdb/node-api')
const instance = await DuckDBInstance.create(':memory:', { threads: '1' })
const conn = await instance.connect()
const readySeconds = process.uptime()
const readyCpuSeconds = cpuSecondsOf(process.cpuUsage())
const job = await timed(() => conn.run(duckdbSql(files, out)))
const processSeconds = process.uptime()
const processCpuSeconds = cpuSecondsOf(process.cpuUsage())
const counted = await conn.runAndReadAll(`SELECT count(*)::INTEGER AS n FROM read_parquet('${out.replaceAll("'", "''")}')`)
const rowsOut = Number(counted.getRowObjects()[0].n)
conn.closeSync()
instance.closeSync()
reportToParent({ seconds: job.seconds, cpuSeconds: job.cpuSeconds, readySeconds, readyCpuSeconds, processSeconds, processCpuSeconds, rowsOut })
