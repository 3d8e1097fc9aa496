// Two changes to fauxqs's FIFO queue (its SqsQueue class, dist/sqs/sqsStore.js), the one
// place this project changes a third-party class in place. fauxqs is the SQS of the embedded
// backend (local/embedded.ts); neither behaviour below has an option in fauxqs (buildApp's
// options and the queue attributes name none), and SqsQueue is not exported, so its module is
// reached through the package's own file URL, which is the module instance buildApp uses.
//
// 1. Receive order and messages per group. fauxqs 1.9 `dequeueFifo` walks a queue's message
//    groups in insertion order, takes ONE message of the first unlocked group, locks that
//    group and moves to the next. So (a) a group that always has messages waiting never
//    leaves the front and the groups behind it starve once receivers keep up with the front
//    (with a compaction job per bucket per writer commit, some buckets were never
//    compacted), and (b) a receive never returns two messages of one group. Real SQS serves
//    other groups' older messages, and returns as many messages of one group as it can (up
//    to the receive's maximum) before it moves to the next group, which is what lets a
//    compactor coalesce a bucket's waiting jobs and a task-threads-1 table (one group)
//    compact ten buckets per batch. Here a group that was just received from moves behind
//    the others (groups served round robin by their oldest waiting message), and after each
//    message the same group is offered again: put first and unlocked for one more
//    single-message receive, then its lock count restored plus the message taken.
// 2. Deduplication records. fauxqs keeps a FIFO queue's records (one per message sent) in a
//    count-bounded map of 10,000 with a 5-minute time-to-live that is checked only when the
//    same id is sent again, so expired records stay until the count pushes them out. SQS's
//    deduplication window is those 5 minutes: here each new record first drops the expired
//    ones at the front (the map is in insertion order), so what a queue keeps follows its
//    last 5 minutes of sends.
//
// Checked to still apply: the installed fauxqs must be 1.9.x (package.json pins 1.9.2) and
// SqsQueue must have `dequeueFifo` and `recordDeduplication`; otherwise applying throws, so
// an upgrade fails loudly at the embedded backend's start instead of running unfixed. The
// fields used (fifoMessages, fifoLockedGroups, inflightMessages, deduplicationCache) are
// fauxqs 1.9's names. test/embedded.test.ts holds the receive order and messages per group,
// test/cache-bounds.test.ts the deduplication window.
import { readFileSync } from 'node:fs'

interface FauxqsFifoQueue {
  fifoMessages: Map<string, unknown[]>
  fifoLockedGroups: Map<string, number>
  inflightMessages: Map<string, { message: { messageGroupId?: string } }>
  dequeueFifo(...args: unknown[]): { ReceiptHandle: string }[]
}

interface DedupRecords {
  keys(): IterableIterator<string>
  expiresAt(key: string): number | undefined
  delete(key: string): void
}

type SqsQueuePrototype = FauxqsFifoQueue & {
  recordDeduplication(...args: unknown[]): unknown
  strataFifoFix?: true
}

const FAUXQS_VERSION = /^1\.9\./

/** fauxqs's own module at `path` inside its package (the instance buildApp imports). */
export const fauxqsModule = (path: string) => import(new URL(path, import.meta.resolve('fauxqs')).href)

/** Applies both changes once per process (each later call is a no-op); throws when fauxqs is not the version they were written for. */
export async function applyFauxqsFifoFix(): Promise<void> {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.resolve('fauxqs')), 'utf8')) as { version: string }
  const { SqsQueue } = (await fauxqsModule('./sqs/sqsStore.js')) as { SqsQueue?: { prototype: SqsQueuePrototype } }
  const proto = SqsQueue?.prototype
  if (!FAUXQS_VERSION.test(pkg.version) || typeof proto?.dequeueFifo !== 'function' || typeof proto.recordDeduplication !== 'function') {
    throw new Error(`embedded backend: fauxqs ${pkg.version} is installed; the FIFO fixes (local/fauxqs-fifo-fix.ts) are written for fauxqs 1.9.x's SqsQueue.dequeueFifo and recordDeduplication (see package.json)`)
  }
  if (proto.strataFifoFix) return
  expireDedupRecordsOnRecord(proto)
  serveGroupsRoundRobin(proto)
  proto.strataFifoFix = true
}

function expireDedupRecordsOnRecord(proto: SqsQueuePrototype): void {
  const recordDeduplication = proto.recordDeduplication
  proto.recordDeduplication = function (this: { deduplicationCache: DedupRecords }, ...args: unknown[]) {
    const records = this.deduplicationCache
    const now = Date.now()
    for (const key of records.keys()) {
      if ((records.expiresAt(key) ?? Infinity) > now) break
      records.delete(key)
    }
    return recordDeduplication.apply(this, args)
  }
}

function serveGroupsRoundRobin(proto: SqsQueuePrototype): void {
  const dequeueFifo = proto.dequeueFifo
  const groupOf = (q: FauxqsFifoQueue, r: { ReceiptHandle: string }) => q.inflightMessages.get(r.ReceiptHandle)?.message.messageGroupId ?? '__default'
  const roundRobin = function (this: FauxqsFifoQueue, ...args: unknown[]) {
    const received = dequeueFifo.apply(this, args)
    for (const r of received) {
      const groupId = groupOf(this, r)
      const waiting = this.fifoMessages.get(groupId)
      if (waiting === undefined) continue
      this.fifoMessages.delete(groupId)
      this.fifoMessages.set(groupId, waiting)
    }
    return received
  }
  proto.dequeueFifo = function (this: FauxqsFifoQueue, maxCount: unknown, ...rest: unknown[]) {
    const count = Math.min(Number(maxCount) || 1, 10)
    const out: { ReceiptHandle: string }[] = []
    while (out.length < count) {
      const first = roundRobin.call(this, 1, ...rest)
      if (first.length === 0) break
      out.push(...first)
      const groupId = groupOf(this, first[0])
      while (out.length < count && (this.fifoMessages.get(groupId)?.length ?? 0) > 0) {
        const lock = this.fifoLockedGroups.get(groupId) ?? 0
        const waiting = this.fifoMessages.get(groupId)!
        const others = [...this.fifoMessages].filter(([g]) => g !== groupId)
        this.fifoMessages.clear()
        this.fifoMessages.set(groupId, waiting)
        for (const [g, m] of others) this.fifoMessages.set(g, m)
        this.fifoLockedGroups.delete(groupId)
        const more = roundRobin.call(this, 1, ...rest)
        const sameGroup = more.length > 0 && groupOf(this, more[0]) === groupId
        // fauxqs locked the group it took from with count 1; the group's count is its in-flight messages
        this.fifoLockedGroups.set(groupId, lock + (sameGroup ? 1 : 0))
        out.push(...more)
        if (!sameGroup) break
      }
    }
    return out
  }
}
