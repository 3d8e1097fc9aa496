// Schema evolution on read: a data file records the id of the schema it was written under
// (DataFileMeta.schemaId); its columns are mapped to the handle's schema by field id, as
// Paimon's SchemaEvolutionUtil does (docs/format.md "Schema evolution"). A field the file
// lacks (added later) reads as null, a field the table no longer has (dropped) is not read,
// a renamed field keeps its id, and a widened field's values are cast to the new type.
// Both readers go through here: records (reads, lookups, the row compaction path) and
// column batches (the columnar compaction path).

import type { ByteSource } from '../store/byte-source.ts'
import { type DataFileLayout } from '../format/data-file-layout.ts'
import { DataFileReader, type DataFileReaderOptions } from '../format/data-file-reader.ts'
import { ColumnarFileReader, type PositionedBatch, type RowGroupOptions } from '../format/columnar-reader.ts'
import { openDataFileColumns, openDataFileRecords } from '../format/data-file-open.ts'
import { type Column, physicalToValue, valueAt } from '../format/columnar-types.ts'
import { physicalEncoder } from '../format/parquet-types.ts'
import { StrataInputError } from '../errors.ts'
import type { DataField, DataType, TableSchema, Value } from '../types.ts'
import { formatDataType, typeLabel } from '../format/data-type.ts'
import { describeSchema } from './schema.ts'

/** Decimal digits every value of an integer type fits in. */
const INTEGER_DIGITS: Partial<Record<DataType['root'], number>> = { TINYINT: 3, SMALLINT: 5, INT: 10, BIGINT: 19 }
const INTEGER_RANK: Partial<Record<DataType['root'], number>> = { TINYINT: 0, SMALLINT: 1, INT: 2, BIGINT: 3 }
/** Integer types whose every value a float type holds exactly. */
const EXACT_IN: Partial<Record<DataType['root'], DataType['root'][]>> = { FLOAT: ['TINYINT', 'SMALLINT'], DOUBLE: ['TINYINT', 'SMALLINT', 'INT', 'FLOAT'] }

/** The widenings Strata allows, for messages. */
export const WIDENINGS =
  'TINYINT → SMALLINT → INT → BIGINT; TINYINT/SMALLINT → FLOAT; TINYINT/SMALLINT/INT/FLOAT → DOUBLE; an integer type → DECIMAL(p, s) with p - s at least its digits (3, 5, 10, 19); DECIMAL(p, s) → DECIMAL(p2, s2) with s2 >= s and p2 - s2 >= p - s; VARCHAR(n) or CHAR(n) → VARCHAR(m >= n) or STRING; VARBINARY(n) or BINARY(n) → VARBINARY(m >= n) or BYTES; TIMESTAMP(p) → TIMESTAMP(q >= p)'

function sameType(a: DataType, b: DataType): boolean {
  return formatDataType({ ...a, nullable: true }) === formatDataType({ ...b, nullable: true })
}

/**
 * Whether every value of `from` converts to `to` without loss: the lossless part of Paimon's
 * implicit casts (api:types/DataTypeCasts.java), which compare type roots only and so also
 * allow DECIMAL(10, 2) → DECIMAL(5, 2) or BIGINT → FLOAT. Nullability is not considered here.
 */
export function isWidening(from: DataType, to: DataType): boolean {
  if (sameType(from, to)) return true
  const f = from.root
  const t = to.root
  if (INTEGER_RANK[f] !== undefined && INTEGER_RANK[t] !== undefined) return INTEGER_RANK[t]! > INTEGER_RANK[f]!
  if (EXACT_IN[t]?.includes(f)) return true
  if (t === 'DECIMAL') {
    const p = to.precision ?? 10
    const s = to.scale ?? 0
    if (INTEGER_DIGITS[f] !== undefined) return p - s >= INTEGER_DIGITS[f]!
    if (f === 'DECIMAL') {
      const fp = from.precision ?? 10
      const fs = from.scale ?? 0
      return s >= fs && p - s >= fp - fs
    }
    return false
  }
  const len = (x: DataType) => x.length ?? 1
  if (t === 'VARCHAR' && (f === 'VARCHAR' || f === 'CHAR')) return len(to) >= len(from)
  if (t === 'VARBINARY' && (f === 'VARBINARY' || f === 'BINARY')) return len(to) >= len(from)
  if (t === 'TIMESTAMP' && f === 'TIMESTAMP') return (to.precision ?? 6) >= (from.precision ?? 6)
  return false
}

