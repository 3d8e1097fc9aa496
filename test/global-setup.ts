// Once per test run, before any test file: the local runtime's handlers bundled by esbuild
// (local/runtime/handler-bundles.ts), so that every execution environment the tests start
// (the local runtime's, the soak's, the pool tests') loads one prebuilt file instead of
// registering tsx and transpiling functions/ and lib/ again. Test files' workers inherit
// LOCAL_HANDLER_BUNDLES from this process; an environment whose sources changed since falls
// back to tsx on its own. LOCAL_HANDLER_BUNDLES set already (empty: no bundles) is kept.

import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildHandlerBundles, HANDLER_BUNDLES_ENV } from '../local/runtime/handler-bundles.ts'

const ROOT = join(import.meta.dirname, '..')

/** The handler modules environments load in the tests: the functions, the soak's, the fixtures' (test/fixtures/*.ts, test/fixtures/handlers/*.ts). */
export function testHandlerModules(): string[] {
  const ts = (dir: string) => readdirSync(dir).filter((f) => f.endsWith('.ts')).map((f) => join(dir, f))
  return [
    ...ts(join(ROOT, 'functions')),
    join(ROOT, 'local', 'runtime', 'soak-writer.ts'),
    join(ROOT, 'local', 'runtime', 'soak-compactor.ts'),
    ...ts(join(ROOT, 'test', 'fixtures')),
    ...ts(join(ROOT, 'test', 'fixtures', 'handlers')),
  ]
}

/** What starts execution environments in a test file: a pool, the local runtime, the soak, a benchmark's child. */
const STARTS_ENVIRONMENTS = /ExecutionEnvironmentPool|startLocalRuntime|local-runtime\.ts|soak-run\.ts|bench\//

/**
 * Whether the files a run's filters select (vitest's own: a filter selects the test files whose
 * path contains it) may start execution environments; true for a run of every file. A run of a
 * few files that start none then skips the build.
 */
export function selectedFilesStartEnvironments(filters: readonly string[] | undefined): boolean {
  if (filters === undefined || filters.length === 0) return true
  const files = readdirSync(join(ROOT, 'test')).filter((f) => f.endsWith('.test.ts')).map((f) => join(ROOT, 'test', f))
  return files.some((f) => filters.some((filter) => f.includes(filter.replace(/^\.\//, ''))) && STARTS_ENVIRONMENTS.test(readFileSync(f, 'utf8')))
}

/** What this setup reads of vitest's project: the command line's file filters (internal to vitest, hence optional). */
interface ProjectLike {
  vitest?: { filenamePattern?: string[] }
}

export default async function setup(project?: ProjectLike): Promise<(() => void) | undefined> {
  // already set (by the caller: LOCAL_HANDLER_BUNDLES= runs every environment through tsx)
  if (process.env[HANDLER_BUNDLES_ENV] !== undefined) return undefined
  if (!selectedFilesStartEnvironments(project?.vitest?.filenamePattern)) return undefined
  const dir = mkdtempSync(join(tmpdir(), 'strata-handler-bundles-'))
  await buildHandlerBundles(dir, testHandlerModules())
  process.env[HANDLER_BUNDLES_ENV] = dir
  return () => {
    delete process.env[HANDLER_BUNDLES_ENV]
    rmSync(dir, { recursive: true, force: true })
  }
}
