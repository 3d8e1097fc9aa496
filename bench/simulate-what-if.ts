// What the folded commit path would have to cost for the simulation's freshness targets at
// task-threads -1: the simulation (bench/simulate.ts) re-run from the calibration of the last
// `bench/run.ts` (bench/out/results.json) with the committer's three costs replaced by a
// grid of smaller ones. It measures nothing; it says which cost to cut, and by how much,
// before anyone builds the cut.
//
//   npx tsx bench/simulate-what-if.ts [--seconds 900]
//
// The three costs: a round's base (drain, snapshot read, manifest and snapshot writes), a
// round's cost per commit message (drain, parse, fold) and the receipts' cost per message
// (a compactor holds its slot and its bucket until its receipt is written).

import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseBenchArgs } from './lib/args.ts'
import { OUT_DIR, markdownTable } from './lib/report.ts'
import { type SimCalibration, type SimOptions, simulate } from './simulate.ts'

const args = parseBenchArgs(process.argv.slice(2), [], ['--seconds'])
const r = JSON.parse(readFileSync(join(OUT_DIR, 'results.json'), 'utf8')) as { simulation: { calibration: SimCalibration; options: SimOptions }; machine?: { gitCommit?: string } }
const cal = r.simulation.calibration
const seconds = args.num('--seconds', 900)
const opts: SimOptions = { ...r.simulation.options, seconds, warmupSeconds: Math.floor(seconds / 3) }
const f = (x: number, d = 2) => x.toFixed(d)

const rows: string[][] = []
const bases = [cal.foldBaseMs, 150, 100]
const perCommit = [cal.foldPerCommitMs, 0.5, 0.3, 0.15]
const receipts = [cal.receiptPerCommitMs ?? 0, 0.3]
for (const base of bases) {
  for (const per of perCommit) {
    for (const rc of receipts) {
      const p = simulate({ ...cal, foldBaseMs: base, foldPerCommitMs: per, receiptPerCommitMs: rc }, opts, 'folded', -1)
      rows.push([f(base, 0), f(per), f(rc), f(p.lagP50S), f(p.lagP99S), f(p.messagesPerFold ?? 0, 0), f(p.commitUtilization)])
    }
  }
}
console.log(`calibration of bench/out/results.json${r.machine?.gitCommit ? ` (run at ${r.machine.gitCommit})` : ''}; ${opts.buckets} buckets, task-threads -1, ${seconds} s simulated`)
console.log(markdownTable(['round base (ms)', 'round per message (ms)', 'receipts per message (ms)', 'lag p50 (s)', 'lag p99 (s)', 'messages per snapshot', 'commit path busy'], rows))
