// Cost against the width of a row: a table of a BIGINT key and N INT value columns, written
// through the library (one `table.write`, bucket 1) and read back whole (`table.read`), each
// in a fresh child process on local disk. For each width it prints the write's and the read's
// wall time, CPU and peak RSS (VmHWM, bench/lib/child.ts), and of the data file written: its
// row groups, footer bytes (page indexes + FileMetaData, what follows the last row group) and
// file bytes. Two series: 100 rows at each width (the row count never fills a row group's
// bytes, so a width-independent writer makes one row group), and a larger row count at fewer
// widths, where row groups split by bytes. Asserts nothing.
//
//   npx tsx bench/scaling-columns.ts [--quick] [--sizes 1000,2500,5000,10000] [--rows 100]
//                                    [--big-sizes 100,1000] [--big-rows 10000] [--profile]
//
// --quick: 100 rows at 500, 1000, 2000 columns and 2,000 rows at 100 columns. --profile runs
// each child under `node --cpu-prof` into out/profile-columns-<mode>-<width>.

import { mkdirSync, mkdtempSync, openSync, readSync, readdirSync, rmSync, statSync, closeSync } from 'node:fs'
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
    const { seconds, cpuSeconds } = await timed(() => table.write(records))
    reportToParent({ seconds, cpuSeconds })
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
  write: ChildReport
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
    return { width, rows, write, read, files: files.length, rowGroups, footerBytes, fileBytes }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

function line(p: Point): string {
  const f = (n: number, d = 2) => n.toFixed(d)
  return (
    `| ${p.width.toLocaleString('en-US')} | ${p.rows.toLocaleString('en-US')} | ${p.rowGroups} | ${(p.footerBytes / 1e3).toFixed(1)} KB (${f(p.footerBytes / p.width / Math.max(1, p.rowGroups), 0)} B/col/group) | ${(p.fileBytes / 1e6).toFixed(2)} MB ` +
    `| ${f(p.write.seconds)} s (cpu ${f(p.write.cpuSeconds)}) | ${f(p.write.peakRssMb, 0)} MB | ${f(p.read.seconds)} s (cpu ${f(p.read.cpuSeconds)}) | ${f(p.read.peakRssMb, 0)} MB | ${f(Math.max(p.write.loadAvg, p.read.loadAvg))} |`
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
  console.log('| columns | rows | row groups | footer | file | write | write peak RSS | read | read peak RSS | load |')
  console.log('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
  for (const [widths, n] of [[sizes, rows], [bigSizes, bigRows]] as const) {
    for (const w of widths) console.log(line(await measure(w, n, args.has('--profile'))))
  }
}

const argv = process.argv.slice(2)
if (argv[0] === '--child') await child(argv.slice(1))
else await parent(argv)
