// Prebuilt execution environments (local/runtime/handler-bundles.ts): a pool loads a
// handler's bundle when LOCAL_HANDLER_BUNDLES names a directory holding one whose sources are
// unchanged, in a thread and in a process, with stack traces naming the TypeScript source;
// it loads the module through tsx when there is no such directory, no bundle of that handler,
// or a source changed since the build.

import { existsSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { ExecutionEnvironmentPool, type InvokeResult } from '../local/runtime/execution-environment.ts'
import { HANDLER_BUNDLES_ENV, buildHandlerBundles, bundledEnvironment, ensureHandlerBundles } from '../local/runtime/handler-bundles.ts'

let dir = ''
let bundles = ''
let handler = ''
let helper = ''

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'strata-bundle-src-'))
  bundles = join(dir, 'bundles')
  handler = join(dir, 'where.ts')
  helper = join(dir, 'helper.ts')
  // ES modules, as the repository's are, for tsx
  writeFileSync(join(dir, 'package.json'), '{"type":"module"}\n')
  writeFileSync(helper, 'export const where = (): { url: string; stack: string } => ({ url: import.meta.url, stack: new Error("here").stack ?? "" })\n')
  writeFileSync(handler, "import { where } from './helper.ts'\nexport const handler = async (): Promise<unknown> => where()\n")
  await buildHandlerBundles(bundles, [handler])
}, 120_000)

afterAll(() => rmSync(dir, { recursive: true, force: true }))

async function where(isolation: 'thread' | 'process'): Promise<{ url: string; stack: string }> {
  const pool = new ExecutionEnvironmentPool({ handlerModule: handler, maxEnvironments: 1, isolation, timeoutMs: 60_000 })
  try {
    const r: InvokeResult = await pool.invoke({})
    if (!r.ok) throw new Error(`${r.error.name}: ${r.error.message}`)
    return r.value as { url: string; stack: string }
  } finally {
    await pool.close()
  }
}

describe('handler bundles', () => {
  it('are found for a handler built into the directory LOCAL_HANDLER_BUNDLES names, and only then', () => {
    const env = { [HANDLER_BUNDLES_ENV]: bundles }
    expect(bundledEnvironment(handler, env)).toEqual({ worker: join(bundles, 'worker.mjs'), handler: join(bundles, 'where.mjs') })
    expect(bundledEnvironment(helper, env)).toBeNull()
    expect(bundledEnvironment(handler, {})).toBeNull()
    expect(bundledEnvironment(handler, { [HANDLER_BUNDLES_ENV]: '' })).toBeNull()
    expect(bundledEnvironment(handler, { [HANDLER_BUNDLES_ENV]: join(dir, 'none') })).toBeNull()
  })

  for (const isolation of ['thread', 'process'] as const) {
    it(`run in a ${isolation}, their stack traces naming the TypeScript source`, async () => {
      vi.stubEnv(HANDLER_BUNDLES_ENV, bundles)
      try {
        const seen = await where(isolation)
        expect(seen.url).toBe(`file://${join(bundles, 'where.mjs')}`)
        expect(seen.stack).toMatch(/helper\.ts:1:/)
      } finally {
        vi.unstubAllEnvs()
      }
    })
  }

  it('are not used once a source they were built from changed: the environment loads the module through tsx', async () => {
    vi.stubEnv(HANDLER_BUNDLES_ENV, bundles)
    try {
      const later = new Date(Date.now() + 60_000)
      utimesSync(helper, later, later)
      expect(bundledEnvironment(handler)).toBeNull()
      expect((await where('thread')).url).toBe(`file://${helper}`)
    } finally {
      vi.unstubAllEnvs()
    }
  })

  it('are built by ensureHandlerBundles once per set of handlers when LOCAL_HANDLER_BUNDLES is unset, and a value set is kept', async () => {
    const saved = process.env[HANDLER_BUNDLES_ENV]
    const other = join(dir, 'other.ts')
    writeFileSync(other, "export const handler = async (): Promise<unknown> => 'other'\n")
    try {
      process.env[HANDLER_BUNDLES_ENV] = ''
      await ensureHandlerBundles([handler])
      expect(process.env[HANDLER_BUNDLES_ENV]).toBe('')
      delete process.env[HANDLER_BUNDLES_ENV]
      await ensureHandlerBundles([handler])
      const first = process.env[HANDLER_BUNDLES_ENV]!
      expect(bundledEnvironment(handler)?.handler.startsWith(first)).toBe(true)
      expect(bundledEnvironment(other)).toBeNull()
      // the same handlers: not built again
      await ensureHandlerBundles([handler])
      expect(process.env[HANDLER_BUNDLES_ENV]).toBe(first)
      // one more: all of them built again, into a new directory, the old one gone
      await ensureHandlerBundles([other])
      const second = process.env[HANDLER_BUNDLES_ENV]!
      expect(second).not.toBe(first)
      expect(bundledEnvironment(handler)?.handler.startsWith(second)).toBe(true)
      expect(bundledEnvironment(other)?.handler.startsWith(second)).toBe(true)
      expect(existsSync(first)).toBe(false)
    } finally {
      if (saved === undefined) delete process.env[HANDLER_BUNDLES_ENV]
      else process.env[HANDLER_BUNDLES_ENV] = saved
    }
  }, 120_000)
})
