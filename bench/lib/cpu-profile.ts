// Summary of a V8 `.cpuprofile` (from `node --cpu-prof`): self time by function and by
// source file, so a benchmark can say where compaction spends its CPU.

import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string; url: string; lineNumber: number }
  children?: number[]
}

interface CpuProfile {
  nodes: ProfileNode[]
  samples: number[]
  timeDeltas: number[]
}

export interface ProfileEntry {
  name: string
  ms: number
  percent: number
}

export interface ProfileSummary {
  totalMs: number
  byCategory: ProfileEntry[]
  byFunction: ProfileEntry[]
  byFile: ProfileEntry[]
}

/** The data-file code by side: the writer with its statistics, the reader with its byte source and manifest check. */
const DATA_FILE_WRITER = /^lib\/format\/data-file-(writer|stats)\.ts$/
const DATA_FILE_READER = /^lib\/format\/data-file-(reader|source|check)\.ts$/

/** What a frame's self time is spent on, in the terms a reading of a compaction needs. */
export function categoryOf(file: string, functionName: string): string {
  if (file === '(garbage collector)') return 'garbage collection'
  if (file === '(idle)' || file === '(program)') return 'idle / VM'
  if (/^node:internal\/(modules|deps\/cjs-module-lexer)|^tsx\/|^esbuild\//.test(file)) return 'module loading (before the timed job)'
  if (/^lib\/format\/parquet-(encode|encode-[a-z]+|footer)\.ts$/.test(file) || file.startsWith('hyparquet-writer/') || functionName === 'encodeUtf8String' || (file === 'node:internal/encoding' && functionName === 'encode')) return 'Parquet encode (parquet-encode.ts, parquet-footer.ts)'
  if (file === 'lib/format/parquet-decode.ts' || functionName === 'latin1Slice') return "Parquet decode (Strata's parquet-decode.ts)"
  if (/^hyparquet(-compressors)?\/|^wasm\//.test(file) || functionName === 'decodeUTF8' || (file === 'node:internal/encoding' && functionName === 'decode')) return 'Parquet decode (hyparquet: footers, other columns)'
  if (DATA_FILE_WRITER.test(file)) return 'Strata data-file writer (Paimon stats, column buffers)'
  if (DATA_FILE_READER.test(file)) return 'Strata data-file reader (KeyValue assembly)'
  if (file === 'lib/format/data-file-layout.ts') return 'Strata data-file layout (data-file-layout.ts)'
  if (file === 'lib/format/parquet-types.ts') return 'Strata value encode/decode (parquet-types.ts)'
  if (/^lib\/(lsm\/merge-reader|merge\/[a-z-]+|format\/compare|lsm\/columnar-merge|lsm\/columnar\/[a-z-]+)\.ts$/.test(file)) return 'merge (k-way merge, key compare, merge function)'
  if (file === 'lib/format/columnar-types.ts') return 'columnar gather, concat, row selection (columnar-types.ts)'
  if (file === 'lib/format/columnar-reader.ts') return 'Strata columnar reader (column conversion)'
  if (/^lib\/lsm\/compact\/[a-z-]+\.ts$/.test(file)) return 'compaction loop, lookups, vector positions'
  if (/^lib\/format\/(roaring-container|roaring32|roaring64|deletion-vector)\.ts$/.test(file)) return 'deletion vectors'
  if (/^lib\/store\/|^node:(internal\/)?fs|^@aws-sdk\/|^@smithy\/|^node:internal\/(stream|http|net)/.test(file)) return 'store I/O'
  if (/^lib\/(commit|format\/(avro|manifest|snapshot|binary-row))/.test(file)) return 'manifests, commit, binary rows'
  return 'other'
}

/** `lib/format/data-file-writer.ts`, `hyparquet/src/…`, or the V8 pseudo-frame's name. */
function fileOf(url: string, functionName: string): string {
  if (url === '') return functionName || '(native)'
  const path = url.replace(/^file:\/\//, '')
  const nm = path.lastIndexOf('node_modules/')
  if (nm >= 0) return path.slice(nm + 'node_modules/'.length)
  const lib = path.search(/\/(lib|bench|local)\//)
  if (lib >= 0) return path.slice(lib + 1)
  return path.startsWith('node:') ? path : path.split('/').slice(-2).join('/')
}

export function summarizeCpuProfile(path: string, top = 15): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, 'utf8')) as CpuProfile
  const byId = new Map(profile.nodes.map((n) => [n.id, n]))
  const self = new Map<number, number>()
  let total = 0
  for (let i = 0; i < profile.samples.length; i++) {
    const dt = profile.timeDeltas[i] ?? 0
    self.set(profile.samples[i], (self.get(profile.samples[i]) ?? 0) + dt)
    total += dt
  }
  const fn = new Map<string, number>()
  const file = new Map<string, number>()
  const category = new Map<string, number>()
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame
    const f = fileOf(url, functionName)
    const name = url === '' ? f : `${functionName || '(anonymous)'} ${f}:${lineNumber + 1}`
    fn.set(name, (fn.get(name) ?? 0) + us)
    file.set(f, (file.get(f) ?? 0) + us)
    const c = categoryOf(f, functionName)
    category.set(c, (category.get(c) ?? 0) + us)
  }
  const entries = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, ms: Math.round(us / 1000), percent: Math.round((1000 * us) / total) / 10 }))
  return { totalMs: Math.round(total / 1000), byCategory: entries(category), byFunction: entries(fn), byFile: entries(file) }
}
