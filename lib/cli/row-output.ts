// `strata read`'s output: rows to stdout in pieces, with backpressure, and what a closed
// or failed stdout means for the read.

/** A read's text goes to stdout in pieces of about this many characters. */
const OUTPUT_PIECE = 1 << 16

/** stdout failed (EPIPE: the reader closed the pipe) after `rows` rows were written. */
export class OutputError extends Error {
  constructor(
    readonly failure: NodeJS.ErrnoException,
    readonly rows: number,
  ) {
    super(failure.code === 'EPIPE' ? `output closed after ${rows} rows (EPIPE)` : `output failed after ${rows} rows (${failure.message})`)
  }
}

/**
 * `read`'s rows on stdout, with backpressure: a piece is written only once the stream has
 * taken the ones before ('drain'), so memory stays bounded however slowly the reader reads.
 * An error on the stream is kept and thrown (an OutputError) by the next flush or by `end`,
 * which returns only once every piece has been handed to the OS, so what follows it (a
 * consumer's progress) never runs ahead of the output.
 */
export class RowOutput {
  /** rows in pieces the stream has taken */
  private written = 0
  private error: NodeJS.ErrnoException | null = null
  private piece: string[] = []
  private pieceChars = 0
  private pieceRows = 0
  private readonly onError = (e: Error) => {
    this.error ??= e
  }
  // its write is looked up at each call: the in-process CLI helper replaces it
  private readonly stream = process.stdout

  constructor() {
    // while this listener is on, bin/strata.ts leaves stdout's errors to it
    this.stream.on('error', this.onError)
  }

  /** Adds a line (a row's unless `row` is false); true when a piece is full and `flush` is due. */
  add(text: string, row = true): boolean {
    this.piece.push(text)
    this.pieceChars += text.length + 1
    if (row) this.pieceRows++
    return this.pieceChars >= OUTPUT_PIECE
  }

  /** Writes the piece, then waits while the stream holds more than its high-water mark. */
  async flush(): Promise<void> {
    this.check()
    if (this.piece.length === 0) return
    const text = this.piece.join('\n') + '\n'
    const rows = this.pieceRows
    this.piece = []
    this.pieceChars = 0
    this.pieceRows = 0
    let ok: boolean
    try {
      ok = this.stream.write(text, (e) => (e ? this.onError(e) : (this.written += rows)))
    } catch (e) {
      this.onError(e as Error)
      ok = true
    }
    if (!ok) await this.settle((done) => this.stream.once('drain', done))
    this.check()
  }

  /**
   * Writes what is left and waits until the stream has handed all of it to the OS. The
   * listener comes off only then: on any other way out, writes still queued may fail yet.
   */
  async end(): Promise<void> {
    await this.flush()
    // pieces still in the stream's buffer: a write queued behind them calls back once they are out
    if (this.stream.writableLength > 0) await this.settle((done) => this.stream.write('', () => done()))
    // a write that completed at once reports its outcome on the next tick
    await new Promise((resolve) => setImmediate(resolve))
    this.check()
    this.stream.off('error', this.onError)
  }

  /** Waits for `start`'s event, or for the stream to fail or close. */
  private settle(start: (done: () => void) => void): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.stream.off('drain', done)
        this.stream.off('error', done)
        this.stream.off('close', done)
        resolve()
      }
      if (this.error || this.stream.destroyed) return resolve()
      this.stream.once('error', done)
      this.stream.once('close', done)
      start(done)
    })
  }

  /** Throws the stream's error, if it has failed or been closed. */
  private check(): void {
    if (!this.error && this.stream.destroyed) this.error = new Error('stdout was closed')
    if (this.error) throw new OutputError(this.error, this.written)
  }
}

/**
 * A read without a consumer whose reader stopped early (`strata read … | head`) ends quietly,
 * as Unix tools do; any other output error fails it.
 */
export function quietOnClosedPipe(e: OutputError): void {
  if (e.failure.code !== 'EPIPE') throw new Error(`read: ${e.message}`)
}
