// Reading merge options as Paimon reads them, with errors that name the key, the value and
// what was expected.

import { StrataInputError } from '../errors.ts'

export function invalid(key: string, value: string, expected: string): StrataInputError {
  return new StrataInputError(`Option '${key}' = '${value}' is invalid: ${expected}`)
}

/** Paimon booleans: "true" or "false", any case (ConfigurationUtils.convertToBoolean). */
export function parseBool(options: Record<string, string>, key: string, fallbackKeys: string[] = []): boolean {
  for (const k of [key, ...fallbackKeys]) {
    const v = options[k]
    if (v === undefined) continue
    const t = v.trim().toLowerCase()
    if (t === 'true') return true
    if (t === 'false') return false
    throw invalid(k, v, "expected 'true' or 'false'")
  }
  return false
}

/** A Java int, as Paimon's intType options read it (surrounding blanks allowed). */
export function parseJavaInt(key: string, value: string): number {
  const t = value.trim()
  const n = /^[+-]?\d+$/.test(t) ? Number(t) : NaN
  if (!Number.isSafeInteger(n) || n < -2147483648 || n > 2147483647) throw invalid(key, value, 'expected an integer from -2147483648 to 2147483647')
  return n
}
