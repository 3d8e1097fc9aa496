// Paimon's three Avro manifest kinds (docs/format.md "Avro manifests"): manifest lists
// (ManifestFileMeta), manifests (ManifestEntry with DataFileMeta and SimpleStats) and
// index manifests (IndexManifestEntry with DeletionVectorMeta).
//
// Writers embed exactly the schema Java's AvroSchemaConverter derives, so Java readers see
// the field names, the ["null", T] unions and the six-field ManifestEntry top level that
// core:manifest/ManifestAvroReader.java insists on. Readers go by field name, as Java's
// FieldReaderFactory does, so files from pypaimon (other record names, fewer optional
// fields) read too: a missing optional field reads as null.

import type {
  DataFileMeta,
  DeletionVectorMeta,
  FileKind,
  IndexManifestEntry,
  ManifestEntry,
  ManifestFileMeta,
  SimpleStats,
} from '../types.ts'
import { readAvroFile, readAvroFileProjected, writeAvroFile, type AvroWriteOptions, type ManifestCompression } from './avro.ts'

const NAMESPACE = 'org.apache.paimon.avro.generated'

/** `_VERSION` of ManifestEntry (core:manifest/ManifestEntrySerializer.java FORMAT_IDENTIFIER). */
export const MANIFEST_ENTRY_VERSION = 2
/** `_VERSION` of ManifestFileMeta (core:manifest/ManifestFileMetaSerializer.java). */
export const MANIFEST_FILE_META_VERSION = 2
/** `_VERSION` of IndexManifestEntry (core:manifest/IndexManifestEntrySerializer.java). */
export const INDEX_MANIFEST_ENTRY_VERSION = 1

const nullable = (type: unknown) => ({ type: ['null', type], default: null })

/** A top-level record schema as Paimon's Java writer names it. */
const javaRecord = <F>(fields: F[]) => ({ type: 'record', name: 'record', namespace: NAMESPACE, fields })

function simpleStatsRecord(name: string) {
  return {
    type: 'record',
    name,
    fields: [
      { name: '_MIN_VALUES', type: 'bytes' },
      { name: '_MAX_VALUES', type: 'bytes' },
      { name: '_NULL_COUNTS', ...nullable({ type: 'array', items: ['null', 'long'] }) },
    ],
  }
}

/** Java's writer schema for manifest-list records. */
export const MANIFEST_FILE_META_SCHEMA = javaRecord([
  { name: '_VERSION', type: 'int' },
  { name: '_FILE_NAME', type: 'string' },
  { name: '_FILE_SIZE', type: 'long' },
  { name: '_NUM_ADDED_FILES', type: 'long' },
  { name: '_NUM_DELETED_FILES', type: 'long' },
  { name: '_PARTITION_STATS', type: simpleStatsRecord('record__PARTITION_STATS') },
  { name: '_SCHEMA_ID', type: 'long' },
  { name: '_MIN_BUCKET', ...nullable('int') },
  { name: '_MAX_BUCKET', ...nullable('int') },
  { name: '_MIN_LEVEL', ...nullable('int') },
  { name: '_MAX_LEVEL', ...nullable('int') },
  { name: '_MIN_ROW_ID', ...nullable('long') },
  { name: '_MAX_ROW_ID', ...nullable('long') },
])

const stringArray = { type: 'array', items: 'string' }

