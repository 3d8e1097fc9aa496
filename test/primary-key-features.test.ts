// Issue 19's features together, against one simple model: random histories of writes,
// compactions, schema changes (add, rename, drop, widen), tags (create, delete) and snapshot
// expiration, then every retained snapshot, every tag and random incremental ranges read
// back and compared with the model. The model keeps each key's values by field id, so a
// file written under an older schema must read as the model says: a column added later is
// null, a dropped one is gone, a renamed one keeps its values, a widened one its numbers.
// Each feature has its own tests (schema-evolution, tags, incremental); this one checks
// that they hold when they meet: a tag over a snapshot written before an alter, an
// incremental range across an alter and a compaction, expiration under both. With deletion
// vectors each write is compacted at once (readers skip level 0), so every snapshot but a
// write's own shows its rows.

import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { compactTable } from '../lib/lsm/compact-table.ts'
import { expireSnapshots } from '../lib/maintenance/expire.ts'
import { deleteTag } from '../lib/maintenance/tag-deletion.ts'
import { readIncremental } from '../lib/read/incremental.ts'
import { readAll } from '../lib/read/table-read.ts'
import { MemoryStore } from '../lib/store/memory-store.ts'
import { alterTable } from '../lib/handle/alter.ts'
import { recordFromJson } from '../lib/table/json-values.ts'
import { Table } from '../lib/handle/table.ts'
import { createTag, listTags } from '../lib/handle/tags.ts'
import { ROW_KIND_SHORT, type Value } from '../lib/types.ts'
import { writeBatch } from '../lib/write/table-write.ts'
import { type Op, opArb, schemaFor } from './helpers/model.ts'

/** field id → value; a key's row in the model */
type ModelRow = Map<number, Value>
/** the model's table: key → row */
type Contents = Map<string, ModelRow>

type Cmd =
  | { t: 'write'; ops: Op[] }
  | { t: 'compact'; full: boolean }
  | { t: 'expire'; keep: number }
  | { t: 'add' }
  | { t: 'rename'; pick: number }
  | { t: 'drop'; pick: number }
  | { t: 'widen' }
  | { t: 'tag' }
  | { t: 'untag'; pick: number }

const cmdArb: fc.Arbitrary<Cmd> = fc.oneof(
  { weight: 6, arbitrary: fc.array(opArb('deduplicate', 6), { minLength: 1, maxLength: 5 }).map((ops) => ({ t: 'write' as const, ops })) },
  { weight: 2, arbitrary: fc.boolean().map((full) => ({ t: 'compact' as const, full })) },
  { weight: 1, arbitrary: fc.integer({ min: 1, max: 4 }).map((keep) => ({ t: 'expire' as const, keep })) },
  { weight: 2, arbitrary: fc.constant({ t: 'add' as const }) },
  { weight: 1, arbitrary: fc.nat().map((pick) => ({ t: 'rename' as const, pick })) },
  { weight: 1, arbitrary: fc.nat().map((pick) => ({ t: 'drop' as const, pick })) },
  { weight: 1, arbitrary: fc.constant({ t: 'widen' as const }) },
  { weight: 2, arbitrary: fc.constant({ t: 'tag' as const }) },
  { weight: 1, arbitrary: fc.nat().map((pick) => ({ t: 'untag' as const, pick })) },
)

/** The base columns' ids (test/helpers/model.ts's table: dt, id, a, b, c). */
const DT = 0, ID = 1, A = 2, B = 3, C = 4

/** A value as the reader returns it for a field of this type root. */
function asRead(root: string, v: Value): Value {
  if (v === null) return null
  if (root === 'BIGINT') return BigInt(v as number | bigint)
  return v
}

const show = (rows: Value[][]) => rows.map((r) => JSON.stringify(r, (_k, v) => (typeof v === 'bigint' ? `${v}n` : v))).sort()

