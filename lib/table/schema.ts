// Table schemas: built from the user's schema JSON, stored as Paimon's `schema/schema-N`
// (TableSchema version 3, docs/format.md "Schema files"), and viewed as the field positions the
// engine needs (partition, trimmed primary key, bucket key).

import { inputErrorLike, RefusedError, StrataInputError } from '../errors.ts'
import type { DataField, DataType, TableSchema } from '../types.ts'
import { escapePathName } from '../format/partition-path.ts'
import { parseMergeEngineConfig } from '../merge/merge-config.ts'
import { assignFieldIds, dataTypeJson, isNestedType, nestedFieldIds, nestedIdsKnown, parseDataType, typeLabel, withNullable } from '../format/data-type.ts'
import { type CoreOptions, coreOptions, validateOptions, validateStoredOptions } from './options.ts'
import { deletionVectorsConflict } from '../merge/engines.ts'
import { MAX_PARTITION_DIR_BYTES, MAX_PARTITION_PATH_BYTES } from './paths.ts'

export const SCHEMA_VERSION = 3

/** Names Paimon reserves for system fields, besides the `_KEY_` prefix (api:table/SpecialFields.java). */
const PAIMON_SYSTEM_NAMES = new Set(['_SEQUENCE_NUMBER', '_VALUE_KIND', '_LEVEL', 'rowkind', '_ROW_ID'])
const KEY_FIELD_PREFIX = '_KEY_'

/** Keys of Strata's JSON lines that are not columns: a field of that name could never be set. */
const JSON_LINE_KEYS = new Map([
  ['_kind', 'the row kind'],
  ['_table', "the writer's table name"],
])

/** Paimon counts field ids from this one up as system fields (SpecialFields.SYSTEM_FIELD_ID_START). */
const SYSTEM_FIELD_ID_START = Math.floor(2147483647 / 2)

const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/

/**
 * What a reader of a comma-separated column list strips from each entry: JavaScript's trim
 * (Strata's bucket-key) and Java's String.trim, every char up to U+0020 (Paimon's lists).
 */
const LIST_ENTRY_EDGE = /^[\s\u0000-\u0020]+|[\s\u0000-\u0020]+$/g

/**
 * Why `name` cannot name a column Strata creates or renames to, or null. Options such as
 * bucket-key and sequence.field list column names separated by ',' and their readers trim
 * each entry, so a name with ',' or with whitespace or a control character at either end
 * would read as other columns (a rename writes the new name into them). Paimon refuses only
 * blank names (RowType) and splits the same lists on ','; Strata is stricter, so that no
 * name it accepts is misread. A stored schema with such a name is still read.
 */
export function columnNameProblem(name: string): string | null {
  const trimmed = name.replace(LIST_ENTRY_EDGE, '')
  if (trimmed === '') return 'a column name may not be blank; expected a name with at least one character other than whitespace or a control character (Paimon refuses blank names too)'
  if (name.includes(',')) return "a column name may not contain ',' (options such as bucket-key and sequence.field list column names separated by commas); expected a name without ','"
  if (trimmed !== name) {
    return `a column name may not start or end with whitespace or a control character (readers of column lists such as bucket-key and sequence.field trim each entry, so it would read as ${JSON.stringify(trimmed)}); expected ${JSON.stringify(trimmed)}`
  }
  return null
}

/** Why `name` cannot name a new field (a Paimon system name, a JSON-line key, not well-formed), or null. */
export function newFieldNameProblem(name: string): string | null {
  const problem = systemNameProblem(name)
  if (problem) return problem
  if (JSON_LINE_KEYS.has(name)) {
    return `'${name}' is a key of Strata's JSON lines (${JSON_LINE_KEYS.get(name)}), so no write could set the field; expected another name (reserved: ${[...JSON_LINE_KEYS.keys()].join(', ')})`
  }
  return null
}

