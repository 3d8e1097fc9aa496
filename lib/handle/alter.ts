// Schema evolution: `strata alter`. A list of changes (Paimon's SchemaChange: add, rename,
// drop a column, update its type, nullability or comment, update the table comment) is
// applied to the latest schema and written as `schema/schema-(N+1)`, created only if absent,
// so that two alters racing for the same id cannot both land; the loser applies its changes
// again to the schema that won (Paimon's SchemaManager.commitChanges does the same). What
// Paimon refuses is refused here, type changes by Paimon's cast rules (docs/format.md
// "Schema evolution"); a refused alter writes nothing. Options change as Paimon's ALTER TABLE … SET /
// RESET: a value set is checked as create checks it, and what Paimon keeps fixed once the
// table has snapshots is refused (lib/table/options.ts optionChangeRefusal).

import type { ObjectStore } from '../store/object-store.ts'
import { inputErrorLike, RefusedError, StrataInputError } from '../errors.ts'
import { icebergOptions, icebergRefusal } from '../iceberg/options.ts'
import type { DataField, DataType, TableSchema } from '../types.ts'
import { assignFieldIds, isNestedType, parseDataType, typeLabel } from '../format/data-type.ts'
import { openStore } from '../store/open-store.ts'
import { allowedChanges, sameTypeIgnoringNull, typeChangeKind } from '../format/casts.ts'
import { checkOptionCombinations, isKnownOptionKey, optionChangeRefusal, runtimeOptionRefusal, validateOption, zstdEncoderAvailable } from '../table/options.ts'
import { deletionVectorsConflict } from '../merge/engines.ts'
import { schemaKey } from '../table/paths.ts'
import { SCHEMA_VERSION, checkPartitionNames, columnNameProblem, describeSchema, newFieldNameProblem, parseSchema, serializeSchema } from '../table/schema.ts'
import { Table, latestSchemaIdIn } from './table.ts'

/** Where an added column goes (Paimon's SchemaChange.Move): first, or after a field; default last. */
export type ColumnPosition = { first: true } | { after: string }

/** One change of a schema, as Paimon's SchemaChange names them. */
export type SchemaChange =
  | { kind: 'add-column'; name: string; type: string; comment?: string; position?: ColumnPosition }
  | { kind: 'rename-column'; name: string; newName: string }
  | { kind: 'drop-column'; name: string }
  /** a change Paimon allows (lib/format/casts.ts); the column keeps its nullability unless `type` ends in NOT NULL or NULL */
  | { kind: 'update-column-type'; name: string; type: string }
  | { kind: 'update-column-nullability'; name: string; nullable: boolean }
  /** null removes the comment */
  | { kind: 'update-column-comment'; name: string; comment: string | null }
  /** the table's comment; null removes it */
  | { kind: 'update-comment'; comment: string | null }
  /** Paimon's SchemaChange.setOption: `ALTER TABLE … SET ('key' = 'value')` */
  | { kind: 'set-option'; key: string; value: string }
  /** Paimon's SchemaChange.removeOption: `ALTER TABLE … RESET ('key')`; an option not set may be reset */
  | { kind: 'reset-option'; key: string }

/** What an alter needs to know besides the schema. */
export interface AlterContext {
  /** whether the table has a snapshot, after which Paimon keeps some options fixed (default true) */
  hasSnapshots?: boolean
  /** whether this Node can write zstd (default: node:zlib has zstdCompressSync) */
  zstdAvailable?: boolean
}

const CHANGE_KINDS = 'add-column, rename-column, drop-column, update-column-type, update-column-nullability, update-column-comment, update-comment, set-option or reset-option'

/** Per-field option suffixes whose key names the field (Paimon renames them with the column). */
const FIELD_OPTION_SUFFIXES = ['aggregate-function', 'ignore-retract', 'distinct', 'list-agg-delimiter']

function describeChange(c: SchemaChange): string {
  if (c.kind === 'update-comment') return `alter ${c.kind}`
  if (c.kind === 'set-option' || c.kind === 'reset-option') return `alter ${c.kind} '${c.key}'`
  return `alter ${c.kind} '${c.name}'`
}

