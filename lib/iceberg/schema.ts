// Paimon schemas as Iceberg schemas (docs/format.md "Iceberg metadata"; Paimon's
// iceberg/metadata/IcebergDataField.java, IcebergPartitionField.java): field ids are
// Paimon's, so a data file's Parquet columns (which carry Paimon's field ids) are the
// Iceberg columns; the partition spec is identity on each partition key, field ids from 1000.

import { RefusedError } from '../errors.ts'
import type { DataField, DataType, TableSchema, Value } from '../types.ts'

/** Iceberg's first partition field id (PartitionSpec.PARTITION_DATA_ID_START). */
const FIRST_PARTITION_FIELD_ID = 1000

export interface IcebergField {
  id: number
  name: string
  required: boolean
  type: IcebergType
  doc?: string
}

/** An Iceberg type: a primitive's name, or a list, map or struct (IcebergListType, IcebergMapType, IcebergStructType). */
export type IcebergType =
  | string
  | { type: 'list'; 'element-id': number; 'element-required': boolean; element: IcebergType }
  | { type: 'map'; 'key-id': number; key: IcebergType; 'value-id': number; 'value-required': boolean; value: IcebergType }
  | { type: 'struct'; fields: IcebergField[] }

/** Ids of a list element, a map key and a map value (SpecialFields, Java int arithmetic), as the data files' Parquet columns carry them. */
const STRUCTURED_BASE = 536870911
const elementId = (fieldId: number, depth: number): number => (STRUCTURED_BASE + Math.imul(fieldId, 1024) + depth) | 0
const keyId = (fieldId: number, depth: number): number => (STRUCTURED_BASE - Math.imul(fieldId, 1024) - depth) | 0

export interface IcebergSchema {
  type: 'struct'
  'schema-id': number
  'identifier-field-ids'?: number[]
  fields: IcebergField[]
}

export interface IcebergPartitionField {
  name: string
  transform: 'identity'
  'source-id': number
  'field-id': number
}

/**
 * The Iceberg type of a Paimon type, or a reason it has none (Paimon's
 * IcebergDataField.toTypeObject); `fieldId` and `depth` number a nested type's element, key
 * and value as the data files' Parquet columns do.
 */
function icebergType(t: DataType, fieldId = 0, depth = 0): IcebergType | { refused: string } {
  switch (t.root) {
    case 'BOOLEAN':
      return 'boolean'
    case 'TINYINT':
    case 'SMALLINT':
    case 'INT':
      return 'int'
    case 'BIGINT':
      return 'long'
    case 'FLOAT':
      return 'float'
    case 'DOUBLE':
      return 'double'
    case 'DATE':
      return 'date'
    case 'CHAR':
    case 'VARCHAR':
      return 'string'
    case 'BINARY':
    case 'VARBINARY':
      return 'binary'
    case 'DECIMAL':
      return `decimal(${t.precision}, ${t.scale})`
    case 'TIMESTAMP':
      // Paimon refuses precisions below 3 (its check in IcebergDataField)
      if ((t.precision ?? 6) < 3) return { refused: `TIMESTAMP(${t.precision}) has no Iceberg type Paimon writes (precision 3 to 9)` }
      return 'timestamp'
    case 'ARRAY': {
      const element = icebergType(t.element!, fieldId, depth + 1)
      if (isRefused(element)) return element
      // Paimon writes element-required as the ARRAY's own NOT NULL; Strata writes the element's (docs/format.md "Nested types")
      return { type: 'list', 'element-id': elementId(fieldId, depth + 1), 'element-required': !t.element!.nullable, element }
    }
    case 'MAP': {
      const key = icebergType(t.key!, fieldId, depth + 1)
      const value = icebergType(t.value!, fieldId, depth + 1)
      if (isRefused(key)) return key
      if (isRefused(value)) return value
      return { type: 'map', 'key-id': keyId(fieldId, depth + 1), key, 'value-id': elementId(fieldId, depth + 1), 'value-required': !t.value!.nullable, value }
    }
    case 'MULTISET':
      return { refused: 'MULTISET has no Iceberg type (Paimon refuses it too)' }
    case 'ROW': {
      const fields: IcebergField[] = []
      for (const f of t.fields!) {
        const ft = icebergType(f.type, f.id, 0)
        if (isRefused(ft)) return { refused: `in ROW field '${f.name}': ${ft.refused}` }
        fields.push({ id: f.id, name: f.name, required: !f.type.nullable, type: ft, ...(f.description ? { doc: f.description } : {}) })
      }
      return { type: 'struct', fields }
    }
  }
}

