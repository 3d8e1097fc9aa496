// Progress for long operations: one rewritten line on stderr when it is a terminal, at most
// ten updates a second, nothing at all otherwise (pipes and CI logs stay clean).

export class Progress {
  private last = 0
  private shown = false
  constructor(private readonly stream: NodeJS.WriteStream = process.stderr) {}

  update(text: string): void {
    if (!this.stream.isTTY) return
    const now = Date.now()
    if (now - this.last < 100) return
    this.last = now
    this.stream.write(`\r\x1b[2K${text}`)
    this.shown = true
  }

  done(): void {
    if (this.shown) this.stream.write('\r\x1b[2K')
    this.shown = false
  }
}
