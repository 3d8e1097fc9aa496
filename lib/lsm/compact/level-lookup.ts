// The row merge's cursor over one older level, for the lookup of rising keys.

import type { DeletionVector } from '../../format/deletion-vector.ts'
import { livePositioned } from '../../handle/bucket-state.ts'
import type { RecordFileReader } from '../../table/evolution.ts'
import type { KeyValue } from '../../types.ts'
import type { LsmFile } from '../levels.ts'
import { startedAhead } from '../../store/bounded.ts'

/**
 * Cursor over the live rows of one older level (a sorted run of files), for the lookup of
 * rising keys. Skips files whose key range cannot hold the probe; advances monotonically.
 */
export class LevelLookup {
  private fileIdx = 0
  private batch: KeyValue[] = []
  private positions: number[] = []
  private pos = 0
  private iter: AsyncIterator<{ kvs: KeyValue[]; positions: number[] }> | null = null
  /** the open of the file at fileIdx, started before its first probe */
  private opening: Promise<RecordFileReader> | null = null

  constructor(
    private readonly open: (f: LsmFile) => Promise<RecordFileReader>,
    private readonly cmp: (a: unknown[], b: unknown[]) => number,
    private readonly files: LsmFile[],
    private readonly dvs: Promise<Map<string, DeletionVector>>,
    private readonly valueColumns: string[] | undefined,
    /** the smallest key the job can probe (its inputs' smallest) */
    fromKey: unknown[],
  ) {
    // files wholly below every probe are skipped by find() anyway; skip them now and start
    // opening the first file a probe can hit, so its footer arrives with the inputs' own
    // instead of after the merge's first key
    while (this.fileIdx < files.length && this.cmp(fromKey, files[this.fileIdx].maxKey) > 0) this.fileIdx++
    if (this.fileIdx < files.length) this.opening = startedAhead(open(files[this.fileIdx]))
  }

  /** The live record with this key in the level, with its file and row position. */
  async find(key: unknown[]): Promise<{ kv: KeyValue; file: string; pos: number } | null> {
    while (this.fileIdx < this.files.length) {
      const f = this.files[this.fileIdx]
      if (this.cmp(key, f.maxKey) > 0) {
        this.nextFile()
        continue
      }
      if (this.cmp(key, f.minKey) < 0) return null
      if (!this.iter) {
        const reader = await (this.opening ?? this.open(f))
        this.opening = null
        this.iter = livePositioned(reader.batches({ valueColumns: this.valueColumns }), (await this.dvs).get(f.name))[Symbol.asyncIterator]()
      }
      while (true) {
        if (this.pos >= this.batch.length) {
          const next = await this.iter.next()
          if (next.done) {
            this.nextFile()
            break
          }
          this.batch = next.value.kvs
          this.positions = next.value.positions
          this.pos = 0
        }
        const c = this.cmp(this.batch[this.pos].key, key)
        if (c < 0) {
          this.pos++
          continue
        }
        if (c === 0) return { kv: this.batch[this.pos], file: f.name, pos: this.positions[this.pos] }
        return null
      }
    }
    return null
  }

  private nextFile(): void {
    this.fileIdx++
    this.opening = null
    this.iter = null
    this.batch = []
    this.positions = []
    this.pos = 0
  }
}
