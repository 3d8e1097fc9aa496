// One Maven build of a harness jar at a time across vitest's workers: two test files that
// both find the jar stale would otherwise run `mvn package` at once, each overwriting the jar
// another JVM may be loading classes from (a corrupt jar, or a JVM that hangs). The lock is a
// directory (mkdir is atomic); a waiter re-checks staleness once the holder is done.

import { mkdirSync, rmSync, statSync } from 'node:fs'

/** How long a lock may stand before a waiter takes it as left by a process that died. */
const STALE_MS = 10 * 60_000
const POLL_MS = 250

function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/** Runs `fn` holding the lock `dir` (created beside the jar's target directory). */
export function withBuildLock<T>(dir: string, fn: () => T): T {
  for (;;) {
    try {
      mkdirSync(dir, { recursive: false })
      break
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') {
        mkdirSync(dir, { recursive: true })
        break
      }
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e
      let age = 0
      try {
        age = Date.now() - statSync(dir).mtimeMs
      } catch {
        continue // released between the two calls
      }
      if (age > STALE_MS) rmSync(dir, { recursive: true, force: true })
      else sleepSync(POLL_MS)
    }
  }
  try {
    return fn()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
