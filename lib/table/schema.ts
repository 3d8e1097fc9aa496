// Table schemas: built from the user's schema JSON, stored as Paimon's `schema/schema-N`
// (TableSchema version 3, docs/format.md "Schema files"), and viewed as the field positions the
// engine needs (partition, trimmed primary key, bucket key).

import { type DataField, type DataType, type TableSchema, StrataInputError } from '../types.ts'
import { formatDataType, parseDataType, withNullable } from './data-type.ts'
import { type CoreOptions, coreOptions, validateOptions } from './options.ts'

export const SCHEMA_VERSION = 3

/** Names Paimon reserves for system fields (api:table/SpecialFields.java). */
const RESERVED = new Set(['_SEQUENCE_NUMBER', '_VALUE_KIND', '_LEVEL', 'rowkind', '_ROW_ID'])

export interface SchemaInput {
  fields: { name: string; type: string; description?: string }[]
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
  const fields: DataField[] = obj.fields.map((f: unknown, i: number) => {
    const where = `schema.fields[${i}]`
    if (typeof f !== 'object' || f === null) throw new StrataInputError(`${where}: expected {"name", "type"}, got ${JSON.stringify(f)}`)
    const { name, type, description } = f as Record<string, unknown>
    if (typeof name !== 'string' || name.length === 0) {
      throw new StrataInputError(`${where}.name: expected a non-empty string, got ${JSON.stringify(name)}`)
    }
    if (names.has(name)) throw new StrataInputError(`${where}.name: field '${name}' is defined twice`)
    if (RESERVED.has(name) || name.startsWith('_KEY_')) {
      throw new StrataInputError(`${where}.name: '${name}' is a Paimon system field name (reserved: _KEY_*, ${[...RESERVED].join(', ')})`)
    }
    names.add(name)
    let dataType = parseDataType(type, `${where}.type (field '${name}')`)
    // Primary-key fields are stored NOT NULL (api:schema/Schema.java normalizeFields).
    if (primaryKeys.includes(name)) dataType = withNullable(dataType, false)
    const field: DataField = { id: i, name, type: dataType }
    if (typeof description === 'string') field.description = description
    return field
  })
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
  const options = validateOptions(obj.options)
  const schema: TableSchema = {
    version: SCHEMA_VERSION,
    id: 0,
    fields,
    highestFieldId: fields.length - 1,
    partitionKeys,
    primaryKeys,
    options,
    timeMillis,
  }
  if (typeof obj.comment === 'string') schema.comment = obj.comment
  describeSchema(schema) // validates the bucket key and merge-engine options against the fields
  return schema
}

/** Paimon's pretty-printed schema JSON (field order of api:schema/SchemaSerializer.java). */
export function serializeSchema(s: TableSchema): string {
  const out: Record<string, unknown> = {
    version: s.version,
    id: s.id,
    fields: s.fields.map((f) => {
      const o: Record<string, unknown> = { id: f.id, name: f.name, type: formatDataType(f.type) }
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

export function parseSchema(text: string, where: string): TableSchema {
  let j: Record<string, any>
  try {
    j = JSON.parse(text)
  } catch (e) {
    throw new Error(`${where}: not valid JSON (${(e as Error).message})`)
  }
  if (!Array.isArray(j.fields)) throw new Error(`${where}: missing 'fields'`)
  const fields: DataField[] = j.fields.map((f: any, i: number) => {
    if (typeof f.type !== 'string') throw new Error(`${where}: field ${i} ('${f.name}') has a nested type, which Strata does not support`)
    const field: DataField = { id: f.id, name: f.name, type: parseDataType(f.type, `${where} field '${f.name}'`) }
    if (f.description !== undefined) field.description = f.description
    return field
  })
  const s: TableSchema = {
    version: j.version ?? 1,
    id: j.id,
    fields,
    highestFieldId: j.highestFieldId ?? Math.max(...fields.map((f) => f.id)),
    partitionKeys: j.partitionKeys ?? [],
    primaryKeys: j.primaryKeys ?? [],
    options: j.options ?? {},
    timeMillis: j.timeMillis ?? 0,
  }
  if (j.comment !== undefined) s.comment = j.comment
  return s
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
