// A small dependency-free SVG line chart: freshness lag (s) over time (s), one line per run.

export interface Series {
  label: string
  points: [number, number][]
}

const COLOURS = ['#d62728', '#1f77b4', '#2ca02c', '#ff7f0e', '#9467bd', '#8c564b']

function niceMax(v: number): number {
  if (v <= 0) return 1
  const p = 10 ** Math.floor(Math.log10(v))
  for (const m of [1, 2, 2.5, 5, 10]) if (v <= m * p) return m * p
  return 10 * p
}

export function freshnessChart(series: Series[], opts: { title?: string; xLabel?: string; yLabel?: string } = {}): string {
  const W = 720, H = 360, L = 60, R = 160, T = 40, B = 50
  const xs = series.flatMap((s) => s.points.map((p) => p[0]))
  const ys = series.flatMap((s) => s.points.map((p) => p[1]))
  const xMax = niceMax(Math.max(1, ...xs))
  const yMax = niceMax(Math.max(0.1, ...ys))
  const x = (v: number) => L + (v / xMax) * (W - L - R)
  const y = (v: number) => H - B - (v / yMax) * (H - T - B)
  const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;')
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`,
    `<rect width="${W}" height="${H}" fill="white"/>`,
    `<text x="${L}" y="22" font-size="15">${esc(opts.title ?? 'Freshness lag: age of the oldest row not yet visible to readers')}</text>`,
  ]
  for (let i = 0; i <= 5; i++) {
    const yv = (yMax * i) / 5
    const xv = (xMax * i) / 5
    parts.push(`<line x1="${L}" x2="${W - R}" y1="${y(yv)}" y2="${y(yv)}" stroke="#eee"/>`)
    parts.push(`<text x="${L - 6}" y="${y(yv) + 4}" text-anchor="end">${+yv.toFixed(2)}</text>`)
    parts.push(`<text x="${x(xv)}" y="${H - B + 16}" text-anchor="middle">${+xv.toFixed(1)}</text>`)
  }
  parts.push(`<line x1="${L}" x2="${W - R}" y1="${H - B}" y2="${H - B}" stroke="#333"/><line x1="${L}" x2="${L}" y1="${T}" y2="${H - B}" stroke="#333"/>`)
  parts.push(`<text x="${(L + W - R) / 2}" y="${H - 12}" text-anchor="middle">${esc(opts.xLabel ?? 'time (s)')}</text>`)
  parts.push(`<text transform="translate(16 ${(T + H - B) / 2}) rotate(-90)" text-anchor="middle">${esc(opts.yLabel ?? 'freshness lag (s)')}</text>`)
  series.forEach((s, i) => {
    const c = COLOURS[i % COLOURS.length]
    const d = s.points.map((p, j) => `${j ? 'L' : 'M'}${x(p[0]).toFixed(1)},${y(p[1]).toFixed(1)}`).join(' ')
    if (d) parts.push(`<path d="${d}" fill="none" stroke="${c}" stroke-width="2"/>`)
    parts.push(`<line x1="${W - R + 12}" x2="${W - R + 32}" y1="${T + 10 + i * 18}" y2="${T + 10 + i * 18}" stroke="${c}" stroke-width="3"/>`)
    parts.push(`<text x="${W - R + 38}" y="${T + 14 + i * 18}">${esc(s.label)}</text>`)
  })
  parts.push('</svg>')
  return parts.join('\n')
}
