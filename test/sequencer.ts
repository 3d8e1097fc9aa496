// The order test files start in: the longest first. Vitest starts files it has no timings for
// (a clean clone, as CI runs) largest first, which left the soak (a small file that runs for a
// minute or more under load) to start last and end the run alone. The files named here start
// first, in this order; the others follow in vitest's own order (its timings once it has them).

import { BaseSequencer, type TestSpecification } from 'vitest/node'

/** Files that run for half a minute or more on this project's 2-core machines. */
export const LONG_FIRST = [
  'soak', 'package', 'runtime', 'interop', 'interop-iceberg', 'iceberg-model', 'faults', 'parquet-decode',
  'compaction', 'commit-path', 'local-memory', 'poller', 'columnar-compaction',
]

function rank(spec: TestSpecification): number {
  const i = LONG_FIRST.findIndex((name) => spec.moduleId.endsWith(`/test/${name}.test.ts`))
  return i < 0 ? LONG_FIRST.length : i
}

export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files)
    // Array.prototype.sort is stable: files of one rank keep vitest's order
    return [...ordered].sort((a, b) => rank(a) - rank(b))
  }
}
