// `strata --version`: the version of the package the CLI runs from (lib/package.ts finds it).

import { dirname } from 'node:path'
import { fileURLToPath } from 'node:url'
import { findPackage } from '../package.ts'

let version: string | undefined

/** The version in the package's package.json, read once; 'unknown' when there is none to be found. */
export function packageVersion(): string {
  return (version ??= findPackage(dirname(fileURLToPath(import.meta.url)))?.version ?? 'unknown')
}
