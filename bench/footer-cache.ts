// The footer cache at the default target-file-size: one data file of a 10-field table written
// up to --target-mb (default 128, `target-file-size`'s default) at the default row-group size,
// so about 2,000 row groups. Prints what a table handle's footer cache charges for the file's
// parsed footer and page index (per file and per row group), the heap the cached footer really
// keeps (with --expose-gc), how long a cold open takes, whether the footer stays cached in a
// cache of the default size (DEFAULT_FOOTER_CACHE_BYTES), and the requests and bytes of
// --lookups warm point lookups through that cache (each opens the file through the cache, as a
// table read does). Uses only DataFileReader's public API, so the same script measures an
// older checkout. Asserts only that every lookup finds its row.
//
//   npx tsx --expose-gc bench/footer-cache.ts [--target-mb 128] [--lookups 200]

import type { ByteSource } from '../lib/store/byte-source.ts'
import { type DataFileFooter, DataFileReader } from '../lib/format/data-file-reader.ts'
import { type DataFileLayout } from '../lib/format/data-file-layout.ts'
import { DataFileWriter } from '../lib/format/data-file-writer.ts'
import { rowComparator } from '../lib/format/compare.ts'
import { ByteLru } from '../lib/format/byte-cache.ts'
import { DEFAULT_FOOTER_CACHE_BYTES } from '../lib/handle/table.ts'
import type { DataType, KeyValue, Value } from '../lib/types.ts'
import { parseBenchArgs } from './lib/args.ts'
import { seededRandom } from './lib/dataset.ts'
import { median, percentile } from './lib/stats.ts'

const args = parseBenchArgs(process.argv.slice(2), [], ['--target-mb', '--lookups'])
const targetBytes = args.num('--target-mb', 128) * 1024 * 1024
const lookups = args.num('--lookups', 200)

const t = (root: DataType['root'], extra: Partial<DataType> = {}): DataType => ({ root, nullable: root !== 'BIGINT', ...extra })
const STRING = t('VARCHAR', { length: 2147483647 })
const layout: DataFileLayout = {
  keyFields: [{ id: 0, name: 'id', type: t('BIGINT') }],
  valueFields: [
    { id: 0, name: 'id', type: t('BIGINT') },
    { id: 1, name: 'customer', type: STRING },
    { id: 2, name: 'city', type: STRING },
    { id: 3, name: 'price', type: t('DECIMAL', { precision: 10, scale: 2 }) },
    { id: 4, name: 'qty', type: t('INT') },
    { id: 5, name: 'score', type: t('DOUBLE') },
    { id: 6, name: 'ts', type: t('TIMESTAMP', { precision: 3 }) },
    { id: 7, name: 'day', type: t('DATE') },
    { id: 8, name: 'paid', type: t('BOOLEAN') },
    { id: 9, name: 'note', type: STRING },
  ],
}
const CITIES = ['Lisbon', 'Porto', 'Braga', 'Coimbra', 'Faro', 'Aveiro', 'Évora', 'Leiria']
const random = seededRandom(18)
const rowOf = (i: number): KeyValue => {
  const id = BigInt(i * 2) // odd keys are absent
  const value: Value[] = [
    id,
    `customer-${(i * 7919) % 1_000_003}`,
    CITIES[i % CITIES.length],
    BigInt(Math.floor(random() * 1_000_000)),
    i % 1000,
    random() * 100,
    1_700_000_000_000_000n + BigInt(i) * 1000n,
    19_000 + (i % 3650),
    i % 3 === 0,
    i % 5 === 0 ? null : `note ${i % 977} ${'x'.repeat(i % 23)}`,
  ]
  return { key: [id], seq: BigInt(i), kind: 0, value }
}

const ms = (t0: bigint): number => Number(process.hrtime.bigint() - t0) / 1e6

let t0 = process.hrtime.bigint()
const writer = new DataFileWriter(layout)
let rows = 0
while (writer.estimatedSize < targetBytes) writer.write(rowOf(rows++))
const { bytes } = writer.finish()
const writeMs = ms(t0)

function counted(): ByteSource & { requests: number; bytesRead: number } {
  const src = {
    size: bytes.length,
    requests: 0,
    bytesRead: 0,
    async read(start: number, end: number) {
      src.requests++
      src.bytesRead += end - start
      return bytes.subarray(start, end)
    },
  }
  return src
}

