// Output of a benchmark: markdown tables on stdout and a JSON file under bench/out/
// (gitignored) with every repetition's figures.

import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export const OUT_DIR = join(import.meta.dirname, '..', 'out')

export function markdownTable(header: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`
  return [line(header), line(header.map(() => '---')), ...rows.map(line)].join('\n')
}

/** Writes `bench/out/<name>.json` and returns its path. */
export function writeResults(name: string, results: unknown): string {
  mkdirSync(OUT_DIR, { recursive: true })
  const path = join(OUT_DIR, `${name}.json`)
  writeFileSync(path, JSON.stringify(results, (_, v) => (typeof v === 'bigint' ? Number(v) : v), 2) + '\n')
  return path
}
