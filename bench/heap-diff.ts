// What one V8 heap snapshot holds that an earlier one of the same isolate did not: live
// bytes and object counts by kind (V8's node type and, for objects and closures, the
// constructor or function name), largest growth first; with --strings, strings counted by
// shape (UUIDs and digits masked), which names the cache or structure that keeps them.
// Snapshots come from the local runtime (LOCAL_HEAP_SNAPSHOT_DIR and LOCAL_HEAP_SNAPSHOT_AT,
// local/runtime/worker.ts) or any `v8.writeHeapSnapshot`.
//
//   npx tsx bench/heap-diff.ts EARLIER.heapsnapshot LATER.heapsnapshot [--strings] [--top 30]

import { readFileSync } from 'node:fs'

interface HeapSnapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[], ...unknown[]] } }
  nodes: number[]
  strings: string[]
}

const STRING_TYPES = new Set(['string', 'concatenated string', 'sliced string'])

/** Per kind (or string shape): count and self bytes. */
function tally(path: string, strings: boolean): { kinds: Map<string, { count: number; bytes: number }>; total: number } {
  const h = JSON.parse(readFileSync(path, 'utf8')) as HeapSnapshot
  const fields = h.snapshot.meta.node_fields
  const types = h.snapshot.meta.node_types[0]
  const width = fields.length
  const [typeAt, nameAt, sizeAt] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f))
  const kinds = new Map<string, { count: number; bytes: number }>()
  let total = 0
  for (let i = 0; i < h.nodes.length; i += width) {
    const type = types[h.nodes[i + typeAt]]
    const name = h.strings[h.nodes[i + nameAt]]
    const bytes = h.nodes[i + sizeAt]
    total += bytes
    let kind: string
    if (strings) {
      if (!STRING_TYPES.has(type)) continue
      kind = JSON.stringify(name.replace(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g, 'UUID').replace(/\d+/g, 'N').slice(0, 70))
    } else kind = STRING_TYPES.has(type) ? 'string' : type === 'object' || type === 'closure' || type === 'native' ? `${type}: ${name.slice(0, 60)}` : type
    const k = kinds.get(kind) ?? { count: 0, bytes: 0 }
    k.count++
    k.bytes += bytes
    kinds.set(kind, k)
  }
  return { kinds, total }
}

const args = process.argv.slice(2)
const files = args.filter((a) => !a.startsWith('--') && !/^\d+$/.test(a))
if (files.length !== 2) {
  console.error('usage: npx tsx bench/heap-diff.ts EARLIER.heapsnapshot LATER.heapsnapshot [--strings] [--top N]')
  process.exit(2)
}
const strings = args.includes('--strings')
const top = Number(args[args.indexOf('--top') + 1]) || 30
const [a, b] = files.map((f) => tally(f, strings))
console.log(`live heap ${(a.total / 1e6).toFixed(1)} MB -> ${(b.total / 1e6).toFixed(1)} MB`)
const rows = [...new Set([...a.kinds.keys(), ...b.kinds.keys()])].map((k) => {
  const was = a.kinds.get(k) ?? { count: 0, bytes: 0 }
  const now = b.kinds.get(k) ?? { count: 0, bytes: 0 }
  return { k, dBytes: now.bytes - was.bytes, dCount: now.count - was.count, now }
})
rows.sort((x, y) => (strings ? y.dCount - x.dCount : y.dBytes - x.dBytes))
console.log('  Δ KB   Δ count |    count       KB | kind')
for (const r of rows.slice(0, top)) {
  console.log(`${(r.dBytes / 1e3).toFixed(0).padStart(6)} ${String(r.dCount).padStart(9)} | ${String(r.now.count).padStart(8)} ${(r.now.bytes / 1e3).toFixed(0).padStart(8)} | ${r.k}`)
}
