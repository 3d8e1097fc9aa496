// The functions' environment (functions/shared/config.ts): STRATA_TABLES with the deployed
// compaction.task-threads each entry may carry, the cache bounds every function reads, and
// clear errors for bad values.

import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig } from '../functions/shared/config.ts'
import { DEFAULT_FOOTER_CACHE_BYTES } from '../lib/handle/table.ts'

const env = (tables: unknown) => ({ STRATA_TABLES: JSON.stringify(tables) })

describe('STRATA_TABLES', () => {
  it('carries the deployed task-threads per table, absent when not given', () => {
    const c = parseConfig(env({ a: { uri: 's3://b/a', taskThreads: 1 }, b: { uri: 's3://b/b', taskThreads: -1 }, c: { uri: 's3://b/c' } }))
    expect(c.tables.get('a')!.taskThreads).toBe(1)
    expect(c.tables.get('b')!.taskThreads).toBe(-1)
    expect(c.tables.get('c')!.taskThreads).toBeUndefined()
  })

  it.each([0, -2, 1.5, '4'])('refuses taskThreads %j naming the table and what was expected', (v) => {
    expect(() => parseConfig(env({ orders: { uri: 's3://b/o', taskThreads: v } }))).toThrow(ConfigError)
    expect(() => parseConfig(env({ orders: { uri: 's3://b/o', taskThreads: v } }))).toThrow(/table 'orders' "taskThreads" must be -1 or an integer >= 1, got/)
  })
})

const TABLES = JSON.stringify({ orders: { uri: 's3://b/tables/orders' } })
const MiB = 1024 * 1024

describe('cache bounds', () => {
  it('bounds the metadata and footer caches by STRATA_METADATA_CACHE_MB and STRATA_FOOTER_CACHE_MB', () => {
    const c = parseConfig({ STRATA_TABLES: TABLES, STRATA_METADATA_CACHE_MB: '8', STRATA_FOOTER_CACHE_MB: '2' })
    expect(c.metadataCacheBytes).toBe(8 * MiB)
    expect(c.footerCacheBytes).toBe(2 * MiB)
    expect(parseConfig({ STRATA_TABLES: TABLES, STRATA_FOOTER_CACHE_MB: '0' }).footerCacheBytes).toBe(0)
  })

  it('defaults to the table handle defaults', () => {
    const c = parseConfig({ STRATA_TABLES: TABLES })
    expect(c.metadataCacheBytes).toBe(32 * MiB)
    expect(c.footerCacheBytes).toBe(DEFAULT_FOOTER_CACHE_BYTES)
  })

  it('refuses a cache bound that is not a non-negative integer, naming the variable and the value', () => {
    for (const bad of ['-1', '1.5', 'lots']) {
      expect(() => parseConfig({ STRATA_TABLES: TABLES, STRATA_FOOTER_CACHE_MB: bad })).toThrow(ConfigError)
      expect(() => parseConfig({ STRATA_TABLES: TABLES, STRATA_FOOTER_CACHE_MB: bad })).toThrow(`STRATA_FOOTER_CACHE_MB: expected a non-negative integer, got ${JSON.stringify(bad)}`)
    }
  })
})
