// `strata read`'s row formats (`--format`). tsv, csv and json are for programs: each keeps
// every value apart from every other, null included. table is for people: aligned columns, a
// row per line, and no promise that it reads back (docs/operations.md "Output formats").
// A value's text is valueToText's (lib/table/json-values.ts); each format escapes around it.

import { StrataInputError } from '../errors.ts'
import { rowToJsonLine, valueToText } from '../table/json-values.ts'
import type { DataField, Row, TypeRoot } from '../types.ts'

export const ROW_FORMATS = ['table', 'tsv', 'csv', 'json'] as const
export type RowFormat = (typeof ROW_FORMATS)[number]

/**
 * The format of `--format` and `--json` (a synonym of `--format json`); with neither, `table`
 * on a terminal and `tsv` otherwise (a pipe, a file), so scripts get the same text wherever
 * they run.
 */
export function chooseFormat(o: { format?: string; json?: boolean }, tty: boolean): RowFormat {
  const { format, json } = o
  if (format !== undefined && !(ROW_FORMATS as readonly string[]).includes(format)) {
    throw new StrataInputError(`--format ${JSON.stringify(format)}: expected one of ${ROW_FORMATS.join(', ')}`)
  }
  if (json && format !== undefined && format !== 'json') throw new StrataInputError(`--format ${format} and --json: expected one of them (--json is --format json)`)
  if (json) return 'json'
  return (format as RowFormat | undefined) ?? (tty ? 'table' : 'tsv')
}

/**
 * A field of PostgreSQL's text format (COPY … TO, the default format): a backslash doubled,
 * and backspace, form feed, newline, carriage return, tab and vertical tab written as \b \f
 * \n \r \t \v, as COPY writes them; other characters as they are. Null is \N, apart from any
 * string (a string "\N" is written \\N).
 */
export function tsvField(text: string | null): string {
  if (text === null) return '\\N'
  return TSV_SPECIAL.test(text) ? text.replace(TSV_SPECIALS, (c) => TSV_ESCAPES[c]) : text
}

const TSV_SPECIAL = /[\\\b\f\n\r\t\v]/
const TSV_SPECIALS = /[\\\b\f\n\r\t\v]/g
const TSV_ESCAPES: Record<string, string> = { '\\': '\\\\', '\b': '\\b', '\f': '\\f', '\n': '\\n', '\r': '\\r', '\t': '\\t', '\v': '\\v' }

/**
 * A field of RFC 4180 CSV: quoted when it holds a comma, a double quote, CR or LF, with its
 * quotes doubled. Null is an empty unquoted field and the empty string `""`, so the two stay
 * apart (as PostgreSQL's CSV format keeps them).
 */