/** Java's writer schema for manifest records. */
export const MANIFEST_ENTRY_SCHEMA = javaRecord([
  { name: '_VERSION', type: 'int' },
  { name: '_KIND', type: 'int' },
  { name: '_PARTITION', type: 'bytes' },
  { name: '_BUCKET', type: 'int' },
  { name: '_TOTAL_BUCKETS', type: 'int' },
  {
    name: '_FILE',
    type: {
      type: 'record',
      name: 'record__FILE',
      fields: [
        { name: '_FILE_NAME', type: 'string' },
        { name: '_FILE_SIZE', type: 'long' },
        { name: '_ROW_COUNT', type: 'long' },
        { name: '_MIN_KEY', type: 'bytes' },
        { name: '_MAX_KEY', type: 'bytes' },
        { name: '_KEY_STATS', type: simpleStatsRecord('record__FILE__KEY_STATS') },
        { name: '_VALUE_STATS', type: simpleStatsRecord('record__FILE__VALUE_STATS') },
        { name: '_MIN_SEQUENCE_NUMBER', type: 'long' },
        { name: '_MAX_SEQUENCE_NUMBER', type: 'long' },
        { name: '_SCHEMA_ID', type: 'long' },
        { name: '_LEVEL', type: 'int' },
        { name: '_EXTRA_FILES', type: stringArray },
        { name: '_CREATION_TIME', ...nullable({ type: 'long', logicalType: 'timestamp-millis' }) },
        { name: '_DELETE_ROW_COUNT', ...nullable('long') },
        { name: '_EMBEDDED_FILE_INDEX', ...nullable('bytes') },
        { name: '_FILE_SOURCE', ...nullable('int') },
        { name: '_VALUE_STATS_COLS', ...nullable(stringArray) },
        { name: '_EXTERNAL_PATH', ...nullable('string') },
        { name: '_FIRST_ROW_ID', ...nullable('long') },
        { name: '_WRITE_COLS', ...nullable(stringArray) },
        { name: '_WRITE_COLS_SEQUENCES', ...nullable({ type: 'array', items: 'long' }) },
      ],
    },
  },
])

/** Java's writer schema for index-manifest records. */
export const INDEX_MANIFEST_ENTRY_SCHEMA = javaRecord([
  { name: '_VERSION', type: 'int' },
  { name: '_KIND', type: 'int' },
  { name: '_PARTITION', type: 'bytes' },
  { name: '_BUCKET', type: 'int' },
  { name: '_INDEX_TYPE', type: 'string' },
  { name: '_FILE_NAME', type: 'string' },
  { name: '_FILE_SIZE', type: 'long' },
  { name: '_ROW_COUNT', type: 'long' },
  {
    name: '_DELETIONS_VECTORS_RANGES',
    ...nullable({
      type: 'array',
      items: [
        'null',
        {
          type: 'record',
          name: 'record__DELETIONS_VECTORS_RANGES',
          fields: [
            { name: 'f0', type: 'string' },
            { name: 'f1', type: 'int' },
            { name: 'f2', type: 'int' },
            { name: '_CARDINALITY', ...nullable('long') },
          ],
        },
      ],
    }),
  },
  { name: '_EXTERNAL_PATH', ...nullable('string') },
  {
    name: '_GLOBAL_INDEX',
    ...nullable({
      type: 'record',
      name: 'record__GLOBAL_INDEX',
      fields: [
        { name: '_ROW_RANGE_START', type: 'long' },
        { name: '_ROW_RANGE_END', type: 'long' },
        { name: '_INDEX_FIELD_ID', type: 'int' },
        { name: '_EXTRA_FIELD_IDS', ...nullable({ type: 'array', items: 'int' }) },
        { name: '_INDEX_META', ...nullable('bytes') },
        { name: '_SOURCE_META', ...nullable('bytes') },
      ],
    }),
  },
])

// ---- manifest (ManifestEntry) ----

export function writeManifestFile(
  entries: ManifestEntry[],
  compression: ManifestCompression,
  options?: AvroWriteOptions,
): Uint8Array {
  const records = entries.map((e) => ({
    _VERSION: MANIFEST_ENTRY_VERSION,
    _KIND: fileKind(e.kind, 'ManifestEntry.kind'),
    _PARTITION: e.partition,
    _BUCKET: e.bucket,
    _TOTAL_BUCKETS: e.totalBuckets,
    _FILE: dataFileRecord(e.file),
  }))
  return writeAvroFile(MANIFEST_ENTRY_SCHEMA, records, compression, options)
}

export function readManifestFile(bytes: Uint8Array): ManifestEntry[] {
  return readRecords(bytes, 'manifest entry', MANIFEST_ENTRY_VERSION, 'ManifestEntrySerializer', (r) => ({
    kind: r.kind('_KIND'),
    partition: r.bytes('_PARTITION'),
    bucket: r.int('_BUCKET'),
    totalBuckets: r.int('_TOTAL_BUCKETS'),
    file: dataFileMeta(r.record('_FILE')),
  }))
}

/** What the sequence floor needs of a manifest entry (lib/write/table-write.ts). */
export interface EntrySequence {
  partition: Uint8Array
  bucket: number
  maxSequenceNumber: bigint
}

const SEQUENCE_FIELDS = new Set(['_PARTITION', '_BUCKET', '_FILE'])

