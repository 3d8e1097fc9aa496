// The compression thread (lib/format/compression-thread.ts): a data file whose pages it
// compressed is byte for byte the file compressed inline, also when the thread stalls or is
// replaced mid-file, and it runs from a minified esbuild bundle as the Lambda functions ship it.

import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { build } from 'esbuild'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { BUNDLING } from '../cdk/bundling.ts'
import { logger } from '../functions/shared/runtime.ts'
import { captureMetrics, metricNames } from './helpers/metrics.ts'
import { compressionThreadCounts, compressionThreadUseful, stallCompressionThread, stopCompressionThread } from '../lib/format/compression-thread.ts'
import { type DataFileLayout } from '../lib/format/data-file-layout.ts'
import { DataFileWriter } from '../lib/format/data-file-writer.ts'
import { readDataFile } from '../lib/format/data-file-reader.ts'
import type { DataField, DataType, KeyValue, RowKind } from '../lib/types.ts'

const t = (root: DataType['root'], extra: Partial<DataType> = {}): DataType => ({ root, nullable: true, ...extra })
const f = (id: number, name: string, type: DataType): DataField => ({ id, name, type })
const FIELDS: DataField[] = [
  f(0, 'id', t('BIGINT', { nullable: false })),
  f(1, 'name', t('VARCHAR', { length: 2147483647 })),
  f(2, 'qty', t('INT')),
  f(3, 'price', t('DOUBLE')),
]
const LAYOUT: DataFileLayout = { keyFields: FIELDS.slice(0, 1), valueFields: FIELDS }

/** Sorted, one row per key: names from a small set (dictionary pages) or long and varied (plain pages). */
const rowsArb = fc
  .array(
    fc.record({
      id: fc.bigInt({ min: -(2n ** 40n), max: 2n ** 40n }),
      name: fc.oneof(fc.constantFrom('a', 'bb', 'ccc', null), fc.string({ maxLength: 40 })),
      qty: fc.option(fc.integer({ min: -1000, max: 1000 })),
      price: fc.option(fc.double({ noNaN: true })),
      kind: fc.constantFrom<RowKind>(0, 0, 0, 3),
    }),
    { minLength: 1, maxLength: 600 },
  )
  .map((rs) => {
    const byKey = new Map(rs.map((r) => [r.id, r]))
    return [...byKey.values()].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0)).map((r, i): KeyValue => ({ key: [r.id], seq: BigInt(i), kind: r.kind, value: [r.id, r.name, r.qty, r.price] }))
  })

/** `n` sorted rows, names repeating and not. */
function rowsOf(n: number): KeyValue[] {
  return Array.from({ length: n }, (_, i): KeyValue => ({ key: [BigInt(i)], seq: BigInt(i), kind: i % 7 === 3 ? 3 : 0, value: [BigInt(i), i % 5 === 0 ? null : `name-${(i * 7919) % (i % 2 ? 13 : 100_000)}`, i % 11, i / 3] }))
}

function write(rows: KeyValue[], compressionThread: boolean, rowGroupRows: number, pageSize: number, between?: (row: number) => void): Uint8Array {
  const w = new DataFileWriter(LAYOUT, { compression: 'snappy', compressionThread, rowGroupRows, pageSize })
  rows.forEach((kv, i) => {
    between?.(i)
    w.write(kv)
  })
  return w.finish().bytes.slice()
}

afterAll(() => stopCompressionThread())