export function csvField(text: string | null): string {
  if (text === null) return ''
  if (text === '') return '""'
  return CSV_SPECIAL.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

const CSV_SPECIAL = /[",\r\n]/

/**
 * CSV records end with CRLF, as RFC 4180 says: readers that follow the RFC expect it, and
 * every CSV reader takes it (a bare LF is the RFC's exception, not its rule). A value's own
 * line breaks are kept inside its quotes as they are. `RowOutput` ends each line with LF.
 */
const CSV_LINE_END = '\r'

/**
 * A cell of the table format: control characters (C0, DEL, C1) and the Unicode line and
 * paragraph separators written as escapes (\n, \r, \t, \xHH, \u2028), so a row stays on one
 * line and a terminal is not driven by the data. Backslashes stay as they are: the table is
 * for reading, not for reading back.
 */
export function tableCell(text: string): string {
  return TABLE_SPECIAL.test(text) ? text.replace(TABLE_SPECIALS, tableEscape) : text
}

const TABLE_SPECIAL = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/
const TABLE_SPECIALS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g

function tableEscape(c: string): string {
  if (c === '\n') return '\\n'
  if (c === '\r') return '\\r'
  if (c === '\t') return '\\t'
  const code = c.charCodeAt(0)
  return code > 0xff ? `\\u${code.toString(16)}` : `\\x${code.toString(16).padStart(2, '0')}`
}

/**
 * Columns a terminal gives `text`: East Asian wide and fullwidth characters (the common
 * ranges) take two, combining marks and zero-width characters none, the rest one.
 */
export function displayWidth(text: string): number {
  if (PRINTABLE_ASCII.test(text)) return text.length
  let w = 0
  for (const ch of text) {
    const c = ch.codePointAt(0)!
    if (ZERO_WIDTH.test(ch)) continue
    w += isWide(c) ? 2 : 1
  }
  return w
}

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/
const ZERO_WIDTH = /^[\p{M}\u200b-\u200f\u2060\ufeff]$/u
const WIDE: readonly (readonly [number, number])[] = [
  [0x1100, 0x115f], [0x2e80, 0x303e], [0x3041, 0x33ff], [0x3400, 0x4dbf], [0x4e00, 0x9fff], [0xa000, 0xa4cf],
  [0xac00, 0xd7a3], [0xf900, 0xfaff], [0xfe30, 0xfe4f], [0xff00, 0xff60], [0xffe0, 0xffe6],
  [0x1f300, 0x1f64f], [0x1f900, 0x1f9ff], [0x20000, 0x3fffd],
]

function isWide(c: number): boolean {
  if (c < 0x1100) return false
  for (const [lo, hi] of WIDE) if (c >= lo && c <= hi) return true
  return false
}

/** Where a printer's lines go: RowOutput (lib/cli/row-output.ts) is one. `row` false for a header or footer line. */
export interface LineSink {
  /** true when a piece is full and the caller should flush */
  add(text: string, row?: boolean): boolean
}

/** The table format sizes its columns on this many rows, then streams the rest at those widths. */
export const TABLE_SIZING_ROWS = 1000

const NUMERIC: ReadonlySet<TypeRoot> = new Set(['TINYINT', 'SMALLINT', 'INT', 'BIGINT', 'FLOAT', 'DOUBLE', 'DECIMAL'])

/**
 * Rows of a read as lines of one format, header first; with `kind`, a `_kind` column first
 * (incremental reads). `add` returns what the sink's `add` returns (a flush is due); `end`
 * writes what the table format still holds and its row count.
 */
export class RowPrinter {
  private readonly names: string[]
  private readonly indexes: number[]
  /** table format: the rows held to size the columns, until the widths are set */
  private held: string[][] | null = []
  private widths: number[] = []
  private readonly right: boolean[]
  private rows = 0

  constructor(
    private readonly sink: LineSink,
    readonly format: RowFormat,
    private readonly fields: DataField[],
    private readonly kind = false,
  ) {
    this.names = kind ? ['_kind', ...fields.map((f) => f.name)] : fields.map((f) => f.name)
    this.indexes = fields.map((_, i) => i)
    this.right = [...(kind ? [false] : []), ...fields.map((f) => NUMERIC.has(f.type.root))]
    if (format === 'tsv') sink.add(this.names.map(tsvField).join('\t'), false)
    else if (format === 'csv') sink.add(this.names.map(csvField).join(',') + CSV_LINE_END, false)
  }

  /** One row (`kind`: its `_kind`, as +I, -U, +U, -D, when the printer has the column). */
  add(row: Row, kind?: string): boolean {
    this.rows++
    switch (this.format) {
      case 'json': {
        const line = rowToJsonLine(this.fields, this.indexes, row)
        return this.sink.add(this.kind ? `{"_kind":${JSON.stringify(kind)},${line.slice(1)}` : line)
      }
      case 'tsv':
        return this.sink.add(this.line(row, kind, tsvField, '\t'))
      case 'csv':
        return this.sink.add(this.line(row, kind, csvField, ',') + CSV_LINE_END)
      case 'table': {
        // null shows as an empty cell (as psql shows it), the string "NULL" as NULL
        const cells = this.texts(row, kind).map((t) => (t === null ? '' : tableCell(t)))
        if (this.held === null) return this.sink.add(this.tableLine(cells))
        this.held.push(cells)
        return this.held.length >= TABLE_SIZING_ROWS ? this.release() : false
      }
    }
  }

  /** The table format's held rows, if the widths are not set yet, and its row count. */
  end(): void {
    if (this.format !== 'table') return
    if (this.held !== null) this.release()
    this.sink.add(`(${this.rows} ${this.rows === 1 ? 'row' : 'rows'})`, false)
  }

  /** A row's fields in one format, joined by `sep` (one string built, no arrays: this runs per row). */
  private line(row: Row, kind: string | undefined, field: (text: string | null) => string, sep: string): string {
    let line = this.kind ? field(kind ?? null) : ''
    for (let j = 0; j < row.length; j++) {
      const v = row[j]
      if (j > 0 || this.kind) line += sep
      line += field(v === null ? null : valueToText(this.fields[j].type, v))
    }
    return line
  }

  private texts(row: Row, kind: string | undefined): (string | null)[] {
    const texts = row.map((v, j) => (v === null ? null : valueToText(this.fields[j].type, v)))
    return this.kind ? [kind ?? null, ...texts] : texts
  }

  /** Sets the widths on the header and the held rows, and writes them. */
  private release(): boolean {
    const held = this.held ?? []
    this.held = null
    const header = this.names.map(tableCell)
    this.widths = header.map((h, j) => held.reduce((w, cells) => Math.max(w, displayWidth(cells[j])), displayWidth(h)))
    let due = this.sink.add(this.tableLine(header), false)
    due = this.sink.add(this.widths.map((w) => '-'.repeat(w + 2)).join('+'), false) || due
    for (const cells of held) due = this.sink.add(this.tableLine(cells)) || due
    return due
  }

  /**
   * Cells padded to the column widths, psql's way: ` a | b`, numbers to the right, no padding
   * after a last column aligned left. A longer cell than its column widens its line only.
   */
  private tableLine(cells: string[]): string {
    const last = cells.length - 1
    return ' ' + cells
      .map((c, j) => {
        const pad = ' '.repeat(Math.max(0, this.widths[j] - displayWidth(c)))
        return this.right[j] ? pad + c : j === last ? c : c + pad
      })
      .join(' | ')
  }
}
