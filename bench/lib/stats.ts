// Summaries of repeated measurements.

/** Median (the upper middle of an even count, so it is always a measured value). */
export function median(xs: number[]): number {
  if (xs.length === 0) return NaN
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)]
}

/** Rows per second, rounded, with thousands separators. */
export function rate(rows: number, seconds: number): string {
  return Math.round(rows / seconds).toLocaleString('en-US')
}

export function count(n: number): string {
  return n.toLocaleString('en-US')
}
