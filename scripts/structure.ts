// The structure rules of docs/design.md "Floors of lib/", measured from the code: which
// module of lib/ imports from a higher floor, which files import each other in a circle, and
// which functions are over the length limits. test/structure.test.ts holds the repository to
// them; `npx tsx scripts/structure.ts` prints the report.

import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import ts from 'typescript'

/**
 * The floors of lib/, ground first: a module imports only from its own folder and from lower
 * floors. Modules on one floor do not import each other. Keep in step with docs/design.md.
 */
export const LIB_FLOORS: readonly (readonly string[])[] = [
  ['errors.ts', 'package.ts'],
  ['types.ts'],
  ['store'],
  ['format'],
  ['merge'],
  ['table'],
  ['manifest'],
  ['commit'],
  ['iceberg'],
  ['handle'],
  ['lsm'],
  ['read', 'write', 'maintenance'],
  ['jobs'],
  ['ingest'],
  ['api'],
  ['cli'],
]

/** Longest function, in lines, by top-level folder; folders not named here are not measured. */
export const FUNCTION_LINE_LIMITS: Readonly<Record<string, number>> = {
  lib: 150,
  functions: 150,
  cdk: 150,
  bench: 200,
  local: 200,
  scripts: 200,
}

/** Longest file of lib/, in lines. */
export const LIB_FILE_LINE_LIMIT = 800

export interface ImportEdge {
  from: string
  to: string
}

function sourceFiles(root: string, dir: string): string[] {
  const out: string[] = []
  if (!existsSync(join(root, dir))) return out
  const walk = (d: string): void => {
    for (const e of readdirSync(join(root, d), { withFileTypes: true })) {
      const p = join(d, e.name)
      if (e.isDirectory()) {
        if (e.name !== 'node_modules' && e.name !== 'cdk.out') walk(p)
      } else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p)
    }
  }
  walk(dir)
  return out.sort()
}

/** Every relative import and re-export of the TypeScript files under `dir`, as repository paths. */
export function importEdges(root: string, dir: string): ImportEdge[] {
  const edges: ImportEdge[] = []
  for (const file of sourceFiles(root, dir)) {
    const info = ts.preProcessFile(readFileSync(join(root, file), 'utf8'), true, true)
    for (const ref of info.importedFiles) {
      if (!ref.fileName.startsWith('.')) continue
      edges.push({ from: file, to: relative(root, resolve(root, dirname(file), ref.fileName)) })
    }
  }
  return edges
}

/** The module of a lib/ file: its folder under lib/, or the file itself at lib/'s top. */
export function libModule(file: string): string {
  return file.split('/')[1]
}

function floorOf(module: string): number {
  const f = LIB_FLOORS.findIndex((floor) => floor.includes(module))
  if (f < 0) throw new Error(`lib/${module} is on no floor of LIB_FLOORS (scripts/structure.ts): add it to one, and to docs/design.md "Floors of lib/"`)
  return f
}

/** Imports of lib/ that do not run strictly down a floor (or stay inside one module). */
export function floorViolations(root: string): string[] {
  const out: string[] = []
  for (const e of importEdges(root, 'lib')) {
    if (!e.to.startsWith('lib/')) {
      out.push(`${e.from} imports ${e.to}, outside lib/`)
      continue
    }
    const a = libModule(e.from)
    const b = libModule(e.to)
    if (a === b) continue
    const fa = floorOf(a)
    const fb = floorOf(b)
    if (fb >= fa) out.push(`${e.from} (lib/${a}, floor ${fa + 1}) imports ${e.to} (lib/${b}, floor ${fb + 1})`)
  }
  return out
}

/** Circles of files that import each other, found over the whole repository's source folders. */
export function importCycles(root: string, dirs: readonly string[]): string[][] {
  const next = new Map<string, Set<string>>()
  for (const dir of dirs) {
    for (const e of importEdges(root, dir)) {
      let s = next.get(e.from)
      if (!s) next.set(e.from, (s = new Set()))
      s.add(e.to)
    }
  }
  // Tarjan's strongly connected components
  let index = 0
  const idx = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const on = new Set<string>()
  const cycles: string[][] = []
  const visit = (v: string): void => {
    idx.set(v, index)
    low.set(v, index++)
    stack.push(v)
    on.add(v)
    for (const w of next.get(v) ?? []) {
      if (!idx.has(w)) {
        visit(w)
        low.set(v, Math.min(low.get(v)!, low.get(w)!))
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!))
    }
    if (low.get(v) === idx.get(v)) {
      const c: string[] = []
      let w: string
      do {
        w = stack.pop()!
        on.delete(w)
        c.push(w)
      } while (w !== v)
      if (c.length > 1) cycles.push(c.sort())
    }
  }
  for (const v of [...next.keys()].sort()) if (!idx.has(v)) visit(v)
  return cycles
}

