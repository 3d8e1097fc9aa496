// A process's claim on sequence numbers (docs/design.md "Sequence numbers"): batches number
// their rows from the writer's clock, `(ms << 20) + row`, never below what the process
// handed out before, and never below the floor a batch read from its buckets.

/** Low bits of a sequence number: the row's index in its batch (2^20 rows per millisecond). */
export const SEQUENCE_ROW_BITS = 20n

/**
 * The end of the sequence range this process's writers have claimed. One per process: the
 * writers of a process share it (defaultSequenceClock), so their batches ascend; a test may
 * give a writer its own.
 */
export class SequenceClock {
  #end = 0n

  /** One past the highest number claimed so far. */
  get end(): bigint {
    return this.#end
  }

  /**
   * The first sequence number of a batch of `rows` rows: the clock in milliseconds shifted
   * past the row bits, and past every number claimed before, so a process's batches always
   * ascend and a batch of more than 2^20 rows takes the next milliseconds too. Two batches
   * that race for one snapshot (concurrent writers, or a committer folding several messages)
   * get distinct ranges, ordered by when they started. 2^41 ms (year 2039) << 20 stays below
   * 2^63, and above the `snapshot id << 32` numbering of earlier Strata versions for any
   * table of fewer than 4·10^8 snapshots. `floor` (one above the touched buckets' highest
   * number) wins over the clock: a writer whose clock is behind an earlier writer's still
   * numbers above what it read.
   */
  claim(rows: number, nowMs: number = Date.now(), floor = 0n): bigint {
    let base = BigInt(Math.floor(nowMs)) << SEQUENCE_ROW_BITS
    if (floor > base) base = floor
    const start = base > this.#end ? base : this.#end
    this.#end = start + BigInt(Math.max(rows, 1))
    return start
  }

  /** Extends the claim to `end` (a batch whose numbers rose past its first claim). */
  extendTo(end: bigint): void {
    if (end > this.#end) this.#end = end
  }
}

/** The clock of writers that are given none: the process's. */
export const defaultSequenceClock = new SequenceClock()