const gc = (globalThis as { gc?: () => void }).gc
// (freed ArrayBuffer backing stores leave the count a little after the collection)
const heap = async (): Promise<number> => {
  for (let i = 0; i < 3; i++) {
    gc!()
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  const m = process.memoryUsage()
  return m.heapUsed + m.arrayBuffers
}

// the charge, in a cache large enough for any footer; the heap it really keeps
// (a first open, uncached, compiles the code the measured one runs, after a collection of
// what the write left; only the cache holds the measured footers when the heap is read again)
if (gc) await heap()
await DataFileReader.open(counted(), layout)
// the footer is cached under COPIES keys, so the heap figure is COPIES footers' (less noise)
const COPIES = 4
const big = new ByteLru<DataFileFooter, string>(1 << 30)
const heapBefore = gc ? await heap() : NaN
t0 = process.hrtime.bigint()
for (let n = 0; n < COPIES; n++) await DataFileReader.open(counted(), layout, { footerCache: big, cacheKey: n === 0 ? 'f' : `f${n}` })
const openMs = ms(t0) / COPIES
const heapAfter = gc ? ((await heap()) - heapBefore) / COPIES + heapBefore : NaN
const charge = big.stats().bytes / COPIES
const groups = (await DataFileReader.open(counted(), layout, { footerCache: big, cacheKey: 'f' })).groups.length

// a cache of the default size: does the footer stay, and what does a warm lookup cost
const cache = new ByteLru<DataFileFooter, string>(DEFAULT_FOOTER_CACHE_BYTES)
const src = counted()
await DataFileReader.open(src, layout, { footerCache: cache, cacheKey: 'f' })
const coldRequests = src.requests
const coldBytes = src.bytesRead
src.requests = 0
await DataFileReader.open(src, layout, { footerCache: cache, cacheKey: 'f' })
const reopenRequests = src.requests
const cmp = rowComparator([layout.keyFields[0].type])
const perLookup: { requests: number; bytes: number; ms: number }[] = []
for (let n = 0; n < lookups; n++) {
  const i = Math.floor(random() * rows)
  src.requests = 0
  src.bytesRead = 0
  t0 = process.hrtime.bigint()
  const reader = await DataFileReader.open(src, layout, { footerCache: cache, cacheKey: 'f' })
  const hit = await reader.lookup([BigInt(i * 2)], cmp)
  perLookup.push({ requests: src.requests, bytes: src.bytesRead, ms: ms(t0) })
  if (hit?.record?.key[0] !== BigInt(i * 2)) throw new Error(`lookup of key ${i * 2} did not find its row`)
}

const kib = (n: number): string => (n / 1024).toFixed(1)
const mib = (n: number): string => (n / 1024 / 1024).toFixed(2)
const col = (f: (l: (typeof perLookup)[number]) => number) => perLookup.map(f)
console.log(`file: ${rows.toLocaleString('en')} rows, ${groups.toLocaleString('en')} row groups, ${mib(bytes.length)} MiB (written in ${(writeMs / 1000).toFixed(1)} s)`)
console.log(`footer cache charge: ${mib(charge)} MiB per file, ${charge === 0 ? 'n/a' : Math.round(charge / groups)} bytes per row group (× 2,000 row groups: ${mib((charge / groups) * 2000)} MiB)`)
console.log(gc ? `heap kept by the cached footer: ${mib(heapAfter - heapBefore)} MiB, ${Math.round((heapAfter - heapBefore) / groups)} bytes per row group` : 'heap kept by the cached footer: run with --expose-gc')
console.log(`cold open (footer + page index read and parsed): ${openMs.toFixed(0)} ms`)
console.log(
  `default footer cache (${mib(DEFAULT_FOOTER_CACHE_BYTES)} MiB): after the first open (${coldRequests} requests, ${kib(coldBytes)} KiB) it holds ${cache.stats().entries} footer(s), ${mib(cache.stats().bytes)} MiB; a second open makes ${reopenRequests} requests`,
)
console.log(
  `${lookups} warm lookups (open through the cache, then lookup): requests median ${median(col((l) => l.requests))} (p95 ${percentile(col((l) => l.requests), 95, 0)}), ` +
    `KiB median ${kib(median(col((l) => l.bytes)))} (p95 ${kib(percentile(col((l) => l.bytes), 95, 0))}), ms median ${median(col((l) => l.ms)).toFixed(2)} (p95 ${percentile(col((l) => l.ms), 95, 0).toFixed(2)})`,
)
