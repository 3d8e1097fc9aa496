// The structure rules of docs/design.md "Floors of lib/", held against the code. Each check
// is also run on a small tree made to break it, so that it cannot pass for want of reading.

import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SOURCE_DIRS, floorViolations, importCycles } from '../scripts/structure.ts'

const root = join(dirname(new URL(import.meta.url).pathname), '..')
const scratch = mkdtempSync(join(tmpdir(), 'strata-structure-'))
afterAll(() => rmSync(scratch, { recursive: true, force: true }))

function tree(files: Record<string, string>): string {
  const dir = mkdtempSync(join(scratch, 't-'))
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true })
    writeFileSync(join(dir, path), text)
  }
  return dir
}

describe('floors of lib/', () => {
  it('no module of lib/ imports from its own floor or a higher one', () => {
    expect(floorViolations(root)).toEqual([])
  })

  it('no files import each other in a circle', () => {
    expect(importCycles(root, SOURCE_DIRS)).toEqual([])
  })

  it('the checks see an import up a floor, one across a floor, and a circle', () => {
    const t = tree({
      'lib/format/a.ts': "import type { X } from '../commit/b.ts'\n",
      'lib/commit/b.ts': "import { y } from './c.ts'\nexport type X = number\n",
      'lib/commit/c.ts': "import type { X } from './b.ts'\nexport const y = 1\n",
      'lib/read/d.ts': "export * from '../write/e.ts'\n",
      'lib/write/e.ts': 'export const e = 1\n',
    })
    expect(floorViolations(t)).toEqual([
      'lib/format/a.ts (lib/format, floor 3) imports lib/commit/b.ts (lib/commit, floor 7)',
      'lib/read/d.ts (lib/read, floor 10) imports lib/write/e.ts (lib/write, floor 10)',
    ])
    expect(importCycles(t, ['lib'])).toEqual([['lib/commit/b.ts', 'lib/commit/c.ts']])
  })

  it('a module on no floor is named', () => {
    const t = tree({ 'lib/newcomer/a.ts': "import { b } from '../store/b.ts'\n", 'lib/store/b.ts': 'export const b = 1\n' })
    expect(() => floorViolations(t)).toThrow(/lib\/newcomer is on no floor/)
  })
})
