// Decompressors for every codec a Parquet file Paimon writes may use: hyparquet-compressors',
// with node:zlib where it is native (faster than JS). The data-file reader and the column
// decoder both take them from here.

import zlib from 'node:zlib'
import type { Compressors } from 'hyparquet'
import { compressors as bundledDecompressors } from 'hyparquet-compressors'

/** zstd where this Node has it (22.15+), not typed by @types/node 20 */
const zlibExtra = zlib as typeof zlib & { zstdDecompressSync?: (input: Uint8Array) => Buffer }

export const DECOMPRESSORS: Compressors = {
  ...bundledDecompressors,
  GZIP: (input) => zlib.gunzipSync(input),
  ...(typeof zlibExtra.zstdDecompressSync === 'function' ? { ZSTD: (input: Uint8Array) => zlibExtra.zstdDecompressSync!(input) } : {}),
}
