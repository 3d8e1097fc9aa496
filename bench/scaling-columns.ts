// Cost against the width of a row: a table of a BIGINT key and N INT value columns, written
// through the library (one `table.write`, bucket 1) and read back whole (`table.read`), each
// in a fresh child process on local disk. For each width it prints the write's and the read's
// wall time, CPU and peak RSS (VmHWM, bench/lib/child.ts; for the write also the RSS with its
// input records made, before it starts), and of the data file written: its
// row groups, footer bytes (page indexes + FileMetaData, what follows the last row group) and
// file bytes. Two series: 100 rows at each width (the row count never fills a row group's
// bytes, so a width-independent writer makes one row group), and a larger row count at fewer
// widths, where row groups split by bytes. A third child times the data file layer alone
// (writeDataFile, DataFileReader, ColumnarFileReader on the same rows, in memory: CPU seconds),
// apart from the table's write and read paths around it. Asserts nothing.
//
//   npx tsx bench/scaling-columns.ts [--quick] [--sizes 1000,2500,5000,10000] [--rows 100]
//                                    [--big-sizes 100,1000] [--big-rows 10000] [--profile]
//
// --quick: 100 rows at 500, 1000, 2000 columns and 2,000 rows at 100 columns. --profile runs
// each child under `node --cpu-prof` into out/profile-columns-<mode>-<width>.

import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, readSync, readdirSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseBenchArgs } from './lib/args.ts'
import { runChild, reportToParent, timed, type ChildReport } from './lib/child.ts'

const INT_COLUMNS_NAME = (c: number) => `c${c}`

async function child(argv: string[]): Promise<void> {
  const [mode, dir, widthArg, rowsArg] = argv
  const width = Number(widthArg)
  const rows = Number(rowsArg)
  const { createTable, openTable } = await import('../lib/api/index.ts')
  if (mode === 'write') {
    const fields = [{ name: 'id', type: 'BIGINT NOT NULL' }, ...Array.from({ length: width }, (_, c) => ({ name: INT_COLUMNS_NAME(c), type: 'INT' }))]
    const table = await createTable(dir, { fields, primaryKeys: ['id'], options: { bucket: '1' } })
    // the records are made before the clock starts: the write is measured, not the input
    const records: Record<string, unknown>[] = []
    for (let r = 0; r < rows; r++) {
      const rec: Record<string, unknown> = { id: BigInt(r) }
      for (let c = 0; c < width; c++) rec[INT_COLUMNS_NAME(c)] = (r * 31 + c * 7) % 100_003
      records.push(rec)
    }
    const inputRssMb = rssMb()
    const { seconds, cpuSeconds } = await timed(() => table.write(records))
    reportToParent({ seconds, cpuSeconds, inputRssMb })
  } else if (mode === 'format') {
    await formatChild(width, rows)
  } else {
    const table = await openTable(dir)
    const { value, seconds, cpuSeconds } = await timed(async () => {
      let n = 0
      let check = 0
      for await (const row of table.read()) {
        n++
        check += Number((row as Record<string, unknown>)[INT_COLUMNS_NAME(width - 1)] ?? 0)
      }
      return { n, check }
    })
    if (value.n !== rows) throw new Error(`read ${value.n} rows, expected ${rows}`)
    reportToParent({ seconds, cpuSeconds, check: value.check })
  }
}

/**
 * The data file layer alone, without the table around it: `writeDataFile` of the same rows as
 * KeyValues (default options), then a scan of every record by DataFileReader and of every
 * row group by ColumnarFileReader (the compaction's reader), from memory.
 */
async function formatChild(width: number, rows: number): Promise<void> {
  const { writeDataFile } = await import('../lib/format/data-file-writer.ts')
  const { DataFileReader } = await import('../lib/format/data-file-reader.ts')
  const { ColumnarFileReader } = await import('../lib/format/columnar-reader.ts')
  const { byteSource } = await import('../lib/format/data-file-source.ts')
  const id = { id: 0, name: 'id', type: { root: 'BIGINT' as const, nullable: false } }
  const layout = { keyFields: [id], valueFields: [id, ...Array.from({ length: width }, (_, c) => ({ id: c + 1, name: INT_COLUMNS_NAME(c), type: { root: 'INT' as const, nullable: true } }))] }
  const records = Array.from({ length: rows }, (_, r) => ({ key: [BigInt(r)], seq: BigInt(r), kind: 0 as const, value: [BigInt(r), ...Array.from({ length: width }, (_, c) => (r * 31 + c * 7) % 100_003)] }))
  const cpu0 = process.cpuUsage()
  const t0 = performance.now()
  const { bytes } = writeDataFile(layout, records)
  const writeSeconds = (performance.now() - t0) / 1000
  const writeCpu = process.cpuUsage(cpu0)
  const read = await timed(async () => {
    let n = 0
    const reader = await DataFileReader.open(byteSource(bytes), layout)
    for await (const batch of reader.batches()) n += batch.length
    return n
  })
  const columnar = await timed(async () => {
    let n = 0
    const reader = await ColumnarFileReader.open(byteSource(bytes), layout)
    for await (const batch of reader.rowGroups()) n += batch.rows
    return n
  })
  if (read.value !== rows || columnar.value !== rows) throw new Error(`read ${read.value} and ${columnar.value} rows, expected ${rows}`)
  reportToParent({ seconds: writeSeconds, cpuSeconds: (writeCpu.user + writeCpu.system) / 1e6, readSeconds: read.seconds, readCpu: read.cpuSeconds, columnarSeconds: columnar.seconds, columnarCpu: columnar.cpuSeconds })
}