/**
 * A manifest's entries reduced to partition, bucket and highest sequence number, decoded
 * through a projection of the file's schema: the other fields (statistics, keys, names) are
 * skipped, not built, which is most of a manifest's decoding time.
 */
export function readManifestSequences(bytes: Uint8Array): EntrySequence[] {
  const records = readAvroFileProjected(bytes, 'sequences', (schema) => ({
    ...schema,
    fields: schema.fields
      .filter((f: any) => SEQUENCE_FIELDS.has(f.name))
      .map((f: any) => (f.name === '_FILE' ? { ...f, type: { ...f.type, fields: f.type.fields.filter((g: any) => g.name === '_MAX_SEQUENCE_NUMBER') } } : f)),
  }))
  return records.map((rec, i) => {
    const r = new Fields(rec, `manifest entry #${i}`)
    return { partition: r.bytes('_PARTITION'), bucket: r.int('_BUCKET'), maxSequenceNumber: r.record('_FILE').long('_MAX_SEQUENCE_NUMBER') }
  })
}

function dataFileRecord(f: DataFileMeta) {
  return {
    _FILE_NAME: f.fileName,
    _FILE_SIZE: f.fileSize,
    _ROW_COUNT: f.rowCount,
    _MIN_KEY: f.minKey,
    _MAX_KEY: f.maxKey,
    _KEY_STATS: statsRecord(f.keyStats),
    _VALUE_STATS: statsRecord(f.valueStats),
    _MIN_SEQUENCE_NUMBER: f.minSequenceNumber,
    _MAX_SEQUENCE_NUMBER: f.maxSequenceNumber,
    _SCHEMA_ID: f.schemaId,
    _LEVEL: f.level,
    _EXTRA_FILES: f.extraFiles,
    _CREATION_TIME: f.creationTime,
    _DELETE_ROW_COUNT: f.deleteRowCount,
    _EMBEDDED_FILE_INDEX: f.embeddedIndex,
    _FILE_SOURCE: f.fileSource,
    _VALUE_STATS_COLS: f.valueStatsCols,
    _EXTERNAL_PATH: f.externalPath,
    _FIRST_ROW_ID: f.firstRowId,
    _WRITE_COLS: f.writeCols,
    // Row-tracking only (core:io/DataFileMeta.java); never set for primary-key tables.
    _WRITE_COLS_SEQUENCES: null,
  }
}

function dataFileMeta(r: Fields): DataFileMeta {
  return {
    fileName: r.string('_FILE_NAME'),
    fileSize: r.long('_FILE_SIZE'),
    rowCount: r.long('_ROW_COUNT'),
    minKey: r.bytes('_MIN_KEY'),
    maxKey: r.bytes('_MAX_KEY'),
    keyStats: simpleStats(r.record('_KEY_STATS')),
    valueStats: simpleStats(r.record('_VALUE_STATS')),
    minSequenceNumber: r.long('_MIN_SEQUENCE_NUMBER'),
    maxSequenceNumber: r.long('_MAX_SEQUENCE_NUMBER'),
    schemaId: r.long('_SCHEMA_ID'),
    level: r.int('_LEVEL'),
    extraFiles: r.strings('_EXTRA_FILES'),
    creationTime: r.optional('_CREATION_TIME', () => r.long('_CREATION_TIME')),
    deleteRowCount: r.optional('_DELETE_ROW_COUNT', () => r.long('_DELETE_ROW_COUNT')),
    embeddedIndex: r.optional('_EMBEDDED_FILE_INDEX', () => r.bytes('_EMBEDDED_FILE_INDEX')),
    fileSource: r.optional('_FILE_SOURCE', () => r.int('_FILE_SOURCE')),
    valueStatsCols: r.optional('_VALUE_STATS_COLS', () => r.strings('_VALUE_STATS_COLS')),
    externalPath: r.optional('_EXTERNAL_PATH', () => r.string('_EXTERNAL_PATH')),
    firstRowId: r.optional('_FIRST_ROW_ID', () => r.long('_FIRST_ROW_ID')),
    writeCols: r.optional('_WRITE_COLS', () => r.strings('_WRITE_COLS')),
  }
}

function statsRecord(s: SimpleStats) {
  return { _MIN_VALUES: s.minValues, _MAX_VALUES: s.maxValues, _NULL_COUNTS: s.nullCounts }
}

