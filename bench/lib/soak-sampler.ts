// The soak's samples (soak-run.ts), every sampleEveryMs: lag (the oldest unseen probe, the
// oldest level-0 file), queue depths, level-0 files, memory by role (soak-memory.ts), and
// every 10th sample what the store and the backend hold; also the bucket compactions that
// landed, counted from each new COMPACT snapshot.

import { tableStatus } from '../../lib/maintenance/table-status.ts'
import type { Table } from '../../lib/handle/table.ts'
import type { ExecutionEnvironmentPool } from '../../local/runtime/execution-environment.ts'
import type { FaultDriver } from './soak-faults.ts'
import type { LoadModel } from './soak-load.ts'
import { type Role, mb, sampleMemory } from './soak-memory.ts'
import { type Sample, type SoakShared, secondsSince, sleep } from './soak-types.ts'

export class Sampler {
  readonly samples: Sample[] = []
  readonly peakJobs = { orders: 0, totals: 0 }
  /** bucket compactions that landed: the distinct buckets of each new COMPACT snapshot (read as they appear, before maintenance expires them) */
  bucketCompactions = 0
  private readonly seenUpTo = new Map<Table, number>()
  private sampling = false
  private sampleCount = 0
  private timer: NodeJS.Timeout | undefined

  /** @param pools every function's environments, by role, for the memory samples */
  constructor(
    private readonly s: SoakShared,
    private readonly pools: Record<Role, ExecutionEnvironmentPool[]>,
    private readonly model: LoadModel,
    private readonly faults: FaultDriver,
  ) {}

  /** Samples every sampleEveryMs, one at a time (a slow one skips the next). */
  start(): void {
    this.timer = setInterval(() => {
      if (this.sampling) return
      this.sampling = true
      void this.sampleOnce()
        .catch((e) => this.s.log(`sample failed: ${(e as Error).message}`))
        .finally(() => (this.sampling = false))
    }, this.s.o.sampleEveryMs)
  }

  /** Stops sampling and waits for a sample under way. */
  async stop(): Promise<void> {
    clearInterval(this.timer)
    while (this.sampling) await sleep(50)
  }

  /** Stops sampling at once (the soak failed half-way). */
  clear(): void {
    clearInterval(this.timer)
  }

  private async countCompactions(): Promise<void> {
    for (const t of [this.s.ordersReader, this.s.totalsReader]) {
      if (!t) continue
      const latest = await t.snapshots.latestId()
      for (let id = (this.seenUpTo.get(t) ?? 0) + 1; id <= latest; id++) {
        const snap = await t.snapshots.snapshot(id)
        if (snap?.commitKind !== 'COMPACT') continue
        this.bucketCompactions += new Set((await t.manifests.deltaEntries(snap)).map((e) => `${Buffer.from(e.partition).toString('hex')}|${e.bucket}`)).size
      }
      this.seenUpTo.set(t, latest)
    }
  }

  private async sampleOnce(): Promise<void> {
    const { rt, orders, totals, ordersReader, totalsReader, o } = this.s
    const t = secondsSince(this.s)
    const [ost, tst] = await Promise.all([tableStatus(ordersReader), totalsReader ? tableStatus(totalsReader) : Promise.resolve(null)])
    const [ingestQueue, ordersJobs, totalsJobs] = await Promise.all([
      rt.queueDepth(rt.ingestQueueUrl),
      rt.queueDepth(orders.compactionQueueUrl),
      totals ? rt.queueDepth(totals.compactionQueueUrl) : Promise.resolve(0),
    ])
    this.peakJobs.orders = Math.max(this.peakJobs.orders, ordersJobs)
    this.peakJobs.totals = Math.max(this.peakJobs.totals, totalsJobs)
    await this.countCompactions()
    const memory = await sampleMemory(this.pools, this.sampleCount % 10 === 0, this.sampleCount % 10 === 0)
    let oldestUnseen = Infinity
    for (const p of this.model.unseen) oldestUnseen = Math.min(oldestUnseen, p.sentAt)
    const probeAgeMs = oldestUnseen === Infinity ? 0 : Date.now() - oldestUnseen
    const l0AgeMs = Math.max(ost.maxFreshnessLagMs ?? 0, tst?.maxFreshnessLagMs ?? 0)
    const s: Sample = {
      t: Math.round(t * 10) / 10,
      rssMb: memory.rssMb,
      memory,
      ingestQueue,
      ordersJobs,
      totalsJobs,
      ordersL0: ost.buckets.reduce((n, b) => n + b.l0Files, 0),
      ordersMaxL0: ost.maxL0Files,
      totalsL0: tst ? tst.buckets.reduce((n, b) => n + b.l0Files, 0) : 0,
      l0AgeMs,
      probeAgeMs,
      lagMs: Math.max(l0AgeMs, probeAgeMs),
      compactorEnvironments: [...rt.tables.values()].reduce((n, x) => n + x.pool.size, 0),
    }
    if (this.sampleCount++ % 10 === 0) await this.sampleStore(s)
    this.samples.push(s)
    this.faults.absorbFired()
    if (this.sampleCount % Math.max(1, Math.round(10_000 / o.sampleEveryMs)) === 1) this.logSample(s)
  }

  /** Every 10th sample: what the backend and the store hold, the dead-letter queues, the reader's cache. */
  private async sampleStore(s: Sample): Promise<void> {
    const { rt, ordersReader } = this.s
    const { stats: backend, memory: backendMemory } = await rt.backend.stats(s.memory.settled)
    s.backend = { ...backend, s3: { ...backend.s3, byDirectory: backend.s3.byDirectory.slice(0, 10) } }
    if (backendMemory) s.memory.backend = { rssMb: mb(backendMemory.rss), heapUsedMb: mb(backendMemory.heapUsed), arrayBuffersMb: mb(backendMemory.arrayBuffers) }
    s.storeObjects = backend.s3.objects
    s.storeMb = mb(backend.s3.bytes)
    s.snapshotsRetained = (await ordersReader.snapshots.latestId()) - (await ordersReader.snapshots.earliestId()) + 1
    let dlq = await rt.queueDepth(rt.ingestDlqUrl)
    for (const x of rt.tables.values()) dlq += await rt.queueDepth(x.dlqUrl)
    s.dlq = dlq
    const cache = ordersReader.manifests.cacheStats()
    s.readerCacheEntries = cache.entries
    s.readerCacheMb = mb(cache.bytes)
  }

  private logSample(s: Sample): void {
    const sent = this.model.sent
    this.s.log(
      `${s.t.toFixed(0).padStart(4)} s | sent ${sent.orders} + ${sent.probes} probes + ${sent.totals} totals | lag ${(s.lagMs / 1000).toFixed(1)} s (probe ${(s.probeAgeMs / 1000).toFixed(1)}, L0 ${(s.l0AgeMs / 1000).toFixed(1)}) | L0 ${s.ordersL0}+${s.totalsL0} | queues ${s.ingestQueue}/${s.ordersJobs}/${s.totalsJobs} | rss ${s.rssMb} MB: heap ${s.memory.main.heapUsedMb} main + ${s.memory.envHeapUsedMb} in ${Object.values(s.memory.roles).reduce((n, r) => n + r.environments, 0)} envs, non-heap ${s.memory.nonHeapMb} (external ${s.memory.main.externalMb} main + ${s.memory.envExternalMb} envs) | faults ${this.faults.faults.filter((f) => f.firedAt !== null).length}`,
    )
  }
}
