// The one table of table options: Paimon's keys, types, defaults and a line of doc each,
// parsed and validated in one place. An unknown key or an ill-typed value is an error that
// names the key, the value and what was expected (a typo is an error, not a silent
// default). Defaults are Paimon's (api:CoreOptions.java) unless the doc says why not.

import { changelogProducerConflict, deletionVectorsConflict } from '../merge/engines.ts'
import { optionKeysOfMergeEngines } from '../merge/merge-config.ts'
import zlib from 'node:zlib'
import { RefusedError, StrataInputError } from '../errors.ts'
import { POSTPONE_BUCKET } from '../format/partition-path.ts'

/** `bucket` -1: dynamic bucket mode (docs/design.md "Dynamic buckets"). */
export const DYNAMIC_BUCKET = -1

/** Dynamic bucket mode: most buckets of a partition when `dynamic-bucket.max-buckets` is -1 (Paimon stops at Short.MAX_VALUE). */
export const DYNAMIC_UNBOUNDED_MAX_BUCKETS = 32767

export type OptionType = 'int' | 'long' | 'boolean' | 'string' | 'memory' | 'duration' | 'enum'

export interface OptionSpec {
  key: string
  type: OptionType
  /** default as Paimon spells it in a schema file; undefined = no default */
  default?: string
  values?: string[]
  min?: number
  /** the largest value Strata creates a table with (a stored schema may hold more) */
  max?: number
  /** string options: the accepted spelling, and how a message describes it */
  pattern?: { regex: RegExp; expected: string }
  doc: string
}

const KB = 1024
const MB = 1024 * KB

/**
 * Most buckets per partition a new table may have. The format's bucket ids are 32-bit ints,
 * but everything else scales with the count: a write spread over all buckets puts one data
 * file and one compaction job per bucket (at 10 jobs per FIFO SendMessageBatch call, 32,768
 * buckets are 3,277 calls, about 11 s at a FIFO queue's 300 calls/s), every job reads the
 * index manifest, which has an entry per bucket with deletion vectors, and a scan plan reads
 * a manifest list of up to merge-min-count records per bucket group and the manifests they
 * name. docs/operations.md "Limits a new table is held to" has the figures.
 */
export const MAX_BUCKETS = 32768

/**
 * Most LSM levels a table may have. Level arrays are allocated per bucket (compaction, status)
 * and universal compaction never fills more than compaction-trigger + 1 of them.
 */
export const MAX_LEVELS = 100

/**
 * A data-file.prefix that keeps every data file a plain name inside its bucket directory: no
 * path separator, no '.' first (no '..', no hidden or '.tmp-' names), at most 64 characters
 * (a data file's name then stays far below a file system's 255 bytes).
 */
const SAFE_PREFIX = /^(?:[A-Za-z0-9_-][A-Za-z0-9._-]{0,63})?$/
const SAFE_PREFIX_TEXT = "at most 64 ASCII letters, digits, '-', '_' and '.', not starting with '.'"

