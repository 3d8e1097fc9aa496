// A compaction's input files: the runs it merges read in order, files opened ahead, deletion
// vectors applied; and the older levels it looks rising keys up in.

import { rowComparator } from '../../format/compare.ts'
import { KEY_FIELD_PREFIX } from '../../format/data-file-layout.ts'
import type { DeletionVector } from '../../format/deletion-vector.ts'
import type { ColumnBatch } from '../../format/columnar-types.ts'
import { physicalEncoder } from '../../format/parquet-types.ts'
import { type TableRoot, dataFileKey } from '../../handle/bucket-state.ts'
import { startedAhead } from '../../store/bounded.ts'
import { type ByteSource, byteSourceOf } from '../../store/byte-source.ts'
import type { ObjectStore } from '../../store/object-store.ts'
import { type ColumnarSource, type EvolvingTable, type RecordFileReader, openColumnarFile, openRecordFile } from '../../table/evolution.ts'
import type { SchemaView } from '../../table/schema.ts'
import type { KeyValue, ManifestEntry, Value } from '../../types.ts'
import type { LookupFile } from '../columnar/lookup.ts'
import type { LsmFile } from '../levels.ts'
import { LevelLookup } from './level-lookup.ts'

/** What opening a bucket's data files needs of a table: where they are, and how older schemas map. */
export interface DataFiles extends TableRoot, EvolvingTable {
  readonly view: Pick<SchemaView, 'keyFields' | 'fields' | 'keyTypes'>
}

export function entryOf(f: LsmFile): ManifestEntry {
  return f.entry as ManifestEntry
}

/** A run's files opened up to `ahead` before the one being read, in order. */
async function* openedAhead<R>(files: LsmFile[], ahead: number, open: (f: LsmFile) => Promise<R>): AsyncGenerator<{ reader: R; file: LsmFile }> {
  const opens: (Promise<R> | null)[] = []
  for (let i = 0; i < files.length; i++) {
    while (opens.length < files.length && opens.length < i + Math.max(1, ahead)) opens.push(startedAhead(open(files[opens.length])))
    const reader = await opens[i]!
    opens[i] = null
    yield { reader, file: files[i] }
  }
}

/** One bucket's input files, read through the job's bounded store. */
export class BucketInputs {
  constructor(
    private readonly table: DataFiles,
    private readonly io: ObjectStore,
    /** the bucket's directory */
    private readonly dir: string,
    /** the bucket's deletion vectors (loading) */
    readonly deletionVectors: Promise<Map<string, DeletionVector>>,
    /** files opened ahead of the one being read (`io.max-concurrent-requests`) */
    private readonly ahead: number,
  ) {}

  /** An input file's bytes, with its manifest entry: the reads check keys and row counts against it. */
  private source(f: LsmFile): ByteSource {
    const file = entryOf(f).file
    return byteSourceOf(this.io, dataFileKey(this.table, this.dir, file), Number(file.fileSize), file)
  }

  /** An input file for the row merge: a file of an older schema is mapped to the table's by field id (lib/table/evolution.ts). */
  open(f: LsmFile): Promise<RecordFileReader> {
    return openRecordFile(this.table, f.name, entryOf(f).file.schemaId, this.source(f))
  }

  /** `open` for the columnar merge. */
  openColumnar(f: LsmFile): Promise<ColumnarSource> {
    return openColumnarFile(this.table, f.name, entryOf(f).file.schemaId, this.source(f))
  }

  /**
   * Sequential reader over one sorted run's files (in key order), deletion vectors applied.
   * Files are opened up to `ahead` before the one being read: each open is a footer GET, and
   * a run of level-0 files packed together (non-overlapping ones, as sequential keys give)
   * would otherwise wait one round trip per file. A job's inputs are capped
   * (`compaction.max-input-files`), so the footers held ahead are too. `onLevel0` is called
   * with each batch read from a level-0 file (the lookup changelog marks them).
   */
  async *run(files: LsmFile[], onLevel0?: (kvs: KeyValue[]) => void): AsyncGenerator<KeyValue[]> {
    for await (const { reader, file } of openedAhead(files, this.ahead, (f) => this.open(f))) {
      for await (const batch of reader.batches({ deleted: (await this.deletionVectors).get(file.name) })) {
        if (onLevel0 && file.level === 0) onLevel0(batch)
        yield batch
      }
    }
  }

  /** `run` for the columnar merge: one sorted run's live rows as column batches, one per row group. */
  async *columnarRun(files: LsmFile[]): AsyncGenerator<ColumnBatch> {
    for await (const { reader, file } of openedAhead(files, this.ahead, (f) => this.openColumnar(f))) {
      const dv = (await this.deletionVectors).get(file.name)
      // string values as their bytes: the merge moves them to the writer without making strings
      yield* reader.rowGroups({ deleted: dv && dv.cardinality > 0 ? dv.sortedPositions() : undefined, utf8Values: true })
    }
  }

  /** An older level for the row merge's lookups, from the job's smallest key on. */
  levelLookup(files: LsmFile[], valueColumns: string[] | undefined, fromKey: unknown[]): LevelLookup {
    return new LevelLookup((f) => this.open(f), rowComparator(this.table.view.keyTypes) as (a: unknown[], b: unknown[]) => number, files, this.deletionVectors, valueColumns, fromKey)
  }

  /**
   * One older level for the columnar merge's lookups (`ColumnarLevelLookup`): its files with
   * their key ranges as physical values, and where probes start; the first file a probe can
   * hit starts opening at once, as `LevelLookup` does.
   */
  columnarLookupLevel(files: LsmFile[], valueColumns: string[] | undefined, fromKey: unknown[]): { files: LookupFile[]; startAt: number } {
    const view = this.table.view
    const cmp = rowComparator(view.keyTypes) as (a: unknown[], b: unknown[]) => number
    const encoders = view.keyFields.map((f) => physicalEncoder(KEY_FIELD_PREFIX + f.name, f.type))
    const physical = (key: unknown[]) => key.map((v, i) => encoders[i](v as Value))
    const valueFields = valueColumns?.map((name) => view.fields.findIndex((f) => f.name === name))
    const dvs = this.deletionVectors
    const open = (f: LsmFile) => this.openColumnar(f)
    let startAt = 0
    while (startAt < files.length && cmp(fromKey, files[startAt].maxKey) > 0) startAt++
    const opening = startAt < files.length ? startedAhead(open(files[startAt])) : null
    return {
      startAt,
      files: files.map((f, i) => ({
        name: f.name,
        minKey: physical(f.minKey),
        maxKey: physical(f.maxKey),
        rows: () =>
          (async function* () {
            const reader = await (i === startAt && opening ? opening : open(f))
            const dv = (await dvs).get(f.name)
            yield* reader.rowGroups({ deleted: dv && dv.cardinality > 0 ? dv.sortedPositions() : undefined, valueFields })
          })(),
      })),
    }
  }
}
