// The columnar merge's loop for its common table, synchronous (see PlainMerge).

import { RowKind } from '../../types.ts'
import { type Block, isRetract } from './block.ts'
import type { PendingOutput } from './pending-output.ts'

/** PlainMerge.step: every run is used up */
export const PLAIN_DONE = -1
/** PlainMerge.step: the pending output is full (flush it, then step again) */
export const PLAIN_FULL = -2
/** PlainMerge.step: a run's head block holds no exact numeric keys: the next key goes the general way */
export const PLAIN_GENERAL = -3

/**
 * A sequence number's low word XOR FLIP orders as the word does unsigned and stays an int32
 * (`>>> 0` made numbers above 2^31, which deoptimized the loop compiled for small integers).
 */
const FLIP = -0x80000000

/**
 * The merge's loop for its common table: one integer key held as exact numbers by every head
 * block, no sequence.field, an engine that keeps one record per key. Synchronous, and the
 * same class in every compaction: V8 compiles `step` as a small function of its own, where
 * the loop inside the async merge was compiled on the stack, in pieces, four times in a warm
 * process's second job (docs/benchmarks.md, "The merge loop out of the async function").
 */
export class PlainMerge {
  /** a key's scan paused at run `r` for that run's next block: its first head, and the winner so far */
  #scanning = false
  #r = 0
  #minB: Block | null = null
  #minI = 0
  #wB: Block | null = null
  #wI = 0

  constructor(
    private readonly blocks: (Block | null)[],
    private readonly pos: Int32Array,
    private readonly pending: PendingOutput,
    private readonly dropUpdateBefore: boolean,
    private readonly dropDeleteKind: boolean,
    /** retractions dropped here (the top level, without lookups; with lookups, after them) */
    private readonly dropRetract: boolean,
    private readonly keyCmp: (a: Block, i: number, b: Block, j: number) => number,
  ) {}

  /**
   * Merges keys into the pending output until it is full (PLAIN_FULL), every run is used up
   * (PLAIN_DONE), a head block has no numeric keys (PLAIN_GENERAL, between keys), or run r's
   * block is used up (returns r: its next block goes in `blocks[r]` at `pos[r]` 0, after a flush).
   */
  step(): number {
    const blocks = this.blocks
    const pos = this.pos
    const k = blocks.length
    const dropUpdateBefore = this.dropUpdateBefore
    const dropDeleteKind = this.dropDeleteKind
    while (true) {
      let r0: number
      if (this.#scanning) r0 = this.#r
      else {
        // the smallest key among the runs' heads; runs before it hold larger keys
        let m = -1
        let least = 0
        for (let r = 0; r < k; r++) {
          const b = blocks[r]
          if (b === null) continue
          const keys = b.numKey
          if (keys === null) return PLAIN_GENERAL
          const v = keys[pos[r]]
          if (m < 0 || v < least) {
            m = r
            least = v
          }
        }
        if (m < 0) return PLAIN_DONE
        this.#minB = blocks[m]
        this.#minI = pos[m]
        this.#wB = null
        this.#wI = 0
        this.#scanning = true
        r0 = m
      }
      const minB = this.#minB!
      const minI = this.#minI
      const key = minB.numKey![minI]
      let wB = this.#wB
      let wI = this.#wI
      let wHi = wB === null ? 0 : wB.seq[2 * wI + 1]
      let wLo = wB === null ? 0 : wB.seq[2 * wI] ^ FLIP
      // the key's records, oldest run first and in file order within a run: the last one the
      // filter keeps, by sequence number (ties to the later record), survives
      let pause = -1
      scan: for (let r = r0; r < k; r++) {
        const b = blocks[r]
        if (b === null) continue
        const keys = b.numKey
        while (true) {
          const i = pos[r]
          // a block read after the scan began may hold a key beyond 2^53 somewhere: compared the general way
          if (keys === null ? this.keyCmp(b, i, minB, minI) !== 0 : keys[i] !== key) break
          const kind = b.kinds[i]
          if (!((kind === RowKind.UPDATE_BEFORE && dropUpdateBefore) || (kind === RowKind.DELETE && dropDeleteKind))) {
            const hi = b.seq[2 * i + 1]
            const lo = b.seq[2 * i] ^ FLIP
            if (wB === null || hi > wHi || (hi === wHi && lo >= wLo)) {
              wB = b
              wI = i
              wHi = hi
              wLo = lo
            }
          }
          if (++pos[r] >= b.n) {
            pause = r
            break scan
          }
        }
      }
      // one way out for a key done and a scan paused (run `pause`'s block used up): stores
      // only a pause made had no type feedback when V8 optimized this loop in a cold process,
      // and deoptimized it at the first pause
      this.#r = pause
      this.#wB = pause >= 0 ? wB : null
      this.#wI = wI
      this.#scanning = pause >= 0
      if (pause >= 0) return pause
      if (wB === null) continue
      if (this.dropRetract && isRetract(wB.kinds[wI])) continue
      if (this.pending.push(wB, wI)) return PLAIN_FULL
    }
  }
}