/** Applies `changes` in order to `schema`, giving schema id + 1; throws StrataInputError naming the change and column. */
export function applySchemaChanges(schema: TableSchema, changes: readonly SchemaChange[], timeMillis = Date.now(), context: AlterContext = {}): TableSchema {
  if (changes.length === 0) throw new StrataInputError(`alter: expected at least one change (${CHANGE_KINDS})`)
  const ctx = { hasSnapshots: context.hasSnapshots ?? true, zstdAvailable: context.zstdAvailable ?? zstdEncoderAvailable() }
  const setKeys = new Set<string>()
  let fields: DataField[] = schema.fields.map((f) => ({ ...f }))
  let highestFieldId = schema.highestFieldId
  let primaryKeys = [...schema.primaryKeys]
  let options: Record<string, string> = { ...schema.options }
  let comment = schema.comment
  const partitionKeys = schema.partitionKeys
  for (const c of changes) {
    const where = describeChange(c)
    const fail = (problem: string): never => {
      throw new StrataInputError(`${where}: ${problem}`)
    }
    const names = () => fields.map((f) => f.name).join(', ')
    const existing = (name: string): number => {
      const i = fields.findIndex((f) => f.name === name)
      return i >= 0 ? i : fail(`no column '${name}' (columns: ${names()})`)
    }
    const freshName = (name: unknown, what: string): string => {
      if (typeof name !== 'string') return fail(`${what}: expected a column name (a string), got ${JSON.stringify(name)}`)
      const listProblem = columnNameProblem(name)
      if (listProblem) fail(`${what} ${JSON.stringify(name)}: ${listProblem}`)
      if (fields.some((f) => f.name === name)) fail(`${what}: column '${name}' already exists (columns: ${names()})`)
      const problem = newFieldNameProblem(name)
      if (problem) fail(`${what}: ${problem}`)
      return name
    }
    switch (c.kind) {
      case 'add-column': {
        const name = freshName(c.name, 'name')
        const type = parseDataType(c.type, `${where}: type`)
        if (!type.nullable) fail(`type ${JSON.stringify(c.type)}: an added column cannot be NOT NULL (rows written before have no value for it), as in Paimon; expected a nullable type`)
        // the column's id, then its ROW fields' (Paimon's SchemaManager: ReassignFieldId)
        const ids = { id: ++highestFieldId }
        const field: DataField = { id: ids.id, name, type: assignFieldIds(type, ids) }
        highestFieldId = ids.id
        if (c.comment !== undefined) field.description = c.comment
        let at = fields.length
        if (c.position && 'first' in c.position) at = 0
        else if (c.position && 'after' in c.position) at = existing(c.position.after) + 1
        else if (options['add-column-before-partition'] === 'true' && partitionKeys.length > 0) {
          // Paimon's option: a column added without a position goes before the first partition key
          const first = fields.findIndex((f) => partitionKeys.includes(f.name))
          if (first >= 0) at = first
        }
        fields.splice(at, 0, field)
        break
      }
      case 'rename-column': {
        const i = existing(c.name)
        if (partitionKeys.includes(c.name)) fail(`'${c.name}' is a partition key; Paimon cannot rename a partition column`)
        const newName = freshName(c.newName, 'new name')
        // an option Strata does not read would keep naming the old column: refused, not left stale
        const stale = Object.entries(options).find(([k, v]) => !isKnownOptionKey(k) && optionMayName(k, v, c.name))
        if (stale) {
          fail(
            `option '${stale[0]}' = ${JSON.stringify(stale[1])} may name column '${c.name}', and Strata does not know how to rename it there (it renames the column in the primary key, bucket-key, sequence.field and fields.<name>.{${FIELD_OPTION_SUFFIXES.join(',')}}); expected no such option: remove it, or rename the column with the tool that set it`,
          )
        }
        fields[i] = { ...fields[i], name: newName }
        primaryKeys = primaryKeys.map((k) => (k === c.name ? newName : k))
        options = renameInOptions(options, c.name, newName)
        break
      }
      case 'drop-column': {
        const i = existing(c.name)
        if (partitionKeys.includes(c.name) || primaryKeys.includes(c.name)) {
          fail(`'${c.name}' is a ${partitionKeys.includes(c.name) ? 'partition key' : 'primary key'} field; Paimon cannot drop a partition key or primary key (primary key: [${primaryKeys.join(', ')}])`)
        }
        if (fields.length === 1) fail('it is the only column; a table keeps at least one')
        fields = fields.filter((_, j) => j !== i)
        break
      }
      case 'update-column-type': {
        const i = existing(c.name)
        if (partitionKeys.includes(c.name)) fail(`'${c.name}' is a partition key; Paimon cannot update a partition column's type`)
        if (primaryKeys.includes(c.name)) fail(`'${c.name}' is a primary key field; Paimon cannot update a primary key's type`)
        fields[i] = { ...fields[i], type: newColumnType(c, fields[i].type, schema.options, where, fail) }
        break
      }
      case 'update-column-nullability': {
        const i = existing(c.name)
        if (typeof c.nullable !== 'boolean') fail(`nullable: expected true or false, got ${JSON.stringify(c.nullable)}`)
        if (c.nullable && primaryKeys.includes(c.name)) fail(`'${c.name}' is a primary key field, which is NOT NULL; Paimon cannot change the nullability of a primary key`)
        if (fields[i].type.nullable && !c.nullable) fail(notNullRefusal(c.name))
        fields[i] = { ...fields[i], type: { ...fields[i].type, nullable: c.nullable } }
        break
      }
      case 'update-column-comment': {
        const i = existing(c.name)
        if (c.comment !== null && typeof c.comment !== 'string') fail(`comment: expected a string or null, got ${JSON.stringify(c.comment)}`)
        const f: DataField = { id: fields[i].id, name: fields[i].name, type: fields[i].type }
        if (c.comment !== null) f.description = c.comment
        fields[i] = f
        break
      }
      case 'update-comment': {
        if (c.comment !== null && typeof c.comment !== 'string') fail(`comment: expected a string or null, got ${JSON.stringify(c.comment)}`)
        comment = c.comment ?? undefined
        break
      }
      case 'set-option':
      case 'reset-option':
        options = applyOptionChange(schema.options, options, c, ctx, setKeys, where)
        break
      default:
        throw new StrataInputError(`alter: unknown change ${JSON.stringify((c as { kind?: unknown }).kind)}; expected ${CHANGE_KINDS}`)
    }
  }
  const next: TableSchema = {
    version: SCHEMA_VERSION,
    id: schema.id + 1,
    fields,
    highestFieldId,
    partitionKeys: [...partitionKeys],
    primaryKeys,
    options,
    timeMillis,
  }
  if (comment !== undefined) next.comment = comment
  // what a reader of the stored file checks (keys, names, options against the fields, the
  // merge engine's field options): an option naming a dropped column fails here, as in Paimon
  let parsed: TableSchema
  try {
    parsed = parseSchema(serializeSchema(next), `alter: schema ${next.id}`)
  } catch (e) {
    if (e instanceof StrataInputError) throw inputErrorLike(e, `${e.message} (the schema these changes would make is invalid; nothing was written)`)
    throw e
  }
  checkAlteredOptions(parsed, changes, setKeys)
  return parsed
}

