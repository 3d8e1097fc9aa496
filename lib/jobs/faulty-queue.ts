// Fault injection at the JobQueue seam, the queue-side twin of lib/store/faulty-store.ts:
// fails the k-th enqueue (or enqueues matching a predicate) with an error, a timeout, or a
// lost reply (the jobs are enqueued, then the caller gets an error, as when SQS accepted a
// SendMessageBatch and the connection dropped before the answer).
import { type FaultKind, InjectedFault } from '../store/faulty-store.ts'
import type { CompactionJob, JobQueue } from './compaction-job.ts'

export interface EnqueueCall {
  /** 1-based index of the enqueue on this wrapper */
  n: number
  jobs: CompactionJob[]
}

export interface QueueFaultRule {
  kind: FaultKind
  at?: number
  when?: (call: EnqueueCall) => boolean
  /** default 1 */
  times?: number
}

export class FaultyQueue implements JobQueue {
  readonly calls: EnqueueCall[] = []
  readonly injected: InjectedFault[] = []
  private rules: (QueueFaultRule & { left: number })[] = []

  constructor(
    readonly inner: JobQueue,
    private readonly opts: { rules?: QueueFaultRule[]; timeoutMs?: number } = {},
  ) {
    for (const r of opts.rules ?? []) this.inject(r)
  }

  inject(rule: QueueFaultRule): this {
    this.rules.push({ ...rule, left: rule.times ?? 1 })
    return this
  }

  heal(): this {
    this.rules = []
    return this
  }

  async enqueue(jobs: CompactionJob[]): Promise<void> {
    const call: EnqueueCall = { n: this.calls.length + 1, jobs }
    this.calls.push(call)
    const rule = this.rules.find((r) => r.left > 0 && (r.at !== undefined || r.when !== undefined) && (r.at === undefined || r.at === call.n) && (r.when === undefined || r.when(call)))
    if (!rule) return this.inner.enqueue(jobs)
    rule.left--
    const fault = new InjectedFault(rule.kind, { n: call.n, op: 'enqueue', key: jobs.map((j) => `${j.table}/${j.partition}/${j.bucket}`).join(',') })
    this.injected.push(fault)
    if (rule.kind === 'timeout') await new Promise((r) => setTimeout(r, this.opts.timeoutMs ?? 5))
    if (rule.kind === 'lost-reply') await this.inner.enqueue(jobs)
    throw fault
  }
}
