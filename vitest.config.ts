import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { defineConfig } from 'vitest/config'
import LongFirstSequencer from './test/sequencer.ts'

const TEST_DIR = join(import.meta.dirname, 'test')

// What makes a test file keep a module graph of its own (isolate, vitest's default): it changes
// process-wide state (the environment, timers, the clock, mocks, listeners, the functions'
// cached runtime), registers hooks from a shared helper (test/helpers/cdk.ts), counts on
// module-level state starting fresh (the compression thread's counters, the byte caches,
// memory:// stores by name), or starts child processes, worker threads, servers or
// execution environments that could outlive a test.
const NEEDS_ISOLATION = [
  /process\.env/,
  /process\.(on|once|chdir|exitCode)\b/,
  /vi\.(mock|doMock|stubEnv|stubGlobal|useFakeTimers|resetModules)/,
  /fake-timers/,
  /globalThis\./,
  /Date\.now\s*=/,
  /useFunctionEnv|resetRuntime|\.\.\/functions\//,
  /helpers\/cdk\.ts/,
  /compression-thread|byte-cache|liveCaches|memory:\/\//,
  /child_process|worker_threads|ExecutionEnvironmentPool|execution-environment|startLocalRuntime|startEmbeddedBackend|embedded\.ts/,
]

// Small unit files share one module graph per worker (isolate: false): each then costs its
// tests, not a fresh import of lib/ and its dependencies (about a second of CPU a file; these
// first 43 ran in 86 s instead of 134 s, CPU 54 s instead of 79 s). Only files named here, each a
// few seconds at most: long files gain little, and one worker carrying every file's heap grew
// past a gigabyte and slowed down. A named file that comes to need isolation gets it anyway.
const SHARED = [
  'abandoned-attempts', 'aggregate', 'alter', 'alter-options', 'api', 'binary-row',
  'bounded-uploads', 'bucket', 'changelog-commit', 'cli-exit', 'cli-formats', 'cli-input',
  'cli-version-help', 'column-names', 'compact-steps', 'cpu-profile', 'deletion-vector', 'docs',
  'errors', 'first-row-refusals', 'job-key', 'json-record-reader', 'json-values', 'landed-expired',
  'levels', 'lookup-compaction', 'lookup-sequence-order', 'maintenance-pass', 'manifest',
  'merge-engines', 'merge-function', 'older-schema-files', 'option-runtime', 'partition-path',
  'read-cursor', 'read-pages', 'renamed-options', 'retention-horizon', 'schema-validation',
  'snapshot', 'soak-memory', 'universal-compaction', 'write-limits',
  'avro-data-files', 'dynamic-bucket', 'manifest-compression', 'nested-aggregate', 'nested-aggregate-e2e',
  'nested-types', 'postpone-bucket', 'streaming-start-reader', 'type-changes',
]
const shared = SHARED.map((name) => `${name}.test.ts`)
  .filter((f) => existsSync(join(TEST_DIR, f)))
  .filter((f) => !NEEDS_ISOLATION.some((m) => m.test(readFileSync(join(TEST_DIR, f), 'utf8'))))
  .map((f) => `test/${f}`)

export default defineConfig({
  test: {
    // Two test files at a time on CI's 2 cores (vitest's default is cores − 1, i.e. one): most
    // files wait on loopback S3/SQS, child processes (Maven, Paimon's JVM, the CLI) and timers,
    // not on the CPU, and no test asserts a wall-clock time.
    maxWorkers: 2,
    // the longest files first, so none of them starts last and ends the run alone
    sequence: { sequencer: LongFirstSequencer },
    // a bound for a test that hangs, not a measure: on a loaded machine (a clean-clone run at load
    // 40 on 2 cores) tests that drain a pipeline or spawn processes ran past 60 s and failed
    testTimeout: 180_000,
    hookTimeout: 180_000,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true' },
    projects: [
      { extends: true, test: { name: 'shared', include: shared, isolate: false } },
      // the local runtime's handlers bundled once for the run, not transpiled in every environment
      // (only these files start environments: a shared file that does is isolated)
      { extends: true, test: { name: 'isolated', include: ['test/**/*.test.ts'], exclude: shared, globalSetup: ['test/global-setup.ts'] } },
    ],
  },
})