/**
 * A set-option or reset-option applied to `options` (Paimon's SchemaManager.generateTableSchema):
 * refused as Paimon refuses it, judged against the options before the alter (`before`); a
 * value set is checked as create checks it, and must be one this Node can write. Setting an
 * option to its value before the alter is Paimon's no-op: not checked, though the alter still
 * writes a new schema. `setKeys` collects the keys set.
 */
function applyOptionChange(
  before: Record<string, string>,
  options: Record<string, string>,
  c: Extract<SchemaChange, { kind: 'set-option' | 'reset-option' }>,
  ctx: Required<AlterContext>,
  setKeys: Set<string>,
  where: string,
): Record<string, string> {
  if (typeof c.key !== 'string' || c.key.trim() === '') throw new StrataInputError(`${where}: key: expected an option name (a non-empty string), got ${JSON.stringify(c.key)}`)
  const value = c.kind === 'set-option' ? c.value : undefined
  if (c.kind === 'set-option' && typeof value !== 'string') throw new StrataInputError(`${where}: value: expected a string, got ${JSON.stringify(value)}`)
  const out: Record<string, string> = { ...options }
  if (value === undefined) {
    const refusal = optionChangeRefusal(before, c.key, undefined, ctx.hasSnapshots)
    if (refusal) throw new RefusedError(`${where}: ${refusal}`)
    delete out[c.key]
    setKeys.delete(c.key)
    return out
  }
  if (before[c.key] !== value) {
    const refusal = optionChangeRefusal(before, c.key, value, ctx.hasSnapshots)
    if (refusal) throw new RefusedError(`${where}: ${refusal}`)
    try {
      validateOption(c.key, value)
    } catch (e) {
      if (e instanceof StrataInputError) throw inputErrorLike(e, `${where}: ${e.message}`)
      throw e
    }
    const runtime = runtimeOptionRefusal({ [c.key]: value }, ctx.zstdAvailable)
    if (runtime) throw new RefusedError(`${where}: ${runtime}`)
    setKeys.add(c.key)
  }
  Object.defineProperty(out, c.key, { value, enumerable: true, writable: true, configurable: true })
  return out
}

