// The package as a user gets it: `npm pack` (which builds dist/ through prepack), the tarball
// installed by npm into an empty project outside the repository, and there the CLI, a
// TypeScript program against the library API, and a CDK app with the construct library.
// The user's own tools (typescript, @types/node, aws-cdk-lib, constructs, cdk-nag) are
// linked from this repository's node_modules rather than downloaded again: they are the
// user's, not the package's, and the package finds them as it would find the user's.
// The project's files are in test/package-project/.

import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, it } from 'vitest'

const run = promisify(execFile)
const ROOT = join(import.meta.dirname, '..')
const FILES = join(import.meta.dirname, 'package-project')
const USER_TOOLS = ['typescript', '@types/node', 'aws-cdk-lib', 'constructs', 'cdk-nag']
const LONG = 10 * 60_000

let project = ''
let tarball = ''
const packageJson = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))

async function strata(args: string[], opts: { input?: string } = {}): Promise<string> {
  const bin = join(project, 'node_modules', '.bin', 'strata')
  if (opts.input === undefined) return (await run(bin, args, { cwd: project, encoding: 'utf8' })).stdout
  return new Promise((resolve, reject) => {
    const child = execFile(bin, args, { cwd: project, encoding: 'utf8' }, (e, stdout, stderr) => (e ? reject(new Error(`${e.message}\n${stderr}`)) : resolve(stdout)))
    child.stdin!.end(opts.input)
  })
}

beforeAll(async () => {
  project = mkdtempSync(join(tmpdir(), 'strata-user-'))
  const packed = await run('npm', ['pack', '--silent', '--pack-destination', project], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 << 20 })
  tarball = join(project, packed.stdout.trim().split('\n').pop()!)
  writeFileSync(join(project, 'package.json'), JSON.stringify({ name: 'strata-user', private: true, type: 'module' }))
  await run('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball], { cwd: project, encoding: 'utf8' })
  for (const tool of USER_TOOLS) {
    mkdirSync(join(project, 'node_modules', tool, '..'), { recursive: true })
    symlinkSync(join(ROOT, 'node_modules', tool), join(project, 'node_modules', tool), 'dir')
  }
  for (const f of readdirSync(FILES)) cpSync(join(FILES, f), join(project, f))
}, LONG)

afterAll(() => rmSync(project, { recursive: true, force: true }))

/** RFC 4180 fields of a CSV text (quoted fields may hold commas, quotes doubled, CR and LF). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = []
  let row: string[] = []
  let i = 0
  while (i < text.length) {
    let field = ''
    if (text[i] === '"') {
      i++
      for (;;) {
        if (text[i] === '"' && text[i + 1] === '"') (field += '"'), (i += 2)
        else if (text[i] === '"') {
          i++
          break
        } else field += text[i++]
      }
      field = `"${field}` // marks a quoted field: an empty string, not a null
    } else while (i < text.length && !',\r\n'.includes(text[i])) field += text[i++]
    row.push(field)
    if (text[i] === ',') i++
    else {
      if (text[i] === '\r') i++
      if (text[i] === '\n') i++
      rows.push(row)
      row = []
    }
  }
  return rows.map((r) => r.map((f) => (f.startsWith('"') ? f.slice(1) : f)))
}

/** PostgreSQL text-format fields: \N is null, backslash escapes undone. */
function parseTsvLine(line: string): (string | null)[] {
  return line.split('\t').map((f) => (f === '\\N' ? null : f.replace(/\\(.)/g, (_, c: string) => ({ t: '\t', n: '\n', r: '\r', '\\': '\\' })[c] ?? c)))
}

