// JSON lines into a table: the input's lines (a file, stdin, a string, any byte stream) parsed
// as they arrive and written through a BatchWriter as one commit. Shared by `strata write` and
// the library API's writeJsonLines.

import { StrataInputError } from '../errors.ts'
import { jsonRecordReader } from './json-record-reader.ts'
import { BatchWriter, type WriteContext, type WriteResult } from './table-write.ts'

export interface JsonLinesOptions {
  /** what the input is called in an error about it as a whole (a file name, 'stdin') */
  name: string
  /** progress of parsing and writing, as a line for a person */
  onProgress?: (message: string) => void
}

/**
 * Streams the input's lines into a BatchWriter (per-bucket buffers flushed as level-0 files
 * at write-buffer-size) and commits them as one snapshot. Lines are parsed as they arrive; a
 * bad line fails the write, naming its line, before anything is committed, and the files
 * written so far are deleted. Errors keep the precedence of a write that parsed every line
 * first: a malformed line (JSON, UTF-8, a value of the wrong type) wins over a row too large
 * or a partition the storage cannot name, which wins over a retraction the merge engine
 * refuses.
 */
export async function writeJsonLines(table: WriteContext, input: AsyncIterable<Uint8Array | string>, opts: JsonLinesOptions): Promise<WriteResult> {
  const progress = opts.onProgress ?? (() => {})
  // a record's line: its index, plus the blank lines before it (each noted by the index of the
  // record after it), so no text naming a line is made unless an error needs it
  const skippedAt: number[] = []
  const lineOf = (index: number): number => {
    let line = index + 1
    for (const at of skippedAt) if (at <= index) line++
    return line
  }
  const readRecord = jsonRecordReader(table.view, (n) => `line ${n}`)
  const writer = new BatchWriter(table, {
    onProgress: (done, total, phase) => progress(`${phase}: ${done}/${total} rows`),
    whereOf: (index) => `line ${lineOf(index)}`,
  })
  let lineNo = 0
  const onLine = (text: string): void => {
    lineNo++
    // a byte-order mark opens a file, not a record
    const line = lineNo === 1 && text.startsWith('\ufeff') ? text.slice(1) : text
    if (line.trim() === '') {
      skippedAt.push(writer.records)
      return
    }
    // reads as the strict line parser does (exact number literals, no repeated key), with a
    // fast path for plain lines (lib/write/json-record-reader.ts)
    writer.add(readRecord(line, lineNo))
  }
  try {
    for await (const lines of textLines(input, () => lineNo)) {
      for (let i = 0; i < lines.length; i++) {
        onLine(lines[i])
        if (writer.full) await writer.flush()
      }
      progress(`parsed ${lineNo} lines`)
    }
    if (writer.records === 0) throw new StrataInputError(`${opts.name}: no records to write`)
  } catch (e) {
    await writer.abort()
    throw e
  }
  return writer.finish()
}

/**
 * The input's lines as text, a chunk's worth at a time: split at LF (a byte no multi-byte
 * UTF-8 sequence contains), a CR before it dropped. The whole lines of a chunk are decoded at
 * once; if they are not UTF-8, line by line, so the error names the first bad line and byte
 * (`linesBefore` says how many lines came before the chunk).
 */
async function* textLines(input: AsyncIterable<Uint8Array | string>, linesBefore: () => number): AsyncGenerator<string[]> {
  // the pieces of the line not yet ended: a long line is joined once, not once per chunk
  let pieces: Buffer[] = []
  for await (const chunk of input) {
    // Buffer.from would copy a Buffer chunk; a string is converted, other bytes viewed in place
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength)
    const last = buf.lastIndexOf(0x0a)
    if (last < 0) {
      if (buf.length) pieces.push(buf)
      continue
    }
    const whole = pieces.length ? Buffer.concat([...pieces, buf.subarray(0, last + 1)]) : buf.subarray(0, last + 1)
    pieces = last + 1 < buf.length ? [buf.subarray(last + 1)] : []
    const { lines, error } = decodeLines(whole, linesBefore())
    yield lines
    if (error) throw error
  }
  if (pieces.length) {
    const { lines, error } = decodeLines(Buffer.concat([...pieces, Buffer.from([0x0a])]), linesBefore())
    yield lines
    if (error) throw error
  }
}

/**
 * Lines of `bytes` (each ended by LF), decoded; `before` lines came earlier in the input. When
 * a line is not UTF-8, the lines before it and that line's error, to be thrown once those
 * lines are taken (an earlier malformed line is still the one reported).
 */
function decodeLines(bytes: Buffer, before: number): { lines: string[]; error?: unknown } {
  let lines: string[]
  let error: unknown
  try {
    lines = strictUtf8.decode(bytes).split('\n')
    lines.pop() // after the last LF
  } catch {
    lines = []
    let from = 0
    for (let nl = bytes.indexOf(0x0a); nl >= 0; nl = bytes.indexOf(0x0a, from)) {
      try {
        lines.push(utf8Line(bytes.subarray(from, nl), before + lines.length + 1))
      } catch (e) {
        error = e
        break
      }
      from = nl + 1
    }
  }
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]
    if (l.length && l.charCodeAt(l.length - 1) === 0x0d) lines[i] = l.slice(0, -1)
  }
  return { lines, error }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/** A line's text; bytes that are not UTF-8 are refused rather than replaced by U+FFFD. */
function utf8Line(bytes: Buffer, lineNo: number): string {
  try {
    return strictUtf8.decode(bytes)
  } catch {
    const ok = validUtf8Prefix(bytes)
    throw new StrataInputError(`line ${lineNo}: byte ${ok + 1} is not valid UTF-8 (0x${bytes[ok]?.toString(16).padStart(2, '0')}); expected UTF-8 text`)
  }
}

/** How many leading bytes form valid UTF-8 (to name the first bad byte). */
function validUtf8Prefix(b: Buffer): number {
  let i = 0
  while (i < b.length) {
    const c = b[i]
    const n = c < 0x80 ? 1 : c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0
    if (n === 0 || i + n > b.length) return i
    for (let k = 1; k < n; k++) if ((b[i + k] & 0xc0) !== 0x80) return i
    // overlong, surrogate and beyond-U+10FFFF forms
    if ((c === 0xe0 && b[i + 1] < 0xa0) || (c === 0xed && b[i + 1] > 0x9f) || (c === 0xf0 && b[i + 1] < 0x90) || (c === 0xf4 && b[i + 1] > 0x8f)) return i
    i += n
  }
  return i
}