/**
 * What create checks across the options, for the schema an alter makes: the smallest row
 * within write.max-row-size (8 bytes a field) after any change; after an option change, the
 * combinations (lib/table/options.ts checkOptionCombinations), deletion vectors against the
 * merge engine, and a new partition.default-name against the partition directory limits.
 */
function checkAlteredOptions(parsed: TableSchema, changes: readonly SchemaChange[], setKeys: ReadonlySet<string>): void {
  const options = parsed.options
  const smallestRow = 8 * parsed.fields.length
  if (options['write.max-row-size'] !== undefined && describeSchema(parsed).options.maxRowBytes < smallestRow) {
    throw new StrataInputError(
      `alter: option 'write.max-row-size' is ${JSON.stringify(options['write.max-row-size'])}, expected at least ${smallestRow} bytes for the ${parsed.fields.length} fields after these changes (8 per field), or no row could be written; raise it first`,
    )
  }
  if (!changes.some((c) => c.kind === 'set-option' || c.kind === 'reset-option')) return
  try {
    checkOptionCombinations(options)
    const dvConflict = deletionVectorsConflict(options)
    if (dvConflict) throw new StrataInputError(dvConflict)
    if (setKeys.has('partition.default-name')) checkPartitionNames(parsed.partitionKeys, options)
  } catch (e) {
    if (e instanceof StrataInputError) throw inputErrorLike(e, `alter: ${e.message} (in the options these changes would make; nothing was written)`)
    throw e
  }
}

/**
 * The set-option and reset-option changes that turn options `stored` into `wanted`, sorted by
 * key: a set for each key of `wanted` whose value differs or is absent, a reset for each key
 * of `stored` not in `wanted`. Keys in `ignore` are left alone. Empty when they agree.
 */
export function optionChanges(stored: Record<string, string>, wanted: Record<string, string>, ignore: ReadonlySet<string> = new Set()): SchemaChange[] {
  const has = (o: Record<string, string>, k: string) => Object.prototype.hasOwnProperty.call(o, k)
  const keys = [...new Set([...Object.keys(stored), ...Object.keys(wanted)])].filter((k) => !ignore.has(k)).sort()
  const out: SchemaChange[] = []
  for (const key of keys) {
    if (!has(wanted, key)) out.push({ kind: 'reset-option', key })
    else if (!has(stored, key) || stored[key] !== wanted[key]) out.push({ kind: 'set-option', key, value: wanted[key] })
  }
  return out
}

