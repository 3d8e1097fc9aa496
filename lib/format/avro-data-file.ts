// Avro data files as Paimon writes them (`file.format` avro: AvroFileFormat,
// AvroSchemaConverter, FieldWriterFactory), read into the records and column batches the
// Parquet readers give (docs/format.md "Data file formats").
//
// The file's row is a record with the data file's columns by name (`_KEY_<k>`…,
// `_SEQUENCE_NUMBER`, `_VALUE_KIND`, the value fields), each nullable column the union
// ["null", T]. Types: TINYINT/SMALLINT/INT int, BIGINT long, FLOAT float, DOUBLE double,
// CHAR/VARCHAR string, BINARY/VARBINARY bytes, DATE int (date), DECIMAL bytes (decimal: the
// unscaled value, big-endian two's complement), TIMESTAMP(p) long (timestamp-millis for
// p <= 3, timestamp-micros for p <= 6). The codec is the container's (file.compression or
// avro.codec in Paimon); lib/format/avro.ts reads null, deflate, snappy and zstandard.
//
// An Avro file has no index: it is fetched whole and decoded once when opened, and reads,
// lookups and column batches are served from the decoded records. Columns are found by name,
// so the file's column order does not matter and columns the layout does not name are skipped.

import { RefusedError } from '../errors.ts'
import type { DataField, DataType, KeyValue, RowKind, Value } from '../types.ts'
import type { ByteSource } from '../store/byte-source.ts'
import { avroFileHeader, canReadAvroCodec, readAvroFileFlat } from './avro.ts'
import { type ColumnSpec, type DataFileLayout, VALUE_KIND, describeKey, fileColumns } from './data-file-layout.ts'
import { ManifestCheck } from './data-file-check.ts'
import { namedFileError, openNamed, readSource } from './data-file-source.ts'
import { bigEndianSigned, physicalEncoder } from './parquet-types.ts'
import type { Column } from './columnar-types.ts'
import type { DataFileBatchOptions, DataFileLookupOptions, KeyLookupResult } from './data-file-reader.ts'
import type { PositionedBatch, RowGroupOptions } from './columnar-reader.ts'

const DEFAULT_BATCH_ROWS = 8192
/** rows of one column batch (as the Parquet columnar reader's BATCH_ROWS) */
const COLUMN_BATCH_ROWS = 4096

/** Converts one non-null Avro value of a column (as lib/format/avro.ts hands it) to its `Value`. */
type FromAvro = (v: unknown) => Value

/** The Avro type of a field without its null branch (Paimon writes a nullable type as ["null", T]). */
function unwrapNullable(avroType: unknown): any {
  if (!Array.isArray(avroType)) return avroType
  const valued = avroType.filter((t) => t !== 'null')
  return valued.length === 1 ? valued[0] : avroType
}

function describeAvro(t: unknown): string {
  return JSON.stringify(t)
}

const INT_RANGE: Partial<Record<DataType['root'], [number, number]>> = { TINYINT: [-128, 127], SMALLINT: [-32768, 32767] }

/**
 * How a column's Avro values become `Value`s of `type`, checked against the file's Avro type
 * (`avroType`, its null branch removed): a mismatch is an error naming the column, the Avro
 * type found and the one expected.
 */