// The checks run at once: each is child processes (the CLI, tsc, node) on files of its own in
// the project, so the file takes the longest check's time rather than their sum. Each takes
// `expect` from its context, as concurrent tests must.
describe.concurrent('the packed package, installed in a project of its own', () => {
  it('ships built JavaScript with declarations and only runtime dependencies', ({ expect }) => {
    const installed = JSON.parse(readFileSync(join(project, 'node_modules', 'strata-tables', 'package.json'), 'utf8'))
    expect(installed.version).toBe(packageJson.version)
    expect(Object.keys(installed.dependencies)).not.toContain('tsx')
    expect(Object.keys(installed.dependencies)).not.toContain('fauxqs')
    expect(statSync(join(project, 'node_modules', 'strata-tables', 'dist', 'lib', 'api', 'index.d.ts')).isFile()).toBe(true)
    expect(statSync(join(project, 'node_modules', 'tsx'), { throwIfNoEntry: false })).toBeUndefined()
  })

  it('runs the CLI: --version, create, write, and read in every format, values exactly', async ({ expect }) => {
    expect((await strata(['--version'])).trim()).toBe(packageJson.version)
    writeFileSync(join(project, 'schema.json'), JSON.stringify({ fields: [{ name: 'id', type: 'INT NOT NULL' }, { name: 'name', type: 'STRING' }, { name: 'note', type: 'STRING' }], primaryKeys: ['id'], options: { bucket: '1' } }))
    await strata(['create', 'cli-table', '--schema', 'schema.json'])
    expect((await strata(['write', 'cli-table'], { input: readFileSync(join(FILES, 'cli-input.jsonl'), 'utf8') })).trim()).toBe('1')
    const expected = [
      ['1', 'tab\there', 'new\nline'],
      ['2', 'back\\slash', 'carriage\rreturn'],
      ['3', 'NULL', null],
      ['4', '', 'comma, "quoted"'],
    ]
    const tsv = await strata(['read', 'cli-table', '--format', 'tsv'])
    expect(tsv.split('\n').slice(0, -1).map(parseTsvLine)).toEqual([['id', 'name', 'note'], ...expected])
    const csv = parseCsv(await strata(['read', 'cli-table', '--format', 'csv']))
    expect(csv).toEqual([['id', 'name', 'note'], ...expected.map((r) => r.map((v) => v ?? ''))])
    // csv tells the empty string ("") from null (nothing)
    expect(await strata(['read', 'cli-table', '--format', 'csv', '--filter', '{"id":4}'])).toContain('4,"",')
    const json = (await strata(['read', 'cli-table', '--format', 'json'])).trim().split('\n').map((l) => JSON.parse(l))
    expect(json).toEqual(expected.map(([id, name, note]) => ({ id: Number(id), name, note })))
    const table = (await strata(['read', 'cli-table', '--format', 'table'])).split('\n')
    // a header, a rule, and one line per row however many newlines its values hold
    expect(table.filter((l) => l.trim() !== '').length).toBe(2 + expected.length + (table.some((l) => /^\(\d+ rows?\)$/.test(l.trim())) ? 1 : 0))
  }, LONG)

  it('type-checks and runs a TypeScript program against the library API', async ({ expect }) => {
    writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'out', types: ['node'], skipLibCheck: false }, files: ['library.ts'] }))
    await run(process.execPath, [join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.json'], { cwd: project, encoding: 'utf8' }).catch((e) => {
      throw new Error(`tsc failed: ${e.stdout}`)
    })
    const out = JSON.parse((await run(process.execPath, [join(project, 'out', 'library.js'), join(project, 'lib-tables')], { cwd: project, encoding: 'utf8' })).stdout)
    expect(out).toEqual({
      snapshot: 1,
      rows: [{ id: '2n', customer: 'grace\tand\nnewline', amount: '3.00' }],
      found: { id: '2n', customer: 'grace\tand\nnewline', amount: '3.00' },
      latest: 2,
    })
  }, LONG)

  it('synthesizes a CDK app with the construct, a bucket of its own and grantRead to its own function, cdk-nag clean', async ({ expect }) => {
    writeFileSync(join(project, 'tsconfig.cdk.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, outDir: 'out', types: ['node'], skipLibCheck: true }, files: ['cdk-app.ts'] }))
    await run(process.execPath, [join(project, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.cdk.json'], { cwd: project, encoding: 'utf8' }).catch((e) => {
      throw new Error(`tsc failed: ${e.stdout}`)
    })
    const assembly = join(project, 'cdk.out')
    const synth = await run(process.execPath, [join(project, 'out', 'cdk-app.js'), assembly], { cwd: project, encoding: 'utf8', maxBuffer: 64 << 20 })
    expect(synth.stderr).not.toMatch(/AwsSolutions-/)
    const template = JSON.parse(readFileSync(join(assembly, 'UserStack.template.json'), 'utf8'))
    const resources = Object.values(template.Resources) as { Type: string; Properties: any }[]
    // the user's bucket holds the table: Strata made none of its own
    expect(resources.filter((r) => r.Type === 'AWS::S3::Bucket').length).toBe(2)
    const policies = resources.filter((r) => r.Type === 'AWS::IAM::Policy' && JSON.stringify(r.Properties.Roles).includes('Reporter'))
    const statements = policies.flatMap((p) => p.Properties.PolicyDocument.Statement)
    const text = JSON.stringify(statements)
    expect(text).toContain('s3:GetObject')
    expect(text).toContain('tables/orders/')
    expect(text).not.toMatch(/s3:(PutObject|DeleteObject)/)
    // the functions' code is the package's prebuilt bundles: no esbuild in this project
    const functions = resources.filter((r) => r.Type === 'AWS::Lambda::Function')
    expect(functions.length).toBeGreaterThan(1)
    expect(statSync(join(project, 'node_modules', 'esbuild'), { throwIfNoEntry: false })).toBeUndefined()
  }, LONG)
})