export const OPTION_SPECS: OptionSpec[] = [
  { key: 'bucket', type: 'int', default: '1', min: 1, max: MAX_BUCKETS, doc: 'Fixed number of buckets per partition, at most 32768; or -2, postpone bucket mode: writers write to bucket-postpone without choosing a bucket, and a postpone compaction assigns the rows to the partition\'s buckets (docs/design.md "Postpone buckets"). Or -1, dynamic bucket mode (Paimon\'s default when a schema has no bucket): keys are assigned to buckets through the partition\'s HASH index, dynamic-bucket.target-row-num keys a bucket (docs/design.md "Dynamic buckets"). A table Strata creates without bucket gets 1.' },
  // dynamic bucket mode (bucket -1): docs/design.md "Dynamic buckets"
  { key: 'dynamic-bucket.target-row-num', type: 'long', default: '2000000', min: 1, doc: 'Dynamic bucket mode: keys a bucket takes before new keys go to the next bucket (Paimon\'s option and default).' },
  { key: 'dynamic-bucket.max-buckets', type: 'int', default: '-1', min: -1, doc: 'Dynamic bucket mode: most buckets of a partition, -1 for no limit (Paimon\'s), else at least 1; once every bucket is full, a new key goes to a bucket its hash picks (Paimon picks at random).' },
  { key: 'dynamic-bucket.initial-buckets', type: 'int', min: 1, doc: 'Paimon\'s: the number of assigners of its Flink job in dynamic bucket mode. Accepted; Strata assigns each partition\'s keys as one assigner, so buckets are 0, 1, 2, ...' },
  { key: 'dynamic-bucket.assigner-parallelism', type: 'int', min: 1, doc: 'Paimon\'s: the parallelism of its Flink assigner operator in dynamic bucket mode. Accepted, unused by Strata.' },
  // postpone bucket mode (bucket -2): docs/design.md "Postpone buckets"
  { key: 'postpone.default-bucket-num', type: 'int', default: '1', min: 1, max: MAX_BUCKETS, doc: 'Postpone bucket mode: the number of buckets a partition gets when its postponed rows are compacted for the first time; a partition keeps the count it has.' },
  { key: 'postpone.batch-write-fixed-bucket', type: 'boolean', default: 'true', doc: 'Paimon\'s: a bounded (batch) Flink job writes a postpone table straight into the partitions\' buckets. Accepted; Strata\'s writers are many uncoordinated writers, as Paimon\'s streaming ones, and always write to bucket-postpone.' },
  { key: 'postpone.batch-write-fixed-bucket.max-parallelism', type: 'int', default: '2048', min: 1, doc: 'Paimon\'s (a Flink job\'s parallelism); accepted, unused by Strata.' },
  { key: 'bucket-key', type: 'string', doc: 'Comma-separated bucket key fields, a subset of the primary key without partition keys; default the trimmed primary key.' },
  { key: 'file.format', type: 'enum', default: 'parquet', values: ['parquet'], doc: 'Data file format. Strata writes Parquet data files; it reads a file by its extension, as Paimon does: Parquet and Avro (a table Paimon made with avro is read, written and compacted, new files in Parquet), ORC refused by name. A new table takes parquet only (docs/format.md "Data file formats").' },
  { key: 'file.compression', type: 'enum', default: 'snappy', values: ['none', 'snappy', 'gzip', 'zstd'], doc: 'Parquet compression. Paimon defaults to zstd; Strata defaults to snappy because Node 20 has no zstd encoder (zstd works on Node >= 22.15, i.e. Lambda nodejs22.x) and because on Node 22 zstd makes files about half the size at about 40% more compaction CPU.' },
  { key: 'file.compression.zstd-level', type: 'int', default: '1', max: 22, doc: 'zstd level of Parquet pages when file.compression is zstd, at most 22 for a new table (Paimon\'s option and default; node:zlib\'s own default is 3). Manifests keep level 1.' },
  { key: 'manifest.compression', type: 'enum', default: 'deflate', values: ['null', 'deflate', 'snappy', 'zstd', 'zstandard'], doc: 'Avro codec of manifests, by the names Paimon takes (Avro\'s, and zstd): null (uncompressed), deflate, snappy, zstd or zstandard (Node >= 22.15). Paimon defaults to zstd; Strata to deflate for the same reason as file.compression. none is refused (Paimon hands it to Avro, which does not know it); a schema an older Strata stored with none is read as null.' },
  { key: 'target-file-size', type: 'memory', default: '128 mb', min: 1, doc: 'Target size of a data file; compaction output rolls to a new file past it.' },
  { key: 'num-levels', type: 'int', min: 2, max: MAX_LEVELS, doc: 'Number of LSM levels, at most 100; default num-sorted-run.compaction-trigger + 1.' },
  { key: 'num-sorted-run.compaction-trigger', type: 'int', default: '5', min: 1, max: MAX_LEVELS - 1, doc: 'Sorted-run count that triggers compaction (L0 files count one each, each higher level one), at most 99.' },
  { key: 'num-sorted-run.stop-trigger', type: 'int', min: 1, doc: 'Sorted-run count past which a bucket reports back-pressure; default compaction-trigger + 3. Must not be below the compaction trigger.' },
  { key: 'compaction.max-size-amplification-percent', type: 'int', default: '200', min: 0, doc: 'Universal compaction: full compaction when (all runs but the oldest) / oldest exceeds this percentage.' },
  { key: 'compaction.size-ratio', type: 'int', default: '1', min: 0, doc: 'Universal compaction: percentage flexibility when comparing sorted-run sizes.' },
  { key: 'compaction.max-input-files', type: 'int', default: '50', min: 2, doc: 'Strata only: most input files one compaction job takes; a bucket that needs more gets a follow-up job. Was compaction.max.file-num (an append-table option Paimon removed), which a stored schema may still carry: it is read when this option is absent.' },
  { key: 'compaction.task-threads', type: 'int', default: '1', doc: 'Compactions running at once across the buckets of a table: 1 (Paimon today), N >= 2, or -1 for one per active bucket. One bucket never has two at once.' },
  { key: 'deletion-vectors.enabled', type: 'boolean', default: 'false', doc: 'Deletion-vector mode: compaction lifts all of L0 and marks superseded rows in deletion vectors; readers skip L0 and merge nothing.' },
  { key: 'deletion-vectors.bitmap64', type: 'boolean', default: 'false', doc: 'Write 64-bit (Iceberg-compatible) deletion vectors instead of 32-bit ones.' },
  { key: 'deletion-vectors.merge-on-read', type: 'boolean', default: 'false', doc: 'In deletion-vector mode, readers also merge L0 files in, for freshness at the cost of a merge.' },
  { key: 'deletion-vector.index-file.target-size', type: 'memory', default: '2 mb', min: 1, doc: 'Size at which a compaction closes a deletion-vector index file and starts the next (Paimon\'s rolling: a file passes it by at most one vector).' },
  { key: 'index-file-in-data-file-dir', type: 'boolean', default: 'false', doc: 'Deletion-vector index files live in their bucket directory instead of index/ (Paimon\'s option, which Paimon records nowhere else); Strata reads and writes them where it says.' },
  { key: 'data-file.external-paths', type: 'string', doc: 'Locations outside the table where Paimon writes new data files. Strata reads a file stored at an external path only inside the table directory, and refuses the others naming this option; it writes none (see data-file.external-paths.strategy).' },
  { key: 'data-file.external-paths.strategy', type: 'enum', default: 'none', values: ['none'], doc: 'How Paimon spreads new data files over data-file.external-paths; Strata writes only none (a table with another strategy stays readable).' },
  { key: 'manifest.merge-min-count', type: 'int', default: '30', min: 2, doc: 'Manifests of one bucket group (see manifest.bucket-group-size) past which a commit merges them into one.' },
  { key: 'manifest.target-file-size', type: 'memory', default: '8 mb', min: 1, doc: 'Target size of a merged manifest file; a merge rolls to a new file past it.' },
  { key: 'manifest.bucket-group-size', type: 'int', default: '64', min: 1, doc: 'Strata only: buckets per manifest group. Every manifest Strata writes holds the entries of one group of consecutive buckets, so a job on one bucket decodes only its group\'s manifests, whatever the bucket count.' },
  { key: 'io.max-concurrent-requests', type: 'int', default: '64', min: 1, doc: 'Strata only: object-store requests one operation keeps in flight at once (a writer\'s data files, a compaction\'s or read\'s input files, a commit\'s manifests).' },
  { key: 'commit.max-retries', type: 'int', default: '10', min: 0, doc: 'Attempts after a lost snapshot race before a commit gives up.' },
  { key: 'commit.user-prefix', type: 'string', doc: 'Prefix of generated commit users.' },
  { key: 'snapshot.num-retained.min', type: 'int', default: '10', min: 1, doc: 'Snapshots always kept by expiration.' },
  { key: 'snapshot.num-retained.max', type: 'int', default: '2147483647', min: 1, doc: 'Snapshots kept at most by expiration; not below snapshot.num-retained.min.' },
  { key: 'snapshot.time-retained', type: 'duration', default: '1 h', doc: 'Snapshots younger than this are kept by expiration.' },
  { key: 'snapshot.expire.limit', type: 'int', default: '50', min: 1, doc: 'Most snapshots one expiration call removes.' },
  { key: 'consumer.expiration-time', type: 'duration', doc: 'Consumer files (consumer/consumer-<id>, the progress of `strata read --consumer-id`) not rewritten for this long are deleted by snapshot expiration, so an abandoned consumer stops holding snapshots back; default never. Paimon deletes them at commit.' },
  { key: 'disable-explicit-type-casting', type: 'boolean', default: 'false', doc: "Paimon's. When true, `alter … modify` takes only implicit casts (e.g. INT → BIGINT), refusing explicit ones such as STRING → BYTES." },
  { key: 'scan.mode', type: 'enum', default: 'default', values: ['default', 'latest-full', 'full', 'latest', 'from-snapshot', 'from-snapshot-full', 'from-timestamp'], doc: "Where a streaming read starts when it names no start of its own (`read --follow`, or a consumer without --from-snapshot): Paimon's startup modes; default is latest-full, or from-snapshot / from-timestamp when scan.snapshot-id / scan.timestamp-millis is set." },
  { key: 'scan.snapshot-id', type: 'long', min: 1, doc: 'The snapshot a from-snapshot or from-snapshot-full streaming start begins at (an expired one is raised to the earliest retained, as in Paimon).' },
  { key: 'scan.timestamp-millis', type: 'long', min: 0, doc: 'The time a from-timestamp streaming start begins at: the first snapshot committed at or after it.' },
  { key: 'consumer.ignore-progress', type: 'boolean', default: 'false', doc: 'A read with a consumer id starts at --from-snapshot even when the consumer has progress recorded (and records its new progress as usual).' },
  { key: 'partition.default-name', type: 'string', default: '__DEFAULT_PARTITION__', pattern: { regex: /^[\s\S]+$/, expected: 'a non-empty string' }, doc: 'Directory name of a null or blank partition value; not empty.' },
  { key: 'partition.legacy-name', type: 'boolean', default: 'true', values: ['true'], doc: 'Partition directory values as Java toString of the internal value; only true is supported.' },
  { key: 'primary-key.nullable', type: 'boolean', default: 'false', values: ['false'], doc: 'Primary key fields are NOT NULL; only false is supported.' },
  {
    key: 'data-file.prefix',
    type: 'string',
    default: 'data-',
    pattern: { regex: SAFE_PREFIX, expected: SAFE_PREFIX_TEXT },
    doc: "File name prefix of data files: at most 64 ASCII letters, digits, '-', '_' and '.', not starting with '.'.",
  },
  { key: 'changelog-producer', type: 'enum', default: 'none', values: ['none', 'input', 'lookup'], doc: "Changelog files a commit adds beside its data (Paimon's format, docs/format.md \"Changelog files\"): none; input (each write's records as given, with their row kinds, in its APPEND snapshot); lookup (compaction of level 0 looks each rising key up in the higher levels and writes +I, -U/+U or -D in its COMPACT snapshot; level 0 is then always compacted). full-compaction is refused; a first-row table takes none or lookup, as in Paimon." },
  { key: 'changelog-producer.row-deduplicate', type: 'boolean', default: 'false', doc: 'changelog-producer lookup: an update that leaves the row as it was produces no -U/+U pair (Paimon\'s default, false, writes the pair anyway).' },
  { key: 'write.max-row-size', type: 'memory', default: '4 mb', min: 1, doc: 'Strata only: largest row a write accepts, measured as its fields\' encoded bytes (strings as UTF-8, bytes raw, 8 per fixed-width value). A larger row is rejected with its key and size. The default keeps every row inside the reader function\'s 6 MB response limit, even as base64.' },
  { key: 'write-buffer-size', type: 'memory', default: '64 mb', min: 1, doc: 'Memory a write buffers before it sorts, merges and writes each buffered bucket as a level-0 file (Paimon\'s write buffer); a larger batch is written in several flushes, each merged on its own, and still commits as one snapshot. Counted as the buffered records\' estimated JavaScript heap, which is several times their encoded size, so the default is 64 mb where Paimon\'s (binary rows in managed memory) is 256 mb: a writer then stays within a small Lambda or a laptop whatever the batch size.' },
  { key: 'write-only', type: 'boolean', default: 'false', doc: 'Accepted for Paimon compatibility; Strata writers never compact inline.' },
  { key: 'path', type: 'string', doc: 'Table location as Paimon catalogs record it; informational.' },
  // Paimon's Iceberg compatibility (docs/format.md "Iceberg metadata"; lib/iceberg/options.ts reads them)
  { key: 'metadata.iceberg.storage', type: 'enum', default: 'disabled', values: ['disabled', 'table-location', 'hadoop-catalog'], doc: 'Iceberg metadata written beside every snapshot: disabled; table-location (<table>/metadata/); hadoop-catalog (<warehouse>/iceberg/<db>/<table>/metadata/). The table must be <warehouse>/<db>.db/<table>. hive-catalog and rest-catalog are refused.' },
  { key: 'metadata.iceberg.storage-location', type: 'enum', values: ['table-location', 'catalog-location'], doc: 'Where the Iceberg metadata goes, overriding the storage type\'s place: table-location (<table>/metadata/) or catalog-location (<warehouse>/iceberg/<db>/<table>/metadata/).' },
  { key: 'metadata.iceberg.format-version', type: 'enum', default: '2', values: ['2', '3'], doc: 'Iceberg format version: 2 (readers see the top level only, without its deletion vectors, as Paimon writes it) or 3 (deletion vectors handed to Iceberg, readers see every level above 0; needs deletion-vectors.bitmap64 when deletion vectors are on; row lineage written).' },
  { key: 'metadata.iceberg.manifest-compression', type: 'enum', default: 'snappy', values: ['null', 'deflate', 'snappy', 'zstd', 'zstandard'], doc: 'Avro codec of the Iceberg manifests and manifest lists, by the names Paimon takes (Avro\'s, and zstd): null (uncompressed), deflate, snappy (Paimon\'s default), zstd or zstandard (Node >= 22.15).' },
  { key: 'metadata.iceberg.manifest-legacy-version', type: 'boolean', default: 'false', doc: 'Manifest lists with Iceberg 1.4\'s field names (added_data_files_count, …) for old readers.' },
  { key: 'metadata.iceberg.compaction.min.file-num', type: 'int', default: '10', min: 2, doc: 'Small Iceberg data manifests (under 2/3 of manifest.target-file-size) that make a commit consider merging them.' },
  { key: 'metadata.iceberg.compaction.max.file-num', type: 'int', default: '50', min: 2, doc: 'Small Iceberg data manifests past which a commit merges them whatever their total size.' },
  { key: 'metadata.iceberg.delete-after-commit.enabled', type: 'boolean', default: 'true', doc: 'Delete Iceberg metadata files older than metadata.iceberg.previous-versions-max after each commit (Strata keeps at least one previous version).' },
  { key: 'metadata.iceberg.previous-versions-max', type: 'int', default: '0', min: 0, doc: 'Previous Iceberg metadata files kept after each commit when delete-after-commit is on (Strata keeps at least 1).' },
  { key: 'metadata.iceberg.database', type: 'string', doc: 'Database name a catalog pointer registers the Iceberg table under (default: the table\'s <db>.db directory without .db).' },
  { key: 'metadata.iceberg.table', type: 'string', doc: 'Table name a catalog pointer registers the Iceberg table under (default: the table\'s directory name).' },
  { key: 'metadata.iceberg.glue.skip-archive', type: 'boolean', default: 'false', doc: 'The AWS Glue pointer skips archiving the previous table version when it moves.' },
]