function fromAvroOf(column: string, type: DataType, avroType: any): FromAvro {
  const primitive: string | undefined = typeof avroType === 'string' ? avroType : avroType?.type
  const logical: string | undefined = typeof avroType === 'object' && avroType !== null ? avroType.logicalType : undefined
  const mismatch = (expected: string): never => {
    throw new Error(`Avro data file column ${column}: Avro type ${describeAvro(avroType)} does not hold ${type.root}${type.root === 'DECIMAL' ? `(${type.precision}, ${type.scale})` : ''}; expected ${expected} (Paimon's AvroSchemaConverter)`)
  }
  const expect = (want: string, shown = want): void => {
    if (primitive !== want) mismatch(shown)
  }
  switch (type.root) {
    case 'BOOLEAN':
      expect('boolean')
      return (v) => v as boolean
    case 'TINYINT':
    case 'SMALLINT': {
      expect('int')
      const [lo, hi] = INT_RANGE[type.root]!
      return (v) => {
        if ((v as number) < lo || (v as number) > hi) throw new Error(`Avro data file column ${column}: value ${v} is outside ${type.root}'s range [${lo}, ${hi}]`)
        return v as number
      }
    }
    case 'INT':
      expect('int')
      return (v) => v as number
    case 'DATE':
      expect('int', 'int with logicalType date')
      return (v) => v as number
    case 'BIGINT':
      expect('long')
      return (v) => v as bigint
    case 'FLOAT':
      expect('float')
      return (v) => v as number
    case 'DOUBLE':
      expect('double')
      return (v) => v as number
    case 'CHAR':
    case 'VARCHAR':
      expect('string')
      return (v) => v as string
    case 'BINARY':
    case 'VARBINARY':
      if (primitive !== 'bytes' && primitive !== 'fixed') mismatch('bytes')
      // avsc hands a Buffer; the value is a plain Uint8Array view of the same bytes
      return (v) => new Uint8Array((v as Uint8Array).buffer, (v as Uint8Array).byteOffset, (v as Uint8Array).byteLength)
    case 'DECIMAL': {
      const want = `bytes with logicalType decimal, precision ${type.precision} and scale ${type.scale}`
      if ((primitive !== 'bytes' && primitive !== 'fixed') || logical !== 'decimal' || (avroType.scale ?? 0) !== type.scale) mismatch(want)
      return (v) => bigEndianSigned(v as Uint8Array)
    }
    case 'TIMESTAMP': {
      const want = 'long with logicalType timestamp-millis or timestamp-micros'
      if (primitive !== 'long') mismatch(want)
      if (logical === 'timestamp-millis' || logical === 'local-timestamp-millis') return (v) => (v as bigint) * 1000n
      if (logical === 'timestamp-micros' || logical === 'local-timestamp-micros') return (v) => v as bigint
      return mismatch(want)
    }
    default:
      throw new RefusedError(`Avro data file column ${column}: type ${type.root} is not read from Avro data files by Strata`)
  }
}

/**
 * The reader schema for `columns`: the writer's record with only those fields (by name), so
 * avsc skips the others; a column the file lacks is an error naming the file's columns.
 */
function projection(columns: ColumnSpec[], convs: FromAvro[]): (writer: any) => any {
  return (writer) => {
    if (writer?.type !== 'record' || !Array.isArray(writer.fields)) throw new Error(`Avro data file: its schema is ${describeAvro(writer?.type ?? writer)}, expected a record of the data file's columns`)
    const byName = new Map<string, any>(writer.fields.map((f: any) => [f.name, f]))
    const fields = columns.map((c, i) => {
      const f = byName.get(c.name)
      if (f === undefined) throw new Error(`Avro data file has no column ${c.name}; its columns are: ${writer.fields.map((x: any) => x.name).join(', ')}`)
      convs[i] = fromAvroOf(c.name, c.type, unwrapNullable(f.type))
      return f
    })
    return { ...writer, fields }
  }
}

/** One Avro data file, decoded: records for the row path and lookups, column batches for the columnar compaction path. */
export class AvroDataFileReader {
  readonly #layout: DataFileLayout
  readonly #src: ByteSource
  readonly #records: KeyValue[]

  private constructor(layout: DataFileLayout, src: ByteSource, records: KeyValue[]) {
    this.#layout = layout
    this.#src = src
    this.#records = records
  }

  /** Fetches and decodes the file; with a manifest entry (`src.expect`) its rows are checked against it at once. */
  static async open(src: ByteSource, layout: DataFileLayout): Promise<AvroDataFileReader> {
    const { bytes, header } = await openNamed(src, async () => {
      const bytes = await readSource(src, 0, src.size)
      if (bytes.length !== src.size) throw new Error(`data file read [0, ${src.size}) returned ${bytes.length} bytes; is the file ${src.size} bytes long?`)
      return { bytes, header: avroFileHeader(bytes) }
    })
    // not a damaged file: a codec Strata lacks is refused (a RefusedError), naming the file
    if (!canReadAvroCodec(header.codec)) {
      throw new RefusedError(`${src.name ?? 'data file'}: Avro data file uses the Avro codec '${header.codec}' (Paimon's file.compression or avro.codec chose it), which Strata does not decode; it reads null, deflate, snappy and zstandard (zstd)`)
    }
    return openNamed(src, async () => {
      const records = decodeRecords(bytes, header.schema, layout)
      if (src.expect) checkAgainstEntry(new ManifestCheck(src.name ?? 'data file', src.expect, layout.keyFields, false), records, layout)
      return new AvroDataFileReader(layout, src, records)
    })
  }