/** VmRSS of this process in MB (0 without /proc): the write's input is resident before the write starts. */
function rssMb(): number {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync('/proc/self/status', 'utf8'))
    return m ? Number(m[1]) / 1024 : 0
  } catch {
    return 0
  }
}

/** The data files (.parquet) under `dir`. */
function dataFiles(dir: string): string[] {
  const out: string[] = []
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith('.parquet')) out.push(join(e.parentPath, e.name))
  }
  return out
}

/** Row groups, footer bytes (from the end of the last row group) and size of a Parquet file. */
async function fileShape(path: string): Promise<{ rowGroups: number; footerBytes: number; fileBytes: number }> {
  const { parquetMetadata } = await import('hyparquet')
  const size = statSync(path).size
  const fd = openSync(path, 'r')
  try {
    const tail = Buffer.alloc(8)
    readSync(fd, tail, 0, 8, size - 8)
    const metaLength = tail.readUInt32LE(0)
    const bytes = Buffer.alloc(metaLength + 8)
    readSync(fd, bytes, 0, bytes.length, size - bytes.length)
    const meta = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.length))
    let dataEnd = 4
    for (const g of meta.row_groups) {
      for (const c of g.columns) {
        const m = c.meta_data!
        const start = Number(m.dictionary_page_offset ?? m.data_page_offset)
        dataEnd = Math.max(dataEnd, start + Number(m.total_compressed_size))
      }
    }
    return { rowGroups: meta.row_groups.length, footerBytes: size - dataEnd, fileBytes: size }
  } finally {
    closeSync(fd)
  }
}

interface Point {
  width: number
  rows: number
  write: ChildReport & { inputRssMb?: number }
  format: ChildReport & { readCpu: number; columnarCpu: number }
  read: ChildReport
  files: number
  rowGroups: number
  footerBytes: number
  fileBytes: number
}

async function measure(width: number, rows: number, profile: boolean): Promise<Point> {
  const dir = mkdtempSync(join(tmpdir(), 'strata-columns-'))
  const prof = (mode: string) => (profile ? { nodeArgs: ['--cpu-prof', '--cpu-prof-dir', join('out', `profile-columns-${mode}-${width}x${rows}`)] } : {})
  try {
    const write = await runChild(import.meta.filename, ['write', join(dir, 't'), String(width), String(rows)], prof('write'))
    const files = dataFiles(dir)
    let rowGroups = 0
    let footerBytes = 0
    let fileBytes = 0
    for (const f of files) {
      const s = await fileShape(f)
      rowGroups += s.rowGroups
      footerBytes += s.footerBytes
      fileBytes += s.fileBytes
    }
    const read = await runChild(import.meta.filename, ['read', join(dir, 't'), String(width), String(rows)], prof('read'))
    const format = await runChild<Point['format']>(import.meta.filename, ['format', join(dir, 'f'), String(width), String(rows)], prof('format'))
    return { width, rows, write, read, format, files: files.length, rowGroups, footerBytes, fileBytes }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function line(p: Point): string {
  const f = (n: number, d = 2) => n.toFixed(d)
  return (
    `| ${p.width.toLocaleString('en-US')} | ${p.rows.toLocaleString('en-US')} | ${p.rowGroups} | ${(p.footerBytes / 1e3).toFixed(1)} KB (${f(p.footerBytes / p.width / Math.max(1, p.rowGroups), 0)} B/col/group) | ${(p.fileBytes / 1e6).toFixed(2)} MB ` +
    `| ${f(p.write.seconds)} s (cpu ${f(p.write.cpuSeconds)}) | ${f(p.write.peakRssMb, 0)} MB (input ${f(p.write.inputRssMb ?? 0, 0)}) | ${f(p.read.seconds)} s (cpu ${f(p.read.cpuSeconds)}) | ${f(p.read.peakRssMb, 0)} MB | ${f(p.format.cpuSeconds)} / ${f(p.format.readCpu)} / ${f(p.format.columnarCpu)} s | ${f(Math.max(p.write.loadAvg, p.read.loadAvg, p.format.loadAvg))} |`
  )
}

async function parent(argv: string[]): Promise<void> {
  const args = parseBenchArgs(argv, ['--quick', '--profile'], ['--rows', '--big-rows'], ['--sizes', '--big-sizes'])
  const quick = args.has('--quick')
  const list = (s: string) => s.split(',').filter(Boolean).map(Number)
  const sizes = list(args.str('--sizes', quick ? '500,1000,2000' : '1000,2500,5000,10000'))
  const rows = args.num('--rows', 100)
  const bigSizes = list(args.str('--big-sizes', quick ? '100' : '100,1000'))
  const bigRows = args.num('--big-rows', quick ? 2000 : 10_000)
  if (args.has('--profile')) mkdirSync('out', { recursive: true })
  console.log('| columns | rows | row groups | footer | file | write | write peak RSS (input) | read | read peak RSS | data file alone: write / read / columnar read CPU | load |')
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const [widths, n] of [[sizes, rows], [bigSizes, bigRows]] as const) {
    for (const w of widths) console.log(line(await measure(w, n, args.has('--profile'))))
  }
}

const argv = process.argv.slice(2)
if (argv[0] === '--child') await child(argv.slice(1))
else await parent(argv)
