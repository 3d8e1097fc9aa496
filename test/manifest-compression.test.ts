// manifest.compression by Paimon's names (Avro's codec names, and zstd): what each writes into
// the manifests' `avro.codec`, the refusal of `none` (Paimon hands the value to Avro, which
// then fails every commit with "Unrecognized codec: none"), and a table an older Strata
// stored with `none`, read and written as `null` (docs/format.md "Options: supported, refused,
// different"). Paimon committing to both: test/interop-file-format.test.ts.

import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { createTable, openTable } from '../lib/api/index.ts'
import { avroFileHeader, canWriteCompression } from '../lib/format/avro.ts'
import { RefusedError, StrataInputError } from '../lib/errors.ts'

const dirs: string[] = []
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })))
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'strata-manifest-codec-'))
  dirs.push(d)
  return d
}

const schema = (options: Record<string, string>) => ({
  fields: [
    { name: 'id', type: 'INT NOT NULL' },
    { name: 'v', type: 'STRING' },
  ],
  primaryKeys: ['id'],
  options: { bucket: '1', ...options },
})

/** The avro.codec of every manifest file and manifest list in the table, by file name. */
function manifestCodecs(dir: string): Map<string, string> {
  const out = new Map<string, string>()
  for (const name of readdirSync(join(dir, 'manifest'))) out.set(name, avroFileHeader(new Uint8Array(readFileSync(join(dir, 'manifest', name)))).codec)
  return out
}

const ZSTD = canWriteCompression('zstd')

describe('manifest.compression takes Paimon\'s names', () => {
  it.each([
    ['null', 'null'],
    ['deflate', 'deflate'],
    ['snappy', 'snappy'],
    ...(ZSTD ? [['zstd', 'zstandard'], ['zstandard', 'zstandard']] : []),
  ])('%s: manifests and lists carry the Avro codec %s, and read back', async (value, codec) => {
    const dir = tempDir()
    const table = await createTable(dir, schema({ 'manifest.compression': value }))
    await table.write([{ id: 1, v: 'a' }, { id: 2, v: 'b' }])
    await table.write([{ id: 2, v: 'B' }])
    await table.compact({ full: true })
    const codecs = manifestCodecs(dir)
    expect(codecs.size).toBeGreaterThan(3)
    expect(new Set(codecs.values())).toEqual(new Set([codec]))
    expect(await (await openTable(dir)).readAll()).toEqual([{ id: 1, v: 'a' }, { id: 2, v: 'B' }])
  })

  it('none is refused at create and at alter, naming null; nothing is stored', async () => {
    const dir = tempDir()
    const made = await createTable(dir, schema({ 'manifest.compression': 'none' })).catch((e: unknown) => e)
    expect(made).toBeInstanceOf(RefusedError)
    expect((made as Error).message).toMatch(/option 'manifest\.compression': value "none" is not an Avro codec name .*"Unrecognized codec: none".*expected null for uncompressed manifests/)
    expect(readdirSync(dir)).toEqual([])
    const table = await createTable(dir, schema({}))
    const altered = await table.setOptions({ 'manifest.compression': 'NONE' }).catch((e: unknown) => e)
    expect(altered).toBeInstanceOf(RefusedError)
    expect((altered as Error).message).toMatch(/expected null for uncompressed manifests/)
    expect(readdirSync(join(dir, 'schema'))).toEqual(['schema-0'])
  })

  it.each(['bzip2', 'xz', 'lz4'])('%s (an Avro codec Strata has no encoder for, or none at all) is refused at create, naming the option', async (value) => {
    const made = await createTable(tempDir(), schema({ 'manifest.compression': value })).catch((e: unknown) => e)
    expect(made).toBeInstanceOf(StrataInputError)
    expect((made as Error).message).toMatch(/^option 'manifest\.compression': .*expected.*null, deflate, snappy, zstd/)
  })

  it('a table an older Strata stored with none opens, reads, writes and compacts with the null codec; the stored value stays until altered', async () => {
    const dir = tempDir()
    await (await createTable(dir, schema({ 'manifest.compression': 'null' }))).write([{ id: 1, v: 'a' }])
    // what an older Strata stored
    const file = join(dir, 'schema', 'schema-0')
    const stored = JSON.parse(readFileSync(file, 'utf8'))
    stored.options['manifest.compression'] = 'none'
    writeFileSync(file, JSON.stringify(stored, null, 2))
    const table = await openTable(dir)
    expect(await table.readAll()).toEqual([{ id: 1, v: 'a' }])
    await table.write([{ id: 2, v: 'b' }])
    await table.compact({ full: true })
    expect(new Set(manifestCodecs(dir).values())).toEqual(new Set(['null']))
    expect(await (await openTable(dir)).readAll()).toEqual([{ id: 1, v: 'a' }, { id: 2, v: 'b' }])
    // setting Paimon's name fixes the table for Paimon's commits
    const fixed = await table.setOptions({ 'manifest.compression': 'null' })
    expect(JSON.parse(readFileSync(join(dir, 'schema', 'schema-1'), 'utf8')).options['manifest.compression']).toBe('null')
    await fixed.write([{ id: 3, v: 'c' }])
    expect(new Set(manifestCodecs(dir).values())).toEqual(new Set(['null']))
  })
})
