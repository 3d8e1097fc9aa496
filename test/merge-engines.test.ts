// Each merge engine's descriptor (lib/merge/engines.ts) against what the engine does: the
// facts other modules read from a descriptor must be the engine's behaviour, not a second
// copy of it that could drift.

import { describe, expect, it } from 'vitest'
import { chooseMergePath } from '../lib/lsm/columnar-merge.ts'
import { LookupChangelog } from '../lib/lsm/lookup-changelog.ts'
import { MERGE_ENGINES, changelogProducerConflict, deletionVectorsConflict } from '../lib/merge/engines.ts'
import type { MergeEngineDescriptor } from '../lib/merge/descriptor.ts'
import { optionKeysOfMergeEngines, parseMergeEngineConfig } from '../lib/merge/merge-config.ts'
import { createLookupMergeFunction, createMergeFunction } from '../lib/merge/merge-function.ts'
import type { MergeEngineConfig, MergeFunction } from '../lib/merge/merge-types.ts'
import { createSchema } from '../lib/table/schema.ts'
import { isKnownOptionKey, validateOptions } from '../lib/table/options.ts'
import { StrataInputError } from '../lib/errors.ts'
import { RowKind, type DataField, type KeyValue } from '../lib/types.ts'

// id INT NOT NULL (primary key), v INT, s STRING
const FIELDS: DataField[] = [
  { id: 0, name: 'id', type: { root: 'INT', nullable: false } },
  { id: 1, name: 'v', type: { root: 'INT', nullable: true } },
  { id: 2, name: 's', type: { root: 'VARCHAR', nullable: true, length: 2147483647 } },
]
const KINDS = [RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE]
const ADDS = [RowKind.INSERT, RowKind.UPDATE_AFTER]

const cfgOf = (e: MergeEngineDescriptor, options: Record<string, string> = {}): MergeEngineConfig =>
  parseMergeEngineConfig(FIELDS, ['id'], { 'merge-engine': e.name, ...options })
const rec = (seq: number, kind: RowKind, v: number | null, s: string | null = null): KeyValue => ({ key: [1], seq: BigInt(seq), kind, value: [1, v, s] })

function fold(mf: MergeFunction, records: KeyValue[]): KeyValue | null {
  mf.reset()
  for (const r of records) mf.add(r)
  return mf.result()
}

function throws(f: () => unknown): boolean {
  try {
    f()
    return false
  } catch (e) {
    if (!(e instanceof StrataInputError)) throw e
    return true
  }
}

