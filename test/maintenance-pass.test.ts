// A maintenance pass in lib/maintenance/, called directly (no handler, no runtime config):
// inputs checked before anything runs, independent steps, the orphan task alone, markers
// deleted by age, and the table's metrics. On a memory store.

import { describe, expect, it } from 'vitest'
import { Table } from '../lib/handle/table.ts'
import { checkMaintenanceInputs, runMaintenancePass } from '../lib/maintenance/maintenance-pass.ts'
import { removeOldMarkers } from '../lib/maintenance/markers.ts'
import { DEFAULT_ORPHAN_OLDER_THAN_MS, MIN_ORPHAN_OLDER_THAN_MS } from '../lib/maintenance/orphans.ts'
import { tableMetrics } from '../lib/maintenance/table-metrics.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { StrataInputError } from '../lib/errors.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { schemaFor } from './helpers/model.ts'

async function tableWithRows(): Promise<Table> {
  const table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { 'deletion-vectors.enabled': 'true' }))
  for (let i = 0; i < 3; i++) await writeBatch(table, [recordFromJson(table.view, { dt: '2024-05-01', id: i, a: i, b: 'x', c: null }, 'row')])
  return table
}

describe('maintenance inputs', () => {
  const never = () => {
    throw new Error('the orphan age was not needed')
  }
  it('are checked in order, each refusal naming its field', () => {
    expect(() => checkMaintenanceInputs({ task: 'sweep' as never, markerMaxAgeMs: 1 }, never)).toThrow(/^maintenance: task = "sweep"/)
    expect(() => checkMaintenanceInputs({ orphanOlderThanMs: 1, markerMaxAgeMs: 1 }, never)).toThrow(StrataInputError)
    expect(() => checkMaintenanceInputs({ orphanOlderThanMs: MIN_ORPHAN_OLDER_THAN_MS, markerMaxAgeMs: -1 }, never)).toThrow(/^maintenance: markerMaxAgeMs = -1/)
    expect(() => checkMaintenanceInputs({ orphanOlderThanMs: MIN_ORPHAN_OLDER_THAN_MS, markerMaxAgeMs: 1, now: Number.NaN }, never)).toThrow(/^maintenance: now = NaN/)
  })
  it('take the orphan age from the caller only when none is given', () => {
    expect(checkMaintenanceInputs({ markerMaxAgeMs: 5, now: 7 }, () => DEFAULT_ORPHAN_OLDER_THAN_MS)).toEqual({ task: 'maintain', orphanOlderThanMs: DEFAULT_ORPHAN_OLDER_THAN_MS, markerMaxAgeMs: 5, now: 7 })
  })
})

describe('a maintenance pass', () => {
  it('runs every step; one that fails does not stop the others and is named with its message', async () => {
    const table = await tableWithRows()
    const failed: string[] = []
    const summary = await runMaintenancePass({
      name: 'orders', table, task: 'maintain', now: Date.now(), orphanOlderThanMs: DEFAULT_ORPHAN_OLDER_THAN_MS, markerMaxAgeMs: 0, markerDir: 'markers/',
      sweep: async () => {
        throw new Error('queue down')
      },
      queuedJobs: async () => 5,
      onStepError: (step) => failed.push(step),
    })
    expect(summary).toMatchObject({ table: 'orders', orphansDeleted: null, markersDeleted: 0, sweptJobs: null, queuedJobs: 5, errors: { Sweep: 'queue down' } })
    expect(summary.expired).not.toBeNull()
    expect(summary.metrics).toMatchObject({ Snapshots: 3, L0FileCountMax: 1 })
    expect(Object.keys(summary.timings)).toEqual(['Expire', 'Markers', 'Metrics', 'Sweep', 'Queue'])
    expect(failed).toEqual(['Sweep'])
  })

  it('without a queue has no Sweep or Queue step; the orphan task runs Orphans alone', async () => {
    const table = await tableWithRows()
    const base = { name: 'orders', table, now: Date.now(), orphanOlderThanMs: DEFAULT_ORPHAN_OLDER_THAN_MS, markerMaxAgeMs: 0, markerDir: 'markers/' }
    expect(Object.keys((await runMaintenancePass({ ...base, task: 'maintain' })).timings)).toEqual(['Expire', 'Markers', 'Metrics'])
    const orphans = await runMaintenancePass({ ...base, task: 'remove-orphans' })
    expect(orphans).toMatchObject({ orphansDeleted: 0, expired: null, markersDeleted: null, metrics: null, errors: {} })
    expect(Object.keys(orphans.timings)).toEqual(['Orphans'])
  })
})

describe('markers and metrics', () => {
  it('removes only the markers last written before now - maxAge', async () => {
    const store = new MemoryStore()
    await store.put('markers/a', new Uint8Array(1))
    await store.put('markers/b', new Uint8Array(1))
    await store.put('other/c', new Uint8Array(1))
    const now = Date.now()
    expect(await removeOldMarkers(store, 'markers/', now - 60_000, 0)).toBe(0)
    expect(await removeOldMarkers(store, 'markers/', now + 60_000, 0)).toBe(2)
    expect((await store.list('')).map((o) => o.key)).toEqual(['other/c'])
  })

  it('a table without snapshots has zero metrics', async () => {
    const table = await Table.create(new MemoryStore(), schemaFor('deduplicate'))
    expect(await tableMetrics(table, Date.now())).toEqual({ L0FileCountMax: 0, L0FileCountAvg: 0, FreshnessLag: 0, PostponedRows: 0, SortedRunsMax: 0, BackPressureBuckets: 0, DeletionVectorRows: 0, Snapshots: 0 })
  })
})
