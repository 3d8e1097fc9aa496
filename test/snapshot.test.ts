import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseHint, parseSnapshot, serializeHint, serializeSnapshot } from '../lib/format/snapshot.ts'
import type { Snapshot } from '../lib/types.ts'

const LONG_MAX = 9223372036854775807n
const LONG_MIN = -9223372036854775808n

// snapshot-1 (APPEND) as Java writes it; provenance in test/fixtures/README.md.
const SNAPSHOT_1 = `{
  "version" : 3,
  "uuid" : "3f1c2a9e-5b7d-4e0a-9c51-8f2d6b1a7e43",
  "id" : 1,
  "schemaId" : 0,
  "baseManifestList" : "manifest-list-9f856d52-5b33-4c10-8933-a0eddfaa25bf-0",
  "baseManifestListSize" : 884,
  "deltaManifestList" : "manifest-list-9f856d52-5b33-4c10-8933-a0eddfaa25bf-1",
  "deltaManifestListSize" : 1022,
  "commitUser" : "7d758485-981d-4b1a-a0c6-d34c3eb254bf",
  "commitIdentifier" : 9223372036854775807,
  "commitKind" : "APPEND",
  "timeMillis" : 1720496700000,
  "totalRecordCount" : 3,
  "deltaRecordCount" : 3,
  "nextRowId" : 0
}`

// snapshot-2 (COMPACT) as Java writes it; provenance in test/fixtures/README.md.
const SNAPSHOT_2 = `{
  "version" : 3,
  "uuid" : "0b6f6a8e-2d35-4a57-9a0e-3c2f4d1e9b70",
  "id" : 2,
  "schemaId" : 0,
  "baseManifestList" : "manifest-list-51c16f7b-421c-4bc0-80a0-17677f343358-0",
  "baseManifestListSize" : 1022,
  "deltaManifestList" : "manifest-list-51c16f7b-421c-4bc0-80a0-17677f343358-1",
  "deltaManifestListSize" : 1030,
  "commitUser" : "7d758485-981d-4b1a-a0c6-d34c3eb254bf",
  "commitIdentifier" : 9223372036854775807,
  "commitKind" : "COMPACT",
  "timeMillis" : 1720496760000,
  "totalRecordCount" : 3,
  "deltaRecordCount" : 0,
  "nextRowId" : 0
}`

const snapshot1: Snapshot = {
  version: 3,
  uuid: '3f1c2a9e-5b7d-4e0a-9c51-8f2d6b1a7e43',
  id: 1,
  schemaId: 0,
  baseManifestList: 'manifest-list-9f856d52-5b33-4c10-8933-a0eddfaa25bf-0',
  baseManifestListSize: 884,
  deltaManifestList: 'manifest-list-9f856d52-5b33-4c10-8933-a0eddfaa25bf-1',
  deltaManifestListSize: 1022,
  commitUser: '7d758485-981d-4b1a-a0c6-d34c3eb254bf',
  commitIdentifier: LONG_MAX,
  commitKind: 'APPEND',
  timeMillis: 1720496700000,
  totalRecordCount: 3,
  deltaRecordCount: 3,
  nextRowId: 0,
}

const snapshot2: Snapshot = {
  version: 3,
  uuid: '0b6f6a8e-2d35-4a57-9a0e-3c2f4d1e9b70',
  id: 2,
  schemaId: 0,
  baseManifestList: 'manifest-list-51c16f7b-421c-4bc0-80a0-17677f343358-0',
  baseManifestListSize: 1022,
  deltaManifestList: 'manifest-list-51c16f7b-421c-4bc0-80a0-17677f343358-1',
  deltaManifestListSize: 1030,
  commitUser: '7d758485-981d-4b1a-a0c6-d34c3eb254bf',
  commitIdentifier: LONG_MAX,
  commitKind: 'COMPACT',
  timeMillis: 1720496760000,
  totalRecordCount: 3,
  deltaRecordCount: 0,
  nextRowId: 0,
}

const REQUIRED = [
  'version',
  'id',
  'schemaId',
  'baseManifestList',
  'deltaManifestList',
  'commitUser',
  'commitIdentifier',
  'commitKind',
  'timeMillis',
  'totalRecordCount',
  'deltaRecordCount',
] as const

// Every key, in api:Snapshot.java's order.
const FULL: Snapshot = {
  version: 3,
  uuid: 'u',
  id: 7,
  schemaId: 2,
  baseManifestList: 'b',
  baseManifestListSize: 10,
  deltaManifestList: 'd',
  deltaManifestListSize: 11,
  changelogManifestList: 'c',
  changelogManifestListSize: 12,
  indexManifest: 'index-manifest-x-0',
  commitUser: 'user',
  commitIdentifier: -5n,
  commitKind: 'OVERWRITE',
  timeMillis: 1,
  totalRecordCount: 100,
  deltaRecordCount: -4,
  changelogRecordCount: 6,
  watermark: LONG_MIN,
  statistics: 'stat-x-0',
  properties: { a: '1', 'b.c': 'x "y"' },
  nextRowId: 0,
}

