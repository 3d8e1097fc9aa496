// The Iceberg harness (interop-iceberg/) from a test: building its jar when its sources
// changed, running its commands in one JVM, and a Strata record in the harness's JSON
// rendering (interop-iceberg/README.md), so Strata's rows and Iceberg's compare as text.
// Whether Java and Maven are here is the Paimon harness's check (test/helpers/interop.ts).

import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { TableRecord } from '../../lib/api/index.ts'
import { type PaimonResult, ROOT, buildJar, jarBatch } from './interop.ts'

export { missingTools } from './interop.ts'

export const ICEBERG_DIR = join(ROOT, 'interop-iceberg')
export const ICEBERG_JAR = join(ICEBERG_DIR, 'target', 'strata-interop-iceberg.jar')
export const ICEBERG_RUN_COMMAND = 'npx vitest run test/interop-iceberg.test.ts (needs Java 17+ and Maven 3 on PATH)'

/** Builds the harness's jar when its sources changed (the first build downloads Iceberg, Parquet and Hadoop). */
export function buildIcebergHarness(): void {
  buildJar(ICEBERG_DIR, ICEBERG_JAR)
}

/** One harness command's outcome: its data (the `--out` file) or Iceberg's error. */
export type IcebergResult = PaimonResult

/**
 * Runs harness commands (`read`, `meta` with their arguments) in one JVM through its `batch`
 * mode, in order; a failed command does not stop the others.
 */
export function icebergBatch(commands: string[][]): Promise<IcebergResult[]> {
  return jarBatch(ICEBERG_JAR, commands)
}

/** What the harness's `meta` prints (interop-iceberg/README.md). */
export interface IcebergMeta {
  formatVersion: number
  location: string
  lastSequenceNumber: number
  nextRowId?: number
  currentSnapshotId: number | null
  snapshots: number[]
  currentSchemaId: number
  properties: Record<string, string>
  schema: { schemaId: number; fields: { id: number; name: string; type: string; required: boolean }[]; identifierFieldIds: number[] }
  spec: { specId: number; fields: { sourceId: number; fieldId: number; name: string; transform: string }[] }
  snapshot?: { id: number; sequenceNumber: number; parentId: number | null; schemaId: number | null; operation: string; firstRowId?: number | null; addedRows?: number | null; summary: Record<string, string> }
  /** the manifest list: each manifest's partition summaries (null when it has none) */
  manifests: { content: string; addedFiles: number; existingFiles: number; firstRowId: number | null; partitions: { containsNull: boolean; lower: unknown; upper: unknown }[] | null }[]
  dataFiles: IcebergFile[]
  deleteFiles: (IcebergFile & { referencedDataFile: string | null; contentOffset: number | null; contentSizeInBytes: number | null })[]
  tasks: { file: string; deletes: string[] }[]
}

export interface IcebergFile {
  content: string
  path: string
  format: string
  specId: number
  partition: Record<string, unknown>
  recordCount: number
  fileSizeInBytes: number
  dataSequenceNumber: number | null
  fileSequenceNumber: number | null
  firstRowId?: number
  /** field ids with a lower and an upper bound */
  boundedColumns: number[]
  /** field ids with a null count */
  nullCountedColumns: number[]
}

/**
 * A record Strata's library API read, in the Iceberg harness's rendering, given the table's
 * column types (`shape.fields`): BIGINT as a string of digits, bytes as base64, a non-finite
 * FLOAT or DOUBLE as a string, and a TIMESTAMP(p) as Iceberg's microsecond `timestamp` shows
 * it: `T` between date and time and exactly 6 fraction digits.
 */
export function icebergRendering(fields: readonly { name: string; type: string }[], record: TableRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const f of fields) {
    const v = record[f.name]
    const type = f.type.toUpperCase()
    if (v === null || v === undefined) out[f.name] = null
    else if (typeof v === 'bigint') out[f.name] = v.toString()
    else if (v instanceof Uint8Array) out[f.name] = Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64')
    else if (typeof v === 'number' && !Number.isFinite(v)) out[f.name] = String(v)
    else if (type.startsWith('TIMESTAMP') && typeof v === 'string') out[f.name] = microseconds(v)
    else out[f.name] = v
  }
  return out
}

/** `YYYY-MM-DD HH:MM:SS[.f…]` → `YYYY-MM-DDTHH:MM:SS.ffffff`. */
function microseconds(ts: string): string {
  const [date, time] = ts.split(' ')
  const [whole, fraction = ''] = time.split('.')
  return `${date}T${whole}.${fraction.padEnd(6, '0')}`
}

/**
 * A copy of a format-version 3 metadata file with `next-row-id` added, in `dir`. Paimon
 * 1.4.2 writes v3 metadata without it, which Iceberg 1.9 and later refuse to parse; row
 * lineage is all the field governs, not which rows a reader sees, so the copy lets Iceberg
 * read the files and deletes Paimon's metadata hands over. Everything it points at is the
 * original's (locations are absolute).
 */
export function withNextRowId(metadataFile: string, dir: string, nextRowId = 0): string {
  const json = JSON.parse(readFileSync(metadataFile, 'utf8')) as Record<string, unknown>
  if (json['format-version'] !== 3) throw new Error(`${metadataFile} is format version ${json['format-version']}, not 3`)
  if ('next-row-id' in json) throw new Error(`${metadataFile} already has next-row-id`)
  json['next-row-id'] = nextRowId
  const out = join(dir, `next-row-id-${Date.now()}-${Math.random().toString(36).slice(2)}.metadata.json`)
  writeFileSync(out, JSON.stringify(json))
  return out
}

/** The metadata file `version-hint.text` names in a metadata directory. */
export function currentMetadataFile(metadataDir: string): string {
  const version = readFileSync(join(metadataDir, 'version-hint.text'), 'utf8').trim()
  return join(metadataDir, `v${version}.metadata.json`)
}
