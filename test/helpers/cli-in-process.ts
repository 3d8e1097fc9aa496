// Runs one `strata` command in-process (lib/cli/main.ts `main`) with stdout and stderr
// captured, and `input`, when given, as its stdin. Calls must be serialised by the caller:
// they share the spies.

import { Readable } from 'node:stream'
import { vi } from 'vitest'
import { main } from '../../lib/cli/main.ts'

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

export async function strata(args: string[], input?: string): Promise<CliResult> {
  const stdout: string[] = []
  const stderr: string[] = []
  const out = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => (stdout.push(String(chunk)), true))
  const err = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => (stderr.push(String(chunk)), true))
  // a Buffer stream, as a pipe's stdin is (not an object stream of one string)
  const stdin = input === undefined ? null : vi.spyOn(process, 'stdin', 'get').mockReturnValue(Readable.from([Buffer.from(input)], { objectMode: false }) as typeof process.stdin)
  try {
    const code = await main(args)
    return { code, stdout: stdout.join(''), stderr: stderr.join('') }
  } finally {
    out.mockRestore()
    err.mockRestore()
    stdin?.mockRestore()
  }
}