/**
 * The type an update-column-type gives a column of type `old`: "BIGINT" keeps the column's
 * nullability, "BIGINT NOT NULL" / "BIGINT NULL" sets it; refused as Paimon refuses it.
 */
function newColumnType(c: Extract<SchemaChange, { kind: 'update-column-type' }>, old: DataType, options: Record<string, string>, where: string, fail: (problem: string) => never): DataType {
  const text = typeof c.type === 'string' ? c.type.trim() : c.type
  const parsed = parseDataType(text, `${where}: type`)
  // "BIGINT" keeps the column's nullability; "BIGINT NOT NULL" / "BIGINT NULL" sets it
  const explicit = typeof text === 'string' && /\bNULL$/i.test(text)
  const nullable = explicit ? parsed.nullable : old.nullable
  if (old.nullable && !nullable) fail(notNullRefusal(c.name))
  if (isNestedType(old) || isNestedType(parsed)) {
    // nested types keep their ROW field ids; Paimon's nested evolution rules are not carried over
    if (!sameTypeIgnoringNull(old, parsed)) {
      fail(`cannot change the type from ${typeLabel(old)} to ${typeLabel(parsed)}: Strata does not change the type of an ARRAY, MAP, MULTISET or ROW column, or make a column one; expected the same type (only its nullability may change)`)
    }
    return { ...old, nullable }
  }
  const type = { ...parsed, nullable }
  const refuse = (problem: string): never => {
    throw new RefusedError(`${where}: ${problem}`)
  }
  return checkTypeChange(c.name, old, type, options, fail, refuse)
}

/**
 * Paimon's check of a column's type change (SchemaManager, UpdateColumnType): allowed when
 * DataTypeCasts.supportsCast allows it, explicit casts unless the table's stored option
 * `disable-explicit-type-casting` is true, and CastExecutors has a cast for the pair
 * (lib/format/casts.ts). A table with Iceberg metadata takes only the changes its Iceberg
 * schema can follow without rewriting files (docs/format.md "Type changes").
 */
function checkTypeChange(name: string, old: DataType, type: DataType, options: Record<string, string>, fail: (problem: string) => never, refuse: (problem: string) => never): DataType {
  // Paimon reads the option with Boolean.parseBoolean
  const allowExplicit = (options['disable-explicit-type-casting'] ?? '').toLowerCase() !== 'true'
  if (typeChangeKind(old, type, allowExplicit) === null) {
    fail(`cannot change the type of '${name}' from ${typeLabel(old)} to ${typeLabel(type)}: Paimon has no such cast; from ${typeLabel(old)} it allows ${allowedChanges(old, allowExplicit)}`)
  }
  if (icebergOptions(options).storage !== 'disabled' && !sameTypeIgnoringNull(old, type) && !icebergKeepsValues(old, type)) {
    refuse(
      `cannot change the type of '${name}' from ${typeLabel(old)} to ${typeLabel(type)} while the table keeps Iceberg metadata ('metadata.iceberg.storage'): Iceberg readers would read the older files' values and bounds in the old type; expected a change Iceberg follows with the values unchanged (an integer type to a wider one, FLOAT → DOUBLE, DECIMAL(p, s) → DECIMAL(p2 >= p, s), CHAR/VARCHAR(n) → VARCHAR(m >= n), BINARY/VARBINARY(n) → VARBINARY(m >= n), TIMESTAMP(p) → TIMESTAMP(q >= p))`,
    )
  }
  return type
}

const INTEGER_RANK: Partial<Record<DataType['root'], number>> = { TINYINT: 0, SMALLINT: 1, INT: 2, BIGINT: 3 }

