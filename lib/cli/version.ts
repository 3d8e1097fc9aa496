// `strata --version`: the version of the package the CLI runs from. The CLI runs from source
// (lib/cli/, package.json two directories up) and compiled (dist/lib/cli/, three up), so the
// package's package.json is found by walking up to the first one that names the package.

import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The package's names: `strata-tables` as published, `strata` in checkouts from before the rename. */
const PACKAGE_NAMES: readonly string[] = ['strata-tables', 'strata']

let version: string | undefined

/** The version in the package's package.json, read once; 'unknown' when there is none to be found. */
export function packageVersion(): string {
  return (version ??= findVersion(dirname(fileURLToPath(import.meta.url))))
}

/** The version of the first package.json at or above `dir` whose name is the package's. */
export function findVersion(dir: string): string {
  for (let at = dir; ; at = dirname(at)) {
    const pkg = readPackage(join(at, 'package.json'))
    if (pkg && PACKAGE_NAMES.includes(pkg.name as string) && typeof pkg.version === 'string') return pkg.version
    if (dirname(at) === at) return 'unknown'
  }
}

function readPackage(path: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(readFileSync(path, 'utf8'))
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : null
  } catch {
    // absent or not JSON: not the package's
    return null
  }
}
