// The reader's page cursors (lib/read/cursor.ts), without the handler: they round-trip,
// are bound to the table and filter, and anything this reader did not issue is refused.

import { describe, expect, it } from 'vitest'
import { checkCursorQuery, decodeChangesCursor, decodeScanCursor, encodeChangesCursor, encodeScanCursor, queryFingerprint } from '../lib/read/cursor.ts'
import { StrataInputError } from '../lib/errors.ts'

const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url')
const scan = { table: 'orders', snapshotId: 7, split: 2, offset: 31, query: queryFingerprint('orders', { dt: '2024-05-01' }) }
const changes = { v: 1 as const, op: 'changes' as const, table: 'orders', from: 3, to: 9, mode: 'delta' as const, split: 1, offset: 4, query: queryFingerprint('orders', undefined) }

describe('cursors', () => {
  it('a scan cursor round-trips, with its tag when it has one', () => {
    expect(decodeScanCursor(encodeScanCursor(scan))).toEqual({ v: 1, ...scan })
    expect(decodeScanCursor(encodeScanCursor({ ...scan, tag: 'nightly' }))).toEqual({ v: 1, ...scan, tag: 'nightly' })
  })

  it('a changes cursor round-trips', () => {
    expect(decodeChangesCursor(encodeChangesCursor(changes))).toEqual(changes)
  })

  it('refuses text that is not a cursor of its kind, naming the field', () => {
    const bad = [
      'not base64 json',
      b64({ ...scan, v: 2 }),
      b64({ ...scan, v: 1, split: -1 }),
      b64({ ...scan, v: 1, offset: 1.5 }),
      b64({ ...scan, v: 1, tag: 7 }),
      b64({ v: 1, table: 'orders', split: 0, offset: 0, query: 'q' }),
      encodeChangesCursor(changes),
    ]
    for (const text of bad) expect(() => decodeScanCursor(text), text).toThrow(/^cursor: not a cursor this reader issued/)
    for (const text of [encodeScanCursor(scan), b64({ ...changes, mode: 'auto' }), b64({ ...changes, op: 'scan' }), b64({ ...changes, to: '9' })]) {
      expect(() => decodeChangesCursor(text), text).toThrow(StrataInputError)
    }
  })

  it('the query fingerprint depends on the table and the filter, not the order of its fields', () => {
    expect(queryFingerprint('t', { a: 1, b: 2 })).toBe(queryFingerprint('t', { b: 2, a: 1 }))
    expect(queryFingerprint('t', undefined)).toBe(queryFingerprint('t', {}))
    expect(queryFingerprint('t', { a: 1 })).not.toBe(queryFingerprint('t', { a: 2 }))
    expect(queryFingerprint('t', { a: 1 })).not.toBe(queryFingerprint('u', { a: 1 }))
  })

  it('a cursor of another table or filter is refused', () => {
    expect(() => checkCursorQuery(scan, 'orders', scan.query)).not.toThrow()
    expect(() => checkCursorQuery(scan, 'other', scan.query)).toThrow(/^cursor: was issued for another table or filter/)
    expect(() => checkCursorQuery(scan, 'orders', queryFingerprint('orders', undefined))).toThrow(/^cursor: was issued for another table or filter/)
  })
})
