// The demo's progress display: redrawn in place on a terminal, plain lines at an interval
// elsewhere (CI, a pipe, a file), so a long run never looks like a hang.

import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { PLAIN_PROGRESS_INTERVAL_MS, progressReporter, type ProgressStream } from '../local/demo.ts'

function stream(isTTY: boolean): ProgressStream & { chunks: string[] } {
  const chunks: string[] = []
  return { isTTY, chunks, write: (chunk: string) => chunks.push(chunk) }
}

beforeEach(() => {
  vi.useFakeTimers()
})
afterEach(() => {
  vi.useRealTimers()
})

describe('demo progress, stdout not a terminal', () => {
  it('prints the latest line as a plain line every interval, and nothing after stop but the final line', () => {
    const out = stream(false)
    const progress = progressReporter(out, 5_000)
    vi.advanceTimersByTime(5_000)
    expect(out.chunks).toEqual([]) // nothing to show before the first update
    progress.update('1 s | sent 100 rows')
    progress.update('2 s | sent 200 rows')
    expect(out.chunks).toEqual([]) // updates alone print nothing: no line per update
    vi.advanceTimersByTime(4_999)
    expect(out.chunks).toEqual([])
    vi.advanceTimersByTime(1)
    expect(out.chunks).toEqual(['2 s | sent 200 rows\n'])
    for (let s = 3; s <= 9; s++) {
      progress.update(`${s} s | sent ${s * 100} rows`)
      vi.advanceTimersByTime(1_000)
    }
    expect(out.chunks).toEqual(['2 s | sent 200 rows\n', '7 s | sent 700 rows\n'])
    // no new update: the same figures again, so a stall shows rather than silence
    vi.advanceTimersByTime(5_000)
    expect(out.chunks.at(-1)).toBe('9 s | sent 900 rows\n')
    expect(out.chunks).toHaveLength(3)
    progress.update('10 s | sent 1000 rows | drained')
    progress.stop()
    expect(out.chunks.at(-1)).toBe('10 s | sent 1000 rows | drained\n')
    expect(out.chunks).toHaveLength(4)
    // stopped: no more lines, updates ignored, stop idempotent
    progress.update('11 s')
    vi.advanceTimersByTime(60_000)
    progress.stop()
    expect(out.chunks).toHaveLength(4)
    expect(out.chunks.every((c) => !c.includes('\r') && !c.includes('\x1b'))).toBe(true)
  })

  it('stop does not repeat a line already printed, and the default interval is 5 s', () => {
    expect(PLAIN_PROGRESS_INTERVAL_MS).toBe(5_000)
    const out = stream(false)
    const progress = progressReporter(out)
    progress.update('a')
    vi.advanceTimersByTime(PLAIN_PROGRESS_INTERVAL_MS)
    expect(out.chunks).toEqual(['a\n'])
    progress.stop()
    expect(out.chunks).toEqual(['a\n'])
    expect(vi.getTimerCount()).toBe(0)
  })

  it('an undefined isTTY (a file or pipe stream) counts as not a terminal', () => {
    const chunks: string[] = []
    const progress = progressReporter({ write: (c: string) => chunks.push(c) }, 1_000)
    progress.update('x')
    vi.advanceTimersByTime(3_000)
    progress.stop()
    expect(chunks).toEqual(['x\n', 'x\n', 'x\n'])
  })
})

describe('demo progress, stdout a terminal', () => {
  it('redraws one line in place on every update, starts no timer, and ends the line on stop', () => {
    const out = stream(true)
    const progress = progressReporter(out, 5_000)
    expect(vi.getTimerCount()).toBe(0)
    progress.update('1 s | sent 100 rows')
    progress.update('2 s | sent 200 rows')
    expect(out.chunks).toEqual(['\r\x1b[2K1 s | sent 100 rows', '\r\x1b[2K2 s | sent 200 rows'])
    vi.advanceTimersByTime(60_000)
    expect(out.chunks).toHaveLength(2)
    progress.stop()
    expect(out.chunks.at(-1)).toBe('\n')
    progress.update('3 s')
    progress.stop()
    expect(out.chunks).toHaveLength(3)
  })
})
