// The Paimon interop harness (interop/) from a test: whether Java and Maven are here (and a
// suite's describe that says so), building a harness jar when its sources changed, running
// a harness's commands in one JVM, and Strata's rows in the harness's JSON rendering
// (interop/README.md) so both sides compare as text.

import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join, relative } from 'node:path'
import { describe, it } from 'vitest'
import { withBuildLock } from './build-lock.ts'
import { formatDate, formatDecimal, formatTimestamp } from '../../lib/table/json-values.ts'
import type { DataField, Row, Value } from '../../lib/types.ts'

export const ROOT = join(import.meta.dirname, '..', '..')
export const INTEROP_DIR = join(ROOT, 'interop')
export const JAR = join(INTEROP_DIR, 'target', 'strata-interop.jar')
export const RUN_COMMAND = 'npx vitest run test/interop.test.ts (needs Java 17+ and Maven 3 on PATH)'

/** The tools the suite needs that this machine lacks (empty when it can run). */
export function missingTools(): string[] {
  const missing: string[] = []
  for (const [tool, arg] of [['java', '-version'], ['mvn', '-v']]) {
    const r = spawnSync(tool, [arg], { encoding: 'utf8' })
    if (r.error || r.status !== 0) missing.push(tool)
  }
  return missing
}

/**
 * The suite's `describe` where Java and Maven are here. Without them the suite is skipped with
 * one line saying how to run it, except under CI, where it fails naming the missing tools.
 */
export function describeWithJava(name: string, runCommand: string, body: () => void, missing = missingTools()): void {
  if (missing.length === 0) {
    describe(name, body)
    return
  }
  const lacking = `${missing.join(' and ')} ${missing.length > 1 ? 'are' : 'is'} not on PATH`
  if (!process.env.CI) {
    process.stdout.write(`${name} skipped: ${lacking}; to run it: ${runCommand}\n`)
    describe.skip(name, () => it('needs Java and Maven', () => {}))
  } else {
    describe(name, () => {
      it('runs under CI', () => {
        throw new Error(`CI must run ${name}, but ${lacking} (${runCommand})`)
      })
    })
  }
}

function newestMtime(path: string): number {
  const st = statSync(path)
  if (!st.isDirectory()) return st.mtimeMs
  let newest = st.mtimeMs
  for (const name of readdirSync(path)) newest = Math.max(newest, newestMtime(join(path, name)))
  return newest
}

/**
 * Builds a harness's jar (`mvn package` of `dir`/pom.xml) unless it is newer than the POM and
 * every source file, under the harness's build lock. With ~/.m2 warm a build takes about 5 s
 * (the dependencies are copied to target/lib/, not shaded); the first one downloads them.
 */
export function buildJar(dir: string, jar: string): void {
  withBuildLock(join(dir, '.build-lock'), () => {
    const sources = Math.max(newestMtime(join(dir, 'pom.xml')), newestMtime(join(dir, 'src')))
    if (existsSync(jar) && statSync(jar).mtimeMs > sources) return
    const r = spawnSync('mvn', ['-q', '-B', '-f', join(dir, 'pom.xml'), 'package'], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    if (r.status !== 0) throw new Error(`${basename(jar)} did not build (mvn -q -f ${relative(ROOT, dir)}/pom.xml package, exit ${r.status}):\n${r.stdout}\n${r.stderr}`)
  })
}

/** Builds the Paimon harness's jar when its sources changed (the first build downloads Paimon and Hadoop). */
export function buildHarness(): void {
  buildJar(INTEROP_DIR, JAR)
}

/** One harness command's outcome: its data (the `--out` file) or the harness's error. */
export interface PaimonResult {
  ok: boolean
  error?: string
  output: string
}

// a short-lived JVM: the C1 compiler alone and the serial collector start fastest
const JAVA_ARGS = ['-XX:TieredStopAtLevel=1', '-XX:+UseSerialGC', '-jar']

/**
 * A harness JVM's arguments and what to do once it exits. Java's class-data sharing: the
 * jar's archive (`<jar>.jsa`, beside it) of the classes a harness JVM loaded, so the next
 * JVM maps Paimon's classes instead of loading them (a small read about 0.7 s sooner). A
 * JVM finding no archive newer than the jar writes one as it exits, under a name of its own
 * that is then renamed, so JVMs starting at once never see a half-written archive. Its log
 * lines (classes it skips) would go to stdout, the batch protocol's channel: they are off.
 */
function harnessJava(jar: string): { args: string[]; exited: () => void } {
  const archive = `${jar}.jsa`
  if (existsSync(archive) && statSync(archive).mtimeMs >= statSync(jar).mtimeMs) return { args: [`-XX:SharedArchiveFile=${archive}`, '-Xlog:cds=off', ...JAVA_ARGS], exited: () => {} }
  const written = `${archive}.${process.pid}.${Math.random().toString(36).slice(2)}`
  return {
    args: [`-XX:ArchiveClassesAtExit=${written}`, '-Xlog:cds=off', '-Xlog:cds+dynamic=off', ...JAVA_ARGS],
    exited: () => {
      if (existsSync(written)) renameSync(written, archive)
    },
  }
}

/**
 * The `batch` protocol both harnesses speak: one JSON array of arguments a line in, each
 * command given an `--out` file in `dir` for its data; one status line each out.
 */
function batchInput(commands: string[][], dir: string): { input: string; outs: string[] } {
  const outs = commands.map((_, i) => join(dir, `out-${i}`))
  return { input: commands.map((c, i) => JSON.stringify([...c, '--out', outs[i]])).join('\n') + '\n', outs }
}

function batchResults(jar: string, stdout: string, stderr: string, outs: string[]): PaimonResult[] {
  const statuses = stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as { ok: boolean; error?: string })
  if (statuses.length !== outs.length) throw new Error(`${basename(jar)} answered ${statuses.length} of ${outs.length} commands:\n${stderr}`)
  return statuses.map((s, i) => ({ ...s, output: existsSync(outs[i]) ? readFileSync(outs[i], 'utf8') : '' }))
}

