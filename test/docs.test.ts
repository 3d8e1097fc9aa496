// The docs describe what the code does: every option the engine accepts is in the options
// table of docs/operations.md.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { optionKeysOfMergeEngines } from '../lib/merge/merge-function.ts'
import { OPTION_SPECS } from '../lib/table/options.ts'

const ops = readFileSync(join(import.meta.dirname, '..', 'docs', 'operations.md'), 'utf8')

describe('docs/operations.md', () => {
  it('documents every table option', () => {
    const missing = OPTION_SPECS.map((s) => s.key).filter((k) => !ops.includes(`\`${k}\``))
    expect(missing).toEqual([])
  })
  it('documents every merge-engine option', () => {
    const missing = optionKeysOfMergeEngines().exact.filter((k) => !ops.includes(`\`${k}\``))
    expect(missing).toEqual([])
  })
})