const SPEC_BY_KEY = new Map(OPTION_SPECS.map((s) => [s.key, s]))

/** The job input cap's name before 'compaction.max-input-files' (read from stored schemas, refused at create). */
const RENAMED_MAX_INPUT_FILES = 'compaction.max.file-num'

/** Paimon's options that keep changelog files longer than their snapshots (decoupled changelog): refused at create, and by expiration of a table that stores them. */
export const CHANGELOG_RETENTION_KEYS = ['changelog.num-retained.min', 'changelog.num-retained.max', 'changelog.time-retained']

/** Iceberg table properties written into the Iceberg metadata (`metadata.iceberg.table-properties.<key>`). */
export const ICEBERG_TABLE_PROPERTIES_PREFIX = 'metadata.iceberg.table-properties.'

/** Paimon's Iceberg keys that only its Hive and REST committers read: refused, since Strata writes neither. */
const ICEBERG_CATALOG_ONLY_KEYS = ['metadata.iceberg.uri', 'metadata.iceberg.hive-conf-dir', 'metadata.iceberg.hadoop-conf-dir', 'metadata.iceberg.hive-client-class', 'metadata.iceberg.hive-skip-update-stats']
const ICEBERG_REST_PREFIX = 'metadata.iceberg.rest.'

/**
 * Stored values read as another: a schema an older Strata stored with manifest.compression
 * none means Avro's null codec. Never written again: create and alter refuse none, naming null.
 */