describe('compression thread', () => {
  it('writes the bytes inline compression writes, for random rows, row groups and page sizes', () => {
    const before = compressionThreadCounts()
    fc.assert(
      fc.property(rowsArb, fc.integer({ min: 1, max: 80 }), fc.integer({ min: 64, max: 4096 }), (rows, groupRows, pageSize) => {
        const threaded = write(rows, true, groupRows, pageSize)
        const inline = write(rows, false, groupRows, pageSize)
        expect(Buffer.from(threaded).equals(Buffer.from(inline))).toBe(true)
      }),
      { numRuns: 60 },
    )
    const after = compressionThreadCounts()
    expect(after.threadBatches).toBeGreaterThan(before.threadBatches)
    expect(after.fallbacks).toBe(before.fallbacks)
  })

  it('reads back what was written', async () => {
    const rows = fc.sample(rowsArb, { numRuns: 1, seed: 7 })[0]
    const bytes = write(rows, true, 16, 256)
    expect(await readDataFile({ size: bytes.length, read: async (s, e) => bytes.subarray(s, e) }, LAYOUT)).toEqual(rows)
  })

  it('a thread stopped mid-file is replaced and the file is unchanged', async () => {
    const rows = rowsOf(500)
    const inline = write(rows, false, 10, 512)
    const before = compressionThreadCounts()
    const w = new DataFileWriter(LAYOUT, { compression: 'snappy', compressionThread: true, rowGroupRows: 10, pageSize: 512 })
    const half = rows.length >> 1
    for (let i = 0; i < half; i++) w.write(rows[i])
    await stopCompressionThread()
    for (let i = half; i < rows.length; i++) w.write(rows[i])
    expect(Buffer.from(w.finish().bytes).equals(Buffer.from(inline))).toBe(true)
    // a row group handed over before the stop was compressed by the old thread, or, if it never
    // answered, inline; those after it by a new thread, or inline once this writer fell back
    const after = compressionThreadCounts()
    expect(after.starts > before.starts || after.fallbacks > before.fallbacks).toBe(true)
  })

  // a thread that does not answer cannot be caused through the public interface: the test
  // hook makes the thread sleep past the writer's wait limit
  it('a thread that does not answer: the writer compresses inline, the file is unchanged, the next metrics flush says so once', async () => {
    const rows = rowsOf(500)
    const inline = write(rows, false, 20, 512)
    // tests run the logger silent (vitest.config.ts); this one reads its warning
    const level = logger.getLevelName()
    logger.setLogLevel('WARN')
    const { emf, logs } = await captureMetrics((metrics) => {
      const before = compressionThreadCounts()
      let stalled = false
      const threaded = write(rows, true, 20, 512, (i) => {
        if (i === 45 && !stalled) {
          stalled = true
          stallCompressionThread(3_000)
        }
      })
      expect(Buffer.from(threaded).equals(Buffer.from(inline))).toBe(true)
      const stalled1 = compressionThreadCounts()
      expect(stalled1.fallbacks).toBe(before.fallbacks + 1)
      metrics.addMetric('Work', 'Count', 1)
      metrics.publishStoredMetrics()
      // the stalled thread was ended: the next writer gets a new one, which does its row groups
      expect(Buffer.from(write(rows, true, 20, 512)).equals(Buffer.from(inline))).toBe(true)
      const next = compressionThreadCounts()
      expect(next.starts).toBe(stalled1.starts + 1)
      expect(next.threadBatches).toBe(stalled1.threadBatches + 25)
      expect(next.fallbacks).toBe(stalled1.fallbacks)
      metrics.addMetric('Work', 'Count', 1)
      metrics.publishStoredMetrics()
    }).finally(() => logger.setLogLevel(level))
    // a handler's flush publishes the fallback (and warns) once; the next flush has none
    expect(emf).toHaveLength(2)
    expect(metricNames(emf[0])).toEqual(['CompressionThreadFallbacks', 'Work'])
    expect(emf[0]).toMatchObject({ CompressionThreadFallbacks: 1 })
    expect(metricNames(emf[1])).toEqual(['Work'])
    expect(logs.filter((l) => l.level === 'WARN').map((l) => [String(l.message).slice(0, 42), l.rowGroups])).toEqual([['the compression thread did not answer in t', 1]])
  })

  it('is wanted where a second CPU can run it: not on one CPU, nor on a Lambda function below 1,770 MB', () => {
    expect(compressionThreadUseful({}, 2)).toBe(true)
    expect(compressionThreadUseful({}, 1)).toBe(false)
    expect(compressionThreadUseful({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '1024' }, 2)).toBe(false)
    expect(compressionThreadUseful({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '1769' }, 2)).toBe(false)
    expect(compressionThreadUseful({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '1770' }, 2)).toBe(true)
    expect(compressionThreadUseful({ AWS_LAMBDA_FUNCTION_MEMORY_SIZE: '3008' }, 1)).toBe(false)
  })

  it('runs from a minified ES module bundle, as the functions are bundled; minified with kept names, stays inline without waiting', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'strata-compression-thread-'))
    try {
      const entry = join(dir, 'entry.ts')
      const lib = join(import.meta.dirname, '..', 'lib', 'format')
      writeFileSync(
        entry,
        `import { compressionThreadCounts } from ${JSON.stringify(join(lib, 'compression-thread.ts'))}
import { DataFileWriter } from ${JSON.stringify(join(lib, 'data-file-writer.ts'))}
const layout = { keyFields: [{ id: 0, name: 'id', type: { root: 'BIGINT', nullable: false } }], valueFields: [{ id: 0, name: 'id', type: { root: 'BIGINT', nullable: false } }, { id: 1, name: 's', type: { root: 'VARCHAR', nullable: true, length: 100 } }] }
const files = [true, false].map((compressionThread) => {
  const w = new DataFileWriter(layout, { compressionThread, rowGroupRows: 50 })
  for (let i = 0; i < 2000; i++) w.write({ key: [BigInt(i)], seq: BigInt(i), kind: 0, value: [BigInt(i), 'v' + (i % 37)] })
  return Buffer.from(w.finish().bytes)
})
console.log(JSON.stringify({ same: files[0].equals(files[1]), ...compressionThreadCounts() }))
`,
      )
      for (const keepNames of [false, true]) {
        const out = join(dir, `bundle-${keepNames}.mjs`)
        // the functions' bundling options (cdk/bundling.ts), and the same with keepNames
        await build({ entryPoints: [entry], outfile: out, bundle: true, platform: 'node', format: 'esm', target: BUNDLING.target, minify: BUNDLING.minify, keepNames, banner: { js: BUNDLING.banner! }, logLevel: 'silent' })
        const report = JSON.parse(execFileSync(process.execPath, [out], { encoding: 'utf8' }))
        // minified with kept names, the function's source calls esbuild's renamed name helper:
        // the check before starting a thread sees that, and the pages are compressed inline
        if (keepNames) expect(report, JSON.stringify(report)).toMatchObject({ same: true, threadBatches: 0, inlineBatches: 40, fallbacks: 0, starts: 0 })
        else expect(report, JSON.stringify(report)).toMatchObject({ same: true, threadBatches: 40, fallbacks: 0, starts: 1 })
      }
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})

