// What the reader's scan pages and change pages share: a page fills with JSON rows up to a
// row limit and a byte budget (what the response may hold once its envelope is counted),
// and a row too large to go out alone is refused with a cursor that skips it.

import { valueComparator } from '../format/compare.ts'
import type { Table } from '../handle/table.ts'
import { valueColumnsForMerge } from '../merge/engines.ts'
import { rowToJsonLine, valueFromJson } from '../table/json-values.ts'
import type { Row } from '../types.ts'
import type { KeyFilter, ReadStats } from './table-read.ts'
import { StrataError, type StrataErrorKind } from '../errors.ts'

/** How large a response may be, and how the caller counts its bytes (a Lambda response's, say). */
export interface ResponseLimit {
  /** bytes of the whole response at most */
  maxResponseBytes: number
  /** bytes of the response whose body is `body` */
  responseBytes(body: string): number
  /** bytes `text` adds to the response as part of its body */
  bodyBytes(text: string): number
}

/** How large a page may be. */
export interface PageLimits extends ResponseLimit {
  /** result rows at most */
  rows: number
}

/** A page, or a lookup or status, as the reader answers it. */
export interface ReadOutcome {
  /** JSON text of the 200 response */
  body: string
  snapshotId: number | null
  rows: number
  stats: ReadStats | null
}

/** One row cannot fit in a response on its own; `skipCursor`, when present, starts past it. */
export class RowTooLargeError extends StrataError {
  override name = 'RowTooLargeError'
  // refused, but not a RefusedError: the request was valid; the row is too large for a response
  readonly kind: StrataErrorKind = 'refused'
  constructor(
    /** the row, for messages: `the row with primary key {...}` */
    readonly what: string,
    readonly rowBytes: number,
    readonly maxResponseBytes: number,
    readonly skipCursor?: string | null,
  ) {
    super(`row too large: ${what} takes ${rowBytes} bytes in a response, over the limit of ${maxResponseBytes} bytes`)
  }
}

/**
 * A page being filled. `add` takes the next row: false once the page is complete (the row
 * did not fit, so `next` is where the next page starts). A row that fits in no page is
 * remembered as `tooLarge`, and the page goes on only to find the row after it (the cursor
 * that skips it): a cursor never leads to an empty page, nor skips to one.
 */
export class PageBuilder<C> {
  readonly rows: string[] = []
  private bytes = 0
  next: C | null = null
  tooLarge: { key: string; bytes: number } | null = null

  constructor(
    private readonly limits: PageLimits,
    /** bytes the rows may take: the limit less the response without rows */
    private readonly budget: number,
  ) {}

  add(line: () => string, at: () => C, key: () => string): boolean {
    if (this.rows.length >= this.limits.rows || this.tooLarge) {
      this.next = at()
      return false
    }
    const text = line()
    const size = this.limits.bodyBytes(text) + 1
    if (this.bytes + size <= this.budget) {
      this.rows.push(text)
      this.bytes += size
      return true
    }
    if (this.rows.length > 0) {
      this.next = at()
      return false
    }
    // alone over the limit: look on for a row after it, for the cursor that skips it
    this.tooLarge = { key: key(), bytes: size - 1 }
    return true
  }

  /** Throws RowTooLargeError when the page's only row did not fit. */
  checkFits(what: string, encode: (c: C) => string): void {
    if (this.tooLarge === null) return
    const skipCursor = this.next === null ? null : encode(this.next)
    throw new RowTooLargeError(`${what} ${this.tooLarge.key}`, this.tooLarge.bytes, this.limits.maxResponseBytes, skipCursor)
  }
}

/** Bytes the rows of a page may take: the limit less a response without rows, with the longest cursor the read can issue. */
export function rowBudget(limits: PageLimits, emptyBody: string): number {
  return limits.maxResponseBytes - limits.responseBytes(emptyBody)
}

/** The rows the filter keeps; planning has already checked its fields and prunes partitions. */
export function filterMatcher(table: Table, filter: KeyFilter | undefined): (row: Row) => boolean {
  const view = table.view
  const checks = Object.entries(filter ?? {}).map(([name, json]) => {
    const i = view.fieldIndex.get(name)!
    return { i, want: valueFromJson(view.fields[i], json, 'filter'), cmp: valueComparator(view.fields[i].type) }
  })
  return (row) => checks.every((c) => c.cmp(row[c.i], c.want) === 0)
}

/** Value columns a split is read with: as table-read.ts scan chooses them. */
export function valueColumnsFor(table: Table, columns: number[], filter: KeyFilter | undefined): string[] {
  return valueColumnsForMerge(table.mergeConfig, [...columns.map((i) => table.view.fields[i].name), ...Object.keys(filter ?? {})])
}

/** The primary key of a scanned record as a JSON object, for messages: partition fields from the split, the rest from the key. */
export function primaryKeyText(table: Table, partitionValues: Row, key: Row): string {
  const view = table.view
  const names = view.schema.primaryKeys
  const fields = names.map((n) => view.fields[view.fieldIndex.get(n)!])
  const values = fields.map((f) => {
    const p = view.partitionFields.indexOf(f)
    return p >= 0 ? partitionValues[p] : key[view.keyFields.indexOf(f)]
  })
  return rowToJsonLine(fields, fields.map((_, i) => i), values)
}
