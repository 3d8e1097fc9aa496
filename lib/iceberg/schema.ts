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
  type: string
  doc?: string
}

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

/** The Iceberg type of a Paimon type, or a reason it has none (Paimon's IcebergDataField.toTypeObject). */
function icebergType(t: DataType): string | { refused: string } {
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
    case 'ARRAY':
    case 'MAP':
    case 'MULTISET':
    case 'ROW':
      return { refused: `${t.root} has no Iceberg type Strata writes yet` }
  }
}

/** Why a field cannot be written as Iceberg metadata, or null. */
export function fieldRefusal(f: DataField): string | null {
  const t = icebergType(f.type)
  return typeof t === 'string' ? null : `field '${f.name}': ${t.refused}`
}

/** One Paimon schema as an Iceberg schema (`schema-id` = Paimon's schema id). */
export function icebergSchemaOf(schema: TableSchema): IcebergSchema {
  return {
    type: 'struct',
    'schema-id': schema.id,
    fields: schema.fields.map((f) => {
      const t = icebergType(f.type)
      if (typeof t !== 'string') throw new RefusedError(`metadata.iceberg.storage: ${fieldRefusal(f)}`)
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