describe('compression thread memory', () => {
  it("forgets the buffers of writers that never finished once they are collected", () => {
    // a child with --expose-gc: unfinished writers dropped, collected, and the thread told
    const script = `
import { DataFileWriter } from ${JSON.stringify(join(import.meta.dirname, '..', 'lib', 'format', 'data-file-writer.ts'))}
import { compressionThreadHeld } from ${JSON.stringify(join(import.meta.dirname, '..', 'lib', 'format', 'compression-thread.ts'))}
const layout = { keyFields: [{ id: 0, name: 'id', type: { root: 'BIGINT', nullable: false } }], valueFields: [{ id: 0, name: 'id', type: { root: 'BIGINT', nullable: false } }] }
function abandon() {
  const w = new DataFileWriter(layout, { compressionThread: true, rowGroupRows: 10 })
  for (let i = 0; i < 25; i++) w.write({ key: [BigInt(i)], seq: 0n, kind: 0, value: [BigInt(i)] })
}
for (let k = 0; k < 20; k++) abandon()
const before = compressionThreadHeld()
for (let k = 0; k < 20 && compressionThreadHeld() > 0; k++) {
  globalThis.gc()
  await new Promise((r) => setTimeout(r, 50))
}
console.log(JSON.stringify({ before, after: compressionThreadHeld() }))
`
    const dir = mkdtempSync(join(tmpdir(), 'strata-compression-forget-'))
    try {
      const file = join(dir, 'forget.mts')
      writeFileSync(file, script)
      const out = execFileSync(process.execPath, ['--expose-gc', '--import', 'tsx', file], { encoding: 'utf8', cwd: join(import.meta.dirname, '..') })
      expect(JSON.parse(out)).toEqual({ before: 20, after: 0 })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
