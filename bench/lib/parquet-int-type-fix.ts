// hyparquet-writer 0.17.0 serializes the Parquet logical type INTEGER's `bitWidth` as a Thrift
// i32 (metadata.js: `field_10: { field_1: type.bitWidth, … }`, typed by value as I32), but
// parquet.thrift declares `IntType { 1: required i8 bitWidth; 2: required bool isSigned }`.
// Strict Thrift readers reject the footer: DuckDB 1.5 fails with "TProtocolException:
// Invalid data", and parquet-java's generated reader would skip the field and then miss the
// required bitWidth. Every Strata data file has one such column (_VALUE_KIND, TINYINT).
//
// For the DuckDB baseline the benchmark rewrites those two footer bytes in a copy of each
// file: in the compact protocol `15 10` (field 1, i32, zigzag 8) and `13 08` (field 1, i8, 8)
// have the same length, so data pages and offsets stay byte for byte the same.

import { readFileSync, writeFileSync } from 'node:fs'

/** LogicalType union field 10 (INTEGER, a struct), then IntType field 1 as i32 8 or 16. */
const PATTERNS: { from: number[]; to: number[] }[] = [
  { from: [0xac, 0x15, 0x10], to: [0xac, 0x13, 0x08] },
  { from: [0xac, 0x15, 0x20], to: [0xac, 0x13, 0x10] },
]

/**
 * Copies `src` to `dest` with every INTEGER logical type's bitWidth re-encoded as i8 in the
 * footer; returns how many it fixed. Each match must be followed by isSigned (`11`/`12`) and
 * the struct's stop byte, so stray bytes in statistics do not match.
 */
export function copyWithIntTypeFix(src: string, dest: string): number {
  const bytes = new Uint8Array(readFileSync(src))
  const n = bytes.length
  const magic = String.fromCharCode(...bytes.subarray(n - 4))
  if (magic !== 'PAR1') throw new Error(`${src}: not a Parquet file (trailer ${JSON.stringify(magic)})`)
  const footerLength = new DataView(bytes.buffer, bytes.byteOffset).getUint32(n - 8, true)
  const start = n - 8 - footerLength
  let fixed = 0
  for (let i = start; i + 5 <= n - 8; i++) {
    for (const p of PATTERNS) {
      if (bytes[i] !== p.from[0] || bytes[i + 1] !== p.from[1] || bytes[i + 2] !== p.from[2]) continue
      if ((bytes[i + 3] !== 0x11 && bytes[i + 3] !== 0x12) || bytes[i + 4] !== 0x00) continue
      bytes.set(p.to, i)
      fixed++
    }
  }
  writeFileSync(dest, bytes)
  return fixed
}
