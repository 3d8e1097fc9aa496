// The CLI's one mapping from an error to its exit code and message (lib/cli/main.ts exitOf).

import { CommanderError } from 'commander'
import { describe, expect, it } from 'vitest'
import { exitOf } from '../lib/cli/main.ts'
import { CommitConflictError, StrataInputError } from '../lib/errors.ts'

describe('exitOf', () => {
  it("commander's own exits: 0 for help and version, 2 for a usage error, nothing printed (commander did)", () => {
    expect(exitOf(new CommanderError(0, 'commander.helpDisplayed', '(outputHelp)'))).toEqual({ code: 0, message: null })
    expect(exitOf(new CommanderError(1, 'commander.unknownOption', "error: unknown option '--x'"))).toEqual({ code: 2, message: null })
  })

  it('bad input is 2, a lost race 4 (each kind its code: test/errors.test.ts), anything else 1; the message is the first line', () => {
    expect(exitOf(new StrataInputError('--snapshot "x": expected a snapshot id'))).toEqual({ code: 2, message: '--snapshot "x": expected a snapshot id' })
    expect(exitOf(new Error('s3 down\nretry later'))).toEqual({ code: 1, message: 's3 down' })
    expect(exitOf(new CommitConflictError('snapshot 4 was taken')).code).toBe(4)
    expect(exitOf('thrown text')).toEqual({ code: 1, message: 'thrown text' })
  })
})
