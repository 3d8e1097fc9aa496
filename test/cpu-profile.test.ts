// bench/lib/cpu-profile.ts sorts a profile's self time by source file: each file it names must
// still exist, so a file that moves does not silently drop its time into 'other'.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { categoryOf } from '../bench/lib/cpu-profile.ts'

const ROOT = join(import.meta.dirname, '..')

describe('categoryOf', () => {
  it('files the data-file writer and reader by the files they live in', () => {
    const files = {
      'lib/format/data-file-writer.ts': 'writer',
      'lib/format/data-file-stats.ts': 'writer',
      'lib/format/data-file-reader.ts': 'reader',
      'lib/format/data-file-source.ts': 'reader',
      'lib/format/data-file-check.ts': 'reader',
    }
    for (const [file, side] of Object.entries(files)) {
      expect(existsSync(join(ROOT, file)), file).toBe(true)
      expect(categoryOf(file, 'anyFunction'), file).toContain(`data-file ${side}`)
    }
  })
  it('files the deletion vectors, the encoder and the merge by their present files', () => {
    const files = {
      'lib/format/roaring32.ts': 'deletion vectors',
      'lib/format/roaring64.ts': 'deletion vectors',
      'lib/format/roaring-container.ts': 'deletion vectors',
      'lib/format/parquet-encode-pages.ts': 'Parquet encode',
      'lib/merge/merge-function.ts': 'merge',
      'lib/lsm/compact/compact-bucket.ts': 'compaction loop',
    }
    for (const [file, category] of Object.entries(files)) {
      expect(existsSync(join(ROOT, file)), file).toBe(true)
      expect(categoryOf(file, 'anyFunction'), file).toContain(category)
    }
  })
})
