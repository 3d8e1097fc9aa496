// The soak's write load and its model (soak-run.ts): orders upserts, totals messages and
// probes sent to the ingest queue at `rate`, every one remembered as what the tables must
// end up holding; and the prober, which polls the latest snapshot for the probes not yet
// visible.

import { SendMessageBatchCommand } from '@aws-sdk/client-sqs'
import { lookup } from '../../lib/read/table-read.ts'
import type { InvocationLog } from './soak-invocations.ts'
import { PROBE_BASE, type SoakShared, sleep } from './soak-types.ts'

export interface Probe {
  id: number
  sentAt: number
  seenAt: number | null
}

/** DECIMAL(10, 2) as sent, and as read back (the unscaled bigint) */
const amountOf = (id: number, version: number) => (((id * 7 + version) % 100000) / 100).toFixed(2)
export const unscaledAmountOf = (id: number, version: number) => BigInt((id * 7 + version) % 100000)

/** What was sent: the model the checks compare the tables with. */
export class LoadModel {
  /** orders id → latest version sent (probes at 1) */
  readonly versions = new Map<number, number>()
  /** totals customer → the sums of what was sent */
  readonly totalsModel = new Map<string, { qty: number; n: number }>()
  readonly probes: Probe[] = []
  readonly unseen = new Set<Probe>()
  readonly sent = { orders: 0, probes: 0, totals: 0, messages: 0 }
}

/** SendMessageBatch, 10 at a time; returns the message ids in order. */
async function send(s: SoakShared, model: LoadModel, bodies: string[]): Promise<string[]> {
  const { rt } = s
  const ids: string[] = []
  for (let i = 0; i < bodies.length; i += 10) {
    let chunk = bodies.slice(i, i + 10).map((b, j) => ({ Id: String(j), MessageBody: b }))
    const got = new Map<string, string>()
    // entries SQS reports as failed were not sent and go again; a call that throws
    // may have sent some, so it ends the soak rather than risk a second copy the model
    // does not know of
    for (let attempt = 0; chunk.length > 0; attempt++) {
      if (attempt > 0) await sleep(100)
      if (attempt > 20) throw new Error(`SendMessageBatch kept failing for entries ${chunk.map((c) => c.Id).join(', ')}`)
      const res = await rt.sqs.send(new SendMessageBatchCommand({ QueueUrl: rt.ingestQueueUrl, Entries: chunk }))
      for (const x of res.Successful ?? []) got.set(x.Id!, x.MessageId!)
      chunk = chunk.filter((c) => !got.has(c.Id))
    }
    for (let j = 0; j < Math.min(10, bodies.length - i); j++) ids.push(got.get(String(j))!)
  }
  model.sent.messages += bodies.length
  return ids
}

/** One tick's messages: orders upserts, the totals messages among them, perhaps a probe. */
interface Tick {
  bodies: string[]
  bodyKeys: [number, number][]
  totalsBodies: { customer: string; qty: number }[]
  probesNow: Probe[]
}

/**
 * The sender: `rate` orders events a second in ticks of 100 ms, every `totalsEvery`-th with a
 * totals message, and a probe every probeEveryMs. By the clock it sends for `seconds`; driven
 * by events it goes on until `eventStop` gives a reason, and waits while `maxUnacked` orders
 * messages are unacknowledged.
 */
export class Sender {
  /** what ended the load */
  loadStoppedBy: string
  private readonly tickMs = 100
  private owed = 0
  private events = 0
  private nextProbeAt = 0

  constructor(
    private readonly s: SoakShared,
    private readonly model: LoadModel,
    private readonly invocations: InvocationLog,
    private readonly eventStop: () => string | null,
  ) {
    this.loadStoppedBy = `its ${s.o.seconds} s`
  }

  private goesOn(): boolean {
    const { o, start } = this.s
    if (!o.events) return Date.now() - start < o.seconds * 1000
    const stop = this.eventStop()
    if (stop !== null) this.loadStoppedBy = stop
    return stop === null
  }

