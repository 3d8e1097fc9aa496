// Schema evolution on read: a data file records the id of the schema it was written under
// (DataFileMeta.schemaId); its columns are mapped to the handle's schema by field id, as
// Paimon's SchemaEvolutionUtil does (docs/format.md "Schema evolution"). A field the file
// lacks (added later) reads as null, a field the table no longer has (dropped) is not read,
// a renamed field keeps its id, and a field whose type changed is cast with Paimon's cast
// (lib/format/casts.ts).
// Both readers go through here: records (reads, lookups, the row compaction path) and
// column batches (the columnar compaction path).

import type { ByteSource } from '../store/byte-source.ts'
import { type DataFileLayout } from '../format/data-file-layout.ts'
import type { DataFileReader, DataFileReaderOptions } from '../format/data-file-reader.ts'
import type { PositionedBatch, RowGroupOptions } from '../format/columnar-reader.ts'
import { type DataFileColumns, type DataFileRecords, openDataFileColumns, openDataFileRecords } from '../format/data-file-open.ts'
import { type Column, physicalToValue, valueAt } from '../format/columnar-types.ts'
import { physicalEncoder } from '../format/parquet-types.ts'
import { StrataInputError } from '../errors.ts'
import type { DataField, DataType, TableSchema, Value } from '../types.ts'
import { formatDataType, typeLabel } from '../format/data-type.ts'
import { type Cast, CastError, castOrFail, sameTypeIgnoringNull } from '../format/casts.ts'
import { describeSchema } from './schema.ts'

/**
 * The cast of a file's values of field `name` from the file's type to the table's: Paimon's
 * (lib/format/casts.ts), straight from the type the file was written under to the handle's,
 * as SchemaEvolutionUtil.createCastExecutor does. A pair Paimon has no cast for (a column
 * changed DATE → STRING → VARCHAR(5) leaves no cast from DATE to VARCHAR(5)) is refused,
 * naming the field, both types and schema ids.
 */
function fieldCast(f: DataField, from: DataType, fileSchemaId: number, tableSchemaId: number): Cast | null {
  if (sameTypeIgnoringNull(from, f.type)) return null
  return castOrFail(from, f.type, `field '${f.name}' (id ${f.id}) is ${typeLabel(from)} in schema ${fileSchemaId} and ${typeLabel(f.type)} in schema ${tableSchemaId}`)
}

/** How the handle's fields are found in a file written under another schema. */
export interface FieldMapping {
  /** per table field: its index among the file's fields, or -1 when the file has no such field */
  source: number[]
  /** per table field: the cast of the file's values, or null */
  casts: (Cast | null)[]
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
  const casts: (Cast | null)[] = []
  for (const f of table.fields) {
    const j = byId.get(f.id)
    source.push(j ?? -1)
    if (j === undefined) {
      casts.push(null)
      continue
    }
    casts.push(fieldCast(f, file.fields[j].type, file.id, table.id))
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

/**
 * One value cast for the table, or the read refused naming the field, the file and the value
 * when Paimon's cast refuses it (a string that does not parse as the new type): Paimon's
 * reader fails the same way (CastFieldGetter), and nothing is skipped silently.
 */
function castValue(cast: Cast, v: Value, field: DataField, fileName: string): Value {
  try {
    const out = cast(v)
    // a DECIMAL that overflows casts to null, which a NOT NULL column cannot hold (Paimon's reader fails on it too)
    if (out === null && !field.type.nullable) throw new CastError(`the cast of ${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)} to ${typeLabel(field.type)} overflows to null, and the column is NOT NULL`)
    return out
  } catch (e) {
    if (e instanceof CastError) throw new StrataInputError(`field '${field.name}' of data file ${fileName}: ${e.message}; alter the column to a type its values convert to (or back), or rewrite the rows`)
    throw e
  }
}

/** What reads, lookups and the row compaction path use of a data file, whatever its format. */
export type RecordFileReader = DataFileRecords

/** A data file of another schema, its records in the table's fields. */
class MappedRecordReader implements RecordFileReader {
  constructor(
    private readonly inner: RecordFileReader,
    private readonly fields: readonly DataField[],
    private readonly m: FieldMapping,
    private readonly fileName: string,
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
      out[i] = v === null || casts[i] === null ? v : castValue(casts[i]!, v, this.fields[i], this.fileName)
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

/** What the columnar compaction path uses of a data file, whatever its format. */
export type ColumnarSource = DataFileColumns

/** A data file of another schema, its column batches in the table's columns. */
class MappedColumnarReader implements ColumnarSource {
  private readonly physicalCasts: (((p: unknown) => unknown) | null)[]

  constructor(
    private readonly inner: ColumnarSource,
    private readonly fields: readonly DataField[],
    private readonly nk: number,
    private readonly m: FieldMapping,
    fileName: string,
  ) {
    // a cast on the physical values the batches hold: to the file type's Value, cast, to the table type's physical value
    this.physicalCasts = fields.map((f, i) => {
      const j = m.source[i]
      if (j < 0) return null
      const from = m.fileLayout.valueFields[j].type
      // the same type (nullability aside) is stored the same: its physical values pass
      const cast = m.casts[i]
      if (cast === null) return null
      // any other cast goes value by value: physical → the file type's Value → cast → physical
      const toValue = physicalToValue(from)
      const encode = physicalEncoder(f.name, { ...f.type, nullable: true })
      return (p: unknown) => {
        if (p === null || p === undefined) return null
        const v = castValue(cast, toValue ? toValue(p) : (p as Value), f, fileName)
        return v === null ? null : encode(v)
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
  return new MappedRecordReader(await openDataFileRecords(fileName, src, m.fileLayout, opts), table.view.fields, m, fileName)
}

/** `openRecordFile` for the columnar compaction path. */
export async function openColumnarFile(table: EvolvingTable, fileName: string, schemaId: bigint | number, src: ByteSource): Promise<ColumnarSource> {
  const m = await table.fieldMapping(schemaId, fileName)
  if (m === null) return openDataFileColumns(fileName, src, { keyFields: table.view.keyFields, valueFields: table.view.fields })
  return new MappedColumnarReader(await openDataFileColumns(fileName, src, m.fileLayout), table.view.fields, m.fileLayout.keyFields.length, m, fileName)
}
