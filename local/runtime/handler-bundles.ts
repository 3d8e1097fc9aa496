// Prebuilt execution environments for the local runtime: the environment's runtime (worker.ts)
// and handler modules bundled once by esbuild into a directory, so that an environment loads
// plain JavaScript instead of registering tsx and transpiling functions/ and lib/ again in
// every thread or process (about a second of CPU each; a fiftieth of that from a bundle).
// The pool uses a bundle only when LOCAL_HANDLER_BUNDLES names a directory built by
// buildHandlerBundles (the test suite's global setup does; so does the local runtime for its
// handlers when the variable is unset: ensureHandlerBundles), the handler module is one of its
// entries, and none of the sources it was built from has changed since; otherwise it loads
// the module through tsx as before. One build with code splitting, so the runtime and every
// handler share one copy of each module (the byte caches worker.ts reports on among them).
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, extname, isAbsolute, join, resolve } from 'node:path'

/** The host variable naming the directory of prebuilt bundles (not STRATA_-prefixed: no function's configuration). */
export const HANDLER_BUNDLES_ENV = 'LOCAL_HANDLER_BUNDLES'

const MANIFEST = 'manifest.json'
const WORKER_SOURCE = join(import.meta.dirname, 'worker.ts')

/** What buildHandlerBundles writes beside the bundles. */
interface Manifest {
  /** the bundled worker.ts, relative to the directory */
  worker: string
  /** each handler module's absolute source path → its bundle, relative to the directory */
  handlers: Record<string, string>
  /** every source file outside node_modules the bundles were built from → its mtime (ms) then */
  sources: Record<string, number>
}

/** The files an environment loads instead of worker.ts and its handler module. */
export interface BundledEnvironment {
  /** the bundled runtime (worker.ts), absolute */
  worker: string
  /** the bundled handler module, absolute */
  handler: string
}

// The banner cdk/bundling.ts gives the deployed bundles: CommonJS code inside dependencies
// may call `require`, which an ES module does not define.
const REQUIRE_BANNER = "import { createRequire as __strataCreateRequire } from 'node:module'; const require = __strataCreateRequire(import.meta.url);"

/**
 * Bundles worker.ts and `handlers` (absolute paths of handler modules) into `dir` with one
 * esbuild build, code split, and writes the manifest the pool reads. esbuild is a development
 * dependency, imported only here and only when called.
 */
export async function buildHandlerBundles(dir: string, handlers: string[]): Promise<void> {
  const { build } = await import('esbuild')
  mkdirSync(dir, { recursive: true })
  const names = new Map<string, string>([['worker', WORKER_SOURCE]])
  const entryOf: Record<string, string> = {}
  for (const source of handlers) {
    if (!isAbsolute(source)) throw new Error(`buildHandlerBundles: expected an absolute path, got ${source}`)
    const stem = basename(source, extname(source))
    let name = stem
    for (let i = 2; names.has(name); i++) name = `${stem}-${i}`
    names.set(name, source)
    entryOf[source] = `${name}.mjs`
  }
  const result = await build({
    entryPoints: Object.fromEntries(names),
    outdir: dir,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    splitting: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    mainFields: ['module', 'main'],
    banner: { js: REQUIRE_BANNER },
    // stack traces name the TypeScript files, as under tsx (worker.ts enables source maps)
    sourcemap: 'linked',
    sourcesContent: false,
    metafile: true,
    logLevel: 'warning',
  })
  const sources: Record<string, number> = {}
  for (const input of Object.keys(result.metafile.inputs)) {
    if (input.includes('node_modules/') || input.includes(':')) continue
    const path = resolve(input)
    sources[path] = statSync(path).mtimeMs
  }
  const manifest: Manifest = { worker: 'worker.mjs', handlers: entryOf, sources }
  writeFileSync(join(dir, MANIFEST), JSON.stringify(manifest))
}

const manifests = new Map<string, Manifest | null>()

function manifestIn(dir: string): Manifest | null {
  if (!manifests.has(dir)) {
    let manifest: Manifest | null = null
    try {
      manifest = JSON.parse(readFileSync(join(dir, MANIFEST), 'utf8')) as Manifest
    } catch {
      // no bundles there (yet, or any more): environments load their modules through tsx
    }
    manifests.set(dir, manifest)
  }
  return manifests.get(dir)!
}

/** Whether every source the bundles were built from is as it was then (an edit since makes them stale). */
function fresh(manifest: Manifest): boolean {
  for (const [path, mtimeMs] of Object.entries(manifest.sources)) {
    if (statSync(path, { throwIfNoEntry: false })?.mtimeMs !== mtimeMs) return false
  }
  return true
}

/**
 * The bundles an environment of `handlerModule` loads, when LOCAL_HANDLER_BUNDLES (in `env`)
 * names a directory holding one for it and its sources have not changed; otherwise null.
 */
export function bundledEnvironment(handlerModule: string, env: NodeJS.ProcessEnv = process.env): BundledEnvironment | null {
  const dir = env[HANDLER_BUNDLES_ENV]
  if (!dir) return null
  const manifest = manifestIn(dir)
  const handler = manifest?.handlers[resolve(handlerModule)]
  if (manifest === null || handler === undefined || !fresh(manifest)) return null
  return { worker: join(dir, manifest.worker), handler: join(dir, handler) }
}

/** The bundles ensureHandlerBundles built in this process, and the handler modules they hold. */
let built: { dir: string; handlers: Set<string> } | null = null

/**
 * Unless LOCAL_HANDLER_BUNDLES is set (empty: tsx, by choice), bundles `handlers` once per
 * process into a temporary directory (removed at exit) and names it there, so that every
 * environment started after loads plain JavaScript, as a deployed function does, instead of
 * registering tsx and transpiling functions/ and lib/ again: a compactor environment's thread
 * took 494 ms of CPU to load its handler through tsx and 222 ms from a bundle (the freshness
 * benchmark at task-threads -1 starts one per bucket in flight). A later call naming modules
 * not built yet builds them all again.
 */
export async function ensureHandlerBundles(handlers: string[]): Promise<void> {
  const set = process.env[HANDLER_BUNDLES_ENV]
  if (set !== undefined && set !== built?.dir) return
  const wanted = handlers.map((h) => resolve(h))
  if (built && wanted.every((h) => built!.handlers.has(h))) return
  const all = new Set([...(built?.handlers ?? []), ...wanted])
  const dir = mkdtempSync(join(tmpdir(), 'strata-local-bundles-'))
  await buildHandlerBundles(dir, [...all])
  const previous = built?.dir
  built = { dir, handlers: all }
  process.env[HANDLER_BUNDLES_ENV] = dir
  if (previous) rmSync(previous, { recursive: true, force: true })
  else process.once('exit', () => built && rmSync(built.dir, { recursive: true, force: true }))
}