export interface LongFunction {
  file: string
  name: string
  line: number
  lines: number
  limit: number
}

function functionName(node: ts.Node, sf: ts.SourceFile): string {
  const named = node as ts.FunctionLikeDeclaration
  if (ts.isConstructorDeclaration(node)) {
    const cls = node.parent
    return `${cls.name?.getText(sf) ?? '(class)'}.constructor`
  }
  if (named.name) {
    const holder = ts.isClassLike(node.parent) && node.parent.name ? `${node.parent.name.getText(sf)}.` : ''
    return holder + named.name.getText(sf)
  }
  const p = node.parent
  if (p && ts.isVariableDeclaration(p)) return p.name.getText(sf)
  if (p && ts.isPropertyAssignment(p)) return p.name.getText(sf)
  if (p && ts.isPropertyDeclaration(p)) return p.name.getText(sf)
  return '(anonymous)'
}

/** Functions (declarations, methods, constructors, arrows) longer than their folder's limit, nested ones included. */
export function longFunctions(root: string): LongFunction[] {
  const out: LongFunction[] = []
  for (const [dir, limit] of Object.entries(FUNCTION_LINE_LIMITS)) {
    for (const file of sourceFiles(root, dir)) {
      const text = readFileSync(join(root, file), 'utf8')
      const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true)
      const visit = (node: ts.Node): void => {
        if (ts.isFunctionLike(node) && (node as ts.FunctionLikeDeclaration).body) {
          const start = sf.getLineAndCharacterOfPosition(node.getStart(sf)).line
          const end = sf.getLineAndCharacterOfPosition(node.getEnd()).line
          const lines = end - start + 1
          if (lines > limit) out.push({ file, name: functionName(node, sf), line: start + 1, lines, limit })
        }
        ts.forEachChild(node, visit)
      }
      visit(sf)
    }
  }
  return out.sort((a, b) => b.lines - a.lines)
}

/** Longest Lambda handler (a file at the top of functions/), in lines: handlers only adapt events to lib/. */
export const HANDLER_FILE_LINE_LIMIT = 150

/** Files of lib/ longer than LIB_FILE_LINE_LIMIT, and handlers longer than HANDLER_FILE_LINE_LIMIT. */
export function longFiles(root: string): { file: string; lines: number }[] {
  const lines = (file: string) => ({ file, lines: readFileSync(join(root, file), 'utf8').split('\n').length - 1 })
  const handlers = sourceFiles(root, 'functions').filter((f) => f.split('/').length === 2)
  return [
    ...sourceFiles(root, 'lib').map(lines).filter((f) => f.lines > LIB_FILE_LINE_LIMIT),
    ...handlers.map(lines).filter((f) => f.lines >= HANDLER_FILE_LINE_LIMIT),
  ]
}

export const SOURCE_DIRS = ['lib', 'functions', 'cdk', 'bench', 'local', 'scripts'] as const

if (import.meta.url === `file://${process.argv[1]}`) {
  const root = resolve(dirname(new URL(import.meta.url).pathname), '..')
  const up = floorViolations(root)
  const cycles = importCycles(root, SOURCE_DIRS)
  const fns = longFunctions(root)
  const files = longFiles(root)
  console.log(`imports up a floor of lib/: ${up.length}`)
  for (const v of up) console.log(`  ${v}`)
  console.log(`import circles: ${cycles.length}`)
  for (const c of cycles) console.log(`  ${c.join(' <-> ')}`)
  console.log(`functions over their limit: ${fns.length}`)
  for (const f of fns) console.log(`  ${f.file}:${f.line} ${f.name}: ${f.lines} lines (limit ${f.limit})`)
  console.log(`files of lib/ over ${LIB_FILE_LINE_LIMIT} lines, handlers of ${HANDLER_FILE_LINE_LIMIT} or more: ${files.length}`)
  for (const f of files) console.log(`  ${f.file}: ${f.lines}`)
  process.exitCode = up.length + cycles.length + fns.length + files.length > 0 ? 1 : 0
}
