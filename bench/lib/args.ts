// Command-line flags of the benchmarks: `--quick`, `--runs 5`, `--no-s3`, `--compression
// snappy,zstd`. Unknown flags are errors so a typo does not silently run the default benchmark.

import { StrataInputError } from '../../lib/errors.ts'

export interface BenchArgs {
  has(name: string): boolean
  num(name: string, def: number): number
  str(name: string, def: string): string
}

/** `booleans` take no value; `numbers` take a positive integer after them; `strings` any value. */
export function parseBenchArgs(argv: string[], booleans: string[], numbers: string[], strings: string[] = []): BenchArgs {
  const flags = new Set<string>()
  const values = new Map<string, number>()
  const texts = new Map<string, string>()
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (booleans.includes(a)) flags.add(a)
    else if (numbers.includes(a)) {
      const v = Number(argv[i + 1])
      if (!Number.isSafeInteger(v) || v < 1) throw new StrataInputError(`${a}: expected a positive integer, got ${JSON.stringify(argv[i + 1])}`)
      values.set(a, v)
      i++
    } else if (strings.includes(a)) {
      if (argv[i + 1] === undefined) throw new StrataInputError(`${a}: expected a value`)
      texts.set(a, argv[++i])
    } else {
      throw new StrataInputError(`unknown argument ${JSON.stringify(a)}; expected ${[...booleans, ...numbers.map((n) => `${n} N`), ...strings.map((n) => `${n} VALUE`)].join(', ')}`)
    }
  }
  return { has: (name) => flags.has(name), num: (name, def) => values.get(name) ?? def, str: (name, def) => texts.get(name) ?? def }
}