function systemNameProblem(name: string): string | null {
  if (PAIMON_SYSTEM_NAMES.has(name) || name.startsWith(KEY_FIELD_PREFIX)) {
    return `'${name}' is a Paimon system field name (reserved: ${KEY_FIELD_PREFIX}*, ${[...PAIMON_SYSTEM_NAMES].join(', ')})`
  }
  // Parquet column names are UTF-8: a lone surrogate would not survive the round trip
  if (LONE_SURROGATE.test(name)) return `${JSON.stringify(name)} is not well-formed Unicode (a lone surrogate)`
  return null
}

export interface SchemaInput {
  fields: { name: string; type: string | object; description?: string }[]
  primaryKeys: string[]
  partitionKeys?: string[]
  options?: Record<string, string>
  comment?: string
}

function stringList(v: unknown, where: string): string[] {
  if (v === undefined) return []
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    throw new StrataInputError(`${where}: expected an array of field names, got ${JSON.stringify(v)}`)
  }
  return v as string[]
}

/** Builds schema 0 of a new table from the user's JSON, validating everything Paimon would. */
export function createSchema(input: unknown, timeMillis = Date.now()): TableSchema {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    throw new StrataInputError(`schema: expected an object with fields, primaryKeys, partitionKeys and options, got ${JSON.stringify(input)}`)
  }
  const obj = input as Record<string, unknown>
  for (const key of Object.keys(obj)) {
    if (!['fields', 'primaryKeys', 'partitionKeys', 'options', 'comment'].includes(key)) {
      throw new StrataInputError(`schema: unknown key '${key}'; expected fields, primaryKeys, partitionKeys, options, comment`)
    }
  }
  if (!Array.isArray(obj.fields) || obj.fields.length === 0) {
    throw new StrataInputError(`schema.fields: expected a non-empty array of {"name", "type"}, got ${JSON.stringify(obj.fields)}`)
  }
  const primaryKeys = stringList(obj.primaryKeys, 'schema.primaryKeys')
  const partitionKeys = stringList(obj.partitionKeys, 'schema.partitionKeys')
  const names = new Set<string>()
  const ids = { id: -1 }
  const fields: DataField[] = obj.fields.map((f: unknown, i: number) => {
    const where = `schema.fields[${i}]`
    if (typeof f !== 'object' || f === null) throw new StrataInputError(`${where}: expected {"name", "type"}, got ${JSON.stringify(f)}`)
    const { name, type, description } = f as Record<string, unknown>
    if (typeof name !== 'string') throw new StrataInputError(`${where}.name: expected a string, got ${JSON.stringify(name)}`)
    const nameProblem = columnNameProblem(name)
    if (nameProblem) throw new StrataInputError(`${where}.name ${JSON.stringify(name)}: ${nameProblem}`)
    if (names.has(name)) throw new StrataInputError(`${where}.name: field '${name}' is defined twice`)
    const problem = systemNameProblem(name)
    if (problem) throw new StrataInputError(`${where}.name: ${problem}`)
    if (JSON_LINE_KEYS.has(name)) {
      throw new StrataInputError(
        `${where}.name: '${name}' is a key of Strata's JSON lines (${JSON_LINE_KEYS.get(name)}), so no write could set the field; expected another name (reserved: ${[...JSON_LINE_KEYS.keys()].join(', ')})`,
      )
    }
    names.add(name)
    let dataType = parseDataType(type, `${where}.type (field '${name}')`)
    // Primary-key fields are stored NOT NULL (api:schema/Schema.java normalizeFields).
    if (primaryKeys.includes(name)) dataType = withNullable(dataType, false)
    // ids as Paimon's Schema.Builder gives them: the column's, then its ROW fields' (ReassignFieldId)
    const id = ++ids.id
    const field: DataField = { id, name, type: assignFieldIds(dataType, ids) }
    if (typeof description === 'string') field.description = description
    return field
  })
  for (const [list, what] of [[primaryKeys, 'primaryKeys'], [partitionKeys, 'partitionKeys']] as const) {
    const problem = nestedKeyProblem(fields, list, what === 'primaryKeys' ? 'primary key' : 'partition')
    if (problem) throw new RefusedError(`schema.${what}: ${problem}`)
  }
  if (primaryKeys.length === 0) {
    throw new StrataInputError('schema.primaryKeys: Strata tables are primary-key tables; name at least one primary key field')
  }
  for (const [list, where] of [[primaryKeys, 'primaryKeys'], [partitionKeys, 'partitionKeys']] as const) {
    const seen = new Set<string>()
    for (const k of list) {
      if (!names.has(k)) throw new StrataInputError(`schema.${where}: '${k}' is not a field of the table (fields: ${[...names].join(', ')})`)
      if (seen.has(k)) throw new StrataInputError(`schema.${where}: '${k}' is listed twice`)
      seen.add(k)
    }
  }
  for (const k of partitionKeys) {
    if (!primaryKeys.includes(k)) {
      throw new StrataInputError(
        `schema.partitionKeys: partition key '${k}' is not part of the primary key [${primaryKeys.join(', ')}]; as in Paimon, a primary-key table's partition keys must be primary key fields`,
      )
    }
  }
  for (const k of partitionKeys) {
    const f = fields.find((x) => x.name === k)!
    if (f.type.root === 'BINARY' || f.type.root === 'VARBINARY') {
      // Paimon names the directory after Java's byte[].toString(), an identity hash
      throw new StrataInputError(`schema.partitionKeys: partition key '${k}' has type ${f.type.root}, which cannot name a partition directory; use a STRING or numeric field`)
    }
  }
  if (primaryKeys.every((k) => partitionKeys.includes(k))) {
    throw new StrataInputError('schema.primaryKeys: the primary key must have at least one field that is not a partition key')
  }
  if (obj.options !== undefined && obj.options !== null && (typeof obj.options !== 'object' || Array.isArray(obj.options))) {
    throw new StrataInputError(`schema.options: expected an object of string values, got ${JSON.stringify(obj.options)}`)
  }
  const options = validateOptions(obj.options)
  const dvConflict = deletionVectorsConflict(options)
  if (dvConflict) throw new StrataInputError(`schema.options: ${dvConflict}`)
  // stored explicitly: a schema without it is dynamic bucket mode to Paimon (unwritableReasons)
  options.bucket ??= '1'
  checkPartitionNames(partitionKeys, options)
  const schema: TableSchema = {
    version: SCHEMA_VERSION,
    id: 0,
    fields,
    highestFieldId: ids.id,
    partitionKeys,
    primaryKeys,
    options,
    timeMillis,
  }
  if (typeof obj.comment === 'string') schema.comment = obj.comment
  const view = describeSchema(schema) // validates the bucket key and merge-engine options against the fields
  // the smallest row (nulls, empty strings, fixed-width values) counts at most 8 bytes a field
  const smallestRow = 8 * fields.length
  if (options['write.max-row-size'] !== undefined && view.options.maxRowBytes < smallestRow) {
    throw new StrataInputError(
      `option 'write.max-row-size': invalid value ${JSON.stringify(options['write.max-row-size'])}, expected at least ${smallestRow} bytes (8 per field of this schema), or no row could be written`,
    )
  }
  return schema
}