/** Whether Iceberg's schema evolution follows the change (same Iceberg type or a promotion) and no value changes. */
function icebergKeepsValues(from: DataType, to: DataType): boolean {
  const f = from.root
  const t = to.root
  const len = (x: DataType) => x.length ?? 1
  if (INTEGER_RANK[f] !== undefined && INTEGER_RANK[t] !== undefined) return INTEGER_RANK[t]! > INTEGER_RANK[f]!
  if (f === 'FLOAT' && t === 'DOUBLE') return true
  if (f === 'DECIMAL' && t === 'DECIMAL') return (to.scale ?? 0) === (from.scale ?? 0) && (to.precision ?? 10) >= (from.precision ?? 10)
  if (t === 'VARCHAR' && (f === 'VARCHAR' || f === 'CHAR')) return len(to) >= len(from)
  if (t === 'VARBINARY' && (f === 'VARBINARY' || f === 'BINARY')) return len(to) >= len(from)
  if (f === 'TIMESTAMP' && t === 'TIMESTAMP') return (to.precision ?? 6) >= (from.precision ?? 6)
  return false
}

function notNullRefusal(name: string): string {
  return `cannot make '${name}' NOT NULL: it is nullable, and rows already written may hold null; Paimon refuses nullable to NOT NULL by default ('alter-column-null-to-not-null.disabled'), and Strata always does`
}

/**
 * Paimon's renames in options: bucket-key, sequence.field, and fields.<name>.<suffix> keys
 * (SchemaManager.applyRenameColumnsToOptions). A list entry is compared trimmed, as its
 * readers trim it; `to` cannot contain ',' or end in whitespace (columnNameProblem).
 */
function renameInOptions(options: Record<string, string>, from: string, to: string): Record<string, string> {
  const out: Record<string, string> = {}
  const renameList = (v: string) => v.split(',').map((n) => (n.trim() === from ? to : n)).join(',')
  for (const [k, v] of Object.entries(options)) {
    if (k === 'bucket-key' || k === 'sequence.field') out[k] = renameList(v)
    else {
      const suffix = FIELD_OPTION_SUFFIXES.find((s) => k === `fields.${from}.${s}`)
      if (suffix) out[`fields.${to}.${suffix}`] = v
      else out[k] = v
    }
  }
  return out
}

/**
 * Whether another tool's option may name column `name`: as a '.'-separated part of its key
 * (fields.<name>.nested-key, file-index.bloom-filter.<name>.fpp) or as an entry of a
 * comma-separated value (changelog-producer.row-deduplicate-ignore-fields, *.columns).
 */
function optionMayName(key: string, value: string, name: string): boolean {
  return `.${key}.`.includes(`.${name}.`) || value.split(',').some((n) => n.trim() === name)
}

/** How many times an alter applies its changes again after losing the race for the next schema id. */
const ALTER_ATTEMPTS = 10

/**
 * Applies `changes` to the table's latest schema and writes it as the next `schema/schema-N`,
 * created only if absent; on a lost race, applies them again to the schema that won. Returns
 * a handle on the new schema. Nothing is written when a change is refused.
 */
export async function alterTable(store: ObjectStore | string | Table, changes: readonly SchemaChange[], opts: { zstdAvailable?: boolean } = {}): Promise<Table> {
  const s = store instanceof Table ? store.store : typeof store === 'string' ? openStore(store) : store
  const changesOptions = changes.some((c) => c.kind === 'set-option' || c.kind === 'reset-option')
  for (let attempt = 0; attempt < ALTER_ATTEMPTS; attempt++) {
    const table = await Table.open(s)
    // only option changes ask (Paimon asks lazily too); snapshot ids start at 1
    const hasSnapshots = changesOptions ? (await table.snapshots.latestId()) > 0 : true
    const next = applySchemaChanges(table.schema, changes, Date.now(), { hasSnapshots, zstdAvailable: opts.zstdAvailable })
    // a table with Iceberg metadata stays one Strata writes it for (docs/format.md "Iceberg metadata")
    const iceberg = icebergRefusal(next, table.uri)
    if (iceberg) throw new RefusedError(`alter: ${iceberg} (in the schema these changes would make; nothing was written)`)
    if (await table.store.putIfAbsent(schemaKey(next.id), new TextEncoder().encode(serializeSchema(next)))) return Table.open(table.store)
  }
  const latest = await latestSchemaIdIn(s)
  throw new StrataInputError(`alter: lost the race for the next schema id ${ALTER_ATTEMPTS} times (latest schema ${latest}); other alters keep landing, try again`)
}
