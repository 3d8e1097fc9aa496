// The structure rules of docs/design.md "Floors of lib/", held against the code. Each check
// is also run on a small tree made to break it, so that it cannot pass for want of reading.

import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { HANDLER_FILE_LINE_LIMIT, LIB_FILE_LINE_LIMIT, LIB_FLOORS, SOURCE_DIRS, floorViolations, importCycles, longFiles, longFunctions } from '../scripts/structure.ts'

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
    const v = floorViolations(t)
    expect(v).toHaveLength(2)
    expect(v[0]).toMatch(/^lib\/format\/a\.ts \(lib\/format, floor \d+\) imports lib\/commit\/b\.ts \(lib\/commit, floor \d+\)$/)
    expect(v[1]).toMatch(/^lib\/read\/d\.ts \(lib\/read, floor (\d+)\) imports lib\/write\/e\.ts \(lib\/write, floor \1\)$/)
    expect(importCycles(t, ['lib'])).toEqual([['lib/commit/b.ts', 'lib/commit/c.ts']])
  })

  it('docs/design.md "Floors of lib/" lists the floors the check holds', () => {
    const doc = readFileSync(join(root, 'docs/design.md'), 'utf8')
    const section = doc.slice(doc.indexOf('### Floors of `lib/`'), doc.indexOf('\n## ', doc.indexOf('### Floors of `lib/`')))
    const rows = [...section.matchAll(/^\| (\d+) \| ([^|]+) \|/gm)].map((m) => [...m[2].matchAll(/`([^`]+)`/g)].map((n) => n[1].replace(/\/$/, '')))
    expect(rows).toEqual(LIB_FLOORS)
  })

  it('a module on no floor is named', () => {
    const t = tree({ 'lib/newcomer/a.ts': "import { b } from '../store/b.ts'\n", 'lib/store/b.ts': 'export const b = 1\n' })
    expect(() => floorViolations(t)).toThrow(/lib\/newcomer is on no floor/)
  })
})

describe('lengths', () => {
  it('no function is over its folder\'s limit, no file of lib/ over its limit, every handler under its limit', () => {
    expect(longFunctions(root).map((f) => `${f.file}:${f.line} ${f.name}: ${f.lines} lines (limit ${f.limit})`)).toEqual([])
    expect(longFiles(root)).toEqual([])
  })

  it('the checks see a long function, method, arrow and file, and let one at the limit pass', () => {
    const body = (n: number): string => Array.from({ length: n - 2 }, (_, i) => `  x += ${i}`).join('\n')
    const t = tree({
      'lib/a.ts': `export function ok(): void {\n  let x = 0\n${body(149)}\n}\n`,
      'lib/b.ts': `export function long(): void {\n  let x = 0\n${body(150)}\n}\n`,
      'lib/c.ts': `export class C {\n  m(): void {\n    let x = 0\n${body(151)}\n  }\n}\n`,
      'bench/d.ts': `export const f = (): void => {\n  let x = 0\n${body(200)}\n}\n`,
      'bench/e.ts': `export const g = (): void => {\n  let x = 0\n${body(199)}\n}\n`,
      'lib/f.ts': Array.from({ length: LIB_FILE_LINE_LIMIT + 1 }, (_, i) => `export const v${i} = ${i}`).join('\n') + '\n',
      'functions/h.ts': Array.from({ length: HANDLER_FILE_LINE_LIMIT }, (_, i) => `export const v${i} = ${i}`).join('\n') + '\n',
      'functions/shared/s.ts': Array.from({ length: HANDLER_FILE_LINE_LIMIT }, (_, i) => `export const v${i} = ${i}`).join('\n') + '\n',
    })
    expect(longFunctions(t).map((f) => [f.file, f.name, f.lines])).toEqual([
      ['bench/d.ts', 'f', 201],
      ['lib/c.ts', 'C.m', 152],
      ['lib/b.ts', 'long', 151],
    ])
    expect(longFiles(t)).toEqual([
      { file: 'lib/f.ts', lines: LIB_FILE_LINE_LIMIT + 1 },
      { file: 'functions/h.ts', lines: HANDLER_FILE_LINE_LIMIT },
    ])
  })
})
