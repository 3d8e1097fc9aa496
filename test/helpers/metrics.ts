// Captures what a handler's metrics print (EMF on stdout, Powertools' warnings on stderr) and
// the logger's lines, for tests of what a flush publishes.

import { vi } from 'vitest'
import { newMetrics } from '../../functions/shared/runtime.ts'

/**
 * Runs `body` with metrics publishing on and stdout/stderr captured (Powertools prints EMF
 * on stdout and warns through its own Console on stderr); returns the EMF documents
 * printed after the first flush of a fresh metrics object, the Powertools warnings about a
 * dimension added twice, and the logger's JSON lines.
 */
export async function captureMetrics(body: (metrics: ReturnType<typeof newMetrics>) => Promise<void> | void) {
  const saved = process.env.POWERTOOLS_METRICS_DISABLED
  process.env.POWERTOOLS_METRICS_DISABLED = 'false'
  const out: string[] = []
  const err: string[] = []
  const capture = (into: string[]) => (chunk: string | Uint8Array) => (into.push(String(chunk)), true)
  const stdout = vi.spyOn(process.stdout, 'write').mockImplementation(capture(out))
  const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(capture(err))
  try {
    const metrics = newMetrics('test')
    metrics.publishStoredMetrics() // drains what earlier tests counted
    out.length = 0
    err.length = 0
    await body(metrics)
  } finally {
    stdout.mockRestore()
    stderr.mockRestore()
    if (saved === undefined) delete process.env.POWERTOOLS_METRICS_DISABLED
    else process.env.POWERTOOLS_METRICS_DISABLED = saved
  }
  const lines = [...out, ...err].flatMap((s) => s.split('\n'))
  return {
    emf: lines.filter((l) => l.includes('"_aws"')).map((l) => JSON.parse(l)),
    warnings: lines.filter((l) => l.includes('already been added')),
    logs: lines.filter((l) => l.startsWith('{') && !l.includes('"_aws"')).map((l) => JSON.parse(l) as Record<string, unknown>),
  }
}

/** The metric names of an EMF document, sorted. */
export function metricNames(m: { _aws: { CloudWatchMetrics: { Metrics: { Name: string }[] }[] } }): string[] {
  return m._aws.CloudWatchMetrics[0].Metrics.map((x) => x.Name).sort()
}