/**
 * Runs harness commands (`read`, `meta`, `write`, `compact` with their arguments) in one JVM
 * through its `batch` mode, in order; a failed command does not stop the others.
 */
export function paimonBatch(commands: string[][]): PaimonResult[] {
  const dir = mkdtempSync(join(tmpdir(), 'strata-interop-out-'))
  try {
    const { input, outs } = batchInput(commands, dir)
    const java = harnessJava(JAR)
    const r = spawnSync('java', [...java.args, JAR, 'batch'], { input, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 })
    java.exited()
    if (r.status !== 0) throw new Error(`the interop harness failed (exit ${r.status}):\n${r.stderr}`)
    return batchResults(JAR, r.stdout, r.stderr, outs)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/**
 * `paimonBatch` for any harness jar, asynchronous, so a test builds Strata's tables while a
 * JVM works on Paimon's. The jar runs in place: builds take the build lock and re-check
 * staleness under it (`buildJar`), so a run of the suite writes a jar before its first JVM
 * starts and not again unless its sources are edited meanwhile. A JVM that has not answered
 * after `timeoutMs` is killed and the batch fails, rather than the hook waiting out its own
 * timeout with nothing said.
 */
export async function jarBatch(jar: string, commands: string[][], { timeoutMs = 480_000 } = {}): Promise<PaimonResult[]> {
  const dir = mkdtempSync(join(tmpdir(), 'strata-interop-out-'))
  try {
    const { input, outs } = batchInput(commands, dir)
    const java = harnessJava(jar)
    const child = spawn('java', [...java.args, jar, 'batch'], { stdio: ['pipe', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      child.kill('SIGKILL')
    }, timeoutMs)
    const status = new Promise<number | null>((resolve, reject) => {
      child.on('error', reject)
      child.on('close', resolve)
    })
    child.stdin.end(input)
    const code = await status.finally(() => clearTimeout(timer))
    java.exited()
    const answered = stdout.split('\n').filter(Boolean).length
    if (timedOut) throw new Error(`${basename(jar)} did not finish in ${timeoutMs / 1000} s (${answered} of ${commands.length} commands answered; the next: ${JSON.stringify(commands[answered])}):\n${stderr}`)
    if (code !== 0) throw new Error(`${basename(jar)} failed (exit ${code}):\n${stderr}`)
    return batchResults(jar, stdout, stderr, outs)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Rows of a harness `read`: one JSON object a line. */
export function parseRows(output: string): Record<string, unknown>[] {
  return output
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)
}

/** One Strata value as the harness renders Paimon's (interop/README.md). */
export function renderValue(field: DataField, v: Value): unknown {
  if (v === null) return null
  const t = field.type
  switch (t.root) {
    case 'BIGINT':
      return (v as bigint).toString()
    case 'FLOAT':
    case 'DOUBLE':
      return Number.isFinite(v as number) ? v : String(v)
    case 'DECIMAL':
      return formatDecimal(v as bigint, t.scale!)
    case 'BINARY':
    case 'VARBINARY':
      return Buffer.from(v as Uint8Array).toString('base64')
    case 'DATE':
      return formatDate(v as number)
    case 'TIMESTAMP':
      return formatTimestamp(v as bigint, t.precision!).replace(' ', 'T')
    default:
      return v
  }
}

export function renderRow(fields: DataField[], row: Row): Record<string, unknown> {
  return Object.fromEntries(fields.map((f, i) => [f.name, renderValue(f, row[i])]))
}

/** Rows in one order whatever the reader's: by the rendered primary key. */
export function byKey(rows: Record<string, unknown>[], primaryKeys: string[]): Record<string, unknown>[] {
  const key = (r: Record<string, unknown>) => JSON.stringify(primaryKeys.map((k) => r[k]))
  return [...rows].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
}

/**
 * Writes JSON lines to a file for the harness's `write --in`. JSON.stringify prints -0 as 0;
 * the sign is part of a DOUBLE's value, so -0 is written as the literal -0.0.
 */
export function writeJsonLines(path: string, records: Record<string, unknown>[]): string {
  const mark = '@negative zero@'
  const line = (r: Record<string, unknown>) => JSON.stringify(r, (_, v) => (Object.is(v, -0) ? mark : v)).replaceAll(JSON.stringify(mark), '-0.0')
  writeFileSync(path, records.map(line).join('\n') + '\n')
  return path
}