const STORED_ALIASES: Record<string, Record<string, string>> = { 'manifest.compression': { none: 'null' } }

/**
 * Stored values a table is still written with beyond those a new table takes: a table Paimon
 * made with file.format avro gets Parquet files beside its Avro ones (docs/format.md "Data
 * file formats").
 */
const STORED_WRITABLE: Record<string, string[]> = { 'file.format': ['avro'] }

/** A stored value of an enum option as Strata reads it: trimmed, lower case, an alias resolved. */
function storedEnumValue(key: string, text: string): string {
  const v = text.trim().toLowerCase()
  return STORED_ALIASES[key]?.[v] ?? v
}

/** Why a value of file.format or manifest.compression is refused at create or alter, or null. */
function formatOptionRefusal(key: string, text: string): string | null {
  const v = text.trim().toLowerCase()
  if (key === 'manifest.compression' && v === 'none') {
    return `option 'manifest.compression': value ${JSON.stringify(text)} is not an Avro codec name (Paimon hands the value to Avro, so its commits to the table fail with "Unrecognized codec: none"); expected null for uncompressed manifests, or deflate, snappy, zstd, zstandard`
  }
  if (key === 'manifest.compression' && (v === 'bzip2' || v === 'xz')) {
    return `option 'manifest.compression': value ${JSON.stringify(text)} is an Avro codec Strata can neither write nor read; expected null, deflate, snappy, zstd or zstandard`
  }
  if (key === 'file.format' && v === 'avro') {
    return `option 'file.format': value ${JSON.stringify(text)} is not taken for a table Strata creates or alters: Strata writes Parquet data files (it reads the Avro files of a table Paimon made with avro, and writes Parquet files beside them, which Paimon reads by their extension); expected parquet`
  }
  if (key === 'file.format' && v === 'orc') {
    return `option 'file.format': value ${JSON.stringify(text)} is not supported: Strata neither reads nor writes ORC data files (there is no maintained ORC reader for JavaScript); expected parquet`
  }
  return null
}

/** Why an Iceberg key or storage value is refused, or null (docs/format.md "Iceberg metadata"). */
function icebergOptionRefusal(key: string, text: string): string | null {
  const storage = text.trim().toLowerCase()
  if (key === 'metadata.iceberg.manifest-compression' && storage === 'none') {
    return `option 'metadata.iceberg.manifest-compression': value ${JSON.stringify(text)} is not an Avro codec name (Paimon hands the value to Avro, which fails with "Unrecognized codec: none"); expected null for uncompressed manifests, or deflate, snappy, zstd`
  }
  if (key === 'metadata.iceberg.storage' && (storage === 'hive-catalog' || storage === 'rest-catalog')) {
    return `option 'metadata.iceberg.storage': value ${JSON.stringify(text)} is not supported by Strata: it writes the Iceberg metadata files only and registers no ${storage === 'hive-catalog' ? 'Hive Metastore' : 'REST catalog'} table; expected disabled, table-location or hadoop-catalog (an AWS Glue pointer can be given to the committer)`
  }
  if (ICEBERG_CATALOG_ONLY_KEYS.includes(key) || (key.startsWith(ICEBERG_REST_PREFIX) && key.length > ICEBERG_REST_PREFIX.length)) {
    return `option '${key}' (value ${JSON.stringify(text)}) is not supported: only Paimon's hive-catalog and rest-catalog Iceberg storage read it, which Strata does not write`
  }
  return null
}

/** Keys the merge engines understand (merge-engine, fields.<f>.aggregate-function, …). */
const mergeKeys = optionKeysOfMergeEngines()
const extraKeys = new Set<string>(mergeKeys.exact)
const extraPatterns: RegExp[] = mergeKeys.patterns

/**
 * Whether Strata knows what option `key` means: its table, the merge engines' keys, and the
 * Paimon keys it reads but refuses at create. Other tools' keys pass in a stored schema.
 */
export function isKnownOptionKey(key: string): boolean {
  return SPEC_BY_KEY.has(key) || extraKeys.has(key) || key.startsWith(ICEBERG_TABLE_PROPERTIES_PREFIX) || extraPatterns.some((p) => p.test(key)) || key === RENAMED_MAX_INPUT_FILES || CHANGELOG_RETENTION_KEYS.includes(key)
}

/** Paimon spells memory sizes like `128 mb`, `64MB`, `1 gb` or plain bytes. */
export function parseMemorySize(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i.exec(text)
  if (!m) return null
  const unit = m[2].toLowerCase()
  const mult: Record<string, number> = { '': 1, b: 1, bytes: 1, k: KB, kb: KB, kib: KB, m: MB, mb: MB, mib: MB, g: 1024 * MB, gb: 1024 * MB, gib: 1024 * MB, t: 1024 * 1024 * MB, tb: 1024 * 1024 * MB }
  if (!(unit in mult)) return null
  return Math.round(Number(m[1]) * mult[unit])
}

/** Paimon durations (`TimeUtils.parseDuration`): `1 h`, `30 min`, `10 s`, `100 ms`, plain millis. */
export function parseDuration(text: string): number | null {
  const m = /^\s*(\d+)\s*([a-z]*)\s*$/i.exec(text)
  if (!m) return null
  const unit = m[2].toLowerCase()
  const mult: Record<string, number> = {
    '': 1, ms: 1, milli: 1, millis: 1, millisecond: 1, milliseconds: 1,
    s: 1000, sec: 1000, secs: 1000, second: 1000, seconds: 1000,
    m: 60_000, min: 60_000, mins: 60_000, minute: 60_000, minutes: 60_000,
    h: 3_600_000, hour: 3_600_000, hours: 3_600_000,
    d: 86_400_000, day: 86_400_000, days: 86_400_000,
  }
  if (!(unit in mult)) return null
  return Number(m[1]) * mult[unit]
}

