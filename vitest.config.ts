import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Two test files at a time on CI's 2 cores (vitest's default is cores − 1, i.e. one): most
    // files wait on loopback S3/SQS, child processes (Maven, Paimon's JVM, the CLI) and timers,
    // not on the CPU, and no test asserts a wall-clock time.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true', POWERTOOLS_LOG_LEVEL: 'SILENT', POWERTOOLS_METRICS_DISABLED: 'true' },
  },
})
