// Command-line flags of the benchmarks: `--quick`, `--runs 5`, `--no-s3`. Unknown flags are
// errors so a typo does not silently run the default benchmark.

import { StrataInputError } from '../../lib/types.ts'

export interface BenchArgs {
  has(name: string): boolean
  num(name: string, def: number): number
}

/** `booleans` take no value; `numbers` take a positive integer after them. */
export function parseBenchArgs(argv: string[], booleans: string[], numbers: string[]): BenchArgs {
  const flags = new Set<string>()
  const values = new Map<string, number>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (booleans.includes(a)) flags.add(a)
    else if (numbers.includes(a)) {
      const v = Number(argv[i + 1])
      if (!Number.isSafeInteger(v) || v < 1) throw new StrataInputError(`${a}: expected a positive integer, got ${JSON.stringify(argv[i + 1])}`)
      values.set(a, v)
      i++
    } else {
      throw new StrataInputError(`unknown argument ${JSON.stringify(a)}; expected ${[...booleans, ...numbers.map((n) => `${n} N`)].join(', ')}`)
    }
  }
  return { has: (name) => flags.has(name), num: (name, def) => values.get(name) ?? def }
}
