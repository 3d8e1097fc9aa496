// Compaction of one (partition, bucket) as a library call: its steps (plan, rewrite,
// deletion vectors, commit) are in lib/lsm/compact/, driven by compact-bucket.ts. Callers
// pass the table handle as the CompactionContext.

export { compactBucket } from './compact/compact-bucket.ts'
export type { CompactBucketRequest, CompactBucketResult, CompactionContext } from './compact/context.ts'
export { compactionNeeded, pickOptionsOf } from './compact/plan.ts'