/** The conversion of a value of `from` to `to` (a widening), or null when the value stays as it is. */
export function valueCast(from: DataType, to: DataType): ((v: Value) => Value) | null {
  if (sameType(from, to)) return null
  const f = from.root
  const t = to.root
  if (t === 'BIGINT' && f !== 'BIGINT') return (v) => (v === null ? null : BigInt(v as number))
  if (t === 'DECIMAL') {
    const shift = 10n ** BigInt((to.scale ?? 0) - (f === 'DECIMAL' ? (from.scale ?? 0) : 0))
    if (f === 'BIGINT' || f === 'DECIMAL') return (v) => (v === null ? null : (v as bigint) * shift)
    return (v) => (v === null ? null : BigInt(v as number) * shift)
  }
  // integers to wider integers or floats, FLOAT to DOUBLE (a number either way), strings,
  // bytes and timestamps (microseconds at every precision) keep their value
  return null
}

/** How the handle's fields are found in a file written under another schema. */
export interface FieldMapping {
  /** per table field: its index among the file's fields, or -1 when the file has no such field */
  source: number[]
  /** per table field: the cast of the file's values, or null */
  casts: (((v: Value) => Value) | null)[]
  /** the file's layout: its key and value fields as they are named and typed in the file */
  fileLayout: DataFileLayout
}

/** The mapping of a file's fields (schema `file`) to the table's (`table`), by field id; null when they are the same. */
export function fieldMapping(table: TableSchema, file: TableSchema): FieldMapping | null {
  const same =
    table.fields.length === file.fields.length &&
    table.fields.every((f, i) => f.id === file.fields[i].id && f.name === file.fields[i].name && formatDataType(f.type) === formatDataType(file.fields[i].type))
  if (same) return null
  const byId = new Map(file.fields.map((f, i) => [f.id, i]))
  const source: number[] = []
  const casts: (((v: Value) => Value) | null)[] = []
  for (const f of table.fields) {
    const j = byId.get(f.id)
    source.push(j ?? -1)
    if (j === undefined) {
      casts.push(null)
      continue
    }
    const from = file.fields[j].type
    if (!isWidening(from, f.type)) {
      // a file of a newer schema read through an older handle, or a schema Strata would not write
      throw new StrataInputError(
        `field '${f.name}' (id ${f.id}) is ${typeLabel(from)} in schema ${file.id} and ${typeLabel(f.type)} in schema ${table.id}; expected a widening (${WIDENINGS})`,
      )
    }
    casts.push(valueCast(from, f.type))
  }
  const view = describeSchema(file)
  return { source, casts, fileLayout: { keyFields: view.keyFields, valueFields: file.fields } }
}

/** The file's value columns (names in the file) for the table's `valueColumns` (names in the table). */
function fileColumns(table: readonly DataField[], m: FieldMapping, valueColumns: string[] | undefined): string[] | undefined {
  if (valueColumns === undefined) return undefined
  const out: string[] = []
  for (const name of valueColumns) {
    const i = table.findIndex((f) => f.name === name)
    if (i < 0) throw new StrataInputError(`valueColumns: ${JSON.stringify(name)} is not a field; fields are ${table.map((f) => f.name).join(', ')}`)
    if (m.source[i] >= 0) out.push(m.fileLayout.valueFields[m.source[i]].name)
  }
  return out
}

/** What reads, lookups and the row compaction path use of a data file. */
export type RecordFileReader = Pick<DataFileReader, 'batches' | 'lookup' | 'rowCount'>

/** A data file of another schema, its records in the table's fields. */
class MappedRecordReader implements RecordFileReader {
  constructor(
    private readonly inner: RecordFileReader,
    private readonly fields: readonly DataField[],
    private readonly m: FieldMapping,
  ) {}

  get rowCount(): number {
    return this.inner.rowCount
  }

  private row(value: Value[]): Value[] {
    const { source, casts } = this.m
    const out = new Array<Value>(source.length)
    for (let i = 0; i < source.length; i++) {
      const j = source[i]
      const v = j < 0 ? null : value[j]
      out[i] = v === null || casts[i] === null ? v : casts[i]!(v)
    }
    return out
  }

  async *batches(opts: Parameters<DataFileReader['batches']>[0] = {}): ReturnType<DataFileReader['batches']> {
    for await (const batch of this.inner.batches({ ...opts, valueColumns: fileColumns(this.fields, this.m, opts.valueColumns) })) {
      yield batch.map((kv) => ({ ...kv, value: this.row(kv.value) }))
    }
  }

