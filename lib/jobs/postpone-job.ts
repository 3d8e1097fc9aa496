// A compaction job for bucket-postpone (postpone bucket mode): the partition's postponed
// files go to its buckets (lib/lsm/postpone.ts), and the buckets that got a level-0 file get
// the jobs a writer landing there would send. Its message group is `<table>/<partition>/-2`
// (docs/design.md "Postpone buckets" argues why it may run beside the partition's bucket jobs).

import type { Committer } from '../commit/committer.ts'
import type { Table } from '../handle/table.ts'
import type { CompactBucketResult } from '../lsm/compact/context.ts'
import { asCompactBucketResult, compactPostponed } from '../lsm/postpone.ts'
import { writerJobs } from './coalesce.ts'
import type { CompactionJob, JobQueue } from './compaction-job.ts'

/** Runs a postpone job and enqueues its buckets' jobs; the result in a bucket compaction's terms. */
export async function runPostponeJob(table: Table, job: CompactionJob, partition: Uint8Array, committer: Committer, jobs: JobQueue | null): Promise<CompactBucketResult> {
  const r = await compactPostponed(table, { partition, committer })
  if (jobs && r.snapshotId !== null && r.buckets.length > 0) {
    await jobs.enqueue(await writerJobs(job.table, table, r.snapshotId, r.buckets.map((bucket) => ({ partition, bucket }))))
  }
  return asCompactBucketResult(r)
}
