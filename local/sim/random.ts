// The simulation's one source of randomness: a seeded generator (SplitMix32 over a 32-bit
// state), so a seed replays the exact run. Every choice the simulation makes — latencies,
// faults, which message a receive returns, the names `randomUUID` hands out — draws from
// one of these, forked per concern so that adding a draw in one place does not shift
// every other.

export class Random {
  private state: number

  constructor(seed: number) {
    this.state = seed >>> 0
  }

  /** A uniform 32-bit unsigned integer. */
  next32(): number {
    this.state = (this.state + 0x9e3779b9) >>> 0
    let z = this.state
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0
    return (z ^ (z >>> 16)) >>> 0
  }

  /** A uniform float in [0, 1). */
  float(): number {
    return this.next32() / 4294967296
  }

  /** A uniform integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.float() * (hi - lo + 1))
  }

  /** True with probability p. */
  chance(p: number): boolean {
    return p > 0 && this.float() < p
  }

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.float() * xs.length)]
  }

  /** An independent generator for one concern, derived from this one's next draw and a label. */
  fork(label: string): Random {
    let h = this.next32()
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0
    return new Random(h)
  }

  /** Bytes for `randomBytes` and `randomUUID`. */
  bytes(n: number): Buffer {
    const out = Buffer.alloc(n)
    for (let i = 0; i < n; i += 4) {
      const v = this.next32()
      for (let j = 0; j < 4 && i + j < n; j++) out[i + j] = (v >>> (8 * j)) & 0xff
    }
    return out
  }

  uuid(): string {
    const b = this.bytes(16)
    b[6] = (b[6] & 0x0f) | 0x40
    b[8] = (b[8] & 0x3f) | 0x80
    const h = b.toString('hex')
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  }
}