function isRefused(t: IcebergType | { refused: string }): t is { refused: string } {
  return typeof t === 'object' && 'refused' in t
}

/** Why a field cannot be written as Iceberg metadata, or null. */
export function fieldRefusal(f: DataField): string | null {
  const t = icebergType(f.type, f.id)
  return isRefused(t) ? `field '${f.name}': ${t.refused}` : null
}

/** One Paimon schema as an Iceberg schema (`schema-id` = Paimon's schema id). */
export function icebergSchemaOf(schema: TableSchema): IcebergSchema {
  return {
    type: 'struct',
    'schema-id': schema.id,
    fields: schema.fields.map((f) => {
      const t = icebergType(f.type, f.id)
      if (isRefused(t)) throw new RefusedError(`metadata.iceberg.storage: ${fieldRefusal(f)}`)
      return { id: f.id, name: f.name, required: !f.type.nullable, type: t, ...(f.description ? { doc: f.description } : {}) }
    }),
  }
}

/** The identity partition spec of a table's partition keys, field ids from 1000 in key order. */
export function partitionSpecOf(schema: TableSchema): IcebergPartitionField[] {
  return schema.partitionKeys.map((name, i) => {
    const f = schema.fields.find((x) => x.name === name)!
    return { name, transform: 'identity', 'source-id': f.id, 'field-id': FIRST_PARTITION_FIELD_ID + i }
  })
}

/** Partition key types the manifests' partition struct carries; others are refused at create. */
const PARTITION_AVRO: Partial<Record<DataType['root'], unknown>> = {
  BOOLEAN: 'boolean',
  TINYINT: 'int',
  SMALLINT: 'int',
  INT: 'int',
  BIGINT: 'long',
  FLOAT: 'float',
  DOUBLE: 'double',
  CHAR: 'string',
  VARCHAR: 'string',
  BINARY: 'bytes',
  VARBINARY: 'bytes',
  DATE: { type: 'int', logicalType: 'date' },
  TIMESTAMP: { type: 'long', logicalType: 'timestamp-micros', 'adjust-to-utc': false },
}

/** Why a partition key cannot be an Iceberg partition field here, or null. */
export function partitionFieldRefusal(f: DataField): string | null {
  return PARTITION_AVRO[f.type.root] === undefined ? `partition key '${f.name}' is ${f.type.root}, which Strata does not write as an Iceberg partition value (expected a boolean, integer, floating-point, string, binary, DATE or TIMESTAMP key)` : null
}

/** The Avro record of the manifests' `partition` field (id 102): one optional field per partition key. */
export function partitionAvroType(fields: DataField[]): object {
  return {
    type: 'record',
    name: 'r102',
    fields: fields.map((f, i) => ({ name: f.name, type: ['null', PARTITION_AVRO[f.type.root]], default: null, 'field-id': FIRST_PARTITION_FIELD_ID + i })),
  }
}

/** Partition values as the Avro partition record holds them (an int for a small integer, a long for BIGINT). */
export function partitionAvroValue(fields: DataField[], values: Value[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  fields.forEach((f, i) => {
    const v = values[i]
    out[f.name] = v === null ? null : f.type.root === 'BIGINT' || f.type.root === 'TIMESTAMP' ? BigInt(v as bigint) : v
  })
  return out
}