/**
 * The writer refuses a partition directory name (`key=value`, escaped) or path past the
 * limits in paths.ts (lib/write/table-write.ts, unstorablePartition). A table whose
 * partition key names leave no room for a one-byte value, or for the default name of a
 * blank value, could not store those rows: refused here.
 */
export function checkPartitionNames(partitionKeys: string[], options: Record<string, string>): void {
  const keyBytes = partitionKeys.map((k) => Buffer.byteLength(escapePathName(k)))
  partitionKeys.forEach((k, i) => {
    if (keyBytes[i] + 2 > MAX_PARTITION_DIR_BYTES) {
      throw new StrataInputError(
        `schema.partitionKeys: partition key '${k.length > 40 ? `${k.slice(0, 37)}...` : k}' is ${keyBytes[i]} bytes escaped; expected at most ${MAX_PARTITION_DIR_BYTES - 2}, so that its directory name (key=value) fits in ${MAX_PARTITION_DIR_BYTES} bytes`,
      )
    }
  })
  // key=v/ for each key, with a one-byte value
  const shortestPath = keyBytes.reduce((sum, b) => sum + b + 3, 0)
  if (shortestPath > MAX_PARTITION_PATH_BYTES) {
    throw new StrataInputError(`schema.partitionKeys: the partition key names take ${shortestPath} bytes of a partition path; expected at most ${MAX_PARTITION_PATH_BYTES} with one-byte values`)
  }
  const defaultName = options['partition.default-name']
  if (defaultName !== undefined && partitionKeys.length > 0) {
    const room = MAX_PARTITION_DIR_BYTES - 1 - Math.max(...keyBytes)
    const bytes = Buffer.byteLength(escapePathName(defaultName))
    if (bytes > room) {
      throw new StrataInputError(`option 'partition.default-name': invalid value of ${bytes} bytes escaped, expected at most ${room} (the directory name of a blank partition value, key=default, fits in ${MAX_PARTITION_DIR_BYTES} bytes)`)
    }
  }
}