function expected(spec: OptionSpec): string {
  switch (spec.type) {
    case 'int':
    case 'long':
      if (spec.min !== undefined && spec.max !== undefined) return `an integer in ${spec.min}..${spec.max}`
      if (spec.max !== undefined) return `an integer <= ${spec.max}`
      return spec.min !== undefined ? `an integer >= ${spec.min}` : 'an integer'
    case 'boolean':
      return spec.values ? `${spec.values.join(' or ')}` : 'true or false'
    case 'memory':
      return "a memory size such as '128 mb'"
    case 'duration':
      return "a duration such as '1 h', '30 min' or '10 s'"
    case 'enum':
      return `one of ${spec.values!.join(', ')}`
    default:
      return spec.pattern?.expected ?? 'a string'
  }
}

/**
 * Checks one value against its spec. `stored` (a schema another tool may have written): the
 * value must parse as its type and not be below the minimum the code relies on; the maximum,
 * the allowed values and the spelling rules are what Strata creates tables with, and Paimon's
 * bucket modes (-1 dynamic, -2 postpone) still read.
 */
function checkValue(spec: OptionSpec, raw: string, stored = false): void {
  const bad = () => new StrataInputError(`option '${spec.key}': invalid value ${JSON.stringify(raw)}, expected ${expected(spec)}`)
  switch (spec.type) {
    case 'int':
    case 'long': {
      if (!/^-?\d+$/.test(raw.trim())) throw bad()
      const n = Number(raw)
      if (spec.type === 'int' && (n > 2147483647 || n < -2147483648)) throw bad()
      if (spec.type === 'long' && !Number.isSafeInteger(n)) throw bad()
      if (spec.min !== undefined && n < spec.min && !(spec.key === 'bucket' && (stored || n === POSTPONE_BUCKET || n === DYNAMIC_BUCKET))) throw bad()
      if (!stored && spec.max !== undefined && n > spec.max) throw bad()
      break
    }
    case 'boolean':
      if (!['true', 'false'].includes(raw.trim().toLowerCase())) throw bad()
      if (!stored && spec.values && !spec.values.includes(raw.trim().toLowerCase())) throw bad()
      break
    case 'memory': {
      const n = parseMemorySize(raw)
      if (n === null || !Number.isSafeInteger(n) || (spec.min !== undefined && n < spec.min)) throw bad()
      break
    }
    case 'duration': {
      const n = parseDuration(raw)
      if (n === null || !Number.isSafeInteger(n)) throw bad()
      break
    }
    case 'enum':
      if (!stored && !spec.values!.includes(raw.trim().toLowerCase())) throw bad()
      break
    case 'string':
      if (!stored && spec.pattern && !spec.pattern.regex.test(raw)) throw bad()
      break
  }
}

/** Validates a raw option map: every key known, every value well-typed. */
export function validateOptions(raw: unknown): Record<string, string> {
  if (raw === undefined || raw === null) return {}
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new StrataInputError(`options: expected an object of string values, got ${JSON.stringify(raw)}`)
  }
  const out: Record<string, string> = {}
  for (const [key, value] of Object.entries(raw as Record<string, unknown>)) out[key] = validateOption(key, value)
  checkOptionCombinations(out)
  return out
}

/**
 * One option as create takes it (its key known, its value well-typed, a value Strata refuses
 * named): the value as a string. An alter's set-option goes through the same check.
 */
export function validateOption(key: string, value: unknown): string {
  if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
    throw new StrataInputError(`option '${key}': value must be a string, got ${JSON.stringify(value)}`)
  }
  const text = String(value)
  if (key === 'changelog-producer' && text.trim().toLowerCase() === 'full-compaction') {
    throw new RefusedError(`option 'changelog-producer': value "full-compaction" is not supported by Strata; expected none, input or lookup (lookup gives the same -U/+U, +I, -D changelog from each compaction of level 0)`)
  }
  if (CHANGELOG_RETENTION_KEYS.includes(key)) {
    throw new RefusedError(`option '${key}' (value ${JSON.stringify(text)}) is not supported: Strata keeps a snapshot's changelog files exactly as long as the snapshot (snapshot.num-retained.*, snapshot.time-retained), it does not decouple their lifetime`)
  }
  if (key === RENAMED_MAX_INPUT_FILES) {
    throw new StrataInputError(`option '${key}' (value ${JSON.stringify(text)}) is now 'compaction.max-input-files': Paimon removed '${key}', an append-table option, so Strata no longer writes its job input cap under that name`)
  }
  const icebergRefusal = icebergOptionRefusal(key, text) ?? formatOptionRefusal(key, text)
  if (icebergRefusal) throw new RefusedError(icebergRefusal)
  const spec = SPEC_BY_KEY.get(key)
  if (spec) checkValue(spec, text)
  else if (key.startsWith(ICEBERG_TABLE_PROPERTIES_PREFIX) && key.length > ICEBERG_TABLE_PROPERTIES_PREFIX.length) return text
  else if (!extraKeys.has(key) && !extraPatterns.some((p) => p.test(key))) {
    throw new StrataInputError(`option '${key}' is unknown (value ${JSON.stringify(text)}); see docs/operations.md for the supported options`)
  }
  return text
}

/** What create checks across a table's options (each already valid on its own). */
export function checkOptionCombinations(out: Record<string, string>): void {
  const cpt = Number(out['compaction.task-threads'] ?? '1')
  if (cpt === 0 || cpt < -1) {
    throw new StrataInputError(`option 'compaction.task-threads': invalid value ${JSON.stringify(out['compaction.task-threads'])}, expected -1 or an integer >= 1`)
  }
  checkCombinations(out)
  // what Paimon refuses in dynamic bucket mode (a bucket-key; max-buckets 0) is refused at create too
  if (out.bucket !== undefined && Number(out.bucket) === DYNAMIC_BUCKET) {
    const refused = dynamicUnwritable(out)
    if (refused.length) throw new StrataInputError(refused[0])
  }
  const changelogConflict = changelogProducerConflict(out)
  if (changelogConflict) throw new StrataInputError(changelogConflict)
}

/**
 * Options that are each valid but together make a table misbehave: refused at create. A
 * stored schema with them is read as Paimon reads it (coreOptions).
 */
function checkCombinations(options: Record<string, string>): void {
  const value = (key: string): number => Number(options[key] ?? SPEC_BY_KEY.get(key)!.default)
  const atLeast = (key: string, floorKey: string, floor: number, why: string) => {
    if (options[key] !== undefined && value(key) < floor) {
      throw new StrataInputError(`option '${key}': invalid value ${JSON.stringify(options[key])}, expected an integer >= ${floorKey} (${floor}); ${why}`)
    }
  }
  // Paimon refuses this pair too (SchemaValidation)
  atLeast('snapshot.num-retained.max', 'snapshot.num-retained.min', value('snapshot.num-retained.min'), 'expiration could not keep the minimum')
  // Paimon raises such a stop trigger to the compaction trigger; Strata refuses it, since the
  // bucket would report back-pressure while no compaction is due
  atLeast('num-sorted-run.stop-trigger', 'num-sorted-run.compaction-trigger', value('num-sorted-run.compaction-trigger'), 'a bucket would report back-pressure before any compaction is due')
}

