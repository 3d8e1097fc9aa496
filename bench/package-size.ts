// What a user installs and what each Lambda function deploys: `npm pack` (building dist/),
// the tarball installed into an empty project, and the sizes of the tarball, the installed
// package, the package with its runtime dependencies, and each function bundle as Lambda
// takes it (the zip of its asset directory). Prints a Markdown table for docs/operations.md.
//
//   npx tsx bench/package-size.ts

import { execFileSync } from 'node:child_process'
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { markdownTable } from './lib/report.ts'

const ROOT = join(import.meta.dirname, '..')

/** Bytes under `path` (apparent sizes of its files). */
function bytesUnder(path: string): number {
  const st = statSync(path)
  if (!st.isDirectory()) return st.size
  return readdirSync(path).reduce((n, e) => n + bytesUnder(join(path, e)), 0)
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(1)} MB`

const project = mkdtempSync(join(tmpdir(), 'strata-size-'))
try {
  const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', project], { cwd: ROOT, encoding: 'utf8' }).trim().split('\n').pop()!
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'strata-size', private: true }))
  execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', join(project, name)], { cwd: project })
  const installed = join(project, 'node_modules', 'strata-tables')
  const rows: (string | number)[][] = [
    ['package tarball (`npm pack`)', mb(statSync(join(project, name)).size)],
    ['the package installed', mb(bytesUnder(installed))],
    ['… of which function bundles (`dist/bundles/`)', mb(bytesUnder(join(installed, 'dist', 'bundles')))],
    ['the package with its runtime dependencies (`node_modules`)', mb(bytesUnder(join(project, 'node_modules')))],
  ]
  const bundles = join(installed, 'dist', 'bundles')
  for (const kind of readdirSync(bundles).sort()) {
    const dir = join(bundles, kind)
    const zip = join(project, `${kind}.zip`)
    execFileSync('zip', ['-q', '-r', '-X', zip, '.'], { cwd: dir })
    rows.push([`function \`${kind}\`: index.mjs / zipped asset with its map`, `${mb(statSync(join(dir, 'index.mjs')).size)} / ${mb(statSync(zip).size)}`])
  }
  process.stdout.write(markdownTable(['what', 'size'], rows) + '\n')
} finally {
  rmSync(project, { recursive: true, force: true })
}
