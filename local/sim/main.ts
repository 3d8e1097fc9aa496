// Runs the deterministic simulation (docs/reliability.md "The deterministic simulation") over
// a range of seeds, one after another; prints each failure with its seed, and a summary.
//
//   npm run sim -- [--seeds 100] [--from 1] [--load-s 90] [--rate 4] [--no-faults] [--verbose]
//   npm run sim -- --seed 1234          (replay one seed; prints its trace digest)
//
// Exits 1 when any seed failed.

import { parseArgs } from 'node:util'
import { runSimulation } from './simulation.ts'

const { values } = parseArgs({
  options: {
    seeds: { type: 'string', default: '20' },
    from: { type: 'string', default: '1' },
    seed: { type: 'string' },
    'load-s': { type: 'string', default: '90' },
    rate: { type: 'string', default: '4' },
    'no-faults': { type: 'boolean', default: false },
    verbose: { type: 'boolean', default: false },
  },
})

function int(name: string, v: string): number {
  const n = Number(v)
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--${name}: expected a whole number >= 0, got ${JSON.stringify(v)}`)
  return n
}

const from = values.seed !== undefined ? int('seed', values.seed) : int('from', values.from)
const n = values.seed !== undefined ? 1 : int('seeds', values.seeds)
const started = Date.now()
let failed = 0
for (let seed = from; seed < from + n; seed++) {
  const t0 = Date.now()
  const r = await runSimulation({ seed, loadMs: int('load-s', values['load-s']) * 1000, rate: int('rate', values.rate), faults: !values['no-faults'], verbose: values.verbose })
  const line = `seed ${seed}: ${r.ok ? 'ok' : 'FAILED'} in ${((Date.now() - t0) / 1000).toFixed(1)} s, ${r.steps} steps, ${(r.virtualMs / 60_000).toFixed(1)} virtual min, drained ${r.drainedAfterMs === null ? '-' : `${(r.drainedAfterMs / 1000).toFixed(0)} s`} after the load, trace ${r.trace}`
  console.log(line)
  if (values.verbose || values.seed !== undefined) console.log(`  ${Object.entries(r.stats).map(([k, v]) => `${k} ${v}`).join(', ')}`)
  if (!r.ok) {
    failed++
    console.log(`  ${r.failure}`)
    console.log(`  replay: npm run sim -- --seed ${seed}`)
  }
}
console.log(`${n - failed} passed, ${failed} failed (seeds ${from}..${from + n - 1}, ${((Date.now() - started) / 1000).toFixed(0)} s)`)
process.exit(failed ? 1 : 0)