/** Checks a stored schema's options as checkValue's `stored` mode does (other tools' keys pass). */
export function validateStoredOptions(options: Record<string, string>, where: string): void {
  for (const [key, value] of Object.entries(options)) {
    const spec = SPEC_BY_KEY.get(key)
    if (!spec) continue
    try {
      checkValue(spec, value, true)
    } catch (e) {
      throw new StrataInputError(`${where}: ${(e as Error).message}`)
    }
  }
}

/**
 * Paimon's options that cannot change once a table has a snapshot: the options CoreOptions
 * marks @Immutable (CoreOptions.IMMUTABLE_OPTIONS, api:CoreOptions.java), which
 * SchemaManager.checkAlterTableOption and checkResetTableOption refuse to set or reset.
 */
export const IMMUTABLE_OPTION_KEYS: ReadonlySet<string> = new Set([
  'type', 'bucket-key', 'bucket-function.type', 'data-file.path-directory', 'merge-engine',
  'sequence.snapshot-ordering', 'aggregation.remove-record-on-delete', 'partial-update.remove-record-on-delete',
  'partial-update.remove-record-on-sequence-group', 'rowkind.field', 'primary-key', 'primary-key.nullable',
  'partition', 'dynamic-bucket.initial-buckets', 'force-lookup', 'row-tracking.enabled', 'data-evolution.enabled',
  'index-file-in-data-file-dir', 'blob-field', 'blob-descriptor-field', 'blob-view-field', 'pk-clustering-override',
])

const isTrue = (v: string | undefined, dflt: boolean): boolean => (v === undefined ? dflt : v.trim().toLowerCase() === 'true')

/**
 * Why an alter may not set option `key` to `value` (undefined: reset it) on a table whose
 * options are `stored`, or null when it may. Paimon's rules (SchemaManager.generateTableSchema,
 * checkAlterTableOption, checkResetTableOption, and FlinkCatalog's checkAlterTablePath): `type`
 * and `path` never change; the rest apply only once the table has a snapshot. Strata adds one:
 * a fixed bucket count changes only with a rescale overwrite, which Strata does not have, and
 * `bucket` is never reset (a schema without it is dynamic bucket mode to Paimon).
 */
export function optionChangeRefusal(stored: Record<string, string>, key: string, value: string | undefined, hasSnapshots: boolean): string | null {
  const old = stored[key]
  if (key === 'type') return `option 'type': Paimon does not change a table's type after create`
  if (key === 'path') return `option 'path': Paimon does not change a table's path (it is where the table is)`
  if (key === 'bucket' && value === undefined) return `option 'bucket' cannot be reset: Paimon refuses it, and a schema without 'bucket' is dynamic bucket mode (bucket -1); set another value instead`
  if (!hasSnapshots) return null
  if (IMMUTABLE_OPTION_KEYS.has(key)) {
    return `option '${key}' cannot change once the table has snapshots: Paimon fixes it at create (an @Immutable option of its CoreOptions); create a new table instead`
  }
  if (key === 'bucket') {
    return `option 'bucket' cannot change from ${JSON.stringify(old ?? '1')} to ${JSON.stringify(value)} once the table has snapshots: the rows already written stay in the buckets of the old count until a rescale overwrite rewrites them (Paimon's INSERT OVERWRITE after the change), which Strata does not have; create a new table with the bucket count and copy the rows into it`
  }
  if (key === 'deletion-vectors.enabled' && !isTrue(stored['deletion-vectors.modifiable'], false)) {
    const from = isTrue(old, false)
    const to = isTrue(value, false)
    if (from !== to) {
      return `option 'deletion-vectors.enabled' cannot change from ${from} to ${to} once the table has snapshots: as Paimon warns, switching deletion-vector mode without a full compaction can return rows twice (Paimon allows it only with 'deletion-vectors.modifiable' = 'true' stored, which Strata does not set)`
    }
  }
  for (const flag of ['ignore-delete', 'ignore-update-before']) {
    if (key === flag && isTrue(old, false) && !isTrue(value, false)) return `option '${flag}' cannot change from true to false once the table has snapshots (Paimon refuses it)`
  }
  if (key === 'clustering-columns' && stored['pk-clustering-override'] !== undefined) {
    return `option 'clustering-columns' cannot change while 'pk-clustering-override' is set (Paimon refuses it)`
  }
  return null
}

/** Whether this Node can write zstd (node:zlib's zstdCompressSync, Node >= 22.15 / 23.8), read at each call. */
export function zstdEncoderAvailable(): boolean {
  return typeof (zlib as unknown as { zstdCompressSync?: unknown }).zstdCompressSync === 'function'
}

/** The options whose value zstd makes the writer compress with node:zlib's zstd encoder. */
const ZSTD_WRITE_KEYS = ['file.compression', 'manifest.compression', 'metadata.iceberg.manifest-compression']

/**
 * Why the running Node cannot write a table with these options, or null: zstd for data files
 * or manifests needs node:zlib's encoder. Checked where a schema is written (create, an
 * alter's set-option), never where a table is opened: a table made elsewhere stays readable.
 * `zstdAvailable` is the capability, passed in so that both answers can be tested.
 */
export function runtimeOptionRefusal(options: Record<string, string>, zstdAvailable: boolean = zstdEncoderAvailable()): string | null {
  if (zstdAvailable) return null
  const key = ZSTD_WRITE_KEYS.find((k) => ['zstd', 'zstandard'].includes(options[k]?.trim().toLowerCase() ?? ''))
  if (key === undefined) return null
  const major = process.versions.node.split('.')[0]
  return `option '${key}': value ${JSON.stringify(options[key])} needs Node >= 22.15 (node:zlib zstd) to be written; this is Node ${major}.x (${process.versions.node}); Lambda nodejs22.x has it; expected ${key === 'file.compression' ? 'snappy, gzip or none' : 'deflate, snappy or null'} on this Node`
}

/** Throws RefusedError when runtimeOptionRefusal finds a reason; `where` starts the message. */
export function assertRuntimeServes(options: Record<string, string>, where: string, zstdAvailable: boolean = zstdEncoderAvailable()): void {
  const refusal = runtimeOptionRefusal(options, zstdAvailable)
  if (refusal) throw new RefusedError(`${where}: ${refusal}`)
}

/**
 * Why Strata must not write a postpone-bucket table, or nothing: Paimon's postpone writers
 * write no input changelog (PostponeBucketWriter), so neither does Strata's.
 */
function postponeUnwritable(raw: Record<string, string>): string[] {
  const producer = raw['changelog-producer']?.trim().toLowerCase()
  if (producer === 'input') return ["option 'changelog-producer' is \"input\" with 'bucket' -2 (postpone bucket mode): Paimon's postpone writers write no input changelog; expected none or lookup"]
  return []
}