describe('serializeSnapshot', () => {
  it('writes the two example snapshots character for character', () => {
    expect(serializeSnapshot(snapshot1)).toBe(SNAPSHOT_1)
    expect(serializeSnapshot(snapshot2)).toBe(SNAPSHOT_2)
  })

  it('writes Long.MAX_VALUE as the exact literal, never as a rounded double', () => {
    const json = serializeSnapshot(snapshot1)
    expect(json).toContain('"commitIdentifier" : 9223372036854775807,')
    expect(json).not.toContain('9223372036854776000')
  })

  it('writes every field in Java order with Jackson pretty-printer maps', () => {
    expect(serializeSnapshot(FULL)).toBe(`{
  "version" : 3,
  "uuid" : "u",
  "id" : 7,
  "schemaId" : 2,
  "baseManifestList" : "b",
  "baseManifestListSize" : 10,
  "deltaManifestList" : "d",
  "deltaManifestListSize" : 11,
  "changelogManifestList" : "c",
  "changelogManifestListSize" : 12,
  "indexManifest" : "index-manifest-x-0",
  "commitUser" : "user",
  "commitIdentifier" : -5,
  "commitKind" : "OVERWRITE",
  "timeMillis" : 1,
  "totalRecordCount" : 100,
  "deltaRecordCount" : -4,
  "changelogRecordCount" : 6,
  "watermark" : -9223372036854775808,
  "statistics" : "stat-x-0",
  "properties" : {
    "a" : "1",
    "b.c" : "x \\"y\\""
  },
  "nextRowId" : 0
}`)
    expect(serializeSnapshot({ ...snapshot1, properties: {} })).toContain('"properties" : { },\n  "nextRowId"')
  })

  it('omits optional fields that are undefined (Jackson NON_NULL)', () => {
    const { uuid, baseManifestListSize, deltaManifestListSize, nextRowId, ...minimal } = snapshot1
    const json = serializeSnapshot(minimal)
    expect(json).not.toMatch(/uuid|Size|nextRowId|null/)
    expect(json.split('\n')).toHaveLength(13)
  })

  it('names the field of a value it cannot write', () => {
    expect(() => serializeSnapshot({ ...snapshot1, commitIdentifier: 5 as unknown as bigint })).toThrow(
      /Snapshot\.commitIdentifier: 5, expected a bigint/,
    )
    expect(() => serializeSnapshot({ ...snapshot1, commitIdentifier: LONG_MAX + 1n })).toThrow(/commitIdentifier/)
    expect(() => serializeSnapshot({ ...snapshot1, timeMillis: 1.5 })).toThrow(/Snapshot\.timeMillis: 1\.5/)
    expect(() => serializeSnapshot({ ...snapshot1, commitKind: 'MERGE' as 'APPEND' })).toThrow(/commitKind: "MERGE"/)
    expect(() => serializeSnapshot({ ...snapshot1, commitUser: undefined as unknown as string })).toThrow(
      /Snapshot\.commitUser: undefined, expected a value/,
    )
  })
})

