// The package's build (`npm run build`, and `npm pack` through prepack): dist/ holds
// - the library, the CLI, the CDK construct library and `strata local`, compiled by TypeScript 7's tsc
//   (tsconfig.build.json) to JavaScript with declarations and source maps;
// - dist/bundles/<kind>/index.mjs: every Lambda handler bundled by esbuild with the options
//   the CDK stack uses (cdk/bundling.ts), so the construct library deploys them as they are
//   and a CDK user needs neither esbuild nor Strata's sources.

import { execFileSync } from 'node:child_process'
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'esbuild'
import { BUNDLING, ENTRIES, REPO_ROOT } from '../cdk/bundling.ts'

const DIST = join(REPO_ROOT, 'dist')

rmSync(DIST, { recursive: true, force: true })
execFileSync(process.execPath, [join(REPO_ROOT, 'node_modules', 'typescript-native', 'bin', 'tsc'), '-p', join(REPO_ROOT, 'tsconfig.build.json')], { stdio: 'inherit' })

for (const [kind, entry] of Object.entries(ENTRIES)) {
  await build({
    entryPoints: [entry],
    outfile: join(DIST, 'bundles', kind, 'index.mjs'),
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: BUNDLING.target,
    mainFields: BUNDLING.mainFields,
    banner: { js: BUNDLING.banner! },
    minify: BUNDLING.minify,
    sourcemap: 'linked',
    sourcesContent: BUNDLING.sourcesContent,
    external: BUNDLING.externalModules,
    logLevel: 'warning',
  })
}
process.stdout.write(`built ${DIST}: the package's JavaScript and ${Object.keys(ENTRIES).length} function bundles\n`)