/**
 * Why Strata must not write a dynamic-bucket table (no `bucket`, or -1), or nothing: Paimon
 * refuses a bucket key with dynamic buckets (SchemaValidation), and a max-buckets of 0 or
 * below -1 leaves no bucket to assign.
 */
function dynamicUnwritable(raw: Record<string, string>): string[] {
  const out: string[] = []
  if (raw['bucket-key'] !== undefined) out.push(`option 'bucket-key' is ${JSON.stringify(raw['bucket-key'])} with dynamic bucket mode (bucket -1); Paimon refuses a bucket key there (keys are assigned by the primary key's hash); expected no bucket-key`)
  const max = raw['dynamic-bucket.max-buckets']
  if (max !== undefined && (Number(max) === 0 || Number(max) < -1)) out.push(`option 'dynamic-bucket.max-buckets' is ${JSON.stringify(max)}; expected -1 (no limit) or at least 1`)
  return out
}

/**
 * Why a table whose stored schema carries these options must not be written by Strata
 * (empty when it may): an option Paimon would honour on write and Strata cannot — a
 * changelog producer (a streaming consumer would silently miss Strata's writes), a file
 * format or codec Strata does not write, or what a bucket mode refuses (dynamicUnwritable,
 * postponeUnwritable). A schema without `bucket` is dynamic bucket mode to Paimon (its
 * default is -1), so Strata stores `bucket` explicitly at create. Such a table stays readable.
 */
export function unwritableReasons(raw: Record<string, string>): string[] {
  const out: string[] = []
  const bucket = raw.bucket
  if (bucket === undefined || Number(bucket) === DYNAMIC_BUCKET) out.push(...dynamicUnwritable(raw))
  else if (Number(bucket) === POSTPONE_BUCKET) out.push(...postponeUnwritable(raw))
  else if (Number(bucket) < 1) out.push(`option 'bucket' is ${JSON.stringify(bucket)}; expected a bucket count >= 1, -1 (dynamic bucket mode) or -2 (postpone bucket mode)`)
  for (const spec of OPTION_SPECS) {
    const v = raw[spec.key]
    if (v === undefined || !spec.values) continue
    const stored = storedEnumValue(spec.key, v)
    if (!spec.values.includes(stored) && !STORED_WRITABLE[spec.key]?.includes(stored)) out.push(`option '${spec.key}' is ${JSON.stringify(v)}; Strata writes only ${spec.values.map((x) => JSON.stringify(x)).join(' or ')}${spec.key === 'changelog-producer' ? ' (Strata does not produce the full-compaction changelog)' : ''}`)
  }
  const dvConflict = deletionVectorsConflict(raw)
  if (dvConflict) out.push(dvConflict)
  const changelogConflict = changelogProducerConflict(raw)
  if (changelogConflict) out.push(changelogConflict)
  // Paimon keeps a Hive or REST catalog's Iceberg table up to date at each commit; Strata's
  // commits would leave it behind (docs/format.md "Iceberg metadata")
  const iceberg = raw['metadata.iceberg.storage']?.trim().toLowerCase()
  if (iceberg === 'hive-catalog' || iceberg === 'rest-catalog') out.push(`option 'metadata.iceberg.storage' is ${JSON.stringify(raw['metadata.iceberg.storage'])}; Strata writes Iceberg metadata only for table-location and hadoop-catalog, and registers nothing in a ${iceberg === 'hive-catalog' ? 'Hive Metastore' : 'REST catalog'}, so its commits would leave that catalog's Iceberg table behind`)
  return out
}

/**
 * Refuses a write or compaction of a table whose version-1 schema (Paimon 0.7) has no
 * `bucket`: Paimon reads it as one fixed bucket, Strata's options as dynamic bucket mode (-1),
 * so Strata's files (`totalBuckets` -1, a HASH index) would not be the table Paimon sees.
 */
export function assertBucketModeKnown(options: CoreOptions, schemaVersion: number, uri: string, action: string): void {
  if (options.bucket === DYNAMIC_BUCKET && options.raw.bucket === undefined && schemaVersion <= 1) {
    throw new RefusedError(`${action} refused: table ${uri} has a version-1 schema without option 'bucket', which Paimon reads as one fixed bucket and Strata's options as dynamic bucket mode (-1), so Strata does not write it; expected a schema of version 2 or later, or one that sets 'bucket'`)
  }
}

/**
 * Refuses a write or compaction of a table Strata cannot write faithfully (unwritableReasons),
 * before anything is written.
 */
export function assertWritable(options: CoreOptions, uri: string, action: string): void {
  if (options.unwritable.length) throw new RefusedError(`${action} refused: table ${uri} can be read but not written by Strata: ${options.unwritable.join('; ')}`)
}

/**
 * Typed view of a table's options, defaults applied. A stored schema (another tool may have
 * written it) is read as Paimon reads it: the stop trigger is raised to the compaction
 * trigger and the retained maximum to the minimum. A stored value Strata cannot use safely
 * (a data-file.prefix outside the safe set, more than MAX_LEVELS levels) leaves the table
 * readable: only reading that property throws, a StrataInputError naming the option, so
 * writes or compactions that need it are refused before they write anything.
 */
export interface CoreOptions {
  raw: Record<string, string>
  bucket: number
  /** dynamic-bucket.target-row-num: keys a bucket takes in dynamic bucket mode */
  dynamicBucketTargetRowNum: number
  /** dynamic-bucket.max-buckets: most buckets of a partition in dynamic bucket mode, -1 unbounded */
  dynamicBucketMaxBuckets: number
  /** postpone.default-bucket-num: buckets of a partition whose postponed rows are compacted first (bucket -2) */
  postponeDefaultBucketNum: number
  bucketKey: string[] | null
  fileCompression: 'none' | 'snappy' | 'gzip' | 'zstd'
  /** file.compression.zstd-level */
  fileCompressionZstdLevel: number
  /** manifest.compression as lib/format/avro.ts names it ('none' is Avro's null codec) */
  manifestCompression: 'none' | 'deflate' | 'snappy' | 'zstd'
  targetFileSize: number
  numLevels: number
  compactionTrigger: number
  stopTrigger: number
  maxSizeAmplificationPercent: number
  sizeRatio: number
  compactionMaxInputFiles: number
  compactionTaskThreads: number
  deletionVectors: boolean
  bitmap64: boolean
  dvMergeOnRead: boolean
  /** index-file-in-data-file-dir: deletion-vector index files in their bucket directory */
  indexFileInDataFileDir: boolean
  /** deletion-vector.index-file.target-size in bytes */
  dvIndexFileTargetSize: number
  commitMaxRetries: number
  manifestMergeMinCount: number
  manifestTargetFileSize: number
  manifestBucketGroupSize: number
  ioMaxConcurrentRequests: number
  commitUserPrefix: string | null
  snapshotNumRetainedMin: number
  snapshotNumRetainedMax: number
  snapshotTimeRetainedMs: number
  /** snapshot.expire.limit: most snapshots one expiration call removes */
  snapshotExpireLimit: number
  /** consumer.expiration-time in millis; null: consumers never expire */
  consumerExpirationMs: number | null
  consumerIgnoreProgress: boolean
  partitionDefaultName: string
  dataFilePrefix: string
  /** write.max-row-size in bytes */
  maxRowBytes: number
  /** write-buffer-size in bytes: buffered records' estimated memory before a write flushes */
  writeBufferSize: number
  /** changelog-producer: which changelog files commits add (a stored other value makes the table unwritable) */
  changelogProducer: 'none' | 'input' | 'lookup'
  /** changelog-producer.row-deduplicate */
  changelogRowDeduplicate: boolean
  /** why Strata must not write this table (unwritableReasons); empty when it may */
  unwritable: string[]
}

