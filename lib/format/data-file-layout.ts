// The layout of a primary-key table's data file, shared by its writer and readers: the columns and
// their Parquet schema (docs/format.md "Data files"). Columns, in the order Paimon's Java writer uses
// (`core:KeyValue.java` `schema`): _KEY_<k> for each trimmed primary-key field, _SEQUENCE_NUMBER,
// _VALUE_KIND, all table fields. Readers (Java, pypaimon, this one) find columns by name, so only the
// names are load-bearing.

import type { SchemaElement } from 'hyparquet'
import { StrataInputError } from '../errors.ts'
import type { DataField, DataType, Value } from '../types.ts'
import { columnElements } from './parquet-nested.ts'

export const KEY_FIELD_PREFIX = '_KEY_'
/** `SpecialFields.KEY_FIELD_ID_START` = Integer.MAX_VALUE / 2; a `_KEY_` column's id is this + the field id. */
export const KEY_FIELD_ID_START = 1073741823
export const SEQUENCE_NUMBER = '_SEQUENCE_NUMBER'
export const SEQUENCE_NUMBER_FIELD_ID = 2147483646
export const VALUE_KIND = '_VALUE_KIND'
export const VALUE_KIND_FIELD_ID = 2147483645
/** Message name of Paimon's Parquet schema (`ParquetSchemaConverter`). */
export const PARQUET_MESSAGE_NAME = 'paimon_schema'
/** Key stats collector of `_KEY_` fields: truncate(128) (`core:utils/StatsCollectorFactories.java`). */
export const KEY_STATS_TRUNCATE = 128
/** Default `metadata.stats-mode` of value fields: truncate(16). */
export const VALUE_STATS_TRUNCATE = 16

export interface DataFileLayout {
  /** trimmed primary-key fields (primary key minus partition keys), in primary-key order */
  keyFields: DataField[]
  /** all table fields in schema order, partition fields included */
  valueFields: DataField[]
}

/** A column of the file: its name, Parquet field id and type. */
export interface ColumnSpec {
  name: string
  fieldId: number
  type: DataType
}

const SEQUENCE_TYPE: DataType = { root: 'BIGINT', nullable: false }
const KIND_TYPE: DataType = { root: 'TINYINT', nullable: false }

/** The file's columns in order. */
export function fileColumns(layout: DataFileLayout): ColumnSpec[] {
  return [
    ...layout.keyFields.map((f) => ({ name: KEY_FIELD_PREFIX + f.name, fieldId: f.id + KEY_FIELD_ID_START, type: f.type })),
    { name: SEQUENCE_NUMBER, fieldId: SEQUENCE_NUMBER_FIELD_ID, type: SEQUENCE_TYPE },
    { name: VALUE_KIND, fieldId: VALUE_KIND_FIELD_ID, type: KIND_TYPE },
    ...layout.valueFields.map((f) => ({ name: f.name, fieldId: f.id, type: f.type })),
  ]
}

/** The Parquet schema (flattened SchemaElements, root first) of a data file with this layout. */
export function dataFileSchema(layout: DataFileLayout): SchemaElement[] {
  const columns = fileColumns(layout)
  const names = new Set<string>()
  for (const c of columns) {
    if (names.has(c.name)) throw new StrataInputError(`data file column ${c.name} appears twice; field names must be unique and must not collide with ${KEY_FIELD_PREFIX}*, ${SEQUENCE_NUMBER} or ${VALUE_KIND}`)
    names.add(c.name)
  }
  return [{ name: PARQUET_MESSAGE_NAME, num_children: columns.length }, ...columns.flatMap((c) => columnElements(c.name, c.fieldId, c.type))]
}

/** A key as error messages show it. */
export function describeKey(key: Value[]): string {
  return '[' + key.map((v) => (typeof v === 'bigint' ? `${v}n` : v instanceof Uint8Array ? `bytes(${v.length})` : JSON.stringify(v))).join(', ') + ']'
}
