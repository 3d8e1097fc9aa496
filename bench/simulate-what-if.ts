// What the folded commit path would have to cost for the simulation's freshness targets at
// task-threads -1: the simulation (bench/simulate.ts) re-run from the calibration of the last
// `bench/run.ts` (bench/out/results.json) with the committer's costs replaced by a grid of
// smaller ones. It measures nothing; it says which cost to cut, and by how much, before
// anyone builds the cut.
//
//   npx tsx bench/simulate-what-if.ts [--seconds 900]
//
// The three costs: a round's base (the fold: snapshot probe, manifest and snapshot writes;
// a round after the other committer's snapshot, and a lost race, keep their measured excess
// over it), a round's cost per commit message (the fold's reads, checks and
// writes) and what holds a compactor after its snapshot: since senders follow the snapshot
// chain, the wait until its probe sees the landing (the calibration's receiptWaitMs); in a
// calibration from before it, its round's receipts per message (a compactor held its slot
// and its bucket until its receipt was written).

import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parseBenchArgs } from './lib/args.ts'
import { OUT_DIR, markdownTable } from './lib/report.ts'
import { type SimCalibration, type SimOptions, simulate } from './simulate.ts'

const args = parseBenchArgs(process.argv.slice(2), [], ['--seconds'])
const resultsPath = join(OUT_DIR, 'results.json')
if (!existsSync(resultsPath)) {
  process.stderr.write(`${resultsPath} does not exist: it is written by \`npm run bench\` (npx tsx bench/run.ts; --quick for a shorter run), whose simulation calibration this script varies\n`)
  process.exit(1)
}
const r = JSON.parse(readFileSync(resultsPath, 'utf8')) as { simulation: { calibration: SimCalibration; options: SimOptions }; machine?: { gitCommit?: string } }
const cal = r.simulation.calibration
const seconds = args.num('--seconds', 900)
const opts: SimOptions = { ...r.simulation.options, seconds, warmupSeconds: Math.floor(seconds / 3) }
const f = (x: number, d = 2) => x.toFixed(d)

// the third cost: the landing-seen wait, or (older calibrations) the receipts per message
const receipts = cal.receiptBaseMs !== undefined && cal.receiptPerCommitMs !== undefined
const third = receipts
  ? { label: 'receipts per message (ms)', values: [cal.receiptPerCommitMs!, 0.3], set: (c: SimCalibration, v: number): SimCalibration => ({ ...c, receiptPerCommitMs: v }) }
  : { label: 'landing seen after the snapshot (ms)', values: [cal.receiptWaitMs ?? 0, 20], set: (c: SimCalibration, v: number): SimCalibration => ({ ...c, receiptWaitMs: v }) }

const rows: string[][] = []
// the measured costs, then cuts of a quarter and a half (older calibrations, far costlier: fixed steps)
const bases = cal.foreignRoundBaseMs !== undefined ? [cal.foldBaseMs, 0.75 * cal.foldBaseMs, 0.5 * cal.foldBaseMs] : [cal.foldBaseMs, 150, 100]
const perCommit = cal.foreignRoundBaseMs !== undefined ? [cal.foldPerCommitMs, 0.5 * cal.foldPerCommitMs, 0.25 * cal.foldPerCommitMs] : [cal.foldPerCommitMs, 0.5, 0.3, 0.15]
for (const base of bases) {
  for (const per of perCommit) {
    for (const v of third.values) {
      // a cold invocation's first round keeps its measured excess over a steady round
      const first =
        cal.firstRoundBaseMs !== undefined
          ? { firstRoundBaseMs: Math.max(base, cal.firstRoundBaseMs - cal.foldBaseMs + base), firstRoundPerCommitMs: Math.max(per, (cal.firstRoundPerCommitMs ?? cal.foldPerCommitMs) - cal.foldPerCommitMs + per) }
          : {}
      // so do a round after the other committer's snapshot and a lost race
      const foreign =
        cal.foreignRoundBaseMs !== undefined
          ? {
              foreignRoundBaseMs: Math.max(base, cal.foreignRoundBaseMs - cal.foldBaseMs + base),
              foreignRoundPerCommitMs: Math.max(0, (cal.foreignRoundPerCommitMs ?? cal.foldPerCommitMs) - cal.foldPerCommitMs + per),
              ...(cal.lostRaceMs !== undefined ? { lostRaceMs: Math.max(0, cal.lostRaceMs - cal.foldBaseMs + base) } : {}),
            }
          : {}
      const p = simulate(third.set({ ...cal, ...first, ...foreign, foldBaseMs: base, foldPerCommitMs: per }, v), opts, 'folded', -1)
      rows.push([f(base, 0), f(per), f(v, receipts ? 2 : 0), f(p.lagP50S), f(p.lagP99S), f(p.messagesPerFold ?? 0, 0), f(p.commitUtilization)])
    }
  }
}
console.log(`calibration of bench/out/results.json${r.machine?.gitCommit ? ` (run at ${r.machine.gitCommit})` : ''}; ${opts.buckets} buckets, task-threads -1, ${seconds} s simulated`)
console.log(markdownTable(['round base (ms)', 'round per message (ms)', third.label, 'lag p50 (s)', 'lag p99 (s)', 'messages per snapshot', 'commit path busy'], rows))