  async lookup(...[key, cmp, opts = {}]: Parameters<DataFileReader['lookup']>): ReturnType<DataFileReader['lookup']> {
    const hit = await this.inner.lookup(key, cmp, { ...opts, valueColumns: fileColumns(this.fields, this.m, opts.valueColumns) })
    if (!hit?.record) return hit
    return { pos: hit.pos, record: { ...hit.record, value: this.row(hit.record.value) } }
  }
}

/** What the columnar compaction path uses of a data file. */
export type ColumnarSource = Pick<ColumnarFileReader, 'rowGroups'>

/** A data file of another schema, its column batches in the table's columns. */
class MappedColumnarReader implements ColumnarSource {
  private readonly physicalCasts: (((p: unknown) => unknown) | null)[]

  constructor(
    private readonly inner: ColumnarSource,
    private readonly fields: readonly DataField[],
    private readonly nk: number,
    private readonly m: FieldMapping,
  ) {
    // a cast on the physical values the batches hold: to the file type's Value, cast, to the table type's physical value
    this.physicalCasts = fields.map((f, i) => {
      const j = m.source[i]
      if (j < 0) return null
      const from = m.fileLayout.valueFields[j].type
      // the same type (nullability aside) is stored the same: its physical values pass
      if (sameType(from, f.type)) return null
      const cast = m.casts[i]
      const toValue = physicalToValue(from)
      const needsEncode = physicalToValue(f.type) !== null
      if (cast === null && toValue === null && !needsEncode) return null
      const encode = physicalEncoder(f.name, { ...f.type, nullable: true })
      return (p: unknown) => {
        if (p === null || p === undefined) return null
        const v = toValue ? toValue(p) : (p as Value)
        return encode(cast ? cast(v) : v)
      }
    })
  }

  async *rowGroups(opts: RowGroupOptions = {}): AsyncGenerator<PositionedBatch> {
    const { source } = this.m
    const nk = this.nk
    const wanted = opts.valueFields === undefined ? null : new Set(opts.valueFields)
    const fileFields = opts.valueFields === undefined ? undefined : opts.valueFields.map((i) => source[i]).filter((j) => j >= 0)
    for await (const batch of this.inner.rowGroups({ ...opts, valueFields: fileFields })) {
      const columns: Column[] = batch.columns.slice(0, nk + 2)
      for (let i = 0; i < this.fields.length; i++) {
        if (wanted !== null && !wanted.has(i)) {
          columns.push([])
          continue
        }
        const j = source[i]
        if (j < 0) {
          columns.push(new Array<unknown>(batch.rows).fill(null))
          continue
        }
        const col = batch.columns[nk + 2 + j]
        const cast = this.physicalCasts[i]
        if (cast === null) {
          columns.push(col)
          continue
        }
        const out = new Array<unknown>(batch.rows)
        for (let r = 0; r < batch.rows; r++) out[r] = cast(valueAt(col, r))
        columns.push(out)
      }
      yield { ...batch, columns }
    }
  }
}

/** What opening a data file of schema `schemaId` needs of the handle: its layout, fields and the mapping (Table.fieldMapping). */
export interface EvolvingTable {
  readonly view: { keyFields: DataField[]; fields: DataField[] }
  fieldMapping(schemaId: bigint | number, fileName: string): Promise<FieldMapping | null>
}

/**
 * Opens a data file written under schema `schemaId` for reading in the terms of the handle's
 * schema: a file of another schema is read in its own layout and mapped by field id.
 */
export async function openRecordFile(table: EvolvingTable, fileName: string, schemaId: bigint | number, src: ByteSource, opts?: DataFileReaderOptions): Promise<RecordFileReader> {
  const m = await table.fieldMapping(schemaId, fileName)
  if (m === null) return openDataFileRecords(fileName, src, { keyFields: table.view.keyFields, valueFields: table.view.fields }, opts)
  return new MappedRecordReader(await openDataFileRecords(fileName, src, m.fileLayout, opts), table.view.fields, m)
}

/** `openRecordFile` for the columnar compaction path. */
export async function openColumnarFile(table: EvolvingTable, fileName: string, schemaId: bigint | number, src: ByteSource): Promise<ColumnarSource> {
  const m = await table.fieldMapping(schemaId, fileName)
  if (m === null) return openDataFileColumns(fileName, src, { keyFields: table.view.keyFields, valueFields: table.view.fields })
  return new MappedColumnarReader(await openDataFileColumns(fileName, src, m.fileLayout), table.view.fields, m.fileLayout.keyFields.length, m)
}
