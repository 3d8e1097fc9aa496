// The installed package a module runs from: its root and version. The code runs from source
// in a checkout (lib/cli/, cdk/constructs/) and compiled under dist/, so the package's
// package.json is found by walking up to the first one that names the package.

import { readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'

export const PACKAGE_NAME = 'strata-tables'

/** The package at or above `dir`: its root directory and version; undefined when there is none. */
export function findPackage(dir: string): { root: string; version?: string } | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const pkg = readManifest(join(at, 'package.json'))
    if (pkg?.name === PACKAGE_NAME) return { root: at, version: typeof pkg.version === 'string' ? pkg.version : undefined }
    if (dirname(at) === at) return undefined
  }
}

function readManifest(path: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(readFileSync(path, 'utf8'))
    return typeof v === 'object' && v !== null ? (v as Record<string, unknown>) : null
  } catch {
    // absent or not JSON (a nested package.json a bundler left): not the package's
    return null
  }
}