describe.each(MERGE_ENGINES.map((e) => [e.name, e] as const))('merge engine %s: its descriptor says what it does', (_name, engine) => {
  it("columnar: the columnar path takes the engine exactly when the descriptor has a columnar fact, and keeps: 'last' means the later record stands as it is", () => {
    expect(chooseMergePath(cfgOf(engine)).path).toBe(engine.columnar === null ? 'row' : 'columnar')
    if (engine.columnar === null) return
    // b has a null where a has a value: only an engine that keeps the last record whole returns b itself
    const a = rec(1, RowKind.INSERT, 1, 'a')
    const b = rec(2, RowKind.INSERT, null, 'b')
    expect(fold(createMergeFunction(cfgOf(engine)), [a, b]) === b).toBe(engine.columnar.keeps === 'last')
  })

  it('columnar keepsAlone: a lone add record merges to itself exactly for the kinds it names', () => {
    const columnar = engine.columnar
    if (columnar === null || columnar.keeps !== 'fold') return
    for (const kind of ADDS) {
      const lone = rec(5, kind, 7, 'x')
      for (const mf of [createMergeFunction(cfgOf(engine)), createLookupMergeFunction(cfgOf(engine))]) {
        const out = fold(mf, [lone])
        const unchanged = out !== null && out.kind === lone.kind && out.seq === lone.seq && JSON.stringify(out.value) === JSON.stringify(lone.value)
        expect(unchanged, `kind ${kind}`).toBe(columnar.keepsAlone(kind))
      }
    }
  })

  it('keepsOneRecord: a merge of two records returns one of them whole, or a record of its own', () => {
    const a = rec(1, RowKind.INSERT, 1, 'a')
    const b = rec(2, RowKind.INSERT, null, 'b')
    const out = fold(createMergeFunction(cfgOf(engine)), [a, b])
    expect(out === a || out === b).toBe(engine.keepsOneRecord)
  })

  it('lookup.newerReplacesOlder: the newer record replaces the older whole', () => {
    const older = rec(1, RowKind.INSERT, 1, 'a')
    const newer = rec(2, RowKind.INSERT, null, 'b')
    expect(fold(createMergeFunction(cfgOf(engine)), [older, newer]) === newer).toBe(engine.lookup.newerReplacesOlder)
  })

  it('lookup.changelog: an update of a key the levels above 0 hold gives -U/+U, or nothing for new-keys engines', () => {
    const changes = new LookupChangelog(cfgOf(engine), false).changes([rec(1, RowKind.INSERT, 1, 'a')], rec(2, RowKind.INSERT, 2, 'b'))
    expect(changes.map((c) => c.kind)).toEqual(engine.lookup.changelog === 'new-keys' ? [] : [RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER])
  })

  it('refusals.retractions: the merge function refuses some retraction exactly when the descriptor says it may', () => {
    // aggregation: an aggregate function that cannot retract
    const cfg = cfgOf(engine, engine.name === 'aggregation' ? { 'fields.v.aggregate-function': 'max' } : {})
    const refused = KINDS.filter((k) => k === RowKind.UPDATE_BEFORE || k === RowKind.DELETE).some((kind) =>
      throws(() => fold(createMergeFunction(cfg), [rec(1, RowKind.INSERT, 1), rec(2, kind, 1)])),
    )
    expect(refused).toBe(engine.refusals.retractions)
  })

  it('refusals.sequenceField: sequence.field is refused exactly when the descriptor says so, with its message', () => {
    const err = (() => {
      try {
        cfgOf(engine, { 'sequence.field': 'v' })
        return null
      } catch (e) {
        return e as Error
      }
    })()
    if (engine.refusals.sequenceField === null) expect(err).toBeNull()
    else expect(err?.message).toContain(engine.refusals.sequenceField)
  })

  it('refusals.deletionVectors: create refuses deletion vectors exactly when the descriptor says so', () => {
    const options = { 'merge-engine': engine.name, 'deletion-vectors.enabled': 'true' }
    const create = () => createSchema({ fields: [{ name: 'id', type: 'INT' }, { name: 'v', type: 'INT' }], primaryKeys: ['id'], options })
    expect(throws(create)).toBe(engine.refusals.deletionVectors !== null)
    expect(deletionVectorsConflict(options) !== null).toBe(engine.refusals.deletionVectors !== null)
    if (engine.refusals.deletionVectors !== null) expect(() => create()).toThrow(engine.refusals.deletionVectors)
  })

  it('refusals.changelogProducers: options validation takes exactly the producers the descriptor accepts', () => {
    for (const producer of ['none', 'input', 'lookup']) {
      const options = { 'merge-engine': engine.name, 'changelog-producer': producer }
      const accepted = engine.refusals.changelogProducers === null || engine.refusals.changelogProducers.includes(producer)
      expect(throws(() => validateOptions(options)), producer).toBe(!accepted)
      expect(changelogProducerConflict(options) === null, producer).toBe(accepted)
    }
  })

  it('option keys: every key it reads is known to the options table and read by its parser', () => {
    const { exact, patterns } = optionKeysOfMergeEngines()
    const fieldKeys = Object.keys(engine.fieldOptions).map((suffix) => `fields.v.${suffix}`)
    for (const key of [...engine.optionKeys, ...fieldKeys]) {
      expect(isKnownOptionKey(key), key).toBe(true)
      expect(exact.includes(key) || patterns.some((p) => p.test(key)), key).toBe(true)
      // the engine's parser reads it: a delimiter lands in the config, any other key refuses a value it cannot take, naming the key
      if (key.endsWith('.list-agg-delimiter')) expect(cfgOf(engine, { [key]: ';' }).aggregations[1].listAggDelimiter).toBe(';')
      else expect(() => cfgOf(engine, { [key]: 'no such value' }), key).toThrow(key)
    }
    for (const key of Object.keys(engine.refusals.optionKeys)) expect(engine.optionKeys).toContain(key)
    for (const suffix of Object.keys(engine.refusals.fieldOptions)) expect(Object.keys(engine.fieldOptions)).toContain(suffix)
  })
})

describe('the merge engines', () => {
  it('are the four Paimon engines Strata implements, each once', () => {
    expect(MERGE_ENGINES.map((e) => e.name)).toEqual(['deduplicate', 'partial-update', 'aggregation', 'first-row'])
  })
  it('every merge option key is known to the options table', () => {
    const { exact } = optionKeysOfMergeEngines()
    expect(exact.filter((k) => !isKnownOptionKey(k))).toEqual([])
  })
})
