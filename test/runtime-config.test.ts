// The functions' STRATA_TABLES parsing (functions/shared/config.ts): the deployed
// compaction.task-threads each entry may carry, and clear errors for bad values.

import { describe, expect, it } from 'vitest'
import { ConfigError, parseConfig } from '../functions/shared/config.ts'

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