/** Paimon's pretty-printed schema JSON (field order of api:schema/SchemaSerializer.java). */
export function serializeSchema(s: TableSchema): string {
  const out: Record<string, unknown> = {
    version: s.version,
    id: s.id,
    fields: s.fields.map((f) => {
      const o: Record<string, unknown> = { id: f.id, name: f.name, type: dataTypeJson(f.type) }
      if (f.description !== undefined) o.description = f.description
      return o
    }),
    highestFieldId: s.highestFieldId,
    partitionKeys: s.partitionKeys,
    primaryKeys: s.primaryKeys,
    options: s.options,
  }
  if (s.comment !== undefined) out.comment = s.comment
  out.timeMillis = s.timeMillis
  return JSON.stringify(out, null, 2)
}

/**
 * Reads a stored `schema/schema-N`, which another tool may have written. Anything Strata
 * cannot read safely is a StrataInputError naming the file and the field; options must parse
 * as their types and not go below the minimums the code relies on (the maximums and the
 * cross-checks are create's; coreOptions reads odd stored values as Paimon does), and other
 * tools' option keys pass.
 */
export function parseSchema(text: string, where: string): TableSchema {
  const fail = (field: string, problem: string): never => {
    throw new StrataInputError(`${where}: '${field}': ${problem}`)
  }
  let j: unknown
  try {
    j = JSON.parse(text)
  } catch (e) {
    throw new StrataInputError(`${where}: not valid JSON (${(e as Error).message})`, { cause: e })
  }
  if (!isPlainObject(j)) throw new StrataInputError(`${where}: expected a JSON object (a Paimon TableSchema), got ${describe(j)}`)
  const integer = (field: string, v: unknown, min: number, max: number): number =>
    typeof v === 'number' && Number.isSafeInteger(v) && v >= min && v <= max ? v : fail(field, `expected an integer in ${min}..${max}, got ${describe(v)}`)
  if (!Array.isArray(j.fields) || j.fields.length === 0) fail('fields', `expected a non-empty array of fields, got ${describe(j.fields)}`)
  const names = new Set<string>()
  const ids = new Set<number>()
  const fields: DataField[] = (j.fields as unknown[]).map((f, i) => {
    const at = `fields[${i}]`
    if (!isPlainObject(f)) return fail(at, `expected an object with id, name and type, got ${describe(f)}`)
    const id = integer(`${at}.id`, f.id, 0, SYSTEM_FIELD_ID_START - 1)
    if (ids.has(id)) fail(`${at}.id`, `id ${id} is used twice`)
    ids.add(id)
    const name = typeof f.name === 'string' && f.name !== '' ? f.name : fail(`${at}.name`, `expected a non-empty string, got ${describe(f.name)}`)
    if (names.has(name)) fail(`${at}.name`, `field '${name}' is defined twice`)
    names.add(name)
    const problem = systemNameProblem(name)
    if (problem) fail(`${at}.name`, problem)
    const typeAt = `${where}: '${at}.type' (field '${name}')`
    const field: DataField = { id, name, type: parseDataType(f.type, typeAt) }
    if (nestedIdsKnown(field.type) !== true) fail(`${at}.type`, `field '${name}': every ROW field inside a nested type needs its "id" (Paimon writes one for each)`)
    for (const nestedId of nestedFieldIds(field.type)) {
      if (nestedId >= SYSTEM_FIELD_ID_START) fail(`${at}.type`, `field '${name}': nested field id ${nestedId} is in Paimon's system range (from ${SYSTEM_FIELD_ID_START})`)
      if (ids.has(nestedId)) fail(`${at}.type`, `field '${name}': id ${nestedId} is used twice`)
      ids.add(nestedId)
    }
    if (f.description !== undefined) {
      field.description = typeof f.description === 'string' ? f.description : fail(`${at}.description`, `expected a string, got ${describe(f.description)}`)
    }
    return field
  })
  const keyList = (field: 'primaryKeys' | 'partitionKeys'): string[] => {
    const v = j[field] ?? []
    if (!Array.isArray(v)) return fail(field, `expected an array of field names, got ${describe(v)}`)
    const seen = new Set<string>()
    for (const k of v) {
      if (typeof k !== 'string' || !names.has(k)) fail(field, `${describe(k)} is not a field (fields: ${[...names].join(', ')})`)
      if (seen.has(k)) fail(field, `'${k}' is listed twice`)
      seen.add(k)
    }
    return v as string[]
  }
  const primaryKeys = keyList('primaryKeys')
  const partitionKeys = keyList('partitionKeys')
  if (primaryKeys.length === 0) fail('primaryKeys', 'Strata reads primary-key tables only, and this schema has no primary key')
  for (const k of partitionKeys) {
    if (!primaryKeys.includes(k)) fail('partitionKeys', `partition key '${k}' is not part of the primary key [${primaryKeys.join(', ')}]`)
  }
  if (primaryKeys.every((k) => partitionKeys.includes(k))) fail('primaryKeys', 'expected at least one field that is not a partition key')
  for (const [list, what] of [[primaryKeys, 'primaryKeys'], [partitionKeys, 'partitionKeys']] as const) {
    const problem = nestedKeyProblem(fields, list, what === 'primaryKeys' ? 'primary key' : 'partition')
    if (problem) fail(what, problem)
  }
  const rawOptions = j.options ?? {}
  if (!isPlainObject(rawOptions)) fail('options', `expected an object of string values, got ${describe(rawOptions)}`)
  const options: Record<string, string> = {}
  for (const [k, v] of Object.entries(rawOptions as Record<string, unknown>)) {
    if (typeof v !== 'string') fail('options', `option '${k}' must be a string, got ${describe(v)}`)
    Object.defineProperty(options, k, { value: v, enumerable: true, writable: true, configurable: true })
  }
  validateStoredOptions(options, where)
  const maxId = Math.max(...ids)
  const s: TableSchema = {
    version: j.version === undefined ? 1 : integer('version', j.version, 1, 2147483647),
    id: j.id === undefined ? 0 : integer('id', j.id, 0, Number.MAX_SAFE_INTEGER),
    fields,
    highestFieldId: j.highestFieldId === undefined ? maxId : integer('highestFieldId', j.highestFieldId, 0, 2147483647),
    partitionKeys,
    primaryKeys,
    options,
    timeMillis: j.timeMillis === undefined ? 0 : integer('timeMillis', j.timeMillis, Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
  }
  if (j.comment !== undefined && j.comment !== null) s.comment = typeof j.comment === 'string' ? j.comment : fail('comment', `expected a string, got ${describe(j.comment)}`)
  try {
    // the bucket key and the merge engine's options, against the fields
    describeSchema(s)
    parseMergeEngineConfig(s.fields, s.primaryKeys, s.options)
  } catch (e) {
    if (e instanceof StrataInputError) throw inputErrorLike(e, `${where}: ${e.message}`)
    throw e
  }
  return s
}

/**
 * Why a field named in `list` (primary or partition keys) cannot be one, or null: Paimon
 * refuses ARRAY, MAP, MULTISET and ROW there (SchemaValidation.validateOnlyContainPrimitiveType).
 */
export function nestedKeyProblem(fields: DataField[], list: string[], what: string): string | null {
  for (const k of list) {
    const f = fields.find((x) => x.name === k)
    if (f && isNestedType(f.type)) return `${what} field '${k}' has type ${typeLabel(f.type)}; as in Paimon, a ${what} field must not be ARRAY, MAP, MULTISET or ROW`
  }
  return null
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function describe(v: unknown): string {
  const text = JSON.stringify(v)
  if (text === undefined) return String(v)
  return text.length > 60 ? `${text.slice(0, 57)}...` : text
}

/** Positions and types the engine uses for a schema, derived once per table open. */
export interface SchemaView {
  schema: TableSchema
  options: CoreOptions
  fields: DataField[]
  fieldIndex: Map<string, number>
  fieldTypes: DataType[]
  partitionFields: DataField[]
  partitionIndexes: number[]
  /** trimmed primary key: primary keys minus partition keys, in primary-key order */
  keyFields: DataField[]
  keyIndexes: number[]
  keyTypes: DataType[]
  bucketKeyIndexes: number[]
  bucketKeyTypes: DataType[]
}

/** The positions of `columns` (default all) in the view's fields; an unknown name is refused, naming the table's columns. */
export function columnIndexes(view: Pick<SchemaView, 'fields' | 'fieldIndex'>, columns?: readonly string[]): number[] {
  if (columns === undefined) return view.fields.map((_, i) => i)
  return columns.map((c) => {
    const i = view.fieldIndex.get(c)
    if (i === undefined) throw new StrataInputError(`columns: unknown column '${c}' (columns: ${view.fields.map((f) => f.name).join(', ')})`)
    return i
  })
}

export function describeSchema(schema: TableSchema): SchemaView {
  const options = coreOptions(schema.options)
  const fieldIndex = new Map(schema.fields.map((f, i) => [f.name, i]))
  const idx = (names: string[]) => names.map((n) => fieldIndex.get(n)!)
  const partitionIndexes = idx(schema.partitionKeys)
  const trimmed = schema.primaryKeys.filter((k) => !schema.partitionKeys.includes(k))
  const keyIndexes = idx(trimmed)
  let bucketKeyIndexes = keyIndexes
  if (options.bucketKey) {
    for (const k of options.bucketKey) {
      if (!trimmed.includes(k)) {
        throw new StrataInputError(
          `option 'bucket-key': '${k}' is not a primary key field outside the partition keys (expected a subset of [${trimmed.join(', ')}])`,
        )
      }
    }
    bucketKeyIndexes = idx(options.bucketKey)
  }
  const fieldTypes = schema.fields.map((f) => f.type)
  return {
    schema,
    options,
    fields: schema.fields,
    fieldIndex,
    fieldTypes,
    partitionFields: partitionIndexes.map((i) => schema.fields[i]),
    partitionIndexes,
    keyFields: keyIndexes.map((i) => schema.fields[i]),
    keyIndexes,
    keyTypes: keyIndexes.map((i) => fieldTypes[i]),
    bucketKeyIndexes,
    bucketKeyTypes: bucketKeyIndexes.map((i) => fieldTypes[i]),
  }
}