function simpleStats(r: Fields): SimpleStats {
  return {
    minValues: r.bytes('_MIN_VALUES'),
    maxValues: r.bytes('_MAX_VALUES'),
    nullCounts: r.optional('_NULL_COUNTS', () => r.list('_NULL_COUNTS', (v, at) => (v === null ? null : toLong(v, at)))),
  }
}

// ---- manifest list (ManifestFileMeta) ----

export function writeManifestList(
  metas: ManifestFileMeta[],
  compression: ManifestCompression,
  options?: AvroWriteOptions,
): Uint8Array {
  const records = metas.map((m) => ({
    _VERSION: MANIFEST_FILE_META_VERSION,
    _FILE_NAME: m.fileName,
    _FILE_SIZE: m.fileSize,
    _NUM_ADDED_FILES: m.numAddedFiles,
    _NUM_DELETED_FILES: m.numDeletedFiles,
    _PARTITION_STATS: statsRecord(m.partitionStats),
    _SCHEMA_ID: m.schemaId,
    _MIN_BUCKET: m.minBucket,
    _MAX_BUCKET: m.maxBucket,
    _MIN_LEVEL: m.minLevel,
    _MAX_LEVEL: m.maxLevel,
    // Row ids exist only with row tracking; null for primary-key tables.
    _MIN_ROW_ID: null,
    _MAX_ROW_ID: null,
  }))
  return writeAvroFile(MANIFEST_FILE_META_SCHEMA, records, compression, options)
}

export function readManifestList(bytes: Uint8Array): ManifestFileMeta[] {
  return readRecords(bytes, 'manifest list record', MANIFEST_FILE_META_VERSION, 'ManifestFileMetaSerializer', (r) => ({
    fileName: r.string('_FILE_NAME'),
    fileSize: r.long('_FILE_SIZE'),
    numAddedFiles: r.long('_NUM_ADDED_FILES'),
    numDeletedFiles: r.long('_NUM_DELETED_FILES'),
    partitionStats: simpleStats(r.record('_PARTITION_STATS')),
    schemaId: r.long('_SCHEMA_ID'),
    minBucket: r.optional('_MIN_BUCKET', () => r.int('_MIN_BUCKET')),
    maxBucket: r.optional('_MAX_BUCKET', () => r.int('_MAX_BUCKET')),
    minLevel: r.optional('_MIN_LEVEL', () => r.int('_MIN_LEVEL')),
    maxLevel: r.optional('_MAX_LEVEL', () => r.int('_MAX_LEVEL')),
  }))
}

// ---- index manifest (IndexManifestEntry) ----

export function writeIndexManifest(
  entries: IndexManifestEntry[],
  compression: ManifestCompression,
  options?: AvroWriteOptions,
): Uint8Array {
  const records = entries.map((e) => ({
    _VERSION: INDEX_MANIFEST_ENTRY_VERSION,
    _KIND: fileKind(e.kind, 'IndexManifestEntry.kind'),
    _PARTITION: e.partition,
    _BUCKET: e.bucket,
    _INDEX_TYPE: e.indexType,
    _FILE_NAME: e.fileName,
    _FILE_SIZE: e.fileSize,
    _ROW_COUNT: e.rowCount,
    _DELETIONS_VECTORS_RANGES:
      e.dvRanges?.map((d) => ({ f0: d.dataFileName, f1: d.offset, f2: d.length, _CARDINALITY: d.cardinality })) ??
      null,
    _EXTERNAL_PATH: e.externalPath,
    // Global indexes (core:index/GlobalIndexMeta.java) are not DV/HASH indexes; never written.
    _GLOBAL_INDEX: null,
  }))
  return writeAvroFile(INDEX_MANIFEST_ENTRY_SCHEMA, records, compression, options)
}

export function readIndexManifest(bytes: Uint8Array): IndexManifestEntry[] {
  return readRecords(bytes, 'index manifest entry', INDEX_MANIFEST_ENTRY_VERSION, 'IndexManifestEntrySerializer', (r) => ({
    kind: r.kind('_KIND'),
    partition: r.bytes('_PARTITION'),
    bucket: r.int('_BUCKET'),
    indexType: r.string('_INDEX_TYPE'),
    fileName: r.string('_FILE_NAME'),
    fileSize: r.long('_FILE_SIZE'),
    rowCount: r.long('_ROW_COUNT'),
    dvRanges: r.optional('_DELETIONS_VECTORS_RANGES', () =>
      r.list('_DELETIONS_VECTORS_RANGES', (v, at) => deletionVectorMeta(new Fields(v, at))),
    ),
    externalPath: r.optional('_EXTERNAL_PATH', () => r.string('_EXTERNAL_PATH')),
  }))
}