  async run(): Promise<void> {
    const { o, start } = this.s
    const ev = o.events
    const tickMs = this.tickMs
    const probeEveryTicks = Math.max(1, Math.round(o.probeEveryMs / tickMs))
    for (let tick = 0; this.goesOn(); tick++) {
      if (ev) {
        // steps, not a schedule: a sender that waited does not catch up in a burst, and it
        // waits while the pipeline is this far behind, so a slow machine gets less load
        await sleep(tickMs)
        while (this.invocations.ordersPending.size >= ev.maxUnacked && this.eventStop() === null) await sleep(tickMs)
      } else {
        const wait = start + tick * tickMs - Date.now()
        if (wait > 0) await sleep(wait)
      }
      const next = this.nextTick(() => (ev ? tick % probeEveryTicks === 0 : Date.now() - start >= this.nextProbeAt))
      const all = [...next.bodies, ...next.totalsBodies.map((x) => JSON.stringify({ _table: 'totals', customer: x.customer, qty: x.qty, n: 1 }))]
      if (all.length === 0) continue
      for (const p of next.probesNow) p.sentAt = Date.now()
      const ids = await send(this.s, this.model, all)
      this.remember(next, ids)
    }
  }

  /** Draws one tick's messages and notes them in the model's versions and counts. */
  private nextTick(probeDue: () => boolean): Tick {
    const { o, random } = this.s
    const { versions, sent, probes } = this.model
    this.owed += o.rate / (1000 / this.tickMs)
    const t: Tick = { bodies: [], bodyKeys: [], totalsBodies: [], probesNow: [] }
    for (; this.owed >= 1; this.owed--) {
      const id = Math.floor(random() * o.keys)
      const version = (versions.get(id) ?? 0) + 1
      versions.set(id, version)
      t.bodies.push(JSON.stringify({ _table: 'orders', id, customer: `c${id % 97}`, amount: amountOf(id, version), version }))
      t.bodyKeys.push([id, version])
      sent.orders++
      this.events++
      if (o.totalsEvery > 0 && this.events % o.totalsEvery === 0) {
        const customer = `k${Math.floor(random() * o.totalsKeys)}`
        t.totalsBodies.push({ customer, qty: 1 + Math.floor(random() * 9) })
      }
    }
    if (probeDue()) {
      this.nextProbeAt += o.probeEveryMs
      const id = PROBE_BASE + probes.length
      versions.set(id, 1)
      const p: Probe = { id, sentAt: Date.now(), seenAt: null }
      t.probesNow.push(p)
      t.bodies.push(JSON.stringify({ _table: 'orders', id, customer: 'probe', amount: amountOf(id, 1), version: 1 }))
      t.bodyKeys.push([id, 1])
      sent.probes++
    }
    return t
  }

  /** Notes what was sent, under the ids SQS gave it. */
  private remember(t: Tick, ids: string[]): void {
    const { probes, unseen, totalsModel, sent } = this.model
    t.bodyKeys.forEach((k, i) => this.invocations.ordersPending.set(ids[i], k))
    for (const p of t.probesNow) {
      probes.push(p)
      unseen.add(p)
    }
    t.totalsBodies.forEach((x, i) => {
      this.invocations.totalsMeta.set(ids[t.bodies.length + i], { ...x, deliveries: [] })
      const m = totalsModel.get(x.customer) ?? { qty: 0, n: 0 }
      m.qty += x.qty
      m.n += 1
      totalsModel.set(x.customer, m)
      sent.totals++
    })
  }
}

/** Polls the latest snapshot for the probes not yet visible, until `running.probing` goes false. */
export async function probeVisibility(s: SoakShared, model: LoadModel): Promise<void> {
  const { ordersReader } = s
  const unseen = model.unseen
  while (s.running.probing) {
    await sleep(s.o.probeCheckMs)
    if (unseen.size === 0) continue
    try {
      const snapshotId = await ordersReader.snapshots.latestId()
      // the snapshot existed by now, so what it shows was visible by now
      const at = Date.now()
      if (snapshotId === 0) continue
      const list = [...unseen]
      for (let i = 0; i < list.length; i += 8) {
        await Promise.all(
          list.slice(i, i + 8).map(async (p) => {
            const row = await lookup(ordersReader, { id: p.id }, { snapshotId, columns: ['version'] })
            if (row !== null) {
              p.seenAt = Math.max(at, p.sentAt)
              unseen.delete(p)
            }
          }),
        )
      }
    } catch {
      // a snapshot expired under the lookup: the next round uses the newer one
    }
  }
}