describe('parseSnapshot', () => {
  it('reads the two example snapshots field for field', () => {
    expect(parseSnapshot(SNAPSHOT_1)).toStrictEqual(snapshot1)
    expect(parseSnapshot(SNAPSHOT_2)).toStrictEqual(snapshot2)
  })

  it('keeps commitIdentifier and watermark exact as bigint', () => {
    const s = parseSnapshot(SNAPSHOT_1.replace('"nextRowId" : 0', '"watermark" : 9223372036854775806'))
    expect(s.commitIdentifier).toBe(LONG_MAX)
    expect(s.watermark).toBe(LONG_MAX - 1n)
    expect(serializeSnapshot(s)).toContain('"watermark" : 9223372036854775806')
  })

  it('ignores unknown keys like Jackson ignoreUnknown (writerVersion, operation, logOffsets, …)', () => {
    const text = SNAPSHOT_1.replace(
      '"commitIdentifier"',
      `"writerVersion" : "java-2.1-SNAPSHOT-5dacde516bf6e29b583aff8b32bab321bfc6e64f",
  "logOffsets" : { "0" : 12 },
  "totalFileSize" : 123456789012345678901234567890,
  "flags" : [ true, false, null, -1.5e3 ],
  "operation" : "WRITE",
  "commitIdentifier"`,
    )
    expect(parseSnapshot(text)).toStrictEqual(snapshot1)
  })

  it('treats null optional fields as absent and accepts compact JSON', () => {
    const compact = JSON.stringify({
      version: 3,
      id: 5,
      schemaId: 0,
      baseManifestList: 'm-0',
      deltaManifestList: 'm-1',
      changelogManifestList: null,
      commitUser: 'user',
      commitIdentifier: 0,
      commitKind: 'APPEND',
      timeMillis: 1234,
      totalRecordCount: 10,
      deltaRecordCount: 5,
      properties: { k: 'v', n: 3, b: true },
    })
    expect(parseSnapshot(compact)).toStrictEqual({
      version: 3,
      id: 5,
      schemaId: 0,
      baseManifestList: 'm-0',
      deltaManifestList: 'm-1',
      commitUser: 'user',
      commitIdentifier: 0n,
      commitKind: 'APPEND',
      timeMillis: 1234,
      totalRecordCount: 10,
      deltaRecordCount: 5,
      properties: { k: 'v', n: '3', b: 'true' },
    })
  })

  it.each(REQUIRED)('names the required field %s when it is missing or null', (key) => {
    const missing = SNAPSHOT_1.split('\n').filter((l) => !l.startsWith(`  "${key}" :`)).join('\n')
    expect(() => parseSnapshot(missing.replace(',\n}', '\n}'))).toThrow(`required field "${key}" is missing`)
    const nulled = SNAPSHOT_1.replace(new RegExp(`("${key}" : )[^,\\n]+`), '$1null')
    expect(() => parseSnapshot(nulled)).toThrow(`required field "${key}" is null`)
  })

  it('rejects bad values and bad JSON with a clear message', () => {
    expect(() => parseSnapshot(SNAPSHOT_1.replace('"id" : 1', '"id" : "1"'))).toThrow(/field "id": "1", expected an integer/)
    expect(() => parseSnapshot(SNAPSHOT_1.replace('"id" : 1', '"id" : 1.5'))).toThrow(/field "id": 1\.5/)
    expect(() => parseSnapshot(SNAPSHOT_1.replace('9223372036854775807', '9223372036854775808'))).toThrow(
      /out of the Java long range/,
    )
    expect(() => parseSnapshot(SNAPSHOT_1.replace('"id" : 1', '"id" : 9007199254740993'))).toThrow(/safe integer/)
    expect(() => parseSnapshot(SNAPSHOT_1.replace('"APPEND"', '"MERGE"'))).toThrow(/commitKind": "MERGE", expected one of/)
    expect(() => parseSnapshot(SNAPSHOT_1.slice(0, -2))).toThrow(/snapshot JSON invalid at offset/)
    expect(() => parseSnapshot('[1]')).toThrow(/not an object/)
    expect(() => parseSnapshot(SNAPSHOT_1 + ' x')).toThrow(/trailing/)
  })

  it('round-trips arbitrary snapshots (fast-check)', () => {
    const long = fc.bigInt({ min: LONG_MIN, max: LONG_MAX })
    const safe = fc.maxSafeInteger()
    const text = fc.string({ unit: 'grapheme', maxLength: 30 })
    const arb: fc.Arbitrary<Snapshot> = fc.record(
      {
        version: fc.integer(),
        uuid: fc.uuid(),
        id: safe,
        schemaId: safe,
        baseManifestList: text,
        baseManifestListSize: safe,
        deltaManifestList: text,
        deltaManifestListSize: safe,
        changelogManifestList: text,
        changelogManifestListSize: safe,
        indexManifest: text,
        commitUser: text,
        commitIdentifier: fc.oneof(fc.constant(LONG_MAX), long),
        commitKind: fc.constantFrom('APPEND', 'COMPACT', 'OVERWRITE', 'ANALYZE'),
        timeMillis: safe,
        totalRecordCount: safe,
        deltaRecordCount: safe,
        changelogRecordCount: safe,
        watermark: long,
        statistics: text,
        properties: fc.dictionary(text, text, { maxKeys: 3 }),
        nextRowId: safe,
      },
      { requiredKeys: [...REQUIRED] },
    )
    fc.assert(
      fc.property(arb, (s) => {
        const json = serializeSnapshot(s)
        // fast-check builds null-prototype objects; compare as plain ones.
        const plain = { ...s, ...(s.properties && { properties: { ...s.properties } }) }
        expect(parseSnapshot(json)).toStrictEqual(plain)
        // Readers that use a plain JSON parser (pypaimon's json.loads) see the same document.
        expect(Object.keys(JSON.parse(json))).toEqual(Object.keys(s).sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b)))
      }),
      { numRuns: 300 },
    )
  })
})

const ORDER = Object.keys(FULL)

describe('LATEST / EARLIEST hints', () => {
  it('are the id in ASCII decimal without a newline', () => {
    expect(serializeHint(42)).toBe('42')
    expect(serializeHint(0)).toBe('0')
    expect(() => serializeHint(-1)).toThrow(/snapshot hint id: -1/)
    expect(() => serializeHint(1.5)).toThrow(/snapshot hint id/)
  })

  it('parse like Long.parseLong, anything else means no hint', () => {
    expect(parseHint('42')).toBe(42)
    expect(parseHint('+7')).toBe(7)
    expect(parseHint('-1')).toBe(-1)
    for (const bad of ['', ' 42', '42\n', '4 2', '0x10', '1e3', 'LATEST', '99999999999999999999']) {
      expect(parseHint(bad)).toBeNull()
    }
    fc.assert(fc.property(fc.nat(), (n) => parseHint(serializeHint(n)) === n))
  })
})