function deletionVectorMeta(r: Fields): DeletionVectorMeta {
  return {
    dataFileName: r.string('f0'),
    offset: r.int('f1'),
    length: r.int('f2'),
    cardinality: r.optional('_CARDINALITY', () => r.long('_CARDINALITY')),
  }
}

// ---- field access by name, for records read from any writer's schema ----

function fileKind(kind: unknown, field: string): FileKind {
  if (kind !== 0 && kind !== 1) throw new Error(`${field}: ${String(kind)}, expected 0 (ADD) or 1 (DELETE)`)
  return kind
}

/** The records of an Avro file, each checked to be of `version` (Paimon's `serializer`) and read by `read`. */
function readRecords<T>(bytes: Uint8Array, what: string, version: number, serializer: string, read: (r: Fields) => T): T[] {
  return readAvroFile(bytes).records.map((rec, i) => {
    const r = new Fields(rec, `${what} #${i}`)
    checkVersion(r, version, serializer)
    return read(r)
  })
}

function checkVersion(r: Fields, expected: number, serializer: string): void {
  const v = r.int('_VERSION')
  if (v !== expected) {
    const hint = expected === 2 && v === 1 ? '; files of format version 1 need the table to be recreated' : ''
    throw new Error(`${r.at}: _VERSION is ${v}, expected ${expected} (Paimon ${serializer})${hint}`)
  }
}

/** A decoded Avro record, read field by field with the record's position in every error. */
class Fields {
  constructor(
    private readonly rec: any,
    readonly at: string,
  ) {
    if (rec === null || typeof rec !== 'object' || Array.isArray(rec)) {
      throw new Error(`${at}: ${rec === null ? 'null' : typeof rec}, expected a record`)
    }
  }

  private get(name: string): unknown {
    const v = this.rec[name]
    if (v === undefined || v === null) throw new Error(`${this.at}: required field ${name} is missing or null`)
    return v
  }

  optional<T>(name: string, read: () => T): T | null {
    const v = this.rec[name]
    return v === undefined || v === null ? null : read()
  }

  int(name: string): number {
    return toInt(this.get(name), `${this.at}.${name}`)
  }

  long(name: string): bigint {
    return toLong(this.get(name), `${this.at}.${name}`)
  }

  kind(name: string): FileKind {
    const v = this.int(name)
    if (v !== 0 && v !== 1) throw new Error(`${this.at}.${name}: ${v}, expected 0 (ADD) or 1 (DELETE)`)
    return v
  }

  string(name: string): string {
    const v = this.get(name)
    if (typeof v !== 'string') throw new Error(`${this.at}.${name}: ${typeof v}, expected a string`)
    return v
  }

  bytes(name: string): Uint8Array {
    const v = this.get(name)
    if (!(v instanceof Uint8Array)) throw new Error(`${this.at}.${name}: ${typeof v}, expected bytes`)
    return v
  }

  record(name: string): Fields {
    return new Fields(this.get(name), `${this.at}.${name}`)
  }

  list<T>(name: string, item: (v: unknown, at: string) => T): T[] {
    const v = this.get(name)
    if (!Array.isArray(v)) throw new Error(`${this.at}.${name}: ${typeof v}, expected an array`)
    return v.map((x, i) => item(x, `${this.at}.${name}[${i}]`))
  }

  strings(name: string): string[] {
    return this.list(name, (v, at) => {
      if (typeof v !== 'string') throw new Error(`${at}: ${v === null ? 'null' : typeof v}, expected a string`)
      return v
    })
  }
}

// Another writer may have used long where Java has int, or the reverse; accept both when exact.
function toInt(v: unknown, at: string): number {
  if (typeof v === 'number' && Number.isInteger(v)) return v
  if (typeof v === 'bigint' && v >= -(2n ** 31n) && v < 2n ** 31n) return Number(v)
  throw new Error(`${at}: ${String(v)}, expected an int`)
}

function toLong(v: unknown, at: string): bigint {
  if (typeof v === 'bigint') return v
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v)
  throw new Error(`${at}: ${v === null ? 'null' : String(v)}, expected a long`)
}