describe("issue 19's features together against one model", () => {
  it('retained snapshots, tags and incremental ranges read as the model says, through alters, compactions, tag deletions and expirations', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(cmdArb, { minLength: 2, maxLength: 16 }), fc.boolean(), fc.nat(), fc.nat(), async (cmds, dv, r1, r2) => {
        let table = await Table.create(new MemoryStore(), schemaFor('deduplicate', { 'deletion-vectors.enabled': String(dv) }))
        const contents: Contents = new Map()
        /** snapshot id → the model's contents then (COMPACT snapshots repeat the last); null: not compared */
        const at = new Map<number, Contents | null>()
        /** snapshot id → the APPEND snapshot's changes: per key, the batch's last record, values by field id */
        const delta = new Map<number, { kind: string; row: ModelRow }[]>()
        /** tag name → the contents of its snapshot */
        const tags = new Map<string, Contents>()
        let added = 0
        let tagged = 0
        /** the value a write gives an added column: anything that differs by key and column */
        const addedValue = (op: Op, fieldId: number) => op.id * 100 + fieldId
        const recordAt = async (before: number) => {
          const after = await table.snapshots.latestId()
          for (let id = before + 1; id <= after; id++) if (!at.has(id)) at.set(id, new Map([...contents].map(([k, r]) => [k, new Map(r)])))
        }
        for (const c of cmds) {
          const before = await table.snapshots.latestId()
          const fields = table.schema.fields
          const valueFields = fields.filter((f) => f.id !== DT && f.id !== ID)
          if (c.t === 'write') {
            const base: Record<number, keyof Op> = { [DT]: 'dt', [ID]: 'id', [A]: 'a', [B]: 'b', [C]: 'c' }
            const rowOf = (op: Op): ModelRow => new Map(fields.map((f) => [f.id, base[f.id] !== undefined ? (op[base[f.id]] as Value) : addedValue(op, f.id)]))
            const records = c.ops.map((op, i) => {
              const json: Record<string, unknown> = { _kind: op._kind }
              for (const [id, v] of rowOf(op)) json[fields.find((f) => f.id === id)!.name] = v
              return recordFromJson(table.view, json, `op ${i}`)
            })
            const visible = new Map([...contents].map(([k, r]) => [k, new Map(r)]))
            const { snapshotId } = await writeBatch(table, records)
            // with deletion vectors readers skip level 0: the write shows once the compaction
            // the writer's job asks for has lifted it, as the compactor would at once
            if (dv) {
              at.set(snapshotId, visible)
              await compactTable(table)
              // one commit per bucket: those before the last show some buckets lifted, not compared
              const lifted = await table.snapshots.latestId()
              for (let id = snapshotId + 1; id < lifted; id++) at.set(id, null)
            }
            const last = new Map<string, Op>()
            for (const op of c.ops) last.set(`${op.dt}|${op.id}`, op)
            for (const [k, op] of last) {
              if (op._kind === '-U' || op._kind === '-D') contents.delete(k)
              else contents.set(k, rowOf(op))
            }
            delta.set(snapshotId, [...last.values()].map((op) => ({ kind: op._kind, row: rowOf(op) })))
          } else if (c.t === 'compact') {
            await compactTable(table, { full: c.full })
          } else if (c.t === 'expire') {
            await expireSnapshots(table, { numRetainedMin: c.keep, numRetainedMax: c.keep, timeRetainedMs: 0 })
          } else if (c.t === 'add') {
            table = await alterTable(table, [{ kind: 'add-column', name: `x${++added}`, type: 'BIGINT' }])
          } else if (c.t === 'rename' && valueFields.length > 0) {
            const f = valueFields[c.pick % valueFields.length]
            table = await alterTable(table, [{ kind: 'rename-column', name: f.name, newName: `${f.name}_r${++added}` }])
          } else if (c.t === 'drop' && valueFields.length > 1) {
            table = await alterTable(table, [{ kind: 'drop-column', name: valueFields[c.pick % valueFields.length].name }])
          } else if (c.t === 'widen') {
            const a = fields.find((f) => f.id === A)
            if (a && a.type.root === 'INT') table = await alterTable(table, [{ kind: 'update-column-type', name: a.name, type: 'BIGINT' }])
          } else if (c.t === 'tag' && before > 0) {
            const name = `t${++tagged}`
            await createTag(table, name)
            tags.set(name, at.get(before)!)
          } else if (c.t === 'untag' && tags.size > 0) {
            const name = [...tags.keys()][c.pick % tags.size]
            await deleteTag(table, name)
            tags.delete(name)
          }
          await recordAt(before)
        }

        // the model's rows in the current schema: a field the row has no value for reads null
        const fields = table.schema.fields
        const inSchema = (row: ModelRow): Value[] => fields.map((f) => asRead(f.type.root, row.has(f.id) ? row.get(f.id)! : null))
        const rowsOf = (c: Contents) => [...c.values()].map(inSchema)
        const latest = await table.snapshots.latestId()
        const earliest = latest === 0 ? 0 : await table.snapshots.earliestId()
        for (let id = earliest; id >= 1 && id <= latest; id++) {
          const want = at.get(id)
          if (want) expect(show(await readAll(table, { snapshotId: id })), `snapshot ${id}`).toEqual(show(rowsOf(want)))
        }
        expect((await listTags(table)).map((t) => t.name).sort()).toEqual([...tags.keys()].sort())
        for (const [name, c] of tags) expect(show(await readAll(table, { tag: name })), `tag ${name}`).toEqual(show(rowsOf(c)))
        if (latest > 0) {
          // an incremental range of the retained snapshots (Paimon's delta: raw, per commit)
          const lo = earliest - 1
          const a = lo + (r1 % (latest - lo + 1))
          const b = a + (r2 % (latest - a + 1))
          const want: Value[][] = []
          for (let id = a + 1; id <= b; id++) for (const ch of delta.get(id) ?? []) want.push([ch.kind, ...inSchema(ch.row)])
          const got = (await readIncremental(table, { fromSnapshot: a, toSnapshot: b, mode: 'delta' })).map((ch) => [ROW_KIND_SHORT[ch.kind], ...ch.row])
          expect(show(got), `delta (${a}, ${b}]`).toEqual(show(want))
        }
      }),
      { numRuns: 40 },
    )
  }, 120_000)
})
