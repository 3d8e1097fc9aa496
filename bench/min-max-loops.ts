// Why lib/format/parquet-encode-stats.ts keeps its min/max loop as two typed copies (Int32Array
// and string[]) rather than one function: V8 specialises a loop's `<` to the types it has
// seen, and one function fed both runs several times slower on both. Prints ms per round for
// each form, three rounds; the first round is before the shared function has seen strings.
//   npx tsx bench/min-max-loops.ts

type Values = ArrayLike<number | string>

// three copies of one loop, each its own function so each has its own type feedback
const loop = `let lo = a, hi = a, min = w[a], max = min
for (let i = a + 1; i < b; i++) { const v = w[i]; if (v < min) { min = v; lo = i } else if (v > max) { max = v; hi = i } }
return lo + hi`
const typedInts = new Function('w', 'a', 'b', loop) as (w: Values, a: number, b: number) => number
const typedStrings = new Function('w', 'a', 'b', loop) as (w: Values, a: number, b: number) => number
const shared = new Function('w', 'a', 'b', loop) as (w: Values, a: number, b: number) => number

const n = 200_000
const ints = Int32Array.from({ length: n }, (_, i) => (i * 2_654_435_761) % 1_000_000)
const strings = Array.from({ length: n }, (_, i) => `k${(i * 2_654_435_761) % 1_000_000}`)

function ms(f: (w: Values, a: number, b: number) => number, w: Values, times: number): number {
  const t = performance.now()
  let sum = 0
  for (let i = 0; i < times; i++) sum += f(w, 0, w.length)
  if (sum < 0) throw new Error('unreachable')
  return performance.now() - t
}

for (let round = 1; round <= 3; round++) {
  const r = {
    'ints, typed copy': ms(typedInts, ints, 200),
    'ints, shared': ms(shared, ints, 200),
    'strings, typed copy': ms(typedStrings, strings, 50),
    'strings, shared': ms(shared, strings, 50),
  }
  console.log(`round ${round}: ${Object.entries(r).map(([k, v]) => `${k} ${v.toFixed(0)} ms`).join(', ')}`)
}
