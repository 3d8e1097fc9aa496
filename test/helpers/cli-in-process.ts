// Runs one `strata` command in-process (lib/cli/main.ts `main`) with stdout and stderr
// captured. Calls must be serialised by the caller: they share the spies.

import { vi } from 'vitest'
import { main } from '../../lib/cli/main.ts'

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

export async function strata(args: string[]): Promise<CliResult> {
  const stdout: string[] = []
  const stderr: string[] = []
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (stdout.push(String(chunk)), true))
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (stderr.push(String(chunk)), true))
  try {
    const code = await main(args)
    return { code, stdout: stdout.join(''), stderr: stderr.join('') }
  } finally {
    out.mockRestore()
    err.mockRestore()
  }
}
