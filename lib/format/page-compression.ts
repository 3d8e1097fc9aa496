// How a data file's pages get compressed: the port between the writer (lib/format/data-file-writer.ts)
// and what compresses its pages. The writer encodes a row group's pages into one of the
// compressor's two arenas, hands them over (`begin`), and places them in the file (`body` per
// page) once it has encoded the next row group into the other arena. In between they are
// compressed by the writing thread itself as each is placed (InlinePageCompressor), or by a
// compression thread while the writer goes on (lib/format/compression-thread.ts). Either
// way the file's bytes are the same.

/** Arenas above this are dropped once placed (one row group of huge values must not pin memory). */
const ARENA_KEEP = 4 << 20

/**
 * Where a row group's pages wait between encoding and their place in the file: each page's
 * definition levels and then its values (before compression), appended in order. The
 * allocator decides the memory (shared with a compression thread, or not).
 */
export class PageArena {
  bytes: Uint8Array
  length = 0
  readonly #allocate: (bytes: number) => Uint8Array

  constructor(allocate: (bytes: number) => Uint8Array = (n) => new Uint8Array(n)) {
    this.#allocate = allocate
    this.bytes = allocate(1 << 16)
  }

  append(src: Uint8Array): void {
    const end = this.length + src.length
    if (end > this.bytes.length) {
      const grown = this.#allocate(Math.max(end, this.bytes.length * 2))
      grown.set(this.bytes.subarray(0, this.length))
      this.bytes = grown
    }
    this.bytes.set(src, this.length)
    this.length = end
  }

  /** Empties the arena (its pages are placed); one large row group does not keep its size. */
  reset(): void {
    this.length = 0
    if (this.bytes.length > ARENA_KEEP) this.bytes = this.#allocate(1 << 16)
  }
}

/** Compresses the pages of one row group at a time. */
export interface PageCompressor {
  /** The two arenas row groups are encoded into, in turn. */
  readonly arenas: readonly [PageArena, PageArena]
  /**
   * Starts compressing pages [ranges[2i], ranges[2i + 1]) of arena `slot`; the arena must not
   * change until the last page's `body` has been taken.
   */
  begin(slot: 0 | 1, ranges: readonly number[]): void
  /** Page i's compressed bytes (of the last `begin`), valid until the next call of `body` or `begin`. */
  body(i: number): Uint8Array
  /** The writer has placed every page and needs this compressor no more. */
  done(): void
}

/** Compresses each page on the calling thread when it is asked for (`compress` null: stored as is). */
export class InlinePageCompressor implements PageCompressor {
  readonly arenas: readonly [PageArena, PageArena]
  readonly #compress: ((input: Uint8Array) => Uint8Array) | null
  #arena: Uint8Array = new Uint8Array(0)
  #ranges: readonly number[] = []

  constructor(compress: ((input: Uint8Array) => Uint8Array) | null, arenas: readonly [PageArena, PageArena] = [new PageArena(), new PageArena()]) {
    this.#compress = compress
    this.arenas = arenas
  }

  begin(slot: 0 | 1, ranges: readonly number[]): void {
    this.#arena = this.arenas[slot].bytes
    this.#ranges = ranges
  }

  body(i: number): Uint8Array {
    const values = this.#arena.subarray(this.#ranges[2 * i], this.#ranges[2 * i + 1])
    return this.#compress === null ? values : this.#compress(values)
  }

  done(): void {}
}
