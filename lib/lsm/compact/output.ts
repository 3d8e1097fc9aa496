// What a compaction job writes, as it goes: the files it adds and deletes, the rows it marks
// in deletion vectors, every key it uploaded (deleted again if its commit can never land),
// and its counts.

import type { ColumnBatch } from '../../format/columnar-types.ts'
import type { DataFileWriter } from '../../format/data-file-writer.ts'
import { Uploads } from '../../store/bounded.ts'
import type { ObjectStore } from '../../store/object-store.ts'
import { dataFileMeta, newDataFileWriter } from '../../table/file-meta.ts'
import { CHANGELOG_FILE_PREFIX, FileNamer } from '../../table/paths.ts'
import type { SchemaView } from '../../table/schema.ts'
import { type KeyValue, type ManifestEntry, FileKind } from '../../types.ts'

/**
 * Output bytes a compaction keeps uploading while it merges on: one file at the default
 * `target-file-size` (128 MB) besides the one being built, several smaller ones.
 */
export const UPLOAD_BYTES_IN_FLIGHT = 64 * 1024 * 1024

/** The bucket a job writes into. */
export interface OutputBucket {
  partition: Uint8Array
  bucket: number
  /** the table's `bucket` option, recorded in each entry */
  totalBuckets: number
  /** the bucket's directory */
  dir: string
}

export class CompactionOutput {
  /** outputs PUT while the merge goes on, the commit waits for every one */
  readonly uploads: Uploads
  readonly namer = new FileNamer()
  /** every key uploaded */
  readonly written: string[] = []
  readonly adds: ManifestEntry[] = []
  readonly deletes: ManifestEntry[] = []
  readonly changelog: ManifestEntry[] = []
  /** new deletion-vector marks, by data file */
  readonly marks = new Map<string, number[]>()
  rowsIn = 0
  rowsOut = 0
  upgraded = 0
  marked = 0
  columnarSteps = 0

  constructor(
    io: ObjectStore,
    private readonly view: SchemaView,
    readonly where: OutputBucket,
  ) {
    this.uploads = new Uploads(io, UPLOAD_BYTES_IN_FLIGHT)
  }

  /** A file moved to a higher level without a rewrite: deleted at its level, added at the new one. */
  upgrade(e: ManifestEntry, level: number): void {
    this.deletes.push(e)
    this.adds.push({ ...e, kind: FileKind.ADD, file: { ...e.file, level } })
    this.upgraded++
  }

  /** Files a step rewrites: counted in, and deleted by the commit. */
  rewrite(entries: ManifestEntry[]): void {
    for (const e of entries) {
      this.rowsIn += Number(e.file.rowCount)
      this.deletes.push(e)
    }
  }

  /** A row of an older file that a rising key supersedes: marked in the file's deletion vector. */
  mark(file: string, position: number): void {
    let m = this.marks.get(file)
    if (!m) this.marks.set(file, (m = []))
    m.push(position)
    this.marked++
  }

  /** Uploads a key the job wrote (an index file), beside the data files' uploads. */
  async put(key: string, bytes: Uint8Array): Promise<void> {
    this.written.push(key)
    await this.uploads.put(key, bytes)
  }

  /**
   * The data files (or, `changelog`, the changelog files) of a step writing into `level`,
   * each about what the step reads, at most a target-size file at a time.
   */
  files(level: number, expectedBytes: number, compressionThread: boolean, changelog = false): RollingFiles {
    const target = this.view.options.targetFileSize
    const newWriter = () => newDataFileWriter(this.view, { expectedBytes: Math.min(expectedBytes, target), compressionThread })
    return new RollingFiles(newWriter, target, (w) => this.putFile(w, changelog ? CHANGELOG_FILE_PREFIX : this.view.options.dataFilePrefix, level, changelog))
  }

  /**
   * Finishes `writer` as a data file (or, `changelog`, a changelog file) at `level` and
   * uploads it; the merge goes on while it uploads, and once the upload has settled the
   * writer's buffer serves a later writer.
   */
  async putFile(writer: DataFileWriter, prefix: string, level: number, changelog = false): Promise<void> {
    const { bytes, stats } = writer.finish()
    const fileName = this.namer.next(prefix, '.parquet')
    const key = `${this.where.dir}/${fileName}`
    this.written.push(key)
    await this.uploads.put(key, bytes, changelog ? undefined : () => writer.release())
    // Paimon writes a compaction's changelog files at its output level, source COMPACT
    const entry = { kind: FileKind.ADD, partition: this.where.partition, bucket: this.where.bucket, totalBuckets: this.where.totalBuckets, file: dataFileMeta(this.view, fileName, bytes.length, stats, level, 1) }
    if (changelog) this.changelog.push(entry)
    else {
      this.adds.push(entry)
      this.rowsOut += stats.rowCount
    }
  }
}

/** Files written one after another, each rolled over at the target size. */
export class RollingFiles {
  private writer: DataFileWriter | null = null

  constructor(
    private readonly newWriter: () => DataFileWriter,
    private readonly targetSize: number,
    private readonly finish: (writer: DataFileWriter) => Promise<void>,
  ) {}

  /** Appends a record; the caller rolls over (`rollIfFull`) when it is done with a key. */
  append(kv: KeyValue): void {
    ;(this.writer ??= this.newWriter()).write(kv)
  }

  async write(kv: KeyValue): Promise<void> {
    this.append(kv)
    await this.rollIfFull()
  }

  async writeColumns(batch: ColumnBatch): Promise<void> {
    for (let from = 0; from < batch.rows; ) {
      const w = (this.writer ??= this.newWriter())
      from = w.writeColumns(batch, from, batch.rows, this.targetSize)
      if (w.estimatedSize >= this.targetSize) await this.flush()
    }
  }

  async rollIfFull(): Promise<void> {
    if (this.writer && this.writer.estimatedSize >= this.targetSize) await this.flush()
  }

  /** Finishes the file being written, if it holds a row. */
  async flush(): Promise<void> {
    const w = this.writer
    if (!w || w.rowCount === 0) return
    await this.finish(w)
    this.writer = null
  }
}
