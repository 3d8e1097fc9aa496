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
