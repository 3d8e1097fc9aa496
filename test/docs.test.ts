// The docs describe what the code does: every option the engine accepts is in the options
// table of docs/operations.md. The docs hold together: links and named sections between them
// resolve, the README gets a newcomer started before its reference tables, and the docs state
// the present (history, with its issue numbers and commit hashes, is in git and CHANGELOG.md).
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { describe, expect, it } from 'vitest'
import { machineMarkdown } from '../bench/lib/machine.ts'
import { optionKeysOfMergeEngines } from '../lib/merge/merge-config.ts'
import { OPTION_SPECS } from '../lib/table/options.ts'

const ROOT = join(import.meta.dirname, '..')
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8')
const ops = read('docs/operations.md')
const DOCS = ['README.md', 'CHANGELOG.md', ...readdirSync(join(ROOT, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)]

describe('docs/format.md', () => {
  it("lists every table option in its table of what Strata supports, refuses or does differently (Iceberg's under one metadata.iceberg.* row)", () => {
    const format = read('docs/format.md')
    const table = format.slice(format.indexOf('## Options: supported, refused, different'), format.indexOf('## Types: supported, refused, different'))
    const missing = OPTION_SPECS.map((s) => s.key).filter((k) => !table.includes(`\`${k}\``) && !(k.startsWith('metadata.iceberg.') && table.includes('`metadata.iceberg.*`')))
    expect(missing).toEqual([])
  })
})

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

/** Words before the first line of a Markdown table, counted as `wc -w` counts them. */
function wordsBeforeFirstTable(markdown: string): number {
  const lines = markdown.split('\n')
  const end = lines.findIndex((l) => l.startsWith('|'))
  return (end < 0 ? lines : lines.slice(0, end)).join(' ').split(/\s+/).filter(Boolean).length
}

/** Relative link targets of `[text](target)` that name no file. */
function brokenLinks(doc: string, text: string, exists: (path: string) => boolean): string[] {
  const broken: string[] = []
  for (const m of text.matchAll(/\]\(([^)#\s]+)(#[^)]*)?\)/g)) {
    const target = m[1]
    if (/^[a-z]+:/.test(target)) continue
    if (!exists(normalize(join(dirname(doc), target)))) broken.push(`${doc}: ${target}`)
  }
  return broken
}

const normal = (s: string) => s.replace(/`/g, '').replace(/\s+/g, ' ').trim()

/** The section names a doc can be cited by: its headings and the bold labels that open a paragraph or a list item. */
function sectionNames(text: string): string[] {
  const headings = [...text.matchAll(/^#+ (.*)$/gm)].map((m) => normal(m[1]))
  const labels = [...text.matchAll(/^(?:- )?\*\*([^*\n]+?)\.?\*\*/gm)].map((m) => normal(m[1]))
  return [...headings, ...labels]
}

/** Citations `docs/x.md, "Section"` (or `x.md "Section"`) whose section the cited doc lacks. */
function missingSections(doc: string, text: string, readDoc: (path: string) => string | undefined): string[] {
  const missing: string[] = []
  for (const m of normal(text).matchAll(/((?:docs\/)?[\w-]+\.md),? \(?"([^"]{3,160})"/g)) {
    const cited = m[1].startsWith('docs/') || !doc.startsWith('docs/') ? m[1] : `docs/${m[1]}`
    const target = readDoc(cited) ?? readDoc(`docs/${m[1].replace(/^docs\//, '')}`)
    if (target === undefined) {
      missing.push(`${doc}: ${m[1]} (no such doc)`)
      continue
    }
    const name = m[2].replace(/…$/, '').trim().replace(/,$/, '').trim()
    if (!sectionNames(target).some((s) => s.startsWith(normal(name)))) missing.push(`${doc}: ${m[1]} "${m[2]}"`)
  }
  return missing
}

/** Issue numbers ("issue 18", "#12") and commit hashes (7–40 hex digits with at least two letters and a digit). */
function historyMarks(text: string): string[] {
  const issues = [...text.matchAll(/\b[Ii]ssues? #?\d+|(?<![\w&/])#\d{2,}\b/g)].map((m) => m[0])
  const hashes = [...text.matchAll(/\b[0-9a-f]{7,40}\b/g)].map((m) => m[0]).filter((h) => /\d/.test(h) && (h.match(/[a-f]/g) ?? []).length >= 2)
  return [...issues, ...hashes]
}

describe('the docs hold together', () => {
  const readDoc = (path: string) => (existsSync(join(ROOT, path)) ? read(path) : undefined)

  it('links between docs resolve', () => {
    const broken = DOCS.flatMap((doc) => brokenLinks(doc, read(doc), (p) => existsSync(join(ROOT, p))))
    expect(broken).toEqual([])
  })
  it('a section one doc cites in another exists there', () => {
    const missing = DOCS.flatMap((doc) => missingSections(doc, read(doc), readDoc))
    expect(missing).toEqual([])
  })
  it('a section a code comment cites in a doc exists there', () => {
    const sources = ['lib', 'functions', 'cdk', 'local', 'bench', 'scripts'].flatMap((dir) =>
      (readdirSync(join(ROOT, dir), { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).map((f) => join(dir, f)),
    )
    // code cites a doc by its path from the root; a citation may wrap onto the comment's next line
    const missing = sources
      .flatMap((file) => missingSections(file, read(file).replace(/\n\s*(\/\/|\*)\s*/g, ' '), readDoc))
      .filter((m) => m.includes(': docs/'))
    expect(missing).toEqual([])
  })
  it('the README gets a newcomer started in under 1,000 words, before any reference table', () => {
    const readme = read('README.md')
    expect(wordsBeforeFirstTable(readme)).toBeLessThan(1000)
    const firstTable = readme.search(/^\|/m)
    for (const command of ['npm ci && npm run demo', 'npm ci && npm test']) {
      expect(readme.indexOf(command)).toBeGreaterThan(-1)
      expect(readme.indexOf(command)).toBeLessThan(firstTable)
    }
  })
  it('the docs state the present: no issue numbers, no commit hashes', () => {
    const marks = DOCS.flatMap((doc) => historyMarks(read(doc)).map((m) => `${doc}: ${m}`))
    expect(marks).toEqual([])
  })
  it('the benchmarks write no commit into the docs they generate', () => {
    const machine = { nproc: 2, cpuModel: 'cpu', memoryGb: 4, node: 'v20', platform: 'linux-x64', packages: { tsx: '4.0.0' }, gitCommit: '542dffb (lib/ modified)', command: 'npx tsx bench/run.ts', loadAvgAtStart: [1, 1, 1] }
    expect(historyMarks(machineMarkdown(machine))).toEqual([])
  })
  it('the checks catch what they look for', () => {
    expect(wordsBeforeFirstTable('one two\nthree\n| a |\nfour')).toBe(3)
    expect(brokenLinks('docs/a.md', '[x](b.md) [y](../README.md) [z](https://x.org/c.md)', (p) => p === 'README.md')).toEqual(['docs/a.md: b.md'])
    const docs: Record<string, string> = { 'docs/b.md': '# B\n## Real section\n**A label.** text\n- **An item**: text' }
    expect(missingSections('docs/a.md', 'see docs/b.md, "Real section", b.md "A label", docs/b.md "An item" and docs/b.md, "Gone"', (p) => docs[p])).toEqual(['docs/a.md: docs/b.md "Gone"'])
    expect(historyMarks('issue 18, #12, at 542dffb; 2147483647, `1e400000000`, 0e99999')).toEqual(['issue 18', '#12', '542dffb'])
  })
})