  get rowCount(): number {
    return this.#records.length
  }

  #selected(valueColumns: string[] | undefined): number[] {
    const fields = this.#layout.valueFields
    if (valueColumns === undefined) return fields.map((_, i) => i)
    return valueColumns.map((name) => {
      const j = fields.findIndex((f) => f.name === name)
      if (j < 0) throw new RefusedError(`valueColumns: no field named ${JSON.stringify(name)}; fields are ${fields.map((f) => f.name).join(', ')}`)
      return j
    })
  }

  /** The records of rows [rowStart, rowEnd), in file order, without the rows `deleted` holds; value fields not in `valueColumns` are null. */
  async *batches(opts: DataFileBatchOptions = {}): AsyncGenerator<KeyValue[]> {
    const { rowStart = 0, rowEnd = this.rowCount, batchRows = DEFAULT_BATCH_ROWS, deleted, stats } = opts
    const keep = opts.valueColumns === undefined ? null : new Set(this.#selected(opts.valueColumns))
    const end = Math.min(rowEnd, this.rowCount)
    const all = this.#records
    let batch: KeyValue[] = []
    for (let pos = Math.max(0, rowStart); pos < end; pos++) {
      if (stats) stats.rowsDecoded++
      if (deleted && deleted.cardinality > 0 && deleted.isDeleted(pos)) continue
      batch.push(freshRecord(all[pos], keep))
      if (batch.length >= batchRows) {
        yield batch
        batch = []
      }
    }
    if (batch.length) yield batch
  }

  /** The row of `key` (binary search: rows are sorted by key), or null when the file has none. */
  async lookup(key: Value[], keyCmp: (a: Value[], b: Value[]) => number, opts: DataFileLookupOptions = {}): Promise<KeyLookupResult | null> {
    const nk = this.#layout.keyFields.length
    if (!Array.isArray(key) || key.length !== nk) throw new RefusedError(`lookup key: expected ${nk} values, got ${Array.isArray(key) ? key.length : typeof key}`)
    const keep = opts.valueColumns === undefined ? null : new Set(this.#selected(opts.valueColumns))
    const all = this.#records
    let lo = 0
    let hi = all.length - 1
    while (lo <= hi) {
      const mid = (lo + hi) >> 1
      const c = keyCmp(all[mid].key, key)
      if (c < 0) lo = mid + 1
      else if (c > 0) hi = mid - 1
      else {
        try {
          if (opts.live && !(await opts.live(mid))) return { pos: mid, record: null }
        } catch (e) {
          throw namedFileError(this.#src, e)
        }
        return { pos: mid, record: freshRecord(all[mid], keep) }
      }
    }
    return null
  }

  /**
   * The file's live rows as column batches of physical values (as `ColumnarFileReader`
   * gives them: lib/format/columnar-types.ts), COLUMN_BATCH_ROWS rows at a time, with their
   * positions; value fields not in `valueFields` come back as empty columns.
   */
  async *rowGroups(opts: RowGroupOptions = {}): AsyncGenerator<PositionedBatch> {
    const { keyFields, valueFields } = this.#layout
    const nk = keyFields.length
    const wanted = opts.valueFields === undefined ? null : new Set(opts.valueFields)
    const keyEnc = keyFields.map((f) => physicalEncoder(`_KEY_${f.name}`, f.type))
    const valueEnc = valueFields.map((f) => physicalEncoder(f.name, { ...f.type, nullable: true }))
    const deleted = opts.deleted
    let next = 0
    const all = this.#records
    try {
      for (let start = 0; start < all.length; start += COLUMN_BATCH_ROWS) {
        const end = Math.min(start + COLUMN_BATCH_ROWS, all.length)
        const rows: number[] = []
        for (let pos = start; pos < end; pos++) {
          while (deleted && next < deleted.length && deleted[next] < pos) next++
          if (deleted && next < deleted.length && deleted[next] === pos) continue
          rows.push(pos)
        }
        if (rows.length === 0) continue
        yield batchOf(all, rows, start, end - start, nk, keyEnc, valueFields, valueEnc, wanted)
      }
    } catch (e) {
      throw namedFileError(this.#src, e)
    }
  }
}

/**
 * A copy of decoded record `kv`, as the Parquet reader gives a fresh record each time (a merge
 * may change what it is handed); value fields not in `keep` (when given) are null.
 */
function freshRecord(kv: KeyValue, keep: Set<number> | null): KeyValue {
  return { ...kv, key: kv.key.slice(), value: keep === null ? kv.value.slice() : kv.value.map((v, j) => (keep.has(j) ? v : null)) }
}

/** Column batch of `rows` (file positions, ascending, inside [start, start + span)). */
function batchOf(
  all: KeyValue[],
  rows: number[],
  start: number,
  span: number,
  nk: number,
  keyEnc: ((v: Value) => unknown)[],
  valueFields: DataField[],
  valueEnc: ((v: Value) => unknown)[],
  wanted: Set<number> | null,
): PositionedBatch {
  const n = rows.length
  const columns: Column[] = []
  for (let i = 0; i < nk; i++) columns.push(rows.map((p) => keyEnc[i](all[p].key[i])))
  const seq = new BigInt64Array(n)
  const kinds = new Int32Array(n)
  for (let r = 0; r < n; r++) {
    seq[r] = all[rows[r]].seq
    kinds[r] = all[rows[r]].kind
  }
  columns.push(seq, kinds)
  for (let j = 0; j < valueFields.length; j++) {
    columns.push(wanted !== null && !wanted.has(j) ? [] : rows.map((p) => valueEnc[j](all[p].value[j])))
  }
  const positions = n === span ? null : Int32Array.from(rows)
  return { rows: n, columns, firstPosition: start, positions }
}

/** Every record of the file, in file order, in the layout's terms. */
function decodeRecords(bytes: Uint8Array, writer: unknown, layout: DataFileLayout): KeyValue[] {
  const columns = fileColumns(layout)
  const convs: FromAvro[] = new Array(columns.length)
  // the conversions come from the file's own schema (a projection avro.ts cached does not run `project` again)
  const reader = projection(columns, convs)(writer)
  const projectionKey = `data-file\u0000${JSON.stringify(columns.map((c) => [c.name, c.type]))}`
  const raw = readAvroFileFlat(bytes, projectionKey, () => reader)
  const nk = layout.keyFields.length
  const nv = layout.valueFields.length
  const out = new Array<KeyValue>(raw.length)
  for (let r = 0; r < raw.length; r++) {
    const rec = raw[r]
    const at = (c: number): Value => {
      const v = rec[columns[c].name]
      if (v === null || v === undefined) {
        if (!columns[c].type.nullable) throw new Error(`Avro data file row ${r}: column ${columns[c].name} is null, but ${columns[c].type.root} NOT NULL`)
        return null
      }
      return convs[c](v)
    }
    const key = new Array<Value>(nk)
    for (let i = 0; i < nk; i++) key[i] = at(i)
    const kind = at(nk + 1)
    if (kind !== 0 && kind !== 1 && kind !== 2 && kind !== 3) throw new Error(`Avro data file row ${r}: ${VALUE_KIND} ${String(kind)} is not a RowKind (0..3)`)
    const value = new Array<Value>(nv)
    for (let j = 0; j < nv; j++) value[j] = at(nk + 2 + j)
    out[r] = { key, seq: at(nk) as bigint, kind: kind as RowKind, value }
  }
  return out
}

/** The whole file against its manifest entry (ManifestCheck), and each primary-key field's value column equal to its key. */
function checkAgainstEntry(check: ManifestCheck, records: KeyValue[], layout: DataFileLayout): void {
  let retracts = 0
  for (const kv of records) retracts += kv.kind & 1
  check.batch(
    records.length,
    (r) => records[r].key,
    () => {
      for (let r = 1; r < records.length; r++) if (check.below(records[r - 1].key, records[r].key)) return r
      return 0
    },
    retracts,
  )
  check.whole()
  layout.keyFields.forEach((k, i) => {
    const j = layout.valueFields.findIndex((f) => f.id === k.id)
    if (j < 0) return
    for (const kv of records) {
      const v = kv.value[j]
      if (kv.key[i] !== v && check.compareField(i, kv.key[i], v) !== 0) check.fail(`key ${describeKey(kv.key)} holds ${describeKey([v])} in its value column ${layout.valueFields[j].name}`)
    }
  })
}
