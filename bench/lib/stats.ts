// Summaries of repeated measurements.

/**
 * The p-th percentile (0-100) by nearest rank from below: always a measured value, the upper
 * middle of an even count at 50. `empty` is what an empty list gives.
 */
export function percentile<E>(xs: readonly number[], p: number, empty: E): number | E {
  if (xs.length === 0) return empty
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]
}

/** Median (the upper middle of an even count, so it is always a measured value). */
export function median(xs: number[]): number {
  return percentile(xs, 50, NaN)
}

/** Rows per second, rounded, with thousands separators. */
export function rate(rows: number, seconds: number): string {
  return Math.round(rows / seconds).toLocaleString('en-US')
}

export function count(n: number): string {
  return n.toLocaleString('en-US')
}