/**
 * The codec manifests are written with, from manifest.compression by Paimon's names (null,
 * zstandard and zstd as Avro's names; none, which an older Strata stored, as null). A value
 * Strata cannot write stays as stored: the table is unwritable (unwritableReasons).
 */
function manifestCompressionOf(text: string): CoreOptions['manifestCompression'] {
  const v = storedEnumValue('manifest.compression', text)
  if (v === 'null') return 'none'
  if (v === 'zstandard') return 'zstd'
  return v as CoreOptions['manifestCompression']
}

export function coreOptions(raw: Record<string, string>): CoreOptions {
  const get = (key: string): string | undefined => raw[key] ?? SPEC_BY_KEY.get(key)?.default
  const int = (key: string): number => Number(get(key))
  const bool = (key: string): boolean => (get(key) ?? 'false').toLowerCase() === 'true'
  const trigger = int('num-sorted-run.compaction-trigger')
  const bucketKey = get('bucket-key')
  const stop = raw['num-sorted-run.stop-trigger'] ? Number(raw['num-sorted-run.stop-trigger']) : trigger + 3
  const retainedMin = int('snapshot.num-retained.min')
  const options: CoreOptions = {
    raw,
    // no `bucket` in a stored schema is Paimon's default, dynamic bucket mode
    bucket: raw.bucket === undefined ? DYNAMIC_BUCKET : int('bucket'),
    dynamicBucketTargetRowNum: int('dynamic-bucket.target-row-num'),
    dynamicBucketMaxBuckets: int('dynamic-bucket.max-buckets'),
    postponeDefaultBucketNum: int('postpone.default-bucket-num'),
    bucketKey: bucketKey ? bucketKey.split(',').map((s) => s.trim()) : null,
    fileCompression: get('file.compression')!.toLowerCase() as CoreOptions['fileCompression'],
    fileCompressionZstdLevel: int('file.compression.zstd-level'),
    manifestCompression: manifestCompressionOf(get('manifest.compression')!),
    targetFileSize: parseMemorySize(get('target-file-size')!)!,
    numLevels: raw['num-levels'] ? Number(raw['num-levels']) : trigger + 1,
    compactionTrigger: trigger,
    stopTrigger: Math.max(trigger, stop),
    maxSizeAmplificationPercent: int('compaction.max-size-amplification-percent'),
    sizeRatio: int('compaction.size-ratio'),
    // a schema an older Strata stored may carry the old name
    compactionMaxInputFiles: Number(raw['compaction.max-input-files'] ?? raw[RENAMED_MAX_INPUT_FILES] ?? SPEC_BY_KEY.get('compaction.max-input-files')!.default),
    compactionTaskThreads: int('compaction.task-threads'),
    deletionVectors: bool('deletion-vectors.enabled'),
    bitmap64: bool('deletion-vectors.bitmap64'),
    dvMergeOnRead: bool('deletion-vectors.merge-on-read'),
    indexFileInDataFileDir: bool('index-file-in-data-file-dir'),
    dvIndexFileTargetSize: parseMemorySize(get('deletion-vector.index-file.target-size')!)!,
    commitMaxRetries: int('commit.max-retries'),
    manifestMergeMinCount: int('manifest.merge-min-count'),
    manifestTargetFileSize: parseMemorySize(get('manifest.target-file-size')!)!,
    manifestBucketGroupSize: int('manifest.bucket-group-size'),
    ioMaxConcurrentRequests: int('io.max-concurrent-requests'),
    commitUserPrefix: get('commit.user-prefix') ?? null,
    snapshotNumRetainedMin: retainedMin,
    snapshotNumRetainedMax: Math.max(retainedMin, int('snapshot.num-retained.max')),
    snapshotTimeRetainedMs: parseDuration(get('snapshot.time-retained')!)!,
    snapshotExpireLimit: int('snapshot.expire.limit'),
    consumerExpirationMs: raw['consumer.expiration-time'] === undefined ? null : parseDuration(raw['consumer.expiration-time'])!,
    consumerIgnoreProgress: bool('consumer.ignore-progress'),
    partitionDefaultName: get('partition.default-name')!,
    dataFilePrefix: get('data-file.prefix')!,
    maxRowBytes: parseMemorySize(get('write.max-row-size')!)!,
    writeBufferSize: parseMemorySize(get('write-buffer-size')!)!,
    changelogProducer: (['input', 'lookup'] as const).find((p) => p === get('changelog-producer')!.trim().toLowerCase()) ?? 'none',
    changelogRowDeduplicate: bool('changelog-producer.row-deduplicate'),
    unwritable: unwritableReasons(raw),
  }
  if (!SAFE_PREFIX.test(options.dataFilePrefix)) {
    refuseOnUse(options, 'dataFilePrefix', 'data-file.prefix', options.dataFilePrefix, `is not a safe file-name prefix (expected ${SAFE_PREFIX_TEXT})`, 'Strata does not write to it')
  }
  if (options.numLevels > MAX_LEVELS) {
    const [key, problem] = raw['num-levels']
      ? ['num-levels', `is over Strata's maximum of ${MAX_LEVELS} levels`]
      : ['num-sorted-run.compaction-trigger', `makes ${options.numLevels} levels (the trigger + 1), over Strata's maximum of ${MAX_LEVELS}`]
    refuseOnUse(options, 'numLevels', key, raw[key], problem, 'Strata neither compacts it nor shows its status')
  }
  return options
}

/** Makes reading `property` throw a StrataInputError that names the option and its stored value. */
function refuseOnUse(options: CoreOptions, property: keyof CoreOptions, key: string, value: string, problem: string, consequence: string): void {
  const message = `option '${key}': the stored value ${JSON.stringify(value)} ${problem}; this table can be read but ${consequence}`
  Object.defineProperty(options, property, {
    enumerable: true,
    get() {
      throw new StrataInputError(message)
    },
  })
}
